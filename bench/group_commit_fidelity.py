"""Driver fidelity under concurrency: the lab's clients against pgbench and mariadb-slap, statements per second.

For C in 1, 8, 32 clients, on the same local server in the same run, the same single-row
INSERT is driven by the lab's concurrency driver (:class:`ingestlab.concurrency.ClientRun`,
one process per client, closed loop) and by the engine's own C load tool
(``pgbench -n -c C -j C -T t``; ``mariadb-slap --concurrency=C``), alternating rounds.
Prints ``lab / reference`` statements per second per engine and C (target ≥ 0.95: the
lab's clients must not be what limits the rate) and saves every round with the run's
metadata under ``data/results/bench_group_commit_fidelity/``.

Usage: ``python bench/group_commit_fidelity.py [--seconds 3] [--rounds 2] [--clients 1,8,32] [--engines postgres,mariadb]``
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from ingestlab import datagen, timing
from ingestlab.concurrency import ClientRun
from ingestlab.engines import Engine
from ingestlab.engines.base import SEED_COLUMNS
from ingestlab.results import Run

#: Lowest acceptable lab / reference ratio of statements per second.
TARGET = 0.95
TABLE = "bench_group_commit"
COLS = [c for c, _ in SEED_COLUMNS]


def literal_insert(engine: Engine, id_expr: str) -> str:
    """The benchmark's INSERT with literal values (the reference tools send it as text)."""
    return (f"INSERT INTO {engine.quote(TABLE)} ({', '.join(map(engine.quote, COLS))}) "
            f"VALUES ({id_expr}, 'benchname', 1234.56, '2024-01-15')")


def lab_rate(engine: Engine, clients: int, seconds: float) -> float:
    """Statements per second of the lab's driver: ``clients`` processes, single-row INSERTs, closed loop."""
    driver = ClientRun(engine, TABLE, COLS, datagen.seed_rows(1, start_id=0)[0], clients=clients, rows_per_insert=1,
                       warmup_s=0.5, duration_s=seconds)
    samples = driver.run()
    measured = samples[~samples["warmup"]]
    window = (measured["started_ns"] + measured["elapsed_s"] * 1e9).max() - driver.measure_start_ns
    return len(measured) / (window / 1e9)


def pgbench_rate(engine: Engine, clients: int, seconds: float) -> float:
    """``tps`` of ``pgbench -n -c C -j C -T t`` running the same INSERT (connections excluded)."""
    from ingestlab.servers.postgres import bin_dir

    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write("\\set id random(1, 1000000000)\n" + literal_insert(engine, ":id") + ";\n")
    kw = engine.server.connect_kwargs()
    out = subprocess.run([str(bin_dir() / "pgbench"), "-n", "-c", str(clients), "-j", str(clients), "-T",
                          str(max(1, round(seconds))), "-f", f.name, "-h", kw["host"], "-U", kw["user"], kw["dbname"]],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PGPASSWORD": kw.get("password") or ""}).stdout
    Path(f.name).unlink()
    return float(re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out).group(1))


def slap_rate(engine: Engine, clients: int, seconds: float, expected_rate: float) -> float:
    """Statements per second of ``mariadb-slap --concurrency=C`` running as many INSERTs as the lab did in ``seconds``.

    mariadb-slap runs a fixed number of queries, split across its clients; its time includes
    connecting (well under a millisecond per client on the socket).
    """
    from ingestlab.servers.mariadb import find_binary

    n = max(clients * 100, int(expected_rate * seconds))
    kw = engine.server.connect_kwargs()
    with timing.Stopwatch() as sw:
        out = subprocess.run([str(find_binary("mariadb-slap")), "--no-defaults", f"--socket={kw['unix_socket']}",
                              f"--user={kw['user']}", f"--create-schema={kw['database']}", "--no-drop",
                              f"--query={literal_insert(engine, '1')}", f"--concurrency={clients}", "--iterations=1",
                              f"--number-of-queries={n}"], capture_output=True, text=True, check=True,
                             env={**os.environ, "MYSQL_PWD": kw.get("password") or ""}).stdout
    seconds_run = float(re.search(r"Average number of seconds to run all queries: ([0-9.]+) seconds", out).group(1))
    return n / (seconds_run if seconds_run > 0 else sw.seconds)



def bench(name: str, clients_list: list[int], seconds: float, rounds: int, run: Run) -> list[dict]:
    """Alternate lab and reference rounds per C on one server; one result per C."""
    engine = Engine.get(name)
    results = []
    try:
        engine.start()
        run.record_engine(engine, bench="group_commit_fidelity")
        engine.reset_table(TABLE, SEED_COLUMNS)
        for clients in clients_list:
            lab, ref = [], []
            for i in range(rounds):
                lab.append(lab_rate(engine, clients, seconds))
                ref.append(pgbench_rate(engine, clients, seconds) if name == "postgres"
                           else slap_rate(engine, clients, seconds, lab[-1]))
                run.append(pd.DataFrame({"engine": [name], "clients": [clients], "round": [i],
                                         "lab_statements_per_s": [lab[-1]], "reference_statements_per_s": [ref[-1]],
                                         "warmup": [False]}))
            results.append({"engine": name, "clients": clients, "reference": REFERENCES[name],
                            "lab_statements_per_s": sum(lab) / rounds, "reference_statements_per_s": sum(ref) / rounds,
                            "ratio": sum(lab) / sum(ref), "target": TARGET, "seconds": seconds, "rounds": rounds})
    finally:
        engine.close()
    return results


REFERENCES = {"postgres": "pgbench", "mariadb": "mariadb-slap"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per round and path")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of lab and reference per C")
    parser.add_argument("--clients", default="1,8,32", help="comma-separated client counts")
    parser.add_argument("--engines", default=",".join(REFERENCES), help="comma-separated: " + ", ".join(REFERENCES))
    args = parser.parse_args(argv)
    names = [e for e in args.engines.split(",") if e]
    clients = [int(c) for c in args.clients.split(",") if c]
    if any(e not in REFERENCES for e in names) or args.seconds <= 0 or args.rounds < 1 or min(clients) < 1:
        parser.error(f"--engines among {sorted(REFERENCES)}, --seconds > 0, --rounds ≥ 1, --clients ≥ 1")
    run = Run("bench_group_commit_fidelity", vars(args))
    results = []
    for name in names:
        for r in bench(name, clients, args.seconds, args.rounds, run):
            results.append(r)
            verdict = "ok" if r["ratio"] >= TARGET else "BELOW TARGET"
            print(f"{name} C={r['clients']}: lab {r['lab_statements_per_s']:,.0f} stmt/s / {r['reference']} "
                  f"{r['reference_statements_per_s']:,.0f} stmt/s = {r['ratio']:.3f} (target ≥ {TARGET}) {verdict}")
    run.save_csv(pd.DataFrame(results), "ratios")
    run.finish(headline={f"ratio[{r['engine']} C={r['clients']}]": r["ratio"] for r in results})
    print(f"raw rounds and metadata: {run.dir}")
    return 0 if all(r["ratio"] >= TARGET for r in results) else 1


if __name__ == "__main__":  # the driver's forkserver re-imports this module: run only as a script
    sys.exit(main())
