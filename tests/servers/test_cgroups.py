import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ingestlab.servers import cgroups
from ingestlab.servers.cgroups import DiskLimits

REASON = cgroups.unavailable_reason()
needs_blkio = pytest.mark.skipif(REASON is not None, reason=f"no blkio throttling here: {REASON}")
LIMITS = DiskLimits(read_iops=375, write_iops=750, read_bps=60_000_000, write_bps=60_000_000)


def _blkio_cgroup(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, rel = line.split(":", 2)
        if "blkio" in controllers.split(","):
            return rel
    raise AssertionError("no blkio line")


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
        from ingestlab.servers import cgroups
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
