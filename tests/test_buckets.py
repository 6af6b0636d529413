"""Spark-compatible bucket ids (`mergetree.buckets`).

(a) The vectorized kernels against a small per-value Python reference written from the
    algorithm in shared/notes/spark.md ("Spark's bucket hash"), over every supported type.
(b) Against a real local Spark: `pmod(hash(cols...), n)` row by row.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import InvalidArgumentError, SchemaMismatchError, UnsupportedTypeError, _bucket
from mergetree.table.buckets import bucket_ids, spark_hash

# ---------------------------------------------------------------------------
# The reference: Spark's Murmur3, one value at a time, on Python ints.
# ---------------------------------------------------------------------------

M32 = 0xFFFFFFFF
SEED = 42


def rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & M32


def mix_k1(k: int) -> int:
    return (rotl32((k * 0xCC9E2D51) & M32, 15) * 0x1B873593) & M32


def mix_h1(h: int, k: int) -> int:
    return (rotl32(h ^ k, 13) * 5 + 0xE6546B64) & M32


def fmix(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


def signed32(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def ref_int(v: int, seed: int) -> int:
    return signed32(fmix(mix_h1(seed & M32, mix_k1(v & M32)), 4))


def ref_long(v: int, seed: int) -> int:
    v &= (1 << 64) - 1
    h = mix_h1(seed & M32, mix_k1(v & M32))
    h = mix_h1(h, mix_k1(v >> 32))
    return signed32(fmix(h, 8))


def ref_bytes(b: bytes, seed: int) -> int:
    h = seed & M32
    aligned = len(b) - len(b) % 4
    for i in range(0, aligned, 4):
        h = mix_h1(h, mix_k1(int.from_bytes(b[i:i + 4], "little")))
    for byte in b[aligned:]:
        h = mix_h1(h, mix_k1((byte - 256 if byte >= 128 else byte) & M32))  # sign-extended
    return signed32(fmix(h, len(b)))


def ref_float_bits(bits: int, seed: int) -> int:
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        bits = 0x7FC00000           # any NaN -> Java's canonical NaN
    elif bits == 0x80000000:
        bits = 0                    # -0.0 -> 0.0
    return ref_int(bits, seed)


def ref_double_bits(bits: int, seed: int) -> int:
    if (bits >> 52) & 0x7FF == 0x7FF and bits & ((1 << 52) - 1):
        bits = 0x7FF8000000000000
    elif bits == 1 << 63:
        bits = 0
    return ref_long(bits, seed)


def ref_unscaled(unscaled: int, precision: int, seed: int) -> int:
    if precision <= 18:
        return ref_long(unscaled, seed)
    # java.math.BigInteger.toByteArray: shortest big-endian two's complement with a sign bit
    bit_length = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return ref_bytes(unscaled.to_bytes(bit_length // 8 + 1, "big", signed=True), seed)


def unscaled(v: Decimal, scale: int) -> int:
    """The integer v * 10**scale, exactly (Decimal arithmetic would round past 28 digits)."""
    sign, digits, exponent = v.as_tuple()
    shift = exponent + scale
    magnitude = int("".join(map(str, digits)) or "0")
    magnitude = magnitude * 10**shift if shift >= 0 else magnitude // 10**-shift
    return -magnitude if sign else magnitude


def ref_decimal(precision: int, scale: int) -> Callable[[Decimal, int], int]:
    return lambda v, seed: ref_unscaled(unscaled(v, scale), precision, seed)


def ref_string(v: str, seed: int) -> int:
    return ref_bytes(v.encode("utf-8"), seed)


def ref_timestamp(unit: str) -> Callable[[int, int], int]:
    def micros(v: int) -> int:
        return {"s": v * 1_000_000, "ms": v * 1000, "us": v, "ns": v // 1000}[unit]  # ns floors
    return lambda v, seed: ref_long(micros(v), seed)


def ref_row(values: list[Any], refs: list[Callable[[Any, int], int]]) -> int:
    h = SEED
    for v, ref in zip(values, refs):
        if v is not None:
            h = ref(v, h)
    return h


def ref_pmod(h: int, n: int) -> int:
    r = int(math.fmod(h, n))
    return r + n if r < 0 else r


def test_reference_matches_values_pinned_from_spark():
    """A few hash(...) results printed by Spark 4.3.0, so the reference is checked even without Java."""
    assert ref_int(1, SEED) == -559580957      # hash(1), hash(true), hash(date'1970-01-02')
    assert ref_int(0, SEED) == 933211791       # hash(false)
    assert ref_long(1, SEED) == -1712319331    # hash(1L), hash(timestamp'1970-01-01 00:00:00.000001')
    assert [ref_string(s, SEED) for s in ["", "a", "ab", "abc", "abcd", "é"]] == [
        142593372, 1485273170, -97053317, 1322437556, -396302900, 2119106806]
    assert [ref_bytes(b, SEED) for b in [b"\xff", b"\x80"]] == [1398487324, 775851899]
    assert ref_double_bits(0x7FF0000000000001, SEED) == -1281358385   # hash(double('NaN'))
    assert ref_float_bits(0xFFC00000, SEED) == -349261430             # hash(float('NaN'))
    assert ref_decimal(10, 2)(Decimal("1.50"), SEED) == -2056712946
    assert ref_decimal(20, 2)(Decimal("-1.50"), SEED) == -690534446
    assert [ref_unscaled(v, 20, SEED) for v in (0, 128, -128, -129)] == [
        -783713497, -544401882, 775851899, -771458971]
    assert ref_string("a", ref_int(1, SEED)) == -936062819        # hash(1, 'a')
    assert ref_pmod(-559580957, 7) == 2 and ref_pmod(-7, 3) == 2


# ---------------------------------------------------------------------------
# (a) Vectorized vs reference, over every supported type.
# ---------------------------------------------------------------------------

def floats_from_bits(bits: list[int | None], dtype: pa.DataType) -> pa.Array:
    np_int, np_float = (np.uint32, np.float32) if dtype == pa.float32() else (np.uint64, np.float64)
    raw = np.array([b or 0 for b in bits], dtype=np_int).view(np_float)
    return pa.array(raw, type=dtype, mask=np.array([b is None for b in bits], dtype=bool))


def from_ints(dtype: pa.DataType) -> Callable[[list], pa.Array]:
    storage = pa.int32() if dtype.bit_width == 32 else pa.int64()
    return lambda values: pa.array(values, storage).view(dtype)


def run_end_encoded(values: list) -> pa.Array:
    return pc.run_end_encode(pa.array(values, pa.int64()))


@dataclass
class Kind:
    """One supported Arrow type: how to draw Python values, build the array, and hash a value."""
    arrow: pa.DataType
    values: st.SearchStrategy
    ref: Callable[[Any, int], int]
    build: Callable[[list], pa.Array] | None = None

    def array(self, values: list) -> pa.Array:
        return self.build(values) if self.build else pa.array(values, self.arrow)


def decimals(precision: int, scale: int) -> st.SearchStrategy:
    top = 10 ** precision - 1
    edges = st.sampled_from([0, 1, -1, top, -top, 127, 128, -128, -129, 255, 256, -256, -257])
    return st.one_of(edges, st.integers(-top, top)).map(lambda u: Decimal(f"{u}e-{scale}"))


# every length mod 4, ASCII and 2-, 3- and 4-byte UTF-8 characters, and the empty string
TEXT = st.text(alphabet=st.sampled_from("ab\x00\x7fé€\U0001F600"), max_size=11)
BYTES = st.binary(max_size=11)
BITS32 = st.one_of(st.sampled_from([0, 0x80000000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7F800000,
                                    0xFF800000, 0x3FC00000]), st.integers(0, 2**32 - 1))
BITS64 = st.one_of(st.sampled_from([0, 1 << 63, 0x7FF8000000000000, 0xFFF8000000000000,
                                    0x7FF0000000000001, 0x7FF0000000000000, 0x3FF8000000000000]),
                   st.integers(0, 2**64 - 1))
I64 = st.integers(-(2**63), 2**63 - 1)

KINDS: dict[str, Kind] = {
    "bool": Kind(pa.bool_(), st.booleans(), lambda v, s: ref_int(int(v), s)),
    "int8": Kind(pa.int8(), st.integers(-128, 127), ref_int),
    "int16": Kind(pa.int16(), st.integers(-(2**15), 2**15 - 1), ref_int),
    "int32": Kind(pa.int32(), st.integers(-(2**31), 2**31 - 1), ref_int),
    "int64": Kind(pa.int64(), I64, ref_long),
    "uint8": Kind(pa.uint8(), st.integers(0, 255), ref_int),
    "uint16": Kind(pa.uint16(), st.integers(0, 2**16 - 1), ref_int),
    "uint32": Kind(pa.uint32(), st.integers(0, 2**32 - 1), ref_long),
    "uint64": Kind(pa.uint64(), st.integers(0, 2**64 - 1), lambda v, s: ref_unscaled(v, 20, s)),
    "float32": Kind(pa.float32(), BITS32, ref_float_bits, lambda v: floats_from_bits(v, pa.float32())),
    "float64": Kind(pa.float64(), BITS64, ref_double_bits, lambda v: floats_from_bits(v, pa.float64())),
    "date32": Kind(pa.date32(), st.integers(-(2**31), 2**31 - 1), ref_int, from_ints(pa.date32())),
    "date64": Kind(pa.date64(), st.integers(-(2**31) * 86_400_000, (2**31 - 1) * 86_400_000 + 86_399_999),
                   lambda v, s: ref_int(v // 86_400_000, s), from_ints(pa.date64())),
    "timestamp_s": Kind(pa.timestamp("s"), st.integers(-((2**63) // 10**6), (2**63 - 1) // 10**6),
                        ref_timestamp("s"), from_ints(pa.timestamp("s"))),
    "timestamp_ms_tz": Kind(pa.timestamp("ms", tz="Europe/Paris"),
                            st.integers(-((2**63) // 1000), (2**63 - 1) // 1000),
                            ref_timestamp("ms"), from_ints(pa.timestamp("ms", tz="Europe/Paris"))),
    "timestamp_us_utc": Kind(pa.timestamp("us", tz="UTC"), I64, ref_timestamp("us"),
                             from_ints(pa.timestamp("us", tz="UTC"))),
    "timestamp_ns": Kind(pa.timestamp("ns"), I64, ref_timestamp("ns"), from_ints(pa.timestamp("ns"))),
    "decimal32": Kind(pa.decimal32(7, 2), decimals(7, 2), ref_decimal(7, 2)),
    "decimal64": Kind(pa.decimal64(18, 0), decimals(18, 0), ref_decimal(18, 0)),
    "decimal128_9_2": Kind(pa.decimal128(9, 2), decimals(9, 2), ref_decimal(9, 2)),
    "decimal128_19_0": Kind(pa.decimal128(19, 0), decimals(19, 0), ref_decimal(19, 0)),
    "decimal128_38_10": Kind(pa.decimal128(38, 10), decimals(38, 10), ref_decimal(38, 10)),
    "decimal256_30_4": Kind(pa.decimal256(30, 4), decimals(30, 4), ref_decimal(30, 4)),
    "string": Kind(pa.string(), TEXT, ref_string),
    "large_string": Kind(pa.large_string(), TEXT, ref_string),
    "string_view": Kind(pa.string_view(), st.text(max_size=30), ref_string),
    "binary": Kind(pa.binary(), BYTES, ref_bytes),
    "large_binary": Kind(pa.large_binary(), BYTES, ref_bytes),
    "binary_view": Kind(pa.binary_view(), st.binary(max_size=30), ref_bytes),
    "fixed_binary3": Kind(pa.binary(3), st.binary(min_size=3, max_size=3), ref_bytes),
    "fixed_binary8": Kind(pa.binary(8), st.binary(min_size=8, max_size=8), ref_bytes),
    "fixed_binary0": Kind(pa.binary(0), st.just(b""), ref_bytes),
    "dictionary": Kind(pa.dictionary(pa.int8(), pa.string()), st.sampled_from(["", "x", "é€", "abcde"]),
                       ref_string),
    "run_end_encoded": Kind(pa.run_end_encoded(pa.int32(), pa.int64()), st.sampled_from([0, -1, 2**40]),
                            ref_long, run_end_encoded),
    "null": Kind(pa.null(), st.none(), lambda v, s: s),
}


@st.composite
def key_column(draw, n: int) -> tuple[str, list, pa.Array | pa.ChunkedArray]:
    """A column of n values as the reference sees them and as Arrow holds them: plain,
    sliced out of a bigger array (non-zero offset, nulls outside the slice), or chunked."""
    name = draw(st.sampled_from(sorted(KINDS)))
    kind = KINDS[name]
    nullable = draw(st.booleans())
    values = draw(st.lists(st.one_of(st.none(), kind.values) if nullable else kind.values,
                           min_size=n, max_size=n))
    shape = draw(st.sampled_from(["plain", "sliced", "chunked"]))
    if shape == "plain":
        arr = kind.array(values)
    elif shape == "sliced":
        pad = draw(st.lists(st.one_of(st.none(), kind.values), min_size=1, max_size=9))
        arr = kind.array(pad + values + pad).slice(len(pad), n)
    else:
        cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
        bounds = [0, *cuts, n]
        chunks = []
        for a, b in itertools.pairwise(bounds):
            piece = kind.array([None, *values[a:b]] if nullable else values[a:b])
            chunks.append(piece.slice(1) if nullable else piece)
        arr = pa.chunked_array(chunks, type=chunks[0].type)
    return name, values, arr


@st.composite
def keyed_tables(draw) -> tuple[pa.Table, list[str], list[list], list[str]]:
    n = draw(st.integers(0, 40))
    columns = draw(st.lists(key_column(n), min_size=1, max_size=4))
    names = [f"c{i}" for i in range(len(columns))]
    table = pa.table({nm: arr for nm, (_, _, arr) in zip(names, columns)})
    return table, names, [values for _, values, _ in columns], [kind for kind, _, _ in columns]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyed_tables(), st.sampled_from([1, 2, 7, 16, 1000, 2**31 - 1]))
def test_spark_hash_matches_the_reference(case, num_buckets):
    table, names, columns, kinds = case
    refs = [KINDS[k].ref for k in kinds]
    expected = [ref_row([col[i] for col in columns], refs) for i in range(table.num_rows)]
    got = spark_hash(table, names)
    assert got.dtype == np.int32
    assert got.tolist() == expected
    assert bucket_ids(table, names, num_buckets).tolist() == [ref_pmod(h, num_buckets) for h in expected]
    # a record batch is hashed the same way
    batch = table.combine_chunks().to_batches()
    if batch:
        assert spark_hash(batch[0], names).tolist() == expected[:batch[0].num_rows]


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_kind_alone_without_and_with_nulls(kind, data):
    """Per type: an array without a validity buffer, then the same values with nulls."""
    k = KINDS[kind]
    values = data.draw(st.lists(k.values, min_size=1, max_size=30))
    arr = k.array(values)
    if kind not in ("null", "dictionary", "run_end_encoded"):
        assert arr.buffers()[0] is None  # no validity buffer at all
    got = spark_hash(pa.table({"c": arr}), ["c"]).tolist()
    assert got == [ref_row([v], [k.ref]) for v in values]
    with_nulls = [None if i % 3 == 0 else v for i, v in enumerate(values)]
    got = spark_hash(pa.table({"c": k.array(with_nulls)}), ["c"]).tolist()
    assert got == [ref_row([v], [k.ref]) for v in with_nulls]


def test_strings_of_every_length_mod_4_and_multibyte():
    words = ["", "a", "ab", "abc", "abcd", "abcde", "é", "éé", "€", "€a", "\U0001F600", "\U0001F600x",
             "ab€", "日本語テキスト", "x" * 33]
    for dtype in (pa.string(), pa.large_string(), pa.string_view()):
        got = spark_hash(pa.table({"s": pa.array(words, dtype)}), ["s"]).tolist()
        assert got == [ref_string(w, SEED) for w in words]


def test_nulls_pass_the_running_hash_through():
    t = pa.table({"a": pa.array([None, 1, None], pa.int32()), "b": pa.array(["x", None, None])})
    assert spark_hash(t, ["a", "b"]).tolist() == [ref_string("x", SEED), ref_int(1, SEED), SEED]
    both = pa.table({"a": pa.array([1], pa.int32()), "b": ["x"]})
    assert spark_hash(both, ["a", "b"]).tolist() == [ref_string("x", ref_int(1, SEED))]
    assert spark_hash(both, ["b", "a"]).tolist() == [ref_int(1, ref_string("x", SEED))]
    assert spark_hash(both, ["a", "b"]).tolist() != spark_hash(both, ["b", "a"]).tolist()


def test_sliced_validity_with_no_nulls_in_the_slice():
    arr = pa.array([None, 5, 6, None], pa.int64()).slice(1, 2)
    assert arr.buffers()[0] is not None and arr.null_count == 0
    assert spark_hash(pa.table({"k": arr}), ["k"]).tolist() == [ref_long(5, SEED), ref_long(6, SEED)]


def test_timestamp_units_become_microseconds():
    ns = pa.array([-1500, -1000, -1, 0, 999, 1500], pa.timestamp("ns", tz="UTC"))
    micros = [-2, -1, -1, 0, 0, 1]  # floored, as Spark's createDataFrame takes Arrow ns values
    assert spark_hash(pa.table({"t": ns}), ["t"]).tolist() == [ref_long(m, SEED) for m in micros]
    s = pa.array([1, -1], pa.timestamp("s"))
    assert spark_hash(pa.table({"t": s}), ["t"]).tolist() == [ref_long(10**6, SEED), ref_long(-(10**6), SEED)]


def test_timestamp_overflowing_microseconds_is_rejected():
    t = pa.table({"t": pa.array([2**62], pa.timestamp("s"))})
    with pytest.raises(InvalidArgumentError, match="microsecond"):
        spark_hash(t, ["t"])


def test_date64_floors_to_days():
    arr = pa.array([0, 86_400_000, -1, -86_400_000, 86_399_999], pa.int64()).view(pa.date64())
    assert spark_hash(pa.table({"d": arr}), ["d"]).tolist() == [ref_int(d, SEED) for d in (0, 1, -1, -1, 0)]


def test_date64_beyond_spark_dates_is_rejected():
    arr = pa.array([(2**31) * 86_400_000], pa.int64()).view(pa.date64())
    with pytest.raises(InvalidArgumentError, match="days"):
        spark_hash(pa.table({"d": arr}), ["d"])


def test_pmod_edges():
    hashes = np.array([0, 1, -1, 2**31 - 1, -(2**31), -7], dtype=np.int32)
    for n in (1, 2, 3, 7, 2**30 + 1, 2**31 - 1):
        assert _bucket.pmod(hashes, n).tolist() == [ref_pmod(int(h), n) for h in hashes]


def test_empty_input():
    t = pa.table({"k": pa.array([], pa.string())})
    assert spark_hash(t, ["k"]).tolist() == []
    assert bucket_ids(t, ["k"], 8).dtype == np.int32
    assert bucket_ids(pa.table({"k": pa.chunked_array([], pa.int64())}), "k", 3).tolist() == []


@pytest.mark.parametrize("dtype", [pa.float16(), pa.time32("ms"), pa.time64("us"), pa.duration("us"),
                                   pa.list_(pa.int32()), pa.struct([("x", pa.int32())]),
                                   pa.map_(pa.string(), pa.int32()), pa.dictionary(pa.int8(), pa.float16())])
def test_unsupported_types(dtype):
    t = pa.table({"k": pa.nulls(1, dtype)})
    with pytest.raises(UnsupportedTypeError, match="'k'"):
        bucket_ids(t, ["k"], 4)


def test_decimal256_beyond_spark_precision():
    t = pa.table({"k": pa.array([Decimal(1)], pa.decimal256(40, 0))})
    with pytest.raises(UnsupportedTypeError, match="38 digits"):
        spark_hash(t, ["k"])


def test_bad_arguments():
    t = pa.table({"a": [1], "b": [2]})
    with pytest.raises(SchemaMismatchError, match="no column 'z'"):
        spark_hash(t, ["z"])
    dup = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(SchemaMismatchError, match="ambiguous"):
        spark_hash(dup, ["a"])
    with pytest.raises(InvalidArgumentError, match="at least one column"):
        spark_hash(t, [])
    for n in (0, -3, 2**31, True, 2.5, "4"):
        with pytest.raises(InvalidArgumentError, match="num_buckets"):
            bucket_ids(t, ["a"], n)
    with pytest.raises(TypeError, match="Table or RecordBatch"):
        spark_hash({"a": [1]}, ["a"])
    assert spark_hash(t, "a").tolist() == spark_hash(t, ["a"]).tolist()


def test_kernels_check_their_inputs():
    arr = pa.array([1, 2, 3], pa.int64())
    with pytest.raises(ValueError, match="3 rows"):
        _bucket.fold_long(arr, np.zeros(2, np.int32), 8, True)
    with pytest.raises(ValueError, match="width"):
        _bucket.fold_long(arr, np.zeros(3, np.int32), 2, True)
    with pytest.raises(ValueError, match="layout"):
        _bucket.fold_decimal(arr, np.zeros(3, np.int32), 20)  # int64 is not a 16-byte decimal
    with pytest.raises(TypeError, match="__arrow_c_array__"):
        _bucket.fold_long(np.arange(3), np.zeros(3, np.int32), 8, True)
    with pytest.raises(ValueError, match="positive"):
        _bucket.pmod(np.zeros(1, np.int32), 0)


def test_hashing_releases_the_gil_and_is_thread_safe():
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(3)
    tables = [pa.table({"k": rng.integers(-(2**63), 2**63 - 1, 200_000, dtype=np.int64)}) for _ in range(4)]
    serial = [spark_hash(t, ["k"]) for t in tables]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda t: spark_hash(t, ["k"]), tables))
    for a, b in zip(serial, threaded):
        assert np.array_equal(a, b)


# ---------------------------------------------------------------------------
# (b) Against a real Spark (local[2]).
# ---------------------------------------------------------------------------

# the `spark` fixture (one local[2] session per run) is in conftest.py


def spark_rows(rng: np.random.Generator, n: int) -> pa.Table:
    """A wide table of every type Spark takes from Arrow, edge values first, ~10% nulls."""
    def with_nulls(arr_values: list) -> list:
        return [None if rng.random() < 0.1 else v for v in arr_values]

    def pick(edges: list, draw: Callable[[], Any]) -> list:
        return with_nulls(edges + [draw() for _ in range(n - len(edges))])

    alphabet = ["a", "b", "Z", "0", "é", "€", "\U0001F600", "日", " ", "\x00"]
    words = ["", "a", "ab", "abc", "abcd", "abcde", "é", "€", "\U0001F600", "x€y", "日本語"]
    doubles = [0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1.5, -2.25, 5e-324, 1e308]
    f32_nan_payload = np.array([0x7F800001, 0xFFC00000], np.uint32).view(np.float32).tolist()
    return pa.table({
        "id": pa.array(range(n), pa.int32()),
        "b": pa.array(pick([True, False], lambda: bool(rng.integers(2))), pa.bool_()),
        "i8": pa.array(pick([-128, 127, 0, -1], lambda: int(rng.integers(-128, 128))), pa.int8()),
        "i16": pa.array(pick([-(2**15), 2**15 - 1], lambda: int(rng.integers(-(2**15), 2**15))), pa.int16()),
        "i32": pa.array(pick([0, 1, -1, 2**31 - 1, -(2**31)], lambda: int(rng.integers(-(2**31), 2**31))),
                        pa.int32()),
        "i64": pa.array(pick([0, 1, -1, 2**63 - 1, -(2**63), 2**32], lambda: int(rng.integers(-(2**63), 2**63 - 1))),
                        pa.int64()),
        "f32": pa.array(pick([0.0, -0.0, float("nan"), *f32_nan_payload, 1.5, float("inf")],
                             lambda: float(np.float32(rng.normal() * 1e3))), pa.float32()),
        "f64": pa.array(pick(doubles, lambda: float(rng.normal() * 1e6)), pa.float64()),
        "s": pa.array(pick(words, lambda: "".join(rng.choice(alphabet, int(rng.integers(0, 13))))),
                      pa.string()),
        "bin": pa.array(pick([b"", b"\x80", b"\xff\xfe\xfd", b"abcd", b"\x00" * 5],
                             lambda: rng.bytes(int(rng.integers(0, 13)))), pa.binary()),
        "d": pa.array(pick([0, -1, 1, 2932896, -719162], lambda: int(rng.integers(-100_000, 100_000))),
                      pa.int32()).view(pa.date32()),
        "ts": pa.array(pick([0, -1, 1, 253402300799999999], lambda: int(rng.integers(-(2**56), 2**56))),
                       pa.int64()).view(pa.timestamp("us", tz="UTC")),
        "ts_ntz": pa.array(pick([0, -1], lambda: int(rng.integers(-(2**56), 2**56))),
                           pa.int64()).view(pa.timestamp("us")),
        "ts_ns": pa.array(pick([-1500, -1000, -1, 999, 1500], lambda: int(rng.integers(-(2**62), 2**62))),
                          pa.int64()).view(pa.timestamp("ns", tz="UTC")),
        "dec": pa.array(pick([Decimal("0.00"), Decimal("-0.01"), Decimal("99999999.99")],
                             lambda: Decimal(int(rng.integers(-(10**10) + 1, 10**10))).scaleb(-2)),
                        pa.decimal128(10, 2)),
        "dec18": pa.array(pick([Decimal(10**18 - 1), Decimal(-(10**18) + 1)],
                               lambda: Decimal(int(rng.integers(-(10**18) + 1, 10**18)))), pa.decimal128(18, 0)),
        "dec_big": pa.array(pick([Decimal(0), Decimal("-0.000001"), Decimal("0.000128"), Decimal("-0.000129"),
                                  Decimal(10**32 - 1), Decimal(-(10**32) + 1)],
                                 lambda: Decimal(int(rng.integers(-(2**63), 2**63 - 1)) * int(rng.integers(1, 2**40)))
                                 .scaleb(-6)), pa.decimal128(38, 6)),
        "dec20": pa.array(pick([Decimal(0), Decimal(-1), Decimal(127), Decimal(128), Decimal(-129),
                                Decimal(10**20 - 1)],
                               lambda: Decimal(int(rng.integers(-(2**63), 2**63 - 1)) * 7)), pa.decimal128(20, 0)),
    })


KEYS = [["b"], ["i8"], ["i16"], ["i32"], ["i64"], ["f32"], ["f64"], ["s"], ["bin"], ["d"], ["ts"],
        ["ts_ntz"], ["ts_ns"], ["dec"], ["dec18"], ["dec_big"], ["dec20"],
        ["i32", "s"], ["s", "i64", "d"], ["f64", "dec_big", "bin", "b"],
        ["b", "i8", "i16", "i32", "i64", "f32", "f64", "s", "bin", "d", "ts", "ts_ntz", "ts_ns", "dec", "dec18",
         "dec_big", "dec20"]]
NUM_BUCKETS = 16


def spark_select(spark, table: pa.Table, keys: list[list[str]], n: int) -> pa.Table:
    df = spark.createDataFrame(table)
    exprs = ["id"]
    for i, key in enumerate(keys):
        cols = ", ".join(f"`{c}`" for c in key)
        exprs += [f"hash({cols}) AS h{i}", f"pmod(hash({cols}), {n}) AS p{i}"]
    return df.selectExpr(*exprs).orderBy("id").toArrow()


def test_matches_real_spark_row_by_row(spark):
    table = spark_rows(np.random.default_rng(2024), 300)
    df = spark.createDataFrame(table)
    schema = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert schema["ts_ns"] == "timestamp" and schema["dec_big"] == "decimal(38,6)"
    got = spark_select(spark, table, KEYS, NUM_BUCKETS)
    assert got.column("id").to_pylist() == list(range(table.num_rows))
    for i, key in enumerate(KEYS):
        ours = spark_hash(table, key)
        theirs = got.column(f"h{i}").to_numpy()
        bad = np.flatnonzero(ours != theirs)
        assert bad.size == 0, (
            f"hash({', '.join(key)}) differs from Spark in {bad.size} rows, first row {bad[0]}: "
            f"{[table.column(c)[int(bad[0])] for c in key]} -> ours {ours[bad[0]]}, Spark {theirs[bad[0]]}")
        assert np.array_equal(bucket_ids(table, key, NUM_BUCKETS), got.column(f"p{i}").to_numpy()), key


def test_matches_spark_reading_our_parquet(spark, tmp_path):
    """Types Spark only meets in files: unsigned integers (read as SMALLINT, INT, BIGINT and
    DECIMAL(20,0)), fixed-size binary (BINARY) and date64 (DATE); also string views,
    dictionaries and large strings as Spark reads them back (STRING)."""
    import pyarrow.parquet as pq
    rng = np.random.default_rng(7)
    n = 200

    def nulls(values: list) -> list:
        return [None if rng.random() < 0.1 else v for v in values]

    words = ["", "a", "abc", "abcd", "€", "\U0001F600", "日本語", "abcdefg"]
    table = pa.table({
        "id": pa.array(range(n), pa.int32()),
        "u8": pa.array(nulls([0, 255, 128] + rng.integers(0, 256, n - 3).tolist()), pa.uint8()),
        "u16": pa.array(nulls([0, 65535, 32768] + rng.integers(0, 2**16, n - 3).tolist()), pa.uint16()),
        "u32": pa.array(nulls([0, 2**32 - 1, 2**31] + rng.integers(0, 2**32, n - 3).tolist()), pa.uint32()),
        "u64": pa.array(nulls([0, 2**64 - 1, 2**63] + rng.integers(0, 2**64 - 1, n - 3, dtype=np.uint64).tolist()),
                        pa.uint64()),
        "fsb": pa.array(nulls([rng.bytes(5) for _ in range(n)]), pa.binary(5)),
        "d64": pa.array(nulls([int(x) * 86_400_000 for x in rng.integers(-50_000, 50_000, n)]),
                        pa.int64()).view(pa.date64()),
        "sv": pa.array(nulls([words[i % len(words)] for i in range(n)]), pa.string_view()),
        "dict": pa.array(nulls([words[(3 * i) % len(words)] for i in range(n)]),
                         pa.dictionary(pa.int16(), pa.string())),
        "ls": pa.array(nulls([words[(5 * i) % len(words)] * 3 for i in range(n)]), pa.large_string()),
    })
    path = tmp_path / "unsigned.parquet"
    pq.write_table(table, path)
    df = spark.read.parquet(str(path))
    schema = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert [schema[c] for c in ("u8", "u16", "u32", "u64", "fsb", "d64", "sv", "dict", "ls")] == [
        "smallint", "int", "bigint", "decimal(20,0)", "binary", "date", "string", "string", "string"]
    keys = [[c] for c in table.column_names[1:]] + [["u64", "u8", "fsb"], ["sv", "dict", "ls", "d64"]]
    exprs = ["id"] + [f"hash({', '.join(k)}) AS h{i}" for i, k in enumerate(keys)]
    got = df.selectExpr(*exprs).orderBy("id").toArrow()
    for i, key in enumerate(keys):
        assert np.array_equal(spark_hash(table, key), got.column(f"h{i}").to_numpy()), key
