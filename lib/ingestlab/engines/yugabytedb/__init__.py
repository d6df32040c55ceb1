"""YugabyteDB's adapter and everything else that is that engine: its SQL, server, profile reader and docs."""

from ingestlab.engines.yugabytedb.adapter import YugabyteDB

__all__ = ["YugabyteDB"]
