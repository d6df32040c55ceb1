"""PostgreSQL's SQL (YugabyteDB's YSQL too): hash partitions, ``UNLOGGED``, ``ON CONFLICT``, ``generate_series``."""

from __future__ import annotations

from typing import ClassVar, Sequence

from sqlalchemy.dialects.postgresql.base import PGDialect

from ingestlab.engines.sql.base import SQLBuilder


class PostgresSQL(SQLBuilder):
    """PostgreSQL's statements.

    Examples
    --------
    >>> PostgresSQL("postgres").upsert_sql("t", ["id", "doc"], "id", 2)
    'INSERT INTO "t" ("id", "doc") VALUES (%s, %s), (%s, %s) ON CONFLICT ("id") DO UPDATE SET "doc" = EXCLUDED."doc"'
    """

    QUOTING: ClassVar[type] = PGDialect

    def table_ddl(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                  model: str | None = None, partitions: int | None = None) -> list[str]:
        """``CREATE [UNLOGGED] TABLE`` of a model, hash-partitioned by the first column.

        ``partitions = 1`` is a plain table; ``N > 1`` is ``PARTITION BY HASH`` of the first
        column with ``N`` partitions ``<table>_p<i>``. Models with a key use ``key`` (default: the
        first column).

        Examples
        --------
        >>> PostgresSQL().table_ddl("t", [("id", "BIGINT"), ("v", "INT")], model="unlogged", partitions=2)
        ['CREATE TABLE "t" ("id" BIGINT, "v" INT, PRIMARY KEY ("id")) PARTITION BY HASH ("id")', 'CREATE UNLOGGED TABLE "t_p0" PARTITION OF "t" FOR VALUES WITH (MODULUS 2, REMAINDER 0)', 'CREATE UNLOGGED TABLE "t_p1" PARTITION OF "t" FOR VALUES WITH (MODULUS 2, REMAINDER 1)']
        """
        n = partitions or 1
        names = [name for name, _ in columns]
        keyed = list(key or names[:1]) if model != "no_key" else []
        unlogged = "UNLOGGED " if model == "unlogged" else ""
        create = self.create_table_sql(table, columns, primary_key=keyed)
        if n == 1:  # a partitioned parent holds no rows and cannot be unlogged; its partitions are
            statements = [create.replace("CREATE TABLE", f"CREATE {unlogged}TABLE", 1)]
        else:
            statements = [create + f" PARTITION BY HASH ({self.quote(names[0])})"]
        statements += [f"CREATE {unlogged}TABLE {self.quote(f'{table}_p{i}')} PARTITION OF {self.quote(table)} "
                       f"FOR VALUES WITH (MODULUS {n}, REMAINDER {i})" for i in range(n) if n > 1]
        if model == "primary_key_indexes":
            statements += [f"CREATE INDEX {self.quote(f'{table}_{col}_idx')} ON {self.quote(table)} ({self.quote(col)})"
                           for col in self.secondary_index_columns(names, keyed)]
        return statements

    def upsert_clause(self, key: str, others: Sequence[str]) -> str:
        """``ON CONFLICT (key) DO UPDATE SET`` every other column from ``EXCLUDED``."""
        sets = ", ".join(f"{self.quote(c)} = EXCLUDED.{self.quote(c)}" for c in others)
        return f"ON CONFLICT ({self.quote(key)}) DO UPDATE SET {sets}"

    def generate_rows_sql(self, table: str, columns: Sequence[str], n: int) -> str:
        """``INSERT … SELECT g, 0, … FROM generate_series(1, n)``: the study's statement.

        Examples
        --------
        >>> PostgresSQL().generate_rows_sql("demo", ["id", "a", "b"], 3)
        'INSERT INTO "demo" ("id", "a", "b") SELECT g, 0, 0 FROM generate_series(1, 3) AS g'
        """
        return self._generated(table, columns, "SELECT g{zeros} FROM generate_series(1, {n}) AS g", n)

    def copy_sql(self, table: str, columns: Sequence[str], *, freeze: bool = False) -> str:
        """``COPY table (columns) FROM STDIN WITH (FORMAT csv[, FREEZE])``: the bulk path's statement.

        Examples
        --------
        >>> PostgresSQL().copy_sql("t", ["id", "v"], freeze=True)
        'COPY "t" ("id", "v") FROM STDIN WITH (FORMAT csv, FREEZE)'
        """
        cols = ", ".join(map(self.quote, columns))
        return f"COPY {self.quote(table)} ({cols}) FROM STDIN WITH (FORMAT csv{', FREEZE' if freeze else ''})"
