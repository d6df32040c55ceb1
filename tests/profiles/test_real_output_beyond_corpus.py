"""Real published output the shared corpus does not hold: each file's key numbers, read by eye."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ingestlab.errors import ProfileParseError
from ingestlab.profiles import anatomy, detect, parse_file
from ingestlab.profiles._text import blank_fixture_header

FIXTURES = Path(__file__).parent / "fixtures"

#: fixture -> (kind, expected numbers). A key names a summary field, ``ops:<name>`` an operator's
#: own time (ms), ``item:<key>[@stat]`` the first value of an item, ``peeled`` how many kinds of
#: framing were peeled, ``skipped`` how many lines were left out as not understood. Every value
#: was read from the fixture by eye, not from the parser.
EXPECTED: dict[str, tuple[str, dict]] = {
    # --- Stream Load replies (Doris and StarRocks) ---
    "stream_load_response/doris_pr40735_receive_data_time_label_glued": ("stream_load_response", {
        "status": "Success", "load_time_ms": 32.0, "begin_txn_ms": 0.0, "stream_load_put_ms": 4.0,
        "write_data_ms": 4.0, "receive_data_ms": 6.0, "commit_and_publish_ms": 22.0, "loaded_rows": 6, "peeled": 1,
    }),
    "stream_load_response/doris_pr41946_fail_too_many_filtered_rows": ("stream_load_response", {
        "status": "Fail", "message": "[DATA_QUALITY_ERROR]too many filtered rows", "load_time_ms": 78.0,
        "write_data_ms": 72.0, "receive_data_ms": 7.0, "loaded_rows": 0, "filtered_rows": 2, "peeled": 1,
    }),
    "stream_load_response/sr_issue771_publish_timeout": ("stream_load_response", {
        "status": "Publish Timeout", "load_time_ms": 210454.0, "begin_txn_ms": 82.0, "stream_load_put_ms": 2.0,
        "read_data_ms": 11653.0, "write_data_ms": 135367.0, "loaded_rows": 8000000, "load_bytes": 1078508675,
    }),
    "stream_load_response/sr_issue30602_be_reply_plan_time": ("stream_load_response", {
        "status": "Success", "load_time_ms": 5397.0, "begin_txn_ms": 1.0, "stream_load_plan_ms": 2.0,
        "read_data_ms": 18.0, "write_data_ms": 5369.0, "commit_and_publish_ms": 24.0, "loaded_rows": 3233,
    }),
    "stream_load_response/sr_issue30602_fe_rejection_lowercase": ("stream_load_response", {
        "status": "FAILED", "message": "There is no 100-continue header",
    }),
    # --- YugabyteDB EXPLAIN (ANALYZE, DIST) ---
    "yugabyte_explain/yb_issue26770_insert_fk_trigger": ("yugabyte_explain", {
        "planning_ms": 0.035, "execution_ms": 94.859, "trigger_ms": 94.756, "storage_read_requests": 1,
        "storage_write_requests": 1, "catalog_read_requests": 0, "storage_flush_requests": 0,
        "storage_read_execution_ms": 94.696, "storage_execution_ms": 94.696, "peak_memory_bytes": 133 * 1024,
    }),
    "yugabyte_explain/yb_issue26963_insert_arrow_notes": ("yugabyte_explain", {
        "planning_ms": 0.033, "execution_ms": 8.586, "storage_write_requests": 1, "storage_read_requests": 0,
        "storage_execution_ms": 0.0, "peeled": 1,
    }),
    "yugabyte_explain/yb_issue15289_update_zero_counts": ("yugabyte_explain", {
        "planning_ms": 0.128, "execution_ms": 26.143, "storage_read_requests": 0, "storage_write_requests": 0,
        "root_operation": "Update",
    }),
    "yugabyte_explain/yb_issue19493_update_flush_note": ("yugabyte_explain", {
        "planning_ms": 0.111, "execution_ms": 6.485, "storage_read_requests": 1, "storage_write_requests": 1,
        "catalog_read_requests": 1, "storage_flush_requests": 1, "peak_memory_bytes": 24 * 1024, "peeled": 1,
    }),
    # --- PostgreSQL EXPLAIN, text and JSON ---
    "postgres_explain/pev2_dbeaver_delete_wal_column_bars": ("postgres_explain_text", {
        "planning_ms": 0.037, "execution_ms": 4024.335, "wal_records": 5000000, "wal_fpi": 7015,
        "wal_bytes": 327276611, "root_operation": "Delete", "shared_hit_blocks": 5000000, "peeled": 1,
    }),
    "postgres_explain/pev2_psql_unicode_border_text": ("postgres_explain_text", {
        "planning_ms": 0.040, "execution_ms": 2.228, "root_node_type": "Nested Loop", "peeled": 1,
    }),
    "postgres_explain/pev2_psql_ascii_border_json": ("postgres_explain_json", {
        "planning_ms": 0.049, "execution_ms": 2.487, "peeled": 1,
    }),
    "postgres_explain/pev2_psql_unicode_wrap_marks_json": ("postgres_explain_json", {
        "planning_ms": 0.042, "execution_ms": 2.123,
    }),
    "postgres_explain/pev2_initplan_read_by_index_scan": ("postgres_explain_text", {
        "planning_ms": 1.555, "execution_ms": 1938.457, "root_actual_total_ms": 1938.292,
        # InitPlan 2 (1736.419 ms) runs inside the Index Scan (1931.146 ms) that reads $1
        "ops:Index Scan using pk_vendor on vendor v": 1931.146 - 1736.419,
        "ops:Aggregate": 1938.292 - 1931.146,
    }),
    "postgres_explain/pev2_cte_scan_reads_cte_per_loop": ("postgres_explain_text", {
        "planning_ms": 0.650, "execution_ms": 2999.940,
        "ops:CTE Scan on acl_row": 0.650 * 4379 - 0.607 * 4379,
    }),
    "postgres_explain/pev2_cte_listed_at_root_read_by_scan": ("postgres_explain_text", {
        "execution_ms": 1001.133,
        # the CTE (1001.076 ms) runs inside the first CTE Scan; the root's own time is ~0
        "ops:Result": 1001.087 - 1001.085,
        "ops:CTE Scan on test": 1001.082 - 1001.076,
    }),
    "postgres_explain/pev2_io_timings_read_and_write": ("postgres_explain_text", {
        "planning_ms": 3.115, "execution_ms": 79515.870,
    }),
    "postgres_explain/pev2_planned_partitions_hashagg_time_footer": ("postgres_explain_text", {
        "planning_ms": 0.201, "execution_ms": 438.186, "root_actual_total_ms": 413.626,
    }),
    "postgres_explain/pev2_planning_buffers_long_query": ("postgres_explain_text", {
        "planning_ms": 38.350, "execution_ms": 156803.034,
    }),
    "postgres_explain/pev2_hash_buckets_original": ("postgres_explain_text", {
        "planning_ms": 0.119, "execution_ms": 10244.597,
    }),
    # --- StarRocks raw profile, ANALYZE PROFILE, SHOW PROFILELIST ---
    "starrocks_profile/sr_issue20957_be_log_fragment_stream_load": ("starrocks_profile", {
        "execution_ms": 10.460, "olap_table_sink_ms": 11.669, "ops:FILE_SCAN_NODE (id=0)": 0.200197 * 1.91 / 100,
        "peeled": 1,
    }),
    "starrocks_analyze_profile/sr_sqlfile_commented_analyze_profile_insert_overwrite": ("starrocks_analyze_profile", {
        "total_ms": 471.0, "execution_ms": 35.661, "fe_overhead_ms": 471.0 - 35.661, "status": "Finished",
        "scan_ms": 1.172, "network_ms": 1.012, "peak_memory_bytes": 1.682 * 1024**2, "peeled": 1,
    }),
    "starrocks_profilelist/sr_pr43145_broker_load_running": ("starrocks_profilelist", {
        "profile_count": 1, "status_counts": {"Running": 1},
        "item:Time": 123_000.0,
    }),
    "starrocks_profilelist/sr_sqlfile_commented_profilelist_two_line_statement": ("starrocks_profilelist", {
        "profile_count": 4, "status_counts": {"Finished": 4}, "item:Time": 14.0, "peeled": 1,
    }),
    # --- Doris profiles (2.1 operator blocks) ---
    "doris_profile/doris21_docs_merged_exchange_operator": ("doris_profile", {
        "item:ExecTime@max": 0.706351, "item:ExecTime@avg": 0.700357, "item:WaitForData0@max": 9.476,
        "ops:EXCHANGE_OPERATOR  (id=4)": 0.706351,
    }),
    "doris_profile/doris21_docs_execution_exchange_operator": ("doris_profile", {
        "item:ExecTime": 0.706351, "item:InitTime": 0.647605, "ops:EXCHANGE_OPERATOR  (id=4)": 0.706351,
    }),
    "doris_profile/doris21_docs_pipeline_task": ("doris_profile", {
        "item:ExecuteTime": 1.656, "item:WaitWorkerTime": 0.063868,
        "ops:DATA_STREAM_SINK_OPERATOR  (id=8,dst_id=8)": 1.688,
        "ops:AGGREGATION_OPERATOR  (id=7  ,  nereids_id=648)": 0.39812,
    }),
    "doris_profile/doris_pr27883_merged_hash_join_uint_aggregates": ("doris_profile", {
        "item:ExecTime@max": 1.85, "item:ExecTime@avg": 0.357853, "item:ProbeRows@sum": 39631.0,
    }),
    # --- MySQL/MariaDB stages (performance_schema) ---
    "mysql_stages/mysql_manual_stages_history_long_duration_s": ("mysql_stage_events", {
        "total_ms": 28.302, "stage_count": 15, "slowest_stage": "stage/sql/Opening tables", "slowest_stage_ms": 27.759,
    }),
    "mysql_stages/krogh_book_stages_format_pico_time_latency": ("mysql_stage_events", {
        "total_ms": 1.3523, "stage_count": 16, "slowest_stage": "executing", "slowest_stage_ms": 1.18,
    }),
    "mysql_stages/krogh_book_trace_digest_stage_latency": ("mysql_stage_events", {
        "total_ms": 1.04151269, "stage_count": 17, "slowest_stage": "Sending data", "slowest_stage_ms": 0.52841,
    }),
    # --- DuckDB 2.0 JSON profiles, captured from the lab's own DuckDB (get_profiling_information) ---
    "duckdb_profile/lab_single_row_insert": ("duckdb_profile", {
        "total_ms": 1.265561, "planning_ms": 0.211593, "optimizer_ms": 0.234338, "physical_planning_ms": 0.058854,
        "cpu_ms": 0.066859, "commit_local_storage_ms": 0.122487, "write_to_wal_ms": 0.06128, "blocked_thread_ms": 0.179,
        "ops:BATCH_INSERT": 0.051101, "ops:COLUMN_DATA_SCAN": 0.010907, "root_operator": "BATCH_INSERT",
    }),
    "duckdb_profile/lab_insert_1000_rows": ("duckdb_profile", {
        "total_ms": 43.83986, "planning_ms": 11.587386, "optimizer_ms": 18.296488, "physical_planning_ms": 8.060364,
        "cpu_ms": 0.315434, "commit_local_storage_ms": 0.349054, "write_to_wal_ms": 0.224554,
        "ops:BATCH_INSERT": 0.279447, "ops:COLUMN_DATA_SCAN": 0.024529, "intermediate_rows": 1001,
    }),
    "duckdb_profile/lab_insert_select": ("duckdb_profile", {
        "total_ms": 5.662304, "planning_ms": 0.351185, "optimizer_ms": 0.30113, "physical_planning_ms": 0.03259,
        "cpu_ms": 0.244645, "commit_local_storage_ms": 0.249928, "write_to_wal_ms": 0.252732,
        "ops:BATCH_INSERT": 0.18235, "ops:TABLE_SCAN": 0.055536, "rows_scanned": 1000,
    }),
    "duckdb_profile/lab_query_join_group_top_n": ("duckdb_profile", {
        "total_ms": 3.365867, "planning_ms": 0.546719, "optimizer_ms": 0.880307, "physical_planning_ms": 0.066571,
        "cpu_ms": 0.484863, "blocked_thread_ms": 0.29, "ops:HASH_JOIN": 0.214391, "ops:TOP_N": 0.045681,
        "root_operator": "TOP_N", "rows_scanned": 3021,
    }),
    # --- captured by bench/capture_duckdb_profiles.py (its command in each header) ---
    "duckdb_profile/lab_add_primary_key": ("duckdb_profile", {
        "total_ms": 5.228145, "cpu_ms": 3.215394, "planning_ms": 0.108251, "root_operator": "CREATE_INDEX",
        "ops:CREATE_INDEX": 2.282998, "commit_local_storage_ms": 0.000224, "write_to_wal_ms": 0.17135,
        "rows_scanned": 10000, "intermediate_rows": 30000,
    }),
    "duckdb_profile/lab_bulk_arrow_scan_10000_rows": ("duckdb_profile", {
        "total_ms": 3.725652, "cpu_ms": 0.476177, "planning_ms": 0.229672, "root_operator": "BATCH_INSERT",
        "ops:BATCH_INSERT": 0.418091, "intermediate_rows": 10001,
    }),
    "duckdb_profile/lab_checkpoint": ("duckdb_profile", {
        "total_ms": 3.373535, "cpu_ms": 3.015144, "planning_ms": 0.111064, "root_operator": "TABLE_SCAN",
        "ops:TABLE_SCAN": 3.015144, "checkpoint_ms": 3.006001, "intermediate_rows": 0, "bytes_written": 790528,
    }),
    "duckdb_profile/lab_csv_scan_count_star": ("duckdb_profile", {
        "total_ms": 5.686889, "cpu_ms": 2.562459, "planning_ms": 1.122811, "root_operator": "UNGROUPED_AGGREGATE",
        "ops:UNGROUPED_AGGREGATE": 0.009283, "rows_scanned": 2000, "intermediate_rows": 4001, "bytes_read": 736030,
    }),
    "duckdb_profile/lab_csv_scan_full_scan_order_by_limit_1": ("duckdb_profile", {
        "total_ms": 6.482671, "cpu_ms": 4.74427, "planning_ms": 1.105627, "root_operator": "TOP_N",
        "ops:TOP_N": 0.249962, "rows_scanned": 2000, "intermediate_rows": 2001, "bytes_read": 736030,
    }),
    "duckdb_profile/lab_generate_10000_rows": ("duckdb_profile", {
        "total_ms": 6.269732, "cpu_ms": 2.550804, "planning_ms": 0.228197, "root_operator": "INSERT",
        "ops:INSERT": 2.479469, "commit_local_storage_ms": 2.166042, "write_to_wal_ms": 0.292691,
        "intermediate_rows": 30001,
    }),
    "duckdb_profile/lab_insert_100_rows": ("duckdb_profile", {
        "total_ms": 3.724825, "cpu_ms": 0.15712, "planning_ms": 0.95021, "root_operator": "BATCH_INSERT",
        "ops:BATCH_INSERT": 0.147378, "commit_local_storage_ms": 0.061669, "write_to_wal_ms": 0.064422,
        "intermediate_rows": 101,
    }),
    "duckdb_profile/lab_insert_100_rows_checkpoint": ("duckdb_profile", {
        "total_ms": 12.132395, "cpu_ms": 0.129454, "planning_ms": 0.865111, "root_operator": "BATCH_INSERT",
        "ops:BATCH_INSERT": 0.119279, "checkpoint_ms": 8.40289, "intermediate_rows": 101, "bytes_written": 2887680,
    }),
    "duckdb_profile/lab_single_row_insert_50_columns": ("duckdb_profile", {
        "total_ms": 4.266557, "cpu_ms": 0.332002, "planning_ms": 0.484617, "root_operator": "BATCH_INSERT",
        "ops:BATCH_INSERT": 0.307682, "commit_local_storage_ms": 0.53245, "write_to_wal_ms": 0.135828,
        "intermediate_rows": 2,
    }),
    "duckdb_profile/lab_single_row_insert_primary_key": ("duckdb_profile", {
        "total_ms": 1.078363, "cpu_ms": 0.097465, "planning_ms": 0.170991, "root_operator": "BATCH_INSERT",
        "ops:BATCH_INSERT": 0.090037, "commit_local_storage_ms": 0.085183, "write_to_wal_ms": 0.070053,
        "intermediate_rows": 2,
    }),
    "duckdb_profile/lab_single_row_insert_primary_key_indexes": ("duckdb_profile", {
        "total_ms": 1.398182, "cpu_ms": 0.121446, "planning_ms": 0.186077, "root_operator": "BATCH_INSERT",
        "ops:BATCH_INSERT": 0.110514, "commit_local_storage_ms": 0.163953, "write_to_wal_ms": 0.087532,
        "intermediate_rows": 2,
    }),
    "duckdb_profile/lab_upsert_100_existing_keys": ("duckdb_profile", {
        "total_ms": 10.042178, "cpu_ms": 2.594857, "planning_ms": 3.541208, "root_operator": "MERGE_INTO",
        "ops:MERGE_INTO": 0.315246, "commit_local_storage_ms": 0.00021, "write_to_wal_ms": 0.16532,
        "rows_scanned": 100, "intermediate_rows": 801,
    }),
    # --- issue Q: more real output users and docs of several releases posted, odd lines included ---
    "yugabyte_explain/yb_issue15160_seqscan_dist_2022": ("yugabyte_explain", {
        "planning_ms": 0.071, "execution_ms": 3.711, "storage_read_requests": 2, "storage_write_requests": 0,
        "storage_execution_ms": 3.029, "peak_memory_bytes": 0.0,
    }),
    "yugabyte_explain/yb_issue26614_catalog_read_only": ("yugabyte_explain", {
        "planning_ms": 0.949, "execution_ms": 1.618, "storage_read_requests": 0, "catalog_read_requests": 1,
        "catalog_read_execution_ms": 1.091, "peak_memory_bytes": 24.0 * 1024,
    }),
    "yugabyte_explain/yb_docs_v2024_1_sort_over_seqscan_costs_off": ("yugabyte_explain", {
        "planning_ms": 1.119, "execution_ms": 4.101, "storage_rows_scanned": 10000,
        "catalog_read_execution_ms": 0.877, "storage_execution_ms": 4.723, "root_node_type": "Sort",
    }),
    "yugabyte_explain/yb_docs_v2024_1_index_scan_statement_as_comment": ("yugabyte_explain", {
        "planning_ms": 0.063, "execution_ms": 1.934, "storage_read_requests": 2, "storage_read_execution_ms": 1.729,
        "peak_memory_bytes": 24.0 * 1024,
    }),
    "yugabyte_explain/yb_docs_v2024_1_index_only_scan_range_index": ("yugabyte_explain", {
        "planning_ms": 4.290, "execution_ms": 1.008, "storage_rows_scanned": 41,
        "catalog_read_execution_ms": 3.824, "storage_execution_ms": 4.616,
    }),
    "yugabyte_explain/yb_docs_v2_18_merge_left_join_peak_memory_only": ("yugabyte_explain", {
        "planning_ms": 30.850, "execution_ms": 3.943, "peak_memory_bytes": 137.0 * 1024,
        "root_actual_total_ms": 2.389, "root_node_type": "Merge Left Join",
    }),
    "postgres_explain/pg_docs_sort_hash_join_lowercase_time": ("postgres_explain_text", {
        "planning_ms": 0.194, "execution_ms": 8.008, "root_actual_total_ms": 7.774, "root_actual_rows": 100,
        "ops:Sort": 7.774 - 7.427,
    }),
    "postgres_explain/pg_docs_buffers_bitmap_and": ("postgres_explain_text", {
        "planning_ms": 0.088, "execution_ms": 0.423, "shared_hit_blocks": 15, "root_actual_total_ms": 0.342,
    }),
    "postgres_explain/pg_docs_lossy_index_recheck_after_set": ("postgres_explain_text", {
        "planning_ms": 0.034, "execution_ms": 0.144, "root_actual_rows": 0, "root_node_type": "Index Scan",
    }),
    "postgres_explain/gpdb_issue9036_postgres_local_buffers": ("postgres_explain_text", {
        "planning_ms": 0.077, "execution_ms": 0.081, "local_hit_blocks": 5, "root_actual_rows": 5,
    }),
    "stream_load_response/sr_issue33606_reply_without_braces": ("stream_load_response", {
        "status": "Success", "load_time_ms": 42.0, "begin_txn_ms": 1.0, "write_data_ms": 22.0,
        "commit_and_publish_ms": 18.0, "loaded_rows": 1,
    }),
    "stream_load_response/doris_pr36831_fail_without_error_url": ("stream_load_response", {
        "status": "Fail", "load_time_ms": 58.0, "stream_load_put_ms": 10.0, "write_data_ms": 47.0, "loaded_rows": 1,
        "peeled": 1,
    }),
    "doris_profile/doris12_docs_web_summary_undashed": ("doris_profile", {
        "total_ms": 10323.0, "status": "EOF", "version": "trunk", "query_id": "9664061c57e84404-85ae111b8ba7e83a",
        "skipped": 0,
    }),
    "doris_profile/doris12_docs_fragment_instance_exchange_node": ("doris_profile", {
        "ops:EXCHANGE_NODE (id=4)": 10256 * 0.9935, "item:RowsProduced": 8322.0,
        "item:BytesReceived": 168.08 * 1024, "item:DeserializeRowBatchTimer": 0.501975,
    }),
    "doris_profile/doris12_docs_query_fragments_box_tree": ("doris_profile", {
        "item:MaxActiveTime": 6.626, "item:Fragment": 0.0, "skipped": 0,
    }),
    "doris_profile/doris12_docs_query_fragment_instances_table": ("doris_profile", {
        "instance_count": 3, "max_active_ms": 5.449,
    }),
    "doris_profile/doris12_docs_instance_boxes_sides_not_aligned": ("doris_profile", {
        "ops:SORT_NODE (id=4)": 5.421 * 0.71 / 100, "item:PartitionsCreated": 16.0,
        "item:FirstBatchArrivalWaitTime": 4.356,
    }),
    "doris_profile/doris_issue5696_0_13_point_select_scan": ("doris_profile", {
        "total_ms": 26128.0, "execution_ms": 26128.0, "status": "EOF", "version": "0.13.0-rc03",
        "item:MaxBlockSize": 8.0 * 1024**2,
    }),
    "doris_profile/doris_pr39560_merged_pipeline_miss_profile": ("doris_profile", {
        "item:WaitForDependency[SORT_OPERATOR_DEPENDENCY]Time@avg": (15 * 60 + 2) * 1000.0,
        "item:RowsProduced@sum": 0.0, "item:CloseTime@max": 0.0,
    }),
    "doris_profile/doris_pr25963_simple_profile_plan_info": ("doris_profile", {
        "ops:VAGGREGATION_NODE  (id=789)": 0.245579, "ops:VEXCHANGE_NODE  (id=786)": 1132.0,
        "item:OutputBytes": 4.03 * 1024, "item:BlocksSent": 8.0,
    }),
    "starrocks_profile/sr_issue6248_iceberg_pipeline_2022": ("starrocks_profile", {
        "total_ms": 5067.0, "planning_ms": 217.0, "status": "EOF", "item:ExecutionTotalTime": 4838.0,
        "ops:RESULT_SINK": 0.458214,
    }),
    "starrocks_profile/sr_issue8984_profile_incomplete_window_funnel": ("starrocks_profile", {
        "total_ms": 6866.0, "planning_ms": 13.0, "collect_profile_ms": 2002.0, "version": "UNKNOWN-dd84b5fda",
        "item:QueryCpuCost": 211_000.0, "item:ExecutionTotalTime": 6844.0,
    }),
    "starrocks_profile/sr_issue62383_get_query_profile_vertical_glued": ("starrocks_profile", {
        "total_ms": 15354.0, "status": "Finished", "version": "main-277df60",
        "query_id": "0198eacb-e151-7feb-afbb-b98c3d145cb8", "peeled": 1, "skipped": 3,
    }),
}

#: Fixtures of unseen real output that still fail to parse, each with why. The parse-rate test
#: below counts them, and the tests of their numbers are expected to fail (strict: a fix shows).
KNOWN_FAILURES: dict[str, str] = {
    "doris_profile/doris12_docs_instance_boxes_sides_not_aligned": (
        "the doc re-spaced the text inside each box, so the box sides no longer stand under its top "
        "corners: where a box's content ends is not read"
    ),
}

#: The kinds of output the issues name, and the fixture folders that hold each.
KIND_FOLDERS = {
    "StarRocks raw profile": ("starrocks_profile",),
    "StarRocks ANALYZE PROFILE": ("starrocks_analyze_profile",),
    "StarRocks SHOW PROFILELIST": ("starrocks_profilelist",),
    "Doris profile": ("doris_profile",),
    "Stream Load reply": ("stream_load_response",),
    "PostgreSQL EXPLAIN": ("postgres_explain",),
    "YugabyteDB EXPLAIN": ("yugabyte_explain",),
    "MySQL/MariaDB stages": ("mysql_stages",),
    "DuckDB profile": ("duckdb_profile",),
}


def _actual(profile, key: str):
    if key == "peeled":
        return len(profile.peeled)
    if key == "skipped":
        return len(profile.skipped)
    if key.startswith("ops:"):
        ops = profile.operators[profile.operators["name"] == key[4:]]
        return float(ops["time_ms"].iloc[0]) if len(ops) else None
    if key.startswith("item:"):
        name, _, stat = key[5:].partition("@")
        return profile.value(name, stat=stat or None)
    return profile.summary.get(key)


def _mismatches(name: str) -> list[str]:
    kind, expected = EXPECTED[name]
    profile = parse_file(FIXTURES / f"{name}.txt")
    wrong = [] if profile.kind == kind else [f"kind {profile.kind} != {kind}"]
    for key, want in expected.items():
        got = _actual(profile, key)
        if isinstance(want, float):
            ok = isinstance(got, (int, float)) and not math.isnan(got) and math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-6)
        else:
            ok = got == want
        if not ok:
            wrong.append(f"{key}: {got!r} != {want!r}")
    return wrong


def _outcome(name: str) -> list[str]:
    try:
        return _mismatches(name)
    except ProfileParseError as exc:
        return [f"parse error: {exc}"]


def test_every_fixture_file_has_expected_numbers_and_a_source_header():
    files = {str(p.relative_to(FIXTURES).with_suffix("")) for p in FIXTURES.glob("*/*.txt")}
    assert files == set(EXPECTED)
    for name in files:
        head = (FIXTURES / f"{name}.txt").read_text(encoding="utf-8").split("# ---- verbatim", 1)[0]
        assert head.startswith("# source: ") and "# statement: " in head and "# transform: " in head, name


def test_there_are_thirty_new_outputs_covering_every_kind():
    assert len(EXPECTED) >= 30
    for kind, folders in KIND_FOLDERS.items():
        assert any(name.split("/")[0] in folders for name in EXPECTED), f"no new real output of kind {kind}"


def _names_known_to_fail() -> list:
    """Every fixture name, those in `KNOWN_FAILURES` marked as strict expected failures."""
    return [
        pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_FAILURES[name], strict=True))
        if name in KNOWN_FAILURES else name
        for name in sorted(EXPECTED)
    ]


@pytest.mark.parametrize("name", _names_known_to_fail())
def test_new_real_output_parses_with_its_key_numbers(name):
    assert _outcome(name) == []


def test_at_least_ninety_percent_of_new_real_outputs_parse_right():
    failed = {name: wrong for name in EXPECTED if (wrong := _outcome(name))}
    rate = 1 - len(failed) / len(EXPECTED)
    assert rate >= 0.9, f"{rate:.0%} parse right; wrong: {json.dumps(failed, indent=1)}"


def test_unseen_real_output_parses_at_ninety_percent_and_every_failure_is_known():
    """The measured rate: every fixture file parses without error but those in KNOWN_FAILURES."""
    files = sorted(FIXTURES.glob("*/*.txt"))
    errors = {}
    for path in files:
        name = str(path.relative_to(FIXTURES).with_suffix(""))
        try:
            parse_file(path)
        except ProfileParseError as exc:
            errors[name] = str(exc)
    assert set(errors) == set(KNOWN_FAILURES), f"unlisted failures or fixed known ones: {json.dumps(errors, indent=1)}"
    rate = 1 - len(errors) / len(files)
    assert len(files) >= 70 and rate >= 0.9, f"{len(files) - len(errors)} of {len(files)} parse ({rate:.1%})"


@pytest.mark.parametrize("name", _names_known_to_fail())
def test_new_real_output_is_detected_and_its_anatomy_is_json(name):
    body = blank_fixture_header((FIXTURES / f"{name}.txt").read_text(encoding="utf-8"))
    assert detect(body) == EXPECTED[name][0]
    a = anatomy(parse_file(FIXTURES / f"{name}.txt"))
    assert json.loads(json.dumps(a, allow_nan=False)) == a


def test_operator_self_times_of_postgres_fixtures_add_up_to_no_more_than_the_root():
    for name in EXPECTED:
        if not name.startswith("postgres_explain/pev2_c") and "initplan" not in name:
            continue
        p = parse_file(FIXTURES / f"{name}.txt")
        assert p.summary["operator_self_sum_ms"] <= p.summary["root_actual_total_ms"] + 1e-6, name
        assert p.warnings == [], name
