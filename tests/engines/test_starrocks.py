"""StarRocks adapter: generated SQL checked with sqlglot, URLs, profiles, Stream Load; contract on a real cluster.

StarRocks cannot run on this machine (no binaries, no Docker engine), so the contract runs
only when INGESTLAB_TEST_STARROCKS_URL names a cluster; everything else here needs no server.
"""

from __future__ import annotations

import pytest
import sqlglot

from ingestlab import anatomy, datagen, engines
from ingestlab.engines import capabilities
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.engines.starrocks.adapter import ProfileCapture, StarRocks, profile_parts
from ingestlab.errors import ConfigError, EngineUnavailableError, UnsupportedOperationError
from tests.engines._support import FrontendAndBackend, corpus_body, parse_sql, render, table_names
from tests.engines.contract import RemoteContract

URL = "starrocks://root:secret@127.0.0.1:9030/ingestlab?http_port=8030"
COLS = [c for c, _ in STUDY_COLUMNS]
DIALECT = StarRocks.WIRE.sqlglot_dialect


class TestStarRocksContract(RemoteContract):
    engine = "starrocks"
    url_env = "INGESTLAB_TEST_STARROCKS_URL"
    stack = "compose/starrocks-*.yml"
    own_version_sql = "SELECT current_version()"  # StarRocks answers version() with a MySQL version


@pytest.fixture
def sr() -> StarRocks:
    return engines.from_url(URL)


@pytest.mark.parametrize("options", [
    {},
    {"model": "duplicate", "buckets": 8, "replication_num": 1},
    {"model": "unique", "key": ["id"], "buckets": 1},
    {"model": "primary", "key": ["id", "name"], "buckets": 4, "replication_num": 3},
    {"model": "aggregate", "key": ["id"], "aggregate": {"amount": "sum", "name": "replace_if_not_null"}},
    {"model": "aggregate", "key": ["id", "name"], "aggregate": {"amount": "MAX", "dt": "MIN"}, "buckets": 2},
    {"distributed_by": ["name"], "properties": {"storage_medium": "SSD"}},
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_ddl_of_every_model_and_option_parses_and_keeps_the_table(sr, options):
    sql = sr.sql.create_table_sql('we"ird`t', STUDY_COLUMNS, **options)
    tree = parse_sql(sql, DIALECT)
    assert table_names(tree) == ['we"ird`t']
    model = options.get("model", "duplicate")
    assert capabilities.of(sr, "table_models").MODELS[model] + "(" in sql
    if "buckets" in options:
        assert f"BUCKETS {options['buckets']}" in tree.sql(DIALECT)


def test_primary_key_shorthand_makes_a_primary_key_table(sr):
    assert "PRIMARY KEY(`id`)" in sr.sql.create_table_sql("t", STUDY_COLUMNS, primary_key=["id"])


@pytest.mark.parametrize("options, match", [
    ({"model": "range"}, "model"),
    ({"key": ["name"]}, "first columns"),
    ({"model": "aggregate", "aggregate": {"id": "SUM"}}, "value column"),
    ({"model": "aggregate", "aggregate": {"amount": "AVG"}}, "one of"),
    ({"buckets": 0}, "buckets"),
    ({"distributed_by": ["nope"]}, "distributed_by"),
    ({"properties": {"bad name": "1"}}, "property name"),
])
def test_bad_table_options_fail_naming_the_option(sr, options, match):
    with pytest.raises(ConfigError, match=match):
        sr.sql.create_table_sql("t", STUDY_COLUMNS, **options)


def test_unknown_table_options_are_refused(sr):
    with pytest.raises(UnsupportedOperationError, match="partition_by"):
        sr.sql.create_table_sql("t", STUDY_COLUMNS, partition_by="dt")


def test_url_gives_table_defaults_and_strips_lab_keys():
    sr = engines.from_url(URL + "&buckets=3&replication_num=1&label=shared-nothing")
    assert "BUCKETS 3" in sr.sql.create_table_sql("t", STUDY_COLUMNS)
    assert '"replication_num" = "1"' in sr.sql.create_table_sql("t", STUDY_COLUMNS)
    kwargs = sr.connect_kwargs()
    assert not {"http_port", "buckets", "replication_num", "label"} & set(kwargs)
    assert kwargs["port"] == 9030 and kwargs["database"] == "ingestlab"
    assert sr.http_port == 8030 and sr.label == "shared-nothing"
    assert "secret" not in sr.display_url and "secret" not in repr(sr.stream_load_client())


def test_without_label_the_engine_is_named_by_its_name(sr):
    assert sr.label == "starrocks"


@pytest.mark.parametrize("bad", ["http_port=abc", "buckets=0", "replication_num=-1"])
def test_bad_lab_query_keys_fail_clearly(bad):
    key = bad.split("=")[0]
    sr = engines.from_url(f"starrocks://root@127.0.0.1:9030/ingestlab?{bad}")
    with pytest.raises(ConfigError, match=key):
        sr.http_port if key == "http_port" else sr.table_defaults()


def test_dml_parses_and_keeps_the_table(sr):
    rows = [(1, "a", "1.50", "2024-01-15"), (2, "b'c", "2.00", "2024-01-16")]
    insert = render(sr.sql.insert_sql("t1", COLS, 2), [v for r in rows for v in r])
    assert table_names(parse_sql(insert, DIALECT)) == ["t1"]
    assert table_names(parse_sql(sr.sql.insert_select_sql("t1", "t2"), DIALECT)) == ["t1", "t2"]
    assert table_names(parse_sql(sr.sql.drop_table_sql("t1"), DIALECT)) == ["t1"]


def test_set_and_profile_statements_parse(sr):
    assert isinstance(parse_sql(render(sr.set_sql("query_timeout"), [600]), DIALECT), sqlglot.exp.Set)
    assert isinstance(parse_sql(sr.ENABLE_PROFILE_SQL, DIALECT), sqlglot.exp.Set)
    for sql, params in ((sr.LAST_QUERY_ID_SQL, None), (sr.PROFILE_LIST_SQL, [20]), (sr.RAW_PROFILE_SQL, ["a-1"])):
        parse_sql(render(sql, params), DIALECT)


def test_analyze_profile_statement_has_the_documented_form(sr):
    # sqlglot 30 has no grammar for ANALYZE PROFILE (it raises on it); check the tokens instead
    sql = render(sr.ANALYZE_PROFILE_SQL, ["90481df8-afaf-c0fd-8e91-a7889c1746b6"])
    assert sql == "ANALYZE PROFILE FROM '90481df8-afaf-c0fd-8e91-a7889c1746b6'"
    tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(sql)
    assert [t.text.upper() for t in tokens[:3]] == ["ANALYZE", "PROFILE", "FROM"]
    assert tokens[3].token_type == sqlglot.tokens.TokenType.STRING


def test_profile_texts_become_the_seeds_split_of_total_time():
    text = corpus_body("starrocks_analyze_profile", "sr_radiant_explain_analyze_select_join_ansi_remnants.txt")
    captures = [ProfileCapture("q0", {"starrocks_analyze_profile": text}),
                ProfileCapture("q1", {"starrocks_analyze_profile": text})]
    split = [profile_parts(c, StarRocks.PROFILE_TEXTS) for c in captures]
    frame = anatomy.frame("profile", [900.0, 1000.0], [p for p, _ in split], extras=[e for _, e in split])
    per = frame[frame["pass"] == "profile"].pivot(index="statement_no", columns="component", values="ms")
    from ingestlab.profiles import parse

    summary = parse(text, "starrocks_analyze_profile").summary
    assert per.loc[1, "execution"] == pytest.approx(summary["execution_ms"])
    assert per.loc[1, "fe_overhead"] == pytest.approx(summary["total_ms"] - summary["execution_ms"])
    assert per.loc[1, "unexplained"] == pytest.approx(1000.0 - summary["total_ms"])
    stats = frame[frame["pass"] == "stats"].set_index("component")["ms"]
    assert stats["client_total"] == 1000.0  # statement 0 is warm-up


def test_a_raw_load_profile_gives_its_total():
    text = corpus_body("starrocks_analyze_profile", "sr_docs_streamload_load_profile_raw_in_table.txt")
    parts, extras = profile_parts(ProfileCapture("q", {"starrocks_analyze_profile": text}), StarRocks.PROFILE_TEXTS)
    row = anatomy.frame("profile", [10_000.0], [parts], extras=[extras])
    row = row[row["pass"] == "profile"].set_index("component")["ms"]
    assert row["server_total"] == pytest.approx(9571.0)  # "Total: 9s571ms"; no ExecutionTime in a load's tree
    assert row["unexplained"] == pytest.approx(10_000.0 - 9571.0)


def test_bulk_load_is_a_stream_load_to_the_urls_fe():
    pair = FrontendAndBackend(corpus_body("stream_load_response", "sr_docs_helm_weatherdata.txt"))
    try:
        sr = engines.from_url(f"starrocks://root:pw@127.0.0.1:9030/ingestlab?http_port={pair.frontend.port}")
        assert sr.capability("bulk_load").load("t1", COLS, [datagen.rows_table(COLS, [(1, "a", "1.00", "2024-01-15")])]) == 22931
        (be,) = pair.backend.requests
        assert be["path"] == "/api/ingestlab/t1/_stream_load" and be["headers"]["label"].startswith("ingestlab_t1_")
        assert be["headers"]["columns"] == "id,name,amount,dt" and "group_commit" not in be["headers"]
        assert sr.last_load.summary["loaded_rows"] == 22931
        sr.close()
    finally:
        pair.close()


def test_no_local_server_and_how_to_get_one():
    with pytest.raises(EngineUnavailableError, match="compose"):
        engines.get("starrocks")
