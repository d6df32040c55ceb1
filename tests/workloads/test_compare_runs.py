"""Notebook 07's analysis: two run folders matched quantity by quantity, described and drawn."""

import json
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from ingestlab import captions, figure_checks, figures
from ingestlab.cli import main
from ingestlab.errors import ConfigError
from ingestlab.workloads import compare_runs_analysis as analysis

FIXTURES = Path(__file__).parents[1] / "fixtures" / "runs"
RUN = "01_insert_anatomy"


def test_each_sample_quantity_also_reports_its_raw_samples_bootstrap_interval_and_u_test():
    from scipy import stats

    table = analysis.compare(FIXTURES / "a", FIXTURES / "b")
    row = table[(table["kind"] == "samples") & table["labels"].str.contains("scenario=single_row")].iloc[0]
    raw = [pd.read_parquet(FIXTURES / side / RUN / "results.parquet") for side in "ab"]
    a, b = (r.loc[~r["warmup"] & (r["scenario"] == "single_row"), "elapsed_s"] for r in raw)
    assert row["mann_whitney_p"] == pytest.approx(stats.mannwhitneyu(a, b).pvalue)
    assert row["mann_whitney_p"] < 1e-6  # the samples alone call B's +23 % a change ...
    assert row["verdict"] == "unsure"  # ... which the run-level rule does not take from one run a side
    assert row["samples_ci_low"] < row["ratio"] < row["samples_ci_high"]
    assert row["ci_low"] < row["samples_ci_low"] and row["samples_ci_high"] < row["ci_high"]
    fits = table[table["kind"] == "fit"]
    assert fits[["samples_ci_low", "samples_ci_high", "mann_whitney_p"]].isna().all().all()  # no raw samples
    shown = analysis.format_table(table)
    assert "U p" in shown.splitlines()[0] and f"{row['mann_whitney_p']:.2g}" in shown
    assert "the run-level rule calls 0 of them changed" in analysis.describe(table)


def test_a_run_compared_with_itself_is_never_changed_and_one_run_cannot_be_called_same():
    table = analysis.compare(FIXTURES / "a" / RUN, FIXTURES / "a", "01")
    assert (table["ratio"].dropna() == 1).all()
    assert set(table["verdict"]) == {"unsure"}  # the run-to-run noise of one run a side spans more than ±5 %
    samples = table[table["kind"] == "samples"]
    assert samples["note"].str.startswith("unpaired, 1 run(s) against 1").all()
    assert (samples["detectable"] > 1.5).all() and (samples["runs_needed"] > 1).all()  # what one run a side missed
    assert samples["verdict_text"].str.fullmatch(r"could not tell \(needs ≥ \d+ runs a side\)").all()
    assert table["verdict_text"].str.startswith("could not tell (").all()  # a fit without interval says why


def test_two_real_runs_of_one_configuration_raise_no_alarm():
    table = analysis.compare(FIXTURES / "a", FIXTURES / "b")
    single = table[table["labels"].str.contains("single_row") & (table["kind"] == "samples")].iloc[0]
    assert single["ratio"] > 1.15  # B's single-row INSERTs are 23 % slower: a run-level shift, not a change
    assert not table["verdict"].isin(["slower", "faster", "higher", "lower"]).any()


def test_a_cloud_disk_profile_makes_overwrites_slower_and_leaves_inserts():
    table = analysis.compare(FIXTURES / "03-local", FIXTURES / "03-cloud").set_index("labels")
    overwrite = table.filter(like="operation=overwrite", axis=0).iloc[0]
    insert = table.filter(like="operation=insert", axis=0).iloc[0]
    assert overwrite["verdict"] == "slower" and overwrite["ratio"] > 10
    assert insert["verdict"] == "unsure" and 0.8 < insert["ratio"] < 1.25
    assert any("B changes disk_profile ('local' → 'cloud-375')" in n for n in table.attrs["notes"])


def test_fits_named_after_the_changed_parameter_are_matched_across_it_and_unmatched_ones_are_listed(tmp_path):
    table = analysis.compare(FIXTURES / "03-local", FIXTURES / "03-cloud")
    fits = table[table["kind"] == "fit"].set_index("labels")
    assert len(fits) == 8 and fits.index.str.startswith("model=batch_time, ").all()  # "batch_time local" / "… cloud-375"
    per_row = fits.loc["model=batch_time, method=ols, term=per_row"]
    overwrite = per_row[per_row["variant"] == "overwrite"].iloc[0]
    assert overwrite["verdict"] == "slower" and overwrite["ratio"] > 10
    assert not any("fits:" in n for n in table.attrs["notes"])
    for side in ("03-local", "03-cloud"):
        shutil.copytree(FIXTURES / side, tmp_path / side)
    path = tmp_path / "03-cloud" / "03_upsert_beyond_ram" / "fits.csv"
    pd.read_csv(path).query("method != 'theil_sen'").to_csv(path, index=False)
    fewer = analysis.compare(tmp_path / "03-local", tmp_path / "03-cloud")
    assert (fewer["kind"] == "fit").sum() == 4
    (note,) = [n for n in fewer.attrs["notes"] if "fits:" in n]
    assert "4 not in every run of both sides, only in A's" in note and "method=theil_sen" in note


def test_a_ratio_beyond_a_hundredfold_is_printed_as_a_factor():
    assert analysis._percent(1.25) == "+25.0 %" and analysis._percent(150.0) == "×150" and analysis._percent(np.nan) == "n/a"


def test_several_runs_a_side_are_each_sides_repeats(tmp_path):
    table = analysis.compare(f"{FIXTURES / 'a'},{FIXTURES / 'b'}", [FIXTURES / "b", FIXTURES / "a"], reference=False)
    samples = table[table["kind"] == "samples"]
    assert (samples["runs_a"] == 2).all() and (samples["runs_b"] == 2).all()
    assert np.allclose(samples["ratio"], 1) and set(table["verdict"]) <= {"same", "unsure"}
    other = Path(shutil.copytree(FIXTURES / "b" / RUN, tmp_path / "b2" / RUN))
    _edit_meta(other, parameters__n=2000)
    with pytest.raises(ConfigError, match="runs of one side are repeats of one configuration"):
        analysis.compare([FIXTURES / "a", tmp_path / "b2"], FIXTURES / "b")


def test_other_runs_of_the_configuration_join_the_noise_estimate(tmp_path):
    for name in ("a", "b", "c", "d"):
        shutil.copytree(FIXTURES / "a" / RUN, tmp_path / name / RUN)
    for name in ("c", "d"):  # two more runs of A's configuration, one of them 40 % slower
        _edit_meta(tmp_path / name / RUN, git__dirty=False)
    results = pd.read_parquet(tmp_path / "d" / RUN / "results.parquet")
    results.assign(elapsed_s=results["elapsed_s"] * 1.4).to_parquet(tmp_path / "d" / RUN / "results.parquet")
    for name in ("a", "b"):
        _edit_meta(tmp_path / name / RUN, git__dirty=False)
    alone = analysis.compare(tmp_path / "a", tmp_path / "b", reference=False)
    helped = analysis.compare(tmp_path / "a", tmp_path / "b")
    assert any("also from 2 other runs" in n for n in helped.attrs["notes"])
    assert (helped["run_noise"].dropna() > alone["run_noise"].dropna().reindex(helped.index).dropna()).any()


def _edit_meta(folder: Path, **changes) -> None:
    meta = json.loads((folder / "run.json").read_text())
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        target = meta
        for key in path:
            target = target[key]
        target[last] = value
    (folder / "run.json").write_text(json.dumps(meta))


def test_smoke_and_paper_runs_are_refused_in_one_line(b_copy):
    _edit_meta(b_copy, parameters__scale="paper")
    with pytest.raises(ConfigError, match="scale") as err:
        analysis.compare(FIXTURES / "a", b_copy.parent)
    assert "\n" not in str(err.value)


def test_different_parameters_are_refused_naming_each(b_copy):
    _edit_meta(b_copy, parameters__n=2000, parameters__seed=7)
    with pytest.raises(ConfigError, match=r"these differ: n \(1000 vs 2000\), seed \(0 vs 7\)"):
        analysis.compare(FIXTURES / "a", b_copy.parent)


def test_a_corrupt_run_is_refused_saying_why(b_copy):
    (b_copy / "results.parquet").write_bytes(b"PAR1 broken")
    with pytest.raises(ConfigError, match="results.parquet unreadable"):
        analysis.compare(FIXTURES / "a", b_copy)


def test_a_host_difference_is_stated_on_every_row(b_copy):
    _edit_meta(b_copy, host__hostname="elsewhere", host__cpu_cores=64)
    table = analysis.compare(FIXTURES / "a", b_copy)
    assert table["note"].str.contains("hosts differ: host vm vs elsewhere, cores 2 vs 64").all()
    assert "different machines" in analysis.describe(table)


def test_an_engine_version_change_is_matched_only_when_asked(b_copy):
    meta = json.loads((b_copy / "run.json").read_text())
    for entry in meta["engines"]:
        entry["server_version"] = "19.0"
    (b_copy / "run.json").write_text(json.dumps(meta))
    strict = analysis.compare(FIXTURES / "a", b_copy)
    assert (strict["kind"] == "fit").all()
    assert any("engine version 18.6 vs 19.0, not compared" in n for n in strict.attrs["notes"])
    across = analysis.compare(FIXTURES / "a", b_copy, across_versions=True)
    assert across.loc[across["kind"] == "samples", "note"].str.contains("engine version 18.6 vs 19.0").all()


def test_older_wide_fits_become_long():
    wide = pd.DataFrame({"engine": ["pg"], "variant": ["v"], "method": ["ols"], "slope_ms": [0.3],
                         "slope_ci_low_ms": [0.2], "slope_ci_high_ms": [0.4], "share_of_overhead": [0.5],
                         "share_ci_low": [0.1], "share_ci_high": [0.9]})
    long = analysis.long_fits(wide)
    assert long[["term", "unit", "estimate"]].to_dict("records") == [{"term": "slope", "unit": "ms", "estimate": 0.3}]


def test_plot_comparison_draws_the_band_and_a_log_axis_over_a_decade():
    table = analysis.compare(FIXTURES / "a", FIXTURES / "b")
    fig = analysis.plot_comparison(table)
    assert sum(len(ax.get_yticks()) for ax in fig.axes) == table["ratio"].notna().sum()
    bars = [c for ax in fig.axes for c in ax.collections if c.get_label() == "samples alone, 95 % CI"]
    spans = sorted((round(float(seg[0][0]), 9), round(float(seg[1][0]), 9)) for b in bars for seg in b.get_segments())
    samples = table[table["kind"] == "samples"]
    assert spans == sorted(zip(samples["samples_ci_low"].round(9), samples["samples_ci_high"].round(9)))
    narrow = analysis.plot_comparison(table.assign(ci_low=table["ratio"] * 0.9, ci_high=table["ratio"] * 1.1))
    assert narrow.axes[0].get_xscale() == "linear"
    wide = table.assign(ratio=table["ratio"] * np.linspace(0.2, 5, len(table)))  # ratios themselves span decades
    assert analysis.plot_comparison(wide).axes[0].get_xscale() == "log"
    plt.close("all")


def test_an_interval_far_wider_than_the_ratios_is_cut_at_the_axis_with_an_arrowhead():
    """07's paper figure: ClickHouse's fitted write time, its ratio CI up to 10¹⁵ (the fit's CI takes in zero),
    stretched the shared axis to 15 decades: every other row a dot on one line, the tick labels over each other."""
    rows = [{"engine": "clickhouse", "variant": "default", "table": "results", "labels": f"driver=chdb, scenario={s}",
             "ratio": r, "ci_low": r / 1.2, "ci_high": r * 1.2, "verdict": "unsure", "threshold": 0.05,
             "kind": "samples", "samples_ci_low": np.nan, "samples_ci_high": np.nan}
            for s, r in (("single_row", 0.8), ("batch_100", 1.1), ("bulk", 1.3))]
    rows.append(dict(rows[0], table="fits", labels="model=overhead, method=ols, term=write_time", ratio=0.05,
                     ci_low=1e-6, ci_high=1e15))
    fig = analysis.plot_comparison(pd.DataFrame(rows))
    try:
        (ax,) = fig.axes
        low, high = ax.get_xlim()
        assert 0.05 / analysis.CI_ROOM * 0.9 <= low < 0.05 and 1.3 * 1.2 < high <= 1.3 * analysis.CI_ROOM * 1.1
        arrows = [line for line in ax.lines if line.get_label() == analysis.CUT_LABEL]
        assert sorted(line.get_marker() for line in arrows) == ["<", ">"]  # both ends of the one interval cut
        assert all(low <= x <= high for line in arrows for x in line.get_xdata())
        assert analysis.CUT_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]
        fig.canvas.draw()
        ticks = sorted((t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()), key=lambda b: b.x0)
        assert len(ticks) >= 2 and all(a.x1 <= b.x0 for a, b in zip(ticks, ticks[1:]))  # no tick label over another
        assert figure_checks.grammar_problems(fig) == []
    finally:
        plt.close(fig)


def test_a_comparison_of_many_quantities_is_a_panel_per_engine_in_two_columns_within_a_page():
    """63 quantities of 7 engine variants (two real paper runs of 01 have as many): a panel per engine, each row
    once, two columns, every label one short line, the figure within the grammar (PNG ≤ 2 700 px tall)."""
    rows = [{"engine": engine, "variant": variant, "table": table, "labels": labels_, "ratio": r, "ci_low": r / 1.5,
             "ci_high": r * 1.5, "verdict": "unsure", "threshold": 0.05, "kind": "samples",
             "samples_ci_low": np.nan, "samples_ci_high": np.nan}
            for engine, variants in (("postgres", ["sync_on", "sync_off"]), ("mariadb", ["flush_0", "flush_1", "flush_2"]),
                                     ("duckdb", ["default"]), ("clickhouse", ["default"]))
            for variant in variants
            for (table, labels_), r in zip(
                [("results", f"driver=d, scenario={s}") for s in ("single_row", "batch_100", "batch_1000", "bulk",
                                                                   "insert_select")]
                + [("fits", f"model=overhead, method={m}, term={t}") for m in ("ols", "theil_sen")
                   for t in ("overhead", "write_time")], np.linspace(0.5, 2.0, 9))]
    table = pd.DataFrame(rows)
    fig = analysis.plot_comparison(table)
    try:
        titles = [ax.get_title(loc="left") for ax in fig.axes]
        assert sorted(titles) == ["ClickHouse", "DuckDB", "MariaDB", "PostgreSQL"]
        lefts = sorted({round(ax.get_position().x0, 2) for ax in fig.axes})
        assert len(lefts) == 2  # two columns of panels
        ticks = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
        assert len(ticks) == 63 and all("\n" not in t and len(t) <= analysis.FIGURE_LABEL_CHARS for t in ticks)
        assert "sync on · fit write time (Theil–Sen)" in ticks and "1 row per INSERT" in ticks
        assert figure_checks.grammar_problems(fig) == []
        box = captions.fit_to_print(fig)
        assert abs(box.width - figures.PAGE_WIDTH) < 0.01 and box.height <= figures.TALLEST[figures.PAGE_WIDTH]
    finally:
        plt.close(fig)


def test_describe_counts_the_verdicts_and_names_the_changes():
    table = analysis.compare(FIXTURES / "a", FIXTURES / "b")
    text = analysis.describe(table)
    counts = table["verdict"].value_counts()
    assert text.startswith(f"Of {len(table)} quantities compared")
    for verdict, count in counts.items():
        assert f"{count} {verdict if verdict != 'unsure' else 'could not be told apart'}" in text
    assert "unsure" not in text
    for _, row in table[table["verdict"] == "slower"].iterrows():
        assert analysis.quantity(row) in text


def test_a_machine_is_called_busy_by_what_others_used_while_runs_ran_not_by_the_labs_own_load(tmp_path):
    for name in ("a", "b"):
        shutil.copytree(FIXTURES / name / RUN, tmp_path / name / RUN)
        # the load the lab's own previous run left (alternating runs start at 1.1-1.8), others' share quiet
        _edit_meta(tmp_path / name / RUN, load_average__start=[1.8, 1.2, 1.0], machine_cpu={"others_cpu_share": 0.03})
    text = analysis.describe(analysis.compare(tmp_path / "a", tmp_path / "b"))
    assert "busy" not in text and "Other processes" not in text
    _edit_meta(tmp_path / "b" / RUN, machine_cpu={"others_cpu_share": 0.25})
    text = analysis.describe(analysis.compare(tmp_path / "a", tmp_path / "b"))
    assert "Other processes used more than 10% of the machine's CPU while runs ran (B 25%)" in text
    _edit_meta(tmp_path / "b" / RUN, machine_cpu={}, load_average__start=[2.4, 1.2, 1.0])
    text = analysis.describe(analysis.compare(tmp_path / "a", tmp_path / "b"))
    assert "busy when runs started (1-minute load B 2.4, above 1.5)" in text and "Other processes" not in text


@pytest.fixture
def b_copy(tmp_path):
    """A copy of run B to edit."""
    return Path(shutil.copytree(FIXTURES / "b" / RUN, tmp_path / "b" / RUN))


def test_cli_fails_on_slower_only_when_a_quantity_is_slower(b_copy, tmp_path, capsys):
    results = pd.read_parquet(FIXTURES / "a" / RUN / "results.parquet")
    results.assign(elapsed_s=results["elapsed_s"] * 3).to_parquet(b_copy / "results.parquet")  # beyond ×1.9
    shutil.copy(FIXTURES / "a" / RUN / "fits.csv", b_copy / "fits.csv")
    assert main(["compare", str(FIXTURES / "a"), str(b_copy), "--fail-on", "slower",
                 "--csv", str(tmp_path / "c.csv")]) == 1
    assert "slower" in capsys.readouterr().out
    assert (pd.read_csv(tmp_path / "c.csv").query("labels.str.contains('single_row')")["verdict"] == "slower").all()
    assert main(["compare", str(FIXTURES / "a"), str(b_copy), "--fail-on", "faster"]) == 0
    assert main(["compare", str(FIXTURES / "a"), str(FIXTURES / "a"), "--fail-on", "change"]) == 0


def test_fixture_runs_compare_medians_of_the_raw_samples_without_warmup():
    table = analysis.compare(FIXTURES / "a", FIXTURES / "b")
    samples = table[table["kind"] == "samples"].set_index("labels")
    raw = [pd.read_parquet(FIXTURES / side / RUN / "results.parquet") for side in "ab"]
    medians = [r[~r["warmup"] & (r["scenario"] == "single_row")]["elapsed_s"].median() for r in raw]
    row = samples.loc["driver=psycopg2, scenario=single_row"]
    assert row["a"] == medians[0] and row["b"] == medians[1]
    assert row["ratio"] == pytest.approx(medians[1] / medians[0])
    assert row["ci_low"] <= row["ratio"] <= row["ci_high"]
    assert set(samples.index.str.extract(r"scenario=(\w+)")[0]) == {"single_row", "batch_100", "batch_1000",
                                                                   "insert_select", "bulk"}
    assert (samples["version_a"] == "18.6").all()
    fits = table[table["kind"] == "fit"]
    assert set(fits["labels"].str.extract(r"term=(\w+)")[0]) == {"overhead", "write_time"}
    assert table["verdict"].isin(analysis.VERDICTS).all()
    assert "did not complete" not in " ".join(table.attrs["notes"])


def test_cli_draws_the_figure_into_a_folder_and_refuses_a_file_in_one_line(tmp_path, capsys, all_figure_formats):
    from PIL import Image

    assert main(["compare", str(FIXTURES / "a"), str(FIXTURES / "b"), "--figure", str(tmp_path / "fig")]) == 0
    out = capsys.readouterr().out
    assert "quantities compared" in out  # describe()'s sentences after the table
    assert {p.name for p in (tmp_path / "fig").iterdir()} == {"ratios.png", "ratios.svg", "ratios.pdf",
                                                              "ratios.caption.md"}
    assert (tmp_path / "fig" / "ratios.caption.md").read_text().startswith("**")  # its title, beside the image
    assert Image.open(tmp_path / "fig" / "ratios.png").size[0] > 1000
    (tmp_path / "file").write_text("x")
    assert main(["compare", str(FIXTURES / "a"), str(FIXTURES / "b"), "--figure", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ingestlab: error: --figure=") and err.count("\n") == 1


def test_cli_refusal_is_one_line_with_exit_2(tmp_path, capsys):
    assert main(["compare", str(FIXTURES / "a"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ingestlab: error: B=") and err.count("\n") == 1


def _alternating_runs(tmp_path, order: str, slower: float = 1.0) -> Path:
    """Copies of the fixture run in ``order`` (``ABAB``…), a minute apart, into ``A-1``, ``B-1``, … (as
    ``ingestlab alternate`` writes them); each pair's B run ``slower`` times A's, both shifted by a drift."""
    counts = {"A": 0, "B": 0}
    for i, side in enumerate(order):
        counts[side] += 1
        folder = Path(shutil.copytree(FIXTURES / "a" / RUN, tmp_path / f"{side}-{counts[side]}" / RUN))
        _edit_meta(folder, started_at=f"2026-11-29T06:{i:02d}:00+00:00", git__dirty=False)
        results = pd.read_parquet(folder / "results.parquet")
        drift = 1.0 + 0.25 * (counts[side] % 2)  # the machine: every other pair 25 % slower
        results.assign(elapsed_s=results["elapsed_s"] * drift * (slower if side == "B" else 1.0)) \
            .to_parquet(folder / "results.parquet")
    return tmp_path


@pytest.mark.parametrize("order", ["ABABABAB", "BABABABA", "ABBAABBA"])
def test_runs_made_in_alternation_are_paired_and_a_drift_cancels(tmp_path, order):
    root = _alternating_runs(tmp_path, order, slower=1.3)
    table = analysis.compare(str(root / "A-*"), str(root / "B-*"), reference=False)
    samples = table[table["kind"] == "samples"]
    assert samples["paired"].all() and samples["note"].str.startswith("paired, 4 alternating pairs").all()
    assert any("paired, 4 alternating pairs" in n for n in table.attrs["notes"])
    assert np.allclose(samples["ratio"], 1.3)
    called = samples[samples["verdict"] == "slower"]  # the drift (25 % every other pair) cancels in each pair
    assert len(called) >= 3 and called["detectable"].max() < samples.loc[samples["verdict"] == "unsure", "detectable"].min()
    assert samples.loc[samples["verdict"] != "slower", "verdict_text"].str.contains(r"needs ≥ \d+ pairs").all()


def test_runs_that_did_not_alternate_are_compared_unpaired_and_say_so(tmp_path):
    root = _alternating_runs(tmp_path, "AAAABBBB", slower=1.3)
    table = analysis.compare(f"{root}/A-1,{root}/A-2,{root}/A-3,{root}/A-4", str(root / "B-*"), reference=False)
    samples = table[table["kind"] == "samples"]
    assert not table["paired"].any() and samples["note"].str.startswith("unpaired, 4 run(s) against 4").all()
    assert any("unpaired (the sides' runs did not alternate)" in n for n in table.attrs["notes"])
    # the drift (±25 % between runs) hides the change from the unpaired test
    assert not (table["verdict"] == "slower").all()


def test_cli_prints_what_each_quantity_could_see_and_never_a_bare_unsure(tmp_path, capsys):
    root = _alternating_runs(tmp_path, "ABAB")
    assert main(["compare", str(root / "A-*"), str(root / "B-*"), "--target", "1.2"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "detectable" in line)
    assert "runs needed (±20%)" in header
    assert " unsure" not in out and "could not tell (" in out
    assert "could not be told apart at 2 alternating pairs" in out
    assert main(["compare", str(root / "A-*"), str(root / "B-*"), "--target", "1.01"]) == 2
