import json
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from ingestlab.results import FIT_COLUMNS, Run, load_run


def test_run_json_is_written_at_once_and_marked_completed_by_finish(tmp_path):
    run = Run("nb", {"TARGET": "mysql://root:hunter2@127.0.0.1:3306/db", "N": 3}, tmp_path)
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["completed"] is False
    assert meta["parameters"]["TARGET"] == "mysql://root:***@127.0.0.1:3306/db"
    assert meta["host"]["cpu_cores"] and meta["software"]["python"]
    assert "revision" in meta["git"]
    run.append(pd.DataFrame({"elapsed_s": [0.1], "warmup": [True]}), engine="e")
    run.append(pd.DataFrame({"elapsed_s": [0.2], "warmup": [False]}), engine="e")
    fits = pd.DataFrame({c: [1.0] for c in FIT_COLUMNS} | {"engine": ["e"], "variant": ["v"], "term": ["overhead"]})
    with pytest.raises(ValueError, match="long form"):
        run.finish(fits=fits.drop(columns=["model"]))  # a wide or partial table is refused, the run left open
    assert json.loads((tmp_path / "run.json").read_text())["completed"] is False
    run.finish(fits=fits)
    frame, meta = load_run(tmp_path)
    assert meta["completed"] is True and meta["warmup"]["results"] == 1
    assert frame["elapsed_s"].tolist() == [0.1, 0.2]
    written = pd.read_csv(tmp_path / "fits.csv")
    assert list(written.columns) == FIT_COLUMNS and written["notebook"].tolist() == ["nb"]
    assert "hunter2" not in "".join(p.read_text(errors="ignore") for p in tmp_path.iterdir() if p.suffix != ".parquet")


def test_a_killed_run_keeps_its_samples_and_says_incomplete(tmp_path):
    code = textwrap.dedent(f"""
        import os, pandas as pd
        from ingestlab.results import Run
        run = Run("nb", {{}}, {str(tmp_path)!r})
        run.append(pd.DataFrame({{"elapsed_s": [0.5, 0.6], "warmup": [False, False]}}))
        os._exit(9)  # dies without finishing, as a killed kernel would
    """)
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    frame, meta = load_run(tmp_path)
    assert meta["completed"] is False
    assert frame["elapsed_s"].tolist() == [0.5, 0.6]



def test_a_configuration_writes_its_rows_at_most_every_interval_and_when_it_ends_however(tmp_path, monkeypatch):
    from ingestlab import results

    monkeypatch.setattr(results, "FLUSH_INTERVAL_S", 3600.0)
    run = Run("nb", {}, tmp_path)
    seen = []

    def measure():
        for i in range(3):
            run.append(pd.DataFrame({"elapsed_s": [i / 10], "warmup": [False]}))
            seen.append((tmp_path / "results.parquet").exists())
        raise KeyboardInterrupt  # as Ctrl-C in the middle of a configuration

    with pytest.raises(KeyboardInterrupt):
        run.once({"engine": "e"}, measure)
    assert seen == [False, False, False]  # not rewritten on every append inside a configuration
    assert load_run(tmp_path)[0]["elapsed_s"].tolist() == [0.0, 0.1, 0.2]  # but written when it ended

    monkeypatch.setattr(results, "FLUSH_INTERVAL_S", 0.0)
    run.once({"engine": "f"}, lambda: [run.append(pd.DataFrame({"elapsed_s": [1.0], "warmup": [True]})),
                                       seen.append(len(pd.read_parquet(tmp_path / "results.parquet")))])
    assert seen[-1] == 4 and json.loads((tmp_path / "run.json").read_text())["warmup"]["results"] == 1

def _repo_with_a_notebook(path, filter_log):
    """A git repository whose notebooks pass a clean filter that logs each call (as nbstripout's would run)."""
    def git(*args):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)

    path.mkdir()
    git("init", "-q")
    git("config", "user.email", "lab@example.org")
    git("config", "user.name", "lab")
    (path / ".gitattributes").write_text("*.ipynb filter=nbstripout\n")
    cell = {"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": None}
    (path / "nb.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    strip = ("import json, sys; nb = json.load(sys.stdin); "
             "[c.update(outputs=[], execution_count=None) for c in nb['cells']]; json.dump(nb, sys.stdout)")
    git("config", "filter.nbstripout.clean", f"echo call >> {filter_log}; {sys.executable} -c \"{strip}\"")
    git("add", ".")
    git("commit", "-qm", "one notebook")
    return cell


def test_git_info_passes_unchanged_notebooks_without_their_slow_filter(tmp_path, monkeypatch):
    from ingestlab import _paths, results

    log = tmp_path / "filter.log"
    repo = tmp_path / "repo"
    cell = _repo_with_a_notebook(repo, log)
    monkeypatch.setattr(_paths, "REPO", repo)
    log.unlink(missing_ok=True)
    (repo / "nb.ipynb").touch()  # a fresh clone: every file newer than git's record of it
    info = results.git_info()
    assert info["dirty"] is False and len(info["revision"]) == 40
    assert not log.exists(), "an unchanged notebook went through the clean filter"

    # outputs saved from JupyterLab: the filter strips them, so the tree is still the commit
    saved = dict(cell, outputs=[{"output_type": "stream", "name": "stdout", "text": "1\n"}], execution_count=1)
    (repo / "nb.ipynb").write_text(json.dumps({"cells": [saved], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert results.git_info()["dirty"] is False
    assert log.exists(), "a notebook with outputs was not compared through the filter"

    changed = dict(saved, source="x = 2")
    (repo / "nb.ipynb").write_text(json.dumps({"cells": [changed], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert results.git_info()["dirty"] is True
    (repo / "other.py").write_text("y = 1\n")
    subprocess.run(["git", "-C", str(repo), "add", "other.py"], check=True)
    (repo / "other.py").write_text("y = 2\n")
    assert results.git_info()["dirty"] is True
