"""Notebook 06's workload: three queries over a Hive text table, one child process per query."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import psutil

from ingestlab import _paths, hivetext, models, progress, timing
from ingestlab.errors import ConfigError, WrongAnswerError
from ingestlab.workloads._params import ParamsBase, one_of, positive_int, subset

#: Engine name → what reads the files and how (the label in every table and figure).
ENGINES: dict[str, str] = {
    "duckdb": "DuckDB read_csv, hive partitioning",
    "chdb": "chDB (ClickHouse) file() CSV, quotes off",
    "polars": "polars scan_csv (lazy)",
    "pyarrow_stream": "pyarrow open_csv (streaming, batch by batch)",
    "pyarrow_table": "pyarrow read_csv (whole table)",
    "pandas_pyarrow": "pandas read_csv, pyarrow engine",
    "pandas_c": "pandas read_csv, C engine",
    "postgres": "PostgreSQL file_fdw (a foreign table per file, UNION ALL)",
}
#: The seed's three queries, by the names of ``data/published/starrocks_csv_scan_times.csv``.
QUERIES: dict[str, str] = {
    "full_scan_order_by_limit_1": "SELECT * FROM t ORDER BY 1 LIMIT 1",
    "limit_1": "SELECT * FROM t LIMIT 1",
    "count_star": "SELECT COUNT(*) FROM t",
}
CACHES = ("warm", "cold", "auto")
#: Per SCALE: base rows before doubling, target sizes (MB), default engines, memory cap and time limit.
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"base_rows": 2000, "sizes": "0.75,1.5,3", "engines": "duckdb,polars", "rounds": 2,
              "memory_limit_mb": 4000, "timeout_s": 120},
    "paper": {"base_rows": 14000, "sizes": "330,660,1300,5200", "engines": ",".join(ENGINES), "rounds": 3,
              "memory_limit_mb": 12000, "timeout_s": 1800},
}
#: The seed's table size (Trino's line: ``[11M rows, 5.09GB]``).
SEED_GB = 5.09
FLOOR = "read_floor"
_DROP_CACHES = "/proc/sys/vm/drop_caches"


@dataclasses.dataclass(frozen=True)
class Params(ParamsBase):
    """Validated parameters of notebook 06 (see :func:`validate`)."""

    scale: str
    engines: tuple[str, ...]
    queries: tuple[str, ...]
    sizes_mb: tuple[float, ...]
    doublings: tuple[int, ...]
    base_rows: int
    rounds: int
    cache: str
    seed: int
    data_dir: str
    memory_limit_mb: int
    timeout_s: int


def can_drop_caches() -> bool:
    """Whether this process may drop the page cache (root, writable ``/proc/sys/vm/drop_caches``)."""
    return os.access(_DROP_CACHES, os.W_OK)


def validate(scale: str = "smoke", engines: Sequence[str] | str | None = None, sizes: Sequence[float] | str | None = None,
             queries: Sequence[str] | str | None = None, rounds: int | None = None, cache: str = "warm", seed: int = 0,
             data_dir: str = "", memory_limit_mb: int | None = None, timeout_s: int | None = None,
             base_rows: int | None = None) -> Params:
    """Check notebook 06's parameters before any file is written; return them resolved.

    Every bad value raises :class:`~ingestlab.errors.ConfigError` naming the parameter, the
    value and what is accepted; ``None`` means "the SCALE's". Sizes are megabytes (10⁶
    bytes); each becomes the table after the number of doublings of the base rows that
    comes nearest to it. The space the largest size still needs is compared with the free
    space of ``DATA_DIR`` (default ``<repo>/.lab/csv_scan``) before anything is generated.

    Examples
    --------
    >>> validate().doublings
    (0, 1, 2)
    >>> validate(sizes="1,-2")
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: SIZES=-2.0 is not valid: expected each size a number of MB > 0
    """
    one_of("SCALE", scale, SCALES)
    d = SCALES[scale]
    engines = subset("ENGINES", d["engines"] if engines is None else engines, list(ENGINES))
    queries = subset("QUERIES", list(QUERIES) if queries is None else queries, list(QUERIES))
    rounds = positive_int("ROUNDS", d["rounds"] if rounds is None else rounds)
    one_of("CACHE", cache, CACHES)
    if cache == "cold" and not can_drop_caches():
        raise ConfigError("CACHE", cache, f"'warm' or 'auto': {_DROP_CACHES} is not writable here")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError("SEED", seed, "an integer")
    base_rows = positive_int("BASE_ROWS", d["base_rows"] if base_rows is None else base_rows)
    memory_limit_mb = positive_int("MEMORY_LIMIT_MB", d["memory_limit_mb"] if memory_limit_mb is None else memory_limit_mb)
    timeout_s = positive_int("TIMEOUT_S", d["timeout_s"] if timeout_s is None else timeout_s)
    raw = d["sizes"] if sizes is None else sizes
    items = [s.strip() for s in raw.split(",") if s.strip()] if isinstance(raw, str) else list(raw if isinstance(raw, (list, tuple)) else [raw])
    if not items:
        raise ConfigError("SIZES", sizes, "a non-empty list of sizes in MB")
    sizes_mb = []
    for item in items:
        try:
            value = float(item)
        except (TypeError, ValueError):
            raise ConfigError("SIZES", item, "each size a number of MB > 0") from None
        if not math.isfinite(value) or value <= 0:
            raise ConfigError("SIZES", value, "each size a number of MB > 0")
        sizes_mb.append(value)
    data_dir = str(Path(data_dir or _paths.lab_dir() / "csv_scan").resolve())
    base = hivetext.base_bytes(base_rows, seed)
    doublings = tuple(sorted({hivetext.doublings_for(s * 1e6, base) for s in sizes_mb}))
    need = hivetext.bytes_to_write(data_dir, base_rows, seed, max(doublings))
    free = hivetext.free_bytes(data_dir)
    if need > 0 and need * 1.05 + 1e9 > free:  # 5 % and 1 GB left for results and the other processes
        raise ConfigError("SIZES", ",".join(f"{s:g}" for s in sizes_mb),
                          f"sizes that fit the free disk: the largest needs {need / 1e9:.2f} GB more at "
                          f"{data_dir} (+5 % and 1 GB margin), {free / 1e9:.2f} GB available")
    return Params(scale, engines, queries, tuple(sizes_mb), doublings, base_rows, rounds, cache, seed, data_dir,
                  memory_limit_mb, timeout_s)


def resolved_cache(cache: str) -> str:
    """``warm`` or ``cold``: ``auto`` is cold where the page cache may be dropped."""
    return ("cold" if can_drop_caches() else "warm") if cache == "auto" else cache


def drop_caches() -> None:
    """Write dirty pages and drop the page cache (root only)."""
    os.sync()
    with open(_DROP_CACHES, "w") as f:
        f.write("3\n")


def read_floor(table: hivetext.Table, buffer_mb: int = 8) -> float:
    """Seconds to read every file of ``table`` to nowhere, in ``buffer_mb`` blocks (one thread)."""
    buf = bytearray(buffer_mb << 20)
    with timing.Stopwatch() as clock:
        for path in table.files:
            with open(path, "rb", buffering=0) as f:
                while f.readinto(buf):
                    pass
    return clock.seconds


# -- one query in one child process ---------------------------------------------------------------
def run_child(spec: dict, *, memory_limit_mb: int, timeout_s: float, poll_s: float = 0.02) -> dict:
    """Run one query in a fresh process; return its measurement, whatever became of it.

    The child (``python -m ingestlab.workloads._scan_child``) times the query itself and
    reports its peak RSS (``VmHWM``); its total CPU comes from ``wait4``. The parent samples its RSS every ``poll_s`` and kills its process group when
    it passes ``memory_limit_mb`` (``status='oom'``) or runs past ``timeout_s``
    (``'timeout'``). A child that exits with an error is ``'error'``, one killed by a
    signal ``'crashed'``. The child is reaped before this returns.

    Returns
    -------
    dict
        ``status``, ``exit_code``, ``peak_rss_mb``, ``child_cpu_s``, ``error`` and what the
        child printed (``seconds``, ``cpu_s``, ``baseline_rss_mb``, ``answer``...).
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "ingestlab.workloads._scan_child", json.dumps(spec)],
                                stdout=out, stderr=err, text=True, start_new_session=True)
        status, sampled, t0, pid = None, 0.0, time.monotonic(), 0
        try:
            while True:
                pid, wstatus, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                try:
                    sampled = max(sampled, psutil.Process(proc.pid).memory_info().rss / 2**20)
                except psutil.NoSuchProcess:
                    pass
                if status is None and sampled > memory_limit_mb:
                    status = "oom"
                elif status is None and time.monotonic() - t0 > timeout_s:
                    status = "timeout"
                if status is not None:
                    _kill_group(proc.pid)
                time.sleep(poll_s)
        finally:
            if not pid:  # interrupted: the child must not outlive this call
                _kill_group(proc.pid)
                pid, wstatus, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(wstatus)
        out.seek(0)
        err.seek(0)
        lines = out.read().strip().splitlines()
        error = err.read()[-2000:]
    # a killed child cannot report its VmHWM: the largest RSS sampled stands in for it
    result = {"exit_code": proc.returncode, "peak_rss_mb": sampled,
              "child_cpu_s": usage.ru_utime + usage.ru_stime, "error": ""}
    if status is None and proc.returncode == 0 and lines:
        result.update(json.loads(lines[-1]), status="ok")
    else:
        result.update(status=status or ("crashed" if proc.returncode < 0 else "error"), error=error.strip())
    return result


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def check_answer(query: str, answer: Any, table: hivetext.Table) -> bool:
    """Whether ``answer`` is right: the count, the first row of ``ORDER BY 1``, or any row of the table.

    Examples
    --------
    >>> t = hivetext.Table(Path("."), (), 0, 4, 0, "", ("1", "2", "a", "b", None, "3", "2024-01-01"))
    >>> check_answer("count_star", 4, t), check_answer("count_star", 5, t)
    (True, False)
    >>> check_answer("full_scan_order_by_limit_1", ["1", "2", "a", "b", None, "3", "2024-01-01"], t)
    True
    """
    if query == "count_star":
        return answer == table.rows
    if query == "full_scan_order_by_limit_1":
        return list(answer or []) == list(table.minimum)
    return (isinstance(answer, list) and len(answer) == len(table.minimum) and str(answer[0]).lstrip("-").isdigit()
            and answer[-1] in hivetext.PARTITIONS)


# -- the measurement -------------------------------------------------------------------------------
def generate(params: Params) -> list[hivetext.Table]:
    """Every size's table, written once under ``DATA_DIR`` (or reused, sizes checked)."""
    return [hivetext.table(params.data_dir, params.base_rows, params.seed, k) for k in params.doublings]


def measure(params: Params, run, tables: list[hivetext.Table] | None = None) -> pd.DataFrame:
    """Every engine × query × size × round, each in its own process; return ``scans`` (tidy).

    Per size: ``ROUNDS`` reads of the files to nowhere (the floor), then for each engine
    and query ``ROUNDS`` consecutive runs, as the seed ran them (the last is reported,
    all are kept). Cold: the page cache is dropped before every run. Rows go to
    ``results.parquet`` as they are taken; each size's floor and each engine × query × size
    (its rounds) is a configuration of :meth:`~ingestlab.results.Run.once`, which a resumed
    run does not measure again. A wrong answer is recorded, then raised as
    :class:`~ingestlab.errors.WrongAnswerError`; an engine that runs out of memory, times
    out or crashes is recorded and the run goes on. Each row carries ``load_1m``, the
    machine's 1-minute load average when that run ended.
    """
    cache = resolved_cache(params.cache)
    tables = tables if tables is not None else generate(params)
    run.note(f"cache={cache}; data {params.data_dir}; checksums "
             + ", ".join(f"{t.gb:.3g} GB {t.checksum[:12]}" for t in tables))
    frames = []
    total = len(tables) * params.rounds * (1 + len(params.engines) * len(params.queries))
    with progress.bar(total=total, desc="csv scan", unit="run") as bar:
        for table in tables:
            size = {"bytes": table.bytes, "gb": table.gb, "rows": table.rows, "doublings": table.doublings,
                    "checksum": table.checksum, "cache": cache}
            def floor_once(table=table, size=size):
                for rnd in range(1, params.rounds + 1):
                    if cache == "cold":
                        drop_caches()
                    seconds = read_floor(table)
                    run.append(_row(size, FLOOR, "read_files", rnd, params.rounds,
                                    {"status": "ok", "seconds": seconds, "answer": None,
                                     "version": "python readinto 8 MiB"}))
                    bar.update()
            where = {"checksum": table.checksum, "cache": cache}
            frames.append(run.once({**where, "engine": FLOOR}, floor_once)["results"])
            for engine in params.engines:
                for query in params.queries:
                    def rounds_once(table=table, size=size, engine=engine, query=query):
                        for rnd in range(1, params.rounds + 1):
                            _scan_round(params, table, size, engine, query, rnd, run)
                            bar.update()
                    frames.append(run.once({**where, "engine": engine, "query": query}, rounds_once)["results"])
    return pd.concat(frames, ignore_index=True)


def _scan_round(params: Params, table: hivetext.Table, size: dict, engine: str, query: str, rnd: int, run) -> None:
    """One run of ``query`` by ``engine`` in its own process, appended to ``run``; a wrong answer raises after."""
    if size["cache"] == "cold":
        drop_caches()
    spec = {"engine": engine, "query": query, "table_dir": str(table.path), "files": [str(f) for f in table.files]}
    res = run_child(spec, memory_limit_mb=params.memory_limit_mb, timeout_s=params.timeout_s)
    if res["status"] != "ok" and engine == "postgres":
        from ingestlab.servers import reap

        reap()  # the server a killed child left behind
    if res["status"] == "ok" and not check_answer(query, res.get("answer"), table):
        res["status"] = "wrong_answer"
    run.append(_row(size, engine, query, rnd, params.rounds, res))
    if res["status"] == "wrong_answer":
        expected = table.rows if query == "count_star" else list(table.minimum)
        raise WrongAnswerError(f"{engine} {query} at {table.gb:.3g} GB round {rnd}: answered "
                               f"{res.get('answer')!r}, the generator's is {expected!r}")
    if res["status"] != "ok":
        run.note(f"{engine} {query} {table.gb:.3g} GB round {rnd}: {res['status']} "
                 f"(peak {res['peak_rss_mb']:.0f} MB) {res['error'][-300:]}")


def _row(size: dict, engine: str, query: str, rnd: int, rounds: int, res: dict) -> pd.DataFrame:
    server = res.get("server_peak_rss_mb")
    seconds = res.get("seconds", np.nan)
    return pd.DataFrame([{
        "engine": engine, "query": query, **size, "round": rnd, "reported": rnd == rounds,
        "status": res["status"], "seconds": seconds,
        # PostgreSQL: the backend that ran the query (VmHWM); everything else: the child process
        "peak_rss_mb": server if server is not None else res.get("peak_rss_mb", np.nan),
        "peak_source": "backend VmHWM" if server is not None else ("child VmHWM" if engine != FLOOR else ""),
        "client_peak_rss_mb": res.get("peak_rss_mb", np.nan), "baseline_rss_mb": res.get("baseline_rss_mb", np.nan),
        "cpu_s": res.get("server_cpu_s", res.get("cpu_s", np.nan)), "child_cpu_s": res.get("child_cpu_s", np.nan),
        "gb_per_s": size["gb"] / seconds if seconds and seconds > 0 else np.nan,
        "answer": json.dumps(res.get("answer"), ensure_ascii=False), "version": res.get("version", ""),
        "exit_code": res.get("exit_code", 0), "error": res.get("error", ""),
        # the machine is shared: the 1-minute load average when the run ended says how busy it was
        "load_1m": os.getloadavg()[0],
    }])


# -- analysis ------------------------------------------------------------------------------------------
def reported(scans: pd.DataFrame) -> pd.DataFrame:
    """The reported runs (the last round) that completed."""
    return scans[scans["reported"] & (scans["status"] == "ok")]


def fit(scans: pd.DataFrame) -> pd.DataFrame:
    """``seconds = fixed + GB × per_GB`` per engine × query over the reported runs (OLS + Theil–Sen).

    Groups with fewer than three sizes are left out. Columns follow ``fits.csv``: ``engine``,
    ``variant`` (the query), ``method``, ``fixed_s`` and ``per_gb_s`` with 95 % CIs, ``r2``,
    ``n_points``, and ``gb_per_s`` (1 / ``per_gb_s``: the marginal rate; NaN where the time
    does not grow with the size, i.e. ``per_gb_s``'s CI reaches 0, as for ``LIMIT 1``).
    """
    data = reported(scans)
    out = []
    for (engine, query), g in data.groupby(["engine", "query"], sort=False):
        if g["gb"].nunique() < 3:
            continue
        f = models.fit_linear(g, x="gb", y="seconds").assign(engine=engine, variant=query)
        out.append(f)
    if not out:
        return pd.DataFrame()
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
    seed's question "does it read fewer columns?". See :func:`ingestlab.models.slope_ratio`.
    """
    ols = fits[fits["method"] == "ols"] if not fits.empty else fits
    rows = []
    for engine, g in ols.groupby("engine", sort=False):
        q = g.set_index("variant")
        if {"count_star", "full_scan_order_by_limit_1"} <= set(q.index):
            c, f = q.loc["count_star"], q.loc["full_scan_order_by_limit_1"]
            r = models.slope_ratio(c["per_gb_s"], c["per_gb_se_s"], c["df_resid"], f["per_gb_s"], f["per_gb_se_s"],
                                   f["df_resid"])
            rows.append({"engine": engine, "count_per_gb_s": c["per_gb_s"], "full_per_gb_s": f["per_gb_s"], **r})
    return pd.DataFrame(rows)


def with_floor(scans: pd.DataFrame) -> pd.DataFrame:
    """Reported engine runs with the same size's and round's file read rate (``floor_gb_per_s``) and the fraction."""
    data = reported(scans)
    floor = data[data["engine"] == FLOOR][["gb", "round", "cache", "gb_per_s"]].rename(columns={"gb_per_s": "floor_gb_per_s"})
    out = data[data["engine"] != FLOOR].merge(floor, on=["gb", "round", "cache"], how="left")
    return out.assign(floor_fraction=out["gb_per_s"] / out["floor_gb_per_s"])


def largest(scans: pd.DataFrame) -> pd.DataFrame:
    """Every engine × query at the largest size, last round, whatever its status."""
    data = scans[(scans["gb"] == scans["gb"].max()) & scans["reported"]]
    return data[data["engine"] != FLOOR]


def live_vs_published(scans: pd.DataFrame) -> pd.DataFrame:
    """The seed's times (as GB/s of its 5.09 GB table) and peak memory beside the live ones at the largest size.

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
        "query": times["scenario"], "size_gb": SEED_GB, "seconds": times["elapsed_s"],
        "gb_per_s": SEED_GB / times["elapsed_s"], "peak_mb": times["engine"].map(memory),
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
    """One line per engine × query: fixed cost, cost per GB (CI) and the rate it implies."""
    ols = fits[fits["method"] == "ols"]
    return "\n".join(f"- **{r.engine}** `{r.variant}`: {r.fixed_s:.3g} s fixed + {r.per_gb_s:.3g} s/GB "
                     f"(95 % CI {r.per_gb_ci_low_s:.3g}–{r.per_gb_ci_high_s:.3g}) → "
                     + (f"{r.gb_per_s:.3g} GB/s" if pd.notna(r.gb_per_s) else "no rate: the time does not grow "
                        "with the size") + f", R² {r.r2:.3f}" for r in ols.itertuples())


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
                     f"{x.loc[x['peak_rss_mb'].idxmax(), 'query']}), of which {x['baseline_rss_mb'].max():.0f} MB "
                     f"before the query at {x['gb'].iloc[0]:.3g} GB" for e, x in g)


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
        out[f"peak_rss_mb[{r.engine},{r.query}]"] = float(r.peak_rss_mb)
    out["largest_gb"] = float(scans["gb"].max())
    return out


# -- tables and figures for the notebook ---------------------------------------------------------------
def tables_frame(tables: list[hivetext.Table]) -> pd.DataFrame:
    """One row per generated size: doublings, rows, bytes, GB, files, checksum, folder."""
    return pd.DataFrame([{"doublings": t.doublings, "rows": t.rows, "bytes": t.bytes, "gb": t.gb, "files": len(t.files),
                          "checksum": t.checksum, "path": str(t.path)} for t in tables])


def figure_fits(scans: pd.DataFrame, fits: pd.DataFrame):
    """Seconds against size per engine, one panel per query, with each fit and its CI band."""
    import matplotlib.pyplot as plt

    from ingestlab import figures, labels

    data = reported(scans)
    data = data[data["engine"] != FLOOR]
    queries = list(dict.fromkeys(data["query"]))
    # stacked, each panel's legend (its fits with their CIs, a line per engine) under it: the gap
    # between panels grows with the engines (inches: axes 2.2, ticks and label 0.9, a legend line 0.2)
    axes_in, gap_in = 2.2, 0.9 + 0.2 * (data["engine"].nunique() + 1)
    fig, axes = plt.subplots(len(queries), 1, figsize=(figures.PAGE_WIDTH - 1, len(queries) * (axes_in + gap_in)),
                             squeeze=False)
    for ax, query in zip(axes[:, 0], queries):
        part = fits[fits["variant"] == query] if not fits.empty else pd.DataFrame(columns=["engine", "method"])
        figures.plot_size_fit(data[data["query"] == query], part, ax=ax)
        ax.set_title(labels.label(query))
    fig.subplots_adjust(hspace=gap_in / axes_in, top=1 - 0.3 / fig.get_figheight(), bottom=gap_in / fig.get_figheight())
    return fig


def floor_bars(floored: pd.DataFrame) -> pd.DataFrame:
    """The largest size's scanning queries (``limit_1`` left out), for the bar chart of fractions of the floor."""
    return floored[(floored["gb"] == floored["gb"].max()) & (floored["query"] != "limit_1")]
