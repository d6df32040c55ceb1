import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from ingestlab import models


def _synthetic(rng, overhead_s=0.002, write_s=0.05, noise_s=0.004, repeats=3):
    ns = [1000, 10, 1]
    rows = [{"n_statements": n, "total_s": n * overhead_s + write_s + rng.normal(0, noise_s)}
            for _ in range(repeats) for n in ns]
    return pd.DataFrame(rows)


def test_fit_recovers_known_overhead_within_ci():
    rng = np.random.default_rng(42)
    covered = 0
    for _ in range(200):
        fit = models.fit_overhead(_synthetic(rng), robust=False).iloc[0]
        covered += fit["overhead_ci_low_ms"] <= 2.0 <= fit["overhead_ci_high_ms"]
    assert covered / 200 >= 0.90


def test_fit_estimate_is_close_and_intercept_is_write_time():
    fit = models.fit_overhead(_synthetic(np.random.default_rng(1), noise_s=1e-5), robust=False).iloc[0]
    assert fit["overhead_ms"] == pytest.approx(2.0, rel=1e-3)
    assert fit["write_time_s"] == pytest.approx(0.05, abs=1e-4)
    assert fit["r2"] > 0.999 and fit["n_points"] == 9


def test_theil_sen_rides_beside_ols_and_resists_an_outlier():
    data = _synthetic(np.random.default_rng(3), noise_s=1e-4, repeats=4)
    data.loc[0, "total_s"] *= 3  # one wild run
    fits = models.fit_overhead(data).set_index("method")
    assert set(fits.index) == {"ols", "theil_sen"}
    assert abs(fits.loc["theil_sen", "overhead_ms"] - 2.0) < abs(fits.loc["ols", "overhead_ms"] - 2.0)


def test_fit_groups_by_the_columns_present():
    a = _synthetic(np.random.default_rng(4)).assign(engine="e", variant="a")
    b = _synthetic(np.random.default_rng(5), overhead_s=0.001).assign(engine="e", variant="b")
    fits = models.fit_overhead(pd.concat([a, b]), robust=False).set_index("variant")
    assert fits.loc["a", "overhead_ms"] > fits.loc["b", "overhead_ms"]


def test_a_group_with_too_few_points_is_left_out_saying_so_and_the_others_fitted():
    frame = pd.DataFrame({"engine": ["a"] * 2 + ["b"] * 4, "variant": "v", "n_statements": [1, 10, 1, 10, 100, 1000],
                          "total_s": [0.1, 0.2, 0.1, 0.2, 1.1, 10.2]})
    with pytest.warns(models.FitLeftOut, match="engine a, variant v: left out of the fit of total_s on n_statements: "
                                               "2 points at 2 distinct n_statements"):
        fits = models.fit_overhead(frame)
    assert set(fits["engine"]) == {"b"}
    with pytest.warns(models.FitLeftOut):
        empty = models.fit_overhead(frame[frame["engine"] == "a"])
    assert empty.empty and {"engine", "variant", "overhead_ms", "overhead_ci_low_ms"} <= set(empty.columns)


def test_a_multi_term_fit_without_enough_points_is_left_out_with_its_columns():
    frame = pd.DataFrame({"g": ["x", "x"], "y": [1.0, 2.0], "a": [0.5, 1.0], "r": [1, 10]})
    with pytest.warns(models.FitLeftOut, match="g x: left out of the fit of y on a, r: 2 points"):
        fits = models.fit_terms(frame, y="y", terms=["a", "r"], by=["g"], adequacy=True)
    assert fits.empty and {"g", "term", "estimate", "model_holds"} <= set(fits.columns)


def test_scenario_totals_exclude_warmup():
    samples = pd.DataFrame({"scenario": ["s"] * 3, "repeat": [0] * 3, "warmup": [True, False, False],
                            "rows": [1, 1, 1], "elapsed_s": [5.0, 0.1, 0.2]})
    totals = models.scenario_totals(samples).iloc[0]
    assert (totals["n_statements"], totals["rows"], totals["total_s"]) == (2, 2, pytest.approx(0.3))


def test_overhead_difference_ci_brackets_the_true_difference():
    a = _synthetic(np.random.default_rng(6), overhead_s=0.003, noise_s=1e-4).assign(variant="a")
    b = _synthetic(np.random.default_rng(7), overhead_s=0.001, noise_s=1e-4).assign(variant="b")
    points = pd.concat([a, b])
    d = models.overhead_difference(points, {"variant": "a"}, {"variant": "b"})
    assert d["diff_ci_low_ms"] < 2.0 < d["diff_ci_high_ms"]
    assert d["ratio"] == pytest.approx(3.0, rel=0.01)
    # the interaction model's difference is the difference of the separate fits
    fits = models.fit_overhead(points, by=["variant"], robust=False).set_index("variant")
    assert d["diff_ms"] == pytest.approx(fits.loc["a", "overhead_ms"] - fits.loc["b", "overhead_ms"])


def test_overhead_difference_refuses_a_fits_table():
    fits = models.fit_overhead(_synthetic(np.random.default_rng(6)).assign(variant="a"), by=["variant"])
    with pytest.raises(ValueError, match="takes the points"):
        models.overhead_difference(fits, {"variant": "a"}, {"variant": "b"})


def test_scale_table_scales_linearly():
    t = models.scale_table({"diff_ms": 2.0, "diff_ci_low_ms": 1.0, "diff_ci_high_ms": 3.0})
    assert t["n_statements"].tolist() == list(models.SCALE_NS)
    assert t.set_index("n_statements").loc[100_000, "extra_s"] == pytest.approx(200.0)


def test_compare_with_published_flags_coverage():
    live = pd.DataFrame({"quantity": ["a", "b"], "live": [10.0, 5.0], "live_ci_low": [9.0, 4.0],
                         "live_ci_high": [11.0, 6.0]})
    pub = pd.DataFrame({"quantity": ["a", "b"], "published": [10.5, 8.0]})
    out = models.compare_with_published(live, pub).set_index("quantity")
    assert out.loc["a", "ci_covers_published"] and not out.loc["b", "ci_covers_published"]
    assert out.loc["b", "ratio"] == pytest.approx(5 / 8)


def test_fit_overhead_gives_the_seed_overheads_from_the_published_starrocks_table():
    # the statistics on the real table (tests/test_published.py checks the transcription with a plain polyfit)
    from ingestlab import published

    table = published.load("starrocks_insert_scenarios")
    points = table[table["scenario"].isin(["single_row", "batch_100", "batch_1000"])]
    fits = models.fit_overhead(points, by=["engine", "deployment", "version"])
    ols = fits[fits["method"] == "ols"].set_index(["deployment", "version"])
    assert len(ols) == 3 and (ols["n_points"] == 3).all()
    for key, seed_ms in {("shared-data", "4.0.5"): 64.2, ("shared-nothing", "4.0.4"): 100.0,
                         ("shared-nothing", "4.0.5"): 100.0}.items():
        fit = ols.loc[key]
        assert fit["overhead_ms"] == pytest.approx(seed_ms, abs=1.0), key
        assert fit["overhead_ci_low_ms"] <= seed_ms <= fit["overhead_ci_high_ms"], key


def test_fit_sweep_fits_what_each_group_allows():
    line = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [3.0, 5.1, 6.9, 9.0], "g": "line"})
    pair = pd.DataFrame({"x": [1.0, 64.0], "y": [60.0, 70.0], "g": "pair"})
    lone = pd.DataFrame({"x": [5.0], "y": [1.0], "g": "lone"})
    fits = models.fit_sweep(pd.concat([line, pair, lone]), x="x", y="y", by=["g"]).set_index("g")
    assert fits["method"].to_dict() == {"line": "ols", "pair": "two_point", "lone": "none"}
    ols = models.fit_linear(line, x="x", y="y", robust=False).iloc[0]
    assert fits.loc["line", "slope"] == pytest.approx(ols["slope"])
    assert fits.loc["line", "slope_ci_low"] == pytest.approx(ols["slope_ci_low"])
    assert fits.loc["pair", "slope"] == pytest.approx(10 / 63)
    assert fits.loc["pair", "intercept"] == pytest.approx(60 - 10 / 63)
    assert fits.loc["pair", ["slope_ci_low", "slope_ci_high", "intercept_ci_low"]].isna().all()
    assert np.isnan(fits.loc["lone", "slope"]) and fits.loc["lone", "n_points"] == 1


def test_fit_sweep_treats_repeated_x_values_as_one_level():
    # three points at one x cannot give a slope, whatever their number
    same_x = pd.DataFrame({"x": [2.0, 2.0, 2.0], "y": [1.0, 1.1, 0.9]})
    assert models.fit_sweep(same_x, x="x", y="y")["method"].tolist() == ["none"]


def test_fit_load_overhead_recovers_a_known_per_load_cost():
    rng = np.random.default_rng(9)
    n_loads = np.array([3_000_000, 300_000, 60_000, 30_000, 3_000] * 2)
    runs = pd.DataFrame({"n_loads": n_loads, "total_s": 100 + n_loads * 0.6e-3 + rng.normal(0, 1, len(n_loads)),
                         "group_commit_mode": "async", "concurrency": 10})
    off = pd.DataFrame({"n_loads": [30_000, 3_000], "total_s": [1_600.0, 250.0], "group_commit_mode": "off",
                        "concurrency": 10})
    fits = models.fit_load_overhead(pd.concat([runs, off])).set_index("group_commit_mode")
    fit = fits.loc["async"]
    assert fit["method"] == "ols" and fit["overhead_ci_low_ms"] <= 0.6 <= fit["overhead_ci_high_ms"]
    assert fit["write_time_s"] == pytest.approx(100, abs=2)
    assert fits.loc["off", "method"] == "two_point"
    assert fits.loc["off", "overhead_ms"] == pytest.approx(1_350 / 27_000 * 1e3)
    assert {"overhead_ms", "overhead_ci_low_ms", "overhead_ci_high_ms", "write_time_s", "r2",
            "n_points"} <= set(fits.columns)


def test_ratio_table_divides_the_two_levels_per_group_and_skips_incomplete_groups():
    t = pd.DataFrame({"engine": ["a", "a", "b", "b", "c"], "scenario": ["up", "in", "up", "in", "up"],
                      "ms": [30.0, 2.0, 9.0, 3.0, 5.0]})
    out = models.ratio_table(t, value="ms", between="scenario", a="up", b="in", by=["engine"])
    assert out["engine"].tolist() == ["a", "b"]
    assert out["ratio"].tolist() == pytest.approx([15.0, 3.0])
    assert out[["up", "in"]].to_numpy().tolist() == [[30.0, 2.0], [9.0, 3.0]]


def test_ratio_table_refuses_ambiguous_groups():
    t = pd.DataFrame({"scenario": ["up", "up", "in"], "ms": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="several rows"):
        models.ratio_table(t, value="ms", between="scenario", a="up", b="in")


def test_ratio_table_without_groups_gives_one_row():
    t = pd.DataFrame({"stage": ["before", "after"], "elapsed_s": [107.561, 47.252]})
    out = models.ratio_table(t, value="elapsed_s", between="stage", a="before", b="after")
    assert len(out) == 1 and out["ratio"].iloc[0] == pytest.approx(107.561 / 47.252)


# --- calibration on totals that are sums of heavy-tailed statement latencies ---------------------------
# A scenario run's total is the sum of its N statements' latencies, each log-normal (median 0.3 ms), plus
# the rows' write time: its variance grows with N, as on a real server. Designs as notebook 01's fit: the
# same 1 000 rows as 1 000 single-row INSERTs, 10 batches of 100 and 1 batch of 1 000 (+ INSERT … SELECT and
# bulk, one statement each), every scenario repeated.
LATENCY_MEDIAN_S = 0.3e-3


FIT_DESIGN = (1000, 10, 1)


ALL_SCENARIOS_DESIGN = (1000, 10, 1, 1, 1)


def _summed_latencies(rng, *, sigma, repeats, trials, design=FIT_DESIGN, write_s=0.02, write_sd_s=0.0):
    """``trials`` data sets, one row per scenario run: ``trial``, ``n_statements``, ``total_s``."""
    n = np.tile(np.repeat(design, repeats), trials)
    latencies = rng.lognormal(np.log(LATENCY_MEDIAN_S), sigma, n.sum())
    totals = np.add.reduceat(latencies, np.r_[0, np.cumsum(n)[:-1]])
    totals += write_s + (rng.normal(0, write_sd_s, len(n)) if write_sd_s else 0.0)
    return pd.DataFrame({"trial": np.arange(trials).repeat(len(design) * repeats), "n_statements": n,
                         "total_s": totals})


def _true_overhead_ms(sigma):
    return LATENCY_MEDIAN_S * np.exp(sigma**2 / 2) * 1e3  # the log-normal's mean


def _calibration(fits, truth):
    """Coverage, and the median CI width over the width a 95 % normal interval of known spread would have."""
    covered = (fits["overhead_ci_low_ms"] <= truth) & (truth <= fits["overhead_ci_high_ms"])
    width = fits["overhead_ci_high_ms"] - fits["overhead_ci_low_ms"]
    return covered.mean(), width.median() / (2 * 1.96 * fits["overhead_ms"].std())


CALIBRATION_CASES = [*((sigma, repeats, FIT_DESIGN) for sigma in (0.5, 1.0, 1.5) for repeats in (3, 5)),
                     (1.0, 3, ALL_SCENARIOS_DESIGN)]


@pytest.mark.parametrize(("sigma", "repeats", "design"), CALIBRATION_CASES)
def test_fit_overhead_ci_holds_when_variance_grows_with_statements(sigma, repeats, design):
    rng = np.random.default_rng([int(sigma * 10), repeats, len(design)])
    data = _summed_latencies(rng, sigma=sigma, repeats=repeats, trials=300, design=design)
    fits = models.fit_overhead(data, by=["trial"], robust=False)
    coverage, width = _calibration(fits, _true_overhead_ms(sigma))
    assert coverage >= 0.92
    assert width < 3.0, "covers by being absurdly wide"
    assert (fits["ci_method"] == "hc2_bm_var_prop_x").all()


def test_calibration_generator_defeats_the_constant_variance_interval():
    # the test above can fail: the interval OLS assumes (constant variance) misses on these data
    data = _summed_latencies(np.random.default_rng(11), sigma=1.0, repeats=3, trials=300)
    truth, covered = _true_overhead_ms(1.0) / 1e3, 0
    for _, g in data.groupby("trial"):
        low, high = sm.OLS(g["total_s"], sm.add_constant(g["n_statements"])).fit().conf_int().loc["n_statements"]
        covered += low <= truth <= high
    assert covered / 300 < 0.85


def test_fit_overhead_ci_holds_with_constant_write_noise_too():
    # the variance model is wrong here (write-time noise does not grow with N): HC2 keeps the interval honest
    data = _summed_latencies(np.random.default_rng(12), sigma=1.0, repeats=3, trials=300, write_sd_s=0.002)
    coverage, width = _calibration(models.fit_overhead(data, by=["trial"], robust=False), _true_overhead_ms(1.0))
    assert coverage >= 0.92 and width < 3.0


def test_fit_overhead_ci_holds_on_constant_variance_noise():
    rng = np.random.default_rng(13)
    data = pd.concat([_synthetic(rng).assign(trial=t) for t in range(300)])
    coverage, width = _calibration(models.fit_overhead(data, by=["trial"], robust=False), 2.0)
    assert coverage >= 0.90 and width < 3.0


def test_fit_overhead_without_repeats_falls_back_to_the_variance_model():
    # one run per scenario: HC2 cannot see the 1 000-statement run's variance, the working model can
    data = _summed_latencies(np.random.default_rng(14), sigma=1.0, repeats=1, trials=300)
    fits = models.fit_overhead(data, by=["trial"], robust=False)
    coverage, width = _calibration(fits, _true_overhead_ms(1.0))
    assert (fits["ci_method"] == "model_var_prop_x").all()
    assert coverage >= 0.90 and width < 6.0


def test_overhead_difference_ci_holds_when_variance_grows_with_statements():
    rng = np.random.default_rng(15)
    a = _summed_latencies(rng, sigma=1.0, repeats=3, trials=300).assign(variant="a")
    b = _summed_latencies(rng, sigma=0.5, repeats=3, trials=300).assign(variant="b")
    truth = _true_overhead_ms(1.0) - _true_overhead_ms(0.5)
    diffs = pd.DataFrame([models.overhead_difference(g, {"variant": "a"}, {"variant": "b"})
                          for _, g in pd.concat([a, b]).groupby("trial")])
    coverage = ((diffs["diff_ci_low_ms"] <= truth) & (truth <= diffs["diff_ci_high_ms"])).mean()
    width = (diffs["diff_ci_high_ms"] - diffs["diff_ci_low_ms"]).median() / (2 * 1.96 * diffs["diff_ms"].std())
    assert coverage >= 0.92 and width < 3.0


def test_fit_linear_names_its_interval_and_checks_the_variance_model():
    line = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0], "y": [3.0, 5.1, 6.9, 9.0, 11.2]})
    assert models.fit_linear(line, x="x", y="y")["ci_method"].tolist() == ["hc2_bm_var_const", "theil_sen"]
    assert models.fit_linear(line, x="x", y="y", robust=False,
                             variance="proportional")["ci_method"].tolist() == ["hc2_bm_var_prop_x"]
    with pytest.raises(ValueError, match="variance='poisson'"):
        models.fit_linear(line, x="x", y="y", variance="poisson")
    with pytest.raises(ValueError, match="x > 0"):
        models.fit_linear(line.assign(x=line["x"] - 3), x="x", y="y", variance="proportional")


def test_fit_sweep_names_no_interval_where_it_fits_none():
    pair = pd.DataFrame({"x": [1.0, 64.0], "y": [60.0, 70.0]})
    fit = models.fit_sweep(pair, x="x", y="y").iloc[0]
    assert fit["ci_method"] == "none" and np.isnan(fit["ci_df"])


def test_bell_mccaffrey_df_is_welch_satterthwaite_for_two_groups():
    # difference of two group means: the df reduce to Welch's, under equal and unequal variances
    side = np.r_[np.ones(3), np.zeros(5)]
    X = np.column_stack([np.ones(8), side])
    leverage = sm.OLS(np.arange(8.0), X).fit().get_influence().hat_matrix_diag
    for var_a, var_b in ((1.0, 1.0), (4.0, 1.0)):
        omega = np.where(side == 1, var_a, var_b)
        welch = (var_a / 3 + var_b / 5) ** 2 / ((var_a / 3) ** 2 / 2 + (var_b / 5) ** 2 / 4)
        assert models._bell_mccaffrey_df(X, leverage, omega, np.array([0.0, 1.0])) == pytest.approx(welch)


def test_a_constant_response_gives_a_nan_r2_without_a_runtime_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = models.fit_linear(pd.DataFrame({"x": [1, 2, 3, 4], "y": [2.0] * 4}), x="x", y="y", robust=False)
    assert np.isnan(fit["r2"].iloc[0]) and fit["slope"].iloc[0] == pytest.approx(0.0)


def test_fit_terms_tests_its_sum_by_reset_and_rejects_a_missing_curvature():
    rng = np.random.default_rng(5)
    grid = pd.DataFrame([(a, r) for a in (1.0, 0.5, 0.25, 0.1) for r in (1, 10, 100) for _ in range(2)],
                        columns=["a", "r"])
    noise = rng.normal(0, 0.002, len(grid))
    straight = grid.assign(t=0.1 + 0.2 * grid["a"] + 0.001 * grid["r"] + noise)
    bent = grid.assign(t=0.1 + 0.2 * grid["a"] + 0.001 * grid["r"] + 0.5 * grid["a"] ** 2 + noise)
    held = models.fit_terms(straight, y="t", terms=["a", "r"], adequacy=True)
    missed = models.fit_terms(bent, y="t", terms=["a", "r"], adequacy=True)
    assert (held["adequacy_test"] == "reset").all() and held["model_holds"].eq(True).all()
    assert missed["model_holds"].eq(False).all() and (missed["lack_of_fit_p"] < 0.01).all()
    assert missed["model_note"].str.startswith("RESET p = ").all()
    assert "model_holds" not in models.fit_terms(straight, y="t", terms=["a", "r"]).columns



def test_fit_terms_rejects_a_sum_whose_cost_lies_wholly_below_zero_and_only_for_the_costs_named():
    # as 04's paper run: MariaDB flush_2's cost per row −0.0013 ms (CI −0.0018 to −0.0008) marked as holding
    rng = np.random.default_rng(5)
    grid = pd.DataFrame([(a, r) for a in (1.0, 0.5, 0.25, 0.1) for r in (1, 10, 100) for _ in range(2)],
                        columns=["a", "r"])
    cheaper = grid.assign(t=0.3 + 0.2 * grid["a"] - 0.001 * grid["r"] + rng.normal(0, 0.002, len(grid)))
    told = models.fit_terms(cheaper, y="t", terms=["a", "r"], adequacy=True, costs=["intercept", "a", "r"])
    assert told["model_holds"].eq(False).all() and told["model_note"].str.contains("r below 0").all()
    # the RESET alone passes it, and a term not named a cost (a difference, say) may lie below 0
    assert models.fit_terms(cheaper, y="t", terms=["a", "r"], adequacy=True)["model_holds"].eq(True).all()
    assert models.fit_terms(cheaper, y="t", terms=["a", "r"], adequacy=True, costs=["a"])["model_holds"].eq(True).all()

# --- the round-trip law o(d) = o₀ + r · 2d (notebook 08), calibrated by simulation --------------------------
# One run = the mean time of STATEMENTS_PER_RUN statements: a log-normal local cost (median 0.3 ms, σ 1) plus r round
# trips of 2d, each hop overshooting its delay by an exponential scheduler lag (mean 0.05 ms per ms of delay: the
# noise grows with d, as a sleeping proxy's does on a busy machine). The paper grid: d ∈ {0, 1, 2, 5} ms, 3 runs each,
# and d = 3 held out.
ROUND_TRIP_DELAYS = (0, 1, 2, 5)
STATEMENTS_PER_RUN = 50


def _round_trip_runs(rng, *, trials, delays=ROUND_TRIP_DELAYS, repeats=3, r=2, curve_ms_per_ms2=0.0):
    """``trials`` data sets, one row per run: ``trial``, ``delay_ms``, ``overhead_ms`` (mean ms per statement)."""
    d = np.tile(np.repeat(np.asarray(delays, float), repeats), trials)
    local = rng.lognormal(np.log(0.3), 1.0, (len(d), STATEMENTS_PER_RUN))
    lag = rng.exponential(0.05 * np.maximum(d, 1e-9)[:, None], (len(d), STATEMENTS_PER_RUN)) * 2 * r
    per_statement = local + r * 2 * d[:, None] + lag
    return pd.DataFrame({"trial": np.arange(trials).repeat(len(delays) * repeats), "delay_ms": d,
                         "overhead_ms": per_statement.mean(axis=1) + curve_ms_per_ms2 * d ** 2})


def test_fit_round_trips_ci_of_r_covers_the_round_trips_paid():
    runs = _round_trip_runs(np.random.default_rng(21), trials=300)
    fits = models.fit_round_trips(runs, by=["trial"], adequacy=False)
    truth = 2 * (1 + 0.05)  # r = 2 round trips, each hop's sleep 5 % long on average: what a statement pays per ms of 2d
    covered = (fits["round_trips_ci_low"] <= truth) & (truth <= fits["round_trips_ci_high"])
    width = (fits["round_trips_ci_high"] - fits["round_trips_ci_low"]).median() / (2 * 1.96 * fits["round_trips"].std())
    assert covered.mean() >= 0.92, covered.mean()
    assert width < 3.0, "covers by being absurdly wide"


def test_fit_round_trips_holds_on_a_straight_law_and_rejects_a_curved_one():
    straight = models.fit_round_trips(_round_trip_runs(np.random.default_rng(22), trials=200), by=["trial"])
    curved = models.fit_round_trips(_round_trip_runs(np.random.default_rng(23), trials=200, curve_ms_per_ms2=0.3),
                                    by=["trial"])
    assert (straight["adequacy_test"] == "pure_error_f").all()
    assert straight["model_holds"].astype(bool).mean() >= 0.85
    assert curved["model_holds"].astype(bool).mean() <= 0.2  # a queue that grows with the delay is not r round trips


def test_round_trips_held_out_delay_falls_inside_its_prediction_interval_as_often_as_it_says():
    runs = _round_trip_runs(np.random.default_rng(24), trials=300, delays=(*ROUND_TRIP_DELAYS, 3))
    out = models.round_trips_held_out(runs, 3, by=["trial"])
    assert (out["round_trip_ms"] == 6).all() and (out["runs"] == 3).all()
    per_run = out["runs_inside"].astype(int).sum() / out["runs"].sum()
    assert 0.92 <= per_run <= 0.995, per_run


def test_a_line_whose_fixed_part_lies_wholly_below_zero_does_not_hold_and_says_why():
    # as 03's paper run: PostgreSQL's overwrite batches, fixed cost -72 ms (CI -134 to -11) marked as holding
    rng = np.random.default_rng(5)
    rows = np.repeat([2000, 4000, 6000, 8000, 10000], 3)
    curved = pd.DataFrame({"rows": rows, "elapsed_s": 1.8e-4 * rows - 0.07 + rng.normal(0, 0.004, len(rows))})
    fits = models.fit_linear(curved, x="rows", y="elapsed_s", adequacy=True)
    assert (fits["intercept_ci_high"].iloc[0] < 0) and not fits["model_holds"].any()
    # in the fitted column's unit (03's FINDINGS beside it says ms per batch)
    assert all("fixed part below 0" in note and " s): not a cost" in note for note in fits["model_note"])
    straight = curved.assign(elapsed_s=curved["elapsed_s"] + 0.08)  # lifted above 0: its verdict is the test's own
    assert models.fit_linear(straight, x="rows", y="elapsed_s", adequacy=True)["model_holds"].all()
