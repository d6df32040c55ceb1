"""The contract of a local server, and the reaper that stops leftovers."""

from __future__ import annotations

import abc
import atexit
import contextlib
import fcntl
import logging
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import ClassVar

import psutil

from ingestlab import _paths
from ingestlab.errors import ServerError

log = logging.getLogger(__name__)

#: Where the kernel says its ephemeral ports are (the ports it gives outgoing connections and ``bind(0)``).
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: The lowest port :func:`free_port` gives (below it: the well-known and registered services).
LOWEST_PORT = 10000

#: File, in every server directory, holding the server's process id while it runs.
PID_FILE = "server.pid"
#: File, in every server directory, that its owner (the lab process) holds locked while it
#: lives: created before anything else, so that a kill at any moment leaves a folder the
#: reaper recognises as orphaned.
OWNER_LOCK = "owner.lock"
#: File, in every server directory, naming the server's private socket directory.
SOCKET_DIR_FILE = "socket_dir"
#: Where private socket directories live: short, whatever the checkout's depth (a Unix
#: socket path holds at most 107 bytes).
SOCKET_ROOT = Path("/tmp")
SOCKET_PREFIX = "ingestlab-"


class LocalServer(abc.ABC):
    """A database server started by the lab in a private directory.

    The directory is ``<lab dir>/<KIND>-<pid of this Python process>-<n>`` unless given. Before
    anything else, :meth:`start` creates it (mode 0700) and takes the lock ``owner.lock``
    in it, which this process holds while it lives; :func:`reap` removes only folders whose
    lock is free, and finds their server processes by the folder in their command line, so a
    kill at any moment (even before the server wrote a pid file) is cleaned up by the next
    run. The server listens only on a socket in a private 0700 directory under ``/tmp``
    (:attr:`socket_dir`, short whatever the checkout's depth), owned by the OS user the
    server runs as (:attr:`SYSTEM_USER` when the lab runs as root) and protected by a random
    password (:attr:`password`); its logs are 0600. :meth:`start` is idempotent;
    :meth:`stop` is idempotent and also runs at interpreter exit and on SIGTERM, and removes
    the directory unless ``keep=True``.

    Subclasses set :attr:`KIND` and implement :meth:`_start`, :meth:`_stop` and
    :meth:`restart`; they write the server's pid to ``<directory>/server.pid``.

    Parameters
    ----------
    directory : path, optional
        Private directory for data, socket and logs.
    keep : bool
        Keep the directory (and its data) after :meth:`stop`.
    """

    #: Whether its processes may run on the client's CPU (``INGESTLAB_PLACEMENT=together``,
    #: :mod:`ingestlab.placement`); a cluster's nodes work at the same time and keep every CPU.
    SHARES_THE_CLIENTS_CPU: ClassVar[bool] = True

    KIND: ClassVar[str] = ""
    #: OS user the server runs as when the lab runs as root (None: the lab's own user).
    SYSTEM_USER: ClassVar[str | None] = None
    _seq: ClassVar[int] = 0

    def __init__(self, directory: str | os.PathLike | None = None, *, keep: bool = False):
        if directory is None:
            LocalServer._seq += 1
            directory = _paths.lab_dir() / f"{self.KIND}-{os.getpid()}-{LocalServer._seq}"
        self.directory = Path(directory).absolute()
        self.keep = keep
        self.running = False
        self.settings: dict[str, str] = {}
        self.socket_dir: Path | None = None
        self._lock_fd: int | None = None
        self._password: str | None = None

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> "LocalServer":
        """Initialise the directory if needed and start the server; return ``self``."""
        if self.running:
            return self
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        _install_signal_handler()
        _LIVE.add(self)
        try:
            self._claim()
            self._start()
        except BaseException:
            self.stop()
            raise
        self.running = True
        return self

    @classmethod
    def reap_leftovers(cls) -> list[Path]:
        """Remove what killed servers of this kind left outside their folders, once nothing uses it; the paths removed.

        :func:`reap` calls it for every kind after the orphaned folders. Default: nothing.
        """
        return []

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory unless ``keep``."""
        _LIVE.discard(self)
        if self.directory.exists():
            try:
                self._stop()
            finally:
                self.running = False
                # what _stop did not know of (a start under way when a signal came, a stop that failed) goes
                # before its folder: a server whose folder is gone is found by no later reap
                stop_stragglers(self.directory)
                if not self.keep:
                    shutil.rmtree(self.directory, ignore_errors=True)
        self._release()
        self.running = False

    # -- the folder, its lock, its socket directory and its password ---------------------
    def system_user(self) -> pwd.struct_passwd | None:
        """The OS user the server runs as (:attr:`SYSTEM_USER` when the lab is root), or None."""
        if os.geteuid() != 0 or self.SYSTEM_USER is None:
            return None
        try:
            return pwd.getpwnam(self.SYSTEM_USER)
        except KeyError:  # no such user on this machine: the server runs as root
            return None

    def give(self, path: Path, mode: int) -> Path:
        """``chmod`` ``path`` to ``mode`` and hand it to the server's OS user (when there is one)."""
        os.chmod(path, mode)
        user = self.system_user()
        if user is not None:
            os.chown(path, user.pw_uid, user.pw_gid)
        return path

    def private_file(self, path: Path) -> Path:
        """Create ``path`` empty if missing, mode 0600, owned by the server's user (logs)."""
        path.touch(mode=0o600, exist_ok=True)
        return self.give(path, 0o600)

    def _claim(self) -> None:
        self.directory.mkdir(exist_ok=True, mode=0o700)
        if self._lock_fd is None:
            fd = os.open(self.directory / OWNER_LOCK, os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise ServerError(f"{self.directory} is in use by another live lab process") from None
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self._lock_fd = fd
        self.give(self.directory, 0o700)
        if self.system_user() is not None:  # the server's own user must reach its folder
            allow_traverse(self.directory.parent)

    def private_socket_dir(self) -> Path:
        """The server's socket directory: ``/tmp/ingestlab-<kind>-<pid>-XXXX``, 0700, recorded for :func:`reap`."""
        if self.socket_dir is None or not self.socket_dir.is_dir():
            self.socket_dir = Path(tempfile.mkdtemp(prefix=f"{SOCKET_PREFIX}{self.KIND}-{os.getpid()}-",
                                                    dir=SOCKET_ROOT))
            (self.directory / SOCKET_DIR_FILE).write_text(f"{self.socket_dir}\n")
            self.give(self.socket_dir, 0o700)
        return self.socket_dir

    def _release(self) -> None:
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
            self.socket_dir = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @property
    def data_dir(self) -> Path:
        """The engine's own files, ``<directory>/data`` (beside the lock, the pid file and the logs)."""
        return self.directory / "data"

    @property
    def password(self) -> str:
        """The server's random password, made on first use and kept (0600) in its folder (``lab.secret``)."""
        if self._password is None:
            self._password = self.secret("lab")
        return self._password

    def secret(self, name: str) -> str:
        """A random secret kept (0600) in the server's folder as ``<name>.secret``, made on first use."""
        path = self.directory / f"{name}.secret"
        try:
            return path.read_text().strip()
        except OSError:
            value = secrets.token_urlsafe(18)
            fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(value + "\n")
            return value

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


class InProcessServer(LocalServer):
    """A library engine (RocksDB, DuckDB) opened inside this Python process in its private directory.

    The "server" is this process: :meth:`pid` is its pid while the store is open, and
    ``server.pid`` holds it, so :func:`reap` removes the folder of a process that was killed
    (and leaves a live one alone). :meth:`start` opens the store, :meth:`stop` closes it (the
    directory is then removed as for every server), :meth:`restart` checks the new settings
    (:meth:`check`, before anything is closed) and opens the store again with exactly them.
    Subclasses implement :meth:`_open` (open the store with :attr:`settings` into :attr:`db`)
    and :meth:`check`.
    """

    def __init__(self, directory=None, *, keep: bool = False):
        super().__init__(directory, keep=keep)
        self.db = None

    @abc.abstractmethod
    def _open(self) -> None:
        """Open the store with :attr:`settings` in force, into :attr:`db`."""

    def check(self, settings: dict[str, str]) -> None:
        """Raise :class:`ServerError` for settings the store does not take (default: it takes any)."""

    def _start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / PID_FILE).write_text(f"{os.getpid()}\n")
        self._open()

    def _close(self) -> None:
        db, self.db = self.db, None
        if db is not None:
            db.close()

    def _stop(self) -> None:
        self._close()
        (self.directory / PID_FILE).unlink(missing_ok=True)

    def restart(self, settings: dict[str, str]) -> None:
        """Close the store and open it again with exactly ``settings``; bad settings fail before it is closed."""
        settings = {k: str(v) for k, v in settings.items()}
        self.check(settings)
        self.settings = settings
        if self.db is None:
            return
        self._close()
        self._open()

    def pid(self) -> int | None:
        """This process's id while the store is open (the engine runs inside it)."""
        return os.getpid() if self.db is not None else None


_LIVE: set[LocalServer] = set()


def allow_traverse(folder: Path) -> list[Path]:
    """Let every user traverse ``folder`` and each folder above it (``g+x,o+x``), never list or read them.

    What a server run as its own OS user needs to reach its data folder below ``folder``. The
    group's bit too: the wheel starts PostgreSQL with root's uid dropped but its group kept, and a
    process in a folder's group is judged by the group's bits. Nothing else is granted (no read
    bit), and folders that already allow it are left as they are. Returns the folders changed.

    Examples
    --------
    >>> import tempfile, stat
    >>> top = Path(tempfile.mkdtemp()); inner = top / "a"; inner.mkdir(mode=0o700); top.chmod(0o700)
    >>> top in allow_traverse(inner), oct(stat.S_IMODE(inner.stat().st_mode))
    (True, '0o711')
    >>> shutil.rmtree(top)
    """
    changed = []
    traverse = stat.S_IXGRP | stat.S_IXOTH
    for path in (folder, *folder.parents):
        mode = path.stat().st_mode
        if mode & traverse != traverse:
            path.chmod(stat.S_IMODE(mode) | traverse)
            changed.append(path)
    return changed


#: Held while live servers are being stopped: a kernel's grace timer (:func:`_on_sigterm`) that runs out
#: meanwhile waits for it instead of exiting with a server not yet told to stop (a stop can outlast the
#: 1.5 s grace on a loaded machine; the server would then stay up until the next run's reap).
_STOPPING = threading.RLock()

#: Seconds an exit waits at most for the servers' stop under way (PostgreSQL's worst case is 15 s).
STOPPING_BOUND_S = 60.0


def _stop_all_live() -> None:
    with _STOPPING:
        for server in list(_LIVE):
            try:
                server.stop()
            except ServerError as exc:  # keep stopping the others
                log.warning("could not stop %s: %s", server.directory, exc)


atexit.register(_stop_all_live)


#: Seconds a kernel told to stop (SIGTERM) has to unwind its cell (clients stopped, files closed) before it exits.
KERNEL_GRACE_S = 1.5


def _on_sigterm(signum, frame):  # noqa: ARG001 - signal handler signature
    code = 128 + signum
    with _STOPPING:  # taken first: the grace timer cannot exit before the servers below are stopped
        if _in_kernel():
            # IPython takes SystemExit for the cell's own and keeps serving: the kernel lived on until the runner's
            # SIGKILL 10 s later. So the kernel exits once the cell has unwound (its `finally` blocks stop its
            # clients), or after KERNEL_GRACE_S when the signal came between cells or the unwinding hangs.
            shell = sys.modules["IPython"].get_ipython()
            shell.events.register("post_execute", lambda: _exit_now(code))
            timer = threading.Timer(KERNEL_GRACE_S, _exit_now, [code])
            timer.daemon = True
            timer.start()  # before the servers are stopped: the grace counts from the signal
        _stop_all_live()
    raise SystemExit(code)


def _exit_now(code: int) -> None:
    """Exit this kernel once its servers' stop under way has ended (the lab writes files whole or not at all)."""
    _STOPPING.acquire(timeout=STOPPING_BOUND_S)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _in_kernel() -> bool:
    """Whether this process is an IPython kernel (a notebook's)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _install_signal_handler() -> None:
    """Stop live servers on SIGTERM and SIGHUP too (Jupyter and papermill send SIGTERM to kernels)."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(signum) in (signal.SIG_DFL, None):
                signal.signal(signum, _on_sigterm)
        except ValueError:  # not in the main thread: atexit still covers normal exits
            pass


def _read_pid(path: Path) -> int | None:
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if psutil.pid_exists(pid) else None


def reap(directory: str | os.PathLike | None = None, *, timeout_s: float = 10.0) -> list[Path]:
    """Stop every orphaned server under ``directory``, remove its folder and socket directory, dead runs' scratch and
    what killed servers left outside their folders (:meth:`LocalServer.reap_leftovers`).

    A notebook kernel that is killed (Ctrl-C in the batch runner, SIGKILL, a crash) cannot
    stop the servers it started; the runner calls this before and after every run. A server
    folder is orphaned when no live process holds its ``owner.lock`` (older folders without
    one: when the pid in its name is gone). Its processes are found by its pid file and by
    the folder in their command line (so also a server killed while starting), and stopped
    with SIGTERM, then SIGKILL after ``timeout_s``.

    Parameters
    ----------
    directory : path, optional
        The lab directory to scan (default: the lab's ``.lab``).
    timeout_s : float
        How long to wait for each server to exit after SIGTERM before SIGKILL.

    Returns
    -------
    list of Path
        The orphaned server folders that were removed.
    """
    root = Path(directory) if directory else _paths.lab_dir()
    removed: list[Path] = []
    if root.exists():
        for folder in sorted(p for p in root.iterdir() if is_server_folder(p)):
            if owner_alive(folder):
                continue
            pids = set(processes_using(folder))
            pid = _read_pid(folder / PID_FILE)
            if pid is not None and _serves(pid, folder):  # a stale pid file may name anybody's process
                pids.add(pid)
            for pid in sorted(pids):
                _terminate(pid, timeout_s)
            _remove_socket_dir(folder)
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        for pid in _servers_of_removed_folders(root):
            _terminate(pid, timeout_s)
        for folder in sorted(root.glob(f"{_paths.SCRATCH_PREFIX}*")):  # a killed run's scratch files
            pid = folder.name.removeprefix(_paths.SCRATCH_PREFIX)
            if pid.isdigit() and not is_running(int(pid)) and folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    for cls in _server_classes():
        if "reap_leftovers" in vars(cls):  # each kind's own, once; not folders: logged, not returned
            for path in cls.reap_leftovers():
                log.info("removed %s, left by a killed %s server", path, cls.KIND)
    reap_socket_dirs()
    return removed


def _server_classes() -> list[type[LocalServer]]:
    import importlib
    import pkgutil

    import ingestlab.engines as package

    # Every engine folder's server module defines its LocalServer subclasses (and their KIND).
    for folder in pkgutil.iter_modules(package.__path__):
        if folder.ispkg and (Path(package.__path__[0]) / folder.name / "server.py").is_file():
            importlib.import_module(f"{package.__name__}.{folder.name}.server")
    return _subclasses(LocalServer)


def _kinds() -> set[str]:
    return {cls.KIND for cls in _server_classes() if cls.KIND}


def _subclasses(cls: type) -> list[type]:
    return [sub for direct in cls.__subclasses__() for sub in [direct, *_subclasses(direct)]]


#: A server folder's name: ``<kind>-<pid of its owner>[-<n>]``.
_SERVER_NAME = re.compile(r"^([a-z0-9_]+)-\d+(?:-\d+)?$")


def is_server_folder(path: Path) -> bool:
    """Whether ``path`` is a lab server's folder (it has an owner lock, a pid file or a server's name)."""
    if not path.is_dir() or path.is_symlink():
        return False
    if (path / OWNER_LOCK).exists() or (path / PID_FILE).exists():
        return True
    match = _SERVER_NAME.match(path.name)
    return bool(match) and match.group(1) in _kinds()


def owner_alive(folder: Path) -> bool:
    """Whether a live process owns the server folder (holds its lock, or is the pid in its name)."""
    try:
        fd = os.open(folder / OWNER_LOCK, os.O_RDWR)
    except FileNotFoundError:
        owner = _owner_pid(folder)
        return owner is not None and _alive(owner) and owner != os.getpid()
    except OSError:
        return True  # cannot tell: leave it alone
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _serves(pid: int, folder: Path) -> bool:
    """Whether process ``pid`` is a server of ``folder``: its command line or working directory is in the folder."""
    needle = Path(folder).absolute()
    try:
        proc = psutil.Process(pid)
        cmdline, cwd = proc.cmdline(), proc.cwd()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    if Path(cwd) == needle or needle in Path(cwd).parents:
        return True
    return any(str(needle) in arg for arg in cmdline)


def processes_using(folder: Path) -> list[int]:
    """Processes whose command line names ``folder`` (a server and its helpers, started or starting)."""
    needle = str(Path(folder).absolute())
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid == os.getpid():
            continue
        for arg in proc.info["cmdline"] or []:  # None where it may not be read
            at = arg.find(needle)
            if at >= 0 and arg[at + len(needle):at + len(needle) + 1] in ("", "/"):
                found.append(proc.pid)
                break
    return [pid for pid in found if is_running(pid)]


def stop_stragglers(folder: Path, *, timeout_s: float = 5.0, rounds: int = 3) -> None:
    """Stop every process whose command line names ``folder`` (SIGTERM, SIGKILL after ``timeout_s``), until none does.

    A look again after each stop finds a child its stopped parent had forked meanwhile (``pg_ctl``
    starting a postmaster); ``rounds`` bounds the looks.
    """
    for _ in range(rounds):
        procs = []
        for pid in processes_using(folder):
            with contextlib.suppress(psutil.NoSuchProcess):
                procs.append(psutil.Process(pid))
        if not procs:
            return
        stop_processes(procs, timeout_s)


def _servers_of_removed_folders(root: Path) -> list[int]:
    """Processes of the lab's users whose command line names a server folder under ``root`` that no longer exists.

    Such a server lost its folder while it ran (its owner removed it while the server was still
    starting); no folder leads a reap to it. Another user's process is never one of them.
    """
    root = Path(root).absolute()
    prefix = str(root) + os.sep
    kinds = _kinds()
    users = {os.geteuid()} | _server_uids()
    found = []
    for proc in psutil.process_iter(["cmdline", "uids"]):
        if proc.pid == os.getpid() or not proc.info["uids"] or proc.info["uids"].real not in users:
            continue
        for arg in proc.info["cmdline"] or []:
            at = arg.find(prefix)
            name = re.split(r"[/\s]", arg[at + len(prefix):], maxsplit=1)[0] if at >= 0 else ""
            match = _SERVER_NAME.match(name)
            if match and match.group(1) in kinds and not (root / name).exists():
                found.append(proc.pid)
                break
    return [pid for pid in found if is_running(pid)]


def _server_uids() -> set[int]:
    """The uids of the OS users the lab's servers run as (those that exist on this machine)."""
    uids = set()
    for cls in _subclasses(LocalServer):
        with contextlib.suppress(KeyError, TypeError):
            uids.add(pwd.getpwnam(cls.SYSTEM_USER).pw_uid)
    return uids


def _remove_socket_dir(folder: Path) -> None:
    try:
        path = Path((folder / SOCKET_DIR_FILE).read_text().strip())
    except OSError:
        return
    if path.parent == SOCKET_ROOT and path.name.startswith(SOCKET_PREFIX):
        shutil.rmtree(path, ignore_errors=True)


def reap_socket_dirs() -> list[Path]:
    """Remove ``/tmp/ingestlab-<kind>-<pid>-*`` socket directories whose owner process is gone."""
    removed = []
    for path in SOCKET_ROOT.glob(SOCKET_PREFIX + "*"):
        match = re.match(re.escape(SOCKET_PREFIX) + r"([a-z0-9_]+)-(\d+)-", path.name)
        if match and match.group(1) in _kinds() and path.is_dir() and not _alive(int(match.group(2))):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _owner_pid(server_dir: Path) -> int | None:
    """The lab process that started a server, from the directory name ``<kind>-<pid>[-<n>]``."""
    match = re.search(r"-(\d+)(?:-\d+)?$", server_dir.name)
    return int(match.group(1)) if match else None


def is_running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (an exited child nobody reaped)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


_alive = is_running


def _terminate(pid: int, timeout_s: float) -> None:
    """SIGTERM ``pid``, wait up to ``timeout_s`` for it to exit, then SIGKILL (see :func:`stop_processes`)."""
    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    stop_processes([proc], timeout_s)


def stop_processes(procs: list[psutil.Process], timeout_s: float) -> None:
    """SIGTERM ``procs``, wait up to ``timeout_s`` for them to exit, SIGKILL those left; children are reaped.

    A stopped process (SIGSTOP) is continued after its SIGTERM, so that it acts on it now.
    """
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.terminate()
            proc.resume()
    _, alive = psutil.wait_procs(procs, timeout=timeout_s)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(alive, timeout=timeout_s)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` nothing listens on now, outside the kernel's ephemeral range.

    A port the kernel picks (``bind`` to port 0) comes from its ephemeral range, from which it
    also gives the source port of every outgoing connection, so one could be taken between the
    pick and the server's listen (Galera's peers connect to one another while a node restarts).
    The guess behind this: two of 2026-11-30's paper runs of notebook 01 ended with a restarted
    Galera cluster that did not form ("Failed to establish connection: Connection refused" until
    the 90-s bound), its logs gone with the run, and none since in one run. So the port is drawn
    at random below the range (from :data:`LOWEST_PORT`), or above it when the range leaves no
    room below, and tried; the kernel's own choice only if 200 tries fail.
    """
    import random

    try:
        low, high = (int(v) for v in EPHEMERAL_RANGE_FILE.read_text().split()[:2])
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    first, last = max([(LOWEST_PORT, low - 1), (high + 1, 65535)], key=lambda span: span[1] - span[0])
    draw = random.SystemRandom()
    for _ in range(200 if last - first >= 100 else 0):
        with socket.socket() as sock:
            try:
                sock.bind((host, port := draw.randint(first, last)))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
