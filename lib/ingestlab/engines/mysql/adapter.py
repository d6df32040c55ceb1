"""MySQL over InnoDB: any server at a ``mysql://`` URL, through mysqlclient or PyMySQL (MariaDB subclasses it)."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import tempfile
import threading
import warnings
from typing import Any, Callable, ClassVar, Iterable, Sequence

from ingestlab import anatomy, datagen, journal, timing
from ingestlab.engines.base import EngineStyle, lock_wait_s
from ingestlab.engines.capabilities import (
    BulkLoad,
    CommitCounters,
    CommitVariants,
    IOCounters,
    LoadSetting,
    LoadSettings,
    MemoryBudget,
    NativeLoad,
    ProfiledStatement,
    TableModels,
    Upsert,
)
from ingestlab.engines.mysql.sql import MySQLSQL
from ingestlab.engines.mysql_protocol import MySQLProtocol, sql_value
from ingestlab.engines.sql.mysql_protocol import check_variable
from ingestlab.errors import EngineUnavailableError, ServerError, UnsupportedOperationError
from ingestlab.polling import poll

__all__ = ["LOAD_PIECE_ROWS", "MySQL", "sql_value", "stage_component"]

_TRUE = ("1", "true", "yes", "on")
# Server error codes of a LOAD DATA LOCAL that the server (or client) does not allow.
_LOCAL_INFILE_REFUSED = {1148, 2068, 3948, 4166}


#: Rows per piece of CSV the bulk path encodes (each written to the load's pipe in one write).
LOAD_PIECE_ROWS = 16_384

class MySQLCommitVariants(CommitVariants):
    """InnoDB's redo-log flush at commit.

    ``innodb_flush_log_at_trx_commit``: 1 writes and syncs the redo log at every commit,
    2 writes it at commit and syncs it about once a second, 0 does both about once a second.
    """

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "flush_1": {"innodb_flush_log_at_trx_commit": "1"},
        "flush_2": {"innodb_flush_log_at_trx_commit": "2"},
        "flush_0": {"innodb_flush_log_at_trx_commit": "0"},
    }


class MySQLUpsert(Upsert):
    """INSERT of new keys, and ``INSERT … ON DUPLICATE KEY UPDATE`` of existing ones.

    InnoDB reads the old row's page to find the duplicate.
    """


class MySQLMemoryBudget(MemoryBudget):
    """InnoDB's buffer pool of the budget, with the OS page cache in a memory cgroup or bypassed."""

    LIMITS: ClassVar[dict[str, str]] = {
        "cgroup": "innodb_buffer_pool_size of a quarter of the budget, innodb_flush_method = fsync (buffered "
                  "I/O), and the server in a memory cgroup that leaves the OS page cache the rest of the budget",
        "engine": "innodb_buffer_pool_size of the budget's size and innodb_flush_method = O_DIRECT: data files "
                  "are read and written without the OS page cache",
    }

    def cache_bytes(self, budget_bytes: int, limit: str) -> int:
        """The buffer pool's size: the share of the budget, at least 6 MiB (InnoDB's least with 16 KiB pages).

        Examples
        --------
        >>> MySQLMemoryBudget(None).cache_bytes(8 * 2**20, "cgroup") // 2**20
        6
        """
        return max(super().cache_bytes(budget_bytes, limit), 6 * 2**20)

    def settings(self, budget_bytes: int, limit: str = "engine") -> dict[str, str]:
        """Settings that hold InnoDB's caches to ``budget_bytes`` (see :attr:`LIMITS`, :meth:`cache_bytes`).

        Examples
        --------
        >>> MySQLMemoryBudget(None).settings(256 * 2**20, "cgroup")
        {'innodb_buffer_pool_size': '67108864', 'innodb_flush_method': 'fsync'}
        """
        return {"innodb_buffer_pool_size": str(self.cache_bytes(budget_bytes, limit)),
                "innodb_flush_method": "O_DIRECT" if limit == "engine" else "fsync"}


class MySQLProfiledStatement(ProfiledStatement):
    """The server's stages of each statement."""

    #: Stages from performance_schema, or from SHOW PROFILE when that is off (parsed as this kind).
    PROFILE_KIND = "mysql_stage_events"

    def recorder(self, table: str, columns: Sequence[str]) -> anatomy.Recorder:
        """The server's stages of each statement: performance_schema's history, else ``SHOW PROFILE``.

        On MariaDB 10.11 both report the same stages; performance_schema is preferred because
        its timers are nanoseconds (SHOW PROFILE prints whole microseconds, and most stages of
        an INSERT take a few), it keeps thousands of statements (SHOW PROFILE at most 100 per
        session) and it is read once, after the pass, without touching the session being
        measured. SHOW PROFILE needs no server option, so it serves servers the lab does not
        manage. Stage names become snake_case components (``starting``, ``opening_tables``,
        ``update``, ``commit``...); the change per statement of the InnoDB counters
        :attr:`ANATOMY_COUNTERS` is recorded as counts (global counters: other clients of a
        shared server add to them).
        """
        return (_StagesRecorder if self.engine._has_stage_history() else _ProfileRecorder)(self.engine, table, columns)


class MySQLTableModels(TableModels):
    """InnoDB's (and MyISAM's) tables, ``PARTITION BY KEY``."""

    MODELS: ClassVar[dict[str, str]] = {
        "no_key": "InnoDB table without a key (InnoDB adds a hidden 6-byte row id as its clustered key)",
        "primary_key": "InnoDB table clustered on its primary key",
        "primary_key_indexes": "InnoDB primary key plus three secondary indexes",
        "myisam": "MyISAM table with a primary key: no transactions, no redo log",
    }
    COMMIT_FREE_MODELS: ClassVar[tuple[str, ...]] = ("myisam",)
    #: ``PARTITION BY KEY``: at most 8192 partitions (MySQL 8 and MariaDB).
    MAX_PARTITIONS = 8192


class MySQLLoadSettings(LoadSettings):
    """InnoDB's trade-offs of a load."""

    #: Notebook 05's settings (see :class:`~ingestlab.engines.capabilities.LoadSetting`).
    SETTINGS: ClassVar[dict[str, LoadSetting]] = {
        "default": LoadSetting("the server's defaults: innodb_flush_log_at_trx_commit = 1, table with its primary key"),
        "async_commit": LoadSetting("innodb_flush_log_at_trx_commit = 2: the redo log is written at commit and "
                                    "synced about once a second (an OS crash may lose the last second)",
                                    server={"innodb_flush_log_at_trx_commit": "2"}),
        "no_unique_checks": LoadSetting("unique_checks = 0 for the session: InnoDB may skip the duplicate-key "
                                        "check of secondary unique indexes (the data must have no duplicates)",
                                        session={"unique_checks": "0"}),
        "key_after_load": LoadSetting("no primary key during the load (InnoDB clusters on a hidden row id), "
                                      "ADD PRIMARY KEY after (a table rebuild, timed apart)", key_after_load=True),
    }


class MySQLIOCounters(IOCounters):
    """MySQL's I/O counters."""

    def read(self) -> dict[str, float]:
        """Cumulative InnoDB counters: ``blocks_read`` = pages the buffer pool had to read from disk.

        Global counters: on a server the lab does not manage, other clients add to them.
        """
        marks = ", ".join(["%s"] * len(self.engine.IO_COUNTERS))
        names = self.engine.IO_COUNTERS
        rows = dict(self.engine.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({marks})", list(names)))
        return {name: float(rows.get(var, "nan")) for var, name in names.items()}


class MySQLCommitCounters(CommitCounters):
    """MySQL's commit counters."""

    def read(self) -> dict[str, float]:
        """Redo-log syncs plus, with a synced binary log, its group commits (``flushes``), and the raw counters.

        InnoDB's redo-log syncs are ``Innodb_os_log_fsyncs`` where the server has it (MySQL,
        MariaDB < 10.8); MariaDB 10.8+ counts them in ``Innodb_data_fsyncs`` with the (rarer)
        data-file syncs, so there ``flushes`` is an upper bound and commits per flush a lower
        one. With ``log_bin`` on and ``sync_binlog = 1`` every binlog group commit
        (``Binlog_group_commits``) is one more sync. Global counters: other clients of a
        shared server add to them.
        """
        marks = ", ".join(["%s"] * len(self.engine.COMMIT_COUNTERS))
        rows = self.engine.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({marks})",
                                   list(self.engine.COMMIT_COUNTERS))
        counters = {str(name): float(value) for name, value in rows}
        log_bin, sync_binlog = self.engine.execute("SELECT @@log_bin, @@sync_binlog")[0]
        redo = counters.get("Innodb_os_log_fsyncs", counters.get("Innodb_data_fsyncs", float("nan")))
        binlog = counters.get("Binlog_group_commits", 0.0) if int(log_bin) and int(sync_binlog) == 1 else 0.0
        return {"flushes": redo + binlog, **counters}


class MySQLNativeLoad(NativeLoad):
    """MySQL: the engine's own client loading a CSV file."""

    def load(self, table: str, columns: Sequence[str], path: str) -> int:
        """``mysql --local-infile=1 -e 'LOAD DATA LOCAL INFILE …'`` (MariaDB: ``mariadb``); returns the rows loaded."""
        import subprocess

        args = self.engine.connect_kwargs()
        client = shutil.which(self.engine.NATIVE_CLIENT)
        if client is None:
            raise EngineUnavailableError(f"{self.engine.NATIVE_CLIENT} (the engine's command-line client) not found")
        where = ([f"--socket={args['unix_socket']}"] if args.get("unix_socket")
                 else [f"--host={args.get('host', '127.0.0.1')}",
                       f"--port={args.get('port', self.engine.WIRE.default_port)}"])
        quoted = str(path).replace("\\", "\\\\").replace("'", "\\'")
        sql = self.engine.load_data_sql(table, columns).replace("%s", f"'{quoted}'", 1) + "; SELECT ROW_COUNT()"
        command = [client, "--no-defaults", "--local-infile=1", "--batch", "--skip-column-names", *where,
                   f"--init-command={self.engine.lock_wait_sql()}",
                   f"--user={args.get('user', '')}", args.get("database", ""), "-e", sql]
        env = {**os.environ, **({"MYSQL_PWD": str(args["password"])} if args.get("password") else {})}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise ServerError(f"{self.engine.NATIVE_CLIENT} LOAD DATA LOCAL failed ({done.returncode}): "
                              f"{done.stderr.strip()[-500:]}")
        return int(done.stdout.split()[-1])


class MySQLBulkLoad(BulkLoad):
    """``LOAD DATA LOCAL INFILE`` from the lab's CSV."""

    PATH = "load_data_local"

    def load(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
             create: Sequence[str] = ()) -> int:
        """One ``LOAD DATA LOCAL INFILE`` of the chunks as CSV, streamed through a named pipe; return the rows sent.

        The driver reads the pipe as the "file", so nothing is written to disk twice. With
        ``replace`` the table is emptied first (``TRUNCATE``); ``create`` runs first (DDL
        commits at once in MySQL: there is no load into a table created in its transaction).
        """
        dbapi = self.engine.driver.module
        folder = tempfile.mkdtemp(prefix="ingestlab-load-")
        fifo = os.path.join(folder, "rows.csv")
        os.mkfifo(fifo, 0o600)
        sent, failed = [0], []

        def feed() -> None:
            try:
                with open(fifo, "wb") as out:  # blocks until the driver opens the pipe
                    for piece in datagen.csv_chunks(chunks, rows_per_piece=LOAD_PIECE_ROWS, null="NULL"):
                        out.write(piece.data)
                        sent[0] += piece.num_rows
            except (OSError, ValueError) as exc:  # the reader went away: the statement reports why
                failed.append(exc)

        writer = threading.Thread(target=feed, name="ingestlab-load-feed", daemon=True)
        try:
            for statement in create:
                self.engine.execute(statement)
            if replace:
                self.engine.execute(f"TRUNCATE TABLE {self.engine.sql.quote(table)}")
            writer.start()
            self.engine.execute(self.engine.load_data_sql(table, columns), [fifo])
        except (dbapi.OperationalError, dbapi.InternalError) as exc:
            if exc.args and exc.args[0] in _LOCAL_INFILE_REFUSED:
                raise UnsupportedOperationError(
                    f"{self.engine.display_url} refuses LOAD DATA LOCAL INFILE: the server needs local_infile=ON "
                    f"({exc.args[-1]})") from exc
            raise
        finally:
            if writer.is_alive():  # the pipe was never opened (or not read to the end): unblock the writer
                os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            writer.join(timeout=30)
            shutil.rmtree(folder, ignore_errors=True)
        if failed:
            raise failed[0]
        return sent[0]

    def prepare(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
                create: Sequence[str] = ()) -> Callable[[], int]:
        """The ``LOAD DATA LOCAL`` of :meth:`load` with its CSV encoded now (``NULL`` for a null)."""
        pieces = list(datagen.csv_chunks(chunks, rows_per_piece=LOAD_PIECE_ROWS, null="NULL"))
        return functools.partial(self.load, table, columns, pieces, replace=replace, create=create)


class MySQL(MySQLProtocol):
    """MySQL over InnoDB, through the family's protocol (:class:`~ingestlab.engines.mysql_protocol.MySQLProtocol`).

    ``engines.from_url("mysql://user:pw@host:3306/db")``; there is no local MySQL server
    (the family's local server is its child MariaDB's, in that engine's folder). What is InnoDB's or the MySQL
    server's lives here: the bulk path ``LOAD DATA LOCAL INFILE``, the table models, the
    upsert study, the memory budget, the InnoDB counters, :meth:`_settle`, the commit
    counters, the stage anatomy and ``SET GLOBAL`` with its journal. StarRocks and Doris
    speak the same protocol but extend :class:`~ingestlab.engines.mysql_protocol.MySQLProtocol`,
    not this class.

    **Settings on a server the lab does not manage.** The commit variants change
    ``innodb_flush_log_at_trx_commit``, which is a *global* variable: it cannot be set for
    one session. :meth:`apply_settings` sets the names in :attr:`SESSION_SETTINGS` with
    ``SET SESSION``; any other name needs the URL's opt-in ``?set_global=true``, else it
    raises :class:`UnsupportedOperationError`. With the opt-in it runs ``SET GLOBAL`` (which
    needs the SUPER or SYSTEM_VARIABLES_ADMIN privilege and affects every client of the
    server), and puts each global variable back to the value it had before the lab touched it
    on the next :meth:`apply_settings` that does not name it and on :meth:`close`.

    **Anatomy.** ``ProfiledStatement.anatomy`` splits each single-row INSERT into the server's
    stages (``starting``, ``opening_tables``, ``update``, ``commit``...), read from
    ``performance_schema`` when its stage and statement history is on, else from
    ``SHOW PROFILE`` (see :meth:`MySQLProfiledStatement.recorder` for why in that order).
    """

    NAME = "mysql"
    STYLE = EngineStyle(title="MySQL", colour="#999933", marker="s", words={
        "flush_0": "log written and flushed once a second", "flush_1": "log flushed at each commit",
        "flush_2": "log flushed once a second", "no_unique_checks": "unique checks off", "round_trip": "round trip",
        "myisam": "MyISAM",
    })
    SQL = MySQLSQL
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        "commit_variants": MySQLCommitVariants, "upsert": MySQLUpsert, "memory_budget": MySQLMemoryBudget,
        "profiled_statement": MySQLProfiledStatement, "table_models": MySQLTableModels,
        "load_settings": MySQLLoadSettings, "io_counters": MySQLIOCounters, "commit_counters": MySQLCommitCounters,
        "native_load": MySQLNativeLoad, "bulk_load": MySQLBulkLoad,
    }
    #: ``set_global=true``: the user allows ``SET GLOBAL`` on a server the lab does not manage.
    WIRE = dataclasses.replace(MySQLProtocol.WIRE, schemes=("mysql",),
                               lab_query_keys=MySQLProtocol.WIRE.lab_query_keys + ("set_global",))
    #: Settings a client may change for its own session (``SET SESSION``).
    SESSION_SETTINGS: ClassVar[frozenset[str]] = frozenset({
        "unique_checks", "foreign_key_checks", "sql_log_bin", "transaction_isolation",
        "innodb_lock_wait_timeout", "sql_mode", "profiling", "profiling_history_size",
    })
    #: Statement listing (name, value) of every global variable not at its compiled-in default.
    SETTINGS_SQL: ClassVar[str] = (
        "SELECT LOWER(i.VARIABLE_NAME), g.VARIABLE_VALUE FROM performance_schema.variables_info i "
        "JOIN performance_schema.global_variables g ON g.VARIABLE_NAME = i.VARIABLE_NAME "
        "WHERE i.VARIABLE_SOURCE <> 'COMPILED' ORDER BY 1")
    #: InnoDB counters whose change per statement the anatomy reports (commit's I/O), and what each counts.
    ANATOMY_COUNTERS: ClassVar[tuple[str, ...]] = ("Innodb_data_fsyncs", "Innodb_log_writes")
    COUNTER_MEANINGS: ClassVar[dict[str, str]] = {
        "Innodb_data_fsyncs": "fsync() calls on InnoDB's files: on MariaDB 10.8+ (10.11 here) the redo log's syncs "
                              "and the data files' together (Innodb_os_log_fsyncs is gone); on MySQL and older "
                              "MariaDB the data files' only",
        "Innodb_log_writes": "physical writes to the redo log",
    }
    #: ``SHOW PROFILE`` keeps at most this many statements per session.
    PROFILING_HISTORY: ClassVar[int] = 100

    def __init__(self, url=None, **kwargs):
        super().__init__(url, **kwargs)
        self._saved_globals: dict[str, Any] = {}

    def _lock_wait_settings(self) -> dict[str, str]:
        """``lock_wait_timeout`` (metadata locks: a ``DROP TABLE`` behind an open transaction; by default a
        year) and ``innodb_lock_wait_timeout`` (row locks), in whole seconds (at least 1)."""
        seconds = str(max(1, round(lock_wait_s())))
        return {"lock_wait_timeout": seconds, "innodb_lock_wait_timeout": seconds}

    def lock_wait_sql(self) -> str:
        """The ``SET SESSION`` statement of :meth:`_lock_wait_settings`."""
        return "SET SESSION " + ", ".join(f"{name} = {int(value)}" for name, value in self._lock_wait_settings().items())

    def connect(self):
        """A connection (as every MySQL-protocol engine's) whose lock waits are bounded (:meth:`_lock_wait_settings`)."""
        conn = super().connect()
        try:
            with conn.cursor() as cur:
                cur.execute(self.lock_wait_sql())
        except self.driver.module.MySQLError as exc:
            conn.close()
            raise EngineUnavailableError(f"{self.display_url}: cannot bound lock waits ({exc})") from exc
        return conn

    def close(self) -> None:
        """Put back global variables the lab changed (``?set_global=true``), then close."""
        if self._saved_globals and self._conn is not None:
            self._restore_globals(set(self._saved_globals))
        super().close()

    # -- settings --------------------------------------------------------------------------
    @property
    def set_global_allowed(self) -> bool:
        """Whether the URL allows ``SET GLOBAL`` (``?set_global=true``)."""
        value = self.connection.lab.get("set_global", "") if self.connection is not None else ""
        return isinstance(value, str) and value.strip().lower() in _TRUE

    def set_session(self, settings: dict[str, str]) -> None:
        for name in settings:
            check_variable(name)
        global_names = [n for n in settings if n not in self.SESSION_SETTINGS]
        if global_names and not self.set_global_allowed:
            raise UnsupportedOperationError(
                f"{self.NAME}: {', '.join(sorted(global_names))} is not among the lab's per-session settings "
                f"({', '.join(sorted(self.SESSION_SETTINGS))}), so it takes SET GLOBAL, which affects every client "
                f"of {self.display_url}; the lab does that only when the URL opts in with ?set_global=true (the "
                f"previous values are put back at close). Or use the lab's own server: {self._parameter}=mariadb")
        self._restore_globals(set(self._saved_globals) - set(global_names))
        for name, value in settings.items():
            if name in global_names:
                if name not in self._saved_globals:
                    self._saved_globals[name] = self.execute(f"SELECT @@GLOBAL.{name}")[0][0]
                    journal.record(self.connection, name, self._saved_globals[name])  # put back by the next run if killed
                self.execute(self.set_sql(name, "GLOBAL"), [sql_value(value)])
            else:
                self.execute(self.set_sql(name, "SESSION"), [sql_value(value)])

    def restore_global(self, name: str, value: Any) -> None:
        """``SET GLOBAL name = value`` (the value it had before the lab changed it), then drop it from the journal.

        The batch runner calls this for what a killed run left in the journal
        (:mod:`ingestlab.journal`, where values are text: integers are sent as integers,
        which MariaDB's numeric variables require).
        """
        self.execute(self.set_sql(name, "GLOBAL"), [sql_value(value)])
        journal.forget(self.connection, name)

    def _restore_globals(self, names: set[str]) -> None:
        for name in sorted(names):
            try:
                self.restore_global(name, self._saved_globals[name])
            except self.driver.module.MySQLError as exc:
                warnings.warn(f"{self.display_url}: could not put back {name}={self._saved_globals[name]!r}: {exc}; "
                              "the next run against this URL will", stacklevel=2)
            del self._saved_globals[name]

    def _client_settings(self) -> dict[str, str]:
        """The session-scoped settings of the variant (global ones are in force server-wide already)."""
        return {k: v for k, v in super()._client_settings().items() if k in self.SESSION_SETTINGS}

    #: Status counters :class:`MySQLCommitCounters` reads (``SHOW GLOBAL STATUS``).
    COMMIT_COUNTERS: ClassVar[tuple[str, ...]] = (
        "Innodb_os_log_fsyncs", "Innodb_data_fsyncs", "Binlog_commits", "Binlog_group_commits",
        "Binlog_group_commit_trigger_count", "Binlog_group_commit_trigger_timeout", "Com_insert")

    # -- tables ------------------------------------------------------------------------------
    # -- bulk path -------------------------------------------------------------------------
    def load_data_sql(self, table: str, columns: Sequence[str]) -> str:
        """``LOAD DATA LOCAL INFILE %s`` for :func:`ingestlab.datagen.csv_bytes`'s CSV (file name as parameter)."""
        return self.sql.load_data_sql(table, columns)

    # -- notebook 05: one million rows ---------------------------------------------------------
    #: The client the lab runs for :class:`MySQLNativeLoad`.
    NATIVE_CLIENT: ClassVar[str] = "mysql"

    # -- anatomy ---------------------------------------------------------------------------
    def _counters(self) -> dict[str, float]:
        marks = ", ".join(["%s"] * len(self.ANATOMY_COUNTERS))
        rows = self.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({marks})", list(self.ANATOMY_COUNTERS))
        return {name: float(value) for name, value in rows}

    def _has_stage_history(self) -> bool:
        """Whether performance_schema records timed stages and statements in its long history."""
        try:
            consumers = dict(self.execute(
                "SELECT NAME, ENABLED FROM performance_schema.setup_consumers WHERE NAME IN "
                "('global_instrumentation', 'thread_instrumentation', 'events_stages_current', "
                "'events_stages_history_long', 'events_statements_current', 'events_statements_history_long')"))
            stages = self.execute("SELECT COUNT(*) FROM performance_schema.setup_instruments "
                                  "WHERE NAME LIKE 'stage/sql/%' AND ENABLED = 'YES' AND TIMED = 'YES'")[0][0]
        except self.driver.module.MySQLError:  # performance_schema off, or no privilege on it
            return False
        return len(consumers) == 6 and all(v == "YES" for v in consumers.values()) and stages > 0

    def _ps_position(self) -> tuple[int, int]:
        """This session's performance_schema thread id and the id of its current event."""
        return tuple(self.execute(
            "SELECT t.THREAD_ID, s.EVENT_ID FROM performance_schema.threads t "
            "JOIN performance_schema.events_statements_current s ON s.THREAD_ID = t.THREAD_ID "
            "WHERE t.PROCESSLIST_ID = CONNECTION_ID()")[0])

    def _ps_statement_ms(self, thread_id: int, marker: int, event: str) -> list[float]:
        """Server time (ms) of each of this session's statements of kind ``event`` since ``marker``, in order."""
        return [float(ps) / 1e9 for (ps,) in self.execute(
            "SELECT TIMER_WAIT FROM performance_schema.events_statements_history_long "
            "WHERE THREAD_ID = %s AND EVENT_ID > %s AND EVENT_NAME = %s ORDER BY EVENT_ID",
            [thread_id, marker, event])]

    def _ps_stages(self, thread_id: int, marker: int, n: int,
                   event: str = "statement/sql/insert") -> list[list[tuple[str, float]]]:
        """(stage, ms) of each of this session's ``n`` statements of kind ``event`` since ``marker``, in order."""
        statements = [r[0] for r in self.execute(
            "SELECT EVENT_ID FROM performance_schema.events_statements_history_long "
            "WHERE THREAD_ID = %s AND EVENT_ID > %s AND EVENT_NAME = %s ORDER BY EVENT_ID",
            [thread_id, marker, event])]
        if len(statements) != n:
            raise UnsupportedOperationError(
                f"{self.NAME}: performance_schema kept {len(statements)} of the {n} {event} statements; raise "
                "performance_schema_events_statements_history_long_size")
        by_statement: dict[int, list[tuple[str, float]]] = {e: [] for e in statements}
        for nesting, name, ps in self.execute(
                "SELECT NESTING_EVENT_ID, EVENT_NAME, TIMER_WAIT FROM performance_schema.events_stages_history_long "
                "WHERE THREAD_ID = %s AND NESTING_EVENT_ID > %s ORDER BY EVENT_ID", [thread_id, marker]):
            if nesting in by_statement and ps is not None:
                by_statement[nesting].append((str(name).rsplit("/", 1)[-1], float(ps) / 1e9))
        if not all(by_statement.values()):
            raise UnsupportedOperationError(
                f"{self.NAME}: performance_schema lost the stages of some INSERTs; raise "
                "performance_schema_events_stages_history_long_size")
        return [by_statement[e] for e in statements]

    #: ``SHOW GLOBAL STATUS`` counters :class:`MySQLIOCounters` reports, under the lab's names.
    IO_COUNTERS: ClassVar[dict[str, str]] = {
        "Innodb_buffer_pool_reads": "blocks_read",
        "Innodb_buffer_pool_read_requests": "blocks_requested",
        "Innodb_buffer_pool_read_ahead": "blocks_read_ahead",
        "Innodb_pages_written": "blocks_written",
        "Innodb_data_reads": "data_reads",
        "Innodb_data_writes": "data_writes",
        "Innodb_os_log_written": "log_bytes",
    }

    def _data_bytes(self, table: str) -> int:
        """Bytes of ``table``'s data and indexes, as InnoDB reports them (``information_schema.TABLES``)."""
        return int(self.execute("SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES "
                                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s", [table])[0][0])

    #: A statement that returns once InnoDB's purge has caught up (None: the server has none).
    PURGE_WAIT_SQL: ClassVar[str | None] = None
    #: A boolean global that, set ON, returns once InnoDB has written every dirty page (None: the server has none).
    CHECKPOINT_VARIABLE: ClassVar[str | None] = None

    def _settle(self, table: str, timeout_s: float = 600.0) -> None:
        """``ANALYZE TABLE``, then (local server only) wait until InnoDB has written every dirty page (a warning after ``timeout_s``).

        Purge is waited for first where the server has :attr:`PURGE_WAIT_SQL`: the pages it
        dirties would need another flush. Then :attr:`CHECKPOINT_VARIABLE` writes the dirty pages
        at once where the server has it (not every release does); else the page cleaner is told
        to leave none (it acts on its next one-second tick, so a settle costs at least a second).
        Either way the count of dirty pages is read back until it is 0.
        """
        self.execute(f"ANALYZE TABLE {self.sql.quote(table)}")
        if not self.is_local:
            return
        if self.PURGE_WAIT_SQL:
            self.execute(self.PURGE_WAIT_SQL)
        if self.CHECKPOINT_VARIABLE and self.execute("SHOW GLOBAL VARIABLES LIKE %s", [self.CHECKPOINT_VARIABLE]):
            self.execute(f"SET GLOBAL {self.CHECKPOINT_VARIABLE} = ON")
        before = self.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")[0][0]
        self.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        try:
            if not poll(lambda: int(self.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")[0][1]) == 0,
                        timeout_s=timeout_s, interval_s=0.1):
                warnings.warn(f"{self.NAME}: InnoDB still has dirty pages after {timeout_s:.0f} s; the timed writes "
                              "may share the disk with their flushing", stacklevel=2)
        finally:
            self.execute("SET GLOBAL innodb_max_dirty_pages_pct = %s", [before])

def stage_component(stage: str) -> str:
    """A server stage's name as a snake_case component name.

    Examples
    --------
    >>> stage_component("stage/sql/Opening tables"), stage_component("Commit")
    ('opening_tables', 'commit')
    """
    return re.sub(r"[^a-z0-9]+", "_", stage.rsplit("/", 1)[-1].lower()).strip("_")


class _StagesRecorder(anatomy.Recorder):
    """Each statement's stages from ``performance_schema``, read after the pass, and a ladder beside them.

    Instrument: the stages of each INSERT (``events_stages_history_long``). Ladder, after each
    statement on the same connection: ``round_trip`` — ``DO 0`` sent the way the INSERT is
    (:meth:`MySQL.statement_call`; the last of :attr:`ProfiledStatement.SETTLE` + 1 sent back to
    back, as a block's measured INSERTs follow its settling ones), on the client's clock, minus
    its own stages: the driver, the socket both ways and the server's work outside any stage
    (reading the command, starting and ending the statement). Both sides are read with the same
    instrument, so what the INSERT pays outside its stages beyond what ``DO 0`` pays stays
    ``unexplained``. The statement's own
    server time (``events_statements_history_long``) minus its stages is kept as the counter
    ``outside_stages_ms`` (a mean), not as a part: performance_schema's statement clock can run
    past the reply (on this machine it at times exceeded the client's own time of the statement
    by tens of µs), so it does not split the client's time. The INSERT is rendered before the
    clock, so the driver's formatting of its parameters is in none of this.
    """

    PASS = "stages"
    SOURCE = "performance_schema.events_stages_history_long"
    PROBE = "DO 0"
    ORDER = ("round_trip",)  # then the stages, in the order the server ran them
    RUNG_SAMPLES = 5  # 'DO 0' is a round trip: five a statement, each after the settling ones

    def begin(self) -> None:
        self.counters0 = self.engine._counters()
        self.thread_id, self.marker = self.engine._ps_position()
        self.n = 0
        self.kinds: list[bool] = []  # per INSERT in the order sent: observed (True) or unobserved
        self.probe_ms: list[float] = []

    def statement(self, result: Any, row: Sequence[Any]) -> None:
        self.n += 1
        self.kinds.append(True)
        # the probes kept follow ProfiledStatement.SETTLE others, as a block's measured INSERTs follow its settling ones
        settle = self.engine.capability("profiled_statement").SETTLE
        probes = [self.engine.sender.statement_call(self.PROBE) for _ in range(settle + self.RUNG_SAMPLES)]
        timed = timing.time_calls(probes, rows=[0] * len(probes), bytes_=[0] * len(probes))
        self.probe_ms += [float(s) * 1e3 for s in timed["elapsed_s"].iloc[settle:]]

    def block(self, client_ms: Sequence[float]) -> None:
        self.kinds += [False] * len(client_ms)  # their stages are in the history too: read with the rest at the end

    def end(self) -> None:
        engine = self.engine
        outside: list[float] = []
        if self.n:
            every = engine._ps_stages(self.thread_id, self.marker, len(self.kinds))
            every_total = engine._ps_statement_ms(self.thread_id, self.marker, "statement/sql/insert")
            stages = [s for s, seen in zip(every, self.kinds) if seen]
            totals = [t for t, seen in zip(every_total, self.kinds) if seen]
            self.parts = [[(stage_component(name), ms, self.SOURCE) for name, ms in s] for s in stages]
            self.unobserved_parts = [[(stage_component(name), ms, self.SOURCE) for name, ms in s]
                                     for s, seen in zip(every, self.kinds) if not seen]
            outside = [total - sum(ms for _, ms in s) for s, total in zip(stages, totals)]
            settle = engine.capability("profiled_statement").SETTLE
            per = settle + self.RUNG_SAMPLES
            every_probe = engine._ps_stages(self.thread_id, self.marker, self.n * per, event="statement/sql/do")
            probes = [p for i, p in enumerate(every_probe) if i % per >= settle]
            for client, probe in zip(self.probe_ms, probes, strict=True):
                self.rung("round_trip", client - sum(ms for _, ms in probe),
                          f"'{self.PROBE}' on the client's clock minus its stages ({self.SOURCE}; the last "
                          f"{self.RUNG_SAMPLES} of {per} sent back to back)")
        self.counters = _counter_changes(self.counters0, engine._counters(), len(self.kinds))
        if outside:
            self.counters["outside_stages_ms"] = (sum(outside) / len(outside),
                                                  "events_statements_history_long TIMER_WAIT minus the INSERT's "
                                                  "stages, mean per statement (not a part: it can run past the reply)")


class _ProfileRecorder(anatomy.Recorder):
    """Each statement's stages from ``SHOW PROFILE`` (``information_schema.PROFILING``), read in blocks.

    The session keeps at most :attr:`MySQL.PROFILING_HISTORY` profiles, so they are read
    every so many statements (between two timed statements, outside the clock).
    """

    PASS = "stages"
    SOURCE = "SHOW PROFILE (information_schema.PROFILING)"

    def begin(self) -> None:
        self.counters0 = self.engine._counters()
        self.room = self.engine.PROFILING_HISTORY - 10  # room for the statements that read the profiles
        self.pending: list[bool] = []  # INSERTs not read yet, in the order sent: observed (True) or unobserved
        self.n = self.sent = 0  # observed INSERTs; all INSERTs
        self.engine.execute("SET SESSION profiling_history_size = %s", [self.engine.PROFILING_HISTORY])
        self.engine.execute("SET SESSION profiling = 1")

    def statement(self, result: Any, row: Sequence[Any]) -> None:
        self.pending.append(True)
        self.n += 1
        self.sent += 1
        if len(self.pending) >= self.room // 2:  # read before a block of unobserved ones could overflow the history
            self._read()

    def block(self, client_ms: Sequence[float]) -> None:
        self.pending += [False] * len(client_ms)
        self.sent += len(client_ms)
        self._read()  # right away: the next observed statement follows a read anyway

    def _read(self) -> None:
        from ingestlab.profiles import parse

        execute = self.engine.execute
        ids = [r[0] for r in execute("SHOW PROFILES") if str(r[2]).lstrip().upper().startswith("INSERT")]
        ids = ids[-len(self.pending):]
        if len(ids) != len(self.pending):
            raise UnsupportedOperationError(f"{self.engine.NAME}: SHOW PROFILES kept {len(ids)} of the "
                                            f"{len(self.pending)} INSERTs sent since the last read")
        marks = ", ".join(["%s"] * len(ids))
        records = execute(f"SELECT QUERY_ID, STATE, DURATION FROM information_schema.PROFILING "
                          f"WHERE QUERY_ID IN ({marks}) ORDER BY QUERY_ID, SEQ", ids)
        for query_id, seen in zip(ids, self.pending):
            profile = parse([(state, duration) for q, state, duration in records if q == query_id],
                            "mariadb_show_profile")
            parts = [(stage_component(name), float(ms), self.SOURCE)
                     for name, _, ms in profile.operators.itertuples(index=False)]
            (self.parts if seen else self.unobserved_parts).append(parts)
        self.pending = []

    def end(self) -> None:
        try:
            if self.pending:
                self._read()
        finally:
            self.engine.execute("SET SESSION profiling = 0")
        self.counters = _counter_changes(self.counters0, self.engine._counters(), self.sent)


def _counter_changes(before: dict[str, float], after: dict[str, float], n: int) -> dict[str, tuple[float, str]]:
    """Per-statement change of ``SHOW GLOBAL STATUS`` counters over ``n`` statements, each source saying what it counts."""
    meanings = MySQL.COUNTER_MEANINGS
    return {name.lower(): ((after[name] - before[name]) / max(n, 1),
                           f"SHOW GLOBAL STATUS {name}, change per statement"
                           + (f" ({meanings[name]})" if name in meanings else ""))
            for name in before}
