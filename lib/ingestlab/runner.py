"""The batch runner: execute experiment notebooks with papermill into a run directory."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ingestlab import _paths, cgroups
from ingestlab.conninfo import PASSWORDS_ENV, parse_url, password_key, split_password
from ingestlab.errors import ConfigError
from ingestlab.servers import reap

#: Notebook parameter that receives the run's output directory.
RESULTS_PARAM = "RESULTS_DIR"


def notebooks() -> dict[str, Path]:
    """Experiment notebooks by id (``"01"`` → ``notebooks/01_insert_anatomy.ipynb``), sorted."""
    found = sorted(_paths.notebooks_dir().glob("[0-9][0-9]_*.ipynb"))
    return {p.name[:2]: p for p in found}


def find_notebook(key: str) -> Path:
    """The notebook named by ``key``: its id (``01``), its stem, or its file name."""
    books = notebooks()
    for nb_id, path in books.items():
        if key in (nb_id, path.stem, path.name):
            return path
    raise ConfigError("NOTEBOOK", key, "'all' or one of " + ", ".join(f"{k} ({p.stem})" for k, p in books.items()))


#: Each notebook's parameter validation: notebook stem → workload module of ``ingestlab.workloads``.
VALIDATORS = {"01_insert_anatomy": "insert", "02_component_sweeps": "sweeps", "03_upsert_beyond_ram": "upsert",
              "04_group_commit": "group_commit", "05_million_rows": "million",
              "06_csv_scan": "csv_scan"}


def _validators() -> dict[str, Callable[..., Any]]:
    """Each notebook's ``validate``, imported only when called (a workload imports its engines and
    statistics, which other notebooks and the CLI's other commands do not need)."""
    import importlib

    def lazy(module: str) -> Callable[..., Any]:
        def validate(**params: Any) -> Any:
            return importlib.import_module(f"ingestlab.workloads.{module}").validate(**params)
        return validate
    return {stem: lazy(module) for stem, module in VALIDATORS.items()}


def declared_parameters(path: Path) -> dict[str, dict]:
    """The notebook's ``parameters`` cell as papermill reads it: name → {name, default, inferred_type_name, help}.

    Read with :mod:`ast` from the notebook's JSON, the way ``papermill.inspect_notebook``
    reads ``NAME: type = default  # help`` lines, without importing papermill (seconds of
    imports a command that only checks its parameters does not need).
    """
    import ast

    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    source = next(("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])), "")
    lines = source.splitlines()
    out: dict[str, dict] = {}
    for node in ast.parse(source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if not isinstance(target, ast.Name) or getattr(node, "value", None) is None:
            continue
        line = lines[node.end_lineno - 1]
        comment = line[node.end_col_offset:].strip()
        out[target.id] = {
            "name": target.id, "default": ast.get_source_segment(source, node.value),
            "inferred_type_name": ast.get_source_segment(source, node.annotation) if isinstance(node, ast.AnnAssign)
            else "None", "help": comment[1:].strip() if comment.startswith("#") else ""}
    return out


def coerce(value: str) -> Any:
    """A ``-p NAME VALUE`` string as int, float, bool, None or str.

    Examples
    --------
    >>> [coerce(v) for v in ["3", "0.5", "true", "None", "postgres"]]
    [3, 0.5, True, None, 'postgres']
    """
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def check_parameters(path: Path, parameters: dict[str, Any]) -> dict[str, Any]:
    """Reject unknown names and bad values before anything runs; return the parameters.

    Values are checked by the experiment's own ``validate`` (the same call the notebook
    makes), with the notebook's defaults for what is not given.
    """
    declared = declared_parameters(path)
    for name in parameters:
        if name not in declared:
            raise ConfigError("-p", name, f"a parameter of {path.stem}: " + ", ".join(sorted(declared)))
    validate = _validators().get(path.stem)
    if validate is not None:
        values = {k: _literal(v["default"]) for k, v in declared.items()}
        values.update(parameters)
        values.pop(RESULTS_PARAM, None)
        validate(**{k.lower(): v for k, v in values.items()})
    return parameters


def _literal(text: str) -> Any:
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def hide_passwords(parameters: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Replace URL passwords by ``***``; return (parameters to inject, passwords by key)."""
    clean, secrets = {}, {}
    for name, value in parameters.items():
        if isinstance(value, str) and "://" in value:
            masked, password = split_password(value)
            if password is not None:
                secrets[password_key(parse_url(masked))] = password
            value = masked
        clean[name] = value
    return clean, secrets


def run_notebook(key: str, parameters: dict[str, Any] | None = None, out: str | os.PathLike | None = None,
                 *, progress: bool = True) -> Path:
    """Execute one notebook into ``<out>/<notebook>/`` and return that directory.

    The directory receives the executed notebook, and — through the notebook's
    ``RESULTS_DIR`` parameter — ``results.parquet``, ``run.json``, ``fits.csv`` and the
    other tables. Parameters are checked first; passwords in URLs travel to the kernel
    through an environment variable, never into the notebook. Whatever happens, servers
    the notebook left running under the lab directory are stopped afterwards.
    """
    import papermill

    path = find_notebook(key)
    parameters = check_parameters(path, dict(parameters or {}))
    out_dir = Path(out) if out else default_out()
    target = out_dir / path.stem
    target.mkdir(parents=True, exist_ok=True)
    injected, secrets = hide_passwords(parameters)
    injected[RESULTS_PARAM] = str(target.resolve())
    env_before = os.environ.get(PASSWORDS_ENV)
    if secrets:
        os.environ[PASSWORDS_ENV] = json.dumps(secrets)
    try:
        papermill.execute_notebook(str(path), str(target / path.name), parameters=injected,
                                   cwd=str(path.parent), progress_bar=progress, kernel_name="python3",
                                   stderr_file=sys.stderr if progress else None)  # the kernel's own bars
    finally:
        if env_before is None:
            os.environ.pop(PASSWORDS_ENV, None)
        else:
            os.environ[PASSWORDS_ENV] = env_before
        reap()
        cgroups.reap()  # blkio and memory groups of a kernel that was killed
    return target


def default_out() -> Path:
    """``runs/<UTC timestamp>`` in the repository."""
    return _paths.REPO / "runs" / dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def summary(out: str | os.PathLike) -> pd.DataFrame:
    """Every ``fits.csv`` under ``out`` in one table (OLS rows first)."""
    frames = [pd.read_csv(p) for p in sorted(Path(out).glob("*/fits.csv"))]
    if not frames:
        return pd.DataFrame()
    fits = pd.concat(frames, ignore_index=True)
    if "method" in fits.columns:
        fits = fits.sort_values(["notebook", "method"], kind="stable")
    return fits
