import time

import pandas as pd
import pytest

from ingestlab.timing import latency_summary, time_statements


def test_samples_keep_warmup_flagged_and_every_statement():
    frame = time_statements(lambda s: time.sleep(s), [0.002, 0.001, 0.001], rows=[1, 1, 1], bytes_=[9, 9, 9],
                            warmup=1)
    assert frame["warmup"].tolist() == [True, False, False]
    assert frame["statement_no"].tolist() == [-1, 0, 1]
    assert (frame["elapsed_s"] >= 0.001).all()
    assert frame["started_ns"].is_monotonic_increasing


def test_lengths_must_agree():
    with pytest.raises(ValueError):
        time_statements(lambda s: None, [1, 2], rows=[1], bytes_=[1, 1])


def test_summary_gives_percentiles_not_only_means():
    df = pd.DataFrame({"scenario": "s", "warmup": False, "elapsed_s": [i / 1000 for i in range(1, 101)]})
    s = latency_summary(df, by=["scenario"]).iloc[0]
    assert s["median_ms"] == pytest.approx(50.5)
    assert s["p95_ms"] == pytest.approx(95.05)
    assert s["p99_ms"] == pytest.approx(99.01)
    assert s["n"] == 100


def test_time_statements_labels_the_driver_and_leaves_the_collector_as_it_found_it():
    import gc

    from ingestlab.timing import time_statements

    seen = []
    frame = time_statements(lambda s: seen.append(gc.isenabled()), [1, 2], rows=[1, 1], bytes_=[1, 1], driver="x")
    assert seen == [False, False] and gc.isenabled()
    assert frame["driver"].tolist() == ["x", "x"] and (frame["elapsed_s"] >= 0).all()
    assert frame["started_ns"].is_monotonic_increasing


def test_the_c_half_is_built_wherever_a_c_compiler_is():
    import shutil

    from ingestlab import timing

    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler on this machine: the loops run in Python (timer = python)")
    assert timing.TIMER == "c", "setup.py's extension was not built: reinstall with `pip install -e .`"


def c_half():
    from ingestlab import timing

    if timing._c is None:
        pytest.skip("the package's C half is not built here")
    return timing._c


def test_the_c_loop_refuses_bad_senders_texts_and_buffers():
    from array import array

    c = c_half()
    stamps = array("q", [0] * 4)
    with pytest.raises(ValueError, match="unknown sender kind"):
        c.time_texts((9, 1, 1, 1, 1), [], stamps)
    with pytest.raises(ValueError, match="takes 3 function addresses"):
        c.time_texts((1, 1, 1, 1), [], stamps)
    with pytest.raises(ValueError, match="null"):
        c.time_texts((1, 0, 1, 1, 1), [], stamps)
    with pytest.raises(TypeError, match="not bytes"):
        c.time_texts((1, 1, 1, 1, 1), ["SELECT 1"], stamps)
    with pytest.raises(TypeError, match=r"parts\[1\] is str, not bytes"):
        c.stamp_template((1, 1, 1, 1, 1), (b"INSERT ", "x"), 0, array("q", [0] * 5), 0, 0, 0)
    with pytest.raises(ValueError, match="2 statements need 4"):
        c.time_texts((1, 1, 1, 1, 1), [b"a", b"b"], array("q", [0] * 3))
    with pytest.raises(TypeError, match="64-bit integers"):
        c.time_texts((1, 1, 1, 1, 1), [b"a"], array("d", [0.0] * 2))
    with pytest.raises(BufferError, match="not writable"):
        c.time_texts((1, 1, 1, 1, 1), [b"a"], b"\0" * 16)
    assert c.time_texts((1, 1, 1, 1, 1), [], stamps) == 0  # nothing to send: nothing called
    with pytest.raises(ValueError, match="header"):
        c.stamp_template((1, 1, 1, 1, 1), [b"a", b"b"], 0, array("q", [0]), 0, 0, 0)
    with pytest.raises(ValueError, match="at least two"):
        c.stamp_template((1, 1, 1, 1, 1), [b"a"], 0, array("q", [0] * 5), 0, 0, 0)
    full = array("q", [0, 0])  # no room for a statement: full at once, nothing called
    assert c.stamp_template((1, 1, 1, 1, 1), [b"a", b"b"], 0, full, 10**18, 0, 0) == 0


def test_the_c_loops_clock_is_the_labs_clock():
    from ingestlab import timing

    c = c_half()
    before = timing.now_ns()
    reading = c.clock_ns()
    assert before <= reading <= timing.now_ns()


def test_a_sender_needs_its_connection_and_every_function():
    from ingestlab.timing import NativeSender

    with pytest.raises(ValueError, match="3 function addresses"):
        NativeSender("libpq", 1, [1, 2], lambda: "")
    with pytest.raises(ValueError, match="4 function addresses"):
        NativeSender("libmysql", 0, [1, 2, 3, 4], lambda: "")
    with pytest.raises(KeyError):
        NativeSender("odbc", 1, [1, 2, 3], lambda: "")


@pytest.mark.parametrize("template", [b"no id here", b"50% off, id %d", b"%s and %d"])
def test_a_template_needs_an_id_and_only_doubled_percents(template):
    from ingestlab.timing import template_parts

    with pytest.raises(ValueError, match="template"):
        template_parts(template)


def test_calls_without_a_c_send_are_timed_from_python():
    from ingestlab.timing import time_calls

    seen = []
    frame = time_calls([lambda: seen.append(1)] * 3, rows=[1] * 3, bytes_=[2] * 3, warmup=1, driver="x")
    assert seen == [1, 1, 1] and set(frame["timer"]) == {"python"} and frame["statement_no"].tolist() == [-1, 0, 1]
