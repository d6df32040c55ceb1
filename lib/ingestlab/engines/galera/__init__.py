"""A MariaDB Galera cluster: its adapter, its server (N nodes started by the lab) and its docs."""

from ingestlab.engines.galera.adapter import Galera

__all__ = ["Galera"]
