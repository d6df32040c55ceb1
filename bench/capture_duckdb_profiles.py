"""Capture DuckDB's JSON profile of statements the lab's notebooks run, as the parser's test fixtures.

Starts the lab's DuckDB engine (``engines.get("duckdb")``: a database file in
``.lab/duckdb-<pid>-<n>/``), builds each statement with the lab's own builders
(``insert_sql``, ``upsert_sql``, ``generate_rows_sql``, ``add_primary_key_sql``,
``reset_table`` with a notebook's columns and table model, ``bulk_load``, ``settle``) and rows
from :mod:`ingestlab.datagen`, turns profiling on as the anatomy does
(``_ProfileRecorder`` in :mod:`ingestlab.engines.duckdb.adapter`: ``SET profiling_coverage = 'ALL'``,
``SET enable_profiling = 'no_output'``), runs the statement and reads its profile with
``get_profiling_information(format='json')``. Each profile is checked to be of that statement
and complete (its ``query`` group present) and written, verbatim, to ``lab_<name>.txt`` in the
output folder under a header naming its source, the engine's version, the statement and
``transform: none``, the format of ``tests/profiles/fixtures``. Notebook 06's CSV scan runs
where notebook 06 runs it: on the scan child's own in-memory connection
(DuckDB's notebook-06 reader, ``engines/duckdb/reader.py``), over a small Hive text table written by
:mod:`ingestlab.hivetext`, with profiling set the same way.

The four older fixtures of the folder (``lab_single_row_insert``, ``lab_insert_1000_rows``,
``lab_insert_select``, ``lab_query_join_group_top_n``) were captured before this script and
are not written by it.

Run from the repository root::

    PYTHONPATH=lib python bench/capture_duckdb_profiles.py tests/profiles/fixtures/duckdb_profile
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ingestlab import _paths, datagen, engines, hivetext
from ingestlab.engines import Engine
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.profiles._text import VERBATIM_MARKER
from ingestlab.workloads import insert, million, sweeps, upsert

#: The command that writes the fixtures, as their headers quote it.
COMMAND = "PYTHONPATH=lib python bench/capture_duckdb_profiles.py tests/profiles/fixtures/duckdb_profile"
STUDY_NAMES = [name for name, _ in STUDY_COLUMNS]
#: Rows of notebook 05's table in the captures (its smoke scale loads 10 000).
MILLION_ROWS = 10_000
#: Base rows of the Hive text table scanned (notebook 06's smoke scale starts from 2 000).
SCAN_ROWS = 2_000


@dataclasses.dataclass(frozen=True)
class Capture:
    """One captured profile: the fixture's name, what ran, how, and the text DuckDB returned."""

    name: str
    statement: str
    how: str
    profile: str
    connection: str = "engines.get('duckdb') (a database file in .lab/duckdb-<pid>-<n>/)"


@contextlib.contextmanager
def profiling(conn) -> Iterator[None]:
    """Profile every statement of ``conn`` and keep the last one's profile in memory, as the anatomy does."""
    conn.execute("SET profiling_coverage = 'ALL'")
    conn.execute("SET enable_profiling = 'no_output'")
    try:
        yield
    finally:
        conn.execute("RESET enable_profiling")
        conn.execute("RESET profiling_coverage")


def profile_of(conn, sql: str) -> str:
    """The last profile of ``conn``, checked to be the complete profile of ``sql``.

    Raises
    ------
    RuntimeError
        When the profile is of another statement or was read before its query ended.
    """
    text = conn.get_profiling_information(format="json")
    document = json.loads(text)
    got = (document.get("query") or {}).get("sql")
    if got != sql:
        raise RuntimeError(f"the last profile is of {str(got)[:80]!r}, not of {sql[:80]!r}")
    return text


def run_profiled(engine: Engine, sql: str, params: list[Any] | None = None) -> str:
    """Run ``sql`` (its parameters bound by DuckDB, as ``Engine.statement_call`` runs it) and return its profile."""
    call = engine.sender.statement_call(sql, params)
    with profiling(engine.conn):
        call()
        return profile_of(engine.conn, sql)


def flat(rows: list[tuple]) -> list[Any]:
    """The parameters of a multi-row statement: every value of every row, row after row."""
    return [value for row in rows for value in row]


# -- the captures ------------------------------------------------------------------------------
def batch_of_100(engine: Engine) -> Capture:
    """Notebook 01's ``batch_100``: one INSERT … VALUES of 100 rows into the study's table, no key."""
    engine.tables.reset(insert.TABLE, STUDY_COLUMNS)
    sql = engine.sql.insert_sql(insert.TABLE, STUDY_NAMES, 100)
    profile = run_profiled(engine, sql, flat(datagen.study_rows(100, seed=1)))
    return Capture("lab_insert_100_rows", f"notebook 01's batch_100: one INSERT … VALUES of 100 rows into "
                   f"{insert.TABLE!r} (no key; 400 parameters bound by DuckDB)",
                   "Engine.statement_call(insert_sql(table, 4 columns, 100), 400 values)()", profile)


def wide_single_row(engine: Engine, n_columns: int = 50) -> Capture:
    """Notebook 02's columns sweep at its widest default level: one row into a table of ``n_columns`` columns."""
    columns = datagen.wide_columns(n_columns)
    names = [name for name, _ in columns]
    engine.tables.reset(sweeps.TABLE, columns, model="no_key")
    sql = engine.sql.insert_sql(sweeps.TABLE, names, 1)
    profile = run_profiled(engine, sql, list(datagen.wide_rows(columns, 1, seed=2)[0]))
    return Capture(f"lab_single_row_insert_{n_columns}_columns",
                   f"notebook 02's columns sweep (level {n_columns}): one single-row INSERT into {sweeps.TABLE!r} "
                   f"of datagen.wide_columns({n_columns}), no key",
                   f"reset_table(table, wide_columns({n_columns}), model='no_key'), "
                   f"Engine.statement_call(insert_sql(table, {n_columns} columns, 1), row)()", profile)


def keyed_single_row(engine: Engine, model: str) -> Capture:
    """Notebook 02's model sweep: one row into the study's table of ``model`` (ART indexes), after 1 000 rows."""
    engine.tables.reset(sweeps.TABLE, STUDY_COLUMNS, model=model)
    engine.capability("bulk_load").load(sweeps.TABLE, STUDY_NAMES, [datagen.rows_table(STUDY_NAMES, datagen.study_rows(1000, seed=3))])
    sql = engine.sql.insert_sql(sweeps.TABLE, STUDY_NAMES, 1)
    profile = run_profiled(engine, sql, list(datagen.study_rows(1, start_id=1000, seed=4)[0]))
    what = {"primary_key": "a primary key (one ART index)",
            "primary_key_indexes": "a primary key and three secondary ART indexes"}[model]
    return Capture(f"lab_single_row_insert_{model}",
                   f"notebook 02's model sweep ({model}): one single-row INSERT (a new id) into {sweeps.TABLE!r} "
                   f"with {what}, holding 1000 rows",
                   f"reset_table(table, STUDY_COLUMNS, model={model!r}), bulk_load of 1000 seed rows, "
                   "Engine.statement_call(insert_sql(table, 4 columns, 1), row)()", profile)


def upsert_existing(engine: Engine, n: int = 100) -> Capture:
    """The lab's upsert: ``upsert_sql`` of ``n`` rows whose keys are all in the table (every row updates)."""
    engine.tables.reset(upsert.TABLE, upsert.COLUMNS, key=(upsert.KEY,))
    rng = np.random.default_rng(5)
    keys = np.arange(0, 2 * n, 2, dtype=np.int64)  # notebook 03's keys are even
    engine.capability("bulk_load").load(upsert.TABLE, upsert.COLUMN_NAMES, [datagen.document_table(keys, datagen.documents(n, rng))])
    sql = engine.sql.upsert_sql(upsert.TABLE, upsert.COLUMN_NAMES, upsert.KEY, n)
    batch = datagen.document_table(keys, datagen.documents(n, rng))
    params = flat(list(zip(*(batch.column(c).to_pylist() for c in upsert.COLUMN_NAMES))))
    profile = run_profiled(engine, sql, params)
    return Capture(f"lab_upsert_{n}_existing_keys",
                   f"the lab's upsert_sql (notebook 03's 'overwrite' statement): INSERT … VALUES of {n} rows "
                   f"ON CONFLICT (id) DO UPDATE into {upsert.TABLE!r} (id BIGINT primary key, doc TEXT), every key "
                   f"already there. Notebook 03 itself does not run DuckDB (DuckDB.UPSERT_OPERATIONS is empty)",
                   f"reset_table(table, upsert.COLUMNS, key=('id',)), bulk_load of {n} documents, "
                   f"Engine.statement_call(upsert_sql(table, ['id', 'doc'], 'id', {n}), {2 * n} values)()", profile)


def generate_rows(engine: Engine) -> Capture:
    """Notebook 05's ``generate``: one INSERT … SELECT over DuckDB's ``range`` into the keyed ``demo``."""
    engine.tables.reset(million.TABLE, million.COLUMNS, key=million.KEY)  # a key: the keyed model
    sql = engine.sql.generate_rows_sql(million.TABLE, million.COLUMN_NAMES, MILLION_ROWS)
    profile = run_profiled(engine, sql)
    return Capture(f"lab_generate_{MILLION_ROWS}_rows",
                   f"notebook 05's generate: {sql} (the table with its primary key, the default setting)",
                   f"reset_table(demo, million.COLUMNS, key=('id',), model='primary_key'), "
                   f"Engine.execute(generate_rows_sql(demo, 5 columns, {MILLION_ROWS}))", profile)


def add_primary_key(engine: Engine) -> Capture:
    """Notebook 05's ``key_after_load`` setting: ``ALTER TABLE demo ADD PRIMARY KEY (id)`` after the rows."""
    engine.tables.reset(million.TABLE, million.COLUMNS, model="no_key")
    engine.execute(engine.sql.generate_rows_sql(million.TABLE, million.COLUMN_NAMES, MILLION_ROWS))
    sql = engine.sql.add_primary_key_sql(million.TABLE, million.KEY)
    profile = run_profiled(engine, sql)
    return Capture("lab_add_primary_key",
                   f"notebook 05's key_after_load: {sql} on {MILLION_ROWS} rows loaded without a key",
                   f"reset_table(demo, million.COLUMNS, model='no_key'), generate_rows_sql(demo, 5 columns, "
                   f"{MILLION_ROWS}), then Engine.execute(add_primary_key_sql(demo, ('id',)))", profile)


class _KeepInsertProfiles:
    """The measuring connection, which also keeps the profile of each ``INSERT`` it runs, read right after it.

    ``DuckDBBulkLoad.load`` runs its INSERTs inside one transaction and ends with ``COMMIT``, whose
    profile replaces theirs; standing in for the connection while it runs reads each INSERT's.
    """

    def __init__(self, conn) -> None:
        self._conn = conn
        self.profiles: list[tuple[str, str]] = []

    def execute(self, sql: str, *args: Any):
        result = self._conn.execute(sql, *args)
        if sql.startswith("INSERT"):
            self.profiles.append((sql, profile_of(self._conn, sql)))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def bulk_arrow_scan(engine: Engine) -> Capture:
    """Notebooks 01 and 05's ``bulk``: ``bulk_load``'s INSERT … SELECT from a registered Arrow chunk."""
    engine.tables.reset(million.TABLE, million.COLUMNS, key=million.KEY)  # a key: the keyed model
    data = million.Data.make(MILLION_ROWS, str(_paths.lab_dir() / "capture-duckdb-profiles.csv"))
    data.remove()  # the bulk path reads the Arrow chunks, not the CSV
    conn = engine.conn
    keeper = _KeepInsertProfiles(conn)
    with profiling(conn):
        engine._conn = keeper
        try:
            engine.capability("bulk_load").load(million.TABLE, million.COLUMN_NAMES, million.bulk_slices(data.chunks, 1))
        finally:
            engine._conn = conn
    (sql, profile), = keeper.profiles
    return Capture(f"lab_bulk_arrow_scan_{MILLION_ROWS}_rows",
                   f"notebook 05's (and 01's) bulk path, one statement: {sql} — a pyarrow table of "
                   f"{MILLION_ROWS} rows registered as a view, inside bulk_load's transaction (its profile read "
                   "before the COMMIT) into the keyed demo",
                   "DuckDBBulkLoad.load(demo, 5 columns, bulk_slices(million.Data chunks, 1)), the connection's "
                   "profile read right after the INSERT it runs", profile)


def checkpointing_batch(engine: Engine, n: int = 100) -> Capture:
    """Notebook 05's ``batches``: an INSERT of ``n`` rows whose commit finds the WAL over its threshold."""
    engine.tables.reset(million.TABLE, million.COLUMNS, key=million.KEY)  # a key: the keyed model
    rows = million.Data.make(n, str(_paths.lab_dir() / "capture-duckdb-profiles.csv"))
    rows.remove()
    sql = engine.sql.insert_sql(million.TABLE, million.COLUMN_NAMES, n)
    engine.execute("SET wal_autocheckpoint = '1KB'")
    try:
        profile = run_profiled(engine, sql, flat(rows.rows))
    finally:
        engine.execute("RESET wal_autocheckpoint")
    return Capture(f"lab_insert_{n}_rows_checkpoint",
                   f"notebook 05's batches: one INSERT … VALUES of {n} rows into the keyed demo, with "
                   "wal_autocheckpoint = '1KB' (not the default 16 MB) so that its commit checkpoints, as a batch "
                   "of a large load does at the default threshold",
                   f"reset_table(demo, million.COLUMNS, key=('id',), model='primary_key'), SET wal_autocheckpoint "
                   f"= '1KB', Engine.statement_call(insert_sql(demo, 5 columns, {n}), {5 * n} values)()", profile)


def checkpoint(engine: Engine) -> Capture:
    """``Engine.settle``: the ``CHECKPOINT`` every notebook runs on DuckDB before it reads a table's bytes."""
    engine.tables.reset(million.TABLE, million.COLUMNS, key=million.KEY)  # a key: the keyed model
    engine.execute(engine.sql.generate_rows_sql(million.TABLE, million.COLUMN_NAMES, MILLION_ROWS))
    with profiling(engine.conn):
        engine.tables.settle(million.TABLE)
        profile = profile_of(engine.conn, "CHECKPOINT")
    return Capture("lab_checkpoint",
                   f"Engine.settle's CHECKPOINT (notebooks 01, 02 and 05 settle a table so), after {MILLION_ROWS} "
                   "rows were inserted into the keyed demo",
                   "generate_rows_sql(demo, 5 columns, 10000), then Engine.settle(demo)", profile)


def csv_scan(query: str, root: Path) -> Capture:
    """Notebook 06's ``query`` over the Hive text table, on the scan child's own connection, as the child runs it."""
    table = hivetext.table(root, SCAN_ROWS, 0, 0)
    import duckdb

    from ingestlab.engines.duckdb import reader
    from ingestlab.workloads.csv_scan import scan_spec

    spec = scan_spec(table, "duckdb", query)

    opened: list[Any] = []
    connect = duckdb.connect

    def keep(*args: Any, **kwargs: Any):
        opened.append(connect(*args, **kwargs))
        return opened[-1]

    duckdb.connect = keep
    try:
        _, run = reader.scan(spec, {})
    finally:
        duckdb.connect = connect
    conn, = opened
    try:
        with profiling(conn):
            run()
            profile = profile_of(conn, spec["sql"])
    finally:
        conn.close()
    return Capture(f"lab_csv_scan_{query}",
                   f"notebook 06's {query}: {spec['sql']} (its rows fetched), t the "
                   f"scan child's view over read_csv of a Hive text table of {table.rows} rows in "
                   f"{len(table.files)} files (4 dt= partitions, hivetext.table(root, {SCAN_ROWS}, 0, 0))",
                   "the child's view created and its query run and fetched", profile,
                   "not the engine's: the scan child's own in-memory connection, as notebook 06 runs DuckDB "
                   "(ingestlab.engines.duckdb.reader.scan(spec, {}))")


def captures(engine: Engine, scratch: Path) -> list[Capture]:
    """Every capture, in turn, on one engine (and the CSV scans on their own connections)."""
    steps: list[Callable[[], Capture]] = [
        lambda: batch_of_100(engine),
        lambda: wide_single_row(engine, max(sweeps.DEFAULT_COLUMNS)),
        lambda: keyed_single_row(engine, "primary_key"),
        lambda: keyed_single_row(engine, "primary_key_indexes"),
        lambda: upsert_existing(engine),
        lambda: generate_rows(engine),
        lambda: add_primary_key(engine),
        lambda: bulk_arrow_scan(engine),
        lambda: checkpointing_batch(engine),
        lambda: checkpoint(engine),
        lambda: csv_scan("count_star", scratch),
        lambda: csv_scan("full_scan_order_by_limit_1", scratch),
    ]
    return [step() for step in steps]


def fixture_text(capture: Capture, version: str, package: str, day: str) -> str:
    """The fixture: the header the parser's tests blank, the marker, then the profile as DuckDB returned it."""
    header = [
        f"# source: ingestlab's own run, {day}: bench/capture_duckdb_profiles.py ({COMMAND}): {capture.connection}, "
        f"SET profiling_coverage = 'ALL', SET enable_profiling = "
        f"'no_output', {capture.how}, then conn.get_profiling_information(format='json'): as the anatomy's "
        "_ProfileRecorder reads it",
        f"# engine version: DuckDB {version} (Python package duckdb {package})",
        f"# statement: {capture.statement}",
        "# transform: none (the string get_profiling_information returned, as is)",
        VERBATIM_MARKER,
    ]
    body = capture.profile if capture.profile.endswith("\n") else capture.profile + "\n"
    return "\n".join(header) + "\n" + body


def main(argv: list[str] | None = None) -> int:
    """Write one fixture per capture into the folder given; print each file's name and size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("folder", type=Path, help="where the lab_<name>.txt fixtures go")
    args = parser.parse_args(argv)
    import duckdb

    args.folder.mkdir(parents=True, exist_ok=True)
    engine = engines.get("duckdb").start()
    try:
        version = engine.server_version()
        with tempfile.TemporaryDirectory(prefix="capture-hive-", dir=_paths.lab_dir()) as scratch:
            done = captures(engine, Path(scratch))
    finally:
        engine.close()
    day = dt.date.today().isoformat()
    for capture in done:
        path = args.folder / f"{capture.name}.txt"
        path.write_text(fixture_text(capture, version, duckdb.__version__, day), encoding="utf-8")
        print(f"{path}  {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
