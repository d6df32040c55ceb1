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

One run against one can only call a change beyond ×1.9 (t₄ · √2 · σ₀), and each row's note
gives that smallest significant change; :func:`compare_samples` is the test of samples known
to be independent draws. A bimodal run-level effect (fsync off: client and server on one core
or two) cannot be told from a change by one run, or three, unless the lab's other runs of the
configuration show it.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

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
    k = n if n % 2 else n + 1
    rng = rng if rng is not None else np.random.default_rng(0)
    law = stats.binom.sf((k + 1) // 2 - 1, k, np.arange(1, n + 1) / n)  # P(median of a resample <= x[j])
    return x[np.minimum(np.searchsorted(law, rng.random(resamples)), n - 1)]


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
    x = np.asarray(samples, dtype=float)
    keep = np.isfinite(x) & (x > 0)
    x = x[keep]
    if x.size == 0:
        return np.nan, np.nan
    log_median = math.log(np.median(x))
    var = float(np.var(np.log(bootstrap_medians(x, resamples, rng)), ddof=1)) if x.size > 1 else np.nan
    if units is not None:
        u = pd.Series(np.log(x)).groupby(np.asarray(units)[keep]).median()
        if len(u) >= 2:
            var = max(var if np.isfinite(var) else 0.0, float(u.var(ddof=1)) / len(u))
    return log_median, var


def run_level_test(logs_a, vars_a, logs_b, vars_b, *, reference=(), run_noise: float = RUN_NOISE,
                   noise_runs: float = RUN_NOISE_RUNS) -> dict[str, float]:
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
        ``estimate`` (log ratio), ``se``, ``df``, ``tau`` (a run's standard deviation), ``runs_a``, ``runs_b``.

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
    for group in (logs_a, logs_b, *(np.asarray(g, dtype=float) for g in reference)):
        group = group[np.isfinite(group)]
        if group.size >= 2:
            ss += float(np.sum((group - group.mean()) ** 2))
            df += group.size - 1
    tau2 = ss / df if df > 0 else np.nan
    se = math.sqrt(tau2 * (1 / logs_a.size + 1 / logs_b.size)) if np.isfinite(tau2) else np.nan
    return {"estimate": float(logs_b.mean() - logs_a.mean()), "se": se, "df": df,
            "tau": math.sqrt(tau2) if np.isfinite(tau2) else np.nan, "runs_a": logs_a.size, "runs_b": logs_b.size}


def compare_runs(a_runs, b_runs, *, reference=(), threshold: float = THRESHOLD, alpha: float = ALPHA,
                 run_noise: float = RUN_NOISE, noise_runs: float = RUN_NOISE_RUNS, direction: int = 1,
                 resamples: int = RESAMPLES, rng: np.random.Generator | None = None) -> dict[str, Any]:
    """Compare the raw samples of one duration in two sets of runs, run-to-run noise included.

    Each run is an array of samples or a pair ``(samples, units)`` (its replication units,
    :data:`REPLICATE_COLUMNS`). A run's level is its log median with its within-run variance
    (:func:`run_median`); the sides' mean levels are compared by :func:`run_level_test`
    (``reference``: groups of other runs' log medians of this quantity, one group per
    configuration). ``a`` and ``b`` are the geometric means of the runs' medians (a run's
    median when a side has one run), the interval is ``exp(estimate ± t₀.₉₇₅ · se)``, the
    p value the two-sided t test's; the verdict is :func:`decide`'s.

    Beside them, the test of the raw samples as if they were independent draws (each side's
    samples pooled, :func:`compare_samples`): the bootstrap interval of the ratio of medians
    and the Mann–Whitney U test's p value, and the verdict they give (``samples_verdict``).
    They say what the samples alone show; the verdict does not rest on them, because a whole
    run shifts (see the module's text).

    Returns
    -------
    dict
        ``n_a, n_b`` (samples), ``runs_a, runs_b, a, b, ratio, ci_low, ci_high, p_value,
        run_noise`` (τ, a run's estimated standard deviation, log scale), ``samples_ci_low,
        samples_ci_high, mann_whitney_p, samples_verdict``, ``verdict, note``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> one = compare_runs([rng.lognormal(0, 0.3, 2000)], [1.3 * rng.lognormal(0, 0.3, 2000)], rng=rng)
    >>> one["verdict"]  # 30 % is within what one run against one run can show
    'unsure'
    >>> many = compare_runs([rng.lognormal(rng.normal(0, 0.1), 0.3, 300) for _ in range(5)],
    ...                     [1.3 * rng.lognormal(rng.normal(0, 0.1), 0.3, 300) for _ in range(5)], rng=rng)
    >>> many["verdict"], many["runs_a"]
    ('slower', 5)
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    sides, pooled = [], []
    for runs in (a_runs, b_runs):
        levels, variances, medians, n = [], [], [], 0
        for run in runs:
            samples, units = run if isinstance(run, tuple) else (run, None)
            samples = np.asarray(samples, dtype=float)
            level, var = run_median(samples, units, resamples, rng)
            n += int(np.isfinite(samples).sum())
            pooled.append((len(sides), samples))
            if np.isfinite(level):
                levels.append(level)
                variances.append(var)
                medians.append(float(np.median(samples[np.isfinite(samples) & (samples > 0)])))
        sides.append((levels, variances, n, medians[0] if len(medians) == 1 else math.exp(np.mean(levels or [np.nan]))))
    (la, va, na, ma), (lb, vb, nb, mb) = sides
    out: dict[str, Any] = {"n_a": na, "n_b": nb, "runs_a": len(la), "runs_b": len(lb), "a": np.nan, "b": np.nan,
                           "ratio": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan,
                           "run_noise": np.nan, "samples_ci_low": np.nan, "samples_ci_high": np.nan,
                           "mann_whitney_p": np.nan, "samples_verdict": "unsure", "verdict": "unsure",
                           "note": ""}
    if not la or not lb:
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
    test = run_level_test(la, va, lb, vb, reference=reference, run_noise=run_noise, noise_runs=noise_runs)
    out.update(t_interval(test, CONFIDENCE), run_noise=test["tau"])
    out["ratio"] = out["b"] / out["a"]
    out["verdict"] = decide(out["ratio"], out["ci_low"], out["ci_high"], out["p_value"], threshold=threshold,
                            alpha=alpha, direction=direction)
    out["note"] = runs_note(test, len(reference))
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


def runs_note(test: dict, n_reference: int) -> str:
    if test["runs_a"] > 1 and test["runs_b"] > 1:
        return ""
    smallest = stats.t.ppf(1 - ALPHA / 2, test["df"]) * test["se"]
    return (f"{test['runs_a']} run(s) against {test['runs_b']}: run-to-run noise "
            + (f"from the prior and {n_reference} group(s) of other runs" if n_reference else "from the prior only")
            + f", smallest change that can be significant ×{_exp(smallest):.2f}")


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
