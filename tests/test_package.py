"""The package as a whole: every module of lib/ reads in one sitting."""

from __future__ import annotations

from pathlib import Path

import ingestlab

#: The most lines a module of lib/ may have: past it, a module holds more than one concern.
MAX_LINES = 900
LIB = Path(ingestlab.__file__).resolve().parent


def _too_long(root: Path) -> dict[str, int]:
    lengths = {str(p.relative_to(root)): len(p.read_text().splitlines()) for p in sorted(root.rglob("*.py"))}
    return {name: n for name, n in lengths.items() if n > MAX_LINES}


def test_the_check_finds_a_module_over_the_limit(tmp_path):
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert _too_long(tmp_path) == {"sub/long.py": MAX_LINES + 1}


def test_no_module_in_lib_is_over_900_lines():
    assert _too_long(LIB) == {}
