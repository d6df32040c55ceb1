"""Which Python driver an engine adapter measures through: the URL's ``+driver``, else the first that imports."""

from __future__ import annotations

import dataclasses
import importlib
import warnings
from importlib import metadata as importlib_metadata
from typing import Mapping

from ingestlab.errors import ConfigError, EngineUnavailableError

#: (engine, driver) pairs whose fallback was already warned about in this process.
_NOTED: set[tuple[str, str]] = set()


@dataclasses.dataclass(frozen=True)
class DriverChoice:
    """The driver an adapter measures through.

    Attributes
    ----------
    name : str or None
        SQLAlchemy driver name (a key of ``Engine.WIRE.drivers``), None for an engine without drivers.
    note : str or None
        Why it is not the preferred one, when the lab fell back to another.
    engine : str
        The engine's registry name (errors name it).
    drivers : Mapping
        The engine's drivers it was chosen from (``Engine.WIRE.drivers``).
    """

    name: str | None
    note: str | None = None
    engine: str = dataclasses.field(default="", repr=False)
    drivers: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def module(self):
        """The driver's module (``psycopg2``, ``MySQLdb``, ``pymysql``...), imported on first use."""
        return load(self.engine, self.drivers, self.name)

    def metadata(self) -> dict:
        """``driver`` (SQLAlchemy name), ``driver_package``, ``driver_version`` and any ``driver_note``."""
        if self.name is None:
            return {"driver": None, "driver_package": None, "driver_version": None}
        dist, version = package_version(self.drivers, self.name)
        out = {"driver": self.name, "driver_package": dist, "driver_version": version}
        if self.note:
            out["driver_note"] = self.note
        return out


def check_requested(engine: str, drivers: Mapping[str, tuple[str, str]], requested: str, where: str,
                    parameter: str = "ENGINES") -> None:
    """Fail when ``requested`` (a URL's ``+driver``) is not one of ``drivers``.

    Raises
    ------
    ConfigError
        Naming ``parameter`` and ``where`` (the URL, password masked).
    """
    if requested and requested not in drivers:
        default = next(iter(drivers), None)
        raise ConfigError(parameter, where, f"a URL whose +driver is one of {', '.join(drivers)} for {engine}, "
                                            f"or none (default: {default})")


def choose(engine: str, drivers: Mapping[str, tuple[str, str]], requested: str = "") -> DriverChoice:
    """``requested`` if given, else the first of ``drivers`` whose module imports (a fallback is warned once).

    Examples
    --------
    >>> choose("x", {"json": ("json", "stdlib")})
    DriverChoice(name='json', note=None)
    """
    if requested or not drivers:
        return DriverChoice(requested or None, None, engine, drivers)
    missing = []
    for name, (module, dist) in drivers.items():
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{dist} ({exc})")
            continue
        if not missing:
            return DriverChoice(name, None, engine, drivers)
        note = (f"{engine}: measuring through {name} ({dist}) because {', '.join(missing)} could not be imported; "
                f"per-statement times then include that driver's extra client cost (see README, MySQL drivers)")
        if (engine, name) not in _NOTED:
            _NOTED.add((engine, name))
            warnings.warn(note, stacklevel=3)
        return DriverChoice(name, note, engine, drivers)
    return DriverChoice(next(iter(drivers)), None, engine, drivers)  # none imports: load() raises with the install hint


def load(engine: str, drivers: Mapping[str, tuple[str, str]], name: str):
    """The module of driver ``name`` (``psycopg2``, ``MySQLdb``...), imported.

    Raises
    ------
    EngineUnavailableError
        With the package to install when it does not import.
    """
    module, dist = drivers[name]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EngineUnavailableError(f"{engine}: driver {name} needs the {dist} package "
                                     f"(pip install {dist}): {exc}") from exc


def package_version(drivers: Mapping[str, tuple[str, str]], name: str) -> tuple[str, str | None]:
    """``(pip distribution, its installed version or None)`` of driver ``name``."""
    dist = drivers[name][1]
    try:
        return dist, importlib_metadata.version(dist)
    except importlib_metadata.PackageNotFoundError:
        return dist, None
