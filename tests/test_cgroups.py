import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ingestlab import cgroups
from ingestlab.cgroups import DiskLimits

REASON = cgroups.unavailable_reason()
needs_blkio = pytest.mark.skipif(REASON is not None, reason=f"no blkio throttling here: {REASON}")
MEMORY_REASON = cgroups.memory_unavailable_reason()
needs_memory = pytest.mark.skipif(MEMORY_REASON is not None, reason=f"no memory cgroup here: {MEMORY_REASON}")
LIMITS = DiskLimits(read_iops=375, write_iops=750, read_bps=60_000_000, write_bps=60_000_000)


def _blkio_cgroup(pid: int, controller: str = "blkio") -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, rel = line.split(":", 2)
        if controller in controllers.split(","):
            return rel
    raise AssertionError(f"no {controller} line")


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
    after = cgroups.disk_counters(dev)
    assert set(before) == {"read_ios", "read_bytes", "write_ios", "write_bytes"}
    assert all(after[k] >= before[k] for k in before)


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
    assert "no cgroup v1 blkio hierarchy" in group.reason
    assert group.metadata()["applied"] is False


@needs_blkio
def test_processes_are_limited_inside_and_put_back_after(tmp_path, sleeper):
    dev = cgroups.device_of(tmp_path)
    home = _blkio_cgroup(sleeper.pid)
    with cgroups.throttle([sleeper.pid], LIMITS, device=dev, label="test") as group:
        assert group.applied, group.reason
        assert _blkio_cgroup(sleeper.pid) == "/" + str(group.path.relative_to(cgroups.BLKIO_ROOT))
        assert group.pids() == [sleeper.pid]
        assert (group.path / "blkio.throttle.read_iops_device").read_text().split() == [dev, "375"]
        assert (group.path / "blkio.throttle.write_bps_device").read_text().split() == [dev, "60000000"]
        assert set(group.counters()) >= {"cgroup_read_ios", "cgroup_write_ios"}
        path = group.path
    assert not path.exists() and not path.parent.exists()
    assert _blkio_cgroup(sleeper.pid) == home


@needs_blkio
def test_the_cgroup_is_removed_after_an_exception_inside(tmp_path):
    home = _blkio_cgroup(os.getpid())
    with pytest.raises(RuntimeError, match="boom"):
        with cgroups.throttle([os.getpid()], LIMITS, device=cgroups.device_of(tmp_path), label="test") as group:
            path = group.path
            assert _blkio_cgroup(os.getpid()) != home
            raise RuntimeError("boom")
    assert not path.exists()
    assert _blkio_cgroup(os.getpid()) == home


@needs_blkio
def test_children_forked_inside_are_moved_out_too(tmp_path):
    parent = subprocess.Popen(["bash", "-c", "read go; sleep 60 & echo $!; wait"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    home, child = _blkio_cgroup(parent.pid), None
    try:
        with cgroups.throttle([parent.pid], LIMITS, device=cgroups.device_of(tmp_path), label="test") as group:
            parent.stdin.write("go\n")
            parent.stdin.flush()
            child = int(parent.stdout.readline())
            assert sorted(group.pids()) == sorted([parent.pid, child])  # the child inherited the group
            path = group.path
        assert not path.exists()
        assert _blkio_cgroup(child) == _blkio_cgroup(parent.pid) == home
    finally:
        if child is not None:
            os.kill(child, signal.SIGKILL)
        parent.kill()
        parent.wait()


@needs_blkio
def test_reap_removes_the_groups_of_a_killed_owner(tmp_path, sleeper):
    code = textwrap.dedent(f"""
        import os
        from ingestlab import cgroups
        group = cgroups.Throttle(cgroups.DiskLimits(read_iops=375), {cgroups.device_of(tmp_path)!r}, label="orphan").open()
        group.add([{sleeper.pid}])
        print(group.path, flush=True)
        os._exit(0)  # killed: no cleanup runs
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    path = Path(out.stdout.split()[-1])
    assert path.exists() and _blkio_cgroup(sleeper.pid).endswith(path.name)
    deadline = time.monotonic() + 5
    while not cgroups.reap() and time.monotonic() < deadline:  # the owner may still be exiting
        time.sleep(0.05)
    assert not path.parent.exists()
    assert _blkio_cgroup(sleeper.pid) == "/"


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
    assert not cap.applied and "no cgroup v1 memory hierarchy" in cap.reason
    assert cap.metadata()["applied"] is False and list(tmp_path.iterdir()) == []


@needs_memory
def test_the_cap_holds_the_page_cache_to_its_budget_and_is_removed_after(writer):
    home = _blkio_cgroup(writer.pid, "memory")
    with cgroups.memory_cap([writer.pid], label="test") as cap:
        assert cap.applied, cap.reason
        assert _blkio_cgroup(writer.pid, "memory") == "/" + str(cap.path.relative_to(cgroups.MEMORY_ROOT))
        writer(32)  # uncapped: the file stays cached, charged to the group
        assert cap.levels()["mem_page_cache_bytes"] >= 30 << 20
        parts = cap.cap(5 << 20)
        assert parts["limit_bytes"] == parts["held_bytes"] + (5 << 20)
        assert int((cap.path / "memory.limit_in_bytes").read_text()) // 4096 == parts["limit_bytes"] // 4096
        assert cap.levels()["mem_page_cache_bytes"] <= 5 << 20  # evicted down to the cap at once
        cap.reset_peak()
        writer(32)  # writing and reading more than the cap: the kernel evicts instead
        levels = cap.levels()
        assert levels["mem_page_cache_bytes"] <= 6 << 20 and levels["mem_peak_bytes"] <= parts["limit_bytes"] + 4096
        assert cap.oom_kills() == 0 and cap.metadata()["limit_bytes"] == parts["limit_bytes"]
        path = cap.path
    assert not path.exists() and not path.parent.exists()
    assert _blkio_cgroup(writer.pid, "memory") == home


@needs_memory
def test_reap_removes_memory_groups_of_a_killed_owner(sleeper):
    code = textwrap.dedent(f"""
        import os
        from ingestlab import cgroups
        group = cgroups.MemoryCap(label="orphan").open()
        group.add([{sleeper.pid}])
        print(group.path, flush=True)
        os._exit(0)  # killed: no cleanup runs
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    path = Path(out.stdout.split()[-1])
    assert path.exists() and _blkio_cgroup(sleeper.pid, "memory").endswith(path.name)
    deadline = time.monotonic() + 5
    while path.parent.exists() and time.monotonic() < deadline:  # the owner may still be exiting
        cgroups.reap()
        time.sleep(0.05)
    assert not path.parent.exists()
    assert _blkio_cgroup(sleeper.pid, "memory") == "/"


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
