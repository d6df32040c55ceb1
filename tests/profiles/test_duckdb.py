"""DuckDB JSON profiles: the lab's own captured ones (2.0), a live one, a flat 1.x one, cut and partial ones."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ingestlab.errors import ProfileParseError
from ingestlab.profiles import anatomy, detect, parse, parse_file
from ingestlab.profiles._text import blank_fixture_header

FIXTURES = Path(__file__).parent / "fixtures" / "duckdb_profile"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.txt"))


def document(name: str) -> dict:
    """The fixture's JSON, read with the json module alone (the parser's answers are checked against it)."""
    return json.loads(blank_fixture_header((FIXTURES / f"{name}.txt").read_text(encoding="utf-8")))


def nodes(tree: list, parent: str = ""):
    """(path, node) of every operator, depth first, siblings of one type numbered as the parser numbers them."""
    seen: dict[str, int] = {}
    for node in tree:
        seen[node["type"]] = seen.get(node["type"], 0) + 1
        name = node["type"] if seen[node["type"]] == 1 else f"{node['type']} ({seen[node['type']]})"
        path = f"{parent}/{name}" if parent else name
        yield path, node
        yield from nodes(node.get("children", []), path)


def live_profile(statement: str, setup: tuple[str, ...] = ()) -> str:
    """A profile of ``statement`` made as the lab's anatomy makes one: the lab's DuckDB file, profiling kept in memory."""
    from ingestlab.engines import Engine

    engine = Engine.get("duckdb").start()
    try:
        for sql in setup:
            engine.execute(sql)
        engine.conn.execute("SET profiling_coverage = 'ALL'")
        engine.conn.execute("SET enable_profiling = 'no_output'")
        engine.execute(statement)
        return engine.conn.get_profiling_information(format="json")
    finally:
        engine.close()


def test_the_lab_captured_four_kinds_of_statement():
    assert NAMES == ["lab_insert_1000_rows", "lab_insert_select", "lab_query_join_group_top_n", "lab_single_row_insert"]


@pytest.mark.parametrize("name", NAMES)
def test_a_captured_profile_is_detected_and_its_times_are_the_jsons_in_ms(name):
    body = blank_fixture_header((FIXTURES / f"{name}.txt").read_text(encoding="utf-8"))
    assert detect(body) == "duckdb_profile"
    profile, doc = parse_file(FIXTURES / f"{name}.txt"), document(name)
    s = profile.summary
    assert s["sql"] == doc["query"]["sql"]
    assert s["total_ms"] == pytest.approx(doc["query"]["total_time"] * 1e3)
    assert s["planning_ms"] == pytest.approx(doc["planner"]["total_time"] * 1e3)
    assert s["optimizer_ms"] == pytest.approx(doc["optimizer"]["total_time"] * 1e3)
    assert s["physical_planning_ms"] == pytest.approx(doc["physical_planner"]["total_time"] * 1e3)
    # every operator, with its own time under its path in the tree
    ops = {row.path: row.time_ms for row in profile.operators.itertuples()}
    want = {path: node["timing"] * 1e3 for path, node in nodes(doc["operator"])}
    assert ops == pytest.approx(want)
    # DuckDB times each operator apart: the times add up to cpu_time, and all of them fit in the query's span
    assert sum(ops.values()) == pytest.approx(s["cpu_ms"], rel=1e-6)
    assert s["cpu_ms"] + s["planning_ms"] + s["optimizer_ms"] + s["physical_planning_ms"] < s["total_ms"]
    assert profile.warnings == []
    a = anatomy(profile)
    assert a["engine"] == "duckdb" and json.loads(json.dumps(a, allow_nan=False)) == a


def test_nested_timings_are_items_inside_their_phase_not_beside_it():
    profile, doc = parse_file(FIXTURES / "lab_single_row_insert.txt"), document("lab_single_row_insert")
    steps = profile.items[(profile.items["path"] == "optimizer") & (profile.items["key"] != "total_time")]
    assert len(steps) == len(doc["optimizer"]) - 1 and (steps["unit"] == "ms").all()
    assert steps["value"].sum() <= profile.summary["optimizer_ms"]
    binding = profile.value("binding_time", path="planner")
    assert 0 < binding <= profile.summary["planning_ms"]
    physical = profile.items[(profile.items["path"] == "physical_planner") & (profile.items["key"] != "total_time")]
    assert physical["value"].sum() <= profile.summary["physical_planning_ms"]


def test_a_single_row_insert_is_one_batch_insert_with_its_commit_steps():
    profile = parse_file(FIXTURES / "lab_single_row_insert.txt")
    s = profile.summary
    assert s["root_operator"] == "BATCH_INSERT"
    assert list(profile.operators["name"]) == ["RESULT_COLLECTOR", "BATCH_INSERT", "COLUMN_DATA_SCAN"]
    assert profile.operators.loc[1, "path"] == "RESULT_COLLECTOR/BATCH_INSERT"
    doc = document("lab_single_row_insert")
    assert s["commit_local_storage_ms"] == pytest.approx(doc["storage"]["commit_local_storage_latency"] * 1e3)
    assert s["write_to_wal_ms"] == pytest.approx(doc["storage"]["write_to_wal_latency"] * 1e3)
    assert profile.value("intermediate_rows", path="RESULT_COLLECTOR/BATCH_INSERT/COLUMN_DATA_SCAN") == 1


def test_the_batch_and_insert_select_move_a_thousand_rows_through_their_scan():
    batch = parse_file(FIXTURES / "lab_insert_1000_rows.txt")
    assert batch.summary["sql"].count("?") == 4000
    assert batch.value("intermediate_rows", path="BATCH_INSERT/COLUMN_DATA_SCAN") == 1000
    select = parse_file(FIXTURES / "lab_insert_select.txt")
    assert select.summary["rows_scanned"] == 1000 and select.summary["root_operator"] == "BATCH_INSERT"
    assert select.value("rows_scanned", path="BATCH_INSERT/TABLE_SCAN") == 1000
    # extra_info is kept as text
    info = select.items[(select.items["key"] == "extra_info") & select.items["path"].str.endswith("TABLE_SCAN")]
    assert "ingestlab_insert_source" in info["value_raw"].iloc[0]


def test_a_querys_tree_keeps_both_sides_of_its_join():
    profile = parse_file(FIXTURES / "lab_query_join_group_top_n.txt")
    assert profile.summary["root_operator"] == "TOP_N" and "storage" not in document("lab_query_join_group_top_n")
    scans = profile.operators[profile.operators["name"] == "TABLE_SCAN"]
    assert len(scans) == 2 and scans["path"].str.contains("HASH_JOIN/TABLE_SCAN").all()
    assert scans["path"].iloc[1].endswith("TABLE_SCAN (2)")  # two scans under one join: numbered, not merged
    assert "commit_local_storage_ms" not in profile.summary  # a read-only query commits nothing


def test_a_live_profile_from_the_lab_parses_as_the_captured_ones():
    text = live_profile('INSERT INTO "t" VALUES (1, 2)', setup=('CREATE TABLE "t" (a INT, b INT)',))
    profile = parse(text)
    assert profile.kind == "duckdb_profile" and profile.summary["root_operator"] in ("BATCH_INSERT", "INSERT")
    assert profile.summary["write_to_wal_ms"] >= 0 and profile.summary["total_ms"] > profile.summary["cpu_ms"]


def test_a_profile_read_before_its_query_ended_has_operators_and_says_so():
    doc = document("lab_query_join_group_top_n")
    partial = json.dumps({"operator": doc["operator"]}, indent=4)  # what DuckDB returns for a result not fetched
    profile = parse(partial)
    assert "total_ms" not in profile.summary and len(profile.operators) == len(list(nodes(doc["operator"])))
    assert any("before its query ended" in w for w in profile.warnings)


def test_a_cut_profile_raises_with_the_line_where_it_ends():
    body = blank_fixture_header((FIXTURES / "lab_insert_select.txt").read_text(encoding="utf-8"))
    cut = body[: len(body) // 2]
    with pytest.raises(ProfileParseError, match="truncated") as err:
        parse(cut, "duckdb_profile")
    assert err.value.line_no == cut.count("\n") + 1


def test_json_that_is_not_a_duckdb_profile_is_refused():
    with pytest.raises(ProfileParseError, match="operator tree"):
        parse('{"query": {"total_time": 0.001}}', "duckdb_profile")
    assert detect('[{"Plan": {"Node Type": "Result", "Actual Total Time": 0.01}}]') == "postgres_explain_json"


def test_duckdb_1x_flat_profile_is_read_too():
    # the shape DuckDB 1.1–1.4 wrote (root metrics beside "children"; operator_* keys), made here for the test
    flat = {
        "query_name": "INSERT INTO t VALUES (1)", "latency": 0.002, "cpu_time": 0.0005, "rows_returned": 1,
        "cumulative_cardinality": 2, "planner": 0.0004, "physical_planner": 0.0001,
        "cumulative_optimizer_timing": 0.0003, "optimizer_expression_rewriter": 0.00005,
        "children": [{"operator_type": "INSERT", "operator_name": "INSERT", "operator_timing": 0.0004,
                      "operator_cardinality": 1, "extra_info": {},
                      "children": [{"operator_type": "COLUMN_DATA_SCAN", "operator_timing": 0.0001,
                                    "operator_cardinality": 1, "extra_info": {}, "children": []}]}],
    }
    text = json.dumps(flat, indent=4)
    assert detect(text) == "duckdb_profile"
    profile = parse(text)
    s = profile.summary
    assert (s["total_ms"], s["cpu_ms"], s["planning_ms"], s["optimizer_ms"]) == pytest.approx((2.0, 0.5, 0.4, 0.3))
    assert s["root_operator"] == "INSERT" and s["sql"] == flat["query_name"]
    assert profile.operators["time_ms"].tolist() == pytest.approx([0.4, 0.1])
    assert profile.operators["path"].tolist() == ["INSERT", "INSERT/COLUMN_DATA_SCAN"]
    assert math.isclose(profile.value("optimizer_expression_rewriter", path="query"), 0.05)
