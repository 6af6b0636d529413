"""Spark jobs over mergetree tables: distributed compaction, shuffle-free bucket joins, and a
`mapInArrow` function that merges sorted runs inside each task."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..merge import merge
from ..merge.join import JOINS, join_sorted, joined_schema
from ..table import Table
from ..table.compaction.runner import commit_compaction, discard_new_files, execute_plan, plan_compaction
from ..table.read import BucketPlan, read_bucket
from ..table.snapshots import FileEntry, Snapshot
from .source import SOURCE_NAME, register
from .types import spark_ddl, spark_schema, to_spark_batch

__all__ = ["bucket_join", "compact", "merge_sorted_runs"]


# -- mapInArrow helpers ---------------------------------------------------------------------

def merge_sorted_runs(key: str | list[str], *, run: str = "run", group: str | None = None,
                      **merge_options: Any) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A function for `df.mapInArrow(fn, df.schema)` that merges the sorted runs in each task.

    Every row names its run in column `run` (a higher run id is newer unless `sequence` is
    given); the rows of one run must arrive in key order, e.g. after
    `df.repartition(group).sortWithinPartitions(group, run, *key)`.  With `group` (a bucket
    column, say) each group is merged on its own.  `merge_options` are those of
    `mergetree.merge` (sequence, kind, engine, aggregations, keep_deletes, ...).  A task
    holds its partition's rows in memory while it merges them."""

    def merge_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        collected = list(batches)
        if not collected:  # an empty partition
            return
        table = pa.Table.from_batches(collected)
        for part in _split_by(table, group) if group else [table]:
            runs = _split_by(part, run)  # ascending run ids: oldest first
            yield from merge(runs, key, **merge_options)

    return merge_task


def _split_by(table: pa.Table, column: str) -> list[pa.Table]:
    """The rows of each value of `column`, in ascending value order, each in arrival order."""
    values = pc.unique(table.column(column)).sort()
    return [table.filter(pc.equal(table.column(column), v)) for v in values]


# -- bucket joins -----------------------------------------------------------------------------

def bucket_join(spark: Any, left_path: str, right_path: str, on: str | list[str], how: str = "inner",
                fallback: bool = False) -> Any:
    """Join two tables bucketed identically on their primary key without a shuffle: one task
    per bucket merge-reads both sides (already in key order) and joins them with a sorted
    merge join in the Cython core.  Both tables need primary key == bucket key == `on`, the
    same bucket count, and no partitioning; otherwise a clear error, or with
    `fallback=True` an ordinary Spark join of the two tables."""
    on = [on] if isinstance(on, str) else list(on)
    left, right = Table.open(left_path), Table.open(right_path)
    if how not in JOINS:
        raise InvalidArgumentError(f"unknown join {how!r}; choose inner, left or full")
    problem = _bucket_join_problem(left, right, on)
    if problem:
        if not fallback:
            raise InvalidArgumentError(f"cannot bucket-join: {problem} (pass fallback=True for a normal join)")
        register(spark)
        reader = spark.read.format(SOURCE_NAME)
        return reader.load(left_path).join(reader.load(right_path), on=on, how="full_outer" if how == "full" else how)
    buckets = left.table_schema.buckets
    # plan both sides once, here; each task gets its bucket's files
    plans = [{b.bucket: b for b in t.plan().buckets} for t in (left, right)]
    out_schema = spark_schema(joined_schema(left.schema, right.schema, on))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sides = [Table.open(left_path), Table.open(right_path)]
        for batch in batches:
            for bucket in batch.column("bucket").to_pylist():
                tables = [_read_planned(t, plan.get(bucket)) for t, plan in zip(sides, plans)]
                joined = join_sorted(tables[0], tables[1], on, how)
                for out in joined.to_batches():
                    yield to_spark_batch(out, out_schema)

    units = spark.sparkContext.parallelize([(b,) for b in range(buckets)], buckets)  # a task per bucket
    return spark.createDataFrame(units, "bucket int").mapInArrow(run, spark_ddl(out_schema))


def _read_planned(table: Table, bucket_plan: BucketPlan | None) -> pa.Table:
    """A bucket's merged rows in key order (empty if the bucket has no files)."""
    if bucket_plan is None:
        return table.schema.empty_table()
    batches = list(read_bucket(table.directory, bucket_plan, table.schema.names, None, None))
    return pa.Table.from_batches(batches, schema=table.schema)


def _bucket_join_problem(left: Table, right: Table, on: list[str]) -> str | None:
    for name, t in (("left", left), ("right", right)):
        ts = t.table_schema
        if list(ts.primary_key) != on or list(ts.bucket_key) != on:
            return (f"the {name} table's primary key {list(ts.primary_key)} and bucket key "
                    f"{list(ts.bucket_key)} must both be the join key {on}")
        if ts.partition_by:
            return f"the {name} table is partitioned by {list(ts.partition_by)}"
    if left.table_schema.buckets != right.table_schema.buckets:
        return f"bucket counts differ ({left.table_schema.buckets} vs {right.table_schema.buckets})"
    for name in on:
        if left.schema.field(name).type != right.schema.field(name).type:
            return f"join column {name!r} has types {left.schema.field(name).type} and {right.schema.field(name).type}"
    return None


# -- distributed compaction ---------------------------------------------------------------

def compact(spark: Any, path: str, full: bool = False) -> Snapshot | None:
    """Compact a table with Spark: the driver plans every bucket's compaction, one task per
    bucket merges and rewrites its files (through `mapInArrow`), and the driver commits all
    results in one snapshot.  Returns the snapshot, or None if nothing needed compaction."""
    directory = Table.open(path).directory
    base_id, plans = plan_compaction(directory, None, full)
    if not plans or base_id is None:
        return None

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_directory = Table.open(path).directory
        for batch in batches:
            for i in batch.column("unit").to_pylist():
                key, plan = plans[i]
                adds, deletes = execute_plan(task_directory, key, plan)
                yield pa.record_batch({"adds": [json.dumps([e.to_json("ADD") for e in adds])],
                                       "deletes": [json.dumps([e.to_json("DELETE") for e in deletes])]})

    units = spark.sparkContext.parallelize([(i,) for i in range(len(plans))], len(plans))  # a task each
    results = spark.createDataFrame(units, "unit int").mapInArrow(run, "adds string, deletes string").collect()
    adds = [FileEntry.from_json(e) for r in results for e in json.loads(r["adds"])]
    deletes = [FileEntry.from_json(e) for r in results for e in json.loads(r["deletes"])]
    try:
        return commit_compaction(directory, base_id, adds, deletes)
    except BaseException:
        discard_new_files(directory, adds, deletes)
        raise
