"""Human names for the identifiers the lab's data carries, shared by every figure and shown table."""

from __future__ import annotations

import re
from typing import Callable, Iterable

import pandas as pd

#: Identifier → the words a reader sees. One flat mapping: an identifier means the same
#: everywhere it appears (``bulk`` is the bulk path as a scenario and as a method). The words of
#: one engine's own identifiers (its table models, settings, stages) are its folder's:
#: ``STYLE.words`` (see :func:`label`).
LABELS: dict[str, str] = {
    # readers (an engine's name is its folder's: STYLE.title, see engine_title)
    "chdb": "chDB", "polars": "Polars",
    "pyarrow_stream": "PyArrow (streaming)", "pyarrow_table": "PyArrow (table)",
    "pandas_pyarrow": "pandas (PyArrow parser)", "pandas_c": "pandas (C parser)", "read_floor": "read floor",
    # commit variants and commit grouping
    "sync_on": "synchronous_commit on", "sync_off": "synchronous_commit off",
    "non_transactional": "non-transactional writes", "default": "defaults",
    # table models
    "no_key": "no key", "primary_key": "primary key", "primary_key_indexes": "primary key + 3 indexes",
    "unlogged": "unlogged table", "aria": "Aria", "memory": "Memory engine (RAM only)",
    # load settings
    "async_commit": "asynchronous commit", "key_after_load": "key added after the load",
    # INSERT scenarios and load methods
    "single_row": "1 row per INSERT", "batch_100": "100 rows per INSERT", "batch_1000": "1,000 rows per INSERT",
    "insert_select": "INSERT … SELECT", "bulk": "bulk load (COPY, LOAD DATA)",
    "generate": "server-side row generator", "native_client": "engine's own client",
    "batches": "multi-row INSERTs", "pipeline": "pipelined INSERTs, one transaction",
    "executemany": "INSERTs in one transaction", "autocommit": "INSERTs, each committed",
    # upsert operations and the study's names for them
    "insert": "insert new keys", "overwrite": "overwrite existing keys", "blind_overwrite": "blind overwrite",
    "insert_new_keys": "insert new keys", "upsert_existing_keys": "overwrite existing keys",
    # CSV queries
    "full_scan_order_by_limit_1": "full scan, ORDER BY … LIMIT 1", "limit_1": "LIMIT 1", "count_star": "COUNT(*)",
    "per_gb": "cost per GB",
    # swept factors
    "partitions": "partitions", "columns": "columns", "model": "table model",
    # parts of a statement's time
    "client_total": "client total", "unexplained": "unexplained", "driver": "driver formatting",
    "transaction": "transaction start and end", "planning": "planning", "execution": "execution",
    "commit": "commit", "wal_flush": "WAL flush", "outside_stages": "outside the stages", "parse": "parse",
    "fsync": "fsync", "part_files": "part directory and files",
    # fit methods
    "ols": "OLS", "theil_sen": "Theil–Sen", "two_point": "two points",
    # statistics
    "min": "minimum", "median": "median", "mean": "mean", "p50": "P50", "p90": "P90", "p95": "P95", "p99": "P99",
    "max": "maximum",
    # memory limits and counters of notebook 03
    "cgroup": "memory cgroup", "engine": "engine cache",
}

#: Column → legend or table header, where the column's own name would not read well.
COLUMN_LABELS: dict[str, str] = {
    "nereids_planner": "Nereids planner", "rows_per_insert": "rows per INSERT", "n_points": "points",
    "r2": "R²", "series": "", "peak_rss_mb": "peak resident memory (MB)", "seconds": "time (s)", "speedup": "speed-up (×)", "n_statements": "statements", "n_loads": "loads", "ms": "time (ms)",
    "round_trip_ms": "injected round-trip delay, 2d (ms)", "round_trips": "round trips per statement",
}
_UNITS = (("_mb_s", "MB/s"), ("_gb_s", "GB/s"), ("_ms", "ms"), ("_us", "µs"), ("_s", "s"), ("_mb", "MB"), ("_gb", "GB"), ("_bytes", "bytes"), ("_x", "×"))
_BOOLEAN = {True: "on", False: "off"}
_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)+")


def label(value: object) -> str:
    """The reader's name of an identifier; an unknown one (a server's stage) with its underscores as spaces.

    Text that is not one identifier gets the identifiers inside it named (:func:`phrase`).

    Examples
    --------
    >>> label("sync_on"), label("wal_flush"), label("opening_tables"), label(1000)
    ('synchronous_commit on', 'WAL flush', 'opening tables', '1000')
    >>> label("shared-nothing 4.0.4"), label("data/x_y.csv"), label("postgres 18.6")
    ('shared-nothing 4.0.4', 'data/x_y.csv', 'PostgreSQL 18.6')
    """
    text = str(value)
    if text in LABELS:
        return LABELS[text]
    title = engine_title(text)
    if title is not None:
        return title
    from ingestlab.engines import registry

    for engine_cls in registry.classes().values():
        if text in engine_cls.STYLE.words:
            return engine_cls.STYLE.words[text]
    return text.replace("_", " ") if _IDENTIFIER.fullmatch(text) else phrase(text)


def engine_title(name: str) -> str | None:
    """The human name a registered engine's folder gives it (its ``STYLE.title``), or None for no engine.

    Examples
    --------
    >>> engine_title("postgres15"), engine_title("sync_on")
    ('PostgreSQL 15', None)
    """
    from ingestlab.engines import registry

    engine_cls = registry.classes().get(name)
    return engine_cls.STYLE.title if engine_cls is not None else None


def column_label(column: str) -> str:
    """A column name as an axis label or a header, its unit in brackets.

    Examples
    --------
    >>> column_label("median_ms"), column_label("rows_per_s"), column_label("overhead_ci_low_ms")
    ('median (ms)', 'rows per second', 'overhead CI low (ms)')
    >>> column_label("per_row_us"), column_label("nereids_planner"), column_label("r2"), column_label("load_mb_s")
    ('per row (µs)', 'Nereids planner', 'R²', 'load (MB/s)')
    """
    if column in COLUMN_LABELS:
        return COLUMN_LABELS[column]
    if column.endswith("_per_s"):
        return _words(column.removesuffix("_per_s")) + " per second"
    for suffix, unit in _UNITS:
        if column.endswith(suffix) and not column.endswith("_per" + suffix):
            return f"{_words(column.removesuffix(suffix))} ({unit})"
    return _words(column)


def _words(stem: str) -> str:
    words = stem.replace("_", " ")
    for short, written in (("ci", "CI"), ("mb", "MB"), ("gb", "GB"), ("se", "SE")):
        words = re.sub(rf"\b{short}\b", written, words)
    return words


def value_label(column: str, value: object) -> str:
    """A value as a legend entry: an identifier's name, a flag as ``<column> on/off``.

    Examples
    --------
    >>> value_label("variant", "sync_off"), value_label("nereids_planner", True), value_label("clients", 8)
    ('synchronous_commit off', 'Nereids planner on', '8')
    """
    if isinstance(value, bool):
        return f"{column_label(column)} {_BOOLEAN[value]}"
    return label(value)


def relabel(frame: pd.DataFrame, columns: Iterable[str] | None = None) -> pd.DataFrame:
    """A copy of ``frame`` with the identifiers of ``columns`` (default: its text and flag columns) named.

    Numbers stay numbers; a text or flag column becomes text (``"sync_on"`` → ``"synchronous_commit on"``).

    Examples
    --------
    >>> relabel(pd.DataFrame({"variant": ["sync_on"], "n": [3]})).to_dict("records")
    [{'variant': 'synchronous_commit on', 'n': 3}]
    """
    chosen = [c for c in (columns if columns is not None else _identifier_columns(frame)) if c in frame.columns]
    return frame.assign(**{c: frame[c].map(_value_labeller(c)) for c in chosen})


def _value_labeller(column: str) -> Callable[[object], object]:
    """:func:`value_label` of ``column`` for one value, missing values kept; each distinct value named once
    (a run's samples repeat a few names tens of thousands of times)."""
    named: dict[tuple[type, object], str] = {}

    def name(value: object) -> object:
        if pd.isna(value):
            return value
        key = (type(value), value)
        if key not in named:
            named[key] = value_label(column, value)
        return named[key]
    return name


def _identifier_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns
            if pd.api.types.is_object_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])
            or isinstance(frame[c].dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(frame[c])]


def join(frame: pd.DataFrame, columns: Iterable[str], sep: str = ", ") -> pd.Series:
    """One legend name per row from several identifier columns (``"PostgreSQL, insert new keys"``).

    Examples
    --------
    >>> join(pd.DataFrame({"scenario": ["single_row"], "operation": ["blind_overwrite"]}), ["scenario", "operation"]).tolist()
    ['1 row per INSERT, blind overwrite']
    """
    named = [frame[c].map({v: value_label(c, v) for v in frame[c].unique()}).astype(str) for c in columns]
    if not named:
        return pd.Series("", index=frame.index, dtype=object)
    joined = named[0]
    for part in named[1:]:
        joined = joined + sep + part
    return joined.astype(object)


def phrase(text: str) -> str:
    """A free text with the identifiers in it named: snake_case words and engine names.

    Examples
    --------
    >>> phrase("overhead_ms postgres sync_on | seed shared-nothing 4.0.5")
    'overhead (ms) PostgreSQL synchronous_commit on | seed shared-nothing 4.0.5'
    """
    def name(match: re.Match) -> str:
        word = match.group()
        if word in LABELS and ("_" in word or word in _READERS):
            return LABELS[word]
        title = engine_title(word)
        if title is not None:
            return title
        return column_label(word) if "_" in word else word
    return re.sub(r"(?<![\w.=/-])[a-z][a-z0-9]*(?:_[a-z0-9]+)*(?![\w.=/-])", name, str(text))


#: Readers of notebook 06 without an underscore in their name that free text names (engines: engine_title).
_READERS = {"chdb", "polars"}
