"""Turning tables into the sentences and headline numbers the notebooks show."""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import pandas as pd


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
                    ci: float = 0.95) -> str:
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

    Returns
    -------
    str
        ``"<value> <unit> (<level> % CI <low>–<high>)"`` or ``"<value> <unit> (no CI)"``.

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
    """
    digits = decimals(value, low, high) if digits is None else digits
    head = format_number(value, digits) + (f" {unit}" if unit else "")
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{head} (no CI)"
    return f"{head} ({100 * ci:g} % CI {format_number(low, digits)}–{format_number(high, digits)})"


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
