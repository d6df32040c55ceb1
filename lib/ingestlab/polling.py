"""Waiting for something to become true: one poll-and-retry helper over tenacity for servers, engines and cgroups."""

from __future__ import annotations

import operator
from typing import Callable, TypeVar

import tenacity

T = TypeVar("T")


def poll(check: Callable[[], T], *, timeout_s: float, interval_s: float,
         retry_on: type[BaseException] | tuple[type[BaseException], ...] = ()) -> T:
    """Call ``check`` until it returns a true value or ``timeout_s`` has passed; return its last value.

    ``check`` runs at least once, then every ``interval_s`` seconds while it returns a false
    value (``None``, ``0``, ``False``, an empty collection) or raises one of ``retry_on``.
    The caller decides what a timeout means: the last value comes back (false), or, when the
    last call raised one of ``retry_on``, that exception is raised. Any other exception is
    raised at once (a server process that exited while starting, say).

    Parameters
    ----------
    check : callable
        Takes no argument; returns what is awaited (true when it is there).
    timeout_s : float
        Seconds after which no further call is made.
    interval_s : float
        Seconds between calls.
    retry_on : exception class or tuple of them
        Exceptions that mean "not yet" rather than "failed".

    Examples
    --------
    >>> calls = iter([0, 0, 3])
    >>> poll(lambda: next(calls), timeout_s=5, interval_s=0)
    3
    >>> poll(lambda: [], timeout_s=0, interval_s=0)
    []
    """
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_delay(timeout_s), wait=tenacity.wait_fixed(interval_s),
        retry=tenacity.retry_if_result(operator.not_) | tenacity.retry_if_exception_type(retry_on),
        retry_error_callback=lambda state: state.outcome.result())
    return retrying(check)
