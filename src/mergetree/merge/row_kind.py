"""Row kinds, as Paimon numbers them (the core's C enum uses the same values), and the
row-kind column of change streams: what `Table.changes` returns and what a CDC write reads."""
from __future__ import annotations

from enum import IntEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError

__all__ = ["RETRACTIONS", "ROW_KIND_COLUMN", "RowKind", "kinds_of", "retraction_kinds", "symbols_of"]

# The column a change stream's rows carry their kind in ("+I", "-U", "+U", "-D"), in both
# directions: `Table.changes` and the streaming source write it, a CDC write reads it.
ROW_KIND_COLUMN = "_row_kind"


class RowKind(IntEnum):
    """The change a row carries: an insert, the before and after images of an update, or a
    delete.  Retractions (-U, -D) take a version back."""

    INSERT = 0          # +I
    UPDATE_BEFORE = 1   # -U
    UPDATE_AFTER = 2    # +U
    DELETE = 3          # -D

    @property
    def symbol(self) -> str:
        return SYMBOLS[self]


RETRACTIONS = (RowKind.UPDATE_BEFORE, RowKind.DELETE)
SYMBOLS = ("+I", "-U", "+U", "-D")
# what CDC tools write: Paimon's and Flink's symbols, and Debezium's `op` (c create, r read in a
# snapshot, u update: its after image, d delete)
_SPELLINGS = {"+I": RowKind.INSERT, "-U": RowKind.UPDATE_BEFORE, "+U": RowKind.UPDATE_AFTER,
              "-D": RowKind.DELETE, "c": RowKind.INSERT, "r": RowKind.INSERT, "u": RowKind.UPDATE_AFTER,
              "d": RowKind.DELETE}


def retraction_kinds() -> pa.Array:
    """The retraction kinds as an int8 array, for `pc.is_in`."""
    return pa.array([int(k) for k in RETRACTIONS], pa.int8())


def kinds_of(column: pa.Array | pa.ChunkedArray, name: str = ROW_KIND_COLUMN) -> np.ndarray:
    """A row-kind column as int8 `RowKind` values: strings ("+I", "-U", "+U", "-D", or
    Debezium's "c", "r", "u", "d") or integers 0..3.  A null or unknown value is an
    InvalidArgumentError naming the column, the row and the value (nothing is written)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise InvalidArgumentError(f"row-kind column {name!r} is null at row {row}")
    if pa.types.is_integer(column.type):
        values = column.to_numpy(zero_copy_only=False).astype(np.int64)
        bad = np.flatnonzero((values < 0) | (values > 3))
        if len(bad):
            raise InvalidArgumentError(f"row-kind column {name!r} holds {int(values[bad[0]])} at row {int(bad[0])}; "
                                       f"row kinds are 0..3 (+I, -U, +U, -D)")
        return values.astype(np.int8)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
            or pa.types.is_string_view(column.type)):
        raise InvalidArgumentError(f"row-kind column {name!r} is {column.type}; it holds strings "
                                   f"(+I, -U, +U, -D, or Debezium's c, r, u, d) or integers 0..3")
    column = column.cast(pa.string())
    spellings = pa.array(list(_SPELLINGS))
    index = pc.index_in(column, value_set=spellings)
    if index.null_count:
        row = int(np.flatnonzero(index.is_null().to_numpy(zero_copy_only=False))[0])
        raise InvalidArgumentError(f"row-kind column {name!r} holds {column[row].as_py()!r} at row {row}; "
                                   f"row kinds are +I, -U, +U, -D (or Debezium's c, r, u, d)")
    lookup = np.array([int(k) for k in _SPELLINGS.values()], dtype=np.int8)
    return lookup[index.to_numpy(zero_copy_only=False)]


def symbols_of(kinds: np.ndarray | pa.Array) -> pa.Array:
    """int8 row kinds as the strings a change stream shows ("+I", "-U", "+U", "-D")."""
    codes = np.asarray(kinds.to_numpy(zero_copy_only=False) if isinstance(kinds, pa.Array) else kinds,
                       dtype=np.int8)
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), pa.array(SYMBOLS)).cast(pa.string())
