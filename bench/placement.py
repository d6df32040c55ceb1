"""Single-row INSERTs with the client and the server's backend pinned to chosen cores: what placement costs.

    python bench/placement.py [--engine postgres] [--variant sync_off] [--statements 1000]

For each placement (``free``: the scheduler's choice; ``a/b``: client on core a, backend on
core b) the lab's C loop times ``--statements`` single-row INSERTs into an empty table and the
median is printed. Affinities are restored at the end, also on an error. Run it alone (under
``flock /tmp/ingestlab-measure.lock``): anything else on the machine moves the numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics

from ingestlab import datagen, engines, timing
from ingestlab.engines import Engine, capabilities
from ingestlab.engines.base import STUDY_COLUMNS

PLACEMENTS = ("free", "1/1", "0/0", "0/1", "1/0", "free")


def backend_task(engine: Engine) -> int:
    """The OS task serving the engine's measuring connection (PostgreSQL backend pid, MariaDB thread id)."""
    if engine.NAME.startswith("postgres"):
        return int(engine.execute("SELECT pg_backend_pid()")[0][0])
    return int(engine.execute("SELECT THREAD_OS_ID FROM performance_schema.threads "
                              "WHERE PROCESSLIST_ID = CONNECTION_ID()")[0][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="postgres")
    parser.add_argument("--variant", default="sync_off")
    parser.add_argument("--statements", type=int, default=1000)
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    engine = engines.resolve(args.engine).start()
    task = backend_task(engine)
    try:
        engine.apply_settings(capabilities.of(engine, "commit_variants").VARIANTS.get(args.variant, {}))
        task = backend_task(engine)
        cols = [c for c, _ in STUDY_COLUMNS]
        sql = engine.sql.insert_sql("placement", cols, 1)
        rows = iter(datagen.study_rows(args.statements * len(PLACEMENTS), seed=1))
        for placement in PLACEMENTS:
            client, server = (set(cores), set(cores)) if placement == "free" else (
                {int(placement.split("/")[0])}, {int(placement.split("/")[1])})
            os.sched_setaffinity(0, client)
            os.sched_setaffinity(task, server)
            engine.tables.reset("placement", STUDY_COLUMNS)
            calls = [engine.sender.statement_call(sql, next(rows)) for _ in range(args.statements)]
            frame = timing.time_calls(calls, rows=[1] * len(calls), bytes_=[0] * len(calls))
            ms = statistics.median(frame["elapsed_s"] * 1e3)
            print(f"{engine.NAME} {args.variant} client/backend cores {placement:5s}: median {ms:.4f} ms")
    finally:
        os.sched_setaffinity(0, set(cores))
        try:
            os.sched_setaffinity(task, set(cores))
        except OSError:
            pass
        engine.close()


if __name__ == "__main__":
    main()
