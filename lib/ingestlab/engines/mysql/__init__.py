"""MySQL's adapter and everything else that is that engine: its SQL, server, profile reader and docs."""

from ingestlab.engines.mysql.adapter import MySQL

__all__ = ["MySQL"]
