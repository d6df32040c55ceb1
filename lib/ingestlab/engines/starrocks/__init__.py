"""StarRocks's adapter and everything else that is that engine: its SQL, server, profile reader and docs."""

from ingestlab.engines.starrocks.adapter import StarRocks

__all__ = ["StarRocks"]
