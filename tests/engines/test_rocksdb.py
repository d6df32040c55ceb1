"""RocksDB is not SQL, so it does not take the SQL contract; these tests hold it to its own."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ingestlab import datagen, engines
from ingestlab.engines.rocksdb import RocksDB
from ingestlab.engines.rocksdb.server import RocksDBStore
from ingestlab.errors import ConfigError, ConstraintError, ServerError, UnsupportedOperationError
from ingestlab.servers import reap
from tests.engines.upsert_contract import UpsertContract

BUDGET = {"block_cache_bytes": str(1 << 20), "use_direct_reads": "true", "bloom_bits_per_key": "10",
          "compression": "none"}


def _keys(ids):
    return datagen.key_bytes(np.asarray(ids, dtype=np.int64))


def _values(n, seed):
    return datagen.row_values(datagen.documents(n, np.random.default_rng(seed)))


@pytest.fixture
def eng(tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    engine = engines.get("rocksdb").start()
    yield engine
    engine.close()


def test_registered_as_a_local_engine_without_url_schemes():
    engine = engines.get("rocksdb")
    assert isinstance(engine, RocksDB) and engine.is_local and not engine.WIRE.schemes
    with pytest.raises(ConfigError, match="ENGINES"):
        engines.from_url("rocksdb://127.0.0.1/x")


def test_start_opens_a_store_in_the_lab_dir_and_close_removes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    engine = engines.get("rocksdb")
    assert engine.start() is engine.start()
    directory = engine.server.directory
    assert directory.parent == tmp_path / "lab" and directory.name.startswith(f"rocksdb-{os.getpid()}-")
    assert engine.server.pid() == os.getpid()
    assert engine.server_version().startswith("RocksDB ")
    engine.close()
    engine.close()  # idempotent
    assert not directory.exists() and engine.server.pid() is None


def test_options_survive_a_reopen_of_a_database_with_data(eng):
    eng.put(_keys([1, 2]), _values(2, 0))
    eng.apply_settings(BUDGET)
    live = eng.settings()
    assert live["use_direct_reads"] == "true" and live["filter_policy"].startswith("bloomfilter")
    assert live["compression"] == "kNoCompression" and live["lab.block_cache_bytes"] == str(1 << 20)
    assert eng.tables.count_rows("kv") == 2
    eng.apply_settings({})  # and back: the stored options do not stick either
    assert eng.settings()["use_direct_reads"] == "false"


def test_insert_refuses_an_existing_key_and_writes_nothing(eng):
    eng.insert(_keys([10, 12]), _values(2, 1))
    with pytest.raises(ConstraintError, match="exists"):
        eng.insert(_keys([14, 12]), _values(2, 2))
    assert eng.tables.count_rows("kv") == 2 and eng.db.get(_keys([14])[0]) is None


def test_upsert_reads_every_key_and_replaces_the_values(eng):
    old, new = _values(3, 3), _values(3, 4)
    eng.put(_keys([1, 2, 3]), old)
    assert eng.upsert(_keys([2, 3, 4]), new) == 2
    assert eng.tables.count_rows("kv") == 4
    assert eng.db.get(_keys([3])[0]) == new[1]


def test_blind_put_replaces_without_reading(eng):
    eng.put(_keys([5]), _values(1, 5))
    before = eng.capability("io_counters").read()["keys_read"]
    eng.put(_keys([5, 6]), _values(2, 6))
    assert eng.capability("io_counters").read()["keys_read"] == before
    assert eng.tables.count_rows("kv") == 2


def test_bulk_load_then_reads_come_from_disk_and_absent_keys_from_the_bloom_filter(eng):
    eng.apply_settings(BUDGET)
    n = 3000
    docs = datagen.documents(n, np.random.default_rng(7))
    assert eng.capability("bulk_load").load("kv", ["id", "doc"], [datagen.document_table(2 * np.arange(n), docs)]) == n
    eng.tables.settle("kv")
    assert eng.tables.count_rows("kv") == n and eng.tables.data_bytes("kv") >= n * datagen.DOC_BYTES
    eng.apply_settings(BUDGET)  # an empty block cache
    c0 = eng.capability("io_counters").read()
    found = eng.upsert(_keys([100, 2000, 4000]), datagen.row_values(docs[:3]))
    c1 = eng.capability("io_counters").read()
    assert found == 3 and c1["blocks_read"] - c0["blocks_read"] >= 3
    eng.insert(_keys([101, 2001, 4001]), datagen.row_values(docs[:3]))  # odd keys: absent, between existing ones
    c2 = eng.capability("io_counters").read()
    assert c2["bloom_filter_useful"] - c1["bloom_filter_useful"] >= 2
    assert c2["blocks_read"] - c1["blocks_read"] <= 1  # a false positive at most


@pytest.mark.parametrize("call", [
    lambda e: e.execute("SELECT 1"),
    lambda e: e.sql.quote("t"),
    lambda e: e.tables.ddl("t", [("id", "BIGINT")]),
    lambda e: e.sql.insert_sql("t", ["id"]),
    lambda e: e.sql.insert_select_sql("t", "u"),
    lambda e: e.capability("profiled_statement").anatomy("t", ["id"], [(1,)]),
])
def test_what_makes_no_sense_for_a_key_value_store_is_unsupported(eng, call):
    with pytest.raises(UnsupportedOperationError, match="rocksdb: no .*: RocksDB is a key-value store"):
        call(eng)


def test_capability_queries_say_why_a_step_is_missing():
    assert not RocksDB.has("execute") and RocksDB.has("bulk_load")
    with pytest.raises(UnsupportedOperationError, match="rocksdb: no profiled_statement: RocksDB is a key-value"):
        RocksDB.has("profiled_statement", check=True)


def test_reset_table_empties_the_keyspace(eng):
    eng.put(_keys([1, 2, 3]), _values(3, 8))
    eng.tables.reset("kv", [("id", "BIGINT"), ("doc", "TEXT")], key=("id",))
    assert eng.tables.count_rows("kv") == 0


class TestRocksDBUpsert(UpsertContract):
    engine = "rocksdb"

    @staticmethod
    def read_doc(eng, key: int) -> bytes:
        return eng.db.get(_keys([key])[0])


def test_an_unknown_setting_fails_before_the_store_closes(eng):
    eng.put(_keys([1]), _values(1, 0))
    with pytest.raises(ServerError, match="block_cache_bytes"):
        eng.apply_settings({"synchronous_commit": "off"})
    assert eng.server.db is not None


def test_reap_removes_the_store_of_a_killed_process_and_leaves_a_live_one(tmp_path):
    code = textwrap.dedent(f"""
        import os
        from ingestlab.engines.rocksdb.server import RocksDBStore
        s = RocksDBStore({str(tmp_path / 'rocksdb-999999-1')!r}).start()
        s.db.put(b"k", b"v")
        os._exit(0)  # killed: the store is not closed
    """)
    subprocess.run([sys.executable, "-c", code], check=True)
    with RocksDBStore(tmp_path / f"rocksdb-{os.getpid()}-1") as live:
        assert (tmp_path / "rocksdb-999999-1").exists()
        reap(tmp_path)
        assert not (tmp_path / "rocksdb-999999-1").exists()
        assert live.directory.exists() and live.db.get(b"x") is None
