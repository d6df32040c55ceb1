"""The batch runner: execute experiment notebooks with papermill into a run directory."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import re
import secrets as _secrets
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from ingestlab import _paths, cgroups, checkpoints, preflight, results, safe_paths
from ingestlab import progress as _progress
from ingestlab.conninfo import HANDOVER_ENV
from ingestlab.engine_specs import EngineSpec, parse_engines, registered
from ingestlab.errors import ConfigError, PreflightError, RunError
from ingestlab.preflight import PREFLIGHT_TIMEOUT_S
from ingestlab.preflight import one_line as _one_line
from ingestlab.servers import reap
from ingestlab.watch import CpuShareWatch, StalledTargetWatch, StoppedServerWatch
from ingestlab.workloads._params import items_of

#: Notebook parameter that receives the run's output directory.
RESULTS_PARAM = "RESULTS_DIR"
#: Seconds between redraws of the kernel's progress bars when ``ingestlab run`` shows them on a terminal.
LIVE_PROGRESS_INTERVAL_S = 2.0

#: Exit codes of ``ingestlab run`` (also in the README and ``ingestlab run --help``).
EXIT_OK = 0
EXIT_BUG = 1  #: an unexpected error in ingestlab itself (traceback in a log file)
EXIT_USAGE = 2  #: bad parameters or arguments; nothing was started
EXIT_PREFLIGHT = 3  #: a target, the output folder or the disk failed the checks; nothing was started
EXIT_FAILED = 4  #: the notebook failed during the run (partial results kept)
EXIT_SERVER_LOST = 5  #: a server or its connection was lost during the run, or stopped answering it
EXIT_RESOURCES = 6  #: out of memory or disk space during the run
#: 128 + the signal: 130 Ctrl-C (SIGINT), 129 SIGHUP, 143 SIGTERM.


def notebooks() -> dict[str, Path]:
    """Experiment notebooks by id (``"01"`` → its ``.ipynb``), sorted: every notebook a workload declares."""
    return {book.id: book.notebook_path for book in _declared().values()}


def _declared() -> dict:
    from ingestlab.workloads import discover

    return discover()


def declaration(path: Path):
    """The workload declaration (:class:`ingestlab.workloads.Notebook`) of the notebook at ``path``."""
    from ingestlab.workloads import declaration as _declaration

    return _declaration(Path(path).stem)


def find_notebook(key: str) -> Path:
    """The notebook named by ``key``: its id (``01``), its stem, or its file name."""
    books = notebooks()
    for nb_id, path in books.items():
        if key in (nb_id, path.stem, path.name):
            return path
    raise ConfigError("NOTEBOOK", key, "'all' or one of " + ", ".join(f"{k} ({p.stem})" for k, p in books.items()))


def renamed_parameter(name: str, paths: list[Path]) -> str | None:
    """The new name of a parameter that one of the notebooks at ``paths`` once had as ``name``, or None."""
    for path in paths:
        new = declaration(path).renamed.get(name)
        if new:
            return new
    return None


def unknown_parameter(name: str, paths: list[Path], declared: set[str]) -> ConfigError:
    """The one-line refusal of ``-p name`` that none of the notebooks at ``paths`` declares."""
    new = renamed_parameter(name, paths)
    if new:
        return ConfigError("-p", name, f"{new}: the parameter {name} is now called {new} (-p {new} …)")
    where = paths[0].stem if len(paths) == 1 else "at least one notebook"
    return ConfigError("-p", name, f"a parameter of {where}: " + ", ".join(sorted(declared)))


def without_unavailable_engines(path: Path, parameters: dict[str, Any], *, drop_given: bool = True
                                ) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """Leave out the local engines of ``path``'s engine parameter that cannot start on this machine.

    The value is the one given in ``parameters`` or else the notebook's default (see
    :func:`engine_specs`). Only local engines are checked (their programs: ``mariadbd``,
    PostgreSQL 15's binaries); URLs are left to the pre-flight, and a value that is not a
    list of engines to the notebook's validation. A default may name engines not registered
    here (an engine folder or package not installed): they are left out too
    (:func:`~ingestlab.engine_specs.registered`).

    Parameters
    ----------
    path : Path
        The notebook.
    parameters : dict
        The parameters given for it.
    drop_given : bool
        Whether an engine named in ``parameters`` may be left out too; if False, such an
        engine is refused instead (only defaults adapt to the machine).

    Returns
    -------
    (dict or None, dict)
        The parameters to run with (the engine parameter rewritten when something was left
        out), or None when no engine is left; and each engine left out with the reason.

    Raises
    ------
    ConfigError
        With ``drop_given=False``, for a given engine that cannot start here.
    """
    name = declaration(path).engine_parameter
    given, skipped = name in parameters, {}
    try:
        specs = engine_specs(path, parameters)
    except ConfigError:  # not engines: the notebook's validation says so, after the checks that come first
        default = None if given else _literal(declared_parameters(path)[name]["default"])
        value, skipped = registered(default) if isinstance(default, str) else ("", {})
        if not skipped:  # a default may name engines not installed here: those are left out, said as the others
            return parameters, {}
        if not value:
            return None, skipped
        parameters = {**parameters, name: value}
        specs = engine_specs(path, parameters)
    kept = []
    for spec in specs:
        reason = spec.unavailable_reason()
        if reason and given and not drop_given:
            raise ConfigError(name, spec.value, f"an engine that can start on this machine ({reason})")
        if reason:
            skipped[spec.value] = reason
        else:
            kept.append(spec.value)
    if not skipped:
        return parameters, {}
    return ({**parameters, name: ",".join(kept)} if kept else None), skipped


def engine_specs(path: Path, parameters: dict[str, Any]) -> tuple[EngineSpec, ...]:
    """The engines of ``path``'s engine parameter, parsed: the value in ``parameters``, else the notebook's default.

    Empty for a notebook that measures no engine, and for a notebook whose default is ``""`` run with
    it: its workload chooses among the registered engines itself (notebook 08: those with
    ``link_delay``), all of them local, so nothing here is checked ahead.

    Raises
    ------
    ConfigError
        Naming the parameter, for a value :func:`~ingestlab.engine_specs.parse_engines` refuses.
    """
    name = declaration(path).engine_parameter
    declared = declared_parameters(path)
    if name is None or name not in declared:
        return ()
    default = _literal(declared[name]["default"])
    value = parameters[name] if name in parameters else default
    if value == "" == default:
        return ()
    return parse_engines(value, name)


def declared_parameters(path: Path) -> dict[str, dict]:
    """The notebook's ``parameters`` cell as papermill reads it: name → {name, default, inferred_type_name, help}.

    Read with :mod:`ast` from the notebook's JSON, the way ``papermill.inspect_notebook``
    reads ``NAME: type = default  # help`` lines, without importing papermill (seconds of
    imports a command that only checks its parameters does not need).
    """
    import ast

    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    source = next(("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])), "")
    lines = source.splitlines()
    out: dict[str, dict] = {}
    for node in ast.parse(source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if not isinstance(target, ast.Name) or getattr(node, "value", None) is None:
            continue
        line = lines[node.end_lineno - 1]
        comment = line[node.end_col_offset:].strip()
        out[target.id] = {
            "name": target.id, "default": ast.get_source_segment(source, node.value),
            "inferred_type_name": ast.get_source_segment(source, node.annotation) if isinstance(node, ast.AnnAssign)
            else "None", "help": comment[1:].strip() if comment.startswith("#") else ""}
    return out


def coerce(value: str) -> Any:
    """A ``-p NAME VALUE`` string as int, float, bool, None or str, as ``papermill -p`` reads it.

    papermill's own translation (``True``/``False``/``None``, then ``int``, then ``float``,
    else the string) is private (``papermill.cli._resolve_type``) and importing papermill takes
    seconds that a command refusing a bad parameter should not wait; this is that rule, plus
    the lower-case ``true``/``false``/``none``/``null`` spellings. ``tests/test_runner.py``
    checks that both give the same values wherever papermill's accepts the spelling.

    Examples
    --------
    >>> [coerce(v) for v in ["3", "0.5", "true", "None", "fast"]]
    [3, 0.5, True, None, 'fast']
    """
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def check_parameters(path: Path, parameters: dict[str, Any]) -> dict[str, Any]:
    """Reject unknown names and bad values before anything runs; return the parameters.

    Values are checked by the experiment's own ``validate`` (the same call the notebook
    makes), with the notebook's defaults for what is not given.
    """
    return validated_parameters(path, parameters)[0]


def validated_parameters(path: Path, parameters: dict[str, Any]
                         ) -> tuple[dict[str, Any], Any, tuple[EngineSpec, ...]]:
    """:func:`check_parameters`, also returning what the experiment's ``validate`` resolved (or None), and its engines.

    The engine parameter is parsed here, once (:func:`engine_specs`); ``validate`` receives
    the specifications.
    """
    declared = declared_parameters(path)
    engines = declaration(path).engine_parameter
    for name in parameters:
        if name == RESULTS_PARAM:
            raise ConfigError("-p", name, "another parameter: the runner sets RESULTS_DIR itself (use --out DIR)")
        if name not in declared:
            raise unknown_parameter(name, [path], set(declared))
    for name, value in parameters.items():
        items = items_of(value) if isinstance(value, str) and "," in value and name != engines else []
        if items and not any(items):
            raise ConfigError(name, value, "a comma-separated list with at least one item (every item is empty)")
        items = [v for v in items if v]  # an empty item is the experiment's to refuse, never "given twice"
        twice = sorted({v for v in items if items.count(v) > 1})
        if twice:  # two variants under one name would be pooled into one fit
            raise ConfigError(name, value, f"a list naming each item once ({', '.join(twice)} is given twice)")
    specs = engine_specs(path, parameters)
    values = {k: _literal(v["default"]) for k, v in declared.items()}
    values.update(parameters)
    values.pop(RESULTS_PARAM, None)
    if specs:
        values[engines] = specs
    book = declaration(path)
    check_needs(book, values.get(book.engine_parameter))
    resolved = book.validate(**{k.lower(): v for k, v in values.items()})
    return parameters, resolved, specs


def check_needs(book, engines: Any) -> None:
    """Refuse, before any server starts, an engine of ``engines`` that lacks a capability ``book`` needs.

    Raises
    ------
    ConfigError
        One line naming the engine parameter, the engine, the capability and why it is missing.
    """
    if book.engine_parameter is None or not book.needs or engines is None:
        return
    from ingestlab.engines import capabilities
    from ingestlab.workloads._params import engine_classes

    try:
        classes = engine_classes(engines, book.engine_parameter)
    except ConfigError:
        return  # a malformed list is the notebook's validate's to refuse, in its own words
    capabilities.require(book.needs, classes, book.engine_parameter, f"notebook {book.id}")


def _literal(text: str) -> Any:
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def hide_passwords(parameters: dict[str, Any], engines: Sequence[EngineSpec], password: str | None = None
                   ) -> tuple[dict[str, Any], dict[str, str], tuple[EngineSpec, ...]]:
    """Replace the passwords of the URLs among ``engines`` by ``***``; return (parameters to inject, passwords by
    key, the engines as the notebook receives them).

    ``password`` (from ``--password-file`` or ``$INGESTLAB_PASSWORD``) goes to every URL
    that gives none (:meth:`~ingestlab.engine_specs.EngineSpec.hand_over`); without it, such
    URLs are left to the driver's own sources (``~/.pgpass``, ``$PGPASSWORD``, the MySQL
    option file ``~/.my.cnf``).
    """
    handed = [spec.hand_over(password) for spec in engines]
    secrets = {spec.connection.password_key: secret for spec, secret in handed if secret is not None}
    injected = tuple(spec for spec, _ in handed)
    if secrets:
        parameters = {**parameters, injected[0].parameter: ",".join(spec.value for spec in injected)}
    return parameters, secrets, injected


def run_notebook(key: str, parameters: dict[str, Any] | None = None, out: str | os.PathLike | None = None,
                 *, progress: bool = True, password: str | None = None, mode: str = "new") -> Path:
    """Execute one notebook into ``<out>/<notebook>/`` and return that directory.

    The directory receives the executed notebook (written to a temporary name and renamed),
    and — through the notebook's ``RESULTS_DIR`` parameter — ``results.parquet``,
    ``run.json``, ``fits.csv`` and the other tables. Parameters are checked first, then the
    pre-flight checks (:func:`ingestlab.preflight.check`) run; passwords travel to the kernel through an
    environment variable, never into the notebook. Whatever happens, servers the notebook
    left running under the lab directory are stopped afterwards, settings changed on a
    user's server are put back, and a failure is recorded in ``run.json``.

    Parameters
    ----------
    password : str, optional
        Password for URL targets that give none (``--password-file``, ``$INGESTLAB_PASSWORD``).
    mode : {"new", "force", "resume"}
        What to do when ``<out>/<notebook>`` exists: refuse (``new``), empty it first
        (``force``), or continue the interrupted run it holds (``resume``: its parameters must
        be the same; the configurations it completed are kept from its checkpoints and not
        measured again, see :meth:`ingestlab.results.Run.once`).

    Raises
    ------
    ConfigError, PreflightError
        Before anything starts.
    RunError
        When the notebook fails; its ``exit_code`` says how.
    """
    # papermill → nbformat → jsonschema imports the optional rfc3987_syntax, which builds 38 lark grammars
    # at import (1.5 s of CPU here) for the "iri" format check; nbformat's notebook schemas use no format
    sys.modules.setdefault("rfc3987_syntax", None)
    import papermill
    from nbclient.exceptions import DeadKernelError

    from ingestlab._kernel import EXECUTOR_NAME, QuietKernelManager

    path = find_notebook(key)
    parameters, resolved, engines = validated_parameters(path, dict(parameters or {}))
    out_dir = Path(out) if out else default_out()
    target = out_dir / path.stem
    injected, secrets, engines = hide_passwords(parameters, engines, password)
    urls = [spec for spec in engines if spec.connection is not None]
    resume_dir = str(target.resolve()) if mode == "resume" else None
    live = progress and _progress.is_terminal(sys.stderr)  # the kernel's bars are shown as they move, then stored once
    with _environment({HANDOVER_ENV: json.dumps(secrets) if secrets else None, checkpoints.RESUME_ENV: resume_dir,
                       _progress.INTERVAL_ENV: str(LIVE_PROGRESS_INTERVAL_S) if live else None}), \
            OutputLock(target) as lock:  # before anything reads, empties or writes the folder
        if mode == "resume":
            check_resume(path, injected, target)
        restored = preflight.check(engines, resolved, target, mode)
        if urls:
            print(preflight.bounds_line(), file=sys.stderr)
        reap()  # servers a killed run left behind, before this one starts its own
        cgroups.reap()
        if getattr(resolved, "scale", None) == "paper":  # its figures need a quiet start (ingestlab figures)
            wait_for_quiet()
        prepare_output(target, mode)
        lock.take()  # the folder made (or made anew by --force) is this run's too
        injected[RESULTS_PARAM] = str(target.resolve())
        partial = target / f".{path.stem}.partial.ipynb"
        error: RunError | None = None
        interrupted: int | None = None
        kernel_log = _KernelStderr(target / "kernel.log")
        km = QuietKernelManager(kernel_name="python3")
        # a lab server, or the kernel, stopped by a signal would hang the run: it ends it instead
        watch = StoppedServerWatch(kernel=lambda: km.kernel_pid)
        stalled = StalledTargetWatch([(spec.parameter, spec.shown) for spec in urls],
                                     lambda k: preflight.probe(urls[k]), timeout_s=PREFLIGHT_TIMEOUT_S)
        cpu = CpuShareWatch()  # how much of the machine others used meanwhile (figures want a quiet run)
        try:
            kernel_log.__enter__()
            with watch, stalled, cpu:
                papermill.execute_notebook(str(path), str(partial), parameters=injected, engine_name=EXECUTOR_NAME,
                                           cwd=str(path.parent), progress_bar=progress, kernel_name="python3",
                                           km=km, stderr_file=sys.stderr if progress else None)  # its own bars
        except papermill.PapermillExecutionError as exc:
            error = _run_error(path.stem, target, exc.ename, exc.evalue, exc.traceback)
        except DeadKernelError as exc:  # killed (a signal, the out-of-memory killer) while running a cell
            error = _run_error(path.stem, target, "DeadKernelError", _KERNEL_DIED, [f"DeadKernelError: {exc}"])
        except OSError as exc:
            error = _run_error(path.stem, target, type(exc).__name__, str(exc), [str(exc)])
        except KeyboardInterrupt as exc:
            interrupted = 128 + getattr(exc, "signum", signal.SIGINT)
            raise
        finally:
            _keep_notebook(partial, target / path.name)
            if interrupted is None:  # a signal's run ends at once; its notebook stays, readable in Jupyter
                write_html(target / path.name)
            _stop_own_kernels()
            if km.connection_file:  # a kernel that died leaves its connection file (its keys) behind
                Path(km.connection_file).unlink(missing_ok=True)
            kernel_log.__exit__()
            reap()
            cgroups.reap()  # blkio and memory groups of a kernel that was killed
            restored += [entry for spec in urls for entry in preflight.restore_journal(spec)]
            # recorded once the kernel is gone, so that its own last write of run.json cannot replace it
            if (target / "run.json").exists():
                results.record_outcome(target, path.stem, injected, None, machine_cpu=cpu.result())
            if interrupted is not None:
                results.record_outcome(target, path.stem, injected,
                                       {"cause": _SIGNAL_WORDS.get(interrupted, "interrupted"),
                                        "exit_code": interrupted}, restored=restored or None)
            elif restored:
                results.record_outcome(target, path.stem, injected, None, restored=restored)
    cause = watch.cause or stalled.cause
    if cause is not None:  # whatever the notebook made of the killed server or kernel, this is why it failed
        if error is None:
            error = _run_error(path.stem, target, "ServerStopped", cause, [cause])
        error = RunError(path.stem, cause, error.log, EXIT_FAILED if watch.kernel_stopped else EXIT_SERVER_LOST)
    if error is not None:
        unrecorded = results.record_outcome(target, path.stem, injected,
                                            {"cause": error.cause, "exit_code": error.exit_code,
                                             "traceback": str(error.log)})
        if unrecorded:
            raise RunError(error.notebook, f"{error.cause}; its run.json could not be updated ({unrecorded})",
                           error.log, error.exit_code)
        raise error
    return target


def resumed_counts(directory: Path) -> dict | None:
    """``run.json``'s ``resumed`` entry (configurations kept and measured) of the run in ``directory``, or None."""
    try:
        return json.loads((Path(directory) / "run.json").read_text()).get("resumed")
    except (OSError, ValueError):
        return None


#: The cause recorded when the notebook's kernel dies during a run.
_KERNEL_DIED = ("the notebook's kernel died during the run (killed by a signal or by the out-of-memory killer; "
                "its servers were stopped, the results written so far kept)")

_SIGNAL_WORDS = {130: "interrupted (SIGINT)", 129: "interrupted (SIGHUP)", 143: "interrupted (SIGTERM)"}


class _environment:
    """Context: the environment variables ``values`` set (None: left as they are), for the kernel and pre-flight.

    :data:`HANDOVER_ENV` carries the passwords, :data:`ingestlab.checkpoints.RESUME_ENV` the
    run folder to resume.
    """

    def __init__(self, values: dict[str, str | None]):
        self.values = {k: v for k, v in values.items() if v is not None}
        self.before: dict[str, str | None] = {}

    def __enter__(self):
        self.before = {k: os.environ.get(k) for k in self.values}
        os.environ.update(self.values)

    def __exit__(self, *exc):
        for name, value in self.before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def check_resume(path: Path, injected: dict[str, Any], target: Path) -> None:
    """Refuse to resume the run in ``target`` with parameters other than its own.

    Compared as the notebook records them (``run.json``'s ``parameters``: the values its
    ``validate`` resolved, passwords masked). A notebook without a folder yet in an existing
    ``--out`` (``run all --resume`` after an interruption: the notebooks not reached) starts
    from the beginning; an ``--out`` that does not exist, a notebook's own run folder given
    as ``--out`` (it would nest a new run inside), a ``run.json`` that cannot be read or is
    another notebook's have nothing to resume and are refused.

    Raises
    ------
    ConfigError
        Naming the parameters that differ, or what is not a run to resume.
    """
    out = target.parent
    if not out.is_dir():
        raise ConfigError("--resume", str(out), "an --out folder holding an interrupted run (there is no such folder; "
                          "leave out --resume to start a run)")
    if (out / "run.json").exists() or out.name == target.name:
        raise ConfigError("--out", str(out), f"the folder above a notebook's run, not the run itself: "
                          f"--out {out.parent} --resume resumes it")
    if not (target / "run.json").exists():
        return
    damaged = checkpoints.problems(target)
    if damaged:
        raise ConfigError("--resume", str(target), f"a run whose checkpoints read ({damaged[0]}"
                          f"{f'; and {len(damaged) - 1} more' if len(damaged) > 1 else ''}); remove the damaged "
                          "checkpoint to measure that configuration again, or use --force to start over")
    try:
        meta = json.loads((target / "run.json").read_text())
        before = meta.get("parameters", {})
    except (OSError, ValueError, AttributeError):
        raise ConfigError("--resume", str(target), "a run to resume: its run.json cannot be read (use --force to "
                          "start over)") from None
    if meta.get("notebook", target.name) != target.name:
        raise ConfigError("--resume", str(target), f"a run of {target.name}: run.json says it is "
                          f"{meta.get('notebook')!r}'s (use --force to start over)")
    resolved = validated_parameters(path, dict(injected))[1]
    if resolved is None or not hasattr(resolved, "as_dict"):
        return
    differ = checkpoints.same_parameters(before, results.mask_parameters(resolved.as_dict()))
    was = {str(k).lower(): v for k, v in before.items()}
    if differ:
        raise ConfigError("--resume", str(target), "the same parameters as the interrupted run; these differ: "
                          + ", ".join(f"{k.upper()} (was {was.get(k)!r})" for k in differ)
                          + " (use a new --out, or --force to start over)")


class _KernelStderr:
    """Context: file descriptor 2, which the kernel inherits, goes to ``path``; ``sys.stderr`` stays the terminal.

    A kernel's own messages (its warnings, the traceback of a kernel stopped mid-cell) then land in
    the run's ``kernel.log`` instead of between the lines ``ingestlab`` prints.
    """

    def __init__(self, path: Path):
        self.path = path
        self.saved_fd: int | None = None
        self.saved_stderr = None

    def __enter__(self):
        sys.stderr.flush()
        self.saved_fd = os.dup(2)
        log_fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        self.saved_stderr = sys.stderr
        sys.stderr = open(os.dup(self.saved_fd), "w", buffering=1, closefd=True)
        return self

    def __exit__(self, *exc):
        if self.saved_fd is None:
            return
        sys.stderr.flush()
        sys.stderr.close()
        sys.stderr = self.saved_stderr
        os.dup2(self.saved_fd, 2)
        os.close(self.saved_fd)
        self.saved_fd = None


# -- output folder ---------------------------------------------------------------------------
class OutputLock:
    """Context: this process's exclusive claim on a run folder while it runs into it (``flock`` on the folder).

    A second ``ingestlab run`` into the same folder — ``--force``, which would empty it, or
    ``--resume``, which would mix two runs in it — is refused in one line while the first is
    alive; the claim ends with the process, so a killed run's folder can be resumed at once.
    The lock is on the folder itself, so nothing is written beside it; :meth:`take` again after
    the folder is (re)made claims the new one too.
    """

    def __init__(self, target: Path):
        self.target = target
        self.held: dict[tuple[int, int], int] = {}  # (device, inode) → descriptor

    def take(self) -> None:
        """Claim the folder as it is now (nothing to claim while it does not exist)."""
        try:
            fd = os.open(self.target, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:  # missing, or not a folder: the output checks say so
            return
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) in self.held:
            os.close(fd)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise PreflightError(f"--out: {self.target} is being written by another live run; wait for it to end "
                                 "or choose another --out") from None
        self.held[(info.st_dev, info.st_ino)] = fd

    def __enter__(self) -> "OutputLock":
        self.take()
        return self

    def __exit__(self, *exc) -> None:
        for fd in self.held.values():
            os.close(fd)
        self.held.clear()


def prepare_output(target: Path, mode: str = "new") -> Path:
    """Create ``target``; an existing non-empty one is refused unless ``mode`` is force or resume."""
    if target.exists() and not target.is_dir():
        raise PreflightError(f"--out: {target} is a file, not a folder")
    if target.is_dir() and any(target.iterdir()):
        if mode == "force":
            if preflight.not_a_run_s(target):  # checked before the run: a file made since is kept, the run refused
                raise preflight.earlier_run(target)
            shutil.rmtree(target)
        elif mode != "resume":
            raise preflight.earlier_run(target)
    target.mkdir(parents=True, exist_ok=True)
    return safe_paths.check_folder(target, "--out")  # again, as made: nobody swapped a part for a link meanwhile


def _keep_notebook(partial: Path, final: Path) -> None:
    """Rename the executed notebook into place if it is whole; drop a truncated one.

    Progress bars redrawn live keep only their last state in the saved notebook
    (:func:`ingestlab.progress.last_states`).
    """
    if not partial.exists():
        return
    try:
        notebook = json.loads(partial.read_text())
    except (OSError, ValueError):
        partial.unlink(missing_ok=True)
        return
    streams = [out for cell in notebook.get("cells", []) for out in cell.get("outputs", [])
               if out.get("output_type") == "stream"]
    try:
        if any("\r" in "".join(out.get("text", "")) for out in streams):
            for out in streams:
                out["text"] = _progress.last_states("".join(out.get("text", "")))
            results.write_atomic(partial, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
        partial.replace(final)
    except OSError as exc:  # a run folder made read-only or full meanwhile: the whole partial notebook stays
        print(f"ingestlab: warning: the executed notebook stays at {partial} ({exc.strerror or exc})",
              file=sys.stderr)


#: Longest a paper-scale run waits before it starts for the machine to settle (see :func:`wait_for_quiet`).
SETTLE_MAX_S = 180.0


def wait_for_quiet(limit_s: float = SETTLE_MAX_S, poll_s: float = 2.0) -> float:
    """Wait until the 1-minute load average is at most :data:`ingestlab.report.QUIET_LOAD`, or ``limit_s`` passed.

    A paper run's figures are promoted only from a quiet start (``ingestlab figures``), and the
    load average is a minute-long memory: right after another notebook (``ingestlab run all``)
    it still counts that one. Says once, on stderr, what it waits for. Returns the load average
    it stopped waiting at (above the limit when it gave up: the run then starts, and records it).

    Examples
    --------
    >>> wait_for_quiet(limit_s=0) >= 0
    True
    """
    import time

    from ingestlab import report

    deadline = time.monotonic() + limit_s
    load = os.getloadavg()[0]
    if load > report.QUIET_LOAD and limit_s > 0:
        print(f"   waiting for the machine to settle: 1-minute load average {load:.2f}, a paper run starts at "
              f"{report.QUIET_LOAD:g} or less (up to {limit_s:.0f} s)", file=sys.stderr)
    while load > report.QUIET_LOAD and time.monotonic() < deadline:
        time.sleep(max(0.0, min(poll_s, deadline - time.monotonic())))
        load = os.getloadavg()[0]
    return load


#: ``0`` leaves out the HTML copy of each executed notebook (:func:`write_html`); unset or ``1`` writes it.
HTML_ENV = "INGESTLAB_HTML"


def html_wanted() -> bool:
    """Whether runs write each executed notebook's HTML copy: ``$INGESTLAB_HTML`` unset or ``1``; ``0`` does not.

    Rendering costs about 0.8 s of CPU a notebook (the published results' run: 8.3 CPU-s with it, 7.5
    without); the tests, which run ``ingestlab run`` some fifty times, leave it out but for the
    test that reads it.

    Raises
    ------
    ConfigError
        For any other value.

    Examples
    --------
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {HTML_ENV: "0"}):
    ...     html_wanted()
    False
    """
    text = os.environ.get(HTML_ENV, "").strip()
    if text not in ("", "0", "1"):
        raise ConfigError(HTML_ENV, text, "0 (no HTML copy of each notebook) or 1 (the default)")
    return text != "0"


def write_html(notebook: Path) -> Path | None:
    """``<notebook>.html`` beside an executed notebook, its figures embedded: a run a reader opens without Jupyter.

    Written atomically with nbconvert's ``lab`` template (the outputs' images are already in
    the notebook, so they are embedded as they are). A notebook that cannot be rendered leaves
    a warning, never a failed run: its results and the notebook itself stand. Returns the HTML's
    path, or None (also when ``$INGESTLAB_HTML`` is ``0``: :func:`html_wanted`).
    """
    if not notebook.exists() or not html_wanted():
        return None
    html = notebook.with_suffix(".html")
    try:
        import nbformat
        from nbconvert import HTMLExporter

        body, _ = HTMLExporter(template_name="lab").from_notebook_node(nbformat.read(notebook, as_version=4))
        results.write_atomic(html, body)
    except Exception as exc:  # noqa: BLE001 - the run's results stand without their HTML
        print(f"ingestlab: warning: no HTML of {notebook.name} ({type(exc).__name__}: {_one_line(str(exc))})",
              file=sys.stderr)
        return None
    return html


# -- failures ---------------------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning)|[A-Za-z_][\w.]*Error\w*)"
                       r"(?::\s?(.*))?$")
_DURING = "During handling of the above exception, another exception occurred"
_CAUSE = "The above exception was the direct cause of the following exception"
#: What the engines say when they end a statement's lock wait (PostgreSQL ``lock_timeout``; MySQL, MariaDB).
_LOCK_WAIT_ENDED = ("canceling statement due to lock timeout", "Lock wait timeout exceeded")
_LOST = {"OperationalError", "InterfaceError", "EngineUnavailableError", "ServerError", "LoadError",
         "ConnectionError", "ConnectionResetError", "ConnectionRefusedError", "BrokenPipeError"}


def root_cause(ename: str, evalue: str, traceback: list[str]) -> tuple[str, str]:
    """The failure that started it all, as ``(exception class, message)``.

    In a chain, an exception raised *while handling* another (a cleanup that failed because
    the server was gone) hides the first one: the first is the cause. An exception raised
    *from* another (``raise LabError(...) from exc``) carries its cause in its message: it is
    kept, whatever its own cause went through (a driver's timeout that the driver turned into
    its own error while handling it, which the lab then explained: a cluster that did not form).

    Examples
    --------
    >>> tb = ["OperationalError: server closed the connection", "", _DURING + ":", "",
    ...       "ServerError: pg_ctl stop failed"]
    >>> root_cause("ServerError", "pg_ctl stop failed", tb)
    ('OperationalError', 'server closed the connection')
    >>> tb = ["TimeoutError: timed out", "", _DURING + ":", "", "OperationalError: (2013, 'Lost connection')", "",
    ...       _CAUSE + ":", "", "ServerError: the galera cluster did not form within 90 s"]
    >>> root_cause("ServerError", "the galera cluster did not form within 90 s", tb)
    ('ServerError', 'the galera cluster did not form within 90 s')
    """
    text = _ANSI.sub("", "\n".join(traceback))
    parts = re.split(f"({re.escape(_DURING)}|{re.escape(_CAUSE)})", text)
    groups, links = parts[0::2], parts[1::2]
    at = len(groups) - 1
    while at > 0 and links[at - 1] == _DURING:  # raised while handling the one before: that one is the cause
        at -= 1
    found = None
    for line in groups[at].splitlines():
        match = _EXC_LINE.match(line.strip())
        if match and not line.startswith((" ", "\t")):
            found = (match.group(1).rsplit(".", 1)[-1], (match.group(2) or "").strip())
    if found is None or (at == len(groups) - 1 and found[0] == ename):
        found = (ename, str(evalue))  # the outermost itself: its whole message, not its traceback's line
    return found


def _describe(ename: str, message: str) -> tuple[str, int]:
    if ename == "InterfaceError" and message.replace(" ", "") in ("(0,'')", ""):
        message = "the connection to the server is closed (the server stopped or was killed)"
    code = EXIT_FAILED
    if ename in _LOST:
        code = EXIT_SERVER_LOST
    if ename == "LockNotAvailable" or any(words in message for words in _LOCK_WAIT_ENDED):
        from ingestlab.engines.base import LOCK_WAIT_ENV, lock_wait_s

        code = EXIT_SERVER_LOST
        message = (f"{_one_line(message)} (another session holds a lock the lab's statement needed, longer than the "
                   f"{lock_wait_s():g} s a statement waits for one; ${LOCK_WAIT_ENV} sets it)")
    if ename == "MemoryError" or "No space left on device" in message or f"[Errno {errno.ENOSPC}]" in message:
        code = EXIT_RESOURCES
    if ename == "MemoryError" and not message:
        message = "out of memory"
    return _one_line(f"{ename}: {message}" if message else ename)[:600], code


def _run_error(notebook: str, target: Path, ename: str, evalue: str, traceback: list[str]) -> RunError:
    log = target / "error.log"
    text = _ANSI.sub("", "\n".join(traceback or [f"{ename}: {evalue}"]))
    try:
        results.write_atomic(log, text + "\n")  # on a full disk: no error.log, and no half-written temp file
    except OSError:  # a new private file in the temporary folder, never one another user planted (O_EXCL, 0600)
        fd, name = tempfile.mkstemp(prefix=f"ingestlab-error-{os.getpid()}-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text + "\n")
        log = Path(name)
    name, message = root_cause(ename, evalue, traceback or [])
    cause, code = _describe(name, message)
    if code == EXIT_FAILED and _describe(ename, str(evalue))[1] != EXIT_FAILED:
        code = _describe(ename, str(evalue))[1]
    return RunError(notebook, cause, log, code)


def _stop_own_kernels(timeout_s: float = 10.0) -> None:
    """SIGTERM (then SIGKILL) kernels this process started that are still alive; their handlers stop servers."""
    import psutil

    from ingestlab.servers.base import stop_processes

    kernels = []
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if any("ipykernel" in arg for arg in child.cmdline()):
                kernels.append(child)
    stop_processes(kernels, timeout_s)




def default_out() -> Path:
    """``runs/<UTC timestamp>-<random>`` in the repository: two runs started in one second get two folders."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return _paths.REPO / "runs" / f"{stamp}-{_secrets.token_hex(3)}"
