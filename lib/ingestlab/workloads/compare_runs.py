"""Notebook 07's workload: the two runs it compares; nothing is measured, so only its parameters."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from ingestlab import _paths, safe_paths
from ingestlab.errors import ConfigError
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import ParamsBase

#: The notebook this workload serves (declared in full at the end: :data:`NOTEBOOK`).
NOTEBOOK_STEM = "07_compare_runs"
#: The runs compared by default: two real smoke runs of notebook 01, committed as test fixtures.
DEFAULT_RUNS = ("tests/fixtures/runs/a", "tests/fixtures/runs/b")


@dataclasses.dataclass(frozen=True)
class Params(ParamsBase):
    """Validated parameters of notebook 07 (see :func:`validate`)."""

    run_a: str
    run_b: str
    notebook: str | None
    threshold: float


def _folder(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(name, value, "a run folder (the --out of an `ingestlab run`, or one notebook's folder in it)")
    path = Path(value).expanduser()
    for candidate in (path, _paths.REPO / path):
        if candidate.is_dir() and (any(candidate.glob("run.json")) or any(candidate.glob("*/run.json"))):
            safe_paths.check_folder(candidate, name)  # its rows go into this run's outputs, which others read
            return str(candidate.resolve())
    raise ConfigError(name, value, "a run folder holding run.json, or folders that do (relative paths: from here "
                      "or from the repository)")


def validate(run_a: Any = DEFAULT_RUNS[0], run_b: Any = DEFAULT_RUNS[1], notebook: Any = "",
             threshold: Any = 0.05) -> Params:
    """Check notebook 07's parameters; return them resolved (folders as absolute paths).

    Examples
    --------
    >>> validate().threshold
    0.05
    >>> validate(threshold=2)
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: THRESHOLD=2 is not valid: expected a relative change between 0 and 1 (0.05: ±5 %)
    """
    a, b = _folder("RUN_A", run_a), _folder("RUN_B", run_b)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold) \
            or not 0 < threshold < 1:
        raise ConfigError("THRESHOLD", threshold, "a relative change between 0 and 1 (0.05: ±5 %)")
    if isinstance(notebook, int) and not isinstance(notebook, bool) and 0 <= notebook <= 99:
        notebook = f"{notebook:02d}"  # "-p NOTEBOOK 01" reaches the notebook as YAML's 1
    if notebook not in (None, "") and not isinstance(notebook, str):
        raise ConfigError("NOTEBOOK", notebook, "a notebook's id or name, or \"\" for every notebook both runs have")
    if notebook:
        from ingestlab import runner

        notebook = runner.find_notebook(notebook).stem
    return Params(a, b, notebook or None, float(threshold))


#: What :func:`compared_runs` keeps of a compared run's ``run.json``: what and where it measured, and how quiet it was.
COMPARED_KEYS = ("notebook", "completed", "started_at", "parameters", "engines", "software", "git", "load_average",
                 "machine_cpu", "resumed", "host")


def compared_runs(params: Params) -> list[dict]:
    """Each run notebook 07 compares, as its own ``run.json`` says: what measured the data 07 draws.

    Recorded in 07's ``run.json`` (``compared``), so its figures' SOURCE and caption name the
    revision, scale, engines and load of the runs that measured (07 itself measures nothing)
    and ``ingestlab figures`` holds them to the rules a measuring run's figures are held to.

    Returns
    -------
    list of dict
        One per run folder of each side (``role`` ``A`` or ``B``, its ``folder``), with the
        :data:`COMPARED_KEYS` of its ``run.json``; only ``params.notebook``'s runs when it is set.

    Examples
    --------
    >>> [(r["role"], r["notebook"], r["parameters"]["scale"]) for r in compared_runs(validate())]
    [('A', '01_insert_anatomy', 'smoke'), ('B', '01_insert_anatomy', 'smoke')]
    """
    from ingestlab import catalog

    found = []
    for role, root in (("A", params.run_a), ("B", params.run_b)):
        for path in catalog.find_runs(root):
            meta = catalog.probe(path).meta
            if params.notebook and meta.get("notebook") != params.notebook:
                continue
            found.append({"role": role, "folder": str(path), **{k: meta[k] for k in COMPARED_KEYS if k in meta}})
    return found


#: Notebook 07, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem=NOTEBOOK_STEM,
    question="Did anything change between two runs, beyond the noise?",
    study="none: two runs of the lab (its catalogue)",
    measures="nothing: the raw samples and fits of two runs, matched like for like, with a verdict each",
    headlines=("quantities", "slower", "faster", "same", "could_not_tell"),
    smoke_time="10 s", paper_time="10 s (no scale)",
    validate=validate,
    fit=None,
    plotters={"ratios": "plot_comparison"},
    compares=compared_runs,
)
