import numpy as np
import pytest

from ingestlab import anatomy


def test_unexplained_is_each_statements_remainder_even_when_a_part_is_heavy_tailed():
    # every statement: two independent heavy-tailed parts (a WAL flush, the client's side) and exactly
    # 0.01 ms that no part covers
    rng = np.random.default_rng(7)
    flush, client_side = rng.lognormal(mean=-1.0, sigma=1.5, size=(2, 41))
    client = flush + client_side + 0.01
    parts = [[("client_socket", c, "clock"), ("wal_flush", f, "io")] for c, f in zip(client_side, flush)]
    table = anatomy.summary(anatomy.frame("server", list(client), parts).assign(engine="e", variant="v")).iloc[0]
    measured = client[1:]  # statement 0 is the warm-up
    assert table["unexplained_ms"] == pytest.approx(0.01)
    assert table["unexplained_share"] == pytest.approx(0.01 / np.median(measured))
    # the client's median minus the parts' medians is the remainder of no statement
    gap = np.median(measured) - np.median(flush[1:]) - np.median(client_side[1:])
    assert abs(gap - 0.01) > 0.01


def test_a_ladder_rung_is_a_part_of_every_statement_with_its_ci():
    recorder = anatomy.Recorder.__new__(anatomy.Recorder)
    recorder.rungs, recorder.rung_sources = {}, {}
    for ms in (0.010, 0.012, 0.011, 0.013, 0.009):
        recorder.rung("transaction", ms, "empty query")
    frame = anatomy.frame("server", [0.5, 0.4, 0.45], [[("execution", 0.1, "pgss")]] * 3, ladder=recorder.ladder(),
                          order=("transaction", "execution"))
    per = frame[frame["pass"] == "server"].pivot(index="statement_no", columns="component", values="ms")
    assert per["transaction"].tolist() == pytest.approx([0.011] * 3)
    assert per.loc[1, "unexplained"] == pytest.approx(0.4 - 0.011 - 0.1)
    (source,) = frame.loc[frame["pass"] == "ladder", "source"]
    assert "median of 5, 95 % CI" in source
