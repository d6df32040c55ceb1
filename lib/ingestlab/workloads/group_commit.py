"""Notebook 04's workload: many clients writing small INSERTs at once, under commit-grouping variants."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ingestlab import datagen, progress, schedule
from ingestlab.concurrency import LOOPS, ClientRun, check_clients
from ingestlab.engine_specs import EngineSpec
from ingestlab.engines import Engine, capabilities, registry
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.errors import ClientCrashError, ConfigError, DataLossError, ServerError
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import EngineParams, engine_classes, items_of, one_of, positive_int

#: The notebook this workload serves (declared in full at the end: :data:`NOTEBOOK`).
NOTEBOOK_STEM = "04_group_commit"

#: Sizes per SCALE. ``paper``: the grid of the issue (1…64 clients, 1/10/100 rows per INSERT).
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"clients": (1, 4), "rows_per_insert": (1, 10), "duration_s": 0.5, "warmup_s": 0.1, "n_variants": 2},
    "paper": {"clients": (1, 2, 4, 8, 16, 32, 64), "rows_per_insert": (1, 10, 100), "duration_s": 3.0,
              "warmup_s": 0.5, "n_variants": None},
}
#: Most rows one INSERT may carry (PostgreSQL allows 65 535 parameters; 4 columns a row).
MAX_ROWS_PER_INSERT = 10_000
TABLE = "ingestlab_group_commit"
COLUMNS = [c for c, _ in STUDY_COLUMNS]
#: Columns of ``throughput.csv`` that identify a configuration.
CONFIG = ["engine", "variant", "loop", "clients", "rows_per_insert"]


@dataclasses.dataclass(frozen=True)
class Params(EngineParams):
    """Validated parameters of notebook 04 (see :func:`validate`)."""

    clients: tuple[int, ...]
    rows_per_insert: tuple[int, ...]
    variants: tuple[str, ...]
    duration_s: float
    warmup_s: float
    loop: str
    rate: float | None
    seed: int


def _ints(name: str, value: Any, check) -> tuple[int, ...]:
    items = items_of(value)
    out = []
    for item in items:
        if isinstance(item, str):
            try:
                item = int(item)
            except ValueError:
                raise ConfigError(name, item, "comma-separated integers") from None
        out.append(check(name, item))
    if not out:
        raise ConfigError(name, value, "a non-empty list of integers")
    return tuple(out)


def _rows(name: str, value: Any) -> int:
    n = positive_int(name, value)
    if n > MAX_ROWS_PER_INSERT:
        raise ConfigError(name, value, f"an integer from 1 to {MAX_ROWS_PER_INSERT}")
    return n


def _variants(classes: dict[EngineSpec, type[Engine]], value: Any, n_default: int | None) -> tuple[str, ...]:
    capabilities.require(NOTEBOOK.needs, classes, notebook=f"notebook {NOTEBOOK.id}")
    items = [v for v in items_of(value) if v]
    if not items:
        return tuple(dict.fromkeys(v for c in classes.values()
                                   for v in list(capabilities.of(c, "group_commit").VARIANTS)[:n_default]))
    known = list(dict.fromkeys(v for c in classes.values() for v in capabilities.of(c, "group_commit").VARIANTS))
    for item in items:
        if item not in known:
            owners = [c.NAME for c in registry.classes().values() if item in capabilities.of(c, "group_commit").VARIANTS]
            where = f" ({item} is a variant of {', '.join(owners)})" if owners else ""
            names = ", ".join(c.NAME for c in classes.values())
            raise ConfigError("VARIANTS", item, f"each one of {', '.join(known)} for {names}{where}")
    for spec, engine_cls in classes.items():
        if not variants_of(engine_cls, items):
            raise ConfigError("VARIANTS", ",".join(items), f"at least one variant of {spec}: "
                              + ", ".join(capabilities.of(engine_cls, "group_commit").VARIANTS))
    return tuple(items)


def variants_of(engine_cls: type[Engine], variants: Sequence[str]) -> list[str]:
    """The variants of ``variants`` that ``engine_cls`` has among its ``GROUP_COMMIT_VARIANTS``."""
    return [v for v in variants if v in capabilities.of(engine_cls, "group_commit").VARIANTS]


def validate(engines: Sequence[str] | str, scale: str = "smoke", clients: Sequence[int] | str | None = None,
             batch_rows: Sequence[int] | str | None = None, variants: Sequence[str] | str | None = None,
             duration_s: float | None = None, warmup_s: float | None = None, loop: str = "closed",
             rate: float | None = None, seed: int = 0) -> Params:
    """Check notebook 04's parameters without starting anything; return them resolved.

    Every bad value raises :class:`~ingestlab.errors.ConfigError` naming the parameter.
    ``None`` means "the SCALE's". ``CLIENTS`` go from 1 to
    :data:`~ingestlab.concurrency.MAX_CLIENTS`, ``BATCH_ROWS`` (rows per INSERT) from 1 to
    :data:`MAX_ROWS_PER_INSERT`; ``VARIANTS`` are the engine's ``GROUP_COMMIT_VARIANTS``
    (smoke: the first two); ``RATE`` (statements per second, all clients) is required by
    the open loop and refused by the closed one.
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    clients = _ints("CLIENTS", size["clients"] if clients is None else clients, lambda n, v: check_clients(v, n))
    rows = _ints("BATCH_ROWS", size["rows_per_insert"] if batch_rows is None else batch_rows, _rows)
    classes = engine_classes(engines)
    variants = _variants(classes, variants, size["n_variants"])
    duration_s = _seconds("DURATION_S", size["duration_s"] if duration_s is None else duration_s, positive=True)
    warmup_s = _seconds("WARMUP_S", size["warmup_s"] if warmup_s is None else warmup_s, positive=False)
    one_of("LOOP", loop, LOOPS)
    if loop == "open" and (isinstance(rate, bool) or not isinstance(rate, (int, float))
                           or not MIN_RATE <= rate <= MAX_RATE):  # also NaN and ±inf
        raise ConfigError("RATE", rate, f"statements per second from {MIN_RATE} to {MAX_RATE:,.0f} (all clients "
                                        "together) for LOOP='open'")
    if loop == "closed" and rate is not None:
        raise ConfigError("RATE", rate, "None with LOOP='closed' (clients send as fast as the engine answers)")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError("SEED", seed, "an integer")
    return Params(tuple(classes), scale, clients, rows, variants, duration_s, warmup_s, loop,
                  float(rate) if rate is not None else None, seed)


#: Longest measured (or warm-up) seconds per configuration: an hour; a grid multiplies it.
MAX_SECONDS = 3600.0
#: The open loop's bounds on RATE (statements per second, all clients): below, a client waits longer than
#: a run lasts for its first statement; above, no engine here keeps up and the loop is a closed one.
MIN_RATE, MAX_RATE = 0.01, 10_000_000.0


def _seconds(name: str, value: Any, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value == value or value < 0 \
            or (positive and value == 0) or value > MAX_SECONDS:
        raise ConfigError(name, value, "seconds " + ("> 0" if positive else "≥ 0") + f" and at most {MAX_SECONDS:g}")
    return float(value)


# -- measuring ------------------------------------------------------------------------------
#: Rounds each (engine, variant)'s grid is spread over (fewer when the grid has fewer configurations).
ROUNDS = 3


def measure(params: Params, run, *, on_start=None) -> dict[str, pd.DataFrame]:
    """Run the grid (engine × variant × rows per INSERT × clients); the engines are started and stopped inside.

    Every engine is started, then the run goes in **rounds** (:data:`ROUNDS`): each (engine,
    variant) arm's grid is shuffled once (from ``SEED`` and the arm) and split into as many
    shares as rounds, and a round measures one share of every arm, the arms in an order drawn
    afresh each round (:mod:`ingestlab.schedule`, kept in ``run.json`` → ``schedule``), so a
    drift of the machine falls on every engine, variant and grid point alike instead of on
    whichever came last. The server restarts when an arm's variant needs it. Per configuration
    the table is recreated empty, the engine's commit counters are read, the clients run
    (:class:`~ingestlab.concurrency.ClientRun`), the counters are read again and the table's
    rows are counted against the rows the clients saw acknowledged (warm-up included).
    Samples (one row per statement) go to ``results.parquet`` and the configuration's row
    to ``throughput.csv`` after each configuration, so an interrupted run keeps both (each
    configuration goes through :meth:`~ingestlab.results.Run.once`: a resumed run measures
    only those not done, in the same order, and ``throughput.parquet``, ``client_cpu.parquet``
    keep their rows); a client that crashes, or Ctrl-C, stops every client and the servers,
    keeps the samples received and leaves the run ``completed: false``.

    Returns
    -------
    dict
        ``samples`` (every statement), ``throughput`` (one row per configuration, in the grid's
        order) and ``cpu`` (one row per client and configuration).
    """
    out: dict[str, list[pd.DataFrame]] = {"samples": [], "throughput": [], "cpu": []}
    engines = [spec.engine() for spec in params.engines]
    grid = [(r, c) for r in params.rows_per_insert for c in params.clients]
    arms = [(i, variant) for i, engine in enumerate(engines) for variant in variants_of(type(engine), params.variants)]
    rounds = min(ROUNDS, len(grid))
    shares = {arm: np.array_split(np.random.default_rng([params.seed, k]).permutation(len(grid)), rounds)
              for k, arm in enumerate(arms)}
    in_force = schedule.InForce(run, lambda engine: capabilities.of(engine, "group_commit").VARIANTS)
    row = datagen.study_rows(1, start_id=0, seed=params.seed)[0]
    bar = progress.bar(total=len(arms) * len(grid), desc="group commit, engines and variants interleaved", unit="config")
    try:
        for engine in engines:
            engine.start()
        for rnd in range(rounds):
            ordered = schedule.order(arms, rnd, params.seed)
            schedule.record(run, rnd, [{"engine": engines[i].label, "variant": v} for i, v in ordered], params.seed)
            for i, variant in ordered:
                engine = in_force.put(engines[i], variant)
                for g in shares[(i, variant)][rnd]:
                    rows, clients = grid[g]
                    config = _configuration_once(engine, variant, row, params, run, clients=clients, rows=rows,
                                                 on_start=on_start)
                    for key, table in (("samples", "results"), ("throughput", "throughput"), ("cpu", "client_cpu")):
                        out[key].append(config[table])
                    run.save_csv(pd.concat(out["throughput"], ignore_index=True), "throughput")
                    bar.set_postfix_str(f"{engine.label} {variant} C={clients} R={rows}: "
                                        f"{config['throughput']['rows_per_s'].iloc[0]:,.0f} rows/s", refresh=False)
                    bar.update(1)
    finally:
        bar.close()
        for engine in engines:
            engine.close()
    tables = {k: pd.concat(v, ignore_index=True) for k, v in out.items()}
    rank = {"engine": {label: n for n, label in enumerate(dict.fromkeys(e.label for e in engines))},
            "variant": {v: n for n, v in enumerate(dict.fromkeys(v for _, v in arms))}}
    tables["throughput"] = tables["throughput"].sort_values(
        ["engine", "variant", "rows_per_insert", "clients"], key=lambda c: c.map(rank[c.name]) if c.name in rank else c,
        kind="stable", ignore_index=True)
    return tables


def _configuration_once(engine: Engine, variant: str, row: tuple, params: Params, run, *, clients: int, rows: int,
                        on_start=None) -> dict[str, pd.DataFrame]:
    """One configuration through :meth:`~ingestlab.results.Run.once` (a resumed run reads it back instead)."""
    labels = {"engine": engine.label, "variant": variant, "loop": params.loop, "clients": clients,
              "rows_per_insert": rows}

    def config_once():
        config = run_config(engine, row, params, clients=clients, rows=rows, labels=labels, run=run, on_start=on_start)
        run.append(config["throughput"], table="throughput")
        run.append(config["cpu"], table="client_cpu")
    return run.once(labels, config_once)


def run_config(engine, row: tuple, params: Params, *, clients: int, rows: int, labels: dict, run,
               on_start=None) -> dict[str, pd.DataFrame]:
    """One configuration: clients write for the warm-up and the duration; samples, throughput row and CPU."""
    engine.tables.reset(TABLE, STUDY_COLUMNS)
    counters = engine.has("commit_counters")
    before = engine.capability("commit_counters").read() if counters else {}
    driver = ClientRun(engine, TABLE, COLUMNS, row, clients=clients, rows_per_insert=rows, warmup_s=params.warmup_s,
                       duration_s=params.duration_s, loop=params.loop, rate=params.rate, on_start=on_start)
    try:
        driver.run()
    except (ClientCrashError, ServerError, KeyboardInterrupt) as exc:
        partial = driver.samples().assign(**labels)
        run.append(partial)
        run.note(f"{labels}: stopped ({type(exc).__name__}: {exc}); {len(partial)} statements kept, "
                 "the run is incomplete")
        raise
    samples = driver.samples().assign(**labels, measure_start_ns=driver.measure_start_ns)
    run.append(samples)
    acknowledged = int(samples["rows"].sum())
    written = engine.tables.count_rows(TABLE)
    if written != acknowledged:
        raise DataLossError(f"{labels}: the table holds {written} rows, the clients saw {acknowledged} acknowledged")
    deltas = {}
    if counters:
        after = engine.capability("commit_counters").read()
        deltas = {k: after[k] - before.get(k, np.nan) for k in after}
    cpu = driver.cpu_table().assign(**labels)
    row_out = config_row(samples, deltas, cpu, labels, parent_cpu_ns=driver.parent_cpu_ns,
                         measure_start_ns=driver.measure_start_ns)
    return {"samples": samples, "throughput": row_out, "cpu": cpu}


def config_row(samples: pd.DataFrame, deltas: dict, cpu: pd.DataFrame, labels: dict, *, parent_cpu_ns: int,
               measure_start_ns: int) -> pd.DataFrame:
    """The configuration's line of ``throughput.csv`` from its statements and the counters' changes.

    Throughput counts the measured statements (started after the warm-up) over the span from
    the warm-up's end to the last one's end. ``commits`` are every statement the clients saw
    acknowledged (warm-up included: each autocommit INSERT is one commit), against the
    engine's ``flushes`` over the same span: ``commits_per_flush``.
    """
    measured = samples[~samples["warmup"]]
    ends = measured["started_ns"] + measured["elapsed_s"] * 1e9
    window_s = float((ends.max() - measure_start_ns) / 1e9) if len(measured) else np.nan
    flushes = deltas.get("flushes", np.nan)
    out = {**labels, "window_s": window_s, "statements": len(measured), "rows": int(measured["rows"].sum()),
           "bytes": int(measured["bytes"].sum()),
           "statements_per_s": len(measured) / window_s, "rows_per_s": measured["rows"].sum() / window_s,
           "mb_per_s": measured["bytes"].sum() / window_s / 1e6,
           "latency_median_ms": measured["latency_s"].median() * 1e3,
           "latency_p99_ms": measured["latency_s"].quantile(0.99) * 1e3,
           "service_median_ms": measured["elapsed_s"].median() * 1e3,
           "commits": len(samples), "flushes": flushes,
           "commits_per_flush": len(samples) / flushes if flushes and flushes > 0 else np.nan,
           "client_cpu_us_per_statement": float(cpu["cpu_ns"].sum() / max(cpu["statements"].sum(), 1) / 1e3),
           "client_cpu_share_max": float(cpu["cpu_share"].max()) if len(cpu) else np.nan,
           "driver_cpu_s": parent_cpu_ns / 1e9, "warmup_statements": int(samples["warmup"].sum())}
    out.update({f"counter_{k}": v for k, v in deltas.items() if k != "flushes"})
    return pd.DataFrame([out])


#: Notebook 04, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem=NOTEBOOK_STEM,
    question="How much does grouping commits of many clients into one log flush buy?",
    study="doris-group-commit.en.txt",
    measures="throughput and latency of concurrent clients per commit-grouping variant, rows per INSERT and "
             "client count, with commits per log flush",
    headlines=("commits_per_flush[", "rows_per_s[", "best_speedup", "flush_ms["),
    smoke_time="1 min", paper_time="about 1 h",
    renamed={"ROWS_PER_INSERT": "BATCH_ROWS"},
    needs=("group_commit",),
    validate=validate,
    measure=measure,
    article=("throughput", "commits_per_flush", "live_vs_published"),
    plotters={"throughput": "plot_throughput",
              "latency": "plot_latency",
              "commits_per_flush": "plot_commits_per_flush",
              "live_vs_published": "ingestlab.plots:plot_bars"},
)
