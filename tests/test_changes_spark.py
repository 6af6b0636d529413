"""Changelog producers behind the Spark writer (issue 26): its append commits publish the
changelog the table asks for (a lookup of the keys it touched, on the driver), so a change
read of a Spark-written commit is exact — real local[2]."""
from __future__ import annotations

import pyarrow as pa
import pytest
from test_changes import apply, state

from mergetree import Table


@pytest.mark.private_format
@pytest.mark.parametrize("producer", ["lookup", "input"])
def test_a_spark_append_publishes_its_changelog(spark, tmp_path, producer):
    import mergetree.spark
    mergetree.spark.register(spark)
    path = str(tmp_path / producer)
    table = Table.create(path, pa.schema([("id", pa.int64()), ("name", pa.string())]), primary_key=["id"],
                         buckets=2, options={"changelog-producer": producer, "write-only": "true"})
    table.write({"id": list(range(10)), "name": ["old"] * 10})
    # id 5 twice in one task: an input changelog keeps both rows as written, the table the last
    rows_in = [(i, f"new-{i}") for i in range(5, 15)] + [(5, "newer-5")]
    spark.createDataFrame(rows_in, "id long, name string").coalesce(1) \
        .write.format("mergetree").mode("append").save(path)
    table = Table.open(path)
    snapshot = table.latest_snapshot()
    assert snapshot.id == 2 and snapshot.changelog_manifest_list
    assert snapshot.properties["changelog-producer"] == producer
    rows = table.changes(1, 2, per_commit=True).read_all().to_pylist()
    if producer == "lookup":  # exact: -U old rows, +U new rows, +I new keys
        assert apply(state(table, 1), rows, ["id"]) == state(table, 2)
        assert sorted(r["_row_kind"] for r in rows).count("-U") == 5
    else:  # every row Spark wrote, +I, both versions of id 5 among them
        assert sorted((r["id"], r["name"], r["_row_kind"]) for r in rows) == sorted(
            (i, name, "+I") for i, name in rows_in)
