"""Captions and the page: a figure's title, finding and provenance around it, and its fit to the printed page."""

from __future__ import annotations

import re
import textwrap

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.transforms
import pandas as pd

from ingestlab import report
from ingestlab.figures import MAX_PNG_PX, PNG_DPI


def caption(fig: matplotlib.figure.Figure | None, title: str, *, run=None, data: pd.DataFrame | None = None,
            finding: str | None = None) -> matplotlib.figure.Figure | None:
    """Title ``fig`` and write under it what made it, so the image says so without the notebook.

    The caption line names the engines and their versions, the scale, the disk profile, the
    run and the revision (:func:`ingestlab.report.run_caption` of the run's metadata) and,
    for a published table, the study and the versions it ran
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
    finding : str, optional
        What the figure shows, in one sentence computed from its data (with its n); written
        first under the figure, markdown emphasis dropped.

    Returns
    -------
    matplotlib.figure.Figure or None
        ``fig``, for ``figures.save(captions.caption(fig, ...), name, ...)``.
    """
    if fig is None:
        return None
    meta = getattr(run, "meta", run)
    parts = ([report.data_caption(data)] if data is not None else []) + ([report.run_caption(meta)] if meta else [])
    room = _caption_inches(title, finding, parts, _page_inches()[0])
    inches = _fit(fig, room)  # draws: the layout engine places the axes
    # the caption wraps at the drawing's width: a drawing narrower than the page needs more lines, so more room
    narrow = _caption_inches(title, finding, parts, inches.width)
    if narrow > room:
        inches = _fit(fig, narrow)
    fig.set_layout_engine("none")  # and fixed there: the texts below are measured, not drawn, so nothing moves
    renderer = fig.canvas.get_renderer()
    box = inches.transformed(fig.dpi_scale_trans).transformed(fig.transFigure.inverted())
    # wrapped to the drawing's width: the caption never widens the figure
    width_chars, title_chars = _wrap_chars(inches.width)
    texts = [(fig.text(box.x0, box.y1 + 0.02, "", ha="left", va="bottom", fontsize="large", fontweight="bold"),
              title, title_chars)]
    below = box.y0 - 0.02
    if finding:
        said = fig.text(box.x0, below, "", ha="left", va="top", fontsize="small", color="0.1")
        texts.append((said, report.plain(finding), width_chars))
    if parts:
        texts.append((fig.text(box.x0, below, "", ha="left", va="top", fontsize="small", color="0.25"),
                      " — ".join(parts), width_chars))
    for narrower in (1.0, 0.92, 0.85, 0.78, 0.7):  # a wrap by character count can still run past the page
        for artist, words, chars in texts:
            artist.set_text(wrapped(words, max(int(chars * narrower), 20)))
        if finding and parts:  # the provenance line under the finding
            under = texts[1][0].get_window_extent(renderer).transformed(fig.transFigure.inverted()).y0
            texts[2][0].set_y(under - 0.01)
        if fig.get_tightbbox(renderer).width <= _page_inches()[0]:
            break
    return fig


#: The smallest panel (inches, width × height) a reader can read data from.
MIN_AXES_IN = (1.2, 0.8)


def cramped(fig: matplotlib.figure.Figure) -> list[str]:
    """The panels of ``fig`` drawn smaller than :data:`MIN_AXES_IN`, as ``"panel N (w × h in)"``."""
    small = []
    for number, ax in enumerate(fig.axes, 1):
        if ax.get_visible() and ax.has_data():
            box = ax.get_window_extent().transformed(fig.dpi_scale_trans.inverted())
            if box.width < MIN_AXES_IN[0] or box.height < MIN_AXES_IN[1]:
                small.append(f"panel {number} ({box.width:.1f} × {box.height:.1f} in)")
    return small


def _page_inches() -> tuple[float, float]:
    # what a figure's drawing may span so that its PNG (the drawing and savefig's padding) stays within MAX_PNG_PX
    pad = 2 * float(plt.rcParams["savefig.pad_inches"]) + 0.12  # text measures a little wider at 300 dpi
    return MAX_PNG_PX[0] / PNG_DPI - pad, MAX_PNG_PX[1] / PNG_DPI - pad


def _caption_inches(title: str, finding: str | None, parts: list[str], width_in: float) -> float:
    # the height the title above and the finding and provenance below take, wrapped at width_in inches
    size = float(plt.rcParams["font.size"])
    small, title_chars = _wrap_chars(width_in)
    title_lines = len(wrapped(title, title_chars).splitlines())
    lines = sum(len(wrapped(text, small).splitlines()) for text in ([report.plain(finding)] if finding else []) + [
        " — ".join(parts)] if text)
    return 0.25 + title_lines * 1.2 * 1.2 * size / 72 + lines * 1.25 * 0.833 * size / 72


def _wrap_chars(width_in: float) -> tuple[int, int]:
    # characters per line of the caption's small text and of the large bold title over width_in inches
    # (a character is about 0.55 em of its font, a bold one 0.6)
    size = float(plt.rcParams["font.size"])
    return int(width_in * 72 / (0.55 * size * 0.833)), int(width_in * 72 / (0.6 * size * 1.2))


def fit_to_page(fig: matplotlib.figure.Figure, *, room_in: float = 0.0) -> matplotlib.figure.Figure:
    """Shrink ``fig`` until everything drawn (legends and labels outside the axes too) fits the page.

    The page is :data:`MAX_PNG_PX` at :data:`PNG_DPI` dpi (7.33 × 9 in), less ``room_in``
    inches of height; text keeps its size in points (so it stays legible in print) and the
    axes give way, down to half their size. A figure that fits is left alone.
    """
    _fit(fig, room_in)
    return fig


def _fit(fig: matplotlib.figure.Figure, room_in: float) -> matplotlib.transforms.Bbox:
    # fit_to_page's work; the drawing's box (inches) as last drawn, which caption measures from
    width, height = _page_inches()
    height -= room_in
    # never below half its size: a figure whose labels alone are wider than the page is redrawn, not squeezed
    least = (max(fig.get_figwidth() / 2, 1.5), max(fig.get_figheight() / 2, 1.0))
    for attempt in range(7):
        fig.draw_without_rendering()  # the layout engine places the axes; nothing is rasterised
        box = fig.get_tightbbox(fig.canvas.get_renderer())
        over_w, over_h = box.width - width, box.height - height
        if (over_w <= 0 and over_h <= 0) or cramped(fig) or attempt == 6:
            return box
        fig.set_size_inches(max(fig.get_figwidth() - max(over_w, 0) * 1.1, least[0]),
                            max(fig.get_figheight() - max(over_h, 0) * 1.1, least[1]))


#: Inches a row of a dot plot or bar chart takes: a gap, and a line of its label ("small" text).
ROW_GAP_IN, ROW_LINE_IN = 0.07, 0.115


def room_for_rows(ax: plt.Axes) -> None:
    r"""Make the figure of ``ax`` (one panel that a plot function made itself) tall enough for its rows' labels.

    A figure of the theme's default height held 04's 20 speed-ups, each named on two lines,
    their names printed over one another: each row gets :data:`ROW_GAP_IN` plus
    :data:`ROW_LINE_IN` per line of its longest label, and the figure never shrinks.

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
    lines = max(t.count("\n") + 1 for t in ticks)
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
