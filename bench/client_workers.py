"""Why MariaDB's lab clients trail mariadb-slap: the same C loop in client processes, in threads, and mariadb-slap.

``bench/group_commit_fidelity.py`` found the lab's 8 and 32 MariaDB clients behind
``mariadb-slap --concurrency=C``. The lab's driver (:class:`ingestlab.concurrency.ClientRun`)
runs one *process* per client; mariadb-slap runs one *thread* per client. Here the lab's own C
loop (:func:`ingestlab.timing.stamp_template`, which releases the GIL) on the same kind of
mysqlclient connection is also run by C threads of this one process, and the three paths
alternate round by round on one local MariaDB, the table emptied before each. Prints each
path's rounds and its ratio to mariadb-slap with the 95 % CI over the rounds
(:func:`ingestlab.models.paired_ratio_ci`), and saves every round with the run's metadata
under ``data/results/bench_client_workers/``.

Usage: ``flock /tmp/ingestlab-measure.lock python bench/client_workers.py [--clients 32] [--rounds 6]``
"""

from __future__ import annotations

import argparse
import sys
import threading

import numpy as np
import pandas as pd
from group_commit_fidelity import TABLE, driver_for, lab_round, slap_round

from ingestlab import models, timing
from ingestlab.concurrency import ID_STRIDE
from ingestlab.engines import Engine
from ingestlab.engines.base import SEED_COLUMNS
from ingestlab.results import Run

#: Measured seconds per round and path, after :data:`WARMUP_S` of warm-up.
SECONDS, WARMUP_S = 2.0, 0.5
#: Statements each thread's stamp buffer holds (more than a round needs on this machine).
CAPACITY = 1 << 16


def threads_round(engine: Engine, clients: int, template: bytes) -> float:
    """Statements per second of ``clients`` threads, each on its own connection, running the lab's C loop."""
    conns = [type(engine).client(engine.connect_kwargs()) for _ in range(clients)]
    for conn in conns:
        conn.open_sender({})
    senders = [conn.native_sender() for conn in conns]
    bufs = [np.zeros(timing.STAMP_HEADER + timing.STAMP_WIDTH * CAPACITY, dtype=np.int64) for _ in conns]
    start = timing.now_ns() + int(0.2e9)
    measure, end = start + int(WARMUP_S * 1e9), start + int((WARMUP_S + SECONDS) * 1e9)
    counts = [0] * clients

    def client(k: int) -> None:
        buf = memoryview(bufs[k]).cast("B").cast("q")
        timing.sleep_until(start)
        timing.stamp_template(senders[k], template, k * ID_STRIDE, buf, measure, first_ns=start, interval_ns=0)
        before = buf[0] + buf[1]
        timing.stamp_template(senders[k], template, k * ID_STRIDE, buf, end, first_ns=start, interval_ns=0)
        counts[k] = buf[0] + buf[1] - before

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for conn in conns:
            conn.close()
    return sum(counts) / SECONDS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds of the three paths (≥ 2)")
    args = parser.parse_args(argv)
    if args.rounds < 2 or args.clients < 1:
        parser.error("--rounds ≥ 2, --clients ≥ 1")
    run = Run("bench_client_workers", vars(args))
    engine = Engine.get("mariadb").start()
    rows = []
    try:
        run.record_engine(engine, bench="client_workers")
        template = driver_for(engine, 1, SECONDS).statement_template()
        for i in range(args.rounds):  # the order alternates: no path always follows another
            for path in ("processes", "threads", "mariadb-slap") if i % 2 == 0 else ("mariadb-slap", "threads",
                                                                                    "processes"):
                engine.reset_table(TABLE, SEED_COLUMNS)
                if path == "processes":
                    rate = lab_round(engine, args.clients, SECONDS)["statements_per_s"]
                elif path == "threads":
                    rate = threads_round(engine, args.clients, template)
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
        r = models.paired_ratio_ci(rates[path].to_numpy(), rates["mariadb-slap"].to_numpy())
        print(f"C={args.clients} {path} / mariadb-slap = {r['ratio']:.3f} (95 % CI {r['ci_low']:.3f}–"
              f"{r['ci_high']:.3f}, {r['rounds']} rounds)")
    run.finish()
    print(f"raw rounds and metadata: {run.dir}")
    return 0


if __name__ == "__main__":  # the driver's forkserver re-imports this module: run only as a script
    sys.exit(main())
