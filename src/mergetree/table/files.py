"""Data files: Parquet files of one bucket, each a sorted run (primary-key tables),
and the metadata a manifest records for each."""
from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import CorruptTableError
from ..merge.row_kind import retraction_kinds
from ..storage import StorageError, Store
from .display import count_text, size_text
from .dvfiles import DeletionVectorRef, drop_deleted
from .filecache import FileCache
from .indexes import bloom
from .indexes.bloom import ColumnBloom
from .journal import creating
from .levers.preaggregates import sidecar_of, write_preaggregate
from .objects import StoredFile, is_local, source, table_path
from .options import JAVA_DELTA_ENCODING, TableOptions
from .schema import KIND_COLUMN, SEQUENCE_COLUMN, TableSchema
from .type_policy import supports
from .values import decode_value, encode_value

if TYPE_CHECKING:
    import pyarrow.dataset as ds

__all__ = [
    "MERGE_READ_ROWS",
    "POSITION_COLUMN",
    "READ_BATCH_ROWS",
    "DataFileMeta",
    "DataFileWriter",
    "FileOpener",
    "batch_rows_for",
    "build_file_indexes",
    "deleted_of",
    "delta_columns",
    "dictionary_columns",
    "dictionary_worthy",
    "file_metadata",
    "final_rows",
    "key_row_groups",
    "parquet_fragment",
    "read_data_file",
    "read_key_positions",
    "read_parquet",
    "read_rows_at",
    "read_run",
    "source_of",
    "write_data_file",
    "write_rolled",
    "write_sorted_run",
]

POSITION_COLUMN = "_POSITION"  # a row's position in its data file (not stored: `read_key_positions`)
# data files (no delta encodings for Java's sake, unless `java-reader-version` allows
# them: larger pages decode faster): groups of 32,768 rows and pages of 8,192 — measured on 1M
# compacted rows of five columns, best of 15: a full read 45 ms (pages of 4,096: 48), two value
# columns 20 ms (4,096: 23), a point lookup 1.6 ms (4,096: 1.35; 16,384: 2.0); a selective read
# of 1% of a deletion-vector table 19 ms (groups of 131,072: 46); no mergetree index counts
# their rows by group
PAIMON_ROW_GROUP_ROWS = 32_768
PAIMON_PAGE_ROWS = 8_192
READ_BATCH_ROWS = 65536
# a merge holds a batch of every run at once: many runs read smaller batches, so a merge of
# any fan-in holds about this many rows (and its batches stay in cache)
MERGE_READ_ROWS = 16 * READ_BATCH_ROWS


def batch_rows_for(runs: int) -> int:
    """Rows per batch when reading one of `runs` runs merged together: whole pages (a batch that
    ends inside a page keeps the rest of it decoded beside the batch)."""
    pages = max(MERGE_READ_ROWS // max(runs, 1) // PAIMON_PAGE_ROWS, 1)
    return min(pages * PAIMON_PAGE_ROWS, READ_BATCH_ROWS)


# without table options (and by default above level 0, see `TableOptions.codec_for`): zstd
# (level 1) reads ~20% faster than snappy and writes ~35% faster, with files ~2.4x smaller
# (measured on the Spark bench's tables); Apache Paimon writes zstd by default too.
DATA_FILE_COMPRESSION = "zstd"


# a dictionary page pays when values repeat; where at least this share of a sample's values
# are distinct, it makes the file larger and every read slower (each value is decoded
# through it), so the column is written plain.  (parquet-mr falls back the same way; Arrow's
# writer only does when the dictionary outgrows its page.)  On the Spark bench's tables, plain
# instead of dictionary for their all-distinct int and string columns: 30% smaller files, 27%
# faster decoding.
DICTIONARY_MAX_DISTINCT = 0.5
DICTIONARY_MIN_SAMPLE = 1024  # fewer rows say too little: keep the dictionary
# the rows that decide: counting the distinct values of a whole 400,000-row write took 108 MB of
# hash table for one int64 column (a thread per bucket each); a row group's worth says as much
DICTIONARY_SAMPLE_ROWS = 8192


def dictionary_columns(schema: TableSchema, sample: pa.Table | pa.RecordBatch) -> list[str]:
    """The columns of a data file worth a dictionary page: not the key columns, their value
    copies or the sequence number (unique within a file: a dictionary only doubles them), not
    floats (rarely repeated), and not a column whose values in `sample` (the file's first
    rows) are mostly distinct; strings, integers and the rest keep it."""
    return dictionary_worthy(sample, set(schema.file_key) | set(schema.primary_key) | {SEQUENCE_COLUMN})


def dictionary_worthy(sample: pa.Table | pa.RecordBatch, unique: set[str]) -> list[str]:
    """`dictionary_columns` for any file layout: `unique` names the columns whose values never
    repeat within a file (keys, sequence numbers)."""
    out = []
    for f in sample.schema:
        if f.name in unique or pa.types.is_floating(f.type):
            continue
        if sample.num_rows >= DICTIONARY_MIN_SAMPLE and \
                _mostly_distinct(sample.column(f.name).slice(0, DICTIONARY_SAMPLE_ROWS)):
            continue
        out.append(f.name)
    return out


def delta_columns(schema: TableSchema, columns: pa.Schema) -> list[str]:
    """The integer-like key columns (and their value copies) and the sequence number: ascending
    within a file (the key first, then per key version), so DELTA_BINARY_PACKED stores small
    differences where PLAIN stores whole values.  On the Spark bench's tables: the key column
    4x smaller and twice as fast to decode, the sequence column nearly nothing, files 25%
    smaller."""
    ordered = set(schema.file_key) | set(schema.primary_key) | {SEQUENCE_COLUMN}
    return [f.name for f in columns if f.name in ordered and _delta_worthy(f.type)]


def _delta_worthy(dtype: pa.DataType) -> bool:
    """Stored as Parquet INT32 or INT64 (what DELTA_BINARY_PACKED takes)."""
    t = pa.types
    return bool(t.is_integer(dtype) or t.is_date(dtype) or t.is_timestamp(dtype) or t.is_time(dtype)
                or t.is_duration(dtype))


def _mostly_distinct(column: pa.Array | pa.ChunkedArray) -> bool:
    try:
        distinct = pc.count_distinct(column, mode="all").as_py()
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):  # nested types: leave it to the writer
        return False
    return distinct >= DICTIONARY_MAX_DISTINCT * len(column)


@dataclass(frozen=True)
class DataFileMeta:
    """What a manifest knows about one data file (paths are relative to the table)."""

    file_name: str          # e.g. "dt=2024-01-01/bucket-3/data-<uuid>.parquet"
    level: int
    row_count: int
    file_size: int
    min_key: tuple = ()
    max_key: tuple = ()
    min_seq: int = 0
    max_seq: int = 0
    delete_count: int = 0
    # column -> (min, max, null_count); min/max None when not kept for the type
    stats: dict[str, tuple[Any, Any, int]] = field(default_factory=dict, hash=False, compare=False)
    # what its writer or the optimizer records of it (JSON, see `build_file_indexes`): "preagg" model ->
    # {rows, source_rows, signature}, "sorted_by" [columns] (the order of its rows, when it has one),
    # "optimized" (the optimizer's mark); a committed file's levers are its origin's
    indexes: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # deletion-vector tables: the rows of this file that newer versions replaced.  Present (even
    # empty) on a *resolved* file, whose live rows no other resolved file of the bucket repeats
    deletion_vector: DeletionVectorRef | None = None
    # a Paimon table's file: where it is and how it maps onto the read schema (a
    # `table.paimon.files.PaimonFileRef`); None for a file no Paimon manifest describes yet
    origin: Any = field(default=None, hash=False, compare=False, repr=False)

    def __repr__(self) -> str:
        keys = f", keys {self.min_key}..{self.max_key}" if self.min_key or self.max_key else ""
        vector = f", {self.deleted_rows:,} deleted" if self.deletion_vector is not None else ""
        return (f"DataFileMeta({self.file_name!r}, level {self.level}, {count_text(self.row_count, 'row')}, "
                f"{size_text(self.file_size)}{keys}{vector})")

    @property
    def key_ordered(self) -> bool:
        """Are its rows in key order?  Every file's are but a Paimon `pk-clustering-override`
        table's above level 0, sorted by the clustering columns (read alone, never merged)."""
        return self.origin is None or self.origin.key_ordered

    @property
    def holds_retractions(self) -> bool:
        """Whether the file may hold retraction rows (-U, -D), so that a read needs its kind
        column: its count says (a Paimon file whose count its writer may have left at 0, which
        its entry records as every row, asks its origin: the footer's statistics)."""
        if self.delete_count == 0 or self.origin is None:
            return self.delete_count > 0
        return self.origin.holds_retractions

    @property
    def deleted_rows(self) -> int:
        """Rows its deletion vector removes (a Paimon file's vector is its origin's, resolved or not)."""
        if self.origin is not None:
            return self.origin.deleted_count
        return self.deletion_vector.cardinality if self.deletion_vector is not None else 0

    def every_row(self) -> DataFileMeta:
        """The file read whole: no deletion vector applied, positions from its start."""
        return replace(self, deletion_vector=None,
                       origin=None if self.origin is None else self.origin.without_deletion())

    @property
    def resolved(self) -> bool:
        return self.deletion_vector is not None

    def with_deletion_vector(self, ref: DeletionVectorRef | None) -> DataFileMeta:
        return replace(self, deletion_vector=ref)

    # What a file has of each lever: they come from the file itself and its manifest entry,
    # through its origin: its Parquet footer (Bloom filters, sorting columns), its file index, its
    # extra files (pre-aggregates).
    def sidecars(self) -> list[str]:
        """The files beside this data file written with it that no manifest lists yet (its
        pre-aggregates' extra files, before its entry names them)."""
        if self.origin is not None:
            return []
        return [f"{self.file_name}.agg-{name}-{d['signature']}.parquet"
                for name, d in self.indexes.get("preagg", {}).items() if "signature" in d]

    def bloom_columns(self) -> frozenset[str]:
        """The columns it was written with Bloom filters for (the columns its schema asked
        Parquet's writer for — a writer may leave a filter out where the column's dictionary
        says as much, and the file is no less indexed)."""
        return self.origin.bloom_declared() if self.origin is not None else frozenset()

    def blooms(self) -> dict[str, ColumnBloom]:
        """Its Bloom filters by column: Parquet's own, in the file."""
        return self.origin.parquet_blooms() if self.origin is not None else {}

    def bitmap_columns(self) -> frozenset[str]:
        """The columns its file index has a bitmap of."""
        return self.origin.file_index_columns("bitmap") if self.origin is not None else frozenset()

    def preaggregates(self) -> dict[str, dict[str, Any]]:
        """Its pre-aggregates by model name, as `write_preaggregate` described them."""
        if self.origin is not None:
            return self.origin.preaggregates()
        return dict(self.indexes.get("preagg", {}))

    @property
    def sorted_by(self) -> tuple[str, ...]:
        """The order of the rows inside the file, when it has one."""
        if self.origin is not None:
            return self.origin.sorted_by
        return tuple(self.indexes.get("sorted_by", ()))

    def with_indexes(self, indexes: dict[str, Any]) -> DataFileMeta:
        return replace(self, indexes=indexes)

    def with_level(self, level: int) -> DataFileMeta:
        return replace(self, level=level)

    def shifted(self, by: int) -> DataFileMeta:
        """The file with its entry's sequence numbers moved up by `by` (an append file's: its rows
        hold none)."""
        return replace(self, min_seq=self.min_seq + by, max_seq=self.max_seq + by)

    def to_json(self) -> dict:
        return {
            "file_name": self.file_name, "level": self.level, "row_count": self.row_count,
            "file_size": self.file_size, "min_key": [encode_value(v) for v in self.min_key],
            "max_key": [encode_value(v) for v in self.max_key], "min_seq": self.min_seq,
            "max_seq": self.max_seq, "delete_count": self.delete_count,
            "stats": {c: [encode_value(lo), encode_value(hi), n] for c, (lo, hi, n) in self.stats.items()},
            **({"indexes": self.indexes} if self.indexes else {}),
            **({"deletion_vector": self.deletion_vector.to_json()} if self.deletion_vector is not None else {}),
        }

    @classmethod
    def from_json(cls, d: dict) -> DataFileMeta:
        return cls(d["file_name"], d["level"], d["row_count"], d["file_size"],
                   tuple(decode_value(v) for v in d["min_key"]), tuple(decode_value(v) for v in d["max_key"]),
                   d["min_seq"], d["max_seq"], d["delete_count"],
                   {c: (decode_value(lo), decode_value(hi), n) for c, (lo, hi, n) in d["stats"].items()},
                   dict(d.get("indexes", {})),
                   DeletionVectorRef.from_json(d["deletion_vector"]) if "deletion_vector" in d else None)


def _min_max(col: pa.Array | pa.ChunkedArray) -> tuple[Any, Any]:
    """A column's smallest and largest value as Python values (pyarrow has no min_max kernel
    for durations: they are compared as the int64 counts they are)."""
    if pa.types.is_duration(col.type):
        bounds = pc.min_max(col.cast(pa.int64()))
        return tuple(pa.scalar(bounds[m].as_py(), pa.int64()).cast(col.type).as_py() for m in ("min", "max"))
    bounds = pc.min_max(col)
    return bounds["min"].as_py(), bounds["max"].as_py()


class DataFileWriter:
    """One Parquet data file written batch by batch (rows sorted by key in a primary-key
    table), its manifest metadata gathered on the way: memory is a row group, not the file —
    unless bitmap indexes or pre-aggregates are asked for, which are built from the file's
    rows at `close`.  `abort` removes what was written.  A local file is written in place; on
    an object store the file streams up as a multipart upload and appears, whole, at `close`."""

    def __init__(self, storage: Store, directory: str, schema: TableSchema, level: int,
                 options: TableOptions | None = None, sorted_by: Sequence[str] = (), name: str | None = None,
                 file_format: str = "parquet", stored_columns: Sequence[str] | None = None) -> None:
        self.storage, self.schema, self.level, self.options, self.sorted_by = storage, schema, level, options, sorted_by
        self.name = name or f"{directory}/data-{uuid.uuid4()}-0.parquet"  # the table's writer names its files
        # "parquet" or "orc" (a Paimon table's `file.format`); `stored_columns`: the columns the
        # file holds when not every column of the batches (a Paimon thin-mode file has no key copies)
        self.file_format = file_format
        self.stored_columns = list(stored_columns) if stored_columns is not None else None
        self.path = os.path.join(storage.root, self.name) if is_local(storage) else None  # type: ignore[attr-defined]
        self._sink: Any = None  # an object store's upload
        self.rows = 0
        self.bytes = 0
        self._writer: pq.ParquetWriter | None = None
        # (bitmaps are the file index, which the table's writer builds)
        self._kept: list[pa.RecordBatch] | None = (
            [] if options is not None and options.aggregate_models else None)
        self._bounds: dict[str, tuple[list, list, int]] = {}
        self._first_key: tuple = ()
        self._last_key: tuple = ()
        self._seq: tuple[list, list] = ([], [])
        self._deletes = 0
        self._pending: list[pa.RecordBatch] = []  # rows not yet in a whole row group
        self._pending_rows = 0
        self.row_group_rows = PAIMON_ROW_GROUP_ROWS
        self.page_rows = PAIMON_PAGE_ROWS

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        if self._pending_rows >= self.row_group_rows:
            self._write_row_groups(final=False)
        self.rows += batch.num_rows
        self.bytes += batch.nbytes
        if self._kept is not None:
            self._kept.append(batch)
        for name in self.schema.schema.names:
            col = batch.column(name)
            lows, highs, nulls = self._bounds.get(name, ([], [], 0))
            if supports(col.type, "minmax") and col.null_count < len(col):
                lo, hi = _min_max(col)
                lows.append(lo)
                highs.append(hi)
            self._bounds[name] = (lows, highs, nulls + col.null_count)
        if self.schema.has_primary_key:
            keys = batch.select(self.schema.file_key)
            if not self._first_key:
                self._first_key = tuple(keys.slice(0, 1).to_pylist()[0].values())
            self._last_key = tuple(keys.slice(batch.num_rows - 1, 1).to_pylist()[0].values())
            bounds = pc.min_max(batch.column(SEQUENCE_COLUMN))
            self._seq[0].append(bounds["min"].as_py())
            self._seq[1].append(bounds["max"].as_py())
            self._deletes += pc.sum(pc.is_in(batch.column(KIND_COLUMN), retraction_kinds())).as_py() or 0

    @property
    def written_bytes(self) -> int:
        """Bytes of the file as written so far (its finished row groups)."""
        if self._sink is not None:
            return int(self._sink.tell())
        if self._writer is not None and self.path is not None:
            return os.path.getsize(self.path)
        return 0

    def _codec(self) -> str:
        return self.options.codec_for(self.level) if self.options is not None else DATA_FILE_COMPRESSION

    def _target(self) -> Any:
        """Where the Parquet writer writes: the local path, or an object store's upload (which
        the writer does not close: `close` and `abort` do)."""
        creating(self.storage, self.name, *self.sidecar_names())
        if self.path is not None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            return self.path
        self._sink = self.storage.open_output(self.name)
        return self._sink

    def sidecar_names(self) -> list[str]:
        """The files its options add beside it (pre-aggregates)."""
        options = self.options
        if options is None:
            return []
        return [sidecar_of(self.name, m) for m in options.aggregate_models.values()]

    def _open(self, sample: pa.Table) -> Any:
        """The Parquet (or ORC) writer, set up from the file's first rows (which columns get a
        dictionary)."""
        target = self._target()
        options = self.options
        if self.file_format == "orc":
            from pyarrow import orc

            codec = {"gzip": "zlib", "none": "uncompressed"}.get(self._codec(), self._codec())
            return orc.ORCWriter(target, compression=codec, stripe_size=64 * 2**20)
        bloom_columns = {c: self.schema.schema.field(c).type for c in (options.bloom_columns if options else ())}
        # files keep to the encodings the table's oldest Java reader decodes (Java 1.2 on: deltas)
        delta = delta_columns(self.schema, sample.schema) if (
            options is not None and options.java_reader_version >= JAVA_DELTA_ENCODING) else []
        codec = self._codec()
        # rows sorted inside the file (`sort_within`) say so in the footer, for every reader
        sorting = pq.SortingColumn.from_ordering(sample.schema, [(c, "ascending") for c in self.sorted_by],
                                                 "at_start") if self.sorted_by else None
        return pq.ParquetWriter(
            target, sample.schema, compression=codec,
            compression_level=options.zstd_level if options is not None and codec == "zstd" else None,
            use_dictionary=dictionary_columns(self.schema, sample),
            column_encoding=dict.fromkeys(delta, "DELTA_BINARY_PACKED") or None,
            write_page_index=True, max_rows_per_page=self.page_rows, sorting_columns=sorting,
            store_decimal_as_integer=True,
            bloom_filter_options=bloom.write_options(bloom_columns, self.row_group_rows, options.bloom_fpp)
            if bloom_columns and options else None)

    def _write_row_groups(self, final: bool) -> None:
        """Write the pending rows as row groups of exactly `row_group_rows` rows (the last one of
        the file may be shorter): row-group skipping and point lookups count rows so."""
        pending = pa.Table.from_batches(self._pending)
        stored = pending if self.stored_columns is None else pending.select(self.stored_columns)
        if self._writer is None:
            self._writer = self._open(stored)
        whole = pending.num_rows if final else pending.num_rows - pending.num_rows % self.row_group_rows
        if whole and self.file_format == "orc":
            self._writer.write(stored.slice(0, whole))
        elif whole:
            self._writer.write_table(stored.slice(0, whole), row_group_size=self.row_group_rows)
        rest = pending.slice(whole)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def close(self) -> DataFileMeta:
        """Finish the file (and its sidecars); its manifest metadata."""
        if self._pending_rows:
            self._write_row_groups(final=True)
        if self._writer is None:  # no rows: still a valid, empty file
            empty = (self.schema.file_schema if self.schema.has_primary_key else self.schema.schema).empty_table()
            if self.stored_columns is not None:
                empty = empty.select(self.stored_columns)
            if self.file_format == "orc":
                self._writer = self._open(empty)
                self._writer.write(empty)
            else:
                self._writer = pq.ParquetWriter(self._target(), empty.schema, compression=self._codec())
        self._writer.close()
        if self._sink is not None:
            size = self._sink.tell()
            self._sink.close()  # the object appears, whole
        else:
            size = os.path.getsize(self.path)  # type: ignore[arg-type]
        indexes: dict[str, Any] = {}
        if self.options is not None:
            rows = (pa.Table.from_batches(self._kept) if self._kept
                    else (self.schema.file_schema if self.schema.has_primary_key
                          else self.schema.schema).empty_table())
            indexes = build_file_indexes(self.storage, self.name, rows, self.schema, self.options, self.sorted_by,
                                         size)
        stats = {}
        for f in self.schema.schema:
            lows, highs, nulls = self._bounds.get(f.name, ([], [], 0))
            lo = hi = None
            if lows:  # the min of the batches' minima is the file's minimum (Arrow's rules)
                lo = _min_max(pa.array(lows, f.type))[0]
                hi = _min_max(pa.array(highs, f.type))[1]
            stats[f.name] = (lo, hi, nulls)
        min_seq = min(self._seq[0], default=0)
        max_seq = max(self._seq[1], default=0)
        return DataFileMeta(self.name, self.level, self.rows, size, self._first_key,
                            self._last_key, min_seq, max_seq, self._deletes, stats, indexes)

    def abort(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
            except (OSError, pa.ArrowException):
                pass
        if self._sink is not None:
            self._sink.abort()  # never completed: nothing appears
        remove_uncommitted(self.storage, [self.name, *self.sidecar_names()])


# opens one new data file of a bucket, named and placed as the table's format does it
# (`TableDirectory.open_file`)
FileOpener = Callable[[], DataFileWriter]


def write_data_file(open_file: FileOpener, table: pa.Table) -> DataFileMeta:
    """Write one data file (already sorted by key for primary-key tables) with the indexes and
    pre-aggregates its writer's options ask for (its sidecars are written first; a crash
    leaves orphans that cleanup removes)."""
    writer = open_file()
    try:
        for batch in table.to_batches():
            writer.write(batch)
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def write_rolled(open_file: FileOpener, batches: Iterable[pa.RecordBatch], schema: TableSchema,
                 options: TableOptions, disk_bytes_per_row: float | None = None) -> Iterator[DataFileMeta]:
    """Stream sorted batches into files rolled at about `options.target_file_size` bytes on
    disk, as Java's writers roll them (its small-file rules compare those sizes): the memory is
    a batch and a row group, not a file.  The size on disk is known at each whole row group;
    with `disk_bytes_per_row` (the input files') a file is also rolled at the rows that make the
    target, for targets below a row group (a clustered layout's files).  A failure removes the
    file being written; the caller owns the ones yielded."""
    rows_per_file = max(int(options.target_file_size / disk_bytes_per_row), 1) if disk_bytes_per_row else None
    writer: DataFileWriter | None = None
    in_file = 0
    try:
        for whole in batches:
            pieces = [whole]
            if rows_per_file is not None and in_file + whole.num_rows > rows_per_file:
                first = rows_per_file - in_file
                pieces = [whole.slice(0, first)] + [whole.slice(at, rows_per_file)
                                                    for at in range(first, whole.num_rows, rows_per_file)]
            for batch in pieces:
                if writer is None:
                    writer = open_file()
                writer.write(batch)
                in_file += batch.num_rows
                if writer.written_bytes >= options.target_file_size or \
                        (rows_per_file is not None and in_file >= rows_per_file):
                    meta = writer.close()
                    writer, in_file = None, 0
                    yield meta
        if writer is not None:
            meta = writer.close()
            writer = None
            yield meta
    except BaseException:
        if writer is not None:  # also a file whose close failed
            writer.abort()
        raise


def rows_of(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """Batches read from data files as one table of `schema`'s columns.  A Paimon file's columns
    may say NOT NULL where the schema does not (its key copies), or the other way round: the
    batches' own schema is kept, and `schema` gives only an empty table's."""
    batches = list(batches)
    return pa.Table.from_batches(batches) if batches else schema.empty_table()


def final_rows(table: pa.Table, schema: TableSchema) -> pa.Table:
    """A data file's rows as a read sees them when nothing overlaps the file: retractions
    dropped, table columns only."""
    if not schema.has_primary_key:
        return table
    keep = pc.invert(pc.is_in(table.column(KIND_COLUMN), retraction_kinds()))
    return table.filter(keep).select(schema.schema.names)


def build_file_indexes(storage: Store, name: str, table: pa.Table, schema: TableSchema, options: TableOptions,
                       sorted_by: Sequence[str] = (), size: int | None = None) -> dict[str, Any]:
    """The pre-aggregates (their extra files are written here) and sort order of a data file
    (its Bloom filters are in its footer, its bitmaps in its file index)."""
    indexes: dict[str, Any] = {}
    if options.aggregate_models:
        rows = final_rows(table, schema)
        indexes["preagg"] = {
            model.name: write_preaggregate(rows, model, source(storage, sidecar_of(name, model)))
            for model in options.aggregate_models.values()}
    if sorted_by:
        indexes["sorted_by"] = list(sorted_by)
    return indexes


def write_sorted_run(open_file: FileOpener, table: pa.Table, schema: TableSchema, options: TableOptions,
                     discard: Callable[[list[DataFileMeta]], None]) -> list[DataFileMeta]:
    """Write a sorted table as files of about `options.target_file_size` bytes on disk, as Java's
    writers roll them; a failure removes the files already written (`discard`)."""
    if table.num_rows == 0:
        return []
    written: list[DataFileMeta] = []
    try:
        batches = table.to_batches(max_chunksize=PAIMON_PAGE_ROWS)  # the roll is checked batch by batch
        written.extend(write_rolled(open_file, batches, schema, options))
    except BaseException:
        discard(written)
        raise
    return written


def remove_uncommitted(storage: Store, names: Iterable[str]) -> None:
    """Delete files no snapshot references, as cleanup after a failure: it never raises (the
    failure being cleaned up is the error to report) and stops at the first delete that fails
    (the store is likely gone: each further delete would wait out its retries); what is left
    is an orphan that `remove_orphan_files` deletes."""
    for relative in names:
        try:
            storage.delete(relative)  # one that is not there is not an error
        except (StorageError, OSError):
            return


def source_of(storage: Store, meta: DataFileMeta) -> str | StoredFile:
    """What pyarrow reads a data file from: its local path or a `StoredFile` (a Paimon table's
    file may be at an external path: its `origin` knows)."""
    if meta.origin is not None:
        return meta.origin.source()
    return source(storage, meta.file_name, meta.file_size)


def deleted_of(storage: Store, meta: DataFileMeta) -> np.ndarray | None:
    """The row positions a data file's deletion vector marks, sorted (None: none)."""
    return meta.origin.deleted_positions() if meta.origin is not None else None


def read_data_table(storage: Store, meta: DataFileMeta, columns: list[str] | None = None) -> pa.Table | None:
    """A data file's rows whole (its deleted rows left out), in any format the engine reads;
    None when none is left."""
    batches = list(read_data_file(storage, meta, columns))
    return pa.Table.from_batches(batches) if batches else None


def read_data_file(storage: Store, meta: DataFileMeta, columns: list[str] | None = None,
                   row_filter: pc.Expression | None = None,
                   row_groups: Collection[int] | None = None,
                   batch_rows: int = READ_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Stream a data file a row group at a time; `row_filter` keeps only matching rows and
    skips row groups whose statistics rule them out, `row_groups` (an index's verdict) reads
    only those (order is kept).  A missing, truncated or unreadable file raises
    CorruptTableError naming it.  On an object store, a failing request (credentials,
    network) is the store's own error, not a damaged file."""
    if meta.origin is not None and not meta.origin.plain:  # a Paimon file that needs mapping
        for batch in meta.origin.read(columns, row_filter, batch_rows):
            yield meta.origin.conform(batch)
        return
    root = table_path(storage)
    file = source_of(storage, meta)
    path = str(file)
    groups = None if row_groups is None else sorted(row_groups)
    deleted = deleted_of(storage, meta)
    try:
        rows = 0
        if deleted is not None:
            if deleted.size and deleted[-1] >= meta.row_count:
                index = meta.deletion_vector.index if meta.deletion_vector else None
                raise CorruptTableError(f"the deletion-vector index file {index} of table {root} deletes row "
                                        f"{deleted[-1]} of {meta.file_name}, which holds {meta.row_count} rows",
                                        path=f"{root}/{index}")
            stream = _without_deleted(file, columns, row_filter, groups, batch_rows, deleted)
        else:
            stream = read_parquet(file, columns, row_filter, groups, batch_rows)
        for batch in stream:
            rows += batch.num_rows
            if batch.num_rows:
                yield meta.origin.conform(batch) if meta.origin is not None else batch
    except FileNotFoundError:
        raise CorruptTableError(f"data file {meta.file_name} of table {root} is missing", path=path) from None
    except MemoryError:  # out of memory is not a damaged file
        raise
    except StorageError:  # an object store's request failed (credentials, network): not a damaged file
        raise
    except (OSError, pa.ArrowException) as exc:
        raise CorruptTableError(f"data file {meta.file_name} of table {root} is unreadable: {exc}",
                                path=path) from None
    if row_filter is None and groups is None and rows != meta.row_count - (len(deleted) if deleted is not None
                                                                             else 0):
        raise CorruptTableError(f"data file {meta.file_name} of table {root} holds {rows} rows, its manifest "
                                f"says {meta.row_count}", path=path)


def _without_deleted(file: str | StoredFile, columns: list[str] | None, row_filter: pc.Expression | None,
                     groups: list[int] | None, batch_rows: int, deleted: Any) -> Iterator[pa.RecordBatch]:
    """A file's batches with its deleted rows (file positions, sorted) dropped first, then
    `row_filter` applied: positions are counted on the unfiltered rows, so row groups are read
    whole (the filter's statistics still skip some)."""
    fragment, _ = _fragment(file)
    metadata = fragment.metadata
    starts, first = [], 0
    for i in range(metadata.num_row_groups):
        rows = metadata.row_group(i).num_rows
        starts.append((first, rows))
        first += rows
    wanted = list(range(metadata.num_row_groups)) if groups is None else [g for g in groups
                                                                        if g < metadata.num_row_groups]
    if row_filter is not None:  # row groups the filter's statistics rule out are not read
        matching = {piece.row_groups[0].id for piece in fragment.split_by_row_group(row_filter)}
        wanted = [g for g in wanted if g in matching]
    if not wanted:
        return
    read_columns = None if row_filter is not None else columns
    whole = len(wanted) == metadata.num_row_groups  # every row group, in order: no list to pass
    batches = read_parquet(file, read_columns, None, None if whole else wanted, batch_rows)
    for batch in drop_deleted(batches, deleted, [starts[g] for g in wanted]):
        if row_filter is None:
            yield batch
            continue
        kept = pa.Table.from_batches([batch]).filter(row_filter)
        if columns is not None:
            kept = kept.select(columns)
        yield from kept.to_batches()


def read_parquet(path: str | StoredFile, columns: list[str] | None = None, row_filter: pc.Expression | None = None,
                 row_groups: list[int] | None = None, batch_rows: int = READ_BATCH_ROWS,
                 use_threads: bool = False) -> Iterator[pa.RecordBatch]:
    """Batches of a Parquet file, a row group at a time (`row_groups`: only those, in order).
    A filtered read keeps only matching rows, skips row groups by their statistics and reuses
    the file's footer from a cache (see below); `use_threads` decodes an unfiltered read's
    columns in parallel.  Raises OSError or ArrowException as pyarrow does.  A `StoredFile`
    (an object store's) is read with its footer from the cache and its row groups fetched by
    coalesced range requests (`pre_buffer`, up to 64 MiB each, fetched as the scan reaches them)."""
    if row_filter is None and not isinstance(path, StoredFile):
        reader = pq.ParquetFile(path, pre_buffer=False)
        if row_groups is not None:
            row_groups = [g for g in row_groups if g < reader.num_row_groups]
        yield from reader.iter_batches(batch_size=batch_rows, columns=columns, row_groups=row_groups,
                                       use_threads=use_threads)
        return
    # an object store's file goes through the scanner even unfiltered: it coalesces the row groups'
    # ranges into few GETs (ParquetFile pre-buffers one row group at a time: a GET each, in turn)
    fragment, schema = _fragment(path)
    if row_groups is not None:
        row_groups = [g for g in row_groups if g < fragment.num_row_groups]
    source = fragment if row_groups is None else fragment.subset(row_group_ids=row_groups)
    import pyarrow.dataset as ds  # imported when first used: it pulls in pandas (150 ms per CLI start)

    yield from ds.Scanner.from_fragment(source, schema=schema, columns=columns, filter=row_filter,
                                        batch_size=batch_rows, use_threads=False).to_batches()


# Parquet footers of recently filtered (or split) files, with the row-group statistics the scans derive
# from them: a point lookup in a large file otherwise parses hundreds of row groups' metadata
# to read one.  Data files never change under their name; size and mtime guard the rest.
_fragments: FileCache[tuple[ds.ParquetFileFragment, pa.Schema]] = FileCache(max_entries=64)
_LOCAL = pafs.LocalFileSystem()


# an object store's files: row groups fetched by coalesced range requests, columns < 1 MiB apart
# in one (as the store coalesces; pyarrow's default, 8 KiB, made a lookup two GETs of one row group)
@functools.cache
def _remote_format() -> ds.ParquetFileFormat:
    import pyarrow.dataset as ds

    return ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(
        pre_buffer=True, cache_options=pa.CacheOptions(hole_size_limit=1 << 20, range_size_limit=64 << 20,
                                                       lazy=True)))


def parquet_fragment(path: str | StoredFile) -> ds.ParquetFileFragment:
    """A Parquet file as a dataset fragment with its footer parsed, from the footer cache."""
    return _fragment(path)[0]


def _fragment(path: str | StoredFile) -> tuple[ds.ParquetFileFragment, pa.Schema]:
    if isinstance(path, StoredFile):  # keyed on its name and recorded size: no request
        stored = path

        def load_stored() -> tuple[ds.ParquetFileFragment, pa.Schema]:
            # one file object for the cached fragment: pyarrow serializes reads at an offset on it
            fragment = _remote_format().make_fragment(pa.PythonFile(stored.open(), mode="r"), file_size=stored.size)
            fragment.ensure_complete_metadata()
            return fragment, fragment.physical_schema
        return _fragments.get_keyed(stored.key, load_stored)

    def load() -> tuple[ds.ParquetFileFragment, pa.Schema]:
        import pyarrow.dataset as ds

        fragment = ds.ParquetFileFormat().make_fragment(path, filesystem=_LOCAL)
        fragment.ensure_complete_metadata()
        return fragment, fragment.physical_schema
    return _fragments.get(path, load)  # a missing file: pyarrow's FileNotFoundError, as callers expect


def file_metadata(storage: Store, meta: DataFileMeta) -> pq.FileMetaData:
    """A data file's Parquet footer (row groups and their statistics), from the same cache
    filtered reads use; OSError or ArrowException when the file is missing or damaged."""
    return _fragment(source_of(storage, meta))[0].metadata


def read_run(storage: Store, files: list[DataFileMeta], columns: list[str] | None = None,
             row_filter: pc.Expression | None = None,
             row_groups: Mapping[str, Collection[int]] | None = None,
             batch_rows: int = READ_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """A sorted run spread over several non-overlapping files, in key order; `row_groups`
    restricts some files (by name) to some of their row groups."""
    for meta in files:
        yield from read_data_file(storage, meta, columns, row_filter,
                                  None if row_groups is None else row_groups.get(meta.file_name), batch_rows)


def read_key_positions(storage: Store, meta: DataFileMeta, columns: list[str],
                       row_groups: Collection[int] | None = None) -> pa.Table | None:
    """`columns` of a data file's live rows (its deletion vector applied) with each row's
    position in the file, as column `_POSITION` (what a deletion vector records); only the
    `row_groups` given (default: all); None when no row is read."""
    whole = meta.every_row()  # every row, so positions count from the file's start
    # a file mapped through its origin (another schema's, ORC) is read whole
    mapped = meta.origin is not None and not meta.origin.plain
    groups = None if row_groups is None or mapped else sorted(row_groups)
    batches = list(read_data_file(storage, whole, columns, row_groups=groups))
    if not batches:
        return None
    table = pa.Table.from_batches(batches)
    if groups is None:
        positions = np.arange(table.num_rows, dtype=np.int64)
    else:
        starts = _row_group_starts(storage, meta)
        positions = np.concatenate([np.arange(starts[g], starts[g + 1], dtype=np.int64) for g in groups])
        if len(positions) != table.num_rows:
            raise CorruptTableError(f"data file {meta.file_name} of table {table_path(storage)} holds "
                                    f"{table.num_rows} rows in row groups {groups}, its footer says "
                                    f"{len(positions)}", path=str(source_of(storage, meta)))
    table = table.append_column(POSITION_COLUMN, pa.array(positions))
    deleted = deleted_of(storage, meta)
    if deleted is not None:
        table = table.filter(pa.array(~np.isin(positions, deleted, assume_unique=True)))
    return table


def _row_group_starts(storage: Store, meta: DataFileMeta) -> np.ndarray:
    """The first row of each row group, and the file's row count last."""
    metadata = file_metadata(storage, meta)
    return np.cumsum([0] + [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)])


def key_row_groups(storage: Store, meta: DataFileMeta, column: str, wanted: np.ndarray) -> list[int] | None:
    """The row groups of a data file whose statistics on an integer `column` (its first key
    column, ascending) admit one of the `wanted` values (sorted); None when some row group has
    no usable statistics (then every one may)."""
    try:
        metadata = file_metadata(storage, meta)
        index = metadata.schema.names.index(column)
    except (OSError, ValueError, pa.ArrowException):
        return None  # the read reports a damaged file
    out = []
    for g in range(metadata.num_row_groups):
        stats = metadata.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max or not isinstance(stats.min, int) \
                or not isinstance(stats.max, int):
            return None
        if np.searchsorted(wanted, stats.min, "left") < np.searchsorted(wanted, stats.max, "right"):
            out.append(g)
    return out


def read_rows_at(storage: Store, meta: DataFileMeta, positions: np.ndarray) -> pa.Table:
    """The rows of a data file at these positions (sorted, distinct), all columns, in
    position order: only the row groups holding them are read (a file mapped through its
    origin — another schema's, ORC — is read whole: its row groups are not addressed)."""
    whole = meta.every_row()
    if meta.origin is not None and not meta.origin.plain:
        table = pa.Table.from_batches(list(read_data_file(storage, whole, None)))
        return table.take(pa.array(positions))
    starts = _row_group_starts(storage, meta)
    groups = np.unique(np.searchsorted(starts, positions, side="right") - 1)
    # each group's offset in the stream of the groups read
    offsets = dict(zip(groups.tolist(), np.cumsum([0] + [int(starts[g + 1] - starts[g]) for g in groups])))
    table = pa.Table.from_batches(list(read_data_file(storage, whole, None, row_groups=groups.tolist())))
    group_of = np.searchsorted(starts, positions, side="right") - 1
    index = np.array([offsets[int(g)] for g in group_of], dtype=np.int64) + positions - starts[group_of]
    return table.take(pa.array(index))
