"""A MariaDB Galera cluster of N ``mariadbd`` nodes on 127.0.0.1, in one private folder under ``.lab/``."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import ClassVar

import psutil

from ingestlab.engines.mariadb.server import (
    MariaDBServer,
    _check_settings,
    _private_umask,
)
from ingestlab.engines.mariadb.server import (
    unavailable_reason as mariadb_unavailable_reason,
)
from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.polling import poll_or_error
from ingestlab.servers.base import PID_FILE, LocalServer, free_port, processes_using, stop_processes

#: Environment variable naming Galera's provider library (``libgalera_smm.so``) when it is not where Debian puts it.
PROVIDER_ENV = "INGESTLAB_GALERA_PROVIDER"
#: Where distributions install galera-4's provider (Debian/Ubuntu first); the first that exists is used.
PROVIDER_PATHS = ("/usr/lib/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so",
                  "/usr/lib/x86_64-linux-gnu/galera/libgalera_smm.so", "/usr/lib64/galera-4/libgalera_smm.so",
                  "/usr/lib64/galera/libgalera_smm.so")
#: Nodes of a cluster unless told otherwise.
DEFAULT_NODES = 3
# The nodes look their helper programs up on this PATH only (not the lab's).
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def find_provider() -> Path:
    """The path of Galera's provider library, ``libgalera_smm.so``.

    Raises
    ------
    EngineUnavailableError
        In one line, saying how to install it.
    """
    named = os.environ.get(PROVIDER_ENV)
    for candidate in ([named] if named else PROVIDER_PATHS):
        if Path(candidate).is_file():
            return Path(candidate)
    where = f"${PROVIDER_ENV}={named}" if named else ", ".join(PROVIDER_PATHS)
    raise EngineUnavailableError(f"Galera's provider libgalera_smm.so is not at {where}: install galera-4 "
                                 f"(Debian: `apt-get install -y galera-4`, it comes with mariadb-server) or point "
                                 f"${PROVIDER_ENV} at it")


def unavailable_reason() -> str | None:
    """Why the lab cannot start a Galera cluster here (MariaDB, galera-4 or openssl missing), or None."""
    reason = mariadb_unavailable_reason()
    if reason is not None:
        return reason
    try:
        find_provider()
    except EngineUnavailableError as exc:
        return str(exc)
    if shutil.which("openssl") is None:
        return "openssl (the command-line tool) is not installed: the lab makes the cluster's TLS certificates with it"
    return None


class GaleraNode(MariaDBServer):
    """One node of a :class:`GaleraServer`: a ``mariadbd`` in ``<cluster>/node<i>/``, never started on its own.

    It is MariaDB's private server (its command line, its installation, its login) with the
    cluster's socket folder, password and settings; the cluster launches and stops it.
    """

    KIND = "galera"

    def __init__(self, cluster: "GaleraServer", index: int):
        super().__init__(cluster.directory / f"node{index}", keep=True)
        self.cluster = cluster
        self.index = index
        #: Group communication (gcomm) and incremental state transfer ports, picked free at each start.
        self.gcomm_port: int | None = None
        self.ist_port: int | None = None
        self.proc: subprocess.Popen | None = None

    @property
    def socket_path(self) -> Path:
        return self.cluster.private_socket_dir() / f"node{self.index}.sock"

    @property
    def tmpdir(self) -> Path:
        path = self.cluster.private_socket_dir() / f"tmp{self.index}"
        if not path.exists():
            path.mkdir()
            self.give(path, 0o700)
        return path

    @property
    def password(self) -> str:
        return self.cluster.password

    def private_socket_dir(self) -> Path:
        return self.cluster.private_socket_dir()


class GaleraServer(LocalServer):
    """A Galera cluster of :attr:`nodes` ``mariadbd`` nodes, each in ``<directory>/node<i>/``, started as one server.

    Every node is MariaDB's private server (:class:`~ingestlab.engines.mariadb.server.MariaDBServer`:
    socket only in the cluster's private 0700 socket folder, root with the cluster's random password,
    ``--no-defaults``, OS user ``mysql`` when the lab is root) plus ``wsrep_on=ON`` with galera-4's
    provider, ``binlog_format=ROW``, ``innodb_autoinc_lock_mode=2``, and group communication on a
    port of 127.0.0.1 picked free at each start, over TLS with certificates made for this cluster
    (:meth:`_make_certificates`). Settings go to every node as ``--name=value``; :meth:`restart`
    stops the cluster and starts it again with them. :meth:`connect_kwargs` reaches node 1;
    :meth:`node_connect_kwargs` any node.

    **No state transfer, ever.** Joining a running cluster makes a node ask for a state transfer
    (Galera 4 numbers even the membership changes, so a joiner is always behind): with rsync that
    took the issue's hand-made cluster ~30 s and opens an rsync daemon without authentication on
    the joiner for its duration. Instead, node 1 alone is installed and bootstrapped once (the
    password, the database), then at every start node 1's data folder, stopped cleanly, is copied
    to the others, and every node gets the same saved primary view (``gvwstate.dat``, Galera's
    own file for restoring a cluster after all nodes stopped): started together, they restore the
    primary component with the same state and Galera logs ``state transfer needed: no``. Measured
    here (2 cores, load 10): install 4 s, bootstrap + copy 2.6 s, three nodes synced 2.8 s later.
    Should a node still ask for one, the snapshot method is ``mysqldump`` towards 127.0.0.1 port 1
    (only root may listen there): it fails, the start fails with the node's log, and no listener
    opens and no data leaves.
    """

    SHARES_THE_CLIENTS_CPU = False  # its nodes work at the same time

    KIND = "galera"
    SYSTEM_USER = GaleraNode.SYSTEM_USER
    #: Seconds for the whole cluster to form (every node synced, cluster size N), and for a node to stop.
    START_TIMEOUT_S: ClassVar[float] = 90.0
    STOP_TIMEOUT_S: ClassVar[float] = 30.0
    #: Group-communication cache per node: small, since no node ever serves a state transfer from it.
    GCACHE_SIZE: ClassVar[str] = "16M"
    #: Options the lab sets itself on every node; a setting may not override them.
    RESERVED: ClassVar[frozenset[str]] = MariaDBServer.RESERVED | frozenset({
        "wsrep_on", "wsrep_provider", "wsrep_provider_options", "wsrep_cluster_address", "wsrep_cluster_name",
        "wsrep_node_address", "wsrep_node_name", "wsrep_node_incoming_address", "wsrep_sst_method",
        "wsrep_sst_receive_address", "wsrep_sst_donor", "wsrep_new_cluster", "wsrep_start_position",
        "wsrep_notify_cmd", "binlog_format", "innodb_autoinc_lock_mode",
    })

    def __init__(self, directory=None, *, keep: bool = False, nodes: int = DEFAULT_NODES):
        super().__init__(directory, keep=keep)
        if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= 9:
            raise ServerError(f"a Galera cluster of {nodes!r} nodes: give 1 to 9")
        self.provider = find_provider()
        self.nodes = [GaleraNode(self, i) for i in range(1, nodes + 1)]

    # -- paths -----------------------------------------------------------------------------
    @property
    def tls_dir(self) -> Path:
        """The cluster's certificates: its CA and each node's certificate and key (0600, the node user's)."""
        return self.directory / "tls"

    @property
    def socket_path(self) -> Path:
        """Node 1's socket, where the lab's measuring connection goes."""
        return self.nodes[0].socket_path

    @property
    def log_file(self) -> Path:
        """Node 1's error log."""
        return self.nodes[0].log_file

    # -- lifecycle ---------------------------------------------------------------------------
    def _start(self) -> None:
        _check_settings(self.settings, self.RESERVED)
        _check_option_path(self.directory)
        self.private_socket_dir()
        for node in self.nodes:
            node.directory.mkdir(exist_ok=True)
            node.give(node.directory, 0o700)
        if not self.tls_dir.is_dir():
            self._make_certificates()
        if not self.nodes[0].installed:
            self._bootstrap_first_node()
        self._launch()

    def _bootstrap_first_node(self) -> None:
        """Install node 1, run it alone as a new cluster to set the password and create the database, stop it."""
        first = self.nodes[0]
        first._install()
        self._spawn(first, bootstrap=True)
        first._proc = first.proc  # MariaDB's readiness check watches it
        try:
            first._wait_ready()
        except ServerError as exc:  # MariaDB's message carries the log's tail on lines of its own
            raise ServerError(f"galera node 1 did not start alone to be set up ({str(exc).splitlines()[0]}); "
                              f"{first.log_file} ends: {_log_line(first)}") from exc
        self._wait_ready_for_use(first)
        first._secure()
        self._stop()

    def _wait_ready_for_use(self, node: GaleraNode) -> None:
        """Wait until a node that accepts logins also takes statements (``wsrep_ready``; before it, error 1047).

        A node accepts a login a moment before its group is ready; under load the setup's first query
        fell in that moment ("WSREP has not yet prepared node for application use").
        """
        import pymysql

        def ready() -> bool:
            with pymysql.connect(unix_socket=str(node.socket_path), user="root", password="") as conn, \
                    conn.cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep_ready'")
                row = cur.fetchone()
            return bool(row) and row[1] == "ON"

        done, last = poll_or_error(ready, timeout_s=self.START_TIMEOUT_S, interval_s=0.05,
                                   retry_on=pymysql.err.MySQLError)
        if not done:
            raise ServerError(f"galera node {node.index} accepted logins but was not ready for statements within "
                              f"{self.START_TIMEOUT_S:.0f} s{f' ({last})' if last else ''}; "
                              f"{node.log_file} ends: {_log_line(node)}") from last

    def _launch(self) -> None:
        """Copy node 1's data to the others with one saved primary view, start every node, wait until synced."""
        self._seed_nodes()
        for node in self.nodes:
            self._spawn(node)
        (self.directory / PID_FILE).write_text(f"{self.nodes[0].proc.pid}\n")
        self._wait_formed()

    def _seed_nodes(self) -> None:
        first = self.nodes[0]
        for node in self.nodes[1:]:
            shutil.rmtree(node.datadir, ignore_errors=True)
            # cp -a keeps the node user's ownership and modes; the copies start from node 1's clean shutdown
            subprocess.run(["cp", "-a", "--reflink=auto", str(first.datadir), str(node.datadir)], check=True,
                           capture_output=True)
        members = [uuid.uuid1() for _ in self.nodes]
        for node, me in zip(self.nodes, members):
            view = "".join(f"member: {m} 0\n" for m in members)
            path = node.datadir / "gvwstate.dat"
            path.write_text(f"my_uuid: {me}\n#vwbeg\nview_id: 3 {members[0]} 1\nbootstrap: 0\n{view}#vwend\n")
            node.give(path, 0o600)
        for node in self.nodes:
            node.gcomm_port, node.ist_port = free_port(), free_port()

    def node_command(self, node: GaleraNode, *, bootstrap: bool = False) -> list[str]:
        """``node``'s ``mariadbd`` command line: MariaDB's (:meth:`MariaDBServer.command`) plus the cluster's options."""
        peers = ",".join(f"127.0.0.1:{n.gcomm_port}" for n in self.nodes if n.gcomm_port)
        tls = self.tls_dir
        provider_options = ";".join([
            f"gmcast.listen_addr=tcp://127.0.0.1:{node.gcomm_port}",
            f"ist.recv_addr=127.0.0.1:{node.ist_port}",
            f"gcache.size={self.GCACHE_SIZE}",
            "socket.ssl=yes", f"socket.ssl_ca={tls / 'ca.pem'}",
            f"socket.ssl_cert={tls / f'node{node.index}.pem'}", f"socket.ssl_key={tls / f'node{node.index}.key'}",
        ])
        node.settings = {
            **self.settings,
            "wsrep_on": "ON", "wsrep_provider": str(self.provider), "binlog_format": "ROW",
            "innodb_autoinc_lock_mode": "2", "wsrep_cluster_name": self.directory.name,
            "wsrep_node_name": f"node{node.index}", "wsrep_node_address": f"127.0.0.1:{node.gcomm_port}",
            "wsrep_cluster_address": "gcomm://" + ("" if bootstrap else peers),
            "wsrep_provider_options": provider_options,
            "wsrep_sst_method": "mysqldump", "wsrep_sst_receive_address": "127.0.0.1:1",
        }
        return node.command()

    def _spawn(self, node: GaleraNode, *, bootstrap: bool = False) -> None:
        if node.gcomm_port is None:
            node.gcomm_port, node.ist_port = free_port(), free_port()
        with open(node.private_file(node.log_file), "ab") as log:
            node.proc = subprocess.Popen(self.node_command(node, bootstrap=bootstrap), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
                                         env={**_private_umask(), "PATH": _SYSTEM_PATH})

    def node_status(self, node: GaleraNode) -> dict[str, str]:
        """``node``'s ``wsrep_%`` status variables (name → value)."""
        import pymysql

        with pymysql.connect(**node._login_kwargs(), connect_timeout=2, read_timeout=5) as conn, \
                conn.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep\\_%'")
            return {str(k): str(v) for k, v in cur.fetchall()}

    def _wait_formed(self) -> None:
        """Poll every node until each is ``Synced``, ready, and sees all N nodes; else raise with the laggard's log."""
        import pymysql

        n = len(self.nodes)
        seen: dict[int, str] = {}

        def formed() -> bool:
            for node in self.nodes:
                if node.proc.poll() is not None:
                    raise ServerError(f"galera node {node.index} exited with code {node.proc.returncode} while the "
                                      f"cluster formed; {node.log_file} ends: {_log_line(node)}")
                if not node.socket_path.exists():
                    seen[node.index] = "not accepting connections yet"
                    return False
                status = self.node_status(node)
                state = (status.get("wsrep_cluster_size"), status.get("wsrep_ready"),
                         status.get("wsrep_local_state_comment"))
                seen[node.index] = "cluster size {}, ready {}, {}".format(*state)
                if state != (str(n), "ON", "Synced"):
                    return False
            return True

        done, last = poll_or_error(formed, timeout_s=self.START_TIMEOUT_S, interval_s=0.05,
                                   retry_on=pymysql.err.MySQLError)
        if done:
            return
        laggard = next((node for node in self.nodes if seen.get(node.index, "").find(f"size {n}, ready ON, Synced") < 0),
                       self.nodes[0])
        raise ServerError(f"the galera cluster did not form within {self.START_TIMEOUT_S:.0f} s: node {laggard.index} "
                          f"is {seen.get(laggard.index, 'unknown')}{f' ({last})' if last else ''}; "
                          f"{laggard.log_file} ends: {_log_line(laggard)}") from last

    def _stop(self) -> None:
        """Stop nodes N…2, then node 1 (so that its clean shutdown holds everything), each SIGTERM then SIGKILL.

        A cluster stopped while it starts gets MariaDB's :attr:`~MariaDBServer.STARTING_STOP_S` before SIGKILL, not
        :attr:`STOP_TIMEOUT_S`: a node still waiting for its primary component ignores SIGTERM (a SIGTERM 1 s into a
        start took the whole 30 s in 1 of 10 test runs, 2026-12-01), and a cluster not yet formed holds nothing.
        """
        timeout_s = self.STOP_TIMEOUT_S if self.running else MariaDBServer.STARTING_STOP_S
        for group in (self.nodes[1:], self.nodes[:1]):
            procs = []
            for node in group:
                proc, node.proc, node._proc = node.proc, None, None
                if proc is not None and proc.poll() is None:
                    try:
                        procs.append(psutil.Process(proc.pid))
                    except psutil.NoSuchProcess:
                        pass
            stop_processes(procs, timeout_s)
        # a cluster started by another object or process: whatever still runs from this folder
        strays = []
        for pid in processes_using(self.directory):
            try:
                strays.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass
        stop_processes(strays, timeout_s)
        (self.directory / PID_FILE).unlink(missing_ok=True)

    #: Stop the cluster and start it with exactly ``settings`` on every node (``{}`` resets them): MariaDB's
    #: restart (names checked before anything stops, then :meth:`_stop` and :meth:`_launch`).
    restart = MariaDBServer.restart

    def connect_kwargs(self) -> dict:
        """PyMySQL ``connect()`` arguments of node 1 (socket, ``root`` and its password, database ``ingestlab``)."""
        return self.nodes[0].connect_kwargs()

    def node_connect_kwargs(self) -> list[dict]:
        """Every node's PyMySQL ``connect()`` arguments, node 1 first."""
        return [node.connect_kwargs() for node in self.nodes]

    # -- privacy -----------------------------------------------------------------------------
    def _make_certificates(self) -> None:
        """A CA for this cluster and a certificate per node signed by it, in :attr:`tls_dir`; the CA's key is deleted.

        Galera's group communication has no authentication of its own: with ``socket.ssl`` every
        connection between nodes (and an incremental state transfer, were there one) is TLS that
        requires the peer's certificate to be signed by ``socket.ssl_ca``. Only this cluster's
        nodes hold such a certificate, and with the CA's key gone nobody can sign another.
        """
        folder = self.tls_dir
        folder.mkdir(mode=0o700, exist_ok=True)
        self.give(folder, 0o700)
        ca_key, ca = folder / "ca.key", folder / "ca.pem"
        new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try:
            _openssl(["req", "-x509", *new_key, "-keyout", ca_key, "-out", ca, "-days", "30",
                      "-subj", f"/CN=ingestlab {self.directory.name} CA"])
            for node in self.nodes:
                key, csr, cert = (folder / f"node{node.index}.{ext}" for ext in ("key", "csr", "pem"))
                _openssl(["req", *new_key, "-keyout", key, "-out", csr,
                          "-subj", f"/CN=ingestlab {self.directory.name} node{node.index}"])
                _openssl(["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-out", cert, "-days", "30",
                          "-set_serial", str(uuid.uuid4().int >> 64)])
                csr.unlink()
        finally:
            ca_key.unlink(missing_ok=True)
        for path in folder.iterdir():
            self.give(path, 0o600)

    def pid(self) -> int | None:
        """Node 1's process id, or None when it is not running."""
        proc = self.nodes[0].proc
        if proc is not None and proc.poll() is None:
            return proc.pid
        return super().pid()


def _openssl(args: list) -> None:
    try:
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60, umask=0o077)
    except subprocess.CalledProcessError as exc:
        raise ServerError(f"openssl {args[0]} failed making the cluster's certificates: "
                          f"{exc.stderr.decode(errors='replace').strip()[-300:]}") from exc


def _check_option_path(directory: Path) -> None:
    """Refuse a folder whose path would break Galera's ``name=value;…`` provider options."""
    if any(c in str(directory) for c in ";=,\n"):
        raise ServerError(f"the cluster's folder {directory} holds ';', '=' or ',': Galera's provider options cannot "
                          "name it; set $INGESTLAB_LAB_DIR to a plain path")


def _log_line(node: GaleraNode, n_lines: int = 3) -> str:
    """The last error lines of ``node``'s log (else its last lines), joined into one line."""
    lines = [line.strip() for line in node.log_tail(4000).splitlines() if line.strip()]
    errors = [line for line in lines if "[ERROR]" in line]
    return " | ".join((errors or lines)[-n_lines:]) or "(empty)"
