import logging
import subprocess
import sys
import time
from pathlib import Path

import psutil

from ingestlab.servers.base import _read_pid, _terminate, is_running, processes_using, reap, stop_processes


def test_an_exited_child_nobody_reaped_is_not_running():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.01)
    assert not is_running(child.pid)  # a zombie: the pid exists, the process does not run
    child.wait()
    assert not is_running(child.pid) and is_running(psutil.Process().pid)


def test_terminate_kills_a_process_that_ignores_sigterm_after_the_timeout():
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    child.stdout.readline()  # the handler is in place
    started = time.monotonic()
    _terminate(child.pid, timeout_s=0.5)
    assert 0.5 <= time.monotonic() - started < 10  # waited out SIGTERM, then SIGKILL
    assert not psutil.pid_exists(child.pid)  # gone and reaped (psutil waited for its own child)


def test_stop_processes_stops_them_together_on_sigterm():
    children = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
    started = time.monotonic()
    stop_processes([psutil.Process(c.pid) for c in children], timeout_s=20)
    assert time.monotonic() - started < 10  # SIGTERM did it: no wait for the 20 s timeout
    assert not any(psutil.pid_exists(c.pid) for c in children)


def test_processes_using_a_folder_ignore_a_folder_that_only_starts_alike(tmp_path):
    (tmp_path / "srv").mkdir()
    (tmp_path / "srv2").mkdir()
    users = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(tmp_path / name)])
             for name in ("srv", "srv/data", "srv2")]
    try:
        assert sorted(processes_using(tmp_path / "srv")) == sorted(p.pid for p in users[:2])
    finally:
        for proc in users:
            proc.kill()
            proc.wait()
    assert processes_using(tmp_path / "srv") == []


def test_a_pid_file_of_a_gone_process_reads_as_none(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    (tmp_path / "server.pid").write_text(f"{child.pid}\n")
    assert _read_pid(tmp_path / "server.pid") is None
    (tmp_path / "server.pid").write_text(f"{psutil.Process().pid}\n")
    assert _read_pid(tmp_path / "server.pid") == psutil.Process().pid


def test_reap_never_kills_an_unrelated_process_named_by_a_stale_pid_file(tmp_path):
    """A server folder whose owner died, whose server.pid holds the pid of someone else's process."""
    import subprocess
    import sys

    from ingestlab.servers.base import PID_FILE, is_running, reap

    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        folder = tmp_path / "postgres-999999"  # no live owner: orphaned
        (folder / "data").mkdir(parents=True)
        (folder / PID_FILE).write_text(f"{bystander.pid}\n")
        assert folder in reap(tmp_path, timeout_s=1.0)
        assert is_running(bystander.pid) and not folder.exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_a_killed_run_s_scratch_files_are_removed_by_the_next_reap_and_a_live_one_s_kept(tmp_path, monkeypatch):
    from ingestlab import _paths
    from ingestlab.servers.base import reap
    from ingestlab.workloads import million

    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path))
    child = subprocess.run([sys.executable, "-c", "from ingestlab.workloads import million; "
                            "import os; print(million.make_data(50, 'warmup').csv, flush=True); os._exit(0)"],
                           capture_output=True, text=True, check=True)
    left = Path(child.stdout.strip())  # the child ended without cleaning up, as a killed run of 05 does
    assert left.exists() and left.parent.parent == tmp_path
    mine = million.make_data(10)
    outsider = tmp_path / f"{_paths.SCRATCH_PREFIX}notapid"
    outsider.mkdir()
    removed = reap(tmp_path)
    assert left.parent in removed and not left.parent.exists()
    assert Path(mine.csv).exists() and outsider.exists()  # this process is alive; not a scratch folder of a pid
    mine.remove()


def _sleeper(*args: str, user: str | None = None) -> subprocess.Popen:
    """A process that sleeps, with ``args`` in its command line (as another OS user when ``user`` is given)."""
    python = ["/usr/bin/python3", "-I"] if user else [sys.executable]  # the system's: another user reaches it
    proc = subprocess.Popen([*python, "-c", "import time; print(1, flush=True); time.sleep(120)", *args],
                            stdout=subprocess.PIPE, user=user)
    proc.stdout.readline()  # running
    return proc


def test_stop_stops_what_the_server_started_that_its_own_stop_did_not_know_of(tmp_path):
    # as a start under way when a signal comes: its processes are not yet the server's, and _stop misses them
    from ingestlab.servers.base import LocalServer

    class Forgetful(LocalServer):
        KIND = "forgetful"

        def _start(self):
            self.child = _sleeper(str(self.data_dir))

        def _stop(self):
            pass

        def restart(self, settings):
            pass

        def connect_kwargs(self):
            return {}

    server = Forgetful(tmp_path / "forgetful-1").start()
    server.stop()
    assert server.child.wait(timeout=10) is not None  # stopped (SIGTERM), not left for a reap that cannot find it
    assert not server.directory.exists() and not processes_using(server.directory)


def test_reap_stops_the_lab_s_process_whose_server_folder_is_gone_and_spares_the_rest(tmp_path):
    import os

    from ingestlab.servers.base import reap

    kept = tmp_path / f"postgres-{os.getppid()}-2"  # there, and its owner lives: its owner's business
    kept.mkdir()
    orphan = _sleeper("-D", f"{tmp_path}/postgres-999990-1/data", "-k", "/tmp/x")  # its folder removed under it
    spared = [_sleeper(f"{kept}/data"), _sleeper(f"{tmp_path}/notes-x/postgres-1-1"),
              _sleeper(f"{tmp_path}/postgres-old/data")]  # no server's name
    if os.geteuid() == 0:  # another user's process naming the same path is not the lab's to stop
        spared.append(_sleeper(f"{tmp_path}/postgres-999990-1/data", user="nobody"))
    try:
        reap(tmp_path, timeout_s=2.0)
        assert orphan.wait(timeout=10) is not None
        assert all(proc.poll() is None for proc in spared), [proc.args for proc in spared if proc.poll() is not None]
    finally:
        for proc in [orphan, *spared]:
            proc.kill()
            proc.wait()


def test_a_free_port_is_outside_the_kernels_ephemeral_range_and_listenable(tmp_path, monkeypatch):
    """The kernel's own pick comes from the range outgoing connections take theirs from (a Galera peer's)."""
    import socket

    from ingestlab.servers import base

    low, high = (int(v) for v in base.EPHEMERAL_RANGE_FILE.read_text().split()[:2])
    ports = {base.free_port() for _ in range(50)}
    assert all(base.LOWEST_PORT <= p < low or high < p <= 65535 for p in ports), sorted(ports)
    assert len(ports) > 40  # drawn, not one port over and over
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports.pop()))
        sock.listen()
    # a range that leaves no room below or above (a kernel set to 1024–65535): the kernel's pick, still free
    whole = tmp_path / "range"
    whole.write_text("1024\t65535\n")
    monkeypatch.setattr(base, "EPHEMERAL_RANGE_FILE", whole)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", base.free_port()))


def test_reap_returns_the_folders_it_removed_and_only_logs_what_a_kind_left_elsewhere(tmp_path, monkeypatch, caplog):
    from ingestlab.engines.postgres.server import PostgresServer

    leftover = tmp_path / "PostgreSQL.123"
    monkeypatch.setattr(PostgresServer, "reap_leftovers", classmethod(lambda cls: [leftover]))
    (tmp_path / "lab").mkdir()
    with caplog.at_level(logging.INFO, logger="ingestlab.servers.base"):
        assert reap(tmp_path / "lab") == []
    assert f"removed {leftover}, left by a killed postgres server" in caplog.text
