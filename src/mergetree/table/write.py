"""The write path, shared by `Table.write`/`Table.delete` and the Spark writer: check and
convert the input, split it by (partition, bucket), sort and fold each bucket's rows with the
merge engine, write level-0 files, commit.
"""
from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import (
    CommittedWarning,
    CompactionConflictError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedPaimonFeatureError,
)
from ..merge import ROW_KIND_COLUMN, RowKind, kinds_of, merge
from ..merge.arrow_input import check_batch, is_implicit_cast, sort_indices
from .changes import PRODUCER_PROPERTY, producers
from .commit import Change, Renumbering, commit_with_rebase, next_sequences
from .compaction.runner import compact_buckets
from .directory import TableDirectory
from .files import write_sorted_run
from .levers.qdtree import layout_order
from .schema import KIND_COLUMN, SEQUENCE_COLUMN, TableSchema
from .sequence_fields import ORDER_COLUMN, ranked
from .snapshots import FileEntry, Snapshot, canonical_partition
from .text_values import column_array

__all__ = ["BucketKey", "Written", "check_columns", "commit_spilled", "commit_write", "conform", "conformed",
           "flush_buckets", "input_pieces", "key_image", "new_columns", "occurrence", "overwritten", "spill",
           "split_by_bucket", "write_buffers", "write_rows"]

BucketKey = tuple[tuple, int]  # (partition values, bucket)


_BAD_DATA = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError)


def _is_stream(data: Any) -> bool:
    if isinstance(data, (pa.RecordBatchReader, Iterator)):
        return True
    if isinstance(data, (list, tuple)) and data and all(isinstance(p, (pa.RecordBatch, pa.Table)) for p in data):
        return True
    return (hasattr(data, "__arrow_c_stream__") and not isinstance(data, (pa.Table, pa.RecordBatch))
            and type(data).__module__.split(".")[0] != "pandas")


def _in_memory(data: Any, schema: pa.Schema) -> pa.Table:
    try:
        if isinstance(data, pa.Table):
            return data
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
        if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
            names = [str(c) for c in data.columns]
            return pa.Table.from_pandas(data, schema=_known(schema, names), preserve_index=False)
        if isinstance(data, dict):
            known = _known(schema, [str(k) for k in data])
            try:
                return pa.table(data, schema=known)
            except _BAD_DATA:  # text for dates and decimals is read; else the error names column and row
                return pa.table([column_array(f.name, data[f.name], f.type) for f in known], schema=known)
        if isinstance(data, list) and not data:
            return _known(schema, schema.names).empty_table()
        if isinstance(data, list) and all(isinstance(row, dict) for row in data):
            names = list(dict.fromkeys(str(k) for row in data for k in row))
            known = _known(schema, names)
            try:
                return pa.Table.from_pylist(data, schema=known)
            except _BAD_DATA:
                return pa.table([column_array(f.name, [row.get(f.name) for row in data], f.type) for f in known],
                                schema=known)
    except SchemaMismatchError:
        raise
    except _BAD_DATA as exc:
        raise SchemaMismatchError(f"the data does not fit the table's columns: {exc}") from None
    raise InvalidArgumentError(f"cannot write {type(data).__name__}; give a pyarrow Table, RecordBatch, "
                               f"RecordBatchReader, an Arrow stream, an iterator of RecordBatches or Tables, a "
                               f"pandas DataFrame, a dict of columns or a list of row dicts")


def input_pieces(data: Any, schema: pa.Schema) -> Iterator[pa.Table]:
    """The input as tables, one batch at a time for a stream (a RecordBatchReader, any object
    with `__arrow_c_stream__`, an iterator or list of RecordBatches/Tables — an iterator may
    also yield pandas DataFrames or dicts of columns); in-memory data as one table."""
    if not _is_stream(data):
        yield _in_memory(data, schema)
        return
    if isinstance(data, pa.RecordBatchReader) or not isinstance(data, (Iterator, list, tuple)):
        try:
            reader = data if isinstance(data, pa.RecordBatchReader) else pa.RecordBatchReader.from_stream(data)
        except _BAD_DATA as exc:
            raise InvalidArgumentError(f"cannot read the Arrow stream: {exc}") from None
        # the stream's schema is checked before any of its batches is read
        yield reader.schema.empty_table()
        items: Iterator[Any] = iter(reader)
    else:
        items = iter(data)
    index = 0
    while True:
        try:
            item = next(items)
        except StopIteration:
            return
        except _BAD_DATA as exc:
            raise InvalidArgumentError(f"reading the input failed after {index} batch(es): {exc}") from None
        index += 1
        yield _in_memory(item, schema)


def new_columns(data: Any, schema: pa.Schema, ignored: set[str]) -> tuple[Any, list[pa.Field]]:
    """The columns `data` has that `schema` lacks (outside `ignored`), as the data types them,
    and the data to write in its place: a stream re-wrapped once its schema is read, an
    iterator with its first item put back."""
    def schema_of(item: Any) -> pa.Schema:
        if isinstance(item, (pa.Table, pa.RecordBatch)):
            return item.schema
        try:
            if type(item).__module__.split(".")[0] == "pandas" and hasattr(item, "columns"):
                return pa.Schema.from_pandas(item, preserve_index=False)
            if isinstance(item, dict):
                return pa.table(item).schema
            if isinstance(item, list) and item and all(isinstance(row, dict) for row in item):
                return pa.Table.from_pylist(item).schema
        except _BAD_DATA as exc:
            raise SchemaMismatchError(f"the data's columns cannot be typed: {exc}") from None
        return pa.schema([])  # nothing to add; the write names what is wrong with it

    if not _is_stream(data):
        found = schema_of(data)
    elif isinstance(data, pa.RecordBatchReader) or not isinstance(data, (Iterator, list, tuple)):
        try:
            data = data if isinstance(data, pa.RecordBatchReader) else pa.RecordBatchReader.from_stream(data)
        except _BAD_DATA as exc:
            raise InvalidArgumentError(f"cannot read the Arrow stream: {exc}") from None
        found = data.schema
    elif isinstance(data, (list, tuple)):
        found = schema_of(data[0])
    else:
        first = next(data, None)
        if first is None:
            return iter(()), []
        data = itertools.chain([first], data)
        found = schema_of(first)
    return data, [f for f in found if f.name not in schema.names and f.name not in ignored]


def _known(schema: pa.Schema, names: list[str]) -> pa.Schema:
    """The table's fields for these names (nullable); names the table lacks are an error."""
    extra = [n for n in names if n not in schema.names]
    if extra:
        raise SchemaMismatchError(f"the data has column(s) {extra} that the table lacks")
    return pa.schema([schema.field(n).with_nullable(True) for n in names])


def _first_lossy_row(column: pa.ChunkedArray | pa.Array, target: pa.DataType) -> int | None:
    """The first row whose value a cast to `target` changes (found on the error path only: an
    unsafe cast and back, compared), or None where that cannot be told."""
    try:
        back = column.cast(target, safe=False).cast(column.type, safe=False)
        changed = pc.fill_null(pc.not_equal(back, column), False)
        rows = np.flatnonzero(changed.to_numpy(zero_copy_only=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return int(rows[0]) if len(rows) else None


def conformed(directory: TableDirectory, data: Any, complete: bool,
              row_kind_column: str | None = None) -> Iterator[pa.Table]:
    """The input piece by piece (a stream batch by batch), each conformed to the table's
    schema; an error names the row counted from the start of the input.  `complete` False:
    deletes by key (only the key's columns needed), each row a -D.

    A piece holding a row-kind column (`row_kind_column`, by default `_row_kind`: +I, -U, +U,
    -D or Debezium's c, r, u, d) is a change stream — as is every piece of a table whose option
    names a column of its own for the kinds (Paimon's ``rowkind.field``): its kinds ride along as
    the file layout's kind column, and each row is applied as what it is (an upsert, a
    retraction, a delete), or refused before anything is written where the table cannot apply
    it (`_applied_kinds`)."""
    rows = 0
    name = row_kind_column or ROW_KIND_COLUMN
    columns = directory.schema.schema.names
    stored = directory.options.row_kind_field
    with_kinds: bool | None = None  # the first piece decides; every later one must agree
    for piece in input_pieces(data, directory.schema.schema):
        kinds = None
        kind_column = None  # a column of the table that also gives each row's kind
        if not complete:  # deletes by key: every row a -D, whatever kind column comes along
            if name in piece.column_names and name not in columns:
                piece = piece.drop_columns([name])
        elif name in piece.column_names and name not in columns:
            kinds = _row_kinds(directory, piece.column(name), name, rows)
            piece = piece.drop_columns([name])
        elif row_kind_column is not None and name in piece.column_names:
            kind_column = name  # the table's own column (a Paimon table's `rowkind.field`)
        elif row_kind_column is not None or with_kinds:
            raise SchemaMismatchError(f"the data lacks the row-kind column {name!r}"
                                      + (f" from row {rows} on" if rows else ""))
        elif stored is not None and stored in piece.column_names:
            kind_column = stored
        if with_kinds is False and kinds is not None:
            raise SchemaMismatchError(f"the data has a row-kind column {name!r} from row {rows} on, not before")
        with_kinds = kinds is not None
        out = conform(directory, piece, complete, first_row=rows)
        if not complete:
            kinds = np.full(out.num_rows, RowKind.DELETE, dtype=np.int8)
        elif kind_column is not None:
            kinds = _row_kinds(directory, out.column(kind_column), kind_column, rows)
        if kinds is not None:
            out, kinds = _applied_kinds(directory, out, kinds, rows)
        rows += piece.num_rows
        if kinds is not None and directory.schema.has_primary_key:  # an append table's rows are all inserts
            out = out.append_column(pa.field(KIND_COLUMN, pa.int8()), pa.array(kinds, pa.int8()))
        yield out


_RETRACTABLE = frozenset({"sum", "product", "last_value", "last_non_null_value"})


def _applied_kinds(directory: TableDirectory, rows: pa.Table, kinds: np.ndarray,
                   first_row: int) -> tuple[pa.Table, np.ndarray]:
    """A change stream's rows as the table applies them: retractions dropped where the table
    ignores deletes; refused, nothing written, where the table's merge function refuses them
    (first-row, partial-update, an aggregate function that cannot retract), as Java does."""
    ts, options = directory.schema, directory.options
    retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
    if not ts.has_primary_key and (kinds != RowKind.INSERT).any():
        row = first_row + int(np.flatnonzero(kinds != RowKind.INSERT)[0])
        raise UnsupportedPaimonFeatureError(
            f"row {row} is a {RowKind(int(kinds[row - first_row])).symbol} row, but {directory.described} is "
            f"an append table: it takes inserts (+I) only, as Paimon's append writer does; nothing was written")
    if not retract.any() or not ts.has_primary_key:
        return rows, kinds
    if options.ignore_delete:
        keep = ~retract
        return rows.filter(pa.array(keep)), kinds[keep]
    row = first_row + int(np.flatnonzero(retract)[0])
    if ts.merge_engine in ("first-row", "partial-update"):
        raise UnsupportedPaimonFeatureError(
            f"row {row} is a retraction (-U, -D), which {directory.described} ({ts.merge_engine}) cannot take "
            f"unless 'ignore-delete' is set, as Paimon refuses them; nothing was written")
    if ts.merge_engine == "aggregate":
        bad = sorted(c for c, fn in options.aggregations.items() if fn not in _RETRACTABLE)
        if bad:
            raise UnsupportedPaimonFeatureError(
                f"row {row} is a retraction (-U, -D), but {directory.described} aggregates column(s) {bad} "
                f"with functions that cannot retract a value; nothing was written")
    return rows, kinds


def _row_kinds(directory: TableDirectory, column: pa.ChunkedArray, name: str, first_row: int) -> np.ndarray:
    """A piece's row kinds (`kinds_of`), checked against what the table can apply."""
    try:
        kinds = kinds_of(column, name)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{exc} (counting from row {first_row} of the input)" if first_row else
                                   str(exc)) from None
    return kinds  # what the table can apply of them: `_applied_kinds`


def conform(directory: TableDirectory, table: pa.Table, complete: bool, first_row: int = 0) -> pa.Table:
    """A piece of the input (from `input_pieces`) as a pa.Table of the table's schema, or a
    clear error (nothing written).
    Arrow columns are cast only within a kind of value and only when every value survives
    (`is_implicit_cast`); Python and pandas values are converted to the table's types value
    by value.  Strings never become numbers, numbers never strings.  `complete=False` (a
    delete) needs only the primary-key columns."""
    schema = directory.schema.schema
    check_batch(table, "the data" if not first_row else f"the data from row {first_row}")
    pk = directory.schema.primary_key
    # a delete needs every column that finds its key: the primary key and the partition (a
    # Paimon table's primary key, as its files hold it, leaves the partition columns out)
    keys = (*pk, *(c for c in directory.schema.partition_by if c not in pk)) if pk else ()
    check_columns(table.column_names, schema.names, keys, complete, directory.described)
    columns = []
    for f in schema:
        if f.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if col.type != f.type:
            if not is_implicit_cast(col.type, f.type):
                raise SchemaMismatchError(
                    f"column {f.name!r} is {col.type}, {directory.described} has {f.type}; mergetree casts "
                    f"only within a kind of value (numbers to numbers, strings to strings, ...) and "
                    f"never parses or formats: cast the column yourself")
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                row = _first_lossy_row(col, f.type)
                where = "" if row is None else f", row {first_row + row}: {col[row].as_py()!r} does not fit"
                raise SchemaMismatchError(
                    f"column {f.name!r} is {col.type} and cannot be safely cast to {f.type}{where} ({exc})") from None
        if f.name in directory.schema.partition_by and pa.types.is_floating(f.type):
            # -0.0 and 0.0 are one partition value (SQL's equality; Spark normalizes them too)
            col = pc.if_else(pc.equal(col, pa.scalar(0.0, f.type)), pa.scalar(0.0, f.type), col)
        if f.name in pk and col.null_count:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise SchemaMismatchError(f"primary-key column {f.name!r} is null at row {first_row + row}")
        if not f.nullable and (complete or f.name in keys) and col.null_count:  # a delete carries only keys
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise SchemaMismatchError(f"column {f.name!r} of {directory.described} is NOT NULL; the data holds a "
                                      f"null at row {first_row + row}")
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in schema]))


def check_columns(given: list[str], names: list[str], key: Iterable[str], complete: bool, table: str) -> None:
    """The data's columns against a table's: none missing (`complete=False`, a delete: only the
    key's), none the table lacks, none twice; SchemaMismatchError naming them otherwise."""
    keys = set(key)
    missing = [n for n in names if n not in given and (complete or n in keys)]
    if missing:
        raise SchemaMismatchError(f"the data lacks column(s) {missing} of {table}")
    extra = [n for n in given if n not in names]
    if extra:
        raise SchemaMismatchError(f"the data has column(s) {extra} that {table} lacks")
    if len(set(given)) != len(given):
        raise SchemaMismatchError(f"the data repeats a column: {given}")


# engines whose fold of one write's versions of a key is a pick (a write has one row kind)
_PICK = {"deduplicate": "last", "first-row": "first"}


def split_by_bucket(directory: TableDirectory, table: pa.Table, every_version: bool = False
                    ) -> dict[BucketKey, pa.Table]:
    """Rows by (partition values, bucket) with one stable sort and one take: in input order,
    or, in a primary-key table, by primary key (input order among equal keys) — and where the
    engine keeps one version of a key (deduplicate: the last, first-row: the first), only that
    version is taken (`every_version`: all of them, for an input changelog).  Spilling then
    needs no second sort, and the buffer is copied once."""
    ts = directory.schema
    if table.num_rows == 0:
        return {}
    keys = []
    dictionaries = []
    many = ts.buckets > 1 or (ts.buckets == -1 and ts.has_primary_key)  # -1: dynamic buckets
    if many:
        keys.append(directory.bucket_ids(table).astype(np.int64))
    for name in ts.partition_by:
        encoded = table.column(name).combine_chunks().dictionary_encode()
        null_code = len(encoded.dictionary)
        keys.append(encoded.indices.fill_null(null_code).to_numpy().astype(np.int64))
        dictionaries.append((null_code, encoded.dictionary))
    if not keys and not ts.has_primary_key:
        return {((), 0): table}
    group = keys[0] if len(keys) == 1 else np.zeros(table.num_rows, dtype=np.int64)
    for k in keys if len(keys) > 1 else ():  # one dense group number per (bucket, partition values)
        group = np.unique(group * (int(k.max(initial=0)) + 1) + k, return_inverse=True)[1].astype(np.int64)
    if ts.has_primary_key:
        # with sequence fields the surviving version is the one they rank newest (`_fold`), not a pick
        pick = None if every_version or directory.options.sequence_fields else _PICK.get(ts.merge_engine)
        order = _key_order(table, group, list(ts.primary_key), pick)
    else:
        order = np.argsort(group, kind="stable")
    ordered = table.take(pa.array(order))
    del table
    if not keys:
        return {((), 0): ordered}
    sorted_group = group[order]
    del group
    starts = np.flatnonzero(np.concatenate([[True], sorted_group[1:] != sorted_group[:-1]]))
    ends = np.append(starts[1:], len(sorted_group))
    first_rows = order[starts]  # each group's first row, in input positions
    del order, sorted_group
    bucket_at = 1 if many else 0
    out = {}
    for start, end, row in zip(starts, ends, first_rows):
        values = tuple(None if k[row] == null_code else dictionary[int(k[row])].as_py()
                       for k, (null_code, dictionary) in zip(keys[bucket_at:], dictionaries))
        bucket = int(keys[0][row]) if many else 0
        out[(canonical_partition(values), bucket)] = ordered.slice(start, end - start)
    return out


_SIGN = np.uint64(1 << 63)
_NAN_IMAGE = np.uint64(0xFFF8000000000000)


def key_image(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A primary-key column as the merge core orders and compares it: a float column becomes
    unsigned integers in its total order (-0.0 before 0.0, every NaN equal and last), where
    Arrow's sort and `equal` would call -0.0 and 0.0 the same key; other columns as they are."""
    if not pa.types.is_floating(column.type):
        return column
    values = np.asarray(column.to_numpy(), dtype=np.float64)  # key columns hold no nulls
    bits = values.view(np.uint64)
    image = np.where(bits & _SIGN, ~bits, bits | _SIGN)
    image[np.isnan(values)] = _NAN_IMAGE
    return pa.array(image)


def _same_as_previous(columns: list) -> np.ndarray:
    """For rows 1..n-1: whether every column equals the row before (n-1 booleans)."""
    n = len(columns[0])
    same = np.ones(max(n - 1, 0), dtype=bool)
    for col in columns:
        same &= pc.equal(col.slice(1), col.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    return same


def _key_order(table: pa.Table, group: np.ndarray, key: list[str], pick: str | None) -> np.ndarray:
    """Row positions by (group, key), stable; with `pick`, only each key's last (or first) row."""
    if len(key) == 1:
        fast = _integer_key_order(group, table.column(key[0]), pick)
        if fast is not None:
            return fast
    by = pa.table([pa.array(group)] + [key_image(table.column(k)) for k in key], names=["group"] + key)
    order = np.asarray(sort_indices(by, [(c, "ascending") for c in by.column_names], "at_end")).view(np.int64)
    if pick is None or len(order) < 2:
        return order
    same = _same_as_previous([col.take(pa.array(order)) for col in by.columns])
    keep = np.concatenate([~same, [True]]) if pick == "last" else np.concatenate([[True], ~same])
    return order[keep]


def _integer_key_order(group: np.ndarray, column: pa.ChunkedArray, pick: str | None) -> np.ndarray | None:
    """`_key_order` for one integer key column (no nulls: key columns hold none), a quarter of
    the time of Arrow's stable sort (a merge sort, the largest cost of a write): each row's
    (group, key, position) packed into one int64 is unique, so numpy's unstable sort gives the
    stable order.  None when the pack would overflow (a key range times rows past 2^63)."""
    if not pa.types.is_integer(column.type) or column.null_count:
        return None
    n = len(column)
    if n < 2:
        return np.arange(n, dtype=np.int64)
    keys = column.to_numpy()
    low, high = int(keys.min()), int(keys.max())
    groups = int(group.max()) + 1
    span = high - low + 1
    if high >= 2**63 or groups * span * n >= 2**63:
        return None
    packed = group * span
    packed += keys.astype(np.int64) - np.int64(low)  # in [0, span): wraps back into range if it must
    packed *= n
    packed += np.arange(n, dtype=np.int64)
    packed.sort()
    order = packed % n
    if pick is None:
        return order
    same = (packed[1:] // n) == (packed[:-1] // n)
    keep = np.concatenate([~same, [True]]) if pick == "last" else np.concatenate([[True], ~same])
    return order[keep]


def flush_buckets(directory: TableDirectory, groups: dict[BucketKey, pa.Table], kind: RowKind,
                  next_seq: dict[BucketKey, int], fresh: int = 0, changelog: bool = False) -> list[FileEntry]:
    """Write every (partition, bucket) group of a write buffer (from `split_by_bucket`) as
    level-0 files, in parallel threads (folding and Parquet encoding run without the GIL).
    Each group's rows take the next sequence numbers of their bucket (`next_seq` is advanced;
    a bucket it lacks starts at `fresh`).  With `changelog`, each group's rows as they are (every
    version: `split_by_bucket(every_version=True)`) also become a changelog file, among the
    entries returned.  On failure the files already written are removed."""
    jobs = []
    for key, rows in groups.items():
        first = next_seq.get(key, fresh)
        next_seq[key] = first + rows.num_rows
        jobs.append((key, rows, first))
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers <= 1:
        written: list[FileEntry] = []
        try:
            for key, rows, first in jobs:
                written += _flush(directory, key, rows, first, kind, changelog)
        except BaseException:
            directory.discard(written)
            raise
        return written
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_flush, directory, key, rows, first, kind, changelog) for key, rows, first in jobs]
    done = [f.result() for f in futures if f.exception() is None]
    failed = [f.exception() for f in futures if f.exception() is not None]
    if failed:
        directory.discard([e for entries in done for e in entries])
        raise failed[0]  # type: ignore[misc]
    return [e for entries in done for e in entries]


def _flush(directory: TableDirectory, key: BucketKey, rows: pa.Table, first: int, kind: RowKind,
           changelog: bool = False) -> list[FileEntry]:
    """Fold one bucket's buffered rows (sorted by key; sequence numbers from `first`) into
    level-0 files; with `changelog`, the rows as written into a changelog file first."""
    ts = directory.schema
    options = directory.options
    partition, bucket = key
    relative = directory.bucket_directory(partition, bucket)
    sorted_by: tuple[str, ...] = ()
    logged: list[FileEntry] = []
    physical = _physical(rows, ts, np.arange(first, first + rows.num_rows, dtype=np.int64), kind) \
        if ts.has_primary_key else rows
    if changelog:  # the rows as written, every version of a key
        logged = [FileEntry(partition, bucket, m) for m in producers.write_changelog(directory, partition, bucket,
                                                                                      physical)]
    if ts.has_primary_key:
        # deduplicate and first-row kept one version per key already (`split_by_bucket`), unless
        # every version was kept for the changelog
        picked = ts.merge_engine in _PICK and not changelog and not options.sequence_fields
        rows = physical if picked else _fold(directory, physical)
    elif options.sort_within:  # an append table's in-file order (Top-N reads stop early)
        rows = rows.take(sort_indices(rows, [(c, "ascending") for c in options.sort_within], "at_start"))
        sorted_by = options.sort_within
    elif options.clustering is not None:  # each write is clustered within itself; optimize goes across files
        clustering = options.clustering
        rows = rows.take(pa.array(layout_order(rows, clustering.columns, clustering.strategy, clustering.tree)))
    try:
        files = write_sorted_run(directory.opener(partition, bucket, 0, relative, sorted_by), rows, ts, options,
                                 directory.remove_written)
    except BaseException:
        directory.discard(logged)
        raise
    if not ts.has_primary_key:
        # an append file records its rows' sequence numbers (Java orders files by them)
        numbered = []
        for f in files:
            numbered.append(replace(f, min_seq=first, max_seq=first + f.row_count - 1))
            first += f.row_count
        files = numbered
    return logged + [FileEntry(partition, bucket, f) for f in files]


def _physical(rows: pa.Table, ts: TableSchema, seq: np.ndarray, kind: RowKind) -> pa.Table:
    """The data-file layout: _KEY_ columns, sequence, kind, then the table columns.  Rows of a
    change stream carry their own kinds (`conformed`), which take the place of `kind`."""
    if KIND_COLUMN in rows.column_names:
        kinds = rows.column(KIND_COLUMN)
        rows = rows.drop_columns([KIND_COLUMN])
    else:
        kinds = pa.array(np.full(len(seq), int(kind), dtype=np.int8))
    columns = [rows.column(k) for k in ts.primary_key]
    columns += [pa.array(seq, pa.int64()), kinds]
    columns += rows.columns
    return pa.Table.from_arrays(columns, schema=ts.file_schema)


def _fold(directory: TableDirectory, physical: pa.Table) -> pa.Table:
    """Fold repeated keys of rows sorted by key (then sequence) with the merge engine,
    keeping retractions; where the table has sequence fields, a key's versions are ordered by
    them (then by sequence number), as Paimon's write buffer orders them."""
    ts = directory.schema
    options = directory.options
    nth = occurrence(physical, ts.file_key)
    if nth.max(initial=0) == 0:
        return physical
    # the i-th version of every key forms run i: each run is strictly ascending
    runs = [physical.filter(pa.array(nth == i)) for i in range(int(nth.max()) + 1)]
    sequence = SEQUENCE_COLUMN
    if options.sequence_fields:
        schema = physical.schema.append(pa.field(ORDER_COLUMN, pa.int64(), nullable=False))
        runs = [pa.Table.from_batches(batches, schema=schema) for batches in
                ranked([r.to_batches() for r in runs], options.sequence_fields, options.sequence_descending)]
        sequence = ORDER_COLUMN
    folded = merge(runs, ts.file_key, sequence=sequence, kind=KIND_COLUMN, engine=ts.merge_engine,
                   aggregations=options.aggregations or None, keep_deletes=True).read_all()
    if sequence == ORDER_COLUMN:
        folded = folded.drop_columns([ORDER_COLUMN])
    return ts.restore_key_columns(folded)


def occurrence(ordered: pa.Table, key: list[str]) -> np.ndarray:
    """For rows sorted by key: 0 for a key's first row, 1 for its second, ..."""
    n = ordered.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    same = _same_as_previous([key_image(ordered.column(k)) for k in key])
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    group_start = np.repeat(starts, np.diff(np.append(starts, n)))
    return np.arange(n) - group_start


def write_buffers(pieces: Iterable[pa.Table], buffer_bytes: int) -> Iterator[pa.Table]:
    """Group conformed pieces into write buffers of about `buffer_bytes` of Arrow memory
    (a piece larger than the room left is sliced, without copying)."""
    held: list[pa.Table] = []
    size = 0.0
    for piece in pieces:
        per_row = max(piece.nbytes / max(piece.num_rows, 1), 1.0)
        start = 0
        while start < piece.num_rows:
            part = piece.slice(start, max(int((buffer_bytes - size) / per_row), 1))
            start += part.num_rows
            held.append(part)
            size += part.num_rows * per_row
            if size >= buffer_bytes:
                size = 0.0
                yield _contiguous(held)
    if held:
        yield _contiguous(held)


def _contiguous(held: list[pa.Table]) -> pa.Table:
    """The held pieces as one table of single-chunk columns, the pieces let go: sorting a
    contiguous buffer is faster, and a take across chunks would concatenate them anyway
    (the buffer's memory then peaks at two copies, not three)."""
    return pa.concat_tables(_drain(held)).combine_chunks()


def _drain(items: list) -> list:
    out = items[:]
    items.clear()
    return out


def spill(directory: TableDirectory, pieces: Iterable[pa.Table], kind: RowKind,
          next_seq: dict[BucketKey, int], fresh: int = 0, changelog: bool = False) -> Iterator[list[FileEntry]]:
    """Conformed rows through the write buffer: each full buffer is split by bucket, sorted,
    folded and written as level-0 files, whose entries are yielded (the caller owns them:
    it commits them or discards them).  Sequence numbers continue from `next_seq` (`fresh`
    for buckets it lacks).  `changelog`: the rows as written go to changelog files too (the
    input changelog producer), among the entries yielded (`commit_write` tells them apart)."""
    # a third of write-buffer-size holds input rows: making them contiguous, sorting them and
    # their sorted copy take the rest (measured: `tests/test_streaming_write.py`)
    for buffer in write_buffers(pieces, max(directory.options.write_buffer_size // 3, 1)):
        groups = split_by_bucket(directory, buffer, every_version=changelog)
        del buffer  # the sorted copy in `groups` is all a spill needs
        files = flush_buckets(directory, groups, kind, next_seq, fresh, changelog)
        del groups  # not held while the next buffer fills
        yield files


Replaced = Callable[[tuple], bool]  # partition values -> whether an overwrite replaces that partition


def overwritten(directory: TableDirectory, overwrite: Any) -> Callable[[Iterable[tuple]], Replaced] | None:
    """What an overwrite replaces, given the partitions the write holds (known once the input is
    read): `overwrite` True — every partition the data holds where the table is partitioned
    (and, on a Paimon table, ``dynamic-partition-overwrite`` is not false), else the whole
    table; a partition (column -> value, some or all partition columns) — that partition, and
    every row must be in it.  None: no overwrite.  The mapping's columns are checked now."""
    if overwrite is False or overwrite is None:
        return None
    keys = list(directory.schema.partition_by)
    if overwrite is True:
        dynamic = str(directory.schema.options.get("dynamic-partition-overwrite", "true")).strip().lower() != "false"
        if keys and dynamic:
            return lambda written: set(written).__contains__
        return lambda written: lambda partition: True
    if not isinstance(overwrite, Mapping):
        raise InvalidArgumentError(f"overwrite must be True, False or a partition (column -> value), not {overwrite!r}")
    unknown = [c for c in overwrite if c not in keys]
    if unknown:
        raise InvalidArgumentError(f"overwrite names {unknown}, which are not partition columns of table "
                                   f"{directory.described} (its partition columns: {keys})")
    fixed = {keys.index(c): v for c, v in overwrite.items()}

    def inside(partition: tuple) -> bool:
        return all(partition[i] == v for i, v in fixed.items())

    def static(written: Iterable[tuple]) -> Callable[[tuple], bool]:
        outside = [p for p in written if not inside(p)]
        if outside:
            raise InvalidArgumentError(f"overwrite of partition {dict(overwrite)} of {directory.described}: the data "
                                       f"holds rows of partition {dict(zip(keys, outside[0]))}; nothing was written")
        return inside
    return static


def commit_write(directory: TableDirectory, adds: list[FileEntry], base: Snapshot | None,
                 properties: dict[str, str] | None = None,
                 check: Callable[[Snapshot | None], None] | None = None,
                 replaced: Callable[[tuple], bool] | None = None) -> Snapshot:
    """Commit new level-0 files, renumbered after whatever newer writes committed first, with
    the changelog files the table's `changelog-producer` asks for (a lookup changelog is
    written again on the newer snapshot after a lost race: the previous rows may have moved).
    `check(snapshot)` runs before each attempt on the snapshot it commits on, and raises to
    give up (a streaming sink's "already committed?", decided on exactly that snapshot).
    `replaced`: an overwrite, deleting the live files of the partitions it says, as they are
    at the snapshot it commits on (an OVERWRITE snapshot, without a changelog)."""
    producer = directory.options.changelog_producer
    if producer == "lookup":
        producer = "none"  # the lookup changelog comes with the compaction (`produces_changelog`)
    logged = [e for e in adds if directory.is_changelog(e.file.file_name)]
    adds = [e for e in adds if not directory.is_changelog(e.file.file_name)]
    if logged:  # the input changelog the write made as it spilled (`spill(changelog=True)`)
        producer = "input"
    elif producer == "input":  # written without it (the option came later): no changelog to publish
        producer = "none"
    if replaced is not None or not adds:
        producer = "none"
        directory.discard(logged)
        logged = []
    renumbering = Renumbering(directory, adds)
    # the changelog of each attempt; only the last one's is committed
    written: list[list[FileEntry]] = [logged] if logged else []

    def change_for(latest: Snapshot | None) -> Change:
        if check is not None:
            check(latest)
        deletes = [] if replaced is None else \
            [e for e in directory.live_files(latest).values() if replaced(e.partition)]
        files = renumbering.on(latest, deletes)
        if producer == "lookup":
            if written:
                directory.discard(written.pop())  # computed on an older snapshot
            written.append(producers.changelog_for(directory, latest, files))
        return Change(files, deletes, written[-1] if written else [])
    recorded = properties if producer == "none" else {**(properties or {}), PRODUCER_PROPERTY: producer}
    try:
        snapshot = commit_with_rebase(directory, base, change_for, "APPEND" if replaced is None else "OVERWRITE",
                                      recorded)
    except BaseException:
        for changelog in written:
            directory.discard(changelog)
        renumbering.discard()
        raise
    renumbering.committed()
    return snapshot


def commit_spilled(directory: TableDirectory, files: list[FileEntry], base: Snapshot | None,
                   replacing: Callable[[Iterable[tuple]], Replaced] | None = None
                   ) -> tuple[Snapshot | None, list[FileEntry]]:
    """Commit a write's spilled files (its changelog files among them) on `base` — an overwrite
    of what `replacing` (`overwritten`) says, given the partitions written — and the data files
    committed.  Nothing to add and nothing to replace: no snapshot, the files removed."""
    data_files = [e for e in files if not directory.is_changelog(e.file.file_name)]
    replaced = None if replacing is None else replacing({e.partition for e in data_files})
    if not data_files and (replaced is None or not any(replaced(e.partition)
                                                       for e in directory.live_files(base).values())):
        directory.discard(files)
        return None, []
    return commit_write(directory, files, base, replaced=replaced), data_files


class Written(NamedTuple):
    """What `write_rows` committed: its last snapshot (None: nothing), the (partition, bucket)
    pairs it wrote and the rows its data files hold (a key's versions within a write buffer
    folded into one)."""

    snapshot: Snapshot | None
    touched: frozenset
    rows: int


def check_deletable(ts: TableSchema) -> None:
    """Refuse a delete by key where it would be refused or change nothing: an append table has
    no keys, a first-row table keeps a key's first version for good, an aggregate table folds a
    key-only delete into its aggregates (retracting nothing)."""
    if not ts.has_primary_key:
        raise InvalidArgumentError("an append table has no keys to delete by")
    if ts.merge_engine == "first-row":
        raise InvalidArgumentError("a first-row table keeps the first version of a key; it cannot delete")
    if ts.merge_engine == "aggregate":
        raise InvalidArgumentError(
            "an aggregate table folds a delete into its aggregates (a key-only delete would "
            "retract nothing); write compensating values instead")


def write_rows(directory: TableDirectory, data: Any, kind: RowKind, row_kind_column: str | None = None,
               overwrite: Any = False, compact: bool = True, one_commit: bool = False) -> Written:
    """Write rows (upserts, or deletes by key with `RowKind.DELETE`) from any input, a stream
    batch by batch: through the write buffer into level-0 files, committed once at the end
    (or every `write.commit-every-buffers` buffers; an overwrite once); then compact the touched
    buckets unless the table is write-only (or `compact` is False).  Rows with a row-kind
    column (`conformed`) are applied as their kinds say.  `overwrite` (`overwritten`) replaces
    partitions, or the whole table, in one OVERWRITE snapshot.  A bad batch or a failure
    anywhere removes the uncommitted files and raises: nothing of it is visible."""
    replacing = overwritten(directory, overwrite)
    directory.refuse_commit("APPEND" if replacing is None else "OVERWRITE")
    if kind == RowKind.DELETE:
        pieces = conformed(directory, data, complete=False)
    else:
        pieces = conformed(directory, data, complete=True, row_kind_column=row_kind_column)
    # (`one_commit`: all or nothing, whatever `write.commit-every-buffers` says: a delete, a migration)
    every = directory.options.commit_every_buffers if replacing is None and not one_commit else 0
    # rows as written, before any fold (an overwrite publishes none; an append table has none)
    as_written = directory.options.changelog_producer == "input" and replacing is None \
        and directory.schema.has_primary_key
    base = directory.latest_snapshot()
    next_seq = next_sequences(directory.live_files(base).values())
    pending: list[FileEntry] = []
    touched: set[BucketKey] = set()
    rows = 0
    snapshot = None

    def commit() -> Snapshot | None:
        nonlocal rows
        done, data_files = commit_spilled(directory, pending, base, replacing)
        touched.update((e.partition, e.bucket) for e in data_files)
        rows += sum(e.file.row_count for e in data_files)
        return done or snapshot
    try:
        for buffers, files in enumerate(spill(directory, pieces, kind, next_seq, changelog=as_written), start=1):
            pending += files
            if every and buffers % every == 0 and pending:
                snapshot = commit()
                base, pending = snapshot, []
        if pending or (replacing is not None and snapshot is None):
            snapshot = commit()
            pending = []
    finally:
        directory.discard(pending)  # what was not committed (on success: nothing)
    # (a format whose compaction the engine does not do yet leaves it to its caller)
    if compact and touched and directory.schema.has_primary_key and not directory.options.write_only \
            and directory.store.refuses("COMPACT") is None:
        try:
            compact_buckets(directory, touched, full=False, base=snapshot)
        except CompactionConflictError:
            pass  # another process compacted these files first; the write is committed
        except Exception as exc:  # committed: no failure now may read as a failed write (a retry would repeat it)
            warnings.warn(CommittedWarning(
                f"the write committed snapshot {snapshot.id if snapshot else '?'}, then compacting its buckets "
                f"failed ({type(exc).__name__}: {exc}); the rows are in the table, compact it later"),
                stacklevel=3)
    return Written(snapshot, frozenset(touched), rows)
