"""Keys with long shared prefixes: the core leaves the bytes every key shares out of its
comparisons.  Against the model, for both algorithms and every engine: prefixes that end
inside a UTF-8 character, keys that are prefixes of other keys, empty strings, nulls,
binary keys with zero bytes, composite keys, and batches that shrink the shared prefix
mid-merge."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import merge_model, order_key
from strategies import canonical

import mergetree

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PREFIXES = ["", "https://example.com/a/" * 4, "é" * 40, "x" * 99 + "é"]  # the last ends mid-character once cut
SUFFIXES = st.text(alphabet="abé\x00", max_size=3)


@st.composite
def prefixed_runs(draw, binary: bool, composite: bool):
    prefix = draw(st.sampled_from(PREFIXES))
    pool = sorted({prefix + draw(SUFFIXES) for _ in range(draw(st.integers(1, 12)))}
                  | set(draw(st.lists(st.sampled_from([prefix, prefix[:-1], prefix[: len(prefix) // 2]]),
                                      max_size=2))))
    if draw(st.booleans()):
        pool = [None] + pool
    if binary:
        pool = [None if v is None else v.encode("utf-8") for v in pool]
    runs = []
    for _ in range(draw(st.integers(1, 8))):
        keys = sorted(draw(st.lists(st.sampled_from(pool), unique=True)), key=order_key)
        rows = []
        for v in keys:
            for second in (sorted(draw(st.lists(st.integers(0, 2), unique=True, min_size=1))) if composite else [0]):
                rows.append({"k0": v, "k1": second, "seq": draw(st.integers(0, 3)), "v": draw(st.integers(-3, 3))})
        runs.append(rows)
    return runs


@pytest.mark.parametrize("algorithm", ["loser-tree", "heap"])
@pytest.mark.parametrize("engine", ["deduplicate", "none", "aggregate"])
@pytest.mark.parametrize("binary", [False, True])
@SETTINGS
@given(data=st.data())
def test_shared_prefixes_match_the_model(data, algorithm, engine, binary):
    composite = data.draw(st.booleans())
    runs_rows = data.draw(prefixed_runs(binary, composite))
    key = ["k0", "k1"] if composite else ["k0"]
    schema = pa.schema([("k0", pa.binary() if binary else pa.string()), ("k1", pa.int64()),
                        ("seq", pa.int64()), ("v", pa.int64())])
    cut = data.draw(st.sampled_from([1, 3, 1000]))
    runs = [[b for b in pa.Table.from_pylist(rows, schema=schema).to_batches(max_chunksize=cut)] for rows in runs_rows]
    reader = mergetree.merge(runs, key, sequence="seq", engine=engine, algorithm=algorithm,
                             batch_size=data.draw(st.sampled_from([2, 65536])))
    table = reader.read_all()
    expected = merge_model(runs_rows, key, sequence="seq", engine=engine, columns=schema.names)
    assert canonical(table.to_pylist()) == canonical(expected)


def test_the_prefix_is_skipped_and_narrows_when_a_batch_disagrees():
    prefix = "customer/2026/11/23/"
    first = pa.table({"k": [prefix + "a", prefix + "c"]})
    later = [pa.record_batch({"k": [prefix + "b"]}), pa.record_batch({"k": ["customer/2027/x"]})]
    reader = mergetree.merge([first, later], "k", batch_size=1)
    batches = iter(reader)
    next(batches)
    assert reader._core.shared_prefix == len(prefix)
    out = [next(batches)] + list(batches)
    assert reader._core.shared_prefix == len("customer/202")
    assert pa.Table.from_batches(out)["k"].to_pylist() == [prefix + "b", prefix + "c", "customer/2027/x"]
