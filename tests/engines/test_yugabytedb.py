"""YugabyteDB adapter: SQL checked with sqlglot's postgres dialect, URLs, variants; contract on a real server.

YugabyteDB cannot run on this machine (no binaries, no Docker engine), so the contract runs
only when INGESTLAB_TEST_YUGABYTEDB_URL names a server.
"""

from __future__ import annotations

import pytest

from ingestlab import engines
from ingestlab.engines import capabilities
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.engines.yugabytedb import YugabyteDB
from ingestlab.errors import EngineUnavailableError
from tests.engines._support import corpus_body, parse_sql, table_names
from tests.engines.contract import RemoteContract
from tests.engines.upsert_contract import UpsertContract

URL = "yugabytedb://yugabyte:pw@127.0.0.1:5433/yugabyte?label=rf1"
DIALECT = YugabyteDB.WIRE.sqlglot_dialect


class TestYugabyteDBContract(RemoteContract):
    engine = "yugabytedb"
    url_env = "INGESTLAB_TEST_YUGABYTEDB_URL"
    stack = "compose/yugabytedb.yml"


@pytest.fixture
def yb():
    return engines.from_url(URL)


def test_url_selects_yugabytedb_on_its_port_and_hides_the_password(yb):
    assert yb.NAME == "yugabytedb" and yb.WIRE.default_port == 5433 and yb.label == "rf1"
    kwargs = yb.connect_kwargs()
    assert kwargs["port"] == 5433 and kwargs["dbname"] == "yugabyte" and "label" not in kwargs
    assert "pw" not in yb.display_url


def test_sql_parses_with_the_postgres_dialect(yb):
    assert table_names(parse_sql(yb.sql.create_table_sql("we ird", STUDY_COLUMNS, primary_key=["id"]), DIALECT)) == ["we ird"]
    insert = yb.sql.insert_sql("t1", [c for c, _ in STUDY_COLUMNS], 2).replace("%s", "1")
    assert table_names(parse_sql(insert, DIALECT)) == ["t1"]
    assert table_names(parse_sql(yb.sql.insert_select_sql("t1", "t2"), DIALECT)) == ["t1", "t2"]


def test_variants_are_session_settings_set_with_set_config(yb):
    names = {n for settings in capabilities.of(yb, "commit_variants").VARIANTS.values() for n in settings}
    assert names == {"yb_disable_transactional_writes", "yb_enable_upsert_mode"} <= yb.SESSION_SETTINGS
    for settings in capabilities.of(yb, "commit_variants").VARIANTS.values():
        for name, value in settings.items():
            parse_sql(f"SELECT set_config('{name}', '{value}', false)", DIALECT)
            parse_sql(f"SET {name} = '{value}'", DIALECT)


def test_explain_dist_output_gives_planning_execution_and_storage_counters():
    from ingestlab.profiles import parse

    text = corpus_body("yugabyte_explain", "yb_docs_query_diagnostics_explain_plan_insert.txt")
    summary = parse(text, "yugabyte_explain").summary
    assert "execution_ms" in summary
    assert any(k.startswith("storage_") for k in summary)


def test_no_local_server_and_how_to_get_one():
    with pytest.raises(EngineUnavailableError, match="compose"):
        engines.get("yugabytedb")


def test_blind_overwrite_is_a_plain_insert_run_under_upsert_mode(yb):
    upsert = yb.capability("upsert")
    assert upsert.OPERATIONS == ("insert", "overwrite", "blind_overwrite")
    assert yb.BLIND_WRITE_SETTINGS == {"yb_enable_upsert_mode": "on"}
    blind = upsert.write_sql("blind_overwrite", "t", ["id", "doc"], "id", 2)
    assert blind == yb.sql.insert_sql("t", ["id", "doc"], 2) and "ON CONFLICT" not in blind
    assert table_names(parse_sql(blind.replace("%s", "1"), DIALECT)) == ["t"]
    assert "ON CONFLICT" in upsert.write_sql("overwrite", "t", ["id", "doc"], "id", 2)


class TestYugabyteDBUpsert(UpsertContract):
    engine = "yugabytedb"
    target = TestYugabyteDBContract.target
    skip_reason = TestYugabyteDBContract.skip_reason
