"""How batch runs execute a notebook: the kernel manager (encrypted channels, no SIGINT to a kernel being shut
down) and papermill's engine (the notebook written at most every SAVE_EVERY_S, and always at its end)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import nbformat
import papermill
import papermill.engines
import pytest
from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import DeadKernelError

from ingestlab import _kernel
from ingestlab._kernel import EXECUTOR_NAME, QuietKernelManager


async def _run_and_shut_down(km: AsyncKernelManager, log) -> list[int]:
    """Start a real kernel, run a statement, shut it down; return the signals the manager sent it."""
    sent: list[int] = []
    signal_kernel = km._async_signal_kernel

    async def record(signum: int) -> None:  # a spy: the signal is still sent
        sent.append(signum)
        await signal_kernel(signum)

    km._async_signal_kernel = record
    await km.start_kernel(stderr=log)
    client = km.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=120)
        reply = await client.execute_interactive("x = 1 + 1", timeout=60)
        assert reply["content"]["status"] == "ok"
    finally:
        client.stop_channels()
        await km.shutdown_kernel()
    return sent


def test_a_finished_kernel_is_shut_down_without_sigint_over_encrypted_channels(tmp_path):
    log = tmp_path / "kernel.log"
    km = QuietKernelManager(kernel_name="python3")
    with open(log, "w") as err:
        sent = asyncio.run(_run_and_shut_down(km, err))
    assert signal.SIGINT not in sent
    assert km.curve_publickey is not None, "no CurveZMQ keys were provisioned"
    text = log.read_text()
    assert "without encryption" not in text and "KeyboardInterrupt" not in text, text


def test_jupyter_clients_own_manager_sends_sigint_before_shutting_down(tmp_path):
    # the behaviour QuietKernelManager removes; if jupyter_client stops doing it, the override can go
    with open(tmp_path / "kernel.log", "w") as err:
        assert signal.SIGINT in asyncio.run(_run_and_shut_down(AsyncKernelManager(kernel_name="python3"), err))


def _notebook(path, *sources: str):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _writes(monkeypatch) -> list[str]:
    """The notebook writes papermill's execution manager makes (a spy: each is still made)."""
    made: list[str] = []
    write = papermill.engines.write_ipynb

    def spy(nb, path):
        made.append(path)
        write(nb, path)

    monkeypatch.setattr(papermill.engines, "write_ipynb", spy)
    return made


def _printed(cell: dict) -> str:
    return "".join("".join(o["text"]) for o in cell["outputs"] if o["output_type"] == "stream")


@pytest.mark.parametrize("executor", [EXECUTOR_NAME, None])
def test_quick_cells_are_written_once_at_the_end_not_twice_each(tmp_path, monkeypatch, executor):
    """Six quick cells: papermill's own engine writes the notebook at each one's start and end, the lab's at its
    start and its end (with no SAVE_EVERY_S between its cells)."""
    monkeypatch.setattr(_kernel, "SAVE_EVERY_S", 3600.0)
    made = _writes(monkeypatch)
    source = _notebook(tmp_path / "in.ipynb", *[f"print({i})" for i in range(6)])
    papermill.execute_notebook(str(source), str(tmp_path / "out.ipynb"), engine_name=executor, progress_bar=False,
                               kernel_name="python3")
    assert len(made) == 2 if executor == EXECUTOR_NAME else len(made) >= 12, len(made)
    cells = json.loads((tmp_path / "out.ipynb").read_text())["cells"]
    # a print's text and its newline may come as two stream messages, kept as two outputs
    assert [_printed(c) for c in cells] == [f"{i}\n" for i in range(6)]


def test_a_kernel_that_dies_leaves_every_output_it_made_written(tmp_path, monkeypatch):
    """No cell write in between (all quick): the one at the end, made whatever ended the run, has them all."""
    monkeypatch.setattr(_kernel, "SAVE_EVERY_S", 3600.0)
    source = _notebook(tmp_path / "in.ipynb", "print('first')", "print('second')",
                       "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "print('never')")
    with pytest.raises(DeadKernelError):
        papermill.execute_notebook(str(source), str(tmp_path / "out.ipynb"), engine_name=EXECUTOR_NAME,
                                   progress_bar=False, kernel_name="python3")
    cells = json.loads((tmp_path / "out.ipynb").read_text())["cells"]
    assert [_printed(c) for c in cells[:2]] == ["first\n", "second\n"]
    assert cells[3]["outputs"] == []  # after the kernel died, nothing ran


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize(("runner_alive", "code"), [(True, 0), (False, 1)])
def test_a_kernel_whose_runner_died_before_it_asked_to_die_with_it_exits_at_once(runner_alive, code):
    # the kernel asks for SIGTERM at its runner's death; a runner killed between the fork and that request
    # sends none, and no parent poller is left to notice (the kernel's JPY_PARENT_PID is 1)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            _kernel._die_with_the_runner(parent if runner_alive else parent + 10**6)  # another pid: a dead runner
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == code
