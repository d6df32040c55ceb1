"""The numeric tables of the five seed studies, as tidy frames read from ``data/published``, and what they state."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ingestlab import _paths, models, report
from ingestlab.errors import ConfigError

#: Columns every published table has; read as text, empty when the seed states nothing.
LABELS = ("source_seed", "engine", "version", "deployment", "scenario")


def data_dir() -> Path:
    """Return the directory that holds the published CSV files.

    Returns
    -------
    pathlib.Path
        ``$INGESTLAB_PUBLISHED_DIR`` when set, else ``data/published`` in the repository.
    """
    override = os.environ.get("INGESTLAB_PUBLISHED_DIR")
    if override:
        return Path(override)
    return _paths.REPO / "data" / "published"


def names() -> list[str]:
    """Return the names of the published tables (the CSV file stems), sorted.

    Returns
    -------
    list of str
        One name per ``<name>.csv`` in :func:`data_dir`.

    Examples
    --------
    >>> "starrocks_insert_scenarios" in names()
    True
    >>> names() == sorted(names())
    True
    """
    return sorted(path.stem for path in data_dir().glob("*.csv"))


def load(name: str) -> pd.DataFrame:
    """Read one published table.

    Parameters
    ----------
    name : str
        A table name, one of :func:`names`.

    Returns
    -------
    pandas.DataFrame
        One row per observation. The :data:`LABELS` columns are text (``""`` when not
        stated); measured columns carry their unit in their name (``total_s``,
        ``median_ms``, ``rows_per_s``) and hold the numbers as the seed prints them.

    Raises
    ------
    ingestlab.errors.ConfigError
        If ``name`` is not a published table.
    """
    known = names()
    if name not in known:
        raise ConfigError(name="name", value=name, accepted="one of: " + ", ".join(known))
    frame = pd.read_csv(data_dir() / f"{name}.csv", dtype=dict.fromkeys(LABELS, str))
    frame[list(LABELS)] = frame[list(LABELS)].fillna("")
    return frame


# -- reshaping the published tables for the models and figures ----------------------------

#: The ``INSERT … VALUES`` scenarios of ``starrocks_insert_scenarios`` the overhead model is
#: fitted on: the same 1000 rows in 1000, 10 and 1 statements.
OVERHEAD_SCENARIOS = ("single_row", "batch_100", "batch_1000")

#: Bytes in the ``MB`` of the seeds' ``MB/s`` columns (binary, as ``request_bytes``; SOURCES.md).
MB = 2**20


def variant_label(frame: pd.DataFrame) -> pd.Series:
    """Name each row's configuration ``"<deployment> <version>"``, as the fits table does.

    Parameters
    ----------
    frame : pandas.DataFrame
        A published table (it has ``deployment`` and ``version``, possibly empty).

    Returns
    -------
    pandas.Series
        One label per row, without leading or trailing spaces when a part is empty.

    Examples
    --------
    >>> variant_label(pd.DataFrame({"deployment": ["shared-data", ""], "version": ["4.0.5", "3.0.1"]})).tolist()
    ['shared-data 4.0.5', '3.0.1']
    """
    return (frame["deployment"].astype(str) + " " + frame["version"].astype(str)).str.strip()


def overhead_points(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The StarRocks scenario rows the fixed-overhead model is fitted on, labelled by variant.

    Parameters
    ----------
    frame : pandas.DataFrame, optional
        ``starrocks_insert_scenarios`` (read when not given).

    Returns
    -------
    pandas.DataFrame
        The rows of :data:`OVERHEAD_SCENARIOS` with ``n_statements`` and ``total_s``, plus
        ``variant`` (:func:`variant_label`).

    Examples
    --------
    >>> points = overhead_points()
    >>> sorted(points["variant"].unique())
    ['shared-data 4.0.5', 'shared-nothing 4.0.4', 'shared-nothing 4.0.5']
    >>> points.groupby("variant")["n_statements"].apply(sorted).iloc[0]
    [1, 10, 1000]
    """
    frame = load("starrocks_insert_scenarios") if frame is None else frame
    points = frame[frame["scenario"].isin(OVERHEAD_SCENARIOS)]
    return points.assign(variant=variant_label(points)).reset_index(drop=True)


def profile_split(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The seed's profile medians per deployment, FE overhead recomputed as TotalTime − ExecutionTime.

    The seed reads the FE's share (parse, plan, transaction, commit) as the difference of
    the two profile counters; this recomputes it from the two printed medians (a
    difference of medians, as the seed's) and keeps the printed value beside it.

    Parameters
    ----------
    frame : pandas.DataFrame, optional
        ``starrocks_insert_profile_medians`` (read when not given).

    Returns
    -------
    pandas.DataFrame
        One row per (engine, version, deployment) with ``variant``, ``total_time_ms``,
        ``execution_time_ms``, ``fe_overhead_ms`` (computed), ``fe_overhead_printed_ms``,
        ``olap_table_sink_ms``, ``client_wall_clock_ms`` and ``n_samples``.

    Examples
    --------
    >>> split = profile_split().set_index("deployment")
    >>> sd = split.loc["shared-data"]
    >>> round(float(sd["fe_overhead_ms"]), 1), float(sd["fe_overhead_printed_ms"])
    (39.6, 40.0)
    """
    frame = load("starrocks_insert_profile_medians") if frame is None else frame
    keys = ["engine", "version", "deployment"]
    wide = frame.pivot_table(index=keys, columns="scenario", values="median_ms", sort=False)
    samples = frame[frame["scenario"] == "total_time"].set_index(keys)["n_samples"]
    out = pd.DataFrame({
        "total_time_ms": wide["total_time"],
        "execution_time_ms": wide["execution_time"],
        "fe_overhead_ms": wide["total_time"] - wide["execution_time"],
        "fe_overhead_printed_ms": wide["fe_overhead"],
        "olap_table_sink_ms": wide["olap_table_sink"],
        "client_wall_clock_ms": wide["client_wall_clock"],
        "n_samples": samples.reindex(wide.index),
    }).reset_index()
    out.insert(3, "variant", variant_label(out))
    return out


def profile_components(split: pd.DataFrame) -> pd.DataFrame:
    """:func:`profile_split` in long form: the BE's execution and the FE's share of each variant's TotalTime.

    Parameters
    ----------
    split : pandas.DataFrame
        :func:`profile_split`.

    Returns
    -------
    pandas.DataFrame
        ``variant``, ``component`` (``"ExecutionTime (BE)"``, ``"TotalTime − ExecutionTime (FE)"``)
        and ``ms``; for :func:`ingestlab.figures.plot_stacked`.

    Examples
    --------
    >>> parts = profile_components(profile_split())
    >>> parts.groupby("variant")["ms"].sum().round(1).to_dict()
    {'shared-data 4.0.5': 67.5, 'shared-nothing 4.0.5': 100.0}
    """
    parts = split.melt(id_vars=["variant"], value_vars=["execution_time_ms", "fe_overhead_ms"],
                       var_name="component", value_name="ms")
    parts["component"] = parts["component"].map({"execution_time_ms": "ExecutionTime (BE)",
                                                  "fe_overhead_ms": "TotalTime − ExecutionTime (FE)"})
    return parts


def component_sweeps(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The control check's medians in long form: one row per deployment, factor and level.

    Parameters
    ----------
    frame : pandas.DataFrame, optional
        ``starrocks_component_medians`` (read when not given).

    Returns
    -------
    pandas.DataFrame
        ``engine``, ``version``, ``deployment``, ``factor`` (buckets, columns, model),
        ``level`` (text: ``"64"``, ``"DUPLICATE"``), ``level_value`` (the number of buckets or
        columns; NaN for the table model), ``median_ms``, ``n_statements``, ``n_warmup``.

    Examples
    --------
    >>> sweeps = component_sweeps()
    >>> sweeps.groupby("factor")["level"].apply(lambda s: sorted(set(s))).to_dict()
    {'buckets': ['1', '64'], 'columns': ['4', '50'], 'model': ['AGGREGATE', 'DUPLICATE', 'UNIQUE']}
    """
    frame = load("starrocks_component_medians") if frame is None else frame
    value = frame["buckets"].where(frame["factor"] == "buckets", frame["n_columns"])
    value = value.where(frame["factor"] != "model")
    level = value.map(lambda v: f"{v:g}", na_action="ignore").fillna(frame["table_model"])
    return pd.DataFrame({
        "engine": frame["engine"], "version": frame["version"], "deployment": frame["deployment"],
        "factor": frame["factor"], "level": level, "level_value": value.astype(float),
        "median_ms": frame["median_ms"], "n_statements": frame["n_statements"], "n_warmup": frame["n_warmup"],
    })


def time_per_request(frame: pd.DataFrame, *, rows: str = "rows_per_insert") -> pd.DataFrame:
    """Add the mean time one client spends per request, from throughput by Little's law.

    With ``concurrency`` clients each keeping one request of ``rows`` rows in flight,
    ``request_ms = concurrency × rows / rows_per_s × 1000``. Tables that print thousands
    of rows/s (``k_rows_per_s``) get ``rows_per_s`` filled from it first.

    Parameters
    ----------
    frame : pandas.DataFrame
        A Doris group-commit table with ``concurrency``, ``rows`` and ``rows_per_s`` or
        ``k_rows_per_s``.
    rows : str
        The column holding the rows each request carries.

    Returns
    -------
    pandas.DataFrame
        ``frame`` with ``rows_per_s`` (filled) and ``request_ms``.

    Examples
    --------
    >>> t = pd.DataFrame({"concurrency": [30], "rows_per_insert": [1000], "k_rows_per_s": [150.0]})
    >>> time_per_request(t)["request_ms"].tolist()
    [200.0]
    """
    out = frame.copy()
    from_k = out["k_rows_per_s"] * 1e3 if "k_rows_per_s" in out.columns else None
    if "rows_per_s" not in out.columns:
        out["rows_per_s"] = from_k
    elif from_k is not None:
        out["rows_per_s"] = out["rows_per_s"].fillna(from_k)
    out["request_ms"] = out["concurrency"] * out[rows] / out["rows_per_s"] * 1e3
    return out


def stream_load_batches(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The Doris Stream Load runs as loads: rows per load, loads per run and time per load.

    Every run loads the same data set, so its rows are ``total_s × rows_per_s``; the bytes
    per row are the median over the table of ``mb_per_s × MB / rows_per_s`` (one data set,
    so one value; ``MB`` = 2**20 bytes, the unit of ``request_bytes``); a load of
    ``request_bytes`` carries ``request_bytes / bytes_per_row`` rows, and a run is
    ``n_loads = total_rows / rows_per_load`` loads.

    Parameters
    ----------
    frame : pandas.DataFrame, optional
        ``doris_group_commit_stream_load`` (read when not given).

    Returns
    -------
    pandas.DataFrame
        ``frame`` with ``variant`` (``"async, 10 clients"``), ``bytes_per_row``,
        ``rows_per_load``, ``total_rows``, ``n_loads`` and ``request_ms`` (the time one
        client spends per load, :func:`time_per_request`).

    Examples
    --------
    >>> loads = stream_load_batches()
    >>> round(float(loads["bytes_per_row"].iloc[0])), round(float(loads["total_rows"].median()) / 1e6, 2)
    (138, 247.25)
    """
    frame = load("doris_group_commit_stream_load") if frame is None else frame
    out = frame.assign(variant=frame["group_commit_mode"] + ", " + frame["concurrency"].astype(str) + " clients")
    out["bytes_per_row"] = (out["mb_per_s"] * MB / out["rows_per_s"]).median()
    out["rows_per_load"] = out["request_bytes"] / out["bytes_per_row"]
    out["total_rows"] = out["total_s"] * out["rows_per_s"]
    out["n_loads"] = out["total_rows"] / out["rows_per_load"]
    return time_per_request(out, rows="rows_per_load")


def table_sizes() -> pd.DataFrame:
    """The published tables and their row counts.

    Returns
    -------
    pandas.DataFrame
        ``table`` (one of :func:`names`) and ``rows``.

    Examples
    --------
    >>> sizes = table_sizes()
    >>> sizes.columns.tolist(), sizes["table"].tolist() == names()
    (['table', 'rows'], True)
    """
    return pd.DataFrame({"table": names(), "rows": [len(load(name)) for name in names()]})


# -- the sentences the notebooks state about each table -------------------------------------
# Each ``describe_*`` takes the tables a notebook section computed and returns its Markdown
# text; the numbers come from the tables, formatted as the seeds print them.


def _ols(fits: pd.DataFrame) -> pd.DataFrame:
    # the fits with a CI, one row per variant
    return fits[fits["method"] == "ols"].set_index("variant")


def describe_overhead_fits(fits: pd.DataFrame, points: pd.DataFrame, *, alpha: float = 0.05) -> report.Markdown:
    """One paragraph per OLS overhead fit: overhead and write time with CIs, R², the seed's median.

    Parameters
    ----------
    fits : pandas.DataFrame
        :func:`ingestlab.models.fit_overhead` of :func:`overhead_points`, with ``variant``.
    points : pandas.DataFrame
        :func:`overhead_points` (its ``single_row`` rows give the seed's median INSERT).
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
        :func:`ingestlab.models.scale_table` of ``diff`` with the seed's ``extra_printed``.
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
    """The numeric sweeps' slopes beside the seed's per-unit costs, and the table model's spread.

    Parameters
    ----------
    slopes : pandas.DataFrame
        :func:`ingestlab.models.fit_sweep` of the numeric factors of ``sweeps`` by deployment
        and factor, with the seed's ``delta_printed``, ``per_unit`` and ``per_unit_printed``
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
