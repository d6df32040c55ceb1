"""Tests for ingestlab.progress: few redraws where the output is kept, live ones on a terminal."""

import doctest
import io

from ingestlab import progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_bar_off_a_terminal_is_stored_as_its_start_and_its_end():
    stream = io.StringIO()
    with progress.bar(total=2000, desc="rows", file=stream) as bar:
        for _ in range(2000):
            bar.update(1)
            bar.set_postfix_str("C=1", refresh=False)
    text = stream.getvalue()
    assert text.count("\r") == 2 and "2000/2000" in text and text.endswith("\n")


def test_a_bar_on_a_terminal_keeps_tqdms_live_redraws():
    with progress.bar(total=10, file=_Terminal()) as live, progress.bar(total=10, file=io.StringIO()) as kept:
        assert live.mininterval < 1 and kept.mininterval == progress.QUIET_INTERVAL_S


def test_doctests_pass():
    assert doctest.testmod(progress).failed == 0
