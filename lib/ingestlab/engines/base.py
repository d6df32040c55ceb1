"""The engine contract every adapter implements, and the registry that finds adapters."""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any, ClassVar, Iterable, Sequence

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from ingestlab.errors import ConfigError, EngineUnavailableError, UnsupportedOperationError
from ingestlab.servers.base import LocalServer

#: Environment variable through which the batch runner hands passwords to a notebook kernel,
#: so that they never appear in the executed notebook: a JSON object ``{"user@host:port": pw}``.
PASSWORDS_ENV = "INGESTLAB_PASSWORDS"
#: What a password is replaced by wherever a URL is shown.
MASK = "***"

#: The seed's table: ``id BIGINT, name VARCHAR(100), amount DECIMAL(10,2), dt DATE``.
SEED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "BIGINT"),
    ("name", "VARCHAR(100)"),
    ("amount", "DECIMAL(10,2)"),
    ("dt", "DATE"),
)


class Engine:
    """One database engine, reached through its Python DB-API driver.

    The contract (what every adapter provides; subclasses override only what differs):

    * **Registry.** Subclasses with a :attr:`NAME` register themselves. ``Engine.get(name)``
      returns the lab's local instance of that engine (an embedded server the lab starts and
      stops) when the engine has one; ``Engine.from_url(url)`` returns an adapter for an
      existing server; ``Engine.resolve(target)`` accepts either. Nothing connects until
      :meth:`start`.
    * **Lifecycle.** :meth:`start` starts the local server if there is one and opens the
      measuring connection (autocommit on, so every statement is its own transaction and
      its commit is inside its timing); it is idempotent. :meth:`close` closes connections
      and stops the local server; it is idempotent and safe after a failure.
    * **Variants.** :meth:`apply_settings` puts server settings in force: a local server is
      restarted with them (and only them); a remote server gets session-level ``SET`` where
      the engine allows it, else :class:`UnsupportedOperationError`. :meth:`settings` reads
      back every setting that differs from the server's default, for the run's metadata.
    * **SQL.** DDL and DML are generated here with identifiers quoted by SQLAlchemy's
      dialect quoting (:meth:`quote`); values always travel as driver parameters.
    * **Times.** This class measures nothing itself: :mod:`ingestlab.timing` wraps
      :meth:`execute` with the client's wall clock (``perf_counter_ns``). Server-reported
      times come from :meth:`statement_anatomy`, whose rows say which instrument each
      number comes from.

    Capabilities are class attributes, documented where they are set.
    """

    #: Registry name (``"postgres"``); empty on abstract families.
    NAME: ClassVar[str] = ""
    #: URL schemes (before any ``+driver``) that select this engine in :meth:`from_url`.
    URL_SCHEMES: ClassVar[tuple[str, ...]] = ()
    #: SQLAlchemy drivername used to connect (``"postgresql+psycopg2"``).
    DRIVERNAME: ClassVar[str] = ""
    #: Default port of the engine's SQL protocol.
    DEFAULT_PORT: ClassVar[int | None] = None
    #: sqlglot dialect name of the SQL this adapter generates.
    SQLGLOT_DIALECT: ClassVar[str] = ""
    #: Format of :meth:`statement_anatomy`'s source (``"explain_json"``, ``"show_profile"``...).
    PROFILE_KIND: ClassVar[str | None] = None
    #: The engine's bulk path name (``"copy"``, ``"load_data_local"``, ``"stream_load"``), if any.
    BULK_PATH: ClassVar[str | None] = None
    #: Whether ``Engine.get(NAME)`` can start a local server on this machine.
    HAS_LOCAL_SERVER: ClassVar[bool] = False
    #: Commit-protocol variants for notebook 01: variant name → settings.
    COMMIT_VARIANTS: ClassVar[dict[str, dict[str, str]]] = {}
    #: Settings every local run carries so that the anatomy instruments work (recorded).
    INSTRUMENT_SETTINGS: ClassVar[dict[str, str]] = {}
    #: Whether the engine is a key-value store without SQL (RocksDB): workloads then use its
    #: key methods (``count_keys``...) instead of SQL.
    KEY_VALUE: ClassVar[bool] = False
    #: DB-API placeholder style of the driver.
    PLACEHOLDER: ClassVar[str] = "%s"
    #: URL query keys the lab reads itself and never hands to the driver: ``label`` (see
    #: :attr:`label`); engines add their own (``http_port``...).
    LAB_QUERY_KEYS: ClassVar[tuple[str, ...]] = ("label",)
    #: Notebook 03's ways of holding the engine to a memory budget (see :meth:`memory_budget_settings`),
    #: name → what it does, in words for the run's metadata. ``"engine"``: the engine's own cache of
    #: the budget's size, data files opened ``O_DIRECT`` (no OS page cache). ``"cgroup"``: an engine
    #: cache of :attr:`CGROUP_CACHE_SHARE` of the budget, buffered I/O, and the server's processes in a
    #: cgroup v1 memory group whose limit leaves the OS page cache the rest of the budget
    #: (:class:`ingestlab.servers.cgroups.MemoryCap`); only for servers outside the lab's process.
    MEMORY_LIMITS: ClassVar[dict[str, str]] = {}
    #: Share of the memory budget the engine's own cache gets under the ``"cgroup"`` limit.
    CGROUP_CACHE_SHARE: ClassVar[float] = 0.25

    _registry: ClassVar[dict[str, type["Engine"]]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.NAME:
            Engine._registry[cls.NAME] = cls

    # -- registry --------------------------------------------------------------------
    @classmethod
    def names(cls) -> list[str]:
        """Registered engine names, sorted.

        Examples
        --------
        >>> import ingestlab.engines
        >>> "postgres" in Engine.names()
        True
        """
        return sorted(cls._registry)

    @classmethod
    def get(cls, name: str) -> "Engine":
        """The adapter registered as ``name``, with its local server when it has one."""
        try:
            engine_cls = cls._registry[name]
        except KeyError:
            raise ConfigError("TARGET", name, "an engine name, one of " + ", ".join(cls.names())
                              + ", or a URL such as postgresql://user@host:5432/db") from None
        return engine_cls(url=None)

    @classmethod
    def from_url(cls, url: str | URL) -> "Engine":
        """An adapter for the existing server at ``url`` (``scheme://user:pw@host:port/db``)."""
        parsed = parse_url(url)
        scheme = parsed.drivername.split("+", 1)[0]
        for engine_cls in cls._registry.values():
            if scheme in engine_cls.URL_SCHEMES:
                return engine_cls(url=parsed)
        schemes = sorted({s for c in cls._registry.values() for s in c.URL_SCHEMES})
        raise ConfigError("TARGET", mask_url(url), "a URL whose scheme is one of " + ", ".join(schemes))

    @classmethod
    def resolve(cls, target: str) -> "Engine":
        """``target`` as a registry name (``"postgres"``) or a URL (contains ``://``)."""
        if not isinstance(target, str) or not target.strip():
            raise ConfigError("TARGET", target, "an engine name (" + ", ".join(cls.names()) + ") or a URL")
        return cls.from_url(target) if "://" in target else cls.get(target.strip())

    # -- construction and lifecycle -------------------------------------------------------
    def __init__(self, url: URL | None = None):
        self.url = url
        self.server: LocalServer | None = None
        if url is None:
            if not self.HAS_LOCAL_SERVER:
                raise EngineUnavailableError(
                    f"{self.NAME} has no local server in the lab; give its URL instead "
                    f"(see compose/README.md), e.g. {self.example_url()}")
            self.server = self.make_server()
        self._conn = None
        self._cursor = None
        self._settings: dict[str, str] = {}

    @classmethod
    def example_url(cls) -> str:
        """An example URL for this engine, for error messages and docs."""
        scheme = cls.URL_SCHEMES[0] if cls.URL_SCHEMES else cls.NAME
        return f"{scheme}://user@127.0.0.1:{cls.DEFAULT_PORT}/ingestlab"

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
        label = self.url.query.get("label") if self.url is not None else None
        return label if isinstance(label, str) and label.strip() else self.NAME

    @property
    def display_url(self) -> str:
        """Where this engine is, with any password masked (safe to print and store)."""
        if self.url is None:
            return f"{self.NAME} (lab-local server)"
        return mask_url(self.url)

    def start(self) -> "Engine":
        """Start the local server (if any) and open the measuring connection."""
        if self._conn is not None:
            return self
        if self.server is not None:
            self.server.settings = {**self.INSTRUMENT_SETTINGS, **self._settings}
            self.server.start()
            self.setup_local()
        self._conn = self.connect()
        return self

    def setup_local(self) -> None:
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
        """The measuring DB-API connection (autocommit)."""
        if self._conn is None:
            raise EngineUnavailableError(f"{self.NAME}: call start() first")
        return self._conn

    def connect_kwargs(self) -> dict:
        """Driver ``connect()`` arguments, from the local server or the URL."""
        if self.server is not None:
            return self.server.connect_kwargs()
        args = self.url.translate_connect_args(username="user", database=self.DATABASE_KEY)
        if self.url.password is not None and str(self.url.password) == MASK:
            args["password"] = _password_from_env(self.url)
        args.update({k: v for k, v in self.url.query.items() if k not in self.LAB_QUERY_KEYS})
        return args

    DATABASE_KEY: ClassVar[str] = "database"

    def connect(self):
        """A new DB-API connection with autocommit on."""
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
        cur = self._cursor
        if cur is None:
            cur = self._cursor = self.conn.cursor()
        cur.execute(sql, params)
        return cur.fetchall() if cur.description else []

    def quote(self, identifier: str) -> str:
        """``identifier`` quoted by SQLAlchemy's quoting for this dialect."""
        return self.sqlalchemy_dialect().identifier_preparer.quote_identifier(identifier)

    @classmethod
    def sqlalchemy_dialect(cls):
        """The SQLAlchemy dialect instance used for quoting (built once per class)."""
        return _dialect(cls.DRIVERNAME)

    def column_type(self, sql_type: str) -> str:
        """The engine's spelling of a portable column type. Default: unchanged."""
        return sql_type

    def create_table_sql(self, table: str, columns: Sequence[tuple[str, str]], *,
                         primary_key: Sequence[str] = (), **options) -> str:
        """``CREATE TABLE`` for ``columns`` (name, type). Engines add their clauses."""
        if options:
            raise UnsupportedOperationError(f"{self.NAME}: table options {sorted(options)} not supported")
        cols = [f"{self.quote(n)} {self.column_type(t)}" for n, t in columns]
        if primary_key:
            cols.append("PRIMARY KEY (" + ", ".join(map(self.quote, primary_key)) + ")")
        return f"CREATE TABLE {self.quote(table)} (" + ", ".join(cols) + ")"

    def drop_table_sql(self, table: str) -> str:
        """``DROP TABLE IF EXISTS``."""
        return f"DROP TABLE IF EXISTS {self.quote(table)}"

    def insert_sql(self, table: str, columns: Sequence[str], n_rows: int = 1) -> str:
        """A multi-row ``INSERT … VALUES`` with driver placeholders for ``n_rows`` rows."""
        row = "(" + ", ".join([self.PLACEHOLDER] * len(columns)) + ")"
        cols = ", ".join(map(self.quote, columns))
        return f"INSERT INTO {self.quote(table)} ({cols}) VALUES " + ", ".join([row] * n_rows)

    def upsert_sql(self, table: str, columns: Sequence[str], key: str, n_rows: int = 1) -> str:
        """A multi-row ``INSERT`` that overwrites every column but ``key`` when ``key`` exists."""
        others = [c for c in columns if c != key]
        if key not in columns or not others:
            raise ValueError(f"upsert_sql: key {key!r} must be one of {list(columns)}, beside at least one other")
        return f"{self.insert_sql(table, columns, n_rows)} {self.upsert_clause(key, others)}"

    def upsert_clause(self, key: str, others: Sequence[str]) -> str:
        """The engine's conflict clause for :meth:`upsert_sql` (engines override)."""
        raise UnsupportedOperationError(f"{self.NAME}: no upsert")

    def memory_budget_settings(self, budget_bytes: int, limit: str = "engine") -> dict[str, str]:
        """Settings that hold the engine's caches to ``budget_bytes`` under ``limit`` (one of :attr:`MEMORY_LIMITS`)."""
        raise UnsupportedOperationError(f"{self.NAME}: no memory budget settings")

    def cache_bytes(self, budget_bytes: int, limit: str) -> int:
        """Bytes of the engine's own cache under ``limit``: the budget, or its :attr:`CGROUP_CACHE_SHARE`.

        Raises
        ------
        ConfigError
            When the engine does not know ``limit``.

        Examples
        --------
        >>> from ingestlab.engines.postgres import Postgres
        >>> Postgres.__new__(Postgres).cache_bytes(256 * 2**20, "cgroup") // 2**20
        64
        """
        if limit not in self.MEMORY_LIMITS:
            raise ConfigError("MEMORY_LIMIT", limit, f"one of {sorted(self.MEMORY_LIMITS)} for {self.NAME}")
        return int(budget_bytes * (self.CGROUP_CACHE_SHARE if limit == "cgroup" else 1))

    def insert_select_sql(self, target: str, source: str) -> str:
        """``INSERT INTO target SELECT * FROM source``."""
        return f"INSERT INTO {self.quote(target)} SELECT * FROM {self.quote(source)}"

    def count_rows(self, table: str) -> int:
        """``SELECT count(*)`` of ``table``."""
        return int(self.execute(f"SELECT count(*) FROM {self.quote(table)}")[0][0])

    def bulk_load(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Load ``rows`` through the engine's bulk path (:attr:`BULK_PATH`)."""
        raise UnsupportedOperationError(f"{self.NAME} has no bulk path in the lab")

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
            "settings": self.settings(),
            "variant_settings": dict(self._settings),
            "instrument_settings": dict(self.INSTRUMENT_SETTINGS) if self.is_local else {},
        }

    def statement_anatomy(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]):
        """Split single-row INSERTs of ``rows`` into server-reported parts (tidy frame)."""
        raise UnsupportedOperationError(f"{self.NAME}: no statement anatomy")


@functools.lru_cache(maxsize=None)
def _dialect(drivername: str):
    return make_url(drivername + "://").get_dialect()()


def parse_url(url: str | URL) -> URL:
    """Parse a database URL, raising :class:`ConfigError` (password masked) when malformed.

    Examples
    --------
    >>> parse_url("postgresql://u:secret@127.0.0.1:5432/db").port
    5432
    """
    if isinstance(url, URL):
        return url
    try:
        parsed = make_url(url)
        parsed.port  # noqa: B018 - a non-numeric port raises only when read
    except (ArgumentError, ValueError) as exc:
        raise ConfigError("TARGET", mask_url(url), "a URL such as postgresql://user@host:5432/db") from exc
    if not parsed.host and not parsed.query.get("host"):
        raise ConfigError("TARGET", mask_url(url), "a URL with a host, such as postgresql://user@host:5432/db")
    return parsed


_PW_IN_URL = re.compile(r"(?P<head>[a-z0-9+.-]+://[^:/@\s]*:)(?P<pw>[^@\s]*)(?P<tail>@)", re.I)


def mask_url(url: str | URL) -> str:
    """``url`` with its password replaced by ``***``; works on malformed URLs too.

    Examples
    --------
    >>> mask_url("mysql://root:hunter2@127.0.0.1:3306/db")
    'mysql://root:***@127.0.0.1:3306/db'
    """
    if isinstance(url, URL):
        return url.render_as_string(hide_password=True)
    return _PW_IN_URL.sub(lambda m: m["head"] + MASK + m["tail"], str(url))


def split_password(url: str) -> tuple[str, str | None]:
    """``(masked url, password)``: what the runner injects and what it hands over privately."""
    parsed = parse_url(url)
    if parsed.password is None or str(parsed.password) == MASK:
        return url, None
    return mask_url(url), str(parsed.password)


def password_key(url: URL) -> str:
    """The key under which :data:`PASSWORDS_ENV` holds ``url``'s password."""
    return f"{url.username or ''}@{url.host or ''}:{url.port or ''}"


def _password_from_env(url: URL) -> str:
    try:
        return json.loads(os.environ.get(PASSWORDS_ENV, "{}"))[password_key(url)]
    except (KeyError, json.JSONDecodeError):
        raise ConfigError("TARGET", mask_url(url),
                          f"the password for {password_key(url)} in ${PASSWORDS_ENV} "
                          "(set by `ingestlab run`), or a URL with the password") from None
