"""Kill ``ingestlab run`` with SIGKILL at random moments; after one more run nothing may be left.

Each round starts notebook 01 or 03 (smoke) in a private lab directory, sends SIGKILL to the
``ingestlab`` process after a random delay, then runs a small notebook-01 run to completion
in the same lab directory and checks that no server process, server folder, socket
directory or cgroup of the lab is left. Run it under the heavy lock::

    flock /tmp/ingestlab-heavy.lock .venv/bin/python bench/kill_runs.py --rounds 20
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent / "ingestlab"
#: What each round runs: long enough that a kill within ``--max-delay`` lands mid-run on a quiet machine
#: (01 with its smoke three rounds ended in 12 s alone here, so a kill at 15 s found it finished).
NOTEBOOKS = {
    "01": ["-p", "VARIANTS", "sync_on,sync_off", "-p", "ENGINES", "postgres", "-p", "REPEATS", "20"],
    "03": ["-p", "ENGINES", "postgres,mariadb"],
}
FOLLOW_UP = ["run", "01", "--no-progress", "-p", "REPEATS", "1", "-p", "N", "200", "-p", "PROFILE_N", "2",
             "-p", "VARIANTS", "sync_on", "-p", "ENGINES", "postgres"]


def leftovers(lab: Path, owners: set[int] | None = None) -> dict[str, list[str]]:
    """Everything of the lab still present: processes naming the lab folder, server folders, socket dirs, cgroups.

    Socket dirs and cgroups are named by the pid of the process that made them, not by the lab folder:
    with ``owners`` (the killed runs' processes) only theirs count, not those of a process elsewhere on
    the machine (another test's server whose owner was killed a moment ago, before its own reap).
    """
    from ingestlab import cgroupfs, cgroups
    from ingestlab.servers.base import SOCKET_PREFIX, SOCKET_ROOT, is_server_folder, processes_using

    def ours(name: str) -> bool:
        return not _owner_alive(name) and (owners is None or _owner(name) in owners)

    procs = [f"{pid} {_command(pid)}" for pid in processes_using(lab)]
    folders = [p.name for p in lab.iterdir() if is_server_folder(p)] if lab.exists() else []
    sockets = [p.name for p in SOCKET_ROOT.glob(SOCKET_PREFIX + "*")
               if p.name.split("-")[1] in ("postgres", "mariadb") and ours(p.name)]
    groups = [str(g) for root in cgroupfs.roots() if root.exists()
              for g in root.glob(cgroups.PREFIX + "*") if ours("x-x-" + g.name[len(cgroups.PREFIX):] + "-")]
    return {"processes": procs, "server_folders": folders, "socket_dirs": sockets, "cgroups": groups}


def _owner(name: str) -> int | None:
    """The pid in ``<prefix>-<kind>-<pid>-…``."""
    try:
        return int(name.split("-")[2])
    except (IndexError, ValueError):
        return None


def _process_tree(pid: int) -> set[int]:
    """``pid`` and every process below it now."""
    import psutil

    try:
        return {pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))}
    except psutil.Error:
        return {pid}


def _command(pid: int) -> str:
    """``pid``'s command line, shortened, so that a process left behind says what it is."""
    import psutil

    try:
        return " ".join(psutil.Process(pid).cmdline())[:160]
    except psutil.Error:
        return "(gone)"


def _owner_alive(name: str) -> bool:
    from ingestlab.servers.base import is_running

    owner = _owner(name)
    return True if owner is None else is_running(owner)


def one_round(i: int, notebook: str, delay_s: float, work: Path, *, follow_up: bool = True,
              owners: set[int] | None = None) -> dict:
    """Start ``notebook``, SIGKILL it after ``delay_s``, then (``follow_up``) run the small follow-up and look.

    Without ``follow_up`` the killed run's leftovers stay for the next round's run to find (its
    reaper's work) and nothing is checked. ``owners`` gathers the killed runs' processes (pass the
    same set to every round whose leftovers a later round's follow-up looks for).
    """
    owners = set() if owners is None else owners
    lab, out = work / "lab", work / f"out-{i}"
    env = {**os.environ, "INGESTLAB_LAB_DIR": str(lab)}
    proc = subprocess.Popen([str(BIN), "run", notebook, "--no-progress", "--out", str(out), *NOTEBOOKS[notebook]],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay_s)
    killed = proc.poll() is None
    if killed:
        owners |= _process_tree(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    if not follow_up:
        return {"round": i, "notebook": notebook, "delay_s": round(delay_s, 2), "killed": killed}
    started = time.monotonic()
    follow = subprocess.run([str(BIN), *FOLLOW_UP, "--out", str(work / f"follow-{i}")], env=env,
                            capture_output=True, text=True, timeout=900)
    left = leftovers(lab, owners)
    return {"round": i, "notebook": notebook, "delay_s": round(delay_s, 2), "killed": killed,
            "follow_up_rc": follow.returncode, "follow_up_s": round(time.monotonic() - started, 1),
            "follow_up_err": follow.stderr.strip().splitlines()[-1:] if follow.returncode else [],
            "left": {k: v for k, v in left.items() if v}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--max-delay", type=float, default=25.0, help="kill within this many seconds of the start")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write every round's outcome here")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="kill-runs-", dir="/var/tmp"))
    os.chmod(work, 0o755)  # the servers' own OS users must traverse it
    rounds = []
    try:
        for i in range(args.rounds):
            notebook = "01" if i % 2 == 0 else "03"
            outcome = one_round(i, notebook, rng.uniform(0.0, args.max_delay), work)
            rounds.append(outcome)
            print(json.dumps(outcome), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    clean = [r for r in rounds if not r["left"] and r["follow_up_rc"] == 0]
    print(f"{len(clean)}/{len(rounds)} rounds left nothing behind and the follow-up run succeeded "
          f"({sum(r['killed'] for r in rounds)} runs killed mid-way)")
    if args.json:
        args.json.write_text(json.dumps(rounds, indent=2))
    return 0 if len(clean) == len(rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
