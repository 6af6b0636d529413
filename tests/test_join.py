"""The sorted merge join against a dict model."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import join_sorted


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
@settings(max_examples=80, deadline=None)
@given(left=st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=20),
       right=st.dictionaries(st.text(max_size=3), st.booleans(), max_size=20))
def test_join_sorted_matches_model(how, left, right):
    order = lambda keys: sorted(keys, key=lambda s: s.encode())  # noqa: E731  (Arrow's UTF-8 byte order)
    lt = pa.table({"k": pa.array(order(left), pa.string()), "v": pa.array([left[k] for k in order(left)], pa.int64())})
    rt = pa.table({"k": pa.array(order(right), pa.string()),
                   "w": pa.array([right[k] for k in order(right)], pa.bool_())})
    keys = {"inner": left.keys() & right.keys(), "left": left.keys(), "right": right.keys(),
            "full": left.keys() | right.keys(), "semi": left.keys() & right.keys(),
            "anti": left.keys() - right.keys()}[how]
    if how in ("semi", "anti"):  # the left's rows only
        want = [{"k": k, "v": left[k]} for k in order(keys)]
    else:
        want = [{"k": k, "v": left.get(k), "w": right.get(k)} for k in order(keys)]
    assert join_sorted(lt, rt, "k", how).to_pylist() == want
