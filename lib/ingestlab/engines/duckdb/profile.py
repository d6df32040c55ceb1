"""Parse DuckDB's JSON query profile (``enable_profiling = 'json'`` or ``get_profiling_information()``)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ingestlab.errors import ProfileParseError
from ingestlab.profiles._profile import Profile, ProfileBuilder

__all__ = ["KINDS", "PHASES", "parse", "sniff"]

KINDS = ("duckdb_profile",)
#: Each kind this module reads, with what produces it (``ingestlab.profiles.KINDS`` gathers them).
DESCRIPTIONS = {"duckdb_profile": "DuckDB JSON query profile (enable_profiling = 'json', get_profiling_information()), 2.0 or 1.x"}
#: Where :func:`ingestlab.profiles.detect` tries this module: lower first (see ``profiles._modules``).
SNIFF_RANK = 0

#: The groups of DuckDB 2.0's profile that time a phase of the query outside its operators, and the
#: summary key of each group's ``total_time``: each group's other timings are steps inside it
#: (``planner.binding_time`` inside ``planner.total_time``, every ``optimizer.<name>`` inside
#: ``optimizer.total_time``, ``physical_planner.create_plan`` … inside ``physical_planner.total_time``).
PHASES: dict[str, str] = {
    "parser": "parsing_ms",
    "planner": "planning_ms",
    "optimizer": "optimizer_ms",
    "physical_planner": "physical_planning_ms",
}
#: ``storage`` timings of DuckDB 2.0 (seconds), each its own step of the commit or of the database's
#: upkeep, and the summary key of each.
_STORAGE = {
    "commit_local_storage_latency": "commit_local_storage_ms",
    "write_to_wal_latency": "write_to_wal_ms",
    "checkpoint_latency": "checkpoint_ms",
    "total_vacuum_time": "vacuum_ms",
    "waiting_to_attach_latency": "waiting_to_attach_ms",
    "attach_load_storage_latency": "attach_load_storage_ms",
    "attach_replay_wal_latency": "attach_replay_wal_ms",
}
#: DuckDB 1.x's flat profile: its root metrics (upper- or lower-case) and their summary keys.
_FLAT_ROOT = {
    "latency": "total_ms", "cpu_time": "cpu_ms", "blocked_thread_time": "blocked_thread_ms",
    "rows_returned": "result_rows", "result_set_size": "result_set_bytes", "cumulative_cardinality": "intermediate_rows",
    "cumulative_rows_scanned": "rows_scanned", "planner": "planning_ms", "physical_planner": "physical_planning_ms",
    "cumulative_optimizer_timing": "optimizer_ms", "all_optimizers": "optimizer_ms",
    "commit_local_storage_latency": "commit_local_storage_ms", "write_to_wal_latency": "write_to_wal_ms",
    "checkpoint_latency": "checkpoint_ms", "total_bytes_read": "bytes_read", "total_bytes_written": "bytes_written",
}
# A key is a time (seconds in the profile) when it says so; bytes when it names a size or memory.
_TIME = re.compile(r"(?:^|_)(?:time|timing|latency)$|^(?:planner|physical_planner)(?:_|$)|^optimizer_|_binding$"
                   r"|^create_plan$|^resolve_types$")
_BYTES = re.compile(r"bytes|memory|size")
# Every other metric a name calls a count of rows or a size is a number too (``extra_info``'s texts are not metrics).
_COUNTS = re.compile(r"rows|cardinality|bytes|memory|size")
_NEW_SHAPE = re.compile(r'"operator"\s*:\s*\[')
_NEW_KEYS = re.compile(r'"(?:timing|total_time)"\s*:')
_OLD_SHAPE = re.compile(r'"operator_timing"\s*:|"operator_type"\s*:')


def sniff(text: str) -> str | None:
    """Return ``duckdb_profile`` for DuckDB's JSON profile (2.0's grouped one or 1.x's flat one), else None.

    Examples
    --------
    >>> sniff('{"operator": [{"type": "RESULT_COLLECTOR", "timing": 0.0}], "query": {"total_time": 0.001}}')
    'duckdb_profile'
    >>> sniff('{"Plan": {"Node Type": "Result"}}') is None
    True
    """
    start = text.find("{")
    if start < 0 or text[:start].strip().strip("[").strip():
        return None
    if (_NEW_SHAPE.search(text) and _NEW_KEYS.search(text)) or _OLD_SHAPE.search(text):
        return KINDS[0]
    return None


def _unit(group: str, key: str, value: Any) -> str | None:
    """The unit of a numeric metric: ``ms`` (the profile's seconds), ``bytes`` or ``count``; None for text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if group in PHASES or _TIME.search(key.lower()):
        return "ms"
    if _BYTES.search(key.lower()):
        return "bytes"
    return "count"


def _document(text: str) -> tuple[dict, int, str]:
    """The profile's JSON object, the line its ``{`` is on and that line (a list of one object is unwrapped)."""
    start = text.find("{")
    opening = text.find("[")
    if 0 <= opening < start and not text[:opening].strip():
        start = opening  # ``[{…}]``: one profile in a list
    if start < 0:
        raise ProfileParseError("no DuckDB profile found: the input has no JSON object")
    lines = text.split("\n")
    first_line = text.count("\n", 0, start) + 1
    where = (first_line, lines[first_line - 1])
    try:
        document, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        # an error on the input's last line (an unterminated string or object) means the input was cut there
        cut = " (input ends here: truncated?)" if "\n" not in text[exc.pos:].strip() else ""
        raise ProfileParseError(f"malformed DuckDB profile JSON: {exc.msg}{cut}", exc.lineno,
                                lines[exc.lineno - 1]) from exc
    if isinstance(document, list):
        if len(document) != 1 or not isinstance(document[0], dict):
            raise ProfileParseError("DuckDB profile JSON is a list, not one profile", *where)
        document = document[0]
    if not isinstance(document, dict):
        raise ProfileParseError("DuckDB profile JSON is not an object", *where)
    return document, *where


def parse(text: str, kind: str = "duckdb_profile") -> Profile:
    """Parse a DuckDB JSON profile into a `Profile`.

    DuckDB 2.0 groups its metrics (``query``, ``planner``, ``optimizer``, ``physical_planner``,
    ``storage``, ``system``, ``io``, ``parser``) beside the operator tree (``operator``: nodes with
    ``type``, ``timing``, ``intermediate_rows``, ``extra_info``, ``children``); DuckDB 1.x wrote a
    flat root (``latency``, ``cpu_time``, ``rows_returned``, ``children`` of nodes with
    ``operator_type``, ``operator_name``, ``operator_timing``, ``operator_cardinality``). Both are
    read; times are seconds in the profile and milliseconds here.

    Parameters
    ----------
    text : str
        The profile, as DuckDB writes it to its ``profiling_output`` file or returns it from
        ``get_profiling_information(format="json")``.
    kind : str, optional
        ``duckdb_profile``.

    Returns
    -------
    Profile
        Summary keys, as present: ``sql``, ``total_ms`` (``query.total_time``, 1.x's ``latency``:
        the query's span, every other time inside it), ``planning_ms``, ``optimizer_ms``,
        ``physical_planning_ms``, ``parsing_ms``, ``cpu_ms`` (the operators' times summed, as DuckDB
        defines ``cpu_time``), ``commit_local_storage_ms``, ``write_to_wal_ms``, ``checkpoint_ms``,
        ``blocked_thread_ms``, ``intermediate_rows``, ``rows_scanned``, ``bytes_read``,
        ``bytes_written``, ``peak_buffer_memory_bytes``, ``root_operator`` (the first operator below
        the result collector). Operators: each node's ``timing`` (its own time: DuckDB times each
        operator apart, so the times add up to ``cpu_time``), named by its type, ``path`` the types
        from the root. A profile read before its query ended (a result not fetched yet) has
        operators only: a warning says so.

    Raises
    ------
    ProfileParseError
        On malformed or truncated JSON, JSON that is no DuckDB profile, or a time, count or size
        that is no finite number ≥ 0 (a string, null, negative, NaN): its line is given when found.

    Examples
    --------
    >>> parse('{"operator": [{"type": "BATCH_INSERT", "timing": 0.25e-3}]}').operators["time_ms"].tolist()
    [0.25]
    >>> parse('{"operator": [{"type": "BATCH_INSERT",\\n "timing": "fast",\\n "children": []}]}')
    Traceback (most recent call last):
    ...
    ingestlab.errors.ProfileParseError: corrupted DuckDB profile: BATCH_INSERT.timing is 'fast', not a time in seconds ≥ 0 (line 2: '"timing": "fast",')
    """
    if kind not in KINDS:
        raise ProfileParseError(f"not a DuckDB kind: {kind!r}; expected one of {KINDS}")
    document, *where = _document(text)
    builder = ProfileBuilder(kind)
    try:
        if isinstance(document.get("operator"), list):
            _grouped(document, builder)
        elif any(k.lower() in ("latency", "operator_timing", "children", "query_name") for k in document):
            _flat(document, builder)
        else:
            raise ProfileParseError("JSON without DuckDB's operator tree ('operator' or 'children')", *where)
    except _BadValue as bad:
        raise ProfileParseError(str(bad), *_line_of(text, bad.key, bad.value)) from None
    return builder.build()


class _BadValue(Exception):
    """A time, count or size of the profile that is no number ≥ 0 (its key and value, to find its line)."""

    def __init__(self, path: str, key: str, value: Any, what: str):
        self.key, self.value = key, value
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        super().__init__(f"corrupted DuckDB profile: {path}.{key} is {shown}, not {what}")


def _line_of(text: str, key: str, value: Any) -> tuple[int | None, str | None]:
    """The number and text of the first line that gives ``key`` the value ``value`` (None, None if none does)."""
    pattern = re.compile(r'"%s"\s*:\s*(.*?)\s*,?\s*$' % re.escape(key))
    for number, line in enumerate(text.split("\n"), 1):
        found = pattern.search(line)
        if found is None:
            continue
        try:
            seen = json.loads(found.group(1))
        except ValueError:
            continue
        if seen == value or (seen != seen and value != value):  # NaN is no value's equal
            return number, line
    return None, None


def _check(path: str, group: str, key: str, value: Any) -> None:
    """Refuse a time (by its group or its name), a count or a size that is no finite number ≥ 0."""
    name = key.lower()
    if group in PHASES or _TIME.search(name):
        what = "a time in seconds ≥ 0"
    elif _COUNTS.search(name):
        what = "a count or size ≥ 0"
    else:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise _BadValue(path, key, value, what)


def _add_metrics(builder: ProfileBuilder, path: str, group: str, metrics: dict) -> None:
    """Every number of ``metrics`` as an item under ``path`` (times in ms), text as a text item."""
    for key, value in metrics.items():
        if isinstance(value, (dict, list)):
            shown = json.dumps(value, sort_keys=True)
            builder.add_number(path, key, None, None, shown)
            continue
        _check(path, group, key, value)
        unit = _unit(group, key, value)
        number = None if unit is None else float(value) * (1e3 if unit == "ms" else 1.0)
        builder.add_number(path, key, number, unit, value)


def _grouped(document: dict, builder: ProfileBuilder) -> None:
    """DuckDB 2.0: ``<group>: {metric: value}`` beside the ``operator`` tree."""
    summary = builder.summary
    for group, metrics in document.items():
        if group == "operator" or not isinstance(metrics, dict):
            continue
        _add_metrics(builder, group, group, metrics)
    query = document.get("query")
    if isinstance(query, dict):
        summary["sql"] = query.get("sql")
        summary["total_ms"] = _ms(query.get("total_time"))
        summary["cpu_ms"] = _ms(query.get("cpu_time"))
        summary["intermediate_rows"] = query.get("total_intermediate_rows")
        summary["rows_scanned"] = query.get("total_rows_scanned")
    else:
        builder.warnings.append("no 'query' metrics: the profile was read before its query ended (a result not "
                                "fetched yet); only the operators are timed")
    for group, key in PHASES.items():
        if isinstance(document.get(group), dict):
            summary[key] = _ms(document[group].get("total_time"))
    for key, name in _STORAGE.items():
        summary[name] = _ms((document.get("storage") or {}).get(key))
    system, io = document.get("system") or {}, document.get("io") or {}
    summary["blocked_thread_ms"] = _ms(system.get("blocked_thread_time"))
    summary["peak_buffer_memory_bytes"] = system.get("peak_buffer_memory")
    summary["bytes_read"] = io.get("total_bytes_read")
    summary["bytes_written"] = io.get("total_bytes_written")
    roots = document["operator"]
    _operators(roots, "", builder, type_key="type", timing_key="timing")
    summary["root_operator"] = _root_operator(roots, "type")


def _flat(document: dict, builder: ProfileBuilder) -> None:
    """DuckDB 1.x: root metrics and ``children`` (``operator_type``, ``operator_timing`` …) in one object."""
    summary = builder.summary
    root = {k: v for k, v in document.items() if k.lower() != "children"}
    _add_metrics(builder, "query", "query", root)
    for key, value in root.items():
        name = _FLAT_ROOT.get(key.lower()) or (f"{key.lower()}_ms" if key.lower().startswith("optimizer_") else None)
        if name is None or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        summary.setdefault(name, _ms(value) if name.endswith("_ms") else value)
    if isinstance(root.get("query_name", root.get("QUERY_NAME")), str):
        summary["sql"] = root.get("query_name", root.get("QUERY_NAME"))
    children = document.get("children", document.get("CHILDREN")) or []
    _operators(children, "", builder, type_key="operator_type", timing_key="operator_timing")
    summary["root_operator"] = _root_operator(children, "operator_type")


def _ms(seconds: Any) -> float | None:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or math.isnan(seconds):
        return None
    return round(float(seconds) * 1e3, 9)


def _name(node: dict, type_key: str) -> str:
    for key in (type_key, type_key.upper(), "operator_name", "name"):
        if isinstance(node.get(key), str) and node[key].strip():
            return node[key].strip()
    return "?"


def _root_operator(roots: list, type_key: str) -> str | None:
    """The first operator that is not the result collector (the statement's own: ``BATCH_INSERT``, ``TOP_N``…)."""
    node = roots[0] if roots and isinstance(roots[0], dict) else None
    while node is not None and _name(node, type_key) in ("RESULT_COLLECTOR", "Query", "QUERY"):
        children = node.get("children") or []
        node = children[0] if children and isinstance(children[0], dict) else None
    return None if node is None else _name(node, type_key)


def _operators(nodes: list, parent: str, builder: ProfileBuilder, *, type_key: str, timing_key: str) -> None:
    """Each node's metrics as items under its path, and its own time as an operator (siblings of one type numbered)."""
    seen: dict[str, int] = {}
    for node in nodes:
        if not isinstance(node, dict):
            raise ProfileParseError(f"operator under {parent or 'the root'!r} is not an object")
        label = _name(node, type_key)
        seen[label] = seen.get(label, 0) + 1
        name = label if seen[label] == 1 else f"{label} ({seen[label]})"
        path = f"{parent}/{name}" if parent else name
        _add_metrics(builder, path, "operator", {k: v for k, v in node.items()
                                                 if k.lower() not in ("children", type_key)})
        timing = node.get(timing_key, node.get(timing_key.upper()))
        if isinstance(timing, (int, float)) and not isinstance(timing, bool):
            builder.add_operator(label, path, float(timing) * 1e3)
        _operators(node.get("children", node.get("CHILDREN")) or [], path, builder, type_key=type_key,
                   timing_key=timing_key)
