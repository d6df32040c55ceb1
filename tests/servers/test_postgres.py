import psycopg2
import pytest

from ingestlab.errors import ServerError
from ingestlab.servers.postgres import PostgresServer
from tests.servers.local_server import LocalServerContract


def test_restart_puts_exactly_the_given_settings_in_force(lab_tmp):
    with PostgresServer(lab_tmp / "pg") as server:
        server.restart({"synchronous_commit": "off", "work_mem": "8MB"})
        server.restart({"synchronous_commit": "off"})
        with psycopg2.connect(**server.connect_kwargs()) as conn, conn.cursor() as cur:
            cur.execute("SELECT name, setting, source FROM pg_settings WHERE name IN ('synchronous_commit', 'work_mem')")
            got = {n: (s, src) for n, s, src in cur.fetchall()}
        conn.close()
    assert got["synchronous_commit"] == ("off", "configuration file")
    assert got["work_mem"][1] == "default"


def test_setting_names_are_checked_not_injected(lab_tmp):
    with PostgresServer(lab_tmp / "pg") as server:
        with pytest.raises(ServerError, match="setting name"):
            server.restart({"work_mem = '1MB'\nfsync": "off"})


class TestPostgresServer(LocalServerContract):
    server = "ingestlab.servers.postgres:PostgresServer"
    kind = "postgres"
