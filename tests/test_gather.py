"""Output assembly: gathering rows straight from input slices equals pyarrow's take over
their concatenation, for every layout (the core's flat ones and pyarrow's fallback),
with nulls, sliced arrays and empty strings; bad source positions are refused."""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import _core
from mergetree.merge.assemble import RowSelection, select_rows

VALUES = {
    pa.int64(): st.integers(-(1 << 63), (1 << 63) - 1),
    pa.int8(): st.integers(-128, 127),
    pa.uint16(): st.integers(0, 65535),
    pa.float32(): st.floats(width=32, allow_nan=False),
    pa.bool_(): st.booleans(),
    pa.string(): st.text(max_size=6),
    pa.large_binary(): st.binary(max_size=6),
    pa.binary(3): st.binary(min_size=3, max_size=3),
    pa.decimal128(10, 2): st.decimals(min_value=-999, max_value=999, places=2),
    pa.timestamp("us", "UTC"): st.integers(0, 1 << 50),
    pa.list_(pa.int32()): st.lists(st.integers(-5, 5), max_size=3),   # pyarrow's take
    pa.dictionary(pa.int8(), pa.string()): st.sampled_from(["a", "b", "c"]),  # pyarrow's take
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_gather_equals_take_over_the_concatenation(data):
    types = data.draw(st.lists(st.sampled_from(list(VALUES)), min_size=1, max_size=4, unique=True))
    schema = pa.schema([pa.field(f"c{i}", t) for i, t in enumerate(types)])
    runs = data.draw(st.integers(1, 4))
    run_slices, expected_sources = [], []
    for run in range(runs):
        slices, position = [], data.draw(st.integers(0, 5))
        for _ in range(data.draw(st.integers(0, 3))):
            rows = data.draw(st.integers(1, 6))
            pad = data.draw(st.integers(0, 2))
            columns = [pa.array([data.draw(st.one_of(st.none(), VALUES[t])) for _ in range(rows + 2 * pad)],
                                type=t) for t in types]
            batch = pa.RecordBatch.from_arrays(columns, schema=schema).slice(pad, rows)
            slices.append((position, batch))
            expected_sources.extend((run, position + i, batch, i) for i in range(rows))
            position += rows
        run_slices.append(slices)
    picked = sorted(data.draw(st.lists(st.sampled_from(range(len(expected_sources))), unique=True))
                    if expected_sources else [])
    # output order: runs interleaved, each run's positions rising
    order = data.draw(st.permutations(picked))
    by_run = {}
    for i in order:
        by_run.setdefault(expected_sources[i][0], []).append(i)
    for members in by_run.values():
        members.sort()
    chosen, cursors = [], {r: 0 for r in by_run}
    for i in order:
        run = expected_sources[i][0]
        chosen.append(by_run[run][cursors[run]])
        cursors[run] += 1
    out_run = np.array([expected_sources[i][0] for i in chosen], dtype=np.int32)
    out_pos = np.array([expected_sources[i][1] for i in chosen], dtype=np.int64)
    got = select_rows(run_slices, out_run, out_pos).gather(schema)
    want = [expected_sources[i][2].slice(expected_sources[i][3], 1).to_pylist()[0] for i in chosen]
    assert got.schema == schema
    got.validate(full=True)
    assert got.to_pylist() == want


def test_gather_refuses_positions_outside_the_pieces():
    piece = pa.array([1, 2, 3], pa.int64())
    with pytest.raises(ValueError):
        _core.gather_column([piece], np.array([0], np.int32), np.array([3], np.int64), pa.allocate_buffer)
    with pytest.raises(ValueError):
        _core.gather_column([piece], np.array([1], np.int32), np.array([0], np.int64), pa.allocate_buffer)
    with pytest.raises(ValueError):
        _core.resolve_sources(np.array([0], np.int32), np.array([7], np.int64), np.array([0], np.int64),
                              np.array([3], np.int64), np.array([0, 1], np.int64))
    with pytest.raises(ValueError):  # pieces of different types
        _core.gather_column([piece, pa.array([1.0])], np.array([0], np.int32), np.array([0], np.int64),
                            pa.allocate_buffer)


def test_decimal_and_empty_strings_survive():
    batch = pa.record_batch({"d": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(5, 2)),
                             "s": pa.array(["", None])})
    got = select_rows([[(0, batch)]], np.array([0, 0], np.int32), np.array([1, 0], np.int64)).gather(batch.schema)
    assert got.to_pydict() == {"d": [None, decimal.Decimal("1.50")], "s": [None, ""]}


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_selection_take_slice_concat_equal_pyarrow(data):
    """A RowSelection narrowed, reordered, sliced and concatenated, then gathered, equals the
    same operations on the concatenated rows (nulls, strings, sliced pieces, whole batches)."""
    schema = pa.schema([("i", pa.int64()), ("s", pa.string())])

    def piece():
        rows, pad = data.draw(st.integers(0, 6)), data.draw(st.integers(0, 2))
        values = data.draw(st.lists(st.tuples(st.one_of(st.none(), st.integers(-9, 9)),
                                              st.one_of(st.none(), st.text(max_size=3))),
                                    min_size=rows + pad, max_size=rows + pad))
        batch = pa.RecordBatch.from_pylist([{"i": a, "s": b} for a, b in values], schema=schema)
        return batch.slice(pad)

    def selection():
        if data.draw(st.booleans()):
            batch = piece()
            return RowSelection.of_batch(batch), batch.to_pylist()
        pieces = [piece() for _ in range(data.draw(st.integers(1, 3)))]
        sources = [(p, r) for p in range(len(pieces)) for r in range(pieces[p].num_rows)]
        picked = data.draw(st.lists(st.sampled_from(sources), max_size=10)) if sources else []
        sel = RowSelection(pieces, np.array([p for p, _ in picked], np.int32),
                           np.array([r for _, r in picked], np.int64))
        return sel, [pieces[p].slice(r, 1).to_pylist()[0] for p, r in picked]

    parts = [selection() for _ in range(data.draw(st.integers(1, 3)))]
    sel = RowSelection.concat([s for s, _ in parts])
    want = [row for _, rows in parts for row in rows]
    if want:
        rows = data.draw(st.lists(st.integers(0, len(want) - 1), max_size=12))
        sel, want = sel.take(np.array(rows, dtype=np.int64)), [want[r] for r in rows]
    start = data.draw(st.integers(0, len(want)))
    sel, want = sel.slice(start), want[start:]
    got = sel.gather(schema)
    got.validate(full=True)
    assert got.schema == schema and got.to_pylist() == want


def test_a_selection_of_nothing_gathers_an_empty_batch():
    schema = pa.schema([("i", pa.int64()), ("s", pa.string())])
    empty = RowSelection([], np.zeros(0, np.int32), np.zeros(0, np.int64))
    got = empty.gather(schema)
    assert got.num_rows == 0 and got.schema == schema
    with pytest.raises(ValueError, match="name them with a schema"):
        empty.gather()
