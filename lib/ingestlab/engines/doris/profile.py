"""Parse Apache Doris query and load profiles in every published text form."""

from __future__ import annotations

import re

from ingestlab.errors import ProfileParseError
from ingestlab.profiles._profile import Profile, ProfileBuilder, lookup, lookup_text
from ingestlab.profiles._relaxed_json import RelaxedJSONError, loads_at
from ingestlab.profiles._table import Table, find_box_tables, find_pipe_tables, read_vertical
from ingestlab.profiles._text import is_prompt, numbered_lines
from ingestlab.profiles._tree import Section, canonical, read_counter_tree
from ingestlab.profiles._values import expand_pairs

__all__ = ["KINDS", "parse", "sniff"]

KINDS = ("doris_profile",)
#: Each kind this module reads, with what produces it (``ingestlab.profiles.KINDS`` gathers them).
DESCRIPTIONS = {"doris_profile": "Apache Doris profile text, SHOW QUERY/LOAD PROFILE output, operator blocks"}
#: Where :func:`ingestlab.profiles.detect` tries this module: lower first (see ``profiles._modules``).
SNIFF_RANK = 5

_MARKERS = re.compile(
    r"Doris Version:|^\s*Changed ?Session ?Variables:\s*$"
    r"|^\s*(MergedProfile|DetailProfile|Execution Summary|ChangedSessionVariables|Fragments):\s*$"
    r"|^\s*- (Profile ID|Task Type|Task State):"
    r"|^\s*[A-Z_]+_OPERATOR\s*\(.*\):(?:\(ExecTime:.*\))?\s*$"
    r"|^\s*PipelineTask\s*\(index=\d+\):\(ExecTime:"
    r"|^\|\s*Profile ID\s*\|"
    r"|^\|\s*Instances\s*\|\s*Host\s*\|"
    r"|^\s*WaitAndFetchResultTime:"
    # an instance of a 1.x/2.0 non-pipeline tree: Doris ids are two 16-hex halves
    r"|^\s*Instance [0-9a-f]{16}-[0-9a-f]{16} \(host="
    r"|^\s*SimpleProfile:\s*$"
    r"|^\s*│\[-?\d+: \w+\]",
    re.MULTILINE,
)
# "[9: EXCHANGE_NODE]", or "[OlapScanner]" for the scanner boxes under a scan node.
_BOX_TITLE = re.compile(r"^\[(?:(?P<id>-?\d+): )?(?P<name>[^\]]+)\]$")
_BOX_ATTRS = re.compile(r"^\((?P<attrs>.*)\)$")
#: Section names (`canonical`) that hold operators but are none themselves.
_CONTAINERS = ("executionprofile", "instance", "fragment", "pipelinetask")
_COUNTER_GROUPS = {"CommonCounters", "CustomCounters", "Counters"}

# (counter in the Summary section, summary key): the first one found wins.
_SUMMARY_TEXT = (
    ("Profile ID", "query_id"),
    ("Query ID", "query_id"),
    ("Task State", "status"),
    ("Query State", "status"),
    ("Task Type", "task_type"),
    ("Query Type", "task_type"),
    ("Doris Version", "version"),
)


def sniff(text: str) -> str | None:
    """Return ``doris_profile`` if the text is Doris profile output, else None."""
    return KINDS[0] if _MARKERS.search(text) else None


def parse(text: str, kind: str = KINDS[0]) -> Profile:
    """Parse Doris profile output.

    Handles the raw trees (2020 ``Query:`` profiles with ``(Active: ...)``, the 2.1+
    ``Summary:``/``Execution Summary:``/``MergedProfile:`` text with ``avg/max/min``
    aggregates and ``11sec450ms`` durations, lone operator blocks), the
    ``ChangedSessionVariables`` pipe table, ``show query profile`` and
    ``show load profile`` tables (boxed and ``\\G``), and the box-drawn instance tree.

    Parameters
    ----------
    text : str
        The output, with any client prompts around it.
    kind : str, optional
        Must be ``doris_profile``.

    Returns
    -------
    Profile
        Summary keys, as present: ``query_id``, ``status``, ``version``, ``task_type``,
        ``total_ms``, ``execution_ms``, ``fe_overhead_ms``, ``planning_ms``,
        ``olap_table_sink_ms`` (the sink's own time); ``profile_count``/``status_counts``
        for lists, ``instance_count``/``max_active_ms`` for an instance table.

    Raises
    ------
    ProfileParseError
        On corrupt or truncated input: no profile content, malformed session-variable JSON, an
        operator box that is never closed or has no ``[id: Name]`` title.
    """
    lines = numbered_lines(text)
    builder = ProfileBuilder(kind)
    if any("┌" in line for _, line in lines):
        _parse_boxes(lines, builder)
    elif tables := find_box_tables(lines):
        _parse_tables(tables, builder)
    elif any(re.match(r"^\*+ \d+\. row \*+$", line.strip()) for _, line in lines):
        _parse_vertical(lines, builder)
    else:
        _parse_tree(lines, builder)
    _summarise_sinks(builder)
    return builder.build()


def _summarise_sinks(builder: ProfileBuilder) -> None:
    sinks = [t for name, t in builder.operator_times().items() if "OLAP_TABLE_SINK" in name or "OlapTableSink" in name]
    if sinks:
        builder.summary["olap_table_sink_ms"] = max(sinks)


def _own_time(section: Section) -> float | None:
    """A section's own time: ExecTime (pipeline engine) or Active x % non-child (older)."""
    for stat in (None, "max"):
        exec_time = section.get("ExecTime", stat)
        if exec_time is not None:
            return exec_time
    own = section.non_child_ms()
    return section.get("Active") if own is None else own


def _add_operators(sections: list[Section], builder: ProfileBuilder) -> None:
    for section in sections:
        if canonical(section.name).startswith(_CONTAINERS) or section.path in ("", "Query", "Summary"):
            continue
        own = _own_time(section)
        if own is None:
            continue
        path = section.path
        name = section.name
        if name in _COUNTER_GROUPS and "/" in path:
            path = path.rsplit("/", 1)[0]
            name = path.rsplit("/", 1)[-1]
        builder.add_operator(name, path, own)


def _take_json_variables(body: list[tuple[int, str]], builder: ProfileBuilder) -> None:
    """Doris 3.x prints ``ChangedSessionVariables:`` as a JSON array: read it, drop its lines."""
    for i, (line_no, line) in enumerate(body):
        if canonical(line) != "changedsessionvariables:":
            continue
        j = i + 1
        while j < len(body) and not body[j][1].strip():
            j += 1
        if j >= len(body) or not body[j][1].lstrip().startswith("["):
            return
        text = "\n".join(l for _, l in body[j:])
        start = len(body[j][1]) - len(body[j][1].lstrip())
        try:
            variables, end = loads_at(text, start)
        except RelaxedJSONError as exc:
            bad = min(j + text.count("\n", 0, exc.pos), len(body) - 1)
            raise ProfileParseError(f"malformed ChangedSessionVariables JSON: {exc}", *body[bad]) from exc
        last = j + text.count("\n", 0, end)
        for entry in variables if isinstance(variables, list) else []:
            if isinstance(entry, dict):
                name = str(entry.get("VarName", "?"))
                for key, value in entry.items():
                    if key != "VarName":
                        builder.add_number(f"ChangedSessionVariables/{name}", key, None, None, value, line_no)
        del body[i : last + 1]
        return


def _parse_tree(lines: list[tuple[int, str]], builder: ProfileBuilder) -> None:
    body = list(lines)
    while body and (not body[0][1].strip() or is_prompt(body[0][1])):
        body.pop(0)
    _take_json_variables(body, builder)
    # Pull out bare pipe tables (ChangedSessionVariables) and their header line.
    for table, start, end in reversed(find_pipe_tables(body)):
        name = "Table"
        if start > 0 and body[start - 1][1].strip().endswith(":"):
            start -= 1
            name = body[start][1].strip()[:-1]
        for line_no, record in table.records():
            row_key = table.header[0]
            path = f"{name}/{record.get(row_key, '')}"
            for column, cell in record.items():
                if column != row_key:
                    builder.add(path, column, cell, line_no)
        del body[start:end]
    if not any(line.strip() for _, line in body):
        if len(builder):
            return  # only a pipe table, such as a lone ChangedSessionVariables block
        raise ProfileParseError("no Doris profile content found")
    sections = read_counter_tree(body, builder)
    items = builder.items_frame()
    summary = builder.summary
    _check_one_total(sections, body)
    summary_path = next((s.path for s in sections if canonical(s.name) == "summary"), None)
    if summary_path is not None:
        for key, name in _SUMMARY_TEXT:
            if summary.get(name) is None:
                summary[name] = lookup_text(items, key, under=summary_path)
        summary["total_ms"] = lookup(items, "Total", path=summary_path)
    execution_summary = next((s.path for s in sections if canonical(s.name) == "executionsummary"), None)
    if execution_summary is not None:
        summary["planning_ms"] = lookup(items, "Plan Time", path=execution_summary)
    for section in sections:
        if canonical(section.name).startswith("executionprofile"):
            summary["execution_ms"] = section.get("Active")
            break
    _add_operators(sections, builder)


def _check_one_total(sections: list[Section], body: list[tuple[int, str]]) -> None:
    """Refuse two Summary sections whose Totals differ: two profiles pasted into one input."""
    totals = [(s, s.get("Total")) for s in sections if canonical(s.name) == "summary" and s.get("Total") is not None]
    for section, total in totals[1:]:
        if total != totals[0][1]:
            raise ProfileParseError(
                f"a second Summary with another Total ({total:g} ms; the first, at line {totals[0][0].line_no}, "
                f"says {totals[0][1]:g} ms): which profile to read is ambiguous; give one profile per input",
                section.line_no,
                dict(body)[section.line_no],
            )


def _parse_tables(tables: list[Table], builder: ProfileBuilder) -> None:
    statuses: dict[str, int] = {}
    active: list[float] = []
    for table in tables:
        row_key = table.header[0]
        for line_no, record in table.records():
            path = record.get(row_key, "")
            for column, cell in record.items():
                if column == row_key:
                    continue
                values = builder.add(path, column, cell, line_no)
                if column == "ActiveTime" and values[0].unit == "ms":
                    active.append(values[0].value)
            for column in ("Task State", "QueryState", "State"):
                if column in record:
                    statuses[record[column]] = statuses.get(record[column], 0) + 1
    rows = sum(len(t.rows) for t in tables)
    if tables[0].header[0] == "Instances":
        builder.summary["instance_count"] = rows
        if active:
            builder.summary["max_active_ms"] = max(active)
    else:
        builder.summary["profile_count"] = rows
        builder.summary["status_counts"] = statuses


def _parse_vertical(lines: list[tuple[int, str]], builder: ProfileBuilder) -> None:
    rows = read_vertical(lines)
    statuses: dict[str, int] = {}
    for index, fields in enumerate(rows, start=1):
        record = {key: value for _, key, value in fields}
        path = record.get("QueryId") or record.get("Profile ID") or f"row {index}"
        for line_no, key, value in fields:
            builder.add(path, key, value, line_no)
        state = record.get("QueryState") or record.get("Task State")
        if state is not None:
            statuses[state] = statuses.get(state, 0) + 1
    if not rows:
        raise ProfileParseError("no rows found in vertical (\\G) output")
    builder.summary["profile_count"] = len(rows)
    builder.summary["status_counts"] = statuses


def _parse_boxes(lines: list[tuple[int, str]], builder: ProfileBuilder) -> None:
    """Read the box-drawn operator tree of ``show load profile ".../<instance>"``."""
    root = ""
    open_boxes: list[tuple[int, int, int, list[tuple[int, str]]]] = []  # left, right, line, content
    closed: list[tuple[int, list[tuple[int, str]]]] = []
    for index, (line_no, line) in enumerate(lines):
        stripped = line.strip()
        if not open_boxes and re.match(r"^\w[\w ]*:$", stripped):
            root = stripped[:-1]  # "Instance:"
        below = lines[index + 1][1] if index + 1 < len(lines) else ""
        for left in [i for i, ch in enumerate(line) if ch == "┌"]:
            if line[left + 1 : left + 2] not in ("─", "-") or not below.startswith("│", left):
                continue  # a connector between boxes (┌┘, ┌──┴──┐), not a box's top
            right = line.find("┐", left)
            if right < 0:
                raise ProfileParseError("box top without its right corner", line_no, line)
            open_boxes.append((left, right, line_no, []))
        still_open = []
        for left, right, first, content in open_boxes:
            if first == line_no:
                still_open.append((left, right, first, content))
                continue
            edge = line[left] if left < len(line) else " "
            if edge == "└":
                closed.append((first, content))
            elif edge == "│" and right < len(line) and line[right] == "│":
                content.append((line_no, line[left + 1 : right]))
                still_open.append((left, right, first, content))
            else:
                raise ProfileParseError("box side expected at this column ('│')", line_no, line)
        open_boxes = still_open
    if open_boxes:
        first = open_boxes[0][2]
        raise ProfileParseError("box is never closed (truncated?)", first, dict(lines)[first])
    if not closed:
        raise ProfileParseError("no operator boxes found")

    sections: list[Section] = []
    for first, content in sorted(closed, key=lambda box: box[0]):
        rows = [(no, text.rstrip()) for no, text in content if text.strip()]
        if not rows:
            raise ProfileParseError("empty operator box", first, dict(lines)[first])
        title = _BOX_TITLE.match(rows[0][1].strip())
        if not title:
            raise ProfileParseError("box does not start with an '[id: Name]' title", *rows[0])
        name = f"{title['name']} (id={title['id']})" if title["id"] is not None else title["name"]
        path = f"{root}/{name}" if root else name
        section = Section(path, name, rows[0][0])
        rest = rows[1:]
        if rest and (attrs := _BOX_ATTRS.match(rest[0][1].strip())):
            for value in expand_pairs(attrs["attrs"]) or []:
                builder.add_value(path, value, rest[0][0])
                section.values.setdefault((value.key, value.stat), value)
            rest = rest[1:]
        if rest:
            for sub in read_counter_tree(rest, builder, root_path=path, plain_pairs=True):
                section.values.update({k: v for k, v in sub.values.items() if k not in section.values})
        sections.append(section)
    _add_operators(sections, builder)
