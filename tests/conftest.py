"""Fixtures shared by the tests."""

import shutil
import uuid

import pytest

from ingestlab import _paths


@pytest.fixture
def lab_tmp():
    """A scratch folder inside the lab directory, removed afterwards.

    Local servers run as another OS user when the tests run as root; pytest's own
    ``tmp_path`` lives under a folder only root may enter, so servers get a folder here.
    """
    path = _paths.lab_dir() / f"test-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)
