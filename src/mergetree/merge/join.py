"""Sorted merge joins of key-ordered tables (e.g. two buckets' merged rows, ordered by a primary
key that starts with the join key)."""
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
    """Join two tables that are each ascending by `on`, in one pass.  Equal keys may repeat on
    either side (a key's rows on both sides give every pairing, as in SQL) and a key with a
    null never matches.  `how`: inner, left, right, full, semi (left rows with a match, each
    once) or anti (left rows without one).

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
        rows = np.unique(li) if how == "semi" else li[ri < 0]  # a left row matching several: once
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


def _rows_below(keys: pa.RecordBatch, bound: pa.RecordBatch, plans: list) -> int:
    """How many leading rows of ascending `keys` are below the one-row key `bound`, in the
    core's key order (the order the join itself uses: floats, nulls and strings included)."""
    return int(_core.lower_bounds(keys, bound, [p.key_class for p in plans], [p.width for p in plans])[0])


def join_streams(left: Iterable[pa.RecordBatch], right: Iterable[pa.RecordBatch], on: str | list[str],
                 how: str, left_schema: pa.Schema, right_schema: pa.Schema,
                 suffix: str = "_right") -> Iterator[pa.Table]:
    """`join_sorted` of two streams of batches, each ascending by `on`, a window at a time:
    each step joins every buffered row whose key is below the smaller of the open sides' last
    buffered keys (no later row can have such a key) and keeps the rest.  Memory: about a batch
    per side plus the output, and a key's whole group of rows when it spans batches."""
    on = [on] if isinstance(on, str) else list(on)
    if how not in JOINS:
        raise InvalidArgumentError(f"unknown join {how!r}; choose one of {', '.join(JOINS)}")
    sides = [iter(left), iter(right)]
    buffers = [left_schema.empty_table(), right_schema.empty_table()]
    done = [False, False]

    def pull(i: int) -> None:
        """Append side i's next non-empty batch to its buffer, or mark the side ended."""
        for batch in sides[i]:
            if batch.num_rows:
                more = pa.Table.from_batches([batch])
                buffers[i] = pa.concat_tables([buffers[i], more]) if buffers[i].num_rows else more
                return
        done[i] = True

    while True:
        for i in (0, 1):
            if buffers[i].num_rows == 0 and not done[i]:
                pull(i)
        keys = [_key_batch(b, on) for b in buffers]
        plans = keys[0][1]
        # an open side has rows buffered (filled above): the smaller last key bounds the window
        open_sides = [i for i in (0, 1) if not done[i]]
        lasts = {i: keys[i][0].slice(buffers[i].num_rows - 1, 1) for i in open_sides}
        if len(open_sides) == 2 and _rows_below(lasts[1], lasts[0], plans) == 1:
            open_sides = [1]  # the right's last key is below the left's
        bounding = open_sides[0] if open_sides else None
        if bounding is None:
            cuts = [b.num_rows for b in buffers]
        else:
            cuts = [_rows_below(k, lasts[bounding], plans) for k, _ in keys]
            if cuts == [0, 0]:
                # the bounding side holds its last key only; that key's rows may go on in its next batch
                pull(bounding)
                continue
        window = [b.slice(0, n).combine_chunks() for b, n in zip(buffers, cuts)]
        buffers = [b.slice(n) for b, n in zip(buffers, cuts)]
        if window[0].num_rows or window[1].num_rows:
            out = join_sorted(window[0], window[1], on, how, suffix)
            if out.num_rows:
                yield out
        if bounding is None:
            return
