"""The examples in the profiles package's docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ingestlab.profiles",
    "ingestlab.profiles._anatomy",
    "ingestlab.profiles._frame",
    "ingestlab.profiles._relaxed_json",
    "ingestlab.profiles._text",
    "ingestlab.profiles._units",
    "ingestlab.profiles._values",
    "ingestlab.engines.duckdb.profile",
    "ingestlab.engines.mysql.profile",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
