"""Notebook 07's analysis: two runs (or sets of runs) matched quantity by quantity, described and drawn."""

from __future__ import annotations

import glob
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ingestlab import captions, catalog, figures, labels, report
from ingestlab.checkpoints import same_parameters
from ingestlab.compare import (
    ALPHA,
    CONFIDENCE,
    MAX_RUNS,
    REPLICATE_COLUMNS,
    RUN_NOISE,
    RUN_NOISE_RUNS,
    THRESHOLD,
    VERDICTS,
    Z_CONFIDENCE,
    alternating,
    compare_estimates,
    compare_runs,
    decide,
    direction_of,
    paired_test,
    power_columns,
    run_level_test,
    runs_note,
    t_interval,
    verdict_text,
)
from ingestlab.errors import ConfigError
from ingestlab.workloads.compare_runs import NOTEBOOK_STEM
from ingestlab.workloads.compare_runs_figure import (  # noqa: F401 - the figure's names, where 07 and its tests look
    CI_ROOM,
    CUT_LABEL,
    FIGURE_LABEL_CHARS,
    LOG_SPAN,
    MIN_PANEL_ROWS,
    ROWS_PER_COLUMN,
    VERDICT_WORDS,
    plot_comparison,
    ratio_limits,
    short_quantity,
)

#: Columns that name a configuration in the lab's sample tables (one vocabulary across notebooks):
#: the rows of a table that agree on every one of them it has are samples of one quantity.
CONFIG_COLUMNS = ("engine", "variant", "driver", "scenario", "config", "model", "partitions", "n_columns", "loop",
                  "clients", "rows_per_insert", "operation", "disk_profile", "new_keys", "memory_limit", "target",
                  "system", "setting", "method", "load", "query", "cache", "doublings")
#: Columns that name a quantity of ``fits.csv`` (the long form's, and the older wide forms' labels).
FIT_KEYS = ("engine", "variant", "model", "method", "term", "factor", "level", "disk_profile", "system", "setting",
            "deployment")
#: Parameters that say where a run wrote, not what it measured.
_IGNORED_PARAMETERS = ("results_dir",)


def compare(run_a, run_b, notebook: str | None = None, *, threshold: float = THRESHOLD, alpha: float = ALPHA,
            across_versions: bool = False, reference=None, run_noise=RUN_NOISE,
            noise_runs: float = RUN_NOISE_RUNS, target: float | None = None, seed: int = 0) -> pd.DataFrame:
    """Compare like-for-like quantities of two runs, or two sets of runs: one row per quantity, with a verdict.

    ``run_a`` and ``run_b`` are each a run folder (``OUT/01_insert_anatomy``), a folder of
    them (``OUT``; several runs of one notebook in it are that side's runs), or several such
    folders (a list, or one string of paths joined by commas: ``A1,A2,A3``). A quantity is
    one configuration of one table of raw samples — its rows agreeing on every column of
    :data:`CONFIG_COLUMNS` the table has, warm-up rows (``warmup``), rounds not reported
    (``reported``) and failed ones (``status`` other than ``ok``) left out — or one term of
    ``fits.csv`` (:data:`FIT_KEYS`). A sample quantity is compared by :func:`compare_runs`
    (each run's median, run-to-run noise included), a fitted one by its estimates with the
    same run-level noise added (:func:`compare_estimates` within a run). Quantities present
    on one side only are listed in ``attrs["notes"]``.

    When both sides of a notebook have the same number (at least 2) of runs and their start
    times (``run.json``'s ``started_at``) alternate — each consecutive two runs one of A and
    one of B: ``A B A B``, ``B A B A`` or pairs in a random order, as ``ingestlab alternate``
    makes them — run i of A is paired with run i of B and the mean of their log differences is
    tested (:func:`ingestlab.compare.paired_test`: slow drift cancels); otherwise the sides'
    means are (unpaired). Each row's note and ``attrs["notes"]`` say which.

    Every row says what it could have seen: ``detectable``, the smallest change called with 80 %
    power at its measured noise and run count, and ``runs_needed``, the runs a side (pairs)
    that would call a change of ``target`` (:func:`ingestlab.compare.runs_needed`);
    ``verdict_text`` is the verdict in words (``could not tell (needs ≥ k runs a side)`` for
    ``unsure``), which every printed form shows.

    A parameter may differ between the sides only when the samples carry it as a column of
    :data:`CONFIG_COLUMNS` (``DISK_PROFILE``: local against cloud-375): quantities are then
    matched across its values, and the note says what B changes.

    Parameters
    ----------
    run_a, run_b : path, list of paths or str
        The baseline and the runs compared to it (ratios are b/a).
    notebook : str, optional
        Only this notebook (``"01"`` or ``"01_insert_anatomy"``).
    threshold : float
        Relative change that counts (0.05: ±5 %).
    alpha : float
        Significance level of the tests.
    across_versions : bool
        Compare an engine across versions (the note says so); by default a quantity
        whose engine version differs is not matched.
    reference : path, list of paths or False, optional
        Where to look for the lab's other runs of the same configurations (old against old:
        same notebook, parameters, host, engine versions and committed revision, without
        uncommitted changes); their scatter per quantity joins the estimate of the run-to-run
        noise. Default: the folders holding each side's ``--out`` folders (``runs/`` for
        ``runs/<stamp>/<notebook>``); ``False``: none.
    run_noise : float or callable
        The prior run-to-run noise (σ₀, log scale, :data:`RUN_NOISE`), or a function of a
        quantity (a dict of ``notebook, table, engine, variant, labels``) returning its σ₀, or
        None for :data:`RUN_NOISE`: the hook for a run-level noise measured per engine and
        quantity.
    noise_runs : float
        How many runs' worth the prior counts for (:data:`RUN_NOISE_RUNS`).
    target : float, optional
        The change (a ratio) ``runs_needed`` is for; default ``1 + 2 × threshold`` (a change
        of the threshold's own size is called at most half the time, whatever the runs).
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    DataFrame
        ``notebook, table, engine, variant, labels, version_a, version_b, kind, unit, n_a,
        n_b, runs_a, runs_b, a, b, ratio, ci_low, ci_high, p_value, run_noise,
        detectable, runs_needed, target, paired, samples_ci_low, samples_ci_high, mann_whitney_p,
        samples_verdict`` (the raw samples' own bootstrap interval, U test and verdict, for sample
        quantities: :func:`compare_runs`), ``verdict, verdict_text, threshold, note``; ``attrs["notes"]`` holds the lines about the runs (hosts,
        revisions, load, unmatched quantities, reference runs), ``attrs["loads"]`` each run's
        1-minute load average at its start and the share of the CPU other processes used while it ran.

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
    target = 1 + 2 * threshold if target is None else target
    if not (isinstance(target, (int, float)) and math.isfinite(target) and target > 1 + threshold):
        raise ConfigError("--target", target, f"a ratio beyond 1 + threshold ({1 + threshold:g}): the change "
                          "runs_needed is for (a change within the threshold is never called)")
    side_a, side_b = _side("A", run_a, notebook), _side("B", run_b, notebook)
    common = sorted(set(side_a) & set(side_b))
    if not common:
        raise ConfigError("B", str(run_b), "runs of a notebook A has too (A has " + ", ".join(sorted(side_a))
                          + "; B has " + ", ".join(sorted(side_b)) + ")")
    notes = [f"{name} only in {side}" for side, one, other in (("A", side_a, side_b), ("B", side_b, side_a))
             for name in sorted(set(one) - set(other))]
    rng = np.random.default_rng(seed)
    noise = {"run_noise": run_noise, "noise_runs": noise_runs, "target": target}
    rows: list[dict[str, Any]] = []
    loads: list[dict[str, Any]] = []
    for name in common:
        ra, rb = side_a[name], side_b[name]
        changed = _check_comparable(name, ra, rb)
        ra, rb, noise["paired"] = _pairing(ra, rb)
        notes.append(f"{name}: " + (f"paired, {len(ra)} alternating pairs (run i of A with run i of B, in the order "
                                    "they started): slow drift cancels in each pair's difference"
                                    if noise["paired"] else "unpaired (the sides' runs did not alternate)"))
        if changed:
            notes.append(f"{name}: B changes " + ", ".join(f"{k} ({v[0]!r} → {v[1]!r})" for k, v in changed.items())
                         + "; quantities matched across it")
        notes += _run_notes(name, ra, rb)
        loads += [{"notebook": name, "side": side, "load": report.start_load(r.meta),
                   "others": report.others_cpu_share(r.meta)} for side, runs in (("A", ra), ("B", rb)) for r in runs]
        refs = _reference_groups(ra, rb, reference)
        if refs:
            notes.append(f"{name}: run-to-run noise also from {sum(map(len, refs))} other runs of these "
                         f"configurations ({len(refs)} groups of one revision each): "
                         + ", ".join(str(r.folder) for g in refs for r in g))
        host = _host_note(ra[0].meta, rb[0].meta)
        found, unmatched = _sample_rows(name, ra, rb, refs, set(changed), threshold, alpha, across_versions, rng,
                                        noise)
        fits, unmatched_fits = _fit_rows(name, ra, rb, changed, threshold, alpha, noise)
        for row in found + fits:
            row["note"] = "; ".join(n for n in (row["note"], host) if n)
        rows += found + fits
        notes += unmatched + unmatched_fits
    table = pd.DataFrame(rows, columns=list(_COLUMNS))
    table["threshold"] = threshold
    table["verdict_text"] = [verdict_text(r["verdict"], runs=min(r["runs_a"], r["runs_b"]), paired=bool(r["paired"]),
                                          runs_needed=r["runs_needed"], detectable=r["detectable"],
                                          why=str(r["note"] or "").split(";")[0])
                             for r in table.to_dict("records")]
    table.attrs["notes"] = notes
    table.attrs["loads"] = loads
    return table


_COLUMNS = dict.fromkeys(("notebook", "table", "engine", "variant", "labels", "version_a", "version_b", "kind",
                          "unit", "n_a", "n_b", "runs_a", "runs_b", "a", "b", "ratio", "ci_low", "ci_high",
                          "p_value", "run_noise", "detectable", "runs_needed", "target", "paired",
                          "samples_ci_low", "samples_ci_high", "mann_whitney_p", "samples_verdict", "verdict",
                          "verdict_text", "threshold", "note"))


def _started(run: catalog.RunFolder) -> pd.Timestamp | None:
    try:
        when = pd.Timestamp(run.meta.get("started_at"))
    except (TypeError, ValueError):
        return None
    return None if pd.isna(when) else when


def _pairing(ra: list[catalog.RunFolder], rb: list[catalog.RunFolder]) -> tuple[list, list, bool]:
    """Each side's runs in the order they started, and whether they alternate (then run i of A pairs with run i of B)."""
    starts_a, starts_b = [_started(r) for r in ra], [_started(r) for r in rb]
    if not alternating(starts_a, starts_b):
        return ra, rb, False

    def in_order(runs, starts):
        return [run for _, run in sorted(zip(starts, runs), key=lambda pair: pair[0])]

    return in_order(ra, starts_a), in_order(rb, starts_b), True


def side_folders(value) -> list[Path]:
    """The folders a side names: a list, paths joined by commas, or a glob pattern (``DIR/A-*``), each expanded.

    Examples
    --------
    >>> [str(p) for p in side_folders("runs/a,runs/b")], [str(p) for p in side_folders("no-such-folder-*")]
    (['runs/a', 'runs/b'], ['no-such-folder-*'])
    """
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in side_folders(v)]
    text = str(value)
    if "," in text and not Path(text).exists():
        return [f for v in text.split(",") if v.strip() for f in side_folders(v.strip())]
    if any(c in text for c in "*?[") and not Path(text).exists():
        found = sorted(Path(p) for p in glob.glob(text))
        return found or [Path(text)]  # nothing matched: refused as a folder that is not there
    return [Path(text)]


def _side(which: str, folders, notebook: str | None) -> dict[str, list[catalog.RunFolder]]:
    """The runs under ``folders`` by notebook (``notebook`` only, when given), each notebook's runs sorted."""
    runs: dict[str, list[catalog.RunFolder]] = {}
    seen: set[Path] = set()
    for folder in side_folders(folders):
        if not folder.is_dir():
            raise ConfigError(which, str(folder), "a run folder or a folder of run folders")
        for path in catalog.find_runs(folder):
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            run = catalog.probe(path)
            if notebook and notebook not in (run.notebook, run.notebook.split("_")[0]):
                continue
            if run.state == "corrupt":
                raise ConfigError(which, str(path), "a readable run (" + "; ".join(run.problems) + ")")
            runs.setdefault(run.notebook, []).append(run)
    if not runs:
        raise ConfigError(which, str(folders), "a folder holding a run" + (f" of {notebook}" if notebook else "")
                          + " (a folder with run.json)")
    return runs


def _parameters(run: catalog.RunFolder) -> dict:
    return {k: v for k, v in run.meta.get("parameters", {}).items() if k.lower() not in _IGNORED_PARAMETERS}


def _differ(before: dict, now: dict) -> list[str]:
    """The parameters two runs differ in, except values each drew from the clock (03's seed: every run draws anew)."""
    drawn = {k for k in now if now.get(f"{k}_source") == "clock" and before.get(f"{k}_source") == "clock"}
    return [k for k in same_parameters(before, now) if k not in drawn]


def _check_comparable(name: str, ra: list[catalog.RunFolder], rb: list[catalog.RunFolder]) -> dict[str, tuple]:
    """The parameters B changes (those the samples carry as a column); raises for any other difference."""
    for which, runs in (("A", ra), ("B", rb)):
        for run in runs[1:]:
            differ = _differ(_parameters(runs[0]), _parameters(run))
            if differ:
                raise ConfigError(which, str(run.folder), f"runs of {name} with {runs[0].folder}'s parameters "
                                  "(the runs of one side are repeats of one configuration); these differ: "
                                  + ", ".join(differ))
    pa, pb = _parameters(ra[0]), _parameters(rb[0])
    if pa.get("scale") != pb.get("scale"):
        raise ConfigError("B", str(rb[0].folder), f"a run of {name} at A's scale ({pa.get('scale')}), "
                          f"not {pb.get('scale')}: smoke and paper runs measure different sizes")
    differ = _differ(pa, pb)
    columns = {c for r in (ra[0], rb[0]) for t in r.sample_tables for c in r.columns[t]}
    labelled = [k for k in differ if k.lower() in CONFIG_COLUMNS and k.lower() in columns]
    rest = [k for k in differ if k not in labelled]
    if rest:
        raise ConfigError("B", str(rb[0].folder), f"a run of {name} with A's parameters; these differ: "
                          + ", ".join(f"{k} ({pa.get(k)!r} vs {pb.get(k)!r})" for k in rest))
    return {k.lower(): (pa.get(k), pb.get(k)) for k in labelled}


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


def _run_notes(name: str, ra: list[catalog.RunFolder], rb: list[catalog.RunFolder]) -> list[str]:
    notes = []
    host = _host_note(ra[0].meta, rb[0].meta)
    if host:
        notes.append(f"{name}: {host}")
    for side, runs in (("A", ra), ("B", rb)):
        for run in runs:
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
    if len(ra) == 1 or len(rb) == 1:
        notes.append(f"{name}: {len(ra)} run(s) of A against {len(rb)} of B: a whole run shares its server, its "
                     "files' placement and its CPUs, so a side with one run cannot tell such a run-level shift from "
                     "a change; the prior run-to-run noise (and the lab's other runs of the configuration) stand in "
                     "for it, and only large changes can be called (each row's note gives the smallest)")
    return notes


def _configuration(run: catalog.RunFolder) -> tuple | None:
    """What makes two runs repeats of one configuration: revision (and whether uncommitted changes were there),
    parameters, host, engine versions."""
    git = run.meta.get("git") or {}
    if not git.get("revision") or run.state != "completed":
        return None
    params = {k: v for k, v in _parameters(run).items()
              if not (k.endswith("_source") or _parameters(run).get(f"{k}_source") == "clock")}
    versions = sorted(str(v) for v in _versions(run).items())
    return (run.notebook, (git["revision"], bool(git.get("dirty"))), json.dumps(params, sort_keys=True, default=str),
            json.dumps(_host(run.meta), sort_keys=True, default=str), json.dumps(versions))


def _reference_groups(ra: list[catalog.RunFolder], rb: list[catalog.RunFolder],
                      reference) -> list[list[catalog.RunFolder]]:
    """Other runs of A's or B's configurations under ``reference``, grouped by configuration (two or more each)."""
    if reference is False:
        return []
    roots = (side_folders(reference) if reference is not None
             else sorted({r.folder.resolve().parent.parent for r in ra + rb}))
    wanted = {_configuration(r)[2:] for r in ra + rb if _configuration(r)}
    taken = {r.folder.resolve() for r in ra + rb}
    groups: dict[tuple, list[catalog.RunFolder]] = {}
    for root in roots:
        if not root.is_dir() or root == Path(root.anchor):
            continue
        for path in catalog.find_runs(root):
            if path.resolve() in taken:
                continue
            taken.add(path.resolve())
            run = catalog.probe(path)
            key = _configuration(run)
            if key and key[0] == ra[0].notebook and key[2:] in wanted:
                groups.setdefault(key, []).append(run)
    return [g for _, g in sorted(groups.items()) if len(g) >= 2]


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


def _sample_rows(name, ra, rb, refs, changed, threshold, alpha, across_versions, rng,
                 noise) -> tuple[list[dict], list[str]]:
    rows, notes = [], []
    tables = sorted(set.intersection(*(set(r.sample_tables) for r in ra + rb)))
    versions = _versions(ra[0]), _versions(rb[0])
    for table in tables:
        frames = [[_usable(pd.read_parquet(r.sample_tables[table])) for r in runs] for runs in (ra, rb)]
        every = [f for side in frames for f in side]
        time_col = next(c for c in catalog.TIME_COLUMNS if all(c in f for f in every))
        keys = [c for c in CONFIG_COLUMNS if c not in changed and all(c in f for f in every)]
        unit_col = next((c for c in REPLICATE_COLUMNS if all(c in f for f in every)), None)
        groups = [[_groups(f, keys) for f in side] for side in frames]
        present = [set.intersection(*(set(g) for g in side)) for side in groups]
        for key in present[0] - present[1]:
            notes.append(f"{name} {table} {_label_text(keys, key)}: only in A")
        for key in present[1] - present[0]:
            notes.append(f"{name} {table} {_label_text(keys, key)}: only in B")
        ref_levels = _reference_levels(refs, table, keys, time_col)
        for key in sorted(present[0] & present[1], key=str):
            label = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
            ga, gb = ([g[key] for g in side] for side in groups)
            va, vb = (_version(pd.concat(g), label, v) for g, v in zip((ga, gb), versions))
            if va != vb and not across_versions:
                notes.append(f"{name} {table} {_label_text(keys, key)}: engine version {va} vs {vb}, not compared "
                             "(across_versions=True compares it)")
                continue
            reference = [levels[key] for levels in ref_levels if key in levels]
            what = {"notebook": name, "table": table, "engine": label.get("engine"), "variant": label.get("variant"),
                    "labels": _label_text([k for k in keys if k not in ("engine", "variant")],
                                          tuple(label[k] for k in keys if k not in ("engine", "variant")))}
            result = compare_runs([(g[time_col], g[unit_col] if unit_col else None) for g in ga],
                                  [(g[time_col], g[unit_col] if unit_col else None) for g in gb],
                                  reference=reference, threshold=threshold, alpha=alpha, rng=rng,
                                  **_noise_of(noise, what))
            if va != vb:
                result["note"] = "; ".join(n for n in (result["note"], f"engine version {va} vs {vb}") if n)
            rows.append({**what, "version_a": va, "version_b": vb, "kind": "samples", "unit": "s", **result})
    return rows, notes


def _noise_of(noise: dict, quantity: dict) -> dict:
    """``noise`` with its ``run_noise`` for this quantity: a number as given, a function's answer, or the default."""
    run_noise = noise["run_noise"]
    if callable(run_noise):
        run_noise = run_noise(quantity)
        run_noise = RUN_NOISE if run_noise is None else run_noise
    if not (isinstance(run_noise, (int, float)) and math.isfinite(run_noise) and run_noise > 0):
        raise ConfigError("run_noise", run_noise, f"a positive run-to-run standard deviation (log scale) for "
                          f"{quantity.get('engine')} {quantity.get('labels')}, or None for {RUN_NOISE}")
    return {**noise, "run_noise": float(run_noise)}


def _groups(frame: pd.DataFrame, keys: list[str]) -> dict:
    return dict(iter(frame.groupby(keys, dropna=False, sort=True))) if keys else {(): frame}


def _reference_levels(refs, table, keys, time_col) -> list[dict]:
    """Per reference group: quantity key → the log medians of its runs."""
    out = []
    for group in refs:
        levels: dict = {}
        for run in group:
            if table not in run.sample_tables:
                continue
            frame = _usable(pd.read_parquet(run.sample_tables[table]))
            if time_col not in frame or not all(k in frame for k in keys):
                continue
            for key, part in _groups(frame, keys).items():
                x = part[time_col].to_numpy(dtype=float)
                x = x[np.isfinite(x) & (x > 0)]
                if x.size:
                    levels.setdefault(key, []).append(math.log(np.median(x)))
        out.append(levels)
    return out


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


def _without_changed(frame: pd.DataFrame, changed: dict[str, tuple], side: int) -> pd.DataFrame:
    """A side's fits with the changed parameters' values taken out of their model names.

    A notebook may name a model after a parameter (03: ``batch_time local``); matched across
    that parameter, A's ``local`` and B's ``cloud-375`` fits are the same model.
    """
    values = {str(v[side]) for v in changed.values() if v[side] is not None}
    if "model" not in frame or not values:
        return frame
    model = frame["model"].map(lambda m: " ".join(t for t in m.split() if t not in values) if isinstance(m, str) else m)
    return frame.assign(model=model)


def _fit_rows(name, ra, rb, changed: dict[str, tuple], threshold, alpha, noise) -> tuple[list[dict], list[str]]:
    if not all(r.fits for r in ra + rb):
        return [], []
    fits = [[_without_changed(long_fits(pd.read_csv(r.fits)), changed, i) for r in runs]
            for i, runs in enumerate((ra, rb))]
    keys = [c for c in FIT_KEYS if c not in changed and all(c in f for side in fits for f in side)]
    if not keys:
        return [], []
    indexed, notes = [[], []], []
    for i, (side, frames) in enumerate(zip("AB", fits)):
        for frame in frames:
            frame = frame.dropna(subset=["estimate"])
            doubled = frame.duplicated(keys, keep=False)
            if doubled.any():
                notes.append(f"{name} fits: {int(doubled.sum())} rows of {side} share their labels, not compared")
            indexed[i].append(frame[~doubled].set_index(keys))
    rows = []
    common = set.intersection(*(set(f.index) for side in indexed for f in side))
    for side, frames in zip("AB", indexed):
        alone = sorted({k for f in frames for k in f.index} - common, key=str)
        if alone:
            shown = "; ".join(_label_text(keys, k) for k in alone[:3]) + ("; …" if len(alone) > 3 else "")
            notes.append(f"{name} fits: {len(alone)} not in every run of both sides, only in {side}'s: {shown}")
    for key in sorted(common, key=str):
        fa, fb = ([f.loc[key] for f in side] for side in indexed)
        unit = fa[0].get("unit") if isinstance(fa[0].get("unit"), str) else None
        direction = direction_of(unit)
        if len(fa) == len(fb) == 1:
            result = compare_estimates(*(float(f.get(c, np.nan)) for f in (fa[0], fb[0])
                                         for c in ("estimate", "ci_low", "ci_high")),
                                       threshold=threshold, alpha=alpha, direction=direction)
        else:
            result = {"note": ""}
        label = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        rest = [k for k in keys if k not in ("engine", "variant") and pd.notna(label[k])]
        what = {"notebook": name, "table": "fits", "engine": label.get("engine"), "variant": label.get("variant"),
                "labels": _label_text(rest, tuple(label[k] for k in rest))}
        result = _fit_run_level(fa, fb, result, threshold, alpha, direction, _noise_of(noise, what))
        rows.append({**what, "version_a": None, "version_b": None, "kind": "fit", "unit": unit, **result,
                     "n_a": _points(fa), "n_b": _points(fb)})
    return rows, notes


def _points(fits: list[pd.Series]) -> float:
    points = [f.get("n_points", np.nan) for f in fits]
    return float(np.nansum(points)) if any(pd.notna(p) for p in points) else np.nan


def _fit_run_level(fa, fb, within: dict, threshold, alpha, direction, noise) -> dict:
    """A fitted quantity's comparison with the run-level noise added to the fits' own intervals."""
    paired = bool(noise.get("paired")) and len(fa) == len(fb) >= 2
    target = noise.get("target") or 1 + 2 * threshold
    out = {"a": np.nan, "b": np.nan, "ratio": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan,
           "verdict": "unsure", "runs_a": len(fa), "runs_b": len(fb), "run_noise": np.nan, "detectable": np.nan,
           "runs_needed": np.nan, "target": target, "paired": paired, "note": within.get("note", "")}
    sides = []
    for fits in (fa, fb):
        est = np.array([f.get("estimate", np.nan) for f in fits], dtype=float)
        low = np.array([f.get("ci_low", np.nan) for f in fits], dtype=float)
        high = np.array([f.get("ci_high", np.nan) for f in fits], dtype=float)
        sides.append((est, ((high - low) / (2 * Z_CONFIDENCE) / est) ** 2))
    (ea, va), (eb, vb) = sides
    if not ((ea > 0).all() and (eb > 0).all()):
        out["note"] = "an estimate is not positive: no ratio"
        return out
    out.update(a=float(np.exp(np.log(ea).mean())), b=float(np.exp(np.log(eb).mean())))
    out["ratio"] = out["b"] / out["a"]
    if not (np.isfinite(va).all() and np.isfinite(vb).all()):
        out["note"] = "no interval in the fits: ratio without interval or test"
        return out
    test = (paired_test if paired else run_level_test)(np.log(ea), va, np.log(eb), vb, run_noise=noise["run_noise"],
                                                        noise_runs=noise["noise_runs"])
    out.update(t_interval(test, CONFIDENCE), run_noise=test["tau"])
    out.update(power_columns(test, target=target, threshold=threshold, alpha=alpha))
    out["verdict"] = decide(out["ratio"], out["ci_low"], out["ci_high"], out["p_value"], threshold=threshold,
                            alpha=alpha, direction=direction)
    out["note"] = runs_note(test)
    return out


# -- reading a comparison ----------------------------------------------------------------------
def quantity(row: pd.Series) -> str:
    """A row's quantity in words: ``engine (variant) · table: labels``."""
    who = " ".join(str(v) for v in (labels.label(str(row["engine"])) if pd.notna(row["engine"]) else None,
                                    f"({labels.label(str(row['variant']))})" if pd.notna(row["variant"]) else None)
                   if v)
    return " · ".join(p for p in (who, f"{row['table']}: {row['labels']}" if row["labels"] else row["table"]) if p)


def describe(table: pd.DataFrame) -> str:
    """A few sentences computed from a comparison: counts by verdict, the changes found, what could not be seen.

    A quantity that could not be told apart is never counted as unchanged: the sentence says at
    how many runs a side, what change would not have shown (``detectable``) and how many runs a
    side would see ``target`` (``runs_needed``).

    Examples
    --------
    >>> describe(pd.DataFrame(columns=list(_COLUMNS)))
    'No quantity was compared.'
    >>> row = {"verdict": "unsure", "threshold": 0.05, "kind": "fit", "runs_a": 1, "runs_b": 1, "paired": False,
    ...        "detectable": 2.87, "runs_needed": 44.0, "target": 1.1, "note": "", "samples_verdict": None}
    >>> describe(pd.DataFrame([row] * 3, columns=list(_COLUMNS)))  # doctest: +NORMALIZE_WHITESPACE
    'Of 3 quantities compared (B against A, threshold ±5%), 3 could not be told apart. 3 of 3 could not be told
    apart at 1 run a side: a change under ×2.9 would not show; ≥ 44 runs a side would see ±10%. One side has a single
    run: a shift of a whole run cannot be told from a change, so only changes beyond the run-to-run noise are called
    (the detectable column gives the smallest, per quantity); several runs a side, made in alternation (ingestlab
    alternate), narrow it.'
    """
    if table.empty:
        return "No quantity was compared."
    threshold = float(table["threshold"].iloc[0])
    counts = table["verdict"].value_counts()
    parts = [f"{counts.get(v, 0)} {v}" for v in VERDICTS if counts.get(v, 0) and v != "unsure"]
    unsure = int(counts.get("unsure", 0))
    if unsure:
        parts.append(f"{unsure} could not be told apart")
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
    moved = ["slower", "faster", "higher", "lower"]
    raw = table[(table["kind"] == "samples") & table["samples_verdict"].isin(moved)]
    if len(raw):
        text.append(f"On the raw samples alone (bootstrap interval and Mann–Whitney U, each side's samples taken as "
                    f"independent draws), {len(raw)} of {int((table['kind'] == 'samples').sum())} sample quantities "
                    f"would be called changed; the run-level rule calls {int(raw['verdict'].isin(moved).sum())} of "
                    "them changed.")
    if unsure:
        text.append(_could_not_tell(table))
    # what other processes used while a run ran, where it was measured; else the load at its start, which also
    # holds the lab's own run before it (consecutive quiet runs start at 1.1-1.8 on 2 cores, others' share 2-4 %)
    loads = table.attrs.get("loads", [])
    shared = [f"{r['side']} {r['others']:.0%}" for r in loads
              if r.get("others") is not None and r["others"] > report.QUIET_OTHERS]
    loaded = [f"{r['side']} {r['load']:g}" for r in loads
              if r.get("others") is None and r["load"] is not None and r["load"] > report.QUIET_LOAD]
    if shared:
        text.append(f"Other processes used more than {report.QUIET_OTHERS:.0%} of the machine's CPU while runs ran "
                    f"({', '.join(shared)}): other work shares the cores and shifts whole runs.")
    if loaded:
        text.append(f"The machine was busy when runs started (1-minute load {', '.join(loaded)}, above "
                    f"{report.QUIET_LOAD:g}): other work shares the cores and shifts whole runs.")
    if "runs_a" in table and (table["runs_a"].fillna(1).min() <= 1 or table["runs_b"].fillna(1).min() <= 1):
        text.append("One side has a single run: a shift of a whole run cannot be told from a change, so only "
                    "changes beyond the run-to-run noise are called (the detectable column gives the smallest, per "
                    "quantity); several runs a side, made in alternation (ingestlab alternate), narrow it.")
    hosts = table["note"].fillna("").str.extract(r"(hosts differ: [^;]+)")[0].dropna().unique()
    if len(hosts):
        text.append("The runs come from different machines (" + hosts[0].removeprefix("hosts differ: ")
                    + "), so part of any change may be the machine's.")
    return " ".join(text)


def _could_not_tell(table: pd.DataFrame) -> str:
    """The sentence on the quantities that could not be told apart: at how many runs, what would not show, what would."""
    rows = table[table["verdict"] == "unsure"]
    text = f"{len(rows)} of {len(table)} could not be told apart"
    if "runs_a" not in rows or rows["runs_a"].isna().all():
        return text + "."
    shape = rows.assign(paired=rows.get("paired", False)).groupby(["runs_a", "runs_b", "paired"]).size().idxmax()
    text += " at " + _runs_phrase(*shape)
    if "detectable" in rows and rows["detectable"].notna().any():
        seen = rows["detectable"].dropna()
        spread = f" (×{seen.min():.2g} to ×{seen.max():.2g} by quantity)" if seen.max() > 1.05 * seen.min() else ""
        text += f": a change under ×{seen.median():.2g}{spread} would not show"
    if "runs_needed" in rows and rows["runs_needed"].notna().any():
        needed, target = rows["runs_needed"].dropna(), float(rows["target"].dropna().iloc[0])
        unit = "pairs" if shape[2] else "runs a side"
        many = needed.median()
        said = f"more than {MAX_RUNS:,}" if not np.isfinite(many) else f"≥ {int(many)}"
        text += f"; {said} {unit} would see ±{target - 1:.0%}"
        if np.isfinite(many) and needed.max() > many:
            text += f" (up to {int(needed.max()) if np.isfinite(needed.max()) else 'more than ' + f'{MAX_RUNS:,}'} " \
                    "for the noisiest quantity)"
    return text + "."


def _runs_phrase(runs_a: float, runs_b: float, paired: bool) -> str:
    """``1 run a side``, ``3 runs of A against 2 of B`` or ``4 alternating pairs``.

    Examples
    --------
    >>> _runs_phrase(1, 1, False), _runs_phrase(3, 2, False), _runs_phrase(4, 4, True)
    ('1 run a side', '3 runs of A against 2 of B', '4 alternating pairs')
    """
    if paired:
        return f"{int(runs_a)} alternating pairs"
    if runs_a == runs_b:
        return f"{int(runs_a)} run{'s' if runs_a != 1 else ''} a side"
    return f"{int(runs_a)} run{'s' if runs_a != 1 else ''} of A against {int(runs_b)} of B"


def _percent(ratio: float) -> str:
    if not np.isfinite(ratio):
        return "n/a"
    return f"×{ratio:.3g}" if ratio >= 100 else f"{(ratio - 1) * 100:+.1f} %"


def format_table(table: pd.DataFrame) -> str:
    """The comparison as a terminal table: one line per quantity, ratios as percentages.

    ``runs' 95% CI`` and ``runs' p`` are the run-level rule's, which the verdict follows;
    ``detectable`` the smallest change it calls with 80 % power, ``runs needed`` the runs a
    side (pairs, when paired) that would call the row's ``target``; ``samples' CI`` and ``U p``
    the raw samples' own (bootstrap, Mann–Whitney U), shown beside them. The verdict is in
    words (``could not tell (needs ≥ k runs a side)``, never a bare ``unsure``).
    """
    if table.empty:
        return "(no quantity compared)"
    shown = pd.DataFrame({
        "notebook": table["notebook"], "quantity": [quantity(r) for _, r in table.iterrows()],
        "n": [f"{_count(a)}/{_count(b)}" for a, b in zip(table["n_a"], table["n_b"])],
        "a": table["a"].map(_number), "b": table["b"].map(_number), "unit": table["unit"].fillna(""),
        "change": table["ratio"].map(_percent),
        "runs' 95% CI": [f"{_percent(lo)} … {_percent(hi)}" for lo, hi in zip(table["ci_low"], table["ci_high"])],
        "runs' p": table["p_value"].map(_p),
        "detectable": table["detectable"].map(lambda r: f"×{r:.2f}" if np.isfinite(r) else ""),
        f"runs needed (±{_target_text(table)})": table["runs_needed"].map(_runs_text),
        "samples' CI": [f"{_percent(lo)} … {_percent(hi)}" if np.isfinite(lo) else ""
                        for lo, hi in zip(table["samples_ci_low"], table["samples_ci_high"])],
        "U p": table["mann_whitney_p"].map(_p),
        "verdict": table["verdict_text"],
    })
    return shown.to_string(index=False)


def _target_text(table: pd.DataFrame) -> str:
    targets = table["target"].dropna().unique()
    return ", ".join(f"{t - 1:.0%}" for t in sorted(targets)) or "n/a"


def _runs_text(value: float) -> str:
    if pd.isna(value):
        return ""
    return str(int(value)) if np.isfinite(value) else f">{MAX_RUNS}"


def _p(value: float) -> str:
    return f"{value:.2g}" if np.isfinite(value) else ""


def _number(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else ""


def _count(value) -> str:
    return str(int(value)) if pd.notna(value) else "-"


def describe_runs(table: pd.DataFrame) -> str:
    """What was compared with what: the comparison's notes (hosts, revisions, load, unmatched quantities), as a list."""
    notes = table.attrs.get("notes") or ["nothing to say about the two runs"]
    return "\n".join(f"- {note}" for note in notes)


#: The headline's name of a verdict, where the code's would read as a finding (``unsure``: could not tell).
_HEADLINE_KEYS = {"unsure": "could_not_tell"}


def headline(table: pd.DataFrame) -> dict[str, float]:
    """How many quantities were compared, how many got each verdict, and how many the raw samples alone would call changed.

    ``unsure`` is counted as ``could_not_tell``, with the median of those quantities'
    ``detectable`` change and ``runs_needed`` (FINDINGS.md prints these keys).

    Examples
    --------
    >>> headline(pd.DataFrame({"verdict": ["same", "slower", "same"], "samples_verdict": ["same", "slower", "faster"]}))
    {'quantities': 3, 'slower': 1, 'faster': 0, 'higher': 0, 'lower': 0, 'same': 2, 'could_not_tell': 0, 'changed_by_samples_alone': 2}
    """
    counts = table["verdict"].value_counts() if "verdict" in table else pd.Series(dtype=int)
    out = {"quantities": int(len(table)),
           **{_HEADLINE_KEYS.get(v, v): int(counts.get(v, 0)) for v in VERDICTS}}
    unsure = table[table["verdict"] == "unsure"] if "verdict" in table else table.iloc[0:0]
    for column in ("detectable", "runs_needed"):
        if column in unsure and unsure[column].notna().any():
            out[f"could_not_tell_{column}_median"] = float(unsure[column].median())
    if "samples_verdict" in table:
        out["changed_by_samples_alone"] = int(table["samples_verdict"].isin(["slower", "faster", "higher", "lower"]).sum())
    return out


def save_ratios(table: pd.DataFrame, directory: str | Path, *, title: str) -> None:
    """Draw :func:`plot_comparison` in the article's look and save it as the notebook's ``ratios`` in ``directory``.

    ``ingestlab compare --figure`` draws the notebook's figure without running it.
    """
    figures.use_article_theme()
    fig = plot_comparison(table)
    captions.caption(fig, title)
    figures.save(fig, "ratios", notebook=NOTEBOOK_STEM, directory=directory)
