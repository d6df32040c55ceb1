"""The lab's cgroups, v1 or v2 as the kernel mounts them: disk I/O limits, a memory cap, and the disk's own counters.

Every group lives at ``<hierarchy>/ingestlab-<pid of the owning Python process>/<label>-<n>``;
it is removed when its ``with`` block ends (also on an exception or Ctrl-C) or at exit, and
:func:`reap` removes those of processes that were killed. Which cgroup version serves a
limit is read from ``/proc/self/mountinfo`` (:func:`locate`): a cgroup v1 hierarchy of the
controller where one is mounted (a controller bound to v1 is not offered in v2), else the
cgroup v2 hierarchy when it offers the controller. :class:`CgroupV1` and :class:`CgroupV2`
hold what differs between the two: control files, counters, where processes are placed.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import dataclasses
import errno
import itertools
import logging
import os
import re
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Iterator, NamedTuple

from ingestlab.polling import poll
from ingestlab.servers.base import is_running

log = logging.getLogger(__name__)

#: Where the kernel lists this process's mounts (cgroup hierarchies among them).
MOUNTINFO = Path("/proc/self/mountinfo")
#: Name prefix of the lab's cgroups: ``ingestlab-<pid of the owning Python process>``.
PREFIX = "ingestlab-"
SECTOR_BYTES = 512
#: cgroup v2 only: the sub-group of each lab group that holds its processes. A v2 group that
#: holds processes itself cannot enable controllers for sub-groups ("no internal processes"),
#: and a throttle nested in a memory cap (:meth:`Group.open`) needs just that.
LEAF = "procs"
#: The lab's two kinds of limit and the controller that gives each in cgroup v1 and in v2.
CONTROLLERS: dict[str, dict[int, str]] = {"io": {1: "blkio", 2: "io"}, "memory": {1: "memory", 2: "memory"},
                                          "cpu": {1: "cpuacct", 2: "cpu"}}


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


# -- the kernel's text -------------------------------------------------------------------
class Mount(NamedTuple):
    """A mounted cgroup hierarchy: its mount point, the cgroup path it shows as its root, its version."""

    path: Path
    root: str
    version: int


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts(mountinfo: str) -> dict[str, Mount]:
    """The cgroup hierarchies in ``/proc/<pid>/mountinfo`` text: v1 ones by controller, v2 as ``"cgroup2"``.

    The first mount of a hierarchy wins (the same one may be mounted twice).

    Examples
    --------
    >>> text = ("38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\\n"
    ...         "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\\n")
    >>> found = mounts(text)
    >>> str(found["blkio"].path), found["blkio"].version, str(found["cgroup2"].path)
    ('/sys/fs/cgroup/blkio', 1, '/sys/fs/cgroup/unified')
    """
    found: dict[str, Mount] = {}
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if not sep or len(fields) < 5 or len(after) < 3 or after[0] not in ("cgroup", "cgroup2"):
            continue
        path, root = Path(_unescape(fields[4])), _unescape(fields[3])
        if after[0] == "cgroup2":
            found.setdefault("cgroup2", Mount(path, root, 2))
            continue
        for option in after[2].split(","):
            if (option not in ("rw", "ro") and "=" not in option) or option.startswith("name="):
                found.setdefault(option, Mount(path, root, 1))
    return found


def parse_keyed(text: str) -> dict[str, int]:
    """``key value`` lines as a dict (``memory.stat``, ``memory.events``, ``memory.oom_control``).

    Examples
    --------
    >>> parse_keyed("anon 1228800\\nfile 4096\\nshmem 0\\n")
    {'anon': 1228800, 'file': 4096, 'shmem': 0}
    """
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].lstrip("-").isdigit():
            out[fields[0]] = int(fields[1])
    return out


def parse_io_stat(text: str, device: str) -> dict[str, int]:
    """The counters of ``device`` in cgroup v2 ``io.stat`` text; empty when it has none (no I/O yet).

    Examples
    --------
    >>> parse_io_stat("8:0 rbytes=0 wbytes=0 rios=0 wios=0 dbytes=0 dios=0\\n"
    ...               "254:0 rbytes=90112 wbytes=8192 rios=22 wios=2 dbytes=0 dios=0\\n", "254:0")
    {'rbytes': 90112, 'wbytes': 8192, 'rios': 22, 'wios': 2, 'dbytes': 0, 'dios': 0}
    """
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == device:
            return {key: int(value) for key, value in (f.split("=", 1) for f in fields[1:])}
    return {}


def parse_blkio(text: str, device: str) -> dict[str, int]:
    """``Read`` and ``Write`` of ``device`` in cgroup v1 ``blkio.throttle.io_serviced`` (or ``…_bytes``) text.

    Examples
    --------
    >>> parse_blkio("254:0 Read 22\\n254:0 Write 2\\n254:0 Sync 2\\n254:0 Async 22\\n254:0 Total 24\\nTotal 24\\n",
    ...             "254:0")
    {'read': 22, 'write': 2}
    """
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] == device and fields[1] in ("Read", "Write"):
            out[fields[1].lower()] = int(fields[2])
    return out


# -- the two versions ----------------------------------------------------------------------
class Hierarchy(abc.ABC):
    """One mounted cgroup hierarchy serving one of :data:`CONTROLLERS`: its files and its rules.

    :class:`Group` does the rest the same way for both versions (create, move processes in,
    move them back, remove). Memory figures come back under one set of names whatever the
    version: ``anon`` (anonymous memory), ``file`` (file pages, ``shmem`` included),
    ``shmem``.
    """

    #: 1 or 2.
    VERSION: ClassVar[int] = 0
    #: How each kind of limit is set, as recorded in ``run.json``.
    MECHANISM: ClassVar[dict[str, str]] = {}
    #: The control file of a group's memory limit.
    MEMORY_LIMIT_FILE: ClassVar[str] = ""
    #: Keys of ``memory.stat`` that hold anonymous memory, file pages and shared memory.
    MEMORY_STAT_KEYS: ClassVar[dict[str, str]] = {}

    def __init__(self, root: str | os.PathLike, controller: str, mount_root: str = "/"):
        self.root = Path(root)
        self.controller = controller
        self.mount_root = mount_root

    @property
    def name(self) -> str:
        """The controller's name in this version (``blkio`` or ``io``, ``memory``)."""
        return CONTROLLERS[self.controller][self.VERSION]

    @abc.abstractmethod
    def unavailable(self) -> str | None:
        """Why no group with this controller can be made here, or None."""

    @abc.abstractmethod
    def _owns(self, hierarchy_id: str, controllers: str) -> bool:
        """Whether a ``/proc/<pid>/cgroup`` line (its first two fields) is this hierarchy's."""

    def cgroup_of(self, pid: int) -> Path | None:
        """The directory of ``pid``'s cgroup in this hierarchy, or None (exited, or not visible)."""
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            hierarchy_id, controllers, rel = line.split(":", 2)
            if self._owns(hierarchy_id, controllers):
                if self.mount_root != "/" and rel.startswith(self.mount_root):
                    rel = rel[len(self.mount_root):]
                return self.root / rel.lstrip("/")
        return None

    def create(self, path: Path) -> None:
        """Make the group ``path`` (and the folders above it)."""
        path.mkdir(parents=True)

    def procs_file(self, group: Path) -> Path:
        """The ``cgroup.procs`` file that processes are written to, to place them in ``group``."""
        return group / "cgroup.procs"

    def release(self) -> None:  # noqa: B027 - a hook: only v2 holds a file open (memory.peak)
        """Let go of what the hierarchy holds open for a group (nothing, unless a subclass says)."""

    @abc.abstractmethod
    def set_io_limits(self, group: Path, limits: DiskLimits, device: str) -> None:
        """Write ``limits`` on ``device`` to ``group``'s control files."""

    @abc.abstractmethod
    def io_counters(self, group: Path, device: str) -> dict[str, int]:
        """Cumulative I/O of ``group`` on ``device``: ``cgroup_{read,write}_{ios,bytes}``."""

    def set_memory_limit(self, group: Path, limit_bytes: int) -> None:
        """Write ``group``'s memory limit (raises ``OSError`` with ``EBUSY`` when v1 cannot evict down to it yet)."""
        (group / self.MEMORY_LIMIT_FILE).write_text(f"{limit_bytes}\n")

    def memory_stat(self, group: Path) -> dict[str, int]:
        """``anon``, ``file`` and ``shmem`` bytes of ``group``; empty when it cannot be read."""
        st = _keyed(group / "memory.stat")
        return {name: st.get(key, 0) for name, key in self.MEMORY_STAT_KEYS.items()} if st else {}

    @abc.abstractmethod
    def cpu_usage_ns(self, group: Path) -> int | None:
        """CPU time (user + system, ns) of ``group``'s processes since they were moved in; None when unreadable."""

    @abc.abstractmethod
    def memory_events(self, group: Path) -> dict[str, int]:
        """``limit_hits`` (times usage reached the limit) and ``oom_kills`` of ``group``, cumulative."""

    @abc.abstractmethod
    def reset_peak(self, group: Path) -> None:
        """Start a new peak of memory use for :meth:`peak`."""

    @abc.abstractmethod
    def peak(self, group: Path) -> int | None:
        """The most memory ``group`` used since :meth:`reset_peak` (or since it was made)."""


def _keyed(path: Path) -> dict[str, int]:
    """:func:`parse_keyed` of the file ``path``; empty when it cannot be read."""
    try:
        return parse_keyed(path.read_text())
    except OSError:
        return {}


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _unwritable(root: Path) -> str | None:
    if os.geteuid() != 0 and not os.access(root, os.W_OK):
        return f"moving processes between cgroups under {root} needs root (running as uid {os.geteuid()})"
    return None


class CgroupV1(Hierarchy):
    """A cgroup v1 hierarchy: one per controller (``blkio``, ``memory``), groups side by side."""

    VERSION = 1
    MECHANISM = {"io": "cgroup v1 blkio.throttle.{read,write}_{iops,bps}_device", "cpu": "cgroup v1 cpuacct.usage",
                 "memory": "cgroup v1 memory.limit_in_bytes"}
    MEMORY_LIMIT_FILE = "memory.limit_in_bytes"
    MEMORY_STAT_KEYS = {"anon": "rss", "file": "cache", "shmem": "shmem"}

    def unavailable(self) -> str | None:
        needed = {"io": "blkio.throttle.read_iops_device", "memory": "memory.limit_in_bytes",
                  "cpu": "cpuacct.usage"}[self.controller]
        if not (self.root / "cgroup.procs").exists() or not (self.root / needed).exists():
            return f"no cgroup v1 {self.name} hierarchy at {self.root} (no {needed})"
        return _unwritable(self.root)

    def _owns(self, hierarchy_id: str, controllers: str) -> bool:
        return self.name in controllers.split(",")

    def set_io_limits(self, group: Path, limits: DiskLimits, device: str) -> None:
        for name, line in limits.files(device).items():
            (group / name).write_text(line + "\n")

    def io_counters(self, group: Path, device: str) -> dict[str, int]:
        out = {}
        for name, kind in (("blkio.throttle.io_serviced", "ios"), ("blkio.throttle.io_service_bytes", "bytes")):
            with contextlib.suppress(OSError):
                for direction, value in parse_blkio((group / name).read_text(), device).items():
                    out[f"cgroup_{direction}_{kind}"] = value
        return out

    def cpu_usage_ns(self, group: Path) -> int | None:
        return _read_int(group / "cpuacct.usage")

    def memory_events(self, group: Path) -> dict[str, int]:
        return {"limit_hits": _read_int(group / "memory.failcnt"),
                "oom_kills": _keyed(group / "memory.oom_control").get("oom_kill", 0)}

    def reset_peak(self, group: Path) -> None:
        with contextlib.suppress(OSError):
            (group / "memory.max_usage_in_bytes").write_text("0\n")

    def peak(self, group: Path) -> int | None:
        return _read_int(group / "memory.max_usage_in_bytes")


class CgroupV2(Hierarchy):
    """The cgroup v2 hierarchy: one tree for every controller, so a group nests in the lab group its processes are in.

    A process is in one v2 group only: a throttle opened on processes that sit in a memory
    cap is made inside the cap's group (:meth:`Group.open`), so that the cap still holds
    them. Controllers are enabled for sub-groups (``cgroup.subtree_control``) from the root
    down to the group's parent where they are not yet; every lab group keeps its processes
    in its sub-group :data:`LEAF`. Limits and counters are the group's own files, which
    count its sub-groups too: ``io.max``/``io.stat``, ``memory.max``/``memory.stat``/
    ``memory.events``/``memory.peak``.
    """

    VERSION = 2
    MECHANISM = {"io": "cgroup v2 io.max (riops, wiops, rbps, wbps)", "memory": "cgroup v2 memory.max",
                 "cpu": "cgroup v2 cpu.stat usage_usec"}
    MEMORY_LIMIT_FILE = "memory.max"
    MEMORY_STAT_KEYS = {"anon": "anon", "file": "file", "shmem": "shmem"}

    def __init__(self, root: str | os.PathLike, controller: str, mount_root: str = "/"):
        super().__init__(root, controller, mount_root)
        self._peak_fd: int | None = None

    def offered(self) -> list[str]:
        """The controllers the hierarchy's root offers (``cgroup.controllers``)."""
        try:
            return (self.root / "cgroup.controllers").read_text().split()
        except OSError:
            return []

    def unavailable(self) -> str | None:
        if not (self.root / "cgroup.controllers").exists():
            return f"no cgroup v2 hierarchy at {self.root}"
        if self.name not in self.offered():
            return (f"the cgroup v2 hierarchy at {self.root} does not offer the {self.name} controller "
                    f"(it offers: {' '.join(self.offered()) or 'none'}; a controller bound to cgroup v1 is not offered in v2)")
        return _unwritable(self.root)

    def _owns(self, hierarchy_id: str, controllers: str) -> bool:
        return hierarchy_id == "0" and controllers == ""

    def create(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        above = path.parent.relative_to(self.root)
        for folder in dict.fromkeys([self.root, *(self.root / p for p in reversed(above.parents[:-1])), path.parent]):
            control = folder / "cgroup.subtree_control"
            if self.name not in control.read_text().split():
                control.write_text(f"+{self.name}\n")
        path.mkdir()
        (path / LEAF).mkdir()

    def procs_file(self, group: Path) -> Path:
        return group / LEAF / "cgroup.procs"

    def release(self) -> None:
        fd, self._peak_fd = self._peak_fd, None
        if fd is not None:
            os.close(fd)

    def set_io_limits(self, group: Path, limits: DiskLimits, device: str) -> None:
        (group / "io.max").write_text(limits.io_max(device) + "\n")

    def io_counters(self, group: Path, device: str) -> dict[str, int]:
        try:
            st = parse_io_stat((group / "io.stat").read_text(), device)
        except OSError:
            return {}
        return {f"cgroup_{direction}_{kind}": st.get(f"{direction[0]}{kind}", 0)
                for direction in ("read", "write") for kind in ("ios", "bytes")}

    def cpu_usage_ns(self, group: Path) -> int | None:
        usec = _keyed(group / "cpu.stat").get("usage_usec")  # present whether the cpu controller is enabled or not
        return None if usec is None else usec * 1000

    def memory_events(self, group: Path) -> dict[str, int]:
        events = _keyed(group / "memory.events")
        return {"limit_hits": events.get("max", 0), "oom_kills": events.get("oom_kill", 0)}

    def reset_peak(self, group: Path) -> None:
        # since Linux 6.12 writing to memory.peak resets the peak seen through that open file only
        self.release()
        try:
            self._peak_fd = os.open(group / "memory.peak", os.O_RDWR)
            os.write(self._peak_fd, b"reset\n")
        except OSError:  # older kernels: read-only, the peak since the group was made
            self.release()

    def peak(self, group: Path) -> int | None:
        if self._peak_fd is None:
            return _read_int(group / "memory.peak")
        try:
            return int(os.pread(self._peak_fd, 64, 0).split()[0])
        except (OSError, ValueError, IndexError):
            return None


def locate(controller: str, root: str | os.PathLike | None = None) -> tuple[Hierarchy | None, str | None]:
    """The hierarchy serving ``controller`` (``"io"`` or ``"memory"``), or None and why none does.

    Without ``root``, from what the kernel mounts (:data:`MOUNTINFO`): the controller's cgroup
    v1 hierarchy where one is mounted, else the cgroup v2 hierarchy when it offers the
    controller. With ``root``, the hierarchy mounted there (v2 when it has ``cgroup.controllers``).
    Whether a group can really be made there is :meth:`Hierarchy.unavailable`.
    """
    if controller not in CONTROLLERS:
        raise ValueError(f"controller={controller!r} is not valid: expected one of {sorted(CONTROLLERS)}")
    if root is not None:
        root = Path(root)
        if (root / "cgroup.controllers").exists():
            return CgroupV2(root, controller), None
        if (root / "cgroup.procs").exists():
            return CgroupV1(root, controller), None
        return None, f"no cgroup hierarchy at {root}"
    try:
        found = mounts(MOUNTINFO.read_text())
    except OSError as exc:
        return None, f"cannot read {MOUNTINFO}: {exc}"
    v1_name, v2_name = CONTROLLERS[controller][1], CONTROLLERS[controller][2]
    if v1_name in found:
        return CgroupV1(found[v1_name].path, controller, found[v1_name].root), None
    v2 = found.get("cgroup2")
    if v2 is None:
        return None, f"no cgroup hierarchy offers {v2_name}: no cgroup v1 {v1_name} hierarchy and no cgroup v2 is mounted"
    hierarchy = CgroupV2(v2.path, controller, v2.root)
    if v2_name not in hierarchy.offered():
        return None, (f"no cgroup hierarchy offers {v2_name}: no cgroup v1 {v1_name} hierarchy is mounted, and "
                      f"{hierarchy.unavailable()}")
    return hierarchy, None


def roots() -> list[Path]:
    """Every hierarchy the lab may have made groups in: cgroup v1 blkio and memory, and cgroup v2."""
    try:
        found = mounts(MOUNTINFO.read_text())
    except OSError:
        return []
    names = [CONTROLLERS[c][1] for c in CONTROLLERS] + ["cgroup2"]
    return list(dict.fromkeys(found[n].path for n in names if n in found))


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
