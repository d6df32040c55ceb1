"""A small line-oriented reader for indented counter trees (StarRocks and Doris raw profiles)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ProfileParseError
from ._profile import ProfileBuilder
from ._values import Value, expand_pairs

__all__ = ["Line", "Section", "canonical", "indent_tree", "join_continuations", "read_counter_tree"]

# "- Key: value", "- Key" (a bare flag) or "- Key:" (a group of sub-counters).
_ITEM = re.compile(r"^- (?P<key>[^\n]*?)\s*:(?:[ \t](?P<value>.*)|$)", re.DOTALL)
# Newer StarRocks planner timers: "- -- Total[1] 3ms".
_PLANNER_ITEM = re.compile(r"^- -- (?P<key>.+?)\[(?P<count>\d+)\] (?P<value>.+)$")
# "Fragment 0:", "Instance x (host=...):(Active: 1.523ms, % non-child: 0.24%)".
_SECTION = re.compile(r"^(?P<name>[^-\s].*?):(?:\((?P<attrs>.*)\))?\s*$")
_STAT_CHILD = re.compile(r"^__(?P<stat>MAX|MIN|SUM|AVG)_OF_(?P<key>.+)$")
# Metric groups that are legitimately empty, even as the very last line of a profile.
_METRIC_GROUPS = {"CommonMetrics", "UniqueMetrics", "CommonCounters", "CustomCounters"}
# Scanner groups a StarRocks BE prints empty when the scan read nothing (StarRocks issue 20957).
_METRIC_GROUPS |= {"FileScanner", "FilePRead"}
_BARE_FLAG = re.compile(r"^(Is[A-Z]\w*|Sql Statement)$")
_MULTILINE_KEYS = {"Sql Statement"}
# "Key: value" without the "- " of a counter: Doris 1.2's FE web page prints its Summary so.
_PLAIN_PAIR = re.compile(r"^(?P<key>[A-Za-z][\w .()/%-]*?):\s+(?P<value>\S.*)$")
#: Sections (by `canonical` name) whose undashed "Key: value" lines are read as counters.
_PLAIN_PAIR_SECTIONS = {"summary", "executionsummary"}
_SKIPPED = "neither a counter ('- Key: value') nor a section header ('Name:')"
_SKIPPED_UNDER = "indented under a line that is neither a counter nor a section header"


def canonical(name: str) -> str:
    """A section name as compared across releases: without whitespace, in lower case.

    Releases space the same headers differently (``Execution  Summary:``, ``Pipeline  :  4``,
    ``ChangedSessionVariables`` and ``Changed Session Variables``).

    Examples
    --------
    >>> canonical("Execution  Summary") == canonical("ExecutionSummary")
    True
    """
    return re.sub(r"\s+", "", name).lower()


@dataclass
class Line:
    """One non-blank input line, with the lines indented under it."""

    line_no: int
    indent: int
    text: str
    raw: str
    children: list[Line] = field(default_factory=list)


@dataclass
class Section:
    """A section of a counter tree and the counters read directly under it.

    Attributes
    ----------
    path : str
        ``/``-joined section names from the root (``Query/Summary``).
    name : str
        This section's own name (``EXCHANGE_SOURCE (plan_node_id=7)``).
    line_no : int
        Line of the section header.
    values : dict
        ``(key, stat) -> Value`` for counters under this section (sub-counters flattened,
        first occurrence kept), including the header's ``(Active: ...)`` attributes.
    """

    path: str
    name: str
    line_no: int
    values: dict[tuple[str, str | None], Value] = field(default_factory=dict)

    def get(self, key: str, stat: str | None = None) -> float | None:
        """The numeric value of a counter, or None when absent."""
        v = self.values.get((key, stat))
        return None if v is None else v.value

    def non_child_ms(self) -> float | None:
        """Own time of a node of a non-pipeline counter tree: ``Active × % non-child``; None without both."""
        active, share = self.get("Active"), self.get("% non-child")
        return None if active is None or share is None else active * share / 100.0


def indent_tree(lines: list[tuple[int, str]]) -> list[Line]:
    """Nest lines by indentation: a line's parent is the nearest earlier, shallower line.

    Parameters
    ----------
    lines : list of (int, str)
        ``(line_no, text)`` pairs; blank lines are skipped, tabs count as 4 spaces.

    Returns
    -------
    list of Line
        The top-level lines, each with its nested children.
    """
    roots: list[Line] = []
    stack: list[Line] = []
    for line_no, raw in lines:
        expanded = raw.replace("\t", "    ")
        if not expanded.strip():
            continue
        text = expanded.lstrip(" ")
        node = Line(line_no, len(expanded) - len(text), text.rstrip(), raw)
        while stack and stack[-1].indent >= node.indent:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def _open_brackets(text: str) -> int:
    return text.count("[") - text.count("]")


def join_continuations(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Fold continuation lines into their item: a multi-line ``- Sql Statement:``, a list value.

    A statement continues until the next ``- item`` at its own indentation or shallower, or
    a section header shallower than it. A value that opens more ``[`` than it closes (Doris
    ``- ReadColumns: [a, b,``) continues on the next lines until its brackets balance.
    """
    out: list[tuple[int, str]] = []
    open_indent: int | None = None
    brackets = 0
    for line_no, raw in lines:
        text = raw.lstrip(" ")
        indent = len(raw) - len(text)
        if brackets > 0 and not (text.startswith("- ") and _ITEM.match(text) and indent <= _indent_of(out[-1][1])):
            prev_no, prev = out[-1]
            out[-1] = (prev_no, prev + " " + text.rstrip())
            brackets += _open_brackets(text)
            continue
        brackets = 0
        if open_indent is not None:
            is_item = text.startswith("- ")
            ends = (is_item and indent <= open_indent) or (
                not is_item and indent < open_indent and _SECTION.match(text.rstrip()) is not None
            )
            if not ends:
                prev_no, prev = out[-1]
                out[-1] = (prev_no, prev + "\n" + raw)
                continue
            open_indent = None
        item = _ITEM.match(text)
        if item and item["key"] in _MULTILINE_KEYS:
            open_indent = indent
        elif item and item["value"] and _open_brackets(item["value"]) > 0:
            brackets = _open_brackets(item["value"])
        out.append((line_no, raw))
    return out


def _indent_of(raw: str) -> int:
    return len(raw) - len(raw.lstrip(" "))


def _item_parts(line: Line) -> tuple[str, str, int | None]:
    """Return (key, raw value, planner count) of an item line."""
    planner = _PLANNER_ITEM.match(line.text)
    if planner:
        return planner["key"].strip(), planner["value"], int(planner["count"])
    body = line.raw.replace("\t", "    ").lstrip(" ")
    item = _ITEM.match(body)
    if item:
        return item["key"].strip(), item["value"] or "", None
    return body[2:].strip(), "", None  # a bare flag such as "- IsFinalSink"


def _subtree(line: Line) -> list[Line]:
    """The line and every line indented under it, in input order."""
    out = [line]
    for child in line.children:
        out.extend(_subtree(child))
    return out


def read_counter_tree(
    lines: list[tuple[int, str]], builder: ProfileBuilder, *, root_path: str = "", plain_pairs: bool = False
) -> list[Section]:
    """Read a raw profile tree of ``Section:`` headers and ``- Key: value`` counters.

    Shared by the StarRocks (``Query:``/``Load:``) and Doris (``Query:``, ``Summary:``,
    ``MergedProfile:``, operator blocks) raw trees. Counters become item rows of `builder`
    under their section's path; sub-counters are flattened into the same section;
    ``__MAX_OF_X``/``__MIN_OF_X`` children become rows of ``X`` with stat ``max``/``min``;
    ``(Active: ..., % non-child: ...)`` after a header becomes rows of that section.

    Parameters
    ----------
    lines : list of (int, str)
        ``(line_no, text)`` pairs of the tree only (no prompts or table borders).
    builder : ProfileBuilder
        Receives the item rows.
    root_path : str, optional
        Prefix for every path.
    plain_pairs : bool, optional
        Read undashed ``Key: value`` lines as counters everywhere (box contents); by default
        only under a ``Summary`` section, where Doris 1.2's web page prints them so.

    Returns
    -------
    list of Section
        Every section in document order (a pseudo-section at `root_path` first, for
        counters outside any section).

    Raises
    ------
    ProfileParseError
        When counters sit under a line that is neither a counter nor a section header (which
        section they belong to is ambiguous), and when the tree visibly ends early (a last
        section without content, a last counter cut before its colon). Any other line that
        is neither a counter nor a header (plan text, a separator, an error line, a prompt)
        is left out, with the lines under it, and recorded with `ProfileBuilder.skip`.
    """
    roots = indent_tree(join_continuations(lines))
    if not roots:
        raise ProfileParseError("no profile tree found: the input has no lines")
    top = Section(root_path, root_path, roots[0].line_no)
    sections = [top]

    def add_item(section: Section, line: Line, parent_key: str | None) -> None:
        key, raw, count = _item_parts(line)
        stat = None
        child_stat = _STAT_CHILD.match(key)
        if child_stat and parent_key is not None:
            key, stat = child_stat["key"], child_stat["stat"].lower()
        values = builder.add(section.path, key, raw, line.line_no, stat=stat)
        if count is not None:
            builder.add_number(section.path, key, count, "count", count, line.line_no, stat="count")
        for v in values:
            section.values.setdefault((v.key, v.stat), v)
        for child in line.children:
            walk(child, section, parent_key=key)

    def walk(line: Line, section: Section, parent_key: str | None = None) -> None:
        if line.text.startswith("- "):
            add_item(section, line, parent_key)
            return
        header = _SECTION.match(line.text)
        if not header:
            pair = _PLAIN_PAIR.match(line.text)
            if pair and not line.children and (plain_pairs or canonical(section.name) in _PLAIN_PAIR_SECTIONS):
                for v in builder.add(section.path, pair["key"].strip(), pair["value"], line.line_no):
                    section.values.setdefault((v.key, v.stat), v)
                return
            skip(line)
            return
        name = header["name"].strip()
        child = Section(f"{section.path}/{name}" if section.path else name, name, line.line_no)
        sections.append(child)
        if header["attrs"]:
            attrs = expand_pairs(header["attrs"])
            if attrs is None:
                builder.add(child.path, "Attributes", header["attrs"], line.line_no)
            for v in attrs or []:
                builder.add_value(child.path, v, line.line_no)
                child.values.setdefault((v.key, v.stat), v)
        for sub in line.children:
            walk(sub, child)

    skipped: set[int] = set()

    def skip(line: Line) -> None:
        below = _subtree(line)[1:]
        counter = next((sub for sub in below if sub.text.startswith("- ")), None)
        if counter is not None:
            raise ProfileParseError(
                f"counters under a line that is {_SKIPPED}: which section they belong to is ambiguous "
                f"(first counter at line {counter.line_no})",
                line.line_no,
                line.raw,
            )
        builder.skip(line.line_no, line.raw, _SKIPPED)
        for sub in below:
            builder.skip(sub.line_no, sub.raw, _SKIPPED_UNDER)
        skipped.update(id(sub) for sub in (line, *below))

    for root in roots:
        walk(root, top)
    _check_complete(roots, skipped)
    return sections


def _last_line(roots: list[Line], skipped: set[int]) -> Line | None:
    """The last line that was read (not skipped), or None when every line was skipped."""
    kept = [line for root in roots for line in _subtree(root) if id(line) not in skipped]
    return kept[-1] if kept else None


def _check_complete(roots: list[Line], skipped: set[int]) -> None:
    last = _last_line(roots, skipped)
    if last is None:
        first = roots[0]
        raise ProfileParseError(f"no counter or section header found: every line is {_SKIPPED}", first.line_no, first.raw)
    if last.text.startswith("- "):
        key = last.text[2:].strip()
        if ":" not in last.text and not _BARE_FLAG.match(key) and not _PLANNER_ITEM.match(last.text):
            raise ProfileParseError(
                "profile ends inside a counter name (truncated?)", last.line_no, last.raw
            )
        return
    header = _SECTION.match(last.text)
    if header and header["name"].strip() not in _METRIC_GROUPS:
        raise ProfileParseError(
            f"profile ends with the empty section {header['name'].strip()!r} (truncated?)",
            last.line_no,
            last.raw,
        )
