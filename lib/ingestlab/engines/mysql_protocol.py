"""The MySQL wire protocol, the base of MySQL, MariaDB, StarRocks and Doris: connection, drivers, statements, settings."""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Callable, ClassVar, Mapping, Sequence

from ingestlab import timing
from ingestlab.engines.base import Engine, Wire
from ingestlab.engines.sql.mysql_protocol import MySQLProtocolSQL, check_variable
from ingestlab.errors import EngineUnavailableError, ServerError

_INTEGER = re.compile(r"^-?\d+$")


class MySQLProtocol(Engine):
    """Any server that speaks MySQL's protocol, through mysqlclient (C) or PyMySQL; no storage engine of its own.

    What the family shares, and nothing of InnoDB's (that is :class:`~ingestlab.engines.mysql.MySQL`'s):
    the connection (autocommit, ``utf8mb4``, ``local_infile`` on), the drivers, one
    statement sent the way ``mariadb-slap`` sends it (:meth:`statement_call`,
    :meth:`_native_sender`, :meth:`_open_sender`), session variables (``SET SESSION``),
    the version and the settings read back. :class:`~ingestlab.engines.mysql.MySQL` (and
    MariaDB) and :class:`~ingestlab.engines.starrocks.StarRocks` (and Doris) extend it
    separately, so neither inherits the other's steps.

    **Drivers.** By default the lab measures through ``mysqlclient`` (``MySQLdb``, SQLAlchemy
    ``mysql+mysqldb``), a thin layer over the C client library that ``mariadb-slap`` uses
    too, so a timed statement costs the client what a C client pays. ``mysql+pymysql://`` (or
    ``mariadb+pymysql://``…) selects PyMySQL, whose protocol is pure Python (tens of µs more
    per statement). Where mysqlclient is not installed (it builds from source: a compiler and
    the MariaDB/MySQL client headers), the lab falls back to PyMySQL, warns once and records
    it (:attr:`driver`, the ``driver`` of every sample and of the metadata).
    """

    WIRE = Wire(default_port=3306, drivername="mysql+mysqldb", sqlglot_dialect="mysql",
                drivers={"mysqldb": ("MySQLdb", "mysqlclient"), "pymysql": ("pymysql", "PyMySQL")})
    SQL = MySQLProtocolSQL
    #: The connection's character set (``SET NAMES``): the server parses every statement in it.
    CHARSET: ClassVar[str] = "utf8mb4"
    #: Statement that returns the server's version string.
    VERSION_SQL: ClassVar[str] = "SELECT VERSION()"
    #: Statement listing (name, value) of the server's variables not at their defaults; ``""``: it cannot say.
    SETTINGS_SQL: ClassVar[str] = ""

    # -- connection ------------------------------------------------------------------------
    def connect(self):
        dbapi = self.driver.module
        kwargs = {"charset": self.CHARSET, **self.connect_kwargs(), "autocommit": True, "local_infile": True}
        if self.timeout_s is not None:  # both drivers take these: the handshake and every reply are bounded
            seconds = max(1, round(self.timeout_s))
            kwargs.update(connect_timeout=seconds, read_timeout=seconds, write_timeout=seconds)
        try:
            return dbapi.connect(**kwargs)
        except dbapi.MySQLError as exc:
            raise EngineUnavailableError(f"cannot connect to {self.display_url}: {exc}") from exc

    def connect_kwargs(self) -> dict:
        """Driver arguments; a URL without a password also reads the MySQL option file ``~/.my.cnf`` ([client])."""
        args = super().connect_kwargs()
        option_file = os.path.expanduser("~/.my.cnf")
        if self.server is None and "password" not in args and os.path.isfile(option_file):
            args["read_default_file"] = option_file
        return args

    def _statement_call(self, sql: str, params: Sequence[Any] | None = None):
        """``sql`` with ``params``, rendered now, as a call of the connection's own query function.

        What ``mariadb-slap`` does per statement: send the text (``mysql_real_query``) and,
        only when the reply announces a result set (``mysql_field_count``), read it
        (``mysql_store_result``), without the cursor's bookkeeping in Python. With mysqlclient
        it is a :class:`~ingestlab.timing.NativeCall` on those C functions (:meth:`_native_sender`),
        timed by the lab's C loop (without the C half, mysqlclient's own C ``query`` from
        Python); PyMySQL's ``Connection.query`` sends and reads in one call.
        """
        self.has("statement_call", check=True)
        text = self._render(sql, params)
        conn = self.conn
        if self.driver.name != "mysqldb":
            return functools.partial(conn.query, text)
        from MySQLdb import _mysql

        text = text.encode() if isinstance(text, str) else text
        query = functools.partial(_mysql.connection.query, conn, text)
        field_count, store = conn.field_count, conn.store_result

        def call() -> None:
            try:
                query()
                if field_count():
                    store()
            except _mysql.MySQLError as exc:
                raise ServerError(f"{self.NAME}: {exc}") from exc
        sender = self._native_sender()
        return call if sender is None else timing.NativeCall(sender, text, call, self.NAME)

    def _native_sender(self) -> timing.NativeSender | None:
        """mysqlclient's connection as libmysqlclient's (libmariadb's) ``MYSQL *``, with its query functions.

        The pointer comes from mysqlclient's ``_get_native_connection`` (a capsule; the one
        way mysqlclient hands its connection to C code, marked private: the lab pins
        mysqlclient's version and a test checks it), the functions from the library mysqlclient
        is linked with. None with PyMySQL (no C library under it).
        """
        if self.driver.name != "mysqldb":
            return None
        import ctypes

        from MySQLdb import _mysql

        conn = self.conn
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        try:
            pointer = get_pointer(conn._get_native_connection(), b"_mysql.connection.native_connection")
            lib = _libmysql(_mysql.__file__)
            functions = [ctypes.cast(getattr(lib, f), ctypes.c_void_p).value
                         for f in ("mysql_real_query", "mysql_field_count", "mysql_store_result", "mysql_free_result")]
        except (AttributeError, ValueError, OSError):  # a mysqlclient without the capsule: time from Python
            return None
        return timing.NativeSender("libmysql", pointer, functions, lambda: f"({conn.errno()}) {conn.error()}", conn,
                                   lambda: bool(conn.open))

    def _open_sender(self, session: Mapping[str, str] | None = None) -> Callable[[bytes], Any]:
        """The connection's own query call: mysqlclient's C ``query`` (``mysql_real_query``, what
        ``mariadb-slap`` sends an INSERT with; an INSERT has no result set to store), or PyMySQL's
        ``Connection.query``."""
        super()._open_sender(session)
        if self.driver.name != "mysqldb":
            return self.conn.query
        from MySQLdb import _mysql

        return functools.partial(_mysql.connection.query, self.conn)

    # -- settings --------------------------------------------------------------------------
    def set_sql(self, name: str, scope: str = "SESSION") -> str:
        """``SET <scope> name = %s`` for a checked variable name (the value is a driver parameter)."""
        return self.sql.set_sql(name, scope)

    def set_session(self, settings: dict[str, str]) -> None:
        """``SET SESSION name = value`` for each setting (engines whose variables are not all per session override)."""
        for name, value in settings.items():
            self.execute(self.set_sql(name), [sql_value(value)])

    def server_version(self) -> str:
        return str(self.execute(self.VERSION_SQL)[0][0])

    def settings(self) -> dict[str, str]:
        """Variables not at their defaults (:meth:`_server_settings`), and the values of the settings the lab applied."""
        out = {str(name): str(value) for name, value in self._server_settings()}
        for name in self._settings:
            check_variable(name)
            out[name] = str(self.execute(f"SELECT @@{name}")[0][0])
        return out

    def _server_settings(self) -> list[tuple[str, Any]]:
        """(name, value) of the server's non-default variables (:attr:`SETTINGS_SQL`); none if it cannot say."""
        if not self.SETTINGS_SQL:
            return []
        try:
            return self.execute(self.SETTINGS_SQL)
        except self.driver.module.MySQLError:  # e.g. MySQL 5.7 has no variables_info
            return []


def sql_value(value: Any) -> Any:
    """A setting's value as the driver parameter a ``SET`` accepts: integers as int, the rest as text.

    Examples
    --------
    >>> sql_value("2"), sql_value("ON")
    (2, 'ON')
    """
    text = str(value)
    return int(text) if _INTEGER.match(text) else text


@functools.lru_cache(maxsize=None)
def _libmysql(module: str):
    """The client library mysqlclient's compiled ``module`` is linked with, through :mod:`ctypes`."""
    import ctypes

    return ctypes.CDLL(module)
