"""The kernel's cgroup hierarchies are found and read as v1 or v2 mounts them."""

from pathlib import Path

import pytest

from ingestlab import cgroupfs

# -- which version: the kernel's own text ----------------------------------------------
#: /proc/self/mountinfo of this machine's kind (v1 controllers, an empty v2 beside them) and of a
#: distribution that mounts cgroup v2 only (systemd's default since 2021).
HYBRID = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""


IO = cgroupfs.locate("io")[0]
V2_ONLY = """\
22 27 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw
29 22 0:26 / {path} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
"""


def test_mounts_name_v1_hierarchies_by_controller_and_v2_as_cgroup2():
    found = cgroupfs.mounts(HYBRID)
    assert found["blkio"] == cgroupfs.Mount(Path("/sys/fs/cgroup/blkio"), "/", 1)
    assert found["memory"].path == Path("/sys/fs/cgroup/memory") and found["name=systemd"].version == 1
    assert found["cgroup2"] == cgroupfs.Mount(Path("/sys/fs/cgroup/unified"), "/", 2)
    assert "tmpfs" not in found and "xattr" in found  # a v1 option; the lab asks only for blkio and memory
    assert set(cgroupfs.mounts(V2_ONLY.format(path="/sys/fs/cgroup"))) == {"cgroup2"}
    assert cgroupfs.mounts("36 31 0:33 / /mnt/with\\040space rw - cgroup cgroup rw,memory\n")["memory"].path == \
        Path("/mnt/with space")


def test_mounts_of_this_machine_agree_with_what_the_lab_locates():
    found = cgroupfs.mounts(Path("/proc/self/mountinfo").read_text())
    for controller, names in cgroupfs.CONTROLLERS.items():
        hierarchy, _ = cgroupfs.locate(controller)
        if names[1] in found:
            assert hierarchy.VERSION == 1 and hierarchy.root == found[names[1]].path
        elif hierarchy is not None:
            assert hierarchy.VERSION == 2 and hierarchy.root == found["cgroup2"].path


def test_hybrid_mounts_choose_v1_for_both_limits(tmp_path, monkeypatch):
    (tmp_path / "mountinfo").write_text(HYBRID)
    monkeypatch.setattr(cgroupfs, "MOUNTINFO", tmp_path / "mountinfo")
    io, memory = cgroupfs.locate("io")[0], cgroupfs.locate("memory")[0]
    assert (type(io), io.root, io.name) == (cgroupfs.CgroupV1, Path("/sys/fs/cgroup/blkio"), "blkio")
    assert (type(memory), memory.root) == (cgroupfs.CgroupV1, Path("/sys/fs/cgroup/memory"))
    assert cgroupfs.roots() == [Path("/sys/fs/cgroup/blkio"), Path("/sys/fs/cgroup/memory"),
                               Path("/sys/fs/cgroup/unified")]


def test_io_stat_gives_the_counters_of_one_device_only():
    text = ("259:0 rbytes=5652480 wbytes=0 rios=372 wios=0 dbytes=0 dios=0\n"
            "254:0 rbytes=1470464 wbytes=46522368 rios=359 wios=3094 dbytes=0 dios=0\n")
    assert cgroupfs.parse_io_stat(text, "254:0")["wios"] == 3094
    assert cgroupfs.parse_io_stat(text, "259:0")["rbytes"] == 5652480
    assert cgroupfs.parse_io_stat(text, "8:0") == {} and cgroupfs.parse_io_stat("", "254:0") == {}


def test_v2_counters_have_the_names_of_v1_ones(tmp_path):
    (tmp_path / "io.stat").write_text("254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n")
    assert cgroupfs.CgroupV2(tmp_path, "io").io_counters(tmp_path, "254:0") == {
        "cgroup_read_ios": 1, "cgroup_read_bytes": 4096, "cgroup_write_ios": 2, "cgroup_write_bytes": 8192}


V2_MEMORY_STAT = """\
anon 3981312
file 52035584
kernel 1130496
kernel_stack 49152
pagetables 151552
sec_pagetables 0
percpu 0
sock 0
vmalloc 0
shmem 9166848
zswap 0
zswapped 0
file_mapped 7340032
file_dirty 16384
file_writeback 0
swapcached 0
anon_thp 0
inactive_anon 12992512
active_anon 155648
inactive_file 42430464
active_file 436224
unevictable 0
pgfault 38225
pgmajfault 0
"""


def test_memory_stat_of_both_versions_is_anon_file_and_shmem(tmp_path):
    (tmp_path / "memory.stat").write_text(V2_MEMORY_STAT)
    assert cgroupfs.CgroupV2(tmp_path, "memory").memory_stat(tmp_path) == {"anon": 3981312, "file": 52035584,
                                                                           "shmem": 9166848}
    v1 = Path("/sys/fs/cgroup/memory/memory.stat")
    if not v1.exists():
        pytest.skip("no cgroup v1 memory.stat on this machine to read")
    real = cgroupfs.parse_keyed(v1.read_text())
    (tmp_path / "memory.stat").write_text(v1.read_text())
    assert cgroupfs.CgroupV1(tmp_path, "memory").memory_stat(tmp_path) == {
        "anon": real["rss"], "file": real["cache"], "shmem": real["shmem"]}


def test_memory_events_of_both_versions_count_limit_hits_and_oom_kills(tmp_path):
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 17\noom 1\noom_kill 1\noom_group_kill 0\n")
    assert cgroupfs.CgroupV2(tmp_path, "memory").memory_events(tmp_path) == {"limit_hits": 17, "oom_kills": 1}
    (tmp_path / "memory.failcnt").write_text("17\n")
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert cgroupfs.CgroupV1(tmp_path, "memory").memory_events(tmp_path) == {"limit_hits": 17, "oom_kills": 2}


def test_blkio_counters_of_a_real_v1_group_parse(tmp_path):
    if IO is None or IO.VERSION != 1 or not (IO.root / "blkio.throttle.io_serviced").exists():
        pytest.skip("no cgroup v1 blkio hierarchy on this machine to read")
    text = (IO.root / "blkio.throttle.io_serviced").read_text()
    lines = [line.split() for line in text.splitlines()]
    for device in {f[0] for f in lines if len(f) == 3}:
        assert cgroupfs.parse_blkio(text, device) == {f[1].lower(): int(f[2]) for f in lines
                                                    if len(f) == 3 and f[0] == device and f[1] in ("Read", "Write")}
