"""Notebook 05's analysis: medians per method, the load fit, the physical limits, sentences, figures and headline."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ingestlab import models
from ingestlab.workloads.million import FIT_EXCLUDED, NOTEBOOK_STEM

# -- analysis --------------------------------------------------------------------------------
GROUP = ["system", "setting", "method"]


def medians(loads: pd.DataFrame) -> pd.DataFrame:
    """Per system × setting × method: median seconds and rows/s over the runs, with distribution-free CIs.

    Warm-up loads are left out (counted in ``warmup_n``). The CI is the order-statistic
    interval of :func:`ingestlab.models.median_ci_exact`; ``ci_confidence`` says what it reaches.
    """
    measured = loads[~loads["warmup"]]
    warm = loads[loads["warmup"]].groupby(GROUP).size()
    rows = []
    for key, g in measured.groupby(GROUP, sort=False):
        sec = models.median_ci_exact(g["seconds"])
        rps = models.median_ci_exact(g["rows_per_s"])
        rows.append({**dict(zip(GROUP, key)), "runs": len(g), "rows": int(g["rows"].iloc[0]),
                     "statements": int(g["statements"].iloc[0]), "commits": int(g["commits"].iloc[0]),
                     "seconds": sec["median"], "seconds_ci_low": sec["ci_low"], "seconds_ci_high": sec["ci_high"],
                     "rows_per_s": rps["median"], "rows_per_s_ci_low": rps["ci_low"],
                     "rows_per_s_ci_high": rps["ci_high"], "ci_confidence": sec["confidence"],
                     "mb_per_s": float(g["mb_per_s"].median()), "table_bytes": float(g["table_bytes"].median()),
                     "table_mb_per_s": float(g["table_mb_per_s"].median()), "add_key_s": float(g["add_key_s"].median()),
                     "warmup_n": int(warm.get(key, 0))})
    return pd.DataFrame(rows)


def fit(loads: pd.DataFrame) -> pd.DataFrame:
    """``seconds = statements × overhead + rows × per_row`` per system × setting, across the lab's methods.

    Every method writes the same rows, so the intercept is ``rows × per_row`` and the slope
    the fixed cost of one statement (:func:`ingestlab.models.fit_load_overhead`: OLS with
    CIs where the points allow, else ``two_point`` or ``none``). ``per_row_us`` is the
    intercept per row, with its CI.
    """
    measured = loads[~loads["warmup"] & ~loads["method"].isin(FIT_EXCLUDED)]
    fits = models.fit_load_overhead(measured, by=["system", "setting"], x="statements", y="seconds", adequacy=True)
    rows = measured.groupby(["system", "setting"], sort=False)["rows"].first().rename("rows").reset_index()
    fits = fits.merge(rows, on=["system", "setting"])
    for src, dst in (("write_time_s", "per_row_us"), ("write_time_ci_low_s", "per_row_ci_low_us"),
                     ("write_time_ci_high_s", "per_row_ci_high_us")):
        fits[dst] = fits[src] / fits["rows"] * 1e6
    return fits.assign(engine=fits["system"], variant=fits["setting"])


def physical(loads: pd.DataFrame, disk_rate: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Per system under its first setting: the fastest method against the disk, and the lab's bulk path against the native client.

    ``disk_share`` is the fastest method's table bytes per second over the disk's sequential
    write rate; ``bulk_over_native`` the lab bulk path's median seconds over the native
    client's, with a bootstrap CI (:func:`ingestlab.models.ratio_ci`).
    """
    measured = loads[~loads["warmup"]]
    disk_mb_s = float(disk_rate["mb_per_s"].iloc[0])
    rows = []
    for system, g in measured.groupby("system", sort=False):
        g = g[g["setting"] == g["setting"].iloc[0]]
        by_method = g.groupby("method", sort=False)[["rows_per_s", "table_mb_per_s"]].median()
        fastest = by_method["rows_per_s"].idxmax()
        row = {"system": system, "setting": g["setting"].iloc[0], "fastest_method": fastest,
               "fastest_rows_per_s": by_method.loc[fastest, "rows_per_s"],
               "fastest_table_mb_per_s": by_method.loc[fastest, "table_mb_per_s"], "disk_mb_per_s": disk_mb_s,
               "disk_share": by_method.loc[fastest, "table_mb_per_s"] / disk_mb_s,
               "bulk_over_native": math.nan, "bulk_over_native_ci_low": math.nan, "bulk_over_native_ci_high": math.nan}
        bulk, native = (g.loc[g["method"] == m, "seconds"] for m in ("bulk", "native_client"))
        if min(len(bulk), len(native)) >= 2:
            r = models.ratio_ci(bulk, native, seed=seed)
            row.update(bulk_over_native=r["ratio"], bulk_over_native_ci_low=r["ci_low"],
                       bulk_over_native_ci_high=r["ci_high"])
        elif min(len(bulk), len(native)) == 1:  # one run each: the ratio without a CI
            row.update(bulk_over_native=bulk.median() / native.median())
        rows.append(row)
    return pd.DataFrame(rows)


def live_vs_published(loads: pd.DataFrame) -> pd.DataFrame:
    """The seed's ratios beside this run's: YugabyteDB's non-transactional speed-up and packed rows' DocDB entries.

    Live values come only from YugabyteDB targets (by URL); without one they are NaN and
    ``live_label`` says so. The lab does not read DocDB's ``rows_inserted`` metric, so the
    packed-rows ratio has no live value.
    """
    from ingestlab import published

    docdb = published.load("yugabytedb_docdb_rows_inserted").set_index("scenario")
    per_row = docdb["docdb_inserted_rows"] / docdb["rows"]
    yb = loads[~loads["warmup"] & (loads["engine"].astype(str).str.startswith("yugabytedb"))]
    speed = yb.groupby("setting")["rows_per_s"].median()
    live = math.nan
    label = "not measured: no YugabyteDB target in this run"
    if {"default", "non_transactional"} <= set(speed.index):
        live, label = speed["non_transactional"] / speed["default"], "median rows/s, all methods pooled"
    published_rows = pd.DataFrame([
        {"quantity": "non_transactional / default rows/s (YugabyteDB)", "published": SEED_NON_TRANSACTIONAL_SPEEDUP,
         "published_label": "seed text: '60% gain in insert performance' (2.8.1)"},
        {"quantity": "DocDB entries per row, packed off / on (YugabyteDB)",
         "published": per_row["packed_rows_off"] / per_row["packed_rows_on"],
         "published_label": "seed statistics: rows_inserted 5 000 000 vs 1 000 000"},
    ])
    live_rows = pd.DataFrame([
        {"quantity": published_rows["quantity"][0], "live": live, "live_ci_low": math.nan, "live_ci_high": math.nan,
         "live_label": label},
        {"quantity": published_rows["quantity"][1], "live": math.nan, "live_ci_low": math.nan,
         "live_ci_high": math.nan, "live_label": "not measured: the lab does not read the tserver's /metrics"},
    ])
    return models.compare_with_published(live_rows, published_rows)


# -- figures and sentences -------------------------------------------------------------------
def plot_methods(table: pd.DataFrame):
    """Rows/s by method (log scale), one panel per system stacked on a shared axis, a bar per setting."""
    import matplotlib.pyplot as plt

    from ingestlab import figures, labels

    systems = list(dict.fromkeys(table["system"]))
    heights = [table.loc[table["system"] == s, "method"].nunique() for s in systems]
    fig, axes = plt.subplots(len(systems), 1, figsize=(figures.PAGE_WIDTH, 1.2 + 0.42 * sum(heights)),
                             squeeze=False, sharex=True, gridspec_kw={"height_ratios": heights})
    for i, (ax, system) in enumerate(zip(axes[:, 0], systems)):
        figures.plot_bars(table[table["system"] == system], x="rows_per_s", y="method", hue="setting", ax=ax,
                          log=figures.spans_decades(table["rows_per_s"]))
        ax.set_title(labels.phrase(system), loc="left", fontsize="medium")
        if i < len(systems) - 1:  # one legend, under the last panel
            ax.get_legend().remove()
    axes[-1, 0].set_xlabel("rows per second")
    fig.tight_layout()
    return fig


def plot_versions(table: pd.DataFrame, setting: str = "default"):
    """The seed's "all versions" chart: rows/s by method (log scale), a bar per engine version, under ``setting``."""
    from ingestlab import figures

    return figures.plot_bars(table[table["setting"] == setting], x="rows_per_s", y="method", hue="system",
                             log=True).figure


def plot_fit(loads: pd.DataFrame, fits: pd.DataFrame):
    """Seconds against statements per system × setting, with the fitted lines (log–log)."""
    from ingestlab import figures, labels

    measured = loads[~loads["warmup"] & ~loads["method"].isin(FIT_EXCLUDED)]
    group = labels.join(measured, ["system", "setting"])
    long = tidy_fits(fits)
    lines = long.assign(group=labels.join(long.rename(columns={"engine": "system", "variant": "setting"}),
                                          ["system", "setting"]))
    return figures.plot_fit(measured.assign(group=group), lines, x="statements", y="seconds", hue="group").figure


def describe_methods(table: pd.DataFrame) -> list[str]:
    """Per system and setting, the fastest and the slowest method and how far apart they are."""
    lines = []
    for (system, setting), g in table.groupby(["system", "setting"], sort=False):
        if len(g) < 2:
            continue
        fast, slow = g.loc[g["rows_per_s"].idxmax()], g.loc[g["rows_per_s"].idxmin()]
        lines.append(f"**{system}, {setting}**: fastest {fast['method']} {fast['rows_per_s']:,.0f} rows/s "
                     f"({fast['seconds']:.3g} s), slowest {slow['method']} {slow['rows_per_s']:,.0f} rows/s "
                     f"({slow['seconds']:.3g} s): {fast['rows_per_s'] / slow['rows_per_s']:.0f}× apart.")
    return lines


def describe_versions(table: pd.DataFrame, setting: str = "default") -> list[str]:
    """Per method under ``setting``, each version's rows/s relative to the first version's."""
    part = table[table["setting"] == setting]
    systems = list(dict.fromkeys(part["system"]))
    if len(systems) < 2:
        return [f"Only {', '.join(systems) or 'no system'} ran under {setting}: no version to compare."]
    wide = part.pivot_table(index="method", columns="system", values="rows_per_s", sort=False)
    base = systems[0]
    lines = []
    for method, row in wide.iterrows():
        others = [f"{s} {row[s] / row[base]:.2f}×" for s in systems[1:] if np.isfinite(row.get(s, np.nan))]
        lines.append(f"**{method}**: {base} {row[base]:,.0f} rows/s; " + ", ".join(others))
    return lines


def describe_fit(fits: pd.DataFrame) -> list[str]:
    """Per system × setting: the fixed cost per statement and the cost per row, with CIs."""
    from ingestlab import report

    lines = []
    for r in fits.itertuples():
        if r.method == "ols":
            lines.append(f"**{r.system}, {r.setting}**: "
                         f"{report.format_estimate(r.overhead_ms * 1e3, r.overhead_ci_low_ms * 1e3, r.overhead_ci_high_ms * 1e3, unit='µs')}"
                         f" per statement, {report.format_estimate(r.per_row_us, r.per_row_ci_low_us, r.per_row_ci_high_us, unit='µs')}"
                         f" per row, R² {r.r2:.3f} ({r.n_points} loads).")
        else:
            lines.append(f"**{r.system}, {r.setting}**: no fit ({r.method}, {r.n_points} loads).")
    return lines


def describe_physical(table: pd.DataFrame) -> list[str]:
    """The fastest method as a share of the disk's rate, and the lab's bulk path against the native client."""
    lines = []
    for r in table.itertuples():
        text = (f"**{r.system}** ({r.setting}): the fastest method, {r.fastest_method}, writes its table at "
                f"{r.fastest_table_mb_per_s:.1f} MB/s, {r.disk_share:.0%} of the disk's {r.disk_mb_per_s:.0f} MB/s "
                "sequential write")
        if np.isfinite(r.bulk_over_native):
            text += (f"; the lab's bulk path takes {r.bulk_over_native:.2f}× the native client's time "
                     f"(95 % CI {r.bulk_over_native_ci_low:.2f}–{r.bulk_over_native_ci_high:.2f})")
        lines.append(text + ".")
    return lines


def headline(table: pd.DataFrame, fits: pd.DataFrame, phys: pd.DataFrame) -> dict[str, float]:
    """The run's headline numbers: rows/s of every method under each system's default, overheads, disk share."""
    out = {f"rows_per_s[{r.system}|{r.setting}|{r.method}]": float(r.rows_per_s) for r in table.itertuples()
           if r.setting == "default"}
    out.update({f"overhead_us[{r.system}|{r.setting}]": float(r.overhead_ms * 1e3) for r in fits.itertuples()
                if r.method == "ols"})
    out.update({f"disk_share[{r.system}]": float(r.disk_share) for r in phys.itertuples()})
    out.update({f"bulk_over_native[{r.system}]": float(r.bulk_over_native) for r in phys.itertuples()})
    return out


#: Notebook 05's load model in :func:`fit`'s columns: a fixed cost per statement, the rows' time, per row.
FIT_TERMS = {**models.OVERHEAD_TERMS,
             "per_row": models.Term("per_row_us", "per_row_ci_low_us", "per_row_ci_high_us", "µs")}


def tidy_fits(fits: pd.DataFrame) -> pd.DataFrame:
    """:func:`fit`'s load fits in the lab's long form (``fits.csv``): ``overhead`` (ms), ``write_time`` (s), ``per_row`` (µs)."""
    return models.tidy(fits, model="overhead", terms=FIT_TERMS, notebook=NOTEBOOK_STEM)


#: The seed's ratios (its text; it prints no table). ``non_transactional``: "a 60% gain in insert
#: performance" since 2.8.1, read as 1.6 × the default's rows/s; packed rows: DocDB rows per
#: table row, 5 without and 1 with (``data/published/yugabytedb_docdb_rows_inserted.csv``).
SEED_NON_TRANSACTIONAL_SPEEDUP = 1.6
