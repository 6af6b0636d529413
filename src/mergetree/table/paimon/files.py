"""A Paimon data file read as the engine reads its files: by its format (Parquet or ORC, as the
file name says), thin-mode files (no `_KEY_` columns: the key read from its value columns),
files written under an older schema (columns found by field id, retyped as Paimon's casts
do), deletion vectors applied by row position.  `PaimonFileRef` is what a `DataFileMeta` of a
Paimon table carries to say where its file is and how it maps onto the read schema; files
that need no mapping are read by the engine's own Parquet path."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...codec.types import PaimonField, evolve, same_type
from ...errors import (
    CorruptTableError,
    InvalidArgumentError,
    MergeTreeError,
    ObjectNotFoundError,
    SchemaMismatchError,
    StorageError,
    UnsupportedPaimonFeatureError,
    UnsupportedTypeError,
)
from .. import filters as flt
from ..filecache import FileCache
from ..files import parquet_fragment, read_parquet
from ..indexes.bloom import ColumnBloom, describe
from ..objects import StoredFile
from .file_indexes import file_beside, file_index, indexed_columns
from .file_indexes import may_match as file_index_may_match
from .metadata import KEY_PREFIX, KIND_COLUMN, SEQUENCE_COLUMN, DeletionFile, PaimonFile, PaimonSchema, PaimonTable
from .tables import table_options

__all__ = ["PaimonFileRef", "check_evolvable", "file_layout", "live_rows", "may_hold_retractions", "orc_column_names",
           "parquet_reader", "read_data_file", "thin_keys"]


def read_data_file(path: str | StoredFile, columns: list[str] | None, row_filter: pc.Expression | None,
                   batch_rows: int, use_threads: bool = False,
                   deleted: np.ndarray | None = None) -> Iterator[pa.RecordBatch]:
    """A Paimon data file's batches, by its format (the file name's extension, as Paimon
    decides): Parquet a row group at a time, ORC a stripe at a time.  `deleted`: sorted row
    positions of the file (its deletion vector) left out, before `row_filter`.  `path` is a
    local path or a file on an object store (`PaimonTable.source`)."""
    name = path.name if isinstance(path, StoredFile) else path
    thin = thin_keys(path, name, columns)
    if thin:
        yield from _thin_file(path, columns or [], thin, row_filter, batch_rows, use_threads, deleted)
        return
    if name.endswith(".parquet"):
        if deleted is not None:
            yield from _read_parquet_live(path, columns, row_filter, batch_rows, deleted, use_threads)
        else:
            yield from read_parquet(path, columns, row_filter, None, batch_rows, use_threads)
        return
    if not name.endswith(".orc"):
        raise UnsupportedPaimonFeatureError(f"data file {path}: mergetree reads Parquet and ORC data files only")
    try:
        from pyarrow import orc
    except ImportError:  # pyarrow builds without ORC (Windows)
        raise UnsupportedPaimonFeatureError(f"data file {path} is ORC, and this pyarrow has no ORC "
                                            f"support") from None
    reader = orc.ORCFile(path.open() if isinstance(path, StoredFile) else path)
    first_row = 0
    for stripe in range(reader.nstripes):
        batch = reader.read_stripe(stripe, columns=columns)
        batch, first_row = live_rows(batch, first_row, deleted), first_row + batch.num_rows
        if row_filter is not None:
            batch = batch.filter(row_filter)
        for start in range(0, batch.num_rows, batch_rows):
            yield batch.slice(start, batch_rows)


def thin_keys(path: str | StoredFile, name: str, columns: list[str] | None) -> dict[str, str]:
    """For a file without `_KEY_` columns — ``data-file.thin-mode`` (Paimon 1.0+), and every
    primary-key file pypaimon-rust writes — each asked `_KEY_<k>` -> the value column `k` it is
    read from, as Java's readers take the key from the values; empty for other files."""
    keys = [c for c in columns or () if c.startswith(KEY_PREFIX)]
    if not keys:
        return {}
    if name.endswith(".parquet"):
        names: set[str] | frozenset[str] = set(parquet_fragment(path).physical_schema.names)
    else:
        names = orc_column_names(path)
    return {c: c[len(KEY_PREFIX):] for c in keys if c not in names and c[len(KEY_PREFIX):] in names}


# Parquet Bloom filter descriptions of Paimon files, by file and columns (footers parsed once)
_blooms: FileCache[dict[str, ColumnBloom]] = FileCache(max_entries=4096)

# an ORC file's column names, by file: its footer is read once, not at every read of the file
_orc_names: FileCache[frozenset[str]] = FileCache(max_entries=1024)


def orc_column_names(path: str | StoredFile) -> frozenset[str]:
    def load() -> frozenset[str]:
        from pyarrow import orc
        return frozenset(orc.ORCFile(path.open() if isinstance(path, StoredFile) else path).schema.names)
    if isinstance(path, StoredFile):
        return _orc_names.get_keyed(path.key, load)
    return _orc_names.get(path, load)


def _thin_file(path: str | StoredFile, columns: list[str], thin: dict[str, str], row_filter: pc.Expression | None,
               batch_rows: int, use_threads: bool, deleted: np.ndarray | None) -> Iterator[pa.RecordBatch]:
    """A thin-mode file's batches with its key columns under their `_KEY_` names: the filter
    pushed into the Parquet scan (statistics skip row groups) where it names no key copy, else
    read whole (its deletion vector applied by position), then filtered."""
    stored = list(dict.fromkeys(thin.get(c, c) for c in columns))
    name = path.name if isinstance(path, StoredFile) else path
    if row_filter is not None and deleted is None and name.endswith(".parquet"):
        pushed = read_parquet(path, stored, row_filter, None, batch_rows, use_threads)
        try:
            first = next(pushed, None)
        except pa.ArrowInvalid:  # the filter names a key copy the file lacks (binding fails before any row)
            pass
        else:
            for batch in itertools.chain([first] if first is not None else [], pushed):
                if batch.num_rows:
                    yield pa.RecordBatch.from_arrays([batch.column(thin.get(c, c)) for c in columns], names=columns)
            return
    first_row = 0
    for batch in read_data_file(path, stored, None, batch_rows, use_threads=use_threads):
        live, first_row = live_rows(batch, first_row, deleted), first_row + batch.num_rows
        out = pa.RecordBatch.from_arrays([live.column(thin.get(c, c)) for c in columns], names=columns)
        if row_filter is not None:
            out = out.filter(row_filter)
        if out.num_rows:
            yield out


def live_rows(batch: pa.RecordBatch, first_row: int, deleted: np.ndarray | None) -> pa.RecordBatch:
    """The rows of `batch` (the file's rows from `first_row` on) that `deleted` does not mark."""
    if deleted is None or not batch.num_rows:
        return batch
    lo, hi = np.searchsorted(deleted, [first_row, first_row + batch.num_rows])
    if lo == hi:
        return batch
    keep = np.ones(batch.num_rows, dtype=bool)
    keep[deleted[lo:hi] - first_row] = False
    return batch.filter(pa.array(keep))


def parquet_reader(path: str | StoredFile) -> pq.ParquetFile:
    """A Parquet file reader on the footer the fragment cache already parsed (an object
    store's file: its row groups' column chunks fetched by coalesced range requests)."""
    if isinstance(path, StoredFile):
        return pq.ParquetFile(path.open(), metadata=parquet_fragment(path).metadata, pre_buffer=True)
    return pq.ParquetFile(path, metadata=parquet_fragment(path).metadata, pre_buffer=False)


def _read_parquet_live(path: str | StoredFile, columns: list[str] | None, row_filter: pc.Expression | None,
                       batch_rows: int, deleted: np.ndarray, use_threads: bool = False) -> Iterator[pa.RecordBatch]:
    """A Parquet data file's rows but those its deletion vector marks (`deleted`, sorted
    positions), read by position row group after row group (those the filter's statistics
    rule out skipped), the marked rows left out before `row_filter`."""
    fragment = parquet_fragment(path)
    metadata = fragment.metadata
    groups = list(range(metadata.num_row_groups)) if row_filter is None else \
        [g.id for g in fragment.subset(filter=row_filter).row_groups]
    if not groups:
        return
    reader = parquet_reader(path)
    offsets = np.concatenate([[0], np.cumsum([metadata.row_group(g).num_rows
                                              for g in range(metadata.num_row_groups)])])
    for g in groups:
        start = int(offsets[g])
        for batch in reader.iter_batches(batch_size=batch_rows, row_groups=[g], columns=columns,
                                         use_threads=use_threads):
            part = live_rows(batch, start, deleted)
            start += batch.num_rows
            if row_filter is not None:
                part = part.filter(row_filter)
            if part.num_rows:
                yield part


def file_layout(schema: PaimonSchema, required: bool = False) -> list[pa.Field]:
    """The data-file layout under `schema`: _KEY_ columns, sequence, kind, then the columns
    (an append table's has no _KEY_ columns: no key).  `required`: NOT NULL where Java's
    writer declares it (keys, sequence, kind, NOT NULL columns); reads take any."""
    keys = [pa.field(KEY_PREFIX + k, schema.field(k).type.arrow, nullable=not required)
            for k in schema.trimmed_keys]
    return keys + [pa.field(SEQUENCE_COLUMN, pa.int64(), nullable=False),
                   pa.field(KIND_COLUMN, pa.int8(), nullable=False)] + \
        [pa.field(f.name, f.type.arrow, nullable=f.type.nullable or not required) for f in schema.fields]


def check_evolvable(table: PaimonTable, old: PaimonSchema, now: PaimonSchema) -> None:
    """Refuse, before anything is read or written, files of schema `old` that mergetree cannot
    read under `now`: a key that differs (Paimon never retypes one), or a column retyped in a
    way mergetree does not convert exactly (`types.evolve` names it)."""
    before = {f.id: f for f in old.fields}
    keys = [before.get(now.field(k).id) for k in now.trimmed_keys]
    if [k.name if k else None for k in keys] != list(old.trimmed_keys) or \
            any(k is None or not same_type(k.type, now.field(n).type) for k, n in zip(keys, now.trimmed_keys)):
        raise UnsupportedPaimonFeatureError(
            f"Paimon table {table.name} holds files of schema {old.id}, whose primary key differs from schema "
            f"{now.id}'s (columns or types); mergetree cannot read or rewrite them")
    for f in now.fields:
        if f.id in before and before[f.id].type != f.type:
            evolve(pa.array([], before[f.id].type.arrow), before[f.id].type, f.type, f.name)  # raises if refused


def evolved_batches(table: PaimonTable, pf: PaimonFile, now: PaimonSchema, columns: list[str],
                    batch_rows: int, deleted: np.ndarray | None) -> Iterator[pa.RecordBatch]:
    """A file written under an older schema, read as Paimon's SchemaEvolutionUtil maps it:
    each column of the read schema `now` (`columns`: its file-layout names) found by field id
    among the file schema's columns (under the name it had then), a column added since read
    as nulls, a retyped one converted as Paimon's casts convert it (`types.evolve`; nested ROW
    fields by id as well).  Key columns keep their types (Paimon refuses to retype them)."""
    old = table.schema(pf.schema_id)
    by_id = {f.id: f for f in old.fields}
    if [by_id.get(now.field(k).id) and by_id[now.field(k).id].name for k in now.trimmed_keys] != \
            list(old.trimmed_keys):
        raise UnsupportedPaimonFeatureError(f"file {pf.file_name} was written under schema {pf.schema_id}, whose "
                                            f"primary key differs; mergetree cannot map it")
    sources: dict[str, str] = {}   # read column -> the file's column
    befores: dict[str, PaimonField] = {}
    for c in columns:
        if c in (SEQUENCE_COLUMN, KIND_COLUMN):
            sources[c] = c
        elif c.startswith(KEY_PREFIX):
            before = by_id[now.field(c[len(KEY_PREFIX):]).id]
            if not same_type(before.type, now.field(c[len(KEY_PREFIX):]).type):
                raise UnsupportedPaimonFeatureError(
                    f"file {pf.file_name} (schema {pf.schema_id}) holds key column {before.name!r} as "
                    f"{before.type.text}, the table now as {now.field(c[len(KEY_PREFIX):]).type.text}; Paimon does "
                    f"not retype key columns, so mergetree does not either")
            sources[c] = KEY_PREFIX + before.name
        elif now.field(c).id in by_id:
            befores[c] = by_id[now.field(c).id]
            sources[c] = befores[c].name
    types = {f.name: f.type for f in file_layout(now)}
    for batch in read_data_file(table.source(pf), list(dict.fromkeys(sources.values())), None, batch_rows,
                                deleted=deleted):
        arrays, fields = [], []
        for c in columns:
            if c not in sources:
                arr = pa.nulls(batch.num_rows, types[c])
            elif c in befores and befores[c].type != now.field(c).type:
                arr = evolve(batch.column(sources[c]), befores[c].type, now.field(c).type, c)
            else:
                arr = batch.column(sources[c])
            arrays.append(arr)
            fields.append(pa.field(c, arr.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def corrupt(table: PaimonTable, pf: PaimonFile, exc: BaseException) -> BaseException:
    """The error for a data file that is missing or cannot be read; the store's own error as it
    is when the store failed (unreachable, refused: not a damaged file)."""
    if isinstance(exc, StorageError) and not isinstance(exc, ObjectNotFoundError):
        return exc
    what = "is missing" if isinstance(exc, FileNotFoundError) else f"is unreadable: {exc}"
    return CorruptTableError(f"data file {pf.path} of Paimon table {table.name} {what}", path=pf.path)


def deleted_positions(table: PaimonTable, pf: PaimonFile, deletion: DeletionFile | None) -> np.ndarray | None:
    """The sorted row positions of `pf` that its deletion vector marks (None: none), each
    checked to be a row of the file."""
    if deletion is None:
        return None
    bitmap = table.deleted_rows(deletion)
    if not len(bitmap):
        return None
    if bitmap.max() >= pf.row_count:
        raise CorruptTableError(f"the deletion vector of data file {pf.path} (in {deletion.path}) marks row "
                                f"{bitmap.max()}, the file holds {pf.row_count}", path=deletion.path)
    positions = bitmap.to_array()  # array('I') of a 32-bit bitmap, array('Q') of a 64-bit one
    return np.frombuffer(positions, dtype=np.uint64 if positions.itemsize == 8 else np.uint32).astype(np.int64)


def may_hold_retractions(t: PaimonTable, f: PaimonFile) -> bool:
    """Whether a data file may hold retractions (-U = 1, -D = 3) by its Parquet footer's
    statistics of the kind column: a row group whose range holds 1 or 3 may (+I = 0 and +U = 2
    alone do not); an ORC file, or one without those statistics, may."""
    if not f.file_name.endswith(".parquet"):
        return True
    try:
        metadata = parquet_fragment(t.source(f)).metadata
        index = metadata.schema.names.index(KIND_COLUMN)
    except ValueError:
        return True
    except (OSError, pa.ArrowException) as exc:
        raise corrupt(t, f, exc) from None
    for g in range(metadata.num_row_groups):
        statistics = metadata.row_group(g).column(index).statistics
        if statistics is None or not statistics.has_min_max:
            return True
        if statistics.max >= 3 or statistics.min <= 1 <= statistics.max:
            return True
    return False


@dataclass(frozen=True, eq=False)
class PaimonFileRef:
    """Where a Paimon table's data file is and how it maps onto the schema a read uses: what
    a `DataFileMeta` of a Paimon table carries (`origin`).  A *plain* file (Parquet, written
    under the read schema, with its `_KEY_` columns) is read by the engine's own Parquet path
    from `source()`; any other through `read`."""

    table: PaimonTable
    file: PaimonFile
    schema: PaimonSchema                    # the schema reads see the file under
    deletion: DeletionFile | None = None

    def source(self) -> str | StoredFile:
        return self.table.source(self.file)

    def written_options(self) -> Any:
        """The engine's options of the schema the file was written under — the layout it was
        laid out for, as Java's incremental clustering reads a file's own schema —, or None
        when they no longer parse."""
        try:
            return table_options(self.table.schema(self.file.schema_id))
        except MergeTreeError:
            return None

    @cached_property
    def planned_delete_count(self) -> int:
        """The retractions a compaction plans with: the manifest's count, or where a level-0 file
        records none, all rows if its footer says it may hold some (pypaimon records 0 for
        level-0 files of -D rows; planned as holding them, such a file is never moved up
        unchanged).  Files above level 0 are compaction outputs: their count is trusted."""
        pf = self.file
        if pf.delete_count or pf.level > 0 or not self.schema.primary_keys:
            return pf.delete_count
        return pf.row_count if may_hold_retractions(self.table, pf) else 0

    @property
    def key_ordered(self) -> bool:
        """Are its rows in key order (not a clustered file: `PaimonSchema.clustering_columns`)?"""
        return not (self.file.level > 0 and self.schema.clustering_columns)

    @cached_property
    def holds_retractions(self) -> bool:
        """Whether the file may hold retractions, for a read to decide if its kind column
        matters: the manifest's count where it says some, else the footer's statistics of the
        kind column (a count of 0 is not proof: pypaimon records 0 for files of -D rows, and
        Java's compaction may move such a file up a level unchanged)."""
        return self.file.delete_count > 0 or may_hold_retractions(self.table, self.file)

    @property
    def path(self) -> str:
        return self.file.path

    def conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """A batch of the file with its columns in the read schema's types (a writer may store
        a type another way pyarrow reads back differently)."""
        types = self._layout_types
        if all(types.get(f.name, f.type) == f.type for f in batch.schema):
            return batch
        arrays = []
        for f, column in zip(batch.schema, batch.columns):
            wanted = types.get(f.name, f.type)
            try:
                arrays.append(column if column.type == wanted else column.cast(wanted))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(f"column {f.name!r} of Paimon table {self.table.name} holds {column.type} "
                                          f"in {self.file.path}, its schema says {wanted}: {exc}") from None
        return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)

    def without_deletion(self) -> PaimonFileRef:
        """The same file with no deletion vector applied (every row, positions from its start)."""
        return PaimonFileRef(self.table, self.file, self.schema)

    @property
    def deleted_count(self) -> int:
        """The rows its deletion vector marks (the vector decoded when the manifest does not say)."""
        if self.deletion is None:
            return 0
        if self.deletion.range.cardinality is not None:
            return int(self.deletion.range.cardinality)
        positions = self.deleted_positions()
        return 0 if positions is None else len(positions)

    def may_match(self, f: Any) -> bool:
        """Whether the file may hold rows matching `f` (normalized) by its file index; True
        when no index covers the filter's columns, or the index cannot tell."""
        if f is None or isinstance(f, pc.Expression):
            return True
        if not (flt.columns_of(f) or set()) & indexed_columns(self.schema.options):
            return True
        return file_index_may_match(self.table, self.file, self.schema, f)

    # -- what the file has of each lever (`DataFileMeta.blooms` and the others) -----------
    @cached_property
    def _written_schema(self) -> PaimonSchema:
        """The schema the file was written under."""
        pf = self.file
        return self.schema if pf.schema_id == self.schema.id else self.table.schema(pf.schema_id)

    def _current_names(self) -> dict[str, str]:
        """The file's column names -> the read schema's, for columns of the same type."""
        by_id = {f.id: f for f in self._written_schema.fields}
        return {by_id[f.id].name: f.name for f in self.schema.fields
                if f.id in by_id and same_type(by_id[f.id].type, f.type)}

    def parquet_blooms(self) -> dict[str, ColumnBloom]:
        """Parquet's own Bloom filters in the file, by read column: the columns its schema asked
        them for (`tables.parquet_blooms`), described from its footer once."""
        return self._blooms

    def bloom_declared(self) -> frozenset[str]:
        """The read columns its schema asked Parquet's writer to give Bloom filters."""
        written = self.written_options()
        if not self.file.file_name.endswith(".parquet") or written is None or not written.bloom_columns:
            return frozenset()
        names = self._current_names()
        return frozenset(names[c] for c in written.bloom_columns if c in names)

    @cached_property
    def _blooms(self) -> dict[str, ColumnBloom]:
        declared = self.bloom_declared()
        if not declared:
            return {}
        names = self._current_names()
        columns = [c for c in names if names[c] in declared]
        source = self.source()
        try:
            if isinstance(source, StoredFile):
                found = _blooms.get_keyed((*source.key, *columns), lambda: describe(source, columns))
            else:
                found = _blooms.get(source, lambda: describe(source, columns), *columns)
        except (SchemaMismatchError, UnsupportedTypeError, InvalidArgumentError):
            # a column stored in a way no filter is probed for
            return {}
        return {names[c]: b for c, b in found.items() if any(length for _, length in b.filters)}

    def file_index_columns(self, index_type: str) -> frozenset[str]:
        """The read columns the file's own Paimon file index covers with `index_type`
        ("bitmap", "bloom-filter"): read from its entry, or its index file's head."""
        index = file_index(self.table, self.file, self._written_schema)
        if index is None:
            return frozenset()
        names = self._current_names()
        return frozenset(names[c] for c, kinds in index.loaders.items() if index_type in kinds and c in names)

    def preaggregates(self) -> dict[str, dict[str, Any]]:
        """Its pre-aggregates by model name, from its extra files
        (``<file>.agg-<name>-<signature>.parquet``: `preaggregates.sidecar_of`)."""
        prefix, out = self.file.file_name + ".agg-", {}
        for extra in self.file.record["_FILE"].get("_EXTRA_FILES") or ():
            middle = extra[len(prefix):-len(".parquet")] if extra.startswith(prefix) and extra.endswith(".parquet") \
                else ""
            name, _, signature = middle.rpartition("-")
            if name and len(signature) == 12:
                out[name] = {"signature": signature, "file": extra}
        return out

    def extra_source(self, name: str) -> StoredFile:
        """Where its extra file `name` is (beside it)."""
        return file_beside(self.table, self.file, name)

    @cached_property
    def sorted_by(self) -> tuple[str, ...]:
        """The columns its rows are sorted by (ascending, nulls first), as its Parquet footer's
        sorting columns say — the same in every row group — in read names; () if none."""
        if not self.file.file_name.endswith(".parquet"):
            return ()
        try:
            metadata = parquet_fragment(self.source()).metadata
        except (OSError, pa.ArrowException) as exc:
            raise corrupt(self.table, self.file, exc) from None
        orders = {metadata.row_group(i).sorting_columns for i in range(metadata.num_row_groups)}
        if len(orders) != 1:
            return ()
        names = self._current_names()
        out = []
        for column in next(iter(orders)):
            path = metadata.schema.column(column.column_index).path
            if column.descending or not column.nulls_first or path not in names:
                return ()
            out.append(names[path])
        return tuple(out)

    def deleted_positions(self) -> np.ndarray | None:
        """The rows its deletion vector marks, sorted (None: none); decoded once."""
        if self.deletion is None:
            return None
        return self._deleted

    @cached_property
    def plain(self) -> bool:
        """Whether the engine's Parquet reader reads it as it is: a Parquet file of the read
        schema with its key copies (a footer read, cached)."""
        return self._current_parquet and not self.thin

    @cached_property
    def thin(self) -> bool:
        """Whether it is a thin-mode Parquet file of the read schema: plain but for its key
        copies, which are its key columns (a point lookup's page index reads it under both names)."""
        if not self._current_parquet or not self.schema.primary_keys:
            return False
        pf = self.file
        try:
            return bool(thin_keys(self.source(), pf.file_name, [KEY_PREFIX + k for k in self.schema.trimmed_keys]))
        except (OSError, pa.ArrowException) as exc:
            raise corrupt(self.table, pf, exc) from None

    @property
    def _current_parquet(self) -> bool:
        return self.file.schema_id == self.schema.id and self.file.file_name.endswith(".parquet")

    # decoded once per file reference (a cached_property writes the instance's __dict__, which a
    # frozen dataclass allows)
    @cached_property
    def _deleted(self) -> np.ndarray | None:
        return deleted_positions(self.table, self.file, self.deletion)

    @cached_property
    def _layout_types(self) -> dict[str, pa.DataType]:
        return {f.name: f.type for f in file_layout(self.schema)}

    def read(self, columns: list[str] | None, row_filter: pc.Expression | None,
             batch_rows: int) -> Iterator[pa.RecordBatch]:
        """The file's live rows in the read schema's file layout (`columns` of it; None: all),
        mapped as its format, thin mode and schema need; `row_filter` over that layout."""
        layout = [f.name for f in file_layout(self.schema)] if self.schema.primary_keys else self.schema.names
        # an append table's files hold its columns only; a filter may name columns the read does
        # not return: every column is read then, and the asked ones kept after the filter
        names = layout if columns is None or row_filter is not None else columns
        deleted = self.deleted_positions()
        try:
            if self.file.schema_id != self.schema.id:
                stream = evolved_batches(self.table, self.file, self.schema, names, batch_rows, deleted)
            else:
                stream = read_data_file(self.source(), names, None, batch_rows, deleted=deleted)
            for batch in stream:
                if row_filter is not None:
                    kept = pa.Table.from_batches([batch]).filter(row_filter)
                    if columns is not None:
                        kept = kept.select(columns)
                    batches = kept.combine_chunks().to_batches()
                    if not batches:
                        continue
                    batch = batches[0]
                if batch.num_rows:
                    yield batch
        except MemoryError:  # out of memory is not a damaged file
            raise
        except (OSError, pa.ArrowException) as exc:
            raise corrupt(self.table, self.file, exc) from None
