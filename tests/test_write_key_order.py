"""A write's row order (by bucket group, then key, stable; with a merge engine's pick, one row
per key) is the same whichever way it is computed: the packed-integer sort of one integer key
against Arrow's stable sort, on every integer width, duplicates, extremes and groups."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mergetree.table.write import _integer_key_order

TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


def _reference(group: np.ndarray, values: list[int], type_: pa.DataType, pick: str | None) -> list[int]:
    by = pa.table([pa.array(group), pa.array(values, type_)], names=["group", "k"])
    order = np.asarray(pc.sort_indices(by, sort_keys=[("group", "ascending"), ("k", "ascending")])).tolist()
    if pick is None or len(order) < 2:
        return order
    keyed = [(int(group[i]), values[i]) for i in order]
    if pick == "last":
        return [i for j, i in enumerate(order) if j == len(order) - 1 or keyed[j + 1] != keyed[j]]
    return [i for j, i in enumerate(order) if j == 0 or keyed[j - 1] != keyed[j]]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(TYPES), st.data(), st.sampled_from([None, "last", "first"]), st.integers(1, 4))
@example(pa.int64(), None, "last", 1)
def test_the_packed_sort_orders_as_the_stable_sort(type_, data, pick, groups):
    info = np.iinfo(type_.to_pandas_dtype())
    if data is None:  # the extremes of int64 side by side: the span does not fit, so no packing
        values, group = [int(info.min), int(info.max), 0, int(info.min)], np.zeros(4, dtype=np.int64)
    else:
        n = data.draw(st.integers(0, 60))
        small = st.integers(max(-3, int(info.min)), 3)
        values = data.draw(st.lists(st.one_of(small, st.integers(int(info.min), int(info.max))), min_size=n,
                                    max_size=n))
        group = np.array(data.draw(st.lists(st.integers(0, groups - 1), min_size=n, max_size=n)), dtype=np.int64)
    fast = _integer_key_order(group, pa.chunked_array([pa.array(values, type_)], type_), pick)
    if fast is not None:
        assert fast.tolist() == _reference(group, values, type_, pick)
    else:  # only when the packed key would overflow
        span = max(values) - min(values) + 1
        assert max(values) >= 2**63 or (int(group.max()) + 1) * span * len(values) >= 2**63


def test_a_typical_upsert_buffer_takes_the_packed_sort():
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 10_000_000, 100_000)
    group = rng.integers(0, 4, 100_000).astype(np.int64)
    fast = _integer_key_order(group, pa.chunked_array([pa.array(keys)]), "last")
    assert fast is not None
    assert fast.tolist() == _reference(group, keys.tolist(), pa.int64(), "last")
