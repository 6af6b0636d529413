"""Dynamic-bucket Paimon tables (``bucket = -1``, Paimon's default for primary-key tables): keys
placed by each partition's hash index as Java places them, written, read, deleted from and
compacted by mergetree against a row model (hypothesis), every key in one bucket only; the
hash index files as Java's (big-endian ints, index type HASH); pypaimon writes into what
mergetree wrote and the other way round, Java Paimon reads it; one writer at a time
(`WriterConflictError`, nothing committed); Spark writes refused by name."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import java_read, needs_java_paimon, needs_pypaimon, pypaimon_read, write_paimon

import mergetree as mt
from mergetree import UnsupportedPaimonFeatureError, WriterConflictError
from mergetree.codec.buckets import paimon_hashes
from mergetree.codec.types import parse_type
from mergetree.table.files import read_data_file
from mergetree.table.paimon.commit import index_entries
from mergetree.table.paimon.dynamic_buckets import PartitionAssigner, decode_hashes, encode_hashes
from mergetree.table.paimon.metadata import PaimonTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])


def _create(path: Path, target: int = 3, **options: str) -> mt.Table:
    return mt.Table.create(path, SCHEMA, primary_key=["p", "id"], partition_by=["p"], buckets=-1,
                           options={"dynamic-bucket.target-row-num": str(target), **options})


def _rows(t: mt.Table) -> list[tuple]:
    return sorted((r["p"], r["id"], r["v"]) for r in t.read().to_pylist())


def _buckets_of_keys(t: mt.Table) -> Counter:
    """How many buckets each key's rows are in (every file of every bucket read alone)."""
    seen: dict[tuple, set[int]] = {}
    directory = t.directory
    for bucket in t.plan().buckets:
        for meta in bucket.files:
            for batch in read_data_file(directory.storage, meta, ["id"]):
                for k in batch.column(0).to_pylist():
                    seen.setdefault((bucket.partition, k), set()).add(bucket.bucket)
    return Counter(len(v) for v in seen.values())


def _hash_index(path: Path) -> dict[tuple[bytes, int], np.ndarray]:
    table = PaimonTable.open(str(path), None)
    latest = table.latest_snapshot()
    out = {}
    for e in index_entries(table, latest):
        if e["_INDEX_TYPE"] == "HASH":
            data, where = table.index_file_bytes(e, table.schema())
            assert int(e["_ROW_COUNT"]) * 4 == len(data) == int(e["_FILE_SIZE"])
            out[(e["_PARTITION"], int(e["_BUCKET"]))] = decode_hashes(data, where)
    return out


def test_keys_fill_buckets_in_turn_as_javas_assigner():
    a = PartitionAssigner.load(None, {}, target=3, max_buckets=-1)
    hashes = np.array([10, 11, 10, 12, 13, 14, 15, 16, 11], np.int32)
    assert a.assign(hashes).tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 0]
    again = PartitionAssigner.load(None, {0: np.array([1, 2], np.int32), 2: np.array([5], np.int32)}, 3, -1)
    assert again.assign(np.array([5, 7, 8, 9, 1], np.int32)).tolist() == [2, 0, 2, 2, 0]
    limited = PartitionAssigner.load(None, {0: np.array([1, 2, 3], np.int32)}, 3, max_buckets=1)
    assert limited.assign(np.array([4, 5], np.int32)).tolist() == [0, 0]  # past the limit: a random existing one
    assert encode_hashes(np.array([3, -1, 3], np.int32)) == b"\xff\xff\xff\xff\x00\x00\x00\x03"
    with pytest.raises(mt.CorruptTableError, match="4-byte"):
        decode_hashes(b"\x00\x01\x02", "x")


def test_a_dynamic_table_writes_its_hash_index_as_java_does(tmp_path):
    path = tmp_path / "t"
    t = _create(path)
    t.write(pa.table({"id": list(range(7)), "p": ["a"] * 7, "v": ["x"] * 7}))
    document = json.loads((path / "schema" / "schema-0").read_text())
    assert document["options"]["bucket"] == "-1"
    index = _hash_index(path)
    assert sorted(b for _, b in index) == [0, 1, 2] and [len(index[k]) for k in sorted(index)] == [3, 3, 1]
    keys = pa.array(list(range(7)), pa.int64())
    expected = paimon_hashes([keys], [parse_type("BIGINT NOT NULL")])
    assert np.array_equal(np.sort(np.concatenate(list(index.values()))), np.sort(expected))
    entries = [e for e in index_entries(PaimonTable.open(str(path), None),
                                        PaimonTable.open(str(path), None).latest_snapshot())]
    assert all(e["_INDEX_TYPE"] == "HASH" for e in entries)
    t.write(pa.table({"id": [0, 6, 7, 8], "p": ["a"] * 4, "v": ["y"] * 4}))  # 0, 6 known; 7 fills bucket 2
    index = _hash_index(path)
    assert [len(index[k]) for k in sorted(index)] == [3, 3, 3] and _buckets_of_keys(t) == Counter({1: 9})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["a", "b"]),
                                           st.sampled_from(["w", "x", "y"])), min_size=1, max_size=15),
                        min_size=1, max_size=5),
       deletes=st.lists(st.integers(0, 30), max_size=4), dv=st.booleans(), target=st.integers(1, 6))
def test_writes_deletes_and_compactions_read_as_the_model(tmp_path_factory, commits, deletes, dv, target):
    path = tmp_path_factory.mktemp("dyn") / "t"
    t = _create(path, target, **({"deletion-vectors.enabled": "true"} if dv else {}))
    model: dict = {}
    for rows in commits:
        t.write(pa.Table.from_pylist([{"id": i, "p": p, "v": v} for i, p, v in rows], schema=SCHEMA))
        model.update({(p, i): v for i, p, v in rows})
    t.delete(pa.table({"id": deletes, "p": ["a"] * len(deletes)}, schema=pa.schema([("id", pa.int64()),
                                                                                    ("p", pa.string())])))
    for k in deletes:
        model.pop(("a", k), None)
    t.compact()
    assert _rows(t) == sorted((p, i, v) for (p, i), v in model.items())
    t.compact(full=True)
    assert _rows(mt.Table.open(path)) == sorted((p, i, v) for (p, i), v in model.items())
    assert set(_buckets_of_keys(t)) <= {1}  # never a key in two buckets
    index = _hash_index(path)
    assert all(len(h) <= target for h in index.values())  # no bucket past the target


def _racing(monkeypatch, first: mt.Table, rows: pa.Table) -> None:
    """The next commit of a write lets `first` write `rows` before it (after it placed its keys)."""
    from mergetree.table.paimon.store import PaimonSnapshotStore
    original = PaimonSnapshotStore._hash_changes
    raced = []

    def late(self, base, adds, written):
        if not raced:
            raced.append(True)
            first.write(rows)
        return original(self, base, adds, written)
    monkeypatch.setattr(PaimonSnapshotStore, "_hash_changes", late)


def test_one_writer_at_a_time(tmp_path, monkeypatch):
    path = tmp_path / "t"
    t = _create(path, target=1)
    t.write(pa.table({"id": [1, 2], "p": ["a", "a"], "v": ["x", "x"]}))  # 1 in bucket 0, 2 in bucket 1
    late = pa.table({"id": [8, 9], "p": ["a", "a"], "v": ["s", "s"]}, schema=SCHEMA)
    # the second writer places 8 in bucket 2 and 9 in bucket 3; the first, meanwhile, 9 in bucket 2
    _racing(monkeypatch, mt.Table.open(path), pa.table({"id": [9], "p": ["a"], "v": ["f"]}, schema=SCHEMA))
    with pytest.raises(WriterConflictError, match="one writer at a time"):
        mt.Table.open(path).write(late)
    monkeypatch.undo()
    assert _rows(mt.Table.open(path)) == [("a", 1, "x"), ("a", 2, "x"), ("a", 9, "f")]  # nothing of it
    mt.Table.open(path).write(late)  # the retry reads the index afresh
    assert _rows(mt.Table.open(path)) == [("a", 1, "x"), ("a", 2, "x"), ("a", 8, "s"), ("a", 9, "s")]
    assert _buckets_of_keys(mt.Table.open(path)) == Counter({1: 4})
    # writers whose new keys do not meet both commit (the second on the first's index)
    _racing(monkeypatch, mt.Table.open(path), pa.table({"id": [20], "p": ["a"], "v": ["f"]}, schema=SCHEMA))
    mt.Table.open(path).write(pa.table({"id": [21], "p": ["a"], "v": ["s"]}, schema=SCHEMA))
    monkeypatch.undo()
    assert _buckets_of_keys(mt.Table.open(path)) == Counter({1: 6})
    assert sum(len(h) for h in _hash_index(path).values()) == 6
    assert len(_hash_index(path)) == 5  # both gave their new key bucket 4, from one index: merged there


@needs_pypaimon
def test_pypaimon_and_mergetree_write_one_dynamic_table_in_turn(tmp_path):
    wh, work = tmp_path / "wh", tmp_path / "work"
    work.mkdir()
    t = _create(wh / "db.db" / "t", target=4)
    model = {}
    rng = np.random.default_rng(3)
    for turn in range(4):
        keys = sorted(set(rng.integers(0, 25, 8).tolist()))
        rows = pa.table({"id": keys, "p": [["a", "b"][k % 2] for k in keys], "v": [f"t{turn}"] * len(keys)},
                        schema=SCHEMA)
        if turn % 2:
            write_paimon(work, wh, "db.t", [rows], ["p", "id"])
        else:
            mt.Table.open(wh / "db.db" / "t").write(rows)
        model.update({(r["p"], r["id"]): r["v"] for r in rows.to_pylist()})
        expected = sorted((p, i, v) for (p, i), v in model.items())
        assert sorted((r["p"], r["id"], r["v"]) for r in pypaimon_read(wh, "db.t", work).to_pylist()) == expected
        t = mt.Table.open(wh / "db.db" / "t")
        assert _rows(t) == expected and set(_buckets_of_keys(t)) == {1}


@needs_java_paimon
def test_java_paimon_reads_a_dynamic_table_mergetree_wrote(tmp_path):
    wh = tmp_path / "wh"
    t = _create(wh / "db.db" / "t", target=3, **{"deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": list(range(10)), "p": ["a", "b"] * 5, "v": ["x"] * 10}))
    t.write(pa.table({"id": [0, 3, 11], "p": ["a", "b", "b"], "v": ["y"] * 3}))
    expected = _rows(t)
    got = java_read(wh, "db.t", tmp_path / "work")
    assert sorted((r["p"], r["id"], r["v"]) for r in got.to_pylist()) == expected


def test_spark_writes_and_bucket_joins_are_refused_by_name(tmp_path):
    pytest.importorskip("pyspark")  # (the wheel's test environment has no Spark)
    from mergetree.spark.jobs import _bucketing
    t = _create(tmp_path / "t")
    assert _bucketing(t) != _bucketing(t)  # never shuffle-free: keys are where each table's index put them
    from mergetree.spark.source import DYNAMIC_BUCKETS_IN_SPARK
    assert "Table.write" in DYNAMIC_BUCKETS_IN_SPARK
    with pytest.raises(UnsupportedPaimonFeatureError, match="dynamic-bucket"):
        from mergetree.spark.write import _routed_by_paimon_buckets
        _routed_by_paimon_buckets(None, PaimonTable.open(str(tmp_path / "t"), None))
    assert os.path.isdir(tmp_path / "t")


def test_a_key_placed_while_another_commit_publishes_reaches_the_index(tmp_path, monkeypatch):
    """Two writes of one process share the engine's assigner: a key one of them places while the
    other commits is in the index of its own commit, not lost with the other's."""
    from mergetree.table.paimon.store import PaimonSnapshotStore
    path = tmp_path / "t"
    _create(path, target=1)
    engine = mt.Table.open(path).at()  # the engine's table: one store across writes
    engine.write(pa.table({"id": [1], "p": ["a"], "v": ["x"]}, schema=SCHEMA))
    original = PaimonSnapshotStore._hash_changes
    later = pa.table({"id": [7], "p": ["a"], "v": ["b"]}, schema=SCHEMA)

    def placing_meanwhile(self, base, adds, written):
        out = original(self, base, adds, written)  # the first write's index files, written
        engine.directory.bucket_ids(later)  # the second write places 7 before the first publishes
        return out
    monkeypatch.setattr(PaimonSnapshotStore, "_hash_changes", placing_meanwhile)
    engine.write(pa.table({"id": [5], "p": ["a"], "v": ["a"]}, schema=SCHEMA))
    monkeypatch.undo()
    engine.write(later)
    index = np.concatenate(list(_hash_index(path).values()))
    keys = pa.array([1, 5, 7], pa.int64())
    assert set(paimon_hashes([keys], [parse_type("BIGINT NOT NULL")]).tolist()) <= set(index.tolist())
    assert _buckets_of_keys(mt.Table.open(path)) == Counter({1: 3})
