"""Notebook 07's figure: each quantity's ratio B/A with its interval, a panel per engine, the verdict in words."""

from __future__ import annotations

import matplotlib.figure
import matplotlib.lines
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ingestlab import figures, labels, plots
from ingestlab.compare import THRESHOLD, VERDICTS

#: The legend's words for a verdict the code names tersely (``unsure``: the comparison could not tell).
VERDICT_WORDS = {"unsure": "could not tell"}

#: A verdict's grey and marker (a verdict is no engine: greys, as every condition, :data:`figures.CONDITION_GREYS`):
#: a change called is dark, its triangle pointing the way the quantity went; "same" mid grey; "could not
#: tell" light.
VERDICT_STYLE = {"slower": (figures.NEUTRAL, "^"), "higher": (figures.NEUTRAL, "^"),
                 "faster": (figures.NEUTRAL, "v"), "lower": (figures.NEUTRAL, "v"),
                 "same": (figures.CONDITION_GREYS[1], "o"), "unsure": (figures.CONDITION_GREYS[2], "o")}


#: Rows a column of the comparison figure holds before its engines' panels are set in two columns.
ROWS_PER_COLUMN = 30
#: Characters of a row's label in the figure (the full quantity is in the table).
FIGURE_LABEL_CHARS = 38


def short_quantity(row: pd.Series) -> str:
    """A row's quantity in a few words for the figure, its engine left to the panel's title.

    The variant's id, then what was compared: a scenario's name, ``fit`` and the term with its
    method; the driver is left out (the table keeps it).

    Examples
    --------
    >>> short_quantity(pd.Series({"variant": "sync_on", "table": "fits",
    ...                           "labels": "model=overhead, method=theil_sen, term=write_time"}))
    'sync on · fit write time (Theil–Sen)'
    >>> short_quantity(pd.Series({"variant": "default", "table": "results", "labels": "driver=chdb, scenario=bulk"}))
    'bulk load (COPY, LOAD DATA)'
    """
    pairs = dict(p.split("=", 1) for p in str(row.get("labels") or "").split(", ") if "=" in p)
    pairs.pop("driver", None)
    if "model" in pairs and pairs["model"] in ("overhead", pairs.get("term")):
        pairs.pop("model")
    method = pairs.pop("method", None)
    what = ", ".join(labels.label(v) for v in pairs.values())
    if row.get("table") == "fits":
        what = f"fit {what}" + (f" ({labels.label(method)})" if method else "")
    elif row.get("table") != "results":
        what = f"{row.get('table')}: {what}" if what else str(row.get("table"))
    variant = row.get("variant")
    who = str(variant).replace("_", " ") if isinstance(variant, str) and variant not in ("", "default") else ""
    text = " · ".join(p for p in (who, what) if p)
    return text if len(text) <= FIGURE_LABEL_CHARS else text[:FIGURE_LABEL_CHARS - 1] + "…"


def _comparison_panels(data: pd.DataFrame) -> list[list[str]]:
    # the engines' panels in columns: one column up to ROWS_PER_COLUMN rows, else two of about equal height
    engines = list(dict.fromkeys(data["engine"].fillna("")))
    sizes = data["engine"].fillna("").value_counts()
    if len(data) <= ROWS_PER_COLUMN or len(engines) < 2:
        return [engines]
    columns, heights = [[], []], [0, 0]
    for engine in sorted(engines, key=lambda e: -sizes[e]):  # largest first, each to the shorter column
        i = int(heights[1] < heights[0])
        columns[i].append(engine)
        heights[i] += sizes[engine]
    return [[e for e in engines if e in column] for column in columns]


def plot_comparison(table: pd.DataFrame, *, threshold: float | None = None) -> matplotlib.figure.Figure:
    """Ratios b/a with their 95 % intervals, the ±threshold band shaded: a panel per engine, a row per quantity.

    Colour and marker say the verdict; a thick grey bar under a quantity of raw samples is its
    samples' own bootstrap interval (``samples_ci_low``/``high``), narrower than the run-level
    one the verdict rests on. Rows are sorted by ratio within their engine's panel and named
    by :func:`short_quantity`; over :data:`ROWS_PER_COLUMN` rows the panels stand in two
    columns. Every panel has the same x axis (:func:`ratio_limits`): every ratio and the
    ±threshold band, the intervals up to :data:`CI_ROOM` times past them; an interval that runs
    further is cut at the axis' edge, marked there by an arrowhead (a fit's write time whose
    CI takes in zero has a ratio interval to 10¹⁵, and squeezed every other row onto one line).
    Logarithmic when the axis spans :data:`LOG_SPAN` or more. The function only draws: save
    with :func:`ingestlab.figures.save`.
    """
    data = table.dropna(subset=["ratio"]).reset_index(drop=True)
    if threshold is None:
        threshold = float(table["threshold"].iloc[0]) if len(table) and "threshold" in table else THRESHOLD
    columns = _comparison_panels(data) if len(data) else [[""]]
    counts = data["engine"].fillna("").value_counts()
    height = {e: max(int(counts.get(e, 0)), MIN_PANEL_ROWS) for column in columns for e in column}
    rows = max(sum(height[e] + 2 for e in column) for column in columns)  # + a title's room
    fig = plt.figure(figsize=(figures.PAGE_WIDTH, 1.3 + 0.15 * rows))
    grid = fig.add_gridspec(rows, len(columns), hspace=0.0, wspace=1.2 if len(columns) > 1 else 0.2)
    limits = ratio_limits(data, threshold)
    log = limits[1] / limits[0] >= LOG_SPAN
    axes = []
    for c, column in enumerate(columns):
        top = 0
        for engine in column:
            part = data[data["engine"].fillna("") == engine].sort_values("ratio").reset_index(drop=True)
            n = height[engine]
            ax = fig.add_subplot(grid[top + 1:top + 1 + n, c], sharex=axes[0] if axes else None)
            top += n + 2
            axes.append(ax)
            _draw_ratios(ax, part, threshold, limits)
            ax.set_title(labels.label(engine) if engine else "", loc="left", fontsize="small")
    axes[0].set_xlim(*limits)
    if log:
        plots.set_scale(axes[0], "x", True, np.asarray(limits))
        axes[0].set_xlim(*limits)
    for column_axes in _columns_of(axes, columns):  # one shared x axis: its ticks under each column's last panel
        for ax in column_axes:
            ax.tick_params(axis="x", labelbottom=ax is column_axes[-1], labelsize=figures.SMALLEST_PT + 1)
        column_axes[-1].set_xlabel("ratio B / A, 95 % CI")
    handles = {}
    for ax in axes:
        for h, name in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(name, h)
    if CUT_LABEL in handles:  # any verdict's interval can be cut: its key in grey, last
        handles.pop(CUT_LABEL)
        handles[CUT_LABEL] = matplotlib.lines.Line2D([], [], marker=">", ls="none", ms=4, color="0.4")
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=min(len(handles), 4),
               frameon=False, fontsize="small", bbox_to_anchor=(0.5, 0.0))
    fig.subplots_adjust(bottom=min(0.35, 0.9 / fig.get_figheight()))
    return fig


def _columns_of(axes: list, columns: list[list[str]]) -> list[list]:
    out, i = [], 0
    for column in columns:
        out.append(axes[i:i + len(column)])
        i += len(column)
    return out


#: Rows of height a panel of :func:`plot_comparison` is given at least (fewer quantities are spaced out): a readable panel.
MIN_PANEL_ROWS = 6
#: The legend's entry for an interval cut at the axis' edge.
CUT_LABEL = "interval runs past the axis"
#: How far past the ratios themselves (a factor) :func:`plot_comparison` draws an interval before cutting it.
CI_ROOM = 2.0
#: The span of the ratio axis (its largest over its smallest value) from which it is logarithmic.
LOG_SPAN = 4.0


def ratio_limits(data: pd.DataFrame, threshold: float) -> tuple[float, float]:
    """The ratio axis of :func:`plot_comparison`: every ratio, the ±threshold band, intervals up to :data:`CI_ROOM`× past.

    Examples
    --------
    >>> t = pd.DataFrame({"ratio": [0.8, 1.2], "ci_low": [0.7, 1e-9], "ci_high": [0.9, 1e15]})
    >>> [round(v, 2) for v in ratio_limits(t, 0.05)]  # 0.8 / 2 and 1.2 × 2, with 5 % of room
    [0.38, 2.52]
    >>> [round(v, 2) for v in ratio_limits(t.assign(ci_low=[0.6, 1.0], ci_high=[0.9, 1.4]), 0.05)]
    [0.57, 1.47]
    """
    points = data["ratio"].to_numpy(dtype=float)
    points = points[np.isfinite(points) & (points > 0)]
    lo, hi = min([1 - threshold, *points]), max([1 + threshold, *points])
    ends = pd.concat([data[c] for c in ("ci_low", "ci_high", "samples_ci_low", "samples_ci_high") if c in data])
    ends = ends.to_numpy(dtype=float)
    ends = ends[np.isfinite(ends) & (ends > 0)]
    if ends.size:
        lo, hi = max(min(lo, ends.min()), lo / CI_ROOM), min(max(hi, ends.max()), hi * CI_ROOM)
    return float(lo * 0.95), float(hi * 1.05)  # the markers and arrowheads at the ends stay inside


def _draw_ratios(ax: plt.Axes, part: pd.DataFrame, threshold: float, limits: tuple[float, float]) -> None:
    # one engine's rows: the ±threshold band, 1, each sample-only interval, each ratio with its interval, cut at limits
    lo, hi = limits[0] / 0.95, limits[1] / 1.05
    ax.axvspan(1 - threshold, 1 + threshold, color="0.85", zorder=0, label=f"±{threshold:.0%}")
    ax.axvline(1.0, color="0.4", lw=0.8, zorder=1)
    positions = np.arange(len(part))
    if "samples_ci_low" in part:  # what the raw samples alone allow, under the run-level interval
        raw = part[np.isfinite(part["samples_ci_low"].astype(float)) & np.isfinite(part["samples_ci_high"].astype(float))]
        if not raw.empty:
            ax.hlines(positions[raw.index], raw["samples_ci_low"].clip(lo, hi), raw["samples_ci_high"].clip(lo, hi),
                      color="0.55", lw=5, alpha=0.45, zorder=1.5, label="samples alone, 95 % CI")
    for verdict in VERDICTS:
        rows = part[part["verdict"] == verdict]
        if rows.empty:
            continue
        ci_low, ci_high = rows["ci_low"].astype(float), rows["ci_high"].astype(float)
        low = np.clip(rows["ratio"] - ci_low.clip(lower=lo), 0, None)
        high = np.clip(ci_high.clip(upper=hi) - rows["ratio"], 0, None)
        colour, marker = VERDICT_STYLE[verdict]
        ax.errorbar(rows["ratio"], positions[rows.index], xerr=np.nan_to_num(np.vstack([low, high])), fmt=marker,
                    ms=3.5, capsize=2, color=colour, label=VERDICT_WORDS.get(verdict, verdict), zorder=2)
        for cut, at, marker in ((ci_low < lo, lo, "<"), (ci_high > hi, hi, ">")):
            if cut.any():
                ax.plot([at] * int(cut.sum()), positions[rows.index[cut.to_numpy()]], marker, ms=4, ls="none",
                        color=colour, zorder=2, label=CUT_LABEL)
    ax.set_yticks(positions, [short_quantity(r) for _, r in part.iterrows()], fontsize=figures.SMALLEST_PT)
    ax.set_ylim(len(part) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)
