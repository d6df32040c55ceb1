"""Captions and print size: a figure's title, finding and provenance beside it (never in it), and its fit to its printed width."""

from __future__ import annotations

import dataclasses
import re
import textwrap

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.transforms
import numpy as np
import pandas as pd

from ingestlab import report
from ingestlab.figures import TALLEST, print_width

#: The attribute of a figure that holds its :class:`Caption` until :func:`ingestlab.figures.save` writes it.
CAPTION_ATTR = "ingestlab_caption"
#: The suffix of the file beside a saved figure that holds its caption (``latency.caption.md``).
CAPTION_SUFFIX = ".caption.md"


@dataclasses.dataclass(frozen=True)
class Caption:
    """What a figure shows and what made it, in text beside the image, never in it (an article sets captions in text).

    Attributes
    ----------
    title : str
        What the figure shows, in words (its caption's first sentence).
    finding : str or None
        What it shows, in one sentence computed from its data (with its n).
    provenance : str
        The engines and versions, scale, disk, run and revision, or the published study it draws.
    """

    title: str
    finding: str | None
    provenance: str

    def markdown(self) -> str:
        """The caption as Markdown: the title in bold as its first sentence, the finding, then the provenance in italics.

        Examples
        --------
        >>> print(Caption("Time of one statement", "PostgreSQL's median is 0.2 ms (n = 500).", "run 2026-11-29").markdown(), end="")
        **Time of one statement.** PostgreSQL's median is 0.2 ms (n = 500).
        <BLANKLINE>
        *run 2026-11-29*
        """
        title = self.title.strip()
        head = f"**{title if title.endswith(('.', '?', '!')) else title + '.'}**"
        text = f"{head} {self.finding.strip()}" if self.finding else head
        return text + (f"\n\n*{self.provenance}*" if self.provenance else "") + "\n"


def caption(fig: matplotlib.figure.Figure | None, title: str, *, run=None, data: pd.DataFrame | None = None,
            finding: str | None = None) -> matplotlib.figure.Figure | None:
    """Give ``fig`` its caption — title, finding, what made it — to go beside its image.

    Nothing is drawn into the figure: :func:`ingestlab.figures.save` writes the caption to
    ``<name>.caption.md`` beside the figure's files and shows it under the figure in the notebook,
    and ``ingestlab figures`` sets it under the figure in ``FINDINGS.md`` and in the gallery
    ``figures/README.md``. The provenance names the engines and their versions, the scale, the
    disk profile, the run and the revision (:func:`ingestlab.report.run_caption` of the run's
    metadata) and, for a published table, the study and the versions it ran
    (:func:`ingestlab.report.data_caption`). :func:`ingestlab.figures.save` fits the figure to its
    print size (:func:`fit_to_print`).

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
    finding : str, optional
        What the figure shows, in one sentence computed from its data (with its n); markdown
        emphasis dropped.

    Returns
    -------
    matplotlib.figure.Figure or None
        ``fig``, for ``figures.save(captions.caption(fig, ...), name, ...)``.
    """
    if fig is None:
        return None
    meta = getattr(run, "meta", run)
    parts = ([report.data_caption(data)] if data is not None else []) + ([report.run_caption(meta)] if meta else [])
    setattr(fig, CAPTION_ATTR, Caption(title, report.plain(finding) if finding else None, " — ".join(parts)))
    return fig


def of(fig: matplotlib.figure.Figure) -> Caption | None:
    """The caption :func:`caption` gave ``fig``, or None."""
    return getattr(fig, CAPTION_ATTR, None)


#: The smallest panel (inches, width × height) a reader can read data from.
MIN_AXES_IN = (1.2, 0.8)


def cramped(fig: matplotlib.figure.Figure, margin: float = 0.0) -> list[str]:
    """The panels of ``fig`` drawn smaller than :data:`MIN_AXES_IN` (plus ``margin`` inches), as ``"panel N (w × h in)"``."""
    small = []
    for number, ax in enumerate(fig.axes, 1):
        if ax.get_visible() and ax.has_data():
            box = ax.get_window_extent().transformed(fig.dpi_scale_trans.inverted())
            if box.width < MIN_AXES_IN[0] + margin or box.height < MIN_AXES_IN[1] + margin:
                small.append(f"panel {number} ({box.width:.1f} × {box.height:.1f} in)")
    return small


def fit_to_print(fig: matplotlib.figure.Figure) -> matplotlib.transforms.Bbox:
    """Size ``fig`` so that everything drawn (legends and labels outside the axes too) spans its print width; the box to save.

    The print width is a column's or a page's (:func:`ingestlab.figures.print_width`), the height
    at most :data:`ingestlab.figures.TALLEST` for it. Text keeps its size in points (so it prints
    at the size it is drawn) and the axes give way: they grow or shrink until the drawing, with
    ``savefig.pad_inches`` around it, is exactly the print width, and shrink until it is no
    taller than allowed — never below :data:`MIN_AXES_IN`. A drawing that cannot fit (its labels
    alone wider than the page) keeps its size, and the grammar check says so.

    Returns
    -------
    matplotlib.transforms.Bbox
        The box to save (inches, for ``savefig``'s ``bbox_inches``): the print width, or the
        drawing's own width where it cannot fit, with the drawing centred in it.

    Examples
    --------
    >>> fig, ax = plt.subplots(figsize=(6.0, 8.0))
    >>> _ = ax.plot([0, 1], [0, 1])
    >>> box = fit_to_print(fig)
    >>> float(round(box.width, 3)), bool(box.height <= 5.5), plt.close(fig)
    (7.0, True, None)
    """
    width = print_width(fig)
    pad = float(plt.rcParams["savefig.pad_inches"])

    def small(fig):  # with a margin: saved at 300 dpi, text measures a little larger and the panels a little smaller
        return cramped(fig, margin=0.03)

    readable = None  # the last size at which every panel could be read
    too_small = None  # the last size at which one could not
    before = None  # the size and drawing of the step before: how fast the drawing follows the figure's size
    for _ in range(16):
        fig.draw_without_rendering()  # the layout engine places the axes; nothing is rasterised
        size = fig.get_size_inches().copy()
        if small(fig):
            too_small = size
            if readable is not None and (size < readable - 0.005).any():
                if (readable - size).max() <= 0.01:  # the smallest readable size, as closely as it matters
                    break
                fig.set_size_inches((size + readable) / 2)  # shrunk past the smallest readable panel: back halfway
                continue
        else:
            readable = size
        box = fig.get_tightbbox()
        over = np.array([box.width + 2 * pad - width, max(box.height + 2 * pad - (TALLEST[width] - 0.01), 0.0)])
        if small(fig):  # the panels are as small as a reader can read: they may grow, never shrink
            over = np.array([min(over[0], 0.0), 0.0])
        if abs(over[0]) <= 0.005 and over[1] <= 0.005:
            break
        step = np.maximum(_next_size(size, over, np.array([box.width, box.height]), before, too_small), 0.5)
        if np.abs(step - size).max() <= 0.005:  # between a size too small and one that is not: as close as it matters
            break
        fig.set_size_inches(step)
        before = size, np.array([box.width, box.height])
    else:  # out of steps: the last size set is drawn (a break keeps the drawing and box of the size it kept)
        fig.draw_without_rendering()
        box = None
    if small(fig) and readable is not None:  # the last step shrank too far: the smallest readable size found
        fig.set_size_inches(readable)
        fig.draw_without_rendering()
        box = None
    box = fig.get_tightbbox() if box is None else box
    drawn = width if box.width + 2 * pad <= width + 0.02 else box.width + 2 * pad
    return matplotlib.transforms.Bbox.from_bounds(box.x0 - (drawn - box.width) / 2, box.y0 - pad,
                                                  drawn, box.height + 2 * pad)


def _next_size(size: np.ndarray, over: np.ndarray, drawn: np.ndarray, before, too_small) -> np.ndarray:
    """The figure size (w, h) to draw next, to take ``over`` inches off the drawing ``drawn`` at ``size``.

    A secant step: the drawing follows the figure's size at the rate the step ``before`` (its size
    and drawing) showed, not one to one (axes placed in fractions of the figure give way only in
    part); a step towards a size at which panels were too small to read bisects instead.
    """
    rate = np.ones(2)
    if before is not None:
        moved = size - before[0]
        for d in (0, 1):
            if abs(moved[d]) > 0.01:
                rate[d] = np.clip((drawn[d] - before[1][d]) / moved[d], 0.2, 1.5)
    step = size - over / rate
    if too_small is not None:
        into = (step < size - 0.005) & (too_small < size) & (step <= too_small + 0.005)
        step = np.where(into, (size + too_small) / 2, step)
    return step


#: Inches a row of a dot plot or bar chart takes: a gap, and a line of its label ("small" text).
ROW_GAP_IN, ROW_LINE_IN = 0.07, 0.115


def room_for_rows(ax: plt.Axes, per_row: int = 1) -> None:
    r"""Make the figure of ``ax`` (one panel that a plot function made itself) tall enough for its rows' labels.

    A figure of the theme's default height held 04's 20 speed-ups, each named on two lines,
    their names printed over one another: each row gets :data:`ROW_GAP_IN` plus
    :data:`ROW_LINE_IN` per line of its longest label, or per value label it holds
    (``per_row``: a dot plot's levels, each labelled), and the figure never shrinks.

    Examples
    --------
    >>> fig, ax = plt.subplots(figsize=(7, 2))
    >>> _ = ax.set_yticks(range(20), ["a long name\non two lines"] * 20)
    >>> room_for_rows(ax)
    >>> float(round(fig.get_figheight(), 2)), plt.close(fig)
    (7.4, None)
    """
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    if not ticks:
        return
    lines = max(max(t.count("\n") + 1 for t in ticks), per_row)
    fig = ax.figure
    need = 1.4 + len(ticks) * (ROW_GAP_IN + ROW_LINE_IN * lines)
    if need > fig.get_figheight():
        fig.set_size_inches(fig.get_figwidth(), need)


#: Characters of a direct label's line (:func:`ingestlab.direct_labels.label_ends`): a column of labels stays under 1.6 in.
END_LABEL_CHARS = 26


#: A number's unit, kept on its number's line by :func:`wrapped`.
_UNIT_AFTER_NUMBER = re.compile(r"(?<=\d) (?=(?:%|ms|µs|s|MB|GB|GiB|×)(?:[\s),;.:]|$))")


def wrapped(text: str, width: int = END_LABEL_CHARS) -> str:
    """``text`` wrapped at ``width`` characters a line (a direct label's: :data:`END_LABEL_CHARS`).

    Never inside "95 % CI", nor between a number and its unit ("0.202 ms", "(74 %)").

    Examples
    --------
    >>> print(wrapped("medians with their own 95 % CI"))  # textwrap alone: "… own 95" / "% CI"
    medians with their own
    95 % CI
    >>> print(wrapped("commit 0.168 ms of 0.302 ms (56 %)", 19))  # textwrap alone: "… of 0.302" / "ms (56" / "%)"
    commit 0.168 ms of
    0.302 ms (56 %)
    """
    # a no-break space: textwrap breaks only at plain spaces
    kept = _UNIT_AFTER_NUMBER.sub("\u00a0", str(text)).replace("\u00a0% CI", "\u00a0%\u00a0CI")
    return "\n".join(textwrap.wrap(kept, width)).replace("\u00a0", " ") or str(text)
