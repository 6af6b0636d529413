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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule
from test_table_crash import kill_repeatedly, table_state
from test_table_model import TableMachine

from mergetree import Table
from mergetree.errors import CompactionConflictError, CorruptTableError, InvalidArgumentError
from mergetree.table.housekeeping import referenced_files
from mergetree.table.read.plan import sections_of

DV = {"deletion-vectors.enabled": "true"}
SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])


class DeletionVectorMachine(TableMachine):
    """The table model's machine with deletion vectors on from the start, switched off and on
    again on the live table, and Top-N reads: every read must equal the model."""

    @initialize(engine=st.sampled_from(["deduplicate", "partial-update", "first-row", "aggregate"]),
                buckets=st.sampled_from([1, 1, 3]), partitioned=st.booleans(),
                trigger=st.integers(2, 5), write_only=st.booleans(),
                file_size=st.sampled_from(["2 kb", "1 mb"]))
    def create(self, engine, buckets, partitioned, trigger, write_only, file_size, deletion_vectors=True):
        super().create(engine, buckets, partitioned, trigger, write_only, file_size, True, "mergetree", False)
        self.dv = True

    ACTIONS = TableMachine.ACTIONS + ["compact", "top_n", "toggle", "cluster"]

    def toggle(self, data):
        self.dv = not self.dv
        # clustering on other columns needs deletion vectors: switching them off drops the layout
        self.table.set_options({"deletion-vectors.enabled": "true" if self.dv else "false",
                                **({} if self.dv else {"clustering.columns": None, "clustering.strategy": None})})

    def cluster(self, data):
        """Lay resolved files out along a value column (each file still sorted by key)."""
        if self.dv:
            self.remember(self.table.optimize(order=data.draw(st.sampled_from(["a", "b"]), label="order")))

    def top_n(self, data):
        limit = data.draw(st.integers(0, 6), label="limit")
        direction = data.draw(st.sampled_from(["asc", "desc"]), label="direction")
        got = self.table.read(order_by=[("a", direction), ("id", "asc")], limit=limit)
        rows = [self.shape(r) for r in self.model.values()]
        valued = sorted((r for r in rows if r["a"] is not None), key=lambda r: (r["a"] if direction == "asc"
                                                                                else -r["a"], r["id"]))
        nulls = sorted((r for r in rows if r["a"] is None), key=lambda r: r["id"])
        want = (valued + nulls)[:limit]
        assert [(r["id"], r["a"]) for r in got.to_pylist()] == [(r["id"], r["a"]) for r in want]

    @precondition(lambda self: hasattr(self, "table"))
    @rule()
    def resolved_files_never_repeat_a_key(self):
        """The invariant reads rely on: no two live rows of one key among resolved files."""
        for bucket in self.table.plan().buckets:
            seen: set = set()
            for m in bucket.files:
                if not m.resolved:
                    continue
                keys = self.table.directory.schema.file_key
                from mergetree.table.files import read_key_positions
                rows = read_key_positions(self.table.directory.storage, m, keys)
                for k in zip(*(rows.column(c).to_pylist() for c in keys)) if rows is not None else ():
                    assert k not in seen, (k, m.file_name)
                    seen.add(k)


DeletionVectorMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=30, deadline=None,
                                                   suppress_health_check=[HealthCheck.too_slow])
# mergetree's own deletion vectors (level 0 merged on read); Paimon's are in test_table_model
DeletionVectorMachine.TestCase.pytestmark = [pytest.mark.private_format]
test_deletion_vector_model = DeletionVectorMachine.TestCase


def _table(path, engine="deduplicate", **options):
    return Table.create(str(path), SCHEMA, primary_key="id", merge_engine=engine,
                        options={**DV, "write-only": "true", **options})


@pytest.mark.private_format
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


@pytest.mark.private_format
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
        for f in (None, ("a", ">", 3), ("b", "=", "q")):
            assert with_dv.read(filter=f).sort_by("id") == plain.read(filter=f).sort_by("id")
    assert any(m.deleted_rows for m in with_dv.plan().files)


@pytest.mark.private_format
def test_option_checks(tmp_path):
    with pytest.raises(InvalidArgumentError, match="needs a primary-key table"):
        Table.create(str(tmp_path / "a"), SCHEMA, options=DV)
    with pytest.raises(InvalidArgumentError, match="floating point"):
        Table.create(str(tmp_path / "f"), pa.schema([("k", pa.float64()), ("v", pa.int64())]), primary_key="k",
                     options=DV)
    with pytest.raises(InvalidArgumentError, match="'true' or 'false'"):
        Table.create(str(tmp_path / "b"), SCHEMA, primary_key="id", options={"deletion-vectors.enabled": "yes"})
    append = Table.create(str(tmp_path / "c"), SCHEMA)
    with pytest.raises(InvalidArgumentError, match="needs a primary-key table"):
        append.set_options(DV)
    assert not os.path.exists(tmp_path / "a") or not os.listdir(tmp_path / "a")


@pytest.mark.private_format
def test_switched_on_for_a_table_with_history(tmp_path):
    """Files written before the option are unresolved: merged on read until a compaction
    folds them; switching it off again leaves a table every read still sees whole."""
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id", merge_engine="partial-update",
                     options={"write-only": "true"})
    t.write(pa.table({"id": [1, 2, 3], "a": [1, 2, 3], "b": ["x", "y", "z"]}, schema=SCHEMA))
    t.compact(full=True)
    t.write(pa.table({"id": [2], "a": [None], "b": ["new"]}, schema=SCHEMA))
    want = [{"id": 1, "a": 1, "b": "x"}, {"id": 2, "a": 2, "b": "new"}, {"id": 3, "a": 3, "b": "z"}]
    t.set_options(DV)
    assert t.read().sort_by("id").to_pylist() == want
    t.compact()
    assert all(m.resolved for m in t.plan().files)
    t.write(pa.table({"id": [3], "a": [30], "b": [None]}, schema=SCHEMA))
    t.compact()
    want[2] = {"id": 3, "a": 30, "b": "z"}
    assert t.read().sort_by("id").to_pylist() == want
    t.set_options({"deletion-vectors.enabled": "false"})
    t.write(pa.table({"id": [1], "a": [None], "b": ["one"]}, schema=SCHEMA))
    t.compact()
    want[0] = {"id": 1, "a": 1, "b": "one"}
    assert Table.open(t.path).read().sort_by("id").to_pylist() == want


@pytest.mark.private_format
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


@pytest.mark.private_format
def test_housekeeping_keeps_live_index_files_and_removes_old_ones(tmp_path):
    t = _table(tmp_path / "t")
    t.write(pa.table({"id": range(100), "a": range(100), "b": ["x"] * 100}, schema=SCHEMA))
    t.compact()
    for i in range(3):
        t.write(pa.table({"id": [i], "a": [-i], "b": ["y"]}, schema=SCHEMA))
        t.compact()
    indexes = {p for p in table_files(t.path) if p.endswith(".dv")}
    assert len(indexes) == 3
    before = t.read().sort_by("id")
    assert t.remove_orphan_files(older_than=dt.timedelta(0)) == []
    t.expire_snapshots(retain_last=1, older_than=0)
    left = {p for p in table_files(t.path) if p.endswith(".dv")}
    assert len(left) == 1 and left < indexes
    assert left <= set(referenced_files(t.directory, t.directory.store.snapshot_ids()))
    assert Table.open(t.path).read().sort_by("id") == before


@pytest.mark.private_format
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


@pytest.mark.private_format
def test_sigkill_mid_compaction_loses_nothing(tmp_path):
    path = str(tmp_path / "t")
    Table.create(path, pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())]),
                 primary_key="id", buckets=2, options={**DV, "num-sorted-run.compaction-trigger": "2",
                                                       "target-file-size": "16 kb"})
    assert kill_repeatedly(path, 8, 4321) >= 5
    table = Table.open(path)
    # the children really marked replaced rows (a full compaction every tenth operation clears them)
    assert any(e.file.deleted_rows for s in table.snapshots() for e in table.directory.live_files(s).values())
    before = table_state(table)
    table.remove_orphan_files(older_than=dt.timedelta(0))
    assert table_state(Table.open(path)) == before
    referenced = set(referenced_files(table.directory, table.directory.store.snapshot_ids()))
    leftovers = {p for p in table_files(path) - referenced
                 if not p.startswith(("snapshot/snapshot-", "schema/")) and p != "snapshot/LATEST"}
    assert not leftovers, leftovers


@pytest.mark.private_format
def test_indexes_built_on_resolved_files_stay_exact(tmp_path):
    """A bitmap sidecar indexes the file as it is (positions of deleted rows included); a file
    rewritten for its Bloom filter drops its deleted rows and stays resolved."""
    t = _table(tmp_path / "t")
    t.write(pa.table({"id": range(3000), "a": [i % 7 for i in range(3000)], "b": ["x"] * 3000}, schema=SCHEMA))
    t.compact()
    t.write(pa.table({"id": [3, 10, 2999], "a": [100, 100, 100], "b": ["y", "y", "y"]}, schema=SCHEMA))
    t.compact()
    want = t.read(filter=("a", "=", 3)).sort_by("id")
    t.set_options({"file-index.bitmap.columns": "a"})
    t.build_indexes()
    assert any("bitmap" in m.indexes and m.deleted_rows for m in t.plan().files)
    assert t.read(filter=("a", "=", 3)).sort_by("id") == want
    assert t.read(filter=("a", "=", 100)).num_rows == 3
    t.set_options({"file-index.bloom-filter.columns": "b"})
    t.build_indexes()
    files = t.plan().files
    assert all(m.resolved and not m.deleted_rows for m in files)
    assert t.read(filter=("a", "=", 3)).sort_by("id") == want
    assert t.read(filter=("b", "=", "y")).num_rows == 3


@pytest.mark.private_format
def test_clustering_on_a_non_key_column_advised_and_laid_out(tmp_path):
    """Paimon's pk-clustering-override: with deletion vectors the advisor may cluster a primary-
    key table on another column, `optimize` lays the resolved files out along it (each file still
    sorted by key), value ranges then skip most files, and reads stay those of the table
    without deletion vectors through later writes and compactions."""
    import test_advisor as adv

    t = adv.write(tmp_path / "t", DV, primary_key="id")
    plain = adv.write(tmp_path / "plain", primary_key="id")
    with pytest.raises(InvalidArgumentError, match="deletion-vectors.enabled"):
        plain.set_options({"clustering.columns": "a"})
    t.compact()
    advice = adv.advise(t, [adv.q(adv.a_range()) for _ in range(200)])
    assert adv.lever(advice, "distribution") is not None, advice.refused
    assert advice.options.get("clustering.columns") == "a"
    t.set_options(advice.options)
    ranges = [adv.a_range() for _ in range(10)]
    # before: files sorted by key only, every one spans the whole range of a
    assert sum(len(t.plan(r).files) for r in ranges) == len(ranges) * len(t.plan().files)
    t.optimize()
    files = t.plan().files
    assert all(m.resolved and m.level == 0 for m in files) and len(files) > 10
    assert sum(len(t.plan(r).files) for r in ranges) < 0.1 * len(ranges) * len(files)
    for r in ranges + [None, ("category", "=", "cat-03")]:
        assert t.read(filter=r).sort_by("id") == plain.read(filter=r).sort_by("id")
    update = adv.rows(2).slice(0, 3000)
    update = update.set_column(0, "id", pa.array(np.arange(0, 6000, 2, dtype=np.int64)))
    for table in (t, plain):
        table.write(update)
    for step in ("written", "compacted"):
        for r in ranges[:3] + [None]:
            assert t.read(filter=r).sort_by("id") == plain.read(filter=r).sort_by("id"), step
        t.compact()
        plain.compact()
    assert t.read(order_by=[("a", "desc")], limit=5) == plain.read(order_by=[("a", "desc")], limit=5)


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


@pytest.mark.private_format
def test_a_key_lookup_reads_only_the_row_groups_that_may_hold_the_keys(tmp_path):
    from mergetree.table.files import key_row_groups
    t = _table(tmp_path / "t", engine="partial-update")
    n = 40_000  # five 8,192-row row groups
    t.write(pa.table({"id": range(n), "a": range(n), "b": ["x"] * n}, schema=SCHEMA))
    t.compact()
    (resolved,) = t.plan().files
    storage = t.directory.storage
    assert key_row_groups(storage, resolved, "_KEY_id", np.array([39_990])) == [4]
    assert key_row_groups(storage, resolved, "_KEY_id", np.array([10, 8_192, 50_000])) == [0, 1]
    assert key_row_groups(storage, resolved, "_KEY_id", np.array([50_000])) == []
    t.write(pa.table({"id": [8_191, 8_192, 39_990, 50_000], "a": [None, -1, None, 7], "b": ["y", None, "z", "w"]},
                     schema=SCHEMA))
    t.compact()
    assert sum(m.deleted_rows for m in t.plan().files) == 3
    got = {r["id"]: r for r in t.read(filter=("id", "in", [8_191, 8_192, 39_990, 50_000])).to_pylist()}
    assert got == {8_191: {"id": 8_191, "a": 8_191, "b": "y"}, 8_192: {"id": 8_192, "a": -1, "b": "x"},
                   39_990: {"id": 39_990, "a": 39_990, "b": "z"}, 50_000: {"id": 50_000, "a": 7, "b": "w"}}
    assert t.read().num_rows == n + 1
