"""The ``ingestlab`` command: run notebooks in batch, summarise runs, promote figures, read profiles."""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import sys
import tempfile
import traceback
from pathlib import Path

from ingestlab import __version__
from ingestlab.errors import ConfigError, IngestlabError, PreflightError, RunError

_DESCRIPTION = """\
ingestlab runs the lab's notebooks with papermill and reads what they wrote.

  ingestlab run 01                        notebook id 01 at smoke scale, into runs/<UTC time>/
  ingestlab run all --summary             every notebook on the engines this machine has
  ingestlab run 03 -f params.yaml -p SCALE paper
  ingestlab summary runs/<time>           the fits and headline numbers of a run
  ingestlab figures runs/<time> 02        copy a run's figures into figures/ (with SOURCE)
"""

_EXIT_CODES = """\
exit codes:
  0        success
  1        an unexpected error in ingestlab itself (traceback in the log file named)
  2        bad parameters or arguments; nothing started
  3        a pre-flight check failed (a target, the output folder or the disk); nothing started
  4        a notebook failed during the run (partial results kept)
  5        a server or its connection was lost during the run
  6        out of memory or disk during the run
  129/130/143  interrupted by SIGHUP / Ctrl-C / SIGTERM
Every failure is one line on stderr: "ingestlab: <notebook> failed: <cause> (traceback: <log>)"
for 4-6. With several notebooks, the code is the first failure's.
"""


_RUN_TEXT = """\
Execute notebooks (by id or name: 01, 01_<name>, ... or 'all') into OUT/<notebook>/.
Each run folder receives the executed notebook, results, fits and its figures
(OUT/<notebook>/figures/); the repository's figures/ is never written.
Engines a notebook uses by default that cannot start here (no mariadbd, no
PostgreSQL 15) are left out, saying so once; with several notebooks, named
ones too, and a notebook left with no engine is skipped.
"""

_FIGURES_TEXT = """\
Copy RUN_DIR/<notebook>/figures/* of completed notebooks into
figures/<notebook>/ (replacing that notebook's figures) and write
figures/<notebook>/SOURCE: the command, scale, revision, times and host
of the run that made them. Failed or partial runs are refused.
"""

_SQL_TEXT = """\
Run a DuckDB query over the views runs, samples, fits and files, built
from the run folders' own files under --root. Prints a table, or writes
--csv / --parquet.
"""

_COMPARE_TEXT = """\
Compare run B with run A (each a run folder, a folder of them, several joined
by commas, or a quoted pattern: 'runs/alt/A-*'): medians of raw samples and fitted
estimates, ratio B/A with a 95 % CI, a t test on run medians with run-to-run noise
(paired when the runs alternated: A B A B ...), and a verdict: slower/faster (beyond
the threshold and significant), same (CI within the threshold), or could not tell
(needs >= k runs a side). Each row says the smallest change it could have called
(detectable, at 80 % power) and the runs a side that would call --target.
"""

_ALTERNATE_TEXT = """\
Make K runs of NOTEBOOK at each of two git revisions in alternation (A B A B ...;
--seed draws each pair's order), each revision's own code checked out under
.lab/revisions/<commit>/. The runs go to OUT/A-1, OUT/B-1, ...; the order and each
run to OUT/alternate.json. At the end, `ingestlab compare 'OUT/A-*' 'OUT/B-*'`:
the runs paired, each quantity's verdict with the change it could see.
"""


def _parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="ingestlab", description=_DESCRIPTION, epilog=_EXIT_CODES,
                                     formatter_class=raw)
    parser.add_argument("--version", action="version", version=f"ingestlab {__version__}")
    # Every command's description is laid out as written (its line breaks kept).
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=functools.partial(argparse.ArgumentParser, formatter_class=raw))

    run = sub.add_parser("run", help="execute notebooks with papermill", epilog=_EXIT_CODES,
                         description=_RUN_TEXT)
    run.add_argument("notebook", nargs="+", metavar="NOTEBOOK", help="notebook id or name (several allowed), or 'all'")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="set a notebook parameter (repeatable; overrides -f)")
    run.add_argument("-f", "--parameters-file", type=Path, metavar="FILE.yaml",
                     help="YAML file of parameters, one 'NAME: value' per line (papermill's -f form)")
    run.add_argument("--out", type=_out_folder, help="output directory (default: runs/<UTC timestamp>-<random>)")
    again = run.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue the interrupted run in --out: the configurations it completed are kept from "
                            "its checkpoints, only the rest is measured; the parameters must be the same")
    again.add_argument("--force", action="store_true", help="replace an earlier run in --out")
    run.add_argument("--keep-going", action=argparse.BooleanOptionalAction, default=True,
                     help="with several notebooks, run the rest after one fails (default; the exit code still "
                          "says it failed)")
    run.add_argument("--password-file", type=Path,
                     help="file whose first line is the password of URL targets that give none "
                          "(also: $INGESTLAB_PASSWORD, ~/.pgpass, ~/.my.cnf)")
    run.add_argument("--summary", action="store_true", help="print the summary (fits, headline numbers) when done")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")

    summ = sub.add_parser("summary", help="print the fits and headline numbers of a run directory")
    summ.add_argument("out", type=Path, metavar="RUN_DIR")

    figs = sub.add_parser("figures", help="copy a run's figures into the repository's figures/, with a SOURCE file",
                          description=_FIGURES_TEXT)
    figs.add_argument("out", type=Path, metavar="RUN_DIR", help="an `ingestlab run --out` folder")
    figs.add_argument("notebook", nargs="*", metavar="NOTEBOOK", help="only these notebooks (default: every one)")
    figs.add_argument("--to", type=Path, help="folder to copy into (default: the repository's figures/)")
    figs.add_argument("--allow-loaded", action="store_true",
                      help="also promote a run whose machine was loaded (1-minute load average above 1.5 at its "
                           "start); its SOURCE says so")

    sub.add_parser("list", help="list the notebooks and their parameters")
    sub.add_parser("clean", help="stop orphaned lab servers and remove their folders (never a live run's)")

    prof = sub.add_parser("profile", help="print the anatomy of a profile, EXPLAIN output or load reply")
    prof.add_argument("file", type=Path)
    prof.add_argument("--json", action="store_true",
                      help="print JSON, with the lines not understood and left out under 'skipped'")

    runs = sub.add_parser("runs", help="list every run folder under a folder (state, notebook, revision, host)")
    runs.add_argument("--root", type=Path, help="folder searched at any depth (default: the repository's runs/)")
    runs.add_argument("--noise", action="store_true",
                      help="instead: per configuration with 3 or more runs, each quantity's run-to-run noise "
                           "(between-run, within-run and run-level standard deviations, log scale)")
    runs.add_argument("--csv", type=Path, metavar="FILE", help="with --noise: also write the table as CSV "
                                                               "(compare --noise reads it)")

    sql = sub.add_parser("sql", help="query every run with DuckDB SQL (views: runs, samples, fits, files)",
                         description=_SQL_TEXT)
    sql.add_argument("query", metavar="SQL", help='e.g. "SELECT notebook, count(*) FROM samples GROUP BY 1"')
    sql.add_argument("--root", type=Path, help="folder searched at any depth (default: the repository's runs/)")
    sql_out = sql.add_mutually_exclusive_group()
    sql_out.add_argument("--csv", type=Path, metavar="FILE", help="write the result as CSV")
    sql_out.add_argument("--parquet", type=Path, metavar="FILE", help="write the result as parquet")

    cmp_ = sub.add_parser("compare", help="compare two runs quantity by quantity (ratio, 95 %% CI, test, verdict)",
                          description=_COMPARE_TEXT)
    cmp_.add_argument("a", metavar="A", help="the baseline run(s)")
    cmp_.add_argument("b", metavar="B", help="the run(s) compared with it")
    cmp_.add_argument("notebook", nargs="?", metavar="NOTEBOOK", help="only this notebook (its id or name)")
    cmp_.add_argument("--threshold", type=float, default=0.05, help="relative change that counts (default 0.05)")
    cmp_.add_argument("--target", type=float,
                      help="the change (a ratio) 'runs needed' is for (default 1 + 2 x threshold: 1.10)")
    cmp_.add_argument("--fail-on", choices=("slower", "faster", "change"),
                      help="exit 1 when a quantity has this verdict (change: any verdict but same or could not tell)")
    cmp_.add_argument("--csv", type=Path, metavar="FILE", help="also write the table as CSV")
    cmp_.add_argument("--noise", type=Path, metavar="FILE",
                      help="each quantity's prior run-to-run noise from `ingestlab runs --noise --csv FILE` "
                           "(default: σ₀ = 0.10 for every quantity)")
    cmp_.add_argument("--figure", type=Path, metavar="DIR",
                      help="also draw the ratios with their intervals into DIR/ratios.{png,svg,pdf}, its caption beside them")
    alt = sub.add_parser("alternate", help="runs of a notebook at two git revisions, in alternation, then compared",
                         epilog=_EXIT_CODES,
                         description=_ALTERNATE_TEXT)
    alt.add_argument("rev_a", metavar="REV_A", help="the baseline revision (a commit, branch, tag, HEAD~1)")
    alt.add_argument("rev_b", metavar="REV_B", help="the revision compared with it")
    alt.add_argument("notebook", metavar="NOTEBOOK", help="the notebook's id or name")
    alt.add_argument("--runs", type=int, required=True, metavar="K", help="runs at each revision (2 or more)")
    alt.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="a notebook parameter for every run (repeatable)")
    alt.add_argument("--out", type=_out_folder, help="output folder (default: runs/alternate-<UTC timestamp>)")
    alt.add_argument("--seed", type=int, help="draw each pair's order (A B or B A) from this seed (recorded)")
    alt.add_argument("--threshold", type=float, default=0.05, help="relative change that counts (default 0.05)")
    alt.add_argument("--noise", type=Path, metavar="FILE", help="as compare --noise")
    return parser


def _out_folder(text: str) -> Path | str:
    """``--out``'s value: a Path, or the empty text as given (refused with the other parameters, exit 2)."""
    return Path(text) if text.strip() else text


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
    except BrokenPipeError:  # the reader went away (`ingestlab list | head`): nothing more to say, and no crash log
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
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
    from ingestlab import preflight, results, runner
    from ingestlab.conninfo import HANDOVER_ENV, PASSWORD_ENV, RENAMED_HANDOVER_ENV, read_password_file

    results.figure_formats()  # a bad $INGESTLAB_FIGURE_FORMATS stops here, not at the first figure
    preflight.check_environment()  # and a bad $INGESTLAB_LOCK_WAIT_S or lab folder, in one line before any banner
    if RENAMED_HANDOVER_ENV in os.environ:  # its value may be a password: never shown
        raise ConfigError(f"${RENAMED_HANDOVER_ENV}", "(set)", f"unset: the runner's hand-over is now called ${HANDOVER_ENV}; "
                          f"a password for URL targets is ${PASSWORD_ENV}")
    params = _parameters_file(args.parameters_file) if args.parameters_file else {}
    given = [name for name, _ in args.parameter]
    twice = sorted({name for name in given if given.count(name) > 1})
    if twice:  # the last would silently win
        raise ConfigError("-p", twice[0], f"each parameter once ({twice[0]} is given {given.count(twice[0])} times)")
    if args.out is not None and not str(args.out).strip():
        raise ConfigError("--out", str(args.out), "a folder name (an empty one would run into the current folder)")
    params.update({name: runner.coerce(value) for name, value in args.parameter})
    keys = list(runner.notebooks()) if "all" in args.notebook else list(dict.fromkeys(args.notebook))
    paths = {key: runner.find_notebook(key) for key in keys}  # every name checked before anything runs
    many = len(keys) > 1
    if many:
        declared = {n for path in paths.values() for n in runner.declared_parameters(path)}
        for name in params:
            if name not in declared:
                raise runner.unknown_parameter(name, list(paths.values()), declared)
    plan, skipped = {}, {}
    for key, path in paths.items():  # parameters given for several notebooks must mean the same in each
        own = {k: v for k, v in params.items() if k in runner.declared_parameters(path)} if many else params
        own, left_out = runner.without_unavailable_engines(path, own, drop_given=many)
        for engine, reason in left_out.items():
            skipped.setdefault((engine, reason), []).append(path.stem)
        if own is not None:
            runner.check_parameters(path, own)  # and every value
            plan[key] = (path, own)
    password = read_password_file(args.password_file) if args.password_file else os.environ.get(PASSWORD_ENV)
    exposed = {spec: None for path, own in plan.values() for spec in runner.engine_specs(path, own)
               if spec.hand_over()[1] is not None}  # a password in the URL, not from a file or the environment
    for spec in exposed:
        print(f"ingestlab: warning: the password in {spec.parameter}'s URL is visible to every user of this machine "
              "(`ps`) while the run lasts; prefer --password-file, $INGESTLAB_PASSWORD, ~/.pgpass or "
              "~/.my.cnf", file=sys.stderr)
    mode = "resume" if args.resume else "force" if args.force else "new"
    out = args.out or runner.default_out()
    for path, _ in plan.values():
        preflight.check_output(out / path.stem, mode)  # an earlier run in --out stops all before anything starts
    for (engine, reason), stems in skipped.items():
        print(f"ingestlab: skipped {engine} in {', '.join(stems)}: {reason}", file=sys.stderr)
    for path in paths.values():
        if path.stem not in {p.stem for p, _ in plan.values()}:
            print(f"ingestlab: skipped {path.stem}: none of its engines can start here", file=sys.stderr)
    failures: list[RunError | PreflightError] = []
    for key, (path, own) in plan.items():
        print(f"== {path.stem} → {out / path.stem}", file=sys.stderr)
        try:
            target = runner.run_notebook(key, own, out, progress=not args.no_progress, password=password, mode=mode)
        except (RunError, PreflightError) as exc:
            if not (many and args.keep_going):
                raise
            print(f"ingestlab: {exc}" if isinstance(exc, RunError) else f"ingestlab: {path.stem}: pre-flight check "
                  f"failed: {exc}", file=sys.stderr)
            failures.append(exc)
            continue
        resumed = runner.resumed_counts(target) if args.resume else None
        if resumed:
            print(f"== {path.stem} resumed: {resumed['kept']} configurations kept, {resumed['measured']} measured",
                  file=sys.stderr)
        written = results.figure_files(target / results.FIGURES_SUBDIR)
        if written:
            print(f"   {len(written)} figure files in {written[0].parent}", file=sys.stderr)
    if args.summary and out.is_dir():  # nothing ran when every notebook was skipped
        try:
            _print_summary(out)
        except ConfigError as exc:  # every notebook failed before writing run.json: the failures say why
            print(f"ingestlab: no summary: {exc}", file=sys.stderr)
    if failures:
        print(f"ingestlab: {len(failures)} of {len(plan)} notebooks failed (see the lines above)", file=sys.stderr)
        return failures[0].exit_code if isinstance(failures[0], RunError) else runner.EXIT_PREFLIGHT
    return 0


#: Largest ``-f`` file read: parameters are a few lines; a larger file is not one (a device, a log, a dump).
PARAMETERS_FILE_MAX_BYTES = 1_000_000


def _parameters_file(path: Path) -> dict:
    """Parameters from a YAML file of ``NAME: value`` lines (papermill's ``-f``); a list becomes a comma string.

    At most :data:`PARAMETERS_FILE_MAX_BYTES` are read from whatever ``path`` is (a device never ends),
    YAML aliases are refused (a few of them nested expand to gigabytes) and so is a name given twice
    (as ``-p`` refuses it).
    """
    import yaml

    try:
        with open(path, "rb") as handle:
            raw = handle.read(PARAMETERS_FILE_MAX_BYTES + 1)
        if len(raw) > PARAMETERS_FILE_MAX_BYTES:
            raise ConfigError("-f", str(path), f"a YAML file of parameters (at most {PARAMETERS_FILE_MAX_BYTES:,} "
                                               "bytes; this one is larger)")
        text = raw.decode("utf-8")
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
            raise ConfigError("-f", str(path), "YAML without aliases (*name): write each value out")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        names = [key.value for key, _ in node.value] if isinstance(node, yaml.MappingNode) else []
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError("-f", str(path), f"each parameter once ({', '.join(map(str, twice))} given twice)")
        data = yaml.safe_load(text)
    except OSError as exc:
        raise ConfigError("-f", str(path), f"a readable YAML file ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError("-f", str(path), f"a UTF-8 text file (byte {exc.start} is not UTF-8: a binary file?)") from None
    except yaml.YAMLError as exc:
        raise ConfigError("-f", str(path), f"valid YAML ({' '.join(str(exc).split())[:300]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ConfigError("-f", str(path), "a YAML mapping of parameter names to values (NAME: value)")
    out = {}
    for name, value in data.items():
        if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
            value = ",".join(map(str, value))
        elif isinstance(value, (dict, list, tuple)):
            raise ConfigError(name, value, f"a number, text, true/false, null or a flat list (in {path})")
        out[name] = value
    return out


def _clean(args) -> int:  # noqa: ARG001 - uniform command signature
    from ingestlab import cgroups
    from ingestlab.servers.base import reap

    for folder in reap():
        print(f"removed orphaned server folder {folder}")
    cgroups.reap()
    return 0


def _summary(args) -> int:
    from ingestlab import safe_paths

    safe_paths.check_folder(args.out, "RUN_DIR")  # its files are read and printed: no other user's link among them
    _print_summary(args.out)
    return 0


def _print_summary(out: Path) -> None:
    from ingestlab import summary

    print(summary.format_summary(out))


def _figures(args) -> int:
    from ingestlab import promotion

    done, left_out = promotion.promote(args.out, args.notebook or None, to=args.to, allow_loaded=args.allow_loaded)
    for notebook, folder, scale in done:
        print(f"{notebook}: figures of {args.out / notebook} (SCALE {scale}) → {folder}")
    for notebook, why in left_out:
        print(f"ingestlab: {notebook} not promoted: {why}", file=sys.stderr)
    return 0


def _list(args) -> int:  # noqa: ARG001 - uniform command signature
    from ingestlab import runner

    for nb_id, path in runner.notebooks().items():
        book = runner.declaration(path)
        print(f"{nb_id}  {path.stem}: {book.question}")
        print(f"      study: {book.study}; smoke {book.smoke_time or '?'}, paper {book.paper_time or '?'}")
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


def _runs(args) -> int:
    from ingestlab import catalog

    if args.noise:
        from ingestlab import noise

        root = args.root or catalog.default_root()
        found = noise.table(root)
        print(f"{found[['notebook', 'revision']].drop_duplicates().shape[0]} configurations of 3 or more runs under "
              f"{root}; standard deviations of the runs' log levels (0.10 ≈ 10 %)")
        if len(found):
            shown = found.assign(level=found["level"].map("{:.4g}".format)).round(4)
            print(shown.astype(object).where(shown.notna(), "").to_string(index=False))
        if args.csv:
            found.to_csv(args.csv, index=False)
            print(f"wrote {args.csv}", file=sys.stderr)
        return 0
    with catalog.Catalog(args.root) as cat:
        table = cat.sql("SELECT folder, notebook, state, strftime(started_at, '%Y-%m-%d %H:%M') AS started, "
                        "left(revision, 10) AS revision, dirty, scale, host, cores, engines, problem FROM runs")
    print(f"{len(table)} runs under {cat.root}")
    if len(table):
        print(table.astype(object).where(table.notna(), "").to_string(index=False))
    return 0


def _sql(args) -> int:
    from ingestlab import catalog, safe_paths

    if args.csv or args.parquet:  # written where no other user can put a link or read it half-written
        safe_paths.check_folder(Path(args.csv or args.parquet).parent, "--csv" if args.csv else "--parquet")
    try:
        with catalog.Catalog(args.root) as cat:
            if args.csv or args.parquet:
                path = cat.export(args.query, args.csv or args.parquet, "csv" if args.csv else "parquet")
                print(f"wrote {path}", file=sys.stderr)
                return 0
            table = cat.sql(args.query)
    except KeyboardInterrupt as exc:
        # DuckDB's own threads may still be winding the interrupted query down; the interpreter's
        # clean-up would meet them half-way and abort (SIGABRT): this command has nothing to clean up
        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"ingestlab: interrupted by {signal.Signals(signum).name}; the query was cancelled", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + signum)
    print(table.to_string(index=False) if len(table.columns) else "(no rows)")
    return 0


def _alternate(args) -> int:
    import datetime as dt

    from ingestlab import _paths, alternate, runner, safe_paths
    from ingestlab.workloads import compare_runs_analysis as analysis

    if args.out is not None and not str(args.out).strip():
        raise ConfigError("--out", str(args.out), "a folder name")
    alternate.check_runs(args.runs)
    stem = runner.find_notebook(args.notebook).stem
    out = args.out or _paths.REPO / "runs" / f"alternate-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}"
    safe_paths.check_folder(out, "--out")
    prior = _noise_prior(args.noise)  # a bad --noise file is refused before any run
    alternate.alternate(args.rev_a, args.rev_b, stem, args.runs, out, parameters=args.parameter, seed=args.seed)
    table = analysis.compare(str(out / "A-*"), str(out / "B-*"), stem, threshold=args.threshold, **prior)
    print(f"# ingestlab compare '{out}/A-*' '{out}/B-*' {stem}")
    _print_comparison(table)
    return 0


def _noise_prior(path: Path | None) -> dict:
    """``compare``'s ``run_noise`` from ``--noise FILE`` (read before anything runs), or nothing: its default."""
    from ingestlab import noise

    return {} if path is None else {"run_noise": noise.prior(path)}


def _print_comparison(table) -> None:
    from ingestlab.workloads import compare_runs_analysis as analysis

    for line in table.attrs.get("notes", []):
        print(f"# {line}")
    print(analysis.format_table(table))
    print(analysis.describe(table))


def _compare(args) -> int:
    # the notebook that compares two runs, on the command line: its analysis does the work
    from ingestlab import safe_paths
    from ingestlab.workloads import compare_runs_analysis as analysis

    for name, side in (("A", args.a), ("B", args.b)):
        for folder in analysis.side_folders(side):
            safe_paths.check_folder(folder, name)
    for name, where in (("--csv", args.csv and Path(args.csv).parent), ("--figure", args.figure)):
        if where is not None:
            safe_paths.check_folder(where, name)
    if args.figure is not None and args.figure.exists() and not args.figure.is_dir():
        raise ConfigError("--figure", str(args.figure), "a folder for the figure's files (this is a file)")
    table = analysis.compare(args.a, args.b, args.notebook, threshold=args.threshold, target=args.target,
                             **_noise_prior(args.noise))
    _print_comparison(table)
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}", file=sys.stderr)
    if args.figure is not None:
        args.figure.mkdir(parents=True, exist_ok=True)
        analysis.save_ratios(table, args.figure,
                             title=f"{args.b} over {args.a}: each quantity's ratio with its 95 % interval")
        print(f"wrote {args.figure}/ratios.png, .svg, .pdf and its caption, ratios.caption.md", file=sys.stderr)
    failing = {"slower": {"slower"}, "faster": {"faster"}, "change": {"slower", "faster", "higher", "lower"}}
    if args.fail_on and table["verdict"].isin(failing[args.fail_on]).any():
        print(f"ingestlab: {int(table['verdict'].isin(failing[args.fail_on]).sum())} quantities "
              f"{args.fail_on if args.fail_on != 'change' else 'changed'}", file=sys.stderr)
        return 1
    return 0


_COMMANDS = {"runs": _runs, "sql": _sql, "compare": _compare, "alternate": _alternate, "run": _run, "summary": _summary, "figures": _figures, "list": _list, "profile": _profile,
             "clean": _clean}

if __name__ == "__main__":
    sys.exit(main())
