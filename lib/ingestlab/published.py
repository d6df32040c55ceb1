"""The numeric tables of the five studies, as tidy frames read from ``data/published``."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ingestlab import _paths
from ingestlab.errors import ConfigError

#: Columns every published table has; read as text, empty when the study states nothing.
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
        ``median_ms``, ``rows_per_s``) and hold the numbers as the study prints them.

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


def lab_engines(name: str) -> dict[str, str]:
    """The study's engines of published table ``name``, each with the lab engine its numbers are set beside.

    The pairing is the lab's, not the seed's: the table's ``lab_engine`` column (see SOURCES.md).
    """
    frame = load(name)
    if "lab_engine" not in frame.columns:
        raise ConfigError(name="name", value=name, accepted="a published table with a lab_engine column")
    return dict(frame[["engine", "lab_engine"]].drop_duplicates().itertuples(index=False, name=None))


# -- reshaping the published tables for the models and figures ----------------------------

#: The ``INSERT … VALUES`` scenarios of ``starrocks_insert_scenarios`` the overhead model is
#: fitted on: the same 1000 rows in 1000, 10 and 1 statements.
OVERHEAD_SCENARIOS = ("single_row", "batch_100", "batch_1000")

#: Bytes in the ``MB`` of the studies' ``MB/s`` columns (binary, as ``request_bytes``; SOURCES.md).
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
    """The study's profile medians per deployment, FE overhead recomputed as TotalTime − ExecutionTime.

    The study reads the FE's share (parse, plan, transaction, commit) as the difference of
    the two profile counters; this recomputes it from the two printed medians (a
    difference of medians, as the study's) and keeps the printed value beside it.

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
        and ``ms``; for :func:`ingestlab.plots.plot_stacked`.

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
