"""MariaDB semi-sync (primary + replica) against the lab's real mariadbd pair: contract, variants, rows, anatomy, privacy.

One primary and replica serve the module (the contract's class fixture); the SIGKILL test starts
its own in a subprocess. The class's last two tests kill the replica, then close the pair.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ingestlab import datagen, engines
from ingestlab.engines import capabilities
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.engines.mariadb.server import unavailable_reason
from ingestlab.errors import DataLossError, ServerError
from ingestlab.servers.base import SOCKET_PREFIX, SOCKET_ROOT, is_running, processes_using, reap
from tests.engines.contract import EngineContract

COLS = [c for c, _ in STUDY_COLUMNS]
VARIANTS = capabilities.of(engines.classes()["mariadb_semisync"], "commit_variants").VARIANTS


def _acknowledged(eng) -> int:
    return int(eng.server.primary_status()["Rpl_semi_sync_master_yes_tx"])


def _insert(eng, table: str, n: int, start: int) -> None:
    insert = eng.sql.insert_sql(table, COLS, 1)
    for row in datagen.study_rows(n, start_id=start, seed=start % 97):
        eng.sender.statement_call(insert, row)()


class TestMariaDBSemiSync(EngineContract):
    engine = "mariadb_semisync"
    own_version_sql = "SELECT @@GLOBAL.version"

    @classmethod
    def skip_reason(cls) -> str | None:
        return unavailable_reason()

    def test_starts_within_30_s_with_the_replica_as_semisync_client(self, eng):
        print(f"primary + replica started in {eng.server.start_s:.1f} s")
        assert eng.server.start_s <= 30
        status = eng.server.primary_status()
        assert status["Rpl_semi_sync_master_status"] == "ON" and status["Rpl_semi_sync_master_clients"] == "1"
        replica = eng.server.replica_status()
        assert replica["Using_Gtid"] == "Slave_Pos" and replica["Master_Host"] == "127.0.0.1"
        assert replica["Master_Port"] == str(eng.server.master_port)
        assert list(eng.execute("SELECT @@GLOBAL.log_bin, @@GLOBAL.sync_binlog, @@GLOBAL.bind_address")[0]) == [
            1, 1, "127.0.0.1"]
        replication = eng.metadata()["replication"]  # recorded with every run
        assert eng.execute("SELECT VERSION()")[0][0] == replication["replica_version"] + "-log"  # the primary's binlog
        assert replication["through_proxy"] is False and replication["start_s"] == eng.server.start_s
        assert replication["replica_settings"]["rpl_semi_sync_slave_enabled"] == "ON"

    def test_each_variant_waits_as_it_says_and_the_anatomy_shows_the_wait(self, eng):
        """One restart per variant: the commits acknowledged, the rows on both, the wait as a part."""
        found = {}
        for variant in ("semisync", "after_commit", "async_replica"):
            eng.apply_settings(VARIANTS[variant])
            assert eng.execute("SELECT @@GLOBAL.rpl_semi_sync_master_wait_point")[0][0] == (
                "AFTER_COMMIT" if variant == "after_commit" else "AFTER_SYNC")
            eng.tables.reset("v_rows", STUDY_COLUMNS)
            before = _acknowledged(eng)
            _insert(eng, "v_rows", 30, 10**5)
            acknowledged = _acknowledged(eng) - before
            assert acknowledged == (0 if variant == "async_replica" else 30), variant
            assert eng.tables.count_rows("v_rows") == 30  # on both: async too, after the replica caught up

            eng.tables.reset("anat_ss", STUDY_COLUMNS)
            frame = eng.capability("profiled_statement").anatomy(
                "anat_ss", COLS, datagen.study_rows(8, start_id=1, seed=1),
                unobserved_rows=datagen.study_rows(8 * 10, start_id=1000, seed=2))
            per = frame[frame["pass"] == "stages"].pivot(index="statement_no", columns="component", values="ms")
            parts = per.drop(columns="client_total").fillna(0).sum(axis=1)
            assert parts.values == pytest.approx(per["client_total"].values)
            assert "waiting_for_semi_sync_ack_from_slave" not in set(frame["component"])
            stats = frame[frame["pass"] == "stats"].set_index("component")
            found[variant] = (per.get("semisync_wait"), stats.loc["rpl_semi_sync_master_yes_tx", "count"],
                              stats.loc["rpl_semi_sync_master_tx_wait_time", "count"])
        for variant in ("semisync", "after_commit"):
            wait, acknowledged, wait_us = found[variant]
            assert wait is not None and len(wait.dropna()) == 8 and (wait.dropna() > 0).all(), variant
            # every INSERT's commit acknowledged (an acknowledgement already there is no counted wait: no tx_waits)
            assert acknowledged == pytest.approx(1.0) and wait_us > 0, variant
            print(f"{variant}: semisync_wait median {wait.median():.3f} ms; tx_wait_time {wait_us:.0f} µs a statement")
        wait, acknowledged, _ = found["async_replica"]
        assert wait is None and acknowledged == 0

    def test_rows_are_counted_on_the_replica_and_a_difference_fails_in_one_line(self, eng):
        eng.tables.reset("lost_rows", STUDY_COLUMNS)
        _insert(eng, "lost_rows", 12, 0)
        assert eng.tables.count_rows("lost_rows") == 12 == eng.replica_rows("lost_rows")
        with eng.server.replica_cursor() as cur:
            cur.execute("DELETE FROM lost_rows WHERE id = 3")  # behind replication's back
        with pytest.raises(DataLossError, match=r"lost_rows holds 12 rows on the primary and 11 on the replica") as err:
            eng.tables.count_rows("lost_rows")
        assert "\n" not in str(err.value)
        eng.execute(eng.sql.drop_table_sql("lost_rows"))

    def test_nobody_else_reaches_the_sockets_or_logs_in_over_tcp(self, eng):
        if os.geteuid() != 0 or not _which("runuser") or not _which("mariadb"):
            pytest.skip("needs root, runuser and the mariadb client to act as user nobody")
        import pymysql

        port = eng.server.primary.port
        # the replication account works with its password, from the lab
        pymysql.connect(host="127.0.0.1", port=port, user=eng.server.REPLICATION_USER,
                        password=eng.server.password, connect_timeout=5).close()
        # root is socket-only: its own password over TCP is refused
        with pytest.raises(pymysql.err.OperationalError, match="1045|1130"):
            pymysql.connect(host="127.0.0.1", port=port, user="root", password=eng.server.primary.password,
                            connect_timeout=5)
        for user in (eng.server.REPLICATION_USER, "root", ""):
            res = subprocess.run(["runuser", "-u", "nobody", "--", "mariadb", "--no-defaults", "-h", "127.0.0.1",
                                  "-P", str(port), "-u", user, "-e", "SELECT 1"],
                                 capture_output=True, text=True, timeout=30)
            assert res.returncode != 0 and "Access denied" in res.stderr, (user, res.stdout, res.stderr)
        res = subprocess.run(["runuser", "-u", "nobody", "--", "ls", str(eng.server.directory)], capture_output=True)
        assert res.returncode != 0  # the pair's folder: lab.secret (the replication password) and both servers'
        for server in (eng.server.primary, eng.server.replica):
            probe = (f"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect({str(server.socket_path)!r})\n"
                     "except OSError as exc:\n    print('refused', exc)\nelse:\n    raise SystemExit('connected')\n")
            res = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-I", "-c", probe],
                                 capture_output=True, text=True, timeout=30)
            assert res.returncode == 0 and "refused" in res.stdout, res.stdout + res.stderr
            res = subprocess.run(["runuser", "-u", "nobody", "--", "ls", str(server.directory)], capture_output=True)
            assert res.returncode != 0  # master.info with the password, logs, data: out of reach
        assert oct(eng.server.replica.datadir.stat().st_mode & 0o777) == "0o700"

    @pytest.mark.serial  # compares timings taken in one test: another test's load on the other core breaks it
    def test_a_2_ms_link_delay_costs_a_semisync_commit_about_one_round_trip_and_async_nothing(self, eng):
        from ingestlab import latency, timing

        reason = latency.unavailable_reason()
        if reason:
            pytest.skip(reason)
        insert = eng.sql.insert_sql("delayed", COLS, 1)

        def median_ms(start: int, n: int = 150) -> float:
            eng.tables.reset("delayed", STUDY_COLUMNS)
            calls = [eng.sender.statement_call(insert, r) for r in datagen.study_rows(n, start_id=start, seed=7)]
            frame = timing.time_calls(calls, rows=[1] * n, bytes_=[0] * n)
            return float(frame["elapsed_s"].iloc[20:].median()) * 1e3

        eng.apply_settings(VARIANTS["semisync"])
        eng.capability("link_delay").route()  # the running pair: the replica re-pointed at the proxy
        proxied = eng.server.toxiproxy.proxies["replication"][0]
        assert eng.server.master_port == proxied != eng.server.primary.port
        assert eng.server.replica_status()["Master_Port"] == str(proxied)
        direct = median_ms(0)
        eng.capability("link_delay").set(2)
        delayed = median_ms(10**4)
        eng.apply_settings(VARIANTS["async_replica"])  # the primary restarts; the replica comes back through the proxy
        assert eng.server.toxiproxy.delay_ms == 2
        unwaited = median_ms(2 * 10**4)
        eng.capability("link_delay").set(0)
        print(f"single-row INSERT median: semisync {direct:.2f} ms through the proxy, {delayed:.2f} ms at 2 ms "
              f"one way (+{delayed - direct:.2f} ms); async at 2 ms {unwaited:.2f} ms")
        assert 0.7 * 4 <= delayed - direct <= 1.5 * 4  # one round trip: 2 × 2 ms
        assert unwaited < direct + 1.0  # async waits for no acknowledgement
        assert eng.tables.count_rows("delayed") == 150

    def test_a_replica_stopped_mid_run_ends_it_in_one_line_as_a_lost_server(self, eng):
        from ingestlab.runner import EXIT_SERVER_LOST, _describe

        eng.apply_settings(VARIANTS["semisync"])
        eng.execute("SET GLOBAL rpl_semi_sync_master_timeout = 300")  # no restart: a short test
        eng.tables.reset("fall_back", STUDY_COLUMNS)
        _insert(eng, "fall_back", 5, 0)
        os.kill(eng.server.replica.pid(), signal.SIGKILL)  # the replica is gone mid-run
        began = time.monotonic()
        _insert(eng, "fall_back", 5, 100)  # the first commit waits 300 ms, then MariaDB goes on alone
        assert time.monotonic() - began < 5
        with pytest.raises(ServerError, match=r"commits made without it after waiting rpl_semi_sync_master_timeout "
                                              r"= 300 ms") as err:
            eng.tables.count_rows("fall_back")
        message = str(err.value)
        assert "\n" not in message and "fell back to asynchronous replication" in message
        assert _describe("ServerError", message)[1] == EXIT_SERVER_LOST

    def test_close_stops_the_local_server(self, eng):
        """The contract's, on the module's pair (a second one would double the module's time): both stop, the folder goes."""
        pids, directory = [eng.server.primary.pid(), eng.server.replica.pid()], eng.server.directory
        assert pids[0] and directory.exists()
        eng.close()
        eng.close()  # idempotent
        assert not any(pid and is_running(pid) for pid in pids) and not processes_using(directory)
        assert not directory.exists()


def _which(name: str) -> bool:
    import shutil

    return shutil.which(name) is not None


@pytest.mark.skipif(unavailable_reason() is not None, reason="needs MariaDB")
def test_a_sigkill_after_start_leaves_nothing_after_reap(lab_tmp):
    from ingestlab import latency

    folder = lab_tmp / "mariadb_semisync-999997"
    proxied = latency.unavailable_reason() is None  # then the proxy between them must go too
    code = ("from ingestlab.engines.mariadb_semisync.server import MariaDBSemiSyncServer\n"
            f"s = MariaDBSemiSyncServer({str(folder)!r})\ns.delay = {proxied}\ns.start()\n"
            "print('up', flush=True)\nimport time\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert len(processes_using(folder)) == 2 + proxied  # primary, replica (and the proxy)
    finally:
        proc.kill()  # SIGKILL: no atexit, no handler
        proc.wait()
    assert folder in reap(lab_tmp)
    assert not folder.exists() and not processes_using(folder)
    assert not list(SOCKET_ROOT.glob(f"{SOCKET_PREFIX}*-{proc.pid}-*"))
