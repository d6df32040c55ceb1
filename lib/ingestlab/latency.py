"""Injected network latency between a cluster's nodes: one private Toxiproxy server and its latency toxics."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import socketserver
import subprocess
import threading
from pathlib import Path
from typing import ClassVar, Sequence

import psutil
import requests

from ingestlab import _paths, timing
from ingestlab.errors import ConfigError, EngineUnavailableError, ServerError
from ingestlab.polling import poll
from ingestlab.servers.base import PID_FILE, LocalServer, _terminate

#: Environment variable naming the ``toxiproxy-server`` binary; unset: ``<repo>/.lab/bin`` (``make toxiproxy``), then PATH.
BINARY_ENV = "INGESTLAB_TOXIPROXY"
#: Where ``make toxiproxy`` puts the binary (the repository's own ``.lab``, whatever ``$INGESTLAB_LAB_DIR`` says).
BUILT_BINARY = _paths.REPO / ".lab" / "bin" / "toxiproxy-server"
#: The Toxiproxy release the lab builds and was measured with.
VERSION = "2.5.0"
#: How to get the binary, for the one line said where it is missing.
INSTALL_HINT = (f"`make toxiproxy` builds it (Go needed: go install github.com/Shopify/toxiproxy/v2/cmd/server@v{VERSION}) "
                f"into {BUILT_BINARY}, or point ${BINARY_ENV} at a toxiproxy-server")
#: The two directions of a proxied connection: client → upstream, and back. A toxic delays one of them.
STREAMS = ("upstream", "downstream")


def find_binary() -> Path:
    """The ``toxiproxy-server`` to run: ``$INGESTLAB_TOXIPROXY``, else ``make toxiproxy``'s, else on PATH.

    Raises
    ------
    EngineUnavailableError
        When none is there, saying how to build it.
    """
    given = os.environ.get(BINARY_ENV)
    if given:
        if not os.access(given, os.X_OK):
            raise EngineUnavailableError(f"${BINARY_ENV}={given} is not an executable toxiproxy-server: {INSTALL_HINT}")
        return Path(given)
    if os.access(BUILT_BINARY, os.X_OK):
        return BUILT_BINARY
    found = shutil.which("toxiproxy-server")
    if found is None:
        raise EngineUnavailableError(f"toxiproxy-server missing: {INSTALL_HINT}")
    return Path(found)


def unavailable_reason() -> str | None:
    """None when Toxiproxy can run here, else one line: what is missing and that ``make toxiproxy`` builds it."""
    try:
        find_binary()
    except EngineUnavailableError as exc:
        return str(exc)
    return None


def check_delay(one_way_ms: float, parameter: str = "DELAYS_MS") -> int:
    """``one_way_ms`` as the whole milliseconds Toxiproxy's latency toxic takes, or :class:`ConfigError`.

    The toxic's ``latency`` attribute is an integer number of milliseconds: 0.5 ms cannot be
    injected, and rounding it would label a measurement with a delay it did not have.

    Examples
    --------
    >>> check_delay(2.0), check_delay(0)
    (2, 0)
    >>> check_delay(0.5)
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: DELAYS_MS=0.5 is not valid: expected whole milliseconds >= 0 (Toxiproxy's latency toxic takes integers; 0.5 ms cannot be injected)
    """
    if isinstance(one_way_ms, bool) or not isinstance(one_way_ms, (int, float)) or not math.isfinite(one_way_ms) \
            or one_way_ms < 0 or one_way_ms != int(one_way_ms):
        raise ConfigError(parameter, one_way_ms, "whole milliseconds >= 0 (Toxiproxy's latency toxic takes integers; "
                                                 "0.5 ms cannot be injected)")
    return int(one_way_ms)


class Toxiproxy(LocalServer):
    """One private ``toxiproxy-server`` whose proxies carry a cluster's inter-node traffic, with a delay to set.

    Its folder (``directory``, normally inside the cluster server's own folder) is private (0700)
    and holds its log and ``server.pid``; the server runs as a child of this process in its own
    session, with its working directory there and a config file from there on its command line,
    so :func:`~ingestlab.servers.base.reap` finds it by the folder after a SIGKILL of the lab
    (before its pid file is written too), and :meth:`stop` also runs at exit and on SIGTERM as
    every :class:`LocalServer`'s. Its API listens on 127.0.0.1 at a port the kernel picks; each
    :meth:`proxy` listens on 127.0.0.1 at a port the kernel picks and forwards to a port of
    127.0.0.1 only. The API has no authentication (Toxiproxy has none): a local user who finds
    the port can change the delay or remove a proxy, not reach anything the lab's loopback
    ports do not already offer.

    Parameters
    ----------
    directory : path, optional
        Its private folder (log, pid file): inside the cluster server's folder; None: a folder of
        its own under the lab's directory (``toxiproxy-<pid>-<n>``).

    Examples
    --------
    >>> import socket, tempfile
    >>> if unavailable_reason() is None:  # doctest: +SKIP
    ...     with Toxiproxy(Path(tempfile.mkdtemp()) / "toxiproxy") as proxies:
    ...         port = proxies.proxy("echo", 7)
    ...         proxies.set_delay(2)
    """

    KIND = "toxiproxy"
    #: Seconds to wait for the API to answer after starting, for the process to exit on SIGTERM, and for each API call.
    START_TIMEOUT_S: ClassVar[float] = 30.0
    STOP_TIMEOUT_S: ClassVar[float] = 10.0
    API_TIMEOUT_S: ClassVar[float] = 10.0

    def __init__(self, directory: str | os.PathLike | None = None, *, keep: bool = False):
        super().__init__(directory, keep=keep)
        self.binary = find_binary()
        self.api_port: int | None = None
        #: Proxy name → (its listening port, the upstream port), in the order made.
        self.proxies: dict[str, tuple[int, int]] = {}
        #: The one-way delay in force on every proxy, both directions (ms).
        self.delay_ms = 0
        self._proc: subprocess.Popen | None = None
        self._http = requests.Session()
        self._http.trust_env = False  # never through an HTTP proxy from the environment: the API is on loopback

    # -- the process --------------------------------------------------------------------------
    @property
    def log_file(self) -> Path:
        """The server's log (its stdout and stderr)."""
        return self.directory / "toxiproxy.log"

    @property
    def config_file(self) -> Path:
        """An empty proxy list the server reads at start: on its command line, it names the folder for :func:`reap`."""
        return self.directory / "proxies.json"

    def command(self) -> list[str]:
        """The ``toxiproxy-server`` command line."""
        return [str(self.binary), "-host", "127.0.0.1", "-port", "0", "-config", str(self.config_file)]

    def _start(self) -> None:
        self.config_file.write_text("[]\n")
        self.api_port = None
        with open(self.private_file(self.log_file), "ab") as log:
            self._proc = subprocess.Popen(self.command(), cwd=self.directory, stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        (self.directory / PID_FILE).write_text(f"{self._proc.pid}\n")
        if not poll(self._answers, timeout_s=self.START_TIMEOUT_S, interval_s=0.02,
                    retry_on=(requests.RequestException, psutil.Error)) or self._proc.poll() is not None:
            raise ServerError(f"toxiproxy-server did not answer within {self.START_TIMEOUT_S:.0f} s "
                              f"(exit code {self._proc.poll()}); see its log, {self.log_file}")

    def _answers(self) -> bool:
        """Whether the API answers; its port is the one the kernel gave (``-port 0``: no race for a free port)."""
        if self._proc.poll() is not None:
            return True  # exited: stop waiting, _start says why
        if self.api_port is None:
            ports = [c.laddr.port for c in psutil.Process(self._proc.pid).net_connections("tcp")
                     if c.status == psutil.CONN_LISTEN]
            if not ports:
                return False
            self.api_port = ports[0]  # its only listener until a proxy is made
        self._http.get(self._url("/version"), timeout=1).raise_for_status()
        return True

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        # started by another object or process: only the pid file is left
        pid = self.pid() if proc is None else proc.pid if proc.poll() is None else None
        if pid is not None:
            _terminate(pid, self.STOP_TIMEOUT_S)  # SIGTERM, SIGKILL after the timeout; our child is reaped
        (self.directory / PID_FILE).unlink(missing_ok=True)
        self.proxies.clear()
        self.delay_ms = 0

    def restart(self, settings: dict[str, str]) -> None:
        """Toxiproxy has no settings: ``{}`` restarts it with the same proxies and delay; anything else is refused."""
        if settings:
            raise ServerError(f"toxiproxy-server takes no settings, got {sorted(settings)}")
        if not self.running:
            return
        proxies, delay = dict(self.proxies), self.delay_ms
        self._stop()
        self._start()
        for name, (_, upstream) in proxies.items():
            self.proxy(name, upstream)
        self.set_delay(delay)

    def connect_kwargs(self) -> dict:
        """Where its API listens: ``{"host": "127.0.0.1", "port": <api port>}``."""
        return {"host": "127.0.0.1", "port": self.api_port}

    # -- the API ------------------------------------------------------------------------------
    def _url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.api_port}{path}"

    def _call(self, method: str, path: str, body: dict | None = None) -> dict | list | None:
        if not self.running and self._proc is None:
            raise ServerError(f"toxiproxy in {self.directory} is not running: start() first")
        try:
            reply = self._http.request(method, self._url(path), data=None if body is None else json.dumps(body),
                                       timeout=self.API_TIMEOUT_S)
        except requests.RequestException as exc:
            raise ServerError(f"toxiproxy API {method} {path} failed: {exc}; log {self.log_file}") from exc
        if reply.status_code >= 400:
            raise ServerError(f"toxiproxy API {method} {path} answered {reply.status_code}: {reply.text.strip()}")
        return reply.json() if reply.content else None

    def proxy(self, name: str, upstream_port: int) -> int:
        """A listener on 127.0.0.1 at a free port forwarding to 127.0.0.1:``upstream_port``; returns its port.

        It carries the delay in force (:meth:`set_delay`) from the start.
        """
        if not name or not name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError("name", name, "a proxy name of letters, digits, '-' and '_'")
        if isinstance(upstream_port, bool) or not isinstance(upstream_port, int) or not 0 < upstream_port < 65536:
            raise ConfigError("upstream_port", upstream_port, "a TCP port from 1 to 65535")
        if name in self.proxies:
            raise ConfigError("name", name, f"a proxy name not yet used (have {sorted(self.proxies)})")
        made = self._call("POST", "/proxies", {"name": name, "listen": "127.0.0.1:0",
                                               "upstream": f"127.0.0.1:{upstream_port}", "enabled": True})
        port = int(made["listen"].rsplit(":", 1)[1])  # the port the kernel gave its listener
        self.proxies[name] = (port, upstream_port)
        self._add_toxics(name, self.delay_ms)  # 0 ms too: a delay then changes a toxic, never deletes one
        return port

    def set_delay(self, one_way_ms: float) -> None:
        """A ``latency`` toxic of ``one_way_ms`` on every proxy, on both streams (a round trip pays 2 × it), 0 included.

        Only whole milliseconds (:func:`check_delay`). A toxic once added is changed in place, never
        deleted, so 0 ms is a toxic of 0 ms and takes the same path as every delay: Toxiproxy has had
        hangs on deleting a toxic with data in flight (Shopify/toxiproxy#159, #412, #558). What this
        did and did not change in notebook 08 is in the replicated PostgreSQL engine's README.
        """
        ms = check_delay(one_way_ms)
        for name in self.proxies:
            present = {toxic["name"] for toxic in self._call("GET", f"/proxies/{name}/toxics") or []}
            if {f"latency_{stream}" for stream in STREAMS} <= present:
                for stream in STREAMS:
                    self._call("POST", f"/proxies/{name}/toxics/latency_{stream}",
                               {"attributes": {"latency": ms, "jitter": 0}})
            else:
                for toxic in present:
                    self._call("DELETE", f"/proxies/{name}/toxics/{toxic}")
                self._add_toxics(name, ms)
        self.delay_ms = ms

    def _add_toxics(self, name: str, ms: int) -> None:
        for stream in STREAMS:
            self._call("POST", f"/proxies/{name}/toxics",
                       {"name": f"latency_{stream}", "type": "latency", "stream": stream, "toxicity": 1.0,
                        "attributes": {"latency": ms, "jitter": 0}})

    def toxics(self) -> dict[str, list[dict]]:
        """The toxics in force, proxy name → Toxiproxy's own description of each (recorded with a run)."""
        return {name: self._call("GET", f"/proxies/{name}/toxics") or [] for name in self.proxies}


# -- the instrument's own round trip: a TCP echo through the proxy ----------------------------------
class _Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(4096):
            self.request.sendall(data)


class EchoServer:
    """A TCP echo server on 127.0.0.1 at a free port, in a thread of this process: one exchange is one round trip.

    What Toxiproxy's delay does to a protocol that pays exactly one round trip per exchange (the
    calibration of :func:`echo_times`). A context manager; :attr:`port` is where it listens.
    """

    def __init__(self):
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="ingestlab-echo", daemon=True)

    def __enter__(self) -> "EchoServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def echo_times(port: int, n: int) -> list[float]:
    """Seconds of each of ``n`` one-byte exchanges (write, read the echo) over one connection to 127.0.0.1:``port``.

    One exchange first, untimed, opens the path; each is timed on the lab's clock.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def exchange() -> None:
            conn.sendall(b"x")
            if conn.recv(1) != b"x":
                raise ServerError(f"the echo through 127.0.0.1:{port} did not answer")
        exchange()
        return [timing.timed(exchange).ms / 1e3 for _ in range(n)]


def calibrate(directory: str | os.PathLike | None, delays_ms: Sequence[int], *, repeats: int, n: int) -> list[dict]:
    """What one round trip through Toxiproxy costs at each delay: ``repeats`` runs of ``n`` echo exchanges each.

    A private :class:`Toxiproxy` in ``directory`` (None: its own folder under the lab's) in front of an :class:`EchoServer`; the
    repeats go round the delays in turn, as notebook 08's runs do. Returns one dict per run:
    ``delay_ms``, ``repeat``, ``time_per_statement_ms`` (the mean exchange) and
    ``latency_median_ms``: the round-trip law fitted to them gives the instrument's own ``r``,
    1 if the toxic delays by exactly ``d`` each way.
    """
    out = []
    with EchoServer() as echo, Toxiproxy(directory) as proxies:
        port = proxies.proxy("echo", echo.port)
        for repeat in range(repeats):
            for delay in delays_ms:
                proxies.set_delay(delay)
                times = sorted(echo_times(port, n))
                out.append({"delay_ms": delay, "repeat": repeat, "time_per_statement_ms": sum(times) / n * 1e3,
                            "latency_median_ms": times[n // 2] * 1e3})
    return out
