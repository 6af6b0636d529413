"""Data files: Parquet files of one bucket, each a sorted run (primary-key tables),
and the metadata a manifest records for each."""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ..errors import CorruptTableError
from ..merge.row_kind import retraction_kinds
from . import paths
from .schema import KIND_COLUMN, SEQUENCE_COLUMN, TableSchema
from .values import decode_value, encode_value

__all__ = ["READ_BATCH_ROWS", "ROW_GROUP_ROWS", "DataFileMeta", "column_stats", "read_data_file", "read_run",
           "write_data_file", "write_sorted_run"]

ROW_GROUP_ROWS = 8192  # files are sorted by key: small groups let key predicates skip most of a file
READ_BATCH_ROWS = 65536


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

    def with_level(self, level: int) -> DataFileMeta:
        d = asdict(self)
        d["level"] = level
        d["min_key"], d["max_key"] = self.min_key, self.max_key
        return DataFileMeta(**d)

    def to_json(self) -> dict:
        return {
            "file_name": self.file_name, "level": self.level, "row_count": self.row_count,
            "file_size": self.file_size, "min_key": [encode_value(v) for v in self.min_key],
            "max_key": [encode_value(v) for v in self.max_key], "min_seq": self.min_seq,
            "max_seq": self.max_seq, "delete_count": self.delete_count,
            "stats": {c: [encode_value(lo), encode_value(hi), n] for c, (lo, hi, n) in self.stats.items()},
        }

    @classmethod
    def from_json(cls, d: dict) -> DataFileMeta:
        return cls(d["file_name"], d["level"], d["row_count"], d["file_size"],
                   tuple(decode_value(v) for v in d["min_key"]), tuple(decode_value(v) for v in d["max_key"]),
                   d["min_seq"], d["max_seq"], d["delete_count"],
                   {c: (decode_value(lo), decode_value(hi), n) for c, (lo, hi, n) in d["stats"].items()})


def _stat_worthy(dtype: pa.DataType) -> bool:
    return (pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_string(dtype)
            or pa.types.is_large_string(dtype) or pa.types.is_temporal(dtype) or pa.types.is_decimal(dtype)
            or pa.types.is_boolean(dtype) or pa.types.is_binary(dtype))


def column_stats(table: pa.Table, columns: list[str]) -> dict[str, tuple[Any, Any, int]]:
    stats = {}
    for name in columns:
        col = table.column(name)
        lo = hi = None
        if _stat_worthy(col.type) and col.null_count < len(col):
            bounds = pc.min_max(col)
            lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        stats[name] = (lo, hi, col.null_count)
    return stats


def write_data_file(root: str, directory: str, table: pa.Table, schema: TableSchema,
                    level: int) -> DataFileMeta:
    """Write one Parquet data file (already sorted by key for primary-key tables)."""
    name = paths.data_file_name(directory)
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS)
    min_key = max_key = ()
    min_seq = max_seq = 0
    deletes = 0
    if schema.has_primary_key and table.num_rows:
        keys = table.select(schema.file_key)
        min_key = tuple(keys.slice(0, 1).to_pylist()[0].values())
        max_key = tuple(keys.slice(table.num_rows - 1, 1).to_pylist()[0].values())
        bounds = pc.min_max(table.column(SEQUENCE_COLUMN))
        min_seq, max_seq = bounds["min"].as_py(), bounds["max"].as_py()
        kinds = table.column(KIND_COLUMN)
        deletes = pc.sum(pc.is_in(kinds, retraction_kinds())).as_py() or 0
    return DataFileMeta(name, level, table.num_rows, os.path.getsize(path), min_key, max_key,
                        min_seq, max_seq, deletes, column_stats(table, schema.schema.names))


def write_sorted_run(root: str, directory: str, table: pa.Table, schema: TableSchema, level: int,
                     target_file_size: int) -> list[DataFileMeta]:
    """Write a sorted table as one or more files of about `target_file_size` bytes (in memory)."""
    if table.num_rows == 0:
        return []
    bytes_per_row = max(table.nbytes / table.num_rows, 1.0)
    rows_per_file = max(int(target_file_size / bytes_per_row), 1)
    return [write_data_file(root, directory, table.slice(start, rows_per_file), schema, level)
            for start in range(0, table.num_rows, rows_per_file)]


def read_data_file(root: str, meta: DataFileMeta, columns: list[str] | None = None,
                   row_filter: pc.Expression | None = None) -> Iterator[pa.RecordBatch]:
    """Stream a data file a row group at a time; `row_filter` keeps only matching rows and
    skips row groups whose statistics rule them out (order is kept).  A missing, truncated
    or unreadable file raises CorruptTableError naming it."""
    path = os.path.join(root, meta.file_name)
    try:
        if row_filter is None:
            reader = pq.ParquetFile(path, pre_buffer=False)
            batches = reader.iter_batches(batch_size=READ_BATCH_ROWS, columns=columns)
        else:
            scanner = ds.dataset(path, format="parquet").scanner(
                columns=columns, filter=row_filter, batch_size=READ_BATCH_ROWS, use_threads=False)
            batches = scanner.to_batches()
        rows = 0
        for batch in batches:
            rows += batch.num_rows
            if batch.num_rows:
                yield batch
    except FileNotFoundError:
        raise CorruptTableError(f"data file {meta.file_name} of table {root} is missing", path=path) from None
    except (OSError, pa.ArrowException) as exc:
        raise CorruptTableError(f"data file {meta.file_name} of table {root} is unreadable: {exc}",
                                path=path) from None
    if row_filter is None and rows != meta.row_count:
        raise CorruptTableError(f"data file {meta.file_name} of table {root} holds {rows} rows, its manifest "
                                f"says {meta.row_count}", path=path)


def read_run(root: str, files: list[DataFileMeta], columns: list[str] | None = None,
             row_filter: pc.Expression | None = None) -> Iterator[pa.RecordBatch]:
    """A sorted run spread over several non-overlapping files, in key order."""
    for meta in files:
        yield from read_data_file(root, meta, columns, row_filter)
