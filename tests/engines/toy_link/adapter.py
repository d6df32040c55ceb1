"""The toy link engine: the lab's MariaDB whose one network link, the client's, can carry an injected delay."""

from __future__ import annotations

from typing import Any, ClassVar

from ingestlab.engines.base import EngineStyle
from ingestlab.engines.capabilities import LinkDelay
from ingestlab.engines.mariadb import MariaDB
from ingestlab.servers.base import LocalServer


class ToyLinkDelay(LinkDelay):
    """The delay on the client's link: every autocommit INSERT pays one round trip over it (r = 1)."""


class ToyLink(MariaDB):
    """MariaDB reached over 127.0.0.1 TCP, through Toxiproxy when asked: a statement's one round trip is the link."""

    NAME = "toylink"
    STYLE = EngineStyle(title="Toy link", colour="#7570B3", marker="v")
    # the variants it inherits restart the server (the proxy outlives a restart); one is enough for a toy
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        **{k: v for k, v in MariaDB.CAPABILITIES.items() if k not in ("commit_variants", "group_commit")},
        "link_delay": ToyLinkDelay,
    }

    def _make_server(self) -> LocalServer:
        from .server import LinkedMariaDBServer

        return LinkedMariaDBServer()
