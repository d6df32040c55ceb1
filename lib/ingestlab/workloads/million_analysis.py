"""Notebook 05's analysis: medians per load, the load fit per write path and its prediction, limits, sentences, figures."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ingestlab import findings, intervals, models
from ingestlab.workloads.million import FIT_PATHS, NOTEBOOK_STEM

# -- analysis --------------------------------------------------------------------------------
#: A configuration: a method with its rows per INSERT or its bulk statements (``load``, e.g. "batches of 100 rows").
GROUP = ["system", "setting", "load"]
#: One load fit per system × setting × write path.
FIT_BY = ["system", "setting", "path"]
#: The fitted paths in sentences and panel titles.
PATH_NAMES = {"insert_values": "INSERT … VALUES, one commit each", "bulk": "bulk load (COPY, LOAD DATA)"}


def medians(loads: pd.DataFrame) -> pd.DataFrame:
    """Per system × setting × load: median seconds and rows/s over the runs, with distribution-free CIs.

    Warm-up loads are left out (counted in ``warmup_n``). The CI is the order-statistic
    interval of :func:`ingestlab.intervals.median_ci_exact`; ``ci_confidence`` says what it reaches.
    ``method``, ``path`` and ``batch_rows`` say what the load is.
    """
    measured = loads[~loads["warmup"]]
    warm = loads[loads["warmup"]].groupby(GROUP).size()
    rows = []
    for key, g in measured.groupby(GROUP, sort=False):
        sec = intervals.median_ci_exact(g["seconds"])
        rps = intervals.median_ci_exact(g["rows_per_s"])
        first = g.iloc[0]
        rows.append({**dict(zip(GROUP, key)), "method": first["method"], "path": first["path"],
                     "batch_rows": int(first["batch_rows"]), "runs": len(g), "rows": int(first["rows"]),
                     "statements": int(first["statements"]), "commits": int(first["commits"]),
                     "seconds": sec["median"], "seconds_ci_low": sec["ci_low"], "seconds_ci_high": sec["ci_high"],
                     "rows_per_s": rps["median"], "rows_per_s_ci_low": rps["ci_low"],
                     "rows_per_s_ci_high": rps["ci_high"], "ci_confidence": sec["confidence"],
                     "mb_per_s": float(g["mb_per_s"].median()), "table_bytes": float(g["table_bytes"].median()),
                     "table_mb_per_s": float(g["table_mb_per_s"].median()), "add_key_s": float(g["add_key_s"].median()),
                     "warmup_n": int(warm.get(key, 0))})
    return pd.DataFrame(rows)


def fit(loads: pd.DataFrame) -> pd.DataFrame:
    """``seconds = statements × overhead + write_time`` per system × setting × write path (:data:`FIT_PATHS`).

    Within a path the same rows go by several statement counts (``insert_values``: single rows
    and each BATCH_ROWS; ``bulk``: each BULK_STATEMENTS), so the intercept is the rows' time
    on that path and the slope the fixed cost of one of its statements
    (:func:`ingestlab.models.fit_load_overhead`: OLS with CIs where the points allow, else
    ``two_point`` or ``none``; whether the line holds in ``model_holds``). The paths are fitted
    apart: an INSERT's rows are parsed, a COPY's streamed, so they share neither cost.
    ``per_row_us`` is the intercept per row, with its CI.
    """
    measured = loads[~loads["warmup"] & loads["path"].isin(FIT_PATHS)]
    fits = models.fit_load_overhead(measured, by=FIT_BY, x="statements", y="seconds", adequacy=True)
    rows = measured.groupby(FIT_BY, sort=False)["rows"].first().rename("rows").reset_index()
    fits = fits.merge(rows, on=FIT_BY)
    for src, dst in (("write_time_s", "per_row_us"), ("write_time_ci_low_s", "per_row_ci_low_us"),
                     ("write_time_ci_high_s", "per_row_ci_high_us")):
        fits[dst] = fits[src] / fits["rows"] * 1e6
    return fits.assign(engine=fits["system"], variant=fits["setting"])


#: The rows per INSERT notebook 05 holds out of the INSERT path and predicts from the rest (the study's batch).
HELD_OUT_BATCH_ROWS = 1000
#: Published table of the study's DocDB counts (its ``lab_engine``: the engine whose live runs it is set beside).
PUBLISHED = "yugabytedb_docdb_rows_inserted"
#: The columns of :func:`prediction`.
PREDICTION_COLUMNS = ["system", "setting", "path", "load", "statements", "predicted_s", "pi_low_s", "pi_high_s",
                      "observed_median_s", "runs", "runs_inside", "inside"]


def prediction(loads: pd.DataFrame, held_out: int = HELD_OUT_BATCH_ROWS) -> pd.DataFrame:
    """What the INSERT path's line predicts for the batches it did not see, per system × setting.

    The line of :func:`fit` is fitted again to the ``insert_values`` loads without the
    batches of ``held_out`` rows (without such batches in the run: the middle batch size),
    with :func:`ingestlab.adequacy.fit_line` (variance growing with the statements), and asked
    for their seconds at their statement count; each of their runs is compared with the 95 %
    prediction interval for one new run.

    Returns
    -------
    pandas.DataFrame
        :data:`PREDICTION_COLUMNS`: ``inside`` says whether the observed median is in the interval.
    """
    from ingestlab.adequacy import held_out_table

    measured = loads[~loads["warmup"] & (loads["path"] == "insert_values")].reset_index(drop=True)
    sizes = sorted(measured.loc[measured["method"] == "batches", "batch_rows"].unique())
    if sizes and held_out not in sizes:
        held_out = sizes[len(sizes) // 2]
    out = (measured["method"] == "batches") & (measured["batch_rows"] == held_out)
    table = held_out_table(measured, x="statements", y="seconds", by=["system", "setting"], held_out=out)
    table = table[table["note"] == ""]  # a line needs 3 runs at 2 statement counts besides the held-out batches
    table = table.assign(path="insert_values", load=measured.loc[out, "load"].iloc[0] if out.any() else "",
                         statements=table["statements"].astype(int))
    return table.rename(columns={"predicted": "predicted_s", "pi_low": "pi_low_s", "pi_high": "pi_high_s",
                                 "observed_median": "observed_median_s"})[PREDICTION_COLUMNS].reset_index(drop=True)


def physical(loads: pd.DataFrame, disk_rate: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Per system under its first setting: the fastest load against the disk, the lab's bulk path against the native client.

    ``disk_share`` is the fastest load's table bytes per second over the disk's sequential
    write rate; ``bulk_over_native`` the median seconds of the lab's bulk path in the fewest
    statements (one, by default) over the native client's, with a bootstrap CI
    (:func:`ingestlab.intervals.ratio_ci`).
    """
    measured = loads[~loads["warmup"]]
    disk_mb_s = float(disk_rate["mb_per_s"].iloc[0])
    rows = []
    for system, g in measured.groupby("system", sort=False):
        g = g[g["setting"] == g["setting"].iloc[0]]
        by_load = g.groupby("load", sort=False)[["rows_per_s", "table_mb_per_s"]].median()
        fastest = by_load["rows_per_s"].idxmax()
        row = {"system": system, "setting": g["setting"].iloc[0], "fastest_load": fastest,
               "fastest_rows_per_s": by_load.loc[fastest, "rows_per_s"],
               "fastest_table_mb_per_s": by_load.loc[fastest, "table_mb_per_s"], "disk_mb_per_s": disk_mb_s,
               "disk_share": by_load.loc[fastest, "table_mb_per_s"] / disk_mb_s,
               "bulk_over_native": math.nan, "bulk_over_native_ci_low": math.nan, "bulk_over_native_ci_high": math.nan}
        bulk = g[g["method"] == "bulk"]
        bulk = bulk.loc[bulk["statements"] == bulk["statements"].min(), "seconds"]
        native = g.loc[g["method"] == "native_client", "seconds"]
        if min(len(bulk), len(native)) >= 2:
            r = intervals.ratio_ci(bulk, native, seed=seed)
            row.update(bulk_over_native=r["ratio"], bulk_over_native_ci_low=r["ci_low"],
                       bulk_over_native_ci_high=r["ci_high"])
        elif min(len(bulk), len(native)) == 1:  # one run each: the ratio without a CI
            row.update(bulk_over_native=bulk.median() / native.median())
        rows.append(row)
    return pd.DataFrame(rows)


def live_vs_published(loads: pd.DataFrame) -> pd.DataFrame:
    """The study's ratios beside this run's: YugabyteDB's non-transactional speed-up and packed rows' DocDB entries.

    Live values come only from YugabyteDB targets (by URL); without one they are NaN and
    ``live_label`` says so. The lab does not read DocDB's ``rows_inserted`` metric, so the
    packed-rows ratio has no live value.
    """
    from ingestlab import published

    docdb = published.load(PUBLISHED).set_index("scenario")
    per_row = docdb["docdb_inserted_rows"] / docdb["rows"]
    (study_engine,) = published.lab_engines(PUBLISHED).values()
    yb = loads[~loads["warmup"] & (loads["engine"].astype(str).str.startswith(study_engine))]
    speed = yb.groupby("setting")["rows_per_s"].median()
    live = math.nan
    label = "not measured: no YugabyteDB target in this run"
    if {"default", "non_transactional"} <= set(speed.index):
        live, label = speed["non_transactional"] / speed["default"], "median rows/s, all methods pooled"
    published_rows = pd.DataFrame([
        {"quantity": "non_transactional / default rows/s (YugabyteDB)", "published": STUDY_NON_TRANSACTIONAL_SPEEDUP,
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
def repeats_label(table: pd.DataFrame) -> str:
    """The x label of a figure of :func:`medians`: what a point is, over how many runs, and what its bar reaches.

    Examples
    --------
    >>> repeats_label(pd.DataFrame({"runs": [3, 3], "ci_confidence": [0.75, 0.75]}))
    'rows per second (median of 3 runs; bar: their range, a 75 % CI of the median)'
    """
    def span(values) -> str:  # "3" or "3–5"
        values = sorted(set(values))
        return str(values[0]) if len(values) == 1 else f"{values[0]}–{values[-1]}"

    runs = [int(r) for r in table["runs"]]
    confidence = [round(100 * float(c)) for c in table["ci_confidence"].dropna()]
    if not confidence or max(runs) < 2:
        return f"rows per second (median of {span(runs)} run{'s' if max(runs) > 1 else ''})"
    what = "their range, a" if max(runs) < 6 else "a"  # under 6 runs the 95 % interval is out of reach
    return f"rows per second (median of {span(runs)} runs; bar: {what} {span(confidence)} % CI of the median)"


def plot_methods(table: pd.DataFrame):
    """Thousand rows/s by load (log scale), one panel per system on a shared axis, a dot per setting.

    Systems that ran the same loads stand side by side, the loads named once on the left:
    stacked, two versions' 22 rows did not fit a page's 5.5 in with their values legible.
    Systems with loads of their own are stacked, each naming its loads. Each dot is the
    median of the load's runs, its bar the order-statistic CI of :func:`medians` (the runs'
    range at 3 runs: 75 %); the x label says which.
    """
    import matplotlib.pyplot as plt

    from ingestlab import figures, labels, plots

    systems = list(dict.fromkeys(table["system"]))
    loads = [list(dict.fromkeys(table.loc[table["system"] == s, "load"])) for s in systems]
    rates = ["rows_per_s", "rows_per_s_ci_low", "rows_per_s_ci_high"]
    table = table.assign(**{c: table[c] / 1e3 for c in rates})  # thousands: "1,630", not "1,629,559", beside a dot
    if all(own == loads[0] for own in loads):
        fig, axes = plt.subplots(1, len(systems), figsize=(figures.PAGE_WIDTH, 1.4 + 0.3 * len(loads[0])),
                                 squeeze=False, sharex=True, sharey=True, layout="constrained")
    else:
        heights = [len(own) for own in loads]
        fig, axes = plt.subplots(len(systems), 1, figsize=(figures.PAGE_WIDTH, 1.2 + 0.34 * sum(heights)), squeeze=False,
                                 sharex=True, gridspec_kw={"height_ratios": heights}, layout="constrained")
    for ax, system in zip(axes.flat, systems):
        plots.plot_bars(table[table["system"] == system], x="rows_per_s", y="load", hue="setting", ax=ax,
                          log=plots.spans_decades(table["rows_per_s"]), low="rows_per_s_ci_low",
                          high="rows_per_s_ci_high")
        ax.set_title(labels.phrase(system), loc="left", fontsize="medium")
        ax.set_xlabel("")
        handles, names = ax.get_legend_handles_labels()
        ax.get_legend().remove()
    fig.supxlabel("thousand " + repeats_label(table), fontsize=plt.rcParams["axes.labelsize"])
    plots.legend_under(fig, handles, names, title=labels.column_label("setting"))
    return fig


def plot_versions(table: pd.DataFrame, setting: str = "default"):
    """The study's "all versions" chart: rows/s by load (log scale), a dot per engine version, under ``setting``.

    Medians of the runs with their CIs, as :func:`plot_methods` draws them.
    """
    from ingestlab import plots

    part = table[table["setting"] == setting]
    ax = plots.plot_bars(part, x="rows_per_s", y="load", hue="system", log=True, low="rows_per_s_ci_low",
                           high="rows_per_s_ci_high")
    ax.set_xlabel(repeats_label(part))
    return ax.figure


def plot_fit(loads: pd.DataFrame, fits: pd.DataFrame):
    """Seconds against statements, one panel per write path, one series per system × setting with its fitted line.

    The lines are :func:`ingestlab.plots.plot_fit`'s: a rejected line is not drawn, and its
    legend entry says so.
    """
    import matplotlib.pyplot as plt

    from ingestlab import figures, labels, plots

    measured = loads[~loads["warmup"] & loads["path"].isin(FIT_PATHS)]
    paths = [p for p in FIT_PATHS if p in set(measured["path"])]
    fig, axes = plt.subplots(max(len(paths), 1), 1, figsize=(figures.PAGE_WIDTH, 3.6 * max(len(paths), 1)),
                             squeeze=False, layout="constrained")  # laid out again at its print size
    for number, (ax, path) in enumerate(zip(axes[:, 0], paths)):
        points, part = measured[measured["path"] == path], fits[fits["path"] == path]
        lines = tidy_fits(part.assign(engine=labels.join(part, ["system", "setting"])))
        lines = lines.rename(columns={"engine": "group"})
        plots.plot_fit(points.assign(group=labels.join(points, ["system", "setting"])), lines, x="statements",
                         y="seconds", hue="group", ax=ax, legend="ends", explain=number == 0)
        ax.set_title(PATH_NAMES[path], loc="left", fontsize="medium")
    return fig


def describe_methods(table: pd.DataFrame) -> list[str]:
    """Per system and setting, the fastest and the slowest load and how far apart they are."""
    lines = []
    for (system, setting), g in table.groupby(["system", "setting"], sort=False):
        if len(g) < 2:
            continue
        fast, slow = g.loc[g["rows_per_s"].idxmax()], g.loc[g["rows_per_s"].idxmin()]
        lines.append(f"**{system}, {setting}**: fastest {fast['load']} {fast['rows_per_s']:,.0f} rows/s "
                     f"({fast['seconds']:.3g} s), slowest {slow['load']} {slow['rows_per_s']:,.0f} rows/s "
                     f"({slow['seconds']:.3g} s): {fast['rows_per_s'] / slow['rows_per_s']:.0f}× apart.")
    return lines


def describe_versions(table: pd.DataFrame, setting: str = "default") -> list[str]:
    """Per load under ``setting``, each version's rows/s relative to the first version's."""
    part = table[table["setting"] == setting]
    systems = list(dict.fromkeys(part["system"]))
    if len(systems) < 2:
        return [f"Only {', '.join(systems) or 'no system'} ran under {setting}: no version to compare."]
    wide = part.pivot_table(index="load", columns="system", values="rows_per_s", sort=False)
    base = systems[0]
    lines = []
    for load, row in wide.iterrows():
        others = [f"{s} {row[s] / row[base]:.2f}×" for s in systems[1:] if np.isfinite(row.get(s, np.nan))]
        lines.append(f"**{load}**: {base} {row[base]:,.0f} rows/s; " + ", ".join(others))
    return lines


def describe_fit(fits: pd.DataFrame) -> list[str]:
    """Per system × setting × path: the fixed cost per statement and per row where the line holds, else why not.

    No cost is read from a line that was rejected or not tested; the last sentence counts the
    lines that hold.
    """
    from ingestlab import report

    lines = []
    for r in fits.itertuples():
        where = f"**{r.system}, {r.setting}**, {PATH_NAMES.get(r.path, r.path)}"
        holds = models.model_holds(r.model_holds)
        if r.method != "ols":
            lines.append(f"{where}: no fit with an interval ({r.method}, {r.n_points} loads).")
        elif holds:
            lines.append(f"{where}: "
                         f"{report.format_estimate(r.overhead_ms * 1e3, r.overhead_ci_low_ms * 1e3, r.overhead_ci_high_ms * 1e3, unit='µs')}"
                         f" per statement, {report.format_estimate(r.per_row_us, r.per_row_ci_low_us, r.per_row_ci_high_us, unit='µs')}"
                         f" per row, R² {r.r2:.3f} ({r.n_points} loads).")
        else:
            verdict = "rejected" if holds is False else "not tested"
            lines.append(f"{where}: the line is {verdict} ({r.model_note}); no cost is read from it.")
    if fits.empty:
        return [*lines, "No fit: none of the methods measured loads by INSERTs or bulk statements at several "
                        "statement counts (batches, bulk), so no overhead per statement is estimated."]
    verdicts = [models.model_holds(r.model_holds) if r.method == "ols" else None for r in fits.itertuples()]
    held, rejected = verdicts.count(True), verdicts.count(False)
    lines.append(f"The line holds for {held} of {len(fits)} system × setting × path fits"
                 + ("; only these give an overhead" if held else ": no overhead is reported")
                 + (f"; the figure draws no line through the loads of the {rejected} rejected" if rejected else "")
                 + ".")
    return lines


def describe_physical(table: pd.DataFrame) -> list[str]:
    """The fastest load as a share of the disk's rate, and the lab's bulk path against the native client."""
    lines = []
    for r in table.itertuples():
        text = (f"**{r.system}** ({r.setting}): the fastest load, {r.fastest_load}, writes its table at "
                f"{r.fastest_table_mb_per_s:.1f} MB/s, {r.disk_share:.0%} of the disk's {r.disk_mb_per_s:.0f} MB/s "
                "sequential write")
        if np.isfinite(r.bulk_over_native):
            text += (f"; the lab's bulk path in one statement takes {r.bulk_over_native:.2f}× the native client's time "
                     f"(95 % CI {r.bulk_over_native_ci_low:.2f}–{r.bulk_over_native_ci_high:.2f})")
        lines.append(text + ".")
    return lines


def describe_prediction(table: pd.DataFrame) -> list[str]:
    """Observed against predicted for the held-out batches, system by system, and how many runs fell inside."""
    if table.empty:
        return ["No prediction: the run has no multi-row INSERT batches to hold out, or too few other INSERT "
                "loads to fit the line without them."]
    lines = [f"**{r.system}, {r.setting}**, {r.load} ({r.statements} statements) left out of the fit: "
             f"{r.observed_median_s:.3g} s measured (median of {r.runs} runs), {r.predicted_s:.3g} s predicted "
             f"(95 % PI {r.pi_low_s:.3g}–{r.pi_high_s:.3g}); {r.runs_inside} of {r.runs} runs inside"
             for r in table.itertuples()]
    lines.append(findings.foresaw(table, line="The INSERT path's line", unseen="batches it did not see",
                                  among="system × setting configurations"))
    return lines


def headline(table: pd.DataFrame, fits: pd.DataFrame, phys: pd.DataFrame) -> dict[str, float]:
    """The run's headline numbers: rows/s of every load under each system's default, overheads, disk share.

    An overhead (``overhead_us[system|setting|path]``, with its 95 % CI) comes only from an OLS
    line that holds.
    """
    out = {f"rows_per_s[{r.system}|{r.setting}|{r.load}]": float(r.rows_per_s) for r in table.itertuples()
           if r.setting == "default"}
    out.update({f"overhead_us[{r.system}|{r.setting}|{r.path}]": [float(v * 1e3) for v in (
                r.overhead_ms, r.overhead_ci_low_ms, r.overhead_ci_high_ms)] for r in fits.itertuples()
                if r.method == "ols" and models.model_holds(r.model_holds) is True})
    out.update({f"disk_share[{r.system}]": float(r.disk_share) for r in phys.itertuples()})
    out.update({f"bulk_over_native[{r.system}]": float(r.bulk_over_native) for r in phys.itertuples()})
    return out


#: Notebook 05's load model in :func:`fit`'s columns: a fixed cost per statement, the rows' time, per row (per path).
FIT_TERMS = {**models.OVERHEAD_TERMS,
             "per_row": models.Term("per_row_us", "per_row_ci_low_us", "per_row_ci_high_us", "µs")}


def fit_finding(fits: pd.DataFrame) -> str:
    """The fit figure's finding: per write path (its panel), the range of the lines' fixed costs per statement.

    The figure names each line's cost beside it; the finding says how far apart they lie.
    """
    from ingestlab import findings

    long = tidy_fits(fits)
    said = [f"{PATH_NAMES.get(path, path)}: " + findings.fits(long[long["model"] == f"overhead path={path}"],
                                                               "overhead", listed=2)
            for path in dict.fromkeys(fits["path"]) if path in PATH_NAMES] if not fits.empty else []
    return " ".join(said) or "No line could be fitted at this scale."


def tidy_fits(fits: pd.DataFrame) -> pd.DataFrame:
    """:func:`fit`'s fits in the lab's long form (``fits.csv``): ``overhead`` (ms), ``write_time`` (s), ``per_row`` (µs).

    The model names the path (``overhead path=insert_values``), so each path's fit is its own.
    """
    return models.tidy(fits, model="overhead path={path}", terms=FIT_TERMS, notebook=NOTEBOOK_STEM)


#: The study's ratios (its text; it prints no table). ``non_transactional``: "a 60% gain in insert
#: performance" since 2.8.1, read as 1.6 × the default's rows/s; packed rows: DocDB rows per
#: table row, 5 without and 1 with (``data/published/yugabytedb_docdb_rows_inserted.csv``).
STUDY_NON_TRANSACTIONAL_SPEEDUP = 1.6


def fit_run(folder: str | os.PathLike) -> pd.DataFrame:
    """Notebook 05's fits in the lab's long form, as its ``fits.csv`` holds them, computed again from the run in ``folder``.

    Its declaration's ``fit`` (from ``loads.parquet``); ``bench/refit.py`` compares it with the stored ``fits.csv``.
    """
    return tidy_fits(fit(pd.read_parquet(Path(folder) / "loads.parquet")))
