import shutil

import numpy as np
import pandas as pd
import pytest

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


def test_a_measured_noise_file_is_compares_prior_per_quantity(tmp_path):
    from ingestlab.errors import ConfigError
    from ingestlab.workloads import compare_runs_analysis as analysis

    measured = noise.table(_runs(tmp_path / "m", np.exp([-0.03, 0.0, 0.03])))
    measured.to_csv(tmp_path / "noise.csv", index=False)
    sigma = noise.prior(tmp_path / "noise.csv")
    row = measured[measured["kind"] == "samples"].iloc[0]
    quantity = {c: row[c] for c in noise.QUANTITY}
    assert sigma(quantity) == max(row["run_level_sd"], noise.PRIOR_FLOOR)
    assert sigma({**quantity, "engine": "another"}) is None
    # compare with that prior: one run a side can now call a change that the default prior (0.10) cannot
    runs = _runs(tmp_path / "ab", [1.0, 1.3])
    default = analysis.compare(runs / "r0", runs / "r1", "01", reference=False)
    measured_prior = analysis.compare(runs / "r0", runs / "r1", "01", reference=False, run_noise=sigma)
    single = (default["kind"] == "samples") & (default["labels"].str.contains("single_row"))
    assert (measured_prior.loc[single, "detectable"] < default.loc[single, "detectable"]).all()
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ConfigError, match="--noise"):
        noise.prior(tmp_path / "bad.csv")
