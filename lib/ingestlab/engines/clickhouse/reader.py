"""chDB (ClickHouse in process) as notebook 06's CSV reader: ``file()`` over the Hive text table, quotes off.

The scan's child process (:mod:`ingestlab.workloads._scan_child`) loads this file by its path, so
that it imports chDB and nothing of the adapter. Keep imports here to the standard library and chDB.
"""

from __future__ import annotations

import json
from typing import Any, Callable

#: Reader name (the ``engine`` column of notebook 06's samples) → what reads the files and how.
READERS = {"chdb": "chDB (ClickHouse) file() CSV, quotes off"}
#: This reader's place among notebook 06's (``csv_scan.DATAFRAME_ORDER`` is the dataframe readers').
ORDER = 2
#: Whether the query runs in a server the reader starts (then its backend's memory and CPU are the scan's).
SERVER = False


def scan(spec: dict, state: dict) -> tuple[str, Callable[[], Any]]:
    """chDB's version, and a call that runs ``spec``'s query (``sql``) over ``table_dir`` and returns its rows."""
    import chdb

    # optimize_count_from_files=0: chDB 4.4's row counter for CSV files treats '"' as a quote even
    # with double quotes off, and counts 3 978 rows of a table of 8 000 (tests/workloads/test_csv_scan.py)
    structure = ", ".join(f"{n} {'Int64' if t == 'BIGINT' else 'Nullable(String)'}" for n, t in spec["columns"].items())
    src = f"file('{spec['table_dir']}/*/*.txt', 'CSV', '{structure}')"
    select = {"count_star": "COUNT(*)"}.get(spec["query"], "*, dt")
    sql = (spec["sql"].replace("SELECT *", f"SELECT {select}").replace("SELECT COUNT(*)", f"SELECT {select}")
           .replace("FROM t", f"FROM {src}")
           + " SETTINGS format_csv_delimiter='\\x01', format_csv_allow_double_quotes=0,"
             " format_csv_allow_single_quotes=0, input_format_csv_empty_as_default=0, use_hive_partitioning=1,"
             " optimize_count_from_files=0")
    return chdb.__version__, lambda: json.loads(chdb.query(sql, "JSONCompact").bytes())["data"]
