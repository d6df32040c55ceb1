"""Apache Doris's SQL: StarRocks's, without PRIMARY KEY tables, with merge-on-write and a group commit interval."""

from __future__ import annotations

from typing import ClassVar

from ingestlab.engines.starrocks.sql import StarRocksSQL, string_literal
from ingestlab.errors import ConfigError


class DorisSQL(StarRocksSQL):
    """Doris's statements; differ from :class:`~ingestlab.engines.starrocks.sql.StarRocksSQL` in the models."""

    #: Doris has no PRIMARY KEY model: a keyed table is UNIQUE KEY (merge-on-write).
    KEY_CLAUSES: ClassVar[dict[str, str]] = {
        "duplicate": "DUPLICATE KEY", "aggregate": "AGGREGATE KEY", "unique": "UNIQUE KEY",
    }
    #: UNIQUE KEY tables are merge-on-write (the default since Doris 2.1, written out for older ones).
    MODEL_PROPERTIES: ClassVar[dict[str, dict[str, str]]] = {
        "unique": {"enable_unique_key_merge_on_write": "true"},
    }
    TABLE_PROPERTY_OPTIONS = StarRocksSQL.TABLE_PROPERTY_OPTIONS + ("group_commit_interval_ms",)

    def group_commit_interval_sql(self, table: str, interval_ms: int) -> str:
        """``ALTER TABLE … SET ("group_commit_interval_ms" = "N")``: how often the table commits its group.

        Examples
        --------
        >>> DorisSQL().group_commit_interval_sql("dt", 2000)
        'ALTER TABLE `dt` SET ("group_commit_interval_ms" = "2000")'
        """
        if isinstance(interval_ms, bool) or not isinstance(interval_ms, int) or interval_ms < 1:
            raise ConfigError("INTERVAL_MS", interval_ms, "an integer number of milliseconds ≥ 1")
        return f'ALTER TABLE {self.quote(table)} SET ({string_literal("group_commit_interval_ms")} = "{interval_ms}")'
