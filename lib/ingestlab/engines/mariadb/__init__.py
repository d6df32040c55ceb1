"""MariaDB's adapter and everything else that is that engine: its SQL, server, profile reader and docs."""

from ingestlab.engines.mariadb.adapter import MariaDB

__all__ = ["MariaDB"]
