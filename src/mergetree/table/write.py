"""The write path, shared by `Table.write`/`Table.delete` and the Spark writer: check and
convert the input, split it by (partition, bucket), sort and fold each bucket's rows with the
merge engine, write level-0 files, commit.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CommitConflictError, CompactionConflictError, InvalidArgumentError, SchemaMismatchError
from ..merge import RowKind, merge
from ..merge.arrow_input import check_batch, is_implicit_cast, sort_indices
from .buckets import bucket_ids
from .commit import COMMIT_RETRIES, backoff, commit_with_rebase, next_sequences
from .compaction.runner import compact_buckets
from .directory import TableDirectory
from .files import write_sorted_run
from .qdtree import layout_order
from .schema import KIND_COLUMN, SEQUENCE_COLUMN, TableSchema
from .snapshots import FileEntry, Snapshot

__all__ = ["BucketKey", "as_table", "conform", "flush_buckets", "split_by_bucket", "write_rows"]

BucketKey = tuple[tuple, int]  # (partition values, bucket)


def as_table(data: Any, schema: pa.Schema) -> pa.Table:
    """Arrow data as it is; pandas and plain Python data converted straight to the table's
    types (they carry no Arrow types of their own), value by value."""
    try:
        if isinstance(data, pa.Table):
            return data
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
        if isinstance(data, pa.RecordBatchReader):
            return data.read_all()
        if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
            names = [str(c) for c in data.columns]
            return pa.Table.from_pandas(data, schema=_known(schema, names), preserve_index=False)
        if hasattr(data, "__arrow_c_stream__"):
            return pa.RecordBatchReader.from_stream(data).read_all()
        if isinstance(data, dict):
            return pa.table(data, schema=_known(schema, [str(k) for k in data]))
        if isinstance(data, list) and not data:
            return _known(schema, schema.names).empty_table()
        if isinstance(data, list) and all(isinstance(row, dict) for row in data):
            names = list(dict.fromkeys(str(k) for row in data for k in row))
            return pa.Table.from_pylist(data, schema=_known(schema, names))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
            OverflowError) as exc:
        raise SchemaMismatchError(f"the data does not fit the table's columns: {exc}") from None
    raise InvalidArgumentError(f"cannot write {type(data).__name__}; give a pyarrow Table, RecordBatch, "
                               f"RecordBatchReader, an Arrow stream, a pandas DataFrame, a dict of columns "
                               f"or a list of row dicts")


def _known(schema: pa.Schema, names: list[str]) -> pa.Schema:
    """The table's fields for these names (nullable); names the table lacks are an error."""
    extra = [n for n in names if n not in schema.names]
    if extra:
        raise SchemaMismatchError(f"the data has column(s) {extra} that the table lacks")
    return pa.schema([schema.field(n).with_nullable(True) for n in names])


def conform(directory: TableDirectory, data: Any, complete: bool) -> pa.Table:
    """The input as a pa.Table of the table's schema, or a clear error (nothing written).
    Arrow columns are cast only within a kind of value and only when every value survives
    (`is_implicit_cast`); Python and pandas values are converted to the table's types value
    by value.  Strings never become numbers, numbers never strings.  `complete=False` (a
    delete) needs only the primary-key columns."""
    schema = directory.schema.schema
    table = as_table(data, schema)
    check_batch(table, "the data")
    pk = directory.schema.primary_key
    missing = [n for n in schema.names if n not in table.column_names and (complete or n in pk)]
    if missing:
        raise SchemaMismatchError(f"the data lacks column(s) {missing} of table {directory.path}")
    extra = [n for n in table.column_names if n not in schema.names]
    if extra:
        raise SchemaMismatchError(f"the data has column(s) {extra} that table {directory.path} lacks")
    if len(set(table.column_names)) != len(table.column_names):
        raise SchemaMismatchError(f"the data repeats a column: {table.column_names}")
    columns = []
    for f in schema:
        if f.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if col.type != f.type:
            if not is_implicit_cast(col.type, f.type):
                raise SchemaMismatchError(
                    f"column {f.name!r} is {col.type}, table {directory.path} has {f.type}; mergetree casts "
                    f"only within a kind of value (numbers to numbers, strings to strings, ...) and "
                    f"never parses or formats: cast the column yourself")
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(
                    f"column {f.name!r} is {col.type} and cannot be safely cast to {f.type}: {exc}") from None
        if f.name in pk and col.null_count:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise SchemaMismatchError(f"primary-key column {f.name!r} is null at row {row}")
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in schema]))


def split_by_bucket(directory: TableDirectory, table: pa.Table) -> dict[BucketKey, pa.Table]:
    """Rows by (partition values, bucket), each in input order (one stable sort, then slices)."""
    ts = directory.schema
    if not ts.partition_by and ts.buckets == 1:
        return {((), 0): table}
    buckets = np.zeros(table.num_rows, dtype=np.int64)
    if ts.buckets > 1:
        buckets = bucket_ids(table, list(ts.bucket_key), ts.buckets).astype(np.int64)
    keys = [buckets]
    dictionaries = []
    for name in ts.partition_by:
        encoded = table.column(name).combine_chunks().dictionary_encode()
        null_code = len(encoded.dictionary)
        keys.append(encoded.indices.fill_null(null_code).to_numpy().astype(np.int64))
        dictionaries.append((null_code, encoded.dictionary))
    order = np.lexsort(keys[::-1])  # stable: rows keep input order inside a group
    ordered = table.take(pa.array(order))
    sorted_keys = [k[order] for k in keys]
    change = np.zeros(len(order), dtype=bool)
    change[0] = True
    for k in sorted_keys:
        change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], len(order))
    out = {}
    for start, end in zip(starts, ends):
        values = tuple(None if k[start] == null_code else dictionary[int(k[start])].as_py()
                       for k, (null_code, dictionary) in zip(sorted_keys[1:], dictionaries))
        out[(values, int(sorted_keys[0][start]))] = ordered.slice(start, end - start)
    return out


def flush_buckets(directory: TableDirectory, groups: dict[BucketKey, pa.Table], kind: RowKind,
                  next_seq: dict[BucketKey, int]) -> list[FileEntry]:
    """Write every (partition, bucket) group of a write buffer as level-0 files, in parallel
    threads (sorting and Parquet encoding run without the GIL).  Each group's rows take the
    next sequence numbers of their bucket (`next_seq` is advanced).  On failure the files
    already written are removed."""
    jobs = []
    for key, rows in groups.items():
        first = next_seq.get(key, 0)
        next_seq[key] = first + rows.num_rows
        jobs.append((key, rows, first))
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers <= 1:
        written: list[FileEntry] = []
        try:
            for key, rows, first in jobs:
                written += _flush(directory, key, rows, first, kind)
        except BaseException:
            directory.discard(written)
            raise
        return written
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_flush, directory, key, rows, first, kind) for key, rows, first in jobs]
    done = [f.result() for f in futures if f.exception() is None]
    failed = [f.exception() for f in futures if f.exception() is not None]
    if failed:
        directory.discard([e for entries in done for e in entries])
        raise failed[0]  # type: ignore[misc]
    return [e for entries in done for e in entries]


def _flush(directory: TableDirectory, key: BucketKey, rows: pa.Table, first: int, kind: RowKind) -> list[FileEntry]:
    """Sort and fold one bucket's buffered rows (sequence numbers from `first`) into level-0 files."""
    ts = directory.schema
    options = directory.options
    partition, bucket = key
    relative = directory.bucket_directory(partition, bucket)
    sorted_by: tuple[str, ...] = ()
    if ts.has_primary_key:
        physical = _physical(rows, ts, np.arange(first, first + rows.num_rows, dtype=np.int64), kind)
        rows = _fold(directory, physical)
    elif options.sort_within:  # an append table's in-file order (Top-N reads stop early)
        rows = rows.take(sort_indices(rows, [(c, "ascending") for c in options.sort_within], "at_start"))
        sorted_by = options.sort_within
    elif options.clustering is not None:  # each write is clustered within itself; optimize goes across files
        clustering = options.clustering
        rows = rows.take(pa.array(layout_order(rows, clustering.columns, clustering.strategy, clustering.tree)))
    files = write_sorted_run(directory.path, relative, rows, ts, 0, options, sorted_by)
    return [FileEntry(partition, bucket, f) for f in files]


def _physical(rows: pa.Table, ts: TableSchema, seq: np.ndarray, kind: RowKind) -> pa.Table:
    """The data-file layout: _KEY_ columns, sequence, kind, then the table columns."""
    columns = [rows.column(k) for k in ts.primary_key]
    columns += [pa.array(seq, pa.int64()), pa.array(np.full(len(seq), int(kind), dtype=np.int8))]
    columns += rows.columns
    return pa.Table.from_arrays(columns, schema=ts.file_schema)


def _fold(directory: TableDirectory, physical: pa.Table) -> pa.Table:
    """Sort by key and fold repeated keys with the merge engine, keeping retractions."""
    ts = directory.schema
    order = pc.sort_indices(physical, [(k, "ascending") for k in ts.file_key] + [(SEQUENCE_COLUMN, "ascending")])
    ordered = physical.take(order)
    occurrence = _occurrence(ordered, ts.file_key)
    if occurrence.max(initial=0) == 0:
        return ordered
    # the i-th version of every key forms run i: each run is strictly ascending
    runs = [ordered.filter(pa.array(occurrence == i)) for i in range(int(occurrence.max()) + 1)]
    folded = merge(runs, ts.file_key, sequence=SEQUENCE_COLUMN, kind=KIND_COLUMN, engine=ts.merge_engine,
                   aggregations=directory.options.aggregations or None, keep_deletes=True).read_all()
    return ts.restore_key_columns(folded)


def _occurrence(ordered: pa.Table, key: list[str]) -> np.ndarray:
    """For rows sorted by key: 0 for a key's first row, 1 for its second, ..."""
    n = ordered.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    same = np.ones(n - 1, dtype=bool)
    for k in key:
        col = ordered.column(k)
        same &= pc.equal(col.slice(1), col.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    group_start = np.repeat(starts, np.diff(np.append(starts, n)))
    return np.arange(n) - group_start


def _rows_per_buffer(table: pa.Table, buffer_bytes: int) -> int:
    per_row = max(table.nbytes / max(table.num_rows, 1), 1.0)
    return max(int(buffer_bytes / per_row), 1)


def write_rows(directory: TableDirectory, table: pa.Table, kind: RowKind) -> Snapshot | None:
    """Write conformed rows (upserts, or deletes with `RowKind.DELETE`) in one commit, then
    compact the touched buckets unless the table is write-only."""
    if table.num_rows == 0:
        return None
    buffer_rows = _rows_per_buffer(table, directory.options.write_buffer_size)
    for attempt in range(COMMIT_RETRIES):
        base = directory.latest_snapshot()
        next_seq = next_sequences(directory.live_files(base).values())
        first_seq = dict(next_seq)
        adds: list[FileEntry] = []
        try:
            for start in range(0, table.num_rows, buffer_rows):
                groups = split_by_bucket(directory, table.slice(start, buffer_rows))
                for key in groups:
                    first_seq.setdefault(key, next_seq.get(key, 0))
                adds += flush_buckets(directory, groups, kind, next_seq)
            snapshot = commit_with_rebase(directory, base, adds, [], "APPEND",
                                          _keep_sequences(directory, adds, first_seq))
        except CommitConflictError:
            # another write took our buckets' sequence numbers: redo on top of it
            directory.discard(adds)
            backoff(attempt)
            continue
        except BaseException:
            directory.discard(adds)
            raise
        if directory.schema.has_primary_key and not directory.options.write_only:
            try:
                compact_buckets(directory, {(e.partition, e.bucket) for e in adds}, full=False)
            except CompactionConflictError:
                pass  # another process compacted these files first; the write is committed
        return snapshot
    raise CommitConflictError(f"gave up after {COMMIT_RETRIES} conflicting commits on {directory.path}")


def _keep_sequences(directory: TableDirectory, adds: list[FileEntry], first_seq: dict[BucketKey, int]):
    """A write may commit on top of a newer snapshot as long as no other write gave our
    buckets newer sequence numbers (compactions never do)."""
    touched = {(e.partition, e.bucket) for e in adds}

    def rebase(latest: Snapshot | None) -> list[FileEntry]:
        newer = next_sequences(directory.live_files(latest).values())
        if any(newer.get(b, 0) > first_seq.get(b, 0) for b in touched):
            raise CommitConflictError("another write committed to the same buckets")
        return []
    return rebase
