import numpy as np
import pandas as pd
import pytest

from ingestlab import engines, intervals, models
from ingestlab.engine_specs import parse_engines
from ingestlab.engines import Engine, capabilities
from ingestlab.engines.mariadb import MariaDB
from ingestlab.engines.mysql import MySQL
from ingestlab.engines.postgres import Postgres, Postgres15
from ingestlab.engines.postgres.capabilities import PostgresBulkLoad
from ingestlab.engines.yugabytedb import YugabyteDB
from ingestlab.errors import ConfigError, DataLossError
from ingestlab.results import Run
from ingestlab.workloads import million, million_analysis
from tests.engines._support import parse_sql, table_names

LOCAL = [name for name in ("postgres", "postgres15", "mariadb")]


@pytest.mark.parametrize("kwargs, name", [
    ({"engines": "oracle"}, "ENGINES"),
    ({"engines": ""}, "ENGINES"),
    ({"scale": "huge"}, "SCALE"),
    ({"rows": 0}, "ROWS"),
    ({"repeats": 0}, "REPEATS"),
    ({"batch_rows": 0}, "BATCH_ROWS"),
    ({"batch_rows": "100,many"}, "BATCH_ROWS"),
    ({"batch_rows": "100,1000,100"}, "BATCH_ROWS"),
    ({"batch_rows": ""}, "BATCH_ROWS"),
    ({"rows": 500, "batch_rows": "100,1000"}, "BATCH_ROWS"),
    ({"rows": 100_000, "batch_rows": [100, 20_000]}, "BATCH_ROWS"),
    ({"bulk_statements": "0,10"}, "BULK_STATEMENTS"),
    ({"bulk_statements": [1.5]}, "BULK_STATEMENTS"),
    ({"rows": 50, "batch_rows": 10, "bulk_statements": "1,100"}, "BULK_STATEMENTS"),
    ({"methods": "bulk,teleport"}, "METHODS"),
    ({"settings": "default,turbo"}, "SETTINGS"),
    ({"engines": "mariadb", "settings": "copy_freeze"}, "SETTINGS"),
    ({"versions": "newest"}, "VERSIONS"),
])
def test_bad_parameters_fail_before_anything_starts(kwargs, name, monkeypatch):
    monkeypatch.setattr(Engine, "start", lambda self: pytest.fail("an engine started"))
    with pytest.raises(ConfigError) as err:
        million.validate(**{"engines": "postgres", **kwargs})
    assert err.value.args[0].startswith(name)


def test_list_parameters_take_lists_or_comma_separated_text_and_default_to_three_sizes_each():
    assert million.validate("postgres", batch_rows=" 1000, 100", bulk_statements=[10, 1]).batch_rows == (100, 1000)
    assert million.validate("postgres", bulk_statements="10,1").bulk_statements == (1, 10)
    for scale in million.SCALES:
        params = million.validate("postgres", scale)
        assert (params.batch_rows, params.bulk_statements) == ((100, 1000, 10_000), (1, 10, 100))


def test_settings_of_any_selected_engine_are_accepted_and_versions_expand():
    params = million.validate("postgres,mariadb", settings="copy_freeze,no_unique_checks")
    assert params.settings == ("copy_freeze", "no_unique_checks")
    assert million._expand(params.engines, "all") == list(parse_engines("postgres,postgres15,mariadb"))
    assert million._expand(parse_engines("postgres"), "default") == list(parse_engines("postgres"))
    url = parse_engines("postgresql://u@h/db")
    assert million._expand(url, "all") == list(url)  # a server given by URL is the version it runs
    assert million.validate("postgres", "paper").repeats == 5


def test_every_method_is_labelled_with_its_statements_and_commits():
    n = 1_000_000
    got = {m: million.counts(m, n, 1000) for m in million.METHODS}
    assert got == {"generate": (1, 1), "bulk": (1, 1), "native_client": (1, 1), "batches": (1000, 1000),
                   "pipeline": (n, 1), "executemany": (n, 1), "autocommit": (n, n)}


@pytest.mark.parametrize("method, rows, kwargs, expected", [
    ("batches", 10_000, {"batch_rows": 100}, (100, 100)),
    ("batches", 10_000, {"batch_rows": 10_000}, (1, 1)),
    ("batches", 1_000, {"batch_rows": 10_000}, (1, 1)),  # a warm-up smaller than one batch
    ("batches", 300, {"batch_rows": 200}, (2, 2)),
    ("bulk", 10_000, {"bulk_statements": 100}, (100, 100)),
    ("bulk", 20, {"bulk_statements": 100}, (20, 20)),  # a slice holds at least one row
    ("autocommit", 10_000, {"batch_rows": 100, "bulk_statements": 10}, (10_000, 10_000)),
    ("generate", 10_000, {"batch_rows": 100, "bulk_statements": 10}, (1, 1)),
])
def test_statements_and_commits_follow_the_rows_per_insert_and_the_bulk_statements(method, rows, kwargs, expected):
    assert million.counts(method, rows, **kwargs) == expected


def test_a_round_runs_batches_per_batch_size_and_bulk_per_statement_count_each_with_its_own_name_and_path():
    loads = million.configurations(list(million.METHODS), (100, 1000), (1, 10, 100))
    assert [m for m, _, _ in loads] == ["generate", "bulk", "bulk", "bulk", "native_client", "batches", "batches",
                                       "pipeline", "executemany", "autocommit"]
    names = [million.load_name(*load) for load in loads]
    assert len(set(names)) == len(names)
    assert {million.PATHS[m] for m in ("batches", "autocommit")} == {"insert_values"}
    assert million.PATHS["bulk"] == "bulk" and set(million.FIT_PATHS) == {"insert_values", "bulk"}
    assert not {million.PATHS[m] for m in ("generate", "native_client", "pipeline", "executemany")} & set(
        million.FIT_PATHS)


@pytest.mark.parametrize("cls", [Postgres, YugabyteDB, MariaDB, MySQL])
def test_generated_rows_sql_parses_in_the_engines_dialect(cls):
    sql = cls.__new__(cls).sql.generate_rows_sql("demo", million.COLUMN_NAMES, 1_000_000)
    tree = parse_sql(sql, cls.WIRE.sqlglot_dialect)
    assert tree.key == "insert"
    assert "demo" in table_names(tree)
    assert "1000000" in sql


def test_yugabytedb_settings_are_session_settings_the_adapter_allows():
    for name, setting in capabilities.of(YugabyteDB, "load_settings").SETTINGS.items():
        assert set(setting.server) <= YugabyteDB.SESSION_SETTINGS, name
    assert capabilities.of(YugabyteDB, "load_settings").SETTINGS["packed_row"].server_flags == {"ysql_enable_packed_row": "true"}
    assert YugabyteDB.has("pipeline") and not MariaDB.has("pipeline")


def _loads(costs: dict[str, tuple], *, n: int = 100_000, repeats: int = 5, seed: int = 0) -> pd.DataFrame:
    """Synthetic loads of ``n`` rows: path → (statement counts, seconds as a function of statements)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"system": "x 1", "setting": "default", "path": path, "method": path, "rows": n,
                          "statements": k, "seconds": seconds(k) * rng.normal(1, 0.02), "warmup": False}
                         for path, (levels, seconds) in costs.items() for k in levels for _ in range(repeats)])


def test_each_path_is_fitted_apart_and_recovers_its_own_overhead_and_per_row_cost_within_ci():
    n = 100_000
    truth = {"insert_values": (80e-6, 4e-6), "bulk": (400e-6, 1e-6)}
    loads = _loads({"insert_values": ([n, 1000, 100, 10], lambda k: k * 80e-6 + n * 4e-6),
                    "bulk": ([1, 10, 100], lambda k: k * 400e-6 + n * 1e-6),
                    "server": ([1], lambda k: 0.1), "one_transaction": ([n], lambda k: 2.0)})
    fits = million_analysis.fit(loads).set_index("path")
    assert sorted(fits.index) == ["bulk", "insert_values"] and (fits["method"] == "ols").all()
    for path, (overhead_s, per_row_s) in truth.items():
        f = fits.loc[path]
        assert f["overhead_ci_low_ms"] <= overhead_s * 1e3 <= f["overhead_ci_high_ms"], path
        assert f["per_row_ci_low_us"] <= per_row_s * 1e6 <= f["per_row_ci_high_us"], path
    assert fits.loc["insert_values", "n_points"] == 20 and fits.loc["bulk", "n_points"] == 15
    long = million_analysis.tidy_fits(fits.reset_index())
    assert set(long["model"]) == {"overhead path=insert_values", "overhead path=bulk"}
    assert list(long.columns) == models.TIDY_COLUMNS


def test_an_overhead_is_given_only_by_a_line_that_holds_and_a_rejected_one_says_why():
    n = 100_000  # the INSERT path's statement cost grows with the statements: a straight line is wrong there
    loads = _loads({"insert_values": ([n, 10_000, 1000, 100, 10], lambda k: k * 80e-6 * (1 + np.log10(k)) + 0.5),
                    "bulk": ([1, 10, 100], lambda k: k * 400e-6 + 0.1)})
    fits = million_analysis.fit(loads)
    holds = dict(zip(fits["path"], fits["model_holds"]))
    assert holds == {"insert_values": False, "bulk": True}
    head = million_analysis.headline(pd.DataFrame(columns=["system", "setting", "load", "rows_per_s"]), fits,
                                     pd.DataFrame(columns=["system", "disk_share", "bulk_over_native"]))
    assert list(head) == ["overhead_us[x 1|default|bulk]"]
    text = million_analysis.describe_fit(fits)
    rejected = next(line for line in text if "INSERT" in line)
    assert "rejected" in rejected and "lack of fit" in rejected and "µs" not in rejected
    assert text[-1].startswith("The line holds for 1 of 2")


def test_the_headline_skips_untested_and_two_point_fits():
    fits = pd.DataFrame({"system": "x 1", "setting": ["a", "b", "c", "d"], "path": "bulk",
                         "method": ["ols", "ols", "two_point", "ols"], "overhead_ms": [0.1, 0.2, 0.3, 0.4],
                         "overhead_ci_low_ms": [0.05, 0.1, 0.2, 0.3], "overhead_ci_high_ms": [0.15, 0.3, 0.4, 0.5],
                         "model_holds": [True, None, True, "False"]})
    head = million_analysis.headline(pd.DataFrame(columns=["system", "setting", "load", "rows_per_s"]), fits,
                                     pd.DataFrame(columns=["system", "disk_share", "bulk_over_native"]))
    assert head == {"overhead_us[x 1|a|bulk]": pytest.approx([100.0, 50.0, 150.0])}  # with its CI


def test_the_held_out_batches_are_predicted_from_the_other_insert_loads():
    n = 100_000
    loads = _loads({"insert_values": ([n, 1000, 100, 10], lambda k: k * 80e-6 + 0.4)}, n=n)
    loads["method"] = np.where(loads["statements"] == n, "autocommit", "batches")
    loads["batch_rows"] = n // loads["statements"]
    loads["load"] = [million.load_name(m, b) for m, b in zip(loads["method"], loads["batch_rows"])]
    table = million_analysis.prediction(loads)
    assert len(table) == 1 and table["load"].iloc[0] == "batches of 1000 rows" and table["statements"].iloc[0] == 100
    r = table.iloc[0]
    assert r["pi_low_s"] < 100 * 80e-6 + 0.4 < r["pi_high_s"] and r["inside"] and r["runs"] == 5
    off = million_analysis.prediction(loads.assign(seconds=np.where(loads["statements"] == 100, loads["seconds"] * 2,
                                                                     loads["seconds"])))
    assert not off["inside"].iloc[0]  # twice the time is outside the interval
    middle = million_analysis.prediction(loads[loads["batch_rows"] != 1000])  # no 1 000-row batches: the middle size
    assert middle["load"].tolist() == ["batches of 10000 rows"]
    assert "foresaw" in million_analysis.describe_prediction(table)[-1]


def test_median_ci_reaches_its_stated_confidence():
    r = intervals.median_ci_exact([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (r["median"], r["ci_low"], r["ci_high"]) == (3.0, 1.0, 5.0)
    assert r["confidence"] == pytest.approx(1 - 2 / 32)


def _measure(tmp_path, targets, versions="default", **kwargs):
    params = million.validate(targets, "smoke", **{"rows": 300, "repeats": 1, "warmup_rows": 20,
                                                   "batch_rows": "10,100,300", "versions": versions, **kwargs})
    run = Run("05_million_rows", params.as_dict(), tmp_path / "run")
    return million.measure(params, run), run


@pytest.mark.parametrize("name", LOCAL)
def test_smoke_run_loads_every_row_by_every_method_and_setting(name, tmp_path):
    reason = engines.class_of(name).unavailable_reason()
    if reason:
        pytest.skip(reason)
    data, run = _measure(tmp_path, name)
    loads = data["loads"]
    cls = engines.class_of(name)
    assert set(loads["setting"]) == set(capabilities.of(cls, "load_settings").SETTINGS)
    measured = loads[~loads["warmup"]]
    assert (measured["rows_counted"] == 300).all() and (loads["rows_counted"] == loads["rows"]).all()
    methods = {m for m in million.METHODS if cls.has(million.METHODS[m][0])}
    default = measured[measured["setting"] == "default"]
    assert set(default["method"]) == methods and default["load"].is_unique
    assert sorted(default.loc[default["method"] == "batches", "statements"]) == [1, 3, 30]
    assert sorted(default.loc[default["method"] == "bulk", "statements"]) == [1, 10, 100]
    assert (default.set_index("load")["batch_rows"].reindex(["batches of 10 rows", "bulk load in 100 statements",
                                                             "autocommit", "generate"]) == [10, 3, 1, 300]).all()
    assert (measured["table_bytes"] > 0).all() and (measured["seconds"] > 0).all()
    keyed_later = measured[measured["setting"] == "key_after_load"]
    assert (keyed_later["add_key_s"] > 0).all()
    assert measured["version"].nunique() == 1 and (data["disk"]["mb_per_s"] > 0).all()
    table = million_analysis.medians(loads)
    assert (table["warmup_n"] == 1).all()
    assert not million_analysis.physical(loads, data["disk"]).empty
    assert run.meta["engines"][0]["setting"] == "default"
    fits = million_analysis.fit(loads)  # one line per setting and path, each over its own loads only
    paths = {(s, million.PATHS[m]) for s, m in zip(measured["setting"], measured["method"])}
    assert set(zip(fits["setting"], fits["path"])) == {p for p in paths if p[1] in million.FIT_PATHS}
    frozen = {n for n, s in capabilities.of(cls, "load_settings").SETTINGS.items() if s.create_in_load}  # its bulk load: one statement, no line
    lines = fits[~fits["setting"].isin(frozen)]
    assert (lines["method"] == "ols").all() and (lines.loc[lines["path"] == "insert_values", "n_points"] == 4).all()
    assert (lines.loc[lines["path"] == "bulk", "n_points"] == 3).all()
    assert (fits.loc[fits["setting"].isin(frozen), "method"] == "none").all()
    assert set(measured.loc[measured["setting"].isin(frozen), "statements"]) <= {1}
    assert set(million_analysis.tidy_fits(fits)["model"]) == {"overhead path=insert_values", "overhead path=bulk"}
    prediction = million_analysis.prediction(loads)  # no 1 000-row batches here: the 100-row ones, 3 statements
    assert set(prediction["setting"]) == set(measured.loc[measured["method"] == "batches", "setting"])
    assert (prediction["statements"] == 3).all() and (prediction["pi_low_s"] < prediction["pi_high_s"]).all()


def test_a_missing_version_is_noted_once_and_the_run_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(Postgres15, "unavailable_reason", classmethod(lambda cls: "no binaries (test)"))
    data, run = _measure(tmp_path, "postgres", versions="all", methods="generate", settings="default")
    notes = [n for n in run.meta["notes"] if "postgres15" in n]
    assert len(notes) == 1 and "no binaries (test)" in notes[0]
    assert set(data["loads"]["engine"]) == {"postgres"}


def test_rows_missing_after_a_load_raise_data_loss(tmp_path, monkeypatch):
    real = million._prepare

    def short(engine, method, data, ddl, setting, **sizes):
        data = million.Data(data.rows[:-1], data.chunks, data.csv)
        return real(engine, method, data, ddl, setting, **sizes)

    monkeypatch.setattr(million, "_prepare", short)
    with pytest.raises(DataLossError, match="rows after writing"):
        _measure(tmp_path, "postgres", methods="batches", settings="default")


def test_a_resumed_run_keeps_the_settings_it_completed_and_loads_only_the_rest(tmp_path, monkeypatch):
    params = million.validate("postgres", "smoke", rows=300, repeats=2, warmup_rows=20, methods="generate,bulk",
                              batch_rows=100, bulk_statements="1,10", settings="default,async_commit",
                              versions="default")
    first = Run("05_million_rows", params.as_dict(), tmp_path)
    real_load, calls = million.load_once, []

    def interrupted_in_the_second_setting(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 10:  # (warm-up + 2 runs) × 3 loads of the first setting, then one load of the second
            raise KeyboardInterrupt
        return real_load(*args, **kwargs)

    monkeypatch.setattr(million, "load_once", interrupted_in_the_second_setting)
    with pytest.raises(KeyboardInterrupt):
        million.measure(params, first)
    kept = pd.read_parquet(tmp_path / "loads.parquet")
    kept = kept[kept["setting"] == "default"]
    assert len(kept) == 9  # (warm-up + 2 runs) × 3 loads: the first setting is complete

    monkeypatch.setattr(million, "load_once", real_load)
    resumed = Run("05_million_rows", params.as_dict(), tmp_path, resume=True)
    loads = million.measure(params, resumed)["loads"]
    assert len(loads) == 18 and not loads.duplicated(["setting", "load", "run"]).any()
    pd.testing.assert_frame_equal(loads[loads["setting"] == "default"].reset_index(drop=True),
                                  kept.reset_index(drop=True))  # the same loads, not measured again
    assert (loads["rows_counted"] == loads["rows"]).all()
    assert (resumed.meta["resumed"]["kept"], resumed.meta["resumed"]["measured"]) == (2, 1)  # disk, default | async


def test_the_split_bulk_load_writes_every_row_once_in_k_statements_and_only_the_first_creates_the_table(
        monkeypatch):
    reason = Postgres.unavailable_reason()
    if reason:
        pytest.skip(reason)
    real, calls = PostgresBulkLoad.load, []

    def counted(self, table, columns, chunks, **kwargs):
        calls.append((sum(c.num_rows for c in chunks), bool(kwargs.get("create"))))
        return real(self, table, columns, chunks, **kwargs)

    monkeypatch.setattr(PostgresBulkLoad, "load", counted)
    data = million.make_data(3000, "test-split")
    engine = engines.get("postgres").start()
    try:
        for name, created in (("default", [False] * 7), ("copy_freeze", [True] + [False] * 6)):
            calls.clear()
            row = million.load_once(engine, "bulk", capabilities.of(Postgres, "load_settings").SETTINGS[name], data, bulk_statements=7)
            assert (row["rows_counted"], row["statements"], row["commits"], row["batch_rows"]) == (3000, 7, 7, 429)
            assert [c for _, c in calls] == created, name
            sizes = [n for n, _ in calls]
            assert sum(sizes) == 3000 and max(sizes) - min(sizes) <= 1, sizes
            assert tuple(engine.execute("SELECT count(DISTINCT id), min(id), max(id) FROM demo")[0]) == (3000, 1, 3000)
    finally:
        engine.close()
        data.remove()


def test_the_methods_figure_stacks_one_panel_per_system_with_one_legend():
    import matplotlib.collections
    import matplotlib.pyplot as plt

    table = pd.DataFrame([{"system": system, "setting": setting, "load": method, "rows_per_s": rate,
                           "rows_per_s_ci_low": rate * 0.9, "rows_per_s_ci_high": rate * 1.2, "runs": 3,
                           "ci_confidence": 0.75}
                          for system, methods in {"postgres 18.6": ["bulk", "pipeline", "autocommit"],
                                                  "mariadb 10.11": ["bulk", "autocommit"]}.items()
                          for setting in ("default", "async_commit")
                          for method, rate in zip(methods, (5e5, 6e4, 2e3))])
    fig = million_analysis.plot_methods(table)
    try:
        axes = fig.get_axes()
        assert [ax.get_title(loc="left") for ax in axes] == ["PostgreSQL 18.6", "MariaDB 10.11"]
        assert [ax.get_legend() for ax in axes] == [None, None] and len(fig.legends) == 1  # one, under the panels
        assert [len(ax.get_yticklabels()) for ax in axes] == [3, 2] and axes[1].get_xscale() == "log"
        assert axes[0].get_position().y0 > axes[1].get_position().y1  # loads of their own: stacked
        # every dot with its runs' interval, and the label says what the dot and the bar are
        assert fig.get_supxlabel() == ("thousand rows per second (median of 3 runs; bar: their range, a 75 % CI of "
                                       "the median)")
        bars = np.concatenate([c.get_segments() for c in axes[0].collections
                               if isinstance(c, matplotlib.collections.LineCollection)])
        assert sorted(np.round(bars[:, :, 0].max(axis=1))) == sorted(np.round(table.loc[  # in thousands
            table["system"] == "postgres 18.6", "rows_per_s_ci_high"] / 1e3))
    finally:
        plt.close(fig)


def test_the_repeats_label_names_the_runs_and_the_confidence_each_interval_reaches():
    label = million_analysis.repeats_label
    assert label(pd.DataFrame({"runs": [1], "ci_confidence": [np.nan]})) == "rows per second (median of 1 run)"
    assert label(pd.DataFrame({"runs": [9, 11], "ci_confidence": [0.96, 0.99]})) == \
        "rows per second (median of 9–11 runs; bar: a 96–99 % CI of the median)"


def test_a_setting_an_engine_lacks_is_left_to_the_engines_that_have_it():
    from ingestlab.engines.clickhouse import ClickHouse
    from ingestlab.engines.duckdb import DuckDB

    # the notebook's default SETTINGS: ClickHouse has no asynchronous commit (its INSERTs never sync)
    assert million.validate("clickhouse", settings="default,async_commit").settings == ("default", "async_commit")
    assert million.validate("duckdb", settings="default,async_commit").settings == ("default", "async_commit")
    with pytest.raises(ConfigError, match="SETTINGS.*at least one setting of clickhouse: default"):
        million.validate("clickhouse", settings="async_commit")
    with pytest.raises(ConfigError, match="SETTINGS='turbo'"):
        million.validate("clickhouse", settings="default,turbo")
    # a load method an engine cannot run is named with its reason, before anything starts
    assert million.method_missing(ClickHouse, "executemany").startswith("no transaction")
    assert million.method_missing(ClickHouse, "pipeline") == "the driver has no pipeline mode"
    assert all(million.method_missing(ClickHouse, m) is None for m in ("generate", "bulk", "batches", "native_client"))
    assert all(million.method_missing(DuckDB, m) is None
               for m in ("generate", "bulk", "batches", "executemany", "native_client"))


def test_a_comparison_keeps_each_load_of_a_method_apart(tmp_path):
    from ingestlab.workloads import compare_runs_analysis

    data, run = _measure(tmp_path, "postgres")
    run.finish(fits=million_analysis.tidy_fits(million_analysis.fit(data["loads"])))
    table = compare_runs_analysis.compare(run.dir, run.dir, "05")
    samples = table[table["kind"] == "samples"]
    measured = data["loads"][~data["loads"]["warmup"]]
    assert len(samples) == len(measured.groupby(["setting", "method", "load"]))  # batches of 10, 100, 300: three
    tens = measured.loc[measured["load"] == "batches of 10 rows", "setting"].nunique()
    assert tens >= 4 and samples["labels"].str.contains("load=batches of 10 rows,|load=batches of 10 rows$").sum() == tens
    assert (samples["a"] == samples["b"]).all()  # one load each here (REPEATS 1): compared with itself


#: The eleven loads of a paper run of notebook 05 (method, load, path, rows per statement, statements, commits)
#: with the seconds PostgreSQL 18.6 took under its default setting on this machine (run of 2026-11-27, stopped
#: before its end: tests/workloads/test_million.py only needs the shape of a paper run and plausible values).
PAPER_LOADS = [
    ("generate", "generate", "server", 1_000_000, 1, 1, 1.62), ("bulk", "bulk load in 1 statement", "bulk", 1_000_000, 1, 1, 1.11),
    ("bulk", "bulk load in 10 statements", "bulk", 100_000, 10, 10, 0.84),
    ("bulk", "bulk load in 100 statements", "bulk", 10_000, 100, 100, 0.93),
    ("native_client", "native_client", "native_client", 1_000_000, 1, 1, 0.89),
    ("batches", "batches of 100 rows", "insert_values", 100, 10_000, 10_000, 11.97),
    ("batches", "batches of 1000 rows", "insert_values", 1000, 1000, 1000, 8.62),
    ("batches", "batches of 10000 rows", "insert_values", 10_000, 100, 100, 8.79),
    ("pipeline", "pipeline", "one_transaction", 1, 1_000_000, 1, 9.76),
    ("executemany", "executemany", "one_transaction", 1, 1_000_000, 1, 118.1),
    ("autocommit", "autocommit", "insert_values", 1, 1_000_000, 1_000_000, 312.4)]


def test_the_figures_of_a_paper_run_on_two_versions_and_two_settings_fit_the_page_and_keep_the_grammar(tmp_path):
    """05's paper run (PostgreSQL 18 and 15, two settings, eleven loads, three runs and a warm-up each): its three
    figures saved strictly (any break of the grammar raises: tests/conftest.py), each PNG within the page."""
    import matplotlib.pyplot as plt

    from ingestlab import captions, direct_labels, figure_checks, figures

    rng = np.random.default_rng(5)
    loads = pd.DataFrame([
        {"system": system, "engine": "postgres" if system.startswith("postgres 18") else "postgres15",
         "setting": setting, "method": method, "load": load, "path": path, "batch_rows": per, "statements": statements,
         "commits": commits, "rows": 1_000_000, "seconds": s * slower * faster * rng.uniform(0.95, 1.05),
         "warmup": run < 0, "run": run, "mb_per_s": 1.0, "table_bytes": 1e8, "table_mb_per_s": 1.0, "add_key_s": 0.0}
        for system, slower in (("postgres 18.6", 1.0), ("postgres 15.14", 1.1))
        for setting, faster in (("default", 1.0), ("async_commit", 0.7))
        for method, load, path, per, statements, commits, s in PAPER_LOADS for run in (-1, 0, 1, 2)])
    loads["rows_per_s"] = loads["rows"] / loads["seconds"]
    table = million_analysis.medians(loads)
    with plt.rc_context():  # as the notebook draws them
        figures.use_article_theme()
        drawn = {"methods": million_analysis.plot_methods(table), "versions": million_analysis.plot_versions(table),
                 "fit": million_analysis.plot_fit(loads, million_analysis.fit(loads))}
        for number, ax in enumerate(drawn["fit"].axes):  # each of the four lines named where it ends, no legend
            (ends,) = [a for a in ax.artists if isinstance(a, direct_labels.EndLabels)]
            assert ax.get_legend() is None and len(ends.labels) == 4
            assert (ends.note is None) == (number > 0)  # what lines and shading mean: said once, over the first
            assert {label.get_text().split("\n")[0] for label in ends.labels} == {
                "PostgreSQL 18.6, defaults", "PostgreSQL 18.6,", "PostgreSQL 15.14, defaults", "PostgreSQL 15.14,"}
        for name, fig in drawn.items():
            captions.caption(fig, f"05's {name}", finding="A finding that takes three lines under the figure. " * 6,
                            run={"engines": [{"name": "postgres", "server_version": "18.6"}], "git": {"commit": "0" * 40}})
            figures.save(fig, name, notebook="05_million_rows", directory=tmp_path)
            assert figure_checks.print_size_problems(tmp_path / f"{name}.png") == [], name


def test_validate_refuses_an_engine_without_the_tables_notebook_05_writes_naming_the_ones_with_them():
    with pytest.raises(ConfigError, match=r"ENGINES='rocksdb' is not valid: expected an engine with table_ddl, which "
                                          r"notebook 05 needs \(rocksdb: no table_ddl: .*engines with it: .*postgres"):
        million.validate("postgres,rocksdb")
    with pytest.raises(ConfigError, match=r"BATCH_ROWS=10000 is not valid: expected an integer from 1 to ROWS \(5000\)"):
        million.validate("postgres", rows=5000, batch_rows=[100, 10000])
    with pytest.raises(ConfigError, match=r"METHODS='copy' is not valid"):
        million.validate("postgres", methods="copy")
    assert million.validate("postgres,mariadb", "paper").rows == 1_000_000
