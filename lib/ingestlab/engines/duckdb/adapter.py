"""DuckDB: a database file opened inside this Python process, in ``.lab/duckdb-<pid>-<n>/``."""

from __future__ import annotations

import contextlib
import functools
import statistics
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

from ingestlab import anatomy
from ingestlab.engines import capabilities
from ingestlab.engines.base import Engine, EngineStyle, Wire
from ingestlab.engines.capabilities import LoadSetting
from ingestlab.engines.duckdb.sql import DuckDBSQL
from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.servers.base import LocalServer


class DuckDBCommitVariants(capabilities.CommitVariants):
    """One commit protocol: a commit writes its WAL records and syncs them.

    (``fsync_mode`` is notebook 05's ``async_commit`` setting, not a variant here.)
    """

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {"default": {}}


class DuckDBProfiledStatement(capabilities.ProfiledStatement):
    """DuckDB's own JSON profile of each statement."""

    #: The anatomy reads each statement's JSON profile (``get_profiling_information``; see ``_ProfileRecorder``).
    PROFILE_KIND = "duckdb_profile"


class DuckDBTableModels(capabilities.TableModels):
    """DuckDB's tables, keyed by ART indexes."""

    MODELS: ClassVar[dict[str, str]] = {
        "no_key": "table without a key",
        "primary_key": "table with a primary key (an ART index)",
        "primary_key_indexes": "primary key plus three secondary ART indexes",
    }
    #: DuckDB does not partition a table (its row groups of 122 880 rows are its only division).
    MAX_PARTITIONS = 1


class DuckDBLoadSettings(capabilities.LoadSettings):
    """DuckDB's trade-offs of a load."""

    #: Notebook 05's settings (see :class:`~ingestlab.engines.capabilities.LoadSetting`).
    SETTINGS: ClassVar[dict[str, LoadSetting]] = {
        "default": LoadSetting("DuckDB's defaults: fsync_mode = STANDARD (each commit syncs the WAL), table with its "
                               "primary key"),
        "async_commit": LoadSetting("fsync_mode = NONE: a commit returns once its WAL records are written to the OS, "
                                    "never synced; checkpoints are not synced either (an OS crash may lose the last "
                                    "commits or corrupt the file)", server={"fsync_mode": "NONE"}),
        "key_after_load": LoadSetting("no primary key during the load, ALTER TABLE … ADD PRIMARY KEY after (the ART "
                                      "index built in one pass, timed apart)", key_after_load=True),
    }


class DuckDBNativeLoad(capabilities.NativeLoad):
    """DuckDB: the engine's own client loading a CSV file."""

    def load(self, table: str, columns: Sequence[str], path: str) -> int:
        """DuckDB's own CSV reader: ``COPY table (columns) FROM 'path' (FORMAT csv, …)``.

        The file is :func:`ingestlab.datagen.csv_bytes`'s: no header, every value quoted, NULL a bare
        empty field (a quoted empty field is an empty text: ``allow_quoted_nulls = false``).

        DuckDB runs inside the lab's process, which holds its file locked, so there is no other
        client to start: the engine's own import is its ``COPY``, run on the measuring connection.
        Returns the rows DuckDB reported.
        """
        sql = self.engine.sql
        cols = ", ".join(map(sql.quote, columns))
        (rows,), = self.engine.execute(f"COPY {sql.quote(table)} ({cols}) FROM {sql.literal(str(path))} "
                                       "(FORMAT csv, HEADER false, QUOTE '\"', ESCAPE '\"', NULL '', allow_quoted_nulls false)")
        return int(rows)


class DuckDBBulkLoad(capabilities.BulkLoad):
    """``INSERT … SELECT`` from each Arrow chunk registered as a view."""

    #: ``INSERT … SELECT`` from each ``pyarrow`` chunk registered as a view (a scan of Arrow memory).
    PATH = "arrow_scan"

    def load(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
             create: Sequence[str] = ()) -> int:
        """``INSERT INTO table (columns) SELECT … FROM <chunk>`` for each ``pyarrow`` chunk, in one transaction.

        Each chunk is registered as a view over its Arrow memory (no copy) and inserted from,
        its columns taken in ``columns``' order. ``create`` runs in the same transaction
        (DuckDB's DDL is transactional), ``replace`` deletes the table's rows there first.
        Returns the rows sent.
        """
        conn = self.engine.conn
        quote = self.engine.sql.quote
        target = f"INSERT INTO {quote(table)} ({', '.join(map(quote, columns))}) SELECT * FROM "
        n = 0
        conn.execute("BEGIN TRANSACTION")
        try:
            for statement in create:
                conn.execute(statement)
            if replace:
                conn.execute(f"DELETE FROM {self.engine.sql.quote(table)}")
            for i, chunk in enumerate(chunks):
                view = f"ingestlab_chunk_{i}"
                conn.register(view, chunk.select(list(range(len(columns)))))
                try:
                    conn.execute(target + self.engine.sql.quote(view))
                finally:
                    conn.unregister(view)
                n += chunk.num_rows
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(self.engine.driver.module.Error):  # a failed COMMIT has ended the transaction already
                conn.execute("ROLLBACK")
            raise
        return n


class DuckDB(Engine):
    """DuckDB through its Python API, on a database file in a private folder, inside this Python process.

    ``engines.get("duckdb")`` opens ``.lab/duckdb-<pid>-<n>/lab.duckdb`` (a folder of mode 0700,
    removed by :meth:`close`, also after a failure: :class:`~ingestlab.engines.duckdb.server.DuckDBFile`).
    There is no server and no URL: the measuring connection is a connection of that database
    in autocommit (every statement its own transaction, its commit, with the write-ahead
    log's fsync, inside its time). Values travel as the driver's parameters (``?``), bound by
    DuckDB itself: :meth:`statement_call` hands them to ``execute`` with the statement. Where
    a client sends text only (:meth:`_open_sender`), :meth:`_render` writes them as literals
    (:meth:`~ingestlab.engines.duckdb.sql.DuckDBSQL.literal`).

    Settings are DuckDB's configuration options (``fsync_mode``, ``threads``…), given when the
    file is opened: :meth:`apply_settings` closes it and opens it again with them;
    :meth:`settings` lists every option whose value differs from a fresh in-memory DuckDB's.
    The bulk path registers each ``pyarrow`` chunk and inserts from it (DuckDB scans Arrow
    memory in place), all chunks in one transaction. :meth:`_settle` is ``CHECKPOINT``: the WAL
    is written into the file, after which :meth:`_data_bytes` counts the file's blocks.
    """

    NAME = "duckdb"
    STYLE = EngineStyle(title="DuckDB", colour="#E69F00", marker="o", words={
        "client_api": "client API (outside DuckDB's span)", "parsing": "parsing", "optimizer": "optimizer",
        "physical_planning": "physical planning", "column_data_scan": "column data scan",
        "table_scan": "table scan", "projection": "projection", "batch_insert": "batch insert",
        "insert_operator": "insert operator", "result_collector": "result collector",
        "commit_local_storage": "commit of local storage", "write_to_wal": "WAL write", "checkpoint": "checkpoint",
        "wal_fsync": "WAL fsync",
    })
    PACKAGE = "duckdb"
    SQL = DuckDBSQL
    #: DuckDB runs in-process through its Python package (recorded as the driver).
    WIRE = Wire(placeholder="?", drivers={"duckdb": ("duckdb", "duckdb")}, sqlglot_dialect="duckdb",
                example="(none: DuckDB runs inside the lab's Python process)")
    HAS_LOCAL_SERVER = True
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        "commit_variants": DuckDBCommitVariants, "profiled_statement": DuckDBProfiledStatement,
        "table_models": DuckDBTableModels, "load_settings": DuckDBLoadSettings, "native_load": DuckDBNativeLoad,
        "bulk_load": DuckDBBulkLoad,
        "commit_counters": "DuckDB counts no commits or WAL syncs",
        "io_counters": "DuckDB keeps no cumulative I/O counters (only per-query profiles)",
        "memory_budget": "notebook 03's memory budgets are not wired for DuckDB (its memory_limit would hold "
                         "the buffer manager)",
    }


    def _make_server(self) -> LocalServer:
        from ingestlab.engines.duckdb.server import DuckDBFile

        return DuckDBFile()

    def connect(self):
        """A new connection of the open database (the file's own, in this process), in autocommit."""
        if self._client_kwargs is None and self.server is not None:
            db = self.server.db
            if db is None:
                raise EngineUnavailableError("duckdb: the database is not open; call start() first")
            return db.cursor()
        duckdb = self.driver.module
        try:  # another engine of this process: the same database, if opened with the same options
            return duckdb.connect(**self.connect_kwargs())
        except duckdb.Error as exc:
            raise EngineUnavailableError(f"duckdb: cannot open {self.connect_kwargs().get('database')}: {exc}") from exc

    def _measuring_cursor(self):
        return self.conn  # a DuckDB connection runs statements itself: no cursor between

    def apply_settings(self, settings: dict[str, str]) -> dict[str, str]:
        """As every engine's, but an unknown setting fails before the measuring connection closes."""
        if self.server is not None:
            self.server.check({**self._INSTRUMENT_SETTINGS, **settings})
        return super().apply_settings(settings)

    # -- statements -----------------------------------------------------------------------
    def _statement_call(self, sql: str, params: Sequence[Any] | None = None) -> Callable[[], Any]:
        """``sql`` with ``params`` as a call of the measuring connection's ``execute``: DuckDB binds the values.

        The parameters are copied into a list now; the call prepares, binds and runs the
        statement (DuckDB's own work, as a server parses a statement's text), its commit inside.
        """
        self.has("statement_call", check=True)
        if params:
            return functools.partial(self.conn.execute, sql, list(params))
        return functools.partial(self.conn.execute, sql)

    def _render(self, sql: str, params: Sequence[Any] | None = None) -> str:
        """``sql`` with ``params`` written in as literals, for a client that sends text only."""
        return self.sql.render(sql, params)

    def _open_sender(self, session: Mapping[str, str] | None = None) -> Callable[[bytes], Any]:
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
        self._set_known(settings, "SELECT name FROM duckdb_settings()", "SET {name} = ?", "setting")

    # -- writes -----------------------------------------------------------------------------
    # -- state ------------------------------------------------------------------------------
    def _data_bytes(self, table: str) -> int:
        """Bytes of the database file's blocks in use but by other tables' columns: ``table`` with its indexes.

        DuckDB reports the blocks of a table's column segments (``pragma_storage_info``) but not
        those of its ART indexes, so the table is what the file holds (``pragma_database_size``'s
        used blocks) less the other tables' segment blocks: its own columns, every index and the
        catalog. Call after :meth:`_settle`, when the WAL is in the file.
        """
        block_size, used = self.execute(
            "SELECT block_size, used_blocks FROM pragma_database_size() WHERE database_name = current_database()")[0]
        others = self.execute("SELECT schema_name, table_name FROM duckdb_tables() "
                              "WHERE database_name = current_database() AND NOT (schema_name = current_schema() "
                              "AND table_name = ?)", [table])
        blocks: set[int] = set()
        for schema, name in others:
            blocks |= self._segment_blocks(f"{self.sql.quote(schema)}.{self.sql.quote(name)}")
        return int(block_size) * max(int(used) - len(blocks), 0)

    def _segment_blocks(self, qualified: str) -> set[int]:
        """The persistent blocks (ids) of a table's column segments."""
        rows = self.execute("SELECT block_id, additional_block_ids FROM pragma_storage_info(?) "
                            "WHERE persistent AND block_id >= 0", [qualified])
        return {b for block, more in rows for b in (block, *(more or ()))}

    def _settle(self, table: str, timeout_s: float = 600.0) -> None:
        """``CHECKPOINT``: the WAL written into the database file (DuckDB has no other background work)."""
        self.execute("CHECKPOINT")

    # -- anatomy ----------------------------------------------------------------------------
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


class _ProfileRecorder(anatomy.Recorder):
    """Each statement's parts from DuckDB's JSON profile of it, kept in memory and read after it.

    For the pass, the measuring connection profiles every statement and keeps the last one's
    profile without writing it anywhere (``SET profiling_coverage = 'ALL'``: INSERTs too, not only
    SELECTs; ``SET enable_profiling = 'no_output'``: no file, nothing printed); right after each
    observed INSERT the recorder takes that profile (``get_profiling_information(format='json')``,
    outside the clock) and parses it (:mod:`ingestlab.engines.duckdb.profile`). Both settings are
    reset when the pass ends.

    Parts (ms), in the order a statement passes through them:

    * ``client_api`` — the client's clock minus the profile's ``query.total_time``, DuckDB's span of
      the query: the Python API around it, including the parse of the statement's text, which
      DuckDB does before the query's clock starts (the profile has no ``parser`` time for it), and
      the parameters' conversion from Python values;
    * ``planning``, ``optimizer``, ``physical_planning`` — the ``total_time`` of the profile's
      ``planner`` (binding inside it), ``optimizer`` (every optimizer's own time inside it) and
      ``physical_planner`` (column binding, plan creation, type resolution inside it);
    * one part per operator, named by its type in lower case (``column_data_scan``,
      ``batch_insert``, ``result_collector``; ``INSERT`` as ``insert_operator``): its ``timing``, each
      operator's own (they add up to ``query.cpu_time``, which is therefore no part);
    * ``commit_local_storage``, ``write_to_wal``, ``checkpoint`` — the profile's ``storage``
      latencies of the commit: the transaction's rows appended to the table, its WAL records
      serialized, and a checkpoint when the WAL has outgrown its threshold.

    * ``wal_fsync`` — a rung (:meth:`_climb`), measured after each observed statement outside its
      clock, because no metric times it: the rest of the commit after ``write_to_wal``, whose timer
      stops before the WAL is flushed and synced (``FlushCommit``), is the single-row INSERT's
      largest untimed step (bench/README.md, "Measurements behind the code's rules"). The rung is the lab's clock of the same
      single-row INSERT into a probe table with ``fsync_mode`` as set minus with ``'none'``, each
      the last of ``ProfiledStatement.SETTLE + 1`` in a row.

    Not timed by any metric, so ``unexplained`` (the span less the parts above): the executor's
    set-up of the pipelines and their tasks, beginning the transaction, and the rest of the commit
    (the commit id and the undo buffer's commit). ``system.blocked_thread_time`` (the query's wait for a thread) may overlap
    operator time, so it is an extra, as are the span and ``cpu_time``.

    Unobserved statements (``ProfiledStatement.anatomy``'s blocks): profiling stays on and nothing
    is read between them (profiling itself costs a statement little: bench/README.md); after each block the profile of its last statement is read (it
    keeps the last one only). Every unobserved statement gets, part by part, the median over the blocks
    of their last statement's (``client_api`` that statement's client time minus its span).
    """

    PASS = "profile"
    SOURCE = "DuckDB JSON profile"
    #: Summary key of the parsed profile → part: the phases before execution, then the commit's steps.
    PHASES: ClassVar[dict[str, str]] = {"parsing_ms": "parsing", "planning_ms": "planning",
                                        "optimizer_ms": "optimizer", "physical_planning_ms": "physical_planning"}
    COMMIT: ClassVar[dict[str, str]] = {"commit_local_storage_ms": "commit_local_storage",
                                        "write_to_wal_ms": "write_to_wal", "checkpoint_ms": "checkpoint"}
    ORDER = ("client_api", *PHASES.values(), "column_data_scan", "table_scan", "projection", "batch_insert",
             "insert_operator", "result_collector", *COMMIT.values(), "wal_fsync")
    #: Operator types whose lower-case name means something else in the lab ("insert" is notebook 03's operation).
    _OPERATOR_PARTS: ClassVar[dict[str, str]] = {"INSERT": "insert_operator"}
    #: Profile groups of each phase part, for the parts' sources.
    _GROUPS: ClassVar[dict[str, str]] = {"parsing_ms": "parser", "planning_ms": "planner",
                                         "optimizer_ms": "optimizer", "physical_planning_ms": "physical_planner"}

    def begin(self) -> None:
        conn = self.engine.conn
        conn.execute("SET profiling_coverage = 'ALL'")
        conn.execute("SET enable_profiling = 'no_output'")
        self.block_parts: list[list[anatomy.Part]] = []  # per unobserved block: its last statement's parts
        engine = self.engine
        self.probe = f"{self.table}_probe"
        engine.execute(engine.sql.drop_table_sql(self.probe))
        engine.execute(f"CREATE TABLE {engine.sql.quote(self.probe)} AS SELECT * FROM {engine.sql.quote(self.table)} LIMIT 0")
        self.probe_sql = engine.sql.insert_sql(self.probe, self.columns, 1)
        self.fsync_mode = engine.execute("SELECT current_setting('fsync_mode')")[0][0]

    def _climb(self, row: Sequence[Any]) -> None:
        """One sample of the ``wal_fsync`` rung: the probe INSERT with ``fsync_mode`` as set minus with ``'none'``."""
        engine = self.engine
        call = engine.sender.statement_call(self.probe_sql, row)
        warm = engine.capability("profiled_statement").SETTLE + 1
        engine.execute("SET GLOBAL fsync_mode = 'none'")
        try:
            unsynced = self.last_of(call, warm)
        finally:
            engine.execute(f"SET GLOBAL fsync_mode = {engine.sql.literal(self.fsync_mode)}")
        synced = self.last_of(call, warm)
        self.rung("wal_fsync", synced - unsynced,
                  f"the lab's clock of a single-row INSERT into a probe table with fsync_mode = "
                  f"{self.fsync_mode.lower()!r} minus with 'none' (each the last of {warm} in a row)")

    def _profile(self):
        from ingestlab.profiles import parse

        kind = self.engine.capability("profiled_statement").PROFILE_KIND
        profile = parse(self.engine.conn.get_profiling_information(format="json"), kind)
        if profile.summary.get("sql") != self.sql or "total_ms" not in profile.summary:
            raise ServerError(f"{self.engine.NAME}: the last profile is of {profile.summary.get('sql', '?')[:60]!r}, "
                              f"not the anatomy's INSERT (or it has not ended)")
        return profile

    def _parts(self, profile, client_ms: float) -> list[anatomy.Part]:
        s = profile.summary
        parts = [("client_api", client_ms - s["total_ms"], "client clock minus the profile's query.total_time")]
        parts += [(part, s[key], f"{self.SOURCE}: {self._GROUPS[key]}.total_time")
                  for key, part in self.PHASES.items() if key in s]
        own = profile.operators.groupby("name", sort=False)["time_ms"].sum()
        parts += [(self._OPERATOR_PARTS.get(name, name.lower()), float(ms), f"{self.SOURCE}: operator.timing of {name}")
                  for name, ms in own.items()]
        parts += [(part, s[key], f"{self.SOURCE}: storage.{key.removesuffix('_ms')}") for key, part in self.COMMIT.items()
                  if key in s]
        return parts

    def statement(self, result: Any, row: Sequence[Any]) -> None:
        profile = self._profile()
        s = profile.summary
        self.parts.append(self._parts(profile, self.client_ms[-1]))
        self.extras.append([
            ("query_total", s["total_ms"], float("nan"), f"{self.SOURCE}: query.total_time (the span, not a part)"),
            ("operators_cpu", s.get("cpu_ms", float("nan")), float("nan"),
             f"{self.SOURCE}: query.cpu_time (the operators' times summed: in their parts)"),
            ("blocked_thread", s.get("blocked_thread_ms", float("nan")), float("nan"),
             f"{self.SOURCE}: system.blocked_thread_time (may overlap operator time: not a part)"),
            ("intermediate_rows", float("nan"), float(s.get("intermediate_rows", float("nan"))),
             f"{self.SOURCE}: query.total_intermediate_rows"),
            ("peak_buffer_memory_bytes", float("nan"), float(s.get("peak_buffer_memory_bytes", float("nan"))),
             f"{self.SOURCE}: system.peak_buffer_memory"),
        ])
        self._climb(row)

    def block(self, client_ms: Sequence[float]) -> None:
        self.block_parts.append(self._parts(self._profile(), client_ms[-1]))

    def end(self) -> None:
        conn = self.engine._conn
        if conn is not None:
            conn.execute("RESET enable_profiling")
            conn.execute("RESET profiling_coverage")
            if getattr(self, "probe", None):
                conn.execute(f"SET GLOBAL fsync_mode = {self.engine.sql.literal(self.fsync_mode)}")
                conn.execute(self.engine.sql.drop_table_sql(self.probe))
        if not self.block_parts:
            return
        names = list(dict.fromkeys(name for parts in self.block_parts for name, _, _ in parts))
        sources = {name: source for parts in self.block_parts for name, _, source in parts}
        n = len(self.block_parts)
        typical = [(name, statistics.median(dict((p, ms) for p, ms, _ in parts).get(name, 0.0)
                                            for parts in self.block_parts),
                    f"{sources[name]}; median over {n} blocks of their last statement") for name in names]
        self.unobserved_parts = [list(typical) for _ in self.unobserved_ms]


#: Per statement: the phases, operators and commit steps of DuckDB's own profile.
DuckDBProfiledStatement.RECORDER = _ProfileRecorder
