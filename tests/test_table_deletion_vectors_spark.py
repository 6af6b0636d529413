"""A deletion-vector table through the Spark data source (real local[2] session): a task per
resolved file, the sections still merged split as before, and exactly the Python read."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from mergetree import InvalidArgumentError, Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


def test_resolved_files_are_read_by_a_task_each(spark, tmp_path):
    """A deletion-vector table's files are all resolved (a reader skips level 0, as Java's
    does, until a compaction takes its rows up): the Spark read is a task per file, nothing
    merged, and exactly the Python read before and after that compaction."""
    import mergetree.spark
    mergetree.spark.register(spark)
    path = str(tmp_path / "t")
    table = Table.create(path, SCHEMA, primary_key="id", buckets=2,
                         options={"write-only": "true", "deletion-vectors.enabled": "true"})
    rng = np.random.default_rng(3)
    for start in range(0, 20_000, 5_000):  # disjoint key ranges: resolved files side by side at level 1
        ids = np.arange(start, start + 5_000, dtype=np.int64)
        table.write(pa.table({"id": ids, "v": ids, "s": [f"a{i}" for i in ids]}, schema=SCHEMA))
        table.compact()
    updated = rng.choice(20_000, 500, replace=False).astype(np.int64)
    table.write(pa.table({"id": updated, "v": -updated, "s": ["b"] * 500}, schema=SCHEMA))
    table.compact()
    # level 0 (write-only: not compacted yet): not read until a compaction
    table.write(pa.table({"id": pa.array([7, 19_999], pa.int64()), "v": [0, 0], "s": ["c", "c"]}, schema=SCHEMA))

    def resolved_alone() -> int:
        plan = table.plan()
        alone = sum(1 for b in plan.buckets for s in b.sections if len(s) == 1 and len(s[0]) == 1
                    and s[0][0].resolved)
        assert alone == len(plan.files) > 2 and any(m.deleted_rows for m in plan.files)
        return alone

    alone = resolved_alone()
    df = spark.read.format("mergetree").load(path)
    assert df.rdd.getNumPartitions() == alone  # a task per file read alone
    got = sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])
    assert got == table.read().sort_by("id").to_pylist()
    assert not any(r["s"] == "c" for r in got)  # the level-0 rows are not read yet
    table.compact()
    table = Table.open(path)
    alone = resolved_alone()
    df = spark.read.format("mergetree").load(path)
    assert df.rdd.getNumPartitions() == alone
    got = sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])
    assert got == table.read().sort_by("id").to_pylist()
    assert [r["id"] for r in got if r["s"] == "c"] == [7, 19_999]
    filtered = df.filter("v < 0 or s = 'c'")
    want = table.read(filter=("or", [("v", "<", 0), ("s", "=", "c")])).sort_by("id").to_pylist()
    assert sorted((r.asDict() for r in filtered.collect()), key=lambda r: r["id"]) == want
    assert len(want) == 500 + 2 - len({7, 19_999} & set(updated.tolist()))


def _dv_table(path: str, **options) -> tuple[Table, pa.Table]:
    table = Table.create(path, SCHEMA, primary_key="id", options={
        "write-only": "true", "deletion-vectors.enabled": "true", "target-file-size": "64 kb", **options})
    rng = np.random.default_rng(9)
    ids = np.arange(30_000, dtype=np.int64)
    data = pa.table({"id": ids, "v": rng.integers(0, 1000, 30_000), "s": [f"a{i}" for i in ids]}, schema=SCHEMA)
    table.write(data)  # level 0, write-only: not read before a compaction
    return table, data.cast(table.schema)  # (the key read back not null)


def test_spark_optimize_refuses_to_order_a_deletion_vector_table_by_a_value_column(spark, tmp_path):
    """A primary-key table's files are sorted by its key: the Spark optimize job refuses a
    clustering order on a value column (as Table.optimize does), naming Paimon's clustering of
    primary-key tables, and commits nothing."""
    import mergetree.spark
    path = str(tmp_path / "t")
    table, want = _dv_table(path)
    before = table.latest_snapshot()
    files = set(table.directory.live_files(before))
    with pytest.raises(InvalidArgumentError,
                       match="cannot be clustered.*'pk-clustering-override' and 'clustering.columns'"):
        mergetree.spark.optimize(spark, path, order="v")
    table = Table.open(path)
    assert table.latest_snapshot().id == before.id and set(table.directory.live_files(table.latest_snapshot())) == files
    table.compact()  # the rows written are all there
    assert Table.open(path).read().sort_by("id") == want


def test_spark_optimize_clusters_a_pk_clustering_deletion_vector_table(spark, tmp_path):
    """The Spark optimize job of a deletion-vector table created with Paimon's
    'pk-clustering-override' and 'clustering.columns' = v compacts it into level-1 files, each
    sorted by v, resolved (read alone), rolled at the target file size; its reads stay exact and a
    narrow filter on v reads few files."""
    import mergetree.spark
    path = str(tmp_path / "t")
    table, want = _dv_table(path, **{"pk-clustering-override": "true", "clustering.columns": "v"})
    assert table.read().num_rows == 0  # level 0 only
    mergetree.spark.optimize(spark, path)
    table = Table.open(path)
    files = table.plan().files
    assert files and all(m.resolved and m.level == 1 for m in files)
    paimon = table.directory.store.table
    for f in paimon.live_files(paimon.resolve(None)):
        v = pq.read_table(f.path, columns=["v"]).column("v").to_pylist()
        assert v == sorted(v), f.name
    assert table.read().sort_by("id") == want
    assert table.read(filter=("v", "<", 10)).sort_by("id") == want.filter(pc.less(want["v"], 10))
    assert len(files) > 3
    narrow = table.plan(filter=("v", "<", 10))
    assert len(narrow.files) < len(files) / 2
