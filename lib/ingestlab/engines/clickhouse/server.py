"""ClickHouse through chDB: its embedded server, started inside this Python process on a private data path."""

from __future__ import annotations

import os
from typing import ClassVar

from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.servers.base import PID_FILE, LocalServer


def chdb_session():
    """chDB's ``session`` module (raises :class:`EngineUnavailableError` without chDB)."""
    try:
        from chdb import session
    except ImportError as exc:
        raise EngineUnavailableError("ClickHouse needs the 'chdb' package: run `make .venv`") from exc
    return session


def open_session(path: str):
    """A new ``chdb.session.Session`` on the data path ``path``.

    Raises
    ------
    ServerError
        When chDB refuses it: its embedded server runs once per process, on one data path,
        until every session on that path is closed.
    """
    session = chdb_session()
    try:
        return session.Session(path)
    except RuntimeError as exc:  # chDB's connect raises RuntimeError itself; its query errors subclass it
        raise ServerError(f"cannot open a chDB session on {path}: {exc} (chDB runs one embedded ClickHouse per "
                          "process, on one data path: close the other engine first)") from exc


class ChDBServer(LocalServer):
    """ClickHouse's embedded server (chDB), on ``.lab/clickhouse-<pid>-<n>/data``, alive in this process while "running".

    chDB runs ClickHouse (``clickhouse-local``'s server) inside the Python process, once per
    process and on one data path: it starts with the first session on that path and stops
    when the last one closes. :meth:`start` opens the server's own session, which keeps it
    alive while connections come and go; :meth:`stop` closes it and removes the directory.
    Its :attr:`data_dir` is ClickHouse's data path (``store/``, ``metadata/``, ``tmp/``).
    ClickHouse's settings here are session settings (``async_insert``, ``max_threads``…):
    every connection opens a fresh session and sets them (``SET``), so :meth:`restart` checks
    and records them, and the next connection has exactly them in force (a new session starts
    from the defaults; a ``SET`` in one session is seen by no other). ``server.pid`` holds this
    process's pid, so :func:`~ingestlab.servers.base.reap` removes the data of a killed process.
    """

    KIND: ClassVar[str] = "clickhouse"

    def __init__(self, directory=None, *, keep: bool = False):
        super().__init__(directory, keep=keep)
        self.session = None

    def _start(self) -> None:
        (self.directory / PID_FILE).write_text(f"{os.getpid()}\n")
        self.session = open_session(str(self.data_dir))

    def _stop(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            session.close()
        (self.directory / PID_FILE).unlink(missing_ok=True)

    def check(self, settings: dict[str, str]) -> None:
        """Raise :class:`ServerError` for names in ``settings`` that are no ClickHouse session setting (when running)."""
        if self.session is None or not settings:
            return
        known = self.session.query("SELECT name FROM system.settings", "TabSeparated").bytes().decode().split()
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise ServerError(f"not a ClickHouse setting: {unknown}")

    def restart(self, settings: dict[str, str]) -> None:
        """Put exactly ``settings`` in force for the next connections; unknown names fail here."""
        settings = {k: str(v) for k, v in settings.items()}
        self.check(settings)
        self.settings = settings

    def connect_kwargs(self) -> dict:
        """Where the data path is, and the session settings every connection sets."""
        return {"path": str(self.data_dir), "settings": dict(self.settings)}

    def pid(self) -> int | None:
        """This process's id while the embedded server runs (ClickHouse runs inside it)."""
        return os.getpid() if self.session is not None else None
