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
