"""Notebook 03's analysis: batch statistics, ratios to insert, reads per row, fits, the study beside them, and their sentences."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ingestlab import cgroups, findings, intervals, models
from ingestlab.adequacy import ADEQUACY_COLUMNS
from ingestlab.workloads.upsert import OPERATIONS

#: Published table of the study's batch statistics (its ``lab_engine`` column pairs its engines with live ones).
PUBLISHED = "arangodb_upsert_batch_times"
PUBLISHED_OPERATIONS = {"insert_new_keys": "insert", "upsert_existing_keys": "overwrite"}
#: Columns of the study's statistics table, in its order.
STATISTICS = ("min", "median", "mean", "p90", "p99", "max")


def _full(samples: pd.DataFrame, batch_rows: int) -> pd.DataFrame:
    return samples[~samples["warmup"] & (samples["rows"] == batch_rows)]


def _per_s(g: pd.DataFrame, column: str) -> float:
    """``column``'s sum over the batches' time; NaN when it was not measured."""
    return g[column].sum(min_count=1) / g["elapsed_s"].sum()


def statistics(samples: pd.DataFrame, batch_rows: int) -> pd.DataFrame:
    """The study's per-batch statistics (min, median, mean, P90, P99, max) of full-size batches.

    One row per engine × operation × disk profile: ``batches``, ``batch_rows``, the six
    statistics in ms, ``read_iops`` (device reads per second over those batches, from
    ``/proc/diskstats``), ``cgroup_read_iops`` (the throttled processes' own, when
    throttled), ``read_iops_limit`` (the profile's), ``read_mb_s`` (``disk_read_bytes``: the
    throttled processes' when throttled, else the device's) beside ``read_mb_s_limit``,
    ``blocks_read_per_row`` (the engine's own count of blocks it did not find in its cache),
    ``disk_reads_per_row`` (reads that reached the disk), the same for writes
    (``write_iops``...), and the ``memory_limit`` in force with, under a memory cap, the
    median ``page_cache_mb`` after a batch and the ``peak_memory_mb`` of the server's
    processes during one. NaN where the run could not measure a quantity.
    """
    full = _full(samples, batch_rows).assign(ms=lambda d: d["elapsed_s"] * 1e3)
    keys = ["engine", "operation", "disk_profile"]
    rows = []
    for key, g in full.groupby(keys, sort=False):
        ms = g["ms"].to_numpy()
        limits = cgroups.PROFILES.get(key[2])
        rows.append(dict(
            zip(keys, key), batches=len(g), batch_rows=batch_rows,
            min_ms=ms.min(), median_ms=np.median(ms), mean_ms=ms.mean(), p90_ms=np.percentile(ms, 90),
            p99_ms=np.percentile(ms, 99), max_ms=ms.max(),
            read_iops=_per_s(g, "dev_read_ios"), cgroup_read_iops=_per_s(g, "cgroup_read_ios"),
            read_iops_limit=limits.read_iops if limits and limits.read_iops else np.nan,
            read_mb_s=_per_s(g, "disk_read_bytes") / 1e6,
            read_mb_s_limit=limits.read_bps / 1e6 if limits and limits.read_bps else np.nan,
            blocks_read_per_row=g["engine_blocks_read"].sum(min_count=1) / g["rows"].sum(),
            disk_reads_per_row=g["disk_read_ios"].sum(min_count=1) / g["rows"].sum(),
            write_iops=_per_s(g, "dev_write_ios"), cgroup_write_iops=_per_s(g, "cgroup_write_ios"),
            write_iops_limit=limits.write_iops if limits and limits.write_iops else np.nan,
            memory_limit=g["memory_limit"].iloc[0],
            page_cache_mb=g["mem_page_cache_bytes"].median() / 2**20,
            peak_memory_mb=g["mem_peak_bytes"].max() / 2**20))
    return pd.DataFrame(rows)


def reads_per_row(samples: pd.DataFrame) -> pd.DataFrame:
    """Reads per row of every measured batch, by engine and operation, from both sides, tidy.

    ``counter`` is ``"engine: blocks not in its cache"`` (the engine's own count: PostgreSQL
    ``shared_blks_read``, InnoDB ``Innodb_buffer_pool_reads``, RocksDB block-cache misses) or
    ``"disk: reads of its processes"`` (the blkio cgroup's count when throttled, else the
    device's, which includes the rest of the machine). Under a memory cap an engine's miss
    may still be found in the OS page cache; the disk count says how many were not.

    Returns
    -------
    pandas.DataFrame
        ``engine``, ``operation``, ``counter``, ``reads``, ``rows``, ``per_row``.
    """
    measured = samples[~samples["warmup"]]
    frames = [measured[["engine", "operation", "rows"]].assign(counter=counter, reads=measured[column])
              for counter, column in (("engine: blocks not in its cache", "engine_blocks_read"),
                                      ("disk: reads of its processes", "disk_read_ios"))]
    out = pd.concat(frames).groupby(["engine", "operation", "counter"], sort=False)[["reads", "rows"]].sum()
    return out.reset_index().assign(per_row=lambda d: d["reads"] / d["rows"])


def ratios(samples: pd.DataFrame, batch_rows: int, *, seed: int = 0) -> pd.DataFrame:
    """Every operation's batch time over the insert's, full-size batches, median and mean, bootstrap 95 % CI.

    Returns
    -------
    pandas.DataFrame
        ``engine``, ``disk_profile``, ``operation``, ``statistic`` (``median``/``mean``),
        ``ratio``, ``ci_low``, ``ci_high``, ``n_a``, ``n_b``.
    """
    full = _full(samples, batch_rows)
    rows = []
    for (engine, profile), g in full.groupby(["engine", "disk_profile"], sort=False):
        base = g.loc[g["operation"] == "insert", "elapsed_s"]
        if len(base) < 2:
            continue
        for operation in [o for o in OPERATIONS if o != "insert" and o in set(g["operation"])]:
            a = g.loc[g["operation"] == operation, "elapsed_s"]
            if len(a) < 2:
                continue
            for name, stat in (("median", np.median), ("mean", np.mean)):
                r = intervals.ratio_ci(a, base, statistic=stat, seed=seed)
                rows.append({"engine": engine, "disk_profile": profile, "operation": operation, "statistic": name,
                             **r})
    return pd.DataFrame(rows)


def fit(samples: pd.DataFrame, batch_rows: int) -> pd.DataFrame:
    """``batch_time = overhead + rows × per_row_cost`` per engine × operation × disk profile.

    OLS (with 95 % CIs) and Theil–Sen over the measured batches of every size.

    Returns
    -------
    pandas.DataFrame
        ``engine``, ``variant`` (the operation), ``disk_profile``, ``method``,
        ``overhead_ms`` (the intercept: per-batch cost) with CI, ``per_row_us`` with CI,
        ``write_time_s`` (the rows part of a full batch: ``BATCH_ROWS × per_row_cost``),
        ``r2``, ``n_points``.
    """
    measured = samples[~samples["warmup"]]
    fits = models.fit_linear(measured, x="rows", y="elapsed_s", by=["engine", "operation", "disk_profile"],
                             adequacy=True)
    out = pd.DataFrame({
        "engine": fits["engine"], "variant": fits["operation"], "disk_profile": fits["disk_profile"],
        "method": fits["method"],
        "overhead_ms": fits["intercept"] * 1e3, "overhead_ci_low_ms": fits["intercept_ci_low"] * 1e3,
        "overhead_ci_high_ms": fits["intercept_ci_high"] * 1e3,
        "write_time_s": fits["slope"] * batch_rows,
        "per_row_us": fits["slope"] * 1e6, "per_row_ci_low_us": fits["slope_ci_low"] * 1e6,
        "per_row_ci_high_us": fits["slope_ci_high"] * 1e6, "r2": fits["r2"], "n_points": fits["n_points"],
        **{c: fits[c] for c in ADEQUACY_COLUMNS},
    })
    return out


def prediction(samples: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """What the batch model predicts for the full batches it did not see, per engine, operation and disk profile.

    The line ``batch time = overhead + rows × per-row cost`` is fitted to the smaller batches
    only (:func:`ingestlab.adequacy.fit_line`, constant variance), then asked for the largest
    batch size; each of those batches is compared with the 95 % prediction interval for one
    new batch.

    Returns
    -------
    pandas.DataFrame
        ``engine, operation, disk_profile, rows, predicted_s, pi_low_s, pi_high_s, observed_median_s,
        batches, batches_inside, inside`` (the median inside the interval).
    """
    from ingestlab.adequacy import predict_held_out

    measured = samples[~samples["warmup"]]
    out = []
    for (engine, operation, profile), g in measured.groupby(["engine", "operation", "disk_profile"], sort=False):
        largest = g["rows"].max()
        seen, unseen = g[g["rows"] < largest], g[g["rows"] == largest]
        if len(seen) < 3 or seen["rows"].nunique() < 2:
            continue
        p = predict_held_out(seen, unseen, x="rows", y="elapsed_s", variance="constant", alpha=alpha)
        out.append({"engine": engine, "operation": operation, "disk_profile": profile, "rows": int(largest),
                    "predicted_s": p["predicted"], "pi_low_s": p["pi_low"], "pi_high_s": p["pi_high"],
                    "observed_median_s": p["observed_median"], "batches": p["runs"], "batches_inside": p["runs_inside"],
                    "inside": p["inside"]})
    return pd.DataFrame(out)


def describe_prediction(table: pd.DataFrame) -> list[str]:
    """Observed against predicted for the largest batches, per engine and operation."""
    if table.empty:
        return ["No prediction: too few smaller batches to fit the line without the largest."]
    lines = [f"**{r.engine} {r.operation}** [{r.disk_profile}], batches of {r.rows:,} rows left out of the fit: "
             f"{r.observed_median_s * 1e3:.1f} ms measured (median of {r.batches}), {r.predicted_s * 1e3:.1f} ms "
             f"predicted (95 % PI {r.pi_low_s * 1e3:.1f}–{r.pi_high_s * 1e3:.1f}); {r.batches_inside} of "
             f"{r.batches} inside" for r in table.itertuples()]
    lines.append(findings.foresaw(table, unseen="largest batches", among="engine × operation configurations"))
    return lines


#: Notebook 03's batch model in :func:`fit`'s columns: a fixed cost per batch and a cost per row.
FIT_TERMS = {"overhead": models.Term("overhead_ms", "overhead_ci_low_ms", "overhead_ci_high_ms", "ms per batch"),
             "per_row": models.Term("per_row_us", "per_row_ci_low_us", "per_row_ci_high_us", "µs per row")}


def tidy_fits(fits: pd.DataFrame) -> pd.DataFrame:
    """:func:`fit`'s batch fits in the lab's long form (``fits.csv``); ``variant`` is the operation.

    The disk profile goes into the model's name (``batch_time cloud-375``) so that fits under
    two profiles are never taken for one.
    """
    from ingestlab.workloads.upsert import NOTEBOOK

    return models.tidy(fits, model="batch_time {disk_profile}", terms=FIT_TERMS, notebook=NOTEBOOK.stem)


def memory_mb(memory: pd.DataFrame) -> pd.DataFrame:
    """The memory table of a run (:func:`ingestlab.workloads.upsert.measure`) with every ``*_bytes`` column in MB.

    Examples
    --------
    >>> memory_mb(pd.DataFrame({"engine": ["e1"], "memory_limit": ["cgroup"], "limit_bytes": [2**28],
    ...                         "cgroup": ["/sys/fs/cgroup/memory/x"]}))
      engine memory_limit  limit_mb
    0     e1       cgroup     256.0
    """
    in_bytes = [c for c in memory.columns if c.endswith("_bytes")]
    keep = [c for c in ("engine", "memory_limit") if c in memory.columns]
    out = memory[keep].copy()
    for column in in_bytes:
        out[column.removesuffix("_bytes") + "_mb"] = memory[column] / 2**20
    return out


def published_statistics() -> pd.DataFrame:
    """The study's statistics tables as rows like :func:`statistics`' (``engine`` = the study's engine)."""
    from ingestlab import published

    table = published.load(PUBLISHED)
    wide = table.pivot_table(index=["engine", "version", "scenario", "rows_per_batch"], columns="statistic",
                             values="batch_ms", sort=False).reset_index()
    batches = table.groupby(["engine", "scenario"], sort=False)["batches"].first()
    rows = []
    for _, r in wide.iterrows():
        n = batches.get((r["engine"], r["scenario"]))
        rows.append({"engine": f"{r['engine']} {r['version']} (seed)",
                     "operation": PUBLISHED_OPERATIONS[r["scenario"]], "disk_profile": "seed: GCE 500 GB",
                     "batches": n if pd.notna(n) else np.nan, "batch_rows": r["rows_per_batch"],
                     **{f"{s}_ms": r[s] for s in STATISTICS},
                     "read_iops": np.nan, "cgroup_read_iops": np.nan, "read_iops_limit": 375.0,
                     "blocks_read_per_row": np.nan, "write_iops": np.nan, "cgroup_write_iops": np.nan,
                     "write_iops_limit": 750.0})
    return pd.DataFrame(rows)


def live_vs_published(ratio_table: pd.DataFrame, stats: pd.DataFrame) -> pd.DataFrame:
    """The study's overwrite/insert ratios and batch times beside the live ones (paired engines).

    ArangoDB is paired with RocksDB (its storage engine), PostgreSQL 9.6 with PostgreSQL 18.
    The study's ratios are of its mean and median batch times; the live ones carry bootstrap
    CIs. Live rows of engines without a study counterpart appear with no published value.

    Returns
    -------
    pandas.DataFrame
        See :func:`ingestlab.models.compare_with_published`; ``quantity`` names the number.
    """
    from ingestlab import published

    pairs = {lab: study for study, lab in published.lab_engines(PUBLISHED).items()}
    pub_stats = published_statistics()
    pub_rows, live_rows = [], []
    for _, r in ratio_table[ratio_table["operation"] == "overwrite"].iterrows():
        label = pairs.get(r["engine"])
        q = f"overwrite/insert {r['statistic']}: {r['engine']} [{r['disk_profile']}]"
        if label is not None:
            p = pub_stats[pub_stats["engine"].str.startswith(label + " ")].set_index("operation")
            q += f" vs {label} (seed)"
            pub_rows.append({"quantity": q, "published": p.loc["overwrite", f"{r['statistic']}_ms"]
                             / p.loc["insert", f"{r['statistic']}_ms"], "published_label": "ratio of seed tables"})
        live_rows.append({"quantity": q, "live": r["ratio"], "live_ci_low": r["ci_low"], "live_ci_high": r["ci_high"],
                          "live_label": "bootstrap 95 % CI"})
    for _, s in stats.iterrows():
        label = pairs.get(s["engine"])
        if label is None or s["operation"] not in ("insert", "overwrite"):
            continue
        p = pub_stats[pub_stats["engine"].str.startswith(label + " ")].set_index("operation")
        q = f"{s['operation']} median batch (ms): {s['engine']} [{s['disk_profile']}] vs {label} (seed)"
        pub_rows.append({"quantity": q, "published": p.loc[s["operation"], "median_ms"],
                         "published_label": "seed table"})
        live_rows.append({"quantity": q, "live": s["median_ms"], "live_ci_low": np.nan, "live_ci_high": np.nan,
                          "live_label": f"median of {s['batches']} batches"})
    live = pd.DataFrame(live_rows, columns=["quantity", "live", "live_ci_low", "live_ci_high", "live_label"])
    pub = pd.DataFrame(pub_rows, columns=["quantity", "published", "published_label"])
    return models.compare_with_published(live, pub)


# -- what the notebook shows and says ----------------------------------------------------------
def describe_statistics(stats: pd.DataFrame) -> list[str]:
    """Per engine, each operation's median full batch and how far its P90 lies above it."""
    lines = []
    for engine, g in stats.groupby("engine", sort=False):
        lines.append(f"**{engine}**: median " + ", ".join(
            f"{r.operation} {r.median_ms:,.1f} ms (P90 {r.p90_ms / r.median_ms:.2f} × the median)"
            for r in g.itertuples()) + ".")
    return lines


def plot_ratios(ratio_table: pd.DataFrame):
    """Each operation's batch time over the insert's, median and mean with their CIs (log x where they span a decade)."""
    from ingestlab import labels, plots

    shown = ratio_table.assign(label=labels.join(ratio_table, ["engine", "operation"]) + " ÷ insert, disk "
                               + ratio_table["disk_profile"])
    ax = plots.plot_estimates(shown, x="ratio", y="label", low="ci_low", high="ci_high", hue="statistic")
    plots.set_scale(ax, "x", True, shown[["ratio", "ci_low", "ci_high"]].to_numpy().ravel())
    ax.axvline(1, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("batch time ÷ the insert's batch time (bars: bootstrap 95 % CI)")
    return ax.figure


def describe_ratios(ratio_table: pd.DataFrame) -> list[str]:
    """Each operation's median batch over the insert's, with its bootstrap CI and the batches behind it."""
    from ingestlab import report

    median = ratio_table[ratio_table["statistic"] == "median"] if not ratio_table.empty else ratio_table
    lines = [f"**{r.engine}** [{r.disk_profile}]: {r.operation} takes "
             f"**{report.format_estimate(r.ratio, r.ci_low, r.ci_high, unit='×', digits=3 if r.ratio < 10 else 0)}** "
             f"the insert's median batch time ({r.n_a} and {r.n_b} batches; bootstrap"
             + (", few batches: a rough interval)" if min(r.n_a, r.n_b) < 5 else ")")
             for r in median.itertuples()]
    return lines or ["Fewer than two full batches per operation: no ratio."]


def plot_reads(full: pd.DataFrame, reads: pd.DataFrame, limits):
    """Reads per row from both counters (top) and read IOPS per full batch against the profile's limit (below)."""
    import matplotlib.pyplot as plt

    from ingestlab import figures, labels, plots

    own = full["cgroup_read_iops"].notna().any()
    rows = reads[["engine", "operation"]].drop_duplicates().shape[0]
    # one above the other: each panel's labels take the page's width, not half of it; with one engine's two rows
    # (-p ENGINES postgres) 3.3 in left panels of 0.7 in under the legends and labels: 4.2 in at least
    fig, (left, right) = plt.subplots(2, 1, figsize=(figures.PAGE_WIDTH, max(4.2, 2.6 + 0.35 * rows)), layout="constrained",
                                      gridspec_kw={"height_ratios": [max(rows, 1), max(full["operation"].nunique(), 1)]})
    plots.plot_bars(reads.assign(label=labels.join(reads, ["engine", "operation"])), x="per_row", y="label",
                      hue="counter", ax=left)
    left.set_xlabel("block reads per row")
    plots.plot_latency(full, x="cgroup_read_iops" if own else "read_iops", y="operation", hue="engine", ax=right,
                         log=False)
    if limits is not None:
        right.axvline(limits.read_iops, color="black", lw=1, ls="--", label=f"limit {limits.read_iops}")
        right.legend(fontsize="small")
    right.set_xlabel(("throttled processes' " if own else "device ") + "read IOPS per batch")
    return fig


def describe_reads(reads: pd.DataFrame, stats: pd.DataFrame) -> list[str]:
    """Reads per row from both counters, then per full batch the IOPS read and written against the limits."""
    per_row = reads.pivot_table(index=["engine", "operation"], columns="counter", values="per_row", sort=False)
    lines = [f"**{engine} {operation}**: " + "; ".join(f"{counter} {v:.2f} per row" for counter, v in r.items())
             for (engine, operation), r in per_row.iterrows()]
    for r in stats.itertuples():
        own = f", the engine's processes {r.cgroup_read_iops:.0f}" if np.isfinite(r.cgroup_read_iops) else ""
        limit = f" (limit {r.read_iops_limit:.0f})" if np.isfinite(r.read_iops_limit) else " (no limit)"
        own_w = f", the engine's processes {r.cgroup_write_iops:.0f}" if np.isfinite(r.cgroup_write_iops) else ""
        limit_w = f" (limit {r.write_iops_limit:.0f})" if np.isfinite(r.write_iops_limit) else ""
        cache = (f"; page cache {r.page_cache_mb:.0f} MB after a batch, peak memory {r.peak_memory_mb:.0f} MB"
                 if np.isfinite(r.page_cache_mb) else "")
        lines.append(f"**{r.engine} {r.operation}** [{r.disk_profile}, memory limit {r.memory_limit}], full batches: "
                     f"the device read {r.read_iops:.0f} IOPS{own}{limit}; it wrote {r.write_iops:.0f} IOPS{own_w}"
                     f"{limit_w}{cache}")
    return lines


def plot_fit(measured: pd.DataFrame, fits: pd.DataFrame):
    """Batch time against rows, a panel per engine (stacked), a fitted line with its CI band per operation."""
    import matplotlib.pyplot as plt

    from ingestlab import figures, labels, plots

    long = tidy_fits(fits)
    drawn = long.assign(series=long["variant"].map(labels.label))
    points = measured.assign(series=measured["operation"].map(labels.label))
    engines = list(dict.fromkeys(points["engine"]))
    # stacked, each line named where it ends with its slope and CI, laid out to fit
    fig, axes = plt.subplots(len(engines), 1, figsize=(figures.PAGE_WIDTH, 2.6 * len(engines)), squeeze=False,
                             layout="constrained")
    for number, (ax, engine) in enumerate(zip(axes[:, 0], engines)):
        plots.plot_fit(points[points["engine"] == engine], drawn[drawn["engine"] == engine], x="rows",
                         y="elapsed_s", hue="series", slope="per_row", intercept="overhead", ax=ax, legend="ends",
                         explain=number == 0, logy=False)  # a straight model on linear axes: a straight line
        ax.set_title(labels.label(engine), loc="left", fontsize="medium")
        ax.set_ylabel("batch time (s)")
        ax.set_xlabel("rows per batch")
    return fig


def describe_fit(fits: pd.DataFrame) -> list[str]:
    """Per engine and operation: the per-row cost and the per-batch intercept, with their CIs."""
    from ingestlab import report

    return [f"**{r.engine} {r.variant}** [{r.disk_profile}]: "
            f"{report.format_estimate(r.per_row_us, r.per_row_ci_low_us, r.per_row_ci_high_us, unit='µs')} per row; "
            f"intercept {report.format_estimate(r.overhead_ms, r.overhead_ci_low_ms, r.overhead_ci_high_ms)} per batch; "
            f"R² {r.r2:.3f} over {r.n_points} batches" for r in fits[fits["method"] == "ols"].itertuples()]


def plot_comparison(comparison: pd.DataFrame):
    """The live numbers beside the study's, where the study has a counterpart."""
    from ingestlab import plots

    return plots.plot_live_vs_published(comparison[comparison["published"].notna()]).figure


def describe_comparison(comparison: pd.DataFrame) -> list[str]:
    """The live overwrite/insert median ratio beside the study's, per paired engine."""
    from ingestlab import report

    rows = comparison[comparison["quantity"].str.startswith("overwrite/insert median") & comparison["published"].notna()]
    return [f"{r.quantity}: live **{report.format_estimate(r.live, r.live_ci_low, r.live_ci_high, unit='×')}** against "
            f"the seed's {r.published:.3g} ×" for r in rows.itertuples()] or ["No paired engine measured."]


def headline(ratio_table: pd.DataFrame, stats: pd.DataFrame, fits: pd.DataFrame) -> dict[str, float]:
    """The run's headline numbers: ratios to insert, median batches, reads per row, per-row costs."""
    out = {f"ratio_{r.statistic}[{r.engine} {r.operation}/insert, {r.disk_profile}]": float(r.ratio)
           for r in ratio_table.itertuples()}
    for r in stats.itertuples():
        out[f"median_ms[{r.engine} {r.operation}, {r.disk_profile}]"] = float(r.median_ms)
        out[f"blocks_read_per_row[{r.engine} {r.operation}]"] = float(r.blocks_read_per_row)
        out[f"disk_reads_per_row[{r.engine} {r.operation}]"] = float(r.disk_reads_per_row)
    out.update({f"per_row_us[{r.engine} {r.variant}, {r.disk_profile}]": float(r.per_row_us)
                for r in fits[fits["method"] == "ols"].itertuples()})
    return out


def fit_run(folder: str | os.PathLike) -> pd.DataFrame:
    """Notebook 03's fits in the lab's long form, as its ``fits.csv`` holds them, computed again from the run in ``folder``.

    Its declaration's ``fit`` (from ``results.parquet`` and the run's ``BATCH_ROWS``); ``bench/refit.py`` compares it with the stored ``fits.csv``.
    """
    batch_rows = json.loads((Path(folder) / "run.json").read_text())["parameters"]["batch_rows"]
    return tidy_fits(fit(pd.read_parquet(Path(folder) / "results.parquet"), batch_rows))
