"""Database URLs: the parsed connection value, masking, comma lists of targets, the password hand-over."""

from __future__ import annotations

import json

import pytest

from ingestlab import conninfo
from ingestlab.conninfo import (
    HANDOVER_ENV,
    MASK,
    Connection,
    mask_url,
    parse_url,
    password_from_env,
    password_key,
    split_password,
    split_targets,
    with_password_placeholder,
)
from ingestlab.errors import ConfigError

#: Passwords holding every character a URL gives a meaning to, and spaces.
ODD_PASSWORDS = ["p@ss", "a:b", "x/y", "100%", "sp ace", "@:/% ", "p@ss@word", "trail@", "a%40b"]


# -- parsing ---------------------------------------------------------------------------------------
def test_a_url_is_parsed_once_into_its_parts():
    c = Connection.parse("mysql+pymysql://root:pw@db.example:3307/lab?charset=utf8mb4&label=left")
    assert (c.scheme, c.driver, c.drivername) == ("mysql", "pymysql", "mysql+pymysql")
    assert (c.user, c.host, c.port, c.database) == ("root", "db.example", 3307, "lab")
    assert (c.password_source, c.password) == ("url", "pw")
    assert c.label == "left" and c.options == {"charset": "utf8mb4"} and c.lab == {"label": "left"}
    assert c.password_key == "root@db.example:3307"


def test_an_engines_lab_keys_stay_away_from_the_driver():
    c = Connection.parse("starrocks://root@fe:9030/db?http_port=8030&buckets=2&label=x&connect_timeout=3")
    engine_view = c.for_engine(("label", "http_port", "buckets"))
    assert engine_view.options == {"connect_timeout": "3"}
    assert engine_view.lab == {"label": "x", "http_port": "8030", "buckets": "2"}
    assert engine_view.connect_args() == {"host": "fe", "port": 9030, "user": "root", "database": "db",
                                          "connect_timeout": "3"}


@pytest.mark.parametrize("key", ["password", "passwd", "PASSWORD", "Passwd"])
def test_a_password_in_the_query_is_the_urls_password_and_never_an_option(key):
    c = Connection.parse(f"mysql://root@db:3306/lab?{key}=s3cret&charset=utf8mb4")
    assert (c.password_source, c.password) == ("query", "s3cret")
    assert c.options == {"charset": "utf8mb4"}  # the driver gets it as the password, not twice
    assert c.connect_args()["password"] == "s3cret"
    assert "s3cret" not in repr(c) and "s3cret" not in c.display() and "s3cret" not in str(c.url())


def test_a_percent_encoded_query_password_is_decoded():
    assert Connection.parse("postgresql://u@h:5432/db?password=a%26b%20c").password == "a&b c"


def test_two_different_passwords_are_refused_without_showing_either():
    with pytest.raises(ConfigError) as err:
        Connection.parse("mysql://root:first-pw@db/lab?password=second-pw", parameter="TARGETS")
    assert err.value.name == "TARGETS"
    assert "first-pw" not in str(err.value) and "second-pw" not in str(err.value)


@pytest.mark.parametrize("url", ["postgresql://u:***@h:5432/db", "postgresql://u@h:5432/db?password=***"])
def test_a_masked_password_is_handed_over_through_the_environment(url, monkeypatch):
    c = Connection.parse(url)
    assert c.password_source == "handover" and c.password is None
    monkeypatch.setenv(HANDOVER_ENV, json.dumps({"u@h:5432": "from-runner"}))
    assert c.secret() == "from-runner" and c.connect_args()["password"] == "from-runner"


def test_a_missing_hand_over_names_the_parameter_and_the_key(monkeypatch):
    monkeypatch.delenv(HANDOVER_ENV, raising=False)
    with pytest.raises(ConfigError, match="u@h:5432") as err:
        Connection.parse("postgresql://u:***@h:5432/db", parameter="TARGET").secret()
    assert err.value.name == "TARGET"
    with pytest.raises(ConfigError) as err:
        password_from_env(Connection.parse("postgresql://u:***@h:5432/db"))
    assert err.value.name == "ENGINES"


def test_a_url_without_a_password_has_none_and_shows_none():
    c = Connection.parse("postgresql://u@h/db")
    assert c.password_source == "none" and "password" not in c.connect_args()
    assert c.display() == "postgresql://u@h/db"


@pytest.mark.parametrize("url, parameter", [("postgresql://u@h:notaport/db", "ENGINES"), ("postgresql://", "TARGET"),
                                            ("postgresql://u@/db", "TARGETS")])
def test_malformed_urls_name_the_parameter_they_were_given_in(url, parameter):
    with pytest.raises(ConfigError) as err:
        Connection.parse(url, parameter=parameter)
    assert err.value.name == parameter
    with pytest.raises(ConfigError) as err:
        parse_url(url, parameter)
    assert err.value.name == parameter


def test_parse_url_names_engines_by_default():
    with pytest.raises(ConfigError) as err:
        parse_url("postgresql://u:secret@h:x/db")
    assert err.value.name == "ENGINES" and "secret" not in str(err.value)


@pytest.mark.parametrize("password", ODD_PASSWORDS)
def test_passwords_with_raw_url_characters_survive_parsing(password):
    c = Connection.parse(f"mysql://root:{password}@db.example:3306/lab")
    expected = password if "%40" not in password else password.replace("%40", "@")  # an escape is read as one
    assert (c.user, c.host, c.port, c.database, c.password) == ("root", "db.example", 3306, "lab", expected)


def test_the_user_info_ends_at_the_last_at_sign():
    # a split at the first "@" would read host "ss@db.example" and password "p"
    c = Connection.parse("mysql://root:p@ss@db.example:3306/lab")
    assert (c.host, c.password) == ("db.example", "p@ss")
    assert conninfo._split("mysql://root:p@ss@db.example/lab") == ("mysql://", "root", "p@ss", "@db.example/lab")


# -- masking ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("password", ODD_PASSWORDS)
def test_mask_url_hides_every_character_of_the_password(password):
    url = f"mysql://root:{password}@db.example:3306/lab"
    masked = mask_url(url)
    assert masked == "mysql://root:***@db.example:3306/lab"
    assert mask_url(Connection.parse(url)) == masked


def test_mask_url_keeps_nothing_of_a_password_with_at_signs():
    masked = mask_url("mysql://root:p@ss@db.example/lab")
    assert masked == "mysql://root:***@db.example/lab" and "ss" not in masked.split("@")[0]


@pytest.mark.parametrize("query, shown", [
    ("?password=hunter2", "?password=***"),
    ("?passwd=hunter2&label=a", "?passwd=***&label=a"),
    ("?label=a&PASSWORD=hunter2", "?label=a&PASSWORD=***"),
    ("?password=hunter2&password=again", "?password=***&password=***"),
])
def test_mask_url_hides_passwords_in_the_query(query, shown):
    assert mask_url(f"mysql://root@db/lab{query}") == f"mysql://root@db/lab{shown}"


def test_mask_url_hides_passwords_in_a_sqlalchemy_url_and_in_a_malformed_one():
    from sqlalchemy.engine import make_url

    assert "hunter2" not in mask_url(make_url("mysql://root:hunter2@db/lab?passwd=hunter2"))
    assert mask_url("mysql://root:hunter2@db:notaport/lab?password=hunter2") == \
        "mysql://root:***@db:notaport/lab?password=***"


def test_mask_url_masks_each_url_of_a_list():
    masked = mask_url("postgres,mysql://u:pa,ss@h/db,doris://root:pw@fe:9030/x?password=pw")
    assert masked == "postgres,mysql://u:***@h/db,doris://root:***@fe:9030/x?password=***"


def test_a_connection_shows_its_password_nowhere():
    c = Connection.parse("mysql://root:hunter2@db/lab")
    assert all("hunter2" not in text for text in (repr(c), str(c), c.display(), mask_url(c),
                                                   c.url().render_as_string(hide_password=False)))


# -- the runner's hand-over -------------------------------------------------------------------------
@pytest.mark.parametrize("url, masked", [
    ("postgresql://u:pw@h:5432/db", "postgresql://u:***@h:5432/db"),
    ("mysql://u@h:3306/db?passwd=pw&label=x", "mysql://u:***@h:3306/db?label=x"),
    ("mysql://u@h:3306/db?label=x&password=pw", "mysql://u:***@h:3306/db?label=x"),
    ("mysql://h:3306/db?password=pw", "mysql://:***@h:3306/db"),
    ("mysql://u:pw@h:3306/db?password=pw", "mysql://u:***@h:3306/db"),
])
def test_split_password_moves_any_password_to_the_hand_over(url, masked):
    assert split_password(url) == (masked, "pw")
    handed = Connection.parse(masked)  # what the kernel reads back
    assert handed.password_source == "handover" and handed.password_key == password_key(url)


def test_split_password_leaves_a_url_without_one_alone():
    assert split_password("mysql://u@h/db?label=x") == ("mysql://u@h/db?label=x", None)


def test_a_placeholder_is_put_where_the_kernel_reads_it():
    assert with_password_placeholder("postgresql://u@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert Connection.parse(with_password_placeholder("postgresql://h:5432/db")).password_source == "handover"


def test_password_key_reads_urls_connections_and_strings_alike():
    from sqlalchemy.engine import make_url

    url = "mysql://root:pw@db:3306/lab"
    assert password_key(url) == password_key(make_url(url)) == password_key(Connection.parse(url)) == "root@db:3306"


# -- comma lists ------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, items", [
    ("postgres", ["postgres"]),
    (" postgres , mariadb ,", ["postgres", "mariadb"]),
    ("mysql://u:a,b@h/db", ["mysql://u:a,b@h/db"]),
    ("mysql://u:a,b@h/db,postgres", ["mysql://u:a,b@h/db", "postgres"]),
    ("postgres,mysql://u:p@h/db,mariadb://r:x,y,z@h2/db", ["postgres", "mysql://u:p@h/db", "mariadb://r:x,y,z@h2/db"]),
    ("starrocks://a@h:9030/d?label=x,starrocks://a@h:9130/d?label=y",
     ["starrocks://a@h:9030/d?label=x", "starrocks://a@h:9130/d?label=y"]),
    ("mysql://u:x,y@z,w@h/db,postgres", ["mysql://u:x,y@z,w@h/db", "postgres"]),
    ("mysql://u@h/db,postgres,mariadb", ["mysql://u@h/db", "postgres", "mariadb"]),
    ("", []),
])
def test_split_targets_splits_at_commas_that_start_a_name_or_a_url(value, items):
    assert split_targets(value) == items


def test_split_targets_keeps_a_password_holding_comma_and_at_together():
    (item,) = split_targets("mysql://u:p,q@r@h:3306/db")
    assert Connection.parse(item).password == "p,q@r"


def test_mask_is_three_stars():
    assert MASK == "***"
