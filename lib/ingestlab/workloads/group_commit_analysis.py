"""Notebook 04's analysis: throughput, speed-ups, the per-statement fit, the scalability law and its forecasts, figures."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

from ingestlab import captions, figures, intervals, labels, models, plots, report
from ingestlab.workloads.group_commit import CONFIG, NOTEBOOK_STEM, Params

#: The concurrency of the headline comparison (the largest level run when it is not among them).
HEADLINE_CLIENTS = 32


#: Width of the windows whose throughputs give the speed-ups' bootstrap CIs.
WINDOW_S = 0.1


#: Share of the best throughput from which a configuration counts as saturated.
SATURATION_SHARE = 0.9


# -- analysis -------------------------------------------------------------------------------
def per_second(samples: pd.DataFrame) -> pd.DataFrame:
    """Rows, bytes and statements per client and second of the measured span (by completion time)."""
    measured = samples[~samples["warmup"]]
    second = ((measured["started_ns"] + measured["elapsed_s"] * 1e9 - measured["measure_start_ns"]) // 1e9)
    return (measured.assign(second=second.astype(int))
            .groupby([*CONFIG, "client", "second"], sort=False)
            .agg(statements=("rows", "size"), rows=("rows", "sum"), bytes=("bytes", "sum")).reset_index())


def window_throughput(samples: pd.DataFrame, width_s: float = WINDOW_S) -> pd.DataFrame:
    """Rows per second of all clients together in consecutive windows of ``width_s`` (complete windows only)."""
    measured = samples[~samples["warmup"]]
    end = measured["started_ns"] + measured["elapsed_s"] * 1e9 - measured["measure_start_ns"]
    framed = measured.assign(window=(end // (width_s * 1e9)).astype(int))
    counts = framed.groupby([*CONFIG, "window"], sort=False)["rows"].sum().reset_index()
    last = counts.groupby(CONFIG, sort=False)["window"].transform("max")
    return counts[counts["window"] < last].assign(rows_per_s=lambda d: d["rows"] / width_s)


#: Each configuration's throughput and latency columns, and the statistic of a batch that gives their CI.
INTERVALS = {"rows_per_s": None, "latency_median_ms": 50, "latency_p99_ms": 99}


def with_intervals(throughput: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """``throughput`` with a 95 % CI for each configuration's rows/s, P50 and P99 latency (batch means).

    One configuration runs once, for a few seconds; its repeats are the consecutive stretches
    of that run. Rows/s: the :data:`WINDOW_S` windows' throughputs (:func:`window_throughput`)
    in :data:`ingestlab.intervals.BATCHES` consecutive batches; latency: the statements in order
    of completion in as many batches, each batch's P50 or P99; the CI is the t interval over
    the batches (:func:`ingestlab.intervals.batch_means_ci`). Adds ``<column>_ci_low``,
    ``<column>_ci_high`` and ``batches`` (the batches behind the rows/s interval).
    """
    windows = dict(iter(window_throughput(samples).groupby(CONFIG, sort=False)))
    measured = samples[~samples["warmup"]].assign(
        _end=lambda d: d["started_ns"] + d["elapsed_s"] * 1e9).sort_values("_end")
    rows = []
    for key, part in measured.groupby(CONFIG, sort=False):
        at = windows.get(key)
        rate = intervals.batch_means_ci([] if at is None else at.sort_values("window")["rows_per_s"])
        row = dict(zip(CONFIG, key), rows_per_s_ci_low=rate["ci_low"], rows_per_s_ci_high=rate["ci_high"],
                   batches=rate["batches"])
        latency_ms = part["latency_s"].to_numpy() * 1e3
        for column, q in INTERVALS.items():
            if q is not None:
                r = intervals.batch_means_ci(latency_ms, statistic=lambda a, axis, q=q: np.percentile(a, q, axis=axis))
                row |= {f"{column}_ci_low": r["ci_low"], f"{column}_ci_high": r["ci_high"]}
        rows.append(row)
    cis = pd.DataFrame(rows, columns=[*CONFIG, *(f"{c}_ci_{s}" for c in INTERVALS for s in ("low", "high")),
                                      "batches"])
    return throughput.drop(columns=[c for c in cis.columns if c not in CONFIG and c in throughput]).merge(
        cis, on=CONFIG, how="left")


def headline_clients(throughput: pd.DataFrame) -> int:
    """The concurrency of the headline: :data:`HEADLINE_CLIENTS` if run, else the largest run."""
    levels = throughput["clients"].unique()
    return HEADLINE_CLIENTS if HEADLINE_CLIENTS in levels else int(levels.max())


def speedups(samples: pd.DataFrame, throughput: pd.DataFrame, *, clients: int | None = None,
             rows_per_insert: int | None = None) -> pd.DataFrame:
    """Each variant's rows/s over the first variant's (the default) at one configuration, with bootstrap CIs.

    The CI resamples the windows' throughputs (:func:`window_throughput`): the mean window
    of one variant over the mean window of the other.
    """
    clients = clients or headline_clients(throughput)
    rows_per_insert = rows_per_insert or int(throughput["rows_per_insert"].min())
    windows = window_throughput(samples)
    at = windows[(windows["clients"] == clients) & (windows["rows_per_insert"] == rows_per_insert)]
    out = []
    for engine, part in at.groupby("engine", sort=False):
        variants = list(dict.fromkeys(part["variant"]))
        base = part[part["variant"] == variants[0]]["rows_per_s"]
        for variant in variants[1:]:
            r = intervals.ratio_ci(part[part["variant"] == variant]["rows_per_s"], base, statistic=np.mean)
            out.append({"engine": engine, "variant": variant, "baseline": variants[0], "clients": clients,
                        "rows_per_insert": rows_per_insert, "speedup": r["ratio"], "ci_low": r["ci_low"],
                        "ci_high": r["ci_high"], "n_windows": r["n_a"], "n_windows_baseline": r["n_b"]})
    return pd.DataFrame(out)


def batching_speedup(samples: pd.DataFrame, throughput: pd.DataFrame) -> pd.DataFrame:
    """Client-side batching, the reference every user can do: rows/s at the most rows per INSERT over one row.

    At one client, in each variant; CI from the windows as in :func:`speedups`.
    """
    windows = window_throughput(samples)
    lo, hi = throughput["rows_per_insert"].min(), throughput["rows_per_insert"].max()
    at = windows[windows["clients"] == windows["clients"].min()]
    out = []
    for (engine, variant), part in at.groupby(["engine", "variant"], sort=False):
        r = intervals.ratio_ci(part[part["rows_per_insert"] == hi]["rows_per_s"],
                            part[part["rows_per_insert"] == lo]["rows_per_s"], statistic=np.mean)
        out.append({"engine": engine, "variant": variant, "clients": int(at["clients"].min()),
                    "rows_per_insert": hi, "baseline_rows_per_insert": lo, "speedup": r["ratio"],
                    "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    return pd.DataFrame(out)


def fit(throughput: pd.DataFrame) -> pd.DataFrame:
    """``ms_per_statement = fixed + flush × flush_share + per_row × rows_per_insert`` per engine × variant.

    ``ms_per_statement`` is the time the system spends per statement, 1000 / statements/s;
    ``flush_share`` = 1 / commits_per_flush is the part of one log flush each commit pays
    (1: every commit its own; ½: two share one). So ``flush`` is the overhead that grouping
    divides, ``per_row`` the cost that no grouping removes, ``fixed`` the rest of a
    statement. OLS with HC3 CIs (:func:`ingestlab.models.fit_terms`), and whether the sum holds
    (Ramsey's RESET: no statement count repeats, so no pure-error test; and none of the three
    costs wholly below 0); where the engine reports no flushes, ``flush_share`` is left out.
    """
    data = throughput.assign(ms_per_statement=1e3 / throughput["statements_per_s"],
                             flush_share=1 / throughput["commits_per_flush"])
    terms = ["flush_share", "rows_per_insert"]
    return models.fit_terms(data, y="ms_per_statement", terms=terms, by=["engine", "variant"], adequacy=True,
                            costs=["intercept", *terms])  # a time a statement, a flush or a row adds: never below 0


def saturation(throughput: pd.DataFrame) -> pd.DataFrame:
    """Per engine × variant × rows per INSERT: the most statements/s and the fewest clients reaching
    :data:`SATURATION_SHARE` of it (the saturation point)."""
    out = []
    for key, part in throughput.groupby(["engine", "variant", "rows_per_insert"], sort=False):
        best = part["statements_per_s"].max()
        sat = part[part["statements_per_s"] >= SATURATION_SHARE * best]["clients"].min()
        out.append(dict(zip(["engine", "variant", "rows_per_insert"], key), max_statements_per_s=best,
                        max_rows_per_s=part["rows_per_s"].max(), saturation_clients=int(sat)))
    return pd.DataFrame(out)


def published_speedups() -> pd.DataFrame:
    """The study's group-commit speed-ups from ``data/published``: async over off, and the interval's effect."""
    from ingestlab import published

    stream = published.load("doris_group_commit_stream_load").set_index(["group_commit_mode", "request_printed",
                                                                          "concurrency"])["rows_per_s"]
    small = published.load("doris_group_commit_sync_small_batch")
    small = small[small["nereids_planner"].astype(str) == "True"].set_index(
        ["concurrency", "group_commit_interval_ms"])["rows_per_s"]
    rows = [("Doris Stream Load 1 MB, 10 clients: async over off", stream[("async", "1 MB", 10)] / stream[("off", "1 MB", 10)]),
            ("Doris Stream Load 10 MB, 10 clients: async over off", stream[("async", "10 MB", 10)] / stream[("off", "10 MB", 10)]),
            ("Doris sync 1-row INSERT, 30 clients: interval 10 ms over 100 ms", small[(30, 10)] / small[(30, 100)]),
            ("Doris sync 1-row INSERT, 500 clients: interval 10 ms over 100 ms", small[(500, 10)] / small[(500, 100)])]
    return pd.DataFrame([{"quantity": q, "speedup": v, "ci_low": np.nan, "ci_high": np.nan,
                          "source": "published (seed table, Doris 3.0.1)"} for q, v in rows])


def live_vs_published(speedup: pd.DataFrame, batching: pd.DataFrame) -> pd.DataFrame:
    """The study's speed-ups beside the live grouping and batching speed-ups, one row per quantity.

    Per engine one grouping row, its best variant's (the largest speed-up, as the study reports
    its best mode), and one batching row, in its ``default`` variant (else its first): every
    variant's is in :func:`describe_speedups`; a row each made 04's figure 21 rows of two-line
    labels with four engines, printed over one another.
    """
    batching = batching.iloc[batching["variant"].ne("default").argsort(kind="stable")].drop_duplicates("engine") \
        if len(batching) else batching
    speedup = speedup.sort_values("speedup", ascending=False, kind="stable").drop_duplicates("engine") \
        .sort_index() if len(speedup) else speedup
    live = [{"quantity": f"{r.engine} {r.variant} over {r.baseline}, {r.clients} clients, {r.rows_per_insert}-row INSERT",
             "speedup": r.speedup, "ci_low": r.ci_low, "ci_high": r.ci_high, "source": "live (this run)"}
            for r in speedup.itertuples()]
    live += [{"quantity": f"{r.engine} {r.variant}: {r.rows_per_insert} rows per INSERT over "
                          f"{r.baseline_rows_per_insert}, {r.clients} client",
              "speedup": r.speedup, "ci_low": r.ci_low, "ci_high": r.ci_high, "source": "live (this run)"}
             for r in batching.itertuples()]
    return pd.concat([published_speedups(), pd.DataFrame(live)], ignore_index=True)


def describe_grouping(throughput: pd.DataFrame) -> list[str]:
    """Commits per flush per variant at the fewest and the most clients, for one-row INSERTs."""
    one = throughput[throughput["rows_per_insert"] == throughput["rows_per_insert"].min()]
    lo, hi = one["clients"].min(), one["clients"].max()
    lines = []
    for (engine, variant), part in one.groupby(["engine", "variant"], sort=False):
        cpf = part.set_index("clients")["commits_per_flush"]
        lines.append(f"**{engine} {variant}**: {cpf.get(lo, np.nan):.2f} commits per flush at {lo} client"
                     f"{'s' if lo > 1 else ''}, {cpf.get(hi, np.nan):.2f} at {hi}")
    return lines


def describe_fit(fits: pd.DataFrame, sat: pd.DataFrame) -> list[str]:
    """Per engine × variant the fitted flush cost, per-row cost and fixed rest, and the saturation point."""
    lines = []
    for (engine, variant), part in fits.groupby(["engine", "variant"], sort=False):
        t = part.set_index("term")
        terms = [f"{name} {report.format_estimate(t.loc[term, 'estimate'], t.loc[term, 'ci_low'], t.loc[term, 'ci_high'], unit=unit)}"
                 for term, name, unit in (("flush_share", "flush", "ms"), ("rows_per_insert", "per row", "ms"),
                                          ("intercept", "fixed", "ms"))
                 if np.isfinite(t.loc[term, "estimate"])]
        s = sat[(sat["engine"] == engine) & (sat["variant"] == variant)]
        points = ", ".join(f"{r.saturation_clients} clients at {r.rows_per_insert} row{'s' if r.rows_per_insert > 1 else ''}"
                           for r in s.itertuples())
        lines.append(f"**{engine} {variant}**: " + "; ".join(terms)
                     + f" (R² {t['r2'].iloc[0]:.3f}, {int(t['n_points'].iloc[0])} configurations); saturated from "
                     + points + ".")
    return lines


def describe_speedups(speedup: pd.DataFrame, batching: pd.DataFrame) -> list[str]:
    """The best grouping variant's gain over the default with its CI, and client batching beside it."""
    if speedup.empty:
        return ["Only one variant ran: no grouping speed-up to state."]
    best = speedup.loc[speedup["speedup"].idxmax()]
    lines = [f"Best variant at {best['clients']} clients, {best['rows_per_insert']}-row INSERTs: **{best['variant']}**, "
             f"{report.format_estimate(best['speedup'], best['ci_low'], best['ci_high'], unit='×')} the throughput of "
             f"**{best['baseline']}** (95 % bootstrap CI over {int(best['n_windows'])} windows of {WINDOW_S:g} s)."]
    lines += [f"{r.variant}: {report.format_estimate(r.speedup, r.ci_low, r.ci_high, unit='×')}"
              for r in speedup.itertuples() if r.variant != best["variant"]]
    lines += [f"Client-side batching ({r.variant}, {r.clients} client): {r.rows_per_insert} rows per INSERT give "
              f"{report.format_estimate(r.speedup, r.ci_low, r.ci_high, unit='×')} the rows/s of "
              f"{r.baseline_rows_per_insert}." for r in batching.itertuples()]
    return lines


def headline(throughput: pd.DataFrame, speedup: pd.DataFrame, fits: pd.DataFrame,
             scalability_fits: pd.DataFrame | None = None, forecasts: pd.DataFrame | None = None) -> dict[str, float]:
    """The run's headline numbers: commits per flush at the headline concurrency, the best speed-up, the flush cost,
    and for one-row INSERTs, where the scalability law was fitted, its σ, κ and peak (with CIs) and each held-out
    forecast's error.

    ``flush_ms`` (with its CI) is given only for the variants whose flush cost's CI lies above zero.
    ``usl_holdout_error[<engine> <variant> C=<clients>]`` is |predicted − measured| / measured of the
    forecast of ``clients`` from the counts below it (:func:`prediction`: C=32 and C=64 on the paper grid).
    """
    clients = headline_clients(throughput)
    one = throughput[(throughput["clients"] == clients)
                     & (throughput["rows_per_insert"] == throughput["rows_per_insert"].min())]
    out = {f"commits_per_flush[{r.engine} {r.variant} C={clients}]": float(r.commits_per_flush)
           for r in one.itertuples()}
    out.update({f"rows_per_s[{r.engine} {r.variant} C={clients}]": float(r.rows_per_s) for r in one.itertuples()})
    if not speedup.empty:
        best = speedup.loc[speedup["speedup"].idxmax()]
        out.update({"best_variant": best["variant"], "best_speedup": float(best["speedup"]),
                    "best_speedup_ci_low": float(best["ci_low"]), "best_speedup_ci_high": float(best["ci_high"])})
    # a flush cost only where the data tell it from zero: where commits hardly share flushes (or never wait for
    # one: synchronous_commit = off flushes once per thousands of commits) the slope is not estimable
    flush = fits[(fits["term"] == "flush_share") & (fits["ci_low"] > 0)]
    out.update({f"flush_ms[{r.engine} {r.variant}]": [float(r.estimate), float(r.ci_low), float(r.ci_high)]
                for r in flush.itertuples()})
    if scalability_fits is not None and not scalability_fits.empty:
        law = scalability_fits[scalability_fits["rows_per_insert"] == scalability_fits["rows_per_insert"].min()]
        for r in law[law["term"].isin(["sigma", "kappa", "peak_clients"])].itertuples():
            out[f"usl_{r.term}[{r.engine} {r.variant}]"] = [float(r.estimate), float(r.ci_low), float(r.ci_high)]
    if forecasts is not None and not forecasts.empty:
        one_row = forecasts[forecasts["rows_per_insert"] == forecasts["rows_per_insert"].min()]
        out.update({f"usl_holdout_error[{r.engine} {r.variant} C={r.clients}]": abs(float(r.relative_error))
                    for r in one_row.itertuples()})
    return out


def plot_throughput(throughput: pd.DataFrame, curves: pd.DataFrame | None = None):
    """Rows/s against clients (log x), a line per variant, a panel per rows per INSERT; the scalability law over them.

    ``curves`` (:func:`law_curves`) are drawn in their variant's colour over the client counts
    measured (never beyond them), each with its 95 % confidence band shaded (cut at the axes,
    which fit the measurements), where the law held (:func:`scalability`'s ``model_holds``).
    A law rejected, or not tested (its held-out intervals said nothing), is not drawn: a line
    means a model that holds; the legend counts, per engine, the laws rejected and those not
    tested (:func:`scalability`'s table names them), under a column of variants per engine
    (:func:`ingestlab.plots.legend_under`); beyond two engines each engine's column has its own
    legend with its own count (:func:`legend_under_column`). Each point has its CI where ``throughput`` has
    them (:func:`with_intervals`).
    """
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig = plot_by_clients(throughput, y="rows_per_s", hue="variant", col="rows_per_insert", logy=True)
    if curves is None or curves.empty:
        return fig
    engines, levels = _grid(throughput, "rows_per_insert")
    names = _series(throughput, "variant")  # over every engine: with several, each name says its engine
    # per engine (all its panels): how many laws were rejected / not tested, of how many drawn
    rejected, untested, laws_of, drawn = Counter(), Counter(), Counter(), Counter()
    grid = np.asarray(fig.axes[:len(engines) * len(levels)], dtype=object).reshape(_shape(engines, levels))
    for place, engine, rows_per_insert in _panels(engines, levels):
        ax = grid[place]
        part = throughput[(throughput["rows_per_insert"] == rows_per_insert)
                          & ((throughput["engine"] == engine) if engine is not None else True)]
        shown = names[part.index].map(lambda name: labels.value_label("series", name))  # as plot_sweep names
        colours = figures.palette(list(dict.fromkeys(shown)))  # and colours them
        colour_of = dict(zip(zip(part["engine"], part["variant"]), shown.map(colours)))
        low, high = sorted(ax.get_ylim())  # the measurements' range: a curve stops at it, a band is cut to it
        mine = curves[(curves["rows_per_insert"] == rows_per_insert)
                      & ((curves["engine"] == engine) if engine is not None else True)]
        laws = list(mine.groupby(["engine", "variant"], sort=False))
        laws_of[engine] += len(laws)
        for key, c in laws:
            holds = models.model_holds(c["model_holds"].iloc[0])
            colour = colour_of.get(key, "0.3")
            if not holds:
                (rejected if holds is False else untested)[engine] += 1
                continue
            inside = c["rows_per_s"].where(c["rows_per_s"].between(low, high))
            ax.plot(c["clients"], inside, color=colour, lw=1.0, alpha=0.8, zorder=1,
                    scaley=False)  # the measurements alone set the y-range
            drawn[engine] += 1
            band = c.assign(ci_low=c["ci_low"].clip(low, high), ci_high=c["ci_high"].clip(low, high))
            outline = np.concatenate([band[["clients", "ci_low"]].to_numpy(),
                                      band[["clients", "ci_high"]].to_numpy()[::-1]])
            ax.add_collection(PolyCollection([outline], facecolors=[colour], alpha=0.15, linewidths=0, zorder=0),
                              autolim=False)
    band = (Patch(facecolor="0.5", alpha=0.15, linewidth=0), Line2D([], [], color="0.3", lw=1.0))
    if fig.legends:  # one legend under every panel: "law rejected, not drawn: 3 of 15 at PostgreSQL, …"
        def counted(counts: Counter) -> str:
            return ", ".join(f"{counts[e]} of {laws_of[e]}" + (f" at {labels.label(e)}" if e is not None else "")
                             for e in engines if counts[e])

        handles, names = ([band], ["scalability law, 95 % band"]) if sum(drawn.values()) else ([], [])
        for counts, what in ((untested, "law not tested (held-out counts said nothing), not drawn: "),
                             (rejected, "law rejected, not drawn: ")):
            if sum(counts.values()):
                handles.append(Line2D([], [], ls="none"))
                names.append(captions.wrapped(what + counted(counts), 40))
        old = fig.legends[0]
        plots.legend_under(fig, [*old.legend_handles, *handles], [*(t.get_text() for t in old.get_texts()), *names],
                           title=old.get_title().get_text() or None)
        return fig
    for column, engine in enumerate(engines):  # turned: each column's legend takes its engine's laws, briefly
        ax = grid[-1, column]
        old = ax.get_legend()
        handles, names = ([band], ["law, 95 % band"]) if drawn[engine] else ([], [])
        missed = [f"{counts[engine]} {what}" for counts, what in ((rejected, "rejected"), (untested, "not tested"))
                  if counts[engine]]
        if missed:
            handles.append(Line2D([], [], ls="none"))
            names.append(f"laws not drawn of {laws_of[engine]}: " + ", ".join(missed))
        legend_under_column(ax, [*old.legend_handles, *handles], [*(t.get_text() for t in old.get_texts()), *names])
    return fig


def one_row(throughput: pd.DataFrame) -> pd.DataFrame:
    """The configurations of the smallest INSERT (one row at the paper scale): what the latency figure draws."""
    return throughput[throughput["rows_per_insert"] == throughput["rows_per_insert"].min()]


def plot_latency(throughput: pd.DataFrame):
    """P50 and P99 latency against clients, a line per variant, a panel per percentile (one-row INSERTs).

    Each point with its CI where ``throughput`` has them (:func:`with_intervals`).
    """

    one = one_row(throughput)
    long = pd.concat([
        one[["engine", "variant", "clients"]].assign(
            percentile=name, latency_ms=one[column],
            **{f"latency_ms_ci_{s}": one.get(f"{column}_ci_{s}", np.nan) for s in ("low", "high")})
        for column, name in (("latency_median_ms", "P50"), ("latency_p99_ms", "P99"))], ignore_index=True)
    return plot_by_clients(long, y="latency_ms", hue="variant", col="percentile", logy=True)


def plot_commits_per_flush(throughput: pd.DataFrame):
    """Commits per flush against clients, a line per variant, a panel per rows per INSERT."""

    return plot_by_clients(throughput, y="commits_per_flush", hue="variant", col="rows_per_insert",
                                   logy=True)


#: Notebook 04's terms (:func:`fit`'s ``term`` values) under the lab's names, with their units.
FIT_TERMS = {"intercept": ("overhead", "ms per statement"), "flush_share": ("flush", "ms per log flush"),
             "rows_per_insert": ("per_row", "ms per row")}


def tidy_fits(fits: pd.DataFrame, scalability_fits: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`fit`'s terms (``overhead``, ``flush``, ``per_row``, ms) and :func:`scalability`'s in the long form."""
    wide = fits.assign(estimate_=fits["estimate"])
    parts = []
    for old, (new, unit) in FIT_TERMS.items():
        part = wide[wide["term"] == old]
        parts.append(models.tidy(part, model="statement_time", notebook=NOTEBOOK_STEM,
                                 terms={new: models.Term("estimate_", "ci_low", "ci_high", unit)}))
    if scalability_fits is not None and not scalability_fits.empty:
        parts.append(scalability_fits[models.TIDY_COLUMNS])
    return pd.concat(parts, ignore_index=True)


#: Fewest distinct client counts the scalability law is fitted to: its three parameters, and one count
#: more than a held-out forecast (a count predicted from those below it) needs.
USL_MIN_LEVELS = 5
#: Points per configuration the law is fitted to: its 0.1 s windows averaged in this many consecutive blocks.
USL_BLOCKS = 5
#: The law's held-out check forecasts every measured client count from this one on, each from the counts below it
#: only (the paper grid: 32 from 1–16, 64 from 1–32): the law's claim is about where contention and coherency
#: bend the curve, which the highest counts test. A grid whose largest count is smaller has that one forecast.
HOLDOUT_FROM_CLIENTS = 32
#: A configuration of the law: one fit, and one set of forecasts.
LAW_KEYS = ["engine", "variant", "rows_per_insert"]


def usl_points(samples: pd.DataFrame) -> pd.DataFrame:
    """Statements/s of each configuration in :data:`USL_BLOCKS` consecutive blocks of its windows.

    One number per configuration gives a three-parameter law a handful of points and a held-out
    interval as wide as the axis; its 0.1 s windows are many but each leans on its neighbour.
    Blocks of consecutive windows are nearly independent repeats of the configuration's throughput.
    """
    windows = window_throughput(samples).sort_values([*CONFIG, "window"])
    windows = windows.assign(block=windows.groupby(CONFIG, sort=False).cumcount()
                             * USL_BLOCKS // windows.groupby(CONFIG, sort=False)["window"].transform("size"))
    blocks = windows.groupby([*CONFIG, "block"], sort=False)["rows_per_s"].mean().reset_index()
    return blocks.assign(statements_per_s=blocks["rows_per_s"] / blocks["rows_per_insert"])


def held_out_clients(levels) -> list[int]:
    """The client counts :func:`prediction` forecasts: those ≥ :data:`HOLDOUT_FROM_CLIENTS` (if none, the largest),
    each only when at least ``USL_MIN_LEVELS − 1`` counts below it are there to fit the law to.

    Examples
    --------
    >>> held_out_clients([1, 2, 4, 8, 16, 32, 64]), held_out_clients([1, 2, 4, 8, 16]), held_out_clients([1, 32, 64])
    ([32, 64], [16], [])
    """
    levels = sorted({int(c) for c in levels})
    wanted = [c for c in levels if c >= HOLDOUT_FROM_CLIENTS] or levels[-1:]
    return [c for c in wanted if sum(level < c for level in levels) >= USL_MIN_LEVELS - 1]


#: Columns of :func:`prediction`.
PREDICTION_COLUMNS = [*LAW_KEYS, "clients", "fit_max_clients", "n_observed", "observed", "predicted", "pi_low",
                      "pi_high", "inside", "relative_error", "informative"]


def prediction(samples: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """What the scalability law predicts at client counts it did not see, per engine × variant × rows per INSERT.

    For each count of :func:`held_out_clients` the law is fitted to the :func:`usl_points` of
    the counts below it only and asked for that count's mean statements/s
    (:func:`ingestlab.usl.usl_holdout`), against the 95 % prediction interval for the mean of
    that many new points. A forecast is ``informative`` when its interval lies above 0 and is
    narrower than the prediction itself; a wider one cannot miss and tests nothing, so its
    ``inside`` is left empty (as ``ingestlab summary`` counts "not tested").
    Configurations with fewer than :data:`USL_MIN_LEVELS` client counts (smoke runs) have none.

    Returns
    -------
    pandas.DataFrame
        One row per configuration and held-out count (:data:`PREDICTION_COLUMNS`): ``clients``
        held out, ``fit_max_clients`` the largest count fitted, ``n_observed`` its points,
        ``observed``, ``predicted``, ``pi_low``, ``pi_high`` (statements/s), ``inside`` (True,
        False, or None where not informative), ``relative_error`` ((predicted − observed) /
        observed), ``informative``.
    """
    from ingestlab.usl import usl_holdout

    rows = []
    for key, g in usl_points(samples).groupby(LAW_KEYS, sort=False):
        if g["clients"].nunique() < USL_MIN_LEVELS:
            continue
        clients, rate = g["clients"].to_numpy(float), g["statements_per_s"].to_numpy(float)
        for held in held_out_clients(clients):
            f = usl_holdout(clients, rate, hold_out=held, alpha=alpha).iloc[0]
            informative = bool(f["pi_low"] > 0 and f["pi_high"] - f["pi_low"] < f["predicted"])
            rows.append({**dict(zip(LAW_KEYS, key)), "clients": held,
                         "fit_max_clients": int(clients[clients < held].max()),
                         "n_observed": int(f["n_observed"]), "observed": f["observed"], "predicted": f["predicted"],
                         "pi_low": f["pi_low"], "pi_high": f["pi_high"],
                         "inside": bool(f["inside"]) if informative else None,
                         "relative_error": f["relative_error"], "informative": informative})
    return pd.DataFrame(rows, columns=PREDICTION_COLUMNS)


def _forecast_text(r) -> str:
    return (f"{r.observed:,.0f} statements/s measured at {r.clients} clients, {r.predicted:,.0f} predicted from "
            f"the counts up to {r.fit_max_clients} (95 % PI {r.pi_low:,.0f}–{r.pi_high:,.0f})")


def forecast_verdict(forecasts: pd.DataFrame) -> dict:
    """One fit's adequacy from its forecasts (:func:`prediction`'s rows of one configuration), for ``fits.csv``.

    ``model_holds`` is True when every informative forecast fell inside its prediction interval,
    False when one did not, None ("not tested") when no forecast was informative; ``loo_in_pi``
    is the share of the informative forecasts inside (empty when none was), ``loo_error`` the
    median |relative error| over all the forecasts (an interval too wide to test the law does
    not make its error meaningless).
    """
    if forecasts.empty:
        return {"loo_error": np.nan, "loo_in_pi": np.nan, "model_holds": None,
                "model_note": f"not tested: no client count had {USL_MIN_LEVELS - 1} counts below it to forecast "
                              "it from"}
    tested = forecasts[forecasts["informative"]]
    inside = tested["inside"].astype(bool)
    holds = bool(inside.all()) if len(tested) else None
    missed = "; ".join(_forecast_text(r) for r in tested[~inside].itertuples())
    note = ("" if holds else f"fitted to the counts below, the law missed: {missed}" if holds is False else
            "not tested: every held-out interval is wider than its prediction ("
            + "; ".join(_forecast_text(r) for r in forecasts.itertuples()) + ")")
    return {"loo_error": float(forecasts["relative_error"].abs().median()),
            "loo_in_pi": float(inside.mean()) if len(tested) else np.nan, "model_holds": holds, "model_note": note}


def scalability(samples: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """The Universal Scalability Law per engine × variant × rows per INSERT, and whether it foresees the high counts.

    ``X(N) = λN / (1 + σ(N − 1) + κN(N − 1))`` is fitted to each configuration's statements/s
    over its client counts (:func:`ingestlab.usl.fit_usl`: :data:`USL_BLOCKS` points per count,
    :func:`usl_points`, HC3 delta intervals); ``σ`` is the share of the work that serialises (contention: here the log
    flush the clients queue for), ``κ`` the cost of keeping clients coherent, ``peak_clients``
    where the law peaks. Then it is checked by forecasts (:func:`prediction`): every client
    count from :data:`HOLDOUT_FROM_CLIENTS` on is predicted by the law fitted to the counts below
    it, and the fit's verdict (:func:`forecast_verdict`) says whether each informative forecast's measured
    throughput fell inside its 95 % prediction interval. Groups with fewer than
    :data:`USL_MIN_LEVELS` client counts (smoke runs) are left out: the law is not estimable there.

    Returns
    -------
    pandas.DataFrame
        The lab's long form (:data:`ingestlab.models.TIDY_COLUMNS`), terms ``lambda``,
        ``sigma``, ``kappa``, ``peak_clients``; model ``usl rows_per_insert=R``; the verdict in
        ``model_holds``, ``loo_error``, ``loo_in_pi``, ``model_note``; plus ``rows_per_insert``.
    """
    from ingestlab.usl import fit_usl

    forecasts = dict(list(prediction(samples, alpha=alpha).groupby(LAW_KEYS, sort=False)))
    rows = []
    for key, g in usl_points(samples).groupby(LAW_KEYS, sort=False):
        if g["clients"].nunique() < USL_MIN_LEVELS:
            continue
        engine, variant, rows_per_insert = key
        terms = fit_usl(g["clients"].to_numpy(float), g["statements_per_s"].to_numpy(float), alpha=alpha)
        check = forecast_verdict(forecasts.get(key, pd.DataFrame(columns=PREDICTION_COLUMNS)))
        for t in terms.to_dict("records"):
            rows.append({"notebook": NOTEBOOK_STEM, "engine": engine, "variant": variant,
                         "model": f"usl rows_per_insert={rows_per_insert}", "method": "nls", "term": t["term"],
                         "estimate": t["estimate"], "ci_low": t["ci_low"], "ci_high": t["ci_high"], "unit": t["unit"],
                         "n_points": t["n_points"], "r2": t["r2"], "adequacy_test": "forecast_held_out_clients",
                         "lack_of_fit_p": np.nan, **check, "rows_per_insert": rows_per_insert})
    return pd.DataFrame(rows, columns=[*models.TIDY_COLUMNS, "rows_per_insert"])


def law_curves(samples: pd.DataFrame, scalability_fits: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Each :func:`scalability` fit's law as rows/s over the client counts it was fitted to, with its confidence band.

    The curve and its pointwise band (:func:`ingestlab.usl.usl_band`, delta method, 1 − ``alpha``)
    at :data:`ingestlab.figures.MODEL_POINTS` client counts from the fewest measured to the most,
    never beyond, times rows per INSERT; ``model_holds`` carried from the fit, for the figure.

    Returns
    -------
    pandas.DataFrame
        ``engine``, ``variant``, ``rows_per_insert``, ``clients``, ``rows_per_s``, ``ci_low``,
        ``ci_high``, ``model_holds``.
    """
    from ingestlab.usl import usl_band

    holds = {tuple(r[:3]): r[3] for r in scalability_fits[[*LAW_KEYS, "model_holds"]].itertuples(index=False)}
    parts = []
    for key, g in usl_points(samples).groupby(LAW_KEYS, sort=False):
        if key not in holds:
            continue
        grid = np.geomspace(g["clients"].min(), g["clients"].max(), figures.MODEL_POINTS)
        band = usl_band(g["clients"], g["statements_per_s"], grid, alpha=alpha)
        scaled = band[["predicted", "ci_low", "ci_high"]] * key[2]  # statements/s → rows/s
        parts.append(pd.DataFrame({**dict(zip(LAW_KEYS, key)), "clients": grid, "rows_per_s": scaled["predicted"],
                                   "ci_low": scaled["ci_low"], "ci_high": scaled["ci_high"],
                                   "model_holds": holds[key]}))
    columns = [*LAW_KEYS, "clients", "rows_per_s", "ci_low", "ci_high", "model_holds"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def describe_scalability(scalability_fits: pd.DataFrame, throughput: pd.DataFrame) -> list[str]:
    """Per engine, variant and rows per INSERT: σ, κ and the peak with their CIs, and the forecasts' verdict."""
    if scalability_fits.empty:
        counts = ", ".join(str(c) for c in sorted(throughput["clients"].unique()))
        return [f"The scalability law is not estimable at this scale: it needs at least {USL_MIN_LEVELS} client "
                f"counts (this run measured {counts})."]
    lines = []
    for (engine, variant, model), g in scalability_fits.groupby(["engine", "variant", "model"], sort=False):
        t = g.set_index("term")
        check = g.iloc[0]
        holds = models.model_holds(check["model_holds"])
        verdict_text = (f"fitted to the counts below each held-out count, it foresaw every one it could be tested on "
                        f"(median error {check['loo_error']:.1%})" if holds else check["model_note"])
        lines.append(f"**{engine} {variant}** ({model.removeprefix('usl ').replace('_', ' ')}): σ = "
                     f"{report.format_estimate(t.loc['sigma', 'estimate'], t.loc['sigma', 'ci_low'], t.loc['sigma', 'ci_high'], unit='')}"
                     f", κ = {report.format_estimate(t.loc['kappa', 'estimate'], t.loc['kappa', 'ci_low'], t.loc['kappa', 'ci_high'], unit='')}"
                     f", peak at {report.format_estimate(t.loc['peak_clients', 'estimate'], t.loc['peak_clients', 'ci_low'], t.loc['peak_clients', 'ci_high'], unit='clients')}; "
                     f"{verdict_text}.")
    return lines


def describe_prediction(table: pd.DataFrame) -> list[str]:
    """Each forecast of :func:`prediction`, measured against predicted with its interval, and how many fell inside."""
    if table.empty:
        return [f"No forecast: the scalability law is not estimable at this scale (it needs at least {USL_MIN_LEVELS} "
                f"client counts, {USL_MIN_LEVELS - 1} of them below each count it predicts)."]
    lines = [f"**{r.engine} {r.variant}**, {r.rows_per_insert}-row INSERTs: " + _forecast_text(r)
             + f", error {r.relative_error:+.1%}: "
             + (("inside" if r.inside else "outside") if r.informative else "an interval wider than the prediction, "
                "no test")
             for r in table.itertuples()]
    tested = table[table["informative"]]
    if tested.empty:
        return [*lines, f"None of the {len(table)} forecasts could test the law: each interval is wider than its "
                        "prediction."]
    lines.append(f"The law foresaw {int(tested['inside'].astype(bool).sum())} of {len(tested)} informative forecasts"
                 + (f"; {len(table) - len(tested)} more had an interval too wide to test it" if len(tested) < len(table)
                    else "") + ".")
    return lines


#: Share of its wall clock a client may spend on CPU before the notebook calls it CPU-bound.
CPU_BOUND_SHARE = 0.8


# -- what the notebook says -----------------------------------------------------------------
def describe_grid(params: Params, throughput: pd.DataFrame, cpu: pd.DataFrame) -> list[str]:
    """What ran, how many statements, and whether the client (not the engine) could have been the limit."""
    busiest = cpu["cpu_share"].max()
    return [f"{len(throughput)} configurations ({', '.join(params.variants)} × clients {list(params.clients)} × "
            f"rows per INSERT {list(params.rows_per_insert)}), {params.loop} loop, {params.warmup_s:g} s warm-up "
            f"(kept, flagged) + {params.duration_s:g} s each: {int(throughput['statements'].sum()):,} measured "
            f"statements, {int(throughput['warmup_statements'].sum()):,} warm-up.",
            f"{_hosting(cpu)}: one client used {cpu['cpu_ns'].sum() / max(cpu['statements'].sum(), 1) / 1e3:.0f} µs "
            f"of CPU per statement (median over configurations "
            f"{throughput['client_cpu_us_per_statement'].median():.0f} µs) and at most {busiest:.0%} of its wall "
            "clock, " + ("so no client was CPU-bound" if busiest < CPU_BOUND_SHARE else
                         "so some client was near CPU-bound and may have limited its configuration's rate")
            + "; with more clients than the machine's cores the clients do share the cores with the server."]


def _hosting(cpu: pd.DataFrame) -> str:
    """How the clients ran (:attr:`ingestlab.concurrency.ClientRun.workers`), as the notebook says it."""
    hosted = set(cpu["workers"].dropna()) if "workers" in cpu else set()
    if hosted == {"threads"}:
        return "The clients were threads of one process, each on its own connection (as pgbench's and mariadb-slap's)"
    if hosted == {"processes"}:
        return "Each client was its own process"
    return "The clients were threads of one process or processes of their own (see client_cpu.parquet's workers)"


# -- figures ---------------------------------------------------------------------------------
def plot_by_clients(data: pd.DataFrame, *, y: str, hue: str = "variant", col: str = "rows_per_insert",
                    x: str = "clients", logy: bool | str = "auto") -> matplotlib.figure.Figure:
    """``y`` against the number of clients (log x over a decade), a line per ``hue``, a panel per level of ``col`` and engine.

    One row of panels per engine (when there are several: each engine's variants in shades of
    its colour, at most five a panel), one column per level of ``col``, titled
    ``<col>: <level>``; beyond two engines the grid is turned (:func:`_panels`): a column per
    engine, titled with it, a row per level, so that four engines keep the page's height.
    Every panel shares the ``y`` axis (log when its values span decades).
    One legend for the figure sits under the panels (:func:`ingestlab.plots.legend_under`), so they keep the
    page's width; turned, one under each engine's column, its variants named without the engine
    (:func:`legend_under_column`). Where ``data`` has ``<y>_ci_low``/``<y>_ci_high`` (:func:`with_intervals`),
    each point has its CI.
    """
    import matplotlib.pyplot as plt

    low, high = (f"{y}_ci_low", f"{y}_ci_high") if f"{y}_ci_low" in data and f"{y}_ci_high" in data else (None, None)
    engines, levels = _grid(data, col)
    data = data.assign(series=_series(data, hue))
    nrows, ncols = _shape(engines, levels)
    turned = _turned(engines)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True, layout="constrained",
                             figsize=(min(figures.PAGE_WIDTH, 2.4 * ncols + 0.8), 0.8 + (1.5 if turned else 2.3) * nrows))
    # decided once for every panel (they share both axes): log where the figure's values span decades (asked for:
    # a decade at least, as plots.set_scale decides)
    logy = "always" if logy and plots.spans_decades(data[y], figures.LOG_DECADES if logy == "auto" else 1.0) else False
    logx = "always" if plots.spans_decades(data[x], 1.0) else False
    handles = {}
    for (row, column), engine, level in _panels(engines, levels):
        ax = axes[row, column]
        part = data[(data[col] == level) & ((data["engine"] == engine) if engine is not None else True)]
        level_name = f"{labels.column_label(col)}: {labels.label(level)}"
        if row == 0:  # over the columns: the levels, or (turned) the engines
            ax.set_title(captions.wrapped(labels.label(engine), 18) if turned else level_name)
        if part.empty:
            ax.text(0.5, 0.5, "not measured", transform=ax.transAxes, ha="center", va="center", fontsize="small")
            continue
        plots.plot_sweep(part, x=x, y=y, hue="series", ax=ax, logx=logx, logy=logy, legend="outside", low=low,
                           high=high)
        legend = ax.get_legend()
        if legend is not None:  # the figure's one legend gathers every panel's entries
            for handle, text in zip(legend.legend_handles, legend.get_texts()):
                handles.setdefault(text.get_text(), handle)
            legend.remove()
        ax.set_xticks(sorted(data[x].unique()))
        ax.get_xaxis().set_major_formatter(plots.plain_ticks())
        ax.minorticks_off()
        ax.set_xlabel(labels.column_label(x) if row == nrows - 1 else "")
        beside = labels.label(engine) if engine is not None and not turned else None
        named = column == 0 and (not turned or row == nrows // 2)  # turned: once, beside the middle row
        ax.set_ylabel((f"{beside}\n" if beside else "") + labels.column_label(y) if named else "")
        if turned and column == ncols - 1:  # the level of each row, in the right margin
            ax.annotate(captions.wrapped(level_name, 12), xy=(1.04, 0.5), xycoords="axes fraction", rotation=270,
                        ha="left", va="center", fontsize="small")
    if not turned:
        plots.legend_under(fig, list(handles.values()), list(handles))
        return fig
    for column, engine in enumerate(engines):  # each engine's variants under its own column, named without it
        prefix = f"{labels.label(engine)}, "
        mine = [(handle, name.removeprefix(prefix)) for name, handle in handles.items() if name.startswith(prefix)]
        legend_under_column(axes[-1, column], [h for h, _ in mine], [n for _, n in mine])
    return fig


def legend_under_column(ax, handles: list, names: list[str]) -> None:
    """One engine's legend under ``ax``, the bottom panel of its column in a turned grid (:func:`_panels`).

    Hung below the panel's tick labels and axis label, at most as wide as the column; replaces the
    legend ``ax`` had (a caller adds entries to it this way).
    """
    fig = ax.figure
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    renderer = fig.canvas.get_renderer()
    drop_pt = (ax.get_window_extent(renderer).y0 - ax.get_tightbbox(renderer).y0) * 72 / fig.dpi + 2
    anchor = matplotlib.transforms.offset_copy(ax.transAxes, fig=fig, y=-drop_pt, units="points")
    ax.legend(handles, [captions.wrapped(name, 20) for name in names], loc="upper center",
              bbox_to_anchor=(0.5, 0.0), bbox_transform=anchor, borderaxespad=0, fontsize="small", frameon=False,
              handlelength=1.4, handletextpad=0.5)  # short handles: a column's width is the legend's


def _grid(data: pd.DataFrame, col: str) -> tuple[list, list]:
    # the panels' rows (engines, or one row of None for one engine) and columns (levels of `col`), in the data's order
    engines = list(dict.fromkeys(data["engine"])) if "engine" in data and data["engine"].nunique() > 1 else [None]
    return engines, list(dict.fromkeys(data[col]))


def _turned(engines: list) -> bool:
    # whether the grid is turned, an engine a column (_panels)
    return len(engines) > 2


def _shape(engines: list, levels: list) -> tuple[int, int]:
    # the grid's rows and columns: an engine a row, a level a column; turned beyond two engines (_panels)
    return (len(levels), len(engines)) if _turned(engines) else (len(engines), len(levels))


def _panels(engines: list, levels: list):
    """Each panel's place in a grid of :func:`_shape` (row, column), with its engine and level, in that order.

    Up to two engines, an engine a row and a level a column; beyond two, an engine a column and
    a level a row: rows of engines would take four engines' 2.3 in each past the page's 5.5 in.
    """
    turned = _turned(engines)
    for (i, engine), (j, level) in itertools.product(enumerate(engines), enumerate(levels)):
        yield ((j, i) if turned else (i, j)), engine, level


def _series(data: pd.DataFrame, hue: str) -> pd.Series:
    # a point's series in the legend: its engine too where several engines share a figure (then their colours);
    # with one engine the ids themselves, which plot_sweep names (labels.value_label)
    if "engine" in data and data["engine"].nunique() > 1:
        return labels.join(data, ["engine", hue])
    return data[hue]


def fit_run(folder: str | os.PathLike) -> pd.DataFrame:
    """Notebook 04's fits in the lab's long form, as its ``fits.csv`` holds them, computed again from the run in ``folder``.

    Its declaration's ``fit`` (from ``results.parquet`` and ``throughput.parquet``: the lines and the scalability law); ``bench/refit.py`` compares it with the stored ``fits.csv``.
    """
    samples = pd.read_parquet(Path(folder) / "results.parquet")
    throughput = with_intervals(pd.read_parquet(Path(folder) / "throughput.parquet"), samples)
    return tidy_fits(fit(throughput), scalability(samples))
