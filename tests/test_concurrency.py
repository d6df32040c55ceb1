import pytest

from ingestlab import concurrency, datagen, engines, timing
from ingestlab.concurrency import MAX_CLIENTS, ClientRun, check_clients
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.errors import ConfigError

COLS = [c for c, _ in STUDY_COLUMNS]


@pytest.mark.parametrize("value", [0, -1, MAX_CLIENTS + 1, 2.5, True, "4"])
def test_check_clients_refuses_what_it_cannot_run(value):
    with pytest.raises(ConfigError, match="CLIENTS"):
        check_clients(value)


@pytest.fixture(scope="module")
def postgres():
    engine = engines.get("postgres").start()
    yield engine
    engine.close()


def test_plans_carry_connect_arguments_not_a_command_line(postgres):
    driver = ClientRun(postgres, "t", COLS, datagen.study_rows(1, start_id=0)[0], clients=3, rows_per_insert=2,
                       warmup_s=0.1, duration_s=0.1)
    plans = driver.plans()
    assert [p.client for p in plans] == [0, 1, 2]
    assert all(p.connect_kwargs == postgres.connect_kwargs() and p.session_settings == {} for p in plans)
    assert plans[0].sql == postgres.sql.insert_sql("t", COLS, 2)


def ran(timer: str) -> str:
    """The loop a client runs when asked for ``timer``: C only where the package's C half is built."""
    return "c" if timer == "c" and timing.TIMER == "c" else "python"


@pytest.mark.parametrize("timer", ["c", "python"])
def test_closed_loop_writes_distinct_rows_each_acknowledged_once(postgres, timer):
    postgres.tables.reset("t_closed", STUDY_COLUMNS)
    driver = ClientRun(postgres, "t_closed", COLS, datagen.study_rows(1, start_id=0)[0], clients=3, rows_per_insert=5,
                       warmup_s=0.2, duration_s=0.5, timer=timer)
    samples = driver.run()
    assert set(samples["timer"]) == {ran(timer)}
    assert driver.completed and samples["warmup"].any() and (~samples["warmup"]).any()
    assert postgres.tables.count_rows("t_closed") == samples["rows"].sum()
    assert postgres.execute('SELECT count(DISTINCT "id") FROM "t_closed"')[0][0] == samples["rows"].sum()
    assert (samples["latency_s"] == samples["elapsed_s"]).all()
    # one statement at a time per client
    for _, part in samples.groupby("client"):
        ends = part["started_ns"] + part["elapsed_s"] * 1e9
        assert (part["started_ns"].iloc[1:].to_numpy() >= ends.iloc[:-1].to_numpy()).all()
    cpu = driver.cpu_table()
    assert len(cpu) == 3 and (cpu["cpu_us_per_statement"] > 0).all() and (cpu["cpu_share"] < 1).all()
    # the C loop releases the GIL: its clients are threads of one process, as pgbench's; Python's are processes
    assert driver.workers == ("threads" if ran(timer) == "c" else "processes")
    assert set(cpu["workers"]) == {driver.workers}


@pytest.mark.parametrize("timer", ["c", "python"])
def test_open_loop_keeps_its_schedule_and_counts_latency_from_the_intended_start(postgres, timer):
    postgres.tables.reset("t_open", STUDY_COLUMNS)
    driver = ClientRun(postgres, "t_open", COLS, datagen.study_rows(1, start_id=0)[0], clients=2, rows_per_insert=1,
                       warmup_s=0.0, duration_s=1.0, loop="open", rate=200, timer=timer)
    samples = driver.run()
    assert set(samples["timer"]) == {ran(timer)}
    assert 190 <= len(samples) <= 201
    assert (samples["latency_s"] >= samples["elapsed_s"] - 1e-9).all()
    assert (samples["started_ns"] >= samples["intended_ns"]).all()
    assert postgres.tables.count_rows("t_open") == len(samples)


def test_open_loop_needs_a_rate(postgres):
    with pytest.raises(ConfigError, match="RATE"):
        ClientRun(postgres, "t", COLS, (1, "a", 1.0, None), clients=1, rows_per_insert=1, warmup_s=0, duration_s=1,
                  loop="open")


def test_the_template_is_the_drivers_rendering_with_one_id_slot_per_row(postgres):
    row = datagen.study_rows(1, start_id=0)[0]
    driver = ClientRun(postgres, "t", COLS, row, clients=1, rows_per_insert=3, warmup_s=0, duration_s=1)
    template = driver.statement_template()
    assert template.count(b"%d") == 3
    ids = (5, 6, 7)
    rendered = postgres.sender.render(postgres.sql.insert_sql("t", COLS, 3), [v for i in ids for v in (i, *row[1:])])
    assert template % ids == rendered


def test_full_buffers_are_shipped_and_every_statement_is_kept_once(postgres, monkeypatch):
    monkeypatch.setattr(concurrency, "BUFFER_STATEMENTS", 2)  # the parent sizes the shared buffers
    postgres.tables.reset("t_ship", STUDY_COLUMNS)
    driver = ClientRun(postgres, "t_ship", COLS, datagen.study_rows(1, start_id=0)[0], clients=2, rows_per_insert=1,
                       warmup_s=0.1, duration_s=0.4)
    samples = driver.run()
    assert samples.groupby("client").size().min() > 2 * 2  # each client shipped at least two full buffers
    for _, part in samples.groupby("client"):
        assert part["statement_no"].tolist() == list(range(len(part)))
    assert postgres.tables.count_rows("t_ship") == len(samples)


class _LateInbox:
    """A queue whose messages are readable only after the parent has once found it empty (a loaded machine)."""

    def __init__(self, messages):
        self.messages, self.polled = list(messages), False

    def get(self, timeout=None):
        import queue

        if not self.polled or not self.messages:
            self.polled = True
            raise queue.Empty
        return self.messages.pop(0)


class _Exited:
    exitcode, pid = 0, 1

    def is_alive(self):
        return False


def test_a_client_that_sent_done_and_exited_before_the_parent_read_it_is_no_crash():
    driver = ClientRun.__new__(ClientRun)
    driver.cpu = {}
    driver._wait_for(_LateInbox([("done", 0, 1.5), ("done", 1, 2.5)]), [_Exited(), _Exited()], "done", 0)
    assert driver.cpu == {0: 1.5, 1: 2.5}
    with pytest.raises(concurrency.ClientCrashError, match="client 1 .* exited with code 0 before it sent 'done'"):
        driver._wait_for(_LateInbox([("done", 0, 1.5)]), [_Exited(), _Exited()], "done", 0)


def test_workers_are_one_of_the_two_hostings(postgres):
    with pytest.raises(ConfigError, match="workers"):
        ClientRun(postgres, "t", COLS, (1, "a", 1.0, None), clients=1, rows_per_insert=1, warmup_s=0, duration_s=1,
                  workers="fibers")


@pytest.mark.parametrize("workers", concurrency.WORKERS)
def test_a_killed_worker_names_every_client_it_hosted(postgres, workers):
    import os
    import signal
    import threading

    postgres.tables.reset("t_kill", STUDY_COLUMNS)
    pids: list[int] = []

    def kill_soon(client_pids):
        pids.extend(client_pids)
        # late enough for every client to have finished a measured statement after its 0.1 s of warm-up: at 0.3 s
        # one of three threads had none once in a loaded make test (2026-12-01)
        threading.Timer(1.0, os.kill, (client_pids[1], signal.SIGKILL)).start()

    driver = ClientRun(postgres, "t_kill", COLS, datagen.study_rows(1, start_id=0)[0], clients=3, rows_per_insert=1,
                       warmup_s=0.1, duration_s=5.0, on_start=kill_soon, workers=workers)
    expected = r"clients 0, 1, 2 \(threads of one process\) \(pid \d+\)" if workers == "threads" else r"client 1 \(pid"
    with pytest.raises(concurrency.ClientCrashError, match=expected):
        driver.run()
    assert len(set(pids)) == (1 if workers == "threads" else 3)
    # every statement the killed clients finished is kept: their buffers are the parent's
    samples = driver.samples()
    assert samples["client"].nunique() == 3 and postgres.tables.count_rows("t_kill") >= len(samples) > 0
