"""Folders the lab writes into or reads a run from, refused where another local user could redirect them.

The lab often runs as root. A folder on the way to its output that another user can write (a
shared scratch folder, a folder they own) lets them put a symbolic link where the lab will write,
and so have root's run written over a file of root's, or a private file's rows copied into a
world-readable notebook. :func:`check_folder` refuses, in one line, a folder (or a folder on its
way) that is a link another user could have planted, or that sits in a folder others can write
without the sticky bit; what the lab then makes below a checked folder only it can change.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ingestlab.errors import ConfigError


def _others_can_write(info: os.stat_result) -> bool:
    """Whether a user other than this one and root can add, remove or rename entries of the folder ``info`` describes."""
    if info.st_uid not in (0, os.geteuid()):
        return True  # its owner can
    writable = info.st_mode & (stat.S_IWOTH | (stat.S_IWGRP if info.st_gid != os.getegid() else 0))
    return bool(writable) and not info.st_mode & stat.S_ISVTX


def problem(path: str | os.PathLike) -> str | None:
    """Why another local user could redirect what the lab writes at or reads from ``path``, or None.

    Every existing part of ``path`` (made absolute, links not followed) is looked at: a part that
    is a link must be root's or this user's in a folder only they can change; a part in a folder
    others can write must be this user's or root's and the folder sticky (``/tmp``); the deepest
    existing folder, in which the lab makes the rest, must not be writable by others (a sticky one
    is fine: what the lab makes there stays its own).

    Examples
    --------
    >>> problem("/") is None
    True
    """
    here = Path(os.path.abspath(path))
    parts = [here, *here.parents][::-1]  # "/" first
    deepest = None
    for parent, part in zip(parts, parts[1:]):
        try:
            info, above = os.lstat(part), os.stat(parent)
        except OSError:  # missing, or a name the system refuses: made by the lab, or refused by its other checks
            break
        if stat.S_ISLNK(info.st_mode) and (info.st_uid not in (0, os.geteuid()) or _others_can_write(above)):
            return f"{part} is a symbolic link another user could have made"
        if _others_can_write(above) and (info.st_uid not in (0, os.geteuid()) or not above.st_mode & stat.S_ISVTX):
            return f"{part} is in {parent}, which other users can write"
        deepest = part
    if deepest is not None:
        try:
            info = os.stat(deepest)
        except OSError:  # a link to nothing, a loop: the other checks say what it is
            return None
        if stat.S_ISDIR(info.st_mode) and _others_can_write(info):  # they could make what the lab makes in it
            return f"{deepest} is a folder other users can write"
    return None


def check_folder(path: str | os.PathLike, parameter: str) -> Path:
    """``path`` as given, after :func:`problem` found nothing; else a one-line refusal naming ``parameter``.

    Raises
    ------
    ConfigError
        When another local user could redirect what is written at or read from ``path``.
    """
    found = problem(path)
    if found is not None:
        raise ConfigError(parameter, str(path), f"a folder no other user can change ({found}); use a folder of "
                                                "your own")
    return Path(path)
