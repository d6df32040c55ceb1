"""The lab's cgroups (v1): blkio throttling of disk I/O, a memory cap, and the disk's own counters.

Every group lives at ``<hierarchy>/ingestlab-<pid of the owning Python process>/<label>-<n>``;
it is removed when its ``with`` block ends (also on an exception or Ctrl-C) or at exit, and
:func:`reap` removes those of processes that were killed.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import errno
import itertools
import logging
import os
import time
from pathlib import Path
from typing import Iterable, Iterator

from ingestlab.servers.base import is_running

log = logging.getLogger(__name__)

#: Where the cgroup v1 blkio hierarchy is mounted.
BLKIO_ROOT = Path("/sys/fs/cgroup/blkio")
#: Where the cgroup v1 memory hierarchy is mounted.
MEMORY_ROOT = Path("/sys/fs/cgroup/memory")
#: Where the cgroup v1 cpuacct hierarchy is mounted.
CPUACCT_ROOT = Path("/sys/fs/cgroup/cpuacct")
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
        """The blkio control files and the lines that set these limits on ``device``."""
        out = {}
        for field, name in (("read_iops", "read_iops_device"), ("write_iops", "write_iops_device"),
                            ("read_bps", "read_bps_device"), ("write_bps", "write_bps_device")):
            value = getattr(self, field)
            if value is not None:
                out[f"blkio.throttle.{name}"] = f"{device} {int(value)}"
        return out


#: Disk profiles by name. ``cloud-375`` is the seed's 500 GB Google Compute Engine volume:
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


# -- availability ------------------------------------------------------------------------
def _unwritable(root: Path) -> str | None:
    if os.geteuid() != 0 and not os.access(root, os.W_OK):
        return f"moving processes between cgroups under {root} needs root (running as uid {os.geteuid()})"
    return None


def unavailable_reason(root: str | os.PathLike | None = None) -> str | None:
    """Why blkio throttling cannot be used here (under ``root``, default :data:`BLKIO_ROOT`), or None when it can."""
    root = Path(root) if root else BLKIO_ROOT
    if not (root / "cgroup.procs").exists():
        return f"no cgroup v1 blkio hierarchy at {root}"
    if not (root / "blkio.throttle.read_iops_device").exists():
        return f"the blkio controller at {root} has no throttle files (kernel without CONFIG_BLK_DEV_THROTTLING)"
    return _unwritable(root)


def memory_unavailable_reason(root: str | os.PathLike | None = None) -> str | None:
    """Why a memory cap cannot be used here (under ``root``, default :data:`MEMORY_ROOT`), or None when it can."""
    root = Path(root) if root else MEMORY_ROOT
    if not (root / "cgroup.procs").exists() or not (root / "memory.limit_in_bytes").exists():
        return f"no cgroup v1 memory hierarchy at {root}"
    return _unwritable(root)


def cpuacct_unavailable_reason(root: str | os.PathLike | None = None) -> str | None:
    """Why CPU accounting of a group cannot be used here (under ``root``, default :data:`CPUACCT_ROOT`), or None."""
    root = Path(root) if root else CPUACCT_ROOT
    if not (root / "cgroup.procs").exists() or not (root / "cpuacct.usage").exists():
        return f"no cgroup v1 cpuacct hierarchy at {root}"
    return _unwritable(root)


# -- groups ------------------------------------------------------------------------------
class Group:
    """A cgroup of the lab in one v1 hierarchy that some processes are moved into (subclasses set what it does).

    When the group cannot be made, ``applied`` is False and ``reason`` says why; nothing is
    created and the caller goes on without it.
    """

    #: The v1 controller (``"blkio"``, ``"memory"``): the name in ``/proc/<pid>/cgroup``.
    CONTROLLER: str = ""
    _serial = itertools.count()

    def __init__(self, *, label: str = "group", root: str | os.PathLike | None = None):
        self.root = Path(root) if root else self.default_root()
        self.owner_dir = self.root / f"{PREFIX}{os.getpid()}"
        self.path: Path | None = None
        self.reason: str | None = None
        self._home: dict[int, Path] = {}
        self._label = f"{label}-{next(self._serial)}"

    @classmethod
    def default_root(cls) -> Path:
        """The hierarchy's mount point (read when called, so that tests can move it)."""
        raise NotImplementedError

    def unavailable(self) -> str | None:
        """Why this group cannot be made, or None."""
        raise NotImplementedError

    def configure(self, path: Path) -> None:
        """Write the group's control files once it exists (subclasses)."""

    @property
    def applied(self) -> bool:
        """Whether the group exists and holds the processes moved in."""
        return self.path is not None

    def open(self) -> "Group":
        """Create the group and configure it; on failure record ``reason`` and stay unapplied."""
        self.reason = self.unavailable()
        if self.reason:
            return self
        reap(self.root)
        path = self.owner_dir / self._label
        try:
            path.mkdir(parents=True)
            self.path = path
            _ACTIVE.add(self)
            self.configure(path)
        except OSError as exc:
            self.reason = f"cannot set up {path}: {exc}"
            self.close()
        return self

    def add(self, pids: Iterable[int]) -> list[int]:
        """Move ``pids`` (whole processes, every thread) into the cgroup; return those moved."""
        if self.path is None:
            return []
        moved = []
        for pid in pids:
            home = _cgroup_of(pid, self.root, self.CONTROLLER)
            try:
                (self.path / "cgroup.procs").write_text(f"{pid}\n")
            except ProcessLookupError:
                continue  # exited meanwhile
            self._home.setdefault(pid, home or self.root)
            moved.append(pid)
        return moved

    def pids(self) -> list[int]:
        """The processes in the cgroup now (including children they forked inside)."""
        if self.path is None:
            return []
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def close(self) -> None:
        """Move every process back where it came from and remove the cgroup; safe to call twice."""
        path = self.path
        if path is None:
            _ACTIVE.discard(self)
            return
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



class Throttle(Group):
    """A blkio cgroup that holds some processes under :class:`DiskLimits` (use :func:`throttle`).

    When throttling is not possible, ``applied`` is False and ``reason`` says why; nothing
    is created and :meth:`counters` is empty, so a caller can go on unthrottled.
    """

    CONTROLLER = "blkio"

    def __init__(self, limits: DiskLimits | None, device: str, *, label: str = "group",
                 root: str | os.PathLike | None = None):
        super().__init__(label=label, root=root)
        self.limits = limits
        self.device = device

    @classmethod
    def default_root(cls) -> Path:
        return BLKIO_ROOT

    def unavailable(self) -> str | None:
        if self.limits is None:
            return "profile without limits"
        return unavailable_reason(self.root)

    def configure(self, path: Path) -> None:
        try:
            for name, line in self.limits.files(self.device).items():
                (path / name).write_text(line + "\n")
        except OSError as exc:
            raise OSError(f"cannot set blkio limits on {self.device}: {exc}") from exc

    def counters(self) -> dict[str, int]:
        """Cumulative I/O of the cgroup's processes on the device (``blkio.throttle.io_serviced``...)."""
        if self.path is None:
            return {}
        out = {}
        for name, kind in (("blkio.throttle.io_serviced", "ios"), ("blkio.throttle.io_service_bytes", "bytes")):
            try:
                text = (self.path / name).read_text()
            except OSError:
                continue
            for line in text.splitlines():
                f = line.split()
                if len(f) == 3 and f[0] == self.device and f[1] in ("Read", "Write"):
                    out[f"cgroup_{f[1].lower()}_{kind}"] = int(f[2])
        return out

    def metadata(self) -> dict:
        """What the run records: limits, device, cgroup, or why nothing was applied."""
        return {"applied": self.applied, "reason": self.reason, "device": self.device,
                "limits": dataclasses.asdict(self.limits) if self.limits else None,
                "cgroup": str(self.path) if self.path else None,
                "mechanism": "cgroup v1 blkio.throttle.{read,write}_{iops,bps}_device" if self.applied else None}

@contextlib.contextmanager
def throttle(pids: Iterable[int], limits: DiskLimits | None, *, device: str, label: str = "group",
             root: str | os.PathLike | None = None) -> Iterator[Throttle]:
    """Hold ``pids`` under ``limits`` on ``device`` for the ``with`` block, then undo everything.

    Creates ``<root>/ingestlab-<this pid>/<label>-<n>``, writes the limits, moves the
    processes in (children they fork inherit the group), and on leaving — normally, on an
    exception or on Ctrl-C — moves every process in the group back to the cgroup it came
    from and removes the group. A group left behind by a process that was killed is
    removed by :func:`reap`, which this function also runs first.

    When throttling is impossible (no v1 blkio hierarchy, not root, a device that takes no
    limits) the block still runs, unthrottled, and ``Throttle.applied`` is False with the
    reason in ``Throttle.reason``.

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
        The blkio hierarchy (default :data:`BLKIO_ROOT`, read when called).
    """
    group = Throttle(limits, device, label=label, root=root).open()
    try:
        group.add(pids)
        yield group
    finally:
        group.close()


class MemoryCap(Group):
    """A memory cgroup whose limit holds its processes' OS page cache to a budget (use :func:`memory_cap`).

    Processes are moved in without a limit; :meth:`cap` then sets ``memory.limit_in_bytes``
    to what they hold and cannot hand back (anonymous and shared memory: with no swap, the
    kernel can only evict file pages) plus some free memory, which the OS page cache and
    the processes' further memory share. From then on the kernel evicts the group's file
    pages beyond that, and a read of an evicted page goes to the disk — counted by the blkio
    throttle, the device and the engine. A statement that needs more than the free memory
    is killed by the kernel (:meth:`oom_kills`).

    Pages are charged to the group of the process that first touches them, and this kernel
    does not move charges with a process (``memory.move_charge_at_immigrate`` is gone): move
    a server in right after it starts, before it reads or writes its data.
    """

    CONTROLLER = "memory"

    def __init__(self, *, label: str = "group", root: str | os.PathLike | None = None):
        super().__init__(label=label, root=root)
        self.limit: dict[str, int] | None = None

    @classmethod
    def default_root(cls) -> Path:
        return MEMORY_ROOT

    def unavailable(self) -> str | None:
        return memory_unavailable_reason(self.root)

    def stat(self) -> dict[str, int]:
        """The group's own ``memory.stat`` (bytes and event counts); empty when not applied."""
        if self.path is None:
            return {}
        try:
            text = (self.path / "memory.stat").read_text()
        except OSError:
            return {}
        return {k: int(v) for k, v in (line.split() for line in text.splitlines())}

    def _read(self, name: str) -> int | None:
        try:
            return int((self.path / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def cap(self, free_bytes: int, *, attempts: int = 5) -> dict[str, int]:
        """Set the limit to the memory the processes hold now plus ``free_bytes``; return the parts.

        ``free_bytes`` is what the OS page cache and the processes' further memory (a
        statement's parse tree, sorts...) then share, as the free RAM of a small machine.
        Dirty pages are written first (``sync``) so that the kernel can evict down to the new
        limit at once; it retries while the kernel reports it could not (``EBUSY``).

        Returns
        -------
        dict
            ``limit_bytes``, ``held_bytes`` (anonymous + shared memory when capped),
            ``free_bytes``, ``page_cache_before_bytes``; empty when the group is not applied.
        """
        if self.path is None:
            return {}
        for attempt in range(attempts):
            os.sync()
            st = self.stat()
            held = st.get("rss", 0) + st.get("shmem", 0)
            limit = held + int(free_bytes)
            try:
                (self.path / "memory.limit_in_bytes").write_text(f"{limit}\n")
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or attempt == attempts - 1:
                    raise
                time.sleep(0.5)
        self.limit = {"limit_bytes": limit, "held_bytes": held, "free_bytes": int(free_bytes),
                      "page_cache_before_bytes": st.get("cache", 0) - st.get("shmem", 0)}
        return dict(self.limit)

    def reset_peak(self) -> None:
        """Start a new peak for :meth:`levels`' ``mem_peak_bytes`` (``memory.max_usage_in_bytes``)."""
        if self.path is not None:
            with contextlib.suppress(OSError):
                (self.path / "memory.max_usage_in_bytes").write_text("0\n")

    def levels(self) -> dict[str, int]:
        """What the group holds now: page cache, anonymous and shared memory, the peak since :meth:`reset_peak`.

        Returns
        -------
        dict
            ``mem_page_cache_bytes`` (file pages: ``cache`` − ``shmem``), ``mem_anon_bytes``,
            ``mem_shmem_bytes``, ``mem_peak_bytes``, ``mem_failcnt`` (times the limit was hit,
            cumulative); empty when not applied.
        """
        st = self.stat()
        if not st:
            return {}
        return {"mem_page_cache_bytes": st.get("cache", 0) - st.get("shmem", 0), "mem_anon_bytes": st.get("rss", 0),
                "mem_shmem_bytes": st.get("shmem", 0), "mem_peak_bytes": self._read("memory.max_usage_in_bytes"),
                "mem_failcnt": self._read("memory.failcnt")}

    def oom_kills(self) -> int:
        """Processes of the group the kernel killed for want of memory (``memory.oom_control``)."""
        if self.path is None:
            return 0
        with contextlib.suppress(OSError):
            for line in (self.path / "memory.oom_control").read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        return 0

    def metadata(self) -> dict:
        """What the run records: the limit and its parts, the peak, OOM kills, or why nothing was applied."""
        return {"applied": self.applied, "reason": self.reason, "cgroup": str(self.path) if self.path else None,
                "mechanism": "cgroup v1 memory.limit_in_bytes" if self.applied else None, **(self.limit or {}),
                "oom_kills": self.oom_kills()}


@contextlib.contextmanager
def memory_cap(pids: Iterable[int], *, label: str = "group",
               root: str | os.PathLike | None = None) -> Iterator[MemoryCap]:
    """Hold ``pids`` in a memory cgroup, without a limit until :meth:`MemoryCap.cap`, for the ``with`` block.

    Like :func:`throttle`: on leaving (normally, on an exception or Ctrl-C) the processes
    still in the group go back where they came from and the group is removed; where a
    memory cgroup is impossible the block runs without one and ``applied`` is False.
    """
    group = MemoryCap(label=label, root=root).open()
    try:
        group.add(pids)
        yield group
    finally:
        group.close()


class CpuAccount(Group):
    """A cpuacct cgroup that counts the CPU time its processes use, and that of the children they fork after.

    Move a server in once it runs: the backends it forks for later connections are counted
    too, so :meth:`usage_ns` before and after a run is the server's CPU for that run (the
    benchmarks divide it by the statements to get the server's CPU per statement).
    """

    CONTROLLER = "cpuacct"

    @classmethod
    def default_root(cls) -> Path:
        return CPUACCT_ROOT

    def unavailable(self) -> str | None:
        return cpuacct_unavailable_reason(self.root)

    def usage_ns(self) -> int | None:
        """CPU time (user + system, ns) the group's processes have used since they were moved in; None if not applied."""
        if self.path is None:
            return None
        try:
            return int((self.path / "cpuacct.usage").read_text())
        except (OSError, ValueError):
            return None


_ACTIVE: set[Group] = set()


def _close_active() -> None:
    for group in list(_ACTIVE):
        group.close()


atexit.register(_close_active)


def _cgroup_of(pid: int, root: Path, controller: str) -> Path | None:
    """The directory of ``pid``'s cgroup in ``controller``'s hierarchy (mounted at ``root``)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if controller in controllers.split(","):
            return root / rel.lstrip("/")
    return None


def _empty_and_remove(path: Path, home_of, timeout_s: float = 5.0) -> None:
    """Move every process out of ``path`` (to ``home_of(pid)``), then remove it, its sub-groups first."""
    for child in [p for p in path.iterdir() if p.is_dir()]:
        _empty_and_remove(child, home_of, timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return
        for pid in pids:
            home = home_of(pid)
            try:
                (home / "cgroup.procs").write_text(f"{pid}\n")
            except ProcessLookupError:
                pass
            except OSError:  # the home group is gone: the hierarchy's root always exists
                with contextlib.suppress(ProcessLookupError):
                    (_root_of(path) / "cgroup.procs").write_text(f"{pid}\n")
        try:
            path.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)  # a process forked while we moved the others


def _root_of(path: Path) -> Path:
    for parent in path.parents:
        if parent.name.startswith(PREFIX):
            return parent.parent
    return path.parent


def reap(root: str | os.PathLike | None = None) -> list[Path]:
    """Remove the lab's cgroups whose owning process is gone; return the groups removed.

    Their processes (a server that outlived a killed notebook kernel) are moved to the
    hierarchy's root first. Groups of live lab processes are left alone. ``root``: one
    hierarchy; by default both the blkio and the memory hierarchy.
    """
    removed: list[Path] = []
    for hierarchy in ([Path(root)] if root else [BLKIO_ROOT, MEMORY_ROOT]):
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
