"""Running a planned read: every bucket in threads (spare threads split a bucket's merge by key
range), a Top-N read in the order of file statistics stopping once no unread file can beat the
limit-th row, a read that stops after `limit` rows, or a stream a section at a time."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from ..directory import TableDirectory
from .keyorder import key_ordered, sort_by_key
from .merged import read_bucket
from .model import BucketPlan, PreparedRead
from .point import read_points
from .topn import cannot_beat, final_units, in_reading_order, top_rows

__all__ = ["read_table", "scan_table"]

def read_table(directory: TableDirectory, read: PreparedRead, threads: int | None) -> pa.Table:
    """Every bucket of the plan, read in `threads` threads (default: one per CPU; the merge and
    Parquet decoding run without the GIL, so they overlap), bucket after bucket; or a point
    lookup through the files' page indexes (`point.read_points`); or a Top-N read; or a read
    that stops after `limit` rows; in key order (`read.in_key_order`), every section of the
    plan merged as a sorted run (`keyorder`)."""
    # a point lookup's rows are sorted afterwards, which needs their key columns
    point = read_points(directory, read) if not read.in_key_order or \
        set(directory.schema.primary_key) <= set(read.columns) else None
    if point is not None:
        out = sort_by_key(directory, point) if read.in_key_order else point
    elif read.in_key_order:
        out = pa.Table.from_batches(list(key_ordered(directory, read, threads)), schema=read.output_schema)
    elif read.order_by:
        out = _read_top_n(directory, read)
    elif read.limit is not None:
        out = _read_first(directory, read)
    else:
        out = _read_all(directory, read, threads)
    read.stats.rows_out = out.num_rows
    return out


def _read_top_n(directory: TableDirectory, read: PreparedRead) -> pa.Table:
    """Read files in the order of their best value in the first `order_by` column and stop
    once the `limit`-th row so far beats every unread file (files that could tie are read)."""
    column, direction = read.order_by[0]
    limit = read.limit
    must, optional = final_units(directory, read.plan, column)
    read_columns = list(dict.fromkeys(read.columns + [c for c, _ in read.order_by]))
    schema = pa.schema([directory.schema.schema.field(c) for c in read_columns])

    def rows_of(bucket: BucketPlan, section: list) -> pa.Table:
        return pa.Table.from_batches(list(read_bucket(directory, bucket, read_columns, read.expression,
                                                      read.file_filter, read.stats, [section],
                                                      final_filter=read.final_filter)), schema=schema)
    current = top_rows(pa.concat_tables([schema.empty_table()] + [rows_of(b, s) for b, s in must]),
                       read.order_by, limit)
    pending = in_reading_order(optional, column, direction)
    while pending:
        if limit is not None and current.num_rows >= limit:
            nth = current.column(column)[limit - 1].as_py() if limit else None
            # files come best first: once one cannot beat the limit-th row, no later one can
            if limit == 0 or cannot_beat(pending[0][1][0][0], column, direction, nth):
                read.plan.steps["top-n"].add([run[0][0] for _, run in pending])
                break
        bucket, run = pending.pop(0)
        current = top_rows(pa.concat_tables([current, rows_of(bucket, run)]), read.order_by, limit)
    return current.select(read.columns)


def _read_all(directory: TableDirectory, read: PreparedRead, threads: int | None) -> pa.Table:
    buckets = read.plan.buckets

    workers = threads or os.cpu_count() or 1
    # fewer buckets than threads: the spare threads split each bucket's merge by key range
    merge_threads = max(1, workers // max(1, len(buckets)))

    def one(b: BucketPlan) -> list[pa.RecordBatch]:
        return list(read_bucket(directory, b, read.columns, read.expression, read.file_filter, read.stats,
                                merge_threads=merge_threads, final_filter=read.final_filter))
    if workers > 1 and len(buckets) > 1:
        with ThreadPoolExecutor(max_workers=min(workers, len(buckets))) as pool:
            batches = [batch for part in pool.map(one, buckets) for batch in part]
    else:
        batches = [batch for b in buckets for batch in one(b)]
    return pa.Table.from_batches(batches, schema=read.output_schema)


def _read_first(directory: TableDirectory, read: PreparedRead) -> pa.Table:
    """The first `limit` rows in read order (bucket by bucket); stops reading there."""
    batches: list[pa.RecordBatch] = []
    rows = 0
    limit = read.limit or 0
    for b in read.plan.buckets:
        for section in b.sections:
            if rows >= limit:
                break
            for batch in read_bucket(directory, b, read.columns, read.expression, read.file_filter, read.stats,
                                     [section], final_filter=read.final_filter):
                batches.append(batch)
                rows += batch.num_rows
                if rows >= limit:
                    break
    return pa.Table.from_batches(batches, schema=read.output_schema).slice(0, limit)


def scan_table(directory: TableDirectory, read: PreparedRead) -> pa.RecordBatchReader:
    """A streaming read: one bucket section at a time (in key order: all sections merged)."""
    if read.in_key_order:
        return pa.RecordBatchReader.from_batches(read.output_schema, key_ordered(directory, read))
    if read.order_by or read.limit is not None:
        return pa.RecordBatchReader.from_batches(read.output_schema,
                                                 read_table(directory, read, None).to_batches())
    batches = (batch for b in read.plan.buckets
               for batch in read_bucket(directory, b, read.columns, read.expression, read.file_filter, read.stats,
                                        final_filter=read.final_filter))
    return pa.RecordBatchReader.from_batches(read.output_schema, batches)
