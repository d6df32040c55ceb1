"""How papermill runs a notebook for ``ingestlab run``: its kernel manager and its executor (papermill's "engine").

The kernel manager: encrypted channels, and no interrupt sent to a kernel being shut down. The
executor: the executed notebook written as it runs at most every :data:`SAVE_EVERY_S`, and always
at its end, whatever ended it.
"""

from __future__ import annotations

import functools
import os
import sys

import zmq
from jupyter_client.manager import AsyncKernelManager
from papermill.engines import NBClientEngine, NotebookExecutionManager, papermill_engines


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
    - On Linux the kernel gets SIGTERM when the runner dies, however it dies (a SIGKILL too):
      its servers are stopped by that handler, not left running. The kernel is then launched
      without ipykernel's parent poller (``JPY_PARENT_PID`` 1), which exits the kernel at once
      within a second of the runner's death: under load it won the race against the handler,
      and the kernel was gone with its PostgreSQL still up (3 of 18 runner kills beside five busy
      loops). A kernel whose runner died before it asked for that signal exits at once.
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("transport_encryption", "auto" if zmq.has("curve") else "disabled")
        super().__init__(**kwargs)

    async def _async_launch_kernel(self, kernel_cmd, **kw) -> None:
        if sys.platform.startswith("linux"):
            kw.setdefault("preexec_fn", functools.partial(_die_with_the_runner, os.getpid()))
            # JPY_PARENT_PID 1 ("the parent is init") is ipykernel's value for no parent poller; none at all would
            # make the kernel print its standalone banner ("Ctrl-C will not work", "--existing …") into the run's output
            kw["env"] = {**(kw.get("env") or os.environ), "JPY_PARENT_PID": "1"}
            kw.setdefault("independent", True)  # jupyter_client leaves JPY_PARENT_PID as given
        await super()._async_launch_kernel(kernel_cmd, **kw)

    @property
    def kernel_pid(self) -> int | None:
        """The kernel's process id once it runs (None before, or when it is not a local process)."""
        return getattr(self.provisioner, "pid", None) if self.provisioner is not None else None

    async def _async_interrupt_kernel(self) -> None:
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()


def _die_with_the_runner(runner: int) -> None:
    # In the kernel's process, before it runs: SIGTERM when the runner dies, even by SIGKILL (`timeout -k`),
    # so that the kernel's handler stops the servers it started instead of leaving them to `ingestlab clean`.
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != runner:  # the runner died between the fork and the line above: no signal will come
        os._exit(1)


#: Seconds between two writes of the executed notebook while it runs (papermill writes it at every
#: cell's start and end: 60–90 writes of a notebook whose figures make it 1–3 MB, a second of CPU in
#: a small run, taken from the two cores the kernel measures on).
SAVE_EVERY_S = 2.0


class _SparseSaves(NotebookExecutionManager):
    # papermill's bookkeeping of a run, its cell-by-cell writes spaced SAVE_EVERY_S apart; the first and
    # the last always made. Papermill itself writes the notebook at the end only when it completes or a
    # cell raises: a kernel that dies or a run that is stopped kept whatever its last cell write held.

    def save(self, **kwargs):
        if (self.now() - self.last_save_time).total_seconds() >= SAVE_EVERY_S:
            super().save(**kwargs)

    def notebook_start(self, **kwargs):
        super().notebook_start(**kwargs)
        super().save()  # the parameters injected, before any cell runs

    def notebook_complete(self, **kwargs):
        failing = sys.exc_info()[1]  # called from a `finally`: what ended the run, if anything did
        super().notebook_complete(**kwargs)
        try:
            super().save()
        except OSError:
            if failing is None:
                raise
            # the run's own failure is the one to report; the notebook stays as last written


class SparseSavesExecutor(NBClientEngine):
    """Papermill's nbclient executor (papermill calls it an engine), the executed notebook written at most every :data:`SAVE_EVERY_S` as it runs.

    Registered with papermill as ``ingestlab``. Every cell's outputs are in the final notebook as
    with papermill's own engine, also when the kernel dies or the run is stopped. While a notebook
    runs, the file is written at a cell's start or end once :data:`SAVE_EVERY_S` have passed since
    the last write, and during a long cell every 30 s (papermill's autosave).
    """

    @classmethod
    def execute_notebook(cls, nb, kernel_name, output_path=None, progress_bar=True, log_output=False,
                         autosave_cell_every=30, **kwargs):
        nb_man = _SparseSaves(nb, output_path=output_path, progress_bar=progress_bar, log_output=log_output,
                              autosave_cell_every=autosave_cell_every)
        nb_man.notebook_start()
        try:
            cls.execute_managed_notebook(nb_man, kernel_name, log_output=log_output, **kwargs)
        finally:
            nb_man.cleanup_pbar()
            nb_man.notebook_complete()
        return nb_man.nb


EXECUTOR_NAME = "ingestlab"
papermill_engines.register(EXECUTOR_NAME, SparseSavesExecutor)
