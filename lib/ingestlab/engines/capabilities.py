"""What a notebook needs of an engine beyond its core: each capability declared once, with its flags and defaults."""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

from ingestlab.errors import ConfigError, UnsupportedOperationError


class Capability:
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

    Parameters
    ----------
    engine : Engine
        The adapter the object works on.
    """

    #: The name notebooks ask for (``Notebook.needs``, ``Engine.has``).
    NAME: ClassVar[str] = ""
    #: Why an engine that does not list this capability lacks it (its ``has(..., check=True)``).
    MISSING: ClassVar[str] = "not provided"

    def __init__(self, engine: Any):
        self.engine = engine


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
    OPERATIONS: ClassVar[tuple[str, ...]] = ()

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
        call = engine.statement_call(sql, params)

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
        >>> from ingestlab.engines.postgres import PostgresMemoryBudget
        >>> PostgresMemoryBudget(None).cache_bytes(256 * 2**20, "cgroup") // 2**20
        64
        """
        if limit not in self.LIMITS:
            name = self.engine.NAME if self.engine is not None else type(self).__name__
            raise ConfigError("MEMORY_LIMIT", limit, f"one of {sorted(self.LIMITS)} for {name}")
        return int(budget_bytes * (self.CGROUP_CACHE_SHARE if limit == "cgroup" else 1))


#: Every kind of capability by name, in the order the docs list them.
KINDS: dict[str, type[Capability]] = {c.NAME: c for c in (CommitVariants, GroupCommit, Upsert, MemoryBudget)}


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
    >>> import ingestlab.engines
    >>> from ingestlab.engines import Engine
    >>> list(of(Engine.classes()["rocksdb"], "commit_variants").VARIANTS)
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
    from ingestlab.engines import Engine

    for need in needs:
        for item, engine_cls in classes.items():
            try:
                engine_cls.has(need, check=True)
            except UnsupportedOperationError as exc:
                able = ", ".join(n for n, c in Engine.classes().items() if c.has(need))
                raise ConfigError(parameter, item, f"an engine with {need}, which {notebook} needs ({exc}; "
                                                   f"engines with it: {able or 'none'})") from None
