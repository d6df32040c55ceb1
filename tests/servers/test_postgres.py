import subprocess
import sys
import textwrap
import time

import psycopg2
import pytest

from ingestlab.errors import ServerError
from ingestlab.servers import reap
from ingestlab.servers.base import is_running
from ingestlab.servers.postgres import PostgresServer


def _gone(pid):
    return not is_running(pid)


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


def test_reap_stops_a_server_whose_owner_died(lab_tmp):
    code = textwrap.dedent(f"""
        import os
        from ingestlab.servers.postgres import PostgresServer
        s = PostgresServer({str(lab_tmp / 'postgres-999999')!r}).start()
        print(s.pid(), flush=True)
        os._exit(0)  # the owner dies without stopping its server
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    pid = int(out.stdout.split()[-1])
    assert not _gone(pid)
    stopped = reap(lab_tmp)
    assert [p.name for p in stopped] == ["postgres-999999"]
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pid)
    assert not (lab_tmp / "postgres-999999").exists()
