"""Measure in rounds until every headline is as precise as asked: the stopping rule, its corrected interval, the record.

A workload measures in rounds (every engine × variant × scenario once, in a random order) and
computes, after each, one value per headline from that round's samples alone. The rounds are
the units: a headline's estimate is the mean of its rounds' values with a t interval, and
:class:`Rounds` asks for another round until every headline's interval is narrower than the
target, relative to its estimate (``t·s / (√n·|x̄|) ≤ r``, the rule of Georges et al., OOPSLA
2007), or a time cap or a round ceiling is hit.

Stopping when narrow biases the interval. The rule stops at the first round whose scatter
happens to be small (and, for a relative target, whose mean happens to be far from zero), so
the interval it stops on is narrower than the truth asks and undercovers. Calibrated with
:func:`simulate` (2 000 trials, seed 7, r = 0.05; the round values' spread set so that a
count of n* rounds fixed in advance would just reach it), coverage of the 95 % interval /
mean rounds:

=================  =====  ===========  ============  ===================
round values        n*    naive rule   5 rounds      5 rounds, t at α/5
=================  =====  ===========  ============  ===================
t₃                    3   0.930 / 4.4  0.966 / 5.8   0.992 / 7.5
t₃                   12   0.909 / 9.5  0.952 / 10.6  0.986 / 17.9
t₃                   25   0.895 / 17.7 0.930 / 19.1  0.986 / 35.3
t₃                   50   0.904 / 36.8 0.934 / 38.4  0.986 / 72.0
median of 30, 5 %     6   0.882 / 7.4  0.930 / 8.2   0.977 / 13.3
median of 30, 5 %    12   0.878 / 12.4 0.926 / 13.3  0.974 / 23.1
median of 30, 5 %    50   0.901 / 48.8 0.932 / 50.6  0.985 / 88.8
mean of 30, 2 %       6   0.840 / 6.6  0.886 / 7.7   0.958 / 11.9
mean of 30, 2 %      12   0.804 / 10.6 0.862 / 11.7  0.931 / 20.0
mean of 30, 2 %      25   0.797 / 20.5 0.838 / 21.7  0.934 / 40.7
=================  =====  ===========  ============  ===================

(t₃: Student t round values; median/mean of 30: each round's value is the median or mean of
30 log-normal samples, σ = 0.6, 5 % or 2 % of them 10× slower. Naive: the plain t interval,
from 2 rounds.) The naive rule stops, on average, before the n* rounds a fixed count needs:
it stops on a chance low scatter, at every n*, so a minimum round count alone does not
suffice. Stein's two-stage procedure (the count fixed by 5 or 10 pilot rounds; simulated
alike) gave 0.89–0.96: a heavy-tailed pilot's scatter is itself unreliable. So both the stop
and the report use :func:`interval` with its quantile at α / :data:`ALPHA_DIVISOR` (t at
0.995 for a 95 % interval) after at least :data:`MIN_ROUNDS` rounds: ≥ 0.97 for symmetric
heavy tails and for medians at every n* from 3 to 50, and 0.93–0.97 for the skewed means,
where even a count fixed in advance covers only 0.90–0.92 (n* ≤ 25) with the t interval (compute a
round's value as a median where the quantity allows it). The price is rounds: about 1.8×
the naive rule's, near the quantiles' ratio squared ((2.58 / 1.96)² = 1.73).
``tests/test_precision.py`` checks the first two generators at 500 trials.

Near zero no relative precision is reachable (an overhead whose interval takes in 0). A target
can give such headlines an absolute floor (:attr:`Target.floors`): a headline whose half-width
is under its floor counts as reached, and the table says so; without one it runs to the cap or
the ceiling and its note says why.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from numbers import Real
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from ingestlab import timing
from ingestlab.errors import ConfigError
from ingestlab.workloads._params import MAX_REPEATS

#: Confidence level of every headline's interval.
CONFIDENCE = 0.95
#: Rounds before any stop (the default of :attr:`Target.min_rounds`): fewer give a scatter too
#: unreliable to stop on (see the module docstring's table).
MIN_ROUNDS = 5
#: The default round ceiling (:attr:`Target.max_rounds`).
MAX_ROUNDS = 200
#: The quantile of an interval after a data-dependent stop is taken at α / this (t at 0.995 for a
#: 95 % interval): the correction calibrated in the module docstring.
ALPHA_DIVISOR = 5
#: What :meth:`Rounds.table`'s ``stopped`` says: the headline is as precise as asked; the time
#: cap or the round ceiling stopped the run first; no round gave it a value; the run goes on.
STOPPED = ("reached", "cap", "max_rounds", "unmeasured", "running", "fixed")


@dataclasses.dataclass(frozen=True)
class Target:
    """How precise each headline must be, and how long a run may take to get there.

    Parameters
    ----------
    precision : float
        The relative half-width of each headline's 95 % interval to reach, 0 < p < 1 (0.05: ±5 %).
    cap_s : float
        Time cap in seconds (> 0): no round is started that would, at the rounds' mean duration
        so far, end after it.
    min_rounds : int
        Rounds before any stop, 2 to ``max_rounds``.
    max_rounds : int
        The hard ceiling on rounds, at most :data:`~ingestlab.workloads._params.MAX_REPEATS`.
    floors : mapping of str to float
        Absolute half-widths that count as reached, for headlines whose estimate may be near
        zero: a key is a headline (``"overhead_ms[clickhouse sync_on]"``) or its quantity
        (``"overhead_ms"``), in the headline's unit. Stored as sorted pairs.

    Examples
    --------
    >>> t = Target(0.05, 600, floors={"overhead_ms": 0.02})
    >>> t.floor("overhead_ms[clickhouse sync_on]"), t.floor("total_vs_samples[sync_on]")
    (0.02, nan)
    """

    precision: float
    cap_s: float
    min_rounds: int = MIN_ROUNDS
    max_rounds: int = MAX_ROUNDS
    floors: Mapping[str, float] | tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        if not _real(self.precision) or not 0 < self.precision < 1:
            raise ConfigError("PRECISION", self.precision, "a relative half-width between 0 and 1 (0.05: ±5 %)")
        if not _real(self.cap_s) or not 0 < self.cap_s < math.inf:
            raise ConfigError("CAP_S", self.cap_s, "a time cap in seconds > 0")
        if not _integer(self.max_rounds) or not 2 <= self.max_rounds <= MAX_REPEATS:
            raise ConfigError("MAX_ROUNDS", self.max_rounds, f"an integer from 2 to {MAX_REPEATS:,}")
        if not _integer(self.min_rounds) or not 2 <= self.min_rounds <= self.max_rounds:
            raise ConfigError("MIN_ROUNDS", self.min_rounds, f"an integer from 2 to MAX_ROUNDS ({self.max_rounds})")
        try:
            pairs = tuple(sorted(dict(self.floors).items()))
        except (TypeError, ValueError):  # not a mapping, nor pairs
            pairs = None
        if pairs is None or not all(isinstance(k, str) and _real(v) and 0 < v < math.inf for k, v in pairs):
            raise ConfigError("FLOORS", self.floors, "headline or quantity names mapped to absolute half-widths > 0")
        object.__setattr__(self, "floors", pairs)

    def floor(self, headline: str) -> float:
        """The absolute floor of ``headline`` (its own, else its quantity's), or NaN when it has none."""
        floors = dict(self.floors)
        quantity = headline.split("[", 1)[0]
        return float(floors.get(headline, floors.get(quantity, floors.get(quantity + "[", math.nan))))


def _real(value: object) -> bool:
    """Whether ``value`` is a number that is not NaN (a bool is not one)."""
    return isinstance(value, Real) and not isinstance(value, bool) and not math.isnan(value)


def _integer(value: object) -> bool:
    """Whether ``value`` is an integer (Python's or numpy's; a bool is not one)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def interval(values, confidence: float = CONFIDENCE, *, adaptive: bool = True) -> tuple[float, float, float]:
    """The estimate of one headline from its rounds' values, and its interval: mean ± t·s/√n.

    Non-finite values (a round that said nothing for the headline) are left out.

    Parameters
    ----------
    values : sequence of float
        One value per round.
    confidence : float
        The interval's confidence level, 0 < c < 1.
    adaptive : bool
        True (the default, what :class:`Rounds` uses): the count of rounds was chosen by looking
        at them, and the quantile is taken at α / :data:`ALPHA_DIVISOR` (module docstring). False:
        the plain t interval of a count fixed in advance.

    Returns
    -------
    tuple of float
        ``(estimate, low, high)``; the bounds are NaN with fewer than two values, the estimate
        too with none.

    Examples
    --------
    >>> est, low, high = interval([10.0, 11.0, 9.0, 10.5, 9.5], adaptive=False)
    >>> est, round(low, 2), round(high, 2)
    (10.0, 9.02, 10.98)
    >>> round(interval([10.0, 11.0, 9.0, 10.5, 9.5, float("nan")])[2], 2)  # t₄ at 0.995, not 0.975
    11.63
    """
    if not _real(confidence) or not 0 < confidence < 1:
        raise ConfigError("confidence", confidence, "a level between 0 and 1 (0.95)")
    x = np.asarray(values, float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n < 2:
        return (float(x[0]) if n else math.nan), math.nan, math.nan
    mean = float(x.mean())
    half = _quantile(n - 1, (1 - confidence) / (ALPHA_DIVISOR if adaptive else 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


@functools.lru_cache(maxsize=4096)
def _quantile(df: int, alpha: float) -> float:
    """The two-sided t quantile (cached: :class:`Rounds` asks it for every headline after every round)."""
    from scipy import stats  # 0.6 s: not on the way of every command that only finds the notebooks

    return float(stats.t.ppf(1 - alpha / 2, df))


class Rounds:
    """Decides, round after round, whether a workload must measure another round, and records why it stopped.

    Parameters
    ----------
    target : Target
        The precision asked, the cap and the round bounds.
    clock : callable
        Returns the time in nanoseconds; default the lab's clock (:func:`ingestlab.timing.now_ns`).
        The cap counts from the construction.
    adaptive : bool
        False: stop on the plain t interval (:func:`interval`), which undercovers; kept for
        :func:`simulate`'s comparison.

    Notes
    -----
    A workload's loop, with its progress bar's total from the stopping rule::

        rounds = precision.Rounds(precision.Target(PRECISION, CAP_S))
        with progress.bar(total=rounds.expected_rounds(), desc="rounds", unit="round") as bar:
            while rounds.more():
                rounds.add(one_round())          # {headline: that round's value}
                bar.total = rounds.expected_rounds()
                bar.update(1)
        rounds.table()                           # written as precision.csv
        precision.describe(rounds.table())       # what stopped why, for the notebook

    Examples
    --------
    >>> rounds = Rounds(Target(0.05, 600, min_rounds=3))
    >>> while rounds.more():
    ...     rounds.add({"overhead_ms[sync_on]": 1.0 + 0.01 * (-1) ** rounds.rounds_done})
    >>> rounds.rounds_done, rounds.table()["stopped"].tolist()  # 3 rounds: ±6.6 % (t₂ at 0.995 is 9.9)
    (4, ['reached'])
    """

    def __init__(self, target: Target, *, clock: Callable[[], int] = timing.now_ns, adaptive: bool = True):
        if not isinstance(target, Target):
            raise ConfigError("target", target, "a precision.Target")
        self.target = target
        self.adaptive = adaptive
        self._clock = clock
        self._started_ns = clock()
        self._last_ns = self._started_ns
        self._values: dict[str, list[float]] = {}
        #: Rounds added so far.
        self.rounds_done = 0

    def add(self, values: Mapping[str, float]) -> None:
        """Record one round: its value for each headline (NaN, ±inf, None or a headline left out: the round says nothing for it)."""
        if not isinstance(values, Mapping) or not all(isinstance(k, str) and (v is None or isinstance(v, Real))
                                                      and not isinstance(v, bool) for k, v in values.items()):
            raise ConfigError("values", values, "a mapping of headline names to one number each (NaN: no value)")
        self._last_ns = self._clock()
        for name in values.keys() - self._values.keys():
            self._values[name] = [math.nan] * self.rounds_done
        for name, column in self._values.items():
            value = values.get(name)
            column.append(math.nan if value is None else float(value))
        self.rounds_done += 1

    def more(self) -> bool:
        """True while another round is needed: fewer than the minimum, a headline short of its target, within the bounds."""
        return self._reason() is None

    def elapsed_s(self) -> float:
        """Seconds since the rounds began, on the clock."""
        return (self._clock() - self._started_ns) / 1e9

    def expected_rounds(self) -> int:
        """The rounds this run will likely take in all (a progress bar's total), from the stopping rule at the current scatter.

        Each headline short of its target needs ``n = (t·s / (r·|x̄|))²`` rounds with a value (or
        ``(t·s / floor)²``, if fewer), scaled up by its share of rounds without one; the most
        any needs, within the minimum, the ceiling and what fits in the cap's remaining time.
        """
        if self._reason() is not None:
            return self.rounds_done
        t = self.target
        need = t.min_rounds
        for name, state in self._states().items():
            if state["reached"] or not state["blocking"]:
                continue
            n = state["rounds"]
            if n < 2:
                need = max(need, self.rounds_done + 1)
                continue
            # half = t·s/√n now, so N values give about half·√(n/N): N = n·(half / width)²
            width = max(t.precision * abs(state["estimate"]), np.nan_to_num(state["floor"]))
            values_needed = n * (state["half_abs"] / width) ** 2 if width > 0 else math.inf
            need = max(need, math.ceil(min(values_needed * self.rounds_done / n, t.max_rounds)))
        per_round = self._per_round_s()
        if per_round > 0:
            need = min(need, self.rounds_done + int((t.cap_s - self.elapsed_s()) // per_round))
        return int(min(max(need, self.rounds_done + 1), t.max_rounds))

    def table(self) -> pd.DataFrame:
        """One row per headline: its estimate and interval, the precision reached and asked, and what stopped it.

        Returns
        -------
        pandas.DataFrame
            ``headline, rounds`` (rounds that gave it a value), ``estimate, ci_low, ci_high,
            half_width`` (relative to ``|estimate|``), ``precision, floor`` (NaN: none),
            ``stopped`` (one of :data:`STOPPED`), ``note``, and the run's ``run_rounds, elapsed_s,
            cap_s, max_rounds``.
        """
        reason = self._reason() or "running"
        rows = []
        for name, s in self._states().items():
            if s["reached"]:
                stopped = "reached"
            elif s["rounds"] == 0 and not s["blocking"]:
                stopped = "unmeasured"
            else:
                stopped = reason
            rows.append({"headline": name, "rounds": s["rounds"], "estimate": s["estimate"], "ci_low": s["ci_low"],
                         "ci_high": s["ci_high"], "half_width": s["half_width"], "precision": self.target.precision,
                         "floor": s["floor"], "stopped": stopped, "note": self._note(name, s),
                         "run_rounds": self.rounds_done, "elapsed_s": self.elapsed_s(), "cap_s": self.target.cap_s,
                         "max_rounds": self.target.max_rounds})
        return pd.DataFrame(rows, columns=["headline", "rounds", "estimate", "ci_low", "ci_high", "half_width",
                                           "precision", "floor", "stopped", "note", "run_rounds", "elapsed_s",
                                           "cap_s", "max_rounds"])

    def _states(self) -> dict[str, dict]:
        """Each headline's interval now, whether it reached its target and whether it holds the run back."""
        t, states = self.target, {}
        for name, column in self._values.items():
            est, low, high = interval(column, adaptive=self.adaptive)
            n = int(np.isfinite(column).sum())
            half = (high - low) / 2
            relative = half / abs(est) if est != 0 else math.inf
            floor = t.floor(name)
            reached = n >= t.min_rounds and (relative <= t.precision or half <= floor)
            states[name] = {"rounds": n, "estimate": est, "ci_low": low, "ci_high": high, "half_width": relative,
                            "half_abs": half, "floor": floor, "reached": reached,
                            # a headline no round gave a value does not hold the run back once the minimum is done
                            "blocking": n > 0 or self.rounds_done < t.min_rounds}
        return states

    def _reason(self) -> str | None:
        """Why the run stops now ("reached", "max_rounds", "cap"), or None while it goes on."""
        t, states = self.target, self._states()
        # without any headline, the minimum of rounds is all there is to measure
        if self.rounds_done >= t.min_rounds and all(s["reached"] or not s["blocking"] for s in states.values()):
            return "reached"
        if self.rounds_done >= t.max_rounds:
            return "max_rounds"
        if self.rounds_done and self.elapsed_s() + self._per_round_s() > t.cap_s:
            return "cap"
        return None

    def _per_round_s(self) -> float:
        """The rounds' mean duration so far in seconds (0 before the first)."""
        return (self._last_ns - self._started_ns) / 1e9 / self.rounds_done if self.rounds_done else 0.0

    def _note(self, name: str, s: dict) -> str:
        """Why a headline is where it is, in words, when the table's numbers do not say it alone."""
        notes = []
        missing = self.rounds_done - s["rounds"]
        if s["rounds"] == 0:
            return "no round gave a value"
        if missing:
            notes.append(f"{missing} of {self.rounds_done} rounds gave no value")
        if s["rounds"] < 2:
            notes.append("fewer than 2 values: no interval")
        elif s["reached"] and s["half_width"] > self.target.precision:
            notes.append(f"reached its absolute floor ±{s['floor']:g} (±{_percent(s['half_width'])} of an estimate "
                         f"near zero)")
        elif not s["reached"] and s["ci_low"] <= 0 <= s["ci_high"]:
            notes.append("its interval takes in 0: no relative precision is reachable near zero; give it an "
                         "absolute floor (Target.floors)")
        return "; ".join(notes)


class Fixed(Rounds):
    """Exactly ``count`` rounds, whatever precision they reach (a run without ``PRECISION``).

    The table reports each headline's plain t interval over its rounds (no stopping rule
    chose the count, so none is corrected for), with ``stopped`` = ``fixed`` and ``precision``
    NaN: what the rounds reached, not what was asked.

    Examples
    --------
    >>> rounds = Fixed(3)
    >>> while rounds.more():
    ...     rounds.add({"overhead_ms[sync_on]": 1.0 + 0.01 * rounds.rounds_done})
    >>> rounds.rounds_done, rounds.table()["stopped"].tolist(), describe(rounds.table())[0][:29]
    (3, ['fixed'], 'A fixed count of 3 rounds (no')
    """

    def __init__(self, count: int, *, clock: Callable[[], int] = timing.now_ns):
        if not _integer(count) or not 1 <= count <= MAX_REPEATS:
            raise ConfigError("REPEATS", count, f"an integer from 1 to {MAX_REPEATS:,}")
        super().__init__(Target(0.5, 1e12, min_rounds=2, max_rounds=max(2, count)),
                         clock=clock, adaptive=False)
        self.count = count

    def _reason(self) -> str | None:
        return "fixed" if self.rounds_done >= self.count else None

    def expected_rounds(self) -> int:
        return self.count

    def table(self) -> pd.DataFrame:
        table = super().table()
        return table.assign(stopped=table["stopped"].where(table["stopped"] == "unmeasured", self._reason() or "running"),
                            precision=math.nan, cap_s=math.nan)


def describe(table: pd.DataFrame) -> list[str]:
    """Sentences saying what stopped why, from :meth:`Rounds.table`: the headlines that reached, then each that did not.

    Examples
    --------
    >>> table = pd.DataFrame({"headline": ["a", "b", "overhead_ms[mariadb flush_0]"], "rounds": [7, 7, 7],
    ...     "half_width": [0.03, 0.04, 0.083], "precision": 0.05, "stopped": ["reached", "reached", "cap"],
    ...     "note": "", "run_rounds": 7, "cap_s": 600.0, "max_rounds": 200})
    >>> describe(table)
    ['2 of 3 headlines reached ±5 % in 7 rounds.', 'overhead_ms[mariadb flush_0] hit the 10-minute cap at ±8.3 %.']
    """
    if table.empty:
        return ["No headline was measured."]
    first = table.iloc[0]
    if table["stopped"].eq("fixed").any():
        widths = table["half_width"][np.isfinite(table["half_width"])]
        rounds = int(first["run_rounds"])
        line = f"A fixed count of {rounds} rounds (no PRECISION asked): "
        if widths.empty:
            return [line + "no headline has an interval (fewer than 2 rounds)."]
        widest = table.loc[widths.idxmax()]
        return [line + f"the headlines' 95 % intervals reached ±{_percent(widths.min())} to "
                f"±{_percent(widths.max())} ({widest['headline']} the widest); PRECISION measures until each is "
                "as narrow as asked."]
    reached = table["stopped"].eq("reached")
    head = ("The headline" if len(table) == 1 else f"All {len(table)} headlines") if reached.all() else \
        f"{int(reached.sum())} of {len(table)} headline{'s' if len(table) > 1 else ''}"
    rounds = int(first["run_rounds"])
    lines = [f"{head} reached ±{_percent(first['precision'])} in {rounds} round{'s' if rounds != 1 else ''}."]
    for r in table[~reached].itertuples():
        width = f"±{_percent(r.half_width)}" if np.isfinite(r.half_width) else "no width yet"
        where = {"cap": f"hit the {_duration(r.cap_s)} cap at {width}",
                 "max_rounds": f"hit the ceiling of {int(r.max_rounds)} rounds at {width}",
                 "unmeasured": "was never measured",
                 "running": f"is at {width} after {int(r.rounds)} rounds (still measuring)"}[r.stopped]
        note = f" ({r.note})" if isinstance(r.note, str) and r.note and r.stopped != "unmeasured" else ""
        lines.append(f"{r.headline} {where}{note}.")
    return lines


def _percent(fraction: float) -> str:
    """``0.083`` → ``"8.3 %"``; whole percents without a decimal (``0.05`` → ``"5 %"``)."""
    value = round(100 * fraction, 9)  # 0.07 · 100 is 7.000000000000001
    return f"{value:.0f} %" if float(value).is_integer() or value >= 100 else f"{value:.1f} %"


def _duration(seconds: float) -> str:
    """A cap in words as an adjective: ``600`` → ``"10-minute"``, ``90`` → ``"90-second"``, ``10800`` → ``"3-hour"``."""
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= size and (seconds / size).is_integer() or seconds >= 2 * size:
            return f"{round(seconds / size, 1):g}-{unit}"
    return f"{seconds:g}-second"


def simulate(draw: Callable[[np.random.Generator, tuple[int, int]], np.ndarray], true_value: float, target: Target,
             *, trials: int = 200, seed: int = 0, adaptive: bool = True) -> pd.DataFrame:
    """Run :class:`Rounds` on simulated rounds, trial after trial, and say whether each interval took in the truth.

    Parameters
    ----------
    draw : callable
        ``draw(rng, (trials, rounds))``: every trial's round values at once (a trial uses as
        many as it needs, in order).
    true_value : float
        What the round values' mean estimates.
    target : Target
        The rule's target; its cap never hits (the clock stands still).
    trials, seed : int
        How many trials; the seed of their generator.
    adaptive : bool
        False: the naive rule (plain t interval), to compare.

    Returns
    -------
    pandas.DataFrame
        One row per trial: ``trial, rounds, estimate, ci_low, ci_high, covered, stopped``.

    Examples
    --------
    >>> draw = lambda rng, shape: 1 + 0.05 * rng.standard_t(3, shape)
    >>> runs = simulate(draw, 1.0, Target(0.05, 60), trials=50)
    >>> bool(runs["covered"].mean() >= 0.9), bool(runs["rounds"].between(5, 200).all())
    (True, True)
    """
    values = np.asarray(draw(np.random.default_rng(seed), (trials, target.max_rounds)), float)
    rows = []
    for trial, series in enumerate(values):
        rounds = Rounds(target, clock=lambda: 0, adaptive=adaptive)
        while rounds.more():
            rounds.add({"value": series[rounds.rounds_done]})
        row = rounds.table().iloc[0]
        rows.append({"trial": trial, "rounds": rounds.rounds_done, "estimate": row["estimate"],
                     "ci_low": row["ci_low"], "ci_high": row["ci_high"],
                     "covered": bool(row["ci_low"] <= true_value <= row["ci_high"]), "stopped": row["stopped"]})
    return pd.DataFrame(rows)
