"""The lab's cgroups, v1 or v2 as the kernel mounts them: disk I/O limits, a memory cap, and the disk's own counters.

Every group lives at ``<hierarchy>/ingestlab-<pid of the owning Python process>/<label>-<n>``;
it is removed when its ``with`` block ends (also on an exception or Ctrl-C) or at exit, and
:func:`reap` removes those of processes that were killed. Which cgroup version serves a
limit is read from ``/proc/self/mountinfo`` (:func:`ingestlab.cgroupfs.locate`): a cgroup v1 hierarchy of the
controller where one is mounted (a controller bound to v1 is not offered in v2), else the
cgroup v2 hierarchy when it offers the controller. :class:`~ingestlab.cgroupfs.CgroupV1` and :class:`~ingestlab.cgroupfs.CgroupV2`
hold what differs between the two: control files, counters, where processes are placed.
"""
from __future__ import annotations

import atexit
import contextlib
import dataclasses
import errno
import itertools
import logging
import os
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Iterator

from ingestlab.cgroupfs import LEAF, locate, roots
from ingestlab.polling import poll
from ingestlab.servers.base import is_running

log = logging.getLogger(__name__)

#: Name prefix of the lab's cgroups: ``ingestlab-<pid of the owning Python process>``.
PREFIX = "ingestlab-"
SECTOR_BYTES = 512
@dataclasses.dataclass(frozen=True)
class DiskLimits:
    """Limits of an emulated volume; ``None`` leaves that direction unlimited.

    Examples
    --------
    >>> DiskLimits(read_iops=375).files("254:0")
    {'blkio.throttle.read_iops_device': '254:0 375'}
    """

    read_iops: int | None = None
    write_iops: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None

    def describe(self) -> str:
        """The limits in words.

        Examples
        --------
        >>> DiskLimits(read_iops=375, read_bps=60_000_000).describe()
        '375 read IOPS, 60 MB/s read'
        """
        parts = [f"{self.read_iops} read IOPS" if self.read_iops else "",
                 f"{self.write_iops} write IOPS" if self.write_iops else "",
                 f"{self.read_bps / 1e6:g} MB/s read" if self.read_bps else "",
                 f"{self.write_bps / 1e6:g} MB/s write" if self.write_bps else ""]
        return ", ".join(p for p in parts if p) or "no limits"

    def files(self, device: str) -> dict[str, str]:
        """The cgroup v1 blkio control files and the lines that set these limits on ``device``."""
        out = {}
        for field, name in (("read_iops", "read_iops_device"), ("write_iops", "write_iops_device"),
                            ("read_bps", "read_bps_device"), ("write_bps", "write_bps_device")):
            value = getattr(self, field)
            if value is not None:
                out[f"blkio.throttle.{name}"] = f"{device} {int(value)}"
        return out

    def io_max(self, device: str) -> str:
        """The cgroup v2 ``io.max`` line that sets these limits on ``device`` (directions not set stay ``max``).

        Examples
        --------
        >>> DiskLimits(read_iops=375, write_iops=750).io_max("254:0")
        '254:0 riops=375 wiops=750'
        """
        keys = (("riops", self.read_iops), ("wiops", self.write_iops), ("rbps", self.read_bps),
                ("wbps", self.write_bps))
        return " ".join([device, *(f"{key}={int(value)}" for key, value in keys if value is not None)])


#: Disk profiles by name. ``cloud-375`` is the study's 500 GB Google Compute Engine volume:
#: 375 read and 750 write operations per second, 60 MB/s each way. ``cloud-375-reads`` keeps
#: only its read limits: a diagnostic that separates reads from writes, e.g. for engines run
#: with ``O_DIRECT`` writes (notebook 03's ``MEMORY_LIMIT = "engine"``: one I/O per page
#: against the write limit, where the OS page cache's write-back merges adjacent pages).
#: ``local``: the disk as it is.
PROFILES: dict[str, DiskLimits | None] = {
    "local": None,
    "cloud-375": DiskLimits(read_iops=375, write_iops=750, read_bps=60_000_000, write_bps=60_000_000),
    "cloud-375-reads": DiskLimits(read_iops=375, read_bps=60_000_000),
}


# -- the disk ----------------------------------------------------------------------------
def device_of(path: str | os.PathLike) -> str:
    """``"major:minor"`` of the whole disk holding ``path`` (blkio limits apply to disks, not partitions).

    Raises
    ------
    OSError
        When ``path`` does not exist.
    """
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sys_dev = Path("/sys/dev/block") / dev
    if (sys_dev / "partition").exists():
        dev = (sys_dev.resolve().parent / "dev").read_text().strip()
    return dev


def disk_counters(device: str) -> dict[str, int]:
    """Cumulative counters of ``device`` from ``/proc/diskstats`` (reads, bytes read, writes, bytes written).

    Returns an empty dict when the device is not listed (a file system without a block device).
    """
    major, minor = device.split(":")
    try:
        lines = Path("/proc/diskstats").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        f = line.split()
        if f[0] == major and f[1] == minor:
            return {"read_ios": int(f[3]), "read_bytes": int(f[5]) * SECTOR_BYTES,
                    "write_ios": int(f[7]), "write_bytes": int(f[9]) * SECTOR_BYTES}
    return {}


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (a server's postmaster and its backends, workers...)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        return [pid] + [child.pid for child in proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


# -- availability --------------------------------------------------------------------------
def _reason(controller: str, root: str | os.PathLike | None) -> str | None:
    hierarchy, reason = locate(controller, root)
    return reason or hierarchy.unavailable()


def unavailable_reason(root: str | os.PathLike | None = None) -> str | None:
    """Why disk I/O limits cannot be used here (under ``root``, default: found by :func:`locate`), or None."""
    return _reason("io", root)


def memory_unavailable_reason(root: str | os.PathLike | None = None) -> str | None:
    """Why a memory cap cannot be used here (under ``root``, default: found by :func:`locate`), or None."""
    return _reason("memory", root)


def cpuacct_unavailable_reason(root: str | os.PathLike | None = None) -> str | None:
    """Why CPU accounting of a group cannot be used here (under ``root``, default: found by :func:`locate`), or None."""
    return _reason("cpu", root)


# -- groups ------------------------------------------------------------------------------
class Group:
    """A cgroup of the lab that some processes are moved into, in v1 or v2 (subclasses set what it does).

    When the group cannot be made, ``applied`` is False and ``reason`` says why; nothing is
    created and the caller goes on without it.
    """

    #: The kind of limit (a key of :data:`CONTROLLERS`): ``"io"`` or ``"memory"``.
    CONTROLLER: ClassVar[str] = ""
    _serial = itertools.count()

    def __init__(self, *, label: str = "group", root: str | os.PathLike | None = None):
        self.hierarchy, self._missing = locate(self.CONTROLLER, root)
        self.root = self.hierarchy.root if self.hierarchy else (Path(root) if root else None)
        self.owner_dir = self.root / f"{PREFIX}{os.getpid()}" if self.root else None
        self.path: Path | None = None
        self.reason: str | None = None
        self._home: dict[int, Path] = {}
        self._label = f"{label}-{next(self._serial)}"

    def unavailable(self) -> str | None:
        """Why this group cannot be made, or None."""
        return self._missing or self.hierarchy.unavailable()

    def configure(self, path: Path) -> None:
        """Write the group's control files once it exists (subclasses)."""

    @property
    def applied(self) -> bool:
        """Whether the group exists and holds the processes moved in."""
        return self.path is not None

    def open(self, near: Iterable[int] = ()) -> "Group":
        """Create the group and configure it; on failure record ``reason`` and stay unapplied.

        ``near``: processes about to be moved in. In cgroup v2, where a process is in one group
        only, the group is made inside the lab group of this process that holds the first of
        them (a memory cap), so that its limits still apply; in v1 groups are side by side.
        """
        self.reason = self.unavailable()
        if self.reason:
            return self
        reap(self.root)
        path = self._parent(near) / self._label
        try:
            self.path = path
            _ACTIVE.add(self)
            self.hierarchy.create(path)
            self.configure(path)
        except OSError as exc:
            self.reason = f"cannot set up {path}: {exc}"
            self.close()
            self.path = None
        return self

    def _parent(self, near: Iterable[int]) -> Path:
        for pid in near:
            home = self.hierarchy.cgroup_of(pid)
            if home is not None and home.name == LEAF and self.owner_dir in home.parents:
                return home.parent
        return self.owner_dir

    def add(self, pids: Iterable[int]) -> list[int]:
        """Move ``pids`` (whole processes, every thread) into the cgroup; return those moved."""
        if self.path is None:
            return []
        moved = []
        for pid in pids:
            home = self.hierarchy.cgroup_of(pid)
            try:
                self.hierarchy.procs_file(self.path).write_text(f"{pid}\n")
            except ProcessLookupError:
                continue  # exited meanwhile
            self._home.setdefault(pid, home or self.root)
            moved.append(pid)
        return moved

    def pids(self) -> list[int]:
        """The processes in the cgroup now (including children they forked inside, and those of nested groups)."""
        if self.path is None:
            return []
        found = []
        for folder in [self.path, *sorted(p for p in self.path.rglob("*") if p.is_dir())]:
            with contextlib.suppress(FileNotFoundError):
                found += [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        return found

    def close(self) -> None:
        """Move every process back where it came from and remove the cgroup; safe to call twice."""
        path = self.path
        if path is None:
            _ACTIVE.discard(self)
            return
        if self.hierarchy is not None:
            self.hierarchy.release()
        default_home = next(iter(self._home.values()), self.root)
        try:
            _empty_and_remove(path, lambda pid: self._home.get(pid, default_home))
        except OSError as exc:
            log.warning("could not remove %s (%s); `cgroups.reap()` will retry once this process exits", path, exc)
            return
        self.path = None
        _ACTIVE.discard(self)
        with contextlib.suppress(OSError):
            self.owner_dir.rmdir()  # only when no other group of this process remains

    def _where(self) -> dict:
        """What every group's metadata holds: applied or why not, the cgroup, its version and mechanism."""
        applied = self.applied
        return {"applied": applied, "reason": self.reason, "cgroup": str(self.path) if applied else None,
                "cgroup_version": self.hierarchy.VERSION if applied else None,
                "mechanism": self.hierarchy.MECHANISM[self.CONTROLLER] if applied else None}


class Throttle(Group):
    """A cgroup that holds some processes under :class:`DiskLimits` (use :func:`throttle`).

    When throttling is not possible, ``applied`` is False and ``reason`` says why; nothing
    is created and :meth:`counters` is empty, so a caller can go on unthrottled.
    """

    CONTROLLER = "io"

    def __init__(self, limits: DiskLimits | None, device: str, *, label: str = "group",
                 root: str | os.PathLike | None = None):
        super().__init__(label=label, root=root)
        self.limits = limits
        self.device = device

    def unavailable(self) -> str | None:
        if self.limits is None:
            return "profile without limits"
        return super().unavailable()

    def configure(self, path: Path) -> None:
        try:
            self.hierarchy.set_io_limits(path, self.limits, self.device)
        except OSError as exc:
            raise OSError(f"cannot set {self.hierarchy.name} limits on {self.device}: {exc}") from exc

    def counters(self) -> dict[str, int]:
        """Cumulative I/O of the cgroup's processes on the device (``cgroup_read_ios``, ``cgroup_write_bytes``...)."""
        if self.path is None:
            return {}
        return self.hierarchy.io_counters(self.path, self.device)

    def metadata(self) -> dict:
        """What the run records: limits, device, cgroup and its version, or why nothing was applied."""
        return {**self._where(), "device": self.device,
                "limits": dataclasses.asdict(self.limits) if self.limits else None}


@contextlib.contextmanager
def throttle(pids: Iterable[int], limits: DiskLimits | None, *, device: str, label: str = "group",
             root: str | os.PathLike | None = None) -> Iterator[Throttle]:
    """Hold ``pids`` under ``limits`` on ``device`` for the ``with`` block, then undo everything.

    Creates ``<root>/ingestlab-<this pid>/<label>-<n>`` (in cgroup v2 inside the memory cap
    that holds the processes, if one does), writes the limits, moves the processes in
    (children they fork inherit the group), and on leaving — normally, on an exception or
    on Ctrl-C — moves every process in the group back to the cgroup it came from and
    removes the group. A group left behind by a process that was killed is removed by
    :func:`reap`, which this function also runs first.

    When throttling is impossible (no cgroup v1 blkio hierarchy and no cgroup v2 ``io``
    controller, not root, a device that takes no limits) the block still runs, unthrottled,
    and ``Throttle.applied`` is False with the reason in ``Throttle.reason``.

    Parameters
    ----------
    pids : iterable of int
        Processes to throttle (for an engine inside this process: ``[os.getpid()]``).
    limits : DiskLimits or None
        None: no cgroup at all (the ``local`` profile).
    device : str
        ``"major:minor"`` of the disk (see :func:`device_of`).
    label : str
        Name stem of the group, for people reading ``/sys/fs/cgroup``.
    root : path, optional
        The hierarchy (default: found by :func:`locate` when called).
    """
    pids = list(pids)
    group = Throttle(limits, device, label=label, root=root).open(near=pids)
    try:
        group.add(pids)
        yield group
    finally:
        group.close()


class MemoryCap(Group):
    """A memory cgroup whose limit holds its processes' OS page cache to a budget (use :func:`memory_cap`).

    Processes are moved in without a limit; :meth:`cap` then sets the limit (v1
    ``memory.limit_in_bytes``, v2 ``memory.max``) to what they hold and cannot hand back
    (anonymous and shared memory: with no swap, the kernel can only evict file pages) plus
    some free memory, which the OS page cache and the processes' further memory share.
    From then on the kernel evicts the group's file pages beyond that, and a read of an
    evicted page goes to the disk — counted by the I/O throttle, the device and the engine.
    A statement that needs more than the free memory is killed by the kernel (:meth:`oom_kills`).

    Pages are charged to the group of the process that first touches them, and neither v2
    nor this kernel's v1 moves charges with a process (``memory.move_charge_at_immigrate``
    is gone): move a server in right after it starts, before it reads or writes its data.
    """

    CONTROLLER = "memory"

    def __init__(self, *, label: str = "group", root: str | os.PathLike | None = None):
        super().__init__(label=label, root=root)
        self.limit: dict[str, int] | None = None

    def stat(self) -> dict[str, int]:
        """The group's memory in bytes: ``anon``, ``file`` (page cache, ``shmem`` included), ``shmem``; empty when not applied."""
        if self.path is None:
            return {}
        return self.hierarchy.memory_stat(self.path)

    def cap(self, free_bytes: int, *, timeout_s: float = 2.5) -> dict[str, int]:
        """Set the limit to the memory the processes hold now plus ``free_bytes``; return the parts.

        ``free_bytes`` is what the OS page cache and the processes' further memory (a
        statement's parse tree, sorts...) then share, as the free RAM of a small machine.
        Dirty pages are written first (``sync``) so that the kernel can evict down to the new
        limit at once; for up to ``timeout_s`` it tries again while the kernel reports it
        could not (v1's ``EBUSY``).

        Returns
        -------
        dict
            ``limit_bytes``, ``held_bytes`` (anonymous + shared memory when capped),
            ``free_bytes``, ``page_cache_before_bytes``; empty when the group is not applied.
        """
        if self.path is None:
            return {}

        def attempt() -> dict[str, int] | None:
            os.sync()
            st = self.stat()
            parts = {"limit_bytes": st.get("anon", 0) + st.get("shmem", 0) + int(free_bytes),
                     "held_bytes": st.get("anon", 0) + st.get("shmem", 0), "free_bytes": int(free_bytes),
                     "page_cache_before_bytes": st.get("file", 0) - st.get("shmem", 0)}
            try:
                self.hierarchy.set_memory_limit(self.path, parts["limit_bytes"])
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                return None  # the kernel could not evict down to it yet
            return parts

        parts = poll(attempt, timeout_s=timeout_s, interval_s=0.5)
        if parts is None:
            raise OSError(errno.EBUSY, f"the kernel could not evict {self.path} down to a limit of "
                                       f"{free_bytes} free bytes within {timeout_s} s")
        self.limit = parts
        return dict(parts)

    def reset_peak(self) -> None:
        """Start a new peak for :meth:`levels`' ``mem_peak_bytes`` (v1 ``memory.max_usage_in_bytes``, v2 ``memory.peak``)."""
        if self.path is not None:
            self.hierarchy.reset_peak(self.path)

    def levels(self) -> dict[str, int]:
        """What the group holds now: page cache, anonymous and shared memory, the peak since :meth:`reset_peak`.

        Returns
        -------
        dict
            ``mem_page_cache_bytes`` (file pages: ``file`` − ``shmem``), ``mem_anon_bytes``,
            ``mem_shmem_bytes``, ``mem_peak_bytes``, ``mem_failcnt`` (times the limit was hit,
            cumulative: v1 ``memory.failcnt``, v2 ``max`` of ``memory.events``); empty when not applied.
        """
        st = self.stat()
        if not st:
            return {}
        return {"mem_page_cache_bytes": st["file"] - st["shmem"], "mem_anon_bytes": st["anon"],
                "mem_shmem_bytes": st["shmem"], "mem_peak_bytes": self.hierarchy.peak(self.path),
                "mem_failcnt": self.hierarchy.memory_events(self.path)["limit_hits"]}

    def oom_kills(self) -> int:
        """Processes of the group the kernel killed for want of memory (v1 ``memory.oom_control``, v2 ``memory.events``)."""
        if self.path is None:
            return 0
        return self.hierarchy.memory_events(self.path)["oom_kills"]

    def metadata(self) -> dict:
        """What the run records: the limit and its parts, the peak, OOM kills, or why nothing was applied."""
        return {**self._where(), **(self.limit or {}), "oom_kills": self.oom_kills()}


@contextlib.contextmanager
def memory_cap(pids: Iterable[int], *, label: str = "group",
               root: str | os.PathLike | None = None) -> Iterator[MemoryCap]:
    """Hold ``pids`` in a memory cgroup, without a limit until :meth:`MemoryCap.cap`, for the ``with`` block.

    Like :func:`throttle`: on leaving (normally, on an exception or Ctrl-C) the processes
    still in the group go back where they came from and the group is removed; where a
    memory cgroup is impossible the block runs without one and ``applied`` is False.
    """
    pids = list(pids)
    group = MemoryCap(label=label, root=root).open(near=pids)
    try:
        group.add(pids)
        yield group
    finally:
        group.close()


class CpuAccount(Group):
    """A cgroup that counts the CPU time its processes use, and that of the children they fork after.

    Move a server in once it runs: the backends it forks for later connections are counted
    too, so :meth:`usage_ns` before and after a run is the server's CPU for that run (the
    benchmarks divide it by the statements to get the server's CPU per statement). cgroup v1
    ``cpuacct.usage`` or v2 ``cpu.stat`` ``usage_usec``, as the kernel mounts them.
    """

    CONTROLLER = "cpu"

    def usage_ns(self) -> int | None:
        """CPU time (user + system, ns) the group's processes have used since they were moved in; None if not applied."""
        if self.path is None:
            return None
        return self.hierarchy.cpu_usage_ns(self.path)


_ACTIVE: set[Group] = set()


def _close_active() -> None:
    for group in list(_ACTIVE):
        group.close()


atexit.register(_close_active)


def _empty_and_remove(path: Path, home_of: Callable[[int], Path], timeout_s: float = 5.0) -> None:
    """Move every process out of ``path`` (to ``home_of(pid)``), then remove it, its sub-groups first."""
    if not path.is_dir():
        return
    for child in [p for p in path.iterdir() if p.is_dir()]:
        _empty_and_remove(child, home_of, timeout_s)

    def attempt() -> bool:
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return True
        for pid in pids:
            try:
                (home_of(pid) / "cgroup.procs").write_text(f"{pid}\n")
            except ProcessLookupError:
                pass
            except OSError:  # the home group is gone: the hierarchy's root always exists
                with contextlib.suppress(ProcessLookupError):
                    (_root_of(path) / "cgroup.procs").write_text(f"{pid}\n")
        path.rmdir()  # fails while a process forked meanwhile is still inside
        return True

    poll(attempt, timeout_s=timeout_s, interval_s=0.02, retry_on=OSError)


def _root_of(path: Path) -> Path:
    for parent in path.parents:
        if parent.name.startswith(PREFIX):
            return parent.parent
    return path.parent


def reap(root: str | os.PathLike | None = None) -> list[Path]:
    """Remove the lab's cgroups whose owning process is gone; return the groups removed.

    Their processes (a server that outlived a killed notebook kernel) are moved to the
    hierarchy's root first. Groups of live lab processes are left alone. ``root``: one
    hierarchy; by default every one the lab uses (:func:`roots`).
    """
    removed: list[Path] = []
    for hierarchy in ([Path(root)] if root else roots()):
        if not hierarchy.exists():
            continue
        for owner_dir in sorted(hierarchy.glob(PREFIX + "*")):
            tail = owner_dir.name[len(PREFIX):]
            if not tail.isdigit() or is_running(int(tail)):
                continue
            try:
                _empty_and_remove(owner_dir, lambda pid, home=hierarchy: home)
            except OSError as exc:
                log.warning("could not remove leftover cgroup %s: %s", owner_dir, exc)
                continue
            removed.append(owner_dir)
    return removed
