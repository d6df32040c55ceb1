"""Notebook 06's analysis: the size fit, count over full scan, the read floor, memory, sentences, figures and headline."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from ingestlab import findings, intervals, models
from ingestlab.adequacy import ADEQUACY_COLUMNS
from ingestlab.workloads.csv_scan import FLOOR, NOTEBOOK_STEM, STUDY_GB


# -- analysis ------------------------------------------------------------------------------------------
def reported(scans: pd.DataFrame) -> pd.DataFrame:
    """The reported runs (the last round) that completed."""
    return scans[scans["reported"] & (scans["status"] == "ok")]


def completed_sizes(scans: pd.DataFrame) -> pd.DataFrame:
    """The reported runs of each engine × query below the smallest size at which it failed (memory, time, error).

    A fit over the sizes an engine completed, never past the one where it ran out: a size
    completed after a failure at a smaller one is left out too (its engine was not the same
    engine any more: restarted, or the cache cleared by the kill).
    """
    ok = reported(scans)
    failed = scans[scans["reported"] & (scans["status"] != "ok")].groupby(["engine", "query"])["gb"].min()
    if failed.empty:
        return ok
    limit = ok.set_index(["engine", "query"]).index.map(lambda k: failed.get(k, float("inf")))
    return ok[ok["gb"].to_numpy() < limit.to_numpy(dtype=float)]


def _no_negative_fixed_cost(fits: pd.DataFrame, data: pd.DataFrame) -> pd.DataFrame:
    """A scan cannot take negative time: a fit whose fixed cost came out below 0 is refitted through the origin.

    OLS: ``seconds = GB × per_GB`` (statsmodels, HC2 interval), the fixed cost 0 with the
    unconstrained fit's upper bound kept as its CI's; Theil–Sen: the median of seconds per GB,
    its interval from order statistics (none where the sizes are too few for 95 %), never the
    unconstrained fit's, which need not hold it.
    ``model_note`` says so, with the unconstrained estimate. Every fixed cost's interval is cut
    at 0 as well: the cost lies in [0, ∞), and an interval cut to where the parameter can lie
    covers it at least as often.
    """
    from statsmodels.regression.linear_model import OLS

    fits = fits.copy()
    for i, row in fits.iterrows():
        if not row["intercept"] < 0:
            continue
        note = f"fixed cost constrained at 0 s (unconstrained {row['intercept']:.3g} s)"
        if row["method"] == "ols":
            origin = OLS(data["seconds"].to_numpy(float), data[["gb"]].to_numpy(float)).fit(cov_type="HC2")
            low, high = origin.conf_int(alpha=0.05)[0]
            fits.loc[i, ["slope", "slope_ci_low", "slope_ci_high"]] = [origin.params[0], low, high]
            fits.loc[i, ["intercept_ci_low", "intercept_ci_high"]] = [0.0, max(0.0, row["intercept_ci_high"])]
            fits.loc[i, "ci_method"] = "hc2_origin"
        else:  # the median of the ratios, with its own order-statistic interval (none where too few reach 95 %)
            ratio = intervals.median_ci_exact(data["seconds"] / data["gb"])
            reached = ratio["confidence"] >= 0.95
            fits.loc[i, ["slope", "slope_ci_low", "slope_ci_high"]] = [
                ratio["median"], ratio["ci_low"] if reached else np.nan, ratio["ci_high"] if reached else np.nan]
            fits.loc[i, "ci_method"] = "median_of_ratios"
            if not reached:
                note += f"; {ratio['n']} sizes give a median's interval {ratio['confidence']:.1%} at most: none given"
        fits.loc[i, "intercept"] = 0.0
        old = row.get("model_note")
        fits.loc[i, "model_note"] = f"{old}; {note}" if isinstance(old, str) and old else note
    if "intercept_ci_low" in fits.columns:
        fits["intercept_ci_low"] = fits["intercept_ci_low"].clip(lower=0.0)
    return fits


def fit(scans: pd.DataFrame) -> pd.DataFrame:
    """``seconds = fixed + GB × per_GB`` per engine × query over the reported runs (OLS + Theil–Sen).

    Groups with fewer than three sizes are left out. Columns follow ``fits.csv``: ``engine``,
    ``variant`` (the query), ``method``, ``fixed_s`` and ``per_gb_s`` with 95 % CIs, ``r2``,
    ``n_points``, and ``gb_per_s`` (1 / ``per_gb_s``: the marginal rate; NaN where the time
    does not grow with the size, i.e. ``per_gb_s``'s CI reaches 0, as for ``LIMIT 1``).
    """
    data = completed_sizes(scans)
    out = []
    for (engine, query), g in data.groupby(["engine", "query"], sort=False):
        if g["gb"].nunique() < 3:
            continue
        f = models.fit_linear(g, x="gb", y="seconds", adequacy=True).assign(engine=engine, variant=query)
        out.append(_no_negative_fixed_cost(f, g))
    if not out:  # fewer than three sizes: measured, and "not estimable at this scale" (describe_fits says so)
        return pd.DataFrame(columns=["engine", "variant", "method", "fixed_s", "fixed_ci_low_s", "fixed_ci_high_s",
                                     "per_gb_s", "per_gb_ci_low_s", "per_gb_ci_high_s", "gb_per_s", "r2", "n_points",
                                     *ADEQUACY_COLUMNS])
    f = pd.concat(out, ignore_index=True).rename(columns={
        "slope": "per_gb_s", "slope_se": "per_gb_se_s", "slope_ci_low": "per_gb_ci_low_s",
        "slope_ci_high": "per_gb_ci_high_s", "intercept": "fixed_s", "intercept_ci_low": "fixed_ci_low_s",
        "intercept_ci_high": "fixed_ci_high_s"})
    # a marginal rate exists only where the time grows with the size (CI above 0); LIMIT 1 does not
    f["gb_per_s"] = (1 / f["per_gb_s"]).where(f["per_gb_ci_low_s"] > 0)
    first = ["engine", "variant", "method", "fixed_s", "fixed_ci_low_s", "fixed_ci_high_s", "per_gb_s",
             "per_gb_ci_low_s", "per_gb_ci_high_s", "gb_per_s", "r2", "n_points"]
    return f[first + [c for c in f.columns if c not in first]]


def count_vs_full(fits: pd.DataFrame) -> pd.DataFrame:
    """Per engine: cost per GB of ``COUNT(*)`` over that of the full scan, with a 95 % CI.

    A ratio well below 1 means ``COUNT(*)`` reads (parses) less than the full scan — the
    study's question "does it read fewer columns?". See :func:`ingestlab.intervals.slope_ratio`.
    """
    ols = fits[fits["method"] == "ols"] if not fits.empty else fits
    rows = []
    for engine, g in ols.groupby("engine", sort=False):
        q = g.set_index("variant")
        if {"count_star", "full_scan_order_by_limit_1"} <= set(q.index):
            c, f = q.loc["count_star"], q.loc["full_scan_order_by_limit_1"]
            r = intervals.slope_ratio(c["per_gb_s"], c["per_gb_se_s"], c["df_resid"], f["per_gb_s"], f["per_gb_se_s"],
                                   f["df_resid"])
            rows.append({"engine": engine, "count_per_gb_s": c["per_gb_s"], "full_per_gb_s": f["per_gb_s"], **r})
    return pd.DataFrame(rows)


def with_floor(scans: pd.DataFrame) -> pd.DataFrame:
    """Reported engine runs with the same size's and round's file read rate (``floor_gb_per_s``) and the fraction."""
    data = reported(scans)
    floor = data[data["engine"] == FLOOR][["gb", "round", "cache", "gb_per_s"]].rename(columns={"gb_per_s": "floor_gb_per_s"})
    out = data[data["engine"] != FLOOR].merge(floor, on=["gb", "round", "cache"], how="left")
    return out.assign(floor_fraction=out["gb_per_s"] / out["floor_gb_per_s"])


#: What a scan that did not finish is said to have done, by its ``status`` (figures mark it with this text).
STATUS_TEXT = {"oom": "out of memory, stopped at the cap", "timeout": "stopped at the time limit",
               "crashed": "crashed", "error": "failed"}


def failure_text(status: pd.Series) -> pd.Series:
    """Each scan's failure in words (:data:`STATUS_TEXT`), empty for a scan that finished.

    Examples
    --------
    >>> failure_text(pd.Series(["ok", "oom"])).tolist()
    ['', 'out of memory, stopped at the cap']
    """
    return status.map(lambda s: "" if s == "ok" else STATUS_TEXT.get(s, f"did not finish ({s})"))


def failures_sentence(scans: pd.DataFrame, *, memory: bool = False) -> str:
    """The scans that did not finish, in one sentence for a figure's finding ("" when every scan finished).

    ``memory``: the figure draws peak memory, which for a scan stopped at the cap is the cap.

    Examples
    --------
    >>> scans = pd.DataFrame({"engine": "polars", "query": "count_star", "gb": 5.3, "round": [1, 2, 3],
    ...                       "status": ["oom", "ok", "oom"]})
    >>> failures_sentence(scans, memory=True)
    'Did not finish: Polars, COUNT(*) at 5.3 GB (2 of 3 rounds: out of memory, stopped at the cap); its peak memory there is the cap, not a measurement.'
    """
    from ingestlab import labels

    data = scans[scans["engine"] != FLOOR]
    rounds = data.groupby(["engine", "query", "gb"], sort=False)
    said = [f"{labels.label(engine)}, {labels.label(query)} at {gb:.3g} GB ({int((g['status'] != 'ok').sum())} of "
            f"{len(g)} rounds: {'; '.join(dict.fromkeys(failure_text(g.loc[g['status'] != 'ok', 'status'])))})"
            for (engine, query, gb), g in rounds if (g["status"] != "ok").any()]
    if not said:
        return ""
    capped = memory and (data["status"] == "oom").any()
    return ("Did not finish: " + "; ".join(said)
            + ("; its peak memory there is the cap, not a measurement." if capped else "."))


def fits_finding(scans: pd.DataFrame, fits: pd.DataFrame) -> str:
    """The scan-time figure's finding: the fitted costs per GB (:func:`ingestlab.findings.fits`), and what did not finish."""
    from ingestlab import findings

    return " ".join(t for t in (findings.fits(tidy_fits(fits), "per_gb"), failures_sentence(scans)) if t)


def memory_finding(scans: pd.DataFrame) -> str:
    """The peak-memory figure's finding: the spread over the scans of the largest table that finished, and the rest."""
    from ingestlab import findings

    data = largest(scans)
    return " ".join(t for t in (findings.spread(data[data["failed"] == ""], "peak_rss_mb", by=["engine", "query"],
                                                unit="MB", what="peak memory"),
                                failures_sentence(scans[scans["gb"] == scans["gb"].max()], memory=True)) if t)


def floor_finding(floored: pd.DataFrame, scans: pd.DataFrame) -> str:
    """The read-floor figure's finding: the spread of the shares, and the scans of that size that did not finish."""
    from ingestlab import findings

    stopped = scans[(scans["gb"] == scans["gb"].max()) & (scans["query"] != "limit_1")]
    return " ".join(t for t in (findings.spread(floor_bars(floored), "floor_fraction", by=["engine", "query"],
                                                what="share of the read floor's rate"),
                                failures_sentence(stopped)) if t)


def largest(scans: pd.DataFrame) -> pd.DataFrame:
    """Every engine × query at the largest size, last round, whatever its status (``failed``: what went wrong)."""
    data = scans[(scans["gb"] == scans["gb"].max()) & scans["reported"]]
    data = data[data["engine"] != FLOOR]
    return data.assign(failed=failure_text(data["status"]))


def live_vs_published(scans: pd.DataFrame) -> pd.DataFrame:
    """The study's times (as GB/s of its 5.09 GB table) and peak memory beside the live ones at the largest size.

    Returns
    -------
    pandas.DataFrame
        ``source`` (``published`` / ``live``), ``engine``, ``query``, ``size_gb``, ``seconds``,
        ``gb_per_s``, ``peak_mb``, ``note``.
    """
    from ingestlab import published

    times = published.load("starrocks_csv_scan_times")
    times = times[times["storage"] == "hdfs"]
    memory = published.load("starrocks_csv_peak_memory").set_index("engine")["peak_mb"]
    pub = pd.DataFrame({
        "source": "published", "engine": times["engine"] + " " + times["version"].astype(str) + " (" + times["stage"] + ")",
        "query": times["scenario"], "size_gb": STUDY_GB, "seconds": times["elapsed_s"],
        "gb_per_s": STUDY_GB / times["elapsed_s"], "peak_mb": times["engine"].map(memory),
        "note": "HDFS, 4 cores; peak memory: the seed's one figure per engine, " + times["run_reported"]})
    live = largest(scans)
    live = pd.DataFrame({"source": "live", "engine": live["engine"], "query": live["query"], "size_gb": live["gb"],
                         "seconds": live["seconds"], "gb_per_s": live["gb_per_s"], "peak_mb": live["peak_rss_mb"],
                         "note": live["cache"] + " cache, 2 cores, round " + live["round"].astype(str) + ", " + live["status"]})
    return pd.concat([pub, live], ignore_index=True)


# -- sentences for the notebook -----------------------------------------------------------------------
def describe_answers(scans: pd.DataFrame) -> str:
    """How many runs answered, and that every answer agreed with the generator (or what did not)."""
    runs = scans[scans["engine"] != FLOOR]
    counts = runs["status"].value_counts().to_dict()
    others = runs[runs["status"] != "ok"]
    text = (f"{len(runs)} runs over {runs['engine'].nunique()} engines; statuses: "
            + ", ".join(f"{k} {v}" for k, v in counts.items())
            + ". Every completed run's `COUNT(*)` equals the generator's row count and every `ORDER BY 1 LIMIT 1` "
              "its minimum row (a disagreement stops the run).")
    if not others.empty:
        text += " Not completed: " + "; ".join(f"{r.engine} {r.query} {r.gb:.3g} GB round {r.round}: {r.status} "
                                               f"(peak {r.peak_rss_mb:.0f} MB)" for r in others.itertuples()) + "."
    return text


def describe_fits(fits: pd.DataFrame) -> str:
    """One line per engine × query: fixed cost, cost per GB (CI), the rate it implies, and whether the line holds."""
    ols = fits[fits["method"] == "ols"]
    if ols.empty:
        return ("No fit: time against size is not estimable at this scale (a fit needs at least three sizes an "
                "engine completed).")
    return "\n".join(f"- **{r.engine}** `{r.variant}`: {r.fixed_s:.3g} s fixed + {r.per_gb_s:.3g} s/GB "
                     f"(95 % CI {r.per_gb_ci_low_s:.3g}–{r.per_gb_ci_high_s:.3g}) → "
                     + (f"{r.gb_per_s:.3g} GB/s" if pd.notna(r.gb_per_s) else "no rate: the time does not grow "
                        "with the size") + f", R² {r.r2:.3f}{_holds(r)}" for r in ols.itertuples())


def _holds(fit) -> str:
    # a rejected line is said in words (the figure draws none); any other note, e.g. the fixed cost held at 0, in brackets
    note = fit.model_note if isinstance(fit.model_note, str) else ""
    if models.model_holds(fit.model_holds) is False:
        return f" — **the line does not hold** ({note}): the figure shows these points without it"
    return f" ({note})" if note else ""


def prediction(scans: pd.DataFrame) -> pd.DataFrame:
    """What each reader × query's line predicts for the largest size it completed, fitted without it.

    ``seconds = fixed + GB × per_GB`` is fitted again to the smaller sizes the reader completed
    (:func:`completed_sizes`; the fixed cost held at 0 where it comes out negative, constant
    variance as in :func:`fit`; :func:`ingestlab.adequacy.held_out_table`) and asked for the
    largest one's time, against the 95 % prediction interval for one new run. The read floor is
    left out: it is no reader.

    Returns
    -------
    pandas.DataFrame
        ``engine``, ``query``, ``gb`` (the size held out), ``predicted_s``, ``pi_low_s``,
        ``pi_high_s``, ``observed_median_s``, ``runs``, ``runs_inside``, ``inside`` and ``note``
        (why there is no prediction: too few sizes besides the largest, as at smoke scale).
    """
    from ingestlab.adequacy import held_out_table

    data = completed_sizes(scans)
    table = held_out_table(data[data["engine"] != FLOOR], x="gb", y="seconds", by=["engine", "query"],
                           variance="constant", nonnegative_intercept=True)
    return table.rename(columns={"predicted": "predicted_s", "pi_low": "pi_low_s", "pi_high": "pi_high_s",
                                 "observed_median": "observed_median_s"})


def describe_prediction(table: pd.DataFrame) -> list[str]:
    """Per reader × query, the largest completed size's time against the line fitted without it, or why not."""
    if table.empty:
        return ["No prediction: no reader completed a scan."]
    lines = []
    for r in table.itertuples():
        what = f"**{r.engine}** `{r.query}`, {r.gb:.3g} GB left out of the fit"
        if r.note:
            lines.append(f"{what}: no held-out check, {r.note}.")
            continue
        runs = f" (median of {r.runs} runs, {r.runs_inside} inside the interval)" if r.runs > 1 else ""
        lines.append(f"{what}: {r.observed_median_s:.3g} s measured{runs}, {r.predicted_s:.3g} s predicted "
                     f"(95 % PI {r.pi_low_s:.3g} to {r.pi_high_s:.3g}): " + ("inside." if r.inside else "**outside**."))
    lines.append(findings.foresaw(table, unseen="size it did not see", among="reader × query pairs",
                                  untested="No reader completed enough sizes for a held-out check: the line needs "
                                           "three runs below the largest size."))
    return lines


def describe_ratio(ratios: pd.DataFrame) -> str:
    """Which engines' ``COUNT(*)`` costs less per GB than their full scan (CI below 1)."""
    lines = []
    for r in ratios.itertuples():
        verdict = ("reads less" if r.ci_high < 1 else "no cheaper" if r.ci_low <= 1 <= r.ci_high
                   else "costs more")
        lines.append(f"- **{r.engine}**: COUNT(*)/full scan per GB = {r.ratio:.2f} (95 % CI {r.ci_low:.2f}–{r.ci_high:.2f}): "
                     f"{verdict}")
    return "\n".join(lines)


def describe_memory(scans: pd.DataFrame) -> str:
    """Peak memory per engine at the largest size (the largest over its queries), with what was measured."""
    data = largest(scans)
    g = data.sort_values("peak_rss_mb").groupby("engine", sort=False)
    return "\n".join(f"- **{e}**: peak {x['peak_rss_mb'].max():.0f} MB ({x['peak_source'].iloc[0]}; "
                     f"{x.loc[x['peak_rss_mb'].idxmax(), 'query']}"
                     + (f": {x.loc[x['peak_rss_mb'].idxmax(), 'failed']}" if x.loc[x['peak_rss_mb'].idxmax(), 'failed']
                        else "")
                     + f"), of which {x['baseline_rss_mb'].max():.0f} MB before the query at {x['gb'].iloc[0]:.3g} GB"
                     for e, x in g)


def describe_floor(floored: pd.DataFrame) -> str:
    """Each engine's full scan rate against the file read rate at the largest size."""
    data = floored[(floored["gb"] == floored["gb"].max()) & (floored["query"] != "limit_1")]
    if data.empty:
        return "No completed scan at the largest size."
    floor = data["floor_gb_per_s"].iloc[0]
    return (f"Reading the files ({data['gb'].iloc[0]:.3g} GB, {data['cache'].iloc[0]} cache) runs at {floor:.3g} GB/s. "
            + "; ".join(f"{r.engine} `{r.query}` {r.gb_per_s:.3g} GB/s ({100 * r.floor_fraction:.0f} %)"
                        for r in data.sort_values("floor_fraction", ascending=False).itertuples()) + ".")


def headline(fits: pd.DataFrame, ratios: pd.DataFrame, scans: pd.DataFrame) -> dict:
    """The numbers ``run.json`` records: rate per engine × query, COUNT/full ratio, peak MB at the largest size."""
    out = {}
    for r in fits[(fits["method"] == "ols") & fits["gb_per_s"].notna()].itertuples():
        out[f"gb_per_s[{r.engine},{r.variant}]"] = float(r.gb_per_s)
    for r in ratios.itertuples():
        out[f"count_over_full[{r.engine}]"] = [float(r.ratio), float(r.ci_low), float(r.ci_high)]
    for r in largest(scans).itertuples():
        if not r.failed:  # a scan stopped at the memory cap measured the cap, not its peak
            out[f"peak_rss_mb[{r.engine},{r.query}]"] = float(r.peak_rss_mb)
    out["largest_gb"] = float(scans["gb"].max())
    return out


def figure_fits(scans: pd.DataFrame, fits: pd.DataFrame):
    """Seconds against size per engine, a panel per query side by side, with each fit and its CI band.

    Each engine in its own colour and marker (one legend below the panels: the fits' estimates
    with their CIs are in ``fits.csv`` and the notebook's text); a rejected fit is not drawn (the
    caption's finding says so); a size a reader did not finish (out of memory, a timeout) is an
    open ✕ in its colour on the panel's top edge, never silently absent.
    """
    import matplotlib.lines
    import matplotlib.pyplot as plt

    from ingestlab import figures, labels, plots

    data = reported(scans)
    data = data[data["engine"] != FLOOR]
    queries = list(dict.fromkeys(data["query"]))
    fig, axes = plt.subplots(1, max(len(queries), 1), figsize=(figures.PAGE_WIDTH, 3.0), squeeze=False,
                             layout="constrained")
    long = tidy_fits(fits) if not fits.empty else models.tidy(fits, model="scan_time", terms={})
    engines = [labels.label(e) for e in dict.fromkeys(data["engine"])]
    colours, shapes = figures.palette(engines), figures.markers(engines)
    stopped = scans[scans["reported"] & (scans["status"] != "ok") & (scans["engine"] != FLOOR)]
    for ax, query in zip(axes[0], queries):
        plots.plot_fit(data[data["query"] == query], long[long["variant"] == query], x="gb", y="seconds",
                         hue="engine", slope="per_gb", intercept="overhead", ax=ax,
                         logx=bool((data["gb"] > 0).all()))  # log-log: the sizes spread, each line nearly straight
        # one legend for all panels, below; a line not drawn is said in the caption (the finding)
        ax.get_legend().remove()
        limits = ax.get_ylim()
        for row in stopped[stopped["query"] == query].itertuples():  # a size it did not finish: ✕ on the top edge
            ax.plot([row.gb], [limits[1]], **plots.FAILED_STYLE, mec=colours[labels.label(row.engine)], clip_on=False,
                    zorder=4, label="_nolegend_")
        ax.set_ylim(limits)
        ax.set_xlabel("table size (GB)")
        ax.set_title(textwrap.fill(labels.label(query).replace(" 1", "\u00a01"), 28).replace("\u00a0", " "),
                     fontsize="medium")
    handles = [matplotlib.lines.Line2D([], [], color=colours[e], marker=shapes[e], lw=1.2) for e in engines]
    names = list(engines)
    if not stopped.empty:
        handles.append(matplotlib.lines.Line2D([], [], **plots.FAILED_STYLE, mec="0.3"))
        names.append("did not finish: " + "; ".join(sorted({STATUS_TEXT.get(s, s).split(",")[0]
                                                            for s in stopped["status"]})))
    no_band = plots.band_note(*axes[0])
    fig.draw_without_rendering()  # the panels placed; the legend goes under them all
    fig.set_layout_engine("none")
    fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(engines), 4),
               fontsize="small", frameon=False, title_fontsize="small",
               title="line: the fit over the sizes measured; shaded: the 95 % CI of its cost per GB"
                     + (f"\n{no_band}" if no_band else ""))
    return fig


def floor_bars(floored: pd.DataFrame, scans: pd.DataFrame | None = None) -> pd.DataFrame:
    """The largest size's scanning queries (``limit_1`` left out), for the bar chart of fractions of the floor.

    With ``scans``, the scans of that size that did not finish join them without a fraction,
    ``failed`` saying why, so the chart marks them instead of leaving a gap.
    """
    bars = floored[(floored["gb"] == floored["gb"].max()) & (floored["query"] != "limit_1")].assign(failed="")
    if scans is None:
        return bars
    stopped = largest(scans)
    stopped = stopped[(stopped["failed"] != "") & (stopped["query"] != "limit_1")]
    return pd.concat([bars, stopped.assign(floor_fraction=float("nan"))], ignore_index=True)


#: Notebook 06's scan model in :func:`fit`'s columns: a fixed cost per scan and a cost per GB.
FIT_TERMS = {"overhead": models.Term("fixed_s", "fixed_ci_low_s", "fixed_ci_high_s", "s"),
             "per_gb": models.Term("per_gb_s", "per_gb_ci_low_s", "per_gb_ci_high_s", "s per GB")}


def tidy_fits(fits: pd.DataFrame) -> pd.DataFrame:
    """:func:`fit`'s scan fits in the lab's long form (``fits.csv``): ``overhead`` (s per scan), ``per_gb`` (s per GB).

    ``variant`` is the query.
    """
    return models.tidy(fits, model="scan_time", terms=FIT_TERMS, notebook=NOTEBOOK_STEM)


def fit_run(folder: str | os.PathLike) -> pd.DataFrame:
    """Notebook 06's fits in the lab's long form, as its ``fits.csv`` holds them, computed again from the run in ``folder``.

    Its declaration's ``fit`` (from ``results.parquet``); ``bench/refit.py`` compares it with the stored ``fits.csv``.
    """
    return tidy_fits(fit(pd.read_parquet(Path(folder) / "results.parquet")))
