"""Refit the raw results of a run (made at any revision) with this revision's code and compare with its fits.csv.

A refactor that moves no number leaves every estimate and interval identical. Usage::

    python bench/refit.py RUN_DIR     # RUN_DIR: an `ingestlab run … --out` folder (or one notebook's folder in it)

Prints one line per notebook of the run whose declaration has a ``fit`` (``Notebook.fit``): how many terms were
refitted and whether they equal the stored fits, as a set of terms (the long form of ``fits.csv``: identical, or equal
within floating-point rounding where the rows were summed in another order; an older wide file is said to be
one, not compared).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ingestlab.results import FIT_COLUMNS
from ingestlab.workloads import discover

COLUMNS = ["engine", "variant", "model", "method", "term", "estimate", "ci_low", "ci_high"]
#: Relative difference a refit may show from rows added in another order: the last bits of a double, no more.
ROUNDING = 1e-12


def main(base: str) -> int:
    books = discover()
    folders = [Path(base)] if (Path(base) / "run.json").exists() else sorted(Path(base).glob("*/run.json"))
    folders = [f.parent if f.name == "run.json" else f for f in folders]
    differ, found = 0, 0
    for folder in folders:
        book = books.get(folder.name) or books.get(json.loads((folder / "run.json").read_text()).get("notebook"))
        if book is None or book.fit is None:
            continue  # a notebook that writes no fits.csv
        found += 1
        new = book.fit(folder)[COLUMNS].reset_index(drop=True)
        if not (folder / "fits.csv").exists():
            differ += 1
            print(f"{book.stem}: {len(new)} terms refitted; the run stored no fits.csv to compare with")
            continue
        stored = pd.read_csv(folder / "fits.csv")
        if list(stored.columns) != FIT_COLUMNS:
            differ += 1
            print(f"{book.stem}: {len(new)} terms refitted; the stored fits.csv is not the long form (an older run)")
            continue
        # a fit is a set of terms, compared whatever order the notebook wrote them in (04's follows its run's schedule)
        new, stored = new.sort_values(COLUMNS, ignore_index=True), stored[COLUMNS].sort_values(COLUMNS, ignore_index=True)
        same = new.equals(stored)
        # rows summed in another order than the notebook's (04 reads its samples back in file order) move the last bits
        rounding = (not same and len(new) == len(stored) and new[COLUMNS[:5]].equals(stored[COLUMNS[:5]])
                    and all(np.allclose(new[c], stored[c], rtol=ROUNDING, atol=0, equal_nan=True) for c in COLUMNS[5:]))
        differ += not (same or rounding)
        said = "identical" if same else f"equal within {ROUNDING:g} (floating-point rounding)" if rounding else "DIFFERENT"
        print(f"{book.stem}: {len(new)} terms refitted, {said} to the stored fits")
    if not found:
        print(f"{base}: no run of a notebook that fits (no <notebook>/run.json with a declared fit)")
    return int(differ > 0 or not found)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
