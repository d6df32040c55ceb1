"""Database URLs: parsing, password masking, and the private hand-over of passwords to a notebook kernel."""

from __future__ import annotations

import json
import os
import re

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from ingestlab.errors import ConfigError

#: Environment variable through which the batch runner hands passwords to a notebook kernel,
#: so that they never appear in the executed notebook: a JSON object ``{"user@host:port": pw}``.
PASSWORDS_ENV = "INGESTLAB_PASSWORDS"
#: What a password is replaced by wherever a URL is shown.
MASK = "***"

_PW_IN_URL = re.compile(r"(?P<head>[a-z0-9+.-]+://[^:/@\s]*:)(?P<pw>[^@\s]*)(?P<tail>@)", re.I)


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
