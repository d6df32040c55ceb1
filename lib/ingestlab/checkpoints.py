"""Checkpoints of a run's completed configurations, so that ``ingestlab run --resume`` measures only what is left."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a table is read: the runner checks a folder's checkpoints without them
    import pandas as pd

#: Environment variable the batch runner sets to the run folder it resumes (read by :class:`~ingestlab.results.Run`).
RESUME_ENV = "INGESTLAB_RESUME"
#: The checkpoints' folder inside a run folder.
FOLDER = "checkpoints"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.,=-]+")


def resuming(directory: str | os.PathLike) -> bool:
    """Whether the batch runner asked to resume the run in ``directory`` (:data:`RESUME_ENV`)."""
    wanted = os.environ.get(RESUME_ENV)
    return bool(wanted) and Path(wanted).resolve() == Path(directory).resolve()


def name_of(key: dict[str, Any]) -> str:
    """The folder name of ``key``'s checkpoint: its items, readable, and a hash that keeps names apart.

    Examples
    --------
    >>> name_of({"engine": "engine_a", "variant": "sync_on", "repeat": 0})
    'engine=engine_a,variant=sync_on,repeat=0-c46e21e1'
    """
    text = json.dumps(key, sort_keys=True, default=str)
    readable = _UNSAFE.sub("_", ",".join(f"{k}={v}" for k, v in key.items()))[:150]
    return f"{readable}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def same_parameters(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The names whose values differ between an interrupted run's parameters and its resume's.

    Both are compared as ``run.json`` stores them (JSON). A value the run drew itself from the
    clock is no exception: the resume takes the interrupted run's (:func:`drawn_before`), so
    the configurations it keeps and those it measures share it.

    Examples
    --------
    >>> same_parameters({"n": 10, "seed": 5, "seed_source": "clock"}, {"n": 20, "seed": 7, "seed_source": "clock"})
    ['n', 'seed']

    A name is a name in any case (notebook 00's runs before 2026-11-27 recorded ``ALPHA``):

    >>> same_parameters({"ALPHA": 0.05}, {"alpha": 0.05}), same_parameters({"ALPHA": 0.05}, {"alpha": 0.01})
    ([], ['alpha'])
    """
    before, now = ({str(k).lower(): v for k, v in json.loads(json.dumps(p, default=str)).items()} for p in (before, now))
    return sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))


def drawn_before(name: str) -> Any:
    """The value the interrupted run being resumed drew from the clock for parameter ``name``, or None.

    Read from ``run.json``'s ``parameters`` in the folder :data:`RESUME_ENV` names, when its
    ``<name>_source`` is ``"clock"``; None when no run is resumed or it recorded no such value.
    """
    wanted = os.environ.get(RESUME_ENV)
    if not wanted:
        return None
    try:
        parameters = json.loads((Path(wanted) / "run.json").read_text()).get("parameters") or {}
    except (OSError, ValueError, AttributeError):
        return None
    return parameters.get(name) if parameters.get(f"{name}_source") == "clock" else None


def problems(directory: str | os.PathLike) -> list[str]:
    """What is wrong with the checkpoints in run folder ``directory``: one line per damaged one (empty: none).

    A checkpoint is damaged when its ``key.json`` is not the JSON :meth:`Checkpoints.put` writes
    or a table it names cannot be read; a resumed run would otherwise fail on it after its servers
    started. (A write cut short, ``.<name>.tmp``, is no checkpoint and is dropped on resume.)
    """
    found = []
    folder = Path(directory) / FOLDER
    if not folder.is_dir():
        return found
    import pyarrow.parquet as pq

    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        try:
            tables = json.loads((entry / "key.json").read_text())["tables"]
            for table in tables:
                pq.read_schema(entry / f"{table}.parquet")
        except FileNotFoundError as exc:
            found.append(f"{entry}: {Path(exc.filename or '').name or 'a file'} is missing")
        except (OSError, ValueError, KeyError, TypeError) as exc:  # pyarrow's errors are ValueErrors
            found.append(f"{entry}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
    return found


class Checkpoints:
    """The completed configurations of one run: ``<run>/checkpoints/<name>/`` with ``key.json`` and a parquet per table.

    A configuration's folder is written under a temporary name and renamed when whole, so
    a run killed at any moment leaves either a complete checkpoint or none.

    Parameters
    ----------
    directory : path
        The run folder.
    keep : bool
        Keep the checkpoints found there (a resume); otherwise they are removed, as they
        belong to an earlier run.
    """

    def __init__(self, directory: str | os.PathLike, keep: bool):
        self.dir = Path(directory) / FOLDER
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        for partial in self.dir.glob(".*.tmp"):  # a write a kill cut short
            shutil.rmtree(partial, ignore_errors=True)
        self.found = {p.name for p in self.dir.iterdir() if (p / "key.json").exists()} if self.dir.is_dir() else set()

    def get(self, key: dict[str, Any]) -> dict[str, pd.DataFrame] | None:
        """The tables stored for ``key``, or None when this configuration has no checkpoint."""
        name = name_of(key)
        if name not in self.found:
            return None
        folder = self.dir / name
        tables = json.loads((folder / "key.json").read_text())["tables"]
        import pandas as pd

        return {table: pd.read_parquet(folder / f"{table}.parquet") for table in tables}

    def put(self, key: dict[str, Any], tables: dict[str, pd.DataFrame]) -> Path:
        """Store ``tables`` as ``key``'s checkpoint (atomically); return its folder."""
        name = name_of(key)
        final, tmp = self.dir / name, self.dir / f".{name}.tmp"
        try:
            tmp.mkdir(parents=True, exist_ok=True)
            for table, frame in tables.items():
                frame.to_parquet(tmp / f"{table}.parquet", index=False)
            info = {"key": key, "tables": list(tables),
                    "completed_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
            (tmp / "key.json").write_text(json.dumps(info, indent=2, default=str))
            shutil.rmtree(final, ignore_errors=True)
            tmp.rename(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.found.add(name)
        return final
