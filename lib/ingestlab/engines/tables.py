"""A table's state on an engine: create it, count it, weigh it, quiet it (``engine.tables``), and the hooks behind it."""

from __future__ import annotations

from typing import Sequence

from ingestlab.engines import capabilities
from ingestlab.engines.bound import Bound
from ingestlab.engines.steps import unsupported
from ingestlab.errors import UnsupportedOperationError


class Tables(Bound):
    """The table steps of one engine, bound to it; engines change them through private hooks.

    ``ddl`` is written by the engine's SQL builder and checked by its ``table_models``
    capability; ``reset``, ``count_rows``, ``data_bytes`` and ``settle`` call the engine's
    ``_reset_table``, ``_count_rows``, ``_data_bytes`` and ``_settle``, which an adapter
    overrides where its engine differs (a missing one raises with the engine's reason).
    """

    def ddl(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
            model: str | None = None, partitions: int | None = None) -> list[str]:
        """The statements that create ``table``: its key model, its hash partitions, its indexes.

        The model and the partitions are checked by the engine's ``table_models`` capability
        (its defaults where it has none), the text written by ``engine.sql`` (``partitions=None``:
        the engine's default, one partition or its own bucket count).
        """
        self.engine.has("table_ddl", check=True)  # an engine that makes no tables by DDL says why
        models = capabilities.of(self.engine, "table_models")(self.engine)
        model = models.resolve_model(model, key)
        n = None if partitions is None else models.check_partitions(partitions)
        return self.engine.sql.table_ddl(table, columns, key=key, model=model, partitions=n)

    def reset(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
              model: str | None = None, partitions: int | None = None) -> None:
        """Drop ``table`` if it exists and create it empty (:meth:`ddl`)."""
        self.engine._reset_table(table, columns, key=key, model=model, partitions=partitions)

    def count_rows(self, table: str) -> int:
        """The rows of ``table``."""
        return self.engine._count_rows(table)

    def data_bytes(self, table: str) -> int:
        """Bytes on disk of ``table`` with its indexes."""
        return self.engine._data_bytes(table)

    def settle(self, table: str, timeout_s: float = 600.0) -> None:
        """Leave ``table`` quiet for timed writes: fresh statistics, nothing dirty or pending."""
        self.engine._settle(table, timeout_s)


class TableHooks:
    """The table steps' defaults on ``Engine``: private hooks an adapter overrides where its engine differs."""

    def _reset_table(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                     model: str | None = None, partitions: int | None = None) -> None:
        """Drop ``table`` if it exists and run its DDL (``tables.ddl``)."""
        statements = self.tables.ddl(table, columns, key=key, model=model, partitions=partitions)
        self.execute(self.sql.drop_table_sql(table))
        for statement in statements:
            self.execute(statement)

    def _count_rows(self, table: str) -> int:
        """``SELECT count(*)`` of ``table``."""
        return int(self.execute(f"SELECT count(*) FROM {self.sql.quote(table)}")[0][0])

    @unsupported("cannot tell a table's bytes on disk")
    def _data_bytes(self, table: str) -> int:
        """Bytes on disk of ``table`` with its indexes (engines that can tell implement it)."""
        raise UnsupportedOperationError(f"{self.NAME}: no data_bytes")

    @unsupported("cannot settle a table")
    def _settle(self, table: str, timeout_s: float = 600.0) -> None:
        """Fresh statistics, nothing dirty or pending on ``table`` (engines that can implement it)."""
        raise UnsupportedOperationError(f"{self.NAME}: no settle")
