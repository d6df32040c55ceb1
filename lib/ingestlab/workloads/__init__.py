"""Experiment workloads: each module declares the notebook it serves, validates its parameters and measures.

The rule, the same for every notebook: ``workloads/<name>.py`` declares the notebook
(:data:`NOTEBOOK`, a :class:`Notebook`), validates its parameters (``validate``) and measures
(``measure``); ``workloads/<name>_analysis.py`` holds its statistics, sentences and plotters.
The runner, the summary, the CLI and the figure promotion find notebooks through
:func:`discover` and never name one: adding a notebook is one workload module, one notebook
and its tests.

Workload modules outside the package (a contributor's experiment, a test's toy) are found in
the folders named by ``$INGESTLAB_WORKLOADS`` (``os.pathsep``-separated); their notebook is
looked for beside the module first, then in ``notebooks/``.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import pkgutil
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from ingestlab import _paths
from ingestlab.errors import ConfigError

#: Environment variable naming extra folders of workload modules (``os.pathsep``-separated).
WORKLOADS_ENV = "INGESTLAB_WORKLOADS"
#: The parameter that names the engines a notebook measures, in every notebook that measures engines.
ENGINES = "ENGINES"


@dataclasses.dataclass(frozen=True)
class Notebook:
    """Everything the lab needs to know about one experiment notebook, declared by its workload.

    Parameters
    ----------
    stem : str
        The notebook's file name without ``.ipynb`` (``"01_insert_anatomy"``); its first two
        characters are its id (``01``).
    question : str
        The question it answers, in one line (the README's notebook table, ``ingestlab list``).
    seed : str
        The study it reproduces (a file of ``shared/seeds/``), or what it reads instead.
    validate : callable
        ``validate(**params)`` with the notebook's parameters in lower case: checks every value
        before anything starts and returns the resolved parameters (an object with ``as_dict()``).
    measures : str
        What it measures, in one line.
    engine_parameter : str or None
        The parameter naming the engines it measures (``ENGINES``), or None when it measures none.
    headlines : tuple of str
        The headline quantities its last cell records (``run.json``'s ``headline`` keys, or their
        prefixes ending in ``[``).
    figures : tuple of str
        The names of the figures it saves.
    smoke_time, paper_time : str
        How long it takes at each scale on a 2-core machine (the README's table).
    renamed : mapping
        Parameters this notebook once had under another name: old name → new name; giving the old
        one fails in one line naming the new.
    needs : tuple of str
        The capabilities (:data:`ingestlab.engines.capabilities.KINDS`) or steps every engine it
        measures must have; the runner refuses one that lacks any before a server starts.
    path : Path, optional
        The notebook file; default: ``<stem>.ipynb`` beside the declaring module if there is one,
        else in ``notebooks/``.
    """

    stem: str
    question: str
    seed: str
    validate: Callable[..., Any]
    measures: str = ""
    engine_parameter: str | None = ENGINES
    headlines: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    smoke_time: str = ""
    paper_time: str = ""
    renamed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    needs: tuple[str, ...] = ()
    path: Path | None = None

    @property
    def id(self) -> str:
        """The notebook's two-digit id (``"01"``)."""
        return self.stem[:2]

    @property
    def notebook_path(self) -> Path:
        """The ``.ipynb`` file of this notebook."""
        return Path(self.path) if self.path is not None else _paths.notebooks_dir() / f"{self.stem}.ipynb"


def _declared_in(module: Any) -> Notebook | None:
    found = getattr(module, "NOTEBOOK", None)
    if not isinstance(found, Notebook):
        return None
    if found.path is None and getattr(module, "__file__", None):
        beside = Path(module.__file__).with_name(f"{found.stem}.ipynb")
        if beside.exists():
            found = dataclasses.replace(found, path=beside)
    return found


def _package_modules() -> list[str]:
    return [m.name for m in pkgutil.iter_modules(__path__)
            if not m.name.startswith("_") and not m.name.endswith("_analysis")]


def _extra_modules() -> list[Any]:
    modules = []
    for folder in filter(None, os.environ.get(WORKLOADS_ENV, "").split(os.pathsep)):
        for path in sorted(Path(folder).glob("*.py")):
            if path.name.startswith("_") or path.stem.endswith("_analysis"):
                continue
            name = f"ingestlab_workload_{path.stem}"
            if name not in sys.modules:
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except Exception:
                    del sys.modules[name]
                    raise
            modules.append(sys.modules[name])
    return modules


def discover() -> dict[str, Notebook]:
    """Every declared notebook by stem, sorted: the package's workloads, then ``$INGESTLAB_WORKLOADS``'s.

    Examples
    --------
    >>> books = discover()
    >>> books["01_insert_anatomy"].engine_parameter, books["01_insert_anatomy"].id
    ('ENGINES', '01')
    """
    modules = [importlib.import_module(f"{__name__}.{name}") for name in _package_modules()] + _extra_modules()
    found: dict[str, Notebook] = {}
    for module in modules:
        book = _declared_in(module)
        if book is None:
            continue
        if book.stem in found or any(b.id == book.id for b in found.values()):
            raise ConfigError("NOTEBOOK", book.stem, f"one declaration per notebook id ({book.id} is declared twice)")
        found[book.stem] = book
    return dict(sorted(found.items()))


def declaration(stem: str) -> Notebook:
    """The declaration of the notebook ``stem``.

    Raises
    ------
    ConfigError
        When no workload declares it.
    """
    books = discover()
    if stem not in books:
        raise ConfigError("NOTEBOOK", stem, "a notebook that a workload declares: " + ", ".join(books))
    return books[stem]
