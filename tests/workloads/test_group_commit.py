import json
import os
import signal
import threading

import matplotlib.collections
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from ingestlab import engines, models
from ingestlab.engines import capabilities
from ingestlab.engines.doris import Doris
from ingestlab.engines.starrocks import StarRocks
from ingestlab.errors import ClientCrashError, ConfigError
from ingestlab.results import Run
from ingestlab.servers import base as servers_base
from ingestlab.workloads import group_commit, group_commit_analysis


@pytest.mark.parametrize("kwargs, name", [
    ({"clients": "0"}, "CLIENTS"),
    ({"clients": [1, 97]}, "CLIENTS"),
    ({"clients": "-3"}, "CLIENTS"),
    ({"clients": "two"}, "CLIENTS"),
    ({"batch_rows": "0"}, "BATCH_ROWS"),
    ({"batch_rows": [10_001]}, "BATCH_ROWS"),
    ({"variants": "commit_delay_7"}, "VARIANTS"),
    ({"variants": "sync_mode"}, "VARIANTS"),
    ({"duration_s": 0}, "DURATION_S"),
    ({"warmup_s": -1}, "WARMUP_S"),
    ({"loop": "half_open"}, "LOOP"),
    ({"loop": "open"}, "RATE"),
    ({"rate": 100.0}, "RATE"),
    ({"scale": "huge"}, "SCALE"),
    ({"engines": "oracle"}, "ENGINES"),
    ({"engines": "starrocks://root@127.0.0.1:9030/db"}, "ENGINES"),
])
def test_bad_parameters_name_themselves_before_anything_starts(kwargs, name, tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    with pytest.raises(ConfigError) as err:
        group_commit.validate(**{"engines": "postgres", **kwargs})
    assert err.value.name == name and "expected" in str(err.value)
    assert not (tmp_path / "lab").exists()


def test_a_doris_variant_on_postgres_says_whose_it_is():
    with pytest.raises(ConfigError, match="sync_mode is a variant of doris"):
        group_commit.validate("postgres", variants="default,sync_mode")


def test_starrocks_is_refused_naming_its_nearest_equivalent():
    with pytest.raises(ConfigError, match="merge commit"):
        group_commit.validate("starrocks://root@127.0.0.1:9030/db")


def test_defaults_follow_the_scale():
    assert group_commit.validate("postgres", scale="paper").clients == (1, 2, 4, 8, 16, 32, 64)
    assert group_commit.validate("postgres", scale="paper").rows_per_insert == (1, 10, 100)
    assert group_commit.validate("postgres", scale="paper").variants == tuple(capabilities.of(engines.classes()["postgres"], "group_commit").VARIANTS)
    assert group_commit.validate("doris://root@h:9030/db", variants="async_mode").variants == ("async_mode",)


# -- Doris and StarRocks by URL: generated statements and headers only (no server here) ------------
def test_doris_variants_set_group_commit_per_client_session():
    doris = engines.from_url("doris://root@127.0.0.1:9030/ingestlab?http_port=8030")
    doris._settings = dict(capabilities.of(doris, "group_commit").VARIANTS["sync_mode"])  # what apply_settings records
    assert doris.sender.client_settings() == {"group_commit": "sync_mode"}
    assert doris.set_sql("group_commit") == "SET SESSION group_commit = %s"


@pytest.mark.parametrize("variant, headers", [
    ("off_mode", {}), ("sync_mode", {"group_commit": "sync_mode"}), ("async_mode", {"group_commit": "async_mode"}),
])
def test_doris_stream_load_carries_the_group_commit_header(variant, headers):
    doris = engines.from_url("doris://root@127.0.0.1:9030/ingestlab")
    assert doris.stream_load_group_headers(variant) == headers
    sent = doris.stream_load_client().headers(["id", "name"], label=None, extra=headers)
    assert "label" not in sent and sent.get("group_commit") == headers.get("group_commit")


def test_doris_interval_is_a_table_property():
    doris = engines.from_url("doris://root@127.0.0.1:9030/ingestlab")
    assert doris.sql.group_commit_interval_sql("dt", 2000) == 'ALTER TABLE `dt` SET ("group_commit_interval_ms" = "2000")'
    with pytest.raises(ConfigError, match="INTERVAL_MS"):
        doris.sql.group_commit_interval_sql("dt", 0)
    ddl = engines.from_url("doris://root@h:9030/db?group_commit_interval_ms=50").sql.create_table_sql("dt", [("id", "INT")])
    assert '"group_commit_interval_ms" = "50"' in ddl


def test_starrocks_nearest_equivalent_is_merge_commit_headers():
    sr = engines.from_url("starrocks://root@127.0.0.1:9030/ingestlab")
    assert sr.stream_load_group_headers("merge_commit_sync", 250) == {
        "enable_merge_commit": "true", "merge_commit_async": "false", "merge_commit_interval_ms": "250",
        "merge_commit_parallel": "2"}
    assert not StarRocks.has("commit_counters") and not Doris.has("commit_counters")


def test_the_grid_calls_a_client_cpu_bound_only_when_it_was():
    params = group_commit.validate("postgres")
    tp = pd.DataFrame({"statements": [10], "warmup_statements": [2], "client_cpu_us_per_statement": [30.0]})
    for share, said in ((0.2, "so no client was CPU-bound"), (0.95, "near CPU-bound")):
        cpu = pd.DataFrame({"cpu_ns": [300_000], "statements": [10], "cpu_share": [share]})
        assert said in group_commit_analysis.describe_grid(params, tp, cpu)[1]


# -- live runs -----------------------------------------------------------------------------------
def test_measure_counts_every_row_and_observes_grouping(tmp_path):
    # 1 s a configuration: at 0.6 s, with three test workers on two cores, a configuration once measured no row
    params = group_commit.validate("postgres", clients="1,8", batch_rows="1,10", variants="default,sync_off",
                                   duration_s=1.0, warmup_s=0.2)
    run = Run("04_group_commit", params.as_dict(), tmp_path)
    data = group_commit.measure(params, run)
    tp = data["throughput"]
    assert len(tp) == 2 * 2 * 2
    for col in ["rows_per_s", "mb_per_s", "statements_per_s", "latency_median_ms", "latency_p99_ms",
                "commits_per_flush"]:
        assert tp[col].notna().all() and (tp[col] > 0).all(), col
    assert (tp.loc[tp["clients"] == 1, "commits_per_flush"].between(0.5, 1.5)).any()
    sync_off = tp[tp["variant"] == "sync_off"]
    assert (sync_off["commits_per_flush"] > 10).all()
    assert len(pd.read_parquet(tmp_path / "results.parquet")) == len(data["samples"])
    assert data["samples"].groupby("clients")["client"].nunique().to_dict() == {1: 1, 8: 8}
    assert set(data["samples"]["loop"]) == {"closed"}
    assert (tmp_path / "throughput.csv").exists()
    # interleaved: every round holds both variants, and neither variant's grid is measured in one stretch
    rounds = json.loads((tmp_path / "run.json").read_text())["schedule"]["rounds"]
    assert len(rounds) == group_commit.ROUNDS
    assert all(sorted(arm["variant"] for arm in r["order"]) == ["default", "sync_off"] for r in rounds)
    firsts = data["samples"].groupby(["variant", "clients", "rows_per_insert"])["started_ns"].min().sort_values()
    measured = firsts.index.get_level_values("variant")
    assert 1 + (measured[1:] != measured[:-1]).sum() >= 3
    assert tp[["variant", "rows_per_insert", "clients"]].values.tolist() == [  # the table in the grid's order
        [v, r, c] for v in ("default", "sync_off") for r in (1, 10) for c in (1, 8)]
    fits = group_commit_analysis.fit(tp)
    assert set(fits["term"]) == {"intercept", "flush_share", "rows_per_insert"}
    assert not group_commit_analysis.speedups(data["samples"], tp).empty


@pytest.mark.parametrize("stop", ["a client killed", "Ctrl-C"])
def test_a_killed_client_or_ctrl_c_stops_every_client_and_the_server_and_keeps_partial_results(tmp_path, stop):
    params = group_commit.validate("postgres", clients="4", batch_rows="1", variants="default",
                                   duration_s=5.0, warmup_s=0.2)
    run = Run("04_group_commit", params.as_dict(), tmp_path)
    pids: list[int] = []
    killed = stop == "a client killed"
    # Ctrl-C in the lab's own process raises KeyboardInterrupt: make sure no earlier test of this session left
    # another SIGINT handler installed (the whole suite once ran this test after one had: "DID NOT RAISE")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request_cleanup = [lambda: signal.signal(signal.SIGINT, previous)]

    def stop_soon(client_pids):
        pids.extend(client_pids)
        # SIGKILL to one client, or what Ctrl-C sends the parent
        target, signum = (client_pids[1], signal.SIGKILL) if killed else (os.getpid(), signal.SIGINT)
        threading.Timer(1.0, os.kill, (target, signum)).start()

    try:
        with pytest.raises(ClientCrashError, match=r"client.*\b1\b.*\(pid") if killed else pytest.raises(KeyboardInterrupt):
            group_commit.measure(params, run, on_start=stop_soon)
    finally:
        for undo in request_cleanup:
            undo()
    assert not any(servers_base.is_running(pid) for pid in pids)
    assert not servers_base._LIVE  # the server was stopped
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["completed"] is False and any(("stopped" if killed else "KeyboardInterrupt") in n
                                              for n in meta["notes"])
    partial = pd.read_parquet(tmp_path / "results.parquet")
    # every client's statements, a killed one's too: they were in buffers the parent shares
    assert len(partial) > 0 and partial["client"].nunique() == 4 and not partial["warmup"].all()


def test_thirty_two_clients_share_flushes_by_default_and_the_gain_is_stated_with_a_ci(tmp_path):
    params = group_commit.validate("postgres", clients="32", batch_rows="1",
                                   variants="default,commit_delay_1000", duration_s=1.5, warmup_s=0.3)
    data = group_commit.measure(params, Run("04_group_commit", params.as_dict(), tmp_path))
    tp = data["throughput"].set_index("variant")
    assert tp.loc["default", "commits_per_flush"] > 1  # PostgreSQL groups by itself
    assert (tp["statements"] > 0).all()
    speedup = group_commit_analysis.speedups(data["samples"], data["throughput"])
    (line, *_) = group_commit_analysis.describe_speedups(speedup, group_commit_analysis.batching_speedup(data["samples"],
                                                                                      data["throughput"]))
    best = speedup.iloc[0]
    assert best["ci_low"] <= best["speedup"] <= best["ci_high"] and "95 % bootstrap CI" in line
    assert "commit_delay_1000" in line and "32 clients" in line


def test_mariadb_binlog_group_commit_is_counted(tmp_path):
    from ingestlab.engines.mariadb.server import find_binary
    from ingestlab.errors import EngineUnavailableError

    try:
        find_binary("mariadbd")
    except EngineUnavailableError as exc:
        pytest.skip(str(exc))
    params = group_commit.validate("mariadb", clients="8", batch_rows="1", variants="binlog_wait_8",
                                   duration_s=0.6, warmup_s=0.2)
    data = group_commit.measure(params, Run("04_group_commit", params.as_dict(), tmp_path))
    tp = data["throughput"].iloc[0]
    assert tp["counter_Binlog_commits"] == tp["commits"]
    assert tp["counter_Binlog_group_commits"] > 0 and tp["commits_per_flush"] > 0


def _law_samples(clients_levels, *, sigma=0.05, kappa=0.001, lam=2000.0, seconds=2.0, seed=0, rows=1):
    """Statements whose count per 0.1 s window follows the scalability law with Poisson noise."""
    from ingestlab.usl import usl_throughput

    rng = np.random.default_rng(seed)
    frames = []
    for clients in clients_levels:
        rate = float(usl_throughput(clients, lam, sigma, kappa))
        n = rng.poisson(rate * seconds)
        ends = np.sort(rng.uniform(0, seconds, n)) * 1e9
        frames.append(pd.DataFrame({"engine": "postgres", "variant": "default", "loop": "closed",
                                    "clients": clients, "rows_per_insert": rows, "warmup": False,
                                    "measure_start_ns": 0, "started_ns": ends - 1e5, "elapsed_s": 1e-4,
                                    "rows": rows}))
    return pd.concat(frames, ignore_index=True)


def _collapsing_at_64():
    """The law up to 32 clients, half its throughput at 64."""
    return pd.concat([_law_samples([1, 2, 4, 8, 16, 32]), _law_samples([64], lam=1000.0, seed=1)], ignore_index=True)


def _throughput(samples):
    points = group_commit_analysis.usl_points(samples)
    return points.groupby(group_commit.CONFIG, as_index=False, sort=False)["rows_per_s"].mean().assign(
        commits_per_flush=1.0)


def test_the_scalability_law_is_recovered_and_foresees_32_and_64_clients_from_the_counts_below():
    samples = _law_samples([1, 2, 4, 8, 16, 32, 64])
    law = group_commit_analysis.scalability(samples)
    terms = law.set_index("term")
    for term, true in (("sigma", 0.05), ("kappa", 0.001), ("lambda", 2000.0)):
        assert terms.loc[term, "ci_low"] <= true <= terms.loc[term, "ci_high"], term
    assert terms.loc["peak_clients", "estimate"] == pytest.approx((0.95 / 0.001) ** 0.5, rel=0.2)
    forecasts = group_commit_analysis.prediction(samples)
    assert forecasts["clients"].tolist() == [32, 64] and forecasts["fit_max_clients"].tolist() == [16, 32]
    assert forecasts["informative"].all() and forecasts["inside"].all()
    assert set(law["model_holds"]) == {True} and (law["loo_error"] < 0.05).all() and (law["loo_in_pi"] == 1).all()
    assert law["loo_error"].iloc[0] == pytest.approx(forecasts["relative_error"].abs().median())
    assert list(law.columns[:len(models.TIDY_COLUMNS)]) == models.TIDY_COLUMNS
    no_terms = pd.DataFrame(columns=["engine", "variant", "term", "estimate", "ci_low", "ci_high", "r2", "n_points"])
    long = group_commit_analysis.tidy_fits(no_terms, law)
    assert list(long.columns) == models.TIDY_COLUMNS and "usl rows_per_insert=1" in set(long["model"])
    assert "foresaw 2 of 2 informative forecasts" in group_commit_analysis.describe_prediction(forecasts)[-1]


def test_a_throughput_that_collapses_at_64_clients_rejects_the_law():
    samples = _collapsing_at_64()
    forecasts = group_commit_analysis.prediction(samples).set_index("clients")
    assert forecasts.loc[32, "inside"] and not forecasts.loc[64, "inside"] and forecasts.loc[64, "informative"]
    assert forecasts.loc[64, "relative_error"] > 0.5  # the law, fitted up to 32, foresaw about twice what came
    law = group_commit_analysis.scalability(samples)
    assert set(law["model_holds"]) == {False} and (law["loo_in_pi"] == 0.5).all()
    assert "missed" in law["model_note"].iloc[0] and "at 64 clients" in law["model_note"].iloc[0]


def test_a_forecast_whose_interval_is_wider_than_its_prediction_tests_nothing():
    def forecast(clients, inside, informative):
        return {"engine": "e", "variant": "v", "rows_per_insert": 1, "clients": clients, "fit_max_clients": 16,
                "n_observed": 5, "observed": 100.0, "predicted": 120.0, "pi_low": 90.0, "pi_high": 150.0,
                "inside": inside, "relative_error": 0.2, "informative": informative}

    verdict = group_commit_analysis.forecast_verdict
    both = verdict(pd.DataFrame([forecast(32, True, True), forecast(64, None, False)]))
    assert both["model_holds"] is True and both["loo_in_pi"] == 1.0 and both["loo_error"] == pytest.approx(0.2)
    wide = verdict(pd.DataFrame([forecast(32, None, False)]))
    assert wide["model_holds"] is None and np.isnan(wide["loo_in_pi"]) and wide["model_note"].startswith("not tested")
    said = group_commit_analysis.describe_prediction(pd.DataFrame([forecast(32, None, False)]))
    assert "no test" in said[0] and said[-1].startswith("None of the 1 forecasts could test the law")
    missed = verdict(pd.DataFrame([forecast(32, True, True), forecast(64, False, True)]))
    assert missed["model_holds"] is False and missed["loo_in_pi"] == 0.5 and "at 64 clients" in missed["model_note"]


def test_a_grid_below_32_clients_forecasts_its_largest_count():
    assert group_commit_analysis.prediction(_law_samples([1, 2, 4, 8, 16]))["clients"].tolist() == [16]


def test_the_throughput_figure_draws_the_law_that_held_with_its_band_and_not_the_rejected_one():
    for samples, lines, bands, said in ((_law_samples([1, 2, 4, 8, 16, 32, 64]), 2, 1, "scalability law, 95 % band"),
                                        (_collapsing_at_64(), 1, 0, "law rejected, not drawn: 1 of 1")):
        law = group_commit_analysis.scalability(samples)
        curves = group_commit_analysis.law_curves(samples, law)
        assert curves["clients"].min() == 1 and curves["clients"].max() == 64  # over the measured counts only
        ax = group_commit_analysis.plot_throughput(_throughput(samples), curves).axes[0]
        drawn = [line for line in ax.lines if len(line.get_xdata())]  # seaborn adds an empty line per legend entry
        assert len(drawn) == lines and len(ax.collections) == bands
        assert said in [t.get_text() for t in ax.figure.legends[0].get_texts()]
        plt.close("all")


def test_a_law_not_tested_is_not_drawn_and_the_legend_counts_it():
    samples = _law_samples([1, 2, 4, 8, 16, 32, 64])
    curves = group_commit_analysis.law_curves(samples, group_commit_analysis.scalability(samples))
    tp = _throughput(samples)
    limits = group_commit_analysis.plot_throughput(tp, curves).axes[0].get_ylim()
    wide = curves.assign(ci_low=curves["ci_low"] / 100, ci_high=curves["ci_high"] * 100, model_holds=None)
    ax = group_commit_analysis.plot_throughput(tp, wide).axes[0]
    assert ax.get_ylim() == pytest.approx(limits)
    drawn = [line for line in ax.lines if len(line.get_xdata())]  # seaborn adds an empty line per legend entry
    assert len(drawn) == 1 and len(ax.collections) == 0  # the measurements' line alone: no law, no band
    assert "law not tested (held-out counts said nothing), not drawn: 1 of 1" in [
        t.get_text().replace("\n", " ") for t in ax.figure.legends[0].get_texts()]
    plt.close("all")


def test_the_headline_gives_the_law_and_its_forecast_errors_at_32_and_64_clients():
    samples = _law_samples([1, 2, 4, 8, 16, 32, 64])
    law, forecasts = group_commit_analysis.scalability(samples), group_commit_analysis.prediction(samples)
    no_fits = pd.DataFrame(columns=["engine", "variant", "term", "estimate", "ci_low", "ci_high"])
    out = group_commit_analysis.headline(_throughput(samples), pd.DataFrame(), no_fits, law, forecasts)
    for term in ("sigma", "kappa", "peak_clients"):
        estimate, low, high = out[f"usl_{term}[postgres default]"]
        assert low <= estimate <= high
    assert out["usl_holdout_error[postgres default C=32]"] == pytest.approx(abs(forecasts["relative_error"].iloc[0]))
    assert "usl_holdout_error[postgres default C=64]" in out


def test_the_scalability_law_is_not_estimable_from_two_client_counts_and_says_so():
    samples = _law_samples([1, 4])
    law = group_commit_analysis.scalability(samples)
    assert law.empty
    throughput = pd.DataFrame({"clients": [1, 4]})
    assert "not estimable at this scale" in group_commit_analysis.describe_scalability(law, throughput)[0]
    forecasts = group_commit_analysis.prediction(samples)
    assert forecasts.empty and list(forecasts.columns) == group_commit_analysis.PREDICTION_COLUMNS
    assert "not estimable at this scale" in group_commit_analysis.describe_prediction(forecasts)[0]
    assert group_commit_analysis.law_curves(samples, law).empty
    ax = group_commit_analysis.plot_throughput(_throughput(samples), group_commit_analysis.law_curves(samples, law))
    assert len(ax.axes[0].collections) == 0
    plt.close("all")


def test_the_headline_flush_cost_is_left_out_where_its_interval_holds_zero():
    throughput = pd.DataFrame({"engine": "e", "variant": ["on"] * 6 + ["off"] * 6, "clients": [1, 2, 4, 8, 16, 32] * 2,
                               "rows_per_insert": 1, "commits_per_flush": [1, 1.8, 3.2, 6, 9, 12] + [5000] * 6,
                               "rows_per_s": 1000.0, "statements_per_s": 1000.0})
    fits = pd.DataFrame({"engine": "e", "variant": ["on", "off"], "term": "flush_share", "estimate": [0.2, 327.9],
                         "ci_low": [0.1, -393.6], "ci_high": [0.3, 1049.0]})
    out = group_commit_analysis.headline(throughput, pd.DataFrame(), fits)
    assert out["flush_ms[e on]"] == [0.2, 0.1, 0.3]
    assert "flush_ms[e off]" not in out


def test_each_configuration_gets_batch_mean_intervals_of_its_throughput_and_latency():
    """A steady 1 000 statements/s for 3 s: its rows/s CI holds 1 000 and is narrow; its P50/P99 CIs hold the
    latencies drawn (0.5–1.5 ms, uniform); a configuration whose rate halves halfway gets a wide interval."""
    rng = np.random.default_rng(3)

    def config(variant, rate_of):
        t, rows = 0.0, []
        while t < 3.0:
            rate = rate_of(t)
            latency = rng.uniform(0.5e-3, 1.5e-3)
            rows.append({"engine": "postgres", "variant": variant, "loop": "closed", "clients": 1,
                         "rows_per_insert": 1, "client": 0, "warmup": False, "rows": 1, "bytes": 10,
                         "started_ns": int(t * 1e9), "elapsed_s": latency, "latency_s": latency,
                         "measure_start_ns": 0})
            t += 1 / rate
        return rows

    samples = pd.DataFrame(config("steady", lambda t: 1000.0) + config("halving", lambda t: 1000.0 if t < 1.5
                                                                        else 500.0))
    tp = samples.groupby(group_commit.CONFIG, as_index=False, sort=False).agg(rows_per_s=("rows", "size")).assign(
        rows_per_s=lambda d: d["rows_per_s"] / 3.0, latency_median_ms=1.0, latency_p99_ms=1.49)
    out = group_commit_analysis.with_intervals(tp, samples).set_index("variant")
    steady, halving = out.loc["steady"], out.loc["halving"]
    assert steady["batches"] == 5
    assert steady["rows_per_s_ci_low"] <= 1000 <= steady["rows_per_s_ci_high"]
    assert steady["rows_per_s_ci_high"] - steady["rows_per_s_ci_low"] < 50
    assert halving["rows_per_s_ci_high"] - halving["rows_per_s_ci_low"] > 300
    assert steady["latency_median_ms_ci_low"] <= 1.0 <= steady["latency_median_ms_ci_high"]
    assert 1.4 < steady["latency_p99_ms_ci_low"] <= steady["latency_p99_ms_ci_high"] <= 1.5
    fig = group_commit_analysis.plot_latency(out.reset_index())
    bars = [c for c in fig.axes[0].collections if isinstance(c, matplotlib.collections.LineCollection)]
    assert len(bars) == 2  # one error bar set per variant
    segments = np.concatenate([b.get_segments() for b in bars])
    assert segments[:, :, 1].min() == pytest.approx(min(out["latency_median_ms_ci_low"]))
    plt.close("all")


def test_validate_bounds_the_clients_by_the_engine_s_connections():
    assert group_commit.validate("postgres").clients == (1, 4)
    with pytest.raises(ConfigError, match=r"CLIENTS=0 is not valid: expected an integer from 1 to \d+ \(MAX_CLIENTS"):
        group_commit.validate("postgres", clients="0")


def test_the_comparison_with_the_study_takes_each_engine_s_batching_once_in_its_default_variant():
    """A row per variant (eleven at the paper scale) made the figure 21 rows of two-line labels, over the page."""
    batching = pd.DataFrame({"engine": ["postgres", "postgres", "mariadb", "mariadb", "galera"],
                             "variant": ["sync_off", "default", "binlog", "default", "flush_2"],
                             "clients": 1, "rows_per_insert": 100, "baseline_rows_per_insert": 1,
                             "speedup": [30.0, 25.0, 6.0, 28.0, 40.0], "ci_low": 1.0, "ci_high": 50.0})
    speedup = pd.DataFrame(columns=["engine", "variant", "baseline", "clients", "rows_per_insert", "speedup",
                                    "ci_low", "ci_high"])
    live = group_commit_analysis.live_vs_published(speedup, batching)
    live = live[live["source"] == "live (this run)"]
    assert list(live["quantity"]) == ["postgres default: 100 rows per INSERT over 1, 1 client",
                                      "mariadb default: 100 rows per INSERT over 1, 1 client",
                                      "galera flush_2: 100 rows per INSERT over 1, 1 client"]
    assert list(live["speedup"]) == [25.0, 28.0, 40.0]


def test_the_comparison_with_the_study_takes_each_engine_s_best_grouping_variant_once():
    """Four engines' variants each a row made 04's paper figure 21 rows, their two-line labels over one another."""
    speedup = pd.DataFrame({"engine": ["postgres", "postgres", "mariadb", "galera", "mariadb"],
                            "variant": ["sync_off", "commit_delay_10", "binlog", "default", "flush_2"],
                            "baseline": ["default", "default", "binlog_wait_8", "flush_2", "binlog_wait_8"],
                            "clients": 32, "rows_per_insert": 1, "speedup": [2.4, 1.0, 1.3, 0.66, 1.9],
                            "ci_low": 0.5, "ci_high": 3.0})
    batching = speedup.iloc[:0].assign(baseline_rows_per_insert=[])
    live = group_commit_analysis.live_vs_published(speedup, batching)
    live = live[live["source"] == "live (this run)"]
    assert list(live["quantity"].str.split(",").str[0]) == ["postgres sync_off over default", "galera default over flush_2",
                                                            "mariadb flush_2 over binlog_wait_8"]
    assert list(live["speedup"]) == [2.4, 0.66, 1.9]
