"""Notebook 02's sweeps: validation before anything starts, real smoke runs, row checks, the fits on synthetic data."""

import numpy as np
import pandas as pd
import pytest

from ingestlab import datagen, models, timing
from ingestlab.engines import capabilities, registry
from ingestlab.errors import ConfigError, DataLossError
from ingestlab.results import Run
from ingestlab.workloads import sweeps
from ingestlab.workloads import sweeps_analysis as analysis
from tests.engines._support import parse_sql, table_names

SR_URL = "starrocks://root@127.0.0.1:9030/ingestlab"
DORIS_URL = "doris://root@127.0.0.1:9030/ingestlab"


# -- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, name, value", [
    ({"partitions": "1,0"}, "PARTITIONS", "0"),
    ({"partitions": "1,2.5"}, "PARTITIONS", "2.5"),
    ({"partitions": "1,-4"}, "PARTITIONS", "-4"),
    ({"partitions": "1,4096"}, "PARTITIONS", 4096),                       # PostgreSQL's MAX_PARTITIONS is 1024
    ({"engines": "mariadb", "partitions": "1,9000"}, "PARTITIONS", 9000),  # MariaDB's is 8192
    ({"columns": "4,x"}, "COLUMNS", "x"),
    ({"columns": "2,4"}, "COLUMNS", 2),
    ({"columns": "4,5000"}, "COLUMNS", 5000),
    ({"models": "no_key,columnstore"}, "MODELS", "columnstore"),
    ({"engines": "mariadb", "models": "unlogged"}, "MODELS", "unlogged"),
    ({"models": "no_key"}, "MODELS", "no_key"),                            # no model to compare with
    ({"engines": "oracle"}, "ENGINES", "oracle"),
    ({"engines": "rocksdb"}, "ENGINES", "rocksdb"),                        # no SQL tables to vary
    ({"factors": "partitions,colour"}, "FACTORS", "colour"),
    ({"variants": "sync_off"}, "VARIANTS", "sync_off"),                    # MariaDB has no such variant
    ({"statements": 0}, "STATEMENTS", 0),
    ({"repeats": -1}, "REPEATS", -1),
    ({"warmup": 1.5}, "WARMUP", 1.5),
    ({"scale": "huge"}, "SCALE", "huge"),
])
def test_bad_parameters_fail_before_any_server_starts(kwargs, name, value, tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    with pytest.raises(ConfigError) as err:
        sweeps.validate(**{"engines": "postgres,mariadb", **kwargs})
    assert err.value.name == name and err.value.value == value and "expected" in str(err.value)
    assert not (tmp_path / "lab").exists()


def test_the_runner_rejects_a_bad_sweep_value_with_the_notebooks_own_check():
    from ingestlab import runner

    with pytest.raises(ConfigError, match="PARTITIONS"):
        runner.check_parameters(runner.find_notebook("02"), {"PARTITIONS": "1,4,zero"})


def test_a_factor_the_target_cannot_vary_is_named():
    postgres = registry.classes()["postgres"]

    class Flat(capabilities.of(postgres, "table_models")):
        MAX_PARTITIONS = 1

    class NoPartitions(postgres):
        NAME = ""  # not registered: the registry keeps the real postgres
        CAPABILITIES = {**postgres.CAPABILITIES, "table_models": Flat}

    with pytest.raises(ConfigError) as err:
        sweeps._check_factors("flat", NoPartitions, ("partitions",), (1,))
    assert err.value.name == "FACTORS" and err.value.value == "partitions" and "columns" in err.value.accepted


def test_levels_follow_scale_and_engine():
    pg, maria = registry.classes()["postgres"], registry.classes()["mariadb"]
    paper = sweeps.validate("postgres,mariadb", scale="paper")
    assert sweeps.levels(paper, pg)["partitions"] == [1, 4, 8, 16, 32, 64, 256, 1024]
    assert sweeps.levels(paper, maria)["partitions"] == [1, 4, 8, 16, 32, 64]
    assert sweeps.levels(paper, maria)["model"] == ["no_key", "primary_key", "primary_key_indexes", "aria"]
    assert (paper.statements, paper.warmup) == (200, 20)
    assert sweeps.variants_for(paper, pg) == ["sync_on"] and sweeps.variants_for(paper, maria) == ["flush_1"]
    configs = sweeps.configurations(sweeps.validate("postgres", factors="columns"), pg)
    assert [c.name for c in configs] == ["p1 c4 no_key", "p1 c20 no_key", "p1 c50 no_key"]


# -- the generated SQL of engines that cannot run here ------------------------------------------
@pytest.mark.parametrize("url", [SR_URL, DORIS_URL])
@pytest.mark.parametrize("buckets", [1, 16, 64])
def test_bucketed_tables_of_every_model_parse_in_the_engines_dialect(url, buckets):
    engine = registry.from_url(url)
    columns = datagen.wide_columns(20)
    for model in capabilities.of(engine, "table_models").MODELS:
        if (engine.NAME, model) == ("doris", "aggregate"):
            continue  # sqlglot's doris dialect has no grammar for `col TYPE REPLACE`; see the next test
        (sql,) = engine.tables.ddl(sweeps.TABLE, columns, model=model, partitions=buckets)
        tree = parse_sql(sql, engine.WIRE.sqlglot_dialect)
        assert table_names(tree) == [sweeps.TABLE]
        assert f"DISTRIBUTED BY HASH(`id`) BUCKETS {buckets}" in sql
        assert capabilities.of(engine, "table_models").MODELS[model] + "(`id`)" in sql
        assert sql.count("`c") == 16 or model == "aggregate"


def test_doris_unique_tables_are_merge_on_write_and_aggregate_parses_as_starrocks():
    doris = registry.from_url(DORIS_URL)
    (unique,) = doris.tables.ddl("t", datagen.wide_columns(4), model="unique", partitions=8)
    assert '"enable_unique_key_merge_on_write" = "true"' in unique
    (aggregate,) = doris.tables.ddl("t", datagen.wide_columns(4), model="aggregate", partitions=8)
    assert table_names(parse_sql(aggregate, registry.classes()["starrocks"].WIRE.sqlglot_dialect)) == ["t"]
    (duplicate,) = registry.from_url(SR_URL).tables.ddl("t", datagen.wide_columns(4), model="unique")
    assert "merge_on_write" not in duplicate


def test_starrocks_and_doris_validate_without_a_server():
    params = sweeps.validate(f"{SR_URL},{DORIS_URL}", models="aggregate,unique,primary")
    sr, doris = (spec.engine_class() for spec in params.engines)
    assert sweeps.levels(params, sr)["model"] == ["duplicate", "aggregate", "unique", "primary"]
    assert sweeps.levels(params, doris)["model"] == ["duplicate", "aggregate", "unique"]
    assert sweeps.variants_for(params, sr) == ["default"] and capabilities.of(sr, "table_models").PARTITION_UNIT == "bucket"
    with pytest.raises(ConfigError, match="PARTITIONS"):
        sweeps.validate(SR_URL, partitions="1,2048")


# -- real smoke runs ---------------------------------------------------------------------------
def _small(target: str, **kwargs):
    return sweeps.validate(target, partitions="1,4,16", columns="4,12", statements=12, warmup=3, repeats=2,
                           profile_n=3, **kwargs)


def _check_run(data, params, run, engine_cls):
    samples = data["samples"]
    configs = sweeps.configurations(params, engine_cls)
    measured = samples[~samples["warmup"]]
    per = measured.groupby(["config", "round"]).size()
    assert len(per) == len(configs) * params.repeats and (per == params.statements).all()
    assert (samples[samples["warmup"]].groupby(["config", "round"]).size() == params.warmup).all()
    assert run.table()["elapsed_s"].tolist() == samples["elapsed_s"].tolist()
    # every sample names the driver that sent it and the loop that timed it (the C loop where built)
    assert samples["driver"].notna().all() and set(samples["timer"]) <= {"c", "python"}
    if timing.TIMER == "c":
        assert (samples.loc[samples["driver"].isin(["psycopg2", "mysqldb"]), "timer"] == "c").all()
    # every round ran every table, each round in its own order
    orders = samples.drop_duplicates(["round", "config"]).groupby("round")["config"].apply(tuple)
    assert all(sorted(o) == sorted(c.name for c in configs) for o in orders)
    sweep = analysis.sweep_table(samples)
    assert set(sweep["factor"]) == {"partitions", "columns", "model"}
    assert (sweep["median_ci_low_ms"] <= sweep["median_ms"]).all() and (sweep["median_ms"] <= sweep["median_ci_high_ms"]).all()
    assert sweep.loc[(sweep["factor"] == "partitions") & (sweep["level_value"] == 1), "level_label"].tolist() == [
        capabilities.of(engine_cls, "table_models").ONE_PARTITION]
    fits = analysis.fit(samples, sweep)
    numeric = fits[fits["factor"] != "model"].set_index("factor")
    assert set(numeric.index) == {"partitions", "columns"} and (numeric["method"] == "ols").all()
    assert numeric[["slope_ci_low_ms", "slope_ci_high_ms"]].notna().all().all()
    assert set(fits.loc[fits["factor"] == "model", "level"]) == set(capabilities.of(engine_cls, "table_models").MODELS) - {capabilities.of(engine_cls, "table_models").DEFAULT_MODEL}
    assert fits["share_of_overhead"].notna().all()
    assert not data["anatomy"].empty and not analysis.attribution(data["anatomy"]).empty
    assert len(analysis.answer(fits)) == 1
    return fits


def test_smoke_measure_on_postgres_writes_every_row(tmp_path):
    params = _small("postgres")
    run = Run(sweeps.NOTEBOOK, params.as_dict(), tmp_path)
    data = sweeps.measure(params, run)
    fits = _check_run(data, params, run, registry.classes()["postgres"])
    parts = set(data["anatomy"]["component"])
    assert {"planning", "execution", "wal_flush"} <= parts
    assert fits.loc[fits["level"] == "unlogged", "skips_commit_flush"].tolist() == [True]


def test_each_round_measures_every_variant_in_the_order_it_drew_and_records(tmp_path):
    params = sweeps.validate("postgres", partitions="1,4", columns="4,6", statements=5, warmup=1, repeats=3,
                             profile_n=0, variants="sync_on,sync_off", seed=5)  # its rounds draw both orders
    run = Run(sweeps.NOTEBOOK, params.as_dict(), tmp_path)
    data = sweeps.measure(params, run)
    rounds = run.meta["schedule"]["rounds"]
    assert [r["round"] for r in rounds] == [0, 1, 2]
    assert all(sorted(arm["variant"] for arm in r["order"]) == ["sync_off", "sync_on"] for r in rounds)
    firsts = data["samples"].groupby(["round", "variant"])["started_ns"].min().sort_values()
    assert [v for _, v in firsts.index] == [arm["variant"] for r in rounds for arm in r["order"]]
    assert len({tuple(arm["variant"] for arm in r["order"]) for r in rounds}) == 2
    assert sorted(e["variant"] for e in run.meta["engines"]) == ["sync_off", "sync_on"]  # each put in force, recorded


def test_a_resumed_sweep_keeps_its_completed_tables_in_their_drawn_order(tmp_path, monkeypatch):
    params = _small("postgres", variants="sync_on")
    real, calls = sweeps.run_configuration, []

    def interrupted(*args, **kwargs):
        calls.append(args[1].name)
        if len(calls) == 4:  # inside the first round
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sweeps, "run_configuration", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweeps.measure(params, Run(sweeps.NOTEBOOK, params.as_dict(), tmp_path))
    kept = pd.read_parquet(tmp_path / "results.parquet")
    monkeypatch.setattr(sweeps, "run_configuration", real)
    run = Run(sweeps.NOTEBOOK, params.as_dict(), tmp_path, resume=True)
    data = sweeps.measure(params, run)
    _check_run(data, params, run, registry.classes()["postgres"])
    done = data["samples"].merge(kept, how="inner")
    assert len(done) == len(kept) and kept["config"].nunique() == 3  # rows, positions and times as first measured
    assert run.meta["resumed"]["kept"] == 3


def test_smoke_measure_on_mariadb_writes_every_row(tmp_path):
    from ingestlab.engines.mariadb.server import find_binary
    from ingestlab.errors import EngineUnavailableError

    try:
        find_binary("mariadbd")
    except EngineUnavailableError as exc:
        pytest.skip(str(exc))
    params = _small("mariadb")
    run = Run(sweeps.NOTEBOOK, params.as_dict(), tmp_path)
    data = sweeps.measure(params, run)
    _check_run(data, params, run, registry.classes()["mariadb"])
    assert "commit" in set(data["anatomy"]["component"])


class _Short:
    """An engine whose table keeps one row fewer than it was sent (a stand-in for the row check only)."""

    label = "short"

    class tables:  # noqa: N801 - stands in for ``engine.tables``
        @staticmethod
        def count_rows(table):
            return 9


def test_a_table_that_lost_a_row_raises():
    with pytest.raises(DataLossError, match="9 rows after 10"):
        sweeps.check_rows(_Short(), sweeps.Config(1, 4, "no_key"), 10)


# -- the analysis on synthetic data -----------------------------------------------------------
def _synthetic(per_partition=0.002, per_column=0.01, keyed=0.05, base=0.30, noise=0.01, seed=0,
               partitions=(1, 4, 16, 64), columns=(20, 50), partition_cost=None):
    rng = np.random.default_rng(seed)
    partition_cost = partition_cost or (lambda p: per_partition * (p - 1))
    configs = ([(p, 4, "no_key") for p in partitions] + [(1, c, "no_key") for c in columns]
               + [(1, 4, "primary_key")])
    rows = []
    for rnd in range(4):
        for p, c, m in configs:
            ms = (base + partition_cost(p) + per_column * (c - 4) + (keyed if m == "primary_key" else 0)
                  + rng.normal(0, noise, 100))
            rows.append(pd.DataFrame({
                "engine": "synthetic", "variant": "v", "round": rnd, "warmup": False, "elapsed_s": ms / 1e3,
                "config": f"p{p} c{c} {m}", "partitions": p, "n_columns": c, "model": m,
                "baseline": (p, c, m) == (1, 4, "no_key"), "baseline_model": "no_key", "partition_unit": "partition",
                "partition_layout": "plain table" if p == 1 else f"{p} partitions", "model_skips_commit_flush": False}))
    return pd.concat(rows, ignore_index=True)


def test_fit_recovers_known_slopes_and_model_difference_within_ci():
    samples = _synthetic()
    sweep = analysis.sweep_table(samples)
    fits = analysis.fit(samples, sweep).set_index("factor")
    for factor, truth in (("partitions", 0.002), ("columns", 0.01), ("model", 0.05)):
        r = fits.loc[factor]
        assert r["slope_ci_low_ms"] <= truth <= r["slope_ci_high_ms"], factor
    assert fits.loc["partitions", "unit"] == "ms per partition" and fits.loc["columns", "unit"] == "ms per column"
    assert fits.loc["model", "unit"] == "ms vs no_key"
    share = fits.loc["columns", "share_of_overhead"]
    assert share == pytest.approx(fits.loc["columns", "slope_ms"] * 46 / sweep.loc[sweep["baseline"], "median_ms"].iloc[0])
    assert len(sweep) == 4 + 3 + 2 and (sweep["n"] == 400).all()


def test_verdict_says_no_for_a_flat_sweep_and_yes_for_a_steep_one():
    flat = analysis.fit(s := _synthetic(per_partition=0, per_column=0, keyed=0), analysis.sweep_table(s))
    assert not analysis.verdict(flat)["storage_sets_price"].iloc[0]
    assert "**no**" in analysis.answer(flat)[0]
    steep = analysis.fit(s := _synthetic(per_column=0.02), analysis.sweep_table(s))  # +0.92 ms on 0.30 ms
    v = analysis.verdict(steep).iloc[0]
    assert v["storage_sets_price"] and v["largest_factor"] == "columns"


def test_live_vs_published_puts_the_seed_beside_the_live_slopes():
    samples = _synthetic()
    sweep = analysis.sweep_table(samples)
    table = analysis.live_vs_published(analysis.fit(samples, sweep), sweep)
    per_tablet = table[table["quantity"].str.startswith("ms per partition") & table["quantity"].str.contains("shared-data")]
    assert per_tablet["published"].tolist() == [0.15]
    assert per_tablet["live_ci_low"].iloc[0] <= 0.002 <= per_tablet["live_ci_high"].iloc[0]
    medians = table[table["quantity"].str.startswith("median ms at 64 partitions")]
    assert sorted(medians["published"]) == [70, 98]
    shares = analysis.published_effects().set_index(["deployment", "factor"])["share_of_overhead"]
    assert shares[("shared-data", "buckets")] == pytest.approx(9.5 / 60)


def test_the_figures_draw_from_the_tables():
    from ingestlab import figures

    samples = _synthetic()
    sweep = analysis.sweep_table(samples)
    fits = analysis.fit(samples, sweep)
    fig = analysis.plot_sweep_medians(sweep, analysis.fits_for_plot(fits))
    assert [ax.get_xlabel() for ax in fig.axes] == ["partitions", "columns"] and fig.axes[0].get_xscale() == "log"
    # the sweep's series and the fits' series are the same names, so every series' fit is drawn in each panel
    series = sweep["series"].nunique()
    assert all(sum(len(line.get_xdata()) >= 100 for line in ax.get_lines()) == series for ax in fig.axes)
    figures.close(fig)
    fig = analysis.plot_model_effects(analysis.effects_for_plot(fits))
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["primary key"]
    figures.close(fig)


def test_effects_for_plot_without_table_models_is_empty():
    fits = pd.DataFrame({"engine": ["postgres"], "variant": ["sync_on"], "factor": ["columns"], "slope_ms": [0.004]})
    out = analysis.effects_for_plot(fits)
    assert out.empty and "series" in out.columns


def _per_round(cost, levels=(1, 4, 8, 16, 32, 64, 256, 1024), rounds=5, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"engine": "postgres", "variant": "default", "factor": "partitions", "level_value": lv,
                          "round": r, "median_ms": cost(lv) * rng.lognormal(0, 0.01)}
                         for lv in levels for r in range(rounds)])


def test_a_cost_growing_with_log2_of_the_partitions_is_fitted_as_such_and_a_linear_one_stays_linear():
    logged = analysis._growth(_per_round(lambda n: 0.2 + 0.01 * np.log2(n)))
    ols = logged[logged["method"] == "ols"].iloc[0]
    assert ols["growth"] == "log2" and ols["slope"] == pytest.approx(0.01, rel=0.05)
    assert models.model_holds(ols["model_holds"]) and "linear line did not hold" in ols["model_note"]
    linear = analysis._growth(_per_round(lambda n: 0.2 + 0.0001 * n)).iloc[0]
    assert linear["growth"] == "linear" and linear["slope"] == pytest.approx(0.0001, rel=0.05)


# -- what the line predicts that it did not see ----------------------------------------------------
def test_the_largest_level_of_each_sweep_is_predicted_from_the_others_within_its_interval():
    samples = _synthetic()
    fits = analysis.fit(samples, analysis.sweep_table(samples))
    table = analysis.prediction(samples, fits)
    assert list(table.columns) == analysis.PREDICTION_COLUMNS
    table = table.set_index("factor")
    assert table["level_value"].to_dict() == {"partitions": 64, "columns": 50}
    assert (table["note"] == "").all() and table["inside"].all() and (table["rounds"] == 4).all()
    # the truth at the held-out levels: 0.30 + 0.002 · 63 and 0.30 + 0.01 · 46 ms
    assert table.loc["partitions", "predicted_ms"] == pytest.approx(0.426, abs=0.01)
    assert table.loc["columns", "predicted_ms"] == pytest.approx(0.76, abs=0.01)
    lines = analysis.describe_prediction(table.reset_index())
    assert lines[0].startswith("**synthetic v, partitions** (straight line), 64 partitions left out of the fit: ")
    assert lines[-1] == "The line foresaw the level it did not see in 2 of 2 sweeps."
    assert analysis.describe_fits(fits)[0].startswith("**synthetic v, partitions 1–64, a straight line in the level, "
                                                      "which holds**: ")


def test_a_sweep_fitted_in_log2_of_the_partitions_is_predicted_by_that_line():
    samples = _synthetic(partition_cost=lambda p: 0.05 * np.log2(p), columns=())
    fits = analysis.fit(samples, analysis.sweep_table(samples))
    assert fits.loc[fits["factor"] == "partitions", "growth"].tolist() == ["log2"]
    row = analysis.prediction(samples, fits).iloc[0]
    # a straight line through 1, 4 and 16 partitions would say about 1.1 ms at 64; the log₂ line says 0.6
    assert row["growth"] == "log2" and row["predicted_ms"] == pytest.approx(0.60, abs=0.01) and row["inside"]
    assert "growing with log₂ of the level (the straight line did not hold" in analysis.describe_fits(fits)[0]


def test_a_sweep_with_too_few_levels_says_so_instead_of_predicting():
    samples = _synthetic(partitions=(1, 4), columns=(20, 50))
    table = analysis.prediction(samples, analysis.fit(samples, analysis.sweep_table(samples))).set_index("factor")
    assert table.loc["partitions", "note"].startswith("too few runs")
    assert pd.isna(table.loc["partitions", "predicted_ms"]) and pd.isna(table.loc["partitions", "inside"])
    assert table.loc["columns", "note"] == "" and table.loc["columns", "inside"]
    lines = analysis.describe_prediction(table.reset_index())
    assert "4 partitions left out of the fit: no held-out check, too few runs" in lines[0]
    assert lines[-1] == "The line foresaw the level it did not see in 1 of 1 sweeps."
    only_models = _synthetic(partitions=(1,), columns=())
    empty = analysis.prediction(only_models, analysis.fit(only_models, analysis.sweep_table(only_models)))
    assert empty.empty and list(empty.columns) == analysis.PREDICTION_COLUMNS
    assert analysis.describe_prediction(empty)[0].startswith("No prediction")


def test_a_rejected_sweep_line_is_not_drawn_and_its_label_and_the_sentence_say_so():
    import matplotlib.collections as mcollections

    from ingestlab import direct_labels, figures

    samples = _synthetic()
    sweep = analysis.sweep_table(samples)
    fits = analysis.fit(samples, sweep)
    rejected = fits["factor"] == "partitions"
    fits.loc[rejected, ["model_holds", "model_note"]] = [False, "lack of fit p = 0.001 (pure_error_f)"]
    fig = analysis.plot_sweep_medians(sweep, analysis.fits_for_plot(fits))
    partitions, columns = fig.axes
    assert not [line for line in partitions.get_lines() if len(line.get_xdata()) >= 100]
    assert not any(isinstance(c, mcollections.PolyCollection) for c in partitions.collections)
    assert sum(isinstance(c, mcollections.PolyCollection) for c in columns.collections) == 1
    assert not fig.legends and not any(ax.get_legend() for ax in fig.axes)  # each line is named where it ends
    (ends,) = [a for a in partitions.artists if isinstance(a, direct_labels.EndLabels)]
    assert all(label.get_text().endswith("\nmodel rejected, no line") for label in ends.labels)
    last = sweep[sweep["factor"] == "partitions"].sort_values("level_value").groupby("series").tail(1)
    assert sorted(label.xy for label in ends.labels) == sorted(zip(last["level_value"], last["median_ms"]))
    (ends,) = [a for a in columns.artists if isinstance(a, direct_labels.EndLabels)]
    assert all(label.get_text().split("\n")[-1].endswith(")") for label in ends.labels)  # slope (its CI)
    assert ends.note is None  # what the marks mean is said once, over the first panel
    figures.close(fig)
    line = analysis.describe_fits(fits[rejected])[0]
    assert "the line does not hold, so the figure draws none (lack of fit p = 0.001 (pure_error_f))" in line


def test_without_factors_each_engine_sweeps_what_it_can_vary_and_a_factor_given_is_checked():
    duck, ch = registry.classes()["duckdb"], registry.classes()["clickhouse"]
    params = sweeps.validate("duckdb,clickhouse")  # the notebook's default: FACTORS None
    assert params.factors == ("partitions", "columns", "model")
    assert [c.name for c in sweeps.configurations(params, duck)] == [
        "p1 c4 no_key", "p1 c20 no_key", "p1 c50 no_key", "p1 c4 primary_key", "p1 c4 primary_key_indexes"]
    assert sweeps.levels(params, ch)["partitions"] == [1, 4, 8, 16, 32, 64]
    assert sweeps.levels(params, ch)["model"] == ["no_key", "primary_key", "primary_key_indexes", "replacing", "memory"]
    with pytest.raises(ConfigError) as err:  # given, a factor DuckDB cannot vary is refused, naming it
        sweeps.validate("duckdb", factors="partitions,columns")
    assert (err.value.name, err.value.value) == ("FACTORS", "partitions")
    # partitions not swept: their levels are not held against DuckDB's one partition
    assert sweeps.validate("duckdb", factors="columns").factors == ("columns",)
    with pytest.raises(ConfigError, match="at most 100 partitions for clickhouse"):
        sweeps.validate("clickhouse", partitions="1,128")


def test_validate_gives_the_scale_s_partitions_and_refuses_a_model_the_engine_lacks_naming_its_own():
    assert sweeps.validate("postgres").partitions == (1, 4, 8, 16, 32, 64)
    with pytest.raises(ConfigError, match=r"MODELS='unlogged' is not valid: expected each one of: mariadb: no_key, "
                                          r"primary_key, primary_key_indexes, aria"):
        sweeps.validate("mariadb", models="unlogged")


def test_each_configuration_changes_one_factor_from_the_baseline():
    from ingestlab.engines.mariadb import MariaDB

    params = sweeps.validate("mariadb", partitions="1,8", columns="4,5", models="aria")
    assert [c.name for c in sweeps.configurations(params, MariaDB)] == [
        "p1 c4 no_key", "p8 c4 no_key", "p1 c5 no_key", "p1 c4 aria"]


def test_levels_add_the_engines_extra_partitions_at_paper_scale_and_keep_its_default_model_first():
    from ingestlab.engines.postgres import Postgres

    assert sweeps.levels(sweeps.validate("postgres", scale="paper"), Postgres)["partitions"] == [
        1, 4, 8, 16, 32, 64, 256, 1024]
    assert sweeps.levels(sweeps.validate("postgres", models="unlogged"), Postgres)["model"] == ["no_key", "unlogged"]
    note = sweeps.levels_note(sweeps.validate("postgres", scale="paper", models="unlogged"), Postgres, "postgres")
    assert note == ("postgres levels measured: partitions 1, 4, 8, 16, 32, 64, 256, 1024; columns 4, 20, 50; "
                    "model no_key, unlogged")


def test_an_untested_sweep_line_is_not_drawn_and_its_label_says_so():
    """A line is drawn only for a model that holds: one whose test could not run (``model_holds`` empty) was drawn."""
    from ingestlab import direct_labels

    samples = _synthetic()
    sweep = analysis.sweep_table(samples)
    fits = analysis.fit(samples, sweep)
    fits.loc[fits["factor"] == "partitions", "model_holds"] = None
    fig = analysis.plot_sweep_medians(sweep, analysis.fits_for_plot(fits))
    partitions, columns = fig.axes
    assert not [line for line in partitions.get_lines() if len(line.get_xdata()) >= 100]
    assert [line for line in columns.get_lines() if len(line.get_xdata()) >= 100]
    (ends,) = [a for a in partitions.artists if isinstance(a, direct_labels.EndLabels)]
    assert all(label.get_text().endswith("\nnot tested, no line") for label in ends.labels)
