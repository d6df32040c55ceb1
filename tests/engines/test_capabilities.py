"""The capabilities: each kind declared once with its flags, engines that provide or lack them, notebooks that need them."""

from __future__ import annotations

import inspect
import re

import pytest

from ingestlab import engines, runner
from ingestlab.engines import Engine, capabilities
from ingestlab.engines.base import STEPS
from ingestlab.errors import ConfigError, UnsupportedOperationError
from ingestlab.workloads import discover

_FLAG = re.compile(r"^[A-Z][A-Z0-9_]*$")
#: Registry classmethods the "folders" part of issue S moves to module functions: counted as gone.
_REGISTRY = {"classes", "names", "versions", "get", "from_url", "resolve", "class_of"}


def _flags(cls: type) -> set[str]:
    return {n for n, v in vars(cls).items() if _FLAG.match(n) and not inspect.isfunction(v)}


@pytest.mark.parametrize("kind", list(capabilities.KINDS.values()), ids=list(capabilities.KINDS))
def test_each_kind_declares_its_flags_once_with_a_comment_and_a_reason_when_missing(kind):
    source = inspect.getsource(kind)
    for flag in _flags(kind) - {"NAME", "MISSING"}:
        assert re.search(rf"#: [^\n]*\n(\s*#:[^\n]*\n)*\s*{flag}\b", source), f"{kind.__name__}.{flag} has no #: comment"
    assert kind.NAME in capabilities.KINDS and kind.MISSING and kind.__doc__


@pytest.mark.parametrize("name", engines.names())
def test_an_engines_capability_classes_assign_only_flags_their_kind_declares(name):
    engine_cls = engines.classes()[name]
    for kind_name, provided in engine_cls.CAPABILITIES.items():
        if isinstance(provided, str):
            continue
        kind = capabilities.KINDS[kind_name]
        for klass in provided.__mro__[:provided.__mro__.index(kind)]:
            assert _flags(klass) <= _flags(kind), f"{klass.__name__} invents {_flags(klass) - _flags(kind)}"


def test_a_missing_capability_says_why_in_one_line():
    rocksdb, starrocks = engines.classes()["rocksdb"], engines.classes()["starrocks"]
    assert not rocksdb.has("group_commit") and rocksdb.has("upsert")
    with pytest.raises(UnsupportedOperationError, match=r"^rocksdb: no group_commit: no commit grouping to vary$"):
        rocksdb.has("group_commit", check=True)
    with pytest.raises(UnsupportedOperationError, match=r"^starrocks: no group_commit: StarRocks has no group commit"):
        starrocks.has("group_commit", check=True)
    # a family's subclass switches off what it must not inherit, with its own reason
    assert engines.classes()["postgres"].has("memory_budget") and not engines.classes()["yugabytedb"].has("memory_budget")
    with pytest.raises(ConfigError, match="step"):
        rocksdb.has("no_such_capability")


def test_an_unknown_capability_or_a_class_of_another_kind_is_refused_when_the_engine_is_declared():
    with pytest.raises(TypeError, match="not a capability"):
        type("Toy", (Engine,), {"CAPABILITIES": {"teleport": "nowhere"}})
    with pytest.raises(TypeError, match="a subclass of Upsert"):
        type("Toy", (Engine,), {"CAPABILITIES": {"upsert": capabilities.GroupCommit}})


def test_the_capability_object_is_made_once_per_engine_and_bound_to_it():
    pg = engines.from_url("postgresql://u@127.0.0.1:5432/db")
    upsert = pg.capability("upsert")
    assert upsert is pg.capability("upsert") and upsert.engine is pg and upsert.OPERATIONS == ("insert", "overwrite")
    with pytest.raises(UnsupportedOperationError, match="^starrocks: no upsert: "):
        engines.from_url("starrocks://root@127.0.0.1:9030/db").capability("upsert")


def test_every_need_a_notebook_declares_is_a_capability_or_a_step():
    for book in discover().values():
        assert set(book.needs) <= set(capabilities.KINDS) | set(STEPS), book.stem


@pytest.mark.parametrize("notebook, engine, need", [("04", "duckdb", "group_commit"), ("03", "clickhouse", "upsert"),
                                                    ("05", "rocksdb", "table_ddl"), ("01", "rocksdb", "execute")])
def test_the_runner_refuses_an_engine_without_a_needed_capability_in_one_line(notebook, engine, need):
    with pytest.raises(ConfigError) as refusal:
        runner.check_parameters(runner.find_notebook(notebook), {"ENGINES": engine})
    message = str(refusal.value)
    assert f"ENGINES={engine!r}" in message and f"an engine with {need}" in message
    assert f"({engine}: no {need}: " in message and "\n" not in message


def test_engine_is_a_small_core():
    members = {m for m in dir(Engine) if not m.startswith("_")} - _REGISTRY | {"STYLE"}
    lines = len(inspect.getsource(inspect.getmodule(Engine)).splitlines())
    assert len(members) <= 30, f"Engine has {len(members)} public members: {sorted(members)}"
    assert lines <= 400, f"engines/base.py has {lines} lines"
