"""Engine specifications: an engine parameter (``ENGINES``) parsed once, at the boundary, into what travels down.

``ENGINES`` names local engines (``postgres,mariadb``), servers by URL
(``postgresql://u@host/db?label=x``), or both (``duckdb,postgresql://u@host/db``). It is
split and checked here, once, by :func:`parse_engines`; the runner, the pre-flight checks and
every workload's ``validate`` and ``measure`` take the :class:`EngineSpec` items it returns
and make their adapters with :meth:`EngineSpec.engine`. Whether an item is a URL is
:func:`ingestlab.conninfo.is_url`'s to say, and how a list with commas inside URLs splits is
:func:`ingestlab.conninfo.split_targets`'s; nothing else splits an engine parameter.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ingestlab.conninfo import (
    HANDED_OVER,
    NO_PASSWORD,
    PARAMETER,
    Connection,
    is_url,
    mask_url,
    split_password,
    split_targets,
    with_password_placeholder,
)
from ingestlab.errors import ConfigError

#: What an engine parameter accepts, in the words of its refusals.
ACCEPTED = "engine names or URLs, comma-separated (e.g. postgres,mariadb)"


def _registry():
    """The engine registry (names, classes, adapters): the one place this module reaches it."""
    from ingestlab import engines

    return engines


@dataclasses.dataclass(frozen=True)
class EngineSpec:
    """One item of an engine parameter, checked: a registered engine's name, or the URL of a server.

    Made by :func:`parse_engines`, never by hand. Its ``repr`` and ``str`` show the item with
    any password masked.

    Attributes
    ----------
    value : str
        The item as given, stripped: what ``run.json``'s parameters record (passwords masked
        there) and what messages name.
    name : str
        The registry name of the engine it selects (for a URL, the engine of its scheme).
    connection : Connection or None
        The URL parsed once; None for a local engine, which the lab starts itself.
    parameter : str
        The parameter it was given in, named by every error about it.

    A URL's item shows as ``EngineSpec('<scheme>://u:***@db:5432/lab?label=a')``, its ``name``
    the engine of its scheme (tests/test_engine_specs.py).
    """

    value: str
    name: str
    # compared and hashed by the value it was parsed from (its query, a dict, cannot be hashed)
    connection: Connection | None = dataclasses.field(default=None, compare=False)
    parameter: str = dataclasses.field(default=PARAMETER, compare=False)

    @property
    def shown(self) -> str:
        """The item as given, any password masked."""
        return mask_url(self.value)

    def engine_class(self) -> type:
        """The adapter class this item selects (nothing started, no server looked for)."""
        return _registry().classes()[self.name]

    def engine(self):
        """The adapter for this item: the lab's local server of :attr:`name`, or the server at :attr:`connection`.

        Raises
        ------
        EngineUnavailableError
            For a local engine whose programs this machine lacks.
        """
        if self.connection is not None:
            return _registry().from_url(self.connection, self.parameter)
        return _registry().get(self.name, self.parameter)

    def unavailable_reason(self) -> str | None:
        """Why this local engine cannot start on this machine, or None (always None for a URL)."""
        return None if self.connection is not None else self.engine_class().unavailable_reason()

    def hand_over(self, password: str | None = None) -> tuple["EngineSpec", str | None]:
        """This item as the runner gives it to a notebook, and the password it hands over privately (or None).

        A password in the URL (its user info or its query) becomes ``***``, and so does
        ``password`` (``--password-file``, ``$INGESTLAB_PASSWORD``) for a URL that gives none:
        the kernel reads it from :data:`~ingestlab.conninfo.HANDOVER_ENV`. A local engine, or
        a URL with no password to hand over, is returned as it is.

        Examples
        --------
        >>> spec, = parse_engines("mysql://u@h:3306/db?passwd=pw&label=x")
        >>> spec.hand_over()
        (EngineSpec('mysql://u:***@h:3306/db?label=x'), 'pw')
        """
        if self.connection is None:
            return self, None
        value, secret = split_password(self.value)
        if secret is None and password is not None and self.connection.password_source == NO_PASSWORD:
            value, secret = with_password_placeholder(self.value), password
        if secret is None:
            return self, None
        connection = dataclasses.replace(self.connection, password=None, password_source=HANDED_OVER)
        return dataclasses.replace(self, value=value, connection=connection), secret

    def __repr__(self) -> str:
        return f"EngineSpec({self.shown!r})"

    def __str__(self) -> str:
        return self.shown


def parse_engines(value: Any, parameter: str = PARAMETER) -> tuple[EngineSpec, ...]:
    """``value`` (a comma-separated string, a list of items, or specifications) as engine specifications.

    Each item is checked once: a name must be a registered engine's, a URL well formed, its
    scheme an engine's and its options its adapter's. Specifications already parsed are kept
    as they are. Nothing is started and no server is contacted.

    Raises
    ------
    ConfigError
        Naming ``parameter`` (URLs masked): no item, an empty list, an item given twice (two
        servers under one label would be pooled into one fit), an unknown engine, a malformed URL.

    Examples
    --------
    >>> parse_engines(",")
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: ENGINES=',' is not valid: expected a comma-separated list with at least one item (every item is empty)
    """
    items = _items(value, parameter)
    texts = [item.value if isinstance(item, EngineSpec) else item.strip() for item in items]
    twice = sorted({text for text in texts if texts.count(text) > 1})
    if twice:
        raise ConfigError(parameter, mask_url(value) if isinstance(value, str) else [mask_url(t) for t in texts],
                          f"a list naming each engine once ({', '.join(map(mask_url, twice))} is given twice)")
    return tuple(item if isinstance(item, EngineSpec) else _parse_item(item.strip(), parameter) for item in items)



#: Why a name of a notebook's default is left out where no engine is registered under it.
UNREGISTERED = "not registered here (its engine folder or package is not installed)"


def registered(value: str) -> tuple[str, dict[str, str]]:
    """The items of ``value`` that are URLs or registered engines' names, joined; each other item with why it is not.

    For a notebook's default engines, which may name engines of folders or packages not
    installed here: the runner leaves them out, saying so, as it does an engine that cannot start.

    Examples
    --------
    >>> registered("duckdb, nosuchengine, postgresql://u@h/db")
    ('duckdb,postgresql://u@h/db', {'nosuchengine': 'not registered here (its engine folder or package is not installed)'})
    """
    known = set(_registry().names())
    items = split_targets(value)
    kept = [item for item in items if is_url(item) or item in known]
    return ",".join(kept), {item: UNREGISTERED for item in items if item not in kept}

def _items(value: Any, parameter: str) -> list:
    """The items of ``value`` not yet checked one by one: strings and specifications, empty strings left out."""
    if isinstance(value, EngineSpec):
        return [value]
    if isinstance(value, str):
        items: list = split_targets(value)
        if not items and "," in value:
            raise ConfigError(parameter, value, "a comma-separated list with at least one item (every item is empty)")
    elif isinstance(value, (list, tuple)):
        items = [item for item in value if item != ""]
    else:
        items = []
    if not items or not all(isinstance(item, (str, EngineSpec)) for item in items):
        raise ConfigError(parameter, value, ACCEPTED)
    return items


def _parse_item(text: str, parameter: str) -> EngineSpec:
    """One item, a name or a URL, checked as :meth:`EngineSpec.engine` will use it."""
    registry = _registry()
    try:
        if is_url(text):  # the adapter, made and dropped, checks the scheme, the driver and the options
            engine = registry.from_url(Connection.parse(text, parameter), parameter)
            return EngineSpec(text, engine.NAME, engine.connection, parameter)
        return EngineSpec(text, registry.class_of(text, parameter).NAME, None, parameter)
    except ConfigError as exc:  # an adapter's own check names its own parameter: this item was given as `parameter`
        raise ConfigError(parameter, exc.value, exc.accepted) from None

