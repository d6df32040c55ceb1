"""Compare two runs, or two sets of runs, quantity by quantity: ratio, interval, test, verdict.

The rule. A whole run shares its server instance, its files' placement, its CPUs and their
clock: a run-level effect that the samples of one run cannot average out (two runs of one
configuration differ far beyond what a test of their pooled samples calls noise; the
measurements are in bench/README.md, "Measurements behind the code's rules"). So the unit of
comparison is the run:

- each run's level is its log median, with a within-run variance: the larger of the
  bootstrap's over its samples and its replication units' (:data:`REPLICATE_COLUMNS`)
  scatter over their count (:func:`run_median`, a two-stage estimate);
- a run's level varies about its configuration's by τ², pooled from a prior σ₀ = 0.10
  counted as ν₀ = 4 runs (:data:`RUN_NOISE`, :data:`RUN_NOISE_RUNS`), the scatter of the
  runs within each side (``compare A1,A2,A3 B1,B2,B3``), and the scatter of the lab's other
  runs of either configuration found beside them (old against old, per revision);
- the sides' mean levels differ by ``d``, tested by t with ν₀ + Σ(k − 1) degrees of freedom
  (:func:`run_level_test`); slower/faster needs ``|d|`` beyond the threshold and p < α,
  ``same`` a 95 % t interval inside it (:func:`decide`). Fits get the same τ on top of their
  own intervals.

Every comparison says what it could have seen: ``detectable``, the smallest change it calls
with 80 % power (:data:`POWER`, :func:`detectable_change`: the noncentral t test's, never
within the threshold), and ``runs_needed``, the runs a side that would call a change of twice
the threshold (:func:`runs_needed`); an ``unsure`` verdict is printed as ``could not tell
(needs ≥ k runs a side)`` (:func:`verdict_text`). One run against one, on the prior alone,
sees only changes beyond ×2.9, and 44 runs a side would see 10 % (the prior is 4 runs' worth of
knowledge of the noise, and the power stated is the one to expect over what the noise may be;
with σ = 0.10 known from many runs, about 38 runs a side see 10 %: tests/test_compare.py). Runs made in alternation
(A B A B …, :func:`alternating`) are compared pair by pair (:func:`paired_test`): slow drift of
the machine falls on both runs of a pair and cancels. :func:`compare_samples` is the test of
samples known to be independent draws. A bimodal run-level effect (fsync off: client and server on one core
or two) cannot be told from a change by one run, or three, unless the lab's other runs of the
configuration show it.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

#: Default relative change below which a difference does not count (5 %).
THRESHOLD = 0.05
#: Default significance level of the Mann–Whitney U test (and of the z test on fits' intervals).
#: On 3 000 log-normal (σ = 1) samples with 1 % of 10× outliers, 0.01 keeps false
#: ``slower``/``faster`` verdicts near 1 % and finds a 10 % slowdown in about 80 % of pairs
#: (tests/test_compare.py measures both); asv's 0.002 finds it in about 65 %.
ALPHA = 0.01
#: Prior run-to-run noise: the standard deviation of one run's log median about its
#: configuration's (σ₀ = 0.10, i.e. ~10 %; the lab's 12 runs of notebook 01 on PostgreSQL,
#: 2026-11-25, gave 3.5–20 % per quantity, median 10 %; see the module docstring).
RUN_NOISE = 0.10
#: How many runs' worth of evidence the prior counts for (ν₀): the test is a t test with
#: ν₀ + (the runs' own degrees of freedom) degrees of freedom, so one run per side uses t₄.
RUN_NOISE_RUNS = 4
#: Columns naming a run's replication units (01: ``repeat``; 02, 06: ``round``; 05: ``run``):
#: samples of one unit share more than samples of two, so a run's median is as uncertain as
#: its units' medians scatter (when that is more than the samples' own bootstrap says).
REPLICATE_COLUMNS = ("repeat", "round", "run")
#: Bootstrap draws of each median.
RESAMPLES = 2000
#: Confidence level of every interval.
CONFIDENCE = 0.95
#: The verdicts: a change in the slow direction, in the fast one (``higher``/``lower`` for a fitted
#: quantity that is neither a time nor a rate), no change beyond the threshold, or not known.
VERDICTS = ("slower", "faster", "higher", "lower", "same", "unsure")
#: The power at which a comparison states the smallest change it could call (``detectable``).
POWER = 0.80
#: Most runs a side :func:`runs_needed` looks for; beyond it the answer is infinite.
MAX_RUNS = 10_000
#: Points of the law of the estimated standard error over which :func:`slower_power` averages.
_SE_POINTS = 64
#: The standard normal quantile of :data:`CONFIDENCE` (1.96 for 95 %).
Z_CONFIDENCE = stats.norm.ppf(0.5 + CONFIDENCE / 2)


# -- statistics on two sets of samples -------------------------------------------------------
def bootstrap_medians(x, resamples: int = RESAMPLES, rng: np.random.Generator | None = None) -> np.ndarray:
    """Draws of the median of a bootstrap resample of ``x``, without building the resamples.

    The median of a resample of ``k`` draws (``k`` odd) is at most the ``j``-th smallest
    value ``x₍ⱼ₎`` exactly when at least ``(k + 1) / 2`` of its draws are, and the count of
    such draws is binomial(``k``, ``j/n``): so the bootstrap law of the median is known over
    the order statistics, and one uniform number per draw picks one. The result has the
    law of ``np.median(rng.choice(x, k))`` at the cost of one sort; ``k`` is ``n``, or
    ``n + 1`` for an even ``n`` (so that a resample has one middle value: the law of the
    median of ``n`` draws, an average of two order statistics, has no such closed form).

    Examples
    --------
    >>> draws = bootstrap_medians([3.0, 1.0, 2.0], 1000, np.random.default_rng(0))
    >>> sorted(set(draws.tolist()))
    [1.0, 2.0, 3.0]
    """
    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    rng = rng if rng is not None else np.random.default_rng(0)
    return x[np.minimum(np.searchsorted(_median_law(n), rng.random(resamples)), n - 1)]


@functools.lru_cache(maxsize=64)
def _median_law(n: int) -> np.ndarray:
    """P(the median of a resample of ``n`` values is at most the ``j``-th smallest), ``j`` = 1 … ``n``."""
    k = n if n % 2 else n + 1
    law = special.bdtrc((k + 1) // 2 - 1, k, np.arange(1, n + 1) / n)
    law.flags.writeable = False  # shared by every caller through the cache
    return law


def decide(ratio: float, ci_low: float, ci_high: float, p_value: float, *, threshold: float = THRESHOLD,
           alpha: float = ALPHA, direction: int = 1) -> str:
    """The verdict on a ratio b/a with its interval and test.

    ``slower`` (``faster``) when the ratio is beyond ``1 ± threshold`` *and* the test says
    p < ``alpha``; ``same`` when the whole interval lies within ``1 ± threshold``; ``unsure``
    otherwise. ``direction`` says what a larger value means: 1 a longer time (slower), -1 a
    higher rate (faster), 0 neither (``higher``/``lower``).

    Examples
    --------
    >>> decide(1.12, 1.08, 1.17, 1e-6), decide(1.01, 0.98, 1.03, 0.4), decide(1.12, 0.9, 1.4, 0.2)
    ('slower', 'same', 'unsure')
    >>> decide(1.12, 1.08, 1.17, 1e-6, direction=-1)
    'faster'
    """
    if not np.isfinite(ratio):
        return "unsure"
    up = ratio > 1 + threshold
    if p_value < alpha and (up or ratio < 1 - threshold):
        return {1: ("slower", "faster"), -1: ("faster", "slower"), 0: ("higher", "lower")}[direction][0 if up else 1]
    if np.isfinite(ci_low) and np.isfinite(ci_high) and 1 - threshold <= ci_low and ci_high <= 1 + threshold:
        return "same"
    return "unsure"


def compare_samples(a, b, *, threshold: float = THRESHOLD, alpha: float = ALPHA, resamples: int = RESAMPLES,
                    rng: np.random.Generator | None = None) -> dict[str, Any]:
    """Compare two sets of raw samples of one duration: medians, their ratio b/a, its interval, test, verdict.

    The interval is the percentile interval of b/a over bootstrap draws of both medians
    (:func:`bootstrap_medians`); the test is the two-sided Mann–Whitney U test.

    Returns
    -------
    dict
        ``n_a, n_b, a, b`` (medians), ``ratio, ci_low, ci_high, p_value, verdict, note``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> x = rng.lognormal(0, 0.3, 2000)
    >>> compare_samples(x, 1.3 * rng.lognormal(0, 0.3, 2000))["verdict"]
    'slower'
    """
    a, b = (np.asarray(v, dtype=float) for v in (a, b))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    out: dict[str, Any] = {"n_a": a.size, "n_b": b.size, "a": np.nan, "b": np.nan, "ratio": np.nan,
                           "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan, "verdict": "unsure", "note": ""}
    if a.size < 2 or b.size < 2:
        out["note"] = "fewer than 2 samples on one side"
        out.update(a=np.median(a) if a.size else np.nan, b=np.median(b) if b.size else np.nan)
        return out
    rng = rng if rng is not None else np.random.default_rng(0)
    out.update(a=float(np.median(a)), b=float(np.median(b)), p_value=float(stats.mannwhitneyu(a, b).pvalue))
    if out["a"] <= 0:
        out["note"] = "median of A is not positive: no ratio"
        return out
    draws_a = bootstrap_medians(a, resamples, rng)
    draws_b = bootstrap_medians(b, resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        low, high = np.quantile(draws_b / draws_a, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    out.update(ratio=out["b"] / out["a"], ci_low=float(low), ci_high=float(high))
    out["verdict"] = decide(out["ratio"], low, high, out["p_value"], threshold=threshold, alpha=alpha)
    return out


def run_median(samples, units=None, resamples: int = RESAMPLES,
               rng: np.random.Generator | None = None) -> tuple[float, float]:
    """One run's log median and its variance from within the run (two stages when the run has units).

    The variance is the larger of the bootstrap variance of the log median over the samples
    (:func:`bootstrap_medians`) and the scatter of the units' log medians divided by their
    count: a unit (a repeat, a round) shares its warm caches, its CPU placement, its
    checkpoint, so its samples are not independent of each other and the units' scatter is
    the honest measure once it exceeds the samples'.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.lognormal(0, 0.1, 500), rng.lognormal(1, 0.1, 500)])
    >>> log_med, var = run_median(x, np.repeat([0, 1], 500), rng=rng)
    >>> round(float(np.sqrt(var)), 2)  # two units a factor e apart: the units say ±0.5
    0.5
    """
    _, log_median, var = _run_level(samples, units, resamples, rng)
    return log_median, var


def _run_level(samples, units, resamples: int, rng: np.random.Generator | None) -> tuple[float, float, float]:
    """:func:`run_median`'s ``(log median, variance)`` with the median itself first, from one sort of the samples."""
    x = np.asarray(samples, dtype=float)
    keep = np.isfinite(x) & (x > 0)
    x = x[keep]
    if x.size == 0:
        return np.nan, np.nan, np.nan
    ordered = np.sort(x)
    middle = x.size // 2  # np.median's value: the middle one, or the mean of the two middle ones
    median = float(ordered[middle]) if x.size % 2 else float((ordered[middle - 1] + ordered[middle]) / 2)
    var = float(np.var(np.log(bootstrap_medians(ordered, resamples, rng)), ddof=1)) if x.size > 1 else np.nan
    if units is not None:
        u = pd.Series(np.log(x)).groupby(np.asarray(units)[keep]).median()
        if len(u) >= 2:
            var = max(var if np.isfinite(var) else 0.0, float(u.var(ddof=1)) / len(u))
    return median, math.log(median), var


def run_level_test(logs_a, vars_a, logs_b, vars_b, *, reference=(), run_noise: float = RUN_NOISE,
                   noise_runs: float = RUN_NOISE_RUNS) -> dict[str, Any]:
    """The t test of B's log level against A's when whole runs vary: estimate, its standard error, degrees of freedom.

    Each side is one or more runs, each a log value (a run's log median, a fit's log estimate)
    with its within-run variance. A run's value varies about its configuration's by
    τ² = σ² + (its within-run variance); τ² is pooled from the prior (``run_noise`` = σ₀,
    counted as ``noise_runs`` = ν₀ runs, plus the mean within-run variance) and the scatter
    of the runs within each side and within each ``reference`` group (log values of other
    runs of one configuration: the lab's old-against-old runs). The difference of the two
    sides' mean log values then has variance τ² (1/k_a + 1/k_b), and is tested with
    ν₀ + Σ(k − 1) degrees of freedom.

    Returns
    -------
    dict
        ``estimate`` (log ratio), ``se``, ``df``, ``tau`` (a run's standard deviation), ``runs_a``, ``runs_b``,
        ``paired`` (False), ``sd`` (the standard deviation that :func:`runs_needed` scales: τ), ``other_df`` (the
        reference groups' degrees of freedom), ``noise_runs`` (ν₀) and ``references`` (how many groups).

    Examples
    --------
    >>> r = run_level_test([0.0], [0.0001], [0.2], [0.0001])  # one run per side: the prior decides
    >>> round(r["se"], 3), r["df"]
    (0.142, 4.0)
    """
    logs_a, logs_b = np.asarray(logs_a, dtype=float), np.asarray(logs_b, dtype=float)
    within = np.concatenate([np.asarray(vars_a, dtype=float), np.asarray(vars_b, dtype=float)])
    within = float(np.nanmean(within)) if np.isfinite(within).any() else 0.0
    ss, df = noise_runs * (run_noise ** 2 + within), float(noise_runs)
    other = _scatter(reference)
    ss, df = ss + other[0], df + other[1]
    for group in (logs_a, logs_b):
        group_ss, group_df = _scatter([group])
        ss, df = ss + group_ss, df + group_df
    tau2 = ss / df if df > 0 else np.nan
    se = math.sqrt(tau2 * (1 / logs_a.size + 1 / logs_b.size)) if np.isfinite(tau2) else np.nan
    tau = math.sqrt(tau2) if np.isfinite(tau2) else np.nan
    return {"estimate": float(logs_b.mean() - logs_a.mean()), "se": se, "df": df, "tau": tau,
            "runs_a": logs_a.size, "runs_b": logs_b.size, "paired": False, "sd": tau, "other_df": other[1],
            "noise_runs": float(noise_runs), "references": len(reference)}


def _scatter(groups) -> tuple[float, float]:
    """The sum of squares of each group's finite values about its mean, and its degrees of freedom, summed."""
    ss, df = 0.0, 0.0
    for group in groups:
        group = np.asarray(group, dtype=float)
        group = group[np.isfinite(group)]
        if group.size >= 2:
            ss += float(np.sum((group - group.mean()) ** 2))
            df += group.size - 1
    return ss, df


def paired_test(logs_a, vars_a, logs_b, vars_b, *, reference=(), run_noise: float = RUN_NOISE,
                noise_runs: float = RUN_NOISE_RUNS) -> dict[str, Any]:
    """The t test of the mean of paired log differences, for runs made in alternation (run i of A beside run i of B).

    Slow drift of the machine (a warming disk, a neighbour's load that comes and goes) moves
    the two runs of a pair alike, so it cancels in their difference ``d_i = b_i − a_i``. The
    variance of one difference is pooled as :func:`run_level_test` pools a run's: a prior
    2 (σ₀² + within-run variance) counted as ν₀ runs, the scatter of the ``k`` differences
    (k − 1 degrees of freedom) and twice each ``reference`` group's scatter (other runs of one
    configuration, not paired: an upper bound on what a pair's difference varies by). The
    mean difference has variance s²/k, tested with ν₀ + (k − 1) + (the references') degrees
    of freedom.

    Returns
    -------
    dict
        As :func:`run_level_test`'s, with ``paired`` True, ``pairs`` and ``sd`` the standard deviation of one
        pair's difference (``tau`` is it over √2: a run's, were the two runs of a pair independent).

    Examples
    --------
    >>> drift = np.array([0.0, 0.3, -0.2, 0.1])  # the machine drifts; B is 10 % above A in every pair
    >>> r = paired_test(drift, [1e-4] * 4, drift + np.log(1.1), [1e-4] * 4)
    >>> round(float(np.exp(r["estimate"])), 3), r["df"], r["pairs"]
    (1.1, 7.0, 4)
    """
    logs_a, logs_b = np.asarray(logs_a, dtype=float), np.asarray(logs_b, dtype=float)
    if logs_a.size != logs_b.size:
        raise ValueError(f"paired runs need as many runs on each side ({logs_a.size} and {logs_b.size})")
    within = np.concatenate([np.asarray(vars_a, dtype=float), np.asarray(vars_b, dtype=float)])
    within = float(np.nanmean(within)) if np.isfinite(within).any() else 0.0
    d = logs_b - logs_a
    d = d[np.isfinite(d)]
    other = _scatter(reference)
    own = _scatter([d])
    ss = noise_runs * 2 * (run_noise ** 2 + within) + 2 * other[0] + own[0]
    df = float(noise_runs) + other[1] + own[1]
    var = ss / df if df > 0 and d.size else np.nan
    sd = math.sqrt(var) if np.isfinite(var) else np.nan
    return {"estimate": float(d.mean()) if d.size else np.nan, "se": sd / math.sqrt(d.size) if d.size else np.nan,
            "df": df, "tau": sd / math.sqrt(2), "runs_a": logs_a.size, "runs_b": logs_b.size, "paired": True,
            "pairs": int(d.size), "sd": sd, "other_df": other[1], "noise_runs": float(noise_runs),
            "references": len(reference)}


def alternating(starts_a, starts_b) -> bool:
    """Whether two sides' runs were made in alternation: each consecutive two runs, in start order, one of each.

    ``A B A B``, ``B A B A`` and pairs in a random order (``A B B A A B``) all alternate; both
    sides need the same number (at least 2) of runs, each with a start time.

    Examples
    --------
    >>> alternating([1, 3, 5], [2, 4, 6]), alternating([1, 4, 5], [2, 3, 6]), alternating([1, 2], [3, 4])
    (True, True, False)
    """
    a, b = list(starts_a), list(starts_b)
    if len(a) != len(b) or len(a) < 2 or any(t is None or (isinstance(t, float) and math.isnan(t)) for t in a + b):
        return False
    order = [side for _, side in sorted([(t, 0) for t in a] + [(t, 1) for t in b])]
    return all(order[i] != order[i + 1] for i in range(0, len(order), 2))


def slower_power(delta: float, se: float, df: float, *, estimated_df: float | None = None,
                 threshold: float = THRESHOLD, alpha: float = ALPHA) -> float:
    """The probability that a true log change ``delta`` is called ``slower`` by :func:`decide` on a t test.

    The estimate is normal about ``delta`` with standard error ``se``; the standard error the test
    uses is estimated with ``df`` degrees of freedom (``se · √(χ²_df / df)``, averaged over
    :data:`_SE_POINTS` quantiles of its law). A call needs the estimate beyond
    ``log(1 + threshold)`` *and* beyond ``t_{1−α/2, df}`` estimated standard errors: the power
    of the noncentral t test, cut by the threshold.

    With ``estimated_df``, ``se`` is itself an estimate from a comparison already made (its
    noise known to ``estimated_df`` degrees of freedom): the power is averaged over the true
    standard errors that estimate allows (``se · √(estimated_df / χ²)``), the expected power
    ("assurance") rather than the power at the estimate, which a noise estimate on the low side
    would overstate.

    Examples
    --------
    >>> round(slower_power(math.log(1.5), 0.05, 30.0), 3), round(slower_power(math.log(1.05), 1e-4, 30.0), 2)
    (1.0, 0.5)
    >>> at, assured = (slower_power(math.log(1.3), 0.08, 12.0, estimated_df=e) for e in (None, 12.0))
    >>> bool(assured < at)  # an uncertain noise estimate lowers the power to expect
    True
    """
    if not (np.isfinite(se) and np.isfinite(delta) and df > 0):
        return np.nan
    if se <= 0:
        return float(delta > math.log1p(threshold))
    return _power_at(se, df, estimated_df, threshold, alpha)(delta)


def _power_at(se: float, df: float, estimated_df: float | None, threshold: float, alpha: float):
    """:func:`slower_power` as a function of ``delta`` alone: its terms made once for a search over ``delta``."""
    true_se = se / _se_law(float(estimated_df))[:, None] if estimated_df else np.array([[se]])
    bar = np.maximum(math.log1p(threshold), special.stdtrit(df, 1 - alpha / 2) * true_se * _se_law(float(df)))
    return lambda delta: float(np.mean(special.ndtr((delta - bar) / true_se)))


@functools.lru_cache(maxsize=4096)
def _se_law(df: float) -> np.ndarray:
    """:data:`_SE_POINTS` quantiles of ``√(χ²_df / df)``: the estimated standard error over the true one."""
    q = (np.arange(_SE_POINTS) + 0.5) / _SE_POINTS
    law = np.sqrt(2 * special.gammaincinv(df / 2, q) / df)
    law.flags.writeable = False  # shared by every caller through the cache
    return law


def detectable_change(se: float, df: float, *, threshold: float = THRESHOLD, alpha: float = ALPHA,
                      power: float = POWER) -> float:
    """The smallest change (a ratio above 1) called with probability ``power`` at this standard error and df.

    The same size the other way (its inverse) is called with the same power. Never below
    ``1 + threshold``: :func:`decide` also needs the ratio beyond the threshold, which a change
    of exactly the threshold's size passes half the time. ``se`` is the comparison's own
    estimate (``df`` degrees of freedom): the power is the one to expect over the noise that
    estimate allows (:func:`slower_power`'s ``estimated_df``).

    Examples
    --------
    >>> round(detectable_change(0.1 * math.sqrt(2), 4.0), 2)  # one run a side, the prior's σ₀ = 0.10
    2.87
    >>> round(detectable_change(1e-6, 100.0), 3)  # no noise: just beyond the threshold
    1.05
    """
    if not (np.isfinite(se) and df > 0):
        return np.nan
    if se <= 0:
        return 1 + threshold
    low = math.log1p(threshold)
    high = low + (stats.t.ppf(1 - alpha / 2, df) * 3 + 10) * se
    power_at = _power_at(se, df, df, threshold, alpha)  # slower_power(d, se, df, estimated_df=df, …)

    def short(d: float) -> float:
        return power_at(d) - power

    while short(high) < 0:
        high *= 2
    root = optimize.brentq(short, low, high, xtol=1e-6)
    return _exp(root)


def runs_needed(test: dict, target: float, *, threshold: float = THRESHOLD, alpha: float = ALPHA,
                power: float = POWER) -> float:
    """Runs a side (pairs, for a paired test) that call a change of ``target`` (a ratio) with ``power``.

    The run-level noise stays what ``test`` (:func:`run_level_test` or :func:`paired_test`)
    estimated (the power expected over what that estimate allows: :func:`slower_power`); ``k``
    runs a side give a standard error ``sd · √(2/k)`` with ν₀ + 2(k − 1) degrees of freedom
    (paired: ``sd / √k`` with ν₀ + k − 1), plus the reference runs'. A
    target within ``1 ± threshold`` can never be called (``inf``), nor one beyond
    :data:`MAX_RUNS` runs.

    Examples
    --------
    >>> one = run_level_test([0.0], [0.0], [0.0], [0.0])  # the prior alone: σ₀ = 0.10 a run
    >>> runs_needed(one, 1.10), runs_needed(one, 1.30), runs_needed(one, 1.04)
    (44.0, 7.0, inf)
    """
    delta = abs(math.log(target)) if target > 0 else np.nan
    sd, paired = test.get("sd", np.nan), bool(test.get("paired"))
    if not (np.isfinite(delta) and np.isfinite(sd)) or delta <= math.log1p(threshold):
        return np.inf if np.isfinite(delta) else np.nan
    base = test.get("noise_runs", RUN_NOISE_RUNS) + test.get("other_df", 0.0)

    def enough(k: int) -> bool:
        se = sd / math.sqrt(k) if paired else sd * math.sqrt(2 / k)
        df = base + (k - 1 if paired else 2 * (k - 1))
        return slower_power(delta, se, df, estimated_df=test["df"], threshold=threshold, alpha=alpha) >= power

    low = 2 if paired else 1
    if not enough(MAX_RUNS):
        return np.inf
    high = MAX_RUNS
    while low < high:  # power grows with k: the smallest k that is enough
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid + 1, high)
    return float(low)


def power_columns(test: dict, *, target: float, threshold: float = THRESHOLD, alpha: float = ALPHA) -> dict[str, Any]:
    """A comparison's ``detectable`` change (at :data:`POWER`), ``runs_needed`` to call ``target``, and ``paired``."""
    return {"detectable": detectable_change(test["se"], test["df"], threshold=threshold, alpha=alpha),
            "runs_needed": runs_needed(test, target, threshold=threshold, alpha=alpha),
            "target": target, "paired": bool(test.get("paired"))}


def verdict_text(verdict: str, *, runs: float = np.nan, runs_needed: float = np.nan, detectable: float = np.nan,
                 paired: bool = False, why: str = "") -> str:
    """A verdict in words a reader cannot take for "nothing changed": ``unsure`` says what it could not see.

    ``why`` says it when there is no power to state (no interval, no sample on one side).

    Examples
    --------
    >>> verdict_text("unsure", runs=1, runs_needed=44, detectable=2.87)
    'could not tell (needs ≥ 44 runs a side)'
    >>> verdict_text("unsure", runs=40, runs_needed=29, detectable=1.08)
    'could not tell (a change under ×1.08 would not show)'
    >>> verdict_text("slower"), verdict_text("unsure", why="no interval in the fits")
    ('slower', 'could not tell (no interval in the fits)')
    """
    if verdict != "unsure":
        return verdict
    unit = "pairs" if paired else "runs a side"
    if np.isfinite(runs_needed) and (not np.isfinite(runs) or runs_needed > runs):
        return f"could not tell (needs ≥ {int(runs_needed)} {unit})"
    if runs_needed == np.inf:
        return f"could not tell (needs more than {MAX_RUNS:,} {unit})"
    if np.isfinite(detectable):
        return f"could not tell (a change under ×{detectable:.2f} would not show)"
    return f"could not tell ({why})" if why else "could not tell"


def compare_runs(a_runs, b_runs, *, reference=(), threshold: float = THRESHOLD, alpha: float = ALPHA,
                 run_noise: float = RUN_NOISE, noise_runs: float = RUN_NOISE_RUNS, direction: int = 1,
                 paired: bool = False, target: float | None = None, resamples: int = RESAMPLES,
                 rng: np.random.Generator | None = None) -> dict[str, Any]:
    """Compare the raw samples of one duration in two sets of runs, run-to-run noise included.

    Each run is an array of samples or a pair ``(samples, units)`` (its replication units,
    :data:`REPLICATE_COLUMNS`). A run's level is its log median with its within-run variance
    (:func:`run_median`); the sides' mean levels are compared by :func:`run_level_test`
    (``reference``: groups of other runs' log medians of this quantity, one group per
    configuration), or, with ``paired`` (the runs made in alternation, :func:`alternating`:
    run i of A beside run i of B, as many on each side, at least 2), by :func:`paired_test`.
    ``a`` and ``b`` are the geometric means of the runs' medians (a run's median when a side
    has one run), the interval is ``exp(estimate ± t₀.₉₇₅ · se)``, the p value the two-sided t
    test's; the verdict is :func:`decide`'s. ``detectable`` is the smallest change called with
    :data:`POWER` at the measured noise and run count (:func:`detectable_change`),
    ``runs_needed`` the runs a side (pairs) that would call a change of ``target``
    (:func:`runs_needed`; default twice the threshold: a change of the threshold's own size is
    called at most half the time).

    Beside them, the test of the raw samples as if they were independent draws (each side's
    samples pooled, :func:`compare_samples`): the bootstrap interval of the ratio of medians
    and the Mann–Whitney U test's p value, and the verdict they give (``samples_verdict``).
    They say what the samples alone show; the verdict does not rest on them, because a whole
    run shifts (see the module's text).

    Returns
    -------
    dict
        ``n_a, n_b`` (samples), ``runs_a, runs_b, a, b, ratio, ci_low, ci_high, p_value,
        run_noise`` (τ, a run's estimated standard deviation, log scale), ``detectable, runs_needed, target,
        paired, samples_ci_low, samples_ci_high, mann_whitney_p, samples_verdict``, ``verdict, note``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> one = compare_runs([rng.lognormal(0, 0.3, 2000)], [1.3 * rng.lognormal(0, 0.3, 2000)], rng=rng)
    >>> one["verdict"], round(one["detectable"], 2), one["runs_needed"]  # 30 % is within what one run a side shows
    ('unsure', 2.88, 45.0)
    >>> many = compare_runs([rng.lognormal(rng.normal(0, 0.1), 0.3, 300) for _ in range(5)],
    ...                     [1.3 * rng.lognormal(rng.normal(0, 0.1), 0.3, 300) for _ in range(5)], rng=rng)
    >>> many["verdict"], many["runs_a"]
    ('slower', 5)
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    target = 1 + 2 * threshold if target is None else target
    sides, pooled = [], []
    for runs in (a_runs, b_runs):
        levels, variances, medians, n = [], [], [], 0
        for run in runs:
            samples, units = run if isinstance(run, tuple) else (run, None)
            samples = np.asarray(samples, dtype=float)
            median, level, var = _run_level(samples, units, resamples, rng)
            n += int(np.isfinite(samples).sum())
            pooled.append((len(sides), samples))
            levels.append(level)
            variances.append(var)
            if np.isfinite(level):
                medians.append(median)
        sides.append((np.array(levels), np.array(variances), n,
                      medians[0] if len(medians) == 1 else math.exp(np.nanmean(levels)) if medians else np.nan))
    (la, va, na, ma), (lb, vb, nb, mb) = sides
    paired = paired and la.size == lb.size >= 2 and int((np.isfinite(la) & np.isfinite(lb)).sum()) >= 2
    if paired:  # a pair with a run of no level is no pair
        keep = np.isfinite(la) & np.isfinite(lb)
        la, va, lb, vb = la[keep], va[keep], lb[keep], vb[keep]
    else:
        va, vb = va[np.isfinite(la)], vb[np.isfinite(lb)]
        la, lb = la[np.isfinite(la)], lb[np.isfinite(lb)]
    out: dict[str, Any] = {"n_a": na, "n_b": nb, "runs_a": la.size, "runs_b": lb.size, "a": np.nan, "b": np.nan,
                           "ratio": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan,
                           "run_noise": np.nan, "detectable": np.nan, "runs_needed": np.nan, "target": target,
                           "paired": paired, "samples_ci_low": np.nan, "samples_ci_high": np.nan,
                           "mann_whitney_p": np.nan, "samples_verdict": "unsure", "verdict": "unsure", "note": ""}
    if not la.size or not lb.size:
        out["note"] = "no positive sample on one side"
        return out
    out.update(a=ma, b=mb)
    if min(na, nb) < 2:
        out["note"] = "fewer than 2 samples on one side"
        return out
    raw = compare_samples(*(np.concatenate([x for side, x in pooled if side == k]) for k in (0, 1)),
                          threshold=threshold, alpha=alpha, resamples=resamples, rng=rng)
    out.update(samples_ci_low=raw["ci_low"], samples_ci_high=raw["ci_high"], mann_whitney_p=raw["p_value"],
               samples_verdict=decide(raw["ratio"], raw["ci_low"], raw["ci_high"], raw["p_value"],
                                      threshold=threshold, alpha=alpha, direction=direction))
    test = (paired_test if paired else run_level_test)(la, va, lb, vb, reference=reference, run_noise=run_noise,
                                                        noise_runs=noise_runs)
    out.update(t_interval(test, CONFIDENCE), run_noise=test["tau"])
    out.update(power_columns(test, target=target, threshold=threshold, alpha=alpha))
    out["ratio"] = out["b"] / out["a"]
    out["verdict"] = decide(out["ratio"], out["ci_low"], out["ci_high"], out["p_value"], threshold=threshold,
                            alpha=alpha, direction=direction)
    out["note"] = runs_note(test)
    return out


def t_interval(test: dict, confidence: float) -> dict[str, float]:
    """The interval ``exp(estimate ± t · se)`` of a ratio and its two-sided p value.

    A log interval too wide for a float (a fit whose own interval is hundreds of times its
    estimate) spans 0 to infinity rather than failing.

    Examples
    --------
    >>> t_interval({"estimate": 0.0, "se": 337.0, "df": 4.0}, 0.95)
    {'ci_low': 0.0, 'ci_high': inf, 'p_value': 1.0}
    """
    d, se, df = test["estimate"], test["se"], test["df"]
    if not (np.isfinite(se) and se > 0):
        return {"ci_low": _exp(d), "ci_high": _exp(d), "p_value": 0.0 if d else 1.0}
    half = stats.t.ppf(0.5 + confidence / 2, df) * se
    return {"ci_low": _exp(d - half), "ci_high": _exp(d + half),
            "p_value": float(2 * stats.t.sf(abs(d) / se, df))}


def _exp(x: float) -> float:
    """``exp(x)``, infinite rather than an error beyond a float's range."""
    with np.errstate(over="ignore"):
        return float(np.exp(x))


def runs_note(test: dict) -> str:
    """Which test a comparison used, on how many runs, and where its run-to-run noise came from.

    Examples
    --------
    >>> runs_note(run_level_test([0.0], [0.0], [0.1], [0.0]))
    'unpaired, 1 run(s) against 1; run-to-run noise from the prior only'
    >>> runs_note(paired_test([0.0, 0.1], [0.0] * 2, [0.1, 0.2], [0.0] * 2))
    'paired, 2 alternating pairs; run-to-run noise from the prior and the pairs'
    """
    if test.get("paired"):
        what, own = f"paired, {test['pairs']} alternating pairs", "the pairs"
    else:
        what = f"unpaired, {test['runs_a']} run(s) against {test['runs_b']}"
        own = "the runs" if max(test["runs_a"], test["runs_b"]) > 1 else ""
    sources = ["the prior", own] + ([f"{test['references']} group(s) of other runs"] if test.get("references") else [])
    sources = [s for s in sources if s]
    said = sources[0] + " only" if len(sources) == 1 else ", ".join(sources[:-1]) + " and " + sources[-1]
    return f"{what}; run-to-run noise from {said}"


def compare_estimates(a: float, a_low: float, a_high: float, b: float, b_low: float, b_high: float, *,
                      threshold: float = THRESHOLD, alpha: float = ALPHA, direction: int = 1) -> dict[str, Any]:
    """Compare two fitted estimates through their 95 % intervals: ratio b/a, its interval, a z test, verdict.

    Each interval is read as estimate ± 1.96 standard errors; the ratio's interval and
    the test are on the log scale (delta method), so both estimates must be positive.

    Examples
    --------
    >>> r = compare_estimates(0.18, 0.16, 0.20, 0.27, 0.25, 0.29)
    >>> round(r["ratio"], 2), r["verdict"]
    (1.5, 'slower')
    """
    out: dict[str, Any] = {"n_a": np.nan, "n_b": np.nan, "a": a, "b": b, "ratio": np.nan, "ci_low": np.nan,
                           "ci_high": np.nan, "p_value": np.nan, "verdict": "unsure", "note": ""}
    values = np.array([a, a_low, a_high, b, b_low, b_high], dtype=float)
    if not (np.isfinite(a) and np.isfinite(b)) or a <= 0 or b <= 0:
        out["note"] = "an estimate is not positive: no ratio"
        return out
    out["ratio"] = b / a
    if not np.isfinite(values).all():
        out["note"] = "no interval in the fits: ratio without interval or test"
        return out
    se = math.hypot((a_high - a_low) / (2 * Z_CONFIDENCE) / a, (b_high - b_low) / (2 * Z_CONFIDENCE) / b)
    log_ratio = math.log(out["ratio"])
    out.update(ci_low=_exp(log_ratio - Z_CONFIDENCE * se), ci_high=_exp(log_ratio + Z_CONFIDENCE * se),
               p_value=float(2 * stats.norm.sf(abs(log_ratio) / se)) if se > 0 else 0.0)
    out["verdict"] = decide(out["ratio"], out["ci_low"], out["ci_high"], out["p_value"], threshold=threshold,
                            alpha=alpha, direction=direction)
    return out


def direction_of(unit: object) -> int:
    """1 when larger values of ``unit`` mean slower (a time), -1 faster (a rate), 0 neither.

    Examples
    --------
    >>> direction_of("ms"), direction_of("ms per partition"), direction_of("rows/s"), direction_of(None)
    (1, 1, -1, 0)
    """
    if not isinstance(unit, str) or not unit.strip():
        return 0
    text = unit.strip().lower()
    if re.search(r"(/\s*s\b|\bper[ _]s(ec(ond)?)?\b|_per_s$)", text):
        return -1
    if re.match(r"^(ns|us|µs|ms|s|seconds?)\b", text):
        return 1
    return 0


# -- two run folders ---------------------------------------------------------------------------
