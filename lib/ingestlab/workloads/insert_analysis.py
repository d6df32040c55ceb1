"""Notebook 01's analysis: the overhead fit, throughput, the variants' difference, sentences, figures and headline."""

from __future__ import annotations

import os
import textwrap
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ingestlab import findings, models
from ingestlab.engines import capabilities
from ingestlab.workloads.insert import FIT_SCENARIOS, NOTEBOOK_STEM


def fit(samples: pd.DataFrame) -> pd.DataFrame:
    """The overhead fit per (engine, variant) over the ``INSERT … VALUES`` scenarios' totals."""
    totals = models.scenario_totals(samples[samples["scenario"].isin(FIT_SCENARIOS)])
    return models.fit_overhead(totals, adequacy=True)


#: The scenario notebook 01 holds out and predicts from the others (its statement count lies between theirs).
HELD_OUT = "batch_100"
#: Published table of the study's scenarios (its ``lab_engine``: the engine whose style draws its rows).
PUBLISHED = "starrocks_insert_scenarios"
#: The anatomy figure's row names wrap at this many characters, or half as many in two columns of panels.
ANATOMY_ROW_CHARS = 40


def prediction(samples: pd.DataFrame, held_out: str = HELD_OUT) -> pd.DataFrame:
    """What the overhead model predicts for a scenario it did not see, per engine and variant.

    The line is fitted to the other ``INSERT … VALUES`` scenarios' totals
    (:func:`ingestlab.adequacy.held_out_table`, variance growing with N), then asked for the held-out
    scenario's total at its statement count; each of its runs is compared with the 95 %
    prediction interval for one new run. Configurations without the scenario, or with too few
    runs besides it for a line, are left out.

    Returns
    -------
    pandas.DataFrame
        ``engine, variant, scenario, n_statements, predicted_s, pi_low_s, pi_high_s,
        observed_median_s, runs, runs_inside, inside`` (the median inside the interval).
    """
    from ingestlab.adequacy import held_out_table

    totals = models.scenario_totals(samples[samples["scenario"].isin(FIT_SCENARIOS)])
    table = held_out_table(totals, x="n_statements", y="total_s", by=["engine", "variant"],
                           held_out=totals["scenario"] == held_out)
    table = table[table["note"] == ""].astype({"n_statements": int}).assign(scenario=held_out)
    return table.rename(columns={"predicted": "predicted_s", "pi_low": "pi_low_s", "pi_high": "pi_high_s",
                                 "observed_median": "observed_median_s"})[
        ["engine", "variant", "scenario", "n_statements", "predicted_s", "pi_low_s", "pi_high_s", "observed_median_s",
         "runs", "runs_inside", "inside"]].reset_index(drop=True)


def describe_prediction(table: pd.DataFrame) -> list[str]:
    """Observed against predicted for the held-out scenario, engine by engine, and how many runs fell inside."""
    if table.empty:
        return [f"No prediction: the run has no {HELD_OUT} scenario, or too few others to fit the line without it."]
    lines = [f"**{r.engine} {r.variant}**, {r.scenario} ({r.n_statements} statements) left out of the fit: "
             f"{r.observed_median_s * 1e3:.2f} ms measured (median of {r.runs} runs), {r.predicted_s * 1e3:.2f} ms "
             f"predicted (95 % PI {r.pi_low_s * 1e3:.2f}–{r.pi_high_s * 1e3:.2f}); {r.runs_inside} of {r.runs} runs "
             "inside" for r in table.itertuples()]
    lines.append(findings.foresaw(table, line="The model", unseen="scenario it did not see",
                                  among="engine × variant configurations"))
    return lines


def throughput(samples: pd.DataFrame) -> pd.DataFrame:
    """Throughput per scenario: total time, rows/s and MB/s (median over repeats)."""
    totals = models.scenario_totals(samples)
    b = samples[~samples["warmup"]].groupby(["engine", "variant", "scenario", "repeat"], sort=False)["bytes"].sum()
    totals = totals.merge(b.rename("bytes").reset_index(), on=["engine", "variant", "scenario", "repeat"])
    totals["rows_per_s"] = totals["rows"] / totals["total_s"]
    totals["mb_per_s"] = totals["bytes"] / totals["total_s"] / 1e6
    return (totals.groupby(["engine", "variant", "scenario"], sort=False)
            .agg(repeats=("repeat", "nunique"), n_statements=("n_statements", "first"), rows=("rows", "first"),
                 total_s=("total_s", "median"), rows_per_s=("rows_per_s", "median"), mb_per_s=("mb_per_s", "median"))
            .reset_index())


def published_fits() -> pd.DataFrame:
    """The study's StarRocks overhead fits (per deployment and version) from ``data/published``."""
    from ingestlab import published

    table = published.load(PUBLISHED)
    return models.fit_overhead(table[table["scenario"].isin(FIT_SCENARIOS)],
                               by=["engine", "deployment", "version"])


def live_vs_published(fits: pd.DataFrame, throughput_table: pd.DataFrame, diff: dict | None) -> pd.DataFrame:
    """Live numbers beside the study's: overhead, commit-protocol difference, batching speed-up.

    Returns
    -------
    pandas.DataFrame
        See :func:`ingestlab.models.compare_with_published`; ``quantity`` names what is
        compared, ``published_label`` and ``live_label`` say whose number it is, ``live_holds``
        whether the live line(s) behind a fitted number hold (empty for a number of no fit); ``compared``
        (a key of :data:`COMPARED`), ``series`` (the live engine and variant in a reader's
        words) and ``reference`` (the study's deployment and version) name it for the figure
        (:func:`plot_live_vs_published`).
    """
    from ingestlab import labels, published

    pub = published_fits()
    pub = pub[pub["method"] == "ols"]
    ols = labelled(fits[fits["method"] == "ols"])
    rows_pub, rows_live = [], []
    for _, p in pub.iterrows():
        for _, f in ols.iterrows():
            q = f"overhead (ms) of {f['series']} against the seed's {p['deployment']} {p['version']}"
            rows_pub.append({"quantity": q, "published": p["overhead_ms"], "published_label": "seed fit (OLS)",
                             "reference": f"StarRocks {p['deployment']} {p['version']}"})
            rows_live.append({"quantity": q, "live": f["overhead_ms"], "live_ci_low": f["overhead_ci_low_ms"],
                              "live_ci_high": f["overhead_ci_high_ms"], "live_label": "live fit (OLS)",
                              "compared": "overhead_ms", "engine": f["engine"], "variant": f["variant"],
                              "series": f["series"], "live_holds": _holds(ols, f["engine"], f["variant"])})
    sd = pub[pub["deployment"] == "shared-data"].iloc[0]
    sn = pub[(pub["deployment"] == "shared-nothing") & (pub["version"] == sd["version"])].iloc[0]
    if diff is not None:
        pair = labels.join(pd.DataFrame({"engine": [diff["engine"]] * 2, "variant": [diff["first"], diff["last"]]}),
                           ["engine", "variant"]).tolist()
        series = f"{pair[0]} − {pair[1].partition(', ')[2] or pair[1]}"
        q = f"commit's extra overhead (ms) of {series} against the seed's shared-nothing − shared-data {sd['version']}"
        rows_pub.append({"quantity": q, "published": sn["overhead_ms"] - sd["overhead_ms"],
                         "published_label": "difference of seed fits",
                         "reference": f"StarRocks shared-nothing − shared-data {sd['version']}"})
        rows_live.append({"quantity": q, "live": diff["diff_ms"], "live_ci_low": diff["diff_ci_low_ms"],
                          "live_ci_high": diff["diff_ci_high_ms"], "live_label": "difference of live fits",
                          "compared": "commit_extra_ms", "engine": diff["engine"], "variant": diff["first"],
                          "series": series, "live_holds": _holds(ols, diff["engine"], diff["first"], diff["last"])})
    study = published.load(PUBLISHED)
    study = study[(study["deployment"] == "shared-data") & (study["version"].astype(str) == str(sd["version"]))]
    study_speedup = (study.loc[study["scenario"] == "single_row", "total_s"].iloc[0]
                     / study.loc[study["scenario"] == "batch_1000", "total_s"].iloc[0])
    tp = throughput_table.set_index(["engine", "variant", "scenario"])["total_s"]
    for (engine, variant, series) in ols[["engine", "variant", "series"]].itertuples(index=False):
        if (engine, variant, "batch_1000") in tp.index and (engine, variant, "single_row") in tp.index:
            q = f"batching speed-up (×) of {series} against the seed's shared-data {sd['version']}"
            rows_pub.append({"quantity": q, "published": study_speedup, "published_label": "seed shared-data table",
                             "reference": f"StarRocks shared-data {sd['version']}"})
            rows_live.append({"quantity": q, "live": tp[(engine, variant, "single_row")] / tp[(engine, variant, "batch_1000")],
                              "live_ci_low": float("nan"), "live_ci_high": float("nan"),
                              "live_label": "median totals over repeats", "compared": "batching_speedup_x",
                              "engine": engine, "variant": variant, "series": series})
    return models.compare_with_published(pd.DataFrame(rows_live), pd.DataFrame(rows_pub))


def _holds(fits: pd.DataFrame, engine: str, *variants: str) -> bool | None:
    """Whether the lines of ``engine``'s ``variants`` in ``fits`` all hold (None: one was not tested)."""
    if "model_holds" not in fits.columns:
        return None
    verdicts = [models.model_holds(v) for v in
                fits.loc[(fits["engine"] == engine) & fits["variant"].isin(variants), "model_holds"]]
    if len(verdicts) < len(variants) or None in verdicts:
        return None
    return all(verdicts)


def drawn(comparison: pd.DataFrame) -> pd.Series:
    """Which rows of :func:`live_vs_published` a figure draws: a number of no fit, or a fitted one whose lines hold."""
    if "live_holds" not in comparison.columns:
        return pd.Series(True, index=comparison.index)
    fitted = comparison["compared"].isin(["overhead_ms", "commit_extra_ms"])
    return ~fitted | comparison["live_holds"].map(models.model_holds).eq(True)


#: Characters of a row's name in :func:`plot_live_vs_published` before it wraps: the lab's longest engine and
#: variant ("PostgreSQL + 1 sync standby, synchronous commit remote apply") on one line, 3 in of a 7-in page.
LIVE_ROW_CHARS = 60
#: The quantities :func:`live_vs_published` sets beside the study's, in the order of the figure's panels, as its axes name them.
COMPARED = {"overhead_ms": "overhead per statement (ms), fitted, 95 % CI",
            "batching_speedup_x": "speed-up of putting 1 000 rows in one INSERT (×), medians",
            "commit_extra_ms": "the stricter commit's extra overhead per statement (ms), 95 % CI"}


def _in_lab_order(column: pd.Series) -> pd.Series:
    # a sort key: engines in the lab's order (figures.ENGINE_STYLE), each engine's variants in its adapter's order
    from ingestlab import figures
    from ingestlab.engines import registry

    if column.name == "engine":
        return column.map({engine: i for i, engine in enumerate(figures.ENGINE_STYLE)}).fillna(len(figures.ENGINE_STYLE))
    order = list(dict.fromkeys(v for cls in registry.classes().values()
                               for v in capabilities.of(cls, "commit_variants").VARIANTS))
    return column.map(lambda v: order.index(v) if v in order else len(order))


def plot_live_vs_published(comparison: pd.DataFrame):
    """This run's numbers and the study's on their own scales: a panel per quantity (:data:`COMPARED`); or None.

    In each panel the study's values come first, as StarRocks' rows with a dotted line down
    through the panel, then each live engine and variant with its 95 % CI where it has one:
    a reader sees both numbers, not only their ratio; a fitted number whose line does not hold
    (or was not tested) is not drawn (:func:`drawn`). Colours and markers are the engines'
    (:data:`ingestlab.figures.ENGINE_STYLE`); an axis spanning decades is logarithmic.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    from ingestlab import figures, labels, plots, published

    (study_engine,) = published.lab_engines(PUBLISHED).values()
    shown = comparison[comparison["live"].notna() & comparison["published"].notna() & drawn(comparison)]
    kinds = [k for k in COMPARED if k in set(shown.get("compared", pd.Series(dtype=object)))]
    if not kinds:
        return None
    tables = []
    for kind in kinds:
        part = shown[shown["compared"] == kind]
        seeds = part.drop_duplicates("reference")[["reference", "published"]].rename(
            columns={"reference": "row", "published": "value"}).assign(engine=study_engine, low=np.nan, high=np.nan)
        seeds["row"] = seeds["row"] + " (seed)"
        lives = part.drop_duplicates("series").sort_values(["engine", "variant"], key=_in_lab_order)[
            ["series", "engine", "live", "live_ci_low", "live_ci_high"]].rename(
            columns={"series": "row", "live": "value", "live_ci_low": "low", "live_ci_high": "high"})
        tables.append(pd.concat([seeds, lives], ignore_index=True))
    names = [[textwrap.fill(labels.label(t), LIVE_ROW_CHARS) for t in table["row"]] for table in tables]
    rows = [max(len(t), 4) for t in tables]  # a panel of one or two rows still readable
    # a row's pitch as its label's lines need: a two-line label in a one-line pitch was printed over its neighbour's
    pitch = [0.08 + 0.13 * max(n.count("\n") + 1 for n in panel) for panel in names]
    heights = [p * n + 0.7 for p, n in zip(pitch, rows)]
    fig, axes = plt.subplots(len(kinds), 1, figsize=(figures.PAGE_WIDTH - 0.5, 0.6 + sum(heights)),
                             height_ratios=heights, layout="constrained", squeeze=False)
    for ax, kind, table, shown_names in zip(axes[:, 0], kinds, tables, names):
        y = np.arange(len(table))
        for i, r in enumerate(table.itertuples()):
            colour, marker = figures.ENGINE_STYLE.get(r.engine, (figures.NEUTRAL, "o"))
            err = None
            if np.isfinite(r.low) and np.isfinite(r.high):
                err = [[max(r.value - r.low, 0)], [max(r.high - r.value, 0)]]
            ax.errorbar([r.value], [i], xerr=err, fmt=marker, color=colour, ecolor=colour, ms=5, capsize=2, lw=0.9,
                        label=labels.label(r.engine))
            if r.engine == study_engine:
                ax.axvline(r.value, color="0.45", lw=0.8, ls=":", zorder=0)
        values = pd.concat([table["value"], table["low"], table["high"]]).dropna()
        plots.set_scale(ax, "x", bool((values > 0).all()) and plots.spans_decades(values), values)
        ax.set_yticks(y, shown_names)
        ax.set_ylim(len(table) - 0.5, -0.5)  # the seed on top
        ax.set_xlabel(COMPARED[kind])
        ax.grid(axis="y", visible=False)
    return fig


# -- what the notebook says -----------------------------------------------------------------
def _label(row, several: bool) -> str:
    return f"{row.engine} {row.variant}" if several else str(row.variant)


def describe_single_row(summary: pd.DataFrame) -> list[str]:
    """The single-row INSERT's median, P95 and P99 per engine and variant, and the warm-up statements left out."""
    single = summary[summary["scenario"] == "single_row"]
    several = single["engine"].nunique() > 1
    parts = [f"**{_label(r, several)}** {r.median_ms:.3f} ms ({r.p95_ms:.3f}, {r.p99_ms:.3f}) over {int(r.n)} "
             "statements" for r in single.itertuples()]
    return ["Single-row INSERT, median (P95, P99): " + "; ".join(parts)
            + f". Warm-up statements excluded: {int(summary['warmup_n'].sum())}."]


def variant_difference(totals: pd.DataFrame, variants: Sequence[str]) -> dict | None:
    """The first variant's overhead minus the last's, on the first engine that ran two of ``variants``; else None.

    Both come from one model of the two variants' totals (:func:`ingestlab.models.overhead_difference`);
    the result names its ``engine``. An engine whose variants have too few points for a line each (one
    scenario, one round) is passed over, saying so (:class:`~ingestlab.models.FitLeftOut`), as a fit is.
    """
    for engine, part in totals.groupby("engine", sort=False):
        own = [v for v in variants if v in set(part["variant"])]
        if len(own) < 2:
            continue
        short = [v for v in (own[0], own[-1]) if models.too_few_for_line(part[part["variant"] == v].dropna(
            subset=["n_statements", "total_s"]))]
        if short:
            warnings.warn(f"{engine}: the difference of {own[0]} and {own[-1]} left out: {short[0]} has too few "
                          "points for a line (3 at 2 statement counts)", models.FitLeftOut, stacklevel=2)
            continue
        diff = models.overhead_difference(part, {"variant": own[0]}, {"variant": own[-1]})
        return {**diff, "engine": engine, "first": own[0], "last": own[-1]}
    return None


def describe_fit(fits: pd.DataFrame, summary: pd.DataFrame, diff: dict | None) -> list[str]:
    """Per engine and variant the fitted overhead and write time beside the single-row median; then the variants' difference."""
    from ingestlab import report

    medians = summary[summary["scenario"] == "single_row"].set_index(["engine", "variant"])["median_ms"]
    ols = fits[fits["method"] == "ols"]
    several = ols["engine"].nunique() > 1
    lines = [f"**{_label(r, several)}**: "
             f"{report.format_estimate(r.overhead_ms, r.overhead_ci_low_ms, r.overhead_ci_high_ms)} "
             f"per statement, write time {r.write_time_s * 1e3:.2f} ms, R² {r.r2:.4f}, single-row median "
             f"{medians.get((r.engine, r.variant), float('nan')):.3f} ms" for r in ols.itertuples()]
    if diff is not None:
        where = f" on {diff['engine']}" if several else ""
        lines.append(f"**{diff['first']}** costs "
                     f"{report.format_estimate(diff['diff_ms'], diff['diff_ci_low_ms'], diff['diff_ci_high_ms'])}"
                     f" more per statement than **{diff['last']}**{where}, {diff['ratio']:.2f}× its overhead.")
    return lines


def scale_table(diff: dict | None) -> pd.DataFrame:
    """The study's scale table for the variants' difference (empty with one variant)."""
    return models.scale_table(diff) if diff is not None else pd.DataFrame()


def anatomy_table(anatomy_frame: pd.DataFrame, samples: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    """The anatomy per engine and variant beside the same run's statement: the samples' median and the fitted overhead.

    :func:`ingestlab.anatomy.summary` of the anatomy pass (its client total corrected for the
    observer, see there), joined with ``samples_median_ms`` (the median of the same run's timed
    single-row statements, warm-up left out), ``samples_mean_ms``, the OLS ``overhead_ms`` with
    its CI and whether its line holds (``overhead_model_holds``), and ``total_vs_samples`` (the
    anatomy's client total ÷ the samples' median).
    """
    from ingestlab import anatomy
    from ingestlab.timing import latency_summary

    table = anatomy.summary(anatomy_frame)
    if table.empty:
        return table
    single = latency_summary(samples[samples["scenario"] == "single_row"], by=("engine", "variant"))
    single = single.rename(columns={"median_ms": "samples_median_ms", "mean_ms": "samples_mean_ms",
                                    "p99_ms": "samples_p99_ms"})[["engine", "variant", "samples_median_ms",
                                                                 "samples_mean_ms", "samples_p99_ms"]]
    ols = fits[fits["method"] == "ols"]
    ols = ols[["engine", "variant", "overhead_ms", "overhead_ci_low_ms", "overhead_ci_high_ms"]].assign(
        overhead_model_holds=ols["model_holds"].map(models.model_holds) if "model_holds" in ols else None)
    out = table.merge(single, on=["engine", "variant"], how="left").merge(ols, on=["engine", "variant"], how="left")
    out["total_vs_samples"] = out[f"{anatomy.CLIENT_TOTAL}_ms"] / out["samples_median_ms"]
    return out


#: How far (as a share) the anatomy's client total may lie from the samples' median and still be the same statement.
AGREEMENT = 0.10


def describe_agreement(table: pd.DataFrame) -> list[str]:
    """Per engine and variant: the anatomy's total, the samples' median and the fitted overhead, and whether they agree.

    Where the fitted overhead's CI misses the samples' median, one sentence says why from the
    data: the fit is a slope through scenario totals (sums), so it follows the statements' mean,
    and the sentence gives the mean and the tail that pulls it.
    """
    from ingestlab import report

    if table.empty:
        return []
    several = table["engine"].nunique() > 1
    out = []
    for r in table.itertuples():
        total, median = r.client_total_ms, r.samples_median_ms
        if pd.isna(median):
            out.append(f"**{_label(r, several)}**: the anatomy's statement takes {total:.3f} ms; the run timed no "
                       "single-row samples to hold it against (SCENARIOS without single_row).")
            continue
        agree = abs(total / median - 1) <= AGREEMENT
        observer = (f", after taking out the observer's {r.observer_ms:+.3f} ms"
                    if pd.notna(getattr(r, "observer_ms", float("nan"))) else "")
        line = (f"**{_label(r, several)}**: the anatomy's statement takes {total:.3f} ms{observer}, the run's "
                f"single-row samples {median:.3f} ms (median), ratio {total / median:.2f} — "
                + ("the same statement (within ±10 %)" if agree else "**not** the same statement (beyond ±10 %)")
                + f"; fitted overhead {report.format_estimate(r.overhead_ms, r.overhead_ci_low_ms, r.overhead_ci_high_ms)}"
                + {False: " (its line does not hold: not drawn).", None: " (its line not tested: not drawn)."}.get(
                    getattr(r, "overhead_model_holds", True), "."))
        if pd.notna(r.overhead_ms) and not (r.overhead_ci_low_ms <= median <= r.overhead_ci_high_ms):
            nearer = "mean" if abs(r.overhead_ms - r.samples_mean_ms) < abs(r.overhead_ms - median) else "median"
            line += (f" The overhead's CI misses the median because the fit is a slope through scenario totals — "
                     f"sums, which follow the statements' mean ({r.samples_mean_ms:.3f} ms, P99 "
                     f"{r.samples_p99_ms:.3f} ms), not their median; here the overhead lies nearer the {nearer}"
                     + ("." if nearer == "mean" else ", so the tail does not explain it: the batches' own "
                        "per-row costs bend the line."))
        out.append(line)
    return out


def latency_figure(measured: pd.DataFrame):
    """Time of one statement per scenario, boxes over every measured sample: a panel per engine.

    Each engine's variants are shades of its colour (at most a few per panel, where one panel
    for seven series had seven colours); the panels share both axes, logarithmic when the
    samples span decades, so an engine reads against another.
    """
    from ingestlab import plots

    frame = labelled(measured)
    engines = _lab_order(frame["engine"])
    scenarios, most = frame["scenario"].nunique(), frame.groupby("engine")["variant"].nunique().max()
    fig, panels = _engine_panels(engines, 0.7 + scenarios * (0.1 + 0.1 * most), sharex=True, sharey=True)
    log = plots.spans_decades(frame["elapsed_ms"])
    for engine, ax in panels.items():
        plots.plot_latency(frame[frame["engine"] == engine], x="elapsed_ms", y="scenario", hue="series", ax=ax,
                             log=log)
    _one_legend_under(fig, panels)
    return fig


def _lab_order(engines) -> list[str]:
    # the engines in the lab's order (figures.ENGINE_STYLE: a family's engines side by side, PostgreSQL before its
    # replicated self), those it does not know after them as they came
    from ingestlab import figures

    order = list(figures.ENGINE_STYLE)
    seen = list(dict.fromkeys(engines))
    return sorted(seen, key=lambda e: (order.index(e) if e in order else len(order), seen.index(e)))


def _engine_panels(engines: list[str], row_in: float, *, columns: int | None = None, **shared):
    # a panel per engine, two columns from two engines on (or ``columns``), each titled with its engine; the grid's
    # spare panel hidden
    import math

    import matplotlib.pyplot as plt

    from ingestlab import figures, labels
    from ingestlab.figure_checks import MIN_AXES_IN

    columns = columns or (1 if len(engines) == 1 else 2)
    rows = math.ceil(len(engines) / columns)
    row_in = max(row_in, MIN_AXES_IN[1] + 1.0)  # a panel of one or two boxes stays readable beside its title and legend
    fig, axes = plt.subplots(rows, columns, squeeze=False, layout="constrained",
                             figsize=(figures.PAGE_WIDTH - 0.3, rows * row_in), **shared)
    for ax in axes.flat[len(engines):]:
        ax.set_visible(False)
    if len(engines) > 1:
        for ax, engine in zip(axes.flat, engines):
            ax.set_title(labels.label(engine), loc="left", fontsize="medium")
    return fig, dict(zip(engines, axes.flat))


def _one_legend_under(fig, panels: dict) -> None:
    # the panels' legends as one under them all (the panels keep the page's width), titled as the longest said
    from ingestlab import plots

    handles, names, titles = [], [], []
    for ax in panels.values():
        legend = ax.get_legend()
        if legend is not None:
            own = ax.get_legend_handles_labels()
            handles, names = handles + own[0], names + own[1]
            titles.append(legend.get_title().get_text())
            legend.remove()
    if handles:
        plots.legend_under(fig, handles, names, title=max(titles, key=len) or None)


def fit_figure(totals: pd.DataFrame, fits: pd.DataFrame):
    """Total time against statements with each variant's fitted line: a panel per engine, on the same axes.

    ``totals`` from :func:`ingestlab.models.scenario_totals`, ``fits`` from :func:`tidy_fits`.
    One panel held seven lines in seven colours (five shades of two engines' colours beside two
    engines of their own); a panel per engine keeps an engine's variants, shades of its
    colour, together. Every panel has the others' axis limits, so an engine reads against
    another; one legend under the panels states each line's overhead with its CI.
    """
    from ingestlab import labels, plots

    data, lines = labelled(totals), labelled(fits)
    engines = _lab_order(data["engine"])
    # beyond four engines, each panel names its own few series in its upper left (totals rise from the lower left;
    # the panel's title names the engine), the axes shared: six engines' one legend under them all ran to 8.9 in,
    # over a page's 5.5
    inside = len(engines) > 4
    fig, panels = (_engine_panels(engines, 1.55, sharex=True, sharey=True) if inside
                   else _engine_panels(engines, 2.4))
    explained = False  # what line and shading are, said once: over the first panel that draws a line
    for engine, ax in panels.items():
        own = data[data["engine"] == engine]
        prefix = f"{labels.label(engine)}, "
        plots.plot_fit(own, lines[lines["engine"] == engine], x="n_statements", y="total_s", hue="series", ax=ax,
                       logx=True, logy=True, legend="inside" if inside else "below",
                       name_of=lambda level, prefix=prefix: level.removeprefix(prefix), explain=not explained)
        explained = explained or bool(ax.get_legend() and ax.get_legend().get_title().get_text())
    for get, set_ in (("get_xlim", "set_xlim"), ("get_ylim", "set_ylim")):
        ends = np.array([getattr(ax, get)() for ax in panels.values()])
        for ax in panels.values():  # each panel's lines were cut at its own data; the wider common axes still hold them
            getattr(ax, set_)(ends.min(), ends.max())
    if inside:
        for ax in panels.values():  # the shared axes said once, on the outer panels
            if not ax.get_subplotspec().is_last_row() and any(
                    other.get_visible() and other.get_subplotspec().colspan == ax.get_subplotspec().colspan
                    and other.get_subplotspec().rowspan.start > ax.get_subplotspec().rowspan.start
                    for other in panels.values()):
                ax.set_xlabel("")
            if not ax.get_subplotspec().is_first_col():
                ax.set_ylabel("")
    else:
        _one_legend_under(fig, panels)
    return fig


def anatomy_figure(table: pd.DataFrame):
    """Stacked bars of the anatomy's parts per engine and variant, with the statement measured beside them; or None.

    A panel per engine, each with its own time axis from 0: on one axis ClickHouse's 7 ms
    statement left PostgreSQL's and MariaDB's 0.1–0.3 ms bars a few pixels long, their parts
    unreadable. A part keeps its colour in every panel (:func:`ingestlab.anatomy.parts`, one
    legend under the panels). Beside each bar: a black diamond at the samples' median of the
    same run and variant, and an open circle with its 95 % CI at the fitted overhead, where
    ``table`` has them (:func:`anatomy_table`) and the overhead's line holds: a rejected or
    untested fit is not drawn (its number stays in the table, said to be so).
    """
    import matplotlib.pyplot as plt

    from ingestlab import anatomy, figures, labels, plots

    if table.empty:
        return None
    parts = anatomy.parts(table)
    several = parts["engine"].nunique() > 1
    shown_as = {}  # a row's name: its variant's (the panel's title names the engine)
    if several:  # one row per series: two engines may both have ``default``
        shown_as = dict(zip(labelled(parts)["series"], parts["variant"]))
        parts = labelled(parts).assign(variant=lambda f: f["series"])
        table = labelled(table).assign(variant=lambda f: f["series"])
    # one table of every part for every bar: each panel draws its rows with every column, so colours keep their part
    wide = plots.named(parts, "component").pivot_table(index="variant", columns="component", values="ms",
                                                         sort=False, observed=True).fillna(0)
    colours = plots.segment_colours(wide.columns)
    engines = _lab_order(parts["engine"])
    rows_of = {e: list(dict.fromkeys(parts.loc[parts["engine"] == e, "variant"])) for e in engines}
    # beyond two engines two columns of panels: stacked, four engines' panels did not fit a page's 5.5 in
    columns = 1 if len(engines) <= 2 else 2
    grid = [engines[i:i + columns] for i in range(0, len(engines), columns)]
    heights = [max(max(len(rows_of[e]), 2) for e in row) for row in grid]  # one bar stays readable (≥ 0.8 in)
    fig, axes = plt.subplots(len(grid), columns, squeeze=False, layout="constrained",
                             gridspec_kw={"height_ratios": heights},
                             figsize=(figures.PAGE_WIDTH, 1.5 + 0.4 * sum(heights) + 0.45 * len(grid)))
    for ax in axes.flat[len(engines):]:  # an odd engine out: its neighbour's place stays empty
        ax.remove()
    handles: dict[str, object] = {}
    for ax, engine in zip(axes.flat, engines):
        rows = rows_of[engine]
        wide.loc[rows].plot.barh(stacked=True, ax=ax, width=0.6, color=colours, edgecolor="white", linewidth=0.6,
                                 legend=False)
        plots.hatch_segments(ax)
        handles |= {name: h for h, name in zip(*ax.get_legend_handles_labels())}
        names = plots.named(pd.DataFrame({"variant": [shown_as.get(r, r) for r in rows]}), "variant")["variant"]
        ax.set_yticks(range(len(rows)), [textwrap.fill(str(r), ANATOMY_ROW_CHARS // columns) for r in names])
        ax.set_ylabel("")
        ax.set_xlabel("")
        if several:
            ax.set_title(labels.label(engine), loc="left", fontsize="medium")
        for r in table[table["variant"].isin(rows)].itertuples():
            y = rows.index(r.variant)
            if pd.notna(getattr(r, "samples_median_ms", float("nan"))):
                h, = ax.plot([r.samples_median_ms], [y - 0.38], "D", color="black", ms=5, zorder=5,
                             label="samples' median")
                handles.setdefault(h.get_label(), h)
            if pd.notna(getattr(r, "overhead_ms", float("nan"))) and getattr(r, "overhead_model_holds", None) is True:
                err = [[max(r.overhead_ms - r.overhead_ci_low_ms, 0)], [max(r.overhead_ci_high_ms - r.overhead_ms, 0)]]
                h = ax.errorbar([r.overhead_ms], [y + 0.38], xerr=err, fmt="o", mfc="white", mec="black",
                                ecolor="black", ms=5, capsize=2, lw=0.8, zorder=5, label="fitted overhead (95 % CI)")
                handles.setdefault(h.get_label(), h)
        # from 0, unless a fit's overhead or its CI runs below it (a smoke run's few statements): shown, not cut
        ax.set_xlim(min(0.0, ax.dataLim.x0), None)
        ax.set_ylim(len(rows) - 0.3, -0.7)  # the first variant on top, as in the notebook's other figures
    fig.supxlabel(labels.column_label("ms"), fontsize=plt.rcParams["axes.labelsize"])  # said once, under the panels
    plots.legend_under(fig, list(handles.values()), list(handles), title=labels.column_label("component"))
    return fig


def headline(fits: pd.DataFrame, diff: dict | None, anatomy_table: pd.DataFrame) -> dict[str, float]:
    """The run's headline numbers: overhead per engine and variant, the variants' difference, the unexplained share.

    Keys name the variant (``overhead_ms[sync_on]``), and the engine too when the run measured several.
    """
    ols = fits[fits["method"] == "ols"]
    several = ols["engine"].nunique() > 1
    out = {f"overhead_ms[{_label(r, several)}]": float(r.overhead_ms) for r in ols.itertuples()}
    out.update({k: float(v) for k, v in (diff or {}).items() if k not in ("engine", "first", "last")})
    if not anatomy_table.empty:
        several = anatomy_table["engine"].nunique() > 1
        for r in anatomy_table.itertuples():
            out[f"unexplained_share[{_label(r, several)}]"] = float(r.unexplained_share)
            if "total_vs_samples" in anatomy_table.columns:
                out[f"total_vs_samples[{_label(r, several)}]"] = float(r.total_vs_samples)
            if pd.notna(getattr(r, "observer_ms", float("nan"))):
                out[f"observer_ms[{_label(r, several)}]"] = float(r.observer_ms)
    return out


def tidy_fits(fits: pd.DataFrame) -> pd.DataFrame:
    """:func:`fit`'s overhead fits in the lab's long form (``fits.csv``): terms ``overhead`` (ms) and ``write_time`` (s)."""
    return models.tidy(fits, model="overhead", terms=models.OVERHEAD_TERMS, notebook=NOTEBOOK_STEM)


def labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``series``, one figure series per engine and variant (two engines may both have ``default``).

    Examples
    --------
    >>> labelled(pd.DataFrame({"engine": ["engine_a", "engine_b"], "variant": ["default", "default"]}))["series"].tolist()
    ['engine a, defaults', 'engine b, defaults']
    """
    from ingestlab import labels

    return frame.assign(series=labels.join(frame, ["engine", "variant"]))


def fit_run(folder: str | os.PathLike) -> pd.DataFrame:
    """Notebook 01's fits in the lab's long form, as its ``fits.csv`` holds them, computed again from the run in ``folder``.

    Its declaration's ``fit`` (from ``results.parquet``); ``bench/refit.py`` compares it with the stored ``fits.csv``.
    """
    return tidy_fits(fit(pd.read_parquet(Path(folder) / "results.parquet")))
