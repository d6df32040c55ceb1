"""DuckDB, a database file opened inside this Python process in a private directory."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.servers.base import InProcessServer


def _duckdb():
    try:
        import duckdb
    except ImportError as exc:
        raise EngineUnavailableError("DuckDB needs the 'duckdb' package: run `make .venv`") from exc
    return duckdb


class DuckDBFile(InProcessServer):
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

    @property
    def path(self) -> Path:
        """The database file."""
        return self.directory / self.FILE

    def _open(self) -> None:
        duckdb = _duckdb()
        try:
            self.db = duckdb.connect(str(self.path), config=dict(self.settings))
        except duckdb.Error as exc:
            raise ServerError(f"cannot open DuckDB at {self.path} with {self.settings}: {exc}") from exc

    def check(self, settings: dict[str, str]) -> None:
        """Raise :class:`ServerError` for names in ``settings`` that are no DuckDB option (when the file is open)."""
        if self.db is None:
            return
        known = {name for (name,) in self.db.execute("SELECT name FROM duckdb_settings()").fetchall()}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ServerError(f"not a DuckDB setting: {unknown}")

    def connect_kwargs(self) -> dict:
        """``duckdb.connect()``'s arguments: the file and its options (another connection must give the same)."""
        return {"database": str(self.path), "config": dict(self.settings)}
