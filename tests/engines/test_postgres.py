import pytest

from ingestlab import datagen
from ingestlab.engines import Engine
from ingestlab.engines.base import SEED_COLUMNS
from tests.engines.contract import EngineContract, NativeLoopContract
from tests.engines.upsert_contract import UpsertContract


class TestPostgres(EngineContract, NativeLoopContract):
    engine = "postgres"

    def test_embedded_server_is_postgres_18_on_a_socket_only(self, eng):
        assert eng.server_version().startswith("18")
        assert eng.execute("SHOW listen_addresses")[0][0] == ""
        assert eng.settings()["unix_socket_directories"] == str(eng.server.socket_dir)  # private, short

    def test_instrument_settings_stay_on_in_every_variant(self, eng):
        eng.apply_settings({"synchronous_commit": "off"})
        live = eng.settings()
        assert live["shared_preload_libraries"] == "pg_stat_statements"
        assert live["track_wal_io_timing"] == "on"
        eng.apply_settings({})

    def test_anatomy_splits_planning_execution_and_wal_flush(self, eng):
        eng.apply_settings({"synchronous_commit": "on"})
        eng.reset_table("anat", SEED_COLUMNS)
        frame = eng.statement_anatomy("anat", [c for c, _ in SEED_COLUMNS], datagen.seed_rows(10, seed=5))
        stats = frame[frame["pass"] == "stats"].set_index("component")
        assert {"client_total", "planning", "execution", "wal_flush", "unexplained"} <= set(stats.index)
        assert stats.loc["wal_fsyncs", "count"] >= 0.9  # one WAL flush per commit
        per = frame[frame["pass"] == "server"].pivot(index="statement_no", columns="component", values="ms")
        assert len(per) == 10 and (per["planning"] > 0).all() and (per["execution"] > 0).all()
        assert (per["client_total"] > per["planning"] + per["execution"] + per["wal_flush"]).all()
        # the client's side is what lies outside the server's own span of the statement: less than the whole
        assert ((per["client_socket"] > 0) & (per["client_socket"] < per["client_total"])).all()
        ladder = frame[frame["pass"] == "ladder"].set_index("component")
        assert set(ladder.index) == {"transaction", "parse_analyze", "executor_start_end", "commit"}
        assert (ladder.loc[["transaction", "parse_analyze", "executor_start_end"], "ms"] > 0).all()
        assert (ladder["count"] == 10).all() and ladder["source"].str.contains("95 % CI").all()
        eng.apply_settings({})

    def test_anatomy_times_the_statement_as_the_samples_do(self, eng, monkeypatch):
        # the pass sends the INSERT rendered before the clock (statement_call), never through execute
        calls = []
        original = type(eng).statement_call

        def spy(self, sql, params=None):
            calls.append(sql)
            return original(self, sql, params)
        monkeypatch.setattr(type(eng), "statement_call", spy)
        eng.reset_table("anat_call", SEED_COLUMNS)
        eng.statement_anatomy("anat_call", [c for c, _ in SEED_COLUMNS], datagen.seed_rows(3, seed=6))
        assert [c for c in calls if c.startswith('INSERT INTO "anat_call"')] == [calls[0]] * 3
        assert eng.execute("SELECT to_regclass('anat_call_probe') IS NULL")[0][0]  # the probes' table is gone
        assert eng.count_rows("anat_call") == 3

    def test_a_statement_call_goes_to_libpq_and_reports_what_the_server_refuses(self, eng):
        from ingestlab import timing
        from ingestlab.errors import ServerError

        call = eng.statement_call("INSERT INTO no_such_table VALUES (%s)", [1])
        # not the cursor's execute: nothing of psycopg2 inside the clock, in the C loop or (without it) from ctypes
        assert isinstance(call, timing.NativeCall) and call.sender.kind == "libpq"
        assert call.fallback.func.__name__ == "_pq_exec"
        for run in (call, call.fallback):
            with pytest.raises(ServerError, match='relation "no_such_table" does not exist'):
                run()
        assert eng.execute("SELECT 1") == [(1,)]  # the connection is usable after the error

    def test_bulk_load_streams_a_chunk_larger_than_its_pieces(self, eng):
        from ingestlab.engines.postgres import COPY_PIECE_ROWS

        n = COPY_PIECE_ROWS * 2 + 7
        rows = [(i, f"r{i}", i / 4, None) for i in range(n)]
        eng.reset_table("pieces", SEED_COLUMNS)
        assert eng.bulk_load("pieces", [c for c, _ in SEED_COLUMNS], [datagen.rows_table([c for c, _ in SEED_COLUMNS], rows)]) == n
        assert eng.execute("SELECT count(*), count(DISTINCT id), max(id) FROM pieces") == [(n, n, n - 1)]

    def test_partitions_and_models_are_what_the_catalog_says(self, eng):
        eng.reset_table("parts", SEED_COLUMNS, model="primary_key_indexes", partitions=8)
        assert eng.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = '\"parts\"'::regclass")[0][0] == 8
        assert eng.execute("SELECT count(*) FROM pg_indexes WHERE tablename = 'parts'")[0][0] == 4
        eng.reset_table("parts", SEED_COLUMNS, model="unlogged")
        assert eng.execute("SELECT relpersistence FROM pg_class WHERE relname = 'parts'")[0][0] == "u"


def test_a_url_selects_the_postgres_adapter_without_connecting():
    engine = Engine.from_url("postgresql://u:secret@127.0.0.1:1/db")
    assert engine.NAME == "postgres" and not engine.is_local
    assert "secret" not in engine.display_url


@pytest.mark.parametrize("url", ["postgresql://u@127.0.0.1:notaport/db", "postgresql://", "nonsense"])
def test_malformed_urls_fail_clearly(url):
    from ingestlab.errors import ConfigError

    with pytest.raises(ConfigError, match="ENGINES"):
        Engine.resolve(url)


class TestPostgresUpsert(UpsertContract):
    engine = "postgres"
