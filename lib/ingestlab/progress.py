"""Progress bars: redrawn live on a terminal, a few lines only in a saved notebook or a log."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from tqdm import tqdm  # text bars: they stream through papermill and need no ipywidgets

#: Seconds between redraws when the output is not a terminal: each redraw would be one more
#: fragment stored in the executed notebook, so a bar there shows its start and its end.
QUIET_INTERVAL_S = 120.0
#: Set by ``ingestlab run`` for the kernel when its own stderr is a terminal, where the kernel's bars
#: are shown live: the redraw interval (seconds) off a terminal. The runner keeps only each bar's
#: last state in the saved notebook (:func:`last_states`), so live redraws are not stored.
INTERVAL_ENV = "INGESTLAB_PROGRESS_INTERVAL_S"


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
    if not is_terminal(stream):
        interval = _interval()
        kwargs.setdefault("mininterval", interval)
        kwargs.setdefault("maxinterval", max(interval, 10.0))
    return tqdm(file=stream, **kwargs)


def _interval() -> float:
    """:data:`QUIET_INTERVAL_S`, or the positive number of seconds in :data:`INTERVAL_ENV`."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, ""))
    except ValueError:
        return QUIET_INTERVAL_S
    return value if value > 0 else QUIET_INTERVAL_S


def last_states(text: str) -> str:
    """``text`` as a terminal shows it: of each line redrawn with carriage returns, its last state.

    Examples
    --------
    >>> last_states("load:  10%|#  | 1/10\\rload: 100%|###| 10/10\\n done\\n")
    'load: 100%|###| 10/10\\n done\\n'
    >>> last_states("no bar here\\n")
    'no bar here\\n'
    """
    lines = text.split("\n")
    kept = []
    for line in lines:
        states = [part for part in line.split("\r") if part]
        kept.append(states[-1] if states else "")
    return "\n".join(kept)


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (False for a closed stream or one without ``isatty``)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
