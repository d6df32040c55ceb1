"""The contract itself: its map in ``Engine``'s docstring, the registry facade, the MySQL-protocol family, the SQL builders."""

from __future__ import annotations

import inspect
import re

import pytest

from ingestlab import engines
from ingestlab.engines import Engine, capabilities, registry
from ingestlab.engines.base import STEPS
from ingestlab.engines.doris import Doris
from ingestlab.engines.doris.sql import DorisSQL
from ingestlab.engines.mariadb import MariaDB
from ingestlab.engines.mariadb.sql import MariaDBSQL
from ingestlab.engines.mysql import MySQL
from ingestlab.engines.mysql.sql import MySQLSQL
from ingestlab.engines.mysql_protocol import MySQLProtocol
from ingestlab.engines.postgres.sql import PostgresSQL
from ingestlab.engines.sql import SQLBuilder
from ingestlab.engines.starrocks import StarRocks
from ingestlab.engines.starrocks.sql import StarRocksSQL
from ingestlab.engines.steps import SQL_STEPS
from ingestlab.errors import ConfigError, UnsupportedOperationError

_FLAG = re.compile(r"^[A-Z][A-Z0-9_]*$")


def flags_of(cls: type) -> dict[str, object]:
    """The capability flags ``cls`` declares itself: upper-case class attributes that are not methods."""
    return {name: value for name, value in vars(cls).items()
            if _FLAG.match(name) and not inspect.isfunction(value) and not isinstance(value, (classmethod, property))}


def _empty(value: object) -> bool:
    return value is None or value in ("", (), {}, frozenset())


# -- the map ---------------------------------------------------------------------------------------
def test_the_docstring_map_names_every_step_of_the_contract():
    doc = Engine.__doc__
    missing = [step for step in STEPS if f"``{step}``" not in doc]
    assert not missing, f"Engine's docstring does not name the steps {missing}"


def test_the_docstring_map_names_every_flag_with_its_default():
    doc = Engine.__doc__
    flags = flags_of(Engine)
    assert len(flags) >= 9  # the core's own: identity, WIRE, SQL, capabilities (the rest is on capabilities and WIRE)
    missing = []
    for name, value in flags.items():
        if inspect.isclass(value):
            shown = f"``{name} = {value.__name__}``"
        elif isinstance(value, (str, int, float, bool, tuple, dict, type(None))) and len(repr(value)) <= 40:
            shown = f"``{name} = {value!r}``"
        else:
            shown = f"``{name}``"
        if shown not in doc:
            missing.append(shown)
    assert not missing, f"Engine's docstring does not list {missing}"


def test_every_subclass_flag_is_declared_on_the_base():
    for engine_cls in engines.classes().values():
        for klass in engine_cls.__mro__:
            if klass is Engine or not issubclass(klass, Engine):
                continue
            declared = {n for n in flags_of(klass) if n in flags_of(Engine) or hasattr(Engine, n)}
            assert declared <= set(flags_of(Engine)) | set(vars(Engine)), klass


# -- the registry ----------------------------------------------------------------------------------
def test_the_package_s_lookups_are_the_registry_s():
    assert engines.classes() == registry.classes() and engines.names() == registry.names()
    assert engines.class_of("mariadb") is MariaDB is registry.by_name("mariadb")
    assert registry.by_scheme("doris") is Doris and registry.by_scheme("nope") is None
    assert "starrocks" in registry.schemes()
    assert not {"classes", "names", "versions", "get", "from_url", "resolve", "class_of"} & set(vars(Engine))


@pytest.mark.parametrize("call", [
    lambda p: engines.resolve("oracle", **p), lambda p: engines.get("oracle", **p),
    lambda p: engines.from_url("oracle://u@h:1/db", **p), lambda p: engines.class_of("oracle", **p),
    lambda p: engines.resolve("postgresql://u@h:notaport/db", **p), lambda p: engines.resolve("  ", **p),
    lambda p: engines.class_of("mysql+nodriver://u@h/db", **p),
], ids=["resolve", "get", "from_url", "class_of", "bad port", "blank", "bad driver"])
def test_errors_name_the_parameter_they_were_given(call):
    with pytest.raises(ConfigError) as err:
        call({})
    assert err.value.name == "ENGINES"  # the notebooks' engine parameter
    with pytest.raises(ConfigError) as err:
        call({"parameter": "TARGETS"})
    assert err.value.name == "TARGETS"


def test_an_engines_own_url_errors_name_its_parameter():
    with pytest.raises(ConfigError) as err:
        engines.from_url("starrocks://root@fe:9030/db?buckets=0", parameter="TARGET").table_defaults()
    assert err.value.name == "TARGET"


# -- passwords through an engine -------------------------------------------------------------------
def test_a_query_password_reaches_the_driver_and_nothing_shows_it():
    engine = engines.from_url("mysql://root@db:3306/lab?passwd=hunter2&charset=utf8mb4&set_global=true")
    args = engine.connect_kwargs()
    assert args["password"] == "hunter2" and "passwd" not in args and "set_global" not in args
    assert args["charset"] == "utf8mb4" and engine.set_global_allowed
    assert "hunter2" not in engine.display_url and "hunter2" not in repr(engine.connection)


@pytest.mark.parametrize("query", ["protocol=gopher&password=hunter2", "passwd=hunter2&verify=no"])
def test_arangodb_url_errors_never_repeat_the_password(query):
    with pytest.raises(ConfigError) as err:
        engines.from_url(f"arangodb://root:hunter2@127.0.0.1:8529/_system?{query}")
    assert "hunter2" not in str(err.value)


def test_an_arangodb_query_password_is_the_password():
    engine = engines.from_url("arangodb://root@127.0.0.1:8529/_system?password=hunter2")
    assert engine.connect_kwargs()["password"] == "hunter2" and "hunter2" not in engine.display_url


# -- the MySQL-protocol family ---------------------------------------------------------------------
@pytest.mark.parametrize("engine_cls", [StarRocks, Doris])
def test_starrocks_and_doris_inherit_nothing_of_innodb(engine_cls):
    assert issubclass(engine_cls, MySQLProtocol) and not issubclass(engine_cls, MySQL)
    assert not any("UNSUPPORTED" in vars(klass) for klass in engine_cls.__mro__ if klass is not Engine)
    innodb = {name for name in vars(MySQL) if not name.startswith("__")}
    missing = object()  # a class attribute that is None on MySQL is not inherited by a class without it
    inherited = {name for name in innodb if getattr(engine_cls, name, missing) is getattr(MySQL, name)}
    assert not inherited, f"{engine_cls.__name__} inherits {sorted(inherited)} from MySQL"


def test_no_engine_of_the_mysql_protocol_blanks_a_flag_it_inherits():
    family = [c for c in engines.classes().values() if issubclass(c, MySQLProtocol)]
    assert {MySQL, MariaDB, StarRocks, Doris} <= set(family)
    for engine_cls in family:
        parent = engine_cls.__mro__[1]
        blanked = [name for name, value in flags_of(engine_cls).items()
                   if _empty(value) and not _empty(getattr(parent, name, None))]
        assert not blanked, f"{engine_cls.__name__} blanks {blanked} inherited from {parent.__name__}"


def test_what_starrocks_lacks_is_the_contracts_default_and_says_so():
    sr = engines.from_url("starrocks://root@127.0.0.1:9030/db")
    for step in ("settle", "io_counters", "commit_counters", "memory_budget", "upsert", "native_load", "upsert_sql"):
        assert not sr.has(step)
        with pytest.raises(UnsupportedOperationError, match=f"starrocks: no {step}"):
            sr.has(step, check=True)
    assert capabilities.of(sr, "commit_variants").VARIANTS == {}


# -- the SQL builders ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, builder", [("postgres", PostgresSQL), ("yugabytedb", PostgresSQL),
                                           ("mysql", MySQLSQL), ("mariadb", MariaDBSQL),
                                           ("starrocks", StarRocksSQL), ("doris", DorisSQL)])
def test_each_sql_engine_holds_its_dialects_builder(name, builder):
    engine_cls = engines.classes()[name]
    assert engine_cls.SQL is builder
    engine = engine_cls.__new__(engine_cls)  # no server, no URL: the builder only writes text
    engine.connection = None
    assert type(engine.sql) is builder and engine.sql is engine.sql
    assert engine.sql.insert_sql("t", ["a"], 1) == builder(name).insert_sql("t", ["a"], 1)


def test_a_sql_step_is_missing_where_the_builder_marks_it():
    assert engines.classes()["doris"].has("group_commit_interval_sql")
    assert not engines.classes()["starrocks"].has("group_commit_interval_sql")
    assert engines.classes()["mariadb"].has("generate_rows_sql") and engines.classes()["mysql"].has("upsert_sql")
    for name in ("rocksdb", "arangodb"):  # no SQL at all
        engine_cls = engines.classes()[name]
        assert engine_cls.SQL is None and not any(engine_cls.has(step) for step in SQL_STEPS)


def test_builders_write_text_without_an_engine():
    assert SQLBuilder("x").quote('a"b') == '"a""b"'
    assert MySQLSQL("mysql").quote("a`b") == "`a``b`"
    assert StarRocksSQL(table_defaults={"buckets": 3}).table_ddl("t", [("id", "INT")], model="duplicate") == [
        "CREATE TABLE `t` (`id` INT) DUPLICATE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 3"]
    with pytest.raises(ConfigError, match="model"):
        DorisSQL("doris").create_table_sql("t", [("id", "INT")], primary_key=["id"])
