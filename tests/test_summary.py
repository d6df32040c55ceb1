"""The run folder's summary: fits by what they estimate, headline numbers, the scale of each run."""

from __future__ import annotations

import pandas as pd
import pytest

from ingestlab import models, summary
from ingestlab.errors import ConfigError
from ingestlab.results import Run
from ingestlab.workloads import upsert_analysis


def _fit(engine: str, variant: str, **values) -> dict:
    return {"engine": engine, "variant": variant, "method": "ols", "r2": 0.99, "n_points": 9, **values}


@pytest.fixture
def run_folder(tmp_path):
    """Two notebooks' runs written by the lab's own Run: 01 at paper scale, 03 at smoke scale, 04 unfinished."""
    run01 = Run("01_insert_anatomy", {"scale": "paper"}, tmp_path / "01_insert_anatomy")
    run01.finish(fits=models.tidy(pd.DataFrame([_fit("postgres", "sync_on", overhead_ms=0.46, overhead_ci_low_ms=0.40,
                                                     overhead_ci_high_ms=0.53, write_time_s=0.01)]),
                                  model="overhead", terms=models.OVERHEAD_TERMS),
                 headline={"overhead_ms[sync_on]": 0.46, "diff_ms": [0.24, 0.2, 0.28]})
    run03 = Run("03_upsert_beyond_ram", {"scale": "smoke"}, tmp_path / "03_upsert_beyond_ram")
    run03.finish(fits=upsert_analysis.tidy_fits(pd.DataFrame([_fit(
        "rocksdb", "overwrite", overhead_ms=5.5, overhead_ci_low_ms=-6.9, overhead_ci_high_ms=17.9, write_time_s=0.0,
        per_row_us=105.0, per_row_ci_low_us=-23.0, per_row_ci_high_us=233.0, disk_profile="local")])),
                 headline={"ratio_median[rocksdb overwrite/insert, local]": 43.5})
    Run("04_group_commit", {"scale": "smoke"}, tmp_path / "04_group_commit")
    return tmp_path


def test_per_statement_per_batch_and_per_row_fits_are_different_quantities(run_folder):
    table = summary.fits(run_folder)
    by = table.set_index(["notebook", "quantity"])
    assert by.loc[("01_insert_anatomy", "overhead: overhead"), ["estimate", "unit"]].tolist() == [0.46, "ms per statement"]
    assert by.loc[("01_insert_anatomy", "overhead: write_time"), ["estimate", "unit"]].tolist() == [0.01, "s"]
    assert by.loc[("03_upsert_beyond_ram", "batch_time local: overhead"), ["estimate", "unit"]].tolist() == [
        5.5, "ms per batch"]
    assert by.loc[("03_upsert_beyond_ram", "batch_time local: per_row"), ["estimate", "unit"]].tolist() == [
        105.0, "µs per row"]
    assert set(table.loc[table["notebook"] == "03_upsert_beyond_ram", "quantity"]) == {
        "batch_time local: overhead", "batch_time local: per_row"}
    assert dict(zip(table["notebook"], table["scale"])) == {"01_insert_anatomy": "paper",
                                                           "03_upsert_beyond_ram": "smoke"}
    assert list(table.columns) == summary.COLUMNS


def test_the_text_states_scales_headlines_and_unfinished_runs(run_folder):
    text = summary.format_summary(run_folder)
    assert "SCALE paper (01_insert_anatomy)" in text and "SCALE smoke (03_upsert_beyond_ram, 04_group_commit)" in text
    assert "not comparable with paper-scale numbers" in text
    assert "diff_ms = 0.240 (0.200–0.280)" in text and "overhead_ms[sync_on] = 0.46" in text
    assert "== 04_group_commit headline numbers (SCALE smoke) — did not complete" in text
    assert "-- batch_time local: per_row (µs per row)" in text and "-- overhead: overhead (ms per statement)" in text


def test_a_fits_csv_of_another_shape_is_left_out_not_misread(run_folder):
    (run_folder / "01_insert_anatomy" / "fits.csv").write_text("engine,variant,overhead_ms\npostgres,sync_on,0.46\n")
    assert set(summary.fits(run_folder)["notebook"]) == {"03_upsert_beyond_ram"}


def test_a_folder_that_is_no_run_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="RUN_DIR"):
        summary.fits(tmp_path / "missing")
    with pytest.raises(ConfigError, match="at least one notebook's run"):
        summary.format_summary(tmp_path)  # an empty folder
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "run.json").write_text('{"completed": true}')  # names no notebook: not a run of the lab
    with pytest.raises(ConfigError, match="RUN_DIR"):
        summary.format_summary(tmp_path)


def test_the_held_out_configurations_are_counted_per_notebook(run_folder):
    folder = run_folder / "01_insert_anatomy"
    pd.DataFrame({"engine": ["postgres", "mariadb", "postgres"], "variant": ["sync_on", "flush_1", "sync_off"],
                  "inside": [True, False, None]}).to_csv(folder / "prediction.csv", index=False)
    (run_folder / "03_upsert_beyond_ram" / "prediction.csv").write_text("")  # nothing predicted
    assert summary.prediction_lines(run_folder) == {
        "01_insert_anatomy": "   held-out configuration (prediction.csv): 1 of 2 (50%) inside their 95 % prediction "
                             "interval; 1 not tested (too few levels, or an interval too wide to tell)"}
    text = summary.format_summary(run_folder)
    assert text.index("held-out configuration (prediction.csv): 1 of 2") > text.index("== 01_insert_anatomy fits")


def test_a_term_without_unit_is_listed_too(run_folder):
    folder = run_folder / "01_insert_anatomy"
    fits = pd.read_csv(folder / "fits.csv")
    extra = fits.iloc[[0]].assign(model="usl rows_per_insert=1", term="sigma", unit="", estimate=0.12)
    pd.concat([fits, extra]).to_csv(folder / "fits.csv", index=False)
    text = summary.format_summary(run_folder)
    assert "-- usl rows_per_insert=1: sigma\n" in text and "(nan)" not in text


def test_an_interval_over_two_decades_or_from_too_few_points_is_printed_as_not_estimable(tmp_path):
    run = Run("06_csv_scan", {"scale": "smoke"}, tmp_path / "06_csv_scan")
    wide = _fit("duckdb", "default", overhead_ms=0.4194, overhead_ci_low_ms=2.723e-17, overhead_ci_high_ms=6.461e15,
                write_time_s=0.01)
    few = {**_fit("chdb", "default", overhead_ms=0.5, overhead_ci_low_ms=0.45, overhead_ci_high_ms=0.55,
                  write_time_s=0.01), "n_points": 2}
    fine = _fit("polars", "default", overhead_ms=0.46, overhead_ci_low_ms=0.40, overhead_ci_high_ms=0.53,
                write_time_s=0.01)
    run.finish(fits=models.tidy(pd.DataFrame([wide, few, fine]), model="overhead", terms=models.OVERHEAD_TERMS),
               headline={"count_over_full[duckdb]": [0.4194, 2.723e-17, 6.461e15], "x[polars]": [0.46, 0.40, 0.53]})
    text = summary.format_summary(tmp_path)
    assert "count_over_full[duckdb] = 0.4194 (95 % CI not estimable at this scale)" in text
    assert "x[polars] = 0.460 (0.400–0.530)" in text  # at the precision of its interval
    assert "6,461" not in text and "0.00000000000000002723" not in text
    overhead = text.split("-- overhead: overhead (ms per statement)")[1].split("--")[0].splitlines()
    by_engine = {line.split()[0]: line for line in overhead if line.strip() and not line.split()[0] == "engine"}
    assert by_engine["duckdb"].count("not estimable at this scale") == 2
    assert by_engine["chdb"].count("not estimable at this scale") == 2  # 2 points: a line has no CI
    assert "not estimable" not in by_engine["polars"] and "0.4" in by_engine["polars"]


def test_a_fits_csv_with_text_where_numbers_belong_is_left_out_and_said_so(run_folder):
    path = run_folder / "01_insert_anatomy" / "fits.csv"
    header, first, *rest = path.read_text().splitlines()
    assert first.startswith("01_insert_anatomy,postgres,sync_on,overhead,ols,overhead,0.46,0.4,0.53,ms per statement,9,")
    first = first.replace(",0.46,", ",abc,").replace(",9,", ",zz,")
    path.write_text("\n".join([header, first, *rest]) + "\n")
    text = summary.format_summary(run_folder)  # no ValueError
    assert "note: 01_insert_anatomy: fits.csv left out: not a number in estimate ('abc'), n_points ('zz')" in text
    assert "== 01_insert_anatomy fits" not in text and "== 03_upsert_beyond_ram fits" in text
    assert "overhead_ms[sync_on] = 0.46" in text  # its headline numbers still shown
