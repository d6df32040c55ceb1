"""Format detection and the package-level entry points (detect, parse, parse_file)."""

from __future__ import annotations

import pytest

from ingestlab.errors import ConfigError, ProfileParseError
from ingestlab.profiles import KINDS, detect, parse, parse_file

CATEGORIES = ()  # every category

#: Corpus category -> the kinds `detect` may return for it.
CATEGORY_KINDS = {
    "postgres_explain": {"postgres_explain_text", "postgres_explain_json"},
}


def test_detect_returns_each_real_sample_category(real_file, body_of):
    category = real_file.parent.name
    assert detect(body_of(real_file)) in CATEGORY_KINDS.get(category, {category})


def test_every_detected_kind_is_documented(real_file, body_of):
    assert detect(body_of(real_file)) in KINDS


@pytest.mark.parametrize(
    "text",
    [
        "hello world\nthis is not a profile",
        "SELECT 1;\n+---+\n| 1 |\n+---+\n| 1 |\n+---+\n",
        "{}",
        "Status: fine",
    ],
)
def test_garbage_raises_profile_parse_error_with_a_line(text):
    with pytest.raises(ProfileParseError) as err:
        detect(text)
    assert err.value.line_no == 1
    with pytest.raises(ProfileParseError):
        parse(text)


@pytest.mark.parametrize("text", ["", "   \n\n"])
def test_empty_input_raises(text):
    with pytest.raises(ProfileParseError, match="empty"):
        detect(text)


def test_unknown_kind_is_a_config_error():
    with pytest.raises(ConfigError, match="kind"):
        parse("{}", kind="oracle_awr")


def test_parse_file_reports_line_numbers_of_the_file(tmp_path, sample):
    body = sample("stream_load_response/sr_docs_helm_weatherdata.txt").lstrip("\n").split("\n")
    broken = next(i for i, line in enumerate(body) if '"LoadTimeMs"' in line)
    body[broken] = '    "LoadTimeMs": ???,'
    path = tmp_path / "broken.txt"
    path.write_text("# source: test\n# ---- verbatim sample below this line ----\n" + "\n".join(body), encoding="utf-8")
    with pytest.raises(ProfileParseError) as err:
        parse_file(path)
    assert err.value.line_no == 2 + broken + 1
    assert "???" in err.value.line


def test_parse_file_reads_only_the_body_of_a_fixture(tmp_path):
    path = tmp_path / "reply.txt"
    path.write_text(
        "# statement: the header may say Status: and TxnId:\n"
        "# ---- verbatim sample below this line ----\n"
        '# a comment line of the body\n{"Status": "Success", "TxnId": 1, "Label": "x", "LoadTimeMs": 5}\n',
        encoding="utf-8",
    )
    p = parse_file(path)
    assert (p.kind, p.summary["load_time_ms"]) == ("stream_load_response", 5.0)


def test_parse_file_without_marker_parses_the_whole_file(tmp_path):
    path = tmp_path / "plan.txt"
    path.write_text(" Result  (cost=0.00..0.01 rows=1 width=4) (actual time=0.001..0.001 rows=1 loops=1)\n"
                    " Planning Time: 0.010 ms\n Execution Time: 0.020 ms\n", encoding="utf-8")
    assert parse_file(path).summary["execution_ms"] == 0.02
