"""Test-wide set-up: figures and results of test runs go to a scratch folder, not the repository."""

import os
import shutil
import tempfile

# set before any notebook kernel starts (nbval), which inherits this environment. Each pytest process has its
# own folder: xdist's workers inherit the controller's environment, and with the controller's folder kept, two
# workers wrote one notebook's figure at once (nbval's 01 read a half-written anatomy.png, CI of 2026-11-29).
# A folder the user set stays.
_SCRATCH = tempfile.mkdtemp(prefix="ingestlab-test-")
_PARENTS = "_INGESTLAB_TEST_SCRATCH"  # the folder of the pytest process that started this one, if any
for _name, _sub in (("INGESTLAB_FIGURES_DIR", "figures"), ("INGESTLAB_RESULTS_DIR", "results")):
    _value, _parent = os.environ.get(_name), os.environ.get(_PARENTS)
    if _value is None or (_parent and _value.startswith(_parent + os.sep)):
        os.environ[_name] = os.path.join(_SCRATCH, _sub)
os.environ[_PARENTS] = _SCRATCH
os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_unconfigure(config):
    """The scratch folder goes when its pytest process ends."""
    shutil.rmtree(_SCRATCH, ignore_errors=True)
