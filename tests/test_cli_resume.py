"""``ingestlab run --resume`` on the embedded PostgreSQL: interrupt a real run, resume it, nothing measured twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from ingestlab.checkpoints import FOLDER
from tests.test_cli_failures import BIN, _cli, _one_line, _server_pids, _wait_for

NB01 = ["-p", "ENGINES", "postgres", "-p", "REPEATS", "2", "-p", "N", "200", "-p", "PROFILE_N", "2", "-p", "VARIANTS", "sync_on,sync_off"]
NB04 = ["-p", "ENGINES", "postgres", "-p", "CLIENTS", "1,2", "-p", "BATCH_ROWS", "1,10", "-p", "DURATION_S", "0.5", "-p", "WARMUP_S", "0.1",
        "-p", "VARIANTS", "default,sync_off"]


def _complete(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / FOLDER).glob("*") if (p / "key.json").exists()) if folder.exists() else []


def _interrupt_after_first_checkpoint(notebook: str, args: list[str], out: Path, lab: Path) -> dict[str, dict]:
    """Start the run, SIGTERM ``ingestlab`` once a configuration is checkpointed; return the checkpoints then."""
    folder = out / notebook
    proc = subprocess.Popen([str(BIN), "run", notebook[:2], "--no-progress", "--out", str(out), *args],
                            env={**os.environ, "INGESTLAB_LAB_DIR": str(lab)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: _complete(folder), 180)
    finally:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-2000:]
    meta = json.loads((folder / "run.json").read_text())
    assert meta["completed"] is False and not _server_pids(lab)
    kept = {p.name: {t.stem: pd.read_parquet(t) for t in p.glob("*.parquet")} for p in _complete(folder)}
    assert 0 < len(kept) < meta["configurations"]["measured"] + 30
    return kept


def _check_kept_unchanged(kept: dict[str, dict], folder: Path, tables: dict[str, list[str]], since_ns: int) -> None:
    """Each kept configuration's rows stand in the final tables unchanged; every other row is newer than ``since_ns``."""
    for table, labels in tables.items():
        final = pd.read_parquet(folder / f"{table}.parquet")
        old = pd.concat([t[table] for t in kept.values() if table in t], ignore_index=True)
        assert not final.duplicated().any()
        merged = final.merge(old, how="left", indicator=True)
        assert (merged["_merge"] == "both").sum() == len(old)  # every kept row is there, as it was measured
        if "started_ns" in final:
            assert (old["started_ns"] < since_ns).all()
            assert (merged.loc[merged["_merge"] == "left_only", "started_ns"] > since_ns).all()
        assert not final.duplicated(labels).any() if labels else True


@pytest.mark.slow  # ~31 s here (2 cores)
@pytest.mark.skipif(sys.platform != "linux", reason="needs the embedded PostgreSQL (Linux wheels)")
def test_notebook_01_resumes_from_its_last_complete_configuration(tmp_path):
    lab, out = tmp_path / "lab", tmp_path / "out"
    folder = out / "01_insert_anatomy"
    kept = _interrupt_after_first_checkpoint("01_insert_anatomy", NB01, out, lab)
    before = sorted(p.name for p in _complete(folder))

    # other parameters: refused in one line, before anything starts, the folder untouched
    other_n = [("300" if prev == "N" else v) for prev, v in zip([None, *NB01], NB01)]  # -p N 300, given once
    res = _cli("run", "01", "--no-progress", "--out", str(out), "--resume", *other_n, lab=lab)
    _one_line(res, 2, "--resume", "these differ: N (was 200)")
    assert sorted(p.name for p in _complete(folder)) == before

    since = time.monotonic_ns()  # the same clock as the samples' started_ns (CLOCK_MONOTONIC)
    res = _cli("run", "01", "--no-progress", "--out", str(out), "--resume", *NB01, lab=lab)
    assert res.returncode == 0, res.stderr[-3000:]
    meta = json.loads((folder / "run.json").read_text())
    total = 2 * 2 * 5  # variants × repeats × scenarios (the anatomy's passes sit inside the single-row ones)
    assert meta["completed"] is True and "error" not in meta
    assert meta["resumed"]["kept"] == len(kept) and meta["resumed"]["kept"] + meta["resumed"]["measured"] == total
    assert f"resumed: {len(kept)} configurations kept, {total - len(kept)} measured" in res.stderr
    samples = pd.read_parquet(folder / "results.parquet")
    sizes = samples.groupby(["variant", "repeat", "scenario"]).size()
    assert len(sizes) == 20 and sizes.xs("single_row", level="scenario").eq(200 + 20).all()  # all of them, once
    _check_kept_unchanged(kept, folder, {"results": ["variant", "repeat", "scenario", "statement_no", "warmup"]},
                          since)
    assert len(pd.read_csv(folder / "fits.csv")) >= 2 and not _server_pids(lab)


@pytest.mark.slow  # ~39 s here (2 cores)
@pytest.mark.skipif(sys.platform != "linux", reason="needs the embedded PostgreSQL (Linux wheels)")
def test_notebook_04_resumes_its_grid_without_measuring_a_configuration_twice(tmp_path):
    lab, out = tmp_path / "lab", tmp_path / "out"
    folder = out / "04_group_commit"
    kept = _interrupt_after_first_checkpoint("04_group_commit", NB04, out, lab)
    since = time.monotonic_ns()
    res = _cli("run", "04", "--no-progress", "--out", str(out), "--resume", *NB04, lab=lab)
    assert res.returncode == 0, res.stderr[-3000:]
    meta = json.loads((folder / "run.json").read_text())
    assert meta["completed"] is True and meta["resumed"]["kept"] == len(kept)
    assert meta["resumed"]["kept"] + meta["resumed"]["measured"] == 2 * 2 * 2
    grid = ["variant", "clients", "rows_per_insert"]
    throughput = pd.read_csv(folder / "throughput.csv")
    assert len(throughput) == 8 and not throughput.duplicated(grid).any()
    _check_kept_unchanged(kept, folder, {"results": [*grid, "client", "statement_no"], "throughput": grid,
                                         "client_cpu": [*grid, "client"]}, since)
    assert not _server_pids(lab)
