"""ClickHouse adapter over chDB's embedded server in this process: the contract, parts, values, bytes, merges, SQL.

chDB runs here, so nothing is skipped: a broken chDB install fails these tests. chDB runs one ClickHouse per
process, so the tests that start an engine of their own come after the contract class (whose engine is closed
when its last test ends).
"""

import os
import stat

import pytest

from ingestlab import anatomy, datagen, engines
from ingestlab.engines import capabilities
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.engines.clickhouse import ClickHouse
from ingestlab.errors import ConfigError, ServerError, UnsupportedOperationError
from ingestlab.workloads import million
from tests.engines._support import SQLValidator, anatomy_among_samples, hostile_rows
from tests.engines.contract import EngineContract

COLS = [c for c, _ in STUDY_COLUMNS]


def parts(eng, table: str, active_only: bool = False) -> int:
    """Parts of ``table`` in ``system.parts`` (every part written, or only the active ones)."""
    where = " AND active" if active_only else ""
    return eng.execute(f"SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = %s{where}",
                       [table])[0][0]


class TestClickHouse(EngineContract):
    engine = "clickhouse"

    def test_close_stops_the_local_server(self, eng, lab_tmp, monkeypatch):
        """One ClickHouse per process: a second engine is refused while this one runs, and leaves no folder."""
        directory = eng.server.directory
        assert directory.name.startswith(f"clickhouse-{os.getpid()}-") and eng.server.pid() == os.getpid()
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700 and (directory / "data").is_dir()
        monkeypatch.setenv("INGESTLAB_LAB_DIR", str(lab_tmp))
        second = engines.get("clickhouse")
        with pytest.raises(ServerError, match="one embedded ClickHouse per process"):
            second.start()
        assert not second.server.directory.exists()  # cleaned up after the failure
        second.close()  # safe after it
        assert eng.execute("SELECT 1") == [(1,)]  # the running one is untouched

    def test_a_single_row_insert_makes_one_new_part(self, eng):
        for partitions in (1, 8):
            eng.tables.reset("c_parts", STUDY_COLUMNS, model="primary_key", partitions=partitions)
            eng.execute(f"SYSTEM STOP MERGES {eng.sql.quote('c_parts')}")  # no merge adds a part while we count
            rows = datagen.study_rows(5, seed=21)
            before = parts(eng, "c_parts")
            for i, row in enumerate(rows, 1):
                eng.sender.statement_call(eng.sql.insert_sql("c_parts", COLS, 1), row)()
                assert parts(eng, "c_parts") == before + i, partitions
            # a multi-row INSERT writes one part per partition it touches
            many = datagen.study_rows(64, start_id=1000, seed=22)
            touched = len({r[0] for r in eng.execute(
                "SELECT modulo(cityHash64(toInt64(number)), %s) FROM numbers(1000, 64)", [partitions])})
            eng.sender.statement_call(eng.sql.insert_sql("c_parts", COLS, 64), [v for r in many for v in r])()
            assert parts(eng, "c_parts") == before + 5 + touched
            eng.execute(eng.sql.drop_table_sql("c_parts"))

    def test_values_with_quotes_backslashes_and_null_round_trip_exactly(self, eng):
        eng.tables.reset("c_values", STUDY_COLUMNS)
        rows = hostile_rows()
        for row in rows:  # literals written by render, before the clock
            eng.sender.statement_call(eng.sql.insert_sql("c_values", COLS, 1), row)()
        batch = hostile_rows(100)  # many rows in one statement
        eng.execute(eng.sql.insert_sql("c_values", COLS, len(batch)), [v for r in batch for v in r])
        eng.capability("bulk_load").load("c_values", COLS, [datagen.rows_table(COLS, hostile_rows(200))])  # the Arrow bulk path
        got = sorted(eng.execute(f"SELECT id, name, amount, dt FROM {eng.sql.quote('c_values')}"))
        assert got == sorted(rows + batch + hostile_rows(200))
        odd = 'a%s\\"b`'  # a placeholder, a backslash and quotes inside a name stay the name's
        eng.tables.reset(odd, STUDY_COLUMNS)
        eng.execute(eng.sql.insert_sql(odd, COLS, 1), rows[3])
        assert eng.execute(f"SELECT name FROM {eng.sql.quote(odd)}") == [(rows[3][1],)]
        eng.execute(eng.sql.drop_table_sql(odd))

    def test_data_bytes_grows_after_a_load(self, eng):
        eng.tables.reset("c_bytes", STUDY_COLUMNS, model="primary_key")
        assert eng.tables.data_bytes("c_bytes") == 0
        eng.capability("bulk_load").load("c_bytes", COLS, [datagen.rows_table(COLS, datagen.study_rows(20_000, seed=23))])
        first = eng.tables.data_bytes("c_bytes")
        eng.capability("bulk_load").load("c_bytes", COLS, [datagen.rows_table(COLS, datagen.study_rows(20_000, start_id=10**6,
                                                                                     seed=24))])
        eng.tables.settle("c_bytes")
        assert 20_000 * 4 < first < eng.tables.data_bytes("c_bytes")  # compressed, but more than the first load
        assert eng.tables.count_rows("c_bytes") == 40_000

    def test_a_memory_table_keeps_its_rows_in_ram_and_counts_their_bytes(self, eng):
        """02's memory model: no part on disk (system.parts has none), its bytes the blocks' memory."""
        eng.tables.reset("c_memory", STUDY_COLUMNS, model="memory")
        assert eng.tables.data_bytes("c_memory") == 0
        for row in datagen.study_rows(50, seed=26):
            eng.sender.statement_call(eng.sql.insert_sql("c_memory", COLS, 1), row)()
        eng.tables.settle("c_memory")
        assert eng.tables.count_rows("c_memory") == 50 and eng.tables.data_bytes("c_memory") > 50 * 4
        assert eng.execute("SELECT count() FROM system.parts WHERE table = 'c_memory'") == [(0,)]

    def test_settle_leaves_no_merge_running(self, eng):
        eng.tables.reset("c_merge", STUDY_COLUMNS, model="primary_key")
        calls = [eng.sender.statement_call(eng.sql.insert_sql("c_merge", COLS, 1), row)
                 for row in datagen.study_rows(150, seed=25)]
        for call in calls:
            call()
        eng.tables.settle("c_merge", timeout_s=60)
        merging = "SELECT count() FROM system.merges WHERE database = currentDatabase() AND table = %s"
        assert eng.execute(merging, ["c_merge"]) == [(0,)]
        settled = parts(eng, "c_merge", active_only=True)
        assert settled < 150  # merges ran, and are over
        assert parts(eng, "c_merge", active_only=True) == settled and eng.tables.count_rows("c_merge") == 150

    def test_async_insert_changes_nothing_in_chdb_so_it_is_no_variant(self, eng):
        """Why COMMIT_VARIANTS has no async_insert: chDB's embedded server has no asynchronous insert queue."""
        eng.tables.reset("c_async", STUDY_COLUMNS)
        eng.execute(f"SYSTEM STOP MERGES {eng.sql.quote('c_async')}")
        eng.set_session({"async_insert": "1", "wait_for_async_insert": "0"})
        try:
            assert eng.settings()["async_insert"] == "1" and eng.settings()["wait_for_async_insert"] == "0"
            for i, row in enumerate(datagen.study_rows(3, seed=26), 1):
                eng.sender.statement_call(eng.sql.insert_sql("c_async", COLS, 1), row)()
                assert eng.tables.count_rows("c_async") == i == parts(eng, "c_async")  # written at once, a part each
            with pytest.raises(ServerError, match="not initialized"):
                eng.execute("SYSTEM FLUSH ASYNC INSERT QUEUE")
        finally:
            eng.apply_settings({})
        assert "wait_for_async_insert" not in eng.settings()  # a fresh session: the defaults again
        assert list(capabilities.of(ClickHouse, "commit_variants").VARIANTS) == ["default"]

    def test_generated_rows_and_batches_each_commit_alone(self, eng):
        columns = (("id", "INT"), ("a", "INT"), ("b", "INT"))
        for statement in eng.tables.ddl("demo", columns, key=("id",)):
            eng.execute(eng.sql.drop_table_sql("demo"))
            eng.execute(statement)
        eng.execute(eng.sql.generate_rows_sql("demo", ["id", "a", "b"], 1000))
        assert eng.execute('SELECT min(id), max(id), sum(a) FROM "demo"') == [(1, 1000, 0)]
        rows = [(2000 + i, i, i) for i in range(25)]
        assert eng.sender.prepare_insert("demo", ["id", "a", "b"], rows, rows_per_statement=10)() == 3
        assert eng.tables.count_rows("demo") == 1025
        with pytest.raises(UnsupportedOperationError, match="no transaction"):
            eng.sender.prepare_insert("demo", ["id", "a", "b"], rows, transaction=True)
        eng.execute(eng.sql.drop_table_sql("demo"))

    def test_session_settings_are_checked_set_and_read_back(self, eng):
        with pytest.raises(ServerError, match="synchronous_commit"):
            eng.apply_settings({"synchronous_commit": "off"})
        assert eng.execute("SELECT 1") == [(1,)]  # refused before the measuring session closed
        assert eng.apply_settings({"max_threads": "1"}) == {"max_threads": "1"}
        assert eng.settings()["max_threads"] == "1" and eng.metadata()["variant_settings"] == {"max_threads": "1"}
        client = ClickHouse(client_kwargs=eng.connect_kwargs()).start()  # another session gets them too
        try:
            assert client.execute("SELECT value FROM system.settings WHERE name = 'max_threads'") == [("1",)]
        finally:
            client.close()
        eng.apply_settings({})
        assert "max_threads" not in eng.settings()
        with pytest.raises(UnsupportedOperationError, match="synchronous_commit"):
            eng.set_session({"synchronous_commit": "off"})

    def test_metadata_records_the_engine_package_beside_the_driver(self, eng):
        import importlib.metadata

        meta = eng.metadata()
        assert (meta["driver"], meta["driver_package"]) == ("chdb", "chdb")
        assert meta["engine_package_version"] == importlib.metadata.version("chdb-core")
        assert meta["server_version"].startswith("26.")

    # `serial`, as DuckDB's twin is: beside the other workers (nbval 01 runs chDB in another process since its
    # default engines include ClickHouse) it failed 3 of 6 suite runs (3.2 against 5.9 ms, bound 35 %); alone,
    # on a cold chDB each time, it passed 3 of 3 (2026-11-29)
    @pytest.mark.serial
    def test_anatomy_splits_a_single_row_insert_into_system_events_parts(self, eng):
        """Named parts, times ≥ 0, the remainder what is left; the part's write and its files' writes are there."""
        from ingestlab.engines.clickhouse.adapter import _EventsRecorder

        assert ClickHouse.has("profiled_statement")
        frame, samples_ms = anatomy_among_samples(eng, "c_events")
        parts = list(_EventsRecorder.ORDER)
        rungs = ["part_files", "pipeline_threads"]  # measured beside the statement: a difference may fall below 0
        for name in ("events", anatomy.UNOBSERVED):  # the observed statements and the unobserved pass
            rows = frame[(frame["pass"] == name) & frame["component"].isin([*parts, "client_total", "unexplained"])]
            per = rows.pivot_table(index="statement_no", columns="component", values="ms")
            assert set(parts) <= set(per.columns), name
            assert (per[[p for p in parts if p not in rungs]] >= 0).all().all(), name
            left = per["client_total"] - per[parts].sum(axis=1)
            assert (per["unexplained"] - left).abs().max() < 1e-9, name
        seen = frame[frame["pass"] == "events"].pivot_table(index="statement_no", columns="component", values="ms")
        assert (seen["disk_write"] > 0).all() and (seen["parts_lock"] > 0).all()  # its part's files, its commit
        # a part less a read's own share can be 0 where the read's share varied more than the part (parse: ~50 µs)
        assert "write_part" in seen.columns and seen["parse"].median() > 0
        counts = frame[(frame["pass"] == "events") & frame["count"].notna()].pivot_table(
            index="statement_no", columns="component", values="count")
        assert (counts["inserted_rows"] == 1).all() and (counts["merge_tree_data_writer_blocks"] == 1).all()
        # the statement reported is the one the samples time (this VM drifts: ±35 %), and its parts fit in it
        row = anatomy.summary(frame.assign(engine="clickhouse", variant="default")).iloc[0]
        if row["client_total_ms"] != pytest.approx(samples_ms, rel=0.35):
            # chDB drifts beside the suite's other workers (3.6 against 5.9 ms in a quiet suite run, 1 of 5):
            # measured once more, the same bound; an anatomy of another statement than the samples' fails both
            again, samples_ms = anatomy_among_samples(eng, "c_events_again")
            row = anatomy.summary(again.assign(engine="clickhouse", variant="default")).iloc[0]
        assert row["client_total_ms"] == pytest.approx(samples_ms, rel=0.35)
        assert sum(row[f"{p}_ms"] for p in parts) < 1.35 * samples_ms
        assert row["n"] == 6 * (40 - eng.capability("profiled_statement").SETTLE)
        # the rungs: one sample per observed statement; the probe table and the probe folders are gone
        ladder = frame[frame["pass"] == "ladder"].set_index("component")
        assert set(rungs) <= set(ladder.index) and ladder.loc["part_files", "ms"] > 0
        assert "c_events_probe" not in {name for (name,) in eng.execute("SHOW TABLES")}
        assert not list(eng.server.data_dir.rglob("ingestlab_probe_*"))

    def test_native_load_is_clickhouses_from_infile_and_reads_the_labs_csv_exactly(self, eng, tmp_path):
        """05's native_client on ClickHouse: its own CSV import, hostile text and NULLs back as they were written."""
        eng.tables.reset("c_native", STUDY_COLUMNS)
        rows = hostile_rows(300)
        path = tmp_path / "rows.csv"
        path.write_bytes(datagen.csv_bytes(datagen.rows_table(COLS, rows)))
        assert eng.capability("native_load").load("c_native", COLS, str(path)) == len(rows)
        assert sorted(eng.execute(f"SELECT id, name, amount, dt FROM {eng.sql.quote('c_native')}")) == sorted(rows)
        with pytest.raises(ServerError, match="clickhouse: loading .*missing.csv"):
            eng.capability("native_load").load("c_native", COLS, str(tmp_path / "missing.csv"))

    def test_what_clickhouse_lacks_is_switched_off_with_its_reason(self, eng):
        for step in ("upsert_sql", "commit_counters", "io_counters",
                     "memory_budget"):
            with pytest.raises(UnsupportedOperationError, match=f"clickhouse: no {step}: "):
                ClickHouse.has(step, check=True)
        assert not capabilities.of(ClickHouse, "load_settings").TRANSACTIONS and million.method_missing(ClickHouse, "executemany")
        with pytest.raises(ConfigError, match="PARTITIONS"):
            eng.tables.ddl("t", STUDY_COLUMNS, partitions=capabilities.of(ClickHouse, "table_models").MAX_PARTITIONS + 1)


def test_registered_as_a_local_engine_without_url_schemes():
    assert engines.class_of("clickhouse") is ClickHouse and not ClickHouse.WIRE.schemes and ClickHouse.HAS_LOCAL_SERVER
    assert isinstance(engines.resolve("clickhouse"), ClickHouse)  # nothing starts until start()
    with pytest.raises(ConfigError, match="ENGINES"):
        engines.from_url("clickhouse://default@127.0.0.1:9000/default")


def test_the_folder_is_private_and_gone_after_close_and_a_new_one_can_start(lab_tmp, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(lab_tmp))
    first = engines.get("clickhouse").start()
    directory = first.server.directory
    assert directory.parent == lab_tmp and stat.S_IMODE(directory.stat().st_mode) == 0o700
    first.tables.reset("t", STUDY_COLUMNS)
    first.close()
    first.close()  # idempotent
    assert first.server.pid() is None and not directory.exists()
    second = engines.get("clickhouse").start()  # chDB let go of the first path
    try:
        assert second.server.directory != directory and second.execute("EXISTS TABLE t") == [(0,)]
    finally:
        second.close()


class TestClickHouseSQL(SQLValidator):
    engine_class = ClickHouse

    def test_every_model_and_partitioning_parses_as_clickhouse(self):
        sql = ClickHouse.SQL("clickhouse")
        for model in capabilities.of(ClickHouse, "table_models").MODELS:
            for partitions in (1, 16):
                if model == "memory" and partitions > 1:  # a Memory table has no partitions: refused, not dropped
                    with pytest.raises(ConfigError, match="PARTITIONS=16.*memory model"):
                        sql.table_ddl("t", datagen.wide_columns(11), model=model, partitions=partitions)
                    continue
                (statement,) = sql.table_ddl("t", datagen.wide_columns(11), model=model, partitions=partitions)
                self.validate(statement, tables=["t"])
                assert ("PARTITION BY" in statement) == (partitions > 1)
                assert ("ORDER BY tuple()" in statement) == (model == "no_key")
                assert statement.endswith("ENGINE = Memory") == (model == "memory")
        self.validate(sql.generate_rows_sql("t", ["id", "a"], 10))
        self.validate(sql.render(sql.insert_sql("t", ["id", "name"], 2), [1, "it's \\", 2, None]), tables=["t"])

    def test_types_are_clickhouses_and_only_the_first_column_is_not_nullable(self):
        (statement,) = ClickHouse.SQL("clickhouse").table_ddl("t", datagen.wide_columns(11), model="no_key")
        assert '"id" Int64, "name" Nullable(String), "amount" Nullable(Decimal(10, 2)), "dt" Nullable(Date)' in statement
        assert "Nullable(Int16)" in statement and "Nullable(Bool)" in statement

    def test_render_writes_literals_as_clickhouse_reads_them(self):
        sql = ClickHouse.SQL("clickhouse")
        text = sql.render(sql.insert_sql("t", ["a", "b", "c"]), ["it's \\ %s", None, 0.1 + 0.2])
        assert text == "INSERT INTO \"t\" (\"a\", \"b\", \"c\") VALUES ('it''s \\\\ %s', NULL, 0.30000000000000004)"
        with pytest.raises(ValueError, match="placeholders"):
            sql.render(sql.insert_sql("t", ["a"]), [])
