"""Deterministic test data: the study's INSERT rows and the upsert study's documents."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

_BASE_DATE = dt.date(2024, 1, 15)


def study_rows(n: int, *, start_id: int = 0, seed: int = 0) -> list[tuple]:
    """``n`` rows for the study's table ``(id BIGINT, name VARCHAR(100), amount DECIMAL(10,2), dt DATE)``.

    Ids are ``start_id … start_id + n − 1``; names, amounts and dates come from ``seed``.

    Examples
    --------
    >>> study_rows(2, start_id=10, seed=1)[0][0], len(study_rows(2)[1])
    (10, 4)
    """
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype="S1")
    lengths = rng.integers(4, 21, n)
    cents = rng.integers(0, 10_000_000, n)
    days = rng.integers(0, 365, n)
    rows = []
    for i in range(n):
        name = b"".join(rng.choice(letters, lengths[i])).decode()
        rows.append((start_id + i, name, Decimal(int(cents[i])).scaleb(-2), _BASE_DATE + dt.timedelta(days=int(days[i]))))
    return rows


#: Types of the columns :func:`wide_columns` adds after the study's four, in turn: portable
#: spellings that PostgreSQL, MariaDB/MySQL, StarRocks and Doris all accept.
WIDE_TYPES: tuple[str, ...] = ("INT", "VARCHAR(32)", "DECIMAL(12,4)", "DATE", "BIGINT", "SMALLINT", "BOOLEAN")


def wide_columns(n: int) -> tuple[tuple[str, str], ...]:
    """The study's table widened to ``n`` typed columns: ``STUDY_COLUMNS``, then ``c04``, ``c05``… of :data:`WIDE_TYPES`.

    Examples
    --------
    >>> [t for _, t in wide_columns(6)]
    ['BIGINT', 'VARCHAR(100)', 'DECIMAL(10,2)', 'DATE', 'INT', 'VARCHAR(32)']
    >>> wide_columns(5)[-1]
    ('c04', 'INT')
    """
    from ingestlab.engines.base import STUDY_COLUMNS

    if n < len(STUDY_COLUMNS):
        raise ValueError(f"wide_columns: at least the study's {len(STUDY_COLUMNS)} columns, not {n}")
    extra = [(f"c{i:02d}", WIDE_TYPES[(i - len(STUDY_COLUMNS)) % len(WIDE_TYPES)])
             for i in range(len(STUDY_COLUMNS), n)]
    return (*STUDY_COLUMNS, *extra)


def wide_rows(columns: Sequence[tuple[str, str]], n: int, *, start_id: int = 0, seed: int = 0) -> list[tuple]:
    """``n`` rows for :func:`wide_columns`' table: the study's four values, then every added column filled.

    No value is NULL: a wider table writes a value in every column it adds. Ids are
    ``start_id … start_id + n − 1``.

    Examples
    --------
    >>> rows = wide_rows(wide_columns(11), 3, start_id=5, seed=1)
    >>> [r[0] for r in rows], len(rows[0]), any(v is None for r in rows for v in r)
    ([5, 6, 7], 11, False)
    >>> [type(v).__name__ for v in rows[0][4:]]
    ['int', 'str', 'Decimal', 'date', 'int', 'int', 'bool']
    """
    base = len(_STUDY_TYPES)
    rows = study_rows(n, start_id=start_id, seed=seed)
    rng = np.random.default_rng([seed, 1])
    extra = [_column_values(sql_type, n, rng) for _, sql_type in columns[base:]]
    return [row + tuple(col[i] for col in extra) for i, row in enumerate(rows)]


_STUDY_TYPES = ("BIGINT", "VARCHAR(100)", "DECIMAL(10,2)", "DATE")


def _column_values(sql_type: str, n: int, rng: np.random.Generator) -> list:
    # Python values the drivers send as the column's type
    kind = sql_type.split("(", 1)[0]
    if kind in ("INT", "BIGINT", "SMALLINT"):
        high = {"SMALLINT": 2**15, "INT": 2**31, "BIGINT": 2**62}[kind]
        return [int(v) for v in rng.integers(-high, high, n)]
    if kind == "VARCHAR":
        width = int(sql_type[len(kind) + 1:-1])
        letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype="S1")
        return [b"".join(rng.choice(letters, int(k))).decode() for k in rng.integers(1, width + 1, n)]
    if kind == "DECIMAL":
        return [Decimal(int(v)).scaleb(-4) for v in rng.integers(0, 10**12, n)]
    if kind == "DATE":
        return [_BASE_DATE + dt.timedelta(days=int(d)) for d in rng.integers(0, 3650, n)]
    if kind == "BOOLEAN":
        return [bool(v) for v in rng.integers(0, 2, n)]
    raise ValueError(f"no generator for column type {sql_type!r}; types: {', '.join(WIDE_TYPES)}")


def row_bytes(row: tuple) -> int:
    """Payload bytes of a row as text (what a CSV line of it would carry, without separators)."""
    return sum(len(str(v)) for v in row)


# -- notebook 03: documents of ~1 200 bytes of incompressible text --------------------------
#: Numbers per document: r, r + d, …, r + 99·d (the study's recipe).
DOC_NUMBERS = 100
#: Digits per number: r ∈ [10¹⁰, 2·10¹⁰) and d ∈ [10⁸, 8·10⁸) keep every r + k·d at 11 digits.
DOC_DIGITS = 11
#: Bytes per document: 100 numbers of 11 digits joined by ``,``.
DOC_BYTES = DOC_NUMBERS * (DOC_DIGITS + 1) - 1
#: Digits of a key in :func:`tsv_lines` (zero-padded, so every line has the same length).
KEY_DIGITS = 12
_R_RANGE = (10**10, 2 * 10**10)
_D_RANGE = (10**8, 8 * 10**8)


def documents(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` documents built as the study builds them, as an ``(n, DOC_BYTES)`` array of ASCII bytes.

    Each document draws two random numbers r and d and joins r, r + d, …, r + 99·d with
    commas. The study chose this to defeat the storage engine's block compression (Snappy):
    no run of text repeats, so LZ-type coders find nothing to replace. A coder with an
    entropy stage (zlib's Huffman) still squeezes the 11-symbol alphabet to about half, as it
    would any text of digits.

    Parameters
    ----------
    n : int
        Number of documents.
    rng : numpy.random.Generator
        Source of r and d.

    Returns
    -------
    numpy.ndarray
        ``uint8``, shape ``(n, DOC_BYTES)``; row i is document i.

    Examples
    --------
    >>> docs = documents(2, np.random.default_rng(0))
    >>> docs.shape
    (2, 1199)
    >>> numbers = [int(x) for x in docs[0].tobytes().split(b",")]
    >>> len(numbers), len({b - a for a, b in zip(numbers, numbers[1:])})
    (100, 1)
    """
    r = rng.integers(*_R_RANGE, n, dtype=np.int64)
    d = rng.integers(*_D_RANGE, n, dtype=np.int64)
    values = r[:, None] + d[:, None] * np.arange(DOC_NUMBERS, dtype=np.int64)
    return _join_digits(values)


_TRIPLES = np.array([list(f"{i:03d}".encode()) for i in range(1000)], dtype=np.uint8)
#: Documents converted per block: small blocks stay in the CPU cache, which is ~2× faster.
_BLOCK = 1000


def _digits(values: np.ndarray, width: int) -> np.ndarray:
    """Zero-padded decimal digits of non-negative ``values`` as ASCII: shape ``values.shape + (width,)``."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return ((values[..., None] // powers) % 10).astype(np.uint8) + ord("0")


def _join_digits(values: np.ndarray) -> np.ndarray:
    """Rows of 100 eleven-digit numbers as comma-joined ASCII, three digits per table look-up."""
    n = values.shape[0]
    out = np.empty((n, DOC_NUMBERS, DOC_DIGITS + 1), dtype=np.uint8)
    out[:, :, DOC_DIGITS] = ord(",")
    for lo in range(0, n, _BLOCK):
        v, block = values[lo:lo + _BLOCK], out[lo:lo + _BLOCK]
        for pos in (8, 5, 2):
            q = v // 1000
            block[:, :, pos:pos + 3] = np.take(_TRIPLES, v - q * 1000, axis=0)
            v = q
        block[:, :, 0:2] = np.take(_TRIPLES, v, axis=0)[:, :, 1:]
    return out.reshape(n, -1)[:, :DOC_BYTES]


def document_chunks(n: int, rng: np.random.Generator, *, chunk_rows: int = 10_000):
    """Yield ``(first_index, documents)`` chunks that together make ``n`` documents.

    Chunks keep memory flat (about 12 MB per 10 000 documents) while numpy builds each one
    at memory speed, so a data set of gigabytes streams to the engine at disk speed.
    """
    for start in range(0, n, chunk_rows):
        yield start, documents(min(chunk_rows, n - start), rng)


def tsv_lines(keys: np.ndarray, docs: np.ndarray) -> bytes:
    """``<key>\\t<document>\\n`` lines for a bulk load (PostgreSQL ``COPY``, ``LOAD DATA``).

    Keys are written with :data:`KEY_DIGITS` zero-padded digits, which both engines read as
    the same integer; documents contain no tab, newline or backslash, so no escaping is needed.

    Examples
    --------
    >>> tsv_lines(np.array([7]), np.frombuffer(b"1,2", dtype=np.uint8)[None, :])
    b'000000000007\\t1,2\\n'
    """
    keys = np.asarray(keys, dtype=np.int64)
    if keys.size and (keys.min() < 0 or keys.max() >= 10**KEY_DIGITS):
        raise ValueError(f"keys must be in [0, 10^{KEY_DIGITS})")
    n, width = docs.shape
    line = np.empty((n, KEY_DIGITS + 1 + width + 1), dtype=np.uint8)
    line[:, :KEY_DIGITS] = _digits(keys, KEY_DIGITS)
    line[:, KEY_DIGITS] = ord("\t")
    line[:, KEY_DIGITS + 1:-1] = docs
    line[:, -1] = ord("\n")
    return line.tobytes()


def key_bytes(keys: np.ndarray) -> list[bytes]:
    """Keys as 8-byte big-endian strings, whose byte order is their numeric order (RocksDB keys).

    Examples
    --------
    >>> key_bytes(np.array([1, 256]))
    [b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01', b'\\x00\\x00\\x00\\x00\\x00\\x00\\x01\\x00']
    """
    raw = np.asarray(keys, dtype=">u8").tobytes()
    return [raw[i:i + 8] for i in range(0, len(raw), 8)]


def row_values(docs: np.ndarray) -> list[bytes]:
    """Each document of an ``(n, width)`` byte array as one ``bytes`` value."""
    raw, width = docs.tobytes(), docs.shape[1]
    return [raw[i:i + width] for i in range(0, len(raw), width)]


def rows_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> pa.Table:
    """Row tuples as a ``pyarrow.Table`` with ``columns``, the chunk :meth:`BulkLoad.load <ingestlab.engines.capabilities.BulkLoad.load>` takes.

    Examples
    --------
    >>> rows_table(["id", "name"], [(1, "a"), (2, "b")]).to_pydict()
    {'id': [1, 2], 'name': ['a', 'b']}
    """
    values = list(zip(*rows)) if rows else [()] * len(columns)
    return pa.table({name: pa.array(list(col)) for name, col in zip(columns, values)})


def document_table(keys: np.ndarray, docs: np.ndarray, columns: Sequence[str] = ("id", "doc")) -> pa.Table:
    """Keys and an ``(n, width)`` byte array of ASCII documents as a two-column ``pyarrow.Table``, without copying rows.

    Examples
    --------
    >>> document_table(np.array([7, 9]), np.frombuffer(b"1,23,4", dtype=np.uint8).reshape(2, 3)).to_pydict()
    {'id': [7, 9], 'doc': ['1,2', '3,4']}
    """
    n, width = docs.shape
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * width).tobytes())
    text = pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.py_buffer(np.ascontiguousarray(docs).tobytes())])
    return pa.table({columns[0]: pa.array(np.asarray(keys, dtype=np.int64)), columns[1]: text})


def csv_bytes(table: pa.Table, *, null: str = "") -> bytes:
    r"""``table`` as CSV without a header: every value quoted, NULL written bare as ``null``.

    PostgreSQL's ``COPY … (FORMAT csv)`` reads a bare empty field as NULL; MySQL's ``LOAD DATA
    … OPTIONALLY ENCLOSED BY '"' ESCAPED BY ''`` reads a bare ``NULL`` as NULL and a doubled
    quote inside a quoted field as a quote, so any text survives either.

    Examples
    --------
    >>> csv_bytes(rows_table(["id", "s"], [(1, "a,b"), (2, None)]), null="NULL")
    b'"1","a,b"\n"2",NULL\n'
    """
    out = io.BytesIO()
    pa_csv.write_csv(table, out, pa_csv.WriteOptions(include_header=False, quoting_style="all_valid", null_string=null))
    return out.getvalue()


class CsvChunk(NamedTuple):
    """Rows already encoded by :func:`csv_bytes`, for a bulk path that takes them as they are.

    What :meth:`ingestlab.engines.capabilities.BulkLoad.prepare` makes before the clock
    starts; ``num_rows`` as on a ``pyarrow.Table``, so a bulk path counts either alike.
    """

    data: bytes
    num_rows: int


def csv_chunks(chunks: Iterable[Any], *, rows_per_piece: int, null: str = "") -> Iterator[CsvChunk]:
    """``chunks`` (``pyarrow.Table``) encoded by :func:`csv_bytes`, one piece of at most ``rows_per_piece`` rows at a time.

    Lazy, so a bulk path can send one piece while the next is encoded; ``list()`` of it
    encodes everything now (before a clock starts). A :class:`CsvChunk` passes through as it is.

    Examples
    --------
    >>> pieces = list(csv_chunks([rows_table(["id"], [(1,), (2,), (3,)])], rows_per_piece=2))
    >>> [(c.data.splitlines(), c.num_rows) for c in pieces]
    [([b'"1"', b'"2"'], 2), ([b'"3"'], 1)]
    """
    for chunk in chunks:
        if isinstance(chunk, CsvChunk):
            yield chunk
            continue
        for start in range(0, chunk.num_rows, rows_per_piece):
            piece = chunk.slice(start, rows_per_piece)
            yield CsvChunk(csv_bytes(piece, null=null), piece.num_rows)
