"""Notebook 01's workload: the seed's INSERT scenarios, timed per statement, per commit variant."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import pandas as pd

from ingestlab import datagen, models, progress
from ingestlab.engines import Engine
from ingestlab.engines.base import SEED_COLUMNS
from ingestlab.errors import ConfigError, DataLossError, UnsupportedOperationError
from ingestlab.timing import time_calls
from ingestlab.workloads._params import ParamsBase, one_of, positive_int, subset

#: Scenario name → rows per INSERT statement (None: one statement for all rows).
SCENARIOS: dict[str, int | None] = {
    "single_row": 1,
    "batch_100": 100,
    "batch_1000": 1000,
    "insert_select": None,
    "bulk": None,
}
#: Scenarios of the ``INSERT … VALUES`` family, which the overhead fit uses (as the seed does).
FIT_SCENARIOS = ("single_row", "batch_100", "batch_1000")
#: Sizes per SCALE. ``paper`` is the seed's: 1 000 rows, 30 profiled statements.
SCALES: dict[str, dict[str, int]] = {
    "smoke": {"n": 1000, "repeats": 3, "warmup": 20, "profile_n": 10},
    "paper": {"n": 1000, "repeats": 5, "warmup": 20, "profile_n": 30},
}
TABLE, SOURCE = "ingestlab_insert", "ingestlab_insert_source"


@dataclasses.dataclass(frozen=True)
class Params(ParamsBase):
    """Validated parameters of notebook 01 (see :func:`validate`)."""

    target: str
    scale: str
    n: int
    repeats: int
    warmup: int
    profile_n: int
    scenarios: tuple[str, ...]
    variants: tuple[str, ...]
    seed: int


#: Largest N: the rows of a scenario are generated in memory (about 100 bytes each).
MAX_N = 10_000_000


def validate(target: str = "postgres", scale: str = "smoke", n: int | None = None,
             scenarios: Sequence[str] | str | None = None, variants: Sequence[str] | str | None = None,
             repeats: int | None = None, warmup: int | None = None, profile_n: int | None = None,
             seed: int = 0) -> Params:
    """Check notebook 01's parameters without starting anything; return them resolved.

    Every bad value raises :class:`~ingestlab.errors.ConfigError` naming the parameter,
    the value and what is accepted. ``None`` means "the SCALE's size" / "all".

    Examples
    --------
    >>> validate("postgres", "smoke").n
    1000
    >>> validate("postgres", n=0)
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: N=0 is not valid: expected an integer ≥ 1
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    n = positive_int("N", size["n"] if n is None else n)
    repeats = positive_int("REPEATS", size["repeats"] if repeats is None else repeats)
    warmup = positive_int("WARMUP", size["warmup"] if warmup is None else warmup, allow_zero=True)
    profile_n = positive_int("PROFILE_N", size["profile_n"] if profile_n is None else profile_n, allow_zero=True)
    scenarios = subset("SCENARIOS", list(SCENARIOS) if scenarios is None else scenarios, list(SCENARIOS))
    if n > MAX_N:  # every row is generated in memory first
        raise ConfigError("N", n, f"an integer from 1 to {MAX_N:,} (the rows are generated in memory)")
    if len({len(_statements(s, [None] * n)) for s in scenarios}) < 2:
        raise ConfigError("SCENARIOS", ",".join(scenarios), "scenarios with at least two different statement "
                          "counts at this N (the overhead fit needs two), e.g. single_row,bulk")
    engine_cls = Engine.class_of(target)
    if not engine_cls.has("execute"):
        raise ConfigError("TARGET", target, "an engine that runs SQL statements (" + ", ".join(
            n for n, c in Engine.classes().items() if c.has("execute")) + ")")
    known = list(engine_cls.COMMIT_VARIANTS) or ["default"]
    variants = subset("VARIANTS", known if variants is None else variants, known)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ConfigError("SEED", seed, "an integer from 0 to 2**32 - 1")
    return Params(target, scale, n, repeats, warmup, profile_n, scenarios, variants, seed)


def _statements(scenario: str, rows: list[tuple]) -> list[list[tuple]]:
    size = SCENARIOS[scenario]
    if size is None:
        return [rows]
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def run_scenario(engine: Engine, scenario: str, rows: list[tuple], warmup_rows: list[tuple], *,
                 warmup: int, bar=None) -> pd.DataFrame:
    """Time one scenario writing ``rows`` into an empty table; return the samples.

    Warm-up statements (``warmup`` single rows, or one statement of each other scenario)
    run first on the same table and are kept, flagged; the table is then emptied (not
    timed) so that the measured statements write into an empty table, as in the seed.
    """
    cols = [c for c, _ in SEED_COLUMNS]
    if scenario == "bulk":
        engine.has("bulk_load", check=True)

    def prepare(chunk: list[tuple]):
        # the statement's text with its parameters (or the bulk path's CSV) is made before the clock starts
        if scenario == "bulk":
            return engine.prepare_bulk_load(TABLE, cols, [datagen.rows_table(cols, chunk)])
        if scenario == "insert_select":
            return engine.statement_call(insert_select)
        return engine.statement_call(engine.insert_sql(TABLE, cols, len(chunk)), [v for row in chunk for v in row])

    insert_select = engine.insert_select_sql(TABLE, SOURCE)
    n_warm = warmup if scenario == "single_row" else min(warmup, 1)
    warm = _statements(scenario, warmup_rows)[:n_warm] if scenario != "insert_select" else [rows] * n_warm
    measured = _statements(scenario, rows)
    _reset_table(engine)
    # statements go through the C loop where the engine has one (time_calls), the bulk path from Python
    warm_frame = time_calls([prepare(c) for c in warm], rows=[len(c) for c in warm],
                            bytes_=[sum(map(datagen.row_bytes, c)) for c in warm], warmup=len(warm))
    _reset_table(engine)
    frame = time_calls([prepare(c) for c in measured], rows=[len(c) for c in measured],
                       bytes_=[sum(map(datagen.row_bytes, c)) for c in measured],
                       progress=bar.update if bar is not None else None)
    written = engine.count_rows(TABLE)
    if written != len(rows):
        raise DataLossError(f"{scenario}: table holds {written} rows after writing {len(rows)}")
    return pd.concat([warm_frame, frame], ignore_index=True).assign(scenario=scenario)


def _reset_table(engine: Engine) -> None:
    engine.reset_table(TABLE, SEED_COLUMNS)


def measure(params: Params, run) -> dict[str, pd.DataFrame]:
    """Run notebook 01's measurements end to end; the engine is started and stopped inside.

    For each variant: put its settings in force, record the engine's metadata, run every
    scenario ``repeats`` times (scenarios interleaved within a repeat), then the statement
    anatomy of ``profile_n`` single-row INSERTs. Samples are appended to ``run`` after
    every scenario, so an interrupted run keeps what it measured; each scenario of a repeat
    and each variant's anatomy is one configuration of :meth:`~ingestlab.results.Run.once`,
    which a resumed run does not measure again.

    Returns
    -------
    dict
        ``samples`` (one row per statement) and ``anatomy`` (tidy, see
        :meth:`Engine.statement_anatomy`).
    """
    engine = Engine.resolve(params.target)
    cols = [c for c, _ in SEED_COLUMNS]
    out = {"samples": [], "anatomy": []}
    per_variant = sum(len(_statements(s, [None] * params.n)) for s in params.scenarios) * params.repeats
    try:
        engine.start()
        for variant in params.variants:
            engine.apply_settings(engine.COMMIT_VARIANTS.get(variant, {}))
            run.record_engine(engine, variant=variant)
            labels = {"engine": engine.label, "variant": variant, "driver": engine.driver}
            with progress.bar(total=per_variant, desc=f"{engine.label} {variant}", unit="stmt") as bar:
                for rep in range(params.repeats):
                    rows = datagen.seed_rows(params.n, start_id=0, seed=params.seed * 1000 + rep)
                    warm = datagen.seed_rows(max(params.warmup, 1000), start_id=-10**9, seed=params.seed + 7)
                    if "insert_select" in params.scenarios:  # recreated: not every engine deletes without WHERE
                        engine.reset_table(SOURCE, SEED_COLUMNS)
                        engine.execute(engine.insert_sql(SOURCE, cols, len(rows)), [v for r in rows for v in r])
                    for scenario in params.scenarios:
                        def scenario_once(scenario=scenario, rep=rep, rows=rows, warm=warm, labels=labels):
                            frame = run_scenario(engine, scenario, rows, warm, warmup=params.warmup, bar=bar)
                            run.append(frame.assign(repeat=rep, **labels))
                        done = run.once({**labels, "repeat": rep, "scenario": scenario}, scenario_once)
                        out["samples"].append(done["results"])
            if params.profile_n:
                def anatomy_once(labels=labels, variant=variant):
                    anatomy_rows = datagen.seed_rows(params.profile_n, start_id=10**9, seed=params.seed + 13)
                    _reset_table(engine)
                    try:
                        run.append(engine.statement_anatomy(TABLE, cols, anatomy_rows).assign(**labels),
                                   table="anatomy")
                    except UnsupportedOperationError as exc:
                        run.note(f"{variant}: no anatomy ({exc})")
                out["anatomy"] += run.once({**labels, "part": "anatomy"}, anatomy_once).values()
    finally:
        engine.close()
    return {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in out.items()}


def fit(samples: pd.DataFrame) -> pd.DataFrame:
    """The overhead fit per (engine, variant) over the ``INSERT … VALUES`` scenarios' totals."""
    totals = models.scenario_totals(samples[samples["scenario"].isin(FIT_SCENARIOS)])
    return models.fit_overhead(totals)


def throughput(samples: pd.DataFrame) -> pd.DataFrame:
    """Throughput per scenario: total time, rows/s and MB/s (median over repeats)."""
    totals = models.scenario_totals(samples)
    b = samples[~samples["warmup"]].groupby(["engine", "variant", "scenario", "repeat"], sort=False)["bytes"].sum()
    totals = totals.merge(b.rename("bytes").reset_index(), on=["engine", "variant", "scenario", "repeat"])
    totals["rows_per_s"] = totals["rows"] / totals["total_s"]
    totals["mb_per_s"] = totals["bytes"] / totals["total_s"] / 1e6
    return (totals.groupby(["engine", "variant", "scenario"], sort=False)
            .agg(repeats=("repeat", "nunique"), n_statements=("n_statements", "first"), rows=("rows", "first"),
                 total_s=("total_s", "median"), rows_per_s=("rows_per_s", "median"), mb_per_s=("mb_per_s", "median"))
            .reset_index())


def published_fits() -> pd.DataFrame:
    """The seed's StarRocks overhead fits (per deployment and version) from ``data/published``."""
    from ingestlab import published

    table = published.load("starrocks_insert_scenarios")
    return models.fit_overhead(table[table["scenario"].isin(FIT_SCENARIOS)],
                               by=["engine", "deployment", "version"])


def live_vs_published(fits: pd.DataFrame, throughput_table: pd.DataFrame, diff: dict | None) -> pd.DataFrame:
    """Live numbers beside the seed's: overhead, commit-protocol difference, batching speed-up.

    Returns
    -------
    pandas.DataFrame
        See :func:`ingestlab.models.compare_with_published`; ``quantity`` names what is
        compared, ``published_label`` and ``live_label`` say whose number it is.
    """
    pub = published_fits()
    pub = pub[pub["method"] == "ols"]
    ols = fits[fits["method"] == "ols"]
    rows_pub, rows_live = [], []
    for _, p in pub.iterrows():
        for _, f in ols.iterrows():
            q = f"overhead_ms {f['engine']} {f['variant']} | seed {p['deployment']} {p['version']}"
            rows_pub.append({"quantity": q, "published": p["overhead_ms"], "published_label": "seed fit (OLS)"})
            rows_live.append({"quantity": q, "live": f["overhead_ms"], "live_ci_low": f["overhead_ci_low_ms"],
                              "live_ci_high": f["overhead_ci_high_ms"], "live_label": "live fit (OLS)"})
    sd = pub[pub["deployment"] == "shared-data"].iloc[0]
    sn = pub[(pub["deployment"] == "shared-nothing") & (pub["version"] == sd["version"])].iloc[0]
    if diff is not None:
        q = "commit_extra_ms | seed shared-nothing − shared-data; live first − last variant"
        rows_pub.append({"quantity": q, "published": sn["overhead_ms"] - sd["overhead_ms"],
                         "published_label": "difference of seed fits"})
        rows_live.append({"quantity": q, "live": diff["diff_ms"], "live_ci_low": diff["diff_ci_low_ms"],
                          "live_ci_high": diff["diff_ci_high_ms"], "live_label": "difference of live fits"})
    from ingestlab import published

    seed = published.load("starrocks_insert_scenarios")
    seed = seed[(seed["deployment"] == "shared-data") & (seed["version"].astype(str) == str(sd["version"]))]
    seed_speedup = (seed.loc[seed["scenario"] == "single_row", "total_s"].iloc[0]
                    / seed.loc[seed["scenario"] == "batch_1000", "total_s"].iloc[0])
    tp = throughput_table.set_index(["engine", "variant", "scenario"])["total_s"]
    for (engine, variant) in ols[["engine", "variant"]].itertuples(index=False):
        if (engine, variant, "batch_1000") in tp.index and (engine, variant, "single_row") in tp.index:
            q = f"batching_speedup_x {engine} {variant} | single_row / batch_1000 total"
            rows_pub.append({"quantity": q, "published": seed_speedup, "published_label": "seed shared-data table"})
            rows_live.append({"quantity": q, "live": tp[(engine, variant, "single_row")] / tp[(engine, variant, "batch_1000")],
                              "live_ci_low": float("nan"), "live_ci_high": float("nan"),
                              "live_label": "median totals over repeats"})
    return models.compare_with_published(pd.DataFrame(rows_live), pd.DataFrame(rows_pub))


# -- what the notebook says -----------------------------------------------------------------
def describe_single_row(summary: pd.DataFrame) -> list[str]:
    """The single-row INSERT's median, P95 and P99 per variant, and the warm-up statements left out."""
    single = summary[summary["scenario"] == "single_row"]
    parts = [f"**{r.variant}** {r.median_ms:.3f} ms ({r.p95_ms:.3f}, {r.p99_ms:.3f}) over {int(r.n)} statements"
             for r in single.itertuples()]
    return ["Single-row INSERT, median (P95, P99): " + "; ".join(parts)
            + f". Warm-up statements excluded: {int(summary['warmup_n'].sum())}."]


def variant_difference(totals: pd.DataFrame, variants: Sequence[str]) -> dict | None:
    """The first variant's overhead minus the last's from one model of both variants' totals; None with one variant."""
    if len(variants) < 2:
        return None
    return models.overhead_difference(totals, {"variant": variants[0]}, {"variant": variants[-1]})


def describe_fit(fits: pd.DataFrame, summary: pd.DataFrame, diff: dict | None) -> list[str]:
    """Per variant the fitted overhead and write time beside the single-row median; then the variants' difference."""
    from ingestlab import report

    medians = summary[summary["scenario"] == "single_row"].set_index("variant")["median_ms"]
    lines = [f"**{r.variant}**: {report.format_estimate(r.overhead_ms, r.overhead_ci_low_ms, r.overhead_ci_high_ms)} "
             f"per statement, write time {r.write_time_s * 1e3:.2f} ms, R² {r.r2:.4f}, single-row median "
             f"{medians.get(r.variant, float('nan')):.3f} ms" for r in fits[fits["method"] == "ols"].itertuples()]
    if diff is not None:
        first, last = fits["variant"].iloc[0], fits["variant"].iloc[-1]
        lines.append(f"**{first}** costs {report.format_estimate(diff['diff_ms'], diff['diff_ci_low_ms'], diff['diff_ci_high_ms'])}"
                     f" more per statement than **{last}**, {diff['ratio']:.2f}× its overhead.")
    return lines


def scale_table(diff: dict | None) -> pd.DataFrame:
    """The seed's scale table for the variants' difference (empty with one variant)."""
    return models.scale_table(diff) if diff is not None else pd.DataFrame()


def anatomy_figure(table: pd.DataFrame):
    """A stacked bar of the anatomy's parts per variant (:func:`ingestlab.anatomy.parts`), or None without anatomy."""
    from ingestlab import anatomy, figures

    if table.empty:
        return None
    return figures.plot_stacked(anatomy.parts(table), x="ms", y="variant", hue="component").figure


def headline(fits: pd.DataFrame, diff: dict | None, anatomy_table: pd.DataFrame) -> dict[str, float]:
    """The run's headline numbers: overhead per variant, the variants' difference, the unexplained share."""
    out = {f"overhead_ms[{r.variant}]": float(r.overhead_ms) for r in fits[fits["method"] == "ols"].itertuples()}
    out.update({k: float(v) for k, v in (diff or {}).items()})
    if not anatomy_table.empty:
        out.update({f"unexplained_share[{r.variant}]": float(r.unexplained_share) for r in anatomy_table.itertuples()})
    return out
