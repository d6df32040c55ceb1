"""The article look, the plot helpers the notebooks share, and the one figure-saving helper."""

from __future__ import annotations

import json
import logging
import os
import re
import struct
import textwrap
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib
import matplotlib.artist
import matplotlib.collections
import matplotlib.colors
import matplotlib.container
import matplotlib.lines
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.text
import matplotlib.ticker
import matplotlib.transforms
import numpy as np
import pandas as pd
import seaborn as sns

from ingestlab import _paths, labels, report, results

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Values spanning at least this many decades get a log axis (``log="auto"``).
LOG_DECADES = 1.5
#: Points of a drawn model: a straight line on a log axis is a curve, drawn densely.
MODEL_POINTS = 200
#: Width of a figure meant for one journal column / two columns (inches).
COLUMN_WIDTH, PAGE_WIDTH = 3.3, 7.0
#: Resolution of the saved PNG, and the largest PNG (width, height in pixels) an article takes.
PNG_DPI, MAX_PNG_PX = 300, (2200, 2700)
#: Characters of a category's label per line (longer ones wrap): a label column stays under 3 in.
LABEL_CHARS = 45
#: The smallest text a figure carries (points): legible in print at the figure's own size.
SMALLEST_PT = 7.0
#: With this environment variable set to ``strict`` (the tests set it), :func:`save` refuses a figure that
#: breaks the grammar (:func:`grammar_problems`); otherwise it warns.
CHECK_ENV = "INGESTLAB_FIGURE_CHECK"

#: One colour and marker per engine, in every figure of the lab, each declared in the engine's folder
#: (its adapter's ``STYLE``). The colours are Okabe and Ito's colour-blind-safe set, one per family of
#: engines, in this order (the lab's order of engines: by family colour, then by marker); PostgreSQL 15
#: has its own (sky blue), so the two versions a figure sets side by side differ in colour; within a
#: family the marker tells the engines apart. Engines that never share a figure share a colour with
#: other markers (the dataframe libraries black like RocksDB and ArangoDB, PyArrow vermillion like
#: StarRocks and Doris). Conditions that are not engines (settings, methods, components) take
#: :data:`CONDITION_COLOURS`, which no engine uses.
FAMILY_COLOURS = ("#0072B2", "#56B4E9", "#009E73", "#D55E00", "#E69F00", "#CC79A7", "#000000")
#: Markers in the lab's order within a family.
FAMILY_MARKERS = ("o", "D", "s")
#: Colour and marker of notebook 06's readers that are no engine, and of its read floor.
READER_STYLE = {
    "pyarrow_stream": ("#D55E00", "v"), "pyarrow_table": ("#D55E00", "^"),
    "chdb": ("#CC79A7", "o"),
    "polars": ("#000000", "^"), "pandas_pyarrow": ("#000000", "v"), "pandas_c": ("#000000", "P"),
    "read_floor": ("#999999", "X"),
}


class _EngineStyles(Mapping):
    """Name → (colour, marker): every registered engine's, asked of the registry each time, then :data:`READER_STYLE`."""

    def _styles(self) -> dict[str, tuple[str, str]]:
        from ingestlab.engines import registry

        def rank(item):
            colour, marker = item[1]
            return (FAMILY_COLOURS.index(colour) if colour in FAMILY_COLOURS else len(FAMILY_COLOURS),
                    FAMILY_MARKERS.index(marker) if marker in FAMILY_MARKERS else len(FAMILY_MARKERS), item[0])

        engines = {name: (c.STYLE.colour, c.STYLE.marker) for name, c in registry.classes().items()}
        return dict(sorted(engines.items(), key=rank)) | {k: v for k, v in READER_STYLE.items() if k not in engines}

    def __getitem__(self, name: str) -> tuple[str, str]:
        return self._styles()[name]

    def __iter__(self):
        return iter(self._styles())

    def __len__(self) -> int:
        return len(self._styles())


ENGINE_STYLE: Mapping[str, tuple[str, str]] = _EngineStyles()
#: Colours of conditions that are not engines, in order (Paul Tol's muted scheme, without its tones
#: near an engine's colour): a figure never has more than five series of one kind in a panel.
CONDITION_COLOURS = ("#332288", "#882255", "#999933", "#DDCC77", "#AA4499")
#: The colour of a series that is neither an engine nor one of several conditions (one set of bars, say).
NEUTRAL = "#333333"
#: Markers of conditions, in order.
CONDITION_MARKERS = ("o", "s", "^", "D", "v", "P", "<")  # never "X": a run that did not finish (FAILED_MARKER)
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

    ``$INGESTLAB_FIGURE_FORMATS`` may leave out SVG or PDF (:func:`ingestlab.results.figure_formats`).

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
    for fmt in results.figure_formats():
        path = folder / f"{name}.{fmt}"
        # the drawing's own box (the caption and legends outside the axes too), whatever the theme in force
        fig.savefig(path, dpi=PNG_DPI if fmt == "png" else None, bbox_inches="tight", metadata=_metadata(fmt))
        _log.info("saved %s", path)
    problems = grammar_problems(fig, png=folder / f"{name}.png", drawn=True)
    _record_problems(folder, name, problems)
    _show(fig, folder / f"{name}.png")
    close(fig)
    if problems:
        text = f"figure {notebook}/{name} breaks the lab's figure grammar: " + "; ".join(problems)
        if os.environ.get(CHECK_ENV) == "strict":
            raise FigureGrammarError(text)
        _log.warning(text)


#: The file beside a run's figures that lists, per figure, what in it breaks the grammar (promotion refuses those).
PROBLEMS_FILE = "grammar_problems.json"


def _record_problems(folder: Path, name: str, problems: list[str]) -> None:
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
    another; every legend entry that names
    an engine in that engine's colour (:data:`ENGINE_STYLE`); at most five colours of data in a
    panel; the PNG at most :data:`MAX_PNG_PX` pixels at :data:`PNG_DPI` dpi.

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
                 for panel in _cramped(fig)]
    problems += _crowded_ticks(fig)
    small = sorted({f"{t.get_text()[:30]!r} ({t.get_fontsize():.1f} pt)" for t in fig.findobj(matplotlib.text.Text)
                    if t.get_visible() and t.get_text().strip() and t.get_fontsize() < SMALLEST_PT - 0.01})
    if small:
        problems.append(f"text under {SMALLEST_PT:g} pt: " + ", ".join(small[:3]) + (" …" if len(small) > 3 else ""))
    if png is not None:
        width, height = png_size(png)
        if width > MAX_PNG_PX[0] or height > MAX_PNG_PX[1]:
            problems.append(f"the PNG is {width} × {height} px at {PNG_DPI} dpi (at most "
                            f"{MAX_PNG_PX[0]} × {MAX_PNG_PX[1]}: {MAX_PNG_PX[0] / PNG_DPI:.2f} × "
                            f"{MAX_PNG_PX[1] / PNG_DPI:.0f} in)")
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
    # measured at the figure's own dpi: after a save at 300 dpi the renderer cached last is the saving one
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None
    for number, ax in enumerate(fig.axes, 1):
        if not ax.get_visible():
            continue
        for axis, labels_ in (("x", ax.get_xticklabels()), ("y", ax.get_yticklabels())):
            lo, hi = ("x0", "x1") if axis == "x" else ("y0", "y1")
            boxes = sorted(((t.get_window_extent(renderer), t.get_text()) for t in labels_
                            if t.get_visible() and t.get_text().strip()), key=lambda b: getattr(b[0], lo))
            over = [(a[1], b[1]) for a, b in zip(boxes, boxes[1:]) if getattr(a[0], hi) > getattr(b[0], lo) + 1]
            if over:
                problems.append(f"panel {number}: its {axis} tick labels {over[0][0]!r} and {over[0][1]!r} are "
                                "printed over one another")
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
    colours = {matplotlib.colors.to_hex(c) for c in _data_colours(ax)}
    if len(colours) > 5:
        problems.append(f"{len(colours)} colours of data in one panel (at most 5)")
    return problems


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
    """Whether ``colour`` is ``engine_colour`` mixed with white (:func:`shade`, up to 90 %), within rounding.

    Examples
    --------
    >>> is_shade_of("#66AAD1", "#0072B2"), is_shade_of("#0173B2", "#0072B2"), is_shade_of("#DE8F05", "#0072B2")
    (True, True, False)
    """
    c, e = np.asarray(matplotlib.colors.to_rgb(colour)), np.asarray(matplotlib.colors.to_rgb(engine_colour))
    room = 1 - e
    t = float(np.max(c - e)) / float(np.max(room)) if np.max(room) > 0 else 0.0
    return -0.01 <= t <= 0.9 and bool(np.all(np.abs(e + room * t - c) <= 3 / 255))


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


def caption(fig: matplotlib.figure.Figure | None, title: str, *, run=None, data: pd.DataFrame | None = None,
            finding: str | None = None) -> matplotlib.figure.Figure | None:
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
    finding : str, optional
        What the figure shows, in one sentence computed from its data (with its n); written
        first under the figure, markdown emphasis dropped.

    Returns
    -------
    matplotlib.figure.Figure or None
        ``fig``, for ``figures.save(figures.caption(fig, ...), name, ...)``.
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


def _cramped(fig: matplotlib.figure.Figure) -> list[str]:
    # the panels drawn smaller than MIN_AXES_IN, as "panel N (w × h in)"
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
        if (over_w <= 0 and over_h <= 0) or _cramped(fig) or attempt == 6:
            return box
        fig.set_size_inches(max(fig.get_figwidth() - max(over_w, 0) * 1.1, least[0]),
                            max(fig.get_figheight() - max(over_h, 0) * 1.1, least[1]))


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
    """An estimate and its 95 % CI in a few characters, for a label beside a line (:func:`label_ends`).

    The time unit heading ``unit`` (``ms per partition`` → ``ms``) is kept, or the next smaller
    one where the value is under a tenth of it (0.000094 ms → 0.094 µs).

    Examples
    --------
    >>> short_estimate(0.000094, 0.000049, 0.000139, "ms per partition")
    '0.094 µs (0.049–0.139)'
    >>> short_estimate(0.284, 0.253, 0.315, "ms per statement"), short_estimate(54.2, np.nan, np.nan, "ms per load")
    ('0.284 ms (0.253–0.315)', '54.2 ms (no CI)')
    """
    head = str(unit).split(" per ")[0]
    smaller = {"s": "ms", "ms": "µs"}
    while head in smaller and np.isfinite(value) and abs(value) < 0.1:
        value, low, high, head = value * 1e3, low * 1e3, high * 1e3, smaller[head]
    return report.format_estimate(value, low, high, unit=head).replace("95 % CI ", "")


def draw_model(ax: plt.Axes, grid: np.ndarray, intercept: float, slope: float, low: float, high: float, *,
                color, label: str | None, dashed: bool = False, x_of=None) -> matplotlib.lines.Line2D:
    """``intercept + slope · grid`` as a dense curve, and the band its slope's CI spans (shaded).

    Neither widens the axes: the data drawn before set them. The curve stops where it
    leaves them and the band is cut at their edges, so nothing is drawn outside the axes.
    Two bands are not drawn, and the line is dotted instead (:data:`BAND_OFF_SCALE`;
    :func:`band_note` says which): a slope whose CI takes in zero (the fit has not
    resolved any cost: its band fans out from the intercept both ways and, on 05's bulk
    panel, four such fans hid the points and each other), on any axis; and on a log axis a
    band that runs below the axes' bottom (cut at the bottom edge it would cover the panel
    under the data). The reason is the line's gid (:data:`BAND_OFF_REASONS`).
    Draw only a model that was not rejected, over ``grid`` from :func:`model_grid` of the
    ``x`` it was fitted to.
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
                                                  ls="--" if dashed else BAND_OFF_SCALE if off_scale else "-",
                                                  label=label, gid=f"band-off:{off_scale}" if off_scale else None))
    if banded and not off_scale:
        a, b = np.clip(intercept + low * at, y0, y1), np.clip(intercept + high * at, y0, y1)
        grid, a, b = grid[inside], a[inside], b[inside]
        outline = np.concatenate([np.column_stack([grid, a]), np.column_stack([grid[::-1], b[::-1]])])
        ax.add_collection(matplotlib.collections.PolyCollection([outline], facecolors=[color], alpha=0.15,
                                                                linewidths=0), autolim=False)
    return drawn


#: The line style of a fit drawn without its band (:func:`draw_model`).
BAND_OFF_SCALE = ":"
#: Why :func:`draw_model` left a band out, by the gid it gives the line (``band-off:<reason>``).
BAND_OFF_REASONS = {"zero": "takes in zero", "log": "runs below the log axis"}


def band_note(*axes: plt.Axes) -> str:
    """What a figure's key says when one of ``axes`` has a fit drawn without its band (dotted), else ``""``.

    Examples
    --------
    >>> ax = plt.figure().gca()
    >>> ax.set_yscale("log")
    >>> _ = ax.plot([1, 2], [1, 2])
    >>> band_note(ax)
    ''
    >>> band_note(draw_model(ax, np.array([1.0, 2.0]), 1.5, 0.0, -1.0, 1.0, color="k", label=None).axes)
    'dotted: its CI takes in zero, no band'
    >>> band_note(draw_model(ax, np.array([1.0, 2.0]), -1.0, 1.0, 0.5, 1.5, color="k", label=None).axes)
    'dotted: its CI takes in zero or runs below the log axis, no band'
    """
    gids = {line.get_gid() for ax in axes for line in ax.lines if line.get_linestyle() == BAND_OFF_SCALE}
    said = [text for reason, text in BAND_OFF_REASONS.items() if f"band-off:{reason}" in gids]
    return f"dotted: its CI {' or '.join(said)}, no band" if said else ""


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
    figure is drawn, so they hold after the figure is resized to the page (:func:`fit_to_page`).
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
        heights = [(label.get_text().count("\n") + 1) * label.get_fontsize() * 1.25 * px + self.GAP_PT * px
                   for label in self.labels]
        points = [ax.transData.transform(label.xy) for label in self.labels]
        ends = [float(np.clip(y, box.y0, box.y1)) for _, y in points]
        column = []
        for i, (label, (x, _)) in enumerate(zip(self.labels, points)):
            inline = x < box.x1 - self.INLINE_SHARE * box.width  # a line that stops well inside: named where it stops
            label.arrow_patch.set_visible(not inline)
            if inline:  # level with its end, kept inside the axes' height
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


def label_ends(ax: plt.Axes, entries, *, note: str | None = None) -> EndLabels:
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
    """
    artist = EndLabels(ax, list(entries), note)
    ax.add_artist(artist)
    return artist


def model_grid(values, log: bool) -> np.ndarray:
    lo, hi = float(np.min(values)), float(np.max(values))
    return np.geomspace(max(lo, 1e-12), hi, MODEL_POINTS) if log else np.linspace(lo, hi, MODEL_POINTS)


def engine_of(name: object) -> str | None:
    """The engine a level or a legend entry names (its id or its reader's name, alone or before ``: , (``), or None.

    Examples
    --------
    >>> engine_of("postgres15"), engine_of("PostgreSQL: 0.3 ms per statement"), engine_of("batch_100")
    ('postgres15', 'postgres', None)
    >>> engine_of("PostgreSQL 15.18, defaults"), engine_of("PostgreSQL 18.6, defaults")
    ('postgres15', 'postgres')
    """
    text = str(name)
    if text in ENGINE_STYLE:
        return text
    for engine in sorted(ENGINE_STYLE, key=lambda e: -len(labels.label(e))):
        word = labels.label(engine)
        if text == word or (text.startswith(word) and (text[len(word)] in ":,( —"
                                                       or word[-1].isdigit() and text[len(word)] == ".")):
            return engine  # "PostgreSQL 15.18, defaults": PostgreSQL 15 at its minor version
    return None


def palette(levels) -> dict:
    """A colour per level: an engine's own (:data:`ENGINE_STYLE`), a condition's from :data:`CONDITION_COLOURS`.

    Levels that name one engine with several conditions (``"PostgreSQL, synchronous commit
    off"``) take shades of that engine's colour, the first its colour itself (:data:`SHADES`).

    Examples
    --------
    >>> palette(["PostgreSQL", "MariaDB"]) == {"PostgreSQL": "#0072B2", "MariaDB": "#009E73"}
    True
    >>> palette(["1 row per INSERT", "100 rows per INSERT"])
    {'1 row per INSERT': '#332288', '100 rows per INSERT': '#882255'}
    >>> palette(["PostgreSQL, sync on", "PostgreSQL, sync off"])
    {'PostgreSQL, sync on': '#0072B2', 'PostgreSQL, sync off': '#66AAD1'}
    """
    levels = list(dict.fromkeys(levels))
    engines = [engine_of(level) for level in levels]
    others = iter(CONDITION_COLOURS * (len(levels) // len(CONDITION_COLOURS) + 1))
    colours = {}
    for level, engine in zip(levels, engines):
        if engine is None:
            colours[level] = next(others)
        else:
            rank = engines[:levels.index(level)].count(engine)
            colours[level] = shade(ENGINE_STYLE[engine][0], SHADES[min(rank, len(SHADES) - 1)])
    return colours


#: How far toward white an engine's second, third, fourth... condition is drawn (its first: its colour).
SHADES = (0.0, 0.4, 0.58, 0.7, 0.8)


def shade(colour: str, toward_white: float) -> str:
    """``colour`` mixed with white by ``toward_white`` (0: itself), as ``#RRGGBB``."""
    rgb = np.asarray(matplotlib.colors.to_rgb(colour))
    return matplotlib.colors.to_hex(rgb + (1 - rgb) * toward_white).upper()


def markers(levels) -> dict:
    """A marker per level: an engine's own (:data:`ENGINE_STYLE`) for its first level, others in turn.

    An engine's further conditions (drawn in shades of its colour: :func:`palette`) take
    markers of :data:`CONDITION_MARKERS` no other level of the figure has yet, in order: five
    shades of one colour are hard to tell apart, and a light shade of PostgreSQL's blue is
    close to PostgreSQL 15's sky blue; a shade and a shape are not. Only when the markers run
    out does one come back (on a level of another engine's colour, as far as they go).
    Conditions that are no engine take :data:`CONDITION_MARKERS` in order.

    Examples
    --------
    >>> markers(["PostgreSQL", "PostgreSQL, async", "PostgreSQL 15", "PostgreSQL 15, async", "batch", "bulk"])
    {'PostgreSQL': 'o', 'PostgreSQL, async': '^', 'PostgreSQL 15': 's', 'PostgreSQL 15, async': 'D', 'batch': 'o', 'bulk': 's'}
    """
    levels = list(dict.fromkeys(levels))
    engines = [engine_of(level) for level in levels]
    others = iter(CONDITION_MARKERS * (len(levels) // len(CONDITION_MARKERS) + 1))
    own = {ENGINE_STYLE[e][1] for e in engines if e}
    fresh = [m for m in CONDITION_MARKERS if m not in own]
    used = set(own)
    shapes = {}
    for i, (level, engine) in enumerate(zip(levels, engines)):
        if engine is None:
            shapes[level] = next(others)
        elif engine not in engines[:i]:
            shapes[level] = ENGINE_STYLE[engine][1]
        else:
            spare = [m for m in fresh if m not in used]
            if not spare:  # all taken: start the round again
                used, spare = set(own), fresh
            shapes[level] = spare[0]
            used.add(spare[0])
    return shapes


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
    offsets = np.linspace(-0.2, 0.2, len(groups)) if len(groups) > 1 else [0.0]
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
    values = pd.concat([shown["ratio"], shown["low"], shown["high"], pd.Series([1.0])])
    if log == "auto":
        log = spans_decades(values)
    plot_estimates(shown, x="ratio", y=label, low="low", high="high", ax=ax, log=log)
    set_scale(ax, "x", log, values)
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
    wide.plot.barh(stacked=True, ax=ax, width=0.6, color=segment_colours(wide.columns))
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel("")
    legend_below(ax, ncol=min(3, wide.shape[1]), title=labels.column_label(hue))
    return ax


def segment_colours(levels) -> list[str]:
    """Colours of stacked segments: :data:`CONDITION_COLOURS` for the first five, greys (light to dark) after.

    A panel keeps at most five colours; greys tell the further segments apart by lightness.
    """
    levels = list(levels)
    greys = [matplotlib.colors.to_hex(str(g)) for g in np.linspace(0.85, 0.45, max(len(levels) - 5, 1))]
    return [CONDITION_COLOURS[i] if i < 5 else greys[i - 5] for i in range(len(levels))]


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
    level named where its line ends: :func:`label_ends`) or ``False`` (left to a neighbouring
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
    elif style:
        marks = {"style": style, "markers": True}
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
        for xv, yv in zip(data[x], data[y]):
            ax.annotate(text(yv), (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize=SMALLEST_PT)
        ax.margins(x=0.08)  # room for the labels of the last points
    ax.set_xlabel(labels.column_label(x))
    ax.set_ylabel(labels.column_label(y))
    if legend == "ends" and hue:
        colours, order = palette(levels), data[x] if pd.api.types.is_numeric_dtype(data[x]) else data.index
        last = data.assign(_order=order).sort_values("_order").groupby(hue, sort=False).tail(1).set_index(hue)
        label_ends(ax, [(wrapped(level), colours[level], last.loc[level, x], last.loc[level, y]) for level in levels])
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
    if log == "auto":
        log = spans_decades(data[x].dropna())
    if log:  # a bar's length means nothing on a log axis: dots, labelled
        plot_estimates(data, x=x, y=y, low=low, high=high, hue=hue, ax=ax, annotate=annotate, fmt=fmt, log=True,
                       failed=failed)
        if own:
            room_for_rows(ax)
        values = pd.concat([data[x], data[high]]) if high else data[x]
        set_scale(ax, "x", True, values.dropna())
        ax.margins(x=0.15)
        ax.set_ylabel("")
        return ax
    finished = data if failed is None else data.assign(**{x: data[x].where(~_failed(data, failed))})
    data = named(finished.reset_index(drop=True), y, hue)
    levels = list(dict.fromkeys(data[hue])) if hue else []
    colours = {"palette": palette(levels), "hue_order": levels} if hue else {"color": NEUTRAL}
    sns.barplot(data=data, x=x, y=y, hue=hue, orient="h", ax=ax, errorbar=None, **colours)
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
        legend_below(ax, ncol=min(3, data[hue].nunique()), title=labels.column_label(hue))
    return ax


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
        offsets = dict(zip(groups, np.linspace(-0.2, 0.2, len(groups)) if len(groups) > 1 else [0.0]))
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
             explain: bool = True) -> plt.Axes:
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
    beyond them is cut at the edge. The legend, below, states each slope with its CI; or,
    with ``legend="ends"``, each series is named where its line ends, its slope and CI under
    its name (:func:`label_ends`: for a panel with room on its right).

    Parameters
    ----------
    per : str, optional
        What the slope is per, when its unit does not say (``"statement"``: ``ms`` → ``ms per statement``).
    logx, logy : bool or "auto"
        Log axes; ``"auto"``: where the values span decades (``y`` follows a log ``x``).
    legend : {"below", "ends"}
        A legend under the axes, or direct labels at the lines' ends.
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
    colours = palette(levels)
    sns.scatterplot(data=data, x=x, y=y, hue=hue, hue_order=levels, palette=colours, style=hue, style_order=levels,
                    markers=markers(levels), ax=ax, s=22, alpha=0.8, legend=False, zorder=3)
    set_scale(ax, "x", logx, data[x])
    set_scale(ax, "y", ("auto" if ax.get_xscale() != "log" else True) if logy == "auto" else logy, data[y])
    y_seconds = unit_seconds(y)
    usable = fits[fits["method"].isin(["ols", "two_point"]) & fits["term"].isin([slope, intercept])]
    method = usable.groupby(hue)["method"].agg(lambda m: "ols" if (m == "ols").any() else "two_point")
    ends = []
    for level in levels:
        terms = usable[(usable[hue] == level) & (usable["method"] == method.get(level, "ols"))].set_index("term")
        last = data.loc[data[hue] == level].sort_values(x).iloc[-1]
        if slope not in terms.index:
            ax.plot([], [], "o", color=colours[level], label=f"{level} (too few points for a fit)")
            ends.append((f"{wrapped(level)}\ntoo few points for a fit", colours[level], last[x], last[y]))
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
        short = (short_estimate(s["estimate"], s["ci_low"], s["ci_high"], str(s["unit"])) if ols
                 else f"{report.format_value(s['estimate'])} {s['unit']}, 2 points")
        if rejected:
            ax.plot([], [], "o", color=colours[level], label=f"{level}: {text} — model rejected, no line")
            ends.append((f"{wrapped(level)}\nmodel rejected, no line", colours[level], last[x], last[y]))
            continue
        xs = data.loc[data[hue] == level, x]
        line = draw_model(ax, model_grid(xs, ax.get_xscale() == "log"), i_value, s["estimate"] * s_factor,
                          s["ci_low"] * s_factor if ols else np.nan, s["ci_high"] * s_factor if ols else np.nan,
                          color=colours[level], label=f"{level}: {text}", dashed=not ols)
        ends.append((f"{wrapped(level)}\n{short}", colours[level], *(line_end(line) or (last[x], last[y]))))
    ax.set_xlabel(labels.column_label(x) + (" per run" if x.startswith("n_") else ""))  # n_statements: a count per run
    ax.set_ylabel(labels.column_label(y).replace("total (s)", "total time (s)"))
    dotted = band_note(ax)
    also = f"; {dotted}" if dotted else ""
    what = f"fit, shaded: the {labels.label(slope)}'s 95 % CI{also}"
    if legend == "ends":  # what dotted means is said over every panel with a dotted line, the rest over the first
        label_ends(ax, ends, note=wrapped(f"line: the fit, shaded: its {labels.label(slope)}'s 95 % CI{also}; under "
                                           f"each name: the {labels.label(slope)} (95 % CI)") if explain
                   else wrapped(dotted) if dotted else None)
    else:
        legend_below(ax, title=what)
    return ax


#: Characters of a direct label's line (:func:`label_ends`): a column of labels stays under 1.6 in.
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
