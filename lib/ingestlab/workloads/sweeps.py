"""Notebook 02's workload: single-row INSERTs into tables that differ in one storage parameter at a time."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ingestlab import datagen, progress, schedule
from ingestlab.engine_specs import EngineSpec
from ingestlab.engines import Engine, capabilities
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.errors import ConfigError, DataLossError, UnsupportedOperationError
from ingestlab.timing import time_calls, time_statements
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import (
    MAX_REPEATS,
    MAX_STATEMENTS,
    EngineParams,
    engine_classes,
    items_of,
    one_of,
    positive_int,
    subset,
)

#: The table parameters a sweep changes, one at a time, from the baseline.
FACTORS = ("partitions", "columns", "model")
#: Sizes per SCALE. ``paper`` is the study's 200 statements after 20 warm-up ones, in rounds.
SCALES: dict[str, dict[str, int]] = {
    "smoke": {"statements": 40, "warmup": 20, "repeats": 2, "profile_n": 6},
    "paper": {"statements": 200, "warmup": 20, "repeats": 5, "profile_n": 30},
}
#: The study's levels: buckets (here partitions) and columns.
DEFAULT_PARTITIONS = (1, 4, 8, 16, 32, 64)
DEFAULT_COLUMNS = (4, 20, 50)
#: Most columns a swept table may have (PostgreSQL allows 1 600, InnoDB 1 017).
MAX_COLUMNS = 1000
#: ``variant`` value that stands for each engine's first commit variant (its server default).
DEFAULT_VARIANT = "default"
TABLE = "ingestlab_sweep"
#: Ids of warm-up rows start here, far from the measured ones (0, 1, …).
WARMUP_START_ID = -10**9


@dataclasses.dataclass(frozen=True)
class Config:
    """One table: its hash partitions (buckets), its column count and its key model."""

    partitions: int
    n_columns: int
    model: str

    @property
    def name(self) -> str:
        """A short label: ``p16 c4 no_key``."""
        return f"p{self.partitions} c{self.n_columns} {self.model}"

    def value(self, factor: str) -> Any:
        """This table's level of ``factor`` (one of :data:`FACTORS`)."""
        return {"partitions": self.partitions, "columns": self.n_columns, "model": self.model}[factor]


@dataclasses.dataclass(frozen=True)
class Params(EngineParams):
    """Validated parameters of notebook 02 (see :func:`validate`)."""

    variants: tuple[str, ...]
    factors: tuple[str, ...]
    partitions: tuple[int, ...]
    columns: tuple[int, ...]
    models: tuple[str, ...] | None
    statements: int
    warmup: int
    repeats: int
    profile_n: int
    seed: int


def int_levels(name: str, value: Any, default: Sequence[int]) -> tuple[int, ...]:
    """A sweep's levels: positive integers from a list or a comma-separated string, sorted, distinct.

    Examples
    --------
    >>> int_levels("PARTITIONS", "8, 1,4", ())
    (1, 4, 8)
    >>> int_levels("COLUMNS", "4,x", ())
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: COLUMNS='x' is not valid: expected positive integers, comma-separated (e.g. 1,4,8)
    """
    if value is None:
        return tuple(default)
    items = [v for v in items_of(value) if v != ""]
    if not items:
        raise ConfigError(name, value, "a non-empty list of positive integers (e.g. 1,4,8)")
    levels = []
    for item in items:
        number = item
        if isinstance(item, str):
            try:
                number = int(item)
            except ValueError:
                raise ConfigError(name, item, "positive integers, comma-separated (e.g. 1,4,8)") from None
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ConfigError(name, item, "positive integers, comma-separated (e.g. 1,4,8)")
        levels.append(number)
    return tuple(sorted(set(levels)))


def validate(engines: Sequence[str] | str = "postgres,mariadb", scale: str = "smoke",
             variants: Sequence[str] | str | None = None, factors: Sequence[str] | str | None = None,
             partitions: Sequence[int] | str | None = None, columns: Sequence[int] | str | None = None,
             models: Sequence[str] | str | None = None, statements: int | None = None, warmup: int | None = None,
             repeats: int | None = None, profile_n: int | None = None, seed: int = 0) -> Params:
    """Check notebook 02's parameters without starting anything; return them resolved.

    Every bad value raises :class:`~ingestlab.errors.ConfigError` naming the parameter, the
    value and what is accepted: a level that is not a positive integer, more partitions than
    a target's ``MAX_PARTITIONS`` (its ``table_models``), fewer columns than the seed's table, a model or variant no
    target has, or a factor given that a target cannot vary. ``None`` means "the SCALE's
    size" / "all"; for ``factors``, every factor each target can vary (:func:`varies`: DuckDB
    sweeps columns and models, not partitions).

    A table model an engine does not have is refused naming the engine's own (tests/workloads/test_sweeps.py).
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    classes = _target_classes(engines)
    given = factors is not None
    factors = subset("FACTORS", factors, FACTORS) if given else tuple(
        f for f in FACTORS if any(varies(cls, f) for cls in classes.values()))
    partitions = int_levels("PARTITIONS", partitions, DEFAULT_PARTITIONS)
    columns = int_levels("COLUMNS", columns, DEFAULT_COLUMNS)
    if columns[0] < len(STUDY_COLUMNS) or columns[-1] > MAX_COLUMNS:
        bad = columns[0] if columns[0] < len(STUDY_COLUMNS) else columns[-1]
        raise ConfigError("COLUMNS", bad, f"integers from {len(STUDY_COLUMNS)} (the study's table) to {MAX_COLUMNS}")
    for name, swept, levels_ in (("PARTITIONS", "partitions", partitions), ("COLUMNS", "columns", columns)):
        if swept in factors and len(levels_) < 2:
            raise ConfigError(name, ",".join(map(str, levels_)), f"at least two levels while FACTORS sweeps {swept} "
                              "(a slope needs two), or leave it out of FACTORS")
    if models is not None and "model" not in factors:
        raise ConfigError("MODELS", models, "no value unless FACTORS includes model (table models are swept only "
                          "then, and a value given and not used would be recorded as if it had been)")
    for spec, cls in classes.items():
        _check_factors(spec, cls, factors if given else [f for f in factors if varies(cls, f)], partitions)
    model_names = None if models is None else _models(models, classes, "model" in factors)
    variant_names = _variants(variants, classes)
    return Params(tuple(classes), scale, variant_names, factors, partitions, columns, model_names,
                  positive_int("STATEMENTS", size["statements"] if statements is None else statements,
                               most=MAX_STATEMENTS),
                  positive_int("WARMUP", size["warmup"] if warmup is None else warmup, allow_zero=True,
                               most=MAX_STATEMENTS),
                  positive_int("REPEATS", size["repeats"] if repeats is None else repeats, most=MAX_REPEATS),
                  positive_int("PROFILE_N", size["profile_n"] if profile_n is None else profile_n, allow_zero=True,
                               most=MAX_STATEMENTS),
                  _seed(seed))


def _target_classes(targets: Sequence[str] | str) -> dict[EngineSpec, type[Engine]]:
    classes = engine_classes(targets)
    capabilities.require(NOTEBOOK.needs, classes, notebook=f"notebook {NOTEBOOK.id}")
    return classes


def varies(cls: type[Engine], factor: str) -> bool:
    """Whether engine class ``cls`` can vary ``factor``: partitions where it partitions tables, models where it has them.

    Examples
    --------
    >>> from ingestlab.engines.duckdb import DuckDB
    >>> [varies(DuckDB, f) for f in FACTORS]
    [False, True, True]
    """
    tables = capabilities.of(cls, "table_models")
    return {"partitions": tables.MAX_PARTITIONS >= 2, "model": bool(tables.MODELS)}.get(factor, True)


def _check_factors(target: EngineSpec, cls: type[Engine], factors: Sequence[str], partitions: Sequence[int]) -> None:
    tables = capabilities.of(cls, "table_models")
    if "partitions" in factors and tables.MAX_PARTITIONS < 2:
        raise ConfigError("FACTORS", "partitions", f"factors {cls.NAME} can vary: columns" +
                          (", model" if tables.MODELS else "") + f" ({cls.NAME} does not partition tables)")
    if "model" in factors and not tables.MODELS:
        raise ConfigError("FACTORS", "model", f"factors {cls.NAME} can vary: partitions, columns "
                          f"({cls.NAME} has one table model)")
    if "partitions" in factors and partitions[-1] > tables.MAX_PARTITIONS:
        raise ConfigError("PARTITIONS", partitions[-1],
                          f"at most {tables.MAX_PARTITIONS} {tables.PARTITION_UNIT}s for {target}")


def _models(models: Sequence[str] | str, classes: dict[EngineSpec, type[Engine]], swept: bool) -> tuple[str, ...]:
    tables = {t: capabilities.of(c, "table_models") for t, c in classes.items()}
    known = list(dict.fromkeys(m for own in tables.values() for m in own.MODELS))
    accepted = "each one of: " + "; ".join(f"{t}: {', '.join(own.MODELS)}" for t, own in tables.items())
    items = items_of(models)
    for item in items:
        if item and item not in known:
            raise ConfigError("MODELS", item, accepted)
    chosen = subset("MODELS", models, known)
    for target, own in tables.items():
        others = [m for m in own.MODELS if m != own.DEFAULT_MODEL]
        if swept and not [m for m in chosen if m in others]:
            raise ConfigError("MODELS", models, f"at least one model of {target} besides its baseline "
                              f"{own.DEFAULT_MODEL}: {', '.join(others)}")
    return chosen


def _variants(variants: Sequence[str] | str | None, classes: dict[EngineSpec, type[Engine]]) -> tuple[str, ...]:
    known = [DEFAULT_VARIANT, *dict.fromkeys(v for cls in classes.values()
                                             for v in capabilities.of(cls, "commit_variants").VARIANTS)]
    chosen = subset("VARIANTS", [DEFAULT_VARIANT] if variants is None else variants, known)
    for target, cls in classes.items():
        if DEFAULT_VARIANT not in chosen and not set(chosen) & set(capabilities.of(cls, "commit_variants").VARIANTS):
            raise ConfigError("VARIANTS", ",".join(chosen), f"at least one variant of {target}: "
                              + ", ".join([DEFAULT_VARIANT, *capabilities.of(cls, "commit_variants").VARIANTS]))
    return chosen


def _seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError("SEED", seed, "an integer")
    return seed


# -- what runs on each engine ------------------------------------------------------------------
def variants_for(params: Params, cls: type[Engine]) -> list[str]:
    """The commit variants ``cls`` runs: its own among ``params.variants``, ``default`` as its first.

    Examples
    --------
    >>> from ingestlab.engines.postgres import Postgres
    >>> variants_for(validate("postgres,mariadb", variants="default,sync_off"), Postgres)
    ['sync_on', 'sync_off']
    """
    first = next(iter(capabilities.of(cls, "commit_variants").VARIANTS), DEFAULT_VARIANT)
    names = [first if v == DEFAULT_VARIANT else v for v in params.variants]
    return [v for v in dict.fromkeys(names) if v in capabilities.of(cls, "commit_variants").VARIANTS or v == first]


def levels(params: Params, cls: type[Engine]) -> dict[str, list]:
    """Each swept factor's levels on ``cls``, the baseline's first.

    Partitions add the engine's :attr:`~ingestlab.engines.capabilities.TableModels.SWEEP_EXTRA_PARTITIONS`
    at paper scale; models are the engine's own among ``params.models`` (all when None),
    its default model first. A factor not swept, or one the engine cannot vary
    (:func:`varies`), keeps only its baseline level.
    """
    tables = capabilities.of(cls, "table_models")
    extra = tables.SWEEP_EXTRA_PARTITIONS if params.scale == "paper" else ()
    parts = sorted(set(params.partitions) | {p for p in extra if p <= tables.MAX_PARTITIONS})
    models = [m for m in (params.models or tables.MODELS) if m in tables.MODELS and m != tables.DEFAULT_MODEL]
    out = {"partitions": parts, "columns": list(params.columns), "model": [tables.DEFAULT_MODEL, *models]}
    return {f: values if f in params.factors and varies(cls, f) else values[:1] for f, values in out.items()}


def levels_note(params: Params, cls: type[Engine], name: str) -> str:
    """The levels measured on one engine, in words, for the run's notes (and so its figures' SOURCE).

    They can differ from the parameters: the engine's extra partitions at paper scale, a
    factor it cannot vary kept at its baseline: ``"<name> levels measured: partitions 1, 4, …;
    columns 4, 20, 50; model …"`` (tests/workloads/test_sweeps.py has an engine's).
    """
    swept = levels(params, cls)
    return f"{name} levels measured: " + "; ".join(f"{factor} {', '.join(map(str, values))}"
                                                   for factor, values in swept.items())


def configurations(params: Params, cls: type[Engine]) -> list[Config]:
    """The tables measured on ``cls``: the baseline, then one per other level of each factor.

    Named ``p<partitions> c<columns> <model>`` (tests/workloads/test_sweeps.py has an engine's list).
    """
    lv = levels(params, cls)
    base = Config(lv["partitions"][0], lv["columns"][0], lv["model"][0])
    out = [base]
    out += [dataclasses.replace(base, partitions=p) for p in lv["partitions"][1:]]
    out += [dataclasses.replace(base, n_columns=c) for c in lv["columns"][1:]]
    out += [dataclasses.replace(base, model=m) for m in lv["model"][1:]]
    return out


def config_labels(engine: Engine, config: Config, baseline: Config) -> dict[str, Any]:
    """The columns every sample of ``config`` carries: its levels, whether it is the baseline, the units."""
    tables = capabilities.of(engine, "table_models")
    return {"config": config.name, "partitions": config.partitions, "n_columns": config.n_columns,
            "model": config.model, "baseline": config == baseline, "baseline_model": baseline.model,
            "partition_unit": tables.PARTITION_UNIT,
            "model_skips_commit_flush": config.model in tables.COMMIT_FREE_MODELS,
            "partition_layout": tables.ONE_PARTITION if config.partitions == 1
            else f"{config.partitions} {tables.PARTITION_UNIT}s"}


# -- measuring -----------------------------------------------------------------------------
def run_configuration(engine: Engine, config: Config, rows: list[tuple], warm: list[tuple]) -> pd.DataFrame:
    """Create ``config``'s table empty, run ``warm`` then ``rows`` as single-row INSERTs; return the samples.

    Warm-up statements write into the same table first (kept, flagged); afterwards the table
    must hold every row written, else :class:`~ingestlab.errors.DataLossError`.
    """
    columns = datagen.wide_columns(config.n_columns)
    names = [n for n, _ in columns]
    engine.tables.reset(TABLE, columns, model=config.model, partitions=config.partitions)
    sql = engine.sql.insert_sql(TABLE, names, 1)
    statements = [*warm, *rows]
    bytes_ = [datagen.row_bytes(r) for r in statements]
    if engine.has("statement_call"):  # each rendered before the clock, sent by the C loop where there is one
        frame = time_calls([engine.sender.statement_call(sql, row) for row in statements], rows=[1] * len(statements),
                           bytes_=bytes_, warmup=len(warm), driver=engine.driver.name)
    else:
        frame = time_statements(lambda row: engine.execute(sql, row), statements, rows=[1] * len(statements),
                                bytes_=bytes_, warmup=len(warm), driver=engine.driver.name).assign(timer="python")
    check_rows(engine, config, len(statements))
    return frame


def check_rows(engine: Engine, config: Config, written: int) -> None:
    """Raise :class:`~ingestlab.errors.DataLossError` unless the table holds ``written`` rows."""
    held = engine.tables.count_rows(TABLE)
    if held != written:
        raise DataLossError(f"{engine.label} {config.name}: table holds {held} rows after {written} were written")


def configuration_anatomy(engine: Engine, config: Config, rows: list[tuple]) -> pd.DataFrame:
    """The engine's statement anatomy of ``rows`` written one by one into ``config``'s fresh table."""
    columns = datagen.wide_columns(config.n_columns)
    engine.tables.reset(TABLE, columns, model=config.model, partitions=config.partitions)
    frame = engine.capability("profiled_statement").anatomy(TABLE, [n for n, _ in columns], rows)
    check_rows(engine, config, len(rows))
    return frame


def measure(params: Params, run) -> dict[str, pd.DataFrame]:
    """Run notebook 02's sweeps end to end; the engines are started and stopped inside.

    Every engine is started, then the run goes in ``repeats`` **rounds**: a round holds one
    block of every (engine, commit variant) arm, the arms in an order drawn afresh each round
    from ``SEED`` (:mod:`ingestlab.schedule`, kept in ``run.json`` → ``schedule``), and a block
    runs every configuration (:func:`configurations`) once, in its own random order: a fresh
    table, ``warmup`` then ``statements`` single-row autocommit INSERTs. So a drift of the
    machine falls on every engine, variant and configuration alike. The server restarts when an
    arm's variant needs it. After the rounds, per arm and configuration, the engine's statement
    anatomy of ``profile_n`` more INSERTs into a fresh table. Samples are appended to ``run``
    after every configuration, so an interrupted run keeps them; each configuration of a round,
    and each anatomy, goes through :meth:`~ingestlab.results.Run.once`, so a resumed run
    measures only those not done (the orders are drawn as before).

    Returns
    -------
    dict
        ``samples`` (one row per statement, warm-up flagged) and ``anatomy`` (tidy, see
        :meth:`ProfiledStatement.anatomy <ingestlab.engines.capabilities.ProfiledStatement.anatomy>`, with the configuration's columns).
    """
    out: dict[str, list[pd.DataFrame]] = {"samples": [], "anatomy": []}
    engines = [spec.engine() for spec in params.engines]
    arms = [(i, variant) for i, engine in enumerate(engines) for variant in variants_for(params, type(engine))]
    in_force = schedule.InForce(run, lambda engine: capabilities.of(engine, "commit_variants").VARIANTS)
    total = params.repeats * (params.statements + params.warmup) * sum(
        len(configurations(params, type(engines[i]))) for i, _ in arms)
    try:
        for engine in engines:
            engine.start()
            run.note(levels_note(params, type(engine), engine.label))  # SOURCE then names every level the figures show
        with progress.bar(total=total, desc="rounds of every engine and variant", unit="stmt") as bar:
            for rnd in range(params.repeats):
                ordered = schedule.order(arms, rnd, params.seed)
                schedule.record(run, rnd, [{"engine": engines[i].label, "variant": v} for i, v in ordered], params.seed)
                for i, variant in ordered:
                    rng = np.random.default_rng([params.seed, arms.index((i, variant)), rnd])  # drawn alike when resumed
                    _block(in_force.put(engines[i], variant), variant, rnd, rng, params, run, out, bar)
        if params.profile_n:
            for i, variant in arms:
                _anatomies(in_force.put(engines[i], variant), variant, params, run, out)
    finally:
        for engine in engines:
            engine.close()
    return {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in out.items()}


def _block(engine: Engine, variant: str, rnd: int, rng: np.random.Generator, params: Params, run,
           out: dict[str, list[pd.DataFrame]], bar) -> None:
    """Round ``rnd``'s block of one engine and variant: every configuration once, in an order drawn from ``rng``."""
    configs = configurations(params, type(engine))
    labels = {"engine": engine.label, "variant": variant}
    width = {c.n_columns: datagen.wide_columns(c.n_columns) for c in configs}
    rows = {n: datagen.wide_rows(cols, params.statements, seed=params.seed * 1000 + rnd) for n, cols in width.items()}
    warm = {n: datagen.wide_rows(cols, params.warmup, start_id=WARMUP_START_ID, seed=params.seed + 7)
            for n, cols in width.items()}
    for position, i in enumerate(rng.permutation(len(configs))):
        def config_once(config=configs[i], position=position):
            frame = run_configuration(engine, config, rows[config.n_columns], warm[config.n_columns])
            run.append(frame.assign(**labels, round=rnd, position=position,
                                    **config_labels(engine, config, configs[0])))
        done = run.once({**labels, "round": rnd, "config": configs[i].name}, config_once)
        out["samples"].append(done["results"])
        bar.update(len(done["results"]))


def _anatomies(engine: Engine, variant: str, params: Params, run, out: dict[str, list[pd.DataFrame]]) -> None:
    """The statement anatomy of every configuration of one engine and variant (none if the engine has none)."""
    configs = configurations(params, type(engine))
    labels = {"engine": engine.label, "variant": variant}
    for config in configs:
        def anatomy_once(config=config):
            rows = datagen.wide_rows(datagen.wide_columns(config.n_columns), params.profile_n, start_id=10**9,
                                     seed=params.seed + 13)
            try:
                frame = configuration_anatomy(engine, config, rows)
            except UnsupportedOperationError as exc:
                run.note(f"{engine.label} {variant}: no anatomy ({exc})")
                return
            run.append(frame.assign(**labels, **config_labels(engine, config, configs[0])), table="anatomy")
        done = run.once({**labels, "part": "anatomy", "config": config.name}, anatomy_once)
        if "anatomy" not in done:  # the engine has none
            return
        out["anatomy"].append(done["anatomy"])


#: Notebook 02, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem="02_component_sweeps",
    question="Does the single-row INSERT's cost grow with partitions, columns or the table model?",
    study="starrocks-insert-overhead.ru.txt (test_components)",
    measures="median single-row INSERT per table configuration, one factor changed at a time, and its slope",
    headlines=("slope_ms[",),
    smoke_time="1 min", paper_time="6 min",
    needs=("execute", "table_models"),
    validate=validate,
    measure=measure,
    plotters={"sweeps": "plot_sweep_medians",
              "model_effects": "plot_model_effects"},
)
