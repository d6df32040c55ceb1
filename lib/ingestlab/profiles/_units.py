"""Turn the durations, counters and sizes that engines print into plain numbers."""

from __future__ import annotations

import math
import re

__all__ = [
    "NAN",
    "UNITS",
    "is_time_key",
    "parse_bytes",
    "parse_counter",
    "parse_duration_ms",
    "parse_measure",
]

NAN = math.nan

#: The units a parsed value can carry, as written in the ``unit`` column of ``Profile.items``.
UNITS = ("ms", "bytes", "count", "percent", "bytes_per_s", "count_per_s", "cost")

# Every engine here prints "no value" in its own way; all of them mean NaN.
_MISSING = {"?", "NULL", "N/A", "NaN", "nan", "-"}

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ps|ns|us|µs|ms|min|sec|s|m|h|d)")
_DURATION_FACTOR_MS = {
    "ps": 1e-9,  # MySQL's FORMAT_PICO_TIME prints "300 ps"
    "ns": 1e-6,
    "us": 1e-3,
    "µs": 1e-3,
    "ms": 1.0,
    "s": 1e3,
    "sec": 1e3,
    "m": 60e3,
    "min": 60e3,
    "h": 3600e3,
    "d": 86400e3,
}
# Old StarRocks/Impala-style profiles print "32.941ms[32941234ns]": the bracket is exact.
_EXACT_NS = re.compile(r"^(?P<shown>\S+?)\s*\[(?P<ns>\d+)ns\]$")

_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
# "74.948K (74948)": a scaled display value, then the exact value in parentheses.
_COUNTER = re.compile(rf"^(?P<num>{_NUMBER})(?P<scale>[KMBT])?(?:\s*\((?P<exact>-?\d+)\))?$")
_COUNTER_SCALE = {None: 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
# Byte sizes are binary (1 KB = 1024 B) in the StarRocks/Doris pretty printer and in PostgreSQL.
_BYTES = re.compile(rf"^(?P<num>{_NUMBER})(?P<space>\s*)(?P<unit>B|KB|kB|MB|GB|TB|PB)$")
_BYTE_FACTOR = {"B": 1, "KB": 1024, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4, "PB": 1024**5}
_PERCENT = re.compile(rf"^(?P<num>{_NUMBER})\s*%$")
_RATE = re.compile(r"^(?P<base>.*?)\s*/\s*sec$")

_TIME_KEY = re.compile(r"(?i)(time|timer|duration|latency|elapsed)(\(\w+\)|\(\*\))?$|^total$|^active$")
_BYTE_KEY = re.compile(r"(?i)bytes|memory|mem(cost|usage|limit)|reservation|throughput")


def is_time_key(key: str) -> bool:
    """Whether a counter name denotes a duration (``ScanTime``, ``IOTimer``, ``Total``).

    Examples
    --------
    >>> is_time_key("OperatorTotalTime"), is_time_key("PullRowNum")
    (True, False)
    """
    return bool(_TIME_KEY.search(key.strip()))


def parse_duration_ms(text: str) -> float:
    """Parse a printed duration into milliseconds.

    Understands the StarRocks forms (``0``, ``0ns``, ``23us``, ``2.910us``, ``3.713ms``,
    ``45s45ms``, ``1m7s``, ``9m41s``, ``1h30m``), the exact-nanosecond suffix of old profiles
    (``32.941ms[32941234ns]``, which wins over the rounded display), the Doris 2.1+ forms
    (``11sec450ms``, ``1min14sec``) and an optional space before a single unit (``3.623 ms``).
    ``?``, ``NULL`` and ``N/A`` give NaN.

    Parameters
    ----------
    text : str
        The duration as printed.

    Returns
    -------
    float
        Milliseconds, or NaN for a printed "unknown".

    Raises
    ------
    ValueError
        If the text is not a duration.

    Examples
    --------
    >>> parse_duration_ms("1m7s"), parse_duration_ms("11sec450ms"), parse_duration_ms("23us")
    (67000.0, 11450.0, 0.023)
    >>> parse_duration_ms("32.941ms[32941234ns]")
    32.941234
    """
    s = text.strip()
    if s in _MISSING:
        return NAN
    exact = _EXACT_NS.match(s)
    if exact:
        parse_duration_ms(exact["shown"])  # the display part must still be a duration
        return int(exact["ns"]) / 1e6
    if re.fullmatch(r"0+(?:\.0+)?", s):
        return 0.0  # StarRocks prints a zero duration without a unit
    compact = re.sub(r"^(\d+(?:\.\d+)?)\s+(ps|ns|us|µs|ms|min|sec|s|m|h)$", r"\1\2", s)
    pos, total = 0, 0.0
    for part in _DURATION_PART.finditer(compact):
        if part.start() != pos:
            break
        total += float(part[1]) * _DURATION_FACTOR_MS[part[2]]
        pos = part.end()
    if pos == 0 or pos != len(compact):
        raise ValueError(f"not a duration: {text!r}")
    return total


def parse_counter(text: str) -> float:
    """Parse a printed counter, preferring the exact value in parentheses.

    ``K``, ``M`` and ``B`` scale by thousand, million and billion; in StarRocks ``B`` means
    billion even on byte counters (``8.903B (8902570713)``).

    Parameters
    ----------
    text : str
        The counter as printed (``280``, ``74.948K (74948)``, ``2.867K``).

    Returns
    -------
    float
        The count, or NaN for a printed "unknown".

    Raises
    ------
    ValueError
        If the text is not a counter.

    Examples
    --------
    >>> parse_counter("74.948K (74948)"), parse_counter("8.903B (8902570713)"), parse_counter("2.5K")
    (74948.0, 8902570713.0, 2500.0)
    """
    s = text.strip()
    if s in _MISSING:
        return NAN
    m = _COUNTER.match(s)
    if not m:
        raise ValueError(f"not a counter: {text!r}")
    if m["exact"] is not None:
        return float(m["exact"])
    return float(m["num"]) * _COUNTER_SCALE[m["scale"]]


def parse_bytes(text: str) -> float:
    """Parse a printed byte size into bytes (binary multiples).

    The StarRocks/Doris pretty printer writes ``13.812 MB``, ``-1.000 B`` (no limit) and, for
    zero, a number followed by a space and an empty unit (``0.00 ``).

    Parameters
    ----------
    text : str
        The size as printed; trailing whitespace matters for the ``0.00 `` form.

    Returns
    -------
    float
        Bytes, or NaN for a printed "unknown".

    Raises
    ------
    ValueError
        If the text is not a byte size.

    Examples
    --------
    >>> parse_bytes("13.812 MB"), parse_bytes("-1.000 B"), parse_bytes("0.00 "), parse_bytes("24 kB")
    (14482931.712, -1.0, 0.0, 24576.0)
    """
    if text.strip() in _MISSING:
        return NAN
    if re.fullmatch(rf"{_NUMBER} ", text.lstrip()):
        return float(text.strip())
    m = _BYTES.match(text.strip())
    if not m or (m["unit"] == "B" and not m["space"]):
        # "8.903B" without a space is a StarRocks billion counter, not bytes.
        raise ValueError(f"not a byte size: {text!r}")
    return float(m["num"]) * _BYTE_FACTOR[m["unit"]]


def parse_measure(text: str, key: str = "") -> tuple[float, str | None]:
    """Classify one printed value and return it as a number with its unit.

    Parameters
    ----------
    text : str
        The value as printed, with any trailing whitespace kept (it marks ``0.00 `` bytes).
    key : str, optional
        The counter name; it decides the unit of bare numbers and of ``?`` (a zero under
        ``ScanTime`` is 0 ms, ``PeakUsedReservation: 0.00`` is bytes).

    Returns
    -------
    tuple of (float, str or None)
        The value and its unit (one of `UNITS`); ``(nan, None)`` for text that is not a
        measure, such as a query id.

    Examples
    --------
    >>> parse_measure("3.713ms"), parse_measure("306.985M (306985000)")
    ((3.713, 'ms'), (306985000.0, 'count'))
    >>> parse_measure("12.049K (12049) /sec"), parse_measure("0", key="PushTotalTime")
    ((12049.0, 'count_per_s'), (0.0, 'ms'))
    """
    stripped = text.strip()
    if stripped == "":
        return NAN, None
    if stripped in _MISSING:
        if is_time_key(key):
            return NAN, "ms"
        return NAN, ("bytes" if _BYTE_KEY.search(key) else None)
    rate = _RATE.match(stripped)
    if rate:
        base = rate["base"]
        if base == "":
            return NAN, None
        if re.fullmatch(_NUMBER, base) and _BYTE_KEY.search(key):
            return float(base), "bytes_per_s"  # "PerReadThreadRawHdfsThroughput: 0.0 /sec"
        try:
            return parse_bytes(base), "bytes_per_s"
        except ValueError:
            pass
        try:
            return parse_counter(base), "count_per_s"
        except ValueError:
            return NAN, None
    percent = _PERCENT.match(stripped)
    if percent:
        return float(percent["num"]), "percent"
    if re.fullmatch(_NUMBER, stripped):
        number = float(stripped)
        if text != stripped and text.endswith(" ") and "." in stripped:
            return number, "bytes"  # "0.00 ": the pretty printer's zero bytes
        if is_time_key(key):
            if "(NS)" in key.upper():
                return number / 1e6, "ms"
            if number == 0:
                return 0.0, "ms"
        if "." in stripped and _BYTE_KEY.search(key):
            return number, "bytes"
        return number, "count"
    for parser, unit in ((parse_duration_ms, "ms"), (parse_bytes, "bytes"), (parse_counter, "count")):
        try:
            return parser(stripped), unit
        except ValueError:
            continue
    return NAN, None
