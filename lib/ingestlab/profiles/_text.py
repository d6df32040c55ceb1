"""Text clean-up shared by the parsers: line splitting, fixture bodies, ANSI codes, prompts."""

from __future__ import annotations

import re

__all__ = [
    "VERBATIM_MARKER",
    "blank_fixture_header",
    "is_prompt",
    "numbered_lines",
    "strip_ansi",
]

#: The line that separates a fixture's metadata header from its verbatim body.
VERBATIM_MARKER = "# ---- verbatim sample below this line ----"

# Real SGR codes, and the remnants left when a copy turned each ESC byte into a space. A
# remnant needs at least one number, so text such as " [min=1ms, max=2ms]" is left alone.
_ANSI = re.compile(r"\x1b\[[0-9;]*m| \[\d{1,3}(?:;\d{1,3})*m")
_PROMPT = re.compile(r"^\s*(?:mysql|MySQL(?: \[[^\]]*\])?|MariaDB(?: \[[^\]]*\])?|[\w-]+[=#-][>#])\s?>?\s|^\s*[>$]\s")


def blank_fixture_header(text: str) -> str:
    """Blank out a fixture's metadata header, keeping line numbers equal to the file's.

    A fixture file holds metadata lines, then `VERBATIM_MARKER`, then the verbatim output.
    Everything up to and including the marker becomes empty lines, so a parse error reports
    the line number of the file. Text without the marker is returned unchanged.

    Examples
    --------
    >>> blank_fixture_header("# source: x\\n" + VERBATIM_MARKER + "\\n# not metadata\\n")
    '\\n\\n# not metadata\\n'
    """
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.rstrip("\r") == VERBATIM_MARKER:
            return "\n" * (i + 1) + "\n".join(lines[i + 1 :])
    return text


def numbered_lines(text: str) -> list[tuple[int, str]]:
    """Split text into ``(line_no, line)`` pairs, 1-based, without line terminators."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    return list(enumerate(text.split("\n"), start=1))


def strip_ansi(line: str) -> str:
    """Remove ANSI colour codes, including ``[0m`` remnants whose ESC became a space.

    Examples
    --------
    >>> strip_ansi("     [0mQueryId: 226a [0m")
    '    QueryId: 226a'
    """
    return _ANSI.sub("", line)


def is_prompt(line: str) -> bool:
    """Whether a line is a client prompt (``mysql> ...``, ``MySQL [db]> ...``, ``> head ...``)."""
    return bool(_PROMPT.match(line))
