"""Failures after validation, as a hostile or clumsy user meets them: one line, a distinct exit code, nothing left."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from ingestlab import engines
from ingestlab.engines.mariadb.server import unavailable_reason
from ingestlab.servers.base import SOCKET_PREFIX, SOCKET_ROOT, is_running, is_server_folder, processes_using

BIN = Path(sys.executable).parent / "ingestlab"
SMALL = ["-p", "REPEATS", "1", "-p", "N", "200", "-p", "PROFILE_N", "2", "-p", "VARIANTS", "sync_on"]


def _cli(*args, lab: Path, timeout=300, env_extra=None):
    env = {**os.environ, "INGESTLAB_LAB_DIR": str(lab), **(env_extra or {})}
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, timeout=timeout)


def _one_line(res, code: int, *needles: str) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("ingestlab:") and "warning" not in ln]
    assert res.returncode == code, res.stderr[-3000:]
    assert len(lines) == 1, res.stderr[-3000:]
    assert "Traceback" not in res.stderr and "File \"" not in res.stderr, res.stderr[-3000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _remove_own_log(line: str) -> None:
    """Remove the traceback file a run wrote in the temporary folder when its own folder could not take it."""
    log = Path(line.rsplit("traceback: ", 1)[-1].rstrip(")"))
    if log.parent == Path(tempfile.gettempdir()) and log.name.startswith("ingestlab-error-"):
        log.unlink(missing_ok=True)


#: The niceness of the serial step's runs (:func:`_start_01`): they measure at full speed until signalled, beside
#: the tests that compare timings (tests/conftest.py, SERIAL_RUNS), and took a core from them: replicated
#: PostgreSQL's remote_apply came out 13 % below on, the CIs apart, beside two SIGTERM tests' runs (2026-12-01).
SERIAL_NICE = 10


def _start_01(out: Path, lab: Path, repeats: str = "200", *, nice: int = 0) -> tuple[subprocess.Popen, Path]:
    """A run of 01 on the lab's PostgreSQL (sync_on only), returned once its first results are written.

    ``nice``: the run's niceness (its kernel and server inherit it), below the tests that compare timings.
    """
    command = [str(BIN), "run", "01", "--no-progress", "--out", str(out), "-p", "REPEATS", repeats,
               "-p", "VARIANTS", "sync_on", "-p", "ENGINES", "postgres"]
    proc = subprocess.Popen(["nice", "-n", str(nice), *command] if nice else command,
                            env={**os.environ, "INGESTLAB_LAB_DIR": str(lab)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    folder = out / "01_insert_anatomy"
    _wait_for(lambda: (folder / "results.parquet").exists() or proc.poll() is not None, 300)
    if proc.poll() is not None:  # it ended before measuring: say why, with the end of its traceback
        log = folder / "error.log"
        pytest.fail(proc.communicate()[1][-1500:] + (log.read_text()[-3000:] if log.exists() else ""))
    return proc, folder


@pytest.fixture(scope="module")
def pg(tmp_path_factory):
    """A lab PostgreSQL to reach by URL, with a password full of URL-hostile characters."""
    import psycopg2

    from ingestlab import _paths
    from ingestlab.engines.postgres.server import PostgresServer

    server = PostgresServer(_paths.lab_dir() / f"test-pg-{os.getpid()}").start()
    secret = "p@ss w:rd%2/x"
    with psycopg2.connect(**server.connect_kwargs()) as conn, conn.cursor() as cur:
        cur.execute("ALTER USER postgres PASSWORD %s", (secret,))
        cur.execute("CREATE ROLE weak LOGIN PASSWORD 'weak'")
    conn.close()
    server._password = secret
    yield server
    server.stop()


def _url(pg, password: str | None = None, db: str = "postgres", query: str = "") -> str:
    cred = "postgres" if password is None else f"postgres:{password}"
    return f"postgresql://{cred}@localhost/{db}?host={pg.socket_dir}{query}"


@pytest.mark.parametrize("case, target, needle", [
    ("closed port", "postgresql://u@127.0.0.1:1/db", "Connection refused"),
    ("wrong password", "WRONG", "password authentication failed"),
    ("unknown database", "NODB", "does not exist"),
    ("unknown URL option", "BADOPT", "invalid connection option"),
])
def test_a_target_that_fails_pre_flight_gives_one_line_and_exit_3(pg, tmp_path, cli_here, case, target, needle):
    target = {"WRONG": _url(pg, "not-it"), "NODB": _url(pg, pg.password, db="nodb"),
              "BADOPT": _url(pg, pg.password, query="&bogus=1")}.get(target, target)
    started = time.monotonic()
    res = cli_here("run", "01", "--no-progress", "--out", tmp_path / "out", "-p", "ENGINES", target, *SMALL,
                   env={"INGESTLAB_LAB_DIR": tmp_path / "lab"})
    line = _one_line(res, 3, "pre-flight check failed: ENGINES", needle)
    assert time.monotonic() - started < 30
    assert "not-it" not in res.stderr and pg.password not in res.stderr
    assert "***" in line or "u@127.0.0.1" in line
    assert not (tmp_path / "lab").exists() or not any(is_server_folder(p) for p in (tmp_path / "lab").iterdir())


@pytest.mark.parametrize("args, code, needle", [
    (["--out", "/etc/hostname"], 3, "is a file"),
    (["-p", "ENGINES", "rocksdb"], 2, "ENGINES='rocksdb'"),
    (["-p", "SCENARIOS", "bulk"], 2, "SCENARIOS='bulk'"),
    (["-p", "SEED", "-1"], 2, "SEED=-1"),
    (["-p", "N", "100000000000"], 2, "N=100000000000"),
    (["-p", "VARIANTS", "sync_on,sync_on"], 2, "given twice"),
    (["-p", "RESULTS_DIR", "/tmp/x"], 2, "RESULTS_DIR"),
])
def test_known_bad_combinations_are_refused_up_front(tmp_path, cli_here, args, code, needle):
    res = cli_here("run", "01", "--no-progress", "--out", tmp_path / "out", *args,
                   env={"INGESTLAB_LAB_DIR": tmp_path / "lab"})
    _one_line(res, code, needle)
    assert not (tmp_path / "lab").exists()


def test_a_figure_format_the_lab_cannot_save_is_refused_before_anything_starts(tmp_path, cli_here):
    res = cli_here("run", "01", "--no-progress", "--out", tmp_path / "out",
                   env={"INGESTLAB_LAB_DIR": tmp_path / "lab", "INGESTLAB_FIGURE_FORMATS": "png,jpeg"})
    _one_line(res, 2, "INGESTLAB_FIGURE_FORMATS='png,jpeg'", "png, svg, pdf")
    assert not (tmp_path / "out").exists() and not (tmp_path / "lab").exists()


def test_other_commands_fail_in_one_line(tmp_path, cli_here):
    lab = {"INGESTLAB_LAB_DIR": tmp_path}
    _one_line(cli_here("summary", "/nonexistent", env=lab), 2, "/nonexistent")
    _one_line(cli_here("run", "all", "-p", "NO_SUCH", "1", env=lab), 2, "NO_SUCH")
    _one_line(cli_here("run", "03", "-p", "ENGINES", "postgres,postgres", env=lab), 2, "given twice")
    _one_line(cli_here("run", "03", "-p", "DATASET_MULTIPLE", "9999", "-p", "MEMORY_BUDGET_MB", "100000",
                       "--out", tmp_path / "o", env={"INGESTLAB_LAB_DIR": tmp_path / "lab"}), 3, "disk")


def test_a_password_with_any_character_works_from_a_file_and_reaches_no_output(pg, tmp_path):
    pw_file = tmp_path / "pw"
    pw_file.write_text(pg.password + "\n")
    out = tmp_path / "out"
    res = _cli("run", "01", "--no-progress", "--out", str(out), "--password-file", str(pw_file),
               "-p", "ENGINES", _url(pg), *SMALL, lab=tmp_path / "lab")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "warning" not in res.stderr
    for path in [p for p in out.rglob("*") if p.is_file()]:
        assert pg.password.encode() not in path.read_bytes(), path
    # the same password raw in the URL still works, with a warning, and is masked everywhere
    res = _cli("run", "01", "--no-progress", "--out", str(tmp_path / "out2"), "-p", "ENGINES", _url(pg, pg.password),
               *SMALL, lab=tmp_path / "lab")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "visible to every user" in res.stderr and pg.password not in res.stderr
    meta = json.loads((tmp_path / "out2" / "01_insert_anatomy" / "run.json").read_text())
    assert "postgres:***@localhost" in meta["parameters"]["engines"][0]
    for path in [p for p in (tmp_path / "out2").rglob("*") if p.is_file()]:
        assert pg.password.encode() not in path.read_bytes(), path
        assert b"ss w:rd" not in path.read_bytes(), path


def test_an_existing_out_is_refused_unless_forced(tmp_path, cli_here):
    target = tmp_path / "out" / "01_insert_anatomy"
    target.mkdir(parents=True)
    (target / "fits.csv").write_text("stale\n")
    _one_line(cli_here("run", "01", "--out", tmp_path / "out", "-p", "ENGINES", "postgres", *SMALL,
                       env={"INGESTLAB_LAB_DIR": tmp_path / "lab"}), 2, "--resume", "--force")
    assert (target / "fits.csv").read_text() == "stale\n"


def _wait_for(predicate, timeout_s: float = 120.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("timed out")


def _locked(connection, table: str) -> bool:
    """Whether ``connection`` now holds ``table`` in ACCESS EXCLUSIVE mode (False while the run has it dropped)."""
    import psycopg2

    try:
        with connection.cursor() as cur:
            cur.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        return True
    except psycopg2.errors.UndefinedTable:  # between a reset's DROP and its CREATE
        connection.rollback()
        return False


def _server_pids(lab: Path) -> list[int]:
    return [p for d in lab.glob("*-*") if is_server_folder(d) for p in processes_using(d)] if lab.exists() else []


def test_a_server_killed_mid_run_gives_one_line_exit_5_and_the_error_in_run_json(tmp_path):
    lab, out = tmp_path / "lab", tmp_path / "out"
    proc = subprocess.Popen([str(BIN), "run", "01", "--no-progress", "--out", str(out), "-p", "REPEATS", "200",
                             "-p", "VARIANTS", "sync_on", "-p", "ENGINES", "postgres"], env={**os.environ, "INGESTLAB_LAB_DIR": str(lab)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: (out / "01_insert_anatomy" / "results.parquet").exists())
    for pid in _server_pids(lab):
        os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=180)
    res = subprocess.CompletedProcess(proc.args, proc.returncode, "", err)
    line = _one_line(res, 5, "01_insert_anatomy failed:", "traceback:")
    log = Path(line.rsplit("traceback: ", 1)[1].rstrip(")"))
    assert log.exists() and "Traceback" in log.read_text()
    meta = json.loads((out / "01_insert_anatomy" / "run.json").read_text())
    assert meta["completed"] is False and meta["error"]["exit_code"] == 5
    assert not _server_pids(lab)


@pytest.mark.serial  # its bound is a time: 7 s alone, 12 s beside three busy loops, 14.7 s in the suite (bound 13 s)
def test_a_server_stopped_mid_run_gives_one_line_exit_5_within_its_grace_and_leaves_nothing(tmp_path):
    """SIGSTOP to the lab's PostgreSQL (the server and its backends): the run hung for good before."""
    import psutil

    from ingestlab.watch import STOPPED_GRACE_S

    lab, out = tmp_path / "lab", tmp_path / "out"
    proc, folder = _start_01(out, lab, nice=SERIAL_NICE)
    stopped = [p for pid in _server_pids(lab) for p in (psutil.Process(pid), *psutil.Process(pid).children(True))]
    sent = time.monotonic()
    for p in stopped:
        p.suspend()
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        for p in stopped:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.resume()
    took = time.monotonic() - sent
    line = _one_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", err), 5,
                     "was stopped (a SIGSTOP", f"nothing for {STOPPED_GRACE_S:g} s")
    assert took < STOPPED_GRACE_S + 10, (took, line)  # the grace, a look every 0.5 s, then the run's own clean-up
    meta = json.loads((folder / "run.json").read_text())
    assert meta["completed"] is False and meta["error"]["exit_code"] == 5 and "stopped" in meta["error"]["cause"]
    assert not _server_pids(lab) and not any(p.is_running() and p.status() != "zombie" for p in stopped)
    assert not [p for p in lab.iterdir() if is_server_folder(p)]
    print(f"{took:.1f} s: {line}")


def test_a_lock_held_on_a_url_targets_table_ends_the_run_at_the_stated_bound_in_one_line_exit_5(tmp_path):
    """Someone's open transaction holds a lock on the run's table: the run's next statement waited for good."""
    import psycopg2

    from ingestlab.engines.base import LOCK_WAIT_ENV
    from ingestlab.engines.postgres.server import PostgresServer

    server = PostgresServer(tmp_path / "target").start()
    holder = None
    try:
        url = f"postgresql://postgres:{server.password}@localhost/postgres?host={server.socket_dir}"
        lab, out = tmp_path / "lab", tmp_path / "out"
        proc = subprocess.Popen([str(BIN), "run", "01", "--no-progress", "--out", str(out), "-p", "ENGINES", url,
                                 "-p", "REPEATS", "200", "-p", "VARIANTS", "sync_on"],
                                env={**os.environ, "INGESTLAB_LAB_DIR": str(lab), LOCK_WAIT_ENV: "2"},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        folder = out / "01_insert_anatomy"
        _wait_for(lambda: (folder / "results.parquet").exists() or proc.poll() is not None, 300)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        holder = psycopg2.connect(**server.connect_kwargs())  # another user's session, in a transaction
        _wait_for(lambda: _locked(holder, "ingestlab_insert") or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        sent = time.monotonic()
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - sent
    finally:
        if holder is not None:
            holder.close()
        server.stop()
    assert "a statement's wait for a lock after 2 s" in err  # stated before the run starts
    line = _one_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", err), 5,
                     "lock timeout", "longer than the 2 s a statement waits for one")
    assert server.password not in err and server.password not in (folder / "run.json").read_text()
    assert took < 2 + 15, (took, line)  # the bound, then the run's own clean-up
    meta = json.loads((folder / "run.json").read_text())
    assert meta["completed"] is False and meta["error"]["exit_code"] == 5
    print(f"{took:.1f} s: {line}")


def test_a_url_target_that_stops_answering_mid_run_ends_it_in_one_line_exit_5(tmp_path):
    """A server given by URL, stopped mid-run (SIGSTOP): the run waited on its socket for good before."""
    import psutil

    from ingestlab.engines.postgres.server import PostgresServer
    from ingestlab.watch import FAILED_PROBES, IDLE_S

    server = PostgresServer(tmp_path / "target").start()
    stopped: list = []
    try:
        url = f"postgresql://postgres:{server.password}@localhost/postgres?host={server.socket_dir}"
        lab, out = tmp_path / "lab", tmp_path / "out"
        proc = subprocess.Popen([str(BIN), "run", "01", "--no-progress", "--out", str(out), "-p", "ENGINES", url,
                                 "-p", "REPEATS", "200", "-p", "VARIANTS", "sync_on"],
                                env={**os.environ, "INGESTLAB_LAB_DIR": str(lab)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        folder = out / "01_insert_anatomy"
        _wait_for(lambda: (folder / "results.parquet").exists() or proc.poll() is not None, 300)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        root = psutil.Process(int((server.pgdata / "postmaster.pid").read_text().split()[0]))
        stopped = [root, *root.children(recursive=True)]
        sent = time.monotonic()
        for p in stopped:
            p.suspend()
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - sent
    finally:
        for p in stopped:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.resume()
        server.stop()
    line = _one_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", err), 5,
                     "answered no new connection within 5 s", "the run was ended")
    assert server.password not in err and server.password not in (folder / "run.json").read_text()
    # the run waits IDLE_S, then asks FAILED_PROBES times (5 s each), then cleans up
    assert took < IDLE_S + FAILED_PROBES * 5.5 + 15, (took, line)
    assert json.loads((folder / "run.json").read_text())["error"]["exit_code"] == 5
    assert not [p for p in lab.iterdir() if is_server_folder(p)] if lab.exists() else True
    print(f"{took:.1f} s: {line}")


@pytest.mark.serial  # its bound is a time: 3.6 s once beside three other workers on two cores (bound 3 s)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_are_handled_like_ctrl_c(tmp_path, signum):
    lab, out = tmp_path / "lab", tmp_path / "out"
    proc, _ = _start_01(out, lab, nice=SERIAL_NICE)
    pids = _server_pids(lab)
    assert pids
    sent = time.monotonic()
    proc.send_signal(signum)  # to the ingestlab process only, as timeout, systemd and schedulers do
    _, err = proc.communicate(timeout=120)
    took = time.monotonic() - sent
    assert proc.returncode == 128 + signum, err[-2000:]
    # the issue asks for 2 s: 1.01–1.94 s in 10 runs on a quiet machine (/tmp/sigterm.py in O/Q's note), 3 s
    # allowed (it runs alone, in make test's serial step). The kernel exits once its cell has unwound (servers stopped,
    # clients too), and the C loop returns every 0.1 s (256 synchronous commits held the signal 0.8 s); before,
    # IPython took the handler's SystemExit for the cell's and the kernel lived until the SIGKILL 10 s later
    assert took < 3.0, f"{took:.1f} s"
    assert f"interrupted by {signal.Signals(signum).name}" in err and "Traceback" not in err
    assert not _server_pids(lab) and not any(is_server_folder(p) for p in lab.iterdir())
    # the run's socket folder is gone: no folder is left whose owner (the run's kernel) has exited; folders of
    # servers other processes run meanwhile (this test session's own fixtures, say) are theirs
    left = [p for p in SOCKET_ROOT.glob(f"{SOCKET_PREFIX}postgres-*") if not is_running(int(p.name.split("-")[2]))]
    assert not left, left
    meta = json.loads((out / "01_insert_anatomy" / "run.json").read_text())
    assert meta["completed"] is False and meta["error"]["exit_code"] == 128 + signum


@pytest.mark.skipif(unavailable_reason() is not None or os.geteuid() != 0, reason="needs MariaDB and root (runuser)")
def test_during_a_run_nobody_else_can_enter_the_labs_mariadb(tmp_path, lab_tmp):
    from tests.servers.local_server import listening_tcp_ports

    lab, out = lab_tmp, tmp_path / "out"  # the lab folder must be reachable by user mysql
    proc = subprocess.Popen([str(BIN), "run", "01", "--no-progress", "--out", str(out), "-p", "ENGINES", "mariadb",
                             "-p", "REPEATS", "200", "-p", "VARIANTS", "flush_1"],
                            env={**os.environ, "INGESTLAB_LAB_DIR": str(lab)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: (out / "01_insert_anatomy" / "results.parquet").exists(), 180)
        folder = next(d for d in lab.iterdir() if d.name.startswith("mariadb-"))
        pid = int((folder / "server.pid").read_text())
        socket_dir = Path((folder / "socket_dir").read_text().strip())
        assert not listening_tcp_ports(pid)
        probe = (f"import socket\nfor fam, addr in [(socket.AF_UNIX, {str(socket_dir / 'mariadb.sock')!r}), "
                 "(socket.AF_INET, ('127.0.0.1', 3306))]:\n"
                 "    s = socket.socket(fam)\n"
                 "    try:\n        s.connect(addr)\n    except OSError as exc:\n        print('refused', exc)\n"
                 "    else:\n        raise SystemExit('connected to %r' % (addr,))\n")
        res = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-I", "-c", probe],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and len(res.stdout.splitlines()) == 2, res.stdout + res.stderr
        res = subprocess.run(["runuser", "-u", "nobody", "--", "ls", str(folder)], capture_output=True, text=True)
        assert res.returncode != 0  # logs, data and the password file are out of reach too
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)


@pytest.mark.slow
def test_three_kills_at_random_moments_leave_nothing_after_one_more_run(lab_tmp):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import kill_runs

    # each killed run's leftovers meet the next run's reaper (the next killed run's, then the follow-up's):
    # one follow-up after the three, as the name says (a follow-up after each cost 2 × 14 s more)
    # 1 s: before the kernel; 4 s: its server starting or the first rounds; 8 s: measuring (a quiet run of
    # kill_runs' 01 measures from about 3 s to 25 s here; 15 s was after the end of the smoke three rounds, 12 s)
    # the socket dirs and cgroups looked for are the killed runs' (named by their processes' pids): another
    # worker's test may have killed a server's owner a moment before its own reap (a semisync pair's, once)
    owners: set[int] = set()
    killed = [kill_runs.one_round(i, "01", delay, lab_tmp, follow_up=False, owners=owners)
              for i, delay in enumerate([1.0, 4.0])]
    last = kill_runs.one_round(2, "01", 8.0, lab_tmp, owners=owners)
    del lab_tmp
    assert all(r["killed"] for r in [*killed, last]), [*killed, last]
    assert last["follow_up_rc"] == 0 and not last["left"], last


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 MB tmpfs (enough for the pre-flight's 50 MB), unmounted afterwards; skipped where mount is not allowed."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0755", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if res.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(folder: Path) -> None:
    """Write zeros into ``folder`` until its file system is full, as another process filling the disk would."""
    try:
        with open(folder / "filler", "wb") as out:
            while True:
                out.write(b"\0" * 2**16)
                out.flush()
    except OSError as exc:  # full; possibly already, by the run's own writes, before the filler could be created
        if exc.errno != errno.ENOSPC:
            raise


def test_a_disk_that_fills_up_mid_run_gives_one_line_exit_6_and_no_half_written_file(tmp_path, tiny_disk):
    lab, out = tmp_path / "lab", tiny_disk / "out"
    proc, folder = _start_01(out, lab)
    _fill(tiny_disk)
    _, err = proc.communicate(timeout=300)
    line = _one_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", err), 6,
                     "01_insert_anatomy failed:", "No space left on device")
    _remove_own_log(line)
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")], line
    for notebook in out.rglob("*.ipynb"):
        json.loads(notebook.read_text())  # whole, or not there
    meta = json.loads((folder / "run.json").read_text())  # the last whole version at least
    assert meta["completed"] is False
    if "error" in meta:
        assert meta["error"]["exit_code"] == 6
    assert not _server_pids(lab)


def _kernel_pids(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(parent) \
                    and b"ipykernel" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


@pytest.mark.skipif(unavailable_reason() is not None, reason=f"needs MariaDB: {unavailable_reason()}")
def test_a_global_setting_left_changed_by_a_killed_run_is_put_back_by_the_next_run(tmp_path, lab_tmp, monkeypatch):
    from ingestlab import journal
    from ingestlab.engines.mysql import MySQL

    flush = "innodb_flush_log_at_trx_commit"
    server = engines.get("mariadb").start()  # a user's own server: the lab reaches it by URL only
    try:
        def global_flush() -> int:
            return int(server.execute(f"SELECT @@GLOBAL.{flush}")[0][0])

        original = global_flush()
        scheme = "mysql+mysqldb" if "mysqldb" in MySQL.WIRE.drivers and engines.from_url(
            "mysql://u@localhost/x").driver.name == "mysqldb" else "mysql"
        url = f"{scheme}://root@localhost/ingestlab?unix_socket={server.server.socket_path}&set_global=true"
        env = {**os.environ, "INGESTLAB_LAB_DIR": str(lab_tmp), "INGESTLAB_PASSWORD": server.server.password}
        proc = subprocess.Popen([str(BIN), "run", "01", "--no-progress", "--out", str(tmp_path / "a"), "-p", "ENGINES",
                                 url, "-p", "REPEATS", "200", "-p", "VARIANTS", "flush_2"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert server.server.password not in " ".join(proc.args)
        _wait_for(lambda: global_flush() == 2 and (tmp_path / "a" / "01_insert_anatomy" / "results.parquet").exists())
        for pid in [*_kernel_pids(proc.pid), proc.pid]:  # the run and its kernel die at once: nothing puts it back
            os.kill(pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        time.sleep(1.0)
        assert global_flush() == 2  # still changed on the user's server, and the journal says what to put back
        monkeypatch.setenv("INGESTLAB_LAB_DIR", str(lab_tmp))  # the journal the runs keep in their lab folder
        assert journal.pending(url)["settings"] == {flush: str(original)}

        res = subprocess.run([str(BIN), "run", "01", "--no-progress", "--out", str(tmp_path / "b"), "-p", "ENGINES", url,
                              *SMALL[:-3], "-p", "VARIANTS", "flush_1"], env=env, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        assert global_flush() == original
        meta = json.loads((tmp_path / "b" / "01_insert_anatomy" / "run.json").read_text())
        assert {"setting": flush, "restored_to": str(original)}.items() <= meta["settings_restored"][0].items()
        assert journal.pending(url) is None  # nothing left to put back
        for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
            assert server.server.password.encode() not in path.read_bytes(), path
    finally:
        server.close()


def test_a_kernel_killed_mid_run_gives_one_line_exit_4_its_error_in_run_json_and_leaves_nothing(tmp_path):
    lab = tmp_path / "lab"
    proc, folder = _start_01(tmp_path / "out", lab)
    (kernel,) = _kernel_pids(proc.pid)
    keys = [a for a in Path(f"/proc/{kernel}/cmdline").read_bytes().decode().split("\0") if a.endswith(".json")]
    assert keys and all(Path(k).exists() for k in keys)
    os.kill(kernel, signal.SIGKILL)  # as the out-of-memory killer does
    _, err = proc.communicate(timeout=120)
    line = _one_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", err), 4,
                     "01_insert_anatomy failed: DeadKernelError: the notebook's kernel died during the run")
    meta = json.loads((folder / "run.json").read_text())
    assert meta["completed"] is False and meta["error"]["exit_code"] == 4 and "kernel died" in meta["error"]["cause"]
    assert not any(Path(k).exists() for k in keys), line  # the connection file (its keys) is removed
    assert not _server_pids(lab)


def test_a_run_folder_made_read_only_mid_run_gives_one_line_exit_4_and_keeps_the_partial_notebook(tmp_path):
    lab, out = tmp_path / "lab", tmp_path / "out"
    folder = out / "01_insert_anatomy"
    probe = tmp_path / "probe"
    probe.mkdir()
    if os.geteuid() != 0 or subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode:
        pytest.skip("making a folder immutable needs root and a file system with attributes (chattr)")
    subprocess.run(["chattr", "-i", str(probe)], check=True)
    proc, _ = _start_01(out, lab, repeats="20")
    try:
        subprocess.run(["chattr", "+i", str(folder)], check=True)  # read-only even for root
        _, err = proc.communicate(timeout=180)
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=False)
    line = _one_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", err), 4,
                     "01_insert_anatomy failed:", "Operation not permitted", "its run.json could not be updated")
    _remove_own_log(line)
    partial = folder / ".01_insert_anatomy.partial.ipynb"
    assert partial.exists() and json.loads(partial.read_text())["cells"], line  # whole, and said where
    assert f"the executed notebook stays at {partial}" in err
    assert not _server_pids(lab)


@pytest.mark.serial  # its bound is a time: 15.4 s in one CI run beside five workers (bound 13 s)
def test_a_stopped_kernel_ends_the_run_at_its_bound_in_one_line_exit_4_and_leaves_nothing(tmp_path):
    """SIGSTOP to the notebook's kernel (issue V, 9): the run waited for ever and PostgreSQL stayed up."""
    import psutil

    from ingestlab.watch import STOPPED_GRACE_S

    lab, out = tmp_path / "lab", tmp_path / "out"
    proc, folder = _start_01(out, lab, nice=SERIAL_NICE)
    kernel, = [psutil.Process(pid) for pid in _kernel_pids(proc.pid)]
    sent = time.monotonic()
    kernel.suspend()
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            kernel.resume()
    took = time.monotonic() - sent
    _one_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", err), 4,
              "the notebook's kernel was stopped (a SIGSTOP", f"nothing for {STOPPED_GRACE_S:g} s")
    assert took < STOPPED_GRACE_S + 10, took
    assert not _server_pids(lab) and not kernel.is_running()
    assert json.loads((folder / "run.json").read_text())["error"]["exit_code"] == 4


def test_a_runner_killed_outright_takes_its_kernel_and_servers_with_it(tmp_path):
    """`timeout -k 5` SIGKILLs the runner (issue V, 9): its kernel and the embedded PostgreSQL stayed up."""
    import psutil

    lab, out = tmp_path / "lab", tmp_path / "out"
    proc, _ = _start_01(out, lab)
    kernels = [psutil.Process(pid) for pid in _kernel_pids(proc.pid)]
    assert kernels and _server_pids(lab)
    # ipykernel's parent poller exits a kernel whose runner died at once: under load before its handler stopped the server
    assert all(k.environ().get("JPY_PARENT_PID") == "1" for k in kernels)  # 1: "the parent is init", no poller
    proc.kill()
    proc.communicate()
    _wait_for(lambda: not _server_pids(lab) and not any(k.is_running() and k.status() != "zombie" for k in kernels),
              30)
    assert not _server_pids(lab)
