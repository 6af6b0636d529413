"""Writes into Paimon tables on the engine's write path (issue 36): the input streamed batch by
batch through the write buffer, every row placed by Paimon's bucket function, a lost commit
race renumbered by rewriting the loser's level-0 files after the winner's (Paimon's files carry
their sequence numbers; its manifests have no shift), overwrites, and the same `overwrite` on
mergetree's own tables.  Checked against a model, and by pypaimon reading what was written."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from paimon_fixtures import needs_pypaimon, pypaimon_read, write_paimon

import mergetree.paimon as mp
from mergetree import InvalidArgumentError, SchemaMismatchError, Table
from mergetree.codec.buckets import buckets_of
from mergetree.codec.types import parse_field
from mergetree.merge import RowKind
from mergetree.table.commit import next_sequences
from mergetree.table.paimon.create import create_table
from mergetree.table.paimon.metadata import PaimonTable
from mergetree.table.paimon.store import paimon_directory
from mergetree.table.write import commit_write, conformed, spill

SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def _table(tmp_path, **options: str) -> tuple[str, str]:
    wh = str(tmp_path / "wh")
    create_table(wh, "db.t", SCHEMA, primary_key=["p", "id"], partition_by=["p"], buckets=3,
                 options={"write-only": "true", **options})
    return wh, "db.t"


def _rows(ids, p: str = "a", v: str = "x") -> pa.Table:
    ids = list(ids)
    return pa.table({"p": [p] * len(ids), "id": ids, "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def _state(wh: str, name: str) -> dict:
    return {(r["p"], r["id"]): r["v"] for r in mp.read(wh, name).to_pylist()}


def _sequences(path: str) -> tuple[int, int]:
    seq = pq.read_table(path, columns=["_SEQUENCE_NUMBER"]).column(0)
    return seq.to_numpy().min(), seq.to_numpy().max()


def test_a_stream_is_written_batch_by_batch_and_every_row_is_in_its_paimon_bucket(tmp_path) -> None:
    wh, name = _table(tmp_path, **{"write-buffer-size": "64 kb"})
    batches = [_rows(range(i * 1000, (i + 1) * 1000), p="ab"[i % 2]).to_batches()[0] for i in range(12)]
    result = mp.write(wh, name, pa.RecordBatchReader.from_batches(SCHEMA, iter(batches)))
    assert result.rows == 12_000 and result.compacted is None  # write-only
    directory = paimon_directory(PaimonTable.open(wh, name))
    files = directory.live_files(directory.latest_snapshot())
    assert len(files) > 6  # several write buffers spilled
    types = [parse_field({"id": 0, "name": "id", "type": "BIGINT"}).type]
    for relative, e in files.items():
        ids = pq.read_table(tmp_path / "wh" / "db.db" / "t" / relative, columns=["id"]).column(0).combine_chunks()
        assert set(buckets_of([ids], types, 3).tolist()) == {e.bucket}
    assert _state(wh, name) == {(r["p"], r["id"]): r["v"] for b in batches for r in b.to_pylist()}


@needs_pypaimon
def test_a_write_that_loses_the_race_rewrites_its_files_after_the_winners(tmp_path) -> None:
    """Writer B numbers its rows on snapshot 1; writer A commits first into the same buckets.
    B's commit rebases: its level-0 files are copied with sequence numbers past A's (the
    originals removed), so B's versions — committed last — win, for mergetree and pypaimon."""
    wh, name = _table(tmp_path)
    mp.write(wh, name, _rows(range(100), v="base"))
    t = PaimonTable.open(wh, name)
    directory = paimon_directory(t)
    base = directory.latest_snapshot()
    next_seq = next_sequences(directory.live_files(base).values())
    spilled = [e for files in spill(directory, conformed(directory, _rows(range(50, 150), v="B"), True),
                                    RowKind.INSERT, next_seq) for e in files]
    originals = {e.file.file_name for e in spilled}
    mp.write(wh, name, _rows(range(0, 120), v="A"))  # A wins the race into the same buckets
    before = directory.live_files(directory.latest_snapshot())
    snapshot = commit_write(directory, spilled, base)
    live = directory.live_files(snapshot)
    copies = [e for n, e in live.items() if n not in before]
    assert len(copies) == len(spilled) and not originals & set(live)
    root = tmp_path / "wh" / "db.db" / "t"
    assert not [n for n in originals if (root / n).exists()]  # the originals are gone
    for e in copies:  # the manifest's range is what the file holds, above A's in its bucket
        assert e.file.level == 0
        assert _sequences(str(root / e.file.file_name)) == (e.file.min_seq, e.file.max_seq)
        assert e.file.min_seq > max(o.file.max_seq for o in before.values() if o.bucket == e.bucket)
    expected = {("a", i): "base" + str(i) for i in range(100)}
    expected.update({("a", i): f"A{i}" for i in range(120)})
    expected.update({("a", i): f"B{i}" for i in range(50, 150)})
    assert _state(wh, name) == expected
    theirs = pypaimon_read(tmp_path / "wh", name, tmp_path)
    assert {(r["p"], r["id"]): r["v"] for r in theirs.to_pylist()} == expected


@needs_pypaimon
def test_overwrite_of_a_paimon_table_replaces_partitions_as_javas_batch_overwrite(tmp_path) -> None:
    wh, name = _table(tmp_path)
    mp.write(wh, name, pa.concat_tables([_rows(range(10), "a"), _rows(range(10), "b")]))
    mp.write(wh, name, _rows(range(3), "a", v="new"), overwrite=True)  # dynamic: partition a only
    expected = {("a", i): f"new{i}" for i in range(3)} | {("b", i): f"x{i}" for i in range(10)}
    assert _state(wh, name) == expected
    with pytest.raises(InvalidArgumentError, match="holds rows of partition"):
        mp.write(wh, name, _rows(range(3), "b"), overwrite={"p": "a"})
    assert _state(wh, name) == expected
    t = PaimonTable.open(wh, name)
    assert t.snapshot(t.latest_snapshot_id())["commitKind"] == "OVERWRITE"
    theirs = pypaimon_read(tmp_path / "wh", name, tmp_path)
    assert {(r["p"], r["id"]): r["v"] for r in theirs.to_pylist()} == expected


def test_overwrite_on_mergetrees_own_tables(tmp_path) -> None:
    t = Table.create(tmp_path / "t", SCHEMA, primary_key=["p", "id"], partition_by=["p"], buckets=2)
    t.write(pa.concat_tables([_rows(range(10), "a"), _rows(range(10), "b")]))
    snap = t.write(_rows([1, 2], "b", v="new"), overwrite=True)
    assert snap.commit_kind == "OVERWRITE"
    state = {(r["p"], r["id"]): r["v"] for r in t.read().to_pylist()}
    assert state == {("a", i): f"x{i}" for i in range(10)} | {("b", 1): "new1", ("b", 2): "new2"}
    t.write(_rows([7], "a", v="only"), overwrite={"p": "a"})
    assert {(r["p"], r["id"]) for r in t.read().to_pylist()} == {("a", 7), ("b", 1), ("b", 2)}
    with pytest.raises(InvalidArgumentError, match="not partition columns"):
        t.write(_rows([1], "a"), overwrite={"id": 1})
    with pytest.raises(InvalidArgumentError, match="holds rows of partition"):
        t.write(_rows([1], "b"), overwrite={"p": "a"})
    before = t.latest_snapshot().id
    assert t.write(_rows([], "a"), overwrite=True) is None  # nothing held, nothing replaced
    assert t.latest_snapshot().id == before
    whole = Table.create(tmp_path / "u", SCHEMA, primary_key=["id"])
    whole.write(_rows(range(5)))
    start = whole.latest_snapshot().id
    whole.write(_rows([9]), overwrite=True)  # unpartitioned: the whole table
    assert whole.read().column("id").to_pylist() == [9]
    assert sorted(whole.changes(start=start).read_all().to_pylist(), key=lambda r: (r["_row_kind"], r["id"])) == \
        sorted([{"p": "a", "id": i, "v": f"x{i}", "_row_kind": "-D"} for i in range(5)]
               + [{"p": "a", "id": 9, "v": "x9", "_row_kind": "+I"}], key=lambda r: (r["_row_kind"], r["id"]))


def test_not_null_value_columns_are_checked_before_anything_is_written(tmp_path) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string(), nullable=False)])
    t = Table.create(tmp_path / "t", schema, primary_key=["id"])
    with pytest.raises(SchemaMismatchError, match="'v' .*NOT NULL.*row 1"):
        t.write(pa.table({"id": [1, 2], "v": ["a", None]}))
    assert t.latest_snapshot() is None
    t.write(pa.table({"id": [1], "v": ["a"]}))
    t.delete(pa.table({"id": [1]}))  # a delete carries only the key
    assert t.read().num_rows == 0


@needs_pypaimon
def test_ignore_delete_drops_retractions_in_writes_and_compaction_as_paimon_reads_them(tmp_path) -> None:
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())])

    def rows(ids, v: str, op: str) -> pa.Table:
        return pa.table({"id": list(ids), "v": [v] * len(ids), "op": [op] * len(ids)}, schema=schema)
    options = {"bucket": "2", "ignore-delete": "true", "rowkind.field": "op", "write-only": "true"}
    write_paimon(work, wh, name, [rows(range(10), "a", "+I"), pa.concat_tables([rows(range(5), "b", "-D"),
                                                                                  rows([5, 6], "c", "+U")])],
                 ["id"], [], options)
    theirs = pypaimon_read(wh, name, work)
    assert {r["id"]: r["v"] for r in mp.read(str(wh), name).to_pylist()} == \
        {r["id"]: r["v"] for r in theirs.to_pylist()} == {**{i: "a" for i in range(10)}, 5: "c", 6: "c"}
    result = mp.write(str(wh), name, pa.concat_tables([rows(range(5, 10), "d", "-D"), rows([20], "e", "+I")]))
    assert result.rows == 1  # the retractions were dropped
    assert mp.compact(str(wh), name, full=True) is not None  # the engine's compaction skips them too
    expected = {**{i: "a" for i in range(10)}, 5: "c", 6: "c", 20: "e"}
    assert {r["id"]: r["v"] for r in mp.read(str(wh), name).to_pylist()} == expected
    assert {r["id"]: r["v"] for r in pypaimon_read(wh, name, work).to_pylist()} == expected
    directory = paimon_directory(PaimonTable.open(str(wh), name))
    files = directory.live_files(directory.latest_snapshot()).values()
    assert {e.file.level for e in files} == {5} and sum(e.file.row_count for e in files) == len(expected)


@needs_pypaimon
def test_first_row_compaction_keeps_the_oldest_version_and_no_key_in_two_levels(tmp_path) -> None:
    """Java's lookup compaction of a first-row table, on the engine: level 0 goes up after every
    write, a key a level above already holds keeps that version (the new one is dropped), so
    pypaimon — which reads such a table's levels without merging them — sees each key once."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    write_paimon(work, wh, name, [pa.table({"id": list(range(0, 40)), "v": ["old"] * 40}, schema=schema)], ["id"],
                 [], {"bucket": "2", "merge-engine": "first-row"})
    assert mp.compact(str(wh), name, full=True) is not None
    first = {i: "old" for i in range(40)}
    for step in range(4):  # each write overlaps the keys above and adds new ones
        ids = list(range(step * 15, step * 15 + 30))
        result = mp.write(str(wh), name, pa.table({"id": ids, "v": [f"w{step}"] * len(ids)}, schema=schema))
        assert result.visible and result.compacted is not None
        for i in ids:
            first.setdefault(i, f"w{step}")
        directory = paimon_directory(PaimonTable.open(str(wh), name))
        held: dict[tuple, int] = {}
        levels = set()
        for e in directory.live_files(directory.latest_snapshot()).values():
            assert e.file.level > 0
            levels.add(e.file.level)
            for i in pq.read_table(wh / "db.db" / "t" / e.file.file_name, columns=["id"]).column(0).to_pylist():
                assert (e.bucket, i) not in held, f"key {i} in levels {held[(e.bucket, i)]} and {e.file.level}"
                held[(e.bucket, i)] = e.file.level
        assert {r["id"]: r["v"] for r in mp.read(str(wh), name).to_pylist()} == first
        if step in (0, 3):
            theirs = pypaimon_read(wh, name, work).to_pylist()
            assert len(theirs) == len(first) and {r["id"]: r["v"] for r in theirs} == first
        if step == 1:  # only the new keys went to a level of their own; the rest were held above
            assert len(levels) > 1 and sum(e.file.row_count for e in directory.live_files(
                directory.latest_snapshot()).values() if e.file.level < 5) == 5


def test_deletes_and_row_kinds_on_the_engine_path_as_the_previous_writer_took_them(tmp_path) -> None:
    """Found by review: a delete needs the partition columns too (a Paimon file's key leaves them
    out); a delete's kind column is ignored (every row is a -D); `row_kind_column` may name the
    table's own `rowkind.field` column."""
    wh, name = _table(tmp_path)
    mp.write(wh, name, _rows(range(3)))
    with pytest.raises(SchemaMismatchError, match=r"lacks column\(s\) \['p'\] of Paimon table db.t$"):
        mp.delete(wh, name, {"id": [1]})  # messages name a Paimon table as its catalog does
    with pytest.raises(SchemaMismatchError, match="'p' .*NOT NULL"):
        mp.delete(wh, name, pa.table({"p": pa.array([None], pa.string()), "id": [1]}))
    mp.delete(wh, name, pa.table({"p": ["a"], "id": [1], "v": ["zz"], "_row_kind": ["+I"]}))
    assert _state(wh, name) == {("a", 0): "x0", ("a", 2): "x2"}
    kinds = pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())])
    create_table(wh, "db.k", kinds, primary_key=["id"], buckets=2, options={"rowkind.field": "op"})
    mp.write(wh, "db.k", pa.table({"id": [1, 2], "v": ["a", "b"], "op": ["+I", "+I"]}, schema=kinds))
    mp.write(wh, "db.k", pa.table({"id": [1], "v": ["a"], "op": ["-D"]}, schema=kinds), row_kind_column="op")
    assert mp.read(wh, "db.k").to_pylist() == [{"id": 2, "v": "b", "op": "+I"}]


def test_a_lost_race_on_a_paimon_append_table_moves_its_files_sequence_numbers(tmp_path) -> None:
    """A Paimon append file's sequence numbers are its manifest entry's (Java orders a bucket's
    files by them): the loser's entry moves past the winner's, the file is not rewritten."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    wh = str(tmp_path / "wh")
    create_table(wh, "db.t", schema, buckets=1, options={"bucket-key": "id"})
    mp.write(wh, "db.t", pa.table({"id": [1, 2], "v": ["base"] * 2}, schema=schema))
    directory = paimon_directory(PaimonTable.open(wh, "db.t"))
    base = directory.latest_snapshot()
    spilled = [e for files in spill(directory, conformed(directory, pa.table({"id": [3, 4], "v": ["B"] * 2},
                                                                             schema=schema), True),
                                    RowKind.INSERT, next_sequences(directory.live_files(base).values()))
               for e in files]
    mp.write(wh, "db.t", pa.table({"id": [5, 6], "v": ["A"] * 2}, schema=schema))
    live = directory.live_files(commit_write(directory, spilled, base))
    ranges = sorted((e.file.min_seq, e.file.max_seq) for e in live.values())
    assert ranges == [(0, 1), (2, 3), (4, 5)]
    assert {e.file.file_name for e in spilled} <= set(live)  # the same files, their entries moved
    assert sorted(mp.read(wh, "db.t").column("id").to_pylist()) == [1, 2, 3, 4, 5, 6]


@needs_pypaimon
def test_lookup_compactions_over_other_writers_files_as_review_found_them(tmp_path) -> None:
    """Found by review of the engine's deletion-vector and first-row compaction: pypaimon's files
    declare key columns nullable, the engine's NOT NULL (their key tables are joined all the
    same); a first-row level-0 file going below the top level is rewritten with its keys looked
    up above, never moved up unchanged."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])

    def rows(ids, v: str) -> pa.Table:
        ids = list(ids)
        return pa.table({"id": ids, "v": [v] * len(ids)}, schema=schema)
    for name, options in (("db.dv", {"bucket": "1", "deletion-vectors.enabled": "true"}),
                          ("db.fr", {"bucket": "1", "merge-engine": "first-row"})):
        wh, work = tmp_path / "wh", tmp_path / f"work-{name}"
        write_paimon(work, wh, name, [rows(range(5000), "a")], ["id"], [], options)
        mp.compact(str(wh), name, full=True)
        write_paimon(work, wh, name, [rows([1, 2, 10_001], "b")], ["id"], [], options)  # pypaimon's level 0
        mp.write(str(wh), name, rows(range(10_000, 11_000), "b"))
        mp.write(str(wh), name, rows([5, 10_005, 20_000], "c"))
        mp.compact(str(wh), name)
        if name == "db.dv":  # deduplicate: the newest version wins
            expected = {**{i: "a" for i in range(5000)}, 1: "b", 2: "b", **{i: "b" for i in range(10_000, 11_000)},
                        5: "c", 10_005: "c", 20_000: "c"}
        else:  # first-row: the oldest
            expected = {**{i: "a" for i in range(5000)}, 10_001: "b", **{i: "b" for i in range(10_000, 11_000)},
                        20_000: "c"}
        ours = mp.read(str(wh), name).to_pylist()
        theirs = pypaimon_read(wh, name, work).to_pylist()
        assert len(ours) == len(theirs) == len(expected)
        assert {r["id"]: r["v"] for r in ours} == {r["id"]: r["v"] for r in theirs} == expected


@needs_pypaimon
def test_a_deletion_vector_compaction_reads_the_old_rows_of_an_older_schemas_file(tmp_path) -> None:
    """Found by review: a file of an older schema is read whole (its row groups are not
    addressed), so the positions of the rows an aggregation folds in are the file's own."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    options = {"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
               "deletion-vectors.enabled": "true"}
    create_table(str(wh), name, schema, primary_key=["id"], buckets=1, options=options)
    keys = 140_000  # two row groups of Paimon's 131,072 rows
    mp.write(str(wh), name, pa.table({"id": pa.array(range(keys), pa.int64()), "v": pa.array([1] * keys, pa.int64())}))
    mp.compact(str(wh), name, full=True)
    update = pa.table({"id": pa.array([135_000], pa.int64()), "v": pa.array([10], pa.int64()),
                       "w": pa.array([7], pa.int64())})
    write_paimon(work, wh, name, [update], ["id"], [], options, alter=[["add_column", "w", "BIGINT"]])
    assert mp.compact(str(wh), name) is not None
    got = mp.read(str(wh), name, filter=("id", "in", [0, 135_000]))
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [{"id": 0, "v": 1, "w": None},
                                                               {"id": 135_000, "v": 11, "w": 7}]
    assert mp.read(str(wh), name, columns=["id"]).num_rows == keys


@needs_pypaimon
def test_a_compaction_marking_rows_of_a_file_another_commit_replaced_conflicts(tmp_path) -> None:
    """Found by review: a file whose deletion vector alone a compaction changes must still be live
    when it commits (its data-manifest entry is not rewritten, so the check is explicit)."""
    from mergetree import CompactionConflictError
    from mergetree.table.compaction.dv import compact_dv
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    options = {"bucket": "1", "deletion-vectors.enabled": "true"}

    def rows(ids, v: str) -> pa.Table:
        ids = list(ids)
        return pa.table({"id": ids, "v": [v] * len(ids)}, schema=schema)
    write_paimon(work, wh, name, [rows(range(100), "base")], ["id"], [], options)
    mp.compact(str(wh), name, full=True)
    write_paimon(work, wh, name, [rows(range(200, 211), "L")], ["id"], [], options)
    mp.compact(str(wh), name)  # a resolved file at a lower level
    directory = paimon_directory(PaimonTable.open(str(wh), name))
    before = directory.latest_snapshot()
    write_paimon(work, wh, name, [rows([205], "new")], ["id"], [], options)
    directory = paimon_directory(PaimonTable.open(str(wh), name))
    after = directory.latest_snapshot()
    assert compact_dv(directory, None, True, base=before) is not None  # replaces the file key 205 is in
    with pytest.raises(CompactionConflictError):
        compact_dv(directory, None, False, base=after)  # would mark key 205's row in that file
    assert mp.compact(str(wh), name) is not None
    expected = {**{i: "base" for i in range(100)}, **{i: "L" for i in range(200, 211)}, 205: "new"}
    for got in (mp.read(str(wh), name), pypaimon_read(wh, name, work)):
        assert got.num_rows == len(expected) and {r["id"]: r["v"] for r in got.to_pylist()} == expected


@needs_pypaimon
def test_a_full_deletion_vector_compaction_moves_clean_files_and_rewrites_the_rest(tmp_path) -> None:
    """As Java moves a clean file to the top level: a file alone in its key range without
    deleted rows or retractions is resolved where it is (its name kept), the others rewritten."""
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())])
    options = {"bucket": "2", "deletion-vectors.enabled": "true", "rowkind.field": "op"}
    base = pa.table({"id": list(range(100)), "v": ["a"] * 100, "op": ["+I"] * 100}, schema=schema)
    write_paimon(work, wh, name, [base], ["id"], [], options)
    directory = paimon_directory(PaimonTable.open(str(wh), name))
    before = set(directory.live_files(directory.latest_snapshot()))
    assert mp.compact(str(wh), name, full=True) is not None
    directory = paimon_directory(PaimonTable.open(str(wh), name))
    after = directory.live_files(directory.latest_snapshot())
    assert set(after) == before and {e.file.level for e in after.values()} == {5}  # moved, not rewritten
    assert mp.compact(str(wh), name, full=True) is None  # nothing left to do
    deletes = pa.table({"id": [3, 50], "v": [None, None], "op": ["-D", "-D"]}, schema=schema)
    write_paimon(work, wh, name, [deletes], ["id"], [], options)  # a level-0 file of retractions
    assert mp.compact(str(wh), name, full=True) is not None
    directory = paimon_directory(PaimonTable.open(str(wh), name))
    final = directory.live_files(directory.latest_snapshot())
    assert {e.file.level for e in final.values()} == {5} and not any(e.file.deleted_rows for e in final.values())
    expected = {i: "a" for i in range(100) if i not in (3, 50)}
    for got in (mp.read(str(wh), name), pypaimon_read(wh, name, work)):
        assert {r["id"]: r["v"] for r in got.to_pylist()} == expected and got.num_rows == 98


@pytest.mark.parametrize("paimon", [True, False], ids=["paimon", "mergetree"])
def test_a_nan_partition_is_one_partition(tmp_path, paimon: bool) -> None:
    """Found by review: NaN != NaN, so partitions holding NaN were told apart by object: every
    write numbered its rows from 0 again and a read returned a key once per file."""
    schema = pa.schema([("p", pa.float64()), ("id", pa.int64()), ("v", pa.string())])
    if paimon:
        wh = str(tmp_path / "wh")
        create_table(wh, "db.t", schema, primary_key=["p", "id"], partition_by=["p"], buckets=1,
                     options={"write-only": "true"})
        table = Table.open(tmp_path / "wh" / "db.db" / "t")
    else:
        table = Table.create(tmp_path / "t", schema, primary_key=["p", "id"], partition_by=["p"],
                             options={"write-only": "true"})
    for v in ("first", "second"):
        table.write(pa.table({"p": [float("nan"), 1.0], "id": [1, 1], "v": [v, v]}, schema=schema))
    got = sorted(table.read().to_pylist(), key=lambda r: r["p"] == 1.0)
    assert [(r["id"], r["v"]) for r in got] == [(1, "second"), (1, "second")]
    files = (paimon_directory(PaimonTable.open(str(tmp_path / "wh"), "db.t")) if paimon else table.directory)
    ranges = sorted((e.file.min_seq, e.file.max_seq) for e in files.live_files(files.latest_snapshot()).values()
                    if e.partition[0] != 1.0)
    assert ranges == [(0, 0), (1, 1)]


@needs_pypaimon
@pytest.mark.parametrize("options", [
    {"file.format": "orc"},
    {"data-file.thin-mode": "true"},
    {"file-index.bloom-filter.columns": "v", "file-index.bloom-filter.v.items": "100",
     "file-index.bitmap.columns": "v", "file-index.in-manifest-threshold": "64kb"},  # embedded in the manifest
    {"file-index.bloom-filter.columns": "v", "file-index.in-manifest-threshold": "1b"},  # a `.index` file
    {"data-file.path-directory": "data"},
    {"data-file.external-paths.strategy": "entropy-inject"},
    {"file.format": "orc", "data-file.thin-mode": "true", "data-file.path-directory": "data",
     "deletion-vectors.enabled": "true"},
], ids=["orc", "thin", "embedded-index", "index-file", "path-directory", "external", "orc-thin-dir-dv"])
def test_every_file_layout_on_the_engine_in_one_process(tmp_path, options) -> None:
    """Writes, deletes and compactions, one after the other in one process and through one
    handle, of tables whose files the previous Paimon-only writer made (ORC, thin mode, file
    indexes, external paths, a data-file directory): each new file is where its manifest entry
    says, in the table's layout, and mergetree and pypaimon read the model after every step."""
    from mergetree.paimon.handle import PaimonTableHandle
    options = dict(options)
    if "data-file.external-paths.strategy" in options:
        options["data-file.external-paths"] = f"file://{tmp_path / 'ext1'},file://{tmp_path / 'ext2'}"
    wh, name = _table(tmp_path, **options, **{"num-sorted-run.compaction-trigger": "2"})
    engine = PaimonTableHandle(wh, None, name).at()
    model: dict = {}
    for step in range(5):
        rows = _rows(range(step * 7, step * 7 + 40), p="ab"[step % 2], v=f"s{step}")
        engine.write(rows)
        model.update({(r["p"], r["id"]): r["v"] for r in rows.to_pylist()})
        if step % 2:
            gone = _rows(range(step * 7, step * 7 + 5), p="ab"[step % 2])
            engine.delete(gone.select(["p", "id"]))
            for r in gone.to_pylist():
                model.pop((r["p"], r["id"]), None)
        engine.compact(full=step == 4)
        got = {(r["p"], r["id"]): r["v"] for r in engine.read().to_pylist()}
        assert got == model
    t = PaimonTable.open(wh, name)
    files = t.live_files(t.resolve(None))
    assert any(f.level > 0 for f in files)
    for f in files:
        assert os.path.exists(f.path), f.path
        suffix = ".orc" if options.get("file.format") == "orc" else ".parquet"
        assert f.file_name.endswith(suffix)
        record = f.record["_FILE"]
        if "data-file.path-directory" in options:
            assert f.name is not None and f.name.startswith("data/")
        if "data-file.external-paths" in options:
            assert record["_EXTERNAL_PATH"] and not f.path.startswith(wh)
        if options.get("file-index.in-manifest-threshold") == "1b":
            assert record["_EXTRA_FILES"] == [f.file_name + ".index"]
            assert os.path.exists(f.path + ".index")
        elif "file-index.bloom-filter.columns" in options:
            assert record["_EMBEDDED_FILE_INDEX"]
        if options.get("data-file.thin-mode") == "true" and suffix == ".parquet":
            assert not [c for c in pq.read_schema(f.path).names if c.startswith("_KEY_")]
    # a point lookup searches the compacted Parquet files through their page index (a thin
    # file's key copies are its key columns), and finds the model's row
    key = next(iter(sorted(model)))
    found = engine.read(filter=[("p", "=", key[0]), ("id", "=", key[1])])
    assert found.to_pylist() == [{"p": key[0], "id": key[1], "v": model[key]}]
    if options.get("file.format") != "orc":
        assert engine.last_read.point_files >= 1
    (tmp_path / "work").mkdir()
    expected = {(r["p"], r["id"]): r["v"] for r in pypaimon_read(tmp_path / "wh", name, tmp_path / "work").to_pylist()}
    assert expected == model == _state(wh, name)
