"""The toy link engine's server: a private mariadbd on 127.0.0.1 TCP whose clients connect through Toxiproxy when asked."""

from __future__ import annotations

from ingestlab.engines.mariadb.server import MariaDBServer
from ingestlab.latency import Toxiproxy


class LinkedMariaDBServer(MariaDBServer):
    """:class:`MariaDBServer` with ``tcp=True``; with :attr:`delay` set before start, clients go through a proxy.

    The proxy (:attr:`toxiproxy`) lives in the server's folder and outlives the server's restarts
    (its port is kept); :meth:`stop` stops it first.
    """

    KIND = "toylink"

    def __init__(self, directory=None, *, keep: bool = False):
        super().__init__(directory, keep=keep, tcp=True)
        #: Route the clients' link through Toxiproxy (``LinkDelay.route()`` sets it before start).
        self.delay = False
        self.toxiproxy: Toxiproxy | None = None
        self.proxy_port: int | None = None

    def _start(self) -> None:
        super()._start()
        if self.delay and self.toxiproxy is None:
            self.toxiproxy = Toxiproxy(self.directory / "toxiproxy").start()
            self.proxy_port = self.toxiproxy.proxy("client", self.port)

    def stop(self) -> None:
        proxies, self.toxiproxy = self.toxiproxy, None
        if proxies is not None:
            proxies.stop()
        super().stop()

    def connect_kwargs(self) -> dict:
        """Over TCP to the proxy when the link is routed, else to the server's own port."""
        port = self.proxy_port if self.toxiproxy is not None else self.port
        return {"host": "127.0.0.1", "port": port, "user": "root", "password": self.password,
                "database": self.DATABASE}
