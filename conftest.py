"""Test-wide set-up: figures and results of test runs go to a scratch folder, not the repository."""

import os
import shutil
import tempfile

# set before any notebook kernel starts (nbval), which inherits this environment
_SCRATCH = tempfile.mkdtemp(prefix="ingestlab-test-")
os.environ.setdefault("INGESTLAB_FIGURES_DIR", os.path.join(_SCRATCH, "figures"))
os.environ.setdefault("INGESTLAB_RESULTS_DIR", os.path.join(_SCRATCH, "results"))
os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_unconfigure(config):
    """The scratch folder goes when its pytest process ends (each xdist worker has its own)."""
    shutil.rmtree(_SCRATCH, ignore_errors=True)
