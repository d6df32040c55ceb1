"""Harness fidelity of the bulk path: the lab's COPY against ``psql \\copy`` of the same rows, same server, same run.

Loads notebook 05's table (``demo``, the seed's rows) through the lab's bulk path
(``PostgresBulkLoad.prepare``: COPY FROM STDIN from psycopg2, the CSV encoded before the clock
as every INSERT is rendered before it; MariaDB: LOAD DATA LOCAL through a pipe) and through the
engine's own client reading the same rows from a CSV file (the ``native_load`` capability: ``psql
\\copy``; MariaDB: ``mariadb --local-infile``), alternating, every load into a freshly created
table and its rows counted. Prints ``lab_median / native_median`` per engine with a bootstrap CI,
and its inverse, the lab's share of the native client's rows per second (target ≥ 0.95; a
ratio, not a timed test) and saves every load with the run's metadata under
``data/results/bench_copy_fidelity/``.

Usage: ``python bench/copy_fidelity.py [--rows 1000000] [--rounds 10] [--engines postgres,mariadb]``

The defaults give loads of about 1–1.6 s: at 200 000 rows (0.2–0.4 s) five loads left a CI of ±15–40 %.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from ingestlab import engines, intervals
from ingestlab.engines.capabilities import LoadSetting
from ingestlab.results import Run
from ingestlab.workloads import million

DEFAULT = LoadSetting("the server's defaults")
#: Least share of the native client's rows per second the lab's bulk path must reach on a quiet machine.
TARGET = 0.95


def bench(name: str, rows: int, rounds: int, run: Run) -> dict:
    """``rounds`` alternating pairs of loads (lab bulk path, native client) after one warm-up pair."""
    data = million.make_data(rows, tag="bench")
    engine = engines.get(name)
    frames = []
    try:
        engine.start()
        run.record_engine(engine)
        for round_no in range(-1, rounds):
            for method in ("bulk", "native_client"):
                row = million.load_once(engine, method, DEFAULT, data, batch_rows=1000)
                frames.append(pd.DataFrame([{**row, "engine": name, "round": round_no, "warmup": round_no < 0}]))
    finally:
        engine.close()
        data.remove()
    loads = pd.concat(frames, ignore_index=True)
    run.append(loads)
    measured = loads[~loads["warmup"]]
    lab = measured.loc[measured["method"] == "bulk", "seconds"]
    native = measured.loc[measured["method"] == "native_client", "seconds"]
    return {"engine": name, "lab_median_s": lab.median(), "native_median_s": native.median(),
            **intervals.ratio_ci(lab, native)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--engines", default="postgres,mariadb")
    args = parser.parse_args(argv)
    run = Run("bench_copy_fidelity", vars(args))
    results = []
    for name in args.engines.split(","):
        reason = engines.class_of(name).unavailable_reason()
        if reason:
            print(f"{name}: skipped: {reason}")
            run.note(f"{name}: skipped: {reason}")
            continue
        r = bench(name, args.rows, args.rounds, run)
        results.append(r)
        rate, low, high = 1 / r["ratio"], 1 / r["ci_high"], 1 / r["ci_low"]
        verdict = "ok" if rate >= TARGET else "BELOW TARGET"
        print(f"{name}: lab bulk path {r['lab_median_s']:.3f} s / native client {r['native_median_s']:.3f} s = "
              f"{r['ratio']:.3f} (95 % CI {r['ci_low']:.3f}–{r['ci_high']:.3f}), {args.rows:,} rows; the lab loads at "
              f"{rate:.3f} (95 % CI {low:.3f}–{high:.3f}) of the native client's rows/s (target ≥ {TARGET}) {verdict}")
    run.save_csv(pd.DataFrame(results), "ratios")
    run.finish()
    print(f"raw loads and metadata: {run.dir}")
    return 0 if all(1 / r["ratio"] >= TARGET for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
