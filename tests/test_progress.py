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


def test_a_kernel_shown_live_by_ingestlab_run_redraws_often(monkeypatch):
    monkeypatch.setenv(progress.INTERVAL_ENV, "2")
    with progress.bar(total=10, file=io.StringIO()) as bar:
        assert bar.mininterval == 2
    monkeypatch.setenv(progress.INTERVAL_ENV, "not a number")
    with progress.bar(total=10, file=io.StringIO()) as bar:
        assert bar.mininterval == progress.QUIET_INTERVAL_S


def test_a_saved_notebook_keeps_only_each_bars_last_state(tmp_path):
    import json

    from ingestlab import runner

    redraws = "".join(f"\rload: {i:3d}%|" for i in range(0, 101, 10)) + "\n"
    notebook = {"cells": [{"cell_type": "code", "source": "", "outputs": [
        {"output_type": "stream", "name": "stderr", "text": ["done before\n", redraws]},
        {"output_type": "display_data", "data": {"text/plain": "x\ry"}}]}], "metadata": {}, "nbformat": 4,
        "nbformat_minor": 5}
    partial, final = tmp_path / ".nb.partial.ipynb", tmp_path / "nb.ipynb"
    partial.write_text(json.dumps(notebook))
    runner._keep_notebook(partial, final)
    outputs = json.loads(final.read_text())["cells"][0]["outputs"]
    assert outputs[0]["text"] == "done before\nload: 100%|\n"
    assert outputs[1]["data"]["text/plain"] == "x\ry"  # only streams are rewritten
    assert not partial.exists()
