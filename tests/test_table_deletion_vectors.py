"""Deletion vectors for mergetree's own primary-key tables (`deletion-vectors.enabled`): reads
identical to the same table without them (a model, every engine, the option switched on and off
on a live table), resolved files read alone with value skipping, crash safety, housekeeping of
index files, damaged index files, and the option's checks."""
from __future__ import annotations

import datetime as dt
import itertools
import os
import random

import numpy as np
import pyarrow as pa
import pytest
from disk import table_files
from hypothesis import given, settings
from hypothesis import strategies as st
from test_table_crash import kill_repeatedly, table_state

from mergetree import Table
from mergetree.errors import (
    CompactionConflictError,
    CorruptTableError,
    InvalidArgumentError,
    UnsupportedPaimonFeatureError,
)
from mergetree.table.files import PAIMON_ROW_GROUP_ROWS
from mergetree.table.housekeeping import referenced_files
from mergetree.table.read.plan import sections_of

# merge-on-read: a batch read merges level 0 with the resolved files (without it, Paimon's reads
# leave level 0 out until a compaction), so reads equal those of the same table without vectors
DV = {"deletion-vectors.enabled": "true", "deletion-vectors.merge-on-read": "true"}
SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])


def _table(path, engine="deduplicate", **options):
    return Table.create(str(path), SCHEMA, primary_key="id", merge_engine=engine,
                        options={**DV, "write-only": "true", **options})


def test_compacted_files_are_read_alone_and_value_filters_skip_them(tmp_path):
    t = _table(tmp_path / "t", **{"target-file-size": "4 kb"})
    t.write(pa.table({"id": range(2000), "a": range(2000), "b": ["x"] * 2000}, schema=SCHEMA))
    t.compact()
    t.write(pa.table({"id": [10, 1500], "a": [-1, 5000], "b": ["y", "z"]}, schema=SCHEMA))
    # before compaction the new file is merged with the files it overlaps
    assert any(len(s) > 1 for b in t.plan().buckets for s in b.sections)
    t.compact()
    plan = t.plan()
    assert all(len(s) == 1 and len(s[0]) == 1 for b in plan.buckets for s in b.sections)
    assert sum(m.deleted_rows for m in plan.files) == 2
    # a value predicate skips resolved files by their statistics (they hold each key's last version)
    narrow = t.plan(filter=("a", ">=", 4000))
    assert narrow.steps["min/max"].files > 0
    assert t.read(filter=("a", ">=", 4000)).to_pylist() == [{"id": 1500, "a": 5000, "b": "z"}]
    assert t.read(filter=("a", "=", 10)).num_rows == 0  # the replaced version is gone
    assert t.read(order_by=[("a", "desc")], limit=1).to_pylist() == [{"id": 1500, "a": 5000, "b": "z"}]
    assert t.read().num_rows == 2000


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregate", "first-row"])
def test_every_engine_reads_the_same_with_and_without(tmp_path, engine):
    extra = {"fields.a.aggregate-function": "sum"} if engine == "aggregate" else {}
    with_dv = _table(tmp_path / "dv", engine, **extra)
    plain = Table.create(str(tmp_path / "plain"), SCHEMA, primary_key="id", merge_engine=engine,
                         options={"write-only": "true", **extra})
    rng = random.Random(7)
    for step in range(12):
        ids = rng.sample(range(300), 60)
        batch = pa.table({"id": ids, "a": [rng.choice([None, rng.randint(-9, 9)]) for _ in ids],
                          "b": [rng.choice([None, "p", "q"]) for _ in ids]}, schema=SCHEMA)
        for t in (with_dv, plain):
            t.write(batch)
            if step % 3 == 2:
                t.compact(full=step == 8)
        if engine == "first-row":  # Paimon's first-row reads leave level 0 out: the reference compacts it
            plain.compact()
        for f in (None, ("a", ">", 3), ("b", "=", "q")):
            assert with_dv.read(filter=f).sort_by("id") == plain.read(filter=f).sort_by("id")
    assert any(m.deleted_rows for m in with_dv.plan().files)


def test_option_checks(tmp_path):
    with pytest.raises(InvalidArgumentError, match="needs a primary-key table"):
        Table.create(str(tmp_path / "a"), SCHEMA, options=DV)
    with pytest.raises(InvalidArgumentError, match="floating point"):
        Table.create(str(tmp_path / "f"), pa.schema([("k", pa.float64()), ("v", pa.int64())]), primary_key="k",
                     options=DV)
    with pytest.raises(InvalidArgumentError, match="'true' or 'false'"):
        Table.create(str(tmp_path / "b"), SCHEMA, primary_key="id", options={"deletion-vectors.enabled": "yes"})
    append = Table.create(str(tmp_path / "c"), SCHEMA)
    with pytest.raises(UnsupportedPaimonFeatureError, match="deletion vectors of append tables"):
        append.set_options(DV)
    assert not os.path.exists(tmp_path / "a") or not os.listdir(tmp_path / "a")


def test_switched_on_for_a_table_with_history(tmp_path):
    """Files written before the option are unresolved: merged on read until a compaction folds
    them.  (Paimon asks 'deletion-vectors.modifiable' to change the option on a table with data.)"""
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id", merge_engine="partial-update",
                     options={"write-only": "true"})
    t.write(pa.table({"id": [1, 2, 3], "a": [1, 2, 3], "b": ["x", "y", "z"]}, schema=SCHEMA))
    t.compact(full=True)
    t.write(pa.table({"id": [2], "a": [None], "b": ["new"]}, schema=SCHEMA))
    want = [{"id": 1, "a": 1, "b": "x"}, {"id": 2, "a": 2, "b": "new"}, {"id": 3, "a": 3, "b": "z"}]
    with pytest.raises(UnsupportedPaimonFeatureError, match="deletion-vectors.modifiable"):
        t.set_options(DV)
    t.set_options({"deletion-vectors.modifiable": "true"})
    t.set_options(DV)
    assert t.read().sort_by("id").to_pylist() == want
    t.compact()
    assert all(m.resolved for m in t.plan().files)
    t.write(pa.table({"id": [3], "a": [30], "b": [None]}, schema=SCHEMA))
    t.compact()
    want[2] = {"id": 3, "a": 30, "b": "z"}
    assert t.read().sort_by("id").to_pylist() == want
    assert Table.open(t.path).read().sort_by("id").to_pylist() == want


def test_sections_of_reads_a_resolved_file_alone_only_when_nothing_unresolved_meets_it(tmp_path):
    t = _table(tmp_path / "t")
    t.write(pa.table({"id": range(0, 100), "a": range(100), "b": ["x"] * 100}, schema=SCHEMA))
    t.compact()
    t.write(pa.table({"id": range(200, 300), "a": range(100), "b": ["x"] * 100}, schema=SCHEMA))
    t.compact()
    t.write(pa.table({"id": [250], "a": [0], "b": ["y"]}, schema=SCHEMA))
    files = t.plan().files
    sections = sections_of(files)
    alone = [s[0][0] for s in sections if len(s) == 1 and len(s[0]) == 1]
    assert [m.min_key for m in alone] == [(0,)]  # the other resolved file meets the new write
    assert sorted(m.min_key for s in sections for r in s for m in r) == sorted(m.min_key for m in files)


def test_damaged_or_missing_index_file_is_a_corrupt_table_error_naming_it(tmp_path):
    t = _table(tmp_path / "t")
    t.write(pa.table({"id": range(100), "a": range(100), "b": ["x"] * 100}, schema=SCHEMA))
    t.compact()
    t.write(pa.table({"id": [5], "a": [0], "b": ["y"]}, schema=SCHEMA))
    t.compact()
    index = next(m.deletion_vector.index for m in t.plan().files if m.deleted_rows)
    full = os.path.join(t.path, index)
    data = bytearray(open(full, "rb").read())
    data[-1] ^= 0xFF
    open(full, "wb").write(bytes(data))
    with pytest.raises(CorruptTableError, match="checksum") as info:
        Table.open(t.path).read()
    assert index in str(info.value)
    os.remove(full)
    with pytest.raises(CorruptTableError, match="missing") as info:
        Table.open(t.path).read()
    assert index in str(info.value)


def test_housekeeping_keeps_live_index_files_and_removes_old_ones(tmp_path):
    t = _table(tmp_path / "t")
    t.write(pa.table({"id": range(100), "a": range(100), "b": ["x"] * 100}, schema=SCHEMA))
    t.compact()
    for i in range(3):
        t.write(pa.table({"id": [i], "a": [-i], "b": ["y"]}, schema=SCHEMA))
        t.compact()
    indexes = {p for p in table_files(t.path) if p.startswith("index/index-")}  # Paimon's vector files
    assert len(indexes) == 3
    before = t.read().sort_by("id")
    assert t.remove_orphan_files(older_than=dt.timedelta(0)) == []
    t.expire_snapshots(retain_last=1, older_than=0)
    left = {p for p in table_files(t.path) if p.startswith("index/index-")}
    assert len(left) == 1 and left < indexes
    assert left <= set(referenced_files(t.directory, t.directory.store.snapshot_ids()))
    assert Table.open(t.path).read().sort_by("id") == before


def test_a_concurrent_compaction_that_changed_a_vector_conflicts(tmp_path):
    t = _table(tmp_path / "t")
    t.write(pa.table({"id": range(100), "a": range(100), "b": ["x"] * 100}, schema=SCHEMA))
    t.compact()
    t.write(pa.table({"id": [5], "a": [0], "b": ["y"]}, schema=SCHEMA))
    from mergetree.table.compaction.transaction import commit_rewrite
    base = t.latest_snapshot()
    live = t.directory.live_files(base)
    resolved = next(e for e in live.values() if e.file.resolved)
    stale = resolved  # what a slower compaction read
    t.compact()  # gives the resolved file a deletion vector
    with pytest.raises(CompactionConflictError):
        commit_rewrite(t.directory, base.id, [], [stale])
    assert t.read().num_rows == 100


def test_sigkill_mid_compaction_loses_nothing(tmp_path):
    path = str(tmp_path / "t")
    Table.create(path, pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())]),
                 primary_key="id", buckets=2, options={**DV, "num-sorted-run.compaction-trigger": "2",
                                                       "target-file-size": "16 kb"})
    assert kill_repeatedly(path, 8, 4321) >= 5
    table = Table.open(path)
    # the orphan check below needs marked rows in the history; the kills' moments depend on the
    # machine's speed (on a slow machine the children may commit nothing), so where they marked
    # none, rows of our own, fully compacted and then partly updated, are marked here
    if not any(e.file.deleted_rows for s in table.snapshots() for e in table.directory.live_files(s).values()):
        ids = list(range(10**6, 10**6 + 200))
        table.write(pa.table({"id": ids, "v": ids, "s": ["x"] * 200}))
        table.compact(full=True)
        table.write(pa.table({"id": ids[::50], "v": [0] * 4, "s": ["y"] * 4}))
        table.compact()
    assert any(e.file.deleted_rows for s in table.snapshots() for e in table.directory.live_files(s).values())
    before = table_state(table)
    table.remove_orphan_files(older_than=dt.timedelta(0))
    assert table_state(Table.open(path)) == before
    referenced = set(referenced_files(table.directory, table.directory.store.snapshot_ids()))
    leftovers = {p for p in table_files(path) - referenced
                 if not p.startswith(("snapshot/snapshot-", "schema/")) and p != "snapshot/LATEST"}
    assert not leftovers, leftovers


def test_indexes_built_on_resolved_files_stay_exact(tmp_path):
    """A file rewritten for its file index (Paimon's bitmap, its Bloom filter) drops its deleted
    rows and stays resolved; reads through the new indexes stay exact."""
    t = _table(tmp_path / "t")
    t.write(pa.table({"id": range(3000), "a": [i % 7 for i in range(3000)], "b": ["x"] * 3000}, schema=SCHEMA))
    t.compact()
    t.write(pa.table({"id": [3, 10, 2999], "a": [100, 100, 100], "b": ["y", "y", "y"]}, schema=SCHEMA))
    t.compact()
    want = t.read(filter=("a", "=", 3)).sort_by("id")
    t.set_options({"file-index.bitmap.columns": "a"})
    assert any(m.deleted_rows for m in t.plan().files)
    before = {m.file_name for m in t.plan().files}
    t.build_indexes()
    files = t.plan().files
    assert all(m.resolved and not m.deleted_rows for m in files) and not before & {m.file_name for m in files}
    assert t.read(filter=("a", "=", 3)).sort_by("id") == want
    assert t.read(filter=("a", "=", 100)).num_rows == 3
    t.set_options({"file-index.bloom-filter.columns": "b"})
    t.build_indexes()
    files = t.plan().files
    assert all(m.resolved and not m.deleted_rows for m in files)
    assert t.read(filter=("a", "=", 3)).sort_by("id") == want
    assert t.read(filter=("b", "=", "y")).num_rows == 3


@given(st.data())
@settings(max_examples=200, deadline=None)
def test_drop_deleted_keeps_exactly_the_rows_not_deleted(data):
    """Any row groups (some skipped), any batch cuts, any deleted positions."""
    from mergetree.table.dvfiles import drop_deleted
    sizes = data.draw(st.lists(st.integers(0, 12), min_size=1, max_size=6), label="row groups")
    firsts = [sum(sizes[:i]) for i in range(len(sizes))]
    chosen = [g for g in range(len(sizes)) if data.draw(st.booleans(), label=f"read group {g}")]
    total = sum(sizes)
    deleted = np.array(sorted(data.draw(st.sets(st.integers(0, max(total - 1, 0)), max_size=total), label="deleted")),
                       dtype=np.int64) if total else np.empty(0, np.int64)
    stream = [p for g in chosen for p in range(firsts[g], firsts[g] + sizes[g])]
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=5), label="cuts") | {0, len(stream)})
    batches = [pa.record_batch({"pos": pa.array(stream[a:b], pa.int64())}) for a, b in itertools.pairwise(cuts)]
    out = drop_deleted(iter(batches), deleted, [(firsts[g], sizes[g]) for g in chosen])
    got = [p for b in out for p in b.column(0).to_pylist()]
    assert got == [p for p in stream if p not in set(deleted.tolist())]


def test_a_deletion_vector_table_on_s3_answers_as_a_local_one(s3_server, tmp_path, monkeypatch):
    """The object-store path: index files fetched through the store, data files read by ranges
    with their vectors applied, cleanup of index files by listing."""
    import uuid

    import test_table_s3 as s3

    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")  # no background flush after the server stops

    def apply(t):
        out = []
        t.write(s3._rows(0, 3000, "a"))
        t.compact()
        t.write(s3._rows(1500, 300, "b"))
        t.delete({"id": list(range(100, 120))})
        t.compact()
        out += [t.read().sort_by("id"), t.read(filter=("v", "=", "b3")).sort_by("id"),
                t.read(filter=[("n", ">=", 15000), ("n", "<", 15500)]).sort_by("id"),
                t.read(order_by=[("n", "desc")], limit=3), sum(m.deleted_rows for m in t.plan().files)]
        t.expire_snapshots()
        out += [len(t.remove_orphan_files(0)), t.read().sort_by("id")]
        return out
    options = {**s3.OPTIONS, **DV, "write-only": "true"}
    local = Table.create(tmp_path / "t", s3.SCHEMA, primary_key=["id"], buckets=2, options=options)
    remote = Table.create(f"s3://lake/dv-{uuid.uuid4().hex[:12]}", s3.SCHEMA, primary_key=["id"], buckets=2,
                          options=options, storage_options=s3_server.options())
    expected = apply(local)
    assert expected[4] > 0
    assert apply(remote) == expected


def test_a_key_lookup_reads_only_the_row_groups_that_may_hold_the_keys(tmp_path):
    from mergetree.table.files import key_row_groups
    t = _table(tmp_path / "t", engine="partial-update")
    g = PAIMON_ROW_GROUP_ROWS
    n = 4 * g + 7_000  # five row groups of Paimon's 32,768 rows
    t.write(pa.table({"id": range(n), "a": range(n), "b": ["x"] * n}, schema=SCHEMA))
    t.compact()
    (resolved,) = t.plan().files
    storage = t.directory.storage
    assert key_row_groups(storage, resolved, "_KEY_id", np.array([n - 10])) == [4]
    assert key_row_groups(storage, resolved, "_KEY_id", np.array([10, g, n + 10_000])) == [0, 1]
    assert key_row_groups(storage, resolved, "_KEY_id", np.array([n + 10_000])) == []
    t.write(pa.table({"id": [g - 1, g, n - 10, n + 10_000], "a": [None, -1, None, 7], "b": ["y", None, "z", "w"]},
                     schema=SCHEMA))
    t.compact()
    assert sum(m.deleted_rows for m in t.plan().files) == 3
    got = {r["id"]: r for r in t.read(filter=("id", "in", [g - 1, g, n - 10, n + 10_000])).to_pylist()}
    assert got == {g - 1: {"id": g - 1, "a": g - 1, "b": "y"}, g: {"id": g, "a": -1, "b": "x"},
                   n - 10: {"id": n - 10, "a": n - 10, "b": "z"}, n + 10_000: {"id": n + 10_000, "a": 7, "b": "w"}}
    assert t.read().num_rows == n + 1
