"""Where the repository, the lab's server directory, results and figures live."""

from __future__ import annotations

import atexit
import os
import shutil
from pathlib import Path

#: The repository root (``lib/ingestlab`` is two levels below it).
REPO = Path(__file__).resolve().parents[2]


def lab_dir() -> Path:
    """Directory for the lab's local servers (``$INGESTLAB_LAB_DIR`` or ``<repo>/.lab``)."""
    return Path(os.environ.get("INGESTLAB_LAB_DIR", REPO / ".lab")).resolve()


#: Name prefix of a process's scratch folder in the lab directory (:func:`scratch_dir`).
SCRATCH_PREFIX = "scratch-"


def scratch_dir() -> Path:
    """This process's folder for scratch files (``<lab dir>/scratch-<pid>``), made on first use.

    A killed run cannot remove what it wrote here; ``ingestlab clean`` and the next run's reap
    (:func:`ingestlab.servers.base.reap`) remove the folder once its process is gone.
    """
    path = lab_dir() / f"{SCRATCH_PREFIX}{os.getpid()}"
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        atexit.register(shutil.rmtree, path, True)  # a process that ends normally leaves none
    return path


def results_dir() -> Path:
    """Default directory for run outputs (``$INGESTLAB_RESULTS_DIR`` or ``<repo>/data/results``)."""
    return Path(os.environ.get("INGESTLAB_RESULTS_DIR", REPO / "data" / "results")).resolve()


#: Environment variable naming a folder that receives every figure instead of the runs' folders (tests).
FIGURES_ENV = "INGESTLAB_FIGURES_DIR"


def figures_dir() -> Path:
    """The article's figures, changed only by ``ingestlab figures`` (``$INGESTLAB_FIGURES_DIR`` or ``<repo>/figures``)."""
    return Path(os.environ.get(FIGURES_ENV, REPO / "figures")).resolve()


def figures_redirect() -> Path | None:
    """``$INGESTLAB_FIGURES_DIR`` when set: figures are saved there rather than in their run's folder."""
    value = os.environ.get(FIGURES_ENV)
    return Path(value).resolve() if value else None


def notebooks_dir() -> Path:
    """Directory holding the experiment notebooks."""
    return REPO / "notebooks"
