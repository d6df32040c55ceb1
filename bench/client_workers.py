"""Why MariaDB's lab clients trail mariadb-slap: the same C loop in client processes, in threads, and mariadb-slap.

``bench/group_commit_fidelity.py`` found the lab's 8 and 32 MariaDB clients behind
``mariadb-slap --concurrency=C`` when the lab's driver (:class:`ingestlab.concurrency.ClientRun`)
ran one *process* per client; mariadb-slap runs one *thread* per client. Here the driver runs
the same C loop (:func:`ingestlab.timing.stamp_template`, which releases the GIL) both ways --
``workers="processes"`` and ``workers="threads"`` (its default since) -- and the three paths
alternate round by round on one local MariaDB, the table emptied before each. Prints each
path's rounds and its ratio to mariadb-slap with the 95 % CI over the rounds
(:func:`ingestlab.intervals.paired_ratio_ci`), and saves every round with the run's metadata
under ``data/results/bench_client_workers/``.

Usage: ``flock /tmp/ingestlab-measure.lock python bench/client_workers.py [--clients 32] [--rounds 6]``
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd
from group_commit_fidelity import TABLE, lab_round, slap_round

from ingestlab import engines, intervals
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.results import Run

#: Measured seconds per round and path, after the driver's warm-up.
SECONDS = 2.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds of the three paths (≥ 2)")
    args = parser.parse_args(argv)
    if args.rounds < 2 or args.clients < 1:
        parser.error("--rounds ≥ 2, --clients ≥ 1")
    run = Run("bench_client_workers", vars(args))
    engine = engines.get("mariadb").start()
    rows = []
    try:
        run.record_engine(engine, bench="client_workers")
        for i in range(args.rounds):  # the order alternates: no path always follows another
            for path in ("processes", "threads", "mariadb-slap") if i % 2 == 0 else ("mariadb-slap", "threads",
                                                                                    "processes"):
                engine.tables.reset(TABLE, STUDY_COLUMNS)
                if path in ("processes", "threads"):
                    rate = lab_round(engine, args.clients, SECONDS, workers=path)["statements_per_s"]
                else:
                    last = [r["statements_per_s"] for r in rows if r["path"] == "processes"]
                    rate = slap_round(engine, args.clients, SECONDS, last[-1] if last else 20_000.0)["statements_per_s"]
                rows.append({"round": i, "path": path, "clients": args.clients, "statements_per_s": rate})
            print(i, {r["path"]: round(r["statements_per_s"]) for r in rows if r["round"] == i}, flush=True)
    finally:
        engine.close()
    frame = pd.DataFrame(rows)
    run.append(frame.assign(warmup=False))
    rates = frame.pivot(index="round", columns="path", values="statements_per_s")
    for path in ("processes", "threads"):
        r = intervals.paired_ratio_ci(rates[path].to_numpy(), rates["mariadb-slap"].to_numpy())
        print(f"C={args.clients} {path} / mariadb-slap = {r['ratio']:.3f} (95 % CI {r['ci_low']:.3f}–"
              f"{r['ci_high']:.3f}, {r['rounds']} rounds)")
    run.finish()
    print(f"raw rounds and metadata: {run.dir}")
    return 0


if __name__ == "__main__":  # the driver's forkserver re-imports this module: run only as a script
    sys.exit(main())
