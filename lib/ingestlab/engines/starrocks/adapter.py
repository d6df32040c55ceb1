"""StarRocks: a cluster at a ``starrocks://`` URL, through its MySQL protocol and Stream Load."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, Iterable, Sequence

from ingestlab import anatomy
from ingestlab.engines.base import EngineStyle
from ingestlab.engines.capabilities import BulkLoad, LoadSetting, LoadSettings, ProfiledStatement, TableModels
from ingestlab.engines.mysql_protocol import MySQLProtocol, sql_value
from ingestlab.engines.starrocks.sql import StarRocksSQL
from ingestlab.engines.stream_load_client import StreamLoadClient, StreamLoadResult
from ingestlab.errors import ConfigError, UnsupportedOperationError
from ingestlab.polling import poll


@dataclasses.dataclass(frozen=True)
class ProfileCapture:
    """The server's own record of one statement, as raw text.

    Attributes
    ----------
    query_id : str
        The statement's query id.
    texts : dict
        Profile kind (``ingestlab.profiles.KINDS``) → the text the server returned.
    """

    query_id: str
    texts: dict[str, str]


class StarRocksProfiledStatement(ProfiledStatement):
    """Each INSERT's query profile."""

    PROFILE_KIND = "starrocks_analyze_profile"

    def recorder(self, table: str, columns: Sequence[str]) -> anatomy.Recorder:
        """Each INSERT's profile, captured the way the seed did, split as the seed splits TotalTime.

        Profiling is switched on for the pass (``SET enable_profile = true``) and back to its
        previous value after it; after each INSERT its query id, ``ANALYZE PROFILE FROM '<id>'``
        and the raw profile (``get_query_profile('<id>')``) are read and kept in
        :attr:`last_profiles`. Parts: ``execution`` (ExecutionTime: the backends' work) and
        ``fe_overhead`` (TotalTime − ExecutionTime: parse, plan, transaction, commit and publish
        in the FE); the unexplained rest is the network and the client. Extras
        ``olap_table_sink`` and ``planning`` where the profile has them (inside the parts).
        """
        return _ProfileRecorder(self.engine, table, columns)


class StarRocksTableModels(TableModels):
    """StarRocks' key models, hash-distributed into buckets (tablets)."""

    DEFAULT_MODEL = "duplicate"
    KEYED_MODEL = "primary"
    #: Buckets (tablets) per table: the adapter allows up to 1024.
    MAX_PARTITIONS = 1024
    PARTITION_UNIT = "bucket"
    ONE_PARTITION = "1 bucket (one tablet)"
    #: Table models (``create_table_sql(model=...)``) → the key clause of that model (its builder's).
    MODELS: ClassVar[dict[str, str]] = dict(StarRocksSQL.KEY_CLAUSES)


class StarRocksLoadSettings(LoadSettings):
    """StarRocks' load settings: the defaults only."""

    #: One setting: the defaults (its safety trade-offs are table properties, not in the lab yet).
    SETTINGS: ClassVar[dict[str, LoadSetting]] = {"default": LoadSetting("the cluster's defaults")}


class StarRocksBulkLoad(BulkLoad):
    """Stream Load over HTTP to the FE."""

    PATH = "stream_load"

    def load(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False,
             create: Sequence[str] = ()) -> int:
        """One Stream Load of the chunks' rows (:meth:`StarRocks.stream_load`); the reply is kept in ``last_load``.

        Returns the rows the server reports loaded. With ``replace`` the table is emptied first.
        """
        for statement in create:  # no transactional DDL: created just before the load
            self.engine.execute(statement)
        if replace:
            self.engine.execute(f"TRUNCATE TABLE {self.engine.sql.quote(table)}")
        rows = (row for chunk in chunks for row in zip(*(chunk.column(c).to_pylist() for c in columns)))
        self.engine.last_load = self.engine.stream_load(table, columns, rows)
        return int(self.engine.last_load.summary.get("loaded_rows") or 0)


class StarRocks(MySQLProtocol):
    """StarRocks through its FE's MySQL protocol; bulk path Stream Load over the FE's HTTP port.

    It extends the protocol (:class:`~ingestlab.engines.mysql_protocol.MySQLProtocol`), not
    :class:`~ingestlab.engines.mysql.MySQL`: nothing of InnoDB's is inherited, so the steps
    it lacks are the contract's defaults, for these reasons: no memory budget (a cluster's
    memory is set in its BE configuration), no I/O counters (the FE's protocol has none of
    InnoDB's kind), no :meth:`_settle` (compaction runs on the backends and cannot be awaited
    through the FE), no :meth:`_data_bytes` (tablet sizes come from ``SHOW DATA``), no commit
    counters (the FE reports no log flushes), no row generator in the lab yet, and no
    ``native_load`` (its bulk path is Stream Load over HTTP, which its ``bulk_load`` is).

    There is no local StarRocks in the lab (no binaries, no Docker here); give a URL, e.g.
    ``starrocks://root@127.0.0.1:9030/ingestlab?http_port=8030`` (see ``compose/``). Query
    keys the lab reads itself and does not pass to the driver:

    * ``http_port`` — the FE's HTTP port for Stream Load (default 8030);
    * ``label`` — the engine's name in results, to tell side-by-side clusters apart
      (``?label=shared-data`` and ``?label=shared-nothing``);
    * ``buckets``, ``replication_num`` — defaults for every ``CREATE TABLE`` the adapter
      writes (a one-backend cluster needs ``replication_num=1`` unless its FE sets
      ``default_replication_num = 1``).

    DDL: :meth:`create_table_sql` writes the table models :attr:`TABLE_MODELS` with
    ``DISTRIBUTED BY HASH(...) [BUCKETS n]`` and ``PROPERTIES``. Settings are session
    variables (``SET name = value``). The anatomy captures each INSERT's profile the way the
    study did (``SET enable_profile = true``, the INSERT, its query id, ``ANALYZE PROFILE
    FROM '<id>'``) plus the raw profile from ``get_query_profile('<id>')``; the texts are
    kept in :attr:`last_profiles` and turned into numbers by ``ingestlab.profiles``.
    """

    NAME = "starrocks"
    STYLE = EngineStyle(title="StarRocks", colour="#D55E00", marker="o", words={
        "duplicate": "DUPLICATE KEY", "aggregate": "AGGREGATE KEY", "unique": "UNIQUE KEY",
        "primary": "PRIMARY KEY",
    })
    SQL = StarRocksSQL
    #: One deployment has one commit protocol (compare deployments with ``?label=``), and no INSERT
    #: variant groups commits: no ``commit_variants``, and ``group_commit`` says why it is missing.
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        "group_commit": ("StarRocks has no group commit for INSERT … VALUES; its nearest equivalent is "
                         "Stream Load merge commit (3.4+: the enable_merge_commit header, see "
                         "stream_load_group_headers), which the INSERT driver does not use"),
        "profiled_statement": StarRocksProfiledStatement, "table_models": StarRocksTableModels,
        "load_settings": StarRocksLoadSettings, "bulk_load": StarRocksBulkLoad,
    }
    #: Stream Load merge commit (StarRocks ≥ 3.4): variant → headers. The interval is how long
    #: the merged load collects requests; ``merge_commit_async`` returns before the commit.
    MERGE_COMMIT_HEADERS: ClassVar[dict[str, dict[str, str]]] = {
        "merge_commit_sync": {"enable_merge_commit": "true", "merge_commit_async": "false"},
        "merge_commit_async": {"enable_merge_commit": "true", "merge_commit_async": "true"},
    }
    #: The FE's HTTP port when the URL has no ``http_port``.
    DEFAULT_HTTP_PORT: ClassVar[int] = 8030
    #: URL query keys that give ``create_table_sql`` defaults.
    TABLE_DEFAULT_KEYS: ClassVar[tuple[str, ...]] = ("buckets", "replication_num")
    WIRE = dataclasses.replace(MySQLProtocol.WIRE, schemes=("starrocks",), default_port=9030, sqlglot_dialect="starrocks",
                               lab_query_keys=MySQLProtocol.WIRE.lab_query_keys + ("http_port", *TABLE_DEFAULT_KEYS))
    VERSION_SQL: ClassVar[str] = "SELECT current_version()"
    SETTINGS_SQL: ClassVar[str] = (
        "SELECT VARIABLE_NAME, VARIABLE_VALUE, IS_CHANGED FROM information_schema.verbose_session_variables")
    #: The profile statements, values as driver parameters.
    ENABLE_PROFILE_SQL: ClassVar[str] = "SET enable_profile = true"
    LAST_QUERY_ID_SQL: ClassVar[str] = "SELECT last_query_id()"
    PROFILE_LIST_SQL: ClassVar[str] = "SHOW PROFILELIST LIMIT %s"
    ANALYZE_PROFILE_SQL: ClassVar[str] = "ANALYZE PROFILE FROM %s"
    RAW_PROFILE_SQL: ClassVar[str] = "SELECT get_query_profile(%s)"
    #: Profile kinds a capture holds, the first with a number winning in the anatomy.
    PROFILE_TEXTS: ClassVar[tuple[str, ...]] = ("starrocks_analyze_profile", "starrocks_profile")
    #: Seconds to wait for a finished statement's profile to be reported to the FE.
    PROFILE_WAIT_S: ClassVar[float] = 10.0

    def __init__(self, url=None, **kwargs):
        super().__init__(url, **kwargs)
        self._stream_load: StreamLoadClient | None = None
        #: The :class:`ProfileCapture` of each INSERT of the last anatomy pass (``ProfiledStatement.anatomy``).
        self.last_profiles: list[ProfileCapture] = []
        #: The reply of the last bulk load (:class:`StarRocksBulkLoad`).
        self.last_load: StreamLoadResult | None = None

    def close(self) -> None:
        if self._stream_load is not None:
            self._stream_load.close()
            self._stream_load = None
        super().close()

    # -- URL -------------------------------------------------------------------------------
    def _query_int(self, key: str) -> int | None:
        value = self.connection.lab.get(key) if self.connection is not None else None
        if value is None:
            return None
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = 0
        if number < 1:
            raise ConfigError(self._parameter, f"{self.display_url} (?{key}={value})", f"?{key}= a positive integer")
        return number

    @property
    def http_port(self) -> int:
        """The FE's HTTP port: the URL's ``http_port``, else :attr:`DEFAULT_HTTP_PORT`."""
        return self._query_int("http_port") or self.DEFAULT_HTTP_PORT

    def table_defaults(self) -> dict[str, int]:
        """``create_table_sql`` options given by the URL (:attr:`TABLE_DEFAULT_KEYS`)."""
        values = {key: self._query_int(key) for key in self.TABLE_DEFAULT_KEYS}
        return {k: v for k, v in values.items() if v is not None}

    def _sql_options(self) -> dict[str, Any]:
        """The URL's table defaults (:meth:`table_defaults`) go to the builder."""
        return {"table_defaults": self.table_defaults()}

    def stream_load_group_headers(self, variant: str, interval_ms: int = 1000, parallel: int = 2) -> dict[str, str]:
        """Stream Load merge commit headers of ``variant`` (a key of :attr:`MERGE_COMMIT_HEADERS`).

        Examples
        --------
        >>> StarRocks.__new__(StarRocks).stream_load_group_headers("merge_commit_async", 500)["merge_commit_interval_ms"]
        '500'
        """
        if variant not in self.MERGE_COMMIT_HEADERS:
            raise ConfigError("VARIANTS", variant, "one of " + ", ".join(self.MERGE_COMMIT_HEADERS)
                              + f" for {self.NAME}'s Stream Load merge commit")
        return {**self.MERGE_COMMIT_HEADERS[variant], "merge_commit_interval_ms": str(int(interval_ms)),
                "merge_commit_parallel": str(int(parallel))}

    # -- settings --------------------------------------------------------------------------
    def _server_settings(self) -> list[tuple[str, Any]]:
        """Session variables not at their defaults (``verbose_session_variables``, when the server has it)."""
        try:
            rows = self.execute(self.SETTINGS_SQL)
        except self.driver.module.MySQLError:
            return []
        return [(name, value) for name, value, changed in rows if str(changed).lower() in ("1", "true")]

    # -- bulk path -------------------------------------------------------------------------
    def stream_load_client(self) -> StreamLoadClient:
        """The Stream Load client for this URL's FE, database and credentials."""
        if self._stream_load is None:
            if self.connection is None:
                raise UnsupportedOperationError(f"{self.NAME}: Stream Load needs a URL")
            kw = self.connect_kwargs()
            self._stream_load = StreamLoadClient(kw.get("host") or "127.0.0.1", self.http_port, kw.get("database"),
                                                 kw.get("user") or "root", kw.get("password"))
        return self._stream_load

    def stream_load(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> StreamLoadResult:
        """Load ``rows`` with one Stream Load (a fresh label); return the reply."""
        return self.stream_load_client().load(table, columns, rows)

    # -- profiles --------------------------------------------------------------------------
    def capture_profile(self) -> ProfileCapture:
        """The profile texts of the statement this session ran last (profiling on)."""
        query_id = str(self.execute(self.LAST_QUERY_ID_SQL)[0][0])
        return ProfileCapture(query_id, self._profile_texts(query_id))

    def _profile_texts(self, query_id: str) -> dict[str, str]:
        self._wait_for_profile(query_id)
        analyzed = "\n".join(str(row[0]) for row in self.execute(self.ANALYZE_PROFILE_SQL, [query_id]))
        raw = self.execute(self.RAW_PROFILE_SQL, [query_id])
        return {"starrocks_analyze_profile": analyzed, "starrocks_profile": str(raw[0][0]) if raw else ""}

    def _wait_for_profile(self, query_id: str) -> None:
        """Until ``SHOW PROFILELIST`` lists ``query_id`` as no longer running."""
        def finished() -> bool:
            return any(str(row[0]) == query_id and str(row[3]).lower() != "running"
                       for row in self.execute(self.PROFILE_LIST_SQL, [20]))

        if not poll(finished, timeout_s=self.PROFILE_WAIT_S, interval_s=0.05):
            raise UnsupportedOperationError(
                f"{self.NAME}: no finished profile for query {query_id} in SHOW PROFILELIST after "
                f"{self.PROFILE_WAIT_S:.0f} s (StarRocks ≥ 3.1 with enable_profile records INSERT profiles)")

class _ProfileRecorder(anatomy.Recorder):
    """The profiles of a pass's INSERTs (see :meth:`StarRocksProfiledStatement.recorder`)."""

    PASS = "profile"

    def begin(self) -> None:
        self.previous = self.engine.execute("SELECT @@enable_profile")[0][0]
        self.engine.execute(self.engine.ENABLE_PROFILE_SQL)
        self.engine.last_profiles = []

    def statement(self, result: Any, row: Sequence[Any]) -> None:
        capture = self.engine.capture_profile()
        self.engine.last_profiles.append(capture)
        parts, extras = profile_parts(capture, self.engine.PROFILE_TEXTS)
        self.parts.append(parts)
        self.extras.append(extras)

    def end(self) -> None:
        self.engine.execute("SET enable_profile = %s", [sql_value(self.previous)])


def profile_parts(capture: "ProfileCapture", kinds: Sequence[str]) -> tuple[list, list]:
    """The study's split of one statement's TotalTime, from its profile texts: (parts, extras).

    Each text is parsed with ``ingestlab.profiles.parse`` in the order of ``kinds``; the first
    that reports a number gives it. Parts: ``execution`` and ``fe_overhead`` (TotalTime −
    ExecutionTime), or ``server_total`` when the profile has no ExecutionTime; extras:
    ``olap_table_sink`` and ``planning`` when the profile has them.
    """
    from ingestlab.profiles import parse

    summary: dict[str, Any] = {}
    source: dict[str, str] = {}
    for kind in kinds:
        text = capture.texts.get(kind) or ""
        if text.strip():
            for key, value in parse(text, kind).summary.items():
                if key not in summary and isinstance(value, (int, float)) and not isinstance(value, bool):
                    summary[key], source[key] = float(value), kind
    total, execution = summary.get("total_ms"), summary.get("execution_ms")
    parts = []
    if total is not None and execution is not None:
        parts += [("execution", execution, f"{source['execution_ms']} ExecutionTime"),
                  ("fe_overhead", total - execution, f"{source['total_ms']} TotalTime - ExecutionTime")]
    elif total is not None:
        parts.append(("server_total", total, f"{source['total_ms']} TotalTime"))
    extras = [(key.removesuffix("_ms"), summary[key], math.nan, f"{source[key]} {key}")
              for key in ("olap_table_sink_ms", "planning_ms") if key in summary]
    return parts, extras
