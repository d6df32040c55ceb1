"""Another local user's folders: nothing the lab writes or reads goes through a place they could redirect (issue V, 1-2)."""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

import pytest

from ingestlab import cli, safe_paths
from ingestlab.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures" / "runs"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="another user's files are made by chown, as root")


@pytest.fixture
def nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


@pytest.fixture
def shared(tmp_path) -> Path:
    """A scratch folder every local user can write, without the sticky bit."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    return folder


def test_a_folder_of_this_user_is_fine_and_a_sticky_one_too(tmp_path):
    assert safe_paths.problem(tmp_path / "new" / "deeper") is None
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    assert safe_paths.problem(sticky / "out") is None


def test_a_folder_in_a_folder_others_can_write_is_refused_in_one_line(shared):
    with pytest.raises(ConfigError, match=r"--out=.* is not valid: expected a folder no other user can change "
                                          r"\(.*shared is a folder other users can write\)"):
        safe_paths.check_folder(shared / "out", "--out")
    (shared / "out").mkdir()
    assert "is in" in safe_paths.problem(shared / "out" / "07_compare_runs")


@root_only
def test_a_link_or_a_folder_another_user_made_is_refused(tmp_path, nobody):
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    theirs = sticky / "theirs"
    theirs.mkdir()
    os.chown(theirs, nobody, -1)
    assert "other users can write" in safe_paths.problem(theirs / "out") or "is in" in safe_paths.problem(theirs)
    link = sticky / "link"
    link.symlink_to(tmp_path)
    os.lchown(link, nobody, -1)
    assert "symbolic link another user could have made" in safe_paths.problem(link / "out")


@root_only
def test_the_hostile_commands_write_and_read_nothing_through_another_user_s_links(tmp_path, shared, nobody, capsys):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    secret = private / "secret.csv"
    secret.write_text("term,estimate\nroot's secret,1\n")
    secret.chmod(0o600)
    out = shared / "out"
    out.mkdir()
    os.chown(out, nobody, -1)
    (out / "07_compare_runs").symlink_to(private)  # planted: the run would be written into root's folder
    run_b = shutil.copytree(FIXTURES / "b", shared / "runb")
    fits = run_b / "01_insert_anatomy" / "fits.csv"
    fits.unlink()
    fits.symlink_to(secret)  # planted: a private file's rows would be copied into world-readable outputs
    commands = [
        (["run", "07", "--out", str(out)], "--out"),
        (["run", "07", "--out", str(tmp_path / "mine"), "-p", "RUN_B", str(run_b)], "RUN_B"),
        (["compare", str(FIXTURES / "a"), str(run_b)], "B"),
        (["figures", str(run_b), "01", "--to", str(tmp_path / "figs")], "RUN_DIR"),
        (["figures", str(FIXTURES / "a"), "01", "--to", str(shared / "figs")], "--to"),
        (["run", "06", "--out", str(tmp_path / "mine06"), "-p", "DATA_DIR", str(shared / "csv")], "DATA_DIR"),
        (["summary", str(run_b)], "RUN_DIR"),  # it printed the secret's rows
        (["sql", "SELECT 1 AS one", "--root", str(FIXTURES), "--csv", str(shared / "one.csv")], "--csv"),
        (["sql", "SELECT 1 AS one", "--root", str(FIXTURES), "--parquet", str(shared / "one.parquet")], "--parquet"),
    ]
    for argv, named in commands:
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and named in err and "no other user can change" in err, (argv, err)
    assert sorted(p.name for p in private.iterdir()) == ["secret.csv"]
    assert not (tmp_path / "mine").exists() and not (tmp_path / "figs").exists() and not (shared / "figs").exists()
    assert not (shared / "one.csv").exists() and not (shared / "one.parquet").exists()
