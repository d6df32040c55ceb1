"""Runs of one notebook at two git revisions, in alternation, each with its own code: the runs that call a change."""

from __future__ import annotations

import datetime as dt
import filecmp
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from ingestlab import _paths
from ingestlab.errors import ConfigError, RunError

#: The file, in the output folder, that records the revisions, the order and each run.
ORDER_FILE = "alternate.json"
#: Where each revision is checked out (``<lab dir>/revisions/<sha>``): its own code, notebooks and C half.
REVISIONS_SUBDIR = "revisions"
#: Most runs a side one command makes (a typo of 1000 would take days).
MAX_RUNS = 200
#: The exit code of a notebook that failed (``ingestlab run``'s), when a run fails without one of its own.
EXIT_RUN_FAILED = 4


def resolve(revision: str, name: str, repo: Path = _paths.REPO) -> str:
    """The full commit id of ``revision`` in ``repo`` (``git rev-parse --verify``); a one-line refusal otherwise.

    Raises
    ------
    ConfigError
        When ``revision`` names no commit.
    """
    if not isinstance(revision, str) or not revision.strip() or revision.startswith("-"):
        raise ConfigError(name, revision, "a git revision of this repository (a commit id, branch, tag, HEAD~1)")
    try:
        found = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigError(name, revision, f"a git revision, in a repository git can read ({exc})") from None
    if found.returncode != 0 or not found.stdout.strip():
        raise ConfigError(name, revision, f"a git revision of {repo} (a commit id, branch, tag, HEAD~1): none "
                          "by this name")
    return found.stdout.strip()


def order(runs: int, seed: int | None = None) -> list[str]:
    """The sides in the order they run: ``A B A B …``, or each pair's two in an order drawn from ``seed``.

    Examples
    --------
    >>> order(3)
    ['A', 'B', 'A', 'B', 'A', 'B']
    >>> order(3, seed=1)
    ['A', 'B', 'B', 'A', 'B', 'A']
    """
    if seed is None:
        return ["A", "B"] * runs
    rng = random.Random(seed)
    return [side for _ in range(runs) for side in rng.sample(["A", "B"], 2)]


def check_runs(runs) -> int:
    """``--runs`` as an int from 2 to :data:`MAX_RUNS` (pairs need two); a one-line refusal otherwise.

    Examples
    --------
    >>> check_runs(4)
    4
    >>> check_runs(1)
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: --runs=1 is not valid: expected a whole number of runs a side from 2 to 200 (alternating runs are compared pair by pair)
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or not 2 <= runs <= MAX_RUNS:
        raise ConfigError("--runs", runs, f"a whole number of runs a side from 2 to {MAX_RUNS} (alternating runs "
                          "are compared pair by pair)")
    return runs


def checkout(sha: str, repo: Path = _paths.REPO) -> Path:
    """``sha``'s tree under ``<lab dir>/revisions/<sha>`` (a detached git worktree), with its C half built.

    A worktree keeps git's view of the revision, so the runs record it (``run.json``'s ``git``).
    ``ingestlab._timing`` is not in git: it is copied from the running package when the
    revision's ``_timing.c`` is the same file, else built for the checkout with this Python
    (the extension as ``setup.py`` declares it, by this Python's setuptools). Without it a revision would time statements in Python
    and be compared with one timing them in C.

    Raises
    ------
    RunError
        When git cannot make the worktree, or the C half cannot be built where this package has it.
    """
    folder = _paths.lab_dir() / REVISIONS_SUBDIR / sha
    if not (folder / ".git").exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        made = subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(folder), sha],
                              capture_output=True, text=True, timeout=600)
        if made.returncode != 0:
            raise RunError(f"revision {sha[:10]}", "git worktree add failed: " + " ".join(made.stderr.split())[:300],
                           folder, EXIT_RUN_FAILED)
    _build_timing(folder)
    return folder


_BUILD_TIMING = """
from setuptools import Distribution, Extension
dist = Distribution({"ext_modules": [Extension("ingestlab._timing", ["lib/ingestlab/_timing.c"])],
                     "package_dir": {"": "lib"}, "script_name": "setup.py"})
dist.get_command_obj("build_ext").inplace = True
dist.run_command("build_ext")
"""


def _build_timing(folder: Path) -> None:
    here = Path(__file__).parent
    built = sorted(here.glob("_timing*.so")) + sorted(here.glob("_timing*.pyd"))
    there = folder / "lib" / "ingestlab"
    if not built or not (there / "_timing.c").exists() or any(there.glob("_timing*.so")):
        return  # nothing to match (this package times in Python, or the revision has no C half), or done already
    if filecmp.cmp(here / "_timing.c", there / "_timing.c", shallow=False):
        shutil.copy2(built[0], there / built[0].name)
        return
    # the extension alone, as setup.py declares it, without reading pyproject.toml (the installed setuptools may
    # be older than the one pip's isolated build used, and refuse metadata it does not know)
    made = subprocess.run([sys.executable, "-c", _BUILD_TIMING], cwd=folder, capture_output=True, text=True, timeout=600)
    if made.returncode != 0 or not any(there.glob("_timing*.so")):
        raise RunError(f"checkout {folder.name[:10]}", "its C half (ingestlab._timing) did not build: "
                       + " ".join((made.stderr or made.stdout).split())[-300:], folder, EXIT_RUN_FAILED)


def alternate(rev_a: str, rev_b: str, notebook: str, runs: int, out: Path, *, parameters=(),
              seed: int | None = None, log=sys.stderr) -> dict:
    """Make ``runs`` runs of ``notebook`` at each of two revisions, in alternation, into ``out/A-1``, ``out/B-1``, ….

    Each run is ``ingestlab run`` of that revision's own checkout (:func:`checkout`), its
    ``lib/`` first on ``PYTHONPATH``; the order (:func:`order`: ``A B A B …``, or each pair's
    order drawn from ``seed``) and every run's folder, times and exit code are written to
    ``out/alternate.json`` as they happen. Everything is checked before the first run: the
    revisions (``git rev-parse --verify``), ``runs`` and that ``out`` holds nothing yet.

    Returns
    -------
    dict
        What ``alternate.json`` holds: ``revisions`` (``A``/``B``: given and resolved), ``notebook``,
        ``parameters``, ``seed``, ``order`` and ``runs``.

    Raises
    ------
    ConfigError
        A revision that names no commit, ``runs`` out of range, an ``out`` that already holds files.
    RunError
        When a run fails (the runs made so far are kept and recorded).
    """
    shas = {"A": resolve(rev_a, "REV_A"), "B": resolve(rev_b, "REV_B")}
    check_runs(runs)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError("--out", str(out), "a new or empty folder (the runs go to A-1, B-1, ... in it)")
    record = {"revisions": {side: {"given": given, "commit": shas[side]} for side, given in (("A", rev_a),
                                                                                              ("B", rev_b))},
              "notebook": notebook, "parameters": [list(p) for p in parameters], "seed": seed,
              "order": order(runs, seed), "runs": []}
    checkouts = {sha: checkout(sha) for sha in dict.fromkeys(shas.values())}
    folders = {side: checkouts[sha] for side, sha in shas.items()}
    out.mkdir(parents=True, exist_ok=True)
    counts = {"A": 0, "B": 0}
    for side in record["order"]:
        counts[side] += 1
        target = out.resolve() / f"{side}-{counts[side]}"
        command = [sys.executable, "-m", "ingestlab.cli", "run", notebook, "--out", str(target), "--no-progress"]
        command += [arg for name, value in parameters for arg in ("-p", name, str(value))]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(folders[side] / "lib"), *filter(None, [os.environ.get("PYTHONPATH")])]))
        print(f"== {side}-{counts[side]}: {notebook} at {rev_a if side == 'A' else rev_b} ({shas[side][:10]}) "
              f"→ {target}", file=log, flush=True)
        started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        done = subprocess.run(command, cwd=folders[side], env=env)
        record["runs"].append({"side": side, "folder": str(target), "commit": shas[side], "started_at": started,
                               "ended_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                               "exit_code": done.returncode})
        (out / ORDER_FILE).write_text(json.dumps(record, indent=2) + "\n")
        if done.returncode != 0:
            raise RunError(f"{side}-{counts[side]}", f"ingestlab run {notebook} at {shas[side][:10]} exited with "
                           f"{done.returncode}", target, done.returncode if done.returncode in range(2, 7)
                           else EXIT_RUN_FAILED)
    return record
