"""The plot helpers the notebooks share: a tidy frame and column names in, an Axes with its own labels out."""

from __future__ import annotations

import matplotlib
import matplotlib.collections
import matplotlib.colors
import matplotlib.container
import matplotlib.font_manager
import matplotlib.lines
import matplotlib.pyplot as plt
import matplotlib.ticker
import matplotlib.transforms
import numpy as np
import pandas as pd
import seaborn as sns

from ingestlab import direct_labels, labels, report
from ingestlab.captions import room_for_rows, wrapped
from ingestlab.figures import (
    CONDITION_MARKERS,
    LABEL_CHARS,
    LOG_DECADES,
    MODEL_POINTS,
    NEUTRAL,
    PAGE_WIDTH,
    SMALLEST_PT,
    engine_of,
    markers,
    palette,
)


def spans_decades(values, decades: float = LOG_DECADES) -> bool:
    """Whether the positive ``values`` span at least ``decades`` orders of magnitude (then a log axis helps).

    Examples
    --------
    >>> spans_decades([0.07, 1.2, 150.0]), spans_decades([50, 100, 200]), spans_decades([])
    (True, False, False)
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    return bool(len(values)) and bool(np.log10(values.max() / values.min()) >= decades)


def _tick(value: float, _pos=None) -> str:
    # a tick as the number it is: 0.01, 1, 1,000 — never 10^-2 or 1e+03
    if value <= 0 or not np.isfinite(value):
        return f"{value:g}"
    # the fewest decimals that write the tick exactly (ticks are round numbers: 0.01, 1.75, 2,000)
    digits = next((d for d in range(12) if abs(round(value, d) - value) <= 1e-9 * value), 12)
    return f"{value:,.{digits}f}"


def plain_ticks() -> matplotlib.ticker.Formatter:
    """A tick formatter that writes numbers as numbers (``0.01``, ``1,000``), never as powers or exponents."""
    return matplotlib.ticker.FuncFormatter(_tick)


class _LogTicks(matplotlib.ticker.LogLocator):
    """Powers of ten; also 2 and 5 times them under two decades in view where their labels have room; evenly
    spaced ticks under one decade."""

    def __call__(self):
        low, high = self.axis.get_view_interval()
        if 0 < low and high / low < 10:  # a power of ten or none in view: round numbers instead
            ticks = matplotlib.ticker.MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high)
            return ticks[ticks > 0]
        self.set_params(subs=(1.0, 2.0, 5.0) if 0 < low and high / low < 100 and self._room_for_twos(low, high)
                        else (1.0,))
        return super().__call__()

    def _room_for_twos(self, low: float, high: float) -> bool:
        # 1 and 2 (log10 2 = 0.3 decade apart, the closest pair) side by side with a character's gap: a short
        # axis printed "100" against "200" (a digit is about 0.64 of the font's size wide, a comma less)
        ax = self.axis.axes
        length = ax.bbox.width if self.axis is ax.xaxis else ax.bbox.height
        size = matplotlib.font_manager.FontProperties(size=plt.rcParams[f"{self.axis.axis_name}tick.labelsize"])
        pixels = size.get_size_in_points() * ax.figure.dpi / 72
        decades = np.arange(np.floor(np.log10(low)), np.ceil(np.log10(high)) + 1)
        ticks = np.outer([1.0, 2.0, 5.0], 10.0 ** decades).ravel()
        widest = max(len(_tick(v)) for v in ticks[(ticks >= low) & (ticks <= high)])
        need = pixels * (0.64 * widest + 0.64) if self.axis is ax.xaxis else pixels * 1.2
        return length * np.log10(2) / np.log10(high / low) >= need


def set_scale(ax: plt.Axes, axis: str, log: bool | str, values) -> None:
    """Set a log ``axis`` when asked (``log=True``) or when the values span decades (``"auto"``); plain ticks.

    Asked for, a log axis is still set only where the values span a decade at least: under one,
    its ticks are few and uneven, and a linear axis reads the same values more plainly.
    ``"always"``: log whatever these values span (panels sharing an axis, decided over all of them).
    """
    if log == "always":
        log = True
    else:
        log = spans_decades(values) if log == "auto" else log and spans_decades(values, 1.0)
    if not log:
        return
    getattr(ax, f"set_{axis}scale")("log")
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(_LogTicks(base=10))
    target.set_major_formatter(plain_ticks())
    target.set_minor_formatter(matplotlib.ticker.NullFormatter())


def named(data: pd.DataFrame, *columns: str | None) -> pd.DataFrame:
    # identifiers of the plotted categories as a reader's words (labels.py), numbers kept
    return labels.relabel(data, [c for c in columns if c and not pd.api.types.is_numeric_dtype(data[c])
                                 or c and pd.api.types.is_bool_dtype(data[c])])


def legend_below(ax: plt.Axes, *, ncol: int = 1, title: str | None = None, handles=None, labels_=None) -> None:
    # below the axes: never over the data, and as wide as the figure for long labels with their CIs
    args = (handles, labels_) if handles is not None else ()
    if not args and not ax.get_legend_handles_labels()[0]:
        return
    # anchored a fixed distance under the axes (room for tick labels and the axis label), whatever their height
    under = matplotlib.transforms.offset_copy(ax.transAxes, fig=ax.figure, y=-4.2 * plt.rcParams["font.size"],
                                              units="points")
    ax.legend(*args, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=under, ncol=ncol,
              fontsize="small", title=title, title_fontsize="small", frameon=False)


def legend_under(fig: matplotlib.figure.Figure, handles, names, *, title: str | None = None) -> None:
    """The figure's one legend, under all its panels: a column per engine, or as many columns as fit.

    Where the entries name several engines and a column each fits across the page, each
    engine's entries go down its own column (:func:`engine_columns`), the others after them;
    else the entries fill as many columns as the longest leaves room for. Replaces any figure
    legend already there (a caller adds entries to it this way).
    """
    for old in list(fig.legends):
        old.remove()
    handles, names, ncol = engine_columns(list(handles), [str(n) for n in names])
    fig.legend(handles, names, title=title, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=ncol, fontsize="small", title_fontsize="small", frameon=False)


def engine_columns(handles: list, names: list[str]) -> tuple[list, list[str], int]:
    """Legend entries laid out by engine: each engine's entries together down one column, the rest shared below.

    matplotlib fills a legend's columns top to bottom. As many columns as fit across the page
    (:func:`legend_columns`); the engines, in their order, go down them whole, as few rows as
    that allows (a column per engine where they fit: notebook 04's five PostgreSQL and four
    MariaDB variants; PostgreSQL and MariaDB in one column and DuckDB and ClickHouse in the
    other where four do not: notebook 01's); blank entries pad the columns, and entries that
    name no engine (notes on lines and bands) follow, shared between them. With fewer than two
    engines the entries are returned as they are.

    Examples
    --------
    >>> _, names, ncol = engine_columns([None] * 4, ["PostgreSQL, defaults", "PostgreSQL, sync off", "MariaDB",
    ...                                              "a note"])
    >>> ncol, names
    (2, ['PostgreSQL, defaults', 'PostgreSQL, sync off', 'a note', 'MariaDB', '', ''])
    """
    groups: dict[str, list] = {}
    rest = []
    for handle, name in zip(handles, names):
        engine = engine_of(name)
        (groups.setdefault(engine, []) if engine else rest).append((handle, name))
    fit = legend_columns(names)
    if len(groups) < 2 or fit < 2:
        return handles, names, fit
    laid = _packed(list(groups.values()), min(fit, len(groups)))
    blank = (matplotlib.lines.Line2D([], [], ls="none"), "")
    rows = max(len(c) for c in laid)
    share = -(-len(rest) // len(laid))
    laid = [c + [blank] * (rows - len(c)) + rest[i * share:(i + 1) * share] for i, c in enumerate(laid)]
    depth = max(len(c) for c in laid)
    flat = [entry for column in laid for entry in column + [blank] * (depth - len(column))]
    return [h for h, _ in flat], [n for _, n in flat], len(laid)


def _packed(groups: list[list], columns: int) -> list[list]:
    # the groups, in order and whole, down at most `columns` columns of as few rows as that allows
    for rows in range(max(len(g) for g in groups), sum(len(g) for g in groups) + 1):
        laid: list[list] = [[]]
        for group in groups:
            if laid[-1] and len(laid[-1]) + len(group) > rows:
                laid.append([])
            laid[-1] += group
        if len(laid) <= columns:
            return laid
    return [[entry for g in groups for entry in g]]


def legend_columns(names, *, most: int = 3) -> int:
    """How many columns of legend entries named ``names`` fit across the page (at most ``most``).

    Examples
    --------
    >>> legend_columns(["PostgreSQL, synchronous commit on", "DuckDB, defaults"])
    2
    >>> legend_columns(["MariaDB, log written at commit, flushed each second and a longer tail than that"])
    1
    """
    longest = max((len(line) for n in names for line in str(n).splitlines()), default=0)
    entry_in = 0.5 + longest * 0.55 * 0.833 * plt.rcParams["font.size"] / 72  # handle + text ("small")
    return max(1, min(most, len(list(names)) or 1, int((PAGE_WIDTH - 0.3) // entry_in)))


def plot_latency(data: pd.DataFrame, *, x: str = "elapsed_ms", y: str = "scenario", hue: str | None = None,
                 ax: plt.Axes | None = None, log: bool | str = "auto") -> plt.Axes:
    """Latency distribution per category: boxes (median, quartiles) over every sample.

    Boxes are outlined in their colour, not filled, so a box narrow on a log axis stays
    visible (a filled one turns into its black edge); ``log="auto"`` uses a log axis only
    when the samples span decades.
    """
    ax = ax or plt.figure().gca()
    data = named(data, y, hue)
    levels = list(dict.fromkeys(data[hue])) if hue else []
    colours = {"palette": palette(levels), "hue_order": levels} if hue else {"color": NEUTRAL}
    sns.boxplot(data=data, x=x, y=y, hue=hue, ax=ax, fill=False, fliersize=1.5, linewidth=1, gap=0.15, **colours)
    set_scale(ax, "x", log, data[x])
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel("")
    if hue and ax.get_legend() is not None:  # under the axes, as wide as the page: the boxes keep their width
        handles, names = ax.get_legend_handles_labels()
        legend_below(ax, ncol=legend_columns(names), handles=handles, labels_=names)
    return ax


def short_estimate(value: float, low: float, high: float, unit: str) -> str:
    """An estimate and its 95 % CI in a few characters, for a label beside a line (:func:`ingestlab.direct_labels.label_ends`).

    The time unit heading ``unit`` (``ms per partition`` → ``ms``) is kept, or the next smaller
    one where the value is under a tenth of it (0.000094 ms → 0.094 µs).

    Examples
    --------
    >>> short_estimate(0.000094, 0.000049, 0.000139, "ms per partition")
    '0.094 µs (0.049–0.139)'
    >>> short_estimate(0.284, 0.253, 0.315, "ms per statement"), short_estimate(54.2, np.nan, np.nan, "ms per load")
    ('0.284 ms (0.253–0.315)', '54.2 ms (no CI)')
    """
    value, low, high, unit = report.in_readable_unit(value, low, high, unit)
    return report.format_estimate(value, low, high, unit=unit.split(" per ")[0]).replace("95 % CI ", "")


def draw_model(ax: plt.Axes, grid: np.ndarray, intercept: float, slope: float, low: float, high: float, *,
                color, label: str | None, x_of=None) -> matplotlib.lines.Line2D:
    """``intercept + slope · grid`` as a dense curve, and the band its slope's CI spans (shaded).

    Neither widens the axes: the data drawn before set them. The curve stops where it
    leaves them and the band is cut at their edges, so nothing is drawn outside the axes.
    The line is always solid: a solid line is a fitted model that holds, and no line style means
    anything else (dotted had meant both "its CI takes in zero" and, to a reader, "not
    significant" where only the band was off the log axis). Two bands are not drawn, and the
    legend says so (:func:`band_note`), never a style: a slope whose CI takes in zero (the fit
    has not resolved any cost: its band fans out from the intercept both ways and, on 05's bulk
    panel, four such fans hid the points and each other), on any axis; and on a log axis a
    band that runs below the axes' bottom (cut at the bottom edge it would cover the panel
    under the data). The reason is the line's gid (:data:`BAND_OFF_REASONS`). Draw only a
    model that holds, over ``grid`` from :func:`model_grid` of the ``x`` it was fitted to.
    """
    at = grid if x_of is None else x_of(grid)  # a model in a transform of x (log₂ of the level) drawn at x
    line = intercept + slope * at
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())  # what the data drawn so far span
    inside = (grid >= x0) & (grid <= x1)
    shown = np.where((line >= y0) & (line <= y1), line, np.nan)  # cut where it leaves the axes
    banded = bool(np.isfinite(low) and np.isfinite(high))
    lowest = np.minimum(intercept + low * at, intercept + high * at)[inside] if banded else np.array([])
    off_scale = ("zero" if banded and min(low, high) <= 0
                 else "log" if banded and ax.get_yscale() == "log" and bool((lowest < y0).any()) else None)
    # added as an artist, not plotted: a plotted line would join the data limits and widen the axes
    drawn = ax.add_artist(matplotlib.lines.Line2D(grid[inside], shown[inside], color=color, lw=1.2,
                                                  ls="-",
                                                  label=label, gid=f"band-off:{off_scale}" if off_scale else None))
    if banded and not off_scale:
        a, b = np.clip(intercept + low * at, y0, y1), np.clip(intercept + high * at, y0, y1)
        grid, a, b = grid[inside], a[inside], b[inside]
        outline = np.concatenate([np.column_stack([grid, a]), np.column_stack([grid[::-1], b[::-1]])])
        ax.add_collection(matplotlib.collections.PolyCollection([outline], facecolors=[color], alpha=0.15,
                                                                linewidths=0), autolim=False)
    return drawn


#: Why :func:`draw_model` left a band out, by the gid it gives the line (``band-off:<reason>``).
BAND_OFF_REASONS = {"zero": "takes in zero", "log": "runs below the log axis"}


def band_note(*axes: plt.Axes) -> str:
    """What a figure's key says when one of ``axes`` has a fit drawn without its band, else ``""``.

    Examples
    --------
    >>> ax = plt.figure().gca()
    >>> ax.set_yscale("log")
    >>> _ = ax.plot([1, 2], [1, 2])
    >>> band_note(ax)
    ''
    >>> band_note(draw_model(ax, np.array([1.0, 2.0]), 1.5, 0.0, -1.0, 1.0, color="k", label=None).axes)
    'no band where its CI takes in zero'
    >>> band_note(draw_model(ax, np.array([1.0, 2.0]), -1.0, 1.0, 0.5, 1.5, color="k", label=None).axes)
    'no band where its CI takes in zero or runs below the log axis'
    """
    gids = {line.get_gid() for ax in axes for line in ax.lines}
    said = {reason: f"band-off:{reason}" in gids for reason in BAND_OFF_REASONS}
    reasons = [text for reason, text in BAND_OFF_REASONS.items() if said[reason]]
    return f"no band where its CI {' or '.join(reasons)}" if reasons else ""


def model_grid(values, log: bool) -> np.ndarray:
    lo, hi = float(np.min(values)), float(np.max(values))
    return np.geomspace(max(lo, 1e-12), hi, MODEL_POINTS) if log else np.linspace(lo, hi, MODEL_POINTS)


#: How far from its row's centre a dot plot sets its outermost levels (a row is 1 apart): 06's three queries at ±0.2
#: put two readers' 7,569 and 7,454 MB labels over one another.
DODGE = 0.3


def dodges(levels: int) -> np.ndarray:
    """Where in its row a dot plot sets each of ``levels`` levels: evenly, at most :data:`DODGE` either side.

    Two rows' dots stand at least twice as far apart as two dots of one row, so that a row reads as
    one (03's ratios: a row's median and mean ±0.3 apart stood closer to the next row's than to each
    other): the step within a row is at most ``1 / (levels + 1)`` of the rows' spacing.

    Examples
    --------
    >>> [np.round(dodges(n), 3).tolist() for n in (1, 2, 3)]
    [[0.0], [-0.167, 0.167], [-0.25, 0.0, 0.25]]
    >>> float(dodges(6).max()) == DODGE
    True
    """
    half = min(DODGE, (levels - 1) / (2 * (levels + 1)))
    return np.linspace(-half, half, levels) if levels > 1 else np.zeros(1)


def plot_estimates(data: pd.DataFrame, *, x: str, y: str, low: str | None = None, high: str | None = None,
                   hue: str | None = None, ax: plt.Axes | None = None, annotate: bool = False,
                   fmt: str | None = None, log: bool = False, failed: str | None = None) -> plt.Axes:
    """A dot plot: point estimates (with their CIs as horizontal error bars, where given), one row per ``y``.

    What the lab draws where bars would stand on a log axis (:func:`plot_bars`): a dot's
    position means what its value means on any scale. ``hue`` levels sit side by side in a
    row, each in its colour and marker (:func:`palette`, :func:`markers`); ``annotate``
    writes each value beside its dot (or its CI). For a log axis (``log``, set by the caller
    after) an interval that reaches 0 or below runs to the left edge and ends in an arrow.
    ``failed`` names a column of text set on the rows whose run did not finish: their value
    (where they reached one: a cap) is drawn as an open ✕ with that text (:func:`mark_failures`).
    """
    own = ax is None
    ax = ax or plt.figure().gca()
    data = named(data.reset_index(drop=True), hue)
    if failed is not None:  # drawn apart, after the finished rows
        everything, data = data, data.assign(**{x: data[x].where(~_failed(data, failed))})
    data = data.assign(**{y: data[y].map(labels.phrase)})
    groups = list(dict.fromkeys(data[hue])) if hue else [None]
    offsets = dodges(len(groups))
    names = list(dict.fromkeys(data[y]))
    colours = palette(groups) if hue else {None: NEUTRAL}
    shapes = markers(groups) if hue else {None: "o"}
    text = _value_text(fmt)
    if log:  # where a bound ≤ 0 is drawn: half the smallest positive value (the axis starts below it)
        drawn = pd.concat([data[c] for c in (x, low, high) if c]).astype(float)
        edge = float(drawn[drawn > 0].min()) / 2 if (drawn > 0).any() else 1.0
    for off, (group, color) in zip(offsets, colours.items()):
        part = data if group is None else data[data[hue] == group]
        part = part[np.isfinite(part[x].astype(float)) & ((part[x] > 0) if log else True)]
        pos = np.array([names.index(v) for v in part[y]]) + off
        if low and high:
            lows = part[low].where(~(part[low] <= 0), edge) if log else part[low]
            err = np.nan_to_num(np.clip(np.vstack([part[x] - lows, part[high] - part[x]]), 0, None))
            if log and (part[low] <= 0).any():  # open to the left: the interval reaches 0
                ax.plot(np.full((part[low] <= 0).sum(), edge), pos[(part[low] <= 0).to_numpy()], "<", color=color,
                        ms=4, label="_nolegend_")
        else:
            err = None
        ax.errorbar(part[x], pos, xerr=err, fmt=shapes[group], color=color, capsize=3, ms=4,
                    label=None if group is None else str(group))
        if annotate:
            ends = part[high].where(np.isfinite(part[high]), part[x]) if low and high else part[x]
            for value, end, at in zip(part[x], ends, pos):
                ax.annotate(text(value), (max(value, end), at), xytext=(4, 0), textcoords="offset points",
                            va="center", fontsize=SMALLEST_PT)
    if failed is not None:
        mark_failures(ax, everything, x=x, y=y, hue=hue, failed=failed)
    ax.set_yticks(range(len(names)), [wrapped(n, LABEL_CHARS) for n in names], fontsize="small")
    if own:
        room_for_rows(ax)
    ax.set_ylim(len(names) - 0.5, -0.5)  # the table's first row on top
    ax.set_xlabel(labels.column_label(x))
    if hue:
        legend_below(ax, ncol=legend_columns([str(g) for g in groups]), title=labels.column_label(hue))
    return ax


def plot_live_vs_published(data: pd.DataFrame, *, ax: plt.Axes | None = None, log: bool | str = "auto",
                           label: str = "quantity") -> plt.Axes:
    """The comparison table of :func:`ingestlab.models.compare_with_published` as live ÷ published, with the live CI.

    Every row is on one unitless axis (1 = the study's value), whatever its own unit; the
    row names carry the quantities.
    """
    ax = ax or plt.figure(figsize=(PAGE_WIDTH, 1.2 + 0.45 * data[label].nunique())).gca()
    shown = data[data["published"].notna() & (data["published"] != 0)]
    shown = shown.assign(ratio=shown["live"] / shown["published"],
                         low=shown["live_ci_low"].fillna(shown["live"]) / shown["published"],
                         high=shown["live_ci_high"].fillna(shown["live"]) / shown["published"])
    values = pd.concat([shown["ratio"], shown["low"], shown["high"], pd.Series([1.0])])
    if log == "auto":
        log = spans_decades(values)
    plot_estimates(shown, x="ratio", y=label, low="low", high="high", ax=ax, log=log)
    set_scale(ax, "x", log, values)
    ax.axvline(1, color="0.4", lw=0.8, ls=":")
    ax.set_xlabel("live ÷ published (1 = the seed's value; bars: the live 95 % CI)")
    return ax


def plot_stacked(data: pd.DataFrame, *, x: str, y: str, hue: str, ax: plt.Axes | None = None) -> plt.Axes:
    """Horizontal stacked bars: one bar per ``y``, segments ``hue`` of length ``x``; the legend below."""
    ax = ax or plt.figure().gca()
    data = named(data, y, hue)
    wide = data.pivot_table(index=y, columns=hue, values=x, sort=False).fillna(0)
    wide.plot.barh(stacked=True, ax=ax, width=0.6, color=segment_colours(wide.columns), edgecolor="white",
                   linewidth=0.6)
    hatch_segments(ax)
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel("")
    legend_below(ax, ncol=legend_columns([str(c) for c in wide.columns]), title=labels.column_label(hue))
    return ax


def segment_colours(levels) -> list[str]:
    """Colours of stacked segments, parts of one bar and no engine: four greys, dark to light, then again.

    Hue means an engine in every figure of the lab; a bar's parts (stages of a statement, components)
    are conditions (:data:`ingestlab.figures.CONDITION_GREYS`'s rule). Seven greys are too close to
    match to a legend, so four are used and :func:`hatch_segments` sets the parts that repeat a grey
    apart by a hatch; a white edge sets each segment off from the next.

    Examples
    --------
    >>> segment_colours(["parse", "execute", "commit", "wait", "rest"])
    ['#333333', '#666666', '#999999', '#cccccc', '#333333']
    """
    greys = [matplotlib.colors.to_hex(str(g)) for g in (0.2, 0.4, 0.6, 0.8)]
    return [greys[i % len(greys)] for i in range(len(list(levels)))]


#: Hatches of the parts of a stacked bar, a round of :func:`segment_colours`' greys each.
SEGMENT_HATCHES = ("", "////", "....")


def hatch_segments(ax: plt.Axes) -> None:
    """Hatch the stacked bars' parts drawn on ``ax`` (in the order drawn) whose grey an earlier part has."""
    bars = [c for c in ax.containers if isinstance(c, matplotlib.container.BarContainer)]
    for i, container in enumerate(bars):
        hatch = SEGMENT_HATCHES[(i // 4) % len(SEGMENT_HATCHES)]
        for patch in container:
            patch.set_hatch(hatch)
            patch.set_hatchcolor("0.05" if i % 4 >= 2 else "white")  # dark on the light greys, white on the dark


def _value_text(fmt: str | None):
    # bar and point labels: the caller's format, else three significant digits without an exponent
    return (lambda v: fmt.format(v)) if fmt else (lambda v: report.format_value(float(v)))


def plot_sweep(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, style: str | None = None,
               ax: plt.Axes | None = None, logx: bool | str = False, logy: bool | str = False, annotate: bool = False,
               fmt: str | None = None, legend: bool | str = True, low: str | None = None,
               high: str | None = None) -> plt.Axes:
    """``y`` against the levels of one parameter: a marker per point, a line per ``hue``/``style``.

    A numeric ``x`` is drawn to scale, a text ``x`` as categories in the data's order;
    ``hue`` and ``style`` are always categories (a numeric ``concurrency`` gets distinct
    colours, not a shade ramp), named by :mod:`ingestlab.labels`. ``annotate`` writes each
    point's value beside it (for tables of a few printed numbers); ``legend`` is ``True``
    (inside, where it fits best), ``"outside"`` (right of the axes), ``"ends"`` (each ``hue``
    level named where its line ends: :func:`ingestlab.direct_labels.label_ends`) or ``False`` (left to a neighbouring
    panel). ``logx``/``logy`` may be ``"auto"`` (log when the values span decades).
    ``low``/``high`` name the columns of each point's CI, drawn as a vertical error bar in its
    series' colour (a bound ≤ 0 on a log axis is left open: the bar stops at the point).
    """
    ax = ax or plt.figure().gca()
    data = data.reset_index(drop=True)
    data = data.assign(**{c: data[c].map(lambda v, c=c: labels.value_label(c, v)) for c in (hue, style) if c})
    if not pd.api.types.is_numeric_dtype(data[x]):
        data = data.assign(**{x: data[x].map(labels.label)})
    # the lab's colour and marker per engine (shades of it per condition); seaborn draws `markers` only per
    # style level, so without a style of its own each hue level is its style too
    levels = list(dict.fromkeys(data[hue])) if hue else []
    if hue and not style:
        marks = {"style": hue, "markers": markers(levels), "style_order": levels}
    elif style:  # the lab's condition markers, never seaborn's "X" (a run that did not finish: FAILED_MARKER)
        kinds = list(dict.fromkeys(data[style]))
        marks = {"style": style, "style_order": kinds,
                 "markers": dict(zip(kinds, CONDITION_MARKERS * (len(kinds) // len(CONDITION_MARKERS) + 1)))}
    else:
        marks = {"marker": "o", "color": NEUTRAL}
    sns.lineplot(data=data, x=x, y=y, hue=hue, dashes=False, ax=ax, errorbar=None, markersize=6,
                 hue_order=levels or None, palette=palette(levels) if hue else None,
                 sort=pd.api.types.is_numeric_dtype(data[x]), legend="auto" if legend in (True, "outside") else False,
                 **marks)
    if pd.api.types.is_numeric_dtype(data[x]):
        set_scale(ax, "x", logx, data[x])
    set_scale(ax, "y", logy, data[y])
    if low and high:
        _error_bars(ax, data, x=x, y=y, hue=hue, low=low, high=high)
    if annotate:
        text = _value_text(fmt)
        ax.add_artist(direct_labels.PointLabels(ax, [(text(yv), xv, yv) for xv, yv in zip(data[x], data[y])]))
        ax.margins(x=0.08)  # room for the labels of the last points
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel(labels.column_label(y))
    if legend == "ends" and hue:
        colours, order = palette(levels), data[x] if pd.api.types.is_numeric_dtype(data[x]) else data.index
        last = data.assign(_order=order).sort_values("_order").groupby(hue, sort=False).tail(1).set_index(hue)
        direct_labels.label_ends(ax, [(wrapped(level), colours[level], last.loc[level, x], last.loc[level, y]) for level in levels])
    if ax.get_legend() is not None:
        handles, names = ax.get_legend_handles_labels()
        if hue and not style:  # hue and style name the same levels: one entry each
            seen = dict.fromkeys(levels)
            pairs = [(h, n) for h, n in zip(handles, names) if n in seen and seen.pop(n, 0) is None]
            handles, names = [h for h, _ in pairs], [n for _, n in pairs]
        names = [labels.column_label(n) if n in (hue, style) else n for n in names]
        where = {"loc": "upper left", "bbox_to_anchor": (1.01, 1)} if legend == "outside" else {"loc": "best"}
        ax.legend(handles, names, **where, fontsize="small", frameon=legend != "outside")
    return ax


def _error_bars(ax: plt.Axes, data: pd.DataFrame, *, x: str, y: str, hue: str | None, low: str, high: str) -> None:
    # vertical CIs of a sweep's points in their series' colours
    log = ax.get_yscale() == "log"
    colours = palette(list(dict.fromkeys(data[hue]))) if hue else {None: NEUTRAL}
    for level, colour in colours.items():
        part = data if level is None else data[data[hue] == level]
        part = part[np.isfinite(part[[y, low, high]].astype(float)).all(axis=1)]
        lows = part[low].where(~(log & (part[low] <= 0)), part[y])  # open below on a log axis
        err = np.clip(np.vstack([part[y] - lows, part[high] - part[y]]), 0, None)
        ax.errorbar(part[x], part[y], yerr=err, fmt="none", ecolor=colour, color=colour, elinewidth=0.8, capsize=2,
                    label="_nolegend_", zorder=1)  # errorbar widens the data limits to hold them


def plot_bars(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, ax: plt.Axes | None = None,
              log: bool | str = False, annotate: bool = True, fmt: str | None = None, low: str | None = None,
              high: str | None = None, failed: str | None = None) -> plt.Axes:
    """Horizontal bars of ``x`` per ``y`` (and ``hue``), each labelled with its value; dots on a log axis.

    A log axis (``log=True``, or ``"auto"`` when the values span decades) gets a dot plot
    (:func:`plot_estimates`) instead: a bar's length means nothing there. Labels have three
    significant digits unless ``fmt`` says otherwise. ``low``/``high`` name CI columns,
    drawn as error bars where set. ``failed`` names a column of text, set on the rows whose run
    did not finish (out of memory, a timeout): they are never left out silently (:func:`mark_failures`).
    """
    own = ax is None
    ax = ax or plt.figure().gca()
    values = pd.concat([data[x], data[high]]) if high else data[x]
    # "auto": where the values span decades; asked for: where they span one at least (set_scale's rule)
    log = spans_decades(values.dropna(), LOG_DECADES if log == "auto" else 1.0) if log else False
    if log:  # a bar's length means nothing on a log axis: dots, labelled
        plot_estimates(data, x=x, y=y, low=low, high=high, hue=hue, ax=ax, annotate=annotate, fmt=fmt, log=True,
                       failed=failed)
        if own:  # a value label for each level in a row
            room_for_rows(ax, per_row=data[hue].nunique() if hue and annotate else 1)
        set_scale(ax, "x", True, values.dropna())
        ax.margins(x=0.15)
        ax.set_ylabel("")
        return ax
    finished = data if failed is None else data.assign(**{x: data[x].where(~_failed(data, failed))})
    data = named(finished.reset_index(drop=True), y, hue)
    levels = list(dict.fromkeys(data[hue])) if hue else []
    colours = {"palette": palette(levels), "hue_order": levels} if hue else {"color": NEUTRAL}
    # saturation 1: an engine's bars in the engine's own colour (seaborn would grey every fill by a quarter)
    sns.barplot(data=data, x=x, y=y, hue=hue, orient="h", ax=ax, errorbar=None, saturation=1, **colours)
    ax.set_yticks(ax.get_yticks(), [wrapped(t.get_text(), LABEL_CHARS) for t in ax.get_yticklabels()],
                  fontsize="small")  # as a dot plot's
    if own:
        room_for_rows(ax)
    ends = _bar_cis(ax, data, x=x, y=y, hue=hue, low=low, high=high) if low and high else {}
    if annotate:
        text = _value_text(fmt)
        for bars in [c for c in ax.containers if isinstance(c, matplotlib.container.BarContainer)]:
            for bar in bars:  # the value beside the bar, or beside its CI when it has one
                v = bar.get_width()
                if np.isfinite(v) and v > 0:
                    ax.annotate(text(v), (max(v, ends.get(bar, v)), bar.get_y() + bar.get_height() / 2),
                                xytext=(3, 0), textcoords="offset points", va="center", fontsize=SMALLEST_PT)
        ax.margins(x=0.12)
    if failed is not None:
        mark_failures(ax, data, x=x, y=y, hue=hue, failed=failed, at=0.0)
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel("")
    if hue:
        legend_below(ax, ncol=legend_columns([str(g) for g in data[hue].unique()]), title=labels.column_label(hue))
    return ax


def _failed(data: pd.DataFrame, failed: str) -> pd.Series:
    return data[failed].fillna("").astype(str).str.strip() != ""


#: The marker of a run that did not finish (out of memory, a timeout, an error), and how it is drawn (open,
#: its edge in the series' colour: ``mec``).
FAILED_MARKER = "X"
FAILED_STYLE = {"marker": FAILED_MARKER, "ls": "none", "mfc": "white", "mew": 1.2, "ms": 6}


def mark_failures(ax: plt.Axes, data: pd.DataFrame, *, x: str, y: str, hue: str | None, failed: str,
                  at: float | None = None) -> None:
    """Draw each row whose run did not finish as an open ✕ in its colour, with what happened written beside it.

    ``data`` as the dot plot or bar chart drew it (its categories named); the row's ✕ stands
    in the row (dodged as its ``hue`` level), at ``at`` (a bar chart: 0, where its bar would
    start) or, where ``at`` is None, at its own value (a dot plot: the value it reached when it
    stopped, a cap). The text is ``failed``'s, after the value where there is one.
    """
    groups = list(dict.fromkeys(data[hue])) if hue else [None]
    names = list(dict.fromkeys(data[y].map(labels.phrase) if at is None else data[y]))
    colours = palette(groups) if hue else {None: NEUTRAL}
    rows = data[_failed(data, failed)]
    if at is None:  # a dot plot's rows: offsets as plot_estimates dodges them
        offsets = dict(zip(groups, dodges(len(groups))))
    else:  # a bar chart's: as seaborn dodges them (0.8 of a row, shared by the levels)
        offsets = {g: -0.4 + (k + 0.5) * 0.8 / len(groups) for k, g in enumerate(groups)} if hue else {None: 0.0}
    for _, row in rows.iterrows():
        group = row[hue] if hue else None
        name = labels.phrase(row[y]) if at is None else row[y]
        pos = names.index(name) + offsets[group]
        value = row[x] if at is None else at
        if not np.isfinite(value):
            continue
        ax.plot([value], [pos], **FAILED_STYLE, mec=colours[group], label="_nolegend_", zorder=4, clip_on=False)
        said = (f"{_value_text(None)(row[x])}: " if at is None else "") + str(row[failed])
        ax.annotate(said, (value, pos), xytext=(6, 0), textcoords="offset points", va="center",
                    fontsize=SMALLEST_PT, color="0.2")


def _bar_cis(ax: plt.Axes, data: pd.DataFrame, *, x: str, y: str, hue: str | None, low: str, high: str) -> dict:
    # each bar's CI as an error bar at its centre; seaborn draws one container per hue level, and a bar
    # sits (dodged) around the position of its category
    rows = [data[data[hue] == level] for level in dict.fromkeys(data[hue])] if hue else [data]
    categories = list(dict.fromkeys(data[y]))
    ends = {}
    for bars, part in zip([c for c in ax.containers if isinstance(c, matplotlib.container.BarContainer)], rows):
        for bar in bars:
            row = part[part[y] == categories[int(round(bar.get_y() + bar.get_height() / 2))]]
            if row.empty or not np.isfinite(row[low].iloc[0]) or not np.isfinite(row[high].iloc[0]):
                continue
            value = row[x].iloc[0]
            ax.errorbar(value, bar.get_y() + bar.get_height() / 2, fmt="none", ecolor="0.15", capsize=2, lw=0.8,
                        xerr=[[max(value - row[low].iloc[0], 0)], [max(row[high].iloc[0] - value, 0)]])
            ends[bar] = row[high].iloc[0]
    return ends


def panels(data: pd.DataFrame, col: str, *, figsize: tuple[float, float], stacked: bool = False, **subplots) -> tuple:
    # one axes per level of `col`, in the data's order, side by side (or one above the other):
    # (figure, [(axes, level, rows), ...])
    groups = list(data.groupby(col, sort=False))
    shape = (len(groups), 1) if stacked else (1, len(groups))
    fig, axes = plt.subplots(*shape, figsize=figsize, squeeze=False, **subplots)
    return fig, [(ax, level, part) for ax, (level, part) in zip(axes.ravel(), groups)]




#: Seconds in a time unit, for drawing a fit term given in one unit over data in another.
_SECONDS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6}


def unit_seconds(unit: str) -> float:
    """Seconds in the time unit a column name or a fit's ``unit`` starts or ends with (1 when it names none).

    Examples
    --------
    >>> unit_seconds("ms per statement"), unit_seconds("µs per row"), unit_seconds("total_s"), unit_seconds("median_ms")
    (0.001, 1e-06, 1.0, 0.001)
    """
    text = str(unit)
    head = text.split(" ")[0]
    if head in _SECONDS:
        return _SECONDS[head]
    tail = text.rsplit("_", 1)[-1] if "_" in text else ""
    return _SECONDS.get(tail, 1.0)


def plot_fit(data: pd.DataFrame, fits: pd.DataFrame, *, x: str, y: str, hue: str, slope: str = "overhead",
             intercept: str = "write_time", ax: plt.Axes | None = None, per: str | None = None,
             logx: bool | str = "auto", logy: bool | str = "auto", legend: str = "below",
             explain: bool = True, name_of=None) -> plt.Axes:
    """Observations of ``y`` against ``x``, and each group's fitted line ``intercept + slope · x`` with its CI band.

    The one fit plotter of the lab: ``fits`` is in the long form every notebook writes
    (:data:`ingestlab.results.FIT_COLUMNS`), one row per term, with a ``hue`` column that
    ``data`` has too. The terms named ``slope`` and ``intercept`` are read from the ``ols``
    (or, without an interval, ``two_point``) rows and converted from their ``unit`` to the
    units of ``y`` (its name's suffix: ``_s``, ``_ms``). Each line is drawn only over the
    ``x`` its group measured, as a dense curve (a straight line bends on log axes): solid
    with the band its slope's 95 % CI spans. A model that was rejected (``model_holds`` False)
    or not tested (``model_holds`` empty: too few points or degrees of freedom for the adequacy test;
    or two points: a line through them, no interval) is not drawn at all,
    neither line nor band: its legend entry, a marker in its colour, says so (the two points'
    slope stays in it). The data set the axes; a line or band
    beyond them is cut at the edge. The legend, below, states each slope with its CI; or,
    with ``legend="ends"``, each series is named where its line ends, its slope and CI under
    its name (:func:`ingestlab.direct_labels.label_ends`: for a panel with room on its right);
    or, with ``legend="inside"``, a small legend in the panel's upper left, each series by its
    name (``name_of``) over its slope and CI (a panel of a grid whose data rise from the lower
    left, as total time against statements does: notebook 01 with six engines).

    Parameters
    ----------
    per : str, optional
        What the slope is per, when its unit does not say (``"statement"``: ``ms`` → ``ms per statement``).
    logx, logy : bool or "auto"
        Log axes; ``"auto"``: where the values span decades (``y`` follows a log ``x``).
    legend : {"below", "ends", "inside"}
        A legend under the axes, direct labels at the lines' ends, or a legend in the upper left.
    name_of : callable, optional
        With ``legend="inside"``, the name a ``hue`` level (as the figure writes it) goes by (a
        panel's title names its engine: the variant is enough); default the level itself.
    explain : bool
        With ``legend="ends"``, say over the labels what the lines and shading mean (in the
        first of several panels only).
    """
    from ingestlab.models import model_holds

    ax = ax or plt.figure().gca()
    if hue not in fits.columns:  # no fit at all (an empty long form): the data alone
        fits = fits.assign(**{hue: pd.Series(dtype=object)})
    data, fits = named(data, hue), named(fits, hue)
    levels = list(dict.fromkeys(data[hue]))
    colours, shapes = palette(levels), markers(levels)
    sns.scatterplot(data=data, x=x, y=y, hue=hue, hue_order=levels, palette=colours, style=hue, style_order=levels,
                    markers=shapes, ax=ax, s=22, alpha=0.8, legend=False, zorder=3)
    set_scale(ax, "x", logx, data[x])
    set_scale(ax, "y", ("auto" if ax.get_xscale() != "log" else True) if logy == "auto" else logy, data[y])
    y_seconds = unit_seconds(y)
    usable = fits[fits["method"].isin(["ols", "two_point"]) & fits["term"].isin([slope, intercept])]
    method = usable.groupby(hue)["method"].agg(lambda m: "ols" if (m == "ols").any() else "two_point")
    ends, drawn = [], 0
    for level in levels:
        terms = usable[(usable[hue] == level) & (usable["method"] == method.get(level, "ols"))].set_index("term")
        last = data.loc[data[hue] == level].sort_values(x).iloc[-1]
        if slope not in terms.index:
            shown = wrapped(name_of(level)) if name_of and legend == "inside" else level
            ax.plot([], [], shapes[level], color=colours[level], label=f"{shown} (too few points for a fit)")
            ends.append((f"{wrapped(level)}\ntoo few points for a fit", colours[level], last[x], last[y]))
            continue
        s = terms.loc[slope]
        s_factor = unit_seconds(s["unit"]) / y_seconds
        i_value = terms.loc[intercept, "estimate"] * unit_seconds(terms.loc[intercept, "unit"]) / y_seconds \
            if intercept in terms.index else 0.0
        unit = str(s["unit"]) if per is None or " per " in str(s["unit"]) else f"{s['unit']} per {per}"
        holds = model_holds(s.get("model_holds"))
        rejected = holds is False
        ols = s.name == slope and method.get(level) == "ols"
        n = s.get("n_points")
        text = (report.format_estimate(s["estimate"], s["ci_low"], s["ci_high"], unit=unit,
                                       n=int(n) if pd.notna(n) else None) if ols
                else f"{report.format_value(s['estimate'])} {unit} (2 points, no CI)")
        short = (short_estimate(s["estimate"], s["ci_low"], s["ci_high"], str(s["unit"])) if ols
                 else f"{report.format_value(s['estimate'])} {s['unit']}, 2 points")
        name = name_of(level) if name_of else level
        if legend == "inside":  # the panel's few series, each its name over its estimate
            text = short
        if holds is not True or not ols:
            # on a line of its own: a legend entry no wider than a drawn fit's (01's legend under the panels was
            # 2 226 px wide, over the page, the one time a smoke fit was rejected)
            why = "model rejected, no line" if rejected else "not tested, no line"
            entry = f"{wrapped(name)}\n{why}" if legend == "inside" else f"{level}: {text}\n{why}"
            ax.plot([], [], shapes[level], color=colours[level], label=entry)  # its points' marker
            said = why if rejected else f"{short}, no line" if not ols else f"{short}\n{why}"  # "54.2 ms per load, 2 points, no line"
            ends.append((f"{wrapped(level)}\n{said}", colours[level], last[x], last[y]))
            continue
        xs = data.loc[data[hue] == level, x]
        line = draw_model(ax, model_grid(xs, ax.get_xscale() == "log"), i_value, s["estimate"] * s_factor,
                          s["ci_low"] * s_factor, s["ci_high"] * s_factor, color=colours[level],
                          label=f"{wrapped(name)}\n{text}" if legend == "inside" else f"{level}: {text}")
        drawn += 1
        ends.append((f"{wrapped(level)}\n{short}", colours[level], *(direct_labels.line_end(line) or (last[x], last[y]))))
    ax.set_xlabel(labels.column_label(x) + (" per run" if x.startswith("n_") else ""))  # n_statements: a count per run
    ax.set_ylabel(labels.column_label(y).replace("total (s)", "total time (s)"))
    no_band = band_note(ax)
    also = f"; {no_band}" if no_band else ""
    # "the 95 % CI of the round trips", never "the round trips's 95 % CI": a slope's name may be a plural
    lines = f"line: the fit, shaded: the 95 % CI of its {labels.label(slope)}{also}; " if drawn else ""
    what = f"fit, shaded: the 95 % CI of the {labels.label(slope)}{also}" if drawn else f"the {labels.label(slope)} (95 % CI)"
    if legend == "ends":  # a band left out is said over every panel that has one, the rest over the first
        direct_labels.label_ends(ax, ends, note=wrapped(f"{lines}under "
                                           f"each name: the {labels.label(slope)} (95 % CI)") if explain
                   else wrapped(no_band) if no_band else None, note_in_layout=explain)
    elif legend == "inside":
        ax.legend(loc="upper left", fontsize="small", frameon=False, handlelength=1.2, borderaxespad=0.3,
                  labelspacing=0.4, title=wrapped(what) if explain and drawn else None, title_fontsize="small",
                  alignment="left")
    else:
        legend_below(ax, title=what)
    return ax
