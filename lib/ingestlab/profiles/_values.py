"""Split one printed profile value into tidy observations (aggregates, annotations, pairs)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._units import parse_measure

__all__ = ["Value", "expand", "expand_pairs"]

_AGGREGATE_PART = re.compile(r"^(sum|avg|max|min) (.+)$")
_AGGREGATE_SPLIT = re.compile(r",\s+(?=(?:sum|avg|max|min) )")
# "3ms / 1" in the StarRocks Planner section: a time and how many times it was measured.
_TIMES_COUNT = re.compile(r"^(?P<main>\S+) / (?P<count>\d+)$")
# "4s930ms (14.57%) [CPUTime: 4s930ms]" in ANALYZE PROFILE output.
_ANNOTATED = re.compile(
    r"^(?P<main>[^\[\]()]+?(?:\s*\(\d+\))?)"  # the value, with an exact count if any
    r"(?:\s+\((?P<pct>-?[\d.]+)%\))?"  # its share of the total
    r"(?:\s+\[(?P<bracket>[^\[\]]*)\])?$"  # details: [CPUTime: x, ...] or [min=x, max=y]
)
_PAIR_SPLIT = re.compile(r",\s+(?=%?\s*[A-Za-z][\w\- ]*?:\s)")
_BRACKET_SPLIT = re.compile(r",\s+")
_PERCENT_KEYS = {"% non-child": "% non-child", "non-child": "% non-child"}


@dataclass(frozen=True)
class Value:
    """One observation read from a printed value.

    Attributes
    ----------
    key : str
        The counter name (an annotation inside brackets keeps its own name).
    stat : str or None
        ``None`` for the value itself; ``sum``/``avg``/``max``/``min`` for aggregates and
        ``__MAX_OF_``/``__MIN_OF_`` children; ``pct`` for a share of the total; ``count``
        for the number of measurements; other statistics as the engine names them.
    raw : str
        The printed text this observation came from.
    value : float
        The number (ms, bytes, count, percent...), NaN when the text is not a measure.
    unit : str or None
        The unit of `value`, ``None`` for text.
    """

    key: str
    stat: str | None
    raw: str
    value: float
    unit: str | None


def _measurable(text: str, key: str) -> bool:
    value, unit = parse_measure(text, key)
    return unit is not None or text.strip() in {"?", "NULL", "N/A"}


def _one(key: str, stat: str | None, raw: str) -> Value:
    value, unit = parse_measure(raw, key)
    return Value(key, stat, raw.strip(), value, unit)


def expand_pairs(text: str) -> list[Value] | None:
    """Read ``Name: value, Name: value`` (all parts measures), or return None.

    Examples
    --------
    >>> [(v.key, v.value, v.unit) for v in expand_pairs("Active: 7.315ms, % non-child: 100.00%")]
    [('Active', 7.315, 'ms'), ('% non-child', 100.0, 'percent')]
    """
    out: list[Value] = []
    for part in _PAIR_SPLIT.split(text.strip()):
        name, sep, raw = part.partition(":")
        name = name.strip()
        if not sep or not name:
            return None
        if name in _PERCENT_KEYS:
            number = raw.strip().rstrip("%")
            try:
                out.append(Value(_PERCENT_KEYS[name], None, raw.strip(), float(number), "percent"))
            except ValueError:
                return None
            continue
        if not _measurable(raw, name):
            return None
        out.extend(expand(name, raw))
    return out


def _bracket(key: str, text: str) -> list[Value] | None:
    out: list[Value] = []
    for part in _BRACKET_SPLIT.split(text.strip()):
        if "=" in part and ":" not in part:
            name, _, raw = part.partition("=")
            name = name.strip()
            if name in ("min", "max", "avg", "sum") and _measurable(raw, key):
                out.append(_one(key, name, raw))
                continue
            return None
        name, sep, raw = part.partition(":")
        if not sep:
            return None
        annotated = _ANNOTATED.match(raw.strip())
        if annotated and _measurable(annotated["main"], name.strip()):
            out.append(_one(name.strip(), None, annotated["main"]))
            if annotated["pct"] is not None:
                out.append(Value(name.strip(), "pct", annotated["pct"] + "%", float(annotated["pct"]), "percent"))
            continue
        return None
    return out


def expand(key: str, raw: str) -> list[Value]:
    """Read one printed value into one or more observations.

    Parameters
    ----------
    key : str
        The counter name the value was printed under.
    raw : str
        The value as printed; trailing whitespace is kept because ``0.00 `` means zero bytes.

    Returns
    -------
    list of Value
        At least one observation; the first has ``stat`` None unless the value is an
        aggregate (``avg 1ms, max 2ms, min 0ns``), which yields one row per statistic.

    Examples
    --------
    >>> [(v.key, v.stat, v.value) for v in expand("ExecTime", "avg 11sec450ms, max 11sec450ms, min 10sec610ms")]
    [('ExecTime', 'avg', 11450.0), ('ExecTime', 'max', 11450.0), ('ExecTime', 'min', 10610.0)]
    >>> [(v.key, v.stat, v.value) for v in expand("TotalTime", "4s930ms (14.57%) [CPUTime: 4s930ms]")]
    [('TotalTime', None, 4930.0), ('TotalTime', 'pct', 14.57), ('CPUTime', None, 4930.0)]
    """
    text = raw.strip()

    parts = _AGGREGATE_SPLIT.split(text)
    matches = [_AGGREGATE_PART.match(p) for p in parts]
    if text and all(matches):
        return [_one(key, m[1], m[2]) for m in matches]

    times = _TIMES_COUNT.match(text)
    if times and _measurable(times["main"], key):
        return [_one(key, None, times["main"]), Value(key, "count", times["count"], float(times["count"]), "count")]

    annotated = _ANNOTATED.match(text)
    if annotated and (annotated["pct"] or annotated["bracket"] is not None) and _measurable(annotated["main"], key):
        first = _one(key, None, annotated["main"])
        out = [Value(key, None, text, first.value, first.unit)]
        if annotated["pct"] is not None:
            out.append(Value(key, "pct", annotated["pct"] + "%", float(annotated["pct"]), "percent"))
        if annotated["bracket"] is not None:
            out.extend(_bracket(key, annotated["bracket"]) or [])
        return out

    if "," in text and ":" in text:
        pairs = expand_pairs(f"{key}: {text}")
        if pairs is not None and len(pairs) > 1:
            return pairs

    value, unit = parse_measure(raw, key)
    return [Value(key, None, text, value, unit)]
