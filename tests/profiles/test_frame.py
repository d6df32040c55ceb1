"""Client, terminal and log framing is peeled once, in place, before any parser runs."""

from __future__ import annotations

import textwrap

import pytest

from ingestlab.errors import ProfileParseError
from ingestlab.profiles import detect, parse, parse_file, peel

CATEGORIES = ()  # every category of the shared corpus


def test_shared_corpus_is_left_alone_but_for_its_one_gui_export(real_file, body_of):
    text, peeled = peel(body_of(real_file))
    if real_file.name == "sr_radiant_explain_analyze_select_join_ansi_remnants.txt":
        assert peeled == ["trailing ' |' column bars of a GUI client's export"]
    else:
        assert (text, peeled) == (body_of(real_file), [])


@pytest.mark.parametrize(
    ("text", "what"),
    [
        pytest.param("mysql> {\"Status\": \"OK\", \"TxnId\": 1}\n", "prompt", id="mysql-prompt"),
        pytest.param("$ curl -T a.csv http://fe:8030/api/d/t/_stream_load {\n\"Status\": \"OK\",\n\"TxnId\": 1}\n",
                     "prompt", id="shell-command"),
        pytest.param("I0404 15:02:35.842590  3703 x.cpp:475] Fragment a:(Active: 1ms)\n", "log prefix", id="glog"),
        pytest.param("Execution Time: 8.586 ms     <------ one round trip\n", "note", id="arrow-note"),
        pytest.param("# +---+\n# | a |\n# +---+\n", "comment mark", id="sql-comment"),
        pytest.param('    "Status": "Success",\n    "TxnId": 3,\n    "LoadTimeMs": 9\n', "braces", id="bare-reply"),
    ],
)
def test_each_kind_of_framing_is_peeled_and_lines_are_kept(text, what):
    peeled_text, peeled = peel(text)
    assert len(peeled) == 1 and what in peeled[0]
    assert peeled_text.count("\n") == text.count("\n")


def test_a_row_wrapped_by_the_paste_is_joined_back():
    text = textwrap.dedent(
        """\
        +----------+------+------+----------+-----------+
        | QueryId  | StartTime | Time | State | Statement |
        +----------+------+------+----------+-----------+
        | q1       | 2024 | 2ms  | Finished | select 1  |
        | q2       | 2024 | 5ms  | Finished | select
        2         |
        +----------+------+------+----------+-----------+
        """
    )
    # widths of a real table: pad every row to the border's width
    width = len(text.splitlines()[0])
    lines = [line if not line.startswith("| q1") else line.ljust(width - 1) + "|" for line in text.splitlines()]
    peeled_text, peeled = peel("\n".join(lines))
    assert any("wrapped" in p for p in peeled)
    assert peeled_text.splitlines()[5] == ""  # the continuation line is blanked, not removed


def test_a_note_after_a_tables_closing_bar_is_cut():
    text = "+---+\n| a |\n+---+\n| 1 |   <- the only row\n+---+\n"
    peeled_text, peeled = peel(text)
    assert peeled_text.splitlines()[3] == "| 1 |"
    assert "closing bar" in peeled[0]


def test_a_reply_pasted_without_braces_parses_as_a_load_reply():
    text = '    "TxnId": 7,\n    "Label": "l",\n    "Status": "Success",\n    "LoadTimeMs": 31,\n'
    p = parse(text)
    assert (p.kind, p.summary["load_time_ms"]) == ("stream_load_response", 31.0)
    assert p.peeled == ["a load reply pasted without its braces: braces put back"]


def test_peeling_keeps_error_line_numbers_of_the_input():
    text = 'mysql> {\n  "TxnId": 1,\n  "Label": "x",\n  "Status": OK\n}\n'
    with pytest.raises(ProfileParseError) as err:
        parse(text, "stream_load_response")
    assert err.value.line_no == 4


def test_detect_sees_through_the_frame(tmp_path):
    path = tmp_path / "dbeaver.txt"
    path.write_text(
        "QUERY PLAN                                                     |\n"
        "---------------------------------------------------------------+\n"
        "Result  (cost=0.00..0.01 rows=1 width=4) (actual time=0.001..0.002 rows=1 loops=1)|\n"
        "Planning Time: 0.010 ms                                        |\n"
        "Execution Time: 0.020 ms                                       |\n",
        encoding="utf-8",
    )
    assert detect(path.read_text()) == "postgres_explain_text"
    assert parse_file(path).summary["execution_ms"] == 0.02
