"""What a run folder found: every notebook's fits, each under what it measures, and its headline numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ingestlab import report
from ingestlab.errors import ConfigError

#: Columns of :func:`fits`, in order.
COLUMNS = ["notebook", "scale", "quantity", "engine", "variant", "method", "estimate", "ci_low", "ci_high", "unit",
           "r2", "n_points", "loo_in_pi", "model_holds"]


#: What the scales mean for comparisons, as the summary says it.
SCALE_NOTE = {"smoke": "CI-sized, for checking that everything runs: not comparable with paper-scale numbers",
              "paper": "the seeds' sizes: comparable with the published numbers"}


def _runs(out: str | os.PathLike) -> list[tuple[Path, dict]]:
    if not Path(out).is_dir():
        raise ConfigError("RUN_DIR", str(out), "a run folder (the --out of an earlier `ingestlab run`)")
    found = []
    for meta_path in sorted(Path(out).glob("*/run.json")):
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            continue  # a run killed while its metadata was first written has nothing to summarise
        if isinstance(meta, dict) and isinstance(meta.get("notebook"), str) and meta["notebook"]:
            found.append((meta_path.parent, meta))  # a run.json that names no notebook is no run of the lab
    return found


def scale_of(meta: dict) -> str:
    """The run's ``SCALE`` (``smoke``, ``paper``), or ``"-"`` for a notebook without one (one that reads tables).

    Examples
    --------
    >>> scale_of({"parameters": {"scale": "paper"}}), scale_of({"parameters": {"ALPHA": 0.05}})
    ('paper', '-')
    """
    params = meta.get("parameters", {})
    return str(params.get("scale", params.get("SCALE", "-")))


def fits(out: str | os.PathLike) -> pd.DataFrame:
    """Every notebook's fits under ``out`` as one long table, a row per term (:data:`COLUMNS`).

    Each notebook's ``fits.csv`` is in the lab's long form (:data:`ingestlab.results.FIT_COLUMNS`);
    a row's ``quantity`` is its model and term (``overhead: overhead``), and ``scale`` that of the
    run that made it. A ``fits.csv`` in another shape (a run of an older revision), or one whose
    numeric columns hold other text, is left out, and ``attrs["notes"]`` says which and why.

    Raises
    ------
    ConfigError
        When ``out`` is not a folder.
    """
    from ingestlab.results import FIT_COLUMNS

    rows, notes = [], []
    for folder, meta in _runs(out):
        path = folder / "fits.csv"
        if not path.exists():
            continue
        try:
            table = pd.read_csv(path)
        except (OSError, ValueError, pd.errors.ParserError) as exc:
            notes.append(f"{folder.name}: fits.csv left out: it cannot be read ({type(exc).__name__})")
            continue
        if list(table.columns) != FIT_COLUMNS:
            notes.append(f"{folder.name}: fits.csv left out: its columns are not the lab's long form (an older run?)")
            continue
        bad = {c: table.loc[pd.to_numeric(table[c], errors="coerce").isna() & table[c].notna(), c].iloc[0]
               for c in ("estimate", "ci_low", "ci_high", "r2", "n_points")
               if (pd.to_numeric(table[c], errors="coerce").isna() & table[c].notna()).any()}
        if bad:
            notes.append(f"{folder.name}: fits.csv left out: not a number in "
                         + ", ".join(f"{c} ({str(v)[:20]!r})" for c, v in bad.items()))
            continue
        for r in table.to_dict("records"):
            rows.append({"notebook": folder.name, "scale": scale_of(meta), "quantity": f"{r['model']}: {r['term']}",
                         "engine": r["engine"], "variant": r["variant"], "method": r["method"],
                         "estimate": r["estimate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                         "unit": r["unit"], "r2": r["r2"], "n_points": r["n_points"],
                         "loo_in_pi": r["loo_in_pi"], "model_holds": r["model_holds"]})
    table = pd.DataFrame(rows, columns=COLUMNS)
    table.attrs["notes"] = notes
    return table


def held_out_line(fits_table: pd.DataFrame) -> list[str]:
    """One line on how well a notebook's fits predicted what they did not see, from ``fits.csv``'s adequacy columns.

    Each fit (engine, variant, quantity's model, OLS or NLS) counts once: the mean share of its
    held-out levels inside their 95 % prediction intervals, and in how many fits the model held.
    """
    fits = fits_table[fits_table["method"].isin(["ols", "nls"])]
    fits = fits.assign(model=fits["quantity"].str.split(": ").str[0]).drop_duplicates(["engine", "variant", "model"])
    tested = fits["loo_in_pi"].dropna()
    if tested.empty:
        return ["   held-out predictions: none tested (too few levels, or fits without adequacy)"]
    held = [v for v in fits["model_holds"].map(_holds) if v is not None]
    return [f"   held-out predictions inside their 95 % intervals: {tested.mean():.0%} on average over {len(tested)} "
            f"fits; the model held in {sum(held)} of {len(held)} tested fits"]


def prediction_lines(out: str | os.PathLike) -> dict[str, str]:
    """Per notebook, one line on its held-out configuration (``prediction.csv``): how many predictions fell inside.

    Each notebook that ends with "What does the model predict that it did not see?" saves one
    row per configuration it held out, with ``inside`` (the observed median inside the 95 %
    prediction interval); rows without a verdict (``inside`` empty: too few levels, or an interval
    wider than the prediction) are counted apart.
    """
    lines = {}
    for folder, _ in _runs(out):
        path = folder / "prediction.csv"
        try:
            table = pd.read_csv(path)
        except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
            continue  # no prediction section, or nothing predicted (an empty file)
        if "inside" not in table.columns:
            continue
        verdict = table["inside"].map(_holds)
        tested = verdict.dropna().astype(bool)
        untested = len(table) - len(tested)
        text = (f"{int(tested.sum())} of {len(tested)} ({tested.mean():.0%}) inside their 95 % prediction interval"
                if len(tested) else "none tested")
        if untested:
            text += f"; {untested} not tested (too few levels, or an interval too wide to tell)"
        lines[folder.name] = f"   held-out configuration (prediction.csv): {text}"
    return lines


def _holds(value):
    from ingestlab.models import model_holds

    return model_holds(value)


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
        raise ConfigError("RUN_DIR", str(out), "a run folder holding at least one notebook's run (<notebook>/run.json "
                          "written by `ingestlab run`)")
    predicted = prediction_lines(out)
    lines = [f"Run folder {out}"] + [f"  note: {n}" for n in table.attrs.get("notes", [])]
    for scale in sorted(set(heads["scale"]) - {"-"}):
        notebooks = sorted(set(heads.loc[heads["scale"] == scale, "notebook"]))
        lines.append(f"  SCALE {scale} ({', '.join(notebooks)}): {SCALE_NOTE.get(scale, 'see the notebook')}")
    for notebook, part in table.groupby("notebook", sort=True):
        lines += ["", f"== {notebook} fits (SCALE {part['scale'].iloc[0]})"]
        lines += held_out_line(part)
        lines += [predicted[notebook]] if notebook in predicted else []
        for (quantity, unit), rows in part.groupby(["quantity", "unit"], sort=False, dropna=False):
            shown = rows[["engine", "variant", "method", "estimate", "ci_low", "ci_high", "r2", "n_points"]].copy()
            # an interval over two decades wide, or from fewer points than a line's CI needs (3), is no estimate
            vague = [not report.estimable(*(float(v) for v in r[["estimate", "ci_low", "ci_high"]]))
                     or (pd.notna(r["n_points"]) and r["n_points"] < 3) for _, r in shown.iterrows()]
            vague = pd.Series(vague, index=shown.index) & shown["ci_low"].notna()
            for col in ("ci_low", "ci_high"):
                shown[col] = [report.NOT_ESTIMABLE if v else ("-" if pd.isna(x) else report.short_number(x))
                              for v, x in zip(vague, shown[col])]
            lines.append(f"-- {quantity}" + (f" ({unit})" if isinstance(unit, str) and unit else ""))  # σ, κ: no unit
            lines.append(shown.to_string(index=False, float_format=report.short_number, na_rep="-"))
    for notebook, part in heads.groupby("notebook", sort=True):
        state = "" if part["completed"].all() else " — did not complete"
        lines += ["", f"== {notebook} headline numbers (SCALE {part['scale'].iloc[0]}){state}"]
        lines += [f"   {r.name} = {r.value}" for r in part.itertuples() if r.name]
    return "\n".join(lines)
