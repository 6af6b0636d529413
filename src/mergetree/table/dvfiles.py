"""Deletion vectors as the engine sees them: where a data file's vector is (a
`DeletionVectorRef` on its `DataFileMeta`: the Paimon table's store reads and writes the index
files, `codec.deletion_vectors` their bytes) and applying one to a file's batches by row position.

A manifest entry with a `deletion_vector` (even an empty one) is a *resolved* file: across all
resolved files of a bucket, no key has two live rows, and each live row already holds the
merged value of every version it replaced (see `compaction.dv`)."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["DeletionVectorRef", "drop_deleted"]


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
