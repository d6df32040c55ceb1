"""MariaDB SHOW PROFILE, from the client's text table or from cursor rows.

The corpus has no MariaDB sample; these tables are hand-written in the client's layout.
"""

from __future__ import annotations

import textwrap

import pytest

from ingestlab.engines.mysql import profile as mariadb
from ingestlab.errors import ProfileParseError
from ingestlab.profiles import detect, parse

SHOW_PROFILE = textwrap.dedent(
    """\
    MariaDB [lab]> SHOW PROFILE;
    +----------------------+----------+
    | Status               | Duration |
    +----------------------+----------+
    | Starting             | 0.000042 |
    | checking permissions | 0.000005 |
    | Opening tables       | 0.000020 |
    | After opening tables | 0.000004 |
    | System lock          | 0.000004 |
    | table lock           | 0.000006 |
    | init                 | 0.000015 |
    | Update               | 0.000040 |
    | End of update loop   | 0.000004 |
    | Query end            | 0.000002 |
    | Commit               | 0.002208 |
    | closing tables       | 0.000005 |
    | Unlocking tables     | 0.000003 |
    | closing tables       | 0.000005 |
    | Starting cleanup     | 0.000002 |
    | Freeing items        | 0.000004 |
    | Updating status      | 0.000003 |
    | Reset for next command | 0.000002 |
    +----------------------+----------+
    18 rows in set (0.00 sec)
    """
)

CURSOR_ROWS = [("Starting", 0.000042), ("Opening tables", 0.00002), ("Commit", 0.002208), ("closing tables", 0.000005)]


def test_client_table_gives_one_row_per_stage():
    frame = mariadb.stages(SHOW_PROFILE)
    assert list(frame.columns[:3]) == ["seq", "stage", "duration_ms"]
    assert len(frame) == 18
    assert frame["seq"].tolist() == list(range(1, 19))
    commit = frame[frame["stage"] == "Commit"]
    assert commit["duration_ms"].iloc[0] == pytest.approx(2.208)


def test_cursor_rows_give_the_same_frame_shape():
    frame = mariadb.stages(CURSOR_ROWS)
    assert frame["seq"].tolist() == [1, 2, 3, 4]
    assert frame["stage"].tolist() == ["Starting", "Opening tables", "Commit", "closing tables"]
    assert frame["duration_ms"].tolist() == pytest.approx([0.042, 0.02, 2.208, 0.005])


def test_profile_summary_totals_stages_and_sums_repeats():
    p = parse(SHOW_PROFILE)
    assert p.kind == "mariadb_show_profile"
    assert p.summary["stage_count"] == 18
    assert p.summary["total_ms"] == pytest.approx(2.374)
    assert p.summary["slowest_stage"] == "Commit"
    assert p.summary["stages_ms"]["closing tables"] == pytest.approx(0.010)
    assert p.operators["name"].iloc[0] == "Starting"


def test_detect_recognises_text_and_cursor_rows():
    assert detect(SHOW_PROFILE) == "mariadb_show_profile"
    assert detect(CURSOR_ROWS) == "mariadb_show_profile"
    assert parse(CURSOR_ROWS).summary["stage_count"] == 4


def test_tab_separated_and_vertical_output():
    batch = "Status\tDuration\nstarting\t0.000050\nCommit\t0.001000\n"
    assert mariadb.stages(batch)["duration_ms"].tolist() == pytest.approx([0.05, 1.0])
    vertical = (
        "*************************** 1. row ***************************\n"
        "  Status: starting\nDuration: 0.000050\n"
        "*************************** 2. row ***************************\n"
        "  Status: Commit\nDuration: 0.001000\n"
    )
    assert mariadb.stages(vertical)["stage"].tolist() == ["starting", "Commit"]


def test_cpu_columns_become_milliseconds():
    text = (
        "+----------+----------+----------+------------+\n"
        "| Status   | Duration | CPU_user | CPU_system |\n"
        "+----------+----------+----------+------------+\n"
        "| starting | 0.000050 | 0.000040 |   0.000000 |\n"
        "+----------+----------+----------+------------+\n"
    )
    frame = mariadb.stages(text)
    assert frame["cpu_user_ms"].iloc[0] == pytest.approx(0.04)


def test_non_numeric_duration_raises_with_the_line():
    bad = SHOW_PROFILE.replace("| 0.002208 |", "| 0.00x208 |")
    with pytest.raises(ProfileParseError, match="Duration") as err:
        parse(bad)
    assert err.value.line_no == 15


def test_table_cut_before_its_border_raises():
    cut = "\n".join(SHOW_PROFILE.splitlines()[:10])
    with pytest.raises(ProfileParseError, match="closing border") as err:
        parse(cut)
    assert err.value.line_no == 10


def test_empty_rows_raise():
    with pytest.raises(ProfileParseError):
        mariadb.stages([])


def test_stage_events_with_raw_picosecond_timer_wait():
    """Hand-written in the mysql client's shape for SELECT EVENT_NAME, TIMER_WAIT FROM events_stages_history."""
    text = (
        "+--------------------------------+-------------+\n"
        "| EVENT_NAME                     | TIMER_WAIT  |\n"
        "+--------------------------------+-------------+\n"
        "| stage/sql/starting             |    58000000 |\n"
        "| stage/sql/Opening tables       | 27480000000 |\n"
        "| stage/sql/executing            |     1000000 |\n"
        "+--------------------------------+-------------+\n"
        "3 rows in set (0.00 sec)\n"
    )
    p = parse(text)
    assert p.kind == "mysql_stage_events"
    assert p.summary["stages_ms"] == {"stage/sql/starting": 0.058, "stage/sql/Opening tables": 27.48,
                                      "stage/sql/executing": 0.001}
    assert p.summary["total_ms"] == pytest.approx(27.539)


def test_stage_events_with_format_pico_time_text():
    text = (
        "+----------------------+-----------+\n"
        "| EVENT_NAME           | latency   |\n"
        "+----------------------+-----------+\n"
        "| stage/sql/starting   | 58.00 us  |\n"
        "| stage/sql/statistics | 27.48 ms  |\n"
        "| stage/sql/end        | 300 ps    |\n"
        "+----------------------+-----------+\n"
    )
    p = parse(text)
    assert p.summary["slowest_stage"] == "stage/sql/statistics"
    assert p.summary["total_ms"] == pytest.approx(0.058 + 27.48 + 3e-7)


def test_a_stage_event_table_cut_short_is_an_error_with_its_line():
    text = (
        "+--------------------+------+\n| EVENT_NAME         | ms   |\n+--------------------+------+\n"
        "| stage/sql/starting | 0.05 |\n| stage/sql/init     | 0.01 |\n| stage/sql/end      | 0."
    )
    with pytest.raises(ProfileParseError) as err:
        parse(text, "mysql_stage_events")
    assert err.value.line_no == 6
