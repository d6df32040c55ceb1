"""Readers for the tables a SQL client prints: boxed (``+---+``), vertical (``\\G``) and bare pipe."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ProfileParseError

__all__ = ["Row", "Table", "find_box_tables", "find_pipe_tables", "read_vertical"]

_BORDER = re.compile(r"^\s*\+(?:-+\+)+\s*$")
_PIPE_RULE = re.compile(r"^\s*-+(?:\|-+)+\s*$")
_ROW_MARK = re.compile(r"^\*+ (?P<n>\d+)\. row \*+$")
_VERTICAL_FIELD = re.compile(r"^\s*(?P<key>[^:]+?):(?: (?P<value>.*))?$")


@dataclass
class Row:
    """One table row: its line, its stripped cells and its raw inner text."""

    line_no: int
    cells: list[str]
    inner: str


@dataclass
class Table:
    """A table printed by a SQL client."""

    header: list[str]
    rows: list[Row] = field(default_factory=list)
    first_line: int = 0
    last_line: int = 0

    def records(self) -> list[tuple[int, dict[str, str]]]:
        """``(line_no, {column: cell})`` for every row."""
        return [(r.line_no, dict(zip(self.header, r.cells))) for r in self.rows]


def _cells(line_no: int, line: str, ncols: int | None) -> Row:
    body = line.rstrip()
    start = body.find("|")
    if start < 0 or body[start:].strip() == "|" or not body.endswith("|") or body[:start].strip():
        raise ProfileParseError("table row is not closed by '|' (truncated?)", line_no, line)
    inner = body[start + 1 : -1]
    inner = inner[1:] if inner.startswith(" ") else inner
    cells = [c.strip() for c in body[start + 1 : -1].split("|")]
    if ncols is not None:
        if len(cells) < ncols:
            raise ProfileParseError(f"table row has {len(cells)} cells, expected {ncols}", line_no, line)
        # a '|' inside the last column (a statement) must not make an extra column
        cells = cells[: ncols - 1] + ["|".join(cells[ncols - 1 :]).strip()]
    return Row(line_no, cells, inner.rstrip())


def find_box_tables(lines: list[tuple[int, str]]) -> list[Table]:
    """Find every ``+---+`` bordered table; lines outside tables are ignored.

    Raises
    ------
    ProfileParseError
        When a table has a malformed row or no closing border.
    """
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        line_no, line = lines[i]
        if not _BORDER.match(line):
            i += 1
            continue
        if i + 2 >= len(lines) or not _BORDER.match(lines[i + 2][1]):
            raise ProfileParseError("table header is not followed by a border line", *lines[min(i + 1, len(lines) - 1)])
        head = _cells(*lines[i + 1], None)
        table = Table(head.cells, first_line=line_no)
        i += 3
        while True:
            if i >= len(lines):
                last = lines[-1]
                raise ProfileParseError("table has no closing border (truncated?)", last[0], last[1])
            row_no, row = lines[i]
            if _BORDER.match(row):
                table.last_line = row_no
                i += 1
                break
            table.rows.append(_cells(row_no, row, len(table.header)))
            i += 1
        tables.append(table)
    return tables


def find_pipe_tables(lines: list[tuple[int, str]]) -> list[tuple[Table, int, int]]:
    """Find borderless ``a | b`` tables ruled by ``---|---``.

    Returns
    -------
    list of (Table, int, int)
        Each table with the index range ``[start, end)`` of its lines in `lines`.
    """
    found = []
    i = 1
    while i < len(lines):
        if not _PIPE_RULE.match(lines[i][1]):
            i += 1
            continue
        head_no, head_line = lines[i - 1]
        header = [c.strip() for c in head_line.split("|")]
        table = Table(header, first_line=head_no)
        start, j = i - 1, i + 1
        while j < len(lines) and lines[j][1].count("|") == len(header) - 1 and lines[j][1].strip():
            row_no, row = lines[j]
            table.rows.append(Row(row_no, [c.strip() for c in row.split("|")], row.rstrip()))
            j += 1
        table.last_line = lines[j - 1][0]
        found.append((table, start, j))
        i = j
    return found


def read_vertical(lines: list[tuple[int, str]]) -> list[list[tuple[int, str, str]]]:
    """Read ``\\G`` output: ``*** 1. row ***`` markers, then ``Key: value`` lines.

    Lines before the first marker (prompts) and ``N rows in set`` footers are ignored.

    Returns
    -------
    list of list of (int, str, str)
        Per row, its ``(line_no, key, value)`` fields.

    Raises
    ------
    ProfileParseError
        On a line inside a row that is not ``Key: value``.
    """
    rows: list[list[tuple[int, str, str]]] = []
    for line_no, line in lines:
        text = line.strip()
        if _ROW_MARK.match(text):
            rows.append([])
            continue
        if not rows or not text or re.match(r"^\d+ rows? in set", text):
            continue
        m = _VERTICAL_FIELD.match(line)
        if not m:
            raise ProfileParseError("expected 'Key: value' in vertical (\\G) output", line_no, line)
        rows[-1].append((line_no, m["key"].strip(), (m["value"] or "").strip()))
    return rows
