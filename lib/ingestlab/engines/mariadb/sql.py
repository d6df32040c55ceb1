"""MariaDB's SQL: MySQL's, with the Aria table model and the Sequence engine's row generator."""

from __future__ import annotations

from typing import ClassVar, Sequence

from ingestlab.engines.mysql.sql import MySQLSQL


class MariaDBSQL(MySQLSQL):
    """MariaDB's statements; differ from :class:`~ingestlab.engines.mysql.sql.MySQLSQL` in the models and rows."""

    MODEL_ENGINES: ClassVar[dict[str, str]] = {"aria": "Aria"}

    def generate_rows_sql(self, table: str, columns: Sequence[str], n: int) -> str:
        """``INSERT … SELECT seq, 0, … FROM seq_1_to_<n>``: MariaDB's Sequence engine, its generate_series.

        The Sequence storage engine (built into MariaDB since 10.1) makes the virtual table
        ``seq_1_to_<n>`` on the fly; nothing is stored. (MySQL has no such engine: see
        :meth:`MySQLSQL.generate_rows_sql`.)

        Examples
        --------
        >>> MariaDBSQL().generate_rows_sql("demo", ["id", "a"], 3)
        'INSERT INTO `demo` (`id`, `a`) SELECT seq, 0 FROM seq_1_to_3'
        """
        return self._generated(table, columns, "SELECT seq{zeros} FROM seq_1_to_{n}", n)
