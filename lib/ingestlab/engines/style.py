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
        Its colour in every figure (``"#0072B2"``): one per family, an Okabe and Ito colour.
    marker : str
        Its matplotlib marker; within a family the marker tells the engines apart.
    words : mapping
        The reader's words for this engine's own identifiers (its table models, settings, commit
        variants, the stages of its anatomy): :func:`ingestlab.labels.label` finds them here.
    """

    title: str
    colour: str
    marker: str
    words: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False, hash=False)
