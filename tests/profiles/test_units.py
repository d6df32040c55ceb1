"""Durations, counters and sizes as engines print them, and how one value splits into rows."""

from __future__ import annotations

import math

import pytest

from ingestlab.profiles._units import parse_bytes, parse_counter, parse_duration_ms, parse_measure
from ingestlab.profiles._values import expand, expand_pairs


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        # StarRocks
        ("0", 0.0),
        ("0ns", 0.0),
        ("23us", 0.023),
        ("2.910us", 0.00291),
        ("3.713ms", 3.713),
        ("45s45ms", 45045.0),
        ("30s1ms", 30001.0),
        ("1m7s", 67000.0),
        ("9m41s", 581000.0),
        ("1h30m", 5400000.0),
        ("47ns", 0.000047),
        # old StarRocks/Doris: the exact nanoseconds in brackets win over the rounded display
        ("32.941ms[32941234ns]", 32.941234),
        # Doris 2.1+
        ("11sec450ms", 11450.0),
        ("1min14sec", 74000.0),
        ("9sec169ms", 9169.0),
        # older Doris
        ("56s537ms", 56537.0),
        ("3m14s", 194000.0),
        ("2m21s", 141000.0),
        # PostgreSQL / YugabyteDB style, with a space
        ("3.623 ms", 3.623),
    ],
)
def test_parse_duration_ms_reads_every_published_form(text, ms):
    assert parse_duration_ms(text) == pytest.approx(ms, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("text", ["?", "NULL", "N/A"])
def test_parse_duration_ms_gives_nan_for_printed_unknowns(text):
    assert math.isnan(parse_duration_ms(text))


@pytest.mark.parametrize("text", ["abc", "12 apples", "2024-04-23 20:28:26", "ms", "1m7", "5x"])
def test_parse_duration_ms_rejects_non_durations(text):
    with pytest.raises(ValueError):
        parse_duration_ms(text)


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("280", 280.0),
        ("74.948K (74948)", 74948.0),
        ("306.985M (306985123)", 306985123.0),
        ("14.823M (14823424)", 14823424.0),
        # StarRocks: B is billion, even for byte counters
        ("8.903B (8902570713)", 8902570713.0),
        ("150.0M (150000000)", 150000000.0),
        ("75.000001M (75000001)", 75000001.0),
        ("2.867K", 2867.0),  # no exact value: scale the display
        ("1.91K (1910)", 1910.0),
    ],
)
def test_parse_counter_prefers_the_exact_value_in_parentheses(text, count):
    assert parse_counter(text) == count


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("13.812 MB", 13.812 * 1024**2),
        ("-1.000 B", -1.0),
        ("0.00 ", 0.0),
        ("0.000 B", 0.0),
        ("759.00 B", 759.0),
        ("82.422 GB", 82.422 * 1024**3),
        ("26.767MB", 26.767 * 1024**2),
        ("24 kB", 24 * 1024.0),
    ],
)
def test_parse_bytes_reads_sizes_with_binary_multiples(text, size):
    assert parse_bytes(text) == pytest.approx(size)


def test_parse_bytes_refuses_a_starrocks_billion_counter():
    with pytest.raises(ValueError):
        parse_bytes("8.903B")


@pytest.mark.parametrize(
    ("text", "key", "value", "unit"),
    [
        ("3.713ms", "ScanTime", 3.713, "ms"),
        ("0", "PushTotalTime", 0.0, "ms"),  # a zero duration printed without a unit
        ("0", "PushRowNum", 0.0, "count"),
        ("0.00 ", "PeakMemoryUsage", 0.0, "bytes"),  # trailing space, empty unit
        ("0.00", "PeakUsedReservation", 0.0, "bytes"),  # old Doris: no unit at all
        ("0.00", "AverageThreadTokens", 0.0, "count"),
        ("8.903B (8902570713)", "BytesRead", 8902570713.0, "count"),
        ("12.049K (12049) /sec", "RowsReturnedRate", 12049.0, "count_per_s"),
        ("3.319K /sec", "RowsReturnedRate", 3319.0, "count_per_s"),
        ("0.000 B/sec", "TotalReadThroughput", 0.0, "bytes_per_s"),
        ("0.0 /sec", "PerReadThreadRawHdfsThroughput", 0.0, "bytes_per_s"),
        ("100.00%", "% non-child", 100.0, "percent"),
        ("4242.000", "Storage Write Requests", 4242.0, "count"),
        ("0", "MaxFindRecvrTime(NS)", 0.0, "ms"),
    ],
)
def test_parse_measure_classifies_value_and_unit(text, key, value, unit):
    assert parse_measure(text, key) == (pytest.approx(value), unit)


@pytest.mark.parametrize("text", ["2024-04-23 20:28:26", "MYSQL_PROTOCAL", "1: k = 1", "true", ""])
def test_parse_measure_leaves_text_as_nan_without_unit(text):
    value, unit = parse_measure(text, "Whatever")
    assert math.isnan(value) and unit is None


def test_parse_measure_keeps_the_unit_of_an_unknown_time():
    value, unit = parse_measure("?", "PrepareTime")
    assert math.isnan(value) and unit == "ms"


def test_expand_reads_doris_aggregates_as_one_row_per_statistic():
    rows = expand("InputRows", "sum 150.0M (150000000), avg 75.0M (75000000), max 75.000001M (75000001), min 0")
    assert [(r.stat, r.value) for r in rows] == [
        ("sum", 150000000.0),
        ("avg", 75000000.0),
        ("max", 75000001.0),
        ("min", 0.0),
    ]


def test_expand_reads_aggregated_byte_sizes():
    rows = expand("MemoryUsageHashTable", "sum 185.22 MB, avg 92.61 MB, max 185.22 MB, min 0.00 ")
    assert {r.stat: r.unit for r in rows} == {"sum": "bytes", "avg": "bytes", "max": "bytes", "min": "bytes"}
    assert rows[-1].value == 0.0


def test_expand_splits_analyze_profile_annotations():
    rows = expand("ExecutionTime", "30s1ms [Scan: 28s885ms (96.28%), Network: 0ns (0.00%)]")
    got = [(r.key, r.stat, r.value) for r in rows]
    assert got == [
        ("ExecutionTime", None, 30001.0),
        ("Scan", None, 28885.0),
        ("Scan", "pct", 96.28),
        ("Network", None, 0.0),
        ("Network", "pct", 0.0),
    ]


def test_expand_reads_min_max_brackets_as_statistics_of_the_same_counter():
    rows = expand("IOTaskExecTime", "25s612ms [min=19s376ms, max=28s804ms]")
    assert [(r.key, r.stat, r.value) for r in rows] == [
        ("IOTaskExecTime", None, 25612.0),
        ("IOTaskExecTime", "min", 19376.0),
        ("IOTaskExecTime", "max", 28804.0),
    ]


def test_expand_splits_two_measures_on_one_line():
    rows = expand("QueryPeakMemoryUsage", "?, QueryAllocatedMemoryUsage: 2.088 GB")
    assert [r.key for r in rows] == ["QueryPeakMemoryUsage", "QueryAllocatedMemoryUsage"]
    assert {r.unit for r in rows} == {"bytes"}
    assert math.isnan(rows[0].value)
    assert rows[1].value == pytest.approx(2.088 * 1024**3)


def test_expand_reads_planner_time_and_count():
    rows = expand("Total", "3ms / 1")
    assert [(r.stat, r.value, r.unit) for r in rows] == [(None, 3.0, "ms"), ("count", 1.0, "count")]


@pytest.mark.parametrize(
    "text",
    [
        "2.867K (2867) -> 2.867K (2867) (0.00%)",
        "[row: ?, cpu: ?, memory: ?, network: ?, cost: ?]",
        "Inlining false, Optimization false",
        "⏳ for blocked; 🚀 for running; ✅ for finished",
    ],
)
def test_expand_keeps_structured_text_as_text(text):
    rows = expand("Anything", text)
    assert len(rows) == 1 and rows[0].unit is None and rows[0].raw == text


def test_expand_pairs_reads_active_and_non_child_share():
    rows = expand_pairs("Active: 32.941ms[32941234ns], % non-child: 100.00%")
    assert [(r.key, r.value, r.unit) for r in rows] == [("Active", 32.941234, "ms"), ("% non-child", 100.0, "percent")]
