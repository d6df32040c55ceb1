"""RocksDB, the key-value store under ArangoDB, as a library inside this Python process."""

from __future__ import annotations

import re
import warnings
from typing import Any, ClassVar, Iterable, Sequence

import pyarrow as pa

from ingestlab.engines import capabilities
from ingestlab.engines.base import Engine, EngineStyle, Wire
from ingestlab.engines.capabilities import BulkLoad, IOCounters, MemoryBudget, Upsert
from ingestlab.errors import ConstraintError, EngineUnavailableError, UnsupportedOperationError
from ingestlab.polling import poll
from ingestlab.servers.base import LocalServer

#: RocksDB statistics tickers that :class:`RocksDBIOCounters` reports, under the lab's names.
_TICKERS = {
    "rocksdb.block.cache.data.miss": "blocks_read",
    "rocksdb.block.cache.data.hit": "blocks_hit",
    "rocksdb.block.cache.index.miss": "index_blocks_read",
    "rocksdb.block.cache.filter.miss": "filter_blocks_read",
    "rocksdb.bloom.filter.useful": "bloom_filter_useful",
    "rocksdb.bloom.filter.full.positive": "bloom_filter_positive",
    "rocksdb.number.keys.read": "keys_read",
    "rocksdb.number.keys.written": "keys_written",
    "rocksdb.memtable.hit": "memtable_hits",
    "rocksdb.compact.read.bytes": "compaction_read_bytes",
    "rocksdb.compact.write.bytes": "compaction_write_bytes",
    "rocksdb.flush.write.bytes": "flush_write_bytes",
    "rocksdb.stall.micros": "write_stall_us",
}
_TICKER_LINE = re.compile(r"^(rocksdb\.[a-z0-9._]+) COUNT : (\d+)$", re.M)


class RocksDBUpsert(Upsert):
    """ArangoDB's writes on its storage engine, without ArangoDB.

    Its insert (look the key up, then write), its insert with overwrite (read the old
    document, then write), and the blind write of the seed's patched ArangoDB.
    """

    OPERATIONS: ClassVar[tuple[str, ...]] = ("insert", "overwrite", "blind_overwrite")

    def prepare_write(self, operation: str, table: str, columns: Sequence[str], key: str, chunk: Any):
        """One ``WriteBatch`` of ``insert``, ``overwrite`` (:meth:`RocksDB.upsert`) or ``blind_overwrite`` (``put``)."""
        engine = self.engine
        method = {"insert": engine.insert, "overwrite": engine.upsert, "blind_overwrite": engine.put}.get(operation)
        if method is None:
            raise UnsupportedOperationError(f"rocksdb: no {operation}; its operations are {self.OPERATIONS}")
        keys, values = _pairs(chunk, columns)
        return lambda: method(keys, values)


class RocksDBMemoryBudget(MemoryBudget):
    """Only the engine's own limit.

    RocksDB runs inside the lab's Python process, which a memory cgroup of the budget's size
    would starve.
    """

    LIMITS: ClassVar[dict[str, str]] = {
        "engine": "block cache of the budget's size, direct reads (O_DIRECT: no OS page cache), 10-bit bloom "
                  "filter per SST file as ArangoDB sets it, no compression",
    }

    def settings(self, budget_bytes: int, limit: str = "engine") -> dict[str, str]:
        """Settings that hold RocksDB's reads to ``budget_bytes`` of cache (see :attr:`LIMITS`)."""
        return {"block_cache_bytes": str(self.cache_bytes(budget_bytes, limit)), "use_direct_reads": "true",
                "bloom_bits_per_key": "10", "compression": "none"}


class RocksDBIOCounters(IOCounters):
    """RocksDB's I/O counters."""

    def read(self) -> dict[str, float]:
        """Cumulative RocksDB statistics: ``blocks_read`` (data blocks read from disk), bloom filter, compaction.

        Returns
        -------
        dict
            Keys of the tickers listed in this module (``blocks_read``, ``blocks_hit``,
            ``bloom_filter_useful``, ``keys_read``, ``compaction_read_bytes``...); empty when
            statistics are off.
        """
        text = self.engine.server.options.get_statistics() if self.engine.server.options is not None else None
        if not text:
            return {}
        found = dict(_TICKER_LINE.findall(text))
        return {name: float(found.get(ticker, 0)) for ticker, name in _TICKERS.items()}


class RocksDBBulkLoad(BulkLoad):
    """``WriteBatch`` es of the key and document pairs."""

    PATH = "write_batch"

    def load(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
             create: Sequence[str] = ()) -> int:
        """Write the chunks' (key, value) pairs, one ``WriteBatch`` each, without the WAL; return the pairs written.

        The first of ``columns`` is the key (an integer, stored big-endian), the second the
        value. The fastest write path short of building SST files: no WAL (a crash loses the
        load, which is then redone). Call :meth:`RocksDB.settle` afterwards. ``create`` must be empty:
        a key-value store has no table to create.
        """
        from rocksdict import WriteBatch, WriteOptions

        if create:
            raise UnsupportedOperationError(f"{self.engine.NAME}: no table to create in a load")
        if replace:
            self.engine.tables.reset(table, ())
        opts = WriteOptions()
        opts.disable_wal = True
        n = 0
        for chunk in chunks:
            keys, values = _pairs(chunk, columns)
            batch = WriteBatch(raw_mode=True)
            for k, v in zip(keys, values):
                batch.put(k, v)
            self.engine.db.write(batch, opts)
            n += len(keys)
        return n


class RocksDB(Engine):
    """RocksDB through ``rocksdict``, in ``.lab/rocksdb-<pid>/``, inside this Python process.

    Not SQL: there is one keyspace of bytes keys and bytes values. The contract's table steps
    work on it (:meth:`_reset_table` empties it, its ``bulk_load``, :meth:`_count_rows`,
    :meth:`_data_bytes`, :meth:`_settle`); :meth:`prepare_write` runs :meth:`insert`,
    :meth:`upsert` or :meth:`put`, each one ``WriteBatch`` (atomic, written to the WAL
    without fsync, as ArangoDB writes with ``waitForSync: false``). The SQL steps are
    switched off (:attr:`UNSUPPORTED`). Settings are the lab's option names of
    :data:`ingestlab.engines.rocksdb.server.SETTINGS`; :meth:`settings` reads back what RocksDB
    itself wrote to its ``OPTIONS`` file, which shows whether a reopen kept them. There is
    no remote RocksDB, so there are no URL schemes.
    """

    NAME = "rocksdb"
    STYLE = EngineStyle(title="RocksDB", colour="#8C564B", marker="o")
    PACKAGE = "rocksdict"
    HAS_LOCAL_SERVER = True
    #: No SQL: one keyspace of bytes keys and values.
    SQL = None
    #: The store runs in-process through rocksdict's bindings (recorded as the "driver").
    WIRE = Wire(placeholder="", drivers={"rocksdict": ("rocksdict", "rocksdict")},
                example="(none: RocksDB runs inside the lab's Python process)")
    #: Not SQL: the contract's table steps work on the store's one keyspace of bytes keys and
    #: values; the SQL steps are switched off.
    UNSUPPORTED: ClassVar[dict[str, str]] = {
        step: "RocksDB is a key-value store without SQL" for step in (
            "execute", "quote", "table_ddl", "insert_sql", "upsert_sql", "insert_select_sql", "set_session",
            "statement_call")
    }
    #: Statistics are always collected, so that block reads can be counted in every variant.
    _INSTRUMENT_SETTINGS: ClassVar[dict[str, str]] = {"statistics": "on"}
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        "upsert": RocksDBUpsert, "memory_budget": RocksDBMemoryBudget,
        "profiled_statement": "RocksDB is a key-value store without SQL",
        "table_models": "a key-value store has no table models", "io_counters": RocksDBIOCounters,
        "bulk_load": RocksDBBulkLoad,
    }

    def _make_server(self) -> LocalServer:
        from ingestlab.engines.rocksdb.server import RocksDBStore

        return RocksDBStore()

    def connect(self):
        """The open ``rocksdict.Rdict`` of the store (the store owns it; closing it here is a no-op)."""
        db = self.server.db if self.server is not None else None
        if db is None:
            raise EngineUnavailableError("rocksdb: the store is not open; call start() first")
        return _Handle(db)

    @property
    def db(self):
        """The open ``rocksdict.Rdict``."""
        return self.conn.db

    # -- tables: one keyspace ----------------------------------------------------------------
    def _reset_table(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                    model: str | None = None, partitions: int | None = None) -> None:
        """Empty the store's one keyspace (``table`` names it in results only); the key is the first column."""
        models = capabilities.of(self, "table_models")(self)  # the defaults: no models, one partition
        models.check_partitions(partitions)
        models.resolve_model(model, key)
        db = self.db
        it = db.iter()
        it.seek_to_first()
        first = it.key() if it.valid() else None
        it.seek_to_last()
        last = it.key() if it.valid() else None
        del it
        if first is not None:
            db.delete_range(first, last)  # [first, last)
            db.delete(last)

    # -- metadata ------------------------------------------------------------------------
    def server_version(self) -> str:
        from importlib.metadata import version

        rocks = self.server.options_in_force().get("rocksdb_version", "?")
        return f"RocksDB {rocks} (rocksdict {version('rocksdict')})"

    def settings(self) -> dict[str, str]:
        """The lab settings in force and RocksDB's own record of its options (``OPTIONS-*``)."""
        return {**{f"lab.{k}": v for k, v in self.server.settings.items()}, **self.server.options_in_force()}

    # -- keys and values -------------------------------------------------------------------
    def insert(self, keys: Sequence[bytes], values: Sequence[bytes]) -> None:
        """ArangoDB's insert: look up every key (a bloom filter answers "absent" without a read), then write.

        Raises
        ------
        ConstraintError
            If a key exists; nothing is written then.
        """
        from rocksdict import WriteBatch

        db, batch = self.db, WriteBatch(raw_mode=True)
        for key, value in zip(keys, values):
            if db.get(key) is not None:
                raise ConstraintError(f"rocksdb insert: key {key!r} exists (unique constraint)")
            batch.put(key, value)
        db.write(batch)

    def upsert(self, keys: Sequence[bytes], values: Sequence[bytes]) -> int:
        """ArangoDB's insert with overwrite: read each key's old value, then write the new one; return keys found.

        ArangoDB reads the old document to update its secondary indexes and its document
        count; the read is what costs a random disk access when the data do not fit in RAM.
        """
        from rocksdict import WriteBatch

        db, batch, found = self.db, WriteBatch(raw_mode=True), 0
        for key, value in zip(keys, values):
            found += db.get(key) is not None
            batch.put(key, value)
        db.write(batch)
        return found

    def put(self, keys: Sequence[bytes], values: Sequence[bytes]) -> None:
        """A blind write: no read, new values replace old ones (the study's patched ArangoDB)."""
        from rocksdict import WriteBatch

        batch = WriteBatch(raw_mode=True)
        for key, value in zip(keys, values):
            batch.put(key, value)
        self.db.write(batch)

    def _count_rows(self, table: str) -> int:
        """Count every key of the keyspace by a full scan that does not fill the block cache."""
        from rocksdict import ReadOptions

        opts = ReadOptions()
        opts.fill_cache(False)
        n = 0
        for _ in self.db.keys(read_opt=opts):
            n += 1
        return n

    def _data_bytes(self, table: str) -> int:
        """Bytes of the SST files (call after :meth:`_settle` so that nothing waits in a memtable)."""
        return int(self.db.property_int_value("rocksdb.total-sst-files-size") or 0)

    def _settle(self, table: str, timeout_s: float = 600.0) -> None:
        """Flush the memtable and wait until no compaction runs or is pending (a warning after ``timeout_s``)."""
        db = self.db
        db.flush(True)
        work = ("rocksdb.num-running-compactions", "rocksdb.compaction-pending", "rocksdb.num-running-flushes")
        if not poll(lambda: not any(db.property_int_value(name) for name in work), timeout_s=timeout_s,
                    interval_s=0.1):
            warnings.warn(f"{self.NAME}: flushes or compactions still running after {timeout_s:.0f} s; "
                          "the timed writes may share the disk with them", stacklevel=2)


def _pairs(chunk: Any, columns: Sequence[str]) -> tuple[list[bytes], list[bytes]]:
    """The (keys, values) of a chunk: its first column as big-endian keys, its second as bytes."""
    from ingestlab import datagen

    keys = datagen.key_bytes(chunk.column(columns[0]).to_numpy())
    values = chunk.column(columns[1]).cast(pa.binary()).to_pylist()
    return keys, values


class _Handle:
    """What :meth:`RocksDB.connect` returns: the open database, which the store closes, not the caller."""

    def __init__(self, db):
        self.db = db

    def close(self) -> None:
        """Nothing: the store closes the database on restart and stop."""
