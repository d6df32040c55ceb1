"""The machine's own limits: the disk's sequential write rate and its file creation, measured in the run itself."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
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


def file_create_us(directory: str | os.PathLike, n: int = 100) -> dict:
    """Microseconds to create an empty file in a fresh folder under ``directory``, ``n`` times: median and 90th percentile.

    A run-level state of the machine that an engine creating files per statement pays (chDB's
    single-row INSERT writes a part of some twenty files; what it did on this VM is in the
    ClickHouse engine's README). Files are created with ``O_EXCL`` and no write, each on the lab's
    clock, then removed with their folder.

    Returns
    -------
    dict
        ``directory``, ``n``, ``p50_us``, ``p90_us`` and ``journal`` (:func:`journal`); or ``error``
        when ``directory`` takes no files.
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=".ingestlab-create-", dir=directory))
    except OSError as exc:
        return {"directory": str(directory), "error": f"{type(exc).__name__}: {exc}"}
    times = []
    try:
        for i in range(n):
            path = folder / f"f{i}"
            made = timing.timed(os.open, path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.close(made.result)
            times.append(made.elapsed_ns / 1e3)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    times.sort()
    return {"directory": str(directory), "n": n, "p50_us": round(statistics.median(times), 1),
            "p90_us": round(times[int(0.9 * (n - 1))], 1), "journal": journal(directory)}


def journal(directory: str | os.PathLike) -> bool | None:
    """Whether the ext3/ext4 file system holding ``directory`` keeps a journal; None for other file systems.

    Without one, ext4's inode allocator steps over the inodes deleted in the last half minute
    (``recently_deleted``), so creating files slows where many were just deleted (the ClickHouse
    engine's README: what chDB's INSERT paid here). The kernel lists a journaled file system's device in ``/proc/fs/jbd2/`` (``vda-8``).
    """
    try:
        st = os.stat(directory)
        if mount_of(directory).get("fstype") not in ("ext3", "ext4"):
            return None
        name = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve().name
        return any(Path("/proc/fs/jbd2").glob(f"{name}-*"))
    except OSError:
        return None


def mount_of(path: str | os.PathLike) -> dict:
    """The mount holding ``path``: ``mount``, ``fstype`` and ``source`` from ``/proc/mounts``; empty when unreadable.

    The deepest mount point that is ``path`` or one of its parents (``/mnt/a`` does not hold ``/mnt/ab``).
    """
    real, found = os.path.realpath(path), {}
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        source, mount, fstype = line.split()[:3]
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(found.get("mount", "")):
            found = {"mount": mount, "fstype": fstype, "source": source}
    return found
