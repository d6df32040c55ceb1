"""The anatomy of a statement: total, execution, FE overhead, top operators, load split."""

from __future__ import annotations

import json
import math

import pytest

from ingestlab.profiles import anatomy, format_anatomy, parse, parse_file
from ingestlab.profiles._anatomy import UNIT_SUFFIXES

CATEGORIES = ()  # every category


def _has_nan(value) -> bool:
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    return isinstance(value, float) and math.isnan(value)


def test_anatomy_of_every_real_sample_is_json_without_nan(real_file):
    a = anatomy(parse_file(real_file))
    assert not _has_nan(a)
    assert json.loads(json.dumps(a, allow_nan=False)) == a
    assert len(a["top_operators"]) <= 5
    text = format_anatomy(a)
    assert text.splitlines()[0].startswith(a["kind"])
    if a["total_ms"] is not None:
        assert "total" in text


def test_analyze_profile_anatomy_splits_total_into_execution_and_fe_overhead(sample):
    a = anatomy(parse(sample("starrocks_analyze_profile/sr_radiant_explain_analyze_select_join_ansi_remnants.txt")))
    assert (a["total_ms"], a["execution_ms"], a["fe_overhead_ms"]) == (1434.0, 1317.0, 117.0)
    assert [op["name"] for op in a["top_operators"]] == [
        "EXCHANGE (id=5)",
        "RESULT_SINK",
        "HASH_JOIN (id=2) [COLOCATE, LEFT OUTER JOIN]",
        "OLAP_SCAN (id=0)",
        "DECODE (id=4)",
    ]
    assert a["top_operators"][0]["share_pct"] == pytest.approx(512.645 / 1356.074 * 100, rel=1e-4)
    text = format_anatomy(a)
    assert "FE overhead" in text and "117.000 ms" in text


def test_load_anatomy_shows_status_rows_and_time_split(sample):
    a = anatomy(parse(sample("stream_load_response/sr_docs_helm_weatherdata.txt")))
    load = a["load"]
    assert (load["status"], load["loaded_rows"], load["load_time_ms"]) == ("Success", 22931, 404.0)
    assert load["time_split"] == {
        "begin_txn_ms": 1.0,
        "stream_load_plan_ms": 7.0,
        "write_data_ms": 372.0,
        "commit_and_publish_ms": 23.0,
    }
    assert load["other_ms"] == 1.0
    assert load["read_data_ms"] == 157.0
    assert "write data" in format_anatomy(a)


def test_overlapping_load_parts_give_no_negative_remainder(sample):
    a = anatomy(parse(sample("stream_load_response/sr_docs_txn_commit_missing_comma.txt")))
    assert a["load"]["other_ms"] is None


def test_truncated_input_is_noted(sample):
    a = anatomy(parse(sample("starrocks_profile/sr_2022_main_release_select_old_format_truncated.txt")))
    assert any("cut short" in note for note in a["notes"])


def test_profile_list_anatomy_lists_entries(sample):
    a = anatomy(parse(sample("starrocks_profilelist/sr_docs_text_based_analysis_mixed_states.txt")))
    assert a["count"] == 5
    assert a["entries"][-1] == {"id": "a26ec286-8428-11ee-8d02-6a32f8c68848", "time_ms": 269.0, "state": "Error"}


def test_explain_anatomy_reports_planning_and_execution(sample):
    a = anatomy(parse(sample("postgres_explain/pg_pev2_insert_10m_wal_jit_french_psql.txt")))
    assert (a["planning_ms"], a["execution_ms"], a["total_ms"]) == (0.039, 11560.132, None)
    assert a["top_operators"][0]["name"] == "Insert on tutu"


def test_format_anatomy_renders_a_minimal_dict():
    text = format_anatomy({"kind": "x", "top_operators": []})
    assert text == "x"


def test_every_metric_key_carries_its_unit(real_file):
    metrics = anatomy(parse_file(real_file))["metrics"]
    assert all(key.endswith(UNIT_SUFFIXES) for key in metrics), sorted(metrics)


def test_json_anatomy_prints_every_number_the_parser_extracted(sample):
    a = anatomy(parse(sample("postgres_explain/pg_pev2_insert_10m_wal_jit_french_psql.txt")))
    m = a["metrics"]
    assert (m["wal_records"], m["wal_fpi"], m["wal_bytes"]) == (10000000, 1, 590001027)
    assert (m["root_actual_rows"], m["temp_written_blocks"], m["jit_ms"]) == (0, 17090, 0.795)
    yb = anatomy(parse(sample("yugabyte_explain/yb_docs_explain_analyze_dist_select_seqscan_kvstore.txt")))
    assert any(k.startswith("storage_") and k.endswith("_requests") for k in yb["metrics"])
    text = format_anatomy(a)
    assert "wal_bytes" in text and "590,001,027" in text


def test_profile_command_json_carries_metrics_peeled_and_warnings(tmp_path, capsys):
    from ingestlab.cli import main

    path = tmp_path / "reply.txt"
    path.write_text('mysql> {"Status": "Success", "TxnId": 1, "Label": "x", "LoadTimeMs": 5, "LoadBytes": 10}\n')
    assert main(["profile", "--json", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["load_bytes"] == 10 and out["peeled"] and out["warnings"] == []
    assert main(["profile", str(path)]) == 0
    assert "peeled:" in capsys.readouterr().out
