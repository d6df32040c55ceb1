"""MariaDB adapter against the lab's real mariadbd: the contract, variants, anatomy, LOAD DATA, remote rules."""

from __future__ import annotations

import pytest

from ingestlab import anatomy, datagen
from ingestlab.engines import capabilities
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.engines.mariadb.server import unavailable_reason
from tests.engines._support import parse_sql, render, table_names
from tests.engines.contract import EngineContract, NativeLoopContract
from tests.engines.upsert_contract import UpsertContract

COLS = [c for c, _ in STUDY_COLUMNS]
FLUSH = "innodb_flush_log_at_trx_commit"




def _fresh_table(eng, name: str) -> None:
    eng.execute(eng.sql.drop_table_sql(name))
    eng.execute(eng.sql.create_table_sql(name, STUDY_COLUMNS))


class TestMariaDB(EngineContract, NativeLoopContract):
    engine = "mariadb"
    own_version_sql = "SELECT @@GLOBAL.version"  # the adapter asks VERSION()

    @classmethod
    def skip_reason(cls) -> str | None:
        return unavailable_reason()

    def test_a_mysqlclient_without_its_native_capsule_is_timed_from_python(self, eng, monkeypatch):
        from ingestlab import timing

        if eng.driver.name != "mysqldb":
            pytest.skip("measured through PyMySQL here")
        assert eng.sender.native() is not None

        def gone(self):
            raise AttributeError("_get_native_connection")
        monkeypatch.setattr(type(eng.conn), "_get_native_connection", gone)  # a mysqlclient that dropped it
        assert eng.sender.native() is None
        frame = timing.time_calls([eng.sender.statement_call("SELECT 1")], rows=[1], bytes_=[1])
        assert frame["timer"].tolist() == ["python"]

    def test_local_server_is_mariadb_10_11(self, eng):
        assert eng.server_version().startswith("10.11") and "MariaDB" in eng.server_version()

    def test_flush_variants_restart_the_server_and_read_back(self, eng):
        assert list(capabilities.of(eng, "commit_variants").VARIANTS) == ["flush_1", "flush_2", "flush_0"]
        for variant, settings in capabilities.of(eng, "commit_variants").VARIANTS.items():
            pid = eng.server.pid()
            eng.apply_settings(settings)
            assert eng.server.pid() != pid, f"{variant}: a global setting needs a restart"
            live = eng.settings()
            assert live[FLUSH] == settings[FLUSH]
            assert eng.execute(f"SELECT @@GLOBAL.{FLUSH}")[0][0] == int(settings[FLUSH])
            # the instruments ride along in every variant
            assert live["local_infile"] == "ON" and live["performance_schema"] == "ON"
        eng.apply_settings({})
        assert FLUSH not in eng.settings()

    def test_anatomy_has_the_commit_stage_and_flush_1_pays_an_fsync_in_it(self, eng):
        stats = {}
        for variant in ("flush_1", "flush_0"):
            eng.apply_settings(capabilities.of(eng, "commit_variants").VARIANTS[variant])
            _fresh_table(eng, "anat")
            frame = eng.capability("profiled_statement").anatomy("anat", COLS, datagen.study_rows(20, start_id=1000, seed=4))
            per = frame[frame["pass"] == "stages"].pivot(index="statement_no", columns="component", values="ms")
            assert {"client_total", "starting", "opening_tables", "update", "commit", "unexplained"} <= set(per.columns)
            parts = per.drop(columns="client_total").fillna(0).sum(axis=1)
            assert parts.values == pytest.approx(per["client_total"].values)  # stages + other = client total
            ladder = frame[frame["pass"] == "ladder"]
            rungs = set(ladder["component"])
            assert rungs == {"round_trip"}  # rendered before the clock: no driver formatting in the client's time
            samples = type(eng.capability("profiled_statement").recorder("anat", COLS)).RUNG_SAMPLES
            assert samples > 1 and ladder["count"].tolist() == [20 * samples]  # several probes after each INSERT
            # a stage is a duration; the remainder or a ladder rung (differences of two timers) may dip below 0
            assert (per.drop(columns=["unexplained", *rungs]) >= 0).all().all()
            assert frame.loc[frame["statement_no"] == 0, "warmup"].all()
            assert frame["source"].str.contains("performance_schema").any()
            stats[variant] = frame[frame["pass"] == "stats"].set_index("component")
        # unobserved INSERTs between the observed ones: their own stages, from the same history
        _fresh_table(eng, "anat")
        frame = eng.capability("profiled_statement").anatomy("anat", COLS, datagen.study_rows(5, start_id=5000, seed=4),
                                      unobserved_rows=datagen.study_rows(50, start_id=6000, seed=5))
        quiet = frame[frame["pass"] == anatomy.UNOBSERVED].pivot(index="statement_no", columns="component", values="ms")
        assert len(quiet) == 50 and {"starting", "update", "commit"} <= set(quiet.columns)
        observed = frame[frame["pass"] == "stages"]
        assert observed["statement_no"].nunique() == 5  # the unobserved ones' stages are not taken for theirs
        assert "outside_stages" not in per.columns and stats["flush_1"].loc["outside_stages_ms", "count"] > 0
        assert stats["flush_1"].loc["innodb_data_fsyncs", "count"] >= 0.9  # the commit's redo-log fsync
        assert stats["flush_0"].loc["innodb_data_fsyncs", "count"] < 0.5
        assert stats["flush_1"].loc["commit", "ms"] > stats["flush_0"].loc["commit", "ms"]
        eng.apply_settings({})

    def test_show_profile_serves_when_performance_schema_keeps_no_stages(self, eng):
        _fresh_table(eng, "anat_sp")
        eng.execute("UPDATE performance_schema.setup_consumers SET ENABLED = 'NO' "
                    "WHERE NAME = 'events_stages_history_long'")
        try:
            frame = eng.capability("profiled_statement").anatomy("anat_sp", COLS, datagen.study_rows(5, start_id=2000, seed=5),
                                          unobserved_rows=datagen.study_rows(5 * 12, start_id=3000, seed=6))
        finally:
            eng.execute("UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' "
                        "WHERE NAME = 'events_stages_history_long'")
        stages = frame[frame["pass"] == "stages"]
        assert stages["source"].str.startswith("SHOW PROFILE").any()
        assert {"commit", "update"} <= set(stages["component"])
        assert stages["statement_no"].nunique() == 5
        # 65 INSERTs, read in blocks that never outrun the session's 100 profiles; each kind gets its own
        quiet = frame[frame["pass"] == anatomy.UNOBSERVED].pivot(index="statement_no", columns="component", values="ms")
        assert len(quiet) == 60 and {"commit", "update"} <= set(quiet.columns)
        assert (quiet.drop(columns="client_total").fillna(0).sum(axis=1).values
                == pytest.approx(quiet["client_total"].values))

    def test_settle_leaves_no_dirty_page_and_puts_the_cleaner_setting_back(self, eng):
        def status(name):
            return int(eng.execute("SHOW GLOBAL STATUS LIKE %s", [name])[0][1])

        _fresh_table(eng, "settled")
        eng.execute(eng.sql.insert_sql("settled", COLS, 200), [v for row in datagen.study_rows(200, seed=3) for v in row])
        assert status("Innodb_buffer_pool_pages_dirty") > 0
        before = eng.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")[0][0]
        checkpoints = status("Innodb_checkpoint_age")
        eng.tables.settle("settled")
        assert status("Innodb_buffer_pool_pages_dirty") == 0
        assert status("Innodb_checkpoint_age") < checkpoints
        # the lab's server writes them at once, without waiting for the page cleaner's next tick
        assert eng.execute("SHOW GLOBAL VARIABLES LIKE %s", [eng.CHECKPOINT_VARIABLE])
        assert eng.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")[0][0] == before

    def test_load_data_local_keeps_quotes_commas_backslashes_and_nulls(self, eng):
        _fresh_table(eng, "odd_values")
        rows = [(1, 'say "hi", then \\leave', None, None), (2, "NULL", None, None), (3, "", None, None)]
        assert eng.capability("bulk_load").load("odd_values", COLS, [datagen.rows_table(COLS, rows)]) == 3
        assert sorted(eng.execute("SELECT id, name, amount, dt FROM odd_values")) == rows

    def test_generated_sql_parses_as_mysql(self, eng):
        sql = eng.sql.create_table_sql("t`x", STUDY_COLUMNS)
        assert table_names(parse_sql(sql, eng.WIRE.sqlglot_dialect)) == ["t`x"]
        parse_sql(render(eng.set_sql(FLUSH, "GLOBAL"), [2]), eng.WIRE.sqlglot_dialect)
        assert eng.load_data_sql("t", COLS).startswith("LOAD DATA LOCAL INFILE %s INTO TABLE `t`")


class TestMariaDBUpsert(UpsertContract):
    engine = "mariadb"

    @classmethod
    def skip_reason(cls) -> str | None:
        return unavailable_reason()

