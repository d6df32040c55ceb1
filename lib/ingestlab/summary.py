"""What a run folder found: every notebook's fits, each under what it measures, and its headline numbers."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

import pandas as pd

from ingestlab import report
from ingestlab.errors import ConfigError

#: Columns of :func:`fits`, in order.
COLUMNS = ["notebook", "scale", "quantity", "engine", "variant", "method", "estimate", "ci_low", "ci_high", "unit",
           "r2", "n_points"]


@dataclasses.dataclass(frozen=True)
class Quantity:
    """One estimate a notebook's ``fits.csv`` holds: its columns, what it is per, and its unit.

    ``label`` may name other columns of the row in braces (``"slope ({unit})"``); ``where``
    keeps only the rows whose column equals the value (``("term", "flush_share")``).
    """

    column: str
    low: str
    high: str
    label: str
    unit: str
    where: tuple[str, str] | None = None


def _ms(stem: str, label: str, unit: str = "ms") -> Quantity:
    return Quantity(f"{stem}_{unit}", f"{stem}_ci_low_{unit}", f"{stem}_ci_high_{unit}", label,
                    unit.replace("us", "µs"))


def _term(term: str, label: str) -> Quantity:
    return Quantity("estimate", "ci_low", "ci_high", label, "ms", ("term", term))


#: What each notebook's fits estimate. A per-statement overhead, a fixed cost per batch or per
#: scan and a cost per row are different quantities and are never put in one column.
QUANTITIES: dict[str, tuple[Quantity, ...]] = {
    "00_published_results": (_ms("overhead", "overhead per statement (published data)"),),
    "01_insert_anatomy": (_ms("overhead", "overhead per statement"),),
    "02_component_sweeps": (_ms("slope", "change of the single-row INSERT: {factor} {level} ({unit})"),),
    "03_upsert_beyond_ram": (_ms("overhead", "fixed cost per batch"), _ms("per_row", "cost per row", "us")),
    "04_group_commit": (_term("intercept", "fixed cost per statement"), _term("flush_share", "cost of a log flush"),
                        _term("rows_per_insert", "cost per row")),
    "05_million_rows": (_ms("overhead", "overhead per statement of a load"), _ms("per_row", "cost per row", "us")),
    "06_csv_scan": (Quantity("fixed_s", "fixed_ci_low_s", "fixed_ci_high_s", "fixed cost per scan", "s"),
                    Quantity("per_gb_s", "per_gb_ci_low_s", "per_gb_ci_high_s", "time per GB scanned", "s")),
}

#: What the scales mean for comparisons, as the summary says it.
SCALE_NOTE = {"smoke": "CI-sized, for checking that everything runs: not comparable with paper-scale numbers",
              "paper": "the seeds' sizes: comparable with the published numbers"}


def _runs(out: str | os.PathLike) -> list[tuple[Path, dict]]:
    if not Path(out).is_dir():
        raise ConfigError("RUN_DIR", str(out), "a run folder (the --out of an earlier `ingestlab run`)")
    found = []
    for meta_path in sorted(Path(out).glob("*/run.json")):
        try:
            found.append((meta_path.parent, json.loads(meta_path.read_text())))
        except (OSError, ValueError):
            continue  # a run killed while its metadata was first written has nothing to summarise
    return found


def scale_of(meta: dict) -> str:
    """The run's ``SCALE`` (``smoke``, ``paper``), or ``"-"`` for a notebook without one (00).

    Examples
    --------
    >>> scale_of({"parameters": {"scale": "paper"}}), scale_of({"parameters": {"ALPHA": 0.05}})
    ('paper', '-')
    """
    params = meta.get("parameters", {})
    return str(params.get("scale", params.get("SCALE", "-")))


def fits(out: str | os.PathLike) -> pd.DataFrame:
    """Every notebook's fits under ``out`` as one long table, a row per estimate (:data:`COLUMNS`).

    Each row names the ``quantity`` it estimates (:data:`QUANTITIES`: "overhead per
    statement", "fixed cost per batch", "cost per row", ...) with its ``unit``, and the
    ``scale`` of the run that made it. A notebook not in :data:`QUANTITIES` is left out.

    Raises
    ------
    ConfigError
        When ``out`` is not a folder.
    """
    rows = []
    for folder, meta in _runs(out):
        path = folder / "fits.csv"
        if not path.exists():
            continue
        table = pd.read_csv(path)
        for q in QUANTITIES.get(meta.get("notebook", folder.name), ()):
            if q.column not in table.columns or (q.where and q.where[0] not in table.columns):
                continue
            part = table if q.where is None else table[table[q.where[0]] == q.where[1]]
            for r in part.to_dict("records"):
                rows.append({"notebook": folder.name, "scale": scale_of(meta), "quantity": q.label.format(**r),
                             "engine": r.get("engine"), "variant": r.get("variant"), "method": r.get("method", "ols"),
                             "estimate": r[q.column], "ci_low": r.get(q.low, math.nan),
                             "ci_high": r.get(q.high, math.nan), "unit": q.unit, "r2": r.get("r2", math.nan),
                             "n_points": r.get("n_points")})
    return pd.DataFrame(rows, columns=COLUMNS)


def headlines(out: str | os.PathLike) -> pd.DataFrame:
    """Every notebook's headline numbers (``run.json``'s ``headline``) under ``out``: notebook, scale, name, value.

    A value recorded with its CI (a list ``[estimate, low, high]``) is shown as such; runs
    that did not complete have no headline and are listed with ``completed`` False.
    """
    rows = []
    for folder, meta in _runs(out):
        base = {"notebook": folder.name, "scale": scale_of(meta), "completed": bool(meta.get("completed"))}
        if not meta.get("headline"):
            rows.append({**base, "name": "", "value": ""})
        for name, value in (meta.get("headline") or {}).items():
            rows.append({**base, "name": name, "value": report.headline_value(value)})
    return pd.DataFrame(rows, columns=["notebook", "scale", "completed", "name", "value"])


def format_summary(out: str | os.PathLike) -> str:
    """The text ``ingestlab summary`` prints: the scales, each quantity's fits, then the headline numbers."""
    table, heads = fits(out), headlines(out)
    if heads.empty:
        return f"no run.json under {out}"
    lines = [f"Run folder {out}"]
    for scale in sorted(set(heads["scale"]) - {"-"}):
        notebooks = sorted(set(heads.loc[heads["scale"] == scale, "notebook"]))
        lines.append(f"  SCALE {scale} ({', '.join(notebooks)}): {SCALE_NOTE.get(scale, 'see the notebook')}")
    for notebook, part in table.groupby("notebook", sort=True):
        lines += ["", f"== {notebook} fits (SCALE {part['scale'].iloc[0]})"]
        for quantity, rows in part.groupby("quantity", sort=False):
            unit = rows["unit"].iloc[0]
            shown = rows[["engine", "variant", "method", "estimate", "ci_low", "ci_high", "r2", "n_points"]].rename(
                columns={"estimate": f"estimate_{unit}", "ci_low": f"ci_low_{unit}", "ci_high": f"ci_high_{unit}"})
            lines.append(f"-- {quantity}")
            lines.append(shown.to_string(index=False, float_format=report.short_number, na_rep="-"))
    for notebook, part in heads.groupby("notebook", sort=True):
        state = "" if part["completed"].all() else " — did not complete"
        lines += ["", f"== {notebook} headline numbers (SCALE {part['scale'].iloc[0]}){state}"]
        lines += [f"   {r.name} = {r.value}" for r in part.itertuples() if r.name]
    return "\n".join(lines)
