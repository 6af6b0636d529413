"""A deletion-vector table through the Spark data source (real local[2] session): a task per
resolved file, the sections still merged split as before, and exactly the Python read."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from mergetree import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


@pytest.mark.private_format
def test_resolved_files_are_read_by_a_task_each(spark, tmp_path):
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
    table.write(pa.table({"id": pa.array([7, 19_999], pa.int64()), "v": [0, 0], "s": ["c", "c"]}, schema=SCHEMA))
    plan = table.plan()
    resolved_alone = sum(1 for b in plan.buckets for s in b.sections if len(s) == 1 and len(s[0]) == 1
                         and s[0][0].resolved)
    assert resolved_alone > 2 and any(m.deleted_rows for m in plan.files)
    df = spark.read.format("mergetree").load(path)
    # a task per file read alone, plus one per bucket whose new file still merges
    assert df.rdd.getNumPartitions() >= resolved_alone + 1
    got = sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])
    assert got == table.read().sort_by("id").to_pylist()
    filtered = df.filter("v < 0 or s = 'c'")
    want = table.read(filter=("or", [("v", "<", 0), ("s", "=", "c")])).sort_by("id").to_pylist()
    assert sorted((r.asDict() for r in filtered.collect()), key=lambda r: r["id"]) == want
    assert len(want) == 500 + 2 - len({7, 19_999} & set(updated.tolist()))


@pytest.mark.private_format
def test_spark_optimize_clusters_a_deletion_vector_table_on_the_driver(spark, tmp_path):
    """The Spark optimize job of a deletion-vector table with clustering on a value column is
    the local clustered rewrite (every file still sorted by key), and its reads stay exact."""
    import mergetree.spark
    path = str(tmp_path / "t")
    table = Table.create(path, SCHEMA, primary_key="id", options={
        "write-only": "true", "deletion-vectors.enabled": "true", "target-file-size": "64 kb"})
    rng = np.random.default_rng(9)
    ids = np.arange(30_000, dtype=np.int64)
    table.write(pa.table({"id": ids, "v": rng.integers(0, 1000, 30_000), "s": [f"a{i}" for i in ids]}, schema=SCHEMA))
    want = table.read().sort_by("id")
    mergetree.spark.optimize(spark, path, order="v")
    table = Table.open(path)
    files = table.plan().files
    assert len(files) > 3 and all(m.resolved and m.level == 0 for m in files)
    assert table.read().sort_by("id") == want
    narrow = table.plan(filter=("v", "<", 10))
    assert len(narrow.files) < len(files) / 2
    assert table.read(filter=("v", "<", 10)).sort_by("id") == want.filter(pa.compute.less(want["v"], 10))
