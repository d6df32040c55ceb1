"""Checks shared by every workload's parameter validation, and the base of their ``Params``."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

from ingestlab.conninfo import mask_url, split_targets
from ingestlab.errors import ConfigError


class ParamsBase:
    """What every workload's validated ``Params`` dataclass shares: its form for ``run.json``."""

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict (for ``run.json``)."""
        return dataclasses.asdict(self)


def positive_int(name: str, value: Any, *, allow_zero: bool = False) -> int:
    """``value`` as an int > 0 (≥ 0 with ``allow_zero``), else :class:`ConfigError` naming ``name``."""
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(name, value, f"an integer ≥ {low}")
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


def engine_items(value: Any, name: str = "ENGINES") -> list[str]:
    """The engine names or URLs of a comma-separated ``value`` (one or more), each once.

    A URL holds no comma outside its query, so the list splits at commas; an empty item or one
    given twice is refused (two servers under one label would be pooled into one fit).

    Examples
    --------
    >>> engine_items("postgres, mariadb")
    ['postgres', 'mariadb']
    >>> engine_items(",")
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: ENGINES=',' is not valid: expected engine names or URLs, comma-separated (e.g. postgres,mariadb)
    """
    if isinstance(value, str):
        items = split_targets(value)
    else:
        items = [v for v in items_of(value) if v] if isinstance(value, (list, tuple)) else []
    if not items or not all(isinstance(v, str) for v in items):
        raise ConfigError(name, value, "engine names or URLs, comma-separated (e.g. postgres,mariadb)")
    twice = sorted({v for v in items if items.count(v) > 1})
    if twice:
        raise ConfigError(name, mask_url(value) if isinstance(value, str) else [mask_url(v) for v in value],
                          f"a list naming each engine once ({', '.join(map(mask_url, twice))} is given twice)")
    return items


def engine_classes(value: Any, name: str = "ENGINES") -> dict[str, type]:
    """Each item of ``value`` (see :func:`engine_items`) → the engine adapter class it selects.

    Raises
    ------
    ConfigError
        Naming ``name`` for an empty list, a duplicate, an unknown engine or a malformed URL.
    """
    from ingestlab.engines import registry

    classes = {}
    for item in engine_items(value, name):
        try:
            classes[item] = registry.class_of(item)
        except ConfigError as exc:
            raise ConfigError(name, exc.value, exc.accepted) from None
    return classes


def subset(name: str, value: Any, accepted: Sequence[str]) -> tuple[str, ...]:
    """``value`` (a list, or a comma-separated string) as a tuple of items of ``accepted``."""
    items = [v for v in items_of(value) if v]
    if not items:
        raise ConfigError(name, value, "a non-empty list of " + ", ".join(map(repr, accepted)))
    for item in items:
        if item not in accepted:
            raise ConfigError(name, item, "each item one of " + ", ".join(map(repr, accepted)))
    return tuple(items)
