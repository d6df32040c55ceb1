"""Peel the framing that clients, terminals and logs wrap around engine output, in one place."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["peel"]

# A line is rewritten in place, never removed or inserted, so every parser's line numbers
# stay those of the input. Each step returns the new lines and what it peeled (or None).
_Step = Callable[[list[str]], "tuple[list[str], str | None]"]

_BAR_END = re.compile(r"\s*\|\s*$")
_GUI_RULE = re.compile(r"^-{3,}\+\s*$")
_BOX_BORDER = re.compile(r"^\s*\+(?:-+\+)+")
_ONE_COLUMN_TOP = re.compile(r"^\s*(?:\+-+\+|[╔┌][═─]+[╗┐])\s*$")
_ONE_COLUMN_RULE = re.compile(r"^\s*(?:\+-+\+|[╠╟├╞][═─]+[╣╢┤╡]|[╚└][═─]+[╝┘])\s*$")
_ONE_COLUMN_SIDES = ("|", "║", "│")
_ARROW_NOTE = re.compile(r"(?<=\S)\s{2,}<-{2,}.*$")
_GLOG_PREFIX = re.compile(r"^(?P<prefix>[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.\-]+:\d+\] )")
# "mysql> {", "$ curl ... {", "Stream load result: {": a prompt, command or label, then JSON
# that opens on the same line (a brace or bracket followed by a quote or the line end).
_GLUED_JSON = re.compile(
    r"^(?P<prefix>\s*(?:(?:mysql|MySQL(?: \[[^\]]*\])?|MariaDB(?: \[[^\]]*\])?|[\w-]+[=#-][>#])\s?>|\$|>)\s.*?"
    r"|\s*[A-Za-z][\w ]*?(?:result|response|reply|output)\s*:\s*)"
    r"(?=[{\[]\s*(?:[\"']|$))",
    re.IGNORECASE,
)
_COMMENTED_TABLE = re.compile(r"^(?P<mark>\s*(?:#|--) ?)(?=[|+])")
_REPLY_KEY = re.compile(r"^\s*[\"'](?P<key>[A-Za-z][A-Za-z ]*)[\"']\s*:\s*\S")


def _gui_column_bars(lines: list[str]) -> tuple[list[str], str | None]:
    """``QUERY PLAN   |`` rows of a GUI client's export (DBeaver): drop the bar and the rule."""
    body = [line for line in lines if line.strip()]
    if len(body) < 2 or any(line.lstrip().startswith(("|", "+")) for line in body):
        return lines, None
    barred = sum(1 for line in body if _BAR_END.search(line) or _GUI_RULE.match(line))
    if barred < 0.8 * len(body) or not any(_GUI_RULE.match(line) for line in body[:3]):
        return lines, None
    out = []
    for line in lines:
        if _GUI_RULE.match(line):
            out.append("")  # the line stays, so later line numbers do not move
        else:
            out.append(_BAR_END.sub("", line))
    return out, "trailing ' |' column bars of a GUI client's export"


def _strip_prefixes(
    lines: list[str], pattern: re.Pattern, group: str, what: str, least: int = 1
) -> tuple[list[str], str | None]:
    """Cut the part of each line that `pattern`'s `group` matches; say how many lines had it."""
    count = 0
    out = []
    for line in lines:
        match = pattern.match(line)
        if match and match[group].strip():
            count += 1
            line = line[match.end(group):]
        out.append(line)
    return out, (f"{count} {what}" if count >= least else None)


def _comment_marks(lines: list[str]) -> tuple[list[str], str | None]:
    """``# |a|b|`` / ``-- +---+``: a result pasted into a SQL file as comments; drop the marks."""
    return _strip_prefixes(lines, _COMMENTED_TABLE, "mark", "SQL comment mark(s) before table lines", least=2)


def _one_column_box(lines: list[str]) -> tuple[list[str], str | None]:
    """psql's bordered one-column ``QUERY PLAN`` result (``| ... |``, ``║ ... ║``)."""
    starts = [i for i, line in enumerate(lines) if _ONE_COLUMN_TOP.match(line)]
    for start in starts:
        if start + 2 >= len(lines):
            continue
        header = lines[start + 1].strip()
        if len(header) < 2 or header[0] not in _ONE_COLUMN_SIDES or header[1:-1].strip() != "QUERY PLAN":
            continue
        out = list(lines)
        out[start] = out[start + 1] = ""
        for i in range(start + 2, len(lines)):
            line = lines[i].rstrip()
            if _ONE_COLUMN_RULE.match(line):
                out[i] = ""
                continue
            stripped = line.lstrip()
            if not stripped or stripped[0] not in _ONE_COLUMN_SIDES:
                break
            inner = stripped[1:]
            if inner and inner[-1] in _ONE_COLUMN_SIDES:
                inner = inner[:-1]
            # psql marks a wrapped cell line with '+' (ascii) or '↵' (unicode) at its end
            out[i] = re.sub(r"\s*[+↵]\s*$", "", inner[1:] if inner.startswith(" ") else inner)
        return out, "the border of psql's one-column 'QUERY PLAN' table"
    return lines, None


def _box_table_notes_and_wraps(lines: list[str]) -> tuple[list[str], str | None]:
    """Inside ``+---+`` tables: cut notes after the closing bar, re-join rows wrapped by the paste."""
    out = list(lines)
    notes = wraps = 0
    i = 0
    while i < len(out):
        match = _BOX_BORDER.match(out[i])
        if not match:
            i += 1
            continue
        width = match.end()
        if len(out[i].rstrip()) > width:
            out[i] = out[i][:width]
            notes += 1
        i += 1
        while i < len(out) and out[i].strip():
            line = out[i].rstrip()
            if _BOX_BORDER.match(line):
                break
            if len(line) > width and line[width - 1] == "|" and line[width:].strip():
                out[i] = line[:width]
                notes += 1
            elif line.lstrip().startswith("|") and not line.endswith("|") and len(line) < width:
                # A row that the paste broke in two or more lines: join it back.
                j = i + 1
                joined = line
                while j < len(out) and out[j].strip() and not _BOX_BORDER.match(out[j]):
                    joined += out[j].strip() if joined.endswith(" ") else " " + out[j].strip()
                    out[j] = ""
                    if joined.rstrip().endswith("|"):
                        break
                    j += 1
                if joined.rstrip().endswith("|"):
                    out[i] = joined
                    wraps += 1
                else:
                    out[i:j + 1] = lines[i:j + 1]  # not a wrapped row after all: leave it
                i = j
            i += 1
    peeled = []
    if notes:
        peeled.append(f"{notes} note(s) written after a table's closing bar")
    if wraps:
        peeled.append(f"{wraps} table row(s) wrapped over several lines, joined")
    return out, "; ".join(peeled) or None


def _arrow_notes(lines: list[str]) -> tuple[list[str], str | None]:
    """``Execution Time: 8.586 ms      <------ 1 round trip here``: a reader's note."""
    count = 0
    out = []
    for line in lines:
        new = _ARROW_NOTE.sub("", line)
        if new != line:
            count += 1
            # the reader may also have bracketed the line the note is about: "[Key: 1]   <-- note"
            new = re.sub(r"^(\s*)\[(.*)\]$", r"\1\2", new)
        out.append(new)
    return out, (f"{count} '<----' note(s) at line ends" if count else None)


def _log_prefixes(lines: list[str]) -> tuple[list[str], str | None]:
    """``I0404 15:02:35.842590  3703 file.cpp:475] `` before a backend log's first line."""
    return _strip_prefixes(lines, _GLOG_PREFIX, "prefix", "backend log prefix(es)")


def _glued_prompts(lines: list[str]) -> tuple[list[str], str | None]:
    """``mysql> {...``, ``$ curl ... {``, ``Stream load result: {``: the JSON starts mid-line."""
    return _strip_prefixes(lines, _GLUED_JSON, "prefix", "prompt(s) or label(s) glued to the JSON that follows")


def _bare_reply(lines: list[str]) -> tuple[list[str], str | None]:
    """A Stream Load reply pasted without its braces: put them back around its fields."""
    text = "\n".join(lines)
    if "{" in text or not re.search(r"[\"']status[\"']\s*:", text, re.IGNORECASE):
        return lines, None
    fields = [i for i, line in enumerate(lines) if _REPLY_KEY.match(line)]
    if len(fields) < 2:
        return lines, None
    first, last = fields[0], fields[-1]
    out = list(lines)
    out[first] = "{" + out[first]
    out[last] = out[last].rstrip().rstrip(",") + "}"
    return out, "a load reply pasted without its braces: braces put back"


# Order matters: a GUI export's bars go before the table steps look for '|' rows, and the
# log and prompt prefixes go before the reply check looks for a line starting with a key.
_STEPS: tuple[_Step, ...] = (
    _comment_marks,
    _gui_column_bars,
    _one_column_box,
    _box_table_notes_and_wraps,
    _arrow_notes,
    _log_prefixes,
    _glued_prompts,
    _bare_reply,
)


def peel(text: str) -> tuple[str, list[str]]:
    """Remove client, terminal and log framing around engine output.

    Every format parser runs on the result, so each gains from every step. Lines are
    rewritten in place (a peeled frame line becomes empty), never added or removed, so a
    parse error still names the line of the input.

    Parameters
    ----------
    text : str
        The output as pasted.

    Returns
    -------
    text : str
        The output without its framing.
    peeled : list of str
        What was peeled, one phrase per kind of framing; empty when nothing was.

    Examples
    --------
    >>> peel('mysql> {"Status": "Success", "TxnId": 1}')
    ('{"Status": "Success", "TxnId": 1}', ['1 prompt(s) or label(s) glued to the JSON that follows'])
    >>> peel("Execution Time: 8.586 ms      <------ 1 round trip here")[0]
    'Execution Time: 8.586 ms'
    """
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    peeled: list[str] = []
    for step in _STEPS:
        lines, what = step(lines)
        if what:
            peeled.append(what)
    return (newline.join(lines) if peeled else text), peeled
