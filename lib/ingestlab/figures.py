"""The article's house style (theme, engine colours and markers, condition colours) and the one figure-saving helper."""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import logging
import os
import re
from pathlib import Path
from typing import Mapping

import matplotlib
import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ingestlab import _paths, labels, results

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Values spanning at least this many decades get a log axis (``log="auto"``).
LOG_DECADES = 1.5
#: Points of a drawn model: a straight line on a log axis is a curve, drawn densely.
MODEL_POINTS = 200
#: Width of a figure meant for one journal column / two columns (inches): every saved figure is one or the other.
COLUMN_WIDTH, PAGE_WIDTH = 3.3, 7.0
#: The tallest a figure of each print width may be (inches): a page-wide figure leaves room for its caption.
TALLEST = {COLUMN_WIDTH: 3.0, PAGE_WIDTH: 5.5}
#: The attribute of a figure that holds its print width once :func:`print_width` has decided it.
WIDTH_ATTR = "ingestlab_print_width"
#: Resolution of the saved PNG (its pixels / PNG_DPI are its inches in print).
PNG_DPI = 300
#: Characters of a category's label per line (longer ones wrap): a label column stays under 3 in.
LABEL_CHARS = 45
#: The smallest text a figure carries (points): legible in print at the figure's own size.
SMALLEST_PT = 7.0
#: With this environment variable set to ``strict`` (the tests set it), :func:`save` refuses a figure that
#: breaks the grammar (:func:`grammar_problems`); otherwise it warns.
CHECK_ENV = "INGESTLAB_FIGURE_CHECK"

#: One colour and marker per engine, in every figure of the lab, each declared in the engine's folder
#: (its adapter's ``STYLE``), no two engines alike: a reader who learns StarRocks' vermillion in one figure
#: finds StarRocks by it in every other. Seventeen engines and libraries do not fit a colour-blind-safe set
#: of seven (Okabe and Ito's, whose colours the first engines keep), so the colours are Okabe and Ito's and
#: Paul Tol's, chosen at least 18 apart (CIE ΔE*ab; ``tests/test_figures.py``), and the marker is the
#: engine's second mark. This is also the lab's order of engines
#: (families together: PostgreSQL and its wire, MariaDB and MySQL, the seeds' systems, the embedded ones);
#: an engine whose colour is not here (a user's own) comes after them.
LAB_COLOURS = ("#0072B2", "#56B4E9", "#332288", "#AA4499", "#009E73", "#117733", "#44AA99", "#999933",
               "#D55E00", "#882255", "#E69F00", "#CC79A7", "#8C564B", "#4B0055")
#: Colour and marker of notebook 06's readers that are no engine (a library's readers share its colour,
#: their markers tell them apart), and of its read floor (a reference, grey).
READER_STYLE = {
    "chdb": ("#CC79A7", "o"),
    "polars": ("#BBCC33", "^"),
    "pyarrow_stream": ("#0099AA", "v"), "pyarrow_table": ("#0099AA", "^"),
    "pandas_pyarrow": ("#EE3377", "v"), "pandas_c": ("#EE3377", "P"),
    "read_floor": ("#999999", "X"),
}


class _EngineStyles(Mapping):
    """Name → (colour, marker): every registered engine's, asked of the registry each time, then :data:`READER_STYLE`."""

    def _styles(self) -> dict[str, tuple[str, str]]:
        from ingestlab.engines import registry

        classes = registry.classes()

        def rank(name):
            style = classes[name].STYLE
            colour = style.colour.upper()
            return (LAB_COLOURS.index(colour) if colour in LAB_COLOURS else len(LAB_COLOURS),
                    style.configuration_of is not None, name)

        engines = {name: (classes[name].STYLE.colour, classes[name].STYLE.marker) for name in sorted(classes, key=rank)}
        return engines | {k: v for k, v in READER_STYLE.items() if k not in engines}

    def __getitem__(self, name: str) -> tuple[str, str]:
        return self._styles()[name]

    def __iter__(self):
        return iter(self._styles())

    def __len__(self) -> int:
        return len(self._styles())


ENGINE_STYLE: Mapping[str, tuple[str, str]] = _EngineStyles()
#: The colour of a series that is neither an engine nor one of several conditions (one set of bars, say).
NEUTRAL = "#333333"
#: Colours of conditions that are not an engine's (rows per INSERT, clients, queries, verdicts), in order:
#: greys from dark to light, never a hue, which would be an engine's; their markers
#: (:data:`CONDITION_MARKERS`) go with them. An engine's own conditions take lightness too, of its colour
#: (:data:`SHADES`): in the lab lightness means a condition, hue an engine. Three greys a reader tells
#: apart on white, as lines and as markers; a fourth condition starts them again, its marker telling it apart.
CONDITION_GREYS = (NEUTRAL, "#8C8C8C", "#BDBDBD")
#: Markers of conditions, in order.
CONDITION_MARKERS = ("o", "s", "^", "D", "v", "P", "<")  # never "X": a run that did not finish (FAILED_MARKER)
_log = logging.getLogger(__name__)


def use_article_theme() -> None:
    """Set the lab's look in a notebook: figures (seaborn ``whitegrid``, paper context, colour-blind palette), and
    tables that show whole names (pandas cuts a cell at 50 characters: two headline names alike in their
    first 50 would read as one)."""
    pd.set_option("display.max_colwidth", None)
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.0,
                  rc={"figure.figsize": (PAGE_WIDTH, 3.6), "figure.dpi": 100, "savefig.bbox": "tight",
                      "axes.titleweight": "bold", "svg.fonttype": "none", "pdf.fonttype": 42,
                      # clip-path and other ids from a fixed salt: the same figure gives the same SVG bytes
                      "svg.hashsalt": "ingestlab"})


def save(fig: matplotlib.figure.Figure | None, name: str, *, notebook: str, directory: str | Path | None = None
         ) -> None:
    """Write ``fig`` as PNG (300 dpi), SVG and PDF into its run's folder, its caption beside them, show it, close it.

    Each file is the figure at its print size: one column (3.3 in) or one page (7 in) wide
    (:func:`print_width`), the axes resized so that the drawing spans that width
    (:func:`ingestlab.captions.fit_to_print`); text keeps its size in points.

    The caption :func:`ingestlab.captions.caption` gave the figure goes to ``<name>.caption.md``
    (Markdown), beside the images and never into them, and is shown under the figure.

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
    from ingestlab import captions, figure_checks  # both draw on this module's house style

    folder = Path(directory) if directory else destination(notebook)
    folder.mkdir(parents=True, exist_ok=True)
    said = captions.of(fig)
    text_file = folder / f"{name}{captions.CAPTION_SUFFIX}"
    if said is not None:
        text_file.write_text(said.markdown())
        _log.info("saved %s", text_file)
    else:  # none left from an earlier figure of that name
        text_file.unlink(missing_ok=True)
    box = captions.fit_to_print(fig)  # the drawing (legends outside the axes too) at its print width, centred
    # checked as drawn at its print size, before a save: a save at another resolution (PNG's 300 dpi) leaves each
    # axis label where that save put it, in its pixels, and a y label then seemed to cross another panel's title
    problems = figure_checks.grammar_problems(fig, drawn=True)
    for fmt in results.figure_formats():
        path = folder / f"{name}.{fmt}"
        fig.savefig(path, dpi=PNG_DPI if fmt == "png" else None, bbox_inches=box, metadata=_metadata(fmt))
        _log.info("saved %s", path)
    problems += figure_checks.print_size_problems(folder / f"{name}.png", print_width(fig))
    figure_checks.record_problems(folder, name, problems)
    _show(folder / f"{name}.png", box.width, said)
    close(fig)
    if problems:
        text = f"figure {notebook}/{name} breaks the lab's figure grammar: " + "; ".join(problems)
        if os.environ.get(CHECK_ENV) == "strict":
            raise figure_checks.FigureGrammarError(text)
        _log.warning(text)


def print_width(fig: matplotlib.figure.Figure, width: float | None = None) -> float:
    """The width ``fig`` is printed at: :data:`COLUMN_WIDTH` or :data:`PAGE_WIDTH` inches.

    A figure declares it by the size it is made at: at most midway between the two (5.15 in) is a
    column's, wider a page's; ``width`` declares it outright. Decided once: a figure resized to fit
    its print size (:func:`ingestlab.captions.fit_to_print`) keeps its width.

    Examples
    --------
    >>> fig = plt.figure(figsize=(3.0, 2.4))
    >>> print_width(fig), print_width(plt.figure(figsize=(6.5, 3.0))), plt.close("all")
    (3.3, 7.0, None)
    """
    if width is not None:
        if width not in TALLEST:
            raise ValueError(f"a figure is printed {COLUMN_WIDTH:g} in (a column) or {PAGE_WIDTH:g} in (a page) wide, "
                             f"not {width!r}")
        setattr(fig, WIDTH_ATTR, width)
    declared = getattr(fig, WIDTH_ATTR, None)
    if declared is None:
        declared = COLUMN_WIDTH if fig.get_figwidth() <= (COLUMN_WIDTH + PAGE_WIDTH) / 2 else PAGE_WIDTH
        setattr(fig, WIDTH_ATTR, declared)
    return declared


def destination(notebook: str) -> Path:
    """The folder :func:`save` writes ``notebook``'s figures to (see there); nothing is created."""
    redirect = _paths.figures_redirect()
    if redirect is not None:
        return redirect / notebook
    return results.run_figures_dir(notebook) or _paths.results_dir() / notebook / results.FIGURES_SUBDIR


def _show(png: Path, width_in: float, said=None) -> None:
    """Show the saved PNG in the notebook, embedded (what its HTML shows), at 100 px per inch, its caption under it.

    The file just written is shown, not the figure drawn again: whatever the kernel's
    matplotlib backend, the executed notebook holds the very image in ``figures/``.
    Inside IPython only: a script or a test has nowhere to show it.
    """
    try:
        from IPython import get_ipython
        from IPython.display import Image, Markdown, display
    except ImportError:
        return
    if get_ipython() is not None:
        display(Image(filename=str(png), width=round(width_in * 100)))
        if said is not None:
            display(Markdown(said.markdown()))


def _metadata(fmt: str) -> dict:
    # fixed metadata so that re-running a notebook does not change the files for no reason
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}


def engine_of(name: object) -> str | None:
    """The engine a level or a legend entry names (its id or its reader's name, alone or before ``: , (``), or None.

    Examples
    --------
    >>> engine_of("batch_100"), engine_of("shared-data 4.0.5")  # a scenario, a published deployment
    (None, None)

    Every registered engine is found by its id, its name and its name with a version
    (``tests/test_figures.py``).
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


_CONDITIONS_OF: contextvars.ContextVar[str | None] = contextvars.ContextVar("conditions_of", default=None)


@contextlib.contextmanager
def conditions_of(engine: str):
    """Within this block, levels that name no engine are conditions of ``engine`` (its id or name): in its colour.

    For a figure of one engine whose series are its configurations (StarRocks' shared-data and
    shared-nothing deployments, Doris' group commit modes): :func:`palette` and :func:`markers`
    take them as that engine's conditions (shades of its colour, its marker then others), as
    they take ``"PostgreSQL, sync off"``, so that the engine keeps its one colour in every
    figure and no grey of :data:`CONDITION_GREYS` stands for it.

    What it does for each registered engine is tested in ``tests/test_figures.py`` (an example here
    would name an engine outside its folder).

    Examples
    --------
    >>> with conditions_of("not_an_engine"):  # doctest: +ELLIPSIS
    ...     pass
    Traceback (most recent call last):
    ValueError: conditions_of('not_an_engine'): not an engine of the lab (...)
    """
    name = engine_of(engine)  # its id, or its name as figures write it
    if name is None:
        raise ValueError(f"conditions_of({engine!r}): not an engine of the lab ({', '.join(ENGINE_STYLE)})")
    token = _CONDITIONS_OF.set(name)
    try:
        yield
    finally:
        _CONDITIONS_OF.reset(token)


def _engines_of(levels: list) -> list[str | None]:
    """The engine each level names (:func:`engine_of`), or the engine of :func:`conditions_of` in force."""
    return [engine_of(level) or _CONDITIONS_OF.get() for level in levels]


def palette(levels) -> dict:
    """A colour per level: an engine's own (:data:`ENGINE_STYLE`), a condition's from :data:`CONDITION_GREYS`.

    Levels that name one engine with several conditions (``"PostgreSQL, synchronous commit
    off"``, or any level within :func:`conditions_of`) take shades of that engine's colour, the
    first its colour itself (:data:`SHADES`).

    Examples
    --------
    >>> palette(["PostgreSQL", "MariaDB"]) == {"PostgreSQL": "#0072B2", "MariaDB": "#009E73"}
    True
    >>> palette(["1 row per INSERT", "100 rows per INSERT"])
    {'1 row per INSERT': '#333333', '100 rows per INSERT': '#8C8C8C'}
    >>> palette(["PostgreSQL, sync on", "PostgreSQL, sync off"])
    {'PostgreSQL, sync on': '#0072B2', 'PostgreSQL, sync off': '#004A74'}
    """
    levels = list(dict.fromkeys(levels))
    engines = _engines_of(levels)
    others = itertools.cycle(CONDITION_GREYS)
    colours = {}
    for level, engine in zip(levels, engines):
        if engine is None:
            colours[level] = next(others)
        else:
            rank = engines[:levels.index(level)].count(engine)
            own = ENGINE_STYLE[engine][0]
            steps = LIGHT_SHADES if max(matplotlib.colors.to_rgb(own)) < 0.25 else SHADES
            colours[level] = shade(own, steps[min(rank, len(steps) - 1)])
    return colours


#: How far an engine's second, third, fourth... condition is drawn from its colour (its first: the colour
#: itself): toward black where negative, toward white where positive, alternately, so that five conditions
#: stay readable as text on white (light shades alone ran to a pale tint at 0.8) and a light shade of
#: PostgreSQL's blue does not come near PostgreSQL 15's sky blue. A colour too dark to darken (black)
#: takes :data:`LIGHT_SHADES` instead.
SHADES = (0.0, -0.35, 0.45, -0.5, 0.65)
#: The steps toward white of a colour too dark to darken (black: greys a reader tells apart).
LIGHT_SHADES = (0.0, 0.3, 0.5, 0.65, 0.78)


def shade(colour: str, toward: float) -> str:
    """``colour`` mixed with white by ``toward`` (> 0) or with black by ``-toward`` (< 0); 0: itself, as ``#RRGGBB``.

    Examples
    --------
    >>> shade("#0072B2", 0.4), shade("#0072B2", -0.35), shade("#000000", -0.35)
    ('#66AAD1', '#004A74', '#595959')
    """
    rgb = np.asarray(matplotlib.colors.to_rgb(colour))
    if toward < 0 and rgb.max() < 0.25:  # no darker shade to tell apart from the colour
        toward = -toward
    mixed = rgb + (1 - rgb) * toward if toward >= 0 else rgb * (1 + toward)
    return matplotlib.colors.to_hex(mixed).upper()


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
    engines = _engines_of(levels)
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


def close(fig: matplotlib.figure.Figure | None = None) -> None:
    """Close ``fig`` (or all figures)."""
    plt.close(fig if fig is not None else "all")
