from pathlib import Path

import matplotlib.colors
import matplotlib.container
import numpy as np
import pandas as pd
import pytest

from ingestlab import anatomy, figure_checks, findings, models
from ingestlab.engines import capabilities, registry
from ingestlab.errors import ConfigError
from ingestlab.results import Run
from ingestlab.workloads import insert, insert_analysis


@pytest.mark.parametrize("kwargs, name", [
    ({"engines": "oracle"}, "ENGINES"),
    ({"engines": "postgresql://u@host:x/db"}, "ENGINES"),
    ({"n": 0}, "N"),
    ({"n": -5}, "N"),
    ({"scale": "huge"}, "SCALE"),
    ({"scenarios": "single_row,upsert"}, "SCENARIOS"),
    ({"variants": "sync_maybe"}, "VARIANTS"),
    ({"repeats": 0}, "REPEATS"),
    ({"profile_n": insert.MAX_PROFILE_N + 1}, "PROFILE_N"),
])
def test_bad_parameters_name_themselves_before_any_server_starts(kwargs, name, tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    with pytest.raises(ConfigError) as err:
        insert.validate(**{"engines": "postgres", **kwargs})
    assert err.value.name == name and "expected" in str(err.value)
    assert not (tmp_path / "lab").exists()


def test_defaults_follow_the_scale():
    assert insert.validate("postgres", scale="paper").profile_n == 30
    assert insert.validate("postgres", scale="paper").n == 1000
    assert insert.validate("postgres", variants="sync_off").variants == ("sync_off",)


def test_measure_writes_every_row_and_keeps_every_sample(tmp_path, monkeypatch):
    from ingestlab.engines.postgres.capabilities import PostgresProfiledStatement

    passes = []  # the samples' rows in their table when each anatomy pass starts
    real = PostgresProfiledStatement.anatomy

    def counted(self, *args, **kwargs):
        passes.append(self.engine.tables.count_rows(insert.TABLE))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PostgresProfiledStatement, "anatomy", counted)
    params = insert.validate("postgres", n=120, repeats=2, warmup=3, profile_n=5, variants="sync_off")
    run = Run("01_insert_anatomy", params.as_dict(), tmp_path)
    data = insert.measure(params, run)
    s = data["samples"]
    measured = s[~s["warmup"]]
    by = measured.groupby(["scenario", "repeat"])["rows"].sum()
    assert (by == 120).all() and len(by) == 5 * 2
    assert measured[measured["scenario"] == "batch_100"].groupby("repeat").size().tolist() == [2, 2]
    assert s[s["warmup"] & (s["scenario"] == "single_row")].groupby("repeat").size().tolist() == [3, 3]
    assert run.table()["elapsed_s"].tolist() == s["elapsed_s"].tolist()
    assert run.meta["engines"][0]["variant"] == "sync_off"
    assert set(s["driver"]) == {run.meta["engines"][0]["driver"]} == {"psycopg2"}  # who measured each sample
    # the 5 profiled INSERTs split 3 + 2 over the repeats, each pass after a third (a half) of the single-row samples
    assert passes == [40, 80, 120, 60, 120]
    single = measured[measured["scenario"] == "single_row"]
    assert single.groupby("repeat")["statement_no"].apply(list).tolist() == [list(range(120))] * 2
    observed = data["anatomy"][(data["anatomy"]["component"] == anatomy.CLIENT_TOTAL)
                               & ~data["anatomy"]["pass"].isin(["stats", "ladder", anatomy.UNOBSERVED])]
    assert observed.groupby("repeat")["profiled_no"].apply(list).tolist() == [[0, 1, 2], [3, 4]]
    assert not observed["warmup"].any()  # the table was opened before the passes
    # every block loses its first SETTLE statements, no more
    settle = capabilities.ProfiledStatement.SETTLE
    assert anatomy.summary(data["anatomy"]).iloc[0]["n"] == 5 * (insert.UNOBSERVED_BLOCK - settle)
    fits = insert_analysis.fit(s)
    assert set(fits["variant"]) == {"sync_off"}


def test_an_anatomy_round_whose_instrument_lost_statements_is_noted_and_the_run_goes_on(tmp_path, monkeypatch):
    # the instrument's failure is injected (a history too short to hold the round is what raises it for real)
    from ingestlab.engines.postgres.capabilities import PostgresProfiledStatement
    from ingestlab.errors import UnsupportedOperationError

    def lost(self, *args, **kwargs):
        raise UnsupportedOperationError("performance_schema kept 3 of the 4 statements")

    monkeypatch.setattr(PostgresProfiledStatement, "anatomy", lost)
    params = insert.validate("postgres", n=200, repeats=2, warmup=1, profile_n=4, variants="sync_off",
                             scenarios="single_row,batch_100")
    run = Run("01_insert_anatomy", params.as_dict(), tmp_path)
    data = insert.measure(params, run)
    assert data["anatomy"].empty and (data["samples"]["rows"][~data["samples"]["warmup"]].sum() == 2 * 2 * 200)
    assert [n for n in run.meta["notes"] if "no anatomy" in n] == [
        f"sync_off profiled INSERT {r}: no anatomy (performance_schema kept 3 of the 4 statements)" for r in range(4)]


def test_measure_runs_every_scenario_on_the_local_mariadb(tmp_path):
    from ingestlab.engines.mariadb.server import find_binary
    from ingestlab.errors import EngineUnavailableError

    try:
        find_binary("mariadbd")
    except EngineUnavailableError as exc:
        pytest.skip(str(exc))
    params = insert.validate("mariadb", n=120, repeats=1, warmup=3, profile_n=4, variants="flush_1,flush_0")
    run = Run("01_insert_anatomy", params.as_dict(), tmp_path)
    data = insert.measure(params, run)
    measured = data["samples"][~data["samples"]["warmup"]]
    assert (measured.groupby(["variant", "scenario"])["rows"].sum() == 120).all()
    assert set(measured["scenario"]) == set(insert.SCENARIOS)  # bulk = LOAD DATA LOCAL INFILE
    assert set(measured["driver"]) == {run.meta["engines"][0]["driver"]} <= {"mysqldb", "pymysql"}
    parts = anatomy.summary(data["anatomy"])
    assert {"commit_ms", "unexplained_ms", "client_total_ms", "unexplained_share"} <= set(parts.columns)
    assert "commit" in set(anatomy.parts(parts)["component"])
    assert len(anatomy.describe(parts)) == 2


def test_the_prediction_of_an_unseen_scenario_needs_a_line_without_it_and_says_when_there_is_none():
    rows = [{"engine": "e", "variant": "v", "scenario": sc, "repeat": r, "warmup": False, "rows": 1000 // n,
             "elapsed_s": 0.004 / n + 0.0002} for sc, n in (("single_row", 1000), ("batch_100", 10),
                                                             ("batch_1000", 1)) for r in range(3) for _ in range(n)]
    samples = pd.DataFrame(rows)
    rng = np.random.default_rng(1)  # each statement ± 20 %: a line that holds, with noise
    samples["elapsed_s"] *= rng.lognormal(0, 0.2, len(samples))
    table = insert_analysis.prediction(samples)
    assert table["inside"].tolist() == [True] and table["runs"].tolist() == [3]
    assert table["predicted_s"].iloc[0] == pytest.approx(table["observed_median_s"].iloc[0], rel=0.1)
    one_repeat = samples[samples["repeat"] == 0]  # 2 runs besides batch_100: no line to predict from
    assert insert_analysis.prediction(one_repeat).empty
    assert "No prediction" in insert_analysis.describe_prediction(insert_analysis.prediction(one_repeat))[0]


def _anatomy_beside(samples_ms: float, overhead: tuple[float, float, float], holds: bool | None = True):
    rng = np.random.default_rng(1)
    observed = list(0.30 + rng.normal(0, 0.005, 6))
    quiet = list(0.20 + rng.normal(0, 0.005, 60))
    settle = [k < 3 for _ in range(6) for k in range(10)]
    parts = [[("commit", 0.15, "s")]] * 6
    frame = anatomy.frame("stages", observed, parts, unobserved=(quiet, settle, [[("commit", 0.15, "s")]] * 60))
    frame = frame.assign(engine="mariadb", variant="flush_1")
    samples = pd.DataFrame({"scenario": "single_row", "warmup": [True] + [False] * 99, "engine": "mariadb",
                            "variant": "flush_1", "elapsed_s": samples_ms / 1e3 + rng.normal(0, 1e-6, 100)})
    fits = pd.DataFrame([{"engine": "mariadb", "variant": "flush_1", "method": "ols", "overhead_ms": overhead[0],
                          "overhead_ci_low_ms": overhead[1], "overhead_ci_high_ms": overhead[2],
                          "model_holds": holds}])
    return insert_analysis.anatomy_table(frame, samples, fits)


def test_the_anatomy_table_holds_the_statement_beside_the_samples_and_the_fit():
    table = _anatomy_beside(0.21, (0.205, 0.19, 0.22))
    row = table.iloc[0]
    assert row["client_total_ms"] == pytest.approx(0.20, abs=0.005)
    assert row["samples_median_ms"] == pytest.approx(0.21, abs=0.001)
    assert row["total_vs_samples"] == pytest.approx(0.20 / 0.21, abs=0.03)
    assert row["observer_ms"] == pytest.approx(0.10, abs=0.01)
    (line,) = insert_analysis.describe_agreement(table)
    assert "the same statement (within ±10 %)" in line and "misses" not in line
    far = insert_analysis.describe_agreement(_anatomy_beside(0.30, (0.40, 0.38, 0.42)))[0]
    assert "**not** the same statement" in far and "misses the median" in far
    fig = insert_analysis.anatomy_figure(table)
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]  # one legend under the panels
    assert "samples' median" in labels and "fitted overhead (95 % CI)" in labels and "commit" in labels


@pytest.mark.parametrize("holds", [False, None])
def test_the_anatomy_draws_no_fitted_overhead_whose_line_does_not_hold_and_says_so(holds):
    table = _anatomy_beside(0.21, (0.205, 0.19, 0.22), holds=holds)
    fig = insert_analysis.anatomy_figure(table)
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "samples' median" in labels and "fitted overhead (95 % CI)" not in labels
    (line,) = insert_analysis.describe_agreement(table)
    assert "not drawn" in line and ("does not hold" if holds is False else "not tested") in line


def test_a_paper_run_s_rejected_overheads_stay_in_the_table_and_leave_the_figure_and_its_sentence(paper_01):
    # every line of this run holds; in the promoted run of 2026-11-28 PostgreSQL's sync_off and DuckDB's did not
    fits = paper_01["fits"].copy()
    fits.loc[fits["engine"].eq("duckdb") | fits["variant"].eq("sync_off"), "model_holds"] = False
    rejected = fits[(fits["method"] == "ols") & ~fits["model_holds"]]
    table = insert_analysis.live_vs_published(fits, paper_01["throughput"], paper_01["diff"])
    overhead = table[table["compared"] == "overhead_ms"]
    gone = overhead[overhead["engine"].isin(rejected["engine"]) & overhead["variant"].isin(rejected["variant"])
                    & ~overhead["live_holds"].map(models.model_holds).eq(True)]
    assert len(gone) and gone["live"].notna().all()  # the numbers are kept in the table
    fig = insert_analysis.plot_live_vs_published(table)
    shown = {t.get_text().replace("\n", " ") for t in fig.axes[0].get_yticklabels()}
    assert not any(series in shown for series in gone["series"]), (shown, set(gone["series"]))
    text = findings.live_vs_published(table, left_out=~insert_analysis.drawn(table))
    assert "Left out, their lines not holding" in text
    assert text.count(" over ") == 1 and f"over {int(insert_analysis.drawn(table).sum())} quantities" in text


def test_measure_runs_every_scenario_on_postgresql_15_with_the_anatomy_it_can_take(tmp_path):
    """Issue Q: notebook 01 on PostgreSQL 15 (no pg_stat_io) completes, its anatomy saying which part it lacks."""

    reason = registry.class_of("postgres15").unavailable_reason()
    if reason:
        pytest.skip(reason)
    params = insert.validate("postgres15", n=120, repeats=1, warmup=3, profile_n=4, variants="sync_on")
    run = Run("01_insert_anatomy", params.as_dict(), tmp_path)
    data = insert.measure(params, run)
    measured = data["samples"][~data["samples"]["warmup"]]
    assert (measured.groupby(["variant", "scenario"])["rows"].sum() == 120).all()
    assert set(measured["scenario"]) == set(insert.SCENARIOS)
    assert run.meta["engines"][0]["server_version"].startswith("15.")
    parts = anatomy.summary(data["anatomy"])
    assert {"planning_ms", "execution_ms", "client_total_ms", "unexplained_share"} <= set(parts.columns)
    assert "wal_flush_ms" not in parts or parts["wal_flush_ms"].isna().all()  # pg_stat_io is new in 16
    missing = data["anatomy"][data["anatomy"]["pass"] == "unmeasured"]
    assert set(missing["component"]) == {"wal_flush"} and "PostgreSQL 16" in missing["source"].iloc[0]


PAPER_01 = Path(__file__).parents[1] / "fixtures" / "paper-01"


@pytest.fixture(scope="module")
def paper_01():
    """A real paper run on four engines (tests/fixtures/paper-01/README.md): samples, fits, throughput, anatomy."""
    samples = pd.read_parquet(PAPER_01 / "results.parquet")
    for column in ("engine", "variant", "scenario"):
        samples[column] = samples[column].astype(str)
    fits = insert_analysis.fit(samples)
    totals = models.scenario_totals(samples[samples["scenario"].isin(insert.FIT_SCENARIOS)])
    diff = insert_analysis.variant_difference(totals, ["sync_on", "sync_off", "flush_1", "flush_2", "flush_0"])
    return {"samples": samples, "fits": fits, "throughput": insert_analysis.throughput(samples), "diff": diff,
            "anatomy": pd.read_csv(PAPER_01 / "anatomy_summary.csv")}


def test_the_comparison_with_the_seed_names_each_quantity_its_live_series_and_the_seeds_reference(paper_01):
    table = insert_analysis.live_vs_published(paper_01["fits"], paper_01["throughput"], paper_01["diff"])
    seed = insert_analysis.published_fits().query("method == 'ols'")
    overhead = table[table["compared"] == "overhead_ms"]
    assert len(overhead) == 7 * len(seed)  # every live series against every seed fit
    assert set(overhead["reference"]) == {f"StarRocks {d} {v}" for d, v in zip(seed["deployment"], seed["version"])}
    row = overhead[(overhead["series"] == "PostgreSQL, synchronous_commit on")
                   & (overhead["reference"] == "StarRocks shared-data 4.0.5")].iloc[0]
    assert row["quantity"] == "overhead (ms) of PostgreSQL, synchronous_commit on against the seed's shared-data 4.0.5"
    assert row["live"] == pytest.approx(paper_01["fits"].query("engine == 'postgres' and variant == 'sync_on' "
                                                               "and method == 'ols'")["overhead_ms"].iloc[0])
    assert row["published"] == pytest.approx(seed.query("deployment == 'shared-data'")["overhead_ms"].iloc[0])
    (commit,) = table[table["compared"] == "commit_extra_ms"].itertuples()
    assert commit.series == "PostgreSQL, synchronous_commit on − synchronous_commit off"
    assert commit.live == pytest.approx(paper_01["diff"]["diff_ms"])
    speedups = table[table["compared"] == "batching_speedup_x"]
    tp = paper_01["throughput"].set_index(["engine", "variant", "scenario"])["total_s"]
    duck = speedups[speedups["engine"] == "duckdb"].iloc[0]
    assert duck["live"] == pytest.approx(tp["duckdb", "default", "single_row"] / tp["duckdb", "default", "batch_1000"])
    assert len(speedups) == 7 and speedups["published"].nunique() == 1


def test_the_figures_of_a_paper_run_on_four_engines_fit_the_page_and_keep_the_grammar(paper_01, tmp_path):
    """Notebook 01's figures from seven series on four engines: saved strictly (tests/conftest.py: any break of the
    grammar raises), each PNG within the page, every engine in its own colour in every panel."""
    import matplotlib.pyplot as plt

    from ingestlab import figures

    comparison = insert_analysis.live_vs_published(paper_01["fits"], paper_01["throughput"], paper_01["diff"])
    with plt.rc_context():  # as the notebook draws them
        figures.use_article_theme()
        _draw_01(paper_01, comparison, tmp_path)


def _draw_01(paper_01, comparison, tmp_path):
    from ingestlab import captions, figure_checks, figures, findings
    from ingestlab.timing import measured_ms

    samples = paper_01["samples"]
    totals = models.scenario_totals(samples[samples["scenario"].isin(insert.FIT_SCENARIOS)])
    drawn = {"latency": insert_analysis.latency_figure(measured_ms(samples)),
             "fit": insert_analysis.fit_figure(totals, insert_analysis.tidy_fits(paper_01["fits"])),
             "anatomy": insert_analysis.anatomy_figure(paper_01["anatomy"]),
             "live_vs_published": insert_analysis.plot_live_vs_published(comparison)}
    assert len(drawn["latency"].axes) == 4 and len(drawn["live_vs_published"].axes) == 3
    # seven lines in one panel were seven colours (at most five): a panel per engine, on the same axes
    fit_panels = {ax.get_title(loc="left"): ax for ax in drawn["fit"].axes if ax.get_visible()}
    assert sorted(fit_panels) == ["ClickHouse", "DuckDB", "MariaDB", "PostgreSQL"]
    assert len({(ax.get_xlim(), ax.get_ylim()) for ax in fit_panels.values()}) == 1
    # the anatomy: a panel per engine, each its own time axis from 0 (PostgreSQL's 0.2 ms beside ClickHouse's 7 ms)
    anatomy_panels = {ax.get_title(loc="left"): ax for ax in drawn["anatomy"].axes}
    assert sorted(anatomy_panels) == ["ClickHouse", "DuckDB", "MariaDB", "PostgreSQL"]
    # from 0 (PostgreSQL's reaches below it: its parts add up to 0.012 ms more than the statement, "unexplained" < 0)
    assert all(ax.get_xlim()[0] == min(0.0, ax.dataLim.x0) for ax in anatomy_panels.values())
    assert sum(ax.get_xlim()[0] == 0 for ax in anatomy_panels.values()) == 3
    assert anatomy_panels["PostgreSQL"].get_xlim()[1] < anatomy_panels["ClickHouse"].get_xlim()[1] / 5
    segment = {ax.get_title(loc="left"): {c.get_label(): matplotlib.colors.to_hex(c.patches[0].get_facecolor())
                                          for c in ax.containers if isinstance(c, matplotlib.container.BarContainer)}
               for ax in anatomy_panels.values()}
    assert all(s == segment["PostgreSQL"] for s in segment.values())  # a part keeps its colour in every panel
    colours = {ax.get_title(loc="left"): {matplotlib.colors.to_hex(line.get_color()) for line in ax.lines} - {"#000000"}
               for ax in drawn["latency"].axes}  # boxes and whiskers in their series' colour; black: seaborn's own
    assert colours["DuckDB"] == {figures.ENGINE_STYLE["duckdb"][0].lower()}
    assert all(figure_checks.is_shade_of(c, figures.ENGINE_STYLE["mariadb"][0]) for c in colours["MariaDB"])
    panel = drawn["live_vs_published"].axes[0]
    assert [t.get_text() for t in panel.get_yticklabels()][:4] == [
        "StarRocks shared-data 4.0.5 (seed)", "StarRocks shared-nothing 4.0.4 (seed)",
        "StarRocks shared-nothing 4.0.5 (seed)", "PostgreSQL, synchronous commit on"]
    run = {"engines": [{"name": e, "server_version": "1.0"} for e in ("postgres", "mariadb", "duckdb", "clickhouse")],
           "git": {"commit": "0" * 40}}
    for name, fig in drawn.items():
        captions.caption(fig, name, finding=findings.live_vs_published(comparison), run=run)
        figures.save(fig, name, notebook="01_insert_anatomy", directory=tmp_path)
        assert figure_checks.print_size_problems(tmp_path / f"{name}.png") == [], name


PAPER_01_SIX = Path(__file__).parents[1] / "fixtures" / "paper-01-six"


def test_the_article_figures_of_a_paper_run_on_six_engines_with_two_clusters_fit_the_page(tmp_path):
    """Six engines, ten series (tests/fixtures/paper-01-six/README.md): the fit's one legend under the panels ran to
    8.9 in; each panel now names its own series in it, the engines in the lab's order, saved strictly."""
    import matplotlib.pyplot as plt

    from ingestlab import captions, figure_checks, figures

    samples = pd.read_parquet(PAPER_01_SIX / "results.parquet")
    fits = insert_analysis.fit(samples)
    totals = models.scenario_totals(samples[samples["scenario"].isin(insert.FIT_SCENARIOS)])
    diff = insert_analysis.variant_difference(totals, ["sync_on", "sync_off", "flush_1", "flush_2"])
    comparison = insert_analysis.live_vs_published(fits, insert_analysis.throughput(samples), diff)
    with plt.rc_context():
        figures.use_article_theme()
        drawn = {"fit": insert_analysis.fit_figure(totals, insert_analysis.tidy_fits(fits)),
                 "anatomy": insert_analysis.anatomy_figure(pd.read_csv(PAPER_01_SIX / "anatomy_summary.csv")),
                 "live_vs_published": insert_analysis.plot_live_vs_published(comparison)}
        in_order = ["PostgreSQL", "PostgreSQL + 1 sync standby", "MariaDB", "MariaDB Galera", "DuckDB", "ClickHouse"]
        for name in ("fit", "anatomy"):
            assert [ax.get_title(loc="left") for ax in drawn[name].axes if ax.get_visible()] == in_order, name
        for ax in drawn["fit"].axes:  # the panel's own series, by their variant alone, in its upper left
            entries = [t.get_text().split("\n")[0] for t in ax.get_legend().get_texts()]
            assert entries and not any(e.startswith(ax.get_title(loc="left") + ",") for e in entries)
            assert ax.get_legend()._loc == 2  # "upper left"
        titled = [ax for ax in drawn["fit"].axes if ax.get_legend().get_title().get_text()]
        assert len(titled) == 1 and "95 % CI" in titled[0].get_legend().get_title().get_text()
        run = {"engines": [{"name": e, "server_version": "1.0"} for e in samples["engine"].unique()],
               "git": {"commit": "0" * 40}}
        for name, fig in drawn.items():  # strict (tests/conftest.py): a break of the grammar raises
            captions.caption(fig, name, finding=findings.live_vs_published(comparison), run=run)
            figures.save(fig, name, notebook="01_insert_anatomy", directory=tmp_path)
            assert figure_checks.print_size_problems(tmp_path / f"{name}.png") == [], name


def test_validate_resolves_the_scale_and_keeps_the_engines_in_their_order():
    assert insert.validate("postgres", "smoke").n == 500 < insert.validate("postgres", "paper").n
    assert [spec.name for spec in insert.validate("postgres,mariadb").engines] == ["postgres", "mariadb"]


def test_an_engine_whose_variants_have_one_point_each_is_passed_over_saying_so_not_the_run():
    # issue V item 12: `run 01 -p SCENARIOS single_row,bulk -p REPEATS 1` on the default engines failed (exit 4)
    # in MariaDB's difference of flush_1 and flush_0, one single-row point each
    one = pd.DataFrame({"engine": "mariadb", "variant": ["flush_1", "flush_0"], "scenario": "single_row",
                        "n_statements": 1000, "total_s": [0.4, 0.1]})
    with pytest.warns(models.FitLeftOut, match="mariadb: the difference of flush_1 and flush_0 left out"):
        assert insert_analysis.variant_difference(one, ["flush_1", "flush_2", "flush_0"]) is None
    enough = pd.DataFrame({"engine": "postgres", "variant": ["sync_on"] * 3 + ["sync_off"] * 3,
                           "n_statements": [1000, 10, 1] * 2, "total_s": [0.5, 0.006, 0.0015, 0.1, 0.002, 0.0011]})
    with pytest.warns(models.FitLeftOut):
        diff = insert_analysis.variant_difference(pd.concat([one, enough]), ["sync_on", "sync_off", "flush_1", "flush_0"])
    assert diff["engine"] == "postgres" and diff["first"] == "sync_on" and diff["diff_ms"] > 0


@pytest.mark.xfail(strict=True, raises=figure_checks.FigureGrammarError,
                   reason="issue W: fifteen series in six panels do not fit one page figure at the grammar's sizes; "
                          "the anatomy must show fewer (tests/fixtures/paper-01-six-all)")
def test_the_anatomy_of_every_default_variant_on_six_engines_fits_the_page(tmp_path):
    import matplotlib.pyplot as plt

    from ingestlab import figures

    table = pd.read_csv(Path(__file__).parents[1] / "fixtures" / "paper-01-six-all" / "anatomy_summary.csv")
    assert table.groupby(["engine", "variant"]).ngroups == 15
    with plt.rc_context():
        figures.use_article_theme()
        fig = insert_analysis.anatomy_figure(table)
        figures.save(fig, "anatomy", notebook="01_insert_anatomy", directory=tmp_path)  # strict: a break raises
