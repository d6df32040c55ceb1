"""Refit the raw results of a run (made at any revision) with this revision's code and compare with its fits.csv.

A refactor that moves no number leaves every estimate and interval identical. Usage::

    python bench/refit.py RUN_DIR     # RUN_DIR: an `ingestlab run … --out` folder (or one notebook's folder in it)

Prints one line per notebook of the run whose declaration has a ``fit`` (``Notebook.fit``): how many terms were
refitted and whether they equal the stored fits (the long form of ``fits.csv``; an older wide file is said to be
one, not compared).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from ingestlab.results import FIT_COLUMNS
from ingestlab.workloads import discover

COLUMNS = ["engine", "variant", "model", "method", "term", "estimate", "ci_low", "ci_high"]


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
        same = new.equals(stored[COLUMNS].reset_index(drop=True))
        differ += not same
        print(f"{book.stem}: {len(new)} terms refitted, identical to the stored fits: {same}")
    if not found:
        print(f"{base}: no run of a notebook that fits (no <notebook>/run.json with a declared fit)")
    return int(differ > 0 or not found)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
