"""What a profile says about where the time went, as a JSON-ready dict and as short text."""

from __future__ import annotations

import math
from typing import Any

from ._profile import Profile

__all__ = ["UNIT_SUFFIXES", "anatomy", "format_anatomy"]

#: The sequential parts of a Stream Load's LoadTimeMs (plan: StarRocks' name for put).
_LOAD_SEQUENCE = ("begin_txn_ms", "stream_load_put_ms", "stream_load_plan_ms", "write_data_ms", "commit_and_publish_ms")
#: Parts measured while the data is written: shown under write data, not added to the split.
_LOAD_OVERLAPPING = ("read_data_ms", "received_data_ms", "receive_data_ms")
_LOAD_FIELDS = (
    "status", "label", "txn_id", "message", "total_rows", "loaded_rows", "filtered_rows",
    "unselected_rows", "load_bytes", "load_time_ms", "group_commit", "two_phase_commit", "error_url",
)
_TIME_KEYS = ("Time", "Total", "TotalTime", "ActiveTime")
_STATE_KEYS = ("State", "Task State", "QueryState")
#: How a metric's key names its unit: a time, a size, or what is counted.
UNIT_SUFFIXES = (
    "_ms", "_bytes", "_pct", "_rows", "_blocks", "_records", "_fpi", "_requests", "_calls", "_count",
    "_loops", "_rows_scanned", "_counts",
)
# Keys shown at the top of the anatomy; the text rendering lists every other metric below them.
_HEADLINE = ("total_ms", "execution_ms", "fe_overhead_ms", "planning_ms", "olap_table_sink_ms", "load_time_ms")


def _metrics(summary: dict[str, Any]) -> dict[str, Any]:
    """Every number of the summary (identifiers and flags aside), under its unit-carrying key."""
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if key.endswith("_id") or key == "seq" or isinstance(value, bool):  # identifiers, flags
            continue
        if isinstance(value, (int, float)):
            out[key] = value
        elif isinstance(value, dict) and value and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()
        ):
            out[key] = dict(value)
    return out


def _clean(value: Any) -> Any:
    """JSON-safe: NaN -> None, numpy scalars -> Python numbers, containers recursively."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else round(value, 6)
    return value


def _entries(profile: Profile, limit: int = 10) -> list[dict[str, Any]]:
    """One entry per listed profile/instance (SHOW PROFILELIST and the like)."""
    out = []
    items = profile.items
    for path in list(dict.fromkeys(items["path"]))[:limit]:
        rows = items[(items["path"] == path) & items["stat"].isna()]
        entry: dict[str, Any] = {"id": path}
        for key in _TIME_KEYS:
            hit = rows[(rows["key"] == key) & (rows["unit"] == "ms")]
            if len(hit):
                entry["time_ms"] = hit["value"].iloc[0]
                break
        for key in _STATE_KEYS:
            hit = rows[rows["key"] == key]
            if len(hit):
                entry["state"] = hit["value_raw"].iloc[0]
                break
        out.append(entry)
    return out


def anatomy(profile: Profile, top: int = 5) -> dict[str, Any]:
    """Summarise where a statement's time went.

    Parameters
    ----------
    profile : Profile
        A parsed profile (see ``ingestlab.profiles.parse``).
    top : int, optional
        How many operators to list, by their own time.

    Returns
    -------
    dict
        JSON-serialisable (NaN becomes None): ``kind``, ``engine``, ``status``,
        ``total_ms``, ``execution_ms``, ``fe_overhead_ms`` (total - execution),
        ``planning_ms``, ``olap_table_sink_ms``, ``top_operators`` (``name``, ``path``,
        ``time_ms``, ``share_pct`` of all operator time); ``load`` for load replies and
        load profiles (status, rows, bytes, ``time_split`` and ``other_ms``); ``entries``
        for profile lists; ``metrics``: every number the parser extracted into the summary
        (WAL, buffers, root rows, storage requests, stage times...), each key ending in its
        unit (`UNIT_SUFFIXES`); ``peeled`` (framing removed before parsing); ``warnings``
        (e.g. operator self-times that add up to more than the statement's time); ``notes``;
        ``skipped``: the lines not understood and left out, each ``line_no``, ``text`` and
        ``reason`` (see `Profile.skipped`).
    """
    from ingestlab.profiles import _parsers

    s = profile.summary
    reader = _parsers().get(profile.kind)
    # an engine folder's reader names its kinds after the engine (its first word); a load reply is no one engine's
    engine = s.get("engine") or (profile.kind.split("_")[0] if reader is not None
                                 and not reader.__name__.startswith(f"{__package__}.") else None)
    out: dict[str, Any] = {
        "kind": profile.kind,
        "engine": engine,
        "status": s.get("status"),
        "total_ms": s.get("total_ms"),
        "execution_ms": s.get("execution_ms"),
        "fe_overhead_ms": s.get("fe_overhead_ms"),
        "planning_ms": s.get("planning_ms"),
    }
    if "olap_table_sink_ms" in s:
        out["olap_table_sink_ms"] = s["olap_table_sink_ms"]

    ops = profile.operators.sort_values("time_ms", ascending=False, kind="stable")
    grand = float(ops["time_ms"].sum()) if len(ops) else 0.0
    out["top_operators"] = [
        {
            "name": row.name,
            "path": row.path,
            "time_ms": row.time_ms,
            "share_pct": (100.0 * row.time_ms / grand) if grand > 0 else None,
        }
        for row in ops.head(top).itertuples(index=False)
    ]

    if any(k in s for k in ("load_time_ms", "loaded_rows", "load_bytes")) or profile.kind == "stream_load_response":
        load = {k: s[k] for k in _LOAD_FIELDS if k in s}
        split = {k: s[k] for k in _LOAD_SEQUENCE if k in s}
        if split:
            load["time_split"] = split
            if "load_time_ms" in s:
                other = s["load_time_ms"] - sum(split.values())
                # Published replies whose parts add up to more than LoadTimeMs exist
                # (transaction loads); a negative remainder would only mislead.
                load["other_ms"] = other if other >= 0 else None
        for nested in _LOAD_OVERLAPPING:
            if nested in s:
                load[nested] = s[nested]
        out["load"] = load
    if "profile_count" in s or "instance_count" in s:
        out["count"] = s.get("profile_count", s.get("instance_count"))
        out["entries"] = _entries(profile)
    notes = []
    if s.get("truncated"):
        notes.append("the input was cut short by its publisher ('...'); counters after the cut are missing")
    note = getattr(reader, "ANATOMY_NOTES", {}).get(profile.kind)
    if note:
        notes.append(note)
    out["notes"] = notes
    out["metrics"] = _metrics(s)
    out["peeled"] = list(profile.peeled)
    out["warnings"] = list(profile.warnings)
    out["skipped"] = [line.as_dict() for line in profile.skipped]
    return _clean(out)


def _number(value: Any) -> str:
    """A count in full (1,000,000), a measure to three decimals without trailing zeros."""
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:,.3f} ms"


def format_anatomy(anatomy: dict[str, Any]) -> str:
    """Render `anatomy` output as a few lines of text for a terminal.

    Parameters
    ----------
    anatomy : dict
        The dict returned by `anatomy`.

    Returns
    -------
    str
        Human-readable text, no trailing newline.

    Examples
    --------
    >>> print(format_anatomy({"kind": "x", "total_ms": 10.0, "execution_ms": 8.0,
    ...                       "fe_overhead_ms": 2.0, "top_operators": []}))
    x
      total                10.000 ms
      execution             8.000 ms
      FE overhead           2.000 ms  (total - execution)
    >>> print(format_anatomy({"kind": "x", "skipped": [{"line_no": 4, "text": "###", "reason": "?"}]}))
    x
      1 line not understood, skipped: see --json
    """
    a = anatomy
    head = a.get("kind", "?")
    if a.get("engine"):
        head += f"  [{a['engine']}]"
    if a.get("status") is not None:
        head += f"  status={a['status']}"
    lines = [head]
    for key, label, note in (
        ("total_ms", "total", ""),
        ("planning_ms", "planning", ""),
        ("execution_ms", "execution", ""),
        ("fe_overhead_ms", "FE overhead", "  (total - execution)"),
        ("olap_table_sink_ms", "OLAP_TABLE_SINK", "  (sink's own time)"),
    ):
        if a.get(key) is not None:
            lines.append(f"  {label:<16}{_ms(a[key]):>14}{note}")
    load = a.get("load")
    if load:
        ident = ", ".join(f"{k}={load[k]}" for k in ("label", "txn_id") if load.get(k) is not None)
        if ident:
            lines.append(f"  load: {ident}")
        if load.get("loaded_rows") is not None or load.get("total_rows") is not None:
            rows = f"{load.get('loaded_rows', '-')} of {load.get('total_rows', '-')} rows loaded"
            if load.get("filtered_rows") is not None:
                rows += f", {load['filtered_rows']} filtered"
            if load.get("load_bytes") is not None:
                rows += f", {load['load_bytes']:,} bytes"
            lines.append(f"  rows: {rows}")
        if load.get("load_time_ms") is not None:
            lines.append(f"  {'load time':<16}{_ms(load['load_time_ms']):>14}")
        for key, value in (load.get("time_split") or {}).items():
            lines.append(f"    {key.removesuffix('_ms').replace('_', ' '):<20}{_ms(value):>14}")
        if load.get("other_ms") is not None:
            lines.append(f"    {'other':<20}{_ms(load['other_ms']):>14}")
        for key in _LOAD_OVERLAPPING:
            if load.get(key) is not None:
                label = key.removesuffix("_ms").replace("_", " ")
                lines.append(f"    {label:<20}{_ms(load[key]):>14}  (while writing, not added)")
        if load.get("error_url"):
            lines.append(f"  errors: {load['error_url']}")
    if a.get("top_operators"):
        lines.append("  top operators (own time):")
        for op in a["top_operators"]:
            share = "" if op.get("share_pct") is None else f"  {op['share_pct']:5.1f}%"
            lines.append(f"    {op['name'][:44]:<44}{_ms(op['time_ms']):>16}{share}")
    if a.get("entries"):
        lines.append(f"  {a.get('count', len(a['entries']))} entries:")
        for entry in a["entries"]:
            row = f"    {entry['id'][:40]:<40}{_ms(entry.get('time_ms')):>16}  {entry.get('state') or ''}"
            lines.append(row.rstrip())
    shown = set(_HEADLINE) | set((load or {}).get("time_split") or {}) | set(_LOAD_FIELDS) | set(_LOAD_OVERLAPPING)
    rest = {k: v for k, v in (a.get("metrics") or {}).items() if k not in shown}
    if rest:
        lines.append("  figures:")
        for key, value in rest.items():
            shown_value = ", ".join(f"{k}={_number(v)}" for k, v in value.items()) if isinstance(value, dict) else _number(value)
            lines.append(f"    {key:<30}{shown_value}")
    for what in a.get("peeled") or []:
        lines.append(f"  peeled: {what}")
    for warning in a.get("warnings") or []:
        lines.append(f"  warning: {warning}")
    for note in a.get("notes") or []:
        lines.append(f"  note: {note}")
    if a.get("skipped"):
        count = len(a["skipped"])
        lines.append(f"  {count} line{'s' if count != 1 else ''} not understood, skipped: see --json")
    return "\n".join(lines)
