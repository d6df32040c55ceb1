"""Where the repository, the lab's server directory, results and figures live."""

from __future__ import annotations

import os
from pathlib import Path

#: The repository root (``lib/ingestlab`` is two levels below it).
REPO = Path(__file__).resolve().parents[2]


def lab_dir() -> Path:
    """Directory for the lab's local servers (``$INGESTLAB_LAB_DIR`` or ``<repo>/.lab``)."""
    return Path(os.environ.get("INGESTLAB_LAB_DIR", REPO / ".lab")).resolve()


def results_dir() -> Path:
    """Default directory for run outputs (``$INGESTLAB_RESULTS_DIR`` or ``<repo>/data/results``)."""
    return Path(os.environ.get("INGESTLAB_RESULTS_DIR", REPO / "data" / "results")).resolve()


def figures_dir() -> Path:
    """Directory for exported figures (``$INGESTLAB_FIGURES_DIR`` or ``<repo>/figures``)."""
    return Path(os.environ.get("INGESTLAB_FIGURES_DIR", REPO / "figures")).resolve()


def notebooks_dir() -> Path:
    """Directory holding the experiment notebooks."""
    return REPO / "notebooks"
