"""Replication as the primary sees it: its standbys, their replay, and a watch that ends a commit no standby confirms."""

from __future__ import annotations

import datetime as dt
import functools
import logging
import threading
import time
from typing import Any, Callable, ClassVar

from ingestlab.errors import ConfigError, ServerError

log = logging.getLogger(__name__)

#: Every standby the primary streams to: name, address, state, what the primary waits for and how long it took.
STANDBYS_SQL = ("SELECT application_name, coalesce(host(client_addr), 'socket'), client_port, state, sync_state, "
                "sync_priority, extract(epoch FROM write_lag) * 1000, extract(epoch FROM flush_lag) * 1000, "
                "extract(epoch FROM replay_lag) * 1000 FROM pg_stat_replication ORDER BY application_name")


def parse_standbys(value: Any, parameter: str, shown: str) -> list[tuple[str, int]]:
    """``host:port,host:port`` (a URL's ``standbys`` key) as ``[(host, port), …]``.

    Raises
    ------
    ConfigError
        Naming ``parameter`` and ``shown`` (the URL, masked) for anything else.

    Examples
    --------
    >>> parse_standbys("db2:5432, db3:5433", "ENGINES", "u")
    [('db2', 5432), ('db3', 5433)]
    >>> parse_standbys("db2", "ENGINES", "u")
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: ENGINES='u' is not valid: expected standbys=host:port,host:port,… in the URL's query (not 'db2')
    """
    found = []
    for item in str(value).split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(parameter, shown, f"standbys=host:port,host:port,… in the URL's query (not {item.strip()!r})")
        found.append((host, int(port)))
    return found


def replication_rows(execute: Callable[..., list[tuple]]) -> list[dict[str, Any]]:
    """``pg_stat_replication`` as dicts (lags in ms; None where the primary has not measured one)."""
    keys = ("name", "client_addr", "client_port", "state", "sync_state", "sync_priority", "write_lag_ms",
            "flush_lag_ms", "replay_lag_ms")
    return [{k: float(v) if k.endswith("_ms") and v is not None else v for k, v in zip(keys, row)}
            for row in execute(STANDBYS_SQL)]


class SyncWatch:
    """A thread that ends synchronous commits waiting for a standby that is gone, at a stated bound.

    With synchronous replication a commit waits until a standby confirms it; when the standbys
    it waits for stop (killed, stopped, cut off), it waits for ever: PostgreSQL has no timeout
    for that wait, and cancelling it (``statement_timeout``) only turns it into a warning, the
    commit reported as done. The watch reads the primary, on a connection of its own, every
    :attr:`INTERVAL_S`: once a standby it saw streaming has not streamed for :attr:`BOUND_S`,
    or a commit has waited in ``SyncRep`` for :attr:`WAIT_BOUND_S`, it records :attr:`cause`
    (which standby, since when, the bound) and terminates every backend of its user waiting in ``SyncRep`` (now
    and at every later look), so the statement that waited fails; the adapter raises
    :class:`~ingestlab.errors.ServerError` with :attr:`cause`, and the run ends with exit 5.

    Parameters
    ----------
    connect : callable
        Opens a new autocommit connection to the primary.
    label : str
        The engine's name in messages.
    """

    #: Seconds a standby may stop streaming before the run ends.
    BOUND_S: ClassVar[float] = 10.0
    #: Seconds a commit may wait in ``SyncRep`` while every standby shows streaming. Longer than
    #: the standby's ``wal_receiver_status_interval`` (10 s): under ``remote_write`` a commit now
    #: and then waits for that periodic reply, which is what the variant costs, not a lost standby.
    WAIT_BOUND_S: ClassVar[float] = 30.0
    #: Seconds between two looks at the primary.
    INTERVAL_S: ClassVar[float] = 0.5

    def __init__(self, connect: Callable[[], Any], label: str):
        self._connect = connect
        self.label = label
        self.cause: str | None = None
        self._conn = None
        self._last_streaming: dict[str, float] = {}
        self._stop = threading.Event()
        self._paused = threading.Lock()
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "SyncWatch":
        """Begin watching (the standbys streaming now are the ones watched)."""
        self._look()
        self._thread = threading.Thread(target=self._run, name=f"{self.label}-sync-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching and close the watch's connection."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._close()

    def paused(self):
        """A context in which the watch does not look (the primary restarts); it starts afresh after."""
        watch = self

        class _Paused:
            def __enter__(self):
                watch._paused.acquire()
                watch._close()

            def __exit__(self, *exc):
                watch._last_streaming.clear()
                watch._paused.release()
        return _Paused()

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a connection the primary dropped closes as it can
                pass

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL_S):
            with self._paused:
                try:
                    self._look()
                except Exception as exc:  # noqa: BLE001 - the primary itself gone: the lab's other checks say so
                    log.debug("%s: the sync watch could not read the primary: %s", self.label, exc)
                    self._close()

    # -- looking -----------------------------------------------------------------------------
    def _execute(self, sql: str) -> list[tuple]:
        if self._conn is None:
            self._conn = self._connect()
        with self._conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall() if cur.description else []

    def _look(self) -> None:
        now = time.time()
        rows = self._execute("SELECT application_name, state FROM pg_stat_replication")
        for name, state in rows:
            if state == "streaming":
                self._last_streaming[name] = now
        if not self._last_streaming:
            return  # nothing to wait for: no standby has streamed while the watch looked
        waited = self._execute("SELECT coalesce(max(extract(epoch FROM clock_timestamp() - query_start)), 0) "
                               "FROM pg_stat_activity WHERE wait_event = 'SyncRep'")[0][0]
        gone = {name: seen for name, seen in self._last_streaming.items() if now - seen >= self.BOUND_S}
        if self.cause is None and (gone or float(waited) >= self.WAIT_BOUND_S):
            self.cause = self._describe(gone, float(waited), now)
            log.error("%s: %s", self.label, self.cause)
        if self.cause is not None:
            # the lab's user's only: on a server given by URL, other users' sessions are not the lab's to end
            self._execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep' "
                          "AND usename = current_user AND pid <> pg_backend_pid()")

    def _describe(self, gone: dict[str, float], waited: float, now: float) -> str:
        if gone:
            name, seen = min(gone.items(), key=lambda item: item[1])
            since = dt.datetime.fromtimestamp(seen, dt.timezone.utc).strftime("%H:%M:%S UTC")
            return (f"standby {name} has not streamed since {since} ({now - seen:.1f} s, bound "
                    f"{self.BOUND_S:g} s): synchronous commits wait for it for ever, so the run stops here")
        return (f"a commit has waited {waited:.1f} s for a standby to confirm it (bound "
                f"{self.WAIT_BOUND_S:g} s; every standby still shows streaming: one stopped answering?), so the run stops here")

    # -- what the adapter raises ---------------------------------------------------------------
    def explained(self, call: Callable[..., Any], errors: tuple[type[BaseException], ...]) -> Callable[..., Any]:
        """``call``, raising :class:`ServerError` with :attr:`cause` (from the driver's error) once the watch fired."""
        @functools.wraps(call)
        def run(*args, **kwargs):
            try:
                return call(*args, **kwargs)
            except errors as exc:
                if self.cause is None:
                    raise
                raise ServerError(f"{self.label}: {self.cause}") from exc
        return run

    def message(self, own: Callable[[], str]) -> Callable[[], str]:
        """An error-message function (``NativeSender.error``) that gives :attr:`cause` once the watch fired, else ``own()``."""
        return lambda: self.cause or own()
