"""How an engine's statements are rendered and sent for the clock: ``engine.sender``, and the hooks adapters override."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ingestlab import timing
from ingestlab.engines.bound import Bound
from ingestlab.errors import ConfigError, UnsupportedOperationError


class Sending:
    """How an engine's statements are rendered, sent and timed; an adapter overrides what its driver does otherwise.

    :mod:`ingestlab.timing`'s loops and the clients of :mod:`ingestlab.concurrency` call these
    hooks; ``Engine`` inherits them, so each adapter keeps its overrides in its own class.
    """

    def _lock_wait_settings(self) -> dict[str, str]:
        """Session settings that bound a statement's wait for a lock to :func:`lock_wait_s` seconds.

        A user's server may hold a lock on the lab's table in someone else's open transaction
        (a ``psql`` session that read it, a migration): the lab's next ``DROP``, ``INSERT`` or
        ``COPY`` would wait for it with no end while the server answers everything else. With
        these settings the engine itself ends such a wait with an error, and the run ends in one
        line (exit 5). Engines apply them to every connection they open, the clients' too;
        ``{}`` (the default) where the engine has no such setting.
        """
        return {}

    def _render(self, sql: str, params: Sequence[Any] | None = None) -> str | bytes:
        """The statement text the driver sends for ``sql`` with ``params`` (its client-side interpolation).

        The drivers the lab uses interpolate parameters into the text on the client
        (``cursor.mogrify``) and send one simple-protocol query, as ``pgbench -M simple`` and
        ``mariadb-slap`` do.
        """
        return self._measuring_cursor().mogrify(sql, params)

    def _native_sender(self) -> "timing.NativeSender | None":
        """The measuring connection's own C send call, for :mod:`ingestlab.timing`'s C loops; None if it has none.

        Engines whose driver wraps a C client library (libpq, libmysqlclient) return the
        library's query call on the connection statements are timed on (after :meth:`_open_sender`,
        that one's), so the timed loop calls what the engine's own C load tool calls, with no
        Python between the clock's readings. The default, None, keeps the loops in Python.
        """
        return None

    def _open_sender(self, session: Mapping[str, str] | None = None) -> Callable[[bytes], Any]:
        """Connect and return a call that sends one finished statement text and reads the reply.

        For the concurrent clients of :mod:`ingestlab.concurrency`, whose statements are
        rendered before the clock (:meth:`_render`): the call should cost the client no more
        than the engine's own C load tool spends per statement, so engines return their
        client library's lowest-level query call (the package it comes from: ``WIRE.sender_driver``).
        It raises when the server reports an error. ``session`` settings are put in force on the
        connection first (:meth:`set_session`). Default: :meth:`start` and the measuring cursor's
        ``execute``; :meth:`close` ends it.
        """
        self.start()
        if session:
            self.set_session(dict(session))
        return self._measuring_cursor().execute

    def _set_known(self, settings: Mapping[str, str], names_sql: str, set_sql: str, what: str) -> None:
        """``set_sql`` (``{name}`` written in, the value as its parameter) for each of ``settings``, names checked first.

        For engines whose session settings are ``SET`` statements and whose names a query lists
        (``names_sql``, one name a row): a name it does not list is refused, as no ``what``,
        before any setting is changed.
        """
        known = {name for (name,) in self.execute(names_sql)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise UnsupportedOperationError(f"{self.NAME}: no {what} {unknown}")
        for name, value in settings.items():
            self.execute(set_sql.format(name=name), [str(value)])

    def _measuring_cursor(self):
        cur = self._cursor
        if cur is None:
            cur = self._cursor = self.conn.cursor()
        return cur

    def _prepare_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                        rows_per_statement: int = 1, transaction: bool = False) -> Callable[[], int]:
        """``INSERT … VALUES`` of ``rows``, ``rows_per_statement`` a statement, built now, as a call to time.

        Statement texts and parameters are made before the clock starts. The call runs them on
        the measuring connection, each its own transaction (autocommit), or all in one
        (``transaction=True``: ``BEGIN`` … ``COMMIT``), one ``execute`` (one round trip) per
        statement — never the driver's ``executemany``, which PyMySQL rewrites into multi-row
        INSERTs. It returns the statements run.
        """
        statements = self._insert_statements(table, columns, rows, rows_per_statement)
        conn = self.conn

        def write() -> int:
            with conn.cursor() as cur:
                if transaction:
                    cur.execute("BEGIN")
                for sql, params in statements:
                    cur.execute(sql, params)
                if transaction:
                    cur.execute("COMMIT")
            return len(statements)
        return write

    def _client_settings(self) -> dict[str, str]:
        """Settings each client connection must set itself for the variant in force (session scope).

        A local server was restarted with the variant's settings, so its clients set nothing;
        on a remote server the variant lives in the measuring session, and every other
        connection sets it again (:meth:`set_session`).
        """
        return {} if self.is_local else dict(self._settings)

    def _timer(self) -> str:
        """The loop that times this engine's statements once it is started: ``c`` (over :meth:`_native_sender`) or ``python``."""
        native = timing.TIMER == "c" and self._conn is not None and self._native_sender() is not None
        return "c" if native and self.driver.name is not None else "python"

    def _insert_statements(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                           rows_per_statement: int) -> list[tuple[str, list[Any]]]:
        """``(INSERT … VALUES text, its parameters)`` of ``rows``, ``rows_per_statement`` a statement (texts cached).

        Raises
        ------
        ConfigError
            ``rows_per_statement`` is not an integer ≥ 1 (named ``BATCH_ROWS``, the notebooks' parameter).
        """
        if isinstance(rows_per_statement, bool) or not isinstance(rows_per_statement, int) or rows_per_statement < 1:
            raise ConfigError("BATCH_ROWS", rows_per_statement, "an integer ≥ 1")
        statements = []
        for i in range(0, len(rows), rows_per_statement):
            chunk = rows[i:i + rows_per_statement]
            sql = self._sql_cache.get(("insert", table, len(chunk)))
            if sql is None:
                sql = self._sql_cache[("insert", table, len(chunk))] = self.sql.insert_sql(table, columns, len(chunk))
            statements.append((sql, [v for row in chunk for v in row]))
        return statements


class Sender(Bound):
    """The statement-sending steps of one engine, bound to it (``engine.sender``); engines change them through hooks.

    What :mod:`ingestlab.timing`'s loops, the clients of :mod:`ingestlab.concurrency` and the
    workloads call to build a statement before the clock and send it inside it. Each step calls
    the engine's private hook of the same name (``_render``, ``_statement_call``, …), which an
    adapter overrides where its driver works otherwise.
    """

    def statement_call(self, sql: str, params: Sequence[Any] | None = None) -> Callable[[], Any]:
        """``sql`` with ``params``, rendered now, as a call that sends it on the measuring connection."""
        return self.engine._statement_call(sql, params)

    def render(self, sql: str, params: Sequence[Any] | None = None) -> str | bytes:
        """The statement text the driver sends for ``sql`` with ``params``."""
        return self.engine._render(sql, params)

    def native(self) -> "timing.NativeSender | None":
        """The measuring connection's own C send call for the C loops, or None."""
        return self.engine._native_sender()

    def open(self, session: Mapping[str, str] | None = None) -> Callable[[bytes], Any]:
        """Connect and return a call that sends one finished statement text and reads the reply."""
        return self.engine._open_sender(session)

    def prepare_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                       rows_per_statement: int = 1, transaction: bool = False) -> Callable[[], int]:
        """``INSERT … VALUES`` of ``rows``, built now, as a call to time (each statement its own round trip)."""
        return self.engine._prepare_insert(table, columns, rows, rows_per_statement=rows_per_statement,
                                           transaction=transaction)

    def client_settings(self) -> dict[str, str]:
        """Settings each client connection sets itself for the variant in force."""
        return self.engine._client_settings()

    def lock_wait_settings(self) -> dict[str, str]:
        """Session settings that bound a statement's wait for another session's lock."""
        return self.engine._lock_wait_settings()
