"""What a notebook needs of an engine beyond its core: each capability declared once, with its flags and defaults."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

from ingestlab import anatomy, timing
from ingestlab.engines.bound import Bound
from ingestlab.errors import ConfigError, UnsupportedOperationError


class Capability(Bound):
    """A part of the lab's work that some notebooks need and some engines lack, as a small object.

    Each kind is declared once below, on a base class that lists its flags with their
    defaults and a docstring each (sqlglot's dialect flags). An engine provides a kind by
    naming its own subclass in ``Engine.CAPABILITIES`` (``{"upsert": PostgresUpsert, …}``),
    which assigns only what differs; a family's subclass switches off what it must not
    inherit by giving the reason instead of a class (``{**Postgres.CAPABILITIES,
    "memory_budget": "no server the lab configures"}``). ``engine.capability(name)`` makes the
    object on first use, bound to the engine; ``Engine.has(name, check=True)`` says in one line
    why one is missing (psycopg's ``capabilities``). The base class's flags are what an engine
    without the capability has (:func:`of`).
    """

    #: The name notebooks ask for (``Notebook.needs``, ``Engine.has``).
    NAME: ClassVar[str] = ""
    #: Why an engine that does not list this capability lacks it (its ``has(..., check=True)``).
    MISSING: ClassVar[str] = "not provided"


class BulkLoad(Capability):
    """The engine's bulk path: rows loaded in chunks, not statement by statement (notebooks 01, 03, 05)."""

    NAME = "bulk_load"
    MISSING = "no bulk path in the lab"
    #: The bulk path's name (``"copy"``, ``"load_data_local"``, ``"stream_load"``), recorded with the results.
    PATH: ClassVar[str | None] = None

    def load(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
             create: Sequence[str] = ()) -> int:
        """Load ``chunks`` (``pyarrow.Table``, columns in ``columns``' order) through the engine's bulk path.

        Engines whose bulk path sends CSV also take chunks their :meth:`prepare` encoded
        (:class:`ingestlab.datagen.CsvChunk`) and send them as they are.

        Parameters
        ----------
        replace : bool
            Empty the table in the same transaction first (PostgreSQL then writes the rows
            frozen, ``COPY … FREEZE``).
        create : sequence of str
            Statements that create the table, run in the load's transaction where the engine
            has transactional DDL (PostgreSQL then writes the rows frozen too); else just before.

        Returns
        -------
        int
            Rows sent.
        """
        raise UnsupportedOperationError(f"{self.engine.NAME}: no bulk_load: no bulk path in the lab")

    def prepare(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
                create: Sequence[str] = ()) -> Callable[[], int]:
        """:meth:`load` of ``chunks`` as a call to time, its payload made now, before the clock.

        As every INSERT is rendered before its clock starts, an engine whose bulk path sends
        text encodes the rows now (:func:`ingestlab.datagen.csv_chunks`) and the call only
        sends them, as ``psql \\copy`` sends a file. Default: the call is :meth:`load` itself.
        """
        return functools.partial(self.load, table, columns, chunks, replace=replace, create=create)


class CommitVariants(Capability):
    """Commit-protocol variants (notebook 01, 06): settings that change what a commit waits for."""

    NAME = "commit_variants"
    MISSING = "no commit-protocol settings to vary"
    #: Variant name → settings put in force by ``Engine.apply_settings``. Empty: the engine as installed (``default``).
    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {}


class GroupCommit(Capability):
    """Commit-grouping variants (notebook 04): settings that let one log flush serve several clients' commits."""

    NAME = "group_commit"
    MISSING = "no commit grouping to vary"
    #: Variant name → settings (``default`` is the engine as installed).
    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {}
    #: One sentence on commit grouping in this engine, for refusals and the run's notes.
    NOTE: ClassVar[str] = ""


class Upsert(Capability):
    """Notebook 03's writes of a batch of keyed rows: new keys, and keys that exist."""

    NAME = "upsert"
    MISSING = "no upsert operations in the lab"
    #: The operations this engine runs: ``insert`` (new keys), ``overwrite`` (an insert that
    #: replaces an existing key after reading it), ``blind_overwrite`` (one that does not read it).
    #: Every engine with the capability runs the first two.
    OPERATIONS: ClassVar[tuple[str, ...]] = ("insert", "overwrite")

    def prepare_write(self, operation: str, table: str, columns: Sequence[str], key: str,
                      chunk: Any) -> Callable[[], Any]:
        """One batch of ``operation`` on ``chunk`` (a ``pyarrow.Table``), built now, as a call to time.

        The statement text and its parameters are made before the clock starts; the returned
        call runs the batch as one transaction and returns the keys found, where the engine
        counts them, else None.
        """
        engine = self.engine
        if operation not in self.OPERATIONS:
            raise UnsupportedOperationError(
                f"{engine.NAME}: no {operation}; its operations are {', '.join(self.OPERATIONS) or 'none'}")
        n = chunk.num_rows
        sql = engine._sql_cache.get((operation, table, n))
        if sql is None:
            sql = engine._sql_cache[(operation, table, n)] = self.write_sql(operation, table, columns, key, n)
        params = [v for row in zip(*(chunk.column(c).to_pylist() for c in columns)) for v in row]
        call = engine.sender.statement_call(sql, params)

        def write() -> None:
            call()
        write.sql, write.params = sql, params  # what the call runs, for adapters that run it elsewhere
        return write

    def write_sql(self, operation: str, table: str, columns: Sequence[str], key: str, n_rows: int) -> str:
        """The statement of one batch of ``operation``: ``insert`` or ``overwrite`` (engines add others)."""
        if operation == "insert":
            return self.engine.sql.insert_sql(table, columns, n_rows)
        if operation == "overwrite":
            return self.engine.sql.upsert_sql(table, columns, key, n_rows)
        raise UnsupportedOperationError(f"{self.engine.NAME}: no statement for {operation}")


class MemoryBudget(Capability):
    """Notebook 03's memory budget: settings that hold the engine's caches to a number of bytes."""

    NAME = "memory_budget"
    MISSING = "no memory budget settings"
    #: Ways of holding the engine to a memory budget, name → what it does, in words for the
    #: run's metadata. ``"engine"``: the engine's own cache of the budget's size, data files
    #: opened ``O_DIRECT``. ``"cgroup"``: an engine cache of :attr:`CGROUP_CACHE_SHARE` of the
    #: budget, buffered I/O, and the server's processes in a memory cgroup leaving the OS page
    #: cache the rest (:class:`ingestlab.cgroups.MemoryCap`).
    LIMITS: ClassVar[dict[str, str]] = {}
    #: Share of the memory budget the engine's own cache gets under the ``"cgroup"`` limit.
    CGROUP_CACHE_SHARE: ClassVar[float] = 0.25

    def settings(self, budget_bytes: int, limit: str = "engine") -> dict[str, str]:
        """Settings that hold the engine's caches to ``budget_bytes`` under ``limit`` (one of :attr:`LIMITS`)."""
        raise UnsupportedOperationError(f"{self.engine.NAME}: no memory budget settings")

    def cache_bytes(self, budget_bytes: int, limit: str) -> int:
        """Bytes of the engine's own cache under ``limit``: the budget, or its :attr:`CGROUP_CACHE_SHARE`.

        Raises
        ------
        ConfigError
            When the engine does not know ``limit``.

        Examples
        --------
        >>> from ingestlab.engines.postgres.capabilities import PostgresMemoryBudget
        >>> PostgresMemoryBudget(None).cache_bytes(256 * 2**20, "cgroup") // 2**20
        64
        """
        if limit not in self.LIMITS:
            name = self.engine.NAME if self.engine is not None else type(self).__name__
            raise ConfigError("MEMORY_LIMIT", limit, f"one of {sorted(self.LIMITS)} for {name}")
        return int(budget_bytes * (self.CGROUP_CACHE_SHARE if limit == "cgroup" else 1))


class TableModels(Capability):
    """The key models a table can be created with and the hash partitions (buckets) it can be split into (notebook 02).

    ``engine.tables.ddl`` checks a table's model and partitions here (:meth:`resolve_model`,
    :meth:`check_partitions`); an engine without the capability creates its one kind of table.
    """

    NAME = "table_models"
    MISSING = "no table models"
    #: Table models ``engine.tables.ddl`` writes: name → what it is, in words.
    MODELS: ClassVar[dict[str, str]] = {}
    #: The model of a table without a key (``engine.tables.ddl``'s default): the lab's name for it;
    #: an engine whose models are named otherwise says which.
    DEFAULT_MODEL: ClassVar[str] = "no_key"
    #: The model of a table with a key.
    KEYED_MODEL: ClassVar[str] = "primary_key"
    #: Models of :attr:`MODELS` whose writes skip the commit's log flush (no WAL or redo log):
    #: notebook 02 reports their effect as the commit's, not the storage pipeline's.
    COMMIT_FREE_MODELS: ClassVar[tuple[str, ...]] = ()
    #: Models of :attr:`MODELS` that take no partitions: ``table_ddl`` refuses ``partitions > 1``
    #: for them (:class:`~ingestlab.errors.ConfigError`) rather than drop the partitioning unsaid.
    UNPARTITIONED_MODELS: ClassVar[tuple[str, ...]] = ()
    #: Most hash partitions (buckets) ``table_ddl`` writes; 1: the engine does not partition.
    MAX_PARTITIONS: ClassVar[int] = 1
    #: What one of ``table_ddl``'s ``partitions`` is on this engine (labels, units of a sweep's slope).
    PARTITION_UNIT: ClassVar[str] = "partition"
    #: What ``table_ddl`` writes for ``partitions=1``, in words (notebook 02's labels).
    ONE_PARTITION: ClassVar[str] = "plain table"
    #: Partition counts notebook 02's paper-scale sweep adds on this engine, where routing a row
    #: among many partitions may start to cost something.
    SWEEP_EXTRA_PARTITIONS: ClassVar[tuple[int, ...]] = ()

    def resolve_model(self, model: str | None, key: Sequence[str] = ()) -> str | None:
        """``model``, checked against :attr:`MODELS`; None: :attr:`KEYED_MODEL` with a key, else :attr:`DEFAULT_MODEL`."""
        if not self.MODELS:  # one kind of table: nothing to choose
            return model
        chosen = model or (self.KEYED_MODEL if key else self.DEFAULT_MODEL)
        if chosen not in self.MODELS:
            raise ConfigError("MODELS", model, f"one of {', '.join(self.MODELS)} for {self.engine.NAME}")
        return chosen

    def check_partitions(self, partitions: int | None) -> int:
        """``partitions`` as a whole number from 1 to :attr:`MAX_PARTITIONS` (None: 1)."""
        n = 1 if partitions is None else partitions
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= self.MAX_PARTITIONS:
            raise ConfigError("PARTITIONS", partitions,
                              f"an integer from 1 to {self.MAX_PARTITIONS} for {self.engine.NAME}")
        return n


@dataclasses.dataclass(frozen=True)
class LoadSetting:
    """One way of loading a table that trades safety for speed (notebook 05), as an engine declares it.

    Parameters
    ----------
    description : str
        What it does and what it gives up, in words (recorded with every result).
    server : mapping
        Settings put in force by :meth:`Engine.apply_settings` (a local server restarts with
        them; a remote one gets them per session where it allows).
    session : mapping
        Settings of the measuring session only (:meth:`Engine.set_session`), after ``server``.
    model : str, optional
        The table model (``TableModels.MODELS``); None: the keyed default.
    key_after_load : bool
        Create the table without its primary key, load, then add the key (timed apart).
    create_in_load : bool
        Create the table inside the load's own transaction (PostgreSQL's ``COPY … FREEZE``).
    methods : tuple of str, optional
        The only load methods the setting applies to (None: all).
    server_flags : mapping
        Flags the server must have been started with, which no client can set (recorded, not set).
    """

    description: str
    server: Mapping[str, str] = dataclasses.field(default_factory=dict)
    session: Mapping[str, str] = dataclasses.field(default_factory=dict)
    model: str | None = None
    key_after_load: bool = False
    create_in_load: bool = False
    methods: tuple[str, ...] | None = None
    server_flags: Mapping[str, str] = dataclasses.field(default_factory=dict)


class LoadSettings(Capability):
    """Notebook 05's settings that trade safety for load speed, and whether several statements commit as one."""

    NAME = "load_settings"
    MISSING = "no load settings besides the server's defaults"
    #: Setting name → :class:`LoadSetting` (``default``: the server's defaults).
    SETTINGS: ClassVar[dict[str, LoadSetting]] = {"default": LoadSetting("the server's defaults")}
    #: Whether several statements can commit as one transaction (``BEGIN`` … ``COMMIT``): what
    #: ``Engine._prepare_insert`` with ``transaction=True`` and notebook 05's one-transaction loads need.
    TRANSACTIONS: ClassVar[bool] = True


class IOCounters(Capability):
    """Cumulative engine I/O counters under the lab's names (notebook 03 reads them around every batch)."""

    NAME = "io_counters"
    MISSING = "no I/O counters"

    def read(self) -> dict[str, float]:
        """The counters now (``blocks_read``, ``blocks_hit``...): cumulative, compared around a write."""
        raise UnsupportedOperationError(f"{self.engine.NAME}: no io_counters")


class CommitCounters(Capability):
    """Cumulative server counters of log flushes and commits (notebook 04: grouping observed rather than assumed)."""

    NAME = "commit_counters"
    MISSING = "no counters of commits and log flushes"

    def read(self) -> dict[str, float]:
        """The counters now, under the lab's and the engine's names.

        ``flushes`` is always there: the syncs of the log that make commits durable (its
        change over a run against the commits the clients saw acknowledged gives commits per
        flush). Other keys are the engine's own counters as it names them. Read between runs,
        never inside a timed region.
        """
        raise UnsupportedOperationError(f"{self.engine.NAME}: no commit counters")


class NativeLoad(Capability):
    """The engine's own client loading a CSV file (notebook 05's ``native_client`` method)."""

    NAME = "native_load"
    MISSING = "no command-line client of the engine's own in the lab"

    def load(self, table: str, columns: Sequence[str], path: str) -> int:
        """Load the CSV file ``path`` (:func:`ingestlab.datagen.csv_bytes`'s format) with the engine's own client.

        PostgreSQL: ``psql -c '\\copy …'``; MariaDB: ``mariadb --local-infile -e 'LOAD DATA LOCAL …'``.
        A process is started per call: that start is part of what the client costs. Engines that
        run inside the lab's process (DuckDB, ClickHouse through chDB) have no other client: theirs
        is the engine's own CSV import, run on the measuring connection. Returns the rows the
        client reported.
        """
        raise UnsupportedOperationError(f"{self.engine.NAME}: no native_load")


class Pipeline(Capability):
    """Single-row INSERTs in one transaction sent without waiting for each reply (notebook 05's ``pipeline``)."""

    NAME = "pipeline"
    MISSING = "the driver has no pipeline mode"

    def prepare_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Callable[[], int]:
        """The INSERTs of ``rows`` as a call to time: one statement per row, one commit, not one round trip each.

        Returns the statements run.
        """
        raise UnsupportedOperationError(f"{self.engine.NAME}: no pipeline mode")


class ProfiledStatement(Capability):
    """Notebook 01's (and 02's) anatomy: single-row INSERTs split into the server's parts and the unexplained rest."""

    NAME = "profiled_statement"
    MISSING = "no instrument that splits a statement"
    #: Parser kind (a key of ``ingestlab.profiles.KINDS``) of the server output the anatomy reads, if any.
    PROFILE_KIND: ClassVar[str | None] = None
    #: Unobserved statements at the start of each block after an observed one that absorb what the
    #: observation left behind (``bench/observer_pause.py``: the first two after a pause are slower,
    #: the third within 5 % of the rest).
    SETTLE: ClassVar[int] = 3
    #: The :class:`~ingestlab.anatomy.Recorder` class :meth:`recorder` builds (called with the
    #: engine, the table and its columns); None: the engine has no statement anatomy.
    RECORDER: ClassVar[type[anatomy.Recorder] | None] = None

    def recorder(self, table: str, columns: Sequence[str]) -> anatomy.Recorder:
        """What reads the server's parts of each single-row INSERT into ``table`` of an anatomy pass (a :attr:`RECORDER`)."""
        if self.RECORDER is None:
            raise UnsupportedOperationError(f"{self.engine.NAME}: no statement anatomy")
        return self.RECORDER(self.engine, table, columns)

    def anatomy(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                unobserved_rows: Sequence[Sequence[Any]] = (), warm_up: bool = True):
        """Split single-row INSERTs of ``rows`` into the server's parts and the unexplained rest.

        Each INSERT runs as in the measurements: autocommit, one round trip, rendered before
        the clock by :meth:`Engine.statement_call` and timed on the lab's clock exactly as notebook
        01's samples are (a recorder that must read the statement's rows, an ``EXPLAIN``, has
        it run by :meth:`Engine.execute`); right after each one the engine's :meth:`recorder`
        reads what the server reported, outside the clock.

        Reading between statements changes them (a pause before a commit slows its log flush
        and the wake-ups of both processes). With ``unobserved_rows``, each observed statement
        is followed by a block of as many unobserved ones (an equal share of the rows) sent
        back to back through the same call, nothing read between them: the first
        :attr:`SETTLE` of a block absorb the observation (flagged warm-up, as is the whole
        first block, beside the first observed statement), the rest are the statement as the
        samples time it. ``warm_up=False``, for a pass on a table that has been written already
        (a pass of one observed statement, between the samples), flags only each block's first
        :attr:`SETTLE`. They form the frame's
        :data:`~ingestlab.anatomy.UNOBSERVED` pass, with every part the recorder can assign
        them (:meth:`~ingestlab.anatomy.Recorder.block`); :func:`ingestlab.anatomy.summary`
        reports them, and what observing added as ``observer_ms``.

        Returns
        -------
        pandas.DataFrame
            Tidy, see :func:`ingestlab.anatomy.frame`.
        """
        engine = self.engine
        if not rows:
            raise ConfigError("rows", rows, "at least one row to insert")
        size = len(unobserved_rows) // len(rows)
        if unobserved_rows and size <= self.SETTLE:
            raise ConfigError("unobserved_rows", len(unobserved_rows),
                              f"more than {self.SETTLE} rows per observed row ({len(rows)} observed)")
        recorder = self.recorder(table, columns)
        with recorder:
            # every statement rendered before the first is sent, as time_statements' callers do
            calls = [None if recorder.READS_ROWS else engine.sender.statement_call(recorder.sql, row) for row in rows]
            quiet = [engine.sender.statement_call(recorder.sql, row) for row in unobserved_rows[:size * len(rows)]]
            for i, (row, call) in enumerate(zip(rows, calls)):
                recorder.before()
                run = timing.timed(engine.execute, recorder.sql, row) if call is None else timing.timed(call)
                recorder.client_ms.append(run.ms)
                recorder.statement(run.result, row)
                if size:
                    block = timing.time_calls(quiet[i * size:(i + 1) * size], rows=[1] * size, bytes_=[0] * size)
                    ms = (block["elapsed_s"] * 1e3).tolist()
                    recorder.unobserved_ms += ms
                    # the first block settles whole, as the first observed statement is a warm-up
                    recorder.unobserved_settle += [(i == 0 and warm_up) or k < self.SETTLE for k in range(size)]
                    recorder.block(ms)
        unobserved = (recorder.unobserved_ms, recorder.unobserved_settle, recorder.unobserved_parts) if size else None
        return anatomy.frame(recorder.PASS, recorder.client_ms, recorder.parts, extras=recorder.extras,
                             counters=recorder.counters, ladder=recorder.ladder(), order=recorder.ORDER,
                             unmeasured=recorder.unmeasured, unobserved=unobserved, warm_up=warm_up)



class LinkDelay(Capability):
    """A one-way delay injected on a cluster engine's inter-node links (notebook 08's round-trip law).

    An engine whose nodes can talk through proxies (replication stream, group communication)
    provides it. :meth:`route`, called before the engine starts, asks its server to start the
    nodes with that traffic going through a :class:`ingestlab.latency.Toxiproxy` (the server's
    ``delay`` option: without it the nodes talk directly, as in notebooks 01–05); :meth:`set`
    then puts one delay on every link, both directions. The defaults work on a server with a
    ``delay`` attribute and, once started, a ``toxiproxy`` (the :class:`~ingestlab.latency.Toxiproxy`
    its nodes talk through); an engine whose server differs overrides them.
    """

    NAME = "link_delay"
    MISSING = "no inter-node links the lab can route through a proxy (one node)"
    #: The commit variant whose commits wait on the links (notebook 08 measures it first, and alone at
    #: smoke scale); None: the first of the engine's variants.
    WAITING_VARIANT: ClassVar[str | None] = None

    def route(self) -> None:
        """Before the engine starts: have its nodes' links go through proxies (the server's ``delay`` option)."""
        server = self.engine.server
        if server is None:
            raise UnsupportedOperationError(f"{self.engine.NAME}: no link_delay: its nodes are not the lab's to route")
        if server.running:
            raise UnsupportedOperationError(f"{self.engine.NAME}: link_delay.route() must come before start()")
        server.delay = True

    def set(self, one_way_ms: float) -> None:
        """Give every inter-node link this one-way delay, both directions (whole ms; 0 removes it)."""
        from ingestlab import latency

        server = self.engine.server
        proxies = getattr(server, "toxiproxy", None)
        if proxies is None:
            raise UnsupportedOperationError(f"{self.engine.NAME}: its links are not proxied: call "
                                            "link_delay.route() before start()")
        proxies.set_delay(latency.check_delay(one_way_ms))

#: Every kind of capability by name, in the order the docs list them.
class Watch(Capability):
    """What the engine watches beside the statements: why clients' statements failed, when it knows.

    A commit that waits for another node can fail only because the lab ended its wait (a
    replicated primary's standby stopped streaming: the watch terminated the waiting
    backends). A client in its own process then sees a dropped connection; the parent asks
    :meth:`cause` and reports the engine's reason (a lost server, exit 5) instead of a
    crashed client (exit 4). An engine without a watch has nothing to add.
    """

    NAME = "watch"
    MISSING = "nothing watched beside the statements' own errors"

    def cause(self) -> str | None:
        """The one-line reason the engine's watch ended statements, or None while nothing went wrong."""
        return None


KINDS: dict[str, type[Capability]] = {c.NAME: c for c in (BulkLoad, CommitVariants, GroupCommit, Upsert, MemoryBudget,
                                                              TableModels, LoadSettings, NativeLoad, Pipeline,
                                                              IOCounters, CommitCounters, ProfiledStatement,
                                                              LinkDelay, Watch)}


def check_declared(owner: type, declared: Mapping[str, Any]) -> None:
    """Refuse an engine class's ``CAPABILITIES`` that names an unknown kind or gives a class of another kind.

    Raises
    ------
    TypeError
        At class creation, naming the class and the entry.
    """
    for name, value in declared.items():
        if name not in KINDS:
            raise TypeError(f"{owner.__name__}.CAPABILITIES names {name!r}, not a capability of {sorted(KINDS)}")
        if not (isinstance(value, str) or (isinstance(value, type) and issubclass(value, KINDS[name]))):
            raise TypeError(f"{owner.__name__}.CAPABILITIES[{name!r}] is {value!r}: a subclass of "
                            f"{KINDS[name].__name__}, or the reason it is missing")


def missing(engine_cls: type, name: str) -> str | None:
    """Why ``engine_cls`` lacks capability ``name``, or None when it provides it."""
    value = engine_cls.CAPABILITIES.get(name)
    if value is None:
        return KINDS[name].MISSING
    return value if isinstance(value, str) else None


def of(engine: Any, name: str) -> type[Capability]:
    """The class of capability ``name`` that ``engine`` (an adapter or its class) provides, else the kind's base.

    The base's flags are the defaults: what an engine without the capability has.


    Examples
    --------
    >>> from ingestlab.engines.base import Engine
    >>> list(of(Engine, "commit_variants").VARIANTS)  # the base declares none: the kind's defaults
    []
    """
    value = engine.CAPABILITIES.get(name)
    return value if isinstance(value, type) else KINDS[name]


def require(needs: Iterable[str], classes: Mapping[str, type], parameter: str = "ENGINES",
            notebook: str = "the notebook") -> None:
    """Refuse, in one line, the first engine of ``classes`` (item → class) that lacks one of ``needs``.

    ``needs`` are capability names or steps (``Engine.has`` answers both). Called before any
    server starts.

    Raises
    ------
    ConfigError
        Naming ``parameter``, the item, the capability and the engine's reason.
    """
    from ingestlab import engines

    for need in needs:
        for item, engine_cls in classes.items():
            try:
                engine_cls.has(need, check=True)
            except UnsupportedOperationError as exc:
                able = ", ".join(n for n, c in engines.classes().items() if c.has(need))
                raise ConfigError(parameter, getattr(item, "shown", item), f"an engine with {need}, which {notebook} needs ({exc}; "
                                                   f"engines with it: {able or 'none'})") from None
