"""A notebook is one object: its workload declares it, and the runner, summary and CLI find it."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ingestlab import runner, workloads
from ingestlab.errors import ConfigError

BIN = Path(sys.executable).parent / "ingestlab"
LIB = Path(workloads.__file__).resolve().parents[1]

TOY_WORKLOAD = '''
"""A toy experiment: its "measurement" is a line with a known slope, so its fit is known."""
import dataclasses
import pandas as pd
from ingestlab import models
from ingestlab.errors import ConfigError
from ingestlab.workloads import Notebook
from ingestlab.workloads._params import ParamsBase, positive_int


@dataclasses.dataclass(frozen=True)
class Params(ParamsBase):
    repeats: int
    slope_ms: float


def validate(repeats=3, slope_ms=2.0, results_dir=None):
    if not isinstance(slope_ms, (int, float)) or slope_ms <= 0:
        raise ConfigError("SLOPE_MS", slope_ms, "a number of milliseconds > 0")
    return Params(positive_int("REPEATS", repeats), float(slope_ms))


def measure(params):
    rows = [{"engine": "toy", "variant": "v", "n_statements": n, "total_s": 0.01 + n * params.slope_ms / 1e3
             + 1e-6 * (r - 1), "repeat": r} for n in (1, 10, 100) for r in range(params.repeats)]
    return pd.DataFrame(rows)


def tidy_fits(totals):
    return models.tidy(models.fit_overhead(totals, robust=False), model="overhead", terms=models.OVERHEAD_TERMS)


def fit_run(folder):
    return tidy_fits(pd.read_parquet(f"{folder}/results.parquet"))


NOTEBOOK = Notebook(stem="90_toy", question="Does the lab find a notebook it was never told about?",
                    study="none", validate=validate, engine_parameter=None, headlines=("overhead_ms",),
                    fit=fit_run)
'''

TOY_CELLS = [
    ("from ingestlab.results import Run\nimport toy", []),
    ('REPEATS: int = 3  # repeats of every statement count\nSLOPE_MS: float = 2.0  # the known overhead\n'
     'RESULTS_DIR: str = ""  # where results go', ["parameters"]),
    ("params = toy.validate(repeats=REPEATS, slope_ms=SLOPE_MS)\n"
     "run = Run(toy.NOTEBOOK, params.as_dict(), RESULTS_DIR or None)\n"
     "totals = toy.measure(params)\n"
     "run.append(totals)\n"
     "fits = toy.tidy_fits(totals)\n"
     "run.finish(fits=fits, headline={'overhead_ms': float(fits['estimate'].iloc[0])})", []),
]


def _write_toy(folder: Path) -> None:
    (folder / "toy.py").write_text(textwrap.dedent(TOY_WORKLOAD))
    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {"tags": tags},
              "outputs": [], "source": src} for i, (src, tags) in enumerate(TOY_CELLS)]
    notebook = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    (folder / "90_toy.ipynb").write_text(json.dumps(notebook))


def test_every_notebook_in_notebooks_is_declared_by_one_workload():
    declared = {b.notebook_path.resolve() for b in workloads.discover().values()}
    on_disk = {p.resolve() for p in (LIB.parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert on_disk <= declared


def test_a_notebook_that_measures_engines_refuses_the_old_names_of_its_engine_parameter_undeclared():
    def validate(**_):
        return None

    book = workloads.Notebook(stem="91_toy", question="q", study="none", validate=validate, renamed={"RUNS": "REPEATS"})
    assert book.renamed == {"TARGET": "ENGINES", "TARGETS": "ENGINES", "RUNS": "REPEATS"}
    none = workloads.Notebook(stem="92_toy", question="q", study="none", validate=validate, engine_parameter=None,
                              renamed={"ENGINES": "READERS"})
    assert none.renamed == {"ENGINES": "READERS"}


def test_every_notebook_that_measures_engines_calls_the_parameter_engines():
    for book in workloads.discover().values():
        declared = runner.declared_parameters(book.notebook_path)
        assert book.engine_parameter in (None, "ENGINES")
        if book.engine_parameter:
            assert "ENGINES" in declared, book.stem
        assert not {"TARGET", "TARGETS", "RUNS", "ROUNDS"} & set(declared), book.stem
        assert set(book.renamed) .isdisjoint(declared), book.stem


#: The general modules: they find notebooks through their declarations and never name one.
GENERAL = ("cli", "promotion", "report", "results", "runner", "summary", "catalog", "findings")


def _named_notebooks(path: Path) -> list[str]:
    """Where a module names a notebook: a stem, a workload module, an id as a value, or "notebook 07"-style prose."""
    books = workloads.discover().values()
    modules = workloads._package_modules()
    words = modules + [m + "_analysis" for m in modules]
    text = path.read_text()
    found = [w for w in {b.stem for b in books} if w in text]
    found += [f"workloads.{w}" for w in words if re.search(rf"workloads(?: import|\.)\s*{w}\b", text)]
    prose = re.compile(r"(?:notebook|notebooks) 0[0-7]\b|\b0[0-7]'s\b|\(0[0-7]\)|\b0[0-7] (?:has|is|draws)\b")
    found += [m.group(0) for m in prose.finditer(text)]
    tree = ast.parse(text)
    found += [repr(n.value) for n in ast.walk(tree)
              if isinstance(n, ast.Constant) and isinstance(n.value, str) and re.fullmatch(r"0[0-7]", n.value)]
    return found


def test_no_general_module_names_a_notebook():
    for module in GENERAL:
        found = _named_notebooks(LIB / f"{module}.py")
        if module == "cli":  # `ingestlab compare` is the comparing notebook's analysis on the command line
            found.remove("workloads.compare_runs_analysis")
        assert found == [], module
    stems = [b.stem for b in workloads.discover().values()]
    assert not [s for s in stems if s in (LIB / "figures.py").read_text()]


def test_the_check_finds_a_notebook_named_in_a_general_module(tmp_path):
    for line in ('from ingestlab.workloads import compare_runs\n', 'NOTEBOOK = "07_compare_runs"\n',
                 'if notebook == "07":\n    pass\n', '# notebook 07 writes no fits\n', 'X = 1  # as 07 draws\n'):
        (tmp_path / "general.py").write_text(line)
        assert _named_notebooks(tmp_path / "general.py"), line


def test_every_figure_a_notebook_declares_has_its_plotter_and_each_plotter_exists():
    for book in workloads.discover().values():
        assert set(book.plotters) == set(book.figures), book.stem
        for name, plotter in book.plotters.items():
            module, _, function = plotter.__qualname__.partition(":")
            assert callable(getattr(importlib.import_module(module), function)), (book.stem, name)


def test_a_notebook_that_measures_declares_its_measure_and_its_fit():
    for book in workloads.discover().values():
        if book.engine_parameter:
            assert callable(book.measure) and callable(book.fit), book.stem


def test_a_toy_workload_from_a_temporary_folder_runs_and_is_summarised(tmp_path, monkeypatch):
    """One real ``ingestlab run`` of a toy notebook (a kernel start: about 5 s)."""
    folder = tmp_path / "toy"
    folder.mkdir()
    _write_toy(folder)
    env = {**os.environ, workloads.WORKLOADS_ENV: str(folder),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}
    out = tmp_path / "out"
    listed = subprocess.run([str(BIN), "list"], capture_output=True, text=True, env=env, timeout=60)
    assert "90  90_toy" in listed.stdout, listed.stderr
    bad = subprocess.run([str(BIN), "run", "90", "-p", "SLOPE_MS", "-1", "--out", str(out)], capture_output=True,
                         text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "SLOPE_MS=-1" in bad.stderr and not out.exists()
    res = subprocess.run([str(BIN), "run", "90", "-p", "SLOPE_MS", "3.5", "--out", str(out), "--no-progress",
                          "--summary"], capture_output=True, text=True, env=env, timeout=180)
    assert res.returncode == 0, res.stderr
    assert "== 90_toy fits" in res.stdout and "-- overhead: overhead (ms per statement)" in res.stdout
    fits = (out / "90_toy" / "fits.csv").read_text().splitlines()
    assert fits[0].startswith("notebook,engine,variant,model,method,term,estimate")
    assert fits[1].startswith("90_toy,toy,v,overhead,ols,overhead,3.5")
    summary = subprocess.run([str(BIN), "summary", str(out)], capture_output=True, text=True, env=env, timeout=60)
    assert summary.returncode == 0 and "overhead_ms = 3.5" in summary.stdout

    def refit() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(LIB.parents[1] / "bench" / "refit.py"), str(out)],
                              capture_output=True, text=True, env=env, timeout=60)

    said = refit()
    assert said.returncode == 0, said.stderr
    assert said.stdout == "90_toy: 2 terms refitted, identical to the stored fits\n"
    # the terms are a set (rows in another order are the same fit); the last bits of a sum may move, no more
    stored = pd.read_csv(out / "90_toy" / "fits.csv")
    for change, code, words in ((lambda f: f.iloc[::-1].assign(estimate=f["estimate"] * (1 + 1e-14)), 0,
                                 "equal within 1e-12"),
                                (lambda f: f.assign(estimate=f["estimate"] * (1 + 1e-6)), 1, "DIFFERENT")):
        change(stored).to_csv(out / "90_toy" / "fits.csv", index=False)
        said = refit()
        assert said.returncode == code and words in said.stdout, (words, said.stdout, said.stderr)


def test_a_second_declaration_of_one_notebook_id_is_refused(tmp_path, monkeypatch):
    _write_toy(tmp_path)
    (tmp_path / "toy2.py").write_text(textwrap.dedent(TOY_WORKLOAD).replace('stem="90_toy"', 'stem="90_other"'))
    monkeypatch.setenv(workloads.WORKLOADS_ENV, str(tmp_path))
    for name in ("ingestlab_workload_toy", "ingestlab_workload_toy2"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ConfigError, match="declared twice"):
        workloads.discover()


def test_discovery_imports_no_statistics_or_plotting_library():
    # a refused run, `ingestlab list` and every run's runner find the notebooks first: 2.5 s a command with these
    heavy = ("matplotlib", "seaborn", "statsmodels", "scipy.stats")
    code = f"import sys; from ingestlab import workloads; workloads.discover(); print([m for m in {heavy!r} if m in sys.modules])"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]", res.stdout
