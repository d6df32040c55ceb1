"""Database URLs: parsing, password masking, and the private hand-over of passwords to a notebook kernel."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import quote, unquote

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from ingestlab.errors import ConfigError

#: Environment variable through which the batch runner hands passwords to a notebook kernel,
#: so that they never appear in the executed notebook: a JSON object ``{"user@host:port": pw}``.
PASSWORDS_ENV = "INGESTLAB_PASSWORDS"
#: What a password is replaced by wherever a URL is shown.
MASK = "***"
#: Environment variable holding the password for URL targets that give none.
PASSWORD_ENV = "INGESTLAB_PASSWORD"

_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def _split(url: str) -> tuple[str, str | None, str | None, str] | None:
    """``(scheme://, user, password, rest)`` of a URL string, tolerating raw ``@ : / %`` and spaces
    in the password (the user info ends at the last ``@`` before the query); None if it has no ``://``."""
    head, sep, rest = url.partition("://")
    if not sep:
        return None
    main, qmark, query = rest.partition("?")
    if "@" not in main:
        return head + sep, None, None, rest
    userinfo, host = main.rsplit("@", 1)
    user, colon, password = userinfo.partition(":")
    return head + sep, user, (password if colon else None), "@" + host + qmark + query


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
        parsed = make_url(normalise_url(url))
        parsed.port  # noqa: B018 - a non-numeric port raises only when read
    except (ArgumentError, ValueError) as exc:
        raise ConfigError("TARGET", mask_url(url), "a URL such as postgresql://user@host:5432/db") from exc
    if not parsed.host and not parsed.query.get("host"):
        raise ConfigError("TARGET", mask_url(url), "a URL with a host, such as postgresql://user@host:5432/db")
    return parsed


def mask_url(url: str | URL) -> str:
    """``url`` with its password replaced by ``***``; works on malformed URLs too.

    Examples
    --------
    >>> mask_url("mysql://root:hunter2@127.0.0.1:3306/db")
    'mysql://root:***@127.0.0.1:3306/db'
    """
    if isinstance(url, URL):
        return url.render_as_string(hide_password=True)
    parts = _split(str(url))
    if parts is None or parts[2] is None:
        return str(url)
    head, user, _, rest = parts
    return f"{head}{user}:{MASK}{rest}"


def split_password(url: str) -> tuple[str, str | None]:
    """``(masked url, password)``: what the runner injects and what it hands over privately.

    Examples
    --------
    >>> split_password("postgresql://u:pw@h:5432/db")
    ('postgresql://u:***@h:5432/db', 'pw')
    """
    parsed = parse_url(url)
    if parsed.password is None or str(parsed.password) == MASK:
        return url, None
    return mask_url(url), str(parsed.password)


def with_password_placeholder(url: str) -> str:
    """``url`` with ``***`` as its password (the kernel then takes it from :data:`PASSWORDS_ENV`).

    Examples
    --------
    >>> with_password_placeholder("postgresql://u@h:5432/db")
    'postgresql://u:***@h:5432/db'
    """
    parts = _split(url)
    if parts is None or parts[1] is None:
        return url
    head, user, _, rest = parts
    return f"{head}{user}:{MASK}{rest}"


def read_password_file(path: str | os.PathLike) -> str:
    """The password in ``path``: its first line, without the line break (any other character kept).

    Raises
    ------
    ConfigError
        When the file cannot be read or is empty.
    """
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("--password-file", str(path), f"a readable file holding the password ({exc.__class__.__name__}: "
                          f"{getattr(exc, 'strerror', None) or exc})") from None
    password = text.split("\n", 1)[0].removesuffix("\r")
    if not password:
        raise ConfigError("--password-file", str(path), "a file whose first line is the password")
    return password


def password_key(url: URL) -> str:
    """The key under which :data:`PASSWORDS_ENV` holds ``url``'s password."""
    return f"{url.username or ''}@{url.host or ''}:{url.port or ''}"


def password_from_env(url: URL) -> str:
    """The password the runner handed over for ``url`` in :data:`PASSWORDS_ENV`.

    Raises
    ------
    ConfigError
        When there is none for ``url``.
    """
    try:
        return json.loads(os.environ.get(PASSWORDS_ENV, "{}"))[password_key(url)]
    except (KeyError, json.JSONDecodeError):
        raise ConfigError("TARGET", mask_url(url),
                          f"the password for {password_key(url)} in ${PASSWORDS_ENV} "
                          "(set by `ingestlab run`), or a URL with the password") from None
