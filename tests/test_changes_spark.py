"""Changelog producers behind the Spark writer (issue 26): its append commits publish the
changelog the table asks for — ``input``: the rows the append wrote, in its own snapshot;
``lookup``: as Java's writers, in the COMPACT snapshot the writer commits after the append (a
lookup of the keys it touched) — so a change read of a Spark-written commit is exact — real
local[2]."""
from __future__ import annotations

import pyarrow as pa
import pytest
from test_changes import apply, state

from mergetree import Table


@pytest.mark.parametrize("producer", ["lookup", "input"])
def test_a_spark_append_publishes_its_changelog(spark, tmp_path, producer):
    import mergetree.spark
    mergetree.spark.register(spark)
    path = str(tmp_path / producer)
    # a lookup changelog is made by compaction: the writer compacts what it wrote (not write-only)
    options = {"changelog-producer": producer} if producer == "lookup" else \
        {"changelog-producer": producer, "write-only": "true"}
    table = Table.create(path, pa.schema([("id", pa.int64()), ("name", pa.string())]), primary_key=["id"],
                         buckets=2, options=options)
    table.write({"id": list(range(10)), "name": ["old"] * 10})
    base = table.latest_snapshot().id
    # id 5 twice in one task: an input changelog keeps both rows as written, the table the last
    rows_in = [(i, f"new-{i}") for i in range(5, 15)] + [(5, "newer-5")]
    spark.createDataFrame(rows_in, "id long, name string").coalesce(1) \
        .write.format("mergetree").mode("append").save(path)
    table = Table.open(path)
    append = table.directory.store.snapshot(base + 1)
    assert append.commit_kind == "APPEND"
    end = table.latest_snapshot()
    rows = table.changes(base, end.id, per_commit=True, source="changelog").read_all().to_pylist()
    if producer == "lookup":  # exact: -U old rows, +U new rows, +I new keys, in the writer's COMPACT snapshot
        assert end.id == base + 2 and end.commit_kind == "COMPACT" and end.changelog_manifest_list
        assert not append.changelog_manifest_list
        assert {r["_snapshot_id"] for r in rows} == {end.id}
        assert apply(state(table, base), rows, ["id"]) == state(table, end.id)
        assert sorted(r["_row_kind"] for r in rows).count("-U") == 5
        auto = table.changes(base, end.id).read_all().to_pylist()
        assert apply(state(table, base), auto, ["id"]) == state(table, end.id)
    else:  # every row Spark wrote, +I, both versions of id 5 among them, in the append's snapshot
        assert end.id == base + 1 and append.changelog_manifest_list
        assert sorted((r["id"], r["name"], r["_row_kind"]) for r in rows) == sorted(
            (i, name, "+I") for i, name in rows_in)
