"""StarRocks raw profiles, ANALYZE PROFILE / EXPLAIN ANALYZE tables and SHOW PROFILELIST."""

from __future__ import annotations

import math
import textwrap

import pytest

from ingestlab.engines.starrocks import profile as starrocks
from ingestlab.errors import ProfileParseError
from ingestlab.profiles import detect, parse, parse_file

CATEGORIES = ("starrocks_profile", "starrocks_analyze_profile", "starrocks_profilelist")

# Hand-written in the v3.x layout (not a published sample): an INSERT with a multi-line
# statement, the newer planner timers, an Execution section and an OLAP_TABLE_SINK.
INSERT_PROFILE = textwrap.dedent(
    """\
    Query:
      Summary:
         - Query ID: 1b2c3d4e-0000-11ef-0000-000000000001
         - Start Time: 2024-06-01 10:00:00
         - End Time: 2024-06-01 10:00:02
         - Total: 2s310ms
         - Query Type: Load
         - Query State: Finished
         - StarRocks Version: 3.3.2-857dd73
         - User: root
         - Default Db: lab
         - Sql Statement: INSERT INTO t
    SELECT *
      FROM src
     WHERE k > 0
         - QueryCpuCost: 1s1ms
         - QueryMemCost: 13.812 MB
      Planner:
         - -- Parser[1] 0
         - -- Total[1] 12ms
      Execution:
         - QueryExecutionWallTime: 2s250ms
         - QueryPeakMemoryUsagePerNode: 13.812 MB
         - QuerySumMemoryUsage: -1.000 B
        Fragment 0:
           - BackendNum: 1
          Pipeline (id=0):
            OLAP_TABLE_SINK (plan_node_id=-1):
              CommonMetrics:
                 - IsFinalSink
                 - OperatorTotalTime: 1m7s
                   - __MAX_OF_OperatorTotalTime: 1m9s
                   - __MIN_OF_OperatorTotalTime: 1m5s
                 - PushRowNum: 306.985M (306985000)
              UniqueMetrics:
                 - BytesWritten: 8.903B (8902570713)
                 - PeakMemoryUsage: 0.00 
            OLAP_SCAN (plan_node_id=0):
              CommonMetrics:
                 - OperatorTotalTime: 45s45ms
                 - PullRowNum: 74.948K (74948)
              UniqueMetrics:
                 - ScanTime: ?
    """
)


def test_every_real_starrocks_sample_parses_to_its_category(real_file, body_of):
    text = body_of(real_file)
    kind = detect(text)
    assert kind == real_file.parent.name
    profile = parse_file(real_file)
    assert profile.kind == kind
    assert len(profile.items) > 0


def test_every_real_starrocks_sample_yields_the_fields_a_notebook_needs(real_file, body_of):
    text = body_of(real_file)
    profile = parse_file(real_file)
    s = profile.summary
    if real_file.parent.name == "starrocks_profilelist":
        assert s["profile_count"] > 0
        times = profile.items[profile.items["key"] == "Time"]
        assert len(times) == s["profile_count"] and times["value"].notna().all()
        assert set(times["unit"]) == {"ms"}
        return
    if "Summary" in text:
        assert s["total_ms"] > 0
    else:
        assert len(profile.operators) > 0  # a lone operator block
    if "ExecutionTime" in text or "Execution Profile" in text:
        assert s["execution_ms"] > 0
        assert s["fe_overhead_ms"] == pytest.approx(s["total_ms"] - s["execution_ms"])
    if "OLAP_TABLE_SINK" in text:
        assert s["olap_table_sink_ms"] > 0
    assert not profile.items["value_raw"].astype(str).str.contains(r"\[\d+(?:;\d+)*m").any()


def test_old_format_profile_reads_exact_nanoseconds_and_flags_the_published_cut(sample):
    text = sample("starrocks_profile/sr_2022_main_release_select_old_format_truncated.txt")
    p = parse(text)
    assert p.summary["total_ms"] == 35.0
    assert p.summary["execution_ms"] == pytest.approx(32.941234)  # Active: 32.941ms[32941234ns]
    assert p.summary["fe_overhead_ms"] == pytest.approx(2.058766)
    assert p.summary["planning_ms"] == 3.0  # "Total: 3ms / 1"
    assert p.summary["truncated"] is True
    assert p.summary["status"] == "EOF"
    assert p.summary["query_id"] == "74009722-362c-11ed-88aa-00163e0e2cf9"
    sql = p.items[p.items["key"] == "Sql Statement"]["value_raw"].iloc[0]
    assert sql.startswith("select sum(l_extendedprice") and sql.endswith("'DELIVER IN PERSON' );")
    peak = p.items[(p.items["key"] == "PeakMemoryUsage") & p.items["path"].str.endswith("RESULT_SINK/CommonMetrics")]
    assert (peak["value"].iloc[0], peak["unit"].iloc[0]) == (0.0, "bytes")


def test_operator_block_reads_max_and_min_children_as_statistics(sample):
    p = parse(sample("starrocks_profile/sr_docs_spark_connector_olap_scan_fragment.txt"))
    assert (p.value("PullRowNum"), p.value("PullRowNum", stat="max"), p.value("PullRowNum", stat="min")) == (2, 2, 0)
    assert p.value("UncompressedBytesRead", stat="min") == 0.0  # "__MIN_OF_...: 0.00 "
    assert not p.items["key"].str.startswith("__").any()
    assert p.operators.set_index("name")["time_ms"].to_dict() == {"OLAP_SCAN (plan_node_id=0)": 1.404}


def test_analyze_profile_with_ansi_remnants_reads_times_and_operator_tree(sample):
    p = parse(sample("starrocks_analyze_profile/sr_radiant_explain_analyze_select_join_ansi_remnants.txt"))
    assert (p.summary["total_ms"], p.summary["execution_ms"], p.summary["fe_overhead_ms"]) == (1434.0, 1317.0, 117.0)
    assert p.summary["version"] == "3.4.2-c15ba7c"
    ops = p.operators.set_index("name")["time_ms"]
    assert ops["EXCHANGE (id=5)"] == 512.645
    assert ops["OLAP_SCAN (id=1)"] == 1.074
    join = "Fragment 1/DATA_STREAM_SINK (id=5)/DECODE (id=4)/PROJECT (id=3)"
    join += "/HASH_JOIN (id=2) [COLOCATE, LEFT OUTER JOIN]"
    assert f"{join}/OLAP_SCAN (id=0)" in set(p.operators["path"])
    assert p.value("ClosureBlockTime", stat="max") == 12099.0  # "[min=5s615ms, max=12s99ms]"


def test_broker_load_analyze_profile_reports_the_olap_table_sink(sample):
    p = parse(sample("starrocks_analyze_profile/sr_docs_brokerload_runtime_olap_table_sink.txt"))
    assert p.summary["status"] == "Running"
    assert p.summary["olap_table_sink_ms"] == 4930.0
    assert p.summary["olap_table_sink_rows"] == 14823424
    assert p.summary["execution_ms"] == 30001.0  # "30s1ms"
    assert p.summary["scan_ms"] == 28885.0


def test_stream_load_analyze_profile_returns_the_raw_load_tree(sample):
    text = sample("starrocks_analyze_profile/sr_docs_streamload_load_profile_raw_in_table.txt")
    assert detect(text) == "starrocks_analyze_profile"
    p = parse(text)
    assert p.summary["total_ms"] == 9571.0
    assert p.summary["loaded_rows"] == 280
    assert p.summary["load_bytes"] == 799008
    assert p.summary["status"] == "Finished"
    assert p.value("MemoryLimit") == -1.0
    assert p.value("RowsReturnedRate") == 12049.0


def test_profilelist_reads_one_row_per_query(sample):
    p = parse(sample("starrocks_profilelist/sr_docs_streamload_empty_statement.txt"))
    assert p.summary["profile_count"] == 6
    assert p.value("Time", path="5641cf37-0af4-f116-46c6-ca7cce149886") == 13088.0
    p = parse(sample("starrocks_profilelist/sr_docs_text_based_analysis_mixed_states.txt"))
    assert p.summary["status_counts"] == {"Finished": 4, "Error": 1}


def test_hand_written_insert_profile_reads_execution_section_and_sink():
    p = parse(INSERT_PROFILE)
    assert p.kind == "starrocks_profile"
    s = p.summary
    assert (s["total_ms"], s["execution_ms"], s["fe_overhead_ms"]) == (2310.0, 2250.0, 60.0)
    assert s["planning_ms"] == 12.0  # "- -- Total[1] 12ms"
    assert s["olap_table_sink_ms"] == 67000.0  # "1m7s"
    assert p.value("OperatorTotalTime", stat="max") == 69000.0
    assert p.value("BytesWritten") == 8902570713.0
    assert p.value("PushRowNum") == 306985000.0
    assert p.value("QuerySumMemoryUsage") == -1.0
    sql = p.items.loc[p.items["key"] == "Sql Statement", "value_raw"].iloc[0]
    assert sql.splitlines()[0] == "INSERT INTO t" and "WHERE k > 0" in sql
    assert p.value("QueryCpuCost") == 1001.0
    assert "IsFinalSink" in set(p.items["key"])
    assert math.isnan(p.value("ScanTime"))


def _last_line_no(text: str) -> int:
    return text.rstrip("\n").count("\n") + 1


@pytest.mark.parametrize(
    ("text", "line_no"),
    [
        pytest.param(
            INSERT_PROFILE.split("    OLAP_SCAN")[0] + "    OLAP_SCAN (plan_node_id=0):\n", None, id="cut-after-section"
        ),
        pytest.param(INSERT_PROFILE[: INSERT_PROFILE.index("PushRowNum") + 4] + "\n", None, id="cut-mid-counter"),
        pytest.param("Query:\n  Summary:\n     - Query ID: 1\n     - Start Time: 2024", 4, id="cut-in-summary"),
        pytest.param(
            "Query:\n  Summary:\n     - Total: 1ms\n  Planner\n     - Total: 1ms\n", 4, id="header-without-colon"
        ),
    ],
)
def test_corrupt_raw_profile_raises_with_the_line(text, line_no):
    with pytest.raises(ProfileParseError) as err:
        parse(text, "starrocks_profile")
    assert err.value.line_no == (line_no or _last_line_no(text))


def test_a_stray_line_without_counters_under_it_is_skipped_not_rejected():
    # Was rejected as corrupt (case "garbage-line" above): a line that is neither a counter nor
    # a header, with nothing under it, changes no number of the profile, so it is reported in
    # Profile.skipped and the profile is read. A header without its colon that has counters
    # under it ("header-without-colon") stays an error: which section they belong to is ambiguous.
    p = parse("Query:\n  Summary:\n     - Total: 1ms\n  ### garbage ###\n", "starrocks_profile")
    assert p.summary["total_ms"] == 1.0
    assert [(s.line_no, s.text) for s in p.skipped] == [(4, "  ### garbage ###")]


def test_analyze_profile_table_without_closing_border_raises(sample):
    text = sample("starrocks_analyze_profile/sr_demo_hudi_explain_analyze_select_322.txt")
    cut = "\n".join(text.split("\n")[:60])
    with pytest.raises(ProfileParseError, match="closing border") as err:
        parse(cut)
    assert err.value.line_no == 60


def test_analyze_profile_row_cut_mid_line_raises(sample):
    text = sample("starrocks_analyze_profile/sr_demo_hudi_explain_analyze_select_322.txt")
    lines = text.split("\n")
    cut = "\n".join(lines[:59] + [lines[59][:40]])
    with pytest.raises(ProfileParseError, match="not closed") as err:
        parse(cut)
    assert err.value.line_no == 60


def test_analyze_profile_ending_on_an_operator_raises():
    text = (
        "Summary\n    TotalTime: 1s\n        ExecutionTime: 900ms\n"
        "Fragment 0\n│   BackendNum: 1\n└──OLAP_TABLE_SINK\n"
    )
    with pytest.raises(ProfileParseError, match="without metrics") as err:
        parse(text, "starrocks_analyze_profile")
    assert err.value.line_no == 6


def test_sniff_ignores_other_engines_output():
    assert starrocks.sniff("Planning Time: 0.1 ms\nExecution Time: 0.2 ms") is None


def test_a_be_log_fragment_tree_gives_execution_and_sink_time():
    text = (
        "I0404 15:02:35.842590  3703 plan_fragment_executor.cpp:475] "
        "Fragment db4c06f6-ff52-db32-e2ca-0c60f0c9c397:(Active: 10.460ms, non-child: 0.00%)\n"
        "  OlapTableSink:(Active: 11.669ms, non-child: 100.00%)\n"
        "     - TxnID: 20\n"
    )
    p = parse(text)
    assert p.kind == "starrocks_profile"
    assert (p.summary["execution_ms"], p.summary["olap_table_sink_ms"]) == (10.46, 11.669)
    assert p.peeled == ["1 backend log prefix(es)"]
    assert p.warnings  # the sink's 11.669 ms exceed the fragment's 10.460 ms: said, not hidden


def test_a_profile_list_statement_continued_on_an_empty_celled_row():
    text = (
        "+------+------+------+----------+--------------+\n"
        "| QueryId | StartTime | Time | State | Statement |\n"
        "+------+------+------+----------+--------------+\n"
        "| q1 | 2024 | 5ms | Finished | select 1,    |\n"
        "|      |      |      |          | 2            |\n"
        "+------+------+------+----------+--------------+\n"
    )
    p = parse(text)
    assert p.summary["profile_count"] == 1
    assert p.items[(p.items["path"] == "q1") & (p.items["key"] == "Statement")]["value_raw"].tolist() == [
        "select 1,", "2"]


def test_two_profiles_in_one_input_are_ambiguous():
    one = "Query:\n  Summary:\n     - Total: 1ms\n"
    with pytest.raises(ProfileParseError, match="ambiguous") as err:
        parse(one + one.replace("1ms", "2ms"), "starrocks_profile")
    assert err.value.line_no == 4


def test_a_vertical_row_label_glued_to_the_root_is_peeled_and_the_lines_above_skipped():
    text = (
        "mysql> ANALYZE PROFILE FROM 'x';\n"
        "ERROR 1064 (HY000): something is null\n"
        "*************************** 1. row ***************************\n"
        "get_query_profile('x'): Query:\n"
        "  Summary:\n"
        "     - Total: 15s354ms\n"
    )
    p = parse(text)
    assert (p.kind, p.summary["total_ms"]) == ("starrocks_profile", 15354.0)
    assert any("get_query_profile('x')" in what for what in p.peeled)
    assert [s.line_no for s in p.skipped] == [2, 3]


def test_lines_before_the_summary_of_an_analyzed_profile_are_skipped():
    text = "-- pasted from the console\nSummary\n    TotalTime: 1s\n    ExecutionTime: 900ms\n"
    p = parse(text, "starrocks_analyze_profile")
    assert (p.summary["total_ms"], [s.line_no for s in p.skipped]) == (1000.0, [1])
