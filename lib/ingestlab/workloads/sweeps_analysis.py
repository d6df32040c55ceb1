"""Notebook 02's analysis: medians with CIs per level, slopes and model effects, their share of the overhead."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ingestlab import anatomy, captions, direct_labels, figures, findings, intervals, labels, models, plots, report
from ingestlab.adequacy import ADEQUACY_COLUMNS

#: Factor → the sample column that holds its level.
LEVEL_COLUMNS = {"partitions": "partitions", "columns": "n_columns", "model": "model"}
#: Factors with numeric levels, fitted with a slope.
NUMERIC = ("partitions", "columns")
#: An effect over the swept range at least this share of the single-row INSERT's own time
#: (with a CI that excludes zero) would make that storage parameter what sets the price.
LARGE_SHARE = 0.5
GROUP = ["engine", "variant"]


def factor_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of each factor's sweep: those whose other two levels are the baseline's.

    The baseline configuration belongs to every factor, so its rows appear once per factor.
    Adds ``factor``, ``level`` (text), ``level_value`` (NaN for the model) and ``series``
    (engine and variant); factors swept at one level only are left out.
    """
    base = (frame[frame["baseline"]].drop_duplicates(GROUP)
            .set_index(GROUP)[list(LEVEL_COLUMNS.values())].add_suffix("_base"))
    merged = frame.join(base, on=GROUP)
    parts = []
    for factor, col in LEVEL_COLUMNS.items():
        others = [c for c in LEVEL_COLUMNS.values() if c != col]
        mask = np.logical_and.reduce([merged[c] == merged[c + "_base"] for c in others])
        part = frame[mask].assign(factor=factor, level=frame.loc[mask, col].astype(str),
                                  level_value=frame.loc[mask, col].astype(float) if factor in NUMERIC else np.nan)
        swept = part.groupby(GROUP)["level"].transform("nunique") > 1
        parts.append(part[swept])
    out = pd.concat(parts, ignore_index=True)
    return out.assign(series=labels.join(out, GROUP))


def sweep_table(samples: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """One row per engine × variant × factor × level: the median single-row INSERT with its bootstrap CI.

    Warm-up statements are left out. ``median_ci_*`` is a percentile bootstrap over the
    level's statements of every round; ``p95_ms``, ``n`` and ``rounds`` beside it.
    """
    rows = factor_rows(samples[~samples["warmup"]])
    out = []
    keys = [*GROUP, "series", "factor", "level", "level_value", "baseline", "partition_layout", "partition_unit"]
    for key, g in rows.groupby(keys, sort=False, dropna=False):
        ms = g["elapsed_s"].to_numpy() * 1e3
        ci = intervals.median_ci(ms, seed=seed)
        out.append({**dict(zip(keys, key)), "median_ms": ci["median"], "median_ci_low_ms": ci["ci_low"],
                    "median_ci_high_ms": ci["ci_high"], "p95_ms": float(np.percentile(ms, 95)), "n": len(ms),
                    "rounds": g["round"].nunique()})
    table = pd.DataFrame(out)
    table["level_label"] = table["level"].where(~((table["factor"] == "partitions") & (table["level_value"] == 1)),
                                                table["partition_layout"])
    order = {f: i for i, f in enumerate(LEVEL_COLUMNS)}  # partitions, columns, model: the study's order
    return (table.sort_values([*GROUP, "factor", "level_value"], key=lambda c: c.map(order) if c.name == "factor" else c,
                              kind="stable").reset_index(drop=True))


def fit(samples: pd.DataFrame, sweeps: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Slopes per partition and per column (OLS over each round's median at each level), model differences.

    A numeric factor's points are the median of every (round, level): drift between rounds
    widens the CI instead of hiding in it. A model's effect is the difference of its median
    from the baseline model's, with a bootstrap CI over the statements. ``effect_ms`` is the
    factor's effect over its whole swept range (slope × range, or the difference), and
    ``share_of_overhead`` that effect over the baseline's median single-row INSERT.

    Returns
    -------
    pandas.DataFrame
        ``engine, variant, factor, level, method, slope_ms, slope_ci_low_ms, slope_ci_high_ms,
        unit, intercept_ms, r2, n_points, effect_ms`` (+ CI), ``baseline_median_ms``,
        ``share_of_overhead`` (+ CI).
    """
    rows = factor_rows(samples[~samples["warmup"]])
    per_round = _per_round(rows)
    lines = _growth(per_round) if not per_round.empty else pd.DataFrame()  # only table models swept: no line
    span = per_round.groupby([*GROUP, "factor"])["level_value"].agg(["min", "max"])
    unit = rows.drop_duplicates(GROUP).set_index(GROUP)
    numeric = []
    for r in lines.itertuples():
        lo, hi = span.loc[(r.engine, r.variant, r.factor)]
        per = unit.loc[(r.engine, r.variant), "partition_unit"] if r.factor == "partitions" else "column"
        log = r.growth == "log2"
        numeric.append({"engine": r.engine, "variant": r.variant, "factor": r.factor, "level": f"{lo:g}–{hi:g}",
                        "method": r.method, "growth": r.growth, "slope_ms": r.slope, "slope_ci_low_ms": r.slope_ci_low,
                        "slope_ci_high_ms": r.slope_ci_high,
                        "unit": f"ms per doubling of the {per}s" if log else f"ms per {per}",
                        "intercept_ms": r.intercept, "r2": r.r2, "n_points": r.n_points,
                        "range": float(np.log2(hi / lo)) if log else hi - lo,
                        **{c: getattr(r, c) for c in ADEQUACY_COLUMNS}})
    out = pd.DataFrame(numeric)
    if not out.empty:
        for end in ("", "_ci_low", "_ci_high"):
            out[f"effect{end}_ms"] = out[f"slope{end}_ms"] * out["range"]
    out = pd.concat([out.drop(columns="range", errors="ignore"), _model_effects(rows, seed=seed)], ignore_index=True)
    base = sweeps[sweeps["baseline"]].drop_duplicates(GROUP).set_index(GROUP)["median_ms"]
    out["baseline_median_ms"] = [base.loc[(e, v)] for e, v in zip(out["engine"], out["variant"])]
    for end in ("", "_ci_low", "_ci_high"):
        out["share_of_overhead" + end.replace("_ci", "")] = out[f"effect{end}_ms"] / out["baseline_median_ms"]
    return out.rename(columns={"share_of_overhead_low": "share_ci_low", "share_of_overhead_high": "share_ci_high"})


def _per_round(rows: pd.DataFrame) -> pd.DataFrame:
    """The numeric factors' points: the median single-row INSERT (ms) of every round at every level."""
    return (rows[rows["factor"].isin(NUMERIC)]
            .groupby([*GROUP, "factor", "level_value", "round"], sort=False)["elapsed_s"].median()
            .mul(1e3).rename("median_ms").reset_index())


#: Numeric factors whose cost may grow with the logarithm of the level rather than the level (routing a row
#: among partitions can cost like a search): both lines are fitted, and the adequacy test chooses.
LOG_CANDIDATES = ("partitions",)


def _growth(per_round: pd.DataFrame) -> pd.DataFrame:
    """Each numeric factor's line: linear in the level, or (partitions) in its log₂, whichever holds.

    Both are fitted with their adequacy (:func:`ingestlab.models.fit_sweep`); the linear line
    is kept when it holds or when neither does (its ``model_note`` then says the log line did
    not hold either), the log₂ line when only it holds. ``growth`` says which.
    """
    by = [*GROUP, "factor"]
    linear = models.fit_sweep(per_round, x="level_value", y="median_ms", by=by, adequacy=True).assign(
        growth="linear")
    candidates = per_round[per_round["factor"].isin(LOG_CANDIDATES) & (per_round["level_value"] > 0)]
    if candidates.empty:
        return linear
    logged = models.fit_sweep(candidates.assign(level_value=np.log2(candidates["level_value"])), x="level_value",
                              y="median_ms", by=by, adequacy=True).assign(growth="log2").set_index(by)
    chosen = []
    for row in linear.to_dict("records"):
        key = tuple(row[c] for c in by)
        alt = logged.loc[key].to_dict() if key in logged.index else None
        lin_holds, log_holds = models.model_holds(row["model_holds"]), alt and models.model_holds(alt["model_holds"])
        if alt is not None and not lin_holds and log_holds:
            row = {**row, **alt, "model_note": "the linear line did not hold: " + str(row["model_note"])}
        elif alt is not None and not lin_holds and lin_holds is not None:
            row = {**row, "model_note": f"{row['model_note']}; a line in log₂ of the level did not hold either"}
        chosen.append(row)
    return pd.DataFrame(chosen)


def _model_effects(rows: pd.DataFrame, *, seed: int) -> pd.DataFrame:
    models_rows = rows[rows["factor"] == "model"]
    out = []
    for (engine, variant), g in models_rows.groupby(GROUP, sort=False):
        base_model = g["baseline_model"].iloc[0]
        base = g.loc[g["model"] == base_model, "elapsed_s"].to_numpy() * 1e3
        for model, m in g[g["model"] != base_model].groupby("model", sort=False):
            d = intervals.median_difference_ci(m["elapsed_s"].to_numpy() * 1e3, base, seed=seed)
            out.append({"engine": engine, "variant": variant, "factor": "model", "level": model,
                        "skips_commit_flush": bool(m["model_skips_commit_flush"].iloc[0]),
                        "method": "bootstrap_median_difference", "slope_ms": d["diff"],
                        "slope_ci_low_ms": d["ci_low"], "slope_ci_high_ms": d["ci_high"],
                        "unit": f"ms vs {base_model}", "baseline_model": base_model, "n_points": d["n_a"] + d["n_b"],
                        "effect_ms": d["diff"], "effect_ci_low_ms": d["ci_low"], "effect_ci_high_ms": d["ci_high"]})
    return pd.DataFrame(out)


# -- what the line predicts that it did not see --------------------------------------------------
#: :func:`prediction`'s columns.
PREDICTION_COLUMNS = [*GROUP, "factor", "growth", "level_value", "predicted_ms", "pi_low_ms", "pi_high_ms",
                      "observed_median_ms", "rounds", "rounds_inside", "inside", "note"]


def prediction(samples: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    """What each numeric factor's line predicts for its largest level, fitted without it.

    The line :func:`fit` chose for the sweep (``growth``: straight in the level, or in its
    log₂) is fitted again to every round's median at the other levels, constant variance as
    in :func:`fit` (:func:`ingestlab.adequacy.held_out_table`), and asked for the largest
    level's; each round's median there is compared with the 95 % prediction interval for one
    new round.

    Returns
    -------
    pandas.DataFrame
        :data:`PREDICTION_COLUMNS`: ``engine, variant, factor, growth, level_value`` (the level
        held out), ``predicted_ms, pi_low_ms, pi_high_ms, observed_median_ms`` (the median of
        its rounds' medians), ``rounds, rounds_inside, inside`` (that median inside the
        interval) and ``note`` (why there is no prediction: too few levels besides the largest).
    """
    from ingestlab.adequacy import held_out_table

    chosen = fits[fits["factor"].isin(NUMERIC)]
    if chosen.empty:  # only table models swept: no line
        return pd.DataFrame(columns=PREDICTION_COLUMNS)
    per_round = _per_round(factor_rows(samples[~samples["warmup"]]))
    per_round = per_round.join(chosen.set_index([*GROUP, "factor"])["growth"], on=[*GROUP, "factor"], how="inner")
    table = pd.concat([held_out_table(g, x="level_value", y="median_ms", by=[*GROUP, "factor", "growth"],
                                      x_of=np.log2 if growth == "log2" else None, variance="constant")
                       for growth, g in per_round.groupby("growth", sort=False)], ignore_index=True)
    return table.rename(columns={"predicted": "predicted_ms", "pi_low": "pi_low_ms", "pi_high": "pi_high_ms",
                                 "observed_median": "observed_median_ms", "runs": "rounds",
                                 "runs_inside": "rounds_inside"})[PREDICTION_COLUMNS]


def describe_prediction(table: pd.DataFrame) -> list[str]:
    """Per sweep, its largest level's rounds against the line fitted without them, or why there is no check."""
    if table.empty:
        return ["No prediction: no partition or column sweep, so no line to hold a level out of."]
    lines = []
    for r in table.itertuples():
        what = (f"**{r.engine} {r.variant}, {r.factor}** ({'log₂ of the level' if r.growth == 'log2' else 'straight'} "
                f"line), {r.level_value:g} {r.factor} left out of the fit")
        if r.note:
            lines.append(f"{what}: no held-out check, {r.note}.")
            continue
        lines.append(f"{what}: {r.observed_median_ms:.3f} ms measured (median of {r.rounds} rounds' medians), "
                     f"{r.predicted_ms:.3f} ms predicted (95 % PI {r.pi_low_ms:.3f} to {r.pi_high_ms:.3f}); "
                     f"{r.rounds_inside} of {r.rounds} rounds inside.")
    lines.append(findings.foresaw(table, unseen="level it did not see", among="sweeps",
                                  untested="No sweep had enough levels for a held-out check: the line needs three "
                                           "rounds' medians at two levels below the largest."))
    return lines


# -- where the extra time goes ----------------------------------------------------------------
#: Notebook 02's terms in :func:`fit`'s columns: a numeric factor's slope and its effect over the swept range.
SLOPE_TERMS = {"slope": models.Term("slope_ms", "slope_ci_low_ms", "slope_ci_high_ms", "{unit}"),
               "effect": models.Term("effect_ms", "effect_ci_low_ms", "effect_ci_high_ms", "ms over {level}")}
#: A table model's effect: its median single-row INSERT minus the baseline model's.
EFFECT_TERMS = {"effect[{level}]": models.Term("effect_ms", "effect_ci_low_ms", "effect_ci_high_ms",
                                               "ms against {baseline_model}")}


def tidy_fits(fits: pd.DataFrame) -> pd.DataFrame:
    """:func:`fit`'s slopes and model effects in the lab's long form (``fits.csv``); the model names the factor."""
    from ingestlab.workloads.sweeps import NOTEBOOK

    numeric = fits[fits["factor"].isin(NUMERIC)]
    effects = fits[fits["factor"] == "model"]
    numeric = numeric.assign(growth=numeric["growth"] if "growth" in numeric else "linear")
    return pd.concat([models.tidy(numeric, model="sweep {factor} ({growth})", terms=SLOPE_TERMS, notebook=NOTEBOOK.stem),
                      models.tidy(effects, model="sweep model", terms=EFFECT_TERMS, notebook=NOTEBOOK.stem)],
                     ignore_index=True)


def anatomy_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The anatomy's mean parts per configuration (:func:`ingestlab.anatomy.summary`), by factor and level."""
    if frame.empty:
        return pd.DataFrame()
    rows = factor_rows(frame)
    return anatomy.summary(rows, by=[*GROUP, "factor", "level", "level_value"])


def statement_parts(frame: pd.DataFrame) -> pd.DataFrame:
    """Every profiled statement's time parts in long form (a part it skipped: 0 ms), by factor and level."""
    stats = frame[(frame["pass"] == "stats") & frame["ms"].notna()]
    parts = set(stats["component"])
    timed = frame[(frame["pass"] != "stats") & ~frame["warmup"] & frame["component"].isin(parts)]
    rows = factor_rows(timed)
    keys = [*GROUP, "series", "factor", "level", "statement_no"]
    wide = rows.groupby([*keys, "component"], sort=False)["ms"].sum().unstack("component", fill_value=0.0)
    long = wide.reset_index().melt(id_vars=keys, var_name="component", value_name="ms")
    numeric = long["factor"].isin(NUMERIC)
    return long.assign(level_value=pd.to_numeric(long["level"].where(numeric), errors="coerce"))


def attribution(frame: pd.DataFrame) -> pd.DataFrame:
    """Per numeric factor, the slope of each anatomy part against the level, over every profiled statement.

    The parts are the engine's own (PostgreSQL: planning, execution, wal_flush; MariaDB:
    its stages; StarRocks/Doris: execution and fe_overhead from TotalTime − ExecutionTime),
    ``client_total`` the lab's clock and ``unexplained`` the rest, so the parts' slopes add
    up to the client's.

    Returns
    -------
    pandas.DataFrame
        ``engine, variant, factor, component, slope_ms`` with CI, ``n_points``, and
        ``share_of_slope`` (the part's slope over ``client_total``'s).
    """
    if frame.empty:
        return pd.DataFrame()
    parts = statement_parts(frame)
    parts = parts[parts["factor"].isin(NUMERIC)]
    if parts.empty:
        return pd.DataFrame()
    fits = models.fit_sweep(parts, x="level_value", y="ms", by=[*GROUP, "factor", "component"])
    fits = fits.rename(columns={"slope": "slope_ms", "slope_ci_low": "slope_ci_low_ms",
                                "slope_ci_high": "slope_ci_high_ms"})
    total = fits[fits["component"] == anatomy.CLIENT_TOTAL].set_index([*GROUP, "factor"])["slope_ms"]
    fits["share_of_slope"] = fits["slope_ms"] / [total.get((e, v, f), np.nan)
                                                 for e, v, f in zip(fits["engine"], fits["variant"], fits["factor"])]
    return fits[[*GROUP, "factor", "component", "method", "slope_ms", "slope_ci_low_ms", "slope_ci_high_ms",
                 "n_points", "share_of_slope"]]


# -- the study's question, and its numbers ------------------------------------------------------
def significant(row) -> bool:
    """Whether an effect's CI excludes zero."""
    low, high = row["effect_ci_low_ms"], row["effect_ci_high_ms"]
    return bool(math.isfinite(low) and math.isfinite(high) and (low > 0 or high < 0))


def verdict(fits: pd.DataFrame) -> pd.DataFrame:
    """Per engine and variant: the largest effect (by share of the overhead) and whether storage sets the price.

    The storage pipeline "sets the price" when some factor's effect over its swept range
    is at least :data:`LARGE_SHARE` of the baseline single-row INSERT and its CI excludes 0.
    Models that skip the commit's log flush (``skips_commit_flush``: PostgreSQL's unlogged,
    MariaDB's Aria) change the commit, not the storage pipeline: they are reported apart.
    """
    rows = []
    fits = fits.assign(skips_commit_flush=fits.get("skips_commit_flush", pd.Series(False, index=fits.index))
                       .fillna(False).astype(bool))
    for (engine, variant), every in fits.groupby(GROUP, sort=False):
        g = every[~every["skips_commit_flush"]]
        g = g.assign(abs_share=g["share_of_overhead"].abs(), sig=[significant(r) for _, r in g.iterrows()])
        top = g.sort_values("abs_share", ascending=False).iloc[0]
        commit = every[every["skips_commit_flush"]]
        rows.append({"engine": engine, "variant": variant, "largest_factor": top["factor"],
                     "largest_level": top["level"], "largest_share": top["share_of_overhead"],
                     "largest_effect_ms": top["effect_ms"], "baseline_median_ms": top["baseline_median_ms"],
                     "storage_sets_price": bool(((g["abs_share"] >= LARGE_SHARE) & g["sig"]).any()),
                     "significant_factors": ", ".join(dict.fromkeys(g.loc[g["sig"], "factor"])),
                     "commit_free": "; ".join(f"{r.level} {100 * r.share_of_overhead:+.0f} %" for r in commit.itertuples())})
    return pd.DataFrame(rows)


def describe_sweeps(sweeps: pd.DataFrame) -> list[str]:
    """Per engine and variant, each numeric factor's medians at its first and last level, with CIs."""
    lines = []
    for (engine, variant, factor), g in sweeps[sweeps["factor"].isin(NUMERIC)].groupby([*GROUP, "factor"],
                                                                                       sort=False):
        first, last = g.iloc[0], g.iloc[-1]
        lines.append(f"**{engine} {variant}, {factor}**: median single-row INSERT "
                     f"{_median(first)} at {first['level_label']} → {_median(last)} at {last['level_label']} "
                     f"({int(last['n'])} statements per level over {int(last['rounds'])} rounds).")
    return lines


def _median(row) -> str:
    return report.format_estimate(row["median_ms"], row["median_ci_low_ms"], row["median_ci_high_ms"], digits=3)


def describe_fits(fits: pd.DataFrame) -> list[str]:
    """Per fit: the slope or difference with its CI, its effect over the range and its share of the overhead.

    A numeric factor's sentence says which line the adequacy test kept and whether it holds.
    """
    lines = []
    for _, r in fits.iterrows():
        what = f"{r['factor']} {r['level']}" if r["factor"] != "model" else f"model {r['level']}"
        if r["factor"] in NUMERIC:
            what += _which_line(r)
        lines.append(f"**{r['engine']} {r['variant']}, {what}**: "
                     f"{report.format_estimate(r['slope_ms'], r['slope_ci_low_ms'], r['slope_ci_high_ms'], unit=r['unit'])}"
                     + (f", {r['effect_ms']:+.3f} ms over the sweep" if r["factor"] in NUMERIC else "")
                     + f" = {_share(r)} of the baseline's {r['baseline_median_ms']:.3f} ms.")
    return lines


def _which_line(r) -> str:
    holds, note = models.model_holds(r.get("model_holds")), r.get("model_note")
    note = note if isinstance(note, str) and note else "not tested"
    if r.get("growth") == "log2":
        return ", growing with log₂ of the level (the straight line did not hold, this one did)"
    if holds is False:
        return f", where the line does not hold, so the figure draws none ({note})"
    return ", a straight line in the level, which holds" if holds else f", a straight line ({note})"


def _share(r) -> str:
    return (f"{100 * r['share_of_overhead']:+.0f} % (95 % CI {100 * r['share_ci_low']:+.0f} to "
            f"{100 * r['share_ci_high']:+.0f} %)" if math.isfinite(r["share_ci_low"])
            else f"{100 * r['share_of_overhead']:+.0f} % (no CI)")


def answer(fits: pd.DataFrame) -> list[str]:
    """The study's question — is the storage pipeline what makes a single-row INSERT expensive? — per engine."""
    lines = []
    for v in verdict(fits).itertuples():
        said = "**yes**" if v.storage_sets_price else "**no**"
        sig = f"effects whose CI excludes 0: {v.significant_factors}" if v.significant_factors else \
            "no effect's CI excludes 0"
        lines.append(f"**{v.engine} {v.variant}** — does the storage layout set the price of a single-row INSERT? "
                     f"{said}: the largest effect over the swept range is {v.largest_factor} ({v.largest_level}), "
                     f"{v.largest_effect_ms:+.3f} ms = {100 * v.largest_share:+.0f} % of the baseline's "
                     f"{v.baseline_median_ms:.3f} ms ({sig}; the threshold is {100 * LARGE_SHARE:.0f} % with a CI "
                     "excluding 0): "
                     + ("that table parameter moves the price by at least half of it."
                        if v.storage_sets_price else
                        "the fixed per-statement overhead, which no table parameter moves, dominates.")
                     + (f" Models that skip the commit's log flush, set apart as the commit's effect, not the "
                        f"storage pipeline's: {v.commit_free}." if v.commit_free else ""))
    return lines


def describe_attribution(table: pd.DataFrame, fits: pd.DataFrame, top: int = 2) -> list[str]:
    """For each numeric slope whose CI excludes 0: the anatomy parts that carry most of it."""
    if table.empty:
        return ["No anatomy was recorded, so the slopes are not attributed."]
    lines = []
    for _, f in fits[fits["factor"].isin(NUMERIC)].iterrows():
        parts = table[(table["engine"] == f["engine"]) & (table["variant"] == f["variant"])
                      & (table["factor"] == f["factor"])]
        total = parts[parts["component"] == anatomy.CLIENT_TOTAL]
        parts = parts[parts["component"] != anatomy.CLIENT_TOTAL].sort_values("slope_ms", ascending=False)
        if total.empty:
            continue
        biggest = "; ".join(f"{p.component} {p.slope_ms:+.2g} ms ({100 * p.share_of_slope:.0f} %)"
                            for p in parts.head(top).itertuples())
        sig = "" if significant(f) else " (the timed slope's CI includes 0: read as noise)"
        lines.append(f"**{f['engine']} {f['variant']}, {f['factor']}**: the profiled statements' slope is "
                     f"{total['slope_ms'].iloc[0]:+.2g} {f['unit']}{sig}; largest parts: {biggest}.")
    return lines


# -- live vs published ----------------------------------------------------------------------
def published_effects() -> pd.DataFrame:
    """The study's per-unit costs and its share of the overhead, per deployment and factor.

    ``share_of_overhead`` is the printed delta over the printed median at the sweep's first
    level (for the table model: over the DUPLICATE median), computed here, not printed.
    """
    from ingestlab import published

    effects = published.load("starrocks_component_effects")
    sweeps = published.component_sweeps()
    first = sweeps.groupby(["deployment", "factor"], sort=False)["median_ms"].first()
    effects = effects.assign(factor=effects["scenario"])
    effects["first_median_ms"] = [first.loc[(d, f)] for d, f in zip(effects["deployment"], effects["factor"])]
    effects["share_of_overhead"] = effects["delta_ms"] / effects["first_median_ms"]
    return effects


#: The study's factor name for each live factor.
STUDY_FACTOR = {"partitions": "buckets", "columns": "columns", "model": "model"}


def live_vs_published(fits: pd.DataFrame, sweeps: pd.DataFrame) -> pd.DataFrame:
    """The study's medians and per-unit effects beside the live slopes, medians and shares.

    Per live engine × variant and study deployment: ms per partition (study: per tablet), ms
    per column, the largest model difference (study: the models' spread), each factor's share
    of the overhead, and the medians at the study's end points (1 and 64, 4 and 50).
    """
    from ingestlab import published

    study = published_effects().set_index(["deployment", "factor"])
    study_medians = published.component_sweeps()
    pub_rows, live_rows = [], []

    def add(quantity, published_value, label, live, low, high, live_label):
        pub_rows.append({"quantity": quantity, "published": published_value, "published_label": label})
        live_rows.append({"quantity": quantity, "live": live, "live_ci_low": low, "live_ci_high": high,
                          "live_label": live_label})

    for (engine, variant), g in fits.groupby(GROUP, sort=False):
        for deployment in study.index.get_level_values(0).unique():
            where = f"{engine} {variant} | seed {deployment}"
            for factor in g["factor"].unique():
                s = study.loc[(deployment, STUDY_FACTOR[factor])]
                rows = g[g["factor"] == factor]
                r = rows.iloc[0]
                if factor in NUMERIC:
                    add(f"{r['unit']} | seed per {s['per_unit'] or 'unit'} | {where}", s["per_unit_ms"],
                        f"seed: {s['per_unit_printed']}", r["slope_ms"], r["slope_ci_low_ms"], r["slope_ci_high_ms"],
                        f"live OLS slope over {r['level']}")
                else:
                    r = rows.loc[rows["effect_ms"].abs().idxmax()]
                    sign = 1.0 if r["effect_ms"] >= 0 else -1.0  # the CI of |difference| is the signed one, turned
                    low, high = sorted((sign * r["effect_ci_low_ms"], sign * r["effect_ci_high_ms"]))
                    add(f"largest model difference, ms | seed spread | {where}", s["delta_ms"],
                        f"seed: {s['delta_printed']}", sign * r["effect_ms"], low, high,
                        f"live |{r['level']} − {r['unit'].removeprefix('ms vs ')}|")
                add(f"share of overhead, {factor} | {where}", s["share_of_overhead"],
                    "seed: delta / first median", r["share_of_overhead"], r["share_ci_low"], r["share_ci_high"],
                    "live effect / baseline median")
            for factor, level in (("partitions", 1), ("partitions", 64), ("columns", 4), ("columns", 50)):
                live = sweeps[(sweeps["engine"] == engine) & (sweeps["variant"] == variant)
                              & (sweeps["factor"] == factor) & (sweeps["level_value"] == level)]
                pub = study_medians[(study_medians["deployment"] == deployment)
                                   & (study_medians["factor"] == STUDY_FACTOR[factor])
                                   & (study_medians["level_value"] == level)]
                if len(live) and len(pub):
                    add(f"median ms at {level} {factor} | {where}", pub["median_ms"].iloc[0], "seed median",
                        live["median_ms"].iloc[0], live["median_ci_low_ms"].iloc[0], live["median_ci_high_ms"].iloc[0],
                        "live median, bootstrap CI")
    return models.compare_with_published(pd.DataFrame(live_rows), pd.DataFrame(pub_rows))


def describe_published() -> list[str]:
    """The study's own answer, computed the same way from its printed numbers."""
    effects = published_effects()
    lines = []
    for deployment, g in effects.groupby("deployment", sort=False):
        top = g.loc[g["share_of_overhead"].abs().idxmax()]
        lines.append(f"**seed, StarRocks {deployment}**: the largest effect is {top['factor']} "
                     f"({top['delta_printed']}) = {100 * top['share_of_overhead']:.0f} % of the "
                     f"{top['first_median_ms']:g} ms median — "
                     + ("at or above" if abs(top["share_of_overhead"]) >= LARGE_SHARE else "below")
                     + f" the {100 * LARGE_SHARE:.0f} % threshold; the seed printed no interval.")
    return lines


def headline(fits: pd.DataFrame) -> dict[str, float]:
    """Every slope or difference and its share of the overhead, keyed by engine, variant, factor and level."""
    out = {}
    for _, r in fits.iterrows():
        key = f"{r['engine']} {r['variant']} {r['factor']} {r['level']}"
        out[f"slope_ms[{key}]"] = float(r["slope_ms"])
        out[f"share_of_overhead[{key}]"] = float(r["share_of_overhead"])
    return out


def effects_for_plot(fits: pd.DataFrame) -> pd.DataFrame:
    """The model rows of ``fits`` with a ``series`` column, for :func:`plot_model_effects`."""
    models_ = fits[fits["factor"] == "model"]
    if models_.empty:  # no table models swept: nothing to draw
        return models_.assign(series=pd.Series(dtype=object))
    against = " (against " + models_["baseline_model"].map(labels.label) + ")"
    return models_.assign(series=labels.join(models_, GROUP) + against)


def fits_for_plot(fits: pd.DataFrame, names: Sequence[str] = NUMERIC) -> pd.DataFrame:
    """The numeric rows of ``fits`` with a ``series`` column, for :func:`plot_sweep_medians`."""
    numeric = fits[fits["factor"].isin(names)]
    return numeric.assign(series=labels.join(numeric, GROUP))


# -- figures ---------------------------------------------------------------------------------
def plot_sweep_medians(data: pd.DataFrame, fits: pd.DataFrame, *, hue: str = "series", col: str = "factor",
                       log_factors: Sequence[str] = ("partitions",)) -> matplotlib.figure.Figure:
    """Median with its CI against each numeric factor's level, and each group's fit with its CI band, a panel per factor.

    ``data`` has ``col``, ``hue``, ``level_value``, ``median_ms`` and ``median_ci_low_ms`` /
    ``median_ci_high_ms`` (notebook 02's sweep table); ``fits`` has ``col``, ``hue``,
    ``method``, ``slope_ms`` (with ``slope_ci_low_ms`` / ``slope_ci_high_ms``), ``intercept_ms``
    and ``unit``: ``ols`` fits are drawn over each panel's levels as dense curves, except a
    rejected one (``model_holds`` False): its medians stand alone and its label says so.
    Factors in ``log_factors`` get a log₂ ``x`` axis. The panels stand one above the other,
    each line named where it ends with its slope and CI (:func:`ingestlab.direct_labels.label_ends`).
    """
    data = data[data["level_value"].notna()]
    fig, panels = plots.panels(data, col, figsize=(figures.PAGE_WIDTH, 2.8 * data[col].nunique()), stacked=True,
                                 sharey=False, layout="constrained")
    levels = list(dict.fromkeys(data[hue]))
    palette, shapes = figures.palette(levels), figures.markers(levels)
    for number, (ax, factor, part) in enumerate(panels):
        ends = []
        groups = [(series, g.sort_values("level_value")) for series, g in part.groupby(hue, sort=False)]
        for series, g in groups:  # the data first: they set the axes the fits are then cut to
            err = np.vstack([g["median_ms"] - g["median_ci_low_ms"], g["median_ci_high_ms"] - g["median_ms"]])
            ax.errorbar(g["level_value"], g["median_ms"], yerr=np.nan_to_num(np.clip(err, 0, None)),
                        fmt=shapes[series], capsize=3, ms=4, color=palette[series])
        if factor in log_factors:
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(plots.plain_ticks())
        for series, g in groups:
            grid = plots.model_grid(g["level_value"], factor in log_factors)
            end, said = (g["level_value"].iloc[-1], g["median_ms"].iloc[-1]), "no fit"
            for _, fit in fits[(fits[col] == factor) & (fits[hue] == series) & (fits["method"] == "ols")].iterrows():
                holds = models.model_holds(fit.get("model_holds"))
                said = {False: "model rejected, no line", None: "not tested, no line"}.get(holds)
                if holds is True:  # a line only for a model that holds
                    line = plots.draw_model(ax, grid, fit["intercept_ms"], fit["slope_ms"],
                                              fit.get("slope_ci_low_ms", np.nan), fit.get("slope_ci_high_ms", np.nan),
                                              color=palette[series], label=None,
                                              x_of=np.log2 if fit.get("growth") == "log2" else None)
                    end = direct_labels.line_end(line) or end
                    said = plots.short_estimate(fit["slope_ms"], fit.get("slope_ci_low_ms", np.nan),
                                                  fit.get("slope_ci_high_ms", np.nan), str(fit["unit"]))
            ends.append((f"{captions.wrapped(series)}\n{said}", palette[series], *end))
        ax.set_xlabel(labels.label(factor))
        ax.set_ylabel("median single-row\nINSERT (ms)")
        no_band = plots.band_note(ax)  # a band left out is said in each panel that has one, the rest in the first
        direct_labels.label_ends(ax, ends, note=captions.wrapped(
            "dots: medians (bars: 95 % CI); line: the fit (shaded: the 95 % CI of its slope"
            f"{'; ' + no_band if no_band else ''}); under each name: its slope"
        ) if number == 0 else captions.wrapped(no_band) if no_band else None, note_in_layout=number == 0)
    return fig


def plot_model_effects(data: pd.DataFrame, *, hue: str = "series") -> matplotlib.figure.Figure:
    """Each table model's difference from the baseline model, with its CI (a point-range chart).

    ``data`` has ``level`` (the model), ``slope_ms`` (the difference) and its CI bounds
    ``slope_ci_low_ms`` / ``slope_ci_high_ms``, and ``hue``.
    """
    fig = plt.figure(figsize=(figures.PAGE_WIDTH, 1.4 + 0.4 * data["level"].nunique()))
    ax = plots.plot_estimates(data.assign(level=data["level"].map(labels.label)), x="slope_ms", y="level",
                        low="slope_ci_low_ms", high="slope_ci_high_ms", hue=hue, ax=fig.gca())
    ax.axvline(0, color="0.4", lw=0.8)
    ax.set_xlabel("median difference from the engine's baseline model (ms; bars: 95 % CI),\n"
                  "the baseline named in the legend")  # on one line: wider than the page
    return fig


def fit_run(folder: str | os.PathLike) -> pd.DataFrame:
    """Notebook 02's fits in the lab's long form, as its ``fits.csv`` holds them, computed again from the run in ``folder``.

    Its declaration's ``fit`` (from ``results.parquet`` and the run's ``SEED``); ``bench/refit.py`` compares it with the stored ``fits.csv``.
    """
    samples = pd.read_parquet(Path(folder) / "results.parquet")
    seed = json.loads((Path(folder) / "run.json").read_text())["parameters"]["seed"]
    return tidy_fits(fit(samples, sweep_table(samples, seed=seed), seed=seed))
