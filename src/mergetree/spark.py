"""PySpark integration: a `mergetree` Python data source for reads and writes.

    import mergetree.spark
    mergetree.spark.register(spark)
    df = spark.read.format("mergetree").load("/data/visits")          # options: snapshot, batchSize
    df.write.format("mergetree").mode("append").option("primaryKey", "id").option("buckets", "4").save(path)

One Spark partition per bucket; each task merges its bucket's sorted runs with the loser
tree and yields Arrow record batches in exactly the schema Spark expects.  Equality and IN
filters on the bucket key prune buckets; key ranges and statistics prune files; every
filter that arrives is also applied exactly after the merge, so results are exact.  Needs
pyspark >= 4 (`pip install "mergetree[spark]"`) with
`spark.sql.python.filterPushdown.enabled=true` for pushdown.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterator

import pyarrow as pa

from .errors import UnsupportedTypeError

try:
    from pyspark.sql.datasource import (
        DataSource, DataSourceArrowWriter, DataSourceReader, EqualTo, GreaterThan, GreaterThanOrEqual, In,
        InputPartition, IsNotNull, IsNull, LessThan, LessThanOrEqual, WriterCommitMessage,
    )
except ImportError as exc:  # pragma: no cover - exercised only without pyspark
    raise ImportError("mergetree.spark needs pyspark >= 4.0: pip install 'mergetree[spark]'") from exc

SOURCE_NAME = "mergetree"


def local_session(app_name: str = "mergetree", warehouse: str | None = None, shuffle_partitions: int = 2,
                  fast_start: bool = True, **config: str) -> Any:
    """A `local[2]` SparkSession with the settings that keep tests, demos and benchmarks
    quick on a small machine (UI off, few shuffle partitions, loopback, UTC, Arrow and
    Python filter pushdown on).  `fast_start` trades JIT quality for start-up time: leave
    it off for long runs that are being timed."""
    import sys
    import tempfile

    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions), "spark.default.parallelism": "2",
        "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": warehouse or tempfile.mkdtemp(prefix="mergetree-spark-warehouse-"),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.python.filterPushdown.enabled": "true",
    }
    if fast_start:
        settings["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    settings.update(config)
    builder = SparkSession.builder.master("local[2]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def register(spark: Any) -> None:
    """Make `spark.read.format("mergetree")` available in this session."""
    spark.dataSource.register(MergetreeDataSource)


# -- types ------------------------------------------------------------------------------

def spark_arrow_type(dtype: pa.DataType) -> pa.DataType:
    """The Arrow type Spark uses for a column of this type (what read() must yield)."""
    if pa.types.is_dictionary(dtype):
        return spark_arrow_type(dtype.value_type)
    if pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
        return pa.string()
    if pa.types.is_large_binary(dtype) or pa.types.is_binary_view(dtype) or pa.types.is_fixed_size_binary(dtype):
        return pa.binary()
    if pa.types.is_timestamp(dtype):
        return pa.timestamp("us", tz="UTC" if dtype.tz else None)
    if pa.types.is_date64(dtype):
        return pa.date32()
    if pa.types.is_uint8(dtype):
        return pa.int16()
    if pa.types.is_uint16(dtype):
        return pa.int32()
    if pa.types.is_uint32(dtype):
        return pa.int64()
    if (pa.types.is_signed_integer(dtype) or (pa.types.is_floating(dtype) and not pa.types.is_float16(dtype))
            or pa.types.is_boolean(dtype) or pa.types.is_string(dtype) or pa.types.is_binary(dtype)
            or pa.types.is_date32(dtype) or pa.types.is_decimal128(dtype)):
        return dtype
    raise UnsupportedTypeError(f"Spark has no column type for Arrow {dtype}")


def spark_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, spark_arrow_type(f.type), nullable=True) for f in schema])


def spark_ddl(schema: pa.Schema) -> str:
    """A Spark DDL string for the schema."""
    names = {pa.int8(): "byte", pa.int16(): "short", pa.int32(): "int", pa.int64(): "long",
             pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean", pa.string(): "string",
             pa.binary(): "binary", pa.date32(): "date", pa.timestamp("us", tz="UTC"): "timestamp",
             pa.timestamp("us"): "timestamp_ntz"}
    parts = []
    for f in spark_schema(schema):
        if pa.types.is_decimal(f.type):
            text = f"decimal({f.type.precision},{f.type.scale})"
        else:
            text = names[f.type]
        parts.append(f"`{f.name}` {text}")
    return ", ".join(parts)


# -- filters ----------------------------------------------------------------------------

_COMPARISONS = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}


def to_mergetree_filter(f: Any, schema: pa.Schema) -> tuple | None:
    """A Spark filter as a mergetree filter tuple, or None if it cannot be expressed."""
    attribute = getattr(f, "attribute", ())
    if len(attribute) != 1 or attribute[0] not in schema.names:
        return None  # nested fields, unknown columns
    column = attribute[0]
    if isinstance(f, IsNull):
        return (column, "is null", None)
    if isinstance(f, IsNotNull):
        return (column, "is not null", None)
    if isinstance(f, In):
        return (column, "in", list(f.value))
    op = _COMPARISONS.get(type(f))
    if op is None:
        return None  # Not, EqualNullSafe, string predicates: Spark applies them
    return (column, op, f.value)


# -- the data source --------------------------------------------------------------------

@dataclass(frozen=True)
class BucketPartition(InputPartition):
    """One bucket of one partition, with the files the driver planned for it: the unit of a
    read task (so tasks never re-plan the table)."""

    def __init__(self, bucket_plan) -> None:  # InputPartition is a frozen dataclass
        object.__setattr__(self, "value", (bucket_plan.partition, bucket_plan.bucket))
        object.__setattr__(self, "bucket_plan", bucket_plan)


class MergetreeDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _table(self):
        from .table import Table
        return Table.open(self.options["path"])

    def schema(self) -> str:
        return spark_ddl(self._table().schema)

    def reader(self, schema: Any) -> MergetreeReader:
        return MergetreeReader({k.lower(): v for k, v in self.options.items()})  # Spark's keys ignore case

    def writer(self, schema: Any, overwrite: bool) -> MergetreeWriter:
        return MergetreeWriter({k.lower(): v for k, v in self.options.items()}, schema, overwrite)


class MergetreeReader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        from .table import Table
        self.path = options["path"]
        self.batch_size = int(options.get("batchsize", 65536))
        table = Table.open(self.path)
        snapshot = options.get("snapshot")
        latest = table.latest_snapshot()
        self.snapshot = int(snapshot) if snapshot is not None else (latest.id if latest else None)
        self.filters: list[tuple] = []
        self.report_path = options.get("planreport")

    def pushFilters(self, filters: list) -> Iterator:
        """Keep what mergetree can evaluate (it prunes with it and applies it exactly after
        the merge); hand the rest back to Spark."""
        from .table import Table
        schema = Table.open(self.path).schema
        for f in filters:
            converted = to_mergetree_filter(f, schema)
            if converted is None:
                yield f
            else:
                self.filters.append(converted)

    def _filter(self):
        return self.filters or None

    def partitions(self) -> list[BucketPartition]:
        from .table import Table
        table = Table.open(self.path)
        if self.snapshot is None:
            return []
        plan = table.plan(self._filter(), self.snapshot)
        parts = [BucketPartition(b) for b in plan.buckets]
        if self.report_path:  # the plan runs in a short-lived process: leave facts on disk
            with open(self.report_path, "w") as f:
                json.dump({"snapshot": plan.snapshot_id, "filters": [list(map(_jsonable, x)) for x in self.filters],
                           "buckets": [b.bucket for b in plan.buckets], "files": len(plan.files),
                           "files_total": plan.files_total, "pruned_buckets": plan.pruned_buckets,
                           "pruned_files": plan.pruned_files, "pruned_partitions": plan.pruned_partitions}, f)
        return parts

    def read(self, partition: BucketPartition) -> Iterator[pa.RecordBatch]:
        from . import filters as flt
        from .table import Table
        table = Table.open(self.path)
        out_schema = spark_schema(table.schema)
        f = flt.normalize(self._filter())
        for batch in table._read_bucket(partition.bucket_plan, table.schema.names,
                                        flt.to_expression(f, table.schema), table._file_filter(f)):
            for start in range(0, batch.num_rows, self.batch_size):
                yield _conform(batch.slice(start, self.batch_size), out_schema)


# -- mapInArrow helpers ---------------------------------------------------------------------

def merge_sorted_runs(key: str | list[str], *, run: str = "run", group: str | None = None,
                      **merge_options: Any):
    """A function for `df.mapInArrow(fn, df.schema)` that merges the sorted runs in each task.

    Every row names its run in column `run` (a higher run id is newer unless `sequence` is
    given); the rows of one run must arrive in key order, e.g. after
    `df.repartition(group).sortWithinPartitions(group, run, *key)`.  With `group` (a bucket
    column, say) each group is merged on its own.  `merge_options` are those of
    `mergetree.merge` (sequence, kind, engine, aggregations, keep_deletes, ...).  A task
    holds its partition's rows in memory while it merges them."""
    from .merge import merge

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
    import pyarrow.compute as pc
    values = pc.unique(table.column(column)).sort()
    return [table.filter(pc.equal(table.column(column), v)) for v in values]


# -- bucket joins -----------------------------------------------------------------------------

def bucket_join(spark: Any, left_path: str, right_path: str, on: str | list[str], how: str = "inner",
                fallback: bool = False):
    """Join two tables bucketed identically on their primary key without a shuffle: one task
    per bucket merge-reads both sides (already in key order) and joins them with a sorted
    merge join in the Cython core.  Both tables need primary key == bucket key == `on`, the
    same bucket count, and no partitioning; otherwise a clear error, or with
    `fallback=True` an ordinary Spark join of the two tables."""
    from .errors import InvalidArgumentError
    from .join import JOINS, join_sorted, joined_schema
    from .table import Table
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
                    yield _conform(out, out_schema)

    units = spark.sparkContext.parallelize([(b,) for b in range(buckets)], buckets)  # a task per bucket
    return spark.createDataFrame(units, "bucket int").mapInArrow(run, spark_ddl(out_schema))


def _read_planned(table, bucket_plan) -> pa.Table:
    """A bucket's merged rows in key order (empty if the bucket has no files)."""
    if bucket_plan is None:
        return table.schema.empty_table()
    batches = list(table._read_bucket(bucket_plan, table.schema.names, None, None))
    return pa.Table.from_batches(batches, schema=table.schema)


def _bucket_join_problem(left, right, on: list[str]) -> str | None:
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

def compact(spark: Any, path: str, full: bool = False):
    """Compact a table with Spark: the driver plans every bucket's compaction, one task per
    bucket merges and rewrites its files (through `mapInArrow`), and the driver commits all
    results in one snapshot.  Returns the snapshot, or None if nothing needed compaction."""
    from .compactor import commit_compaction, discard_new_files, execute_plan, plan_compaction
    from .snapshots import FileEntry
    from .table import Table
    table = Table.open(path)
    base_id, plans = plan_compaction(table, None, full)
    if not plans:
        return None

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_table = Table.open(path)
        for batch in batches:
            for i in batch.column("unit").to_pylist():
                key, plan = plans[i]
                adds, deletes = execute_plan(task_table, key, plan)
                yield pa.record_batch({"adds": [json.dumps([e.to_json("ADD") for e in adds])],
                                       "deletes": [json.dumps([e.to_json("DELETE") for e in deletes])]})

    units = spark.sparkContext.parallelize([(i,) for i in range(len(plans))], len(plans))  # a task each
    results = spark.createDataFrame(units, "unit int").mapInArrow(run, "adds string, deletes string").collect()
    adds = [FileEntry.from_json(e) for r in results for e in json.loads(r["adds"])]
    deletes = [FileEntry.from_json(e) for r in results for e in json.loads(r["deletes"])]
    try:
        return commit_compaction(table, base_id, adds, deletes)
    except BaseException:
        discard_new_files(table, adds, deletes)
        raise


# -- writes -----------------------------------------------------------------------------

# Each task numbers its rows from base + task * TASK_SEQUENCE_SPAN, so the sequence numbers of
# tasks writing the same bucket never collide.
TASK_SEQUENCE_SPAN = 1 << 32
CREATE_OPTIONS = {"path", "primarykey", "partitionby", "buckets", "bucketkey", "mergeengine"}


@dataclass
class FilesMessage(WriterCommitMessage):
    """A task's written files, as manifest entries."""

    entries: list


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


class MergetreeWriter(DataSourceArrowWriter):
    """Writes level-0 files per task; the driver commits them all as one snapshot."""

    def __init__(self, options: dict, spark_schema_: Any, overwrite: bool) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        from .table import Table, _next_sequences
        self.path = options["path"]
        self.overwrite = overwrite
        if os.path.exists(os.path.join(self.path, "schema")):
            table = Table.open(self.path)
        else:  # create the table from the DataFrame's schema
            table = Table.create(
                self.path, to_arrow_schema(spark_schema_, timezone="UTC"), primary_key=_names(options.get("primarykey")),
                partition_by=_names(options.get("partitionby")), buckets=int(options.get("buckets", 1)),
                bucket_key=_names(options.get("bucketkey")),
                merge_engine=options.get("mergeengine", "deduplicate"),
                options={k: v for k, v in options.items() if k not in CREATE_OPTIONS})
        base = table.latest_snapshot()
        self.base_id = base.id if base else None
        self.next_seq = {} if overwrite else _next_sequences(table.store.live_files(base).values())

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FilesMessage:
        from pyspark import TaskContext

        from .table import ROW_KIND_INSERT, Table
        table = Table.open(self.path)
        task = TaskContext.get().partitionId()
        batches = list(iterator)
        if not batches:
            return FilesMessage([])
        data = table._conform(pa.Table.from_batches(batches), complete=True)
        next_seq = {key: first + task * TASK_SEQUENCE_SPAN for key, first in self.next_seq.items()}
        target = table.options.target_file_size
        entries = []
        try:
            groups = table._split(data)
            for key in groups:
                next_seq.setdefault(key, task * TASK_SEQUENCE_SPAN)
            entries = table._flush_all(groups, ROW_KIND_INSERT, next_seq, target)
        except BaseException:
            table._discard(entries)
            raise
        return FilesMessage([e.to_json("ADD") for e in entries])

    def commit(self, messages: list) -> None:
        from .errors import CommitConflictError
        from .snapshots import FileEntry
        from .table import Table, _next_sequences
        table = Table.open(self.path)
        adds = [FileEntry.from_json(e) for m in messages if m is not None for e in m.entries]
        base = table.store.snapshot(self.base_id) if self.base_id is not None else None
        for _ in range(30):
            deletes = list(table.store.live_files(base).values()) if self.overwrite else []
            try:
                table.store.commit(base.id if base else None, adds, deletes,
                                   "OVERWRITE" if self.overwrite else "APPEND", table.table_schema.schema_id)
                return
            except CommitConflictError:
                latest = table.latest_snapshot()
                newer = _next_sequences(table.store.live_files(latest).values())
                if not self.overwrite and any(newer.get(k, 0) > v for k, v in self.next_seq.items()):
                    table._discard(adds)
                    raise CommitConflictError(
                        "another write committed to this table while the Spark job ran; the job's files "
                        "were removed, run it again") from None
                base = latest
        table._discard(adds)
        raise CommitConflictError("gave up committing the Spark job's files after 30 conflicts")

    def abort(self, messages: list) -> None:
        """Failed job: remove the files of tasks that reported; the rest are orphans
        (`Table.remove_orphan_files`)."""
        from .snapshots import FileEntry
        from .table import Table
        table = Table.open(self.path)
        table._discard([FileEntry.from_json(e) for m in messages if m is not None for e in m.entries])


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    columns = []
    for col, field in zip(batch.columns, schema):
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        # timestamps narrower than µs widen exactly; ns truncate to Spark's µs
        columns.append(col if col.type == field.type else col.cast(field.type, safe=False))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime, Decimal, bytes)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


__all__ = ["MergetreeDataSource", "bucket_join", "compact", "local_session", "merge_sorted_runs", "register", "spark_arrow_type", "spark_ddl", "spark_schema"]
