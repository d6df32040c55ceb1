"""RocksDB (through rocksdict), opened inside this Python process in a private directory."""

from __future__ import annotations

import re
from typing import ClassVar

from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.servers.base import InProcessServer

#: The lab's settings for RocksDB (name → meaning). Values are strings, as for every server.
SETTINGS: dict[str, str] = {
    "block_cache_bytes": "capacity of the LRU block cache of data blocks (index and filter blocks "
                         "stay in the table readers' memory, as RocksDB does by default)",
    "use_direct_reads": "'true': reads bypass the OS page cache (O_DIRECT)",
    "bloom_bits_per_key": "bits per key of a full bloom filter in every SST file; '0': no filter",
    "compression": "block compression: none, snappy, lz4 or zstd",
    "write_buffer_size": "bytes of one memtable",
    "statistics": "'on': collect RocksDB's statistics (tickers read by RocksDB.io_counters)",
}
#: Keys of the ``OPTIONS-*`` file that :meth:`RocksDBStore.options_in_force` reports.
REPORTED_OPTIONS = ("rocksdb_version", "use_direct_reads", "use_direct_io_for_flush_and_compaction",
                    "filter_policy", "compression", "write_buffer_size", "max_write_buffer_number",
                    "block_size", "no_block_cache", "cache_index_and_filter_blocks", "target_file_size_base",
                    "max_bytes_for_level_base")


def _rocksdict():
    try:
        import rocksdict
    except ImportError as exc:
        raise EngineUnavailableError("RocksDB needs the 'rocksdict' package: run `make .venv`") from exc
    return rocksdict


def build_options(settings: dict[str, str]):
    """``rocksdict.Options`` for the lab's ``settings`` (see :data:`SETTINGS`); raw bytes keys and values."""
    rd = _rocksdict()
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise ServerError(f"not a lab setting of RocksDB: {unknown}; known: {sorted(SETTINGS)}")
    opts = rd.Options(raw_mode=True)
    opts.create_if_missing(True)
    table = rd.BlockBasedOptions()
    if "block_cache_bytes" in settings:
        table.set_block_cache(rd.Cache(int(settings["block_cache_bytes"])))
    bits = int(settings.get("bloom_bits_per_key", 0))
    if bits > 0:
        table.set_bloom_filter(bits, False)
    opts.set_block_based_table_factory(table)
    if settings.get("use_direct_reads", "false").lower() == "true":
        opts.set_use_direct_reads(True)
    if "compression" in settings:
        name = settings["compression"]
        if name not in ("none", "snappy", "lz4", "zstd"):
            raise ServerError(f"RocksDB compression={name!r}: expected none, snappy, lz4 or zstd")
        opts.set_compression_type(getattr(rd.DBCompressionType, name)())
    if "write_buffer_size" in settings:
        opts.set_write_buffer_size(int(settings["write_buffer_size"]))
    if settings.get("statistics", "off").lower() == "on":
        opts.enable_statistics()
    return opts


class RocksDBStore(InProcessServer):
    """A RocksDB database in ``.lab/rocksdb-<pid>/data``, open in this process while "running".

    Its :attr:`data_dir` is the database directory (SST files, WAL, ``OPTIONS-*``).
    RocksDB is a library, so the "server" is this Python process: :meth:`pid` is its pid,
    :meth:`start` opens the database, :meth:`stop` closes it and removes the directory.
    :meth:`restart` reopens it with new options and passes them for the column family too:
    ``Rdict(path, options)`` on an existing database silently keeps the options stored in
    it (the bloom filter would be lost); ``column_families={"default": options}`` does not.
    ``server.pid`` holds this process's pid, so :func:`~ingestlab.servers.base.reap` removes
    the store of a process that was killed (and leaves a live one alone).
    """

    KIND: ClassVar[str] = "rocksdb"

    def __init__(self, directory=None, *, keep: bool = False):
        super().__init__(directory, keep=keep)
        self.options = None

    def _open(self) -> None:
        rd = _rocksdict()
        opts = build_options(self.settings)
        try:
            self.db = rd.Rdict(str(self.data_dir), opts, column_families={"default": opts})
        except Exception as exc:  # noqa: BLE001 - rocksdict raises plain Exception for RocksDB status errors
            raise ServerError(f"cannot open RocksDB at {self.data_dir}: {exc}") from exc
        self.options = opts

    def check(self, settings: dict[str, str]) -> None:
        """Raise for settings RocksDB's options do not take (:func:`build_options`), before the database is closed."""
        build_options(settings)

    def connect_kwargs(self) -> dict:
        """Where the database is (``path``); there is nothing to connect to."""
        return {"path": str(self.data_dir)}

    def options_in_force(self) -> dict[str, str]:
        """:data:`REPORTED_OPTIONS` as RocksDB wrote them in its newest ``OPTIONS-*`` file on open."""
        files = sorted(self.data_dir.glob("OPTIONS-*"), key=lambda p: int(p.name.split("-")[1]))
        if not files:
            return {}
        out = {}
        for line in files[-1].read_text().splitlines():
            m = re.match(r"^\s*([a-z_0-9]+)=(.*)$", line)
            if m and m.group(1) in REPORTED_OPTIONS and m.group(1) not in out:
                out[m.group(1)] = m.group(2).strip()
        return out
