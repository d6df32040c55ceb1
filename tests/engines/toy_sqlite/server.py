"""The toy engine's "server": a SQLite database file in a private folder, open inside this Python process."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ingestlab.errors import ServerError
from ingestlab.servers.base import InProcessServer


class SQLiteFile(InProcessServer):
    """``.lab/toysqlite-<pid>-<n>/lab.sqlite``, open while "running"; settings are PRAGMAs given at each open."""

    KIND = "toysqlite"

    @property
    def path(self) -> Path:
        """The database file."""
        return self.directory / "lab.sqlite"

    def _open(self) -> None:
        # autocommit (isolation_level=None): every statement is its own transaction, its commit inside its time
        self.db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        try:
            for name, value in self.settings.items():
                self.db.execute(f"PRAGMA {name} = {value}")
        except sqlite3.Error as exc:
            raise ServerError(f"cannot open SQLite at {self.path} with {self.settings}: {exc}") from exc

    def connect_kwargs(self) -> dict:
        """``sqlite3.connect()``'s arguments."""
        return {"database": str(self.path)}
