"""``ENGINES`` parsed once into engine specifications: what they hold, what they refuse, and that nothing parses it again."""

import re
from pathlib import Path

import pytest

from ingestlab import engines, runner
from ingestlab.conninfo import HANDED_OVER, HANDOVER_ENV
from ingestlab.engine_specs import EngineSpec, parse_engines
from ingestlab.errors import ConfigError
from ingestlab.workloads import insert

LIB = Path(__file__).resolve().parents[1] / "lib" / "ingestlab"


def test_a_url_s_specification_masks_its_password_and_names_the_engine_of_its_scheme():
    spec, = parse_engines("postgresql://u:secret@db:5432/lab?label=a")
    assert (repr(spec), str(spec), spec.name, spec.connection.label) == (
        "EngineSpec('postgresql://u:***@db:5432/lab?label=a')", "postgresql://u:***@db:5432/lab?label=a", "postgres", "a")


def test_names_and_urls_mixed_become_one_specification_each_in_the_order_given():
    specs = parse_engines("duckdb, postgresql://u@db.example:5432/lab?label=main,mariadb")
    assert [s.value for s in specs] == ["duckdb", "postgresql://u@db.example:5432/lab?label=main", "mariadb"]
    assert [s.name for s in specs] == ["duckdb", "postgres", "mariadb"]
    assert [s.connection is None for s in specs] == [True, False, True]
    assert specs[1].connection.host == "db.example" and specs[1].connection.label == "main"


def test_a_string_a_list_and_specifications_give_the_same_specifications():
    given = parse_engines("postgres,mysql://u@h:3306/db")
    assert parse_engines(["postgres", "mysql://u@h:3306/db"]) == given
    assert parse_engines(given) == given
    assert all(a is b for a, b in zip(parse_engines(list(given)), given))  # parsed once: kept, not parsed again


def test_a_password_never_shows_in_a_specification_even_with_commas_in_it():
    spec, = parse_engines("mysql://root:a,b@c@db:3306/lab")
    assert spec.connection.password == "a,b@c"
    assert "a,b@c" not in repr(spec) + str(spec) + repr(spec.connection)
    assert repr(spec) == "EngineSpec('mysql://root:***@db:3306/lab')"


@pytest.mark.parametrize("value, needle", [
    ("oracle", "ENGINES='oracle' is not valid: expected an engine name, one of "),
    (",,", "expected a comma-separated list with at least one item (every item is empty)"),
    ("", "expected engine names or URLs, comma-separated"),
    (None, "expected engine names or URLs, comma-separated"),
    (["postgres", 3], "expected engine names or URLs, comma-separated"),
    ("postgres,postgres", "expected a list naming each engine once (postgres is given twice)"),
    ("postgresql://u:pw@host:notaport/db", "ENGINES='postgresql://u:***@host:notaport/db' is not valid: expected a URL"),
    ("nosuch://u@h/db", "expected a URL whose scheme is one of"),
])
def test_what_is_not_a_list_of_engines_is_refused_naming_the_parameter(value, needle):
    with pytest.raises(ConfigError) as err:
        parse_engines(value)
    assert err.value.name == "ENGINES" and needle in str(err.value)


def test_an_engine_list_naming_a_url_twice_is_refused_with_the_url_masked():
    with pytest.raises(ConfigError) as err:
        parse_engines("postgres,mysql://root:hunter2@db/lab,mysql://root:hunter2@db/lab")
    assert "hunter2" not in str(err.value) and "mysql://root:***@db/lab is given twice" in str(err.value)


def test_an_adapters_own_refusal_of_a_url_names_the_parameter_it_was_given_in():
    with pytest.raises(ConfigError) as err:
        parse_engines("arangodb://u:pw@h/db?bogus=1", "TARGETS")
    assert err.value.name == "TARGETS" and "bogus" in str(err.value) and "pw@" not in str(err.value)


def test_an_adapter_is_made_from_its_specification(tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path))
    local, remote = parse_engines("rocksdb,mysql://u@127.0.0.1:1/db?label=far")
    engine = remote.engine()
    assert type(engine) is remote.engine_class() is engines.classes()["mysql"]
    assert engine.connection == remote.connection and engine.label == "far"
    assert type(local.engine()) is local.engine_class() is engines.classes()["rocksdb"]
    assert remote.unavailable_reason() is None


@pytest.mark.parametrize("url, password, secret", [
    ("postgresql://u:pw@h:5432/db", None, "pw"),  # in the user info
    ("mysql://u@h:3306/db?passwd=pw&label=x", None, "pw"),  # in the query
    ("postgresql://u@h:5432/db", "from-file", "from-file"),  # --password-file for a URL that gives none
    ("postgresql://u:mine@h:5432/db", "from-file", "mine"),  # the URL's own wins
])
def test_a_handed_over_specification_carries_stars_and_its_password_goes_separately(url, password, secret,
                                                                                   monkeypatch):
    spec, = parse_engines(url)
    handed, taken = spec.hand_over(password)
    assert taken == secret and "***" in handed.value and secret not in handed.value + repr(handed)
    assert handed.connection.password_source == HANDED_OVER and handed.name == spec.name
    assert parse_engines(handed.value)[0].connection == handed.connection  # what the kernel parses is the same
    monkeypatch.setenv(HANDOVER_ENV, f'{{"{handed.connection.password_key}": "{secret}"}}')
    assert handed.engine().connection.secret() == secret


def test_a_local_engine_or_a_url_without_password_is_handed_over_as_it_is():
    for spec in parse_engines("postgres,postgresql://u@h:5432/db"):
        assert spec.hand_over() == (spec, None)
    assert parse_engines("duckdb")[0].hand_over("from-file") == (parse_engines("duckdb")[0], None)


def test_validated_parameters_record_the_engines_as_given():
    params = insert.validate("postgres, mysql://u@127.0.0.1:1/db")
    assert all(isinstance(spec, EngineSpec) for spec in params.engines)
    assert params.as_dict()["engines"] == ("postgres", "mysql://u@127.0.0.1:1/db")
    assert insert.validate(params.engines) == params  # specifications travel down unchanged


def test_the_runner_parses_the_engine_parameter_once_and_hands_the_specifications_to_validate(monkeypatch):
    calls = []
    import ingestlab.runner as module

    real = module.parse_engines
    monkeypatch.setattr(module, "parse_engines", lambda *a, **k: calls.append(a) or real(*a, **k))
    _, resolved, engines = runner.validated_parameters(runner.find_notebook("01"),
                                                       {"ENGINES": "duckdb,postgresql://u@127.0.0.1:1/db"})
    assert len(calls) == 1 and resolved.engines == engines
    assert [s.name for s in engines] == ["duckdb", "postgres"]


# every notebook with an engine parameter: its default's first engine, and a URL nothing listens at
_MIXED = [("01", 3), ("02", 3), ("04", 3), ("05", 3),
          ("03", 3)]  # 03's validate reaches URL servers itself: a closed port fails the pre-flight there too


@pytest.mark.parametrize("notebook, code", _MIXED)
def test_a_name_and_a_url_together_reach_the_check_of_the_url(notebook, code, tmp_path, cli_here):
    """README: ``-p ENGINES duckdb,postgresql://u@host/db``; 01 once refused the name as "expected a URL" (issue V)."""
    url = "postgresql://u:hunter2@127.0.0.1:1/db"
    res = cli_here("run", notebook, "--no-progress", "--out", tmp_path / "out", "-p", "ENGINES", f"postgres,{url}",
                   env={"INGESTLAB_LAB_DIR": tmp_path / "lab"})
    last = res.stderr.strip().splitlines()[-1]
    assert res.returncode == code, res.stderr
    assert "postgresql://u:***@127.0.0.1:1/db" in last and "Connection refused" in last, last
    assert ("pre-flight check failed: ENGINES" in last) == (code == 3)
    assert "hunter2" not in res.stdout + res.stderr


# notebooks whose engines must be the lab's own servers (08 routes a cluster's links through proxies): a URL is refused
_LAB_ONLY = ("08",)


@pytest.mark.parametrize("notebook", _LAB_ONLY)
def test_a_url_is_refused_in_one_line_where_only_the_lab_s_servers_will_do(notebook, tmp_path, cli_here):
    res = cli_here("run", notebook, "--no-progress", "--out", tmp_path / "out",
                   "-p", "ENGINES", "postgresql://u:hunter2@127.0.0.1:1/db", env={"INGESTLAB_LAB_DIR": tmp_path / "lab"})
    last = res.stderr.strip().splitlines()[-1]
    assert res.returncode == 2 and "ENGINES" in last and "hunter2" not in res.stdout + res.stderr, res.stderr


def test_the_notebooks_that_measure_engines_are_the_ones_tested_above():
    from ingestlab.workloads import discover

    assert sorted(b.id for b in discover().values() if b.engine_parameter) == sorted(
        [nb for nb, _ in _MIXED] + list(_LAB_ONLY))


def test_nothing_but_the_specifications_splits_an_engine_parameter_or_tells_a_name_from_a_url():
    """Whether a value is a URL is ``conninfo.is_url``'s to say; the engine list is split by ``engine_specs`` alone.

    A list parameter of plain words is split by ``workloads._params.items_of`` alone.
    """
    url_test = re.compile(r"""["']://["']\s+(not\s+)?in\b""")
    found = []
    for path in sorted(LIB.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(LIB).as_posix()
        if where != "conninfo.py" and url_test.search(text):
            found.append(f"{where}: '://' in")
        if where not in ("conninfo.py", "engine_specs.py") and "split_targets(" in text:
            found.append(f"{where}: split_targets")
        parses_parameters = where in ("runner.py", "preflight.py", "cli.py", "engine_specs.py") or (
            where.startswith("workloads/") and not where.endswith("_analysis.py") and where != "workloads/_params.py")
        if parses_parameters and re.search(r"""\.split\(\s*["'],["']""", text):
            found.append(f"{where}: .split(',')")
    assert found == []
