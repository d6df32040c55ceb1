"""The ``ingestlab`` command: run notebooks in batch, summarise fits, read profiles.

Exit codes: 0 success; 1 an unexpected error in ingestlab itself (traceback in the log file
named); 2 bad parameters or arguments (nothing started); 3 a pre-flight check failed (a
target, the output folder or the disk; nothing started); 4 the notebook failed during the
run; 5 a server or its connection was lost during the run; 6 out of memory or disk during
the run; 128 + signal when interrupted (130 Ctrl-C, 129 SIGHUP, 143 SIGTERM). Every failure
is one line on stderr, ``ingestlab: <notebook> failed: <cause> (traceback: <log>)`` for 4-6.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import traceback
from pathlib import Path

from ingestlab.errors import ConfigError, IngestlabError, PreflightError, RunError

_SUMMARY_COLUMNS = ["notebook", "engine", "variant", "method", "overhead_ms", "overhead_ci_low_ms",
                    "overhead_ci_high_ms", "write_time_s", "r2", "n_points"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ingestlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="execute notebooks with papermill",
                         description="Execute a notebook (01, 01_insert_anatomy) or 'all' into OUT/<notebook>/.")
    run.add_argument("notebook", help="notebook id or name, or 'all'")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="set a notebook parameter (repeatable)")
    run.add_argument("--out", type=Path, help="output directory (default: runs/<UTC timestamp>-<random>)")
    again = run.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue the interrupted run in --out: the configurations it completed are kept from "
                            "its checkpoints, only the rest is measured; the parameters must be the same")
    again.add_argument("--force", action="store_true", help="replace an earlier run in --out")
    run.add_argument("--password-file", type=Path,
                     help="file whose first line is the password of URL targets that give none "
                          "(also: $INGESTLAB_PASSWORD, ~/.pgpass, ~/.my.cnf)")
    run.add_argument("--summary", action="store_true", help="print every fit when done")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")

    summ = sub.add_parser("summary", help="print every fits.csv of a run directory")
    summ.add_argument("out", type=Path)

    sub.add_parser("list", help="list the notebooks and their parameters")
    sub.add_parser("clean", help="stop orphaned lab servers and remove their folders (never a live run's)")

    prof = sub.add_parser("profile", help="print the anatomy of a profile, EXPLAIN output or load reply")
    prof.add_argument("file", type=Path)
    prof.add_argument("--json", action="store_true", help="print JSON")
    return parser


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM or SIGHUP arrives: handled exactly like Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame):  # noqa: ARG001 - signal handler signature
    raise Interrupted(signum)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ingestlab`` console script."""
    args = _parser().parse_args(argv)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    try:
        return _COMMANDS[args.command](args)
    except RunError as exc:
        print(f"ingestlab: {exc}", file=sys.stderr)
        return exc.exit_code
    except PreflightError as exc:
        print(f"ingestlab: pre-flight check failed: {exc}", file=sys.stderr)
        return 3
    except IngestlabError as exc:
        print(f"ingestlab: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"ingestlab: interrupted by {signal.Signals(signum).name}; local servers were stopped, "
              "partial results kept", file=sys.stderr)
        return 128 + signum
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, the traceback in a file
        fd, log = tempfile.mkstemp(prefix="ingestlab-crash-", suffix=".log")
        with os.fdopen(fd, "w") as out:
            out.write(traceback.format_exc())
        print(f"ingestlab: internal error: {type(exc).__name__}: {exc} (traceback: {log})", file=sys.stderr)
        return 1


def _run(args) -> int:
    from ingestlab import runner
    from ingestlab.conninfo import PASSWORD_ENV, read_password_file, split_password

    params = {name: runner.coerce(value) for name, value in args.parameter}
    keys = list(runner.notebooks()) if args.notebook == "all" else [args.notebook]
    for key in keys:
        runner.find_notebook(key)  # every name checked before anything runs
    if args.notebook != "all":
        runner.check_parameters(runner.find_notebook(args.notebook), params)  # and every value
    if args.notebook == "all":
        declared = {n for key in keys for n in runner.declared_parameters(runner.find_notebook(key))}
        for name in params:
            if name not in declared:
                raise ConfigError("-p", name, "a parameter of at least one notebook: " + ", ".join(sorted(declared)))
        for key in keys:  # parameters given with 'all' must mean the same in every notebook
            runner.check_parameters(runner.find_notebook(key),
                                    {k: v for k, v in params.items()
                                     if k in runner.declared_parameters(runner.find_notebook(key))})
    password = read_password_file(args.password_file) if args.password_file else os.environ.get(PASSWORD_ENV)
    for name, url in runner.url_targets(params):
        if split_password(url)[1] is not None:
            print(f"ingestlab: warning: the password in {name}'s URL is visible to every user of this machine "
                  "(`ps`) while the run lasts; prefer --password-file, $INGESTLAB_PASSWORD, ~/.pgpass or "
                  "~/.my.cnf", file=sys.stderr)
    mode = "resume" if args.resume else "force" if args.force else "new"
    out = args.out or runner.default_out()
    for key in keys:
        path = runner.find_notebook(key)
        own = {k: v for k, v in params.items() if k in runner.declared_parameters(path)} \
            if args.notebook == "all" else params
        print(f"== {path.stem} → {out / path.stem}", file=sys.stderr)
        done = runner.run_notebook(key, own, out, progress=not args.no_progress, password=password, mode=mode)
        resumed = runner.resumed_counts(done) if args.resume else None
        if resumed:
            print(f"== {path.stem} resumed: {resumed['kept']} configurations kept, {resumed['measured']} measured",
                  file=sys.stderr)
    if args.summary:
        _print_summary(out)
    return 0


def _clean(args) -> int:  # noqa: ARG001 - uniform command signature
    from ingestlab import cgroups
    from ingestlab.servers.base import reap

    for folder in reap():
        print(f"removed orphaned server folder {folder}")
    cgroups.reap()
    return 0


def _summary(args) -> int:
    _print_summary(args.out)
    return 0


def _print_summary(out: Path) -> None:
    from ingestlab import runner

    fits = runner.summary(out)
    if fits.empty:
        print(f"no fits.csv under {out}")
        return
    cols = [c for c in _SUMMARY_COLUMNS if c in fits.columns]
    print(f"Fits under {out}:")
    print(fits[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def _list(args) -> int:  # noqa: ARG001 - uniform command signature
    from ingestlab import runner

    for nb_id, path in runner.notebooks().items():
        print(f"{nb_id}  {path.stem}")
        for name, spec in runner.declared_parameters(path).items():
            print(f"      {name} = {spec['default']}  # {spec.get('help') or ''}")
    return 0


def _profile(args) -> int:
    from ingestlab import profiles

    if not args.file.exists():
        print(f"ingestlab: error: no such file: {args.file}", file=sys.stderr)
        return 2
    anatomy = profiles.anatomy(profiles.parse_file(args.file))
    print(json.dumps(anatomy, indent=2) if args.json else profiles.format_anatomy(anatomy))
    return 0


_COMMANDS = {"run": _run, "summary": _summary, "list": _list, "profile": _profile, "clean": _clean}

if __name__ == "__main__":
    sys.exit(main())
