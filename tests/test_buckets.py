"""Paimon's bucket placement (`mergetree.codec.buckets`, its hash kernel `mergetree._bucket`):
malformed input to the kernel and to `buckets_of` is refused cleanly, the kernel is thread safe,
and a table places every written row in the bucket `buckets_of` computes for its bucket key.
The hash itself against Java's rows and a model of `BinaryRow.hashCode()`: tests/test_codec.py."""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergetree import Table, UnsupportedPaimonFeatureError, _bucket
from mergetree.codec.buckets import bucket_function, buckets_of, paimon_hashes
from mergetree.codec.types import parse_type

BIGINT = parse_type("BIGINT")
I64 = pa.array([1, 2, 3], pa.int64())


@pytest.mark.parametrize("columns, max_row_bytes, message", [
    ([], 16, "at least one field"),
    ([(_bucket.SLOT_FIXED, I64, None)], 0, "max_row_bytes out of range"),
    ([(_bucket.SLOT_FIXED, I64, None)], 2**31 + 1, "max_row_bytes out of range"),
    ([(99, I64, None)], 16, "unknown slot kind 99"),
    ([(_bucket.SLOT_FIXED, I64, None), (_bucket.SLOT_FIXED, I64.slice(1), None)], 32, "column 1 has 2 rows"),
    ([(_bucket.SLOT_FIXED, pa.array(["a", "b", "c"]), None)], 32, "layout"),
    ([(_bucket.SLOT_BOOL, I64, None)], 32, "layout"),
    ([(_bucket.SLOT_FIXED, pa.array([b"abc"], pa.binary(3)), None)], 32, "3-byte values do not fit a slot"),
    ([(_bucket.SLOT_DECIMAL, I64, None)], 64, "decimals are read as decimal128"),
    ([(_bucket.SLOT_DECIMAL_COMPACT, I64, None)], 64, "decimals are read as decimal128"),
    ([(_bucket.SLOT_TIMESTAMP, I64, None)], 64, "int64 milliseconds plus int32 nanos"),
    ([(_bucket.SLOT_TIMESTAMP, I64, pa.array([1, 2, 3], pa.int64()))], 64, "the nanos are one int32 per row"),
    ([(_bucket.SLOT_TIMESTAMP, I64, pa.array([1, 2], pa.int32()))], 64, "shorter than its batch"),
    ([(_bucket.SLOT_TIMESTAMP, I64, pa.array([1, None, 3], pa.int32()))], 64, "the nanos have no nulls"),
    ([(_bucket.SLOT_FIXED, pa.array(["a"]).dictionary_encode(), None)], 32, "dictionary-encoded"),
    ([(_bucket.SLOT_BINARY, pa.array(["x" * 40]), None)], 24, "row 0 of the bucket key does not fit in 24 bytes"),
])
def test_the_kernel_refuses_malformed_input(columns, max_row_bytes, message):
    with pytest.raises(ValueError, match=message):
        _bucket.paimon_hashes(columns, max_row_bytes)


def test_the_kernel_takes_arrow_arrays_only():
    with pytest.raises(TypeError, match="__arrow_c_array__"):
        _bucket.paimon_hashes([(_bucket.SLOT_FIXED, np.arange(3), None)], 64)
    with pytest.raises(ValueError, match="unpack"):
        _bucket.paimon_hashes([(_bucket.SLOT_FIXED, I64)], 64)


def test_no_rows_have_no_buckets():
    out = _bucket.paimon_hashes([(_bucket.SLOT_FIXED, pa.array([], pa.int64()), None)], 32)
    assert out.dtype == np.int32 and out.tolist() == []
    out = buckets_of([pa.array([], pa.string())], [parse_type("STRING")], 4)
    assert out.dtype == np.int32 and out.tolist() == []


def test_buckets_of_refuses_what_it_cannot_place():
    with pytest.raises(ValueError, match="num_buckets must be positive, not 0"):
        buckets_of([I64], [BIGINT], 0)
    with pytest.raises(UnsupportedPaimonFeatureError, match="'hive'"):
        buckets_of([I64], [BIGINT], 4, "hive")
    with pytest.raises(UnsupportedPaimonFeatureError, match="null bucket key"):
        buckets_of([pa.array([1, None], pa.int64())], [BIGINT], 4, "mod")
    with pytest.raises(UnsupportedPaimonFeatureError, match="ARRAY cannot be hashed"):
        buckets_of([pa.array([[1]], pa.list_(pa.int32()))], [parse_type({"type": "ARRAY", "element": "INT"})], 4)


def test_chunks_slices_and_views_are_placed_as_their_values():
    values = [f"key-{i}" * (i % 4) for i in range(50)] + [None]
    string = parse_type("STRING")
    expected = buckets_of([pa.array(values)], [string], 7)
    chunked = pa.chunked_array([pa.array(values[:20]), pa.array([], pa.string()), pa.array(values[20:])])
    assert buckets_of([chunked], [string], 7).tolist() == expected.tolist()
    sliced = pa.array(["pad", *values, "pad"]).slice(1, len(values))
    assert buckets_of([sliced], [string], 7).tolist() == expected.tolist()
    assert buckets_of([pa.array(values, pa.large_string())], [string], 7).tolist() == expected.tolist()
    assert buckets_of([pa.array(values).dictionary_encode()], [string], 7).tolist() == expected.tolist()


def test_hashing_releases_the_gil_and_is_thread_safe():
    rng = np.random.default_rng(3)
    columns = [[pa.array(rng.integers(-(2**63), 2**63 - 1, 200_000, dtype=np.int64)),
                pa.array([f"s{x}" for x in rng.integers(0, 10**6, 200_000)])] for _ in range(4)]
    types = [BIGINT, parse_type("STRING")]
    serial = [paimon_hashes(c, types) for c in columns]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda c: paimon_hashes(c, types), columns))
    for a, b in zip(serial, threaded):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("bucket_key, options", [(None, {}), ("name", {}), ("n", {"bucket-function.type": "mod"})])
def test_every_written_row_is_in_the_bucket_of_its_bucket_key(tmp_path, bucket_key, options):
    schema = pa.schema([("p", pa.string()), ("name", pa.string()), ("n", pa.int64()), ("v", pa.float64())])
    t = Table.create(str(tmp_path / "t"), schema, primary_key=["p", "name", "n"], partition_by="p", buckets=5,
                     bucket_key=bucket_key, options=options)
    rows = pa.table({"p": [f"p{i % 2}" for i in range(300)], "name": [f"k{i % 37}" for i in range(300)],
                     "n": pa.array(range(-150, 150), pa.int64()), "v": [i / 3 for i in range(300)]}, schema=schema)
    t.write(rows)
    key = [bucket_key] if bucket_key else ["name", "n"]  # the primary key less the partition
    types = [parse_type("STRING" if c == "name" else "BIGINT") for c in key]
    function = bucket_function(options, types)
    placed = buckets_of([rows.column(c) for c in key], types, 5, function)
    assert t.directory.bucket_ids(rows).tolist() == placed.tolist()
    if function == "mod":
        assert placed.tolist() == [n % 5 for n in range(-150, 150)]  # Math.floorMod
    seen = 0
    for f in t.plan().files:
        bucket = int(re.search(r"bucket-(\d+)/", f.file_name).group(1))
        data = pq.read_table(os.path.join(t.path, f.file_name))
        assert set(buckets_of([data.column(c) for c in key], types, 5, function).tolist()) == {bucket}, f.file_name
        seen += data.num_rows
    assert seen == rows.num_rows and len({int(b) for b in placed}) > 1
