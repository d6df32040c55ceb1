"""Hive text (CSV) tables in the study's schema, grown by doubling, written once per size and reused."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: Hive's LazySimpleSerDe defaults: field ``\x01``, collection items ``\x02``, rows ``\n``, NULL ``\N``.
FIELD_DELIM, COLLECTION_DELIM, LINE_DELIM, NULL = "\x01", "\x02", "\n", "\\N"
#: Bytes Hive's default text format cannot carry inside a value (it has no escaping unless
#: ``ESCAPED BY`` is declared, and the study declares none); ``\x03`` is the map-key delimiter.
RESERVED = ("\x01", "\x02", "\x03", "\n", "\r")
#: The table's columns in file order, with their Hive types; ``dt`` is the partition column
#: (a ``dt=…`` folder, not a field in the file).
COLUMNS: tuple[tuple[str, str], ...] = (("id", "BIGINT"), ("user_id", "BIGINT"), ("name", "STRING"),
                                        ("tags", "ARRAY<STRING>"), ("note", "STRING"), ("score", "BIGINT"))
PARTITION = ("dt", "STRING")
#: Partition values the rows are spread over.
PARTITIONS = tuple(f"2024-01-{d:02d}" for d in (1, 2, 3, 4))
# Characters a CSV reader with default settings would mis-read in Hive text (quotes, commas,
# backslashes) are part of the alphabet on purpose: Hive text has no quoting.
_ALPHABET = list("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + \
    ['"', "'", ",", ";", "\\", "|", "\t", "é", "ß", "中", "文", "—", "\\N"]
_MANIFEST = "manifest.json"
_CHUNK = 8 << 20


@dataclass(frozen=True)
class Table:
    """One size of the table: a folder of ``dt=…/`` partitions, as Hive leaves it after doublings.

    Attributes
    ----------
    path : Path
        The table folder (``<dataset>/size_<k>``); its files are hard links into the dataset.
    files : tuple of Path
        Every data file, partition by partition.
    doublings : int
        ``INSERT INTO t SELECT * FROM t`` statements applied to the base rows.
    rows : int
        Rows in the table (the generator's own ``COUNT(*)``).
    bytes : int
        Bytes of all data files.
    checksum : str
        SHA-256 over the files' own SHA-256 digests, in ``files`` order.
    minimum : tuple
        The first row of ``ORDER BY 1``: every column as text (``None`` for NULL), ``dt`` last.
    """

    path: Path
    files: tuple[Path, ...]
    doublings: int
    rows: int
    bytes: int
    checksum: str
    minimum: tuple

    @property
    def gb(self) -> float:
        """Size in GB (10⁹ bytes)."""
        return self.bytes / 1e9


def base_rows(n: int, seed: int = 0) -> list[tuple]:
    """``n`` distinct rows of the study's schema, every value as Hive text would hold it.

    Ids are distinct and shuffled; ``tags`` is a list of 1–6 non-empty strings; ``note`` is
    NULL (``None``) for about one row in ten; the last item is the ``dt`` partition value.
    Strings carry quotes, commas, backslashes and non-ASCII letters, never a byte in
    :data:`RESERVED`. No string is empty: pandas' pyarrow engine cannot tell an empty string
    from NULL.

    Examples
    --------
    >>> rows = base_rows(3, seed=1)
    >>> len(rows), len(rows[0]), sorted(r[0] for r in rows) == sorted(set(r[0] for r in rows))
    (3, 7, True)
    """
    rng = np.random.default_rng(seed)
    ids = rng.permutation(n) * 7 + 1_000_003
    user = rng.integers(0, 10**12, n)
    score = rng.integers(-10**9, 10**9, n)
    parts = rng.integers(0, len(PARTITIONS), n)
    null_note = rng.random(n) < 0.1

    n_tags = rng.integers(1, 7, n)
    lengths = np.concatenate([rng.integers(8, 41, n), rng.integers(120, 421, n), rng.integers(3, 17, n_tags.sum())])
    chars = np.asarray(_ALPHABET, dtype=object)[rng.integers(0, len(_ALPHABET), lengths.sum())]
    ends = np.cumsum(lengths)
    texts = ["".join(chars[e - k:e]).strip() or "x" for e, k in zip(ends, lengths)]
    names, notes, tags = texts[:n], texts[n:2 * n], texts[2 * n:]
    starts = np.concatenate([[0], np.cumsum(n_tags)])
    rows = []
    for i in range(n):
        note = None if null_note[i] else notes[i]
        rows.append((int(ids[i]), int(user[i]), names[i], tags[starts[i]:starts[i + 1]], note, int(score[i]),
                     PARTITIONS[parts[i]]))
    return rows


def encode_row(row: tuple) -> str:
    """One row as a Hive text line (partition value left out: it lives in the folder name).

    Examples
    --------
    >>> encode_row((1, 2, 'a "b", c', ["x", "y"], None, -3, "2024-01-01"))
    '1\\x012\\x01a "b", c\\x01x\\x02y\\x01\\\\N\\x01-3\\n'
    """
    values = []
    for value in row[:-1]:
        if value is None:
            values.append(NULL)
        elif isinstance(value, list):
            values.append(COLLECTION_DELIM.join(value))
        else:
            values.append(str(value))
    line = FIELD_DELIM.join(values)
    if any(c in line.replace(FIELD_DELIM, "").replace(COLLECTION_DELIM, "") for c in RESERVED):
        raise ValueError(f"a value holds a byte Hive text cannot carry: {row!r}")
    return line + LINE_DELIM


def as_text(row: tuple) -> tuple:
    """A generated row as every engine's answer is compared: each value as text, NULL as ``None``."""
    return tuple(None if v is None else COLLECTION_DELIM.join(v) if isinstance(v, list) else str(v) for v in row)


@functools.lru_cache(maxsize=8)
def _base(n: int, seed: int) -> tuple[dict[str, bytes], tuple]:
    rows = base_rows(n, seed)
    chunks = {p: "".join(encode_row(r) for r in rows if r[-1] == p).encode() for p in PARTITIONS}
    return chunks, as_text(min(rows, key=lambda r: r[0]))


def base_bytes(n: int, seed: int = 0) -> int:
    """Bytes of the base rows as Hive text (computed in memory, nothing written)."""
    return sum(len(c) for c in _base(n, seed)[0].values())


def doublings_for(target_bytes: float, base: int) -> int:
    """Doublings that bring ``base`` bytes nearest to ``target_bytes`` (in log scale), at least 0.

    Examples
    --------
    >>> doublings_for(4e6, 1e6), doublings_for(5e5, 1e6), doublings_for(5.1e9, 5e6)
    (2, 0, 10)
    """
    return max(0, round(math.log2(target_bytes / base)))


def dataset_dir(root: str | os.PathLike, n: int, seed: int) -> Path:
    """The folder of one dataset (base rows ``n``, ``seed``) under ``root``."""
    return Path(root) / f"hive_text_n{n}_seed{seed}"


def bytes_to_write(root: str | os.PathLike, n: int, seed: int, doublings: int) -> int:
    """Bytes still to be written to hold the table after ``doublings`` (0 if already cached)."""
    manifest = _read_manifest(dataset_dir(root, n, seed))
    have = max((g["generation"] for g in manifest.get("generations", [])), default=-1)
    total = base_bytes(n, seed) << doublings
    done = base_bytes(n, seed) << have if have >= 0 else 0
    return max(0, total - done)


def table(root: str | os.PathLike, n: int, seed: int, doublings: int, *, verify: bool = False) -> Table:
    """The table after ``doublings``, written if it is not on disk yet, else reused.

    Doubling ``g`` appends to every partition a new file holding a copy of all the
    partition's earlier files, as Hive's ``INSERT INTO t SELECT * FROM t`` leaves one new
    file per partition. Generations are written once and shared by every size; a size's
    folder ``size_<k>/dt=…/`` hard-links generations ``0 … k``. Each file's SHA-256 is
    recorded in ``manifest.json`` as it is written.

    Parameters
    ----------
    root : path
        The data cache folder (``DATA_DIR``).
    n : int
        Base rows (before any doubling).
    seed : int
        Seed of the base rows.
    doublings : int
        Doublings to apply (``rows = n · 2**doublings``).
    verify : bool
        Re-hash every file and compare with the manifest (else sizes are compared).

    Returns
    -------
    Table
    """
    folder = dataset_dir(root, n, seed)
    folder.mkdir(parents=True, exist_ok=True)
    manifest = _read_manifest(folder) or {"n": n, "seed": seed, "format": "hive_text_default", "generations": []}
    chunks, minimum = _base(n, seed)
    gens = {g["generation"]: g for g in manifest["generations"]}
    for g in range(doublings + 1):
        if g in gens:
            continue
        files = {}
        for part in PARTITIONS:
            path = folder / "generations" / f"dt={part}" / f"{g:02d}_0.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            digest = hashlib.sha256()
            with open(tmp, "wb") as out:
                if g == 0:
                    out.write(chunks[part])
                    digest.update(chunks[part])
                for earlier in range(g):
                    with open(folder / "generations" / f"dt={part}" / f"{earlier:02d}_0.txt", "rb") as src:
                        while block := src.read(_CHUNK):
                            out.write(block)
                            digest.update(block)
            tmp.replace(path)
            os.chmod(path, 0o644)  # PostgreSQL's server reads the files as its own user
            files[part] = {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}
        gens[g] = {"generation": g, "files": files}
        manifest["generations"] = [gens[k] for k in sorted(gens)]
        _write_manifest(folder, manifest)
    size_dir = folder / f"size_{doublings}"
    paths, digests, total = [], [], 0
    for part in PARTITIONS:
        (size_dir / f"dt={part}").mkdir(parents=True, exist_ok=True)
        for g in range(doublings + 1):
            src = folder / "generations" / f"dt={part}" / f"{g:02d}_0.txt"
            link = size_dir / f"dt={part}" / src.name
            if not link.exists():
                os.link(src, link)
            entry = gens[g]["files"][part]
            size = link.stat().st_size
            if size != entry["bytes"] or (verify and _sha256(link) != entry["sha256"]):
                raise ValueError(f"{link}: does not match its manifest entry; delete {folder} to rewrite it")
            paths.append(link)
            digests.append(entry["sha256"])
            total += size
    for d in [folder, size_dir, *(p.parent for p in paths), folder / "generations"]:
        os.chmod(d, 0o755)
    return Table(size_dir, tuple(paths), doublings, n << doublings, total,
                 hashlib.sha256("".join(digests).encode()).hexdigest(), minimum)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _read_manifest(folder: Path) -> dict:
    path = folder / _MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def _write_manifest(folder: Path, manifest: dict) -> None:
    manifest["written_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    tmp = folder / (_MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    tmp.replace(folder / _MANIFEST)


def free_bytes(path: str | os.PathLike) -> int:
    """Free bytes on the file system that holds ``path`` (or its nearest existing parent)."""
    path = Path(path).resolve()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free
