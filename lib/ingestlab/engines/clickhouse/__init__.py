"""ClickHouse's adapter and everything else that is that engine: its SQL, server, profile reader and docs."""

from ingestlab.engines.clickhouse.adapter import ClickHouse

__all__ = ["ClickHouse"]
