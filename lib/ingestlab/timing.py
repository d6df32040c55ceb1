"""The lab's one clock: every timed region, per-statement samples (all kept, warm-up flagged), latency summaries.

Nothing else in the package reads ``time.perf_counter``: adapters return what the server
reports, and the workloads time the client's side through this module (ClickBench's driver
owns the clock the same way; its systems never time themselves).

Statements an engine can hand to its C client library (:class:`NativeCall`, from
``Engine.statement_call``; :class:`NativeSender`, from ``Engine._native_sender``) are timed by
the module's C half, ``_timing.c`` (built with the package): the loop pgbench and
mariadb-slap run -- clock, send, read the reply, clock -- with no interpreter in it, on the
same clock (``CLOCK_MONOTONIC``, what ``perf_counter_ns`` reads on Linux). Where it could
not be built, the same loops run in Python; every sample says which (``timer``).
"""

from __future__ import annotations

import dataclasses
import gc
import re
import time
from array import array
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

if TYPE_CHECKING:  # pandas is imported where a frame is built, so a measuring child process can use the
    import pandas as pd  # clock without paying pandas' import and memory

try:  # the C half (``_timing.c``): the per-statement loops with the GIL released
    from ingestlab import _timing as _c
except ImportError:  # built without a C compiler: the same loops run in Python
    _c = None

#: Columns of a samples frame, in order.
SAMPLE_COLUMNS = ["statement_no", "warmup", "rows", "bytes", "elapsed_s", "started_ns"]

#: Which loop times statements sent through a :class:`NativeSender`: ``"c"`` (``ingestlab._timing``,
#: built with the package) or ``"python"`` (no C compiler at install). Samples say which (``timer``).
TIMER = "c" if _c is not None else "python"
#: Statements per call into the C loop at most: between two calls (outside every statement's time)
#: the loop takes Ctrl-C and SIGTERM and moves the progress bar.
C_CHUNK = 256
#: Seconds a call into the C loop should last at most: the next call takes as many statements as
#: fitted in this time in the last one (256 synchronous commits took 0.8 s here, and a SIGTERM waited).
C_CHUNK_S = 0.1


#: What :func:`anatomy frames <ingestlab.anatomy.frame>` name the client clock's source.
CLOCK = "client perf_counter_ns"


def now_ns() -> int:
    """The clock's current reading in nanoseconds (monotonic; only differences mean anything)."""
    return time.perf_counter_ns()


def cpu_ns(*, thread: bool = False) -> int:
    """CPU time (user + system) used so far, in nanoseconds: what the client itself costs.

    Parameters
    ----------
    thread : bool
        Only the calling thread's (one client among threads); default: the whole process's.

    Examples
    --------
    >>> 0 <= cpu_ns(thread=True) <= cpu_ns()
    True
    """
    return time.thread_time_ns() if thread else time.process_time_ns()


def sleep_until(deadline_ns: int) -> None:
    """Sleep until the clock reads ``deadline_ns`` (returns at once when it already has)."""
    left = deadline_ns - time.perf_counter_ns()
    if left > 0:
        time.sleep(left / 1e9)


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
    if isinstance(fn, NativeCall) and _c is not None and not args and not kwargs:
        return fn.timed()  # clocked inside the C loop, around the send alone
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
    return _frame(stamps, n, rows, bytes_, warmup, driver)


class NativeSender:
    """A connection's own C send call, for the C loops: what the engines' C load tools call per statement.

    Built by :meth:`ingestlab.engines.base.Engine._native_sender` from the driver that opened
    the connection (so the client library that owns the connection is the one called).

    Parameters
    ----------
    kind : str
        ``"libpq"`` (``PQexec``, ``PQresultStatus``, ``PQclear``) or ``"libmysql"``
        (``mysql_real_query``, ``mysql_field_count``, ``mysql_store_result``, ``mysql_free_result``).
    connection : int
        The address of the library's connection (``PGconn *``, ``MYSQL *``).
    functions : sequence of int
        The addresses of the functions ``kind`` names, in that order.
    error : callable
        Returns the connection's last error message (the server's, after a refused statement).
    owner : object
        What the addresses belong to (the driver's connection), kept alive with the sender.
    alive : callable, optional
        Whether ``connection`` is still the driver's open connection; checked before every
        loop, so a call built before its connection was closed (a server restart, say) raises
        instead of handing the C loop a freed pointer.
    """

    KINDS = {"libpq": (1, 3), "libmysql": (2, 4)}  # kind → (the C module's number, how many functions)

    def __init__(self, kind: str, connection: int, functions: Sequence[int], error: Callable[[], str],
                 owner: Any = None, alive: Callable[[], bool] | None = None):
        number, count = self.KINDS[kind]
        if not connection or len(functions) != count or not all(functions):
            raise ValueError(f"a {kind} sender needs a connection and {count} function addresses")
        self.kind, self.error, self.owner, self.alive = kind, error, owner, alive
        self.spec = (number, int(connection), *map(int, functions))

    def checked(self) -> tuple:
        """:attr:`spec`, once the connection is known to be open (else :class:`~ingestlab.errors.ConnectionClosedError`)."""
        if self.alive is not None and not self.alive():
            from ingestlab.errors import ConnectionClosedError

            raise ConnectionClosedError(f"the {self.kind} connection this statement was built for is closed "
                                        "(build statements after apply_settings or a restart)")
        return self.spec

    def failed(self, name: str):
        """The error to raise for a statement the server refused, with its message."""
        from ingestlab.errors import ServerError

        return ServerError(f"{name}: {self.error()}")


class NativeCall:
    """One finished statement text for a :class:`NativeSender`; calling it sends it once.

    What :meth:`ingestlab.engines.base.Engine.statement_call` returns where the connection
    has a C send call. :func:`time_calls` and :func:`timed` time it in the C loop (when built);
    called directly, or without the C half, it runs ``fallback`` (the same send, from Python).
    """

    __slots__ = ("sender", "text", "fallback", "name")

    def __init__(self, sender: NativeSender, text: bytes, fallback: Callable[[], Any], name: str):
        self.sender, self.text, self.fallback, self.name = sender, text, fallback, name

    def __call__(self) -> None:
        if _c is None:
            self.fallback()
        else:
            self.timed()

    def timed(self) -> "Timed":
        """Send it once, timed by the C loop; raises the server's error."""
        stamps = array("q", [0, 0])
        if _c.time_texts(self.sender.checked(), (self.text,), stamps) != 1:
            raise self.sender.failed(self.name)
        return Timed(None, stamps[0], stamps[1] - stamps[0])


def time_calls(calls: Sequence[Callable[[], Any]], *, rows: Sequence[int], bytes_: Sequence[int], warmup: int = 0,
               progress: Callable[[int], Any] | None = None, driver: str | None = None) -> pd.DataFrame:
    """Time each of ``calls`` (built before the clock, e.g. by ``Engine.statement_call``) once, in order.

    :func:`time_statements` for calls with nothing left to prepare. When every call is a
    :class:`NativeCall` on one sender and the C half is built, the loop is C (``_timing.c``):
    clock, send, read, clock, with no interpreter between the readings or between two
    statements but every :data:`C_CHUNK`-th, or fewer so that a call lasts about
    :data:`C_CHUNK_S` (where the progress bar moves and Ctrl-C is taken). Otherwise each call is timed from Python. The frame has a ``timer`` column saying
    which (``"c"``, ``"python"``), besides :func:`time_statements`' columns.

    Examples
    --------
    >>> frame = time_calls([lambda: None] * 2, rows=[1, 1], bytes_=[8, 8])
    >>> frame[["statement_no", "timer"]].values.tolist()
    [[0, 'python'], [1, 'python']]
    """
    senders = {c.sender.spec for c in calls if isinstance(c, NativeCall)}
    if _c is None or len(senders) != 1 or not all(isinstance(c, NativeCall) for c in calls):
        return time_statements(_call, calls, rows=rows, bytes_=bytes_, warmup=warmup, progress=progress,
                               driver=driver).assign(timer="python")
    if not (len(calls) == len(rows) == len(bytes_)):
        raise ValueError("calls, rows and bytes_ must have the same length")
    n, sender = len(calls), calls[0].sender
    stamps = array("q", bytes(16 * n))
    view = memoryview(stamps)
    lo, size = 0, C_CHUNK
    while lo < n:
        chunk = calls[lo:lo + size]
        done = _c.time_texts(sender.checked(), [c.text for c in chunk], view[2 * lo:2 * (lo + len(chunk))])
        if done != len(chunk):
            raise sender.failed(chunk[done].name)
        if progress is not None:
            progress(len(chunk))
        took_ns = stamps[2 * (lo + len(chunk)) - 1] - stamps[2 * lo]
        lo += len(chunk)
        size = max(1, min(C_CHUNK, int(len(chunk) * C_CHUNK_S * 1e9 / max(took_ns, 1))))
    return _frame(stamps, n, rows, bytes_, warmup, driver).assign(timer="c")


def _call(call: Callable[[], Any]) -> Any:
    return call()


def _frame(stamps: Sequence[int], n: int, rows: Sequence[int], bytes_: Sequence[int], warmup: int,
           driver: str | None) -> pd.DataFrame:
    """The samples frame of ``n`` statements from ``[start, end] × n`` clock readings."""
    import pandas as pd

    started = stamps[0:2 * n:2]
    frame = pd.DataFrame({
        "statement_no": [i - warmup for i in range(n)],
        "warmup": [i < warmup for i in range(n)],
        "rows": list(rows),
        "bytes": list(bytes_),
        "elapsed_s": [(e - b) / 1e9 for b, e in zip(started, stamps[1:2 * n:2])],
        "started_ns": list(started),
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


def stamp_template(sender: NativeSender, template: bytes, first_id: int, stamps, until_ns: int, *,
                   first_ns: int = 0, interval_ns: int = 0) -> bool:
    """:func:`stamp_statements` in C (``_timing.c``), the texts made from ``template`` there too.

    Statement ``k`` of the client (``stamps[1] + stamps[0]``, counted over its life) is
    ``template % ids`` with ids ``first_id + k·m + j`` (``m`` = the ``%d`` in ``template``;
    ``%%`` is a literal ``%``), made before its clock starts. Same buffer, loops, return
    value as :func:`stamp_statements`; raises the server's error for a refused statement.
    Needs the C half (:data:`TIMER` ``== "c"``).
    """
    state = _c.stamp_template(sender.checked(), template_parts(template), first_id, stamps, until_ns, first_ns, interval_ns)
    if state < 0:
        raise sender.failed("statement")
    return bool(state)


def template_parts(template: bytes) -> list[bytes]:
    """``template``'s text around its ``%d`` marks, ``%%`` made ``%``.

    Examples
    --------
    >>> template_parts(b"VALUES (%d, '5%%'), (%d, 'x')")
    [b'VALUES (', b", '5%'), (", b", 'x')"]
    """
    parts, current = [], []
    for token in re.split(rb"(%%|%d)", template):
        if token == b"%d":
            parts.append(b"".join(current))
            current = []
        elif token == b"%%":
            current.append(b"%")
        elif b"%" in token:
            raise ValueError(f"template: a % that is neither %d nor %% in {token[:40]!r}")
        else:
            current.append(token)
    parts.append(b"".join(current))
    if len(parts) < 2:
        raise ValueError("template: no %d where an id goes")
    return parts


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
