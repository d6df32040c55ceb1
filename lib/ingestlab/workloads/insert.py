"""Notebook 01's workload: the study's INSERT scenarios, timed per statement, per commit variant."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ingestlab import datagen, placement, precision, progress, schedule
from ingestlab.engines import Engine, capabilities
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.errors import ConfigError, DataLossError, FitLeftOut, UnsupportedOperationError
from ingestlab.timing import time_calls
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import (
    MAX_MINUTES,
    MAX_REPEATS,
    EngineParams,
    engine_classes,
    one_of,
    positive_int,
    positive_number,
    precision_target,
    subset,
)

#: The notebook this workload serves (declared in full at the end: :data:`NOTEBOOK`).
NOTEBOOK_STEM = "01_insert_anatomy"

#: Scenario name → rows per INSERT statement (None: one statement for all rows).
SCENARIOS: dict[str, int | None] = {
    "single_row": 1,
    "batch_100": 100,
    "batch_1000": 1000,
    "insert_select": None,
    "bulk": None,
}
#: Scenarios of the ``INSERT … VALUES`` family, which the overhead fit uses (as the study does).
FIT_SCENARIOS = ("single_row", "batch_100", "batch_1000")
#: Sizes per SCALE. ``paper`` is the study's: 1 000 rows, 30 profiled statements.
#: ``repeats`` is the count of rounds, or with a ``precision`` (relative half-width of each headline's
#: 95 % interval) the least count, the run going on until the precision or ``max_minutes``.
SCALES: dict[str, dict] = {
    "smoke": {"n": 500, "repeats": 3, "warmup": 20, "profile_n": 3, "precision": None, "max_minutes": 2.0},
    "paper": {"n": 1000, "repeats": 5, "warmup": 20, "profile_n": 30, "precision": 0.05, "max_minutes": 20.0},
}
TABLE, SOURCE = "ingestlab_insert", "ingestlab_insert_source"
#: The table the anatomy's statements write (the samples' table must hold exactly their rows).
ANATOMY_TABLE = "ingestlab_insert_anatomy"
#: Unobserved single-row INSERTs after each profiled one (the first three settle): the statement as the
#: samples time it, against which the observer's cost is measured (see ``ProfiledStatement.anatomy``).
#: Long blocks keep the settling statements' share of the block-wide counters (PostgreSQL's) small, and
#: reach the pace of the samples' long runs, which engines reach only after about a hundred statements
#: (bench/README.md, "Measurements behind the code's rules").
UNOBSERVED_BLOCK = 200
#: Single-row INSERTs into :data:`ANATOMY_TABLE` after each anatomy pass, timed by no one, so that the samples'
#: next run does not start right after the pass's reads, which slow its first samples (bench/README.md).
SETTLE_AFTER_PASS = 10


@dataclasses.dataclass(frozen=True)
class Params(EngineParams):
    """Validated parameters of notebook 01 (see :func:`validate`)."""

    n: int
    repeats: int
    warmup: int
    profile_n: int
    scenarios: tuple[str, ...]
    variants: tuple[str, ...]
    seed: int
    precision: float | None = None
    max_minutes: float = 2.0


#: Largest N: the rows of a scenario are generated in memory (about 100 bytes each).
MAX_N = 10_000_000
#: Most profiled INSERTs (the paper scale profiles 30; each brings :data:`UNOBSERVED_BLOCK` unobserved ones).
MAX_PROFILE_N = 200


def validate(engines: Sequence[str] | str, scale: str = "smoke", n: int | None = None,
             scenarios: Sequence[str] | str | None = None, variants: Sequence[str] | str | None = None,
             repeats: int | None = None, warmup: int | None = None, profile_n: int | None = None,
             seed: int = 0, precision: float | str | None = "scale", max_minutes: float | None = None) -> Params:
    """Check notebook 01's parameters without starting anything; return them resolved.

    Every bad value raises :class:`~ingestlab.errors.ConfigError` naming the parameter,
    the value and what is accepted. ``None`` means "the SCALE's size" / "all".
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    n = positive_int("N", size["n"] if n is None else n)
    repeats = positive_int("REPEATS", size["repeats"] if repeats is None else repeats, most=MAX_REPEATS)
    warmup = positive_int("WARMUP", size["warmup"] if warmup is None else warmup, allow_zero=True, most=MAX_N)
    profile_n = positive_int("PROFILE_N", size["profile_n"] if profile_n is None else profile_n, allow_zero=True)
    if profile_n > MAX_PROFILE_N:
        raise ConfigError("PROFILE_N", profile_n, f"an integer from 0 to {MAX_PROFILE_N} (each profiled INSERT brings "
                          f"{UNOBSERVED_BLOCK} unobserved ones)")
    scenarios = subset("SCENARIOS", list(SCENARIOS) if scenarios is None else scenarios, list(SCENARIOS))
    if n > MAX_N:  # every row is generated in memory first
        raise ConfigError("N", n, f"an integer from 1 to {MAX_N:,} (the rows are generated in memory)")
    if len({statement_count(s, n) for s in scenarios}) < 2:
        raise ConfigError("SCENARIOS", ",".join(scenarios), "scenarios with at least two different statement "
                          "counts at this N (the overhead fit needs two), e.g. single_row,bulk")
    classes = engine_classes(engines)
    capabilities.require(NOTEBOOK.needs, classes, notebook=f"notebook {NOTEBOOK.id}")
    known = list(dict.fromkeys(v for c in classes.values() for v in own_variants(c)))
    variants = subset("VARIANTS", known if variants is None else variants, known)
    for spec, engine_cls in classes.items():
        if not variants_of(engine_cls, variants):
            raise ConfigError("VARIANTS", ",".join(variants), f"at least one variant of {spec} ("
                              + ", ".join(own_variants(engine_cls)) + ")")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ConfigError("SEED", seed, "an integer from 0 to 2**32 - 1")
    precision = precision_target(size["precision"] if precision == "scale" else precision)
    max_minutes = positive_number("MAX_MINUTES", size["max_minutes"] if max_minutes is None else max_minutes,
                                  most=MAX_MINUTES)
    return Params(tuple(classes), scale, n, repeats, warmup, profile_n, scenarios, variants, seed, precision,
                  max_minutes)


def variants_of(engine_cls: type[Engine], variants: Sequence[str]) -> list[str]:
    """The variants of ``variants`` that ``engine_cls`` has (``default`` for an engine without commit variants)."""
    own = own_variants(engine_cls)
    return [v for v in variants if v in own]


def own_variants(engine_cls: type[Engine]) -> list[str]:
    """The commit variants of ``engine_cls`` (``default`` for an engine without commit variants)."""
    return list(capabilities.of(engine_cls, "commit_variants").VARIANTS) or ["default"]


def statement_count(scenario: str, n: int) -> int:
    """How many statements ``scenario`` writes ``n`` rows in (as :func:`_statements` splits them).

    Examples
    --------
    >>> [statement_count(s, 10_000_001) for s in ("single_row", "bulk")]
    [10000001, 1]
    >>> statement_count("batch_1000", 2_001) == len(_statements("batch_1000", [()] * 2_001))
    True
    """
    size = SCENARIOS[scenario]
    return 1 if size is None else -(-n // size)


def _statements(scenario: str, rows: list[tuple]) -> list[list[tuple]]:
    size = SCENARIOS[scenario]
    if size is None:
        return [rows]
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def run_scenario(engine: Engine, scenario: str, rows: list[tuple], warmup_rows: list[tuple], *,
                 warmup: int, bar=None, between: Callable[[int], None] | None = None, pieces: int = 1) -> pd.DataFrame:
    """Time one scenario writing ``rows`` into an empty table; return the samples.

    Warm-up statements (``warmup`` single rows, or one statement of each other scenario)
    run first on the same table and are kept, flagged; the table is then emptied (not
    timed) so that the measured statements write into an empty table, as in the study.
    With ``between``, the measured statements are timed in ``pieces`` runs and
    ``between(i)`` is called after the i-th (notebook 01 profiles a statement there, so the
    anatomy and the samples share every moment of the run); its work is in no sample.
    """
    cols = [c for c, _ in STUDY_COLUMNS]
    if scenario == "bulk":
        engine.has("bulk_load", check=True)

    def prepare(chunk: list[tuple]):
        # the statement's text with its parameters (or the bulk path's CSV) is made before the clock starts
        if scenario == "bulk":
            return engine.capability("bulk_load").prepare(TABLE, cols, [datagen.rows_table(cols, chunk)])
        if scenario == "insert_select":
            return engine.sender.statement_call(insert_select)
        return engine.sender.statement_call(engine.sql.insert_sql(TABLE, cols, len(chunk)), [v for row in chunk for v in row])

    insert_select = engine.sql.insert_select_sql(TABLE, SOURCE)
    n_warm = warmup if scenario == "single_row" else min(warmup, 1)
    warm = _statements(scenario, warmup_rows)[:n_warm] if scenario != "insert_select" else [rows] * n_warm
    measured = _statements(scenario, rows)
    _reset_table(engine)
    # statements go through the C loop where the engine has one (time_calls), the bulk path from Python
    warm_frame = time_calls([prepare(c) for c in warm], rows=[len(c) for c in warm],
                            bytes_=[sum(map(datagen.row_bytes, c)) for c in warm], warmup=len(warm))
    _reset_table(engine)
    calls = [prepare(c) for c in measured]
    frames = []
    for i, piece in enumerate(np.array_split(np.arange(len(measured)), pieces if between else 1)):
        if len(piece):  # a scenario of fewer statements than pieces (one bulk load) has empty ones
            frames.append(time_calls([calls[j] for j in piece], rows=[len(measured[j]) for j in piece],
                                     bytes_=[sum(map(datagen.row_bytes, measured[j])) for j in piece],
                                     progress=bar.update if bar is not None else None))
        if between is not None:
            between(i)
    frame = pd.concat(frames, ignore_index=True).assign(statement_no=lambda f: np.arange(len(f)))
    written = engine.tables.count_rows(TABLE)
    if written != len(rows):
        raise DataLossError(f"{scenario}: table holds {written} rows after writing {len(rows)}")
    return pd.concat([warm_frame, frame], ignore_index=True).assign(scenario=scenario)


def _reset_table(engine: Engine) -> None:
    engine.tables.reset(TABLE, STUDY_COLUMNS)


# one client: its round trips on one CPU, server and client (bench/README.md, "Smoke runs of 01")
@placement.preferring("together")
def measure(params: Params, run) -> dict[str, pd.DataFrame]:
    """Run notebook 01's measurements end to end; the engines are started and stopped inside.

    Every engine of ``params.engines`` is started, then the run goes in **rounds**: a round
    holds one block of every (engine, variant) arm, in an order drawn afresh each round from
    ``SEED`` (:mod:`ingestlab.schedule`, kept in ``run.json``), so that a drift of the machine
    falls on every arm alike. A block puts the variant's settings in force (the server restarts
    when they change) and runs every scenario once (``repeat`` is the round's number), with the
    statement anatomy among its single-row samples: each block profiles its share of the
    ``profile_n`` profiled INSERTs, each one pass of :meth:`ProfiledStatement.anatomy
    <ingestlab.engines.capabilities.ProfiledStatement.anatomy>` (the profiled INSERT, then
    :data:`UNOBSERVED_BLOCK` unobserved ones into :data:`ANATOMY_TABLE`) between two runs of the
    block's single-row samples (without a ``single_row`` scenario, after the last scenario). On
    this virtual machine the round trip moves between regimes that last seconds (where the
    scheduler puts the client and the server): anatomy passes taken a scenario later were
    10–25 % off the samples, passes among them within 7 % (``bench/README.md``).

    Without ``PRECISION`` the run makes ``repeats`` rounds. With it, it makes at least
    ``repeats`` and goes on until every headline's 95 % interval over the rounds is within
    ±``PRECISION`` of its value, or ``MAX_MINUTES`` have passed (:mod:`ingestlab.precision`);
    what stopped each headline is in ``precision.csv``. Samples are appended to ``run`` after
    every scenario, so an interrupted run keeps what it measured; each scenario of a block (with
    the passes inside it) is one configuration of :meth:`~ingestlab.results.Run.once`, which a
    resumed run does not measure again.

    Returns
    -------
    dict
        ``samples`` (one row per statement), ``anatomy`` (tidy, see
        :meth:`ProfiledStatement.anatomy <ingestlab.engines.capabilities.ProfiledStatement.anatomy>`)
        and ``precision`` (one row per headline; empty without ``PRECISION``).
    """
    out: dict[str, list[pd.DataFrame]] = {"samples": [], "anatomy": []}
    benches = [_Bench(spec.engine(), params, run) for spec in params.engines]
    rounds = _rounds(params)
    try:
        for bench in benches:
            bench.engine.start()
        arms = [(bench, variant) for bench in benches for variant in variants_of(type(bench.engine), params.variants)]
        per_round = sum(bench.statements for bench, _ in arms)
        with progress.bar(total=per_round * rounds.expected_rounds(), desc="rounds of every engine and variant",
                          unit="stmt") as bar:
            rep = 0
            while rounds.more():
                ordered = schedule.order(arms, rep, params.seed)
                schedule.record(run, rep, [{"engine": b.engine.label, "variant": v} for b, v in ordered], params.seed)
                for bench, variant in ordered:
                    bench.block(variant, rep, bar, out)
                rounds.add(_round_values(out, rep))
                rep += 1
                bar.total = max(bar.total, per_round * max(rounds.expected_rounds(), rep))
                bar.refresh()
    finally:
        for bench in benches:
            bench.engine.close()
    tables = {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in out.items()}
    tables["precision"] = rounds.table()
    return tables


class _Bench:
    """One engine of a run of notebook 01: what it can measure, and one block of one variant."""

    def __init__(self, engine: Engine, params: Params, run):
        self.engine, self.params, self.run = engine, params, run
        self.variant: str | None = None
        self.profiling = bool(params.profile_n)
        try:
            engine.has("profiled_statement", check=self.profiling)
        except UnsupportedOperationError as exc:
            run.note(f"{engine.label}: no anatomy ({exc})")
            self.profiling = False
        # a scenario the engine has no step for is left out, saying why (as the anatomy is)
        self.scenarios = []
        for scenario in params.scenarios:
            try:
                if scenario == "bulk":
                    engine.has("bulk_load", check=True)
                self.scenarios.append(scenario)
            except UnsupportedOperationError as exc:
                run.note(f"{engine.label}: no {scenario} scenario ({exc})")
        # the anatomy sits among the single-row samples it is held against (else after the last scenario)
        self.host = "single_row" if "single_row" in self.scenarios else self.scenarios[-1]
        self.statements = sum(statement_count(s, params.n) for s in self.scenarios)

    def profiled(self, rep: int) -> np.ndarray:
        """The numbers of the profiled INSERTs of round ``rep``: the first rounds share ``profile_n``, later ones as many each."""
        p = self.params
        if not self.profiling:
            return np.arange(0)
        first = min(p.repeats, p.profile_n)
        if rep < first:
            return np.array_split(np.arange(p.profile_n), first)[rep]
        each = -(-p.profile_n // first)
        return p.profile_n + (rep - first) * each + np.arange(each)

    def block(self, variant: str, rep: int, bar, out: dict[str, list[pd.DataFrame]]) -> None:
        """Round ``rep``'s block of ``variant``: every scenario once, the round's anatomy passes among the single rows."""
        engine, params, run = self.engine, self.params, self.run
        cols = [c for c, _ in STUDY_COLUMNS]
        if variant != self.variant:
            engine.apply_settings(capabilities.of(engine, "commit_variants").VARIANTS.get(variant, {}))
            run.record_engine(engine, variant=variant)
            self.variant = variant
        labels = {"engine": engine.label, "variant": variant, "driver": engine.driver.name}
        rows = datagen.study_rows(params.n, start_id=0, seed=params.seed * 1000 + rep)
        warm = datagen.study_rows(max(params.warmup, 1000), start_id=-10**9, seed=params.seed + 7)
        units = self.profiled(rep)
        if "insert_select" in self.scenarios:  # recreated: not every engine deletes without WHERE
            engine.tables.reset(SOURCE, STUDY_COLUMNS)
            engine.execute(engine.sql.insert_sql(SOURCE, cols, len(rows)), [v for r in rows for v in r])

        def profile(i):
            """Anatomy pass i of this block: one profiled INSERT and its block of unobserved ones."""
            j = int(units[i])
            if i == 0:  # a fresh table, opened by one INSERT that is no part of any pass
                engine.tables.reset(ANATOMY_TABLE, STUDY_COLUMNS)
                engine.sender.statement_call(engine.sql.insert_sql(ANATOMY_TABLE, cols, 1), warm[0])()
            row = datagen.study_rows(1, start_id=10**9 + j, seed=params.seed + 13 + j)[0]
            quiet = datagen.study_rows(UNOBSERVED_BLOCK, start_id=2 * 10**9 + j * UNOBSERVED_BLOCK, seed=params.seed + 17 + j)
            try:  # an instrument that lost statements (a history too short) says so
                frame = engine.capability("profiled_statement").anatomy(ANATOMY_TABLE, cols, [row], warm_up=False,
                                                                       unobserved_rows=quiet)
                run.append(frame.assign(**labels, repeat=rep, profiled_no=j), table="anatomy")
            except UnsupportedOperationError as exc:
                run.note(f"{variant} profiled INSERT {j}: no anatomy ({exc})")
            # the samples' next run starts after INSERTs, as the first does, not after the pass's reads
            insert_one = engine.sql.insert_sql(ANATOMY_TABLE, cols, 1)
            settle = datagen.study_rows(SETTLE_AFTER_PASS, start_id=15 * 10**8 + j * SETTLE_AFTER_PASS, seed=params.seed + 19 + j)
            for settle_row in settle:
                engine.sender.statement_call(insert_one, settle_row)()

        for scenario in self.scenarios:
            inside = len(units) if scenario == self.host else 0

            def scenario_once(scenario=scenario, inside=inside):
                frame = run_scenario(engine, scenario, rows, warm, warmup=params.warmup, bar=bar,
                                     between=profile if inside else None, pieces=inside or 1)
                run.append(frame.assign(repeat=rep, **labels))
            done = run.once({**labels, "repeat": rep, "scenario": scenario}, scenario_once)
            out["samples"].append(done["results"])
            if "anatomy" in done:
                out["anatomy"].append(done["anatomy"])


def _rounds(params: Params) -> precision.Rounds:
    """The rounds' stopping rule: ``repeats`` rounds, or rounds until every headline is precise (:mod:`ingestlab.precision`).

    A precise run makes at least ``repeats`` rounds and at least :data:`ingestlab.precision.MIN_ROUNDS`
    (the stopping rule's coverage is calibrated from there). An overhead within ±:data:`OVERHEAD_FLOOR_MS`
    counts as reached whatever its relative width: a statement overhead of a few µs (an
    in-process engine's) cannot be pinned to ±5 %, nor does a comparison need it to be.
    """
    if params.precision is None:
        return precision.Fixed(params.repeats)
    return precision.Rounds(precision.Target(params.precision, cap_s=params.max_minutes * 60,
                                             min_rounds=max(params.repeats, precision.MIN_ROUNDS),
                                             floors={"overhead_ms": OVERHEAD_FLOOR_MS}))


#: Absolute half-width (ms) at which a round-by-round overhead counts as precise (see :func:`_rounds`).
OVERHEAD_FLOOR_MS = 0.002


def _round_values(out: dict[str, list[pd.DataFrame]], rep: int) -> dict[str, float]:
    """Round ``rep``'s headlines from its samples alone: the overhead fit and the anatomy of each engine and variant."""
    from ingestlab.workloads import insert_analysis as analysis

    samples = pd.concat(out["samples"], ignore_index=True) if out["samples"] else pd.DataFrame()
    if samples.empty:
        return {}
    samples = samples[samples["repeat"] == rep]
    anatomy = pd.concat(out["anatomy"], ignore_index=True) if out["anatomy"] else pd.DataFrame()
    anatomy = anatomy[anatomy["repeat"] == rep] if not anatomy.empty else anatomy
    with warnings.catch_warnings():  # a round too small for a fit says nothing for it; the run's own fit warns once
        warnings.simplefilter("ignore", FitLeftOut)
        fits = analysis.fit(samples)
    table = analysis.anatomy_table(anatomy, samples, fits) if not anatomy.empty else pd.DataFrame()
    values = analysis.headline(fits, None, table)
    return {k: v for k, v in values.items() if k.split("[")[0] in ROUND_HEADLINES}


#: The headlines a precise run (``PRECISION``) measures rounds for: each has a value in every round.
ROUND_HEADLINES = ("overhead_ms", "total_vs_samples")


#: Notebook 01, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem=NOTEBOOK_STEM,
    question="Where do a single-row INSERT's milliseconds go, and what does batching save?",
    study="starrocks-insert-overhead.ru.txt",
    measures="single-row, 100- and 1 000-row INSERTs, INSERT … SELECT and the bulk path per commit variant; "
             "the statement's anatomy from the engine's own instruments",
    headlines=("overhead_ms[", "diff_ms", "unexplained_share[", "total_vs_samples["),
    smoke_time="1 min", paper_time="≤20 min (rounds until ±5 %)",
    needs=("execute",),
    validate=validate,
    measure=measure,
    article=("fit", "anatomy", "live_vs_published"),
    plotters={"latency": "latency_figure",
              "fit": "fit_figure",
              "anatomy": "anatomy_figure",
              "live_vs_published": "plot_live_vs_published"},
)
