"""The numeric tables of the five seed studies, as tidy frames read from ``data/published``."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ingestlab import _paths
from ingestlab.errors import ConfigError

#: Columns every published table has; read as text, empty when the seed states nothing.
LABELS = ("source_seed", "engine", "version", "deployment", "scenario")


def data_dir() -> Path:
    """Return the directory that holds the published CSV files.

    Returns
    -------
    pathlib.Path
        ``$INGESTLAB_PUBLISHED_DIR`` when set, else ``data/published`` in the repository.
    """
    override = os.environ.get("INGESTLAB_PUBLISHED_DIR")
    if override:
        return Path(override)
    return _paths.REPO / "data" / "published"


def names() -> list[str]:
    """Return the names of the published tables (the CSV file stems), sorted.

    Returns
    -------
    list of str
        One name per ``<name>.csv`` in :func:`data_dir`.

    Examples
    --------
    >>> "starrocks_insert_scenarios" in names()
    True
    >>> names() == sorted(names())
    True
    """
    return sorted(path.stem for path in data_dir().glob("*.csv"))


def load(name: str) -> pd.DataFrame:
    """Read one published table.

    Parameters
    ----------
    name : str
        A table name, one of :func:`names`.

    Returns
    -------
    pandas.DataFrame
        One row per observation. The :data:`LABELS` columns are text (``""`` when not
        stated); measured columns carry their unit in their name (``total_s``,
        ``median_ms``, ``rows_per_s``) and hold the numbers as the seed prints them.

    Raises
    ------
    ingestlab.errors.ConfigError
        If ``name`` is not a published table.
    """
    known = names()
    if name not in known:
        raise ConfigError(name="name", value=name, accepted="one of: " + ", ".join(known))
    frame = pd.read_csv(data_dir() / f"{name}.csv", dtype=dict.fromkeys(LABELS, str))
    frame[list(LABELS)] = frame[list(LABELS)].fillna("")
    return frame
