import shutil

import numpy as np
import pandas as pd

from ingestlab import noise

FIXTURE = "tests/fixtures/runs/a/01_insert_anatomy"


def _runs(tmp_path, factors):
    for i, factor in enumerate(factors):
        folder = tmp_path / f"r{i}" / "01_insert_anatomy"
        shutil.copytree(FIXTURE, folder)
        samples = pd.read_parquet(folder / "results.parquet")
        samples["elapsed_s"] *= factor  # the whole run shifted: a run-level effect
        samples.to_parquet(folder / "results.parquet")
    return tmp_path


def test_whole_runs_that_shift_show_as_run_level_noise_and_identical_runs_as_none(tmp_path):
    same = noise.table(_runs(tmp_path / "same", [1.0, 1.0, 1.0]))
    samples = same[same["kind"] == "samples"]
    assert len(samples) and np.allclose(samples["between_sd"], 0, atol=1e-12) and (samples["run_level_sd"] == 0).all()
    assert (samples["within_sd"] > 0).all()  # each run's own samples still scatter
    factors = np.exp([-0.2, 0.0, 0.2])  # log levels 0.2 apart: between-run sd 0.2
    shifted = noise.table(_runs(tmp_path / "shifted", factors))
    samples = shifted[shifted["kind"] == "samples"]
    assert np.allclose(samples["between_sd"], 0.2, atol=1e-9)
    assert (samples["run_level_sd"] <= samples["between_sd"]).all()
    precise = samples[samples["within_sd"] < 0.1]  # what the runs' own samples cannot explain is the run level
    assert len(precise) and (precise["run_level_sd"] > 0.15).all()
    assert set(shifted["kind"]) == {"samples", "fit"} and (shifted["runs"] == 3).all()


def test_fewer_runs_than_asked_give_no_row(tmp_path):
    assert noise.table(_runs(tmp_path, [1.0, 1.0])).empty
