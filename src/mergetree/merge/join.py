"""Sorted merge joins of key-ordered, key-unique tables (e.g. two buckets' merged rows)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _core
from ..errors import InvalidArgumentError, SchemaMismatchError
from .arrow_input import check_batch
from .engines import take_array
from .runs import plan_key_column

__all__ = ["JOINS", "LEFT_ONLY", "join_sorted", "join_streams", "joined_schema"]

# join -> (the core's mode, whether the sides are swapped for it)
JOINS = {"inner": (_core.JOIN_INNER, False), "left": (_core.JOIN_LEFT, False), "right": (_core.JOIN_LEFT, True),
         "full": (_core.JOIN_FULL, False), "semi": (_core.JOIN_INNER, False), "anti": (_core.JOIN_LEFT, False)}
LEFT_ONLY = ("semi", "anti")  # joins that return the left side's columns only


def _key_batch(table: pa.Table, on: list[str]):
    columns = []
    plans = []
    for name in on:
        plan = plan_key_column(name, table.schema.field(name).type)
        col = table.column(name).combine_chunks()
        columns.append(plan.normalize(col) if plan.normalize else col)
        plans.append(plan)
    return pa.RecordBatch.from_arrays(columns, names=on), plans


def joined_schema(left: pa.Schema, right: pa.Schema, on: list[str], suffix: str = "_right",
                  how: str = "inner") -> pa.Schema:
    if how in LEFT_ONLY:
        return left
    fields = [left.field(n).with_nullable(True) for n in left.names]
    for f in right:
        if f.name in on:
            continue
        name = f.name + suffix if f.name in left.names else f.name
        fields.append(f.with_name(name).with_nullable(True))
    return pa.schema(fields)


def join_sorted(left: pa.Table, right: pa.Table, on: str | list[str], how: str = "inner",
                suffix: str = "_right") -> pa.Table:
    """Join two tables that are each strictly ascending by `on` (unique keys), in one pass.
    `how`: inner, left, right, full, semi (left rows with a match) or anti (without one).

    Output: every left column (for a right or full join, key columns take the right key where
    the left is missing), then the right's other columns (renamed with `suffix` on a clash);
    semi and anti joins return the left's columns only."""
    on = [on] if isinstance(on, str) else list(on)
    if how not in JOINS:
        raise InvalidArgumentError(f"unknown join {how!r}; choose one of {', '.join(JOINS)}")
    for name in on:
        if name not in left.schema.names or name not in right.schema.names:
            raise SchemaMismatchError(f"join column {name!r} is missing on one side")
        if left.schema.field(name).type != right.schema.field(name).type:
            raise SchemaMismatchError(f"join column {name!r} is {left.schema.field(name).type} on the left "
                                      f"and {right.schema.field(name).type} on the right")
    check_batch(left, "the left side")
    check_batch(right, "the right side")
    left_keys, plans = _key_batch(left, on)
    right_keys, _ = _key_batch(right, on)
    mode, swapped = JOINS[how]
    first, second = (right_keys, left_keys) if swapped else (left_keys, right_keys)
    li, ri = _core.merge_join(first, second, [p.key_class for p in plans], [p.width for p in plans], mode)
    if swapped:
        li, ri = ri, li
    if how in LEFT_ONLY:
        rows = li if how == "semi" else li[ri < 0]
        return left.take(pa.array(rows, type=pa.int64())) if len(rows) != left.num_rows else left
    schema = joined_schema(left.schema, right.schema, on, suffix)
    left_index = pa.array(np.where(li < 0, 0, li), type=pa.int64(), mask=li < 0)
    right_index = pa.array(np.where(ri < 0, 0, ri), type=pa.int64(), mask=ri < 0)
    columns = []
    for name in left.schema.names:
        col = take_array(left.column(name).combine_chunks(), left_index)
        if how in ("full", "right") and name in on:
            col = pc.coalesce(col, take_array(right.column(name).combine_chunks(), right_index))
        columns.append(col)
    for name in right.schema.names:
        if name not in on:
            columns.append(take_array(right.column(name).combine_chunks(), right_index))
    return pa.Table.from_arrays(columns, schema=schema)


def _is_float_key(schema: pa.Schema, on: list[str]) -> bool:
    return any(pa.types.is_floating(schema.field(c).type) for c in on)


def _rows_up_to(table: pa.Table, on: list[str], bound: tuple | None) -> int:
    """How many leading rows of a key-ordered table have keys <= `bound` (None: all)."""
    if bound is None:
        return table.num_rows
    columns = [table.column(c) for c in on]
    lo, hi = 0, table.num_rows
    while lo < hi:  # binary search: keys are ascending and unique
        mid = (lo + hi) // 2
        if tuple(col[mid].as_py() for col in columns) <= bound:
            lo = mid + 1
        else:
            hi = mid
    return lo


def join_streams(left: Iterable[pa.RecordBatch], right: Iterable[pa.RecordBatch], on: str | list[str],
                 how: str, left_schema: pa.Schema, right_schema: pa.Schema,
                 suffix: str = "_right") -> Iterator[pa.Table]:
    """`join_sorted` of two key-ordered, key-unique streams of batches, a window at a time:
    each step joins every buffered row up to the smaller of the two sides' last buffered keys
    (no later row can match them) and keeps the rest, so memory is about a batch per side plus
    the output, however long the streams.  Float keys (whose total order Python's comparisons
    do not share) are joined whole instead."""
    on = [on] if isinstance(on, str) else list(on)
    if how not in JOINS:
        raise InvalidArgumentError(f"unknown join {how!r}; choose one of {', '.join(JOINS)}")
    sides = [iter(left), iter(right)]
    buffers = [left_schema.empty_table(), right_schema.empty_table()]
    done = [False, False]
    if _is_float_key(left_schema, on):
        whole = [pa.Table.from_batches(list(s), schema=sch) for s, sch in zip(sides, (left_schema, right_schema))]
        yield join_sorted(whole[0], whole[1], on, how, suffix)
        return
    while True:
        for i in (0, 1):
            while buffers[i].num_rows == 0 and not done[i]:
                batch = next(sides[i], None)
                if batch is None:
                    done[i] = True
                elif batch.num_rows:
                    buffers[i] = pa.Table.from_batches([batch])
        # a side that has not ended has rows buffered (filled above): its last key bounds the window
        open_lasts = [tuple(buffers[i].column(c)[buffers[i].num_rows - 1].as_py() for c in on)
                      for i in (0, 1) if not done[i]]
        bound = min(open_lasts) if open_lasts else None   # None: both sides ended, join everything
        cuts = [_rows_up_to(b, on, bound) for b in buffers]
        window = [b.slice(0, n) for b, n in zip(buffers, cuts)]
        buffers = [b.slice(n) for b, n in zip(buffers, cuts)]
        if window[0].num_rows or window[1].num_rows:
            out = join_sorted(window[0].combine_chunks(), window[1].combine_chunks(), on, how, suffix)
            if out.num_rows:
                yield out
        if bound is None:
            return
