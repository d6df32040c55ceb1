"""What a pause or a read between two statements does to the next ones: five INSERTs after each kind of gap.

    python bench/observer_pause.py [--engine postgres] [--variant sync_on] [--rounds 200]

Each round runs every kind of gap once, in a shuffled order, each followed by five single-row
INSERTs timed one by one by the lab's C clock; the medians per gap and position are printed.
Run it alone (under ``flock /tmp/ingestlab-measure.lock``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from ingestlab import datagen, engines, timing
from ingestlab.engines import capabilities
from ingestlab.engines.base import STUDY_COLUMNS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="postgres")
    parser.add_argument("--variant", default="sync_on")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    engine = engines.resolve(args.engine).start()
    try:
        engine.apply_settings(capabilities.of(engine, "commit_variants").VARIANTS.get(args.variant, {}))
        cols = [c for c, _ in STUDY_COLUMNS]
        engine.tables.reset("pause", STUDY_COLUMNS)
        engine.tables.reset("pause_probe", STUDY_COLUMNS)
        sql, probe = engine.sql.insert_sql("pause", cols, 1), engine.sql.insert_sql("pause_probe", cols, 1)
        rows = iter(datagen.study_rows(args.rounds * 60, seed=1))
        other = engine.connect()
        postgres = engine.NAME.startswith("postgres")

        def statistics_read() -> None:
            if postgres:
                for query in ("SELECT pg_stat_force_next_flush()", "SELECT sum(total_exec_time) FROM pg_stat_statements",
                              "SELECT sum(fsyncs) FROM pg_stat_io WHERE object = 'wal'", "SELECT wal_records FROM pg_stat_wal"):
                    engine.execute(query)
            else:
                engine.execute("SHOW GLOBAL STATUS LIKE 'Innodb_data_fsyncs'")

        def probe_commit() -> None:
            engine.execute("BEGIN")
            engine.execute(probe, next(rows))
            engine.execute("COMMIT")

        gaps = {"none": lambda: None, "sleep 0.2 ms": lambda: time.sleep(0.0002),
                "sleep 2 ms": lambda: time.sleep(0.002), "SELECT 1": lambda: engine.execute("SELECT 1"),
                "statistics read": statistics_read, "other connection": lambda: engine.execute("SELECT 1", conn=other),
                "commit of a probe": probe_commit}
        times = {g: [[] for _ in range(5)] for g in gaps}
        order = list(gaps)
        for r in range(args.rounds):
            random.Random(r).shuffle(order)
            for gap in order:
                calls = [engine.sender.statement_call(sql, next(rows)) for _ in range(5)]
                gaps[gap]()
                for k, call in enumerate(calls):
                    times[gap][k].append(timing.timed(call).ms)
        other.close()
        for gap, per in times.items():
            print(f"{engine.NAME} {args.variant} after {gap:18s} " + "  ".join(
                f"#{k + 1} {statistics.median(v):.4f}" for k, v in enumerate(per)) + " ms")
    finally:
        engine.close()


if __name__ == "__main__":
    main()
