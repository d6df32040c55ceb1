"""StarRocks and Doris Stream Load, transaction and group-commit replies, as published."""

from __future__ import annotations

import pytest

from ingestlab.errors import ProfileParseError
from ingestlab.profiles import anatomy, detect, format_anatomy, parse, parse_file, stream_load

CATEGORIES = ("stream_load_response",)


def test_every_real_reply_parses_with_a_status(real_file, body_of):
    assert detect(body_of(real_file)) == "stream_load_response"
    profile = parse_file(real_file)
    assert profile.summary["status"] in {"Success", "OK", "Fail", "PREPARE"}
    assert profile.summary["reply_count"] >= 1


def test_every_real_reply_yields_its_rows_and_time_split(real_file, body_of):
    """Each field the reply carries reaches the summary under its unit-carrying name."""
    text = body_of(real_file)
    _, last = stream_load.replies(text)[-1]
    summary = parse_file(real_file).summary
    for name, value in last.items():
        mapped = stream_load.SUMMARY_FIELDS.get(name.replace("_", "").lower())
        if mapped is None:
            continue
        key, how = mapped
        assert key in summary, f"{name} -> {key} missing"
        if how in ("int", "ms"):
            assert summary[key] == float(value)
    if "NumberLoadedRows" in text:
        assert isinstance(summary["loaded_rows"], int)
    if "LoadTimeMs" in text:
        assert summary["load_time_ms"] == summary["total_ms"] > 0


def test_doris_reply_reads_every_time_part(sample):
    s = parse(sample("stream_load_response/doris_docs_inverted_index_hackernews_1m.txt")).summary
    assert s["load_time_ms"] == 8988.0
    assert (s["begin_txn_ms"], s["stream_load_put_ms"], s["read_data_ms"]) == (23.0, 113.0, 4788.0)
    assert (s["write_data_ms"], s["commit_and_publish_ms"]) == (8811.0, 38.0)
    assert (s["loaded_rows"], s["load_bytes"], s["two_phase_commit"]) == (1000000, 130618406, False)


def test_starrocks_plan_time_is_the_put_step(sample):
    s = parse(sample("stream_load_response/sr_docs_flink_faq_fail_timeout_by_txn_manager.txt")).summary
    assert s["status"] == "Fail"
    assert s["message"] == "timeout by txn manager"  # the trailing "--..." annotation is dropped
    assert s["stream_load_plan_ms"] == 7.0  # StreamLoadPlanTimeMs keeps its own name
    assert "stream_load_put_ms" not in s
    assert s["write_data_ms"] == 120278.0


def test_trailing_comma_missing_comma_and_comments_are_tolerated(sample):
    s = parse(sample("stream_load_response/sr_docs_stream_load_reference_trailing_comma.txt")).summary
    assert s["loaded_rows"] == 999999
    s = parse(sample("stream_load_response/sr_docs_txn_commit_missing_comma.txt")).summary
    assert (s["write_data_ms"], s["commit_and_publish_ms"], s["received_data_ms"]) == (417851.0, 1393.0, 38964.0)
    s = parse(sample("stream_load_response/doris_docs_stream_load_reference_with_js_comment.txt")).summary
    assert s["existing_job_status"] == "FINISHED"
    assert s["error_url"].startswith("http://192.168.1.1:8042/api/_load_error_log")


def test_group_commit_insert_replies_in_python_dict_style(sample):
    p = parse(sample("stream_load_response/doris_docs_group_commit_insert_async_mode.txt"))
    assert p.summary["reply_count"] == 2
    assert (p.summary["status"], p.summary["txn_id"]) == ("PREPARE", 181508)  # txnId was the string '181508'
    assert p.summary["label"] == "group_commit_a145ce07f1c972fc-bd2c54597052a9ad"
    sync = parse(sample("stream_load_response/doris_docs_group_commit_insert_sync_mode.txt")).summary
    assert sync["query_id"] == "fc6b94085d704a94-a69bfc9a202e66e2"


def test_group_commit_stream_load_flag(sample):
    s = parse(sample("stream_load_response/doris_docs_group_commit_stream_load_sync.txt")).summary
    assert s["group_commit"] is True
    assert (s["load_time_ms"], s["write_data_ms"]) == (10044.0, 10038.0)


def test_reply_inside_a_log_line(sample):
    s = parse(sample("stream_load_response/doris_docs_datax_log_single_line_json.txt")).summary
    assert s["label"] == "datax_doris_writer_c4e08cb9-c157-4689-932f-db34acc45b6f"
    assert (s["load_time_ms"], s["commit_and_publish_ms"]) == (31.0, 17.0)


def test_last_reply_wins_and_python_literals_are_read():
    text = (
        "$ curl ... begin\n"
        '{"Status": "OK", "Label": "l1", "TxnId": 5, "BeginTxnTimeMs": 1}\n'
        "$ curl ... commit\n"
        "{'Status': 'OK', 'Label': 'l1', 'TxnId': 5, 'GroupCommit': False, 'ErrorURL': None, 'LoadTimeMs': 12}\n"
    )
    p = parse(text)
    assert p.summary["reply_count"] == 2
    assert p.summary["group_commit"] is False
    assert "error_url" not in p.summary
    assert p.summary["load_time_ms"] == 12.0
    assert p.value("BeginTxnTimeMs", path="reply[0]") == 1.0


@pytest.mark.parametrize(
    ("text", "line_no", "message"),
    [
        pytest.param('{\n    "TxnId": 1,\n    "Label": "x",\n    "Status": "Succ', 4, "not closed", id="cut-in-string"),
        pytest.param(
            '{\n    "TxnId": 1,\n    "Label": "x",\n    "Status": "Success",\n', 4, "never closed", id="cut-after-field"
        ),
        pytest.param(
            '{\n    "TxnId": 1,\n    "Label": "x" "Status": "OK"\n}', 3, "expected ','", id="two-fields-one-line"
        ),
        pytest.param('{\n    "TxnId": 1,\n    "Status": OK,\n    "Label": "x"\n}', 3, "unexpected 'O'", id="bare-word"),
    ],
)
def test_corrupt_reply_raises_with_the_line(text, line_no, message):
    with pytest.raises(ProfileParseError, match=message) as err:
        parse(text, "stream_load_response")
    assert err.value.line_no == line_no


def test_text_without_a_reply_raises():
    with pytest.raises(ProfileParseError, match="no Stream Load reply"):
        parse("curl -T data.csv http://{fe_host}:{port}/api/{db}/{table}/_stream_load\n", "stream_load_response")


def test_the_fes_own_rejection_is_a_failed_load_with_its_message():
    text = '{"status":"FAILED","msg":"There is no 100-continue header"}'
    assert detect(text) == "stream_load_response"
    s = parse(text).summary
    assert (s["status"], s["message"]) == ("FAILED", "There is no 100-continue header")


def test_doris_receive_time_is_read_and_shown_under_write_data():
    text = ('{"TxnId": 1, "Label": "l", "Status": "Success", "LoadTimeMs": 32, "BeginTxnTimeMs": 0,'
            ' "StreamLoadPutTimeMs": 4, "WriteDataTimeMs": 4, "ReceiveDataTimeMs": 6, "CommitAndPublishTimeMs": 22}')
    a = anatomy(parse(text))
    assert a["load"]["receive_data_ms"] == 6.0
    assert a["load"]["other_ms"] == 2.0  # 32 - (0 + 4 + 4 + 22): receive time overlaps the write
    assert "receive data" in format_anatomy(a)


def test_a_prompt_glued_to_the_reply_is_peeled():
    p = parse('mysql> {"Status": "Success", "TxnId": 9, "Label": "x", "LoadTimeMs": 5}')
    assert p.summary["txn_id"] == 9
    assert p.peeled == ["1 prompt(s) or label(s) glued to the JSON that follows"]
