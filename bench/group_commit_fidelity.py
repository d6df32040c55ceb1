"""Driver fidelity under concurrency: the lab's clients against pgbench and mariadb-slap, statements per second.

For C in 1, 8, 32 clients, on the same local server in the same run, the same single-row
INSERT is driven by the lab's concurrency driver (:class:`ingestlab.concurrency.ClientRun`,
closed loop, its clients threads of one process running the lab's C loop, as the tools'
are) and by the engine's own C load tool, alternating rounds. Like is compared with like:

* **Same statement text and protocol.** Both send the statement the lab's driver renders
  (:meth:`ClientRun.statement_template`) as one simple-protocol text query: pgbench
  (``-n -M simple -c C -j C -T t``) runs a script made from it with the id as ``:id``;
  ``mariadb-slap --concurrency=C`` a file of it with fresh ids, in the lab's character set.
* **Same duration, connections excluded.** The lab measures ``t`` seconds after a warm-up,
  its clients already connected; pgbench runs ``-T t`` and reports tps "without initial
  connection time". mariadb-slap runs a number of statements (about ``t`` seconds' worth)
  and its time includes its clients' connects, so a run of one statement per client is
  timed too and its time subtracted (printed).
* **Same server, same settings**, one table, emptied before every round.

Prints ``lab / reference`` statements per second per engine and C with its 95 % CI over the
rounds (targets: the ratio ≥ 0.95 and its lower bound ≥ 0.93: the lab's clients must not be
what limits the rate) and, to show where the CPU goes on this machine,
the client's and the server's CPU per statement on each path: the lab's clients measure
their own (their threads' CPU clocks), the reference tool's comes from ``getrusage`` of its process,
the server's from a cpuacct cgroup holding the server and every backend it forks
(:class:`ingestlab.cgroups.CpuAccount`; printed as n/a where cgroups are not writable). Every
round is saved with the run's metadata under ``data/results/bench_group_commit_fidelity/``.

Usage: ``python bench/group_commit_fidelity.py [--seconds 1] [--rounds 40] [--clients 1,8,32] [--engines postgres,mariadb]``
(40 rounds of 1 s: rounds vary by ~7 % whatever their length, so more and shorter rounds narrow the CI
for the same time; bench/README.md).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from insert_fidelity import loadavg

from ingestlab import cgroups, datagen, engines, intervals
from ingestlab.concurrency import ClientRun
from ingestlab.engines import Engine
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.results import Run

#: Lowest acceptable lab / reference ratio of statements per second (the point estimate) ...
TARGET = 0.95
#: ... and the lowest acceptable lower bound of its 95 % CI over the rounds.
TARGET_LOW = 0.93
TABLE = "bench_group_commit"
COLS = [c for c, _ in STUDY_COLUMNS]
#: Warm-up of the lab's clients before the measured seconds (kept out of the rate).
WARMUP_S = 0.5
#: Distinct statements in mariadb-slap's query file (it cycles through them).
SLAP_STATEMENTS = 1000


def driver_for(engine: Engine, clients: int, seconds: float, workers: str | None = None) -> ClientRun:
    """The lab's driver for one round: ``clients`` clients, single-row INSERTs, closed loop (``workers``: its default)."""
    return ClientRun(engine, TABLE, COLS, datagen.study_rows(1, start_id=0)[0], clients=clients, rows_per_insert=1,
                     warmup_s=WARMUP_S, duration_s=seconds, workers=workers)


def lab_round(engine: Engine, clients: int, seconds: float, workers: str | None = None) -> dict:
    """Statements per second of the lab's driver, and its clients' CPU per measured statement."""
    driver = driver_for(engine, clients, seconds, workers)
    samples = driver.run()
    measured = samples[~samples["warmup"]]
    window = (measured["started_ns"] + measured["elapsed_s"] * 1e9).max() - driver.measure_start_ns
    cpu = driver.cpu_table()
    return {"statements_per_s": len(measured) / (window / 1e9), "statements": len(samples),
            "client_cpu_us_per_statement": cpu["cpu_ns"].sum() / cpu["statements"].sum() / 1e3,
            "client_cpu_share_max": cpu["cpu_share"].max(), "timer": ",".join(sorted(set(samples["timer"]))),
            "workers": driver.workers}


def _child_cpu_ns() -> int:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return int((usage.ru_utime + usage.ru_stime) * 1e9)


def pgbench_round(engine: Engine, clients: int, seconds: float) -> dict:
    """``pgbench -n -M simple -c C -j C -T t`` on the lab's statement: tps without connection time, its CPU."""
    from ingestlab.engines.postgres.server import bin_dir

    template = driver_for(engine, 1, seconds).statement_template()
    script = template.replace(b"%d", b":id", 1).replace(b"%%", b"%").decode()
    kw = engine.server.connect_kwargs()
    with tempfile.TemporaryDirectory(prefix="ingestlab-pgbench-") as folder:
        path = Path(folder) / "insert.sql"
        path.write_text("\\set id random(1, 1000000000)\n" + script + ";\n")
        cpu0 = _child_cpu_ns()
        out = subprocess.run([str(bin_dir() / "pgbench"), "-n", "-M", "simple", "-c", str(clients), "-j",
                              str(clients), "-T", str(round(seconds)), "-f", str(path), "-h", kw["host"], "-U",
                              kw["user"], kw["dbname"]], capture_output=True, text=True, check=True,
                             env={**os.environ, "PGPASSWORD": kw.get("password") or ""}).stdout
        cpu = _child_cpu_ns() - cpu0
    n = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    return {"statements_per_s": float(re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out).group(1)),
            "statements": n, "client_cpu_us_per_statement": cpu / n / 1e3}


def _slap(engine: Engine, clients: int, n: int, path: Path) -> tuple[float, int, int]:
    """One mariadb-slap run of ``n`` statements from ``path``: its seconds, the rows it wrote, its CPU (ns)."""
    from ingestlab.engines.mariadb.server import find_binary

    kw = engine.server.connect_kwargs()
    before, cpu0 = engine.tables.count_rows(TABLE), _child_cpu_ns()
    out = subprocess.run([str(find_binary("mariadb-slap")), "--no-defaults", f"--socket={kw['unix_socket']}",
                          f"--user={kw['user']}", f"--create-schema={kw['database']}", "--no-drop",
                          f"--init-command=SET NAMES {engine.CHARSET}", f"--query={path}", "--delimiter=;",
                          f"--concurrency={clients}", "--iterations=1", f"--number-of-queries={n}"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "MYSQL_PWD": kw.get("password") or ""}).stdout
    cpu = _child_cpu_ns() - cpu0
    seconds = float(re.search(r"Average number of seconds to run all queries: ([0-9.]+) seconds", out).group(1))
    return seconds, engine.tables.count_rows(TABLE) - before, cpu


def slap_round(engine: Engine, clients: int, seconds: float, expected_rate: float) -> dict:
    """``mariadb-slap --concurrency=C`` on the lab's statements, about ``seconds`` of them; its connects taken out.

    Its rate counts the rows it wrote (not the statements asked for) over its time minus
    the time of a run of one statement per client (connects plus one round trip each).
    """
    template = driver_for(engine, 1, seconds).statement_template()
    n = max(clients * 100, int(expected_rate * seconds))
    with tempfile.TemporaryDirectory(prefix="ingestlab-slap-") as folder:
        path = Path(folder) / "insert.sql"
        path.write_bytes(b";\n".join(template % (10**15 + i) for i in range(SLAP_STATEMENTS)))
        connect_s, _, _ = _slap(engine, clients, clients, path)
        run_s, written, cpu = _slap(engine, clients, n, path)
    return {"statements_per_s": written / max(run_s - connect_s, 1e-3), "statements": written,
            "client_cpu_us_per_statement": cpu / written / 1e3, "connect_s": connect_s}


def bench(name: str, clients_list: list[int], seconds: float, rounds: int, run: Run) -> list[dict]:
    """Alternate lab and reference rounds per C on one server; one result per C."""
    engine = engines.get(name)
    results = []
    try:
        engine.start()
        run.record_engine(engine, bench="group_commit_fidelity")
        server_cpu = cgroups.CpuAccount(label="server-cpu").open()
        try:
            server_cpu.add(cgroups.process_tree(engine.server.pid()))
            if server_cpu.reason:
                run.note(f"server CPU not measured: {server_cpu.reason}")
            for clients in clients_list:
                rows = []
                for i in range(rounds):
                    for path in (("lab", "reference") if i % 2 == 0 else ("reference", "lab")):
                        engine.tables.reset(TABLE, STUDY_COLUMNS)
                        cpu0 = server_cpu.usage_ns()
                        if path == "lab":
                            r = lab_round(engine, clients, seconds)
                        elif name == "postgres":
                            r = pgbench_round(engine, clients, seconds)
                        else:
                            lab_rates = [x["statements_per_s"] for x in rows if x["path"] == "lab"]
                            r = slap_round(engine, clients, seconds, lab_rates[-1] if lab_rates else 5000.0)
                        r["server_cpu_us_per_statement"] = (
                            (server_cpu.usage_ns() - cpu0) / r["statements"] / 1e3 if cpu0 is not None else float("nan"))
                        rows.append({"engine": name, "clients": clients, "round": i, "path": path, **r})
                frame = pd.DataFrame(rows)
                run.append(frame.assign(warmup=False))
                results.append(summarise(name, clients, frame, seconds, rounds))
        finally:
            server_cpu.close()
    finally:
        engine.close()
    return results


def summarise(name: str, clients: int, frame: pd.DataFrame, seconds: float, rounds: int) -> dict:
    """One C: mean statements/s and CPU per statement of each path, and their ratio with its 95 % CI.

    The ratio is the geometric mean of the rounds' ``lab / reference`` rates (the two paths of a
    round ran one after the other), its CI the t interval over the rounds
    (:func:`ingestlab.intervals.paired_ratio_ci`).
    """
    mean = frame.groupby("path")[["statements_per_s", "client_cpu_us_per_statement",
                                  "server_cpu_us_per_statement"]].mean()
    busiest = frame.loc[frame["path"] == "lab", "client_cpu_share_max"].max()
    timer = ",".join(sorted(set(frame.loc[frame["path"] == "lab", "timer"])))
    workers = ",".join(sorted(set(frame.loc[frame["path"] == "lab", "workers"])))
    lab, ref = mean.loc["lab"], mean.loc["reference"]
    rates = frame.pivot(index="round", columns="path", values="statements_per_s").dropna()
    r = intervals.paired_ratio_ci(rates["lab"].to_numpy(), rates["reference"].to_numpy())
    return {"engine": name, "clients": clients, "reference": REFERENCES[name],
            "lab_statements_per_s": lab["statements_per_s"], "reference_statements_per_s": ref["statements_per_s"],
            "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "target": TARGET,
            "target_low": TARGET_LOW,
            "lab_client_cpu_us": lab["client_cpu_us_per_statement"],
            "reference_client_cpu_us": ref["client_cpu_us_per_statement"],
            "lab_server_cpu_us": lab["server_cpu_us_per_statement"],
            "reference_server_cpu_us": ref["server_cpu_us_per_statement"], "lab_client_cpu_share_max": busiest,
            "timer": timer, "workers": workers, "seconds": seconds, "rounds": rounds}


REFERENCES = {"postgres": "pgbench", "mariadb": "mariadb-slap"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=1, help="measured seconds per round and path (whole: pgbench -T)")
    parser.add_argument("--rounds", type=int, default=40,
                        help="alternating rounds of lab and reference per C (≥ 2: the CI is over the rounds)")
    parser.add_argument("--clients", default="1,8,32", help="comma-separated client counts")
    parser.add_argument("--engines", default=",".join(REFERENCES), help="comma-separated: " + ", ".join(REFERENCES))
    args = parser.parse_args(argv)
    names = [e for e in args.engines.split(",") if e]
    clients = [int(c) for c in args.clients.split(",") if c]
    if any(e not in REFERENCES for e in names) or args.seconds < 1 or args.rounds < 2 or min(clients) < 1:
        parser.error(f"--engines among {sorted(REFERENCES)}, --seconds ≥ 1, --rounds ≥ 2, --clients ≥ 1")
    run = Run("bench_group_commit_fidelity", vars(args))
    print(f"load average before: {loadavg()}; {os.cpu_count()} CPUs")
    results = []
    for name in names:
        for r in bench(name, clients, args.seconds, args.rounds, run):
            results.append(r)
            verdict = "ok" if met(r) else "BELOW TARGET"
            print(f"{name} C={r['clients']}: lab ({r['timer']} loop) {r['lab_statements_per_s']:,.0f} stmt/s / {r['reference']} "
                  f"{r['reference_statements_per_s']:,.0f} stmt/s = {r['ratio']:.3f} (95 % CI {r['ci_low']:.3f}–"
                  f"{r['ci_high']:.3f}, {args.rounds} rounds; target ≥ {TARGET}, lower bound ≥ {TARGET_LOW}) {verdict}; "
                  f"CPU µs per statement: client {r['lab_client_cpu_us']:.0f} vs {r['reference_client_cpu_us']:.0f}, "
                  f"server {r['lab_server_cpu_us']:.0f} vs {r['reference_server_cpu_us']:.0f}; busiest lab client "
                  f"on CPU {r['lab_client_cpu_share_max']:.0%} of its wall clock (clients: {r['workers']})")
    print(f"load average after: {loadavg()}")
    run.save_csv(pd.DataFrame(results), "ratios")
    run.finish(headline={f"ratio[{r['engine']} C={r['clients']}]": r["ratio"] for r in results})
    print(f"raw rounds and metadata: {run.dir}")
    return 0 if all(met(r) for r in results) else 1


def met(result: dict) -> bool:
    """Whether a C's ratio meets the targets: point ≥ :data:`TARGET`, CI lower bound ≥ :data:`TARGET_LOW`."""
    return result["ratio"] >= TARGET and result["ci_low"] >= TARGET_LOW


if __name__ == "__main__":  # the driver's forkserver re-imports this module: run only as a script
    sys.exit(main())
