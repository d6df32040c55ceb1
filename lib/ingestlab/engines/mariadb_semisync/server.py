"""A MariaDB primary and one semi-synchronous replica, both the lab's private ``mariadbd``, in one folder."""

from __future__ import annotations

import concurrent.futures
import time
from typing import ClassVar

from ingestlab.engines.mariadb.server import MariaDBServer, _check_settings
from ingestlab.errors import ServerError
from ingestlab.polling import poll
from ingestlab.servers.base import LocalServer


class MariaDBSemiSyncServer(LocalServer):
    """Primary and replica: two :class:`~ingestlab.engines.mariadb.server.MariaDBServer` in one private folder.

    ``<lab dir>/mariadb_semisync-<pid>-<n>/`` holds ``primary/`` and ``replica/``, each a
    private MariaDB server folder as the standalone engine makes it (0700, owned by ``mysql``
    when the lab is root, root only through its own socket with its own random password).
    The primary writes a synced binary log (:attr:`PRIMARY_OPTIONS`) and listens on a free
    port on 127.0.0.1 as well as its socket, with ``skip_name_resolve``: a TCP client from
    127.0.0.1 is ``…@127.0.0.1``, never ``root@localhost``, so root stays socket-only. The one
    account reachable over TCP is :attr:`REPLICATION_USER` ``@127.0.0.1`` with
    ``REPLICATION SLAVE`` only and a password the lab makes (:attr:`password`, 0600 in the
    folder), created with the binary log off and sent over the socket. The replica (no TCP of
    its own) follows the primary by GTID (``MASTER_USE_GTID = slave_pos``), with semi-sync on
    its side (``rpl_semi_sync_slave_enabled``, built into MariaDB since 10.3); its
    ``master.info`` (which holds that password) stays in its 0700 data folder.

    :attr:`settings` are the primary's (the measured server); :meth:`restart` restarts the
    primary only, and the replica reconnects within ``MASTER_CONNECT_RETRY`` (1 s). Start and
    every restart end when the replica replicates and, with semi-sync on, the primary counts it
    as its semi-sync client (``Rpl_semi_sync_master_status = ON``,
    ``Rpl_semi_sync_master_clients = 1``), within :attr:`READY_TIMEOUT_S`.
    ``rpl_semi_sync_master_timeout`` (the lab's default: :attr:`PRIMARY_OPTIONS`) is how long a
    commit waits for the replica's acknowledgement before the primary falls back to
    asynchronous replication; the adapter ends the run when that happens.

    **Link delay.** With :attr:`delay` set before :meth:`start` (the ``link_delay`` capability's
    ``route()``), or by :meth:`route` while running, the replica's ``MASTER_PORT`` is a
    :class:`~ingestlab.latency.Toxiproxy` listener on 127.0.0.1 in front of the primary's port
    (:attr:`toxiproxy`, in ``toxiproxy/`` of this folder): the binary log events and the
    replica's acknowledgements both pass through it, so a one-way delay ``d`` on it costs a
    semi-sync commit one round trip, ``2d``. Without it the replica connects directly.

    Both ``mariadbd`` and the proxy name this folder in their command line, so
    :func:`~ingestlab.servers.base.reap` stops them all when the lab process is killed (their
    socket folders are reaped by pid).
    """

    SHARES_THE_CLIENTS_CPU = False  # its nodes work at the same time

    KIND = "mariadb_semisync"
    SYSTEM_USER = MariaDBServer.SYSTEM_USER  # the OS user the packaged server runs as
    #: The account the replica logs in as (``@127.0.0.1``, ``REPLICATION SLAVE`` only).
    REPLICATION_USER: ClassVar[str] = "lab_replication"
    #: Seconds for the replica to connect and be counted as semi-sync client after a start or restart.
    READY_TIMEOUT_S: ClassVar[float] = 30.0
    #: The primary's options; a setting may change the semi-sync ones, not the others (:attr:`LAB_OPTIONS`).
    PRIMARY_OPTIONS: ClassVar[dict[str, str]] = {
        "log_bin": "mariadb-bin", "server_id": "1", "sync_binlog": "1", "binlog_format": "ROW",
        "skip_name_resolve": "ON", "rpl_semi_sync_master_enabled": "ON",
        "rpl_semi_sync_master_wait_point": "AFTER_SYNC",
        # ms a commit waits for the replica before the primary goes on without it (MariaDB's default: 10 000).
        # On loopback an acknowledgement takes about a millisecond; a replica silent for 2 s is lost, and the
        # adapter ends the run then rather than 10 s later
        "rpl_semi_sync_master_timeout": "2000",
    }
    #: The replica's options (fixed: the measured server is the primary).
    REPLICA_OPTIONS: ClassVar[dict[str, str]] = {
        "server_id": "2", "relay_log": "relay-bin", "rpl_semi_sync_slave_enabled": "ON", "read_only": "ON",
    }
    #: Options the lab sets on the primary and no setting may change: the binary log, the ids, the accounts' rule.
    LAB_OPTIONS: ClassVar[frozenset[str]] = frozenset({
        "log_bin", "server_id", "skip_name_resolve", "binlog_format", "log_bin_basename", "gtid_domain_id",
    })

    def __init__(self, directory=None, *, keep: bool = False):
        super().__init__(directory, keep=keep)
        self.primary = MariaDBServer(self.directory / "primary", keep=keep, tcp=True)
        self.replica = MariaDBServer(self.directory / "replica", keep=keep)
        #: Seconds the last :meth:`start` took, both servers ready (the issue's bound: 30).
        self.start_s: float | None = None
        #: The port the replica's ``MASTER_PORT`` names: the primary's own, or a proxy's in front of it.
        self.master_port: int | None = None
        #: Route the replication stream through :attr:`toxiproxy` (set before :meth:`start`; see :meth:`route`).
        self.delay = False
        #: The proxy the replication stream passes through (None: the replica connects directly).
        self.toxiproxy = None

    # -- lifecycle -------------------------------------------------------------------------
    def _check(self, settings: dict[str, str]) -> None:
        _check_settings(settings, self.primary.RESERVED | self.LAB_OPTIONS)

    def primary_options(self) -> dict[str, str]:
        """The primary's options: :attr:`PRIMARY_OPTIONS` with :attr:`settings` over them."""
        return {**self.PRIMARY_OPTIONS, **self.settings}

    def _start(self) -> None:
        began = time.monotonic()
        self._check(self.settings)
        self.primary.settings = self.primary_options()
        self.replica.settings = dict(self.REPLICA_OPTIONS)
        # the two installs and first starts are independent: side by side they take the time of one
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for done in [pool.submit(self.primary.start), pool.submit(self.replica.start)]:
                done.result()
        self._replication_account()
        self.master_port = self._master_port()
        self._follow()
        self.wait_ready()
        self.start_s = time.monotonic() - began

    def _master_port(self) -> int:
        """Where the replica connects: the primary's port, or with :attr:`delay` a proxy's in front of it."""
        if not self.delay:
            return self.primary.port
        from ingestlab.latency import Toxiproxy

        self.toxiproxy = Toxiproxy(self.directory / "toxiproxy", keep=self.keep)
        self.toxiproxy.start()
        return self.toxiproxy.proxy("replication", self.primary.port)

    def route(self) -> None:
        """Send the replication stream through :attr:`toxiproxy` from now on (at start when not running yet)."""
        self.delay = True
        if not self.running or self.toxiproxy is not None:
            return
        self.master_port = self._master_port()
        self._follow()
        self.wait_ready()

    def _replication_account(self) -> None:
        """The replication account, kept out of the binary log, then an empty binary log to replicate from."""
        with self.primary_cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(f"CREATE USER '{self.REPLICATION_USER}'@'127.0.0.1' IDENTIFIED BY %s", (self.password,))
            cur.execute(f"GRANT REPLICATION SLAVE ON *.* TO '{self.REPLICATION_USER}'@'127.0.0.1'")
            # the first start's own statements (accounts, database) are in the log: both servers made them alike
            cur.execute("RESET MASTER")

    def _follow(self) -> None:
        """Point the replica at :attr:`master_port` with the replication account (its password over the socket) and start it."""
        with self.replica_cursor() as cur:
            cur.execute("STOP SLAVE")
            if not self.running:  # the first time: from the primary's first event (route() keeps the position)
                cur.execute("SET GLOBAL gtid_slave_pos = ''")
            cur.execute("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %s, MASTER_USER = %s, "
                        "MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
                        (self.master_port, self.REPLICATION_USER, self.password))
            cur.execute("START SLAVE")

    def wait_ready(self, timeout_s: float | None = None) -> float:
        """Wait until the replica replicates and, with semi-sync on, is the primary's semi-sync client; return the seconds.

        Raises
        ------
        ServerError
            After ``timeout_s`` (default :attr:`READY_TIMEOUT_S`), with the replica's last error.
        """
        timeout_s = self.READY_TIMEOUT_S if timeout_s is None else timeout_s
        began = time.monotonic()
        if poll(self.ready, timeout_s=timeout_s, interval_s=0.05):
            return time.monotonic() - began
        raise ServerError(f"{self.KIND}: the replica did not become the primary's semi-sync client within "
                          f"{timeout_s:.0f} s ({self.replica_state()}); logs {self.primary.log_file}, "
                          f"{self.replica.log_file}")

    def ready(self) -> bool:
        """Whether the replica's threads run and, with semi-sync on, the primary waits for it."""
        status = self.replica_status()
        if status.get("Slave_IO_Running") != "Yes" or status.get("Slave_SQL_Running") != "Yes":
            return False
        primary = self.primary_status()
        if primary["rpl_semi_sync_master_enabled"] == "OFF":
            return True
        return primary.get("Rpl_semi_sync_master_status") == "ON" and primary.get("Rpl_semi_sync_master_clients") == "1"

    def primary_status(self) -> dict[str, str]:
        """The primary's ``Rpl_semi_sync_master_*`` status, and its ``rpl_semi_sync_master_enabled`` (ON/OFF) and ``_timeout`` (ms)."""
        with self.primary_cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master%'")
            status = {str(k): str(v) for k, v in cur.fetchall()}
            cur.execute("SELECT IF(@@GLOBAL.rpl_semi_sync_master_enabled, 'ON', 'OFF'), "
                        "@@GLOBAL.rpl_semi_sync_master_timeout")
            status["rpl_semi_sync_master_enabled"], status["rpl_semi_sync_master_timeout"] = map(str, cur.fetchone())
        return status

    def replica_status(self) -> dict[str, str]:
        """The replica's ``SHOW SLAVE STATUS`` as text (empty when it follows nobody)."""
        import pymysql

        with self.replica_cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SHOW SLAVE STATUS")
            row = cur.fetchone() or {}
        return {str(k): "" if v is None else str(v) for k, v in row.items()}

    def replica_state(self) -> str:
        """One line: the replica's threads and last errors (no password: SHOW SLAVE STATUS shows none)."""
        try:
            s = self.replica_status()
        except Exception as exc:  # noqa: BLE001 - for an error message: the replica may be gone
            return f"replica unreachable: {exc}"
        return (f"replica IO thread {s.get('Slave_IO_Running') or '-'}, SQL thread {s.get('Slave_SQL_Running') or '-'}"
                + "".join(f", {k} {s[k]!r}" for k in ("Last_IO_Error", "Last_SQL_Error") if s.get(k)))

    def _stop(self) -> None:
        errors = []
        # the replica first: it would retry a vanished primary; the proxy between them last
        for server in (self.replica, self.primary, self.toxiproxy):
            if server is None:
                continue
            try:
                server.stop()
            except ServerError as exc:
                errors.append(exc)
        self.toxiproxy = None
        if errors:
            raise errors[0]

    def restart(self, settings: dict[str, str]) -> None:
        """Restart the primary with exactly ``settings`` over :attr:`PRIMARY_OPTIONS`; wait for the replica again."""
        settings = {k: str(v) for k, v in settings.items()}
        self._check(settings)  # before stopping: a bad name leaves the servers up
        self.settings = settings
        if not self.running:
            return
        self.primary.restart(self.primary_options())
        self.wait_ready()

    def connect_kwargs(self) -> dict:
        """PyMySQL ``connect()`` arguments of the primary (the measured server): its socket, root, its password."""
        return self.primary.connect_kwargs()

    def pid(self) -> int | None:
        """The primary's process id (the measured server)."""
        return self.primary.pid()

    # -- connections of the lab's own ------------------------------------------------------
    def primary_cursor(self, cursor=None):
        """``with server.primary_cursor() as cur:`` a cursor on a new root connection to the primary (autocommit)."""
        return _Cursor(self.primary.connect_kwargs(), cursor)

    def replica_cursor(self, cursor=None):
        """``with server.replica_cursor() as cur:`` a cursor on a new root connection to the replica (autocommit)."""
        return _Cursor(self.replica.connect_kwargs(), cursor)


class _Cursor:
    """A cursor on a new connection (closed with it): the lab's own statements beside the measuring connection."""

    def __init__(self, kwargs: dict, cursorclass=None):
        self.kwargs = {**kwargs, "autocommit": True, "connect_timeout": 5,
                       **({"cursorclass": cursorclass} if cursorclass else {})}

    def __enter__(self):
        import pymysql

        self.conn = pymysql.connect(**self.kwargs)
        return self.conn.cursor()

    def __exit__(self, *exc) -> None:
        self.conn.close()
