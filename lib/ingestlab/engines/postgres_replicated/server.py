"""A PostgreSQL primary and K synchronous standbys the lab starts in one private folder."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

from ingestlab.engines.postgres.server import PostgresServer
from ingestlab.errors import ConfigError, ServerError
from ingestlab.polling import poll
from ingestlab.servers.base import free_port

#: The role standbys stream WAL as: it may replicate and log in, nothing else (no table of the lab's).
REPLICATION_ROLE = "lab_replication"
#: The primary's socket name (``.s.PGSQL.<port>``) when it has no TCP listener; standby ``n`` gets ``+ n``.
PRIMARY_PORT = 5432


@dataclasses.dataclass
class Standby:
    """One standby of a :class:`ReplicatedPostgresServer`: its folder, data, log and socket name.

    Attributes
    ----------
    name : str
        Its ``application_name`` (``standby1``…): how ``pg_stat_replication`` and
        ``synchronous_standby_names`` know it.
    directory : Path
        ``<server folder>/<name>``.
    port : int
        The number in its socket's name (``.s.PGSQL.<port>`` in the server's private socket
        directory); it has no TCP listener.
    link_port : int or None
        The port on 127.0.0.1 of the proxy its stream goes through (None: the primary's socket).
    """

    name: str
    directory: Path
    port: int
    link_port: int | None = None

    #: Its data directory (made by ``pg_basebackup -R``) and its server log, in :attr:`directory`.
    pgdata: Path = dataclasses.field(init=False)
    log_file: Path = dataclasses.field(init=False)

    def __post_init__(self):
        self.pgdata, self.log_file = self.directory / "data", self.directory / "postgres.log"


class ReplicatedPostgresServer(PostgresServer):
    """The wheel's PostgreSQL 18 as a primary with ``standbys`` synchronous standbys, in one private 0700 folder.

    The primary is :class:`~ingestlab.engines.postgres.server.PostgresServer`'s (``data/``,
    socket only, SCRAM). Each standby ``standby<n>/`` is a ``pg_basebackup -R`` of it, started
    with its own data directory and socket name (``.s.PGSQL.<5432 + n>``) in the same private
    socket directory, and streams as :data:`REPLICATION_ROLE` over that socket: the role's
    random password lives in ``replication.secret`` (0600) and, written by ``pg_basebackup -R``,
    in the standby's ``postgresql.auto.conf`` (0600, in its 0700 data directory); ``pg_hba.conf``
    allows replication to that role only, over the socket (and over 127.0.0.1 only while
    :attr:`delay` routes the streams through proxies). Once every standby streams, the
    primary waits for them: ``synchronous_standby_names = 'ANY 1 (standby1, …)'``.

    With :attr:`delay` set before :meth:`start` (the ``link_delay`` capability's ``route``),
    the primary also listens on a free port of 127.0.0.1 and each standby streams through its
    own proxy of a private :class:`~ingestlab.latency.Toxiproxy` (``toxiproxy/`` in the folder,
    :attr:`toxiproxy`), whose delay ``link_delay.set`` changes; without it nothing listens on TCP.

    Parameters
    ----------
    standbys : int
        0, 1 or 2.
    """

    SHARES_THE_CLIENTS_CPU = False  # its nodes work at the same time

    KIND = "postgres_replicated"
    #: Seconds standbys get to connect and stream after a start or a primary's restart.
    STREAM_WAIT_S: ClassVar[float] = 30.0
    #: Most standbys the lab starts on one machine.
    MAX_STANDBYS: ClassVar[int] = 2

    def __init__(self, directory=None, *, keep: bool = False, standbys: int = 1):
        if isinstance(standbys, bool) or not isinstance(standbys, int) or not 0 <= standbys <= self.MAX_STANDBYS:
            raise ConfigError("standbys", standbys, f"a whole number from 0 to {self.MAX_STANDBYS}")
        super().__init__(directory, keep=keep)
        self.standbys = [Standby(f"standby{n}", self.directory / f"standby{n}", PRIMARY_PORT + n)
                         for n in range(1, standbys + 1)]
        #: Whether the standbys stream through proxies (set before :meth:`start`).
        self.delay = False
        #: The proxies the standbys stream through while :attr:`delay` is set, once started.
        self.toxiproxy = None
        #: The primary's own TCP port on 127.0.0.1 while :attr:`delay` is set (the proxies' upstream).
        self.tcp_port: int | None = None
        self._streaming = False

    # -- what the primary waits for ----------------------------------------------------------
    def synchronous_standby_names(self) -> str:
        """``ANY 1 (standby1, …)``: a commit waits for the first standby to confirm it, whichever it is.

        A quorum of one: with two standbys the primary and one of them hold every commit, the
        majority of three a Raft group of replication factor 3 waits for (YugabyteDB's, the
        seeds'); ``FIRST 1`` would wait for ``standby1`` alone, whatever ``standby2`` does. Empty
        (no wait) without standbys, or before they stream.
        """
        if not self.standbys or not self._streaming:
            return ""
        return f"ANY 1 ({', '.join(s.name for s in self.standbys)})"

    def _write_settings(self, settings: dict[str, str]) -> None:
        super()._write_settings({**settings, "synchronous_standby_names": self.synchronous_standby_names()})

    # -- start and stop ----------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The primary's port: its TCP port while it has one, else the number in its socket's name."""
        return self.tcp_port or PRIMARY_PORT

    def _postmaster_options(self) -> str:
        if self.tcp_port is None:
            return f"{super()._postmaster_options()} -p {self.port}"
        # the proxy in front of it reaches it on loopback only; pg_hba lets only the replication role in that way
        return f"-h 127.0.0.1 -p {self.port} -k {self.socket_dir}"

    @property
    def replication_password(self) -> str:
        """The replication role's random password, kept (0600) in the server's folder (``replication.secret``)."""
        return self.secret("replication")

    def _start(self) -> None:
        if self.delay and self.tcp_port is None:
            self.tcp_port = free_port()
        fresh = not (self.pgdata / "PG_VERSION").exists()
        super()._start()
        if fresh:
            self._write_hba()
            self._run("pg_ctl", ["reload"])
            self._sql(f"CREATE ROLE {REPLICATION_ROLE} WITH REPLICATION LOGIN PASSWORD %s",
                      [self.replication_password])
        if self.delay and self.standbys:
            self._start_proxies()
        for standby in self.standbys:
            if not (standby.pgdata / "PG_VERSION").exists():
                self._base_backup(standby)
            self._start_standby(standby)
        self._await_streaming()
        self._streaming = True
        self._write_settings(self.settings)
        self._run("pg_ctl", ["reload"])  # synchronous_standby_names needs no restart
        self._await_streaming(sync=True)

    def _write_hba(self) -> None:
        """Every login with a password (SCRAM); replication only as :data:`REPLICATION_ROLE`, on the socket or loopback.

        ``local`` lines serve the private socket directory (0700: only the server's user, and
        root, reach it); the ``host`` line serves the loopback listener the primary has only
        while proxies carry the streams (:attr:`delay`), for the replication role alone.
        """
        lines = ["local replication " + REPLICATION_ROLE + " scram-sha-256",
                 "local all all scram-sha-256"]
        if self.tcp_port is not None:
            lines.append(f"host replication {REPLICATION_ROLE} 127.0.0.1/32 scram-sha-256")
        (self.pgdata / "pg_hba.conf").write_text("\n".join(lines) + "\n")

    def _start_proxies(self) -> None:
        """A private Toxiproxy with one proxy per standby in front of the primary's loopback port, no delay yet."""
        from ingestlab.latency import Toxiproxy

        if self.toxiproxy is None:
            self.toxiproxy = Toxiproxy(self.directory / "toxiproxy")
        self.toxiproxy.start()
        for standby in self.standbys:
            standby.link_port = self.toxiproxy.proxy(standby.name, self.tcp_port)

    def _conninfo(self, standby: Standby) -> str:
        """Where ``standby`` streams from: its proxy's port on 127.0.0.1, else the primary's socket."""
        if standby.link_port is not None:
            return f"host=127.0.0.1 port={standby.link_port}"
        return f"host={self.socket_dir} port={PRIMARY_PORT}"

    def _base_backup(self, standby: Standby) -> None:
        """``pg_basebackup -R`` of the primary into ``standby``'s data directory, as the server's user.

        The password goes through the environment (``PGPASSWORD``), never the command line;
        ``-R`` writes it into ``primary_conninfo`` in ``postgresql.auto.conf`` (0600).
        """
        standby.directory.mkdir(mode=0o700, exist_ok=True)
        self.give(standby.directory, 0o700)
        conninfo = f"{self._conninfo(standby)} user={REPLICATION_ROLE} application_name={standby.name}"
        self._run("pg_basebackup", ["-d", conninfo, "-R", "-X", "stream", "-c", "fast", "--no-sync"],
                  pgdata=standby.pgdata, env={"PGPASSWORD": self.replication_password})
        own = ["wal_retrieve_retry_interval = '100ms'\n",  # reconnect at once after the primary restarts
               "hot_standby = 'on'\n"]
        conf = standby.pgdata / "lab.conf"
        conf.write_text("".join(f"{k} = '{v}'\n" for k, v in self._standby_settings().items()) + "".join(own))
        self.give(conf, 0o600)
        self.private_file(standby.log_file)

    def _standby_settings(self) -> dict[str, str]:
        """The instruments' settings a standby shares with the primary (its ``lab.conf`` is its own)."""
        return {k: v for k, v in self.settings.items() if k in ("shared_preload_libraries", "track_io_timing",
                                                                   "track_wal_io_timing")}

    def _start_standby(self, standby: Standby) -> None:
        self._run("pg_ctl", ["-w", "-l", str(standby.log_file), "-o",
                             f"-h '' -k {self.socket_dir} -p {standby.port}", "start"], pgdata=standby.pgdata)

    def _await_streaming(self, *, sync: bool = False) -> None:
        """Wait until every standby streams (and, with ``sync``, is one the primary waits for), or raise naming it."""
        if not self.standbys:
            return
        import psycopg2

        wanted = {s.name for s in self.standbys}
        seen: dict[str, tuple[str, str]] = {}

        def ready() -> bool:
            try:
                rows = self._sql("SELECT application_name, state, sync_state FROM pg_stat_replication")
            except psycopg2.Error:  # the primary is restarting
                return False
            seen.clear()
            seen.update({name: (state, sync_state) for name, state, sync_state in rows})
            return all(seen.get(n, ("", ""))[0] == "streaming" and (not sync or seen[n][1] in ("sync", "quorum"))
                       for n in wanted)

        if not poll(ready, timeout_s=self.STREAM_WAIT_S, interval_s=0.05):
            late = sorted(n for n in wanted if seen.get(n, ("",))[0] != "streaming") or sorted(wanted)
            raise ServerError(f"standby {', '.join(late)} of {self.directory} did not stream within "
                              f"{self.STREAM_WAIT_S:g} s (pg_stat_replication: {seen or 'empty'}); see "
                              f"{self.standbys[0].log_file.parent.parent}/<standby>/postgres.log")

    def _sql(self, sql: str, params: list | None = None) -> list[tuple]:
        """One statement on the primary, as ``postgres``, on a connection of its own."""
        import psycopg2

        conn = psycopg2.connect(**self.connect_kwargs(), connect_timeout=5)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall() if cur.description else []
        finally:
            conn.close()

    def _stop(self) -> None:
        super()._stop()  # the primary first: a fast shutdown sends its last WAL to the standbys
        for standby in self.standbys:
            self.stop_standby(standby, mode="fast" if self.keep else "immediate")
        if self.toxiproxy is not None:
            self.toxiproxy.stop()
        self._streaming = False

    def stop_standby(self, standby: Standby, mode: str = "fast") -> None:
        """Stop one standby (``pg_ctl stop -m mode``); a standby that is not running is left as it is."""
        if (standby.pgdata / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", ["-w", "-m", mode, "stop"], timeout=self.STOP_TIMEOUT_S, pgdata=standby.pgdata)
            except ServerError:
                self._run("pg_ctl", ["-w", "-m", "immediate", "stop"], timeout=10, pgdata=standby.pgdata)

    def restart(self, settings: dict[str, str]) -> None:
        """Restart the primary with exactly ``settings``; return once every standby streams again.

        Only the primary restarts: what a variant changes (``synchronous_commit``,
        ``shared_buffers``…) is the primary's; the standbys reconnect within
        ``wal_retrieve_retry_interval`` (100 ms).
        """
        super().restart(settings)
        if self.running:
            self._await_streaming(sync=True)

    def connect_kwargs(self) -> dict:
        """The primary's: its socket directory and port, user ``postgres`` and its password."""
        return {**super().connect_kwargs(), "port": self.port}

    def standby_connect_kwargs(self, standby: Standby) -> dict:
        """A standby's: the same socket directory, its own port, the same user (the base backup copied it)."""
        return {**super().connect_kwargs(), "port": standby.port}
