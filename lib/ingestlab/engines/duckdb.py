"""DuckDB: a database file opened inside this Python process, in ``.lab/duckdb-<pid>-<n>/``."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

from ingestlab.engines.base import Engine, LoadSetting
from ingestlab.engines.sql.duckdb import DuckDBSQL
from ingestlab.errors import EngineUnavailableError, UnsupportedOperationError
from ingestlab.servers.base import LocalServer


class DuckDB(Engine):
    """DuckDB through its Python API, on a database file in a private folder, inside this Python process.

    ``Engine.get("duckdb")`` opens ``.lab/duckdb-<pid>-<n>/lab.duckdb`` (a folder of mode 0700,
    removed by :meth:`close`, also after a failure: :class:`~ingestlab.servers.duckdb.DuckDBFile`).
    There is no server and no URL: the measuring connection is a connection of that database
    in autocommit (every statement its own transaction, its commit, with the write-ahead
    log's fsync, inside its time). Values travel as the driver's parameters (``?``), bound by
    DuckDB itself: :meth:`statement_call` hands them to ``execute`` with the statement. Where
    a client sends text only (:meth:`open_sender`), :meth:`render` writes them as literals
    (:meth:`~ingestlab.engines.sql.duckdb.DuckDBSQL.literal`).

    Settings are DuckDB's configuration options (``fsync_mode``, ``threads``…), given when the
    file is opened: :meth:`apply_settings` closes it and opens it again with them;
    :meth:`settings` lists every option whose value differs from a fresh in-memory DuckDB's.
    The bulk path registers each ``pyarrow`` chunk and inserts from it (DuckDB scans Arrow
    memory in place), all chunks in one transaction. :meth:`settle` is ``CHECKPOINT``: the WAL
    is written into the file, after which :meth:`data_bytes` counts the file's blocks.
    """

    NAME = "duckdb"
    URL_SCHEMES = ()
    SQL = DuckDBSQL
    #: DuckDB runs in-process through its Python package (recorded as the driver).
    DRIVERS: ClassVar[dict[str, tuple[str, str]]] = {"duckdb": ("duckdb", "duckdb")}
    PLACEHOLDER = "?"
    SQLGLOT_DIALECT = "duckdb"
    HAS_LOCAL_SERVER = True
    #: ``INSERT … SELECT`` from each ``pyarrow`` chunk registered as a view (a scan of Arrow memory).
    BULK_PATH = "arrow_scan"
    #: One commit protocol: a commit writes its WAL records and syncs them (``fsync_mode`` is
    #: notebook 05's ``async_commit`` setting, not a variant here).
    COMMIT_VARIANTS: ClassVar[dict[str, dict[str, str]]] = {"default": {}}
    TABLE_MODELS: ClassVar[dict[str, str]] = {
        "no_key": "table without a key",
        "primary_key": "table with a primary key (an ART index)",
        "primary_key_indexes": "primary key plus three secondary ART indexes",
    }
    DEFAULT_MODEL = "no_key"
    KEYED_MODEL = "primary_key"
    #: DuckDB does not partition a table (its row groups of 122 880 rows are its only division).
    MAX_PARTITIONS = 1

    #: Notebook 05's settings (see :class:`~ingestlab.engines.base.LoadSetting`).
    LOAD_SETTINGS: ClassVar[dict[str, LoadSetting]] = {
        "default": LoadSetting("DuckDB's defaults: fsync_mode = STANDARD (each commit syncs the WAL), table with its "
                               "primary key"),
        "async_commit": LoadSetting("fsync_mode = NONE: a commit returns once its WAL records are written to the OS, "
                                    "never synced; checkpoints are not synced either (an OS crash may lose the last "
                                    "commits or corrupt the file)", server={"fsync_mode": "NONE"}),
        "key_after_load": LoadSetting("no primary key during the load, ALTER TABLE … ADD PRIMARY KEY after (the ART "
                                      "index built in one pass, timed apart)", key_after_load=True),
    }
    #: Steps DuckDB does not have here, each with the reason.
    UNSUPPORTED: ClassVar[dict[str, str]] = {
        "statement_anatomy": "no instrument splits a DuckDB statement yet (issue N, part 2)",
        "native_load": "DuckDB runs inside the lab's process, which holds its file locked: no other client can load it",
        "commit_counters": "DuckDB counts no commits or WAL syncs",
        "io_counters": "DuckDB keeps no cumulative I/O counters (only per-query profiles)",
        "memory_budget_settings": "notebook 03's memory budgets are not wired for DuckDB (its memory_limit would hold "
                                  "the buffer manager)",
    }

    def make_server(self) -> LocalServer:
        from ingestlab.servers.duckdb import DuckDBFile

        return DuckDBFile()

    @classmethod
    def example_url(cls) -> str:
        """There is no URL: DuckDB runs inside the lab's Python process."""
        return "(none: DuckDB runs inside the lab's Python process)"

    def connect(self):
        """A new connection of the open database (the file's own, in this process), in autocommit."""
        if self._client_kwargs is None and self.server is not None:
            db = self.server.db
            if db is None:
                raise EngineUnavailableError("duckdb: the database is not open; call start() first")
            return db.cursor()
        duckdb = self.dbapi
        try:  # another engine of this process: the same database, if opened with the same options
            return duckdb.connect(**self.connect_kwargs())
        except duckdb.Error as exc:
            raise EngineUnavailableError(f"duckdb: cannot open {self.connect_kwargs().get('database')}: {exc}") from exc

    def _measuring_cursor(self):
        return self.conn  # a DuckDB connection runs statements itself: no cursor between

    def apply_settings(self, settings: dict[str, str]) -> dict[str, str]:
        """As every engine's, but an unknown setting fails before the measuring connection closes."""
        if self.server is not None:
            self.server.check({**self.INSTRUMENT_SETTINGS, **settings})
        return super().apply_settings(settings)

    # -- statements -----------------------------------------------------------------------
    def statement_call(self, sql: str, params: Sequence[Any] | None = None) -> Callable[[], Any]:
        """``sql`` with ``params`` as a call of the measuring connection's ``execute``: DuckDB binds the values.

        The parameters are copied into a list now; the call prepares, binds and runs the
        statement (DuckDB's own work, as a server parses a statement's text), its commit inside.
        """
        self.has("statement_call", check=True)
        if params:
            return functools.partial(self.conn.execute, sql, list(params))
        return functools.partial(self.conn.execute, sql)

    def render(self, sql: str, params: Sequence[Any] | None = None) -> str:
        """``sql`` with ``params`` written in as literals, for a client that sends text only."""
        return self.sql.render(sql, params)

    def open_sender(self, session: Mapping[str, str] | None = None) -> Callable[[bytes], Any]:
        """The measuring connection's ``execute`` of one statement text (``bytes`` decoded)."""
        self.start()
        if session:
            self.set_session(dict(session))
        conn = self.conn

        def send(text: bytes | str) -> None:
            conn.execute(text.decode() if isinstance(text, bytes) else text)
        return send

    def set_session(self, settings: dict[str, str]) -> None:
        """``SET name = ?`` for each of ``settings`` (DuckDB's options; unknown names are refused)."""
        known = {name for (name,) in self.execute("SELECT name FROM duckdb_settings()")}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise UnsupportedOperationError(f"{self.NAME}: no setting {unknown}")
        for name, value in settings.items():
            self.execute(f"SET {name} = ?", [str(value)])

    # -- writes -----------------------------------------------------------------------------
    def bulk_load(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
                  create: Sequence[str] = ()) -> int:
        """``INSERT INTO table (columns) SELECT … FROM <chunk>`` for each ``pyarrow`` chunk, in one transaction.

        Each chunk is registered as a view over its Arrow memory (no copy) and inserted from,
        its columns taken in ``columns``' order. ``create`` runs in the same transaction
        (DuckDB's DDL is transactional), ``replace`` deletes the table's rows there first.
        Returns the rows sent.
        """
        conn = self.conn
        target = f"INSERT INTO {self.quote(table)} ({', '.join(map(self.quote, columns))}) SELECT * FROM "
        n = 0
        conn.execute("BEGIN TRANSACTION")
        try:
            for statement in create:
                conn.execute(statement)
            if replace:
                conn.execute(f"DELETE FROM {self.quote(table)}")
            for i, chunk in enumerate(chunks):
                view = f"ingestlab_chunk_{i}"
                conn.register(view, chunk.select(list(range(len(columns)))))
                try:
                    conn.execute(target + self.quote(view))
                finally:
                    conn.unregister(view)
                n += chunk.num_rows
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(self.dbapi.Error):  # a failed COMMIT has ended the transaction already
                conn.execute("ROLLBACK")
            raise
        return n

    # -- state ------------------------------------------------------------------------------
    def data_bytes(self, table: str) -> int:
        """Bytes of the database file's blocks in use but by other tables' columns: ``table`` with its indexes.

        DuckDB reports the blocks of a table's column segments (``pragma_storage_info``) but not
        those of its ART indexes, so the table is what the file holds (``pragma_database_size``'s
        used blocks) less the other tables' segment blocks: its own columns, every index and the
        catalog. Call after :meth:`settle`, when the WAL is in the file.
        """
        block_size, used = self.execute(
            "SELECT block_size, used_blocks FROM pragma_database_size() WHERE database_name = current_database()")[0]
        others = self.execute("SELECT schema_name, table_name FROM duckdb_tables() "
                              "WHERE database_name = current_database() AND NOT (schema_name = current_schema() "
                              "AND table_name = ?)", [table])
        blocks: set[int] = set()
        for schema, name in others:
            blocks |= self._segment_blocks(f"{self.quote(schema)}.{self.quote(name)}")
        return int(block_size) * max(int(used) - len(blocks), 0)

    def _segment_blocks(self, qualified: str) -> set[int]:
        """The persistent blocks (ids) of a table's column segments."""
        rows = self.execute("SELECT block_id, additional_block_ids FROM pragma_storage_info(?) "
                            "WHERE persistent AND block_id >= 0", [qualified])
        return {b for block, more in rows for b in (block, *(more or ()))}

    def settle(self, table: str, timeout_s: float = 600.0) -> None:
        """``CHECKPOINT``: the WAL written into the database file (DuckDB has no other background work)."""
        self.execute("CHECKPOINT")

    # -- metadata ---------------------------------------------------------------------------
    def server_version(self) -> str:
        """DuckDB's library version (``2.0.0``)."""
        return str(self.execute("SELECT library_version FROM pragma_version()")[0][0]).lstrip("v")

    def settings(self) -> dict[str, str]:
        """Every option whose value differs from a fresh in-memory DuckDB's (``duckdb_settings()``)."""
        live = dict(self.execute("SELECT name, value FROM duckdb_settings()"))
        defaults = _default_settings()
        return {k: str(v) for k, v in sorted(live.items()) if defaults.get(k, object()) != v}


@functools.lru_cache(maxsize=None)
def _default_settings() -> dict[str, Any]:
    """``duckdb_settings()`` of a fresh in-memory database: DuckDB's defaults on this machine."""
    import duckdb

    with duckdb.connect(":memory:") as con:
        return dict(con.execute("SELECT name, value FROM duckdb_settings()").fetchall())
