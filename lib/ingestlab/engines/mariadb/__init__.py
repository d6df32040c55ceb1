"""MariaDB's adapter and everything else that is that engine: its SQL, server and docs (its profile reader is MySQL's)."""

from ingestlab.engines.mariadb.adapter import MariaDB

__all__ = ["MariaDB"]
