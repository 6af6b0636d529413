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
from .assemble import RowSelection
from .engines import take_array
from .runs import plan_key_column

__all__ = ["JOINS", "LEFT_ONLY", "join_selections", "join_sorted", "join_streams", "joined_schema"]

# join -> (the core's mode, whether the sides are swapped for it)
JOINS = {"inner": (_core.JOIN_INNER, False), "left": (_core.JOIN_LEFT, False), "right": (_core.JOIN_LEFT, True),
         "full": (_core.JOIN_FULL, False), "semi": (_core.JOIN_INNER, False), "anti": (_core.JOIN_LEFT, False)}
LEFT_ONLY = ("semi", "anti")  # joins that return the left side's columns only


def _plans(schema: pa.Schema, on: list[str]) -> list:
    return [plan_key_column(name, schema.field(name).type) for name in on]


def _key_batch(rows: pa.RecordBatch | RowSelection, on: list[str], plans: list) -> pa.RecordBatch:
    """The join columns of a batch or a selection, as the core compares them."""
    columns = [rows.column(name) for name in on]
    normalized = [plan.normalize(col) if plan.normalize else col for col, plan in zip(columns, plans)]
    return pa.RecordBatch.from_arrays(normalized, names=on)


def _whole(table: pa.Table | pa.RecordBatch) -> pa.RecordBatch:
    """A table as one record batch (its chunks concatenated)."""
    if isinstance(table, pa.RecordBatch):
        return table
    return pa.RecordBatch.from_arrays([c.combine_chunks() for c in table.columns], schema=table.schema)


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
    on = _check_join(on, how, left.schema, right.schema)
    check_batch(left, "the left side")
    check_batch(right, "the right side")
    plans = _plans(left.schema, on)
    sides = [_whole(left), _whole(right)]
    keys = [_key_batch(b, on, plans) for b in sides]
    return _join_window(RowSelection.of_batch(sides[0]), RowSelection.of_batch(sides[1]), keys[0], keys[1], on,
                        plans, how, left.schema, right.schema, suffix)


def _check_join(on: str | list[str], how: str, left: pa.Schema, right: pa.Schema) -> list[str]:
    on = [on] if isinstance(on, str) else list(on)
    if how not in JOINS:
        raise InvalidArgumentError(f"unknown join {how!r}; choose one of {', '.join(JOINS)}")
    for name in on:
        if name not in left.names or name not in right.names:
            raise SchemaMismatchError(f"join column {name!r} is missing on one side")
        if left.field(name).type != right.field(name).type:
            raise SchemaMismatchError(f"join column {name!r} is {left.field(name).type} on the left "
                                      f"and {right.field(name).type} on the right")
    return on


def _join_window(left: RowSelection, right: RowSelection, left_keys: pa.RecordBatch, right_keys: pa.RecordBatch,
                 on: list[str], plans: list, how: str, left_schema: pa.Schema, right_schema: pa.Schema,
                 suffix: str) -> pa.Table:
    """The join of two key-ordered selections (their keys given), copying only the rows
    the join returns, each once."""
    mode, swapped = JOINS[how]
    first, second = (right_keys, left_keys) if swapped else (left_keys, right_keys)
    li, ri = _core.merge_join(first, second, [p.key_class for p in plans], [p.width for p in plans], mode)
    if swapped:
        li, ri = ri, li
    if how in LEFT_ONLY:
        rows = np.unique(li) if how == "semi" else li[ri < 0]  # a left row matching several: once
        return pa.Table.from_batches([left.take(rows).gather(left_schema)], schema=left_schema)
    schema = joined_schema(left_schema, right_schema, on, suffix)
    # the right's join columns are needed only where the left's may be missing
    right_names = [n for n in right_schema.names if n not in on or how in ("full", "right")]
    columns = _columns(left, li, left_schema.names)
    right_columns = dict(zip(right_names, _columns(right, ri, right_names)))
    if how in ("full", "right"):
        columns = [pc.coalesce(col, right_columns[name]) if name in on else col
                   for name, col in zip(left_schema.names, columns)]
    columns += [right_columns[name] for name in right_names if name not in on]
    return pa.Table.from_arrays(columns, schema=schema)


def _columns(selection: RowSelection, rows: np.ndarray, names: list[str]) -> list[pa.Array]:
    """The named columns of the selection's rows at `rows`; -1 gives a null."""
    missing = rows < 0
    if not missing.any():
        picked = selection.take(rows)
        return [picked.column(n) for n in names]
    picked = selection.take(rows[~missing])
    spread = pa.array(np.cumsum(~missing) - 1, type=pa.int64(), mask=missing)
    return [take_array(picked.column(n), spread) for n in names]


def _rows_below(keys: pa.RecordBatch, bound: pa.RecordBatch, plans: list) -> int:
    """How many leading rows of ascending `keys` are below the one-row key `bound`, in the
    core's key order (the order the join itself uses: floats, nulls and strings included)."""
    return int(_core.lower_bounds(keys, bound, [p.key_class for p in plans], [p.width for p in plans])[0])


def join_streams(left: Iterable[pa.RecordBatch], right: Iterable[pa.RecordBatch], on: str | list[str],
                 how: str, left_schema: pa.Schema, right_schema: pa.Schema,
                 suffix: str = "_right") -> Iterator[pa.Table]:
    """`join_sorted` of two streams of batches, each ascending by `on`, a window at a time
    (see `join_selections`); every batch is checked before it is joined."""
    def selections(batches: Iterable[pa.RecordBatch], what: str) -> Iterator[RowSelection]:
        for i, batch in enumerate(batches):
            check_batch(batch, f"{what} batch {i}")
            yield RowSelection.of_batch(batch)
    yield from join_selections(selections(left, "the left side"), selections(right, "the right side"), on, how,
                               left_schema, right_schema, suffix)


def join_selections(left: Iterable[RowSelection], right: Iterable[RowSelection], on: str | list[str],
                    how: str, left_schema: pa.Schema, right_schema: pa.Schema,
                    suffix: str = "_right") -> Iterator[pa.Table]:
    """`join_sorted` of two streams of row selections (e.g. `MergeReader.selections`), each
    ascending by `on`, a window at a time: each step joins every buffered row whose key is
    below the smaller of the open sides' last buffered keys (no later row can have such a
    key) and keeps the rest.  Only the join columns are copied before the join; the other
    columns are copied once, for the rows the join returns.  Memory: about a selection per
    side (and the batches its rows point into) plus the output, and a key's whole group of
    rows when it spans selections."""
    on = _check_join(on, how, left_schema, right_schema)
    plans = _plans(left_schema, on)
    sides = [iter(left), iter(right)]
    buffers = [RowSelection.of_batch(pa.RecordBatch.from_pylist([], schema=s)) for s in (left_schema, right_schema)]
    keys = [_key_batch(b, on, plans) for b in buffers]
    done = [False, False]

    def pull(i: int) -> None:
        """Append side i's next non-empty selection to its buffer, or mark the side ended."""
        for selection in sides[i]:
            if selection.num_rows:
                more = _key_batch(selection, on, plans)
                buffers[i] = RowSelection.concat([buffers[i], selection])
                keys[i] = pa.concat_batches([keys[i], more]) if keys[i].num_rows else more
                return
        done[i] = True

    while True:
        for i in (0, 1):
            if buffers[i].num_rows == 0 and not done[i]:
                pull(i)
        # an open side has rows buffered (filled above): the smaller last key bounds the window
        open_sides = [i for i in (0, 1) if not done[i]]
        lasts = {i: keys[i].slice(keys[i].num_rows - 1, 1) for i in open_sides}
        if len(open_sides) == 2 and _rows_below(lasts[1], lasts[0], plans) == 1:
            open_sides = [1]  # the right's last key is below the left's
        bounding = open_sides[0] if open_sides else None
        if bounding is None:
            cuts = [b.num_rows for b in buffers]
        else:
            cuts = [_rows_below(k, lasts[bounding], plans) for k in keys]
            if cuts == [0, 0]:
                # the bounding side holds its last key only; that key's rows may go on in its next batch
                pull(bounding)
                continue
        window = [b.slice(0, n) for b, n in zip(buffers, cuts)]
        window_keys = [k.slice(0, n) for k, n in zip(keys, cuts)]
        buffers = [b.slice(n) for b, n in zip(buffers, cuts)]
        keys = [k.slice(n) for k, n in zip(keys, cuts)]
        if window[0].num_rows or window[1].num_rows:
            out = _join_window(window[0], window[1], window_keys[0], window_keys[1], on, plans, how, left_schema,
                               right_schema, suffix)
            if out.num_rows:
                yield out
        if bounding is None:
            return
