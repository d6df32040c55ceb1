"""The batch runs' kernel manager: encrypted channels, and no SIGINT to a kernel being shut down."""

from __future__ import annotations

import asyncio
import signal

from jupyter_client.manager import AsyncKernelManager

from ingestlab._kernel import QuietKernelManager


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
