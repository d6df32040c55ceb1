"""The results store: tidy parquet samples plus ``run.json`` metadata, written as a run goes."""

from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import platform
import socket
import subprocess
import sys
import time
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import psutil

from ingestlab import _paths, checkpoints, disk, placement
from ingestlab.conninfo import is_url, mask_url
from ingestlab.errors import ConfigError

if TYPE_CHECKING:  # pandas is imported where a frame is built: the runner, which writes run.json and never a
    import pandas as pd  # frame, starts each of a suite's hundred runs without its import (0.2 s of CPU)

#: Packages whose versions every run records, beside each registered engine's own (its ``PACKAGE``).
RECORDED_PACKAGES = ("ingestlab", "numpy", "pandas", "scipy", "statsmodels", "psycopg2-binary", "psycopg", "pymysql",
                     "mysqlclient",
                     "sqlalchemy", "pyarrow", "chdb-core", "polars",
                     "papermill", "matplotlib", "seaborn")
#: The columns of ``fits.csv`` in every notebook, exactly and in this order: the lab's long form of a fit, one
#: row per term (:func:`ingestlab.models.tidy`). The last six say whether the fit's model holds.
FIT_COLUMNS = ["notebook", "engine", "variant", "model", "method", "term", "estimate", "ci_low", "ci_high", "unit",
               "n_points", "r2", "adequacy_test", "lack_of_fit_p", "loo_error", "loo_in_pi", "model_holds",
               "model_note"]


#: Sub-folder of a run directory that receives the run's figures (:func:`ingestlab.figures.save`).
FIGURES_SUBDIR = "figures"
#: Seconds between rewrites of a table's parquet while a configuration appends to it: every rewrite is the
#: whole table, and a run appending many small frames spent a fifth of its time rewriting on every append.
FLUSH_INTERVAL_S = 1.0
#: The formats a figure is saved in (:func:`ingestlab.figures.save`), all of them unless
#: ``$INGESTLAB_FIGURE_FORMATS`` names fewer (:func:`figure_formats`); the article's ``figures/`` takes all.
FIGURE_FORMATS = ("png", "svg", "pdf")
FIGURE_FORMATS_ENV = "INGESTLAB_FIGURE_FORMATS"
# the figures folder of the run each notebook opened last in this process
_OPEN_RUNS: dict[str, Path] = {}


def run_figures_dir(notebook: str) -> Path | None:
    """The figures folder of the :class:`Run` of ``notebook`` opened last in this process, or None.

    Examples
    --------
    >>> run_figures_dir("no_such_notebook") is None
    True
    """
    return _OPEN_RUNS.get(notebook)


def figure_formats() -> tuple[str, ...]:
    """The formats this process saves figures in: ``$INGESTLAB_FIGURE_FORMATS``, else :data:`FIGURE_FORMATS`.

    The variable is a comma-separated choice among ``png``, ``svg`` and ``pdf`` that includes
    ``png`` (the figure grammar's size check and the notebook's inline display read the PNG).
    PNG alone saves about 0.6 s of CPU per figure (the tests use it); such a run's figures are
    not promoted into the article's ``figures/`` (:mod:`ingestlab.promotion`).

    Returns
    -------
    tuple of str
        In the order of :data:`FIGURE_FORMATS`.

    Raises
    ------
    ConfigError
        If the variable names another format, or not ``png``.

    Examples
    --------
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {FIGURE_FORMATS_ENV: "pdf, PNG"}):
    ...     figure_formats()
    ('png', 'pdf')
    >>> with mock.patch.dict(os.environ, {FIGURE_FORMATS_ENV: "svg"}):
    ...     figure_formats()
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: INGESTLAB_FIGURE_FORMATS='svg' is not valid: expected a comma-separated choice of png, svg, pdf that includes png
    """
    text = os.environ.get(FIGURE_FORMATS_ENV, "").strip()
    if not text:
        return FIGURE_FORMATS
    chosen = {part.strip().lower() for part in text.split(",") if part.strip()}
    if "png" not in chosen or not chosen <= set(FIGURE_FORMATS):
        raise ConfigError(FIGURE_FORMATS_ENV, text, "a comma-separated choice of "
                          + ", ".join(FIGURE_FORMATS) + " that includes png")
    return tuple(fmt for fmt in FIGURE_FORMATS if fmt in chosen)


def figure_files(folder: str | os.PathLike) -> list[Path]:
    """The figure files in ``folder`` (a run's ``figures/``, or the article's per notebook), sorted; none if it is absent.

    Examples
    --------
    >>> figure_files("/no/such/folder")
    []
    """
    folder = Path(folder)
    return sorted(p for p in folder.glob("*") if p.is_file() and p.suffix.lstrip(".") in FIGURE_FORMATS
                  ) if folder.is_dir() else []


def _earlier_cpu(previous: dict) -> dict | None:
    # how busy others kept the machine while the kept configurations were measured: the earlier run's own record,
    # or, if it was itself a resumed run, the worse of its record and the one it kept; if that resume measured
    # nothing (a redraw), only the one it kept, as for its revision and load (Run.__init__)
    own, kept = previous.get("machine_cpu"), (previous.get("resumed") or {}).get("machine_cpu_before")
    if (previous.get("resumed") or {}).get("measured") == 0 and kept is not None:
        return kept
    shares = [c for c in (own, kept) if isinstance(c, dict) and isinstance(c.get("others_cpu_share"), (int, float))]
    return max(shares, key=lambda c: c["others_cpu_share"]) if shares else own or kept


def _load_average() -> list[float]:
    # the machine's 1, 5 and 15 min load: other work on it slows every measurement
    return [round(v, 2) for v in os.getloadavg()]


def _cpu_seconds() -> dict[str, float]:
    # the machine's CPU time by kind since boot: the run's share of steal (a neighbour on the
    # host), iowait and others' work is the difference of its end and start
    return {k: round(v, 2) for k, v in psutil.cpu_times()._asdict().items()}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Run:
    """One execution of an experiment: its samples, tables and metadata on disk.

    ``run.json`` is written at creation with ``completed: false`` and rewritten whenever
    anything is added, so a run that is killed half-way keeps every sample it measured and
    says it did not complete. :meth:`finish` sets ``completed: true``.

    Workloads measure each configuration through :meth:`once`, which stores its tables as a
    checkpoint (:mod:`ingestlab.checkpoints`) when it completes. A run resumed by
    ``ingestlab run --resume`` (or with ``resume=True``) keeps the checkpoints of the run it
    continues, measures only the configurations they lack and records ``resumed`` (how many
    configurations it kept and measured) in ``run.json``; its parameters must equal that
    run's.

    Parameters
    ----------
    notebook : str or ingestlab.workloads.Notebook
        The experiment's notebook: its workload's declaration (``insert.NOTEBOOK``) or its name
        (``"<id>_<name>"``).
    parameters : dict
        The run's parameters (URL passwords are masked before they are stored).
    out_dir : path, optional
        Where to write; default ``data/results/<notebook>/<UTC timestamp>``.
    resume : bool, optional
        Continue the interrupted run in ``out_dir``; default: when the batch runner says so
        (:func:`ingestlab.checkpoints.resuming`).

    Attributes
    ----------
    dir : Path
        The run directory.
    figures_dir : Path
        ``<dir>/figures``, where the notebook's figures go (created on the first figure).

    Raises
    ------
    ConfigError
        When resuming with parameters other than the interrupted run's.
    """

    def __init__(self, notebook: Any, parameters: dict[str, Any], out_dir: str | os.PathLike | None = None,
                 resume: bool | None = None):
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        notebook = getattr(notebook, "stem", notebook)  # a workload's NOTEBOOK declaration, or its stem
        self.notebook = notebook
        self.dir = Path(out_dir) if out_dir else _paths.results_dir() / notebook / f"{stamp}-{os.getpid()}"
        self.dir.mkdir(parents=True, exist_ok=True)
        resume = checkpoints.resuming(self.dir) if resume is None else resume
        previous = _previous_meta(self.dir, parameters) if resume else {}
        self.checkpoints = checkpoints.Checkpoints(self.dir, keep=resume)
        (self.dir / "fits.csv").unlink(missing_ok=True)  # a previous run's fits must not stand beside this run
        self.figures_dir = self.dir / FIGURES_SUBDIR
        _OPEN_RUNS[notebook] = self.figures_dir
        self.meta: dict[str, Any] = {
            "notebook": notebook,
            "completed": False,
            "started_at": _now(),
            "ended_at": None,
            "parameters": {k: _mask(v) for k, v in parameters.items()},
            "engines": [],
            "warmup": {},
            "notes": [],
            "host": host_info(self.dir),
            "software": software_info(),
            "figure_formats": list(figure_formats()),
            "git": git_info(),
            "configurations": {"kept": 0, "measured": 0},
            "load_average": {"start": _load_average(), "end": None},
            "cpu_seconds": {"start": _cpu_seconds(), "end": None},
        }
        if resume:
            self.meta.update(started_at=previous.get("started_at"), engines=previous.get("engines", []),
                             notes=previous.get("notes", []))
            # a resume of a resume that measured nothing keeps what measured: that earlier run's revision and load
            earlier = previous.get("resumed") or {}
            source = earlier if earlier and not earlier.get("measured") and earlier.get("git_before") else {
                "git_before": previous.get("git"), "load_average_before": previous.get("load_average")}
            self.meta["resumed"] = {"at": _now(), "checkpoints_found": len(self.checkpoints.found),
                                    "kept": 0, "measured": 0, "git_before": source.get("git_before"),
                                    "load_average_before": source.get("load_average_before"),
                                    "machine_cpu_before": _earlier_cpu(previous)}
            print(f"resuming: {len(self.checkpoints.found)} completed configurations found in {self.checkpoints.dir}; "
                  "they are kept, not measured again")
        self._frames: dict[str, list[pd.DataFrame]] = {}
        self._open: dict[str, list[pd.DataFrame]] | None = None
        self._unwritten: set[str] = set()
        self._written_at = time.monotonic()
        self._write_meta()

    # -- configurations ---------------------------------------------------------------------
    def once(self, key: dict[str, Any], measure: Callable[[], Any]) -> dict[str, pd.DataFrame]:
        """Measure one configuration, unless this run's checkpoints hold it; return its tables.

        ``measure()`` appends its rows with :meth:`append` as usual (an interrupted
        configuration keeps what it appended, as every run does). When it returns, the
        tables it appended are stored as the checkpoint of ``key`` (engine, variant,
        scenario…: whatever names the configuration, JSON values). When a resumed run
        already holds ``key``, ``measure`` is not called: the stored tables are appended
        instead, so the run's tables are the kept configurations' rows plus the new ones.
        A configuration's measurement must not depend on an earlier one having run in the
        same process (each starts from a table of its own).

        Returns
        -------
        dict
            Table name → the configuration's rows (only the tables it appended to).
        """
        if self._open is not None:
            raise RuntimeError("Run.once: configurations do not nest")
        key = {k: _mask(v) for k, v in key.items()}
        stored = self.checkpoints.get(key)
        if stored is not None:
            for table, frame in stored.items():
                self.append(frame, table=table)
            self._count("kept")
            return stored
        import pandas as pd

        self._open = {}
        try:
            measure()
            tables = {t: pd.concat(f, ignore_index=True) for t, f in self._open.items()}
        finally:
            self._open = None
            self.flush()  # whatever ended the configuration, its rows are on disk
        self.checkpoints.put(key, tables)
        self._count("measured")
        return tables

    def _count(self, how: str) -> None:
        self.meta["configurations"][how] += 1
        if "resumed" in self.meta:
            self.meta["resumed"][how] += 1
        self._write_meta()

    # -- what a run records ---------------------------------------------------------------
    def record_engine(self, engine, **labels) -> dict:
        """Store ``engine.metadata()`` (version, every non-default setting) with ``labels``."""
        entry = json.loads(json.dumps({**labels, **engine.metadata()}, default=str))
        if entry not in self.meta["engines"]:  # a resumed run records the same engine and variant once
            self.meta["engines"].append(entry)
        self.meta["host"]["placement"] = placement.describe()  # as it is while the engine runs (wake-up held)
        self._write_meta()
        return entry

    def record_compared(self, runs: list[dict]) -> None:
        """Store the runs whose data this run draws without measuring (its declaration's ``compares``) as ``compared``.

        Each is a subset of the other run's ``run.json`` with its ``role`` and ``folder``
        (:attr:`ingestlab.workloads.Notebook.compares`); the promotion and the
        captions read what measured the data from them.
        """
        self.meta["compared"] = json.loads(json.dumps(runs, default=str))
        self._write_meta()

    def note(self, text: str) -> None:
        """Add a free-text note to the metadata (e.g. a fallback that was taken); a note already there is not repeated."""
        if text not in self.meta["notes"]:
            self.meta["notes"].append(text)
        self._write_meta()

    def append(self, frame: pd.DataFrame, table: str = "results", **labels) -> None:
        """Add rows to ``<table>.parquet``, with ``labels`` as columns.

        The file is rewritten at once, or, inside a configuration (:meth:`once`), at most every
        :data:`FLUSH_INTERVAL_S` and when the configuration ends, however it ends.
        """
        frame = frame.assign(**labels) if labels else frame
        self._frames.setdefault(table, []).append(frame)
        self._unwritten.add(table)
        if self._open is not None:
            self._open.setdefault(table, []).append(frame)
        if self._open is None or time.monotonic() - self._written_at >= FLUSH_INTERVAL_S:
            self.flush()

    def flush(self) -> None:
        """Rewrite the parquet file of every table appended to since the last write, and ``run.json``."""
        import pandas as pd

        for table in sorted(self._unwritten):
            data = pd.concat(self._frames[table], ignore_index=True)
            _atomic_parquet(data, self.dir / f"{table}.parquet")
            if "warmup" in data.columns:
                self.meta["warmup"][table] = int(data["warmup"].sum())
        self._unwritten.clear()
        self._written_at = time.monotonic()
        self._write_meta()

    def table(self, table: str = "results") -> pd.DataFrame:
        """Everything appended to ``table`` so far."""
        import pandas as pd

        frames = self._frames.get(table, [])
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def save_csv(self, frame: pd.DataFrame, name: str) -> Path:
        """Write a derived table as ``<name>.csv`` in the run directory."""
        path = self.dir / f"{name}.csv"
        _atomic(path, lambda tmp: frame.to_csv(tmp, index=False))
        return path

    def finish(self, fits: pd.DataFrame | None = None, headline: dict | None = None) -> None:
        """Write ``fits.csv`` and the headline numbers; mark the run completed.

        Raises
        ------
        ValueError
            When ``fits`` is not in the lab's long form (exactly :data:`FIT_COLUMNS`).
        """
        if fits is not None:
            if list(fits.columns) != FIT_COLUMNS:
                raise ValueError("fits must be in the lab's long form (ingestlab.models.tidy): columns "
                                 f"{FIT_COLUMNS}, got {list(fits.columns)}")
            fits = fits.assign(notebook=self.notebook)
            _atomic(self.dir / "fits.csv", lambda tmp: fits.to_csv(tmp, index=False))
        if headline is not None:
            self.meta["headline"] = headline
        self.meta["completed"] = True
        self.meta.setdefault("load_average", {})["end"] = _load_average()
        self.meta.setdefault("cpu_seconds", {})["end"] = _cpu_seconds()
        self._write_meta()

    def _write_meta(self) -> None:
        self.meta["ended_at"] = _now()
        text = json.dumps(self.meta, indent=2, default=str)
        _atomic(self.dir / "run.json", lambda tmp: tmp.write_text(text))


def _previous_meta(directory: Path, parameters: dict[str, Any]) -> dict[str, Any]:
    """The ``run.json`` of the interrupted run in ``directory`` (empty if none), its parameters checked."""
    try:
        meta = json.loads((directory / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    differ = checkpoints.same_parameters(meta.get("parameters", {}), mask_parameters(parameters))
    if differ:
        raise ConfigError("--resume", str(directory), "the interrupted run's parameters; these differ: "
                          + ", ".join(differ) + " (run into a new --out, or --force to start over)")
    return meta


def record_outcome(directory: str | os.PathLike, notebook: str, parameters: dict[str, Any],
                   error: dict | None, restored: list[dict] | None = None, machine_cpu: dict | None = None
                   ) -> str | None:
    """Add a failure (``error``: cause, exit code, traceback file), settings put back and the machine's CPU to ``run.json``.

    ``machine_cpu`` is :meth:`ingestlab.watch.CpuShareWatch.result` (``others_cpu_share``: the
    share of the machine's CPU that processes outside the run used while it ran).

    The batch runner calls this after the kernel is gone; a ``run.json`` is created (with
    ``completed: false``) when the notebook failed before writing one. Returns why it could
    not be written (a full disk, a folder made read-only), or None.
    """
    path = Path(directory) / "run.json"
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError):
        meta = {"notebook": notebook, "completed": False, "started_at": None, "ended_at": _now(),
                "parameters": {k: _mask(v) for k, v in parameters.items()}}
    if error is not None:
        meta["completed"] = False
        meta["error"] = error
    if restored:
        meta.setdefault("settings_restored", []).extend(restored)
    if machine_cpu is not None:
        meta["machine_cpu"] = machine_cpu
    text = json.dumps(meta, indent=2, default=str)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic(path, lambda tmp: tmp.write_text(text))
    except OSError as exc:  # a full or read-only disk: the terminal line still says what failed
        return exc.strerror or str(exc)
    return None


def _atomic(path: Path, write) -> None:
    """``write(tmp)`` then rename ``tmp`` over ``path``; a failed write leaves ``path`` as it was and no tmp."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed into place; a failed write leaves no temp file."""
    _atomic(Path(path), lambda tmp: tmp.write_text(text))


def load_run(directory: str | os.PathLike) -> tuple[pd.DataFrame, dict]:
    """Read a run directory back: ``(results frame, run.json dict)``."""
    import pandas as pd

    directory = Path(directory)
    meta = json.loads((directory / "run.json").read_text())
    path = directory / "results.parquet"
    return (pd.read_parquet(path) if path.exists() else pd.DataFrame()), meta


def _atomic_parquet(frame: pd.DataFrame, path: Path) -> None:
    _atomic(path, lambda tmp: frame.to_parquet(tmp, index=False))


def _mask(value: Any) -> Any:
    return mask_url(value) if is_url(value) else value


def mask_parameters(parameters: dict[str, Any]) -> dict[str, Any]:
    """``parameters`` as ``run.json`` stores them: every URL's password masked.

    Examples
    --------
    >>> mask_parameters({"target": "mysql://u:pw@db/x", "n": 3})
    {'target': 'mysql://u:***@db/x', 'n': 3}
    """
    return {k: _mask(v) for k, v in parameters.items()}


# -- metadata collectors ----------------------------------------------------------------
def host_info(path: Path | None = None) -> dict[str, Any]:
    """CPU model, cores, RAM, OS and the disk holding ``path``."""
    info: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "ram_bytes": _meminfo_total(),
        "user": getpass.getuser(),
    }
    info["disk"] = disk_info(path or Path.cwd())
    info["lab_file_create"] = disk.file_create_us(_paths.lab_dir())  # chDB's INSERT creates ~20 files: a run state
    info["placement"] = placement.describe()
    info["transparent_hugepage"] = _bracketed("/sys/kernel/mm/transparent_hugepage/enabled")
    info["cpu_governor"] = _bracketed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    return info


def _bracketed(path: str) -> str | None:
    """A sysfs setting: the chosen word of ``always [madvise] never``, or the file's text; None when absent."""
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    chosen = [w for w in text.split() if w.startswith("[")]
    return chosen[0].strip("[]") if chosen else text


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _meminfo_total() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def disk_info(path: Path) -> dict[str, Any]:
    """Device, file system and (where Linux says) model and rotational flag for ``path``."""
    path = Path(path).resolve()
    try:
        st = os.stat(path)
    except OSError:
        return {}
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    out: dict[str, Any] = {"device": f"{major}:{minor}", **disk.mount_of(path)}
    sys_dev = Path(f"/sys/dev/block/{major}:{minor}")
    if sys_dev.exists():
        block = sys_dev.resolve()
        queue = block / "queue" if (block / "queue").exists() else block.parent / "queue"
        for key, rel in (("rotational", queue / "rotational"), ("model", block / "device" / "model")):
            try:
                out[key] = rel.read_text().strip()
            except OSError:
                pass
    return out


def software_info() -> dict[str, Any]:
    """Python version and the versions of the packages that shape a measurement."""
    from ingestlab.engines import registry

    engines = [c.PACKAGE for c in registry.classes().values() if c.PACKAGE]
    versions = {}
    for name in dict.fromkeys([*RECORDED_PACKAGES, *engines]):
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = None
    return {"python": sys.version.split()[0], "executable": sys.executable, "packages": versions}


def git_info() -> dict[str, Any]:
    """The repository's revision and whether the work tree had uncommitted changes.

    The committed article figures (``figures/``) are an output, not code:
    figures promoted and not yet committed do not make a run "dirty".

    The notebooks pass through a clean filter (nbstripout, installed by ``make``), a Python
    process per notebook: a status through it takes 15 s in a fresh clone (every file is
    re-read once). So the tree is first compared byte for byte (the filter replaced by
    ``cat``: a committed notebook has no outputs, so an unchanged one is equal, and git
    records that it is); only notebooks that differ then have their contents compared through
    the filter (``git diff``; a status would call any change of size a change), which tells
    saved outputs (not a change) from changed code.
    """
    def git(*args: str, timeout: float = 10) -> str | None:
        try:
            return subprocess.run(["git", "-C", str(_paths.REPO), *args], capture_output=True, text=True,
                                  timeout=timeout, check=True).stdout.rstrip()
        except (OSError, subprocess.SubprocessError):
            return None

    where = ("--", ".", ":(exclude)figures")
    status = git("-c", "filter.nbstripout.clean=cat", "status", "--porcelain", "--untracked-files=no", *where)
    notebooks = [line[3:] for line in (status or "").splitlines() if line.endswith((".ipynb", ".zpln"))]
    if status and len(notebooks) == len(status.splitlines()):  # only notebooks differ: through the filter
        status = git("diff", "HEAD", "--name-only", "--", *notebooks, timeout=120)
    return {"revision": git("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None}
