"""DuckDB's adapter and everything else that is that engine: its SQL, server, profile reader and docs."""

from ingestlab.engines.duckdb.adapter import DuckDB

__all__ = ["DuckDB"]
