"""Spark jobs over mergetree tables: distributed compaction (of mergetree and of Apache Paimon
tables), shuffle-free bucket joins, and a `mapInArrow` function that merges sorted runs inside
each task.

Tables may live on object stores (`s3://bucket/prefix`, ...): every job takes
`storage_options` (as `Table.open` does; by default those this process opened the location
with), hands them to its tasks in the job's closure, and the tasks read and write the store
from the Python workers; the driver plans and commits.  The options are never written to a
file, nor put in a task's name or result."""
from __future__ import annotations

import heapq
import json
import pickle
import time
import traceback
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import Any, NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codec.buckets import bucket_function
from ..errors import InvalidArgumentError, MergeTreeError
from ..iceberg import is_iceberg_location
from ..iceberg import open as open_iceberg
from ..iceberg.rewrite import IcebergRewrite, Job, Writer, remove_files, write_files
from ..merge import merge
from ..merge.assemble import RowSelection
from ..merge.join import JOINS, join_selections, joined_schema
from ..organize.scheduler import run_once
from ..paimon.handle import PaimonTableHandle
from ..table import Table
from ..table import filters as flt
from ..table.compaction.runner import execute_unit, plan_units
from ..table.compaction.transaction import new_files, rewrite_transaction
from ..table.directory import TableDirectory
from ..table.files import read_data_file
from ..table.journal import Journal, journaling, remove_journal
from ..table.journal import journaled as read_journals
from ..table.levers.curves import cluster_order, curve_keys, rank_boundaries, rank_ids
from ..table.levers.optimize import layout_signature, marked, prepare_layout, rewrite_files, write_clustered
from ..table.levers.optimize import optimize as optimize_locally
from ..table.objects import locate
from ..table.paimon.metadata import PaimonTable
from ..table.paimon.store import paimon_directory
from ..table.read import BucketPlan, combine_buckets, plan_read, select_bucket
from ..table.snapshots import FileEntry, Snapshot
from ..table.workload.history import PassReport, record_rewrite
from .source import SOURCE_NAME, open_table, register
from .types import spark_ddl, spark_schema, to_spark_batch
from .write import job_storage_options

__all__ = ["bucket_join", "compact", "compact_paimon", "iceberg_writer", "merge_sorted_runs", "optimize",
           "optimize_pending", "spread_units", "unit_frame"]


# -- what tasks get ---------------------------------------------------------------------------

# PySpark writes a task function's pickle to a file on the driver's scratch disk (a broadcast)
# once it passes spark.broadcast.UDFCompressionThreshold (1 MB).  The functions carry the
# storage options, so a job's bulky plan (file lists) travels beside them, as a broadcast of its
# own, once it is larger than this: a function stays small and the options stay off any disk.
INLINE_PAYLOAD_BYTES = 256 * 1024


class Shipped:
    """A value for a job's tasks: inside the task function while small, else a broadcast."""

    def __init__(self, spark: Any, value: Any) -> None:
        self._value: Any = None
        self._broadcast: Any = None
        if len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) > INLINE_PAYLOAD_BYTES:
            self._broadcast = spark.sparkContext.broadcast(value)
        else:
            self._value = value

    @property
    def value(self) -> Any:
        return self._broadcast.value if self._broadcast is not None else self._value

    def release(self) -> None:
        """After the job: drop the broadcast (its file on the driver and its blocks)."""
        if self._broadcast is not None:
            self._broadcast.destroy()
            self._broadcast = None


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

# our join names -> Spark's, for the fallback
SPARK_JOINS = {"inner": "inner", "left": "left", "right": "right", "full": "full_outer", "semi": "left_semi",
               "anti": "left_anti"}


def bucket_join(spark: Any, left_path: str, right_path: str, on: str | list[str], how: str = "inner",
                fallback: bool = False, tasks: int | None = None,
                storage_options: dict[str, Any] | None = None) -> Any:
    """Join two primary-key tables bucketed on the join key without a shuffle: each bucket
    of the table with fewer buckets (per partition, partitions paired by value) is a unit
    that merge-reads both sides (already in primary-key order) and joins them with a sorted
    merge join in the Cython core, streamed a window at a time (memory: about a batch per
    sorted run and side, plus the output), copying value columns only for the rows the join
    returns.  The units are spread over `tasks` Spark tasks (default: as many as Spark runs at
    once, `defaultParallelism`; never more than the units), the largest first onto the least
    loaded task, by bytes: a Python task costs Spark some 30 ms to start, which on a small
    cluster is a visible part of a join.

    Joinable: the same partition columns, all of them in `on`; the same bucket key on both
    sides, within `on` (equal join keys share a bucket); each primary key, without the
    partition columns, starts with the rest of `on` in the same order on both sides (so the
    primary key may be wider than the join key: its rows stay ordered by the join key, and
    keys that repeat give every pairing, as in SQL); and one bucket count divides the other
    (n and k*n): a key in bucket i of n is in one of buckets i, i+n, ..., i+(k-1)n of k*n
    (``|h mod kn| mod n == |h mod n|``), whose rows the task merges into one ordered side with the
    loser tree.  Both tables place rows by the same bucket function (Paimon's) over the same
    key types.  Otherwise a clear error, or
    with `fallback=True` Spark's own join of the two tables (the same columns as a bucket join
    returns).  `storage_options` open both
    tables (by default, each with those this process opened it with)."""
    on = [on] if isinstance(on, str) else list(on)
    if how not in JOINS:
        raise InvalidArgumentError(f"unknown join {how!r}; choose one of {', '.join(JOINS)}")
    if tasks is not None and (isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1):
        raise InvalidArgumentError(f"tasks must be a positive integer, not {tasks!r}")
    left_options = job_storage_options(left_path, storage_options)
    right_options = job_storage_options(right_path, storage_options)
    left, right = _engine_table(left_path, left_options), _engine_table(right_path, right_options)
    left_path, right_path = left.path, right.path  # absolute, or the URIs: what every task opens
    for name in on:
        if name not in left.schema.names or name not in right.schema.names:
            raise InvalidArgumentError(f"join column {name!r} is missing on one side "
                                       f"({left.schema.names} and {right.schema.names})")
    out_schema = spark_schema(joined_schema(left.schema, right.schema, on, how=how))
    try:
        merge_on = _merge_join_key(left, right, on)
    except InvalidArgumentError as problem:
        if not fallback:
            raise InvalidArgumentError(f"cannot bucket-join: {problem} (pass fallback=True for a normal join)") \
                from None
        return _spark_join(spark, (left_path, left_options), (right_path, right_options), on, how,
                           out_schema.names)
    counts = (left.table_schema.buckets, right.table_schema.buckets)
    n = min(counts)
    # plan both sides once, here; each task gets its buckets' files.  A task per (partition,
    # bucket of the smaller count): partitions pair by their values (a side lacking one is empty)
    plans = [{(b.partition, b.bucket): b for b in t.plan().buckets} for t in (left, right)]
    partitions = sorted({p for plan in plans for p, _ in plan}, key=repr)
    units = [(p, i) for p in partitions for i in range(n)] or [((), 0)]
    sizes = [sum(plan[(p, b)].bytes for plan, count in zip(plans, counts) for b in range(i, count, n)
                 if (p, b) in plan) for p, i in units]
    groups = spread_units(sizes, tasks or spark.sparkContext.defaultParallelism)
    # released with the job's last reference to it (a bucket join is a lazy DataFrame)
    shipped = Shipped(spark, (plans, units, groups))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plans, units, groups = shipped.value
        sides = [_engine_table(left_path, left_options), _engine_table(right_path, right_options)]
        for batch in batches:
            for unit in (u for task in batch.column("unit").to_pylist() for u in groups[task]):
                partition, i = units[unit]
                streams = [_stream_buckets(t, plan, [(partition, b) for b in range(i, count, n)])
                           for t, plan, count in zip(sides, plans, counts)]
                for joined in join_selections(streams[0], streams[1], merge_on, how, sides[0].schema,
                                              sides[1].schema):
                    for out in joined.to_batches():
                        yield to_spark_batch(out, out_schema)

    return unit_frame(spark, len(groups)).mapInArrow(run, spark_ddl(out_schema))


def spread_units(sizes: list[int], tasks: int) -> list[list[int]]:
    """Units (indices into `sizes`) in min(tasks, units) groups of about equal total size:
    the largest unit first, each onto the group with the least so far (ties: the lower
    group); each group lists its units in index order."""
    count = max(1, min(tasks, len(sizes)))
    loads = [(0, g) for g in range(count)]
    groups: list[list[int]] = [[] for _ in range(count)]
    for unit in sorted(range(len(sizes)), key=lambda u: (-sizes[u], u)):
        load, g = heapq.heappop(loads)
        groups[g].append(unit)
        heapq.heappush(loads, (load + sizes[unit], g))
    return [sorted(g) for g in groups]


def unit_frame(spark: Any, count: int) -> Any:
    """A DataFrame of one int column `unit` holding 0 .. count-1 (count >= 1), one row per
    partition (a task each), made in the JVM: a parallelized Python collection would cost every task an
    extra pass through a Python worker to unpickle its one row."""
    return spark.range(0, count, 1, count).selectExpr("cast(id as int) as unit")


def _spark_join(spark: Any, left_side: tuple[str, dict | None], right_side: tuple[str, dict | None],
                on: list[str], how: str, columns: list[str]) -> Any:
    """Spark's own join of two mergetree tables (each a path and its storage options), shaped
    like a bucket join's result."""
    register(spark)
    left, right = (spark.read.format(SOURCE_NAME).options(**{k: str(v) for k, v in (options or {}).items()})
                   .load(path) for path, options in (left_side, right_side))
    for name in right.columns:
        if name not in on and name in left.columns:
            right = right.withColumnRenamed(name, name + "_right")
    return left.join(right, on=on, how=SPARK_JOINS[how]).select(*columns)


def _stream_buckets(table: Table, plans: dict[tuple, BucketPlan], buckets: list[tuple]) -> Iterator[RowSelection]:
    """The merged rows of some (partition, bucket)s in primary-key order, streamed as
    selections of the decoded batches (a join copies only the rows it returns): several
    (their keys are disjoint) are merged in one pass of the loser tree."""
    present = [plans[b] for b in buckets if b in plans]
    if not present:
        return iter(())
    return select_bucket(table.directory, combine_buckets(present), table.schema.names)


def _engine_table(path: str, storage_options: dict | None) -> Table:
    """The engine's `Table` of the Paimon table at `path` (its latest schema), whose buckets the
    engine plans and merge-reads."""
    table = open_table(path, storage_options)
    return table.at() if isinstance(table, PaimonTableHandle) else table


def _bucketing(table: Table) -> tuple:
    """How a table places rows in buckets: by its bucket function over its bucket key's types
    (equal placements are what a bucket join needs)."""
    ts = table.table_schema
    paimon = ts.paimon
    if paimon.checked_options.dynamic_buckets:  # keys placed by a hash index: no two tables alike
        return ("Paimon's dynamic buckets (each key where its hash index put it)", object())  # never alike
    types = [paimon.field(c).type for c in ts.bucket_key]
    # what the bucket hash depends on: the type (a decimal's and a timestamp's precision too:
    # they change the binary row), not nullability or a string's length
    hashed = tuple((t.root, t.precision if t.root in ("DECIMAL", "TIMESTAMP", "TIMESTAMP_LTZ", "TIME") else None,
                    t.scale if t.root == "DECIMAL" else None) for t in types)
    return (f"Paimon's {bucket_function(paimon.options, types)} bucket function", hashed)


def _merge_join_key(left: Table, right: Table, on: list[str]) -> list[str]:
    """`on` in the order both tables' rows are sorted in within a (partition, bucket), or an
    InvalidArgumentError saying why a bucket join cannot work."""
    partition_by = list(left.table_schema.partition_by)
    if list(right.table_schema.partition_by) != partition_by:
        raise InvalidArgumentError(f"the tables are partitioned differently ({partition_by} vs "
                                   f"{list(right.table_schema.partition_by)})")
    if len(set(on)) != len(on) or not on:
        raise InvalidArgumentError(f"the join key {on} must name distinct columns")
    missing = [c for c in partition_by if c not in on]
    if missing:
        raise InvalidArgumentError(f"the join key {on} must include the partition columns {missing}")
    bucket_keys = [list(t.table_schema.bucket_key) for t in (left, right)]
    if bucket_keys[0] != bucket_keys[1]:
        raise InvalidArgumentError(f"the tables are bucketed on different keys ({bucket_keys[0]} vs {bucket_keys[1]})")
    placements = [_bucketing(t) for t in (left, right)]
    if placements[0] != placements[1]:
        raise InvalidArgumentError(f"the tables place rows in buckets differently ({placements[0][0]} over "
                                   f"{placements[0][1:] or 'its key'} vs {placements[1][0]} over "
                                   f"{placements[1][1:] or 'its key'})")
    rest = [c for c in on if c not in partition_by]
    if not set(bucket_keys[0]) <= set(on):
        raise InvalidArgumentError(f"the bucket key {bucket_keys[0]} is not within the join key {on}")
    orders = []
    for name, t in (("left", left), ("right", right)):
        if not t.table_schema.primary_key:
            raise InvalidArgumentError(f"the {name} table has no primary key, so its rows are in no order")
        pk = [c for c in t.table_schema.primary_key if c not in partition_by]
        if set(pk[:len(rest)]) != set(rest):
            raise InvalidArgumentError(
                f"the {name} table's primary key {list(t.table_schema.primary_key)} does not start with the join key "
                f"{rest} (after the partition columns), so its rows are not ordered by it")
        orders.append(pk[:len(rest)])
    if orders[0] != orders[1]:
        raise InvalidArgumentError(f"the tables order the join key differently ({orders[0]} vs {orders[1]})")
    low, high = sorted((left.table_schema.buckets, right.table_schema.buckets))
    if high % low:
        raise InvalidArgumentError(f"bucket counts differ and neither divides the other "
                                   f"({left.table_schema.buckets} vs {right.table_schema.buckets})")
    for name in on:
        if left.schema.field(name).type != right.schema.field(name).type:
            raise InvalidArgumentError(f"join column {name!r} has types {left.schema.field(name).type} and "
                                       f"{right.schema.field(name).type}")
    # partition columns are constant within a task: anywhere in the key, they keep its order
    return [c for c in on if c in partition_by] + orders[0]


# -- distributed compaction (mergetree's tables and Apache Paimon's) ---------------------------

JOURNAL_PREFIX = ".mergetree-compact-"


def compact(spark: Any, path: str, full: bool = False,
            storage_options: dict[str, Any] | None = None) -> Snapshot | None:
    """Compact a table with Spark: the driver plans every bucket's compaction, one task per
    bucket merges and rewrites its files (through `mapInArrow`), and the driver commits all
    results in one snapshot (`distributed_compaction`).  Returns the snapshot, or None if
    nothing needed compaction.  `storage_options` as for `Table.open` (by default, those this
    process opened it with)."""
    if not isinstance(full, bool):
        raise InvalidArgumentError(f"full must be True or False, not {full!r}")
    storage_options = job_storage_options(path, storage_options)
    directory = open_table(path, storage_options).directory
    path = directory.path  # absolute, or the URI: what every task opens

    def reopen() -> TableDirectory:
        return open_table(path, storage_options).directory
    return distributed_compaction(spark, directory, reopen, full)


def compact_paimon(spark: Any, warehouse: str, table: str, full: bool = False,
                   storage_options: dict[str, Any] | None = None) -> int | None:
    """Compact an Apache Paimon primary-key table with Spark, as `compact` compacts mergetree's
    tables (`distributed_compaction`: Paimon's universal-compaction rules, or one sorted run per
    bucket with `full=True`; deletion-vector tables as Java's lookup compaction does), committed
    as one Paimon ``COMPACT`` snapshot published by the store's conditional create (a store
    without one refuses before any task runs).  Returns its id, or None when there was nothing
    to do.  The warehouse is a local directory or a URI (``s3://lake/warehouse``, ...) with
    `storage_options` as `mergetree.paimon.compact` takes them (by default, those this process
    opened the location with, else the environment's)."""
    if not isinstance(full, bool):
        raise InvalidArgumentError(f"full must be True or False, not {full!r}")
    storage_options = job_storage_options(str(warehouse), storage_options)
    opened = PaimonTable.open(warehouse, table, storage_options)
    directory = paimon_directory(opened)
    table_path, table_name, schema_id = opened.path, opened.name, directory.schema.schema_id

    def reopen() -> TableDirectory:
        # the table's store with the job's options, before any plan's file is read (a pickled
        # Paimon table finds this store by its path)
        task_table = PaimonTable(table_path, table_name, storage=locate(table_path, storage_options, "a Paimon table"))
        return paimon_directory(task_table, task_table.schema(schema_id))
    snapshot = distributed_compaction(spark, directory, reopen, full)
    return None if snapshot is None else snapshot.id


def distributed_compaction(spark: Any, directory: TableDirectory, reopen: Callable[[], TableDirectory],
                           full: bool) -> Snapshot | None:
    """The one distributed compaction, of any table's format: the driver plans every bucket
    (`plan_units`, refusing before any task runs what the format does not let the engine
    commit), one task per bucket carries out its unit (`execute_unit`, on the directory
    `reopen` gives the task), the driver commits all of them in one snapshot.

    Each task gets only its own bucket's unit.  If any task fails, every file any task wrote is
    removed and the first task's error is raised on the driver (with the executor's traceback as
    its cause); nothing is committed.  Tasks journal each new file before they create it
    (`table.journal`, under a hidden prefix of the table), so files of a task whose process
    died, or of a retried or speculative attempt, are removed too."""
    base, units = plan_units(directory, None, full)
    if base is None or not units:
        return None
    storage = directory.storage
    prefix = f"{JOURNAL_PREFIX}{uuid.uuid4().hex}"
    shipped = Shipped(spark, units)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_directory = reopen()
        task_units = shipped.value
        for batch in batches:
            for i in batch.column("unit").to_pylist():
                unit = task_units[i]
                journal = Journal(task_directory.storage, f"{prefix}/unit-{i}-{uuid.uuid4().hex}")
                indexes: list[str] = []
                try:
                    with journaling(journal):
                        adds, deletes = execute_unit(task_directory, unit, None, indexes)
                    result: dict = {"adds": [e.to_json("ADD") for e in adds],
                                    "deletes": [e.file.file_name for e in deletes],
                                    "state": task_directory.store.task_state(indexes), "journal": journal.lines}
                except Exception as exc:  # reported, not raised: the driver removes every task's files
                    result = {"error": _portable(exc), "message": "".join(traceback.format_exception(exc)),
                              "where": f"partition {unit.key[0]} bucket {unit.key[1]}", "journal": journal.lines}
                yield pa.record_batch({"unit": pa.array([i], pa.int32()),
                                       "result": pa.array([pickle.dumps(result)], pa.binary())})

    journaled: list[str] = []
    kept: list[str] = []
    new_files: list[str] = []  # the results' new data files (not moved ones): what a published commit holds
    try:
        try:
            rows = unit_frame(spark, len(units)).mapInArrow(run, "unit int, result binary").collect()
        finally:
            shipped.release()
            journaled = list(dict.fromkeys(read_journals(storage, prefix)))  # every file any task attempt created
        results = [pickle.loads(r["result"]) for r in sorted(rows, key=lambda r: r["unit"])]
        failed = [r for r in results if "error" in r]
        if failed:
            _raise_task_failure(failed[0], "compacting", directory.described, len(failed), len(results))
        kept = [line for r in results for line in r["journal"]]
        mine = set(kept)
        directory.store.remove_journaled([line for line in journaled if line not in mine])  # other attempts'
        live = directory.live_files(base)
        shipped_adds = [FileEntry.from_json(e) for r in results for e in r["adds"]]
        new_files = [e.file.file_name for e in shipped_adds if e.file.file_name not in live]
        for r in results:
            directory.store.adopt_task_state(r["state"])
        adds = directory.received(shipped_adds, base)
        deletes = [live[name] for r in results for name in r["deletes"]]
        with rewrite_transaction(directory, base.id) as rewrite:
            rewrite.replace(deletes, adds)
            return rewrite.commit()
    except BaseException:
        _remove_task_files(directory, journaled, kept, new_files)
        raise
    finally:
        remove_journal(storage, prefix)


def _remove_task_files(directory: TableDirectory, journaled: list[str], kept: list[str],
                       new_files: list[str]) -> None:
    """After a failed job: every file the tasks journaled — unless the commit may have been
    published all the same (it failed after publishing, or an object store's request went
    unanswered): the kept results' files stay when the latest snapshot holds one of their new
    data files, or when that cannot be told (the snapshot unreadable, or only files moved and
    index files written): orphan cleanup decides then, a published file is never deleted."""
    keep: set[str] = set()
    if kept:
        try:
            live = directory.live_files(directory.latest_snapshot()) if new_files else None
        except (MergeTreeError, OSError):
            live = None
        if live is None or any(name in live for name in new_files):
            keep = set(kept)
    directory.store.remove_journaled([line for line in journaled if line not in keep])


def _portable(exc: BaseException) -> bytes | None:
    """The exception pickled so that the driver can raise its type: as itself if it survives a
    round trip, else as (class, args, attributes) — an exception whose __init__ takes keyword-only
    arguments and defines no __reduce__ (mergetree's own errors do) does not unpickle by itself."""
    for payload in (exc, (type(exc), exc.args, dict(vars(exc)))):
        try:
            data = pickle.dumps(payload)
            if isinstance(_unpickled_error(data), BaseException):
                return data
        except Exception:
            continue
    return None


def _raise_task_failure(first: dict[str, Any], doing: str, subject: str, failed: int, tasks: int) -> NoReturn:
    """Raise the first failed task's error on the driver (its own type when it unpickles here),
    the executor's traceback as its cause (exception notes need Python 3.11): the task was
    `doing` its unit (`first["where"]`) of `subject`."""
    try:
        error = _unpickled_error(first["error"])
    except Exception:  # a class the driver cannot import
        error = None
    what = f"{doing} {first['where']} of {subject}"
    if error is None:
        error = MergeTreeError(f"{what} failed in a Spark task: {first['message'].strip().splitlines()[-1]}")
    raise error from MergeTreeError(
        f"in the Spark task {what} ({failed} of {tasks} tasks failed; every file they wrote was removed, "
        f"nothing was committed):\n{first['message']}")


def _unpickled_error(data: bytes | None) -> BaseException | None:
    if data is None:
        return None
    value = pickle.loads(data)
    if isinstance(value, tuple):
        cls, args, attributes = value
        value = cls.__new__(cls, *args)  # BaseException.__new__ sets args; __init__ is not run
        value.args = args
        value.__dict__.update(attributes)
    return value if isinstance(value, BaseException) else None


# -- Iceberg rewrites ---------------------------------------------------------------------------

def iceberg_writer(spark: Any) -> Writer:
    """A writer for `mergetree.iceberg.rewrite`: one Spark task per partition reads its scan
    tasks (delete files applied) and writes its files with the table's metadata and FileIO
    properties (no catalog is opened on an executor); the driver gets their DataFiles and makes
    the commits.  A failed task: every file any task wrote is removed and its error raised on
    the driver, nothing committed.  Files of a task attempt whose process died are never
    referenced (Iceberg's orphan-file cleaning removes them)."""
    def write(table: Any, jobs: list[Job], tier: str, options: Any) -> Generator[list[Any], None, None]:
        units = [(j, p) for j, job in enumerate(jobs) for p in range(len(job))]
        if not units:
            return
        metadata = table.iceberg.metadata
        io_properties, location = dict(table.iceberg.io.properties), metadata.location
        shipped = Shipped(spark, (metadata, [jobs[j][part] for j, part in units]))  # (partition, its scan tasks)

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from pyiceberg.io import load_file_io
            task_metadata, task_units = shipped.value
            io = load_file_io(io_properties, location)
            for batch in batches:
                for i in batch.column("unit").to_pylist():
                    partition, tasks = task_units[i]
                    try:
                        result: dict = {"files": write_files(task_metadata, io, tasks, tier, options)}
                    except Exception as exc:  # reported, not raised: the driver removes every task's files
                        result = {"error": _portable(exc), "message": "".join(traceback.format_exception(exc)),
                                  "where": f"partition {partition!r}"}
                    yield pa.record_batch({"unit": pa.array([i], pa.int32()),
                                           "result": pa.array([pickle.dumps(result)], pa.binary())})
        try:
            rows = unit_frame(spark, len(units)).mapInArrow(run, "unit int, result binary").collect()
        finally:
            shipped.release()
        results = {r["unit"]: pickle.loads(r["result"]) for r in rows}
        per_job: list[list[Any]] = [[] for _ in jobs]
        for i, (j, _) in enumerate(units):
            per_job[j] += results.get(i, {}).get("files", [])
        failed = [results[i] for i in sorted(results) if "error" in results[i]]
        if failed or len(results) != len(units):
            remove_files(table.iceberg.io, [f.file_path for files in per_job for f in files])
            first: dict[str, Any] = failed[0] if failed else {"error": None, "message": "a task returned no result",
                                                              "where": "?"}
            _raise_task_failure(first, "rewriting", table.path, len(failed), len(units))
        given = 0
        try:
            for files in per_job:
                given += 1  # from here on the rewrite owns this job's files (it removes them if not committed)
                yield files
        finally:
            remove_files(table.iceberg.io, [f.file_path for files in per_job[given:] for f in files])
    return write


# -- distributed optimize -------------------------------------------------------------------

_KEY = "__mergetree_curve_key"
_SAMPLE_ROWS = 100_000


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(payload: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(payload)).read_all()


def optimize(spark: Any, path: str, order: str | list[str] | None = None, strategy: str | None = None,
             filter: Any = None, target_file_size: int | None = None,
             sort_within: str | list[str] | None = None,
             storage_options: dict[str, Any] | None = None) -> Snapshot | IcebergRewrite | None:
    """`Table.optimize` as a Spark job.  The driver stores the layout, samples the clustering
    columns of the selected files for rank boundaries and cuts each (partition, bucket) into key
    ranges of about one output file each; one task per input file computes every row's curve
    key and sends its rows, range by range, as Arrow IPC (so no value passes through Spark's own
    types); after a shuffle by (group, range) one task per range sorts and writes its files; the
    driver commits once.  A primary-key table gets a distributed full compaction.  The commit is
    recorded in the optimizer history, as `Table.optimize`'s is.  `storage_options` as for
    `Table.open` (by default, those this process opened it with).

    An Iceberg table (``iceberg://CATALOG/NAMESPACE.TABLE``): `IcebergTable.optimize` with its
    files written by the executors (`iceberg_writer`) and its commits made by the driver, one
    per task of partitions, each checked against the table's current snapshot; returns its
    `IcebergRewrite`."""
    if is_iceberg_location(path):
        if filter is not None or target_file_size is not None:
            raise InvalidArgumentError("an Iceberg table is rewritten partition by partition, at its own "
                                       "write.target-file-size-bytes: filter and target_file_size are not taken")
        iceberg = open_iceberg(path, storage_options)
        return iceberg.optimize(order=order, strategy=strategy, sort_within=sort_within, writer=iceberg_writer(spark))
    started = time.perf_counter()
    storage_options = job_storage_options(path, storage_options)
    table = open_table(path, storage_options)
    path = table.path  # absolute, or the URI: what every task opens
    directory, options = prepare_layout(table.directory, order, strategy, target_file_size, sort_within)
    if options is None:
        snapshot = compact(spark, path, full=True, storage_options=storage_options)
    elif directory.schema.has_primary_key:  # a deletion-vector table's clustering runs on the driver
        snapshot = optimize_locally(directory, options, flt.normalize(filter, directory.schema.schema), None)
    else:
        base = directory.latest_snapshot()
        if base is None:
            return None
        plan = plan_read(directory, flt.normalize(filter, directory.schema.schema), base.id)
        groups = [(b.partition, b.bucket, b.files) for b in plan.buckets if b.files]
        snapshot = _rewrite_groups(spark, path, directory, options, base, groups, storage_options)
    if snapshot is not None:
        record_rewrite(open_table(path, storage_options).directory, snapshot, "optimize",
                       time.perf_counter() - started)
    return snapshot


def _rewrite_groups(spark: Any, path: str, directory: Any, options: Any, base: Snapshot,
                    groups: list[tuple[tuple, int, list]],
                    storage_options: dict[str, Any] | None) -> Snapshot | None:
    """Lay out these files of each (partition, bucket) by the options' layout, in one commit;
    the new files are marked as laid out for it (a "major" pass of the background optimizer)."""
    if not groups:
        return None
    clustering = options.clustering
    columns = list(clustering.columns) if clustering is not None else []
    boundaries = _sample_boundaries(directory, [f for _, _, files in groups for f in files], columns)
    splitters = []
    for _, _, files in groups:
        ranges = max(1, round(sum(f.file_size for f in files) / max(options.target_file_size, 1) * 2))
        splitters.append(_splitters(directory, files, columns, clustering, boundaries, ranges))
    units = [(g, i) for g, (_, _, files) in enumerate(groups) for i in range(len(files))]
    mark = {"tier": "major", "layout": layout_signature(options)}  # as the background optimizer marks it
    # as `rewrite_files` writes them: at the level that says "laid out" (a Paimon table's top
    # level), a Paimon table's files cut at their size on disk, estimated from the files replaced
    level = directory.store.clustered_level(options)
    disks = [sum(f.file_size for f in files) / max(sum(f.row_count for f in files), 1) for _, _, files in groups]
    if clustering is not None and clustering.tree is not None:
        raise InvalidArgumentError("a qdtree layout is rewritten by Table.optimize or the optimizer daemon "
                                   "(mergetree optimize-daemon); the Spark job lays out curves and linear orders")
    file_schema = directory.schema.file_schema
    shipped = Shipped(spark, (groups, splitters, boundaries))

    def keyed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_groups, task_splitters, task_boundaries = shipped.value
        storage = open_table(path, storage_options).directory.storage
        for batch in batches:
            for g, i in zip(batch.column("group").to_pylist(), batch.column("unit").to_pylist()):
                meta = task_groups[g][2][i]
                pieces = list(read_data_file(storage, meta))
                # the file's own nullability may differ from the schema's (a column Spark called not null)
                rows = pa.Table.from_batches(pieces).cast(file_schema) if pieces else file_schema.empty_table()
                keys = _keys(rows, columns, clustering, task_boundaries)
                ranges = np.searchsorted(task_splitters[g], keys, side="right") if len(task_splitters[g]) else \
                    np.zeros(rows.num_rows, dtype=np.int64)
                rows = rows.append_column(_KEY, pa.array(keys, pa.uint64()))
                for r in np.unique(ranges):
                    piece = rows.filter(pa.array(ranges == r))
                    yield pa.record_batch({"group": pa.array([g], pa.int32()), "range": pa.array([int(r)], pa.int32()),
                                           "payload": pa.array([_ipc(piece)], pa.binary())})

    def written(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_groups = shipped.value[0]
        task_directory = open_table(path, storage_options).directory
        pieces: dict[tuple[int, int], list[pa.Table]] = {}
        for batch in batches:
            for g, r, payload in zip(batch.column("group").to_pylist(), batch.column("range").to_pylist(),
                                     batch.column("payload").to_pylist()):
                pieces.setdefault((g, r), []).append(_from_ipc(payload))
        with new_files(task_directory) as entries:
            for (g, _), parts in sorted(pieces.items()):
                partition, bucket, _ = task_groups[g]
                rows = pa.concat_tables(parts)
                if clustering is not None and clustering.strategy == "linear":
                    order_ = cluster_order(rows, columns, "linear")
                else:
                    order_ = np.argsort(rows.column(_KEY).to_numpy(), kind="stable")
                rows = rows.take(pa.array(order_)).drop_columns([_KEY])
                entries += [marked(e, mark) for e in write_clustered(task_directory, options, partition, bucket, rows,
                                                                     level, disks[g])]
        yield pa.record_batch({"adds": [json.dumps([e.to_json("ADD") for e in entries])]})

    tasks = spark.sparkContext.parallelize(units, max(1, min(len(units), 64)))
    shuffled = (spark.createDataFrame(tasks, "group int, unit int").mapInArrow(keyed, "group int, range int, "
                                                                                        "payload binary")
                .repartition(max(1, sum(len(s) + 1 for s in splitters)), "group", "range"))
    try:
        results = shuffled.mapInArrow(written, "adds string").collect()
    finally:
        shipped.release()
    adds = directory.received([FileEntry.from_json(e) for r in results for e in json.loads(r["adds"])], base)
    with rewrite_transaction(directory, base.id) as rewrite:
        rewrite.replace([FileEntry(partition, bucket, f) for partition, bucket, files in groups for f in files], adds)
        return rewrite.commit()


def _sample_boundaries(directory, files, columns: list[str]) -> list[np.ndarray]:
    """Rank boundaries per clustering column from an even sample of the selected files."""
    if not columns:
        return []
    per_file = max(1, _SAMPLE_ROWS // max(len(files), 1))
    parts = []
    for meta in files:
        rows = pa.Table.from_batches(list(read_data_file(directory.storage, meta, columns)))
        step = max(1, rows.num_rows // per_file)
        parts.append(rows.take(pa.array(np.arange(0, rows.num_rows, step))))
    sample = pa.concat_tables(parts)
    return [rank_boundaries(sample.column(c), column=c) for c in columns]


def _keys(rows: pa.Table, columns: list[str], clustering, boundaries: list[np.ndarray]) -> np.ndarray:
    """Every row's position on the layout's curve, comparable across tasks (fixed rank spans).
    For a linear layout: the first column's rank (rows are sorted exactly within a range)."""
    if clustering is None:
        return np.zeros(rows.num_rows, dtype=np.uint64)
    if clustering.tree is not None:  # a qd-tree: its leaves are the ranges, in leaf order
        return clustering.tree.route(rows).astype(np.uint64)
    ranks = [rank_ids(rows.column(c), b, column=c) for c, b in zip(columns, boundaries)]
    if clustering.strategy == "linear" or len(columns) == 1:
        return ranks[0].astype(np.uint64)
    spans = [(0, len(b) + 1) for b in boundaries]
    return curve_keys(ranks, clustering.strategy, spans)


def _splitters(directory, files, columns, clustering, boundaries, ranges: int) -> np.ndarray:
    """Key values that cut a group into `ranges` ranges of about equal rows (from a sample)."""
    if clustering is None or ranges <= 1:
        return np.zeros(0, dtype=np.uint64)
    per_file = max(1, _SAMPLE_ROWS // 10 // max(len(files), 1))
    parts = []
    for meta in files:
        rows = pa.Table.from_batches(list(read_data_file(directory.storage, meta, columns)))
        step = max(1, rows.num_rows // per_file)
        parts.append(rows.take(pa.array(np.arange(0, rows.num_rows, step))))
    keys = np.sort(_keys(pa.concat_tables(parts), columns, clustering, boundaries))
    cuts = keys[np.linspace(0, len(keys), ranges + 1)[1:-1].astype(np.int64).clip(0, len(keys) - 1)]
    return np.unique(cuts)


def optimize_pending(spark: Any, paths: str | list[str],
                     storage_options: dict[str, Any] | None = None) -> list[PassReport]:
    """One round of the background optimizer on each table (`organize.scheduler.run_once`, the
    daemon's round), with the major passes (laying out the data not yet optimized, once
    `optimize.major-threshold` of it waits) as Spark jobs, the minor passes (merging small new
    files) on the driver, and a primary-key table's compaction distributed.  Each pass is one
    commit, reported and recorded in the optimizer history as the daemon's are; an Iceberg
    table's passes (``iceberg://``) have their files written by the executors (`iceberg_writer`),
    through its catalog's FileIO properties.  `storage_options` as for `Table.open`, for every
    other table (by default, each with those this process opened it with)."""
    def rewrite_with(table_options: dict[str, Any] | None) -> Callable[..., Snapshot | None]:
        def rewrite(directory: Any, groups: dict, tier: str, progress: Any) -> Snapshot | None:
            base = directory.latest_snapshot()
            assert base is not None
            clustering = directory.options.clustering
            if tier == "major" and (clustering is None or clustering.tree is None):
                return _rewrite_groups(spark, directory.path, directory, directory.options, base,
                                       [(p, b, files) for (p, b), files in groups.items()], table_options)
            return rewrite_files(directory, directory.options, base, groups, tier, progress)
        return rewrite

    def compact_with(table_options: dict[str, Any] | None) -> Callable[[Table], Snapshot | None]:
        return lambda table: compact(spark, table.path, storage_options=table_options)

    reports: list[PassReport] = []
    for path in [paths] if isinstance(paths, str) else list(paths):
        if is_iceberg_location(path):  # its catalog's configuration says how to reach its files
            reports += run_once(path, iceberg_writer=iceberg_writer(spark))
            continue
        table_options = job_storage_options(path, storage_options)
        opened = open_table(path, table_options)  # the driver's store for the round's own opens
        reports += run_once(opened.path, rewrite=rewrite_with(table_options), compact=compact_with(table_options))
    return reports
