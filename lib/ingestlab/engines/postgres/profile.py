"""Parse PostgreSQL EXPLAIN (ANALYZE) output, as text or FORMAT JSON."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ingestlab.errors import ProfileParseError
from ingestlab.profiles._profile import Profile, ProfileBuilder
from ingestlab.profiles._text import numbered_lines

__all__ = ["KINDS", "ExplainParser", "parse", "sniff"]

# "  ->  Seq Scan on t  (cost=0.00..1.00 rows=1 width=4) (actual time=0.1..0.2 rows=1 loops=1)"
_NODE = re.compile(
    r"^(?P<lead>\s*(?:->\s+)?)(?P<label>\S.*?)\s+"
    r"(?:\(cost=(?P<startup_cost>[\d.]+)\.\.(?P<total_cost>[\d.]+)\s+"
    r"rows=(?P<plan_rows>\d+)\s+width=(?P<plan_width>\d+)\)\s*)?"
    r"(?:\((?:actual\s+(?:time=(?P<actual_start>[\d.]+)\.\.(?P<actual_total>[\d.]+)\s+)?"
    r"rows=(?P<actual_rows>[\d.]+)\s+loops=(?P<actual_loops>\d+)|(?P<never>never executed))\))?$"
)
_PROPERTY = re.compile(r"^(?P<key>[A-Za-z][^:()]*?)\s?:(?:\s+(?P<value>.*))?$")
_TRIGGER = re.compile(r"^Trigger (?P<name>.+?): time=(?P<time>[\d.]+) calls=(?P<calls>\d+)$")
_GROUP = re.compile(r"^(CTE \S+|(?:SubPlan|InitPlan)\b.*)$")
# "Update on public.t1 t1_1": the per-partition targets that PostgreSQL 14+ (and YugabyteDB)
# list under a write to a partitioned table, before its child plan.
_MODIFY_TARGET = re.compile(r"^(?:Insert|Update|Delete|Merge) on \S+(?: \S+)?$")
_CTE_SCAN = re.compile(r"^CTE Scan on (?P<cte>\S+)")
_FOOTER = re.compile(r"^\(\d+ [^\d\s()]+\)$")
_SUMMARY_STARTERS = re.compile(
    r"^(Planning [Tt]ime|Execution [Tt]ime|Total runtime|Planning|JIT|Settings|Query Identifier|Serialization)$"
)
# A line shaped like plan structure: a child node ("->"), or node or target text with costs.
_PLAN_SHAPED = re.compile(r"^->|\((?:cost|actual)[ =]|^(?:Insert|Update|Delete|Merge) on ")
#: Summary keys that are the statement's headline times: a second, different value is ambiguous.
_HEADLINE_KEYS = ("planning_ms", "execution_ms")
_SUM_COUNT = re.compile(r"^sum: (?P<sum>[\d.]+), count: (?P<count>[\d.]+)$")
_MODIFY = re.compile(r"^(?P<op>Insert|Update|Delete|Merge) on ")

#: EXPLAIN text property -> how its ``name=value`` pairs are named in FORMAT JSON.
_BLOCK_PREFIX = {"Buffers": "Blocks", "Heap Blocks": "Heap Blocks", "WAL": "WAL"}
_WAL_NAMES = {"records": "WAL Records", "fpi": "WAL FPI", "bytes": "WAL Bytes", "buffers full": "WAL Buffers Full"}
#: Root-node counters copied into the summary: JSON name -> summary key.
_ROOT_COUNTERS = {
    "Shared Hit Blocks": "shared_hit_blocks",
    "Shared Read Blocks": "shared_read_blocks",
    "Shared Dirtied Blocks": "shared_dirtied_blocks",
    "Shared Written Blocks": "shared_written_blocks",
    "Local Hit Blocks": "local_hit_blocks",
    "Local Written Blocks": "local_written_blocks",
    "Temp Read Blocks": "temp_read_blocks",
    "Temp Written Blocks": "temp_written_blocks",
    "WAL Records": "wal_records",
    "WAL FPI": "wal_fpi",
    "WAL Bytes": "wal_bytes",
}


@dataclass
class _Node:
    label: str
    path: str
    column: int
    line_no: int | None
    actual_total: float | None = None
    actual_loops: int = 1
    executed: bool = True
    #: The group a subplan is listed under (``CTE name``, ``InitPlan 1``...), None for a plain child.
    subplan: str | None = None
    #: The node's conditions and outputs as printed, to find which node reads an InitPlan's $N.
    detail: str = ""
    children: list[_Node] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)

    @property
    def inclusive_ms(self) -> float | None:
        if not self.executed:
            return 0.0
        return None if self.actual_total is None else self.actual_total * self.actual_loops


def _node_type(label: str) -> tuple[str, str | None]:
    """``Update on tenk1`` -> (``ModifyTable``, ``Update``); ``Index Scan using i on t`` -> ``Index Scan``."""
    modify = _MODIFY.match(label)
    if modify:
        return "ModifyTable", modify["op"]
    return re.split(r" on | using ", label, maxsplit=1)[0], None


def _snake(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def _pairs(value: str) -> list[tuple[str, str, str]]:
    """``shared hit=4 read=2, temp read=5`` -> [(scope, name, number)]."""
    out = []
    for group in value.split(","):
        scope = ""
        for token in re.finditer(r"(?:(?P<scope>[a-z]+) )?(?P<name>[a-z ]+?)=(?P<num>[\d.]+)", group.strip()):
            scope = token["scope"] or scope
            out.append((scope, token["name"].strip(), token["num"]))
    return out


class ExplainParser:
    """Reads PostgreSQL EXPLAIN output; subclass it for PostgreSQL-derived engines.

    Class attributes name what differs between engines: the kinds produced, the engine
    name, and which summary lines (after ``Execution Time``) become summary keys.
    """

    KIND_TEXT = "postgres_explain_text"
    KIND_JSON = "postgres_explain_json"
    ENGINE = "postgres"
    #: Summary labels kept in ``Profile.summary`` besides planning and execution time.
    EXTRA_SUMMARY = re.compile(r"^$")

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds this parser produces (text and JSON may share one)."""
        return tuple(dict.fromkeys((self.KIND_TEXT, self.KIND_JSON)))

    # --- detection ---------------------------------------------------------------

    def looks_like_json(self, text: str) -> bool:
        """Whether `text` holds an EXPLAIN (FORMAT JSON) document."""
        return bool(re.search(r'"Plan"\s*:\s*\{', text) and '"Node Type"' in text)

    def looks_like_text(self, text: str) -> bool:
        """Whether `text` holds EXPLAIN text output (a plan node line or the timing footer)."""
        if re.search(r"^\s*(Planning|Execution) [Tt]ime: [\d.]+ ms\s*$", text, re.MULTILINE):
            return True
        return any(
            _NODE.match(line.rstrip()) and ("cost=" in line or "actual " in line)
            for line in text.split("\n")
        )

    def sniff(self, text: str) -> str | None:
        """Return this parser's kind for `text`, or None."""
        if self.looks_like_json(text):
            return self.KIND_JSON
        if self.looks_like_text(text):
            return self.KIND_TEXT
        return None

    # --- parsing -----------------------------------------------------------------

    def parse(self, text: str, kind: str | None = None) -> Profile:
        """Parse EXPLAIN output (text or JSON) into a `Profile`.

        Parameters
        ----------
        text : str
            The output, possibly inside a psql transcript (statements, ``QUERY PLAN``
            header, ``(N rows)`` footer, localized ``Temps : 1,2 ms`` timing lines).
        kind : str, optional
            One of this parser's kinds; detected when omitted.

        Returns
        -------
        Profile
            Summary keys, as present: ``planning_ms``, ``execution_ms``, ``trigger_ms``,
            ``trigger_calls``, ``jit_ms``, ``root_node``, ``root_node_type``,
            ``root_operation``, ``root_actual_total_ms``, ``root_actual_rows``,
            ``root_actual_loops``, ``wal_records``/``wal_fpi``/``wal_bytes`` and
            ``shared_hit_blocks``... (as reported on the root node, which includes its
            children), plus engine-specific summary lines.

        Raises
        ------
        ProfileParseError
            On malformed or truncated output (an ANALYZE plan without ``Execution Time``).
        """
        kind = kind or self.sniff(text)
        if kind not in self.kinds:
            raise ProfileParseError(f"not a {self.ENGINE} EXPLAIN kind: {kind!r}; expected one of {self.kinds}")
        builder = ProfileBuilder(kind)
        builder.summary["engine"] = self.ENGINE
        if self.looks_like_json(text) or text.lstrip().startswith(("[", "{")):
            root, last_line = self._parse_json(text, builder)
        else:
            root, last_line = self._parse_text(text, builder)
        self._finish(root, builder, last_line)
        return builder.build()

    def summary_key(self, label: str, unit: str | None) -> str | None:
        """The summary key for a summary line, or None to keep it only as an item."""
        if re.fullmatch(r"Planning [Tt]ime", label):
            return "planning_ms"
        if re.fullmatch(r"Execution [Tt]ime|Total runtime", label):
            return "execution_ms"
        if not self.EXTRA_SUMMARY.match(label):
            return None
        key = _snake(label)
        if unit == "ms":
            key = re.sub(r"_time$", "", key) + "_ms"
        elif unit == "bytes":
            key = re.sub(r"_usage$", "", key) + "_bytes"
        return key

    def _add_summary_line(self, builder: ProfileBuilder, path: str, key: str, raw: str, line_no: int | None) -> None:
        values = builder.add(path, key, raw, line_no)
        if path == "Summary" and values:
            name = self.summary_key(key, values[0].unit)
            if name is not None and values[0].unit is not None:
                known = builder.summary.setdefault(name, values[0].value)
                if name in _HEADLINE_KEYS and known != values[0].value:
                    raise ProfileParseError(
                        f"a second {key!r} of {values[0].value:g} ms after one of {known:g} ms: "
                        "which statement's time to read is ambiguous; give one EXPLAIN per input",
                        line_no,
                        f"{key}: {raw}",
                    )

    def _add_property(
        self, builder: ProfileBuilder, node: _Node | None, path: str, key: str, value: str, line_no: int
    ) -> None:
        if key in _BLOCK_PREFIX and "=" in value:
            for scope, name, number in _pairs(value):
                if key == "WAL":
                    full = _WAL_NAMES.get(name, f"WAL {name.title()}")
                    unit = "bytes" if name == "bytes" else "count"
                elif key == "Heap Blocks":
                    full, unit = f"{name.title()} Heap Blocks", "count"
                else:
                    full, unit = f"{scope.title()} {name.title()} Blocks", "count"
                builder.add_number(path, full, float(number), unit, f"{key}: {value}", line_no)
                if node is not None:
                    node.counters.setdefault(full, float(number))
            return
        sum_count = _SUM_COUNT.match(value)
        if sum_count:
            builder.add_number(path, key, float(sum_count["sum"]), "count", value, line_no, stat="sum")
            builder.add_number(path, key, float(sum_count["count"]), "count", value, line_no, stat="count")
            return
        if key == "Timing" and path == "JIT":
            # "Generation 0.153 ms, Inlining 0.000 ms, ..., Total 0.795 ms"
            for part in re.finditer(r"(?P<name>[A-Za-z][A-Za-z ]*?) (?P<duration>[\d.]+ ms)", value):
                builder.add("JIT/Timing", part["name"], part["duration"], line_no)
                if part["name"] == "Total":
                    builder.summary["jit_ms"] = float(part["duration"].split()[0])
            return
        builder.add(path, key, value, line_no)

    def _parse_text(self, text: str, builder: ProfileBuilder) -> tuple[_Node | None, tuple[int, str] | None]:
        root: _Node | None = None
        stack: list[_Node] = []
        siblings: dict[str, dict[str, int]] = {}
        in_summary = False
        block: tuple[str, int] | None = None
        last_key: tuple[str, int] | None = None  # for YugabyteDB "Metric ..." lines under a counter
        last_line: tuple[int, str] | None = None  # the last line read as part of the plan
        triggers_ms = 0.0
        trigger_calls = 0
        group: str | None = None  # a "CTE x" / "InitPlan 1" line: it names the next node
        targets = 0
        for line_no, raw in numbered_lines(text):
            line = raw.replace("\u200b", "").rstrip()
            stripped = line.strip()
            maybe_node = "cost=" in line or "actual " in line or "never executed" in line
            node_match = _NODE.match(line) if maybe_node else None
            if root is None and not node_match:
                continue  # psql noise before the plan: statements, QUERY PLAN, dashes, timings
            if not stripped or _FOOTER.match(stripped) or re.fullmatch(r"-{3,}|\.\.\.", stripped):
                break
            indent = len(line) - len(line.lstrip())
            if node_match:
                if in_summary or (root is not None and "->" not in node_match["lead"]):
                    break  # a second plan (query diagnostics repeat it): read the first only
                node = self._add_node(node_match, line_no, stack, siblings, builder)
                node.subplan, group = group, None
                root = root or node
                last_key = None
                last_line = (line_no, raw)
                continue
            last_line = (line_no, raw)
            trigger = _TRIGGER.match(stripped)
            if trigger:
                in_summary = True
                path = f"Triggers/{trigger['name']}"
                builder.add(path, "Time", trigger["time"] + "ms", line_no)
                builder.add_number(path, "Calls", float(trigger["calls"]), "count", trigger["calls"], line_no)
                triggers_ms += float(trigger["time"])
                trigger_calls += int(trigger["calls"])
                continue
            prop = _PROPERTY.match(stripped)
            if prop is None:
                if _GROUP.match(stripped) and not in_summary:
                    group = stripped
                    continue
                if _MODIFY_TARGET.match(stripped) and not in_summary and stack and stack[-1].label.startswith(
                    stripped.split(" on ", 1)[0] + " on "
                ):
                    targets += 1
                    builder.add_number(stack[-1].path, "Target Relation", None, None, stripped[stripped.index(" on ") + 4 :], line_no)
                    continue
                if in_summary:
                    break  # whatever follows the plan (a psql command, a localized footer)
                if _PLAN_SHAPED.search(stripped):
                    # A node or target we cannot place (cut mid-line, or a target outside a
                    # write): skipping it would silently change the tree.
                    raise ProfileParseError("unrecognised plan line: a node or target that cannot be placed", line_no, raw)
                builder.skip(line_no, raw, "not a plan node, a node property or a summary line")
                continue
            key, value = prop["key"].strip(), (prop["value"] or "").strip()
            if not in_summary and (_SUMMARY_STARTERS.match(key) or indent <= root.column):
                in_summary = True
            if not in_summary:
                node = stack[-1]
                path = node.path
                if key.startswith("Metric ") and last_key and indent > last_key[1]:
                    path = f"{node.path}/{last_key[0]}"
                elif not key.startswith("Metric "):
                    last_key = (key, indent)
                node.detail += f" {value}"
                self._add_property(builder, node, path, key, value, line_no)
                continue
            if block and indent <= block[1]:
                block = None
            if not value:
                block = (key, indent)
                continue
            if block:
                self._add_property(builder, None, block[0], key, value, line_no)
                continue
            if key.startswith("Metric ") and last_key and indent > last_key[1]:
                self._add_property(builder, None, f"Summary/{last_key[0]}", key, value, line_no)
                continue
            last_key = (key, indent)
            self._add_summary_line(builder, "Summary", key, value, line_no)
        if root is None:
            raise ProfileParseError("no EXPLAIN plan node found")
        if trigger_calls:
            builder.summary["trigger_ms"] = round(triggers_ms, 6)
            builder.summary["trigger_calls"] = trigger_calls
        if targets:
            builder.summary["target_relation_count"] = targets
        return root, last_line

    def _add_node(
        self, m: re.Match, line_no: int, stack: list[_Node], siblings: dict, builder: ProfileBuilder
    ) -> _Node:
        lead = m["lead"]
        column = lead.index("->") if "->" in lead else -1
        while stack and stack[-1].column >= column:
            stack.pop()
        parent = stack[-1] if stack else None
        if parent is None and column >= 0 and siblings:
            raise ProfileParseError("plan node is not under any parent node", line_no, m.string)
        label = m["label"].strip()
        parent_path = parent.path if parent else ""
        seen = siblings.setdefault(parent_path, {})
        seen[label] = seen.get(label, 0) + 1
        name = label if seen[label] == 1 else f"{label} ({seen[label]})"
        path = f"{parent_path}/{name}" if parent_path else name
        node = _Node(label, path, column, line_no)
        node_type, operation = _node_type(label)
        builder.add_number(path, "Node Type", None, None, node_type, line_no)
        if operation:
            builder.add_number(path, "Operation", None, None, operation, line_no)
        for group, key, unit in (
            ("startup_cost", "Startup Cost", "cost"),
            ("total_cost", "Total Cost", "cost"),
            ("plan_rows", "Plan Rows", "count"),
            ("plan_width", "Plan Width", "bytes"),
            ("actual_start", "Actual Startup Time", "ms"),
            ("actual_total", "Actual Total Time", "ms"),
            ("actual_rows", "Actual Rows", "count"),
            ("actual_loops", "Actual Loops", "count"),
        ):
            if m[group] is not None:
                builder.add_number(path, key, float(m[group]), unit, m[group], line_no)
                node.counters[key] = float(m[group])
        if m["never"]:
            node.executed = False
            builder.add_number(path, "Never Executed", None, None, "never executed", line_no)
        node.actual_total = node.counters.get("Actual Total Time")
        node.actual_loops = int(node.counters.get("Actual Loops", 1))
        if parent:
            parent.children.append(node)
        stack.append(node)
        return node

    def _parse_json(self, text: str, builder: ProfileBuilder) -> tuple[_Node | None, tuple[int, str] | None]:
        lines = numbered_lines(text)
        start = next((i for i, (_, l) in enumerate(lines) if l.strip().startswith(("[", "{"))), None)
        if start is None:
            raise ProfileParseError("no JSON EXPLAIN document found")
        kept: list[tuple[int, str]] = []
        for line_no, line in lines[start:]:
            if _FOOTER.match(line.strip()):
                break
            kept.append((line_no, re.sub(r"\s*[+↵]$", "", line)))  # psql's wrapped-line marker
        while len(kept) > 1 and not kept[-1][1].strip():
            kept.pop()  # so a cut document is reported at its last real line
        source = "\n".join(line for _, line in kept)
        try:
            document = json.loads(source)
        except json.JSONDecodeError as exc:
            line_no, line = kept[min(exc.lineno, len(kept)) - 1]
            cut = " (input ends here: truncated?)" if not source[exc.pos :].strip() else ""
            raise ProfileParseError(f"malformed EXPLAIN JSON: {exc.msg}{cut}", line_no, line) from exc
        if isinstance(document, list):
            if not document:
                raise ProfileParseError("EXPLAIN JSON is an empty list", kept[0][0], kept[0][1])
            document = document[0]
        if not isinstance(document, dict) or not isinstance(document.get("Plan"), dict):
            raise ProfileParseError("EXPLAIN JSON has no 'Plan' object", kept[0][0], kept[0][1])
        root = self._json_node(document["Plan"], "", {}, builder)
        trigger_ms, trigger_calls = 0.0, 0
        for key, value in document.items():
            if key == "Plan":
                continue
            if key == "Triggers" and isinstance(value, list):
                for trigger in value:
                    path = f"Triggers/{trigger.get('Trigger Name', '?')}"
                    self._json_fields(trigger, path, builder)
                    trigger_ms += float(trigger.get("Time", 0.0))
                    trigger_calls += int(trigger.get("Calls", 0))
                continue
            if isinstance(value, dict):
                self._json_fields(value, key, builder)
                continue
            unit = self._json_unit(key, value)
            number = value if unit else None
            builder.add_number("Summary", key, number, unit, value)
            name = self.summary_key(key, unit)
            if name and unit:
                builder.summary.setdefault(name, float(value))
        if trigger_calls:
            builder.summary["trigger_ms"] = round(trigger_ms, 6)
            builder.summary["trigger_calls"] = trigger_calls
        timing = document.get("JIT", {}).get("Timing", {}) if isinstance(document.get("JIT"), dict) else {}
        if isinstance(timing.get("Total"), (int, float)):
            builder.summary["jit_ms"] = float(timing["Total"])
        return root, kept[-1]

    @staticmethod
    def _json_unit(key: str, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if key.endswith(("Time", "Total")) or key in ("Generation", "Inlining", "Optimization", "Emission", "Deform"):
            return "ms"
        if key.endswith(("Bytes", "Usage")) or key == "Plan Width":
            return "bytes"
        if key.endswith("Cost"):
            return "cost"
        return "count"

    def _json_fields(self, fields: dict, path: str, builder: ProfileBuilder) -> None:
        for key, value in fields.items():
            if isinstance(value, dict):
                self._json_fields(value, f"{path}/{key}", builder)
                continue
            unit = self._json_unit(key, value)
            shown = ", ".join(map(str, value)) if isinstance(value, list) else value
            builder.add_number(path, key, value if unit else None, unit, shown)

    def _json_node(self, plan: dict, parent_path: str, siblings: dict, builder: ProfileBuilder) -> _Node:
        node_type = str(plan.get("Node Type", "?"))
        if node_type == "ModifyTable" and "Operation" in plan:
            label = f"{plan['Operation']} on {plan.get('Relation Name', '?')}"
        else:
            label = node_type
            if "Index Name" in plan:
                label += f" using {plan['Index Name']}"
            target = plan.get("Relation Name") or plan.get("CTE Name") or plan.get("Function Name")
            if target:
                label += f" on {target}"
        seen = siblings.setdefault(parent_path, {})
        seen[label] = seen.get(label, 0) + 1
        name = label if seen[label] == 1 else f"{label} ({seen[label]})"
        path = f"{parent_path}/{name}" if parent_path else name
        node = _Node(label, path, 0, None, subplan=plan.get("Subplan Name"))
        node.detail = " ".join(str(v) for k, v in plan.items() if k != "Plans" and isinstance(v, (str, list)))
        self._json_fields({k: v for k, v in plan.items() if k != "Plans"}, path, builder)
        for key, value in plan.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                node.counters[key] = float(value)
        node.actual_total = node.counters.get("Actual Total Time")
        node.actual_loops = int(node.counters.get("Actual Loops", 1))
        if plan.get("Actual Loops") == 0:
            node.executed = False
        for child in plan.get("Plans", []) or []:
            node.children.append(self._json_node(child, path, siblings, builder))
        return node

    def _finish(self, root: _Node | None, builder: ProfileBuilder, last_line: tuple[int, str] | None) -> None:
        if root is None:
            return
        summary = builder.summary
        node_type, operation = _node_type(root.label)
        summary["root_node"] = root.label
        summary["root_node_type"] = node_type
        if operation:
            summary["root_operation"] = operation
        if root.actual_total is not None:
            summary["root_actual_total_ms"] = root.actual_total
            summary["root_actual_rows"] = root.counters.get("Actual Rows")
            summary["root_actual_loops"] = root.actual_loops
        for counter, key in _ROOT_COUNTERS.items():
            if counter in root.counters:
                summary[key] = root.counters[counter]
        analyzed = False
        deferred = _deferred_subplans(root)
        # A CTE's subplan runs inside the CTE Scan that reads it; its time is taken off the
        # scans in plan order, each giving up at most its own time.
        cte_left = {n.subplan[4:]: n.inclusive_ms or 0.0 for n in _walk(root) if (n.subplan or "").startswith("CTE ")}

        def walk(node: _Node, parent_ms: float | None) -> None:
            nonlocal analyzed
            inclusive = node.inclusive_ms
            if node.actual_total is not None:
                analyzed = True
            if inclusive is not None:
                inside = [c for c in node.children if id(c) not in deferred]
                own = inclusive - sum(c.inclusive_ms or 0.0 for c in inside)
                own -= sum(sub.inclusive_ms or 0.0 for sub, reader in deferred.values() if reader is node)
                scan = _CTE_SCAN.match(node.label)
                if scan and cte_left.get(scan["cte"]):
                    taken = min(cte_left[scan["cte"]], max(own, 0.0))
                    cte_left[scan["cte"]] -= taken
                    own -= taken
                # loops x per-loop time over-counts parallel workers; an operator's own time
                # cannot exceed the time of the operator it runs under
                own = max(own, 0.0) if parent_ms is None else min(max(own, 0.0), parent_ms)
                builder.add_operator(node.label, node.path, own)
            for child in node.children:
                walk(child, inclusive if inclusive is not None else parent_ms)

        walk(root, None)
        if analyzed and "execution_ms" not in summary:
            raise ProfileParseError(
                "EXPLAIN ANALYZE output has no 'Execution Time' line (truncated?)", *(last_line or (None, None))
            )


def _deferred_subplans(root: _Node) -> dict[int, tuple[_Node, _Node | None]]:
    """Subplans whose time is inside another node than the one they are listed under.

    A CTE runs inside the CTE Scans that read it (reader None: the scans are found by name).
    An InitPlan runs when a node first reads its ``$N``; when that node is below the node the
    InitPlan is listed under, the reader's actual time holds the InitPlan's. Both would be
    counted twice if subtracted from the node they are listed under.

    Returns
    -------
    dict
        ``id(subplan root) -> (subplan root, reader or None)``.
    """
    out: dict[int, tuple[_Node, _Node | None]] = {}
    for parent in _walk(root):
        for child in parent.children:
            name = child.subplan or ""
            if name.startswith("CTE "):
                out[id(child)] = (child, None)
                continue
            params = re.findall(r"\$\d+", name) if name.startswith("InitPlan") else []
            if not params:
                continue
            pattern = re.compile("|".join(re.escape(p) + r"(?!\d)" for p in params))
            inside = {id(n) for n in _walk(child)}
            reader = next(
                (n for n in _walk(parent) if id(n) not in inside and pattern.search(n.detail)), None
            )
            if reader is not None and reader is not parent:
                out[id(child)] = (child, reader)
    return out


def _walk(node: _Node) -> list[_Node]:
    """The node and all nodes below it, depth first."""
    out = [node]
    for child in node.children:
        out.extend(_walk(child))
    return out


_PARSER = ExplainParser()
KINDS = _PARSER.kinds
#: What the anatomy of a profile of each kind says beside its numbers.
ANATOMY_NOTES = dict.fromkeys(KINDS, "operator times are exclusive times derived from inclusive actual times x loops")
#: Each kind this module reads, with what produces it (``ingestlab.profiles.KINDS`` gathers them).
DESCRIPTIONS = {
    "postgres_explain_text": "PostgreSQL EXPLAIN [ANALYZE] text output",
    "postgres_explain_json": "PostgreSQL EXPLAIN (FORMAT JSON) output",
}
#: Where :func:`ingestlab.profiles.detect` tries this module: lower first (see ``profiles._modules``).
SNIFF_RANK = 3


def sniff(text: str) -> str | None:
    """Return ``postgres_explain_json`` or ``postgres_explain_text`` for EXPLAIN output, else None."""
    return _PARSER.sniff(text)


def parse(text: str, kind: str | None = None) -> Profile:
    """Parse PostgreSQL EXPLAIN output; see `ExplainParser.parse`."""
    return _PARSER.parse(text, kind)
