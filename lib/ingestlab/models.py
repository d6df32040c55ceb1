"""Statistics: the fixed-overhead model, sweep slopes, ratios and scale tables, with CIs."""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats

#: Statement counts of the seed's scale table.
SCALE_NS = (1, 10, 100, 1_000, 10_000, 100_000)


def fit_linear(frame: pd.DataFrame, *, x: str, y: str, by: Sequence[str] = (), alpha: float = 0.05,
               robust: bool = True) -> pd.DataFrame:
    """Fit ``y = intercept + slope · x`` per group: OLS, and Theil–Sen beside it.

    Parameters
    ----------
    frame : pandas.DataFrame
        Tidy data, one row per observation.
    x, y : str
        Column names of the regressor and the response.
    by : sequence of str
        Grouping columns (those absent from ``frame`` are ignored).
    alpha : float
        1 − confidence level of the intervals.
    robust : bool
        Also fit Theil–Sen (scipy), whose slope interval is distribution-free.

    Returns
    -------
    pandas.DataFrame
        One row per group and method (``ols``, ``theil_sen``): ``slope``, ``slope_se``,
        ``slope_ci_low``, ``slope_ci_high``, ``intercept`` (+ CI for OLS), ``r2``, ``n_points``.

    Examples
    --------
    >>> df = pd.DataFrame({"x": [1, 2, 3, 4], "y": [2.0, 4.1, 5.9, 8.0]})
    >>> round(float(fit_linear(df, x="x", y="y", robust=False)["slope"].iloc[0]), 2)
    1.98
    """
    by = [c for c in by if c in frame.columns]
    groups = frame.groupby(by, sort=False, dropna=False) if by else [((), frame)]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        labels = dict(zip(by, key))
        g = g[[x, y]].dropna()
        if len(g) < 3 or g[x].nunique() < 2:
            raise ValueError(f"fit needs ≥ 3 points at ≥ 2 distinct {x} values, got {len(g)} for {labels}")
        X = sm.add_constant(g[x].astype(float), has_constant="add")
        res = sm.OLS(g[y].astype(float), X).fit()
        ci = res.conf_int(alpha)
        rows.append({**labels, "method": "ols", "slope": res.params[x], "slope_se": res.bse[x],
                     "slope_ci_low": ci.loc[x, 0], "slope_ci_high": ci.loc[x, 1],
                     "intercept": res.params["const"], "intercept_ci_low": ci.loc["const", 0],
                     "intercept_ci_high": ci.loc["const", 1], "r2": res.rsquared, "n_points": len(g),
                     "df_resid": res.df_resid})
        if robust:
            ts = stats.theilslopes(g[y].astype(float), g[x].astype(float), alpha=1 - alpha)
            rows.append({**labels, "method": "theil_sen", "slope": ts.slope, "slope_se": np.nan,
                         "slope_ci_low": ts.low_slope, "slope_ci_high": ts.high_slope,
                         "intercept": ts.intercept, "intercept_ci_low": np.nan, "intercept_ci_high": np.nan,
                         "r2": np.nan, "n_points": len(g), "df_resid": len(g) - 2})
    return pd.DataFrame(rows)


def fit_overhead(frame: pd.DataFrame, *, by: Sequence[str] = ("engine", "variant"), x: str = "n_statements",
                 y: str = "total_s", alpha: float = 0.05, robust: bool = True) -> pd.DataFrame:
    """Fit ``Total = N_statements × overhead + write_time`` per group.

    ``frame`` holds one row per scenario run: how many statements it took (``x``) and its
    total time in seconds (``y``), all runs writing the same rows, so the intercept is the
    write time and the slope the fixed per-statement overhead.

    Returns
    -------
    pandas.DataFrame
        One row per group and method: ``overhead_ms`` with ``overhead_se_ms``,
        ``overhead_ci_low_ms``, ``overhead_ci_high_ms`` (95 % by default), ``write_time_s``
        with its CI, ``r2``, ``n_points``.

    Examples
    --------
    The seed's shared-data table (1000 × single row, 10 × 100, 1 × 1000):

    >>> t = pd.DataFrame({"n_statements": [1000, 10, 1], "total_s": [64.39, 0.823, 0.326]})
    >>> round(float(fit_overhead(t, robust=False)["overhead_ms"].iloc[0]), 1)
    64.2
    """
    fits = fit_linear(frame, x=x, y=y, by=by, alpha=alpha, robust=robust)
    out = fits.rename(columns={"intercept": "write_time_s", "intercept_ci_low": "write_time_ci_low_s",
                               "intercept_ci_high": "write_time_ci_high_s"})
    for col in ("slope", "slope_se", "slope_ci_low", "slope_ci_high"):
        out[col.replace("slope", "overhead") + "_ms"] = out.pop(col) * 1e3
    return out


def scenario_totals(samples: pd.DataFrame, by: Sequence[str] = ("engine", "variant", "scenario", "repeat")
                    ) -> pd.DataFrame:
    """Total time and statement count per scenario run, from per-statement samples.

    Warm-up samples are excluded. Returns ``n_statements``, ``rows``, ``total_s`` per group.
    """
    by = [c for c in by if c in samples.columns]
    measured = samples[~samples["warmup"]]
    return (measured.groupby(by, sort=False)
            .agg(n_statements=("elapsed_s", "size"), rows=("rows", "sum"), total_s=("elapsed_s", "sum"))
            .reset_index())


def overhead_difference(fits: pd.DataFrame, a: dict, b: dict, alpha: float = 0.05) -> dict:
    """Difference ``a − b`` of two OLS overheads, with a CI (independent fits, Welch df).

    ``a`` and ``b`` select one OLS row each by column values, e.g. ``{"variant": "sync_on"}``.

    Returns
    -------
    dict
        ``diff_ms``, ``diff_ci_low_ms``, ``diff_ci_high_ms``, ``ratio`` (a / b).
    """
    ra, rb = (_one(fits[fits["method"] == "ols"], sel) for sel in (a, b))
    se = np.hypot(ra["overhead_se_ms"], rb["overhead_se_ms"])
    dfw = se**4 / (ra["overhead_se_ms"]**4 / ra["df_resid"] + rb["overhead_se_ms"]**4 / rb["df_resid"])
    t = stats.t.ppf(1 - alpha / 2, dfw)
    diff = ra["overhead_ms"] - rb["overhead_ms"]
    return {"diff_ms": diff, "diff_ci_low_ms": diff - t * se, "diff_ci_high_ms": diff + t * se,
            "ratio": ra["overhead_ms"] / rb["overhead_ms"]}


def scale_table(diff: dict, ns: Iterable[int] = SCALE_NS) -> pd.DataFrame:
    """The seed's scale table: extra cost of one overhead over another at N statements.

    Parameters
    ----------
    diff : dict
        ``diff_ms`` with ``diff_ci_low_ms`` / ``diff_ci_high_ms`` (see :func:`overhead_difference`).
    ns : iterable of int
        Statement counts.

    Examples
    --------
    >>> scale_table({"diff_ms": 35.0, "diff_ci_low_ms": 30.0, "diff_ci_high_ms": 40.0}, [1, 1000])["extra_s"].tolist()
    [0.035, 35.0]
    """
    ns = list(ns)
    return pd.DataFrame({
        "n_statements": ns,
        "extra_s": [n * diff["diff_ms"] / 1e3 for n in ns],
        "extra_ci_low_s": [n * diff.get("diff_ci_low_ms", np.nan) / 1e3 for n in ns],
        "extra_ci_high_s": [n * diff.get("diff_ci_high_ms", np.nan) / 1e3 for n in ns],
    })


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


def compare_with_published(live: pd.DataFrame, published: pd.DataFrame, *, on: Sequence[str] = ("quantity",),
                           ) -> pd.DataFrame:
    """Put live estimates beside published values.

    Parameters
    ----------
    live : pandas.DataFrame
        Columns ``on`` + ``live``, ``live_ci_low``, ``live_ci_high`` (CI may be NaN).
    published : pandas.DataFrame
        Columns ``on`` + ``published`` (+ ``source``).

    Returns
    -------
    pandas.DataFrame
        ``on``, ``published``, ``live``, CI, ``ratio`` (live / published) and ``ci_covers_published``.
    """
    out = published.merge(live, on=list(on), how="outer")
    out["ratio"] = out["live"] / out["published"]
    out["ci_covers_published"] = (out["live_ci_low"] <= out["published"]) & (out["published"] <= out["live_ci_high"])
    return out


def _one(frame: pd.DataFrame, sel: dict) -> pd.Series:
    mask = np.ones(len(frame), bool)
    for k, v in sel.items():
        mask &= (frame[k] == v).to_numpy()
    if mask.sum() != 1:
        raise ValueError(f"expected exactly one fit matching {sel}, found {int(mask.sum())}")
    return frame[mask].iloc[0]


def fit_sweep(frame: pd.DataFrame, *, x: str, y: str, by: Sequence[str] = (), alpha: float = 0.05
              ) -> pd.DataFrame:
    """Slope of ``y`` against ``x`` per group, as far as each group's points allow.

    Published sweeps often print two points per parameter, and a line through two points
    has no error estimate. Rather than refuse such groups (as :func:`fit_linear` does) or
    pretend to a fit, each group gets what its points allow, named in ``method``:

    - ``ols``: three or more points at two or more ``x`` values — OLS with CIs
      (:func:`fit_linear`);
    - ``two_point``: exactly two points at two ``x`` values — the line through them, CIs NaN;
    - ``none``: fewer — slope and intercept NaN.

    Parameters
    ----------
    frame : pandas.DataFrame
        Tidy data, one row per observation.
    x, y : str
        Column names of the regressor and the response.
    by : sequence of str
        Grouping columns (those absent from ``frame`` are ignored).
    alpha : float
        1 − confidence level of the OLS intervals.

    Returns
    -------
    pandas.DataFrame
        One row per group, the columns of :func:`fit_linear` (``slope``, its CI,
        ``intercept``, its CI, ``r2``, ``n_points``, ``df_resid``) and ``method``.

    Examples
    --------
    >>> df = pd.DataFrame({"g": ["a"] * 3 + ["b"] * 2 + ["c"], "x": [1, 2, 3, 1, 64, 5],
    ...                    "y": [1.0, 2.1, 2.9, 60.0, 70.0, 1.0]})
    >>> fits = fit_sweep(df, x="x", y="y", by=["g"]).set_index("g")
    >>> fits["method"].tolist(), round(float(fits.loc["b", "slope"]), 4), bool(np.isnan(fits.loc["b", "slope_ci_low"]))
    (['ols', 'two_point', 'none'], 0.1587, True)
    """
    by = [c for c in by if c in frame.columns]
    groups = frame.groupby(by, sort=False, dropna=False) if by else [((), frame)]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        labels = dict(zip(by, key))
        g = g[[x, y]].dropna()
        distinct = g[x].nunique()
        if len(g) >= 3 and distinct >= 2:
            rows.append(fit_linear(g.assign(**labels), x=x, y=y, by=by, alpha=alpha, robust=False).iloc[0].to_dict())
            continue
        row = {**labels, "method": "none", "slope": np.nan, "intercept": np.nan, "r2": np.nan}
        if distinct == 2:
            (x0, y0), (x1, y1) = g.sort_values(x).astype(float).to_numpy()
            slope = (y1 - y0) / (x1 - x0)
            row.update(method="two_point", slope=slope, intercept=y0 - slope * x0, r2=1.0)
        rows.append({**row, "slope_se": np.nan, "slope_ci_low": np.nan, "slope_ci_high": np.nan,
                     "intercept_ci_low": np.nan, "intercept_ci_high": np.nan, "n_points": len(g),
                     "df_resid": max(len(g) - 2, 0)})
    columns = [*by, "method", "slope", "slope_se", "slope_ci_low", "slope_ci_high", "intercept",
               "intercept_ci_low", "intercept_ci_high", "r2", "n_points", "df_resid"]
    return pd.DataFrame(rows)[columns]


def fit_load_overhead(frame: pd.DataFrame, *, by: Sequence[str] = ("group_commit_mode", "concurrency"),
                      x: str = "n_loads", y: str = "total_s", alpha: float = 0.05) -> pd.DataFrame:
    """Fit ``Total = N_loads × overhead + write_time`` per group, as far as its points allow.

    The lab's model with loads (or commits) in place of statements: runs that write the
    same rows in ``x`` loads take ``y`` seconds; the slope is the fixed cost of one load
    and the intercept the time the rows take when loads are free. Groups are fitted as
    :func:`fit_sweep` allows (``ols`` with CIs, ``two_point`` without, ``none``).

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per run: loads (``x``) and total seconds (``y``).
    by : sequence of str
        Grouping columns (those absent from ``frame`` are ignored).
    x, y : str
        Column names of the load count and the total time in seconds.
    alpha : float
        1 − confidence level of the OLS intervals.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``method``, ``overhead_ms`` with ``overhead_se_ms``,
        ``overhead_ci_low_ms``, ``overhead_ci_high_ms``, ``write_time_s`` with its CI,
        ``r2``, ``n_points``, ``df_resid`` — the columns of :func:`fit_overhead`.

    Examples
    --------
    >>> runs = pd.DataFrame({"n_loads": [100_000, 10_000, 1_000, 1_000, 100],
    ...                      "total_s": [110.0, 20.0, 11.0, 50.5, 5.5],
    ...                      "group_commit_mode": ["async"] * 3 + ["off"] * 2})
    >>> fits = fit_load_overhead(runs, by=["group_commit_mode"]).set_index("group_commit_mode")
    >>> fits["method"].tolist(), fits["overhead_ms"].round(2).tolist()
    (['ols', 'two_point'], [1.0, 50.0])
    """
    fits = fit_sweep(frame, x=x, y=y, by=by, alpha=alpha)
    out = fits.rename(columns={"intercept": "write_time_s", "intercept_ci_low": "write_time_ci_low_s",
                               "intercept_ci_high": "write_time_ci_high_s"})
    for col in ("slope", "slope_se", "slope_ci_low", "slope_ci_high"):
        out[col.replace("slope", "overhead") + "_ms"] = out.pop(col) * 1e3
    return out


def ratio_table(frame: pd.DataFrame, *, value: str, between: str, a, b, by: Sequence[str] = ()
                ) -> pd.DataFrame:
    """``value`` at level ``a`` of ``between`` divided by ``value`` at level ``b``, per group.

    Parameters
    ----------
    frame : pandas.DataFrame
        Tidy data with one row per group and level of ``between``.
    value : str
        The measured column.
    between : str
        The column whose two levels are compared.
    a, b : scalar
        The numerator's and the denominator's level.
    by : sequence of str
        Grouping columns; one ratio per group.

    Returns
    -------
    pandas.DataFrame
        ``by``, then columns named ``str(a)`` and ``str(b)`` holding ``value`` at each level,
        and ``ratio`` (a / b). Groups lacking either level are left out.

    Raises
    ------
    ValueError
        If a group has more than one row at a level (the ratio would be ambiguous).

    Examples
    --------
    >>> t = pd.DataFrame({"engine": ["x", "x", "y", "y"], "scenario": ["upsert", "insert"] * 2,
    ...                   "batch_ms": [900.0, 60.0, 500.0, 250.0]})
    >>> ratio_table(t, value="batch_ms", between="scenario", a="upsert", b="insert", by=["engine"])
      engine  upsert  insert  ratio
    0      x   900.0    60.0   15.0
    1      y   500.0   250.0    2.0
    """
    by = list(by)
    part = frame[frame[between].isin([a, b])]
    dupes = part.duplicated([*by, between])
    if dupes.any():
        raise ValueError(f"ratio_table: several rows per {[*by, between]}, e.g. "
                         f"{part.loc[dupes, [*by, between]].iloc[0].to_dict()}; "
                         "add the column that tells them apart to by")
    keys = by or None
    wide = part.pivot_table(index=keys, columns=between, values=value, sort=False) if keys else \
        part.set_index(between)[value].to_frame().T
    wide = wide.dropna(subset=[a, b])
    out = pd.DataFrame({str(a): wide[a], str(b): wide[b], "ratio": wide[a] / wide[b]})
    return out.reset_index(drop=not by)


def median_ci(values: Sequence[float], *, alpha: float = 0.05) -> dict:
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
    >>> r = median_ci([5.0, 1.0, 3.0, 2.0, 4.0])
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
