"""Concurrent clients: one process per client, each on its own connection, timed on the lab's clock.

The driver of notebook 04 (and of ``bench/group_commit_fidelity.py``). Each client is a
separate process (``forkserver``: a fresh interpreter forked from a server that has already
imported the lab, so no client shares a GIL with another or with the parent), opens its own
connection with its engine's :meth:`~ingestlab.engines.base.Engine.connect` from the
arguments the parent's :meth:`~ingestlab.engines.base.Engine.connect_kwargs` gave (sent
through a pipe, never on a command line), waits for a common start time, writes ``R`` rows
per INSERT during a warm-up and then a fixed duration, and streams its samples back about
once a second, so a client that dies leaves what it measured.

Two loops, both labelled in the samples (``loop``):

* ``closed`` (default): each client sends its next statement when the last one returns.
  Latency = the statement's own time.
* ``open``: each client has a schedule, ``rate / clients`` statements per second, and the
  latency of a statement runs from its *intended* start, so time spent waiting behind a
  slow statement counts (the coordinated-omission correction of wrk2 and YCSB's
  ``measurement.interval=intended``).

Besides latencies, each client reports the CPU time it used per statement
(:func:`ingestlab.timing.cpu_ns`): a client busy for most of the wall clock would be the
bottleneck, not the engine.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import queue as queue_module
import signal
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from ingestlab import timing
from ingestlab.errors import ClientCrashError, ConfigError

#: Most clients the driver starts: the lab's PostgreSQL accepts 100 connections (its
#: default ``max_connections``), of which the lab's own measuring connection takes one.
MAX_CLIENTS = 96
#: The loops the driver runs (see the module docstring).
LOOPS = ("closed", "open")
#: Seconds a client may take to connect before the run is abandoned.
CONNECT_TIMEOUT_S = 60.0
#: Seconds past the planned end before the driver gives up waiting for a client.
GRACE_S = 60.0
#: Seconds between two batches of samples a client sends.
REPORT_EVERY_S = 1.0
#: Ids of client ``k`` start at ``k × ID_STRIDE`` (no two clients write the same id).
ID_STRIDE = 10**12
#: Columns of the samples frame, one row per statement.
SAMPLE_COLUMNS = ["client", "statement_no", "warmup", "rows", "bytes", "intended_ns", "started_ns", "elapsed_s",
                  "latency_s"]


@dataclasses.dataclass(frozen=True)
class ClientPlan:
    """What one client process does; sent to it through a pipe.

    Attributes
    ----------
    engine : str
        Registry name of the engine's adapter (``Engine.classes()`` key).
    connect_kwargs : dict
        The driver ``connect()`` arguments (from the parent's ``connect_kwargs()``).
    session_settings : dict
        Settings the client sets on its own session first (``engine.client_settings()``).
    sql : str
        The INSERT of ``rows_per_insert`` rows, with driver placeholders.
    row : tuple
        One row; the client writes copies of it with fresh ids in the first column.
    rows_per_insert, bytes_per_statement : int
        Rows and payload bytes of one statement.
    client : int
        This client's number (0…).
    warmup_s, duration_s : float
        Warm-up (kept, flagged) and measured seconds.
    loop : str
        ``closed`` or ``open``.
    rate_per_client : float or None
        Statements per second of this client's schedule (open loop).
    clients : int
        How many clients run (open-loop schedules are staggered by ``client / clients``).
    """

    engine: str
    connect_kwargs: dict
    session_settings: dict
    sql: str
    row: tuple
    rows_per_insert: int
    bytes_per_statement: int
    client: int
    warmup_s: float
    duration_s: float
    loop: str = "closed"
    rate_per_client: float | None = None
    clients: int = 1


def check_clients(value: Any, name: str = "CLIENTS") -> int:
    """``value`` as a client count from 1 to :data:`MAX_CLIENTS`, else :class:`ConfigError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_CLIENTS:
        raise ConfigError(name, value, f"an integer from 1 to {MAX_CLIENTS} (MAX_CLIENTS: the lab's PostgreSQL "
                                       "accepts 100 connections)")
    return int(value)


class ClientRun:
    """``clients`` processes writing into ``table`` at once; :meth:`run` drives them, the samples stay here.

    Parameters
    ----------
    engine : Engine
        A started engine; its ``connect_kwargs()`` and ``client_settings()`` go to the clients.
    table : str
        The table the clients write.
    columns : sequence of str
        Its columns; ``row`` gives one value per column, the first one the id.
    row : tuple
        The row every client writes (with fresh ids).
    clients, rows_per_insert : int
        Processes, and rows per INSERT.
    warmup_s, duration_s : float
        Warm-up (kept, flagged) and measured seconds.
    loop : str
        One of :data:`LOOPS`.
    rate : float, optional
        Open loop: statements per second of all clients together.
    on_start : callable, optional
        Called with the client processes' pids once all are connected (tests use it to kill one).

    After :meth:`run` (returned, raised or interrupted): :meth:`samples` holds every
    statement a client reported, :attr:`completed` says whether every client finished, and
    :attr:`cpu` the CPU each client used.
    """

    def __init__(self, engine, table: str, columns: Sequence[str], row: tuple, *, clients: int, rows_per_insert: int,
                 warmup_s: float, duration_s: float, loop: str = "closed", rate: float | None = None,
                 on_start: Callable[[list[int]], Any] | None = None):
        from ingestlab import datagen

        self.clients = check_clients(clients)
        if loop not in LOOPS:
            raise ConfigError("LOOP", loop, "one of " + ", ".join(LOOPS))
        if loop == "open" and not (isinstance(rate, (int, float)) and rate > 0):
            raise ConfigError("RATE", rate, "statements per second > 0 for the open loop")
        self.engine, self.on_start = engine, on_start
        self.rows_per_insert, self.warmup_s, self.duration_s, self.loop = rows_per_insert, warmup_s, duration_s, loop
        self.rate = float(rate) if loop == "open" else None
        self.sql = engine.insert_sql(table, list(columns), rows_per_insert)
        self.row = tuple(row)
        self.bytes_per_statement = datagen.row_bytes(self.row) * rows_per_insert
        self.completed = False
        self.start_ns: int | None = None
        self.cpu: dict[int, dict] = {}
        self.parent_cpu_ns = 0
        self._chunks: list[pd.DataFrame] = []

    def plans(self) -> list[ClientPlan]:
        """One :class:`ClientPlan` per client."""
        kwargs, session = self.engine.connect_kwargs(), self.engine.client_settings()
        per_client = self.rate / self.clients if self.rate else None
        return [ClientPlan(self.engine.NAME, kwargs, session, self.sql, self.row, self.rows_per_insert,
                           self.bytes_per_statement, k, self.warmup_s, self.duration_s, self.loop, per_client,
                           self.clients)
                for k in range(self.clients)]

    def samples(self) -> pd.DataFrame:
        """Every statement reported so far (warm-up flagged), in :data:`SAMPLE_COLUMNS`."""
        if not self._chunks:
            return pd.DataFrame({c: pd.Series(dtype=float) for c in SAMPLE_COLUMNS})
        return pd.concat(self._chunks, ignore_index=True).sort_values(["client", "statement_no"], ignore_index=True)

    @property
    def measure_start_ns(self) -> int | None:
        """When the measured seconds began (the end of the warm-up), on the lab's clock."""
        return None if self.start_ns is None else self.start_ns + int(self.warmup_s * 1e9)

    def run(self) -> pd.DataFrame:
        """Start the clients, wait for them, return :meth:`samples`.

        Raises
        ------
        ClientCrashError
            A client failed or died; every other client is stopped first and the samples
            received until then stay in :meth:`samples`.
        KeyboardInterrupt
            Likewise every client is stopped before it propagates.
        """
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["ingestlab.concurrency", "ingestlab.engines"])
        inbox = ctx.Queue()
        start = ctx.Value("q", 0)
        procs = [ctx.Process(target=_client_main, args=(plan, inbox, start), name=f"ingestlab-client-{plan.client}",
                             daemon=True) for plan in self.plans()]
        cpu0 = timing.cpu_ns()
        try:
            for proc in procs:
                proc.start()
            self._wait_for(inbox, procs, "ready", timing.now_ns() + int(CONNECT_TIMEOUT_S * 1e9))
            if self.on_start is not None:
                self.on_start([p.pid for p in procs])
            # every client starts on the same instant, a little ahead so that all see it in time
            self.start_ns = timing.now_ns() + int(0.05e9)
            start.value = self.start_ns
            end = self.start_ns + int((self.warmup_s + self.duration_s + GRACE_S) * 1e9)
            self._wait_for(inbox, procs, "done", end)
            self.completed = True
        finally:
            _stop(procs)
            self._drain(inbox)
            self.parent_cpu_ns = timing.cpu_ns() - cpu0
        return self.samples()

    def _wait_for(self, inbox, procs: list, kind: str, deadline_ns: int) -> None:
        """Read messages until every client has sent ``kind``; raise if one dies, fails or is late."""
        waiting = set(range(len(procs)))
        while waiting:
            try:
                message = inbox.get(timeout=0.1)
            except queue_module.Empty:
                message = None
            if message is not None:
                self._receive(message)
                if message[0] == kind:
                    waiting.discard(message[1])
                continue
            dead = [k for k in waiting if not procs[k].is_alive()]
            if dead:
                k = dead[0]
                raise ClientCrashError(f"client {k} (pid {procs[k].pid}) exited with code {procs[k].exitcode} "
                                       f"before it sent '{kind}'; every client was stopped")
            if timing.now_ns() > deadline_ns:
                raise ClientCrashError(f"clients {sorted(waiting)} did not send '{kind}' in time; every client "
                                       "was stopped")

    def _receive(self, message: tuple) -> None:
        kind, client, payload = message
        if kind == "samples":
            self._chunks.append(_frame(client, payload))
        elif kind == "done":
            self.cpu[client] = payload
        elif kind == "error":
            raise ClientCrashError(f"client {client} failed: {payload}")

    def _drain(self, inbox) -> None:
        """Take what the stopped clients had sent but not yet been read (their samples)."""
        while True:
            try:
                message = inbox.get(timeout=0.05)
            except (queue_module.Empty, OSError, EOFError):
                return
            if message[0] in ("samples", "done"):
                self._receive(message)

    def cpu_table(self) -> pd.DataFrame:
        """Per client: CPU used in the measured seconds, statements then, CPU per statement and share of the wall.

        ``cpu_share`` near 1 would mean the client, not the engine, limits the rate.
        """
        rows = [{"client": k, **v} for k, v in sorted(self.cpu.items())]
        table = pd.DataFrame(rows, columns=["client", "cpu_ns", "wall_ns", "statements"])
        table["cpu_us_per_statement"] = table["cpu_ns"] / table["statements"].clip(lower=1) / 1e3
        table["cpu_share"] = table["cpu_ns"] / table["wall_ns"].clip(lower=1)
        return table


def _frame(client: int, payload: dict) -> pd.DataFrame:
    out = pd.DataFrame({k: np.asarray(v) for k, v in payload.items()})
    out.insert(0, "client", client)
    return out


def _stop(procs: list) -> None:
    """Stop every client still running: SIGTERM, then SIGKILL after a second; reap them all."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        if proc.pid is None:
            continue
        proc.join(timeout=1.0)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5.0)


# -- the client process ---------------------------------------------------------------------
def _client_main(plan: ClientPlan, outbox, start) -> None:
    """One client: connect, wait for the start, write until the end, report; exit 1 on failure."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when clients stop (Ctrl-C there)
    try:
        _client_loop(plan, outbox, start)
    except Exception as exc:  # noqa: BLE001 - any failure is reported to the parent, then the process exits
        outbox.put(("error", plan.client, f"{type(exc).__name__}: {exc}"))
        outbox.close()
        outbox.join_thread()
        os._exit(1)


def _client_loop(plan: ClientPlan, outbox, start) -> None:
    from ingestlab.engines import Engine

    engine = Engine.classes()[plan.engine].client(plan.connect_kwargs).start()
    if plan.session_settings:
        engine.set_session(plan.session_settings)
    execute = engine.execute
    width = len(plan.row)
    params = list(plan.row) * plan.rows_per_insert
    id_slots = range(0, width * plan.rows_per_insert, width)
    next_id = plan.client * ID_STRIDE
    outbox.put(("ready", plan.client, None))
    while start.value == 0:
        timing.sleep_until(timing.now_ns() + 1_000_000)
    t_start = start.value
    t_measure = t_start + int(plan.warmup_s * 1e9)
    t_end = t_measure + int(plan.duration_s * 1e9)
    interval_ns = int(1e9 / plan.rate_per_client) if plan.rate_per_client else 0
    # open-loop schedules are staggered so that the clients do not fire in lockstep
    offset_ns = interval_ns * plan.client // plan.clients
    buf = _Buffer()
    next_report = t_start + int(REPORT_EVERY_S * 1e9)
    timing.sleep_until(t_start)
    cpu_measure, n_measured = None, 0
    k = 0
    while True:
        if interval_ns:
            intended = t_start + offset_ns + k * interval_ns
            if intended >= t_end:
                break
            timing.sleep_until(intended)
        else:
            intended = timing.now_ns()
            if intended >= t_end:
                break
        for slot in id_slots:
            params[slot] = next_id
            next_id += 1
        run = timing.timed(execute, plan.sql, params)
        if not interval_ns:  # closed loop: the statement starts when the client is ready for it
            intended = run.started_ns
        warm = run.started_ns < t_measure
        if not warm and cpu_measure is None:
            cpu_measure = timing.cpu_ns()
        n_measured += not warm
        buf.add(k, warm, intended, run.started_ns, run.elapsed_ns)
        k += 1
        if run.started_ns + run.elapsed_ns >= next_report:
            outbox.put(("samples", plan.client, buf.take(plan)))
            next_report += int(REPORT_EVERY_S * 1e9)
    cpu_used = timing.cpu_ns() - cpu_measure if cpu_measure is not None else 0
    outbox.put(("samples", plan.client, buf.take(plan)))
    engine.close()
    outbox.put(("done", plan.client, {"cpu_ns": cpu_used, "wall_ns": t_end - t_measure, "statements": n_measured}))
    outbox.close()
    outbox.join_thread()


class _Buffer:
    """Samples of one client not yet sent."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def add(self, k: int, warm: bool, intended: int, started: int, elapsed: int) -> None:
        self.rows.append((k, warm, intended, started, elapsed))

    def take(self, plan: ClientPlan) -> dict[str, list]:
        rows, self.rows = self.rows, []
        k, warm, intended, started, elapsed = (list(c) for c in zip(*rows)) if rows else ([], [], [], [], [])
        ends = [s + e for s, e in zip(started, elapsed)]
        return {"statement_no": k, "warmup": warm, "rows": [plan.rows_per_insert] * len(k),
                "bytes": [plan.bytes_per_statement] * len(k), "intended_ns": intended, "started_ns": started,
                "elapsed_s": [e / 1e9 for e in elapsed], "latency_s": [(x - i) / 1e9 for x, i in zip(ends, intended)]}
