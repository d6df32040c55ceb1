"""Notebook 08's workload: single-row INSERTs on a cluster whose inter-node links carry an injected delay."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import pandas as pd

from ingestlab import datagen, latency, progress
from ingestlab.concurrency import check_clients
from ingestlab.engine_specs import EngineSpec
from ingestlab.engines import Engine, capabilities, registry
from ingestlab.errors import ConfigError
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import MAX_REPEATS, EngineParams, engine_classes, items_of, one_of, positive_int
from ingestlab.workloads.group_commit import _ints, _rows, _seconds, run_config

#: The notebook this workload serves (declared in full at the end: :data:`NOTEBOOK`).
NOTEBOOK_STEM = "08_round_trips"

#: Sizes per SCALE. ``paper``: the issue's grid, d ∈ {0, 1, 2, 5} ms and 3 ms held out (0.5 ms is not
#: injectable: Toxiproxy's latency is whole milliseconds), 1 and 100 rows per INSERT, 1 and 8 clients.
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"delays_ms": (0, 2), "held_out_ms": None, "rows_per_insert": (1,), "clients": (1,), "repeats": 2,
              "duration_s": 0.3, "warmup_s": 0.1, "n_variants": 1, "echo_exchanges": 20},
    "paper": {"delays_ms": (0, 1, 2, 5), "held_out_ms": 3, "rows_per_insert": (1, 100), "clients": (1, 8),
              "repeats": 5, "duration_s": 2.0, "warmup_s": 0.5, "n_variants": None, "echo_exchanges": 200},
}
#: The longest one-way delay a run injects: a second each way already makes a commit a matter of seconds.
MAX_DELAY_MS = 1000
TABLE = "ingestlab_round_trips"
#: Columns of ``throughput.csv`` that identify one run of a configuration.
CONFIG = ["engine", "variant", "rows_per_insert", "clients", "delay_ms", "repeat"]
#: The variant of an engine that declares no commit variants: the cluster as the lab starts it.
DEFAULT_VARIANT = "default"
#: The notebook's default ``ENGINES``: every registered engine with ``link_delay`` that the lab starts itself
#: (its cluster engines, whatever is registered), one a protocol (not a subclass of another: more standbys
#: are asked for by name). Only this default adapts to the machine (as the runner's defaults do): an engine
#: of it that cannot start here is left out, saying why.
DEFAULT_ENGINES = ""
#: The ``engine`` of the calibration's rows: a TCP echo through the proxy, one round trip an exchange.
ECHO = "echo"


@dataclasses.dataclass(frozen=True)
class Params(EngineParams):
    """Validated parameters of notebook 08 (see :func:`validate`)."""

    delays_ms: tuple[int, ...]
    held_out_ms: int | None
    rows_per_insert: tuple[int, ...]
    clients: tuple[int, ...]
    variants: tuple[str, ...]
    repeats: int
    duration_s: float
    warmup_s: float
    seed: int
    #: Why the delay grid is skipped on this machine (Toxiproxy missing, no engine of the default here), or None.
    skipped: str | None = None
    #: Engines of the default left out on this machine, each with why.
    left_out: tuple[str, ...] = ()
    # what group_commit.run_config reads: clients send as fast as the engine answers
    loop: str = "closed"
    rate: float | None = None

    @property
    def measured_delays_ms(self) -> tuple[int, ...]:
        """Every delay run: the fitted ones, then the held-out one."""
        return self.delays_ms + ((self.held_out_ms,) if self.held_out_ms is not None else ())


def variants_of(engine_cls: type[Engine]) -> dict[str, dict[str, str]]:
    """The engine's commit variants (name → server settings), or :data:`DEFAULT_VARIANT` alone when it declares none.

    The variant whose commits wait on the links (``link_delay``'s ``WAITING_VARIANT``) comes first.
    """
    found = dict(capabilities.of(engine_cls, "commit_variants").VARIANTS) or {DEFAULT_VARIANT: {}}
    waiting = capabilities.of(engine_cls, "link_delay").WAITING_VARIANT
    return {waiting: found[waiting], **found} if waiting in found else found


def _variants(classes: dict[EngineSpec, type[Engine]], value: Any, n_default: int | None) -> tuple[str, ...]:
    items = [v for v in items_of(value) if v]
    if not items:
        return tuple(dict.fromkeys(v for c in classes.values() for v in list(variants_of(c))[:n_default]))
    known = list(dict.fromkeys(v for c in classes.values() for v in variants_of(c)))
    for item in items:
        if item not in known:
            raise ConfigError("VARIANTS", item, f"each one of {', '.join(known)} for "
                                                f"{', '.join(c.NAME for c in classes.values())}")
    return tuple(items)


def _delay(name: str, value: Any) -> int:
    """One one-way delay: whole milliseconds (Toxiproxy's) from 0 to :data:`MAX_DELAY_MS`."""
    ms = latency.check_delay(value, name)
    if ms > MAX_DELAY_MS:
        raise ConfigError(name, value, f"whole milliseconds from 0 to {MAX_DELAY_MS}")
    return ms


def _delays(value: Any) -> tuple[int, ...]:
    items = [v for v in items_of(value) if v != ""]
    out = []
    for item in items:
        if isinstance(item, str):
            try:
                item = float(item)
            except ValueError:
                raise ConfigError("DELAYS_MS", item, "comma-separated whole milliseconds") from None
        out.append(_delay("DELAYS_MS", item))
    if len(set(out)) < 2 or len(set(out)) != len(out):
        raise ConfigError("DELAYS_MS", value, "at least two different one-way delays, each once (a line needs two)")
    return tuple(out)


def validate(engines: Sequence[str] | str, scale: str = "smoke", delays_ms: Sequence[float] | str | None = None,
             held_out_ms: float | None = None, batch_rows: Sequence[int] | str | None = None,
             clients: Sequence[int] | str | None = None, variants: Sequence[str] | str | None = None,
             repeats: int | None = None, duration_s: float | None = None, warmup_s: float | None = None,
             seed: int = 0) -> Params:
    """Check notebook 08's parameters without starting anything; return them resolved.

    Every bad value raises :class:`~ingestlab.errors.ConfigError` naming the parameter; ``None``
    means "the SCALE's". Every engine must have ``link_delay`` (its nodes' links routed through
    Toxiproxy, which needs the lab's own servers: a URL cannot); ``DELAYS_MS`` are whole
    milliseconds (Toxiproxy's), at least two; ``HELD_OUT_MS`` is measured but left out of the fit
    and predicted (``-1``: none); ``REPEATS`` ≥ 2 gives the lack-of-fit test its pure error. The
    default :data:`DEFAULT_ENGINES` adapts to the machine (``left_out`` says which and why). Where
    Toxiproxy cannot run, or no engine is left, ``skipped`` says why in one line and nothing is measured.

    An engine without ``link_delay`` is refused in one line naming the engines that have it.
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    engines, left_out = _available(engines)
    classes = engine_classes(engines) if engines not in (DEFAULT_ENGINES, None) else {}
    capabilities.require(NOTEBOOK.needs, classes, notebook=f"notebook {NOTEBOOK.id}")
    for spec in classes:
        if spec.connection is not None:
            raise ConfigError("ENGINES", spec.value, "an engine the lab starts itself: link_delay routes its nodes' "
                                                     "links through proxies, which a server given by URL cannot")
    delays = _delays(size["delays_ms"] if delays_ms is None else delays_ms)
    held = size["held_out_ms"] if held_out_ms is None else held_out_ms
    if held == -1:
        held = None
    if held is not None:
        held = _delay("HELD_OUT_MS", held)
        if held in delays:
            raise ConfigError("HELD_OUT_MS", held_out_ms, f"a delay not among DELAYS_MS {list(delays)} (or -1: none)")
    rows = _ints("BATCH_ROWS", size["rows_per_insert"] if batch_rows is None else batch_rows, _rows)
    clients = _ints("CLIENTS", size["clients"] if clients is None else clients, lambda n, v: check_clients(v, n))
    chosen = _variants(classes, variants, size["n_variants"]) if classes else ()
    repeats = positive_int("REPEATS", size["repeats"] if repeats is None else repeats, most=MAX_REPEATS)
    duration_s = _seconds("DURATION_S", size["duration_s"] if duration_s is None else duration_s, positive=True)
    warmup_s = _seconds("WARMUP_S", size["warmup_s"] if warmup_s is None else warmup_s, positive=False)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError("SEED", seed, "an integer")
    return Params(tuple(classes), scale, delays, held, rows, clients, chosen, repeats, duration_s, warmup_s, seed,
                  skipped=latency.unavailable_reason() if classes else "no cluster engine can run here: "
                  + ("; ".join(left_out) or "none with link_delay is registered"), left_out=left_out)


def _available(engines: Any) -> tuple[Any, tuple[str, ...]]:
    """:data:`DEFAULT_ENGINES` as the registered engines it stands for, less those unable to start here (each said).

    Any other value is returned as given.

    What the runner does to a default (:func:`ingestlab.runner.without_unavailable_engines`), for a
    notebook run without it (nbval, Jupyter).
    """
    if engines not in (DEFAULT_ENGINES, None):
        return engines, ()
    classes = registry.classes()
    left_out: dict[str, str] = {}
    kept = []
    routable = {n: cls for n, cls in classes.items() if cls.has("link_delay") and cls.HAS_LOCAL_SERVER}
    # one engine a protocol: a family member of one already chosen (more standbys) is named, not defaulted
    for name in [n for n, cls in routable.items() if not any(issubclass(cls, other) and cls is not other
                                                             for other in routable.values())]:
        reason = classes[name].unavailable_reason()
        if reason:
            left_out[name] = reason
        else:
            kept.append(name)
    return ",".join(kept), tuple(f"{name}: {reason}" for name, reason in left_out.items())


# -- measuring ------------------------------------------------------------------------------
def measure(params: Params, run) -> dict[str, pd.DataFrame]:
    """Run the grid (engine × variant × repeat × delay × rows per INSERT × clients); each engine started inside.

    Each engine's nodes are started with their links through Toxiproxy (``link_delay.route()``);
    per variant the cluster restarts with its settings; the repeats go round the delays in turn,
    so a drift of the machine spreads over every delay rather than tilting the line. Each run is
    notebook 04's configuration (:func:`ingestlab.workloads.group_commit.run_config`): the table
    recreated, ``clients`` clients writing ``rows_per_insert`` rows per autocommit INSERT for the
    warm-up and the duration, the rows counted (on every node, by the engine's ``count_rows``)
    against those acknowledged. With Toxiproxy missing (``params.skipped``) nothing runs and the
    run notes why.

    First, the instrument itself: a TCP echo through a Toxiproxy of its own at the same delays
    (:func:`ingestlab.latency.calibrate`), a protocol of exactly one round trip per exchange.

    Returns
    -------
    dict
        ``samples`` (every statement), ``throughput`` (one row per run), ``cpu``, and ``calibration``
        (one row per echo run: the law fitted to it is the proxy's own ``r``).
    """
    out: dict[str, list[pd.DataFrame]] = {"samples": [], "throughput": [], "cpu": [], "calibration": []}
    for line in params.left_out:
        run.note(f"left out {line}")
    if params.skipped:
        run.note(f"delay grid skipped: {params.skipped}")
        return {k: pd.DataFrame() for k in out}
    echo = pd.DataFrame(latency.calibrate(None, params.measured_delays_ms, repeats=params.repeats,
                                          n=SCALES[params.scale]["echo_exchanges"]))
    out["calibration"].append(echo.assign(engine=ECHO, variant=DEFAULT_VARIANT, rows_per_insert=1, clients=1))
    run.save_csv(out["calibration"][0], "calibration")
    for spec in params.engines:
        _measure_engine(spec.engine(), params, run, out)
    return {k: pd.concat(v, ignore_index=True) for k, v in out.items()}


def _measure_engine(engine: Engine, params: Params, run, out: dict[str, list[pd.DataFrame]]) -> None:
    row = datagen.study_rows(1, start_id=0, seed=params.seed)[0]
    variants = {v: s for v, s in variants_of(type(engine)).items() if v in params.variants}
    grid = [(rep, d, r, c) for rep in range(params.repeats) for d in params.measured_delays_ms
            for r in params.rows_per_insert for c in params.clients]
    bar = progress.bar(total=len(variants) * len(grid), desc=f"{engine.label} round trips", unit="run")
    link = engine.capability("link_delay")
    try:
        link.route()
        engine.start()
        for variant, settings in variants.items():
            engine.apply_settings(settings)
            run.record_engine(engine, variant=variant)
            for repeat, delay, rows, clients in grid:
                link.set(delay)
                labels = {"engine": engine.label, "variant": variant, "rows_per_insert": rows, "clients": clients,
                          "delay_ms": delay, "repeat": repeat}

                def once(clients=clients, rows=rows, labels=labels):
                    config = run_config(engine, row, params, clients=clients, rows=rows, labels=labels, run=run)
                    run.append(config["throughput"], table="throughput")
                    run.append(config["cpu"], table="client_cpu")
                config = run.once(labels, once)
                for key, table in (("samples", "results"), ("throughput", "throughput"), ("cpu", "client_cpu")):
                    out[key].append(config[table])
                run.save_csv(pd.concat(out["throughput"], ignore_index=True), "throughput")
                bar.set_postfix_str(f"{variant} d={delay} ms R={rows} C={clients}", refresh=False)
                bar.update(1)
    finally:
        bar.close()
        engine.close()


#: Notebook 08, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem=NOTEBOOK_STEM,
    question="How many network round trips does each commit protocol pay per statement?",
    study="the seeds' distributed commits (issue T): a delay injected between a cluster's nodes",
    measures="time per INSERT against the one-way delay injected on a cluster's inter-node links, per commit "
             "protocol, rows per INSERT and clients; the round-trip law o(d) = o0 + r 2d fitted, tested, and "
             "asked for a held-out delay",
    headlines=("round_trips[", "law_holds[", "held_out_inside["),
    smoke_time="1–2 min", paper_time="about 2 h",
    needs=("link_delay",),
    validate=validate,
    measure=measure,
    plotters={"round_trips": "plot_round_trips",
              "amortisation": "plot_amortisation"},
)
