"""Replicated PostgreSQL: the embedded 18 as a primary with K synchronous standbys, or a primary at a URL."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, ClassVar

from ingestlab import timing
from ingestlab.engines.base import EngineStyle
from ingestlab.engines.postgres import Postgres
from ingestlab.engines.postgres_replicated.capabilities import (
    ReplicatedCommitVariants,
    ReplicatedLinkDelay,
    ReplicatedLoadSettings,
    ReplicatedProfiledStatement,
    ReplicatedTableModels,
    ReplicatedWatch,
)
from ingestlab.engines.postgres_replicated.replication import SyncWatch, parse_standbys, replication_rows
from ingestlab.errors import DataLossError, EngineUnavailableError, ServerError
from ingestlab.polling import poll
from ingestlab.servers.base import LocalServer

#: The reader's words for this engine's identifiers (its commit variants, its anatomy's part).
WORDS = {
    **Postgres.STYLE.words,
    "sync_local": "synchronous_commit local", "sync_remote_write": "synchronous_commit remote_write",
    "sync_remote_apply": "synchronous_commit remote_apply", "sync_rep_wait": "wait for the standby",
}


class PostgresReplicated(Postgres):
    """PostgreSQL with synchronous streaming replication: a primary and :attr:`STANDBYS` standbys.

    ``engines.get("postgres_replicated")`` starts the embedded PostgreSQL 18 as a primary and one
    standby made by ``pg_basebackup -R``, in one private folder
    (:class:`~ingestlab.engines.postgres_replicated.server.ReplicatedPostgresServer`); its
    siblings ``postgres_replicated0`` and ``postgres_replicated2`` start none and two (K is the
    engine's name, so ``ENGINES`` stays a list of names). Everything is :class:`Postgres`'s but:

    * the commit variants: ``synchronous_commit`` off, local, remote_write, on, remote_apply;
    * after a scenario, rows are counted on the primary and on every standby once each has
      replayed up to the primary's flushed WAL (:meth:`_count_rows`);
    * a standby lost mid-run ends the run at :attr:`SyncWatch.BOUND_S
      <ingestlab.engines.postgres_replicated.replication.SyncWatch.BOUND_S>` with a
      :class:`~ingestlab.errors.ServerError` naming it (exit 5), not a commit waiting for ever
      (clients in processes of their own see a dropped connection: the ``watch`` capability
      gives the parent the reason);
    * the anatomy adds ``sync_rep_wait``, the wait for the standby from ``pg_stat_replication``;
    * no UNLOGGED tables (a standby never receives their rows).

    By URL (``pgreplicated://user@primary:5432/db?standbys=host:port,host:port``) the primary's
    standbys are read from its ``pg_stat_replication`` (the metadata lists them); rows are
    counted on the standbys the ``standbys`` key gives the addresses of, with the URL's user,
    password and database, and every standby the primary lists is waited for.
    """

    NAME = "postgres_replicated"
    #: Standbys the lab starts beside the primary.
    STANDBYS: ClassVar[int] = 1
    STYLE = EngineStyle(title="PostgreSQL + 1 sync standby", colour="#332288", marker="^", words=WORDS)
    WIRE = dataclasses.replace(Postgres.WIRE, schemes=("pgreplicated",),
                               lab_query_keys=(*Postgres.WIRE.lab_query_keys, "standbys"),
                               example="pgreplicated://postgres@127.0.0.1:5432/postgres?standbys=127.0.0.1:5433")
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        **Postgres.CAPABILITIES, "commit_variants": ReplicatedCommitVariants,
        "profiled_statement": ReplicatedProfiledStatement, "table_models": ReplicatedTableModels,
        "load_settings": ReplicatedLoadSettings, "link_delay": ReplicatedLinkDelay, "watch": ReplicatedWatch,
    }
    #: Seconds :meth:`_count_rows` waits for a standby whose replay makes no progress (one that moves is waited for).
    REPLAY_WAIT_S: ClassVar[float] = 30.0

    def __init__(self, url=None, *, client_kwargs: dict | None = None):
        super().__init__(url, client_kwargs=client_kwargs)
        lab = self.connection.lab if self.connection is not None else {}
        #: Standbys given by address in the URL (``?standbys=host:port,…``): where rows are counted.
        self.standby_addresses = (parse_standbys(lab["standbys"], self._parameter, self.display_url)
                                  if "standbys" in lab else [])
        self._watch: SyncWatch | None = None

    def _make_server(self) -> LocalServer:
        from ingestlab.engines.postgres_replicated.server import ReplicatedPostgresServer

        return ReplicatedPostgresServer(standbys=self.STANDBYS)

    # -- lifecycle: the watch on the standbys ----------------------------------------------------
    def start(self) -> "PostgresReplicated":
        """Start (the primary and its standbys, when local), then watch the standbys the primary waits for."""
        if self._conn is not None:
            return self
        super().start()
        if self._client_kwargs is None and self.execute("SHOW synchronous_standby_names")[0][0].strip():
            self._watch = SyncWatch(self._observer_connection, self.label).start()
        return self

    def _observer_connection(self):
        """A new autocommit connection to the primary, named as the lab's observers are (:attr:`OBSERVER_NAME`)."""
        conn = self.connect()
        with conn.cursor() as cur:
            cur.execute("SET application_name = %s", [self.OBSERVER_NAME])
        return conn

    def close(self) -> None:
        """Stop the watch, then as :class:`Postgres`."""
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.stop()
        super().close()

    def apply_settings(self, settings: dict[str, str]) -> dict[str, str]:
        """As :class:`Postgres` (a local primary restarts), the watch paused meanwhile."""
        if self._watch is None:
            return super().apply_settings(settings)
        with self._watch.paused():
            return super().apply_settings(settings)

    # -- statements: a lost standby's error says so ---------------------------------------------
    def execute(self, sql, params=None, *, conn=None) -> list[tuple]:
        """As every engine; once the watch fired, the driver's error becomes its one-line cause."""
        if self._watch is None:
            return super().execute(sql, params, conn=conn)
        return self._watch.explained(super().execute, (self.driver.module.Error,))(sql, params, conn=conn)

    def _native_sender(self) -> timing.NativeSender | None:
        sender = super()._native_sender()
        if sender is not None and self._watch is not None:
            sender.error = self._watch.message(sender.error)
        return sender

    def _statement_call(self, sql, params=None):
        call = super()._statement_call(sql, params)
        if self._watch is None:
            return call
        explained = self._watch.explained
        if isinstance(call, timing.NativeCall):
            call.fallback = explained(call.fallback, (ServerError,))
            return call
        return explained(call, (self.driver.module.Error,))

    # -- nothing lost: every node's rows ---------------------------------------------------------
    def _standby_nodes(self) -> list[tuple[str, dict]]:
        """``(name, connect arguments)`` of each standby rows can be counted on."""
        if self.server is not None:
            return [(s.name, self.server.standby_connect_kwargs(s)) for s in self.server.standbys]
        base = self.connect_kwargs()
        return [(f"standby {host}:{port}", {**base, "host": host, "port": port})
                for host, port in self.standby_addresses]

    def _count_rows(self, table: str) -> int:
        """The rows of ``table`` on the primary, once every standby holds as many.

        Each standby is first waited for (:meth:`_await_replay`) until it has replayed
        the WAL the primary flushed after it counted (:meth:`_flushed_lsn`: the end of that flush); then counted. A standby that does not
        catch up, or holds another number of rows, fails in one line naming it.

        Raises
        ------
        ServerError
            A standby did not replay up to the primary's flushed WAL in time.
        DataLossError
            A standby holds another number of rows than the primary.
        """
        rows = super()._count_rows(table)
        target = self._flushed_lsn()
        if self.server is None:  # by URL: every standby the primary streams to, whether we may count on it or not
            self._await_listed_replay(target)
        quoted = self.sql.quote(table)
        psycopg2 = self.driver.module
        for name, kwargs in self._standby_nodes():
            try:
                conn = psycopg2.connect(**kwargs, connect_timeout=10)
            except psycopg2.OperationalError as exc:
                raise EngineUnavailableError(f"{self.label}: cannot connect to {name} to count {table!r}: "
                                             f"{str(exc).strip()}") from exc
            try:
                conn.autocommit = True
                self._await_replay(conn, name, target, table)
                held = int(self.execute(f"SELECT count(*) FROM {quoted}", conn=conn)[0][0])
            finally:
                conn.close()
            if held != rows:
                raise DataLossError(f"{self.label}: {name} holds {held} rows of {table!r}, the primary {rows}, after "
                                    f"replaying up to the primary's flushed WAL ({target})")
        return rows

    def _flushed_lsn(self) -> str:
        """The primary's WAL flushed up to now, every commit counted so far included.

        An asynchronous commit (``sync_off``) may not be flushed yet, and a standby receives
        only flushed WAL. A transaction that writes a WAL record (a transactional logical
        message: any version since 9.6, any ``wal_level``) and commits with ``synchronous_commit
        = local`` flushes everything before it, without waiting for a standby (that wait is
        :meth:`_count_rows`', bounded).
        """
        self.execute("BEGIN")
        try:
            self.execute("SET LOCAL synchronous_commit = local")
            self.execute("SELECT pg_logical_emit_message(true, 'ingestlab', 'rows counted')")
        finally:
            self.execute("COMMIT")
        return self.execute("SELECT pg_current_wal_flush_lsn()")[0][0]

    def _await_replay(self, conn, name: str, target: str, table: str) -> None:
        """Wait until the standby on ``conn`` has replayed the WAL up to ``target``, as long as its replay moves.

        A standby far behind after a large load (notebooks 03, 05) is waited for while its replay
        position advances; one whose position stays put for :attr:`REPLAY_WAIT_S` fails.
        """
        last, since = None, time.monotonic()
        while True:
            at, done = self.execute("SELECT pg_last_wal_replay_lsn(), pg_last_wal_replay_lsn() >= %s::pg_lsn", [target],
                                    conn=conn)[0]
            if done:
                return
            if at != last:
                last, since = at, time.monotonic()
            elif time.monotonic() - since > self.REPLAY_WAIT_S:
                raise ServerError(f"{self.label}: {name} replayed WAL up to {at} only, not the primary's {target}, and "
                                  f"made no progress in {self.REPLAY_WAIT_S:g} s: its rows of {table!r} cannot be counted")
            time.sleep(0.02)

    def _await_listed_replay(self, target: str) -> None:
        """Wait until every standby ``pg_stat_replication`` lists has replayed up to ``target``, or raise naming it."""
        behind: list[str] = []

        def caught_up() -> bool:
            behind[:] = [name for name, ok in self.execute(
                "SELECT application_name, coalesce(replay_lsn >= %s::pg_lsn, false) FROM pg_stat_replication",
                [target]) if not ok]
            return not behind
        if not poll(caught_up, timeout_s=self.REPLAY_WAIT_S, interval_s=0.02):
            raise ServerError(f"{self.label}: standby {', '.join(behind)} did not replay up to the primary's flushed "
                              f"WAL ({target}) in {self.REPLAY_WAIT_S:g} s")

    # -- metadata ------------------------------------------------------------------------------
    def metadata(self) -> dict:
        """As :class:`Postgres`, with ``standbys``: each standby's row of ``pg_stat_replication`` (name, state, lags)."""
        return {**super().metadata(), "standbys": replication_rows(self.execute)}


class PostgresReplicated0(PostgresReplicated):
    """The same primary with no standby: the replicated engine's own baseline (every variant commits locally)."""

    NAME = "postgres_replicated0"
    STANDBYS = 0
    STYLE = EngineStyle(title="PostgreSQL, replication off", colour=PostgresReplicated.STYLE.colour, marker="v",
                        words=WORDS, configuration_of=PostgresReplicated.NAME)
    WIRE = dataclasses.replace(PostgresReplicated.WIRE, schemes=())
    CAPABILITIES: ClassVar[dict[str, Any]] = {**PostgresReplicated.CAPABILITIES,
                                              "link_delay": "no standby: no link between nodes to delay"}


class PostgresReplicated2(PostgresReplicated):
    """The primary with two standbys; a commit waits for the first of them (``ANY 1``)."""

    NAME = "postgres_replicated2"
    STANDBYS = 2
    STYLE = EngineStyle(title="PostgreSQL + 2 standbys (any 1)", colour=PostgresReplicated.STYLE.colour, marker="<",
                        words=WORDS, configuration_of=PostgresReplicated.NAME)
    WIRE = dataclasses.replace(PostgresReplicated.WIRE, schemes=())
