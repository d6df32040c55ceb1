"""Notebook 07's workload: the two runs it compares; nothing is measured, so only its parameters."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from ingestlab import _paths
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
    if notebook not in (None, "") and not isinstance(notebook, str):
        raise ConfigError("NOTEBOOK", notebook, "a notebook's id or name, or \"\" for every notebook both runs have")
    if notebook:
        from ingestlab import runner

        notebook = runner.find_notebook(notebook).stem
    return Params(a, b, notebook or None, float(threshold))


#: Notebook 07, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem=NOTEBOOK_STEM,
    question="Did anything change between two runs, beyond the noise?",
    seed="none: two runs of the lab (its catalogue)",
    validate=validate,
    measures="nothing: the raw samples and fits of two runs, matched like for like, with a verdict each",
    engine_parameter=None,
    headlines=("quantities", "slower", "faster", "same", "unsure"),
    figures=("ratios",),
    smoke_time="10 s", paper_time="10 s (no scale)",
)
