"""DuckDB, a database file opened inside this Python process in a private directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.servers.base import PID_FILE, LocalServer


def _duckdb():
    try:
        import duckdb
    except ImportError as exc:
        raise EngineUnavailableError("DuckDB needs the 'duckdb' package: run `make .venv`") from exc
    return duckdb


class DuckDBFile(LocalServer):
    """A DuckDB database file, ``.lab/duckdb-<pid>-<n>/lab.duckdb``, open in this process while "running".

    DuckDB is a library, so the "server" is this Python process: :meth:`pid` is its pid,
    :meth:`start` opens the file (with its write-ahead log ``lab.duckdb.wal`` beside it),
    :meth:`stop` closes it and removes the directory. The settings are DuckDB's
    configuration options (``fsync_mode``, ``threads``…), given when the database is opened:
    :meth:`restart` closes it and opens it again with exactly them (DuckDB refuses a second
    open of the file with other options while a connection to it is left). ``server.pid``
    holds this process's pid, so :func:`~ingestlab.servers.base.reap` removes the file of a
    process that was killed.
    """

    KIND: ClassVar[str] = "duckdb"
    #: File name of the database inside the server's directory.
    FILE: ClassVar[str] = "lab.duckdb"

    def __init__(self, directory=None, *, keep: bool = False):
        super().__init__(directory, keep=keep)
        self.db = None

    @property
    def path(self) -> Path:
        """The database file."""
        return self.directory / self.FILE

    def _start(self) -> None:
        (self.directory / PID_FILE).write_text(f"{os.getpid()}\n")
        self._open()

    def _open(self) -> None:
        duckdb = _duckdb()
        try:
            self.db = duckdb.connect(str(self.path), config=dict(self.settings))
        except duckdb.Error as exc:
            raise ServerError(f"cannot open DuckDB at {self.path} with {self.settings}: {exc}") from exc

    def _close(self) -> None:
        db, self.db = self.db, None
        if db is not None:
            db.close()

    def _stop(self) -> None:
        self._close()
        (self.directory / PID_FILE).unlink(missing_ok=True)

    def check(self, settings: dict[str, str]) -> None:
        """Raise :class:`ServerError` for names in ``settings`` that are no DuckDB option (when the file is open)."""
        if self.db is None:
            return
        known = {name for (name,) in self.db.execute("SELECT name FROM duckdb_settings()").fetchall()}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ServerError(f"not a DuckDB setting: {unknown}")

    def restart(self, settings: dict[str, str]) -> None:
        """Close the database and open it again with exactly ``settings`` in force.

        Unknown option names fail before the database is closed.
        """
        settings = {k: str(v) for k, v in settings.items()}
        self.check(settings)
        self.settings = settings
        if self.db is None:
            return
        self._close()
        self._open()

    def connect_kwargs(self) -> dict:
        """``duckdb.connect()``'s arguments: the file and its options (another connection must give the same)."""
        return {"database": str(self.path), "config": dict(self.settings)}

    def pid(self) -> int | None:
        """This process's id while the database is open (DuckDB runs inside it)."""
        return os.getpid() if self.db is not None else None
