"""What every local server the lab starts must do, run against the real server: subclass per server."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import time

import pytest

from ingestlab.servers import reap
from ingestlab.servers.base import SOCKET_PREFIX, SOCKET_ROOT, is_running, processes_using


class LocalServerContract:
    """``class TestPostgresServer(LocalServerContract): server = "ingestlab.engines.postgres.server:PostgresServer"``.

    ``kind`` is the folder prefix the lab gives the server (``postgres-<pid>``); ``skip_reason()``
    says why the server cannot run on this machine (None: it can).
    """

    server: str = ""
    kind: str = ""
    #: Seconds a stopped server may take to exit.
    STOP_S: float = 30.0

    @classmethod
    def skip_reason(cls) -> str | None:
        return None

    @classmethod
    def server_class(cls):
        module, name = cls.server.split(":")
        return getattr(importlib.import_module(module), name)

    def test_reap_stops_a_server_whose_owner_died(self, lab_tmp):
        reason = self.skip_reason()
        if reason:
            pytest.skip(reason)
        module, name = self.server.split(":")
        folder = lab_tmp / f"{self.kind}-999999"
        code = textwrap.dedent(f"""
            import os
            from {module} import {name}
            s = {name}({str(folder)!r}).start()
            print(s.pid(), flush=True)
            os._exit(0)  # the owner dies without stopping its server
        """)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        pid = int(out.stdout.split()[-1])
        assert is_running(pid)
        stopped = reap(lab_tmp)
        assert [p.name for p in stopped] == [folder.name]
        deadline = time.monotonic() + self.STOP_S
        while is_running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not is_running(pid)
        assert not folder.exists()

    def test_a_server_stops_cleanly_and_leaves_no_folder(self, lab_tmp):
        reason = self.skip_reason()
        if reason:
            pytest.skip(reason)
        server = self.server_class()(lab_tmp / f"{self.kind}-{1}").start()
        pid = server.pid()
        assert pid and is_running(pid)
        server.stop()
        server.stop()  # idempotent
        assert not is_running(pid) and not server.directory.exists()

    def test_a_server_started_from_a_deep_folder_works(self, lab_tmp):
        reason = self.skip_reason()
        if reason:
            pytest.skip(reason)
        deep = lab_tmp / ("d" * 60) / ("e" * 60)  # a checkout 120+ characters deep
        deep.mkdir(parents=True)
        with self.server_class()(deep / f"{self.kind}-1") as server:
            assert server.pid() and is_running(server.pid())
            assert len(str(server.socket_dir)) < 60

    def test_nobody_else_can_connect_over_socket_or_tcp(self, lab_tmp):
        reason = self.skip_reason() or _no_other_user()
        if reason:
            pytest.skip(reason)
        with self.server_class()(lab_tmp / f"{self.kind}-1") as server:
            assert oct(server.socket_dir.stat().st_mode & 0o777) == "0o700"
            assert not listening_tcp_ports(server.pid()), "the server listens on TCP"
            sockets = [str(p) for p in server.socket_dir.iterdir() if p.is_socket()] or [str(server.socket_dir)]
            probe = textwrap.dedent(f"""
                import socket, sys
                for path in {sockets!r}:
                    s = socket.socket(socket.AF_UNIX)
                    try:
                        s.connect(path)
                    except OSError as exc:
                        print("refused", path, exc)
                    else:
                        sys.exit("connected to " + path)
            """)
            res = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-I", "-c", probe],
                                 capture_output=True, text=True, timeout=60)
            assert res.returncode == 0 and "refused" in res.stdout, res.stdout + res.stderr

    def _start_elsewhere(self, folder, delay_s: float) -> subprocess.Popen:
        """A process that starts this server in ``folder`` (then sleeps), returned ``delay_s`` after it began."""
        reason = self.skip_reason()
        if reason:
            pytest.skip(reason)
        module, name = self.server.split(":")
        code = f"from {module} import {name}\n{name}({str(folder)!r}).start()\nimport time\ntime.sleep(60)\n"
        proc = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(delay_s)
        return proc

    @pytest.mark.parametrize("delay_s", [0.05, 0.4, 1.2])
    def test_a_kill_while_starting_leaves_nothing_after_reap(self, lab_tmp, delay_s):
        folder = lab_tmp / f"{self.kind}-999998"
        proc = self._start_elsewhere(folder, delay_s)
        proc.kill()  # SIGKILL: no atexit, no handler
        proc.wait()
        reap(lab_tmp)
        assert not folder.exists()
        assert not processes_using(folder)
        assert not list(SOCKET_ROOT.glob(f"{SOCKET_PREFIX}{self.kind}-{proc.pid}-*"))


    @pytest.mark.parametrize("delay_s", [0.3, 1.0])
    def test_a_sigterm_while_starting_leaves_nothing_without_a_reap(self, lab_tmp, delay_s):
        # the handler stops what the start launched, and removes the folder only once nothing runs from it
        folder = lab_tmp / f"{self.kind}-999997"
        proc = self._start_elsewhere(folder, delay_s)
        proc.terminate()
        began = time.monotonic()
        proc.wait(timeout=60)
        # promptly: a node stopped while it starts is not given a running server's grace (Galera's 30 s, once)
        assert time.monotonic() - began < 20
        deadline = time.monotonic() + 10  # a server told to stop may take a moment to go
        while processes_using(folder) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not processes_using(folder)
        assert not folder.exists()


def _no_other_user() -> str | None:
    import os
    import shutil

    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return "needs root and runuser to act as user nobody"
    return None


def listening_tcp_ports(pid: int) -> list[int]:
    """TCP ports process ``pid`` listens on (from /proc: its socket inodes in LISTEN state)."""
    import os
    from pathlib import Path

    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return ports
