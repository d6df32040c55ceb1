"""Parse MariaDB/MySQL ``SHOW PROFILE`` output: stages and their durations."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from ..errors import ProfileParseError
from ._profile import Profile, ProfileBuilder
from ._table import find_box_tables, read_vertical
from ._text import numbered_lines

__all__ = ["KINDS", "parse", "sniff", "stages"]

KINDS = ("mariadb_show_profile",)

_BOX_HEADER = re.compile(r"^\|\s*Status\s*\|\s*Duration\s*\|", re.MULTILINE)
_TAB_HEADER = re.compile(r"^Status\tDuration\b", re.MULTILINE)
_VERTICAL = re.compile(r"^\s*Status: .*\n\s*Duration: [\d.]+\s*$", re.MULTILINE)
# Columns that SHOW PROFILE prints in seconds.
_SECONDS = {"Duration", "CPU_user", "CPU_system"}


def sniff(data: Any) -> str | None:
    """Return ``mariadb_show_profile`` for SHOW PROFILE text or cursor rows, else None."""
    if isinstance(data, str):
        if _BOX_HEADER.search(data) or _TAB_HEADER.search(data) or _VERTICAL.search(data):
            return KINDS[0]
        return None
    try:
        rows = list(data)
    except TypeError:
        return None
    if rows and all(isinstance(r, Sequence) and not isinstance(r, str) and len(r) >= 2 for r in rows):
        return KINDS[0]
    return None


def _records_from_text(text: str) -> tuple[list[str], list[tuple[int | None, list[str]]]]:
    lines = numbered_lines(text)
    tables = [t for t in find_box_tables(lines) if t.header[:2] == ["Status", "Duration"]]
    if tables:
        return tables[0].header, [(r.line_no, r.cells) for r in tables[0].rows]
    for i, (_, line) in enumerate(lines):
        if _TAB_HEADER.match(line):
            header = line.rstrip().split("\t")
            rows = []
            for line_no, row in lines[i + 1 :]:
                if not row.strip():
                    break
                rows.append((line_no, row.rstrip("\n").split("\t")))
            return header, rows
    vertical = read_vertical(lines) if re.search(r"^\*+ \d+\. row \*+$", text, re.MULTILINE) else []
    if vertical:
        header = [key for _, key, _ in vertical[0]]
        return header, [(fields[0][0], [value for _, _, value in fields]) for fields in vertical if fields]
    raise ProfileParseError("no SHOW PROFILE table (Status | Duration) found")


def _records_from_rows(rows: Iterable[Sequence[Any]]) -> tuple[list[str], list[tuple[int | None, list[Any]]]]:
    records = [(None, list(row)) for row in rows]
    width = max((len(r) for _, r in records), default=2)
    header = ["Status", "Duration", "CPU_user", "CPU_system"][:width] + [f"column_{i}" for i in range(4, width)]
    return header, records


def stages(data: str | Iterable[Sequence[Any]]) -> pd.DataFrame:
    """SHOW PROFILE as a tidy frame: one row per stage.

    Parameters
    ----------
    data : str or iterable of sequences
        The mysql/mariadb client's text table (boxed, tab-separated or ``\\G``), or the rows
        a DB-API cursor returns for ``SHOW PROFILE`` (``(status, duration_seconds, ...)``).

    Returns
    -------
    pandas.DataFrame
        Columns ``seq`` (1-based order), ``stage``, ``duration_ms``, then one column per
        extra SHOW PROFILE column (``cpu_user_ms``, ``cpu_system_ms``...).

    Raises
    ------
    ProfileParseError
        When there is no table, or a duration is not a number.

    Examples
    --------
    >>> stages([("Starting", 0.000042), ("Commit", "0.0021")])[["seq", "stage", "duration_ms"]].values.tolist()
    [[1, 'Starting', 0.042], [2, 'Commit', 2.1]]
    """
    header, records = _records_from_text(data) if isinstance(data, str) else _records_from_rows(data)
    if not records:
        raise ProfileParseError("SHOW PROFILE output has no stages")
    out = []
    for seq, (line_no, cells) in enumerate(records, start=1):
        if len(cells) < 2:
            shown = "\t".join(map(str, cells))
            raise ProfileParseError("SHOW PROFILE row needs a status and a duration", line_no, shown)
        row: dict[str, Any] = {"seq": seq, "stage": str(cells[0]).strip(), "line_no": line_no}
        for column, cell in zip(header[1:], cells[1:]):
            name = re.sub(r"[^a-z0-9]+", "_", column.lower()).strip("_")
            try:
                number = math.nan if cell is None or str(cell).strip() in ("", "NULL") else float(cell)
            except (TypeError, ValueError) as exc:
                if column in _SECONDS:
                    raise ProfileParseError(
                        f"SHOW PROFILE {column} is not a number of seconds: {cell!r}", line_no, str(cell)
                    ) from exc
                row[name] = str(cell)
                continue
            if column in _SECONDS:
                # SHOW PROFILE has microsecond resolution; rounding drops float noise
                row[f"{name}_ms" if name != "duration" else "duration_ms"] = round(number * 1000.0, 6)
            else:
                row[name] = number
        out.append(row)
    frame = pd.DataFrame(out)
    first = ["seq", "stage", "duration_ms"]
    return frame[first + [c for c in frame.columns if c not in first]]


def parse(data: str | Iterable[Sequence[Any]], kind: str = KINDS[0]) -> Profile:
    """Parse SHOW PROFILE output into a `Profile`.

    Returns
    -------
    Profile
        Items under ``[seq] stage``; operators are the stages; summary keys
        ``total_ms`` (sum of stage durations), ``stage_count``, ``slowest_stage``,
        ``slowest_stage_ms`` and ``stages_ms`` (stage -> summed ms).
    """
    frame = stages(data)
    builder = ProfileBuilder(kind)
    for row in frame.itertuples(index=False):
        record = row._asdict()
        path = f"[{record['seq']}] {record['stage']}"
        line_no = record.get("line_no")
        line_no = None if line_no is None or (isinstance(line_no, float) and math.isnan(line_no)) else int(line_no)
        for column, value in record.items():
            if column in ("seq", "stage", "line_no"):
                continue
            if isinstance(value, str):
                builder.add_number(path, column, None, None, value, line_no)
            else:
                unit = "ms" if column.endswith("_ms") else "count"
                builder.add_number(path, column, value, unit, value, line_no)
        builder.add_operator(record["stage"], path, record["duration_ms"])
    by_stage = frame.groupby("stage", sort=False)["duration_ms"].sum()
    slowest = frame.loc[frame["duration_ms"].idxmax()]
    builder.summary.update(
        engine="mariadb",
        total_ms=float(frame["duration_ms"].sum()),
        stage_count=int(len(frame)),
        slowest_stage=str(slowest["stage"]),
        slowest_stage_ms=float(slowest["duration_ms"]),
        stages_ms={str(k): round(float(v), 6) for k, v in by_stage.items()},
    )
    return builder.build()
