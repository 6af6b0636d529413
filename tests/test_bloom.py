"""The Bloom file index (`mergetree.table.indexes.bloom`, `mergetree._bloom`).

(a) Real Parquet files written by pyarrow (several row groups, nulls, every supported type,
    format 2.6 and 1.0, decimals as integers and INT96 timestamps): the description matches
    pyarrow's own metadata; a value in the file is never reported absent (hypothesis); the
    false-positive rate over many absent values is within 2x of the configured one; DuckDB's
    ``parquet_bloom_probe`` agrees; inline filters and file reads give the same answers.
(b) Synthetic files built here with a small Thrift compact writer: unknown fields of every
    Thrift type, converted types, filters without ``bloom_filter_length``, filters we cannot
    use, and malformed footers (CorruptTableError, never a crash or a hang).
(c) Unsupported types, argument checks, and `might_contain` against a Python reference.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
import math
import os
import random
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import (
    CorruptTableError,
    InvalidArgumentError,
    MergeTreeError,
    SchemaMismatchError,
    UnsupportedTypeError,
    _bloom,
)
from mergetree.table.indexes.bloom import (
    INLINE_MAX_BYTES,
    ColumnBloom,
    bloom_supported,
    check_bloom_column,
    describe,
    file_may_contain,
    row_groups_that_may_contain,
    write_options,
)

SALTS = (0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31)

# ---------------------------------------------------------------------------
# The reference SBBF, from the Parquet spec (BloomFilter.md), one value at a time.
# ---------------------------------------------------------------------------


def ref_block_and_masks(h: int, num_blocks: int) -> tuple[int, list[int]]:
    block = ((h >> 32) * num_blocks) >> 32
    key = h & 0xFFFFFFFF
    return block, [1 << (((key * salt) & 0xFFFFFFFF) >> 27) for salt in SALTS]


def ref_insert(bitset: bytearray, h: int) -> None:
    block, masks = ref_block_and_masks(h, len(bitset) // 32)
    for i, mask in enumerate(masks):
        at = block * 32 + 4 * i
        word = int.from_bytes(bitset[at:at + 4], "little") | mask
        bitset[at:at + 4] = word.to_bytes(4, "little")


def ref_check(bitset: bytes, h: int) -> bool:
    block, masks = ref_block_and_masks(h, len(bitset) // 32)
    return all(int.from_bytes(bitset[block * 32 + 4 * i:block * 32 + 4 * i + 4], "little") & m
               for i, m in enumerate(masks))


def sbbf_fpp(n: int, num_blocks: int) -> float:
    """The false-positive probability of a split-block filter of `num_blocks` holding `n`
    keys: a block holds Binomial(n, 1/num_blocks) keys; each of its words has one of 32 bits
    set per key."""
    p = 1.0 / num_blocks
    total = 0.0
    log_pmf = n * math.log1p(-p)  # k = 0
    for k in range(0, min(n, 2000) + 1):
        if k:
            log_pmf += math.log((n - k + 1) / k) + math.log(p) - math.log1p(-p)
        total += math.exp(log_pmf) * (1.0 - (31 / 32) ** k) ** 8
    return total


# ---------------------------------------------------------------------------
# Real files: every supported type, values from an injective map of an index,
# so indices past the written ones give values absent from the file.
# ---------------------------------------------------------------------------

def _ints(type_: pa.DataType, bits: int, signed: bool) -> Callable[[list[int]], pa.Array]:
    mult = 0x9E3779B97F4A7C15 | 1  # odd: a bijection modulo 2**bits

    def make(idx: list[int]) -> pa.Array:
        vals = [(i * mult) % (1 << bits) for i in idx]
        if signed:
            vals = [v - (1 << (bits - 1)) for v in vals]
        return pa.array(vals, type_)
    return make


def _from_storage(type_: pa.DataType, storage: pa.DataType, f: Callable[[int], int]) -> Callable[[list[int]], pa.Array]:
    return lambda idx: pa.array([f(i) for i in idx], storage).view(type_) if pa.types.is_time(type_) \
        else pa.array([f(i) for i in idx], storage).cast(type_)


def _decimals(type_: pa.DataType, f: Callable[[int], int]) -> Callable[[list[int]], pa.Array]:
    return lambda idx: pa.array([Decimal(f(i)).scaleb(-type_.scale) for i in idx], type_)


def _f16(idx: list[int]) -> pa.Array:
    return pa.array(np.array([(i % 4001) - 2000 for i in idx], dtype=np.float16))


TYPES: dict[str, tuple[pa.DataType, Callable[[list[int]], pa.Array]]] = {
    "i8": (pa.int8(), _ints(pa.int8(), 8, True)),
    "i16": (pa.int16(), _ints(pa.int16(), 16, True)),
    "i32": (pa.int32(), _ints(pa.int32(), 32, True)),
    "i64": (pa.int64(), _ints(pa.int64(), 64, True)),
    "u8": (pa.uint8(), _ints(pa.uint8(), 8, False)),
    "u16": (pa.uint16(), _ints(pa.uint16(), 16, False)),
    "u32": (pa.uint32(), _ints(pa.uint32(), 32, False)),
    "u64": (pa.uint64(), _ints(pa.uint64(), 64, False)),
    "f16": (pa.float16(), _f16),
    "f32": (pa.float32(), lambda idx: pa.array([float(np.float32(i - 2**20) / 4) for i in idx], pa.float32())),
    "f64": (pa.float64(), lambda idx: pa.array([(i - 10**6) / 3 for i in idx], pa.float64())),
    "str": (pa.string(), lambda idx: pa.array([f"v{i}-é✓" for i in idx], pa.string())),
    "lstr": (pa.large_string(), lambda idx: pa.array([f"L{i}" * (i % 5) for i in idx], pa.large_string())),
    "sview": (pa.string_view(), lambda idx: pa.array([f"view-{i:020d}" for i in idx], pa.string_view())),
    "bin": (pa.binary(), lambda idx: pa.array([b"\x00b" + i.to_bytes(8, "little") for i in idx], pa.binary())),
    "lbin": (pa.large_binary(), lambda idx: pa.array([i.to_bytes(6, "big") for i in idx], pa.large_binary())),
    "bview": (pa.binary_view(), lambda idx: pa.array([i.to_bytes(4, "big") * 5 for i in idx], pa.binary_view())),
    "fsb": (pa.binary(5), lambda idx: pa.array([i.to_bytes(5, "little") for i in idx], pa.binary(5))),
    "date32": (pa.date32(), _from_storage(pa.date32(), pa.int32(), lambda i: i * 3 - 700_000)),
    "date64": (pa.date64(), lambda idx: pa.array([i * 3 - 700_000 for i in idx], pa.int32()).cast(pa.date32())
               .cast(pa.date64())),
    "time32s": (pa.time32("s"), _from_storage(pa.time32("s"), pa.int32(), lambda i: i % 86_400)),
    "time32ms": (pa.time32("ms"), _from_storage(pa.time32("ms"), pa.int32(), lambda i: i * 997 % 86_400_000)),
    "time64us": (pa.time64("us"), _from_storage(pa.time64("us"), pa.int64(), lambda i: i * 7919 % 86_400_000_000)),
    "ts_s": (pa.timestamp("s"), _from_storage(pa.timestamp("s"), pa.int64(), lambda i: i * 7919 - 10**9)),
    "ts_ms_paris": (pa.timestamp("ms", "Europe/Paris"),
                    _from_storage(pa.timestamp("ms", "Europe/Paris"), pa.int64(), lambda i: i * 104_729 - 10**12)),
    "ts_us": (pa.timestamp("us"), _from_storage(pa.timestamp("us"), pa.int64(), lambda i: i * 1_299_709 - 10**15)),
    # multiples of 1000 ns, so that format 1.0 (which stores microseconds) keeps them exactly
    "ts_ns_utc": (pa.timestamp("ns", "UTC"),
                  _from_storage(pa.timestamp("ns", "UTC"), pa.int64(), lambda i: (i * 15_485_863 - 10**13) * 1000)),
    # with nanoseconds: not in the format 1.0 file
    "ts_ns": (pa.timestamp("ns"), _from_storage(pa.timestamp("ns"), pa.int64(), lambda i: i * 1_000 + i % 1000)),
    "dec32": (pa.decimal32(7, 3), _decimals(pa.decimal32(7, 3), lambda i: i * 37 % 10**7 - 5 * 10**6)),
    "dec64": (pa.decimal64(15, 5), _decimals(pa.decimal64(15, 5), lambda i: i * 7919 - 10**14)),
    "dec128": (pa.decimal128(20, 4), _decimals(pa.decimal128(20, 4), lambda i: i * 10**12 + 17 - 10**19)),
    "dec256": (pa.decimal256(50, 10), _decimals(pa.decimal256(50, 10), lambda i: i * 10**40 - 3)),
    "dict": (pa.dictionary(pa.int32(), pa.string()),
             lambda idx: pa.array([f"d{i}" for i in idx], pa.string()).dictionary_encode()),
}
# types narrow enough that a row group holds every value, or whose map of the index is not
# injective: no absent values for them
NARROW = {"i8", "u8", "f16", "time32s"}

ROWS = 1200
ROW_GROUP_ROWS = 300
NULL_EVERY = 7
FPP = 0.01

FORMATS: dict[str, dict[str, Any]] = {
    "v2": {"version": "2.6"},
    "v1": {"version": "1.0"},
    "ints-int96": {"version": "2.6", "store_decimal_as_integer": True, "use_deprecated_int96_timestamps": True},
    "plain": {"version": "2.6", "use_dictionary": False, "data_page_version": "2.0", "compression": "zstd"},
}


def py_values(column: pa.Array | pa.ChunkedArray) -> list:
    """The column's values as a user would pass them: Python values, except nanosecond
    temporals, which stay Arrow scalars (`as_py()` drops or, without pandas, refuses them)."""
    if pa.types.is_temporal(column.type) and getattr(column.type, "unit", "") == "ns":
        return [s if s.is_valid else None for s in column]
    return column.to_pylist()


def column_data(name: str, idx: list[int]) -> pa.Array:
    return TYPES[name][1](idx)


def build_table(rows: int = ROWS, seed: int = 0) -> pa.Table:
    idx = list(range(rows))
    random.Random(seed).shuffle(idx)
    with_nulls = pa.array([None if i % NULL_EVERY == 3 else i for i in range(rows)], pa.int64())
    cols = {}
    for name, (type_, _) in TYPES.items():
        arr = column_data(name, idx)
        assert arr.type == type_, (name, arr.type)
        if pa.types.is_string_view(type_) or pa.types.is_binary_view(type_):  # no take kernel for views
            wide = pa.large_string() if pa.types.is_string_view(type_) else pa.large_binary()
            cols[name] = arr.cast(wide).take(with_nulls).cast(type_)
        else:
            cols[name] = arr.take(with_nulls)
    return pa.table(cols)


def write(path: str, table: pa.Table, fmt: str, rows_per_group: int = ROW_GROUP_ROWS, fpp: float = FPP,
          columns: list[str] | None = None) -> None:
    names = columns if columns is not None else table.schema.names
    options = write_options({n: table.schema.field(n).type for n in names}, rows_per_group, fpp)
    pq.write_table(table, path, row_group_size=rows_per_group, bloom_filter_options=options, **FORMATS[fmt])


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, tuple[str, pa.Table, dict[str, ColumnBloom]]]:
    """A file per format: (path, the table written, its description)."""
    table = build_table()
    out = {}
    for fmt in FORMATS:
        path = str(tmp_path_factory.mktemp("bloom") / f"{fmt}.parquet")
        data = table.drop_columns(["ts_ns"]) if fmt == "v1" else table  # 1.0 stores microseconds
        write(path, data, fmt)
        out[fmt] = (path, data, describe(path, data.schema.names))
    return out


def with_inline(path: str, bloom: ColumnBloom) -> ColumnBloom:
    """The same description with every filter's bytes inline (whatever their size)."""
    with open(path, "rb") as f:
        parts = []
        for offset, length in bloom.filters:
            f.seek(offset)
            parts.append(f.read(length))
    return dataclasses.replace(bloom, inline=b"".join(parts))


def without_inline(bloom: ColumnBloom) -> ColumnBloom:
    return dataclasses.replace(bloom, inline=None)


def group_of(row: int) -> int:
    return row // ROW_GROUP_ROWS


# ---------------------------------------------------------------------------
# (a) real files
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_description_matches_pyarrows_metadata(files, fmt):
    path, table, described = files[fmt]
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == ROWS // ROW_GROUP_ROWS
    for name, bloom in described.items():
        i = table.schema.get_field_index(name)
        expected = [(meta.row_group(g).column(i).bloom_filter_offset, meta.row_group(g).column(i).bloom_filter_length)
                    for g in range(meta.num_row_groups)]
        assert list(bloom.filters) == expected, name
        assert bloom.physical_type == meta.row_group(0).column(i).physical_type, name
        assert bloom.inline is None  # 4 x 512-byte filters: more than INLINE_MAX_BYTES


def test_encodings_follow_the_files_schema(files):
    def enc(fmt: str, name: str) -> tuple:
        b = files[fmt][2][name]
        return b.physical_type, b.kind, b.bit_width, b.unit, b.type_length, b.scale, b.precision

    assert enc("v2", "u32") == ("INT32", "uint", 32, "", 0, 0, 0)
    assert enc("v1", "u32") == ("INT64", "int", 64, "", 0, 0, 0)        # format 1.0: uint32 as plain INT64
    assert enc("v2", "ts_s") == ("INT64", "timestamp", 0, "ms", 0, 0, 0)  # seconds are stored as ms
    assert enc("v2", "ts_ns_utc")[3] == "ns"
    assert enc("v1", "ts_ns_utc")[3] == "us"                             # format 1.0 has no ns
    assert enc("ints-int96", "ts_us")[:2] == ("INT96", "timestamp")
    assert enc("v2", "dec128") == ("FIXED_LEN_BYTE_ARRAY", "decimal", 0, "", 9, 4, 20)
    assert enc("ints-int96", "dec32")[:2] == ("INT32", "decimal")
    assert enc("ints-int96", "dec64")[:2] == ("INT64", "decimal")
    assert enc("v2", "f16") == ("FIXED_LEN_BYTE_ARRAY", "float", 16, "", 2, 0, 0)
    assert enc("v2", "time32s") == ("INT32", "time", 0, "ms", 0, 0, 0)
    assert enc("v2", "date64") == ("INT32", "date", 0, "", 0, 0, 0)
    assert enc("v2", "dict")[:2] == ("BYTE_ARRAY", "string")


def test_every_present_value_is_found_in_its_row_group(files):
    """Exhaustively, every format, every type, every non-null value: its row group is in
    the answer (file reads), and inline filters answer the same."""
    for fmt, (path, table, described) in files.items():
        for name, bloom in described.items():
            inline = with_inline(path, bloom)
            values = py_values(table.column(name))
            for row in range(0, ROWS, 5):
                v = values[row]
                if v is None:
                    continue
                got = row_groups_that_may_contain(path, bloom, [v])
                assert group_of(row) in got, (fmt, name, row, v)
                assert row_groups_that_may_contain(path, inline, [v]) == got, (fmt, name, row, v)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_never_a_false_negative(files, data):
    fmt = data.draw(st.sampled_from(sorted(files)), label="format")
    path, table, described = files[fmt]
    name = data.draw(st.sampled_from(sorted(described)), label="column")
    bloom = data.draw(st.sampled_from([described[name], with_inline(path, described[name])]), label="bloom")
    values = py_values(table.column(name))
    rows = data.draw(st.lists(st.integers(0, ROWS - 1), min_size=1, max_size=20), label="rows")
    extra_absent = data.draw(st.lists(st.integers(ROWS, 10 * ROWS), max_size=10), label="absent")
    query = [values[r] for r in rows] + py_values(column_data(name, extra_absent))
    random.Random(len(query)).shuffle(query)
    got = row_groups_that_may_contain(path, bloom, query)
    assert got == sorted(set(got))
    for r in rows:
        if values[r] is not None:
            assert group_of(r) in got
    assert file_may_contain(path, bloom, query) == bool(got)


# generated data: hypothesis picks the values, including the edges of each type
GENERATED: dict[str, tuple[pa.DataType, st.SearchStrategy]] = {
    "i32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "u64": (pa.uint64(), st.integers(0, 2**64 - 1)),
    "f32": (pa.float32(), st.floats(width=32, allow_nan=False)),
    "f64": (pa.float64(), st.floats(allow_nan=False)),
    "str": (pa.string(), st.text(max_size=20)),
    "bin": (pa.binary(), st.binary(max_size=20)),
    "date": (pa.date32(), st.dates()),
    "ts_tz": (pa.timestamp("us", "America/New_York"),
              st.datetimes(min_value=dt.datetime(1700, 1, 1), max_value=dt.datetime(2250, 1, 1),
                           timezones=st.just(dt.timezone.utc))),
    "dec": (pa.decimal128(12, 3), st.decimals(min_value=-(10**9) + 1, max_value=10**9 - 1, places=3,
                                              allow_nan=False, allow_infinity=False)),
}


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(GENERATED)), data=st.data(), groups=st.integers(1, 4))
def test_never_a_false_negative_on_generated_values(tmp_path_factory, name, data, groups):
    type_, values = GENERATED[name]
    rows = data.draw(st.lists(st.one_of(st.none(), values), min_size=1, max_size=60))
    table = pa.table({"c": pa.array(rows, type_)})
    per_group = max(1, -(-len(rows) // groups))
    path = str(tmp_path_factory.mktemp("gen") / "g.parquet")
    write(path, table, "v2", rows_per_group=per_group)
    bloom = describe(path, ["c"])["c"]
    stored = table.column("c").to_pylist()
    for row, v in enumerate(stored):
        if v is not None:
            assert row // per_group in row_groups_that_may_contain(path, bloom, [v]), (row, v)
            assert row // per_group in row_groups_that_may_contain(path, without_inline(bloom), [v]), (row, v)


def test_zeros_of_either_sign_find_each_other(tmp_path):
    path = str(tmp_path / "z.parquet")
    table = pa.table({"f32": pa.array([-0.0, 1.0], pa.float32()), "f64": pa.array([1.5, 0.0], pa.float64()),
                      "f16": pa.array(np.array([-0.0, 2.0], dtype=np.float16))})
    write(path, table, "v2", rows_per_group=1)
    d = describe(path, table.schema.names)
    for name, row in (("f32", 0), ("f64", 1), ("f16", 0)):
        assert row_groups_that_may_contain(path, d[name], [0.0]) == [row]
        assert row_groups_that_may_contain(path, d[name], [-0.0]) == [row]
        assert row_groups_that_may_contain(path, d[name], [0]) == [row]  # an int equal to the float
    assert row_groups_that_may_contain(path, d["f64"], [math.nan]) == [0, 1]  # NaN: may be anywhere
    assert file_may_contain(path, d["f64"], [math.nan])


def test_values_the_column_cannot_hold_are_nowhere(files):
    path, _, d = files["v2"]
    cases = {
        "i32": [2**31, -(2**31) - 1, 10**30],
        "i8": [128, -129],
        "u32": [-1, 2**32],
        "u64": [-1, 2**64],
        "f32": [0.1, 1e300, 2**200],          # not exactly a float32 / beyond float32
        "f16": [70000.0, 0.1],
        "fsb": [b"1234", b"123456", "abc"],   # not 5 bytes
        "dec128": [Decimal("1.00001"), Decimal("1E+30"), Decimal("NaN"), Decimal("Infinity"),
                   Decimal("1E-400000"), Decimal("9" * 17)],
        "dec32": [Decimal("12345.678")],      # 8 digits > precision 7
        "ts_s": [dt.datetime(2020, 1, 1, 0, 0, 0, 1)],  # stored as ms: a microsecond cannot be there
        "time32ms": [dt.time(1, 2, 3, 4)],
        "date32": [dt.datetime(2020, 1, 1, 12)],
        "str": ["\ud800"],                    # a lone surrogate is never UTF-8 data
    }
    for name, values in cases.items():
        assert row_groups_that_may_contain(path, d[name], values) == [], name
        assert not file_may_contain(path, d[name], values), name
    assert row_groups_that_may_contain(path, d["i64"], []) == []
    assert row_groups_that_may_contain(path, d["i64"], [None]) == []  # = NULL matches no row


def test_timestamps_by_instant_and_nanoseconds(files):
    path, table, d = files["v2"]
    v = next(x for x in table.column("ts_ms_paris").to_pylist() if x is not None)
    row = table.column("ts_ms_paris").to_pylist().index(v)
    as_utc = v.astimezone(dt.timezone.utc)
    assert group_of(row) in row_groups_that_may_contain(path, d["ts_ms_paris"], [as_utc])
    ns = py_values(table.column("ts_ns"))
    row = next(i for i, x in enumerate(ns) if x is not None and x.value % 1000)
    assert group_of(row) in row_groups_that_may_contain(path, d["ts_ns"], [ns[row]])


def test_wrong_python_types_are_refused(files):
    path, _, d = files["v2"]
    for name, bad in (("i64", "1"), ("i64", 1.0), ("i64", True), ("f64", "x"), ("str", 5), ("date32", 5),
                      ("ts_us", dt.date(2020, 1, 1)), ("dec128", 1.5), ("time64us", 5)):
        with pytest.raises(InvalidArgumentError, match=name):
            row_groups_that_may_contain(path, d[name], [bad])
    with pytest.raises(InvalidArgumentError, match="sequence"):
        row_groups_that_may_contain(path, d["str"], "abc")
    with pytest.raises(InvalidArgumentError, match="ColumnBloom"):
        row_groups_that_may_contain(path, {"column": "x"}, [1])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["i64", "str"])
def test_false_positive_rate_is_near_the_configured_one(tmp_path, name):
    """Filters sized exactly (ndv such that pyarrow's optimal size is a power of two, so no
    rounding up): the measured rate over 20 000 absent values x 4 row groups is within 2x of
    `fpp`, and close to the split-block filter's own prediction."""
    fpp = 0.01
    bits = 2**17
    ndv = int(bits * -math.log(1 - fpp ** (1 / 8)) / 8)  # pyarrow: bits = -8 ndv / ln(1 - fpp^(1/8))
    groups = 4
    table = pa.table({name: column_data(name, list(range(ndv * groups)))})
    path = str(tmp_path / "fpp.parquet")
    write(path, table, "v2", rows_per_group=ndv, fpp=fpp)
    bloom = describe(path, [name])[name]
    lengths = {length for _, length in bloom.filters}
    assert len(bloom.filters) == groups and len(lengths) == 1
    assert 0 < lengths.pop() - bits // 8 < 32  # a 16 KiB bitset and its header
    absent = py_values(column_data(name, list(range(ndv * groups, ndv * groups + 20_000))))
    hits = sum(len(row_groups_that_may_contain(path, bloom, [v])) for v in absent)
    rate = hits / (len(absent) * groups)
    predicted = sbbf_fpp(ndv, bits // 256)
    assert fpp / 2 <= rate <= 2 * fpp, rate
    assert predicted * 0.8 <= rate <= predicted * 1.25, (rate, predicted)


@pytest.fixture(scope="module")
def duckdb_con():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    found = con.execute("select count(*) from duckdb_functions() where function_name = 'parquet_bloom_probe'"
                        ).fetchone()
    if not found or not found[0]:
        pytest.skip(f"DuckDB {duckdb.__version__} has no parquet_bloom_probe")
    return con


# DuckDB (2.0) does not prune with decimals stored as FIXED_LEN_BYTE_ARRAY (it agrees exactly on
# INT32/INT64 ones) nor with INT96 timestamps; it misreads float16 and decimals of precision > 38,
# reporting values the file holds as excluded (the no-false-negative tests check ours for those)
DUCKDB_WRONG = {"f16", "dec256"}


@pytest.mark.parametrize("fmt", ["v2", "v1", "ints-int96"])
def test_duckdb_agrees(files, duckdb_con, fmt):
    path, table, d = files[fmt]
    rng = random.Random(7)
    compared = 0
    for name, bloom in d.items():
        if name in DUCKDB_WRONG:
            continue
        present = [v for v in py_values(table.column(name)) if v is not None]
        values = rng.sample(present, 25)
        if name not in NARROW:
            values += py_values(column_data(name, rng.sample(range(ROWS, 100 * ROWS), 25)))
        for v in values:
            value_sql, param = "?", v
            if isinstance(v, pa.TimestampScalar):  # DuckDB's Python parameters drop nanoseconds
                if v.type.tz is None:
                    value_sql, param = "CAST(? AS TIMESTAMP_NS)", v.cast(pa.string()).as_py()
                else:  # these hold whole microseconds; a lossy cast would raise
                    param = v.cast(pa.timestamp("us", v.type.tz)).as_py()
            rows = duckdb_con.execute(f"select row_group_id, bloom_filter_excludes from parquet_bloom_probe(?, ?, "
                                      f"{value_sql})", [path, name, param]).fetchall()
            theirs = sorted(g for g, excluded in rows if not excluded)
            ours = row_groups_that_may_contain(path, bloom, [v])
            if bloom.physical_type == "INT96" or (bloom.kind == "decimal"
                                                  and bloom.physical_type == "FIXED_LEN_BYTE_ARRAY"):
                assert set(ours) <= set(theirs), (name, v, ours, theirs)
            else:
                assert ours == theirs, (name, v, ours, theirs)
            compared += 1
    assert compared > 500


def test_inline_filters_when_small(tmp_path):
    table = build_table(rows=80)
    path = str(tmp_path / "small.parquet")
    write(path, table, "v2", rows_per_group=20)
    d = describe(path, ["i64", "str", "dec128"])
    for name, bloom in d.items():
        assert bloom.inline is not None and len(bloom.inline) == sum(n for _, n in bloom.filters) <= INLINE_MAX_BYTES
        filed = without_inline(bloom)
        values = py_values(table.column(name)) + py_values(column_data(name, list(range(80, 400))))
        for v in values:
            assert row_groups_that_may_contain(path, bloom, [v]) == row_groups_that_may_contain(path, filed, [v])
        os.rename(path, path + ".gone")  # inline filters need no I/O at all
        try:
            row_groups_that_may_contain(path, bloom, values)
            with pytest.raises(CorruptTableError):
                row_groups_that_may_contain(path, filed, values)
        finally:
            os.rename(path + ".gone", path)


def test_json_round_trip(files):
    path, _, d = files["v2"]
    small = with_inline(path, d["i32"])
    for bloom in (*d.values(), small):
        encoded = json.loads(json.dumps(bloom.to_json()))
        assert ColumnBloom.from_json(encoded) == bloom
    for bad in ({}, {**small.to_json(), "inline": "!!"}, {**small.to_json(), "inline": "AAAA"},
                {**small.to_json(), "filters": [[1, 2, 3]]}, {**small.to_json(), "kind": "weird"},
                {**small.to_json(), "filters": [[-1, 5]]}, {**small.to_json(), "scale": "1"}, []):
        with pytest.raises(InvalidArgumentError):
            ColumnBloom.from_json(bad)  # type: ignore[arg-type]


def test_columns_without_filters_may_contain_anything(tmp_path):
    table = build_table(rows=100)
    path = str(tmp_path / "some.parquet")
    write(path, table, "v2", rows_per_group=25, columns=["i64"])
    d = describe(path, ["i64", "str"])
    assert d["str"].filters == ((0, 0),) * 4 and d["str"].inline == b""
    assert row_groups_that_may_contain(path, d["str"], ["nothing like it"]) == [0, 1, 2, 3]
    assert file_may_contain(path, d["str"], ["x"])
    assert len(row_groups_that_may_contain(path, d["i64"], py_values(column_data("i64", [5000])))) < 4


def test_describe_refuses_what_it_cannot_probe(tmp_path):
    path = str(tmp_path / "t.parquet")
    table = pa.table({"b": [True, False], "l": [[1], [2]], "s": pa.array([{"x": 1}, {"x": 2}]), "i": [1, 2],
                      "d": pa.array([1, 2], pa.duration("s"))})
    pq.write_table(table, path)
    with pytest.raises(UnsupportedTypeError, match="'b'.*BOOLEAN"):
        describe(path, ["b"])
    with pytest.raises(UnsupportedTypeError, match="nested"):
        describe(path, ["l"])
    with pytest.raises(UnsupportedTypeError, match="nested"):
        describe(path, ["s"])
    with pytest.raises(SchemaMismatchError, match="'nope'"):
        describe(path, ["nope"])
    with pytest.raises(InvalidArgumentError):
        describe(path, "i")
    assert describe(path, []) == {}
    assert describe(path, ["i", "i"])["i"].kind == "int"


# ---------------------------------------------------------------------------
# Unsupported types and write options
# ---------------------------------------------------------------------------

SUPPORTED = [t for t, _ in TYPES.values()] + [pa.dictionary(pa.int8(), pa.binary(3)), pa.time32("ms")]
UNSUPPORTED = [pa.bool_(), pa.duration("s"), pa.null(), pa.list_(pa.int32()), pa.struct([("a", pa.int32())]),
               pa.map_(pa.string(), pa.int32()), pa.time64("ns"), pa.month_day_nano_interval(), pa.uuid(),
               pa.dictionary(pa.int8(), pa.bool_()), pa.large_list(pa.string())]


def test_supported_and_unsupported_types():
    for t in SUPPORTED:
        assert bloom_supported(t), t
        check_bloom_column("c", t)
    for t in UNSUPPORTED:
        assert not bloom_supported(t), t
        with pytest.raises(UnsupportedTypeError, match=r"Bloom filter column 'c' has type"):
            check_bloom_column("c", t)
        with pytest.raises(UnsupportedTypeError):
            write_options({"c": t}, 100, 0.01)
    with pytest.raises(UnsupportedTypeError, match="time64"):
        check_bloom_column("c", pa.time64("ns"))
    with pytest.raises(UnsupportedTypeError, match="boolean"):
        check_bloom_column("c", pa.bool_())


def test_write_options():
    assert write_options({"a": pa.int64(), "b": pa.string()}, 8192, 0.05) == {
        "a": {"ndv": 8192, "fpp": 0.05}, "b": {"ndv": 8192, "fpp": 0.05}}
    assert write_options({}, 1, 0.5) == {}
    for rows, fpp in ((0, 0.01), (-1, 0.01), (1.5, 0.01), (True, 0.01), (10, 0.0), (10, 1.0), (10, "0.1"),
                      (10, math.nan)):
        with pytest.raises(InvalidArgumentError):
            write_options({"a": pa.int64()}, rows, fpp)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        write_options([("a", pa.int64())], 10, 0.1)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# might_contain
# ---------------------------------------------------------------------------

def test_might_contain_matches_the_reference():
    rng = np.random.default_rng(3)
    for blocks in (1, 2, 3, 7, 64):
        bitset = bytearray(32 * blocks)
        inserted = rng.integers(0, 2**64, size=blocks * 10, dtype=np.uint64)
        for h in inserted:
            ref_insert(bitset, int(h))
        probes = np.concatenate([inserted, rng.integers(0, 2**64, size=2000, dtype=np.uint64)])
        got = _bloom.might_contain(bytes(bitset), probes)
        assert got.dtype == np.bool_ and got.shape == probes.shape
        assert got[:len(inserted)].all()
        assert got.tolist() == [ref_check(bytes(bitset), int(h)) for h in probes]
        for form in (bitset, memoryview(bitset), np.frombuffer(bytes(bitset), dtype=np.uint8)):
            assert (_bloom.might_contain(form, probes) == got).all()
        strided = np.repeat(probes, 2)[::2]  # not contiguous: copied, same answer
        assert (_bloom.might_contain(bytes(bitset), strided) == got).all()


def test_might_contain_checks_its_arguments():
    ok = bytes(64)
    hashes = np.array([1, 2], dtype=np.uint64)
    for n in (0, 1, 31, 33, 63):
        with pytest.raises(ValueError, match="multiple of 32"):
            _bloom.might_contain(bytes(n), hashes)
    for bad in ([1, 2], np.array([1, 2], dtype=np.int64), np.zeros((2, 2), dtype=np.uint64), None):
        with pytest.raises(TypeError):
            _bloom.might_contain(ok, bad)
    with pytest.raises((TypeError, ValueError)):
        _bloom.might_contain(np.zeros(16, dtype=np.uint32), hashes)  # not bytes
    for bad_bitset in ("x" * 32, None):
        with pytest.raises(TypeError):
            _bloom.might_contain(bad_bitset, hashes)
    assert _bloom.might_contain(ok, np.array([], dtype=np.uint64)).tolist() == []
    assert _bloom.might_contain(b"\xff" * 32, hashes).tolist() == [True, True]
    assert _bloom.might_contain(ok, hashes).tolist() == [False, False]


# ---------------------------------------------------------------------------
# (b) synthetic files from a Thrift compact writer
# ---------------------------------------------------------------------------

STOP, TRUE, FALSE, I8, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def zz(n: int) -> bytes:
    return varint((n << 1) ^ (n >> 63))


def struct_(*fields: tuple[int, int, bytes]) -> bytes:
    """Fields (id, type, payload) in the order given; a bool field's type is TRUE/FALSE."""
    out, last = bytearray(), 0
    for fid, ctype, payload in fields:
        if 0 < fid - last <= 15:
            out.append(((fid - last) << 4) | ctype)
        else:
            out.append(ctype)
            out += zz(fid)
        out += payload
        last = fid
    return bytes(out + b"\x00")


def list_(etype: int, items: list[bytes]) -> bytes:
    head = bytes([(len(items) << 4) | etype]) if len(items) < 15 else bytes([0xF0 | etype]) + varint(len(items))
    return head + b"".join(items)


def binary(b: bytes) -> bytes:
    return varint(len(b)) + b


EMPTY = b"\x00"


def every_type_payloads() -> list[tuple[int, bytes]]:
    """One value of every Thrift type, for unknown fields the reader must skip."""
    nested = EMPTY
    for _ in range(5):
        nested = struct_((1, STRUCT, nested), (2, I32, zz(-5)))
    return [
        (TRUE, b""), (FALSE, b""), (I8, b"\xff"), (I16, zz(-300)), (I32, zz(2**31 - 1)), (I64, zz(-(2**63))),
        (DOUBLE, struct.pack("<d", 1.5)), (BINARY, binary(b"junk" * 10)),
        (LIST, list_(TRUE, [b"\x01", b"\x02", b"\x00"])), (LIST, list_(FALSE, [b"\x01"])),
        (SET, list_(DOUBLE, [struct.pack("<d", x) for x in range(20)])),  # long form size
        (MAP, varint(2) + bytes([(BINARY << 4) | TRUE]) + binary(b"k") + b"\x01" + binary(b"l") + b"\x02"),
        (MAP, varint(0)), (STRUCT, nested), (LIST, list_(STRUCT, [EMPTY, nested])),
        (LIST, list_(LIST, [list_(I32, [zz(1)]), list_(I32, [])])),
    ]


def unknown_fields(start: int) -> list[tuple[int, int, bytes]]:
    return [(start + i, ctype, payload) for i, (ctype, payload) in enumerate(every_type_payloads())]


def filter_bytes(hashes: list[int], num_bytes: int = 64, algorithm: int = 1, extra: bool = False) -> bytes:
    bitset = bytearray(num_bytes)
    for h in hashes:
        ref_insert(bitset, h)
    union = struct_((algorithm, STRUCT, EMPTY))
    fields = [(1, I32, zz(num_bytes)), (2, STRUCT, union), (3, STRUCT, struct_((1, STRUCT, EMPTY))),
              (4, STRUCT, struct_((1, STRUCT, EMPTY)))]
    if extra:
        fields += unknown_fields(20)
    return struct_(*fields) + bytes(bitset)


def leaf(name: str, ptype: int, *extra: tuple[int, int, bytes], with_unknown: bool = True) -> bytes:
    fields = [(1, I32, zz(ptype)), (3, I32, zz(1)), (4, BINARY, binary(name.encode())), *extra]
    if with_unknown:
        fields.append((40, LIST, list_(TRUE, [b"\x01"])))
    return struct_(*sorted(fields, key=lambda f: f[0]))


def synthetic_file(path: str, leaves: list[bytes], names: list[str], ptypes: list[int],
                   filters: list[list[bytes | None]], with_length: bool = True, with_unknown: bool = True,
                   root_children: int | None = None, file_path: str | None = None,
                   bloom_offset_delta: int = 0) -> None:
    """A Parquet-shaped file: magic, the filters (no data pages: the reader never needs them),
    a FileMetaData with `filters[row_group][column]` (None: no filter), length and magic."""
    body = bytearray(b"PAR1")
    row_groups = []
    for group in filters:
        chunks = []
        for col, blob in enumerate(group):
            meta = [(1, I32, zz(ptypes[col])), (2, LIST, list_(I32, [zz(0)])),
                    (3, LIST, list_(BINARY, [binary(names[col].encode())])), (4, I32, zz(0)), (5, I64, zz(10)),
                    (6, I64, zz(100)), (7, I64, zz(100)), (9, I64, zz(4))]
            if blob is not None:
                meta.append((14, I64, zz(len(body) + bloom_offset_delta)))
                if with_length:
                    meta.append((15, I32, zz(len(blob))))
                body += blob
            if with_unknown:
                meta += unknown_fields(30)
            chunk = [(2, I64, zz(4)), (3, STRUCT, struct_(*meta))]
            if file_path is not None:
                chunk.insert(0, (1, BINARY, binary(file_path.encode())))
            chunks.append(struct_(*chunk))
        row_groups.append(struct_((1, LIST, list_(STRUCT, chunks)), (2, I64, zz(1000)), (3, I64, zz(10))))
    children = len(leaves) if root_children is None else root_children
    root = struct_((4, BINARY, binary(b"schema")), (5, I32, zz(children)))
    meta_fields = [(1, I32, zz(2)), (2, LIST, list_(STRUCT, [root, *leaves])), (3, I64, zz(10 * len(filters))),
                   (4, LIST, list_(STRUCT, row_groups)), (6, BINARY, binary(b"synthetic"))]
    if with_unknown:
        meta_fields += unknown_fields(100)  # ids past 15 apart: the long field-header form
    footer = struct_(*meta_fields)
    body += footer + len(footer).to_bytes(4, "little") + b"PAR1"
    with open(path, "wb") as f:
        f.write(body)


def h64(b: bytes) -> int:
    return xxhash.xxh64_intdigest(b)


@pytest.mark.parametrize("with_length", [True, False])
@pytest.mark.parametrize("with_unknown", [True, False])
def test_synthetic_footer_every_thrift_type_and_missing_lengths(tmp_path, with_length, with_unknown):
    path = str(tmp_path / "s.parquet")
    leaves = [leaf("a", 1, (6, I32, zz(12)), with_unknown=with_unknown),                    # INT32, UINT_16
              leaf("b", 2, (6, I32, zz(10)), with_unknown=with_unknown),                    # INT64, TIMESTAMP_MICROS
              leaf("c", 6, (10, STRUCT, struct_((1, STRUCT, EMPTY))), with_unknown=with_unknown)]  # STRING
    ts = dt.datetime(2021, 3, 4, 5, 6, 7, 8)
    micros = (ts - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    filters = [
        [filter_bytes([h64(struct.pack("<i", 7))], extra=with_unknown),
         filter_bytes([h64(struct.pack("<q", micros))]), filter_bytes([h64(b"x")], num_bytes=32)],
        [filter_bytes([h64(struct.pack("<i", 65535))]), None, filter_bytes([h64(b"y")], algorithm=2)],
    ]
    synthetic_file(path, leaves, ["a", "b", "c"], [1, 2, 6], filters, with_length=with_length,
                   with_unknown=with_unknown)
    d = describe(path, ["a", "b", "c"])
    assert (d["a"].kind, d["a"].bit_width, d["b"].kind, d["b"].unit, d["c"].kind) == ("uint", 16, "timestamp", "us",
                                                                                      "string")
    assert d["b"].filters[1] == (0, 0)
    for name, bloom in d.items():
        for b in (bloom, without_inline(bloom)):
            if name == "a":
                assert row_groups_that_may_contain(path, b, [7]) == [0]
                assert row_groups_that_may_contain(path, b, [65535, 7]) == [0, 1]
                assert row_groups_that_may_contain(path, b, [65536, -1]) == []
            elif name == "b":
                assert row_groups_that_may_contain(path, b, [ts]) == [0, 1]
                assert row_groups_that_may_contain(path, b, [ts + dt.timedelta(days=1)]) == [1]
            else:  # row group 1 has a filter of an unknown algorithm: it may contain anything
                assert row_groups_that_may_contain(path, b, ["x"]) == [0, 1]
                assert row_groups_that_may_contain(path, b, ["zzz"]) == [1]


def test_synthetic_column_in_another_file_has_no_usable_filter(tmp_path):
    path = str(tmp_path / "s.parquet")
    synthetic_file(path, [leaf("a", 2)], ["a"], [2], [[filter_bytes([1])]], file_path="other.parquet")
    assert describe(path, ["a"])["a"].filters == ((0, 0),)


def test_synthetic_storage_we_cannot_probe_is_refused(tmp_path):
    path = str(tmp_path / "s.parquet")
    leaves = [leaf("dec_bytes", 6, (6, I32, zz(5)), (7, I32, zz(2)), (8, I32, zz(10))),  # BYTE_ARRAY decimal
              leaf("odd", 1, (6, I32, zz(99))),                                          # unknown converted type
              leaf("interval", 7, (2, I32, zz(12)), (6, I32, zz(21))),                   # FIXED[12] INTERVAL
              leaf("twice", 2), leaf("twice", 2), leaf("old_dec", 7, (2, I32, zz(4)), (6, I32, zz(5)),
                                                       (7, I32, zz(2)), (8, I32, zz(9)))]
    synthetic_file(path, leaves, ["dec_bytes", "odd", "interval", "twice", "twice", "old_dec"], [6, 1, 7, 2, 2, 7],
                   [[None] * 6])
    for name in ("dec_bytes", "odd", "interval"):
        with pytest.raises(UnsupportedTypeError, match=name):
            describe(path, [name])
    with pytest.raises(SchemaMismatchError, match="2 columns named 'twice'"):
        describe(path, ["twice"])
    old = describe(path, ["old_dec"])["old_dec"]  # DECIMAL from the converted type alone
    assert (old.kind, old.scale, old.precision, old.type_length) == ("decimal", 2, 9, 4)


def assert_corrupt(path: str, columns: list[str] | None = None) -> CorruptTableError:
    with pytest.raises(CorruptTableError) as info:
        for bloom in describe(path, columns or ["a"]).values():
            row_groups_that_may_contain(path, without_inline(bloom), [1])
    assert info.value.path == path and path in str(info.value)
    return info.value


def test_synthetic_malformed_footers(tmp_path):
    path = str(tmp_path / "m.parquet")

    def raw(footer: bytes, prefix: bytes = b"PAR1") -> None:
        with open(path, "wb") as f:
            f.write(prefix + footer + len(footer).to_bytes(4, "little") + b"PAR1")

    deep = EMPTY
    for _ in range(200):
        deep = struct_((1, STRUCT, deep))
    raw(struct_((50, STRUCT, deep)))
    assert "deeper" in str(assert_corrupt(path))
    raw(struct_((50, LIST, bytes([0xF0 | I32]) + varint(10**12))))  # a list longer than the footer
    assert "longer than the bytes left" in str(assert_corrupt(path))
    raw(struct_((50, MAP, varint(10**12) + bytes([0x55]))))
    assert_corrupt(path)
    raw(b"\x16" + b"\xff" * 12)  # an 11+ byte varint
    assert "varint" in str(assert_corrupt(path))
    raw(struct_((50, 13, b"")))  # an unknown Thrift type
    assert_corrupt(path)
    raw(struct_((1, I32, zz(1))))  # no schema, no row groups
    assert "no schema" in str(assert_corrupt(path))
    raw(struct_((2, I32, zz(1)), (4, LIST, list_(STRUCT, []))))  # schema of the wrong type
    assert_corrupt(path)
    raw(struct_((2, LIST, list_(STRUCT, [struct_((5, I32, zz(1)))])), (4, LIST, list_(STRUCT, []))))  # no name
    assert_corrupt(path)
    raw(struct_((1, BINARY, varint(1000) + b"ab")))  # a string past the end
    assert_corrupt(path)
    raw(b"\x15")  # the footer ends inside a field
    assert_corrupt(path)
    # a schema claiming more children than it has
    synthetic_file(path, [leaf("a", 2)], ["a"], [2], [[None]], root_children=3)
    assert "children" in str(assert_corrupt(path))
    # a row group with the wrong number of chunks
    synthetic_file(path, [leaf("a", 2), leaf("b", 2)], ["a", "b"], [2, 2], [[None]])
    assert "column chunks" in str(assert_corrupt(path))
    # a chunk whose type disagrees with the schema
    synthetic_file(path, [leaf("a", 2)], ["a"], [1], [[filter_bytes([1])]])
    assert_corrupt(path)
    # a filter header that is garbage, or whose bitset is not whole blocks, or runs past its length
    for blob in (b"\x99" * 80, filter_bytes([1], num_bytes=40), filter_bytes([1])[:-20]):
        synthetic_file(path, [leaf("a", 2)], ["a"], [2], [[blob]], with_length=True)
        assert "Bloom filter" in str(assert_corrupt(path))
    # a filter outside the data before the footer
    for delta in (10**9, -3, 40):
        synthetic_file(path, [leaf("a", 2)], ["a"], [2], [[filter_bytes([1])]], bloom_offset_delta=delta)
        assert "outside" in str(assert_corrupt(path))


def test_truncated_garbage_and_missing_files(files, tmp_path):
    src, _, _ = files["v2"]
    data = open(src, "rb").read()
    path = str(tmp_path / "t.parquet")
    footer_len = int.from_bytes(data[-8:-4], "little")
    cuts = [0, 1, 4, 11, 12, len(data) // 2, len(data) - footer_len - 8, len(data) - 9, len(data) - 4, len(data) - 1]
    for cut in cuts:
        with open(path, "wb") as f:
            f.write(data[:cut])
        assert_corrupt(path, ["i64"])
    rng = random.Random(1)
    for _ in range(20):  # the footer replaced by garbage of the same length
        garbage = bytes(rng.randrange(256) for _ in range(footer_len))
        with open(path, "wb") as f:
            f.write(data[:-footer_len - 8] + garbage + data[-8:])
        assert_corrupt(path, ["i64"])
    with open(path, "wb") as f:  # an encrypted footer
        f.write(data[:-4] + b"PARE")
    assert "encrypted" in str(assert_corrupt(path, ["i64"]))
    with open(path, "wb") as f:  # a footer length beyond the file
        f.write(data[:-8] + (len(data) * 2).to_bytes(4, "little") + b"PAR1")
    assert_corrupt(path, ["i64"])
    assert_corrupt(str(tmp_path / "missing.parquet"), ["i64"])
    # a filter overwritten after describe: found when probing
    bloom = describe(src, ["i64"])["i64"]
    offset = bloom.filters[2][0]
    with open(path, "wb") as f:
        f.write(data[:offset] + b"\xfe" * 16 + data[offset + 16:])
    with pytest.raises(CorruptTableError, match="row group 2"):
        row_groups_that_may_contain(path, bloom, [12345])


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_footers_never_crash(files, tmp_path_factory, data):
    """Random byte changes in a real footer: describe and the probes either work or raise a
    mergetree error (CorruptTableError for structure; the schema errors when a name or type
    byte changed), quickly."""
    src, table, _ = files["plain"]
    blob = bytearray(open(src, "rb").read())
    footer_len = int.from_bytes(blob[-8:-4], "little")
    start = len(blob) - 8 - footer_len
    for _ in range(data.draw(st.integers(1, 8), label="changes")):
        at = data.draw(st.integers(start, len(blob) - 9), label="at")
        blob[at] = data.draw(st.integers(0, 255), label="byte")
    if data.draw(st.booleans(), label="truncate footer"):
        cut = data.draw(st.integers(start, len(blob) - 9), label="cut")
        blob = blob[:cut] + (cut - start).to_bytes(4, "little") + b"PAR1"
    path = str(tmp_path_factory.mktemp("mut") / "m.parquet")
    with open(path, "wb") as f:
        f.write(blob)
    columns = data.draw(st.lists(st.sampled_from(table.schema.names), min_size=1, max_size=4, unique=True))
    try:
        described = describe(path, columns)
    except CorruptTableError as exc:
        assert exc.path == path
        return
    except (SchemaMismatchError, UnsupportedTypeError):
        return
    for name, bloom in described.items():
        values = [v for v in py_values(table.column(name))[:5] if v is not None] if name in table.schema.names else []
        try:
            row_groups_that_may_contain(path, bloom, values)
        except CorruptTableError as exc:
            assert exc.path == path
        except InvalidArgumentError:
            pass  # the mutated schema changed the column's type: our values no longer fit
        except MergeTreeError as exc:  # pragma: no cover - any other error is a bug
            raise AssertionError(exc) from exc


def test_the_hash_is_xxh64_of_the_plain_encoding(files):
    """The first filter of i64 holds exactly the values of its row group's hashes: check one
    value through the reference, independent of the module under test."""
    path, table, d = files["v2"]
    bloom = d["i64"]
    offset, length = bloom.filters[0]
    with open(path, "rb") as f:
        f.seek(offset)
        blob = f.read(length)
    bitset = blob[length - 512:]  # ndv 300 at fpp 1%: 2 904 bits, rounded up to 4 096 (512 bytes)
    for v in itertools.islice((x for x in table.column("i64").to_pylist()[:ROW_GROUP_ROWS] if x is not None), 50):
        assert ref_check(bitset, h64(struct.pack("<q", v)))
