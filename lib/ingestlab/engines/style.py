"""An engine's identity in figures and tables: its human name, colour and marker (``Engine.STYLE``)."""

from __future__ import annotations

import dataclasses


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
    """

    title: str
    colour: str
    marker: str
