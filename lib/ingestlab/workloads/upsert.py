"""Notebook 03's workload: insert, overwrite and blind overwrite per batch, on data larger than the memory budget."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import sys
import time
import warnings
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ingestlab import cgroups, checkpoints, datagen, timing
from ingestlab.engine_specs import EngineSpec, parse_engines
from ingestlab.engines import Engine, capabilities, registry
from ingestlab.errors import ConfigError, DataLossError, EngineUnavailableError, IngestlabError, PreflightError
from ingestlab.progress import bar as progress_bar
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import MAX_STATEMENTS, EngineParams, one_of, positive_int, subset

#: Every operation the study knows; an engine runs those of its ``upsert`` capability's ``OPERATIONS``.
OPERATIONS = ("insert", "overwrite", "blind_overwrite")
NEW_KEYS = ("sequential", "random")
#: How memory is limited (see :attr:`ingestlab.engines.capabilities.MemoryBudget.LIMITS`): ``"cgroup"``
#: caps the server's processes with a memory cgroup over buffered I/O, as the seed's machines
#: had an OS page cache; ``"engine"`` gives the engine a cache of the budget and ``O_DIRECT``.
#: Engines inside the lab's process (RocksDB) always use their own.
MEMORY_LIMITS = ("cgroup", "engine")
#: Least free memory under a memory cap, shared by the OS page cache and the server's own
#: memory beyond what it held when capped (a 10 000-row ``INSERT … VALUES`` of 12 MB took
#: PostgreSQL 18 ~100 MB while it ran): tiny budgets still leave a statement room to run.
MIN_FREE_BYTES = 16 * 2**20
#: Sizes per SCALE. ``paper``: the study's 10 000-document batches and its 256 MB caches
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


@dataclasses.dataclass(frozen=True)
class Params(EngineParams):
    """Validated parameters of notebook 03 (see :func:`validate`)."""

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
        out = super().as_dict()
        out.update(dataset_bytes=self.dataset_bytes, dataset_gb=self.dataset_bytes / 1e9,
                   rows_per_operation=self.rows_per_operation())
        return out


#: What the run records as the memory limit of an engine whose server the lab does not run.
SERVER_LIMIT = "server"


def eligible_engines() -> list[str]:
    """Registered engines that can run notebook 03 here by name: a local instance and upsert operations.

    Any engine with upsert operations can run by URL besides (see :func:`check_engines`).
    """
    return [name for name, cls in registry.classes().items() if cls.has("upsert") and cls.HAS_LOCAL_SERVER]


def check_engines(engines: Sequence[str] | str, *, reach: bool = True) -> tuple[EngineSpec, ...]:
    """``ENGINES`` as a tuple: local engine names, or URLs of servers (``arangodb://…``, ``yugabytedb://…``).

    A name must be one of :func:`eligible_engines` whose programs are found here; a URL must
    select an engine with upsert operations and, with ``reach``, its server must accept a
    connection within a few seconds (nothing is sent). Messages show URLs with the password
    masked.
    """
    specs = parse_engines(engines)
    names = [spec.value for spec in specs if spec.connection is None]
    if names:
        subset("ENGINES", names, eligible_engines())
    for spec in specs:
        try:
            engine = spec.engine()  # finds the programs, or takes the parsed URL; starts nothing
            capabilities.require(NOTEBOOK.needs, {engine.display_url: type(engine)},
                                 notebook=f"notebook {NOTEBOOK.id}")
        except EngineUnavailableError as exc:
            raise ConfigError("ENGINES", spec.value, f"an engine that can run from this machine ({exc})") from None
        except ConfigError as exc:
            if exc.name == "ENGINES":
                raise
            raise ConfigError("ENGINES", spec.value, f"a valid engine URL ({exc.accepted})") from None
        if reach:  # a server that does not answer is a failed pre-flight check (exit 3), not a bad value
            try:
                engine.WIRE.check_reachable(engine.connection, engine.display_url)
            except EngineUnavailableError as exc:
                raise PreflightError(f"ENGINES {engine.display_url}: {exc}") from None
    return specs


def validate(engines: Sequence[str] | str = "postgres,rocksdb,mariadb", scale: str = "smoke", disk_profile: str = "local",
             batch_rows: int | None = None, batches: int | None = None, new_keys: str = "sequential",
             memory_budget_mb: int | None = None, dataset_multiple: float | None = None,
             seed: int | None = None, memory_limit: str = "cgroup", *, reach: bool = True) -> Params:
    """Check notebook 03's parameters without starting anything; return them resolved.

    Every bad value raises :class:`~ingestlab.errors.ConfigError` naming the parameter,
    the value and what is accepted. ``None`` means "the SCALE's value"; ``seed=None`` draws
    a seed from the clock (recorded), so that every run overwrites keys no earlier run read.
    ``ENGINES`` may name servers by URL (:func:`check_engines`; ``reach=False`` skips the
    check that they accept connections).
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    engines = check_engines(engines, reach=reach)
    one_of("DISK_PROFILE", disk_profile, cgroups.PROFILES)
    batch_rows = positive_int("BATCH_ROWS", size["batch_rows"] if batch_rows is None else batch_rows)
    if batch_rows < 4:
        raise ConfigError("BATCH_ROWS", batch_rows, "an integer ≥ 4 (the smallest batch is BATCH_ROWS / 4)")
    batches = positive_int("BATCHES", size["batches"] if batches is None else batches, most=MAX_STATEMENTS)
    one_of("NEW_KEYS", new_keys, NEW_KEYS)
    one_of("MEMORY_LIMIT", memory_limit, MEMORY_LIMITS)
    memory_budget_mb = positive_int("MEMORY_BUDGET_MB", size["memory_budget_mb"] if memory_budget_mb is None
                                    else memory_budget_mb)
    if memory_budget_mb < 2:
        raise ConfigError("MEMORY_BUDGET_MB", memory_budget_mb, "an integer ≥ 2 (megabytes)")
    multiple = size["dataset_multiple"] if dataset_multiple is None else dataset_multiple
    if isinstance(multiple, bool) or not isinstance(multiple, (int, float)) or not 0 < multiple <= 10_000:
        raise ConfigError("DATASET_MULTIPLE", multiple, "a number > 0 (data set size ÷ memory budget), at most 10 000")
    if seed is None:  # drawn from the clock; a resumed run takes the interrupted run's, which its checkpoints used
        kept = checkpoints.drawn_before("seed")
        seed, seed_source = (kept if isinstance(kept, int) else time.time_ns() % 2**32), "clock"
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

    New keys are even and beyond the loaded ones (sequential) or odd (random), never loaded;
    each overwriting operation draws its own existing keys, disjoint from the other's
    (``tests/workloads/test_upsert.py`` holds both).
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

    With sizes 2, 4, 8 and two rounds: a warm-up batch of 2, then 2 4 8, then 4 8 2
    (``tests/workloads/test_upsert.py``).
    """
    out = [(-WARMUP_BATCHES + i, True, min(params.batch_sizes)) for i in range(WARMUP_BATCHES)]
    k = len(params.batch_sizes)
    for r in range(params.batches):
        for j in range(k):
            out.append((r * k + j, False, params.batch_sizes[(j + r) % k]))
    return out


def _engine_pids(engine: Engine) -> list[int]:
    if not engine.is_local:
        return []
    pid = engine.server.pid()
    if pid is None:
        return []
    return [pid] if pid == os.getpid() else cgroups.process_tree(pid)


#: Every column of a batch sample, filled once per batch: NaN where this run could not measure
#: it (no block device, no throttle, no memory cap, an engine without the counter).
SAMPLE_COLUMNS: tuple[str, ...] = (
    "batch_no", "warmup", "rows", "bytes", "elapsed_s", "started_ns", "keys_found",
    "dev_read_ios", "dev_read_bytes", "dev_write_ios", "dev_write_bytes",
    "cgroup_read_ios", "cgroup_read_bytes", "cgroup_write_ios", "cgroup_write_bytes",
    "engine_blocks_read",
    "mem_page_cache_bytes", "mem_anon_bytes", "mem_shmem_bytes", "mem_peak_bytes", "mem_failcnt",
)
COLUMN_NAMES = [c for c, _ in COLUMNS]


def _load(engine: Engine, params: Params, *, progress: bool = True) -> dict[str, Any]:
    """Create and load the data set (a progress bar of rows sent), then settle; return the load's facts."""
    rng = np.random.default_rng([params.seed, 0])
    engine.tables.reset(TABLE, COLUMNS, key=(KEY,))
    with progress_bar(total=params.dataset_rows, desc=f"{engine.label} load", unit="row", unit_scale=True,
                      disable=not progress, file=sys.stderr) as bar:

        def chunks():
            for start, docs in datagen.document_chunks(params.dataset_rows, rng):
                yield datagen.document_table(2 * np.arange(start, start + len(docs), dtype=np.int64), docs)
                bar.update(len(docs))

        with timing.Stopwatch() as load:
            engine.capability("bulk_load").load(TABLE, COLUMN_NAMES, chunks(), replace=True)
    with timing.Stopwatch() as settle:
        engine.tables.settle(TABLE)
    disk = engine.tables.data_bytes(TABLE)
    return {"engine": engine.label, "rows": params.dataset_rows, "payload_bytes": params.dataset_bytes,
            "payload_gb": params.dataset_bytes / 1e9, "memory_budget_mb": params.memory_budget_mb,
            "payload_multiple": params.dataset_bytes / params.budget_bytes, "disk_bytes": disk,
            "disk_gb": disk / 1e9, "disk_multiple": disk / params.budget_bytes, "load_s": load.seconds,
            "load_mb_s": params.dataset_bytes / load.seconds / 1e6, "settle_s": settle.seconds,
            "bulk_path": engine.capability("bulk_load").PATH}


def _delta(after: dict, before: dict, prefix: str = "") -> dict[str, float]:
    return {prefix + k: float(after[k] - before.get(k, 0)) for k in after}


def _run_operation(engine: Engine, operation: str, params: Params, keys: np.ndarray, device: str,
                   limits, *, cap: cgroups.MemoryCap | None = None, bar=None) -> tuple[pd.DataFrame, dict]:
    """Time every batch of one operation, throttled by ``limits``; return (samples, throttle metadata).

    Every sample has :data:`SAMPLE_COLUMNS` (and the engine's other counters as ``engine_*``);
    under a memory ``cap`` also the group's page cache and anonymous memory after the batch
    and its peak during it (``mem_*_bytes``).
    """
    rng = np.random.default_rng([params.seed, 2, OPERATIONS.index(operation)])
    rows_out, used = [], 0
    disk_counters = cgroups.disk_counters if device is not None else (lambda _device: {})
    with cgroups.throttle(_engine_pids(engine), limits, device=device, label=f"{engine.NAME}-{operation}") as group:
        for batch_no, warmup, n in batch_schedule(params):
            batch_keys = keys[used:used + n]
            used += n
            call = engine.capability("upsert").prepare_write(operation, TABLE, COLUMN_NAMES, KEY,
                                        datagen.document_table(batch_keys, datagen.documents(n, rng)))
            if cap is not None:
                cap.reset_peak()
            dev0, grp0, eng0 = disk_counters(device), group.counters(), engine.capability("io_counters").read()
            run = timing.timed(call)
            dev1, grp1, eng1 = disk_counters(device), group.counters(), engine.capability("io_counters").read()
            row = dict.fromkeys(SAMPLE_COLUMNS, np.nan)
            row.update(batch_no=batch_no, warmup=warmup, rows=n, bytes=n * datagen.DOC_BYTES,
                       elapsed_s=run.elapsed_ns / 1e9, started_ns=run.started_ns, keys_found=run.result,
                       **_delta(dev1, dev0, "dev_"), **_delta(grp1, grp0), **_delta(eng1, eng0, "engine_"),
                       **(cap.levels() if cap is not None else {}))
            rows_out.append(row)
            if bar is not None:
                bar.update(1)
        meta = group.metadata()
    frame = pd.DataFrame(rows_out).astype({"keys_found": float})
    throttled = frame["cgroup_read_ios"].notna().any()
    # reads that reached the disk for this engine: its processes' own when throttled, else the device's
    frame["disk_read_ios"] = frame["cgroup_read_ios"] if throttled else frame["dev_read_ios"]
    frame["disk_read_bytes"] = frame["cgroup_read_bytes"] if throttled else frame["dev_read_bytes"]
    per_s = 1 / frame["elapsed_s"]
    frame = frame.assign(read_iops=frame["dev_read_ios"] * per_s, read_mb_s=frame["dev_read_bytes"] * per_s / 1e6,
                         write_iops=frame["dev_write_ios"] * per_s, cgroup_read_iops=frame["cgroup_read_ios"] * per_s,
                         cgroup_write_iops=frame["cgroup_write_ios"] * per_s,
                         blocks_read_per_row=frame["engine_blocks_read"] / frame["rows"],
                         disk_reads_per_row=frame["disk_read_ios"] / frame["rows"])
    return frame, meta


def measure(params: Params, run, *, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Run notebook 03's measurements end to end, one engine after the other.

    Each engine is started fresh, loaded, measured and stopped (also on failure or
    Ctrl-C); every cgroup is removed on the way out. Samples are appended to ``run`` after
    each operation, so an interrupted run keeps what it measured. Each engine (its load and
    operations, which build on one another) is one configuration of
    :meth:`~ingestlab.results.Run.once`: a resumed run measures only the engines not done. Per engine:

    1. **Memory budget** (``MEMORY_LIMIT``). ``"cgroup"``: the server restarts with a quarter of
       the budget as its own cache (``shared_buffers``, the InnoDB buffer pool) and buffered
       I/O, and its processes go into a memory cgroup; after the load the group's limit is set
       to the memory they hold plus the rest of the budget (at least :data:`MIN_FREE_BYTES`),
       which the OS page cache and the statements' own memory share, as on a machine with
       that much RAM (:class:`ingestlab.cgroups.MemoryCap`). ``"engine"``, and
       always for RocksDB (it runs in this process): the engine's own cache of the budget with
       ``O_DIRECT`` (PostgreSQL ``debug_io_direct = data``; RocksDB direct reads and a 10-bit
       bloom filter; MariaDB ``O_DIRECT``). Where a memory cgroup is not possible the run says
       so and uses ``"engine"``. The limit in force is recorded per engine, and that reads
       really go to the disk is *measured*: every batch records the engine's count of blocks
       read and the disk reads of its processes.
    2. **Data set.** ``DATASET_MULTIPLE × MEMORY_BUDGET_MB`` of documents built as the study
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
       in an I/O cgroup with the profile's limits (cgroup v1 blkio or v2 ``io.max``, as the kernel
       mounts them: :mod:`ingestlab.cgroups`); where
       that is not possible the run continues unthrottled, labelled ``local``, and says why.
    6. **Checks.** After the load and after each operation the keys are counted (unthrottled)
       and must equal what was written.

    7. **Servers by URL** (``arangodb://…``, ``yugabytedb://…``): the lab starts nothing and
       limits nothing — memory and disk are the server's own (``compose/arangodb.yml`` rebuilds
       the study's 4 GB machine and its throttled volume). Such an engine runs with memory limit
       ``"server"`` and disk profile ``"local"`` (both noted in ``run.json``); the device and
       cgroup counters are NaN, the engine's own counters are kept.

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
    out: dict[str, list[pd.DataFrame]] = {"samples": [], "loads": [], "checks": [], "memory": []}
    for spec in params.engines:
        done = run.once({"engine": spec.value}, functools.partial(_measure_engine, spec, params, run, plan,
                                                               progress=progress))
        for key, table in (("samples", "results"), ("loads", "loads"), ("checks", "checks"), ("memory", "memory")):
            if table in done:
                out[key].append(done[table])
    return {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in out.items()}


def _measure_engine(spec: EngineSpec, params: Params, run, plan, *, progress: bool) -> None:
    """One engine of :func:`measure`: start, load, cap, every operation, checks; rows appended to ``run``."""
    limits = cgroups.PROFILES[params.disk_profile]
    with contextlib.ExitStack() as stack:
        engine = spec.engine()
        name = engine.label
        limit, cap = _memory_limit(engine, params, run, stack)
        stack.callback(engine.close)  # runs before the memory group is removed
        engine.start()
        budget = capabilities.of(engine, "memory_budget")(engine)
        settings = budget.settings(params.budget_bytes, limit) if engine.is_local else {}
        engine.apply_settings(settings)
        if cap is not None:
            cap.add(_engine_pids(engine))  # before the load: pages are charged to who touches them first
        device = cgroups.device_of(engine.server.directory) if engine.is_local else None
        engine_limits = limits if engine.is_local else None
        if not engine.is_local and limits is not None:
            run.note(f"{name}: DISK_PROFILE={params.disk_profile!r} is not applied to a server the lab does not "
                     f"run (its disk is its own, e.g. compose/arangodb.yml's blkio_config); measured as 'local'")
        run.record_engine(engine, device=device, memory_budget={
            "mb": params.memory_budget_mb, "limit": limit, "limit_requested": params.memory_limit,
            "mechanism": budget.LIMITS.get(limit, "the server's own configuration, not set by the lab"),
            "settings": settings})
        load = _load(engine, params, progress=progress)
        run.append(pd.DataFrame([load]), table="loads")
        memory = {"engine": name, "memory_limit": limit, "memory_limit_requested": params.memory_limit,
                  "budget_bytes": params.budget_bytes,
                  "engine_cache_bytes": budget.cache_bytes(params.budget_bytes, limit) if engine.is_local
                  else math.nan}
        if cap is not None:
            memory.update(cap.cap(max(MIN_FREE_BYTES, params.budget_bytes - memory["engine_cache_bytes"])),
                          cgroup=str(cap.path), cgroup_version=cap.hierarchy.VERSION)
        run.append(pd.DataFrame([memory]), table="memory")
        expected = params.dataset_rows
        _check(engine, "load", expected, params.disk_profile, "local", None, run)
        for operation in engine.capability("upsert").OPERATIONS:
            keys = plan.new if operation == "insert" else plan.existing[operation]
            with progress_bar(total=len(batch_schedule(params)), desc=f"{name} {operation}", unit="batch",
                              disable=not progress, file=sys.stderr) as bar:
                try:
                    frame, meta = _run_operation(engine, operation, params, keys, device, engine_limits,
                                                 cap=cap, bar=bar)
                except Exception as exc:
                    if cap is not None and cap.oom_kills():
                        raise IngestlabError(
                            f"{name} {operation}: the kernel killed a server process at the memory cap of "
                            f"{memory['limit_bytes'] / 2**20:.0f} MB ({memory['free_bytes'] / 2**20:.0f} MB "
                            f"free after the load); raise MEMORY_BUDGET_MB, lower BATCH_ROWS or use "
                            f"MEMORY_LIMIT='engine'") from exc
                    raise
            effective = params.disk_profile if (engine_limits is None or meta["applied"]) else "local"
            if not engine.is_local:
                effective = "local"
            elif effective != params.disk_profile:
                message = (f"DISK_PROFILE={params.disk_profile!r} could not be applied to {name} {operation} "
                           f"({meta['reason']}); it was measured unthrottled and is labelled 'local'")
                warnings.warn(message, stacklevel=2)
                run.note(message)
            frame = frame.assign(engine=name, driver=engine.driver.name, operation=operation, disk_profile=effective,
                                 disk_profile_requested=params.disk_profile, new_keys=params.new_keys,
                                 memory_limit=limit)
            run.append(frame)
            if operation == "insert":
                expected += len(keys)
            _check(engine, operation, expected, effective, params.disk_profile, meta, run)


def _memory_limit(engine: Engine, params: Params, run,
                  stack: contextlib.ExitStack) -> tuple[str, cgroups.MemoryCap | None]:
    """The memory limit ``engine`` runs under, and its memory group (entered on ``stack``) for ``"cgroup"``.

    ``"cgroup"`` falls back to ``"engine"`` for an engine that has no separate server
    process (noted in the run) or where no memory cgroup can be made (a warning too).
    """
    if not engine.is_local:
        run.note(f"{engine.label}: MEMORY_LIMIT={params.memory_limit!r} does not apply to a server the lab does not "
                 f"run; its memory is its own configuration (e.g. compose/arangodb.yml): recorded as "
                 f"{SERVER_LIMIT!r}")
        return SERVER_LIMIT, None
    if params.memory_limit == "engine":
        return "engine", None
    limits = capabilities.of(engine, "memory_budget").LIMITS
    if params.memory_limit not in limits:
        run.note(f"{engine.NAME}: MEMORY_LIMIT={params.memory_limit!r} does not apply (it runs inside the lab's "
                 f"process); its own limit is used: {limits['engine']}")
        return "engine", None
    cap = stack.enter_context(cgroups.memory_cap([], label=f"{engine.NAME}-memory"))
    if not cap.applied:
        message = (f"MEMORY_LIMIT={params.memory_limit!r} could not be applied to {engine.NAME} ({cap.reason}); "
                   f"it runs with MEMORY_LIMIT='engine': {limits['engine']}")
        warnings.warn(message, stacklevel=3)
        run.note(message)
        return "engine", None
    return "cgroup", cap


def _check(engine: Engine, phase: str, expected: int, profile: str, requested: str, throttle: dict | None,
           run) -> dict:
    counted = engine.tables.count_rows(TABLE)
    row = {"engine": engine.label, "phase": phase, "expected_keys": expected, "counted_keys": counted,
           "ok": counted == expected, "disk_profile": profile, "disk_profile_requested": requested,
           "throttled": bool(throttle and throttle["applied"]), "throttle_reason": (throttle or {}).get("reason"),
           "cgroup": (throttle or {}).get("cgroup"), "cgroup_version": (throttle or {}).get("cgroup_version"),
           "device": (throttle or {}).get("device")}
    run.append(pd.DataFrame([row]), table="checks")
    if counted != expected:
        raise DataLossError(f"{engine.label} after {phase}: {counted} keys counted, {expected} written")
    return row


def describe_params(params: Params, results_dir) -> str:
    """The run's set-up in one paragraph: data set against the budget, batches, disk and memory limits, seed."""
    limits = cgroups.PROFILES[params.disk_profile]
    return (f"Results: `{results_dir}`. Data set: **{params.dataset_rows:,} documents** of {datagen.DOC_BYTES} bytes = "
            f"**{params.dataset_bytes / 1e9:.3g} GB**, **{params.dataset_bytes / params.budget_bytes:.1f} ×** the "
            f"{params.memory_budget_mb} MB memory budget. Batches of {', '.join(map(str, params.batch_sizes))} rows, "
            f"{params.batches} of each per operation after one warm-up batch. Disk profile **{params.disk_profile}**"
            + (f" ({limits.describe()})" if limits else "")
            + f"; memory limit **{params.memory_limit}**; new keys {params.new_keys}; seed {params.seed} "
            f"({params.seed_source}).")


#: Notebook 03, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem="03_upsert_beyond_ram",
    question="What does overwriting existing keys cost when the data set is larger than memory?",
    study="arangodb-upsert-beyond-ram.ru.txt",
    measures="batch times of inserts, overwrites and blind overwrites under a memory cap (and an emulated "
             "375-IOPS disk), with the reads they cause",
    headlines=("ratio_median[",),
    smoke_time="1 min", paper_time="16 min (as root)",
    needs=("upsert", "io_counters"),
    validate=validate,
    measure=measure,
    article=("fit", "ratios", "live_vs_published"),
    plotters={"batch_times": "ingestlab.plots:plot_latency",
              "ratios": "plot_ratios",
              "reads": "plot_reads",
              "fit": "plot_fit",
              "live_vs_published": "plot_comparison"},
)
