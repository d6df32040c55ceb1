"""Read query profiles, EXPLAIN output and load replies into tidy data.

One module per engine output, with the same two functions in each (``sniff(text)`` returns
the module's kind or None, ``parse(text, kind)`` returns a `Profile`): each engine's reader is
``engines/<name>/profile.py`` (YugabyteDB's subclasses PostgreSQL's); `stream_load` (the load
reply StarRocks and Doris share) and the generic toolkit (``_tree``, ``_table``...) stay here.
Adding a format = copy a sibling module into the engine's folder as ``profile.py`` (its ``KINDS``,
``DESCRIPTIONS`` and ``SNIFF_RANK`` register it), edit it, add its test module under ``tests/profiles/``.

Examples
--------
>>> p = parse('{"Status": "Success", "Label": "l1", "TxnId": 7, "LoadTimeMs": 31}')
>>> p.kind, p.summary["status"], p.summary["load_time_ms"]
('stream_load_response', 'Success', 31.0)
"""

from __future__ import annotations

import importlib
import os

from ..errors import ConfigError, ProfileParseError
from . import stream_load
from ._anatomy import anatomy, format_anatomy
from ._frame import peel
from ._profile import ITEM_COLUMNS, OPERATOR_COLUMNS, Profile
from ._text import blank_fixture_header

__all__ = [
    "ITEM_COLUMNS",
    "KINDS",
    "OPERATOR_COLUMNS",
    "Profile",
    "anatomy",
    "detect",
    "format_anatomy",
    "parse",
    "parse_file",
    "peel",
]



# Detection order matters: a DuckDB profile, a load reply or an EXPLAIN is unambiguous (a DuckDB
# profile first: its SQL text may hold anything); YugabyteDB output is PostgreSQL output plus
# storage counters; Doris raw trees look like StarRocks ones. Each module says where it goes
# (its SNIFF_RANK).
def _modules() -> list:
    """Every reader module, in detection order: each registered engine's ``profile.py``, and `stream_load`."""
    from ingestlab.engines import registry

    found = {stream_load}
    for engine_cls in registry.classes().values():
        folder = engine_cls.__module__.rpartition(".")[0]
        try:
            found.add(importlib.import_module(f"{folder}.profile"))
        except ModuleNotFoundError as exc:
            if exc.name != f"{folder}.profile":
                raise
    return sorted(found, key=lambda module: (module.SNIFF_RANK, module.__name__))


def kinds() -> dict[str, str]:
    """Every format `detect` can return, with what produces it (also ``profiles.KINDS``)."""
    return {kind: text for module in _modules() for kind, text in module.DESCRIPTIONS.items()}


def _parsers() -> dict:
    return {kind: module for module in _modules() for kind in module.KINDS}


def __getattr__(name: str):
    if name == "KINDS":
        return kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def detect(text: str) -> str:
    """Return the format of `text`, one of `KINDS`.

    Parameters
    ----------
    text : str
        Engine output; client prompts and transcript noise around it are fine. A list of
        ``(status, seconds)`` rows from a DB cursor is recognised as SHOW PROFILE.

    Returns
    -------
    str
        The kind.

    Raises
    ------
    ProfileParseError
        When no known format matches.
    """
    if not isinstance(text, str):
        for module in _modules():
            kind = module.sniff(text) if getattr(module, "READS_ROWS", False) else None
            if kind:
                return kind
        raise ProfileParseError(f"cannot detect a profile format in a {type(text).__name__}")
    if not text.strip():
        raise ProfileParseError("cannot detect a profile format: the input is empty")
    text, _ = peel(text)
    for module in _modules():
        kind = module.sniff(text)
        if kind:
            return kind
    first = next((line for line in text.splitlines() if line.strip()), "")
    raise ProfileParseError(
        "unrecognised input: not a StarRocks/Doris profile, load reply, EXPLAIN output or SHOW PROFILE",
        1 + text.splitlines().index(first) if first else None,
        first or None,
    )


def parse(text: str, kind: str | None = None) -> Profile:
    """Parse engine output into a `Profile` (summary dict + tidy items frame).

    Parameters
    ----------
    text : str
        The output (for ``mariadb_show_profile`` also cursor rows). Client, terminal and
        log framing around it is peeled first (see `peel`) and listed in ``Profile.peeled``.
    kind : str, optional
        One of `KINDS`; detected with `detect` when omitted.

    Returns
    -------
    Profile

    Raises
    ------
    ProfileParseError
        On corrupt or truncated input, naming the line where possible.
    ConfigError
        When `kind` is not one of `KINDS`.
    """
    peeled: list[str] = []
    if isinstance(text, str):
        # Framing is peeled here, once, so that every format parser gains from every step.
        text, peeled = peel(text)
    if kind is None:
        kind = detect(text)
    parsers = _parsers()
    if kind not in parsers:
        raise ConfigError("kind", kind, f"one of {', '.join(kinds())}")
    try:
        profile = parsers[kind].parse(text, kind)
        profile.peeled = peeled + [p for p in profile.peeled if p not in peeled]
        return profile
    except ProfileParseError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
        # Every known failure is reported as a ProfileParseError where it happens; this is
        # the safety net that keeps the promise for inputs nobody has seen yet.
        raise ProfileParseError(f"cannot parse as {kind}: {type(exc).__name__}: {exc}") from exc


#: Largest file :func:`parse_file` reads: the longest real profile in the fixtures is a few hundred KB.
MAX_FILE_BYTES = 64 * 1024 * 1024


def parse_file(path: str | os.PathLike[str], kind: str | None = None) -> Profile:
    """Read and parse a file; for a fixture file, only its verbatim body.

    A fixture holds metadata lines, then ``# ---- verbatim sample below this line ----``,
    then the output. The metadata is blanked (not removed) so error line numbers are the
    file's.

    Parameters
    ----------
    path : str or path-like
        The file.
    kind : str, optional
        One of `KINDS`; detected when omitted.

    Returns
    -------
    Profile
        What :func:`parse` makes of the file's text (its fixture body).

    Raises
    ------
    ProfileParseError
        When ``path`` is no regular file (a folder, a device, a pipe) or is larger than
        :data:`MAX_FILE_BYTES`: nothing unbounded is read.
    """
    import stat

    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ProfileParseError(f"{path} is not a regular file (a folder, a device or a pipe): give a saved profile")
    if info.st_size > MAX_FILE_BYTES:
        raise ProfileParseError(f"{path} holds {info.st_size:,} bytes, more than a profile's {MAX_FILE_BYTES:,}")
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        text = fh.read(MAX_FILE_BYTES + 1)
    return parse(blank_fixture_header(text), kind)

