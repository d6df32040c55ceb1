"""A toy engine: SQLite through the standard library, a whole engine folder outside the package (the example to copy)."""

from .adapter import ToySQLite

__all__ = ["ToySQLite"]
