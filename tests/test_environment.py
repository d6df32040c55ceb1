"""The pins in pyproject.toml (dependencies and extras) and environment.yml must be the same list."""

import re
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_environment_yml_pins_what_pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pyproject = set(project["dependencies"]).union(*project["optional-dependencies"].values())
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda_pins = {p for p in pip if not p.startswith("-e")}
    assert conda_pins == pyproject
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", p) for p in pyproject)
