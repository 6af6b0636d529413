"""Versions of a key ordered by sequence fields (Paimon's ``sequence.field``): each row's rank
in a section's order — the fields compared lexicographically, each ascending or each
descending, then the sequence number — as one int64 column the merge orders versions by."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..errors import UnsupportedPaimonFeatureError
from ..merge.arrow_input import sort_indices
from .schema import SEQUENCE_COLUMN

__all__ = ["ORDER_COLUMN", "java_ordered", "ranked"]

ORDER_COLUMN = "_MT_ORDER"  # a section's (sequence fields, sequence number) as one rank, for the merge


def ranked(runs: list[list[pa.RecordBatch]], fields: Sequence[str], descending: bool) -> list[list[pa.RecordBatch]]:
    """Each row's rank in the section's order, added as ORDER_COLUMN (the merge orders
    versions by one int64): the sequence fields compared lexicographically in the listed
    order, each ascending or each descending, then the sequence number (always ascending).  A
    null sequence value is older than any other in both orders, as in the comparator Paimon
    generates (nulls first, the sign applied to the non-null comparison only)."""
    batches = [b for run in runs for b in run]
    if not batches:
        return runs
    for name in fields:
        t = batches[0].schema.field(name).type
        if pa.types.is_nested(t):
            raise UnsupportedPaimonFeatureError(
                f"Paimon option 'sequence.field' names {name!r} of type {t}: mergetree orders versions by "
                f"atomic sequence fields only")
    columns = {}
    for i, name in enumerate(fields):
        t = batches[0].schema.field(name).type  # files of older schemas arrive evolved to the read types
        columns[f"f{i}"] = java_ordered(pa.chunked_array([b.column(name) if b.schema.field(name).type == t
                                                           else b.column(name).cast(t) for b in batches],
                                                          type=t).combine_chunks())
    columns["s"] = pa.concat_arrays([b.column(SEQUENCE_COLUMN).cast(pa.int64()) for b in batches])
    table = pa.table(columns)
    direction = "descending" if descending else "ascending"
    # nulls at the start in both directions: the oldest place
    order = sort_indices(table, [(f"f{i}", direction) for i in range(len(fields))] + [("s", "ascending")],
                         "at_start")
    rank = np.empty(len(table), dtype=np.int64)
    rank[order.to_numpy()] = np.arange(len(table), dtype=np.int64)
    out, start = [], 0
    for run in runs:
        ranked = []
        for b in run:
            ranked.append(b.append_column(pa.field(ORDER_COLUMN, pa.int64(), nullable=False),
                                          pa.array(rank[start:start + b.num_rows])))
            start += b.num_rows
        out.append(ranked)
    return out


def java_ordered(values: pa.Array) -> pa.Array:
    """Floats as int64 keys in the order of Java's Float/Double.compare (every NaN equal and
    above +inf, -0.0 below +0.0), which Paimon's generated comparator uses; nulls kept."""
    if not pa.types.is_floating(values.type):
        return values
    wide = values.cast(pa.float64())
    data = np.asarray(wide.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64).copy()
    data[np.isnan(data)] = np.nan  # one NaN (Java's doubleToLongBits canonical form)
    bits = data.view(np.int64)
    keys = bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
    return pa.array(keys, mask=wide.is_null().to_numpy(zero_copy_only=False) if wide.null_count else None)
