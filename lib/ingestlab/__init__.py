"""ingestlab: measure what a database write really costs."""

from __future__ import annotations

__version__ = "0.1.0"
