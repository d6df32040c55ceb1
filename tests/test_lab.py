"""`make lab`'s JupyterLab: served as root too, rooted at the repository, answering its REST API."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_jupyterlab_serves_the_repository_as_root_or_not(tmp_path):
    jupyter = Path(sys.executable).with_name("jupyter")
    if not jupyter.exists():
        pytest.skip(f"no jupyter beside {sys.executable}")
    port, token = _free_port(), secrets.token_hex(16)
    args = [str(jupyter), "lab", f"--notebook-dir={REPO}", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            f"--IdentityProvider.token={token}"]
    if os.geteuid() == 0:
        args.append("--allow-root")  # what `make lab` adds for root
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path / "config")}
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline, status = time.monotonic() + 60, None
        while time.monotonic() < deadline and status is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2) as r:
                    status = json.load(r)
            except OSError:
                assert server.poll() is None, "jupyter lab exited"
                time.sleep(0.5)
        assert status is not None, "no answer from /api/status within 60 s"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents?token={token}", timeout=5) as r:
            names = {item["name"] for item in json.load(r)["content"]}
        assert {"notebooks", "lib", "data", "figures"} <= names  # rooted at the repository
    finally:
        server.terminate()
        server.wait(timeout=30)
