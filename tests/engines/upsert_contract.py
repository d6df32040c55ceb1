"""What notebook 03 needs of an engine, through the engine contract only, run against a real engine.

Subclass it per engine beside its ``EngineContract``: ``class TestPostgresUpsert(UpsertContract):
engine = "postgres"``; ``skip_reason()`` as in the engine contract; ``read_doc`` says how to
read one stored document back (SQL by default).
"""

from __future__ import annotations

import numpy as np
import pytest

from ingestlab import datagen, engines
from ingestlab.engines import capabilities

TABLE = "upsert_contract"
COLUMNS = (("id", "BIGINT"), ("doc", "TEXT"))
COLS = [c for c, _ in COLUMNS]
BUDGET = 8 * 2**20
ROWS = 20_000  # ~24 MB: three times the budget


def _chunks(n: int, seed: int, chunk_rows: int = 5_000):
    for start, docs in datagen.document_chunks(n, np.random.default_rng(seed), chunk_rows=chunk_rows):
        yield datagen.document_table(2 * np.arange(start, start + len(docs)), docs)


def _write(eng, operation, keys, seed):
    docs = datagen.documents(len(keys), np.random.default_rng(seed))
    eng.capability("upsert").prepare_write(operation, TABLE, COLS, "id", datagen.document_table(np.asarray(keys), docs))()
    return docs


class UpsertContract:
    engine: str = ""

    @classmethod
    def skip_reason(cls) -> str | None:
        """Why this engine cannot run here (None: it can)."""
        return None

    @classmethod
    def target(cls) -> str:
        """What the contract runs against: the engine's name (its local server) or a URL."""
        return cls.engine

    @staticmethod
    def read_doc(eng, key: int) -> bytes:
        """The stored document of ``key``."""
        got = eng.execute(f"SELECT {eng.sql.quote('doc')} FROM {eng.sql.quote(TABLE)} WHERE {eng.sql.quote('id')} = %s", [key])
        return got[0][0].encode()

    @pytest.fixture(scope="class")
    @classmethod
    def eng(cls):
        reason = cls.skip_reason()
        if reason:
            pytest.skip(reason)
        engine = engines.resolve(cls.target()).start()
        engine.apply_settings(engine.capability("memory_budget").settings(BUDGET) if engine.has("memory_budget") else {})
        engine.tables.reset(TABLE, COLUMNS, key=("id",))
        assert engine.capability("bulk_load").load(TABLE, COLS, _chunks(ROWS, seed=1), replace=True) == ROWS
        engine.tables.settle(TABLE)
        yield engine
        engine.close()

    def test_the_bulk_path_loads_every_row_as_key_and_document(self, eng):
        assert eng.tables.count_rows(TABLE) == ROWS
        docs = np.concatenate([d for _, d in datagen.document_chunks(ROWS, np.random.default_rng(1), chunk_rows=5_000)])
        assert self.read_doc(eng, 2 * 7777) == docs[7777].tobytes()
        assert eng.tables.data_bytes(TABLE) >= ROWS * datagen.DOC_BYTES

    def test_the_memory_budget_is_in_force(self, eng):
        if not eng.has("memory_budget"):
            pytest.skip(f"{eng.NAME}: memory is the server's own (no memory budget settings)")
        budget = eng.capability("memory_budget")
        live = {k.lower().removeprefix("lab."): str(v) for k, v in eng.settings().items()}
        for name in budget.settings(BUDGET):
            assert name in live, name
        assert budget.LIMITS["engine"] and set(eng.capability("upsert").OPERATIONS) >= {"insert", "overwrite"}

    def test_every_memory_limit_is_settings_the_engine_takes(self, eng):
        budget = capabilities.of(eng, "memory_budget")(eng)
        for limit in budget.LIMITS:
            settings = budget.settings(BUDGET, limit)
            eng.apply_settings(settings)
            assert eng.tables.count_rows(TABLE) == ROWS
            live = {k.lower().removeprefix("lab."): str(v) for k, v in eng.settings().items()}
            assert set(settings) <= set(live), limit
        cgroup = budget.settings(BUDGET, "cgroup") if "cgroup" in budget.LIMITS else {}
        assert "O_DIRECT" not in cgroup.values() and "debug_io_direct" not in cgroup  # buffered I/O
        eng.apply_settings(budget.settings(BUDGET))

    def test_overwrite_replaces_existing_rows_and_inserts_new_ones(self, eng):
        docs = _write(eng, "overwrite", [2 * 10, 2 * 11, 2 * ROWS + 1], seed=9)  # two existing, one new
        assert eng.tables.count_rows(TABLE) == ROWS + 1
        assert self.read_doc(eng, 22) == docs[1].tobytes()

    def test_overwrites_of_random_keys_read_blocks_from_disk(self, eng):
        if not eng.is_local:
            pytest.skip(f"{eng.NAME} by URL: the lab cannot empty the server's caches")
        eng.apply_settings(eng.capability("memory_budget").settings(BUDGET))  # an empty cache
        keys = 2 * np.random.default_rng(5).choice(ROWS, 200, replace=False)
        before = eng.capability("io_counters").read()
        _write(eng, "overwrite", keys, seed=6)
        after = eng.capability("io_counters").read()
        assert after["blocks_read"] - before["blocks_read"] >= 100  # most rows' pages were not cached
        before = eng.capability("io_counters").read()
        _write(eng, "insert", 2 * ROWS + 2 * np.arange(1, 201), seed=7)
        assert eng.capability("io_counters").read()["blocks_read"] - before["blocks_read"] <= 20  # appending reads (almost) nothing

    def test_every_operation_the_engine_declares_writes_its_keys(self, eng):
        keys = {"insert": [2 * ROWS + 11, 2 * ROWS + 13], "blind_overwrite": [2 * 20, 2 * 21]}
        before = eng.tables.count_rows(TABLE)
        for operation in ("insert", "blind_overwrite"):
            if operation in eng.capability("upsert").OPERATIONS:
                docs = _write(eng, operation, keys[operation], seed=11)
                assert self.read_doc(eng, keys[operation][1]) == docs[1].tobytes()
        assert eng.tables.count_rows(TABLE) == before + 2
        counters = eng.capability("io_counters").read()
        assert "blocks_read" in counters
