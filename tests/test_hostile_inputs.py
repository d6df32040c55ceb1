"""Hostile but fair inputs: each refused before anything starts, in one line naming its parameter (exit 2)."""

from __future__ import annotations

import pytest

from ingestlab import cli, runner
from ingestlab.errors import ConfigError

#: (notebook, parameters, the parameter the one-line refusal names)
REFUSED = [
    ("00", {"ALPHA": 0}, "ALPHA"),
    ("00", {"ALPHA": 1.5}, "ALPHA"),
    ("00", {"ALPHA": -0.1}, "ALPHA"),
    ("00", {"ALPHA": "abc"}, "ALPHA"),
    ("00", {"ALPHA": ""}, "ALPHA"),
    ("01", {"REPEATS": 1_000_000_000}, "REPEATS"),
    ("01", {"N": 0}, "N"),
    ("01", {"ENGINES": ",,,"}, "ENGINES=',,,' is not valid: expected a comma-separated list with at least one item"),
    ("01", {"SCENARIOS": ",,,"}, "SCENARIOS=',,,' is not valid: expected a comma-separated list with at least one"),
    ("01", {"ENGINES": "postgres,postgres"}, "given twice"),
    ("01", {"TARGET": "postgres"}, "ENGINES"),
    ("02", {"TARGETS": "postgres"}, "ENGINES"),
    ("02", {"FACTORS": "partitions", "PARTITIONS": 8}, "PARTITIONS"),
    ("02", {"FACTORS": "columns", "COLUMNS": "20"}, "COLUMNS"),
    ("02", {"FACTORS": "columns", "MODELS": "unlogged"}, "MODELS"),
    ("04", {"DURATION_S": 1_000_000_000}, "DURATION_S"),
    ("04", {"DURATION_S": float("inf")}, "DURATION_S"),
    ("04", {"DURATION_S": float("nan")}, "DURATION_S"),
    ("04", {"WARMUP_S": -1}, "WARMUP_S"),
    ("05", {"RUNS": 3}, "REPEATS"),
    ("05", {"ENGINES": "rocksdb", "SETTINGS": "async_commit"}, "ENGINES='rocksdb' is not valid: expected an engine with"),
    ("05", {"ENGINES": "arangodb://u@h/db"}, "ENGINES='arangodb://u@h/db' is not valid: expected an engine with "
     "table_ddl, which notebook 05 needs (arangodb: no table_ddl: "),
    ("06", {"DATA_DIR": "/etc/passwd"}, "DATA_DIR='/etc/passwd' is not valid: expected a folder for the generated "
     "tables (this is a file)"),
    ("06", {"DATA_DIR": "/etc/passwd/tables"}, "(/etc/passwd is a file)"),
    ("06", {"ENGINES": "duckdb"}, "READERS"),
    ("06", {"ROUNDS": 2}, "REPEATS"),
    # issue V: valid-looking values that started a run that never ended, or failed after it started
    ("04", {"LOOP": "open", "RATE": float("nan")}, "RATE=nan"),
    ("04", {"LOOP": "open", "RATE": 1e-300}, "RATE=1e-300"),
    ("04", {"LOOP": "open", "RATE": float("inf")}, "RATE=inf"),
    ("01", {"WARMUP": 1_000_000_000}, "WARMUP"),
    ("02", {"STATEMENTS": 1_000_000_000}, "STATEMENTS"),
    ("02", {"REPEATS": 1_000_000_000}, "REPEATS"),
    ("05", {"REPEATS": 1_000_000_000}, "REPEATS"),
    ("05", {"ROWS": 1_000_000_000_000}, "ROWS"),
    ("06", {"REPEATS": 1_000_000_000}, "REPEATS"),
    ("01", {"ENGINES": "postgresql://u@127.0.0.1:99999/db"}, "port is from 1 to 65535 (not 99999)"),
    ("01", {"ENGINES": "postgresql://u@127.0.0.1:0/db"}, "port is from 1 to 65535 (not 0)"),
    ("01", {"ENGINES": "postgresql://u@127.0.0.1%00:5432/db"}, "not percent-escaped bytes"),
    ("06", {"DATA_DIR": "/proc/tables"}, "DATA_DIR='/proc/tables' is not valid: expected a folder on a disk"),
]


@pytest.mark.parametrize("notebook, parameters, named", REFUSED, ids=[f"{n}-{'-'.join(p)}" for n, p, _ in REFUSED])
def test_a_hostile_value_is_refused_before_anything_starts_naming_its_parameter(notebook, parameters, named):
    with pytest.raises(ConfigError) as refusal:
        runner.check_parameters(runner.find_notebook(notebook), parameters)
    assert named in str(refusal.value) and "\n" not in str(refusal.value)


#: Values at the documented edges, and single values for list parameters: all accepted.
ACCEPTED = [
    ("00", {"ALPHA": 0.5}),
    ("01", {"REPEATS": 1000, "N": 10}),
    ("02", {"FACTORS": "columns", "COLUMNS": "4,50"}),
    ("04", {"CLIENTS": 2, "BATCH_ROWS": 10, "DURATION_S": 3600}),
    ("04", {"CLIENTS": "96"}),
    ("05", {"REPEATS": 1}),
    ("06", {"SIZES": "0.75,1.5,3", "REPEATS": 1}),
    ("07", {"THRESHOLD": 0.5}),
    ("07", {"NOTEBOOK": 1}),  # "-p NOTEBOOK 01" as YAML reads it
    ("04", {"LOOP": "open", "RATE": 0.01}),
]


@pytest.mark.parametrize("notebook, parameters", ACCEPTED, ids=[f"{n}-{'-'.join(p)}" for n, p in ACCEPTED])
def test_a_value_at_its_documented_edge_is_accepted(notebook, parameters):
    assert runner.check_parameters(runner.find_notebook(notebook), parameters) == parameters


def test_the_old_name_of_the_password_hand_over_is_refused_naming_the_new_one(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INGESTLAB_PASSWORDS", '{"u@h:5432": "hunter2"}')
    assert cli.main(["run", "07"]) == 2
    err = capsys.readouterr().err.strip()
    assert "now called $INGESTLAB_HANDOVER" in err and "hunter2" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("argv, needle", [
    (["run", "01", "-p", "N", "10", "-p", "N", "20"], "N is given 2 times"),
    (["run", "01", "--out", ""], "--out=''"),
    (["run", "01", "-p", "TARGET", "postgres"], "is now called ENGINES"),
    (["run", "all", "-p", "TARGETS", "postgres"], "is now called ENGINES"),
    (["run", "04", "-p", "ROWS_PER_INSERT", "10"], "is now called BATCH_ROWS"),
])
def test_the_command_line_refuses_in_one_line_with_exit_2(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an empty --out must not become this folder
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not any(tmp_path.iterdir())



def _edges():
    """(notebook, parameter, values accepted at its bounds, values just beyond them, other parameters).

    The bounds are the code's own (its ``MAX_*`` constants and the minimums its docs state).
    """
    from ingestlab.concurrency import MAX_CLIENTS
    from ingestlab.workloads import group_commit, insert, million, sweeps

    most_rows = million.MAX_BATCH_ROWS
    return [
        # N = 1 gives every scenario one statement: refused for SCENARIOS ("at this N"), the fit needs two counts
        ("01", "N", (2, insert.MAX_N), (0, insert.MAX_N + 1), {"REPEATS": 1}),
        ("01", "REPEATS", (1, insert.MAX_REPEATS), (0, insert.MAX_REPEATS + 1), {}),
        ("01", "PROFILE_N", (0, insert.MAX_PROFILE_N), (-1, insert.MAX_PROFILE_N + 1), {}),
        ("01", "WARMUP", (0,), (-1,), {}),
        ("02", "COLUMNS", ("4,50", f"50,{sweeps.MAX_COLUMNS}"), ("3,50", f"50,{sweeps.MAX_COLUMNS + 1}"),
         {"FACTORS": "columns", "ENGINES": "postgres"}),
        ("04", "CLIENTS", (1, MAX_CLIENTS), (0, MAX_CLIENTS + 1), {}),
        ("04", "BATCH_ROWS", (1, group_commit.MAX_ROWS_PER_INSERT), (0, group_commit.MAX_ROWS_PER_INSERT + 1), {}),
        ("04", "DURATION_S", (0.001, group_commit.MAX_SECONDS), (0, -1, group_commit.MAX_SECONDS + 0.5), {}),
        ("04", "WARMUP_S", (0, group_commit.MAX_SECONDS), (-0.001, group_commit.MAX_SECONDS + 0.5), {}),
        ("05", "BATCH_ROWS", ("1,100", f"100,{most_rows}"), ("0,100", f"100,{most_rows + 1}"),
         {"ROWS": most_rows + 10}),
        ("05", "REPEATS", (1,), (0,), {}),
    ]


@pytest.mark.parametrize("notebook, name, accepted, refused, others", _edges(),
                         ids=[f"{nb}-{name}" for nb, name, *_ in _edges()])
def test_each_bound_a_notebook_declares_is_accepted_and_a_step_beyond_refused_naming_it(
        notebook, name, accepted, refused, others):
    path = runner.find_notebook(notebook)
    for value in accepted:
        runner.check_parameters(path, {**others, name: value})
    for value in refused:
        with pytest.raises(ConfigError) as refusal:
            runner.check_parameters(path, {**others, name: value})
        assert name in str(refusal.value) and "\n" not in str(refusal.value), (value, str(refusal.value))


# -- secrets in a URL (issue V, items 3 and 4) --------------------------------------------------
@pytest.mark.parametrize("url, secret", [
    ("postgresql://u@127.0.0.1/db?sslmode=disable&sslpassword=TOPsecret9", "TOPsecret9"),
    ("mariadb://u@127.0.0.1:3306/db?password1=TOPsecret9&label=x", "TOPsecret9"),
])
def test_a_secret_option_in_a_url_is_refused_and_shown_nowhere(url, secret, capsys, tmp_path):
    out = tmp_path / "out"
    assert cli.main(["run", "01", "--out", str(out), "-p", "ENGINES", url]) == 2
    captured = capsys.readouterr()
    assert secret not in captured.err + captured.out and "***" in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and not out.exists()


def test_a_raw_question_mark_in_a_password_is_part_of_it_and_never_echoed(capsys, tmp_path):
    from ingestlab.conninfo import Connection, mask_url

    url = "postgresql://u:p@ss?wXyZ9@127.0.0.1:1/db"
    parsed = Connection.parse(url)
    assert (parsed.host, parsed.port, parsed.database, parsed.password) == ("127.0.0.1", 1, "db", "p@ss?wXyZ9")
    assert mask_url(url) == "postgresql://u:***@127.0.0.1:1/db"
    assert cli.main(["run", "01", "--out", str(tmp_path / "out"), "-p", "ENGINES", url]) == 3  # nothing listens on 1
    err = capsys.readouterr().err
    assert "ss?w" not in err and "XyZ9" not in err and "127.0.0.1" in err


_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8))


@pytest.mark.parametrize("content, argv_of, needle", [
    (None, lambda f: ["-f", "/dev/zero"], "at most 1,000,000 bytes"),
    (None, lambda f: ["--password-file", "/dev/zero", "-p", "ENGINES", "postgresql://u@127.0.0.1:1/db"],
     "at most 4,096 bytes"),
    (_BOMB, lambda f: ["-f", f], "YAML without aliases"),
    ("a: &a [*a]\n", lambda f: ["-f", f], "YAML without aliases"),
    ("N: 10\nREPEATS: 1\nN: 20\n", lambda f: ["-f", f], "each parameter once (N given twice)"),
])
def test_a_parameters_or_password_file_is_read_bounded_in_one_line(content, argv_of, needle, capsys, tmp_path):
    path = tmp_path / "params.yaml"
    if content is not None:
        path.write_text(content)
    assert cli.main(["run", "01", "--out", str(tmp_path / "out"), *argv_of(str(path))]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and len(err) < 1000 and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_force_replaces_a_run_s_files_only_and_a_folder_of_other_files_is_not_called_a_run(tmp_path, capsys):
    folder = tmp_path / "x" / "07_compare_runs"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("mine\n")
    assert cli.main(["run", "07", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "holds files that are not a run's (notes.txt, sub)" in err and "already holds a run" not in err
    assert cli.main(["run", "07", "--out", str(tmp_path / "x"), "--force"]) == 2
    assert "notes.txt, sub no run of the lab wrote" in capsys.readouterr().err
    assert (folder / "notes.txt").read_text() == "mine\n" and (folder / "sub").is_dir()


@pytest.mark.parametrize("env, value, code, needle", [
    ("INGESTLAB_LOCK_WAIT_S", "1e12", 2, "at most 86400"),
    ("INGESTLAB_HTML", "yes", 2, "0 (no HTML copy of each notebook) or 1"),
    ("INGESTLAB_LAB_DIR", "/proc/lab", 3, "/proc is on a virtual filesystem that stores nothing"),
    ("INGESTLAB_FIGURES_DIR", "/etc/passwd/figures", 3, "/etc/passwd is not a folder"),
    ("INGESTLAB_FIGURES_DIR", "/proc/figures", 3, "virtual filesystem"),
])
def test_an_unusable_environment_is_refused_before_anything_starts(env, value, code, needle, monkeypatch, tmp_path,
                                                                    capsys):
    monkeypatch.setenv(env, value)
    assert cli.main(["run", "00", "--no-progress", "--out", str(tmp_path / "out")]) == code
    said = capsys.readouterr().err.splitlines()  # one line: no notebook's banner before it
    assert len(said) == 1 and said[0].startswith("ingestlab:") and needle in said[0], said
    assert not (tmp_path / "out").exists()


def test_an_unreachable_server_fails_the_pre_flight_exit_3(capsys, tmp_path):
    assert cli.main(["run", "03", "--out", str(tmp_path / "out"), "-p", "ENGINES", "arangodb://u@127.0.0.1:1/db"]) == 3
    assert "cannot reach arangodb://u@127.0.0.1:1/db" in capsys.readouterr().err
