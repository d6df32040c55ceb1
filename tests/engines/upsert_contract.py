"""What notebook 03 needs of a SQL engine, run against a real server of that engine.

Subclass it per engine beside its ``EngineContract``: ``class TestPostgresUpsert(UpsertContract):
engine = "postgres"``; ``skip_reason()`` as in the engine contract.
"""

from __future__ import annotations

import numpy as np
import pytest

from ingestlab import datagen
from ingestlab.engines import Engine

TABLE = "upsert_contract"
COLUMNS = (("id", "BIGINT"), ("doc", "TEXT"))
COLS = [c for c, _ in COLUMNS]
BUDGET = 8 * 2**20
ROWS = 20_000  # ~24 MB: three times the budget


def _chunks(n: int, seed: int, chunk_rows: int = 5_000):
    for start, docs in datagen.document_chunks(n, np.random.default_rng(seed), chunk_rows=chunk_rows):
        yield datagen.tsv_lines(2 * np.arange(start, start + len(docs)), docs)


def _params(keys, docs):
    return [v for k, d in zip(keys, datagen.row_values(docs)) for v in (int(k), d.decode())]


class UpsertContract:
    engine: str = ""

    @classmethod
    def skip_reason(cls) -> str | None:
        """Why this engine cannot run here (None: it can)."""
        return None

    @pytest.fixture(scope="class")
    @classmethod
    def eng(cls):
        reason = cls.skip_reason()
        if reason:
            pytest.skip(reason)
        engine = Engine.get(cls.engine).start()
        engine.apply_settings(engine.memory_budget_settings(BUDGET))
        engine.execute(engine.drop_table_sql(TABLE))
        engine.execute(engine.create_table_sql(TABLE, COLUMNS, primary_key=("id",)))
        sent = engine.bulk_load_tsv(TABLE, COLS, _chunks(ROWS, seed=1))
        assert sent == ROWS * (datagen.KEY_DIGITS + 2 + datagen.DOC_BYTES)
        engine.settle(TABLE)
        yield engine
        engine.close()

    def test_the_bulk_path_loads_every_line_as_key_and_document(self, eng):
        assert eng.count_rows(TABLE) == ROWS
        line = b"".join(_chunks(ROWS, seed=1)).split(b"\n")[7777]
        got = eng.execute(f"SELECT {eng.quote('doc')} FROM {eng.quote(TABLE)} WHERE {eng.quote('id')} = %s", [2 * 7777])
        assert line == b"%012d\t" % (2 * 7777) + got[0][0].encode()
        assert eng.table_bytes(TABLE) >= ROWS * datagen.DOC_BYTES

    def test_the_memory_budget_is_in_force(self, eng):
        live = {k.lower(): str(v) for k, v in eng.settings().items()}
        for name, value in eng.memory_budget_settings(BUDGET).items():
            assert name in live, name
        assert eng.MEMORY_LIMITS["engine"] and set(eng.UPSERT_OPERATIONS) >= {"insert", "overwrite"}

    def test_every_memory_limit_is_settings_the_server_takes(self, eng):
        for limit in eng.MEMORY_LIMITS:
            settings = eng.memory_budget_settings(BUDGET, limit)
            eng.apply_settings(settings)
            assert eng.count_rows(TABLE) == ROWS
            live = {k.lower(): str(v) for k, v in eng.settings().items()}
            assert set(settings) <= set(live), limit
        cgroup = eng.memory_budget_settings(BUDGET, "cgroup") if "cgroup" in eng.MEMORY_LIMITS else {}
        assert "O_DIRECT" not in cgroup.values() and "debug_io_direct" not in cgroup  # buffered I/O
        eng.apply_settings(eng.memory_budget_settings(BUDGET))

    def test_upsert_replaces_existing_rows_and_inserts_new_ones(self, eng):
        docs = datagen.documents(3, np.random.default_rng(9))
        keys = [2 * 10, 2 * 11, 2 * ROWS + 1]  # two existing, one new
        eng.execute(eng.upsert_sql(TABLE, COLS, "id", 3), _params(keys, docs))
        assert eng.count_rows(TABLE) == ROWS + 1
        got = eng.execute(f"SELECT {eng.quote('doc')} FROM {eng.quote(TABLE)} WHERE {eng.quote('id')} = %s", [22])
        assert got[0][0].encode() == docs[1].tobytes()

    def test_overwrites_of_random_keys_read_blocks_from_disk(self, eng):
        eng.apply_settings(eng.memory_budget_settings(BUDGET))  # an empty cache
        keys = 2 * np.random.default_rng(5).choice(ROWS, 200, replace=False)
        before = eng.io_counters()
        eng.execute(eng.upsert_sql(TABLE, COLS, "id", len(keys)), _params(keys, datagen.documents(200, np.random.default_rng(6))))
        after = eng.io_counters()
        assert after["blocks_read"] - before["blocks_read"] >= 100  # most rows' pages were not cached
        new = 2 * ROWS + 2 * np.arange(1, 201)
        before = eng.io_counters()
        eng.execute(eng.insert_sql(TABLE, COLS, len(new)), _params(new, datagen.documents(200, np.random.default_rng(7))))
        assert eng.io_counters()["blocks_read"] - before["blocks_read"] <= 20  # appending reads (almost) nothing
