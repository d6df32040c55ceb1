"""Parse StarRocks runtime profiles, ANALYZE PROFILE / EXPLAIN ANALYZE output and SHOW PROFILELIST."""

from __future__ import annotations

import re
import unicodedata

from ingestlab.errors import ProfileParseError
from ingestlab.profiles._profile import Profile, ProfileBuilder, lookup, lookup_text
from ingestlab.profiles._table import find_box_tables
from ingestlab.profiles._text import is_prompt, numbered_lines, strip_ansi
from ingestlab.profiles._tree import Line, Section, canonical, indent_tree, read_counter_tree

__all__ = ["KINDS", "parse", "sniff"]

KINDS = ("starrocks_profile", "starrocks_analyze_profile", "starrocks_profilelist")
#: Each kind this module reads, with what produces it (``ingestlab.profiles.KINDS`` gathers them).
DESCRIPTIONS = {
    "starrocks_profile": "StarRocks raw runtime profile tree (Query:/Load: ... - Key: value), or one operator block",
    "starrocks_analyze_profile": "StarRocks ANALYZE PROFILE / EXPLAIN ANALYZE ('Explain String' table)",
    "starrocks_profilelist": "StarRocks SHOW PROFILELIST table",
}
#: Where :func:`ingestlab.profiles.detect` tries this module: lower first (see ``profiles._modules``).
SNIFF_RANK = 6

_EXPLAIN_HEADER = re.compile(r"^\W*Explain String\b", re.MULTILINE)
_PROFILELIST_HEADER = re.compile(r"^\|\s*QueryId\s*\|\s*StartTime\s*\|\s*Time\s*\|\s*State\s*\|", re.MULTILINE)
_RAW_ROOT = re.compile(r"^\W{0,2}(Query|Load):\s*$", re.MULTILINE)
_RAW_MARKERS = re.compile(
    r"StarRocks Version:|\(plan_node_id=|^\s*(CommonMetrics|UniqueMetrics):\s*$"
    # a fragment instance tree as the BE writes it to be.INFO (its log prefix already peeled)
    r"|^Fragment [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:\(Active: ",
    re.MULTILINE,
)
_ANALYZED_PLAIN = re.compile(r"^Summary\s*$.*^\s*(Total|Execution)Time:", re.MULTILINE | re.DOTALL)
_FRAGMENT = re.compile(r"^Fragment \d+$")
_GLYPH = re.compile(r"[└├]──")
_RANKED = re.compile(r"^\d+\.\s+(?P<name>.+?)\s*:\s+(?P<value>[^:]+)$")
_ROLE = re.compile(r"^<(?P<role>[A-Z]+)>\s*")
_METRIC_GROUPS = {"CommonMetrics", "UniqueMetrics"}
# "get_query_profile('<id>'): Query:": a \G row's column label glued to the tree's root line.
_GLUED_ROOT = re.compile(r"^(?P<label>\S.*\)):\s*(?P<root>Query|Load):\s*$", re.MULTILINE)

# Summary counters of the raw tree: (counter name, summary key).
_RAW_SUMMARY_NUMBERS = (
    ("Total", "total_ms"),
    ("Collect Profile Time", "collect_profile_ms"),
    ("NumRowsNormal", "loaded_rows"),
    ("NumRowsAbnormal", "filtered_rows"),
    ("numRowsUnselected", "unselected_rows"),
    ("NumLoadBytesTotal", "load_bytes"),
)
_RAW_SUMMARY_TEXT = (
    ("Query ID", "query_id"),
    ("Query State", "status"),
    ("Query Type", "query_type"),
    ("Load Type", "load_type"),
    ("StarRocks Version", "version"),
)
# Summary lines of the analyzed (ANALYZE PROFILE) format.
_ANALYZED_SUMMARY_NUMBERS = (
    ("TotalTime", "total_ms"),
    ("ExecutionTime", "execution_ms"),
    ("CollectProfileTime", "collect_profile_ms"),
    ("FrontendProfileMergeTime", "frontend_profile_merge_ms"),
    ("Scan", "scan_ms"),
    ("Network", "network_ms"),
    ("ResultDeliverTime", "result_deliver_ms"),
    ("ScheduleTime", "schedule_ms"),
    ("QueryPeakMemoryUsage", "peak_memory_bytes"),
    ("QueryAllocatedMemoryUsage", "allocated_memory_bytes"),
)
_ANALYZED_SUMMARY_TEXT = (("QueryId", "query_id"), ("State", "status"), ("Version", "version"))


def sniff(text: str) -> str | None:
    """Return the StarRocks kind of `text`, or None if it is not StarRocks output."""
    if _EXPLAIN_HEADER.search(text):
        return "starrocks_analyze_profile"
    if _PROFILELIST_HEADER.search(text):
        return "starrocks_profilelist"
    if _ANALYZED_PLAIN.search(text) and _GLYPH.search(text):
        return "starrocks_analyze_profile"
    if _RAW_ROOT.search(text) or _RAW_MARKERS.search(text) or _GLUED_ROOT.search(text):
        return "starrocks_profile"
    return None


def parse(text: str, kind: str) -> Profile:
    """Parse StarRocks output of the given kind.

    Parameters
    ----------
    text : str
        The output, possibly with client prompts and ``N rows in set`` footers around it.
    kind : str
        One of `KINDS`.

    Returns
    -------
    Profile
        Summary keys, as present: ``query_id``, ``status``, ``version``, ``total_ms``,
        ``execution_ms``, ``fe_overhead_ms``, ``planning_ms``, ``olap_table_sink_ms``,
        ``olap_table_sink_rows``, ``loaded_rows``/``filtered_rows``/``load_bytes`` (load
        profiles), ``truncated`` (the input marks itself as cut with ``...``);
        ``profile_count`` and ``status_counts`` for a profile list.

    Raises
    ------
    ProfileParseError
        On corrupt or truncated input.
    """
    lines = numbered_lines(text)
    builder = ProfileBuilder(kind)
    peeled: list[str] = []
    if kind == "starrocks_profilelist":
        _parse_profilelist(lines, builder)
    elif kind == "starrocks_analyze_profile":
        content = [(no, strip_ansi(line)) for no, line in _explain_string_lines(lines)]
        first = next((line.strip() for _, line in content if line.strip()), "")
        if first in ("Query:", "Load:"):
            peeled = _parse_raw(content, builder)  # a load's ANALYZE PROFILE returns the raw tree
        else:
            _parse_analyzed(content, builder)
    elif kind == "starrocks_profile":
        peeled = _parse_raw(lines, builder)
    else:
        raise ProfileParseError(f"not a StarRocks kind: {kind!r}; expected one of {KINDS}")
    return builder.build(peeled)


# --- raw profile tree ---------------------------------------------------------------


def _unwrap_raw(lines: list[tuple[int, str]]) -> tuple[list[tuple[int, str]], bool, list[str]]:
    """Drop prompts and a ``["..."]`` string wrapper; detect an explicit ``...`` cut.

    Returns the body, whether it was cut, and what was peeled (a ``\\G`` column label glued
    before the root, as ``select get_query_profile('<id>')\\G`` prints it).
    """
    body = list(lines)
    peeled: list[str] = []
    for i, (no, line) in enumerate(body):
        glued = _GLUED_ROOT.match(line)
        if glued:
            body[i] = (no, glued["root"] + ":")
            peeled.append(f"the \\G column label {glued['label']!r} glued before '{glued['root']}:'")
            break
    while body and (not body[0][1].strip() or is_prompt(body[0][1])):
        body.pop(0)
    while body and not body[-1][1].strip():
        body.pop()
    if not body:
        raise ProfileParseError("no StarRocks profile tree found: the input is empty")
    no, first = body[0]
    if first.lstrip().startswith('["'):
        # The profile was stored as a JSON array of one (already decoded) string.
        body[0] = (no, first.replace('["', "", 1))
        no, last = body[-1]
        if last.rstrip().endswith('"]'):
            body[-1] = (no, last.rstrip()[:-2])
    truncated = False
    if body[-1][1].rstrip().endswith("..."):
        # The publisher cut the profile and said so: drop the partial last line.
        truncated = True
        body.pop()
    return body, truncated, peeled


def _operator_name(section: Section) -> str:
    parts = section.path.split("/")
    return parts[-2] if section.name in _METRIC_GROUPS and len(parts) > 1 else section.name


def _parse_raw(lines: list[tuple[int, str]], builder: ProfileBuilder) -> list[str]:
    body, truncated, peeled = _unwrap_raw(lines)
    sections = read_counter_tree(body, builder)
    items = builder.items_frame()
    summary = builder.summary
    roots = [s for s in sections[1:] if "/" not in s.path and s.name in ("Query", "Load")]
    if len(roots) > 1:
        # Two profiles pasted one after the other: whose Total is the headline is ambiguous.
        second = roots[1]
        raise ProfileParseError(
            f"a second profile root {second.name + ':'!r} (the first at line {roots[0].line_no}): "
            "which profile to read is ambiguous; give one profile per input",
            second.line_no,
            dict(body)[second.line_no],
        )
    root = roots[0].name if roots else ""
    if root in ("Query", "Load"):
        # "Summary" as this release spells it (spacing differs between releases).
        summary_path = next(
            (s.path for s in sections if s.path.startswith(root + "/") and s.path.count("/") == 1
             and canonical(s.name) == "summary"),
            f"{root}/Summary",
        )
        if not any(s.path == summary_path for s in sections):
            line_no = sections[1].line_no
            raise ProfileParseError(f"{root}: profile has no Summary section", line_no, dict(body)[line_no])
        for key, name in _RAW_SUMMARY_NUMBERS:
            summary[name] = lookup(items, key, path=summary_path)
        for key, name in _RAW_SUMMARY_TEXT:
            summary[name] = lookup_text(items, key, under=summary_path)
        if summary["total_ms"] is None and not truncated:
            raise ProfileParseError("profile Summary has no Total (truncated?)", *body[-1])
        summary["planning_ms"] = lookup(items, "Total", under=f"{root}/Planner")
        summary["execution_ms"] = lookup(items, "QueryExecutionWallTime", under=f"{root}/Execution")
    if summary.get("execution_ms") is None:
        for section in sections:
            # "Fragment <instance id>" at the top: a BE log's tree of one fragment instance
            top_fragment = section.name.startswith("Fragment ") and section.path == section.name
            if canonical(section.name).startswith("executionprofile") or top_fragment:
                summary["execution_ms"] = section.get("Active")
                break

    best: dict[str, tuple[float, str]] = {}
    for section in sections:
        own = section.get("OperatorTotalTime")
        if own is None:
            continue
        name = _operator_name(section)
        if name not in best or own > best[name][0]:
            best[name] = (own, section.path.rsplit("/", 1)[0] if section.name in _METRIC_GROUPS else section.path)
    if not best:
        # Non-pipeline trees time their nodes as Active x % non-child, as Doris' old ones do.
        for section in sections[1:]:
            own = section.non_child_ms()
            if own is not None and not section.name.startswith("Fragment "):
                best[section.name] = (own, section.path)
    for name, (own, path) in best.items():
        builder.add_operator(name, path, own)
    sinks = [own for name, (own, _) in best.items() if name.startswith(("OLAP_TABLE_SINK", "OlapTableSink"))]
    if sinks:
        summary["olap_table_sink_ms"] = max(sinks)
    if truncated:
        summary["truncated"] = True
    return peeled


# --- ANALYZE PROFILE / EXPLAIN ANALYZE ------------------------------------------------


def _explain_string_lines(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The content of the one-column ``Explain String`` result, in any client layout."""
    tables = [t for t in find_box_tables(lines) if t.header and t.header[0] == "Explain String"]
    if tables:
        return [(row.line_no, row.inner) for row in tables[0].rows]
    nonblank = [(i, no, line) for i, (no, line) in enumerate(lines) if line.strip()]
    if not nonblank:
        raise ProfileParseError("no ANALYZE PROFILE output found: the input is empty")
    i, no, head = nonblank[0]
    if head.strip() == "Explain String":
        # A GUI client's export, its column bars already peeled: the rows follow the header.
        return [(row_no, row) for row_no, row in lines[i + 1 :] if row.strip()]
    vertical = [(k, no, line) for k, (no, line) in enumerate(lines) if line.lstrip().startswith("Explain String:")]
    if vertical:
        k, no, line = vertical[0]
        first = line.split("Explain String:", 1)[1].lstrip(" ")
        rest = [(n, l) for n, l in lines[k + 1 :] if not re.match(r"^\d+ rows? in set", l.strip())]
        return [(no, first)] + rest
    return [(no, line) for no, line in lines if not is_prompt(line)]


def _clean_name(text: str) -> tuple[str, str | None]:
    """Drop status emoji and a ``<PROBE>``/``<BUILD>`` role from an operator title."""
    kept = "".join(ch for ch in text if unicodedata.category(ch)[0] != "S" or ch in "<>[]=")
    kept = re.sub(r"\s+", " ", kept).strip()
    role = _ROLE.match(kept)
    if role:
        return kept[role.end() :].strip(), role["role"]
    return kept, None


def _add_props(builder: ProfileBuilder, path: str, lines: list[Line], *, flatten: bool = True) -> None:
    """Walk analyzed-format property lines (``Key: value``, groups, bare names)."""
    for line in lines:
        text = line.text.strip()
        ranked = _RANKED.match(text)
        if ranked:
            name, _ = _clean_name(ranked["name"])
            builder.add(path, name, ranked["value"], line.line_no)
            continue
        key, sep, raw = text.partition(":")
        key = key.strip()
        if not sep:
            builder.add(path, text, "", line.line_no)  # e.g. "CHUNK_ACCUMULATE" under SubordinateOperators
            _add_props(builder, path, line.children)
            continue
        if raw.strip():
            builder.add(path, key, raw, line.line_no)
            _add_props(builder, path, line.children)
        else:
            _add_props(builder, f"{path}/{key}", line.children)


def _parse_analyzed(content: list[tuple[int, str]], builder: ProfileBuilder) -> None:
    blocks: list[tuple[str, int, list[tuple[int, str]]]] = []
    for no, line in content:
        stripped = line.strip()
        if not stripped:
            continue
        if line == line.lstrip() and (stripped == "Summary" or _FRAGMENT.match(stripped)):
            blocks.append((stripped, no, []))
        elif not blocks:
            # Before the first block: plan text or a note pasted above it; nothing to read.
            builder.skip(no, line, "before the 'Summary' that starts the analyzed profile")
        else:
            blocks[-1][2].append((no, line))
    if not blocks:
        first = next(((no, line) for no, line in content if line.strip()), (None, None))
        raise ProfileParseError("no 'Summary' or 'Fragment N' block: not an analyzed profile", *first)

    for name, no, body in blocks:
        if name == "Summary":
            _add_props(builder, "Summary", indent_tree(body))
        else:
            _read_fragment(name, body, builder)

    last_name, last_no, last_body = blocks[-1]
    if not last_body:
        raise ProfileParseError(f"{last_name!r} has no content (truncated?)", last_no, last_name)
    tail_no, tail = last_body[-1]
    if _GLYPH.search(tail):
        raise ProfileParseError("analyzed profile ends on an operator without metrics (truncated?)", tail_no, tail)

    items = builder.items_frame()
    summary = builder.summary
    if not (items["path"] == "Summary").any():
        raise ProfileParseError("analyzed profile has no Summary block")
    for key, name in _ANALYZED_SUMMARY_NUMBERS:
        summary[name] = lookup(items, key, under="Summary")
    for key, name in _ANALYZED_SUMMARY_TEXT:
        summary[name] = lookup_text(items, key, under="Summary")
    if summary["total_ms"] is None and summary["status"] != "Running":
        raise ProfileParseError("analyzed profile Summary has no TotalTime (truncated?)")
    for path in items.loc[items["key"] == "TotalTime", "path"].unique():
        if path == "Summary" or path.startswith("Summary/"):
            continue
        own = lookup(items, "TotalTime", path=path)
        name = path.rsplit("/", 1)[-1]
        if own is not None:
            builder.add_operator(name, path, own)
            if name.startswith("OLAP_TABLE_SINK"):
                summary["olap_table_sink_ms"] = own
                summary["olap_table_sink_rows"] = lookup(items, "OutputRows", path=path)


def _read_fragment(name: str, body: list[tuple[int, str]], builder: ProfileBuilder) -> None:
    """Read one ``Fragment N`` block drawn with ``│``, ``├──`` and ``└──``."""
    stack: list[tuple[int, str]] = []  # (glyph column, path) of open operators
    pending: list[tuple[int, str]] = []
    current = name

    def flush() -> None:
        if pending:
            _add_props(builder, current, indent_tree(list(pending)))
            pending.clear()

    for no, line in body:
        glyph = _GLYPH.search(line)
        if glyph:
            flush()
            column = glyph.start()
            while stack and stack[-1][0] >= column:
                stack.pop()
            title, role = _clean_name(line[glyph.end() :])
            if not title:
                raise ProfileParseError("operator line without a name", no, line)
            parent = stack[-1][1] if stack else name
            current = f"{parent}/{title}"
            stack.append((column, current))
            if role:
                builder.add(current, "Role", role, no)
            continue
        content = line.lstrip("│ ")
        pending.append((no, " " * (len(line) - len(content)) + content))
    flush()


# --- SHOW PROFILELIST -----------------------------------------------------------------


def _parse_profilelist(lines: list[tuple[int, str]], builder: ProfileBuilder) -> None:
    tables = [t for t in find_box_tables(lines) if t.header[:1] == ["QueryId"]]
    if not tables:
        raise ProfileParseError("no SHOW PROFILELIST table (QueryId | StartTime | Time | State | Statement) found")
    statuses: dict[str, int] = {}
    for table in tables:
        query_id = ""
        for line_no, record in table.records():
            if not record.get("QueryId", "") and query_id and not any(
                cell for column, cell in record.items() if column != "Statement"
            ):
                # A statement with a line break: the client prints its next line as a row of
                # empty cells.
                builder.add(query_id, "Statement", record.get("Statement", ""), line_no)
                continue
            query_id = record.get("QueryId", "")
            if not query_id:
                raise ProfileParseError("profile list row without a QueryId", line_no, " | ".join(record.values()))
            for column, cell in record.items():
                if column != "QueryId":
                    builder.add(query_id, column, cell, line_no)
            state = record.get("State", "")
            statuses[state] = statuses.get(state, 0) + 1
    builder.summary["profile_count"] = sum(statuses.values())
    builder.summary["status_counts"] = statuses
