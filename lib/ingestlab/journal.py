"""The journal of settings the lab changed on a user's server, so that a killed run's changes are put back."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from pathlib import Path
from typing import Any

from ingestlab import _paths
from ingestlab.conninfo import mask_url, parse_url

#: File name of the journal in the lab directory.
FILE = "set_global_journal.json"


def path() -> Path:
    """Where the journal lives: ``<lab dir>/set_global_journal.json`` (mode 0600)."""
    return _paths.lab_dir() / FILE


def key(url) -> str:
    """The journal's key for ``url``: scheme, user, host, port and database, password masked.

    Examples
    --------
    >>> key("mysql://root:pw@db.example:3306/lab?set_global=true")
    'mysql://root@db.example:3306/lab'
    """
    u = parse_url(url)
    scheme = u.drivername.split("+", 1)[0]
    host = u.host or u.query.get("unix_socket") or u.query.get("host") or ""
    return f"{scheme}://{u.username or ''}@{host}:{u.port or ''}/{u.database or ''}"


def record(url, name: str, old_value: Any) -> None:
    """Note, before ``SET GLOBAL name``, the value to put back (the first one noted wins)."""
    def change(data: dict) -> None:
        entry = data.setdefault(key(url), {"url": mask_url(url), "settings": {}, "pid": os.getpid(),
                                           "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
        entry["settings"].setdefault(name, None if old_value is None else str(old_value))
    _update(change)


def forget(url, name: str) -> None:
    """Drop ``name`` from ``url``'s entry once its value is back."""
    def change(data: dict) -> None:
        entry = data.get(key(url))
        if entry is not None:
            entry["settings"].pop(name, None)
            if not entry["settings"]:
                data.pop(key(url))
    _update(change)


def pending(url) -> dict | None:
    """``url``'s entry (``{"url", "settings": {name: value to put back}, "pid", "since"}``), or None."""
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
