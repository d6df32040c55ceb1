import numpy as np
import pandas as pd
import pytest

from ingestlab import usl

# SPEC SDM91 (Sun SPARCcenter 2000) and the ray tracer, as shipped with the R `usl` package (smoeding/usl):
# values decoded from its data/specsdm91.rda and data/raytracer.rda at commit 480c97b (usl 3.0.x).
SPECSDM91_LOAD = [1, 18, 36, 72, 108, 144, 216]
SPECSDM91_THROUGHPUT = [64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2]
RAYTRACER_PROCESSORS = [1, 4, 8, 12, 16, 20, 24, 28, 32, 48, 64]
RAYTRACER_THROUGHPUT = [20, 78, 130, 170, 190, 200, 210, 230, 260, 280, 310]


def _terms(fit):
    return fit.set_index("term")["estimate"]


def test_fit_usl_reproduces_the_r_package_on_spec_sdm91():
    # usl 3.0 summary(usl(throughput ~ load, specsdm91)) (README and tests/summary.Rout.save):
    # alpha 2.773e-02, beta 1.044e-04, gamma 89.995233, peak at load 96.52
    est = _terms(usl.fit_usl(SPECSDM91_LOAD, SPECSDM91_THROUGHPUT))
    assert est["sigma"] == pytest.approx(0.0277285, rel=1e-3)
    assert est["kappa"] == pytest.approx(1.044e-4, rel=1e-3)
    assert est["lambda"] == pytest.approx(89.9952330, rel=1e-4)
    assert est["peak_clients"] == pytest.approx(96.52, abs=0.01)


def test_normalised_fit_reproduces_the_pre_2_0_r_package():
    # usl < 2.0 fixed the scale at N = 1 and fitted the linearised form: README then showed
    # sigma 1.704689e-02, kappa 7.892498e-05 for SPEC SDM91
    fit = usl.fit_usl(SPECSDM91_LOAD, SPECSDM91_THROUGHPUT, normalise=True)
    est = _terms(fit)
    assert est["sigma"] == pytest.approx(1.704689e-02, rel=1e-6)
    assert est["kappa"] == pytest.approx(7.892498e-05, rel=1e-6)
    assert est["lambda"] == 64.9 and np.isnan(fit.set_index("term").loc["lambda", "ci_low"])


@pytest.mark.parametrize(("points", "decimals", "printed"), [
    # tests/confint.Rout.save, options(digits=3): coef(usl(throughput ~ processors, raytracer[1:6, ]))
    (6, 5, {"sigma": 0.02444, "kappa": 0.00163, "lambda": 20.85605}),
    # tests/warn-accuracy.Rout.save, options(digits=1): the same for raytracer[1:5, ]
    (5, 3, {"sigma": 0.028, "kappa": 0.001, "lambda": 21.059}),
])
def test_fit_usl_reproduces_the_r_package_on_the_ray_tracer_subsets(points, decimals, printed):
    # R prints the coefficients to a common number of decimals: ours, rounded so, are the printed numbers
    est = _terms(usl.fit_usl(RAYTRACER_PROCESSORS[:points], RAYTRACER_THROUGHPUT[:points]))
    assert {t: round(float(est[t]), decimals) for t in printed} == printed


def test_fit_usl_reproduces_coda_hales_go_port():
    # github.com/codahale/usl model_test.go: its 32 measurements give σ 0.02671591, κ 7.690945e-4, λ 995.6486
    tput = [955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08, 7219.8, 7867.61, 8278.71,
            8646.7, 9047.84, 9426.55, 9645.37, 9897.24, 10097.6, 10240.5, 10532.39, 10798.52, 11151.43, 11518.63,
            11806, 12089.37, 12075.41, 12177.29, 12211.41, 12158.93, 12155.27, 12118.04, 12140.4, 12074.39]
    est = _terms(usl.fit_usl(np.arange(1, 33), tput))
    assert est["sigma"] == pytest.approx(0.02671591, rel=1e-4)
    assert est["kappa"] == pytest.approx(7.690945e-4, rel=1e-4)
    assert est["lambda"] == pytest.approx(995.6486, rel=1e-5)


TRUE = {"lambda": 1000.0, "sigma": 0.05, "kappa": 0.001}
CLIENTS = (1, 2, 4, 8, 16, 32, 64)


def _synthetic(rng, rounds=5, noise=0.03):
    n = np.tile(CLIENTS, rounds).astype(float)
    y = usl.usl_throughput(n, **{"lam": TRUE["lambda"], "sigma": TRUE["sigma"], "kappa": TRUE["kappa"]})
    return n, y * rng.normal(1, noise, len(n)), np.repeat(np.arange(rounds), len(CLIENTS))


@pytest.mark.parametrize("by_round", [True, False])
def test_usl_intervals_cover_the_true_sigma_and_kappa(by_round):
    rng = np.random.default_rng(7 + by_round)
    covered = []
    for _ in range(200):
        n, y, rounds = _synthetic(rng)
        fit = usl.fit_usl(n, y, rounds=rounds if by_round else None).set_index("term")
        covered.append([fit.loc[t, "ci_low"] <= TRUE[t] <= fit.loc[t, "ci_high"] for t in ("sigma", "kappa")])
    coverage = np.mean(covered, axis=0)
    print(f"USL 95 % CI coverage ({fit['ci_method'].iloc[0]}): sigma {coverage[0]:.3f}, kappa {coverage[1]:.3f}")
    assert (coverage >= 0.90).all()


def test_bootstrap_resamples_rounds_when_given_and_residuals_otherwise():
    n, y, rounds = _synthetic(np.random.default_rng(9))
    by_round = usl.fit_usl(n, y, rounds=rounds, n_boot=40, seed=1)
    by_resid = usl.fit_usl(n, y, n_boot=40, seed=1)
    assert by_round["ci_method"].iloc[0] == "bootstrap_rounds"
    assert by_resid["ci_method"].iloc[0] == "bootstrap_residuals"
    for fit in (by_round, by_resid):
        inside = (fit["ci_low"] <= fit["estimate"]) & (fit["estimate"] <= fit["ci_high"])
        assert inside.all()
    # same seed, same interval
    pd.testing.assert_frame_equal(by_round, usl.fit_usl(n, y, rounds=rounds, n_boot=40, seed=1))


def test_fit_usl_returns_the_lab_long_form():
    fit = usl.fit_usl(SPECSDM91_LOAD, SPECSDM91_THROUGHPUT, unit="scripts/h")
    assert fit["term"].tolist() == list(usl.USL_TERMS)
    assert fit["unit"].tolist() == ["scripts/h per client", "", "", "clients"]
    assert (fit["n_points"] == 7).all() and 0.98 < fit["r2"].iloc[0] < 1
    assert (fit["ci_low"] <= fit["estimate"]).all() and (fit["estimate"] <= fit["ci_high"]).all()


def test_no_coherency_cost_puts_the_peak_at_infinity():
    # throughput that bends less than Amdahl's law: κ sits on its bound, 0
    n = np.array([1.0, 2, 4, 8, 16, 32])
    fit = usl.fit_usl(n, usl.usl_throughput(n, 100.0, 0.1, 0.0) * (1 + 0.002 * n)).set_index("term")
    assert fit.loc["kappa", "estimate"] == 0.0 and fit.loc["kappa", "ci_low"] == 0.0
    assert np.isinf(fit.loc["peak_clients", "estimate"]) and np.isinf(fit.loc["peak_clients", "ci_high"])
    assert 0 < fit.loc["peak_clients", "ci_low"] < np.inf
    assert np.isnan(usl._peak(1.2, 0.001))


def test_usl_predict_draws_the_fitted_curve():
    fit = usl.fit_usl(SPECSDM91_LOAD, SPECSDM91_THROUGHPUT)
    est = _terms(fit)
    curve = usl.usl_predict(fit, [1, 96.52, 216])
    assert curve[0] == pytest.approx(est["lambda"])
    assert curve[1] == pytest.approx(1884, abs=1)  # the R package's "peak: throughput 1884 at load 96.52"
    assert usl.usl_predict((est["lambda"], est["sigma"], est["kappa"]), [216]) == pytest.approx(curve[2])


def test_holdout_predicts_the_largest_count_when_the_law_holds_and_not_when_it_breaks():
    n, y, rounds = _synthetic(np.random.default_rng(10))
    good = usl.usl_holdout(n, y, rounds=rounds).iloc[0]
    assert good["clients"] == 64 and good["n_observed"] == 5 and good["inside"]
    broken = np.where(n == 64, y * 0.5, y)  # throughput collapses at 64 clients
    bad = usl.usl_holdout(n, broken, rounds=rounds).iloc[0]
    assert not bad["inside"] and bad["relative_error"] > 0.5


def test_holdout_interval_covers_the_held_out_mean():
    rng = np.random.default_rng(11)
    inside = [usl.usl_holdout(n, y, rounds=r)["inside"].iloc[0] for n, y, r in (_synthetic(rng) for _ in range(200))]
    print(f"USL held-out 95 % PI covers the 64-client mean: {np.mean(inside):.3f}")
    assert np.mean(inside) >= 0.90


@pytest.mark.parametrize("by_round", [True, False])
def test_usl_band_covers_the_true_curve(by_round):
    rng = np.random.default_rng(12 + by_round)
    grid = np.array([1.5, 3, 6, 12, 24, 48, 64])
    truth = usl.usl_throughput(grid, TRUE["lambda"], TRUE["sigma"], TRUE["kappa"])
    covered = []
    for _ in range(200):
        n, y, rounds = _synthetic(rng)
        band = usl.usl_band(n, y, grid, rounds=rounds if by_round else None)
        covered.append((band["ci_low"] <= truth) & (truth <= band["ci_high"]))
    coverage = np.mean(covered, axis=0)
    print(f"USL 95 % band coverage of the true curve (by round: {by_round}): {np.round(coverage, 3).tolist()}")
    assert (coverage >= 0.90).all()


def test_usl_band_surrounds_the_fitted_curve_and_narrows_with_more_rounds():
    grid = np.geomspace(1, 64, 50)
    widths = []
    for rounds in (5, 20):
        n, y, r = _synthetic(np.random.default_rng(13), rounds=rounds)
        band = usl.usl_band(n, y, grid, rounds=r)
        assert band["predicted"].to_numpy() == pytest.approx(usl.usl_predict(usl.fit_usl(n, y), grid))
        assert (band["ci_low"] < band["predicted"]).all() and (band["predicted"] < band["ci_high"]).all()
        widths.append(float(((band["ci_high"] - band["ci_low"]) / band["predicted"]).mean()))
    assert widths[1] < 0.7 * widths[0]  # 4× the rounds: about half the width


def test_fit_usl_refuses_too_few_points_and_bad_values():
    with pytest.raises(ValueError, match="≥ 4 points"):
        usl.fit_usl([1, 2, 4], [1.0, 1.9, 3.5])
    with pytest.raises(ValueError, match="≥ 1"):
        usl.fit_usl([0, 1, 2, 4], [0.5, 1.0, 1.9, 3.5])
    with pytest.raises(ValueError, match="> 0"):
        usl.fit_usl([1, 2, 4, 8], [1.0, 1.9, 0.0, 3.5])
    with pytest.raises(ValueError, match="hold_out"):
        usl.usl_holdout(SPECSDM91_LOAD, SPECSDM91_THROUGHPUT, hold_out=500)
