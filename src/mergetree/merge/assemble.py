"""Output assembly: the merged rows copied straight from the input batches.

The core says which (run, position) every output row is: a `RowSelection` of the
input batches.  The rows are gathered column by column from the slices of the input
batches that hold them, in one pass and without concatenating the inputs first; the
core copies flat layouts (fixed width, bits, binary with 32- or 64-bit offsets), and
any other column (nested, dictionary, view, extension) is taken by pyarrow from its
concatenation.  A selection can be narrowed and reordered before any column is
copied, so a join copies only the rows it returns (late materialization).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from .. import _core
from .engines import take_array

__all__ = ["RowSelection", "select_rows"]


class RowSelection:
    """Rows picked out of record batches and not copied yet: row i is row ``src_row[i]`` of
    ``pieces[src_piece[i]]``.  A selection of a whole batch (`of_batch`) hands the batch
    back without a copy."""

    __slots__ = ("_whole", "pieces", "src_piece", "src_row")

    def __init__(self, pieces: list[pa.RecordBatch], src_piece: np.ndarray, src_row: np.ndarray,
                 whole: pa.RecordBatch | None = None) -> None:
        self.pieces = pieces
        self.src_piece = src_piece
        self.src_row = src_row
        self._whole = whole  # the one piece, when the rows are all of it in order

    @classmethod
    def of_batch(cls, batch: pa.RecordBatch) -> RowSelection:
        """Every row of `batch`, in order."""
        return cls([batch], np.zeros(batch.num_rows, dtype=np.int32), np.arange(batch.num_rows, dtype=np.int64),
                   batch)

    @property
    def num_rows(self) -> int:
        return len(self.src_row)

    def map_pieces(self, fn: Callable[[pa.RecordBatch], pa.RecordBatch]) -> RowSelection:
        """The same rows of the pieces as `fn` reshapes them (e.g. renames or drops
        columns; it must keep every row)."""
        if self._whole is not None:
            return RowSelection.of_batch(fn(self._whole))
        return RowSelection([fn(p) for p in self.pieces], self.src_piece, self.src_row)

    def take(self, rows: np.ndarray) -> RowSelection:
        """The selection's rows at positions `rows` (each in range), in that order."""
        return RowSelection(self.pieces, self.src_piece[rows], self.src_row[rows])

    def slice(self, start: int, length: int | None = None) -> RowSelection:
        end = self.num_rows if length is None else min(self.num_rows, start + length)
        if self._whole is not None:
            return RowSelection.of_batch(self._whole.slice(start, max(0, end - start)))
        return RowSelection(self.pieces, self.src_piece[start:end], self.src_row[start:end])

    @staticmethod
    def concat(selections: Sequence[RowSelection]) -> RowSelection:
        """The rows of several selections, one after the other.  Each keeps only the span of
        its pieces that its rows point into (a stream of slices and concatenations then
        holds about the batches it still uses, without a pass to find exactly which)."""
        live = [s for s in selections if s.num_rows]
        if len(live) == 1:
            return live[0]
        if not live:
            return selections[0] if selections else RowSelection([], np.zeros(0, np.int32), np.zeros(0, np.int64))
        pieces: list[pa.RecordBatch] = []
        src_piece = []
        for s in live:
            low, high = int(s.src_piece.min()), int(s.src_piece.max())
            src_piece.append(s.src_piece + np.int32(len(pieces) - low))
            pieces += s.pieces[low:high + 1]
        return RowSelection(pieces, np.concatenate(src_piece), np.concatenate([s.src_row for s in live]))

    def column(self, name: str) -> pa.Array:
        """One column of the selected rows, copied out of the pieces."""
        if self._whole is not None:
            return self._whole.column(name)
        index = self.pieces[0].schema.get_field_index(name) if self.pieces else -1
        if index < 0:
            raise KeyError(f"the selected rows have no column {name!r}")
        return _gather_column(self.pieces[0].schema.field(index).type, [p.column(index) for p in self.pieces],
                              self.src_piece, self.src_row)

    def gather(self, schema: pa.Schema | None = None) -> pa.RecordBatch:
        """The selected rows in the columns `schema` names (its types are the pieces'; default:
        every column of the pieces)."""
        if schema is None:
            if not self.pieces:
                raise ValueError("a selection of no batches has no columns: name them with a schema")
            schema = self.pieces[0].schema
        if self._whole is not None:
            return self._whole.select(schema.names) if self._whole.schema.names != schema.names else self._whole
        if not self.pieces:
            return pa.RecordBatch.from_pylist([], schema=schema)
        return pa.RecordBatch.from_arrays([self.column(name) for name in schema.names], schema=schema)


def select_rows(run_slices: Sequence[Sequence[tuple[int, pa.RecordBatch]]], out_run: np.ndarray,
                out_pos: np.ndarray) -> RowSelection:
    """The output rows as a selection of the input slices.  ``run_slices[r]`` holds run r's
    batches as (position of their first row, batch), in position order, covering every
    position of run r in ``out_pos``."""
    pieces: list[pa.RecordBatch] = []
    starts: list[int] = []
    run_pieces = [0]
    for slices in run_slices:
        for start, batch in slices:
            pieces.append(batch)
            starts.append(start)
        run_pieces.append(len(pieces))
    if not pieces:
        if len(out_run):
            raise AssertionError(f"{len(out_run)} output rows but no input slices (a bug in mergetree)")
        return RowSelection([], np.zeros(0, np.int32), np.zeros(0, np.int64))
    src_piece, src_row = _core.resolve_sources(
        out_run, out_pos, np.asarray(starts, dtype=np.int64),
        np.asarray([p.num_rows for p in pieces], dtype=np.int64), np.asarray(run_pieces, dtype=np.int64))
    return RowSelection(pieces, src_piece, src_row)


def _flat(dtype: pa.DataType) -> bool:
    """A layout the core copies: fixed width, bits, or binary with plain offsets."""
    t = pa.types
    if isinstance(dtype, pa.ExtensionType) or t.is_interval(dtype):
        return False
    return bool(t.is_integer(dtype) or t.is_floating(dtype) or t.is_boolean(dtype) or t.is_temporal(dtype)
                or t.is_decimal(dtype) or t.is_fixed_size_binary(dtype) or t.is_string(dtype)
                or t.is_binary(dtype) or t.is_large_string(dtype) or t.is_large_binary(dtype))


def _gather_column(dtype: pa.DataType, arrays: list[pa.Array], src_piece: np.ndarray,
                   src_row: np.ndarray) -> pa.Array:
    if _flat(dtype):
        buffers = _core.gather_column(arrays, src_piece, src_row, pa.allocate_buffer)
        if buffers is not None:
            validity, null_count, values, data = buffers
            parts = [validity, values] if data is None else [validity, values, data]
            return pa.Array.from_buffers(dtype, len(src_piece), parts, null_count=null_count)
    # a layout the core does not copy: pyarrow's take over the concatenation
    bases = np.zeros(len(arrays), dtype=np.int64)
    np.cumsum([len(a) for a in arrays[:-1]], out=bases[1:])
    indices = bases[src_piece] + src_row
    return take_array(pa.concat_arrays(arrays), pa.array(indices, type=pa.int64()))
