"""Notebook 00's workload: the studies' published tables, refitted; nothing is measured, so only its parameters."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ingestlab.errors import ConfigError
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import ParamsBase

#: The notebook this workload serves (declared in full at the end: :data:`NOTEBOOK`).
NOTEBOOK_STEM = "00_published_results"


@dataclasses.dataclass(frozen=True)
class Params(ParamsBase):
    """Validated parameters of notebook 00 (see :func:`validate`)."""

    alpha: float


def validate(alpha: Any = 0.05) -> Params:
    """Check notebook 00's parameters; return them resolved.

    Examples
    --------
    >>> validate(0.05).alpha
    0.05
    >>> validate(1.5)
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: ALPHA=1.5 is not valid: expected a number between 0 and 0.5 (0.05 gives 95 % intervals)
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) \
            or not 0 < alpha <= 0.5:
        raise ConfigError("ALPHA", alpha, "a number between 0 and 0.5 (0.05 gives 95 % intervals)")
    return Params(float(alpha))


#: Notebook 00, as the runner, the summary and the figure promotion see it.
NOTEBOOK = Notebook(
    stem=NOTEBOOK_STEM,
    question="What do the five studies' own tables say, refitted with one model and honest intervals?",
    study="all five studies (data/published/)",
    measures="nothing: every numeric table of the studies as tidy CSV, refitted",
    headlines=("overhead_ms[",),
    smoke_time="20 s", paper_time="20 s (no scale)",
    validate=validate,
    article=("starrocks_overhead_fit", "starrocks_profile_split", "doris_stream_load"),
    plotters={"starrocks_overhead_fit": "plot_overhead_fit",
              "starrocks_profile_split": "ingestlab.plots:plot_stacked",
              "starrocks_component_sweeps": "plot_component_sweeps",
              "upsert_batch_times": "ingestlab.plots:plot_sweep",
              "csv_scan_times": "plot_scan_times",
              "csv_peak_memory": "ingestlab.plots:plot_bars",
              "doris_stream_load": "plot_stream_load",
              "doris_sync_insert": "plot_sync_insert"},
)
