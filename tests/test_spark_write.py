"""`mergetree.spark.write`: rows routed by the table's bucket function (Paimon's) before the
write, so a commit holds one file set per bucket instead of one per (task, bucket) — real local[2]."""
from __future__ import annotations

import pyarrow as pa
import pytest

from mergetree import InvalidArgumentError, Table
from mergetree.table.files import read_data_file


def _added_files(table: Table) -> list:
    """The data files the latest commit added, with their buckets."""
    snapshot = table.latest_snapshot()
    before = table.directory.live_files(table.directory.store.snapshot(snapshot.id - 1)) if snapshot.id > 1 else {}
    return [e for name, e in table.directory.live_files(snapshot).items() if name not in before]


def _frame(spark, first: int, rows: int, partitions: int, tag: str):
    return (spark.range(first, first + rows, numPartitions=partitions)
            .selectExpr("id", f"concat('{tag}-', cast(id as string)) as name", "id % 3 as part"))


def test_one_file_set_per_bucket(spark, tmp_path) -> None:
    import mergetree.spark
    mergetree.spark.register(spark)
    plain, routed = str(tmp_path / "plain"), str(tmp_path / "routed")
    options = {"primaryKey": "id", "buckets": "4", "write-only": "true"}
    before = _frame(spark, 0, 4000, 8, "a")
    writer = before.write.format("mergetree").mode("append")
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save(plain)
    mergetree.spark.write(before, routed, **options)
    files_before = len(_added_files(Table.open(plain)))
    files_after = len(_added_files(Table.open(routed)))
    # 8 tasks x 4 buckets before, one file set per bucket after
    assert files_before == 32 and files_after == 4, (files_before, files_after)
    # a second write into the existing table keeps the table's layout, and the answers agree
    more = _frame(spark, 2000, 4000, 6, "b")
    mergetree.spark.write(more, routed)
    assert len(_added_files(Table.open(routed))) == 4
    got = Table.open(routed).read().sort_by("id")
    assert got.num_rows == 6000
    assert got.column("name").to_pylist() == [f"a-{i}" for i in range(2000)] + [f"b-{i}" for i in range(2000, 6000)]
    table = Table.open(routed)
    for entry in _added_files(table):  # every file holds its own bucket's rows only (the table's bucket function)
        ids = pa.Table.from_batches(list(read_data_file(table.directory.storage, entry.file, ["id"])))
        assert set(table.directory.bucket_ids(ids).tolist()) == {entry.bucket}


def test_partitioned_tables_route_by_partition_and_bucket(spark, tmp_path) -> None:
    import mergetree.spark
    path = str(tmp_path / "t")
    spark.conf.set("spark.sql.shuffle.partitions", "12")
    try:
        mergetree.spark.write(_frame(spark, 0, 3000, 5, "p"), path, primaryKey="part,id", partitionBy="part",
                              buckets=4, **{"write-only": "true"})
    finally:
        spark.conf.unset("spark.sql.shuffle.partitions")
    table = Table.open(path)
    files = _added_files(table)
    assert len(files) == 12  # 3 partitions x 4 buckets, each written by one task
    assert len({(e.partition, e.bucket) for e in files}) == 12
    got = table.read()
    ids = got.column("id").to_numpy()
    assert sorted(ids.tolist()) == list(range(3000))
    for entry in files:  # each partition's rows in the buckets the table's bucket function gives them
        rows = pa.Table.from_batches(list(read_data_file(table.directory.storage, entry.file, ["id", "part"])))
        assert set(table.directory.bucket_ids(rows).tolist()) == {entry.bucket}


def test_bad_mode_and_missing_columns(spark, tmp_path) -> None:
    import mergetree.spark
    with pytest.raises(InvalidArgumentError, match="mode"):
        mergetree.spark.write(_frame(spark, 0, 10, 1, "x"), str(tmp_path / "t"), mode="upsert")
    Table.create(str(tmp_path / "u"), pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.int64())]),
                 primary_key="id", buckets=2)
    with pytest.raises(InvalidArgumentError, match="lacks"):
        mergetree.spark.write(spark.range(5).selectExpr("id as other"), str(tmp_path / "u"))


def test_the_data_source_makes_a_paimon_table_and_refuses_table_format(spark, tmp_path) -> None:
    """A write into a new path makes a Paimon table; the older releases' `tableFormat` option is
    refused (the option reaches Spark's Python workers, where the data source creates the table)."""
    import mergetree.spark
    from mergetree.paimon.handle import PaimonTableHandle
    mergetree.spark.register(spark)
    frame = _frame(spark, 0, 100, 2, "f")
    path = str(tmp_path / "t")
    frame.write.format("mergetree").mode("append").option("primaryKey", "id").save(path)
    table = Table.open(path)
    assert isinstance(table, PaimonTableHandle)
    assert table.read().num_rows == 100
    for table_format in ("paimon", "mergetree"):
        with pytest.raises(Exception, match="'tableFormat' is gone"):
            frame.write.format("mergetree").mode("append").option("primaryKey", "id") \
                .option("tableFormat", table_format).save(str(tmp_path / table_format))
        assert not (tmp_path / table_format / "snapshot").exists()
