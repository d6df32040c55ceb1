"""The SQL text every dialect shares: ``CREATE TABLE``, ``INSERT … VALUES``, ``INSERT … SELECT``, quoting."""

from __future__ import annotations

import functools
import re
from typing import ClassVar, Sequence

from sqlalchemy.engine import default

from ingestlab.engines.steps import unsupported
from ingestlab.errors import UnsupportedOperationError


class SQLBuilder:
    """The statements of one SQL dialect, as text with driver placeholders; dialects override what differs.

    Parameters
    ----------
    engine : str
        The engine's name, for error messages.
    placeholder : str
        The driver's placeholder for one value (``%s``).
    secondary_indexes : int
        Secondary indexes of a model that has them (``primary_key_indexes``).

    Examples
    --------
    >>> SQLBuilder("x").create_table_sql("t", [("id", "BIGINT"), ("v", "INT")], primary_key=["id"])
    'CREATE TABLE "t" ("id" BIGINT, "v" INT, PRIMARY KEY ("id"))'
    """

    #: The SQLAlchemy dialect class whose identifier quoting this dialect uses (None: ANSI double quotes).
    QUOTING: ClassVar[type[default.DefaultDialect] | None] = None
    #: Whether a backslash escapes the next character inside quotes (ClickHouse, MySQL), as :meth:`inline` reads text.
    BACKSLASH_ESCAPES: ClassVar[bool] = False

    def __init__(self, engine: str = "", *, placeholder: str = "%s", secondary_indexes: int = 3):
        self.engine = engine
        self.placeholder = placeholder
        self.secondary_indexes = secondary_indexes

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.engine!r})"

    # -- identifiers and types ------------------------------------------------------------------
    def quote(self, identifier: str) -> str:
        """``identifier`` quoted by SQLAlchemy's quoting for this dialect."""
        return _preparer(self.QUOTING).quote_identifier(identifier)

    def column_type(self, sql_type: str) -> str:
        """The dialect's spelling of a portable column type. Default: unchanged."""
        return sql_type

    # -- tables ---------------------------------------------------------------------------------
    def create_table_sql(self, table: str, columns: Sequence[tuple[str, str]], *,
                         primary_key: Sequence[str] = (), **options) -> str:
        """One ``CREATE TABLE`` for ``columns`` (name, type); dialects add their clauses."""
        if options:
            raise UnsupportedOperationError(f"{self.engine}: table options {sorted(options)} not supported")
        cols = [f"{self.quote(n)} {self.column_type(t)}" for n, t in columns]
        if primary_key:
            cols.append("PRIMARY KEY (" + ", ".join(map(self.quote, primary_key)) + ")")
        return f"CREATE TABLE {self.quote(table)} (" + ", ".join(cols) + ")"

    def table_ddl(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                  model: str | None = None, partitions: int | None = None) -> list[str]:
        """The statements that create ``table`` of ``model`` in ``partitions`` (both already checked by the engine).

        Default: one ``CREATE TABLE`` with ``key`` as primary key, no models, no partitions.
        """
        return [self.create_table_sql(table, columns, primary_key=key)]

    def secondary_index_columns(self, names: Sequence[str], key: Sequence[str]) -> list[str]:
        """The columns a model with secondary indexes indexes: the first ``secondary_indexes`` outside the key.

        Examples
        --------
        >>> SQLBuilder().secondary_index_columns(["id", "a", "b", "c", "d"], ["id"])
        ['a', 'b', 'c']
        """
        return [c for c in names if c not in key][:self.secondary_indexes]

    def drop_table_sql(self, table: str) -> str:
        """``DROP TABLE IF EXISTS``."""
        return f"DROP TABLE IF EXISTS {self.quote(table)}"

    def add_primary_key_sql(self, table: str, key: Sequence[str]) -> str:
        """``ALTER TABLE … ADD PRIMARY KEY (key)``: the key of a table loaded without it."""
        return f"ALTER TABLE {self.quote(table)} ADD PRIMARY KEY (" + ", ".join(map(self.quote, key)) + ")"

    # -- writes ---------------------------------------------------------------------------------
    def insert_sql(self, table: str, columns: Sequence[str], n_rows: int = 1) -> str:
        """A multi-row ``INSERT … VALUES`` with driver placeholders for ``n_rows`` rows."""
        row = "(" + ", ".join([self.placeholder] * len(columns)) + ")"
        cols = ", ".join(map(self.quote, columns))
        return f"INSERT INTO {self.quote(table)} ({cols}) VALUES " + ", ".join([row] * n_rows)

    def upsert_sql(self, table: str, columns: Sequence[str], key: str, n_rows: int = 1) -> str:
        """A multi-row ``INSERT`` that overwrites every column but ``key`` when ``key`` exists."""
        others = [c for c in columns if c != key]
        if key not in columns or not others:
            raise ValueError(f"upsert_sql: key {key!r} must be one of {list(columns)}, beside at least one other")
        return f"{self.insert_sql(table, columns, n_rows)} {self.upsert_clause(key, others)}"

    @unsupported("no conflict clause for an upsert")
    def upsert_clause(self, key: str, others: Sequence[str]) -> str:
        """The dialect's conflict clause for :meth:`upsert_sql` (dialects override)."""
        raise UnsupportedOperationError(f"{self.engine}: no upsert")

    def insert_select_sql(self, target: str, source: str) -> str:
        """``INSERT INTO target SELECT * FROM source``."""
        return f"INSERT INTO {self.quote(target)} SELECT * FROM {self.quote(source)}"

    def inline(self, sql: str, literals: Sequence[str]) -> str:
        """``sql`` with each placeholder outside quotes replaced by the next of ``literals`` (SQL text already).

        For engines whose statements are sent as text with their values in it: the dialect
        writes each value as a literal, this puts them where the placeholders are. Quoted names
        and strings (``'…'``, ``"…"``, `````…`````) are copied as they are, so a placeholder inside a
        quoted name stays part of the name.

        Raises
        ------
        ValueError
            When ``sql`` has more or fewer placeholders than ``literals``.

        Examples
        --------
        >>> SQLBuilder(placeholder="?").inline('INSERT INTO "a?b" VALUES (?, ?)', ["1", "NULL"])
        'INSERT INTO "a?b" VALUES (1, NULL)'
        """
        pattern = _inline_pattern(self.placeholder, self.BACKSLASH_ESCAPES)
        values = iter(literals)
        used = [0]

        def put(match: re.Match) -> str:
            if match.group() != self.placeholder:
                return match.group()
            used[0] += 1
            value = next(values, None)
            if value is None:
                raise ValueError(f"{self.engine}: more placeholders than the {len(literals)} values in {sql[:80]!r}")
            return value
        text = pattern.sub(put, sql)
        if used[0] != len(literals):
            raise ValueError(f"{self.engine}: {used[0]} placeholders for {len(literals)} values in {sql[:80]!r}")
        return text

    @unsupported("no server-side row generator in the lab")
    def generate_rows_sql(self, table: str, columns: Sequence[str], n: int) -> str:
        """One ``INSERT … SELECT`` that makes ``n`` rows on the server: the first column 1…n, the others 0.

        The study's ``insert into demo select generate_series(1,1000000),0,0,0,0``, in the
        dialect's own row generator (dialects override).
        """
        raise UnsupportedOperationError(f"{self.engine}: no generate_rows_sql")

    @unsupported("no table property for a group commit interval")
    def group_commit_interval_sql(self, table: str, interval_ms: int) -> str:
        """The statement that sets ``table``'s group commit interval to ``interval_ms``."""
        raise UnsupportedOperationError(f"{self.engine}: no group commit interval")

    def _generated(self, table: str, columns: Sequence[str], select: str, n: int) -> str:
        """``INSERT INTO table (columns) <select>``: the frame of every :meth:`generate_rows_sql`.

        ``select`` is the dialect's counter as a template: ``{n}`` is the row count, ``{end}``
        one past it (an exclusive end), ``{zeros}`` the ``, 0`` of each column after the first.

        Examples
        --------
        >>> SQLBuilder()._generated("t", ["id", "a", "b"], "SELECT i{zeros} FROM count_to({n}) -- {end}", 3)
        'INSERT INTO "t" ("id", "a", "b") SELECT i, 0, 0 FROM count_to(3) -- 4'
        """
        counter = select.format(n=int(n), end=int(n) + 1, zeros=", 0" * (len(columns) - 1))
        return f"INSERT INTO {self.quote(table)} ({', '.join(map(self.quote, columns))}) {counter}"


@functools.lru_cache(maxsize=None)
def _inline_pattern(placeholder: str, backslash: bool) -> re.Pattern:
    """Text in single, double or back quotes (a doubled quote inside, and with ``backslash`` any escaped
    character), or the placeholder."""
    quoted = []
    for q in ("'", '"', "`"):
        inside = [f"[^{q}\\\\]" if backslash else f"[^{q}]", q + q] + (["\\\\."] if backslash else [])
        quoted.append(q + "(?:" + "|".join(inside) + ")*" + q)
    return re.compile("|".join([*quoted, re.escape(placeholder)]), re.S)


@functools.lru_cache(maxsize=None)
def _preparer(dialect: type[default.DefaultDialect] | None):
    # one preparer per dialect class, built on first use
    return (dialect or default.DefaultDialect)().identifier_preparer
