"""Notebook 05's workload: one million rows loaded several ways, under settings that trade safety for speed, per engine version."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ingestlab import _paths, datagen, disk, progress, timing
from ingestlab.engine_specs import EngineSpec, parse_engines
from ingestlab.engines import Engine, capabilities, registry
from ingestlab.engines.steps import hook, missing_reason
from ingestlab.errors import ConfigError, DataLossError
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import MAX_REPEATS, EngineParams, items_of, one_of, positive_int, subset

#: The notebook this workload serves (declared in full at the end: :data:`NOTEBOOK`).
NOTEBOOK_STEM = "05_million_rows"

#: The study's table: ``demo (id int primary key, a int, b int, c int, d int)``.
TABLE = "demo"
COLUMNS: tuple[tuple[str, str], ...] = (("id", "INT"), ("a", "INT"), ("b", "INT"), ("c", "INT"), ("d", "INT"))
COLUMN_NAMES = [c for c, _ in COLUMNS]
KEY = ("id",)
#: Payload of one row: five 4-byte integers (``mb_per_s`` counts these bytes).
ROW_BYTES = 20
#: Load method → (the contract step it needs, what it is). Rows are the study's: id 1…N, the rest 0.
METHODS: dict[str, tuple[str, str]] = {
    "generate": ("generate_rows_sql", "one INSERT … SELECT over the server's row generator (PostgreSQL "
                 "generate_series, MariaDB's Sequence engine seq_1_to_N)"),
    "bulk": ("bulk_load", "the lab's bulk path: COPY … FROM STDIN (PostgreSQL), LOAD DATA LOCAL (MariaDB), the rows "
             "split into k consecutive slices loaded by k statements in sequence (once per k of BULK_STATEMENTS)"),
    "native_client": ("native_load", "the engine's own client loading the same rows from a CSV file "
                      "(psql \\copy, mariadb --local-infile: process start included; in the lab's process, "
                      "DuckDB's COPY … FROM and ClickHouse's INSERT … FROM INFILE)"),
    "batches": ("prepare_insert", "multi-row INSERTs of BATCH_ROWS rows, each its own commit (once per BATCH_ROWS)"),
    "pipeline": ("pipeline", "single-row INSERTs in one transaction, pipelined (psycopg 3)"),
    "executemany": ("prepare_insert", "single-row INSERTs in one transaction, one round trip each"),
    "autocommit": ("prepare_insert", "single-row INSERTs, each its own commit"),
}
#: Load method → the write path its rows take. ``insert_values``: ``INSERT … VALUES``, each statement its own
#: commit (single-row ``autocommit`` is the path at 1 row per statement); ``bulk``: the bulk path, each statement
#: its own transaction. The others are one statement (``server``, ``native_client``) or one transaction.
PATHS: dict[str, str] = {"generate": "server", "bulk": "bulk", "native_client": "native_client",
                         "batches": "insert_values", "pipeline": "one_transaction", "executemany": "one_transaction",
                         "autocommit": "insert_values"}
#: The paths notebook 05 fits, each on its own: several statement counts carry the same rows on each
#: (BATCH_ROWS and single rows; BULK_STATEMENTS). The native client is not the lab's driver.
FIT_PATHS = ("insert_values", "bulk")
#: Sizes per SCALE. ``paper`` is the study's: 1 000 000 rows, 5 runs.
SCALES: dict[str, dict[str, int]] = {
    "smoke": {"rows": 10_000, "runs": 2, "warmup_rows": 1_000, "disk_mb": 64, "versions": "default"},
    "paper": {"rows": 1_000_000, "runs": 5, "warmup_rows": 10_000, "disk_mb": 512, "versions": "all"},
}
#: ``VERSIONS``: every installed version of each local engine, or only the targets as named (None: the SCALE's,
#: smoke as named, paper every version).
VERSION_CHOICES = ("all", "default")
#: Rows per ``pyarrow`` chunk of the bulk path.
CHUNK_ROWS = 100_000
#: Defaults of the list parameters, at both scales: three statement counts on each fitted path.
BATCH_ROWS = (100, 1000, 10_000)
BULK_STATEMENTS = (1, 10, 100)
#: Most rows one INSERT may carry: PostgreSQL binds at most 65 535 parameters, five a row.
MAX_BATCH_ROWS = 65_535 // len(COLUMNS)
#: The most rows a load may have: ten times the study's million (the rows are generated in memory first).
MAX_ROWS = 10_000_000


@dataclasses.dataclass(frozen=True)
class Params(EngineParams):
    """Validated parameters of notebook 05 (see :func:`validate`)."""

    rows: int
    methods: tuple[str, ...]
    settings: tuple[str, ...] | None
    repeats: int
    batch_rows: tuple[int, ...]
    bulk_statements: tuple[int, ...]
    versions: str
    warmup_rows: int


def validate(engines: Sequence[str] | str, scale: str = "smoke", rows: int | None = None,
             methods: Sequence[str] | str | None = None, settings: Sequence[str] | str | None = None,
             repeats: int | None = None, batch_rows: Sequence[int] | str = BATCH_ROWS,
             bulk_statements: Sequence[int] | str = BULK_STATEMENTS, versions: str | None = None,
             warmup_rows: int | None = None) -> Params:
    """Check notebook 05's parameters without starting anything; return them resolved.

    ``engines`` are engine names or URLs; ``settings`` must each be a setting some engine
    offers, and every engine selected (with its other versions) must offer at least one of
    them: each runs those it has, and the run's notes name the others; ``None`` means all.
    ``batch_rows`` (rows per INSERT, at most :data:`MAX_BATCH_ROWS`) and ``bulk_statements``
    are lists (or comma-separated), each value at most ``rows``, none twice; they are sorted.
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    specs = parse_engines(engines)
    versions = size["versions"] if versions is None else versions
    one_of("VERSIONS", versions, VERSION_CHOICES)
    classes = [spec.engine_class() for spec in _expand(specs, versions)]
    # before SETTINGS, which such an engine would be blamed for
    capabilities.require(NOTEBOOK.needs, {cls.NAME: cls for cls in classes}, notebook=f"notebook {NOTEBOOK.id}")
    rows = positive_int("ROWS", size["rows"] if rows is None else rows, most=MAX_ROWS)
    repeats = positive_int("REPEATS", size["runs"] if repeats is None else repeats, most=MAX_REPEATS)
    batch_rows = _sizes("BATCH_ROWS", batch_rows, min(rows, MAX_BATCH_ROWS),
                        f"ROWS ({rows})" if rows <= MAX_BATCH_ROWS else f"{MAX_BATCH_ROWS} (65 535 parameters, five a row)")
    bulk_statements = _sizes("BULK_STATEMENTS", bulk_statements, rows, f"ROWS ({rows})")
    warmup_rows = positive_int("WARMUP_ROWS", min(size["warmup_rows"], rows) if warmup_rows is None else warmup_rows,
                               allow_zero=True)
    methods = subset("METHODS", list(METHODS) if methods is None else methods, list(METHODS))
    if settings is not None:
        known = list(dict.fromkeys(name for cls in registry.classes().values() for name in _settings_of(cls)))
        settings = subset("SETTINGS", settings, known)
        for cls in classes:
            if not set(settings) & set(_settings_of(cls)):
                raise ConfigError("SETTINGS", ",".join(settings),
                                  f"at least one setting of {cls.NAME}: {', '.join(_settings_of(cls))}")
    return Params(specs, scale, rows, methods, settings, repeats, batch_rows, bulk_statements, versions,
                  warmup_rows)


def _sizes(name: str, value: Any, most: int, bound: str) -> tuple[int, ...]:
    """A list parameter of integers from 1 to ``most``, each once, sorted; else :class:`ConfigError` naming ``name``."""
    items = [v for v in items_of(value) if v != ""]
    if not items:
        raise ConfigError(name, value, "a non-empty list of integers, comma-separated")
    out = []
    for item in items:
        try:
            n = int(item) if isinstance(item, str) else item
        except ValueError:
            raise ConfigError(name, item, "integers, comma-separated") from None
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= most:
            raise ConfigError(name, item, f"an integer from 1 to {bound}")
        if n in out:
            raise ConfigError(name, value, f"each value once ({n} is given twice)")
        out.append(n)
    return tuple(sorted(out))


def _expand(specs: Sequence[EngineSpec], versions: str) -> list[EngineSpec]:
    """The engines with, for ``versions="all"``, every other registered version of each local engine."""
    if versions == "default":
        return list(specs)
    return list(dict.fromkeys(version for spec in specs for version in (
        [spec] if spec.connection is not None else parse_engines(registry.versions(spec.name), spec.parameter))))


def counts(method: str, rows: int, batch_rows: int = 1000, bulk_statements: int = 1) -> tuple[int, int]:
    """(statements, commits) that carry ``rows`` rows by ``method``, with its rows per INSERT or bulk statements.

    Each bulk statement loads a slice of at least one row: fewer rows than ``bulk_statements``
    (a warm-up) take one statement a row.

    Examples
    --------
    >>> counts("batches", 1_000_000, 1000), counts("executemany", 10), counts("autocommit", 10)
    ((1000, 1000), (10, 1), (10, 10))
    >>> counts("bulk", 1_000_000, bulk_statements=100), counts("bulk", 20, bulk_statements=100)
    ((100, 100), (20, 20))
    """
    if method == "bulk":
        k = min(bulk_statements, rows)
        return k, k
    if method in ("generate", "native_client"):
        return 1, 1
    if method == "batches":
        n = math.ceil(rows / batch_rows)
        return n, n
    return rows, (rows if method == "autocommit" else 1)


def configurations(methods: Sequence[str], batch_rows: Sequence[int], bulk_statements: Sequence[int]
                   ) -> list[tuple[str, int, int]]:
    """The loads of one round, in order, as (method, rows per INSERT, bulk statements).

    ``batches`` comes once per rows per INSERT, ``bulk`` once per statement count; the other
    methods ignore both numbers.

    Examples
    --------
    >>> configurations(["bulk", "batches", "autocommit"], (100, 1000), (1, 10))
    [('bulk', 1, 1), ('bulk', 1, 10), ('batches', 100, 1), ('batches', 1000, 1), ('autocommit', 1, 1)]
    """
    sizes = {"batches": [(b, 1) for b in batch_rows], "bulk": [(1, k) for k in bulk_statements]}
    return [(m, b, k) for m in methods for b, k in sizes.get(m, [(1, 1)])]


def load_name(method: str, batch_rows: int = 1000, bulk_statements: int = 1) -> str:
    """A configuration's name in tables and figures: the method, with its rows per INSERT or its statements.

    Examples
    --------
    >>> load_name("batches", 100), load_name("bulk", bulk_statements=1), load_name("bulk", bulk_statements=10)
    ('batches of 100 rows', 'bulk load in 1 statement', 'bulk load in 10 statements')
    >>> load_name("autocommit")
    'autocommit'
    """
    if method == "batches":
        return f"batches of {batch_rows} rows"
    if method == "bulk":
        return f"bulk load in {bulk_statements} statement{'s' * (bulk_statements > 1)}"
    return method


def bulk_slices(chunks: Sequence[pa.Table], k: int) -> list[pa.Table]:
    """The rows of ``chunks`` in ``k`` consecutive slices of equal size (± 1 row), at most one slice a row.

    Examples
    --------
    >>> [t.num_rows for t in bulk_slices([pa.table({"id": range(5)}), pa.table({"id": range(5)})], 3)]
    [3, 3, 4]
    """
    table = pa.concat_tables(chunks)
    n = table.num_rows
    k = min(k, n)
    bounds = [i * n // k for i in range(k + 1)]
    return [table.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]


@dataclasses.dataclass
class Data:
    """One data set in the forms the methods need, built before any clock (see :func:`make_data`)."""

    rows: list[tuple]
    chunks: list[pa.Table]
    csv: str

    def remove(self) -> None:
        """Delete the CSV file."""
        if os.path.exists(self.csv):
            os.unlink(self.csv)

    @classmethod
    def make(cls, n: int, path: str) -> "Data":
        ids = np.arange(1, n + 1, dtype=np.int32)
        zeros = np.zeros(n, dtype=np.int32)
        table = pa.table({"id": ids, "a": zeros, "b": zeros, "c": zeros, "d": zeros})
        chunks = [table.slice(i, CHUNK_ROWS) for i in range(0, n, CHUNK_ROWS)]
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as out:
            for chunk in chunks:
                out.write(datagen.csv_bytes(chunk))
        os.chmod(path, 0o644)  # psql runs as this user, but the file may be read by the server's too
        return cls(list(zip(ids.tolist(), *([zeros.tolist()] * 4))), chunks, path)


def make_data(n: int, tag: str = "load") -> Data:
    """The study's ``n`` rows (id 1…n, the rest 0) as tuples, ``pyarrow`` chunks and a CSV file in this process's scratch folder."""
    return Data.make(n, str(_paths.scratch_dir() / f"million-{tag}.csv"))


def _prepare(engine: Engine, method: str, data: Data, ddl: list[str], setting, *, batch_rows: int,
             bulk_statements: int) -> Callable[[], Any]:
    """The call that loads ``data`` by ``method``, with its statements built now (before the clock)."""
    cols = COLUMN_NAMES
    if method == "generate":
        return functools.partial(engine.execute, engine.sql.generate_rows_sql(TABLE, cols, len(data.rows)))
    if method == "bulk":  # each its own statement and transaction; only the first creates the table (FREEZE)
        calls = [engine.capability("bulk_load").prepare(TABLE, cols, [part], create=ddl if setting.create_in_load and not i else ())
                 for i, part in enumerate(bulk_slices(data.chunks, bulk_statements))]
        return lambda: sum(call() for call in calls)
    if method == "native_client":
        return functools.partial(engine.capability("native_load").load, TABLE, cols, data.csv)
    if method == "pipeline":
        return engine.capability("pipeline").prepare_insert(TABLE, cols, data.rows)
    per_statement = batch_rows if method == "batches" else 1
    return engine.sender.prepare_insert(TABLE, cols, data.rows, rows_per_statement=per_statement,
                                 transaction=method == "executemany")


def load_once(engine: Engine, method: str, setting, data: Data, *, batch_rows: int = 1000,
              bulk_statements: int = 1) -> dict:
    """Load ``data`` into a fresh ``demo`` by ``method`` under ``setting``; check and measure it.

    The table is dropped and created (or, with ``create_in_load``, created by the load
    itself), the load is timed on the lab's clock, then with ``key_after_load`` the
    ``ADD PRIMARY KEY`` is timed apart; the rows are counted (:class:`DataLossError` if
    they are not all there) and, after the engine settles, the table's bytes read.
    ``batches`` sends INSERTs of ``batch_rows`` rows; ``bulk`` sends ``bulk_statements``
    bulk loads of consecutive slices, timed together. Under ``create_in_load`` only the
    first creates the table, so only its rows would be written frozen (``COPY … FREEZE``):
    :func:`measure` runs such a setting's bulk load as one statement only.

    Returns
    -------
    dict
        One row of ``loads``: ``method``, ``load`` (:func:`load_name`), ``path``
        (:data:`PATHS`), ``batch_rows`` (rows per statement: the largest), ``statements``,
        ``commits``, the times, rates and bytes.
    """
    keyed = not setting.key_after_load
    ddl = engine.tables.ddl(TABLE, COLUMNS, key=KEY if keyed else (), model=setting.model if keyed else "no_key")
    engine.execute(engine.sql.drop_table_sql(TABLE))
    if not setting.create_in_load:
        for statement in ddl:
            engine.execute(statement)
    call = _prepare(engine, method, data, ddl, setting, batch_rows=batch_rows, bulk_statements=bulk_statements)
    load = timing.timed(call)
    key_s = 0.0
    if setting.key_after_load:
        key_s = timing.timed(engine.execute, engine.sql.add_primary_key_sql(TABLE, KEY)).elapsed_ns / 1e9
    n = len(data.rows)
    counted = engine.tables.count_rows(TABLE)
    if counted != n:
        raise DataLossError(f"{engine.label} {method}: {TABLE} holds {counted} rows after writing {n}")
    if engine.has("settle"):
        engine.tables.settle(TABLE)
    statements, commits = counts(method, n, batch_rows, bulk_statements)
    seconds = load.elapsed_ns / 1e9 + key_s
    table_bytes = engine.tables.data_bytes(TABLE) if engine.has("data_bytes") else math.nan
    return {"method": method, "load": load_name(method, batch_rows, bulk_statements), "path": PATHS[method],
            "driver": driver_of(engine, method), "rows": n,
            "batch_rows": min(batch_rows, n) if method == "batches" else math.ceil(n / statements),
            "statements": statements, "commits": commits, "load_s": load.elapsed_ns / 1e9, "add_key_s": key_s,
            "seconds": seconds, "rows_per_s": n / seconds, "mb_per_s": n * ROW_BYTES / seconds / 1e6,
            "table_bytes": table_bytes, "table_mb_per_s": table_bytes / seconds / 1e6, "rows_counted": counted,
            "started_ns": load.started_ns}


def method_missing(cls: type[Engine], method: str) -> str | None:
    """Why engine class ``cls`` cannot load by ``method``, or None when it can.

    It lacks the method's step or capability (:data:`METHODS`), or the method is one transaction
    (:data:`PATHS`) and the engine commits each statement alone (its ``load_settings``' ``TRANSACTIONS``).

    Examples
    --------
    >>> from ingestlab.engines.clickhouse import ClickHouse
    >>> method_missing(ClickHouse, "batches") is None, method_missing(ClickHouse, "executemany")
    (True, 'no transaction of several statements: each statement commits alone')
    """
    step = METHODS[method][0]
    if step in capabilities.KINDS:
        reason = capabilities.missing(cls, step)
        if reason is not None:
            return reason
    elif not cls.has(step):
        return (missing_reason(cls, hook(step)) or (missing_reason(cls.SQL, step) if cls.SQL is not None else "no SQL")
                or f"no {step}")
    if PATHS[method] == "one_transaction" and not capabilities.of(cls, "load_settings").TRANSACTIONS:
        return "no transaction of several statements: each statement commits alone"
    return None


def driver_of(engine: Engine, method: str) -> str | None:
    """What sent ``method``'s load: the engine's driver, psycopg for the pipeline, or ``native client``."""
    if method == "native_client":
        return "native client"
    if method == "pipeline":
        return "psycopg"
    return engine.driver.name


def version_label(engine: Engine) -> tuple[str, str]:
    """(version, system): the server's version number and ``"<family> <version>"`` (``"postgres 15.18"``)."""
    version = engine.server_version().split()[0].split("-")[0]
    family = type(engine).VERSION_OF or engine.NAME
    return version, f"{family} {version}"


def measure(params: Params, run) -> dict[str, pd.DataFrame]:
    """Run notebook 05's loads end to end; each engine is started and stopped inside.

    First the disk's sequential write rate (:func:`ingestlab.disk.sequential_write`). Then per
    engine version (a version that cannot start here is reported once, in ``run.json``'s
    notes, and skipped), per setting: its settings are put in force, one warm-up load of
    each configuration (:func:`configurations`) with ``warmup_rows`` rows (kept, flagged),
    then ``runs`` rounds of every configuration (interleaved within a round). Each load is
    appended to ``loads`` at once.
    The disk's rate and each engine version × setting (its warm-up loads and its runs, which
    belong to one server session) are configurations of :meth:`~ingestlab.results.Run.once`:
    a resumed run measures only those not done.

    Returns
    -------
    dict
        ``loads`` (one row per load) and ``disk`` (the write rate).
    """
    def disk_once():
        run.append(pd.DataFrame([disk.sequential_write(_paths.scratch_dir(), SCALES[params.scale]["disk_mb"])]),
                   table="disk")
    disk_rate = run.once({"part": "disk"}, disk_once)["disk"]
    run.save_csv(disk_rate, "disk")
    data = make_data(params.rows)
    warm = make_data(params.warmup_rows, "warmup") if params.warmup_rows else None
    frames = []
    try:
        for spec in _expand(params.engines, params.versions):
            frames += _measure_target(spec, params, run, data, warm)
    finally:
        data.remove()
        if warm is not None:
            warm.remove()
    return {"loads": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), "disk": disk_rate}


def _note(run, text: str) -> None:
    print(text)
    run.note(text)


def _settings_of(cls: type[Engine]) -> dict:
    """The load settings of engine class ``cls`` (the server's defaults alone where it declares none)."""
    return capabilities.of(cls, "load_settings").SETTINGS


def _measure_target(spec: EngineSpec, params: Params, run, data: Data, warm: Data | None) -> list[pd.DataFrame]:
    target, cls, reason = spec.value, spec.engine_class(), spec.unavailable_reason()
    if reason:
        _note(run, f"{target}: skipped, this version cannot run here: {reason}")
        return []
    own = _settings_of(cls)
    settings = [s for s in (params.settings or list(own)) if s in own]
    missing = [s for s in (params.settings or []) if s not in own]
    if missing:
        _note(run, f"{target}: no setting {', '.join(missing)} on this engine")
    methods = [m for m in params.methods if method_missing(cls, m) is None]
    if len(methods) < len(params.methods):
        _note(run, f"{target}: without " + "; ".join(
            f"{m} ({method_missing(cls, m)})" for m in params.methods if m not in methods))
    frames = []
    engine = spec.engine()
    try:
        engine.start()
        version, system = version_label(engine)
        for name in settings:
            setting = own[name]
            engine.apply_settings(dict(setting.server))
            if setting.session:
                engine.set_session(dict(setting.session))
            run.record_engine(engine, setting=name, version=version, setting_description=setting.description,
                              server_flags_required=dict(setting.server_flags))
            if setting.server_flags:
                _note(run, f"{target} {name}: assumes the server was started with "
                           + ", ".join(f"{k}={v}" for k, v in setting.server_flags.items()) + " (not checked)")
            # a load that creates its table (COPY … FREEZE) is one statement: a second could not write frozen
            chosen = configurations([m for m in methods if setting.methods is None or m in setting.methods],
                                    params.batch_rows, (1,) if setting.create_in_load else params.bulk_statements)
            labels = {"target": target, "engine": engine.label, "version": version, "system": system, "setting": name}
            plan = [(-1, warm)] * bool(warm) + [(r, data) for r in range(params.repeats)]

            def setting_once(setting=setting, chosen=chosen, labels=labels, plan=plan, name=name):
                with progress.bar(total=len(plan) * len(chosen), desc=f"{system} {name}", unit="load") as bar:
                    for run_no, rows in plan:
                        for method, batch_rows, bulk_statements in chosen:
                            row = load_once(engine, method, setting, rows, batch_rows=batch_rows,
                                            bulk_statements=bulk_statements)
                            run.append(pd.DataFrame([{**labels, **row, "run": run_no, "warmup": run_no < 0}]),
                                       table="loads")
                            bar.update(1)
            frames += run.once(labels, setting_once).values()
    finally:
        engine.close()
    return frames


#: Notebook 05, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem=NOTEBOOK_STEM,
    question="Which way of loading one million rows is fastest, and what do the safety settings cost?",
    study="yugabytedb-million-row-insert.en.txt",
    measures="load time of one million rows per load method (multi-row INSERTs of each BATCH_ROWS, bulk loads in "
             "each BULK_STATEMENTS statements), safety setting and engine version, REPEATS times each (paper: 5)",
    headlines=("rows_per_s[", "overhead_us[", "disk_share[", "bulk_over_native["),
    smoke_time="1 min", paper_time="about 3 h",
    renamed={"RUNS": "REPEATS"},
    needs=("table_ddl",),
    validate=validate,
    measure=measure,
    plotters={"methods": "plot_methods",
              "versions": "plot_versions",
              "fit": "plot_fit"},
)
