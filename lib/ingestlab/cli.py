"""The ``ingestlab`` command: run notebooks in batch, summarise fits, read profiles."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ingestlab.errors import IngestlabError

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
    run.add_argument("--out", type=Path, help="output directory (default: runs/<UTC timestamp>)")
    run.add_argument("--summary", action="store_true", help="print every fit when done")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")

    summ = sub.add_parser("summary", help="print every fits.csv of a run directory")
    summ.add_argument("out", type=Path)

    sub.add_parser("list", help="list the notebooks and their parameters")

    prof = sub.add_parser("profile", help="print the anatomy of a profile, EXPLAIN output or load reply")
    prof.add_argument("file", type=Path)
    prof.add_argument("--json", action="store_true", help="print JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ingestlab`` console script."""
    args = _parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except IngestlabError as exc:
        print(f"ingestlab: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ingestlab: interrupted; local servers were stopped, partial results kept", file=sys.stderr)
        return 130


def _run(args) -> int:
    from ingestlab import runner

    params = {name: runner.coerce(value) for name, value in args.parameter}
    keys = list(runner.notebooks()) if args.notebook == "all" else [args.notebook]
    for key in keys:
        runner.find_notebook(key)  # every name checked before anything runs
    if args.notebook != "all":
        runner.check_parameters(runner.find_notebook(args.notebook), params)  # and every value
    if args.notebook == "all":
        for key in keys:  # parameters given with 'all' must mean the same in every notebook
            runner.check_parameters(runner.find_notebook(key),
                                    {k: v for k, v in params.items()
                                     if k in runner.declared_parameters(runner.find_notebook(key))})
    out = args.out or runner.default_out()
    for key in keys:
        path = runner.find_notebook(key)
        own = {k: v for k, v in params.items() if k in runner.declared_parameters(path)} \
            if args.notebook == "all" else params
        print(f"== {path.stem} → {out / path.stem}", file=sys.stderr)
        runner.run_notebook(key, own, out, progress=not args.no_progress)
    if args.summary:
        _print_summary(out)
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


_COMMANDS = {"run": _run, "summary": _summary, "list": _list, "profile": _profile}

if __name__ == "__main__":
    sys.exit(main())
