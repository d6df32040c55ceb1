"""What every local server the lab starts must do, run against the real server: subclass per server."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import time

import pytest

from ingestlab.servers import reap
from ingestlab.servers.base import is_running


class LocalServerContract:
    """``class TestPostgresServer(LocalServerContract): server = "ingestlab.servers.postgres:PostgresServer"``.

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
