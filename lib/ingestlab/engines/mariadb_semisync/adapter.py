"""MariaDB semi-synchronous replication: the lab's primary and one replica, measured on the primary."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Sequence

from ingestlab.engines.base import EngineStyle
from ingestlab.engines.capabilities import CommitVariants, GroupCommit, LinkDelay
from ingestlab.engines.mariadb.adapter import MariaDB, MariaDBGroupCommit
from ingestlab.engines.mysql.adapter import MySQLProfiledStatement, _ProfileRecorder, _StagesRecorder
from ingestlab.errors import DataLossError, EngineUnavailableError, ServerError
from ingestlab.servers.base import LocalServer

#: The primary's ``rpl_semi_sync_master_*`` switches the variants turn.
_ENABLED, _WAIT_POINT = "rpl_semi_sync_master_enabled", "rpl_semi_sync_master_wait_point"


class SemiSyncCommitVariants(CommitVariants):
    """What a commit on the primary waits for (notebook 01), the binary log synced at every commit in each.

    ``semisync``: ``AFTER_SYNC`` (MariaDB's default wait point): the commit is written and synced
    to the primary's binary log, then waits for the replica to acknowledge that it has written
    the event to its relay log, and only then commits in InnoDB: no client of the primary sees
    a row the replica may lack. ``after_commit``: ``AFTER_COMMIT``: the commit completes in
    InnoDB first (other clients see it) and the client's reply waits for the acknowledgement.
    ``async_replica``: semi-sync off: the commit waits for the primary's own binary log and redo log
    only; the replica follows when it can (its rows are counted all the same, after waiting).
    """

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "semisync": {_WAIT_POINT: "AFTER_SYNC"},  # semi-sync is on unless a variant turns it off
        "after_commit": {_WAIT_POINT: "AFTER_COMMIT"},
        "async_replica": {_ENABLED: "0"},  # the server reads a boolean of this plugin-born variable back as 0/1
    }


class SemiSyncGroupCommit(GroupCommit):
    """MariaDB's binlog group commit (see :class:`~ingestlab.engines.mariadb.adapter.MariaDBGroupCommit`), semi-sync on.

    The binary log is always on here, so ``default`` is MariaDB's ``binlog`` with semi-sync
    (``AFTER_SYNC``): one replica acknowledgement serves a whole group (the replica acknowledges
    the group's last event); ``binlog_wait_8`` widens the group as MariaDB's does; ``async_replica``
    takes the replica's wait away.
    """

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "default": {},
        "binlog_wait_8": {k: v for k, v in MariaDBGroupCommit.VARIANTS["binlog_wait_8"].items()
                          if k.startswith("binlog_commit_wait")},
        "async_replica": SemiSyncCommitVariants.VARIANTS["async_replica"],
    }
    NOTE = ("MariaDB groups binlog commits (binlog_commit_wait_count/usec widen the group); with semi-sync one "
            "acknowledgement of the replica releases every commit of a group")


class SemiSyncLinkDelay(LinkDelay):
    """The replication stream between primary and replica, delayed both ways: events out, acknowledgements back.

    A semi-sync commit waits for one acknowledgement, so a one-way delay ``d`` should cost it
    one round trip, ``2d``; an ``async_replica`` commit waits for none. :meth:`route` also works on a
    running pair: the replica is pointed at the proxy where it stands (its GTID position kept).
    """

    def route(self) -> None:
        """The replication stream through a Toxiproxy listener: at start, or now when the pair runs."""
        from ingestlab import latency

        reason = latency.unavailable_reason()
        if reason is not None:  # before anything starts
            raise EngineUnavailableError(f"{self.engine.NAME}: no link_delay: {reason}")
        server = self.engine.server
        if server is None:
            super().route()  # says the nodes are not the lab's
        server.route()


#: The primary's semi-sync counters the anatomy reports per statement, and what each counts.
SEMISYNC_COUNTERS: dict[str, str] = {
    "Rpl_semi_sync_master_tx_wait_time": "microseconds commits waited for the replica's acknowledgement, on the "
                                         "primary's clock",
    "Rpl_semi_sync_master_tx_waits": "commits that waited for the replica's acknowledgement",
    "Rpl_semi_sync_master_yes_tx": "commits the replica acknowledged in time",
    "Rpl_semi_sync_master_no_tx": "commits made without the replica's acknowledgement (the fall-back)",
    "Rpl_semi_sync_master_get_ack": "acknowledgements the primary received",
}


class _SemiSyncParts:
    """A MariaDB recorder whose replica wait is the part ``semisync_wait``, with the semi-sync counters beside it.

    The committing session waits for the replica in the stage ``Waiting for semi-sync ACK from
    slave`` (MariaDB's ``stage_waiting_for_semi_sync_ack_from_slave``, between the binary log's
    sync and InnoDB's commit with ``AFTER_SYNC``, after the commit with ``AFTER_COMMIT``): that
    stage, timed per statement by the same instrument as the other stages, is ``semisync_wait``.
    :data:`SEMISYNC_COUNTERS` (read around the pass, as MariaDB's InnoDB counters are) are kept
    as counts, not parts: their ``tx_wait_time`` is the same wait on another clock, a cross-check
    of the part, and would count it twice.
    """

    STAGE = "waiting_for_semi_sync_ack_from_slave"
    PART = "semisync_wait"

    def end(self) -> None:
        super().end()
        self.parts = [[(self.PART if c == self.STAGE else c, ms, src) for c, ms, src in s] for s in self.parts]
        self.unobserved_parts = [[(self.PART if c == self.STAGE else c, ms, src) for c, ms, src in s]
                                 for s in self.unobserved_parts]
        for name, meaning in SEMISYNC_COUNTERS.items():
            if name.lower() in self.counters:
                value, _ = self.counters[name.lower()]
                self.counters[name.lower()] = (value, f"SHOW GLOBAL STATUS {name}, change per statement ({meaning})")


class _SemiSyncStagesRecorder(_SemiSyncParts, _StagesRecorder):
    """MariaDB's performance_schema stages (see :class:`_SemiSyncParts`)."""


class _SemiSyncProfileRecorder(_SemiSyncParts, _ProfileRecorder):
    """MariaDB's SHOW PROFILE stages (see :class:`_SemiSyncParts`)."""


class SemiSyncProfiledStatement(MySQLProfiledStatement):
    """MariaDB's stages of each INSERT on the primary, the replica's wait among them as ``semisync_wait``."""

    def recorder(self, table, columns):
        """MariaDB's recorder (performance_schema, else SHOW PROFILE) with :class:`_SemiSyncParts`."""
        chosen = type(super().recorder(table, columns))
        return {_StagesRecorder: _SemiSyncStagesRecorder, _ProfileRecorder: _SemiSyncProfileRecorder}[chosen](
            self.engine, table, columns)


class MariaDBSemiSync(MariaDB):
    """MariaDB with a semi-synchronous replica: every commit on the primary waits for the replica's acknowledgement.

    ``engines.get("mariadb_semisync")`` starts a primary and one replica (Debian's MariaDB
    10.11) in ``.lab/mariadb_semisync-<pid>-<n>/`` (see
    :class:`~ingestlab.engines.mariadb_semisync.server.MariaDBSemiSyncServer`); statements run on
    the primary, as :class:`MariaDB`'s do on its server, with the primary's binary log synced
    at every commit. The commit variants (:class:`SemiSyncCommitVariants`) say what a commit
    waits for.

    **Nothing lost, no silent fall-back.** When the replica does not acknowledge within
    ``rpl_semi_sync_master_timeout`` MariaDB goes on asynchronously, saying nothing to the
    client. The lab reads ``Rpl_semi_sync_master_no_tx`` (commits made without the
    acknowledgement) and ``Rpl_semi_sync_master_status`` before each table is reset and when its
    rows are counted; a commit that fell back ends the run with :class:`ServerError` (a lost
    server: exit 5), what was measured before kept. Counting a table's rows waits (at most
    :attr:`CATCH_UP_S`) for the replica to apply everything the primary logged
    (``MASTER_GTID_WAIT``), counts on both, and raises :class:`DataLossError` when they differ.

    Local only (no URL scheme): the lab's own primary and replica.
    """

    NAME = "mariadb_semisync"
    WIRE = dataclasses.replace(MariaDB.WIRE, schemes=())
    STYLE = EngineStyle(title="MariaDB semi-sync", colour="#44AA99", marker="^", words={
        **MariaDB.STYLE.words,
        "semisync": "waits for the replica's receipt, then commits",
        "after_commit": "commits, then waits for the replica's receipt",
        "async_replica": "replica follows asynchronously (no wait)",
        "semisync_wait": "waiting for the replica",
    })
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        **MariaDB.CAPABILITIES, "commit_variants": SemiSyncCommitVariants, "group_commit": SemiSyncGroupCommit,
        "upsert": "notebook 03 reads existing keys under a memory budget on one server; a replica adds nothing to "
                  "those reads (use mariadb)",
        "memory_budget": "a memory cgroup holds one server's processes; here a primary and its replica run",
        "profiled_statement": SemiSyncProfiledStatement, "link_delay": SemiSyncLinkDelay,
    }
    #: MariaDB's InnoDB counters and the primary's semi-sync ones (:data:`SEMISYNC_COUNTERS`).
    ANATOMY_COUNTERS: ClassVar[tuple[str, ...]] = (*MariaDB.ANATOMY_COUNTERS, *SEMISYNC_COUNTERS)
    #: Seconds :meth:`_count_rows` waits for the replica to apply what the primary logged.
    CATCH_UP_S: ClassVar[float] = 60.0

    def __init__(self, url=None, **kwargs):
        super().__init__(url, **kwargs)
        self._no_tx0: int | None = None

    def _make_server(self) -> LocalServer:
        from ingestlab.engines.mariadb_semisync.server import MariaDBSemiSyncServer

        return MariaDBSemiSyncServer()

    # -- the replication watch ---------------------------------------------------------------
    def start(self) -> "MariaDBSemiSync":
        super().start()
        self._watch()
        return self

    def apply_settings(self, settings: dict[str, str]) -> dict[str, str]:
        in_force = super().apply_settings(settings)
        self._watch()
        return in_force

    def _watch(self) -> None:
        """From now on, a commit made without the replica's acknowledgement ends the run (:meth:`check_replication`)."""
        if self.is_local and self._conn is not None:
            self._no_tx0 = int(self.server.primary_status()["Rpl_semi_sync_master_no_tx"])

    def check_replication(self) -> None:
        """Raise :class:`ServerError` in one line when a commit fell back to asynchronous replication.

        Semi-sync on, MariaDB commits without the replica once a commit has waited
        ``rpl_semi_sync_master_timeout``: ``Rpl_semi_sync_master_no_tx`` grows, and
        ``Rpl_semi_sync_master_status`` is OFF until the replica catches up. Either ends the run.
        """
        if self._no_tx0 is None:
            return
        status = self.server.primary_status()
        if status[_ENABLED] != "ON":
            return
        fell_back = int(status["Rpl_semi_sync_master_no_tx"]) - self._no_tx0
        if fell_back > 0 or status["Rpl_semi_sync_master_status"] != "ON":
            raise ServerError(
                f"{self.NAME}: the replica stopped acknowledging ({fell_back} commits made without it after waiting "
                f"rpl_semi_sync_master_timeout = {status['rpl_semi_sync_master_timeout']} ms, semi-sync status {status['Rpl_semi_sync_master_status']};"
                f" {self.server.replica_state()}); MariaDB fell back to asynchronous replication, so the run stops here")

    def metadata(self) -> dict:
        """MariaDB's, and ``replication``: the replica's settings and version, the link's proxy and delay, the start's seconds."""
        meta = super().metadata()
        if self.is_local:
            server = self.server
            proxies = server.toxiproxy
            meta["replication"] = {
                "replica_settings": dict(server.replica.settings),
                "replica_version": self._replica_scalar("SELECT VERSION()"),
                "through_proxy": proxies is not None,
                "link_delay_one_way_ms": proxies.delay_ms if proxies is not None else 0,
                "start_s": server.start_s,
            }
        return meta

    def _replica_scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The one value ``sql`` returns on the replica; :class:`ServerError` in one line when it cannot be reached."""
        import pymysql

        try:
            with self.server.replica_cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchone()[0]
        except pymysql.err.MySQLError as exc:
            raise ServerError(f"{self.NAME}: the replica did not answer {sql.split('(')[0]!r}: {exc}") from exc

    # -- tables: reset and counted on both ---------------------------------------------------
    def _reset_table(self, table, columns, **kwargs) -> None:
        self.check_replication()
        super()._reset_table(table, columns, **kwargs)

    def _count_rows(self, table: str) -> int:
        """The rows of ``table`` on the primary, once the replica holds as many (else :class:`DataLossError`)."""
        self.check_replication()
        rows = super()._count_rows(table)
        if not self.is_local:
            return rows
        on_replica = self.replica_rows(table)
        if on_replica != rows:
            raise DataLossError(f"{self.NAME}: {table} holds {rows} rows on the primary and {on_replica} on the replica "
                                "after it applied everything the primary logged")
        return rows

    def replica_rows(self, table: str) -> int:
        """``COUNT(*)`` of ``table`` on the replica, once it has applied the primary's whole binary log.

        Raises
        ------
        ServerError
            When the replica has not caught up within :attr:`CATCH_UP_S` (or cannot be reached).
        """
        position = self.execute("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]
        if self._replica_scalar("SELECT MASTER_GTID_WAIT(%s, %s)", (position, self.CATCH_UP_S)) != 0:
            raise ServerError(f"{self.NAME}: the replica did not reach the primary's binary log position {position} "
                              f"within {self.CATCH_UP_S:.0f} s ({self.server.replica_state()})")
        return int(self._replica_scalar(f"SELECT COUNT(*) FROM {self.sql.quote(table)}"))
