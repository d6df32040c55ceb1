"""ArangoDB's adapter and everything else that is that engine: its SQL, server, profile reader and docs."""

from ingestlab.engines.arangodb.adapter import ArangoDB

__all__ = ["ArangoDB"]
