"""MariaDB semi-synchronous replication: its adapter, its primary-and-replica server and docs (everything else is MariaDB's)."""

from ingestlab.engines.mariadb_semisync.adapter import MariaDBSemiSync

__all__ = ["MariaDBSemiSync"]
