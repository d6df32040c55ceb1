"""The article look, the plot helpers the notebooks share, and the one figure-saving helper."""

from __future__ import annotations

import logging
import re
import textwrap
from pathlib import Path
from typing import Sequence

import matplotlib
import matplotlib.collections
import matplotlib.container
import matplotlib.lines
import matplotlib.pyplot as plt
import matplotlib.ticker
import matplotlib.transforms
import numpy as np
import pandas as pd
import seaborn as sns

from ingestlab import _paths, labels, report, results

#: Formats every figure is saved in.
FORMATS = ("png", "svg", "pdf")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Values spanning at least this many decades get a log axis (``log="auto"``).
LOG_DECADES = 1.5
#: Points of a drawn model: a straight line on a log axis is a curve, drawn densely.
MODEL_POINTS = 200
#: Width of a figure meant for one journal column / two columns (inches).
COLUMN_WIDTH, PAGE_WIDTH = 3.5, 7.2
_log = logging.getLogger(__name__)


def use_article_theme() -> None:
    """Set the lab's figure look (seaborn ``whitegrid``, paper context, colour-blind palette)."""
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.0,
                  rc={"figure.figsize": (PAGE_WIDTH, 3.6), "figure.dpi": 100, "savefig.bbox": "tight",
                      "axes.titleweight": "bold", "svg.fonttype": "none", "pdf.fonttype": 42,
                      # clip-path and other ids from a fixed salt: the same figure gives the same SVG bytes
                      "svg.hashsalt": "ingestlab"})


def save(fig: matplotlib.figure.Figure | None, name: str, *, notebook: str, directory: str | Path | None = None
         ) -> None:
    """Write ``fig`` as PNG (300 dpi), SVG and PDF into its run's folder, show it, close it.

    The files go to ``<run>/figures/<name>.*``, ``<run>`` being the :class:`~ingestlab.results.Run`
    of ``notebook`` opened last in this process (``ingestlab run`` puts it in
    ``<out>/<notebook>/``; without ``RESULTS_DIR``, ``data/results/<notebook>/<timestamp>/``).
    They never go to the repository's ``figures/``: that folder changes only through
    ``ingestlab figures RUN_DIR`` (``make figures``). With ``$INGESTLAB_FIGURES_DIR`` set (the
    tests set it) they go to ``$INGESTLAB_FIGURES_DIR/<notebook>/`` instead; without a run,
    to ``data/results/<notebook>/figures/``.

    Under IPython (a notebook) the figure is displayed inline once; it is then closed, so
    the inline backend does not draw it a second time and figures do not pile up in memory.
    Nothing is returned, so the call can end a notebook cell without printing anything;
    the paths written go to this module's logger (level INFO).

    Parameters
    ----------
    fig : matplotlib.figure.Figure or None
        The figure; None writes and shows nothing.
    name : str
        File stem: letters, digits, ``_ . -``.
    notebook : str
        The notebook's name, which selects its run.
    directory : path, optional
        Folder to write into instead (tests).

    Raises
    ------
    ValueError
        If ``name`` or ``notebook`` is not a plain file name.
    """
    for label, value in (("name", name), ("notebook", notebook)):
        if not _NAME.match(value):
            raise ValueError(f"figure {label}={value!r}: use letters, digits, '_', '.', '-'")
    if fig is None:  # a figure function with nothing to draw (e.g. a run without anatomy)
        return
    folder = Path(directory) if directory else destination(notebook)
    folder.mkdir(parents=True, exist_ok=True)
    for fmt in FORMATS:
        path = folder / f"{name}.{fmt}"
        fig.savefig(path, dpi=300 if fmt == "png" else None, metadata=_metadata(fmt))
        _log.info("saved %s", path)
    _show(fig, folder / f"{name}.png")
    close(fig)


def destination(notebook: str) -> Path:
    """The folder :func:`save` writes ``notebook``'s figures to (see there); nothing is created."""
    redirect = _paths.figures_redirect()
    if redirect is not None:
        return redirect / notebook
    return results.run_figures_dir(notebook) or _paths.results_dir() / notebook / results.FIGURES_SUBDIR


def _show(fig: matplotlib.figure.Figure, png: Path) -> None:
    """Show the saved PNG in the notebook, embedded (what its HTML shows), at about 100 px per inch.

    The file just written is shown, not the figure drawn again: whatever the kernel's
    matplotlib backend, the executed notebook holds the very image in ``figures/``.
    Inside IPython only: a script or a test has nowhere to show it.
    """
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:
        return
    if get_ipython() is not None:
        display(Image(filename=str(png), width=round(fig.get_figwidth() * 100)))


def _metadata(fmt: str) -> dict:
    # fixed metadata so that re-running a notebook does not change the files for no reason
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}


def caption(fig: matplotlib.figure.Figure | None, title: str, *, run=None, data: pd.DataFrame | None = None
            ) -> matplotlib.figure.Figure | None:
    """Title ``fig`` and write under it what made it, so the image says so without the notebook.

    The caption line names the engines and their versions, the scale, the disk profile, the
    run and the revision (:func:`ingestlab.report.run_caption` of the run's metadata) and,
    for a published table, the seed and the versions it ran
    (:func:`ingestlab.report.data_caption`). Both are placed outside everything already
    drawn (axes, legends below them), so call this after the plot is complete.

    Parameters
    ----------
    fig : matplotlib.figure.Figure or None
        The finished figure; None is passed through.
    title : str
        What the figure shows, in words.
    run : ingestlab.results.Run or mapping, optional
        The run (or its ``run.json`` content) whose numbers are drawn.
    data : pandas.DataFrame, optional
        A published table the figure draws (its ``source_seed``, ``engine`` and ``version``).

    Returns
    -------
    matplotlib.figure.Figure or None
        ``fig``, for ``figures.save(figures.caption(fig, ...), name, ...)``.
    """
    if fig is None:
        return None
    meta = getattr(run, "meta", run)
    parts = ([report.data_caption(data)] if data is not None else []) + ([report.run_caption(meta)] if meta else [])
    fig.canvas.draw()  # a layout engine places the axes at drawing time; fix them there before measuring
    fig.set_layout_engine("none")
    renderer = fig.canvas.get_renderer()
    box = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans).transformed(fig.transFigure.inverted())
    width_chars = int(fig.get_figwidth() * 72 / (0.55 * plt.rcParams["font.size"]))
    fig.text(box.x0, box.y1 + 0.02, textwrap.fill(title, int(width_chars * 0.75)), ha="left", va="bottom",
             fontsize="large", fontweight="bold")
    if parts:
        fig.text(box.x0, box.y0 - 0.02, textwrap.fill(" — ".join(parts), width_chars), ha="left", va="top",
                 fontsize="small", color="0.25")
    return fig


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
    """Powers of ten; also 2 and 5 times them under two decades in view; evenly spaced ticks under one decade."""

    def __call__(self):
        low, high = self.axis.get_view_interval()
        if 0 < low and high / low < 10:  # a power of ten or none in view: round numbers instead
            ticks = matplotlib.ticker.MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high)
            return ticks[ticks > 0]
        self.set_params(subs=(1.0, 2.0, 5.0) if 0 < low and high / low < 100 else (1.0,))
        return super().__call__()


def set_scale(ax: plt.Axes, axis: str, log: bool | str, values) -> None:
    """Set a log ``axis`` when asked (``log=True``) or when the values span decades (``"auto"``); plain ticks."""
    if log == "auto":
        log = spans_decades(values)
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


def plot_latency(data: pd.DataFrame, *, x: str = "elapsed_ms", y: str = "scenario", hue: str | None = None,
                 ax: plt.Axes | None = None, log: bool | str = "auto") -> plt.Axes:
    """Latency distribution per category: boxes (median, quartiles) over every sample.

    Boxes are outlined in their colour, not filled, so a box narrow on a log axis stays
    visible (a filled one turns into its black edge); ``log="auto"`` uses a log axis only
    when the samples span decades.
    """
    ax = ax or plt.figure().gca()
    data = named(data, y, hue)
    sns.boxplot(data=data, x=x, y=y, hue=hue, ax=ax, fill=False, fliersize=1.5, linewidth=1, gap=0.15)
    set_scale(ax, "x", log, data[x])
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel("")
    if hue and ax.get_legend() is not None:
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1), fontsize="small", title=labels.column_label(hue),
                        title_fontsize="small", frameon=False)
    return ax


def estimate_text(fit: pd.Series, column: str, unit: str) -> str:
    # "0.300 ms/statement (95 % CI 0.271–0.328)" from a fit table's row, a CI from few points flagged
    stem, _, suffix = column.rpartition("_")
    low, high = f"{stem}_ci_low_{suffix}", f"{stem}_ci_high_{suffix}"
    if low not in fit.index:
        low, high = f"{column}_ci_low", f"{column}_ci_high"
    n = fit.get("n_points")
    return report.format_estimate(fit[column], fit.get(low, np.nan), fit.get(high, np.nan), unit=unit,
                                  n=int(n) if pd.notna(n) else None)


def draw_model(ax: plt.Axes, grid: np.ndarray, intercept: float, slope: float, low: float, high: float, *,
                color, label: str | None, dashed: bool = False, x_of=None) -> None:
    """``intercept + slope · grid`` as a dense curve, and the band its slope's CI spans (shaded).

    Neither widens the axes: the data set them, drawn before or after. A curve or a band
    beyond them is cut at the edge, and on a log axis a bound ≤ 0 runs to the bottom edge.
    Draw only a model that was not rejected, over ``grid`` from :func:`model_grid` of the
    ``x`` it was fitted to.
    """
    log = ax.get_yscale() == "log"
    at = grid if x_of is None else x_of(grid)  # a model in a transform of x (log₂ of the level) drawn at x
    line = intercept + slope * at
    keep = line > 0 if log else np.ones_like(line, bool)
    # added as an artist, not plotted: a plotted line would join the data limits and widen the axes
    ax.add_artist(matplotlib.lines.Line2D(grid[keep], line[keep], color=color, lw=1.2, ls="--" if dashed else "-",
                                          label=label))
    if np.isfinite(low) and np.isfinite(high):
        a, b = intercept + low * at, intercept + high * at
        if log:
            a, b = np.maximum(a, _FLOOR), np.maximum(b, _FLOOR)
        outline = np.concatenate([np.column_stack([grid, a]), np.column_stack([grid[::-1], b[::-1]])])
        ax.add_collection(matplotlib.collections.PolyCollection([outline], facecolors=[color], alpha=0.15,
                                                                linewidths=0), autolim=False)


#: Where a band's bound ≤ 0 is drawn on a log axis (far below any axis: the band runs to its edge).
_FLOOR = 1e-300


def model_grid(values, log: bool) -> np.ndarray:
    lo, hi = float(np.min(values)), float(np.max(values))
    return np.geomspace(max(lo, 1e-12), hi, MODEL_POINTS) if log else np.linspace(lo, hi, MODEL_POINTS)


def palette(levels) -> dict:
    return dict(zip(levels, sns.color_palette(n_colors=len(levels))))


def plot_estimates(data: pd.DataFrame, *, x: str, y: str, low: str, high: str, hue: str | None = None,
                   ax: plt.Axes | None = None) -> plt.Axes:
    """Point estimates with their CIs as horizontal error bars (one row per ``y``)."""
    ax = ax or plt.figure().gca()
    data = named(data.reset_index(drop=True), hue)
    data = data.assign(**{y: data[y].map(labels.phrase)})
    groups = list(dict.fromkeys(data[hue])) if hue else [None]
    offsets = np.linspace(-0.2, 0.2, len(groups)) if len(groups) > 1 else [0.0]
    names = list(dict.fromkeys(data[y]))
    for off, (group, color) in zip(offsets, zip(groups, sns.color_palette(n_colors=len(groups)))):
        part = data if group is None else data[data[hue] == group]
        pos = np.array([names.index(v) for v in part[y]]) + off
        err = np.vstack([part[x] - part[low], part[high] - part[x]])
        ax.errorbar(part[x], pos, xerr=np.nan_to_num(np.clip(err, 0, None)), fmt="o", color=color, capsize=3, ms=4,
                    label=None if group is None else str(group))
    ax.set_yticks(range(len(names)), [textwrap.fill(n, 60) for n in names], fontsize="small")
    ax.invert_yaxis()  # the table's first row on top
    ax.set_xlabel(labels.column_label(x))
    if hue:
        legend_below(ax, ncol=min(len(groups), 3), title=labels.column_label(hue))
    return ax


def plot_live_vs_published(data: pd.DataFrame, *, ax: plt.Axes | None = None, log: bool | str = "auto",
                           label: str = "quantity") -> plt.Axes:
    """The comparison table of :func:`ingestlab.models.compare_with_published` as live ÷ published, with the live CI.

    Every row is on one unitless axis (1 = the seed's value), whatever its own unit; the
    row names carry the quantities.
    """
    ax = ax or plt.figure(figsize=(PAGE_WIDTH, 1.2 + 0.45 * data[label].nunique())).gca()
    shown = data[data["published"].notna() & (data["published"] != 0)]
    shown = shown.assign(ratio=shown["live"] / shown["published"],
                         low=shown["live_ci_low"].fillna(shown["live"]) / shown["published"],
                         high=shown["live_ci_high"].fillna(shown["live"]) / shown["published"])
    plot_estimates(shown, x="ratio", y=label, low="low", high="high", ax=ax)
    set_scale(ax, "x", log, pd.concat([shown["low"], shown["high"], pd.Series([1.0])]))
    ax.axvline(1, color="0.4", lw=0.8, ls=":")
    ax.set_xlabel("live ÷ published (1 = the seed's value; bars: the live 95 % CI)")
    return ax


def close(fig: matplotlib.figure.Figure | None = None) -> None:
    """Close ``fig`` (or all figures)."""
    plt.close(fig if fig is not None else "all")


def caption_values(values: Sequence[float], fmt: str = "{:.3g}") -> str:
    """Join numbers for a figure caption: ``"1.2, 3.4 and 5.6"``."""
    parts = [fmt.format(v) for v in values]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def plot_stacked(data: pd.DataFrame, *, x: str, y: str, hue: str, ax: plt.Axes | None = None) -> plt.Axes:
    """Horizontal stacked bars: one bar per ``y``, segments ``hue`` of length ``x``; the legend below."""
    ax = ax or plt.figure().gca()
    data = named(data, y, hue)
    wide = data.pivot_table(index=y, columns=hue, values=x, sort=False).fillna(0)
    wide.plot.barh(stacked=True, ax=ax, width=0.6)
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel("")
    legend_below(ax, ncol=min(3, wide.shape[1]), title=labels.column_label(hue))
    return ax


def _value_text(fmt: str | None):
    # bar and point labels: the caller's format, else three significant digits without an exponent
    return (lambda v: fmt.format(v)) if fmt else (lambda v: report.format_value(float(v)))


def plot_sweep(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, style: str | None = None,
               ax: plt.Axes | None = None, logx: bool | str = False, logy: bool | str = False, annotate: bool = False,
               fmt: str | None = None, legend: bool | str = True) -> plt.Axes:
    """``y`` against the levels of one parameter: a marker per point, a line per ``hue``/``style``.

    A numeric ``x`` is drawn to scale, a text ``x`` as categories in the data's order;
    ``hue`` and ``style`` are always categories (a numeric ``concurrency`` gets distinct
    colours, not a shade ramp), named by :mod:`ingestlab.labels`. ``annotate`` writes each
    point's value beside it (for tables of a few printed numbers); ``legend`` is ``True``
    (inside, where it fits best), ``"outside"`` (right of the axes) or ``False`` (left to a
    neighbouring panel). ``logx``/``logy`` may be ``"auto"`` (log when the values span decades).
    """
    ax = ax or plt.figure().gca()
    data = data.reset_index(drop=True)
    data = data.assign(**{c: data[c].map(lambda v, c=c: labels.value_label(c, v)) for c in (hue, style) if c})
    if not pd.api.types.is_numeric_dtype(data[x]):
        data = data.assign(**{x: data[x].map(labels.label)})
    # seaborn draws `markers` only per style level; without a style every line gets one marker
    marks = {"markers": True} if style else {"marker": "o"}
    sns.lineplot(data=data, x=x, y=y, hue=hue, style=style, dashes=False, ax=ax, errorbar=None, markersize=6,
                 sort=pd.api.types.is_numeric_dtype(data[x]), legend="auto" if legend else False, **marks)
    if pd.api.types.is_numeric_dtype(data[x]):
        set_scale(ax, "x", logx, data[x])
    set_scale(ax, "y", logy, data[y])
    if annotate:
        text = _value_text(fmt)
        for xv, yv in zip(data[x], data[y]):
            ax.annotate(text(yv), (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize="x-small")
        ax.margins(x=0.08)  # room for the labels of the last points
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel(labels.column_label(y))
    if ax.get_legend() is not None:
        handles, names = ax.get_legend_handles_labels()
        names = [labels.column_label(n) if n in (hue, style) else n for n in names]
        where = {"loc": "upper left", "bbox_to_anchor": (1.01, 1)} if legend == "outside" else {"loc": "best"}
        ax.legend(handles, names, **where, fontsize="small", frameon=legend != "outside")
    return ax


def plot_bars(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, ax: plt.Axes | None = None,
              log: bool | str = False, annotate: bool = True, fmt: str | None = None, low: str | None = None,
              high: str | None = None) -> plt.Axes:
    """Horizontal bars of ``x`` per ``y`` (and ``hue``), each labelled with its value.

    With a log axis (``log=True``, or ``"auto"`` when the values span decades) the axis
    starts at half the smallest value, so bars that span orders of magnitude stay visible;
    read their labels, not their lengths. Labels have three significant digits unless
    ``fmt`` says otherwise. ``low``/``high`` name CI columns, drawn as error bars where set.
    """
    ax = ax or plt.figure().gca()
    data = named(data.reset_index(drop=True), y, hue)
    sns.barplot(data=data, x=x, y=y, hue=hue, orient="h", ax=ax, errorbar=None)
    ends = _bar_cis(ax, data, x=x, y=y, hue=hue, low=low, high=high) if low and high else {}
    if log == "auto":
        log = spans_decades(data[x])
    if log:  # after drawing: seaborn's log_scale drops bars that start at zero
        set_scale(ax, "x", True, data[x])
        ax.set_xlim(left=data.loc[data[x] > 0, x].min() / 2)
    if annotate:
        text = _value_text(fmt)
        for bars in [c for c in ax.containers if isinstance(c, matplotlib.container.BarContainer)]:
            for bar in bars:  # the value beside the bar, or beside its CI when it has one
                v = bar.get_width()
                if np.isfinite(v) and v > 0:
                    ax.annotate(text(v), (max(v, ends.get(bar, v)), bar.get_y() + bar.get_height() / 2),
                                xytext=(3, 0), textcoords="offset points", va="center", fontsize="x-small")
        ax.margins(x=0.12)
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel("")
    if hue:
        legend_below(ax, ncol=min(3, data[hue].nunique()), title=labels.column_label(hue))
    return ax


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


def panels(data: pd.DataFrame, col: str, *, figsize: tuple[float, float], **subplots) -> tuple:
    # one axes per level of `col`, in the data's order: (figure, [(axes, level, rows), ...])
    groups = list(data.groupby(col, sort=False))
    fig, axes = plt.subplots(1, len(groups), figsize=figsize, squeeze=False, **subplots)
    return fig, [(ax, level, part) for ax, (level, part) in zip(axes[0], groups)]




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
             logx: bool | str = "auto", logy: bool | str = "auto") -> plt.Axes:
    """Observations of ``y`` against ``x``, and each group's fitted line ``intercept + slope · x`` with its CI band.

    The one fit plotter of the lab: ``fits`` is in the long form every notebook writes
    (:data:`ingestlab.results.FIT_COLUMNS`), one row per term, with a ``hue`` column that
    ``data`` has too. The terms named ``slope`` and ``intercept`` are read from the ``ols``
    (or, without an interval, ``two_point``) rows and converted from their ``unit`` to the
    units of ``y`` (its name's suffix: ``_s``, ``_ms``). Each line is drawn only over the
    ``x`` its group measured, as a dense curve (a straight line bends on log axes): solid
    with the band its slope's 95 % CI spans, dashed where it has no interval (two points).
    A rejected model (``model_holds`` False) is not drawn at all, neither line nor band: its
    legend entry, a marker in its colour, says so. The data set the axes; a line or band
    beyond them is cut at the edge. The legend, below, states each slope with its CI.

    Parameters
    ----------
    per : str, optional
        What the slope is per, when its unit does not say (``"statement"``: ``ms`` → ``ms per statement``).
    logx, logy : bool or "auto"
        Log axes; ``"auto"``: where the values span decades (``y`` follows a log ``x``).
    """
    from ingestlab.models import model_holds

    ax = ax or plt.figure().gca()
    if hue not in fits.columns:  # no fit at all (an empty long form): the data alone
        fits = fits.assign(**{hue: pd.Series(dtype=object)})
    data, fits = named(data, hue), named(fits, hue)
    levels = list(dict.fromkeys(data[hue]))
    colours = palette(levels)
    sns.scatterplot(data=data, x=x, y=y, hue=hue, hue_order=levels, palette=colours, ax=ax, s=22, alpha=0.8,
                    legend=False, zorder=3)
    set_scale(ax, "x", logx, data[x])
    set_scale(ax, "y", ("auto" if ax.get_xscale() != "log" else True) if logy == "auto" else logy, data[y])
    y_seconds = unit_seconds(y)
    usable = fits[fits["method"].isin(["ols", "two_point"]) & fits["term"].isin([slope, intercept])]
    method = usable.groupby(hue)["method"].agg(lambda m: "ols" if (m == "ols").any() else "two_point")
    for level in levels:
        terms = usable[(usable[hue] == level) & (usable["method"] == method.get(level, "ols"))].set_index("term")
        if slope not in terms.index:
            ax.plot([], [], "o", color=colours[level], label=f"{level} (too few points for a fit)")
            continue
        s = terms.loc[slope]
        s_factor = unit_seconds(s["unit"]) / y_seconds
        i_value = terms.loc[intercept, "estimate"] * unit_seconds(terms.loc[intercept, "unit"]) / y_seconds \
            if intercept in terms.index else 0.0
        unit = str(s["unit"]) if per is None or " per " in str(s["unit"]) else f"{s['unit']} per {per}"
        rejected = model_holds(s.get("model_holds")) is False
        ols = s.name == slope and method.get(level) == "ols"
        n = s.get("n_points")
        text = (report.format_estimate(s["estimate"], s["ci_low"], s["ci_high"], unit=unit,
                                       n=int(n) if pd.notna(n) else None) if ols
                else f"{report.format_value(s['estimate'])} {unit} (2 points, no CI)")
        if rejected:
            ax.plot([], [], "o", color=colours[level], label=f"{level}: {text} — model rejected, no line")
            continue
        xs = data.loc[data[hue] == level, x]
        draw_model(ax, model_grid(xs, ax.get_xscale() == "log"), i_value, s["estimate"] * s_factor,
                   s["ci_low"] * s_factor if ols else np.nan, s["ci_high"] * s_factor if ols else np.nan,
                   color=colours[level], label=f"{level}: {text}", dashed=not ols)
    ax.set_xlabel(labels.column_label(x) + (" per run" if x.startswith("n_") else ""))  # n_statements: a count per run
    ax.set_ylabel(labels.column_label(y).replace("total (s)", "total time (s)"))
    legend_below(ax, title=f"fit, shaded: the {labels.label(slope)}'s 95 % CI")
    return ax
