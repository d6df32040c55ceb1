"""YugabyteDB: a YSQL server at a ``yugabytedb://`` URL, through psycopg2."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, ClassVar, Sequence

from ingestlab import anatomy
from ingestlab.engines.base import EngineStyle
from ingestlab.engines.capabilities import CommitVariants, GroupCommit, LoadSetting
from ingestlab.engines.postgres.adapter import Postgres
from ingestlab.engines.postgres.capabilities import PostgresLoadSettings, PostgresProfiledStatement, PostgresUpsert

#: Session settings of the study's script, off: every setting starts from them (a session keeps what it set).
_YB_OFF = {"yb_disable_transactional_writes": "off", "yb_enable_upsert_mode": "off"}


class YugabyteDBCommitVariants(CommitVariants):
    """YugabyteDB's write paths: transactional, non-transactional, upsert mode."""

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "transactional": {"yb_disable_transactional_writes": "off", "yb_enable_upsert_mode": "off"},
        "non_transactional": {"yb_disable_transactional_writes": "on"},
        "upsert_mode": {"yb_enable_upsert_mode": "on"},
    }


class YugabyteDBGroupCommit(GroupCommit):
    """PostgreSQL's WAL settings do not reach DocDB's Raft log: no grouping variant to vary."""

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {"default": {}}
    NOTE = ("YugabyteDB replicates each write through its tablets' Raft logs, which batch "
            "concurrent writes themselves; PostgreSQL's commit_delay does not apply")


class YugabyteDBUpsert(PostgresUpsert):
    """PostgreSQL's operations, and the seed's blind write: a plain INSERT under ``yb_enable_upsert_mode``."""

    OPERATIONS: ClassVar[tuple[str, ...]] = ("insert", "overwrite", "blind_overwrite")

    def write_sql(self, operation: str, table: str, columns: Sequence[str], key: str, n_rows: int) -> str:
        """``blind_overwrite``: a plain multi-row ``INSERT`` (run under ``yb_enable_upsert_mode``)."""
        if operation == "blind_overwrite":
            return self.engine.sql.insert_sql(table, columns, n_rows)
        return super().write_sql(operation, table, columns, key, n_rows)

    def prepare_write(self, operation: str, table: str, columns: Sequence[str], key: str,
                      chunk: Any) -> Callable[[], Any]:
        """As :meth:`Upsert.prepare_write`; ``blind_overwrite`` runs on :meth:`YugabyteDB.upsert_mode_conn` (opened now)."""
        call = super().prepare_write(operation, table, columns, key, chunk)
        if operation != "blind_overwrite":
            return call
        conn = self.engine.upsert_mode_conn()
        sql, params = call.sql, call.params

        def write() -> None:
            with conn.cursor() as cur:
                cur.execute(sql, params)
        return write


class YugabyteDBProfiledStatement(PostgresProfiledStatement):
    """Each INSERT under ``EXPLAIN (ANALYZE, DIST)``."""

    PROFILE_KIND = "yugabyte_explain"

    def recorder(self, table: str, columns: Sequence[str]) -> anatomy.Recorder:
        """Each INSERT run under ``EXPLAIN (ANALYZE, DIST)``: planning, execution and DocDB's counters.

        Parts ``planning`` and ``execution``; extras ``storage_execution`` (ms spent in DocDB,
        inside execution) and the storage request counts (:attr:`STORAGE_COUNTERS`, ``count``).
        """
        recorder = _ExplainRecorder(self.engine, table, columns)
        recorder.sql = self.engine.EXPLAIN_PREFIX + recorder.sql
        return recorder


class YugabyteDBLoadSettings(PostgresLoadSettings):
    """The seed's settings: transactional or not, upsert mode, packed rows."""

    #: The seed's settings (notebook 05), all per session but packed rows, a tserver flag.
    SETTINGS: ClassVar[dict[str, LoadSetting]] = {
        "default": LoadSetting("transactional writes, INSERT reads before it writes (the seed's purple 'default')",
                               server=_YB_OFF),
        "non_transactional": LoadSetting(
            "yb_disable_transactional_writes = on: each row written straight to the regular DB, without a "
            "distributed transaction (no atomicity across rows; the seed's orange)",
            server={**_YB_OFF, "yb_disable_transactional_writes": "on"}),
        "upsert_mode": LoadSetting(
            "yb_enable_upsert_mode = on: INSERT writes without reading the key first (an existing row is "
            "replaced; secondary indexes may go stale; the seed's blue)", server={**_YB_OFF, "yb_enable_upsert_mode": "on"}),
        "packed_row": LoadSetting(
            "packed rows: one DocDB entry per row instead of one per column (the seed's gray); a tserver flag, "
            "so the cluster must have been started with it (compose: --tserver_flags=ysql_enable_packed_row=true)",
            server=_YB_OFF, server_flags={"ysql_enable_packed_row": "true"}),
    }


class YugabyteDB(Postgres):
    """YugabyteDB's YSQL (PostgreSQL's executor over the DocDB storage layer); differs from :class:`Postgres` here.

    No local server (no binaries here): ``yugabytedb://yugabyte@127.0.0.1:5433/yugabyte``
    (``compose/yugabytedb.yml``). The bulk path is ``COPY`` as in PostgreSQL. The commit
    variants are session settings, so they work on any server:

    * ``transactional`` — the default path: each write is a distributed transaction
      (provisional records, then the transaction status tablet);
    * ``non_transactional`` — ``yb_disable_transactional_writes = on``: writes skip the
      transaction machinery (each batch is applied directly, without atomicity across rows);
    * ``upsert_mode`` — ``yb_enable_upsert_mode = on``: INSERT writes blindly, without the
      read that checks for an existing key.

    The anatomy runs each INSERT under ``EXPLAIN (ANALYZE, DIST)`` (text) and reads planning,
    execution and the storage layer's counters with ``ingestlab.profiles``.

    Notebook 03's operations: ``insert`` (``INSERT … VALUES``), ``overwrite`` (``INSERT … ON
    CONFLICT (id) DO UPDATE``: DocDB reads the row first) and ``blind_overwrite`` — the
    YugabyteDB study's "Upsert": the same ``INSERT`` with ``yb_enable_upsert_mode = on``, which
    writes the new row version without reading whether the key exists. It runs on a
    connection of its own that has the setting on from the start (:meth:`upsert_mode_conn`),
    so the measuring connection never carries it and no ``SET`` is inside the clock.
    """

    NAME = "yugabytedb"
    WIRE = dataclasses.replace(Postgres.WIRE, schemes=("yugabytedb",), default_port=5433)
    STYLE = EngineStyle(title="YugabyteDB", colour="#AA4499", marker="D", words={
        "transactional": "transactional writes", "upsert_mode": "upsert mode (no read before write)",
        "packed_row": "packed rows",
    })
    HAS_LOCAL_SERVER = False
    _INSTRUMENT_SETTINGS: ClassVar[dict[str, str]] = {}
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        **Postgres.CAPABILITIES, "commit_variants": YugabyteDBCommitVariants, "group_commit": YugabyteDBGroupCommit,
        "upsert": YugabyteDBUpsert, "profiled_statement": YugabyteDBProfiledStatement,
        "load_settings": YugabyteDBLoadSettings,
        "commit_counters": ("commits are Raft log writes on the tablet servers; the SQL layer's WAL statistics "
                            "do not count them"),
        # a cluster the lab does not manage: no memory budget (notebook 03 by URL is issue J's)
        "memory_budget": "a cluster's memory is set in its tserver flags, not per session",
    }
    SESSION_SETTINGS: ClassVar[frozenset[str]] = Postgres.SESSION_SETTINGS | {
        "yb_disable_transactional_writes", "yb_enable_upsert_mode"}
    #: Session setting of the blind write (the seed's "Upsert").
    BLIND_WRITE_SETTINGS: ClassVar[dict[str, str]] = {"yb_enable_upsert_mode": "on"}
    #: Statement prefix of the anatomy (the INSERT follows).
    EXPLAIN_PREFIX: ClassVar[str] = "EXPLAIN (ANALYZE, DIST) "
    #: Storage-layer counters of the EXPLAIN summary recorded per statement.
    STORAGE_COUNTERS: ClassVar[tuple[str, ...]] = (
        "storage_write_requests", "storage_flush_requests", "storage_read_requests", "catalog_read_requests")

    def __init__(self, url=None):
        super().__init__(url)
        self._upsert_conn = None

    def upsert_mode_conn(self):
        """The connection of blind writes: autocommit, :attr:`BLIND_WRITE_SETTINGS` on for its session."""
        if self._upsert_conn is None:
            conn = self.connect()
            for name, value in self.BLIND_WRITE_SETTINGS.items():
                self.execute("SELECT set_config(%s, %s, false)", [name, value], conn=conn)
            self._upsert_conn = conn
        return self._upsert_conn

    def close(self) -> None:
        conn, self._upsert_conn = self._upsert_conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a broken connection must not stop the shutdown
                pass
        super().close()

    def _settle(self, table: str, timeout_s: float = 600.0) -> None:
        """Fresh statistics (``ANALYZE``). DocDB's flushes and compactions run in the tablet servers and
        cannot be awaited from YSQL; ``CHECKPOINT`` and autovacuum do not apply."""
        self.execute(f"ANALYZE {self.sql.quote(table)}")

class _ExplainRecorder(anatomy.Recorder):
    """Parses each statement's ``EXPLAIN (ANALYZE, DIST)`` output (see :meth:`YugabyteDBProfiledStatement.recorder`)."""

    PASS = "explain"
    SOURCE = "EXPLAIN (ANALYZE, DIST)"
    READS_ROWS = True

    def statement(self, result: Any, row: Sequence[Any]) -> None:
        from ingestlab.profiles import parse

        kind = self.engine.capability("profiled_statement").PROFILE_KIND
        summary = parse("\n".join(str(r[0]) for r in result), kind).summary
        self.parts.append([(name, float(summary[key]), f"{self.SOURCE} {key}")
                           for name, key in (("planning", "planning_ms"), ("execution", "execution_ms"))
                           if key in summary])
        found = [("storage_execution", float(summary["storage_execution_ms"]), math.nan,
                  f"{self.SOURCE} storage_execution_ms")] if "storage_execution_ms" in summary else []
        found += [(key, math.nan, float(summary[key]), f"{self.SOURCE} {key}")
                  for key in self.engine.STORAGE_COUNTERS if key in summary]
        self.extras.append(found)
