"""A watch over the lab servers a run started: one that is stopped (SIGSTOP) ends the run, not hangs it.

A lab server that a signal stops (``kill -STOP``, a terminal's Ctrl-Z, a debugger's stop)
answers nothing, and a client waiting for its reply on a Unix socket waits for ever: no
timeout of the server's own fires, and no keep-alive runs on a local socket. The batch runner
keeps a :class:`StoppedServerWatch` while a notebook runs; a server of that run whose process
(or one of its children: a PostgreSQL backend) stays stopped for :data:`STOPPED_GRACE_S` is
killed, so that the statement waiting on it fails at once, and the run ends with the watch's
one-line cause and exit 5 (a server lost).
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import psutil

from ingestlab import _paths
from ingestlab.servers.base import OWNER_LOCK, PID_FILE, _read_pid, _serves, is_server_folder

__all__ = ["STOPPED_GRACE_S", "StoppedServerWatch", "stopped_process"]

#: Seconds a run's lab server may stay stopped before the run gives up on it (and kills it).
STOPPED_GRACE_S = 3.0
#: Seconds between two looks at the servers' process states.
INTERVAL_S = 0.5


def stopped_process(folder: Path) -> psutil.Process | None:
    """The stopped process of the server in ``folder`` (its pid file's process or a child), or None.

    Only a process that is this folder's server counts (:func:`~ingestlab.servers.base._serves`):
    a stale pid file may name anybody's process.
    """
    pid = _read_pid(folder / PID_FILE)
    if pid is None or not _serves(pid, folder):
        return None
    try:
        server = psutil.Process(pid)
        for proc in (server, *server.children(recursive=True)):
            if proc.status() == psutil.STATUS_STOPPED:
                return proc
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    return None


def _owner(folder: Path) -> int | None:
    """The pid that :meth:`~ingestlab.servers.base.LocalServer.start` wrote into the folder's lock file."""
    try:
        return int((folder / OWNER_LOCK).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _kill_tree(folder: Path) -> None:
    pid = _read_pid(folder / PID_FILE)
    if pid is None or not _serves(pid, folder):
        return
    with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
        server = psutil.Process(pid)
        procs = [server, *server.children(recursive=True)]
        for proc in procs:  # SIGKILL ends a stopped process too; SIGTERM would wait for a SIGCONT
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        psutil.wait_procs(procs, timeout=5)


class StoppedServerWatch:
    """Context: while it is open, kill any lab server of this process's children that stays stopped.

    A background thread looks every :data:`INTERVAL_S` at the server folders under the lab
    directory whose owner (the process that started the server) is a descendant of this
    process — the notebook's kernel — and kills the server whose process stays stopped for
    ``grace_s``. :attr:`cause` then says which, in one line.

    Parameters
    ----------
    root : path, optional
        The lab directory (default: the lab's ``.lab``).
    grace_s : float
        How long a server may stay stopped.

    Examples
    --------
    >>> with StoppedServerWatch(grace_s=3.0) as watch:
    ...     pass  # run the notebook
    >>> watch.cause is None
    True
    """

    def __init__(self, root: str | Path | None = None, *, grace_s: float = STOPPED_GRACE_S):
        self.root = Path(root) if root else _paths.lab_dir()
        self.grace_s = grace_s
        #: One line naming the server that was stopped and killed, or None.
        self.cause: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="stopped-server-watch", daemon=True)

    def __enter__(self) -> StoppedServerWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def _folders(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        try:
            mine = {proc.pid for proc in psutil.Process().children(recursive=True)}
        except psutil.Error:
            return []
        return [folder for folder in self.root.iterdir() if is_server_folder(folder) and _owner(folder) in mine]

    def _watch(self) -> None:
        since: dict[Path, float] = {}
        while not self._done.wait(INTERVAL_S):
            now = time.monotonic()
            for folder in self._folders():
                proc = stopped_process(folder)
                if proc is None:
                    since.pop(folder, None)
                    continue
                if now - since.setdefault(folder, now) < self.grace_s:
                    continue
                kind = folder.name.split("-", 1)[0]
                self.cause = (f"the lab's {kind} server was stopped (a SIGSTOP to its process {proc.pid}) and answered "
                              f"nothing for {self.grace_s:g} s; it was killed so that the run could end")
                _kill_tree(folder)
                return
