"""A large bucket read in pieces by key range (what Spark's `splitSize` does): the pieces,
read one after the other, give exactly the rows of the whole bucket, in the same order, for
any data — overlapping level-0 runs, compacted runs, string and composite keys, one key."""
from __future__ import annotations

import itertools

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import Table
from mergetree.table.read import file_filter, read_bucket, split_bucket


def pieces_read(table: Table, parts: int, filter=None) -> tuple[pa.Table, int]:
    directory = table.directory
    schema = directory.schema.schema
    plan = table.plan(filter)
    from mergetree.table import filters as flt
    f = flt.normalize(filter, schema)
    batches = []
    count = 0
    for bucket in plan.buckets:
        for piece in split_bucket(directory, bucket, parts):
            count += 1
            batches += list(read_bucket(directory, piece, schema.names, flt.to_expression(f, schema),
                                        file_filter(directory, f)))
    return pa.Table.from_batches(batches, schema=schema), count


def write_runs(table: Table, runs: list[list[dict]], schema: pa.Schema) -> None:
    for rows in runs:
        table.write(pa.Table.from_pylist(rows, schema=schema))


@settings(max_examples=40, deadline=None)
@given(runs=st.lists(st.lists(st.fixed_dictionaries({"k": st.integers(0, 400), "v": st.integers(-2**63, 2**63 - 1)}),
                              min_size=1, max_size=300), min_size=1, max_size=5),
       parts=st.integers(1, 6), compact=st.booleans(), deletes=st.lists(st.integers(0, 400), max_size=30))
def test_pieces_equal_the_whole_bucket(tmp_path_factory, runs, parts, compact, deletes):
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    table = Table.create(str(tmp_path_factory.mktemp("split") / "t"), schema, primary_key="k",
                         options={"write-only": "true"})
    write_runs(table, runs, schema)
    if deletes:
        table.delete(pa.table({"k": pa.array(deletes, pa.int64())}))
    if compact:
        table.compact(full=True)
    whole = table.read()
    got, _ = pieces_read(table, parts)
    assert got.equals(whole)
    filtered = table.read(filter=("k", ">=", 100))
    got_filtered, _ = pieces_read(table, parts, ("k", ">=", 100))
    assert got_filtered.equals(filtered)


def test_a_large_bucket_of_overlapping_runs_splits_evenly(tmp_path):
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    table = Table.create(str(tmp_path / "t"), schema, primary_key="k", options={"write-only": "true"})
    import numpy as np
    rng = np.random.default_rng(1)
    for _ in range(4):  # four runs, each over the whole key space
        keys = rng.choice(200_000, 50_000, replace=False)
        table.write(pa.table({"k": keys, "v": keys}))
    bucket = table.plan().buckets[0]
    pieces = split_bucket(table.directory, bucket, 4)
    assert len(pieces) == 4
    directory = table.directory
    sizes = [sum(b.num_rows for b in read_bucket(directory, p, ["k", "v"], None, None)) for p in pieces]
    assert sum(sizes) == table.read().num_rows
    assert max(sizes) < 1.3 * min(sizes), sizes  # balanced by the row groups' statistics
    # the pieces' ranges are ascending and cover everything
    assert pieces[0].key_range[0] is None and pieces[-1].key_range[1] is None
    assert all(a.key_range[1] == b.key_range[0] for a, b in itertools.pairwise(pieces))


@pytest.mark.parametrize("kind", ["string", "composite", "one-key"])
def test_string_composite_and_single_key_buckets(tmp_path, kind):
    if kind == "composite":
        schema = pa.schema([("a", pa.string()), ("b", pa.int32()), ("v", pa.int64())])
        key = ["a", "b"]
        rows = [[{"a": f"p{i % 7}", "b": (i * 13) % 50, "v": r * 1000 + i} for i in range(300)] for r in range(3)]
    elif kind == "string":
        schema = pa.schema([("a", pa.string()), ("v", pa.int64())])
        key = ["a"]
        rows = [[{"a": "shared-prefix-" * 5 + f"{(i * 31 + r) % 997:04d}", "v": r} for i in range(400)]
                for r in range(3)]
    else:
        schema = pa.schema([("a", pa.int64()), ("v", pa.int64())])
        key = ["a"]
        rows = [[{"a": 5, "v": r}] for r in range(4)]
    table = Table.create(str(tmp_path / "t"), schema, primary_key=key, options={"write-only": "true"})
    write_runs(table, rows, schema)
    got, count = pieces_read(table, 5)
    assert got.equals(table.read())
    if kind == "one-key":
        assert count == 1  # one key cannot be cut


def test_a_float_key_bucket_is_not_split(tmp_path):
    """Parquet statistics and Arrow comparisons do not order -0.0/0.0/NaN as the merge does:
    such a bucket is read whole, never cut."""
    schema = pa.schema([("k", pa.float64()), ("v", pa.int64())])
    table = Table.create(str(tmp_path / "t"), schema, primary_key="k", options={"write-only": "true"})
    for r in range(3):
        table.write({"k": [float(i) + r / 10 for i in range(20_000)] + ([float("nan")] if r == 1 else []),
                     "v": [r] * (20_000 + (r == 1))})
    got, count = pieces_read(table, 4)
    assert count == 1
    assert got.num_rows == table.read().num_rows == 60_001
