"""The SQL text each engine writes, one builder class per dialect (``engines/sql/<engine>.py`` beside ``engines/<engine>.py``).

A builder only writes text: statements with driver placeholders (``%s``) for values, identifiers
quoted by SQLAlchemy's dialect. It never connects. An adapter holds one (``engine.sql``, made
from its class's :attr:`~ingestlab.engines.base.Engine.SQL`) and its SQL steps delegate to it.
Adding a dialect: copy a sibling module, subclass the nearest relative, override what differs.

Examples
--------
>>> from ingestlab.engines.sql import PostgresSQL
>>> PostgresSQL("postgres").insert_sql("t", ["id", "v"], 2)
'INSERT INTO "t" ("id", "v") VALUES (%s, %s), (%s, %s)'
"""

from ingestlab.engines.sql.base import SQLBuilder
from ingestlab.engines.sql.clickhouse import ClickHouseSQL
from ingestlab.engines.sql.doris import DorisSQL
from ingestlab.engines.sql.duckdb import DuckDBSQL
from ingestlab.engines.sql.mariadb import MariaDBSQL
from ingestlab.engines.sql.mysql import MySQLSQL
from ingestlab.engines.sql.mysql_protocol import MySQLProtocolSQL
from ingestlab.engines.sql.postgres import PostgresSQL
from ingestlab.engines.sql.starrocks import StarRocksSQL

__all__ = ["ClickHouseSQL", "DorisSQL", "DuckDBSQL", "MariaDBSQL", "MySQLProtocolSQL", "MySQLSQL", "PostgresSQL",
           "SQLBuilder", "StarRocksSQL"]
