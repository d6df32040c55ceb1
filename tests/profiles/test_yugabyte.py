"""YugabyteDB EXPLAIN (ANALYZE, DIST): PostgreSQL's plan plus storage-layer counters."""

from __future__ import annotations

import json

import pytest

from ingestlab.engines.yugabytedb import profile as yugabyte
from ingestlab.errors import ProfileParseError
from ingestlab.profiles import detect, parse, parse_file

CATEGORIES = ("yugabyte_explain",)

# Hand-written after the documented layout of versions that print counters with decimals.
DECIMAL_COUNTERS = """\
 Insert on t  (cost=0.00..0.01 rows=1 width=44) (actual time=12.100..12.100 rows=0 loops=1)
   ->  Result  (cost=0.00..0.01 rows=1 width=44) (actual time=0.003..0.005 rows=4242 loops=1)
         Storage Table Write Requests: 4242.000
 Planning Time: 0.142 ms
 Execution Time: 12.294 ms
 Storage Read Requests: 0.000
 Storage Write Requests: 4242.000
 Storage Flush Requests: 3.000
 Storage Flush Execution Time: 9.100 ms
 Storage Execution Time: 9.100 ms
 Peak Memory Usage: 1024 kB
"""


def test_every_real_yugabyte_explain_parses_with_storage_counters(real_file, body_of):
    assert detect(body_of(real_file)) == "yugabyte_explain"
    p = parse_file(real_file)
    assert p.summary["planning_ms"] > 0 and p.summary["execution_ms"] > 0
    assert "storage_execution_ms" in p.summary
    assert json.dumps(p.summary, allow_nan=False)


def test_select_reads_per_node_and_summary_storage_times(sample):
    p = parse(sample("yugabyte_explain/yb_docs_explain_analyze_dist_select_seqscan_kvstore.txt"))
    s = p.summary
    assert (s["planning_ms"], s["execution_ms"]) == (1.176, 3.771)
    assert (s["storage_read_requests"], s["storage_read_execution_ms"]) == (1, 3.623)
    assert (s["catalog_read_execution_ms"], s["storage_execution_ms"]) == (0.963, 4.586)
    assert s["storage_rows_scanned"] == 10000
    assert p.value("Storage Table Read Execution Time", path="Seq Scan on kvstore") == 3.623


def test_query_diagnostics_dump_reads_only_the_first_plan(sample):
    p = parse(sample("yugabyte_explain/yb_docs_query_diagnostics_explain_plan_insert.txt"))
    assert (p.items["key"] == "Execution Time").sum() == 1
    assert p.summary["execution_ms"] == 9.294
    assert p.summary["storage_write_requests"] == 1
    assert p.summary["peak_memory_bytes"] == 24 * 1024


def test_debug_metrics_nest_under_their_counter(sample):
    p = parse(sample("yugabyte_explain/yb_docs_v2025_2_explain_analyze_dist_debug_insert_cte.txt"))
    assert p.summary["catalog_read_requests"] == 27
    assert p.summary["storage_flush_execution_ms"] == 2.829
    assert p.value("Metric ql_write_latency", path="Summary/Storage Flush Execution Time", stat="sum") == 2254
    node = "YB Batched Nested Loop Join/Index Scan using a_pkey on a"
    assert p.value("Metric docdb_keys_found", path=f"{node}/Storage Table Rows Scanned") == 2.0
    assert p.value("Storage Table Write Requests", path="YB Batched Nested Loop Join/Insert on a a_1") == 2


def test_decimal_counters_are_numbers():
    p = parse(DECIMAL_COUNTERS)
    assert p.kind == "yugabyte_explain"
    assert p.summary["storage_write_requests"] == 4242
    assert isinstance(p.summary["storage_write_requests"], int)
    assert p.value("Storage Table Write Requests") == 4242.0
    assert p.summary["peak_memory_bytes"] == 1024 * 1024


def test_yugabyte_json_summary_keys():
    text = json.dumps(
        [{"Plan": {"Node Type": "Result", "Actual Total Time": 0.01, "Actual Loops": 1},
          "Planning Time": 0.2, "Execution Time": 0.5, "Storage Read Requests": 2, "Storage Execution Time": 0.3}]
    )
    assert detect(text) == "yugabyte_explain"
    s = parse(text).summary
    assert (s["storage_read_requests"], s["storage_execution_ms"]) == (2, 0.3)


def test_truncated_yugabyte_output_raises():
    text = "\n".join(DECIMAL_COUNTERS.splitlines()[:4])
    with pytest.raises(ProfileParseError, match="Execution Time") as err:
        yugabyte.parse(text)
    assert err.value.line_no == 4


def test_peak_memory_usage_alone_tells_yugabyte_from_postgres():
    # EXPLAIN ANALYZE without DIST: YugabyteDB's own summary line is its only mark (v2.18 docs).
    text = (
        " Seq Scan on t  (cost=0.00..1.00 rows=1 width=4) (actual time=0.1..0.2 rows=1 loops=1)\n"
        " Planning Time: 0.100 ms\n Execution Time: 0.200 ms\n Peak Memory Usage: 8 kB\n"
    )
    assert detect(text) == "yugabyte_explain"
    assert parse(text).summary["peak_memory_bytes"] == 8 * 1024
    assert detect(text.replace(" Peak Memory Usage: 8 kB\n", "")) == "postgres_explain_text"
