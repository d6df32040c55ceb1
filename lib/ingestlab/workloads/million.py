"""Notebook 05's workload: one million rows loaded several ways, under settings that trade safety for speed, per engine version."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ingestlab import _paths, datagen, disk, models, progress, timing
from ingestlab.engines import Engine
from ingestlab.errors import ConfigError, DataLossError
from ingestlab.workloads._params import ParamsBase, items_of, one_of, positive_int, subset

#: The seed's table: ``demo (id int primary key, a int, b int, c int, d int)``.
TABLE = "demo"
COLUMNS: tuple[tuple[str, str], ...] = (("id", "INT"), ("a", "INT"), ("b", "INT"), ("c", "INT"), ("d", "INT"))
COLUMN_NAMES = [c for c, _ in COLUMNS]
KEY = ("id",)
#: Payload of one row: five 4-byte integers (``mb_per_s`` counts these bytes).
ROW_BYTES = 20
#: Load method → (the contract step it needs, what it is). Rows are the seed's: id 1…N, the rest 0.
METHODS: dict[str, tuple[str, str]] = {
    "generate": ("generate_rows_sql", "one INSERT … SELECT over the server's row generator (PostgreSQL "
                 "generate_series, MariaDB's Sequence engine seq_1_to_N)"),
    "bulk": ("bulk_load", "the lab's bulk path: COPY … FROM STDIN (PostgreSQL), LOAD DATA LOCAL (MariaDB)"),
    "native_client": ("native_load", "the engine's own client loading the same rows from a CSV file "
                      "(psql \\copy, mariadb --local-infile), process start included"),
    "batches": ("prepare_insert", "multi-row INSERTs of BATCH_ROWS rows, each its own commit"),
    "pipeline": ("prepare_pipeline_insert", "single-row INSERTs in one transaction, pipelined (psycopg 3)"),
    "executemany": ("prepare_insert", "single-row INSERTs in one transaction, one round trip each"),
    "autocommit": ("prepare_insert", "single-row INSERTs, each its own commit"),
}
#: Methods outside the fit: not the lab's driver (a separate process reading a file).
FIT_EXCLUDED = ("native_client",)
#: Sizes per SCALE. ``paper`` is the seed's: 1 000 000 rows, 5 runs.
SCALES: dict[str, dict[str, int]] = {
    "smoke": {"rows": 10_000, "runs": 2, "warmup_rows": 1_000, "disk_mb": 64},
    "paper": {"rows": 1_000_000, "runs": 5, "warmup_rows": 10_000, "disk_mb": 512},
}
#: ``VERSIONS``: every installed version of each local engine, or only the targets as named.
VERSION_CHOICES = ("all", "default")
#: Rows per ``pyarrow`` chunk of the bulk path.
CHUNK_ROWS = 100_000
#: The seed's ratios (its text; it prints no table). ``non_transactional``: "a 60% gain in insert
#: performance" since 2.8.1, read as 1.6 × the default's rows/s; packed rows: DocDB rows per
#: table row, 5 without and 1 with (``data/published/yugabytedb_docdb_rows_inserted.csv``).
SEED_NON_TRANSACTIONAL_SPEEDUP = 1.6


@dataclasses.dataclass(frozen=True)
class Params(ParamsBase):
    """Validated parameters of notebook 05 (see :func:`validate`)."""

    targets: tuple[str, ...]
    scale: str
    rows: int
    methods: tuple[str, ...]
    settings: tuple[str, ...] | None
    runs: int
    batch_rows: int
    versions: str
    warmup_rows: int


def validate(targets: Sequence[str] | str = "postgres", scale: str = "smoke", rows: int | None = None,
             methods: Sequence[str] | str | None = None, settings: Sequence[str] | str | None = None,
             runs: int | None = None, batch_rows: int = 1000, versions: str = "all",
             warmup_rows: int | None = None) -> Params:
    """Check notebook 05's parameters without starting anything; return them resolved.

    ``targets`` are engine names or URLs; ``settings`` must each be offered by at least
    one of the engines they select (with their other versions); ``None`` means all.

    Examples
    --------
    >>> validate("postgres,mariadb", "paper").rows
    1000000
    >>> validate("postgres", methods="copy")
    Traceback (most recent call last):
    ...
    ingestlab.errors.ConfigError: METHODS='copy' is not valid: expected each item one of 'generate', 'bulk', 'native_client', 'batches', 'pipeline', 'executemany', 'autocommit'
    """
    one_of("SCALE", scale, SCALES)
    size = SCALES[scale]
    items = items_of(targets)
    if not items or not all(isinstance(t, str) and t for t in items):
        raise ConfigError("TARGETS", targets, "a comma-separated list of engine names or URLs")
    one_of("VERSIONS", versions, VERSION_CHOICES)
    classes = [Engine.class_of(t) for t in _expand(items, versions)]
    rows = positive_int("ROWS", size["rows"] if rows is None else rows)
    runs = positive_int("RUNS", size["runs"] if runs is None else runs)
    batch_rows = positive_int("BATCH_ROWS", batch_rows)
    warmup_rows = positive_int("WARMUP_ROWS", min(size["warmup_rows"], rows) if warmup_rows is None else warmup_rows,
                               allow_zero=True)
    methods = subset("METHODS", list(METHODS) if methods is None else methods, list(METHODS))
    offered = list(dict.fromkeys(name for cls in classes for name in cls.LOAD_SETTINGS))
    settings = None if settings is None else subset("SETTINGS", settings, offered)
    return Params(tuple(items), scale, rows, methods, settings, runs, batch_rows, versions, warmup_rows)


def _expand(targets: Sequence[str], versions: str) -> list[str]:
    """The targets with, for ``versions="all"``, every other registered version of each local engine."""
    if versions == "default":
        return list(targets)
    return list(dict.fromkeys(v for t in targets for v in (Engine.versions(t) if "://" not in t else [t])))


def counts(method: str, rows: int, batch_rows: int) -> tuple[int, int]:
    """(statements, commits) that carry ``rows`` rows by ``method``.

    Examples
    --------
    >>> counts("batches", 1_000_000, 1000), counts("executemany", 10, 1000), counts("autocommit", 10, 1000)
    ((1000, 1000), (10, 1), (10, 10))
    """
    if method in ("generate", "bulk", "native_client"):
        return 1, 1
    if method == "batches":
        n = math.ceil(rows / batch_rows)
        return n, n
    return rows, (rows if method == "autocommit" else 1)


@dataclasses.dataclass
class Data:
    """One data set in the forms the methods need, built before any clock (see :func:`make_data`)."""

    rows: list[tuple]
    chunks: list[pa.Table]
    csv: str

    def remove(self) -> None:
        """Delete the CSV file."""
        if os.path.exists(self.csv):
            os.unlink(self.csv)

    @classmethod
    def make(cls, n: int, path: str) -> "Data":
        ids = np.arange(1, n + 1, dtype=np.int32)
        zeros = np.zeros(n, dtype=np.int32)
        table = pa.table({"id": ids, "a": zeros, "b": zeros, "c": zeros, "d": zeros})
        chunks = [table.slice(i, CHUNK_ROWS) for i in range(0, n, CHUNK_ROWS)]
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as out:
            for chunk in chunks:
                out.write(datagen.csv_bytes(chunk))
        os.chmod(path, 0o644)  # psql runs as this user, but the file may be read by the server's too
        return cls(list(zip(ids.tolist(), *([zeros.tolist()] * 4))), chunks, path)


def make_data(n: int, tag: str = "load") -> Data:
    """The seed's ``n`` rows (id 1…n, the rest 0) as tuples, ``pyarrow`` chunks and a CSV file in the lab directory."""
    return Data.make(n, str(_paths.lab_dir() / f"million-{tag}-{os.getpid()}.csv"))


def _prepare(engine: Engine, method: str, data: Data, ddl: list[str], setting, batch_rows: int
             ) -> Callable[[], Any]:
    """The call that loads ``data`` by ``method``, with its statements built now (before the clock)."""
    cols = COLUMN_NAMES
    if method == "generate":
        return functools.partial(engine.execute, engine.generate_rows_sql(TABLE, cols, len(data.rows)))
    if method == "bulk":
        return engine.prepare_bulk_load(TABLE, cols, data.chunks, create=ddl if setting.create_in_load else ())
    if method == "native_client":
        return functools.partial(engine.native_load, TABLE, cols, data.csv)
    if method == "pipeline":
        return engine.prepare_pipeline_insert(TABLE, cols, data.rows)
    per_statement = batch_rows if method == "batches" else 1
    return engine.prepare_insert(TABLE, cols, data.rows, rows_per_statement=per_statement,
                                 transaction=method == "executemany")


def load_once(engine: Engine, method: str, setting, data: Data, *, batch_rows: int) -> dict:
    """Load ``data`` into a fresh ``demo`` by ``method`` under ``setting``; check and measure it.

    The table is dropped and created (or, with ``create_in_load``, created by the load
    itself), the load is timed on the lab's clock, then with ``key_after_load`` the
    ``ADD PRIMARY KEY`` is timed apart; the rows are counted (:class:`DataLossError` if
    they are not all there) and, after the engine settles, the table's bytes read.
    """
    keyed = not setting.key_after_load
    ddl = engine.table_ddl(TABLE, COLUMNS, key=KEY if keyed else (), model=setting.model if keyed else "no_key")
    engine.execute(engine.drop_table_sql(TABLE))
    if not setting.create_in_load:
        for statement in ddl:
            engine.execute(statement)
    call = _prepare(engine, method, data, ddl, setting, batch_rows)
    load = timing.timed(call)
    key_s = 0.0
    if setting.key_after_load:
        key_s = timing.timed(engine.execute, engine.add_primary_key_sql(TABLE, KEY)).elapsed_ns / 1e9
    n = len(data.rows)
    counted = engine.count_rows(TABLE)
    if counted != n:
        raise DataLossError(f"{engine.label} {method}: {TABLE} holds {counted} rows after writing {n}")
    if engine.has("settle"):
        engine.settle(TABLE)
    statements, commits = counts(method, n, batch_rows)
    seconds = load.elapsed_ns / 1e9 + key_s
    table_bytes = engine.data_bytes(TABLE) if engine.has("data_bytes") else math.nan
    return {"method": method, "driver": driver_of(engine, method), "rows": n, "statements": statements, "commits": commits,
            "load_s": load.elapsed_ns / 1e9, "add_key_s": key_s, "seconds": seconds,
            "rows_per_s": n / seconds, "mb_per_s": n * ROW_BYTES / seconds / 1e6, "table_bytes": table_bytes,
            "table_mb_per_s": table_bytes / seconds / 1e6, "rows_counted": counted, "started_ns": load.started_ns}


def driver_of(engine: Engine, method: str) -> str | None:
    """What sent ``method``'s load: the engine's driver, psycopg for the pipeline, or ``native client``."""
    if method == "native_client":
        return "native client"
    if method == "pipeline":
        return "psycopg"
    return engine.driver


def version_label(engine: Engine) -> tuple[str, str]:
    """(version, system): the server's version number and ``"<family> <version>"`` (``"postgres 15.18"``)."""
    version = engine.server_version().split()[0].split("-")[0]
    family = type(engine).VERSION_OF or engine.NAME
    return version, f"{family} {version}"


def measure(params: Params, run) -> dict[str, pd.DataFrame]:
    """Run notebook 05's loads end to end; each engine is started and stopped inside.

    First the disk's sequential write rate (:func:`ingestlab.disk.sequential_write`). Then per
    engine version (a version that cannot start here is reported once, in ``run.json``'s
    notes, and skipped), per setting: its settings are put in force, one warm-up load of
    each method with ``warmup_rows`` rows (kept, flagged), then ``runs`` rounds of every
    method (methods interleaved within a round). Each load is appended to ``loads`` at once.
    The disk's rate and each engine version × setting (its warm-up loads and its runs, which
    belong to one server session) are configurations of :meth:`~ingestlab.results.Run.once`:
    a resumed run measures only those not done.

    Returns
    -------
    dict
        ``loads`` (one row per load) and ``disk`` (the write rate).
    """
    def disk_once():
        run.append(pd.DataFrame([disk.sequential_write(_paths.lab_dir(), SCALES[params.scale]["disk_mb"])]),
                   table="disk")
    disk_rate = run.once({"part": "disk"}, disk_once)["disk"]
    run.save_csv(disk_rate, "disk")
    data = make_data(params.rows)
    warm = make_data(params.warmup_rows, "warmup") if params.warmup_rows else None
    frames = []
    try:
        for target in _expand(params.targets, params.versions):
            frames += _measure_target(target, params, run, data, warm)
    finally:
        data.remove()
        if warm is not None:
            warm.remove()
    return {"loads": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), "disk": disk_rate}


def _note(run, text: str) -> None:
    print(text)
    run.note(text)


def _measure_target(target: str, params: Params, run, data: Data, warm: Data | None) -> list[pd.DataFrame]:
    cls = Engine.class_of(target)
    reason = cls.unavailable_reason() if "://" not in target else None
    if reason:
        _note(run, f"{target}: skipped, this version cannot run here: {reason}")
        return []
    settings = [s for s in (params.settings or list(cls.LOAD_SETTINGS)) if s in cls.LOAD_SETTINGS]
    missing = [s for s in (params.settings or []) if s not in cls.LOAD_SETTINGS]
    if missing:
        _note(run, f"{target}: no setting {', '.join(missing)} on this engine")
    methods = [m for m in params.methods if cls.has(METHODS[m][0])]
    if len(methods) < len(params.methods):
        _note(run, f"{target}: without " + "; ".join(
            f"{m} ({getattr(getattr(cls, METHODS[m][0]), '__unsupported__', '')})"
            for m in params.methods if m not in methods))
    frames = []
    engine = Engine.resolve(target)
    try:
        engine.start()
        version, system = version_label(engine)
        for name in settings:
            setting = cls.LOAD_SETTINGS[name]
            engine.apply_settings(dict(setting.server))
            if setting.session:
                engine.set_session(dict(setting.session))
            run.record_engine(engine, setting=name, version=version, setting_description=setting.description,
                              server_flags_required=dict(setting.server_flags))
            if setting.server_flags:
                _note(run, f"{target} {name}: assumes the server was started with "
                           + ", ".join(f"{k}={v}" for k, v in setting.server_flags.items()) + " (not checked)")
            chosen = [m for m in methods if setting.methods is None or m in setting.methods]
            labels = {"target": target, "engine": engine.label, "version": version, "system": system, "setting": name}
            plan = [(-1, warm)] * bool(warm) + [(r, data) for r in range(params.runs)]

            def setting_once(setting=setting, chosen=chosen, labels=labels, plan=plan, name=name):
                with progress.bar(total=len(plan) * len(chosen), desc=f"{system} {name}", unit="load") as bar:
                    for run_no, rows in plan:
                        for method in chosen:
                            row = load_once(engine, method, setting, rows, batch_rows=params.batch_rows)
                            run.append(pd.DataFrame([{**labels, **row, "run": run_no, "warmup": run_no < 0}]),
                                       table="loads")
                            bar.update(1)
            frames += run.once(labels, setting_once).values()
    finally:
        engine.close()
    return frames


# -- analysis --------------------------------------------------------------------------------
GROUP = ["system", "setting", "method"]


def medians(loads: pd.DataFrame) -> pd.DataFrame:
    """Per system × setting × method: median seconds and rows/s over the runs, with distribution-free CIs.

    Warm-up loads are left out (counted in ``warmup_n``). The CI is the order-statistic
    interval of :func:`ingestlab.models.median_ci_exact`; ``ci_confidence`` says what it reaches.
    """
    measured = loads[~loads["warmup"]]
    warm = loads[loads["warmup"]].groupby(GROUP).size()
    rows = []
    for key, g in measured.groupby(GROUP, sort=False):
        sec = models.median_ci_exact(g["seconds"])
        rps = models.median_ci_exact(g["rows_per_s"])
        rows.append({**dict(zip(GROUP, key)), "runs": len(g), "rows": int(g["rows"].iloc[0]),
                     "statements": int(g["statements"].iloc[0]), "commits": int(g["commits"].iloc[0]),
                     "seconds": sec["median"], "seconds_ci_low": sec["ci_low"], "seconds_ci_high": sec["ci_high"],
                     "rows_per_s": rps["median"], "rows_per_s_ci_low": rps["ci_low"],
                     "rows_per_s_ci_high": rps["ci_high"], "ci_confidence": sec["confidence"],
                     "mb_per_s": float(g["mb_per_s"].median()), "table_bytes": float(g["table_bytes"].median()),
                     "table_mb_per_s": float(g["table_mb_per_s"].median()), "add_key_s": float(g["add_key_s"].median()),
                     "warmup_n": int(warm.get(key, 0))})
    return pd.DataFrame(rows)


def fit(loads: pd.DataFrame) -> pd.DataFrame:
    """``seconds = statements × overhead + rows × per_row`` per system × setting, across the lab's methods.

    Every method writes the same rows, so the intercept is ``rows × per_row`` and the slope
    the fixed cost of one statement (:func:`ingestlab.models.fit_load_overhead`: OLS with
    CIs where the points allow, else ``two_point`` or ``none``). ``per_row_us`` is the
    intercept per row, with its CI.
    """
    measured = loads[~loads["warmup"] & ~loads["method"].isin(FIT_EXCLUDED)]
    fits = models.fit_load_overhead(measured, by=["system", "setting"], x="statements", y="seconds")
    rows = measured.groupby(["system", "setting"], sort=False)["rows"].first().rename("rows").reset_index()
    fits = fits.merge(rows, on=["system", "setting"])
    for src, dst in (("write_time_s", "per_row_us"), ("write_time_ci_low_s", "per_row_ci_low_us"),
                     ("write_time_ci_high_s", "per_row_ci_high_us")):
        fits[dst] = fits[src] / fits["rows"] * 1e6
    return fits.assign(engine=fits["system"], variant=fits["setting"])


def physical(loads: pd.DataFrame, disk_rate: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Per system under its first setting: the fastest method against the disk, and the lab's bulk path against the native client.

    ``disk_share`` is the fastest method's table bytes per second over the disk's sequential
    write rate; ``bulk_over_native`` the lab bulk path's median seconds over the native
    client's, with a bootstrap CI (:func:`ingestlab.models.ratio_ci`).
    """
    measured = loads[~loads["warmup"]]
    disk_mb_s = float(disk_rate["mb_per_s"].iloc[0])
    rows = []
    for system, g in measured.groupby("system", sort=False):
        g = g[g["setting"] == g["setting"].iloc[0]]
        by_method = g.groupby("method", sort=False)[["rows_per_s", "table_mb_per_s"]].median()
        fastest = by_method["rows_per_s"].idxmax()
        row = {"system": system, "setting": g["setting"].iloc[0], "fastest_method": fastest,
               "fastest_rows_per_s": by_method.loc[fastest, "rows_per_s"],
               "fastest_table_mb_per_s": by_method.loc[fastest, "table_mb_per_s"], "disk_mb_per_s": disk_mb_s,
               "disk_share": by_method.loc[fastest, "table_mb_per_s"] / disk_mb_s,
               "bulk_over_native": math.nan, "bulk_over_native_ci_low": math.nan, "bulk_over_native_ci_high": math.nan}
        bulk, native = (g.loc[g["method"] == m, "seconds"] for m in ("bulk", "native_client"))
        if min(len(bulk), len(native)) >= 2:
            r = models.ratio_ci(bulk, native, seed=seed)
            row.update(bulk_over_native=r["ratio"], bulk_over_native_ci_low=r["ci_low"],
                       bulk_over_native_ci_high=r["ci_high"])
        elif min(len(bulk), len(native)) == 1:  # one run each: the ratio without a CI
            row.update(bulk_over_native=bulk.median() / native.median())
        rows.append(row)
    return pd.DataFrame(rows)


def live_vs_published(loads: pd.DataFrame) -> pd.DataFrame:
    """The seed's ratios beside this run's: YugabyteDB's non-transactional speed-up and packed rows' DocDB entries.

    Live values come only from YugabyteDB targets (by URL); without one they are NaN and
    ``live_label`` says so. The lab does not read DocDB's ``rows_inserted`` metric, so the
    packed-rows ratio has no live value.
    """
    from ingestlab import published

    docdb = published.load("yugabytedb_docdb_rows_inserted").set_index("scenario")
    per_row = docdb["docdb_inserted_rows"] / docdb["rows"]
    yb = loads[~loads["warmup"] & (loads["engine"].astype(str).str.startswith("yugabytedb"))]
    speed = yb.groupby("setting")["rows_per_s"].median()
    live = math.nan
    label = "not measured: no YugabyteDB target in this run"
    if {"default", "non_transactional"} <= set(speed.index):
        live, label = speed["non_transactional"] / speed["default"], "median rows/s, all methods pooled"
    published_rows = pd.DataFrame([
        {"quantity": "non_transactional / default rows/s (YugabyteDB)", "published": SEED_NON_TRANSACTIONAL_SPEEDUP,
         "published_label": "seed text: '60% gain in insert performance' (2.8.1)"},
        {"quantity": "DocDB entries per row, packed off / on (YugabyteDB)",
         "published": per_row["packed_rows_off"] / per_row["packed_rows_on"],
         "published_label": "seed statistics: rows_inserted 5 000 000 vs 1 000 000"},
    ])
    live_rows = pd.DataFrame([
        {"quantity": published_rows["quantity"][0], "live": live, "live_ci_low": math.nan, "live_ci_high": math.nan,
         "live_label": label},
        {"quantity": published_rows["quantity"][1], "live": math.nan, "live_ci_low": math.nan,
         "live_ci_high": math.nan, "live_label": "not measured: the lab does not read the tserver's /metrics"},
    ])
    return models.compare_with_published(live_rows, published_rows)


# -- figures and sentences -------------------------------------------------------------------
def plot_methods(table: pd.DataFrame):
    """Rows/s by method (log scale), one panel per system stacked on a shared axis, a bar per setting."""
    import matplotlib.pyplot as plt

    from ingestlab import figures, labels

    systems = list(dict.fromkeys(table["system"]))
    heights = [table.loc[table["system"] == s, "method"].nunique() for s in systems]
    fig, axes = plt.subplots(len(systems), 1, figsize=(figures.PAGE_WIDTH, 1.2 + 0.42 * sum(heights)),
                             squeeze=False, sharex=True, gridspec_kw={"height_ratios": heights})
    for i, (ax, system) in enumerate(zip(axes[:, 0], systems)):
        figures.plot_bars(table[table["system"] == system], x="rows_per_s", y="method", hue="setting", ax=ax,
                          log=figures.spans_decades(table["rows_per_s"]))
        ax.set_title(labels.phrase(system), loc="left", fontsize="medium")
        if i < len(systems) - 1:  # one legend, under the last panel
            ax.get_legend().remove()
    axes[-1, 0].set_xlabel("rows per second")
    fig.tight_layout()
    return fig


def plot_versions(table: pd.DataFrame, setting: str = "default"):
    """The seed's "all versions" chart: rows/s by method (log scale), a bar per engine version, under ``setting``."""
    from ingestlab import figures

    return figures.plot_bars(table[table["setting"] == setting], x="rows_per_s", y="method", hue="system",
                             log=True).figure


def plot_fit(loads: pd.DataFrame, fits: pd.DataFrame):
    """Seconds against statements per system × setting, with the fitted lines (log–log)."""
    from ingestlab import figures, labels

    measured = loads[~loads["warmup"] & ~loads["method"].isin(FIT_EXCLUDED)]
    group = labels.join(measured, ["system", "setting"])
    lines = fits.assign(group=labels.join(fits, ["system", "setting"]))
    return figures.plot_overhead_fit(measured.assign(group=group), lines, x="statements", y="seconds",
                                     hue="group").figure


def describe_methods(table: pd.DataFrame) -> list[str]:
    """Per system and setting, the fastest and the slowest method and how far apart they are."""
    lines = []
    for (system, setting), g in table.groupby(["system", "setting"], sort=False):
        if len(g) < 2:
            continue
        fast, slow = g.loc[g["rows_per_s"].idxmax()], g.loc[g["rows_per_s"].idxmin()]
        lines.append(f"**{system}, {setting}**: fastest {fast['method']} {fast['rows_per_s']:,.0f} rows/s "
                     f"({fast['seconds']:.3g} s), slowest {slow['method']} {slow['rows_per_s']:,.0f} rows/s "
                     f"({slow['seconds']:.3g} s): {fast['rows_per_s'] / slow['rows_per_s']:.0f}× apart.")
    return lines


def describe_versions(table: pd.DataFrame, setting: str = "default") -> list[str]:
    """Per method under ``setting``, each version's rows/s relative to the first version's."""
    part = table[table["setting"] == setting]
    systems = list(dict.fromkeys(part["system"]))
    if len(systems) < 2:
        return [f"Only {', '.join(systems) or 'no system'} ran under {setting}: no version to compare."]
    wide = part.pivot_table(index="method", columns="system", values="rows_per_s", sort=False)
    base = systems[0]
    lines = []
    for method, row in wide.iterrows():
        others = [f"{s} {row[s] / row[base]:.2f}×" for s in systems[1:] if np.isfinite(row.get(s, np.nan))]
        lines.append(f"**{method}**: {base} {row[base]:,.0f} rows/s; " + ", ".join(others))
    return lines


def describe_fit(fits: pd.DataFrame) -> list[str]:
    """Per system × setting: the fixed cost per statement and the cost per row, with CIs."""
    from ingestlab import report

    lines = []
    for r in fits.itertuples():
        if r.method == "ols":
            lines.append(f"**{r.system}, {r.setting}**: "
                         f"{report.format_estimate(r.overhead_ms * 1e3, r.overhead_ci_low_ms * 1e3, r.overhead_ci_high_ms * 1e3, unit='µs')}"
                         f" per statement, {report.format_estimate(r.per_row_us, r.per_row_ci_low_us, r.per_row_ci_high_us, unit='µs')}"
                         f" per row, R² {r.r2:.3f} ({r.n_points} loads).")
        else:
            lines.append(f"**{r.system}, {r.setting}**: no fit ({r.method}, {r.n_points} loads).")
    return lines


def describe_physical(table: pd.DataFrame) -> list[str]:
    """The fastest method as a share of the disk's rate, and the lab's bulk path against the native client."""
    lines = []
    for r in table.itertuples():
        text = (f"**{r.system}** ({r.setting}): the fastest method, {r.fastest_method}, writes its table at "
                f"{r.fastest_table_mb_per_s:.1f} MB/s, {r.disk_share:.0%} of the disk's {r.disk_mb_per_s:.0f} MB/s "
                "sequential write")
        if np.isfinite(r.bulk_over_native):
            text += (f"; the lab's bulk path takes {r.bulk_over_native:.2f}× the native client's time "
                     f"(95 % CI {r.bulk_over_native_ci_low:.2f}–{r.bulk_over_native_ci_high:.2f})")
        lines.append(text + ".")
    return lines


def headline(table: pd.DataFrame, fits: pd.DataFrame, phys: pd.DataFrame) -> dict[str, float]:
    """The run's headline numbers: rows/s of every method under each system's default, overheads, disk share."""
    out = {f"rows_per_s[{r.system}|{r.setting}|{r.method}]": float(r.rows_per_s) for r in table.itertuples()
           if r.setting == "default"}
    out.update({f"overhead_us[{r.system}|{r.setting}]": float(r.overhead_ms * 1e3) for r in fits.itertuples()
                if r.method == "ols"})
    out.update({f"disk_share[{r.system}]": float(r.disk_share) for r in phys.itertuples()})
    out.update({f"bulk_over_native[{r.system}]": float(r.bulk_over_native) for r in phys.itertuples()})
    return out
