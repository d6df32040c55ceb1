"""An engine's identity in figures and tables: its human name, colour and marker (``Engine.STYLE``)."""

from __future__ import annotations

import dataclasses
from typing import Mapping


@dataclasses.dataclass(frozen=True)
class EngineStyle:
    """An engine's identity in figures and tables, declared once in its adapter (``STYLE``).

    Parameters
    ----------
    title : str
        The engine's human name (``"PostgreSQL"``): every label, legend and table.
    colour : str
        Its colour in every figure (``"#0072B2"``), no other engine's: a reader who has learnt it
        in one figure finds the engine by it in every other (``tests/test_figures.py`` holds the
        lab's engines to distinct colours, far enough apart to tell).
    marker : str
        Its matplotlib marker: the engine's second mark, beside its colour.
    words : mapping
        The reader's words for this engine's own identifiers (its table models, settings, commit
        variants, the stages of its anatomy): :func:`ingestlab.labels.label` finds them here.
    configuration_of : str, optional
        The engine this one is a configuration of (the replicated PostgreSQL with no standby or two
        is that engine's, with another number of standbys): it keeps that engine's colour, and its
        marker tells it apart.
    """

    title: str
    colour: str
    marker: str
    words: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False, hash=False)
    configuration_of: str | None = None
