import numpy as np
import pandas as pd

from ingestlab import findings


def test_spread_names_the_lowest_and_highest_group_with_their_ratio_and_the_smallest_groups_n():
    data = pd.DataFrame({"engine": ["postgres"] * 4 + ["mariadb"] * 2, "ms": [1.0, 2.0, 3.0, 100.0, 10.0, 30.0]})
    assert findings.spread(data, "ms", by=["engine"], unit="ms", what="batch time") == (
        "Median batch time: from 2.50 ms (PostgreSQL) to 20 ms (MariaDB), 8× apart; n = 2 per group.")


def test_spread_of_one_value_per_group_states_the_values_and_their_count_not_a_median():
    data = pd.DataFrame({"engine": ["duckdb", "polars", "pandas_c"], "peak_mb": [120.0, np.nan, 900.0]})
    assert findings.spread(data, "peak_mb", by=["engine"], unit="MB", what="peak memory") == (
        "Peak memory: from 120 MB (DuckDB) to 900 MB (pandas (C parser)), 7.5× apart; 2 values.")
    assert findings.spread(data.iloc[1:2], "peak_mb", by=["engine"]) == "Nothing measured for peak (MB)."


def test_fits_says_when_nothing_could_be_fitted():
    empty = pd.DataFrame(columns=["engine", "variant", "model", "method", "term", "estimate", "ci_low", "ci_high",
                                  "unit", "n_points", "model_holds"])
    assert findings.fits(empty, "overhead") == "No overhead could be fitted at this scale (too few points)."


def test_fits_of_many_lines_gives_the_smallest_and_largest_in_one_sentence_and_every_rejected_line():
    long = pd.DataFrame({"engine": list("abcdefg"), "variant": "", "model": "scan", "method": "ols", "term": "per_gb",
                         "estimate": [0.5, 0.1, 3.0, 0.7, 0.2, 9.0, 1.0], "ci_low": 0.0, "ci_high": 10.0,
                         "unit": "s per GB", "n_points": 4, "model_holds": [True] * 5 + [False, True]})
    said = findings.fits(long, "per_gb")
    assert said.startswith("Fitted cost per GB: from b 0.1 s per GB (95 % CI 0.0–10.0; n = 4, rough) to c 3.0 s per "
                           "GB"), said
    assert "(4 lines between)" in said and said.endswith("; the line is rejected for f (not drawn).")
    assert "a 0.5" not in said and said.count("95 % CI") == 2
    assert findings.fits(long.iloc[:4], "per_gb").count("95 % CI") == 4  # a few lines: each named


def test_live_vs_published_counts_the_quantities_whose_live_interval_covers_the_seeds_value():
    comparison = pd.DataFrame({"quantity": ["overhead_ms a", "overhead_ms b", "speedup_x c"],
                               "published": [100.0, 64.0, 2.0], "live": [0.1, 0.2, 2.2],
                               "live_ci_low": [0.05, np.nan, 1.5], "live_ci_high": [0.2, np.nan, 3.0]})
    said = findings.live_vs_published(comparison)
    assert said.startswith("Live ÷ published from 0.00100 (overhead (ms) a) to 1.10 (speedup (×) c) over 3 quantities")
    assert said.endswith("the live 95 % CI covers the seed's value for 1 of the 2 with an interval.")


def test_shares_skips_a_whole_with_nothing_measured():
    parts = pd.DataFrame({"variant": ["sync_on", "sync_off"], "component": ["wal_flush", "planning"],
                          "ms": [0.06, np.nan]})
    assert findings.shares(parts, "ms", of="variant", part="component") == (
        "Largest part: synchronous_commit on WAL flush 0.0600 ms of 0.0600 ms (100 %).")
    assert findings.shares(parts.iloc[1:], "ms", of="variant", part="component") == "No part measured."


def test_fits_names_each_line_in_its_engines_own_words():
    long = pd.DataFrame({"engine": ["postgres", "mariadb"], "variant": ["sync_on", "flush_1"],
                         "model": "overhead", "method": "ols", "term": "overhead", "estimate": [0.119, 0.2],
                         "ci_low": [0.072, 0.1], "ci_high": [0.166, 0.3], "unit": "ms per statement",
                         "n_points": [15, 15], "model_holds": [True, False]})
    assert findings.fits(long, "overhead") == (
        "Fitted overhead: PostgreSQL, synchronous_commit on 0.119 ms per statement (95 % CI 0.072–0.166); "
        "the line is rejected for MariaDB, log flushed at each commit (not drawn).")
