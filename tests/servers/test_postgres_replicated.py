"""The lab's primary and standbys: start time, privacy of the stream, and nothing left after a kill."""

import os
import stat
import subprocess
import sys
import textwrap
import time

import psycopg2
import pytest

from ingestlab import latency
from ingestlab.engines.postgres.server import bin_dir
from ingestlab.engines.postgres_replicated.server import REPLICATION_ROLE, ReplicatedPostgresServer
from ingestlab.errors import ConfigError
from ingestlab.servers import reap
from ingestlab.servers.base import is_running, processes_using
from tests.servers.local_server import LocalServerContract, _no_other_user, listening_tcp_ports


class TestReplicatedPostgresServer(LocalServerContract):
    server = "ingestlab.engines.postgres_replicated.server:ReplicatedPostgresServer"
    kind = "postgres_replicated"


def _pid(pgdata) -> int:
    return int((pgdata / "postmaster.pid").read_text().split()[0])


def test_a_primary_and_two_standbys_start_within_30_s_and_each_holds_its_own_private_data(lab_tmp):
    began = time.monotonic()
    with ReplicatedPostgresServer(lab_tmp / "rep", standbys=2) as server:
        took = time.monotonic() - began
        print(f"primary + 2 standbys streaming, the primary waiting for them: {took:.2f} s")
        assert took <= 30
        with psycopg2.connect(**server.connect_kwargs()) as conn, conn.cursor() as cur:
            cur.execute("SELECT application_name, sync_state FROM pg_stat_replication ORDER BY 1")
            assert cur.fetchall() == [("standby1", "quorum"), ("standby2", "quorum")]
        conn.close()
        for standby in server.standbys:
            assert stat.S_IMODE(standby.directory.stat().st_mode) == 0o700
            assert stat.S_IMODE(standby.pgdata.stat().st_mode) == 0o700
            auto = standby.pgdata / "postgresql.auto.conf"  # primary_conninfo, with the replication password
            assert stat.S_IMODE(auto.stat().st_mode) == 0o600 and "application_name=" + standby.name in auto.read_text()
            assert not listening_tcp_ports(_pid(standby.pgdata))
            with psycopg2.connect(**server.standby_connect_kwargs(standby)) as conn, conn.cursor() as cur:
                cur.execute("SELECT pg_is_in_recovery()")
                assert cur.fetchone() == (True,)
            conn.close()


def test_one_standby_starts_within_30_s(lab_tmp):
    """The must-hold's smoke cluster: a primary and one standby, the primary waiting for it."""
    began = time.monotonic()
    with ReplicatedPostgresServer(lab_tmp / "rep1") as server:
        took = time.monotonic() - began
        print(f"primary + 1 standby: {took:.2f} s")
        assert took <= 30 and server.synchronous_standby_names() == "ANY 1 (standby1)"


@pytest.mark.parametrize("standbys", [-1, 3, "1", True])
def test_the_number_of_standbys_is_checked_before_anything_starts(standbys, lab_tmp):
    with pytest.raises(ConfigError, match="standbys"):
        ReplicatedPostgresServer(lab_tmp / "bad", standbys=standbys)
    assert not (lab_tmp / "bad").exists()


def test_a_killed_owner_leaves_no_primary_standby_or_proxy_after_reap(lab_tmp):
    folder = lab_tmp / "postgres_replicated-999997"
    code = textwrap.dedent(f"""
        import os, signal
        from ingestlab.engines.postgres_replicated.server import ReplicatedPostgresServer
        s = ReplicatedPostgresServer({str(folder)!r}, standbys=2)
        s.delay = {latency.unavailable_reason() is None}  # the proxies too, where Toxiproxy is here
        s.start()
        pids = [s.pid()] + [int((x.pgdata / "postmaster.pid").read_text().split()[0]) for x in s.standbys]
        pids += [s.toxiproxy.pid()] if s.toxiproxy else []
        print(*pids, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # the runner killed: no atexit, no handler
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 3 + (latency.unavailable_reason() is None) and all(map(is_running, pids)), out.stderr
    assert [p.name for p in reap(lab_tmp)] == [folder.name]
    deadline = time.monotonic() + 30
    while any(map(is_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(is_running, pids)) and not folder.exists() and not processes_using(folder)


@pytest.mark.skipif(_no_other_user() is not None, reason=str(_no_other_user()))
def test_nobody_else_can_open_a_replication_connection(lab_tmp):
    """Over the socket nobody reaches nothing (0700); over the loopback listener a proxy needs, only the lab's role
    with its password streams: another user's replication connection is refused, as postgres or without the password."""
    if latency.unavailable_reason():
        pytest.skip(latency.unavailable_reason())
    server = ReplicatedPostgresServer(lab_tmp / "rep", standbys=1)
    server.delay = True  # the stream over loopback, through a proxy
    with server:
        assert listening_tcp_ports(server.pid()) == [server.tcp_port]
        psql = str(bin_dir() / "psql")
        attempts = {
            "socket": f"host={server.socket_dir} port={server.port} user={REPLICATION_ROLE}",
            "no password": f"host=127.0.0.1 port={server.tcp_port} user={REPLICATION_ROLE}",
            "as postgres": f"host=127.0.0.1 port={server.tcp_port} user=postgres",
        }
        for what, conninfo in attempts.items():
            res = subprocess.run(["runuser", "-u", "nobody", "--", psql, "-X", "-w", "-d",
                                  f"{conninfo} replication=true dbname=postgres", "-c", "IDENTIFY_SYSTEM"],
                                 capture_output=True, text=True, timeout=60, env={**os.environ, "PGPASSWORD": "guess"})
            assert res.returncode != 0, (what, res.stdout)
            assert any(words in res.stderr for words in ("Permission denied", "password authentication failed",
                                                          "no pg_hba.conf entry")), (what, res.stderr)
        # the lab's own standby streams that way, with the password the lab made
        with psycopg2.connect(**server.connect_kwargs()) as conn, conn.cursor() as cur:
            cur.execute("SELECT client_addr::text, state FROM pg_stat_replication")
            assert cur.fetchall() == [("127.0.0.1/32", "streaming")]  # from the proxy
        conn.close()
