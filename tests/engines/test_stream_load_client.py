"""The Stream Load client's own HTTP behaviour, against two local sockets.

The peers here are plain HTTP servers on 127.0.0.1 that record requests: an "FE" that
answers every PUT with a 307 to a "BE" on another host name, and that "BE", which answers
with a reply published in StarRocks' or Doris' documentation. They are not a StarRocks or
Doris: what is tested is the client — the headers it sends, the label, the body, that it
follows the redirect with the credentials kept, and how it reads a reply.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from decimal import Decimal

import pytest
import requests

from ingestlab.engines.stream_load_client import (
    COLUMN_SEPARATOR,
    StreamLoadClient,
    encode_rows,
    make_label,
    parse_reply,
)
from ingestlab.errors import ConfigError, LoadError
from tests.engines._support import FrontendAndBackend, corpus_body, corpus_files

SUCCESS = "doris_docs_quick_start_twophasecommit_false.txt"
FAILURE = "sr_docs_flink_faq_fail_timeout_by_txn_manager.txt"


@pytest.fixture
def peers():
    pair = FrontendAndBackend(corpus_body("stream_load_response", SUCCESS))
    yield pair
    pair.close()


def _client(peers, password="s3cret"):
    return StreamLoadClient("127.0.0.1", peers.frontend.port, "ingestlab", "root", password)


def test_the_redirect_to_the_backend_keeps_the_credentials(peers):
    client = _client(peers)
    rows = [(1, "Bob", Decimal("9.50"), dt.date(2024, 1, 15)), (2, "Alice", None, dt.date(2024, 1, 16))]
    result = client.load("t1", ["id", "name", "amount", "dt"], rows, label="lab-1")
    (fe,), (be,) = peers.frontend.requests, peers.backend.requests
    expected_auth = "Basic " + base64.b64encode(b"root:s3cret").decode()
    assert fe["headers"]["Authorization"] == be["headers"]["Authorization"] == expected_auth
    assert fe["path"] == be["path"] == "/api/ingestlab/t1/_stream_load"
    assert result.urls == (client.url("t1"), f"http://localhost:{peers.backend.port}/api/ingestlab/t1/_stream_load")
    assert be["body"] == fe["body"] == encode_rows(rows)
    assert result.status == "Success" and result.summary["loaded_rows"] == 7 and result.http_status == 200


def test_requests_alone_would_drop_the_credentials_on_that_redirect(peers):
    requests.put(_client(peers).url("t1"), data=b"1\n", auth=("root", "s3cret"), timeout=10)
    assert "Authorization" in peers.frontend.requests[0]["headers"]
    assert "Authorization" not in peers.backend.requests[0]["headers"]


def test_headers_carry_expect_label_separator_columns_and_extras(peers):
    _client(peers).load("t1", ["id", "name"], [(1, "a")], label="my-label", extra_headers={"group_commit": "sync_mode"})
    headers = peers.backend.requests[0]["headers"]
    assert headers["Expect"] == "100-continue"
    assert headers["label"] == "my-label"
    assert headers["column_separator"] == "\\x01" and headers["columns"] == "id,name" and headers["format"] == "csv"
    assert headers["group_commit"] == "sync_mode"


def test_a_fresh_label_per_load_unless_told_none(peers):
    client = _client(peers)
    client.load("t1", ["id"], [(1,)])
    client.load("t1", ["id"], [(2,)])
    client.load("t1", ["id"], [(3,)], label=None)
    labels = [r["headers"].get("label") for r in peers.backend.requests]
    assert labels[0] != labels[1] and labels[0].startswith("ingestlab_t1_") and labels[2] is None


def test_a_failed_load_raises_with_the_servers_message(peers):
    peers.reply = corpus_body("stream_load_response", FAILURE)
    with pytest.raises(LoadError, match="Fail"):
        _client(peers).load("t1", ["id"], [(1,)])


def test_a_reply_that_is_not_a_load_reply_raises(peers):
    peers.reply = "<html>502 Bad Gateway</html>"
    with pytest.raises(LoadError, match="not a Stream Load reply"):
        _client(peers).load("t1", ["id"], [(1,)])


def test_redirect_loops_are_cut(peers):
    client = StreamLoadClient("127.0.0.1", peers.frontend.port, "ingestlab", "root", max_redirects=0)
    with pytest.raises(LoadError, match="more than 0 redirects"):
        client.load("t1", ["id"], [(1,)])


def test_rows_are_csv_with_a_control_separator_and_nulls_as_backslash_n():
    assert encode_rows([(1, None, Decimal("1.50"))]) == f"1{COLUMN_SEPARATOR}\\N{COLUMN_SEPARATOR}1.50\n".encode()
    with pytest.raises(ConfigError, match="line breaks"):
        encode_rows([("two\nlines",)])


def test_names_are_checked_and_escaped_in_the_url():
    client = StreamLoadClient("fe", 8030, "my db", "root")
    assert client.url("a/b") == "http://fe:8030/api/my%20db/a%2Fb/_stream_load"
    with pytest.raises(ConfigError, match="columns"):
        client.headers(["id", "bad,name"])
    assert make_label("we ird").startswith("ingestlab_we_ird_")


def _last(field: str, text: str, value: str = r"[^'\",\s}]+") -> str | None:
    """The value of the last ``"field": value`` (or ``'field':'value'``) in a reply's text, read by a regex."""
    found = re.findall(rf"""["']{field}["']\s*:\s*["']?({value})""", text)
    return found[-1] if found else None


@pytest.mark.parametrize("path", corpus_files("stream_load_response"), ids=lambda p: p.name)
def test_every_published_reply_parses(path):
    """The last reply's status, label, transaction and counts, as the text states them, reach the summary."""
    text = corpus_body(path.parent.name, path.name)
    reply, summary = parse_reply(text)
    status = _last("[Ss]tatus", text)
    assert status and summary["status"] == status and status in reply.values()
    assert summary["label"] == _last("[Ll]abel", text)
    assert summary["txn_id"] == int(_last("(?:TxnId|txnId)", text, r"\d+"))
    for field, key in (("NumberLoadedRows", "loaded_rows"), ("NumberTotalRows", "total_rows"), ("LoadBytes", "load_bytes")):
        stated = _last(field, text, r"\d+")
        assert summary.get(key) == (int(stated) if stated else None), field
    stated = _last("LoadTimeMs", text, r"\d+")
    assert summary.get("load_time_ms") == (float(stated) if stated else None)


def test_parse_reply_reads_a_starrocks_reply_with_its_times():
    reply, summary = parse_reply(corpus_body("stream_load_response", "sr_docs_helm_weatherdata.txt"))
    assert reply["Label"] == "weather-0"
    assert summary["loaded_rows"] == 22931 and summary["load_time_ms"] == 404
