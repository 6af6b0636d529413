"""A read in primary-key order across buckets and partitions (`read(sorted=True)`): each bucket
section's merged rows are already in key order, so the sections of the whole plan are merged
by the loser tree as sorted runs, a batch at a time, never holding the table.  Sections of a
bucket whose key ranges follow one another are chained into one run, so the merge's width is
about the number of buckets (times the sections that overlap: files read alone with deletion
vectors), not the number of sections.  Each run decodes its next batch in a worker thread while
the merge works on the ones it has (Parquet decoding releases the GIL)."""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

import pyarrow as pa

from ...errors import InvalidArgumentError
from ...merge import merge
from ...merge.arrow_input import sort_indices
from ..directory import TableDirectory
from ..files import DataFileMeta
from .merged import read_bucket
from .model import BucketPlan, PreparedRead

__all__ = ["check_key_order", "key_ordered", "sort_by_key"]

Section = list[list[DataFileMeta]]


def check_key_order(directory: TableDirectory, sorted_: object, order_by: object) -> bool:
    """`sorted` checked: a bool, on a table with a primary key, not with `order_by`."""
    if not isinstance(sorted_, bool):
        raise InvalidArgumentError(f"sorted must be True or False, not {sorted_!r}")
    if not sorted_:
        return False
    if not directory.schema.has_primary_key:
        raise InvalidArgumentError("sorted=True gives rows in primary-key order, and this append table has no "
                                   "primary key: order it with order_by=[(column, 'asc')]")
    if order_by:
        raise InvalidArgumentError("sorted=True orders rows by the primary key and order_by by the columns it "
                                   "names: give one of them")
    return True


def chains(sections: Sequence[Section]) -> list[list[Section]]:
    """The sections as chains, each a list of sections whose key ranges follow one another
    (every key of one below every key of the next): a chain read section after section is in
    key order.  Sections go first-fit into the first chain they can follow."""
    def bounds(section: Section) -> tuple[tuple, tuple]:
        files = [m for run in section for m in run]
        return min(m.min_key for m in files), max(m.max_key for m in files)
    out: list[list[Section]] = []
    ends: list[tuple] = []
    for low, high, section in sorted(((*bounds(s), s) for s in sections), key=lambda t: (t[0], t[1])):
        for i, end in enumerate(ends):
            if end < low:
                out[i].append(section)
                ends[i] = high
                break
        else:
            out.append([section])
            ends.append(high)
    return out


def _read_ahead(run: Iterable[pa.RecordBatch], pool: Executor) -> Iterator[pa.RecordBatch]:
    """`run`'s batches, the next one decoded in `pool` while this one is merged (one request at
    a time per run: the run's iterator is never entered by two threads at once)."""
    batches = iter(run)
    pending = pool.submit(next, batches, None)
    while (batch := pending.result()) is not None:
        pending = pool.submit(next, batches, None)
        yield batch


def key_ordered(directory: TableDirectory, read: PreparedRead, threads: int | None = None) -> Iterator[pa.RecordBatch]:
    """The plan's rows in primary-key order (the key as declared, partition columns included),
    in `read.columns`, the first `read.limit` of them when it is set; the runs decode ahead in
    `threads` threads (default: one per CPU; 1: none)."""
    key = list(directory.schema.primary_key)
    columns = list(dict.fromkeys(read.columns + key))  # the merge compares keys: read them too

    def run(bucket: BucketPlan, chain: list[Section]) -> Iterator[pa.RecordBatch]:
        return read_bucket(directory, bucket, columns, read.expression, read.file_filter, read.stats, chain,
                           final_filter=read.final_filter)
    runs: list[Iterable[pa.RecordBatch]] = [run(b, chain) for b in read.plan.buckets for chain in chains(b.sections)]
    left = read.limit
    if not runs or left == 0:
        return
    workers = min(threads or os.cpu_count() or 1, len(runs))
    pool = ThreadPoolExecutor(workers, thread_name_prefix="sorted-read") if workers > 1 else None
    try:
        if pool is not None:
            runs = [_read_ahead(r, pool) for r in runs]
        for batch in merge(runs, key, engine="none"):
            if left is not None:
                batch = batch.slice(0, left)
                left -= batch.num_rows
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays([batch.column(c) for c in read.columns], schema=read.output_schema)
            if left == 0:
                return
    finally:
        if pool is not None:  # a stopped read: the batches being decoded are dropped
            pool.shutdown(wait=True, cancel_futures=True)


def sort_by_key(directory: TableDirectory, table: pa.Table) -> pa.Table:
    """A small result (a point lookup's rows) in primary-key order."""
    return table.take(sort_indices(table, [(k, "ascending") for k in directory.schema.primary_key], "at_start"))
