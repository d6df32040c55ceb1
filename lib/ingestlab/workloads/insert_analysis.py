"""Notebook 01's analysis: the overhead fit, throughput, the variants' difference, sentences, figures and headline."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from ingestlab import models
from ingestlab.workloads.insert import FIT_SCENARIOS, NOTEBOOK_STEM


def fit(samples: pd.DataFrame) -> pd.DataFrame:
    """The overhead fit per (engine, variant) over the ``INSERT … VALUES`` scenarios' totals."""
    totals = models.scenario_totals(samples[samples["scenario"].isin(FIT_SCENARIOS)])
    return models.fit_overhead(totals, adequacy=True)


#: The scenario notebook 01 holds out and predicts from the others (its statement count lies between theirs).
HELD_OUT = "batch_100"


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
    inside = int(table["inside"].sum())
    lines.append(f"The model foresaw the scenario it did not see in {inside} of {len(table)} engine × variant "
                 "configurations.")
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
    """The seed's StarRocks overhead fits (per deployment and version) from ``data/published``."""
    from ingestlab import published

    table = published.load("starrocks_insert_scenarios")
    return models.fit_overhead(table[table["scenario"].isin(FIT_SCENARIOS)],
                               by=["engine", "deployment", "version"])


def live_vs_published(fits: pd.DataFrame, throughput_table: pd.DataFrame, diff: dict | None) -> pd.DataFrame:
    """Live numbers beside the seed's: overhead, commit-protocol difference, batching speed-up.

    Returns
    -------
    pandas.DataFrame
        See :func:`ingestlab.models.compare_with_published`; ``quantity`` names what is
        compared, ``published_label`` and ``live_label`` say whose number it is.
    """
    pub = published_fits()
    pub = pub[pub["method"] == "ols"]
    ols = fits[fits["method"] == "ols"]
    rows_pub, rows_live = [], []
    for _, p in pub.iterrows():
        for _, f in ols.iterrows():
            q = f"overhead_ms {f['engine']} {f['variant']} | seed {p['deployment']} {p['version']}"
            rows_pub.append({"quantity": q, "published": p["overhead_ms"], "published_label": "seed fit (OLS)"})
            rows_live.append({"quantity": q, "live": f["overhead_ms"], "live_ci_low": f["overhead_ci_low_ms"],
                              "live_ci_high": f["overhead_ci_high_ms"], "live_label": "live fit (OLS)"})
    sd = pub[pub["deployment"] == "shared-data"].iloc[0]
    sn = pub[(pub["deployment"] == "shared-nothing") & (pub["version"] == sd["version"])].iloc[0]
    if diff is not None:
        q = "commit_extra_ms | seed shared-nothing − shared-data; live first − last variant"
        rows_pub.append({"quantity": q, "published": sn["overhead_ms"] - sd["overhead_ms"],
                         "published_label": "difference of seed fits"})
        rows_live.append({"quantity": q, "live": diff["diff_ms"], "live_ci_low": diff["diff_ci_low_ms"],
                          "live_ci_high": diff["diff_ci_high_ms"], "live_label": "difference of live fits"})
    from ingestlab import published

    seed = published.load("starrocks_insert_scenarios")
    seed = seed[(seed["deployment"] == "shared-data") & (seed["version"].astype(str) == str(sd["version"]))]
    seed_speedup = (seed.loc[seed["scenario"] == "single_row", "total_s"].iloc[0]
                    / seed.loc[seed["scenario"] == "batch_1000", "total_s"].iloc[0])
    tp = throughput_table.set_index(["engine", "variant", "scenario"])["total_s"]
    for (engine, variant) in ols[["engine", "variant"]].itertuples(index=False):
        if (engine, variant, "batch_1000") in tp.index and (engine, variant, "single_row") in tp.index:
            q = f"batching_speedup_x {engine} {variant} | single_row / batch_1000 total"
            rows_pub.append({"quantity": q, "published": seed_speedup, "published_label": "seed shared-data table"})
            rows_live.append({"quantity": q, "live": tp[(engine, variant, "single_row")] / tp[(engine, variant, "batch_1000")],
                              "live_ci_low": float("nan"), "live_ci_high": float("nan"),
                              "live_label": "median totals over repeats"})
    return models.compare_with_published(pd.DataFrame(rows_live), pd.DataFrame(rows_pub))


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
    the result names its ``engine``.
    """
    for engine, part in totals.groupby("engine", sort=False):
        own = [v for v in variants if v in set(part["variant"])]
        if len(own) >= 2:
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
    """The seed's scale table for the variants' difference (empty with one variant)."""
    return models.scale_table(diff) if diff is not None else pd.DataFrame()


def anatomy_table(anatomy_frame: pd.DataFrame, samples: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    """The anatomy per engine and variant beside the same run's statement: the samples' median and the fitted overhead.

    :func:`ingestlab.anatomy.summary` of the anatomy pass (its client total corrected for the
    observer, see there), joined with ``samples_median_ms`` (the median of the same run's timed
    single-row statements, warm-up left out), ``samples_mean_ms``, the OLS ``overhead_ms`` with
    its CI, and ``total_vs_samples`` (the anatomy's client total ÷ the samples' median).
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
    ols = fits[fits["method"] == "ols"][["engine", "variant", "overhead_ms", "overhead_ci_low_ms",
                                         "overhead_ci_high_ms"]]
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
                + f"; fitted overhead {report.format_estimate(r.overhead_ms, r.overhead_ci_low_ms, r.overhead_ci_high_ms)}.")
        if pd.notna(r.overhead_ms) and not (r.overhead_ci_low_ms <= median <= r.overhead_ci_high_ms):
            nearer = "mean" if abs(r.overhead_ms - r.samples_mean_ms) < abs(r.overhead_ms - median) else "median"
            line += (f" The overhead's CI misses the median because the fit is a slope through scenario totals — "
                     f"sums, which follow the statements' mean ({r.samples_mean_ms:.3f} ms, P99 "
                     f"{r.samples_p99_ms:.3f} ms), not their median; here the overhead lies nearer the {nearer}"
                     + ("." if nearer == "mean" else ", so the tail does not explain it: the batches' own "
                        "per-row costs bend the line."))
        out.append(line)
    return out


def anatomy_figure(table: pd.DataFrame):
    """Stacked bars of the anatomy's parts per engine and variant, with the statement measured beside them; or None.

    Beside each bar (:func:`ingestlab.anatomy.parts`): a black diamond at the samples' median
    of the same run and variant, and an open circle with its 95 % CI at the fitted overhead,
    where ``table`` has them (:func:`anatomy_table`).
    """
    from ingestlab import anatomy, figures

    if table.empty:
        return None
    parts = anatomy.parts(table)
    several = parts["engine"].nunique() > 1
    if several:
        parts = parts.assign(variant=parts["engine"].astype(str) + " " + parts["variant"].astype(str))
    ax = figures.plot_stacked(parts, x="ms", y="variant", hue="component")
    rows = list(dict.fromkeys(parts["variant"]))  # the bars' order, bottom to top
    handles = []
    for r in table.itertuples():
        y = rows.index(f"{r.engine} {r.variant}" if several else r.variant)
        if pd.notna(getattr(r, "samples_median_ms", float("nan"))):
            h, = ax.plot([r.samples_median_ms], [y + 0.38], "D", color="black", ms=5, zorder=5,
                         label="samples' median")
            handles.append(h)
        if pd.notna(getattr(r, "overhead_ms", float("nan"))):
            err = [[max(r.overhead_ms - r.overhead_ci_low_ms, 0)], [max(r.overhead_ci_high_ms - r.overhead_ms, 0)]]
            h = ax.errorbar([r.overhead_ms], [y - 0.38], xerr=err, fmt="o", mfc="white", mec="black", ecolor="black",
                            ms=5, capsize=2, lw=0.8, zorder=5, label="fitted overhead (95 % CI)")
            handles.append(h)
    if handles:  # a second legend, in the axes; the parts' legend stays below them
        ax.add_artist(ax.get_legend())
        ax.legend(handles=list({h.get_label(): h for h in handles}.values()), loc="upper left",
                  bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)  # right of the bars, never over them
        ax.set_ylim(-0.7, len(rows) - 0.3)
    return ax.figure


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
    >>> labelled(pd.DataFrame({"engine": ["duckdb", "clickhouse"], "variant": ["default", "default"]}))["series"].tolist()
    ['DuckDB, defaults', 'ClickHouse, defaults']
    """
    from ingestlab import labels

    return frame.assign(series=labels.join(frame, ["engine", "variant"]))
