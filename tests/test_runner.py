from pathlib import Path

import pandas as pd
import pytest

from ingestlab import preflight, runner
from ingestlab.engine_specs import parse_engines
from ingestlab.errors import ConfigError


def test_notebooks_are_found_by_id_stem_or_file_name():
    path = runner.find_notebook("01")
    assert runner.find_notebook("01_insert_anatomy") == path == runner.find_notebook(path.name)


def test_run_all_covers_every_numbered_notebook_group_commit_included():
    books = runner.notebooks()
    assert "04" in books and books["04"].stem == "04_group_commit"
    assert runner.declaration(books["04"]).validate.__module__ == "ingestlab.workloads.group_commit"


def test_declared_parameters_come_from_the_parameters_cell():
    declared = runner.declared_parameters(runner.find_notebook("01"))
    assert {"ENGINES", "SCALE", "N", "RESULTS_DIR"} <= set(declared)
    assert declared["ENGINES"]["help"]


def test_check_parameters_uses_the_experiments_own_validation():
    with pytest.raises(ConfigError, match="PROFILE_N"):
        runner.check_parameters(runner.find_notebook("01"), {"PROFILE_N": -1})


def test_passwords_are_taken_out_of_injected_parameters():
    given = {"ENGINES": "mysql://root:pa:ss@127.0.0.1:3306/db", "N": 3}
    clean, secrets, engines = runner.hide_passwords(given, parse_engines(given["ENGINES"]))
    assert clean == {"ENGINES": "mysql://root:***@127.0.0.1:3306/db", "N": 3}
    assert secrets == {"root@127.0.0.1:3306": "pa:ss"}
    assert engines == parse_engines(clean["ENGINES"]) and engines[0].connection.password is None


@pytest.mark.parametrize("text", ["3", "-3", "0", "1_000", "0.5", "1e3", "-inf", "nan", "True", "False", "None",
                                  "postgres", "postgres,mariadb", "postgresql://u@h/db", "", " 7 ", "0x10", "1,5"])
def test_p_values_are_what_papermill_would_give_the_notebook(text):
    from papermill.cli import _resolve_type  # private: this test notices when papermill's rule changes

    ours, theirs = runner.coerce(text), _resolve_type(text)
    assert type(ours) is type(theirs) and (ours == theirs or ours != ours and theirs != theirs)  # nan ≠ nan


def test_p_values_also_take_lower_case_booleans_and_null():
    assert [runner.coerce(v) for v in ["true", "FALSE", "none", "null"]] == [True, False, None, None]


def test_the_output_check_never_writes_through_a_symlink_another_user_planted(tmp_path):
    """The pre-flight's write test once used a predictable name: a symlink there truncated its target."""
    import os

    precious = tmp_path / "root-only"
    precious.write_text("keep me")
    shared = tmp_path / "shared"
    shared.mkdir()
    for pid in range(os.getpid() - 5, os.getpid() + 50):  # every name the old check could have used
        (shared / f".ingestlab-probe-{pid}").symlink_to(precious)
    preflight.check_output(shared / "not-yet" / "01_insert_anatomy")
    assert precious.read_text() == "keep me"
    assert sorted(p.name for p in shared.iterdir() if not p.is_symlink()) == []  # and nothing left behind


@pytest.fixture
def silent_listener():
    """A local port that accepts connections and never answers (a stalled or hostile server)."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.parametrize("scheme", ["mysql", "mysql+pymysql", "starrocks", "arangodb"])
def test_a_server_that_accepts_and_never_answers_fails_the_pre_flight_in_its_stated_time(scheme, silent_listener,
                                                                                       tmp_path, cli_here):
    """The pre-flight waits PREFLIGHT_TIMEOUT_S once, not once per retry (python-arango tried 3 times: 15 s).

    Measured in-process on this machine: 6.0–6.9 s for every scheme; the bound adds the command's own validation.
    """
    import time

    url = f"{scheme}://u@127.0.0.1:{silent_listener}/db" + ("?http_port=1" if scheme == "starrocks" else "")
    notebook = "03" if scheme == "arangodb" else "01"
    # the command's own work on this machine now (validation): the same command refused before its pre-flight
    started = time.monotonic()
    refused = cli_here("run", notebook, "-p", "ENGINES", url, "-p", "SEED", "-1", "--out", tmp_path / "refused",
                       "--no-progress")
    start_s = time.monotonic() - started
    assert refused.returncode == 2, refused.stderr
    started = time.monotonic()
    res = cli_here("run", notebook, "-p", "ENGINES", url, "--out", tmp_path / "out", "--no-progress")
    took = time.monotonic() - started
    assert res.returncode == 3, res.stderr
    # one wait of the timeout, not one per retry (three retries: three times it), whatever the machine's load
    assert took - start_s < 1.8 * preflight.PREFLIGHT_TIMEOUT_S, f"{took:.1f} s, of which {start_s:.1f} s the CLI's start"
    assert "pre-flight check failed: ENGINES" in res.stderr.strip().splitlines()[-1], res.stderr
    if scheme == "arangodb":
        assert res.stderr.strip().endswith(f"no answer within {preflight.PREFLIGHT_TIMEOUT_S} s"), res.stderr


def test_an_error_log_that_cannot_go_in_the_run_folder_is_a_new_private_temporary_file(tmp_path, monkeypatch):
    """On a full disk or a read-only run folder: a fresh file (O_EXCL, 0600), never a path another user could plant."""
    import os
    import stat
    import tempfile

    from ingestlab import results

    def refuse(path, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "write_atomic", refuse)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    errors = [runner._run_error("01_insert_anatomy", tmp_path / "run", "ValueError", "boom", []) for _ in range(2)]
    logs = [e.log for e in errors]
    assert logs[0] != logs[1] and all(log.parent == tmp_path for log in logs)
    for log in logs:
        assert stat.S_IMODE(os.stat(log).st_mode) == 0o600 and log.read_text() == "ValueError: boom\n"


@pytest.mark.parametrize("where", ["file", "under_a_file"])
def test_a_lab_folder_that_is_a_file_fails_the_pre_flight_in_one_line(tmp_path, monkeypatch, where):
    from ingestlab.errors import PreflightError

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(blocker if where == "file" else blocker / "lab"))
    with pytest.raises(PreflightError, match=r"\$INGESTLAB_LAB_DIR .*not-a-folder is not a folder"):
        preflight._check_lab_dir()
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "new" / "lab"))  # missing: made when a server starts
    preflight._check_lab_dir()


@pytest.mark.parametrize("case, needle", [
    ("long", "File name too long"), ("loop", "Too many levels of symbolic links"), ("dangling", "symlink to nothing")])
def test_an_output_folder_name_the_system_refuses_fails_in_one_line(tmp_path, case, needle):
    from ingestlab.errors import PreflightError

    target = tmp_path / ("x" * 300)
    if case == "loop":
        target = tmp_path / "loop"
        target.symlink_to(target)
    elif case == "dangling":
        target = tmp_path / "gone"
        target.symlink_to(tmp_path / "nowhere")
    with pytest.raises(PreflightError, match=f"--out: .*{needle}"):
        preflight.check_output(target)
    with pytest.raises(PreflightError, match=f"--out: .*{needle}"):  # as the command line checks it: a run below it
        preflight.check_output(target / "01_insert_anatomy")


@pytest.mark.parametrize("mode", ["force", "resume"])
def test_a_live_runs_folder_is_neither_emptied_nor_joined_by_a_second_run(tmp_path, mode):
    """--force would delete the live run's results, --resume would mix two runs: both refused while it holds the folder."""
    from ingestlab.errors import PreflightError

    target = tmp_path / "out" / "00_published_results"
    target.mkdir(parents=True)
    (target / "results.parquet").write_bytes(b"the live run's samples")
    (tmp_path / "link").symlink_to(tmp_path / "out")
    with runner.OutputLock(target):  # the first run, alive
        for out in (tmp_path / "out", tmp_path / "link"):  # also reached through a link to its --out (issue V, 8)
            with pytest.raises(PreflightError, match="being written by another live run"):
                runner.run_notebook("00", {}, out, progress=False, mode=mode)
    assert sorted(p.name for p in target.iterdir()) == ["results.parquet"]  # no error.log left in the live run
    assert (target / "results.parquet").read_bytes() == b"the live run's samples"
    with runner.OutputLock(target) as lock:  # the same process may claim its folder again (after --force made it)
        lock.take()


def _garbage(run_dir):
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text("{not json")


def _other_notebooks(run_dir):
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text('{"notebook": "04_group_commit", "parameters": {}}')


@pytest.mark.parametrize("make, out, said", [
    (None, "missing", "there is no such folder"),
    (lambda o: (o / "01_insert_anatomy").mkdir(parents=True) or (o / "01_insert_anatomy" / "run.json").write_text("{}"),
     "out/01_insert_anatomy", "not the run itself"),
    (lambda o: _garbage(o / "01_insert_anatomy"), "out", "its run.json cannot be read"),
    (lambda o: _other_notebooks(o / "01_insert_anatomy"), "out", "run.json says it is '04_group_commit''s"),
], ids=["missing --out", "a notebook's run folder as --out", "garbage run.json", "another notebook's run.json"])
def test_resume_refuses_what_is_not_a_run_to_resume_in_one_line_before_anything_starts(tmp_path, capsys, make, out,
                                                                                     said):
    from ingestlab.cli import main

    if make:
        make(tmp_path / "out")
    rc = main(["run", "01", "--resume", "--no-progress", "--out", str(tmp_path / out), "-p", "N", "200"])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert rc == 2 and last.startswith("ingestlab: error: ") and said in last and "Traceback" not in err, err
    assert not (tmp_path / "out" / "01_insert_anatomy" / "01_insert_anatomy").exists()


def test_resume_into_an_out_folder_without_this_notebooks_run_yet_starts_it(tmp_path):
    (tmp_path / "out" / "00_published_results").mkdir(parents=True)  # `run all --resume`: 01 was not reached
    runner.check_resume(runner.find_notebook("01"), {}, tmp_path / "out" / "01_insert_anatomy")  # no refusal


def test_notebook_00s_runs_which_recorded_alpha_in_capitals_resume_and_a_changed_alpha_is_named_once(tmp_path):
    import json

    target = tmp_path / "out" / "00_published_results"
    target.mkdir(parents=True)
    (target / "run.json").write_text(json.dumps({"notebook": target.name, "parameters": {"ALPHA": 0.05}}))
    runner.check_resume(runner.find_notebook("00"), {}, target)  # its default ALPHA: no refusal
    with pytest.raises(ConfigError) as refused:
        runner.check_resume(runner.find_notebook("00"), {"ALPHA": 0.01}, target)
    assert "these differ: ALPHA (was 0.05) (use a new --out" in str(refused.value)


def test_a_paper_run_waits_for_the_load_to_settle_and_gives_up_at_its_limit(monkeypatch, capsys):
    import os
    import time

    loads = iter([3.0, 2.2, 1.7, 1.4, 9.9])
    monkeypatch.setattr(os, "getloadavg", lambda: (next(loads), 1.0, 1.0))
    monkeypatch.setattr(time, "sleep", lambda s: None)
    assert runner.wait_for_quiet(limit_s=60) == 1.4  # polled until at most 1.5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1-minute load average 3.00" in err and "up to 60 s" in err
    monkeypatch.setattr(os, "getloadavg", lambda: (4.0, 1.0, 1.0))
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    assert runner.wait_for_quiet(limit_s=30) == 4.0  # gave up: the run starts, and records the load
    assert "up to 30 s" in capsys.readouterr().err
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 1.0, 1.0))
    assert runner.wait_for_quiet() == 0.3 and capsys.readouterr().err == ""  # quiet: no wait, nothing said


@pytest.mark.parametrize("value", ["abc", "0", "-5", "inf", "nan"])
def test_a_malformed_lock_wait_bound_is_refused_before_anything_starts(value, tmp_path, monkeypatch):
    from ingestlab.engines.base import LOCK_WAIT_ENV

    monkeypatch.setenv(LOCK_WAIT_ENV, value)
    with pytest.raises(ConfigError, match=LOCK_WAIT_ENV):
        preflight.check((), None, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_default_naming_an_engine_not_installed_here_leaves_it_out_saying_so(monkeypatch):
    """Notebook 08's default names the cluster engines, each an engine folder that may not be installed."""
    from ingestlab import engine_specs

    path = runner.find_notebook("01")
    declared = runner.declared_parameters(path)
    default = {**declared, "ENGINES": {**declared["ENGINES"], "default": '"duckdb,nosuchengine"'}}
    monkeypatch.setattr(runner, "declared_parameters", lambda p: default)
    assert runner.without_unavailable_engines(path, {}) == ({"ENGINES": "duckdb"},
                                                           {"nosuchengine": engine_specs.UNREGISTERED})
    given = {"ENGINES": "duckdb,nosuchengine"}
    assert runner.without_unavailable_engines(path, given) == (given, {})  # given, it is the validation's to refuse
    with pytest.raises(ConfigError, match="nosuchengine"):
        runner.check_parameters(path, given)


@pytest.mark.parametrize("damage", ["key", "table"])
def test_resuming_over_a_damaged_checkpoint_is_refused_in_one_line_naming_it(tmp_path, damage):
    import shutil

    from ingestlab import checkpoints

    target = tmp_path / "out" / "01_insert_anatomy"
    shutil.copytree(Path(__file__).parent / "fixtures" / "runs" / "a" / "01_insert_anatomy", target)
    store = checkpoints.Checkpoints(target, keep=True)
    saved = store.put({"engine": "postgres", "variant": "sync_on"}, {"results": pd.DataFrame({"x": [1, 2]})})
    assert checkpoints.problems(target) == []
    if damage == "key":
        (saved / "key.json").write_text('{"tables": ["resu')
    else:
        (saved / "results.parquet").write_bytes(b"PAR1 cut")
    with pytest.raises(ConfigError, match=rf"--resume=.* is not valid: expected a run whose checkpoints read \({saved}"):
        runner.check_resume(runner.find_notebook("01"), {}, target)
