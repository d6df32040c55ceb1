"""Notebook 08's analysis: the round-trip law per commit protocol, its test and forecast, amortisation, figures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ingestlab import intervals, labels, models, published, report
from ingestlab.workloads.round_trips import CONFIG

#: One law per protocol (engine and variant) and configuration.
FIT_BY = ["engine", "variant", "rows_per_insert", "clients"]
#: What the law is fitted to: the system's time per statement (ms), 1000 / statements per second.
Y = "time_per_statement_ms"
#: Characters of a legend line: the engines' variants are named in full and must fit a page, an entry a line (the
#: laws, their r with its CI) or two entries side by side (the configurations' dots).
LEGEND_CHARS = {"law": 80, "dots": 45}
#: Round trips a cloud zone's network costs, for the seeds' arithmetic (a hypothesis's inputs, not measured here):
#: within one availability zone, and across zones of one region.
CLOUD_RTT_MS = {"one zone": 0.5, "across zones": 2.0}


# -- the data --------------------------------------------------------------------------------
def runs(throughput: pd.DataFrame) -> pd.DataFrame:
    """One row per run: :data:`CONFIG`, ``round_trip_ms`` (2d), ``time_per_statement_ms``, ``time_per_row_ms``,
    ``latency_median_ms``.

    Examples
    --------
    >>> t = pd.DataFrame({"engine": ["e"], "variant": ["v"], "rows_per_insert": [100], "clients": [8], "delay_ms": [2],
    ...                   "repeat": [0], "statements_per_s": [400.0], "latency_median_ms": [19.0]})
    >>> runs(t)[["round_trip_ms", "time_per_statement_ms", "time_per_row_ms"]].values.tolist()
    [[4.0, 2.5, 0.025]]
    """
    if throughput.empty:
        return pd.DataFrame(columns=[*CONFIG, "round_trip_ms", Y, "time_per_row_ms", "latency_median_ms"])
    out = throughput[[*CONFIG, "latency_median_ms"]].copy()
    out["round_trip_ms"] = 2 * out["delay_ms"]
    out[Y] = 1e3 / throughput["statements_per_s"]
    out["time_per_row_ms"] = out[Y] / out["rows_per_insert"]
    return out


def measured_round_trips(echo: pd.DataFrame) -> pd.Series:
    """Delay (ms one way) → the round trip the proxy really added at it (ms): the echo's mean exchange there less at 0.

    Toxiproxy sleeps at least its delay and wakes late on a busy machine (about 0.2 ms a hop here,
    at any delay above 0), so 2d understates what a round trip through it costs, by a step rather
    than a slope. A protocol's round trips pass through the same proxy: measured on the echo
    (one round trip an exchange), the added time is the regressor the law is fitted on.

    Examples
    --------
    >>> echo = pd.DataFrame({"delay_ms": [0, 1, 0, 1], "time_per_statement_ms": [0.1, 2.5, 0.1, 2.3]})
    >>> measured_round_trips(echo).round(2).to_dict()
    {0: 0.0, 1: 2.3}
    """
    means = echo.groupby("delay_ms")[Y].mean()
    return means - means.get(0, np.nan)


def fit(data: pd.DataFrame, held_out_ms: int | None = None, echo: pd.DataFrame | None = None) -> pd.DataFrame:
    """The round-trip law per protocol and configuration (:func:`ingestlab.models.fit_round_trips`), held-out runs left out.

    On the nominal 2d, or, with ``echo`` (the calibration's runs), on the round trip the proxy
    measurably added at each delay (:func:`measured_round_trips`); ``regressor`` says which.
    """
    if data.empty:  # the delay grid was skipped
        return pd.DataFrame()
    data, round_trip = _regressor(data, echo)
    seen = data if held_out_ms is None else data[data["delay_ms"] != held_out_ms]
    return models.fit_round_trips(seen, by=FIT_BY, y=Y, round_trip=round_trip).assign(
        regressor=MEASURED if round_trip else NOMINAL)


#: The law's regressor: the delay injected (2d), or the round trip the echo measured through the proxy.
NOMINAL, MEASURED = "2d", "measured round trip"
#: The law's terms in the long form, ``r``'s unit naming its regressor.
TERMS = {**models.ROUND_TRIP_TERMS,
         "round_trips": models.ROUND_TRIP_TERMS["round_trips"]._replace(unit="ms per ms of {regressor}")}


def _regressor(data: pd.DataFrame, echo: pd.DataFrame | None) -> tuple[pd.DataFrame, str | None]:
    if echo is None or echo.empty:
        return data, None
    return data.assign(measured_round_trip_ms=data["delay_ms"].map(measured_round_trips(echo))), \
        "measured_round_trip_ms"


def calibration(echo: pd.DataFrame, held_out_ms: int | None = None) -> pd.DataFrame:
    """The law fitted to the echo through the proxy on the nominal 2d: the instrument's own ``r`` (1 if exact)."""
    return fit(echo, held_out_ms)


def held_out(data: pd.DataFrame, held_out_ms: int | None, echo: pd.DataFrame | None = None) -> pd.DataFrame:
    """The held-out delay predicted by each law fitted without it (95 % PI for one run), or an empty table.

    ``echo`` as :func:`fit`: the law on the measured round trip.
    """
    if held_out_ms is None or data.empty:
        return pd.DataFrame(columns=[*FIT_BY, "round_trip_ms", "predicted", "pi_low", "pi_high", "observed_median",
                                     "runs", "runs_inside", "inside", "note"])
    data, round_trip = _regressor(data, echo)
    return models.round_trips_held_out(data, held_out_ms, by=FIT_BY, y=Y, round_trip=round_trip)


def plotted(data: pd.DataFrame, echo: pd.DataFrame | None = None) -> pd.DataFrame:
    """``data`` with ``round_trip_ms`` the regressor :func:`fit` used: the measured round trip where ``echo`` is given."""
    data, round_trip = _regressor(data, echo)
    return data.assign(round_trip_ms=data[round_trip]) if round_trip else data


def amortisation(fits: pd.DataFrame) -> pd.DataFrame:
    """What batching and many clients do to the round trips a statement pays, against what the model says.

    Per protocol and configuration: ``r`` and its CI; ``round_trips_per_row`` (``r`` over the rows
    an INSERT carries: the model says a statement of 100 rows pays the round trips of one); and
    ``shared_by``, the one-row one-client ``r`` over this one's with a delta-method CI — the model
    says ``clients`` when every round trip is shared by a full group of commits, 1 when none is.
    """
    cols = [*FIT_BY, "round_trips", "round_trips_ci_low", "round_trips_ci_high", "round_trips_per_row", "shared_by",
            "shared_by_ci_low", "shared_by_ci_high", "model_holds"]
    rows = []
    if fits.empty:
        return pd.DataFrame(columns=cols)
    for (engine, variant), g in fits.groupby(["engine", "variant"], sort=False):
        base = g[(g["rows_per_insert"] == 1) & (g["clients"] == 1)]
        for r in g.to_dict("records"):
            shared = ({"ratio": np.nan, "ci_low": np.nan, "ci_high": np.nan} if base.empty else
                      intervals.slope_ratio(base["round_trips"].iloc[0], base["round_trips_se"].iloc[0],
                                            base["ci_df"].iloc[0], r["round_trips"], r["round_trips_se"], r["ci_df"]))
            rows.append({**{k: r[k] for k in FIT_BY}, "round_trips": r["round_trips"],
                         "round_trips_ci_low": r["round_trips_ci_low"], "round_trips_ci_high": r["round_trips_ci_high"],
                         "round_trips_per_row": r["round_trips"] / r["rows_per_insert"], "shared_by": shared["ratio"],
                         "shared_by_ci_low": shared["ci_low"], "shared_by_ci_high": shared["ci_high"],
                         "model_holds": r.get("model_holds")})
    return pd.DataFrame(rows, columns=cols)


def seeds_overheads() -> pd.DataFrame:
    """The seeds' fixed overhead per INSERT (ms): StarRocks' scenario table fitted, one row per deployment and version."""
    fits = models.fit_overhead(published.overhead_points(), by=["variant"], robust=False)
    return fits[["variant", "overhead_ms"]].rename(columns={"variant": "deployment"})


def configuration(rows: int, clients: int) -> str:
    """A configuration in words.

    Examples
    --------
    >>> configuration(1, 1), configuration(100, 8)
    ('1 row × 1 client', '100 rows × 8 clients')
    """
    return f"{rows} row{'s' * (rows != 1)} × {clients} client{'s' * (clients != 1)}"


def one_row_one_client(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``frame`` for one row per INSERT and one client (the protocol's own round trips); empty stays empty."""
    if frame.empty:
        return frame
    return frame[(frame["rows_per_insert"] == 1) & (frame["clients"] == 1)]


#: A run stalled when its window lasted this many times its planned duration, or when it completed no statement: the
#: window closes when the last statement in flight returns, so one statement blocked for seconds stretches it, while
#: the grid's longest round trips (2 × 5 ms, 100-row statements) cost milliseconds.
STALL_FACTOR = 1.5


def stalls(throughput: pd.DataFrame, duration_s: float) -> pd.DataFrame:
    """The runs that stalled (:data:`STALL_FACTOR`): :data:`CONFIG`, ``window_s``, ``statements``, ``stalled_s``.

    ``stalled_s`` is what the window took beyond its plan (NaN where no statement completed). A run
    without a completed statement has no time per statement and is in no fit; a stretched one is in
    the fits, its time per statement carrying the stall.

    Examples
    --------
    >>> t = pd.DataFrame({"engine": ["e"] * 3, "variant": ["v"] * 3, "rows_per_insert": [1] * 3, "clients": [1] * 3,
    ...                   "delay_ms": [0] * 3, "repeat": [0, 1, 2], "window_s": [2.0, 10.2, np.nan],
    ...                   "statements": [4000, 497, 0]})
    >>> stalled = stalls(t, 2.0)
    >>> stalled["repeat"].tolist(), stalled["stalled_s"].tolist()
    ([1, 2], [8.2, nan])
    """
    cols = [*CONFIG, "window_s", "statements", "stalled_s"]
    if throughput.empty:
        return pd.DataFrame(columns=cols)
    stalled = (throughput["statements"] == 0) | (throughput["window_s"] >= STALL_FACTOR * duration_s)
    out = throughput.loc[stalled, [*CONFIG, "window_s", "statements"]].copy()
    out["stalled_s"] = (out["window_s"] - duration_s).round(3)
    return out.reset_index(drop=True)[cols]


def describe_stalls(stalled: pd.DataFrame, points: pd.DataFrame, held_out_ms: int | None,
                    echo: pd.DataFrame | None = None) -> list[str]:
    """A sentence per protocol with stalled runs: where, how long, and its one-row one-client law without them.

    The law stays fitted on every run that completed statements (a stall is part of what a
    commit cost here); the sentence gives the same law without the stalled runs beside it, so a
    reader sees how much of ``r`` and ``o₀`` the stalls moved.
    """
    if stalled.empty:
        return []
    lines = []
    for (engine, variant), group in stalled.groupby(["engine", "variant"], sort=False):
        mine = points[(points["engine"] == engine) & (points["variant"] == variant)]
        empty = int((group["statements"] == 0).sum())
        delays = ", ".join(f"{d:g}" for d in sorted(group["delay_ms"].unique()))
        longest = group["stalled_s"].max()
        said = (f"{len(group)} of {len(mine)} runs stalled (at d = {delays} ms)"
                + (f": a window stretched by up to {report.format_value(longest)} s" if pd.notna(longest) else "")
                + (f"; {empty} completed no statement (in no fit)" if empty else ""))
        stalled_run = mine.set_index(CONFIG).index.isin(group.set_index(CONFIG).index)
        without = one_row_one_client(fit(mine[~stalled_run], held_out_ms, echo))
        law = ""
        if not without.empty:
            r = without.iloc[0]
            rt = report.format_estimate(r["round_trips"], r["round_trips_ci_low"], r["round_trips_ci_high"], unit="")
            o0 = report.format_estimate(r["local_overhead_ms"], r["local_overhead_ci_low_ms"],
                                        r["local_overhead_ci_high_ms"], unit="ms")
            law = f" Without the stalled runs, 1 row × 1 client: r = {rt.strip()} over a local {o0}."
        lines.append(f"{_protocol({'engine': engine, 'variant': variant})}: {said} — a statement blocked for seconds, "
                     f"which no round trip of this grid explains (the engine's README may say why).{law}")
    return lines


# -- sentences -------------------------------------------------------------------------------
def _protocol(r) -> str:
    return labels.join(pd.DataFrame([{"engine": r["engine"], "variant": r["variant"]}]), ["engine", "variant"]).iloc[0]


def describe_plan(params) -> list[str]:
    """What the run will measure, or, in one line each, why the delay grid is skipped and which engines were left out."""
    lines = [f"Left out {line}." for line in params.left_out]
    if params.skipped:
        return [*lines, f"Delay grid skipped: {params.skipped}"]
    return [*lines, f"Delays {', '.join(map(str, params.measured_delays_ms))} ms one way"
                    + (f" ({params.held_out_ms} ms held out)" if params.held_out_ms is not None else "")
                    + f", {params.repeats} runs each, on {', '.join(spec.value for spec in params.engines)}."]


def round_trips_finding(data: pd.DataFrame) -> str | None:
    """The round-trip figure's finding: the spread of the one-row one-client time per statement (None without data)."""
    from ingestlab import findings

    one = one_row_one_client(data)
    if one.empty:
        return None
    return findings.spread(one, Y, by=["engine", "variant", "delay_ms"], unit="ms", what="time per statement")


def describe_calibration(echo_fit: pd.DataFrame) -> list[str]:
    """One sentence: the proxy's own ``r`` (1 if its toxic delays by exactly d each way)."""
    if echo_fit.empty:
        return []
    e = echo_fit.iloc[0]
    text = report.format_estimate(e["round_trips"], e["round_trips_ci_low"], e["round_trips_ci_high"], unit="")
    holds = models.model_holds(e.get("model_holds"))
    shape = ("a straight line in 2d" if holds else "not a straight line in 2d (a step at the first delay: the proxy "
             "wakes late from any sleep)" if holds is False else "untested for its shape")
    return [f"The instrument: a TCP echo (one round trip an exchange) through the same proxy pays r = {text.strip()} "
            f"round trips per exchange on the nominal 2d, {shape}. The protocols' laws below are fitted on the round "
            "trip the echo measured at each delay, which takes the proxy's own lateness out."]


def describe_fits(fits: pd.DataFrame) -> list[str]:
    """A sentence per protocol (one row, one client): r, o₀, and whether the law held."""
    lines = []
    for r in one_row_one_client(fits).to_dict("records"):
        rt = report.format_estimate(r["round_trips"], r["round_trips_ci_low"], r["round_trips_ci_high"], unit="")
        o0 = report.format_estimate(r["local_overhead_ms"], r["local_overhead_ci_low_ms"],
                                    r["local_overhead_ci_high_ms"], unit="ms")
        holds = models.model_holds(r.get("model_holds"))
        verdict = ("the law holds" if holds else "the law is rejected: " + str(r.get("model_note", ""))
                   if holds is False else "the law is not tested: " + str(r.get("model_note", "")))
        per = "measured round trip through the proxy" if r.get("regressor") == MEASURED else "2d injected"
        lines.append(f"{_protocol(r)}: r = {rt.strip()} round trips per statement (per {per}) over a local "
                     f"{o0}; {verdict}.")
    return lines


def describe_held_out(table: pd.DataFrame, held_out_ms: int | None) -> list[str]:
    """A sentence per protocol and configuration: the held-out delay's prediction and whether the runs fell inside."""
    if held_out_ms is None:
        return ["No delay was held out at this scale (HELD_OUT_MS): the law predicts nothing it did not see here."]
    lines = []
    for r in table.to_dict("records"):
        what = f"{_protocol(r)}, {configuration(r['rows_per_insert'], r['clients'])}"
        if r.get("note"):
            lines.append(f"{what}: no prediction ({r['note']}).")
            continue
        inside = "inside" if bool(r["inside"]) else "OUTSIDE"
        lines.append(f"{what}: at d = {held_out_ms} ms the law predicted {report.format_value(r['predicted'])} ms "
                     f"(95 % PI {report.format_value(r['pi_low'])}–{report.format_value(r['pi_high'])}); the runs' "
                     f"median {report.format_value(r['observed_median'])} ms is {inside} it "
                     f"({r['runs_inside']} of {r['runs']} runs inside).")
    return lines


def describe_amortisation(table: pd.DataFrame) -> list[str]:
    """A sentence per protocol and configuration other than one row and one client: the sharing seen against the model's."""
    lines = []
    others = table if table.empty else table[(table["rows_per_insert"] != 1) | (table["clients"] != 1)]
    for r in others.to_dict("records"):
        shared = report.format_estimate(r["shared_by"], r["shared_by_ci_low"], r["shared_by_ci_high"], unit="×")
        lines.append(f"{_protocol(r)}, {configuration(r['rows_per_insert'], r['clients'])}: "
                     f"{report.format_value(r['round_trips_per_row'])} round trips per row; the system's round trips per "
                     f"statement are the one-client one-row ones divided by {shared.strip()} (the model: by "
                     f"{r['clients']} if every round trip serves a full group, by 1 if none is shared).")
    return lines


def seeds_hypothesis(fits: pd.DataFrame, seeds: pd.DataFrame | None = None) -> list[str]:
    """The seeds' 64–100 ms per INSERT as round trips, labelled a hypothesis: arithmetic on this run's r, not a finding."""
    seeds = seeds_overheads() if seeds is None else seeds
    one = one_row_one_client(fits)
    lines = ["*Hypothesis, not a finding* — arithmetic only: nothing here measured the seeds' clusters."]
    for s in seeds.to_dict("records"):
        o = s["overhead_ms"]
        per_rtt = ", ".join(f"{o / rtt:.0f} round trips at {rtt:g} ms ({where})" for where, rtt in CLOUD_RTT_MS.items())
        lines.append(f"StarRocks {s['deployment']}: {report.format_value(o)} ms per INSERT would be {per_rtt}.")
        for r in one.to_dict("records"):
            if r["round_trips"] > 0:
                d = (o - r["local_overhead_ms"]) / (2 * r["round_trips"])
                lines.append(f"  At r = {report.format_value(r['round_trips'])} ({_protocol(r)}) it would take a "
                             f"one-way delay of {report.format_value(d)} ms between nodes.")
    return lines


# -- the run's records -----------------------------------------------------------------------
def tidy_fits(fits: pd.DataFrame, echo_fit: pd.DataFrame | None = None, nominal: pd.DataFrame | None = None
              ) -> pd.DataFrame:
    """Every law in the lab's long form, its regressor and configuration in the model's name; the echo's as engine ``echo``."""
    parts = [f for f in (fits, nominal, echo_fit) if f is not None and not f.empty]
    if not parts:  # the delay grid was skipped
        return pd.DataFrame(columns=models.TIDY_COLUMNS)
    return models.tidy(pd.concat(parts, ignore_index=True),
                       model="round trips on {regressor}, {rows_per_insert} rows x {clients} clients",
                       terms=TERMS)


def headline(fits: pd.DataFrame, held: pd.DataFrame, echo_fit: pd.DataFrame, skipped: str | None = None,
             stalled: pd.DataFrame | None = None) -> dict:
    """``round_trips[<engine>, <variant>]`` (one row, one client), ``law_holds[…]``, ``held_out_inside[…]``, the echo's r;
    ``stalled_runs[…]`` for a protocol with runs :func:`stalls` found."""
    if skipped:
        return {"skipped": skipped}
    out: dict = {}
    if stalled is not None and not stalled.empty:
        out.update({f"stalled_runs[{e}, {v}]": int(n) for (e, v), n in stalled.groupby(["engine", "variant"]).size().items()})
    if not echo_fit.empty:
        out["round_trips[echo]"] = float(echo_fit["round_trips"].iloc[0])
    for r in one_row_one_client(fits).to_dict("records"):
        key = f"{r['engine']}, {r['variant']}"
        out[f"round_trips[{key}]"] = float(r["round_trips"])
        out[f"law_holds[{key}]"] = models.model_holds(r.get("model_holds"))
    for r in one_row_one_client(held).to_dict("records"):
        out[f"held_out_inside[{r['engine']}, {r['variant']}]"] = None if pd.isna(r["inside"]) else bool(r["inside"])
    return out


def fit_run(folder: str | os.PathLike) -> pd.DataFrame:
    """Notebook 08's fits in the lab's long form, computed again from ``throughput.csv`` and ``calibration.csv`` in ``folder``."""
    folder = Path(folder)
    held_out_ms = json.loads((folder / "run.json").read_text())["parameters"].get("held_out_ms")
    try:
        throughput = pd.read_csv(folder / "throughput.csv")
    except FileNotFoundError:  # the delay grid was skipped
        return tidy_fits(pd.DataFrame())
    echo = pd.read_csv(folder / "calibration.csv")
    points = runs(throughput)
    return tidy_fits(fit(points, held_out_ms, echo), calibration(echo, held_out_ms), fit(points, held_out_ms))


# -- figures ---------------------------------------------------------------------------------
def plot_round_trips(data: pd.DataFrame, fits_long: pd.DataFrame, held: pd.DataFrame | None = None):
    """Time per one-row INSERT (one client) against the round trip injected, each protocol's law over it.

    ``data`` from :func:`plotted`: on the measured round trip where it has one, else on 2d.

    A panel per engine (its variants in shades of its colour); the line is the law fitted
    without the held-out delay, shaded by its ``r``'s 95 % CI; at the held-out delay, the 95 %
    prediction interval for one run as a bar in the series' colour. None without data.
    """
    from ingestlab import figures, plots
    from ingestlab.workloads.insert_analysis import _engine_panels, _one_legend_under, labelled

    one = one_row_one_client(data)
    if one.empty:
        return None
    regressor = MEASURED if "measured_round_trip_ms" in data.columns else NOMINAL
    lines = fits_long[fits_long["model"] == f"round trips on {regressor}, 1 rows x 1 clients"]
    points, lines = labelled(one), labelled(lines)
    fig, panels = _engine_panels(list(dict.fromkeys(points["engine"])), 2.4)
    for engine, ax in panels.items():
        plots.plot_fit(points[points["engine"] == engine], lines[lines["engine"] == engine], x="round_trip_ms", y=Y,
                       hue="series", slope="round_trips", intercept="local_overhead", ax=ax, logx=False, logy=False)
        if regressor == MEASURED:
            ax.set_xlabel("round trip added, measured (ms)")
        if held is not None and not held.empty:
            part = one_row_one_client(held)
            part = labelled(part[(part["engine"] == engine) & part["predicted"].notna()])
            colours = figures.palette(plots.named(points, "series")["series"])
            for r in plots.named(part, "series").to_dict("records"):
                ax.errorbar([r["round_trip_ms"]], [r["predicted"]],
                            yerr=[[r["predicted"] - r["pi_low"]], [r["pi_high"] - r["predicted"]]], fmt="none",
                            ecolor=colours.get(r["series"], "0.3"), capsize=3, lw=1)
    _one_legend_under(fig, panels)
    _wrap_legends(fig, LEGEND_CHARS["law"])
    return fig


def _wrap_legends(fig, chars: int) -> None:
    """Every legend entry of ``fig`` wrapped at ``chars`` characters (:data:`LEGEND_CHARS`)."""
    from ingestlab.captions import wrapped

    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        for text in legend.get_texts() if legend is not None else ():
            text.set_text(wrapped(text.get_text(), chars))


def plot_amortisation(table: pd.DataFrame):
    """Round trips per statement (r, 95 % CI) per configuration: does batching or many clients change it? None without data."""
    from ingestlab import plots
    from ingestlab.workloads.insert_analysis import labelled

    if table.empty:
        return None
    data = labelled(table).assign(configuration=[configuration(r, c) for r, c in
                                                 zip(table["rows_per_insert"], table["clients"])])
    fig = plots.plot_estimates(data, x="round_trips", y="configuration", hue="series", low="round_trips_ci_low",
                               high="round_trips_ci_high").figure
    _wrap_legends(fig, LEGEND_CHARS["dots"])
    return fig
