"""Compare two runs quantity by quantity: ratio, interval, test and a verdict a reviewer can check."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import matplotlib.figure
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from ingestlab import catalog, labels
from ingestlab.checkpoints import same_parameters
from ingestlab.errors import ConfigError

#: Default relative change below which a difference does not count (5 %).
THRESHOLD = 0.05
#: Default significance level of the Mann–Whitney U test (and of the z test on fits' intervals).
#: On 3 000 log-normal (σ = 1) samples with 1 % of 10× outliers, 0.01 keeps false
#: ``slower``/``faster`` verdicts near 1 % and finds a 10 % slowdown in about 80 % of pairs
#: (tests/test_compare.py measures both); asv's 0.002 finds it in about 65 %.
ALPHA = 0.01
#: Bootstrap draws of each median.
RESAMPLES = 2000
#: Confidence level of every interval.
CONFIDENCE = 0.95
#: Columns that name a configuration in the lab's sample tables (one vocabulary across notebooks):
#: the rows of a table that agree on every one of them it has are samples of one quantity.
CONFIG_COLUMNS = ("engine", "variant", "driver", "scenario", "config", "model", "partitions", "n_columns", "loop",
                  "clients", "rows_per_insert", "operation", "disk_profile", "new_keys", "memory_limit", "target",
                  "system", "setting", "method", "query", "cache", "doublings")
#: Columns that name a quantity of ``fits.csv`` (the long form's, and the older wide forms' labels).
FIT_KEYS = ("engine", "variant", "model", "method", "term", "factor", "level", "disk_profile", "system", "setting",
            "deployment")
#: The verdicts: a change in the slow direction, in the fast one (``higher``/``lower`` for a fitted
#: quantity that is neither a time nor a rate), no change beyond the threshold, or not known.
VERDICTS = ("slower", "faster", "higher", "lower", "same", "unsure")
#: Parameters that say where a run wrote, not what it measured.
_IGNORED_PARAMETERS = ("results_dir",)
_Z = stats.norm.ppf(0.5 + CONFIDENCE / 2)


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
    se = math.hypot((a_high - a_low) / (2 * _Z) / a, (b_high - b_low) / (2 * _Z) / b)
    log_ratio = math.log(out["ratio"])
    out.update(ci_low=math.exp(log_ratio - _Z * se), ci_high=math.exp(log_ratio + _Z * se),
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
def compare(run_a: str | os.PathLike, run_b: str | os.PathLike, notebook: str | None = None, *,
            threshold: float = THRESHOLD, alpha: float = ALPHA, across_versions: bool = False,
            seed: int = 0) -> pd.DataFrame:
    """Compare like-for-like quantities of two runs: one row per quantity, with a verdict.

    ``run_a`` and ``run_b`` are each a run folder (``OUT/01_insert_anatomy``) or a folder
    of them (``OUT``); their notebooks in common are compared. A quantity is one
    configuration of one table of raw samples — its rows agreeing on every column of
    :data:`CONFIG_COLUMNS` the table has, warm-up rows (``warmup``), rounds not
    reported (``reported``) and failed ones (``status`` other than ``ok``) left out — or
    one term of ``fits.csv`` (:data:`FIT_KEYS`). A sample quantity compares medians
    (:func:`compare_samples`), a fitted one its estimates (:func:`compare_estimates`).
    Quantities present on one side only are listed in ``attrs["notes"]``.

    Parameters
    ----------
    run_a, run_b : path
        The baseline and the run compared to it (ratios are b/a).
    notebook : str, optional
        Only this notebook (``"01"`` or ``"01_insert_anatomy"``).
    threshold : float
        Relative change that counts (0.05: ±5 %).
    alpha : float
        Significance level of the tests.
    across_versions : bool
        Compare an engine across versions (the note says so); by default a quantity
        whose engine version differs is not matched.
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    DataFrame
        ``notebook, table, engine, variant, labels, version_a, version_b, kind, unit, n_a,
        n_b, a, b, ratio, ci_low, ci_high, p_value, verdict, threshold, note``;
        ``attrs["notes"]`` holds the lines about the runs (hosts, revisions, load,
        unmatched quantities), ``attrs["loads"]`` each run's 1-minute load average at its start.

    Raises
    ------
    ConfigError
        When a folder holds no run, a run is corrupt, no notebook is in both, or two runs
        of a notebook are not comparable (scale or other parameters differ: named).
    """
    if not 0 < threshold < 1:
        raise ConfigError("--threshold", threshold, "a relative change between 0 and 1 (0.05 for 5 %)")
    if not 0 < alpha < 1:
        raise ConfigError("alpha", alpha, "a significance level between 0 and 1")
    side_a, side_b = _side("A", run_a, notebook), _side("B", run_b, notebook)
    common = sorted(set(side_a) & set(side_b))
    if not common:
        raise ConfigError("B", str(run_b), "runs of a notebook A has too (A has " + ", ".join(sorted(side_a))
                          + "; B has " + ", ".join(sorted(side_b)) + ")")
    notes = [f"{name} only in {side}" for side, one, other in (("A", side_a, side_b), ("B", side_b, side_a))
             for name in sorted(set(one) - set(other))]
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    loads: list[dict[str, Any]] = []
    for name in common:
        ra, rb = side_a[name], side_b[name]
        _check_comparable(name, ra, rb)
        notes += _run_notes(name, ra, rb)
        loads += [{"notebook": name, "side": side, "load": ((r.meta.get("load_average") or {}).get("start") or [None])[0],
                   "cores": (r.meta.get("host") or {}).get("cpu_cores")} for side, r in (("A", ra), ("B", rb))]
        host = _host_note(ra.meta, rb.meta)
        found, unmatched = _sample_rows(name, ra, rb, threshold, alpha, across_versions, rng)
        fits, unmatched_fits = _fit_rows(name, ra, rb, threshold, alpha)
        for row in found + fits:
            row["note"] = "; ".join(n for n in (row["note"], host) if n)
        rows += found + fits
        notes += unmatched + unmatched_fits
    table = pd.DataFrame(rows, columns=list(_COLUMNS))
    table["threshold"] = threshold
    table.attrs["notes"] = notes
    table.attrs["loads"] = loads
    return table


_COLUMNS = dict.fromkeys(("notebook", "table", "engine", "variant", "labels", "version_a", "version_b", "kind",
                          "unit", "n_a", "n_b", "a", "b", "ratio", "ci_low", "ci_high", "p_value", "verdict",
                          "threshold", "note"))


def _side(which: str, folder: str | os.PathLike, notebook: str | None) -> dict[str, catalog.RunFolder]:
    """The runs under ``folder`` by notebook (``notebook`` only, when given)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(which, str(folder), "a run folder or a folder of run folders")
    runs: dict[str, catalog.RunFolder] = {}
    for path in catalog.find_runs(folder):
        run = catalog.probe(path)
        if notebook and notebook not in (run.notebook, run.notebook.split("_")[0]):
            continue
        if run.state == "corrupt":
            raise ConfigError(which, str(path), "a readable run (" + "; ".join(run.problems) + ")")
        if run.notebook in runs:
            raise ConfigError(which, str(folder), f"one run of {run.notebook} (found {runs[run.notebook].folder} "
                              f"and {path}; name the run folder)")
        runs[run.notebook] = run
    if not runs:
        raise ConfigError(which, str(folder), "a folder holding a run" + (f" of {notebook}" if notebook else "")
                          + " (a folder with run.json)")
    return runs


def _check_comparable(name: str, ra: catalog.RunFolder, rb: catalog.RunFolder) -> None:
    pa, pb = ({k: v for k, v in r.meta.get("parameters", {}).items() if k.lower() not in _IGNORED_PARAMETERS}
              for r in (ra, rb))
    if pa.get("scale") != pb.get("scale"):
        raise ConfigError("B", str(rb.folder), f"a run of {name} at A's scale ({pa.get('scale')}), "
                          f"not {pb.get('scale')}: smoke and paper runs measure different sizes")
    differ = same_parameters(pa, pb)
    if differ:
        raise ConfigError("B", str(rb.folder), f"a run of {name} with A's parameters; these differ: "
                          + ", ".join(f"{k} ({pa.get(k)!r} vs {pb.get(k)!r})" for k in differ))


def _host(meta: dict) -> dict:
    host = meta.get("host") or {}
    disk = host.get("disk") or {}
    return {"host": host.get("hostname"), "cpu": host.get("cpu_model"), "cores": host.get("cpu_cores"),
            "ram_gib": round(host["ram_bytes"] / 2**30) if host.get("ram_bytes") else None,
            "disk": disk.get("model") or disk.get("source"), "rotational": disk.get("rotational")}


def _host_note(a: dict, b: dict) -> str:
    ha, hb = _host(a), _host(b)
    if ha == hb:
        return ""
    differ = [k for k in ha if ha[k] != hb[k]]
    return "hosts differ: " + ", ".join(f"{k} {ha[k]} vs {hb[k]}" for k in differ)


def _run_notes(name: str, ra: catalog.RunFolder, rb: catalog.RunFolder) -> list[str]:
    notes = []
    host = _host_note(ra.meta, rb.meta)
    if host:
        notes.append(f"{name}: {host}")
    for side, run in (("A", ra), ("B", rb)):
        git = run.meta.get("git") or {}
        rev = (git.get("revision") or "unknown")[:10]
        load = (run.meta.get("load_average") or {}).get("start")
        cores = (run.meta.get("host") or {}).get("cpu_cores")
        text = f"{name} {side}: {run.folder}, revision {rev}{' (uncommitted changes)' if git.get('dirty') else ''}"
        if load and cores:
            text += f", 1-min load {load[0]:g} on {cores} cores at start"
        if run.state != "completed":
            text += ", did not complete"
        notes.append(text)
    return notes


def _versions(run: catalog.RunFolder) -> dict[tuple, str]:
    """(engine label, variant) and (engine label, None) → the engine version ``run.json`` records."""
    out: dict[tuple, str] = {}
    for entry in run.meta.get("engines") or []:
        if not isinstance(entry, dict):
            continue
        version = entry.get("server_version") or entry.get("version")
        for name in {entry.get("label"), entry.get("engine")} - {None}:
            out.setdefault((name, entry.get("variant")), version)
            out.setdefault((name, None), version)
    return out


def _usable(frame: pd.DataFrame) -> pd.DataFrame:
    keep = pd.Series(True, index=frame.index)
    if "warmup" in frame:
        keep &= ~frame["warmup"].fillna(False).astype(bool)
    if "reported" in frame:
        keep &= frame["reported"].fillna(True).astype(bool)
    if "status" in frame:
        keep &= frame["status"].fillna("ok").eq("ok")
    return frame[keep]


def _sample_rows(name, ra, rb, threshold, alpha, across_versions, rng) -> tuple[list[dict], list[str]]:
    rows, notes = [], []
    tables_a, tables_b = ra.sample_tables, rb.sample_tables
    versions = _versions(ra), _versions(rb)
    for table in sorted(set(tables_a) & set(tables_b)):
        frames = [_usable(pd.read_parquet(t[table])) for t in (tables_a, tables_b)]
        time_col = next(c for c in catalog.TIME_COLUMNS if c in frames[0] and c in frames[1])
        keys = [c for c in CONFIG_COLUMNS if c in frames[0] and c in frames[1]]
        groups = [dict(iter(f.groupby(keys, dropna=False, sort=True))) if keys else {(): f} for f in frames]
        for key in groups[0].keys() - groups[1].keys():
            notes.append(f"{name} {table} {_label_text(keys, key)}: only in A")
        for key in groups[1].keys() - groups[0].keys():
            notes.append(f"{name} {table} {_label_text(keys, key)}: only in B")
        for key in sorted(groups[0].keys() & groups[1].keys(), key=str):
            label = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
            ga, gb = groups[0][key], groups[1][key]
            va, vb = (_version(g, label, v) for g, v in zip((ga, gb), versions))
            if va != vb and not across_versions:
                notes.append(f"{name} {table} {_label_text(keys, key)}: engine version {va} vs {vb}, not compared "
                             "(across_versions=True compares it)")
                continue
            result = compare_samples(ga[time_col], gb[time_col], threshold=threshold, alpha=alpha, rng=rng)
            if va != vb:
                result["note"] = "; ".join(n for n in (result["note"], f"engine version {va} vs {vb}") if n)
            rows.append({"notebook": name, "table": table, "engine": label.get("engine"),
                         "variant": label.get("variant"),
                         "labels": _label_text([k for k in keys if k not in ("engine", "variant")],
                                               tuple(label[k] for k in keys if k not in ("engine", "variant"))),
                         "version_a": va, "version_b": vb, "kind": "samples", "unit": "s", **result})
    return rows, notes


def _version(group: pd.DataFrame, label: dict, versions: dict[tuple, str]) -> str | None:
    if "version" in group and group["version"].notna().any():
        return ", ".join(sorted(map(str, group["version"].dropna().unique())))
    engine = label.get("engine")
    return versions.get((engine, label.get("variant"))) or versions.get((engine, None))


def _label_text(keys, key) -> str:
    key = key if isinstance(key, tuple) else (key,)
    return ", ".join(f"{k}={v}" for k, v in zip(keys, key))


def long_fits(frame: pd.DataFrame) -> pd.DataFrame:
    """``fits.csv`` in its long form (``term, estimate, ci_low, ci_high, unit`` per row), from either form.

    The long form passes through. A wide file of an older run becomes one row per estimate
    column ``<x>_<unit>`` that has ``<x>_ci_low_<unit>`` and ``<x>_ci_high_<unit>`` beside it
    (``overhead_ms`` → term ``overhead``, unit ``ms``).

    Examples
    --------
    >>> wide = pd.DataFrame({"engine": ["pg"], "overhead_ms": [0.2], "overhead_ci_low_ms": [0.1],
    ...                      "overhead_ci_high_ms": [0.3], "r2": [0.9]})
    >>> long_fits(wide)[["engine", "term", "estimate", "ci_low", "unit"]].to_dict("records")
    [{'engine': 'pg', 'term': 'overhead', 'estimate': 0.2, 'ci_low': 0.1, 'unit': 'ms'}]
    """
    if {"term", "estimate"} <= set(frame.columns):
        return frame
    parts = []
    labels_ = [c for c in frame.columns if c in FIT_KEYS or c in ("notebook", "n_points", "r2")]
    for column in frame.columns:
        match = re.fullmatch(r"(.+)_ci_low(?:_(.+))?", column)
        if not match:
            continue
        stem, unit = match.group(1), match.group(2)
        estimate = f"{stem}_{unit}" if unit else stem
        high = f"{stem}_ci_high_{unit}" if unit else f"{stem}_ci_high"
        if estimate in frame and high in frame:
            parts.append(frame[labels_].assign(term=stem, estimate=frame[estimate], ci_low=frame[column],
                                                ci_high=frame[high], unit=unit))
    return pd.concat(parts, ignore_index=True) if parts else frame.iloc[0:0].assign(term=None, estimate=None)


def _fit_rows(name, ra, rb, threshold, alpha) -> tuple[list[dict], list[str]]:
    if not (ra.fits and rb.fits):
        return [], []
    fits = [long_fits(pd.read_csv(r.fits)) for r in (ra, rb)]
    keys = [c for c in FIT_KEYS if c in fits[0] and c in fits[1]]
    indexed, notes = [], []
    for side, frame in zip("AB", fits):
        frame = frame.dropna(subset=["estimate"])
        doubled = frame.duplicated(keys, keep=False)
        if doubled.any():
            notes.append(f"{name} fits: {int(doubled.sum())} rows of {side} share their labels, not compared")
        indexed.append(frame[~doubled].set_index(keys) if keys else frame[~doubled])
    if not keys:
        return [], notes
    rows = []
    for key in sorted(set(indexed[0].index) & set(indexed[1].index), key=str):
        fa, fb = indexed[0].loc[key], indexed[1].loc[key]
        unit = fa.get("unit") if isinstance(fa.get("unit"), str) else None
        result = compare_estimates(fa["estimate"], fa.get("ci_low", np.nan), fa.get("ci_high", np.nan),
                                   fb["estimate"], fb.get("ci_low", np.nan), fb.get("ci_high", np.nan),
                                   threshold=threshold, alpha=alpha, direction=direction_of(unit))
        label = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        rest = [k for k in keys if k not in ("engine", "variant") and pd.notna(label[k])]
        rows.append({"notebook": name, "table": "fits", "engine": label.get("engine"),
                     "variant": label.get("variant"), "labels": _label_text(rest, tuple(label[k] for k in rest)),
                     "version_a": None, "version_b": None, "kind": "fit", "unit": unit,
                     **result, "n_a": fa.get("n_points", np.nan), "n_b": fb.get("n_points", np.nan)})
    return rows, notes


# -- reading a comparison ----------------------------------------------------------------------
def quantity(row: pd.Series) -> str:
    """A row's quantity in words: ``engine (variant) · table: labels``."""
    who = " ".join(str(v) for v in (labels.label(str(row["engine"])) if pd.notna(row["engine"]) else None,
                                    f"({labels.label(str(row['variant']))})" if pd.notna(row["variant"]) else None)
                   if v)
    return " · ".join(p for p in (who, f"{row['table']}: {row['labels']}" if row["labels"] else row["table"]) if p)


def describe(table: pd.DataFrame) -> str:
    """A few sentences computed from a comparison: counts by verdict and the changes found.

    Examples
    --------
    >>> describe(pd.DataFrame(columns=list(_COLUMNS)))
    'No quantity was compared.'
    """
    if table.empty:
        return "No quantity was compared."
    threshold = float(table["threshold"].iloc[0])
    counts = table["verdict"].value_counts()
    parts = [f"{counts.get(v, 0)} {v}" for v in VERDICTS if counts.get(v, 0)]
    text = [f"Of {len(table)} quantities compared (B against A, threshold ±{threshold:.0%}), "
            + ", ".join(parts) + "."]
    changed = table[table["verdict"].isin(["slower", "faster", "higher", "lower"])]
    for _, row in changed.assign(size=(changed["ratio"] - 1).abs()).sort_values("size", ascending=False) \
            .head(3).iterrows():
        text.append(f"{quantity(row)} is {row['verdict']} in B: {_percent(row['ratio'])} "
                    f"(95 % CI {_percent(row['ci_low'])} to {_percent(row['ci_high'])}, p = {row['p_value']:.2g}).")
    if changed.empty:
        samples = table[table["kind"] == "samples"].dropna(subset=["ratio"])
        if not samples.empty:
            widest = samples.loc[(samples["ci_high"] - samples["ci_low"]).idxmax()]
            text.append(f"No change passed both the ±{threshold:.0%} threshold and the test; the widest interval, "
                        f"{_percent(widest['ci_low'])} to {_percent(widest['ci_high'])}, is {quantity(widest)}'s.")
    unsure = int(counts.get("unsure", 0))
    if unsure:
        text.append(f"{unsure} quantities are unsure: their intervals reach beyond ±{threshold:.0%} without a "
                    "significant change (more samples would settle them).")
    busy = [f"{r['side']} {r['load']:g}" for r in table.attrs.get("loads", [])
            if r["load"] is not None and r["cores"] and r["load"] >= 0.5 * r["cores"]]
    if busy:
        text.append(f"The machine was busy when the runs started (1-minute load {', '.join(busy)} on "
                    f"{table.attrs['loads'][0]['cores']} cores): other work shares the cores, and a change between "
                    "two runs on such a machine may be the load, not the code; the test treats the samples of one "
                    "run as independent, so it cannot see a shift that affects a whole run.")
    hosts = table["note"].fillna("").str.extract(r"(hosts differ: [^;]+)")[0].dropna().unique()
    if len(hosts):
        text.append("The runs come from different machines (" + hosts[0].removeprefix("hosts differ: ")
                    + "), so part of any change may be the machine's.")
    return " ".join(text)


def _percent(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f} %" if np.isfinite(ratio) else "n/a"


_VERDICT_COLOURS = {"slower": "#D55E00", "faster": "#0072B2", "higher": "#CC79A7", "lower": "#56B4E9",
                    "same": "#009E73", "unsure": "#7F7F7F"}


def plot_comparison(table: pd.DataFrame, *, threshold: float | None = None) -> matplotlib.figure.Figure:
    """Ratios b/a with their 95 % intervals, sorted, the ±threshold band shaded; one row per quantity.

    Colour and marker say the verdict; the x axis is logarithmic when the intervals span a
    decade. The function only draws: save with :func:`ingestlab.figures.save`.
    """
    data = table.dropna(subset=["ratio"]).sort_values("ratio").reset_index(drop=True)
    if threshold is None:
        threshold = float(table["threshold"].iloc[0]) if len(table) and "threshold" in table else THRESHOLD
    fig, ax = plt.subplots(figsize=(7.0, 1.2 + 0.22 * max(len(data), 1)))
    ax.axvspan(1 - threshold, 1 + threshold, color="0.85", zorder=0, label=f"±{threshold:.0%}")
    ax.axvline(1.0, color="0.4", lw=0.8, zorder=1)
    positions = np.arange(len(data))
    for verdict in VERDICTS:
        part = data[data["verdict"] == verdict]
        if part.empty:
            continue
        low = np.clip(part["ratio"] - part["ci_low"], 0, None)
        high = np.clip(part["ci_high"] - part["ratio"], 0, None)
        ax.errorbar(part["ratio"], positions[part.index], xerr=np.nan_to_num(np.vstack([low, high])), fmt="o",
                    ms=4, capsize=2, color=_VERDICT_COLOURS[verdict], label=verdict, zorder=2)
    ax.set_yticks(positions, [quantity(r) for _, r in data.iterrows()], fontsize="x-small")
    ax.set_ylim(len(data) - 0.5, -0.5)
    values = pd.concat([data["ci_low"], data["ci_high"], data["ratio"]]).to_numpy(dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    if values.size and values.max() / values.min() >= 10:
        ax.set_xscale("log")
    ax.set_xlabel("ratio B / A (median or estimate), 95 % CI")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.6 / max(len(data), 1)), ncol=4, frameon=False,
              fontsize="small")
    return fig


def format_table(table: pd.DataFrame) -> str:
    """The comparison as a terminal table: one line per quantity, ratios as percentages."""
    if table.empty:
        return "(no quantity compared)"
    shown = pd.DataFrame({
        "notebook": table["notebook"], "quantity": [quantity(r) for _, r in table.iterrows()],
        "n": [f"{_count(a)}/{_count(b)}" for a, b in zip(table["n_a"], table["n_b"])],
        "a": table["a"].map(_number), "b": table["b"].map(_number), "unit": table["unit"].fillna(""),
        "change": table["ratio"].map(_percent),
        "95% CI": [f"{_percent(lo)} … {_percent(hi)}" for lo, hi in zip(table["ci_low"], table["ci_high"])],
        "p": table["p_value"].map(lambda p: f"{p:.2g}" if np.isfinite(p) else ""),
        "verdict": table["verdict"],
    })
    return shown.to_string(index=False)


def _number(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else ""


def _count(value) -> str:
    return str(int(value)) if pd.notna(value) else "-"
