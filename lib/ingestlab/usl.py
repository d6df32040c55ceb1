"""The Universal Scalability Law X(N) = λN / (1 + σ(N−1) + κN(N−1)): fit, intervals, curve and band, held-out check.

Fit
---
Nonlinear least squares on the throughput itself (scipy ``least_squares``, bounds λ > 0,
σ ≥ 0, κ ≥ 0), λ estimated with σ and κ. This is what the R ``usl`` package does since 2.0.0
(``nls``/``nlxb`` on the three-coefficient form; its ``alpha, beta, gamma`` are our σ, κ, λ)
and what Coda Hale's Go port does. Before 2.0.0 the R package fixed λ at the N = 1
throughput and fitted σ and κ by linear regression of ``N/C(N) − 1`` on ``N − 1`` and
``N(N − 1)`` (Gunther, *Guerrilla Capacity Planning*, ch. 5); ``normalise=True`` does that
(``tests/test_usl.py`` reproduces both versions' published numbers for SPEC SDM91).

Intervals
---------
Delta method with a sandwich covariance of the NLS estimate, because the spread of measured
throughput grows with the throughput (the noise is multiplicative), which the textbook
``s²(JᵀJ)⁻¹`` ignores: with ``rounds`` the covariance is clustered by round (a round's points
share its conditions) with a t quantile on rounds − 1 df; without, it is HC3 (each residual
over ``1 − h``) on n − 3 df. ``peak_clients`` = sqrt((1 − σ)/κ) gets its interval on the log
scale. With ``n_boot > 0`` a percentile bootstrap is used instead: rounds are resampled when
``rounds`` is given, otherwise the fitted curve's relative residuals (``y/ŷ − 1``).

Coverage of the 95 % intervals of (λ, σ, κ), λ = 1000, σ = 0.05, κ = 0.001, 5 rounds at
1–64 clients, 3 % multiplicative noise (500 trials; bootstrap 100 trials × 150 resamples)::

    interval                               λ      σ      κ
    delta, clustered by round (default)   0.93   0.95   0.95
    delta, HC3 (no rounds)                 0.93   0.93   0.93
    delta, s²(JᵀJ)⁻¹ (textbook)            0.96   0.93   0.86
    bootstrap over 5 rounds                0.89   0.82   0.84
    bootstrap of relative residuals        0.97   0.92   0.98

A bootstrap over five rounds sees five clusters and its percentile interval is too narrow;
the bootstrap also costs ~1 ms per resample, the delta interval one fit.

The fitted curve's confidence band (:func:`usl_band`) is the same delta method applied to
X(N) itself, on the log scale (the band stays above 0, as throughput does). In the setting
above (300 trials) its 95 % band covers the true X(N) at each N from 1.5 to 64 in 0.94–0.97
of the trials clustered by round, 0.93–0.96 with HC3.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import optimize, stats

from ingestlab.errors import ConfigError

#: The terms :func:`fit_usl` returns, in order.
USL_TERMS = ("lambda", "sigma", "kappa", "peak_clients")


def usl_throughput(clients, lam: float, sigma: float, kappa: float) -> np.ndarray:
    """X(N) = λN / (1 + σ(N−1) + κN(N−1)).

    Examples
    --------
    >>> usl_throughput([1, 2], 100.0, 0.1, 0.0).round(2).tolist()
    [100.0, 181.82]
    """
    n = np.asarray(clients, float)
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def fit_usl(clients: Sequence[float], throughput: Sequence[float], *, rounds: Sequence | None = None,
            n_boot: int = 0, alpha: float = 0.05, seed: int = 0, normalise: bool = False,
            unit: str = "statements/s") -> pd.DataFrame:
    """Fit the Universal Scalability Law to throughput measured at several client counts.

    Parameters
    ----------
    clients, throughput : sequence of float
        One point per measurement (client count ≥ 1, throughput > 0); repeats welcome.
    rounds : sequence, optional
        The round (repetition) each point belongs to: intervals are clustered (or the
        bootstrap resamples) by round.
    n_boot : int
        0 (default): delta-method intervals with a sandwich covariance; > 0: a percentile
        bootstrap with this many resamples (see the module docstring).
    alpha : float
        1 − the intervals' level.
    seed : int
        Seed of the bootstrap.
    normalise : bool
        Fix λ at the mean N = 1 throughput and fit σ, κ by the pre-2.0 R ``usl`` linear method
        (needs points at N = 1; λ then has no interval).
    unit : str
        The throughput's unit; λ is in ``unit`` per client.

    Returns
    -------
    pandas.DataFrame
        One row per term (``lambda``, ``sigma``, ``kappa``, ``peak_clients``): ``term``,
        ``estimate``, ``ci_low``, ``ci_high``, ``unit``, ``n_points``, ``r2`` (1 − SSR/SST of the
        throughput), ``ci_method``. ``peak_clients`` is inf when κ = 0 and NaN when σ ≥ 1;
        delta intervals of λ and the peak are taken on the log scale, lower bounds of σ and κ
        are clipped at 0.

    Raises
    ------
    ValueError
        If there are fewer than 4 points at 3 distinct client counts, or a client count < 1,
        or a throughput ≤ 0.

    Examples
    --------
    SPEC SDM91 (R ``usl`` package data): σ = 0.0277, κ = 0.000104, as ``usl`` ≥ 2.0 reports.

    >>> load = [1, 18, 36, 72, 108, 144, 216]
    >>> tput = [64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2]
    >>> fit = fit_usl(load, tput).set_index("term")["estimate"]
    >>> round(float(fit["sigma"]), 4), round(float(fit["kappa"]), 7), round(float(fit["peak_clients"]), 1)
    (0.0277, 0.0001044, 96.5)
    """
    n, y, groups = _points(clients, throughput, rounds)
    if normalise:
        params = _fit_normalised(n, y)
    else:
        params = _fit_nls(n, y)
    fitted = usl_throughput(n, *params)
    sst = ((y - y.mean()) ** 2).sum()
    r2 = float(1 - ((y - fitted) ** 2).sum() / sst) if sst > 0 else np.nan
    estimates = np.r_[params, _peak(params[1], params[2])]
    if n_boot > 0:
        low, high, method = _bootstrap(n, y, groups, params, n_boot=n_boot, alpha=alpha, seed=seed,
                                       normalise=normalise)
    else:
        low, high, method = _delta(n, y, groups, params, alpha=alpha, normalise=normalise)
    units = [f"{unit} per client", "", "", "clients"]
    return pd.DataFrame({"term": USL_TERMS, "estimate": estimates, "ci_low": low, "ci_high": high, "unit": units,
                         "n_points": len(n), "r2": r2, "ci_method": method})


def usl_predict(fit_or_params, clients) -> np.ndarray:
    """The fitted law's throughput at ``clients`` (the curve to draw over the measured points).

    Parameters
    ----------
    fit_or_params : pandas.DataFrame or mapping or sequence
        :func:`fit_usl`'s table, a mapping with ``lambda``, ``sigma``, ``kappa``, or the three
        numbers in that order.
    clients : array-like
        Client counts.

    Examples
    --------
    >>> usl_predict({"lambda": 100.0, "sigma": 0.1, "kappa": 0.0}, [1, 2]).round(2).tolist()
    [100.0, 181.82]
    """
    if isinstance(fit_or_params, pd.DataFrame):
        est = fit_or_params.set_index("term")["estimate"]
        lam, sigma, kappa = (float(est[t]) for t in USL_TERMS[:3])
    elif isinstance(fit_or_params, dict):
        lam, sigma, kappa = (float(fit_or_params[t]) for t in USL_TERMS[:3])
    else:
        lam, sigma, kappa = (float(v) for v in fit_or_params)
    return usl_throughput(clients, lam, sigma, kappa)


def usl_band(clients: Sequence[float], throughput: Sequence[float], grid, *, rounds: Sequence | None = None,
             alpha: float = 0.05) -> pd.DataFrame:
    """The fitted law's curve at ``grid`` with its pointwise confidence band (where the mean throughput lies).

    The fit is :func:`fit_usl`'s (NLS, the default); the band is the delta method on log X(N):
    ``se = sqrt(gᵀ V g) / X̂(N)`` with ``g`` the gradient of X(N) in (λ, σ, κ) and ``V`` the
    sandwich covariance of :func:`fit_usl` (clustered by ``rounds`` when given, else HC3),
    ``X̂(N) · exp(± t · se)`` with t on that covariance's degrees of freedom. It says where the
    curve is, not where a new measurement falls (:func:`usl_holdout` gives that interval); beyond
    the measured client counts it is an extrapolation, and a figure should not draw it there.

    Parameters
    ----------
    clients, throughput : sequence of float
        The points the law is fitted to, as for :func:`fit_usl`.
    grid : array-like
        Client counts at which to evaluate the curve.
    rounds : sequence, optional
        As for :func:`fit_usl`.
    alpha : float
        1 − the band's level.

    Returns
    -------
    pandas.DataFrame
        One row per grid point: ``clients``, ``predicted``, ``ci_low``, ``ci_high``.

    Raises
    ------
    ValueError
        As :func:`fit_usl`.

    Examples
    --------
    >>> load = [1, 18, 36, 72, 108, 144, 216]
    >>> tput = [64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2]
    >>> band = usl_band(load, tput, [96.52])
    >>> round(float(band["predicted"].iloc[0])), bool(band["ci_low"].iloc[0] < 1884 < band["ci_high"].iloc[0])
    (1884, True)
    """
    n, y, groups = _points(clients, throughput, rounds)
    params = _fit_nls(n, y)
    cov, df = _sandwich(_jacobian(params, n), y - usl_throughput(n, *params), groups)
    at = np.asarray(grid, float)
    g = _jacobian(params, at)
    predicted = usl_throughput(at, *params)
    half = stats.t.ppf(1 - alpha / 2, max(df, 1)) * np.sqrt(np.einsum("ij,jk,ik->i", g, cov, g)) / predicted
    return pd.DataFrame({"clients": at, "predicted": predicted, "ci_low": predicted * np.exp(-half),
                         "ci_high": predicted * np.exp(half)})


def usl_holdout(clients: Sequence[float], throughput: Sequence[float], *, hold_out: Callable | float = max,
                rounds: Sequence | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Fit the law below one client count and predict the throughput measured there.

    Parameters
    ----------
    clients, throughput : sequence of float
        All the points.
    hold_out : callable or float
        The client count held out, or a function of the distinct client counts choosing it
        (default ``max``: does the law fitted on the smaller counts foresee the largest?).
    rounds : sequence, optional
        As for :func:`fit_usl`.
    alpha : float
        1 − the prediction interval's level.

    Returns
    -------
    pandas.DataFrame
        One row: ``clients``, ``observed`` (mean of the held-out points), ``n_observed``,
        ``predicted``, ``pi_low``, ``pi_high`` (for the mean of that many new points:
        the estimate's delta-method variance plus the relative residual variance times
        ``predicted²`` over the count, t on n − 3 df), ``inside``, ``relative_error``.

    Raises
    ------
    ValueError
        If fewer than 4 points at 3 distinct client counts remain below the held-out count.

    Examples
    --------
    >>> load = [1, 18, 36, 72, 108, 144, 216]
    >>> tput = [64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2]
    >>> row = usl_holdout(load, tput).iloc[0]
    >>> int(row["clients"]), round(float(row["observed"]), 1), bool(row["inside"])
    (216, 1702.2, True)
    """
    n, y, groups = _points(clients, throughput, rounds)
    held = float(hold_out(np.unique(n)) if callable(hold_out) else hold_out)
    train = n < held
    test = n == held
    if not test.any():
        raise ConfigError("hold_out", held, f"one of the measured client counts {np.unique(n).tolist()}")
    nt, yt = n[train], y[train]
    params = _fit_nls(*_checked(nt, yt))
    J = _jacobian(params, nt)
    fitted = usl_throughput(nt, *params)
    resid = yt - fitted
    df = len(nt) - 3
    cov, _ = _sandwich(J, resid, None if groups is None else groups[train])
    g = _jacobian(params, np.array([held]))[0]
    predicted = float(usl_throughput(held, *params))
    rel_var = float(((resid / fitted) ** 2).sum() / df)
    k = int(test.sum())
    half = stats.t.ppf(1 - alpha / 2, df) * np.sqrt(g @ cov @ g + rel_var * predicted**2 / k)
    observed = float(y[test].mean())
    return pd.DataFrame([{"clients": held, "observed": observed, "n_observed": k, "predicted": predicted,
                          "pi_low": predicted - half, "pi_high": predicted + half,
                          "inside": bool(predicted - half <= observed <= predicted + half),
                          "relative_error": (predicted - observed) / observed}])


# --- internals ---------------------------------------------------------------------------------------


def _points(clients, throughput, rounds):
    n, y = np.asarray(clients, float), np.asarray(throughput, float)
    if n.shape != y.shape or n.ndim != 1:
        raise ValueError(f"clients and throughput must be 1-d and of one length, got {n.shape} and {y.shape}")
    groups = None
    if rounds is not None:
        groups = np.unique(np.asarray(rounds), return_inverse=True)[1]
        if len(groups) != len(n):
            raise ValueError(f"rounds has {len(groups)} labels for {len(n)} points")
    n, y = _checked(n, y)
    return n, y, groups


def _checked(n, y):
    if (n < 1).any() or not np.isfinite(n).all():
        raise ValueError(f"client counts must be ≥ 1, got {n.min():g}")
    if (y <= 0).any() or not np.isfinite(y).all():
        raise ValueError(f"throughput must be > 0 and finite, got {y.min():g}")
    if len(n) < 4 or len(np.unique(n)) < 3:
        raise ValueError(f"the USL needs ≥ 4 points at ≥ 3 distinct client counts, got {len(n)} at "
                         f"{len(np.unique(n))}")
    return n, y


def _jacobian(params, n):
    lam, sigma, kappa = params
    denom = 1 + sigma * (n - 1) + kappa * n * (n - 1)
    x = lam * n / denom
    return np.column_stack([n / denom, -x * (n - 1) / denom, -x * n * (n - 1) / denom])


def _fit_nls(n, y, start=None) -> np.ndarray:
    # the R package's starting point: the best throughput per client, small σ and κ
    start = [float(np.max(y / n)), 0.01, 1e-4] if start is None else start
    res = optimize.least_squares(lambda p: usl_throughput(n, *p) - y, start, jac=lambda p: _jacobian(p, n),
                                 bounds=([np.finfo(float).tiny, 0.0, 0.0], np.inf), x_scale="jac", method="trf")
    params = res.x.copy()
    # the solver approaches an active bound without reaching it: σ or κ whose term is < 1e-9 at the
    # largest client count is 0 (so that κ = 0 reads as "no coherency cost", peak at infinity)
    top = n.max()
    params[1] = 0.0 if params[1] * (top - 1) < 1e-9 else params[1]
    params[2] = 0.0 if params[2] * top * (top - 1) < 1e-9 else params[2]
    return params


def _fit_normalised(n, y) -> np.ndarray:
    one = n == 1
    if not one.any():
        raise ValueError("normalise=True needs measurements at 1 client (λ is fixed there)")
    lam = float(y[one].mean())
    dev = n / (y / lam) - 1  # N / C(N) − 1 = σ(N − 1) + κN(N − 1): linear in σ and κ
    X = np.column_stack([n - 1, n * (n - 1)])
    coef, *_ = np.linalg.lstsq(X, dev, rcond=None)
    return np.array([lam, coef[0], coef[1]])


def _peak(sigma, kappa):
    sigma, kappa = np.asarray(sigma, float), np.asarray(kappa, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        peak = np.sqrt((1 - sigma) / kappa)
    return np.where(sigma >= 1, np.nan, np.where(kappa <= 0, np.inf, peak))


def _sandwich(J, resid, groups):
    """Sandwich covariance of the NLS estimate and its df: clustered by ``groups``, else HC3."""
    bread = np.linalg.pinv(J.T @ J)
    if groups is not None and len(np.unique(groups)) >= 2:
        scores = np.zeros((groups.max() + 1, J.shape[1]))
        np.add.at(scores, groups, J * resid[:, None])
        g = len(np.unique(groups))
        return bread @ scores.T @ scores @ bread * g / (g - 1), g - 1
    leverage = np.einsum("ij,jk,ik->i", J, bread, J)
    meat = (J * (resid / (1 - np.minimum(leverage, 0.99)))[:, None] ** 2).T @ J
    return bread @ meat @ bread, len(resid) - J.shape[1]


def _delta(n, y, groups, params, *, alpha, normalise):
    J = _jacobian(params, n)
    resid = y - usl_throughput(n, *params)
    if normalise:  # λ fixed: the linear method's own σ, κ are not the NLS ones; interval from the NLS in σ, κ
        J = J[:, 1:]
    cov, df = _sandwich(J, resid, groups)
    if normalise:
        cov = np.pad(cov, ((1, 0), (1, 0)))
    se = np.sqrt(np.diag(cov))
    t = stats.t.ppf(1 - alpha / 2, max(df, 1))
    low, high = params - t * se, params + t * se
    low[1:] = np.maximum(low[1:], 0.0)
    # λ > 0: its interval on the log scale (symmetric ones went below 0 on SPEC SDM91's 7 points)
    low[0], high[0] = params[0] * np.exp(-t * se[0] / params[0]), params[0] * np.exp(t * se[0] / params[0])
    if normalise:
        low[0] = high[0] = np.nan
    # peak on the log scale: d log peak = −dσ / (2(1 − σ)) − dκ / (2κ)
    sigma, kappa = params[1], params[2]
    peak = float(_peak(sigma, kappa))
    if np.isfinite(peak):
        grad = np.array([0.0, -0.5 / (1 - sigma), -0.5 / kappa])
        se_log = float(np.sqrt(grad @ cov @ grad))
        with np.errstate(over="ignore"):
            p_low, p_high = peak * np.exp(-t * se_log), peak * np.exp(t * se_log)
    else:
        p_low = float(_peak(sigma, high[2])) if high[2] > 0 and sigma < 1 else np.nan
        p_high = np.inf if sigma < 1 else np.nan
    method = "delta_cluster_rounds" if groups is not None and len(np.unique(groups)) >= 2 else "delta_hc3"
    return np.r_[low, p_low], np.r_[high, p_high], method


def _bootstrap(n, y, groups, params, *, n_boot, alpha, seed, normalise):
    rng = np.random.default_rng(seed)
    fitted = usl_throughput(n, *params)
    by_round = groups is not None and len(np.unique(groups)) >= 2
    members = [np.flatnonzero(groups == g) for g in np.unique(groups)] if by_round else None
    rel = y / fitted - 1
    reps = np.full((n_boot, 4), np.nan)
    for b in range(n_boot):
        if by_round:
            idx = np.concatenate([members[i] for i in rng.integers(0, len(members), len(members))])
            nb, yb = n[idx], y[idx]
        else:
            nb, yb = n, fitted * (1 + rng.choice(rel, len(n)))
        if len(np.unique(nb)) < 3 or (yb <= 0).any():
            continue
        p = _fit_normalised(nb, yb) if normalise else _fit_nls(nb, yb, start=params)
        reps[b] = np.r_[p, _peak(p[1], p[2])]
    reps = reps[~np.isnan(reps[:, :3]).any(axis=1)]
    # order statistics, not interpolation: the peak's replicates may be inf
    low = np.quantile(reps, alpha / 2, axis=0, method="inverted_cdf")
    high = np.quantile(reps, 1 - alpha / 2, axis=0, method="inverted_cdf")
    return low, high, "bootstrap_rounds" if by_round else "bootstrap_residuals"
