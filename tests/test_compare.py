"""The statistics of a change: verdict error rates of the sample, run-level and estimate tests on synthetic data."""


import numpy as np
import pandas as pd
import pytest

from ingestlab import compare as cmp
from ingestlab.workloads import compare_runs_analysis as analysis

N = 3000


def _heavy(rng, n=N, scale=1.0, sigma=1.0):
    """Log-normal durations with 1 % of them 10× longer (a stall, a checkpoint)."""
    x = rng.lognormal(-8.0, sigma, n) * scale
    x[rng.random(n) < 0.01] *= 10
    return x


def _verdicts(pairs: int, scale: float, sigma: float, seed: int) -> pd.Series:
    rng = np.random.default_rng(seed)
    return pd.Series([cmp.compare_samples(_heavy(rng, sigma=sigma), _heavy(rng, scale=scale, sigma=sigma),
                                          rng=rng)["verdict"] for _ in range(pairs)])


def test_false_alarms_stay_under_2_percent_on_runs_from_one_heavy_tailed_distribution():
    verdicts = _verdicts(400, 1.0, 1.0, seed=11)
    false_alarms = verdicts.isin(["slower", "faster"]).mean()
    print(f"false alarms {false_alarms:.2%}")
    assert false_alarms <= 0.02


def test_a_15_percent_slowdown_is_found_in_95_percent_of_heavy_tailed_pairs():
    verdicts = _verdicts(200, 1.15, 1.0, seed=12)
    assert (verdicts == "slower").mean() >= 0.95 and not (verdicts == "faster").any()


def test_a_10_percent_slowdown_is_found_in_95_percent_of_pairs_at_half_the_spread():
    verdicts = _verdicts(200, 1.10, 0.5, seed=13)
    assert (verdicts == "slower").mean() >= 0.95


def test_a_10_percent_slowdown_at_sigma_1_is_found_as_often_as_3000_samples_allow():
    # With σ = 1 the log-ratio of two medians of 3 000 has a standard error of 0.032 (the U
    # test's shift, 0.026): a 10 % change is 3.7 of those, and no rule with ≤ 2 % false alarms
    # can find it in more than ~91 % of pairs. This rule finds it in ~80 %; asv's p < 0.002 in ~65 %.
    verdicts = _verdicts(200, 1.10, 1.0, seed=14)
    print(f"power at +10 %, sigma 1: {(verdicts == 'slower').mean():.1%}")
    assert (verdicts == "slower").mean() >= 0.75


def _runs(rng, k, scale=1.0, sigma=0.5, sigma_run=0.1, n=N, units=3):
    """``k`` runs of ``n`` samples each: every run gets its own multiplicative effect (log-normal ``sigma_run``)."""
    return [(_heavy(rng, n, scale * rng.lognormal(0, sigma_run), sigma), np.repeat(np.arange(units), n // units))
            for _ in range(k)]


def _run_verdicts(pairs, k, scale, seed, sigma_run=0.1, **kw) -> pd.Series:
    rng = np.random.default_rng(seed)
    return pd.Series([cmp.compare_runs(_runs(rng, k, sigma_run=sigma_run), _runs(rng, k, scale, sigma_run=sigma_run),
                                       rng=rng, resamples=400, **kw)["verdict"] for _ in range(pairs)])


def test_compare_reports_the_samples_own_verdict_beside_the_run_level_one():
    rng = np.random.default_rng(7)
    for scale in (1.0, 1.15):
        a, b = _heavy(rng, sigma=0.5), _heavy(rng, scale=scale, sigma=0.5)
        runs = cmp.compare_runs([a], [b], rng=np.random.default_rng(0))
        alone = cmp.compare_samples(a, b, rng=np.random.default_rng(0))
        assert runs["samples_verdict"] == alone["verdict"] == ("same" if scale == 1.0 else "slower")
        assert runs["mann_whitney_p"] == alone["p_value"] and runs["verdict"] == "unsure"


def test_a_run_level_effect_fools_the_sample_test_but_not_the_run_rule():
    # Each run shifted by a log-normal σ_run = 0.1 effect: the U test on 3 000 samples per side
    # calls most such pairs changed; the run-level rule (prior σ₀ = 0.1, t with 4 df) stays under 2 %.
    rng = np.random.default_rng(21)
    pairs = [(_runs(rng, 1)[0][0], _runs(rng, 1)[0][0]) for _ in range(200)]
    naive = pd.Series([cmp.compare_samples(a, b, rng=rng, resamples=400)["verdict"] for a, b in pairs])
    ruled = pd.Series([cmp.compare_runs([a], [b], rng=rng, resamples=400)["verdict"] for a, b in pairs])
    print(f"false alarms: U test {naive.isin(['slower', 'faster']).mean():.1%}, "
          f"run rule {ruled.isin(['slower', 'faster']).mean():.1%}")
    assert naive.isin(["slower", "faster"]).mean() > 0.3
    assert ruled.isin(["slower", "faster"]).mean() <= 0.02


def test_run_level_false_alarms_stay_under_2_percent_with_five_runs_a_side_of_noisier_runs():
    # the runs vary by σ_run = 0.15, more than the prior's 0.10: the runs' own scatter takes over
    verdicts = _run_verdicts(200, 5, 1.0, seed=22, sigma_run=0.15)
    assert verdicts.isin(["slower", "faster"]).mean() <= 0.02


def test_a_40_percent_slowdown_is_found_with_five_runs_a_side_and_not_with_one():
    # σ_run = 0.1: five runs a side give se 0.065 on the log ratio and t₁₂ needs 3.05 of them
    # (+22 %) for p < 0.01; +30 % is found in ~85 % of pairs, +40 % in ≥ 95 %. One run a side: ×1.9.
    five = _run_verdicts(200, 5, 1.40, seed=23)
    one = _run_verdicts(200, 1, 1.40, seed=24)
    print(f"+40 %, sigma_run 0.1: found in {(five == 'slower').mean():.1%} with 5 runs a side, "
          f"{(one == 'slower').mean():.1%} with 1")
    assert (five == "slower").mean() >= 0.95 and not (five == "faster").any()
    assert (one == "slower").mean() <= 0.10


def test_a_run_whose_units_disagree_is_as_uncertain_as_its_units_say():
    rng = np.random.default_rng(25)
    flat = _heavy(rng, 3000, sigma=0.3)
    units = np.repeat([0, 1, 2], 1000)
    split = flat * np.repeat([1.0, 6.7, 6.7], 1000)  # a unit-level flip (CPU placement), as in run pg2-b
    _, var_flat = cmp.run_median(flat, units, rng=rng)
    _, var_split = cmp.run_median(split, units, rng=rng)
    assert var_flat < 1e-3 < 0.1 < var_split


@pytest.mark.parametrize("n", [41, 40])
def test_bootstrap_medians_have_the_law_of_medians_of_resamples(n):
    rng = np.random.default_rng(5)
    x = _heavy(rng, n)
    k = n + 1 - n % 2  # an even n is resampled with n + 1 draws (one middle value)
    resampled = np.median(x[rng.integers(0, n, (40_000, k))], axis=1)
    drawn = cmp.bootstrap_medians(x, 40_000, rng)
    for value in np.sort(x)[5:-5]:  # the two laws over the order statistics agree
        assert abs(np.mean(drawn <= value) - np.mean(resampled <= value)) < 0.012
    n_draws = np.median(x[rng.integers(0, n, (40_000, n))], axis=1)
    low, high = np.quantile(drawn, [0.025, 0.975])
    assert np.mean((n_draws >= low) & (n_draws <= high)) == pytest.approx(0.95, abs=0.015)


def test_same_needs_the_whole_interval_inside_the_threshold():
    rng = np.random.default_rng(2)
    tight = cmp.compare_samples(_heavy(rng, sigma=0.1), _heavy(rng, sigma=0.1), rng=rng)
    assert tight["verdict"] == "same" and 0.95 <= tight["ci_low"] <= tight["ci_high"] <= 1.05
    few = cmp.compare_samples(_heavy(rng, 5), _heavy(rng, 5), rng=rng)
    assert few["verdict"] == "unsure"


def test_a_significant_change_inside_the_threshold_is_not_called_slower():
    rng = np.random.default_rng(3)
    result = cmp.compare_samples(_heavy(rng, 20_000, sigma=0.2), _heavy(rng, 20_000, 1.02, sigma=0.2), rng=rng)
    assert result["p_value"] < 1e-6 and result["verdict"] in ("same", "unsure")


def test_fitted_estimates_compare_through_their_intervals_and_units():
    rate = cmp.compare_estimates(100, 98, 102, 130, 128, 132, direction=cmp.direction_of("rows/s"))
    assert rate["verdict"] == "faster" and rate["ci_low"] < 1.3 < rate["ci_high"]
    wide = cmp.compare_estimates(0.19, 0.08, 0.30, 0.25, 0.12, 0.38)
    assert wide["verdict"] == "unsure"
    assert cmp.compare_estimates(-0.1, -0.2, 0.0, 0.1, 0.0, 0.2)["note"].startswith("an estimate is not positive")


def test_a_fit_whose_interval_dwarfs_its_estimate_compares_without_error_and_says_nothing():
    # a smoke run's bulk-path fit: 0.001 s with an interval of ±5 s (the CI of 2026-11-27 met it)
    fit = pd.Series({"estimate": 0.001, "ci_low": -5.0, "ci_high": 5.0, "unit": "s", "n_points": 4})
    single = cmp.compare_estimates(*[fit[c] for c in ("estimate", "ci_low", "ci_high")] * 2)
    assert single["ratio"] == 1 and single["ci_low"] == 0 and single["ci_high"] == np.inf
    result = analysis._fit_run_level([fit], [fit], single, cmp.THRESHOLD, cmp.ALPHA, 1,
                                {"run_noise": cmp.RUN_NOISE, "noise_runs": cmp.RUN_NOISE_RUNS})
    assert result["ratio"] == 1 and result["ci_low"] == 0 and result["ci_high"] == np.inf
    assert result["verdict"] == "unsure" and result["p_value"] == 1
    assert result["detectable"] == np.inf and result["runs_needed"] == np.inf  # no run count would see through it


# -- what a comparison says it can see, checked by simulation -------------------------------------
#: Pairs of run sets per simulated case (the issue asks for at least 500).
PAIRS = 500
#: The run-level noise the simulation draws (σ = 0.10, the lab's prior) and each run's samples and their spread.
SIGMA_RUN, SAMPLES_PER_RUN, SIGMA_SAMPLE = 0.10, 30, 0.3


def _sets(rng, pairs: int, k: int, change: float = 1.0, drift: float = 0.0) -> np.ndarray:
    """``pairs`` × 2 sides × ``k`` runs × samples: heavy-tailed samples about a run level of σ = 0.10.

    ``drift`` (log σ) shifts both runs of the i-th A/B pair alike: the machine's slow drift
    that alternation cancels.
    """
    shape = (pairs, 2, k)
    level = rng.normal(0, SIGMA_RUN, shape) + rng.normal(0, drift, (pairs, 1, k)) if drift else \
        rng.normal(0, SIGMA_RUN, shape)
    level[:, 1] += np.log(change)
    x = rng.lognormal(-8.0 + level[..., None], SIGMA_SAMPLE, (*shape, SAMPLES_PER_RUN))
    x[rng.random(x.shape) < 0.01] *= 10  # a stall now and then
    return x


def _simulate(k: int, change: float, *, paired: bool, seed: int, drift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    runs = _sets(rng, PAIRS, k, change, drift)
    return pd.DataFrame([cmp.compare_runs(list(a), list(b), paired=paired, rng=rng, resamples=100)
                         for a, b in runs])


def _runs_to_see_10_percent() -> int:
    """The runs a side compare says see +10 % at this noise, as five runs a side estimate it (one run a side,
    knowing the noise only from the prior's 4 runs' worth, asks for more to be sure: ~69)."""
    rng = np.random.default_rng(40)
    return int(np.median([cmp.compare_runs(list(a), list(b), rng=rng, resamples=100)["runs_needed"]
                          for a, b in _sets(rng, 20, 5)]))


def test_runs_in_two_states_as_measured_here_raise_few_false_alarms_and_a_planted_10_percent_is_called():
    # bench/README.md, "Calling a planted change": PostgreSQL's single-row INSERT, 1 run in 7 about 11 % faster,
    # the rest σ 3 %; noise known from 12 runs at 3.6 %; 10 alternating pairs, as compare asked for ±10 %
    rng = np.random.default_rng(7)

    def verdicts(change: float, trials: int = 300) -> np.ndarray:
        shape = (trials, 2, 10)
        level = rng.normal(0, 0.03, shape) + np.where(rng.random(shape) < 0.15, np.log(0.89), 0.0)
        level[:, 1] += np.log(change)
        runs = rng.lognormal(-8.8 + level[..., None], 0.2, (*shape, 1000))  # a run's median within ±1 %, as there
        return np.array([cmp.compare_runs(list(a), list(b), paired=True, rng=rng, resamples=50, run_noise=0.036,
                                          noise_runs=12)["verdict"] for a, b in runs])

    # 1 000 trials a case gave 1.4 % false alarms and 95 % called (a normal scatter of the same spread: 1.3 %, 97 %);
    # 300 fail only where they reject ≤ 2 % and ≥ 80 % at 1 % (one-sided binomial), as the cases above do
    trials = 300
    same, planted = verdicts(1.0, trials), verdicts(1.10, trials)
    assert np.isin(same, ["slower", "faster"]).mean() <= 0.02 + 2.33 * np.sqrt(0.02 * 0.98 / trials)
    assert (planted == "slower").mean() >= 0.8 - 2.33 * np.sqrt(0.8 * 0.2 / trials)
    assert not (planted == "faster").any()


def test_alternating_runs_cancel_a_drift_that_hides_a_change():
    # the machine drifts by σ = 0.3 between pairs of runs; B is 30 % slower within every pair
    rng = np.random.default_rng(43)
    (a, b), = _sets(rng, 1, 6, 1.3, drift=0.3)
    paired = cmp.compare_runs(list(a), list(b), paired=True, rng=rng, resamples=100)
    unpaired = cmp.compare_runs(list(a), list(b), rng=rng, resamples=100)
    assert paired["verdict"] == "slower" and paired["note"].startswith("paired, 6 alternating pairs")
    assert unpaired["verdict"] == "unsure" and unpaired["detectable"] > 1.5 * paired["detectable"] - 0.5


@pytest.mark.parametrize(("k", "paired"), [(1, False), (3, False), (5, False), ("10 %", False),
                                           (3, True), (5, True), ("10 %", True)])
def test_compare_calls_the_change_it_says_it_can_see_and_raises_no_false_alarm(k, paired):
    # Over 500 pairs of run sets without a change, ≤ 2 % are called slower or faster; a change of
    # the size compare then says it sees (its median `detectable`) is called slower in 80 % — as
    # far as 500 pairs can tell: where the noise is known to many df the claim is calibrated, not
    # padded, so its measured power falls either side of 80 % by the pairs' own sampling error
    # (±1.8 %); it must not fall below by more than 2.33 of those (a one-sided 1 % binomial test).
    # An understated `detectable` (a z test for the t, the threshold or the noise estimate's own
    # uncertainty forgotten: 60-75 % at 3-5 runs a side) fails here.
    k = _runs_to_see_10_percent() if k == "10 %" else k
    null = _simulate(k, 1.0, paired=paired, seed=41 + k, drift=0.2 if paired else 0.0)
    assert null["paired"].all() == paired
    false_alarms = null["verdict"].isin(["slower", "faster"]).mean()
    seen = float(null["detectable"].median())
    found = _simulate(k, seen, paired=paired, seed=42 + k, drift=0.2 if paired else 0.0)
    power = (found["verdict"] == "slower").mean()
    print(f"{k} {'pairs' if paired else 'runs a side'}: false alarms {false_alarms:.1%}, detectable ×{seen:.3f}, "
          f"called slower {power:.1%}, runs needed for +10 % {null['runs_needed'].median():.0f}")
    assert false_alarms <= 0.02
    assert power >= cmp.POWER - 2.33 * np.sqrt(cmp.POWER * (1 - cmp.POWER) / PAIRS)
    assert not (found["verdict"] == "faster").any()
