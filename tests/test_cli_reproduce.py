"""The newcomer's path through ``ingestlab run``: engines this machine lacks, several notebooks, figures, -f.

MariaDB is made unavailable for real: ``$INGESTLAB_MARIADB_BIN_DIR`` points the lab's search for
``mariadbd`` at an empty folder, as on a machine without the package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingestlab import _paths
from ingestlab.engines.mariadb.server import BIN_DIR_ENV

BIN = Path(sys.executable).parent / "ingestlab"


def _cli(*args, tmp_path: Path, no_mariadb: bool = True, timeout: int = 600):
    env = {k: v for k, v in os.environ.items() if k != _paths.FIGURES_ENV}  # figures where a user's run puts them
    env["INGESTLAB_LAB_DIR"] = str(tmp_path / "lab")
    if no_mariadb:
        (tmp_path / "no-mariadb").mkdir(exist_ok=True)
        env[BIN_DIR_ENV] = str(tmp_path / "no-mariadb")
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, timeout=timeout)


def _meta(out: Path, notebook: str) -> dict:
    return json.loads((out / notebook / "run.json").read_text())


def test_several_notebooks_leave_out_mariadb_say_so_once_and_exit_0(tmp_path):
    out = tmp_path / "out"
    res = _cli("run", "02", "03", "--no-progress", "--out", str(out), "-p", "STATEMENTS", "5", "-p", "REPEATS", "1",
               "-p", "FACTORS", "columns", "--summary", tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    skipped = [ln for ln in res.stderr.splitlines() if ln.startswith("ingestlab: skipped")]
    assert len(skipped) == 1, res.stderr
    assert "mariadb in 02_component_sweeps, 03_upsert_beyond_ram" in skipped[0] and "mariadbd" in skipped[0]
    assert _meta(out, "02_component_sweeps")["parameters"]["engines"] == ["postgres"]
    assert _meta(out, "03_upsert_beyond_ram")["parameters"]["engines"] == ["postgres", "rocksdb"]
    assert all(_meta(out, nb)["completed"] for nb in ("02_component_sweeps", "03_upsert_beyond_ram"))
    # the summary keeps notebook 03's per-batch intercept apart from per-row costs, and states the scale
    assert "-- batch_time local: overhead (ms per batch)" in res.stdout
    assert "-- batch_time local: per_row (µs per row)" in res.stdout
    assert "ms per statement" not in res.stdout
    assert "SCALE smoke" in res.stdout and "not comparable with paper-scale numbers" in res.stdout


def test_a_notebook_left_without_engines_is_skipped_and_a_run_writes_no_figure_into_the_repository(user_run):
    """``run 00 03 -p ENGINES mariadb`` without MariaDB (the session's shared run: tests/conftest.py)."""
    out, stderr = user_run["out"], user_run["stderr"]
    assert user_run["returncode"] == 0, stderr[-3000:]
    assert "ingestlab: skipped 03_upsert_beyond_ram: none of its engines can start here" in stderr
    assert not (out / "03_upsert_beyond_ram").exists()
    assert user_run["repository_figures_unchanged"], "a run wrote into the repository's figures/"
    made = sorted((out / "00_published_results" / "figures").iterdir())
    # in every format, as a user's run saves them ($INGESTLAB_FIGURE_FORMATS unset)
    assert {p.name for p in made} >= {f"starrocks_overhead_fit.{fmt}" for fmt in ("png", "svg", "pdf")}
    assert {p.suffix for p in made} == {".png", ".svg", ".pdf", ".md"}  # the captions beside them, as Markdown
    assert _meta(out, "00_published_results")["figure_formats"] == ["png", "svg", "pdf"]
    # a completed notebook's kernel says nothing: no unencrypted-TCP warning, no KeyboardInterrupt
    assert (out / "00_published_results" / "kernel.log").read_text() == ""
    assert "figure files in" in stderr


def test_one_notebook_refuses_a_named_engine_that_cannot_start_before_anything_starts(tmp_path, cli_here):
    (tmp_path / "no-mariadb").mkdir()
    res = cli_here("run", "02", "-p", "ENGINES", "postgres,mariadb", "--out", tmp_path / "out",
                   env={"INGESTLAB_LAB_DIR": tmp_path / "lab", BIN_DIR_ENV: tmp_path / "no-mariadb"})
    assert res.returncode == 2, res.stderr
    assert "ENGINES='mariadb'" in res.stderr and "mariadbd" in res.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "lab").exists()


@pytest.mark.parametrize("keep_going, code, ran_07", [([], 3, True), (["--no-keep-going"], 3, False)])
def test_a_failing_notebook_does_not_stop_the_others_unless_asked(tmp_path, keep_going, code, ran_07):
    """01 fails its pre-flight; 07, after it, runs to the end (it compares the committed fixture runs: no server)."""
    out = tmp_path / "out"
    res = _cli("run", "01", "07", "-p", "ENGINES", "postgresql://u@127.0.0.1:1/db", "--no-progress", "--out", str(out),
               *keep_going, tmp_path=tmp_path, no_mariadb=False)
    assert res.returncode == code, res.stderr[-3000:]
    assert "pre-flight check failed" in res.stderr and "Connection refused" in res.stderr
    assert not (out / "01_insert_anatomy" / "run.json").exists()
    assert (out / "07_compare_runs" / "run.json").exists() == ran_07
    if ran_07:
        meta = _meta(out, "07_compare_runs")
        assert meta["completed"] is True
        assert (out / "07_compare_runs" / "figures" / "ratios.png").exists()
        # what measured the data it drew: the two committed smoke runs, which no article figure may come from
        assert [(r["role"], r["notebook"], r["parameters"]["scale"]) for r in meta["compared"]] == [
            ("A", "01_insert_anatomy", "smoke"), ("B", "01_insert_anatomy", "smoke")]
        from ingestlab import promotion
        assert promotion._unfit_compared(meta, allow_loaded=False).startswith("it compares run A (")
        assert "1 of 2 notebooks failed" in res.stderr


def test_parameters_file_is_read_and_p_overrides_it(tmp_path, cli_here):
    params = tmp_path / "params.yaml"
    params.write_text("SCALE: galactic  # overridden below\nN: 0\n")
    res = cli_here("run", "01", "-f", params, "-p", "SCALE", "smoke", "--out", tmp_path / "out",
                   env={"INGESTLAB_LAB_DIR": tmp_path / "lab"})
    assert res.returncode == 2 and "N=0" in res.stderr and "galactic" not in res.stderr, res.stderr
    params.write_text("N: [1, {a: 2}]\n")
    res = cli_here("run", "01", "-f", params, env={"INGESTLAB_LAB_DIR": tmp_path / "lab"})
    assert res.returncode == 2 and res.stderr.startswith("ingestlab: error: N=") and "flat list" in res.stderr
    params.write_text("ENGINES: postgres\nN: 200\nREPEATS: 1\nPROFILE_N: 2\nVARIANTS: [sync_on]\n")
    res = _cli("run", "01", "-f", str(params), "--no-progress", "--out", str(tmp_path / "out"), tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    meta = _meta(tmp_path / "out", "01_insert_anatomy")
    assert meta["parameters"]["n"] == 200 and meta["parameters"]["variants"] == ["sync_on"]


def test_version_and_help_read_as_plain_text(cli_here):
    from ingestlab import __version__

    version = subprocess.run([str(BIN), "--version"], capture_output=True, text=True, check=True).stdout  # the script
    assert version.strip() == f"ingestlab {__version__}"
    for args in ([], ["run"], ["figures"], ["summary"]):
        said = cli_here(*args, "--help")
        assert said.returncode == 0 and "``" not in said.stdout and ":func:" not in said.stdout, said.stdout
    assert "exit codes:" in cli_here("run", "--help").stdout


@pytest.mark.slow
@pytest.mark.parametrize("notebooks, parameters", [
    # issue V item 12: the SCENARIOS refusal suggests single_row,bulk; one repeat leaves 01's fit one point
    (["01", "05"], ["ENGINES", "duckdb", "SCENARIOS", "single_row,bulk", "REPEATS", "1", "METHODS", "generate"]),
    (["04"], ["CLIENTS", "2", "DURATION_S", "0.5", "WARMUP_S", "0.1", "BATCH_ROWS", "1"]),
], ids=["01-05-one-point", "04-two-points"])
def test_a_valid_grid_too_small_for_a_fit_leaves_the_fit_out_saying_so_and_exits_0(tmp_path, notebooks, parameters):
    said = {"01_insert_anatomy": "left out of the fit", "04_group_commit": "left out of the fit",
            "05_million_rows": "No fit: none of the methods"}
    out = tmp_path / "out"
    res = _cli("run", *notebooks, "--no-progress", "--out", str(out),
               *[a for name, value in zip(parameters[::2], parameters[1::2]) for a in ("-p", name, value)],
               tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    for notebook in out.iterdir():
        assert _meta(out, notebook.name)["completed"]
        assert said[notebook.name] in (notebook / f"{notebook.name}.ipynb").read_text(), notebook.name
