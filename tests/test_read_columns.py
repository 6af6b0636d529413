"""Reads decode only the columns a merge needs: the kind column only where a file holds a
retraction, the sequence column only where the files' sequence ranges cannot order a key's
versions (`ordered_by_file`, whose rules are checked here exactly); and the answers stay the
model's."""
from __future__ import annotations

import pyarrow as pa
import pytest

from mergetree import Table, UnsupportedPaimonFeatureError
from mergetree.table.files import DataFileMeta
from mergetree.table.read import ordered_by_file


def meta(name: str, low: int, high: int) -> DataFileMeta:
    return DataFileMeta(name, 0, 1, 1, (0,), (9,), low, high)


def test_disjoint_runs_are_ordered_by_file():
    runs = [[meta("bucket-0/a", 0, 9)], [meta("bucket-0/b", 20, 29)], [meta("bucket-0/c", 10, 19)]]
    assert ordered_by_file(runs)


def test_overlapping_runs_of_one_bucket_need_the_sequence_column():
    runs = [[meta("bucket-0/a", 0, 10)], [meta("bucket-0/b", 10, 20)]]  # 10 in both
    assert not ordered_by_file(runs)
    runs = [[meta("bucket-0/a", 0, 30)], [meta("bucket-0/b", 10, 20)]]  # one inside the other
    assert not ordered_by_file(runs)


def test_buckets_never_share_keys_so_their_ranges_may_overlap():
    runs = [[meta("bucket-0/a", 0, 10)], [meta("bucket-8/a", 5, 15)],
            [meta("bucket-0/b", 11, 20)], [meta("bucket-8/b", 16, 30)]]
    assert ordered_by_file(runs)
    runs = [[meta("p=1/bucket-0/a", 0, 10)], [meta("p=2/bucket-0/a", 0, 10)]]
    assert ordered_by_file(runs)


def test_a_run_spans_all_of_its_files():
    # a compacted run of two key-disjoint files whose ranges overlap each other: only the
    # run's whole range counts against the other runs
    runs = [[meta("bucket-0/a", 0, 50), meta("bucket-0/b", 20, 60)], [meta("bucket-0/c", 61, 70)]]
    assert ordered_by_file(runs)
    runs = [[meta("bucket-0/a", 0, 50), meta("bucket-0/b", 20, 65)], [meta("bucket-0/c", 61, 70)]]
    assert not ordered_by_file(runs)


def test_one_run_is_always_ordered():
    assert ordered_by_file([[meta("bucket-0/a", 5, 5), meta("bucket-0/b", 0, 9)]])
    assert ordered_by_file([])


def test_reads_without_retractions_and_with_them(tmp_path):
    """Write-only commits (a run each): first plain upserts (no kind column is read), then a
    commit with deletes (it is), in every engine that has versions to order and merges level-0
    runs on read (a first-row table's batch reads leave level 0 out, as Paimon's do)."""
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
    for engine in ("deduplicate", "partial-update", "aggregate"):
        options = {"write-only": "true", **({"fields.a.aggregate-function": "sum"} if engine == "aggregate" else {})}
        t = Table.create(str(tmp_path / engine), schema, primary_key="id", buckets=2, merge_engine=engine,
                         options=options)
        model: dict[int, dict] = {}
        for c in range(4):
            ids = list(range(c, 30, 2))
            rows = [{"id": i, "a": c + i, "b": None if (i + c) % 3 == 0 else f"v{c}-{i}"} for i in ids]
            t.write(pa.Table.from_pylist(rows, schema))
            for r in rows:
                old = model.get(r["id"])
                if old is None or engine == "deduplicate":
                    model[r["id"]] = dict(r)
                elif engine == "partial-update":
                    model[r["id"]] = {k: old[k] if r[k] is None else r[k] for k in r}
                elif engine == "aggregate":
                    model[r["id"]] = {"id": r["id"], "a": old["a"] + r["a"], "b": r["b"] if r["b"] is not None
                                      else old["b"]}
        assert t.read().sort_by("id").to_pylist() == [model[k] for k in sorted(model)], engine
        assert len(t.plan().buckets[0].sections[0]) == 4  # four runs merged on read
        deletes = pa.table({"id": pa.array([3, 4, 29], pa.int64())})
        if engine == "partial-update":  # it refuses retractions, as Paimon's does: nothing is written
            with pytest.raises(UnsupportedPaimonFeatureError, match="retraction"):
                t.delete(deletes)
            assert t.read().sort_by("id").to_pylist() == [model[k] for k in sorted(model)], engine
            continue
        if engine == "aggregate":
            continue  # the sum cannot retract a row it never saw
        t.delete(deletes)
        for k in (3, 4, 29):
            model.pop(k, None)
        assert t.read().sort_by("id").to_pylist() == [model[k] for k in sorted(model)], engine
