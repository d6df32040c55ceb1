"""The run-to-run noise of the lab's own runs: how far whole runs of one configuration scatter, per quantity.

A run's level of a quantity (its log median, or a fit's log estimate) carries two kinds of
noise: what its own samples show (the within-run variance, :func:`ingestlab.compare.run_median`)
and a component shared by every sample of the run — its server instance, its placement, its
files — that only other runs of the same configuration reveal. This module measures both from
the runs under a folder, grouped as :func:`ingestlab.workloads.compare_runs_analysis.compare`
groups its reference runs (same notebook, revision, parameters, host and engine versions):

- ``between_sd``: the standard deviation of the runs' log levels (ν = runs − 1);
- ``within_sd``: what the runs' own samples imply for one run's level (root mean within variance);
- ``run_level_sd``: the run-level component, √max(0, between² − within²): the noise that more
  samples in a run cannot take away, only more runs (or removing its cause).

``ingestlab runs --noise`` prints it (``--csv`` writes it); ``ingestlab compare --noise FILE`` takes each
quantity's run-level noise from it as its prior (:func:`prior`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from ingestlab import catalog
from ingestlab.compare import REPLICATE_COLUMNS, run_median
from ingestlab.errors import ConfigError
from ingestlab.workloads import compare_runs_analysis as matching

#: Columns of :func:`table`.
COLUMNS = ["notebook", "revision", "table", "engine", "variant", "labels", "kind", "runs", "level", "between_sd",
           "within_sd", "run_level_sd"]


def table(root: str | Path, *, min_runs: int = 3, seed: int = 0) -> pd.DataFrame:
    """Per configuration of runs under ``root`` (at least ``min_runs`` completed runs each), per quantity, its noise.

    Sample quantities are those :func:`~ingestlab.workloads.compare_runs_analysis.compare` matches
    (one configuration of a samples table); fitted ones are the terms of ``fits.csv`` whose
    estimates are positive, their within-run variance read from their 95 % intervals.

    Returns
    -------
    DataFrame
        :data:`COLUMNS`; ``level`` is the geometric mean of the runs' levels (seconds for samples,
        the fit's unit for fits), the three standard deviations are on the log scale (0.10 ≈ 10 %).
    """
    groups: dict[tuple, list[catalog.RunFolder]] = {}
    for path in catalog.find_runs(Path(root)):
        run = catalog.probe(path)
        key = matching._configuration(run)
        if key is not None:
            groups.setdefault(key, []).append(run)
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    for key, runs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        if len(runs) < min_runs:
            continue
        head = {"notebook": key[0], "revision": key[1][0][:10] + ("+" if key[1][1] else "")}
        rows += [{**head, **row} for row in _sample_levels(runs, rng)]
        rows += [{**head, **row} for row in _fit_levels(runs)]
    return pd.DataFrame(rows, columns=COLUMNS)


def spread(levels, variances) -> dict[str, float]:
    """Between-run, within-run and run-level standard deviations of one quantity's run levels (log scale).

    Examples
    --------
    >>> r = spread([0.0, 0.2, -0.2, 0.1], [0.0001] * 4)
    >>> round(r["between_sd"], 3), round(r["within_sd"], 3), round(r["run_level_sd"], 3)
    (0.171, 0.01, 0.17)
    """
    levels, variances = np.asarray(levels, dtype=float), np.asarray(variances, dtype=float)
    keep = np.isfinite(levels)
    between = float(np.std(levels[keep], ddof=1)) if keep.sum() >= 2 else math.nan
    within = float(math.sqrt(np.nanmean(variances[keep]))) if np.isfinite(variances[keep]).any() else math.nan
    excess = between ** 2 - (within ** 2 if np.isfinite(within) else 0.0)
    return {"between_sd": between, "within_sd": within,
            "run_level_sd": math.sqrt(max(excess, 0.0)) if np.isfinite(excess) else math.nan}


def _sample_levels(runs: list[catalog.RunFolder], rng: np.random.Generator) -> list[dict]:
    rows = []
    for name in sorted(set.intersection(*(set(r.sample_tables) for r in runs))):
        frames = [matching._usable(pd.read_parquet(r.sample_tables[name])) for r in runs]
        time_col = next((c for c in catalog.TIME_COLUMNS if all(c in f for f in frames)), None)
        if time_col is None:
            continue
        keys = [c for c in matching.CONFIG_COLUMNS if all(c in f for f in frames)]
        unit_col = next((c for c in REPLICATE_COLUMNS if all(c in f for f in frames)), None)
        per_run = [matching._groups(f, keys) for f in frames]
        for key in sorted(set.intersection(*(set(g) for g in per_run)), key=str):
            levels, variances = zip(*(run_median(g[key][time_col], g[key][unit_col] if unit_col else None, rng=rng)
                                      for g in per_run))
            label = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
            rest = [k for k in keys if k not in ("engine", "variant")]
            rows.append({"table": name, "engine": label.get("engine"), "variant": label.get("variant"),
                         "labels": matching._label_text(rest, tuple(label[k] for k in rest)), "kind": "samples",
                         "runs": len(runs), "level": math.exp(np.nanmean(levels)), **spread(levels, variances)})
    return rows


def _fit_levels(runs: list[catalog.RunFolder]) -> list[dict]:
    if not all(r.fits for r in runs):
        return []
    fits = [matching.long_fits(pd.read_csv(r.fits)) for r in runs]
    keys = [c for c in matching.FIT_KEYS if all(c in f for f in fits)]
    indexed = [f.dropna(subset=["estimate"]).drop_duplicates(keys, keep=False).set_index(keys) for f in fits]
    rows = []
    for key in sorted(set.intersection(*(set(f.index) for f in indexed)), key=str):
        est = np.array([f.loc[key, "estimate"] for f in indexed], dtype=float)
        if not (est > 0).all():
            continue
        width = np.array([f.loc[key, "ci_high"] - f.loc[key, "ci_low"] for f in indexed], dtype=float)
        label = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        rest = [k for k in keys if k not in ("engine", "variant") and pd.notna(label[k])]
        rows.append({"table": "fits", "engine": label.get("engine"), "variant": label.get("variant"),
                     "labels": matching._label_text(rest, tuple(label[k] for k in rest)), "kind": "fit",
                     "runs": len(runs), "level": float(np.exp(np.log(est).mean())),
                     **spread(np.log(est), (width / (2 * 1.959964) / est) ** 2)})
    return rows


#: The least run-level noise a measured prior claims (log scale): a quantity whose runs agreed closer than this
#: in a handful of runs is not known to be steadier than 1 %.
PRIOR_FLOOR = 0.01
#: The columns naming a quantity, as :func:`table` writes them and ``compare`` asks for them.
QUANTITY = ("notebook", "table", "engine", "variant", "labels")


def prior(path: str | Path) -> Callable[[dict], float | None]:
    """The run-to-run noise measured in a :func:`table` written as CSV, as ``compare``'s prior (its ``run_noise``).

    Each quantity's σ₀ is its ``run_level_sd`` (at least :data:`PRIOR_FLOOR`); a quantity the
    file does not hold gets None (``compare``'s default). Measure it on the machine and at the
    revision you compare at, e.g. five runs one at a time: ``ingestlab runs --noise --root R --csv
    noise.csv``, then ``ingestlab compare A B --noise noise.csv``.

    Raises
    ------
    ConfigError
        When the file is unreadable or lacks the columns :func:`table` writes.
    """
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"labels": str})
    except (OSError, ValueError) as exc:
        raise ConfigError("--noise", str(path), f"a CSV written by `ingestlab runs --noise --csv` ({exc})") from exc
    missing = [c for c in (*QUANTITY, "run_level_sd") if c not in frame.columns]
    if missing:
        raise ConfigError("--noise", str(path), "a CSV written by `ingestlab runs --noise --csv` (no column "
                          + ", ".join(missing) + ")")
    sigma = {_key(row): max(float(row["run_level_sd"]), PRIOR_FLOOR)
             for row in frame.to_dict("records") if np.isfinite(float(row["run_level_sd"]))}
    return lambda quantity: sigma.get(_key(quantity))


def _key(quantity: Mapping) -> tuple:
    return tuple("" if pd.isna(quantity.get(c)) else str(quantity.get(c)) for c in QUANTITY)
