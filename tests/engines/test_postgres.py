import pytest

from ingestlab.engines import Engine
from tests.engines.contract import EngineContract
from tests.engines.upsert_contract import UpsertContract


class TestPostgres(EngineContract):
    engine = "postgres"

    def test_embedded_server_is_postgres_18_on_a_socket_only(self, eng):
        assert eng.server_version().startswith("18")
        assert eng.execute("SHOW listen_addresses")[0][0] == ""
        assert eng.settings()["unix_socket_directories"].startswith(str(eng.server.directory))

    def test_instrument_settings_stay_on_in_every_variant(self, eng):
        eng.apply_settings({"synchronous_commit": "off"})
        live = eng.settings()
        assert live["shared_preload_libraries"] == "pg_stat_statements"
        assert live["track_wal_io_timing"] == "on"
        eng.apply_settings({})

    def test_anatomy_splits_planning_execution_and_wal_flush(self, eng):
        eng.apply_settings({"synchronous_commit": "on"})
        eng.execute(eng.drop_table_sql("anat"))
        eng.execute(eng.create_table_sql("anat", [("id", "BIGINT"), ("name", "VARCHAR(100)"),
                                                 ("amount", "DECIMAL(10,2)"), ("dt", "DATE")]))
        from ingestlab import datagen

        frame = eng.statement_anatomy("anat", ["id", "name", "amount", "dt"], datagen.seed_rows(10, seed=5))
        stats = frame[frame["pass"] == "stats"].set_index("component")
        assert {"client_total", "planning", "execution", "wal_flush"} <= set(stats.index)
        assert stats.loc["wal_fsyncs", "count"] >= 0.9  # one WAL flush per commit
        explain = frame[frame["pass"] == "explain"]
        assert explain["statement_no"].nunique() == 10
        per = explain.pivot(index="statement_no", columns="component", values="ms")
        assert (per["client_total"] > per["planning"] + per["execution"]).all()
        eng.apply_settings({})


def test_a_url_selects_the_postgres_adapter_without_connecting():
    engine = Engine.from_url("postgresql://u:secret@127.0.0.1:1/db")
    assert engine.NAME == "postgres" and not engine.is_local
    assert "secret" not in engine.display_url


@pytest.mark.parametrize("url", ["postgresql://u@127.0.0.1:notaport/db", "postgresql://", "nonsense"])
def test_malformed_urls_fail_clearly(url):
    from ingestlab.errors import ConfigError

    with pytest.raises(ConfigError, match="TARGET"):
        Engine.resolve(url)


class TestPostgresUpsert(UpsertContract):
    engine = "postgres"
