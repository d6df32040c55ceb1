"""Parse MySQL's and MariaDB's statement stages: ``SHOW PROFILE`` and performance_schema stage events."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from ingestlab.errors import ProfileParseError
from ingestlab.profiles._profile import Profile, ProfileBuilder
from ingestlab.profiles._table import Table, find_box_tables, read_vertical
from ingestlab.profiles._text import numbered_lines
from ingestlab.profiles._units import parse_duration_ms

__all__ = ["KINDS", "parse", "sniff", "stages"]

KINDS = ("mariadb_show_profile", "mysql_stage_events")
#: Each kind this module reads, with what produces it (``ingestlab.profiles.KINDS`` gathers them).
DESCRIPTIONS = {
    "mariadb_show_profile": "MariaDB/MySQL SHOW PROFILE (client table or cursor rows)",
    "mysql_stage_events": "MySQL/MariaDB performance_schema stage events (events_stages_history[_long]) as printed",
}
#: Where :func:`ingestlab.profiles.detect` tries this module: lower first (see ``profiles._modules``).
SNIFF_RANK = 4
#: :func:`sniff` also reads DB cursor rows (SHOW PROFILE fetched as ``(status, seconds)`` rows).
READS_ROWS = True

_BOX_HEADER = re.compile(r"^\|\s*Status\s*\|\s*Duration\s*\|", re.MULTILINE)
_TAB_HEADER = re.compile(r"^Status\tDuration\b", re.MULTILINE)
_VERTICAL = re.compile(r"^\s*Status: .*\n\s*Duration: [\d.]+\s*$", re.MULTILINE)
# Columns that SHOW PROFILE prints in seconds.
_SECONDS = {"Duration", "CPU_user", "CPU_system"}
# A performance_schema stage event row: "| stage/sql/Opening tables | ... |", or with the
# instrument prefix cut off by the query (SUBSTRING_INDEX(EVENT_NAME, '/', -1)).
_KNOWN_STAGES = (
    "starting", "checking permissions", "Opening tables", "init", "System lock", "optimizing",
    "statistics", "preparing", "executing", "Sending data", "end", "query end", "closing tables",
    "freeing items", "cleaning up", "waiting for handler commit", "update", "updating",
)
_STAGE_ROW = re.compile(
    r"^\s*\|(?:[^|\n]*\|)?\s*(?:stage/\w+/|(?:" + "|".join(map(re.escape, _KNOWN_STAGES)) + r")\s*\|)",
    re.MULTILINE,
)
# Duration column names -> unit of a bare number in them (a number with a unit is read as such).
_STAGE_COLUMN_UNITS = (
    (re.compile(r"(?i)^(?:sum_|avg_)?timer_wait$"), "ps"),
    (re.compile(r"(?i)^(?:duration|seconds?|duration_s|secs?)$"), "s"),
    (re.compile(r"(?i)^(?:ms|duration_ms|time_ms|milliseconds)$"), "ms"),
    (re.compile(r"(?i)^(?:us|µs|duration_us|microseconds)$"), "us"),
    (re.compile(r"(?i)(?:latency|duration|wait|time)"), None),
)
_BARE_TO_SECONDS = {"ps": 1e-12, "s": 1.0, "ms": 1e-3, "us": 1e-6}


def sniff(data: Any) -> str | None:
    """Return ``mariadb_show_profile`` (SHOW PROFILE text or cursor rows), ``mysql_stage_events``
    (performance_schema stage events as the mysql client prints them), else None."""
    if isinstance(data, str):
        if _BOX_HEADER.search(data) or _TAB_HEADER.search(data) or _VERTICAL.search(data):
            return KINDS[0]
        if len(_STAGE_ROW.findall(data)) >= 3:
            return KINDS[1]
        return None
    try:
        rows = list(data)
    except TypeError:
        return None
    if rows and all(isinstance(r, Sequence) and not isinstance(r, str) and len(r) >= 2 for r in rows):
        return KINDS[0]
    return None


def _stage_seconds(column: str, cell: str) -> float:
    """A stage event duration in seconds: '58.00 us', '27.48 ms', or a bare number in the column's unit."""
    text = cell.strip()
    unit = next((u for pattern, u in _STAGE_COLUMN_UNITS if pattern.search(column)), None)
    try:
        return float(text) * _BARE_TO_SECONDS[unit] if unit else parse_duration_ms(text) / 1e3
    except (KeyError, ValueError):
        return parse_duration_ms(text) / 1e3


def _stage_event_records(tables: list[Table]) -> tuple[list[str], list[tuple[int | None, list[str]]]] | None:
    """A performance_schema stage-event table, as SHOW PROFILE's Status/Duration (seconds) rows."""
    for table in tables:
        records = table.records()
        if not records:
            continue
        known = {name.lower() for name in _KNOWN_STAGES}

        def is_stage_column(column: str) -> bool:
            cells = [r.get(column, "") for _, r in records]  # noqa: B023 - called within this iteration only
            named = sum(c.startswith("stage/") or c.lower() in known for c in cells)  # noqa: B023
            return named == len(cells) or (named >= 3 and named >= 0.6 * len(cells))

        name_col = next((c for c in table.header if is_stage_column(c)), None)
        if name_col is None:
            continue
        for column in table.header:
            if column == name_col or not any(p.search(column) for p, _ in _STAGE_COLUMN_UNITS):
                continue
            try:
                seconds = [_stage_seconds(column, r[column]) for _, r in records]
            except ValueError:
                continue
            rows = [(no, [r[name_col], repr(sec)]) for (no, r), sec in zip(records, seconds)]
            return ["Status", "Duration"], rows
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
    events = _stage_event_records(find_box_tables(lines)) if _STAGE_ROW.search(text) else None
    if events:
        return events
    raise ProfileParseError("no SHOW PROFILE table (Status | Duration) or stage-event table (stage/... | duration) found")


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
    """Parse SHOW PROFILE output, or performance_schema stage events, into a `Profile`.

    Stage events are read from a mysql-client table with a ``stage/...`` column and a
    duration column: ``TIMER_WAIT`` (picoseconds), ``FORMAT_PICO_TIME`` text (``58.00 us``,
    ``27.48 ms``), or a bare number under a name that says its unit (``Duration`` seconds,
    ``ms``).

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
        # each kind is named after the server whose output it first read
        engine=kind.split("_", 1)[0],
        total_ms=float(frame["duration_ms"].sum()),
        stage_count=int(len(frame)),
        slowest_stage=str(slowest["stage"]),
        slowest_stage_ms=float(slowest["duration_ms"]),
        stages_ms={str(k): round(float(v), 6) for k, v in by_stage.items()},
    )
    return builder.build()
