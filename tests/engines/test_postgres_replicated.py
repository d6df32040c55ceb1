"""Replicated PostgreSQL against a real primary and standby: the contract, every node's rows, the variants' order,
the wait for the standby in the anatomy, and a standby lost mid-run."""

import threading
import time

import numpy as np
import pytest

from ingestlab import anatomy, datagen, engines, latency, runner, timing
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.engines.postgres_replicated.replication import SyncWatch
from ingestlab.errors import ConfigError, ServerError
from tests.engines.contract import EngineContract, NativeLoopContract

COLS = [c for c, _ in STUDY_COLUMNS]


class TestPostgresReplicated(EngineContract, NativeLoopContract):
    engine = "postgres_replicated"

    def test_the_primary_waits_for_its_standby_which_streams_over_the_private_socket(self, eng):
        assert eng.execute("SHOW synchronous_standby_names")[0][0] == "ANY 1 (standby1)"
        (standby,) = eng.metadata()["standbys"]
        assert standby["name"] == "standby1" and standby["state"] == "streaming" and standby["sync_state"] == "quorum"
        assert standby["client_addr"] == "socket"  # no TCP: the stream uses the private socket directory
        assert eng.execute("SHOW listen_addresses")[0][0] == ""

    def test_the_watch_on_the_standbys_is_no_client_a_counter_read_waits_for(self, eng):
        # the watch's connection never exits: counted as a client, every commit-counter read waited its full bound
        from ingestlab.polling import poll

        others = ("SELECT application_name FROM pg_stat_activity WHERE backend_type = 'client backend' "
                  "AND usename = current_user AND pid <> pg_backend_pid()")
        # the watch connects again at its next look (every 0.5 s) after a pause (a restart) closed it
        seen = poll(lambda: [row[0] for row in eng.execute(others)], timeout_s=5, interval_s=0.05)
        assert seen == [eng.OBSERVER_NAME]
        before = eng.capability("commit_counters").read()
        eng.execute("SELECT 1")
        after = eng.capability("commit_counters").read()
        assert after["flushes"] >= before["flushes"]

    def test_rows_are_counted_on_every_node(self, eng):
        eng.tables.reset("nodes", STUDY_COLUMNS)
        eng.apply_settings({"synchronous_commit": "local"})  # the standby may lag: the count waits for it
        rows = datagen.study_rows(500, seed=1)
        eng.execute(eng.sql.insert_sql("nodes", COLS, len(rows)), [v for r in rows for v in r])
        assert eng.tables.count_rows("nodes") == 500
        (name, kwargs), = eng._standby_nodes()
        conn = eng.driver.module.connect(**kwargs)
        conn.autocommit = True
        assert eng.execute('SELECT count(*) FROM "nodes"', conn=conn)[0][0] == 500
        conn.close()
        eng.apply_settings({})

    def test_rows_committed_asynchronously_are_counted_on_the_standby_too(self, eng):
        """With synchronous_commit = off the commits are not flushed yet when the count asks: it flushes them first."""
        eng.apply_settings({"synchronous_commit": "off", "wal_writer_delay": "10000ms"})
        try:
            eng.tables.reset("async_rows", STUDY_COLUMNS)
            for row in datagen.study_rows(20, seed=9):
                eng.execute(eng.sql.insert_sql("async_rows", COLS, 1), list(row))
            assert eng.tables.count_rows("async_rows") == 20
        finally:
            eng.apply_settings({})

    def test_a_standby_that_does_not_replay_fails_the_count_naming_it(self, eng, monkeypatch):
        eng.tables.reset("paused", STUDY_COLUMNS)
        (name, kwargs), = eng._standby_nodes()
        conn = eng.driver.module.connect(**kwargs)
        conn.autocommit = True
        eng.apply_settings({"synchronous_commit": "local"})  # with "on" the INSERT would wait for the standby
        try:
            eng.execute("SELECT pg_wal_replay_pause()", conn=conn)
            eng.execute(eng.sql.insert_sql("paused", COLS, 1), list(datagen.study_rows(1, seed=2)[0]))
            monkeypatch.setattr(type(eng), "REPLAY_WAIT_S", 1.0)
            with pytest.raises(ServerError, match=rf"^postgres_replicated: {name} replayed WAL up to .* no progress in 1 s"):
                eng.tables.count_rows("paused")
        finally:
            eng.execute("SELECT pg_wal_replay_resume()", conn=conn)
            conn.close()
            eng.apply_settings({})
        assert eng.tables.count_rows("paused") == 1

    def test_unlogged_tables_are_refused_a_standby_never_receives_their_rows(self, eng):
        with pytest.raises(ConfigError, match="MODELS"):
            eng.tables.reset("u", STUDY_COLUMNS, model="unlogged")

    @pytest.mark.serial  # medians of five variants against each other: another test's load would blur them
    def test_each_variant_waits_at_least_as_long_as_the_one_below_it(self, eng):
        """The must-hold's order, at smoke size: remote_apply ≥ on ≥ remote_write ≥ local, where the CIs separate.

        A wait for the standby is far above a local commit on this machine (0.44 ms against 0.27): that one is
        asserted outright; between the three remote variants only an inversion the CIs agree on, of more than
        10 %, fails. Each variant is put in force for the session, as on a server of the user's own (the
        adapter's README): no restart of the primary between them (twelve restarts took 6–16 s), so the
        variants alternate in eight short rounds and the machine's drift falls on all of them alike.
        """
        order = ["sync_local", "sync_remote_write", "sync_on", "sync_remote_apply"]
        variants = eng.capability("commit_variants").VARIANTS
        samples = {v: [] for v in order}
        eng.tables.reset("order", STUDY_COLUMNS)
        rounds, per_block, warmup = 8, 60, 10
        rows = iter(datagen.study_rows(rounds * len(order) * per_block, seed=3))
        in_force = eng.execute("SHOW synchronous_commit")[0][0]
        try:
            for round_no in range(rounds):  # each round in another order: every variant in every place twice
                shift = round_no % len(order)
                for variant in order[shift:] + order[:shift]:
                    eng.set_session(variants[variant])
                    calls = [eng.sender.statement_call(eng.sql.insert_sql("order", COLS, 1), next(rows))
                             for _ in range(per_block)]
                    ms = timing.time_calls(calls, rows=[1] * per_block,
                                           bytes_=[0] * per_block)["elapsed_s"].to_numpy()[warmup:] * 1e3
                    samples[variant] += ms.tolist()
        finally:
            eng.set_session({"synchronous_commit": in_force})
        stats = {v: (float(np.median(ms)), *anatomy._median_ci(ms)) for v, ms in samples.items()}
        shown = {v: tuple(round(x, 3) for x in s) for v, s in stats.items()}
        print("median, CI (ms):", shown)
        assert stats["sync_on"][1] > stats["sync_local"][2], shown
        # the primary sends WAL to the standby before flushing it, so remote_write's wait for the standby's write
        # overlaps its own flush: with the CPUs' wake-up held (placement.py) it comes out equal to local (0.225 vs
        # 0.227 ms; one run of the suite 12 % below it), 0.28 vs 0.35 ms without. Equal pairs may invert by noise.
        tolerance = {"sync_remote_write": 0.8}
        for lower, higher in zip(order, order[1:]):
            # on and remote_apply come out equal here (the standby replays a commit as soon as it flushed it): an
            # inversion fails when the CIs separate and it exceeds 10 % (seen: remote_apply 0–6 % below on)
            inverted = (stats[higher][2] < stats[lower][1]
                        and stats[higher][0] < tolerance.get(higher, 0.9) * stats[lower][0])
            assert not inverted, f"{higher} below {lower}: {shown}"

    def test_the_anatomy_splits_off_the_wait_for_the_standby(self, eng):
        for variant, waits in (("on", True), ("local", False)):
            eng.apply_settings({"synchronous_commit": variant})
            eng.tables.reset("anat_rep", STUDY_COLUMNS)
            frame = eng.capability("profiled_statement").anatomy(
                "anat_rep", COLS, datagen.study_rows(6, seed=5), unobserved_rows=datagen.study_rows(48, start_id=100, seed=6))
            per = frame[frame["pass"] == "server"].pivot(index="statement_no", columns="component", values="ms")
            quiet = frame[(frame["pass"] == anatomy.UNOBSERVED) & (frame["component"] == "sync_rep_wait")]
            if waits:  # NaN where the primary had already forgotten the lag (a standby caught up twice in a row)
                # how many the primary forgot varies (1 of 6 to 5 of 6 here, 2026-11-29): at least one is measured
                measured = per.dropna(subset=["sync_rep_wait"])
                assert len(measured) >= 1, per["sync_rep_wait"]
                assert (measured["sync_rep_wait"] > 0).all() and (measured["sync_rep_wait"] < measured["client_total"]).all()
                # the blocks' lag too may all be forgotten (under the suite's load, CI of dd8f3af: every one NaN)
                assert (quiet["ms"].dropna() > 0).all()  # NaN: not measured, never 0 nor below
            else:
                assert (per["sync_rep_wait"] == 0).all() and (quiet["ms"] == 0).all()
            summary = anatomy.summary(frame.assign(engine=eng.NAME, variant=variant)).iloc[0]
            print(variant, {k: round(v, 3) for k, v in summary.items() if str(k).endswith("_ms") or k == "unexplained_share"})
        eng.apply_settings({})

    def test_a_standby_stopped_mid_run_ends_the_statements_at_the_bound_naming_it(self, eng, monkeypatch):
        """Without the watch the INSERT after the stop waits for ever (synchronous replication has no timeout)."""
        monkeypatch.setattr(SyncWatch, "BOUND_S", 2.0)
        eng.apply_settings({"synchronous_commit": "on"})
        eng.tables.reset("lost", STUDY_COLUMNS)
        rows = datagen.study_rows(50_000, seed=7)
        calls = [eng.sender.statement_call(eng.sql.insert_sql("lost", COLS, 1), r) for r in rows]
        standby = eng.server.standbys[0]
        stopper = threading.Timer(0.5, eng.server.stop_standby, [standby], {"mode": "immediate"})
        began = time.monotonic()
        stopper.start()
        try:
            with pytest.raises(ServerError) as caught:
                timing.time_calls(calls, rows=[1] * len(rows), bytes_=[0] * len(rows))
            took = time.monotonic() - began
            message = str(caught.value)
            assert "\n" not in message and "standby standby1 has not streamed since" in message and "bound 2 s" in message
            assert took < 0.5 + 2 + 3, took  # the stop, the bound, two looks and the kill
            cause, code = runner._describe(type(caught.value).__name__, message)
            assert code == runner.EXIT_SERVER_LOST and "standby1" in cause
        finally:
            stopper.join()
            eng.server._start_standby(standby)
            eng.server._await_streaming(sync=True)
            eng._watch.cause = None
            eng.apply_settings({})  # a new measuring connection: the watch ended the one that waited
        # nothing acknowledged is lost: the primary and the standby hold the rows committed before the stop
        assert eng.tables.count_rows("lost") >= 1


    def test_a_standby_that_stops_answering_ends_the_commit_waiting_for_it(self, eng, monkeypatch):
        """A stopped standby (SIGSTOP: its connection stays open, pg_stat_replication still says streaming) is found
        by the commit's own wait in SyncRep."""
        import signal

        import psutil

        monkeypatch.setattr(SyncWatch, "WAIT_BOUND_S", 2.0)
        eng.tables.reset("stopped", STUDY_COLUMNS)
        standby = eng.server.standbys[0]
        postmaster = psutil.Process(int((standby.pgdata / "postmaster.pid").read_text().split()[0]))
        procs = [postmaster, *postmaster.children()]
        for proc in procs:
            proc.send_signal(signal.SIGSTOP)
        try:
            began = time.monotonic()
            with pytest.raises(ServerError, match=r"a commit has waited \d+\.\d s for a standby .*bound 2 s"):
                eng.sender.statement_call(eng.sql.insert_sql("stopped", COLS, 1), datagen.study_rows(1, seed=8)[0])()
            assert time.monotonic() - began < 2 + 3
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGCONT)
            eng.server._await_streaming(sync=True)
            eng._watch.cause = None
            eng.apply_settings({})


    def test_clients_in_processes_of_their_own_end_with_the_watch_s_reason_not_a_crashed_client(self, eng, monkeypatch):
        """Notebook 04's clients: the watch ends their waiting commits; the parent reports why (exit 5, not 4)."""
        from ingestlab.concurrency import ClientRun

        monkeypatch.setattr(SyncWatch, "BOUND_S", 2.0)
        eng.apply_settings({"synchronous_commit": "on"})
        eng.tables.reset("clients_lost", STUDY_COLUMNS)
        driver = ClientRun(eng, "clients_lost", COLS, datagen.study_rows(1, seed=9)[0], clients=2, rows_per_insert=1,
                           warmup_s=0.2, duration_s=30)
        standby = eng.server.standbys[0]
        stopped = threading.Event()

        def stop_once_running(pids):
            threading.Timer(1.0, lambda: (eng.server.stop_standby(standby, mode="immediate"), stopped.set())).start()

        driver.on_start = stop_once_running
        began = time.monotonic()
        try:
            with pytest.raises(ServerError) as caught:
                driver.run()
            took = time.monotonic() - began
            message = str(caught.value)
            assert "\n" not in message and message.startswith(f"{eng.label}: standby standby1 has not streamed since")
            assert runner._describe(type(caught.value).__name__, message)[1] == runner.EXIT_SERVER_LOST
            assert took < 30, took  # the bound and the looks, not the 30 s the clients were to write
            kept = driver.samples()
            assert len(kept) > 0 and not driver.completed  # what they measured before the stop stays
        finally:
            stopped.wait(10)
            eng.server._start_standby(standby)
            eng.server._await_streaming(sync=True)
            eng._watch.cause = None
            eng.apply_settings({})
        assert eng.tables.count_rows("clients_lost") >= len(kept)  # every acknowledged row is on both nodes


def test_a_url_reads_the_standbys_from_the_primary_and_counts_on_those_it_is_given():
    local = engines.get("postgres_replicated").start()
    try:
        kw = local.connect_kwargs()
        url = (f"pgreplicated://postgres:{kw['password']}@localhost:{kw['port']}/postgres?host={kw['host']}"
               f"&standbys={kw['host']}:{local.server.standbys[0].port}")
        remote = engines.from_url(url).start()
        try:
            assert remote.NAME == "postgres_replicated" and not remote.is_local
            assert [s["name"] for s in remote.metadata()["standbys"]] == ["standby1"]
            assert kw["password"] not in remote.display_url
            remote.tables.reset("by_url", STUDY_COLUMNS)
            remote.execute(remote.sql.insert_sql("by_url", COLS, 1), list(datagen.study_rows(1, seed=3)[0]))
            assert remote.tables.count_rows("by_url") == 1
            assert remote._standby_nodes()[0][0] == f"standby {kw['host']}:{local.server.standbys[0].port}"
        finally:
            remote.close()
    finally:
        local.close()


@pytest.mark.parametrize("standbys", ["db2", "db2:port", "db2:5432,:5433"])
def test_a_bad_standbys_key_fails_before_anything_starts(standbys):
    with pytest.raises(ConfigError, match="standbys=host:port"):
        engines.from_url(f"pgreplicated://u:secret@127.0.0.1:1/db?standbys={standbys}")


def test_k_is_the_engines_name():
    assert [engines.classes()[n].STANDBYS for n in ("postgres_replicated0", "postgres_replicated",
                                                    "postgres_replicated2")] == [0, 1, 2]


@pytest.mark.serial  # two medians against each other
@pytest.mark.skipif(latency.unavailable_reason() is not None, reason=str(latency.unavailable_reason()))
def test_a_delay_on_the_link_to_the_standby_adds_about_a_round_trip_to_each_commit():
    """ENVIRONMENT.md measured 1.25 ms more a commit per ms of one-way delay this way (pgbench); 2 ms adds ≥ 2.5 ms."""
    eng = engines.get("postgres_replicated")
    eng.capability("link_delay").route()
    eng.start()
    try:
        assert eng.metadata()["standbys"][0]["client_addr"] == "127.0.0.1"  # through the proxy
        eng.tables.reset("delayed", STUDY_COLUMNS)
        medians = {}
        for k, delay in enumerate((0, 2)):
            eng.capability("link_delay").set(delay)
            rows = datagen.study_rows(150, start_id=k * 10**6, seed=k)
            calls = [eng.sender.statement_call(eng.sql.insert_sql("delayed", COLS, 1), r) for r in rows]
            ms = timing.time_calls(calls, rows=[1] * len(rows), bytes_=[0] * len(rows))["elapsed_s"].to_numpy() * 1e3
            medians[delay] = float(np.median(ms[20:]))
        print("median ms by one-way delay:", medians)
        assert medians[2] - medians[0] > 2 * 2 * 0.75, medians  # a round trip of 2 × 2 ms, give or take the VM
        assert eng.tables.count_rows("delayed") == 300
    finally:
        eng.close()


@pytest.mark.parametrize("name, standbys", [("postgres_replicated0", 0), ("postgres_replicated2", 2)])
def test_every_node_of_k_standbys_holds_every_row(name, standbys):
    eng = engines.get(name).start()
    try:
        names = eng.execute("SHOW synchronous_standby_names")[0][0]
        assert names == ("ANY 1 (standby1, standby2)" if standbys else "")
        assert [s["sync_state"] for s in eng.metadata()["standbys"]] == ["quorum"] * standbys
        eng.apply_settings({"synchronous_commit": "remote_apply"})  # with no standby: a local commit
        eng.tables.reset("k_rows", STUDY_COLUMNS)
        rows = datagen.study_rows(300, seed=4)
        eng.execute(eng.sql.insert_sql("k_rows", COLS, len(rows)), [v for r in rows for v in r])
        assert eng.tables.count_rows("k_rows") == 300 and len(eng._standby_nodes()) == standbys
        assert eng.has("link_delay") is bool(standbys)
    finally:
        eng.close()
