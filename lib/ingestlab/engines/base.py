"""The engine contract every adapter implements (:class:`Engine`); the registry, drivers and SQL live beside it."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, ClassVar, Mapping, Sequence

from sqlalchemy.engine import URL

from ingestlab import placement
from ingestlab.conninfo import PARAMETER, Connection, mask_url
from ingestlab.engines import capabilities, drivers
from ingestlab.engines.sending import Sender, Sending
from ingestlab.engines.sql.base import SQLBuilder
from ingestlab.engines.steps import BUILT_ON, SQL_STEPS, STEPS, hook, missing_reason, switched_off
from ingestlab.engines.style import EngineStyle
from ingestlab.engines.tables import TableHooks, Tables
from ingestlab.engines.wire import LOCK_WAIT_ENV, LOCK_WAIT_S, Wire, lock_wait_s
from ingestlab.errors import ConfigError, EngineUnavailableError, UnsupportedOperationError
from ingestlab.servers.base import LocalServer

__all__ = ["LOCK_WAIT_ENV", "LOCK_WAIT_S", "STUDY_COLUMNS", "STEPS", "Engine", "EngineStyle", "Wire", "lock_wait_s",
           "mask_url"]

#: The study's table: ``id BIGINT, name VARCHAR(100), amount DECIMAL(10,2), dt DATE``.
STUDY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "BIGINT"),
    ("name", "VARCHAR(100)"),
    ("amount", "DECIMAL(10,2)"),
    ("dt", "DATE"),
)


class Engine(Sending, TableHooks):
    """One database engine, reached through its Python driver: the small core every notebook uses.

    The contract, declared here once; what only some notebooks need is a capability (below).
    Beside it: the registry (:mod:`ingestlab.engines.registry`: ``engines.get/from_url/resolve/
    class_of/classes/names/versions``, fed by the ``ingestlab.engines`` entry point group or
    ``$INGESTLAB_ENGINES``), how it is reached (:class:`~ingestlab.engines.wire.Wire`), the driver
    choice (:mod:`ingestlab.engines.drivers`), the SQL text (:attr:`sql`), its tables
    (:attr:`tables`, :class:`~ingestlab.engines.tables.Tables`) and how its statements are sent
    (:attr:`sender`, :class:`~ingestlab.engines.sending.Sender`).

    * **Declared once.** ``NAME`` (registry name), ``STYLE`` (:class:`EngineStyle`), ``PACKAGE``
      (the pip distribution whose version is the engine's own, else None: a server reports it),
      ``VERSION_OF`` (the engine this one is another version of), ``WIRE`` (URL schemes, port,
      drivers, placeholder, dialect), ``SQL`` (its builder class; None: no SQL),
      ``HAS_LOCAL_SERVER``, ``CAPABILITIES`` and ``UNSUPPORTED`` (below).
    * **Connection.** A URL is parsed once into ``connection`` (its password never shown:
      :attr:`display_url`; :attr:`label` names the engine in results). :meth:`connect` opens a
      connection (engines implement it) with :meth:`connect_kwargs`; ``timeout_s``, while set,
      bounds each connection attempt and reply. ``type(engine)(client_kwargs=...)`` is a client of
      another process's server: nothing to start or stop.
    * **Driver.** ``WIRE.drivers`` lists the Python drivers, preferred first; a URL's ``+driver``
      picks one, else the first that imports does (:attr:`driver`, recorded by :meth:`metadata`).
    * **Lifecycle.** :meth:`start` starts the local server if any (:attr:`is_local`), steadies the CPUs
      (:func:`ingestlab.placement.engage`) and opens the measuring connection :attr:`conn` (autocommit);
      :meth:`close` closes it, stops the server and lets the CPUs go. Both idempotent.
    * **Statements, through the one clock.** :meth:`execute` runs one statement;
      ``sender.statement_call`` renders one before the clock and returns the call to time
      (:attr:`sender`: what the timed loops and the concurrent clients call). No adapter reads a
      clock: every timed region is :mod:`ingestlab.timing`'s.
    * **Settings.** :meth:`apply_settings` puts a variant's settings in force (a local server
      restarts with them, a remote one gets them per session, :meth:`set_session`);
      :meth:`settings` reads back every setting that differs from the server's default.
    * **Version and metadata.** :meth:`server_version`, :meth:`metadata`.
    * **Capabilities.** What a notebook needs beyond the core is a capability object, declared
      by name in ``CAPABILITIES`` (``{"upsert": PostgresUpsert, ...}``), its kind declared once
      with its flags and their defaults in :mod:`ingestlab.engines.capabilities`. :meth:`capability`
      returns the engine's object; each notebook lists the capabilities it needs
      (``Notebook.needs``) and the runner refuses an engine without one before any server starts.
    * **Missing steps and capabilities.** :meth:`has` says whether a capability or a step
      (:data:`~ingestlab.engines.steps.STEPS`) is there, and with ``check=True`` raises
      :class:`UnsupportedOperationError` with the reason in one line (psycopg's ``Capabilities``).
      A subclass switches off a capability by giving the reason instead of a class in
      ``CAPABILITIES``, a step in ``UNSUPPORTED``; a SQL step is missing where the engine's builder
      marks it so (or the engine has no ``SQL``).

    Steps (:data:`~ingestlab.engines.steps.STEPS`, what :meth:`has` answers for besides the
    capabilities): statements ``execute``, ``statement_call``, ``set_session``; SQL text, written
    by :attr:`sql`: ``quote``, ``table_ddl``, ``insert_sql``, ``upsert_sql``, ``insert_select_sql``,
    ``generate_rows_sql``, ``group_commit_interval_sql``; tables, through :attr:`tables`:
    ``reset_table``, ``count_rows``, ``data_bytes``, ``settle``; timed writes: ``prepare_insert``.

    Flags, with their defaults here: ``NAME = ''``, ``STYLE = None``, ``PACKAGE = None``,
    ``VERSION_OF = ''``, ``WIRE`` (a default :class:`~ingestlab.engines.wire.Wire`),
    ``HAS_LOCAL_SERVER = False``, ``SQL = SQLBuilder``, ``CAPABILITIES = {}``, ``UNSUPPORTED = {}``.

    Private hooks a subclass overrides where its engine differs: ``_make_server``,
    ``_setup_local``, ``_sql_options``, ``_INSTRUMENT_SETTINGS`` (settings every local run carries
    so that the anatomy instruments work); the table steps behind :attr:`tables` (``_reset_table``,
    ``_count_rows``, ``_data_bytes``, ``_settle``); and the sending steps behind :attr:`sender`:
    ``_statement_call``, ``_render`` (the text the driver sends),
    ``_native_sender`` (the C client library's send call, or None), ``_open_sender`` (a client's
    lowest-level send call), ``_prepare_insert``, ``_client_settings`` and ``_lock_wait_settings``
    (their defaults: :class:`~ingestlab.engines.sending.Sending`, :class:`~ingestlab.engines.tables.TableHooks`).
    """

    #: Registry name (its entry point's name); empty on abstract families.
    NAME: ClassVar[str] = ""
    #: Its human name, colour and marker (every registered adapter declares its own).
    STYLE: ClassVar[EngineStyle | None] = None
    #: The pip distribution whose version is the engine's own (an in-process engine's, a wheel's server's):
    #: recorded with every run, naming the engine where no server reported one. None: a server reports it.
    PACKAGE: ClassVar[str | None] = None
    #: Registry name of the engine this one is another version of (PostgreSQL 15's names PostgreSQL 18's).
    VERSION_OF: ClassVar[str] = ""
    #: How the engine is reached: URL schemes, default port, drivers, placeholder, sqlglot dialect.
    WIRE: ClassVar[Wire] = Wire()
    #: Whether ``engines.get(NAME)`` can start a local server on this machine.
    HAS_LOCAL_SERVER: ClassVar[bool] = False
    #: The builder class of the engine's SQL text (:attr:`sql`); None: the engine has no SQL.
    SQL: ClassVar[type[SQLBuilder] | None] = SQLBuilder
    #: What the engine provides beyond the core: capability name → its class (a subclass of the
    #: kind declared in :mod:`ingestlab.engines.capabilities`), or the reason it is missing.
    CAPABILITIES: ClassVar[Mapping[str, type[capabilities.Capability] | str]] = {}
    #: Steps of :data:`STEPS` this class must not inherit: step → why (raised as :class:`UnsupportedOperationError`).
    UNSUPPORTED: ClassVar[dict[str, str]] = {}
    #: Settings every local run carries so that the anatomy instruments work (recorded).
    _INSTRUMENT_SETTINGS: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for step, reason in cls.__dict__.get("UNSUPPORTED", {}).items():
            if step not in STEPS:
                raise TypeError(f"{cls.__name__}.UNSUPPORTED names {step!r}, not a step of {STEPS}")
            setattr(cls, hook(step), switched_off(step, reason))
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
        >>> Engine.has("execute"), Engine.has("upsert")  # a statement step, and a capability no adapter of its own
        (True, False)
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
            reason = missing_reason(cls, hook(name))
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
            None if url is None else Connection.parse(url).for_engine(self.WIRE.lab_query_keys))
        self.server: LocalServer | None = None
        #: Seconds a connection attempt and each reply may take while set (the pre-flight sets it,
        #: :data:`ingestlab.preflight.PREFLIGHT_TIMEOUT_S`): a server that accepts and never answers fails
        #: in that time instead of hanging. None: the driver's own defaults (a measurement must not be cut).
        self.timeout_s: float | None = None
        #: Set for a client of another process's server (:mod:`ingestlab.concurrency`): its connect
        #: arguments, which travel to the process through a pipe, never on its command line.
        self._client_kwargs = dict(client_kwargs) if client_kwargs is not None else None
        if url is None and client_kwargs is None:
            if not self.HAS_LOCAL_SERVER:
                raise EngineUnavailableError(
                    f"{self.NAME} has no local server in the lab; give its URL instead "
                    f"(see compose/README.md), e.g. {self.WIRE.example_url(self.NAME)}")
            self.server = self._make_server()
        self._conn = None
        self._cursor = None
        self._settings: dict[str, str] = {}
        self._sql_cache: dict[tuple, str] = {}
        self._driver: drivers.DriverChoice | None = None
        drivers.check_requested(self.NAME, self.WIRE.drivers, self._requested_driver, self.display_url,
                                self._parameter)

    @property
    def _parameter(self) -> str:
        """The parameter this engine's URL was given in (errors about it name it)."""
        return self.connection.parameter if self.connection is not None else PARAMETER

    def _make_server(self) -> LocalServer:
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
    def driver(self) -> drivers.DriverChoice:
        """The driver that measures: the URL's ``+driver``, else the first of ``WIRE.drivers`` that imports.

        Its ``name``, ``note`` (why it is not the preferred one, when the lab fell back to another:
        a warning, once per process, and the engine's metadata), ``module`` (imported on first
        use), and ``metadata()``.
        """
        if self._driver is None:
            self._driver = drivers.choose(self.NAME, self.WIRE.drivers, self._requested_driver)
        return self._driver

    def start(self) -> "Engine":
        """Start the local server (if any) and open the measuring connection."""
        if self._conn is not None:
            return self
        if self.server is not None:
            self.server.settings = {**self._INSTRUMENT_SETTINGS, **self._settings}
            self.server.start()
            self._setup_local()
        placement.engage(self)
        self._conn = self.connect()
        return self

    def _setup_local(self) -> None:
        """One-time set-up of a fresh local server (database, extensions). Default: nothing."""

    def close(self) -> None:
        """Close the connection and stop the local server; safe to call twice."""
        conn, self._conn, self._cursor = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a broken connection must not stop the shutdown
                conn.close()
        if self.server is not None:
            self.server.stop()
        placement.disengage(self)

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

    def connect_kwargs(self) -> dict:
        """Driver ``connect()`` arguments, from the local server or the URL."""
        if self._client_kwargs is not None:
            return dict(self._client_kwargs)
        if self.server is not None:
            return self.server.connect_kwargs()
        return self.connection.connect_args(self.WIRE.database_key)

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

    def _statement_call(self, sql: str, params: Sequence[Any] | None = None) -> Callable[[], Any]:
        """``sql`` with ``params``, rendered now, as a call that sends it on the measuring connection (``sender.statement_call``).

        For timed loops (:func:`ingestlab.timing.time_calls`): the driver's client-side
        interpolation (:meth:`_render`), which ``execute`` would do inside the clock, runs here,
        before it, so the timed call only sends the text and reads the server's reply, as a C
        client does per statement. Rows a statement returns are read and left unused. The call
        is bound to the current connection: build it after :meth:`apply_settings`.
        """
        self.has("statement_call", check=True)
        return functools.partial(self._measuring_cursor().execute, self._render(sql, params))

    # -- SQL text and tables -------------------------------------------------------------------
    @functools.cached_property
    def sql(self) -> SQLBuilder:
        """The builder of this engine's SQL text (an instance of ``SQL``, made on first use)."""
        if self.SQL is None:
            self.has("insert_sql", check=True)  # raises with the engine's reason (its UNSUPPORTED), else "no SQL"
        return self.SQL(self.NAME, placeholder=self.WIRE.placeholder, **self._sql_options())

    def _sql_options(self) -> dict[str, Any]:
        """Keyword arguments of this engine's ``SQL`` builder beyond the base's (engines add theirs)."""
        return {}

    @functools.cached_property
    def sender(self) -> Sender:
        """How its statements are rendered and sent for the clock (:class:`~ingestlab.engines.sending.Sender`)."""
        return Sender(self)

    @functools.cached_property
    def tables(self) -> Tables:
        """Its tables: create (``ddl``, ``reset``), count, weigh and settle one (:class:`~ingestlab.engines.tables.Tables`)."""
        return Tables(self)

    # -- settings and metadata ------------------------------------------------------------
    def apply_settings(self, settings: dict[str, str]) -> dict[str, str]:
        """Put ``settings`` in force for the following statements; return what is in force."""
        self._settings = {k: str(v) for k, v in settings.items()}
        if self.server is not None:
            if self._conn is not None:
                self._conn.close()
                self._conn, self._cursor = None, None
            self.server.restart({**self._INSTRUMENT_SETTINGS, **self._settings})
            placement.place(self.server)
            self._conn = self.connect()
        else:
            self.set_session(self._settings)
        return dict(self._settings)

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
        """Engine facts for a run's metadata (no password): its driver's (``driver``, ``driver_package``,
        ``driver_version``, any ``driver_note``) and ``timer``, the loop that times its statements."""
        return {
            "engine": self.NAME,
            "label": self.label,
            "url": self.display_url,
            "local_server": self.is_local,
            "server_version": self.server_version(),
            **self.driver.metadata(),
            "timer": self._timer(),
            "settings": self.settings(),
            "variant_settings": dict(self._settings),
            "instrument_settings": dict(self._INSTRUMENT_SETTINGS) if self.is_local else {},
        }
