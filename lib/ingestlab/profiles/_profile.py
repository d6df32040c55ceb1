"""The parsed-profile record every parser returns, and the builder of its tidy tables."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ._values import Value, expand

__all__ = ["ITEM_COLUMNS", "OPERATOR_COLUMNS", "Profile", "ProfileBuilder", "SkippedLine", "lookup"]

#: Columns of `Profile.items`, one row per (path, key, stat).
ITEM_COLUMNS = ("path", "key", "stat", "value_raw", "value", "unit", "line_no")
#: Columns of `Profile.operators`, one row per operator (plan node, stage).
OPERATOR_COLUMNS = ("name", "path", "time_ms")


@dataclass(frozen=True)
class SkippedLine:
    """One input line a parser did not understand and left out, the rest being unambiguous.

    Attributes
    ----------
    line_no : int or None
        1-based line of the input (of the file, for a fixture), when known.
    text : str
        The line as printed, without its line terminator.
    reason : str
        Why it was left out, in a few words (``not a counter, a section or a plan line``).

    Examples
    --------
    >>> SkippedLine(4, "  ### garbage ###", "not a counter or a section").as_dict()
    {'line_no': 4, 'text': '  ### garbage ###', 'reason': 'not a counter or a section'}
    """

    line_no: int | None
    text: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict (``line_no``, ``text``, ``reason``)."""
        return {"line_no": self.line_no, "text": self.text, "reason": self.reason}


@dataclass
class Profile:
    """A parsed query profile, EXPLAIN output or load reply.

    Attributes
    ----------
    kind : str
        The format that was parsed, one of ``ingestlab.profiles.KINDS``.
    summary : dict
        The headline fields, with unit-carrying snake_case keys and no NaN: ``total_ms``,
        ``execution_ms``, ``fe_overhead_ms`` (total - execution, when both are known),
        ``planning_ms``, ``olap_table_sink_ms``, ``status``, ``loaded_rows``,
        ``load_time_ms`` and its parts, ... Only the fields the input holds are present.
    items : pandas.DataFrame
        Everything that was read, in long form: ``path`` (where in the tree, ``/``-joined),
        ``key`` (the counter as the engine names it), ``stat`` (None, or ``sum``/``avg``/
        ``max``/``min``/``pct``/``count``...), ``value_raw`` (as printed), ``value`` (ms for
        durations, bytes for sizes, a number for counters, NaN for text), ``unit`` and
        ``line_no`` (1-based line of the input, when known).
    operators : pandas.DataFrame
        One row per operator or stage with its own (exclusive) time: ``name``, ``path``,
        ``time_ms``. Empty for formats without operators.
    peeled : list of str
        The client, terminal or log framing removed before parsing (``mysql>`` glued to a
        reply, a GUI client's column bars...), one phrase each; empty when there was none.
    warnings : list of str
        What the parser noticed but did not hide: operator self-times that add up to more
        than the statement's time, a Stream Load reply whose parts overlap, ...
    skipped : list of SkippedLine
        Lines the parser did not understand and left out, in input order: plan text pasted
        into a profile tree, a stray separator or error line, a note in an EXPLAIN plan.
        A line is only skipped when the rest of the input reads the same without it; a line
        that makes the input ambiguous (counters under an unknown header, a second headline
        total, a tree cut mid-way) raises `ProfileParseError` instead. Empty when every
        line was understood.
    """

    kind: str
    summary: dict[str, Any]
    items: pd.DataFrame
    operators: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(OPERATOR_COLUMNS)))
    peeled: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[SkippedLine] = field(default_factory=list)

    def value(self, key: str, path: str | None = None, stat: str | None = None) -> float:
        """Return the first numeric value of `key` (optionally under `path`), NaN if absent.

        Parameters
        ----------
        key : str
            The counter name.
        path : str, optional
            Restrict to rows whose path ends with this text.
        stat : str, optional
            Restrict to this statistic; by default the plain value (stat None).
        """
        rows = self.items[self.items["key"] == key]
        rows = rows[rows["stat"].isna()] if stat is None else rows[rows["stat"] == stat]
        if path is not None:
            rows = rows[rows["path"].str.endswith(path)]
        return float(rows["value"].iloc[0]) if len(rows) else math.nan


def lookup(
    items: pd.DataFrame, key: str, *, path: str | None = None, under: str | None = None,
    stat: str | None = None,
) -> float | None:
    """The first value of `key` in an items frame, or None when absent or NaN.

    Parameters
    ----------
    items : pandas.DataFrame
        A frame with `ITEM_COLUMNS`.
    key : str
        The counter name.
    path : str, optional
        Exact path to look in.
    under : str, optional
        Path prefix to look under (the path itself or below it).
    stat : str, optional
        The statistic; None means the plain value.
    """
    rows = items[items["key"] == key]
    rows = rows[rows["stat"].isna()] if stat is None else rows[rows["stat"] == stat]
    if path is not None:
        rows = rows[rows["path"] == path]
    if under is not None:
        rows = rows[(rows["path"] == under) | rows["path"].str.startswith(under + "/")]
    rows = rows[rows["value"].notna()]
    return float(rows["value"].iloc[0]) if len(rows) else None


def lookup_text(items: pd.DataFrame, key: str, *, under: str | None = None) -> str | None:
    """The first printed value of `key` (as text), or None when absent."""
    rows = items[(items["key"] == key) & items["stat"].isna()]
    if under is not None:
        rows = rows[(rows["path"] == under) | rows["path"].str.startswith(under + "/")]
    return str(rows["value_raw"].iloc[0]) if len(rows) else None


# Summary keys that count whole things: an integral float becomes an int.
_COUNT_SUFFIXES = (
    "_rows", "_blocks", "_records", "_fpi", "_requests", "_calls", "_count", "_scanned", "load_bytes", "wal_bytes",
)


def clean_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """Drop missing/NaN entries, make counts ints, add ``fe_overhead_ms`` (total - execution)."""
    out = {k: v for k, v in summary.items() if not (isinstance(v, float) and math.isnan(v)) and v is not None}
    for key, value in out.items():
        if isinstance(value, float) and key.endswith(_COUNT_SUFFIXES) and value.is_integer():
            out[key] = int(value)
    if "total_ms" in out and "execution_ms" in out and "fe_overhead_ms" not in out:
        out["fe_overhead_ms"] = round(out["total_ms"] - out["execution_ms"], 6)
    return out


class ProfileBuilder:
    """Collects item rows and operator rows while a parser walks its input.

    Parameters
    ----------
    kind : str
        The format being parsed.
    """

    def __init__(self, kind: str):
        self.kind = kind
        self.summary: dict[str, Any] = {}
        self._items: list[tuple] = []
        self._operators: list[tuple] = []
        self.warnings: list[str] = []
        self.skipped: list[SkippedLine] = []

    def add(
        self, path: str, key: str, raw: str, line_no: int | None = None, stat: str | None = None
    ) -> list[Value]:
        """Add a printed value, expanded into its observations; return them.

        `stat` labels the plain observation (``max`` for a ``__MAX_OF_`` child).
        """
        values = expand(key, raw)
        if stat is not None:
            values = [Value(v.key, v.stat or stat, v.raw, v.value, v.unit) for v in values]
        for v in values:
            self._items.append((path, v.key, v.stat, v.raw, v.value, v.unit, line_no))
        return values

    def add_value(self, path: str, v: Value, line_no: int | None = None) -> None:
        """Add one already-read observation."""
        self._items.append((path, v.key, v.stat, v.raw, v.value, v.unit, line_no))

    def add_number(
        self, path: str, key: str, value: float | None, unit: str | None, raw: object = None,
        line_no: int | None = None, stat: str | None = None,
    ) -> None:
        """Add a value that is already a number (JSON input)."""
        number = math.nan if value is None else float(value)
        shown = "" if raw is None else str(raw)
        self._items.append((path, key, stat, shown, number, unit, line_no))

    def skip(self, line_no: int | None, text: str, reason: str) -> None:
        """Record a line left out as not understood (see `Profile.skipped`)."""
        self.skipped.append(SkippedLine(line_no, text.rstrip("\r\n"), reason))

    def __len__(self) -> int:
        """How many item rows have been added."""
        return len(self._items)

    def operator_times(self) -> dict[str, float]:
        """``name -> own time`` of the operators added so far (largest time per name)."""
        out: dict[str, float] = {}
        for name, _, time_ms in self._operators:
            out[name] = max(time_ms, out.get(name, time_ms))
        return out

    def add_operator(self, name: str, path: str, time_ms: float) -> None:
        """Record an operator's own time."""
        if not math.isnan(time_ms):
            self._operators.append((name, path, float(time_ms)))

    def items_frame(self) -> pd.DataFrame:
        """The item rows so far, as a frame with `ITEM_COLUMNS`."""
        frame = pd.DataFrame(self._items, columns=list(ITEM_COLUMNS))
        frame["value"] = frame["value"].astype(float)
        frame["line_no"] = frame["line_no"].astype("Int64")
        return frame

    def check_operator_sum(self) -> None:
        """Compare the operators' self-times with the statement's time; warn on a surplus.

        Adds ``operator_self_sum_ms`` to the summary. Self-times that add up to more than
        ``execution_ms`` (else ``total_ms``) mean parallel work counted once per worker, or
        time counted on two operators; either way the shares shown are not a breakdown of
        the wall-clock time, and the warning says so instead of hiding it.
        """
        if not self._operators:
            return
        total = sum(time_ms for _, _, time_ms in self._operators)
        self.summary["operator_self_sum_ms"] = round(total, 6)
        reference = next(
            (self.summary[k] for k in ("execution_ms", "total_ms") if isinstance(self.summary.get(k), (int, float))),
            None,
        )
        if reference is None or math.isnan(reference) or reference <= 0:
            return
        # A rounding margin: engines print each operator's time rounded to 1 us or 0.001 ms.
        if total > reference * 1.01 + 0.01 * len(self._operators):
            self.warnings.append(
                f"operator self-times add up to {total:,.3f} ms, {100.0 * total / reference:.0f}% of the "
                f"statement's {reference:,.3f} ms: parallel work counted per worker, or time counted twice"
            )

    def build(self, peeled: list[str] | None = None) -> Profile:
        """Freeze into a `Profile`, cleaning the summary (no NaN, derived overhead)."""
        self.check_operator_sum()
        operators = pd.DataFrame(self._operators, columns=list(OPERATOR_COLUMNS))
        operators["time_ms"] = operators["time_ms"].astype(float)
        skipped = sorted(self.skipped, key=lambda s: (s.line_no is None, s.line_no or 0))
        return Profile(
            self.kind, clean_summary(self.summary), self.items_frame(), operators,
            list(peeled or []), list(self.warnings), skipped,
        )
