"""Row kinds, as Paimon numbers them (the core's C enum uses the same values)."""
from __future__ import annotations

from enum import IntEnum

import pyarrow as pa

__all__ = ["RETRACTIONS", "RowKind", "retraction_kinds"]


class RowKind(IntEnum):
    """The change a row carries: an insert, the before and after images of an update, or a
    delete.  Retractions (-U, -D) take a version back."""

    INSERT = 0          # +I
    UPDATE_BEFORE = 1   # -U
    UPDATE_AFTER = 2    # +U
    DELETE = 3          # -D

    @property
    def symbol(self) -> str:
        return ("+I", "-U", "+U", "-D")[self]


RETRACTIONS = (RowKind.UPDATE_BEFORE, RowKind.DELETE)


def retraction_kinds() -> pa.Array:
    """The retraction kinds as an int8 array, for `pc.is_in`."""
    return pa.array([int(k) for k in RETRACTIONS], pa.int8())
