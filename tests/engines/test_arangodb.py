"""ArangoDB adapter: URLs, capabilities, request shapes, the metrics parser; the contract on a real server.

ArangoDB cannot run on this machine (no binaries, no Docker engine). Three kinds of tests:

* **Request-shape tests** (not engine tests): python-arango is given a recording HTTP client
  that answers with canned replies, and each request the adapter makes — method, path, query,
  body — is compared with ArangoDB's documented HTTP API (:data:`DOCUMENTED`, from the HTTP API
  reference: import, document, collection, metrics). They show what is sent, not that a
  server accepts it.
* The metrics parser on ``fixtures/arangodb_metrics_v2.txt`` (see its header for its source).
* The upsert contract against a real server when ``INGESTLAB_TEST_ARANGODB_URL`` is set
  (``compose/arangodb.yml``: ``arangodb://root@127.0.0.1:8529/_system``), skipped otherwise.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from ingestlab import datagen, engines
from ingestlab.engines import capabilities
from ingestlab.engines.arangodb.adapter import ArangoDB, parse_metrics
from ingestlab.errors import ConfigError, EngineUnavailableError, LoadError, UnsupportedOperationError
from tests.engines.upsert_contract import UpsertContract

FIXTURE = Path(__file__).parent / "fixtures" / "arangodb_metrics_v2.txt"
URL = "arangodb://root:pw@127.0.0.1:8529/lab?label=seed"

#: ArangoDB's documented HTTP API for the requests the adapter makes: (method, path) →
#: (query parameters the API takes, those it requires). Sources: the HTTP API reference pages
#: "HTTP interface for imports" (POST /_api/import: collection, type = documents | array | auto,
#: onDuplicate = error | update | replace | ignore, complete, details, overwrite, waitForSync,
#: fromPrefix, toPrefix), "Documents" (POST /_api/document/{collection}: overwrite,
#: overwriteMode = ignore | replace | update | conflict (3.7+), returnNew, returnOld, silent,
#: waitForSync, keepNull, mergeObjects, refillIndexCaches), "Collections" (GET …/count,
#: GET …/figures, PUT …/compact, PUT …/truncate, DELETE /_api/collection/{name}, POST
#: /_api/collection), "Metrics" (GET /_admin/metrics/v2), "Version" (GET /_api/version).
DOCUMENTED = {
    ("post", "/_api/import"): ({"collection", "type", "onDuplicate", "complete", "details", "overwrite",
                                "waitForSync", "fromPrefix", "toPrefix"}, {"collection"}),
    ("post", "/_api/document/{c}"): ({"overwrite", "overwriteMode", "returnNew", "returnOld", "silent",
                                      "waitForSync", "keepNull", "mergeObjects", "refillIndexCaches"}, set()),
    ("get", "/_api/collection/{c}/count"): (set(), set()),
    ("get", "/_api/collection/{c}/figures"): ({"details"}, set()),
    ("put", "/_api/collection/{c}/compact"): (set(), set()),
    ("put", "/_api/collection/{c}/truncate"): ({"waitForSync", "compact"}, set()),
    ("delete", "/_api/collection/{c}"): ({"isSystem"}, set()),
    ("post", "/_api/collection"): ({"waitForSyncReplication", "enforceReplicationFactor"}, set()),
    ("get", "/_api/collection"): ({"excludeSystem"}, set()),
    ("get", "/_admin/metrics/v2"): ({"serverId"}, set()),
    ("get", "/_api/version"): ({"details"}, set()),
    ("get", "/_admin/options"): (set(), set()),
}
ENUMS = {"type": {"documents", "array", "auto"}, "onDuplicate": {"error", "update", "replace", "ignore"},
         "overwriteMode": {"ignore", "replace", "update", "conflict"}}
BOOLEAN = {"complete", "details", "overwrite", "waitForSync", "silent", "returnNew", "returnOld"}


def documented(method: str, path: str, params: dict) -> list[str]:
    """Problems of one request against :data:`DOCUMENTED` (empty: it is a documented shape)."""
    parts = path.strip("/").split("/")
    generic = "/" + "/".join("{c}" if i == 2 and parts[:2] == ["_api", "collection"] or
                             i == 2 and parts[:2] == ["_api", "document"] else p for i, p in enumerate(parts))
    if (method, generic) not in DOCUMENTED:
        return [f"{method.upper()} {path} is not a documented endpoint"]
    allowed, required = DOCUMENTED[method, generic]
    problems = [f"{method.upper()} {path}: undocumented query parameter {k}" for k in params if k not in allowed]
    problems += [f"{method.upper()} {path}: missing {k}" for k in required if k not in params]
    problems += [f"{k}={params[k]} is not one of {sorted(v)}" for k, v in ENUMS.items() if k in params
                 and params[k] not in v]
    problems += [f"{k}={params[k]} is not a boolean" for k in BOOLEAN if k in params
                 and params[k] not in ("true", "false", "1", "0")]
    return problems


class RecordingHTTPClient:
    """python-arango's HTTP client interface, recording every request and answering from canned replies."""

    def __init__(self, version: str = "3.12.4", metrics: str = "", existing: int = 0):
        self.requests: list[dict] = []
        self.version, self.metrics, self.existing = version, metrics, existing

    def create_session(self, host):
        import requests

        return requests.Session()  # never used to send: send_request answers itself

    def close_session(self, session):
        return None

    def send_request(self, session, method, url, headers=None, params=None, data=None, auth=None):
        from arango.response import Response

        path = urlsplit(url).path
        endpoint = "/" + path.split("/", 3)[3] if path.startswith("/_db/") else path
        self.requests.append({"method": method, "path": endpoint, "params": dict(params or {}), "data": data})
        status, body = self.reply(method, endpoint, dict(params or {}), data)
        raw = body if isinstance(body, str) else json.dumps(body)
        return Response(method, url, {}, status, "OK", raw)

    def reply(self, method, path, params, data):
        if path == "/_api/version":
            return 200, {"server": "arango", "version": self.version, "license": "community"}
        if path == "/_admin/metrics/v2":
            return 200, self.metrics
        if path == "/_api/import":
            lines = [json.loads(line) for line in data.splitlines()]
            return 201, {"created": len(lines), "errors": 0, "empty": 0, "updated": 0, "ignored": 0}
        if path.startswith("/_api/document/"):
            docs = json.loads(data)
            old = {"_oldRev": "_old"} if params.get("overwrite") in ("1", "true") else {}
            return 202, [{"_id": f"c/{d['_key']}", "_key": d["_key"], "_rev": "_r", **(old if i < self.existing else {})}
                         for i, d in enumerate(docs)]
        if path.endswith("/count"):
            return 200, {"count": 7}
        if path.endswith("/figures"):
            return 200, {"figures": {"documentsSize": 1000, "indexes": {"count": 1, "size": 24}}}
        if method == "post" and path == "/_api/collection":
            return 200, {"id": "1", "name": json.loads(data)["name"], "type": 2, "status": 3, "isSystem": False}
        if method == "delete":
            return 200, {"id": "1", "error": False}
        if path == "/_api/collection":
            return 200, {"result": []}
        return 200, {"error": False}


@pytest.fixture
def recorded():
    """An ArangoDB adapter started over the recording client (no server)."""
    eng = engines.from_url(URL)
    eng.http_client = RecordingHTTPClient(metrics=FIXTURE.read_text())
    eng.start()
    yield eng, eng.http_client
    eng.close()


def _chunk(keys, seed=0):
    return datagen.document_table(np.asarray(keys), datagen.documents(len(keys), np.random.default_rng(seed)))


# -- URLs and capabilities --------------------------------------------------------------------
def test_url_selects_arangodb_masks_the_password_and_reads_the_protocol():
    eng = engines.from_url(URL)
    assert isinstance(eng, ArangoDB) and eng.label == "seed" and "pw" not in eng.display_url
    assert eng.endpoint == "http://127.0.0.1:8529" and eng.connect_kwargs()["database"] == "lab"
    assert engines.from_url("arangodb://r@h:8530/db?protocol=https").endpoint == "https://h:8530"


@pytest.mark.parametrize("url", ["arangodb://r:pw@h/db?protocol=ftp", "arangodb://r:pw@h/db?sslmode=x"])
def test_bad_url_options_are_config_errors_without_the_password(url):
    with pytest.raises(ConfigError) as err:
        engines.from_url(url)
    assert "pw" not in str(err.value) and "protocol" in str(err.value)


def test_no_local_server_and_how_to_get_one():
    with pytest.raises(EngineUnavailableError, match="compose"):
        engines.get("arangodb")


def test_sql_steps_and_the_memory_budget_are_switched_off_with_reasons():
    for step in ("execute", "quote", "table_ddl", "insert_sql", "upsert_sql", "insert_select_sql",
                 "profiled_statement", "memory_budget"):
        assert not ArangoDB.has(step)
        with pytest.raises(UnsupportedOperationError, match="arangodb: no " + step):
            ArangoDB.has(step, check=True)
    for step in ("reset_table", "bulk_load", "count_rows", "data_bytes", "settle", "io_counters", "upsert"):
        assert ArangoDB.has(step), step
    assert not ArangoDB.HAS_LOCAL_SERVER
    assert capabilities.of(ArangoDB, "upsert").OPERATIONS == ("insert", "overwrite")


def test_a_closed_port_fails_fast_naming_the_masked_url():
    eng = engines.from_url("arangodb://u:secret@127.0.0.1:1/db")
    with pytest.raises(EngineUnavailableError) as err:
        eng.WIRE.check_reachable(eng.connection, eng.display_url)
    assert "u:***@127.0.0.1:1" in str(err.value) and "secret" not in str(err.value)
    with pytest.raises(EngineUnavailableError) as err:
        eng.start()
    assert "cannot connect to arangodb://u:***@127.0.0.1:1/db" in str(err.value) and "secret" not in str(err.value)


# -- request shapes (a recording HTTP client, no server) ----------------------------------------
def test_request_shape_every_request_is_a_documented_endpoint_with_documented_parameters(recorded):
    eng, rec = recorded
    eng.tables.reset("t", (("id", "BIGINT"), ("doc", "TEXT")), key=("id",))
    eng.capability("bulk_load").load("t", ["id", "doc"], [_chunk([0, 2]), _chunk([4])], replace=True)
    eng.capability("upsert").prepare_write("insert", "t", ["id", "doc"], "id", _chunk([6]))()
    eng.capability("upsert").prepare_write("overwrite", "t", ["id", "doc"], "id", _chunk([0]))()
    eng.tables.count_rows("t"), eng.tables.data_bytes("t"), eng.capability("io_counters").read(), eng.tables.settle("t", timeout_s=1)
    problems = [p for r in rec.requests for p in documented(r["method"], r["path"], r["params"])]
    assert problems == []
    assert {(r["method"], r["path"]) for r in rec.requests} >= {
        ("post", "/_api/import"), ("post", "/_api/document/t"), ("get", "/_api/collection/t/count"),
        ("get", "/_api/collection/t/figures"), ("get", "/_admin/metrics/v2"), ("put", "/_api/collection/t/compact"),
        ("put", "/_api/collection/t/truncate")}


def test_request_shape_the_import_is_one_jsonl_request_per_chunk_with_string_keys(recorded):
    eng, rec = recorded
    eng.tables.reset("t", (("id", "BIGINT"), ("doc", "TEXT")), key=("id",))
    chunks = [_chunk([0, 2], seed=1), _chunk([4], seed=2)]
    assert eng.capability("bulk_load").load("t", ["id", "doc"], chunks) == 3
    imports = [r for r in rec.requests if r["path"] == "/_api/import"]
    assert len(imports) == 2
    assert imports[0]["params"] == {"collection": "t", "type": "documents", "onDuplicate": "error",
                                    "complete": "true", "details": "true"}
    lines = [json.loads(line) for line in imports[0]["data"].splitlines()]
    assert lines == [{"_key": "0", "doc": chunks[0].column("doc")[0].as_py()},
                     {"_key": "2", "doc": chunks[0].column("doc")[1].as_py()}]


def test_request_shape_insert_and_overwrite_are_one_document_request_per_batch(recorded):
    eng, rec = recorded
    eng.tables.reset("t", (("id", "BIGINT"), ("doc", "TEXT")), key=("id",))
    rec.requests.clear()
    assert eng.capability("upsert").prepare_write("insert", "t", ["id", "doc"], "id", _chunk([10, 12, 14]))() == 0
    rec.existing = 2
    assert eng.capability("upsert").prepare_write("overwrite", "t", ["id", "doc"], "id", _chunk([0, 2, 99]))() == 2  # _oldRev counted
    insert, overwrite = [r for r in rec.requests if r["path"] == "/_api/document/t"]
    assert insert["method"] == overwrite["method"] == "post"
    assert insert["params"].get("overwrite", "0") in ("0", "false") and "overwriteMode" not in insert["params"]
    assert [d["_key"] for d in json.loads(insert["data"])] == ["10", "12", "14"]
    assert overwrite["params"]["overwrite"] in ("1", "true") and overwrite["params"]["overwriteMode"] == "replace"


def test_request_shape_before_3_7_overwrite_has_no_mode_and_before_3_4_no_overwrite():
    for version, ops, mode in (("3.4.1", ("insert", "overwrite"), None), ("3.3.23", ("insert",), None)):
        eng = engines.from_url(URL)
        eng.http_client = rec = RecordingHTTPClient(version=version)
        eng.start()
        assert eng.capability("upsert").OPERATIONS == ops
        if "overwrite" in ops:
            eng.capability("upsert").prepare_write("overwrite", "t", ["id", "doc"], "id", _chunk([0]))()
            assert "overwriteMode" not in rec.requests[-1]["params"]
        eng.close()


def test_blind_overwrite_is_refused_clearly_on_every_released_version(recorded):
    eng, _ = recorded
    assert "blind_overwrite" not in eng.capability("upsert").OPERATIONS
    with pytest.raises(UnsupportedOperationError, match="no blind_overwrite.*reads the old document"):
        eng.capability("upsert").prepare_write("blind_overwrite", "t", ["id", "doc"], "id", _chunk([0]))


def test_request_shape_a_document_error_fails_the_batch(recorded):
    eng, rec = recorded
    rec.reply = lambda *a: (202, [{"error": True, "errorNum": 1210, "errorMessage": "unique constraint violated"}])
    with pytest.raises(LoadError, match="1 of 1 documents failed"):
        eng.capability("upsert").prepare_write("insert", "t", ["id", "doc"], "id", _chunk([0]))()


def test_request_shape_figures_give_documents_and_indexes_and_metrics_give_the_lab_counters(recorded):
    eng, _ = recorded
    assert eng.tables.data_bytes("t") == 1024 and eng.tables.count_rows("t") == 7
    counters = eng.capability("io_counters").read()
    assert counters["blocks_read"] == 1189335 and counters["blocks_hit"] == 276005
    assert counters["bytes_read"] == 1362540705 and counters["server_insert_s"] == 4.25
    assert np.isnan(counters["server_replace_s"])  # not reported: NaN, not 0


# -- the metrics parser on the fixture ---------------------------------------------------------
def test_metrics_parser_reads_gauges_and_sums_labelled_series():
    metrics = parse_metrics(FIXTURE.read_text())
    assert metrics["rocksdb_block_cache_usage"] == 255983616
    assert metrics["arangodb_document_insert_time_count"] == 12
    assert metrics["arangodb_client_connection_statistics_client_connections"] == 3
    assert not any(k.startswith("#") for k in metrics)


# -- the contract on a real server -------------------------------------------------------------
class TestArangoDBUpsert(UpsertContract):
    engine = "arangodb"

    @classmethod
    def target(cls) -> str:
        return os.environ.get("INGESTLAB_TEST_ARANGODB_URL", "")

    @classmethod
    def skip_reason(cls) -> str | None:
        if not cls.target():
            return ("ArangoDB cannot run on this machine (no binaries, no Docker engine); start "
                    "compose/arangodb.yml elsewhere and set INGESTLAB_TEST_ARANGODB_URL")
        return None

    @staticmethod
    def read_doc(eng, key: int) -> bytes:
        return eng.conn.collection("upsert_contract").get(str(key))["doc"].encode()
