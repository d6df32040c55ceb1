"""An engine is one folder: nothing outside it names the engine, and a new one plugs in from outside the package.

The toy engine (``tests/engines/toy_sqlite/``: SQLite through the standard library, about 100
lines) is the example to copy: it is copied into a temporary folder, registered through
``$INGESTLAB_ENGINES`` and measured by notebook 01 with nothing else edited.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ingestlab import _paths, results
from ingestlab.engines import Engine, registry
from ingestlab.errors import ConfigError

LIB = Path(__file__).resolve().parents[2] / "lib" / "ingestlab"
TOY = Path(__file__).resolve().parent / "toy_sqlite"
BIN = Path(sys.executable).parent / "ingestlab"


# -- nothing outside an engine's folder names it --------------------------------------------------
def _folder(engine_cls: type[Engine]) -> Path:
    return Path(inspect.getfile(engine_cls)).parent


def _named_by(engine_cls: type[Engine]) -> set[Path]:
    """The folders that may name ``engine_cls``: its own and those of its children (by adapter or by dialect)."""
    own = {_folder(engine_cls)}
    for other in registry.classes().values():
        child_adapter = issubclass(other, engine_cls)
        child_dialect = (engine_cls.SQL is not None and other.SQL is not None and engine_cls.SQL is not Engine.SQL
                         and issubclass(other.SQL, engine_cls.SQL))
        if child_adapter or child_dialect:
            own.add(_folder(other))
    return own


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


#: Attributes whose value is the name of a library's dialect (sqlglot's, SQLAlchemy's), which may be an engine's
#: word without naming the engine: the MySQL wire protocol's family quotes and parses as SQLAlchemy's ``mysql``.
LIBRARY_NAME_ATTRIBUTES = ("SQLGLOT_DIALECT", "DRIVERNAME")


def _library_names(tree: ast.AST) -> set[int]:
    keywords = {id(node.value) for node in ast.walk(tree)  # ``Wire(sqlglot_dialect=..., drivername=...)``
                if isinstance(node, ast.keyword) and isinstance(node.value, ast.Constant)
                and (node.arg or "").upper() in LIBRARY_NAME_ATTRIBUTES}
    return keywords | {id(node.value) for node in ast.walk(tree)
                       if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant)
                       for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                       if isinstance(target, ast.Name) and target.id in LIBRARY_NAME_ATTRIBUTES}


@functools.cache
def _code(path: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str, list[str]]]]:
    """``path``'s strings that are code, not prose (line, text), and its imports (line, how, modules), read once
    for every engine's search."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = _docstrings(tree) | _library_names(tree)
    strings, imports = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            strings.append((node.lineno, node.value))
        elif isinstance(node, ast.ImportFrom) and node.module:
            imports.append((node.lineno, f"from {node.module} import …",
                            [node.module] + [f"{node.module}.{a.name}" for a in node.names]))
        elif isinstance(node, ast.Import):
            imports.append((node.lineno, "import", [a.name for a in node.names]))
    return strings, imports


def _mentions(path: Path, name: str, schemes: tuple[str, ...], package: str, root: Path = LIB.parent) -> list[str]:
    """Where code in ``path`` names an engine: its name or a scheme as a string, ``scheme://``, or its module path.

    Docstrings and comments are prose (a doctest may run an engine by name, as a user would);
    a library that shares an engine's name (``import duckdb`` for the catalogue's own SQL) is
    no mention: only strings and imports of ``ingestlab.engines.<folder>`` are.
    """
    strings, imports = _code(path)
    where = path.relative_to(root)
    found = [f"{where}:{line}: {text[:60]!r}" for line, text in strings
             if text in (name, *schemes) or any(f"{s}://" in text for s in schemes) or package in text]
    found += [f"{where}:{line}: {how if how != 'import' else 'import ' + package}" for line, how, targets in imports
              if any(t == package or t.startswith(package + ".") for t in targets)]
    return sorted(found, key=lambda hit: int(hit.split(":")[1]))


@pytest.mark.parametrize("name", registry.names())
def test_no_code_outside_an_engine_s_folder_names_it(name):
    engine_cls = registry.classes()[name]
    allowed = _named_by(engine_cls)
    package = f"ingestlab.engines.{_folder(engine_cls).name}"
    found = [hit for path in sorted(LIB.rglob("*.py")) if not any(path.is_relative_to(a) for a in allowed)
             for hit in _mentions(path, name, engine_cls.WIRE.schemes, package)]
    assert not found, f"{name} is named outside engines/{_folder(engine_cls).name}/: " + "; ".join(found)


def test_the_search_finds_what_it_looks_for(tmp_path):
    # a guard on the test itself: each kind of mention is found, prose is not
    source = tmp_path / "general.py"
    source.write_text(textwrap.dedent('''\
        """Docstring naming "postgres" is prose."""
        from ingestlab.engines.postgres import Postgres  # an import
        KIND = "postgres"
        URL = "postgresql://u@h/db"
        # a comment naming "postgres" is prose
    '''))
    found = _mentions(source, "postgres", ("postgresql",), "ingestlab.engines.postgres", root=tmp_path)
    assert [hit.split(":")[1] for hit in found] == ["2", "3", "4"], found


def test_every_engine_declares_its_identity_in_its_folder():
    styles = {name: cls.__dict__["STYLE"] for name, cls in registry.classes().items()}
    assert len({(s.colour, s.marker) for s in styles.values()}) == len(styles)
    assert styles["postgres"].title == "PostgreSQL" and styles["postgres"].colour == "#0072B2"


# -- registration ----------------------------------------------------------------------------------
def _dist_info(site: Path, lines: str) -> None:
    info = site / "toy_engines-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-engines\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[ingestlab.engines]\n" + lines)


@pytest.fixture
def fresh_registry(monkeypatch):
    """The registry read again for this test, and forgotten after it (with the toy packages it imported)."""
    def forget():
        registry._by_name.cache_clear()
        for name in [m for m in sys.modules if m.split(".")[0] in ("toy_sqlite_pkg", "ingestlab_engine_toy")]:
            del sys.modules[name]
        importlib.invalidate_caches()

    forget()
    yield monkeypatch
    forget()


def test_an_entry_point_of_another_distribution_registers_its_engine(tmp_path, fresh_registry):
    shutil.copytree(TOY, tmp_path / "site" / "toy_sqlite_pkg")
    _dist_info(tmp_path / "site", "toysqlite = toy_sqlite_pkg:ToySQLite\n")
    fresh_registry.syspath_prepend(str(tmp_path / "site"))
    assert registry.classes()["toysqlite"].__module__ == "toy_sqlite_pkg.adapter"
    assert registry.classes()["toysqlite"].STYLE.title == "Toy SQLite"
    assert "postgres" in registry.names()  # the lab's own engines come through the same group


@pytest.mark.parametrize("line, needle", [
    ("toysqlite = toy_sqlite_pkg:NoSuchClass\n", "an importable adapter class (AttributeError"),
    ("toysqlite = toy_sqlite_pkg.adapter:_value\n", "an Engine subclass"),
    ("other = toy_sqlite_pkg:ToySQLite\n", "an adapter whose NAME is 'other' (it is 'toysqlite')"),
    ("postgres = toy_sqlite_pkg.adapter:Postgres\n", "one engine per name ('postgres' is already"),
])
def test_a_broken_or_duplicate_entry_point_is_one_line(tmp_path, fresh_registry, line, needle):
    shutil.copytree(TOY, tmp_path / "site" / "toy_sqlite_pkg")
    adapter = tmp_path / "site" / "toy_sqlite_pkg" / "adapter.py"
    adapter.write_text(adapter.read_text() + "\n\nclass Postgres(ToySQLite):\n    NAME = 'postgres'\n"
                       "    STYLE = ToySQLite.STYLE\n")
    _dist_info(tmp_path / "site", line)
    fresh_registry.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(ConfigError) as err:
        registry.names()
    assert "\n" not in str(err.value) and str(err.value).startswith("ingestlab.engines=")
    assert needle in str(err.value)


def test_a_folder_of_the_environment_registers_and_a_broken_one_is_one_line(tmp_path, fresh_registry):
    shutil.copytree(TOY, tmp_path / "toy")
    fresh_registry.setenv(registry.ENGINES_ENV, str(tmp_path / "toy"))
    assert registry.get("toysqlite").STYLE.colour == "#A6761D"
    (tmp_path / "empty").mkdir()
    fresh_registry.setenv(registry.ENGINES_ENV, str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="INGESTLAB_ENGINES=.*an engine folder holding an __init__.py"):
        registry.names()


# -- the toy engine through notebook 01 ------------------------------------------------------------
def test_a_toy_engine_from_a_temporary_folder_runs_notebook_01(tmp_path, lab_tmp):
    """One real ``ingestlab run 01`` on SQLite at smoke scale (a kernel and 6 000 INSERTs: about 30 s)."""
    folder = tmp_path / "toy_sqlite"
    shutil.copytree(TOY, folder)
    out = tmp_path / "out"
    # figures in the run's folder, as a user's run puts them, and as SVG too: its colours and words are text
    env = {k: v for k, v in os.environ.items() if k != _paths.FIGURES_ENV}
    env.update({registry.ENGINES_ENV: str(folder), "INGESTLAB_LAB_DIR": str(lab_tmp),
                results.FIGURE_FORMATS_ENV: "png,svg"})
    res = subprocess.run([str(BIN), "run", "01", "-p", "ENGINES", "toysqlite", "--out", str(out), "--no-progress"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    run = out / "01_insert_anatomy"
    meta = json.loads((run / "run.json").read_text())
    assert meta["completed"] and {e["engine"] for e in meta["engines"]} == {"toysqlite"}
    # what SQLite cannot do here is left out, saying why
    assert any("toysqlite: no anatomy" in n for n in meta["notes"])
    assert any("toysqlite: no bulk scenario" in n for n in meta["notes"])
    samples = pd.read_parquet(run / "results.parquet")
    assert set(samples["engine"]) == {"toysqlite"} and set(samples["variant"]) == {"sync_full", "sync_off"}
    assert {"single_row", "batch_100", "batch_1000", "insert_select"} == set(samples["scenario"])
    fits = pd.read_csv(run / "fits.csv")
    overhead = fits[(fits["method"] == "ols") & (fits["term"] == "overhead")]
    assert len(overhead) == 2 and (overhead["estimate"] > 0).all()
    latency = (run / "figures" / "latency.svg").read_text()
    assert "Toy SQLite" in latency and "#a6761d" in latency.lower()


def test_a_source_tree_without_metadata_reads_the_package_s_folders_and_says_so_once(fresh_registry, caplog):
    import importlib.metadata

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    fresh_registry.setattr(registry.importlib.metadata, "distribution", missing)
    fresh_registry.setattr(registry.importlib.metadata, "entry_points", lambda **kw: pytest.fail("entry points read"))
    with caplog.at_level("WARNING", logger=registry.__name__):
        assert registry.names() == registry.names()
    assert {"postgres", "postgres15", "mariadb", "duckdb"} <= set(registry.names())
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "not installed" in caplog.records[0].message and len(caplog.records) == 1
