import os

import numpy as np
import pandas as pd
import pytest

from ingestlab import cgroupfs, cgroups, datagen
from ingestlab.errors import ConfigError, PreflightError
from ingestlab.results import Run
from ingestlab.workloads import upsert
from ingestlab.workloads import upsert_analysis as analysis


@pytest.mark.parametrize("kwargs, name", [
    ({"engines": "postgres,oracle"}, "ENGINES"),
    ({"engines": ""}, "ENGINES"),
    ({"scale": "huge"}, "SCALE"),
    ({"disk_profile": "nvme"}, "DISK_PROFILE"),
    ({"batch_rows": 3}, "BATCH_ROWS"),
    ({"batch_rows": "many"}, "BATCH_ROWS"),
    ({"batches": 0}, "BATCHES"),
    ({"new_keys": "reverse"}, "NEW_KEYS"),
    ({"memory_limit": "ulimit"}, "MEMORY_LIMIT"),
    ({"memory_budget_mb": 0}, "MEMORY_BUDGET_MB"),
    ({"memory_budget_mb": 1}, "MEMORY_BUDGET_MB"),
    ({"dataset_multiple": -1}, "DATASET_MULTIPLE"),
    ({"dataset_multiple": "big"}, "DATASET_MULTIPLE"),
    ({"seed": -3}, "SEED"),
    ({"seed": 1.5}, "SEED"),
    ({"batches": 500}, "BATCHES"),  # more keys to overwrite than the data set holds
])
def test_bad_parameters_name_themselves_before_anything_starts(kwargs, name, tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    with pytest.raises(ConfigError) as err:
        upsert.validate(**kwargs)
    assert err.value.name == name and "expected" in str(err.value)
    assert not (tmp_path / "lab").exists()


def test_paper_scale_is_the_seeds_batch_on_ten_times_the_budget():
    p = upsert.validate(scale="paper", seed=0)
    assert p.batch_rows == 10_000 and p.batch_sizes == (2500, 5000, 10_000)
    assert p.dataset_bytes >= 10 * p.budget_bytes
    assert upsert.validate(scale="paper", batch_rows=400, seed=0).batch_sizes == (100, 200, 400)


def test_without_a_seed_every_run_draws_new_keys():
    a, b = upsert.validate(), upsert.validate()
    assert a.seed_source == "clock" and a.seed != b.seed
    assert not np.array_equal(upsert.key_plan(a).existing["overwrite"], upsert.key_plan(b).existing["overwrite"])
    assert upsert.validate(seed=4).seed_source == "given"


def test_a_resumed_run_draws_no_new_seed_but_takes_the_interrupted_runs(tmp_path, monkeypatch):
    import json

    from ingestlab import checkpoints

    interrupted = upsert.validate()
    (tmp_path / "run.json").write_text(json.dumps({"parameters": interrupted.as_dict()}))
    monkeypatch.setenv(checkpoints.RESUME_ENV, str(tmp_path))
    resumed = upsert.validate()
    assert resumed.seed == interrupted.seed and resumed.seed_source == "clock"
    assert np.array_equal(upsert.key_plan(resumed).existing["overwrite"],
                          upsert.key_plan(interrupted).existing["overwrite"])
    assert upsert.validate(seed=4).seed == 4  # a seed given is the seed used
    assert checkpoints.same_parameters(interrupted.as_dict(), resumed.as_dict()) == []
    (tmp_path / "run.json").write_text(json.dumps({"parameters": {**interrupted.as_dict(), "seed_source": "given"}}))
    assert upsert.validate().seed != interrupted.seed  # only a drawn seed is taken over


@pytest.mark.parametrize("new_keys", ["sequential", "random"])
def test_key_plan_writes_new_keys_and_overwrites_each_existing_key_once(new_keys):
    p = upsert.validate(new_keys=new_keys, seed=9)
    plan = upsert.key_plan(p)
    existing = set(range(0, 2 * p.dataset_rows, 2))
    over, blind = plan.existing["overwrite"], plan.existing["blind_overwrite"]
    for keys in (plan.new, over, blind):
        assert len(keys) == p.rows_per_operation() and len(set(keys.tolist())) == len(keys)
    assert set(over.tolist()) <= existing and set(blind.tolist()) <= existing
    assert not set(over.tolist()) & set(blind.tolist())
    assert not set(plan.new.tolist()) & existing
    if new_keys == "sequential":
        assert np.all(np.diff(plan.new) == 2) and plan.new[0] == 2 * p.dataset_rows
    else:
        assert plan.new.max() < 2 * p.dataset_rows  # between the existing keys


def test_schedule_has_one_flagged_warmup_then_every_size_each_round():
    p = upsert.validate(batch_rows=40, batches=3, seed=0)
    schedule = upsert.batch_schedule(p)
    assert schedule[0] == (-1, True, 10)
    measured = [rows for _, warm, rows in schedule if not warm]
    assert sorted(measured) == sorted([10, 20, 40] * 3)
    assert [no for no, warm, _ in schedule if not warm] == list(range(9))


def _tiny(engines, profile="local", **kw):
    kw = {"batch_rows": 16, "batches": 2, "memory_budget_mb": 2, "dataset_multiple": 1, "seed": 21, **kw}
    return upsert.validate(engines, "smoke", profile, **kw)


def test_measure_writes_what_it_says_and_keeps_every_batch(tmp_path):
    p = _tiny("postgres,rocksdb")
    run = Run(upsert.NOTEBOOK, p.as_dict(), tmp_path / "run")
    data = upsert.measure(p, run, progress=False)
    s, checks = data["samples"], data["checks"]
    assert checks["ok"].all()
    assert checks.set_index(["engine", "phase"])["counted_keys"].to_dict() == {
        ("postgres", "load"): p.dataset_rows, ("postgres", "insert"): p.dataset_rows + p.rows_per_operation(),
        ("postgres", "overwrite"): p.dataset_rows + p.rows_per_operation(),
        ("rocksdb", "load"): p.dataset_rows, ("rocksdb", "insert"): p.dataset_rows + p.rows_per_operation(),
        ("rocksdb", "overwrite"): p.dataset_rows + p.rows_per_operation(),
        ("rocksdb", "blind_overwrite"): p.dataset_rows + p.rows_per_operation()}
    per_op = s.groupby(["engine", "operation"]).agg(batches=("rows", "size"), rows=("rows", "sum"),
                                                     warm=("warmup", "sum"))
    assert (per_op["batches"] == len(upsert.batch_schedule(p))).all()
    assert (per_op["rows"] == p.rows_per_operation()).all() and (per_op["warm"] == 1).all()
    rocks_over = s[(s["engine"] == "rocksdb") & (s["operation"] == "overwrite")]
    assert (rocks_over["keys_found"] == rocks_over["rows"]).all()  # every overwritten key existed
    assert (s["elapsed_s"] > 0).all() and set(s["disk_profile"]) == {"local"}
    assert {"dev_read_ios", "engine_blocks_read", "read_iops", "blocks_read_per_row"} <= set(s.columns)
    assert len(run.table()) == len(s) and len(run.table("loads")) == 2
    loads = data["loads"].set_index("engine")
    assert (loads["payload_multiple"] >= 1).all() and (loads["disk_bytes"] > 0).all()
    engines = {e["engine"]: e for e in run.meta["engines"]}
    assert engines["rocksdb"]["settings"]["use_direct_reads"] == "true"
    assert engines["rocksdb"]["memory_budget"]["limit"] == "engine"  # in-process: no memory cgroup
    assert any("rocksdb: MEMORY_LIMIT='cgroup' does not apply" in note for note in run.meta["notes"])
    memory = data["memory"].set_index("engine")
    assert memory.loc["rocksdb", "engine_cache_bytes"] == p.budget_bytes
    capped = "cgroup" if cgroups.memory_unavailable_reason() is None else "engine"
    assert s.groupby("engine")["memory_limit"].unique().map(list).to_dict() == {"postgres": [capped],
                                                                                "rocksdb": ["engine"]}


@pytest.mark.skipif(cgroups.memory_unavailable_reason() is not None,
                    reason=f"no memory cgroup: {cgroups.memory_unavailable_reason()}")
def test_under_a_memory_cap_the_page_cache_stays_within_the_budget(tmp_path):
    p = _tiny("postgres", memory_budget_mb=8, dataset_multiple=4, seed=31)
    run = Run(upsert.NOTEBOOK, p.as_dict(), tmp_path / "run")
    data = upsert.measure(p, run, progress=False)
    memory = data["memory"].iloc[0]
    assert memory["memory_limit"] == "cgroup" and memory["engine_cache_bytes"] == p.budget_bytes // 4
    assert memory["cgroup_version"] == cgroupfs.locate("memory")[0].VERSION
    assert memory["limit_bytes"] == memory["held_bytes"] + max(upsert.MIN_FREE_BYTES, p.budget_bytes * 3 // 4)
    assert memory["page_cache_before_bytes"] > p.budget_bytes  # the load left more cached than the cap allows
    settings = run.meta["engines"][0]["settings"]
    assert settings["shared_buffers"] == "2MB" and "debug_io_direct" not in settings  # buffered I/O
    s = data["samples"]
    page_cache_cap = memory["limit_bytes"] - memory["held_bytes"]
    assert (s["mem_page_cache_bytes"] <= page_cache_cap + 2**20).all()
    assert (s["mem_peak_bytes"] <= memory["limit_bytes"] + 2**16).all()
    over = s[(s["operation"] == "overwrite") & ~s["warmup"]]
    assert over["engine_blocks_read"].sum() >= over["rows"].sum() / 2  # the old rows were not in shared_buffers
    assert data["checks"]["ok"].all()
    assert not any((root / f"{cgroups.PREFIX}{os.getpid()}").exists() for root in cgroupfs.roots())


def test_a_run_that_fails_mid_operation_keeps_its_load_and_leaves_no_server_or_cgroup(tmp_path, monkeypatch):
    from ingestlab.servers.base import is_running

    servers = []

    def fail(engine, *args, **kwargs):
        servers.append(engine.server.pid())
        raise KeyboardInterrupt  # as Ctrl-C inside a timed batch

    monkeypatch.setattr(upsert, "_run_operation", fail)
    p = _tiny("postgres,rocksdb", "cloud-375", seed=35)
    run = Run(upsert.NOTEBOOK, p.as_dict(), tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        upsert.measure(p, run, progress=False)
    assert len(run.table("loads")) == 1 and run.table("checks")["ok"].all()  # postgres loaded and checked
    assert not run.meta["completed"]
    assert servers and not any(is_running(pid) for pid in servers)
    for root in cgroupfs.roots():
        assert not (root / f"{cgroups.PREFIX}{os.getpid()}").exists()


def test_where_a_memory_cap_is_impossible_the_engine_limits_itself_and_says_why(tmp_path, monkeypatch):
    (tmp_path / "mountinfo").write_text("22 27 0:21 / /sys rw,relatime shared:2 - sysfs sysfs rw\n")
    monkeypatch.setattr(cgroupfs, "MOUNTINFO", tmp_path / "mountinfo")  # no cgroup mounted
    p = _tiny("postgres", seed=33)
    run = Run(upsert.NOTEBOOK, p.as_dict(), tmp_path / "run")
    with pytest.warns(UserWarning, match="MEMORY_LIMIT='cgroup' could not be applied"):
        data = upsert.measure(p, run, progress=False)
    assert set(data["samples"]["memory_limit"]) == {"engine"}
    assert run.meta["engines"][0]["settings"]["debug_io_direct"] == "data"
    assert run.meta["engines"][0]["memory_budget"]["limit_requested"] == "cgroup"
    assert any("no cgroup hierarchy offers memory" in note for note in run.meta["notes"])


def test_tables_of_a_run_have_the_published_columns(tmp_path):
    p = _tiny("rocksdb", seed=5)
    s = upsert.measure(p, Run(upsert.NOTEBOOK, p.as_dict(), tmp_path / "run"), progress=False)["samples"]
    stats = analysis.statistics(s, p.batch_rows)
    assert list(stats.columns[:12]) == ["engine", "operation", "disk_profile", "batches", "batch_rows", "min_ms",
                                        "median_ms", "mean_ms", "p90_ms", "p99_ms", "max_ms", "read_iops"]
    assert (stats["batches"] == p.batches).all() and len(stats) == 3
    fits = analysis.fit(s, p.batch_rows)
    assert {"variant", "overhead_ms", "overhead_ci_low_ms", "per_row_us", "per_row_ci_low_us", "r2",
            "n_points"} <= set(fits.columns)
    ratios = analysis.ratios(s, p.batch_rows)
    assert set(ratios["operation"]) == {"overwrite", "blind_overwrite"}
    comparison = analysis.live_vs_published(ratios, stats)
    assert comparison["published"].notna().any() and comparison["live"].notna().all()


@pytest.mark.skipif(cgroups.unavailable_reason() is not None, reason=f"no blkio: {cgroups.unavailable_reason()}")
def test_a_throttled_run_is_labelled_and_leaves_no_cgroup(tmp_path):
    p = _tiny("rocksdb", "cloud-375", seed=6)
    data = upsert.measure(p, Run(upsert.NOTEBOOK, p.as_dict(), tmp_path / "run"), progress=False)
    assert set(data["samples"]["disk_profile"]) == {"cloud-375"}
    throttled = data["checks"][data["checks"]["phase"] != "load"]
    assert throttled["throttled"].all() and throttled["cgroup"].str.contains("ingestlab-").all()
    assert "cgroup_read_ios" in data["samples"].columns
    assert not any((root / f"{cgroups.PREFIX}{os.getpid()}").exists() for root in cgroupfs.roots())  # others' may be live


def test_where_throttling_is_impossible_the_run_goes_on_as_local_and_says_why(tmp_path, monkeypatch):
    (tmp_path / "mountinfo").write_text("22 27 0:21 / /sys rw,relatime shared:2 - sysfs sysfs rw\n")
    monkeypatch.setattr(cgroupfs, "MOUNTINFO", tmp_path / "mountinfo")  # no cgroup mounted
    p = _tiny("rocksdb", "cloud-375", seed=8)
    run = Run(upsert.NOTEBOOK, p.as_dict(), tmp_path / "run")
    with pytest.warns(UserWarning, match="could not be applied"):
        data = upsert.measure(p, run, progress=False)
    assert set(data["samples"]["disk_profile"]) == {"local"}
    assert set(data["samples"]["disk_profile_requested"]) == {"cloud-375"}
    checks = data["checks"][data["checks"]["phase"] != "load"]
    assert not checks["throttled"].any() and checks["throttle_reason"].str.contains("no cgroup hierarchy offers io").all()
    assert any("labelled 'local'" in note for note in run.meta["notes"])


def test_statistics_are_the_seeds_over_full_batches_only():
    ms = [100.0, 200.0, 300.0, 400.0]
    s = pd.DataFrame({**dict.fromkeys(upsert.SAMPLE_COLUMNS, np.nan), "engine": "e", "operation": "insert",
                      "disk_profile": "local", "memory_limit": "engine", "warmup": [True] + [False] * 5,
                      "rows": [10, 10, 10, 10, 10, 5], "elapsed_s": [9.0] + [m / 1e3 for m in ms] + [0.001],
                      "dev_read_ios": [0, 1, 1, 1, 1, 0], "disk_read_ios": [0, 1, 1, 1, 1, 0],
                      "disk_read_bytes": [0, 4096, 4096, 4096, 4096, 0], "dev_write_ios": 0,
                      "engine_blocks_read": 0.0})
    row = analysis.statistics(s, 10).iloc[0]
    assert np.isnan(row["cgroup_read_iops"]) and np.isnan(row["page_cache_mb"])  # not measured: NaN, not 0
    assert row["batches"] == 4 and row["min_ms"] == 100 and row["max_ms"] == 400
    assert row["median_ms"] == 250 and row["mean_ms"] == 250 and row["p90_ms"] == pytest.approx(370)
    assert row["read_iops"] == pytest.approx(4 / 1.0) and row["read_mb_s"] == pytest.approx(4 * 4096 / 1e6)


def test_fit_recovers_a_known_overhead_and_per_row_cost():
    rng = np.random.default_rng(3)
    rows = np.repeat([250, 500, 1000], 6)
    s = pd.DataFrame({"engine": "e", "operation": "overwrite", "disk_profile": "local", "warmup": False,
                      "rows": rows, "elapsed_s": 0.040 + rows * 2.5e-3 + rng.normal(0, 0.01, len(rows))})
    ols = analysis.fit(s, 1000).query("method == 'ols'").iloc[0]
    assert ols["overhead_ci_low_ms"] <= 40 <= ols["overhead_ci_high_ms"]
    assert ols["per_row_ci_low_us"] <= 2500 <= ols["per_row_ci_high_us"]
    assert ols["write_time_s"] == pytest.approx(2.5, rel=0.02)


def test_published_ratios_are_the_seeds_15x_and_281x():
    pub = analysis.published_statistics().set_index(["engine", "operation"])
    arango = pub.loc[("ArangoDB 3.4 (seed)", "overwrite"), "mean_ms"] / pub.loc[("ArangoDB 3.4 (seed)", "insert"), "mean_ms"]
    pg = pub.loc[("PostgreSQL 9.6 (seed)", "overwrite"), "mean_ms"] / pub.loc[("PostgreSQL 9.6 (seed)", "insert"), "mean_ms"]
    assert round(arango) == 15 and round(pg) == 281
    assert datagen.DOC_BYTES == pytest.approx(1200, abs=5)


def test_server_urls_are_accepted_beside_local_engines_without_engine_names_in_the_check():
    p = upsert.validate("postgres,arangodb://root@127.0.0.1:8529/_system,yugabytedb://yugabyte@127.0.0.1:5433/yugabyte",
                        seed=1, reach=False)
    assert [spec.name for spec in p.engines] == ["postgres", "arangodb", "yugabytedb"]
    assert p.as_dict()["engines"][1].startswith("arangodb://") and p.engines[2].value.startswith("yugabytedb://")


def test_a_url_is_eligible_only_for_an_engine_with_upsert_operations():
    with pytest.raises(ConfigError, match="upsert operations") as err:
        upsert.validate("starrocks://root:pw@127.0.0.1:9030/db", reach=False)
    assert err.value.name == "ENGINES" and "pw@" not in str(err.value)


def test_a_listening_server_passes_the_reachability_check_and_a_closed_port_fails_it():
    import socket

    with socket.socket() as listener:  # a TCP port that accepts; nothing is sent to it
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert upsert.validate(f"arangodb://root@127.0.0.1:{port}/_system", seed=1).engines
    with pytest.raises(PreflightError, match=r"cannot reach arangodb://u:\*\*\*@127.0.0.1:1/db"):
        upsert.validate("arangodb://u:pw@127.0.0.1:1/db")


def test_the_batch_model_predicts_the_full_batches_from_the_smaller_ones_and_carries_its_adequacy():
    rng = np.random.default_rng(3)
    rows = [{"engine": "rocksdb", "operation": "insert", "disk_profile": "local", "warmup": False, "rows": n,
             "elapsed_s": (0.002 + 5e-6 * n) * rng.lognormal(0, 0.02)} for n in (250, 500, 1000) for _ in range(6)]
    samples = pd.DataFrame(rows)
    table = analysis.prediction(samples)
    assert table[["rows", "batches"]].values.tolist() == [[1000, 6]] and table["inside"].all()
    assert table["predicted_s"].iloc[0] == pytest.approx(0.007, rel=0.05)
    fits = analysis.fit(samples, 1000)
    assert set(fits["adequacy_test"]) == {"pure_error_f"} and fits["model_holds"].all()


def test_the_reads_figure_of_one_engine_keeps_its_panels_readable():
    """`-p ENGINES postgres`: the figure was 3.3 in tall for two panels, each 0.7 in under its labels and legend."""
    import matplotlib.pyplot as plt

    from ingestlab import figure_checks, figures

    reads = pd.DataFrame({"engine": "postgres", "operation": ["overwrite", "overwrite", "insert_new", "insert_new"],
                          "counter": ["engine", "block device"] * 2, "per_row": [0.8, 1.1, 0.2, 0.3]})
    full = pd.DataFrame({"engine": "postgres", "operation": ["overwrite", "insert_new"] * 5,
                         "cgroup_read_iops": np.nan, "read_iops": np.linspace(100, 900, 10)})
    with plt.rc_context():
        figures.use_article_theme()
        fig = analysis.plot_reads(full, reads, None)
        try:
            assert figure_checks.grammar_problems(fig) == []
        finally:
            plt.close(fig)


def test_validate_derives_the_batch_sizes_and_the_data_set_from_the_scale():
    params = upsert.validate("postgres", "smoke", seed=1)
    assert (params.batch_sizes, params.dataset_rows) == ((50, 100, 200), 27986)
    with pytest.raises(ConfigError, match=r"BATCH_ROWS=2 is not valid: expected an integer ≥ 4"):
        upsert.validate("postgres", batch_rows=2)


def test_the_key_plan_writes_new_keys_beyond_the_loaded_ones_and_overwrites_disjoint_existing_ones():
    plan = upsert.key_plan(upsert.validate("postgres", "smoke", seed=3))
    assert plan.new.min() == 2 * 27986
    assert not set(plan.existing["overwrite"]) & set(plan.existing["blind_overwrite"])


def test_the_batch_schedule_warms_up_then_rotates_the_sizes_round_by_round():
    schedule = upsert.batch_schedule(upsert.validate("postgres", batch_rows=8, batches=2, seed=0))
    assert [r for _, _, r in schedule] == [2, 2, 4, 8, 4, 8, 2]
    assert [w for _, w, _ in schedule] == [True] + [False] * 6
