"""Harness fidelity: the lab's single-row INSERT latency against the engine's own load tool.

Measures, on the same local server in the same run, the same single-row INSERT through the
lab's timing path (``ingestlab.timing`` over the engine adapter) and through the reference
client shipped with the engine (``pgbench`` for PostgreSQL, ``mariadb-slap`` for MariaDB),
alternating rounds so that drift hits both alike. Prints ``lab_median / reference_avg`` per engine and saves every raw
sample with the run's metadata under ``data/results/bench_insert_fidelity/``.

Usage: ``python bench/insert_fidelity.py [--n 1000] [--rounds 8] [--engines postgres,mariadb]``
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ingestlab import datagen
from ingestlab.engines import Engine
from ingestlab.engines.base import SEED_COLUMNS
from ingestlab.results import Run
from ingestlab.timing import time_statements

#: Target ratio per engine (the lab's timing path may cost at most this much more than the
#: engine's own C client); engines without a target are reported only.
TARGETS = {"postgres": 1.10}
TABLE = "bench_insert"
COLS = [c for c, _ in SEED_COLUMNS]


def lab_round(engine: Engine, n: int, start_id: int, *, warmup: bool = False) -> pd.DataFrame:
    """``n`` single-row INSERTs through the lab's timing path (as notebook 01 times them)."""
    sql = engine.insert_sql(TABLE, COLS, 1)
    rows = datagen.seed_rows(n, start_id=start_id, seed=abs(start_id))
    return time_statements(lambda r: engine.execute(sql, r), rows, rows=[1] * n,
                           bytes_=[datagen.row_bytes(r) for r in rows], warmup=n if warmup else 0)


def pgbench_round(engine: Engine, n: int) -> float:
    """Average latency (ms) reported by ``pgbench -n -c 1 -t n`` for the same INSERT."""
    from ingestlab.servers.postgres import bin_dir

    script = (f"\\set id random(1, 1000000000)\n"
              f"INSERT INTO {engine.quote(TABLE)} ({', '.join(map(engine.quote, COLS))}) "
              f"VALUES (:id, 'benchname', 1234.56, '2024-01-15');\n")
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    kw = engine.server.connect_kwargs()
    out = subprocess.run([str(bin_dir() / "pgbench"), "-n", "-c", "1", "-t", str(n), "-f", f.name,
                          "-h", kw["host"], "-U", kw["user"], kw["dbname"]],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PGPASSWORD": kw["password"]}).stdout
    Path(f.name).unlink()
    return float(re.search(r"latency average = ([0-9.]+) ms", out).group(1))


def slap_round(engine: Engine, n: int) -> float:
    """Average latency (ms) of ``mariadb-slap`` running the same INSERT ``n`` times on one connection.

    ``mariadb-slap`` ships with the server (same version, nothing to install); sysbench would
    need installing and a Lua script for this one statement. Like the lab it connects over the
    server's socket, in autocommit, and repeats one literal statement; it prints the run's
    seconds with three decimals, so ``n`` ≥ 1000 keeps that rounding under 0.5 µs per statement.
    Its connect time (well under a millisecond) is inside its run.
    """
    from ingestlab.servers.mariadb import find_binary

    query = (f"INSERT INTO {engine.quote(TABLE)} ({', '.join(map(engine.quote, COLS))}) "
             f"VALUES (1, 'benchname', 1234.56, '2024-01-15')")
    kw = engine.server.connect_kwargs()
    out = subprocess.run([str(find_binary("mariadb-slap")), "--no-defaults", f"--socket={kw['unix_socket']}",
                          f"--user={kw['user']}", f"--create-schema={kw['database']}", "--no-drop",
                          f"--query={query}", "--concurrency=1", "--iterations=1", f"--number-of-queries={n}"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "MYSQL_PWD": kw["password"]}).stdout
    seconds = float(re.search(r"Average number of seconds to run all queries: ([0-9.]+) seconds", out).group(1))
    return seconds * 1e3 / n


REFERENCES = {"postgres": ("pgbench", pgbench_round), "mariadb": ("mariadb-slap", slap_round)}


def bench(name: str, n: int, rounds: int, run: Run) -> dict:
    """Alternate lab and reference rounds on one server; return the ratio and its parts."""
    label, reference = REFERENCES[name]
    engine = Engine.get(name)
    ref_avgs = []
    try:
        engine.start()
        run.record_engine(engine, bench="insert_fidelity")
        engine.execute(engine.drop_table_sql(TABLE))
        engine.execute(engine.create_table_sql(TABLE, SEED_COLUMNS))
        # warm-up of both paths: kept in the results, flagged, left out of the ratio
        run.append(lab_round(engine, 200, start_id=-10**9, warmup=True).assign(engine=name, round=-1, path="lab"))
        run.append(pd.DataFrame({"engine": [name], "round": [-1], "path": [label], "avg_ms": [reference(engine, 200)],
                                 "n": [200], "warmup": [True]}), table="reference")
        for i in range(rounds):
            frame = lab_round(engine, n, start_id=i * n)
            run.append(frame.assign(engine=name, round=i, path="lab"))
            ref_avgs.append(reference(engine, n))
            run.append(pd.DataFrame({"engine": [name], "round": [i], "path": [label],
                                     "avg_ms": [ref_avgs[-1]], "n": [n], "warmup": [False]}), table="reference")
    finally:
        engine.close()
    lab = run.table()
    lab_median = float(lab[(lab["engine"] == name) & ~lab["warmup"]]["elapsed_s"].median() * 1e3)
    ref_avg = float(np.mean(ref_avgs))
    return {"engine": name, "reference": label, "lab_median_ms": lab_median, "reference_avg_ms": ref_avg,
            "ratio": lab_median / ref_avg, "target": TARGETS.get(name), "n": n, "rounds": rounds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="statements per round and path")
    parser.add_argument("--rounds", type=int, default=8, help="alternating rounds of lab and reference")
    parser.add_argument("--engines", default=",".join(REFERENCES), help="comma-separated: " + ", ".join(REFERENCES))
    args = parser.parse_args(argv)
    names = [e for e in args.engines.split(",") if e]
    unknown = [e for e in names if e not in REFERENCES]
    if unknown or args.n < 1 or args.rounds < 1:
        parser.error(f"--engines must be among {sorted(REFERENCES)}, --n and --rounds ≥ 1")
    run = Run("bench_insert_fidelity", vars(args))
    results = []
    for name in names:
        results.append(bench(name, args.n, args.rounds, run))
        r = results[-1]
        if r["target"] is None:
            verdict = "(no target yet: reported)"
        else:
            verdict = f"(target ≤ {r['target']}) " + ("ok" if r["ratio"] <= r["target"] else "ABOVE TARGET")
        print(f"{name}: lab_median {r['lab_median_ms']:.4f} ms / {r['reference']}_avg {r['reference_avg_ms']:.4f} ms"
              f" = {r['ratio']:.3f} {verdict}")
    table = pd.DataFrame(results)
    run.save_csv(table, "ratios")
    run.finish(headline={f"ratio[{r['engine']}]": r["ratio"] for r in results})
    print(f"raw samples and metadata: {run.dir}")
    missed = [r["engine"] for r in results if r["target"] is not None and r["ratio"] > r["target"]]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
