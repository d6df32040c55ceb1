"""DuckDB JSON profiles: the lab's own captured ones (2.0), a live one, a flat 1.x one, cut, corrupted and partial ones."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ingestlab import engines
from ingestlab.errors import ProfileParseError
from ingestlab.profiles import anatomy, detect, parse, parse_file
from ingestlab.profiles._text import VERBATIM_MARKER, blank_fixture_header

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

    engine = engines.get("duckdb").start()
    try:
        for sql in setup:
            engine.execute(sql)
        engine.conn.execute("SET profiling_coverage = 'ALL'")
        engine.conn.execute("SET enable_profiling = 'no_output'")
        engine.execute(statement)
        return engine.conn.get_profiling_information(format="json")
    finally:
        engine.close()


def extra_info(profile, path: str) -> dict:
    """The ``extra_info`` of the operator whose path ends with ``path``, as the parser kept it (JSON text)."""
    rows = profile.items[(profile.items["key"] == "extra_info") & profile.items["path"].str.endswith(path)]
    assert len(rows) == 1, f"{len(rows)} operators end with {path!r}"
    return json.loads(rows["value_raw"].iloc[0])


def test_the_lab_captured_at_least_ten_kinds_of_statement():
    # the first four by hand; the others by bench/capture_duckdb_profiles.py (its command in each header)
    assert NAMES == [
        "lab_add_primary_key", "lab_bulk_arrow_scan_10000_rows", "lab_checkpoint", "lab_csv_scan_count_star",
        "lab_csv_scan_full_scan_order_by_limit_1", "lab_generate_10000_rows", "lab_insert_1000_rows",
        "lab_insert_100_rows", "lab_insert_100_rows_checkpoint", "lab_insert_select", "lab_query_join_group_top_n",
        "lab_single_row_insert", "lab_single_row_insert_50_columns", "lab_single_row_insert_primary_key",
        "lab_single_row_insert_primary_key_indexes", "lab_upsert_100_existing_keys",
    ]
    assert len(NAMES) >= 10
    statements = {document(name)["query"]["sql"] for name in NAMES}
    # the two keyed single-row INSERTs are one statement into tables of two models; every other is its own
    assert len(statements) == len(NAMES) - 1
    for name in NAMES:
        header = (FIXTURES / f"{name}.txt").read_text(encoding="utf-8").split(VERBATIM_MARKER)[0]
        assert "# engine version: DuckDB " in header and "# statement: " in header and "# transform: none" in header


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


def test_notebook_01s_batch_of_100_moves_its_100_rows_through_one_scan():
    profile, doc = parse_file(FIXTURES / "lab_insert_100_rows.txt"), document("lab_insert_100_rows")
    s = profile.summary
    assert s["sql"].count("?") == 400 and s["root_operator"] == "BATCH_INSERT"
    assert profile.value("intermediate_rows", path="BATCH_INSERT/COLUMN_DATA_SCAN") == 100
    # the 100 rows scanned and the one row (the count) the insert returns
    assert s["intermediate_rows"] == doc["query"]["total_intermediate_rows"] == 101


@pytest.mark.parametrize(("name", "n_columns"), [("lab_single_row_insert_50_columns", 50),
                                                 ("lab_single_row_insert_primary_key", 4),
                                                 ("lab_single_row_insert_primary_key_indexes", 4)])
def test_notebook_02s_single_row_inserts_carry_one_row_of_their_width(name, n_columns):
    profile, doc = parse_file(FIXTURES / f"{name}.txt"), document(name)
    s = profile.summary
    assert s["sql"].count("?") == n_columns and s["root_operator"] == "BATCH_INSERT"
    assert profile.value("intermediate_rows", path="BATCH_INSERT/COLUMN_DATA_SCAN") == 1
    scan = doc["operator"][0]["children"][0]["children"][0]
    assert profile.value("intermediate_size_bytes", path="BATCH_INSERT/COLUMN_DATA_SCAN") == scan["intermediate_size_bytes"]
    assert s["commit_local_storage_ms"] == pytest.approx(doc["storage"]["commit_local_storage_latency"] * 1e3)
    assert s["write_to_wal_ms"] == pytest.approx(doc["storage"]["write_to_wal_latency"] * 1e3)


def test_a_row_of_50_columns_is_wider_in_the_scan_than_a_row_of_the_seeds_4():
    wide = parse_file(FIXTURES / "lab_single_row_insert_50_columns.txt")
    narrow = parse_file(FIXTURES / "lab_single_row_insert.txt")
    path = "BATCH_INSERT/COLUMN_DATA_SCAN"
    assert wide.value("intermediate_size_bytes", path=path) > narrow.value("intermediate_size_bytes", path=path) > 0


def test_the_upsert_runs_as_a_merge_that_updates_every_existing_key_and_inserts_none():
    profile, doc = parse_file(FIXTURES / "lab_upsert_100_existing_keys.txt"), document("lab_upsert_100_existing_keys")
    s, ops = profile.summary, profile.operators
    assert "ON CONFLICT" in s["sql"] and s["root_operator"] == "MERGE_INTO"  # DuckDB 2.0 plans the upsert as a MERGE
    children = ops[ops["path"].str.fullmatch(r"RESULT_COLLECTOR/MERGE_INTO/[^/]+")]["name"].tolist()
    assert children == ["PROJECTION", "UPDATE", "INSERT"]  # the join that finds the keys, then both actions
    # one action source under each action: the same type at two paths, each its own operator
    assert ops[ops["name"] == "MERGE_ACTION_SOURCE"]["path"].tolist() == [
        "RESULT_COLLECTOR/MERGE_INTO/UPDATE/MERGE_ACTION_SOURCE",
        "RESULT_COLLECTOR/MERGE_INTO/INSERT/PROJECTION/MERGE_ACTION_SOURCE"]
    assert profile.value("intermediate_rows", path="UPDATE/MERGE_ACTION_SOURCE") == 100  # every key was there
    assert profile.value("intermediate_rows", path="INSERT/PROJECTION/MERGE_ACTION_SOURCE") == 0
    assert extra_info(profile, "UPDATE/MERGE_ACTION_SOURCE")["Action"] == "WHEN MATCHED THEN UPDATE"
    assert s["rows_scanned"] == doc["query"]["total_rows_scanned"] == 100  # the table's 100 rows, probed
    # an operator that did nothing keeps its 0 ms (it is not dropped as missing)
    assert ops.loc[ops["path"] == "RESULT_COLLECTOR/MERGE_INTO/INSERT", "time_ms"].tolist() == [0.0]


def test_notebook_05s_generate_reads_duckdbs_range_into_a_keyed_table():
    profile, doc = parse_file(FIXTURES / "lab_generate_10000_rows.txt"), document("lab_generate_10000_rows")
    s = profile.summary
    assert "range(1, 10001)" in s["sql"] and s["root_operator"] == "INSERT"  # a keyed table: INSERT, not BATCH_INSERT
    assert extra_info(profile, "PROJECTION/PROJECTION/TABLE_SCAN")["Function"] == "RANGE"
    assert profile.value("intermediate_rows", path="INSERT/PROJECTION/PROJECTION/TABLE_SCAN") == 10_000
    assert s["rows_scanned"] == doc["query"]["total_rows_scanned"] == 0  # a table function: no table's rows
    assert s["commit_local_storage_ms"] == pytest.approx(doc["storage"]["commit_local_storage_latency"] * 1e3)


def test_adding_the_primary_key_after_the_load_sorts_the_tables_rows_into_an_index():
    profile, doc = parse_file(FIXTURES / "lab_add_primary_key.txt"), document("lab_add_primary_key")
    s, ops = profile.summary, profile.operators
    assert s["sql"].startswith("ALTER TABLE") and s["root_operator"] == "CREATE_INDEX"
    assert ops["name"].tolist() == ["RESULT_COLLECTOR", "CREATE_INDEX", "ORDER_BY", "PROJECTION", "TABLE_SCAN"]
    assert profile.value("rows_scanned", path="TABLE_SCAN") == 10_000
    assert profile.value("intermediate_rows", path="CREATE_INDEX/ORDER_BY") == 10_000
    assert doc["operator"][0]["timing"] == 0 and ops.loc[0, "time_ms"] == 0.0  # a zero time is a time


def test_the_bulk_paths_insert_scans_arrow_memory_inside_its_transaction():
    profile, doc = parse_file(FIXTURES / "lab_bulk_arrow_scan_10000_rows.txt"), document("lab_bulk_arrow_scan_10000_rows")
    s = profile.summary
    assert s["sql"].endswith('SELECT * FROM "ingestlab_chunk_0"') and s["root_operator"] == "BATCH_INSERT"
    assert extra_info(profile, "BATCH_INSERT/TABLE_SCAN")["Function"] == "PYTHON_ARROW_SCAN"
    assert profile.value("intermediate_rows", path="BATCH_INSERT/TABLE_SCAN") == 10_000
    assert profile.value("rows_scanned", path="BATCH_INSERT/TABLE_SCAN") == 0  # Arrow memory, no row groups
    # read before bulk_load's COMMIT: no commit has happened, so no storage step is timed
    assert "storage" not in doc
    assert not {"commit_local_storage_ms", "write_to_wal_ms", "checkpoint_ms"} & set(s)


def test_a_commit_that_checkpoints_times_the_checkpoint_instead_of_the_wal():
    profile, doc = parse_file(FIXTURES / "lab_insert_100_rows_checkpoint.txt"), document("lab_insert_100_rows_checkpoint")
    s = profile.summary
    assert s["root_operator"] == "BATCH_INSERT" and s["sql"].count("?") == 500
    assert set(doc["storage"]) == {"checkpoint_latency"}
    assert s["checkpoint_ms"] == pytest.approx(doc["storage"]["checkpoint_latency"] * 1e3) and s["checkpoint_ms"] > 0
    assert "write_to_wal_ms" not in s and "commit_local_storage_ms" not in s
    assert s["bytes_written"] == doc["io"]["total_bytes_written"] > 0  # the checkpoint wrote the database file


def test_settles_checkpoint_is_a_table_function_whose_time_is_the_checkpoints():
    profile, doc = parse_file(FIXTURES / "lab_checkpoint.txt"), document("lab_checkpoint")
    s = profile.summary
    assert s["sql"] == "CHECKPOINT" and s["root_operator"] == "TABLE_SCAN"
    assert extra_info(profile, "RESULT_COLLECTOR/TABLE_SCAN")["Function"] == "CHECKPOINT"
    assert s["checkpoint_ms"] == pytest.approx(doc["storage"]["checkpoint_latency"] * 1e3) and s["checkpoint_ms"] > 0
    assert s["bytes_written"] == doc["io"]["total_bytes_written"] > 0


@pytest.mark.parametrize(("name", "root", "scan_path"), [
    ("lab_csv_scan_count_star", "UNGROUPED_AGGREGATE", "UNGROUPED_AGGREGATE/PROJECTION/TABLE_SCAN"),
    ("lab_csv_scan_full_scan_order_by_limit_1", "TOP_N", "TOP_N/TABLE_SCAN"),
])
def test_notebook_06s_queries_read_every_row_of_the_csv_files(name, root, scan_path):
    profile, doc = parse_file(FIXTURES / f"{name}.txt"), document(name)
    s = profile.summary
    assert s["root_operator"] == root
    info = extra_info(profile, scan_path)
    assert info["Function"] == "READ_CSV" and info["Total Files Read"] == "4"  # one file per dt= partition
    assert profile.value("rows_scanned", path=scan_path) == s["rows_scanned"] == 2000  # the table's rows
    assert profile.value("intermediate_rows", path=f"RESULT_COLLECTOR/{root}") == 1  # one count, or LIMIT 1
    assert s["bytes_read"] == doc["io"]["total_bytes_read"] > 0
    assert "storage" not in doc and "commit_local_storage_ms" not in s  # a query commits nothing


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


@pytest.mark.parametrize(("key", "bad"), [
    ("timing", '"fast"'), ("timing", "-0.000051101"), ("timing", "NaN"),
    ("total_time", "null"), ("write_to_wal_latency", '"61 us"'), ("intermediate_rows", '"one"'),
])
def test_a_corrupted_value_is_refused_in_one_line_naming_its_line(key, bad):
    lines = blank_fixture_header((FIXTURES / "lab_single_row_insert.txt").read_text(encoding="utf-8")).split("\n")
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(f'"{key}":'))
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at] = f'{indent}"{key}": {bad}' + ("," if lines[at].rstrip().endswith(",") else "")
    with pytest.raises(ProfileParseError, match=rf"^corrupted DuckDB profile: \S*\.{key} is ") as err:
        parse("\n".join(lines), "duckdb_profile")
    assert err.value.line_no == at + 1 and "\n" not in str(err.value)


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
