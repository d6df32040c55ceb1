import pytest

from ingestlab import runner
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
    clean, secrets = runner.hide_passwords({"ENGINES": "mysql://root:pa:ss@127.0.0.1:3306/db", "N": 3})
    assert clean == {"ENGINES": "mysql://root:***@127.0.0.1:3306/db", "N": 3}
    assert secrets == {"root@127.0.0.1:3306": "pa:ss"}


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
    runner.check_output(shared / "not-yet" / "01_insert_anatomy")
    assert precious.read_text() == "keep me"
    assert sorted(p.name for p in shared.iterdir() if not p.is_symlink()) == []  # and nothing left behind
