"""PostgreSQL EXPLAIN (ANALYZE) output, as text (psql transcripts included) and as JSON."""

from __future__ import annotations

import textwrap

import pytest

from ingestlab.engines.postgres import profile as postgres
from ingestlab.errors import ProfileParseError
from ingestlab.profiles import detect, parse, parse_file

CATEGORIES = ("postgres_explain",)

# Hand-written psql output of EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON): psql wraps the
# one-cell result and marks continued lines with '+'.
PSQL_JSON = textwrap.dedent(
    """\
    postgres=# EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) INSERT INTO t VALUES (1);
                   QUERY PLAN
    ------------------------------------------
     [                                       +
       {                                     +
         "Plan": {                           +
           "Node Type": "ModifyTable",       +
           "Operation": "Insert",            +
           "Relation Name": "t",             +
           "Actual Total Time": 0.050,       +
           "Actual Rows": 0,                 +
           "Actual Loops": 1,                +
           "Shared Hit Blocks": 3,           +
           "WAL Records": 1,                 +
           "WAL FPI": 0,                     +
           "WAL Bytes": 59,                  +
           "Plans": [                        +
             {                               +
               "Node Type": "Result",        +
               "Actual Total Time": 0.001,   +
               "Actual Rows": 1,             +
               "Actual Loops": 1             +
             }                               +
           ]                                 +
         },                                  +
         "Planning Time": 0.040,             +
         "Triggers": [                       +
         ],                                  +
         "Execution Time": 0.081             +
       }                                     +
     ]
    (1 row)
    """
)

NEVER_EXECUTED = textwrap.dedent(
    """\
     Hash Join  (cost=1.00..2.00 rows=1 width=4) (actual time=0.010..0.011 rows=0 loops=1)
       Hash Cond: (a.id = b.id)
       ->  Seq Scan on a  (cost=0.00..1.00 rows=1 width=4) (actual time=0.005..0.006 rows=1 loops=1)
       ->  Hash  (cost=1.00..1.00 rows=1 width=4) (never executed)
             ->  Seq Scan on b  (cost=0.00..1.00 rows=1 width=4) (never executed)
     Planning Time: 0.100 ms
     Execution Time: 0.020 ms
    """
)


def test_every_real_explain_parses_with_planning_and_execution_time(real_file, body_of):
    kind = detect(body_of(real_file))
    assert kind in ("postgres_explain_text", "postgres_explain_json")
    profile = parse_file(real_file)
    assert profile.kind == kind
    assert profile.summary["planning_ms"] > 0
    assert profile.summary["execution_ms"] > 0
    assert profile.summary["root_actual_total_ms"] > 0
    assert len(profile.operators) >= 2


def test_pg16_update_reads_documented_times(sample):
    p = parse(sample("postgres_explain/pg_docs_pg16_explain_analyze_update_tenk1.txt"))
    assert (p.summary["planning_ms"], p.summary["execution_ms"]) == (0.113, 3.85)
    assert (p.summary["root_node_type"], p.summary["root_operation"]) == ("ModifyTable", "Update")
    assert p.value("Exact Heap Blocks") == 90


def test_pg18_fractional_rows_and_buffers(sample):
    p = parse(sample("postgres_explain/pg_docs_pg18_explain_analyze_update_tenk1.txt"))
    assert p.summary["execution_ms"] == 1.856
    assert p.value("Actual Rows", path="Update on tenk1/Bitmap Heap Scan on tenk1") == 100.0  # "rows=100.00"
    assert p.value("Shared Read Blocks", path="Update on tenk1/Bitmap Heap Scan on tenk1") == 2
    assert p.value("Index Searches") == 1


def test_pg9_lowercase_times_and_constraint_triggers(sample):
    p = parse(sample("postgres_explain/pg_pev2_delete_fk_triggers_pg9_lowercase_time.txt"))
    assert (p.summary["planning_ms"], p.summary["execution_ms"]) == (2.482, 381072.164)
    assert p.summary["trigger_calls"] == 7 * 5000
    assert p.summary["trigger_ms"] == pytest.approx(163900.503)
    assert p.value("Time", path="Triggers/for constraint attachemessageref") == 158945.774
    assert p.summary["shared_dirtied_blocks"] == 503671


def test_wal_jit_and_a_french_psql_session(sample):
    p = parse(sample("postgres_explain/pg_pev2_insert_10m_wal_jit_french_psql.txt"))
    s = p.summary
    assert (s["wal_records"], s["wal_fpi"], s["wal_bytes"]) == (10000000, 1, 590001027)
    assert s["execution_ms"] == 11560.132
    assert s["jit_ms"] == 0.795
    assert s["temp_written_blocks"] == 17090
    assert "Temps" not in set(p.items["key"])  # "Temps : 47,201 ms" is psql's timing, not the plan


def test_planning_buffers_and_cte_node(sample):
    p = parse(sample("postgres_explain/pg_pev2_update_cte_wal_planning_buffers.txt"))
    assert p.value("Shared Hit Blocks", path="Planning") == 3
    assert p.value("WAL Records", path="Limit/Update on titi") == 10000
    assert p.summary["root_node_type"] == "Limit"


def test_json_explain_with_triggers(sample):
    text = sample("postgres_explain/pg_pev2_insert_json_triggers.txt")
    assert detect(text) == "postgres_explain_json"
    p = parse(text)
    assert (p.summary["planning_ms"], p.summary["execution_ms"]) == (0.056, 0.824)
    assert p.summary["trigger_ms"] == pytest.approx(0.642)
    assert p.summary["root_node"] == "Insert on foo"


def test_psql_wrapped_json_is_unwrapped():
    p = parse(PSQL_JSON)
    assert p.kind == "postgres_explain_json"
    assert (p.summary["planning_ms"], p.summary["execution_ms"]) == (0.04, 0.081)
    assert (p.summary["wal_records"], p.summary["wal_bytes"]) == (1, 59)


def test_never_executed_nodes_cost_nothing():
    p = parse(NEVER_EXECUTED)
    ops = p.operators.set_index("path")["time_ms"]
    assert ops["Hash Join/Hash/Seq Scan on b"] == 0.0
    assert ops["Hash Join"] == pytest.approx(0.005)  # 0.011 minus the executed child's 0.006


def test_plain_explain_without_analyze_is_not_an_error():
    p = parse(" Seq Scan on t  (cost=0.00..35.50 rows=2550 width=4)\n(1 row)\n")
    assert p.summary["root_node_type"] == "Seq Scan"
    assert "execution_ms" not in p.summary


def test_analyze_output_cut_before_execution_time_raises():
    text = "\n".join(NEVER_EXECUTED.splitlines()[:6])
    with pytest.raises(ProfileParseError, match="Execution Time") as err:
        parse(text)
    assert err.value.line_no == 6


def test_node_line_cut_mid_way_raises():
    text = (
        " Limit  (cost=0.00..1.00 rows=1 width=4) (actual time=0.1..0.2 rows=1 loops=1)\n"
        "   ->  Seq Scan on t  (cost=0.00..35.50 rows=25"
    )
    with pytest.raises(ProfileParseError, match="unrecognised") as err:
        parse(text, "postgres_explain_text")
    assert err.value.line_no == 2


def test_truncated_json_raises_with_the_line():
    text = '[\n  {\n    "Plan": {\n      "Node Type": "Result",\n      "Actual Total Time": 0.1,\n'
    with pytest.raises(ProfileParseError, match="truncated") as err:
        parse(text, "postgres_explain_json")
    assert err.value.line_no == 5


def test_json_without_a_plan_raises():
    with pytest.raises(ProfileParseError, match="'Plan'"):
        parse('[{"Planning Time": 0.1}]', "postgres_explain_json")


def test_sniff_leaves_yugabyte_storage_counters_to_the_yugabyte_parser():
    text = " Seq Scan on t (actual time=1.0..2.0 rows=1 loops=1)\n Storage Read Requests: 1\n"
    assert postgres.sniff(text) == "postgres_explain_text"
    assert detect(text) == "yugabyte_explain"


def test_localized_psql_timing_after_the_plan_is_not_a_failure():
    text = NEVER_EXECUTED + "Temps : 12,503 ms\n(7 lignes)\n"
    p = parse(text)
    assert p.summary["execution_ms"] == 0.02
    assert "temps" not in " ".join(p.summary)


# Hand-written in the shape PostgreSQL 14+ prints a write to a partitioned table: one
# "Update on <partition> <alias>" line per partition under the ModifyTable node.
PARTITIONED_UPDATE = textwrap.dedent(
    """\
     Update on public.t1  (cost=0.00..70.00 rows=0 width=0) (actual time=0.120..0.121 rows=0 loops=1)
       Update on public.t1_p1 t1_1
       Update on public.t1_p2 t1_2
       ->  Append  (cost=0.00..70.00 rows=20 width=14) (actual time=0.020..0.050 rows=2 loops=1)
             ->  Seq Scan on public.t1_p1 t1_1  (cost=0.00..35.00 rows=10 width=14) (actual time=0.010..0.020 rows=1 loops=1)
                   Filter: (t1_1.a = 1)
             ->  Seq Scan on public.t1_p2 t1_2  (cost=0.00..35.00 rows=10 width=14) (actual time=0.005..0.010 rows=1 loops=1)
                   Filter: (t1_2.a = 1)
     Planning Time: 0.200 ms
     Execution Time: 0.300 ms
    """
)


def test_partition_targets_under_a_write_are_read_not_rejected():
    p = parse(PARTITIONED_UPDATE)
    assert p.summary["target_relation_count"] == 2
    targets = p.items[p.items["key"] == "Target Relation"]["value_raw"].tolist()
    assert targets == ["public.t1_p1 t1_1", "public.t1_p2 t1_2"]
    assert (p.summary["planning_ms"], p.summary["execution_ms"]) == (0.2, 0.3)


def test_a_target_line_outside_a_write_is_still_an_error():
    text = PARTITIONED_UPDATE.replace("Update on public.t1  (", "Seq Scan on public.t1  (", 1)
    with pytest.raises(ProfileParseError, match="unrecognised") as err:
        parse(text, "postgres_explain_text")
    assert err.value.line_no == 2


def test_cte_listed_at_the_root_is_counted_once_on_the_scan_that_reads_it():
    text = textwrap.dedent(
        """\
         Hash Join  (cost=1.0..2.0 rows=1 width=4) (actual time=100.0..120.0 rows=1 loops=1)
           CTE x
             ->  Seq Scan on big  (cost=0.0..1.0 rows=1 width=4) (actual time=0.1..90.0 rows=1 loops=1)
           ->  CTE Scan on x  (cost=0.0..1.0 rows=1 width=4) (actual time=0.2..95.0 rows=1 loops=1)
           ->  Hash  (cost=1.0..1.0 rows=1 width=4) (actual time=10.0..10.0 rows=1 loops=1)
                 ->  Seq Scan on small  (cost=0.0..1.0 rows=1 width=4) (actual time=0.1..9.0 rows=1 loops=1)
         Planning Time: 0.100 ms
         Execution Time: 120.500 ms
        """
    )
    p = parse(text)
    own = p.operators.set_index("name")["time_ms"]
    assert own["CTE Scan on x"] == pytest.approx(5.0)  # 95 minus the CTE's 90, not 95
    assert own["Hash Join"] == pytest.approx(15.0)  # 120 minus the scan (95) and the hash (10) only
    assert p.summary["operator_self_sum_ms"] == pytest.approx(120.0)
    assert p.warnings == []


def test_child_self_time_never_exceeds_its_parent_and_a_surplus_is_reported():
    text = textwrap.dedent(
        """\
         Gather  (cost=1.0..2.0 rows=3 width=4) (actual time=1.0..10.0 rows=3 loops=1)
           ->  Parallel Seq Scan on t  (cost=0.0..1.0 rows=1 width=4) (actual time=0.5..9.0 rows=1 loops=3)
         Planning Time: 0.100 ms
         Execution Time: 10.100 ms
        """
    )
    p = parse(text)
    own = p.operators.set_index("name")["time_ms"]
    assert own["Parallel Seq Scan on t"] == pytest.approx(10.0)  # 27 ms over three workers, capped at the Gather's 10
    assert p.summary["operator_self_sum_ms"] == pytest.approx(10.0)


def test_a_note_inside_a_plan_is_skipped_and_the_plan_read():
    text = NEVER_EXECUTED.replace("\n", "\n[... rows cut by the poster ...]\n", 1)
    p = parse(text)
    assert p.summary["execution_ms"] == 0.02
    assert [s.text for s in p.skipped] == ["[... rows cut by the poster ...]"]


def test_two_different_execution_times_are_ambiguous():
    text = NEVER_EXECUTED + "Execution Time: 9.000 ms\n"
    with pytest.raises(ProfileParseError, match="ambiguous") as err:
        parse(text)
    assert err.value.line_no == text.rstrip("\n").count("\n") + 1
