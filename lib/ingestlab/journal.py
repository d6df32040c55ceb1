"""The journal of settings the lab changed on a user's server, so that a killed run's changes are put back."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from pathlib import Path
from typing import Any

from ingestlab import _paths
from ingestlab.conninfo import Connection

#: File name of the journal in the lab directory.
FILE = "set_global_journal.json"


def path() -> Path:
    """Where the journal lives: ``<lab dir>/set_global_journal.json`` (mode 0600)."""
    return _paths.lab_dir() / FILE


def key(url) -> str:
    """The journal's key for ``url`` (a :class:`~ingestlab.conninfo.Connection` or a URL): scheme, user, host,
    port and database, no password (:attr:`Connection.journal_key <ingestlab.conninfo.Connection.journal_key>`).

    Examples
    --------
    >>> key("mysql://root:pw@db.example:3306/lab?set_global=true")
    'mysql://root@db.example:3306/lab'
    """
    return Connection.parse(url).journal_key


def record(url, name: str, old_value: Any) -> None:
    """Note, before ``SET GLOBAL name``, the value to put back (the first one noted wins).

    ``url`` is the engine's :class:`~ingestlab.conninfo.Connection` (a URL string is parsed);
    the entry keeps its masked form, never its password.
    """
    connection = Connection.parse(url)

    def change(data: dict) -> None:
        since = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        entry = data.setdefault(connection.journal_key, {"url": connection.display(), "settings": {},
                                                         "pid": os.getpid(), "since": since})
        entry["settings"].setdefault(name, None if old_value is None else str(old_value))
    _update(change)


def forget(url, name: str) -> None:
    """Drop ``name`` from ``url``'s entry once its value is back."""
    entry_key = key(url)

    def change(data: dict) -> None:
        entry = data.get(entry_key)
        if entry is not None:
            entry["settings"].pop(name, None)
            if not entry["settings"]:
                data.pop(entry_key)
    _update(change)


def pending(url) -> dict | None:
    """``url``'s entry (``{"url", "settings": {name: value to put back}, "pid", "since"}``), or None.

    ``url``: a :class:`~ingestlab.conninfo.Connection` (read as it is) or a URL string (parsed).
    """
    return _read().get(key(url))


def _read() -> dict:
    try:
        return json.loads(path().read_text())
    except (OSError, ValueError):
        return {}


def _update(change) -> None:
    p = path()
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p.with_suffix(".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = _read()
        change(data)
        tmp = p.with_suffix(".tmp")
        with os.fdopen(os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600), "w") as out:
            json.dump(data, out, indent=2)
        tmp.replace(p)
    finally:
        os.close(fd)
