"""The contract every engine adapter passes, run against a real server of that engine.

Subclass it per engine: ``class TestPostgres(EngineContract): engine = "postgres"``. A
subclass may set ``skip_reason()`` for an engine that cannot run on this machine, and
``target()`` to run the contract against a server's URL instead of the lab's local one.
"""

from __future__ import annotations

import importlib.metadata
import os
import re

import pytest

from ingestlab import anatomy, datagen, engines
from ingestlab.engines import capabilities
from ingestlab.engines.base import STEPS, STUDY_COLUMNS
from ingestlab.errors import ConfigError, UnsupportedOperationError
from ingestlab.servers.base import is_running

COLS = [c for c, _ in STUDY_COLUMNS]
ODD_TABLE = 'we"ird tab`le'


class EngineContract:
    engine: str = ""
    #: How the contract asks the server itself for its version, by a route other than the adapter's where it can.
    own_version_sql: str = "SELECT version()"

    @classmethod
    def skip_reason(cls) -> str | None:
        """Why this engine cannot run here (None: it can)."""
        return None

    @classmethod
    def target(cls) -> str:
        """What the contract runs against: the engine's name (its local server) or a URL."""
        return cls.engine

    @pytest.fixture(scope="class")
    @classmethod
    def eng(cls):
        reason = cls.skip_reason()
        if reason:
            pytest.skip(reason)
        engine = engines.resolve(cls.target()).start()
        yield engine
        engine.close()

    def test_start_is_idempotent_and_reports_the_servers_own_version(self, eng):
        assert eng.start() is eng
        version, own = eng.server_version(), str(eng.execute(self.own_version_sql)[0][0])
        assert re.match(r"\d+\.\d+", version) and version in own, (version, own)

    def test_identifiers_are_quoted_by_the_dialect(self, eng):
        eng.tables.reset(ODD_TABLE, STUDY_COLUMNS)
        rows = datagen.study_rows(7, seed=1)
        eng.execute(eng.sql.insert_sql(ODD_TABLE, COLS, len(rows)), [v for r in rows for v in r])
        assert eng.tables.count_rows(ODD_TABLE) == 7
        eng.execute(eng.sql.drop_table_sql(ODD_TABLE))

    def test_insert_select_and_bulk_path_keep_every_row(self, eng):
        rows = datagen.study_rows(250, seed=2)
        for t in ("c_src", "c_dst"):
            eng.tables.reset(t, STUDY_COLUMNS)
        assert eng.capability("bulk_load").load("c_src", COLS, [datagen.rows_table(COLS, rows[:100]), datagen.rows_table(COLS, rows[100:])]) == 250
        assert eng.tables.count_rows("c_src") == 250
        eng.execute(eng.sql.insert_select_sql("c_dst", "c_src"))
        assert eng.tables.count_rows("c_dst") == 250
        got = sorted(eng.execute(f"SELECT id, name, amount, dt FROM {eng.sql.quote('c_dst')}"))
        assert got == sorted(rows)

    def test_variants_are_applied_and_read_back(self, eng):
        """Each variant's settings are in force (read back from the server) and recorded as applied and as live.

        One restart a variant and one back (a local cluster restarts all its nodes: ~4 s each for Galera's three).
        """
        try:
            for variant, settings in capabilities.of(eng, "commit_variants").VARIANTS.items():
                applied = eng.apply_settings(settings)
                assert applied == settings
                live, meta = eng.settings(), eng.metadata()
                assert meta["variant_settings"] == settings and meta["settings"] == live
                for name, value in settings.items():
                    assert str(live.get(name, "")).lower().startswith(str(value).lower()), (variant, name, live.get(name))
        finally:
            eng.apply_settings({})
        assert eng.metadata()["variant_settings"] == {}

    def test_metadata_names_engine_version_and_settings(self, eng):
        meta = eng.metadata()
        assert meta["engine"] == self.engine == eng.NAME
        assert meta["server_version"] == eng.server_version() and meta["settings"] == eng.settings()
        assert meta["url"] == eng.display_url and meta["local_server"] is eng.is_local

    @staticmethod
    def refuses_anatomy(eng) -> bool:
        """An engine without the anatomy step refuses it, naming itself and the step (then the test ends)."""
        if eng.has("profiled_statement"):
            return False
        with pytest.raises(UnsupportedOperationError, match=f"{eng.NAME}: no profiled_statement"):
            eng.capability("profiled_statement").anatomy("c_anat", COLS, datagen.study_rows(1, seed=3))
        return True

    def test_statement_anatomy_is_tidy(self, eng):
        if self.refuses_anatomy(eng):
            return
        eng.tables.reset("c_anat", STUDY_COLUMNS)
        frame = eng.capability("profiled_statement").anatomy("c_anat", COLS, datagen.study_rows(5, start_id=100, seed=3))
        assert list(frame.columns) == anatomy.COLUMNS
        # every instrument's part is a duration; a remainder or a ladder rung (a difference of two
        # timings) may dip below 0
        rungs = set(frame.loc[frame["pass"] == "ladder", "component"])
        parts = frame[~frame["component"].isin({anatomy.UNEXPLAINED, *rungs})].dropna(subset=["ms"])
        assert not parts.empty and (parts["ms"] >= 0).all()
        assert anatomy.UNEXPLAINED in set(frame["component"]) and eng.tables.count_rows("c_anat") == 5
        summary = anatomy.summary(frame.assign(engine=eng.NAME, variant="v")).iloc[0]
        assert summary["client_total_ms"] > 0
        # the instruments explain some of the statement: its duration parts add up to more than nothing
        durations = set(parts["component"]) - {anatomy.CLIENT_TOTAL}
        assert sum(summary[f"{c}_ms"] for c in durations if f"{c}_ms" in summary) > 0
        # a rung below 0 (a difference of two timings on a busy machine: ClickHouse's pipeline_threads
        # came out at -2.3 ms with both cores loaded) leaves more than the whole statement unexplained
        if all(summary.get(f"{r}_ms", 0) >= 0 for r in rungs):
            assert summary["unexplained_share"] < 1

    def test_statement_anatomy_times_unobserved_blocks_between_the_observed_statements(self, eng):
        if self.refuses_anatomy(eng):
            return
        eng.tables.reset("c_quiet", STUDY_COLUMNS)
        size = eng.capability("profiled_statement").SETTLE + 4
        frame = eng.capability("profiled_statement").anatomy("c_quiet", COLS, datagen.study_rows(4, start_id=100, seed=3),
                                      unobserved_rows=datagen.study_rows(4 * size, start_id=1000, seed=4))
        assert eng.tables.count_rows("c_quiet") == 4 + 4 * size
        quiet = frame[frame["pass"] == anatomy.UNOBSERVED]
        clients = quiet[quiet["component"] == anatomy.CLIENT_TOTAL]
        assert len(clients) == 4 * size and (clients["ms"] > 0).all()
        # the first statements of each block settle what the observation left behind: flagged, left out
        assert clients["warmup"].tolist() == [i == 0 or k < eng.capability("profiled_statement").SETTLE for i in range(4) for k in range(size)]
        # the unobserved statements have parts of their own, and the observer's cost a value with a CI
        assert set(quiet["component"]) - {anatomy.CLIENT_TOTAL, anatomy.UNEXPLAINED}
        summary = anatomy.summary(frame.assign(engine=eng.NAME, variant="v")).iloc[0]
        assert summary["n"] == 3 * (size - eng.capability("profiled_statement").SETTLE)  # the first block settles whole
        assert summary["observer_ci_low_ms"] <= summary["observer_ms"] <= summary["observer_ci_high_ms"]
        with pytest.raises(ConfigError, match="unobserved_rows"):
            eng.capability("profiled_statement").anatomy("c_quiet", COLS, datagen.study_rows(2, start_id=5000, seed=5),
                                  unobserved_rows=datagen.study_rows(2 * eng.capability("profiled_statement").SETTLE, start_id=6000, seed=6))

    def test_table_models_and_partitions_create_tables_that_take_rows(self, eng):
        rows = datagen.study_rows(40, seed=4)
        for model in capabilities.of(eng, "table_models").MODELS:
            for partitions in sorted({1, min(4, capabilities.of(eng, "table_models").MAX_PARTITIONS)}):
                if partitions > 1 and model in capabilities.of(eng, "table_models").UNPARTITIONED_MODELS:
                    with pytest.raises(ConfigError, match="PARTITIONS"):
                        eng.tables.reset("c_model", STUDY_COLUMNS, model=model, partitions=partitions)
                    continue
                eng.tables.reset("c_model", STUDY_COLUMNS, model=model, partitions=partitions)
                eng.execute(eng.sql.insert_sql("c_model", COLS, len(rows)), [v for r in rows for v in r])
                assert eng.tables.count_rows("c_model") == 40, (model, partitions)
        eng.execute(eng.sql.drop_table_sql("c_model"))

    def test_metadata_names_the_driver_that_measures_and_a_statement_call_writes(self, eng):
        meta = eng.metadata()
        assert meta["driver"] == eng.driver.name and meta["driver"] in eng.WIRE.drivers
        # a distribution that installed the driver's module (chDB's is split over chdb and chdb-core), and its version
        module = eng.WIRE.drivers[eng.driver.name][0]
        dists = importlib.metadata.packages_distributions()[module.split(".")[0]]
        assert meta["driver_package"] in dists
        assert meta["driver_version"] == importlib.metadata.version(meta["driver_package"])
        if not eng.has("statement_call"):
            return
        eng.tables.reset("c_call", STUDY_COLUMNS)
        rows = datagen.study_rows(3, seed=6)
        calls = [eng.sender.statement_call(eng.sql.insert_sql("c_call", COLS, 1), row) for row in rows]
        assert eng.tables.count_rows("c_call") == 0  # built, not sent
        for call in calls:
            call()
        assert eng.tables.count_rows("c_call") == 3
        eng.sender.statement_call(f"SELECT count(*) FROM {eng.sql.quote('c_call')}")()  # its rows are read and left unused,
        assert eng.tables.count_rows("c_call") == 3  # so the connection takes the next statement
        eng.execute(eng.sql.drop_table_sql("c_call"))

    def test_a_sender_sends_rendered_texts_on_its_own_connection_and_raises_on_errors(self, eng):
        if not eng.has("execute"):
            return
        eng.tables.reset("c_send", STUDY_COLUMNS)
        rows = datagen.study_rows(3, seed=7)
        texts = [eng.sender.render(eng.sql.insert_sql("c_send", COLS, 1), row) for row in rows]
        client = type(eng)(client_kwargs=eng.connect_kwargs())
        try:
            send = client.sender.open(eng.sender.client_settings())
            for text in texts:
                send(text.encode() if isinstance(text, str) else text)
            assert eng.tables.count_rows("c_send") == 3  # autocommit: seen by another connection at once
            with pytest.raises(Exception, match="no_such_table_here"):  # the server's own message
                send(b"INSERT INTO no_such_table_here VALUES (1)")
        finally:
            client.close()
        assert sorted(eng.execute(f"SELECT id, name, amount, dt FROM {eng.sql.quote('c_send')}")) == sorted(rows)
        eng.execute(eng.sql.drop_table_sql("c_send"))

    def test_a_statement_behind_another_sessions_lock_ends_at_the_bound_and_the_run_says_why(self, eng, monkeypatch):
        """A lock held in someone's open transaction on a user's server hung the lab's statement for good."""
        import time

        from ingestlab import runner
        from ingestlab.engines.base import LOCK_WAIT_ENV

        if not eng.sender.lock_wait_settings():
            pytest.skip(f"{eng.NAME} has no setting that bounds a lock wait")
        monkeypatch.setenv(LOCK_WAIT_ENV, "1")
        mysql = not eng.NAME.startswith(("postgres", "yugabyte"))
        eng.tables.reset("c_locked", STUDY_COLUMNS)
        holder = type(eng)(client_kwargs=eng.connect_kwargs()).start()  # someone else's session
        bounded = type(eng)(client_kwargs=eng.connect_kwargs()).start()  # the lab's, opened with the bound in force
        try:
            # a reader's open transaction: the lab's DROP waits for it (PostgreSQL's table lock, MySQL's metadata lock)
            holder.execute("BEGIN")
            holder.execute(f"SELECT count(*) FROM {eng.sql.quote('c_locked')}")
            began = time.monotonic()
            with pytest.raises(Exception) as caught:
                bounded.execute(bounded.sql.drop_table_sql("c_locked"))
            took = time.monotonic() - began
            cause, code = runner._describe(type(caught.value).__name__, str(caught.value))
            assert 0.9 < took < 5 and code == runner.EXIT_SERVER_LOST and "$INGESTLAB_LOCK_WAIT_S" in cause, (took, cause)
            holder.execute("ROLLBACK")
            # a client's INSERT behind a writer's exclusive lock: the concurrency driver's connections are bounded too
            holder.execute("BEGIN")
            holder.execute(f"LOCK TABLES {eng.sql.quote('c_locked')} WRITE" if mysql else
                           f"LOCK TABLE {eng.sql.quote('c_locked')} IN ACCESS EXCLUSIVE MODE")
            client = type(eng)(client_kwargs=eng.connect_kwargs())
            send = client.sender.open({})
            row = datagen.study_rows(1, seed=4)
            began = time.monotonic()
            with pytest.raises(Exception) as caught:
                send(eng.sender.render(eng.sql.insert_sql("c_locked", COLS, 1), list(row[0])))
            took = time.monotonic() - began
            client.close()
            assert 0.9 < took < 5 and runner._describe(type(caught.value).__name__, str(caught.value))[1] == 5, (
                took, caught.value)
        finally:
            holder.execute("UNLOCK TABLES" if mysql else "ROLLBACK")
            holder.close()
            bounded.close()
        eng.execute(eng.sql.drop_table_sql("c_locked"))

    def test_a_missing_step_names_the_engine_and_the_step(self, eng):
        for step in STEPS:
            if not eng.has(step):
                with pytest.raises(UnsupportedOperationError, match=f"{eng.NAME}: no {step}"):
                    eng.has(step, check=True)

    def test_close_stops_the_local_server(self, lab_tmp, monkeypatch):
        reason = self.skip_reason()
        if reason:
            pytest.skip(reason)
        if "://" in self.target():
            pytest.skip(f"{self.engine} runs on a server the lab does not manage")
        # its own lab directory: the class's server lives in <lab>/<kind>-<this pid> already
        monkeypatch.setenv("INGESTLAB_LAB_DIR", str(lab_tmp))  # a folder the server's OS user can enter
        engine = engines.get(self.engine).start()
        pid, directory = engine.server.pid(), engine.server.directory
        assert pid
        engine.close()
        engine.close()  # idempotent
        assert not is_running(pid)
        assert not directory.exists()


class RemoteContract(EngineContract):
    """The contract against a server the lab cannot start here, given by ``$<url_env>``; skipped, saying so, without it.

    ``class TestStarRocksContract(RemoteContract): engine = "starrocks"; url_env = "INGESTLAB_TEST_STARROCKS_URL";
    stack = "compose/starrocks-*.yml"``.
    """

    url_env: str = ""
    stack: str = ""

    @classmethod
    def target(cls) -> str:
        return os.environ.get(cls.url_env, "")

    @classmethod
    def skip_reason(cls) -> str | None:
        if not cls.target():
            return (f"{engines.classes()[cls.engine].__name__} cannot run on this machine (no binaries, no Docker "
                    f"engine); start {cls.stack} elsewhere and set {cls.url_env}")
        return None


class NativeLoopContract:
    """What an engine whose driver wraps a C client library passes: its statements timed by the C loop.

    Mixed into a contract subclass whose ``eng`` fixture has a :meth:`Engine._native_sender`.
    """

    def test_calls_are_timed_in_the_c_loop_and_a_refused_statement_stops_it(self, eng, monkeypatch):
        from ingestlab import timing
        from ingestlab.errors import ServerError

        if timing.TIMER != "c":
            pytest.skip("the package's C half is not built here")
        if eng.sender.native() is None:
            pytest.skip(f"{eng.NAME} measures through {eng.driver.name}: no C client library under it")
        assert eng.metadata()["timer"] == "c"  # recorded with every run's engine metadata
        eng.tables.reset("c_loop", STUDY_COLUMNS)
        sql = eng.sql.insert_sql("c_loop", COLS, 1)
        rows = datagen.study_rows(timing.C_CHUNK + 44, seed=8)  # more than one call into the C loop
        moved = []
        frame = timing.time_calls([eng.sender.statement_call(sql, row) for row in rows], rows=[1] * len(rows),
                                  bytes_=[1] * len(rows), warmup=4, progress=moved.append, driver=eng.driver.name)
        assert set(frame["timer"]) == {"c"} and len(frame) == len(rows) and sum(moved) == len(rows)
        assert (frame["elapsed_s"] > 0).all() and frame["started_ns"].is_monotonic_increasing
        assert sorted(eng.execute(f"SELECT id, name, amount, dt FROM {eng.sql.quote('c_loop')}")) == sorted(rows)
        more = datagen.study_rows(3, seed=9, start_id=10**6)
        calls = [eng.sender.statement_call(sql, more[0]), eng.sender.statement_call("INSERT INTO no_such_table_here VALUES (1)"),
                 eng.sender.statement_call(sql, more[1])]
        with pytest.raises(ServerError, match="no_such_table_here"):  # the server's own message
            timing.time_calls(calls, rows=[1] * 3, bytes_=[1] * 3)
        assert eng.tables.count_rows("c_loop") == len(rows) + 1  # the loop stopped at the refused statement
        with pytest.raises(ServerError, match="no_such_table_here"):
            timing.timed(calls[1])
        one = timing.timed(eng.sender.statement_call(sql, more[2]))  # the connection takes the next statement
        assert one.elapsed_ns > 0 and eng.tables.count_rows("c_loop") == len(rows) + 2
        # without the C half the same calls run from Python, labelled so
        monkeypatch.setattr(timing, "_c", None)
        frame = timing.time_calls([eng.sender.statement_call(sql, r) for r in datagen.study_rows(2, seed=10, start_id=10**7)],
                                  rows=[1, 1], bytes_=[1, 1])
        assert set(frame["timer"]) == {"python"} and eng.tables.count_rows("c_loop") == len(rows) + 4
        with pytest.raises(ServerError, match="no_such_table_here"):
            eng.sender.statement_call("INSERT INTO no_such_table_here VALUES (1)")()
        eng.execute(eng.sql.drop_table_sql("c_loop"))

    def test_a_call_built_for_a_closed_connection_raises_instead_of_crashing(self, eng):
        from ingestlab import timing
        from ingestlab.errors import ConnectionClosedError

        client = type(eng)(client_kwargs=eng.connect_kwargs()).start()
        try:
            if client.sender.native() is None:
                pytest.skip(f"{eng.NAME} measures through {client.driver.name}: no C client library under it")
            call = client.sender.statement_call("SELECT 1")
            timing.timed(call)
            client.conn.close()  # what a server restart does to every call built before it
            with pytest.raises(ConnectionClosedError, match="closed"):
                timing.timed(call)
            with pytest.raises(ConnectionClosedError):
                timing.time_calls([call], rows=[1], bytes_=[1])
        finally:
            client.close()
