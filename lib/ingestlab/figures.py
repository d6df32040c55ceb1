"""The article look, the plot helpers the notebooks share, and the one figure-saving helper."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Sequence

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd
import seaborn as sns

from ingestlab import _paths, results

#: Formats every figure is saved in.
FORMATS = ("png", "svg", "pdf")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_log = logging.getLogger(__name__)


def use_article_theme() -> None:
    """Set the lab's figure look (seaborn ``whitegrid``, paper context, colour-blind palette)."""
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.1,
                  rc={"figure.figsize": (6.4, 3.6), "figure.dpi": 100, "savefig.bbox": "tight",
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
    _show(fig)
    close(fig)


def destination(notebook: str) -> Path:
    """The folder :func:`save` writes ``notebook``'s figures to (see there); nothing is created."""
    redirect = _paths.figures_redirect()
    if redirect is not None:
        return redirect / notebook
    return results.run_figures_dir(notebook) or _paths.results_dir() / notebook / results.FIGURES_SUBDIR


def _show(fig: matplotlib.figure.Figure) -> None:
    # display only inside IPython; a script or a test has nowhere to show the figure
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is not None:
        display(fig)


def _metadata(fmt: str) -> dict:
    # fixed metadata so that re-running a notebook does not change the files for no reason
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}


def plot_latency(data: pd.DataFrame, *, x: str = "elapsed_ms", y: str = "scenario", hue: str | None = None,
                 ax: plt.Axes | None = None, log: bool = True) -> plt.Axes:
    """Latency distribution per category: boxes (median, quartiles) over every sample."""
    ax = ax or plt.figure().gca()
    sns.boxplot(data=data, x=x, y=y, hue=hue, ax=ax, fliersize=1.5, linewidth=0.8)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(x.replace("_ms", " (ms)").replace("_", " "))
    ax.set_ylabel("")
    return ax


def plot_fit(data: pd.DataFrame, fits: pd.DataFrame, *, x: str = "n_statements", y: str = "total_s",
             hue: str = "variant", ax: plt.Axes | None = None) -> plt.Axes:
    """Observed totals against statement count, with each OLS fit line (log–log axes)."""
    ax = ax or plt.figure().gca()
    sns.scatterplot(data=data, x=x, y=y, hue=hue, ax=ax, s=28, zorder=3)
    palette = dict(zip(data[hue].unique(), sns.color_palette(n_colors=data[hue].nunique())))
    grid = np.geomspace(max(data[x].min(), 1), data[x].max(), 50)
    for _, fit in fits[fits["method"] == "ols"].iterrows():
        label = fit[hue]
        ax.plot(grid, fit["write_time_s"] + grid * fit["overhead_ms"] / 1e3, color=palette.get(label), lw=1,
                label=f"{label}: {fit['overhead_ms']:.3g} ms/statement")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("statements")
    ax.set_ylabel("total time (s)")
    ax.legend(fontsize="small")
    return ax


def plot_estimates(data: pd.DataFrame, *, x: str, y: str, low: str, high: str, hue: str | None = None,
                   ax: plt.Axes | None = None) -> plt.Axes:
    """Point estimates with their CIs as horizontal error bars (one row per ``y``)."""
    ax = ax or plt.figure().gca()
    data = data.reset_index(drop=True)
    groups = data[hue].unique() if hue else [None]
    offsets = np.linspace(-0.2, 0.2, len(groups)) if len(groups) > 1 else [0.0]
    labels = list(dict.fromkeys(data[y]))
    for off, (group, color) in zip(offsets, zip(groups, sns.color_palette(n_colors=len(groups)))):
        part = data if group is None else data[data[hue] == group]
        pos = np.array([labels.index(v) for v in part[y]]) + off
        err = np.vstack([part[x] - part[low], part[high] - part[x]])
        ax.errorbar(part[x], pos, xerr=np.nan_to_num(err), fmt="o", color=color, capsize=3,
                    label=None if group is None else str(group))
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel(x.replace("_", " "))
    if hue:
        ax.legend(fontsize="small")
    return ax


def plot_live_vs_published(data: pd.DataFrame, *, ax: plt.Axes | None = None, log: bool = True,
                           label: str = "quantity") -> plt.Axes:
    """The comparison table of :func:`ingestlab.models.compare_with_published` as a figure."""
    ax = ax or plt.figure(figsize=(6.4, 1.2 + 0.32 * data[label].nunique())).gca()
    long = pd.concat([
        data.assign(source="published", value=data["published"], low=data["published"], high=data["published"]),
        data.assign(source="live", value=data["live"], low=data["live_ci_low"].fillna(data["live"]),
                    high=data["live_ci_high"].fillna(data["live"])),
    ])
    plot_estimates(long, x="value", y=label, low="low", high="high", hue="source", ax=ax)
    if log:
        ax.set_xscale("log")
    return ax


def close(fig: matplotlib.figure.Figure | None = None) -> None:
    """Close ``fig`` (or all figures)."""
    plt.close(fig if fig is not None else "all")


def caption_values(values: Sequence[float], fmt: str = "{:.3g}") -> str:
    """Join numbers for a figure caption: ``"1.2, 3.4 and 5.6"``."""
    parts = [fmt.format(v) for v in values]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def plot_stacked(data: pd.DataFrame, *, x: str, y: str, hue: str, ax: plt.Axes | None = None) -> plt.Axes:
    """Horizontal stacked bars: one bar per ``y``, segments ``hue`` of length ``x``."""
    ax = ax or plt.figure().gca()
    wide = data.pivot_table(index=y, columns=hue, values=x, sort=False).fillna(0)
    wide.plot.barh(stacked=True, ax=ax, width=0.6)
    ax.set_xlabel(x.replace("_ms", " (ms)").replace("_", " "))
    ax.set_ylabel("")
    ax.legend(fontsize="small", title=hue)
    return ax


def plot_sweep(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, style: str | None = None,
               ax: plt.Axes | None = None, logx: bool = False, logy: bool = False, annotate: bool = False,
               fmt: str = "{:.3g}", legend: bool | str = True) -> plt.Axes:
    """``y`` against the levels of one parameter: a marker per point, a line per ``hue``/``style``.

    A numeric ``x`` is drawn to scale, a text ``x`` as categories in the data's order;
    ``hue`` and ``style`` are always categories (a numeric ``concurrency`` gets distinct
    colours, not a shade ramp). ``annotate`` writes each point's value beside it (for tables
    of a few printed numbers); ``legend`` is ``True`` (inside, where it fits best),
    ``"outside"`` (right of the axes) or ``False`` (left to a neighbouring panel).
    """
    ax = ax or plt.figure().gca()
    data = data.reset_index(drop=True)
    data = data.assign(**{c: data[c].astype(str) for c in (hue, style) if c})
    # seaborn draws `markers` only per style level; without a style every line gets one marker
    marks = {"markers": True} if style else {"marker": "o"}
    sns.lineplot(data=data, x=x, y=y, hue=hue, style=style, dashes=False, ax=ax, errorbar=None, markersize=6,
                 sort=pd.api.types.is_numeric_dtype(data[x]), legend="auto" if legend else False, **marks)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if annotate:
        for xv, yv in zip(data[x], data[y]):
            ax.annotate(fmt.format(yv), (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize="x-small")
        ax.margins(x=0.08)  # room for the labels of the last points
    ax.set_xlabel(_axis_label(x))
    ax.set_ylabel(_axis_label(y))
    if ax.get_legend() is not None:
        where = {"loc": "upper left", "bbox_to_anchor": (1.01, 1)} if legend == "outside" else {"loc": "best"}
        sns.move_legend(ax, **where, fontsize="small", title_fontsize="small")
    return ax


def plot_bars(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, ax: plt.Axes | None = None,
              log: bool = False, annotate: bool = True, fmt: str = "{:.3g}") -> plt.Axes:
    """Horizontal bars of ``x`` per ``y`` (and ``hue``), each labelled with its value.

    With ``log`` the axis starts at half the smallest value, so bars that span orders of
    magnitude stay visible; read their labels, not their lengths.
    """
    ax = ax or plt.figure().gca()
    data = data.reset_index(drop=True)
    sns.barplot(data=data, x=x, y=y, hue=hue, orient="h", ax=ax, errorbar=None)
    if log:  # after drawing: seaborn's log_scale drops bars that start at zero
        ax.set_xscale("log")
        ax.set_xlim(left=data.loc[data[x] > 0, x].min() / 2)
    if annotate:
        for bars in ax.containers:
            ax.bar_label(bars, labels=[fmt.format(v) if np.isfinite(v) and v > 0 else "" for v in bars.datavalues],
                         padding=2, fontsize="x-small")
    ax.set_xlabel(_axis_label(x))
    ax.set_ylabel("")
    if hue:
        sns.move_legend(ax, "best", fontsize="small", title_fontsize="small")
    return ax


def plot_overhead_fit(data: pd.DataFrame, fits: pd.DataFrame, *, x: str, y: str = "total_s", hue: str,
                      ax: plt.Axes | None = None, per: str = "statement") -> plt.Axes:
    """Total time against the count of statements (or loads), with each group's fitted line.

    ``fits`` has ``hue``, ``method``, ``overhead_ms`` and ``write_time_s`` (as
    :func:`ingestlab.models.fit_overhead` or :func:`ingestlab.models.fit_load_overhead`
    return): ``ols`` lines are solid, ``two_point`` lines (no CI) dashed; log–log axes.
    """
    ax = ax or plt.figure().gca()
    sns.scatterplot(data=data, x=x, y=y, hue=hue, ax=ax, s=28, zorder=3)
    levels = list(data[hue].unique())
    palette = dict(zip(levels, sns.color_palette(n_colors=len(levels))))
    grid = np.geomspace(max(data[x].min(), 1), data[x].max(), 50)
    for _, fit in fits[fits["method"].isin(["ols", "two_point"])].iterrows():
        ax.plot(grid, fit["write_time_s"] + grid * fit["overhead_ms"] / 1e3, color=palette.get(fit[hue]), lw=1,
                ls="-" if fit["method"] == "ols" else "--",
                label=f"{fit[hue]}: {fit['overhead_ms']:.3g} ms/{per}"
                + (" (2 points)" if fit["method"] != "ols" else ""))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"{per}s")
    ax.set_ylabel("total time (s)")
    ax.legend(fontsize="small")
    return ax


def _axis_label(column: str) -> str:
    # "rows_per_s" -> "rows per s", "median_ms" -> "median (ms)": the unit the column name carries
    for suffix, unit in (("_ms", "ms"), ("_s", "s"), ("_mb", "MB"), ("_bytes", "bytes")):
        if column.endswith(suffix) and not column.endswith("_per" + suffix):
            return f"{column.removesuffix(suffix).replace('_', ' ')} ({unit})"
    return column.replace("_", " ")


def plot_linear_fit(data: pd.DataFrame, fits: pd.DataFrame, *, x: str, y: str, hue: str,
                    ax: plt.Axes | None = None, logy: bool = True, label: str = "{slope:.3g} per unit") -> plt.Axes:
    """Observations of ``y`` against ``x`` and each group's fitted line ``intercept + slope · x``.

    ``fits`` has ``hue``, ``method``, ``intercept`` and ``slope`` in the units of ``y`` and
    ``x``; only ``ols`` rows are drawn, over the observed range of ``x`` (and, on a log axis,
    where the line is positive). ``label`` is formatted with each fit's columns for the
    legend (``"{per_row_us:.3g} µs/row"``). A log ``y`` axis keeps groups that differ by
    orders of magnitude readable.
    """
    ax = ax or plt.figure().gca()
    levels = list(dict.fromkeys(data[hue]))
    palette = dict(zip(levels, sns.color_palette(n_colors=len(levels))))
    sns.scatterplot(data=data, x=x, y=y, hue=hue, hue_order=levels, palette=palette, ax=ax, s=22, alpha=0.7,
                    legend=False, zorder=3)
    grid = np.linspace(data[x].min(), data[x].max(), 50)
    for _, fit in fits[(fits["method"] == "ols") & fits[hue].isin(levels)].iterrows():
        line = fit["intercept"] + grid * fit["slope"]
        keep = line > 0 if logy else np.ones_like(line, bool)
        ax.plot(grid[keep], line[keep], color=palette[fit[hue]], lw=1,
                label=f"{fit[hue]}: " + label.format(**fit.to_dict()))
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(_axis_label(x))
    ax.set_ylabel(_axis_label(y))
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return ax


def _panels(data: pd.DataFrame, col: str, *, figsize: tuple[float, float], **subplots) -> tuple:
    # one axes per level of `col`, in the data's order: (figure, [(axes, level, rows), ...])
    groups = list(data.groupby(col, sort=False))
    fig, axes = plt.subplots(1, len(groups), figsize=figsize, squeeze=False, **subplots)
    return fig, [(ax, level, part) for ax, (level, part) in zip(axes[0], groups)]


def plot_component_sweeps(data: pd.DataFrame, *, y: str = "median_ms", hue: str | None = "deployment",
                          col: str = "factor") -> matplotlib.figure.Figure:
    """One :func:`plot_sweep` panel per swept table parameter, sharing the ``y`` axis.

    ``data`` is :func:`ingestlab.published.component_sweeps`: a numeric factor (buckets,
    columns) is drawn to scale over ``level_value``, the table model as categories over
    ``level``. Each point carries its value; the legend sits in the first panel.

    Returns
    -------
    matplotlib.figure.Figure
        A row of panels, one per level of ``col``.
    """
    fig, panels = _panels(data, col, figsize=(11, 3.6), sharey=True)
    for i, (ax, factor, part) in enumerate(panels):
        numeric = part["level_value"].notna().all()
        plot_sweep(part, x="level_value" if numeric else "level", y=y, hue=hue, ax=ax, annotate=True,
                   legend=i == 0)
        ax.set_xlabel(factor if numeric else "table model")
    return fig


def plot_sync_insert(data: pd.DataFrame, *, x: str = "group_commit_interval_ms", y: str = "rows_per_s",
                     hue: str | None = "concurrency", style: str | None = "nereids_planner",
                     col: str = "rows_per_insert") -> matplotlib.figure.Figure:
    """One :func:`plot_sweep` panel (log ``y``) per INSERT size, titled with it; the legend right of the last.

    Returns
    -------
    matplotlib.figure.Figure
        A row of panels, one per level of ``col`` (rows per INSERT), smallest first.
    """
    fig, panels = _panels(data.sort_values(col, kind="stable"), col, figsize=(11, 3.9))
    for i, (ax, rows, part) in enumerate(panels):
        plot_sweep(part, x=x, y=y, hue=hue, style=style, ax=ax, logy=True,
                   legend="outside" if i == len(panels) - 1 else False)
        ax.set_title(f"{rows:,} row{'s' if rows > 1 else ''} per INSERT")
    return fig


def plot_scan_times(data: pd.DataFrame, *, x: str = "elapsed_s", y: str = "system", hue: str = "scenario",
                    apart: str = "limit_1") -> matplotlib.figure.Figure:
    """Scan times as :func:`plot_bars` on log axes: the ``hue`` levels, and the level ``apart`` beside them.

    The ``LIMIT 1`` query runs in a fraction of the full scan's time, so it gets its own
    panel (and no ``hue``) rather than a bar too short to read.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels sharing the ``y`` categories: "full scan and COUNT(*)" and "LIMIT 1".
    """
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True, gridspec_kw={"width_ratios": [2, 1]})
    plot_bars(data[data[hue] != apart], x=x, y=y, hue=hue, ax=axes[0], log=True)
    plot_bars(data[data[hue] == apart], x=x, y=y, ax=axes[1], log=True)
    axes[0].set_title("full scan and COUNT(*)")
    axes[1].set_title(apart.replace("limit_", "LIMIT "))
    return fig


def plot_stream_load(data: pd.DataFrame, fits: pd.DataFrame, *, hue: str = "variant") -> matplotlib.figure.Figure:
    """Stream Load runs: rows/s against the load size (log–log), and total time against loads with each fit.

    ``data`` is :func:`ingestlab.published.stream_load_batches`, ``fits`` its
    :func:`ingestlab.models.fit_load_overhead` by ``hue`` (:func:`plot_overhead_fit`).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels side by side.
    """
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.9))
    plot_sweep(data, x="request_bytes", y="rows_per_s", hue=hue, ax=axes[0], logx=True, logy=True)
    plot_overhead_fit(data, fits, x="n_loads", hue=hue, ax=axes[1], per="load")
    return fig


def plot_size_fit(data: pd.DataFrame, fits: pd.DataFrame, *, x: str = "gb", y: str = "seconds", hue: str = "engine",
                  ax: plt.Axes | None = None) -> plt.Axes:
    """``y`` against size on log–log axes, one colour per ``hue``, with each ``fixed + x · per_gb`` fit.

    ``fits`` has ``hue``, ``method``, ``fixed_s`` and ``per_gb_s`` (as
    :func:`ingestlab.workloads.csv_scan.fit` returns); only ``ols`` rows are drawn, as
    curves over the observed sizes (a fixed cost bends the line on log–log axes).
    """
    ax = ax or plt.figure().gca()
    levels = list(dict.fromkeys(data[hue]))
    palette = dict(zip(levels, sns.color_palette(n_colors=len(levels))))
    sns.scatterplot(data=data, x=x, y=y, hue=hue, hue_order=levels, palette=palette, ax=ax, s=24, legend=False,
                    zorder=3)
    grid = np.geomspace(data[x].min(), data[x].max(), 50)
    for _, f in fits[(fits["method"] == "ols") & fits[hue].isin(levels)].iterrows():
        line = f["fixed_s"] + grid * f["per_gb_s"]
        keep = line > 0
        ax.plot(grid[keep], line[keep], color=palette[f[hue]], lw=1,
                label=f"{f[hue]}: {f['fixed_s']:.2g} s + {f['per_gb_s']:.3g} s/GB")
    for level in levels:
        if level not in set(fits.loc[fits["method"] == "ols", hue]):
            ax.plot([], [], "o", color=palette[level], label=f"{level} (no fit)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("table size (GB)")
    ax.set_ylabel(_axis_label(y if y.endswith("_s") else y + "_s"))
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return ax


def plot_sweep_medians(data: pd.DataFrame, fits: pd.DataFrame, *, hue: str = "series", col: str = "factor",
                       log_factors: Sequence[str] = ("partitions",)) -> matplotlib.figure.Figure:
    """Median with its CI against each numeric factor's level, and each group's fitted line, one panel per factor.

    ``data`` has ``col``, ``hue``, ``level_value``, ``median_ms`` and ``median_ci_low_ms`` /
    ``median_ci_high_ms`` (notebook 02's sweep table); ``fits`` has ``col``, ``hue``,
    ``method``, ``slope_ms``, ``intercept_ms`` and ``unit``: ``ols`` lines are drawn over
    each panel's levels. Factors in ``log_factors`` get a log₂ ``x`` axis.
    """
    data = data[data["level_value"].notna()]
    fig, panels = _panels(data, col, figsize=(5.2 * data[col].nunique(), 3.8), sharey=False)
    levels = list(dict.fromkeys(data[hue]))
    palette = dict(zip(levels, sns.color_palette(n_colors=len(levels))))
    for ax, factor, part in panels:
        for series, g in part.groupby(hue, sort=False):
            g = g.sort_values("level_value")
            err = np.vstack([g["median_ms"] - g["median_ci_low_ms"], g["median_ci_high_ms"] - g["median_ms"]])
            ax.errorbar(g["level_value"], g["median_ms"], yerr=np.nan_to_num(err), fmt="o", capsize=3, ms=5,
                        color=palette[series], label=series)
            lo, hi = g["level_value"].min(), g["level_value"].max()
            grid = np.geomspace(lo, hi, 50) if factor in log_factors else np.linspace(lo, hi, 50)
            for fit in fits[(fits[col] == factor) & (fits[hue] == series) & (fits["method"] == "ols")].itertuples():
                ax.plot(grid, fit.intercept_ms + fit.slope_ms * grid, color=palette[series], lw=1,
                        label=f"{series}: {fit.slope_ms:+.2g} {fit.unit}")
        if factor in log_factors:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(factor)
        ax.set_ylabel("median single-row INSERT (ms)")
        ax.legend(fontsize="x-small")
    return fig


def plot_model_effects(data: pd.DataFrame, *, hue: str = "series") -> matplotlib.figure.Figure:
    """Each table model's difference from the baseline model, with its CI (a point-range chart).

    ``data`` has ``level`` (the model), ``slope_ms`` (the difference) and its CI bounds
    ``slope_ci_low_ms`` / ``slope_ci_high_ms``, and ``hue``.
    """
    fig = plt.figure(figsize=(6.4, 1.4 + 0.4 * data["level"].nunique()))
    ax = plot_estimates(data, x="slope_ms", y="level", low="slope_ci_low_ms", high="slope_ci_high_ms", hue=hue,
                        ax=fig.gca())
    ax.axvline(0, color="0.4", lw=0.8)
    ax.set_xlabel("median difference from the baseline model (ms)")
    return fig


def plot_by_clients(data: pd.DataFrame, *, y: str, hue: str = "variant", col: str = "rows_per_insert",
                    x: str = "clients", logy: bool = False) -> matplotlib.figure.Figure:
    """``y`` against the number of clients (log x), a line per ``hue``, a panel per level of ``col``.

    Panels share the ``y`` axis and are titled ``<col> = <level>``; the legend sits right of
    the last panel.
    """
    fig, panels = _panels(data, col, figsize=(4.2 * data[col].nunique() + 1.5, 3.6), sharey=True)
    for i, (ax, level, part) in enumerate(panels):
        plot_sweep(part, x=x, y=y, hue=hue, ax=ax, logx=True, logy=logy,
                   legend="outside" if i == len(panels) - 1 else False)
        ax.set_xticks(sorted(part[x].unique()))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.minorticks_off()
        ax.set_title(f"{col.replace('_', ' ')} = {level}")
    return fig
