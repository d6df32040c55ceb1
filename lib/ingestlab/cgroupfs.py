"""The kernel's cgroup hierarchies, v1 or v2 as ``/proc/self/mountinfo`` shows them: where each controller is."""

from __future__ import annotations

import abc
import contextlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, NamedTuple

if TYPE_CHECKING:
    from ingestlab.cgroups import DiskLimits

#: Where the kernel lists this process's mounts (cgroup hierarchies among them).
MOUNTINFO = Path("/proc/self/mountinfo")
#: cgroup v2 only: the sub-group of each lab group that holds its processes. A v2 group that
#: holds processes itself cannot enable controllers for sub-groups ("no internal processes"),
#: and a throttle nested in a memory cap (:meth:`Group.open`) needs just that.
LEAF = "procs"
#: The lab's two kinds of limit and the controller that gives each in cgroup v1 and in v2.
CONTROLLERS: dict[str, dict[int, str]] = {"io": {1: "blkio", 2: "io"}, "memory": {1: "memory", 2: "memory"},
                                          "cpu": {1: "cpuacct", 2: "cpu"}}


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
