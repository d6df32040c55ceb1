"""The run's CPU watch: what processes outside the run used of the machine while it ran."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

from ingestlab import watch

BUSY = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass"


def test_a_busy_process_outside_the_run_is_others_and_a_busy_child_is_the_runs_own(tmp_path):
    # outside the run: started by a shell that exits at once (re-parented, no descendant of this process)
    subprocess.run(["sh", "-c", f"{sys.executable} -c '{BUSY.format(s=3)}' >/dev/null 2>&1 &"], check=True)
    with watch.CpuShareWatch(tmp_path, interval_s=0.5) as cpu:
        time.sleep(2.0)
    other = cpu.result()
    # one of the machine's cores busy outside the run (the suite's other worker only adds to it)
    assert other["others_cpu_share"] >= 0.25 * 2 / (watch.psutil.cpu_count() or 2), other
    assert other["readings"] >= 4 and 1.9 <= other["seconds"] <= 3
    time.sleep(1.2)  # the outside process is done
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with watch.CpuShareWatch(tmp_path, interval_s=0.25) as cpu:
        subprocess.run([sys.executable, "-c", BUSY.format(s=1.5)], check=True)  # the run's own child
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = cpu.result()
    child_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    # whatever share of a loaded machine the child got, all of its CPU time is counted as the run's own
    # (the share is rounded to 4 digits and the wall clock to 0.1 s: 5 % of slack)
    capacity = own["seconds"] * (watch.psutil.cpu_count() or 1)
    assert child_s > 0.1 and own["run_cpu_share"] * capacity >= 0.95 * child_s, (own, child_s)
    # the shares split the machine: they add up to at most all of it (the clock ticks of /proc/stat, 10 ms on each
    # core, against the wall clock allow a 2 % overshoot)
    assert own["run_cpu_share"] + own["others_cpu_share"] + own["steal_share"] <= 1.02


def test_machine_busy_time_only_grows():
    first, stolen = watch.machine_busy_s()
    t = time.time()
    while time.time() - t < 0.2:
        pass
    busy, steal = watch.machine_busy_s()
    assert busy > first and steal >= stolen


def test_every_process_naming_the_runs_server_folder_is_the_runs_own_a_standby_started_apart_too(tmp_path):
    # a server folder of the run: started by one of its processes (here a child that sleeps), as the kernel starts them
    owner = subprocess.Popen(["sleep", "30"])
    folder = tmp_path / f"postgres-{owner.pid}-1"
    (folder / "standby1").mkdir(parents=True)
    (folder / watch.OWNER_LOCK).write_text(f"{owner.pid}\n")
    try:
        # a standby's postmaster: started apart by its own pg_ctl (re-parented, no descendant of the run), its
        # command line naming its folder in the server's, and no server.pid of its own
        standby = f"{sys.executable} -c '{BUSY.format(s=2.5)}' {folder / 'standby1' / 'data'}"
        subprocess.run(["sh", "-c", f"{standby} >/dev/null 2>&1 &"], check=True)
        with watch.CpuShareWatch(tmp_path, interval_s=0.25) as cpu:
            time.sleep(2.0)
        result = cpu.result()
    finally:
        owner.kill()
        owner.wait()
    # its CPU is the run's (whatever share of a loaded machine it got: at least a quarter of a core for 2 s)
    assert result["run_cpu_share"] * result["seconds"] * (watch.psutil.cpu_count() or 1) >= 0.5, result
