"""Apache Doris: a cluster at a ``doris://`` URL, through its MySQL protocol and Stream Load."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from typing import Any, ClassVar, Iterable, Sequence

from ingestlab.engines.base import EngineStyle
from ingestlab.engines.capabilities import CommitVariants, GroupCommit
from ingestlab.engines.doris.sql import DorisSQL
from ingestlab.engines.starrocks.adapter import StarRocks, StarRocksProfiledStatement, StarRocksTableModels
from ingestlab.engines.stream_load_client import StreamLoadResult
from ingestlab.errors import ConfigError, LoadError, UnsupportedOperationError
from ingestlab.polling import poll


class DorisCommitVariants(CommitVariants):
    """Doris's group commit modes, set per session."""

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "off_mode": {"group_commit": "off_mode"},
        "sync_mode": {"group_commit": "sync_mode"},
        "async_mode": {"group_commit": "async_mode"},
    }


class DorisGroupCommit(GroupCommit):
    """Notebook 04's variants are the same three modes, set per session on every client."""

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = DorisCommitVariants.VARIANTS
    NOTE = ("Doris groups INSERT … VALUES and Stream Loads of many clients into one internal load "
            "when group_commit is sync_mode or async_mode, committed every group_commit_interval_ms")


class DorisProfiledStatement(StarRocksProfiledStatement):
    """StarRocks' capture of each INSERT's profile, parsed as Doris prints it."""

    PROFILE_KIND = "doris_profile"


class DorisTableModels(StarRocksTableModels):
    """Doris' key models, hash-distributed into buckets (tablets)."""

    #: Doris has no PRIMARY KEY model: a keyed table is UNIQUE KEY (merge-on-write, see :class:`DorisSQL`).
    MODELS: ClassVar[dict[str, str]] = dict(DorisSQL.KEY_CLAUSES)
    KEYED_MODEL = "unique"


class Doris(StarRocks):
    """Apache Doris; a subclass of :class:`StarRocks`, its nearest relative, overriding what differs.

    StarRocks began as a fork of Doris, and what the lab uses is still shared: the FE speaks
    MySQL, tables are ``DUPLICATE/AGGREGATE/UNIQUE KEY`` with ``DISTRIBUTED BY HASH ...
    BUCKETS n`` and ``PROPERTIES``, Stream Load is the same PUT redirected to a backend, and
    ``SET enable_profile = true`` turns profiling on. What differs is overridden here: no
    PRIMARY KEY model, the commit variants (group commit), the profile (Doris serves it over
    the FE's HTTP API, ``/api/profile/text?query_id=``), the version string and the settings
    table. URL: ``doris://root@127.0.0.1:9030/ingestlab?http_port=8030`` with the query keys
    of :class:`StarRocks` plus ``group_commit_interval_ms`` (a default table property).

    **Group commit.** The variants set the session variable ``group_commit`` to
    ``off_mode``, ``sync_mode`` or ``async_mode``; Stream Load then carries the
    ``group_commit`` header and no label (a labelled load is never group-committed). A table
    commits its group every ``group_commit_interval_ms`` (table property, 10 000 ms by
    default): in ``sync_mode`` each statement waits for that commit, in ``async_mode`` it
    returns once its data is in the write-ahead log and becomes visible at the commit, so
    :meth:`_count_rows` waits one interval first.
    """

    NAME = "doris"
    STYLE = EngineStyle(title="Apache Doris", colour="#882255", marker="s", words={
        "off_mode": "group commit off", "sync_mode": "group commit, sync", "async_mode": "group commit, async",
    })
    SQL = DorisSQL
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        **StarRocks.CAPABILITIES, "commit_variants": DorisCommitVariants, "group_commit": DorisGroupCommit,
        "profiled_statement": DorisProfiledStatement, "table_models": DorisTableModels,
    }
    TABLE_DEFAULT_KEYS = StarRocks.TABLE_DEFAULT_KEYS + ("group_commit_interval_ms",)
    WIRE = dataclasses.replace(StarRocks.WIRE, schemes=("doris",), sqlglot_dialect="doris",
                               lab_query_keys=StarRocks.WIRE.lab_query_keys + ("group_commit_interval_ms",))
    #: Doris's own group commit interval when the table sets none.
    DEFAULT_GROUP_COMMIT_INTERVAL_MS: ClassVar[int] = 10_000
    #: ``SELECT VERSION()`` answers a MySQL version; the comment names Doris's.
    VERSION_SQL: ClassVar[str] = "SELECT @@version_comment"
    SETTINGS_SQL: ClassVar[str] = "SHOW VARIABLES"
    LAST_QUERY_ID_SQL: ClassVar[str] = "SELECT LAST_QUERY_ID()"
    #: The FE's HTTP path that returns a profile as text.
    PROFILE_API: ClassVar[str] = "/api/profile/text"
    PROFILE_TEXTS: ClassVar[tuple[str, ...]] = ("doris_profile",)

    def server_version(self) -> str:
        """Doris's version (``2.1.8-rc01-...``) from ``@@version_comment``."""
        comment = str(self.execute(self.VERSION_SQL)[0][0])
        match = re.search(r"(\d+\.\d+[\w.\-]*)", comment)
        return match.group(1) if match else comment

    def _server_settings(self) -> list[tuple[str, Any]]:
        """Variables whose ``Changed`` column is set (``SHOW VARIABLES`` has it from Doris 2.0)."""
        rows = self.execute(self.SETTINGS_SQL)
        return [(row[0], row[1]) for row in rows if len(row) >= 4 and str(row[3]).lower() in ("1", "true")]

    @property
    def group_commit(self) -> str:
        """The group commit mode in force for this session (``off_mode`` unless a variant set it)."""
        return str(self._settings.get("group_commit", "off_mode"))

    def stream_load(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> StreamLoadResult:
        """Stream Load; under group commit with the ``group_commit`` header and without a label."""
        if self.group_commit == "off_mode":
            return super().stream_load(table, columns, rows)
        return self.stream_load_client().load(table, columns, rows, label=None,
                                              extra_headers={"group_commit": self.group_commit})

    def stream_load_group_headers(self, variant: str) -> dict[str, str]:
        """The ``group_commit`` header of ``variant`` (``off_mode`` sends none: a plain labelled load).

        Examples
        --------
        >>> Doris.__new__(Doris).stream_load_group_headers("async_mode")
        {'group_commit': 'async_mode'}
        """
        variants = DorisGroupCommit.VARIANTS
        if variant not in variants:
            raise ConfigError("VARIANTS", variant, "one of " + ", ".join(variants) + " for doris")
        mode = variants[variant]["group_commit"]
        return {} if mode == "off_mode" else {"group_commit": mode}

    def _count_rows(self, table: str) -> int:
        """``SELECT count(*)``; in ``async_mode`` after one group commit interval, when the rows are visible."""
        if self.group_commit == "async_mode":
            interval = self.table_defaults().get("group_commit_interval_ms", self.DEFAULT_GROUP_COMMIT_INTERVAL_MS)
            time.sleep(interval / 1000 + 0.5)
        return super()._count_rows(table)

    def _profile_texts(self, query_id: str) -> dict[str, str]:
        """The profile text from the FE's HTTP API, polled until the FE has it."""
        client = self.stream_load_client()

        def fetched() -> str:
            try:
                text = _profile_body(client.get_text(self.PROFILE_API, {"query_id": query_id}))
            except LoadError:
                return ""
            return text if text.strip() else ""

        text = poll(fetched, timeout_s=self.PROFILE_WAIT_S, interval_s=0.1)
        if not text:
            raise UnsupportedOperationError(
                f"{self.NAME}: no profile for query {query_id} at {self.PROFILE_API} after "
                f"{self.PROFILE_WAIT_S:.0f} s (Doris ≥ 2.1 with enable_profile = true)")
        return {"doris_profile": text}


def _profile_body(text: str) -> str:
    """The profile text of an API reply: plain text, or the ``data`` of a JSON envelope.

    Examples
    --------
    >>> _profile_body('{"code": 0, "data": {"profile": "Summary:"}}'), _profile_body("Summary:")
    ('Summary:', 'Summary:')
    """
    if not text.lstrip().startswith("{"):
        return text
    try:
        data = json.loads(text).get("data")
    except (json.JSONDecodeError, AttributeError):
        return text
    if isinstance(data, dict):
        data = data.get("profile", "")
    return data if isinstance(data, str) else ""
