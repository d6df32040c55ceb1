"""PostgreSQL's capabilities: commit variants, group commit, upsert, memory budget, anatomy, counters and loads."""

from __future__ import annotations

import functools
import math
import os
import re
import statistics
import subprocess
from typing import Any, Callable, ClassVar, Iterable, Sequence

from ingestlab import anatomy, datagen
from ingestlab.engines.capabilities import (
    BulkLoad,
    CommitCounters,
    CommitVariants,
    GroupCommit,
    IOCounters,
    LoadSetting,
    LoadSettings,
    MemoryBudget,
    NativeLoad,
    Pipeline,
    ProfiledStatement,
    TableModels,
    Upsert,
)
from ingestlab.errors import ServerError

#: Rows encoded to CSV at a time by :meth:`PostgresBulkLoad.load`: the first piece is on the wire
#: after about a millisecond of encoding, and the rest is encoded while the server parses.
COPY_PIECE_ROWS = 16_384


class PostgresCommitVariants(CommitVariants):
    """PostgreSQL's commit protocol: ``synchronous_commit``."""

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "sync_on": {"synchronous_commit": "on"},
        "sync_off": {"synchronous_commit": "off"},
    }


class PostgresGroupCommit(GroupCommit):
    """PostgreSQL's commit grouping: ``commit_delay`` and ``synchronous_commit``."""

    #: ``commit_delay`` (µs) makes a committing backend wait before it flushes the WAL, when at
    #: least ``commit_siblings`` other transactions are open, so that one flush carries the
    #: commits that arrive meanwhile; ``synchronous_commit = off`` acknowledges before the
    #: flush (the WAL writer flushes every ``wal_writer_delay``): a crash loses the last commits.
    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "default": {},
        "commit_delay_100": {"commit_delay": "100", "commit_siblings": "5"},
        "sync_off": {"synchronous_commit": "off"},
        "commit_delay_10": {"commit_delay": "10", "commit_siblings": "1"},
        "commit_delay_1000": {"commit_delay": "1000", "commit_siblings": "5"},
    }
    NOTE = ("PostgreSQL always groups: a backend that finds the WAL already flushed past its "
            "commit record skips its own flush; commit_delay waits to widen the group")


class PostgresUpsert(Upsert):
    """INSERT of new keys, and ``INSERT … ON CONFLICT DO UPDATE`` of existing ones.

    PostgreSQL has no write that skips reading the old row.
    """


class PostgresMemoryBudget(MemoryBudget):
    """``shared_buffers`` of the budget, with the OS page cache in a memory cgroup or bypassed."""

    LIMITS: ClassVar[dict[str, str]] = {
        "cgroup": "shared_buffers of a quarter of the budget, buffered I/O through the OS page cache, and the "
                  "server's processes in a memory cgroup that leaves the page cache the rest of the budget",
        "engine": "shared_buffers of the budget's size and debug_io_direct = data: data files are read and "
                  "written with O_DIRECT, so no OS page cache holds table or index pages (each new or evicted "
                  "page is one write)",
    }

    def cache_bytes(self, budget_bytes: int, limit: str) -> int:
        """``shared_buffers``: the share of the budget, at least 128 kB (PostgreSQL's least)."""
        return max(super().cache_bytes(budget_bytes, limit), 128 * 1024)

    def settings(self, budget_bytes: int, limit: str = "engine") -> dict[str, str]:
        """Settings that hold PostgreSQL's caches to ``budget_bytes`` (see :attr:`LIMITS`).

        Examples
        --------
        >>> PostgresMemoryBudget(None).settings(256 * 2**20, "cgroup")
        {'shared_buffers': '65536kB'}
        """
        settings = {"shared_buffers": f"{self.cache_bytes(budget_bytes, limit) // 1024}kB"}
        if limit == "engine":
            settings["debug_io_direct"] = "data"
        return settings


class PostgresProfiledStatement(ProfiledStatement):
    """PostgreSQL's statistics views around each statement, and a ladder of probes."""

    PROFILE_KIND = "postgres_explain_json"


class PostgresTableModels(TableModels):
    """PostgreSQL's heap tables, keyed and logged or not, hash-partitioned."""

    MODELS: ClassVar[dict[str, str]] = {
        "no_key": "heap table without a key",
        "primary_key": "heap table with a primary key (a B-tree index)",
        "primary_key_indexes": "primary key plus three secondary B-tree indexes",
        "unlogged": "UNLOGGED table with a primary key: no WAL for its pages",
    }
    COMMIT_FREE_MODELS: ClassVar[tuple[str, ...]] = ("unlogged",)
    #: Hash partitions: PostgreSQL has no hard limit; past a thousand, planning time dominates.
    MAX_PARTITIONS = 1024
    #: Past a hundred partitions PostgreSQL's planning and tuple routing may show (notebook 02).
    SWEEP_EXTRA_PARTITIONS: ClassVar[tuple[int, ...]] = (256, 1024)


class PostgresLoadSettings(LoadSettings):
    """PostgreSQL's trade-offs of a load: commit, WAL, key, frozen rows."""

    #: Notebook 05's settings (see :class:`~ingestlab.engines.capabilities.LoadSetting`).
    SETTINGS: ClassVar[dict[str, LoadSetting]] = {
        "default": LoadSetting("the server's defaults: synchronous_commit = on, logged table with its primary key"),
        "async_commit": LoadSetting("synchronous_commit = off: a commit returns before its WAL is flushed "
                                    "(a crash may lose the last commits, never corrupt)",
                                    server={"synchronous_commit": "off"}),
        "unlogged": LoadSetting("UNLOGGED table: no WAL for its pages (emptied after a crash, not replicated)",
                                model="unlogged"),
        "key_after_load": LoadSetting("no primary key during the load, ADD PRIMARY KEY after (timed apart): "
                                      "duplicates are found only at the end", key_after_load=True),
        "copy_freeze": LoadSetting("COPY … FREEZE into a table created in the same transaction: rows written "
                                   "frozen and all-visible (other sessions see them even before their snapshot)",
                                   create_in_load=True, methods=("bulk",)),
    }


class PostgresIOCounters(IOCounters):
    """PostgreSQL's buffer and WAL counters, from ``pg_stat_statements``."""

    def read(self) -> dict[str, float]:
        """Cumulative buffer and WAL counters of every statement, from ``pg_stat_statements``.

        ``blocks_read`` counts shared blocks that were not in ``shared_buffers`` and were
        read from the data files: with ``debug_io_direct = data`` from the disk itself, with
        buffered I/O from the OS page cache or the disk (the memory cgroup's device reads tell which).
        ``pg_stat_statements`` updates these when each statement ends, so a difference
        around one statement is exact.

        Returns
        -------
        dict
            ``blocks_read``, ``blocks_hit``, ``blocks_dirtied``, ``blocks_written``,
            ``wal_fpi``, ``wal_bytes``.
        """
        row = self.engine.execute(
            "SELECT coalesce(sum(shared_blks_read), 0), coalesce(sum(shared_blks_hit), 0), "
            "coalesce(sum(shared_blks_dirtied), 0), coalesce(sum(shared_blks_written), 0), "
            "coalesce(sum(wal_fpi), 0), coalesce(sum(wal_bytes), 0) FROM pg_stat_statements")[0]
        return dict(zip(["blocks_read", "blocks_hit", "blocks_dirtied", "blocks_written", "wal_fpi", "wal_bytes"],
                        map(float, row)))


class PostgresCommitCounters(CommitCounters):
    """PostgreSQL's WAL syncs and commits."""

    def read(self) -> dict[str, float]:
        """WAL syncs of every process (``pg_stat_io``, object ``wal``), WAL records and the database's commits.

        ``flushes`` is the sum of ``fsyncs`` over every backend type (client backends, the WAL
        writer, the checkpointer). A backend reports its I/O when it exits or at most once a
        second, so the read first waits (up to :attr:`Postgres.CLIENT_EXIT_WAIT_S`) for the other
        client backends of this user to be gone, then forces this backend's own report.
        """
        self.engine._wait_for_other_clients()
        execute = self.engine.execute
        execute("SELECT pg_stat_force_next_flush()")
        fsyncs, writes = execute("SELECT coalesce(sum(fsyncs), 0), coalesce(sum(writes), 0) "
                                 "FROM pg_stat_io WHERE object = 'wal'")[0]
        records, wal_bytes = execute("SELECT wal_records, wal_bytes FROM pg_stat_wal")[0]
        commits = execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")[0][0]
        return {"flushes": float(fsyncs), "wal_writes": float(writes), "wal_records": float(records),
                "wal_bytes": float(wal_bytes), "xact_commit": float(commits)}


class PostgresNativeLoad(NativeLoad):
    """PostgreSQL: the engine's own client loading a CSV file."""

    def load(self, table: str, columns: Sequence[str], path: str) -> int:
        """``psql -c '\\copy table (columns) FROM path (FORMAT csv)'``; returns the rows psql reported (``COPY n``)."""
        args = self.engine.connect_kwargs()
        cols = ", ".join(map(self.engine.sql.quote, columns))
        quoted = str(path).replace("'", "''")
        command = [self.engine.psql_path(), "-X", "-v", "ON_ERROR_STOP=1", "-h", str(args.get("host", "")),
                   "-U", str(args.get("user", "")), "-d", str(args.get("dbname", "")),
                   "-c", f"\\copy {self.engine.sql.quote(table)} ({cols}) FROM '{quoted}' WITH (FORMAT csv)"]
        if args.get("port"):
            command += ["-p", str(args["port"])]
        env = {**os.environ, "PGOPTIONS": str(args["options"]),
               **({"PGPASSWORD": str(args["password"])} if args.get("password") else {})}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise ServerError(f"psql \\copy failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        return int(done.stdout.split()[-1])


class PostgresPipeline(Pipeline):
    """PostgreSQL: single-row INSERTs in one transaction, pipelined."""

    def prepare_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Callable[[], int]:
        """Single-row INSERTs in one transaction in libpq's pipeline mode, through psycopg 3.

        A second connection (psycopg 3; psycopg2 has no pipeline mode), opened now with the
        session settings in force, runs ``executemany`` inside ``conn.pipeline()``: every
        statement is sent without waiting for the previous reply, one commit at the end.
        """
        conn = self.engine._pipeline_connection()
        sql = self.engine.sql.insert_sql(table, columns, 1)
        rows = [tuple(r) for r in rows]

        def write() -> int:
            with conn.transaction(), conn.pipeline(), conn.cursor() as cur:
                cur.executemany(sql, rows)
            return len(rows)
        return write


class PostgresBulkLoad(BulkLoad):
    """COPY … FROM STDIN, the CSV encoded in pieces."""

    PATH = "copy"

    def load(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
             create: Sequence[str] = ()) -> int:
        """One ``COPY table (columns) FROM STDIN (FORMAT csv)``, streamed chunk by chunk; return the rows sent.

        With ``replace``, ``TRUNCATE`` and ``COPY … FREEZE`` run in one transaction, which lets
        COPY write the rows frozen and the pages all-visible: no later VACUUM or first read
        rewrites every page to set hint bits. With ``create``, the table is created in that
        transaction instead, with the same effect.
        """
        counted = [0]

        def encoded():  # in pieces, so that the server parses one while the next is encoded (or was, before)
            for piece in datagen.csv_chunks(chunks, rows_per_piece=COPY_PIECE_ROWS):
                counted[0] += piece.num_rows
                yield piece.data

        copy = self.engine.sql.copy_sql(table, columns, freeze=bool(replace or create))
        cur = self.engine.conn.cursor()
        try:
            cur.execute("BEGIN")
            for statement in create:
                cur.execute(statement)
            if replace:
                cur.execute(f"TRUNCATE {self.engine.sql.quote(table)}")
            cur.copy_expert(copy, _ChunkReader(encoded()), size=1 << 20)
            cur.execute("COMMIT")
        except BaseException:
            if not self.engine.conn.closed:
                cur.execute("ROLLBACK")
            raise
        finally:
            cur.close()
        return counted[0]

    def prepare(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
                create: Sequence[str] = ()) -> Callable[[], int]:
        """The COPY of :meth:`load` with its CSV encoded now, in pieces of :data:`COPY_PIECE_ROWS` rows."""
        pieces = list(datagen.csv_chunks(chunks, rows_per_piece=COPY_PIECE_ROWS))
        return functools.partial(self.load, table, columns, pieces, replace=replace, create=create)


class _ChunkReader:
    """A read-only file over an iterable of ``bytes`` chunks, for ``copy_expert``.

    ``read`` may return less than asked (at most the rest of the current chunk), which
    ``copy_expert`` accepts; only ``b""`` means the end.
    """

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks = iter(chunks)
        self._cur = b""
        self._pos = 0
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        while self._pos >= len(self._cur):
            chunk = next(self._chunks, None)
            if chunk is None:
                return b""
            self._cur, self._pos = chunk, 0
        end = len(self._cur) if size is None or size < 0 else min(len(self._cur), self._pos + size)
        out = self._cur[self._pos:end]
        self._pos = end
        self.bytes_read += len(out)
        return out

    readline = read


class _StatsRecorder(anatomy.Recorder):
    """Reads, after each statement, its share of PostgreSQL's cumulative statistics, then climbs a ladder.

    Parts read per statement (instruments):

    * ``client_socket`` — the client's clock minus the server's own span of the same statement:
      ``pg_stat_activity.state_change − query_start`` of the measuring backend, read from an
      observer connection. The span runs from the moment the backend has read the query
      message to the moment it reports itself idle, just before ``ReadyForQuery``; what lies
      outside it is psycopg2 and libpq sending the text and reading the reply, the socket both
      ways and the backend's reading and writing of those messages.
    * ``planning``, ``execution`` — ``pg_stat_statements`` adds a statement's plan time and
      its ``ExecutorRun`` + ``ExecutorFinish`` time when it ends, so the change around one
      statement is its own.
    * ``wal_flush`` — ``pg_stat_io``'s WAL write and fsync time by client backends (the commit's
      flush; the WAL writer's background flushes are not the statement's). Its rows
      and ``pg_stat_wal`` are reported by the backend at most once a second unless asked, so
      each read first calls ``pg_stat_force_next_flush()``.

    Rungs measured after each statement, outside its clock, in the same run (the server's span
    of each probe is read the same way, from ``pg_stat_activity``; the probes timed by their span
    follow :attr:`ProfiledStatement.SETTLE` empty queries, as the blocks' measured statements
    follow their settling ones, and the server-timed ones, ``EXPLAIN`` and ``log_parser_stats``,
    are the last of ``ProfiledStatement.SETTLE + 1`` in a row):

    * ``transaction`` — the span of an empty query (``;``) on the measuring connection:
      starting and ending a transaction that writes nothing, and the backend's per-query
      bookkeeping (activity and statistics reports) that every statement pays.
    * ``parse_analyze`` — raw parsing, parse analysis (with ``pg_stat_statements``' query
      jumbling) and rewriting of the same INSERT into a probe table: the ``elapsed`` of
      ``log_parser_stats``' three reports (``PARSER``, ``PARSE ANALYSIS``, ``REWRITER``
      STATISTICS), turned on for that one statement (``SET LOCAL`` in a transaction that is
      rolled back) and sent to the client (``client_min_messages = log``), minus the same three
      reports' ``elapsed`` for ``SELECT`` (no table, no column, nothing to rewrite) right
      after: each report's clock also covers one ``getrusage`` call, and the
      instrument's floor so measured (the counter ``parse_analyze_instrument_ms``) is its own
      cost, not the statement's. Needs the right to set ``log_parser_stats`` (a superuser, as
      on the lab's server); without it the rung is left out.
    * ``executor_start_end`` — ``EXPLAIN (ANALYZE)`` of that INSERT: ``Execution Time``
      (``ExecutorStart`` to ``ExecutorEnd``) minus its root node's ``Actual Total Time``
      (the run itself, which ``execution`` covers): opening the table and its indexes,
      building and closing the plan's state.
    * ``commit`` — the span of ``COMMIT`` of a transaction that inserted one row with
      ``synchronous_commit = off`` for that transaction (``SET LOCAL``: the commit does all it
      does but wait for the WAL flush, which ``wal_flush`` measures), minus the span of
      ``COMMIT`` of an empty one (whose end is in ``transaction`` already), each the last of
      ``ProfiledStatement.SETTLE + 1`` in a row: the commit record, the commit log and proc-array
      updates, releasing the table's lock. One more probe then commits as the variant does,
      flushing the probes' WAL, so that the next observed INSERT's flush is its own.

    What is left (``unexplained``): creating and dropping the portal, the snapshot, and
    ``pg_stat_statements`` storing its entries. Every read and rung runs between the timed
    statements, never inside them; the probes write into ``<table>_probe``.

    Unobserved statements (``ProfiledStatement.anatomy``'s blocks): ``planning``, ``execution``
    and ``wal_flush`` are the block's share of the same cumulative statistics, read once after
    the block (a mean per statement); ``client_socket`` is the median over the blocks of their
    last statement's client time minus its span (the one statement ``pg_stat_activity`` still
    shows after the block); the rungs are the same. Where every statement of a block waited
    for its own flush (as many WAL fsyncs as statements: ``synchronous_commit = on``), a
    statement's flush is the block's mean plus its own client time's difference from the
    block's mean (at least 0): the flush is what varies (on the observed statements, whose
    flush is read one by one, the client's time rises with it at a slope near 1: bench/README.md,
    "Measurements behind the code's rules"), so the typical statement is not charged the block's
    few slow fsyncs.

    Before PostgreSQL 16 (no ``pg_stat_io``; notebook 05's second version is 15) the WAL flush
    is not measured: it is listed as unmeasured, and the ``commit`` rung becomes
    ``commit_with_wal_flush``: the probe commits as the variant does, its flush included. Before 15 the statistics are not flushed on request
    (``pg_stat_force_next_flush``), so per-statement changes may lag.
    """

    PASS = "server"
    #: Whether an unobserved statement's WAL flush takes its client time's excess over the block's mean
    #: (the flush is what varies); False where something else varies more (a wait for a standby).
    flush_varies: bool = True
    ORDER = ("client_socket", "transaction", "parse_analyze", "planning", "executor_start_end", "execution",
             "commit", "commit_with_wal_flush", "wal_flush")
    #: The ladder's probes are µs each, read in whole µs: five a statement, and each statement adds their mean
    #: (:meth:`rung`). A median of whole µs is a whole µs, so a 0.6 µs rung read as 0 or 1 took 1, and four
    #: rungs of a 20 µs statement over-explained it by up to 10 %; a mean of such readings is not biased, and
    #: the ladder's median over the statements still leaves one slow statement out.
    RUNG_SAMPLES = 5
    _PGSS = ("SELECT coalesce(sum(total_plan_time), 0), coalesce(sum(total_exec_time), 0) "
             "FROM pg_stat_statements WHERE query LIKE 'INSERT%%'")
    # client backends only: the WAL writer's flush of earlier asynchronous commits (the ladder's probes) in a
    # statement's window is not the statement's (under load it can exceed the statement itself)
    _IO = ("SELECT coalesce(sum(write_time), 0) + coalesce(sum(fsync_time), 0), coalesce(sum(fsyncs), 0) "
           "FROM pg_stat_io WHERE object = 'wal' AND context = 'normal' AND backend_type = 'client backend'")
    _WAL = "SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal"
    _SPAN = ("SELECT extract(epoch FROM state_change - query_start) * 1000, state, query "
             "FROM pg_stat_activity WHERE pid = %s")
    #: ``log_parser_stats``' report: one ``… s elapsed`` per stage.
    _ELAPSED = re.compile(r"([0-9.]+) s elapsed")

    def begin(self) -> None:
        engine = self.engine
        self.has_pgss = bool(engine.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'"))
        version = int(engine.execute("SHOW server_version_num")[0][0])
        self.has_io, self.can_flush = version >= 160000, version >= 150000
        if not self.has_io:
            self.unmeasured["wal_flush"] = (f"pg_stat_io is new in PostgreSQL 16, this server is {version // 10000}; "
                                            "the commit rung keeps its WAL flush")
        self.pid = engine.execute("SELECT pg_backend_pid()")[0][0]
        self.probe = f"{self.table}_probe"
        engine.execute(engine.sql.drop_table_sql(self.probe))
        engine.execute(f"CREATE TABLE {engine.sql.quote(self.probe)} (LIKE {engine.sql.quote(self.table)})")
        self.probe_sql = engine.sql.insert_sql(self.probe, self.columns, 1)
        self.observer = engine.connect()
        # log_parser_stats is a superuser setting (or granted: PostgreSQL 15+); without it, no parse_analyze rung
        try:
            self.parser_stats = bool(engine.execute(
                "SELECT has_parameter_privilege(current_user, 'log_parser_stats', 'SET')")[0][0])
        except engine.driver.module.Error:  # before 15: no such function
            self.parser_stats = bool(engine.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")[0][0])
        self.last = self._read()
        self.floors: list[float] = []  # log_parser_stats' elapsed for SELECT: the instrument's own (ms)
        self.blocks: list[list[list]] = []  # per unobserved block: the parts of each of its statements
        self.block_sockets: list[float] = []  # per unobserved block: its last statement's client side (ms)

    def execute(self, sql: str, params: Sequence[Any] | None = None, *, conn=None) -> list[tuple]:
        """A statement on ``conn`` (default: the measuring connection)."""
        return self.engine.execute(sql, params, conn=conn)

    def block(self, client_ms: Sequence[float]) -> None:
        """The block's share of the cumulative statistics (a mean per statement), and its last statement's client side.

        The last statement of a block is the one ``pg_stat_activity`` still shows, read after it
        (so it ran unobserved): its client time minus the server's span is a sample of the
        client's side of an unobserved statement.
        """
        self.block_sockets.append(client_ms[-1] - self._span("INSERT"))
        now = self._read()
        n = len(client_ms)
        plan, execution, wal_ms, fsyncs = ((a - b) / n for a, b in list(zip(now, self.last))[:4])
        parts = [("planning", plan, "pg_stat_statements.total_plan_time, mean over the block"),
                 ("execution", execution, "pg_stat_statements.total_exec_time, mean over the block")
                 ] if self.has_pgss else []
        flushes = [[] for _ in client_ms]
        if self.has_io and fsyncs >= 1 and self.flush_varies:  # each statement flushed: the flush varies (class docstring)
            mean_ms = statistics.fmean(client_ms)
            flushes = [[("wal_flush", max(0.0, wal_ms + ms - mean_ms),
                         "pg_stat_io wal write_time + fsync_time, mean over the block plus the statement's client "
                         "time minus the block's mean")] for ms in client_ms]
        elif self.has_io:
            parts.append(("wal_flush", wal_ms, "pg_stat_io wal write_time + fsync_time, mean over the block"))
        self.blocks.append([[*parts, *own] for own in flushes])
        self.last = now

    def end(self) -> None:
        # the client's side needs the span of each statement, which only a read gives: the blocks' last statements'
        if self.blocks:
            socket = ("client_socket", statistics.median(self.block_sockets),
                      f"median over {len(self.block_sockets)} blocks of their last statement's client clock minus "
                      "pg_stat_activity state_change - query_start")
            self.unobserved_parts = [[socket, *parts] for block in self.blocks for parts in block]
        if self.floors:
            self.counters["parse_analyze_instrument_ms"] = (
                statistics.median(self.floors), "log_parser_stats' elapsed of its three reports for SELECT, median: "
                "the instrument's own cost, taken out of parse_analyze")
        if getattr(self, "observer", None) is not None:
            self.observer.close()
        if getattr(self, "probe", None) and self.engine._conn is not None:
            self.engine.execute(self.engine.sql.drop_table_sql(self.probe))

    def _read(self) -> tuple[float, ...]:
        execute = self.engine.execute
        if self.can_flush:  # else (before 15) the statistics reach the views at the collector's pace
            execute("SELECT pg_stat_force_next_flush()")
        pgss = execute(self._PGSS)[0] if self.has_pgss else (math.nan, math.nan)
        io = execute(self._IO)[0] if self.has_io else (math.nan, math.nan)
        return tuple(map(float, (*pgss, *io, *execute(self._WAL)[0])))

    def _span(self, expected: str) -> float:
        """The server's span (ms) of the measuring backend's last statement, which must start with ``expected``."""
        ms, state, query = self.execute(self._SPAN, [self.pid], conn=self.observer)[0]
        if state != "idle" or not str(query).lstrip().upper().startswith(expected):
            raise ServerError(f"pg_stat_activity shows the measuring backend {state!r} in {str(query)[:40]!r}, "
                              f"not idle after {expected!r}")
        return float(ms)

    def statement(self, result: Any, row: Sequence[Any]) -> None:
        span = self._span("INSERT")
        client = self.client_ms[-1]
        now = self._read()
        plan, execution, wal_ms, fsyncs, records, fpi, wal_bytes = (a - b for a, b in zip(now, self.last))
        parts = [("planning", plan, "pg_stat_statements.total_plan_time"),
                 ("execution", execution, "pg_stat_statements.total_exec_time")] if self.has_pgss else []
        self.parts.append([("client_socket", client - span, "client clock minus pg_stat_activity "
                                                            "state_change - query_start"),
                           *parts, *([("wal_flush", wal_ms, "pg_stat_io wal write_time + fsync_time")]
                                     if self.has_io else [])])
        self.extras.append([*([("wal_fsyncs", math.nan, fsyncs, "pg_stat_io wal fsyncs")] if self.has_io else []),
                            ("wal_records", math.nan, records, "pg_stat_wal.wal_records"),
                            ("wal_fpi", math.nan, fpi, "pg_stat_wal.wal_fpi"),
                            ("wal_bytes", math.nan, wal_bytes, "pg_stat_wal.wal_bytes")])
        self._probes: dict[str, list[float]] = {}
        for _ in range(self.RUNG_SAMPLES):
            self._climb(row)
        for name, values in self._probes.items():
            self.rungs.setdefault(name, []).append(statistics.fmean(values))
        self.last = self._read()

    def rung(self, name: str, ms: float, source: str) -> None:
        """One probe of a rung, kept until the statement's probes are taken: the statement adds their mean (:attr:`RUNG_SAMPLES`)."""
        self._probes.setdefault(name, []).append(ms)
        self.rung_sources[name] = f"{source}; per statement the mean of its {self.RUNG_SAMPLES}"

    def _empty_query(self) -> None:
        import psycopg2

        try:
            self.engine.execute(";")
        except psycopg2.ProgrammingError:  # "can't execute an empty query": the server's answer to ';'
            pass

    def _settle(self) -> None:
        """Empty queries back to back, so that the probe after them is not the first statement after a read.

        A read between statements slows the next ones (:attr:`ProfiledStatement.SETTLE`); the
        statement whose time a rung adds to is an unobserved one, sent in a loop, so each
        probe timed by its span is sent after as many round trips as the blocks' settling.
        """
        for _ in range(self.engine.capability("profiled_statement").SETTLE):
            self._empty_query()

    def _climb(self, row: Sequence[Any]) -> None:
        """One sample of every rung (see the class docstring)."""
        execute = self.engine.execute
        settle = self.engine.capability("profiled_statement").SETTLE
        self._settle()
        self._empty_query()
        self.rung("transaction", self._span(";"), "pg_stat_activity span of an empty query ';' (after "
                                                  f"{settle} settling ones)")
        warm = settle + 1  # each probe the last of as many as a block settles with
        for _ in range(warm):
            execute("BEGIN")
            if self.has_io:  # its flush is wal_flush's: the commit without waiting for it
                execute("SET LOCAL synchronous_commit = off")
            execute(self.probe_sql, row)
            execute("COMMIT")
        commit = self._span("COMMIT")
        for _ in range(warm):
            execute("BEGIN")
            execute("COMMIT")
        empty = self._span("COMMIT")
        if self.has_io:  # the probes' WAL, committed without waiting for it, flushed now, as the variant commits:
            execute("BEGIN")  # else the next observed INSERT's flush would carry it
            execute(self.probe_sql, row)
            execute("COMMIT")
            self.rung("commit", commit - empty,
                      f"pg_stat_activity span of COMMIT after one INSERT with synchronous_commit = off (its flush is "
                      f"wal_flush's) minus that of an empty transaction's COMMIT (each the last of {warm} in a row)")
        else:  # no pg_stat_io: the flush cannot be told apart from the rest of the commit
            self.rung("commit_with_wal_flush", commit - empty,
                      "pg_stat_activity span of COMMIT after one INSERT minus that of an empty transaction's COMMIT "
                      f"(each the last of {warm} in a row; its WAL flush included: no pg_stat_io before PostgreSQL 16)")
        execute("BEGIN")  # rolled back: the probe's commit would only add a WAL flush
        for _ in range(warm):
            (plan,), = execute("EXPLAIN (ANALYZE, FORMAT JSON) " + self.probe_sql, row)[0]
        execute("ROLLBACK")
        self.rung("executor_start_end", plan["Execution Time"] - plan["Plan"]["Actual Total Time"],
                  f"EXPLAIN ANALYZE of the INSERT (the last of {warm} in a row): Execution Time minus the root "
                  "node's Actual Total Time")
        if self.parser_stats:
            conn = self.engine.conn
            execute("BEGIN")
            execute("SET LOCAL client_min_messages = log")
            execute("SET LOCAL log_parser_stats = on")
            reports = {}
            for sql, params in ((self.probe_sql, row), ("SELECT", None)):
                for _ in range(warm):
                    conn.notices.clear()
                    execute(sql, params)
                reports[sql] = self._ELAPSED.findall("".join(conn.notices))
            execute("ROLLBACK")
            if any(len(elapsed) != 3 for elapsed in reports.values()):
                raise ServerError(f"log_parser_stats sent {len(reports[self.probe_sql])} reports for one INSERT and "
                                  f"{len(reports['SELECT'])} for SELECT, not 3 each")
            floor = sum(map(float, reports["SELECT"])) * 1e3
            self.floors.append(floor)
            self.rung("parse_analyze", sum(map(float, reports[self.probe_sql])) * 1e3 - floor,
                      f"log_parser_stats: elapsed of PARSER + PARSE ANALYSIS + REWRITER STATISTICS of the INSERT "
                      f"minus those of SELECT, the instrument's own (each the last of {warm} in a row)")


#: Per statement: the client's side, the server's parts and a ladder of probes.
PostgresProfiledStatement.RECORDER = _StatsRecorder
