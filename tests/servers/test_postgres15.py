import subprocess
import sys
import textwrap
import time

import psycopg2
import pytest

from ingestlab.engines.postgres.server import DebianPostgresServer, debian_unavailable_reason
from ingestlab.servers import reap
from ingestlab.servers.base import is_running

REASON = debian_unavailable_reason(DebianPostgresServer.MAJOR)
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))


def test_starts_version_15_on_a_socket_and_stops_leaving_nothing(lab_tmp):
    server = DebianPostgresServer(lab_tmp / "pg15").start()
    pid = server.pid()
    try:
        with psycopg2.connect(**server.connect_kwargs()) as conn, conn.cursor() as cur:
            cur.execute("SELECT current_setting('server_version_num')::int / 10000, current_setting('listen_addresses')")
            major, listen = cur.fetchone()
        conn.close()
        assert (major, listen) == (15, "")
        server.restart({"synchronous_commit": "off"})
        with psycopg2.connect(**server.connect_kwargs()) as conn, conn.cursor() as cur:
            cur.execute("SHOW synchronous_commit")
            assert cur.fetchone()[0] == "off"
        conn.close()
    finally:
        server.stop()
    deadline = time.monotonic() + 10
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not is_running(pid)
    assert not (lab_tmp / "pg15").exists()


def test_reap_stops_a_version_15_server_whose_owner_died(lab_tmp):
    code = textwrap.dedent(f"""
        import os
        from ingestlab.engines.postgres.server import DebianPostgresServer
        s = DebianPostgresServer({str(lab_tmp / 'postgres15-999998')!r}).start()
        print(s.pid(), flush=True)
        os._exit(0)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    pid = int(out.stdout.split()[-1])
    assert is_running(pid)
    assert [p.name for p in reap(lab_tmp)] == ["postgres15-999998"]
    deadline = time.monotonic() + 10
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not is_running(pid)
