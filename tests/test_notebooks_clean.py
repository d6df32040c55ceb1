"""Notebooks are thin: stored without outputs, parametrised, no logic and no long cells."""

import ast
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

#: Code-cell constructs that belong in the package: loops, conditionals, definitions and the
#: comprehensions and lambdas that build sentences or tables row by row.
FORBIDDEN = {
    ast.For: "for loop", ast.AsyncFor: "for loop", ast.While: "while loop", ast.If: "if statement",
    ast.IfExp: "conditional expression", ast.FunctionDef: "def", ast.AsyncFunctionDef: "def",
    ast.ClassDef: "class", ast.Lambda: "lambda", ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension", ast.GeneratorExp: "generator expression",
}
#: Longest code cell, in lines.
MAX_LINES = 12


def code_cells(path: Path) -> dict[int, dict]:
    # by their position among all the notebook's cells, as Jupyter counts them from 0
    return {i: c for i, c in enumerate(json.loads(path.read_text())["cells"]) if c["cell_type"] == "code"}


def cell_source(cell: dict) -> str:
    return "".join(cell["source"]).rstrip("\n")


def parse_cell(source: str) -> ast.Module:
    # IPython magics and shell escapes are not Python; blank them, keeping the line numbers
    return ast.parse(re.sub(r"^\s*[%!].*$", "", source, flags=re.M))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_clean_and_parametrised(path):
    code = list(code_cells(path).values())
    assert not any(c.get("outputs") or c.get("execution_count") for c in code), "strip outputs (nbstripout)"
    params = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
    assert len(params) == 1, "exactly one cell tagged 'parameters'"
    for line in "".join(params[0]["source"]).splitlines():
        if line.strip():
            assert re.match(r"^[A-Z][A-Z0-9_]*: [^=]+ = .+  # .+", line), f"parameter without type or comment: {line}"
            assert line.count("=") == 1, f"papermill skips a parameter line with a second '=': {line}"
    assert "savefig" not in "\n".join(map(cell_source, code)), "figures go through figures.save"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_cells_hold_no_logic(path):
    found = [f"cell {i}, line {node.lineno}: {name}"
             for i, cell in code_cells(path).items()
             for node in ast.walk(parse_cell(cell_source(cell)))
             for kind, name in FORBIDDEN.items() if isinstance(node, kind)]
    assert not found, "move into lib/ingestlab (a describe_* or plot_* function): " + "; ".join(found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_cells_are_short(path):
    long = [f"cell {i}: {n} lines" for i, cell in code_cells(path).items()
            if (n := len(cell_source(cell).splitlines())) > MAX_LINES]
    assert not long, f"code cells of at most {MAX_LINES} lines: " + "; ".join(long)


@pytest.mark.parametrize("source, expected", [
    ("for x in y:\n    pass", "for loop"),
    ("x = 1 if y else 2", "conditional expression"),
    ("text = ', '.join(f'{v}' for v in values)", "generator expression"),
    ("f = lambda v: v", "lambda"),
    ("class A:\n    pass", "class"),
])
def test_the_logic_check_finds_each_forbidden_construct(source, expected):
    names = {FORBIDDEN[type(node)] for node in ast.walk(parse_cell(source)) if type(node) in FORBIDDEN}
    assert names == {expected}


def test_the_logic_check_reads_cells_with_magics():
    assert not any(type(node) in FORBIDDEN for node in ast.walk(parse_cell("%matplotlib inline\nx = 1")))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_opens_unmodified_on_the_project_s_kernel(path):
    # JupyterLab marks a notebook modified when the kernel's metadata differs from the file's: the
    # committed kernelspec is the one the Makefile registers for the venv, and language_info is what
    # that kernel (this venv's ipykernel and Python) writes
    from ipykernel.ipkernel import IPythonKernel

    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    registered = re.search(r'ipykernel install --sys-prefix --name (\S+) --display-name "([^"]+)"', makefile)
    meta = json.loads(path.read_text())["metadata"]
    assert meta["kernelspec"] == {"name": registered[1], "display_name": registered[2], "language": "python"}
    assert meta["language_info"] == json.loads(json.dumps(IPythonKernel.language_info))
