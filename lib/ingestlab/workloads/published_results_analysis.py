"""Notebook 00's analysis: the sentences it states about each study's table, and its headline numbers."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd

from ingestlab import figures, labels, models, plots, report
from ingestlab.workloads.published_results import NOTEBOOK_STEM


def _ols(fits: pd.DataFrame) -> pd.DataFrame:
    # the fits with a CI, one row per variant
    return fits[fits["method"] == "ols"].set_index("variant")


def describe_overhead_fits(fits: pd.DataFrame, points: pd.DataFrame, *, alpha: float = 0.05) -> report.Markdown:
    """One paragraph per OLS overhead fit: overhead and write time with CIs, R², the study's median.

    Parameters
    ----------
    fits : pandas.DataFrame
        :func:`ingestlab.models.fit_overhead` of :func:`overhead_points`, with ``variant``.
    points : pandas.DataFrame
        :func:`overhead_points` (its ``single_row`` rows give the study's median INSERT).
    alpha : float
        1 − the confidence level of the fits' CIs.

    Returns
    -------
    report.Markdown
        ``**<variant>**: <overhead> ms per statement (95 % CI …), write time …``.
    """
    single = points[points["scenario"] == "single_row"].set_index("variant")["median_ms"]
    return report.markdown(
        f"**{v}**: {report.format_estimate_from(r, 'overhead_ms', unit='ms per statement', digits=1, ci=1 - alpha)}, "
        f"write time {report.format_estimate_from(r, 'write_time_s', unit='s', digits=3, ci=1 - alpha)}, "
        f"R² {r.r2:.6f}; the seed's median single-row INSERT: {single[v]:g} ms"
        for v, r in _ols(fits).iterrows())


def describe_scale(diff: dict, scale: pd.DataFrame, *, a: str, b: str, alpha: float = 0.05) -> report.Markdown:
    """The overhead difference of two variants and what it adds up to at the scale table's largest N.

    Parameters
    ----------
    diff : dict
        :func:`ingestlab.models.overhead_difference` of variant ``a`` minus variant ``b``.
    scale : pandas.DataFrame
        :func:`ingestlab.models.scale_table` of ``diff`` with the study's ``extra_printed``.
    a, b : str
        The two variants' labels.
    alpha : float
        1 − the confidence level of the difference's CI.

    Returns
    -------
    report.Markdown
        One sentence.
    """
    last = scale.iloc[-1]
    extra = report.format_estimate(diff["diff_ms"], diff["diff_ci_low_ms"], diff["diff_ci_high_ms"], digits=1,
                                   ci=1 - alpha)
    return report.markdown(
        f"{a[:1].upper() + a[1:]} pays {extra} more per statement than {b}, {diff['ratio']:.2f}× its overhead; "
        f"over {last['n_statements']:,} statements that is {last['extra_s'] / 60:.0f} min "
        f"(printed: {last['extra_printed']}).")


def describe_profile_split(split: pd.DataFrame, fits: pd.DataFrame) -> report.Markdown:
    """The profile medians per deployment, and shared-nothing − shared-data beside the fits' difference.

    Parameters
    ----------
    split : pandas.DataFrame
        :func:`profile_split`.
    fits : pandas.DataFrame
        The overhead fits of :func:`describe_overhead_fits`, whose variants include both of
        ``split``'s.

    Returns
    -------
    report.Markdown
        A paragraph per deployment, then the differences.
    """
    sd, sn = (split.set_index("deployment").loc[d] for d in ("shared-data", "shared-nothing"))
    ols = _ols(fits)
    fit_diff = ols.loc[sn["variant"], "overhead_ms"] - ols.loc[sd["variant"], "overhead_ms"]
    lines = [f"**{r.variant}**: TotalTime {r.total_time_ms:g} ms = ExecutionTime {r.execution_time_ms:g} ms "
             f"+ FE {r.fe_overhead_ms:.1f} ms (printed: {r.fe_overhead_printed_ms:g}); OLAP_TABLE_SINK "
             f"{r.olap_table_sink_ms:g} ms, {100 * r.olap_table_sink_ms / r.total_time_ms:.2f} % of TotalTime; "
             f"client wall clock {r.client_wall_clock_ms:g} ms" for r in split.itertuples()]
    lines.append(f"Shared-nothing − shared-data: FE {sn['fe_overhead_ms'] - sd['fe_overhead_ms']:+.1f} ms, "
                 f"execution {sn['execution_time_ms'] - sd['execution_time_ms']:+.1f} ms, "
                 f"TotalTime {sn['total_time_ms'] - sd['total_time_ms']:+.1f} ms; the two {sd['version']} fits of §1 "
                 f"differ by {fit_diff:+.1f} ms per statement.")
    return report.markdown(lines)


def describe_component_slopes(slopes: pd.DataFrame, sweeps: pd.DataFrame, fits: pd.DataFrame) -> report.Markdown:
    """The numeric sweeps' slopes beside the study's per-unit costs, and the table model's spread.

    Parameters
    ----------
    slopes : pandas.DataFrame
        :func:`ingestlab.models.fit_sweep` of the numeric factors of ``sweeps`` by deployment
        and factor, with the study's ``delta_printed``, ``per_unit`` and ``per_unit_printed``
        (``starrocks_component_effects``).
    sweeps : pandas.DataFrame
        :func:`component_sweeps`.
    fits : pandas.DataFrame
        The overhead fits of :func:`describe_overhead_fits` (the single-row overhead range).

    Returns
    -------
    report.Markdown
        An introduction, a paragraph per slope, then the table model.
    """
    spread = sweeps[sweeps["factor"] == "model"].groupby("deployment")["median_ms"].agg(lambda s: s.max() - s.min())
    overhead = _ols(fits)["overhead_ms"]
    points = " or ".join(map(str, sorted(slopes["n_points"].unique())))
    lines = [f"The numeric sweeps print {points} points each (fitted as: {', '.join(slopes['method'].unique())}), "
             "too few for a CI; the line through the printed medians:"]
    lines += [f"**{r.deployment}, {r.factor}**: {r.slope:+.3f} ms per {r.per_unit} "
              f"(seed: {r.per_unit_printed}; {r.delta_printed} over the sweep)" for r in slopes.itertuples()]
    lines.append("Table model (3 categories, no slope): the medians span "
                 + ", ".join(f"{v:g} ms ({d})" for d, v in spread.items())
                 + f", against a single-row overhead of {overhead.min():.0f}–{overhead.max():.0f} ms (§1).")
    return report.markdown(lines)


def describe_upsert_ratios(ratios: pd.DataFrame) -> report.Markdown:
    """Per engine: the overwrite ÷ insert batch time at the mean, the median and its range over the statistics.

    Parameters
    ----------
    ratios : pandas.DataFrame
        :func:`ingestlab.models.ratio_table` of ``arangodb_upsert_batch_times`` by
        ``engine`` and ``statistic``.

    Returns
    -------
    report.Markdown
        A paragraph per engine.
    """
    by_stat = ratios.pivot(index="engine", columns="statistic", values="ratio")
    return report.markdown(
        f"**{e}**: the mean overwrite batch takes {r['mean']:.1f}× the mean insert batch, the median "
        f"{r['median']:.1f}×; across the six statistics {r.min():.1f}× ({r.idxmin()}) to {r.max():.1f}× ({r.idxmax()})."
        for e, r in by_stat.iterrows())


def describe_csv_scan(scan: pd.DataFrame, speedup: pd.DataFrame) -> report.Markdown:
    """Per query: StarRocks' times over the fixes, the other engines', and the times on OSS.

    Parameters
    ----------
    scan : pandas.DataFrame
        ``starrocks_csv_scan_times`` with ``system`` (``"<engine> · <stage>"``).
    speedup : pandas.DataFrame
        StarRocks' initial ÷ final time on HDFS (:func:`ingestlab.models.ratio_table`),
        indexed by ``scenario``.

    Returns
    -------
    report.Markdown
        A paragraph per query.
    """
    times = scan.pivot_table(index="system", columns="scenario", values="elapsed_s", sort=False)
    stages = scan.loc[(scan["engine"] == "StarRocks") & (scan["storage"] == "hdfs"), "system"].unique()
    others = [s for s in times.index if not s.startswith("StarRocks") and "oss" not in s]
    oss = [s for s in times.index if s.endswith("oss")]

    def engines(systems, q):
        return ", ".join(f"{s.split(' · ')[0]} {times.loc[s, q]:g} s" for s in systems)

    return report.markdown(
        f"**{q}**: StarRocks " + " → ".join(f"{times.loc[s, q]:g}" for s in stages)
        + f" s over the two fixes (before ÷ after: {speedup.loc[q, 'ratio']:.2f}); {engines(others, q)}"
        + f"; on OSS {engines(oss, q)}" for q in times.columns)


def describe_peak_memory(memory: pd.DataFrame) -> report.Markdown:
    """Each engine's peak memory, as printed, and as a multiple of the least.

    Parameters
    ----------
    memory : pandas.DataFrame
        ``starrocks_csv_peak_memory``.

    Returns
    -------
    report.Markdown
        One sentence.
    """
    least = memory.loc[memory["peak_mb"].idxmin()]
    return report.markdown("Peak memory: " + ", ".join(
        f"{r.engine} {r.peak_mb:g} MB (printed {r.peak_printed}, {r.peak_mb / least['peak_mb']:.2f}× {least['engine']})"
        for r in memory.itertuples()) + ".")


def describe_load_fits(loads: pd.DataFrame, load_fits: pd.DataFrame, *, alpha: float = 0.05) -> report.Markdown:
    """The Stream Load runs' sizes, each group's cost per load and what group commit saves.

    Parameters
    ----------
    loads : pandas.DataFrame
        :func:`stream_load_batches`.
    load_fits : pandas.DataFrame
        :func:`ingestlab.models.fit_load_overhead` of ``loads`` by ``variant``,
        ``group_commit_mode`` and ``concurrency``.
    alpha : float
        1 − the confidence level of the fits' CIs.

    Returns
    -------
    report.Markdown
        The sizes, a paragraph per group (OLS, two points or no fit), then the comparison.
    """
    ci = 1 - alpha
    saving = models.ratio_table(load_fits, value="overhead_ms", between="group_commit_mode", a="off", b="async",
                                by=["concurrency"])
    lines = [f"Rows per run {loads['total_rows'].min() / 1e6:.3f}–{loads['total_rows'].max() / 1e6:.3f} M; "
             f"{loads['bytes_per_row'].iloc[0]:.1f} bytes per row, so a load carries "
             f"{loads['rows_per_load'].min():.0f}–{loads['rows_per_load'].max():,.0f} rows."]
    lines += [f"**{r.variant}**: "
              f"{report.format_estimate_from(r, 'overhead_ms', unit='ms per load', digits=3, ci=ci)}, "
              f"write time {report.format_estimate_from(r, 'write_time_s', unit='s', digits=0, ci=ci)}, "
              f"R² {r.r2:.4f}, {r.n_points} points; a client waits about {r.overhead_ms * r.concurrency:.1f} ms per load"
              for _, r in load_fits[load_fits["method"] == "ols"].iterrows()]
    lines += [f"**{r.variant}**: {r.n_points} point{'s' if r.n_points > 1 else ''} — "
              + (f"the line through them gives {r.overhead_ms:.1f} ms per load, no CI" if r.method == "two_point"
                 else "no fit")
              for r in load_fits[load_fits["method"] != "ols"].itertuples()]
    lines.append("; ".join(f"Without group commit one load costs {r.ratio:.0f}× what it costs with it "
                           f"({r.concurrency} clients)" for r in saving.itertuples())
                 + f". The cluster tops out at {loads['rows_per_s'].max():,.0f} rows/s.")
    return report.markdown(lines)


def describe_interval_fits(sync: pd.DataFrame, interval_fits: pd.DataFrame, *, alpha: float = 0.05
                           ) -> report.Markdown:
    """The sync INSERT's time against the commit interval: the 1-row fits, the large INSERT's and the planner.

    Parameters
    ----------
    sync : pandas.DataFrame
        Both sync-mode tables with ``request_ms`` (:func:`time_per_request`).
    interval_fits : pandas.DataFrame
        :func:`ingestlab.models.fit_sweep` of ``request_ms`` on ``group_commit_interval_ms``
        by ``rows_per_insert``, ``concurrency`` and ``nereids_planner``.
    alpha : float
        1 − the confidence level of the slopes' CIs.

    Returns
    -------
    report.Markdown
        A paragraph per smallest-INSERT group, then the largest INSERT's summary.
    """
    sizes = sync["rows_per_insert"]
    small = interval_fits[interval_fits["rows_per_insert"] == sizes.min()]
    large = interval_fits[interval_fits["rows_per_insert"] == sizes.max()]
    planner = models.ratio_table(sync[sizes == sizes.max()], value="rows_per_s", between="nereids_planner",
                                 a=False, b=True, by=["concurrency", "group_commit_interval_ms"])
    lines = [f"**{r.rows_per_insert}-row INSERT, {r.concurrency} clients, Nereids {'on' if r.nereids_planner else 'off'}**: "
             f"{r.intercept:.0f} ms + "
             f"{report.format_estimate_from(r, 'slope', unit='', digits=2, ci=1 - alpha)} × interval, R² {r.r2:.3f}"
             for _, r in small.iterrows()]
    covers_zero = (large["slope_ci_low"] <= 0) & (large["slope_ci_high"] >= 0)
    lines.append(f"For {large['rows_per_insert'].iloc[0]:,}-row INSERTs the interval's slope CI includes 0 in "
                 f"{covers_zero.sum()} of {len(large)} groups (R² {large['r2'].min():.2f}–{large['r2'].max():.2f}); "
                 f"the planner matters more: without Nereids rows/s are "
                 f"{planner['ratio'].min():.1f}–{planner['ratio'].max():.1f}× those with it. Only "
                 f"{sizes.nunique()} INSERT sizes are printed, so overhead + rows × per-row cost is not fitted.")
    return report.markdown(lines)


def describe_jdbc(jdbc: pd.DataFrame, examples: pd.DataFrame) -> report.Markdown:
    """JDBC throughput per concurrency, and the example loads' sync against async wait.

    Parameters
    ----------
    jdbc : pandas.DataFrame
        ``doris_group_commit_jdbc`` with ``request_ms`` (:func:`time_per_request`).
    examples : pandas.DataFrame
        ``doris_group_commit_examples``.

    Returns
    -------
    report.Markdown
        One paragraph.
    """
    waits = models.ratio_table(examples.dropna(subset=["load_ms"]), value="load_ms", between="group_commit_mode",
                               a="sync", b="async", by=["interface"])
    return report.markdown(
        f"JDBC, {jdbc['rows_per_insert'].iloc[0]} rows per INSERT (one size, so no per-row fit): "
        + ", ".join(f"{r.rows_per_s:,.0f} rows/s at {r.concurrency} clients ({r.request_ms:.1f} ms per INSERT)"
                    for r in jdbc.itertuples())
        + ". Example loads of 2 rows: " + "; ".join(f"{r['interface']} sync {r['sync']:g} ms vs async {r['async']:g} ms"
                                                   for _, r in waits.iterrows())
        + " — a sync load waits for its group's commit.")


def describe_docdb(docdb: pd.DataFrame) -> report.Markdown:
    """DocDB entries per SQL row with and without packed rows.

    Parameters
    ----------
    docdb : pandas.DataFrame
        ``yugabytedb_docdb_rows_inserted`` with ``docdb_entries_per_row``.

    Returns
    -------
    report.Markdown
        One sentence.
    """
    return report.markdown(f"DocDB entries per SQL row of {docdb['n_columns'].iloc[0]} columns: "
                           + ", ".join(f"{r.scenario} {r.docdb_entries_per_row:g}" for r in docdb.itertuples()) + ".")


def headline(*, fits: pd.DataFrame, diff: dict, split: pd.DataFrame, ratios: pd.DataFrame, speedup: pd.DataFrame,
             load_fits: pd.DataFrame, interval_fits: pd.DataFrame) -> dict[str, float | list[float]]:
    """The headline numbers of the published results, for :meth:`ingestlab.results.Run.finish`.

    Parameters
    ----------
    fits, diff, split, ratios, speedup, load_fits, interval_fits
        The tables of :func:`describe_overhead_fits`, :func:`describe_scale`,
        :func:`describe_profile_split`, :func:`describe_upsert_ratios`,
        :func:`describe_csv_scan`, :func:`describe_load_fits` and :func:`describe_interval_fits`.

    Returns
    -------
    dict
        StarRocks' overheads (with CI bounds) and the shared-nothing extra, the FE overheads,
        the upsert ÷ insert mean ratios, the CSV full-scan speedup, the Doris per-load costs
        and the 1-row sync INSERTs' interval slopes.
    """
    small = interval_fits[interval_fits["rows_per_insert"] == interval_fits["rows_per_insert"].min()]
    return {
        **report.headline_from(_ols(fits), "starrocks_overhead_ms[{variant}]",
                               ["overhead_ms", "overhead_ci_low_ms", "overhead_ci_high_ms"]),
        "starrocks_shared_nothing_extra_ms": [float(diff[k]) for k in ("diff_ms", "diff_ci_low_ms", "diff_ci_high_ms")],
        **report.headline_from(split, "starrocks_fe_overhead_ms[{variant}]", "fe_overhead_ms"),
        **report.headline_from(ratios[ratios["statistic"] == "mean"], "upsert_vs_insert_mean_ratio[{engine}]", "ratio"),
        "starrocks_csv_full_scan_speedup": float(speedup.loc["full_scan_order_by_limit_1", "ratio"]),
        **report.headline_from(load_fits.dropna(subset=["overhead_ms"]), "doris_stream_load_overhead_ms[{variant}]",
                               "overhead_ms"),
        **report.headline_from(small.assign(nereids=small["nereids_planner"].map({True: "on", False: "off"})),
                               "doris_sync_1row_interval_slope[{concurrency} clients, nereids {nereids}]", "slope"),
    }


def tidy_fits(fits: pd.DataFrame) -> pd.DataFrame:
    """Notebook 00's overhead fits of the study's tables in the lab's long form (``fits.csv``)."""
    return models.tidy(fits, model="overhead", terms=models.OVERHEAD_TERMS, notebook=NOTEBOOK_STEM)


# -- figures ---------------------------------------------------------------------------------
def _of_one_engine(data: pd.DataFrame) -> contextlib.AbstractContextManager:
    """Series drawn as conditions of the one engine ``data`` holds (:func:`ingestlab.figures.conditions_of`)."""
    engines = data["engine"].dropna().unique() if "engine" in data else []
    return figures.conditions_of(engines[0]) if len(engines) == 1 else contextlib.nullcontext()


def plot_overhead_fit(points: pd.DataFrame, fits: pd.DataFrame, *, hue: str = "variant") -> matplotlib.figure.Figure:
    """Total time against statements with each configuration's fitted overhead (:func:`ingestlab.plots.plot_fit`).

    ``points`` is :func:`ingestlab.published.overhead_points`, ``fits`` the fits of
    :func:`ingestlab.models.fit_overhead` with a ``hue`` column; one engine's configurations are
    drawn in its colour, told apart by shade and marker.
    """
    with _of_one_engine(points):
        return plots.plot_fit(points, tidy_fits(fits), x="n_statements", y="total_s", hue=hue).figure


def plot_component_sweeps(data: pd.DataFrame, *, y: str = "median_ms", hue: str | None = "deployment",
                          col: str = "factor") -> matplotlib.figure.Figure:
    """One :func:`plot_sweep` panel per swept table parameter, sharing the ``y`` axis.

    ``data`` is :func:`ingestlab.published.component_sweeps`: a numeric factor (buckets,
    columns) is drawn to scale over ``level_value``, the table model as categories over
    ``level``. Each point carries its value; the legend sits in the first panel.

    Returns
    -------
    matplotlib.figure.Figure
        A row of panels, one per level of ``col``.
    """
    fig, panels = plots.panels(data, col, figsize=(figures.PAGE_WIDTH, 3.4), sharey=True, layout="constrained")
    for i, (ax, factor, part) in enumerate(panels):
        numeric = part["level_value"].notna().all()
        with _of_one_engine(data):
            plots.plot_sweep(part, x="level_value" if numeric else "level", y=y, hue=hue, ax=ax, annotate=True,
                             legend=i == 0, fmt="{:.0f}")
        ax.set_xlabel(labels.label(factor) if numeric else "table model")
        ax.tick_params(axis="x", labelrotation=20 if not numeric else 0)
    return fig


def plot_sync_insert(data: pd.DataFrame, *, x: str = "group_commit_interval_ms", y: str = "rows_per_s",
                     hue: str | None = "concurrency", style: str | None = "nereids_planner",
                     col: str = "rows_per_insert") -> matplotlib.figure.Figure:
    """One :func:`plot_sweep` panel (log ``y``) per INSERT size, titled with it; the legend right of the last.

    Returns
    -------
    matplotlib.figure.Figure
        A row of panels, one per level of ``col`` (rows per INSERT), smallest first.
    """
    fig, panels = plots.panels(data.sort_values(col, kind="stable"), col, figsize=(figures.PAGE_WIDTH, 3.4),
                               layout="constrained")
    for i, (ax, rows, part) in enumerate(panels):
        with _of_one_engine(data):
            plots.plot_sweep(part, x=x, y=y, hue=hue, style=style, ax=ax, logy=True,
                             legend="outside" if i == len(panels) - 1 else False)
        ax.set_title(f"{rows:,} row{'s' if rows > 1 else ''} per INSERT")
    return fig


def plot_scan_times(data: pd.DataFrame, *, x: str = "elapsed_s", y: str = "system", hue: str = "scenario",
                    apart: str = "limit_1") -> matplotlib.figure.Figure:
    """Scan times as :func:`plot_bars` on log axes: the ``hue`` levels, and the level ``apart`` beside them.

    The ``LIMIT 1`` query runs in a fraction of the full scan's time, so it gets its own
    panel (and no ``hue``) rather than a bar too short to read.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels sharing the ``y`` categories: "full scan and COUNT(*)" and "LIMIT 1".
    """
    fig, axes = plt.subplots(1, 2, figsize=(figures.PAGE_WIDTH, 4.0), sharey=True, gridspec_kw={"width_ratios": [2, 1]},
                             layout="constrained")
    plots.plot_bars(data[data[hue] != apart], x=x, y=y, hue=hue, ax=axes[0], log=True)
    plots.plot_bars(data[data[hue] == apart], x=x, y=y, ax=axes[1], log=True)
    axes[0].set_title("full scan and COUNT(*)")
    axes[1].set_title(labels.label(apart))
    return fig


#: The Stream Load fit's terms: a fixed cost per load, and the write time.
LOAD_TERMS = {"overhead": models.Term("overhead_ms", "overhead_ci_low_ms", "overhead_ci_high_ms", "ms per load"),
              "write_time": models.OVERHEAD_TERMS["write_time"]}


def stream_load_fits(fits: pd.DataFrame) -> pd.DataFrame:
    """:func:`ingestlab.models.fit_load_overhead`'s fits in the lab's long form (``overhead``: ms per load)."""
    return models.tidy(fits, model="load_overhead", terms=LOAD_TERMS)


def plot_stream_load(data: pd.DataFrame, fits: pd.DataFrame, *, hue: str = "variant") -> matplotlib.figure.Figure:
    """Stream Load runs: rows/s against the load size (log–log), and total time against loads with each fit.

    ``data`` is :func:`ingestlab.published.stream_load_batches`, ``fits`` its
    :func:`ingestlab.models.fit_load_overhead` by ``hue`` (:func:`ingestlab.plots.plot_fit`).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, one above the other, each line named where it ends.
    """
    fig, axes = plt.subplots(2, 1, figsize=(figures.PAGE_WIDTH, 6.0), layout="constrained")  # each names its lines
    with _of_one_engine(data):
        plots.plot_sweep(data, x="request_bytes", y="rows_per_s", hue=hue, ax=axes[0], logx=True, logy=True,
                         legend="ends")
        plots.plot_fit(data, stream_load_fits(fits), x="n_loads", y="total_s", hue=hue, ax=axes[1], legend="ends")
    axes[0].set_xlabel("bytes per load")
    axes[0].set_ylabel("rows per second")
    return fig


def fit_run(folder: str | os.PathLike) -> pd.DataFrame:
    """Notebook 00's fits in the lab's long form, as its ``fits.csv`` holds them, computed again from the run in ``folder``.

    Its declaration's ``fit`` (from the seeds' published tables, at the run's ``ALPHA``); ``bench/refit.py`` compares it with the stored ``fits.csv``.
    """
    from ingestlab import published

    alpha = json.loads((Path(folder) / "run.json").read_text())["parameters"]["ALPHA"]
    points = published.overhead_points(published.load("starrocks_insert_scenarios"))
    fits = models.fit_overhead(points, by=["engine", "deployment", "version"], alpha=alpha, adequacy=True)
    fits.insert(1, "variant", published.variant_label(fits))
    return tidy_fits(fits)
