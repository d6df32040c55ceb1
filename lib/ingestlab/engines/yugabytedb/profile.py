"""Parse YugabyteDB EXPLAIN (ANALYZE, DIST) output: PostgreSQL's plus storage-layer counters."""

from __future__ import annotations

import re

from ingestlab.engines.postgres import profile as postgres_profile
from ingestlab.engines.postgres.profile import ExplainParser
from ingestlab.profiles._profile import Profile

__all__ = ["KINDS", "YugabyteExplainParser", "parse", "sniff"]

_YB_MARKERS = re.compile(
    r"Storage (?:Table |Index )?(?:Read|Write|Flush) (?:Requests|Execution Time)"
    r"|Storage Execution Time|Catalog (?:Read|Write) Requests|Storage Rows Scanned"
    # YugabyteDB's own summary line; PostgreSQL prints no such line (its MEMORY option says "Memory:")
    r"|^\s*Peak Memory Usage: \d+ kB\s*$"
    r"|^\s*(?:->\s+)?YB ",
    re.MULTILINE,
)


class YugabyteExplainParser(ExplainParser):
    """EXPLAIN output of YugabyteDB (YSQL is PostgreSQL's executor over DocDB).

    Per-node ``Storage Table Read Requests``/``... Execution Time``/``Rows Scanned`` become
    node items; the summary lines after ``Execution Time`` (``Storage Read Requests``,
    ``Storage Write Requests`` -- sometimes printed with decimals, ``4242.000`` --
    ``Catalog Read Execution Time``, ``Storage Execution Time``, ``Peak Memory Usage``)
    become summary keys such as ``storage_write_requests``, ``catalog_read_execution_ms``,
    ``storage_execution_ms`` and ``peak_memory_bytes``. ``Metric ...`` lines under a counter
    are items at ``<counter's path>/<counter>``.
    """

    KIND_TEXT = "yugabyte_explain"
    KIND_JSON = "yugabyte_explain"
    ENGINE = "yugabyte"
    EXTRA_SUMMARY = re.compile(r"^(Storage|Catalog) .*|^Peak Memory Usage$")

    def sniff(self, text: str) -> str | None:
        """Return ``yugabyte_explain`` for YugabyteDB EXPLAIN output, else None."""
        if _YB_MARKERS.search(text) and super().sniff(text):
            return self.KIND_TEXT
        return None


_PARSER = YugabyteExplainParser()
KINDS = _PARSER.kinds
#: What the anatomy of a profile of each kind says beside its numbers (as PostgreSQL's: the same plan times).
ANATOMY_NOTES = dict.fromkeys(KINDS, postgres_profile.ANATOMY_NOTES["postgres_explain_text"])
#: Each kind this module reads, with what produces it (``ingestlab.profiles.KINDS`` gathers them).
DESCRIPTIONS = {"yugabyte_explain": "YugabyteDB EXPLAIN (ANALYZE, DIST) output, text or JSON"}
#: Where :func:`ingestlab.profiles.detect` tries this module: lower first (see ``profiles._modules``).
SNIFF_RANK = 2


def sniff(text: str) -> str | None:
    """Return ``yugabyte_explain`` for YugabyteDB EXPLAIN output, else None."""
    return _PARSER.sniff(text)


def parse(text: str, kind: str | None = None) -> Profile:
    """Parse YugabyteDB EXPLAIN output; see `ExplainParser.parse`."""
    return _PARSER.parse(text, kind)
