"""One CSV-scan query by one reader, run as its own process: ``python -m ingestlab.workloads._scan_child SPEC``.

The process imports only its reader's library, reads the spec (JSON: ``reader``, ``query``,
``table_dir``, ``files``; for an engine's reader also ``module``, the path of its folder's
``reader.py``, loaded by file so that the adapter is not imported, with ``sql`` and ``columns``),
times the query on the lab's clock (:func:`ingestlab.timing.timed` around the
query and the fetch of its answer) and prints one JSON line: ``seconds``, ``cpu_s`` (this
process's user + system CPU over the query, all threads), ``baseline_rss_mb`` (its RSS just
before the query: interpreter and library), ``answer`` and, for a reader whose query runs in a server, the
server backend's ``server_peak_rss_mb`` (``VmHWM``) and ``server_cpu_s``, and its own ``peak_rss_mb`` (``VmHWM`` after the query).
"""
from __future__ import annotations

import datetime as dt
import importlib.util
import json
import math
import os
import re
import resource
import sys
from types import ModuleType

from ingestlab import timing

NAMES = ["id", "user_id", "name", "tags", "note", "score"]
_DT = re.compile(r"dt=([^/]+)/")


def _text(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()[:10]
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        value = value.item()
    return str(value)


def _row(values) -> list:
    return [_text(v) for v in values]


def _part(path: str) -> str:
    return _DT.search(path).group(1)


# -- readers: each returns a callable that runs the query and returns its answer -------------------
def _polars(spec):
    import polars as pl

    schema = {n: pl.Int64 if n in ("id", "user_id", "score") else pl.String for n in NAMES}
    lf = (pl.scan_csv(spec["files"], has_header=False, separator="\x01", quote_char=None, schema=schema,
                      null_values="\\N", empty_string_is_null=False, include_file_paths="_path")
          .with_columns(pl.col("_path").str.extract(r"dt=([^/]+)/", 1).alias("dt")).drop("_path"))
    plan = {"full_scan_order_by_limit_1": lambda: lf.sort("id").head(1),
            "limit_1": lambda: lf.head(1),
            "count_star": lambda: lf.select(pl.len())}[spec["query"]]
    return pl.__version__, lambda: plan().collect().rows()


def _arrow_options(include=None):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    types = {n: pa.int64() if n in ("id", "user_id", "score") else pa.string() for n in NAMES}
    return (pacsv.ReadOptions(column_names=NAMES), pacsv.ParseOptions(delimiter="\x01", quote_char=False, escape_char=False),
            pacsv.ConvertOptions(column_types=types, null_values=["\\N"], strings_can_be_null=True,
                                 include_columns=include))


def _with_dt(table, path):
    import pyarrow as pa

    return table.append_column("dt", pa.repeat(pa.scalar(_part(path)), table.num_rows))


def _pyarrow_stream(spec):
    import pyarrow
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    files, query = spec["files"], spec["query"]

    def run():
        if query == "count_star":
            return [[sum(b.num_rows for f in files for b in pacsv.open_csv(f, *_arrow_options(["id"])))]]
        if query == "limit_1":
            batch = pacsv.open_csv(files[0], *_arrow_options()).read_next_batch()
            return [_row(batch.slice(0, 1).to_pylist()[0].values()) + [_part(files[0])]]
        best, row = None, None
        for f in files:
            for batch in pacsv.open_csv(f, *_arrow_options()):
                low = pc.min(batch["id"]).as_py()
                if low is not None and (best is None or low < best):
                    best = low
                    idx = pc.index(batch["id"], low).as_py()
                    row = list(batch.slice(idx, 1).to_pylist()[0].values()) + [_part(f)]
        return [row]

    return pyarrow.__version__, run


def _pyarrow_table(spec):
    import pyarrow
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    files, query = spec["files"], spec["query"]

    def run():
        if query == "count_star":
            return [[sum(pacsv.read_csv(f, *_arrow_options(["id"])).num_rows for f in files)]]
        table = pyarrow.concat_tables([_with_dt(pacsv.read_csv(f, *_arrow_options()), f) for f in files])
        if query == "limit_1":
            return [list(table.slice(0, 1).to_pylist()[0].values())]
        idx = pc.select_k_unstable(table, k=1, sort_keys=[("id", "ascending")])[0].as_py()
        # slice, not take: take concatenates a column's chunks, and past 2 GiB of text the 32-bit
        # offsets of a string column overflow (ArrowInvalid at 5.3 GB)
        return [list(table.slice(idx, 1).to_pylist()[0].values())]

    return pyarrow.__version__, run


def _pandas(spec, parser: str):
    import csv

    import pandas as pd

    files, query = spec["files"], spec["query"]
    if parser == "pyarrow":
        # the pyarrow engine cannot switch quoting off: the quote character is \x03, which Hive
        # reserves (map keys) and the table never holds; it reads "" as NULL only with "" in na_values
        opts = {"engine": "pyarrow", "quotechar": "\x03", "na_values": ["\\N", ""]}
    else:
        opts = {"engine": "c", "quoting": csv.QUOTE_NONE, "na_values": ["\\N"]}
    opts.update(sep="\x01", header=None, names=NAMES, keep_default_na=False)

    def read(f, **kw):
        return pd.read_csv(f, **opts, **kw).assign(dt=_part(f))

    def run():
        if query == "count_star":
            # by position and without names: the pyarrow engine rejects names that differ from usecols
            count_opts = {k: v for k, v in opts.items() if k != "names"}
            return [[sum(len(pd.read_csv(f, **count_opts, usecols=[0])) for f in files)]]
        if query == "limit_1" and parser == "c":
            return [read(files[0], nrows=1).iloc[0].tolist()]
        frame = pd.concat([read(f) for f in files], ignore_index=True)
        if query == "limit_1":  # the pyarrow engine has no nrows: it reads the table
            return [frame.iloc[0].tolist()]
        return [frame.nsmallest(1, "id").iloc[0].tolist()]

    return pd.__version__, run


def _engine_reader(path: str) -> ModuleType:
    """An engine folder's ``reader.py``, loaded by its path: importing its package would import the adapter."""
    spec = importlib.util.spec_from_file_location("_ingestlab_engine_reader", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _backend(pid: int) -> tuple[float, float]:
    """(peak RSS MB as VmHWM, CPU seconds) of the server backend that runs the query, read from /proc."""
    status = open(f"/proc/{pid}/status").read()
    hwm = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return hwm, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb() -> float:
    return int(re.search(r"VmRSS:\s+(\d+) kB", open("/proc/self/status").read()).group(1)) / 1024


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(spec: dict) -> dict:
    """Run ``spec``'s query once and return the measurement (see the module docstring)."""
    state: dict = {}
    reader = spec["reader"]
    try:
        if "module" in spec:
            version, run = _engine_reader(spec["module"]).scan(spec, state)
        elif reader.startswith("pandas_"):
            version, run = _pandas(spec, reader.removeprefix("pandas_"))
        else:
            version, run = {"polars": _polars, "pyarrow_stream": _pyarrow_stream,
                            "pyarrow_table": _pyarrow_table}[reader](spec)
        if spec.get("fail") == "exit":  # test hook: a child that dies mid-query
            os._exit(3)
        out = {"version": version, "baseline_rss_mb": _rss_mb()}
        backend = state.get("backend")
        server_cpu0 = _backend(backend)[1] if backend else None
        cpu0 = _cpu()
        query = timing.timed(run)
        rows = query.result
        out["seconds"] = query.elapsed_ns / 1e9
        out["cpu_s"] = _cpu() - cpu0
        if backend:
            out["server_peak_rss_mb"], cpu1 = _backend(backend)
            out["server_cpu_s"] = cpu1 - server_cpu0
        # VmHWM of this process's own memory map, which exec started afresh; wait4's ru_maxrss
        # would also count the parent's RSS at fork time
        out["peak_rss_mb"] = int(re.search(r"VmHWM:\s+(\d+) kB", open("/proc/self/status").read()).group(1)) / 1024
        first = list(rows[0]) if rows else []
        out["answer"] = int(first[0]) if spec["query"] == "count_star" else _row(first)
        return out
    finally:
        if "close" in state:
            state["close"]()


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
