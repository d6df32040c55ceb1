import os
import stat

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


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root lab hands the server to another OS user")
def test_the_servers_folder_is_private_and_the_folders_above_it_gain_traverse_only(lab_tmp):
    """The server's folder stays 0700 (its user's); above it nothing readable is added, only traverse bits."""
    parent = lab_tmp / "private"
    parent.mkdir(mode=0o700)
    parent.chmod(0o700)
    before = {p: stat.S_IMODE(p.stat().st_mode) for p in (parent, *parent.parents)}
    with PostgresServer(parent / "pg") as server:
        assert stat.S_IMODE(server.directory.stat().st_mode) == 0o700
        assert stat.S_IMODE(server.pgdata.stat().st_mode) == 0o700
        for path, mode in before.items():
            now = stat.S_IMODE(path.stat().st_mode)
            assert now & ~mode & ~(stat.S_IXGRP | stat.S_IXOTH) == 0, (path, oct(mode), oct(now))  # traverse only
        assert stat.S_IMODE(parent.stat().st_mode) == 0o711
