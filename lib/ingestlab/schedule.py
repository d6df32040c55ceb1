"""The order a run measures what it compares in: rounds of randomised, interleaved blocks.

Measured one after another, two engines (or two settings of one) meet different moments of
the machine: a page cache that fills, a neighbour's load that comes and goes, a drift over
minutes. Measured in rounds, each round holding one block of every arm in an order drawn
afresh, the drift falls on all alike and shows as scatter between rounds instead of as a
difference between arms (Google Benchmark's random interleaving; ClickHouse's performance
test runs old and new server queries interleaved). The order is drawn from the run's seed
and the round's number, so a run can be repeated in the same order, and it is kept in the
run's metadata (``run.json`` → ``schedule``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np


def order(arms: Sequence[Any], round_no: int, seed: int) -> list[Any]:
    """``arms`` in the order round ``round_no`` measures them: a permutation drawn from ``(seed, round_no)``.

    Examples
    --------
    >>> order(["a", "b", "c"], 0, 7) == order(["a", "b", "c"], 0, 7)
    True
    >>> sorted(order(["a", "b", "c"], 1, 7))
    ['a', 'b', 'c']
    >>> len({tuple(order(range(6), r, 0)) for r in range(20)}) > 1  # each round draws its own order
    True
    """
    arms = list(arms)
    rng = np.random.default_rng([int(seed), int(round_no)])
    return [arms[i] for i in rng.permutation(len(arms))]


def record(run, round_no: int, arms: Sequence[dict[str, Any]], seed: int) -> None:
    """Keep round ``round_no``'s order of ``arms`` (each a dict of labels) in the run's metadata."""
    entry = run.meta.setdefault("schedule", {"seed": int(seed), "rounds": []})
    entry["rounds"] = [r for r in entry["rounds"] if r["round"] != round_no]
    entry["rounds"].append({"round": int(round_no), "order": [dict(a) for a in arms]})
    run.meta["schedule"] = entry
    run.note("blocks measured in randomised interleaved order per round (run.json → schedule)")


class InForce:
    """Which variant each of a run's engines has in force; :meth:`put` switches one only when it differs.

    Interleaved blocks come back to an engine with another variant; its settings are applied
    again (a server restarts where they need it) and the engine's metadata recorded with the
    variant, and not when the engine already has it.

    Parameters
    ----------
    run : ingestlab.results.Run
        Where each engine and variant put in force is recorded.
    variants : callable
        ``variants(engine)``: the engine's variants by name → settings.
    """

    def __init__(self, run, variants):
        self.run, self.variants, self.current = run, variants, {}

    def put(self, engine, variant: str):
        """``engine`` with ``variant``'s settings in force (applied and recorded if another was); returns it."""
        if self.current.get(id(engine)) != variant:
            settings: Mapping[str, str] = self.variants(engine).get(variant, {})
            engine.apply_settings(settings)
            self.run.record_engine(engine, variant=variant)
            self.current[id(engine)] = variant
        return engine

