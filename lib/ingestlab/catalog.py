"""Every run under a folder in one in-memory DuckDB: views over the runs' own files, queried with SQL."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import duckdb
import pandas as pd
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from ingestlab import _paths
from ingestlab.errors import ConfigError
from ingestlab.results import FIT_COLUMNS  # older runs' wide fits.csv are read beside the long form by name

#: The file that makes a folder a run folder.
RUN_FILE = "run.json"
#: The file of a run's fitted models.
FITS_FILE = "fits.csv"
#: Seconds an interrupted query is given to stop before the command ends anyway.
INTERRUPT_WAIT_S = 60.0
#: Names of the column holding one timed operation's wall-clock duration (a statement, batch, load or scan).
TIME_COLUMNS = ("elapsed_s", "seconds")
#: The views a catalogue holds.
VIEWS = ("runs", "samples", "fits", "files")
#: The three states of a run folder in the ``runs`` view.
STATES = ("completed", "incomplete", "corrupt")
# columns the catalogue adds to the samples view (a table's own column of the same name is left out)
_ADDED = ("folder", "notebook", "sample_table", "elapsed_s")


def default_root() -> Path:
    """The folder the catalogue reads by default: the repository's ``runs/``."""
    return _paths.REPO / "runs"


def is_sample_table(columns) -> bool:
    """Whether a parquet table with these columns holds raw timed samples.

    The rule: a table is a table of samples when it has a duration column
    (:data:`TIME_COLUMNS`: ``elapsed_s`` per statement or batch, ``seconds`` per load or
    scan) and an ``engine`` column, i.e. each row is one timed operation on an engine.
    Summaries (``throughput``), counters without their own clock (``client_cpu``,
    ``memory``, ``checks``), component breakdowns (``anatomy``) and machine calibrations
    without an engine (``disk``) are not samples.

    Examples
    --------
    >>> is_sample_table(["statement_no", "elapsed_s", "engine"]), is_sample_table(["tool", "seconds"])
    (True, False)
    """
    columns = set(columns)
    return "engine" in columns and any(c in columns for c in TIME_COLUMNS)


@dataclass
class RunFolder:
    """One run folder as the catalogue found it: its metadata, state and readable files.

    Attributes
    ----------
    folder : Path
        The folder holding ``run.json``.
    meta : dict
        ``run.json`` (empty when it cannot be read).
    state : str
        ``completed``, ``incomplete`` or ``corrupt`` (:data:`STATES`).
    problems : list of str
        Why the run is corrupt (empty otherwise).
    tables : dict
        Table name → parquet file, every readable table of the run.
    columns : dict
        Table name → its column names.
    fits : Path or None
        ``fits.csv`` when it is there and reads.
    """

    folder: Path
    meta: dict[str, Any] = field(default_factory=dict)
    state: str = "corrupt"
    problems: list[str] = field(default_factory=list)
    tables: dict[str, Path] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)
    fits: Path | None = None

    @property
    def notebook(self) -> str:
        """The notebook named in ``run.json``, else the folder's name."""
        name = self.meta.get("notebook")
        return name if isinstance(name, str) and name else self.folder.name

    @property
    def sample_tables(self) -> dict[str, Path]:
        """The tables of raw timed samples (:func:`is_sample_table`)."""
        return {t: p for t, p in self.tables.items() if is_sample_table(self.columns[t])}


def find_runs(root: str | os.PathLike) -> list[Path]:
    """Every folder under ``root`` (``root`` included) that holds a ``run.json``, sorted; hidden folders skipped.

    Raises
    ------
    ConfigError
        When ``root`` is not a folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise ConfigError("--root", str(root), "a folder holding run folders (each with run.json)")
    found = []
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if RUN_FILE in files:
            found.append(Path(here))
    return sorted(found)


def _writes_fits(notebook: object) -> bool:
    """Whether a completed run of ``notebook`` writes ``fits.csv``: its declaration has a ``fit``, or it has none."""
    from ingestlab.workloads import discover

    book = discover().get(notebook) if isinstance(notebook, str) else None
    return book is None or book.fit is not None


def probe(folder: str | os.PathLike) -> RunFolder:
    """Read a run folder's ``run.json`` and the footers of its files; never raises for a damaged run.

    A run is ``corrupt`` when ``run.json`` is not a JSON object with a ``notebook`` and a
    ``completed`` flag, when one of its parquet tables or its ``fits.csv`` cannot be read,
    or when a file it should have is missing (a table ``run.json`` counts warm-up rows of,
    or ``fits.csv`` of a completed run of a notebook that fits: ``Notebook.fit``). Otherwise it
    is ``completed`` or ``incomplete`` as ``run.json`` says. The readable files of a corrupt run stay in the catalogue.
    """
    run = RunFolder(Path(folder))
    linked = sorted(p.name for p in [run.folder / RUN_FILE, run.folder / FITS_FILE, *run.folder.glob("*.parquet")]
                    if p.is_symlink())
    if linked:
        # a run's file that is a link may point anywhere (another user's planted link to a private file)
        run.problems.append(f"{', '.join(linked)}: symbolic link{'s' if len(linked) > 1 else ''}, not read")
    try:
        if (run.folder / RUN_FILE).is_symlink():
            raise OSError("a symbolic link")
        meta = json.loads((run.folder / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        run.problems.append(f"{RUN_FILE} unreadable ({_first_line(exc)})")
        meta = None
    if meta is not None and not (isinstance(meta, dict) and isinstance(meta.get("notebook"), str)
                                 and isinstance(meta.get("completed"), bool)):
        run.problems.append(f"{RUN_FILE} is not a run's metadata (no notebook or completed flag)")
        meta = None
    run.meta = meta or {}
    for path in sorted(p for p in run.folder.glob("*.parquet") if not p.is_symlink()):
        try:
            run.columns[path.stem] = list(pq.read_schema(path).names)
            run.tables[path.stem] = path
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            run.problems.append(f"{path.name} unreadable ({_first_line(exc)})")
    fits = run.folder / FITS_FILE
    if fits.is_symlink():
        pass  # said above
    elif fits.is_file():
        try:
            with duckdb.connect(":memory:") as con:
                con.sql(f"SELECT count(*) FROM read_csv({_quote(_literal(fits))})").fetchall()
            run.fits = fits
        except duckdb.Error as exc:
            run.problems.append(f"{FITS_FILE} unreadable ({_first_line(exc)})")
    elif run.meta.get("completed") and _writes_fits(run.meta.get("notebook")):
        run.problems.append(f"{FITS_FILE} missing in a completed run")
    warmup = run.meta.get("warmup")
    for table in warmup if isinstance(warmup, dict) else ():
        if not (run.folder / f"{table}.parquet").exists():
            run.problems.append(f"{table}.parquet missing ({RUN_FILE} counts its warm-up rows)")
    if not run.problems:
        run.state = "completed" if run.meta["completed"] else "incomplete"
    return run


class Catalog:
    """An in-memory DuckDB holding views over every run folder under ``root``.

    The views read the runs' files when a query runs (nothing is copied):

    ``runs``
        One row per run folder: ``folder, notebook, state, problem, completed,
        started_at, ended_at, revision, dirty, scale, parameters`` (JSON text),
        ``engines`` (``label version (variant)``, comma-separated), ``host, cpu_model,
        cores, memory_bytes, load_start, load_end`` (1-minute load averages), ``headline``
        (JSON text).
    ``samples``
        Every raw timed sample: the union by column name of every run's tables of samples
        (:func:`is_sample_table`), warm-up rows included (flagged by their ``warmup``
        column), with ``folder``, ``notebook``, ``sample_table`` and ``elapsed_s`` (the
        duration, from ``elapsed_s`` or ``seconds``) first.
    ``fits``
        Every run's ``fits.csv`` by column name, with ``folder``.
    ``files``
        Every readable file: ``folder, notebook, table_name, kind`` (``samples``,
        ``table`` or ``fits``), ``path``.

    Folders are given as paths relative to ``root``. A corrupt or incomplete run is listed
    with its state; its unreadable files are left out, so no query fails on them.

    Parameters
    ----------
    root : path, optional
        The folder to search at any depth; default :func:`default_root`.

    Raises
    ------
    ConfigError
        When ``root`` is not a folder.
    """

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else default_root()
        self.runs = [probe(folder) for folder in find_runs(self.root)]
        self.con = duckdb.connect(":memory:")
        self._create_views()
        self._seal()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the DuckDB connection (one still busy with an interrupted query goes with the process)."""
        with contextlib.suppress(duckdb.Error):
            self.con.close()

    def name(self, run: RunFolder) -> str:
        """``run``'s folder relative to the root (``"."`` for the root itself)."""
        return run.folder.relative_to(self.root).as_posix()

    def sql(self, query: str) -> pd.DataFrame:
        """The result of ``query`` (DuckDB SQL over :data:`VIEWS`) as a frame.

        The connection reads the catalogue's files and nothing else: no other file, no write, no
        extension, no network (see :meth:`_seal`).

        Raises
        ------
        ConfigError
            When DuckDB rejects the query (its first line of explanation is kept).
        """
        return self._interruptible(lambda con: self._relation(query, con).df())

    def export(self, query: str, path: str | os.PathLike, fmt: str) -> Path:
        """Write the result of ``query`` to ``path`` as ``fmt`` (``csv`` or ``parquet``).

        The file is written by this process, not by DuckDB (whose connection writes nothing), and
        never through a symbolic link at ``path``.

        Raises
        ------
        ConfigError
            When DuckDB rejects the query, or ``path`` is a link or cannot be written.
        """
        if fmt not in ("csv", "parquet"):
            raise ConfigError("format", fmt, "csv or parquet")
        table = self._interruptible(lambda con: self._relation(query, con).to_arrow_table())
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise ConfigError(f"--{fmt}", str(path), f"a file this user can write, not a link ({exc.strerror})") from None
        with os.fdopen(fd, "wb") as out:
            if fmt == "csv":
                pa_csv.write_csv(table, out)
            else:
                pq.write_table(table, out)
        return Path(path)

    def _interruptible(self, work: Callable[[duckdb.DuckDBPyConnection], Any]) -> Any:
        """``work(cursor)``, run so that Ctrl-C or SIGTERM stops it: DuckDB computes in a thread while this one waits.

        A signal's Python handler runs only in the main thread, between bytecodes; a query computing
        in DuckDB's C code would hold it off until it ended. Interrupted, the query is cancelled
        (``interrupt``) and the interruption goes on up (the command exits 130 or 143).
        """
        box: dict[str, Any] = {}
        cursor = self.con.cursor()  # the catalogue's views and its sealed settings, on a connection of its own

        def run() -> None:
            try:
                box["value"] = work(cursor)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as it is
                box["error"] = exc

        thread = threading.Thread(target=run, name="catalog-query", daemon=True)
        thread.start()
        try:
            while thread.is_alive():
                thread.join(0.1)
        except BaseException:
            cursor.interrupt()
            # wait for DuckDB to give the thread back: a daemon thread still in its C++ code when the
            # interpreter ends is unwound by force, and the process aborts (SIGABRT) instead of exiting
            thread.join(INTERRUPT_WAIT_S)
            raise
        finally:
            with contextlib.suppress(duckdb.Error):  # still busy after an interruption: it goes with the process
                cursor.close()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _relation(self, query: str, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
        if not isinstance(query, str) or not query.strip():
            raise ConfigError("SQL", query, f"a query over the views {', '.join(VIEWS)}")
        try:
            relation = con.sql(query)
        except duckdb.Error as exc:
            relation, error = None, _first_line(exc)
        else:
            error = "a statement that returns no rows" if relation is None else None
        if error is not None:
            raise ConfigError("SQL", query, f"a query over the views {', '.join(VIEWS)} ({error})") from None
        return relation

    def _seal(self) -> None:
        """Let the connection read the catalogue's files and nothing else, for good.

        DuckDB's ``allowed_paths`` (each file as the views name it and as it is) with external
        access off: no other file read (``read_csv('/etc/…')``), no ``COPY … TO``, ``ATTACH``
        or extension install, no network; ``lock_configuration`` keeps a query from undoing it.
        """
        paths = [str(r.folder / RUN_FILE) for r in self.runs if r.meta]
        paths += [str(p) for r in self.runs for p in r.tables.values()]
        paths += [str(r.fits) for r in self.runs if r.fits]
        allowed = sorted({*paths, *map(_literal, paths)})
        self.con.execute(f"SET allowed_paths = [{', '.join(map(_quote, allowed))}]")
        for setting in ("enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions"):
            self.con.execute(f"SET {setting} = false")
        self.con.execute("SET lock_configuration = true")

    # -- views ------------------------------------------------------------------------------
    def _create_views(self) -> None:
        rows = [(self.name(r), r.notebook, r.state, "; ".join(r.problems) or None,
                 str(r.folder / RUN_FILE) if r.meta else None) for r in self.runs]
        self.con.execute("CREATE TABLE _run_state (folder VARCHAR, notebook VARCHAR, state VARCHAR, problem VARCHAR, "
                         "json_file VARCHAR)")
        if rows:
            self.con.executemany("INSERT INTO _run_state VALUES (?, ?, ?, ?, ?)", rows)
        files = [(self.name(r), r.notebook, table, "samples" if table in r.sample_tables else "table", str(path))
                 for r in self.runs for table, path in r.tables.items()]
        files += [(self.name(r), r.notebook, "fits", "fits", str(r.fits)) for r in self.runs if r.fits]
        self.con.execute("CREATE TABLE _files (folder VARCHAR, notebook VARCHAR, table_name VARCHAR, kind VARCHAR, "
                         "path VARCHAR)")
        if files:
            self.con.executemany("INSERT INTO _files VALUES (?, ?, ?, ?, ?)", files)
        self.con.execute("CREATE VIEW files AS SELECT * FROM _files")
        self.con.execute(self._runs_view())
        self.con.execute(self._samples_view())
        self.con.execute(self._fits_view())

    def _runs_view(self) -> str:
        texts = [str(r.folder / RUN_FILE) for r in self.runs if r.meta]
        source = (f"(SELECT filename, content FROM read_text({_list(texts)}))" if texts
                  else "(SELECT NULL::VARCHAR AS filename, NULL::VARCHAR AS content WHERE false)")

        def text(path: str) -> str:
            return f"json_extract_string(t.content, '{path}')"

        engine = ("coalesce(json_extract_string(e, '$.label'), json_extract_string(e, '$.engine'), '?')"
                  " || coalesce(' ' || coalesce(json_extract_string(e, '$.version'),"
                  " json_extract_string(e, '$.server_version')), '')"
                  " || coalesce(' (' || json_extract_string(e, '$.variant') || ')', '')")
        return f"""CREATE VIEW runs AS
            SELECT s.folder, s.notebook, s.state, s.problem,
                   TRY_CAST({text('$.completed')} AS BOOLEAN) AS completed,
                   TRY_CAST({text('$.started_at')} AS TIMESTAMPTZ) AS started_at,
                   TRY_CAST({text('$.ended_at')} AS TIMESTAMPTZ) AS ended_at,
                   {text('$.git.revision')} AS revision,
                   TRY_CAST({text('$.git.dirty')} AS BOOLEAN) AS dirty,
                   {text('$.parameters.scale')} AS scale,
                   json_extract(t.content, '$.parameters')::VARCHAR AS parameters,
                   array_to_string(list_distinct(list_transform(
                       coalesce(json_extract(t.content, '$.engines[*]'), []::JSON[]), lambda e: {engine})), ', ')
                       AS engines,
                   {text('$.host.hostname')} AS host,
                   {text('$.host.cpu_model')} AS cpu_model,
                   TRY_CAST({text('$.host.cpu_cores')} AS INTEGER) AS cores,
                   TRY_CAST({text('$.host.ram_bytes')} AS BIGINT) AS memory_bytes,
                   TRY_CAST({text('$.load_average.start[0]')} AS DOUBLE) AS load_start,
                   TRY_CAST({text('$.load_average.end[0]')} AS DOUBLE) AS load_end,
                   json_extract(t.content, '$.headline')::VARCHAR AS headline
            FROM _run_state s
            LEFT JOIN (SELECT filename, CASE WHEN json_valid(content) THEN content END AS content FROM {source}) t
                   ON t.filename = s.json_file
            ORDER BY s.folder"""

    def _samples_view(self) -> str:
        paths = [str(p) for r in self.runs for p in r.sample_tables.values()]
        if not paths:
            return ("CREATE VIEW samples AS SELECT NULL::VARCHAR AS folder, NULL::VARCHAR AS notebook, "
                    "NULL::VARCHAR AS sample_table, NULL::DOUBLE AS elapsed_s WHERE false")
        union = {c for r in self.runs for t in r.sample_tables for c in r.columns[t]}
        duration = "coalesce(" + ", ".join(f"p.{c}" for c in TIME_COLUMNS if c in union) + ")"
        left_out = [c for c in (*_ADDED, "filename") if c in union or c == "filename"]
        return f"""CREATE VIEW samples AS
            SELECT f.folder, f.notebook, f.table_name AS sample_table, {duration}::DOUBLE AS elapsed_s,
                   p.* EXCLUDE ({', '.join(left_out)})
            FROM read_parquet({_list(paths)}, union_by_name = true, filename = true) p
            JOIN _files f ON f.path = p.filename"""

    def _fits_view(self) -> str:
        paths = [str(r.fits) for r in self.runs if r.fits]
        if not paths:
            types = {"n_points": "BIGINT", "estimate": "DOUBLE", "ci_low": "DOUBLE", "ci_high": "DOUBLE",
                     "r2": "DOUBLE", "lack_of_fit_p": "DOUBLE", "loo_error": "DOUBLE", "loo_in_pi": "DOUBLE",
                     "model_holds": "BOOLEAN"}
            cols = ", ".join(f"NULL::{types.get(c, 'VARCHAR')} AS {c}" for c in FIT_COLUMNS)
            return f"CREATE VIEW fits AS SELECT NULL::VARCHAR AS folder, {cols} WHERE false"
        return f"""CREATE VIEW fits AS
            SELECT f.folder, c.* EXCLUDE (filename)
            FROM read_csv({_list(paths)}, union_by_name = true, filename = true) c
            JOIN _files f ON f.path = c.filename"""


def _literal(path: str | os.PathLike) -> str:
    """``path`` as a DuckDB file pattern that matches that one file: its glob characters in brackets.

    Examples
    --------
    >>> _literal("runs/exp[1]/a*b?.parquet")
    'runs/exp[[]1]/a[*]b[?].parquet'
    """
    return "".join(f"[{c}]" if c in "[*?" else c for c in str(path))


def _quote(value: str | os.PathLike) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _list(values: list[str]) -> str:
    return "[" + ", ".join(_quote(_literal(v)) for v in values) + "]"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
