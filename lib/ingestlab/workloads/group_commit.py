"""Notebook 04's workload: many clients writing small INSERTs at once, under commit-grouping variants."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ingestlab import datagen, models, progress, report
from ingestlab.concurrency import LOOPS, ClientRun, check_clients
from ingestlab.engines import Engine
from ingestlab.engines.base import SEED_COLUMNS
from ingestlab.errors import ClientCrashError, ConfigError, DataLossError
from ingestlab.workloads._params import ParamsBase, items_of, one_of, positive_int

#: Sizes per SCALE. ``paper``: the grid of the issue (1…64 clients, 1/10/100 rows per INSERT).
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"clients": (1, 4), "rows_per_insert": (1, 10), "duration_s": 1.0, "warmup_s": 0.25, "n_variants": 2},
    "paper": {"clients": (1, 2, 4, 8, 16, 32, 64), "rows_per_insert": (1, 10, 100), "duration_s": 3.0,
              "warmup_s": 0.5, "n_variants": None},
}
#: Most rows one INSERT may carry (PostgreSQL allows 65 535 parameters; 4 columns a row).
MAX_ROWS_PER_INSERT = 10_000
#: The concurrency of the headline comparison (the largest level run when it is not among them).
HEADLINE_CLIENTS = 32
#: Width of the windows whose throughputs give the speed-ups' bootstrap CIs.
WINDOW_S = 0.1
#: Share of its wall clock a client may spend on CPU before the notebook calls it CPU-bound.
CPU_BOUND_SHARE = 0.8
#: Share of the best throughput from which a configuration counts as saturated.
SATURATION_SHARE = 0.9
TABLE = "ingestlab_group_commit"
COLUMNS = [c for c, _ in SEED_COLUMNS]
#: Columns of ``throughput.csv`` that identify a configuration.
CONFIG = ["engine", "variant", "loop", "clients", "rows_per_insert"]


@dataclasses.dataclass(frozen=True)
class Params(ParamsBase):
    """Validated parameters of notebook 04 (see :func:`validate`)."""

    target: str
    scale: str
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


def _variants(target: str, value: Any, n_default: int | None) -> tuple[str, ...]:
    engine_cls = Engine.class_of(target)
    known = list(engine_cls.GROUP_COMMIT_VARIANTS)
    if not known:
        raise ConfigError("TARGET", target, f"an engine with commit-grouping variants ({engine_cls.NAME}: "
                                            f"{engine_cls.GROUP_COMMIT_NOTE or 'none declared'})")
    items = items_of(value)
    items = [v for v in items if v] or known[:n_default]
    for item in items:
        if item not in known:
            owners = [c.NAME for c in Engine.classes().values() if item in c.GROUP_COMMIT_VARIANTS]
            where = f" ({item} is a variant of {', '.join(owners)})" if owners else ""
            raise ConfigError("VARIANTS", item, f"each one of {', '.join(known)} for {engine_cls.NAME}{where}")
    return tuple(items)


def validate(target: str = "postgres", scale: str = "smoke", clients: Sequence[int] | str | None = None,
             rows_per_insert: Sequence[int] | str | None = None, variants: Sequence[str] | str | None = None,
             duration_s: float | None = None, warmup_s: float | None = None, loop: str = "closed",
             rate: float | None = None, seed: int = 0) -> Params:
    """Check notebook 04's parameters without starting anything; return them resolved.

    Every bad value raises :class:`~ingestlab.errors.ConfigError` naming the parameter.
    ``None`` means "the SCALE's". ``CLIENTS`` go from 1 to
    :data:`~ingestlab.concurrency.MAX_CLIENTS`, ``ROWS_PER_INSERT`` from 1 to
    :data:`MAX_ROWS_PER_INSERT`; ``VARIANTS`` are the engine's ``GROUP_COMMIT_VARIANTS``
    (smoke: the first two); ``RATE`` (statements per second, all clients) is required by
    the open loop and refused by the closed one.

    Examples
    --------
    >>> validate("postgres").clients
    (1, 4)
    >>> validate("postgres", clients="0")
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: CLIENTS=0 is not valid: expected an integer from 1 to 96 (MAX_CLIENTS: the lab's PostgreSQL accepts 100 connections)
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    clients = _ints("CLIENTS", size["clients"] if clients is None else clients, lambda n, v: check_clients(v, n))
    rows = _ints("ROWS_PER_INSERT", size["rows_per_insert"] if rows_per_insert is None else rows_per_insert, _rows)
    variants = _variants(target, variants, size["n_variants"])
    duration_s = _seconds("DURATION_S", size["duration_s"] if duration_s is None else duration_s, positive=True)
    warmup_s = _seconds("WARMUP_S", size["warmup_s"] if warmup_s is None else warmup_s, positive=False)
    one_of("LOOP", loop, LOOPS)
    if loop == "open" and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0):
        raise ConfigError("RATE", rate, "statements per second > 0 (all clients together) for LOOP='open'")
    if loop == "closed" and rate is not None:
        raise ConfigError("RATE", rate, "None with LOOP='closed' (clients send as fast as the engine answers)")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError("SEED", seed, "an integer")
    return Params(target, scale, clients, rows, variants, duration_s, warmup_s, loop,
                  float(rate) if rate is not None else None, seed)


def _seconds(name: str, value: Any, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (positive and value == 0):
        raise ConfigError(name, value, "seconds " + ("> 0" if positive else "≥ 0"))
    return float(value)


# -- measuring ------------------------------------------------------------------------------
def measure(params: Params, run, *, on_start=None) -> dict[str, pd.DataFrame]:
    """Run the grid (variant × rows per INSERT × clients); the engine is started and stopped inside.

    Per variant the server restarts with the variant's settings; per configuration the table
    is recreated empty, the engine's commit counters are read, the clients run
    (:class:`~ingestlab.concurrency.ClientRun`), the counters are read again and the table's
    rows are counted against the rows the clients saw acknowledged (warm-up included).
    Samples (one row per statement) go to ``results.parquet`` and the configuration's row
    to ``throughput.csv`` after each configuration, so an interrupted run keeps both (each
    configuration goes through :meth:`~ingestlab.results.Run.once`: a resumed run measures
    only those not done, and ``throughput.parquet``, ``client_cpu.parquet`` keep their rows); a
    client that crashes, or Ctrl-C, stops every client and the server, keeps the samples
    received and leaves the run ``completed: false``.

    Returns
    -------
    dict
        ``samples`` (every statement), ``throughput`` (one row per configuration) and
        ``cpu`` (one row per client and configuration).
    """
    engine = Engine.resolve(params.target)
    out: dict[str, list[pd.DataFrame]] = {"samples": [], "throughput": [], "cpu": []}
    row = datagen.seed_rows(1, start_id=0, seed=params.seed)[0]
    grid = [(r, c) for r in params.rows_per_insert for c in params.clients]
    bar = progress.bar(total=len(params.variants) * len(grid), desc=f"{engine.label} group commit", unit="config")
    try:
        engine.start()
        for variant in params.variants:
            engine.apply_settings(engine.GROUP_COMMIT_VARIANTS[variant])
            run.record_engine(engine, variant=variant)
            for rows, clients in grid:
                labels = {"engine": engine.label, "variant": variant, "loop": params.loop, "clients": clients,
                          "rows_per_insert": rows}
                def config_once(clients=clients, rows=rows, labels=labels):
                    config = run_config(engine, row, params, clients=clients, rows=rows, labels=labels, run=run,
                                        on_start=on_start)
                    run.append(config["throughput"], table="throughput")
                    run.append(config["cpu"], table="client_cpu")
                config = run.once(labels, config_once)
                for key, table in (("samples", "results"), ("throughput", "throughput"), ("cpu", "client_cpu")):
                    out[key].append(config[table])
                run.save_csv(pd.concat(out["throughput"], ignore_index=True), "throughput")
                bar.set_postfix_str(f"{variant} C={clients} R={rows}: {config['throughput']['rows_per_s'].iloc[0]:,.0f} rows/s",
                                    refresh=False)
                bar.update(1)
    finally:
        bar.close()
        engine.close()
    return {k: pd.concat(v, ignore_index=True) for k, v in out.items()}


def run_config(engine, row: tuple, params: Params, *, clients: int, rows: int, labels: dict, run,
               on_start=None) -> dict[str, pd.DataFrame]:
    """One configuration: clients write for the warm-up and the duration; samples, throughput row and CPU."""
    engine.reset_table(TABLE, SEED_COLUMNS)
    counters = engine.has("commit_counters")
    before = engine.commit_counters() if counters else {}
    driver = ClientRun(engine, TABLE, COLUMNS, row, clients=clients, rows_per_insert=rows, warmup_s=params.warmup_s,
                       duration_s=params.duration_s, loop=params.loop, rate=params.rate, on_start=on_start)
    try:
        driver.run()
    except (ClientCrashError, KeyboardInterrupt) as exc:
        partial = driver.samples().assign(**labels)
        run.append(partial)
        run.note(f"{labels}: stopped ({type(exc).__name__}: {exc}); {len(partial)} statements kept, "
                 "the run is incomplete")
        raise
    samples = driver.samples().assign(**labels, measure_start_ns=driver.measure_start_ns)
    run.append(samples)
    acknowledged = int(samples["rows"].sum())
    written = engine.count_rows(TABLE)
    if written != acknowledged:
        raise DataLossError(f"{labels}: the table holds {written} rows, the clients saw {acknowledged} acknowledged")
    deltas = {}
    if counters:
        after = engine.commit_counters()
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


# -- analysis -------------------------------------------------------------------------------
def per_second(samples: pd.DataFrame) -> pd.DataFrame:
    """Rows, bytes and statements per client and second of the measured span (by completion time)."""
    measured = samples[~samples["warmup"]]
    second = ((measured["started_ns"] + measured["elapsed_s"] * 1e9 - measured["measure_start_ns"]) // 1e9)
    return (measured.assign(second=second.astype(int))
            .groupby([*CONFIG, "client", "second"], sort=False)
            .agg(statements=("rows", "size"), rows=("rows", "sum"), bytes=("bytes", "sum")).reset_index())


def window_throughput(samples: pd.DataFrame, width_s: float = WINDOW_S) -> pd.DataFrame:
    """Rows per second of all clients together in consecutive windows of ``width_s`` (complete windows only)."""
    measured = samples[~samples["warmup"]]
    end = measured["started_ns"] + measured["elapsed_s"] * 1e9 - measured["measure_start_ns"]
    framed = measured.assign(window=(end // (width_s * 1e9)).astype(int))
    counts = framed.groupby([*CONFIG, "window"], sort=False)["rows"].sum().reset_index()
    last = counts.groupby(CONFIG, sort=False)["window"].transform("max")
    return counts[counts["window"] < last].assign(rows_per_s=lambda d: d["rows"] / width_s)


def headline_clients(throughput: pd.DataFrame) -> int:
    """The concurrency of the headline: :data:`HEADLINE_CLIENTS` if run, else the largest run."""
    levels = throughput["clients"].unique()
    return HEADLINE_CLIENTS if HEADLINE_CLIENTS in levels else int(levels.max())


def speedups(samples: pd.DataFrame, throughput: pd.DataFrame, *, clients: int | None = None,
             rows_per_insert: int | None = None) -> pd.DataFrame:
    """Each variant's rows/s over the first variant's (the default) at one configuration, with bootstrap CIs.

    The CI resamples the windows' throughputs (:func:`window_throughput`): the mean window
    of one variant over the mean window of the other.
    """
    clients = clients or headline_clients(throughput)
    rows_per_insert = rows_per_insert or int(throughput["rows_per_insert"].min())
    windows = window_throughput(samples)
    at = windows[(windows["clients"] == clients) & (windows["rows_per_insert"] == rows_per_insert)]
    out = []
    for engine, part in at.groupby("engine", sort=False):
        variants = list(dict.fromkeys(part["variant"]))
        base = part[part["variant"] == variants[0]]["rows_per_s"]
        for variant in variants[1:]:
            r = models.ratio_ci(part[part["variant"] == variant]["rows_per_s"], base, statistic=np.mean)
            out.append({"engine": engine, "variant": variant, "baseline": variants[0], "clients": clients,
                        "rows_per_insert": rows_per_insert, "speedup": r["ratio"], "ci_low": r["ci_low"],
                        "ci_high": r["ci_high"], "n_windows": r["n_a"], "n_windows_baseline": r["n_b"]})
    return pd.DataFrame(out)


def batching_speedup(samples: pd.DataFrame, throughput: pd.DataFrame) -> pd.DataFrame:
    """Client-side batching, the reference every user can do: rows/s at the most rows per INSERT over one row.

    At one client, in each variant; CI from the windows as in :func:`speedups`.
    """
    windows = window_throughput(samples)
    lo, hi = throughput["rows_per_insert"].min(), throughput["rows_per_insert"].max()
    at = windows[windows["clients"] == windows["clients"].min()]
    out = []
    for (engine, variant), part in at.groupby(["engine", "variant"], sort=False):
        r = models.ratio_ci(part[part["rows_per_insert"] == hi]["rows_per_s"],
                            part[part["rows_per_insert"] == lo]["rows_per_s"], statistic=np.mean)
        out.append({"engine": engine, "variant": variant, "clients": int(at["clients"].min()),
                    "rows_per_insert": hi, "baseline_rows_per_insert": lo, "speedup": r["ratio"],
                    "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    return pd.DataFrame(out)


def fit(throughput: pd.DataFrame) -> pd.DataFrame:
    """``ms_per_statement = fixed + flush × flush_share + per_row × rows_per_insert`` per engine × variant.

    ``ms_per_statement`` is the time the system spends per statement, 1000 / statements/s;
    ``flush_share`` = 1 / commits_per_flush is the part of one log flush each commit pays
    (1: every commit its own; ½: two share one). So ``flush`` is the overhead that grouping
    divides, ``per_row`` the cost that no grouping removes, ``fixed`` the rest of a
    statement. OLS with HC3 CIs (:func:`ingestlab.models.fit_terms`); where the engine
    reports no flushes, ``flush_share`` is left out.
    """
    data = throughput.assign(ms_per_statement=1e3 / throughput["statements_per_s"],
                             flush_share=1 / throughput["commits_per_flush"])
    return models.fit_terms(data, y="ms_per_statement", terms=["flush_share", "rows_per_insert"],
                            by=["engine", "variant"])


def saturation(throughput: pd.DataFrame) -> pd.DataFrame:
    """Per engine × variant × rows per INSERT: the most statements/s and the fewest clients reaching
    :data:`SATURATION_SHARE` of it (the saturation point)."""
    out = []
    for key, part in throughput.groupby(["engine", "variant", "rows_per_insert"], sort=False):
        best = part["statements_per_s"].max()
        sat = part[part["statements_per_s"] >= SATURATION_SHARE * best]["clients"].min()
        out.append(dict(zip(["engine", "variant", "rows_per_insert"], key), max_statements_per_s=best,
                        max_rows_per_s=part["rows_per_s"].max(), saturation_clients=int(sat)))
    return pd.DataFrame(out)


def published_speedups() -> pd.DataFrame:
    """The seed's group-commit speed-ups from ``data/published``: async over off, and the interval's effect."""
    from ingestlab import published

    stream = published.load("doris_group_commit_stream_load").set_index(["group_commit_mode", "request_printed",
                                                                          "concurrency"])["rows_per_s"]
    small = published.load("doris_group_commit_sync_small_batch")
    small = small[small["nereids_planner"].astype(str) == "True"].set_index(
        ["concurrency", "group_commit_interval_ms"])["rows_per_s"]
    rows = [("Doris Stream Load 1 MB, 10 clients: async over off", stream[("async", "1 MB", 10)] / stream[("off", "1 MB", 10)]),
            ("Doris Stream Load 10 MB, 10 clients: async over off", stream[("async", "10 MB", 10)] / stream[("off", "10 MB", 10)]),
            ("Doris sync 1-row INSERT, 30 clients: interval 10 ms over 100 ms", small[(30, 10)] / small[(30, 100)]),
            ("Doris sync 1-row INSERT, 500 clients: interval 10 ms over 100 ms", small[(500, 10)] / small[(500, 100)])]
    return pd.DataFrame([{"quantity": q, "speedup": v, "ci_low": np.nan, "ci_high": np.nan,
                          "source": "published (seed table, Doris 3.0.1)"} for q, v in rows])


def live_vs_published(speedup: pd.DataFrame, batching: pd.DataFrame) -> pd.DataFrame:
    """The seed's speed-ups beside the live grouping and batching speed-ups, one row per quantity."""
    live = [{"quantity": f"{r.engine} {r.variant} over {r.baseline}, {r.clients} clients, {r.rows_per_insert}-row INSERT",
             "speedup": r.speedup, "ci_low": r.ci_low, "ci_high": r.ci_high, "source": "live (this run)"}
            for r in speedup.itertuples()]
    live += [{"quantity": f"{r.engine} {r.variant}: {r.rows_per_insert} rows per INSERT over "
                          f"{r.baseline_rows_per_insert}, {r.clients} client",
              "speedup": r.speedup, "ci_low": r.ci_low, "ci_high": r.ci_high, "source": "live (this run)"}
             for r in batching.itertuples()]
    return pd.concat([published_speedups(), pd.DataFrame(live)], ignore_index=True)


def doris_groups(replies: Sequence[str]) -> pd.DataFrame:
    """Doris INSERT or Stream Load replies (text, as the server wrote them) grouped by transaction.

    Under ``sync_mode``/``async_mode`` statements that share a group get the same ``TxnId``
    and a ``group_commit_…`` label, so statements per transaction is Doris's commits per
    flush. Parsed by :mod:`ingestlab.profiles.stream_load` (``TxnId``/``txnId``, ``Label``,
    ``GroupCommit``).

    Returns
    -------
    pandas.DataFrame
        One row per ``txn_id``: ``label``, ``statements``, ``group_commit`` (label or flag says so).
    """
    from ingestlab.profiles import stream_load

    parsed = pd.DataFrame([stream_load.parse(text).summary for text in replies])
    parsed["group_commit"] = parsed.get("group_commit", pd.Series(False, index=parsed.index)).fillna(False).astype(bool) \
        | parsed["label"].astype(str).str.startswith("group_commit")
    return (parsed.groupby("txn_id", sort=False)
            .agg(label=("label", "first"), statements=("label", "size"), group_commit=("group_commit", "all"))
            .reset_index())


# -- what the notebook says -----------------------------------------------------------------
def describe_grid(params: Params, throughput: pd.DataFrame, cpu: pd.DataFrame) -> list[str]:
    """What ran, how many statements, and whether the client (not the engine) could have been the limit."""
    busiest = cpu["cpu_share"].max()
    return [f"{len(throughput)} configurations ({', '.join(params.variants)} × clients {list(params.clients)} × "
            f"rows per INSERT {list(params.rows_per_insert)}), {params.loop} loop, {params.warmup_s:g} s warm-up "
            f"(kept, flagged) + {params.duration_s:g} s each: {int(throughput['statements'].sum()):,} measured "
            f"statements, {int(throughput['warmup_statements'].sum()):,} warm-up.",
            f"Each client is its own process: one client used {cpu['cpu_ns'].sum() / max(cpu['statements'].sum(), 1) / 1e3:.0f} µs "
            f"of CPU per statement (median over configurations "
            f"{throughput['client_cpu_us_per_statement'].median():.0f} µs) and at most {busiest:.0%} of its wall "
            "clock, " + ("so no client was CPU-bound" if busiest < CPU_BOUND_SHARE else
                         "so some client was near CPU-bound and may have limited its configuration's rate")
            + "; with more clients than the machine's cores the clients do share the cores with the server."]


def describe_grouping(throughput: pd.DataFrame) -> list[str]:
    """Commits per flush per variant at the fewest and the most clients, for one-row INSERTs."""
    one = throughput[throughput["rows_per_insert"] == throughput["rows_per_insert"].min()]
    lo, hi = one["clients"].min(), one["clients"].max()
    lines = []
    for (engine, variant), part in one.groupby(["engine", "variant"], sort=False):
        cpf = part.set_index("clients")["commits_per_flush"]
        lines.append(f"**{engine} {variant}**: {cpf.get(lo, np.nan):.2f} commits per flush at {lo} client"
                     f"{'s' if lo > 1 else ''}, {cpf.get(hi, np.nan):.2f} at {hi}")
    return lines


def describe_fit(fits: pd.DataFrame, sat: pd.DataFrame) -> list[str]:
    """Per engine × variant the fitted flush cost, per-row cost and fixed rest, and the saturation point."""
    lines = []
    for (engine, variant), part in fits.groupby(["engine", "variant"], sort=False):
        t = part.set_index("term")
        terms = [f"{name} {report.format_estimate(t.loc[term, 'estimate'], t.loc[term, 'ci_low'], t.loc[term, 'ci_high'], unit=unit)}"
                 for term, name, unit in (("flush_share", "flush", "ms"), ("rows_per_insert", "per row", "ms"),
                                          ("intercept", "fixed", "ms"))
                 if np.isfinite(t.loc[term, "estimate"])]
        s = sat[(sat["engine"] == engine) & (sat["variant"] == variant)]
        points = ", ".join(f"{r.saturation_clients} clients at {r.rows_per_insert} row{'s' if r.rows_per_insert > 1 else ''}"
                           for r in s.itertuples())
        lines.append(f"**{engine} {variant}**: " + "; ".join(terms)
                     + f" (R² {t['r2'].iloc[0]:.3f}, {int(t['n_points'].iloc[0])} configurations); saturated from "
                     + points + ".")
    return lines


def describe_speedups(speedup: pd.DataFrame, batching: pd.DataFrame) -> list[str]:
    """The best grouping variant's gain over the default with its CI, and client batching beside it."""
    if speedup.empty:
        return ["Only one variant ran: no grouping speed-up to state."]
    best = speedup.loc[speedup["speedup"].idxmax()]
    lines = [f"Best variant at {best['clients']} clients, {best['rows_per_insert']}-row INSERTs: **{best['variant']}**, "
             f"{report.format_estimate(best['speedup'], best['ci_low'], best['ci_high'], unit='×')} the throughput of "
             f"**{best['baseline']}** (95 % bootstrap CI over {int(best['n_windows'])} windows of {WINDOW_S:g} s)."]
    lines += [f"{r.variant}: {report.format_estimate(r.speedup, r.ci_low, r.ci_high, unit='×')}"
              for r in speedup.itertuples() if r.variant != best["variant"]]
    lines += [f"Client-side batching ({r.variant}, {r.clients} client): {r.rows_per_insert} rows per INSERT give "
              f"{report.format_estimate(r.speedup, r.ci_low, r.ci_high, unit='×')} the rows/s of "
              f"{r.baseline_rows_per_insert}." for r in batching.itertuples()]
    return lines


def headline(throughput: pd.DataFrame, speedup: pd.DataFrame, fits: pd.DataFrame) -> dict[str, float]:
    """The run's headline numbers: commits per flush at the headline concurrency, the best speed-up, the flush cost."""
    clients = headline_clients(throughput)
    one = throughput[(throughput["clients"] == clients)
                     & (throughput["rows_per_insert"] == throughput["rows_per_insert"].min())]
    out = {f"commits_per_flush[{r.engine} {r.variant} C={clients}]": float(r.commits_per_flush)
           for r in one.itertuples()}
    out.update({f"rows_per_s[{r.engine} {r.variant} C={clients}]": float(r.rows_per_s) for r in one.itertuples()})
    if not speedup.empty:
        best = speedup.loc[speedup["speedup"].idxmax()]
        out.update({"best_variant": best["variant"], "best_speedup": float(best["speedup"]),
                    "best_speedup_ci_low": float(best["ci_low"]), "best_speedup_ci_high": float(best["ci_high"])})
    flush = fits[fits["term"] == "flush_share"]
    out.update({f"flush_ms[{r.engine} {r.variant}]": float(r.estimate) for r in flush.itertuples()})
    return out


def plot_throughput(throughput: pd.DataFrame):
    """Rows/s against clients (log x), a line per variant, a panel per rows per INSERT."""
    from ingestlab import figures

    return figures.plot_by_clients(throughput, y="rows_per_s", hue="variant", col="rows_per_insert", logy=True)


def plot_latency(throughput: pd.DataFrame):
    """P50 and P99 latency against clients, a line per variant, a panel per percentile (one-row INSERTs)."""
    from ingestlab import figures

    one = throughput[throughput["rows_per_insert"] == throughput["rows_per_insert"].min()]
    long = one.melt(id_vars=["variant", "clients"], value_vars=["latency_median_ms", "latency_p99_ms"],
                    var_name="percentile", value_name="latency_ms")
    long["percentile"] = long["percentile"].map({"latency_median_ms": "P50", "latency_p99_ms": "P99"})
    return figures.plot_by_clients(long, y="latency_ms", hue="variant", col="percentile", logy=True)


def plot_commits_per_flush(throughput: pd.DataFrame):
    """Commits per flush against clients, a line per variant, a panel per rows per INSERT."""
    from ingestlab import figures

    return figures.plot_by_clients(throughput, y="commits_per_flush", hue="variant", col="rows_per_insert",
                                   logy=True)
