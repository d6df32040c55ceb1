import numpy as np
import pandas as pd
import pytest

from ingestlab import models
from ingestlab.engines import Engine
from ingestlab.engines.mariadb import MariaDB
from ingestlab.engines.mysql import MySQL
from ingestlab.engines.postgres import Postgres, Postgres15
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
    ({"methods": "bulk,teleport"}, "METHODS"),
    ({"settings": "default,turbo"}, "SETTINGS"),
    ({"engines": "mariadb", "settings": "copy_freeze"}, "SETTINGS"),
    ({"versions": "newest"}, "VERSIONS"),
])
def test_bad_parameters_fail_before_anything_starts(kwargs, name, monkeypatch):
    monkeypatch.setattr(Engine, "start", lambda self: pytest.fail("an engine started"))
    with pytest.raises(ConfigError) as err:
        million.validate(**kwargs)
    assert err.value.args[0].startswith(name)


def test_settings_of_any_selected_engine_are_accepted_and_versions_expand():
    params = million.validate("postgres,mariadb", settings="copy_freeze,no_unique_checks")
    assert params.settings == ("copy_freeze", "no_unique_checks")
    assert million._expand(["postgres", "mariadb"], "all") == ["postgres", "postgres15", "mariadb"]
    assert million._expand(["postgres"], "default") == ["postgres"]
    assert million.validate("postgres", "paper").repeats == 5


def test_every_method_is_labelled_with_its_statements_and_commits():
    n = 1_000_000
    got = {m: million.counts(m, n, 1000) for m in million.METHODS}
    assert got == {"generate": (1, 1), "bulk": (1, 1), "native_client": (1, 1), "batches": (1000, 1000),
                   "pipeline": (n, 1), "executemany": (n, 1), "autocommit": (n, n)}


@pytest.mark.parametrize("cls", [Postgres, YugabyteDB, MariaDB, MySQL])
def test_generated_rows_sql_parses_in_the_engines_dialect(cls):
    sql = cls.__new__(cls).generate_rows_sql("demo", million.COLUMN_NAMES, 1_000_000)
    tree = parse_sql(sql, cls.SQLGLOT_DIALECT)
    assert tree.key == "insert"
    assert "demo" in table_names(tree)
    assert "1000000" in sql


def test_yugabytedb_settings_are_session_settings_the_adapter_allows():
    for name, setting in YugabyteDB.LOAD_SETTINGS.items():
        assert set(setting.server) <= YugabyteDB.SESSION_SETTINGS, name
    assert YugabyteDB.LOAD_SETTINGS["packed_row"].server_flags == {"ysql_enable_packed_row": "true"}
    assert YugabyteDB.has("prepare_pipeline_insert") and not MariaDB.has("prepare_pipeline_insert")


def test_fit_recovers_known_overhead_and_per_row_cost_within_ci():
    rng = np.random.default_rng(0)
    n, overhead_s, per_row_s = 100_000, 80e-6, 4e-6
    rows = []
    for method, (statements, commits) in {m: million.counts(m, n, 1000) for m in million.METHODS}.items():
        for run in range(5):
            seconds = (statements * overhead_s + n * per_row_s) * rng.normal(1, 0.02)
            rows.append({"system": "x 1", "setting": "default", "method": method, "rows": n, "statements": statements,
                         "commits": commits, "seconds": seconds, "warmup": False})
    fits = million_analysis.fit(pd.DataFrame(rows))
    ols = fits[fits["method"] == "ols"].iloc[0]
    assert ols["overhead_ci_low_ms"] <= overhead_s * 1e3 <= ols["overhead_ci_high_ms"]
    assert ols["per_row_ci_low_us"] <= per_row_s * 1e6 <= ols["per_row_ci_high_us"]
    assert ols["n_points"] == 30  # native_client left out


def test_median_ci_reaches_its_stated_confidence():
    r = models.median_ci_exact([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (r["median"], r["ci_low"], r["ci_high"]) == (3.0, 1.0, 5.0)
    assert r["confidence"] == pytest.approx(1 - 2 / 32)


def _measure(tmp_path, targets, versions="default", **kwargs):
    params = million.validate(targets, "smoke", rows=300, repeats=1, warmup_rows=20, batch_rows=100,
                              versions=versions, **kwargs)
    run = Run("05_million_rows", params.as_dict(), tmp_path / "run")
    return million.measure(params, run), run


# MariaDB's smoke run takes ~100 s here (2 cores): `slow`; PostgreSQL's ~4 s
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "mariadb" else n for n in LOCAL])
def test_smoke_run_loads_every_row_by_every_method_and_setting(name, tmp_path):
    reason = Engine.class_of(name).unavailable_reason()
    if reason:
        pytest.skip(reason)
    data, run = _measure(tmp_path, name)
    loads = data["loads"]
    cls = Engine.class_of(name)
    assert set(loads["setting"]) == set(cls.LOAD_SETTINGS)
    measured = loads[~loads["warmup"]]
    assert (measured["rows_counted"] == 300).all() and (loads["rows_counted"] == loads["rows"]).all()
    methods = {m for m in million.METHODS if cls.has(million.METHODS[m][0])}
    assert set(measured.loc[measured["setting"] == "default", "method"]) == methods
    assert (measured["table_bytes"] > 0).all() and (measured["seconds"] > 0).all()
    keyed_later = measured[measured["setting"] == "key_after_load"]
    assert (keyed_later["add_key_s"] > 0).all()
    assert measured["version"].nunique() == 1 and (data["disk"]["mb_per_s"] > 0).all()
    table = million_analysis.medians(loads)
    assert (table["warmup_n"] == 1).all()
    assert not million_analysis.physical(loads, data["disk"]).empty
    assert run.meta["engines"][0]["setting"] == "default"


def test_a_missing_version_is_noted_once_and_the_run_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(Postgres15, "unavailable_reason", classmethod(lambda cls: "no binaries (test)"))
    data, run = _measure(tmp_path, "postgres", versions="all", methods="generate", settings="default")
    notes = [n for n in run.meta["notes"] if "postgres15" in n]
    assert len(notes) == 1 and "no binaries (test)" in notes[0]
    assert set(data["loads"]["engine"]) == {"postgres"}


def test_rows_missing_after_a_load_raise_data_loss(tmp_path, monkeypatch):
    real = million._prepare

    def short(engine, method, data, ddl, setting, batch_rows):
        data = million.Data(data.rows[:-1], data.chunks, data.csv)
        return real(engine, method, data, ddl, setting, batch_rows)

    monkeypatch.setattr(million, "_prepare", short)
    with pytest.raises(DataLossError, match="rows after writing"):
        _measure(tmp_path, "postgres", methods="batches", settings="default")


def test_a_resumed_run_keeps_the_settings_it_completed_and_loads_only_the_rest(tmp_path, monkeypatch):
    params = million.validate("postgres", "smoke", rows=300, repeats=2, warmup_rows=20, methods="generate,bulk",
                              settings="default,async_commit", versions="default")
    first = Run("05_million_rows", params.as_dict(), tmp_path)
    real_load, calls = million.load_once, []

    def interrupted_in_the_second_setting(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 8:  # (warm-up + 2 runs) × 2 methods of the first setting, then one load of the second
            raise KeyboardInterrupt
        return real_load(*args, **kwargs)

    monkeypatch.setattr(million, "load_once", interrupted_in_the_second_setting)
    with pytest.raises(KeyboardInterrupt):
        million.measure(params, first)
    kept = pd.read_parquet(tmp_path / "loads.parquet")
    kept = kept[kept["setting"] == "default"]
    assert len(kept) == 6  # (warm-up + 2 runs) × 2 methods: the first setting is complete

    monkeypatch.setattr(million, "load_once", real_load)
    resumed = Run("05_million_rows", params.as_dict(), tmp_path, resume=True)
    loads = million.measure(params, resumed)["loads"]
    assert len(loads) == 12 and not loads.duplicated(["setting", "method", "run"]).any()
    pd.testing.assert_frame_equal(loads[loads["setting"] == "default"].reset_index(drop=True),
                                  kept.reset_index(drop=True))  # the same loads, not measured again
    assert (loads["rows_counted"] == loads["rows"]).all()
    assert (resumed.meta["resumed"]["kept"], resumed.meta["resumed"]["measured"]) == (2, 1)  # disk, default | async


def test_the_methods_figure_stacks_one_panel_per_system_with_one_legend():
    import matplotlib.pyplot as plt

    table = pd.DataFrame([{"system": system, "setting": setting, "method": method, "rows_per_s": rate}
                          for system, methods in {"postgres 18.6": ["bulk", "pipeline", "autocommit"],
                                                  "mariadb 10.11": ["bulk", "autocommit"]}.items()
                          for setting in ("default", "async_commit")
                          for method, rate in zip(methods, (5e5, 6e4, 2e3))])
    fig = million_analysis.plot_methods(table)
    try:
        axes = fig.get_axes()
        assert [ax.get_title(loc="left") for ax in axes] == ["PostgreSQL 18.6", "MariaDB 10.11"]
        assert [ax.get_legend() is not None for ax in axes] == [False, True]
        assert [len(ax.get_yticklabels()) for ax in axes] == [3, 2] and axes[1].get_xscale() == "log"
    finally:
        plt.close(fig)
