"""The contract of a local server, and the reaper that stops leftovers."""

from __future__ import annotations

import abc
import atexit
import logging
import os
import re
import shutil
import signal
import time
from pathlib import Path
from typing import ClassVar

from ingestlab import _paths
from ingestlab.errors import ServerError

log = logging.getLogger(__name__)

#: File, in every server directory, holding the server's process id while it runs.
PID_FILE = "server.pid"


class LocalServer(abc.ABC):
    """A database server started by the lab in a private directory.

    The directory is ``<lab dir>/<KIND>-<pid of this Python process>-<n>`` unless given. The
    server listens on a private socket (and, where a client needs TCP, on 127.0.0.1 only).
    :meth:`start` is idempotent; :meth:`stop` is idempotent and also runs at interpreter exit
    and on SIGTERM, and removes the directory unless ``keep=True``.

    Subclasses set :attr:`KIND` and implement :meth:`_start`, :meth:`_stop` and
    :meth:`restart`; they write the server's pid to ``<directory>/server.pid`` so that
    :func:`reap` can find it.

    Parameters
    ----------
    directory : path, optional
        Private directory for data, socket and logs.
    keep : bool
        Keep the directory (and its data) after :meth:`stop`.
    """

    KIND: ClassVar[str] = ""
    _seq: ClassVar[int] = 0

    def __init__(self, directory: str | os.PathLike | None = None, *, keep: bool = False):
        if directory is None:
            LocalServer._seq += 1
            directory = _paths.lab_dir() / f"{self.KIND}-{os.getpid()}-{LocalServer._seq}"
        self.directory = Path(directory)
        self.keep = keep
        self.running = False
        self.settings: dict[str, str] = {}

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> "LocalServer":
        """Initialise the directory if needed and start the server; return ``self``."""
        if self.running:
            return self
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        _install_signal_handler()
        _LIVE.add(self)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self.running = True
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory unless ``keep``."""
        _LIVE.discard(self)
        if self.directory.exists():
            try:
                self._stop()
            finally:
                self.running = False
                if not self.keep:
                    shutil.rmtree(self.directory, ignore_errors=True)
        self.running = False

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @abc.abstractmethod
    def _start(self) -> None:
        """Create the data directory if needed and start the server process."""

    @abc.abstractmethod
    def _stop(self) -> None:
        """Stop the server process; must not fail when it is not running."""

    @abc.abstractmethod
    def restart(self, settings: dict[str, str]) -> None:
        """Restart with ``settings`` (server parameter → value) in force, replacing the last set."""

    @abc.abstractmethod
    def connect_kwargs(self) -> dict:
        """Keyword arguments for the driver's ``connect()`` to reach this server."""

    def pid(self) -> int | None:
        """The server's main process id, or None when it is not running."""
        return _read_pid(self.directory / PID_FILE)


_LIVE: set[LocalServer] = set()


def _stop_all_live() -> None:
    for server in list(_LIVE):
        try:
            server.stop()
        except ServerError as exc:  # keep stopping the others
            log.warning("could not stop %s: %s", server.directory, exc)


atexit.register(_stop_all_live)


def _on_sigterm(signum, frame):  # noqa: ARG001 - signal handler signature
    _stop_all_live()
    raise SystemExit(128 + signum)


def _install_signal_handler() -> None:
    """Stop live servers on SIGTERM too (Jupyter and papermill send it to kernels)."""
    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not in the main thread: atexit still covers normal exits
        pass


def _read_pid(path: Path) -> int | None:
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def reap(directory: str | os.PathLike | None = None, *, timeout_s: float = 10.0) -> list[Path]:
    """Stop every server still running under ``directory`` and remove its folder.

    A notebook kernel that is killed (Ctrl-C in the batch runner, a crash) cannot stop the
    servers it started; the runner calls this afterwards. Servers are found by the
    ``server.pid`` file each one writes.

    Parameters
    ----------
    directory : path, optional
        The lab directory to scan (default: the lab's ``.lab``).
    timeout_s : float
        How long to wait for each server to exit after SIGTERM before SIGKILL.

    Returns
    -------
    list of Path
        The server directories that were found running and stopped.
    """
    root = Path(directory) if directory else _paths.lab_dir()
    stopped = []
    if not root.exists():
        return stopped
    for pid_file in sorted(root.glob(f"*/{PID_FILE}")):
        owner = _owner_pid(pid_file.parent)
        if owner is not None and _alive(owner):
            continue  # another live lab process owns it
        pid = _read_pid(pid_file)
        if pid is not None:
            _terminate(pid, timeout_s)
            stopped.append(pid_file.parent)
        shutil.rmtree(pid_file.parent, ignore_errors=True)
    return stopped


def _owner_pid(server_dir: Path) -> int | None:
    """The lab process that started a server, from the directory name ``<kind>-<pid>[-<n>]``."""
    match = re.search(r"-(\d+)(?:-\d+)?$", server_dir.name)
    return int(match.group(1)) if match else None


def is_running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (an exited child nobody reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


_alive = is_running


def _terminate(pid: int, timeout_s: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_running(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
