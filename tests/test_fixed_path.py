"""The fixed-width path of the loser tree (one fixed-width key column, no key nulls):
extreme keys and sequences, every engine, against the model; nulls move a merge to the
six-state tree before it starts, and a null after a run's first rows is out of order."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import merge_model
from strategies import canonical

import mergetree
from mergetree.errors import UnsortedRunError

INT64 = (-(1 << 63), (1 << 63) - 1)
EXTREME_KEYS = {
    "int64": st.sampled_from([INT64[0], INT64[0] + 1, -1, 0, 1, INT64[1] - 1, INT64[1]]),
    "uint64": st.sampled_from([0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 2, (1 << 64) - 1]),
    "int8": st.integers(-128, 127),
    "uint16": st.integers(0, 65535),
    "float64": st.sampled_from([float("-inf"), -1.5, -0.0, 0.0, 2.5, float("inf"), float("nan")]),
    "float32": st.sampled_from([float("-inf"), -0.0, 0.0, 1.0, float("inf")]),
}
ARROW = {"int64": pa.int64(), "uint64": pa.uint64(), "int8": pa.int8(), "uint16": pa.uint16(),
         "float64": pa.float64(), "float32": pa.float32()}
SEQUENCES = st.sampled_from([INT64[0], -1, 0, 1, 2, INT64[1]])  # ties and both ends


def sort_key(value):
    if isinstance(value, float):
        return (1, 0) if value != value else (0, value, str(value).startswith("-"))
    return (0, value)


@st.composite
def runs_of(draw, type_name: str):
    pool = draw(st.lists(EXTREME_KEYS[type_name], min_size=1, max_size=8))
    seen, keys = set(), []
    for v in sorted(pool, key=sort_key):
        marker = ("nan",) if v != v else (v, str(v))
        if marker not in seen and not (v == 0 and any(k == 0 and k == v for k in keys)):
            seen.add(marker)
            keys.append(v)
    runs = []
    for _ in range(draw(st.integers(1, 9))):
        chosen = sorted(draw(st.lists(st.sampled_from(keys), unique_by=lambda v: str(v))), key=sort_key)
        runs.append([{"k": v, "seq": draw(SEQUENCES), "kind": draw(st.sampled_from([0, 2, 3])),
                      "v": draw(st.integers(-3, 3))} for v in chosen])
    return runs


def build(rows, type_name: str, cut: int) -> list[pa.RecordBatch]:
    schema = pa.schema([("k", ARROW[type_name]), ("seq", pa.int64()), ("kind", pa.int8()), ("v", pa.int64())])
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    return [batch.slice(i, cut) for i in range(0, max(len(rows), 1), cut)]


@pytest.mark.parametrize("type_name", sorted(EXTREME_KEYS))
@pytest.mark.parametrize("engine", ["deduplicate", "first-row", "none", "aggregate"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fixed_path_matches_model(data, type_name, engine):
    runs_rows = data.draw(runs_of(type_name))
    if engine == "first-row":
        runs_rows = [[{**r, "kind": 0} for r in rows] for rows in runs_rows]
    cut = data.draw(st.sampled_from([1, 2, 1000]))
    batch_size = data.draw(st.sampled_from([1, 3, 65536]))
    keep_deletes = data.draw(st.booleans())
    runs = [build(rows, type_name, cut) for rows in runs_rows]
    reader = mergetree.merge(runs, "k", sequence="seq", kind="kind", engine=engine,
                             keep_deletes=keep_deletes, batch_size=batch_size)
    table = reader.read_all()
    if any(runs_rows):
        assert reader.path == "fixed-width"
    expected = merge_model(runs_rows, ["k"], sequence="seq", kind="kind", engine=engine,
                           keep_deletes=keep_deletes, columns=["k", "seq", "kind", "v"])
    assert canonical(table.to_pylist()) == canonical(expected)
    assert all(b.num_rows <= batch_size for b in table.to_batches())


def test_largest_key_and_sequence_are_not_mistaken_for_the_end_of_a_run():
    top = INT64[1]
    runs = [pa.table({"k": [top], "seq": [top]}), pa.table({"k": [5, top], "seq": [top, top]})]
    reader = mergetree.merge(runs, "k", sequence="seq", engine="none")
    out = reader.read_all()
    assert reader.path == "fixed-width"
    assert out.to_pydict() == {"k": [5, top, top], "seq": [top, top, top]}


def test_null_keys_take_the_six_state_tree():
    runs = [pa.table({"k": pa.array([None, INT64[0], 3], pa.int64())}),
            pa.table({"k": pa.array([INT64[0], 4], pa.int64())})]
    reader = mergetree.merge(runs, "k")
    out = reader.read_all()
    assert reader.path == "six-state"
    assert out["k"].to_pylist() == [None, INT64[0], 3, 4]


def test_a_null_key_after_a_runs_first_rows_is_out_of_order():
    first = pa.record_batch({"k": pa.array([1, 2], pa.int64())})
    later = pa.record_batch({"k": pa.array([3, None], pa.int64())})
    reader = mergetree.merge([[first, later], pa.table({"k": np.arange(10, dtype=np.int64)})], "k", batch_size=1)
    with pytest.raises(UnsortedRunError):
        reader.read_all()
    assert reader.path == "fixed-width"


def test_out_of_order_rows_are_reported_with_their_position():
    runs = [pa.table({"k": pa.array([1, 5, 4], pa.int64())}), pa.table({"k": pa.array([2], pa.int64())})]
    with pytest.raises(UnsortedRunError) as caught:
        mergetree.merge(runs, "k").read_all()
    assert (caught.value.run, caught.value.row) == (0, 2)
