"""The figure linter: what in a drawn figure breaks the lab's figure grammar, and the record of it beside a run's figures."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import matplotlib
import matplotlib.collections
import matplotlib.colors
import matplotlib.container
import matplotlib.lines
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.text
import matplotlib.transforms
import numpy as np

from ingestlab import labels
from ingestlab.captions import MIN_AXES_IN, cramped
from ingestlab.direct_labels import EndLabels, drawn_lines
from ingestlab.figures import COLUMN_WIDTH, ENGINE_STYLE, PNG_DPI, SMALLEST_PT, TALLEST, engine_of, print_width

#: The file beside a run's figures that lists, per figure, what in it breaks the grammar (promotion refuses those).
PROBLEMS_FILE = "grammar_problems.json"


def record_problems(folder: Path, name: str, problems: list[str]) -> None:
    # what save found in each figure of the folder, kept beside them: a figure saved again replaces its entry
    path = folder / PROBLEMS_FILE
    try:
        found = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        found = {}
    found = {k: v for k, v in (found if isinstance(found, dict) else {}).items() if k != name}
    if problems:
        found[name] = problems
    if found:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    else:
        path.unlink(missing_ok=True)


def recorded_problems(folder: str | os.PathLike) -> dict[str, list[str]]:
    """What :func:`save` found breaking the grammar in the figures of ``folder`` (a run's ``figures/``): name → problems.

    Examples
    --------
    >>> recorded_problems("/no/such/folder")
    {}
    """
    path = Path(folder) / PROBLEMS_FILE
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): list(v) for k, v in found.items()} if isinstance(found, dict) else {}


class FigureGrammarError(ValueError):
    """A figure breaks the lab's figure grammar (:func:`grammar_problems`); raised by :func:`save` when strict."""


def grammar_problems(fig: matplotlib.figure.Figure, *, png: str | os.PathLike | None = None,
                     drawn: bool = False) -> list[str]:
    """What in ``fig`` (and its saved ``png``) breaks the lab's figure grammar; empty when nothing does.

    Checked: no text under :data:`SMALLEST_PT`; no panel under :data:`MIN_AXES_IN`; no bar on a
    log axis (a bar's length means nothing there: :func:`plot_bars` draws dots instead); every line, marker and text drawn in data coordinates inside its axes'
    limits (a fit drawn beyond its data, a label past the edge); no tick label printed over
    another, nor a label among the data over another or struck through by a line, nor a panel's
    title or axis label over another's; no log axis over less than one decade; every legend entry that names
    an engine in that engine's colour (:data:`ENGINE_STYLE`); at most five colours of data in a
    panel, of at most :data:`MAX_HUES` engines; the PNG at its print size (:func:`print_size_problems`).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A finished figure.
    png : path, optional
        Its saved PNG, whose size is checked.
    drawn : bool
        Whether ``fig`` was drawn as it is now (saved, as :func:`save` calls this), so its ticks and
        panels are placed; otherwise it is drawn first.

    Returns
    -------
    list of str
        One sentence per problem, naming the panel.
    """
    problems: list[str] = []
    for number, ax in enumerate(fig.axes, 1):
        if not ax.get_visible() or not ax.has_data():
            continue
        where = f"panel {number}" + (f" ({ax.get_title(loc='left') or ax.get_title()})"
                                     if (ax.get_title(loc="left") or ax.get_title()) else "")
        problems += [f"{where}: {text}" for text in _axes_problems(ax)]
    for legend in [ax.get_legend() for ax in fig.axes] + list(fig.legends):
        if legend is not None:
            problems += _colour_problems((_handle_colour(handle) if handle is not None else None, text.get_text())
                                         for handle, text in zip(legend.legend_handles, legend.get_texts()))
    for ax in fig.axes:  # direct labels name their series as a legend does
        for ends in (a for a in ax.artists if isinstance(a, EndLabels)):
            problems += _colour_problems((label.get_color(), label.get_text()) for label in ends.labels)
    if not drawn:
        fig.canvas.draw()
    problems += [f"{panel} is too small to read (at least {MIN_AXES_IN[0]:g} × {MIN_AXES_IN[1]:g} in)"
                 for panel in cramped(fig)]
    problems += _crowded_ticks(fig)
    problems += _overlapping_labels(fig)
    problems += _overlapping_titles(fig)
    problems += _labels_struck_through(fig)
    small = sorted({f"{t.get_text()[:30]!r} ({t.get_fontsize():.1f} pt)" for t in fig.findobj(matplotlib.text.Text)
                    if t.get_visible() and t.get_text().strip() and t.get_fontsize() < SMALLEST_PT - 0.01})
    if small:
        problems.append(f"text under {SMALLEST_PT:g} pt: " + ", ".join(small[:3]) + (" …" if len(small) > 3 else ""))
    if png is not None:
        problems += print_size_problems(png, print_width(fig))
    return problems


def _crowded_ticks(fig: matplotlib.figure.Figure) -> list[str]:
    """Panels whose tick labels are printed over one another (drawn figure): an axis stretched over too many decades.

    Examples
    --------
    >>> fig, ax = plt.subplots(figsize=(2, 2))
    >>> _ = ax.set_xticks([1, 2], ["1,000,000,000", "2,000,000,000"])
    >>> fig.canvas.draw()
    >>> _crowded_ticks(fig)
    ["panel 1: its x tick labels '1,000,000,000' and '2,000,000,000' are printed over one another"]
    >>> _ = ax.set_xticks([1, 2], ["1", "2"])
    >>> fig.canvas.draw()
    >>> _crowded_ticks(fig), plt.close(fig)
    ([], None)
    """
    problems = []
    for number, ax, renderer in _shown_axes(fig):
        for axis, labels_ in (("x", ax.get_xticklabels()), ("y", ax.get_yticklabels())):
            lo, hi = ("x0", "x1") if axis == "x" else ("y0", "y1")
            boxes = sorted(((t.get_window_extent(renderer), t.get_text()) for t in labels_
                            if t.get_visible() and t.get_text().strip()), key=lambda b: getattr(b[0], lo))
            over = [(a[1], b[1]) for a, b in zip(boxes, boxes[1:]) if getattr(a[0], hi) > getattr(b[0], lo) + 1]
            if over:
                problems.append(f"panel {number}: its {axis} tick labels {over[0][0]!r} and {over[0][1]!r} are "
                                "printed over one another")
    return problems


def _overlapping_labels(fig: matplotlib.figure.Figure) -> list[str]:
    """Panels where a label placed among the data (a value, a name) is printed over another (drawn figure).

    Examples
    --------
    >>> fig, ax = plt.subplots(figsize=(2, 2))
    >>> _ = ax.text(0.5, 0.5, "1,841"), ax.text(0.51, 0.5, "1,538")
    >>> fig.canvas.draw()
    >>> _overlapping_labels(fig)
    ["panel 1: its labels '1,841' and '1,538' are printed over one another"]
    >>> ax.texts[1].set_position((0.5, 0.1))
    >>> fig.canvas.draw()
    >>> _overlapping_labels(fig), plt.close(fig)
    ([], None)
    """
    problems = []
    for number, ax, renderer in _shown_axes(fig):
        over = _first_overlap([(_text_box(t, renderer), t.get_text()) for t in ax.texts
                               if t.get_visible() and t.get_text().strip()])
        if over is not None:
            problems.append(f"panel {number}: its labels {over[0]!r} and {over[1]!r} are printed over one another")
    return problems


def _first_overlap(boxes: list) -> tuple[str, str] | None:
    """The texts of the first two of ``boxes`` (``(bbox, text)`` in pixels) that overlap by more than a pixel each way."""
    for i, (a, text_a) in enumerate(boxes):
        for b, text_b in boxes[i + 1:]:
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1:
                return text_a, text_b
    return None


def _overlapping_titles(fig: matplotlib.figure.Figure) -> list[str]:
    """Titles and axis labels (the panels' and the figure's) printed over one another (drawn figure).

    Panels set side by side too closely print a long title into its neighbour's, or a y label into
    the next panel's title; nothing inside a panel is involved, so :func:`_overlapping_labels` does
    not see it.

    Examples
    --------
    >>> fig, (a, b) = plt.subplots(1, 2, figsize=(3, 2))
    >>> _ = a.set_title("PostgreSQL + 1 sync standby"), b.set_title("PostgreSQL")
    >>> fig.canvas.draw()
    >>> _overlapping_titles(fig)
    ["'PostgreSQL + 1 sync standby' and 'PostgreSQL' are printed over one another"]
    >>> _ = a.set_title("replicated")
    >>> fig.canvas.draw()
    >>> _overlapping_titles(fig), plt.close(fig)
    ([], None)
    """
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None
    texts = [t for ax in fig.axes if ax.get_visible()
             for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label)]
    texts += [t for t in (fig._suptitle, fig._supxlabel, fig._supylabel) if t is not None] + list(fig.texts)
    texts = list({id(t): t for t in texts}.values())  # a figure's sup-label is among its texts too
    over = _first_overlap([(t.get_window_extent(renderer), t.get_text()) for t in texts
                           if t.get_visible() and t.get_text().strip()])
    return [] if over is None else [f"{over[0][:40]!r} and {over[1][:40]!r} are printed over one another"]


def _labels_struck_through(fig: matplotlib.figure.Figure) -> list[str]:
    """Panels where a line of the data runs through a label placed among the data (drawn figure).

    Examples
    --------
    >>> fig, ax = plt.subplots(figsize=(2, 2))
    >>> _ = ax.plot([0, 1], [0, 1]), ax.text(0.45, 0.48, "9,783")
    >>> fig.canvas.draw()
    >>> _labels_struck_through(fig)
    ["panel 1: its label '9,783' is struck through by a line of the data"]
    >>> ax.texts[0].set_position((0.1, 0.8))
    >>> fig.canvas.draw()
    >>> _labels_struck_through(fig), plt.close(fig)
    ([], None)
    """
    problems = []
    for number, ax, renderer in _shown_axes(fig):
        frame = ax.get_window_extent(renderer)
        paths = drawn_lines(ax)
        for text in (t for t in ax.texts if t.get_visible() and t.get_text().strip()):
            inside = matplotlib.transforms.Bbox.intersection(_text_box(text, renderer), frame)  # lines stop at the frame
            if inside is None or inside.width < 2 or inside.height < 2:
                continue
            letters = inside.padded(-1)  # a line touching a letter's edge strikes nothing
            if any(path.intersects_bbox(letters, filled=False) for path in paths):
                problems.append(f"panel {number}: its label {text.get_text()!r} is struck through by a line of the data")
                break
    return problems


def _text_box(text: matplotlib.text.Text, renderer):
    """The box of ``text``'s letters: an annotation's own box would take in its leader, which may cross other labels."""
    if isinstance(text, matplotlib.text.Annotation):
        text.update_positions(renderer)  # where the text stands now (its offset from the point it names)
    return matplotlib.text.Text.get_window_extent(text, renderer)


def _shown_axes(fig: matplotlib.figure.Figure):
    """``(number, axes, renderer)`` of each visible panel of a drawn figure, numbered from 1 as problems name them."""
    # measured at the figure's own dpi: after a save at 300 dpi the renderer cached last is the saving one
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None
    return [(number, ax, renderer) for number, ax in enumerate(fig.axes, 1) if ax.get_visible()]


def print_size_problems(png: str | os.PathLike, declared: float | None = None) -> list[str]:
    """Whether a PNG saved at :data:`PNG_DPI` dpi is its print width (±0.05 in) and no taller than that width allows.

    Parameters
    ----------
    png : path
        The saved PNG.
    declared : float, optional
        Its figure's print width (:func:`ingestlab.figures.print_width`); by default the one of
        :data:`ingestlab.figures.COLUMN_WIDTH` and :data:`ingestlab.figures.PAGE_WIDTH` nearer its width.
    """
    width, height = (px / PNG_DPI for px in png_size(png))
    return _size_problems(width, height, declared or min(TALLEST, key=lambda size: abs(size - width)))


def _size_problems(width: float, height: float, declared: float) -> list[str]:
    """
    Examples
    --------
    >>> _size_problems(3.3, 3.0, 3.3), _size_problems(4.0, 3.3, 3.3)  # doctest: +NORMALIZE_WHITESPACE
    ([], ['drawn 4.00 in wide, not the 3.3 in of a column: its labels or legend do not fit',
          '3.30 in tall: a column figure is at most 3 in'])
    """
    kind = "column" if declared == COLUMN_WIDTH else "page"
    problems = []
    if abs(width - declared) > 0.05:
        problems.append(f"drawn {width:.2f} in wide, not the {declared:g} in of a {kind}: its labels or legend do not fit")
    if height > TALLEST[declared] + 0.05:
        problems.append(f"{height:.2f} in tall: a {kind} figure is at most {TALLEST[declared]:g} in")
    return problems


def png_size(path: str | os.PathLike) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its header (the IHDR chunk that opens every PNG)."""
    with open(path, "rb") as file:
        head = file.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG file")
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def _axes_problems(ax: plt.Axes) -> list[str]:
    problems = []
    for container in ax.containers:
        if isinstance(container, matplotlib.container.BarContainer):
            scale = ax.get_xscale() if container.orientation == "horizontal" else ax.get_yscale()
            if scale != "linear":
                problems.append(f"bars on a {scale} axis")
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    tol_x, tol_y = 1e-6 * (x1 - x0), 1e-6 * (y1 - y0)

    def outside(points: np.ndarray) -> bool:
        points = points[np.isfinite(points).all(axis=1)] if len(points) else points
        return bool(len(points)) and bool(((points[:, 0] < x0 - tol_x) | (points[:, 0] > x1 + tol_x)
                                           | (points[:, 1] < y0 - tol_y) | (points[:, 1] > y1 + tol_y)).any())

    for line in ax.lines:
        if line.get_visible() and line.get_transform() == ax.transData and outside(
                np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)):
            problems.append(f"the line {line.get_label()!r} runs outside the axes")
    for collection in ax.collections:
        if isinstance(collection, matplotlib.collections.PathCollection) and collection.get_visible() \
                and collection.get_offset_transform() == ax.transData:
            if outside(np.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)):
                problems.append("markers outside the axes")
    for text in ax.texts:
        if text.get_visible() and text.get_transform() == ax.transData and text.get_text().strip():
            if outside(np.asarray([text.get_position()], dtype=float)):
                problems.append(f"the label {text.get_text()!r} is placed outside the axes")
    for axis, scale, limits in (("x", ax.get_xscale(), ax.get_xlim()), ("y", ax.get_yscale(), ax.get_ylim())):
        low, high = sorted(limits)
        if scale == "log" and low > 0 and high / low < 10 * (1 - 1e-9):
            problems.append(f"a log {axis} axis over less than one decade ({low:.3g} to {high:.3g}): "
                            "a linear axis reads better")
    colours = {matplotlib.colors.to_hex(c) for c in _data_colours(ax)}
    if len(colours) > 5:
        problems.append(f"{len(colours)} colours of data in one panel (at most 5)")
    hues = {_hue_of(c) for c in colours}
    keyed = ax.get_legend() is not None or bool(ax.figure.legends)  # names on the axis or at the lines need no key
    if keyed and len(hues) > MAX_HUES:
        problems.append(f"{len(hues)} engines' colours in one panel, which a reader must tell apart by colour "
                        f"(at most {MAX_HUES}: split the panel, or name the series where they are drawn)")
    return problems


#: Hues (engines, and colours no engine has) a reader must tell apart in one panel by a legend; an engine's
#: shades are one. A panel whose series are named where they are drawn (tick labels, names at the lines'
#: ends) asks no colour to be matched.
MAX_HUES = 4


def _hue_of(colour: str) -> str:
    # the engine whose colour this is, or a shade of (its conditions): one hue; any other colour is its own
    return next((name for name, (own, _) in ENGINE_STYLE.items() if is_shade_of(colour, own)), colour)


def _data_colours(ax: plt.Axes) -> list:
    # the colours that tell series apart: lines and markers, bar faces; greys (references, CIs, edges) aside
    found = [line.get_color() for line in ax.lines if line.get_visible() and line.get_label() != "_nolegend_"]
    for collection in ax.collections:
        if isinstance(collection, matplotlib.collections.PathCollection) and len(collection.get_facecolors()):
            found += list(collection.get_facecolors())
    for container in ax.containers:
        if isinstance(container, matplotlib.container.BarContainer):
            found += [bar.get_facecolor() for bar in container]
    return [c for c in found if not _grey(c)]


def _grey(colour) -> bool:
    r, g, b, _ = matplotlib.colors.to_rgba(colour)
    return max(r, g, b) - min(r, g, b) < 0.02


def _handle_colour(handle):
    if isinstance(handle, matplotlib.lines.Line2D):
        return handle.get_markerfacecolor() if handle.get_linestyle() in ("None", "", " ") else handle.get_color()
    if isinstance(handle, matplotlib.collections.Collection):
        faces = handle.get_facecolors() if len(handle.get_facecolors()) else handle.get_edgecolors()
        return faces[0] if len(faces) else None
    if isinstance(handle, matplotlib.patches.Patch):
        face = handle.get_facecolor()
        return face if face[3] > 0 else handle.get_edgecolor()
    if isinstance(handle, matplotlib.container.Container) and len(handle):
        return _handle_colour(handle[0])
    return None


def _colour_problems(entries) -> list[str]:
    # (colour, text) of a legend's entries or of direct labels: a text that names an engine is in its colour
    problems = []
    for colour, text in entries:
        engine = engine_of(text)
        if engine is None or colour is None or _grey(colour):
            continue
        if not is_shade_of(colour, ENGINE_STYLE[engine][0]):
            problems.append(f"{text!r} is drawn in {matplotlib.colors.to_hex(colour)}, not in "
                            f"{labels.label(engine)}'s {ENGINE_STYLE[engine][0]} (or a shade of it)")
    return problems


def is_shade_of(colour, engine_colour: str) -> bool:
    """Whether ``colour`` is ``engine_colour`` mixed with white (up to 90 %) or black (up to 60 %), within rounding.

    The shades of :func:`ingestlab.figures.shade`.

    Examples
    --------
    >>> is_shade_of("#66AAD1", "#0072B2"), is_shade_of("#004A74", "#0072B2"), is_shade_of("#0173B2", "#0072B2")
    (True, True, True)
    >>> is_shade_of("#DE8F05", "#0072B2"), is_shade_of("#56B4E9", "#0072B2")
    (False, False)
    """
    c, e = np.asarray(matplotlib.colors.to_rgb(colour)), np.asarray(matplotlib.colors.to_rgb(engine_colour))
    room = 1 - e
    t = float(np.max(c - e)) / float(np.max(room)) if np.max(room) > 0 else 0.0
    if -0.01 <= t <= 0.9 and bool(np.all(np.abs(e + room * t - c) <= 3 / 255)):
        return True
    darker = 1 - float(np.max(c)) / float(np.max(e)) if np.max(e) > 0 else 0.0  # c = e · (1 − darker)
    return 0 < darker <= 0.6 and bool(np.all(np.abs(e * (1 - darker) - c) <= 3 / 255))
