"""Intervals of one quantity: medians, ratios of medians, batch means and ratios of slopes, with their CIs."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from scipy import stats

#: Statement counts of the seed's scale table.


def ratio_ci(a: Sequence[float], b: Sequence[float], *, statistic: Callable = np.median, alpha: float = 0.05,
             n_resamples: int = 2000, seed: int = 0) -> dict:
    """``statistic(a) / statistic(b)`` with a bootstrap CI (scipy, percentile method).

    Examples
    --------
    >>> r = ratio_ci([2.0, 2.1, 1.9, 2.0] * 5, [1.0, 1.05, 0.95, 1.0] * 5)
    >>> round(r["ratio"], 1), r["ci_low"] < 2 < r["ci_high"]
    (2.0, True)
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    res = stats.bootstrap((a, b), lambda x, y, axis=-1: statistic(x, axis=axis) / statistic(y, axis=axis),
                          vectorized=True, paired=False, confidence_level=1 - alpha, n_resamples=n_resamples,
                          method="percentile", random_state=np.random.default_rng(seed))
    return {"ratio": float(statistic(a) / statistic(b)), "ci_low": float(res.confidence_interval.low),
            "ci_high": float(res.confidence_interval.high), "n_a": len(a), "n_b": len(b)}


def paired_ratio_ci(a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05) -> dict:
    """The typical ratio ``a_i / b_i`` over paired units (rounds), with a t interval over the rounds.

    Each round measured both sides one after the other, so a drift of the machine between
    rounds moves both alike; the ratio of each round takes it out. The estimate is the
    geometric mean of the rounds' ratios and its CI the t interval of their logarithms
    (``n − 1`` degrees of freedom), transformed back. Chosen over a bootstrap over the
    rounds, which undercovers with few of them: 0.87 at 8 rounds and 0.92 at 24 (percentile
    method, 400 simulated benchmarks with heavy-tailed round noise), where the t interval
    held 0.95–0.96 from 6 rounds on (``tests/test_intervals.py`` checks it).

    Parameters
    ----------
    a, b : sequence of float
        One statistic per round of each side (a median or a mean time, a rate), > 0.
    alpha : float
        1 − the confidence level.

    Returns
    -------
    dict
        ``ratio``, ``ci_low``, ``ci_high`` (NaN with fewer than 2 rounds) and ``rounds``.

    Examples
    --------
    >>> r = paired_ratio_ci([1.02, 2.05, 0.51, 1.03], [1.0, 2.0, 0.5, 1.0])
    >>> round(r["ratio"], 3), r["ci_low"] < 1.025 < r["ci_high"] < 1.06, r["rounds"]
    (1.024, True, 4)
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or (a <= 0).any() or (b <= 0).any():
        raise ValueError("a and b need one positive value per round each")
    logs = np.log(a / b)
    n = len(logs)
    mean = float(logs.mean()) if n else math.nan
    if n < 2:
        return {"ratio": math.exp(mean), "ci_low": math.nan, "ci_high": math.nan, "rounds": n}
    half = float(stats.t.ppf(1 - alpha / 2, n - 1) * logs.std(ddof=1) / math.sqrt(n))
    return {"ratio": math.exp(mean), "ci_low": math.exp(mean - half), "ci_high": math.exp(mean + half), "rounds": n}


def median_ci(values: Sequence[float], *, alpha: float = 0.05, n_resamples: int = 2000, seed: int = 0) -> dict:
    """The median of ``values`` with a bootstrap CI (scipy, percentile method).

    Examples
    --------
    >>> r = median_ci([1.0, 2.0, 3.0, 4.0, 5.0] * 20)
    >>> r["median"], r["ci_low"] <= 3.0 <= r["ci_high"], r["n"]
    (3.0, True, 100)
    """
    x = np.asarray(values, float)
    if len(x) < 2:
        return {"median": float(np.median(x)) if len(x) else np.nan, "ci_low": np.nan, "ci_high": np.nan, "n": len(x)}
    res = stats.bootstrap((x,), np.median, vectorized=True, confidence_level=1 - alpha, n_resamples=n_resamples,
                          method="percentile", random_state=np.random.default_rng(seed))
    return {"median": float(np.median(x)), "ci_low": float(res.confidence_interval.low),
            "ci_high": float(res.confidence_interval.high), "n": len(x)}


def median_difference_ci(a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05, n_resamples: int = 2000,
                         seed: int = 0) -> dict:
    """``median(a) − median(b)`` with a bootstrap CI (independent samples, percentile method).

    Examples
    --------
    >>> r = median_difference_ci([2.0, 2.1, 1.9, 2.0] * 10, [1.0, 1.1, 0.9, 1.0] * 10)
    >>> round(r["diff"], 2), r["ci_low"] <= 1.0 <= r["ci_high"]
    (1.0, True)
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    res = stats.bootstrap((a, b), lambda x, y, axis=-1: np.median(x, axis=axis) - np.median(y, axis=axis),
                          vectorized=True, paired=False, confidence_level=1 - alpha, n_resamples=n_resamples,
                          method="percentile", random_state=np.random.default_rng(seed))
    return {"diff": float(np.median(a) - np.median(b)), "ci_low": float(res.confidence_interval.low),
            "ci_high": float(res.confidence_interval.high), "n_a": len(a), "n_b": len(b)}


def slope_ratio(a: float, se_a: float, df_a: float, b: float, se_b: float, df_b: float, alpha: float = 0.05) -> dict:
    """``a / b`` of two independent estimates with a CI from the delta method on the log scale.

    ``log(a/b)`` has standard error ``sqrt((se_a/a)² + (se_b/b)²)``; the interval uses a t
    quantile with the smaller of the two residual degrees of freedom (conservative). An estimate
    whose standard error dwarfs it gives an interval from 0 to ``inf``.

    Examples
    --------
    >>> r = slope_ratio(1.0, 0.05, 10, 2.0, 0.1, 10)
    >>> round(r["ratio"], 2), r["ci_low"] < 0.5 < r["ci_high"]
    (0.5, True)
    """
    if a <= 0 or b <= 0:
        return {"ratio": a / b, "ci_low": np.nan, "ci_high": np.nan, "df": min(df_a, df_b)}
    se = float(np.hypot(se_a / a, se_b / b))
    t = stats.t.ppf(1 - alpha / 2, max(min(df_a, df_b), 1))
    ratio = a / b
    with np.errstate(over="ignore"):  # an estimate all noise: the interval runs to 0 and to infinity, as it is
        low, high = ratio * np.exp(-t * se), ratio * np.exp(t * se)
    return {"ratio": float(ratio), "ci_low": float(low), "ci_high": float(high), "df": min(df_a, df_b)}


def median_ci_exact(values: Sequence[float], *, alpha: float = 0.05) -> dict:
    """The median with a distribution-free CI from order statistics (binomial), and the confidence it reaches.

    The interval ``[x(k), x(n−k+1)]`` of the sorted values covers the true median with
    probability ``1 − 2·P(Binom(n, ½) < k)``; the narrowest one that reaches ``1 − alpha`` is
    returned, or, with too few values for that (n < 6 at 95 %), the full range with the
    confidence it does reach (5 runs: 93.75 %).

    Returns
    -------
    dict
        ``median``, ``ci_low``, ``ci_high``, ``confidence``, ``n``.

    Examples
    --------
    >>> r = median_ci_exact([5.0, 1.0, 3.0, 2.0, 4.0])
    >>> r["median"], r["ci_low"], r["ci_high"], r["confidence"]
    (3.0, 1.0, 5.0, 0.9375)
    """
    x = np.sort(np.asarray(values, float))
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return {"median": np.nan, "ci_low": np.nan, "ci_high": np.nan, "confidence": np.nan, "n": 0}
    k, confidence = 1, 1 - 2 * stats.binom.cdf(0, n, 0.5)
    while k < n // 2 + 1 and 1 - 2 * stats.binom.cdf(k, n, 0.5) >= 1 - alpha:
        k += 1
        confidence = 1 - 2 * stats.binom.cdf(k - 1, n, 0.5)
    return {"median": float(np.median(x)), "ci_low": float(x[k - 1]), "ci_high": float(x[n - k]),
            "confidence": float(confidence), "n": n}


#: Batches :func:`batch_means_ci` splits a series into by default: few enough that consecutive
#: batches of a 3-second run are nearly independent, enough for a t interval (4 df).
BATCHES = 5


def batch_means_ci(values: Sequence[float], *, batches: int = BATCHES, statistic: Callable = np.mean,
                   alpha: float = 0.05) -> dict:
    """The mean of a time-ordered, autocorrelated series with a CI by non-overlapping batch means.

    The series (e.g. the throughput of consecutive 0.1 s windows of one configuration) is cut
    into ``batches`` consecutive batches of equal length (the last few values left over are
    dropped); the batch means are nearly independent when a batch spans more than the
    series' correlation, and the CI is the t interval over them (``batches − 1`` degrees of
    freedom). A t interval over the raw values would be too narrow: neighbouring windows of
    one run move together. Checked by simulation (2 000 AR(1) series a case, 5 batches;
    ``tests/test_intervals.py`` checks the first): lag-1 correlation 0.5, 30 values: coverage
    0.92 (the naive t interval over the 30 values: 0.73), 100 values: 0.945; uncorrelated:
    0.95; it falls short where the correlation outlasts a batch (0.8, 30 values: 0.85).

    Parameters
    ----------
    values : sequence of float
        The series, in time order.
    batches : int
        How many batches; fewer when there are fewer values (at least 2 values a batch).
    statistic : callable
        What is taken of each batch (``statistic(array, axis=1)``): the mean by default; a
        percentile (e.g. the median latency of each batch of statements) gives the CI of the
        mean of the batches' percentiles.
    alpha : float
        1 − the confidence level.

    Returns
    -------
    dict
        ``mean`` (of the batches' statistics), ``ci_low``, ``ci_high`` (NaN with fewer than 4
        values: two batches of two), ``batches``, ``n`` (values used).

    Examples
    --------
    >>> r = batch_means_ci([10.0, 12.0] * 10, batches=5)
    >>> r["mean"], r["ci_low"] == r["ci_high"] == 11.0, r["batches"]
    (11.0, True, 5)
    """
    x = np.asarray(values, float)
    x = x[np.isfinite(x)]
    k = min(int(batches), len(x) // 2)
    if k < 2:
        mean = float(x.mean()) if len(x) else np.nan
        return {"mean": mean, "ci_low": np.nan, "ci_high": np.nan, "batches": max(k, 0), "n": len(x)}
    size = len(x) // k
    means = np.asarray(statistic(x[:k * size].reshape(k, size), axis=1), float)
    mean, half = float(means.mean()), float(stats.t.ppf(1 - alpha / 2, k - 1) * means.std(ddof=1) / np.sqrt(k))
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half, "batches": k, "n": k * size}
