"""ClickHouse through chDB: its embedded server inside this Python process, on ``.lab/clickhouse-<pid>-<n>/``."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import statistics
import warnings
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

from ingestlab import anatomy, timing
from ingestlab.engines.base import Engine, EngineStyle, Wire
from ingestlab.engines.capabilities import (
    BulkLoad,
    CommitVariants,
    LoadSetting,
    LoadSettings,
    NativeLoad,
    ProfiledStatement,
    TableModels,
)
from ingestlab.engines.clickhouse.sql import ClickHouseSQL
from ingestlab.errors import EngineUnavailableError, ServerError, UnsupportedOperationError
from ingestlab.polling import poll
from ingestlab.servers.base import LocalServer


class ClickHouseCommitVariants(CommitVariants):
    """``async_insert`` (1 by default in ClickHouse 26.9, with ``wait_for_async_insert = 1``)
    is no variant here: chDB's embedded server starts no asynchronous insert queue (``SYSTEM FLUSH
    ASYNC INSERT QUEUE`` answers "not initialized"), so every INSERT is written synchronously
    whatever the setting (even with ``wait_for_async_insert = 0`` its rows are there when it
    returns), and a hundred single-row INSERTs make a hundred parts either way.
    """

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {"default": {}}


class ClickHouseProfiledStatement(ProfiledStatement):
    """ClickHouse's ``system.events`` around each statement."""


class ClickHouseTableModels(TableModels):
    """MergeTree tables (and Memory), partitioned by a hash of the first column."""

    MODELS: ClassVar[dict[str, str]] = {
        "no_key": "MergeTree ORDER BY tuple(): parts in insertion order, no primary index",
        "primary_key": "MergeTree ORDER BY the key: each part sorted, a sparse primary index (not unique)",
        "primary_key_indexes": "MergeTree ORDER BY the key plus three minmax skipping indexes",
        "replacing": "ReplacingMergeTree ORDER BY the key: merges keep the last row of each key",
        "memory": "Memory: blocks kept in RAM, no key, no part on disk, nothing kept over a restart",
    }
    UNPARTITIONED_MODELS = ("memory",)
    #: ``PARTITION BY cityHash64(<first column>) % N``: an INSERT that touches more than
    #: ``max_partitions_per_insert_block`` (100) partitions is refused.
    MAX_PARTITIONS = 100
    ONE_PARTITION = "no PARTITION BY"


class ClickHouseLoadSettings(LoadSettings):
    """ClickHouse's trade-offs of a load; no transaction of several statements."""

    #: No ``BEGIN`` … ``COMMIT``: each statement commits alone (transactions are experimental and need Keeper).
    TRANSACTIONS = False
    #: Notebook 05's settings. ClickHouse's default already acknowledges an INSERT before its
    #: part is synced (``fsync_after_insert = 0``) and has no log to flush, so there is no
    #: asynchronous commit to offer, and no key can be added after a load.
    SETTINGS: ClassVar[dict[str, LoadSetting]] = {
        "default": LoadSetting("ClickHouse's defaults: each INSERT writes its parts, not synced (fsync_after_insert "
                               "= 0), no write-ahead log; MergeTree sorted by the key"),
    }


class ClickHouseNativeLoad(NativeLoad):
    """ClickHouse: the engine's own client loading a CSV file."""

    def load(self, table: str, columns: Sequence[str], path: str) -> int:
        """ClickHouse's own CSV import: ``INSERT INTO table (columns) FROM INFILE 'path' FORMAT CSV``.

        chDB runs ClickHouse inside the lab's process, one per process on one data path, so
        there is no other client to start: the import is the one ``clickhouse-client`` runs, read
        and parsed by ClickHouse in this process. Returns the rows ClickHouse reports written.
        """
        cols = ", ".join(map(self.engine.sql.quote, columns))
        try:
            result = self.engine.conn.query(f"INSERT INTO {self.engine.sql.quote(table)} ({cols}) FROM INFILE "
                                            f"{self.engine.sql.literal(str(path))} FORMAT CSV")
        except RuntimeError as exc:
            raise ServerError(f"{self.engine.NAME}: loading {path}: {exc}".strip()) from exc
        return int(result.rows_written())


class ClickHouseBulkLoad(BulkLoad):
    """``INSERT … FORMAT ArrowStream``, the chunks as one Arrow IPC stream."""

    #: ``INSERT INTO table (columns) FORMAT ArrowStream``, the chunks as one Arrow IPC stream.
    PATH = "arrow_stream"

    def load(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
             create: Sequence[str] = ()) -> int:
        """``INSERT INTO table (columns) FORMAT ArrowStream`` of ``chunks`` (``pyarrow`` tables), one statement.

        ClickHouse has no transaction to put ``create`` or ``replace`` in: the statements of
        ``create`` run just before, ``replace`` empties the table (``TRUNCATE``) just before.
        Returns the rows sent.
        """
        stream = _arrow_stream(chunks, columns)
        return self.engine._insert_stream(table, columns, stream, replace=replace, create=create)

    def prepare(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
                create: Sequence[str] = ()) -> Callable[[], int]:
        """:meth:`load` with its Arrow IPC stream written now, before the clock; the call only sends it."""
        return functools.partial(self.engine._insert_stream, table, columns, _arrow_stream(chunks, columns),
                                 replace=replace, create=create)


class ClickHouse(Engine):
    """ClickHouse (chDB 4.4's embedded server), its tables ``MergeTree``, inside this Python process.

    ``engines.get("clickhouse")`` starts chDB's ClickHouse on ``.lab/clickhouse-<pid>-<n>/data``
    (a folder of mode 0700, removed by :meth:`close`, also after a failure:
    :class:`~ingestlab.engines.clickhouse.server.ChDBServer`). The measuring connection is a
    ``chdb.session.Session`` on that path; every statement is its own "transaction" (ClickHouse
    has no multi-statement ones): an INSERT writes a new part (one per partition it touches)
    and returns once the part is in the table. chDB runs one ClickHouse per process, on one
    data path: a second engine of this kind fails to start until the first is closed.

    Values are written into the statement text as literals, by chDB's DB-API escaping
    (:meth:`~ingestlab.engines.clickhouse.sql.ClickHouseSQL.literal`, ClickHouse's documented
    string-literal escaping: a quote and a backslash escaped), before the clock
    (:meth:`_render`), as ClickHouse's Python clients bind values client-side by default.
    chDB 4.4 also takes server-side parameters (``Session.query(sql, params=…)`` for
    ``{name:Type}`` placeholders), but not as the lab's writes need them: each placeholder
    needs its column's type, each value is text in ClickHouse's escaped (TSV) format (so an
    escaping function is needed anyway), and an ``INSERT … VALUES`` with placeholders leaves
    the streaming Values parser for its expression interpreter, which is slower (bench/README.md,
    "Measurements behind the code's rules"). Statements the adapter writes about
    the table itself (:meth:`_data_bytes`, :meth:`_settle`) use the same literals.

    The bulk path is ``INSERT … FORMAT ArrowStream`` through chDB's streaming inserter
    (``Session.send_insert``): the chunks are written as one Arrow IPC stream before the
    clock (``ClickHouseBulkLoad.prepare``). Settings are ClickHouse session settings: every
    connection opens a fresh session and sets them (``SET``); :meth:`settings` lists the
    session settings and MergeTree settings marked changed. :meth:`_settle` waits until no merge runs
    on the table and its part count holds still; :meth:`_data_bytes` is the ``bytes_on_disk``
    of its active parts (``system.parts``).
    """

    NAME = "clickhouse"
    STYLE = EngineStyle(title="ClickHouse", colour="#CC79A7", marker="s", words={
        "replacing": "ReplacingMergeTree", "chdb_call": "the library call outside ClickHouse's own span",
        "analyze": "analysis", "plan_and_pipeline": "plan and pipeline", "write_part": "part building",
        "disk_write": "disk writes", "parts_lock": "parts lock", "pipeline_threads": "pipeline thread hand-offs",
    })
    PACKAGE = "chdb"
    SQL = ClickHouseSQL
    #: ClickHouse runs in-process through chDB's Python package (recorded as the driver; the
    #: engine itself is the ``chdb-core`` package, recorded in :meth:`metadata`).
    WIRE = Wire(drivers={"chdb": ("chdb", "chdb")}, sqlglot_dialect="clickhouse",
                example="(none: ClickHouse runs inside the lab's Python process, through chDB)")
    HAS_LOCAL_SERVER = True
    #: One commit-protocol variant (:class:`ClickHouseCommitVariants`).
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        "commit_variants": ClickHouseCommitVariants, "profiled_statement": ClickHouseProfiledStatement,
        "table_models": ClickHouseTableModels, "load_settings": ClickHouseLoadSettings,
        "native_load": ClickHouseNativeLoad, "bulk_load": ClickHouseBulkLoad,
        "commit_counters": "ClickHouse has no commit log to flush: each INSERT writes and renames its own part",
        "io_counters": "ClickHouse's counters (system.events) are not mapped to the lab's names yet",
        "memory_budget": "notebook 03's memory budgets are not wired for ClickHouse",
    }
    #: Steps ClickHouse does not have here, each with the reason.
    UNSUPPORTED: ClassVar[dict[str, str]] = {
        "upsert_sql": "a MergeTree key is not unique, so an INSERT has no conflict to resolve (ReplacingMergeTree "
                      "collapses duplicates later, in merges)",
    }
    #: Polls in a row, ``SETTLE_INTERVAL_S`` apart, that must find no merge and the same active parts.
    SETTLE_POLLS: ClassVar[int] = 3
    SETTLE_INTERVAL_S: ClassVar[float] = 0.1

    def _make_server(self) -> LocalServer:
        from ingestlab.engines.clickhouse.server import ChDBServer

        return ChDBServer()

    def connect(self):
        """A new chDB session on the server's data path, its session settings ``SET``."""
        from ingestlab.engines.clickhouse.server import open_session

        if self._client_kwargs is None and (self.server is None or self.server.session is None):
            raise EngineUnavailableError("clickhouse: the embedded server is not running; call start() first")
        kwargs = self.connect_kwargs()
        session = open_session(kwargs["path"])
        try:
            for name, value in kwargs.get("settings", {}).items():
                session.query(f"SET {name} = {self.sql.literal(str(value))}")
        except RuntimeError as exc:
            session.close()
            raise ServerError(f"clickhouse: cannot set {kwargs.get('settings')}: {exc}") from exc
        return session

    def apply_settings(self, settings: dict[str, str]) -> dict[str, str]:
        """As every engine's, but an unknown setting fails before the measuring connection closes."""
        if self.server is not None:
            self.server.check({**self._INSTRUMENT_SETTINGS, **settings})
        return super().apply_settings(settings)

    # -- statements -----------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | None = None, *, conn=None) -> list[tuple]:
        """Run one statement (``params`` written in as literals); return its rows as tuples (or ``[]``).

        Rows come through Arrow (``ArrowTable``), so decimals, dates and NULLs arrive as
        ``Decimal``, ``date`` and ``None``. chDB's errors are raised as :class:`ServerError`.
        """
        session = conn if conn is not None else self.conn
        try:
            table = session.query(self._render(sql, params), "ArrowTable")
        except RuntimeError as exc:
            raise ServerError(f"{self.NAME}: {exc}".strip()) from exc
        return list(zip(*(column.to_pylist() for column in table.columns)))

    def _render(self, sql: str, params: Sequence[Any] | None = None) -> str:
        """``sql`` with ``params`` written in as ClickHouse literals: the text chDB is sent."""
        return self.sql.render(sql, params)

    def _statement_call(self, sql: str, params: Sequence[Any] | None = None) -> Callable[[], Any]:
        """``sql`` with ``params``, rendered now, as one ``Session.query`` of the text (rows read and left unused)."""
        self.has("statement_call", check=True)
        return functools.partial(self.conn.query, self._render(sql, params))

    def _open_sender(self, session: Mapping[str, str] | None = None) -> Callable[[bytes], Any]:
        """The measuring session's ``query`` of one statement text (``bytes`` decoded)."""
        self.start()
        if session:
            self.set_session(dict(session))
        query = self.conn.query

        def send(text: bytes | str) -> None:
            query(text.decode() if isinstance(text, bytes) else text)
        return send

    def set_session(self, settings: dict[str, str]) -> None:
        """``SET name = 'value'`` on the measuring session for each of ``settings`` (unknown names are refused)."""
        self._set_known(settings, "SELECT name FROM system.settings", "SET {name} = %s", "session setting")

    def _prepare_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                       rows_per_statement: int = 1, transaction: bool = False) -> Callable[[], int]:
        """``INSERT … VALUES`` of ``rows``, ``rows_per_statement`` a statement, rendered now, as a call to time.

        Each statement commits alone (a part each); ``transaction=True`` is refused
        (``ClickHouseLoadSettings.TRANSACTIONS``). The call returns the statements run.
        """
        if transaction:
            raise UnsupportedOperationError(f"{self.NAME}: no transaction of several statements: each INSERT "
                                            "commits its own part")
        texts = [self._render(sql, params)
                 for sql, params in self._insert_statements(table, columns, rows, rows_per_statement)]
        query = self.conn.query

        def write() -> int:
            for text in texts:
                query(text)
            return len(texts)
        return write

    # -- bulk path ---------------------------------------------------------------------------
    def _insert_stream(self, table: str, columns: Sequence[str], stream: tuple[bytes, int], *, replace: bool,
                       create: Sequence[str]) -> int:
        payload, rows = stream
        for statement in create:
            self.execute(statement)
        if replace:
            self.execute(f"TRUNCATE TABLE {self.sql.quote(table)}")
        if not rows:
            return 0
        inserter = self.conn.send_insert(
            f"INSERT INTO {self.sql.quote(table)} ({', '.join(map(self.sql.quote, columns))})", "ArrowStream")
        try:
            inserter.append(payload)
            inserter.finish()
        except RuntimeError as exc:
            with contextlib.suppress(RuntimeError):  # the failed insert may have ended itself
                inserter.cancel()
            raise ServerError(f"{self.NAME}: bulk load into {table}: {exc}") from exc
        return rows

    # -- state ------------------------------------------------------------------------------
    def _data_bytes(self, table: str) -> int:
        """``bytes_on_disk`` of the table's active parts (``system.parts``), its skipping indexes and marks included.

        A ``Memory`` table has no parts: its ``system.tables.total_bytes``, the memory its blocks take.
        """
        (engine,), = self.execute("SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = %s",
                                  [table]) or [(None,)]
        if engine == "Memory":
            return int(self.execute("SELECT total_bytes FROM system.tables WHERE database = currentDatabase() "
                                    "AND name = %s", [table])[0][0] or 0)
        return int(self.execute("SELECT sum(bytes_on_disk) FROM system.parts WHERE database = currentDatabase() "
                                "AND table = %s AND active", [table])[0][0])

    def _settle(self, table: str, timeout_s: float = 600.0) -> None:
        """Wait until no merge runs on ``table`` and its active parts stay as they are (a warning after ``timeout_s``).

        Settled means :attr:`SETTLE_POLLS` reads in a row, :attr:`SETTLE_INTERVAL_S` apart, that
        find no merge of the table in ``system.merges`` and the same number of active parts:
        ClickHouse schedules merges as parts arrive, so a count that holds still with none
        running has no merge left to start. Nothing is forced (no ``OPTIMIZE``): the table is
        left as the engine's own background work leaves it.
        """
        state = {"parts": None, "quiet": 0}
        sql = ("SELECT (SELECT count() FROM system.merges WHERE database = currentDatabase() AND table = %s), "
               "(SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = %s AND active)")

        def quiet() -> bool:
            merges, parts = self.execute(sql, [table, table])[0]
            state["quiet"] = state["quiet"] + 1 if merges == 0 and parts == state["parts"] else 0
            state["parts"] = parts
            return state["quiet"] >= self.SETTLE_POLLS

        if not poll(quiet, timeout_s=timeout_s, interval_s=self.SETTLE_INTERVAL_S):
            warnings.warn(f"{self.NAME}: merges of {table} still running after {timeout_s:.0f} s; the timed writes "
                          "may share the disk with them", stacklevel=2)

    # -- anatomy ----------------------------------------------------------------------------
    # -- metadata ---------------------------------------------------------------------------
    def server_version(self) -> str:
        """ClickHouse's version (``SELECT version()``: ``26.9.2.1``)."""
        return str(self.execute("SELECT version()")[0][0])

    def settings(self) -> dict[str, str]:
        """Session settings and MergeTree settings (``merge_tree.<name>``) marked changed."""
        session = self.execute("SELECT name, value FROM system.settings WHERE changed ORDER BY name")
        merge_tree = self.execute("SELECT name, value FROM system.merge_tree_settings WHERE changed ORDER BY name")
        return {**dict(session), **{f"merge_tree.{k}": v for k, v in merge_tree}}

    def metadata(self) -> dict:
        """As every engine's, with the package of the engine itself (``chdb-core``) beside the driver's."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            core = version("chdb-core")
        except PackageNotFoundError:
            core = None
        return {**super().metadata(), "engine_package": "chdb-core", "engine_package_version": core}


def _arrow_stream(chunks: Iterable[Any], columns: Sequence[str]) -> tuple[bytes, int]:
    """``chunks`` (``pyarrow`` tables, columns in ``columns``' order) as one Arrow IPC stream, and its rows.

    Chunks made apart may type a column differently (a decimal's precision is inferred from its
    values): every chunk is cast to the schema that holds them all.
    """
    import pyarrow as pa

    tables = [chunk.select(list(range(len(columns)))).rename_columns(list(columns)) for chunk in chunks]
    if not tables:
        return b"", 0
    schema = pa.unify_schemas([t.schema for t in tables], promote_options="permissive")
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for t in tables:
            writer.write_table(t.cast(schema))
    return sink.getvalue().to_pybytes(), sum(t.num_rows for t in tables)


#: ``system.events`` time events (µs) grouped into the anatomy's parts, in the order a single-row INSERT
#: passes through them. The events of one part are disjoint steps and no event is nested in another part's
#: (each event's ``description`` in ``system.events``; where ClickHouse counts it: ``_EventsRecorder``).
EVENT_PARTS: dict[str, tuple[str, ...]] = {
    # the statement's text parsed into an AST, first thing in executeQuery
    "parse": ("QueryParseMicroseconds",),
    # the analyzer's passes over the query tree (an INSERT … VALUES has none: ~0; an INSERT … SELECT's SELECT)
    "analyze": ("QueryAnalysisMicroseconds",),
    # the SELECT's QueryPlan built and optimized, then its QueryPipeline (an INSERT … VALUES has none either)
    "plan_and_pipeline": ("QueryPlanBuildMicroseconds", "QueryPlanOptimizeMicroseconds",
                          "QueryPipelineBuildMicroseconds"),
    # MergeTreeDataWriter's timed steps of making the new part: sorting the block by the key, merging it
    # (Replacing/Collapsing engines), skip indexes, statistics, projections
    "write_part": ("MergeTreeDataWriterSortingBlocksMicroseconds", "MergeTreeDataWriterMergingBlocksMicroseconds",
                   "MergeTreeDataWriterSkipIndicesCalculationMicroseconds",
                   "MergeTreeDataWriterStatisticsCalculationMicroseconds",
                   "MergeTreeDataWriterProjectionsCalculationMicroseconds"),
    # write(2) of the new part's files, into the page cache (fsync_after_insert = 0): before the part is committed
    "disk_write": ("DiskWriteElapsedMicroseconds",),
    # fsync of files and directories (0 unless fsync_after_insert or fsync_part_directory is set)
    "fsync": ("FileSyncElapsedMicroseconds", "DirectorySyncElapsedMicroseconds"),
    # the part committed into the table's set of parts: the exclusive parts lock waited for and held
    "parts_lock": ("PartsLockWaitMicroseconds", "PartsLockHoldMicroseconds"),
}
#: Time events read beside the parts and kept as extras (ms), never parts: they overlap one another or the
#: statement's own steps, or are other threads' work that the statement does not wait for.
EVENT_EXTRAS: dict[str, tuple[str, ...]] = {
    # jobs waiting for a worker of the global pool: the INSERT's pipeline thread (PushingAsyncPipelineExecutor),
    # but also every thread a local pool borrows (whose wait is inside that pool's job wait) and other threads' jobs
    "global_thread_pool_wait": ("GlobalThreadPoolJobWaitTimeMicroseconds",),
    # jobs waiting for a worker of a local pool: the pipeline executor's threads, waiting side by side
    "local_thread_pool_wait": ("LocalThreadPoolJobWaitTimeMicroseconds",),
    # the shared parts lock: an INSERT takes it a few times for microseconds; the merge scheduler holds it for
    # its snapshot of the parts (inside merge_selection)
    "shared_parts_lock": ("SharedPartsLockWaitMicroseconds", "SharedPartsLockHoldMicroseconds"),
    # the merge scheduler choosing parts to merge: in its background thread, which the INSERT only wakes
    "merge_selection": ("MergerMutatorsGetPartsForMergeElapsedMicroseconds",
                        "MergerMutatorPrepareRangesForMergeElapsedMicroseconds",
                        "MergerMutatorSelectPartsForMergeElapsedMicroseconds"),
    # background merges' steps
    "merge_execute": ("MergeMutateBackgroundExecutorTaskExecuteStepMicroseconds",),
    # CPU time of every thread (the statement's and the others'), and their time runnable but not running:
    # each overlaps every step above
    "threads_cpu": ("UserTimeMicroseconds", "SystemTimeMicroseconds"),
    "threads_cpu_wait": ("OSCPUWaitMicroseconds",),
}
#: Parts whose events background merges also count (their files' writes, their commits under the parts lock): an
#: unobserved statement takes them from the observed statements of its pass, not from its block's mean.
BACKGROUND_PARTS: tuple[str, ...] = ("disk_write", "parts_lock")
#: Count events read with them: what the statement wrote, and the merges launched meanwhile.
EVENT_COUNTS: tuple[str, ...] = (
    "InsertedRows", "InsertedBytes", "MergeTreeDataWriterBlocks", "MergeTreeDataWriterRows",
    "MergeTreeDataWriterUncompressedBytes", "MergeTreeDataWriterCompressedBytes", "InsertedCompactParts",
    "InsertedWideParts", "WriteBufferFromFileDescriptorWrite", "WriteBufferFromFileDescriptorWriteBytes", "FileOpen",
    "PartsLocks", "GlobalThreadPoolJobs", "LocalThreadPoolJobs", "IOBufferAllocBytes", "SoftPageFaults", "Merge",
)
#: The INSERT's span as ClickHouse times it (µs): from the start of executeQuery, before the parse, to its end.
SPAN_EVENT = "InsertQueryTimeMicroseconds"


class _EventsRecorder(anatomy.Recorder):
    """Each statement's share of ClickHouse's cumulative ``system.events``, read right before and right after it.

    chDB runs ClickHouse in this process and keeps no query log, so the instrument is the server's
    global profile events (``system.events``, cumulative since the server started): read right
    before each observed INSERT and right after it (outside the clock), their change is the
    statement's, plus what the two reads themselves add (the first read's end, its
    ``QueryTimeMicroseconds`` and threads, and the second's parse, analysis and plan). That share
    is measured in the same pass, as pairs of reads back to back with nothing between (five at
    the start, then one after each observed statement and one after each unobserved block), and
    its median per event is taken off every change (a part is at least 0: the remainder of
    noise around 0 stays there).

    Parts (:data:`EVENT_PARTS`, ms): ``parse``, ``analyze`` and ``plan_and_pipeline`` (an
    INSERT … VALUES has no query tree to analyze nor plan to build: ~0), ``write_part``,
    ``disk_write``, ``fsync`` and ``parts_lock``, in the order an INSERT runs them; and
    ``chdb_call``: the client's clock minus ``InsertQueryTimeMicroseconds``, ClickHouse's own span
    of the INSERT (chDB's Python binding, its client reading the text before it sends it, and
    building the reply: what lies outside the server's span, as PostgreSQL's ``client_socket``).
    Every other part lies inside that span, none inside another: ``QueryParse``,
    ``QueryAnalysis``, ``QueryPlanBuild``, ``QueryPlanOptimize``, ``QueryPipelineBuild`` time
    consecutive steps of executeQuery; the MergeTreeDataWriter events time steps of building the
    part in memory; ``DiskWriteElapsedMicroseconds`` times the write(2) calls of the part's
    files, made before the part is committed under the parts lock (the commit renames the
    temporary directory and adds the part: no write).

    Extras, never parts (:data:`EVENT_EXTRAS`, ms): the thread pools' job waits, because they
    cannot be added — a local pool's job waits for a thread it borrows from the global pool, so
    its wait holds that global job's; the pipeline executor's threads wait side by side; and
    other threads' jobs count in the same events — and because they are heavy-tailed, far
    beyond the statement's own hand-offs (``pipeline_threads`` below measures those); the
    shared parts lock (an INSERT's own share is microseconds; the merge scheduler holds it for
    its snapshot of the parts, inside ``merge_selection``); the merge scheduler's selection (its
    background thread, woken by the INSERT) and background merges; the threads' CPU time and their
    wait for a CPU, which overlap every step. The events are global: a merge
    that ends while the statement runs adds its writes to ``disk_write`` and its commit to
    ``parts_lock`` (``merge`` counts merges launched per statement).

    ``pipeline_threads`` is a rung, measured after each observed statement outside its clock
    (:meth:`_climb`): the pipeline's hand-offs between threads, which no event times (the waits
    above hold other threads' too), as the lab's clock of the same single-row INSERT into a probe
    table minus with ``SETTINGS max_threads = 1`` (its pipeline then runs on the caller's thread),
    each the last of ``ProfiledStatement.SETTLE + 1`` in a row.

    ``part_files`` is a rung too: creating the new part's directory and its files, which no event
    times (``FileOpen`` counts them, nine for a compact part) and which is most of a single-row
    INSERT on ext4 (the kernel's ``ext4_create``/``ext4_mkdir``). After each observed
    statement, outside its clock, the lab's clock of making a directory beside the table's parts
    (its ``data_paths``), creating in it as many empty files as the statement opened, and renaming
    it, as ClickHouse renames ``tmp_insert_…`` to the part's name; then it is removed. Its
    writes are ``disk_write``'s, so the probe's files stay empty.

    What no event times stays ``unexplained``: parsing the VALUES into a block, allocating the write
    buffers (``iobuffer_alloc_bytes``, and the page faults of touching them), compressing and
    checksumming the columns.

    Unobserved statements (``ProfiledStatement.anatomy``'s blocks): the block's change of the
    same events, read once after the block and less one read's share, divided by its statements
    (a mean per statement, as PostgreSQL's recorder does); ``chdb_call`` is the block's mean
    client time minus its mean ``InsertQueryTimeMicroseconds``. But ``disk_write`` and
    ``parts_lock`` (:data:`BACKGROUND_PARTS`) are the median of the pass's observed statements:
    a block's mean holds every merge that ran during it. The measurements behind these rules are
    in bench/README.md ("Measurements behind the code's rules").
    """

    PASS = "events"
    ORDER = ("chdb_call", *EVENT_PARTS, "part_files", "pipeline_threads")
    SOURCE = "system.events"
    #: Pairs of reads back to back at the start of the pass (the read's own share of the events).
    BASELINE_READS = 5

    def begin(self) -> None:
        names = {SPAN_EVENT, *EVENT_COUNTS, *(e for group in (EVENT_PARTS, EVENT_EXTRAS) for es in group.values()
                                              for e in es)}
        self.sql_events = ("SELECT event, value FROM system.events WHERE event IN ("
                           + ", ".join(self.engine.sql.literal(n) for n in sorted(names)) + ")")
        self.baseline: list[dict[str, float]] = []  # per pair of reads back to back: the change of every event
        self.observed: list[dict[str, float]] = []  # per observed statement: the change around it
        self.blocks: list[tuple[dict[str, float], list[float]]] = []  # per block: the change, its client times
        engine = self.engine
        self.probe = f"{self.table}_probe"
        engine.execute(engine.sql.drop_table_sql(self.probe))
        engine.execute(f"CREATE TABLE {engine.sql.quote(self.probe)} AS {engine.sql.quote(self.table)}")
        self.probe_sql = engine.sql.insert_sql(self.probe, self.columns, 1)
        head, values = self.probe_sql.split(" VALUES ", 1)
        self.data_path = engine.execute("SELECT data_paths[1] FROM system.tables WHERE database = currentDatabase() "
                                        "AND name = %s", [self.table])[0][0] or None
        self.one_thread_sql = f"{head} SETTINGS max_threads = 1 VALUES {values}"
        last = self._read()
        for _ in range(self.BASELINE_READS):
            now = self._read()
            self.baseline.append(_change(last, now))
            last = now
        self.last = last

    def _read(self) -> dict[str, float]:
        return {name: float(value) for name, value in self.engine.execute(self.sql_events)}

    def before(self) -> None:
        now = self._read()
        self.baseline.append(_change(self.last, now))  # after a block's read or the previous pass's: nothing between
        self.last = now

    def statement(self, result: Any, row: Sequence[Any]) -> None:
        now = self._read()
        self.observed.append(_change(self.last, now))
        self._climb(row)
        now = self._read()
        after = self._read()
        self.baseline.append(_change(now, after))
        self.last = after

    def _climb(self, row: Sequence[Any]) -> None:
        """One sample of the ``pipeline_threads`` rung: the probe INSERT minus with ``max_threads = 1``."""
        engine = self.engine
        warm = engine.capability("profiled_statement").SETTLE + 1
        threads = self.last_of(engine.sender.statement_call(self.probe_sql, row), warm)
        one = self.last_of(engine.sender.statement_call(self.one_thread_sql, row), warm)
        self.rung("pipeline_threads", threads - one,
                  f"the lab's clock of a single-row INSERT into a probe table minus with SETTINGS max_threads = 1 "
                  f"(each the last of {warm} in a row)")
        if not self.data_path:  # a Memory table writes no part
            return
        files = max(1, round(self.observed[-1].get("FileOpen", 0.0)))
        folder = os.path.join(self.data_path, f"ingestlab_probe_{len(self.client_ms)}")

        def create() -> None:
            os.mkdir(folder, 0o700)
            for k in range(files):
                os.close(os.open(os.path.join(folder, f"file_{k}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            os.rename(folder, f"{folder}_done")
        try:
            self.rung("part_files", timing.timed(create).ms,
                      f"the lab's clock of a directory beside the table's parts, {files} empty files in it (the "
                      f"statement's FileOpen) and its rename")
        finally:
            for path in (folder, f"{folder}_done"):
                shutil.rmtree(path, ignore_errors=True)

    def block(self, client_ms: Sequence[float]) -> None:
        now = self._read()
        self.blocks.append((_change(self.last, now), list(client_ms)))
        self.last = now

    def end(self) -> None:
        if getattr(self, "probe", None) and self.engine._conn is not None:
            self.engine.execute(self.engine.sql.drop_table_sql(self.probe))
        if not self.baseline:
            return
        base = {name: statistics.median(pair.get(name, 0.0) for pair in self.baseline)
                for name in set().union(*self.baseline)}
        reads = len(self.baseline)
        own = f"{self.SOURCE}, less a read's own (median of {reads} pairs of reads back to back)"
        for client, change in zip(self.client_ms, self.observed):
            parts, extras = self._split(change, base, 1, own)
            span = max(0.0, change.get(SPAN_EVENT, 0.0) - base.get(SPAN_EVENT, 0.0)) / 1e3
            self.parts.append([("chdb_call", client - span, f"client clock minus {SPAN_EVENT}"), *parts])
            self.extras.append(extras)
        seen = {part: statistics.median(ms for parts in self.parts for name, ms, _ in parts if name == part)
                for part in BACKGROUND_PARTS} if self.parts else {}
        for change, client_ms in self.blocks:
            n = len(client_ms)
            parts, _ = self._split(change, base, n, f"{own}, mean over the block")
            parts = [(name, seen[name], f"{own}: {' + '.join(EVENT_PARTS[name])}; median of the pass's "
                                        f"{len(self.parts)} observed statements (a block's mean holds its merges')")
                     if name in seen else (name, ms, source) for name, ms, source in parts]
            span = max(0.0, change.get(SPAN_EVENT, 0.0) - base.get(SPAN_EVENT, 0.0)) / 1e3 / n
            call = ("chdb_call", statistics.fmean(client_ms) - span,
                    f"mean client clock of the block minus its mean {SPAN_EVENT}")
            self.unobserved_parts += [[call, *parts] for _ in client_ms]
        if self.blocks:
            merges = sum(c.get("Merge", 0.0) - base.get("Merge", 0.0) for c, _ in self.blocks)
            self.counters["merges_per_unobserved_statement"] = (
                merges / sum(len(ms) for _, ms in self.blocks),
                "system.events Merge (background merges launched) over the unobserved blocks, per statement: why "
                "their disk_write and parts_lock are the observed statements'")

    @staticmethod
    def _split(change: dict[str, float], base: dict[str, float], n: int, source: str
               ) -> tuple[list[anatomy.Part], list[anatomy.Extra]]:
        """The parts (ms, each at least 0) and extras of ``n`` statements' change of the events, per statement."""
        def less_read(names: Sequence[str]) -> float:
            return max(0.0, sum(change.get(e, 0.0) - base.get(e, 0.0) for e in names)) / n

        parts = [(part, less_read(events) / 1e3, f"{source}: {' + '.join(events)}")
                 for part, events in EVENT_PARTS.items()]
        extras = [(name, less_read(events) / 1e3, float("nan"), f"{source}: {' + '.join(events)} (not a part)")
                  for name, events in EVENT_EXTRAS.items()]
        extras += [(_snake(name), float("nan"), less_read([name]), f"{source}: {name}") for name in EVENT_COUNTS]
        return parts, extras


#: Per statement: its share of ``system.events``, read around it, grouped into parts.
ClickHouseProfiledStatement.RECORDER = _EventsRecorder


def _change(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Every event's change between two reads of ``system.events`` (an event not shown yet was 0)."""
    return {name: value - before.get(name, 0.0) for name, value in after.items()}


def _snake(name: str) -> str:
    """``MergeTreeDataWriterRows`` → ``merge_tree_data_writer_rows``.

    Examples
    --------
    >>> _snake("WriteBufferFromFileDescriptorWriteBytes")
    'write_buffer_from_file_descriptor_write_bytes'
    """
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
