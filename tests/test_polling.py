import time

import pytest

from ingestlab.polling import poll


def _counting(values):
    """A check that returns ``values`` one by one (raising those that are exceptions) and counts its calls."""
    values = iter(values)

    def check():
        check.calls += 1
        value = next(values)
        if isinstance(value, BaseException):
            raise value
        return value

    check.calls = 0
    return check


def test_poll_returns_the_first_true_value_without_calling_again():
    check = _counting([None, 0, "", "ready", "never asked"])
    assert poll(check, timeout_s=5, interval_s=0) == "ready" and check.calls == 4


def test_after_the_timeout_the_last_false_value_comes_back_and_no_call_follows():
    calls = []
    started = time.monotonic()
    assert poll(lambda: calls.append(time.monotonic()) or 0, timeout_s=0.3, interval_s=0.05) == 0
    assert 0.3 <= time.monotonic() - started < 1.5 and 3 <= len(calls) <= 8
    assert calls[-1] - started < 0.3 + 0.05 + 0.2  # the last call was not long after the deadline


def test_exceptions_named_retry_on_mean_not_yet():
    check = _counting([ConnectionRefusedError("starting"), FileNotFoundError("no socket"), 7])
    assert poll(check, timeout_s=5, interval_s=0, retry_on=OSError) == 7 and check.calls == 3


def test_at_the_timeout_the_last_retried_exception_is_raised():
    with pytest.raises(ConnectionRefusedError, match="still starting"):
        poll(_counting([ConnectionRefusedError("still starting")] * 1000), timeout_s=0.1, interval_s=0.02,
             retry_on=ConnectionRefusedError)


def test_any_other_exception_is_raised_at_once():
    check = _counting([ValueError("the server exited"), 1])
    with pytest.raises(ValueError, match="exited"):
        poll(check, timeout_s=5, interval_s=0, retry_on=OSError)
    assert check.calls == 1
