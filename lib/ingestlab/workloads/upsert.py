"""Notebook 03's workload: insert, overwrite and blind overwrite per batch, on data larger than the memory budget."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
import time
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm  # text bars: they stream through papermill and need no ipywidgets

from ingestlab import datagen, models
from ingestlab.engines import Engine
from ingestlab.errors import ConfigError, DataLossError, EngineUnavailableError, IngestlabError
from ingestlab.servers import cgroups
from ingestlab.timing import time_call
from ingestlab.workloads._params import one_of, positive_int, subset

NOTEBOOK = "03_upsert_beyond_ram"
#: Every operation the study knows; an engine runs those in its ``UPSERT_OPERATIONS``.
OPERATIONS = ("insert", "overwrite", "blind_overwrite")
NEW_KEYS = ("sequential", "random")
#: How memory is limited (see :attr:`ingestlab.engines.Engine.MEMORY_LIMITS`): ``"cgroup"``
#: caps the server's processes with a memory cgroup over buffered I/O, as the seed's machines
#: had an OS page cache; ``"engine"`` gives the engine a cache of the budget and ``O_DIRECT``.
#: Engines inside the lab's process (RocksDB) always use their own.
MEMORY_LIMITS = ("cgroup", "engine")
#: Least free memory under a memory cap, shared by the OS page cache and the server's own
#: memory beyond what it held when capped (a 10 000-row ``INSERT … VALUES`` of 12 MB took
#: PostgreSQL 18 ~100 MB while it ran): tiny budgets still leave a statement room to run.
MIN_FREE_BYTES = 16 * 2**20
#: Sizes per SCALE. ``paper``: the seed's 10 000-document batches and its 256 MB caches
#: (PostgreSQL's shared_buffers, ArangoDB's block cache), with a data set 10 × that budget.
SCALES: dict[str, dict[str, int]] = {
    "smoke": {"batch_rows": 200, "batches": 2, "memory_budget_mb": 8, "dataset_multiple": 4},
    "paper": {"batch_rows": 10_000, "batches": 5, "memory_budget_mb": 256, "dataset_multiple": 10},
}
#: Batch sizes as fractions of BATCH_ROWS: three sizes make the overhead + per-row fit possible.
SIZE_FRACTIONS = (0.25, 0.5, 1.0)
#: Warm-up batches per operation (of the smallest size), kept and flagged.
WARMUP_BATCHES = 1
TABLE = "ingestlab_upsert"
COLUMNS: tuple[tuple[str, str], ...] = (("id", "BIGINT"), ("doc", "TEXT"))
KEY = "id"
#: Published table of the seed's batch statistics, and how its engines pair with live ones.
PUBLISHED = "arangodb_upsert_batch_times"
PUBLISHED_PAIRS = {"rocksdb": "ArangoDB", "postgres": "PostgreSQL"}
PUBLISHED_OPERATIONS = {"insert_new_keys": "insert", "upsert_existing_keys": "overwrite"}
#: Columns of the seed's statistics table, in its order.
STATISTICS = ("min", "median", "mean", "p90", "p99", "max")


@dataclasses.dataclass(frozen=True)
class Params:
    """Validated parameters of notebook 03 (see :func:`validate`)."""

    engines: tuple[str, ...]
    scale: str
    disk_profile: str
    batch_rows: int
    batches: int
    new_keys: str
    memory_limit: str
    memory_budget_mb: int
    dataset_multiple: float
    seed: int
    seed_source: str
    batch_sizes: tuple[int, ...]
    dataset_rows: int

    @property
    def budget_bytes(self) -> int:
        """The memory budget in bytes."""
        return self.memory_budget_mb * 2**20

    @property
    def dataset_bytes(self) -> int:
        """Payload bytes of the data set (documents only)."""
        return self.dataset_rows * datagen.DOC_BYTES

    def rows_per_operation(self) -> int:
        """Rows one operation writes: its warm-up batch and ``batches`` rounds of every size."""
        return WARMUP_BATCHES * min(self.batch_sizes) + self.batches * sum(self.batch_sizes)

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict (for ``run.json``), with the data set's size."""
        out = dataclasses.asdict(self)
        out.update(dataset_bytes=self.dataset_bytes, dataset_gb=self.dataset_bytes / 1e9,
                   rows_per_operation=self.rows_per_operation())
        return out


def eligible_engines() -> list[str]:
    """Registered engines that can run notebook 03 here: a local instance and upsert operations."""
    return [name for name in Engine.names()
            if getattr(Engine._registry[name], "UPSERT_OPERATIONS", ()) and Engine._registry[name].HAS_LOCAL_SERVER]


def validate(engines: Sequence[str] | str = "postgres,rocksdb,mariadb", scale: str = "smoke", disk_profile: str = "local",
             batch_rows: int | None = None, batches: int | None = None, new_keys: str = "sequential",
             memory_budget_mb: int | None = None, dataset_multiple: float | None = None,
             seed: int | None = None, memory_limit: str = "cgroup") -> Params:
    """Check notebook 03's parameters without starting anything; return them resolved.

    Every bad value raises :class:`~ingestlab.errors.ConfigError` naming the parameter,
    the value and what is accepted. ``None`` means "the SCALE's value"; ``seed=None`` draws
    a seed from the clock (recorded), so that every run overwrites keys no earlier run read.

    Examples
    --------
    >>> p = validate("postgres", "smoke", seed=1)
    >>> p.batch_sizes, p.dataset_rows
    ((50, 100, 200), 27986)
    >>> validate("postgres", batch_rows=2)
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: BATCH_ROWS=2 is not valid: expected an integer ≥ 4 (the smallest batch is BATCH_ROWS / 4)
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    engines = subset("ENGINES", engines, eligible_engines())
    for name in engines:
        try:
            Engine.get(name)  # finds the engine's programs; starts nothing
        except EngineUnavailableError as exc:
            raise ConfigError("ENGINES", name, f"an engine that can run on this machine ({exc})") from None
    one_of("DISK_PROFILE", disk_profile, cgroups.PROFILES)
    batch_rows = positive_int("BATCH_ROWS", size["batch_rows"] if batch_rows is None else batch_rows)
    if batch_rows < 4:
        raise ConfigError("BATCH_ROWS", batch_rows, "an integer ≥ 4 (the smallest batch is BATCH_ROWS / 4)")
    batches = positive_int("BATCHES", size["batches"] if batches is None else batches)
    one_of("NEW_KEYS", new_keys, NEW_KEYS)
    one_of("MEMORY_LIMIT", memory_limit, MEMORY_LIMITS)
    memory_budget_mb = positive_int("MEMORY_BUDGET_MB", size["memory_budget_mb"] if memory_budget_mb is None
                                    else memory_budget_mb)
    if memory_budget_mb < 2:
        raise ConfigError("MEMORY_BUDGET_MB", memory_budget_mb, "an integer ≥ 2 (megabytes)")
    multiple = size["dataset_multiple"] if dataset_multiple is None else dataset_multiple
    if isinstance(multiple, bool) or not isinstance(multiple, (int, float)) or not 0 < multiple <= 10_000:
        raise ConfigError("DATASET_MULTIPLE", multiple, "a number > 0 (data set size ÷ memory budget), at most 10 000")
    if seed is None:
        seed, seed_source = time.time_ns() % 2**32, "clock"
    elif isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError("SEED", seed, "None (a fresh seed from the clock) or an integer ≥ 0")
    else:
        seed_source = "given"
    sizes = tuple(max(1, round(batch_rows * f)) for f in SIZE_FRACTIONS)
    rows = math.ceil(multiple * memory_budget_mb * 2**20 / datagen.DOC_BYTES)
    params = Params(engines, scale, disk_profile, batch_rows, batches, new_keys, memory_limit, memory_budget_mb,
                    float(multiple), int(seed), seed_source, sizes, rows)
    # overwrite and blind overwrite draw disjoint keys from the data set; random new keys fill its gaps
    needed = 2 * params.rows_per_operation()
    if needed > rows:
        most = max(0, (rows // 2 - WARMUP_BATCHES * min(sizes)) // sum(sizes))
        raise ConfigError("BATCHES", batches,
                          f"at most {most} with BATCH_ROWS={batch_rows}: the data set of {rows} rows must hold "
                          f"{needed} distinct keys to overwrite (raise DATASET_MULTIPLE or lower BATCH_ROWS)")
    return params


# -- measuring ---------------------------------------------------------------------------
@dataclasses.dataclass
class _Plan:
    """Keys for every operation of one engine, drawn once per run."""

    new: np.ndarray
    existing: dict[str, np.ndarray]


def key_plan(params: Params) -> _Plan:
    """The run's keys: new keys for inserts, and disjoint existing keys for each overwriting operation.

    Examples
    --------
    >>> plan = key_plan(validate("postgres", "smoke", seed=3))
    >>> bool(plan.new.min() == 2 * 27986), len(set(plan.existing["overwrite"]) & set(plan.existing["blind_overwrite"]))
    (True, 0)
    """
    rng = np.random.default_rng([params.seed, 1])
    n, per_op = params.dataset_rows, params.rows_per_operation()
    if params.new_keys == "sequential":
        new = 2 * (n + np.arange(per_op, dtype=np.int64))
    else:
        new = 2 * rng.choice(n, per_op, replace=False).astype(np.int64) + 1
    drawn = 2 * rng.choice(n, 2 * per_op, replace=False).astype(np.int64)
    return _Plan(new, {"overwrite": drawn[:per_op], "blind_overwrite": drawn[per_op:]})


def batch_schedule(params: Params) -> list[tuple[int, bool, int]]:
    """``(batch_no, warmup, rows)`` of one operation: warm-up first, then rounds of every size, order rotated.

    Examples
    --------
    >>> [r for _, _, r in batch_schedule(validate("postgres", batch_rows=8, batches=2, seed=0))]
    [2, 2, 4, 8, 4, 8, 2]
    """
    out = [(-WARMUP_BATCHES + i, True, min(params.batch_sizes)) for i in range(WARMUP_BATCHES)]
    k = len(params.batch_sizes)
    for r in range(params.batches):
        for j in range(k):
            out.append((r * k + j, False, params.batch_sizes[(j + r) % k]))
    return out


def _engine_pids(engine: Engine) -> list[int]:
    pid = engine.server.pid()
    if pid is None:
        return []
    return [pid] if pid == os.getpid() else cgroups.process_tree(pid)


def _count(engine: Engine) -> int:
    return engine.count_keys() if engine.KEY_VALUE else engine.count_rows(TABLE)


def _load(engine: Engine, params: Params, *, progress: bool = True) -> dict[str, Any]:
    """Create and load the data set (a progress bar of rows sent); return the load's facts."""
    rng = np.random.default_rng([params.seed, 0])
    with tqdm(total=params.dataset_rows, desc=f"{engine.NAME} load", unit="row", unit_scale=True,
              disable=not progress, file=sys.stderr) as bar:

        def chunks():
            for start, docs in datagen.document_chunks(params.dataset_rows, rng):
                yield start, docs
                bar.update(len(docs))

        t0 = time.perf_counter()
        if engine.KEY_VALUE:
            engine.bulk_load_pairs((datagen.key_bytes(2 * np.arange(s, s + len(d), dtype=np.int64)),
                                    datagen.row_values(d)) for s, d in chunks())
        else:
            engine.execute(engine.drop_table_sql(TABLE))
            engine.execute(engine.create_table_sql(TABLE, COLUMNS, primary_key=(KEY,)))
            engine.bulk_load_tsv(TABLE, [c for c, _ in COLUMNS],
                                 (datagen.tsv_lines(2 * np.arange(s, s + len(d), dtype=np.int64), d)
                                  for s, d in chunks()))
        load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if engine.KEY_VALUE:
        engine.settle()
        disk = engine.data_bytes()
    else:
        engine.settle(TABLE)
        disk = engine.table_bytes(TABLE)
    settle_s = time.perf_counter() - t0
    return {"engine": engine.NAME, "rows": params.dataset_rows, "payload_bytes": params.dataset_bytes,
            "payload_gb": params.dataset_bytes / 1e9, "memory_budget_mb": params.memory_budget_mb,
            "payload_multiple": params.dataset_bytes / params.budget_bytes, "disk_bytes": disk,
            "disk_gb": disk / 1e9, "disk_multiple": disk / params.budget_bytes, "load_s": load_s,
            "load_mb_s": params.dataset_bytes / load_s / 1e6, "settle_s": settle_s,
            "bulk_path": engine.BULK_PATH}


def _batch_call(engine: Engine, operation: str, keys: np.ndarray, docs: np.ndarray,
                sql_cache: dict) -> Callable[[], Any]:
    """The batch as a ready call: statement text and parameters (or key and value lists) built beforehand."""
    if engine.KEY_VALUE:
        kv = (datagen.key_bytes(keys), datagen.row_values(docs))
        method = {"insert": engine.insert, "overwrite": engine.upsert, "blind_overwrite": engine.put}[operation]
        return lambda: method(*kv)
    n, cols = len(keys), [c for c, _ in COLUMNS]
    if (operation, n) not in sql_cache:
        sql_cache[(operation, n)] = (engine.insert_sql(TABLE, cols, n) if operation == "insert"
                                     else engine.upsert_sql(TABLE, cols, KEY, n))
    sql = sql_cache[(operation, n)]
    params = [v for key, doc in zip(keys.tolist(), datagen.row_values(docs)) for v in (key, doc.decode("ascii"))]
    return lambda: engine.execute(sql, params)


def _delta(after: dict, before: dict, prefix: str = "") -> dict[str, float]:
    return {prefix + k: float(after[k] - before.get(k, 0)) for k in after}


def _run_operation(engine: Engine, operation: str, params: Params, keys: np.ndarray, device: str,
                   limits, *, cap: cgroups.MemoryCap | None = None, bar=None) -> tuple[pd.DataFrame, dict]:
    """Time every batch of one operation, throttled by ``limits``; return (samples, throttle metadata).

    Under a memory ``cap`` each row also has the group's page cache and anonymous memory
    after the batch and its peak during the batch (``mem_*_bytes``).
    """
    rng = np.random.default_rng([params.seed, 2, OPERATIONS.index(operation)])
    schedule = batch_schedule(params)
    sql_cache: dict = {}
    rows_out, used = [], 0
    with cgroups.throttle(_engine_pids(engine), limits, device=device, label=f"{engine.NAME}-{operation}") as group:
        for batch_no, warmup, n in schedule:
            batch_keys = keys[used:used + n]
            used += n
            call = _batch_call(engine, operation, batch_keys, datagen.documents(n, rng), sql_cache)
            if cap is not None:
                cap.reset_peak()
            dev0, grp0, eng0 = cgroups.disk_counters(device), group.counters(), engine.io_counters()
            found: list = []
            started, elapsed = time_call(lambda: found.append(call()))
            dev1, grp1, eng1 = cgroups.disk_counters(device), group.counters(), engine.io_counters()
            row = {"batch_no": batch_no, "warmup": warmup, "rows": n, "bytes": n * datagen.DOC_BYTES,
                   "elapsed_s": elapsed / 1e9, "started_ns": started,
                   **_delta(dev1, dev0, "dev_"), **_delta(grp1, grp0), **_delta(eng1, eng0, "engine_"),
                   **(cap.levels() if cap is not None else {})}
            if isinstance(found[0], int):
                row["keys_found"] = found[0]
            rows_out.append(row)
            if bar is not None:
                bar.update(1)
        meta = group.metadata()
    frame = pd.DataFrame(rows_out)
    for col in ("dev_read_ios", "dev_read_bytes", "dev_write_ios", "dev_write_bytes"):
        if col not in frame.columns:  # a data directory on a file system without a block device
            frame[col] = np.nan
    frame["read_iops"] = frame["dev_read_ios"] / frame["elapsed_s"]
    frame["read_mb_s"] = frame["dev_read_bytes"] / frame["elapsed_s"] / 1e6
    frame["write_iops"] = frame["dev_write_ios"] / frame["elapsed_s"]
    if "cgroup_read_ios" in frame.columns:
        frame["cgroup_read_iops"] = frame["cgroup_read_ios"] / frame["elapsed_s"]
        frame["cgroup_write_iops"] = frame["cgroup_write_ios"] / frame["elapsed_s"]
    if "engine_blocks_read" in frame.columns:
        frame["blocks_read_per_row"] = frame["engine_blocks_read"] / frame["rows"]
    # reads that reached the disk for this engine: its processes' own when throttled, else the device's
    own = "cgroup_read_ios" in frame.columns
    frame["disk_read_ios"] = frame["cgroup_read_ios"] if own else frame["dev_read_ios"]
    frame["disk_read_bytes"] = frame["cgroup_read_bytes"] if own else frame["dev_read_bytes"]
    frame["disk_reads_per_row"] = frame["disk_read_ios"] / frame["rows"]
    return frame, meta


def measure(params: Params, run, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Run notebook 03's measurements end to end, one engine after the other.

    Each engine is started fresh, loaded, measured and stopped (also on failure or
    Ctrl-C); every cgroup is removed on the way out. Samples are appended to ``run`` after
    each operation, so an interrupted run keeps what it measured. Per engine:

    1. **Memory budget** (``MEMORY_LIMIT``). ``"cgroup"``: the server restarts with a quarter of
       the budget as its own cache (``shared_buffers``, the InnoDB buffer pool) and buffered
       I/O, and its processes go into a memory cgroup; after the load the group's limit is set
       to the memory they hold plus the rest of the budget (at least :data:`MIN_FREE_BYTES`),
       which the OS page cache and the statements' own memory share, as on a machine with
       that much RAM (:class:`ingestlab.servers.cgroups.MemoryCap`). ``"engine"``, and
       always for RocksDB (it runs in this process): the engine's own cache of the budget with
       ``O_DIRECT`` (PostgreSQL ``debug_io_direct = data``; RocksDB direct reads and a 10-bit
       bloom filter; MariaDB ``O_DIRECT``). Where a memory cgroup is not possible the run says
       so and uses ``"engine"``. The limit in force is recorded per engine, and that reads
       really go to the disk is *measured*: every batch records the engine's count of blocks
       read and the disk reads of its processes.
    2. **Data set.** ``DATASET_MULTIPLE × MEMORY_BUDGET_MB`` of documents built as the seed
       builds them (:func:`ingestlab.datagen.documents`), keys ``0, 2, 4, …`` (even), loaded
       by the engine's fastest path (``COPY``, ``LOAD DATA LOCAL``, ``WriteBatch`` without WAL),
       then settled (checkpoint; flush and compactions done). The load is never throttled.
    3. **Operations.** Each batch is one transaction: one multi-row statement in autocommit
       for SQL engines (``INSERT … VALUES``, ``… ON CONFLICT DO UPDATE`` / ``… ON DUPLICATE KEY
       UPDATE``), one ``WriteBatch`` for RocksDB. Operations run in order — insert, overwrite,
       blind overwrite — each with one warm-up batch (kept, flagged) and then ``BATCHES`` rounds
       of batches of ¼, ½ and 1 × ``BATCH_ROWS`` (order rotated per round), so that
       ``batch time = overhead + rows × per-row cost`` can be fitted.
    4. **Keys.** New keys are ``2N, 2N+2, …`` (sequential, as the seed) or random odd keys
       between the existing ones (each insert then has to find its place in a B-tree; a bloom
       filter knows the key is absent without a read). Overwritten keys are drawn without
       replacement from the loaded ones, disjoint across operations, with a seed that changes
       every run unless ``SEED`` is given — re-used keys would be found in the cache.
    5. **Disk profile.** During the timed batches only, the engine's processes (for RocksDB,
       this Python process, whose threads include RocksDB's flushes and compactions) are held
       in a blkio cgroup with the profile's limits (:mod:`ingestlab.servers.cgroups`); where
       that is not possible the run continues unthrottled, labelled ``local``, and says why.
    6. **Checks.** After the load and after each operation the keys are counted (unthrottled)
       and must equal what was written.

    Per batch the samples keep the client's wall time, the device's I/O from ``/proc/diskstats``
    (which includes other processes on the machine), the cgroup's own I/O when throttled, the
    engine's counters (``engine_blocks_read``...) and, under a memory cap, the group's memory.

    Returns
    -------
    dict
        ``samples`` (one row per batch), ``loads`` (one row per engine), ``checks`` (key
        counts after the load and after each operation, with the disk profile in force) and
        ``memory`` (one row per engine: the memory limit in force and, under a cap, its parts).
    """
    plan = key_plan(params)
    limits = cgroups.PROFILES[params.disk_profile]
    out: dict[str, list] = {"samples": [], "loads": [], "checks": [], "memory": []}
    for name in params.engines:
        with contextlib.ExitStack() as stack:
            engine = Engine.get(name)
            limit, cap = _memory_limit(engine, params, run, stack)
            stack.callback(engine.close)  # runs before the memory group is removed
            engine.start()
            settings = engine.memory_budget_settings(params.budget_bytes, limit)
            engine.apply_settings(settings)
            if cap is not None:
                cap.add(_engine_pids(engine))  # before the load: pages are charged to who touches them first
            device = cgroups.device_of(engine.server.directory)
            run.record_engine(engine, device=device, memory_budget={
                "mb": params.memory_budget_mb, "limit": limit, "limit_requested": params.memory_limit,
                "mechanism": engine.MEMORY_LIMITS[limit], "settings": settings})
            load = _load(engine, params, progress=progress)
            out["loads"].append(load)
            run.append(pd.DataFrame([load]), table="loads")
            memory = {"engine": name, "memory_limit": limit, "memory_limit_requested": params.memory_limit,
                      "budget_bytes": params.budget_bytes,
                      "engine_cache_bytes": engine.cache_bytes(params.budget_bytes, limit)}
            if cap is not None:
                memory.update(cap.cap(max(MIN_FREE_BYTES, params.budget_bytes - memory["engine_cache_bytes"])),
                              cgroup=str(cap.path))
            out["memory"].append(memory)
            run.append(pd.DataFrame([memory]), table="memory")
            expected = params.dataset_rows
            out["checks"].append(_check(engine, "load", expected, params.disk_profile, "local", None, run))
            for operation in engine.UPSERT_OPERATIONS:
                keys = plan.new if operation == "insert" else plan.existing[operation]
                with tqdm(total=len(batch_schedule(params)), desc=f"{name} {operation}", unit="batch",
                          disable=not progress, file=sys.stderr) as bar:
                    try:
                        frame, meta = _run_operation(engine, operation, params, keys, device, limits, cap=cap,
                                                     bar=bar)
                    except Exception as exc:
                        if cap is not None and cap.oom_kills():
                            raise IngestlabError(
                                f"{name} {operation}: the kernel killed a server process at the memory cap of "
                                f"{memory['limit_bytes'] / 2**20:.0f} MB ({memory['free_bytes'] / 2**20:.0f} MB "
                                f"free after the load); raise MEMORY_BUDGET_MB, lower BATCH_ROWS or use "
                                f"MEMORY_LIMIT='engine'") from exc
                        raise
                effective = params.disk_profile if (limits is None or meta["applied"]) else "local"
                if effective != params.disk_profile:
                    message = (f"DISK_PROFILE={params.disk_profile!r} could not be applied to {name} {operation} "
                               f"({meta['reason']}); it was measured unthrottled and is labelled 'local'")
                    warnings.warn(message, stacklevel=2)
                    run.note(message)
                frame = frame.assign(engine=name, operation=operation, disk_profile=effective,
                                     disk_profile_requested=params.disk_profile, new_keys=params.new_keys,
                                     memory_limit=limit)
                run.append(frame)
                out["samples"].append(frame)
                if operation == "insert":
                    expected += len(keys)
                out["checks"].append(_check(engine, operation, expected, effective, params.disk_profile, meta, run))
    return {k: pd.DataFrame(v) if k != "samples" else (pd.concat(v, ignore_index=True) if v else pd.DataFrame())
            for k, v in out.items()}


def _memory_limit(engine: Engine, params: Params, run,
                  stack: contextlib.ExitStack) -> tuple[str, cgroups.MemoryCap | None]:
    """The memory limit ``engine`` runs under, and its memory group (entered on ``stack``) for ``"cgroup"``.

    ``"cgroup"`` falls back to ``"engine"`` for an engine that has no separate server
    process (noted in the run) or where no memory cgroup can be made (a warning too).
    """
    if params.memory_limit == "engine":
        return "engine", None
    if params.memory_limit not in engine.MEMORY_LIMITS:
        run.note(f"{engine.NAME}: MEMORY_LIMIT={params.memory_limit!r} does not apply (it runs inside the lab's "
                 f"process); its own limit is used: {engine.MEMORY_LIMITS['engine']}")
        return "engine", None
    cap = stack.enter_context(cgroups.memory_cap([], label=f"{engine.NAME}-memory"))
    if not cap.applied:
        message = (f"MEMORY_LIMIT={params.memory_limit!r} could not be applied to {engine.NAME} ({cap.reason}); "
                   f"it runs with MEMORY_LIMIT='engine': {engine.MEMORY_LIMITS['engine']}")
        warnings.warn(message, stacklevel=3)
        run.note(message)
        return "engine", None
    return "cgroup", cap


def _check(engine: Engine, phase: str, expected: int, profile: str, requested: str, throttle: dict | None,
           run) -> dict:
    counted = _count(engine)
    row = {"engine": engine.NAME, "phase": phase, "expected_keys": expected, "counted_keys": counted,
           "ok": counted == expected, "disk_profile": profile, "disk_profile_requested": requested,
           "throttled": bool(throttle and throttle["applied"]), "throttle_reason": (throttle or {}).get("reason"),
           "cgroup": (throttle or {}).get("cgroup"), "device": (throttle or {}).get("device")}
    run.append(pd.DataFrame([row]), table="checks")
    if counted != expected:
        raise DataLossError(f"{engine.NAME} after {phase}: {counted} keys counted, {expected} written")
    return row


# -- analysis ----------------------------------------------------------------------------
def _full(samples: pd.DataFrame, batch_rows: int) -> pd.DataFrame:
    return samples[~samples["warmup"] & (samples["rows"] == batch_rows)]


def statistics(samples: pd.DataFrame, batch_rows: int) -> pd.DataFrame:
    """The seed's per-batch statistics (min, median, mean, P90, P99, max) of full-size batches.

    One row per engine × operation × disk profile: ``batches``, ``batch_rows``, the six
    statistics in ms, ``read_iops`` (device reads per second over those batches, from
    ``/proc/diskstats``), ``cgroup_read_iops`` (the throttled processes' own, when
    throttled), ``read_iops_limit`` (the profile's), ``read_mb_s`` (``disk_read_bytes``: the
    throttled processes' when throttled, else the device's) beside ``read_mb_s_limit``, ``blocks_read_per_row`` (the
    engine's own count of blocks it did not find in its cache), ``disk_reads_per_row``
    (reads that reached the disk: the throttled processes' own, else the device's), the
    same three for writes (``write_iops``...), and the ``memory_limit`` in force with,
    under a memory cap, the median ``page_cache_mb`` after a batch and the ``peak_memory_mb``
    of the server's processes during one.
    """
    full = _full(samples, batch_rows).assign(ms=lambda d: d["elapsed_s"] * 1e3)
    keys = ["engine", "operation", "disk_profile"]
    rows = []
    for key, g in full.groupby(keys, sort=False):
        ms = g["ms"].to_numpy()
        limits = cgroups.PROFILES.get(key[2])
        row = dict(zip(keys, key), batches=len(g), batch_rows=batch_rows,
                   min_ms=ms.min(), median_ms=np.median(ms), mean_ms=ms.mean(), p90_ms=np.percentile(ms, 90),
                   p99_ms=np.percentile(ms, 99), max_ms=ms.max(),
                   read_iops=g["dev_read_ios"].sum() / g["elapsed_s"].sum())
        if "cgroup_read_ios" in g.columns and g["cgroup_read_ios"].notna().any():
            row["cgroup_read_iops"] = g["cgroup_read_ios"].sum() / g["elapsed_s"].sum()
        else:
            row["cgroup_read_iops"] = np.nan
        row["read_iops_limit"] = limits.read_iops if limits and limits.read_iops else np.nan
        row["read_mb_s"] = g["disk_read_bytes"].sum() / g["elapsed_s"].sum() / 1e6
        row["read_mb_s_limit"] = limits.read_bps / 1e6 if limits and limits.read_bps else np.nan
        row["blocks_read_per_row"] = (g["engine_blocks_read"].sum() / g["rows"].sum()
                                      if "engine_blocks_read" in g.columns else np.nan)
        row["disk_reads_per_row"] = g["disk_read_ios"].sum() / g["rows"].sum()
        row["write_iops"] = g["dev_write_ios"].sum() / g["elapsed_s"].sum()
        row["cgroup_write_iops"] = (g["cgroup_write_ios"].sum() / g["elapsed_s"].sum()
                                    if "cgroup_write_ios" in g.columns and g["cgroup_write_ios"].notna().any()
                                    else np.nan)
        row["write_iops_limit"] = limits.write_iops if limits and limits.write_iops else np.nan
        row["memory_limit"] = g["memory_limit"].iloc[0] if "memory_limit" in g.columns else None
        row["page_cache_mb"] = (g["mem_page_cache_bytes"].median() / 2**20
                                if "mem_page_cache_bytes" in g.columns else np.nan)
        row["peak_memory_mb"] = g["mem_peak_bytes"].max() / 2**20 if "mem_peak_bytes" in g.columns else np.nan
        rows.append(row)
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
                r = models.ratio_ci(a, base, statistic=stat, seed=seed)
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
    fits = models.fit_linear(measured, x="rows", y="elapsed_s", by=["engine", "operation", "disk_profile"])
    out = pd.DataFrame({
        "engine": fits["engine"], "variant": fits["operation"], "disk_profile": fits["disk_profile"],
        "method": fits["method"],
        "overhead_ms": fits["intercept"] * 1e3, "overhead_ci_low_ms": fits["intercept_ci_low"] * 1e3,
        "overhead_ci_high_ms": fits["intercept_ci_high"] * 1e3,
        "write_time_s": fits["slope"] * batch_rows,
        "per_row_us": fits["slope"] * 1e6, "per_row_ci_low_us": fits["slope_ci_low"] * 1e6,
        "per_row_ci_high_us": fits["slope_ci_high"] * 1e6, "r2": fits["r2"], "n_points": fits["n_points"],
    })
    return out


def published_statistics() -> pd.DataFrame:
    """The seed's statistics tables as rows like :func:`statistics`' (``engine`` = the seed's engine)."""
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
    """The seed's overwrite/insert ratios and batch times beside the live ones (paired engines).

    ArangoDB is paired with RocksDB (its storage engine), PostgreSQL 9.6 with PostgreSQL 18.
    The seed's ratios are of its mean and median batch times; the live ones carry bootstrap
    CIs. Live rows of engines without a seed counterpart appear with no published value.

    Returns
    -------
    pandas.DataFrame
        See :func:`ingestlab.models.compare_with_published`; ``quantity`` names the number.
    """
    pub_stats = published_statistics()
    pub_rows, live_rows = [], []
    for _, r in ratio_table[ratio_table["operation"] == "overwrite"].iterrows():
        label = PUBLISHED_PAIRS.get(r["engine"])
        q = f"overwrite/insert {r['statistic']}: {r['engine']} [{r['disk_profile']}]"
        if label is not None:
            p = pub_stats[pub_stats["engine"].str.startswith(label + " ")].set_index("operation")
            q += f" vs {label} (seed)"
            pub_rows.append({"quantity": q, "published": p.loc["overwrite", f"{r['statistic']}_ms"]
                             / p.loc["insert", f"{r['statistic']}_ms"], "published_label": "ratio of seed tables"})
        live_rows.append({"quantity": q, "live": r["ratio"], "live_ci_low": r["ci_low"], "live_ci_high": r["ci_high"],
                          "live_label": "bootstrap 95 % CI"})
    for _, s in stats.iterrows():
        label = PUBLISHED_PAIRS.get(s["engine"])
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
