"""Servers' data folders copied from a template made once per build: each server keeps a password of its own."""

from __future__ import annotations

import logging
import os
import time

import psycopg2
import pymysql
import pytest

from ingestlab.engines.mariadb.server import MariaDBServer, unavailable_reason
from ingestlab.engines.postgres.server import PENDING_PASSWORD, PostgresServer
from ingestlab.servers import templates
from ingestlab.servers.templates import CACHE_ENV, Template, cache_dir

needs_mariadb = pytest.mark.skipif(unavailable_reason() is not None, reason=unavailable_reason() or "")


@pytest.fixture
def own_templates(lab_tmp, monkeypatch):
    """An empty templates folder of this test's own."""
    folder = lab_tmp / "templates"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


def _only_template(folder, kind):
    (found,) = [p for p in folder.iterdir() if p.name.startswith(f"{kind}-")]
    return found


def _identifier(server: PostgresServer) -> int:
    with psycopg2.connect(**server.connect_kwargs()) as conn, conn.cursor() as cur:
        cur.execute("SELECT system_identifier FROM pg_control_system()")
        return cur.fetchone()[0]


def _refused(server: PostgresServer, password: str) -> bool:
    try:
        psycopg2.connect(**{**server.connect_kwargs(), "password": password}).close()
    except psycopg2.OperationalError as exc:
        return "password authentication failed" in str(exc)
    return False


def test_a_second_postgres_is_the_templates_copy_and_takes_a_password_of_its_own(own_templates, lab_tmp):
    with PostgresServer(lab_tmp / "pg-1") as first:
        template = _only_template(own_templates, "postgres")
        secret = (template / templates.SECRET).read_text().strip()
        assert oct(template.stat().st_mode & 0o777) == "0o700"
        assert oct((template / templates.SECRET).stat().st_mode & 0o777) == "0o600"
        with PostgresServer(lab_tmp / "pg-2") as second:
            # initdb gives every cluster a new identifier: the same one is a copy
            assert _identifier(second) == _identifier(first)
            assert first.password != second.password and secret not in (first.password, second.password)
            assert _refused(second, secret) and _refused(first, secret)
            assert not (second.directory / PENDING_PASSWORD).exists()
            assert secret not in second.log_file.read_text() + first.log_file.read_text()


def test_a_password_not_yet_taken_when_the_server_stopped_is_taken_at_its_next_start(own_templates, lab_tmp,
                                                                                       monkeypatch):
    with PostgresServer(lab_tmp / "pg-1"):
        pass
    server = PostgresServer(lab_tmp / "pg-2", keep=True)
    with monkeypatch.context() as m:  # as if killed between its start and the password's change
        m.setattr(PostgresServer, "_take_password", lambda self: None)
        with server:
            pass
    assert (server.directory / PENDING_PASSWORD).exists()
    with server:
        assert not _refused(server, server.password)
    assert not (server.directory / PENDING_PASSWORD).exists()


def test_a_copy_that_fails_makes_the_data_folder_anew(own_templates, lab_tmp, monkeypatch, caplog):
    with PostgresServer(lab_tmp / "pg-1") as first:
        pass

    def failing(source, dest):
        (dest / "PG_VERSION").write_text("half a copy\n")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(templates, "_copy", failing)
    with caplog.at_level(logging.WARNING), PostgresServer(lab_tmp / "pg-2") as second:
        assert not _refused(second, second.password)
        assert not (second.directory / PENDING_PASSWORD).exists()
    assert "could not copy the server template" in caplog.text and first.password != second.password


@needs_mariadb
def test_a_second_mariadb_is_the_templates_copy_and_secured_with_its_own_password(own_templates, lab_tmp):
    with MariaDBServer(lab_tmp / "mariadb-1") as first:
        assert (first.directory / "install.log").exists()
        with MariaDBServer(lab_tmp / "mariadb-2") as second:
            assert not (second.directory / "install.log").exists()  # mariadb-install-db did not run
            with pymysql.connect(**second.connect_kwargs()) as conn, conn.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM mysql.global_priv WHERE User = 'root'")
                assert cur.fetchone() == (1,)
            with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
                pymysql.connect(unix_socket=str(second.socket_path), user="root", password="")
            with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
                pymysql.connect(**{**second.connect_kwargs(), "password": first.password})
    assert _only_template(own_templates, "mariadb")


def test_no_templates_where_asked_or_where_another_user_could_change_them(lab_tmp, monkeypatch, caplog):
    monkeypatch.setenv(CACHE_ENV, "0")
    assert cache_dir() is None and Template("postgres", ["x"]).path is None
    shared = lab_tmp / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone may write here, and it is not sticky
    monkeypatch.setenv(CACHE_ENV, str(shared / "templates"))
    with caplog.at_level(logging.WARNING):
        assert cache_dir() is None
    assert "other users can write" in caplog.text and not (shared / "templates").exists()
    open_to_all = lab_tmp / "open"
    open_to_all.mkdir(mode=0o755)
    open_to_all.chmod(0o755)
    monkeypatch.setenv(CACHE_ENV, str(open_to_all))
    assert cache_dir() is None
    monkeypatch.setenv(CACHE_ENV, str(lab_tmp / "mine"))
    assert cache_dir() == lab_tmp / "mine" and oct((lab_tmp / "mine").stat().st_mode & 0o777) == "0o700"


def test_a_template_half_kept_by_a_killed_process_or_of_a_build_gone_is_removed_and_a_new_build_makes_its_own(
        own_templates, lab_tmp):
    source = lab_tmp / "data"
    source.mkdir()
    (source / "file").write_text("x")
    binary, gone = lab_tmp / "postgres", lab_tmp / "removed-checkout-postgres"
    binary.write_bytes(b"one")
    gone.write_bytes(b"old")
    old_build = Template("postgres", templates.build_identity(gone))
    old_build.keep(source, "s0")
    gone.unlink()
    stale, fresh = own_templates / ".postgres-0-abc", own_templates / ".postgres-1-def"
    stale.mkdir()
    fresh.mkdir()
    old = time.time() - templates.STALE_S - 60
    os.utime(stale, (old, old))
    first = Template("postgres", templates.build_identity(binary))
    first.keep(source, "s1")
    assert not stale.exists() and fresh.exists() and not old_build.path.exists() and first.path.exists()
    binary.write_bytes(b"one and two")  # a new build
    rebuilt = Template("postgres", templates.build_identity(binary))
    assert first.path != rebuilt.path and not rebuilt.copy_into(lab_tmp / "to")
    first.keep(lab_tmp / "elsewhere", "s2")  # one there already: kept as it is
    assert first.secret == "s1" and first.copy_into(lab_tmp / "to") and (lab_tmp / "to" / "file").read_text() == "x"
    rebuilt.keep(source, "s3")
    assert not first.path.exists() and rebuilt.secret == "s3"  # its build's binary changed
