"""Output assembly: the merged rows copied straight from the input batches.

The core says which (run, position) every output row is.  The rows are gathered
column by column from the slices of the input batches that hold them, in one
pass and without concatenating the inputs first; the core copies flat layouts
(fixed width, bits, binary with 32- or 64-bit offsets), and any other column
(nested, dictionary, view, extension) is taken by pyarrow from its
concatenation.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .. import _core
from .engines import take_array

__all__ = ["gather_rows"]


def gather_rows(schema: pa.Schema, run_slices: Sequence[Sequence[tuple[int, pa.RecordBatch]]],
                out_run: np.ndarray, out_pos: np.ndarray) -> pa.RecordBatch:
    """The output rows as one batch.  ``run_slices[r]`` holds run r's batches as
    (position of their first row, batch), in position order, covering every
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
        return pa.RecordBatch.from_pylist([], schema=schema)
    src_piece, src_row = _core.resolve_sources(
        out_run, out_pos, np.asarray(starts, dtype=np.int64),
        np.asarray([p.num_rows for p in pieces], dtype=np.int64), np.asarray(run_pieces, dtype=np.int64))
    columns = [_gather_column(field.type, [p.column(i) for p in pieces], src_piece, src_row)
               for i, field in enumerate(schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


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
