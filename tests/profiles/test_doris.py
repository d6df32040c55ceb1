"""Apache Doris profiles in every published text form."""

from __future__ import annotations

import math
import textwrap

import pytest

from ingestlab.engines.doris import profile as doris
from ingestlab.errors import ProfileParseError
from ingestlab.profiles import detect, parse, parse_file

CATEGORIES = ("doris_profile",)

# Hand-written in the Doris 2.1+ text layout (not a published sample): Summary, Execution
# Summary, the ChangedSessionVariables pipe table and a MergedProfile with a sink.
LOAD_PROFILE = textwrap.dedent(
    """\
    Summary:
       - Profile ID: 8b2f1c3d4e5f4a6b-9c8d7e6f5a4b3c2d
       - Task Type: LOAD
       - Start Time: 2025-03-01 10:00:00
       - End Time: 2025-03-01 10:00:12
       - Total: 12sec340ms
       - Task State: OK
       - Sql Statement: insert into t select * from s
    Execution Summary:
       - Parse SQL Time: 2ms
       - Plan Time: 31ms
       - Schedule Time: 4ms
    ChangedSessionVariables:
    VarName        | CurrentValue | DefaultValue
    ---------------|--------------|-------------
    enable_profile | true         | false       
    MergedProfile:
         Fragments:
           Fragment 0:
             Pipeline 0(instance_num=2):
               OLAP_TABLE_SINK_OPERATOR(id=-1):
                 CommonCounters:
                    - ExecTime: avg 5sec120ms, max 6sec1ms, min 4sec239ms
                    - InputRows: sum 2.0M (2000000), avg 1.0M (1000000), max 1.0M (1000000), min 1.0M (1000000)
                 CustomCounters:
               OLAP_SCAN_OPERATOR(nereids_id=12. table_name=s(s))(id=0):
                 CommonCounters:
                    - ExecTime: avg 1sec10ms, max 1sec200ms, min 820ms
    """
)


def test_every_real_doris_sample_parses_to_its_category(real_file, body_of):
    assert detect(body_of(real_file)) == "doris_profile"
    profile = parse_file(real_file)
    assert profile.kind == "doris_profile"
    assert len(profile.items) > 0


def test_every_real_doris_sample_yields_its_times(real_file, body_of):
    text = body_of(real_file)
    profile = parse_file(real_file)
    if "- Total:" in text:
        assert profile.summary["total_ms"] > 0
    if "Execution Profile" in text:
        assert profile.summary["execution_ms"] > 0
        assert "fe_overhead_ms" in profile.summary
    if "ExecTime" in text or "Active:" in text:
        assert len(profile.operators) > 0 and (profile.operators["time_ms"] >= 0).all()


def test_2020_profile_reads_total_execution_and_odd_counters(sample):
    p = parse(sample("doris_profile/doris_docs_profile_action_2020_select_nonpipeline.txt"))
    assert (p.summary["total_ms"], p.summary["execution_ms"]) == (8.0, 7.315)
    assert p.summary["fe_overhead_ms"] == pytest.approx(0.685)
    assert p.summary["version"] == "trunk"
    assert p.value("TabletCount") == 1  # "TabletCount : 1"
    assert p.value("RowsReturnedRate") == 3319.0
    assert p.value("RawRowsRead") == 1910.0
    assert p.value("PeakUsedReservation") == 0.0
    ops = p.operators.set_index("name")["time_ms"]
    assert ops["OLAP_SCAN_NODE (id=0)"] == pytest.approx(1.506 * 0.2059)  # Active x % non-child


def test_merged_profile_reads_aggregates_per_statistic(sample):
    p = parse(sample("doris_profile/doris_docs_mergedprofile_join_agg_simplified.txt"))
    assert p.value("WaitForData0", stat="avg") == 11450.0  # "avg 11sec450ms"
    join = p.operators.set_index("name")["time_ms"]["HASH_JOIN_OPERATOR(nereids_id=418)(id=3)"]
    assert join == 9582.0  # the max of "avg 9sec169ms, max 9sec582ms, min 8sec756ms"
    agg_sink = "Fragment 2/Pipeline 1(instance_num=2)/AGGREGATION_SINK_OPERATOR(nereids_id=428)(id=4)/CommonCounters"
    assert p.value("InputRows", path=agg_sink, stat="sum") == 150000000
    sink = "HASH_JOIN_SINK_OPERATOR(nereids_id=418)(id=3)/CustomCounters"
    assert p.value("MemoryUsageHashTable", path=sink, stat="min") == 0.0  # "min 0.00 "
    assert p.value("MemoryUsageHashTable", path=sink, stat="sum") == pytest.approx(185.22 * 1024**2)


def test_text_api_summary_reads_doris_minute_second_durations(sample):
    p = parse(sample("doris_profile/doris_docs_profile_text_api_summary_head.txt"))
    assert p.summary["total_ms"] == 74000.0  # "1min14sec"
    assert p.summary["status"] == "OK"
    assert p.summary["query_id"] == "f7efdc4c092d4b14-95e0f7f7783974d3"


def test_box_drawn_instance_tree_reads_each_operator(sample):
    p = parse(sample("doris_profile/doris_docs_show_load_profile_instance_tree_olaptablesink.txt"))
    assert p.value("Active", path="Instance/OlapTableSink (id=-1)") == 137000.0  # 2m17s
    assert p.value("CloseWaitTime") == 113000.0
    assert p.value("MaterializeTupleTime(*)") == 45054.0
    assert p.value("RowsReturned", path="Instance/OlapTableSink (id=-1)") == 1599729
    assert p.summary["olap_table_sink_ms"] == pytest.approx(137000.0 * 0.7091)


def test_load_profile_tables_read_one_row_per_entry(sample):
    p = parse(sample("doris_profile/doris_docs_show_load_profile_instances_table.txt"))
    assert p.summary["instance_count"] == 4
    assert p.summary["max_active_ms"] == 194000.0  # 3m14s
    p = parse(sample("doris_profile/doris_docs_show_load_profile_list_vertical.txt"))
    assert p.summary["profile_count"] == 2
    assert p.value("AnalysisTime", path="7cc2d0282a7a4391-8dd75030185134d8") == pytest.approx(0.825277)
    assert math.isnan(p.value("PlanTime", path="980014623046410a-af5d36f23381017f"))  # NULL
    p = parse(sample("doris_profile/doris_docs_show_query_profile_7_rows.txt"))
    assert p.summary["profile_count"] == 7
    assert p.value("Total", path="d59b04f636e49c0-bf6b6b3011c40f67") == 3.0


def test_changed_session_variables_table_is_read(sample):
    p = parse(sample("doris_profile/doris_docs_changed_session_variables_table.txt"))
    assert p.value("DefaultValue", path="ChangedSessionVariables/exec_mem_limit") == 100147483648


def test_hand_written_2_1_profile_reads_summary_variables_and_merged_operators():
    p = parse(LOAD_PROFILE)
    assert p.kind == "doris_profile"
    assert p.summary["total_ms"] == 12340.0
    assert p.summary["planning_ms"] == 31.0
    assert p.summary["task_type"] == "LOAD"
    assert p.summary["olap_table_sink_ms"] == 6001.0
    row = p.items.query("path == 'ChangedSessionVariables/enable_profile' and key == 'CurrentValue'")
    assert row["value_raw"].iloc[0] == "true"
    assert p.value("InputRows", stat="sum") == 2000000


def test_unclosed_box_raises_with_the_box_line(sample):
    lines = sample("doris_profile/doris_docs_show_load_profile_instance_tree_olaptablesink.txt").split("\n")
    top = next(i for i, line in enumerate(lines) if "┌" in line) + 1
    with pytest.raises(ProfileParseError, match="never closed") as err:
        parse("\n".join(lines[:20]))
    assert err.value.line_no == top


def test_vertical_output_with_a_broken_line_raises():
    text = "*************************** 1. row ***************************\n  JobId: 1\n  this line has no colon\n"
    with pytest.raises(ProfileParseError) as err:
        doris.parse(text)
    assert err.value.line_no == 3


def test_operator_block_cut_inside_a_counter_name_raises():
    text = "EXCHANGE_OPERATOR(id=1):\n     - InstanceID: 514023de1b7b41a3\n     - BlocksProd"
    with pytest.raises(ProfileParseError, match="truncated") as err:
        parse(text)
    assert err.value.line_no == 3


DORIS_3X = """\
Summary:
   - Profile ID: 4f9f3a7b5c2e4a1d-9b8c7d6e5f4a3b2c
   - Task Type: QUERY
   - Total: 1sec120ms
   - Task State: OK
Execution Summary:
   - Plan Time: 12ms
ChangedSessionVariables:
[{"VarName":"enable_profile","CurrentValue":"true","DefaultValue":"false"},
 {"VarName":"profile_level","CurrentValue":"2","DefaultValue":"1"}]
MergedProfile:
     Fragments:
       Fragment 0:
         Pipeline 0(instance_num=1):
           OLAP_SCAN_OPERATOR(id=0):
             CommonCounters:
               - ExecTime: avg 95.241us, max 95.241us, min 95.241us
             CustomCounters:
               - ReadColumns: [l_orderkey, l_partkey,
                 , l_suppkey, l_linenumber]
               - RowsRead: sum 10, avg 10, max 10, min 10
"""


def test_changed_session_variables_as_a_json_array_and_a_list_over_two_lines():
    """Hand-written in the Doris 3.x shape (no published sample of the JSON form was found)."""
    p = parse(DORIS_3X)
    assert (p.summary["total_ms"], p.summary["planning_ms"]) == (1120.0, 12.0)
    assert p.items[p.items["path"] == "ChangedSessionVariables/profile_level"]["value_raw"].tolist() == ["2", "1"]
    columns = p.items[p.items["key"] == "ReadColumns"]["value_raw"].iloc[0]
    assert columns.startswith("[l_orderkey") and columns.endswith("l_linenumber]")
    assert p.value("RowsRead", stat="sum") == 10


def test_malformed_session_variable_json_names_its_line():
    text = DORIS_3X.replace('"DefaultValue":"1"}]', '"DefaultValue":"1"')
    with pytest.raises(ProfileParseError, match="ChangedSessionVariables") as err:
        parse(text, "doris_profile")
    assert err.value.line_no is not None and err.value.line_no >= 9


# Hand-written in the Doris 2.1 text shape, with an EXPLAIN pasted between the Summary and the
# merged profile (as users paste "explain" and "show query profile" output together).
PLAN_TEXT_PASTED_IN = """\
Summary:
   - Profile ID: 4f9f3a7b5c2e4a1d-9b8c7d6e5f4a3b2c
   - Total: 2sec5ms
   - Task State: OK
PLAN FRAGMENT 0
  OUTPUT EXPRS:
    count(*)[#10]
  PARTITION: UNPARTITIONED
  VRESULT SINK
  1:VAGGREGATE (update finalize)
  |  output: count(*)[#10]
----------------------------------------
Execution  Summary:
   - Plan Time: 12ms
MergedProfile:
     Fragments:
       Fragment 0:
         Pipeline 0(instance_num=1):
           AGGREGATION_OPERATOR(id=1):
             CommonCounters:
               - ExecTime: avg 1.5ms, max 2ms, min 1ms
"""


def test_plan_text_and_a_separator_in_a_profile_are_skipped_line_by_line():
    p = parse(PLAN_TEXT_PASTED_IN)
    assert p.kind == "doris_profile"
    assert (p.summary["total_ms"], p.summary["planning_ms"]) == (2005.0, 12.0)
    assert p.value("ExecTime", stat="max") == 2.0
    skipped = {s.line_no: s.text for s in p.skipped}
    # the plan's first line, the plan lines indented under it, the separator
    assert sorted(skipped) == [5, 6, 7, 8, 9, 10, 11, 12]
    assert skipped[12].startswith("-----") and skipped[5] == "PLAN FRAGMENT 0"


def test_execution_summary_spaced_as_another_release_prints_it_is_still_found():
    p = parse(PLAN_TEXT_PASTED_IN.replace("Execution  Summary:", "ExecutionSummary:"))
    assert p.summary["planning_ms"] == 12.0


def test_counters_under_a_line_that_is_no_header_are_ambiguous():
    text = PLAN_TEXT_PASTED_IN.replace("MergedProfile:", "Merged Profile follows")
    with pytest.raises(ProfileParseError, match="ambiguous") as err:
        parse(text, "doris_profile")
    assert err.value.line_no == 15


def test_two_summaries_with_different_totals_are_ambiguous():
    text = "Summary:\n   - Total: 1sec\nSummary:\n   - Total: 2sec\n"
    with pytest.raises(ProfileParseError, match="ambiguous") as err:
        parse(text, "doris_profile")
    assert err.value.line_no == 3


def test_undashed_summary_of_the_doris_1_2_web_page_is_read():
    text = "Query:\n  Summary:\n    Query ID: 9664\n    Total: 10s323ms\n    Doris Version: trunk\n"
    p = parse(text)
    assert (p.kind, p.summary["total_ms"], p.summary["version"]) == ("doris_profile", 10323.0, "trunk")
    assert p.skipped == []


def test_connectors_between_boxes_and_a_box_titled_without_an_id_are_read():
    text = (
        "Fragments:\n"
        "  ┌──────────────────┐\n"
        "  │[9: EXCHANGE_NODE]│\n"
        "  │MaxActiveTime: 1ms│\n"
        "  └──────────────────┘\n"
        "         ┌┘\n"
        " ┌─────────────┐\n"
        " │[OlapScanner]│\n"
        " │Fragment: 4  │\n"
        " └─────────────┘\n"
    )
    p = parse(text)
    assert sorted(p.items["path"].unique()) == ["Fragments/EXCHANGE_NODE (id=9)", "Fragments/OlapScanner"]
    assert p.value("MaxActiveTime") == 1.0
