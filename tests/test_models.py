import numpy as np
import pandas as pd
import pytest

from ingestlab import models


def _synthetic(rng, overhead_s=0.002, write_s=0.05, noise_s=0.004, repeats=3):
    ns = [1000, 10, 1]
    rows = [{"n_statements": n, "total_s": n * overhead_s + write_s + rng.normal(0, noise_s)}
            for _ in range(repeats) for n in ns]
    return pd.DataFrame(rows)


def test_fit_recovers_known_overhead_within_ci():
    rng = np.random.default_rng(42)
    covered = 0
    for _ in range(200):
        fit = models.fit_overhead(_synthetic(rng), robust=False).iloc[0]
        covered += fit["overhead_ci_low_ms"] <= 2.0 <= fit["overhead_ci_high_ms"]
    assert covered / 200 >= 0.90


def test_fit_estimate_is_close_and_intercept_is_write_time():
    fit = models.fit_overhead(_synthetic(np.random.default_rng(1), noise_s=1e-5), robust=False).iloc[0]
    assert fit["overhead_ms"] == pytest.approx(2.0, rel=1e-3)
    assert fit["write_time_s"] == pytest.approx(0.05, abs=1e-4)
    assert fit["r2"] > 0.999 and fit["n_points"] == 9


def test_theil_sen_rides_beside_ols_and_resists_an_outlier():
    data = _synthetic(np.random.default_rng(3), noise_s=1e-4, repeats=4)
    data.loc[0, "total_s"] *= 3  # one wild run
    fits = models.fit_overhead(data).set_index("method")
    assert set(fits.index) == {"ols", "theil_sen"}
    assert abs(fits.loc["theil_sen", "overhead_ms"] - 2.0) < abs(fits.loc["ols", "overhead_ms"] - 2.0)


def test_fit_groups_by_the_columns_present():
    a = _synthetic(np.random.default_rng(4)).assign(engine="e", variant="a")
    b = _synthetic(np.random.default_rng(5), overhead_s=0.001).assign(engine="e", variant="b")
    fits = models.fit_overhead(pd.concat([a, b]), robust=False).set_index("variant")
    assert fits.loc["a", "overhead_ms"] > fits.loc["b", "overhead_ms"]


def test_fit_refuses_too_few_points():
    with pytest.raises(ValueError, match="3 points"):
        models.fit_overhead(pd.DataFrame({"n_statements": [1, 10], "total_s": [0.1, 0.2]}))


def test_scenario_totals_exclude_warmup():
    samples = pd.DataFrame({"scenario": ["s"] * 3, "repeat": [0] * 3, "warmup": [True, False, False],
                            "rows": [1, 1, 1], "elapsed_s": [5.0, 0.1, 0.2]})
    totals = models.scenario_totals(samples).iloc[0]
    assert (totals["n_statements"], totals["rows"], totals["total_s"]) == (2, 2, pytest.approx(0.3))


def test_overhead_difference_ci_brackets_the_true_difference():
    a = _synthetic(np.random.default_rng(6), overhead_s=0.003, noise_s=1e-4).assign(variant="a")
    b = _synthetic(np.random.default_rng(7), overhead_s=0.001, noise_s=1e-4).assign(variant="b")
    fits = models.fit_overhead(pd.concat([a, b]), by=["variant"], robust=False)
    d = models.overhead_difference(fits, {"variant": "a"}, {"variant": "b"})
    assert d["diff_ci_low_ms"] < 2.0 < d["diff_ci_high_ms"]
    assert d["ratio"] == pytest.approx(3.0, rel=0.01)


def test_scale_table_scales_linearly():
    t = models.scale_table({"diff_ms": 2.0, "diff_ci_low_ms": 1.0, "diff_ci_high_ms": 3.0})
    assert t["n_statements"].tolist() == list(models.SCALE_NS)
    assert t.set_index("n_statements").loc[100_000, "extra_s"] == pytest.approx(200.0)


def test_ratio_ci_covers_true_ratio():
    rng = np.random.default_rng(8)
    r = models.ratio_ci(rng.lognormal(np.log(3), 0.1, 200), rng.lognormal(0, 0.1, 200))
    assert r["ci_low"] < 3.0 < r["ci_high"]


def test_compare_with_published_flags_coverage():
    live = pd.DataFrame({"quantity": ["a", "b"], "live": [10.0, 5.0], "live_ci_low": [9.0, 4.0],
                         "live_ci_high": [11.0, 6.0]})
    pub = pd.DataFrame({"quantity": ["a", "b"], "published": [10.5, 8.0]})
    out = models.compare_with_published(live, pub).set_index("quantity")
    assert out.loc["a", "ci_covers_published"] and not out.loc["b", "ci_covers_published"]
    assert out.loc["b", "ratio"] == pytest.approx(5 / 8)
