"""The MySQL adapter: its SQL in the MySQL dialect, and a server it does not manage (the lab's MariaDB reached by URL)."""

from __future__ import annotations

import pytest
from sqlglot import exp

from ingestlab import datagen, engines
from ingestlab.engines import capabilities
from ingestlab.engines.base import STUDY_COLUMNS
from ingestlab.engines.mariadb.server import unavailable_reason
from ingestlab.engines.mysql import MySQL
from ingestlab.errors import ConfigError, UnsupportedOperationError
from tests.engines._support import SQLValidator, parse_sql, render

COLS = [c for c, _ in STUDY_COLUMNS]
FLUSH = "innodb_flush_log_at_trx_commit"


def test_mysql_urls_select_the_mysql_adapter_without_connecting():
    for url in ("mysql://u:secret@127.0.0.1:1/db", "mysql+pymysql://u:secret@127.0.0.1:1/db"):
        engine = engines.from_url(url)
        assert engine.NAME == "mysql" and not engine.is_local and "secret" not in engine.display_url
    assert engines.from_url("mariadb://root@127.0.0.1:3306/ingestlab").NAME == "mariadb"


class TestMySQLSQL(SQLValidator):
    engine_class = MySQL

    @pytest.fixture
    def my(self):
        return engines.from_url("mysql://u@127.0.0.1:3306/db")

    @pytest.mark.parametrize("model", list(capabilities.of(MySQL, "table_models").MODELS))
    def test_every_model_parses(self, my, model):
        (sql,) = my.tables.ddl("t`x", STUDY_COLUMNS, model=model)
        self.validate(sql, tables=["t`x"])

    @pytest.mark.parametrize("model", ["no_key", "primary_key", "primary_key_indexes"])
    @pytest.mark.parametrize("n", [2, 8, 8192])
    def test_partitioning_is_by_key_of_the_first_column_in_n_partitions(self, my, model, n):
        # sqlglot 30.30's mysql dialect has no grammar for PARTITION BY KEY (MySQL documents it: it
        # falls back to an unparsed Command), so the table is checked through sqlglot and the clause,
        # which sqlglot cannot read, by its exact text; a server test below counts the partitions
        (sql,) = my.tables.ddl("t", STUDY_COLUMNS, model=model, partitions=n)
        (plain,) = my.tables.ddl("t", STUDY_COLUMNS, model=model)
        table, sep, clause = sql.partition(" PARTITION BY ")
        assert sep and table == plain, sql
        assert clause == f"KEY (`id`) PARTITIONS {n}", sql
        self.validate(table, tables=["t"])
        assert my.tables.ddl("t", STUDY_COLUMNS, model=model, partitions=1) == [plain]  # one: a plain table

    def test_sqlglot_still_cannot_read_partition_by_key(self, my):
        # when sqlglot learns the clause this fails: then validate the whole DDL above instead
        (sql,) = my.tables.ddl("t", STUDY_COLUMNS, model="primary_key", partitions=8)
        tree = parse_sql(sql, self.dialect)
        assert isinstance(tree, exp.Command) and tree.sql(self.dialect) == sql

    def test_statements_parse(self, my):
        self.validate(render(my.sql.insert_sql("t", COLS, 2), [1, "a", 1, "2024-01-01"] * 2), tables=["t"])
        self.validate(render(my.sql.upsert_sql("t", COLS, "id", 2), [1, "a", 1, "2024-01-01"] * 2), tables=["t"])
        self.validate(render(my.set_sql(FLUSH, "GLOBAL"), [2]))
        assert my.load_data_sql("t", COLS).startswith("LOAD DATA LOCAL INFILE %s INTO TABLE `t`")

    @pytest.mark.parametrize("kwargs, name", [({"model": "columnar"}, "MODELS"), ({"partitions": 0}, "PARTITIONS"),
                                              ({"partitions": 9000}, "PARTITIONS")])
    def test_a_model_or_partitioning_it_cannot_write_is_refused(self, my, kwargs, name):
        with pytest.raises(ConfigError) as err:
            my.tables.ddl("t", STUDY_COLUMNS, **kwargs)
        assert err.value.name == name


@pytest.fixture(scope="module")
def mariadb():
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    engine = engines.get("mariadb").start()
    yield engine
    engine.close()


def _url(mariadb, query: str = "") -> str:
    # the lab's server has no TCP listener: reach it by its socket, with its password
    sep = "&" if query else "?"
    return (f"mysql://root:{mariadb.server.password}@localhost/ingestlab{query}{sep}"
            f"unix_socket={mariadb.server.socket_path}")


def test_a_remote_url_refuses_global_settings_without_the_opt_in(mariadb):
    remote = engines.from_url(_url(mariadb)).start()
    try:
        assert not remote.is_local and remote.NAME == "mysql"
        with pytest.raises(UnsupportedOperationError, match=r"set_global=true"):
            remote.apply_settings({FLUSH: "2"})
        remote.apply_settings({"unique_checks": "0"})  # a session variable is fine
        assert remote.settings()["unique_checks"] == "0"
    finally:
        remote.close()


def test_a_remote_url_with_the_opt_in_sets_globals_and_puts_them_back(mariadb):
    def global_flush() -> int:
        return mariadb.execute(f"SELECT @@GLOBAL.{FLUSH}")[0][0]

    before = global_flush()
    remote = engines.from_url(_url(mariadb, "?set_global=true")).start()
    try:
        remote.apply_settings({FLUSH: "2"})
        assert global_flush() == 2 and remote.settings()[FLUSH] == "2"
        remote.apply_settings({})
        assert global_flush() == before
        remote.apply_settings({FLUSH: "0"})
        assert global_flush() == 0
    finally:
        remote.close()
    assert global_flush() == before


def test_the_bulk_path_through_a_url_keeps_every_row(mariadb):
    remote = engines.from_url(_url(mariadb)).start()
    try:
        remote.tables.reset("url_bulk", STUDY_COLUMNS, model="primary_key")
        rows = datagen.study_rows(300, seed=8)
        assert remote.capability("bulk_load").load("url_bulk", COLS, [datagen.rows_table(COLS, rows)]) == 300
        assert remote.tables.count_rows("url_bulk") == 300 and remote.tables.data_bytes("url_bulk") > 0
    finally:
        remote.close()


@pytest.mark.parametrize("n", [3, 8])
def test_a_partitioned_table_has_n_key_partitions_on_the_server(mariadb, n):
    remote = engines.from_url(_url(mariadb)).start()
    try:
        remote.tables.reset("url_parts", STUDY_COLUMNS, model="primary_key", partitions=n)
        rows = remote.execute("SELECT PARTITION_METHOD, PARTITION_EXPRESSION, COUNT(*) FROM information_schema.PARTITIONS "
                              "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'url_parts' "
                              "GROUP BY PARTITION_METHOD, PARTITION_EXPRESSION")
        assert [tuple(r) for r in rows] == [("KEY", "`id`", n)]
        remote.execute(remote.sql.drop_table_sql("url_parts"))
    finally:
        remote.close()


def test_the_default_driver_is_the_c_one_and_a_url_may_name_pymysql():
    pytest.importorskip("MySQLdb", reason="mysqlclient is not installed here (make installs it where it can build)")
    assert engines.get("mariadb").driver.name == "mysqldb" and MySQL.WIRE.drivername == "mysql+mysqldb"
    for url in ("mysql+pymysql://u@127.0.0.1:1/db", "mariadb+pymysql://u@127.0.0.1:1/db"):
        assert engines.from_url(url).driver.name == "pymysql"
    with pytest.raises(ConfigError, match=r"mysqldb, pymysql"):
        engines.from_url("mysql+mysqlconnector://u@127.0.0.1:1/db")


def test_without_mysqlclient_the_lab_falls_back_to_pymysql_and_says_so_once(monkeypatch):
    import sys

    from ingestlab.engines import drivers

    monkeypatch.setitem(sys.modules, "MySQLdb", None)  # as if it could not be built
    monkeypatch.setattr(drivers, "_NOTED", set())
    with pytest.warns(UserWarning, match="measuring through pymysql"):
        first = engines.from_url("mysql://u@127.0.0.1:1/db")
        assert first.driver.name == "pymysql"
    second = engines.from_url("mysql://u@127.0.0.1:1/db")
    assert second.driver.name == "pymysql" and "mysqlclient" in second.driver.note  # noted, not warned again
    assert second.driver.metadata()["driver_note"] == second.driver.note


@pytest.mark.parametrize("driver", ["mysqldb", "pymysql"])
def test_both_drivers_measure_and_record_themselves(mariadb, driver):
    pytest.importorskip(MySQL.WIRE.drivers[driver][0])
    remote = engines.from_url(_url(mariadb).replace("mysql://", f"mysql+{driver}://")).start()
    try:
        meta = remote.metadata()
        assert meta["driver"] == driver and meta["driver_version"] and "driver_note" not in meta
        remote.tables.reset("by_driver", STUDY_COLUMNS)
        rows = datagen.study_rows(3, seed=2)
        sql = remote.sql.insert_sql("by_driver", COLS, 1)
        assert remote.sender.render(sql, rows[0]).startswith("INSERT INTO `by_driver`")
        for row in rows:
            remote.sender.statement_call(sql, row)()
        remote.sender.statement_call("SELECT 1")()  # a result set is read, so the next statement runs
        assert sorted(remote.execute("SELECT id, name, amount, dt FROM by_driver")) == sorted(rows)
    finally:
        remote.close()
