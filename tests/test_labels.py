"""Tests for ingestlab.labels: every identifier the lab declares has a reader's name."""

import doctest

import pandas as pd
import pytest

import ingestlab.engines  # noqa: F401 - registers every adapter and its anatomy recorder
from ingestlab import anatomy, labels
from ingestlab.engines import capabilities, registry
from ingestlab.workloads import csv_scan, insert, million, sweeps, upsert, upsert_analysis


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _declared() -> dict[str, set[str]]:
    """Every identifier the workloads can write into a plotted or shown column, from the code's declarations."""
    engines = registry.classes().values()
    return {
        "engine": set(registry.classes()) | set(csv_scan.all_readers()) | {csv_scan.FLOOR},
        "variant": {v for e in engines for v in (*capabilities.of(e, "commit_variants").VARIANTS, *capabilities.of(e, "group_commit").VARIANTS)},
        "model": {m for e in engines for m in capabilities.of(e, "table_models").MODELS},
        "setting": {s for e in engines for s in capabilities.of(e, "load_settings").SETTINGS},
        "operation": set(upsert.OPERATIONS) | {o for e in engines for o in capabilities.of(e, "upsert").OPERATIONS}
        | set(upsert_analysis.PUBLISHED_OPERATIONS),
        "scenario": set(insert.SCENARIOS),
        "method": set(million.METHODS),
        "query": set(csv_scan.QUERIES),
        "factor": set(sweeps.FACTORS),
        "statistic": set(upsert_analysis.STATISTICS),
        "part": {p for r in _subclasses(anatomy.Recorder) for p in r.ORDER}
        | {anatomy.UNEXPLAINED, anatomy.CLIENT_TOTAL},
        "memory_limit": set(upsert.MEMORY_LIMITS),
    }


@pytest.mark.parametrize("kind", sorted(_declared()))
def test_every_declared_identifier_has_a_label(kind):
    # an engine's name is its folder's (STYLE.title), its own identifiers' words its STYLE.words;
    # every other identifier is in LABELS
    missing = sorted(i for i in _declared()[kind] - set(labels.LABELS) - set(_engine_words())
                     if labels.engine_title(i) is None)
    assert not missing, f"add {kind} identifiers to ingestlab.labels.LABELS or their engine's STYLE.words: {missing}"


def _engine_words() -> dict[str, str]:
    return {k: v for e in registry.classes().values() for k, v in e.STYLE.words.items()}


def test_an_engine_s_own_identifiers_are_labelled_from_its_folder():
    words = _engine_words()
    assert {"myisam", "commit_delay_100", "wal_fsync"} <= set(words)  # a guard: the folders declare words
    assert all(labels.label(k) == v for k, v in words.items() if k not in labels.LABELS)
    # one identifier, one meaning: two engines never give one identifier different words
    for k in words:
        said = {e.STYLE.words[k] for e in registry.classes().values() if k in e.STYLE.words}
        assert len(said) == 1, (k, said)


def test_the_declarations_are_found():
    # a guard on the test itself: if a declaration moved, the sets above would silently shrink
    declared = _declared()
    assert {"sync_on", "flush_2", "commit_delay_100"} <= declared["variant"]
    assert {"wal_flush", "round_trip", "unexplained"} <= declared["part"]
    assert "blind_overwrite" in declared["operation"] and "single_row" in declared["scenario"]


def test_labels_are_words_not_identifiers():
    assert all("_" not in text or "synchronous_commit" in text or "commit_delay" in text
               for text in [*labels.LABELS.values(), *_engine_words().values()])


def test_relabel_names_identifiers_and_flags_and_keeps_numbers():
    frame = pd.DataFrame({"variant": ["sync_on", "custom"], "nereids_planner": [True, False], "n": [1, 2]})
    out = labels.relabel(frame)
    assert out["variant"].tolist() == ["synchronous_commit on", "custom"]
    assert out["nereids_planner"].tolist() == ["Nereids planner on", "Nereids planner off"]
    assert out["n"].tolist() == [1, 2]


def test_phrase_names_identifiers_inside_free_text_only():
    assert labels.phrase("rocksdb blind_overwrite / insert [local]") == "RocksDB blind overwrite / insert [local]"
    assert labels.phrase("see data/x_y.csv, synchronous_commit=off") == "see data/x_y.csv, synchronous_commit=off"


def test_doctests_pass():
    assert doctest.testmod(labels).failed == 0
