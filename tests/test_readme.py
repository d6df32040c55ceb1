"""The README states what the code does, on a screen: its notebooks, its links, every engine's variants (docs/)."""

from __future__ import annotations

import re
from pathlib import Path

import ingestlab.engines  # noqa: F401 - registers every adapter
from ingestlab import engines
from ingestlab.engines import capabilities

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
CLUSTERS = REPO / "docs" / "clusters.md"


def _variant_table() -> dict[str, tuple[set[str], set[str]]]:
    text = CLUSTERS.read_text(encoding="utf-8")
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
    assert set(rows) == set(engines.classes()), "an engine is missing from docs/clusters.md's variant table, or extra"
    for name, cls in engines.classes().items():
        assert rows[name] == (set(capabilities.of(cls, "commit_variants").VARIANTS), set(capabilities.of(cls, "group_commit").VARIANTS)), name


def test_the_readme_fits_on_a_screen_and_opens_with_every_notebook():
    from ingestlab.workloads import discover

    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= 15 * 1024
    first = text.splitlines()[:80]
    rows = [line for line in first if line.startswith("| `")]
    for stem in discover():
        assert any(line.startswith(f"| `{stem}` |") for line in rows), f"{stem} is not in the notebook table"


def test_every_local_link_of_the_readme_and_docs_leads_somewhere():
    for page in [README, *sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md"]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def test_every_notebook_has_promoted_findings_that_name_the_run_of_its_figures():
    from ingestlab import promotion, results
    from ingestlab.workloads import discover

    for stem in discover():
        folder = REPO / "figures" / stem
        if (folder / promotion.PENDING).exists():  # no quiet paper run promoted yet: it says why, and shows nothing
            assert not results.figure_files(folder) and not (folder / "SOURCE").exists(), stem
            assert "paper" in (folder / promotion.PENDING).read_text(encoding="utf-8"), stem
            continue
        findings = (folder / "FINDINGS.md").read_text(encoding="utf-8")
        source = (folder / "SOURCE").read_text(encoding="utf-8")
        revision = re.search(r"^Revision: (\S+)", source, re.M).group(1)
        assert f"Revision: {revision}" in findings, f"{stem}: FINDINGS.md is not from the run of its figures"
