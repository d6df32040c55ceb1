import os

import pytest

from ingestlab import placement
from ingestlab.engines import registry
from ingestlab.errors import ConfigError
from ingestlab.servers.base import processes_using

two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to split")


def _affinity_of_every_task(pid: int) -> set[frozenset]:
    return {frozenset(os.sched_getaffinity(int(t))) for t in os.listdir(f"/proc/{pid}/task")}


@two_cpus
@pytest.mark.parametrize("policy", ["split", "together"])
def test_a_local_server_runs_on_the_server_cpus_and_the_client_on_its_own_until_close(tmp_path, monkeypatch, policy):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.setenv(placement.ENV, policy)
    cpus = placement.plan(set(placement._ALLOWED))
    assert (cpus["server"] == cpus["client"]) == (policy == "together")
    engine = registry.get("postgres")
    try:
        engine.start()
        pids = processes_using(engine.server.directory)
        assert pids
        for pid in pids:
            assert _affinity_of_every_task(pid) == {frozenset(cpus["server"])}
        assert os.sched_getaffinity(0) == set(cpus["client"])
        engine.apply_settings({"synchronous_commit": "off"})  # a restart: new processes, pinned again
        for pid in processes_using(engine.server.directory):
            assert _affinity_of_every_task(pid) == {frozenset(cpus["server"])}
        backend = engine.execute("SELECT pg_backend_pid()")[0][0]  # forked after the pinning: inherits it
        assert os.sched_getaffinity(backend) == set(cpus["server"])
    finally:
        engine.close()
    assert os.sched_getaffinity(0) == set(placement._ALLOWED)


def test_off_the_default_leaves_placement_to_the_scheduler_and_a_bad_value_is_refused(monkeypatch):
    monkeypatch.delenv(placement.ENV, raising=False)
    assert placement.plan({0, 1}) is None and placement.describe()["plan"] is None
    monkeypatch.setenv(placement.ENV, "sideways")
    with pytest.raises(ConfigError, match="INGESTLAB_PLACEMENT"):
        placement.plan({0, 1})


def test_an_unset_policy_is_what_the_measuring_code_prefers_and_the_variable_wins(monkeypatch):
    monkeypatch.delenv(placement.ENV, raising=False)
    with placement.preferring("together"):
        assert placement.policy() == "together" and placement.plan({0, 1}) == {"client": [0], "server": [0]}
        monkeypatch.setenv(placement.ENV, "off")
        assert placement.plan({0, 1}) is None
    monkeypatch.delenv(placement.ENV)
    assert placement.policy() == "off"
    with pytest.raises(ValueError, match="sideways"), placement.preferring("sideways"):
        pass


def test_together_leaves_a_clusters_nodes_every_cpu_and_puts_a_single_server_on_the_clients(monkeypatch):
    from ingestlab.engines.galera.server import GaleraServer
    from ingestlab.engines.mariadb.server import MariaDBServer

    monkeypatch.setenv(placement.ENV, "together")
    cpus = placement.plan({0, 1})
    assert placement.server_cpus(MariaDBServer, cpus) == {0}
    assert placement.server_cpus(GaleraServer, cpus) == set(placement._ALLOWED)
    monkeypatch.setenv(placement.ENV, "split")
    assert placement.server_cpus(GaleraServer, placement.plan({0, 1})) == {1}


def test_a_library_engine_is_the_client_and_is_not_pinned(tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.setenv(placement.ENV, "split")
    engine = registry.get("duckdb")
    try:
        engine.start()
        assert os.sched_getaffinity(0) == set(placement._ALLOWED)
    finally:
        engine.close()


@pytest.mark.skipif(not os.access(placement.QOS_FILE, os.W_OK), reason="needs root: /dev/cpu_dma_latency")
def test_the_wake_up_latency_is_held_while_an_engine_runs_and_dropped_at_close(tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.delenv(placement.WAKEUP_ENV, raising=False)
    before = dict(placement._held)  # another test's engine in this worker may hold it already (seen in CI)
    first, second = registry.get("duckdb"), registry.get("duckdb")
    first.start()
    second.start()
    try:
        assert placement.describe()["wakeup"] == "held"
        fd = placement._held["fd"]
        assert os.readlink(f"/proc/self/fd/{fd}") == placement.QOS_FILE
        first.close()
        assert placement.describe()["wakeup"] == "held"  # the other engine still runs
    finally:
        first.close()
        second.close()
    assert placement._held == before  # each engine's hold ended with it
    if before["fd"] is None:
        assert placement.describe()["wakeup"].startswith("hold")  # the last one let go: the kernel dropped it


def test_wake_up_off_holds_nothing_and_a_bad_value_is_refused(monkeypatch):
    monkeypatch.setenv(placement.WAKEUP_ENV, "off")
    before = dict(placement._held)  # another test's engine in this worker may hold it: "off" adds nothing
    assert placement.hold() == "off" and placement._held == before
    monkeypatch.setenv(placement.WAKEUP_ENV, "always")
    with pytest.raises(ConfigError, match="INGESTLAB_WAKEUP"):
        placement.hold()
