"""Progress bars: redrawn live on a terminal, a few lines only in a saved notebook or a log."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tqdm import tqdm  # text bars: they stream through papermill and need no ipywidgets

#: Seconds between redraws when the output is not a terminal: each redraw would be one more
#: fragment stored in the executed notebook, so a bar there shows its start and its end.
QUIET_INTERVAL_S = 120.0


def bar(*, file: TextIO | None = None, **kwargs: Any) -> tqdm:
    """A tqdm bar on ``file`` (stderr) that redraws at most every :data:`QUIET_INTERVAL_S` off a terminal.

    Parameters
    ----------
    file : text stream, optional
        Where the bar is drawn; default ``sys.stderr``.
    **kwargs
        tqdm's (``total``, ``desc``, ``unit``, ``disable``...); an explicit ``mininterval`` wins.

    Returns
    -------
    tqdm.tqdm
        The bar; use it as a context manager or close it. Postfixes set with
        ``refresh=False`` are shown at the next redraw.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with bar(total=1000, desc="rows", file=out) as b:
    ...     for _ in range(1000):
    ...         b.update(1)
    >>> out.getvalue().count("\\r")  # the start and the end, not a line per update
    2
    """
    stream = file if file is not None else sys.stderr
    if not _is_terminal(stream):
        kwargs.setdefault("mininterval", QUIET_INTERVAL_S)
        kwargs.setdefault("maxinterval", QUIET_INTERVAL_S)
    return tqdm(file=stream, **kwargs)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
