"""Pre-flight checks: what a run needs that validation cannot see, checked before its notebook starts."""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from ingestlab import _paths, journal, placement, safe_paths
from ingestlab.engine_specs import EngineSpec
from ingestlab.errors import ConfigError, IngestlabError, PreflightError

#: How many seconds a connection attempt of the pre-flight checks may take.
PREFLIGHT_TIMEOUT_S = 5
#: Disk the run's data set takes on a server, as a multiple of its raw bytes (indexes, WAL, copies).
DISK_FACTOR = 3.0
#: Free space a run's output folder needs at least (executed notebook, results, figures).
OUT_MIN_FREE_BYTES = 50 * 2**20


#: What a run of the lab writes in its notebook's folder (``fnmatch`` patterns): ``--force`` replaces a
#: folder holding these and nothing else.
RUN_FILES = ("run.json", "*.parquet", "*.csv", "*.ipynb", "*.html", "kernel.log", "error.log", "figures",
             "checkpoints", ".*.tmp", "*.tmp", ".ingestlab-*")


def not_a_run_s(target: Path) -> list[str]:
    """The names in folder ``target`` that no run of the lab writes (:data:`RUN_FILES`), sorted."""
    return sorted(p.name for p in target.iterdir() if not any(fnmatch.fnmatch(p.name, f) for f in RUN_FILES))


def earlier_run(target: Path) -> ConfigError:
    """The refusal of an output folder ``target`` that is not empty (``--resume``, ``--force`` are the ways on for a run)."""
    others = not_a_run_s(target)
    if others and not (target / "run.json").exists():
        return ConfigError("--out", str(target.parent), f"a new folder: {target} holds files that are not a run's "
                           f"({', '.join(others[:3])}{', …' if len(others) > 3 else ''}); choose another --out")
    return ConfigError("--out", str(target.parent), "a new folder: it already holds a run of "
                       f"{target.name} (add --resume to run into it again, --force to replace it)")


def check_output(target: Path, mode: str = "new") -> None:
    """Refuse an output folder that is a file, holds an earlier run (``mode`` new), or cannot be written.

    Raises
    ------
    ConfigError
        When ``target`` holds an earlier run and ``mode`` is ``"new"``, or another local user could
        redirect it (:func:`ingestlab.safe_paths.check_folder`).
    PreflightError
        When it is a file, not writable, or its disk has less than :data:`OUT_MIN_FREE_BYTES` free.
    """
    safe_paths.check_folder(target, "--out")  # never into a place another user could point elsewhere
    try:
        os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:  # a name too long, a loop of symlinks, a folder above it that may not be entered
        raise PreflightError(f"--out: {target}: {exc.strerror or exc}") from None
    probe_dir = target
    while not probe_dir.exists():
        if os.path.islink(probe_dir):
            raise PreflightError(f"--out: {probe_dir} is a symlink to nothing; give a folder")
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise PreflightError(f"--out: {probe_dir} is a file, not a folder")
    if target.is_dir() and any(target.iterdir()) and mode == "new":
        raise earlier_run(target)
    if target.is_dir() and mode == "force" and not_a_run_s(target):
        others = not_a_run_s(target)
        raise ConfigError("--force", str(target), f"a folder holding a run's files only: {', '.join(others[:3])}"
                          f"{', …' if len(others) > 3 else ''} no run of the lab wrote (move them, or choose another "
                          "--out); nothing was removed")
    try:
        # a name no other user can guess, created exclusively (O_EXCL: never through a planted symlink)
        fd, probe = tempfile.mkstemp(prefix=".ingestlab-probe-", dir=probe_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise PreflightError(f"--out: cannot write in {probe_dir}: {exc.strerror or exc}") from None
    free = shutil.disk_usage(probe_dir).free
    if free < OUT_MIN_FREE_BYTES:
        raise PreflightError(f"--out: only {free / 2**20:.0f} MB free on the disk of {probe_dir}; a run's outputs "
                             f"need {OUT_MIN_FREE_BYTES / 2**20:.0f} MB")


def check(engines: Sequence[EngineSpec], resolved: Any, target: Path, mode: str = "new") -> list[dict]:
    """Check, before the notebook starts, everything a run needs that validation cannot see.

    The output folder (writable, a folder, free space, not a previous run's), the disk for
    the run's data set, and every URL among ``engines``: reachable within :data:`PREFLIGHT_TIMEOUT_S`,
    the login and database accepted, the URL's options known to the driver, the right to
    create a table, and the settings the variants need allowed (``?set_global=true``).
    Settings a killed run left changed on a target are put back here.

    Returns
    -------
    list of dict
        The settings put back (``url``, ``setting``, ``restored_to``), for ``run.json``.

    Raises
    ------
    PreflightError
        One line naming what failed (passwords masked).
    """
    check_output(target, mode)
    check_environment()
    _check_disk(resolved)
    variants = tuple(getattr(resolved, "variants", ()) or ())
    return [entry for spec in engines if spec.connection is not None for entry in _check_target(spec, variants)]


def check_environment() -> None:
    """The lab's settings from the environment, checked before any notebook (``ingestlab run`` says so in one line).

    ``$INGESTLAB_LOCK_WAIT_S``, ``$INGESTLAB_PLACEMENT``, ``$INGESTLAB_WAKEUP`` and ``$INGESTLAB_HTML`` well formed; the lab's
    servers' folder and ``$INGESTLAB_FIGURES_DIR`` folders on a disk that stores files.

    Raises
    ------
    ConfigError, PreflightError
        One line naming the variable and what it should be.
    """
    from ingestlab.engines.base import lock_wait_s
    from ingestlab.runner import html_wanted

    lock_wait_s()
    placement.policy(), placement.wakeup()
    html_wanted()
    _check_lab_dir()
    _check_figures_dir()


def bounds_line() -> str:
    """What bounds the run's waits on URL targets, as the pre-flight states it."""
    from ingestlab import watch as _watch
    from ingestlab.engines.base import lock_wait_s

    return (f"   URL targets: a connection attempt times out after {PREFLIGHT_TIMEOUT_S} s, a statement's wait for a "
            f"lock after {lock_wait_s():g} s; a target that answers no new connection "
            f"{_watch.FAILED_PROBES} times in a row while the run has waited on it {_watch.IDLE_S:g} s ends the run")


def _check_lab_dir() -> None:
    """The lab's servers' folder (``$INGESTLAB_LAB_DIR`` or ``.lab``) is a folder, or can be made one."""
    lab = _paths.lab_dir()
    existing = next((p for p in (lab, *lab.parents) if os.path.lexists(p)), None)
    where = "$INGESTLAB_LAB_DIR" if os.environ.get("INGESTLAB_LAB_DIR") else "the lab's folder"
    if existing is not None and not existing.is_dir():
        raise PreflightError(f"{where} {lab}: {existing} is not a folder; point $INGESTLAB_LAB_DIR at a folder")
    _check_can_hold(existing, f"{where} {lab}", "point $INGESTLAB_LAB_DIR at a folder on a disk this user can write")


def _check_figures_dir() -> None:
    """``$INGESTLAB_FIGURES_DIR``, when set, is a folder (or can be made one) on a disk this user can write."""
    folder = _paths.figures_redirect()
    if folder is None:
        return
    existing = next((p for p in (folder, *folder.parents) if os.path.lexists(p)), None)
    if existing is not None and not existing.is_dir():
        raise PreflightError(f"${_paths.FIGURES_ENV} {folder}: {existing} is not a folder; point it at a folder")
    _check_can_hold(existing, f"${_paths.FIGURES_ENV} {folder}", "point it at a folder on a disk this user can write")


def _check_can_hold(existing: Path | None, what: str, advice: str) -> None:
    """Refuse a folder, the deepest existing part of one the lab will make, that cannot hold files."""
    if existing is None:
        return
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PreflightError(f"{what}: {existing} is not writable; {advice}")
    if os.statvfs(existing).f_blocks == 0:  # /proc, /sys: root may "write" there, but nothing is stored
        raise PreflightError(f"{what}: {existing} is on a virtual filesystem that stores nothing; {advice}")


def _check_disk(resolved: Any) -> None:
    from ingestlab import datagen

    rows = getattr(resolved, "dataset_rows", None)
    if not rows:
        return
    need = rows * datagen.DOC_BYTES * DISK_FACTOR
    lab = _paths.lab_dir()
    probe = lab if lab.exists() else _paths.REPO
    free = shutil.disk_usage(probe).free
    if need > free:
        raise PreflightError(f"disk: the run's data set ({rows:,} rows) needs about {need / 2**30:.1f} GB on the "
                             f"servers' disk ({probe}), which has {free / 2**30:.1f} GB free; lower DATASET_MULTIPLE "
                             "or MEMORY_BUDGET_MB, or set $INGESTLAB_LAB_DIR to a larger disk")


def probe(spec: EngineSpec) -> None:
    """Open and close a connection to the server of ``spec`` within :data:`PREFLIGHT_TIMEOUT_S` (raise if it cannot)."""
    engine = spec.engine()
    engine.timeout_s = PREFLIGHT_TIMEOUT_S
    try:
        engine.start()
    finally:
        engine.close()


def _check_target(spec: EngineSpec, variants: tuple[str, ...]) -> list[dict]:
    from ingestlab.engines import capabilities
    from ingestlab.engines.base import STUDY_COLUMNS

    engine = spec.engine()
    engine.timeout_s = PREFLIGHT_TIMEOUT_S  # a server that accepts and never answers fails here, not hangs
    where = f"{spec.parameter} {engine.display_url}"
    before = os.environ.get("PGCONNECT_TIMEOUT")
    os.environ["PGCONNECT_TIMEOUT"] = str(PREFLIGHT_TIMEOUT_S)
    try:
        engine.start()
        table = f"ingestlab_preflight_{os.getpid()}"
        engine.tables.reset(table, STUDY_COLUMNS)
        engine.execute(engine.sql.drop_table_sql(table))
    except TypeError as exc:  # PyMySQL: an unknown connect() keyword, i.e. an unknown URL option
        raise PreflightError(f"{where}: unknown URL option ({one_line(str(exc))})") from None
    except _driver_errors() as exc:
        raise PreflightError(f"{where}: {one_line(_unwrap(exc))}") from None
    finally:
        if before is None:
            os.environ.pop("PGCONNECT_TIMEOUT", None)
        else:
            os.environ["PGCONNECT_TIMEOUT"] = before
        engine.close()
    for variant in variants:
        settings = capabilities.of(engine, "commit_variants").VARIANTS.get(variant, {})
        global_only = sorted(set(settings) - set(engine.SESSION_SETTINGS))
        if global_only and not getattr(engine, "set_global_allowed", False):
            raise PreflightError(f"{where}: variant {variant} needs {', '.join(global_only)}, a server-wide "
                                 "setting; add ?set_global=true to the URL to allow it (put back at the end), or "
                                 "leave that variant out with -p VARIANTS")
    return restore_journal(spec)


def _driver_errors() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = [IngestlabError, OSError]
    try:
        import psycopg2

        found.append(psycopg2.Error)
    except ImportError:
        pass
    try:
        import pymysql

        found.append(pymysql.err.MySQLError)
    except ImportError:
        pass
    try:
        import MySQLdb  # mysqlclient, the default MySQL driver where it is installed

        found.append(MySQLdb.MySQLError)
    except ImportError:
        pass
    return tuple(found)


def _unwrap(exc: BaseException) -> str:
    """The message of the innermost exception ``exc`` was raised from, with its class name."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return f"{type(exc).__name__}: {exc}"


def one_line(text: str) -> str:
    """``text`` on one line: every run of white space one space."""
    return " ".join(str(text).split())


# -- settings changed on users' servers -------------------------------------------------------
def restore_journal(spec: EngineSpec) -> list[dict]:
    """Put back settings a killed run left changed on the server of ``spec`` (a URL); return what was done."""
    connection = spec.connection  # parsed once: the journal, the adapter and every message use this value
    entry = journal.pending(connection)
    if not entry:
        return []
    engine = spec.engine()
    engine.timeout_s = PREFLIGHT_TIMEOUT_S  # a server that stalled during the run must not hang its clean-up
    shown = connection.display()
    done = []
    try:
        engine.start()
        for name, value in entry["settings"].items():
            engine.restore_global(name, value)
            done.append({"url": shown, "setting": name, "restored_to": value})
    except _driver_errors() as exc:
        print(f"ingestlab: warning: could not put back {', '.join(entry['settings'])} on {shown} "
              f"({one_line(_unwrap(exc))}); journal kept in {journal.path()}", file=sys.stderr)
    finally:
        engine.close()
    return done
