"""Engine adapters: one class per engine over :class:`~ingestlab.engines.base.Engine`.

Each adapter lives in its own module with the engine's name (``postgres.py``,
``mariadb.py``, ``starrocks.py``...) and subclasses its nearest relative, overriding only
what differs (``YugabyteDB(Postgres)``, ``MariaDB(MySQL)``; MySQL and StarRocks both extend
the wire protocol's ``MySQLProtocol`` in ``mysql_protocol.py``). The SQL an engine writes is
its dialect's builder, in a module of the same name under ``sql/`` (``sql/mysql.py`` holds
``MySQLSQL``). Beside them: ``base.py`` (the contract, ``Engine``), ``registry.py`` (names
and URL schemes), ``drivers.py`` (which Python driver measures), ``steps.py`` (the steps an
engine may lack). Adding an engine: copy a sibling module (and, if it writes SQL of its
own, its ``sql/`` sibling), edit it, import it below, and add ``tests/engines/test_<name>.py``
subclassing the shared contract test.

Examples
--------
>>> from ingestlab.engines import Engine
>>> Engine.resolve("postgres").NAME
'postgres'
"""

from ingestlab.engines import (
    arangodb,  # noqa: F401 - registers the adapter
    clickhouse,  # noqa: F401 - registers the adapter
    doris,  # noqa: F401 - registers the adapter
    duckdb,  # noqa: F401 - registers the adapter
    mariadb,  # noqa: F401 - registers the adapter
    mysql,  # noqa: F401 - registers the adapter
    postgres,  # noqa: F401 - registers the adapter
    rocksdb,  # noqa: F401 - registers the adapter
    starrocks,  # noqa: F401 - registers the adapter
    yugabytedb,  # noqa: F401 - registers the adapter
)
from ingestlab.engines.base import Engine, mask_url

__all__ = ["Engine", "mask_url"]
