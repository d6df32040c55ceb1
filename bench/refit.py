"""Refit the raw results of a run (made at any revision) with this revision's code and compare with its fits.csv.

A refactor that moves no number leaves every estimate and interval identical. Usage::

    python bench/refit.py RUN_DIR     # RUN_DIR: an `ingestlab run all --out` folder of an earlier revision

Prints one line per notebook (01-06): how many terms were refitted and whether they equal the stored fits
(an older wide fits.csv is read through the notebook's own tidy_fits, so shapes never differ).
"""

from __future__ import annotations

import json
import sys

import pandas as pd

from ingestlab.workloads import (
    csv_scan_analysis,
    group_commit_analysis,
    insert_analysis,
    million_analysis,
    sweeps_analysis,
    upsert_analysis,
)

COLUMNS = ["engine", "variant", "model", "method", "term", "estimate", "ci_low", "ci_high"]


def main(base: str) -> int:
    def load(nb: str, table: str) -> pd.DataFrame:
        return pd.read_parquet(f"{base}/{nb}/{table}.parquet")

    def params(nb: str) -> dict:
        return json.load(open(f"{base}/{nb}/run.json"))["parameters"]

    def sweep_fit():
        samples, seed = load("02_component_sweeps", "results"), params("02_component_sweeps")["seed"]
        return sweeps_analysis.fit(samples, sweeps_analysis.sweep_table(samples, seed=seed), seed=seed)

    cases = {
        "01_insert_anatomy": (insert_analysis, lambda: insert_analysis.fit(load("01_insert_anatomy", "results"))),
        "02_component_sweeps": (sweeps_analysis, sweep_fit),
        "03_upsert_beyond_ram": (upsert_analysis, lambda: upsert_analysis.fit(
            load("03_upsert_beyond_ram", "results"), params("03_upsert_beyond_ram")["batch_rows"])),
        "04_group_commit": (group_commit_analysis, lambda: group_commit_analysis.fit(load("04_group_commit",
                                                                                          "throughput"))),
        "05_million_rows": (million_analysis, lambda: million_analysis.fit(load("05_million_rows", "loads"))),
        "06_csv_scan": (csv_scan_analysis, lambda: csv_scan_analysis.fit(load("06_csv_scan", "results"))),
    }
    differ = 0
    for nb, (analysis, refit) in cases.items():
        new = analysis.tidy_fits(refit())[COLUMNS].reset_index(drop=True)
        old = analysis.tidy_fits(pd.read_csv(f"{base}/{nb}/fits.csv"))[COLUMNS].reset_index(drop=True)
        same = new.equals(old)
        differ += not same
        print(f"{nb}: {len(new)} terms refitted, identical to the stored fits: {same}")
    return int(differ > 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
