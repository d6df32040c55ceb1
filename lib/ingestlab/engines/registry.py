"""The registry of engine adapters: by name, by URL scheme, and why an engine cannot start here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ingestlab.errors import ConfigError

if TYPE_CHECKING:
    from ingestlab.engines.base import Engine


class Registry:
    """Engine adapter classes by registry name and by URL scheme.

    Adapters register themselves when their class is defined (``Engine.__init_subclass__``);
    ``Engine.get``, ``Engine.from_url`` and ``Engine.resolve`` look them up here.

    Examples
    --------
    >>> import ingestlab.engines
    >>> REGISTRY.by_scheme("mariadb").NAME, REGISTRY.by_name("postgres").__name__
    ('mariadb', 'Postgres')
    """

    def __init__(self) -> None:
        self._by_name: dict[str, type["Engine"]] = {}

    def register(self, engine_cls: type["Engine"]) -> None:
        """Add ``engine_cls`` under its ``NAME`` (a later class of the same name replaces it)."""
        self._by_name[engine_cls.NAME] = engine_cls

    def classes(self) -> dict[str, type["Engine"]]:
        """Every registered adapter class by name, sorted by name."""
        return dict(sorted(self._by_name.items()))

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return list(self.classes())

    def schemes(self) -> list[str]:
        """Every URL scheme an adapter accepts, sorted."""
        return sorted({s for c in self._by_name.values() for s in c.URL_SCHEMES})

    def by_name(self, name: str, parameter: str = "ENGINES") -> type["Engine"]:
        """The adapter class registered as ``name``.

        Raises
        ------
        ConfigError
            Naming ``parameter``, the name and the accepted names.
        """
        try:
            return self._by_name[name]
        except (KeyError, TypeError):
            raise ConfigError(parameter, name, "an engine name, one of " + ", ".join(self.names())
                              + ", or a URL such as postgresql://user@host:5432/db") from None

    def by_scheme(self, scheme: str) -> type["Engine"] | None:
        """The adapter class whose ``URL_SCHEMES`` holds ``scheme``, or None."""
        for engine_cls in self._by_name.values():
            if scheme in engine_cls.URL_SCHEMES:
                return engine_cls
        return None

    def unavailable_reason(self, name: str) -> str | None:
        """Why the engine registered as ``name`` cannot start its local server here, or None."""
        return self.by_name(name).unavailable_reason()


#: The lab's one registry.
REGISTRY = Registry()
