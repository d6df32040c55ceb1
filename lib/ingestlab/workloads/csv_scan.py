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
from types import ModuleType
from typing import Any, Sequence

import numpy as np
import pandas as pd
import psutil

from ingestlab import _paths, hivetext, progress, safe_paths, timing
from ingestlab.engines import registry
from ingestlab.errors import ConfigError, WrongAnswerError
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import MAX_REPEATS, ParamsBase, items_of, one_of, positive_int, subset

#: The notebook this workload serves (declared in full at the end: :data:`NOTEBOOK`).
NOTEBOOK_STEM = "06_csv_scan"

#: The readers that are no engine: dataframe libraries, run in the child process, in the paper run's order.
#: Each engine's readers are its folder's ``reader.py`` (:func:`all_readers`).
DATAFRAME_READERS: dict[str, str] = {
    "polars": "polars scan_csv (lazy)",
    "pyarrow_stream": "pyarrow open_csv (streaming, batch by batch)",
    "pyarrow_table": "pyarrow read_csv (whole table)",
    "pandas_pyarrow": "pandas read_csv, pyarrow engine",
    "pandas_c": "pandas read_csv, C engine",
}
#: The dataframe readers' place among the engines' (their ``reader.py``'s ``ORDER``): engines that run in
#: the child process come before them, engines whose query runs in a server after.
DATAFRAME_ORDER = 10
#: The study's three queries, by the names of ``data/published/starrocks_csv_scan_times.csv``.
QUERIES: dict[str, str] = {
    "full_scan_order_by_limit_1": "SELECT * FROM t ORDER BY 1 LIMIT 1",
    "limit_1": "SELECT * FROM t LIMIT 1",
    "count_star": "SELECT COUNT(*) FROM t",
}
CACHES = ("warm", "cold", "auto")
#: Per SCALE: base rows before doubling, target sizes (MB), default readers (``first``: the first engine
#: reader and the first dataframe reader; ``all``: every reader, in :func:`all_readers`' order), memory cap and time limit.
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"base_rows": 2000, "sizes": "0.75,1.5,3", "readers": "first", "rounds": 2,
              "memory_limit_mb": 4000, "timeout_s": 120},
    "paper": {"base_rows": 14000, "sizes": "330,660,1300,5200", "readers": "all", "rounds": 3,
              "memory_limit_mb": 12000, "timeout_s": 1800},
}
#: The study's table size (Trino's line: ``[11M rows, 5.09GB]``).
STUDY_GB = 5.09
FLOOR = "read_floor"
_DROP_CACHES = "/proc/sys/vm/drop_caches"


@dataclasses.dataclass(frozen=True)
class Params(ParamsBase):
    """Validated parameters of notebook 06 (see :func:`validate`)."""

    scale: str
    readers: tuple[str, ...]
    queries: tuple[str, ...]
    sizes_mb: tuple[float, ...]
    doublings: tuple[int, ...]
    base_rows: int
    repeats: int
    cache: str
    seed: int
    data_dir: str
    memory_limit_mb: int
    timeout_s: int


def _engine_readers() -> dict[str, ModuleType]:
    """Each reader an engine provides (its folder's ``reader.py``), by reader name, in their ``ORDER``."""
    modules = sorted(registry.modules("reader"), key=lambda m: m.ORDER)
    return {name: module for module in modules for name in module.READERS}


def all_readers() -> dict[str, str]:
    """Every reader by name, with what reads the files and how (its label), in the paper run's order.

    The name is the ``engine`` column of the samples; the label is shown in every table and figure.

    Examples
    --------
    >>> {"polars", "pandas_c"} <= set(all_readers())  # the dataframe readers; the engines' come from their folders
    True
    """
    engines = _engine_readers()
    ahead = {n: m.READERS[n] for n, m in engines.items() if m.ORDER < DATAFRAME_ORDER}
    behind = {n: m.READERS[n] for n, m in engines.items() if m.ORDER >= DATAFRAME_ORDER}
    return {**ahead, **DATAFRAME_READERS, **behind}


def _default_readers(scale: str) -> list[str]:
    """A SCALE's readers: all of them, or the first engine reader and the first dataframe reader."""
    if SCALES[scale]["readers"] == "all":
        return list(all_readers())
    return [next(iter(_engine_readers())), next(iter(DATAFRAME_READERS))]


def scan_spec(table: hivetext.Table, reader: str, query: str) -> dict:
    """What the child process needs to run ``query`` by ``reader`` over ``table`` (see :mod:`._scan_child`).

    An engine's reader is handed the path of its ``reader.py``, which the child loads by file, the
    query's SQL and the table's columns with their Hive types.
    """
    spec = {"reader": reader, "query": query, "table_dir": str(table.path), "files": [str(f) for f in table.files]}
    module = _engine_readers().get(reader)
    if module is not None:
        spec.update(module=module.__file__, sql=QUERIES[query], columns=dict(hivetext.COLUMNS))
    return spec


def can_drop_caches() -> bool:
    """Whether this process may drop the page cache (root, writable ``/proc/sys/vm/drop_caches``)."""
    return os.access(_DROP_CACHES, os.W_OK)


def validate(scale: str = "smoke", readers: Sequence[str] | str | None = None, sizes: Sequence[float] | str | None = None,
             queries: Sequence[str] | str | None = None, repeats: int | None = None, cache: str = "warm", seed: int = 0,
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
    readers = subset("READERS", _default_readers(scale) if readers is None else readers, list(all_readers()))
    queries = subset("QUERIES", list(QUERIES) if queries is None else queries, list(QUERIES))
    repeats = positive_int("REPEATS", d["rounds"] if repeats is None else repeats, most=MAX_REPEATS)
    one_of("CACHE", cache, CACHES)
    if cache == "cold" and not can_drop_caches():
        raise ConfigError("CACHE", cache, f"'warm' or 'auto': {_DROP_CACHES} is not writable here")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError("SEED", seed, "an integer")
    base_rows = positive_int("BASE_ROWS", d["base_rows"] if base_rows is None else base_rows)
    memory_limit_mb = positive_int("MEMORY_LIMIT_MB", d["memory_limit_mb"] if memory_limit_mb is None else memory_limit_mb)
    timeout_s = positive_int("TIMEOUT_S", d["timeout_s"] if timeout_s is None else timeout_s, most=24 * 3600)
    raw = d["sizes"] if sizes is None else sizes
    items = [s for s in items_of(raw) if s] if isinstance(raw, str) else items_of(raw)
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
    data_dir = _data_dir(data_dir)
    base = hivetext.base_bytes(base_rows, seed)
    doublings = tuple(sorted({hivetext.doublings_for(s * 1e6, base) for s in sizes_mb}))
    need = hivetext.bytes_to_write(data_dir, base_rows, seed, max(doublings))
    if need > 0:
        _check_writable(data_dir)
    free = hivetext.free_bytes(data_dir)
    if need > 0 and need * 1.05 + 1e9 > free:  # 5 % and 1 GB left for results and the other processes
        raise ConfigError("SIZES", ",".join(f"{s:g}" for s in sizes_mb),
                          f"sizes that fit the free disk: the largest needs {need / 1e9:.2f} GB more at "
                          f"{data_dir} (+5 % and 1 GB margin), {free / 1e9:.2f} GB available")
    return Params(scale, readers, queries, tuple(sizes_mb), doublings, base_rows, repeats, cache, seed, data_dir,
                  memory_limit_mb, timeout_s)


def _data_dir(value: str) -> str:
    """``DATA_DIR`` resolved (default ``<lab>/csv_scan``); a file, or a path through a file, refused naming it."""
    safe_paths.check_folder(value or _paths.lab_dir() / "csv_scan", "DATA_DIR")  # its tables are written and read
    path = Path(value or _paths.lab_dir() / "csv_scan").resolve()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError("DATA_DIR", str(path), "a folder for the generated tables" + (
            " (this is a file)" if existing == path else f" ({existing} is a file)"))
    return str(path)


def _check_writable(data_dir: str) -> None:
    """Refuse a ``DATA_DIR`` whose tables must be written where this user may not write."""
    existing = Path(data_dir)
    while not existing.exists():
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError("DATA_DIR", data_dir, f"a folder this user can write the tables in ({existing} is not "
                          "writable)")
    if os.statvfs(existing).f_blocks == 0:  # /proc, /sys: root may "write" there, but nothing is stored
        raise ConfigError("DATA_DIR", data_dir, f"a folder on a disk ({existing} is on a virtual filesystem, "
                          "like /proc's, that stores nothing)")


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
    """Every reader × query × size × round, each in its own process; return ``scans`` (tidy).

    Per size: ``ROUNDS`` reads of the files to nowhere (the floor), then for each reader
    and query ``ROUNDS`` consecutive runs, as the study ran them (the last is reported,
    all are kept). Cold: the page cache is dropped before every run. Rows go to
    ``results.parquet`` as they are taken; each size's floor and each reader × query × size
    (its rounds) is a configuration of :meth:`~ingestlab.results.Run.once`, which a resumed
    run does not measure again. A wrong answer is recorded, then raised as
    :class:`~ingestlab.errors.WrongAnswerError`; a reader that runs out of memory, times
    out or crashes is recorded and the run goes on. Each row carries ``load_1m``, the
    machine's 1-minute load average when that run ended.
    """
    cache = resolved_cache(params.cache)
    tables = tables if tables is not None else generate(params)
    run.note(f"cache={cache}; data {params.data_dir}; checksums "
             + ", ".join(f"{t.gb:.3g} GB {t.checksum[:12]}" for t in tables))
    frames = []
    total = len(tables) * params.repeats * (1 + len(params.readers) * len(params.queries))
    with progress.bar(total=total, desc="csv scan", unit="run") as bar:
        for table in tables:
            size = {"bytes": table.bytes, "gb": table.gb, "rows": table.rows, "doublings": table.doublings,
                    "checksum": table.checksum, "cache": cache}
            def floor_once(table=table, size=size):
                for rnd in range(1, params.repeats + 1):
                    if cache == "cold":
                        drop_caches()
                    seconds = read_floor(table)
                    run.append(_row(size, FLOOR, "read_files", rnd, params.repeats,
                                    {"status": "ok", "seconds": seconds, "answer": None,
                                     "version": "python readinto 8 MiB"}))
                    bar.update()
            where = {"checksum": table.checksum, "cache": cache}
            frames.append(run.once({**where, "engine": FLOOR}, floor_once)["results"])
            for reader in params.readers:
                for query in params.queries:
                    def rounds_once(table=table, size=size, reader=reader, query=query):
                        for rnd in range(1, params.repeats + 1):
                            _scan_round(params, table, size, reader, query, rnd, run)
                            bar.update()
                    frames.append(run.once({**where, "engine": reader, "query": query}, rounds_once)["results"])
    return pd.concat(frames, ignore_index=True)


def _scan_round(params: Params, table: hivetext.Table, size: dict, reader: str, query: str, rnd: int, run) -> None:
    """One run of ``query`` by ``reader`` in its own process, appended to ``run``; a wrong answer raises after."""
    if size["cache"] == "cold":
        drop_caches()
    res = run_child(scan_spec(table, reader, query), memory_limit_mb=params.memory_limit_mb, timeout_s=params.timeout_s)
    engine_reader = _engine_readers().get(reader)
    if res["status"] != "ok" and engine_reader is not None and engine_reader.SERVER:
        from ingestlab.servers import reap

        reap()  # the server a killed child left behind
    if res["status"] == "ok" and not check_answer(query, res.get("answer"), table):
        res["status"] = "wrong_answer"
    run.append(_row(size, reader, query, rnd, params.repeats, res))
    if res["status"] == "wrong_answer":
        expected = table.rows if query == "count_star" else list(table.minimum)
        raise WrongAnswerError(f"{reader} {query} at {table.gb:.3g} GB round {rnd}: answered "
                               f"{res.get('answer')!r}, the generator's is {expected!r}")
    if res["status"] != "ok":
        run.note(f"{reader} {query} {table.gb:.3g} GB round {rnd}: {res['status']} "
                 f"(peak {res['peak_rss_mb']:.0f} MB) {res['error'][-300:]}")


def _row(size: dict, reader: str, query: str, rnd: int, rounds: int, res: dict) -> pd.DataFrame:
    server = res.get("server_peak_rss_mb")
    seconds = res.get("seconds", np.nan)
    return pd.DataFrame([{
        "engine": reader, "query": query, **size, "round": rnd, "reported": rnd == rounds,
        "status": res["status"], "seconds": seconds,
        # PostgreSQL: the backend that ran the query (VmHWM); everything else: the child process
        "peak_rss_mb": server if server is not None else res.get("peak_rss_mb", np.nan),
        "peak_source": "backend VmHWM" if server is not None else ("child VmHWM" if reader != FLOOR else ""),
        "client_peak_rss_mb": res.get("peak_rss_mb", np.nan), "baseline_rss_mb": res.get("baseline_rss_mb", np.nan),
        "cpu_s": res.get("server_cpu_s", res.get("cpu_s", np.nan)), "child_cpu_s": res.get("child_cpu_s", np.nan),
        "gb_per_s": size["gb"] / seconds if seconds and seconds > 0 else np.nan,
        "answer": json.dumps(res.get("answer"), ensure_ascii=False), "version": res.get("version", ""),
        "exit_code": res.get("exit_code", 0), "error": res.get("error", ""),
        # the machine is shared: the 1-minute load average when the run ended says how busy it was
        "load_1m": os.getloadavg()[0],
    }])


# -- tables and figures for the notebook ---------------------------------------------------------------
def tables_frame(tables: list[hivetext.Table]) -> pd.DataFrame:
    """One row per generated size: doublings, rows, bytes, GB, files, checksum, folder."""
    return pd.DataFrame([{"doublings": t.doublings, "rows": t.rows, "bytes": t.bytes, "gb": t.gb, "files": len(t.files),
                          "checksum": t.checksum, "path": str(t.path)} for t in tables])


#: Notebook 06, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem=NOTEBOOK_STEM,
    question="What does scanning a CSV table cost per GB, and what is fixed per scan, reader by reader?",
    study="starrocks-csv-reader.zh.txt",
    measures="three queries over a Hive text table grown by doubling, per reader, with peak memory",
    headlines=("per_gb_s[", "count_over_full["),
    smoke_time="1 min", paper_time="about 1 h",
    renamed={"ENGINES": "READERS", "ROUNDS": "REPEATS"},
    validate=validate,
    measure=measure,
    plotters={"seconds_vs_size": "figure_fits",
              "peak_memory": "ingestlab.plots:plot_bars",
              "fraction_of_read_floor": "ingestlab.plots:plot_bars"},
)
