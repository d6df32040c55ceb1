"""DuckDB as notebook 06's CSV reader: ``read_csv`` over the Hive text table, run in the scan's child process.

The child (:mod:`ingestlab.workloads._scan_child`) loads this file by its path, not as part of the
package, so that it imports DuckDB and nothing of the adapter: its RSS before the query is the
interpreter's and DuckDB's. Keep imports here to the standard library and the engine's own library.
"""

from __future__ import annotations

from typing import Any, Callable

#: Reader name (the ``engine`` column of notebook 06's samples) → what reads the files and how.
READERS = {"duckdb": "DuckDB read_csv, hive partitioning"}
#: This reader's place among notebook 06's (``csv_scan.DATAFRAME_ORDER`` is the dataframe readers').
ORDER = 1
#: Whether the query runs in a server the reader starts (then its backend's memory and CPU are the scan's).
SERVER = False


def scan(spec: dict, state: dict) -> tuple[str, Callable[[], Any]]:
    """DuckDB's version, and a call that runs ``spec``'s query (``sql``) over ``table_dir`` and returns its rows."""
    import duckdb

    con = duckdb.connect()
    cols = ", ".join(f"'{n}': '{'BIGINT' if t == 'BIGINT' else 'VARCHAR'}'" for n, t in spec["columns"].items())
    con.execute(f"""CREATE VIEW t AS SELECT * FROM read_csv('{spec["table_dir"]}/*/*.txt', delim='\x01', quote='',
                escape='', header=false, nullstr='\\N', auto_detect=false, hive_partitioning=true,
                hive_types={{'dt': 'VARCHAR'}}, columns={{{cols}}})""")
    sql = spec["sql"]
    return duckdb.__version__, lambda: con.execute(sql).fetchall()
