"""Tests for ingestlab.published: the seed studies' tables, checked against the seeds."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ingestlab import models, published, report
from ingestlab.errors import ConfigError
from ingestlab.workloads import published_results_analysis

SEEDS_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"

#: Rows each table must have: what the seed prints (see data/published/SOURCES.md).
EXPECTED_ROWS = {
    "arangodb_upsert_batch_times": 24,
    "doris_group_commit_examples": 7,
    "doris_group_commit_jdbc": 3,
    "doris_group_commit_stream_load": 12,
    "doris_group_commit_sync_large_batch": 24,
    "doris_group_commit_sync_small_batch": 24,
    "starrocks_component_effects": 6,
    "starrocks_component_medians": 14,
    "starrocks_csv_peak_memory": 3,
    "starrocks_csv_scan_times": 24,
    "starrocks_insert_overhead_scale": 6,
    "starrocks_insert_profile_medians": 10,
    "starrocks_insert_scenarios": 13,
    "yugabytedb_docdb_rows_inserted": 2,
}

#: Tables that merge several printed ones: the columns that tell them apart, rows in each.
PRINTED_TABLE_SIZES = {
    "arangodb_upsert_batch_times": (["engine", "scenario"], 6),
    "doris_group_commit_sync_large_batch": (["concurrency"], 8),
    "doris_group_commit_sync_small_batch": (["concurrency"], 8),
    "starrocks_component_effects": (["deployment"], 3),
    "starrocks_component_medians": (["deployment"], 7),
    "starrocks_csv_scan_times": (["engine", "stage"], 3),
}

REQUIRED = ["source_seed", "engine", "version", "deployment", "scenario"]
UNIT_SUFFIXES = ("_s", "_ms", "_us", "_pct", "_rows", "_per_s", "_bytes", "_mb", "_gb", "_x")
COUNTS = {"rows", "batches", "buckets", "concurrency", "rows_per_batch", "rows_per_insert"}

#: The only converted columns; each sits beside the text it came from (``extra_printed``).
CONVERTED = {"elapsed_s", "extra_s", "peak_mb", "request_bytes"}
#: Units in printed text, in seconds or bytes (binary prefixes, as SOURCES.md states).
UNITS = {"": 1, "ms": 1e-3, "s": 1, "sec": 1, "min": 60, "мин": 60,
         "kb": 2**10, "mb": 2**20, "g": 2**30, "gb": 2**30}


def is_measure(column: str) -> bool:
    """Whether a column's name says it holds a measured quantity or a count."""
    return column.endswith(UNIT_SUFFIXES) or column in COUNTS or column.startswith("n_")


def numeric_columns(frame: pd.DataFrame) -> list[str]:
    """The numeric, non-boolean columns of a frame."""
    return [c for c in frame.columns
            if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]


def raw(name: str) -> pd.DataFrame:
    """A published table with every cell as the text stored in the CSV."""
    return pd.read_csv(published.data_dir() / f"{name}.csv", dtype=str, keep_default_na=False)


def normalise_spaces(text: str) -> str:
    """Collapse no-break and thin spaces into plain spaces."""
    return re.sub(r"[\u00a0\u2009\u202f]", " ", text)


def printed_numbers(text: str) -> set[str]:
    """Every number in a text, in the forms a CSV may store it.

    ``64,2`` (decimal comma) gives ``64.2``; ``1,215`` and ``10 000`` (thousands
    separators) give ``1215`` and ``10000``; a number printed with a sign also gives its
    signed form (``-7``).
    """
    text = normalise_spaces(text)
    found = set()
    patterns = [(r"\d+(?:\.\d+)?", lambda s: s),
                (r"\d+,\d+", lambda s: s.replace(",", ".")),
                (r"\d{1,3}(?:[, ]\d{3})+(?:\.\d+)?", lambda s: re.sub("[, ]", "", s))]
    for pattern, to_stored in patterns:
        for match in re.finditer(pattern, text):
            number = to_stored(match.group())
            found.add(number)
            if match.start() and text[match.start() - 1] in "+-":
                found.add(text[match.start() - 1] + number)
    return found


def printed_quantity(text: str) -> float:
    """A printed duration or size in seconds or bytes: ``+5.8 мин``, ``4:24``, ``1.2G``."""
    text = text.strip().lstrip("+")
    if minutes_seconds := re.fullmatch(r"(\d+):(\d\d)", text):
        return int(minutes_seconds[1]) * 60 + int(minutes_seconds[2])
    parts = re.findall(r"([\d.]+)\s*([^\d\s.]*)", text)
    return sum(float(number) * UNITS[unit.lower()] for number, unit in parts)


def first_number(text: str) -> float:
    """The first number in a printed cell, with its sign: ``-7%`` → -7, ``±5 ms`` → 5."""
    return float(re.search(r"[-+]?\d+(?:\.\d+)?", text)[0])


@pytest.fixture(scope="module")
def seeds() -> dict[str, str]:
    """The seed texts by file name; skips the fidelity tests when they are absent."""
    if not SEEDS_DIR.is_dir():
        pytest.skip(f"seed directory {SEEDS_DIR} is absent: cannot check the tables against it")
    return {path.name: path.read_text(encoding="utf-8") for path in SEEDS_DIR.glob("*.txt")}


def test_names_are_exactly_the_expected_tables():
    assert published.names() == sorted(EXPECTED_ROWS)


def test_names_doctest_passes():
    assert doctest.testmod(published).failed == 0


def test_load_unknown_name_raises_config_error_listing_names():
    with pytest.raises(ConfigError, match="one of: arangodb_upsert_batch_times") as info:
        published.load("starrocks_inserts")
    assert info.value.name == "name" and info.value.value == "starrocks_inserts"


def test_data_dir_is_overridden_by_environment(monkeypatch, tmp_path):
    pd.DataFrame({c: ["x"] for c in REQUIRED} | {"total_s": [1.5]}).to_csv(
        tmp_path / "tiny.csv", index=False)
    monkeypatch.setenv("INGESTLAB_PUBLISHED_DIR", str(tmp_path))
    assert published.names() == ["tiny"]
    assert published.load("tiny")["total_s"].tolist() == [1.5]


@pytest.mark.parametrize("name", sorted(EXPECTED_ROWS))
def test_table_has_labels_and_the_printed_row_count(name):
    frame = published.load(name)
    assert list(frame.columns[: len(REQUIRED)]) == REQUIRED
    assert len(frame) == EXPECTED_ROWS[name]
    assert (frame["source_seed"] != "").all() and (frame["engine"] != "").all()
    assert (frame["scenario"] != "").all()


@pytest.mark.parametrize("name", sorted(EXPECTED_ROWS))
def test_measured_columns_are_numeric_and_carry_a_unit(name):
    frame = published.load(name)
    numeric = numeric_columns(frame)
    assert [c for c in frame.columns if is_measure(c) and c not in numeric] == []
    assert [c for c in numeric if not is_measure(c)] == []
    assert numeric, "a published table holds at least one measured column"


@pytest.mark.parametrize("name", sorted(PRINTED_TABLE_SIZES))
def test_merged_tables_keep_every_printed_table_whole(name):
    columns, size = PRINTED_TABLE_SIZES[name]
    sizes = published.load(name).groupby(columns).size()
    assert (sizes == size).all(), sizes.to_dict()


def test_starrocks_scenarios_hold_each_measurement_once():
    frame = published.load("starrocks_insert_scenarios")
    assert not frame.duplicated(["deployment", "version", "scenario"]).any()
    printed_in = frame["table"].str.split(";").explode().value_counts().to_dict()
    assert printed_in == {"t1": 5, "t2": 8, "t3": 8}
    assert set(frame["scenario"]) == {"single_row", "batch_100", "batch_1000",
                                      "insert_select", "stream_load"}


@pytest.mark.parametrize(("deployment", "version", "overhead_ms"), [
    ("shared-data", "4.0.5", 64.2), ("shared-nothing", "4.0.4", 100.0),
    ("shared-nothing", "4.0.5", 100.0)])
def test_starrocks_fit_recovers_the_article_overhead(deployment, version, overhead_ms):
    frame = published.load("starrocks_insert_scenarios")
    points = frame[(frame["deployment"] == deployment) & (frame["version"] == version)
                   & frame["scenario"].isin(["single_row", "batch_100", "batch_1000"])]
    slope_s, _ = np.polyfit(points["n_statements"], points["total_s"], 1)
    assert slope_s * 1000 == pytest.approx(overhead_ms, abs=0.5)


def test_sources_lists_every_table_with_its_row_count_and_nothing_else():
    text = (published.data_dir() / "SOURCES.md").read_text(encoding="utf-8")
    mentioned = set(re.findall(r"`([a-z0-9_]+)\.csv`", text))
    assert mentioned == set(published.names())
    listed = dict(re.findall(r"^\| `([a-z0-9_]+)\.csv` \| (\d+) \|", text, flags=re.M))
    assert {name: int(rows) for name, rows in listed.items()} == EXPECTED_ROWS


@pytest.mark.parametrize("name", sorted(EXPECTED_ROWS))
def test_every_number_appears_in_its_seed_as_printed(name, seeds):
    stored, numeric = raw(name), numeric_columns(published.load(name))
    missing = []
    for seed, rows in stored.groupby("source_seed"):
        assert seed in seeds, f"{seed} is not a seed file"
        found = printed_numbers(seeds[seed])
        missing += [(seed, column, cell) for column in numeric if column not in CONVERTED
                    for cell in rows[column] if cell and cell not in found]
    assert missing == []


@pytest.mark.parametrize("name", sorted(EXPECTED_ROWS))
def test_printed_text_appears_in_its_seed(name, seeds):
    stored, missing = raw(name), []
    for column in [c for c in stored.columns if c.endswith("_printed")]:
        for seed, cell in zip(stored["source_seed"], stored[column]):
            if cell and cell not in normalise_spaces(seeds[seed]):
                missing.append((column, cell))
    assert missing == []


@pytest.mark.parametrize("name", sorted(EXPECTED_ROWS))
def test_numbers_agree_with_the_printed_text_beside_them(name):
    """``<x>_<unit>`` holds the number in ``<x>_printed``: converted, or as printed with its sign."""
    frame = published.load(name)
    for printed in [c for c in frame.columns if c.endswith("_printed")]:
        stem = printed.removesuffix("_printed") + "_"
        rows = frame[frame[printed].notna()]
        for column in [c for c in numeric_columns(frame) if c.startswith(stem)]:
            if column in CONVERTED:
                expected = rows[printed].map(printed_quantity)
                expected = expected / UNITS["mb"] if column.endswith("_mb") else expected
            else:
                expected = rows[printed].map(first_number)
            assert rows[column].tolist() == pytest.approx(expected.tolist()), column


# -- reshaping helpers ------------------------------------------------------------------

def test_overhead_points_are_the_three_insert_values_scenarios_per_variant():
    points = published.overhead_points()
    assert sorted(points["scenario"].unique()) == sorted(published.OVERHEAD_SCENARIOS)
    per_variant = points.groupby("variant")["n_statements"].apply(sorted).to_dict()
    assert per_variant == {v: [1, 10, 1000] for v in
                           ("shared-data 4.0.5", "shared-nothing 4.0.4", "shared-nothing 4.0.5")}
    assert (points["rows"] == 1000).all()


def test_variant_label_drops_empty_parts():
    frame = pd.DataFrame({"deployment": ["shared-data", "", "docker"], "version": ["4.0.5", "3.0.1", ""]})
    assert published.variant_label(frame).tolist() == ["shared-data 4.0.5", "3.0.1", "docker"]


def test_profile_split_recomputes_fe_overhead_within_the_printed_rounding():
    split = published.profile_split()
    assert sorted(split["deployment"]) == ["shared-data", "shared-nothing"]
    assert (split["fe_overhead_ms"] == split["total_time_ms"] - split["execution_time_ms"]).all()
    # the seed prints the FE share rounded to whole ms (40, 83)
    assert (split["fe_overhead_ms"] - split["fe_overhead_printed_ms"]).abs().max() <= 0.5
    assert (split["n_samples"] == 30).all()


def test_component_sweeps_name_each_level_by_the_parameter_it_changes():
    sweeps = published.component_sweeps()
    assert len(sweeps) == EXPECTED_ROWS["starrocks_component_medians"]
    numeric = sweeps[sweeps["factor"] != "model"]
    assert numeric["level_value"].notna().all() and sweeps.loc[sweeps["factor"] == "model", "level_value"].isna().all()
    assert sorted(numeric.loc[numeric["factor"] == "columns", "level_value"].unique()) == [4, 50]
    assert sorted(numeric.loc[numeric["factor"] == "buckets", "level_value"].unique()) == [1, 64]
    assert set(sweeps.loc[sweeps["factor"] == "model", "level"]) == {"DUPLICATE", "AGGREGATE", "UNIQUE"}


def test_time_per_request_applies_littles_law_and_fills_thousands_of_rows():
    t = pd.DataFrame({"concurrency": [30, 10], "rows_per_insert": [1, 100], "rows_per_s": [np.nan, 160_000.0],
                      "k_rows_per_s": [0.9, np.nan]})
    out = published.time_per_request(t)
    assert out["rows_per_s"].tolist() == [900.0, 160_000.0]
    assert out["request_ms"].tolist() == pytest.approx([30 / 900 * 1e3, 10 * 100 / 160_000 * 1e3])
    assert "request_ms" not in t.columns  # the input is left as it was


def test_stream_load_batches_give_back_the_seeds_data_set_in_every_run():
    loads = published.stream_load_batches()
    # the seed's data set: httplogs, 247249096 rows; every run loads all of it
    assert loads["total_rows"].to_numpy() == pytest.approx(247_249_096, rel=1e-4)
    assert (loads["n_loads"] * loads["rows_per_load"]).tolist() == pytest.approx(loads["total_rows"].tolist())
    per_byte = (loads["rows_per_load"] / loads["request_bytes"]).tolist()
    assert per_byte == pytest.approx([1 / loads["bytes_per_row"].iloc[0]] * len(loads))
    assert 100 < loads["bytes_per_row"].iloc[0] < 200
    assert set(loads["variant"]) == {"async, 10 clients", "async, 30 clients", "off, 10 clients", "off, 30 clients"}


# -- the sentences and headline numbers of notebook 00 --------------------------------------

@pytest.fixture(scope="module")
def section():
    """The tables notebook 00 computes, by the names it gives them."""
    t = {"points": published.overhead_points()}
    t["fits"] = models.fit_overhead(t["points"], by=["engine", "deployment", "version"])
    t["fits"].insert(1, "variant", published.variant_label(t["fits"]))
    t["diff"] = models.overhead_difference(t["points"], {"variant": "shared-nothing 4.0.4"},
                                           {"variant": "shared-data 4.0.5"})
    printed = published.load("starrocks_insert_overhead_scale")[["n_statements", "extra_printed"]]
    t["scale"] = models.scale_table(t["diff"]).merge(printed, on="n_statements")
    t["split"] = published.profile_split()
    t["sweeps"] = published.component_sweeps()
    effects = published.load("starrocks_component_effects").rename(columns={"scenario": "factor"})
    t["slopes"] = models.fit_sweep(t["sweeps"].dropna(subset=["level_value"]), x="level_value", y="median_ms",
                                   by=["deployment", "factor"]).merge(effects, on=["deployment", "factor"])
    t["ratios"] = models.ratio_table(published.load("arangodb_upsert_batch_times"), value="batch_ms",
                                     between="scenario", a="upsert_existing_keys", b="insert_new_keys",
                                     by=["engine", "statistic"])
    scan = published.load("starrocks_csv_scan_times")
    t["scan"] = scan.assign(system=scan["engine"] + " · " + scan["stage"].str.replace("_", " "))
    starrocks = scan[(scan["engine"] == "StarRocks") & (scan["storage"] == "hdfs")]
    t["speedup"] = models.ratio_table(starrocks, value="elapsed_s", between="stage", a="initial",
                                      b="after_pr_30137", by=["scenario"]).set_index("scenario")
    t["loads"] = published.stream_load_batches()
    t["load_fits"] = models.fit_load_overhead(t["loads"], by=["variant", "group_commit_mode", "concurrency"])
    t["sync"] = published.time_per_request(pd.concat([published.load("doris_group_commit_sync_small_batch"),
                                                      published.load("doris_group_commit_sync_large_batch")],
                                                     ignore_index=True))
    t["interval_fits"] = models.fit_sweep(t["sync"], x="group_commit_interval_ms", y="request_ms",
                                          by=["rows_per_insert", "concurrency", "nereids_planner"])
    return t


def paragraphs(text: str) -> list[str]:
    return text.split("\n\n")


def test_table_sizes_count_each_tables_rows():
    sizes = published.table_sizes().set_index("table")["rows"]
    assert sizes.to_dict() == EXPECTED_ROWS


def test_describe_overhead_fits_states_each_ols_overhead_with_its_ci(section):
    text = published_results_analysis.describe_overhead_fits(section["fits"], section["points"], alpha=0.1)
    ols = section["fits"][section["fits"]["method"] == "ols"]
    assert len(paragraphs(text)) == len(ols)
    for line, r in zip(paragraphs(text), ols.itertuples()):
        assert line.startswith(f"**{r.variant}**: {r.overhead_ms:.1f} ms per statement (90 % CI "
                               f"{r.overhead_ci_low_ms:.1f}–{r.overhead_ci_high_ms:.1f})")
        assert f"write time {r.write_time_s:.3f} s" in line and f"R² {r.r2:.6f}" in line


def test_describe_scale_states_the_difference_and_the_largest_scale(section):
    diff, scale = section["diff"], section["scale"]
    text = published_results_analysis.describe_scale(diff, scale, a="shared-nothing 4.0.4", b="shared-data 4.0.5")
    assert text.startswith(f"Shared-nothing 4.0.4 pays {diff['diff_ms']:.1f} ms (95 % CI {diff['diff_ci_low_ms']:.1f}–")
    assert f"{diff['ratio']:.2f}×" in text and f"{scale['extra_s'].iloc[-1] / 60:.0f} min" in text
    assert f"{scale['n_statements'].iloc[-1]:,} statements" in text


def test_describe_profile_split_states_each_deployment_and_their_difference(section):
    split = section["split"].set_index("deployment")
    lines = paragraphs(published_results_analysis.describe_profile_split(section["split"], section["fits"]))
    assert len(lines) == len(split) + 1
    assert all(f"+ FE {r.fe_overhead_ms:.1f} ms" in line for line, r in zip(lines, split.itertuples()))
    fe = split.loc["shared-nothing", "fe_overhead_ms"] - split.loc["shared-data", "fe_overhead_ms"]
    assert f"FE {fe:+.1f} ms" in lines[-1]


def test_describe_component_slopes_states_each_slope_and_the_model_spread(section):
    text = published_results_analysis.describe_component_slopes(section["slopes"], section["sweeps"], section["fits"])
    assert all(f"**{r.deployment}, {r.factor}**: {r.slope:+.3f} ms per {r.per_unit}" in text
               for r in section["slopes"].itertuples())
    model = section["sweeps"][section["sweeps"]["factor"] == "model"].groupby("deployment")["median_ms"]
    assert all(f"{v:g} ms ({d})" in text for d, v in (model.max() - model.min()).items())


def test_describe_upsert_ratios_states_the_mean_ratio_per_engine(section):
    mean = section["ratios"][section["ratios"]["statistic"] == "mean"]
    text = published_results_analysis.describe_upsert_ratios(section["ratios"])
    assert all(f"**{r.engine}**: the mean overwrite batch takes {r.ratio:.1f}×" in text for r in mean.itertuples())


def test_describe_csv_scan_states_each_querys_speedup(section):
    text = published_results_analysis.describe_csv_scan(section["scan"], section["speedup"])
    assert len(paragraphs(text)) == section["scan"]["scenario"].nunique()
    assert all(f"**{q}**: StarRocks" in text and f"(before ÷ after: {r:.2f})" in text
               for q, r in section["speedup"]["ratio"].items())


def test_describe_peak_memory_states_each_engine_against_the_least():
    memory = published.load("starrocks_csv_peak_memory")
    text = published_results_analysis.describe_peak_memory(memory)
    assert all(f"{r.engine} {r.peak_mb:g} MB (printed {r.peak_printed}, {r.peak_mb / memory['peak_mb'].min():.2f}×"
               in text for r in memory.itertuples())


def test_describe_load_fits_states_every_group_and_what_group_commit_saves(section):
    fits = section["load_fits"].set_index("variant")
    lines = paragraphs(published_results_analysis.describe_load_fits(section["loads"], section["load_fits"]))
    assert len(lines) == len(fits) + 2
    async_10 = fits.loc["async, 10 clients"]
    assert any(line.startswith(f"**async, 10 clients**: {async_10['overhead_ms']:.3f} ms per load (95 % CI")
               for line in lines)
    saving = fits.loc["off, 10 clients", "overhead_ms"] / async_10["overhead_ms"]
    assert f"one load costs {saving:.0f}× what it costs with it (10 clients)" in lines[-1]


def test_describe_interval_fits_states_each_one_row_slope(section):
    fits = section["interval_fits"]
    small = fits[fits["rows_per_insert"] == 1]
    text = published_results_analysis.describe_interval_fits(section["sync"], fits)
    assert len(paragraphs(text)) == len(small) + 1
    assert all(f"{report.format_estimate(r.slope, r.slope_ci_low, r.slope_ci_high, unit='', digits=2)} × interval"
               in text for r in small.itertuples())
    assert any(r.slope_ci_low < 0 for r in small.itertuples())  # one CI takes in zero: "−0.51 to 1.2", not "-0.51–1.2"
    assert "CI -" not in text


def test_describe_jdbc_and_docdb_state_their_tables_numbers():
    jdbc = published.time_per_request(published.load("doris_group_commit_jdbc"))
    text = published_results_analysis.describe_jdbc(jdbc, published.load("doris_group_commit_examples"))
    assert all(f"{r.rows_per_s:,.0f} rows/s at {r.concurrency} clients" in text for r in jdbc.itertuples())
    docdb = published.load("yugabytedb_docdb_rows_inserted")
    docdb = docdb.assign(docdb_entries_per_row=docdb["docdb_inserted_rows"] / docdb["rows"])
    assert all(f"{r.scenario} {r.docdb_entries_per_row:g}" in published_results_analysis.describe_docdb(docdb)
               for r in docdb.itertuples())


def test_headline_records_the_sections_numbers(section):
    names = ("fits", "diff", "split", "ratios", "speedup", "load_fits", "interval_fits")
    numbers = published_results_analysis.headline(**{name: section[name] for name in names})
    fits = section["fits"][section["fits"]["method"] == "ols"]
    assert numbers["starrocks_overhead_ms[shared-data 4.0.5]"] == pytest.approx(
        fits.set_index("variant").loc["shared-data 4.0.5", ["overhead_ms", "overhead_ci_low_ms",
                                                             "overhead_ci_high_ms"]].tolist())
    assert numbers["starrocks_shared_nothing_extra_ms"][0] == section["diff"]["diff_ms"]
    assert numbers["starrocks_csv_full_scan_speedup"] == section["speedup"].loc["full_scan_order_by_limit_1", "ratio"]
    slopes = [k for k in numbers if k.startswith("doris_sync_1row_interval_slope[")]
    assert "doris_sync_1row_interval_slope[30 clients, nereids on]" in slopes and len(slopes) == 6
    assert len(numbers) == 3 + 1 + 2 + 2 + 1 + 3 + 6


def test_a_published_table_names_the_lab_engine_each_study_engine_is_set_beside():
    assert published.lab_engines("arangodb_upsert_batch_times") == {"ArangoDB": "rocksdb", "PostgreSQL": "postgres"}


def test_figures_of_one_engine_s_configurations_draw_them_in_that_engine_s_colour():
    """StarRocks' deployments and Doris' load variants were indigo, wine and olive: colours no engine has."""
    import matplotlib.collections
    import matplotlib.colors
    import matplotlib.pyplot as plt

    from ingestlab import figure_checks, figures

    points = published.overhead_points(published.load("starrocks_insert_scenarios"))
    fits = models.fit_overhead(points, by=["engine", "deployment", "version"])
    fits.insert(1, "variant", published.variant_label(fits))
    loads = published.stream_load_batches()
    load_fits = models.fit_load_overhead(loads, by=["variant", "group_commit_mode", "concurrency"])
    drawn = {"starrocks": [published_results_analysis.plot_overhead_fit(points, fits),
                           published_results_analysis.plot_component_sweeps(published.component_sweeps())],
             "doris": [published_results_analysis.plot_stream_load(loads, load_fits)]}
    for engine, figs in drawn.items():
        own = figures.ENGINE_STYLE[engine][0]
        for fig in figs:
            colours = {matplotlib.colors.to_hex(line.get_color()).upper() for ax in fig.axes for line in ax.get_lines()
                       if len(line.get_xdata()) > 1}  # its lines, and its points (a fit not tested has no line)
            colours |= {matplotlib.colors.to_hex(c).upper() for ax in fig.axes for points in ax.collections
                        if isinstance(points, matplotlib.collections.PathCollection) for c in points.get_facecolors()}
            assert colours and all(figure_checks.is_shade_of(c, own) for c in colours), (engine, colours)
            plt.close(fig)
