"""A real toxiproxy-server in front of a real TCP echo server: the delay it injects, its stops, its reaping."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import textwrap

import psutil
import pytest

from ingestlab import latency
from ingestlab.errors import ConfigError, EngineUnavailableError
from ingestlab.latency import Toxiproxy
from ingestlab.servers import reap
from ingestlab.servers.base import is_running, processes_using
from tests.servers.local_server import LocalServerContract

needs_toxiproxy = pytest.mark.skipif(latency.unavailable_reason() is not None,
                                     reason=latency.unavailable_reason() or "")


@pytest.fixture
def echo_port():
    """A TCP echo server on 127.0.0.1, its port."""
    with latency.EchoServer() as echo:
        yield echo.port


def _round_trip_ms(port: int, n: int = 15) -> float:
    """Median time of a one-byte exchange with the echo over one connection to ``port``."""
    return statistics.median(latency.echo_times(port, n)) * 1e3


@needs_toxiproxy
def test_a_round_trip_through_the_proxy_grows_by_twice_the_one_way_delay(lab_tmp, echo_port):
    with Toxiproxy(lab_tmp / "toxiproxy-1") as proxies:
        port = proxies.proxy("echo", echo_port)
        assert port != echo_port
        base = _round_trip_ms(port)
        proxies.set_delay(5)
        delayed = _round_trip_ms(port)
        toxics = proxies.toxics()["echo"]
        proxies.set_delay(0)
        back = _round_trip_ms(port)
        kept = proxies.toxics()["echo"]
    assert sorted(t["stream"] for t in toxics) == ["downstream", "upstream"]
    # changed in place, never deleted (08's stalls came right after a deletion): the same toxics at 0 ms
    assert sorted(t["name"] for t in kept) == sorted(t["name"] for t in toxics)
    assert {t["attributes"]["latency"] for t in kept} == {0}
    assert all(t["attributes"]["latency"] == 5 for t in toxics)
    # 2 × 5 ms: the toxic sleeps at least its delay; the scheduler of a busy 2-core machine may add a little
    assert 9.5 <= delayed - base <= 14, (base, delayed)
    assert back < base + 3, (base, back)


@needs_toxiproxy
def test_a_proxy_made_after_the_delay_carries_it_too(lab_tmp, echo_port):
    with Toxiproxy(lab_tmp / "toxiproxy-1") as proxies:
        proxies.set_delay(3)
        port = proxies.proxy("late", echo_port)
        assert _round_trip_ms(port, n=5) >= 5.5


@needs_toxiproxy
def test_it_listens_on_loopback_only(lab_tmp, echo_port):
    with Toxiproxy(lab_tmp / "toxiproxy-1") as proxies:
        port = proxies.proxy("echo", echo_port)
        listening = {(c.laddr.ip, c.laddr.port) for c in psutil.Process(proxies.pid()).net_connections("tcp")
                     if c.status == psutil.CONN_LISTEN}
        assert listening == {("127.0.0.1", proxies.api_port), ("127.0.0.1", port)}
        assert oct(proxies.directory.stat().st_mode & 0o777) == "0o700"


@needs_toxiproxy
def test_half_a_millisecond_is_refused_before_anything_changes(lab_tmp, echo_port):
    with Toxiproxy(lab_tmp / "toxiproxy-1") as proxies:
        proxies.proxy("echo", echo_port)
        proxies.set_delay(1)
        with pytest.raises(ConfigError, match="0.5 ms cannot be injected"):
            proxies.set_delay(0.5)
        assert proxies.delay_ms == 1
        assert {t["attributes"]["latency"] for t in proxies.toxics()["echo"]} == {1}


@needs_toxiproxy
def test_a_cluster_folder_whose_owner_was_killed_loses_its_proxy_on_reap(lab_tmp):
    """The proxy lives inside a cluster server's folder: SIGKILL of the lab, then reap, leaves nothing."""
    folder = lab_tmp / "cluster-999997"
    code = textwrap.dedent(f"""
        import fcntl, os, pathlib, time
        from ingestlab.latency import Toxiproxy
        folder = pathlib.Path({str(folder)!r}); folder.mkdir(mode=0o700)
        lock = os.open(folder / "owner.lock", os.O_CREAT | os.O_RDWR, 0o600); fcntl.flock(lock, fcntl.LOCK_EX)
        proxies = Toxiproxy(folder / "toxiproxy").start()
        print(proxies.pid(), flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    assert is_running(pid)
    proc.kill()  # SIGKILL: no atexit, no handler
    proc.wait()
    proc.stdout.close()
    assert is_running(pid), "the proxy outlives its owner until the reap"
    assert [p.name for p in reap(lab_tmp)] == [folder.name]
    assert not is_running(pid)
    assert not folder.exists() and not processes_using(folder)


def test_a_missing_binary_is_one_line_saying_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setenv(latency.BINARY_ENV, str(tmp_path / "none"))
    reason = latency.unavailable_reason()
    assert reason and "\n" not in reason and "make toxiproxy" in reason
    with pytest.raises(EngineUnavailableError, match="make toxiproxy"):
        Toxiproxy(tmp_path / "toxiproxy-1")


@pytest.mark.parametrize("bad", [0.5, -1, float("nan"), "2", True])
def test_check_delay_refuses_what_toxiproxy_cannot_inject(bad):
    with pytest.raises(ConfigError, match="DELAYS_MS"):
        latency.check_delay(bad)


class TestToxiproxyServer(LocalServerContract):
    server = "ingestlab.latency:Toxiproxy"
    kind = "toxiproxy"

    @classmethod
    def skip_reason(cls):
        return latency.unavailable_reason()

    def test_nobody_else_can_connect_over_socket_or_tcp(self, lab_tmp):
        pytest.skip("Toxiproxy's API is TCP on 127.0.0.1 without authentication (it has none): "
                    "test_it_listens_on_loopback_only checks what holds")


def test_the_binary_the_makefile_builds_is_the_one_found_first(monkeypatch):
    monkeypatch.delenv(latency.BINARY_ENV, raising=False)
    if not os.access(latency.BUILT_BINARY, os.X_OK):
        pytest.skip(f"{latency.BUILT_BINARY} not built (make toxiproxy)")
    assert latency.find_binary() == latency.BUILT_BINARY


@needs_toxiproxy
def test_calibrate_gives_one_row_per_run_and_the_echo_pays_one_round_trip(lab_tmp):
    import pandas as pd

    from ingestlab import models

    runs = pd.DataFrame(latency.calibrate(lab_tmp / "toxiproxy-1", [0, 2, 4], repeats=2, n=10))
    assert len(runs) == 6 and list(runs["delay_ms"]) == [0, 2, 4] * 2
    fit = models.fit_round_trips(runs, by=(), y="time_per_statement_ms", adequacy=False).iloc[0]
    assert 0.95 <= fit["round_trips"] <= 1.5, fit["round_trips"]  # a sleep is never short; a busy machine adds to it
    assert not (lab_tmp / "toxiproxy-1").exists()
