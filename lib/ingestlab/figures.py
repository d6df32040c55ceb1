"""The article look, the plot helpers the notebooks share, and the one figure-saving helper."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ingestlab import _paths

#: Formats every figure is saved in.
FORMATS = ("png", "svg", "pdf")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def use_article_theme() -> None:
    """Set the lab's figure look (seaborn ``whitegrid``, paper context, colour-blind palette)."""
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.1,
                  rc={"figure.figsize": (6.4, 3.6), "figure.dpi": 100, "savefig.bbox": "tight",
                      "axes.titleweight": "bold", "svg.fonttype": "none", "pdf.fonttype": 42})


def save(fig: matplotlib.figure.Figure, name: str, *, notebook: str, directory: str | Path | None = None
         ) -> list[Path]:
    """Write ``fig`` as PNG (300 dpi), SVG and PDF to ``figures/<notebook>/<name>.*``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    name : str
        File stem: letters, digits, ``_ . -``.
    notebook : str
        The notebook's name; figures of one notebook share a folder.
    directory : path, optional
        Root folder instead of the lab's ``figures/`` (``$INGESTLAB_FIGURES_DIR``).

    Returns
    -------
    list of Path
        The files written.
    """
    for label, value in (("name", name), ("notebook", notebook)):
        if not _NAME.match(value):
            raise ValueError(f"figure {label}={value!r}: use letters, digits, '_', '.', '-'")
    folder = Path(directory) if directory else _paths.figures_dir() / notebook
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in FORMATS:
        path = folder / f"{name}.{fmt}"
        fig.savefig(path, dpi=300 if fmt == "png" else None, metadata=_metadata(fmt))
        paths.append(path)
    return paths


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
    ax = ax or plt.figure().gca()
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
