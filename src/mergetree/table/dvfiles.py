"""Deletion vectors of mergetree's own primary-key tables: where a data file's vector is (a
`DeletionVectorRef` in its manifest entry), reading it (cached: index files never change under
their name), applying it to a file's batches by row position, and writing the index file a
compaction publishes.  The bytes are Paimon's layout (`deletion_vectors`).

A manifest entry with a `deletion_vector` (even an empty one) is a *resolved* file: across all
resolved files of a bucket, no key has two live rows, and each live row already holds the
merged value of every version it replaced (see `compaction.dv`)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyroaring import BitMap, BitMap64

from ..codec.deletion_vectors import DeletionVectorRange, encode_index_file, read_deletion_vector, read_index_file
from ..errors import CorruptTableError
from ..storage import ObjectNotFoundError, StorageError, Store
from . import paths
from .filecache import FileCache
from .journal import creating
from .objects import is_local, table_path

__all__ = ["DeletionVectorRef", "deleted_positions", "drop_deleted", "write_index_file"]


@dataclass(frozen=True)
class DeletionVectorRef:
    """A data file's deletion vector: `cardinality` deleted rows, in `index` (a file relative to
    the table) at `offset`/`length`; an empty vector has no index file."""

    index: str | None = None
    offset: int = 0
    length: int = 0
    cardinality: int = 0

    def to_json(self) -> dict:
        if self.index is None:
            return {"cardinality": 0}
        return {"index": self.index, "offset": self.offset, "length": self.length, "cardinality": self.cardinality}

    @classmethod
    def from_json(cls, d: dict) -> DeletionVectorRef:
        """Parse (ValueError/TypeError/KeyError say what is wrong)."""
        if not isinstance(d, dict):
            raise ValueError(f"deletion_vector is {d!r}, not an object")
        cardinality = d["cardinality"]
        if not isinstance(cardinality, int) or isinstance(cardinality, bool) or cardinality < 0:
            raise ValueError(f"deletion_vector cardinality {cardinality!r} is not a count")
        index = d.get("index")
        if index is None:
            if cardinality:
                raise ValueError("a deletion vector with deleted rows names no index file")
            return cls()
        if not isinstance(index, str):
            raise ValueError(f"deletion_vector index {index!r} is not a file name")
        offset, length = d["offset"], d["length"]
        for name, value in (("offset", offset), ("length", length)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"deletion_vector {name} {value!r} is not a byte count")
        return cls(index, offset, length, cardinality)


# parsed vectors by (table, index file, offset): index files are written once under unique names
_vectors: FileCache[np.ndarray] = FileCache(max_entries=4096, max_bytes=256 << 20, weight=lambda a: a.nbytes)


def deleted_positions(storage: Store, data_file: str, ref: DeletionVectorRef | None) -> np.ndarray:
    """The deleted row positions of `data_file`, sorted (int64); CorruptTableError naming the
    index file when it is missing or damaged."""
    if ref is None or ref.index is None or not ref.cardinality:
        return np.empty(0, dtype=np.int64)
    return _vectors.get_keyed((table_path(storage), ref.index, ref.offset, ref.length),
                              lambda: _load(storage, data_file, ref))


def _load(storage: Store, data_file: str, ref: DeletionVectorRef) -> np.ndarray:
    root = table_path(storage)
    index = ref.index or ""
    where = f"{root}/{index}" if is_local(storage) else storage.describe(index)
    try:
        data = storage.read(index)
    except ObjectNotFoundError:
        raise CorruptTableError(f"the deletion-vector index file {index} of table {root} (deleted rows of "
                                f"{data_file}) is missing", path=where) from None
    except StorageError as exc:
        if not is_local(storage):
            raise
        raise CorruptTableError(f"cannot read the deletion-vector index file {index} of table {root}: {exc}",
                                path=where) from None
    if not data or data[0] != 1:
        read_index_file(data, [], where)  # raises: the version byte is wrong
    bitmap = read_deletion_vector(data, DeletionVectorRange(data_file, ref.offset, ref.length, ref.cardinality),
                                  where)
    out = np.fromiter(bitmap, dtype=np.int64, count=len(bitmap))
    return out


def drop_deleted(batches: Iterator[pa.RecordBatch], deleted: np.ndarray, starts: list[tuple[int, int]]
                 ) -> Iterator[pa.RecordBatch]:
    """`batches` (the rows of some row groups, in order) without the rows at `deleted` file
    positions; `starts` lists (first file position, rows) of each row group read, in order."""
    # the file position of each row read, as runs: (position in the stream, file position, rows)
    spans: list[tuple[int, int, int]] = []
    stream = 0
    for first, rows in starts:
        if spans and spans[-1][1] + spans[-1][2] == first:  # the next row group: one span (a whole read is one)
            spans[-1] = (spans[-1][0], spans[-1][1], spans[-1][2] + rows)
        else:
            spans.append((stream, first, rows))
        stream += rows
    offset = 0
    for batch in batches:
        n = batch.num_rows
        keep = np.ones(n, dtype=bool)
        for s_stream, s_first, s_rows in spans:
            lo, hi = max(offset, s_stream), min(offset + n, s_stream + s_rows)
            if lo >= hi:
                continue
            file_lo = s_first + (lo - s_stream)
            file_hi = file_lo + (hi - lo)
            a, b = np.searchsorted(deleted, [file_lo, file_hi])
            if a < b:
                keep[deleted[a:b] - file_lo + (lo - offset)] = False
        offset += n
        if keep.all():
            yield batch
        elif keep.any():
            yield batch.filter(pa.array(keep))


def write_index_file(storage: Store, bucket_directory: str, vectors: Mapping[str, BitMap | BitMap64 | np.ndarray]
                     ) -> dict[str, DeletionVectorRef]:
    """Write one index file holding these data files' vectors (file name -> positions) into the
    bucket's directory; each file's reference.  Nothing is written for no vectors."""
    vectors = {name: v for name, v in vectors.items() if len(v)}
    if not vectors:
        return {}
    data, ranges = encode_index_file({name: (int(p) for p in v) for name, v in vectors.items()})
    name = paths.deletion_vector_file_name(bucket_directory)
    creating(storage, name)
    storage.write(name, data)
    return {r.data_file: DeletionVectorRef(name, r.offset, r.length, r.cardinality or 0) for r in ranges}
