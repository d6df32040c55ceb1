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


def poll_or_error(check: Callable[[], T], *, timeout_s: float, interval_s: float,
                  retry_on: type[BaseException] | tuple[type[BaseException], ...]) -> tuple[T | None, BaseException | None]:
    """:func:`poll`, with a timeout's last ``retry_on`` exception given back rather than raised.

    For a caller that reports a timeout in its own words, naming the last error seen (a server
    that never accepted a login says why the last attempt failed).

    Returns
    -------
    tuple
        ``(value, None)``: ``check``'s last value, true when it came in time;
        ``(None, error)``: the exception the last call raised when time ran out.

    Examples
    --------
    >>> def refused():
    ...     raise ConnectionRefusedError("not yet")
    >>> poll_or_error(refused, timeout_s=0, interval_s=0, retry_on=OSError)
    (None, ConnectionRefusedError('not yet'))
    >>> poll_or_error(lambda: 7, timeout_s=0, interval_s=0, retry_on=OSError)
    (7, None)
    """
    try:
        return poll(check, timeout_s=timeout_s, interval_s=interval_s, retry_on=retry_on), None
    except retry_on as exc:
        return None, exc
