"""Data folders made once per build of a server and copied for every later server of that build.

A server's data folder is made by its engine's tool (an ``initdb``), a third of a second of CPU for
the servers the lab starts, about 150 of them a ``make test``; a copy of that folder costs a fifth of
it. A template is the folder as its tool left it, before any server ran on it, kept under
:func:`cache_dir` per build (the binaries' paths, sizes and times, the tool's arguments, the OS user
the server runs as): a new build makes a new template. Nothing of a server's own goes into one: a
password the tool had to set is the template's (:attr:`Template.secret`), which each server replaces
with its own once it runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterable

from ingestlab import safe_paths

log = logging.getLogger(__name__)

#: Environment variable naming the templates' folder; ``0`` makes every server's data folder from scratch.
CACHE_ENV = "INGESTLAB_TEMPLATES_DIR"
#: A template's data folder, the file beside it holding its secret (mode 0600), and the one naming its build's files.
DATA, SECRET, BUILD = "data", "template.secret", "build"
#: Seconds after which a half-written template (a process killed while keeping one) is removed.
STALE_S = 3600.0


def cache_dir() -> Path | None:
    """The templates' folder: ``$INGESTLAB_TEMPLATES_DIR``, else ``$XDG_CACHE_HOME/ingestlab/templates``
    (``~/.cache/…``); None when it is ``0`` or not this user's alone.

    The folder is made 0700. One that another user owns, that others may enter, or on a way another
    user could redirect (:func:`ingestlab.safe_paths.problem`) is not used, saying why: a template
    there could have been changed by them, and every server would start from it.
    """
    value = os.environ.get(CACHE_ENV)
    if value == "0":
        return None
    if value:
        path = Path(value)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "ingestlab" / "templates"
    found = safe_paths.problem(path)
    if found is not None:
        log.warning("server data folders are made anew, without templates: %s", found)
        return None
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = path.lstat()
    except OSError as exc:
        log.warning("server data folders are made anew, without templates: %s", exc)
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("server data folders are made anew, without templates: %s is not a folder of this user's "
                    "alone (0700)", path)
        return None
    return path.absolute()


def build_identity(*files: Path) -> list[str]:
    """What names a build of a server: each file's resolved path, size and modification time (``path:size:mtime``)."""
    identity = []
    for file in files:
        st = Path(file).resolve().stat()
        identity.append(f"{Path(file).resolve()}:{st.st_size}:{st.st_mtime_ns}")
    return identity


class Template:
    """The template of one kind of data folder, for one build (``identity``: strings that change with it).

    Parameters
    ----------
    kind : str
        The server's kind: the first part of the template's folder name.
    identity : iterable of str
        Everything the folder depends on: :func:`build_identity` of the binaries, the tool's
        arguments (no path of one server's), the OS user the server runs as.
    """

    def __init__(self, kind: str, identity: Iterable[str]):
        root = cache_dir()
        self.identity = list(identity)
        digest = hashlib.sha256("\0".join(self.identity).encode()).hexdigest()[:16]
        self.path: Path | None = root / f"{kind}-{digest}" if root is not None else None

    @property
    def secret(self) -> str | None:
        """The template's secret (the password its tool set, or ``""``), or None when there is no template."""
        if self.path is None:
            return None
        try:
            return (self.path / SECRET).read_text().strip()
        except OSError:
            return None

    def copy_into(self, dest: Path) -> bool:
        """Copy the template's data folder into ``dest`` (made if missing), owners and modes kept; False without one.

        ``dest`` takes the template folder's own owner and mode too. A copy that fails part way
        leaves ``dest`` empty again and returns False: the caller makes the folder from scratch.
        """
        if self.path is None or not (self.path / DATA).is_dir() or self.secret is None:
            return False
        dest.mkdir(exist_ok=True)
        try:
            _copy(self.path / DATA, dest)
        except (OSError, subprocess.SubprocessError) as exc:  # failed, or timed out
            log.warning("could not copy the server template %s (%s): making the data folder anew", self.path, exc)
            for child in dest.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
            return False
        return True

    def keep(self, source: Path, secret: str) -> None:
        """Keep a copy of the data folder ``source`` and its ``secret`` as the template, unless there is one already.

        Written under a temporary name and renamed: a process killed meanwhile leaves no
        template half made (its leftover is removed after :data:`STALE_S`), as are templates of
        builds whose files are gone (a removed checkout's, a replaced binary's). Best effort: a
        failure is logged, the server it was made for is not affected.
        """
        if self.path is None or self.path.exists():
            return
        root = self.path.parent
        _remove_stale(root)
        tmp = Path(tempfile.mkdtemp(prefix=f".{self.path.name}-", dir=root))
        try:
            _copy(source, tmp / DATA)
            fd = os.open(tmp / SECRET, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secret + "\n")
            (tmp / BUILD).write_text("".join(f"{part}\n" for part in self.identity))
            os.chmod(tmp, 0o700)
            os.rename(tmp, self.path)
        except (OSError, subprocess.SubprocessError) as exc:  # failed, or timed out
            if not self.path.exists():  # another process keeping the same template won the rename: not a failure
                log.warning("could not keep a server template in %s: %s", root, exc)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def new_secret() -> str:
    """A random secret for a new template (the password its tool sets)."""
    return secrets.token_urlsafe(18)


def _copy(source: Path, dest: Path) -> None:
    """``cp -a source/. dest``: contents, owners, modes and times (a fifth of ``shutil.copytree``'s CPU)."""
    cp = shutil.which("cp")
    if cp is None:
        shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
        return
    subprocess.run([cp, "-a", "--", f"{source}/.", str(dest)], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)


def _remove_stale(root: Path) -> None:
    """Remove half-kept templates older than :data:`STALE_S` and templates whose build's files changed or are gone."""
    now = time.time()
    for tmp in root.glob(".*-*"):
        with contextlib.suppress(OSError):
            if now - tmp.lstat().st_mtime > STALE_S:
                shutil.rmtree(tmp, ignore_errors=True)
    for template in root.glob("*-*"):
        try:
            parts = (template / BUILD).read_text().splitlines()
        except OSError:
            continue
        if any(_changed(part) for part in parts if part.startswith("/")):
            shutil.rmtree(template, ignore_errors=True)


def _changed(part: str) -> bool:
    """Whether the file a ``path:size:mtime`` part of a build names is gone or no longer the same."""
    path = Path(part.rsplit(":", 2)[0])
    try:
        return build_identity(path) != [part]
    except OSError:
        return True
