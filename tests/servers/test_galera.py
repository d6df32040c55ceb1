"""The lab's Galera cluster: it forms, replicates, keeps strangers out of its group and leaves nothing when killed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pymysql
import pytest

from ingestlab.engines.galera.server import PROVIDER_ENV, GaleraServer, find_provider, unavailable_reason
from ingestlab.engines.mariadb.server import unavailable_reason as mariadb_unavailable_reason
from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.servers import reap
from ingestlab.servers.base import is_running, processes_using
from tests.servers.local_server import LocalServerContract, _no_other_user, listening_tcp_ports

needs_galera = pytest.mark.skipif(unavailable_reason() is not None, reason=unavailable_reason() or "")


def _query(kwargs: dict, sql: str) -> list[tuple]:
    with pymysql.connect(**kwargs, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


@pytest.fixture(scope="class")
def cluster():
    """One 3-node cluster for :class:`TestOneCluster` (in the lab folder: its nodes run as user mysql when the tests are root)."""
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    with GaleraServer() as server:
        yield server


@needs_galera
class TestOneCluster:
    """Tests of one running cluster (one cluster a worker that runs any of them)."""

    def test_three_nodes_form_one_synced_cluster_over_tls_on_loopback(self, cluster):
        uuids = set()
        for node in cluster.nodes:
            status = cluster.node_status(node)
            assert (status["wsrep_cluster_size"], status["wsrep_ready"], status["wsrep_local_state_comment"]) == \
                ("3", "ON", "Synced")
            uuids.add(status["wsrep_cluster_state_uuid"])
            options = dict(_query(node.connect_kwargs(), "SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                                                         "('wsrep_provider_options', 'binlog_format', "
                                                         "'innodb_autoinc_lock_mode', 'skip_networking')"))
            assert "socket.ssl = YES" in options["wsrep_provider_options"]
            assert (options["binlog_format"], options["innodb_autoinc_lock_mode"], options["skip_networking"]) == \
                ("ROW", "2", "ON")
            # its only TCP listener is group communication, on loopback
            assert listening_tcp_ports(node.proc.pid) == [node.gcomm_port]
            log = node.log_file.read_text(errors="replace")
            assert "state transfer needed: no" in log and "rsync" not in log  # formed without any state transfer
        assert len(uuids) == 1


    def test_an_insert_through_node_1_is_on_node_3(self, cluster):
        first, last = cluster.nodes[0], cluster.nodes[-1]
        _query(first.connect_kwargs(), "CREATE TABLE IF NOT EXISTS rep (id INT PRIMARY KEY, v VARCHAR(10))")
        _query(first.connect_kwargs(), "INSERT INTO rep VALUES (1, 'one')")
        with pymysql.connect(**last.connect_kwargs(), autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("SET SESSION wsrep_sync_wait = 1")
            cur.execute("SELECT v FROM rep WHERE id = 1")
            assert cur.fetchall() == (("one",),)


    def test_keys_and_certificates_are_private_to_the_node_user(self, cluster):
        tls = cluster.tls_dir
        assert oct(tls.stat().st_mode & 0o777) == "0o700"
        names = sorted(p.name for p in tls.iterdir())
        assert names == ["ca.pem", "node1.key", "node1.pem", "node2.key", "node2.pem", "node3.key", "node3.pem"]
        user = cluster.system_user()
        for path in tls.iterdir():
            assert oct(path.stat().st_mode & 0o777) == "0o600"
            if user is not None:
                assert path.stat().st_uid == user.pw_uid
        for node in cluster.nodes:
            assert oct(node.directory.stat().st_mode & 0o777) == "0o700"


    def test_another_local_user_cannot_join_the_group(self, cluster):
        """``nobody`` speaks TLS to every node's gcomm port with a certificate of its own, and plain TCP: both are cut off."""
        reason = _no_other_user()
        if reason:
            pytest.skip(reason)
        folder = Path(tempfile.mkdtemp(prefix="ingestlab-intruder-"))  # nobody's own folder, its own key
        try:
            shutil.chown(folder, "nobody")
            key, cert = folder / "key.pem", folder / "cert.pem"
            subprocess.run(["runuser", "-u", "nobody", "--", "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
                            "-subj", "/CN=intruder"], check=True, capture_output=True)
            res = _probe_as_nobody(cluster, key, cert)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        assert res.returncode == 0, res.stdout + res.stderr
        assert res.stdout.count("cut off") == 2 * len(cluster.nodes), res.stdout
        for node in cluster.nodes:
            assert cluster.node_status(node)["wsrep_cluster_size"] == "3"
        refusals = [line for node in cluster.nodes for line in node.log_file.read_text(errors="replace").splitlines()
                    if "Failed to establish connection" in line]
        assert any("certificate verify failed" in line for line in refusals), (res.stdout, refusals)


def _probe_as_nobody(cluster, key, cert) -> subprocess.CompletedProcess:
    """As ``nobody``: TLS with ``key``/``cert``, then plain TCP, to each node's gcomm port; none may answer."""
    ports = [node.gcomm_port for node in cluster.nodes]
    probe = textwrap.dedent(f"""
        import socket, ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # a client that trusts anyone, with a certificate of its own
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        ctx.load_cert_chain({str(cert)!r}, {str(key)!r})
        for port in {ports!r}:
            for mode in ("tls", "plain"):
                raw = socket.create_connection(("127.0.0.1", port), timeout=3)  # a node that keeps a stranger waiting: cut off
                try:
                    if mode == "tls":
                        s = ctx.wrap_socket(raw)
                        s.sendall(b"x" * 64)
                    else:
                        s = raw
                        s.sendall(b"\\x00" * 64)
                    got = s.recv(4096)
                except (OSError, ssl.SSLError) as exc:  # refused, reset, or nothing at all within the timeout
                    print(port, mode, "cut off:", type(exc).__name__)
                else:
                    assert not got, "the node answered a stranger"
                    print(port, mode, "cut off: closed")
    """)
    return subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-I", "-c", probe],
                          capture_output=True, text=True, timeout=120)


@needs_galera
def test_a_sigkilled_owner_leaves_no_node_once_reaped(lab_tmp):
    """The runner killed with SIGKILL while its cluster runs: the reaper stops every node, not only node 1."""
    folder = lab_tmp / "galera-999997"
    code = textwrap.dedent(f"""
        import time
        from ingestlab.engines.galera.server import GaleraServer
        s = GaleraServer({str(folder)!r}).start()
        print(*[n.proc.pid for n in s.nodes], s.socket_dir, flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    *pids, socket_dir = proc.stdout.readline().split()
    pids = [int(p) for p in pids]
    assert len(pids) == 3 and all(is_running(p) for p in pids)
    proc.kill()  # SIGKILL: no atexit, no handler
    proc.wait()
    assert all(is_running(p) for p in pids)  # nobody stopped them
    assert [p.name for p in reap(lab_tmp)] == [folder.name]
    assert not any(is_running(p) for p in pids)
    assert not folder.exists() and not Path(socket_dir).exists() and not processes_using(folder)


class TestGaleraServer(LocalServerContract):
    server = "ingestlab.engines.galera.server:GaleraServer"
    kind = "galera"

    @classmethod
    def skip_reason(cls) -> str | None:
        return unavailable_reason()

    def test_nobody_else_can_connect_over_socket_or_tcp(self, lab_tmp):
        pytest.skip("a cluster listens on TCP by design (group communication, on loopback over TLS): "
                    "test_another_local_user_cannot_join_the_group covers it")


@needs_galera
def test_a_node_that_cannot_start_fails_the_start_in_one_line_with_its_log(lab_tmp):
    server = GaleraServer(lab_tmp / "galera-1")
    server.settings = {"no_such_option": "1"}
    with pytest.raises(ServerError, match="unknown variable") as info:
        server.start()
    assert "\n" not in str(info.value)
    assert not server.directory.exists() and not server.running


@needs_galera
def test_reserved_options_are_refused_before_anything_starts(lab_tmp):
    server = GaleraServer(lab_tmp / "galera-1")
    for name in ("wsrep_provider_options", "wsrep_sst_method", "wsrep_cluster_address", "binlog_format"):
        server.settings = {name: "x"}
        with pytest.raises(ServerError, match="reserved"):
            server.start()
        assert not any(is_running(p) for p in [server.pid()] if p)


def test_a_missing_provider_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv(PROVIDER_ENV, str(tmp_path / "libgalera_smm.so"))
    with pytest.raises(EngineUnavailableError, match="apt-get install -y galera-4"):
        find_provider()
    if mariadb_unavailable_reason() is None:  # else MariaDB's own reason comes first
        assert "galera-4" in unavailable_reason() and "\n" not in unavailable_reason()
