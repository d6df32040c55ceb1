"""Watches a run keeps while its notebook runs, so that a server that stops answering ends the run, not hangs it.

A server that a signal stops (``kill -STOP``, a terminal's Ctrl-Z, a debugger's stop) answers
nothing, and a client waiting for its reply waits for ever: no timeout of the server's own
fires, and keep-alives do not help (the stopped server's kernel still answers them; a Unix
socket has none). The batch runner keeps two watches while a notebook runs:

* :class:`StoppedServerWatch` — a lab server of the run whose process (or a child: a
  PostgreSQL backend) stays stopped for :data:`STOPPED_GRACE_S` is killed, so that the
  statement waiting on it fails at once;
* :class:`StalledTargetWatch` — a server given by URL cannot be looked at, only asked: when
  the run has used almost no CPU for :data:`IDLE_S` (it waits on something), each URL target
  is asked for a new connection, within the pre-flight's timeout; a target that answers none
  twice in a row ends the run (its kernel is killed).

Either way the run ends with the watch's one-line cause and exit 5 (a server lost). A third,
:class:`CpuShareWatch`, only measures: how much of the machine's CPU processes outside the run
used while it ran (``others_cpu_share`` in ``run.json``), what a load average cannot tell (it
counts the run's own 64 clients as load).
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Callable

import psutil

from ingestlab import _paths
from ingestlab.servers.base import OWNER_LOCK, PID_FILE, _read_pid, _serves, is_server_folder, processes_using

__all__ = ["IDLE_S", "STOPPED_GRACE_S", "CpuShareWatch", "StalledTargetWatch", "StoppedServerWatch", "stopped_process"]

#: Seconds a run's lab server may stay stopped before the run gives up on it (and kills it).
STOPPED_GRACE_S = 3.0
#: Seconds between two looks at the servers' process states.
INTERVAL_S = 0.5
#: Seconds a run may wait (its kernel and clients using under :data:`IDLE_CPU_S` of CPU) before
#: its URL targets are asked for a new connection.
IDLE_S = 10.0
#: CPU seconds under which a run counts as waiting over :data:`IDLE_S`.
IDLE_CPU_S = 0.05
#: Failed connection attempts in a row (each within the pre-flight's timeout) that end the run.
FAILED_PROBES = 2
#: Seconds between two readings of :class:`CpuShareWatch`.
CPU_INTERVAL_S = 2.0


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


def _run_servers(root: Path) -> tuple[set[int], list[Path]]:
    """This process's descendants' pids, and the lab server folders under ``root`` that one of them started."""
    if not root.is_dir():
        return set(), []
    try:
        mine = {proc.pid for proc in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return set(), []
    return mine, [folder for folder in root.iterdir() if is_server_folder(folder) and _owner(folder) in mine]


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
    """Context: while it is open, kill any lab server of this process's children, or the kernel, that stays stopped.

    A background thread looks every :data:`INTERVAL_S` at the server folders under the lab
    directory whose owner (the process that started the server) is a descendant of this
    process — the notebook's kernel — and kills the server whose process stays stopped for
    ``grace_s``. :attr:`cause` then says which, in one line.

    Parameters
    ----------
    root : path, optional
        The lab directory (default: the lab's ``.lab``).
    grace_s : float
        How long a server (or the kernel) may stay stopped.
    kernel : callable, optional
        Gives the notebook kernel's process id (None until it runs): a kernel stopped for
        ``grace_s`` is killed too, and the run ends saying so.

    Examples
    --------
    >>> with StoppedServerWatch(grace_s=3.0) as watch:
    ...     pass  # run the notebook
    >>> watch.cause is None
    True
    """

    def __init__(self, root: str | Path | None = None, *, grace_s: float = STOPPED_GRACE_S,
                 kernel: Callable[[], int | None] | None = None):
        self.root = Path(root) if root else _paths.lab_dir()
        self.grace_s = grace_s
        self.kernel = kernel
        #: One line naming the server (or the kernel) that was stopped and killed, or None.
        self.cause: str | None = None
        #: Whether it was the notebook's kernel (the run failed) rather than a server (a server lost).
        self.kernel_stopped = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="stopped-server-watch", daemon=True)

    def __enter__(self) -> StoppedServerWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def _folders(self) -> list[Path]:
        return _run_servers(self.root)[1]

    def _kernel_stopped(self) -> psutil.Process | None:
        pid = self.kernel() if self.kernel is not None else None
        try:
            proc = psutil.Process(pid) if pid else None
            return proc if proc is not None and proc.status() == psutil.STATUS_STOPPED else None
        except psutil.Error:
            return None

    def _watch(self) -> None:
        since: dict[Path | str, float] = {}
        while not self._done.wait(INTERVAL_S):
            now = time.monotonic()
            kernel = self._kernel_stopped()
            if kernel is None:
                since.pop("kernel", None)
            elif now - since.setdefault("kernel", now) >= self.grace_s:
                self.cause = (f"the notebook's kernel was stopped (a SIGSTOP to its process {kernel.pid}) and ran "
                              f"nothing for {self.grace_s:g} s; it was killed so that the run could end")
                self.kernel_stopped = True
                with contextlib.suppress(psutil.Error):
                    kernel.kill()  # a stopped process dies of SIGKILL; its servers are reaped after it
                return
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


def _tree_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process's descendants (the kernel, its clients)."""
    total = 0.0
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return total
    for proc in children:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def _kill_children() -> None:
    """SIGKILL this process's descendants (the kernel and its clients): a statement blocked in C waits for no signal."""
    with contextlib.suppress(psutil.Error):
        procs = psutil.Process().children(recursive=True)
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(procs, timeout=5)


class StalledTargetWatch:
    """Context: while it is open, end the run when one of its URL targets stops answering.

    Every :data:`INTERVAL_S` the thread reads the CPU time of this process's descendants (the
    notebook's kernel and its clients). When they used less than :data:`IDLE_CPU_S` in the
    last ``idle_s`` — the run waits — each target is asked for a new connection with
    ``probe`` (which must give up within its own timeout: the pre-flight's). A target that
    answers :data:`FAILED_PROBES` probes in a row with an error or no answer is taken for
    stalled: :attr:`cause` says so in one line and the kernel is killed. A target that
    answers resets its count: the run was waiting on a long statement, not a dead server.

    Parameters
    ----------
    targets : list of (str, str)
        ``(parameter, url as shown)`` of each target, passwords masked.
    probe : callable
        ``probe(index)`` connects to target ``index`` and closes the connection, raising on
        failure; it is called from the watch's thread.
    idle_s : float
        How long the run must wait before its targets are asked.
    timeout_s : float
        The probe's own timeout, for the message.
    """

    def __init__(self, targets, probe, *, idle_s: float = IDLE_S, timeout_s: float = 5.0):
        self.targets = list(targets)
        self.probe = probe
        self.idle_s = idle_s
        self.timeout_s = timeout_s
        #: One line naming the target that stopped answering, or None.
        self.cause: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="stalled-target-watch", daemon=True)

    def __enter__(self) -> StalledTargetWatch:
        if self.targets:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        readings = [(time.monotonic(), _tree_cpu_s())]
        failed = [0] * len(self.targets)
        while not self._done.wait(INTERVAL_S):
            now, cpu = time.monotonic(), _tree_cpu_s()
            readings.append((now, cpu))
            while len(readings) > 1 and now - readings[1][0] >= self.idle_s:
                readings.pop(0)
            since, cpu0 = readings[0]
            if now - since < self.idle_s or cpu - cpu0 >= IDLE_CPU_S:
                continue
            for k, (name, shown) in enumerate(self.targets):
                try:
                    self.probe(k)
                    failed[k] = 0
                except Exception as exc:  # noqa: BLE001 - any failure to answer counts
                    failed[k] += 1
                    while exc.__cause__ is not None:  # the driver's own words, not the URL again
                        exc = exc.__cause__
                    reason = " ".join(str(exc).split())[:160]
                if failed[k] >= FAILED_PROBES and not self._done.is_set():
                    self.cause = (f"{name} {shown} answered no new connection within {self.timeout_s:g} s, "
                                  f"{FAILED_PROBES} times in a row, while the run had waited on it for "
                                  f"{self.idle_s:g} s ({reason}); the run was ended")
                    _kill_children()
                    return
            if not any(failed):  # every target answered: the run waits on a long statement; look again later
                readings = [(time.monotonic(), _tree_cpu_s())]


def machine_busy_s() -> tuple[float, float]:
    """CPU seconds the machine's processes have kept its cores busy since boot, and the seconds stolen from it.

    Busy: every state but idle, I/O wait and steal, all cores. Steal is time a virtual machine's
    cores were ready but its host ran something else: noise from neighbours, not a process here.

    Examples
    --------
    >>> busy, steal = machine_busy_s()
    >>> busy > 0 and steal >= 0
    True
    """
    t = psutil.cpu_times()
    steal = getattr(t, "steal", 0.0)
    total = sum(getattr(t, f) for f in t._fields if f not in ("guest", "guest_nice"))  # guest is inside user
    return total - t.idle - getattr(t, "iowait", 0.0) - steal, steal


class CpuShareWatch:
    """Context: the share of the machine's CPU that processes *outside* the run used while it ran.

    The run's own CPU is this process's and every descendant's (the kernel, its clients, the
    tools it starts): ``getrusage`` of the process and of its reaped children, taken when the
    context opens and closes (the kernel is reaped by then), plus what descendants still alive
    at the close have used; and the CPU of the run's lab servers that are no descendants (a
    PostgreSQL that ``pg_ctl`` started runs on its own, and so does each of its standbys), read
    every :data:`CPU_INTERVAL_S` with their children (its backends). Against the machine's busy
    time over the same span (:func:`machine_busy_s`):

        others_cpu_share = (machine busy - run's own) / (wall × cores),

    clipped to [0, 1]; and ``steal_share``, the time a virtual machine's host kept from it (not
    a process here, so apart). What it cannot see counts as others', so the share errs high, never low:
    the last seconds of such a server's backend that ends between two readings, and the
    kernel's own work for the run (its I/O write-back threads).

    Parameters
    ----------
    lab_dir : path, optional
        The lab servers' folder (default: :func:`ingestlab._paths.lab_dir`).
    interval_s : float
        Seconds between readings of the lab servers.
    """

    def __init__(self, lab_dir: Path | None = None, *, interval_s: float = CPU_INTERVAL_S):
        self.root = Path(lab_dir) if lab_dir is not None else _paths.lab_dir()
        self.interval_s = interval_s
        self._seen: dict[tuple[int, float], float] = {}  # (pid, create time) -> CPU seconds at its last reading
        self._servers_s = 0.0
        self._readings = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="cpu-share-watch", daemon=True)
        self._start = self._end = (0.0, (0.0, 0.0), 0.0)  # (monotonic, (machine busy, steal), this tree's rusage)
        self._born_after = 0.0

    def __enter__(self) -> CpuShareWatch:
        self._born_after = time.time()
        self._start = (time.monotonic(), machine_busy_s(), _rusage_s())
        self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self._read()
        alive = 0.0  # descendants still running: not in the reaped children's rusage yet
        with contextlib.suppress(psutil.Error):
            for proc in psutil.Process().children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if proc.create_time() >= self._born_after - 1:  # with the children it has reaped itself
                        t = proc.cpu_times()
                        alive += t.user + t.system + t.children_user + t.children_system
        self._end = (time.monotonic(), machine_busy_s(), _rusage_s() + alive)

    def _servers(self) -> list[psutil.Process]:
        """The run's lab servers that are no descendants of this process, with their children.

        Every process whose command line names one of the run's server folders, not only the one
        its ``server.pid`` names: a cluster's primary and each of its standbys are started apart
        (by ``pg_ctl``, each its own postmaster), and a standby's replay is the run's work.
        """
        mine, folders = _run_servers(self.root)
        procs: dict[int, psutil.Process] = {}
        for folder in folders:
            for pid in processes_using(folder):
                if pid in mine or pid in procs:
                    continue
                with contextlib.suppress(psutil.Error):
                    server = psutil.Process(pid)
                    for proc in (server, *server.children(recursive=True)):
                        procs.setdefault(proc.pid, proc)
        return list(procs.values())

    def _read(self) -> None:
        self._readings += 1
        for proc in self._servers():
            with contextlib.suppress(psutil.Error):
                key = (proc.pid, proc.create_time())
                times = proc.cpu_times()
                now = times.user + times.system
                before = self._seen.get(key, 0.0 if key[1] >= self._born_after - 1 else now)
                self._servers_s += max(0.0, now - before)
                self._seen[key] = now

    def _watch(self) -> None:
        while not self._done.wait(self.interval_s):
            self._read()

    def result(self) -> dict:
        """``others_cpu_share``, the run's own share, and what they came from (for ``run.json``)."""
        wall = self._end[0] - self._start[0]
        capacity = wall * (psutil.cpu_count() or 1)
        if capacity <= 0:
            return {"others_cpu_share": None, "run_cpu_share": None, "seconds": 0.0, "readings": self._readings}
        own = self._end[2] - self._start[2] + self._servers_s
        busy, steal = (self._end[1][k] - self._start[1][k] for k in (0, 1))
        return {"others_cpu_share": round(min(1.0, max(0.0, (busy - own) / capacity)), 4),
                "run_cpu_share": round(min(1.0, max(0.0, own / capacity)), 4),
                "steal_share": round(min(1.0, max(0.0, steal / capacity)), 4),
                "seconds": round(wall, 1), "readings": self._readings, "interval_s": self.interval_s}


def _rusage_s() -> float:
    """CPU seconds used by this process and by its children it has waited for (and theirs, recursively)."""
    import resource

    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
