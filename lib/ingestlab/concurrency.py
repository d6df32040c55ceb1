"""Concurrent clients, each on its own connection, timed on the lab's clock.

The driver of notebook 04 (and of ``bench/group_commit_fidelity.py``). The clients run in
separate worker processes (``forkserver``: a fresh interpreter forked from a server that has
already imported the lab, so no client shares a GIL with the parent). Where the package's C
half is built and the engine hands out its connection's C send call
(:meth:`~ingestlab.engines.base.Engine._native_sender`), the timed loop -- the ids put into
the text, the clock, the send -- runs in C (:func:`ingestlab.timing.stamp_template`) with
the GIL released, as pgbench's and mariadb-slap's do, and all the clients are *threads* of one
worker process, as theirs are (``workers="threads"``): 32 MariaDB clients in 32 processes ran
7-8 % slower than mariadb-slap's 32 threads on the same C loop, from the kernel's cost of
switching between processes (``bench/client_workers.py``). Otherwise each client is a process
of its own running the loop in Python (:func:`ingestlab.timing.stamp_statements`;
``workers="processes"``), which no GIL shares. Each sample says which loop timed it
(``timer``).

Each client opens its own connection with its engine's
:meth:`~ingestlab.engines.base.Engine._open_sender` from the arguments the parent's
:meth:`~ingestlab.engines.base.Engine.connect_kwargs` gave (sent through a pipe, never on a
command line), waits for a common start time, and writes ``R`` rows per INSERT during a
warm-up and then a fixed duration. A client costs per statement about what the engine's own C
load tool costs: the parent renders the INSERT once with the driver
(:meth:`~ingestlab.engines.base.Engine._render`), and a client only puts its next ids into
that text, sends it with its client library's lowest-level query call (libpq's ``PQexec``;
mysqlclient's ``mysql_real_query``) and stores two clock readings into a buffer shared with
the parent. Nothing is sent to the parent per statement; the parent reads the buffers at the
end, so a client that dies or is stopped leaves every statement it finished (a full buffer is
shipped and reused, rarely).

Two loops, both labelled in the samples (``loop``):

* ``closed`` (default): each client sends its next statement when the last one returns.
  Latency = the statement's own time.
* ``open``: each client has a schedule, ``rate / clients`` statements per second, and the
  latency of a statement runs from its *intended* start, so time spent waiting behind a
  slow statement counts (the coordinated-omission correction of wrk2 and YCSB's
  ``measurement.interval=intended``).

Besides latencies, each client reports the CPU time its thread used per statement
(:func:`ingestlab.timing.cpu_ns` with ``thread=True``): a client busy for most of the wall clock would be
the bottleneck, not the engine.
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing as mp
import os
import queue as queue_module
import signal
import threading
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from ingestlab import timing
from ingestlab.engines import registry
from ingestlab.errors import ClientCrashError, ConfigError, ServerError

#: Most clients the driver starts: the lab's PostgreSQL accepts 100 connections (its
#: default ``max_connections``), of which the lab's own measuring connection takes one.
MAX_CLIENTS = 96
#: The loops the driver runs (see the module docstring).
LOOPS = ("closed", "open")
#: Seconds a client may take to connect before the run is abandoned.
CONNECT_TIMEOUT_S = 60.0
#: Seconds past the planned end before the driver gives up waiting for a client.
GRACE_S = 60.0
#: Statements a client's shared stamp buffer holds; a full one is shipped to the parent and reused.
BUFFER_STATEMENTS = 1 << 15
#: Ids of client ``k`` start at ``k × ID_STRIDE`` (no two clients write the same id).
ID_STRIDE = 10**12
#: Ids that mark, in the rendered INSERT, where each row's id goes (never written).
_ID_MARK = 987654321987654321
#: How the clients are hosted: all as threads of one worker process, or one process each.
WORKERS = ("threads", "processes")
#: Columns of the samples frame, one row per statement.
SAMPLE_COLUMNS = ["client", "statement_no", "warmup", "rows", "bytes", "intended_ns", "started_ns", "elapsed_s",
                  "latency_s", "timer", "driver"]


@dataclasses.dataclass(frozen=True)
class ClientPlan:
    """What one client process does; sent to it through a pipe.

    Attributes
    ----------
    engine : str
        Registry name of the engine's adapter (``engines.classes()`` key).
    connect_kwargs : dict
        The driver ``connect()`` arguments (from the parent's ``connect_kwargs()``).
    session_settings : dict
        Settings the client sets on its own session first (``engine.sender.client_settings()``).
    sql : str
        The INSERT of ``rows_per_insert`` rows, with driver placeholders.
    row : tuple
        One row; the client writes copies of it with fresh ids in the first column.
    template : bytes
        ``sql`` with ``row`` as the driver renders it, ``%d`` where each id goes
        (:meth:`ClientRun.statement_template`).
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
    timer : str
        ``c``: the C loop where the client has it (else Python); ``python``: the Python loop.
    engine_folders : str
        The parent's ``$INGESTLAB_ENGINES`` when the plan was made: the client's registry finds the
        same engines, whatever environment its process server was started with.
    """

    engine: str
    connect_kwargs: dict
    session_settings: dict
    sql: str
    row: tuple
    template: bytes
    rows_per_insert: int
    bytes_per_statement: int
    client: int
    warmup_s: float
    duration_s: float
    loop: str = "closed"
    rate_per_client: float | None = None
    clients: int = 1
    timer: str = "c"
    engine_folders: str = ""


def check_clients(value: Any, name: str = "CLIENTS") -> int:
    """``value`` as a client count from 1 to :data:`MAX_CLIENTS`, else :class:`ConfigError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_CLIENTS:
        raise ConfigError(name, value, f"an integer from 1 to {MAX_CLIENTS} (MAX_CLIENTS: the lab's PostgreSQL "
                                       "accepts 100 connections)")
    return int(value)


class ClientRun:
    """``clients`` clients writing into ``table`` at once; :meth:`run` drives them, the samples stay here.

    Parameters
    ----------
    engine : Engine
        A started engine; its ``connect_kwargs()`` and ``_client_settings()`` go to the clients.
    table : str
        The table the clients write.
    columns : sequence of str
        Its columns; ``row`` gives one value per column, the first one the id.
    row : tuple
        The row every client writes (with fresh ids).
    clients, rows_per_insert : int
        Clients (each on its own connection), and rows per INSERT.
    warmup_s, duration_s : float
        Warm-up (kept, flagged) and measured seconds.
    loop : str
        One of :data:`LOOPS`.
    rate : float, optional
        Open loop: statements per second of all clients together.
    on_start : callable, optional
        Called once all are connected with each client's process id, in client order (clients
        that are threads of one worker share its pid; tests use it to kill one).
    timer : str, optional
        ``python`` runs the clients' loop in Python even where the C loop is built (to compare
        the two); default: :data:`ingestlab.timing.TIMER`. Each sample says which ran (``timer``).
    workers : str, optional
        One of :data:`WORKERS`: ``threads`` (every client a thread of one worker process, as
        pgbench's and mariadb-slap's are) or ``processes`` (one process each). Default:
        ``threads`` where the clients run the C loop, which releases the GIL (the C half is
        built, ``timer`` is ``c`` and ``engine.sender.native()`` gives a C send call), else
        ``processes``. :meth:`cpu_table` says which.

    After :meth:`run` (returned, raised or interrupted): :meth:`samples` holds every
    statement a client reported, :attr:`completed` says whether every client finished, and
    :attr:`cpu` the CPU each client used.
    """

    def __init__(self, engine, table: str, columns: Sequence[str], row: tuple, *, clients: int, rows_per_insert: int,
                 warmup_s: float, duration_s: float, loop: str = "closed", rate: float | None = None,
                 on_start: Callable[[list[int]], Any] | None = None, timer: str | None = None,
                 workers: str | None = None):
        from ingestlab import datagen

        self.clients = check_clients(clients)
        self.timer = timing.TIMER if timer is None else timer
        if self.timer not in ("c", "python"):
            raise ConfigError("timer", timer, "c or python")
        if loop not in LOOPS:
            raise ConfigError("LOOP", loop, "one of " + ", ".join(LOOPS))
        if loop == "open" and not (isinstance(rate, (int, float)) and rate > 0):
            raise ConfigError("RATE", rate, "statements per second > 0 for the open loop")
        if workers is None:
            native = self.timer == "c" and timing.TIMER == "c" and engine.sender.native() is not None
            workers = "threads" if native else "processes"
        if workers not in WORKERS:
            raise ConfigError("workers", workers, "one of " + ", ".join(WORKERS))
        self.workers = workers
        self.engine, self.on_start = engine, on_start
        self.rows_per_insert, self.warmup_s, self.duration_s, self.loop = rows_per_insert, warmup_s, duration_s, loop
        self.rate = float(rate) if loop == "open" else None
        self.sql = engine.sql.insert_sql(table, list(columns), rows_per_insert)
        self.row = tuple(row)
        self.bytes_per_statement = datagen.row_bytes(self.row) * rows_per_insert
        self.completed = False
        self.start_ns: int | None = None
        self.cpu: dict[int, dict] = {}
        self.timers: dict[int, str] = {}  # client → the loop that timed it (timing.TIMER: "c" or "python")
        self.drivers: dict[int, str] = {}  # client → the driver whose connection it sent on
        self.parent_cpu_ns = 0
        self._chunks: list[tuple[int, np.ndarray]] = []

    def statement_template(self) -> bytes:
        """The INSERT with the row as the driver renders it, ``%d`` where each id goes (``%`` doubled).

        A client fills in its ids (``template % id``) and sends the text: the statement the
        driver would have sent, rendered once here instead of once per statement.
        """
        marks = [_ID_MARK + k for k in range(self.rows_per_insert)]
        text = self.engine.sender.render(self.sql, [v for mark in marks for v in (mark, *self.row[1:])])
        text = (text.encode() if isinstance(text, str) else bytes(text)).replace(b"%", b"%%")
        for mark in marks:
            if text.count(str(mark).encode()) != 1:
                raise ValueError(f"the rendered INSERT does not show the id mark {mark} exactly once")
            text = text.replace(str(mark).encode(), b"%d")
        return text

    def plans(self) -> list[ClientPlan]:
        """One :class:`ClientPlan` per client."""
        kwargs, session = self.engine.connect_kwargs(), self.engine.sender.client_settings()
        per_client = self.rate / self.clients if self.rate else None
        template = self.statement_template()
        return [ClientPlan(self.engine.NAME, kwargs, session, self.sql, self.row, template, self.rows_per_insert,
                           self.bytes_per_statement, k, self.warmup_s, self.duration_s, self.loop, per_client,
                           self.clients, self.timer, os.environ.get(registry.ENGINES_ENV, ""))
                for k in range(self.clients)]

    def samples(self) -> pd.DataFrame:
        """Every statement the clients finished so far (warm-up flagged), in :data:`SAMPLE_COLUMNS`."""
        frames = [self._frame(client, stamps) for client, stamps in self._chunks]
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame({c: pd.Series(dtype=float) for c in SAMPLE_COLUMNS})
        return (pd.concat(frames, ignore_index=True).drop_duplicates(["client", "statement_no"])
                .sort_values(["client", "statement_no"], ignore_index=True))

    def _frame(self, client: int, stamps: np.ndarray) -> pd.DataFrame:
        """The statements of one stamp buffer (:func:`ingestlab.timing.stamp_statements`'s layout), with the loop that timed them."""
        count, first = int(stamps[0]), int(stamps[1])
        body = stamps[timing.STAMP_HEADER:timing.STAMP_HEADER + timing.STAMP_WIDTH * count]
        intended, started, ended = body.reshape(-1, timing.STAMP_WIDTH).T
        return pd.DataFrame({"client": client, "statement_no": np.arange(first, first + count),
                             "warmup": started < (self.measure_start_ns or 0), "rows": self.rows_per_insert,
                             "bytes": self.bytes_per_statement, "intended_ns": intended, "started_ns": started,
                             "elapsed_s": (ended - started) / 1e9, "latency_s": (ended - intended) / 1e9,
                             "timer": self.timers.get(client, "unknown"),
                             "driver": self.drivers.get(client, "unknown")})

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
        ServerError
            Likewise, when the engine's ``watch`` capability says why (a replicated primary
            ended the commits waiting for a standby it lost): its reason, not the client's
            dropped connection.
        KeyboardInterrupt
            Likewise every client is stopped before it propagates.
        """
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["ingestlab.concurrency", "ingestlab.engines"])
        inbox = ctx.Queue()
        start = ctx.Value("q", 0)
        plans = self.plans()
        stamps = [ctx.RawArray("q", timing.STAMP_HEADER + timing.STAMP_WIDTH * BUFFER_STATEMENTS) for _ in plans]
        groups = [list(range(len(plans)))] if self.workers == "threads" else [[k] for k in range(len(plans))]
        workers = [ctx.Process(target=_worker_main, args=([plans[k] for k in group], inbox, start,
                                                          [stamps[k] for k in group]),
                               name=f"ingestlab-clients-{group[0]}" + (f"-{group[-1]}" if len(group) > 1 else ""),
                               daemon=True) for group in groups]
        procs = [worker for worker, group in zip(workers, groups) for _ in group]  # client k → its process
        cpu0 = timing.cpu_ns()
        try:
            for worker in workers:
                worker.start()
            self._wait_for(inbox, procs, "ready", timing.now_ns() + int(CONNECT_TIMEOUT_S * 1e9))
            if self.on_start is not None:
                self.on_start([p.pid for p in procs])
            # every client starts on the same instant, a little ahead so that all see it in time
            self.start_ns = timing.now_ns() + int(0.05e9)
            start.value = self.start_ns
            end = self.start_ns + int((self.warmup_s + self.duration_s + GRACE_S) * 1e9)
            self._wait_for(inbox, procs, "done", end)
            self.completed = True
        except ClientCrashError as exc:
            cause = self.engine.capability("watch").cause() if self.engine.has("watch") else None
            if cause is None:
                raise
            raise ServerError(cause) from exc
        finally:
            _stop(workers)
            self._drain(inbox)
            # what each client had stamped and not shipped: its buffer outlives it
            self._chunks += [(k, np.frombuffer(buf, dtype=np.int64).copy()) for k, buf in enumerate(stamps)]
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
                # a client that put its message and exited may be seen dead before its message is read (a loaded
                # machine): what the dead sent is read to the end before any is called lost
                for message in _pending(inbox):
                    self._receive(message)
                    if message[0] == kind:
                        waiting.discard(message[1])
                dead = [k for k in dead if k in waiting]
                if dead:
                    proc = procs[dead[0]]
                    lost = [k for k in dead if procs[k] is proc]
                    who = (f"client {lost[0]}" if len(lost) == 1 else
                           f"clients {', '.join(map(str, lost))} (threads of one process)")
                    raise ClientCrashError(f"{who} (pid {proc.pid}) exited with code {proc.exitcode} "
                                           f"before {'it' if len(lost) == 1 else 'they'} sent '{kind}'; every client "
                                           "was stopped")
                continue
            if timing.now_ns() > deadline_ns:
                raise ClientCrashError(f"clients {sorted(waiting)} did not send '{kind}' in time; every client "
                                       "was stopped")

    def _receive(self, message: tuple) -> None:
        kind, client, payload = message
        if kind == "samples":
            self._chunks.append((client, np.frombuffer(payload, dtype=np.int64)))
        elif kind == "ready":
            self.timers[client], self.drivers[client] = payload
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

        ``cpu_share`` near 1 would mean the client, not the engine, limits the rate. The CPU is
        the client's thread's (its process's main thread when it has a process of its own);
        ``workers`` says how the clients were hosted.
        """
        rows = [{"client": k, **v} for k, v in sorted(self.cpu.items())]
        table = pd.DataFrame(rows, columns=["client", "cpu_ns", "wall_ns", "statements"])
        table["workers"] = self.workers
        table["cpu_us_per_statement"] = table["cpu_ns"] / table["statements"].clip(lower=1) / 1e3
        table["cpu_share"] = table["cpu_ns"] / table["wall_ns"].clip(lower=1)
        return table


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


# -- the worker process ---------------------------------------------------------------------
def _worker_main(plans: list[ClientPlan], outbox, start, stamps: list) -> None:
    """A worker process: its clients (one in the main thread, or one thread each); exit 1 if one failed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when clients stop (Ctrl-C there)
    if len(plans) == 1:
        ok = [_client_main(plans[0], outbox, start, stamps[0])]
    else:
        ok = [False] * len(plans)

        def host(i: int) -> None:
            ok[i] = _client_main(plans[i], outbox, start, stamps[i])

        threads = [threading.Thread(target=host, args=(i,), name=f"client-{plan.client}", daemon=True)
                   for i, plan in enumerate(plans)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    outbox.close()
    outbox.join_thread()
    if not all(ok):
        os._exit(1)


def _client_main(plan: ClientPlan, outbox, start, stamps) -> bool:
    """One client: connect, wait for the start, write until the end, report; False (reported) on failure."""
    try:
        _client_loop(plan, outbox, start, stamps)
    except Exception as exc:  # noqa: BLE001 - any failure is reported to the parent, which stops the clients
        outbox.put(("error", plan.client, f"{type(exc).__name__}: {exc}"))
        return False
    return True


def _texts(template: bytes, first_id: int, rows: int) -> Iterator[bytes]:
    """The client's statement texts: ``template`` with fresh ids, ``rows`` a statement."""
    if rows == 1:
        return map(template.__mod__, itertools.count(first_id))
    return (template % tuple(range(i, i + rows)) for i in itertools.count(first_id, rows))


def _client_loop(plan: ClientPlan, outbox, start, stamps) -> None:
    from ingestlab import engines

    os.environ[registry.ENGINES_ENV] = plan.engine_folders  # the parent's engines, not the process server's
    engine = engines.classes()[plan.engine](client_kwargs=plan.connect_kwargs)
    send = engine.sender.open(plan.session_settings)
    sender = engine.sender.native() if plan.timer == "c" and timing.TIMER == "c" else None
    texts = _texts(plan.template, plan.client * ID_STRIDE, plan.rows_per_insert)
    buf = memoryview(stamps).cast("B").cast("q")
    sender_driver = engine.WIRE.sender_driver or engine.driver.name
    outbox.put(("ready", plan.client, ("c" if sender is not None else "python", sender_driver)))
    while start.value == 0:
        timing.sleep_until(timing.now_ns() + 1_000_000)
    t_start = start.value
    t_measure = t_start + int(plan.warmup_s * 1e9)
    t_end = t_measure + int(plan.duration_s * 1e9)
    interval_ns = int(1e9 / plan.rate_per_client) if plan.rate_per_client else 0
    # open-loop schedules are staggered so that the clients do not fire in lockstep
    first_ns = t_start + interval_ns * plan.client // plan.clients
    timing.sleep_until(t_start)
    cpu0, n0 = 0, 0
    for until in (t_measure, t_end):  # warm-up, then the measured seconds, whose CPU is counted
        cpu0, n0 = timing.cpu_ns(thread=True), buf[1] + buf[0]
        while not (timing.stamp_template(sender, plan.template, plan.client * ID_STRIDE, buf, until, first_ns=first_ns,
                                         interval_ns=interval_ns) if sender is not None else
                   timing.stamp_statements(send, texts, buf, until, first_ns=first_ns, interval_ns=interval_ns)):
            outbox.put(("samples", plan.client, bytes(buf.cast("B"))))  # full: ship it, then reuse it
            buf[1], buf[0] = buf[1] + buf[0], 0
    cpu_used, measured = timing.cpu_ns(thread=True) - cpu0, buf[1] + buf[0] - n0
    engine.close()
    outbox.put(("done", plan.client, {"cpu_ns": cpu_used, "wall_ns": t_end - t_measure, "statements": measured}))


def _pending(inbox, timeout_s: float = 1.0) -> list:
    """Every message still in ``inbox``: read until it stays empty for ``timeout_s`` (a dead writer's last words)."""
    messages = []
    while True:
        try:
            messages.append(inbox.get(timeout=timeout_s))
        except queue_module.Empty:
            return messages
