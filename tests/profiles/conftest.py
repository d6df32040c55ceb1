"""Locate the real-output corpus and parametrise parser tests over its files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ingestlab.profiles._text import blank_fixture_header

#: ``<repo>/../shared/fixtures/real-output``; INGESTLAB_REAL_OUTPUT overrides it.
CORPUS = Path(
    os.environ.get("INGESTLAB_REAL_OUTPUT")
    or Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "real-output"
)
MISSING_REASON = f"real-output corpus not found at {CORPUS}; corpus tests skipped"


def corpus_files(*categories: str) -> list[Path]:
    """Every ``.txt`` sample of the given categories (all categories when none given)."""
    if not CORPUS.is_dir():
        return []
    dirs = [CORPUS / c for c in categories] if categories else [p for p in CORPUS.iterdir() if p.is_dir()]
    return sorted(p for d in dirs if d.is_dir() for p in d.glob("*.txt"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Give every test that asks for ``real_file`` one run per sample of its module's CATEGORIES."""
    if "real_file" not in metafunc.fixturenames:
        return
    categories = getattr(metafunc.module, "CATEGORIES", ())
    files = corpus_files(*categories)
    if files:
        metafunc.parametrize("real_file", files, ids=[f"{p.parent.name}/{p.name}" for p in files])
    else:
        metafunc.parametrize("real_file", [pytest.param(None, marks=pytest.mark.skip(reason=MISSING_REASON))])


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say so when the corpus tests were skipped, even under ``-q``."""
    if not CORPUS.is_dir():
        terminalreporter.write_line(MISSING_REASON, yellow=True)


@pytest.fixture
def sample():
    """Return the verbatim body of a corpus file given as ``category/name.txt``.

    Metadata lines are blanked, so line numbers are the file's; skips when the corpus is absent.
    """

    def read(relative: str) -> str:
        path = CORPUS / relative
        if not path.is_file():
            pytest.skip(MISSING_REASON if not CORPUS.is_dir() else f"sample {relative} not in the corpus")
        return blank_fixture_header(path.read_text(encoding="utf-8"))

    return read


@pytest.fixture
def body_of():
    """Return the body text of a ``real_file`` path (metadata blanked)."""

    def read(path: Path) -> str:
        return blank_fixture_header(path.read_text(encoding="utf-8"))

    return read
