"""Does a straight line ``y = intercept + slope · x`` hold? Lack of fit, held-out levels and prediction intervals.

The lab explains a scenario run's total time with ``Total = N × overhead + write_time``. A fit
is a claim; this module says whether the data back it, and predicts from it with honest
intervals. Data: one row per run, ``x`` (the statement count N) and ``y`` (total seconds).

Variance
--------
A run's total is the write time (its own, constant noise) plus the sum of ``x`` statement
latencies, whose variance grows in proportion to ``x``. ``variance="proportional"`` therefore
models ``Var(y | x) = a + b·x`` (``a ≥ 0`` the write time's noise, ``b > 0`` the per-statement
part), fitted to the repeats' sample variances by weighted least squares, each level weighted by
its degrees of freedom over its fitted variance squared (two steps of the gamma GLM's IRLS), so
the small-``x`` levels set ``a`` and the large ones ``b``. Where ``a`` comes out negative it is dropped (``Var = b·x``). Without
repeats the variance is ``b·x`` scaled by the WLS residuals (weights ``1/x``), as
:func:`ingestlab.models.fit_overhead` does. ``variance="constant"`` pools the repeats (or the
OLS residuals) into one variance. The simple ``Var ∝ x`` weights alone mis-weight the one-
statement runs, whose variance is mostly the write time's: their pure error swamps the
pooled estimate and the lack-of-fit test loses most of its power (at σ = 0.5 below, 0.49
against 0.93).

Lack of fit (``adequacy_test``, ``lack_of_fit_p``)
    ``"pure_error_f"`` when an ``x`` level is repeated and there are ≥ 3 levels: the WLS
    straight line (weights ``1/Var(y | x)``) against the WLS cell-means model, an F test of
    the line's misfit over the repeats' own scatter. ``"reset"`` when no level is repeated
    and there are ≥ 4 points: Ramsey's RESET with the square of the fitted value, which in a
    one-regressor model is the test of an ``x²`` term (WLS under the working variance; done by
    nested models, as statsmodels' ``linear_reset`` drops WLS weights). ``"none"`` otherwise
    (two levels: a line passes through any two means), ``lack_of_fit_p`` NaN.
Held-out levels (``loo_error``, ``loo_in_pi``)
    Each ``x`` level whose removal leaves ≥ 2 levels is left out in turn, the line refitted on
    the rest (variance model included) and the held-out level's median ``y`` predicted.
    ``loo_error`` is the median over levels of ``|predicted − observed| / |observed|``;
    ``loo_in_pi`` the share of held-out medians inside their 95 % prediction interval **for
    the median of that level's k runs** (the new-run variance times π/2 / k for k ≥ 3, the
    sample median's large-sample variance, 1/k below 3).
``model_holds``
    True when (1) the lack-of-fit test is not significant at ``alpha`` (5 %) or cannot be
    run, and (2) no more held-out levels fall outside their intervals than chance allows: a
    count ``k`` of ``m`` misses is too many when ``P(Binomial(m, alpha) ≥ k) < alpha``, i.e.
    one miss is tolerated for 2–7 held-out levels (with four held-out levels all four are
    inside only 81 % of the time when the model is true). When neither check could be made
    (two levels, or three without repeats) ``model_holds`` is None — not tested, neither held
    nor rejected (a figure must not call such a line rejected). ``model_note`` is empty when
    it holds, else one computed sentence saying why not, or why it was not tested.

Calibration (``tests/test_adequacy.py``, 300 seeded trials per cell, two seeds where two
numbers): totals = Σ of N log-normal latencies (median 0.3 ms, σ as given) + 20 ms write time
with 1 ms noise, N ∈ {1, 10, 100, 1000}, 5 runs each; "grows" multiplies the latency by
``1 + 0.5·log10(N)/3`` (half again at N = 1000)::

    σ    per-statement cost   model_holds     95 % PI covers a fresh run at N = 1 / 300 / 1000
    0.5  constant             0.95, 0.96      0.95 / 0.96 / 0.99
    1.0  constant             0.91, 0.95      0.96 / 0.96 / 0.94
    1.5  constant             0.91, 0.96      0.95 / 0.92 / 0.92
    0.5  grows by half        0.13, 0.14
    1.0  grows by half        0.56, 0.44

At σ = 0.5 the lack-of-fit test alone rejects 83 % and the held-out check alone 75–78 %. At
σ = 1.0 no rule can reject 80 % of the "grows" data sets while passing 90 % of the true ones:
with the level means' variances known, the best one-degree-of-freedom test of the curvature
has power 0.62 at 5 % (0.34 at 1 %); the N = 100 means deviate from the line by only ≈ 2.3
standard errors. More repeats, not a different test, buy power there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.regression.linear_model import OLS, WLS

from ingestlab.errors import ConfigError

#: Working variance models of :func:`fit_line`.
VARIANCE_MODELS = ("proportional", "constant")
#: The keys :func:`assess` returns, in order (the fits table's per-fit adequacy columns).
ADEQUACY_COLUMNS = ("adequacy_test", "lack_of_fit_p", "loo_error", "loo_in_pi", "model_holds", "model_note")


@dataclass(frozen=True)
class LinearModelFit:
    """What prediction from ``y = intercept + slope · x`` needs, as :func:`fit_line` fitted it.

    Attributes
    ----------
    x, y : str
        The regressor's and the response's column names.
    intercept, slope : float
        OLS estimates (the numbers :func:`ingestlab.models.fit_overhead` reports).
    cov_floor, cov_slope : numpy.ndarray
        2 × 2 matrices: the covariance of ``(intercept, slope)`` is
        ``var_floor · cov_floor + var_slope · cov_slope`` (see :attr:`cov`).
    var_floor, var_slope : float
        The variance model ``Var(y | x) = var_floor + var_slope · x``.
    df : float
        Degrees of freedom of the variance estimate: the repeats' (``n − levels``) or the
        residuals' (``n − 2``). Intervals use a Satterthwaite df per ``x`` (at most this one)
        when the variance comes from repeats.
    variance_terms : tuple or None
        ``(s2, d, basis)``: the repeated levels' sample variances, their df, and the
        ``levels × 2`` matrix with ``(var_floor, var_slope) = basis.T @ s2`` (for the
        Satterthwaite df); None when the variance comes from the residuals.
    variance : str
        The working variance model (``"proportional"`` or ``"constant"``).
    variance_source : str
        ``"pure_error"`` (from repeated ``x`` levels) or ``"residuals"``.
    x_min, x_max : float
        The range of ``x`` the line was fitted on.
    n_points, n_levels : int
        Runs and distinct ``x`` values.
    r2 : float
        OLS R².
    """

    x: str
    y: str
    intercept: float
    slope: float
    cov_floor: np.ndarray
    cov_slope: np.ndarray
    var_floor: float
    var_slope: float
    df: float
    variance: str
    variance_source: str
    x_min: float
    x_max: float
    n_points: int
    n_levels: int
    r2: float
    variance_terms: tuple | None = None

    @property
    def cov(self) -> np.ndarray:
        """2 × 2 covariance of the OLS ``(intercept, slope)`` under the fitted variance model."""
        return self.var_floor * self.cov_floor + self.var_slope * self.cov_slope

    def variance_at(self, x) -> np.ndarray:
        """``Var(y | x)`` of one new run under the fitted variance model."""
        return self.var_floor + self.var_slope * np.asarray(x, float)


def fit_line(frame: pd.DataFrame, *, x: str, y: str, variance: str = "proportional",
             nonnegative_intercept: bool = False) -> LinearModelFit:
    """Fit ``y = intercept + slope · x`` by OLS and the variance of ``y`` around it, for :func:`predict`.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per run (NaN rows dropped).
    x, y : str
        Column names of the regressor (the statement count) and the response (seconds).
    variance : {"proportional", "constant"}
        ``"proportional"``: ``Var(y | x) = a + b·x`` (see the module docstring); ``x`` must be > 0.
    nonnegative_intercept : bool
        The intercept is a cost that cannot be negative: where OLS puts it below 0, the line is
        refitted through the origin (``intercept`` 0, its variance 0).

    Returns
    -------
    LinearModelFit

    Raises
    ------
    ConfigError
        If ``variance`` is not a known model, or ``frame`` lacks ``x`` or ``y``.
    ValueError
        If there are fewer than 3 runs at 2 distinct ``x`` values, or ``x`` ≤ 0 under
        ``variance="proportional"``.

    Examples
    --------
    >>> runs = pd.DataFrame({"n": [1, 1, 10, 10, 100, 100], "s": [0.021, 0.020, 0.026, 0.024, 0.069, 0.071]})
    >>> fit = fit_line(runs, x="n", y="s")
    >>> round(fit.slope * 1e3, 3), fit.variance_source
    (0.5, 'pure_error')
    """
    xs, ys = _columns(frame, x, y, variance)
    return _fit(xs, ys, variance, x=x, y=y, nonnegative_intercept=nonnegative_intercept)


def predict(fit: LinearModelFit, *, alpha: float = 0.05, **regressors) -> dict:
    """The line's prediction for a new run, with a ``1 − alpha`` prediction interval.

    The interval is for **one new run** at that ``x``: ``estimate ± t · sqrt(Var(estimate) +
    Var(y | x))``, t on the variance estimate's degrees of freedom. Under the proportional
    model it widens with ``x``. Outside the fitted range the line is extrapolated (the
    ``extrapolated`` key says so); the interval then rests on the model holding there.

    Parameters
    ----------
    fit : LinearModelFit
        From :func:`fit_line`.
    alpha : float
        1 − the interval's level.
    **regressors
        Exactly one: the fit's regressor name with a value or an array of values, e.g.
        ``n_statements=300``.

    Returns
    -------
    dict
        ``estimate``, ``pi_low``, ``pi_high`` (floats, or arrays for an array input) and
        ``extrapolated`` (bool or bool array).

    Raises
    ------
    ConfigError
        If a regressor other than the fit's is named, or none is.

    Examples
    --------
    >>> runs = pd.DataFrame({"n": [1, 1, 10, 10, 100, 100], "s": [0.021, 0.020, 0.026, 0.024, 0.069, 0.071]})
    >>> p = predict(fit_line(runs, x="n", y="s"), n=50)
    >>> round(p["estimate"], 3), p["pi_low"] < p["estimate"] < p["pi_high"], p["extrapolated"]
    (0.045, True, False)
    """
    unknown = [k for k in regressors if k != fit.x]
    if unknown or fit.x not in regressors:
        name = unknown[0] if unknown else "regressors"
        raise ConfigError(name, regressors.get(name, regressors), f"exactly one regressor, {fit.x!r} (the fit's x)")
    x0 = np.asarray(regressors[fit.x], float)
    est, low, high = _interval(fit, x0, alpha=alpha, k=1)
    extrapolated = (x0 < fit.x_min) | (x0 > fit.x_max)
    if x0.ndim == 0:
        return {"estimate": float(est), "pi_low": float(low), "pi_high": float(high),
                "extrapolated": bool(extrapolated)}
    return {"estimate": est, "pi_low": low, "pi_high": high, "extrapolated": extrapolated}


def predict_held_out(seen: pd.DataFrame, unseen: pd.DataFrame, *, x: str, y: str, variance: str = "proportional",
                     alpha: float = 0.05, nonnegative_intercept: bool = False) -> dict:
    """The line fitted to ``seen`` asked for the one ``x`` of ``unseen``, and how ``unseen``'s runs fell.

    ``variance`` and ``nonnegative_intercept`` are :func:`fit_line`'s.

    Returns
    -------
    dict
        ``x`` (the held-out level), ``predicted``, ``pi_low``, ``pi_high`` (for one new run),
        ``observed_median``, ``runs``, ``runs_inside`` and ``inside`` (the median in the interval).

    Examples
    --------
    >>> seen = pd.DataFrame({"n": [1, 1, 100, 100, 1000, 1000], "s": [0.021, 0.020, 0.069, 0.071, 0.52, 0.51]})
    >>> out = predict_held_out(seen, pd.DataFrame({"n": [10, 10], "s": [0.025, 0.024]}), x="n", y="s")
    >>> out["runs"], out["inside"]
    (2, True)
    """
    level = unseen[x].iloc[0]
    p = predict(fit_line(seen, x=x, y=y, variance=variance, nonnegative_intercept=nonnegative_intercept), alpha=alpha,
                **{x: level})
    median = float(unseen[y].median())
    return {"x": level, "predicted": p["estimate"], "pi_low": p["pi_low"], "pi_high": p["pi_high"],
            "observed_median": median, "runs": len(unseen),
            "runs_inside": int(unseen[y].between(p["pi_low"], p["pi_high"]).sum()),
            "inside": bool(p["pi_low"] <= median <= p["pi_high"])}


#: The columns :func:`held_out_table` gives after the group's and ``x``'s.
HELD_OUT_COLUMNS = ("predicted", "pi_low", "pi_high", "observed_median", "runs", "runs_inside", "inside", "note")


def held_out_table(frame: pd.DataFrame, *, x: str, y: str, by=(), held_out=None, x_of=None,
                   variance: str = "proportional", alpha: float = 0.05, nonnegative_intercept: bool = False
                   ) -> pd.DataFrame:
    """:func:`predict_held_out` per group of ``by``: one ``x`` level of each group predicted from its other runs.

    A notebook's "what does the model predict that it did not see?": the line is fitted to
    the group's runs at every other level and asked for the held-out level; each held-out
    run is compared with the ``1 − alpha`` prediction interval for one new run. A group
    without held-out runs, or whose other runs fit no line (fewer than 3 runs at 2 levels),
    gets a row all the same: NaN numbers and a ``note`` saying why.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per run.
    x, y : str
        Column names of the regressor and the response.
    by : sequence of str
        Grouping columns (those absent from ``frame`` are ignored).
    held_out : array-like of bool, optional
        The runs held out, row by row of ``frame``, one ``x`` level per group; by default each
        group's largest ``x``.
    x_of : callable, optional
        A transform of ``x`` in which the line is straight (``numpy.log2``); ``x`` is reported untransformed.
    variance, alpha, nonnegative_intercept
        As :func:`predict_held_out`.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``by``, ``x`` (the held-out level), then :data:`HELD_OUT_COLUMNS`:
        ``predicted``, ``pi_low``, ``pi_high``, ``observed_median``, ``runs``, ``runs_inside``
        (integers, missing without a prediction), ``inside`` (the median in the interval; missing
        without a prediction) and ``note`` (``""`` where there is a prediction).

    Examples
    --------
    >>> runs = pd.DataFrame({"g": ["a"] * 6 + ["b"] * 2, "n": [1, 1, 10, 10, 100, 100, 1, 100],
    ...                      "s": [0.021, 0.020, 0.025, 0.024, 0.069, 0.071, 0.02, 0.07]})
    >>> out = held_out_table(runs, x="n", y="s", by=["g"])
    >>> out[["g", "n", "runs", "runs_inside", "inside"]]
       g    n  runs  runs_inside  inside
    0  a  100     2            2    True
    1  b  100     1         <NA>    <NA>
    >>> out["note"].iloc[1]
    'too few runs besides the held-out level: 1 at 1 level, a line needs 3 at 2 levels'
    """
    by = [c for c in by if c in frame.columns]
    frame = frame.reset_index(drop=True)
    if held_out is None:
        held_out = frame[x] == (frame.groupby(by, sort=False, dropna=False)[x].transform("max") if by
                                else frame[x].max())
    held_out = np.asarray(held_out, bool)
    fitted = frame.assign(**{x: x_of(frame[x]) if x_of is not None else frame[x]})
    groups = fitted.groupby(by, sort=False, dropna=False) if by else [((), fitted)]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        seen, unseen = g[~held_out[g.index]], g[held_out[g.index]]
        row = {**dict(zip(by, key)), x: frame.loc[unseen.index[0], x] if len(unseen) else np.nan,
               "predicted": np.nan, "pi_low": np.nan, "pi_high": np.nan,
               "observed_median": float(unseen[y].median()) if len(unseen) else np.nan, "runs": len(unseen),
               "runs_inside": pd.NA, "inside": pd.NA, "note": ""}
        if unseen.empty:
            row["note"] = "no held-out runs in this group"
        elif len(seen) < 3 or seen[x].nunique() < 2:
            levels = seen[x].nunique()
            row["note"] = (f"too few runs besides the held-out level: {len(seen)} at {levels} "
                           f"level{'s' * (levels != 1)}, a line needs 3 at 2 levels")
        else:
            p = predict_held_out(seen, unseen, x=x, y=y, variance=variance, alpha=alpha,
                                 nonnegative_intercept=nonnegative_intercept)
            row.update({k: p[k] for k in ("predicted", "pi_low", "pi_high", "runs_inside", "inside")})
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*by, x, *HELD_OUT_COLUMNS])
    return out.astype({"runs": "Int64", "runs_inside": "Int64", "inside": "boolean"})


def assess(frame: pd.DataFrame, *, x: str, y: str, variance: str = "proportional", alpha: float = 0.05) -> dict:
    """Whether the straight line holds for one group's runs: lack of fit, held-out levels, verdict.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per run of one group (engine, variant): ``x`` (statement count), ``y`` (seconds).
    x, y : str
        Column names.
    variance : {"proportional", "constant"}
        Variance model (see the module docstring).
    alpha : float
        Level of the lack-of-fit test and 1 − the held-out intervals' level.

    Returns
    -------
    dict
        ``adequacy_test`` (``"pure_error_f"``, ``"reset"`` or ``"none"``), ``lack_of_fit_p``,
        ``loo_error``, ``loo_in_pi``, ``model_holds`` (bool, or None when untested), ``model_note`` (``""`` when it
        holds), by the rules of the module docstring.

    Examples
    --------
    >>> runs = pd.DataFrame({"n": [1, 10, 100, 1000] * 3,
    ...                      "s": [0.0205, 0.025, 0.07, 0.52, 0.0195, 0.0252, 0.071, 0.51, 0.0201, 0.0248, 0.069, 0.53]})
    >>> a = assess(runs, x="n", y="s")
    >>> a["adequacy_test"], a["model_holds"], a["model_note"]
    ('pure_error_f', True, '')
    """
    xs, ys = _columns(frame, x, y, variance)
    if len(xs) < 3 or len(np.unique(xs)) < 2:
        return {"adequacy_test": "none", "lack_of_fit_p": np.nan, "loo_error": np.nan, "loo_in_pi": np.nan,
                "model_holds": None,
                "model_note": f"untested: {len(xs)} runs at {len(np.unique(xs))} distinct {x} values fit no line"}
    fit = _fit(xs, ys, variance, x=x, y=y)
    test, p = _lack_of_fit(xs, ys, fit)
    held = _held_out(xs, ys, variance, alpha=alpha)
    inside = held["inside"][~np.isnan(held["inside"])]
    misses, m = int((inside == 0).sum()), len(inside)
    lof_fails = bool(p < alpha)
    loo_fails = m > 0 and misses > 0 and stats.binom.sf(misses - 1, m, alpha) < alpha
    untested = test == "none" and m == 0
    notes = []
    if lof_fails:
        notes.append(f"lack of fit p = {p:.2g} ({test}): the {y} per unit of {x} {_trend(xs, ys)} with {x}")
    if loo_fails:
        worst = int(np.nanargmax(held["z"]))
        notes.append(f"{misses} of {m} held-out {x} levels fall outside their {1 - alpha:.0%} prediction intervals "
                     f"(worst {x} = {held['level'][worst]:g}: observed {held['observed'][worst]:.3g}, "
                     f"predicted {held['predicted'][worst]:.3g})")
    if untested:
        notes.append(f"untested: {len(np.unique(xs))} {x} levels without enough runs for a lack-of-fit test "
                     "or a held-out level")
    errors = held["error"][~np.isnan(held["error"])]
    return {"adequacy_test": test, "lack_of_fit_p": p,
            "loo_error": float(np.median(errors)) if len(errors) else np.nan,
            "loo_in_pi": float(inside.mean()) if m else np.nan,
            "model_holds": None if untested and not (lof_fails or loo_fails) else not (lof_fails or loo_fails),
            "model_note": "; ".join(notes)}


def assess_groups(frame: pd.DataFrame, *, x: str, y: str, by=(), variance: str = "proportional",
                  alpha: float = 0.05) -> pd.DataFrame:
    """:func:`assess` per group of ``by``: one row per group, ``by`` then :data:`ADEQUACY_COLUMNS`.

    Examples
    --------
    >>> runs = pd.DataFrame({"engine": ["a"] * 4 + ["b"] * 2, "n": [1, 10, 1, 10, 1, 10],
    ...                      "s": [0.02, 0.03, 0.021, 0.031, 0.5, 0.6]})
    >>> assess_groups(runs, x="n", y="s", by=["engine"])[["engine", "adequacy_test", "model_holds"]]
      engine adequacy_test model_holds
    0      a          none        None
    1      b          none        None
    """
    by = [c for c in by if c in frame.columns]
    groups = frame.groupby(by, sort=False, dropna=False) if by else [((), frame)]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key)), **assess(g, x=x, y=y, variance=variance, alpha=alpha)})
    return pd.DataFrame(rows, columns=[*by, *ADEQUACY_COLUMNS])


# --- internals: arrays, not frames (the calibration tests call these thousands of times) ------------


def _columns(frame: pd.DataFrame, x: str, y: str, variance: str) -> tuple[np.ndarray, np.ndarray]:
    if variance not in VARIANCE_MODELS:
        raise ConfigError("variance", variance, f"one of {list(VARIANCE_MODELS)}")
    for name, col in (("x", x), ("y", y)):
        if col not in frame.columns:
            raise ConfigError(name, col, f"a column of the frame ({list(frame.columns)})")
    xs, ys = frame[x].to_numpy(float), frame[y].to_numpy(float)
    keep = ~(np.isnan(xs) | np.isnan(ys))
    xs, ys = xs[keep], ys[keep]
    if variance == "proportional" and (xs <= 0).any():
        raise ValueError(f"variance='proportional' needs {x} > 0, got {xs.min():g}; use variance='constant'")
    return xs, ys


def _levels(xs: np.ndarray, ys: np.ndarray):
    """Distinct ``x`` levels, each run's level index, runs per level, and each level's sample variance."""
    levels, inverse, counts = np.unique(xs, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, ys) / counts
    ss = np.bincount(inverse, (ys - means[inverse]) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = ss / (counts - 1)
    return levels, inverse, counts, s2


def _variance_model(xs, ys, variance, ols) -> tuple[float, float, float, str, tuple | None]:
    """``(a, b, df, source, terms)`` of ``Var(y | x) = a + b·x`` (see the module docstring and LinearModelFit)."""
    levels, _, counts, s2 = _levels(xs, ys)
    rep = counts > 1
    if rep.any():
        d, s2r, lv = counts[rep] - 1.0, s2[rep], levels[rep]
        df = float(d.sum())
        if variance == "constant":
            basis = np.column_stack([d / df, np.zeros_like(d)])
        else:
            basis = None
            if rep.sum() >= 2 and (s2r > 0).all():
                basis = _affine_variance_basis(lv, s2r, d)
            if basis is None or not ((basis.T @ s2r)[0] >= 0 and (basis.T @ s2r)[1] > 0):
                basis = np.column_stack([np.zeros_like(d), d / lv / df])  # Var = b·x alone
        a, b = basis.T @ s2r
        return float(a), float(b), df, "pure_error", (s2r, d, basis)
    if variance == "constant":
        return float(ols.scale), 0.0, float(ols.df_resid), "residuals", None
    wls = WLS(ys, ols.model.exog, weights=1 / xs).fit()
    return 0.0, float(wls.scale), float(wls.df_resid), "residuals", None


def _affine_variance_basis(levels, s2, d) -> np.ndarray | None:
    """Fit ``s2 ≈ a + b·x`` to the repeated levels' sample variances; the linear map to ``(a, b)``.

    Two reweighted least-squares steps of the gamma GLM with an identity link (each level's
    variance weighted by ``d / μ²``, its df over its expected value squared), starting from
    ``μ ∝ x``: within a few per cent of the converged GLM, whose own iterations cost 20× more and
    buy nothing against sample variances on 2–4 df. Returns the ``levels × 2`` matrix ``B`` with
    ``(a, b) = B.T @ s2`` under the last step's weights, or None if a fitted variance is ≤ 0.
    """
    Z = np.column_stack([np.ones_like(levels), levels])
    mu = levels * (d * s2 / levels).sum() / d.sum()
    for _ in range(2):
        weights = d / mu**2
        res = WLS(s2, Z, weights=weights).fit()
        mu = Z @ res.params
        if not (mu > 0).all():
            return None
    return (res.normalized_cov_params @ (Z * weights[:, None]).T).T


def _fit(xs, ys, variance, *, x="x", y="y", nonnegative_intercept=False) -> LinearModelFit:
    if len(xs) < 3 or len(np.unique(xs)) < 2:
        raise ValueError(f"a line needs ≥ 3 runs at ≥ 2 distinct {x} values, got {len(xs)} at {len(np.unique(xs))}")
    X = np.column_stack([np.ones_like(xs), xs])
    ols = OLS(ys, X).fit()
    bread, params = ols.normalized_cov_params, ols.params
    if nonnegative_intercept and params[0] < 0:
        # through the origin: the intercept is 0 exactly, so its rows of the covariance are 0
        ols = OLS(ys, X[:, 1:]).fit()
        bread, params = np.diag([0.0, ols.normalized_cov_params[0, 0]]), np.r_[0.0, ols.params]
    a, b, df, source, terms = _variance_model(xs, ys, variance, ols)
    # the OLS estimate's covariance under Var = a + b·x is a·cov_floor + b·cov_slope (a sandwich)
    cov_floor, cov_slope = bread, bread @ (X.T * xs) @ X @ bread
    with np.errstate(invalid="ignore", divide="ignore"):  # centred R², also of the line through the origin
        r2 = float(1 - ((ys - X @ params) ** 2).sum() / ((ys - ys.mean()) ** 2).sum())
    return LinearModelFit(x=x, y=y, intercept=float(params[0]), slope=float(params[1]),
                          cov_floor=cov_floor, cov_slope=cov_slope, var_floor=a, var_slope=b, df=df,
                          variance=variance, variance_source=source, x_min=float(xs.min()),
                          x_max=float(xs.max()), n_points=len(xs), n_levels=len(np.unique(xs)), r2=r2,
                          variance_terms=terms)


def _interval(fit: LinearModelFit, x0: np.ndarray, *, alpha: float, k: int | np.ndarray = 1):
    """Estimate and ``1 − alpha`` interval for the median of ``k`` new runs at ``x0`` (one run: k = 1).

    The interval's variance ``Var(estimate) + factor · Var(y | x0)`` is linear in ``(a, b)``,
    hence in the repeats' sample variances: its t quantile takes their Satterthwaite df.
    """
    x0 = np.asarray(x0, float)
    est = fit.intercept + fit.slope * x0
    k = np.asarray(k, float)
    factor = np.where(k >= 3, math.pi / 2, 1.0) / k

    def quad(c):
        return c[0, 0] + 2 * x0 * c[0, 1] + x0**2 * c[1, 1]

    g_floor, g_slope = quad(fit.cov_floor) + factor, quad(fit.cov_slope) + factor * x0
    total = fit.var_floor * g_floor + fit.var_slope * g_slope
    if fit.variance_terms is None:
        df = np.full_like(total, fit.df)
    else:
        s2, d, basis = fit.variance_terms
        parts = np.multiply.outer(g_floor, basis[:, 0] * s2) + np.multiply.outer(g_slope, basis[:, 1] * s2)
        with np.errstate(invalid="ignore", divide="ignore"):
            df = np.minimum(parts.sum(-1) ** 2 / (parts**2 / d).sum(-1), fit.df)
    if fit.df <= 0:
        nan = np.full_like(est, np.nan)
        return est, nan, nan
    half = stats.t.ppf(1 - alpha / 2, np.maximum(df, 1.0)) * np.sqrt(total)
    return est, est - half, est + half


def _lack_of_fit(xs, ys, fit: LinearModelFit) -> tuple[str, float]:
    """``(adequacy_test, p)``: pure-error F where levels repeat, RESET where they do not, else none."""
    levels, inverse, counts, _ = _levels(xs, ys)
    m, n = len(levels), len(xs)
    X = np.column_stack([np.ones_like(xs), xs])
    if m >= 3 and n > m:
        w = 1 / np.maximum(fit.variance_at(xs), np.finfo(float).tiny)
        full = WLS(ys, np.eye(m)[inverse], weights=w).fit()
        line = WLS(ys, X, weights=w).fit()
        return "pure_error_f", _nested_p(full, line)
    if m >= 4 and n == m:
        w = 1 / xs if fit.variance == "proportional" else np.ones_like(xs)
        scaled = xs / xs.max()  # the square of the fitted value spans the same models as x² does
        full = WLS(ys, np.column_stack([X, scaled**2]), weights=w).fit()
        line = WLS(ys, X, weights=w).fit()
        return "reset", _nested_p(full, line)
    return "none", np.nan


def _nested_p(full, restricted) -> float:
    """p value of the F test of ``restricted`` inside ``full``; exact fits give 1 (no misfit) or 0."""
    scale = max(restricted.ssr, full.ssr, np.finfo(float).tiny)
    if full.ssr <= 1e-24 * scale or restricted.ssr <= 1e-24 * scale:
        return 1.0 if restricted.ssr - full.ssr <= 1e-12 * scale else 0.0
    return float(full.compare_f_test(restricted)[1])


def _held_out(xs, ys, variance, *, alpha):
    """Per held-out ``x`` level: level, observed median, predicted, relative error, inside the interval, |z|."""
    levels, inverse, counts, _ = _levels(xs, ys)
    out = {key: np.full(len(levels), np.nan) for key in ("level", "observed", "predicted", "error", "inside", "z")}
    if len(levels) < 3:
        return out
    for i, level in enumerate(levels):
        keep = inverse != i
        if keep.sum() < 3:
            continue
        fit = _fit(xs[keep], ys[keep], variance)
        observed = float(np.median(ys[~keep]))
        est, low, high = _interval(fit, level, alpha=alpha, k=counts[i])
        out["level"][i], out["observed"][i], out["predicted"][i] = level, observed, est
        out["error"][i] = abs(est - observed) / abs(observed) if observed else np.nan
        if np.isfinite(low):
            out["inside"][i] = float(low <= observed <= high)
            out["z"][i] = abs(observed - est) / (high - est) if high > est else np.inf
    return out


def _trend(xs, ys) -> str:
    """Whether ``y`` per unit of ``x`` rises or falls: the slope over the upper levels against the lower."""
    levels, inverse, counts, _ = _levels(xs, ys)
    means = np.bincount(inverse, ys) / counts
    slopes = np.diff(means) / np.diff(levels)
    if len(slopes) < 2:
        return "changes"
    return "grows" if slopes[-1] > slopes[0] else "shrinks"
