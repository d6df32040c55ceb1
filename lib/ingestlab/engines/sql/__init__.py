"""The SQL text each engine writes, one builder class per dialect (``engines/<engine>/sql.py`` beside its ``adapter.py``).

A builder only writes text: statements with driver placeholders (``%s``) for values, identifiers
quoted by SQLAlchemy's dialect. It never connects. An adapter holds one (``engine.sql``, made
from its class's :attr:`~ingestlab.engines.base.Engine.SQL`) and its SQL steps delegate to it.
Adding a dialect: copy a sibling module, subclass the nearest relative, override what differs.

Examples
--------
>>> SQLBuilder("x").insert_sql("t", ["id", "v"], 2)
'INSERT INTO "t" ("id", "v") VALUES (%s, %s), (%s, %s)'
"""

from ingestlab.engines.sql.base import SQLBuilder
from ingestlab.engines.sql.mysql_protocol import MySQLProtocolSQL

__all__ = ["MySQLProtocolSQL", "SQLBuilder"]
