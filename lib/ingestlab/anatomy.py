"""Statement anatomy: the one tidy shape every engine's split of a statement's time takes, and its summaries.

An adapter says what its server reported for each statement (a :class:`Recorder`); the
engine contract times the statements on the lab's clock (:mod:`ingestlab.timing`) and
:func:`frame` builds the table, naming what no instrument covers :data:`UNEXPLAINED`
everywhere.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ingestlab import timing
from ingestlab.timing import CLOCK

#: The part of a statement's client time that no instrument covers (client time − the parts).
UNEXPLAINED = "unexplained"
#: The client's wall clock of the whole statement.
CLIENT_TOTAL = "client_total"
#: The pass of statements timed with nothing read around them (the observer's control).
UNOBSERVED = "unobserved"
#: Old name → name of an anatomy column, mapped when a stored anatomy is read (notebook 01 named the
#: profiled INSERT's number ``round`` until issue S: a round is a replicate everywhere else).
RENAMED_COLUMNS = {"round": "profiled_no"}
#: A part of one statement: (component, ms, source).
Part = tuple[str, float, str]
#: A measure of one statement that is not a part of its time: (component, ms, count, source).
Extra = tuple[str, float, float, str]
#: Columns beside a summary's parts that are not parts: what the statement was measured as elsewhere, the observer.
REFERENCES = ("observed", "unobserved", "observer", "observer_ci_low", "observer_ci_high", "samples_median",
              "samples_mean", "samples_p99", "overhead", "overhead_ci_low", "overhead_ci_high")
#: Columns of an anatomy frame, in order.
COLUMNS = ["pass", "statement_no", "component", "ms", "count", "source", "warmup"]


def _median_ci(samples: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """Bootstrap 95 % CI of the median (percentile method); NaN with fewer than 3 samples."""
    values = np.asarray(samples, dtype=float)
    if len(values) < 3:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    medians = np.median(rng.choice(values, size=(2000, len(values)), replace=True), axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


class Recorder:
    """What a server reports about each statement of an anatomy pass; adapters subclass it.

    The engine runs :attr:`sql` once per row on its measuring connection, timed by the lab's
    clock, and calls :meth:`statement` with each result right after the clock stops; the
    recorder reads its instruments there (or, in :meth:`end`, for all statements at once).
    Entering starts the instruments and exiting stops them, also on an error.

    Attributes
    ----------
    PASS : str
        The pass's name in the frame (``"server"``, ``"stages"``, ``"profile"``...).
    table, columns :
        Where the pass writes.
    sql : str
        The statement run per row: the single-row ``INSERT`` (an engine may wrap it: ``EXPLAIN …``).
    parts, extras : list of list
        Per statement: its :data:`Part` and :data:`Extra` tuples.
    counters : dict
        Per-statement means of counters read around the pass: name → (value, source).
    client_ms : list of float
        The client's time of each statement so far (the engine appends it before calling
        :meth:`statement`, so a part may be measured against it).
    """

    PASS: str = "server"
    #: The parts in the order a statement passes through them (those not named keep theirs, after).
    ORDER: tuple[str, ...] = ()
    #: Whether :meth:`statement` reads the rows the statement returned (an ``EXPLAIN``): the
    #: engine then runs it through ``execute``, which renders its parameters inside the clock.
    READS_ROWS: bool = False
    #: Samples of each rung taken after each statement (each probe settled as the first): a smoke run
    #: profiles three statements, and a median of three single probes is too loose for a part of a 20 µs
    #: statement. Recorders whose probes are cheap take more than one.
    RUNG_SAMPLES: int = 1

    def __init__(self, engine: Any, table: str, columns: Sequence[str]):
        self.engine = engine
        self.table = table
        self.columns = list(columns)
        self.sql = engine.sql.insert_sql(table, columns, 1)
        self.parts: list[list[Part]] = []
        self.extras: list[list[Extra]] = []
        self.counters: dict[str, tuple[float, str]] = {}
        self.client_ms: list[float] = []
        self.rungs: dict[str, list[float]] = {}
        self.rung_sources: dict[str, str] = {}
        #: Parts this server cannot report, each with the reason (e.g. an older version's missing view).
        self.unmeasured: dict[str, str] = {}
        #: Client time of each unobserved statement, whether it settles (the first of a block), and its parts.
        self.unobserved_ms: list[float] = []
        self.unobserved_settle: list[bool] = []
        self.unobserved_parts: list[list[Part]] = []

    def rung(self, name: str, ms: float, source: str) -> None:
        """One sample of a ladder rung: a part no instrument reports per statement, measured beside it.

        Rungs are measured after each statement of the pass, outside its clock, on the same
        connection (an empty round trip, a prepared statement against an unprepared one...);
        each statement's anatomy then carries the rung's median as a part, and the ladder
        itself (median with its CI) is kept in the frame as pass ``ladder``.
        """
        self.rungs.setdefault(name, []).append(ms)
        self.rung_sources[name] = source

    def last_of(self, call: Any, times: int) -> float:
        """The lab's clock (ms) of the last of ``times`` calls of ``call`` in a row: a rung's probe, settled.

        The calls before it absorb what the reads before them left behind, as a block's
        settling statements do (:attr:`ProfiledStatement.SETTLE <ingestlab.engines.capabilities.ProfiledStatement.SETTLE>`).
        """
        for _ in range(times - 1):
            call()
        return timing.timed(call).ms

    def ladder(self) -> pd.DataFrame:
        """The rungs: ``component``, ``ms`` (median), ``ci_low_ms``/``ci_high_ms`` (bootstrap 95 %), ``n``, ``source``."""
        rows = []
        for name, samples in self.rungs.items():
            low, high = _median_ci(samples)
            rows.append({"component": name, "ms": float(np.median(samples)), "ci_low_ms": low, "ci_high_ms": high,
                         "n": len(samples), "source": f"ladder: {self.rung_sources[name]}"})
        return pd.DataFrame(rows, columns=["component", "ms", "ci_low_ms", "ci_high_ms", "n", "source"])

    def begin(self) -> None:
        """Before the first statement: turn instruments on, read counters. Default: nothing."""

    def before(self) -> None:
        """Right before each observed statement (after the unobserved block, if any): the last reads. Default: nothing.

        Whatever runs here is the observer's cost still in the observed statement's time.
        """

    def block(self, client_ms: Sequence[float]) -> None:
        """After each block of unobserved statements (times of each, in order): read what covers them. Default: nothing.

        A recorder whose instruments report a block of statements without reads between
        them (cumulative counters, a history kept by the server) appends one list of parts per
        unobserved statement to :attr:`unobserved_parts`, here or in :meth:`end`.
        """

    def statement(self, result: Any, row: Sequence[Any]) -> None:
        """After each statement (the clock stopped) that wrote ``row``: read what the server reported. Default: nothing."""

    def end(self) -> None:
        """After the last statement (also after an error): read the rest, turn instruments off."""

    def __enter__(self) -> "Recorder":
        self.begin()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end()


def frame(pass_name: str, client_ms: Sequence[float], parts: Sequence[Sequence[Part]], *,
          extras: Sequence[Sequence[Extra]] | None = None,
          counters: dict[str, tuple[float, str]] | None = None,
          ladder: pd.DataFrame | None = None, order: Sequence[str] = (),
          unmeasured: dict[str, str] | None = None,
          unobserved: tuple[Sequence[float], Sequence[bool], Sequence[Sequence[Part]]] | None = None,
          warm_up: bool = True) -> pd.DataFrame:
    """Per-statement rows and their means, in the shape of :meth:`ProfiledStatement.anatomy <ingestlab.engines.capabilities.ProfiledStatement.anatomy>`.

    Pass ``pass_name`` has, per statement: ``client_total`` (the lab's clock), each part
    (repeated names summed), :data:`UNEXPLAINED` = client total − sum of the parts, and the
    extras (measures that are not parts of the time: counts, or a time inside a part).
    Statement 0 is flagged ``warmup`` when there are more (and ``warm_up``): right after
    ``CREATE TABLE`` it also opens the table. Pass ``stats`` (``statement_no = -1``) has the mean over the other
    statements of ``client_total``, every part and the remainder, so its ``ms`` rows other
    than ``client_total`` add up to it, then one ``count`` row (ms NaN) per counted extra
    (its mean) and per counter. A ``ladder`` (:meth:`Recorder.ladder`) adds each rung's median
    to every statement's parts and its rows as pass ``ladder``; ``order`` lists the parts in the
    order a statement passes through them (others follow in the order given). ``unmeasured``
    (part → why) adds one row per part the server could not report, as pass ``unmeasured``
    (``ms`` NaN, the reason as ``source``): its time stays in :data:`UNEXPLAINED`.
    ``unobserved`` — (client ms, settles, parts) of the statements run between the observed
    ones with nothing read around them — adds them as pass :data:`UNOBSERVED`, each with the
    ladder's rungs and its remainder; the settling ones are flagged ``warmup``.

    Examples
    --------
    >>> f = frame("stages", [1.0, 0.5, 0.7], [[("commit", 0.6, "s")], [("commit", 0.2, "s")],
    ...                                       [("commit", 0.4, "s")]])
    >>> f[f["pass"] == "stats"].set_index("component")["ms"].round(3).to_dict()
    {'client_total': 0.6, 'commit': 0.3, 'unexplained': 0.3}
    """
    rungs = [] if ladder is None or ladder.empty else [(r.component, r.ms, r.source) for r in ladder.itertuples()]
    rank = {name: i for i, name in enumerate(order)}

    def statements(name: str, times: Sequence[float], their_parts: Sequence[Sequence[Part]],
                   their_extras: Sequence[Sequence[Extra]] | None) -> list[dict]:
        rows = []
        for i, total in enumerate(times):
            summed: dict[str, list] = {}
            for part, ms, source in [*rungs, *(their_parts[i] if i < len(their_parts) else ())]:
                entry = summed.setdefault(part, [0.0, source])
                entry[0] += ms
            summed = dict(sorted(summed.items(), key=lambda kv: rank.get(kv[0], len(rank))))
            rows.append({"pass": name, "statement_no": i, "component": CLIENT_TOTAL, "ms": total, "source": CLOCK})
            rows += [{"pass": name, "statement_no": i, "component": k, "ms": v, "source": src}
                     for k, (v, src) in summed.items()]
            rows.append({"pass": name, "statement_no": i, "component": UNEXPLAINED,
                         "ms": total - sum(v for v, _ in summed.values()),
                         "source": "client_total - sum of the parts"})
            for part, ms, count, source in (their_extras[i] if their_extras and i < len(their_extras) else ()):
                rows.append({"pass": name, "statement_no": i, "component": part, "ms": ms, "count": count,
                             "source": source, "extra": True})
        return rows

    out = pd.DataFrame(statements(pass_name, client_ms, parts, extras))
    if "extra" not in out.columns:
        out["extra"] = False
    out["extra"] = out["extra"].astype("boolean").fillna(False).astype(bool)
    out["warmup"] = (out["statement_no"] == 0) & (len(client_ms) > 1) & warm_up
    timed = out[~out["warmup"] & ~out["extra"]]
    wide = timed.pivot_table(index="statement_no", columns="component", values="ms", aggfunc="sum", sort=False)
    means = wide.fillna(0.0).mean()  # a part a statement skipped took 0 ms in it
    sources = timed.drop_duplicates("component").set_index("component")["source"]
    stats = [{"pass": "stats", "statement_no": -1, "component": c, "ms": float(means[c]), "warmup": False,
              "source": f"mean over {len(wide)} statements of {sources[c]}"} for c in wide.columns]
    if "count" not in out.columns:
        out["count"] = math.nan
    counted = out[out["extra"] & ~out["warmup"] & out["count"].notna()]
    for name, g in counted.groupby("component", sort=False):
        stats.append({"pass": "stats", "statement_no": -1, "component": name, "ms": math.nan,
                      "count": float(g["count"].mean()), "warmup": False,
                      "source": f"mean over {len(g)} statements of {g['source'].iloc[0]}"})
    stats += [{"pass": "stats", "statement_no": -1, "component": name, "ms": math.nan, "count": value,
               "warmup": False, "source": source} for name, (value, source) in (counters or {}).items()]
    ladder_rows = [] if ladder is None or ladder.empty else [
        {"pass": "ladder", "statement_no": -1, "component": r.component, "ms": r.ms, "count": r.n, "warmup": False,
         "source": f"{r.source}; median of {r.n}, 95 % CI {r.ci_low_ms:.4f}–{r.ci_high_ms:.4f} ms"}
        for r in ladder.itertuples()]
    missing = [{"pass": "unmeasured", "statement_no": -1, "component": name, "ms": math.nan, "warmup": False,
                "source": why} for name, why in (unmeasured or {}).items()]
    quiet = pd.DataFrame()
    if unobserved is not None and len(unobserved[0]):
        times, settles, their_parts = unobserved
        quiet = pd.DataFrame(statements(UNOBSERVED, times, their_parts, None))
        quiet["warmup"] = quiet["statement_no"].map(lambda i: bool(settles[i]))
    pieces = [pd.DataFrame(stats), pd.DataFrame(ladder_rows), pd.DataFrame(missing), quiet]
    out = pd.concat([out.drop(columns="extra"), *(p for p in pieces if not p.empty)], ignore_index=True)
    if "count" not in out.columns:
        out["count"] = math.nan
    return out[COLUMNS]


def summary(anatomy: pd.DataFrame, by: Sequence[str] = ("engine", "variant")) -> pd.DataFrame:
    """Per group, the median of every part of a statement and what share of the client's median stays unexplained.

    The parts are those of the ``stats`` pass (extras and counts are left out), so the same
    function serves every engine, whatever its instrument. Each part's median is taken over
    the measured statements (warm-up left out), so a heavy tail in one part cannot hide in a
    mean. :data:`UNEXPLAINED` is the median over the statements of each one's own remainder
    (its client time minus its parts): the client's median minus the parts' medians would
    mix statements, and where one part is heavy-tailed (a WAL flush on a busy disk) it reports
    as unexplained what each statement's parts do explain. So the medians of the parts and
    of the remainder need not add up to the client's median exactly.

    Where the pass has :data:`UNOBSERVED` statements (run between the observed ones with nothing
    read around them, see :meth:`ProfiledStatement.anatomy <ingestlab.engines.capabilities.ProfiledStatement.anatomy>`), the table is theirs: the statement
    as the samples time it, its parts from the instruments that need no reads between statements
    and the rest from the observed ones. ``observed_ms`` is then the observed statements' median
    and ``observer_ms`` (with its bootstrap 95 % CI) what observing them added.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``client_total_ms``, one ``<part>_ms`` column per part (in the
        order the statement passes through them, :data:`UNEXPLAINED` last), ``unexplained_share``
        (unexplained ÷ the client's median), ``n`` (statements), ``observed_ms``,
        ``observer_ms``, ``observer_ci_low_ms`` and ``observer_ci_high_ms`` (NaN without an
        unobserved pass).

    Examples
    --------
    >>> f = frame("x", [1.0, 0.5, 0.7, 0.6], [[("commit", 0.6, "s")], [("commit", 0.2, "s")], [("commit", 0.4, "s")],
    ...                                       [("commit", 0.3, "s")]])
    >>> summary(f.assign(engine="e", variant="v")).round(3).iloc[0, :7].to_dict()
    {'engine': 'e', 'variant': 'v', 'client_total_ms': 0.6, 'commit_ms': 0.3, 'unexplained_ms': 0.3, 'unexplained_share': 0.5, 'n': 3}
    """
    if anatomy.empty:
        return pd.DataFrame()
    anatomy = anatomy.rename(columns=RENAMED_COLUMNS)
    by = [c for c in by if c in anatomy.columns]
    stats = anatomy[(anatomy["pass"] == "stats") & anatomy["ms"].notna()]
    quiet_rows = anatomy["pass"] == UNOBSERVED
    names = [c for c in dict.fromkeys([*stats["component"], *anatomy.loc[quiet_rows, "component"]])
             if c not in (CLIENT_TOTAL, UNEXPLAINED)]
    columns = [CLIENT_TOTAL, *names, UNEXPLAINED]
    timed = ~anatomy["warmup"].astype(bool) & anatomy["component"].isin(columns)
    observed = anatomy[~anatomy["pass"].isin(["stats", "ladder", "unmeasured", UNOBSERVED]) & timed]
    quiet = anatomy[quiet_rows & timed]
    rows = []
    for key, own in (observed.groupby(by, sort=False) if by else [((), observed)]):
        key = key if isinstance(key, tuple) else (key,)
        mine = quiet
        for col, value in zip(by, key):
            mine = mine[mine[col] == value]
        chosen = mine if not mine.empty else own
        # an anatomy taken in passes (a ``profiled_no`` column) numbers its statements within each pass
        wide = chosen.pivot_table(index=[c for c in ("profiled_no", "statement_no") if c in chosen.columns],
                                  columns="component", values="ms", aggfunc="sum", sort=False)
        # a part this group's statements never reported is not a column of its row (another engine's stage)
        reported = set(own["component"]) | set(mine["component"])
        wide = wide.reindex(columns=columns).fillna({n: 0.0 for n in names if n in reported})
        row = dict(zip(by, key)) | {f"{c}_ms": float(wide[c].median()) for c in columns}
        row["unexplained_share"] = row[f"{UNEXPLAINED}_ms"] / row[f"{CLIENT_TOTAL}_ms"]
        row["n"] = len(wide)
        seen = own[own["component"] == CLIENT_TOTAL]["ms"].to_numpy(float)
        row["observed_ms"] = float(np.median(seen))
        if mine.empty:
            row.update(observer_ms=math.nan, observer_ci_low_ms=math.nan, observer_ci_high_ms=math.nan)
        else:
            unseen = wide[CLIENT_TOTAL].to_numpy(float)
            row["observer_ms"] = row["observed_ms"] - float(np.median(unseen))
            row["observer_ci_low_ms"], row["observer_ci_high_ms"] = _difference_ci(seen, unseen)
        rows.append(row)
    return pd.DataFrame(rows)


def _difference_ci(a: Sequence[float], b: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """Bootstrap 95 % CI of median(a) − median(b), each resampled on its own; NaN with fewer than 3 of either."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 3 or len(b) < 3:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    diffs = (np.median(rng.choice(a, size=(2000, len(a))), axis=1, overwrite_input=True)
             - np.median(rng.choice(b, size=(2000, len(b))), axis=1, overwrite_input=True))
    return float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))


def observer(anatomy: pd.DataFrame, by: Sequence[str] = ("engine", "variant")) -> pd.DataFrame:
    """What observing a statement added to it, part by part: observed against unobserved statements of one pass.

    For every part both kinds of statement report (and the client's total), the observed
    statements' median, the unobserved ones' median, their difference ``observer_ms`` and its
    bootstrap 95 % CI. Empty without an :data:`UNOBSERVED` pass.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, ``component``, ``observed_ms``, ``unobserved_ms``, ``observer_ms``,
        ``ci_low_ms``, ``ci_high_ms``, ``n_observed``, ``n_unobserved``.
    """
    if anatomy.empty or UNOBSERVED not in set(anatomy["pass"]):
        return pd.DataFrame()
    by = [c for c in by if c in anatomy.columns]
    rows = anatomy[~anatomy["warmup"].astype(bool) & anatomy["ms"].notna()
                   & ~anatomy["pass"].isin(["stats", "ladder", "unmeasured"])]
    rungs = set(anatomy.loc[anatomy["pass"] == "ladder", "component"])
    out = []
    for key, g in (rows.groupby([*by, "component"], sort=False)):
        key = key if isinstance(key, tuple) else (key,)
        if key[-1] in rungs or key[-1] == UNEXPLAINED:
            continue  # a rung is the same number in both; the remainder is what is left of the others
        seen = g.loc[g["pass"] != UNOBSERVED, "ms"].to_numpy(float)
        unseen = g.loc[g["pass"] == UNOBSERVED, "ms"].to_numpy(float)
        if not len(seen) or not len(unseen):
            continue
        low, high = _difference_ci(seen, unseen)
        out.append(dict(zip([*by, "component"], key)) | {
            "observed_ms": float(np.median(seen)), "unobserved_ms": float(np.median(unseen)),
            "observer_ms": float(np.median(seen) - np.median(unseen)), "ci_low_ms": low, "ci_high_ms": high,
            "n_observed": len(seen), "n_unobserved": len(unseen)})
    return pd.DataFrame(out)


def parts(table: pd.DataFrame, top: int = 5, by: Sequence[str] = ("engine", "variant")) -> pd.DataFrame:
    """The parts of :func:`summary` in long form, for a stacked bar, in the statement's order.

    ``top`` parts are named (each group's largest first, then the next largest: a panel keeps five
    colours); the rest are summed as ``smaller parts``; :data:`UNEXPLAINED` is always shown, last.
    A part's size is its largest share of its own group's statement: half of a 0.2 ms INSERT
    outranks a tenth of a 5 ms one, so one slow engine's parts do not hide what the others'
    statements are made of.

    Examples
    --------
    >>> t = pd.DataFrame({"engine": ["pg", "ch"], "variant": ["v", "v"], "wal_flush_ms": [0.1, None],
    ...                   "parse_ms": [0.02, 0.3], "part_files_ms": [None, 3.0], "unexplained_ms": [0.08, 1.7]})
    >>> parts(t, top=2)["component"].unique().tolist()
    ['wal_flush', 'part_files', 'smaller parts', 'unexplained']
    >>> busy = t.assign(wal_flush_ms=[0.05, None], parse_ms=[0.02, 2.5], unexplained_ms=[0.13, 0.5])
    >>> parts(busy, top=2)["component"].unique().tolist()  # each group's largest first: 25 % outranks parse's 42 %
    ['wal_flush', 'part_files', 'smaller parts', 'unexplained']

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, ``component``, ``ms``.
    """
    if table.empty:  # no engine of the run has an anatomy (the run's notes say why)
        return pd.DataFrame(columns=[*by, "component", "ms"])
    by = [c for c in by if c in table.columns]
    cols = [c for c in table.columns if c.endswith("_ms") and c != f"{CLIENT_TOTAL}_ms"
            and c.removesuffix("_ms") not in REFERENCES]
    long = (table.melt(id_vars=by, value_vars=cols, var_name="component", value_name="ms").dropna(subset=["ms"]))
    long["component"] = long["component"].str.removesuffix("_ms")
    long["share"] = long["ms"] / (long.groupby(by)["ms"].transform("sum") if by else long["ms"].sum())
    named = long[long["component"] != UNEXPLAINED]
    firsts = named.loc[named.groupby(by)["share"].idxmax()] if by else named.nlargest(1, "share")
    firsts = firsts.sort_values("share", ascending=False)["component"].drop_duplicates().tolist()
    size = named.groupby("component")["share"].max().sort_values(ascending=False)
    keep = set((firsts + [c for c in size.index if c not in firsts])[:top]) | {UNEXPLAINED}
    long.loc[~long["component"].isin(keep), "component"] = "smaller parts"
    order = [c for c in long["component"].unique() if c not in ("smaller parts", UNEXPLAINED)]
    long["component"] = pd.Categorical(long["component"], categories=order + ["smaller parts", UNEXPLAINED])
    out = long.groupby([*by, "component"], sort=False, observed=True, as_index=False)["ms"].sum()
    return out.sort_values("component", kind="stable").assign(component=lambda d: d["component"].astype(str))


def describe(table: pd.DataFrame, top: int = 3) -> list[str]:
    """One sentence per engine and variant: the client's time per statement, its largest parts, the unexplained share.

    Examples
    --------
    >>> f = frame("x", [1.0, 0.5, 0.7], [[("commit", 0.6, "s")], [("commit", 0.2, "s")], [("commit", 0.4, "s")]])
    >>> print(describe(summary(f.assign(engine="e", variant="v")))[0])
    **e v**: 0.600 ms per single-row INSERT on the client's clock (median of 2); largest parts: commit 0.300 ms (50 %); unexplained 0.300 ms (50 %).
    """
    out = []
    for row in table.to_dict("records"):
        total = row[f"{CLIENT_TOTAL}_ms"]
        known = {k.removesuffix("_ms"): v for k, v in row.items()
                 if k.endswith("_ms") and k not in (f"{CLIENT_TOTAL}_ms", f"{UNEXPLAINED}_ms") and pd.notna(v)
                 and k.removesuffix("_ms") not in REFERENCES}
        largest = "; ".join(f"{name} {ms:.3f} ms ({100 * ms / total:.0f} %)"
                            for name, ms in sorted(known.items(), key=lambda kv: -kv[1])[:top])
        observer = row.get("observer_ms", math.nan)
        seen = ("" if pd.isna(observer) else
                f" (unobserved statements; profiling them added {observer:+.3f} ms, 95 % CI "
                f"{row['observer_ci_low_ms']:+.3f} to {row['observer_ci_high_ms']:+.3f})")
        out.append(f"**{row.get('engine', '')} {row.get('variant', '')}**: {total:.3f} ms per single-row INSERT on "
                   f"the client's clock (median of {row['n']}){seen}; largest parts: {largest}; {UNEXPLAINED} "
                   f"{row[f'{UNEXPLAINED}_ms']:.3f} ms ({100 * row['unexplained_share']:.0f} %).")
    return out


def ladder(anatomy: pd.DataFrame, by: Sequence[str] = ("engine", "variant")) -> pd.DataFrame:
    """The ladder's rungs per group: ``component``, median ``ms``, ``n`` and the source with its CI.

    An anatomy taken in passes (a ``profiled_no`` column) climbed the ladder once per pass: each
    rung is then the median of the passes' medians, ``n`` their statements in all.
    """
    anatomy = anatomy.rename(columns=RENAMED_COLUMNS)
    rows = anatomy[anatomy["pass"] == "ladder"] if not anatomy.empty else anatomy
    rows = rows[[c for c in (*by, "component", "ms", "count", "source") if c in rows.columns]].rename(
        columns={"count": "n"}).reset_index(drop=True)
    if "profiled_no" not in anatomy.columns or rows.empty:
        return rows
    # taken in passes (a ``profiled_no`` column, each pass its own ladder): one row per rung, the median of their medians
    keys = [c for c in (*by, "component") if c in rows.columns]
    folded = rows.groupby(keys, sort=False, as_index=False).agg(
        ms=("ms", "median"), n=("n", "sum"), passes=("ms", "size"), source=("source", "first"))
    folded["source"] = folded["source"].str.split(";").str[0] + "; median of the passes' medians"
    return folded.drop(columns="passes")


def unmeasured(anatomy: pd.DataFrame, by: Sequence[str] = ("engine", "variant")) -> list[str]:
    """One sentence per group and part its server could not report, with the reason (its time is in the remainder).

    Examples
    --------
    >>> f = frame("x", [1.0, 0.5], [[], []], unmeasured={"wal_flush": "no pg_stat_io before 16"})
    >>> unmeasured(f.assign(engine="postgres15", variant="sync_on"))
    ['**postgres15 sync_on**: wal_flush not measured (no pg_stat_io before 16); its time is in unexplained.']
    """
    if anatomy.empty or "unmeasured" not in set(anatomy["pass"]):
        return []
    by = [c for c in by if c in anatomy.columns]
    rows = anatomy[anatomy["pass"] == "unmeasured"].drop_duplicates([*by, "component"])
    return [f"**{' '.join(str(getattr(r, c)) for c in by)}**: {r.component} not measured ({r.source}); its time is "
            f"in {UNEXPLAINED}." for r in rows.itertuples()]
