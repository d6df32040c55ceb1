"""The README states what the code does: the variant names of every engine."""

from __future__ import annotations

import re
from pathlib import Path

import ingestlab.engines  # noqa: F401 - registers every adapter
from ingestlab.engines import Engine

README = Path(__file__).resolve().parents[1] / "README.md"


def _variant_table() -> dict[str, tuple[set[str], set[str]]]:
    text = README.read_text(encoding="utf-8")
    after = text[text.index("**Variant names per engine**"):].splitlines()
    start = next(i for i, line in enumerate(after) if line.startswith("|---"))
    rows = {}
    for line in after[start + 1:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`([a-z0-9_]+)`", cells[0]):
            rows[name] = tuple(set(re.findall(r"`([a-z0-9_]+)`", cell)) for cell in cells[1:3])
    return rows


def test_the_readme_lists_every_engines_variants_exactly():
    rows = _variant_table()
    assert set(rows) == set(Engine.classes()), "an engine is missing from the README's variant table, or extra"
    for name, cls in Engine.classes().items():
        assert rows[name] == (set(cls.COMMIT_VARIANTS), set(cls.GROUP_COMMIT_VARIANTS)), name
