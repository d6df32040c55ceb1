"""RocksDB's adapter and everything else that is that engine: its SQL, server, profile reader and docs."""

from ingestlab.engines.rocksdb.adapter import RocksDB

__all__ = ["RocksDB"]
