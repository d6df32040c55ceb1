"""ArangoDB: a server at an ``arangodb://`` URL, through python-arango (the HTTP API)."""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any, Callable, ClassVar, Iterable, Sequence

from ingestlab.engines.base import Engine, EngineStyle, Wire
from ingestlab.engines.capabilities import BulkLoad, IOCounters, TableModels, Upsert
from ingestlab.errors import ConfigError, EngineUnavailableError, LoadError, UnsupportedOperationError
from ingestlab.polling import poll

#: Prometheus text lines: ``name{labels} value`` (labels optional); comments are skipped.
_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{[^}]*\})?\s+(?P<value>\S+)")


def parse_metrics(text: str) -> dict[str, float]:
    """``/_admin/metrics/v2`` (Prometheus text format) as name → value, labelled series summed.

    ArangoDB writes every RocksDB property and, with ``--rocksdb.enable-statistics``, every
    RocksDB ticker as a gauge whose name is the RocksDB name with ``.`` and ``-`` turned
    into ``_`` (``rocksdb.block.cache.miss`` → ``rocksdb_block_cache_miss``); histograms
    come as ``_bucket``/``_sum``/``_count`` series.

    Examples
    --------
    >>> parse_metrics("# TYPE rocksdb_block_cache_hit gauge\\nrocksdb_block_cache_hit 12\\n"
    ...               'x_sum{role="SINGLE"} 1.5\\nx_sum{role="OTHER"} 2')
    {'rocksdb_block_cache_hit': 12.0, 'x_sum': 3.5}
    """
    out: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        try:
            value = float(m["value"])
        except ValueError:
            continue
        out[m["name"]] = out.get(m["name"], 0.0) + value
    return out


def version_tuple(version: str) -> tuple[int, ...]:
    """``"3.12.4-1"`` → ``(3, 12, 4)``.

    Examples
    --------
    >>> version_tuple("3.12.4-1"), version_tuple("3.4.0")
    ((3, 12, 4), (3, 4, 0))
    """
    return tuple(int(p) for p in re.findall(r"\d+", version.split("-")[0])[:3])


def _reason(exc: BaseException, timeout_s: float, timed_out: bool = False) -> str:
    """Why a connection failed, in one line: a timeout as such, else the innermost error's own message.

    Examples
    --------
    >>> try:
    ...     try:
    ...         raise TimeoutError("timed out")
    ...     except TimeoutError as inner:
    ...         raise ConnectionAbortedError("Can't connect to host(s) within limit (1)") from inner
    ... except OSError as exc:
    ...     print(_reason(exc, 5))
    no answer within 5 s
    """
    from requests.exceptions import Timeout

    chain, seen = [], exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    if timed_out or any(isinstance(e, (Timeout, TimeoutError)) for e in chain):
        return f"no answer within {timeout_s:g} s"
    inner = chain[-1]
    text = getattr(inner, "error_message", None) or f"{type(inner).__name__}: {inner}"
    return " ".join(str(text).split())[:300]


class ArangoDBUpsert(Upsert):
    """ArangoDB's document writes (see :class:`ArangoDB`, *Operations*)."""

    #: What any ArangoDB ≥ 3.4 runs; :meth:`ArangoDB.start` sets the instance's from the server's version.
    OPERATIONS: ClassVar[tuple[str, ...]] = ("insert", "overwrite")

    def prepare_write(self, operation: str, table: str, columns: Sequence[str], key: str,
                      chunk: Any) -> Callable[[], Any]:
        """One ``POST /_api/document/{table}`` of the batch, documents built now; the call returns the keys found.

        ``overwrite`` sends ``overwrite=true`` and, from 3.7, ``overwriteMode=replace``; the
        server's reply names the replaced revision (``_oldRev``) of each key it found, which
        the call counts. Any document error fails the batch.
        """
        engine = self.engine
        if operation == "blind_overwrite" and operation not in self.OPERATIONS:
            raise UnsupportedOperationError(
                f"{engine.NAME} {engine._version or ''}: no blind_overwrite: every ArangoDB insert with overwrite reads "
                "the old document first (the seed's blind write was an unreleased patch)".replace("  ", " "))
        if operation not in self.OPERATIONS:
            return super().prepare_write(operation, table, columns, key, chunk)  # raises, naming the operations
        docs = engine._documents(table, columns, chunk, key)
        options: dict[str, Any] = {}
        if operation == "overwrite":
            options["overwrite"] = True
            if version_tuple(engine.server_version()) >= engine.OVERWRITE_MODE_SINCE:
                options["overwrite_mode"] = engine.OVERWRITE_MODE
        collection = engine.conn.collection(table)

        def write() -> int:
            results = collection.insert_many(docs, **options)
            errors = [r for r in results if not isinstance(r, dict)]
            if errors:
                raise LoadError(f"{engine.NAME}: {operation} into {table}: {len(errors)} of {len(docs)} documents "
                                f"failed, first: {errors[0]}")
            return sum(1 for r in results if "_old_rev" in r)
        return write


class ArangoDBTableModels(TableModels):
    """One document collection per table."""

    MODELS: ClassVar[dict[str, str]] = {
        "document": "a document collection: _key from the key column (as a string), other columns as attributes"}
    DEFAULT_MODEL = KEYED_MODEL = "document"


class ArangoDBIOCounters(IOCounters):
    """ArangoDB's I/O counters."""

    def read(self) -> dict[str, float]:
        """RocksDB's cumulative counters from ``/_admin/metrics/v2`` under the lab's names (:attr:`ArangoDB.METRICS`).

        NaN where the server does not report a series (RocksDB statistics need
        ``--rocksdb.enable-statistics true``; document times ``--server.export-read-write-metrics true``).
        """
        found = self.engine.metrics()
        return {lab: found.get(series, math.nan) for lab, series in self.engine.METRICS.items()}


class ArangoDBBulkLoad(BulkLoad):
    """``POST /_api/import`` of JSON documents, one request per chunk."""

    PATH = "import"

    def load(self, table: str, columns: Sequence[str], chunks: Iterable[Any], *, replace: bool = False) -> int:
        """Import ``chunks``: one ``POST /_api/import?type=documents`` (JSON lines) per chunk.

        ``replace`` truncates the collection first (``PUT …/truncate``; its own transaction:
        ArangoDB has no import that empties a collection atomically with the load).
        """
        if replace:
            self.engine.conn.collection(table).truncate()
        params = {"collection": table, "type": "documents", "onDuplicate": "error", "complete": "true",
                  "details": "true"}
        rows = 0
        for chunk in chunks:
            docs = self.engine._documents(table, columns, chunk)
            body = "\n".join(json.dumps(d, separators=(",", ":")) for d in docs)
            reply = self.engine._request("post", "/_api/import", params=params, data=body).body
            if reply.get("errors") or reply.get("created") != chunk.num_rows:
                raise LoadError(f"{self.engine.NAME}: import into {table} created {reply.get('created')} of "
                                f"{chunk.num_rows} documents: {reply.get('details', [])[:3]}")
            rows += chunk.num_rows
        return rows


class ArangoDB(Engine):
    """ArangoDB (RocksDB storage engine) through its HTTP API; the study's own system.

    No local server (no binaries here): ``arangodb://root@127.0.0.1:8529/_system``
    (``compose/arangodb.yml``); ``?protocol=https`` for TLS. A table is a document
    collection: the key column becomes ``_key`` (as a string), every other column an
    attribute of the same name (``doc``).

    * **Bulk path** ``import``: ``POST /_api/import?type=documents`` with one JSON document
      per line, one request per chunk, ``onDuplicate=error`` and ``complete=true`` (a
      duplicate key fails the chunk, as a primary key does in SQL).
    * **Operations** (one ``POST /_api/document/{collection}`` of the batch's documents,
      one transaction on a single server, as the study's batches): ``insert`` of new keys;
      ``overwrite`` — ``overwrite=true`` (ArangoDB ≥ 3.4), with ``overwriteMode=replace``
      from 3.7 (the 3.4 behaviour and the study's "insert with overwrite": the new document
      replaces the old one; ``update`` would merge it, which is another operation). Both
      look the key up first; an overwrite finds it and reads the old document (the study's
      point). ``blind_overwrite`` — a write without that read — is offered by no ArangoDB
      release (the seed's blind write was a patch it calls unsafe: document counts and
      revisions go wrong), so :meth:`start` leaves it out of the upsert operations unless
      the server is at least :attr:`BLIND_WRITE_SINCE`, and ``prepare_write`` refuses it.
    * **State.** :meth:`_count_rows` (``GET /_api/collection/{name}/count``),
      :meth:`_data_bytes` (``GET …/figures``: ``documentsSize`` + ``indexes.size``, RocksDB's
      estimates), :meth:`_settle` (``PUT …/compact``, then waits until RocksDB reports no
      flush or compaction pending or running), :class:`ArangoDBIOCounters` (``GET
      /_admin/metrics/v2``: block cache misses and hits, bytes read; needs the server
      option ``--rocksdb.enable-statistics true``, else NaN).
    * **Memory** is the server's (its startup options and the container's limit,
      ``compose/arangodb.yml``): no ``memory_budget``, no per-session budget.
    """

    NAME = "arangodb"
    STYLE = EngineStyle(title="ArangoDB", colour="#4B0055", marker="s", words={
        "document": "document collection",
    })
    HAS_LOCAL_SERVER = False
    #: No SQL: AQL and an HTTP document API (the SQL steps are switched off below).
    SQL = None
    #: URL query keys the lab reads (``protocol``: ``http`` or ``https``).
    WIRE = Wire(schemes=("arangodb",), default_port=8529, lab_query_keys=("label", "protocol"),
                example="arangodb://root@127.0.0.1:8529/_system")
    PROTOCOLS: ClassVar[tuple[str, ...]] = ("http", "https")
    CAPABILITIES: ClassVar[dict[str, Any]] = {
        "upsert": ArangoDBUpsert, "table_models": ArangoDBTableModels, "io_counters": ArangoDBIOCounters,
        "bulk_load": ArangoDBBulkLoad,
        "profiled_statement": "no per-request split of server time in the document API",
        "memory_budget": "memory is the server's startup options and its container's limit "
                         "(compose/arangodb.yml), not a session setting",
    }
    #: ``overwrite=true`` (insert-or-replace) exists from this version on.
    OVERWRITE_SINCE: ClassVar[tuple[int, ...]] = (3, 4)
    #: ``overwriteMode`` exists from this version on; before it ``overwrite=true`` replaces.
    OVERWRITE_MODE_SINCE: ClassVar[tuple[int, ...]] = (3, 7)
    OVERWRITE_MODE: ClassVar[str] = "replace"
    #: First version with a write that does not read the old document: none (see the class doc).
    BLIND_WRITE_SINCE: ClassVar[tuple[int, ...] | None] = None
    #: Seconds before an HTTP request to the server gives up (the load's chunks included).
    REQUEST_TIMEOUT_S: ClassVar[float] = 600.0
    #: Seconds to wait for the server when connecting.
    CONNECT_TIMEOUT_S: ClassVar[float] = 5.0
    #: Lab counter → ``/_admin/metrics/v2`` series (RocksDB statistics; ``bytes_read`` is
    #: RocksDB's ``rocksdb.bytes.read``: bytes its point reads returned, not bytes from disk).
    METRICS: ClassVar[dict[str, str]] = {
        "blocks_read": "rocksdb_block_cache_miss",
        "blocks_hit": "rocksdb_block_cache_hit",
        "bytes_read": "rocksdb_bytes_read",
        "bloom_useful": "rocksdb_bloom_filter_useful",
        "data_blocks_read": "rocksdb_block_cache_data_miss",
        "server_insert_s": "arangodb_document_insert_time_sum",
        "server_replace_s": "arangodb_document_replace_time_sum",
    }
    #: Series that must all be 0 for :meth:`_settle` to return.
    BACKGROUND_WORK: ClassVar[tuple[str, ...]] = (
        "rocksdb_num_running_compactions", "rocksdb_num_running_flushes", "rocksdb_compaction_pending",
        "rocksdb_mem_table_flush_pending")
    #: Startup options read back for a run's metadata (``GET /_admin/options``), when permitted.
    OPTION_PREFIXES: ClassVar[tuple[str, ...]] = ("rocksdb.", "cache.", "query.memory-limit", "server.export")
    _SQL = "ArangoDB speaks AQL and an HTTP document API, not SQL"
    UNSUPPORTED: ClassVar[dict[str, str]] = {
        "execute": _SQL, "quote": _SQL, "table_ddl": _SQL + " (collections are made by reset_table)",
        "insert_sql": _SQL, "upsert_sql": _SQL, "insert_select_sql": _SQL,
    }

    def __init__(self, url=None):
        super().__init__(url)
        connection = self.connection
        protocol = connection.lab.get("protocol", "http") if connection is not None else "http"
        if protocol not in self.PROTOCOLS:
            raise ConfigError(self._parameter, self.display_url, "protocol=http or protocol=https in the URL's query")
        unknown = sorted(connection.options) if connection is not None else []
        if unknown:
            raise ConfigError(self._parameter, self.display_url,
                              f"an arangodb:// URL whose query keys are among {', '.join(self.WIRE.lab_query_keys)} and a "
                              f"password key (not {', '.join(unknown)})")
        self.protocol = protocol
        self.http_client = None  # python-arango's default; the request-shape tests put a recorder here
        self._client = None
        self._version: str | None = None
        self._keys: dict[str, str] = {}

    # -- connection -------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        """``http(s)://host:port`` of the server."""
        return f"{self.protocol}://{self.connection.host}:{self.connection.port or self.WIRE.default_port}"

    def connect(self):
        """A python-arango database handle, the connection checked (``GET /_api/collection``)."""
        from arango import ArangoClient
        from arango.exceptions import ArangoError
        from arango.http import DefaultHTTPClient
        from requests.exceptions import RequestException

        kwargs = self.connect_kwargs()
        timeout = self.REQUEST_TIMEOUT_S if self.timeout_s is None else self.timeout_s
        http = self.http_client or DefaultHTTPClient(request_timeout=timeout, retry_attempts=0)
        # one try: python-arango's resolver otherwise sends a failed request 3 times (a silent server: 3 timeouts)
        client = ArangoClient(hosts=self.endpoint, http_client=http, resolver_max_tries=1)
        started = time.monotonic()
        try:
            db = client.db(kwargs.get("database") or "_system", username=kwargs.get("user") or "root",
                           password=kwargs.get("password") or "", verify=True)
        except (ArangoError, RequestException, OSError) as exc:
            client.close()
            # python-arango replaces a timed-out request's error with its own, unchained: the clock tells
            timed_out = time.monotonic() - started >= 0.95 * timeout
            raise EngineUnavailableError(f"cannot connect to {self.display_url}: "
                                         f"{_reason(exc, timeout, timed_out)}") from None
        self._client = client
        return db

    def start(self) -> "ArangoDB":
        """Connect; set this server's upsert operations from its version."""
        super().start()
        version = version_tuple(self.server_version())
        ops = ["insert"]
        if version >= self.OVERWRITE_SINCE:
            ops.append("overwrite")
        if self.BLIND_WRITE_SINCE is not None and version >= self.BLIND_WRITE_SINCE:
            ops.append("blind_overwrite")
        self.capability("upsert").OPERATIONS = tuple(ops)
        return self

    def close(self) -> None:
        super().close()
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def _request(self, method: str, endpoint: str, *, params: dict | None = None, data: Any = None,
                 deserialize: bool = True):
        """One HTTP request on the measuring connection (python-arango's ``Request``); fails on an error status."""
        from arango.request import Request

        resp = self.conn.conn.send_request(Request(method=method, endpoint=endpoint, params=params, data=data,
                                                   deserialize=deserialize))
        if not resp.is_success:
            raise LoadError(f"{self.NAME}: {method.upper()} {endpoint} failed: {resp.status_code} "
                            f"{resp.error_message or resp.status_text}")
        return resp

    # -- tables -----------------------------------------------------------------------------
    def _reset_table(self, table: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = (),
                    model: str | None = None, partitions: int | None = None) -> None:
        """Drop the collection ``table`` if it exists and create it empty; ``key`` (one column) becomes ``_key``."""
        models = self.capability("table_models")
        models.resolve_model(model, key)
        models.check_partitions(partitions)
        if len(key) != 1 or key[0] not in [c for c, _ in columns]:
            raise ConfigError("key", tuple(key), "exactly one of the columns, which becomes the document's _key")
        self.conn.delete_collection(table, ignore_missing=True)
        self.conn.create_collection(table)
        self._keys[table] = key[0]

    def _documents(self, table: str, columns: Sequence[str], chunk, key: str | None = None) -> list[dict]:
        key = key or self._keys.get(table, columns[0])
        values = {c: chunk.column(c).to_pylist() for c in columns}
        keys = [str(k) for k in values.pop(key)]
        return [{"_key": k, **dict(zip(values, row))} for k, row in zip(keys, zip(*values.values()))]

    # -- writes -----------------------------------------------------------------------------
    # -- state -----------------------------------------------------------------------------
    def _count_rows(self, table: str) -> int:
        """Documents in the collection (``GET /_api/collection/{table}/count``)."""
        return int(self.conn.collection(table).count())

    def _data_bytes(self, table: str) -> int:
        """RocksDB's estimate of the collection's bytes, documents and indexes (``GET …/figures``)."""
        figures = self.conn.collection(table).statistics()
        return int(figures.get("documents_size") or 0) + int((figures.get("indexes") or {}).get("size") or 0)

    def metrics(self) -> dict[str, float]:
        """Every series of ``GET /_admin/metrics/v2``, parsed (:func:`parse_metrics`)."""
        return parse_metrics(self._request("get", "/_admin/metrics/v2", deserialize=False).raw_body)

    def _settle(self, table: str, timeout_s: float = 600.0) -> None:
        """Compact the collection (``PUT …/compact``), then wait until no flush or compaction is pending or running.

        Raises
        ------
        EngineUnavailableError
            When background work is still reported after ``timeout_s``.
        """
        self._request("put", f"/_api/collection/{table}/compact")
        busy: dict[str, float] = {}

        def quiet() -> bool:
            found = self.metrics()
            busy.clear()
            busy.update({k: found[k] for k in self.BACKGROUND_WORK if found.get(k)})
            return not busy

        if not poll(quiet, timeout_s=timeout_s, interval_s=0.5):
            raise EngineUnavailableError(f"{self.NAME}: still busy after {timeout_s:.0f} s: {busy}")

    # -- settings and metadata --------------------------------------------------------------
    def server_version(self) -> str:
        """The server's version (``GET /_api/version``)."""
        if self._version is None:
            self._version = str(self.conn.version())
        return self._version

    def settings(self) -> dict[str, str]:
        """The server's startup options about RocksDB, caches and metrics (``GET /_admin/options``).

        ArangoDB cannot tell which differ from its defaults; when the user may not read the
        options the reply says so under ``"_unavailable"``.
        """
        try:
            options = self._request("get", "/_admin/options").body
        except LoadError as exc:
            return {"_unavailable": str(exc)}
        return {k: str(v) for k, v in sorted(options.items()) if k.startswith(self.OPTION_PREFIXES)}
