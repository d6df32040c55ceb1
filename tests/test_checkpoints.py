"""Checkpoints of completed configurations and the Run's ``once``: what a resumed run keeps and what it measures."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ingestlab.checkpoints import RESUME_ENV, Checkpoints, resuming
from ingestlab.errors import ConfigError
from ingestlab.results import Run, load_run

PARAMS = {"target": "mysql://root:hunter2@db/x", "n": 3}


def _measurer(run: Run, calls: list, seed: int):
    """A configuration's measurement: draws (seeded) numbers, appends them to two tables, logs the call."""
    def measure(key):
        def once():
            calls.append(key["config"])
            rng = np.random.default_rng([seed, key["config"]])
            run.append(pd.DataFrame({"elapsed_s": rng.random(4), "warmup": [True, False, False, False],
                                     "config": key["config"]}))
            run.append(pd.DataFrame({"config": [key["config"]], "extra": [rng.random()]}), table="side")
        return run.once(key, once)
    return measure


def test_checkpoints_round_trip_and_a_failed_write_leaves_nothing(tmp_path):
    store = Checkpoints(tmp_path, keep=False)
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [0.5, np.nan]})
    store.put({"engine": "e", "n": 1}, {"results": frame})
    again = Checkpoints(tmp_path, keep=True)
    pd.testing.assert_frame_equal(again.get({"engine": "e", "n": 1})["results"], frame)
    assert again.get({"engine": "e", "n": 2}) is None
    with pytest.raises(ValueError):  # pyarrow (ArrowInvalid) cannot store a column of mixed objects
        again.put({"engine": "e", "n": 2}, {"results": pd.DataFrame({"a": [object(), 1]})})
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [next(iter(again.found))]
    assert Checkpoints(tmp_path, keep=False).found == set() and not (tmp_path / "checkpoints").exists()


def test_a_resumed_run_keeps_completed_configurations_and_measures_only_the_rest(tmp_path):
    first, calls = Run("nb", PARAMS, tmp_path), []
    measure = _measurer(first, calls, seed=1)
    kept = [measure({"engine": "e", "config": c}) for c in (0, 1)]

    def interrupted():
        first.append(pd.DataFrame({"elapsed_s": [9.0], "warmup": [False], "config": 2}))
        raise KeyboardInterrupt  # Ctrl-C inside the third configuration, after a partial append

    with pytest.raises(KeyboardInterrupt):
        first.once({"engine": "e", "config": 2}, interrupted)
    assert len(load_run(tmp_path)[0]) == 9  # the partial row is kept by the interrupted run, as always
    assert json.loads((tmp_path / "run.json").read_text())["configurations"] == {"kept": 0, "measured": 2}

    second, calls2 = Run("nb", PARAMS, tmp_path, resume=True), []
    measure2 = _measurer(second, calls2, seed=2)
    done = [measure2({"engine": "e", "config": c}) for c in range(4)]
    assert calls2 == [2, 3]  # 0 and 1 were not measured again
    for old, new in zip(kept, done[:2]):
        pd.testing.assert_frame_equal(old["results"], new["results"])
        pd.testing.assert_frame_equal(old["side"], new["side"])
    frame, meta = load_run(tmp_path)
    assert len(frame) == 16 and 9.0 not in frame["elapsed_s"].tolist()  # the partial row is gone, nothing twice
    assert frame.groupby("config").size().tolist() == [4, 4, 4, 4]
    pd.testing.assert_frame_equal(frame, pd.concat([d["results"] for d in done], ignore_index=True))
    assert len(pd.read_parquet(tmp_path / "side.parquet")) == 4
    assert meta["resumed"]["kept"] == 2 and meta["resumed"]["measured"] == 2
    assert meta["resumed"]["checkpoints_found"] == 2 and meta["configurations"] == {"kept": 2, "measured": 2}
    assert "revision" in meta["resumed"]["git_before"] and "start" in meta["resumed"]["load_average_before"]
    assert "hunter2" not in (tmp_path / "run.json").read_text()


def test_a_resume_keeps_how_busy_the_machine_was_while_its_kept_configurations_were_measured(tmp_path):
    """run.json's machine_cpu is the last run's: a resume that measures nothing would replace the measuring run's
    record with its own quiet seconds; it is kept in resumed.machine_cpu_before (the worse one over two resumes)."""
    from ingestlab import report
    from ingestlab.results import record_outcome

    first = Run("nb", PARAMS, tmp_path)
    _measurer(first, [], seed=1)({"engine": "e", "config": 0})
    record_outcome(tmp_path, "nb", PARAMS, None, machine_cpu={"others_cpu_share": 0.12, "seconds": 7200.0})
    second = Run("nb", PARAMS, tmp_path, resume=True)
    assert second.meta["resumed"]["machine_cpu_before"] == {"others_cpu_share": 0.12, "seconds": 7200.0}
    record_outcome(tmp_path, "nb", PARAMS, None, machine_cpu={"others_cpu_share": 0.01, "seconds": 20.0})
    assert report.others_cpu_share(load_run(tmp_path)[1]) == 0.12
    third = Run("nb", PARAMS, tmp_path, resume=True)  # a resume of a resume keeps the worse of the two
    assert third.meta["resumed"]["machine_cpu_before"]["others_cpu_share"] == 0.12
    # ...unless that resume measured nothing: a redraw beside other work changed no number (00's, at 71 %)
    record_outcome(tmp_path, "nb", PARAMS, None, machine_cpu={"others_cpu_share": 0.71, "seconds": 37.0})
    fourth = Run("nb", PARAMS, tmp_path, resume=True)
    assert fourth.meta["resumed"]["machine_cpu_before"]["others_cpu_share"] == 0.12


def test_a_resume_of_a_resume_that_measured_nothing_keeps_the_revision_and_load_that_measured(tmp_path):
    first = Run("nb", PARAMS, tmp_path)
    _measurer(first, [], seed=1)({"engine": "e", "config": 0})
    meta = json.loads((tmp_path / "run.json").read_text())
    meta.update(git={"revision": "a7c3660", "dirty": False}, load_average={"start": [0.91, 1.5, 1.9], "end": None})
    (tmp_path / "run.json").write_text(json.dumps(meta))  # as if measured at another revision, on another day
    Run("nb", PARAMS, tmp_path, resume=True)  # draws again, measures nothing
    third = Run("nb", PARAMS, tmp_path, resume=True)
    assert third.meta["resumed"]["git_before"] == {"revision": "a7c3660", "dirty": False}
    assert third.meta["resumed"]["load_average_before"]["start"] == [0.91, 1.5, 1.9]


def test_a_resume_with_other_parameters_is_refused_and_a_new_run_drops_old_checkpoints(tmp_path):
    run = Run("nb", PARAMS, tmp_path)
    _measurer(run, [], seed=1)({"config": 0})
    with pytest.raises(ConfigError, match=r"--resume=.*these differ: n"):
        Run("nb", {**PARAMS, "n": 4}, tmp_path, resume=True)
    calls = []
    fresh = Run("nb", PARAMS, tmp_path)  # not a resume: the earlier run's checkpoints do not count
    _measurer(fresh, calls, seed=1)({"config": 0})
    assert calls == [0] and "resumed" not in load_run(tmp_path)[1]


def test_only_the_folder_the_runner_names_is_resumed(tmp_path, monkeypatch):
    monkeypatch.setenv(RESUME_ENV, str(tmp_path / "a"))
    assert resuming(tmp_path / "a") and not resuming(tmp_path / "b")
    monkeypatch.delenv(RESUME_ENV)
    assert not resuming(tmp_path / "a")


def test_configurations_do_not_nest(tmp_path):
    run = Run("nb", {}, tmp_path)
    with pytest.raises(RuntimeError, match="do not nest"):
        run.once({"a": 1}, lambda: run.once({"b": 2}, lambda: None))
