"""Where the lab's processes run, and how fast an idle CPU wakes up for them.

**Wake-up.** A single-row statement is two wake-ups: the server's when the statement
arrives, the client's when the reply does. On this virtual machine an idle virtual CPU
polls for a while (the ``haltpoll`` governor, whose window grows and shrinks by itself),
then halts, and a halted one takes tens of microseconds to wake: a run's statements moved
between regimes of 0.05, 0.08 and 0.10 ms (PostgreSQL without synchronous commit) that
lasted about a hundred statements each, and the shares of each regime differed from run to
run. Held at zero wake-up latency (``/dev/cpu_dma_latency``, the kernel's PM QoS request, as
tuned's latency-performance profile does), the idle CPUs poll instead, and the same statement
took 0.018–0.019 ms in every block of every round (bench/README.md, "Where the run-to-run
noise comes from"). The lab holds it while any of its engines is started (:func:`hold`); the
request belongs to the open file, so the kernel drops it when the process ends, however it
ends: nothing is left changed. It needs root; without it the run says so in its metadata.
``INGESTLAB_WAKEUP=off`` leaves the CPUs' idle states alone.

**Placement.** Left to the scheduler, a client and the server it talks to share a core for a
while, then sit on two, then share again; a µs statement's round trip pays for each move, and a
run's statements sit at levels some 10 µs apart that a median of a few hundred cannot average
(bench/README.md, "Smoke runs of 01"). Where many clients run (notebook 04) they need the cores,
so by default the lab leaves placement to the scheduler, as pgbench and mariadb-slap do.
``INGESTLAB_PLACEMENT=split`` pins the measuring thread to the first CPU it
may use and every process of a lab server (all its threads; what they fork later inherits it)
to the others; ``together`` pins both to that first CPU, so a round trip never crosses
CPUs. Unset, the policy is the one the measuring code prefers (:func:`preferring`: notebook 01,
one client, prefers ``together``), else ``off``. A cluster's nodes work at the same time, so under
``together`` they keep every CPU (:attr:`~ingestlab.servers.base.LocalServer.SHARES_THE_CLIENTS_CPU`);
library engines, opened inside the client, are never pinned. The run's metadata records both
choices (:func:`describe`).
"""

from __future__ import annotations

import contextlib
import os
import struct
from typing import Iterator

import psutil

from ingestlab.errors import ConfigError

#: Environment variable choosing the placement: ``off`` (default: the scheduler's), ``split`` or ``together``.
ENV = "INGESTLAB_PLACEMENT"
#: The accepted values of :data:`ENV`, the default first.
POLICIES = ("off", "split", "together")


#: Environment variable choosing the wake-up latency: ``hold`` (default) or ``off``.
WAKEUP_ENV = "INGESTLAB_WAKEUP"
#: The accepted values of :data:`WAKEUP_ENV`.
WAKEUPS = ("hold", "off")
#: The kernel's PM QoS file: while a process holds it open with a value written, no CPU idles deeper than that (µs).
QOS_FILE = "/dev/cpu_dma_latency"


def _choice(env: str, accepted: tuple[str, ...]) -> str:
    value = os.environ.get(env, accepted[0]).strip().lower() or accepted[0]
    if value not in accepted:
        raise ConfigError(f"${env}", value, "one of " + ", ".join(accepted) + f" (or unset: {accepted[0]})")
    return value


_preferred: list[str] = []  # what the measuring code prefers, innermost last (preferring)


def policy() -> str:
    """The placement in force: :data:`ENV`'s value; unset, the measuring code's preference (:func:`preferring`), else ``off``.

    Raises
    ------
    ConfigError
        When :data:`ENV` holds anything but one of :data:`POLICIES`.
    """
    if not os.environ.get(ENV, "").strip() and _preferred:
        return _preferred[-1]
    return _choice(ENV, POLICIES)


@contextlib.contextmanager
def preferring(name: str) -> Iterator[None]:
    """Inside, the policy is ``name`` unless :data:`ENV` says otherwise; engines started inside are placed by it.

    Examples
    --------
    >>> with preferring("together"):
    ...     policy()
    'together'
    >>> policy()
    'off'
    """
    if name not in POLICIES:
        raise ValueError(f"placement policy {name!r}: one of {', '.join(POLICIES)}")
    _preferred.append(name)
    try:
        yield
    finally:
        _preferred.pop()


def wakeup() -> str:
    """The wake-up policy in force: :data:`WAKEUP_ENV`'s value, ``hold`` when unset (ConfigError otherwise)."""
    return _choice(WAKEUP_ENV, WAKEUPS)


_held: dict[str, int | None] = {"fd": None, "holders": 0}


def hold() -> str:
    """Hold every CPU at zero wake-up latency until as many :func:`let_go` as holds; return what is in force.

    Returns
    -------
    str
        ``held``, ``off`` (:data:`WAKEUP_ENV`), or why it could not be held (no such file, not root).
    """
    if wakeup() == "off":
        return "off"
    if _held["fd"] is None:
        try:
            fd = os.open(QOS_FILE, os.O_WRONLY | os.O_CLOEXEC)
        except OSError as exc:
            return f"not held: {QOS_FILE}: {exc.strerror}"
        os.write(fd, struct.pack("i", 0))
        _held["fd"] = fd
    _held["holders"] += 1
    return "held"


def let_go() -> None:
    """End one :func:`hold`; the last one closes the file, and the kernel drops the request."""
    if _held["fd"] is None:
        return
    _held["holders"] -= 1
    if _held["holders"] <= 0:
        fd, _held["fd"], _held["holders"] = _held["fd"], None, 0
        os.close(fd)


def plan(allowed: set[int] | None = None) -> dict[str, list[int]] | None:
    """The CPUs of the client and of the servers, or None when nothing is pinned.

    Nothing is pinned with one CPU (no core to split) or under ``INGESTLAB_PLACEMENT=off``.

    Examples
    --------
    >>> os.environ[ENV] = "split"
    >>> plan({0, 1, 2, 3})
    {'client': [0], 'server': [1, 2, 3]}
    >>> plan({5}) is None
    True
    >>> os.environ[ENV] = "together"
    >>> plan({0, 1, 2, 3})
    {'client': [0], 'server': [0]}
    >>> del os.environ[ENV]
    """
    cpus = sorted(allowed if allowed is not None else os.sched_getaffinity(0))
    if policy() == "off" or len(cpus) < 2:
        return None
    return {"client": cpus[:1], "server": cpus[:1] if policy() == "together" else cpus[1:]}


#: The CPUs this process might use when it was imported (the client goes back to them).
_ALLOWED = sorted(os.sched_getaffinity(0))


def place(server) -> dict[str, list[int]] | None:
    """Pin the calling thread (the client) and every process of ``server`` (a started local server).

    An in-process engine's "server" is this process: nothing is pinned. The server's
    processes are those whose command line names its folder
    (:func:`ingestlab.servers.base.processes_using`) and their children, every thread of each.
    Call it after every start or restart (a restart makes new processes).

    Returns
    -------
    dict or None
        The plan applied (:func:`plan`), or None when nothing was pinned.
    """
    from ingestlab.servers.base import InProcessServer, processes_using

    cpus = plan(set(_ALLOWED))
    if cpus is None or isinstance(server, InProcessServer):
        return None
    where = server_cpus(server, cpus)
    for pid in processes_using(server.directory):
        try:
            procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for proc in procs:
            for task in _tasks(proc.pid):
                try:
                    os.sched_setaffinity(task, where)
                except (ProcessLookupError, PermissionError):  # a thread that just ended; another user's
                    pass
    os.sched_setaffinity(0, set(cpus["client"]))
    return cpus


def server_cpus(server, cpus: dict[str, list[int]]) -> set[int]:
    """The CPUs ``server``'s processes may use under the plan ``cpus``: the plan's, or every one for a cluster kept off the client's."""
    if policy() == "together" and not server.SHARES_THE_CLIENTS_CPU:
        return set(_ALLOWED)
    return set(cpus["server"])


def engage(engine) -> None:
    """An engine has started: hold the wake-up latency (:func:`hold`) and place its local server (:func:`place`)."""
    if getattr(engine, "_placement_held", False):
        return
    engine._placement_held = hold() == "held"
    if engine.server is not None:
        place(engine.server)


def disengage(engine) -> None:
    """An engine has stopped: let the client run anywhere again and end its hold; safe to call twice."""
    if engine.server is not None:
        release()
    if getattr(engine, "_placement_held", False):
        let_go()
    engine._placement_held = False


def release() -> None:
    """Let the calling thread run on every CPU it could use before :func:`place`."""
    os.sched_setaffinity(0, set(_ALLOWED))


def describe() -> dict:
    """For a run's metadata: the placement policy, the CPUs allowed, the split, and the wake-up latency's hold."""
    held = "held" if _held["fd"] is not None else wakeup()
    if held == "hold":
        held = "hold (when an engine starts)" if os.access(QOS_FILE, os.W_OK) else f"not held: cannot write {QOS_FILE}"
    return {"policy": policy(), "cpus": list(_ALLOWED), "plan": plan(set(_ALLOWED)), "wakeup": held,
            "cpuidle_governor": _read("/sys/devices/system/cpu/cpuidle/current_governor")}


def _read(path: str) -> str | None:
    try:
        return open(path).read().strip()
    except OSError:
        return None


def _tasks(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except (FileNotFoundError, PermissionError):
        return []
