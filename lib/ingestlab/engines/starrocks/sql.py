"""StarRocks's SQL: key models, ``DISTRIBUTED BY HASH … BUCKETS``, ``PROPERTIES``, ``DROP … FORCE``."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Mapping, Sequence

from ingestlab.engines.sql.mysql_protocol import MySQLProtocolSQL
from ingestlab.errors import ConfigError, UnsupportedOperationError

_PROPERTY = re.compile(r"^[a-z][a-z0-9_.]*$")


class StarRocksSQL(MySQLProtocolSQL):
    """StarRocks's statements (Doris's differ in :class:`~ingestlab.engines.doris.sql.DorisSQL`).

    Parameters
    ----------
    table_defaults : mapping, optional
        :meth:`create_table_sql` options every table gets unless the call gives them (a URL's
        ``?buckets=``, ``?replication_num=``).
    """

    #: Table models → the key clause of that model.
    KEY_CLAUSES: ClassVar[dict[str, str]] = {
        "duplicate": "DUPLICATE KEY", "aggregate": "AGGREGATE KEY", "unique": "UNIQUE KEY", "primary": "PRIMARY KEY",
    }
    #: Aggregate types a value column of an AGGREGATE KEY table may take (default REPLACE).
    AGGREGATE_TYPES: ClassVar[frozenset[str]] = frozenset({"SUM", "MAX", "MIN", "REPLACE", "REPLACE_IF_NOT_NULL"})
    #: ``create_table_sql`` options written as ``PROPERTIES``.
    TABLE_PROPERTY_OPTIONS: ClassVar[tuple[str, ...]] = ("replication_num",)
    #: ``PROPERTIES`` each table model's :meth:`table_ddl` writes (model → name → value).
    MODEL_PROPERTIES: ClassVar[dict[str, dict[str, str]]] = {}

    def __init__(self, engine: str = "", *, table_defaults: Mapping[str, Any] | None = None, **kwargs):
        super().__init__(engine, **kwargs)
        self.table_defaults = dict(table_defaults or {})

    def create_table_sql(self, table: str, columns: Sequence[tuple[str, str]], *,
                         primary_key: Sequence[str] = (), **options) -> str:
        """``CREATE TABLE`` of one table model, hash-distributed, with properties.

        Parameters
        ----------
        table : str
            Table name.
        columns : sequence of (name, type)
            The columns, key columns first.
        primary_key : sequence of str
            Shorthand for ``model="primary", key=primary_key``.
        model : str
            A key of :attr:`KEY_CLAUSES`; default ``duplicate`` (``primary`` with ``primary_key``).
        key : sequence of str
            The key columns: the first columns, in order (default: the first column).
        buckets : int
            ``BUCKETS n``; omitted, the engine chooses.
        distributed_by : sequence of str
            Hash distribution columns (default: the key).
        aggregate : dict
            For ``model="aggregate"``: value column → aggregate type (default ``REPLACE``).
        replication_num : int
            Written as a property, like every name in :attr:`TABLE_PROPERTY_OPTIONS`.
        properties : dict
            More ``PROPERTIES`` (name → value).

        Examples
        --------
        >>> StarRocksSQL().create_table_sql("t", [("id", "BIGINT"), ("v", "INT")], buckets=2, replication_num=1)
        'CREATE TABLE `t` (`id` BIGINT, `v` INT) DUPLICATE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 2 PROPERTIES ("replication_num" = "1")'
        """
        accepted = {"model", "key", "buckets", "distributed_by", "aggregate", "properties",
                    *self.TABLE_PROPERTY_OPTIONS}
        unknown = sorted(set(options) - accepted)
        if unknown:
            raise UnsupportedOperationError(f"{self.engine}: table options {unknown} not supported; "
                                            f"accepted: {', '.join(sorted(accepted))}")
        opts = {**self.table_defaults, **{k: v for k, v in options.items() if v is not None}}
        names = [name for name, _ in columns]
        model = opts.get("model") or ("primary" if primary_key else "duplicate")
        if model not in self.KEY_CLAUSES:
            raise ConfigError("model", model, "one of " + ", ".join(self.KEY_CLAUSES))
        key = list(opts.get("key") or primary_key or names[:1])
        if primary_key and list(primary_key) != key:
            raise ConfigError("key", key, f"the same columns as primary_key={list(primary_key)}")
        if key != names[:len(key)]:
            raise ConfigError("key", key, f"the first columns of the table, in order (e.g. {names[:len(key)]})")
        aggregate = {k: str(v).upper() for k, v in (opts.get("aggregate") or {}).items()}
        value_columns = set(names[len(key):]) if model == "aggregate" else set()
        for name, func in aggregate.items():
            if name not in value_columns:
                raise ConfigError("aggregate", name, f"a value column of an aggregate table: {sorted(value_columns)}")
            if func not in self.AGGREGATE_TYPES:
                raise ConfigError("aggregate", func, "one of " + ", ".join(sorted(self.AGGREGATE_TYPES)))
        cols = []
        for name, sql_type in columns:
            piece = f"{self.quote(name)} {self.column_type(sql_type)}"
            if name in value_columns:
                piece += " " + aggregate.get(name, "REPLACE")
            cols.append(piece)
        distributed = list(opts.get("distributed_by") or key)
        missing = [c for c in distributed if c not in names]
        if missing:
            raise ConfigError("distributed_by", missing, f"columns of the table: {names}")
        sql = (f"CREATE TABLE {self.quote(table)} ({', '.join(cols)}) "
               f"{self.KEY_CLAUSES[model]}({', '.join(map(self.quote, key))}) "
               f"DISTRIBUTED BY HASH({', '.join(map(self.quote, distributed))})")
        buckets = opts.get("buckets")
        if buckets is not None:
            if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
                raise ConfigError("buckets", buckets, "an integer ≥ 1")
            sql += f" BUCKETS {buckets}"
        properties = {name: opts[name] for name in self.TABLE_PROPERTY_OPTIONS if name in opts}
        properties.update(opts.get("properties") or {})
        if properties:
            sql += " PROPERTIES (" + ", ".join(f"{property_name(k)} = {string_literal(v)}"
                                               for k, v in properties.items()) + ")"
        return sql

    def table_ddl(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                  model: str | None = None, partitions: int | None = None) -> list[str]:
        """One ``CREATE TABLE`` of ``model``, ``partitions`` buckets (tablets; None: the engine chooses).

        Examples
        --------
        >>> StarRocksSQL().table_ddl("t", [("id", "BIGINT"), ("v", "INT")], model="unique", partitions=8)
        ['CREATE TABLE `t` (`id` BIGINT, `v` INT) UNIQUE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 8']
        """
        return [self.create_table_sql(table, columns, model=model, key=list(key) or None, buckets=partitions,
                                      properties=self.MODEL_PROPERTIES.get(model))]

    def drop_table_sql(self, table: str) -> str:
        """``DROP TABLE IF EXISTS … FORCE``: no copy left in the recycle bin for a day."""
        return f"DROP TABLE IF EXISTS {self.quote(table)} FORCE"


def property_name(name: str) -> str:
    """A table property's name as a DDL string literal, checked (lower-case letters, digits, ``_`` and ``.``)."""
    if not isinstance(name, str) or not _PROPERTY.match(name):
        raise ConfigError("properties", name, "a property name of lower-case letters, digits, '_' and '.'")
    return string_literal(name)


def string_literal(value: Any) -> str:
    """A double-quoted DDL string literal (properties cannot be driver parameters).

    Examples
    --------
    >>> string_literal('a"b')
    '"a\\\\"b"'
    """
    text = str(value)
    if "\n" in text or "\r" in text or "\0" in text:
        raise ConfigError("properties", text, "a value without line breaks or NUL")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
