"""PostgreSQL as notebook 06's CSV reader: a ``file_fdw`` foreign table per file, joined by ``UNION ALL``.

The scan's child process (:mod:`ingestlab.workloads._scan_child`) loads this file by its path; the
server reads the files, so the scan's memory and CPU are its backend's (``state["backend"]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

#: Reader name (the ``engine`` column of notebook 06's samples) → what reads the files and how.
READERS = {"postgres": "PostgreSQL file_fdw (a foreign table per file, UNION ALL)"}
#: This reader's place among notebook 06's (``csv_scan.DATAFRAME_ORDER`` is the dataframe readers').
ORDER = 20
#: Whether the query runs in a server the reader starts (then its backend's memory and CPU are the scan's).
SERVER = True


def scan(spec: dict, state: dict) -> tuple[str, Callable[[], Any]]:
    """The server's version, and a call that runs ``spec``'s query (``sql``) over its ``files``.

    The server is started here and left in ``state``: ``close`` stops it, ``backend`` is the pid of
    the backend that runs the query.
    """
    from ingestlab.engines import registry

    e = registry.get("postgres")
    e.start()
    state["close"] = e.close
    e.execute("CREATE EXTENSION IF NOT EXISTS file_fdw")
    e.execute("CREATE SERVER IF NOT EXISTS csv FOREIGN DATA WRAPPER file_fdw")
    cols = ", ".join(f"{n} {'bigint' if t == 'BIGINT' else 'text'}" for n, t in spec["columns"].items())
    parts = []
    for i, f in enumerate(spec["files"]):
        e.execute(f"CREATE FOREIGN TABLE f{i} ({cols}) SERVER csv OPTIONS (filename %s, format 'csv', "
                  f"delimiter E'\\x01', quote E'\\x03', null '\\N')", [f])
        parts.append(f"SELECT *, %s::text AS dt FROM f{i}")
    e.execute("CREATE VIEW t AS " + " UNION ALL ".join(parts).replace("%s", "'{}'").format(
        *[Path(f).parent.name.removeprefix("dt=") for f in spec["files"]]))
    version = e.execute("SHOW server_version")[0][0]
    state["backend"] = e.execute("SELECT pg_backend_pid()")[0][0]
    sql = spec["sql"]
    return version, lambda: e.execute(sql)
