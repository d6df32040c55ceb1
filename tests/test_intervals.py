"""Intervals of one quantity cover what they claim: medians, ratios, batch means, slope ratios."""

import warnings

import numpy as np
import pytest

from ingestlab import intervals


def test_ratio_ci_covers_true_ratio():
    rng = np.random.default_rng(8)
    r = intervals.ratio_ci(rng.lognormal(np.log(3), 0.1, 200), rng.lognormal(0, 0.1, 200))
    assert r["ci_low"] < 3.0 < r["ci_high"]


@pytest.mark.parametrize("df_a, df_b", [(3, 40), (40, 3), (5, 5)])
def test_slope_ratio_interval_uses_the_smaller_degrees_of_freedom(df_a, df_b):
    from scipy import stats

    a, se_a, b, se_b = 2.0, 0.3, 0.5, 0.02
    r = intervals.slope_ratio(a, se_a, df_a, b, se_b, df_b)
    # log(a/b) ± t(0.975, min df) · sqrt((se_a/a)² + (se_b/b)²), written out here
    half = stats.t.ppf(0.975, min(df_a, df_b)) * np.sqrt((se_a / a) ** 2 + (se_b / b) ** 2)
    assert r["ratio"] == pytest.approx(4.0)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((4.0 * np.exp(-half), 4.0 * np.exp(half)), rel=1e-12)
    assert r["df"] == min(df_a, df_b)
    # at 3 df the interval is markedly wider than at 40 (t 3.18 against 2.02)
    if min(df_a, df_b) == 3:
        assert r["ci_high"] / r["ratio"] > np.exp(3.0 * np.sqrt((se_a / a) ** 2 + (se_b / b) ** 2))


def _order_statistic_ci(n: int, alpha: float = 0.05) -> tuple[int, float]:
    """k of the narrowest [x(k), x(n−k+1)] covering the median with ≥ 1 − alpha, and its coverage (exact binomial)."""
    from math import comb

    def coverage(k):  # 1 − 2·P(Binom(n, ½) ≤ k − 1)
        return 1 - 2 * sum(comb(n, i) for i in range(k)) / 2**n

    k = 1
    while k + 1 <= (n + 1) // 2 and coverage(k + 1) >= 1 - alpha:
        k += 1
    return k, coverage(k)


@pytest.mark.parametrize("n, k, confidence", [(5, 1, 0.9375), (6, 1, 0.96875), (10, 2, 1 - 22 / 1024),
                                              (11, 2, 1 - 24 / 2048), (20, 6, None), (31, 10, None)])
def test_median_ci_exact_is_the_order_statistic_interval_of_the_binomial(n, k, confidence):
    assert _order_statistic_ci(n)[0] == k  # the hand-known k (n = 10, 11: [x(2), x(n−1)])
    expected = _order_statistic_ci(n)[1]
    if confidence is not None:
        assert expected == pytest.approx(confidence)
    values = np.random.default_rng(n).permutation(np.arange(1, n + 1) * 10.0)  # x(i) = 10·i, shuffled
    r = intervals.median_ci_exact(values)
    assert (r["ci_low"], r["ci_high"]) == (10.0 * k, 10.0 * (n - k + 1))
    assert r["confidence"] == pytest.approx(expected) and r["n"] == n
    assert r["median"] == pytest.approx(10.0 * (n + 1) / 2)


@pytest.mark.parametrize("rounds", [6, 24])
def test_paired_ratio_ci_covers_the_true_ratio_through_drift_and_heavy_tails(rounds):
    """Benchmarks alternate lab and reference by rounds: the machine drifts between rounds (×e^N(0, 0.3)) and
    each side's round statistic has heavy-tailed noise (t with 3 df). The 95 % interval must hold 93–97 %."""
    rng = np.random.default_rng(11)
    hits, trials = 0, 1000
    for _ in range(trials):
        drift = np.exp(rng.normal(0, 0.3, rounds))
        lab = 1.03 * drift * np.exp(0.03 * rng.standard_t(3, rounds))
        ref = drift * np.exp(0.03 * rng.standard_t(3, rounds))
        r = intervals.paired_ratio_ci(lab, ref)
        hits += r["ci_low"] <= 1.03 <= r["ci_high"]
    assert 0.93 <= hits / trials <= 0.97, hits / trials


def test_paired_ratio_ci_refuses_unpaired_or_non_positive_rounds():
    with pytest.raises(ValueError, match="one positive value per round"):
        intervals.paired_ratio_ci([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="one positive value per round"):
        intervals.paired_ratio_ci([1.0, 0.0], [1.0, 1.0])
    one = intervals.paired_ratio_ci([2.0], [1.0])
    assert one["ratio"] == 2.0 and np.isnan(one["ci_low"]) and one["rounds"] == 1


def _ar1(rng, n: int, phi: float) -> np.ndarray:
    """An AR(1) series of ``n`` values around 100 (lag-1 correlation ``phi``), past its start-up."""
    e = rng.standard_normal(n + 50)
    x = np.empty_like(e)
    x[0] = e[0]
    for i in range(1, len(e)):
        x[i] = phi * x[i - 1] + e[i]
    return 100 + x[50:]


def test_batch_means_ci_covers_the_mean_of_a_correlated_series_where_the_naive_interval_does_not():
    """30 windows of a 3-second run, neighbours correlated (0.5): the batch-means interval holds ≥ 0.90 of 1 000
    series, the t interval over the raw windows ≤ 0.80 (why the batches are needed)."""
    from scipy import stats

    rng = np.random.default_rng(5)
    hits = naive = 0
    for _ in range(1000):
        x = _ar1(rng, 30, 0.5)
        r = intervals.batch_means_ci(x)
        hits += r["ci_low"] <= 100 <= r["ci_high"]
        naive += abs(x.mean() - 100) <= stats.t.ppf(0.975, 29) * x.std(ddof=1) / np.sqrt(30)
    assert hits / 1000 >= 0.90, hits / 1000
    assert naive / 1000 <= 0.80, naive / 1000


def test_batch_means_ci_uses_equal_consecutive_batches_and_says_when_it_cannot():
    r = intervals.batch_means_ci(np.arange(12.0), batches=5)  # 5 batches of 2, the last 2 values dropped
    assert (r["batches"], r["n"], r["mean"]) == (5, 10, 4.5)
    half = r["ci_high"] - r["mean"]
    means = np.arange(10.0).reshape(5, 2).mean(axis=1)
    from scipy import stats
    assert half == pytest.approx(stats.t.ppf(0.975, 4) * means.std(ddof=1) / np.sqrt(5))
    assert half > 0
    three = intervals.batch_means_ci([1.0, 2.0, 3.0])
    assert three["mean"] == 2.0 and np.isnan(three["ci_low"]) and three["batches"] == 1


def test_slope_ratio_of_an_estimate_all_noise_runs_from_zero_to_infinity_without_a_warning():
    with warnings.catch_warnings():  # an overflow warned in csv_scan's smoke fit: the interval is unbounded, as it is
        warnings.simplefilter("error")
        r = intervals.slope_ratio(1e-9, 1.0, 5, 2.0, 0.1, 5)
    assert r["ci_low"] == 0.0 and r["ci_high"] == np.inf and r["ratio"] == pytest.approx(5e-10)
