"""Replicated PostgreSQL's adapters (a primary and 1, 0 or 2 synchronous standbys) and everything else that is that engine."""

from ingestlab.engines.postgres_replicated.adapter import PostgresReplicated, PostgresReplicated0, PostgresReplicated2

__all__ = ["PostgresReplicated", "PostgresReplicated0", "PostgresReplicated2"]
