import numpy as np
import pandas as pd
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


def _observed_and_unobserved(slow: float = 1.0):
    # observed statements carry an observer's cost of `slow` ms, all of it in their WAL flush;
    # unobserved ones (ten after each, the first two settling) are the statement as the samples time it
    rng = np.random.default_rng(3)
    n, block = 12, 10
    flush, rest = 0.20 + rng.normal(0, 0.005, n), 0.05 + rng.normal(0, 0.002, n)
    observed = flush + rest + slow + 0.01
    parts = [[("wal_flush", f + slow, "io"), ("execution", r, "pgss")] for f, r in zip(flush, rest)]
    quiet_flush, quiet_rest = 0.20 + rng.normal(0, 0.005, n * block), 0.05 + rng.normal(0, 0.002, n * block)
    settle = [k < 2 for _ in range(n) for k in range(block)]
    quiet = quiet_flush + quiet_rest + 0.01 + np.where(settle, 0.5, 0.0)
    quiet_parts = [[("wal_flush", f, "io"), ("execution", r, "pgss")] for f, r in zip(quiet_flush, quiet_rest)]
    frame = anatomy.frame("server", list(observed), parts, unobserved=(list(quiet), settle, quiet_parts))
    return frame.assign(engine="e", variant="v")


def test_the_summary_reports_the_unobserved_statement_and_what_observing_it_added():
    frame = _observed_and_unobserved(slow=1.0)
    row = anatomy.summary(frame).iloc[0]
    assert row["client_total_ms"] == pytest.approx(0.26, abs=0.01)  # not the observed 1.26 ms
    assert row["wal_flush_ms"] == pytest.approx(0.20, abs=0.01)
    assert row["unexplained_ms"] == pytest.approx(0.01, abs=0.002)
    assert row["n"] == 12 * 8  # the settling statements are left out
    assert row["observed_ms"] == pytest.approx(1.26, abs=0.01)
    assert row["observer_ms"] == pytest.approx(1.0, abs=0.01)
    assert 0.95 < row["observer_ci_low_ms"] <= row["observer_ms"] <= row["observer_ci_high_ms"] < 1.05


def test_without_an_unobserved_pass_the_observed_statements_are_reported_and_no_observer_cost():
    frame = _observed_and_unobserved(slow=1.0)
    row = anatomy.summary(frame[frame["pass"] != anatomy.UNOBSERVED]).iloc[0]
    assert row["client_total_ms"] == pytest.approx(1.26, abs=0.01)
    assert np.isnan(row["observer_ms"])


def test_an_anatomy_taken_in_passes_counts_every_passes_statements_and_folds_their_ladders():
    # two passes at two moments of a run (the second 0.1 ms slower): statements are numbered within each pass
    fast, slow = _observed_and_unobserved(slow=1.0), _observed_and_unobserved(slow=1.0)
    slow["ms"] = slow["ms"] + np.where(slow["component"].isin([anatomy.CLIENT_TOTAL, anatomy.UNEXPLAINED]), 0.1, 0)
    both = anatomy.summary(pd.concat([fast.assign(profiled_no=0), slow.assign(profiled_no=1)], ignore_index=True)).iloc[0]
    assert both["n"] == 2 * 12 * 8  # without profiled_no, the second pass's statements would be summed into the first's
    assert both["client_total_ms"] == pytest.approx(0.26 + 0.05, abs=0.02)  # between the two moments
    ladder = pd.DataFrame({"component": ["commit"] * 2, "ms": [0.010, 0.030], "n": [5, 7], "source": ["rung"] * 2,
                           "ci_low_ms": [0.0, 0.0], "ci_high_ms": [1.0, 1.0]})
    passes = [anatomy.frame("server", [0.5, 0.4], [[]] * 2, ladder=ladder.iloc[[i]], unmeasured={"wal_flush": "no io"})
              .assign(engine="e", variant="v", profiled_no=i) for i in (0, 1)]
    folded = anatomy.ladder(pd.concat(passes, ignore_index=True))
    assert folded[["component", "ms", "n"]].values.tolist() == [["commit", pytest.approx(0.020), 12]]
    assert len(anatomy.unmeasured(pd.concat(passes, ignore_index=True))) == 1


def test_a_stored_anatomy_with_the_old_round_column_reads_as_profiled_no():
    frames = [_observed_and_unobserved(slow=1.0).assign(profiled_no=i) for i in (0, 1)]
    new = pd.concat(frames, ignore_index=True)
    old = new.rename(columns={"profiled_no": "round"})
    pd.testing.assert_frame_equal(anatomy.summary(old), anatomy.summary(new))
    assert anatomy.summary(old).iloc[0]["n"] == 2 * 12 * 8


def test_the_observer_table_names_the_part_the_observer_slowed():
    table = anatomy.observer(_observed_and_unobserved(slow=0.3)).set_index("component")
    assert table.loc["wal_flush", "observer_ms"] == pytest.approx(0.3, abs=0.01)
    assert table.loc["execution", "observer_ms"] == pytest.approx(0.0, abs=0.005)
    assert table.loc["client_total", "observer_ms"] == pytest.approx(0.3, abs=0.01)
    assert table.loc["wal_flush", "ci_low_ms"] > 0.25
    assert set(table["n_unobserved"]) == {96}
    assert anatomy.observer(_observed_and_unobserved().query("`pass` != 'unobserved'")).empty


def test_parts_for_the_bar_leave_out_the_reference_columns():
    frame = _observed_and_unobserved()
    table = anatomy.summary(frame).assign(samples_median_ms=0.26, overhead_ms=0.3)
    assert set(anatomy.parts(table)["component"]) == {"wal_flush", "execution", "unexplained"}


def test_a_part_the_server_cannot_report_is_listed_with_its_reason():
    frame = anatomy.frame("server", [0.3, 0.2, 0.25], [[("execution", 0.1, "pgss")]] * 3,
                          unmeasured={"wal_flush": "pg_stat_io is new in PostgreSQL 16"})
    (line,) = anatomy.unmeasured(frame.assign(engine="postgres15", variant="sync_on"))
    assert "wal_flush not measured (pg_stat_io is new in PostgreSQL 16)" in line
    assert "wal_flush_ms" not in anatomy.summary(frame.assign(engine="e", variant="v")).columns
