"""Notebooks are thin: stored without outputs, parametrised, no functions or classes."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_clean_and_thin(path):
    cells = json.loads(path.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert not any(c.get("outputs") or c.get("execution_count") for c in code), "strip outputs (nbstripout)"
    params = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
    assert len(params) == 1, "exactly one cell tagged 'parameters'"
    for line in "".join(params[0]["source"]).splitlines():
        if line.strip():
            assert re.match(r"^[A-Z][A-Z0-9_]*: [^=]+ = .+  # .+", line), f"parameter without type or comment: {line}"
            assert line.count("=") == 1, f"papermill skips a parameter line with a second '=': {line}"
    source = "\n".join("".join(c["source"]) for c in code)
    assert not re.search(r"^\s*(def|class)\s", source, re.M)
    assert "savefig" not in source, "figures go through figures.save"
