"""Parse StarRocks and Doris Stream Load, transaction and group-commit replies."""

from __future__ import annotations

import re
from typing import Any

from ..errors import ProfileParseError
from ._profile import Profile, ProfileBuilder
from ._relaxed_json import RelaxedJSONError, loads_at
from ._text import numbered_lines

__all__ = ["KINDS", "SUMMARY_FIELDS", "TIME_PARTS", "parse", "replies", "sniff"]

KINDS = ("stream_load_response",)
#: Each kind this module reads, with what produces it (``ingestlab.profiles.KINDS`` gathers them).
DESCRIPTIONS = {"stream_load_response": "StarRocks/Doris Stream Load, transaction or group-commit reply (JSON-ish)"}
#: Where :func:`ingestlab.profiles.detect` tries this module: lower first (see ``profiles._modules``).
SNIFF_RANK = 1

#: Reply field (lower-cased, underscores removed) -> (summary key, kind of value).
#: StarRocks prints StreamLoadPlanTimeMs where Doris (and StarRocks before 2.5) print
#: StreamLoadPutTimeMs; each keeps its own name, and both are the step between BeginTxn and
#: WriteData. Doris' ReceiveDataTimeMs and StarRocks' ReceivedDataTimeMs are network receive
#: times measured while the data is written, so they overlap WriteDataTimeMs.
SUMMARY_FIELDS: dict[str, tuple[str, str]] = {
    "status": ("status", "text"),
    "label": ("label", "text"),
    "txnid": ("txn_id", "int"),
    "message": ("message", "text"),
    "msg": ("message", "text"),
    "queryid": ("query_id", "text"),
    "seq": ("seq", "int"),
    "existingjobstatus": ("existing_job_status", "text"),
    "numbertotalrows": ("total_rows", "int"),
    "numberloadedrows": ("loaded_rows", "int"),
    "numberfilteredrows": ("filtered_rows", "int"),
    "numberunselectedrows": ("unselected_rows", "int"),
    "loadbytes": ("load_bytes", "int"),
    "loadtimems": ("load_time_ms", "ms"),
    "begintxntimems": ("begin_txn_ms", "ms"),
    "streamloadputtimems": ("stream_load_put_ms", "ms"),
    "streamloadplantimems": ("stream_load_plan_ms", "ms"),
    "readdatatimems": ("read_data_ms", "ms"),
    "receiveddatatimems": ("received_data_ms", "ms"),
    "receivedatatimems": ("receive_data_ms", "ms"),
    "writedatatimems": ("write_data_ms", "ms"),
    "commitandpublishtimems": ("commit_and_publish_ms", "ms"),
    "groupcommit": ("group_commit", "bool"),
    "twophasecommit": ("two_phase_commit", "bool"),
    "errorurl": ("error_url", "text"),
}

#: The parts of ``load_time_ms``, in the order a load goes through them.
TIME_PARTS = (
    "begin_txn_ms",
    "stream_load_put_ms",
    "stream_load_plan_ms",
    "read_data_ms",
    "received_data_ms",
    "receive_data_ms",
    "write_data_ms",
    "commit_and_publish_ms",
)

# A reply starts where "{" is followed by a quoted key; "{user}" in a curl line does not.
_REPLY_START = re.compile(r"\{(?=\s*[\"'])")
_STATUS = re.compile(r"[\"']status[\"']\s*:", re.IGNORECASE)
_IDENTITY = re.compile(r"[\"'](txnid|label)[\"']\s*:", re.IGNORECASE)
# The FE's own rejection, before any transaction exists: {"status": "FAILED", "msg": "..."}.
_FE_REJECTION = re.compile(r"[\"']status[\"']\s*:\s*[\"']\w+[\"']\s*,\s*[\"']msg[\"']\s*:")


def sniff(text: str) -> str | None:
    """Return ``stream_load_response`` if the text holds a load reply object."""
    if _REPLY_START.search(text) and _STATUS.search(text) and (_IDENTITY.search(text) or _FE_REJECTION.search(text)):
        return KINDS[0]
    return None


def _normalise(name: str) -> str:
    return name.replace("_", "").replace(" ", "").lower()


def _convert(value: Any, how: str) -> Any:
    if how == "text":
        return None if value is None else str(value)
    if how == "bool":
        if isinstance(value, str):
            return value.strip().lower() == "true"
        return bool(value)
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if how == "ms" else int(number)


def _line_of(text: str, pos: int) -> tuple[int, str]:
    line_no = text.count("\n", 0, pos) + 1
    return line_no, text.split("\n")[line_no - 1]


def replies(text: str) -> list[tuple[int, dict[str, Any]]]:
    """Every reply object in the text, with the line it starts on.

    Parameters
    ----------
    text : str
        A reply, or a transcript (curl command, mysql session, log line) holding replies.

    Returns
    -------
    list of (int, dict)
        ``(line_no, reply)`` for every object that has a ``Status`` field.

    Raises
    ------
    ProfileParseError
        When an object is malformed beyond what published replies do, or cut short.
    """
    text = "\n".join(line for _, line in numbered_lines(text))
    found = []
    pos = 0
    while True:
        start = _REPLY_START.search(text, pos)
        if not start:
            break
        try:
            obj, end = loads_at(text, start.start())
        except RelaxedJSONError as exc:
            line_no, line = _line_of(text, exc.pos)
            raise ProfileParseError(f"malformed load reply: {exc}", line_no, line) from exc
        if isinstance(obj, dict) and any(_normalise(k) == "status" for k in obj):
            found.append((_line_of(text, start.start())[0], obj))
        pos = end
    return found


def parse(text: str, kind: str = KINDS[0]) -> Profile:
    """Parse a Stream Load / transaction / group-commit reply.

    The last reply in the text gives the summary (in a transcript it is the latest state);
    every reply's fields become item rows under ``reply[i]``.

    Parameters
    ----------
    text : str
        The reply or a transcript holding it.
    kind : str, optional
        Must be ``stream_load_response``.

    Returns
    -------
    Profile
        Summary keys: ``status``, ``label``, ``txn_id``, ``message``, ``total_rows``,
        ``loaded_rows``, ``filtered_rows``, ``unselected_rows``, ``load_bytes``,
        ``load_time_ms`` and its parts (`TIME_PARTS`), ``group_commit``,
        ``two_phase_commit``, ``error_url``, ``reply_count`` (how many were found), as
        present. The FE's rejection (``{"status": "FAILED", "msg": ...}``, lower-case keys,
        no transaction) gives ``status`` and ``message`` only.

    Raises
    ------
    ProfileParseError
        When no reply is found or a reply is malformed.
    """
    found = replies(text)
    if not found:
        raise ProfileParseError("no Stream Load reply (a JSON object with a Status field) found")
    builder = ProfileBuilder(kind)
    for index, (line_no, reply) in enumerate(found):
        path = f"reply[{index}]"
        for name, value in reply.items():
            mapped = SUMMARY_FIELDS.get(_normalise(name))
            if isinstance(value, (dict, list)):
                builder.add_number(path, name, None, None, value, line_no)
                continue
            if mapped and mapped[1] in ("int", "ms"):
                number = _convert(value, mapped[1])
                builder.add_number(path, name, number, "ms" if mapped[1] == "ms" else "count", value, line_no)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                builder.add_number(path, name, value, "ms" if name.endswith("TimeMs") else "count", value, line_no)
            else:
                builder.add_number(path, name, None, None, value, line_no)
    _, last = found[-1]
    for name, value in last.items():
        mapped = SUMMARY_FIELDS.get(_normalise(name))
        if mapped:
            key, how = mapped
            builder.summary.setdefault(key, _convert(value, how))
    builder.summary["reply_count"] = len(found)
    if "load_time_ms" in builder.summary:
        builder.summary["total_ms"] = builder.summary["load_time_ms"]
    return builder.build()
