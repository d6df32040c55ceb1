"""The lab's private mariadbd: settings as options, its own socket and port, clean stops, reaping."""

from __future__ import annotations

import socket

import pymysql
import pytest

from ingestlab import engines
from ingestlab.engines.mariadb.server import BIN_DIR_ENV, MariaDBServer, unavailable_reason
from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.servers.base import is_running
from tests.servers.local_server import LocalServerContract

needs_mariadb = pytest.mark.skipif(unavailable_reason() is not None, reason=unavailable_reason() or "")


def _variables(server: MariaDBServer, *names: str) -> dict[str, tuple[str, str]]:
    marks = ", ".join(["%s"] * len(names))
    with pymysql.connect(**server.connect_kwargs()) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE, GLOBAL_VALUE_ORIGIN FROM "
                    f"information_schema.SYSTEM_VARIABLES WHERE LOWER(VARIABLE_NAME) IN ({marks})", names)
        return {n: (v, origin) for n, v, origin in cur.fetchall()}


@needs_mariadb
def test_restart_puts_exactly_the_given_settings_in_force(lab_tmp):
    server = MariaDBServer(lab_tmp / "mariadb-1")
    server.settings = {"innodb_flush_log_at_trx_commit": "2", "max_connections": "77"}
    with server:
        server.restart({"innodb_flush_log_at_trx_commit": "0"})
        got = _variables(server, "innodb_flush_log_at_trx_commit", "max_connections")
    assert got["innodb_flush_log_at_trx_commit"] == ("0", "COMMAND-LINE")
    assert got["max_connections"][1] == "COMPILE-TIME"


@needs_mariadb
def test_it_listens_on_a_private_socket_only_and_needs_its_password(lab_tmp):
    with MariaDBServer(lab_tmp / "mariadb-1") as server:
        got = _variables(server, "socket", "skip_networking", "datadir")
        assert got["socket"][0] == str(server.socket_path) and len(str(server.socket_path)) < 100
        assert got["skip_networking"][0] == "ON"
        assert got["datadir"][0].startswith(str(server.directory))
        assert oct(server.socket_dir.stat().st_mode & 0o777) == "0o700"
        assert oct(server.log_file.stat().st_mode & 0o777) == "0o600"
        with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
            pymysql.connect(unix_socket=str(server.socket_path), user="root", password="")


@needs_mariadb
def test_tcp_on_request_is_loopback_only(lab_tmp):
    with MariaDBServer(lab_tmp / "mariadb-1", tcp=True) as server:
        got = _variables(server, "bind_address", "port")
        assert got["bind_address"][0] == "127.0.0.1" and int(got["port"][0]) == server.port
        with socket.create_connection(("127.0.0.1", server.port), timeout=5):
            pass


@needs_mariadb
@pytest.mark.parametrize("name", ["max_connections=1 --skip-grant-tables", "datadir", "skip-grant-tables", "Port"])
def test_setting_names_are_checked_not_injected(lab_tmp, name):
    with MariaDBServer(lab_tmp / "mariadb-1") as server:
        pid = server.pid()
        with pytest.raises(ServerError, match="setting name"):
            server.restart({name: "1"})
        assert server.pid() == pid and is_running(pid)  # still up, untouched


@needs_mariadb
def test_a_server_that_cannot_start_fails_with_its_log(lab_tmp):
    server = MariaDBServer(lab_tmp / "mariadb-1")
    server.settings = {"no_such_option": "1"}
    with pytest.raises(ServerError, match="(?s)exited with code.*unknown variable"):
        server.start()
    assert not server.directory.exists() and not server.running


@needs_mariadb
def test_stop_is_a_clean_sigterm_shutdown(lab_tmp):
    server = MariaDBServer(lab_tmp / "mariadb-1", keep=True)
    with server:
        pid = server.pid()
    assert not is_running(pid)
    assert "Shutdown complete" in server.log_file.read_text()
    assert not (server.directory / "server.pid").exists()
    server.stop()  # idempotent


class TestMariaDBServer(LocalServerContract):
    server = "ingestlab.engines.mariadb.server:MariaDBServer"
    kind = "mariadb"

    @classmethod
    def skip_reason(cls) -> str | None:
        return unavailable_reason()


def test_missing_binaries_say_how_to_install_them(tmp_path, monkeypatch):
    monkeypatch.setenv(BIN_DIR_ENV, str(tmp_path))  # an empty directory: no mariadbd in it
    with pytest.raises(EngineUnavailableError, match="apt-get install -y mariadb-server"):
        MariaDBServer(tmp_path / "mariadb-1")
    with pytest.raises(EngineUnavailableError, match="mariadbd is not installed"):
        engines.get("mariadb")
    with pytest.raises(EngineUnavailableError, match="mariadbd"):
        engines.resolve("mariadb")  # what notebook 01's parameter check calls: fails before anything runs
