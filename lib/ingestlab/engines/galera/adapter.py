"""MariaDB Galera: the lab's cluster of N nodes on 127.0.0.1, or a real cluster at a ``galera://`` URL."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Sequence

from ingestlab import anatomy
from ingestlab.engines.base import EngineStyle
from ingestlab.engines.capabilities import GroupCommit
from ingestlab.engines.mariadb.adapter import MariaDB, MariaDBTableModels
from ingestlab.engines.mysql.adapter import MySQLProfiledStatement, _ProfileRecorder, _StagesRecorder
from ingestlab.errors import ConfigError, DataLossError, ServerError
from ingestlab.servers.base import LocalServer

#: Why notebook 03 does not run on a cluster (its ``upsert`` and ``memory_budget`` capabilities).
NOT_BEYOND_RAM = ("notebook 03 holds one server's caches to a memory budget and counts its disk reads; every Galera "
                  "node applies every row on this one machine, so one node's budget bounds neither the cluster's "
                  "memory nor its reads: run 03 on mariadb")


class GaleraTableModels(MariaDBTableModels):
    """MariaDB's InnoDB models; Aria is left out: Galera replicates InnoDB tables only."""

    MODELS: ClassVar[dict[str, str]] = {
        **{k: v for k, v in MariaDBTableModels.MODELS.items() if k != "aria"},
        "no_key": "InnoDB table without a key (Galera certifies its rows by a key made of the whole row)",
    }
    COMMIT_FREE_MODELS: ClassVar[tuple[str, ...]] = ()


class GaleraGroupCommit(GroupCommit):
    """Commit grouping in a Galera cluster: the group's own message packing, and each node's redo-log syncs.

    Every commit's write set is broadcast to the group in total order and certified on every
    node; messages that queue while one is in flight travel together (gcomm aggregates them), so
    concurrent commits share round trips without a setting. ``flush_2`` stops each node syncing
    its redo log at commit (the cluster, not the disk, makes a commit durable: Galera's own advice).
    """

    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "default": {},
        "flush_2": {"innodb_flush_log_at_trx_commit": "2"},
    }
    NOTE = ("Galera broadcasts each commit's write set in total order; write sets queued behind one in flight "
            "travel together, and each node's InnoDB groups its own redo-log syncs")


class GaleraProfiledStatement(MySQLProfiledStatement):
    """MariaDB's stages of each statement, with the cluster's ``wsrep_*`` counters around the pass."""

    def recorder(self, table: str, columns: Sequence[str]) -> anatomy.Recorder:
        """MariaDB's recorder (performance_schema, else ``SHOW PROFILE``) that also reads node 1's ``wsrep_%`` status.

        The change of each cumulative counter over the pass, per INSERT, is kept as a count:
        write sets replicated and their bytes (``wsrep_replicated``, ``…_bytes``), certification
        failures and brute-force aborts, flow control (pauses sent and received, and
        ``wsrep_flow_control_paused_ns`` as ms per statement: the time replication held commits
        back). Averages Galera keeps since the previous status read (``wsrep_local_send_queue_avg``,
        ``wsrep_cert_deps_distance``, ``wsrep_commit_window``, ``wsrep_commit_oooe``...) are kept
        as read at the end: the first read resets them. None is a part of the statement's time:
        MariaDB 10.11 has no stage of its own for the replication wait (see the README).
        """
        stages = self.engine._has_stage_history()
        return (_GaleraStagesRecorder if stages else _GaleraProfileRecorder)(self.engine, table, columns)


class _WsrepCounters:
    """The ``wsrep_%`` counters of node 1 around a recorder's pass (mixed in before MariaDB's recorders)."""

    #: Cumulative ``wsrep_%`` counters: their change per INSERT, and what each counts.
    CUMULATIVE: ClassVar[dict[str, str]] = {
        "wsrep_replicated": "write sets node 1 replicated to the group",
        "wsrep_replicated_bytes": "bytes of those write sets",
        "wsrep_repl_keys": "keys certified in them",
        "wsrep_local_cert_failures": "transactions that failed certification",
        "wsrep_local_bf_aborts": "local transactions aborted by replicated ones",
        "wsrep_flow_control_sent": "pauses node 1 asked of the group",
        "wsrep_flow_control_recv": "pauses the group asked (of any node)",
        "wsrep_received": "write sets and messages node 1 received from the group",
    }
    #: Averages since the previous status read, kept as read at the end of the pass.
    AVERAGES: ClassVar[dict[str, str]] = {
        "wsrep_local_send_queue_avg": "mean length of node 1's send queue during the pass",
        "wsrep_local_recv_queue_avg": "mean length of node 1's receive queue during the pass",
        "wsrep_cert_deps_distance": "mean distance between write sets that could apply in parallel",
        "wsrep_commit_window": "mean number of write sets committing at once",
        "wsrep_commit_oooe": "how often a write set committed out of order",
    }
    PAUSED = "wsrep_flow_control_paused_ns"

    def begin(self) -> None:
        super().begin()
        self.wsrep0 = self.engine._wsrep_status()

    def end(self) -> None:
        super().end()
        after = self.engine._wsrep_status()
        n = max(self._inserts(), 1)
        for name, meaning in self.CUMULATIVE.items():
            if name in after and name in self.wsrep0:
                self.counters[name] = ((after[name] - self.wsrep0[name]) / n,
                                       f"SHOW GLOBAL STATUS {name} on node 1, change per statement ({meaning})")
        if self.PAUSED in after and self.PAUSED in self.wsrep0:
            self.counters["flow_control_paused_ms"] = (
                (after[self.PAUSED] - self.wsrep0[self.PAUSED]) / 1e6 / n,
                f"SHOW GLOBAL STATUS {self.PAUSED} on node 1, change per statement in ms (time flow control held "
                "every commit of the cluster back: not a part, it spans clients)")
        for name, meaning in self.AVERAGES.items():
            if name in after:
                self.counters[name] = (after[name], f"SHOW GLOBAL STATUS {name} on node 1 after the pass ({meaning})")
        self.unmeasured["galera_commit"] = self.UNSTAGED

    #: What MariaDB 10.11's stages do not cover on a Galera node (the anatomy's ``unmeasured`` row).
    UNSTAGED: ClassVar[str] = (
        "after certification, Galera's commit ordering and the InnoDB commit with its redo-log sync run in no "
        "MariaDB 10.11 stage (the commit stage takes ~1 us on a node, against the whole sync on standalone "
        "MariaDB): that time stays in unexplained; outside_stages_ms says how much of the statement's server "
        "time no stage covers")


class _GaleraStagesRecorder(_WsrepCounters, _StagesRecorder):
    def _inserts(self) -> int:
        return len(self.kinds)


class _GaleraProfileRecorder(_WsrepCounters, _ProfileRecorder):
    def _inserts(self) -> int:
        return self.sent


class Galera(MariaDB):
    """A MariaDB Galera cluster: writes go to node 1, rows are counted on every node.

    ``engines.get("galera")`` starts a cluster of three nodes on 127.0.0.1 in
    ``.lab/galera-<pid>-<n>/`` (:class:`~ingestlab.engines.galera.server.GaleraServer`: group
    communication over TLS with the cluster's own certificates, no state transfer). The measuring
    connection is node 1's; a commit returns once its write set has been ordered by the group
    and certified, so each one pays a round trip through the group on top of MariaDB's commit.
    MariaDB's commit variants (``flush_1/2/0``) go to every node.

    ``galera://user:pw@host:3306/db?nodes=host2:3306,host3:3306`` reaches a cluster the lab does not
    manage: node 1 is the URL's, ``nodes`` lists the others (same user, password and database);
    without it the nodes are read from node 1's ``wsrep_incoming_addresses``. A variant's global
    settings (``?set_global=true``) are set on node 1 only.

    :meth:`_count_rows` counts on every node after ``wsrep_sync_wait`` (a node's reads wait until it
    has applied what the cluster committed before) and raises :class:`~ingestlab.errors.DataLossError`
    when the nodes differ. Notebook 03 is refused (:data:`NOT_BEYOND_RAM`).
    """

    NAME = "galera"
    WIRE = dataclasses.replace(MariaDB.WIRE, schemes=("galera",),
                               lab_query_keys=MariaDB.WIRE.lab_query_keys + ("nodes",))
    STYLE = EngineStyle(title="MariaDB Galera", colour="#117733", marker="D", words={
        **MariaDB.STYLE.words,
        "wsrep_replicated": "write sets replicated", "wsrep_replicated_bytes": "bytes replicated",
        "wsrep_repl_keys": "keys certified", "wsrep_local_cert_failures": "certification failures",
        "wsrep_local_bf_aborts": "aborted by replication", "flow_control_paused_ms": "flow-control pause",
        "wsrep_flow_control_sent": "flow-control pauses sent", "wsrep_flow_control_recv": "flow-control pauses received",
        "wsrep_received": "messages received", "wsrep_local_send_queue_avg": "send queue",
        "wsrep_local_recv_queue_avg": "receive queue", "wsrep_cert_deps_distance": "parallel-apply distance",
        "wsrep_commit_window": "commit window", "wsrep_commit_oooe": "commits out of order",
    })
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        **MariaDB.CAPABILITIES, "group_commit": GaleraGroupCommit, "table_models": GaleraTableModels,
        "profiled_statement": GaleraProfiledStatement, "upsert": NOT_BEYOND_RAM, "memory_budget": NOT_BEYOND_RAM,
        # see the folder's README, "Link delay": gcomm dials the addresses its peers advertise, past any proxy
        "link_delay": "the nodes' group communication dials each peer's advertised address, past any proxy in between",
    }
    #: Seconds a node's count may wait for its applier to catch up (``wsrep_sync_wait``) before the count fails.
    SYNC_WAIT_S: ClassVar[int] = 60

    def __init__(self, url=None, **kwargs):
        super().__init__(url, **kwargs)
        self._nodes = self._nodes_of_url()

    @classmethod
    def unavailable_reason(cls) -> str | None:
        from ingestlab.engines.galera.server import unavailable_reason

        return unavailable_reason()

    def _make_server(self) -> LocalServer:
        from ingestlab.engines.galera.server import GaleraServer

        return GaleraServer()

    # -- nodes -------------------------------------------------------------------------------
    def _nodes_of_url(self) -> list[tuple[str, int]] | None:
        """The URL's ``nodes`` as (host, port) pairs; None when it has none (or the cluster is the lab's)."""
        value = self.connection.lab.get("nodes") if self.connection is not None else None
        if value is None:
            return None
        nodes = []
        for item in str(value).split(","):
            host, sep, port = item.strip().rpartition(":")
            if not (sep and host and port.isdigit() and 0 < int(port) < 65536):
                raise ConfigError(f"{self._parameter} ?nodes", value,
                                  "the other nodes as host:port[,host:port…], e.g. nodes=10.0.0.2:3306,10.0.0.3:3306")
            nodes.append((host, int(port)))
        return nodes

    def node_logins(self) -> list[tuple[str, dict]]:
        """(where, driver ``connect()`` arguments) of every node, node 1 first."""
        if self.server is not None:
            return [(f"node {i}", kwargs) for i, kwargs in enumerate(self.server.node_connect_kwargs(), start=1)]
        first = self.connect_kwargs()
        nodes = self._nodes
        if nodes is None:
            addresses = str(self.execute("SHOW GLOBAL STATUS LIKE 'wsrep_incoming_addresses'")[0][1])
            nodes = [(host, int(port)) for host, _, port in
                     (a.strip().rpartition(":") for a in addresses.split(",")) if host and port.isdigit()]
        where = f"{first.get('host', 'localhost')}:{first.get('port', self.WIRE.default_port)}"
        return [(where, first)] + [(f"{host}:{port}", {**first, "host": host, "port": port}) for host, port in nodes]

    def _node_connect(self, kwargs: dict):
        dbapi = self.driver.module
        try:
            return dbapi.connect(charset=self.CHARSET, **kwargs, autocommit=True)
        except dbapi.MySQLError as exc:
            raise ServerError(f"{self.NAME}: cannot reach a node of {self.display_url}: {exc}") from exc

    def _wsrep_status(self) -> dict[str, float]:
        """Node 1's numeric ``wsrep_%`` status variables."""
        out = {}
        for name, value in self.execute("SHOW GLOBAL STATUS LIKE 'wsrep\\_%'"):
            try:
                out[str(name).lower()] = float(value)
            except (TypeError, ValueError):
                continue
        return out

    # -- tables ------------------------------------------------------------------------------
    def _count_rows(self, table: str) -> int:
        """The rows of ``table`` on every node, which must agree: nothing lost, nothing doubled.

        Each node's count runs with ``wsrep_sync_wait = 1``: the node first applies every write set
        the cluster ordered before the read (bounded by :attr:`SYNC_WAIT_S` through the
        connection's read timeout), so a lagging applier is waited for, not taken for a loss.

        Raises
        ------
        DataLossError
            In one line, naming each node's count, when they differ.
        """
        sql = f"SELECT count(*) FROM {self.sql.quote(table)}"
        counts = []
        for where, kwargs in self.node_logins():
            conn = self._node_connect({**kwargs, "read_timeout": self.SYNC_WAIT_S})
            try:
                with conn.cursor() as cur:
                    cur.execute("SET SESSION wsrep_sync_wait = 1")
                    cur.execute(sql)
                    counts.append((where, int(cur.fetchall()[0][0])))
            except self.driver.module.MySQLError as exc:
                raise ServerError(f"{self.NAME}: counting {table} on {where} failed (a node that did not catch up "
                                  f"within {self.SYNC_WAIT_S} s, or is not synced): {exc}") from exc
            finally:
                conn.close()
        if len({n for _, n in counts}) > 1:
            raise DataLossError(f"{self.NAME}: the nodes disagree on {table}: "
                                + ", ".join(f"{where} holds {n}" for where, n in counts))
        return counts[0][1]
