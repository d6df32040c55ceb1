"""Fixtures shared by the tests, and the order of the items and their split between parallel workers."""

import array
import atexit
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from ingestlab import _paths, results
from ingestlab.engines.mariadb.server import BIN_DIR_ENV
from ingestlab.figures import CHECK_ENV
from ingestlab.runner import HTML_ENV
from ingestlab.servers import templates

# Every figure saved while the tests run (the notebooks under nbval, the CLI's real runs, the kernels and
# processes they start: they inherit this) is checked against the lab's figure grammar, and a figure that
# breaks it fails its test (ingestlab.figure_checks.grammar_problems).
os.environ.setdefault(CHECK_ENV, "strict")
# ... and saved as PNG only, which the grammar checks: SVG and PDF cost 0.6 s of CPU a figure and were a fifth
# of a small run's CPU. The tests of saving (tests/test_figures.py, test_captions', test_compare_runs' figure) and
# promotion's real run write all three, as a user's run does (all_figure_formats).
os.environ.setdefault(results.FIGURE_FORMATS_ENV, "png")
# ... and without the HTML copy of each executed notebook (0.8 s of CPU a run, some fifty runs): the test that
# reads it (tests/test_cli.py, a URL password) asks for it.
os.environ.setdefault(HTML_ENV, "0")
# The servers' data folders start from templates made in this session (ingestlab.servers.templates), not from the
# user's cache: made once here, before the workers start (they and every run inherit the folder).
if templates.CACHE_ENV not in os.environ and "PYTEST_XDIST_WORKER" not in os.environ:
    os.environ[templates.CACHE_ENV] = tempfile.mkdtemp(prefix="ingestlab-templates-")
    atexit.register(shutil.rmtree, os.environ[templates.CACHE_ENV], True)


_FS_IOC_GETFLAGS, _FS_IOC_SETFLAGS, _FS_TOPDIR_FL = 0x80086601, 0x40086602, 0x00020000


def spread_subfolders(folder: Path) -> None:
    """Mark ``folder`` a top of directory hierarchies (``chattr +T``): ext4 puts each new subfolder in its own group.

    The suite makes and deletes about 160 servers' data folders (a PostgreSQL ``initdb`` alone writes a
    thousand files). Kept in one block group, each new file's inode is found only after skipping every inode
    of that group deleted in the last minutes (ext4's ``recently_deleted``, which dominates when the
    file system has no journal, as here): ``initdb`` in ``.lab`` took 1.2–1.4 s (about 1 s of it system
    time) against 0.4 s in a fresh group. Nothing happens on a file system without the flag.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        flags = array.array("i", [0])
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, flags, True)
        flags[0] |= _FS_TOPDIR_FL
        fcntl.ioctl(fd, _FS_IOC_SETFLAGS, flags, True)
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.fixture(scope="session", autouse=True)
def _spread_scratch_folders(tmp_path_factory) -> None:
    """The lab's folder and this worker's temporary folder spread their subfolders (:func:`spread_subfolders`)."""
    _paths.lab_dir().mkdir(parents=True, exist_ok=True)
    spread_subfolders(_paths.lab_dir())
    spread_subfolders(tmp_path_factory.getbasetemp())


@pytest.fixture
def all_figure_formats(monkeypatch):
    """Figures saved in every format, as outside the tests (``$INGESTLAB_FIGURE_FORMATS`` unset)."""
    monkeypatch.delenv(results.FIGURE_FORMATS_ENV, raising=False)


def _snapshot(folder: Path) -> dict[str, list[int]]:
    return {str(p.relative_to(folder)): [p.stat().st_size, p.stat().st_mtime_ns] for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="session")
def user_run(tmp_path_factory, worker_id) -> dict:
    """``ingestlab run 00 03 -p ENGINES mariadb`` as a user on a machine without MariaDB makes it: made once a session.

    03 is left with no engine and skipped; 00 (published data, no server) runs to the end, its figures in
    every format where a user's run puts them (neither ``$INGESTLAB_FIGURES_DIR`` nor
    ``$INGESTLAB_FIGURE_FORMATS`` set). MariaDB is missing for real: ``$INGESTLAB_MARIADB_BIN_DIR`` names an
    empty folder. The run is made by whichever worker asks first (under a lock in the session's shared
    temporary folder) and read by the others: a whole run costs 15–20 s of CPU, and test_promotion and
    test_cli_reproduce only inspect what it wrote. Nothing may change it: take a copy to alter.

    Returns
    -------
    dict
        ``out`` (the ``--out`` folder), ``returncode``, ``stderr``, and ``repository_figures_unchanged``
        (the repository's ``figures/`` before and after the run, compared).
    """
    root = tmp_path_factory.getbasetemp()
    root = root.parent if worker_id != "master" else root  # shared by every worker of the session
    folder, record = root / "user-run", root / "user-run.json"
    with open(root / "user-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            shutil.rmtree(folder, ignore_errors=True)
            (folder / "no-mariadb").mkdir(parents=True)
            env = {k: v for k, v in os.environ.items() if k not in (_paths.FIGURES_ENV, results.FIGURE_FORMATS_ENV)}
            env.update({"INGESTLAB_LAB_DIR": str(folder / "lab"), BIN_DIR_ENV: str(folder / "no-mariadb")})
            before = _snapshot(_paths.REPO / "figures")
            res = subprocess.run([str(Path(sys.executable).parent / "ingestlab"), "run", "00", "03", "-p", "ENGINES",
                                  "mariadb", "--no-progress", "--out", str(folder / "out")],
                                 capture_output=True, text=True, env=env, timeout=600)
            record.write_text(json.dumps({"out": str(folder / "out"), "returncode": res.returncode,
                                          "stderr": res.stderr,
                                          "repository_figures_unchanged": _snapshot(_paths.REPO / "figures") == before}))
    made = json.loads(record.read_text())
    return {**made, "out": Path(made["out"])}


@pytest.fixture
def cli_here(monkeypatch, capsys):
    """``ingestlab`` run in this process, for what it refuses before anything starts: ``run(*args, env={...})``.

    Returns a :class:`subprocess.CompletedProcess` (``returncode``, ``stdout``, ``stderr``) as the console
    script's would be. A process of its own spends 0.7 s of CPU importing the lab before it refuses (48 such
    processes were a tenth of ``make test``'s runs); the tests of what a run does, and of the console script
    itself, still start one. ``env`` sets environment variables for the call only.
    """
    import signal

    from ingestlab import cli

    def run(*args, env: dict | None = None) -> subprocess.CompletedProcess:
        handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
        with monkeypatch.context() as m:
            for name, value in (env or {}).items():
                m.setenv(name, str(value))
            capsys.readouterr()
            try:
                code = cli.main([str(a) for a in args])
            except SystemExit as exc:  # argparse's --help and usage errors
                code = exc.code if isinstance(exc.code, int) else 1
            finally:  # the command's own SIGTERM and SIGHUP handlers are not the worker's
                for signum, handler in handlers.items():
                    signal.signal(signum, handler)
            said = capsys.readouterr()
        return subprocess.CompletedProcess(["ingestlab", *args], code, said.out, said.err)

    return run


@pytest.fixture
def lab_tmp():
    """A scratch folder inside the lab directory, removed afterwards.

    Local servers run as another OS user when the tests run as root; pytest's own
    ``tmp_path`` lives under a folder only root may enter, so servers get a folder here.
    """
    path = _paths.lab_dir() / f"test-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)



def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` first (the order otherwise kept), so under ``make test``'s workers the longest start at once."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


#: The serial tests that run the whole CLI and wait on a bound (a grace, a signal's handling). One after another with
#: the rest they left a core idle most of the serial step, so ``make test`` runs them on one worker beside the tests
#: that compare timings on the other, never two of one kind at once: 46–51 s for the step in five quiet runs against
#: 66–87 s (2026-11-30; the margins held: SIGSTOP's bound 13 s took 5.5–6.3 s, Galera's CIs stayed apart).
SERIAL_RUNS = "tests/test_cli_failures.py"


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduling by test, except that a notebook's cells (nbval's items) go to one worker in order,
    and so do a test class's tests.

    The cells share one kernel, so they cannot be split; a class's tests share its class-scoped servers.
    (xdist's own ``--dist loadgroup`` tags node ids, which pytest 9 no longer lets a plugin rewrite.) Whole
    runs that several tests read are shared between the workers instead (:func:`user_run`). In the serial
    step (``-m serial``) there are two scopes: :data:`SERIAL_RUNS` and the timings.
    """
    from xdist.scheduler import LoadScopeScheduling

    marks = config.getoption("markexpr") or ""
    serial = "serial" in marks and "not serial" not in marks  # the serial step, however else it is narrowed

    class NotebooksWhole(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.partition("::")[0]
            if serial:
                return "runs" if path == SERIAL_RUNS else "timings"
            if path.endswith(".ipynb"):
                return path
            parts = nodeid.split("::")
            # a test class on one worker: its class-scoped engine starts once, not on every worker (a Galera cluster
            # is 3 s and 2.7 s of CPU; four workers each started TestGalera's, TestPostgresReplicated's, ...)
            return "::".join(parts[:2]) if len(parts) > 2 and parts[1].startswith("Test") else nodeid

    return NotebooksWhole(config, log)
