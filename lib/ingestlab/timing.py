"""The lab's one clock: every timed region, per-statement samples (all kept, warm-up flagged), latency summaries.

Nothing else in the package reads ``time.perf_counter``: adapters return what the server
reports, and the workloads time the client's side through this module (ClickBench's driver
owns the clock the same way; its systems never time themselves).
"""

from __future__ import annotations

import dataclasses
import gc
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

if TYPE_CHECKING:  # pandas is imported where a frame is built, so a measuring child process can use the
    import pandas as pd  # clock without paying pandas' import and memory

#: Columns of a samples frame, in order.
SAMPLE_COLUMNS = ["statement_no", "warmup", "rows", "bytes", "elapsed_s", "started_ns"]


#: What :func:`anatomy frames <ingestlab.anatomy.frame>` name the client clock's source.
CLOCK = "client perf_counter_ns"


def now_ns() -> int:
    """The clock's current reading in nanoseconds (monotonic; only differences mean anything)."""
    return time.perf_counter_ns()


def cpu_ns() -> int:
    """CPU time (user + system) this process has used, in nanoseconds: what the client itself costs.

    Examples
    --------
    >>> cpu_ns() >= 0
    True
    """
    return time.process_time_ns()


def sleep_until(deadline_ns: int) -> None:
    """Sleep until the clock reads ``deadline_ns`` (returns at once when it already has)."""
    left = deadline_ns - time.perf_counter_ns()
    if left > 0:
        time.sleep(left / 1e9)


def time_call(fn: Callable[..., Any], *args: Any) -> tuple[int, int]:
    """Call ``fn(*args)``; return ``(start_ns, elapsed_ns)`` from the lab's clock."""
    t0 = time.perf_counter_ns()
    fn(*args)
    return t0, time.perf_counter_ns() - t0


@dataclasses.dataclass(frozen=True)
class Timed:
    """What :func:`timed` returns: the call's result and when and how long it ran."""

    result: Any
    started_ns: int
    elapsed_ns: int

    @property
    def ms(self) -> float:
        """The elapsed time in milliseconds."""
        return self.elapsed_ns / 1e6


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Timed:
    """Call ``fn(*args, **kwargs)`` on the lab's clock; return its result with the time it took.

    Examples
    --------
    >>> t = timed(sum, [1, 2])
    >>> t.result, t.elapsed_ns >= 0
    (3, True)
    """
    t0 = time.perf_counter_ns()
    result = fn(*args, **kwargs)
    return Timed(result, t0, time.perf_counter_ns() - t0)


class Stopwatch:
    """A span on the lab's clock, for a step that is not one call (a load with its progress bar).

    Examples
    --------
    >>> with Stopwatch() as sw:
    ...     _ = sum(range(10))
    >>> sw.seconds >= 0
    True
    """

    def __init__(self) -> None:
        self.started_ns = 0
        self.elapsed_ns = 0

    def __enter__(self) -> "Stopwatch":
        self.started_ns = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.elapsed_ns = time.perf_counter_ns() - self.started_ns

    @property
    def seconds(self) -> float:
        """The span in seconds (0 until the block ends)."""
        return self.elapsed_ns / 1e9


def time_statements(
    execute: Callable[[Any], Any],
    statements: Sequence[Any],
    *,
    rows: Sequence[int],
    bytes_: Sequence[int],
    warmup: int = 0,
    progress: Callable[[int], Any] | None = None,
    driver: str | None = None,
) -> pd.DataFrame:
    """Time ``execute(statement)`` once per statement, in order; keep every sample.

    The clock is the client's ``perf_counter_ns`` around the whole call, so with an
    autocommit connection each sample includes the round trip and the commit. The loop
    between two readings does nothing else: the readings go into a list allocated
    beforehand, the garbage collector is paused (and restored), and anything that can be
    prepared is prepared by the caller (:meth:`ingestlab.engines.base.Engine.statement_call`
    renders a statement before the clock; ``execute`` then only calls it).

    Parameters
    ----------
    execute : callable
        Runs one statement (e.g. ``lambda p: engine.execute(sql, p)``).
    statements : sequence
        What ``execute`` receives, one item per statement; the first ``warmup`` are warm-up.
    rows, bytes_ : sequence of int
        Rows and payload bytes each statement carries (same length as ``statements``).
    warmup : int
        How many leading statements are warm-up (kept, flagged ``warmup=True``).
    progress : callable, optional
        Called with 1 after each statement, outside its time (e.g. a tqdm bar's ``update``).
    driver : str, optional
        The driver that sent the statements (``Engine.driver``), recorded as a ``driver`` column.

    Returns
    -------
    pandas.DataFrame
        One row per statement with :data:`SAMPLE_COLUMNS` (and ``driver`` when given);
        ``statement_no`` counts the measured statements from 0, warm-up ones are negative.

    Examples
    --------
    >>> frame = time_statements(lambda s: None, [1, 2, 3], rows=[1, 1, 1], bytes_=[8, 8, 8], warmup=1)
    >>> frame[["statement_no", "warmup"]].values.tolist()
    [[-1, True], [0, False], [1, False]]
    """
    if not (len(statements) == len(rows) == len(bytes_)):
        raise ValueError("statements, rows and bytes_ must have the same length")
    n = len(statements)
    stamps = [0] * (2 * n + 1)  # allocated before the clock; the loop only stores into it
    clock = time.perf_counter_ns
    gc_was_on = gc.isenabled()
    gc.disable()  # a collection lands inside some statement's time, not the server's (timeit does the same)
    try:
        i = 0
        for statement in statements:
            stamps[i] = clock()
            execute(statement)
            stamps[i + 1] = clock()
            i += 2
            if progress is not None:
                progress(1)
    finally:
        if gc_was_on:
            gc.enable()
    started = stamps[0:2 * n:2]
    import pandas as pd

    frame = pd.DataFrame({
        "statement_no": [i - warmup for i in range(n)],
        "warmup": [i < warmup for i in range(n)],
        "rows": list(rows),
        "bytes": list(bytes_),
        "elapsed_s": [(e - b) / 1e9 for b, e in zip(started, stamps[1:2 * n:2])],
        "started_ns": started,
    })
    return frame if driver is None else frame.assign(driver=driver)


#: Slots of a stamp buffer (:func:`stamp_statements`) before the statements: the count, the first statement's number.
STAMP_HEADER = 2
#: Slots per statement in a stamp buffer: intended start, start, end (clock readings, ns).
STAMP_WIDTH = 3


def stamp_statements(send: Callable[[Any], Any], texts: Iterator[Any], stamps, until_ns: int, *,
                     first_ns: int = 0, interval_ns: int = 0) -> bool:
    """Send ``next(texts)`` with ``send`` until the clock reads ``until_ns`` or ``stamps`` is full.

    The loop of a concurrent client (:mod:`ingestlab.concurrency`): per statement it takes
    the next text, reads the clock, sends, reads the clock again and stores the readings into
    ``stamps``, a buffer allocated before (shared with the parent process, so a client that is
    killed leaves what it measured). Nothing else happens between two statements: no
    per-statement object is kept, nothing is sent to the parent, the garbage collector is paused.

    Parameters
    ----------
    send : callable
        Sends one statement text and reads the reply (``Engine.text_sender``); raises on error.
    texts : iterator
        The statement texts, one per statement (each built before its clock starts).
    stamps : writable int64 buffer
        ``[count, first statement number, (intended, started, ended) × capacity]``
        (:data:`STAMP_HEADER`, :data:`STAMP_WIDTH`); statements go after the ``count`` already
        there, and ``count`` is updated after each one.
    until_ns : int
        No statement starts (closed loop) or is scheduled (open loop) at or after this reading.
    first_ns, interval_ns : int
        Open loop (``interval_ns`` > 0): statement ``k`` (counted from the buffer's first
        statement number) is intended for ``first_ns + k × interval_ns`` and waits for it.
        Closed loop (0): a statement starts when the previous one returns; intended = started.

    Returns
    -------
    bool
        True when the time is up, False when ``stamps`` is full (the caller empties it and calls again).

    Examples
    --------
    >>> from array import array
    >>> stamps = array("q", [0] * (STAMP_HEADER + STAMP_WIDTH * 2))
    >>> stamp_statements(len, iter([b"a", b"b", b"c"]), stamps, now_ns() + 10**9)
    False
    >>> stamps[0], stamps[3] <= stamps[4]
    (2, True)
    """
    clock = time.perf_counter_ns
    n = stamps[0]
    k = stamps[1] + n
    capacity = (len(stamps) - STAMP_HEADER) // STAMP_WIDTH
    i = STAMP_HEADER + STAMP_WIDTH * n
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        while n < capacity:
            if interval_ns:
                intended = first_ns + k * interval_ns
                if intended >= until_ns:
                    return True
                sleep_until(intended)
                text = next(texts)
                started = clock()
            else:
                text = next(texts)
                started = intended = clock()
                if started >= until_ns:
                    return True
            send(text)
            stamps[i + 2] = clock()
            stamps[i] = intended
            stamps[i + 1] = started
            i += STAMP_WIDTH
            n += 1
            k += 1
            stamps[0] = n
        return False
    finally:
        if gc_was_on:
            gc.enable()


def latency_summary(samples: pd.DataFrame, by: Iterable[str] = ("engine", "variant", "scenario")) -> pd.DataFrame:
    """Per-statement latency summary of measured (non-warm-up) samples.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``n``, ``median_ms``, ``p95_ms``, ``p99_ms``, ``mean_ms``,
        ``min_ms``, ``max_ms``, ``warmup_n`` (warm-up samples excluded, counted).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"scenario": ["a"] * 4, "warmup": [True, False, False, False],
    ...                    "elapsed_s": [9.0, 0.001, 0.002, 0.003]})
    >>> latency_summary(df, by=["scenario"])[["n", "median_ms", "warmup_n"]].values.tolist()
    [[3.0, 2.0, 1.0]]
    """
    by = [c for c in by if c in samples.columns]
    ms = samples.assign(ms=samples["elapsed_s"] * 1e3)
    measured = ms[~ms["warmup"]]
    grouped = measured.groupby(by, sort=False)["ms"]
    import pandas as pd

    out = pd.DataFrame({
        "n": grouped.size(),
        "median_ms": grouped.median(),
        "p95_ms": grouped.quantile(0.95),
        "p99_ms": grouped.quantile(0.99),
        "mean_ms": grouped.mean(),
        "min_ms": grouped.min(),
        "max_ms": grouped.max(),
    })
    out["warmup_n"] = ms[ms["warmup"]].groupby(by, sort=False).size().reindex(out.index).fillna(0)
    return out.astype(float).reset_index()


def measured_ms(samples: pd.DataFrame) -> pd.DataFrame:
    """The measured (non-warm-up) samples with their time in milliseconds as ``elapsed_ms``.

    Examples
    --------
    >>> import pandas as pd
    >>> measured_ms(pd.DataFrame({"warmup": [True, False], "elapsed_s": [1.0, 0.002]}))["elapsed_ms"].tolist()
    [2.0]
    """
    measured = samples[~samples["warmup"]]
    return measured.assign(elapsed_ms=measured["elapsed_s"] * 1e3)
