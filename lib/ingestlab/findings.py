"""One-sentence findings for the figures' captions, computed from the data each figure draws.

A figure states its result under it (:func:`ingestlab.captions.caption`'s ``finding``): these
functions write that sentence from the same table the figure draws, with the number of
observations behind it, so the caption and the picture cannot disagree.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from ingestlab import labels, models, report


def _name(row: pd.Series | dict, columns: Iterable[str]) -> str:
    return ", ".join(labels.label(row[c]) for c in columns if c in row and pd.notna(row[c]) and str(row[c]))


def foresaw(table: pd.DataFrame, *, unseen: str, among: str, line: str = "The line", untested: str | None = None
            ) -> str:
    """The last sentence of a held-out check: in how many of its configurations a line foresaw what it did not see.

    ``table`` has a boolean ``inside`` per configuration. With ``untested`` (what to say when none
    could be checked), the rows with a ``note`` (why that one could not) are left out of the count.

    >>> checks = pd.DataFrame({"inside": [True, False, True], "note": ["", "", "too few sizes"]})
    >>> foresaw(checks, unseen="size it did not see", among="reader × query pairs", untested="No check.")
    'The line foresaw the size it did not see in 1 of 2 reader × query pairs.'
    """
    tested = table if untested is None else table[table["note"] == ""]
    if untested is not None and tested.empty:
        return untested
    return f"{line} foresaw the {unseen} in {int(tested['inside'].sum())} of {len(tested)} {among}."


#: Lines a fit finding names one by one; with more, it gives the smallest and the largest (a caption stays a sentence).
MAX_LISTED = 4


def fits(long: pd.DataFrame, term: str, *, by: Iterable[str] = ("engine", "variant"), model: str | None = None,
         method: str = "ols", listed: int = MAX_LISTED) -> str:
    """The fitted ``term`` of every line a fit figure draws, with its 95 % CI and n; the lines rejected.

    Up to ``listed`` lines are named one by one; with more, the smallest and the largest
    estimate and how many lines lie between (a figure that names each line's estimate
    beside it asks for fewer).

    ``long`` is a fit table in the lab's long form (:data:`ingestlab.results.FIT_COLUMNS`);
    the ``method`` (``ols``) rows of ``term`` are read (``model`` narrows them).

    Examples
    --------
    >>> long = pd.DataFrame({"engine": ["engine_a", "engine_b"], "variant": ["fast", "safe"],
    ...                      "model": "overhead", "method": "ols", "term": "overhead", "estimate": [0.119, 0.2],
    ...                      "ci_low": [0.072, 0.1], "ci_high": [0.166, 0.3], "unit": "ms per statement",
    ...                      "n_points": [15, 15], "model_holds": [True, False]})
    >>> fits(long, "overhead")
    'Fitted overhead: engine a, fast 0.119 ms per statement (95 % CI 0.072–0.166); the line is rejected for engine b, safe (not drawn).'
    >>> fits(long.assign(model_holds=[None, True], estimate=[0.00022, 0.2], ci_low=[0.00018, 0.1], ci_high=[0.00026, 0.3]),
    ...      "overhead")
    'Fitted overhead: engine b, safe 0.20 ms per statement (95 % CI 0.10–0.30); not tested, so not drawn: engine a, fast 0.220 µs per statement (95 % CI 0.180–0.260).'
    >>> fits(long.assign(model_holds=None), "overhead").split(": ")[0]
    'Fitted overhead, not tested, so not drawn'
    """
    rows = long[(long["method"] == method) & (long["term"] == term)]
    if model is not None:
        rows = rows[rows["model"] == model]
    said, rejected, untested = [], [], []
    for _, row in rows.sort_values("estimate", kind="stable").iterrows() if len(rows) > listed \
            else rows.iterrows():
        name = _name(row, by)
        n = row.get("n_points")
        value, low, high, unit = report.in_readable_unit(row["estimate"], row["ci_low"], row["ci_high"],
                                                         str(row["unit"]))  # as the figure's label gives it
        estimate = report.format_estimate(value, low, high, unit=unit, n=int(n) if pd.notna(n) else None)
        holds = models.model_holds(row.get("model_holds"))
        if holds is False:
            rejected.append(name)
        elif holds is None:  # a line is drawn only for a model that holds (ingestlab.plots.plot_fit)
            untested.append(f"{name} {estimate}")
        else:
            said.append(f"{name} {estimate}")
    if not said and not rejected and not untested:
        return f"No {labels.label(term)} could be fitted at this scale (too few points)."
    if len(said) > listed:  # the two ends, in order of the estimates
        said = [f"from {said[0]} to {said[-1]} ({len(said) - 2} lines between)"]
    name = labels.label(term)
    parts = [f"Fitted {name}: " + "; ".join(said)] if said else []
    if untested:
        parts.append(("not tested, so not drawn: " if said else f"Fitted {name}, not tested, so not drawn: ")
                     + "; ".join(untested))
    text = "; ".join(parts) or f"No {name} line holds"
    if rejected:
        text += f"; the line is rejected for {', '.join(rejected)} (not drawn)"
    return text + "."


def spread(data: pd.DataFrame, value: str, *, by: Iterable[str], unit: str = "", stat: str = "median",
           what: str | None = None) -> str:
    """Where ``value`` is lowest and highest across the groups ``by``, how far apart, and n.

    With several rows per group their ``stat`` (median or mean) is taken and the smallest
    group's count is n; with one row per group, the values themselves.

    Examples
    --------
    >>> data = pd.DataFrame({"scenario": ["single_row"] * 3 + ["batch_100"] * 3,
    ...                      "elapsed_ms": [0.1, 0.12, 0.11, 1.0, 1.2, 1.1]})
    >>> spread(data, "elapsed_ms", by=["scenario"], unit="ms")
    'Median elapsed: from 0.110 ms (1 row per INSERT) to 1.10 ms (100 rows per INSERT), 10× apart; n = 3 per group.'
    >>> spread(pd.DataFrame({"q": ["a", "b"], "s": [0.027, 264.2]}), "s", by=["q"], unit="s").split("), ")[1]
    '9,785× apart; 2 values.'
    >>> spread(pd.DataFrame({"concurrency": [30, 500], "rows_per_s": [235.0, 5500.0]}), "rows_per_s", by=["concurrency"])
    'Rows per second: from 235 (concurrency 30) to 5,500 (concurrency 500), 23.4× apart; 2 values.'
    """
    by = list(by)
    frame = data[np.isfinite(pd.to_numeric(data[value], errors="coerce"))]
    if frame.empty:
        return f"Nothing measured for {labels.column_label(value)}."
    grouped = frame.groupby(by, sort=False, dropna=False)[value]
    central = grouped.agg(stat)
    counts = grouped.size()
    low_key, high_key = central.idxmin(), central.idxmax()

    def key_name(key) -> str:
        key = key if isinstance(key, tuple) else (key,)
        return ", ".join(_named(column, k) for column, k in zip(by, key) if pd.notna(k) and str(k))

    label = what or labels.column_label(value).split(" (")[0]
    head = f"{stat.capitalize()} {label}" if counts.max() > 1 else label[:1].upper() + label[1:]
    suffix = f" {unit}" if unit else ""
    low, high = float(central[low_key]), float(central[high_key])
    ratio = high / low if low > 0 and high > 0 else float("nan")
    # "9,784× apart", as print sets it (":.3g" wrote 9.78e+03)
    apart = f", {ratio:,.0f}× apart" if ratio >= 1000 else f", {ratio:.3g}× apart" if ratio > 0 else ""
    apart = apart if len(central) > 1 else ""
    n = f"; n = {int(counts.min())} per group" if counts.max() > 1 else f"; {len(central)} values"
    if len(central) == 1:
        return f"{head}: {report.format_value(low)}{suffix} ({key_name(low_key)}){n}."
    return (f"{head}: from {report.format_value(low)}{suffix} ({key_name(low_key)}) to "
            f"{report.format_value(high)}{suffix} ({key_name(high_key)}){apart}{n}.")


def _named(column: str, value: object) -> str:
    """A group's value in a sentence: a name as itself, a number with what it counts (``concurrency 30``, ``… 100 ms``).

    Examples
    --------
    >>> _named("group_commit_interval_ms", 100), _named("rows_per_insert", 1000), _named("scenario", "single_row")
    ('group commit interval 100 ms', 'rows per INSERT 1,000', '1 row per INSERT')
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return labels.value_label(column, value)
    name, _, unit = labels.column_label(column).partition(" (")
    number = f"{int(value):,}" if float(value).is_integer() else report.format_value(float(value))
    return f"{name} {number}" + (f" {unit.rstrip(')')}" if unit else "")


def live_vs_published(comparison: pd.DataFrame, *, label: str = "quantity", left_out: pd.Series | None = None) -> str:
    """How far this run's numbers sit from the study's, and for how many the live CI covers the study's value.

    ``comparison`` is :func:`ingestlab.models.compare_with_published`'s table (``published``,
    ``live``, ``live_ci_low``, ``live_ci_high``). ``left_out`` marks rows the figure does not
    draw (a fitted number whose line does not hold): they are named, and not counted.
    """
    dropped = comparison[left_out] if left_out is not None else comparison.iloc[:0]
    comparison = comparison[~left_out] if left_out is not None else comparison
    tail = ""
    if len(dropped):
        names = ", ".join(report.plain(labels.phrase(str(q))) for q in dropped[label])
        tail = f" Left out, their lines not holding (or not tested): {names}."
    shown = comparison[comparison["published"].notna() & (comparison["published"] != 0)
                       & np.isfinite(pd.to_numeric(comparison["live"], errors="coerce"))]
    if shown.empty:
        return "No quantity of this run can be set beside the seed's." + tail
    ratio = shown["live"] / shown["published"]
    low, high = ratio.idxmin(), ratio.idxmax()
    with_ci = shown[shown["live_ci_low"].notna() & shown["live_ci_high"].notna()]
    covered = int(((with_ci["live_ci_low"] <= with_ci["published"])
                   & (with_ci["published"] <= with_ci["live_ci_high"])).sum())
    text = (f"Live ÷ published from {report.format_value(float(ratio[low]))} "
            f"({report.plain(labels.phrase(str(shown.loc[low, label])))}) to "
            f"{report.format_value(float(ratio[high]))} ({report.plain(labels.phrase(str(shown.loc[high, label])))}) "
            f"over {len(shown)} quantities")
    if len(with_ci):
        text += f"; the live 95 % CI covers the seed's value for {covered} of the {len(with_ci)} with an interval"
    return text + "." + tail


def shares(data: pd.DataFrame, value: str, *, of: str | list[str], part: str, unit: str = "ms") -> str:
    """For each whole (``of``), its largest part (``part``) and that part's share of the whole.

    Examples
    --------
    >>> parts = pd.DataFrame({"variant": ["sync_on", "sync_on", "sync_off"], "component": ["wal_flush", "planning",
    ...                       "planning"], "ms": [0.06, 0.01, 0.01]})
    >>> shares(parts, "ms", of="variant", part="component")
    'Largest part: synchronous_commit on WAL flush 0.0600 ms of 0.0700 ms (86 %); synchronous_commit off planning 0.0100 ms of 0.0100 ms (100 %).'
    """
    said = []
    for whole, group in data.groupby(of, sort=False):
        group = group[np.isfinite(pd.to_numeric(group[value], errors="coerce"))]
        total = float(group[value].clip(lower=0).sum())
        if group.empty or not total > 0:
            continue
        top = group.loc[group[value].idxmax()]
        name = ", ".join(labels.label(w) for w in (whole if isinstance(whole, tuple) else (whole,)))
        said.append(f"{name} {labels.label(top[part])} {report.format_value(float(top[value]))} {unit} "
                    f"of {report.format_value(total)} {unit} ({top[value] / total:.0%})".replace("%)", " %)"))
    return ("Largest part: " + "; ".join(said) + ".") if said else "No part measured."


def first_sentence(text: str) -> str:
    """The first sentence of a notebook's markdown paragraph, plain (for a caption).

    Examples
    --------
    >>> first_sentence("Of **9** quantities compared, 9 unsure. No change passed.")
    'Of 9 quantities compared, 9 unsure.'
    """
    plain = report.plain(text)
    for end in (". ", ".\n"):
        at = plain.find(end)
        if at >= 0:
            return plain[:at + 1]
    return plain if plain.endswith(".") or not plain else plain + "."
