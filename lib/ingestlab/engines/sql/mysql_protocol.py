"""The SQL every server of the MySQL protocol reads (MySQL, MariaDB, StarRocks, Doris): backtick quoting, ``SET``."""

from __future__ import annotations

import re
from typing import ClassVar

from sqlalchemy.dialects.mysql.base import MySQLDialect

from ingestlab.engines.sql.base import SQLBuilder
from ingestlab.errors import ConfigError

_VARIABLE = re.compile(r"^[a-z_][a-z0-9_]*$")


class MySQLProtocolSQL(SQLBuilder):
    """What the MySQL family's dialects share; each server's own DDL is in its subclass."""

    QUOTING: ClassVar[type] = MySQLDialect

    def set_sql(self, name: str, scope: str = "SESSION") -> str:
        """``SET <scope> name = %s`` for a checked variable name (the value is a driver parameter).

        Examples
        --------
        >>> MySQLProtocolSQL().set_sql("innodb_flush_log_at_trx_commit", "GLOBAL")
        'SET GLOBAL innodb_flush_log_at_trx_commit = %s'
        """
        check_variable(name)
        if scope not in ("SESSION", "GLOBAL"):
            raise ConfigError("scope", scope, "'SESSION' or 'GLOBAL'")
        return f"SET {scope} {name} = {self.placeholder}"


def check_variable(name: str) -> None:
    """Refuse anything but a server variable's name (it is written into the statement's text).

    Raises
    ------
    ConfigError
        When ``name`` is not lower-case letters, digits and ``_``.
    """
    if not isinstance(name, str) or not _VARIABLE.match(name):
        raise ConfigError("settings", name, "a server variable name: lower-case letters, digits and '_'")
