"""Database URLs: one parsed connection value, password masking, and the private hand-over of passwords to a kernel."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any, Mapping
from urllib.parse import quote, unquote

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from ingestlab.errors import ConfigError

#: Environment variable through which the batch runner hands passwords to a notebook kernel,
#: so that they never appear in the executed notebook: a JSON object ``{"user@host:port": pw}``.
HANDOVER_ENV = "INGESTLAB_HANDOVER"
#: Its old name, one letter from :data:`PASSWORD_ENV`: refused when set, naming :data:`HANDOVER_ENV`.
RENAMED_HANDOVER_ENV = "INGESTLAB_PASSWORDS"
#: What a password is replaced by wherever a URL is shown.
MASK = "***"
#: Environment variable holding the password for URL targets that give none.
PASSWORD_ENV = "INGESTLAB_PASSWORD"
#: Query keys that carry a password, in the spellings the lab's drivers accept (psycopg:
#: ``password``; PyMySQL and mysqlclient: ``password`` and ``passwd``); matched case-blind.
PASSWORD_KEYS: tuple[str, ...] = ("password", "passwd")
#: Other query keys whose value is a secret (libpq's key passphrase, MariaDB's and MySQL's
#: multi-factor passwords): masked wherever a URL is shown, and refused in a URL, since a notebook's
#: parameters, ``run.json`` and the outputs hold the URL and there is no private hand-over for them.
SECRET_KEYS: tuple[str, ...] = ("sslpassword", "password1", "password2", "password3")
#: The parameter name errors about a URL carry when the caller names none (the notebooks' engine parameter).
PARAMETER = "ENGINES"

#: Where a connection's password comes from (:attr:`Connection.password_source`).
NO_PASSWORD = "none"  # none given: the driver's own sources (~/.pgpass, ~/.my.cnf) may supply one
IN_URL = "url"  # in the user info: ``user:pw@host``
IN_QUERY = "query"  # in the query: ``?password=pw``
HANDED_OVER = "handover"  # ``***`` in the URL: the kernel reads it from :data:`HANDOVER_ENV`
PASSWORD_SOURCES: tuple[str, ...] = (NO_PASSWORD, IN_URL, IN_QUERY, HANDED_OVER)

_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_SCHEME = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.\-]*://")
_HOST = re.compile(r"[A-Za-z0-9._\-]+|\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:]+")
_NAME = re.compile(r"^\s*[A-Za-z][A-Za-z0-9_]*\s*$")


def _split(url: str) -> tuple[str, str | None, str | None, str] | None:
    """``(scheme://, user, password, rest)`` of a URL string, tolerating raw ``@ : / %`` and spaces
    in the password (the user info ends at the last ``@`` before the query); None if it has no ``://``."""
    head, sep, rest = url.partition("://")
    if not sep:
        return None
    main, qmark, query = rest.partition("?")
    if qmark and "@" in query and "=" not in query.rpartition("@")[0]:
        # a raw "?" in the password ("u:p@ss?word@host/db"): what lies between it and the last "@"
        # is no key=value pair of a query
        userinfo, _, after = rest.rpartition("@")
        host, qmark, query = after.partition("?")
        main = userinfo + "@" + host
    if "@" not in main:
        return head + sep, None, None, rest
    userinfo, host = main.rsplit("@", 1)
    user, colon, password = userinfo.partition(":")
    return head + sep, user, (password if colon else None), "@" + host + qmark + query


def _is_password_key(key: str) -> bool:
    return unquote(key).strip().lower() in PASSWORD_KEYS


def _is_secret_key(key: str) -> bool:
    return _is_password_key(key) or unquote(key).strip().lower() in SECRET_KEYS


def _query_pairs(url: str) -> tuple[str, list[str]]:
    """``(url before the query, the query's ``key=value`` pieces)`` of a URL string (split at the first ``?``
    after the user info)."""
    parts = _split(url)
    if parts is None:
        return url, []
    head, user, password, rest = parts
    userinfo = "" if user is None else user + ("" if password is None else ":" + password)
    main, qmark, query = rest.partition("?")
    return head + userinfo + main, (query.split("&") if qmark else [])


def _mask_query(url: str, *, drop: bool = False) -> str:
    """``url`` with each password or other secret of its query masked (or, with ``drop``, left out)."""
    base, pairs = _query_pairs(url)
    if not any(_is_secret_key(p.partition("=")[0]) for p in pairs):
        return url
    kept = [p for p in pairs if not _is_secret_key(p.partition("=")[0])] if drop else [
        p.partition("=")[0] + "=" + MASK if _is_secret_key(p.partition("=")[0]) else p for p in pairs]
    return base + ("?" + "&".join(kept) if kept else "")


def _query_password(url: str) -> str | None:
    """The (last) password given in the query of ``url``, decoded; None when there is none."""
    values = [unquote(p.partition("=")[2]) for p in _query_pairs(url)[1] if _is_password_key(p.partition("=")[0])]
    return values[-1] if values else None


def is_url(value: object) -> bool:
    """Whether ``value`` is a URL (it has ``://``) rather than an engine's name: the one place the lab tells them apart.

    Examples
    --------
    >>> is_url("my_engine"), is_url("scheme://u@h/db"), is_url(None)
    (False, True, False)
    """
    return isinstance(value, str) and "://" in value


def split_targets(value: str) -> list[str]:
    """The engine names and URLs of a comma-separated ``value``, stripped, empty items left out.

    An item starts at ``scheme://`` or at an engine name. A URL's user info ends at the last
    ``@`` before the next ``scheme://``, so commas in its password (and the words between
    them) stay in it; any other piece that is not a name belongs to the URL before it.

    Examples
    --------
    >>> split_targets("engine_a, engine_b")
    ['engine_a', 'engine_b']
    >>> split_targets("engine_a,wire://u:a,b@h:3306/db, other://root@fe:9030/x")
    ['engine_a', 'wire://u:a,b@h:3306/db', 'other://root@fe:9030/x']
    >>> split_targets("wire://u:p,w,x@h/db")
    ['wire://u:p,w,x@h/db']
    """
    pieces = str(value).split(",")
    items: list[str] = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        if _SCHEME.match(piece):
            end = next((k for k in range(i + 1, len(pieces)) if _SCHEME.match(pieces[k])), len(pieces))
            last_at = max((k for k in range(i, end) if "@" in pieces[k]), default=i)
            items.append(",".join(pieces[i:last_at + 1]))
            i = last_at + 1
            continue
        if items and piece.strip() and not _NAME.match(piece):
            items[-1] += "," + piece
        else:
            items.append(piece)
        i += 1
    return [item.strip() for item in items if item.strip()]


def normalise_url(url: str) -> str:
    """``url`` with its password percent-encoded, so that any character survives parsing.

    A password may hold raw ``@``, ``:``, ``/``, ``%`` and spaces; a ``%XX`` escape in it is
    read as the character it encodes (URL rules), every other character as itself.

    Examples
    --------
    >>> normalise_url("mysql://root:p@ss w:rd%@db.example:3306/x")
    'mysql://root:p%40ss%20w%3Ard%25@db.example:3306/x'
    >>> make_url(normalise_url("mysql://root:p@ss w:rd%@db.example:3306/x")).password
    'p@ss w:rd%'
    """
    parts = _split(url)
    if parts is None or parts[2] is None:
        return url
    head, user, password, rest = parts
    literal = password if not _ESCAPE.search(password) else unquote(password)
    return f"{head}{user}:{quote(literal, safe='')}{rest}"


def _parse(url: str | URL, parameter: str) -> URL:
    """``url`` parsed and checked (a port that is a number, a host), or :class:`ConfigError` naming ``parameter``."""
    if isinstance(url, URL):
        parsed = url
    else:
        try:
            parsed = make_url(normalise_url(url))
            parsed.port  # noqa: B018 - a non-numeric port raises only when read
        except (ArgumentError, ValueError) as exc:
            raise ConfigError(parameter, mask_url(url), "a URL such as scheme://user@host:port/db") from exc
    if not parsed.host and not parsed.query.get("host"):
        raise ConfigError(parameter, mask_url(url), "a URL with a host, such as scheme://user@host:port/db")
    return parsed


def parse_url(url: str | URL, parameter: str = PARAMETER) -> URL:
    """Parse a database URL, raising :class:`ConfigError` (naming ``parameter``, password masked) when malformed.

    Examples
    --------
    >>> parse_url("postgresql://u:secret@127.0.0.1:5432/db").port
    5432
    """
    if isinstance(url, Connection):
        url = url.url()
    return _parse(url, parameter)


@dataclasses.dataclass(frozen=True)
class Connection:
    """A database URL parsed once: what every part of the lab reads instead of parsing the URL again.

    Build it with :meth:`parse`; the engine adapter, the masking (:func:`mask_url`), the
    journal of a server's settings (:mod:`ingestlab.journal`) and the password hand-over
    (:func:`password_key`) all take it as it is. The password itself is never in its
    ``repr``, and never in :meth:`display` or :meth:`url`.

    Attributes
    ----------
    scheme : str
        The engine's URL scheme (``"mysql"``), without the driver.
    driver : str
        The URL's ``+driver`` (``"pymysql"``), or ``""``.
    host, port, database, user
        As in the URL (None where it gives none).
    password_source : str
        One of :data:`PASSWORD_SOURCES`: ``none``, ``url`` (in the user info), ``query``
        (``?password=`` or ``?passwd=``) or ``handover`` (``***`` in the URL: the runner handed
        it, from ``$INGESTLAB_PASSWORD`` or ``--password-file``, to this kernel in :data:`HANDOVER_ENV`).
    query : mapping
        The URL's query without its password keys.
    lab_keys : tuple of str
        Query keys the lab reads itself (``label``, an engine's own: see
        ``Engine.WIRE.lab_query_keys``); never handed to the driver.
    parameter : str
        The parameter the URL was given in, named by every error about it.

    Examples
    --------
    >>> c = Connection.parse("mysql+pymysql://root@db:3306/lab?passwd=s3cret&label=a&charset=utf8mb4")
    >>> c.scheme, c.driver, c.host, c.port, c.password_source, c.label, c.options
    ('mysql', 'pymysql', 'db', 3306, 'query', 'a', {'charset': 'utf8mb4'})
    >>> c.display()
    'mysql+pymysql://root:***@db:3306/lab?charset=utf8mb4&label=a'
    """

    scheme: str
    driver: str = ""
    host: str | None = None
    port: int | None = None
    database: str | None = None
    user: str | None = None
    password_source: str = NO_PASSWORD
    query: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    lab_keys: tuple[str, ...] = ("label",)
    parameter: str = dataclasses.field(default=PARAMETER, compare=False)
    password: str | None = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def parse(cls, url: "str | URL | Connection", parameter: str | None = None) -> "Connection":
        """``url`` parsed once: a password in the user info or in the query, ``***`` for a handed-over one.

        A :class:`Connection` is returned as it is (with ``parameter`` when one is given);
        ``parameter`` defaults to :data:`PARAMETER`.

        Raises
        ------
        ConfigError
            Naming ``parameter`` and the URL (secrets masked): malformed, no host, two different
            passwords (user info and query), or a secret option other than the password
            (:data:`SECRET_KEYS`).
        """
        if isinstance(url, Connection):
            return url if parameter in (None, url.parameter) else dataclasses.replace(url, parameter=parameter)
        parameter = parameter or PARAMETER
        parsed = _parse(url, parameter)
        if parsed.port is not None and not 1 <= parsed.port <= 65535:
            raise ConfigError(parameter, mask_url(url), f"a URL whose port is from 1 to 65535 (not {parsed.port})")
        if parsed.host is not None and not _HOST.fullmatch(parsed.host):
            raise ConfigError(parameter, mask_url(url), "a URL whose host is a name or an address (letters, digits, "
                                                        "'.', '-', '_', ':' in brackets), not percent-escaped bytes")
        secrets = sorted({k for k in parsed.query if _is_secret_key(k) and not _is_password_key(k)})
        if secrets:
            raise ConfigError(parameter, mask_url(url), f"a URL without {', '.join(secrets)}: a secret in a URL would "
                                                        "be written with the run (its parameters, run.json, the "
                                                        "notebook); decrypt the key, or keep the secret in the "
                                                        "driver's own files (a service file, an option file)")
        query = {k: v for k, v in parsed.query.items() if not _is_password_key(k)}
        if isinstance(url, URL):
            in_query = [v for k, v in parsed.query.items() if _is_password_key(k)]
            from_query = (in_query[-1][-1] if isinstance(in_query[-1], tuple) else in_query[-1]) if in_query else None
        else:
            from_query = _query_password(url)
        password, source = parsed.password, NO_PASSWORD
        if password is not None:
            source = IN_URL
            if from_query is not None and from_query != password and MASK not in (password, from_query):
                raise ConfigError(parameter, mask_url(url), "one password: in the user info or in the query, not two")
        elif from_query is not None:
            password, source = from_query, IN_QUERY
        if password is not None and str(password) == MASK:
            password, source = None, HANDED_OVER
        return cls(scheme=parsed.get_backend_name(), driver=parsed.drivername.partition("+")[2] or "",
                   host=parsed.host, port=parsed.port, database=parsed.database, user=parsed.username,
                   password_source=source, query=query, parameter=parameter,
                   password=None if password is None else str(password))

    # -- views ---------------------------------------------------------------------------------
    @property
    def drivername(self) -> str:
        """``scheme+driver`` (SQLAlchemy's name), or the scheme alone."""
        return f"{self.scheme}+{self.driver}" if self.driver else self.scheme

    @property
    def options(self) -> dict[str, Any]:
        """The query the driver receives: without the lab's keys and without any password key."""
        return {k: v for k, v in self.query.items() if k not in self.lab_keys}

    @property
    def lab(self) -> dict[str, Any]:
        """The query keys the lab reads itself (:attr:`lab_keys`) that the URL gives."""
        return {k: v for k, v in self.query.items() if k in self.lab_keys}

    @property
    def label(self) -> str | None:
        """The URL's ``label`` (the engine's name in results), when it gives a non-blank one."""
        label = self.query.get("label")
        return label if isinstance(label, str) and label.strip() else None

    @property
    def has_password(self) -> bool:
        """Whether a password comes with the URL (in it, or handed over), so that it is masked."""
        return self.password_source != NO_PASSWORD

    @property
    def password_key(self) -> str:
        """The key of this URL's password in :data:`HANDOVER_ENV`: ``user@host:port``."""
        return f"{self.user or ''}@{self.host or ''}:{self.port or ''}"

    @property
    def journal_key(self) -> str:
        """The server and account, password-free: ``scheme://user@host:port/database`` (a socket stands for the host)."""
        host = self.host or self.query.get("unix_socket") or self.query.get("host") or ""
        return f"{self.scheme}://{self.user or ''}@{host}:{self.port or ''}/{self.database or ''}"

    def url(self) -> URL:
        """The SQLAlchemy URL, ``***`` in place of any password, without password query keys."""
        return URL.create(self.drivername, username=self.user, password=MASK if self.has_password else None,
                          host=self.host, port=self.port, database=self.database, query=dict(self.query))

    def display(self) -> str:
        """The URL to show and store: any password as ``***`` in the user info, none in the query.

        It is also the form the runner hands a kernel: parsed again, ``***`` means "handed over".
        """
        return self.url().render_as_string(hide_password=True)

    def __str__(self) -> str:
        return self.display()

    # -- derived connections ----------------------------------------------------------------
    def for_engine(self, lab_keys: tuple[str, ...]) -> "Connection":
        """This connection with the lab's query keys of one engine (what its adapter keeps from the driver)."""
        return dataclasses.replace(self, lab_keys=tuple(lab_keys))

    def secret(self) -> str | None:
        """The password to connect with: the one given, the one handed over (:data:`HANDOVER_ENV`), or None.

        Raises
        ------
        ConfigError
            When the password was handed over but the hand-over has none for this URL.
        """
        if self.password_source == HANDED_OVER:
            return password_from_env(self)
        return self.password

    def connect_args(self, database_key: str = "database") -> dict[str, Any]:
        """Driver ``connect()`` arguments: host, port, user, database (as ``database_key``), password, options.

        An empty password in the URL (``user:@host``) is left out, so the driver's own sources
        (``~/.pgpass``, ``~/.my.cnf``) still apply.
        """
        args: dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user, database_key: self.database}
        args = {k: v for k, v in args.items() if v is not None}
        secret = self.secret()
        if secret or (secret is not None and self.password_source == HANDED_OVER):  # an empty one in the URL: none
            args["password"] = secret
        args.update(self.options)
        return args


def mask_url(url: "str | URL | Connection") -> str:
    """``url`` with every password replaced by ``***``: the user info's and the query's; works on malformed URLs
    and on comma-separated lists of engine names and URLs (each item masked).

    Examples
    --------
    >>> mask_url("mysql://root:hunter2@127.0.0.1:3306/db")
    'mysql://root:***@127.0.0.1:3306/db'
    >>> mask_url("mysql://root@127.0.0.1/db?passwd=hunter2&label=a")
    'mysql://root@127.0.0.1/db?passwd=***&label=a'
    """
    if isinstance(url, Connection):
        return url.display()
    if isinstance(url, URL):
        return _mask_query(url.render_as_string(hide_password=True))
    text = str(url)
    items = split_targets(text) if "," in text else [text]
    if len(items) > 1:
        return ",".join(mask_url(item) for item in items)
    parts = _split(text)
    if parts is None:
        return text
    head, user, password, rest = parts
    masked = text if password is None else f"{head}{user}:{MASK}{rest}"
    return _mask_query(masked)


def split_password(url: "str | Connection") -> tuple[str, str | None]:
    """``(masked url, password)``: what the runner injects and what it hands over privately.

    A password in the query (``?password=``, ``?passwd=``) is the URL's password too: it
    leaves the query and the masked URL carries ``***`` in its user info, as for one given there.

    Examples
    --------
    >>> split_password("postgresql://u:pw@h:5432/db")
    ('postgresql://u:***@h:5432/db', 'pw')
    >>> split_password("mysql://u@h:3306/db?passwd=pw&label=x")
    ('mysql://u:***@h:3306/db?label=x', 'pw')
    """
    if isinstance(url, Connection):
        return (url.display(), url.password) if url.password_source in (IN_URL, IN_QUERY) else (url.display(), None)
    connection = Connection.parse(url)
    if connection.password_source == IN_URL:
        return mask_url(_mask_query(url, drop=True)), connection.password
    if connection.password_source == IN_QUERY:
        return with_password_placeholder(_mask_query(url, drop=True)), connection.password
    return url, None


def with_password_placeholder(url: str) -> str:
    """``url`` with ``***`` as its password (the kernel then takes it from :data:`HANDOVER_ENV`).

    Examples
    --------
    >>> with_password_placeholder("postgresql://u@h:5432/db")
    'postgresql://u:***@h:5432/db'
    >>> with_password_placeholder("postgresql://h:5432/db")
    'postgresql://:***@h:5432/db'
    """
    parts = _split(url)
    if parts is None:
        return url
    head, user, _, rest = parts
    if user is None:
        return f"{head}:{MASK}@{rest}"
    return f"{head}{user}:{MASK}{rest}"


#: Largest ``--password-file`` read: a password and a line break, with room to spare.
PASSWORD_FILE_MAX_BYTES = 4096


def read_password_file(path: str | os.PathLike) -> str:
    """The password in ``path``: its first line, without the line break (any other character kept).

    Raises
    ------
    ConfigError
        When the file cannot be read or is empty.
    """
    try:
        with open(path, "rb") as handle:  # at most a few KiB of whatever it is: a device never ends
            raw = handle.read(PASSWORD_FILE_MAX_BYTES + 1)
        if len(raw) > PASSWORD_FILE_MAX_BYTES:
            raise ConfigError("--password-file", str(path), f"a file holding the password (at most "
                                                           f"{PASSWORD_FILE_MAX_BYTES:,} bytes; this one is larger)")
        text = raw.decode()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("--password-file", str(path), f"a readable file holding the password ({exc.__class__.__name__}: "
                          f"{getattr(exc, 'strerror', None) or exc})") from None
    password = text.split("\n", 1)[0].removesuffix("\r")
    if not password:
        raise ConfigError("--password-file", str(path), "a file whose first line is the password")
    return password


def password_key(url: "URL | Connection | str") -> str:
    """The key under which :data:`HANDOVER_ENV` holds ``url``'s password: ``user@host:port``.

    Examples
    --------
    >>> password_key("mysql://root:***@db:3306/lab")
    'root@db:3306'
    """
    if isinstance(url, URL):
        return f"{url.username or ''}@{url.host or ''}:{url.port or ''}"
    return Connection.parse(url).password_key


def password_from_env(url: "URL | Connection | str") -> str:
    """The password the runner handed over for ``url`` in :data:`HANDOVER_ENV`.

    Raises
    ------
    ConfigError
        When there is none for ``url`` (naming the parameter the URL was given in).
    """
    key = password_key(url)
    try:
        return json.loads(os.environ.get(HANDOVER_ENV, "{}"))[key]
    except (KeyError, json.JSONDecodeError):
        parameter = url.parameter if isinstance(url, Connection) else PARAMETER
        raise ConfigError(parameter, mask_url(url), f"the password for {key} in ${HANDOVER_ENV} "
                          "(set by `ingestlab run`), or a URL with the password") from None
