"""The journal of settings changed on a user's server: keyed by the connection, never holding a password."""

from __future__ import annotations

import stat

import pytest

from ingestlab import journal
from ingestlab.conninfo import Connection


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    return tmp_path / "lab"


def test_the_key_is_the_server_and_account_whatever_the_password_and_lab_keys():
    urls = ["mysql://root:pw@db:3306/lab?set_global=true", "mysql+pymysql://root@db:3306/lab?passwd=other",
            "mysql://root:***@db:3306/lab?label=x"]
    assert {journal.key(u) for u in urls} == {"mysql://root@db:3306/lab"}
    assert journal.key(Connection.parse(urls[0])) == "mysql://root@db:3306/lab"


def test_a_socket_stands_for_the_host():
    assert journal.key("mysql://root@localhost/lab?unix_socket=/run/m.sock") == "mysql://root@localhost:/lab"
    assert journal.key("postgresql://u@/db?host=/run/pg") == "postgresql://u@/run/pg:/db"


def test_record_keeps_the_first_value_and_no_password(lab):
    connection = Connection.parse("mysql://root@db:3306/lab?password=hunter2&set_global=true")
    journal.record(connection, "innodb_flush_log_at_trx_commit", 1)
    journal.record(connection, "innodb_flush_log_at_trx_commit", 2)  # the first one noted wins
    entry = journal.pending("mysql://root:elsewise@db:3306/lab")  # another spelling of the same server
    assert entry["settings"] == {"innodb_flush_log_at_trx_commit": "1"}
    assert "hunter2" not in journal.path().read_text() and entry["url"].startswith("mysql://root:***@db:3306/lab")
    assert stat.S_IMODE(journal.path().stat().st_mode) == 0o600


def test_forget_drops_the_entry_with_its_last_setting(lab):
    url = "mysql://root:pw@db:3306/lab"
    journal.record(url, "a", "x")
    journal.record(url, "b", None)
    journal.forget(Connection.parse(url), "a")
    assert journal.pending(url)["settings"] == {"b": None}
    journal.forget(url, "b")
    assert journal.pending(url) is None
