"""MySQL's SQL over InnoDB: ``ENGINE=``, ``PARTITION BY KEY``, ``ON DUPLICATE KEY UPDATE``, ``LOAD DATA LOCAL``."""

from __future__ import annotations

from typing import ClassVar, Sequence

from ingestlab.engines.sql.mysql_protocol import MySQLProtocolSQL


class MySQLSQL(MySQLProtocolSQL):
    """MySQL's statements (MariaDB's differ in :class:`~ingestlab.engines.mariadb.sql.MariaDBSQL`).

    Examples
    --------
    >>> MySQLSQL("mysql").upsert_sql("t", ["id", "doc"], "id", 2)
    'INSERT INTO `t` (`id`, `doc`) VALUES (%s, %s), (%s, %s) ON DUPLICATE KEY UPDATE `doc` = VALUES(`doc`)'
    """

    #: Storage engine of each table model (``ENGINE=``); any other model is InnoDB.
    MODEL_ENGINES: ClassVar[dict[str, str]] = {"myisam": "MyISAM"}

    def table_ddl(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                  model: str | None = None, partitions: int | None = None) -> list[str]:
        """``CREATE TABLE`` of a model, ``PARTITION BY KEY`` of the first column.

        Examples
        --------
        >>> MySQLSQL().table_ddl("t", [("id", "BIGINT"), ("v", "INT")], model="primary_key_indexes", partitions=4)
        ['CREATE TABLE `t` (`id` BIGINT, `v` INT, PRIMARY KEY (`id`), INDEX `t_v_idx` (`v`)) ENGINE=InnoDB PARTITION BY KEY (`id`) PARTITIONS 4']
        """
        n = partitions or 1
        names = [name for name, _ in columns]
        keyed = list(key or names[:1]) if model != "no_key" else []
        sql = self.create_table_sql(table, columns, primary_key=keyed)
        if model == "primary_key_indexes":
            indexes = [f"INDEX {self.quote(f'{table}_{col}_idx')} ({self.quote(col)})"
                       for col in self.secondary_index_columns(names, keyed)]
            sql = sql[:-1] + ", " + ", ".join(indexes) + ")"
        sql += f" ENGINE={self.MODEL_ENGINES.get(model, 'InnoDB')}"
        if n > 1:
            sql += f" PARTITION BY KEY ({self.quote(names[0])}) PARTITIONS {n}"
        return [sql]

    def upsert_clause(self, key: str, others: Sequence[str]) -> str:
        """``ON DUPLICATE KEY UPDATE`` every other column from ``VALUES(col)``.

        ``VALUES(col)`` names the row that was to be inserted; MariaDB has no other spelling
        (MySQL 8.0.19+ also accepts a row alias and warns that ``VALUES()`` is deprecated).
        """
        return "ON DUPLICATE KEY UPDATE " + ", ".join(f"{self.quote(c)} = VALUES({self.quote(c)})" for c in others)

    def load_data_sql(self, table: str, columns: Sequence[str]) -> str:
        """``LOAD DATA LOCAL INFILE %s`` for :func:`ingestlab.datagen.csv_bytes`'s CSV (file name as parameter)."""
        cols = ", ".join(map(self.quote, columns))
        return (f"LOAD DATA LOCAL INFILE {self.placeholder} INTO TABLE {self.quote(table)} CHARACTER SET utf8mb4 "
                "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' "
                f"LINES TERMINATED BY '\\n' ({cols})")

    def generate_rows_sql(self, table: str, columns: Sequence[str], n: int) -> str:
        """A recursive CTE counting 1…n (MySQL 8 needs ``cte_max_recursion_depth`` ≥ n for the session).

        Examples
        --------
        >>> MySQLSQL().generate_rows_sql("demo", ["id", "a"], 3)
        'INSERT INTO `demo` (`id`, `a`) WITH RECURSIVE g (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 3) SELECT n, 0 FROM g'
        """
        return self._generated(table, columns, "WITH RECURSIVE g (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g "
                                               "WHERE n < {n}) SELECT n{zeros} FROM g", n)
