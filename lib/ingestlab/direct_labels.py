"""Direct labels: names and values placed among the data, clear of its lines, points and one another.

What the lab draws instead of a legend where a panel has room (:func:`label_ends`, :class:`EndLabels`)
and beside each point of a sweep (:class:`PointLabels`); the figure check finds a label struck
through by a line with :func:`drawn_lines`, as the placement avoids one.
"""

from __future__ import annotations

import itertools

import matplotlib
import matplotlib.artist
import matplotlib.lines
import matplotlib.path
import matplotlib.pyplot as plt
import matplotlib.text
import matplotlib.transforms
import numpy as np

from ingestlab.figures import SMALLEST_PT


def drawn_lines(ax: plt.Axes) -> list[matplotlib.path.Path]:
    """The lines of the data drawn in ``ax`` (visible, two points or more, not markers alone), in display pixels.

    What a label placed among the data must keep clear of, and what the figure check finds a label struck by.
    """
    return [line.get_transform().transform_path(line.get_path()) for line in ax.get_lines()
            if line.get_visible() and len(line.get_xdata()) > 1 and line.get_linestyle() not in ("None", "")]


def line_end(line: matplotlib.lines.Line2D) -> tuple[float, float] | None:
    """The last point of ``line`` that is drawn (finite), in data coordinates; None for a line with none.

    Examples
    --------
    >>> line_end(matplotlib.lines.Line2D([1, 2, 3], [4.0, 5.0, float("nan")]))
    (2.0, 5.0)
    """
    points = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
    points = points[np.isfinite(points).all(axis=1)]
    return (float(points[-1, 0]), float(points[-1, 1])) if len(points) else None


class EndLabels(matplotlib.artist.Artist):
    """Direct labels: each series named in its colour right of the axes, at the height its line ends.

    What the lab draws instead of a legend where a panel has room on its right: the reader
    finds a line's name where the line stops (a line that stops well inside the axes is named
    right there, :attr:`INLINE_SHARE`). Labels whose lines end close together are
    moved apart (never overlapping, kept within the axes' height), a thin leader in the
    series' colour joining each to its line's end. The positions are worked out whenever the
    figure is drawn, so they hold after the figure is resized to its print size (:func:`ingestlab.captions.fit_to_print`).
    Made by :func:`label_ends`.
    """

    #: Space between neighbouring labels (points) and between the axes (or a line's end) and the labels.
    GAP_PT, PAD_PT = 2.0, 6.0
    #: A line that ends further than this share of the axes' width from their right edge is named where it
    #: ends, inside the axes, rather than in the column beside them (a leader across the data would mislead).
    INLINE_SHARE = 0.5

    def __init__(self, ax: plt.Axes, entries, note: str | None = None):
        super().__init__()
        self.set_zorder(0.5)  # drawn before the labels it places
        self.set_in_layout(False)
        beside = matplotlib.transforms.offset_copy(ax.transAxes, fig=ax.figure, x=self.PAD_PT, units="points")
        self.labels = [ax.annotate(text, xy=(x, y), xycoords="data", xytext=(1.0, 0.5), textcoords=beside,
                                   ha="left", va="center", color=colour, fontsize="small", annotation_clip=False,
                                   bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none",
                                         "alpha": 0.8},  # legible where it stands over a line
                                   arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.6, "shrinkA": 1,
                                               "shrinkB": 1})
                       for text, colour, x, y in entries]
        self.note = None if note is None else ax.annotate(
            note, xy=(1.0, 1.0), xycoords=beside, xytext=(0, 2), textcoords="offset points", ha="left",
            va="bottom", fontsize="small", color="0.3")

    def draw(self, renderer) -> None:
        """Place the labels for the axes' size now (the labels themselves are drawn by the axes)."""
        ax = self.axes
        box = ax.get_window_extent(renderer)
        if not self.labels or box.height <= 0:
            return
        px = ax.figure.dpi / 72
        # each label's own box (its lines and its white pad) as drawn, so that none reaches above the axes (the note
        # is there) or into its neighbour: a line count times the font size fell short by the pad
        heights = [max(matplotlib.text.Text.get_window_extent(label, renderer).height + 2 * 0.1 * label.get_fontsize() * px,
                       (label.get_text().count("\n") + 1) * label.get_fontsize() * 1.25 * px) + self.GAP_PT * px
                   for label in self.labels]
        points = [ax.transData.transform(label.xy) for label in self.labels]
        ends = [float(np.clip(y, box.y0, box.y1)) for _, y in points]
        column = []
        lines = drawn_lines(ax)
        for i, (label, (x, _)) in enumerate(zip(self.labels, points)):
            inline = x < box.x1 - self.INLINE_SHARE * box.width  # a line that stops well inside: named where it stops
            label.arrow_patch.set_visible(not inline)
            if inline:  # level with its end if no line runs there, else just above or below; inside the axes' height
                width = label.get_window_extent(renderer).width
                for shift in (0.0, 1.0, -1.0, 2.0, -2.0):
                    y = min(max(ends[i] + shift * heights[i], box.y0 + heights[i] / 2), box.y1 - heights[i] / 2)
                    letters = matplotlib.transforms.Bbox.from_bounds(
                        x + self.PAD_PT * px, y - heights[i] / 2, width, heights[i]).padded(-1 - self.GAP_PT * px / 2)
                    if not any(path.intersects_bbox(letters, filled=False) for path in lines):
                        break
                else:
                    y = min(max(ends[i], box.y0 + heights[i] / 2), box.y1 - heights[i] / 2)
                label.xyann = ((x - box.x0) / box.width, (y - box.y0) / box.height)
            else:
                column.append(i)
        order = sorted(column, key=lambda i: -ends[i])
        y = {}
        for rank, i in enumerate(order):  # from the top: none above the axes, each below the one above it
            ceiling = box.y1 - heights[i] / 2 if rank == 0 else \
                y[order[rank - 1]] - (heights[i] + heights[order[rank - 1]]) / 2
            y[i] = min(ends[i], ceiling)
        for rank in range(len(order) - 1, -1, -1):  # from the bottom: none below the axes, each above the one under it
            i = order[rank]
            floor = box.y0 + heights[i] / 2 if rank == len(order) - 1 else \
                y[order[rank + 1]] + (heights[i] + heights[order[rank + 1]]) / 2
            y[i] = max(y[i], floor)
        for i in column:
            self.labels[i].xyann = (1.0, (y[i] - box.y0) / box.height)
        if self.note is not None:  # above the axes, and above the labels where more than the axes' height took them up
            over = max([y[i] + heights[i] / 2 - box.y1 for i in column] + [0.0])
            self.note.xyann = (0, 2 + over / px)


class PointLabels(matplotlib.artist.Artist):
    """Each point's value written beside it, on a side where it covers no line, no point and no other label.

    Whenever the figure is drawn, the labels are placed from the top down, each at the first of
    the four corners around its point (above right, below right, above left, below left) whose
    box no data line of the panel crosses and no other point or label already placed sits in.
    Where no corner is free, the label goes above and right, at least a line below the label
    above it in its column (two series crossing at one ``x``).
    """

    #: Offset of a label from its point (points), and the space between two labels of one column.
    OFFSET_PT, GAP_PT = 4.0, 1.0
    #: The corners tried, in order, as (right, above).
    CORNERS = ((True, True), (True, False), (False, True), (False, False))

    def __init__(self, ax: plt.Axes, entries):
        super().__init__()
        self.set_zorder(0.5)  # placed before the labels are drawn
        self.set_in_layout(False)
        self.labels = [ax.annotate(text, (x, y), textcoords="offset points", xytext=(self.OFFSET_PT, self.OFFSET_PT),
                                   ha="left", va="bottom", fontsize=SMALLEST_PT) for text, x, y in entries]

    def draw(self, renderer) -> None:
        """Place the labels for the axes' size now (the labels themselves are drawn by the axes)."""
        px = self.axes.figure.dpi / 72
        placed = []
        for label in self.labels:
            x, y = label.xy  # a category (a text x) as the axis numbers it
            point = self.axes.transData.transform((self.axes.xaxis.convert_units(x), self.axes.yaxis.convert_units(y)))
            if np.all(np.isfinite(point)):
                placed.append((point, label))
        placed.sort(key=lambda item: -item[0][1])
        lines = drawn_lines(self.axes)
        points = np.array([point for point, _ in placed]).reshape(-1, 2)
        frame = self.axes.get_window_extent(renderer)
        taken: list[matplotlib.transforms.Bbox] = []
        floors: dict[float, float] = {}  # each column's lowest label bottom so far, in display units
        for (x, y), label in placed:
            label.xyann = (self.OFFSET_PT, self.OFFSET_PT)
            box = label.get_window_extent(renderer)
            width, height, off = box.width, box.height, self.OFFSET_PT * px
            chosen = None
            for inside, (right, above) in itertools.product((True, False), self.CORNERS):  # within the panel first
                x0 = x + off if right else x - off - width
                y0 = y + off if above else y - off - height
                candidate = matplotlib.transforms.Bbox.from_bounds(x0, y0, width, height)
                if inside and not (frame.contains(candidate.x0, candidate.y0) and frame.contains(candidate.x1, candidate.y1)):
                    continue
                covered = ((points[:, 0] >= x0) & (points[:, 0] <= candidate.x1)
                           & (points[:, 1] >= y0) & (points[:, 1] <= candidate.y1))
                if not (covered.any() or any(candidate.overlaps(other) for other in taken)
                        or any(path.intersects_bbox(candidate, filled=False) for path in lines)):
                    chosen = candidate
                    break
            if chosen is None:  # no corner free: above right, a line below the label above it in its column
                floor = floors.get(round(float(x)), np.inf)
                bottom = min(y + off, floor - (label.get_fontsize() * 1.2 + self.GAP_PT) * px)
                chosen = matplotlib.transforms.Bbox.from_bounds(x + off, bottom, width, height)
            label.xyann = ((chosen.x0 - x) / px, (chosen.y0 - y) / px)
            floors[round(float(x))] = min(floors.get(round(float(x)), np.inf), chosen.y0)
            taken.append(chosen)


def label_ends(ax: plt.Axes, entries, *, note: str | None = None, note_in_layout: bool = True) -> EndLabels:
    """Name each series where its line ends, right of the axes, instead of a legend (:class:`EndLabels`).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The finished panel (its limits set).
    entries : iterable of (str, colour, float, float)
        Each label's text, colour and the point in data coordinates it names (a line's end:
        :func:`line_end`; for a series without a line, its last point).
    note : str, optional
        What the lines and shading mean, written above the labels.
    note_in_layout : bool
        Whether the layout makes room for the note above the panel (the top panel's, which
        nothing stands above); a lower panel's short note stands in the gap left by the panel
        above, and room made for it in each of 03's three panels made the figure too tall.
    """
    artist = EndLabels(ax, list(entries), note)
    if artist.note is not None:
        artist.note.set_in_layout(note_in_layout)
    ax.add_artist(artist)
    return artist
