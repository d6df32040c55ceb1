"""The kernel manager of batch runs: encrypted channels, and no interrupt sent to a kernel being shut down."""

from __future__ import annotations

import zmq
from jupyter_client.manager import AsyncKernelManager


class QuietKernelManager(AsyncKernelManager):
    """An :class:`~jupyter_client.manager.AsyncKernelManager` for one notebook run by papermill.

    - Its TCP channels are encrypted with CurveZMQ keys it makes for each kernel (the
      kernelspec declares support): unencrypted TCP lets any local user read them, and the
      kernel logs a warning saying so.
    - jupyter_client interrupts (SIGINT) every kernel before asking it to shut down. After a
      notebook has finished there is nothing to interrupt, and a SIGINT that lands while the
      kernel is still closing its last request is logged as "KeyboardInterrupt caught in
      kernel" — an error line after a run that went well. So a kernel being shut down is not
      interrupted. (A kernel runs in its own session, out of the terminal's reach; when a run
      is stopped, the runner stops its kernel with SIGTERM, whose handler stops the servers.)
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("transport_encryption", "auto" if zmq.has("curve") else "disabled")
        super().__init__(**kwargs)

    async def _async_interrupt_kernel(self) -> None:
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()
