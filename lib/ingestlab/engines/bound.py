"""An object bound to one engine: the base of ``engine.sender``, ``engine.tables`` and the capabilities."""

from __future__ import annotations

from typing import Any


class Bound:
    """A small object that works on one engine, which it keeps as :attr:`engine`.

    Parameters
    ----------
    engine : Engine
        The adapter the object works on.
    """

    def __init__(self, engine: Any):
        self.engine = engine
