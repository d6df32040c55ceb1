"""The machine's own limits: the disk's sequential write rate, measured in the same run as the loads."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ingestlab import timing
from ingestlab.errors import EngineUnavailableError, ServerError


def sequential_write(directory: str | os.PathLike, mb: int = 256) -> dict:
    """Write ``mb`` MiB of zeros to a file in ``directory`` with ``dd oflag=direct conv=fsync``, timed; remove it.

    ``oflag=direct`` bypasses the page cache and ``conv=fsync`` waits for the device, so
    the rate is what the disk takes, not what memory does. The file is removed afterwards.

    Returns
    -------
    dict
        ``tool``, ``mb``, ``seconds``, ``mb_per_s`` (MB = 10⁶ bytes, as the loads' rates).
    """
    dd = shutil.which("dd")
    if dd is None:
        raise EngineUnavailableError("dd not found: cannot measure the disk's write rate")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"ingestlab-dd-{os.getpid()}.bin"
    command = [dd, "if=/dev/zero", f"of={path}", "bs=1M", f"count={int(mb)}", "oflag=direct", "conv=fsync",
               "status=none"]
    try:
        done = timing.timed(subprocess.run, command, capture_output=True, text=True)
    finally:
        path.unlink(missing_ok=True)
    if done.result.returncode != 0:
        raise ServerError(f"dd failed: {done.result.stderr.strip()}")
    seconds = done.elapsed_ns / 1e9
    return {"tool": "dd oflag=direct conv=fsync bs=1M", "mb": mb * 2**20 / 1e6, "seconds": seconds,
            "mb_per_s": mb * 2**20 / 1e6 / seconds}
