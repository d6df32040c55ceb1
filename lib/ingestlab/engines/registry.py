"""The registry of engine adapters: found through entry points and ``$INGESTLAB_ENGINES``, looked up by name or URL."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import logging
import os
import pkgutil
import sys
import threading
from pathlib import Path
from types import ModuleType

from ingestlab.conninfo import PARAMETER, Connection, is_url
from ingestlab.engines.base import Engine, EngineStyle
from ingestlab.errors import ConfigError

log = logging.getLogger(__name__)

#: The entry point group an engine registers in: name = the engine's ``NAME``, value = ``module:Class``.
ENTRY_POINT_GROUP = "ingestlab.engines"
#: Environment variable naming extra engine folders (``os.pathsep``-separated).
ENGINES_ENV = "INGESTLAB_ENGINES"
#: The distribution whose metadata lists the lab's own engines.
DISTRIBUTION = "ingestlab"


def _add(found: dict[str, type[Engine]], name: str, engine_cls: object, source: str) -> None:
    """Add ``engine_cls`` as ``name``, refusing in one line what is no adapter or a second one of a name."""
    parameter = ENGINES_ENV if source.startswith(ENGINES_ENV) else ENTRY_POINT_GROUP
    if not (isinstance(engine_cls, type) and issubclass(engine_cls, Engine)):
        raise ConfigError(parameter, source, "an Engine subclass (the adapter class of an engine folder)")
    if not isinstance(engine_cls.__dict__.get("STYLE"), EngineStyle):
        raise ConfigError(parameter, source, "an adapter declaring its own STYLE = EngineStyle(title=..., colour=..., marker=...)")
    if engine_cls.NAME != name:
        raise ConfigError(parameter, source, f"an adapter whose NAME is {name!r} (it is {engine_cls.NAME!r})")
    if name in found and found[name] is not engine_cls:
        raise ConfigError(parameter, source,
                          f"one engine per name ({name!r} is already {found[name].__module__}.{found[name].__name__})")
    found[name] = engine_cls


def _exported_adapters(package: object) -> list[type[Engine]]:
    """The adapter classes an engine folder's ``__init__`` exports: every named Engine subclass in its ``__all__``."""
    items = [getattr(package, attr, None) for attr in getattr(package, "__all__", ())]
    return [c for c in items if isinstance(c, type) and issubclass(c, Engine) and c.NAME]


def _from_entry_points(found: dict[str, type[Engine]]) -> None:
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        source = f"{point.name} = {point.value}"
        try:
            engine_cls = point.load()
        except (ImportError, AttributeError) as exc:
            raise ConfigError(ENTRY_POINT_GROUP, source, f"an importable adapter class ({type(exc).__name__}: {exc})") from None
        _add(found, point.name, engine_cls, source)


def _from_package_folders(found: dict[str, type[Engine]]) -> None:
    """Every folder of ``ingestlab/engines/`` (a source tree run without ``pip install``: no entry points)."""
    import ingestlab.engines as package

    for folder in pkgutil.iter_modules(package.__path__):
        if folder.ispkg and not folder.name.startswith("_") and folder.name != "sql":
            module = importlib.import_module(f"{package.__name__}.{folder.name}")
            for engine_cls in _exported_adapters(module):
                _add(found, engine_cls.NAME, engine_cls, f"{package.__name__}.{folder.name}")


def _load_folder(folder: Path) -> object:
    """Import the engine folder ``folder`` (a package: ``__init__.py`` and its siblings) by its location."""
    init = folder / "__init__.py"
    if not init.is_file():
        raise ConfigError(ENGINES_ENV, str(folder), "an engine folder holding an __init__.py")
    name = f"ingestlab_engine_{folder.name}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except (ImportError, SyntaxError, NameError, AttributeError, TypeError) as exc:
            del sys.modules[name]
            raise ConfigError(ENGINES_ENV, str(folder), f"an importable engine folder ({type(exc).__name__}: {exc})") from None
    return sys.modules[name]


def _from_environment(found: dict[str, type[Engine]]) -> None:
    for folder in filter(None, os.environ.get(ENGINES_ENV, "").split(os.pathsep)):
        module = _load_folder(Path(folder))
        adapters = _exported_adapters(module)
        if not adapters:
            raise ConfigError(ENGINES_ENV, folder, "an engine folder whose __init__ lists its adapter class in __all__")
        for engine_cls in adapters:
            _add(found, engine_cls.NAME, engine_cls, f"{ENGINES_ENV} {folder}")


@functools.cache
def _by_name(environment: str) -> dict[str, type[Engine]]:
    found: dict[str, type[Engine]] = {}
    try:
        importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        log.warning("the %s distribution is not installed (a source tree without pip install): "
                    "engines are read from the folders of ingestlab/engines/, not from entry points", DISTRIBUTION)
        _from_package_folders(found)
    else:
        _from_entry_points(found)
    _from_environment(found)
    return dict(sorted(found.items()))


def classes() -> dict[str, type[Engine]]:
    """Every registered adapter class by name, sorted: entry points first, then ``$INGESTLAB_ENGINES``'s folders.

    Loaded once per value of ``$INGESTLAB_ENGINES`` and kept.

    Raises
    ------
    ConfigError
        In one line, for an entry point or folder that is no adapter, or a second adapter of a name.

    Examples
    --------
    >>> all(name == cls.NAME for name, cls in classes().items())
    True
    """
    with _LOADING:  # the clients of one worker process are threads: the first to ask loads, the others wait for it
        return dict(_by_name(os.environ.get(ENGINES_ENV, "")))


#: Held while the registry is first loaded: an engine folder's module is in ``sys.modules`` before it has run, and
#: a second thread asking then got the half-made module (no ``__all__``: "an engine folder whose __init__ lists …").
_LOADING = threading.Lock()


def names() -> list[str]:
    """The registered engine names, sorted.

    Examples
    --------
    >>> names() == sorted(classes())
    True
    """
    return list(classes())


def schemes() -> list[str]:
    """Every URL scheme an adapter accepts, sorted."""
    return sorted({s for c in classes().values() for s in c.WIRE.schemes})


def versions(name: str) -> list[str]:
    """``name`` and the registered engines that are other versions of it (their ``VERSION_OF``).

    Examples
    --------
    >>> all(versions(name)[0] == name for name in names())
    True
    """
    return [name] + [n for n, c in classes().items() if c.VERSION_OF and c.VERSION_OF == name]


def modules(stem: str) -> list[ModuleType]:
    """Each registered engine folder's module ``stem`` (``profile``, ``reader``), once per folder, where it has one.

    Examples
    --------
    >>> sorted(m.__name__ for m in modules("reader"))[0]
    'ingestlab.engines.clickhouse.reader'
    """
    found = {}
    for engine_cls in classes().values():
        name = f"{engine_cls.__module__.rpartition('.')[0]}.{stem}"
        try:
            found[name] = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # the folder has the module, and something it imports is missing
                raise
    return list(found.values())


def by_name(name: str, parameter: str = PARAMETER) -> type[Engine]:
    """The adapter class registered as ``name``.

    Raises
    ------
    ConfigError
        Naming ``parameter``, the name and the accepted names.
    """
    found = classes()
    try:
        return found[name]
    except (KeyError, TypeError):
        with_url = next((c for c in found.values() if c.WIRE.schemes), None)
        raise ConfigError(parameter, name, "an engine name, one of " + ", ".join(found) + ", or a URL"
                          + (f" such as {with_url.WIRE.example_url(with_url.NAME)}" if with_url else "")) from None


def by_scheme(scheme: str) -> type[Engine] | None:
    """The adapter class whose ``WIRE.schemes`` holds ``scheme``, or None.

    Examples
    --------
    >>> all(scheme in by_scheme(scheme).WIRE.schemes for scheme in schemes()), by_scheme("no-such-scheme")
    (True, None)
    """
    for engine_cls in classes().values():
        if scheme in engine_cls.WIRE.schemes:
            return engine_cls
    return None


def get(name: str, parameter: str = PARAMETER) -> Engine:
    """The adapter registered as ``name``, with its local server when it has one (nothing starts yet).

    Raises
    ------
    ConfigError
        Naming ``parameter`` when ``name`` is no engine's name.
    """
    return by_name(name, parameter)(url=None)


def from_url(url: object, parameter: str = PARAMETER) -> Engine:
    """An adapter for the existing server at ``url`` (``scheme://user:pw@host:port/db``), parsed once.

    Raises
    ------
    ConfigError
        Naming ``parameter`` and the URL (password masked) when it is malformed or its
        scheme is no engine's.
    """
    connection = Connection.parse(url, parameter)
    engine_cls = by_scheme(connection.scheme)
    if engine_cls is None:
        raise ConfigError(parameter, connection.display(), "a URL whose scheme is one of " + ", ".join(schemes()))
    return engine_cls(url=connection)


def resolve(target: object, parameter: str = PARAMETER) -> Engine:
    """``target`` as a registry name (an engine's ``NAME``) or a URL (contains ``://``).

    Raises
    ------
    ConfigError
        Naming ``parameter`` for anything else.

    Examples
    --------
    >>> local = next(name for name, cls in classes().items() if cls.HAS_LOCAL_SERVER)
    >>> type(resolve(local)) is classes()[local]
    True
    """
    if isinstance(target, Connection):
        return from_url(target, parameter)
    if not isinstance(target, str) or not target.strip():
        raise ConfigError(parameter, target, "an engine name (" + ", ".join(names()) + ") or a URL")
    return from_url(target, parameter) if is_url(target) else get(target.strip(), parameter)


def class_of(target: object, parameter: str = PARAMETER) -> type[Engine]:
    """The adapter class ``target`` (a name or URL) selects, without finding a server."""
    if isinstance(target, str) and not is_url(target) and target.strip() in classes():
        return by_name(target.strip(), parameter)
    return type(resolve(target, parameter))
