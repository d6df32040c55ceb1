"""The shared plot helpers draw tidy data with their own labels, in the lab's figure grammar."""


import matplotlib.collections as mcollections
import matplotlib.colors as mcolors
import matplotlib.container as mcontainer
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from ingestlab import captions, direct_labels, figure_checks, figures, models, plots, published
from ingestlab.workloads import group_commit_analysis, published_results_analysis


def _colours(lines):
    return {mcolors.to_hex(line.get_color()) for line in lines}


def test_plot_sweep_draws_a_marked_line_per_hue_with_distinct_colours_for_numbers():
    figures.use_article_theme()
    data = pd.DataFrame({"interval_ms": [10, 50, 100] * 3, "rows_per_s": np.arange(1.0, 10.0),
                         "concurrency": [30] * 3 + [100] * 3 + [500] * 3})
    ax = plots.plot_sweep(data, x="interval_ms", y="rows_per_s", hue="concurrency", annotate=True)
    lines = [line for line in ax.get_lines() if len(line.get_xdata()) == 3]
    assert len(lines) == 3 and len({line.get_marker() for line in lines}) == 3  # a marker each: legible in grey
    # a numeric hue is drawn as categories of the conditions' greys, not as one shade ramp (nor an engine's hue)
    assert _colours(lines) == {c.lower() for c in figures.CONDITION_GREYS[:3]}
    assert len(ax.texts) == 9 and ax.get_ylabel() == "rows per second" and ax.get_xlabel() == "interval (ms)"
    figures.close(ax.figure)


def test_plot_sweep_keeps_text_levels_in_data_order_and_can_leave_out_the_legend():
    data = pd.DataFrame({"model": ["DUPLICATE", "AGGREGATE", "UNIQUE"], "median_ms": [64.0, 59.0, 64.0]})
    ax = plots.plot_sweep(data, x="model", y="median_ms", legend=False)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["DUPLICATE", "AGGREGATE", "UNIQUE"]
    assert ax.get_legend() is None
    figures.close(ax.figure)


def test_plot_bars_on_a_log_axis_draws_labelled_dots_never_bars():
    data = pd.DataFrame({"system": ["a", "b", "c"], "elapsed_s": [0.027, 7.46, 0.369]})
    ax = plots.plot_bars(data, x="elapsed_s", y="system", log=True)
    ax.figure.canvas.draw()
    assert ax.get_xscale() == "log" and not ax.patches
    assert not any(isinstance(c, mcontainer.BarContainer) for c in ax.containers)
    dots = np.concatenate([line.get_xdata() for line in ax.lines if line.get_marker() not in (None, "None", "")])
    assert sorted(dots) == pytest.approx(sorted(data["elapsed_s"]))
    left, right = ax.get_xlim()
    assert left < data["elapsed_s"].min() and right > data["elapsed_s"].max()
    assert sorted(t.get_text() for t in ax.texts) == ["0.0270", "0.369", "7.46"]
    assert figure_checks.grammar_problems(ax.figure) == []
    figures.close(ax.figure)


PER_LOAD = {"overhead": models.Term("overhead_ms", "overhead_ci_low_ms", "overhead_ci_high_ms", "ms per load"),
            "write_time": models.Term("write_time_s", None, None, "s")}


def test_plot_fit_draws_ols_with_its_ci_band_and_no_line_through_two_points_from_the_long_form():
    data = pd.DataFrame({"n_loads": [1e6, 1e5, 1e4, 3e4, 3e3], "total_s": [700.0, 160.0, 100.0, 1900.0, 300.0],
                         "variant": ["async"] * 3 + ["off"] * 2})
    wide = pd.DataFrame({"variant": ["async", "off"], "method": ["ols", "two_point"], "overhead_ms": [0.6, 54.0],
                         "overhead_ci_low_ms": [0.5, np.nan], "overhead_ci_high_ms": [0.7, np.nan],
                         "write_time_s": [100.0, 140.0], "n_points": [3, 2], "model_holds": [True, None]})
    ax = plots.plot_fit(data, models.tidy(wide, model="load_overhead", terms=PER_LOAD), x="n_loads", y="total_s",
                          hue="variant")
    styles = {line.get_label(): line.get_linestyle() for line in ax.get_lines() if line.get_linestyle() != "None"}
    assert styles == {"async: 0.60 ms per load (95 % CI 0.50–0.70; n = 3, rough)": "-"}  # a line: a model that holds
    # two points: a line through them is no test of the model: a marker in its colour, its slope, no line
    assert "off: 54 ms per load (2 points, no CI)\nnot tested, no line" in [t.get_text() for t in ax.get_legend().get_texts()]
    # one shaded band, for the fit that has a CI, and the legend below the axes, clear of the data
    assert sum(isinstance(c, mcollections.PolyCollection) for c in ax.collections) == 1
    assert ax.get_legend().get_bbox_to_anchor().y0 < ax.get_window_extent().y0
    assert ax.get_ylabel() == "total time (s)" and ax.get_xscale() == ax.get_yscale() == "log"
    figures.close(ax.figure)


def test_plot_fit_draws_each_line_over_its_own_data_in_the_data_units_and_no_line_or_band_for_a_rejected_model():
    data = pd.DataFrame({"rows": [10, 20, 40, 100, 200, 400], "elapsed_s": [0.011, 0.012, 0.014, 0.2, 0.4, 0.8],
                         "series": ["a"] * 3 + ["b"] * 3})
    terms = {"per_row": models.Term("per_row_us", "lo", "hi", "µs per row"),
             "overhead": models.Term("overhead_ms", None, None, "ms per batch")}
    wide = pd.DataFrame({"series": ["a", "b"], "method": ["ols", "ols"], "per_row_us": [100.0, 2000.0],
                         "lo": [90.0, 1900.0], "hi": [110.0, 2100.0], "overhead_ms": [10.0, 0.0], "n_points": [3, 3],
                         "model_holds": [True, False]})
    long = models.tidy(wide, model="batch_time", terms=terms).assign(series=["a", "a", "b", "b"])
    ax = plots.plot_fit(data, long, x="rows", y="elapsed_s", hue="series", slope="per_row", intercept="overhead",
                          logy=False)
    lines = {line.get_label().split(":")[0]: line for line in ax.get_lines() if len(line.get_xdata()) > 0}
    assert list(lines) == ["a"]  # b's model was rejected: no line, and no band
    assert sum(isinstance(c, mcollections.PolyCollection) for c in ax.collections) == 1
    a = lines["a"]
    # only over the rows its series measured, never beyond them
    assert (a.get_xdata().min(), a.get_xdata().max()) == (10, 40)
    # µs per row and ms per batch drawn in seconds, the unit of elapsed_s
    assert a.get_ydata() == pytest.approx(0.010 + 100e-6 * a.get_xdata())
    assert a.get_linestyle() == "-"
    # the rejected fit keeps its legend entry: a marker in its colour, its estimate, and why there is no line
    entry = next(h for h, t in zip(*ax.get_legend_handles_labels()) if t.startswith("b: "))
    assert entry.get_label() == "b: 2,000 µs per row (95 % CI 1,900–2,100; n = 3, rough)\nmodel rejected, no line"
    assert entry.get_marker() == figures.markers(["a", "b"])["b"] and entry.get_linestyle() == "None"  # its points' marker
    assert mcolors.same_color(entry.get_color(), figures.palette(["a", "b"])["b"])
    figures.close(ax.figure)


@pytest.mark.parametrize("logy", [False, True])
def test_a_fit_and_its_band_never_change_the_y_limits_the_data_set(logy):
    data = pd.DataFrame({"rows": [10, 20, 40] * 2, "elapsed_s": [1.0, 2.0, 4.0, 1.1, 2.1, 4.2], "series": "a"})
    # a line that runs above every point at 40 rows, and a band from near 0 to far above them
    wide = pd.DataFrame({"series": ["a"], "method": ["ols"], "slope": [0.1], "slope_ci_low": [0.001],
                         "slope_ci_high": [10.0], "intercept": [3.0], "n_points": [6], "model_holds": [True]})
    terms = {"slope": models.Term("slope", "slope_ci_low", "slope_ci_high", "s per row"),
             "intercept": models.Term("intercept", None, None, "s")}
    fitted = plots.plot_fit(data, models.tidy(wide, model="line", terms=terms).assign(series="a"), x="rows",
                              y="elapsed_s", hue="series", slope="slope", intercept="intercept", logy=logy)
    alone = plots.plot_fit(data, models.tidy(pd.DataFrame(), model="line", terms={}), x="rows", y="elapsed_s",
                             hue="series", logy=logy)
    assert fitted.get_ylim() == pytest.approx(alone.get_ylim())  # the data's range, the line and band cut at it
    (line,) = fitted.get_lines()
    low, high = fitted.get_ylim()
    y = line.get_ydata()
    assert np.isnan(y[-1]) and np.nanmax(y) <= high  # the line (7 s at 40 rows) stops where it leaves the axes
    (band,) = [c for c in fitted.collections if isinstance(c, mcollections.PolyCollection)]
    inside = band.get_paths()[0].vertices[:, 1]
    assert inside.min() >= low * (1 - 1e-9) and inside.max() <= high * (1 + 1e-9)  # the band cut at the edges
    assert figure_checks.grammar_problems(fitted.figure) == []
    figures.close(fitted.figure)
    figures.close(alone.figure)


def test_plot_component_sweeps_draws_a_panel_per_factor_with_its_own_axis_label():
    sweeps = published.component_sweeps()
    fig = published_results_analysis.plot_component_sweeps(sweeps)
    assert [ax.get_xlabel() for ax in fig.axes] == ["buckets", "columns", "table model"]
    assert [ax.get_legend() is not None for ax in fig.axes] == [True, False, False]
    model = sweeps[sweeps["factor"] == "model"]
    assert [t.get_text() for t in fig.axes[2].get_xticklabels()] == list(dict.fromkeys(model["level"]))
    assert len(fig.axes[0].texts) == (sweeps["factor"] == "buckets").sum()
    figures.close(fig)


def test_plot_sync_insert_titles_each_insert_size_and_keeps_one_legend():
    sync = published.time_per_request(pd.concat([published.load("doris_group_commit_sync_small_batch"),
                                                 published.load("doris_group_commit_sync_large_batch")]))
    fig = published_results_analysis.plot_sync_insert(sync)
    assert [ax.get_title() for ax in fig.axes] == ["1 row per INSERT", "1,000 rows per INSERT"]
    assert [ax.get_legend() is not None for ax in fig.axes] == [False, True]
    assert all(ax.get_yscale() == "log" for ax in fig.axes)
    figures.close(fig)


def test_plot_scan_times_puts_limit_1_in_its_own_panel():
    scan = published.load("starrocks_csv_scan_times")
    scan = scan.assign(system=scan["engine"] + " · " + scan["stage"])
    fig = published_results_analysis.plot_scan_times(scan)
    assert [ax.get_title() for ax in fig.axes] == ["full scan and COUNT(*)", "LIMIT 1"]
    # dots, not bars, on the log axes: one per system and query, where it was measured
    dots = [x for line in fig.axes[1].get_lines() for x in line.get_xdata()]
    limit_1 = scan[scan["scenario"] == "limit_1"]
    assert sorted(dots) == pytest.approx(sorted(limit_1["elapsed_s"].dropna()))
    assert not fig.axes[1].patches and figure_checks.grammar_problems(fig) == []
    figures.close(fig)


def test_plot_stream_load_shows_throughput_and_the_fit_per_load():
    loads = published.stream_load_batches()
    fits = models.fit_load_overhead(loads, by=["variant", "group_commit_mode", "concurrency"])
    fig = published_results_analysis.plot_stream_load(loads, fits)
    left, right = fig.axes
    assert [ax.get_ylabel() for ax in fig.axes] == ["rows per second", "total time (s)"]
    assert (left.get_xlabel(), right.get_xlabel()) == ("bytes per load", "loads per run")
    assert (left.get_xscale(), left.get_yscale()) == ("log", "log")
    # left: one line per variant through its (bytes per load, rows/s), as the input gives them
    drawn = {frozenset(zip(line.get_xdata(), line.get_ydata())) for line in left.get_lines()}
    assert drawn == {frozenset(zip(g["request_bytes"], g["rows_per_s"])) for _, g in loads.groupby("variant")}
    # right: every run at (loads, total seconds), and each fit's line: write time + loads × overhead
    (points,) = [c for c in right.collections if isinstance(c, mcollections.PathCollection)]
    assert sorted(map(tuple, points.get_offsets().data)) == sorted(zip(loads["n_loads"], loads["total_s"]))
    lines = {line.get_label().split(":")[0]: line for line in right.get_lines()}
    for variant in fits.loc[fits["method"] == "two_point", "variant"]:  # untested: a marker and its slope, no line
        assert len(lines[variant].get_xdata()) == 0 and lines[variant].get_label().endswith("not tested, no line")
    holds = fits["model_holds"] if "model_holds" in fits else pd.Series(None, index=fits.index, dtype=object)
    holding = fits["method"].eq("ols") & holds.map(models.model_holds).eq(True)
    for _, fit in fits[(fits["method"] == "ols") & ~holding].iterrows():  # rejected, or not tested: no line either
        assert len(lines[fit["variant"]].get_xdata()) == 0 and lines[fit["variant"]].get_label().endswith(", no line")
    for _, fit in fits[holding].iterrows():
        x, y = lines[fit["variant"]].get_xdata(), lines[fit["variant"]].get_ydata()
        drawn = np.isfinite(y)  # cut where it leaves the axes
        assert len(x) > 10 and drawn.sum() > 10
        assert y[drawn] == pytest.approx(fit["write_time_s"] + x[drawn] * fit["overhead_ms"] / 1e3)
        stated = float(lines[fit["variant"]].get_label().split(": ")[1].split(" ms per load")[0])
        assert stated == pytest.approx(fit["overhead_ms"], rel=0.01)  # the legend states the overhead, rounded
    (lone,) = fits.loc[fits["method"] == "none", "variant"]
    assert f"{lone} (too few points for a fit)" in lines
    figures.close(fig)


def test_a_straight_line_model_on_a_log_axis_is_drawn_as_a_dense_curve_with_its_ci_band():
    data = pd.DataFrame({"rows": [50, 100, 200] * 2, "elapsed_s": [0.0002, 0.0004, 0.09, 0.001, 0.002, 0.004],
                         "series": ["a"] * 3 + ["b"] * 3})
    wide = pd.DataFrame({"series": ["a", "b"], "method": ["ols"] * 2, "intercept": [-0.03, 0.0],
                         "slope": [5e-4, 2e-5], "slope_ci_low": [1e-4, 1.5e-5], "slope_ci_high": [9e-4, 2.5e-5],
                         "n_points": [3, 3], "model_holds": [True, True]})
    terms = {"slope": models.Term("slope", "slope_ci_low", "slope_ci_high", "s per row"),
             "intercept": models.Term("intercept", None, None, "s")}
    fits = models.tidy(wide, model="line", terms=terms).assign(series=["a", "a", "b", "b"])
    ax = plots.plot_fit(data, fits, x="rows", y="elapsed_s", hue="series", slope="slope", intercept="intercept")
    assert ax.get_yscale() == "log"  # the values span decades
    lines = [line for line in ax.get_lines() if len(line.get_xdata()) > 3]
    assert len(lines) == 2
    # dense enough that the curve a line becomes on a log axis is drawn as one, not as a few bent segments
    assert all(len(line.get_xdata()) >= 100 for line in lines)
    x, y = lines[1].get_xdata(), lines[1].get_ydata()
    assert np.isfinite(y).all() and y == pytest.approx(0.0 + 2e-5 * x)  # the model's own prediction, point by point
    # the part of a line that is ≤ 0 cannot be drawn on a log axis and is left out, not clipped to a floor
    drawn = np.isfinite(lines[0].get_ydata())
    assert (lines[0].get_ydata()[drawn] > 0).all() and lines[0].get_xdata()[drawn].min() > 60
    # a's band runs below zero, so below the log axis: no band (it would cover the panel's bottom), its line solid
    # (no line style says anything else)
    assert lines[0].get_linestyle() == lines[1].get_linestyle() == "-"
    assert sum(isinstance(c, mcollections.PolyCollection) for c in ax.collections) == 1
    assert "no band where its CI runs below the log axis" in ax.get_legend().get_title().get_text()
    assert ax.get_ylabel() == "elapsed (s)" and ax.get_xlabel() == "rows"
    assert all("95 % CI" in t.get_text() for t in ax.get_legend().get_texts())
    figures.close(ax.figure)


def test_linear_axes_unless_the_values_span_decades():
    narrow = pd.DataFrame({"rows": [50, 100, 200] * 2, "elapsed_s": [1.0, 2.0, 4.0, 1.5, 2.5, 4.5],
                           "series": ["a"] * 3 + ["b"] * 3})
    ax = plots.plot_fit(narrow, models.tidy(pd.DataFrame(), model="line", terms={}), x="rows", y="elapsed_s",
                          hue="series")
    assert ax.get_yscale() == "linear"
    figures.close(ax.figure)


@pytest.mark.parametrize("width_in, twos", [(1.6, False), (7.0, True)])
def test_a_log_axis_under_two_decades_ticks_2_and_5_only_where_their_labels_have_room(width_in, twos):
    # 3.4–240 on a short axis printed "100" against "200" (01's live_vs_published in a resumed smoke run)
    fig, ax = plt.subplots(figsize=(width_in, 1.5), layout="constrained")
    ax.plot([3.4, 240], [0, 1], "o")
    plots.set_scale(ax, "x", True, [3.4, 240])
    ax.set_xlim(3.4, 240)
    fig.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text() and 3.4 <= t.get_position()[0] <= 240]
    assert ("200" in ticks) is twos and {"10", "100"} <= set(ticks)
    assert figure_checks._crowded_ticks(fig) == []
    figures.close(fig)


def test_log_ticks_are_plain_numbers_never_powers_or_exponents():
    data = pd.DataFrame({"scenario": ["single_row"] * 3 + ["batch_1000"] * 3,
                         "elapsed_ms": [0.07, 0.08, 0.09, 30.0, 40.0, 150.0], "variant": ["sync_on"] * 6})
    ax = plots.plot_latency(data, hue="variant")
    ax.figure.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert ax.get_xscale() == "log" and "0.1" in ticks and "100" in ticks
    assert not any("e" in t or "^" in t for t in ticks)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1 row per INSERT", "1,000 rows per INSERT"]
    # boxes are outlined in their colour, not filled, so a narrow box on a log axis is not a black bar
    assert all(p.get_facecolor()[3] == 0 for p in ax.patches)
    boxes = [line for line in ax.get_lines() if line.get_marker() in ("", "None")]
    assert _colours(boxes) == {figures.CONDITION_GREYS[0].lower()}  # a condition's colour, never an engine's
    figures.close(ax.figure)


def test_a_legend_under_the_panels_gives_each_engine_a_column_and_puts_the_notes_below():
    """Notebook 04's legend: five PostgreSQL and four MariaDB variants, then notes on the law's lines (one column of
    twelve entries, 7 in wide and a third of the figure's height, before)."""
    from matplotlib.lines import Line2D

    engines = {"PostgreSQL": ["defaults", "commit delay 10 µs", "commit delay 100 µs", "commit delay 1 ms",
                              "synchronous_commit off"],
               "MariaDB": ["defaults", "binary log, synced", "binary log, waits for 8 commits", "log flushed once a second"]}
    names = [f"{e}, {v}" for e, variants in engines.items() for v in variants]
    notes = ["scalability law, 95 % band", captions.wrapped("law rejected, not drawn: 4 of 15 at PostgreSQL, 6 of 12 "
                                                           "at MariaDB", 40)]
    with plt.rc_context():
        figures.use_article_theme()
        fig, _ = plt.subplots(figsize=(7.0, 3.0))
        plots.legend_under(fig, [Line2D([], [])] * (len(names) + 2), names + notes)
        fig.canvas.draw()
        texts = {t.get_text(): t.get_window_extent() for t in fig.legends[0].get_texts() if t.get_text()}
        plt.close(fig)
    columns = {e: {round(texts[n].x0) for n in names if n.startswith(e)} for e in engines}
    assert all(len(x) == 1 for x in columns.values()) and columns["PostgreSQL"] != columns["MariaDB"], columns
    lowest = min(texts[n].y0 for n in names)
    assert all(texts[n].y1 <= lowest + 1 for n in notes)  # the notes under every engine's entries
    assert max(b.x1 for b in texts.values()) - min(b.x0 for b in texts.values()) < 7.0 * 100
    # four engines whose columns do not fit across the page (01's latency): each engine whole, in two columns
    four = ["PostgreSQL, synchronous commit on", "PostgreSQL, synchronous commit off",
            "MariaDB, log flushed at each commit", "MariaDB, log flushed once a second",
            "MariaDB, log written and flushed once a second", "DuckDB, defaults", "ClickHouse, defaults"]
    with plt.rc_context():
        figures.use_article_theme()
        _, laid, ncol = plots.engine_columns([None] * len(four), four)
    assert ncol == 2 and laid == four[:5] + four[5:] + ["", "", ""]


def _log_and_linear_panels(xs, ys):
    # two panels in the lab's theme, the same two points in each: a log time axis, then a linear one
    figures.use_article_theme()
    fig, (log, linear) = plt.subplots(1, 2)
    for ax in (log, linear):
        ax.plot(xs, ys, "o")
    log.set_yscale("log")
    low, high = log.get_ylim()
    log.set_ylim(low, max(high, 10 * low))  # a log axis spans a decade at least (figure_checks)
    return fig, log, linear


def test_a_fit_whose_band_runs_below_a_log_axis_is_drawn_solid_without_it_and_the_key_says_so():
    """06's LIMIT 1 panel: five cost-per-GB CIs around zero, their bands run down to the bottom edge and covered it."""
    grid = np.linspace(0.3, 5.3, 40)
    with plt.rc_context():
        fig, log, linear = _log_and_linear_panels([0.3, 5.3], [0.004, 0.012])
        low = plots.draw_model(log, grid, -0.002, 0.002, 0.001, 0.003, color="k", label=None)
        steep = plots.draw_model(log, grid, 0.004, 0.0015, 0.0014, 0.0016, color="b", label=None)
        kept = plots.draw_model(linear, grid, -0.002, 0.002, 0.001, 0.003, color="k", label=None)
        # a cost resolved above zero whose band runs under the log axis' bottom at the small sizes; on linear axes it is cut
        assert low.get_linestyle() == steep.get_linestyle() == kept.get_linestyle() == "-"
        assert len(log.collections) == 1 and len(linear.collections) == 1  # the steep fit's band; the linear one's
        assert plots.band_note(log) == "no band where its CI runs below the log axis"
        assert plots.band_note(linear) == ""
        assert figure_checks.grammar_problems(fig) == []
        plt.close(fig)


def test_a_fit_whose_slope_ci_takes_in_zero_is_drawn_solid_without_its_band_on_any_axis_and_the_key_says_so():
    """05's bulk panel (linear time axis): four overheads with CIs like −1.4 to 4.5 ms, four bands fanning out from
    their intercepts over each other and the points."""
    grid = np.linspace(1, 100, 40)
    with plt.rc_context():
        fig, log, linear = _log_and_linear_panels([1, 100], [0.7, 1.45])
        unresolved = plots.draw_model(linear, grid, 0.92, 0.0016, -0.0014, 0.0045, color="k", label=None)
        resolved = plots.draw_model(linear, grid, 0.97, 0.0018, 0.0003, 0.0034, color="b", label=None)
        on_log = plots.draw_model(log, grid, 0.92, 0.0016, -0.0014, 0.0045, color="k", label=None)
        assert unresolved.get_linestyle() == on_log.get_linestyle() == resolved.get_linestyle() == "-"
        assert len(linear.collections) == 1 and len(log.collections) == 0  # the resolved fit's band only
        assert plots.band_note(linear) == plots.band_note(log) == "no band where its CI takes in zero"
        both = plots.draw_model(log, grid, -0.5, 0.01, 0.005, 0.015, color="b", label=None)
        assert both.get_linestyle() == "-"  # resolved, its band under the log axis: solid, no band
        assert plots.band_note(log) == "no band where its CI takes in zero or runs below the log axis"
        assert figure_checks.grammar_problems(fig) == []
        plt.close(fig)


def test_a_panel_with_a_fit_without_its_band_says_why_over_its_labels_even_when_not_the_first():
    """03's fit: RocksDB's blind overwrite, its band left out in the second of three panels, was explained nowhere."""
    data = pd.DataFrame({"n_loads": [1e2, 1e3, 1e4] * 2, "total_s": [0.01, 0.012, 0.011, 0.02, 0.2, 2.0],
                         "variant": ["flat"] * 3 + ["steep"] * 3})
    wide = pd.DataFrame({"variant": ["flat", "steep"], "method": ["ols", "ols"], "overhead_ms": [0.0001, 0.2],
                         "overhead_ci_low_ms": [-0.001, 0.19], "overhead_ci_high_ms": [0.0012, 0.21],
                         "write_time_s": [0.011, 0.0], "n_points": [3, 3], "model_holds": [True, True]})
    fits = models.tidy(wide, model="load_overhead", terms=PER_LOAD)
    with plt.rc_context():
        figures.use_article_theme()
        for explain, said in ((False, "no band where its CI takes in zero"),
                              (True, "95 % CI of its overhead; no band where its CI takes in zero")):
            ax = plots.plot_fit(data, fits, x="n_loads", y="total_s", hue="variant", legend="ends", explain=explain,
                                  logx=True, logy=True)
            assert [line.get_linestyle() for line in ax.lines if len(line.get_xdata()) > 3] == ["-", "-"]
            (ends,) = [a for a in ax.artists if isinstance(a, direct_labels.EndLabels)]
            assert said in ends.note.get_text().replace("\n", " ")
            figures.close(ax.figure)


def test_three_stacked_panels_whose_lower_fits_lose_their_band_still_fit_the_page():
    """03's fit in CI: a band-less note above each lower panel, each given room by the layout: 5.81 in tall."""
    rng = np.random.default_rng(3)
    rows = np.repeat([50, 100, 200], 3)
    wide = pd.DataFrame({"variant": ["a", "b"], "method": ["ols", "ols"], "overhead_ms": [0.05, 0.001],
                         "overhead_ci_low_ms": [0.04, -0.002], "overhead_ci_high_ms": [0.06, 0.004],
                         "write_time_s": [0.001, 0.002], "n_points": [9, 9], "model_holds": [True, True]})
    with plt.rc_context():
        figures.use_article_theme()
        fig, axes = plt.subplots(3, 1, figsize=(figures.PAGE_WIDTH, 2.6 * 3), layout="constrained")
        for number, ax in enumerate(axes):
            data = pd.DataFrame({"n_loads": np.tile(rows, 2), "total_s": np.r_[0.001 + 5e-5 * rows, 0.002 + 1e-6 * rows]
                                 * rng.normal(1, 0.02, 2 * len(rows)), "variant": ["a"] * 9 + ["b"] * 9})
            plots.plot_fit(data, models.tidy(wide, model="load_overhead", terms=PER_LOAD), x="n_loads", y="total_s",
                           hue="variant", ax=ax, legend="ends", explain=number == 0, logx=False, logy=False)
        box = captions.fit_to_print(fig)
        assert box.height <= figures.TALLEST[figures.PAGE_WIDTH] and captions.cramped(fig) == []
        notes = [a.note for ax in axes for a in ax.artists if isinstance(a, direct_labels.EndLabels)]
        assert [n.get_in_layout() for n in notes] == [True, False, False]  # the top panel's note alone takes room
        assert "no band where its CI takes in zero" in notes[1].get_text().replace("\n", " ")
        figures.close(fig)


def test_the_latency_boxes_keep_the_width_their_legend_goes_under_them():
    data = pd.DataFrame({"scenario": ["single_row"] * 6, "elapsed_ms": [0.1, 0.2, 0.3, 0.2, 0.3, 0.4],
                         "series": ["MariaDB, log written at commit, flushed each second"] * 3
                         + ["MariaDB, log flushed at each commit"] * 3})
    fig, ax = plt.subplots(figsize=(7.0, 2.0))
    plots.plot_latency(data, hue="series", ax=ax)
    fig.canvas.draw()
    legend, axes = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.y1 < axes.y0 and legend.x1 - legend.x0 < fig.bbox.width  # under the axes, within the figure
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(dict.fromkeys(data["series"]))
    figures.close(fig)


def test_a_log_axis_asked_for_values_within_a_decade_is_linear_with_distinct_round_ticks():
    data = pd.DataFrame({"clients": [1, 4] * 2, "commits_per_flush": [0.996, 1.82, 1.0, 1.83],
                         "variant": ["default"] * 2 + ["commit_delay_100"] * 2, "rows_per_insert": [1] * 4})
    fig = group_commit_analysis.plot_by_clients(data, y="commits_per_flush", logy=True)
    fig.canvas.draw()
    assert fig.axes[0].get_yscale() == fig.axes[0].get_xscale() == "linear"  # 1 to 4 clients, 1.0 to 1.8
    low, high = fig.axes[0].get_ylim()
    shown = [t.get_text() for t in fig.axes[0].get_yticklabels() if low <= t.get_position()[1] <= high]
    assert len(shown) >= 3 and len(set(shown)) == len(shown)
    assert figure_checks.grammar_problems(fig) == []
    assert fig.axes[0].get_title() == "rows per INSERT: 1"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["defaults", "commit_delay 100 µs"]  # under the panels
    figures.close(fig)


def test_plot_fit_can_name_each_line_at_its_end_with_its_slope_instead_of_a_legend():
    data = pd.DataFrame({"n_loads": [1e6, 1e5, 1e4, 3e4, 3e3, 2e3], "total_s": [700.0, 160.0, 100.0, 1900.0, 300.0, 9],
                         "variant": ["async"] * 3 + ["off"] * 2 + ["lone"]})
    wide = pd.DataFrame({"variant": ["async", "off"], "method": ["ols", "two_point"], "overhead_ms": [0.6, 54.0],
                         "overhead_ci_low_ms": [0.5, np.nan], "overhead_ci_high_ms": [0.7, np.nan],
                         "write_time_s": [100.0, 140.0], "n_points": [3, 2], "model_holds": [True, None]})
    ax = plots.plot_fit(data, models.tidy(wide, model="load_overhead", terms=PER_LOAD), x="n_loads", y="total_s",
                          hue="variant", legend="ends")
    assert ax.get_legend() is None
    (ends,) = [a for a in ax.artists if isinstance(a, direct_labels.EndLabels)]
    texts = {label.get_text().split("\n")[0]: label for label in ends.labels}
    assert [t.get_text() for t in texts.values()] == ["async\n0.60 ms (0.50–0.70)", "off\n54 ms per load, 2 points, no line",
                                                       "lone\ntoo few points for a fit"]
    line = next(line for line in ax.get_lines() if line.get_label().startswith("async"))
    assert texts["async"].xy == direct_labels.line_end(line)  # the label names the point where its line ends
    assert texts["lone"].xy == (2e3, 9)  # no line: its last point
    assert "95 % CI of its overhead" in ends.note.get_text().replace("\n", " ")
    figures.close(ax.figure)


@pytest.mark.parametrize("log", [True, False])
def test_a_dot_plot_or_bar_chart_of_many_two_line_names_is_tall_enough_to_print_them_apart(log):
    """04's speed-ups beside the Doris study: 20 rows named on two lines in a figure of the theme's height, every name
    printed over its neighbours (the promoted figure too: nothing checked tick labels then)."""
    names = [f"MariaDB binary log, waits for {k} commits: 100 rows per INSERT over 1, 1 client" for k in range(20)]
    data = pd.DataFrame({"quantity": names, "speedup": np.geomspace(0.5, 90, 20) if log else np.linspace(1, 9, 20),
                         "source": ["live (this run)"] * 20})
    with plt.rc_context():
        figures.use_article_theme()
        ax = plots.plot_bars(data, x="speedup", y="quantity", hue="source", log=log)
        try:
            assert figure_checks.grammar_problems(ax.figure) == []
            assert ax.figure.get_figheight() <= 9.0
        finally:
            plt.close(ax.figure)


def test_bars_of_an_engine_are_filled_in_the_engine_s_own_colour():
    # 05's versions figure as bars (its values within a decade): seaborn had greyed DuckDB's #E69F00 to #c9941d
    import matplotlib.colors

    data = pd.DataFrame({"load": ["a", "b"] * 2, "rows_per_s": [1.0, 2.0, 1.5, 2.5],
                         "system": ["duckdb", "duckdb", "postgres", "postgres"]})
    ax = plots.plot_bars(data, x="rows_per_s", y="load", hue="system", log=True)
    expected = {matplotlib.colors.to_hex(c) for c in plots.palette(["DuckDB", "PostgreSQL"]).values()}
    filled = {matplotlib.colors.to_hex(bar.get_facecolor()) for bars in ax.containers for bar in bars}
    assert ax.get_xscale() == "linear" and filled == expected
    plt.close(ax.figure)


def test_a_sweep_s_style_levels_take_the_lab_s_condition_markers_never_the_failed_run_s_cross():
    """seaborn's own markers put "X" on Doris' second planner setting in 00: the lab's mark of a run that did not finish."""
    data = pd.DataFrame({"interval": [10, 20] * 4, "rows_per_s": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
                         "clients": [30, 30, 30, 30, 100, 100, 100, 100], "planner": ["on", "on", "off", "off"] * 2})
    ax = plots.plot_sweep(data, x="interval", y="rows_per_s", hue="clients", style="planner")
    shapes = {line.get_marker() for line in ax.get_lines() if len(line.get_xdata()) > 1}
    assert shapes == set(figures.CONDITION_MARKERS[:2]) and plots.FAILED_MARKER not in shapes
    figures.close(ax.figure)


def test_beyond_two_engines_the_clients_grid_turns_an_engine_a_column_its_variants_under_it():
    rows = [{"engine": engine, "variant": variant, "clients": clients, "rows_per_insert": level,
             "commits_per_flush": clients * (1.0 + i)}
            for engine in ("postgres", "mariadb", "galera", "postgres_replicated")
            for i, variant in enumerate(("default", "flush_2" if "a" in engine[:2] else "sync_off"))
            for clients in (1, 4, 16, 64) for level in (1, 10, 100)]
    fig = group_commit_analysis.plot_by_clients(pd.DataFrame(rows), y="commits_per_flush", logy=True)
    fig.canvas.draw()
    grid = np.asarray(fig.axes[:12], dtype=object).reshape(3, 4)  # a level a row, an engine a column
    assert [ax.get_title() for ax in grid[0]] == ["PostgreSQL", "MariaDB", "MariaDB Galera",
                                                 "PostgreSQL + 1\nsync standby"]
    assert [t.get_text() for ax in grid[:, -1] for t in ax.texts] == ["rows per\nINSERT: 1", "rows per\nINSERT: 10",
                                                                    "rows per\nINSERT: 100"]
    assert not fig.legends  # each engine's legend under its column, its variants named without the engine
    legends = [ax.get_legend() for ax in grid[-1]]
    assert [[t.get_text() for t in legend.get_texts()] for legend in legends] == [
        ["defaults", "synchronous commit\noff"], ["defaults", "log flushed once a\nsecond"],
        ["defaults", "log flushed once a\nsecond"], ["defaults", "synchronous commit\noff"]]
    for ax, legend in zip(grid[-1], legends):  # under its panel's axis label, within its column
        box, panel = legend.get_window_extent(), ax.get_tightbbox(bbox_extra_artists=[])
        assert box.y1 <= panel.y0 + 1 and panel.x0 - 5 <= (box.x0 + box.x1) / 2 <= panel.x1 + 5
    assert figure_checks.grammar_problems(fig) == []
    figures.close(fig)


def test_a_stacked_bar_s_parts_past_four_greys_repeat_a_grey_hatched_each_its_own_in_the_legend():
    data = pd.DataFrame({"variant": ["on"] * 6, "component": [f"part {i}" for i in range(6)], "ms": [1.0] * 6})
    ax = plots.plot_stacked(data, x="ms", y="variant", hue="component")
    bars = [c for c in ax.containers if isinstance(c, mcontainer.BarContainer)]
    looks = [(mcolors.to_hex(c[0].get_facecolor()), c[0].get_hatch() or "") for c in bars]
    assert len(set(looks)) == 6 and {h for _, h in looks[:4]} == {""} and all(h for _, h in looks[4:])
    assert all(not figure_checks.engine_of(str(c)) and len(set(mcolors.to_rgb(c))) == 1 for c, _ in looks)  # greys
    legend = ax.get_legend()
    assert [(mcolors.to_hex(p.get_facecolor()), p.get_hatch() or "") for p in legend.get_patches()] == looks
    figures.close(ax.figure)
