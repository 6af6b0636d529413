"""Reading a Paimon primary-key table with the loser tree.

Plan: the snapshot's live files, pruned by partition values (exact: a file holds one
partition) and by key statistics (exact: every version of a key carries the key), grouped by
(partition, bucket).  Each bucket's files are cut into sections of overlapping key ranges
(`interval_partition`, as Paimon does); a section of several sorted runs is merged with the
table's merge engine on (_KEY_..., _SEQUENCE_NUMBER, _VALUE_KIND); a one-run section holds one
version per key and is read as it is, and only there may value statistics skip a file (in a
merged section a skipped newer version would resurface an older one).  Retractions are
dropped, then the full filter is applied to the merged rows.  Buckets run in threads.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codec.types import same_type
from ..errors import (
    CorruptTableError,
    InvalidArgumentError,
    SchemaMismatchError,
    StorageError,
    UnsupportedPaimonFeatureError,
)
from ..merge import merge
from ..table import filters as flt
from ..table.files import batch_rows_for, parquet_fragment
from ..table.objects import StoredFile
from ..table.paimon.file_indexes import indexed_columns
from ..table.paimon.file_indexes import may_match as file_index_may_match
from ..table.paimon.files import (
    cached_keys,
    corrupt,
    deleted_positions,
    evolved_batches,
    file_layout,
    key_range_of,
    parquet_reader,
    read_data_file,
    row_span,
    thin_keys,
)
from ..table.paimon.metadata import (
    KEY_PREFIX,
    KIND_COLUMN,
    SEQUENCE_COLUMN,
    DeletionFile,
    PaimonFile,
    PaimonSchema,
    PaimonTable,
)
from ..table.paimon.tables import buckets_for
from ..table.sections import interval_partition
from ..table.sequence_fields import ORDER_COLUMN, ranked
from ..table.snapshots import canonical_partition

__all__ = ["PaimonBucket", "PaimonReadPlan", "batches_table", "checked_columns", "layout_columns",
           "merge_runs", "merge_sources", "plan_read", "read_bucket", "read_file",
           "read_schema"]



@dataclass(frozen=True)
class PaimonBucket:
    partition: tuple
    bucket: int
    files: tuple[PaimonFile, ...]

    @property
    def rows(self) -> int:
        return sum(f.row_count for f in self.files)


@dataclass(frozen=True)
class PaimonReadPlan:
    table: PaimonTable
    snapshot: dict | None
    schema: PaimonSchema
    columns: list[str]
    filter: Any                 # normalized (mergetree.table.filters)
    buckets: tuple[PaimonBucket, ...]
    files_total: int
    # deletion-vector tables: (partition bytes, bucket) -> data file name -> its deletion vector
    deletion_files: Mapping[tuple[bytes, int], Mapping[str, DeletionFile]] = field(default_factory=dict)
    # when set, each file's batches read under this plan's filter are kept here and read once,
    # for plans of two snapshots that share one filter object and this dict (`paimon.changes`
    # reads the same keys at both ends: their common files are decoded once)
    file_rows: dict | None = field(default=None, repr=False, compare=False)

    @property
    def files(self) -> list[PaimonFile]:
        return [f for b in self.buckets for f in b.files]

    def deletion_file(self, pf: PaimonFile) -> DeletionFile | None:
        return self.deletion_files.get((pf.partition_bytes, pf.bucket), {}).get(pf.file_name)

    def deleted_positions(self, pf: PaimonFile) -> np.ndarray | None:
        """The sorted row positions of `pf` that its deletion vector marks (None: none), each
        checked to be a row of the file."""
        return deleted_positions(self.table, pf, self.deletion_file(pf))

    def reads_files_alone(self, bucket: PaimonBucket) -> bool:
        """Whether each file of `bucket` can be read on its own, its deletion vector applied (no
        merge), as Paimon decides: deletion vectors on, and every file above level 0 without
        retractions (compaction has marked every replaced row)."""
        return self.schema.checked_options.deletion_vectors and \
            all(f.level > 0 and f.delete_count == 0 for f in bucket.files)

    @cached_property
    def indexed_columns(self) -> frozenset[str]:
        return indexed_columns(self.schema.options)

    @property
    def output_schema(self) -> pa.Schema:
        return pa.schema([self.schema.arrow_schema.field(c) for c in self.columns])


def read_schema(warehouse: Any, table: Any, snapshot: Any = None,
                storage_options: Mapping[str, object] | None = None) -> tuple[PaimonTable, dict | None, PaimonSchema]:
    """The table, the snapshot a read sees and the schema it reads under (no manifest is read):
    as Paimon, the latest read uses the table's latest schema (options altered since the last
    commit count); time travel uses the schema the snapshot was committed under.  The schema's
    options are checked (`checked_options`) by whoever uses them."""
    t = PaimonTable.open(warehouse, table, storage_options)
    snap = t.resolve(snapshot)
    return t, snap, t.schema(None if snap is None or snapshot is None else int(snap["schemaId"]))


def checked_columns(columns: Any, names: Sequence[str], table_name: str) -> list[str]:
    """The asked columns of a Paimon table (None: all of them), or InvalidArgumentError."""
    if columns is None:
        return list(names)
    if not (isinstance(columns, (list, tuple)) and all(isinstance(c, str) for c in columns)):
        raise InvalidArgumentError(f"columns must be a list of column names or None, not {columns!r}")
    cols = list(columns)
    unknown = [c for c in cols if c not in names]
    if unknown:
        raise InvalidArgumentError(f"columns {unknown} are not in Paimon table {table_name}; columns: {list(names)}")
    if len(set(cols)) != len(cols):
        raise InvalidArgumentError(f"columns names a column twice: {cols}")
    return cols


def plan_read(warehouse: Any, table: Any, columns: Any = None, filter: Any = None, snapshot: Any = None,
              buckets: Sequence[tuple[tuple, int]] | None = None,
              storage_options: Mapping[str, object] | None = None) -> PaimonReadPlan:
    t, snap, schema = read_schema(warehouse, table, snapshot, storage_options)
    opts = schema.checked_options
    names = schema.names
    cols = checked_columns(columns, names, t.name)
    f = flt.normalize(filter, schema.arrow_schema)
    files = t.live_files(snap)
    for pf in files:
        if pf.total_buckets != opts.buckets and pf.total_buckets > 0:
            raise UnsupportedPaimonFeatureError(
                f"Paimon table {t.name} was rescaled: file {pf.file_name} belongs to {pf.total_buckets} buckets, the "
                f"table has {opts.buckets} (option 'bucket'); rewrite it with Paimon first")
    partition_filter = flt.restrict(f, set(schema.partition_keys))
    key_filter = flt.restrict(f, set(schema.trimmed_keys))
    wanted = None if buckets is None else {(canonical_partition(p), b) for p, b in buckets}
    bucket_ids = buckets_for(schema, f)
    grouped: dict[tuple, list[PaimonFile]] = {}
    for pf in files:
        if wanted is not None and (canonical_partition(pf.partition), pf.bucket) not in wanted:
            continue
        if bucket_ids is not None and pf.bucket not in bucket_ids:
            continue
        if opts.skips_level0 and pf.level == 0:
            # as Paimon's batch scan does: level-0 files of a first-row or deletion-vector table
            # become visible once compaction has resolved them against the older levels
            continue
        if partition_filter is not None and not flt.may_match(
                partition_filter, {k: (v, v, int(v is None)) for k, v in zip(schema.partition_keys, pf.partition)}, 1):
            continue
        if key_filter is not None and not flt.may_match(
                key_filter, {k: (s[0], s[1], s[2]) for k, s in zip(schema.trimmed_keys, pf.key_stats)
                             if s[2] is not None},
                pf.row_count):
            continue
        grouped.setdefault((canonical_partition(pf.partition), pf.bucket), []).append(pf)
    ordered = sorted(grouped.items(), key=lambda kv: (repr(kv[0][0]), kv[0][1]))
    return PaimonReadPlan(t, snap, schema, cols, f,
                          tuple(PaimonBucket(p, b, tuple(fs)) for (p, b), fs in ordered), len(files),
                          t.deletion_files(snap) if opts.deletion_vectors else {})


# -- reading files -------------------------------------------------------------------------

def _file_batches(plan: PaimonReadPlan, pf: PaimonFile, columns: list[str], row_filter: pc.Expression | None,
                  batch_rows: int, use_threads: bool = False) -> Iterator[pa.RecordBatch]:
    """A data file's batches with `columns` (file layout names), under the read schema's
    names and types; files written under an older schema are mapped by field id."""
    if plan.file_rows is not None:
        deletion = plan.deletion_file(pf)
        key = (pf.file_name, tuple(columns), row_filter is None,
               None if deletion is None else (deletion.path, deletion.range))
        found = plan.file_rows.get(key)
        if found is None:
            found = plan.file_rows[key] = list(_file_batches(dataclasses.replace(plan, file_rows=None), pf, columns,
                                                             row_filter, batch_rows, use_threads))
        yield from found
        return
    schema = plan.schema
    deleted = plan.deleted_positions(pf)
    if pf.schema_id != schema.id:
        try:
            yield from evolved_batches(plan.table, pf, schema, columns,
                                       plan_key_filter(plan) if row_filter is not None else None, batch_rows, deleted)
        except MemoryError:  # out of memory is not a damaged file
            raise
        except (OSError, pa.ArrowException) as exc:
            raise corrupt(plan.table, pf, exc) from None
        return
    try:
        rows = 0
        key_range = key_range_of(plan_key_filter(plan), schema.key_columns[0]) \
            if row_filter is not None and len(schema.key_columns) == 1 else None
        for batch in read_data_file(plan.table.source(pf), columns, row_filter, batch_rows, schema.key_columns,
                                    key_range, use_threads, deleted):
            rows += batch.num_rows
            if batch.num_rows:
                yield batch
    except MemoryError:  # out of memory is not a damaged file
        raise
    except (OSError, pa.ArrowException) as exc:
        raise corrupt(plan.table, pf, exc) from None
    expected = pf.row_count - (0 if deleted is None else len(deleted))
    if row_filter is None and rows != expected:
        raise CorruptTableError(f"data file {pf.path} holds {rows} live rows, its Paimon manifest and deletion "
                                f"vector say {expected}", path=pf.path)


def batches_table(batches: Sequence[pa.RecordBatch]) -> pa.Table:
    """Batches of several data files as one table: files of different writers may declare a
    NOT NULL column required (Java, mergetree) or optional (pypaimon): the table's is optional."""
    if not batches:
        return pa.Table.from_batches([])
    if all(b.schema == batches[0].schema for b in batches):
        return pa.Table.from_batches(batches)
    common = pa.schema([f.with_nullable(True) for f in batches[0].schema])
    return pa.Table.from_batches([b.cast(common) for b in batches])


def _file_schema(schema: PaimonSchema) -> pa.Schema:
    return pa.schema(file_layout(schema))


def plan_key_filter(plan: PaimonReadPlan) -> Any:
    """The filter's conjuncts on the key, over the _KEY_ columns (exact before a merge)."""
    keys = set(plan.schema.trimmed_keys)
    restricted = flt.restrict(plan.filter, keys)
    return flt.rename(restricted, {k: KEY_PREFIX + k for k in keys}) if restricted is not None else None


# -- one bucket ----------------------------------------------------------------------------

def _needed_columns(plan: PaimonReadPlan) -> list[str]:
    schema = plan.schema
    opts = schema.checked_options
    wanted = set(plan.columns) | (flt.columns_of(plan.filter) or set(schema.names))
    wanted.update(opts.sequence_fields)
    # a key column's values are its _KEY_ column's: decoded once (see _with_key_values)
    stored = set(schema.trimmed_keys)
    return schema.key_columns + [SEQUENCE_COLUMN, KIND_COLUMN] + [c for c in schema.names
                                                                  if c in wanted and c not in stored]


def _with_key_values(schema: PaimonSchema, batch: pa.RecordBatch) -> pa.RecordBatch:
    """The primary-key columns a read skipped, taken from their _KEY_ copies."""
    for k in schema.trimmed_keys:
        if k not in batch.schema.names:
            batch = batch.append_column(k, batch.column(KEY_PREFIX + k))
    return batch


def read_bucket(plan: PaimonReadPlan, bucket: PaimonBucket, batch_rows: int = 65536,
                threads: int = 1) -> Iterator[pa.RecordBatch]:
    """The merged rows of one bucket (the plan's columns, its filter applied), in key order —
    except where each file is read alone (deletion vectors, `PaimonReadPlan.reads_files_alone`):
    then file after file, each in key order.  `threads` > 1 splits each merge by key range (its
    runs are read into memory first), or reads that many files at once."""
    schema = plan.schema
    opts = schema.checked_options
    if opts.append:  # rows as written, file after file: nothing to merge, every row live
        wanted = set(plan.columns) | (flt.columns_of(plan.filter) or set(schema.names))
        columns = [c for c in schema.names if c in wanted]
        simple = plan.filter if not isinstance(plan.filter, pc.Expression) else None
        files = [pf for pf in bucket.files if _may_match(plan, pf, simple)]
        batches = (b for pf in files for b in _file_batches(plan, pf, columns, None, batch_rows,
                                                             use_threads=threads > 1))
        yield from _finished(plan, batches, flt.to_expression(plan.filter, schema.arrow_schema))
        return
    columns = _needed_columns(plan)
    key_filter = plan_key_filter(plan)
    key_expr = flt.to_expression(key_filter, _file_schema(schema)) if key_filter is not None else None
    row_expr = flt.to_expression(plan.filter, schema.arrow_schema)
    simple_filter = plan.filter if not isinstance(plan.filter, pc.Expression) else None
    point = _point_key(plan)
    if point is not None:
        found = _point_read(plan, bucket, columns, key_expr)
        if found is not None:
            yield from _finished(plan, found, row_expr)
            return
    if plan.reads_files_alone(bucket):
        # deletion vectors: every replaced row is marked, each file is read alone (no merge) and
        # holds no retraction, so neither sequence numbers nor kinds are decoded (~10% of the CPU)
        files = [pf for pf in bucket.files if _may_match(plan, pf, simple_filter)]
        alone = [c for c in columns if c not in (SEQUENCE_COLUMN, KIND_COLUMN)]
        yield from _finished(plan, _files_alone(plan, files, alone, key_expr, batch_rows, threads), row_expr)
        return
    for section in interval_partition(bucket.files):
        runs = [list(run) for run in section]
        if len(runs) == 1:  # one version per key: value statistics may skip files here
            files = [pf for pf in runs[0] if _may_match(plan, pf, simple_filter)]
            batches = (b for pf in files for b in _file_batches(plan, pf, columns, key_expr, batch_rows,
                                                                 use_threads=threads > 1))
            merged: Iterator[pa.RecordBatch] = (_without_retractions(b) for b in _checked_kinds(batches, opts))
        else:
            merged = _merge_section(plan, runs, columns, key_expr, keep_deletes=False, threads=threads)
        yield from _finished(plan, merged, row_expr)


def _finished(plan: PaimonReadPlan, batches: Iterable[pa.RecordBatch],
              row_expr: pc.Expression | None) -> Iterator[pa.RecordBatch]:
    """Read rows made output: key values from their _KEY_ copies, the whole filter applied,
    the plan's columns in the schema's types."""
    for batch in batches:
        batch = _with_key_values(plan.schema, batch)
        if row_expr is not None and batch.num_rows:
            batch = batch.filter(row_expr)
        if batch.num_rows:
            yield _output(plan, batch)


def _files_alone(plan: PaimonReadPlan, files: list[PaimonFile], columns: list[str], key_expr: pc.Expression | None,
                 batch_rows: int, threads: int) -> Iterator[pa.RecordBatch]:
    """Each file's live rows (its deletion vector applied), file after file, or `threads`
    files at once (each read whole into memory: the caller collects them anyway)."""
    def one(pf: PaimonFile) -> Iterator[pa.RecordBatch]:
        return _file_batches(plan, pf, columns, key_expr, batch_rows)
    if threads <= 1 or len(files) <= 1:
        for pf in files:
            yield from one(pf)
        return
    with ThreadPoolExecutor(min(threads, len(files)), thread_name_prefix="paimon-file") as pool:
        for batches in pool.map(lambda pf: list(one(pf)), files):
            yield from batches


def _point_key(plan: PaimonReadPlan) -> tuple | None:
    """The one whole key a point read asks for (one value for every key column), when the
    engine keeps a single version of it (deduplicate: the newest, first-row: the oldest)."""
    schema = plan.schema
    opts = schema.checked_options
    if opts.engine not in ("deduplicate", "first-row") or opts.sequence_field or opts.ignore_delete:
        return None
    if plan.filter is None or isinstance(plan.filter, pc.Expression):
        return None
    values = []
    for k in schema.trimmed_keys:
        found = flt.equality_values(plan.filter, k)
        if found is None or len(found) != 1 or found[0] is None:
            return None
        values.append(found[0])
    return tuple(values)


def _point_read(plan: PaimonReadPlan, bucket: PaimonBucket, columns: list[str],
                key_expr: pc.Expression | None) -> list[pa.RecordBatch] | None:
    """A point read without a merge: the key's version in every file is found from the cached
    key, sequence and kind columns, and only the version the engine keeps is decoded (None:
    a file this cannot handle, so the caller merges as usual)."""
    schema = plan.schema
    if key_expr is None or any(pf.schema_id != schema.id or not pf.file_name.endswith(".parquet")
                               for pf in bucket.files):
        return None
    key_columns = schema.key_columns
    if any(thin_keys(plan.table.source(pf), pf.file_name, key_columns) for pf in bucket.files):
        return None  # a thin file (no _KEY_ columns): the general path maps its key columns
    cached = key_columns + [SEQUENCE_COLUMN, KIND_COLUMN]
    key_range = key_range_of(plan_key_filter(plan), key_columns[0]) if len(key_columns) == 1 else None
    # (sequence, kind, file, row group, row)
    versions: list[tuple[int, int, str | StoredFile, int, int]] = []
    try:
        for pf in bucket.files:
            source = plan.table.source(pf)
            fragment = parquet_fragment(source)
            groups = [g.id for g in fragment.subset(filter=key_expr).row_groups]
            if not groups:
                continue
            deleted = plan.deleted_positions(pf)
            for g in groups:
                table = cached_keys(source, g, cached)
                first, last = row_span(table.select(key_columns), key_expr, key_range)
                offset = sum(fragment.metadata.row_group(i).num_rows for i in range(g)) if deleted is not None else 0
                for row in range(first, last):
                    if deleted is not None and _marked(deleted, offset + row):
                        continue  # a version a newer one replaced (its deletion vector says so)
                    versions.append((table.column(SEQUENCE_COLUMN)[row].as_py(), table.column(KIND_COLUMN)[row].as_py(),
                                     source, g, row))
    except FileNotFoundError as exc:
        raise CorruptTableError(f"a data file of Paimon table {plan.table.name} is missing: {exc}",
                                path=str(exc.filename)) from None
    except MemoryError:  # out of memory is not a damaged file
        raise
    except StorageError:  # the store failing (unreachable, refused) is not a damaged file
        raise
    except (OSError, pa.ArrowException) as exc:
        raise CorruptTableError(f"a data file of Paimon table {plan.table.name} is unreadable: {exc}",
                                path=plan.table.path) from None
    if not versions:
        return []
    pick = min if schema.checked_options.engine == "first-row" else max
    _, kind, path, group, row = pick(versions, key=lambda v: v[0])
    if kind in (1, 3):  # a retraction is the key's last word: no row
        return []
    start = 0
    for batch in parquet_reader(path).iter_batches(batch_size=8192, row_groups=[group], columns=columns,
                                                    use_threads=False):
        if start + batch.num_rows > row:
            return [batch.slice(row - start, 1)]
        start += batch.num_rows
    raise CorruptTableError(f"data file {path} has fewer rows than its key column", path=str(path))


def _marked(deleted: np.ndarray, position: int) -> bool:
    i = int(np.searchsorted(deleted, position))
    return i < len(deleted) and int(deleted[i]) == position


def _may_match(plan: PaimonReadPlan, pf: PaimonFile, simple_filter: Any) -> bool:
    """Whether a file whose rows are the only versions of their keys the read sees may hold
    rows matching the filter: by its value statistics, then by its file index (Bloom filters,
    bitmaps) unless the table turns index reads off."""
    if simple_filter is None:
        return True
    if not flt.may_match(simple_filter, _file_stats(plan, pf), pf.row_count):
        return False
    if not (flt.columns_of(simple_filter) or set()) & plan.indexed_columns:
        return True
    return file_index_may_match(plan.table, pf, plan.schema, simple_filter)


def _file_stats(plan: PaimonReadPlan, pf: PaimonFile) -> dict[str, tuple[Any, Any, int]]:
    """Column -> (min, max, null count) of a file, under the read schema's names: a file of an
    older schema by field id, for the columns whose type has not changed since (exact: the
    values read as they were written; a retyped column's bounds are not converted)."""
    if pf.schema_id == plan.schema.id:
        stats = pf.value_stats(plan.schema)
    else:
        old = plan.table.schema(pf.schema_id)
        now = {f.id: f for f in plan.schema.fields}
        stats = {}
        for name, value in pf.value_stats(old).items():
            field = now.get(old.field(name).id)
            if field is not None and same_type(old.field(name).type, field.type):
                stats[field.name] = value
    for name, (lo, hi, nulls) in zip(plan.schema.trimmed_keys, pf.key_stats):
        if nulls is not None:
            stats[name] = (lo, hi, nulls)
    return stats


def _checked_kinds(batches: Iterator[pa.RecordBatch], opts) -> Iterator[pa.RecordBatch]:
    """Retractions under ignore-delete are skipped, as Paimon's merge functions skip them."""
    for batch in batches:
        if opts.ignore_delete:
            batch = batch.filter(_is_addition(batch))
        yield batch


def _is_addition(batch: pa.RecordBatch) -> pa.Array:
    kinds = batch.column(KIND_COLUMN)
    return pc.or_(pc.equal(kinds, 0), pc.equal(kinds, 2))


def _without_retractions(batch: pa.RecordBatch) -> pa.RecordBatch:
    kinds = batch.column(KIND_COLUMN).to_numpy(zero_copy_only=False)
    if not ((kinds == 1) | (kinds == 3)).any():
        return batch
    return batch.filter(_is_addition(batch))


def merge_runs(plan: PaimonReadPlan, runs: list[list[PaimonFile]], keep_deletes: bool,
               older: list[pa.RecordBatch] | None = None) -> Iterator[pa.RecordBatch]:
    """Sorted runs (each a list of key-ordered files) merged with the table's engine, every
    column of the data-file layout kept: what compaction writes back.  `older`: one more
    sorted run, in memory (the versions a deletion-vector compaction replaces in higher
    levels)."""
    return _merge_section(plan, runs, layout_columns(plan.schema), None, keep_deletes, older=older)


def layout_columns(schema: PaimonSchema) -> list[str]:
    """The data-file layout's column names: _KEY_ columns, sequence, kind, then the columns."""
    return [f.name for f in file_layout(schema)]


def read_file(plan: PaimonReadPlan, pf: PaimonFile, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """One data file's live rows (its deletion vector applied), `columns` of its layout."""
    return _file_batches(plan, pf, columns, None, batch_rows_for(1))


def _merge_section(plan: PaimonReadPlan, runs: list[list[PaimonFile]], columns: list[str],
                   key_expr: pc.Expression | None, keep_deletes: bool, threads: int = 1,
                   older: list[pa.RecordBatch] | None = None) -> Iterator[pa.RecordBatch]:
    schema = plan.schema
    opts = schema.checked_options
    batch_rows = batch_rows_for(len(runs))
    if opts.engine == "partial-update" and not opts.ignore_delete:
        for run in runs:
            for pf in run:
                if pf.delete_count:
                    raise UnsupportedPaimonFeatureError(
                        f"partial-update table {plan.table.name} holds retractions (file {pf.file_name}); Paimon "
                        f"itself refuses to merge them unless 'ignore-delete' or "
                        f"'partial-update.remove-record-on-delete' is set (the latter is not supported by mergetree)")
    sources: list = [_checked_kinds((b for pf in run for b in _file_batches(plan, pf, columns, key_expr, batch_rows)),
                                    opts) for run in runs]
    if older:
        sources.append(_checked_kinds(iter(older), opts))
    if threads > 1 and len(sources) > 1:
        # merging in threads reads every run into memory first: decode them at once (it releases the GIL)
        with ThreadPoolExecutor(min(threads, len(sources)), thread_name_prefix="paimon-run") as pool:
            sources = list(pool.map(list, sources))
    yield from merge_sources(schema, sources, keep_deletes, columns, threads)


def merge_sources(schema: PaimonSchema, sources: list, keep_deletes: bool, columns: Sequence[str] | None = None,
                  threads: int = 1) -> Iterator[pa.RecordBatch]:
    """Sorted runs of data-file-layout batches (each an iterable, oldest first) merged with the
    table's engine: versions ordered by the sequence fields (ranked first) and sequence
    number; `columns` the layout columns the runs hold (None: all)."""
    opts = schema.checked_options
    sequence = SEQUENCE_COLUMN
    if opts.sequence_fields:  # ranking needs the whole section's sequence values first
        sources, sequence = ranked([list(run) for run in sources], opts.sequence_fields,
                                    opts.sequence_descending), ORDER_COLUMN
    aggregations = {c: fn for c, fn in opts.aggregations.items() if columns is None or c in columns} or None
    reader = merge(sources, schema.key_columns, sequence=sequence, kind=KIND_COLUMN, engine=opts.engine,
                   aggregations=aggregations, keep_deletes=keep_deletes, threads=threads)
    for batch in reader:
        if sequence == ORDER_COLUMN:
            batch = batch.drop_columns([ORDER_COLUMN])
        yield batch


def _output(plan: PaimonReadPlan, batch: pa.RecordBatch) -> pa.RecordBatch:
    target = plan.output_schema
    arrays = []
    for f in target:
        arr = batch.column(f.name)
        if arr.type != f.type:
            try:
                arr = arr.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(f"column {f.name!r} of Paimon table {plan.table.name} holds {arr.type}, "
                                          f"its schema says {f.type}: {exc}") from None
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema([pa.field(f.name, f.type) for f in target]))
