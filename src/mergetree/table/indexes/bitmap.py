"""Bitmap indexes for low-cardinality columns: per data file, each distinct value's rows as a
Roaring bitmap (`pyroaring`), kept in a sidecar Parquet file beside the data file.

A file whose column holds none of the values a predicate accepts is skipped (=, IN, ranges,
IS NULL: the predicate is evaluated on the file's distinct values, exactly); otherwise only
the row groups holding accepted rows are read.  The distinct values are also copied into the
manifest when there are few of them, so file-level pruning needs no I/O.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from ...errors import CorruptTableError
from ...storage import StorageError
from ..objects import StoredFile, read_parquet_table, write_parquet
from ..values import decode_value, encode_value

__all__ = ["MANIFEST_VALUES", "ColumnBitmap", "build_bitmaps", "read_bitmaps", "rows_matching"]

# Distinct values of a column copied into the manifest at most (beyond: only in the sidecar).
MANIFEST_VALUES = 64
_SIDECAR_SCHEMA = pa.schema([("column", pa.string()), ("value", pa.string()), ("rows", pa.binary())])


@dataclass(frozen=True)
class ColumnBitmap:
    """What the manifest keeps of one column's bitmap index in one file."""

    column: str
    distinct: int                     # distinct values, null counted as one
    values: tuple | None              # the distinct values (None among them for nulls) when few
    indexed: bool = True              # False: too many distinct values, no bitmap was built

    def to_json(self) -> dict:
        values = None if self.values is None else [encode_value(v) for v in self.values]
        return {"column": self.column, "distinct": self.distinct, "values": values, "indexed": self.indexed}

    @classmethod
    def from_json(cls, d: dict) -> ColumnBitmap:
        values = d["values"]
        return cls(d["column"], int(d["distinct"]), None if values is None else tuple(decode_value(v) for v in values),
                   bool(d.get("indexed", True)))


def build_bitmaps(table: pa.Table, columns: Sequence[str], max_values: int,
                  sidecar_path: str | StoredFile) -> dict[str, ColumnBitmap]:
    """Index `columns` of a data file's rows; columns with more than `max_values` distinct
    values get no bitmap.  Writes the sidecar (only if some column was indexed)."""
    out: dict[str, ColumnBitmap] = {}
    rows: list[dict] = []
    for name in columns:
        column = table.column(name).combine_chunks()
        encoded = column.dictionary_encode() if not pa.types.is_dictionary(column.type) else column
        dictionary = encoded.dictionary
        if len(dictionary) + (1 if column.null_count else 0) > max_values:
            out[name] = ColumnBitmap(name, len(dictionary) + (1 if column.null_count else 0), None, indexed=False)
            continue
        codes = encoded.indices.fill_null(len(dictionary)).to_numpy(zero_copy_only=False)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(dictionary) + 2))
        values = dictionary.to_pylist() + [None]
        present = []
        for code, value in enumerate(values):
            members = order[bounds[code]:bounds[code + 1]]
            if not len(members):
                continue
            present.append(value)
            rows.append({"column": name, "value": _encode_text(value),
                         "rows": BitMap(members.astype(np.uint32)).serialize()})
        out[name] = ColumnBitmap(name, len(present), tuple(present) if len(present) <= MANIFEST_VALUES else None)
    if rows:
        write_parquet(pa.Table.from_pylist(rows, schema=_SIDECAR_SCHEMA), sidecar_path)
    return out


def _encode_text(value: Any) -> str:
    return json.dumps(encode_value(value))


def _decode_text(text: str) -> Any:
    return decode_value(json.loads(text))


def read_bitmaps(sidecar_path: str | StoredFile, column: str) -> dict[Any, BitMap]:
    """value -> rows of one column, from a data file's sidecar."""
    name = sidecar_path.name if isinstance(sidecar_path, StoredFile) else sidecar_path
    try:
        table = read_parquet_table(sidecar_path, filters=pc.field("column") == column)
        return {_decode_text(v): BitMap.deserialize(b)
                for v, b in zip(table.column("value").to_pylist(), table.column("rows").to_pylist())}
    except FileNotFoundError:
        raise CorruptTableError(f"bitmap index {os.path.basename(name)} is missing",
                                path=str(sidecar_path)) from None
    except StorageError:  # an object store's request failed: not a damaged file
        raise
    except (OSError, pa.ArrowException, ValueError, KeyError) as exc:
        raise CorruptTableError(f"bitmap index {os.path.basename(name)} is unreadable: {exc}",
                                path=str(sidecar_path)) from None


def rows_matching(bitmaps: dict[Any, BitMap], accepts: Callable[[Any], bool]) -> BitMap:
    """The union of the rows of every value `accepts` (None stands for null)."""
    out = BitMap()
    for value, rows in bitmaps.items():
        if accepts(value):
            out |= rows
    return out
