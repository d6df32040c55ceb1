"""`ingestlab alternate`: revisions and run counts checked before anything runs, the order, each revision's checkout."""

import contextlib
import shutil
import subprocess
from pathlib import Path

import pytest

from ingestlab import alternate
from ingestlab.cli import main
from ingestlab.errors import ConfigError

HERE = Path(alternate.__file__).parent


def test_alternation_is_a_b_a_b_or_pairs_in_a_recorded_random_order():
    assert alternate.order(2) == ["A", "B", "A", "B"]
    drawn = alternate.order(50, seed=7)
    assert drawn == alternate.order(50, seed=7)  # the seed, recorded, gives the order back
    pairs = [drawn[i:i + 2] for i in range(0, 100, 2)]
    assert all(sorted(p) == ["A", "B"] for p in pairs) and ["B", "A"] in pairs and ["A", "B"] in pairs


@pytest.mark.parametrize(("argv", "said"), [
    (["alternate", "no-such-revision", "HEAD", "01", "--runs", "3"], "REV_A='no-such-revision'"),
    (["alternate", "HEAD", "--help-me", "01", "--runs", "3"], None),
    (["alternate", "HEAD", "HEAD", "01", "--runs", "1"], "--runs=1"),
    (["alternate", "HEAD", "HEAD", "01", "--runs", "201"], "--runs=201"),
    (["alternate", "HEAD", "HEAD", "99", "--runs", "2"], "NOTEBOOK='99'"),
])
def test_bad_revisions_and_run_counts_are_refused_in_one_line_before_anything_runs(argv, said, tmp_path, capsys,
                                                                                  monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    with pytest.raises(SystemExit) if said is None else contextlib.nullcontext():  # argparse's own refusal
        code = main([*argv, "--out", str(tmp_path / "out")])
        assert code == 2
    err = capsys.readouterr().err
    if said:
        assert err.startswith(f"ingestlab: error: {said}") and err.count("\n") == 1
    assert not (tmp_path / "out").exists() and not (tmp_path / "lab").exists()  # no checkout, no run


def test_an_out_folder_holding_files_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old").write_text("x")
    with pytest.raises(ConfigError, match="a new or empty folder"):
        alternate.alternate("HEAD", "HEAD", "01_insert_anatomy", 2, tmp_path / "out")
    assert not (tmp_path / "lab").exists()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.skipif(not list(HERE.glob("_timing*.so")), reason="this package's C half is not built here")
def test_a_revision_is_checked_out_with_the_c_half_it_needs(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "lib" / "ingestlab").mkdir(parents=True)
    shutil.copy(HERE / "_timing.c", repo / "lib" / "ingestlab" / "_timing.c")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    sha = alternate.resolve("HEAD", "REV_A", repo)
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    folder = alternate.checkout(sha, repo)
    assert folder == tmp_path / "lab" / "revisions" / sha
    assert _git(folder, "rev-parse", "HEAD") == sha  # the runs record the revision they ran
    assert [p.name for p in (folder / "lib" / "ingestlab").glob("_timing*.so")] == \
        [p.name for p in HERE.glob("_timing*.so")]  # the same _timing.c: the built module copied
    assert alternate.checkout(sha, repo) == folder  # made once
    with pytest.raises(ConfigError, match="none by this name"):
        alternate.resolve("HEAD~5", "REV_B", repo)


@pytest.mark.skipif(not list(HERE.glob("_timing*.so")), reason="this package's C half is not built here")
def test_a_revision_whose_c_half_differs_gets_its_own_built(tmp_path, monkeypatch):
    import sys

    repo = tmp_path / "repo"
    (repo / "lib" / "ingestlab").mkdir(parents=True)
    changed = (HERE / "_timing.c").read_text() + "\n/* another revision's C half */\n"
    (repo / "lib" / "ingestlab" / "_timing.c").write_text(changed)
    (repo / "lib" / "ingestlab" / "__init__.py").write_text("")
    shutil.copy(HERE.parent.parent / "pyproject.toml", repo / "pyproject.toml")  # metadata the build must not trip on
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    folder = alternate.checkout(alternate.resolve("HEAD", "REV_A", repo), repo)
    built = list((folder / "lib" / "ingestlab").glob("_timing*.so"))
    assert len(built) == 1 and built[0].read_bytes() != next(HERE.glob("_timing*.so")).read_bytes()
    probe = subprocess.run([sys.executable, "-c", "import ingestlab._timing as t; print(t.__file__)"],
                           cwd=folder / "lib", capture_output=True, text=True)
    assert probe.returncode == 0 and str(folder) in probe.stdout, probe.stderr
