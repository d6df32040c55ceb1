"""ClickHouse's SQL: MergeTree tables (``ORDER BY`` key, ``PARTITION BY``, skipping indexes), its types, its literals."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Sequence

from ingestlab.engines.sql.base import SQLBuilder
from ingestlab.errors import ConfigError

#: Portable column types (:data:`ingestlab.datagen.WIDE_TYPES`, the study's) → ClickHouse's own names.
TYPES: dict[str, str] = {"BIGINT": "Int64", "INT": "Int32", "INTEGER": "Int32", "SMALLINT": "Int16",
                         "BOOLEAN": "Bool", "DATE": "Date", "TEXT": "String"}
_VARCHAR = re.compile(r"^(?:VARCHAR|CHAR)\s*\(\s*\d+\s*\)$", re.I)
_DECIMAL = re.compile(r"^DECIMAL\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$", re.I)


class ClickHouseSQL(SQLBuilder):
    """ClickHouse's statements, with ``%s`` placeholders that :meth:`render` fills with literals.

    Every table is a ``MergeTree`` (or ``ReplacingMergeTree``). ClickHouse columns are NOT
    NULL unless declared ``Nullable``: every column but the first is ``Nullable``, as SQL's
    columns are; the first is the sorting key of the keyed models and the partitioning
    column, in every model, so that a sweep changes one thing at a time.

    Examples
    --------
    >>> ClickHouseSQL("clickhouse").insert_sql("t", ["id", "v"], 2)
    'INSERT INTO "t" ("id", "v") VALUES (%s, %s), (%s, %s)'
    """

    #: ClickHouse reads backslash escapes inside quoted names and strings.
    BACKSLASH_ESCAPES: ClassVar[bool] = True
    #: Table engine of each model of :meth:`table_ddl`.
    TABLE_ENGINES: ClassVar[dict[str, str]] = {"no_key": "MergeTree", "primary_key": "MergeTree",
                                         "primary_key_indexes": "MergeTree", "replacing": "ReplacingMergeTree",
                                         "memory": "Memory"}

    def quote(self, identifier: str) -> str:
        """``identifier`` in ANSI double quotes by SQLAlchemy's quoting, its backslashes doubled (ClickHouse reads escapes).

        Examples
        --------
        >>> ClickHouseSQL().quote('we"ird\\\\name')
        '"we""ird\\\\\\\\name"'
        """
        return super().quote(identifier.replace("\\", "\\\\"))

    def column_type(self, sql_type: str) -> str:
        """ClickHouse's name of a portable type (``BIGINT`` → ``Int64``, ``VARCHAR(100)`` → ``String``).

        Examples
        --------
        >>> [ClickHouseSQL().column_type(t) for t in ("BIGINT", "VARCHAR(32)", "DECIMAL(10,2)", "Float64")]
        ['Int64', 'String', 'Decimal(10, 2)', 'Float64']
        """
        upper = sql_type.strip().upper()
        if upper in TYPES:
            return TYPES[upper]
        if _VARCHAR.match(upper):
            return "String"
        decimal = _DECIMAL.match(upper)
        if decimal:
            return f"Decimal({decimal.group(1)}, {decimal.group(2)})"
        return sql_type

    def create_table_sql(self, table: str, columns: Sequence[tuple[str, str]], *,
                         primary_key: Sequence[str] = (), model: str = "primary_key", partitions: int = 1) -> str:
        """One ``CREATE TABLE … ENGINE = MergeTree`` sorted by ``primary_key`` (none: ``ORDER BY tuple()``).

        ``partitions > 1`` adds ``PARTITION BY cityHash64(<first column>) % partitions``. The
        sorting key is ClickHouse's primary key: a sparse index, not a uniqueness constraint.

        Examples
        --------
        >>> ClickHouseSQL().create_table_sql("t", [("id", "BIGINT"), ("v", "INT")], primary_key=["id"], partitions=4)
        'CREATE TABLE "t" ("id" Int64, "v" Nullable(Int32)) ENGINE = MergeTree PARTITION BY cityHash64("id") % 4 ORDER BY ("id")'
        """
        names = [name for name, _ in columns]
        if model == "memory":  # blocks in RAM: no sorting key, no partitions, no part on disk
            if partitions > 1:
                raise ConfigError("PARTITIONS", partitions, "1 for the memory model (a Memory table has no partitions)")
            return (f"CREATE TABLE {self.quote(table)} ("
                    + ", ".join(f"{self.quote(n)} Nullable({self.column_type(t)})" if i else
                                f"{self.quote(n)} {self.column_type(t)}" for i, (n, t) in enumerate(columns))
                    + ") ENGINE = Memory")
        required = {*primary_key, *names[:1]}
        cols = [f"{self.quote(n)} " + (self.column_type(t) if n in required else f"Nullable({self.column_type(t)})")
                for n, t in columns]
        if model == "primary_key_indexes":
            cols += [f"INDEX {self.quote(f'{table}_{col}_idx')} {self.quote(col)} TYPE minmax GRANULARITY 1"
                     for col in self.secondary_index_columns(names, primary_key)]
        partition = f" PARTITION BY cityHash64({self.quote(names[0])}) % {int(partitions)}" if partitions > 1 else ""
        order = "(" + ", ".join(map(self.quote, primary_key)) + ")" if primary_key else "tuple()"
        return (f"CREATE TABLE {self.quote(table)} (" + ", ".join(cols) + f") ENGINE = {self.TABLE_ENGINES[model]}"
                f"{partition} ORDER BY {order}")

    def table_ddl(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                  model: str | None = None, partitions: int | None = None) -> list[str]:
        """The ``CREATE TABLE`` of a model, hash-partitioned into ``partitions`` by the first column.

        ``no_key``: ``ORDER BY tuple()``, parts in insertion order, no primary index;
        ``primary_key``: sorted by ``key`` (default: the first column), a sparse primary index;
        ``primary_key_indexes``: the same plus three ``minmax`` skipping indexes on the next
        columns; ``replacing``: ``ReplacingMergeTree`` sorted by ``key``, where merges keep the
        last row of each key; ``memory``: the ``Memory`` engine, blocks kept in RAM (no key, no
        partitions, nothing written to disk, nothing kept over a restart).

        Examples
        --------
        >>> ClickHouseSQL().table_ddl("t", [("id", "BIGINT"), ("v", "INT")], model="no_key")
        ['CREATE TABLE "t" ("id" Int64, "v" Nullable(Int32)) ENGINE = MergeTree ORDER BY tuple()']
        >>> ClickHouseSQL().table_ddl("t", [("id", "BIGINT"), ("v", "INT")], model="memory")
        ['CREATE TABLE "t" ("id" Int64, "v" Nullable(Int32)) ENGINE = Memory']
        """
        model = model or ("primary_key" if key else "no_key")
        names = [name for name, _ in columns]
        keyed = [] if model == "no_key" else list(key or names[:1])
        return [self.create_table_sql(table, columns, primary_key=keyed, model=model, partitions=partitions or 1)]

    def drop_table_sql(self, table: str) -> str:
        """``DROP TABLE IF EXISTS … SYNC``: its parts are removed now, not by a background task minutes later."""
        return f"DROP TABLE IF EXISTS {self.quote(table)} SYNC"

    def generate_rows_sql(self, table: str, columns: Sequence[str], n: int) -> str:
        """``INSERT … SELECT number, 0, … FROM numbers(1, n)``: the study's statement over ClickHouse's row generator.

        Examples
        --------
        >>> ClickHouseSQL().generate_rows_sql("demo", ["id", "a"], 3)
        'INSERT INTO "demo" ("id", "a") SELECT number, 0 FROM numbers(1, 3)'
        """
        return self._generated(table, columns, "SELECT number{zeros} FROM numbers(1, {n})", n)

    def literal(self, value: Any) -> str:
        """``value`` as a ClickHouse literal, by chDB's own DB-API escaping (``chdb.dbapi.converters.escape_item``).

        ClickHouse string literals escape a quote and a backslash (docs: "Syntax", string
        literals); chDB's converter does both. Floats are written by ``repr`` (shortest exact
        form) instead of the converter's 15 digits, so that they round-trip.

        Examples
        --------
        >>> import datetime, decimal
        >>> [ClickHouseSQL().literal(v) for v in ("it's \\\\", decimal.Decimal("1.20"), datetime.date(2024, 1, 2), None, 0.1)]
        ["'it''s \\\\\\\\'", '1.20', "'2024-01-02'", 'NULL', '0.1']
        """
        from chdb.dbapi.converters import encoders, escape_item

        if type(value) is float:
            return repr(value)
        return escape_item(value, encoders)

    def render(self, sql: str, params: Sequence[Any] | None = None) -> str:
        """``sql`` with ``params`` written into it as literals: the statement text chDB is sent."""
        return sql if params is None else self.inline(sql, [self.literal(v) for v in params])
