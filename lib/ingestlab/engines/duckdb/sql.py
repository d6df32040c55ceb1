"""DuckDB's SQL: PostgreSQL's grammar (DuckDB parses with libpg_query), ART indexes, ``range``, no partitions."""

from __future__ import annotations

import functools
from typing import Any, Sequence

from ingestlab.engines.postgres.sql import PostgresSQL
from ingestlab.errors import UnsupportedOperationError


class DuckDBSQL(PostgresSQL):
    """DuckDB's statements, with ``?`` placeholders (its Python API binds them itself): PostgreSQL's where they agree.

    Examples
    --------
    >>> DuckDBSQL("duckdb", placeholder="?").upsert_sql("t", ["id", "v"], "id")
    'INSERT INTO "t" ("id", "v") VALUES (?, ?) ON CONFLICT ("id") DO UPDATE SET "v" = EXCLUDED."v"'
    """

    def table_ddl(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                  model: str | None = None, partitions: int | None = None) -> list[str]:
        """``CREATE TABLE`` of a model: no key, a primary key (an ART index), or a primary key and secondary ART indexes.

        DuckDB does not partition tables (its row groups are its only division), so
        ``partitions`` is at most 1 (checked by the engine). Models with a key use ``key``
        (default: the first column).

        Examples
        --------
        >>> DuckDBSQL().table_ddl("t", [("id", "BIGINT"), ("v", "INT")], model="primary_key_indexes")
        ['CREATE TABLE "t" ("id" BIGINT, "v" INT, PRIMARY KEY ("id"))', 'CREATE INDEX "t_v_idx" ON "t" ("v")']
        """
        names = [name for name, _ in columns]
        keyed = list(key or names[:1]) if model not in (None, "no_key") else list(key)
        statements = [self.create_table_sql(table, columns, primary_key=keyed)]
        if model == "primary_key_indexes":
            statements += [f"CREATE INDEX {self.quote(f'{table}_{col}_idx')} ON {self.quote(table)} ({self.quote(col)})"
                           for col in self.secondary_index_columns(names, keyed)]
        return statements

    def generate_rows_sql(self, table: str, columns: Sequence[str], n: int) -> str:
        """``INSERT … SELECT g, 0, … FROM range(1, n + 1)``: the study's statement over DuckDB's row generator.

        Examples
        --------
        >>> DuckDBSQL().generate_rows_sql("demo", ["id", "a"], 3)
        'INSERT INTO "demo" ("id", "a") SELECT g, 0 FROM range(1, 4) AS r(g)'
        """
        return self._generated(table, columns, "SELECT g{zeros} FROM range(1, {end}) AS r(g)", n)

    def copy_sql(self, table: str, columns: Sequence[str], *, freeze: bool = False) -> str:
        """Not DuckDB's: its ``COPY`` reads files, not a client's stream (its bulk path is an Arrow scan)."""
        raise UnsupportedOperationError(f"{self.engine or 'duckdb'}: no COPY … FROM STDIN (the bulk path is an "
                                        "Arrow scan)")

    def literal(self, value: Any) -> str:
        """``value`` as a DuckDB literal, written by SQLAlchemy's PostgreSQL literal rendering.

        DuckDB reads literals as PostgreSQL does with standard-conforming strings: a quote is
        doubled, a backslash is an ordinary character. For the lab's values: numbers, text,
        decimals, dates, booleans and None.

        Examples
        --------
        >>> import datetime, decimal
        >>> [DuckDBSQL().literal(v) for v in ("it's \\\\ 100%", decimal.Decimal("1.20"), datetime.date(2024, 1, 2), None, True)]
        ["'it''s \\\\ 100%'", '1.20', "'2024-01-02'", 'NULL', 'true']
        """
        from sqlalchemy import literal, null

        expression = null() if value is None else literal(value)
        return str(expression.compile(dialect=_literal_dialect(), compile_kwargs={"literal_binds": True}))

    def render(self, sql: str, params: Sequence[Any] | None = None) -> str:
        """``sql`` with ``params`` written into it as literals: the text a client without parameters sends."""
        return sql if params is None else self.inline(sql, [self.literal(v) for v in params])


@functools.lru_cache(maxsize=None)
def _literal_dialect():
    """SQLAlchemy's PostgreSQL dialect, without a driver whose paramstyle would double every ``%``."""
    from sqlalchemy.dialects.postgresql.base import PGDialect

    return PGDialect(paramstyle="qmark")
