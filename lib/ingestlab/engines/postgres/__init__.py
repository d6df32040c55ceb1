"""PostgreSQL's adapters (18 embedded, 15 from Debian) and everything else that is that engine."""

from ingestlab.engines.postgres.adapter import Postgres, Postgres15

__all__ = ["Postgres", "Postgres15"]
