"""Writes into Apache Paimon tables — primary-key tables with fixed buckets, and append tables —
as Java's batch writers make them, so that every Paimon reader (Java, pypaimon, pypaimon-rust,
...) reads them.

A table `table.paimon.tables.engine_writes` accepts is written by the engine's write path
(`table.write.write_rows`, the one mergetree's own tables have: the input streamed through the
write buffer, a lost race renumbered by rewriting the level-0 files it must); the steps below
are this module's own writer, which the others (ORC, file indexes, external paths, thin-mode
files) still take, and which the engine's follows:

1. The input (any Arrow data `Table.write` takes; a row-kind column ``_row_kind``, the one
   named, or the table's ``rowkind.field``: +I, -U, +U, -D or Debezium's c/r/u/d) is conformed
   to the table's latest schema.  Retractions the engine cannot take are refused before
   anything is written, as Paimon's merge functions refuse them; under ``ignore-delete`` they
   are dropped; an append table takes inserts only.
2. Each row's partition, and its bucket by the table's bucket function over its bucket key
   (`codec.buckets`: exactly where Java places it; bucket 0 in a bucket-unaware append table).
3. Per (partition, bucket): sequence numbers continue from the largest any writer committed
   in that bucket, in input order (Java's restored writer does the same).  A primary-key
   table's rows are sorted by key and a key's versions in this write folded with the table's
   engine (a file holds a key once, its kind kept: a delete stays a ``-D`` row), then written
   as level-0 files (``data-<uuid>-0.<format>``, `_KEY_` columns, ``_SEQUENCE_NUMBER``,
   ``_VALUE_KIND``, the columns), rolled at target-file-size, with statistics under the
   table's stats modes; with ``changelog-producer`` input, every version also goes into
   ``changelog-`` files.  An append table's files hold its columns, in input order.
4. One ``APPEND`` snapshot (``OVERWRITE`` with `overwrite`: the replaced partitions' files
   deleted in it): a new manifest, manifest lists, ``snapshot-<N+1>`` by the store's
   conditional create, ``commitIdentifier`` Long.MAX_VALUE and a fresh commit user, as Java's
   batch writers commit.  A lost race is retried on top of the winner, unless the winner
   added files to a bucket this write numbered (their sequence numbers would interleave) or
   changed a partition it overwrites: then the write is redone on the new snapshot.
5. Unless ``write-only`` (or an append table), the touched buckets are compacted by Paimon's
   rules into a ``COMPACT`` snapshot — in deletion-vector and first-row tables the lookup
   compaction that makes level-0 rows visible to batch reads (not under ``lookup-compact``
   gentle).  The result says whether the rows are visible.

Refused by name, before anything is written: dynamic (-1), postpone (-2) and cross-partition
bucket modes of primary-key tables, thin-mode files, and tables whose commits carry duties
mergetree does not perform (Iceberg-compatible metadata, Hive-synced partitions, automatic
tags, partition expiry, lock-guarded commits, the lookup and full-compaction changelog
producers).
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codec.buckets import bucket_function, buckets_of
from ..errors import (
    CommittedWarning,
    CompactionConflictError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedPaimonFeatureError,
)
from ..merge import ROW_KIND_COLUMN, RowKind, kinds_of
from ..merge.arrow_input import check_batch, is_implicit_cast, sort_indices
from ..table.compaction.runner import compact_buckets
from ..table.paimon.commit import IndexChange, commit_files, remove_files
from ..table.paimon.files import file_layout
from ..table.paimon.metadata import DELETE, KEY_PREFIX, KIND_COLUMN, SEQUENCE_COLUMN, PaimonSchema, PaimonTable
from ..table.paimon.options import external_paths, is_true
from ..table.paimon.store import paimon_directory
from ..table.paimon.tables import check_writable, engine_compacts, engine_writes, table_options
from ..table.snapshots import canonical_partition
from ..table.write import check_columns, input_pieces, occurrence, overwritten, write_rows
from .compact import PaimonCompaction, Placement, plan_compaction, run_compaction, write_rolled
from .read import PaimonBucket, merge_sources

__all__ = ["PaimonWrite", "compact_after_write", "delete", "write"]

FILE_SOURCE_APPEND = 0
WRITE_TRIES = 10


@dataclass(frozen=True)
class PaimonWrite:
    """What a write committed: the APPEND snapshot (None: no rows), the COMPACT snapshot after
    it (None: none was needed, or the table is write-only), the rows written (a key's versions
    within the write folded into one), and whether a batch read of the table now shows them
    (False where level-0 files are invisible until compacted: deletion-vector tables without
    merge-on-read, first-row tables, when the write-only option left them at level 0)."""

    snapshot: int | None
    compacted: int | None
    rows: int
    visible: bool


class _Renumber(Exception):
    """A newer commit added files to a bucket this write numbered: redo it on that snapshot."""


def _conformed(schema: PaimonSchema, data: Any, row_kind_column: str | None, complete: bool,
               name: str) -> tuple[pa.Table, np.ndarray]:
    """The input as one table of the schema's columns and each row's kind (int8)."""
    arrow = schema.arrow_schema
    kind_name = row_kind_column or ROW_KIND_COLUMN
    pieces = [p for p in input_pieces(data, arrow)]
    table = pa.concat_tables(pieces, promote_options="permissive") if len(pieces) > 1 else pieces[0]
    check_batch(table, "the data")
    kinds = np.zeros(table.num_rows, dtype=np.int8)
    stored_kind = schema.options.get("rowkind.field")  # a column of the table gives each row's kind
    if kind_name in table.column_names and kind_name not in arrow.names:
        kinds = kinds_of(table.column(kind_name), kind_name)
        table = table.drop_columns([kind_name])
    elif row_kind_column is not None and kind_name not in table.column_names:
        raise SchemaMismatchError(f"the data lacks the row-kind column {kind_name!r}")
    elif stored_kind and stored_kind in table.column_names:
        kinds = kinds_of(table.column(stored_kind), stored_kind)
    pk = set(schema.primary_keys)
    check_columns(table.column_names, arrow.names, pk, complete, f"Paimon table {name}")
    columns = []
    for f, pf in zip(arrow, schema.fields):
        if f.name not in table.column_names:
            if not f.nullable and complete:
                raise SchemaMismatchError(f"column {f.name!r} of Paimon table {name} is NOT NULL; the data lacks it")
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if col.type != f.type:
            if not is_implicit_cast(col.type, f.type):  # string views (polars, DuckDB) included
                raise SchemaMismatchError(
                    f"column {f.name!r} is {col.type}, Paimon table {name} has {pf.type.text}; mergetree casts "
                    f"only within a kind of value and never parses or formats: cast the column yourself")
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(f"column {f.name!r} ({col.type}) cannot be safely cast to "
                                          f"{pf.type.text}: {exc}") from None
        nulls_allowed = f.nullable and f.name not in pk
        deletes_only = not complete and f.name not in pk  # a delete needs only the key
        if col.null_count and not nulls_allowed and not deletes_only:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise SchemaMismatchError(f"column {f.name!r} of Paimon table {name} is NOT NULL; the data holds a "
                                      f"null at row {row}")
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in arrow])), kinds


def _checked_kinds(schema: PaimonSchema, table: pa.Table, kinds: np.ndarray, name: str) -> tuple[pa.Table, np.ndarray]:
    """Retractions as the table's engine takes them: dropped under ignore-delete; refused (as
    Paimon's merge functions refuse them) where the engine cannot apply one."""
    opts = schema.checked_options
    if opts.append and (kinds != RowKind.INSERT).any():
        raise UnsupportedPaimonFeatureError(
            f"Paimon table {name} is an append table: it takes inserts (+I) only, as Paimon's append writer "
            f"does; nothing was written")
    retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
    if not retract.any():
        return table, kinds
    if opts.ignore_delete:
        keep = ~retract
        return table.filter(pa.array(keep)), kinds[keep]
    if opts.engine in ("first-row", "partial-update"):
        raise UnsupportedPaimonFeatureError(
            f"Paimon table {name} ({opts.engine}) cannot take retractions (-U, -D) unless 'ignore-delete' is set, "
            f"as Paimon refuses them; nothing was written")
    if opts.engine == "aggregate":
        retractable = {"sum", "product", "last_value", "last_non_null_value"}
        bad = sorted(c for c, fn in opts.aggregations.items() if fn not in retractable)
        if bad:
            raise UnsupportedPaimonFeatureError(
                f"Paimon table {name}: column(s) {bad} aggregate with functions that cannot retract a value "
                f"(-U, -D rows); nothing was written")
    return table, kinds


def _layout(schema: PaimonSchema) -> pa.Schema:
    """The data-file layout Java writes (`read.file_layout`, NOT NULL where Java declares it)."""
    return pa.schema(file_layout(schema, required=True))


def _bucket_rows(schema: PaimonSchema, data: pa.Table, rows: np.ndarray, kinds: np.ndarray,
                 first_seq: int) -> tuple[list[pa.RecordBatch], list[pa.RecordBatch]]:
    """One bucket's rows (`rows`: their positions in `data`, in input order) as key-ordered
    batches of the data-file layout, a key's versions folded with the engine, sequence numbers
    from `first_seq` in input order; and every version before the fold (the `input`
    changelog).  The rows are ordered by their key columns alone, then every column taken once."""
    layout = _layout(schema)
    seq = np.arange(first_seq, first_seq + len(rows), dtype=np.int64)
    keys = data.select(schema.trimmed_keys).take(pa.array(rows))
    # a stable sort by key alone: a key's versions stay in input order, which is sequence order
    if keys.num_columns == 1 and pa.types.is_integer(keys.column(0).type):
        order = np.argsort(keys.column(0).to_numpy(), kind="stable")
    else:
        order = sort_indices(keys, [(k, "ascending") for k in schema.trimmed_keys], "at_start").to_numpy()
    picked = pa.array(rows[order])
    taken = {f.name: data.column(f.name).take(picked) for f in schema.arrow_schema}
    columns = []
    for f in layout:
        if f.name.startswith(KEY_PREFIX):
            columns.append(taken[f.name[len(KEY_PREFIX):]])
        elif f.name == SEQUENCE_COLUMN:
            columns.append(pa.array(seq[order]))
        elif f.name == KIND_COLUMN:
            columns.append(pa.array(kinds[rows][order], pa.int8()))
        else:
            columns.append(taken[f.name])
    every = pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in layout]))
    ordered = every
    nth = occurrence(ordered, schema.key_columns)
    if nth.max(initial=0) > 0:
        # the k-th version of every key is run k (each strictly ascending), older runs first
        runs = [ordered.filter(pa.array(nth == i)).to_batches() for i in range(int(nth.max()) + 1)]
        ordered = pa.Table.from_batches(list(merge_sources(schema, runs, keep_deletes=True)))

    def laid_out(table: pa.Table) -> list[pa.RecordBatch]:
        return [pa.RecordBatch.from_arrays([b.column(f.name).cast(f.type) for f in layout], schema=layout)
                for b in table.to_batches() if b.num_rows]
    return laid_out(ordered), laid_out(every)


def _appended_rows(schema: PaimonSchema, data: pa.Table, rows: np.ndarray, first_seq: int) -> list[pa.RecordBatch]:
    """An append table's rows of one bucket, in input order, with their sequence numbers and
    kinds beside the columns (for the manifest entry; the files hold the columns alone)."""
    taken = data.take(pa.array(rows))
    seq = pa.array(np.arange(first_seq, first_seq + len(rows), dtype=np.int64))
    out = taken.append_column(SEQUENCE_COLUMN, seq).append_column(KIND_COLUMN, pa.array(np.zeros(len(rows),
                                                                                           dtype=np.int8)))
    layout = _layout(schema)  # no key: sequence, kind, the columns
    return [pa.RecordBatch.from_arrays([b.column(f.name).cast(f.type) for f in layout], schema=layout)
            for b in out.to_batches() if b.num_rows]


def _partitions_and_buckets(schema: PaimonSchema, table: pa.Table) -> tuple[list[tuple], np.ndarray, np.ndarray]:
    """The distinct partitions (value tuples), each row's partition index and bucket."""
    opts = schema.checked_options
    if opts.append and opts.buckets == -1:
        buckets = np.zeros(table.num_rows, dtype=np.int32)  # bucket-unaware: bucket 0
    else:
        types = [schema.field(c).type for c in opts.bucket_key]
        buckets = buckets_of([table.column(c) for c in opts.bucket_key], types, opts.buckets,
                             bucket_function(schema.options, types))
    if not schema.partition_keys:
        return [()], np.zeros(table.num_rows, dtype=np.int64), buckets
    # each partition column's dictionary codes, combined into one code per row: no Python per row
    codes = np.zeros(table.num_rows, dtype=np.int64)
    dictionaries = []
    for k in schema.partition_keys:
        encoded = pc.dictionary_encode(table.column(k).combine_chunks(), null_encoding="encode")
        dictionaries.append(encoded.dictionary.to_pylist())
        codes = codes * len(dictionaries[-1]) + encoded.indices.to_numpy(zero_copy_only=False)
    distinct, part_of = np.unique(codes, return_inverse=True)
    values = []
    for code in distinct.tolist():
        parts = []
        for dictionary in reversed(dictionaries):
            code, at = divmod(code, len(dictionary))
            parts.append(dictionary[at])
        values.append(tuple(reversed(parts)))
    return values, part_of.astype(np.int64), buckets


def _next_sequences(t: PaimonTable, snapshot: dict | None) -> dict[tuple, int]:
    """Per (partition, bucket), the sequence number its next row gets: one past the largest
    any writer committed there (a restored Java writer seeds its counter the same way)."""
    out: dict[tuple, int] = {}
    for f in t.live_files(snapshot):
        key = (canonical_partition(f.partition), f.bucket)
        out[key] = max(out.get(key, 0), f.max_seq + 1)
    return out


def _write_once(t: PaimonTable, data: pa.Table, kinds: np.ndarray,
                overwrite: Any = None) -> tuple[int | None, set[tuple], int]:
    """Number, fold and write the rows into level-0 files and commit them as one APPEND
    snapshot on the latest (an OVERWRITE deleting the replaced partitions' files, `overwrite`
    as `write` takes it): (its id, the (partition, bucket) pairs written, rows written)."""
    snapshot = t.resolve(None)
    schema = t.schema()
    partitions, part_of, bucket_of = _partitions_and_buckets(schema, data)
    replacing = overwritten(paimon_directory(t, schema), overwrite)
    replaced = None if replacing is None else replacing(set(partitions) if data.num_rows else set())
    gone = [f for f in t.live_files(snapshot) if replaced(f.partition)] if replaced is not None else []
    next_seq = _next_sequences(t, snapshot)
    for f in gone:  # an overwritten bucket starts afresh, as Java's writer that ignores previous files
        next_seq.pop((canonical_partition(f.partition), f.bucket), None)
    job = PaimonCompaction(t, snapshot, schema, (), external_paths(schema.options))
    written: list[str] = []
    adds: list[dict] = []
    changelog: list[dict] = []
    # `changelog-producer` input: every version as written (an overwrite has no changelog)
    with_changelog = replaced is None and \
        schema.options.get("changelog-producer", "none").strip().lower() == "input"
    firsts: dict[tuple, int] = {}
    by_bucket: dict[tuple, list] = {}
    for f in t.live_files(snapshot):
        by_bucket.setdefault((canonical_partition(f.partition), f.bucket), []).append(f)
    # `data-file.thin-mode`: files without the _KEY_ copies (readers take the key from its
    # column); the batches keep them for the entries' key ranges and statistics
    stored = [f.name for f in _layout(schema) if not f.name.startswith(KEY_PREFIX)] \
        if is_true(schema.options.get("data-file.thin-mode", "false")) else None
    try:
        group_of = part_of * max(schema.checked_options.buckets, 1) + bucket_of
        groups = np.argsort(group_of, kind="stable")  # stable: input order within a (partition, bucket)
        bounds = np.flatnonzero(np.diff(group_of[groups])) + 1
        for chunk in np.split(groups, bounds) if len(groups) else []:
            partition = partitions[int(part_of[chunk[0]])]
            bucket = int(bucket_of[chunk[0]])
            key = (canonical_partition(partition), bucket)
            firsts[key] = next_seq.get(key, 0)
            live = tuple(f for f in by_bucket.get(key, ()) if f not in gone)
            pb = PaimonBucket(partition, bucket, live)
            placement = Placement(job, pb)
            if schema.checked_options.append:
                appended = _appended_rows(schema, data, chunk, firsts[key])
                adds += write_rolled(job, pb, placement, iter(appended), 0, written, FILE_SOURCE_APPEND,
                                     file_columns=schema.names)
                continue
            batches, versions = _bucket_rows(schema, data, chunk, kinds, firsts[key])
            adds += write_rolled(job, pb, placement, iter(batches), 0, written, FILE_SOURCE_APPEND,
                                 file_columns=stored)
            if with_changelog:
                changelog += write_rolled(job, pb, placement, iter(versions), 0, written, FILE_SOURCE_APPEND,
                                          prefix="changelog-", file_columns=stored)
        if not adds and not gone:
            return None, set(), 0

        def renumbered(newer: dict) -> None:
            # a newer commit that added files to a bucket this write numbered (the versions would
            # interleave), or changed a partition this overwrite replaces: redone on the newer snapshot
            before = {f.file_name for f in t.live_files(snapshot)}
            now = t.live_files(newer)
            for f in now:
                key = (canonical_partition(f.partition), f.bucket)
                if f.file_name not in before and key in firsts and f.max_seq >= firsts[key]:
                    raise _Renumber()
            if replaced is not None and {f.file_name for f in now if replaced(f.partition)} != \
                    {f.file_name for f in gone}:
                raise _Renumber()
        # the deletion vectors of overwritten buckets go with their files
        marked = t.deletion_files(snapshot) if gone and schema.checked_options.deletion_vectors else {}
        dropped = {(f.partition_bytes, f.bucket) for f in gone} & set(marked)
        index = [IndexChange(p, b, None) for p, b in sorted(dropped)]
        sid = commit_files(t, snapshot, schema, adds, [dict(f.record, _KIND=DELETE) for f in gone], written,
                           "OVERWRITE" if replaced is not None else "APPEND", index, check=renumbered,
                           changelog=changelog)
        return sid, set(firsts), sum(e["_FILE"]["_ROW_COUNT"] for e in adds)
    except BaseException:
        remove_files(t, written)
        raise


def _visible(t: PaimonTable, schema: PaimonSchema, touched: set[tuple]) -> bool:
    if not schema.checked_options.skips_level0:
        return True
    return not any(f.level == 0 and (canonical_partition(f.partition), f.bucket) in touched
                   for f in t.live_files(t.resolve(None)))


def _write(warehouse: Any, table: Any, data: Any, row_kind_column: str | None, complete: bool,
           delete_kind: bool, storage_options: Mapping[str, object] | None, overwrite: Any = False) -> PaimonWrite:
    if row_kind_column is not None and not isinstance(row_kind_column, str):
        raise InvalidArgumentError(f"row_kind_column must be a column name, not {row_kind_column!r}")
    t = PaimonTable.open(warehouse, table, storage_options)
    schema = t.schema()
    check_writable(schema, t.name)
    t.storage.require_conditional_create()  # never a commit that could replace another's
    if engine_writes(schema):  # the engine's write path, the one every table has
        written = write_rows(paimon_directory(t, schema), data, RowKind.DELETE if delete_kind else RowKind.INSERT,
                             row_kind_column, overwrite, compact=False)
        sid = None if written.snapshot is None else written.snapshot.id
        touched, written_rows = set(written.touched), written.rows
    else:
        rows, kinds = _conformed(schema, data, row_kind_column, complete, t.name)
        if delete_kind:
            kinds[:] = RowKind.DELETE
        rows, kinds = _checked_kinds(schema, rows, kinds, t.name)
        if rows.num_rows == 0 and overwrite in (False, None):
            return PaimonWrite(None, None, 0, True)
        for _ in range(WRITE_TRIES):
            try:
                sid, touched, written_rows = _write_once(t, rows, kinds, overwrite)
                break
            except _Renumber:  # its files are removed; numbered again on the newer snapshot
                continue
        else:
            raise CompactionConflictError(f"gave up writing to Paimon table {t.name}: {WRITE_TRIES} newer commits "
                                          f"wrote to the same buckets meanwhile; nothing was written")
    if sid is None:
        return PaimonWrite(None, None, 0, True)
    compacted = compact_after_write(t, schema, touched, sid)
    return PaimonWrite(sid, compacted, written_rows, _visible(t, schema, touched))


def compact_after_write(t: PaimonTable, schema: PaimonSchema, touched: set[tuple], sid: int) -> int | None:
    """After a write committed snapshot `sid`: compact the buckets it touched (unless the table
    is write-only or an append table) — the COMPACT snapshot's id, or None.  A failure is a
    `CommittedWarning`, never an error: the write is committed, and a retry would repeat it."""
    if is_true(schema.options.get("write-only", "false")) or schema.checked_options.append:
        return None
    # where reads skip level 0 (first-row, deletion vectors), it goes up now, as Java's lookup
    # writers compact it — unless `lookup-compact` is gentle: Java then forces it only every
    # `lookup-compact.max-interval` commits of a long-running writer, which a batch write is not
    gentle = table_options(schema).lookup_compact_gentle
    try:
        if engine_compacts(schema):  # the engine's compaction, stalling the write as on mergetree's tables
            done = compact_buckets(paimon_directory(t), touched, False)
            return None if done is None else done.id
        return run_compaction(plan_compaction(t.path, None, only=touched, opened=t,
                                              force_level0=schema.checked_options.skips_level0 and not gentle))
    except CompactionConflictError:
        return None  # another writer compacted these buckets first: the write is committed
    except Exception as exc:  # committed: no failure now may read as a failed write (a retry would repeat it)
        warnings.warn(CommittedWarning(
            f"the write committed snapshot {sid} of Paimon table {t.name}, then compacting its buckets failed "
            f"({type(exc).__name__}: {exc}); the rows are in the table, compact it later"), stacklevel=4)
        return None


def write(warehouse: Any, table: Any, data: Any, row_kind_column: str | None = None,
          storage_options: Mapping[str, object] | None = None, overwrite: Any = False) -> PaimonWrite:
    """Write rows into Paimon table `table` ("database.table") of `warehouse` as Java's batch
    writers do (module docstring): upserts, or a change stream with a row-kind column
    (``_row_kind``, or `row_kind_column`, e.g. Debezium's ``op``).  `overwrite`: True replaces
    the partitions the data holds (``dynamic-partition-overwrite``, the default; the whole
    table when it is unpartitioned or that option is false), a partition ({"dt": "2024-05-01"})
    replaces that partition, in one OVERWRITE snapshot.  Returns a `PaimonWrite`."""
    return _write(warehouse, table, data, row_kind_column, True, False, storage_options, overwrite)


def delete(warehouse: Any, table: Any, keys: Any, storage_options: Mapping[str, object] | None = None) -> PaimonWrite:
    """Delete rows by primary key (`keys` holds at least the primary-key columns): ``-D`` rows."""
    return _write(warehouse, table, keys, None, False, True, storage_options)

