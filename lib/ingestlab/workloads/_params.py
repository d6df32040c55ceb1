"""Checks shared by every workload's parameter validation, and the base of their ``Params``."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

from ingestlab.engine_specs import EngineSpec, parse_engines
from ingestlab.errors import ConfigError


class ParamsBase:
    """What every workload's validated ``Params`` dataclass shares: its form for ``run.json``."""

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict (for ``run.json``): engine specifications as the items were given."""
        values = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        given = {name: tuple(spec.value for spec in value) for name, value in values.items()
                 if isinstance(value, tuple) and value and all(isinstance(v, EngineSpec) for v in value)}
        return dataclasses.asdict(dataclasses.replace(self, **given))


@dataclasses.dataclass(frozen=True)
class EngineParams(ParamsBase):
    """The fields every notebook that measures engines starts its ``Params`` with."""

    engines: tuple[EngineSpec, ...]
    scale: str


#: The most repeats (rounds, replicates) any notebook takes: more is a run that never ends.
MAX_REPEATS = 1000
#: The most statements one configuration of a notebook times (or warms up with).
MAX_STATEMENTS = 10_000_000


def positive_int(name: str, value: Any, *, allow_zero: bool = False, most: int | None = None) -> int:
    """``value`` as an int > 0 (≥ 0 with ``allow_zero``) and at most ``most``, else :class:`ConfigError` naming ``name``."""
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (most is not None and value > most):
        raise ConfigError(name, value, f"an integer ≥ {low}" if most is None else f"an integer from {low} to {most:,}")
    return value


def one_of(name: str, value: Any, accepted: Iterable[str]) -> str:
    """``value`` if it is one of ``accepted``, else :class:`ConfigError` listing them."""
    accepted = list(accepted)
    if value not in accepted:
        raise ConfigError(name, value, "one of " + ", ".join(map(repr, accepted)))
    return value


def items_of(value: Any) -> list[str]:
    """A list parameter's items: a list as given, or a comma-separated string split and stripped.

    Examples
    --------
    >>> items_of("a, b,,c"), items_of(["x"]), items_of(None), items_of(2)
    (['a', 'b', '', 'c'], ['x'], [], [2])
    """
    if isinstance(value, str):
        return [v.strip() for v in value.split(",")]
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]  # `-p CLIENTS 2`: one value is a list of one


def engine_classes(value: Any, name: str = "ENGINES") -> dict[EngineSpec, type]:
    """Each engine specification of ``value`` (see :func:`~ingestlab.engine_specs.parse_engines`) → its adapter class.

    Raises
    ------
    ConfigError
        Naming ``name`` for an empty list, a duplicate, an unknown engine or a malformed URL.
    """
    return {spec: spec.engine_class() for spec in parse_engines(value, name)}


def subset(name: str, value: Any, accepted: Sequence[str]) -> tuple[str, ...]:
    """``value`` (a list, or a comma-separated string) as a tuple of items of ``accepted``."""
    items = [v for v in items_of(value) if v]
    if not items:
        raise ConfigError(name, value, "a non-empty list of " + ", ".join(map(repr, accepted)))
    for item in items:
        if item not in accepted:
            raise ConfigError(name, item, "each item one of " + ", ".join(map(repr, accepted)))
    return tuple(items)


#: The longest a precise run (``PRECISION``) may measure before its cap stops it: a day.
MAX_MINUTES = 24 * 60.0


def positive_number(name: str, value: Any, *, most: float) -> float:
    """``value`` as a finite float > 0 and at most ``most``, else :class:`ConfigError` naming ``name``.

    Examples
    --------
    >>> positive_number("MAX_MINUTES", 2, most=60)
    2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
        raise ConfigError(name, value, f"a number above 0 and at most {most:g}")
    return float(value)


def precision_target(value: Any) -> float | None:
    """``PRECISION``: None (a fixed count of rounds) or the relative half-width asked of each headline's 95 % interval.

    Examples
    --------
    >>> precision_target(None), precision_target(0.05)
    (None, 0.05)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.001 <= value < 1:
        raise ConfigError("PRECISION", value, "None, or a relative half-width from 0.001 to 0.99 (0.05: ±5 %)")
    return float(value)
