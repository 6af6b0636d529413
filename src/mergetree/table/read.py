"""The read path, shared by `Table.read`/`Table.scan`/`Table.plan` and the Spark data source:
plan which files a filtered read touches, then merge each bucket's sections on read."""
from __future__ import annotations

import itertools
import os
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..merge import merge
from ..merge.row_kind import retraction_kinds
from . import filters as flt
from .buckets import bucket_ids
from .compaction.planner import interval_partition
from .directory import TableDirectory
from .files import DataFileMeta, read_run
from .schema import KEY_PREFIX, KIND_COLUMN, SEQUENCE_COLUMN
from .snapshots import Snapshot

__all__ = ["BucketPlan", "PreparedRead", "ReadPlan", "plan_read", "prepare_read", "read_bucket", "read_table",
           "scan_table"]


@dataclass
class BucketPlan:
    """The files a read of one bucket touches, grouped into sections of overlapping key ranges."""

    partition: tuple
    bucket: int
    sections: list[list[list[DataFileMeta]]]  # section -> sorted runs -> files in key order

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for section in self.sections for run in section for f in run]


@dataclass
class ReadPlan:
    """Which files a read touches, and how many pruning ruled out."""

    snapshot_id: int | None
    buckets: list[BucketPlan] = field(default_factory=list)
    files_total: int = 0
    pruned_partitions: int = 0
    pruned_buckets: int = 0
    pruned_files: int = 0

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for b in self.buckets for f in b.files]


def snapshot_for(directory: TableDirectory, snapshot: Any) -> Snapshot | None:
    """The snapshot a read asks for (None: the latest)."""
    if snapshot is None:
        return directory.latest_snapshot()
    if isinstance(snapshot, bool) or not isinstance(snapshot, int):
        raise InvalidArgumentError(f"snapshot must be a snapshot id (an int), not {snapshot!r}")
    return directory.store.snapshot(snapshot)


def plan_read(directory: TableDirectory, f: flt.Filter, snapshot: Any) -> ReadPlan:
    """Which files a read with the (normalized) filter `f` touches, by bucket and section."""
    ts = directory.schema
    snap = snapshot_for(directory, snapshot)
    live = directory.live_files(snap)
    plan = ReadPlan(snap.id if snap else None, files_total=len(live))
    by_bucket: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    for e in live.values():
        by_bucket[(e.partition, e.bucket)].append(e.file)
    wanted_buckets = _buckets_for(directory, f)
    key_columns = set(ts.primary_key) | set(ts.partition_by)
    key_filter = flt.restrict(f, key_columns) if ts.has_primary_key else f
    partition_filter = flt.restrict(f, set(ts.partition_by))
    partitions_seen, partitions_kept = set(), set()
    for (partition, bucket), files in sorted(by_bucket.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        partitions_seen.add(partition)
        if not flt.may_match(partition_filter, {c: (v, v, int(v is None)) for c, v in zip(ts.partition_by, partition)},
                             1):
            plan.pruned_files += len(files)
            continue
        partitions_kept.add(partition)
        if wanted_buckets is not None and bucket not in wanted_buckets:
            plan.pruned_buckets += 1
            plan.pruned_files += len(files)
            continue
        kept = [m for m in files if flt.may_match(key_filter, m.stats, m.row_count)]
        sections = interval_partition(kept) if ts.has_primary_key else [[[m] for m in kept]]
        final = []
        for section in sections:
            if (len(section) == 1 and len(section[0]) == 1) or not ts.has_primary_key:
                # nothing overlaps this file: its rows are final, value statistics may prune it
                section = [[m for m in run if flt.may_match(f, m.stats, m.row_count)] for run in section]
                section = [run for run in section if run]
            if section:
                final.append(section)
        plan.pruned_files += len(files) - sum(len(run) for s in final for run in s)
        if final:
            plan.buckets.append(BucketPlan(partition, bucket, final))
    plan.pruned_partitions = len(partitions_seen - partitions_kept)
    return plan


def _buckets_for(directory: TableDirectory, f: flt.Filter) -> set[int] | None:
    """Buckets that can hold matching rows, from = / IN on every bucket-key column."""
    ts = directory.schema
    if ts.buckets == 1 or not ts.bucket_key:
        return None
    choices = [flt.equality_values(f, c) for c in ts.bucket_key]
    if any(c is None for c in choices):
        return None
    combos = list(itertools.product(*choices))  # type: ignore[arg-type]
    if not combos:
        return set()
    if len(combos) > 10_000:
        return None
    probe = pa.table({c: pa.array([combo[i] for combo in combos], type=ts.schema.field(c).type)
                      for i, c in enumerate(ts.bucket_key)})
    return set(int(b) for b in bucket_ids(probe, list(ts.bucket_key), ts.buckets))


def columns_for(directory: TableDirectory, columns: Any) -> list[str]:
    """The columns a read asks for (None: all), checked."""
    names = directory.schema.schema.names
    if columns is None:
        return names
    if isinstance(columns, str):
        columns = [columns]
    if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
        raise InvalidArgumentError(f"columns must be a column name or a list of names, not {columns!r}")
    for c in columns:
        if c not in names:
            raise InvalidArgumentError(f"table has no column {c!r}; columns: {names}")
    if len(set(columns)) != len(columns):
        raise InvalidArgumentError(f"columns names a column twice: {list(columns)}")
    return list(columns)


@dataclass(frozen=True)
class PreparedRead:
    """A checked read request: the columns and their schema, the filter as rows see it
    (`expression`) and as each data file's key columns see it (`file_filter`), the plan."""

    columns: list[str]
    output_schema: pa.Schema
    expression: pc.Expression | None
    file_filter: pc.Expression | None
    plan: ReadPlan


def prepare_read(directory: TableDirectory, columns: Any, filter: flt.Filter, snapshot: Any) -> PreparedRead:
    schema = directory.schema.schema
    names = columns_for(directory, columns)
    f = flt.normalize(filter, schema)
    return PreparedRead(names, pa.schema([schema.field(c) for c in names]), flt.to_expression(f, schema),
                        file_filter(directory, f), plan_read(directory, f, snapshot))


def file_filter(directory: TableDirectory, f: flt.Filter) -> pc.Expression | None:
    """Key predicates hold for every version of a key, so they may filter rows inside each
    file before the merge (and skip row groups by their statistics)."""
    ts = directory.schema
    key_filter = flt.restrict(f, set(ts.primary_key)) if ts.has_primary_key else None
    if key_filter is None:
        return None
    return flt.to_expression(flt.rename(key_filter, {k: KEY_PREFIX + k for k in ts.primary_key}), ts.file_schema)


def read_bucket(directory: TableDirectory, bucket: BucketPlan, columns: list[str],
                expression: pc.Expression | None, key_filter: pc.Expression | None) -> Iterator[pa.RecordBatch]:
    """One bucket's merged rows (in key order), filtered, in the given columns."""
    out_schema = pa.schema([directory.schema.schema.field(c) for c in columns])
    for section in bucket.sections:
        for batch in _read_section(directory, section, key_filter):
            table = pa.Table.from_batches([batch])
            if expression is not None:
                table = table.filter(expression)
            for out in table.select(columns).to_batches():
                if out.num_rows:
                    yield pa.RecordBatch.from_arrays(out.columns, schema=out_schema)


def _read_section(directory: TableDirectory, section: list[list[DataFileMeta]],
                  key_filter: pc.Expression | None) -> Iterator[pa.RecordBatch]:
    """The merged rows of one section, in table columns, retractions dropped."""
    ts = directory.schema
    if not ts.has_primary_key:
        for run in section:
            yield from read_run(directory.path, run)
        return
    names = ts.schema.names
    if len(section) == 1:  # one sorted run: rows are final; only retractions go
        for batch in read_run(directory.path, section[0], row_filter=key_filter):
            keep = pc.invert(pc.is_in(batch.column(KIND_COLUMN), retraction_kinds()))
            yield batch.filter(keep).select(names)
        return
    runs = [read_run(directory.path, run, row_filter=key_filter) for run in section]
    reader = merge(runs, ts.file_key, sequence=SEQUENCE_COLUMN, kind=KIND_COLUMN, engine=ts.merge_engine,
                   aggregations=directory.options.aggregations or None)
    for batch in reader:
        yield ts.restore_key_columns(batch).select(names)


def read_table(directory: TableDirectory, read: PreparedRead, threads: int | None) -> pa.Table:
    """Every bucket of the plan, read in `threads` threads (default: one per CPU; the merge and
    Parquet decoding run without the GIL, so they overlap), bucket after bucket."""
    buckets = read.plan.buckets

    def one(b: BucketPlan) -> list[pa.RecordBatch]:
        return list(read_bucket(directory, b, read.columns, read.expression, read.file_filter))
    workers = threads or os.cpu_count() or 1
    if workers > 1 and len(buckets) > 1:
        with ThreadPoolExecutor(max_workers=min(workers, len(buckets))) as pool:
            batches = [batch for part in pool.map(one, buckets) for batch in part]
    else:
        batches = [batch for b in buckets for batch in one(b)]
    return pa.Table.from_batches(batches, schema=read.output_schema)


def scan_table(directory: TableDirectory, read: PreparedRead) -> pa.RecordBatchReader:
    """A streaming read: one bucket section at a time."""
    batches = (batch for b in read.plan.buckets
               for batch in read_bucket(directory, b, read.columns, read.expression, read.file_filter))
    return pa.RecordBatchReader.from_batches(read.output_schema, batches)
