"""How an engine is reached (``Engine.WIRE``): schemes, port, drivers, dialect; and how long a lock may hold it."""

from __future__ import annotations

import dataclasses
import math
import os
import socket
from typing import Mapping

from ingestlab.errors import ConfigError, EngineUnavailableError

#: Environment variable that sets :func:`lock_wait_s` for a run (seconds > 0).
LOCK_WAIT_ENV = "INGESTLAB_LOCK_WAIT_S"
#: Seconds a statement of the lab waits by default for a lock another session holds.
LOCK_WAIT_S = 60.0
#: The longest :data:`LOCK_WAIT_ENV` may ask for.
MAX_LOCK_WAIT_S = 86_400.0


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
    if not (math.isfinite(value) and 0 < value <= MAX_LOCK_WAIT_S):
        raise ConfigError(LOCK_WAIT_ENV, raw, f"a number of seconds > 0, at most {MAX_LOCK_WAIT_S:.0f} (a day; "
                                              "servers refuse a longer lock timeout)")
    return value


@dataclasses.dataclass(frozen=True)
class Wire:
    """The connection and driver facts of an engine; a family member changes a few (``dataclasses.replace``).

    Parameters
    ----------
    schemes : tuple of str
        URL schemes (before any ``+driver``) that select the engine in ``engines.from_url``.
    default_port : int or None
        Default port of the engine's SQL protocol.
    database_key : str
        Name of the database argument of the driver's ``connect()``.
    placeholder : str
        DB-API placeholder style of the driver.
    drivername : str
        SQLAlchemy drivername of the default driver, and the dialect that quotes (``"postgresql+psycopg2"``).
    drivers : Mapping
        Python drivers the adapter can measure through: SQLAlchemy driver name (a URL's ``+driver``)
        → (module, pip distribution), preferred first. Without ``+driver`` the first one that
        imports is used (``Engine.driver``); a fallback is noted once and recorded.
    sqlglot_dialect : str
        sqlglot dialect of the SQL the adapter writes (tests validate it with this dialect).
    lab_query_keys : tuple of str
        URL query keys the lab reads itself and never hands to the driver (``label``: ``Engine.label``).
    reach_timeout_s : float
        Seconds :meth:`check_reachable` waits for a server's port.
    sender_driver : str
        The Python package whose connection ``Engine._open_sender`` sends on (empty: the driver's).
    example : str
        The example URL errors and docs show (default: one made of the first scheme and the port).

    Examples
    --------
    >>> Wire(schemes=("pg",), default_port=5432).example_url("x")
    'pg://user@127.0.0.1:5432/ingestlab'
    """

    schemes: tuple[str, ...] = ()
    default_port: int | None = None
    database_key: str = "database"
    placeholder: str = "%s"
    drivername: str = ""
    drivers: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    sqlglot_dialect: str = ""
    lab_query_keys: tuple[str, ...] = ("label",)
    reach_timeout_s: float = 5.0
    sender_driver: str = ""
    example: str = ""

    def example_url(self, name: str) -> str:
        """An example URL for engine ``name``, for error messages and docs."""
        if self.example:
            return self.example
        scheme = self.schemes[0] if self.schemes else name
        return f"{scheme}://user@127.0.0.1:{self.default_port}/ingestlab"

    def check_reachable(self, connection, where: str, timeout_s: float | None = None) -> None:
        """Fail fast when the server of ``connection`` does not accept a TCP connection (nothing is sent).

        No connection (a lab-local engine), or a URL without a TCP host (a Unix socket), passes.
        Used by parameter validation, so that an unreachable server fails before anything is written.

        Raises
        ------
        EngineUnavailableError
            Naming ``where`` (the URL, its password masked) and the reason.
        """
        host = connection.host if connection is not None else None
        if not host or host.startswith("/"):
            return
        port = connection.port or self.default_port
        try:
            socket.create_connection((host, port), timeout=timeout_s or self.reach_timeout_s).close()
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise EngineUnavailableError(f"cannot reach {where}: {reason}") from None
