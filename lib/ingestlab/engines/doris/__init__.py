"""Doris's adapter and everything else that is that engine: its SQL, server, profile reader and docs."""

from ingestlab.engines.doris.adapter import Doris

__all__ = ["Doris"]
