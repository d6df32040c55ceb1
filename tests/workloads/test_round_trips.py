"""Notebook 08: parameters, the analysis on known data, and real runs on the toy link engine through a real Toxiproxy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ingestlab import latency, models
from ingestlab.engines import registry
from ingestlab.engines.mariadb.server import unavailable_reason as mariadb_missing
from ingestlab.errors import ConfigError
from ingestlab.results import Run
from ingestlab.runner import declared_parameters, find_notebook
from ingestlab.workloads import round_trips
from ingestlab.workloads import round_trips_analysis as analysis

TOY = Path(__file__).resolve().parents[1] / "engines" / "toy_link"
BIN = Path(sys.executable).parent / "ingestlab"
needs_toy = pytest.mark.skipif(bool(latency.unavailable_reason() or mariadb_missing()),
                               reason=latency.unavailable_reason() or mariadb_missing() or "")


@pytest.fixture
def toy(monkeypatch):
    """The toy link engine registered (a client and a private MariaDB, their link through Toxiproxy when asked)."""
    monkeypatch.setenv(registry.ENGINES_ENV, str(TOY))
    return "toylink"


# -- parameters ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, name", [
    ({"delays_ms": "0,0.5,1"}, "DELAYS_MS"),
    ({"delays_ms": "2"}, "DELAYS_MS"),
    ({"delays_ms": "0,2,2"}, "DELAYS_MS"),
    ({"delays_ms": "0,fast"}, "DELAYS_MS"),
    ({"delays_ms": "0,1001"}, "DELAYS_MS"),
    ({"held_out_ms": 1001}, "HELD_OUT_MS"),
    ({"repeats": 1001}, "REPEATS"),
    ({"held_out_ms": 2}, "HELD_OUT_MS"),
    ({"held_out_ms": 1.5}, "HELD_OUT_MS"),
    ({"batch_rows": "0"}, "BATCH_ROWS"),
    ({"clients": "0"}, "CLIENTS"),
    ({"variants": "sync_off"}, "VARIANTS"),
    ({"repeats": 0}, "REPEATS"),
    ({"duration_s": 0}, "DURATION_S"),
    ({"scale": "huge"}, "SCALE"),
    ({"engines": "duckdb"}, "ENGINES"),
    ({"engines": "postgresql://u@127.0.0.1:1/db"}, "ENGINES"),
    ({"engines": ",,"}, "ENGINES"),
])
def test_bad_parameters_name_themselves_before_anything_starts(toy, kwargs, name, tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    with pytest.raises(ConfigError) as err:
        round_trips.validate(**{"engines": toy, **kwargs})
    assert err.value.name == name and "expected" in str(err.value)
    assert not (tmp_path / "lab").exists()


def test_half_a_millisecond_is_refused_saying_toxiproxy_cannot_inject_it(toy):
    with pytest.raises(ConfigError, match="0.5 ms cannot be injected"):
        round_trips.validate(toy, delays_ms="0,0.5,1,2")


def test_defaults_follow_the_scale(toy):
    smoke, paper = round_trips.validate(toy), round_trips.validate(toy, scale="paper")
    assert (smoke.delays_ms, smoke.held_out_ms, smoke.repeats) == ((0, 2), None, 2)
    assert (paper.delays_ms, paper.held_out_ms, paper.rows_per_insert, paper.clients) == ((0, 1, 2, 5), 3, (1, 100), (1, 8))
    assert paper.measured_delays_ms == (0, 1, 2, 5, 3)
    assert round_trips.validate(toy, scale="paper", held_out_ms=-1).held_out_ms is None


def test_the_notebook_s_default_engines_are_the_workload_s():
    declared = declared_parameters(find_notebook("08"))
    assert declared["ENGINES"]["default"] == json.dumps(round_trips.DEFAULT_ENGINES)


def test_the_default_engines_adapt_to_the_machine_saying_why_one_is_left_out():
    params = round_trips.validate(round_trips.DEFAULT_ENGINES)
    known = registry.classes()
    for line in params.left_out:
        name, _, reason = line.partition(": ")
        assert known[name].unavailable_reason() == reason
    kept = [spec.name for spec in params.engines]
    routable = {n: c for n, c in known.items() if c.has("link_delay") and c.HAS_LOCAL_SERVER}
    stands_for = [n for n, c in routable.items() if not any(issubclass(c, o) and c is not o for o in routable.values())]
    assert sorted(kept + [line.partition(": ")[0] for line in params.left_out]) == sorted(stands_for)
    assert all(known[n].has("link_delay") for n in kept)
    if not kept:
        assert params.skipped.startswith("no cluster engine can run here") and "\n" not in params.skipped


def test_without_toxiproxy_the_grid_is_skipped_in_one_line(toy, monkeypatch, tmp_path):
    monkeypatch.setenv(latency.BINARY_ENV, str(tmp_path / "none"))
    params = round_trips.validate(toy)
    assert "make toxiproxy" in params.skipped and "\n" not in params.skipped
    run = Run("08_round_trips", params.as_dict(), tmp_path / "run")
    data = round_trips.measure(params, run)
    assert all(frame.empty for frame in data.values())
    assert any("delay grid skipped" in note for note in run.meta["notes"])


# -- the analysis on known data ------------------------------------------------------------------
def _throughput(rng, *, r=2.0, local_ms=0.5, delays=(0, 1, 2, 5), repeats=3, rows=(1, 100), clients=(1, 8),
                shared=8.0) -> pd.DataFrame:
    """Runs of a protocol paying ``r`` round trips a commit; with many clients each round trip serves ``shared`` commits."""
    out = []
    for rep in range(repeats):
        for d in delays:
            for n_rows in rows:
                for c in clients:
                    ms = (local_ms + 0.01 * n_rows + r * 2 * d) / (shared if c > 1 else 1) + rng.normal(0, 0.02)
                    out.append({"engine": "e", "variant": "v", "rows_per_insert": n_rows, "clients": c, "delay_ms": d,
                                "repeat": rep, "statements_per_s": 1e3 / ms, "latency_median_ms": ms})
    return pd.DataFrame(out)


def test_the_law_recovers_the_round_trips_and_the_sharing_of_many_clients():
    points = analysis.runs(_throughput(np.random.default_rng(1)))
    fits = analysis.fit(points)
    one = analysis.one_row_one_client(fits).iloc[0]
    assert one["round_trips_ci_low"] <= 2.0 <= one["round_trips_ci_high"]
    assert models.model_holds(one["model_holds"]) is True
    table = analysis.amortisation(fits).set_index(["rows_per_insert", "clients"])
    assert table.loc[(100, 1), "round_trips_per_row"] == pytest.approx(0.02, rel=0.05)  # batching: r per row / 100
    assert table.loc[(1, 8), "shared_by_ci_low"] <= 8.0 <= table.loc[(1, 8), "shared_by_ci_high"]
    assert any("divided by" in line for line in analysis.describe_amortisation(table.reset_index()))


def test_the_held_out_delay_is_predicted_and_a_curved_protocol_is_rejected():
    rng = np.random.default_rng(2)
    points = analysis.runs(_throughput(rng, delays=(0, 1, 2, 3, 5), rows=(1,), clients=(1,)))
    held = analysis.held_out(points, 3)
    assert held["inside"].iloc[0] and held["round_trip_ms"].iloc[0] == 6
    assert "inside" in analysis.describe_held_out(held, 3)[0]
    curved = points.assign(time_per_statement_ms=points["time_per_statement_ms"] + 0.3 * points["delay_ms"] ** 2)
    fits = analysis.fit(curved, held_out_ms=3)
    assert models.model_holds(fits["model_holds"].iloc[0]) is False
    assert "rejected" in analysis.describe_fits(fits)[0]


def test_the_law_on_the_measured_round_trip_takes_out_the_proxy_s_late_wake_up():
    # the proxy wakes 0.2 ms late a hop at any delay above 0: on 2d a step the line misses; on what the echo measured, none
    rng = np.random.default_rng(3)
    late = analysis.runs(_throughput(rng, r=2.0, rows=(1,), clients=(1,)))
    late["time_per_statement_ms"] += 2 * 2 * 0.2 * (late["delay_ms"] > 0)
    echo = analysis.runs(_throughput(rng, r=1.0, local_ms=0.1, rows=(1,), clients=(1,)).assign(engine="echo"))
    echo["time_per_statement_ms"] += 2 * 0.2 * (echo["delay_ms"] > 0)
    assert analysis.measured_round_trips(echo).round(1).to_dict() == {0: 0.0, 1: 2.4, 2: 4.4, 5: 10.4}
    nominal, measured = analysis.fit(late), analysis.fit(late, echo=echo)
    assert models.model_holds(nominal["model_holds"].iloc[0]) is False
    assert models.model_holds(measured["model_holds"].iloc[0]) is True and measured["regressor"].iloc[0] == analysis.MEASURED
    assert measured["round_trips_ci_low"].iloc[0] <= 2.0 <= measured["round_trips_ci_high"].iloc[0]
    assert "measured round trip" in analysis.describe_fits(measured)[0]
    assert "not a straight line" in analysis.describe_calibration(analysis.calibration(echo))[0]


def test_the_seeds_overheads_are_arithmetic_labelled_a_hypothesis():
    fits = analysis.fit(analysis.runs(_throughput(np.random.default_rng(4), rows=(1,), clients=(1,))))
    lines = analysis.seeds_hypothesis(fits)
    assert lines[0].startswith("*Hypothesis, not a finding*")
    assert any("64.2 ms per INSERT would be 128 round trips at 0.5 ms" in line for line in lines)
    # (64.2 - 0.51) / (2 · 2.0): the one-way delay at r = 2 that gives shared-data's overhead
    assert any("one-way delay of 15.9 ms" in line for line in lines)


def test_skipped_runs_give_empty_tables_and_a_headline_that_says_why():
    empty = analysis.runs(pd.DataFrame())
    fits = analysis.fit(empty)
    assert analysis.tidy_fits(fits, analysis.calibration(pd.DataFrame())).empty
    assert analysis.plot_round_trips(empty, analysis.tidy_fits(fits)) is None
    assert analysis.plot_amortisation(analysis.amortisation(fits)) is None
    assert analysis.headline(fits, analysis.held_out(empty, 3), fits, "toxiproxy-server missing") == \
        {"skipped": "toxiproxy-server missing"}


# -- real runs on the toy link engine ------------------------------------------------------------
@needs_toy
def test_measure_on_a_delayed_link_finds_about_one_round_trip_and_counts_every_row(toy, tmp_path, lab_tmp, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(lab_tmp))
    params = round_trips.validate(toy, delays_ms="0,3", clients="1,2", repeats=2, duration_s=0.3, warmup_s=0.05)
    run = Run("08_round_trips", params.as_dict(), tmp_path)
    data = round_trips.measure(params, run)
    assert len(data["throughput"]) == 2 * 2 * 2 and len(data["calibration"]) == 2 * 2
    points = analysis.runs(data["throughput"])
    nominal = analysis.one_row_one_client(analysis.fit(points)).iloc[0]
    measured = analysis.one_row_one_client(analysis.fit(points, echo=data["calibration"])).iloc[0]
    # one round trip a statement, client to server, told apart from two; on 2d the proxy's late wake-ups add a little
    # on a busy machine, and on the echo's measured round trip they need not be the same as when the echo ran
    # (1.31 once beside three other workers on two cores, 2026-12-01); the nominal 0.899 once in a fresh clone's CI: a
    # loaded machine slows the undelayed runs too, which shortens the difference (2026-12-01)
    assert 0.75 <= nominal["round_trips"] <= 1.8, nominal["round_trips"]
    assert 0.75 <= measured["round_trips"] <= 1.5, measured["round_trips"]
    assert not list(lab_tmp.iterdir()), "every server and proxy stopped and its folder removed"


@needs_toy
def test_the_notebook_runs_on_the_toy_and_without_toxiproxy_says_so_in_one_line(toy, tmp_path, lab_tmp):
    env = {**os.environ, registry.ENGINES_ENV: str(TOY), "INGESTLAB_LAB_DIR": str(lab_tmp)}
    done = subprocess.run([str(BIN), "run", "08", "--no-progress", "--out", str(tmp_path / "out"), "-p", "ENGINES", toy,
                           "-p", "DURATION_S", "0.2", "-p", "WARMUP_S", "0.05"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "out" / "08_round_trips"
    meta = json.loads((folder / "run.json").read_text())
    assert meta["completed"] and f"round_trips[{toy}, default]" in meta["headline"]
    assert meta["headline"]["round_trips[echo]"] > 0.9
    stored = pd.read_csv(folder / "fits.csv")
    again = analysis.fit_run(folder)
    assert np.allclose(stored["estimate"], again["estimate"])
    saved = Path(os.environ["INGESTLAB_FIGURES_DIR"]) / "08_round_trips"  # the tests' figures go there (conftest.py)
    assert {"round_trips.png", "amortisation.png"} <= {p.name for p in saved.iterdir()}

    skipped = subprocess.run([str(BIN), "run", "08", "--no-progress", "--out", str(tmp_path / "out2"), "-p", "ENGINES",
                              toy], capture_output=True, text=True, timeout=300,
                             env={**env, latency.BINARY_ENV: str(tmp_path / "none")})
    assert skipped.returncode == 0, skipped.stderr
    meta = json.loads((tmp_path / "out2" / "08_round_trips" / "run.json").read_text())
    assert meta["completed"] and "make toxiproxy" in meta["headline"]["skipped"]
    assert not list(lab_tmp.iterdir())


def test_the_plan_says_what_runs_or_in_one_line_why_nothing_does(toy, monkeypatch, tmp_path):
    plan = analysis.describe_plan(round_trips.validate(toy, scale="paper"))
    assert plan == ["Delays 0, 1, 2, 5, 3 ms one way (3 ms held out), 5 runs each, on toylink."]
    monkeypatch.setenv(latency.BINARY_ENV, str(tmp_path / "none"))
    (line,) = analysis.describe_plan(round_trips.validate(toy))
    assert line.startswith("Delay grid skipped: ") and "make toxiproxy" in line


def test_the_runner_takes_the_empty_default_as_the_workload_s_choice_and_refuses_it_elsewhere():
    # `ingestlab run all` (make reproduce) parses every notebook's engines at the boundary: 08's "" is its
    # workload's own choice among the registered engines, 01's "" is no engine at all
    from ingestlab.errors import ConfigError
    from ingestlab.runner import check_parameters, engine_specs

    assert engine_specs(find_notebook("08"), {}) == () == engine_specs(find_notebook("08"), {"ENGINES": ""})
    check_parameters(find_notebook("08"), {})
    with pytest.raises(ConfigError, match="ENGINES=''"):
        engine_specs(find_notebook("01"), {"ENGINES": ""})


def test_stalled_runs_are_found_named_and_the_law_is_given_without_them_too():
    """A real paper run (tests/fixtures/paper-08-stalls): three runs at d = 0 stalled for seconds, one with no statement."""
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "paper-08-stalls"
    throughput, echo = pd.read_csv(folder / "throughput.csv"), pd.read_csv(folder / "calibration.csv")
    stalled = analysis.stalls(throughput, 2.0)
    assert len(stalled) == 3 and set(stalled["delay_ms"]) == {0} and (stalled["statements"] == 0).sum() == 1
    assert stalled["stalled_s"].dropna().between(8.0, 9.0).all()  # the standby's 10-s status message, less the window
    points = analysis.runs(throughput)
    with_stalls = analysis.one_row_one_client(analysis.fit(points, 3, echo)).iloc[0]
    line, = analysis.describe_stalls(stalled, points, 3, echo)
    assert "3 of 100 runs stalled (at d = 0 ms)" in line and "1 completed no statement (in no fit)" in line
    r, low, high = (float(x) for x in re.search(r"r = ([\d.]+) \(95 % CI ([\d.]+)–([\d.]+)\)", line).groups())
    assert 0.95 < low < r < high < 1.15  # one round trip a commit, as semi-sync's: the stalls alone dragged r to 0.74
    assert (high - low) * 10 < with_stalls["round_trips_ci_high"] - with_stalls["round_trips_ci_low"]
    assert analysis.headline(analysis.fit(points, 3, echo), pd.DataFrame(), pd.DataFrame(), stalled=stalled)[
        "stalled_runs[postgres_replicated, sync_on]"] == 3
    assert analysis.stalls(throughput[throughput["delay_ms"] > 0], 2.0).empty
