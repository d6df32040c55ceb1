"""The toy engine's adapter: SQLite's statements through the standard library's ``sqlite3``."""

from __future__ import annotations

import datetime
import decimal
import functools
import sqlite3
from typing import Any, Callable, ClassVar, Sequence

from ingestlab.engines.base import Engine, EngineStyle, Wire
from ingestlab.engines.capabilities import CommitVariants
from ingestlab.servers.base import LocalServer


def _value(value: Any) -> Any:
    # sqlite3 stores numbers, text and bytes; the seed's DECIMAL and DATE values travel as text
    if isinstance(value, (decimal.Decimal, datetime.date)):
        return str(value)
    return value


class ToyCommitVariants(CommitVariants):
    """SQLite's two ways of ending a commit: synced to disk, or left to the OS."""

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "sync_full": {"synchronous": "FULL"},
        "sync_off": {"synchronous": "OFF"},
    }


class ToySQLite(Engine):
    """SQLite on a file of its own, inside this Python process; no URL, no bulk path, no anatomy."""

    NAME = "toysqlite"
    STYLE = EngineStyle(title="Toy SQLite", colour="#A6761D", marker="h")
    WIRE = Wire(placeholder="?", drivers={"pysqlite": ("sqlite3", "sqlite3")}, sqlglot_dialect="sqlite")
    HAS_LOCAL_SERVER = True
    CAPABILITIES: ClassVar[dict[str, Any]] = {"commit_variants": ToyCommitVariants}

    def _make_server(self) -> LocalServer:
        from .server import SQLiteFile

        return SQLiteFile()

    def connect(self):
        return self.server.db

    def _measuring_cursor(self):
        return self.conn

    def execute(self, sql: str, params: Sequence[Any] | None = None, *, conn=None) -> list[tuple]:
        return (conn or self.conn).execute(sql, [_value(v) for v in params or ()]).fetchall()

    def _statement_call(self, sql: str, params: Sequence[Any] | None = None) -> Callable[[], Any]:
        self.has("statement_call", check=True)
        return functools.partial(self.conn.execute, sql, [_value(v) for v in params or ()])

    def server_version(self) -> str:
        return sqlite3.sqlite_version

    def settings(self) -> dict[str, str]:
        return {name: str(self.execute(f"PRAGMA {name}")[0][0]) for name in ("synchronous", "journal_mode")}
