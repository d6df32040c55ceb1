"""MariaDB: the lab's private ``mariadbd``, or any server at a ``mariadb://`` URL."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ingestlab.engines.base import EngineStyle
from ingestlab.engines.capabilities import GroupCommit
from ingestlab.engines.mariadb.sql import MariaDBSQL
from ingestlab.engines.mysql.adapter import MySQL, MySQLTableModels
from ingestlab.servers.base import LocalServer


class MariaDBGroupCommit(GroupCommit):
    """MariaDB's binlog group commit and redo-log flush.

    With the binary log on, a commit is prepared in InnoDB (redo log synced), written to the
    binary log (synced, ``sync_binlog = 1``) and committed; MariaDB's binlog group commit
    lets one leader write and sync the binary log for every commit queued behind it, and
    ``binlog_commit_wait_count`` / ``binlog_commit_wait_usec`` make the leader wait for that
    many commits (or that long) to widen the group. ``flush_2`` writes the redo log at
    commit and syncs it about once a second (a crash of the machine loses up to a second).
    """

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "default": {},
        "binlog": {"innodb_flush_log_at_trx_commit": "1", "log_bin": "mariadb-bin", "server_id": "1",
                   "sync_binlog": "1"},
        "binlog_wait_8": {"innodb_flush_log_at_trx_commit": "1", "log_bin": "mariadb-bin", "server_id": "1",
                          "sync_binlog": "1", "binlog_commit_wait_count": "8", "binlog_commit_wait_usec": "2000"},
        "flush_2": {"innodb_flush_log_at_trx_commit": "2"},
    }
    NOTE = ("MariaDB groups InnoDB redo-log syncs by itself and, with the binary log on, binlog "
            "commits (binlog_commit_wait_count/usec widen the group)")


class MariaDBTableModels(MySQLTableModels):
    """MySQL's models with Aria in MyISAM's place."""

    MODELS: ClassVar[dict[str, str]] = {
        **{k: v for k, v in MySQLTableModels.MODELS.items() if k != "myisam"},
        "aria": "Aria table with a primary key (MariaDB's crash-safe MyISAM): no transactions, no redo log",
    }
    COMMIT_FREE_MODELS: ClassVar[tuple[str, ...]] = ("aria",)


class MariaDB(MySQL):
    """MariaDB through mysqlclient or PyMySQL (see :class:`MySQL`); differs from :class:`MySQL` in its local server and settings table.

    ``engines.get("mariadb")`` starts the machine's MariaDB (Debian's 10.11) in
    ``.lab/mariadb-<pid>/`` (see :class:`~ingestlab.engines.mariadb.server.MariaDBServer`); the
    commit variants ``flush_1``/``flush_2``/``flush_0`` restart it with
    ``--innodb_flush_log_at_trx_commit=1|2|0``. Every variant also carries
    :attr:`_INSTRUMENT_SETTINGS`: ``local_infile`` for the bulk path, and performance_schema
    with the stage and statement history the anatomy reads (stage instruments are off by
    default; the history is consumed only when the ``*_current`` consumers are on too).
    These instruments cost every statement a little, in every variant alike.

    ``mariadb://user:pw@host:3306/db`` reaches a server the lab does not manage; see
    :class:`MySQL` for what :meth:`apply_settings` may do there (``?set_global=true``).
    """

    #: MariaDB 10.5+: ``SET GLOBAL innodb_max_purge_lag_wait = 0`` returns once the history list is empty.
    PURGE_WAIT_SQL = "SET GLOBAL innodb_max_purge_lag_wait = 0"
    #: Set ON, writes every dirty page and a checkpoint, then returns (in release builds since MDEV-30000;
    #: 0.1 s a settle here instead of the page cleaner's next tick, a second later).
    CHECKPOINT_VARIABLE = "innodb_log_checkpoint_now"

    NAME = "mariadb"
    WIRE = dataclasses.replace(MySQL.WIRE, schemes=("mariadb",))
    STYLE = EngineStyle(title="MariaDB", colour="#009E73", marker="o", words={
        **MySQL.STYLE.words, "binlog": "binary log, synced", "binlog_wait_8": "binary log, waits for 8 commits",
    })
    HAS_LOCAL_SERVER = True
    SQL = MariaDBSQL

    CAPABILITIES: ClassVar[dict[str, Any]] = {
        **MySQL.CAPABILITIES, "group_commit": MariaDBGroupCommit, "table_models": MariaDBTableModels,
    }
    _INSTRUMENT_SETTINGS: ClassVar[dict[str, str]] = {
        "local_infile": "ON",
        "performance_schema": "ON",
        "performance_schema_instrument": "stage/%=ON",
        "performance_schema_consumer_events_stages_current": "ON",
        "performance_schema_consumer_events_stages_history_long": "ON",
        "performance_schema_consumer_events_statements_current": "ON",
        "performance_schema_consumer_events_statements_history_long": "ON",
        "performance_schema_events_stages_history_long_size": "100000",  # ~16 stages per INSERT; notebook 01
        # reads it after each pass of 201 INSERTs (a profiled one and its unobserved block)
        "performance_schema_events_statements_history_long_size": "20000",
    }
    #: MariaDB records where each global value came from; COMPILE-TIME and AUTO (sized at
    #: start-up from the machine) are the server's own defaults.
    SETTINGS_SQL: ClassVar[str] = (
        "SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE FROM information_schema.SYSTEM_VARIABLES "
        "WHERE GLOBAL_VALUE_ORIGIN NOT IN ('COMPILE-TIME', 'AUTO') ORDER BY 1")

    NATIVE_CLIENT: ClassVar[str] = "mariadb"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        from ingestlab.engines.mariadb.server import unavailable_reason

        return unavailable_reason()

    def _make_server(self) -> LocalServer:
        from ingestlab.engines.mariadb.server import MariaDBServer

        return MariaDBServer()
