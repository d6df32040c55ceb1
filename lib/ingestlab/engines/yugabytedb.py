"""YugabyteDB: a YSQL server at a ``yugabytedb://`` URL, through psycopg2."""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar, Sequence

from ingestlab.engines._anatomy import anatomy_frame
from ingestlab.engines.postgres import Postgres


class YugabyteDB(Postgres):
    """YugabyteDB's YSQL (PostgreSQL's executor over the DocDB storage layer); differs from :class:`Postgres` here.

    No local server (no binaries here): ``yugabytedb://yugabyte@127.0.0.1:5433/yugabyte``
    (``compose/yugabytedb.yml``). The bulk path is ``COPY`` as in PostgreSQL. The commit
    variants are session settings, so they work on any server:

    * ``transactional`` — the default path: each write is a distributed transaction
      (provisional records, then the transaction status tablet);
    * ``non_transactional`` — ``yb_disable_transactional_writes = on``: writes skip the
      transaction machinery (each batch is applied directly, without atomicity across rows);
    * ``upsert_mode`` — ``yb_enable_upsert_mode = on``: INSERT writes blindly, without the
      read that checks for an existing key.

    The anatomy runs each INSERT under ``EXPLAIN (ANALYZE, DIST)`` (text) and reads planning,
    execution and the storage layer's counters with ``ingestlab.profiles``.
    """

    NAME = "yugabytedb"
    URL_SCHEMES = ("yugabytedb",)
    DEFAULT_PORT = 5433
    PROFILE_KIND = "yugabyte_explain"
    HAS_LOCAL_SERVER = False
    INSTRUMENT_SETTINGS: ClassVar[dict[str, str]] = {}
    COMMIT_VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "transactional": {"yb_disable_transactional_writes": "off", "yb_enable_upsert_mode": "off"},
        "non_transactional": {"yb_disable_transactional_writes": "on"},
        "upsert_mode": {"yb_enable_upsert_mode": "on"},
    }
    SESSION_SETTINGS: ClassVar[frozenset[str]] = Postgres.SESSION_SETTINGS | {
        "yb_disable_transactional_writes", "yb_enable_upsert_mode"}
    #: Statement prefix of the anatomy (the INSERT follows).
    EXPLAIN_PREFIX: ClassVar[str] = "EXPLAIN (ANALYZE, DIST) "
    #: Storage-layer counters of the EXPLAIN summary recorded per statement.
    STORAGE_COUNTERS: ClassVar[tuple[str, ...]] = (
        "storage_write_requests", "storage_flush_requests", "storage_read_requests", "catalog_read_requests")

    def statement_anatomy(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]):
        """Split single-row INSERTs into planning, execution and the rest, with DocDB's counters.

        Returns
        -------
        pandas.DataFrame
            Pass ``explain``, per statement: ``client_total``, ``planning``, ``execution``,
            ``other`` (client total − planning − execution: round trip, parse, commit), and
            extras ``storage_execution`` (ms spent in DocDB, inside execution) and the
            storage request counts (:attr:`STORAGE_COUNTERS`, ``count``). Pass ``stats``:
            the means (see :func:`~ingestlab.engines._anatomy.anatomy_frame`).
        """
        from ingestlab.profiles import parse

        explain = self.EXPLAIN_PREFIX + self.insert_sql(table, columns, 1)
        client, parts, extras = [], [], []
        for row in rows:
            t0 = time.perf_counter_ns()
            plan = self.execute(explain, row)
            client.append((time.perf_counter_ns() - t0) / 1e6)
            summary = parse("\n".join(str(r[0]) for r in plan), self.PROFILE_KIND).summary
            source = "EXPLAIN (ANALYZE, DIST)"
            parts.append([(name, float(summary[key]), f"{source} {key}")
                          for name, key in (("planning", "planning_ms"), ("execution", "execution_ms"))
                          if key in summary])
            found = [("storage_execution", float(summary["storage_execution_ms"]), math.nan,
                      f"{source} storage_execution_ms")] if "storage_execution_ms" in summary else []
            found += [(key, math.nan, float(summary[key]), f"{source} {key}")
                      for key in self.STORAGE_COUNTERS if key in summary]
            extras.append(found)
        return anatomy_frame("explain", client, parts, extras=extras)
