"""Experiment workloads: each module declares the notebook it serves, validates its parameters and measures.

The rule, the same for every notebook: ``workloads/<name>.py`` declares the notebook
(:data:`NOTEBOOK`, a :class:`Notebook`), validates its parameters (``validate``) and measures
(``measure``); ``workloads/<name>_analysis.py`` holds its statistics (``fit_run``: its fits again from
a run's folder), sentences and plotters.
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
import inspect
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


#: Modules beside a workload that are no workload: its statistics and plotters, or a figure of its own
#: (matplotlib, seaborn and scipy.stats: not imported by discovery, which a refused run waits for).
HELPER_SUFFIXES = ("_analysis", "_figure")


#: The engine parameter's old names (issue K), refused by every notebook that has the parameter.
ENGINES_RENAMED: Mapping[str, str] = {"TARGET": "ENGINES", "TARGETS": "ENGINES"}


#: The most figures a notebook promotes into the article (:attr:`Notebook.article`).
MOST_ARTICLE_FIGURES = 3


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
    study : str
        The study it reproduces (a file of ``shared/seeds/``), or what it reads instead.
    validate : callable
        ``validate(**params)`` with the notebook's parameters in lower case: checks every value
        before anything starts and returns the resolved parameters (an object with ``as_dict()``).
    measures : str
        What it measures, in one line.
    engine_parameter : str or None
        The parameter naming the engines it measures (``ENGINES``), or None when it measures none;
        None also when ``validate`` takes no ``engines`` (a notebook without engines needs not say so).
    headlines : tuple of str
        The headline quantities its last cell records (``run.json``'s ``headline`` keys, or their
        prefixes ending in ``[``).
    figures : tuple of str
        The names of the figures it saves; default: :attr:`plotters`' names, in their order.
    article : tuple of str
        The figures ``ingestlab figures`` promotes into the article: at most
        :data:`MOST_ARTICLE_FIGURES`, each with one message (its caption's first sentence); the
        others stay in the run's folder and its HTML as diagnostics. Default: the first
        :data:`MOST_ARTICLE_FIGURES` of :attr:`figures`.
    smoke_time, paper_time : str
        How long it takes at each scale on a 2-core machine (the README's table).
    renamed : mapping
        Parameters this notebook once had under another name: old name → new name; giving the old
        one fails in one line naming the new. A notebook whose ``engine_parameter`` is ``ENGINES``
        also refuses :data:`ENGINES_RENAMED`, without declaring them.
    needs : tuple of str
        The capabilities (:data:`ingestlab.engines.capabilities.KINDS`) or steps every engine it
        measures must have; the runner refuses one that lacks any before a server starts.
    path : Path, optional
        The notebook file; default: ``<stem>.ipynb`` beside the declaring module if there is one,
        else in ``notebooks/``.
    measure : callable or None
        ``measure(params, run, …)``: runs the notebook's measurements with the resolved parameters
        into ``run`` and returns its tables by name; None when it measures nothing.
    fit : callable, str or None
        ``fit(folder)``: the notebook's fits in the lab's long form (:func:`ingestlab.models.tidy`
        rows, as its ``fits.csv`` holds them), computed again from the tables its run saved in
        ``folder`` (``bench/refit.py``); None when the notebook writes no ``fits.csv``. A string names
        the function as :attr:`plotters`' values do; default: ``fit_run`` of the notebook's analysis
        module when there is one (None when there is none).
    plotters : mapping
        Each figure's name (of ``figures``) → the plotter that draws it from the notebook's results:
        a function, or its name, ``"name"`` in the notebook's analysis module
        (``<workload module>_analysis``) or ``"module:name"`` elsewhere, imported when first called
        (:func:`later`), so that discovery stays light.
    compares : callable or None
        ``compares(params)``: the runs whose data the notebook draws without measuring, each a
        subset of that run's ``run.json`` with its ``role`` and ``folder``; its run records them
        (:meth:`ingestlab.results.Run.record_compared`), the captions and ``SOURCE`` name them, and
        the figure promotion refuses a run that names none and holds each to the rules a measuring
        run is held to. None: it draws only what it measured.
    """

    stem: str
    question: str
    study: str
    validate: Callable[..., Any]
    measures: str = ""
    engine_parameter: str | None = ENGINES
    headlines: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    article: tuple[str, ...] = ()
    smoke_time: str = ""
    paper_time: str = ""
    renamed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    needs: tuple[str, ...] = ()
    path: Path | None = None
    measure: Callable[..., Any] | None = None
    fit: Callable[[Path], Any] | str | None = "fit_run"
    plotters: Mapping[str, Callable[..., Any] | str] = dataclasses.field(default_factory=dict)
    compares: Callable[[Any], list[dict]] | None = None

    def __post_init__(self) -> None:
        analysis = f"{self.validate.__module__}_analysis"

        def resolved(target: Any) -> Any:
            return later(target if ":" in target else f"{analysis}:{target}") if isinstance(target, str) else target

        if self.fit == "fit_run" and importlib.util.find_spec(analysis) is None:
            object.__setattr__(self, "fit", None)  # the default, and no analysis module to hold it
        object.__setattr__(self, "fit", resolved(self.fit))
        object.__setattr__(self, "plotters", {name: resolved(p) for name, p in self.plotters.items()})
        object.__setattr__(self, "figures", tuple(self.figures or self.plotters))
        object.__setattr__(self, "article", tuple(self.article or self.figures[:MOST_ARTICLE_FIGURES]))
        unknown = [name for name in self.article if name not in self.figures]
        if unknown or len(self.article) > MOST_ARTICLE_FIGURES:
            raise ValueError(f"{self.stem}: article={self.article!r}: at most {MOST_ARTICLE_FIGURES} of its figures "
                             f"{self.figures!r}" + (f" ({', '.join(unknown)} is none of them)" if unknown else ""))
        if self.engine_parameter is not None and not _takes(self.validate, self.engine_parameter.lower()):
            object.__setattr__(self, "engine_parameter", None)  # validate takes no engines: the notebook has none
        if self.engine_parameter == ENGINES:
            # The old engine parameter names are refused by every notebook that has the parameter.
            object.__setattr__(self, "renamed", {**ENGINES_RENAMED, **self.renamed})

    @property
    def id(self) -> str:
        """The notebook's two-digit id (``"01"``)."""
        return self.stem[:2]

    @property
    def notebook_path(self) -> Path:
        """The ``.ipynb`` file of this notebook."""
        return Path(self.path) if self.path is not None else _paths.notebooks_dir() / f"{self.stem}.ipynb"


def _takes(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` takes a parameter ``name`` (any name, when it takes ``**kwargs``)."""
    parameters = inspect.signature(function).parameters
    return name in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def later(target: str) -> Callable[..., Any]:
    """The function ``"module:name"``, imported when it is first called: a declaration names its analysis' functions.

    Discovery stays light: a workload declares its fit and plotters without importing its
    analysis (and the plotting libraries) until one is called.

    Examples
    --------
    >>> tidy = later("ingestlab.models:tidy")
    >>> tidy.__name__, tidy.__qualname__
    ('tidy', 'ingestlab.models:tidy')
    >>> later("ingestlab.models")
    Traceback (most recent call last):
    ...
    ValueError: later('ingestlab.models'): expected "module:name"
    """
    module, sep, name = target.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"later({target!r}): expected \"module:name\"")

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__, call.__qualname__, call.__module__ = name, target, module
    call.__doc__ = f"Calls {target} (imported on the first call)."
    return call


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
            if not m.name.startswith("_") and not m.name.endswith(HELPER_SUFFIXES)]


def _extra_modules() -> list[Any]:
    modules = []
    for folder in filter(None, os.environ.get(WORKLOADS_ENV, "").split(os.pathsep)):
        for path in sorted(Path(folder).glob("*.py")):
            if path.name.startswith("_") or path.stem.endswith(HELPER_SUFFIXES):
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
