import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from ingestlab import cgroupfs, cgroups
from ingestlab.cgroups import DiskLimits


def _needs(controller: str, version: int | None = None):
    """Skip unless the kernel's hierarchy for ``controller`` (of ``version``, if given) takes the lab's groups here."""
    hierarchy, missing = cgroupfs.locate(controller)
    reason = missing or hierarchy.unavailable()
    if reason is None and version is not None and hierarchy.VERSION != version:
        v2 = cgroupfs.mounts(cgroupfs.MOUNTINFO.read_text()).get("cgroup2")
        reason = f"{controller} is served by cgroup v{hierarchy.VERSION} here" + (
            f", and {cgroupfs.CgroupV2(v2.path, controller).unavailable()}" if v2 else ", and no cgroup v2 is mounted")
    where = f"cgroup v{version} {controller}" if version else f"{controller} cgroup"
    return pytest.mark.skipif(reason is not None, reason=f"no {where} here: {reason}")


needs_blkio = _needs("io")


needs_memory = _needs("memory")


needs_v2_io = _needs("io", 2)


needs_v2_memory = _needs("memory", 2)


LIMITS = DiskLimits(read_iops=375, write_iops=750, read_bps=60_000_000, write_bps=60_000_000)


IO, MEMORY = cgroupfs.locate("io")[0], cgroupfs.locate("memory")[0]


def _cgroup(pid: int, hierarchy: cgroupfs.Hierarchy) -> str:
    """``pid``'s cgroup in ``hierarchy``, read from ``/proc/<pid>/cgroup`` (v1: its controller's line, v2: ``0::``)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        hierarchy_id, controllers, rel = line.split(":", 2)
        if (hierarchy_id == "0") if hierarchy.VERSION == 2 else (hierarchy.name in controllers.split(",")):
            return rel
    raise AssertionError(f"no line of {hierarchy.name} in /proc/{pid}/cgroup")


def _inside(group: cgroups.Group) -> str:
    """The cgroup path a process moved into ``group`` shows (v2: the group's leaf)."""
    return "/" + str(group.hierarchy.procs_file(group.path).parent.relative_to(group.root))


def _limits_written(group: cgroups.Throttle) -> list[str]:
    """The limit lines the kernel shows for ``group``, sorted (v1: one file per limit, v2: ``io.max``)."""
    if group.hierarchy.VERSION == 2:
        return (group.path / "io.max").read_text().split()
    return sorted(" ".join((group.path / name).read_text().split()) for name in LIMITS.files(group.device))


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def test_device_of_names_a_whole_disk(tmp_path):
    dev = cgroups.device_of(tmp_path)
    major, minor = dev.split(":")
    assert major.isdigit() and minor.isdigit()
    assert not (Path("/sys/dev/block") / dev / "partition").exists()


def test_disk_counters_of_the_data_disk_are_cumulative(tmp_path):
    dev = cgroups.device_of(tmp_path)
    before = cgroups.disk_counters(dev)
    if not before:
        pytest.skip(f"{tmp_path} is on a file system without a block device in /proc/diskstats")
    assert set(before) == {"read_ios", "read_bytes", "write_ios", "write_bytes"}
    # real I/O in between: 8 MiB written and fsynced, dropped from the page cache, read back
    size = 8 * 2**20
    path = tmp_path / "io"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, np.random.default_rng(0).bytes(size))
        os.fsync(fd)
        written = cgroups.disk_counters(dev)
        os.posix_fadvise(fd, 0, size, os.POSIX_FADV_DONTNEED)
        assert len(os.pread(fd, size, 0)) == size
    finally:
        os.close(fd)
    after = cgroups.disk_counters(dev)
    assert written["write_bytes"] - before["write_bytes"] >= size
    assert written["write_ios"] - before["write_ios"] >= 1
    assert after["read_bytes"] - written["read_bytes"] >= size, "8 MiB read back from the disk, not the page cache"
    assert after["read_ios"] - written["read_ios"] >= 1
    assert all(after[k] >= written[k] >= before[k] for k in before)


def test_local_profile_creates_no_cgroup(tmp_path):
    with cgroups.throttle([os.getpid()], None, device="254:0", root=tmp_path) as group:
        assert not group.applied and group.reason == "profile without limits"
    assert list(tmp_path.iterdir()) == []


def test_without_a_blkio_hierarchy_the_block_runs_unthrottled_and_says_why(tmp_path):
    ran = False
    with cgroups.throttle([os.getpid()], LIMITS, device="254:0", root=tmp_path / "nothing") as group:
        ran = True
        assert group.counters() == {}
    assert ran and not group.applied
    assert group.reason == f"no cgroup hierarchy at {tmp_path / 'nothing'}"
    assert group.metadata()["applied"] is False


@needs_blkio
def test_processes_are_limited_inside_and_put_back_after(tmp_path, sleeper):
    dev = cgroups.device_of(tmp_path)
    home = _cgroup(sleeper.pid, IO)
    with cgroups.throttle([sleeper.pid], LIMITS, device=dev, label="test") as group:
        assert group.applied, group.reason
        assert _cgroup(sleeper.pid, IO) == _inside(group)
        assert group.pids() == [sleeper.pid]
        if group.hierarchy.VERSION == 1:
            assert _limits_written(group) == [f"{dev} 375", f"{dev} 60000000", f"{dev} 60000000", f"{dev} 750"]
        else:
            assert _limits_written(group) == [dev, "rbps=60000000", "wbps=60000000", "riops=375", "wiops=750"]
        assert group.metadata()["cgroup_version"] == group.hierarchy.VERSION
        assert set(group.counters()) >= {"cgroup_read_ios", "cgroup_write_ios"}
        path = group.path
    assert not path.exists() and not path.parent.exists()
    assert _cgroup(sleeper.pid, IO) == home


@needs_blkio
def test_the_cgroup_is_removed_after_an_exception_inside(tmp_path):
    home = _cgroup(os.getpid(), IO)
    with pytest.raises(RuntimeError, match="boom"):
        with cgroups.throttle([os.getpid()], LIMITS, device=cgroups.device_of(tmp_path), label="test") as group:
            path = group.path
            assert _cgroup(os.getpid(), IO) != home
            raise RuntimeError("boom")
    assert not path.exists()
    assert _cgroup(os.getpid(), IO) == home


@needs_blkio
def test_children_forked_inside_are_moved_out_too(tmp_path):
    parent = subprocess.Popen(["bash", "-c", "read go; sleep 60 & echo $!; wait"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    home, child = _cgroup(parent.pid, IO), None
    try:
        with cgroups.throttle([parent.pid], LIMITS, device=cgroups.device_of(tmp_path), label="test") as group:
            parent.stdin.write("go\n")
            parent.stdin.flush()
            child = int(parent.stdout.readline())
            assert sorted(group.pids()) == sorted([parent.pid, child])  # the child inherited the group
            path = group.path
        assert not path.exists()
        assert _cgroup(child, IO) == _cgroup(parent.pid, IO) == home
    finally:
        if child is not None:
            os.kill(child, signal.SIGKILL)
        parent.kill()
        parent.wait()


@needs_blkio
def test_reap_removes_the_groups_of_a_killed_owner(tmp_path, sleeper):
    code = textwrap.dedent(f"""
        import os
        from ingestlab import cgroupfs, cgroups
        group = cgroups.Throttle(cgroups.DiskLimits(read_iops=375), {cgroups.device_of(tmp_path)!r}, label="orphan").open()
        group.add([{sleeper.pid}])
        print(group.path, flush=True)
        os._exit(0)  # killed: no cleanup runs
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    path = Path(out.stdout.split()[-1])
    assert path.exists() and _cgroup(sleeper.pid, IO).startswith("/" + str(path.relative_to(IO.root)))
    deadline = time.monotonic() + 5
    while not cgroups.reap() and time.monotonic() < deadline:  # the owner may still be exiting
        time.sleep(0.05)
    assert not path.parent.exists()
    assert _cgroup(sleeper.pid, IO) == "/"


@needs_blkio
def test_reap_leaves_groups_of_live_owners_alone(tmp_path):
    with cgroups.throttle([os.getpid()], LIMITS, device=cgroups.device_of(tmp_path), label="test") as group:
        assert group.path not in cgroups.reap() and group.path.exists()


def test_profiles_are_the_seeds_volume_and_its_reads_alone():
    full, reads = cgroups.PROFILES["cloud-375"], cgroups.PROFILES["cloud-375-reads"]
    assert full.files("254:0") == {
        "blkio.throttle.read_iops_device": "254:0 375", "blkio.throttle.write_iops_device": "254:0 750",
        "blkio.throttle.read_bps_device": "254:0 60000000", "blkio.throttle.write_bps_device": "254:0 60000000"}
    assert set(reads.files("254:0")) == {"blkio.throttle.read_iops_device", "blkio.throttle.read_bps_device"}
    assert cgroups.PROFILES["local"] is None


# -- the memory cap ----------------------------------------------------------------------
WRITER = textwrap.dedent("""
    import os, sys
    path = sys.argv[1]
    for line in sys.stdin:  # each line: megabytes to write and read back through the page cache
        chunk = os.urandom(1 << 20)  # small: the process's own memory counts against the cap too
        with open(path, "wb") as f:
            for _ in range(int(line)):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
        print("done", flush=True)
""")


@pytest.fixture
def writer(lab_tmp):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(lab_tmp / "pages.bin")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def write(mb: int) -> None:
        proc.stdin.write(f"{mb}\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"

    write.pid = proc.pid
    yield write
    proc.kill()
    proc.wait()


def test_without_a_memory_hierarchy_the_block_runs_uncapped_and_says_why(tmp_path):
    with cgroups.memory_cap([os.getpid()], root=tmp_path / "nothing") as cap:
        assert cap.cap(1 << 20) == {} and cap.levels() == {} and cap.oom_kills() == 0
    assert not cap.applied and cap.reason == f"no cgroup hierarchy at {tmp_path / 'nothing'}"
    assert cap.metadata()["applied"] is False and list(tmp_path.iterdir()) == []


@needs_memory
def test_the_cap_holds_the_page_cache_to_its_budget_and_is_removed_after(writer):
    home = _cgroup(writer.pid, MEMORY)
    with cgroups.memory_cap([writer.pid], label="test") as cap:
        assert cap.applied, cap.reason
        assert _cgroup(writer.pid, cap.hierarchy) == _inside(cap)
        writer(32)  # uncapped: the file stays cached, charged to the group
        assert cap.levels()["mem_page_cache_bytes"] >= 30 << 20
        parts = cap.cap(5 << 20)
        assert parts["limit_bytes"] == parts["held_bytes"] + (5 << 20)
        limit_file = "memory.max" if cap.hierarchy.VERSION == 2 else "memory.limit_in_bytes"
        assert int((cap.path / limit_file).read_text()) // 4096 == parts["limit_bytes"] // 4096
        assert cap.levels()["mem_page_cache_bytes"] <= 5 << 20  # evicted down to the cap at once
        cap.reset_peak()
        writer(32)  # writing and reading more than the cap: the kernel evicts instead
        levels = cap.levels()
        assert levels["mem_page_cache_bytes"] <= 6 << 20 and levels["mem_peak_bytes"] <= parts["limit_bytes"] + 4096
        assert cap.oom_kills() == 0 and cap.metadata()["limit_bytes"] == parts["limit_bytes"]
        path = cap.path
    assert not path.exists() and not path.parent.exists()
    assert _cgroup(writer.pid, MEMORY) == home


@needs_memory
def test_reap_removes_memory_groups_of_a_killed_owner(sleeper):
    code = textwrap.dedent(f"""
        import os
        from ingestlab import cgroupfs, cgroups
        group = cgroups.MemoryCap(label="orphan").open()
        group.add([{sleeper.pid}])
        print(group.path, flush=True)
        os._exit(0)  # killed: no cleanup runs
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    path = Path(out.stdout.split()[-1])
    assert path.exists() and _cgroup(sleeper.pid, MEMORY).startswith("/" + str(path.relative_to(MEMORY.root)))
    deadline = time.monotonic() + 5
    while path.parent.exists() and time.monotonic() < deadline:  # the owner may still be exiting
        cgroups.reap()
        time.sleep(0.05)
    assert not path.parent.exists()
    assert _cgroup(sleeper.pid, MEMORY) == "/"


V2_ONLY = """\
22 27 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw
29 22 0:26 / {path} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
"""


@pytest.mark.parametrize("offered, version, reason", [
    ("cpuset cpu io memory hugetlb pids rdma misc\n", 2, None),
    ("hugetlb\n", None, "no cgroup v1 blkio hierarchy is mounted, and the cgroup v2 hierarchy at {path} does not "
                        "offer the io controller (it offers: hugetlb; a controller bound to cgroup v1 is not "
                        "offered in v2)"),
    ("", None, "(it offers: none;"),
])
def test_v2_serves_a_limit_only_when_its_root_offers_the_controller(tmp_path, monkeypatch, offered, version, reason):
    (tmp_path / "cgroup.controllers").write_text(offered)
    (tmp_path / "mountinfo").write_text(V2_ONLY.format(path=tmp_path))
    monkeypatch.setattr(cgroupfs, "MOUNTINFO", tmp_path / "mountinfo")
    hierarchy, missing = cgroupfs.locate("io")
    if version is None:
        assert hierarchy is None and reason.format(path=tmp_path) in missing
        assert cgroups.unavailable_reason() == missing and cgroupfs.roots() == [tmp_path]
    else:
        assert missing is None and isinstance(hierarchy, cgroupfs.CgroupV2) and hierarchy.name == "io"
        assert hierarchy.root == tmp_path and cgroupfs.locate("memory")[0].name == "memory"


def test_without_any_cgroup_mount_the_reason_names_both_versions(tmp_path, monkeypatch):
    (tmp_path / "mountinfo").write_text("22 27 0:21 / /sys rw,relatime shared:2 - sysfs sysfs rw\n")
    monkeypatch.setattr(cgroupfs, "MOUNTINFO", tmp_path / "mountinfo")
    assert cgroups.memory_unavailable_reason() == ("no cgroup hierarchy offers memory: no cgroup v1 memory "
                                                   "hierarchy and no cgroup v2 is mounted")
    with cgroups.throttle([os.getpid()], LIMITS, device="254:0") as group:
        assert not group.applied and "no cgroup v1 blkio hierarchy" in group.reason
    assert group.metadata() == {"applied": False, "reason": group.reason, "cgroup": None, "cgroup_version": None,
                                "mechanism": None, "device": "254:0", "limits": dataclasses.asdict(LIMITS)}


# -- the control files' text -------------------------------------------------------------
def test_io_max_lines_of_the_profiles():
    assert cgroups.PROFILES["cloud-375"].io_max("254:0") == "254:0 riops=375 wiops=750 rbps=60000000 wbps=60000000"
    assert cgroups.PROFILES["cloud-375-reads"].io_max("8:16") == "8:16 riops=375 rbps=60000000"


# -- cgroup v2 on a real kernel ------------------------------------------------------------
@needs_v2_memory
@needs_v2_io
def test_v2_throttle_nests_inside_the_memory_cap_that_holds_the_process(tmp_path, sleeper):
    home = _cgroup(sleeper.pid, MEMORY)
    with cgroups.memory_cap([sleeper.pid], label="test") as cap:
        assert cap.applied, cap.reason
        assert _cgroup(sleeper.pid, MEMORY) == _inside(cap)
        with cgroups.throttle([sleeper.pid], LIMITS, device=cgroups.device_of(tmp_path), label="test") as group:
            assert group.applied, group.reason
            assert group.path.parent == cap.path  # still under the cap's memory.max
            assert _cgroup(sleeper.pid, IO) == _inside(group) and cap.pids() == [sleeper.pid]
            assert "io" in (cap.path / "cgroup.subtree_control").read_text().split()
        assert _cgroup(sleeper.pid, MEMORY) == _inside(cap)
        path = cap.path
    assert not path.exists() and _cgroup(sleeper.pid, MEMORY) == home


# -- cgroup v2 placement on this kernel, without controllers ------------------------------
V2_MOUNT = cgroupfs.mounts(cgroupfs.MOUNTINFO.read_text()).get("cgroup2")


class _PlacementOnly(cgroupfs.CgroupV2):
    """The v2 hierarchy mounted here, used for what needs no controller: groups, leaves, moving processes."""

    def unavailable(self):
        return None if (self.root / "cgroup.procs").exists() else f"no cgroup v2 hierarchy at {self.root}"

    def create(self, path):  # the controllers are bound to v1 here: nothing to enable for sub-groups
        path.mkdir(parents=True)
        (path / cgroupfs.LEAF).mkdir()


class _Placed(cgroups.Group):
    CONTROLLER = "memory"

    def __init__(self, label):
        super().__init__(label=label, root=V2_MOUNT.path)
        self.hierarchy, self._missing = _PlacementOnly(V2_MOUNT.path, "memory", V2_MOUNT.root), None


needs_v2_mount = pytest.mark.skipif(V2_MOUNT is None or os.geteuid() != 0,
                                    reason="no cgroup v2 mounted here, or not root")


@needs_v2_mount
def test_v2_groups_keep_processes_in_their_leaf_nest_and_put_them_back(sleeper):
    v2 = _PlacementOnly(V2_MOUNT.path, "memory", V2_MOUNT.root)
    home = _cgroup(sleeper.pid, v2)
    outer = _Placed("outer").open(near=[sleeper.pid])
    inner = None
    try:
        assert outer.applied, outer.reason
        assert outer.add([sleeper.pid]) == [sleeper.pid] and _cgroup(sleeper.pid, v2) == _inside(outer)
        inner = _Placed("inner").open(near=[sleeper.pid])
        assert inner.path.parent == outer.path  # made inside the group that holds the process
        inner.add([sleeper.pid])
        assert _cgroup(sleeper.pid, v2) == _inside(inner) and outer.pids() == inner.pids() == [sleeper.pid]
        inner.close()
        assert not inner.path and _cgroup(sleeper.pid, v2) == _inside(outer)  # back in the outer leaf
        path = outer.path
        outer.close()
        assert not path.exists() and _cgroup(sleeper.pid, v2) == home
    finally:
        for group in (inner, outer):
            if group is not None:
                group.close()


@needs_v2_mount
def test_reap_removes_v2_trees_of_a_killed_owner(sleeper):
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_cgroups import _Placed
        outer = _Placed("orphan").open(near=[{sleeper.pid}])
        outer.add([{sleeper.pid}])
        inner = _Placed("orphan").open(near=[{sleeper.pid}])
        inner.add([{sleeper.pid}])
        print(outer.path, flush=True)
        sys.stdin.readline()
        os._exit(0)  # killed: no cleanup runs
    """)
    # The owner lives until its tree is checked: once it is gone, any reap (another test's run) may take the tree.
    owner = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    path = Path(owner.stdout.readline().strip())
    v2 = _PlacementOnly(V2_MOUNT.path, "memory", V2_MOUNT.root)
    assert _cgroup(sleeper.pid, v2).startswith("/" + str(path.relative_to(V2_MOUNT.path)) + "/")
    owner.communicate("", timeout=30)
    assert owner.returncode == 0
    deadline = time.monotonic() + 5
    while path.parent.exists() and time.monotonic() < deadline:  # the owner may still be exiting
        cgroups.reap(V2_MOUNT.path)
        time.sleep(0.05)
    assert not path.parent.exists() and _cgroup(sleeper.pid, v2) == "/"


CPUACCT_REASON = cgroups.cpuacct_unavailable_reason()


@pytest.mark.skipif(CPUACCT_REASON is not None, reason=f"no cpuacct cgroup here: {CPUACCT_REASON}")
def test_cpu_account_counts_the_cpu_of_its_processes_and_of_their_later_children():
    script = textwrap.dedent("""
        import subprocess, sys, time
        sys.stdin.readline()
        subprocess.run([sys.executable, "-c", "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.3: pass"])
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, text=True)
    group = cgroups.CpuAccount(label="test-cpu").open()
    try:
        assert group.add([proc.pid]) == [proc.pid]
        before = group.usage_ns()
        proc.communicate("go\n", timeout=30)  # the child it forks now burns 0.3 s of CPU inside the group
        assert group.usage_ns() - before >= 0.25e9
    finally:
        group.close()
        proc.kill()
    assert group.usage_ns() is None and not group.applied
