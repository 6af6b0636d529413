"""Clustering keys: `mergetree._curves` (Z-order and Hilbert kernels) and
`mergetree.table.levers.curves` (ranks from sampled boundaries, curve keys, the row order).

(a) The kernels against slow pure-Python references written here: bit interleaving; for
    Hilbert, the classic 2-D rotation algorithm (xy2d), Skilling's AxesToTranspose written
    plainly for 2..8 dimensions, his TransposeToAxes (the inverse) for a round trip, and the
    curve's defining properties on full small grids (a bijection, unit steps, nested cubes).
(b) Ranks: monotone in the value order for every supported type, exact for narrow columns,
    bounded by max_ranks for skewed (Zipf) ones, 0 for nulls.
(c) Every input error raises cleanly, in the kernels and in the Python layer.
(d) Clustering quality: sampled ranks cluster a Zipf-skewed and a narrow column far better
    than raw value bits.
"""
from __future__ import annotations

import datetime
import itertools
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import InvalidArgumentError, MalformedArrowError, UnsupportedTypeError
from mergetree._curves import hilbert_keys, zorder_keys
from mergetree.table.levers.curves import (
    MAX_COLUMNS,
    MAX_RANKS,
    STRATEGIES,
    STRING_PREFIX,
    check_clusterable,
    cluster_order,
    curve_keys,
    rank_boundaries,
    rank_ids,
)

# ---------------------------------------------------------------------------
# References, one point at a time, on Python ints
# ---------------------------------------------------------------------------


def ref_interleave(point: list[int], bits: int) -> int:
    """Z-order: for each bit from the top, one bit of every coordinate, coordinate 0 first."""
    key = 0
    for b in reversed(range(bits)):
        for x in point:
            key = (key << 1) | ((x >> b) & 1)
    return key


def ref_xy2d(side: int, x: int, y: int) -> int:
    """The classic 2-D Hilbert index (rotate and flip each quadrant), x the major axis."""
    d = 0
    s = side // 2
    while s > 0:
        rx = 1 if x & s else 0
        ry = 1 if y & s else 0
        d += s * s * ((3 * rx) ^ ry)
        if ry == 0:
            if rx == 1:
                x, y = side - 1 - x, side - 1 - y
            x, y = y, x
        s //= 2
    return d


def ref_skilling(point: list[int], bits: int) -> int:
    """Skilling (2004), AxesToTranspose, as printed, then the transposed index interleaved."""
    x = list(point)
    n = len(x)
    m = 1 << (bits - 1)
    q = m
    while q > 1:  # inverse undo
        p = q - 1
        for i in range(n):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = 0
    q = m
    while q > 1:
        if x[n - 1] & q:
            t ^= q - 1
        q >>= 1
    return ref_interleave([v ^ t for v in x], bits)


def ref_hilbert_point(key: int, n: int, bits: int) -> list[int]:
    """The inverse: de-interleave the index, then Skilling's TransposeToAxes."""
    x = [0] * n
    pos = n * bits - 1
    for b in reversed(range(bits)):
        for i in range(n):
            x[i] |= ((key >> pos) & 1) << b
            pos -= 1
    big = 2 << (bits - 1)
    t = x[n - 1] >> 1  # Gray decode by H ^ (H/2)
    for i in range(n - 1, 0, -1):
        x[i] ^= x[i - 1]
    x[0] ^= t
    q = 2
    while q != big:  # undo excess work
        p = q - 1
        for i in range(n - 1, -1, -1):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q <<= 1
    return x


def grid(n: int, bits: int) -> np.ndarray:
    return np.array(list(itertools.product(range(1 << bits), repeat=n)), dtype=np.uint32)


# ---------------------------------------------------------------------------
# (a) Kernels
# ---------------------------------------------------------------------------


@st.composite
def rank_matrices(draw, min_cols: int = 1) -> tuple[np.ndarray, int]:
    n = draw(st.integers(min_cols, MAX_COLUMNS))
    bits = draw(st.integers(1, min(32, 64 // n)))
    rows = draw(st.integers(0, 40))
    top = (1 << bits) - 1
    values = draw(st.lists(st.one_of(st.integers(0, top), st.sampled_from([0, top])), min_size=rows * n,
                           max_size=rows * n))
    return np.array(values, dtype=np.uint32).reshape(rows, n), bits


@settings(max_examples=300, deadline=None)
@given(rank_matrices())
def test_zorder_keys_match_bit_interleaving(case):
    ranks, bits = case
    keys = zorder_keys(ranks, bits)
    assert keys.dtype == np.uint64 and keys.shape == (len(ranks),)
    assert keys.tolist() == [ref_interleave(row, bits) for row in ranks.tolist()]


@settings(max_examples=300, deadline=None)
@given(rank_matrices(min_cols=2))
def test_hilbert_keys_match_skilling_and_invert(case):
    ranks, bits = case
    n = ranks.shape[1]
    keys = hilbert_keys(ranks, bits)
    assert keys.dtype == np.uint64 and keys.shape == (len(ranks),)
    assert keys.tolist() == [ref_skilling(row, bits) for row in ranks.tolist()]
    assert [ref_hilbert_point(k, n, bits) for k in keys.tolist()] == ranks.tolist()


@pytest.mark.parametrize("bits", [1, 2, 3, 5, 8, 16, 32])
def test_hilbert_2d_is_the_classic_rotation_curve(bits):
    rng = np.random.default_rng(bits)
    side = 1 << bits
    pts = grid(2, bits) if bits <= 5 else rng.integers(0, side, (2000, 2), dtype=np.uint64).astype(np.uint32)
    assert hilbert_keys(pts, bits).tolist() == [ref_xy2d(side, x, y) for x, y in pts.tolist()]


@pytest.mark.parametrize(("n", "bits"), [(2, 2), (2, 3), (3, 2), (3, 3), (2, 5), (4, 2), (5, 2), (6, 2), (7, 1),
                                         (8, 1), (4, 3)])
def test_hilbert_curve_defining_properties_on_full_grids(n, bits):
    pts = grid(n, bits)
    keys = hilbert_keys(pts, bits)
    # a bijection onto 0 .. 2**(n*bits) - 1, starting at the origin
    assert sorted(keys.tolist()) == list(range(len(pts)))
    path = pts[np.argsort(keys)].astype(np.int64)
    assert not path[0].any()
    # consecutive keys are points at Manhattan distance exactly 1
    steps = np.abs(np.diff(path, axis=0)).sum(axis=1)
    assert (steps == 1).all(), np.flatnonzero(steps != 1)[:5]
    # nested cubes: each run of 2**(n*k) keys fills one aligned sub-cube of side 2**k
    for k in range(1, bits):
        blocks = (path >> k).reshape(-1, 1 << (n * k), n)
        assert (blocks == blocks[:, :1, :]).all()


def test_zorder_full_grid_is_a_bijection_and_one_column_is_the_rank():
    for n, bits in [(2, 3), (3, 2), (8, 1)]:
        keys = zorder_keys(grid(n, bits), bits)
        assert sorted(keys.tolist()) == list(range(1 << (n * bits)))
    ranks = np.array([[0], [7], [2**32 - 1]], dtype=np.uint32)
    assert zorder_keys(ranks, 32).tolist() == [0, 7, 2**32 - 1]
    assert hilbert_keys(ranks, 32).tolist() == [0, 7, 2**32 - 1]


def test_kernels_take_read_only_and_extreme_inputs():
    ranks = np.full((5, 2), 2**32 - 1, dtype=np.uint32)
    ranks.setflags(write=False)
    assert zorder_keys(ranks, 32).tolist() == [2**64 - 1] * 5
    assert hilbert_keys(ranks, 32).tolist() == [ref_skilling([2**32 - 1] * 2, 32)] * 5
    eight = np.full((3, 8), 255, dtype=np.uint32)
    assert zorder_keys(eight, 8).tolist() == [2**64 - 1] * 3
    assert hilbert_keys(eight, 8).tolist() == [ref_skilling([255] * 8, 8)] * 3
    for fn in (zorder_keys, hilbert_keys):
        empty = fn(np.empty((0, 3), dtype=np.uint32), 5)
        assert empty.dtype == np.uint64 and empty.shape == (0,)
        assert fn(np.zeros((4, 3), dtype=np.uint32), np.int64(3)).tolist() == [0] * 4


@pytest.mark.parametrize("fn", [zorder_keys, hilbert_keys])
def test_kernel_input_errors(fn):
    good = np.zeros((4, 2), dtype=np.uint32)
    bad_ranks = [
        (good.astype(np.int64), "not dtype int64"),
        (good.astype(np.uint64), "not dtype uint64"),
        (good.astype(np.float64), "not dtype float64"),
        (good.ravel(), "not a 1-D array"),
        (good.reshape(2, 2, 2), "not a 3-D array"),
        (np.asfortranarray(np.zeros((4, 3), dtype=np.uint32)), "not C-contiguous"),
        (np.zeros((4, 4), dtype=np.uint32)[:, ::2], "not C-contiguous"),
        (np.zeros((0, 0), dtype=np.uint32), "1 to 8 columns, not 0"),
        (np.zeros((2, 9), dtype=np.uint32), "1 to 8 columns, not 9"),
        ([[0, 1], [1, 0]], "list"),
        (None, "not None"),
        ("ranks", "str"),
        (memoryview(b"abcd"), "memoryview"),
    ]
    for ranks, message in bad_ranks:
        with pytest.raises(ValueError, match=message):
            fn(ranks, 2)
    for bits, message in [(0, "from 1 to 32"), (33, "from 1 to 32"), (-1, "from 1 to 32"), (2.0, "integer"),
                          (True, "integer"), (None, "integer"), ("2", "integer"), (2**70, "from 1 to 32")]:
        with pytest.raises(ValueError, match=message):
            fn(good, bits)
    with pytest.raises(ValueError, match=r"from 1 to 21 for 3 column"):
        fn(np.zeros((1, 3), dtype=np.uint32), 22)
    with pytest.raises(ValueError, match=r"from 1 to 8 for 8 column"):
        fn(np.zeros((1, 8), dtype=np.uint32), 9)
    ranks = np.zeros((4, 3), dtype=np.uint32)
    ranks[2, 1] = 8
    with pytest.raises(ValueError, match=r"rank 8 at row 2, column 1 does not fit 3 bits"):
        fn(ranks, 3)
    assert fn(ranks, 4).shape == (4,)


# ---------------------------------------------------------------------------
# (b) Ranks
# ---------------------------------------------------------------------------


def assert_monotone(values: pa.Array | pa.ChunkedArray, ranks: np.ndarray) -> None:
    """Ordering rows by value (nulls first, NaN last) never lowers the rank."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    py = []
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):  # decoded by hand: pyarrow cannot take views
            dictionary = chunk.dictionary.to_pylist()
            py += [None if i is None else dictionary[i] for i in chunk.indices.to_pylist()]
        elif pa.types.is_run_end_encoded(chunk.type):
            py += pc.run_end_decode(chunk).to_pylist()
        else:
            py += chunk.to_pylist()
    nulls = [i for i, v in enumerate(py) if v is None]
    assert (ranks[nulls] == 0).all()
    valid = [i for i, v in enumerate(py) if v is not None]
    assert (ranks[valid] >= 1).all()

    def sort_key(i):
        v = py[i]
        return (1, 0) if v != v else (0, v)  # NaN after every number

    ordered = sorted(valid, key=sort_key)
    assert (np.diff(ranks[ordered].astype(np.int64)) >= 0).all()


def check_ranks(values, max_ranks: int = MAX_RANKS, sample=None) -> np.ndarray:
    boundaries = rank_boundaries(values if sample is None else sample, max_ranks)
    assert boundaries.ndim == 1 and len(boundaries) <= max_ranks - 1
    if len(boundaries) > 1:  # sorted and distinct
        same = np.array_equal(np.unique(boundaries), boundaries, equal_nan=boundaries.dtype.kind == "f")
        assert same
    ranks = rank_ids(values, boundaries)
    assert ranks.dtype == np.uint32 and ranks.shape == (len(values),)
    assert int(ranks.max(initial=0)) <= max_ranks
    assert_monotone(values, ranks)
    return ranks


TZ = datetime.timezone(datetime.timedelta(hours=5))
D = Decimal
TYPED_SAMPLES = [
    (pa.int8(), [5, None, -128, 127, 0, 5]),
    (pa.int16(), [300, None, -3, 300]),
    (pa.int32(), [2**31 - 1, -(2**31), None, 0]),
    (pa.int64(), [2**63 - 1, -(2**63), None, 0, 1]),
    (pa.uint8(), [255, 0, None, 7]),
    (pa.uint16(), [65535, 0, None]),
    (pa.uint32(), [2**32 - 1, 0, None, 5]),
    (pa.uint64(), [2**64 - 1, 0, None, 2**63]),
    (pa.float16(), [1.5, None, -2.0, float("nan"), float("inf")]),
    (pa.float32(), [1.5, None, -0.0, 0.0, float("nan"), -float("inf")]),
    (pa.float64(), [1e300, None, -1e-300, float("nan"), 0.0, float("nan")]),
    (pa.bool_(), [True, None, False, True]),
    (pa.decimal32(7, 2), [D("1.50"), None, D("-99999.99"), D("0.01")]),
    (pa.decimal64(18, 3), [D("1.5"), None, D("-999999999999999.999"), D("0")]),
    (pa.decimal128(18, 0), [D(10**17), None, D(-(10**17)), D(0)]),
    (pa.decimal128(38, 5), [D("1.5"), None, D("-123456789012345678901234567890.12345"), D("1e30")]),
    (pa.decimal256(76, 0), [D(10**75), None, D(-(10**75)), D(-1), D(1)]),
    (pa.date32(), [datetime.date(2020, 1, 1), None, datetime.date(1900, 5, 5)]),
    (pa.date64(), [datetime.date(2020, 1, 1), None, datetime.date(1969, 12, 31)]),
    (pa.time32("s"), [datetime.time(1, 2, 3), None, datetime.time(0, 0)]),
    (pa.time32("ms"), [datetime.time(1, 2, 3, 4000), None, datetime.time(0, 0)]),
    (pa.time64("us"), [datetime.time(23, 59, 59, 999999), None, datetime.time(0, 0, 1)]),
    (pa.time64("ns"), [datetime.time(12), None, datetime.time(0)]),
    (pa.timestamp("s"), [datetime.datetime(2020, 1, 1), None, datetime.datetime(1800, 1, 1)]),
    (pa.timestamp("ms", "UTC"), [datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc), None,
                                 datetime.datetime(1960, 1, 1, tzinfo=datetime.timezone.utc)]),
    (pa.timestamp("us", "Asia/Tokyo"), [datetime.datetime(2020, 1, 1, tzinfo=TZ), None,
                                        datetime.datetime(2020, 1, 1, 1, tzinfo=TZ)]),
    (pa.timestamp("ns"), [datetime.datetime(2020, 1, 1), None, datetime.datetime(2000, 1, 1)]),
    (pa.duration("s"), [datetime.timedelta(days=-1), None, datetime.timedelta(0)]),
    (pa.duration("ns"), [datetime.timedelta(microseconds=5), None, datetime.timedelta(days=1)]),
    (pa.string(), ["b", None, "a", "", "é", "a\x00", "\U0001f600", "zz"]),
    (pa.large_string(), ["b", None, "a", "", "é"]),
    (pa.string_view(), ["a longer string than twelve bytes", None, "a", "", "b"]),
    (pa.binary(), [b"\xff", None, b"\x00", b"", b"\x7f", b"\x80"]),
    (pa.large_binary(), [b"\xff\x00", None, b"\xff", b""]),
    (pa.binary_view(), [b"\xff" * 20, None, b"", b"\x01"]),
    (pa.binary(3), [b"\xff\x00\x01", None, b"\x00\x00\x00", b"\x80\x00\x00"]),
    (pa.binary(40), [b"\x01" * 40, None, b"\x01" * 39 + b"\x00", b"\x00" * 40]),
]


@pytest.mark.parametrize(("dtype", "values"), TYPED_SAMPLES, ids=[str(t) for t, _ in TYPED_SAMPLES])
def test_ranks_are_monotone_for_every_supported_type(dtype, values):
    arr = pa.array(values, dtype)
    check_clusterable("c", dtype)
    ranks = check_ranks(arr)
    # the same ranks through a chunked, sliced, dictionary-encoded and run-end encoded column
    chunked = pa.chunked_array([arr[:2], arr[2:2], arr[2:]], type=dtype)
    assert check_ranks(chunked, sample=arr).tolist() == ranks.tolist()
    padded = pa.concat_arrays([pa.array(values[:1] * 3, dtype), arr])
    assert rank_ids(padded.slice(3), rank_boundaries(arr)).tolist() == ranks.tolist()
    # dictionary-encoded, its nulls both in the indices and in the dictionary
    encoded = pa.DictionaryArray.from_arrays(pa.array(range(len(arr)), pa.int32(),
                                                      mask=np.arange(len(arr)) == len(arr) - 1), arr)
    expected = ranks.tolist()[:-1] + [0]
    assert check_ranks(encoded, sample=arr).tolist() == expected
    assert check_ranks(encoded.slice(1), sample=arr).tolist() == expected[1:]
    assert rank_ids(encoded, rank_boundaries(encoded)).tolist() == check_ranks(encoded).tolist()
    if dtype not in (pa.string_view(), pa.binary_view()):  # pyarrow cannot run-end encode views
        ree = pc.run_end_encode(arr)
        assert check_ranks(ree).tolist() == ranks.tolist()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.integers(-3, 3)), max_size=80),
       sample_fraction=st.floats(0.0, 1.0), max_ranks=st.integers(1, 12))
def test_integer_ranks_property(values, sample_fraction, max_ranks):
    arr = pa.array(values, pa.int64())
    sample = arr.slice(0, int(len(arr) * sample_fraction))  # any sample: out-of-sample values rank too
    check_ranks(arr, max_ranks, sample=sample)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.floats(allow_nan=True, width=64)), max_size=60),
       max_ranks=st.integers(1, 8))
def test_float_ranks_property(values, max_ranks):
    check_ranks(pa.array(values, pa.float64()), max_ranks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text(max_size=40), st.sampled_from(["", "a", "a" * 33, "a" * 34])),
                       max_size=60),
       max_ranks=st.integers(1, 8), large=st.booleans())
def test_string_ranks_property(values, max_ranks, large):
    check_ranks(pa.array(values, pa.large_string() if large else pa.string()), max_ranks)


def test_strings_rank_by_their_first_32_bytes():
    head = "x" * STRING_PREFIX
    arr = pa.array([head + "b", head + "a", head, "a", None])
    ranks = rank_ids(arr, rank_boundaries(arr))
    assert ranks[0] == ranks[1] == ranks[2] > ranks[3] > ranks[4] == 0


def test_skewed_column_ranks():
    rng = np.random.default_rng(7)
    zipf = pa.array(rng.zipf(1.2, 200_000).astype(np.int64))
    boundaries = rank_boundaries(zipf.slice(0, 50_000))
    assert 50 < len(boundaries) <= MAX_RANKS - 1
    ranks = check_ranks(zipf, sample=zipf.slice(0, 50_000))
    # the head value (1, for about a fifth of the rows) has one rank, the lowest; the tail
    # is split finely
    ones = zipf.to_numpy() == 1
    assert len(np.unique(ranks[ones])) == 1 and ranks[ones][0] == ranks.min()
    assert len(np.unique(ranks)) > 50


def test_narrow_all_equal_and_null_columns():
    narrow = pa.array(np.tile(np.array([10**12, -5, 7], dtype=np.int64), 1000))
    assert rank_boundaries(narrow).tolist() == [7, 10**12]
    assert sorted(set(check_ranks(narrow).tolist())) == [1, 2, 3]
    same = pa.array(["same"] * 100)
    assert len(rank_boundaries(same)) == 0
    assert check_ranks(same).tolist() == [1] * 100
    nulls = pa.array([None] * 10, pa.float64())
    assert len(rank_boundaries(nulls)) == 0 and rank_boundaries(nulls).dtype == np.float64
    assert check_ranks(nulls).tolist() == [0] * 10
    empty = pa.array([], pa.string())
    assert len(rank_boundaries(empty)) == 0 and rank_ids(empty, rank_boundaries(empty)).shape == (0,)
    mixed = pa.array([None, 3, None, 3, 1])
    assert rank_ids(mixed, rank_boundaries(mixed)).tolist() == [0, 2, 0, 2, 1]
    # one rank only: everything non-null is rank 1
    assert check_ranks(pa.array([5, 1, None]), max_ranks=1).tolist() == [1, 1, 0]


def test_dictionary_with_nulls_in_indices_and_values():
    dictionary = pa.array(["b", None, "a"])
    arr = pa.DictionaryArray.from_arrays(pa.array([0, None, 1, 2, 0], pa.int8()), dictionary)
    ranks = rank_ids(arr, rank_boundaries(arr))
    assert ranks.tolist() == [2, 0, 0, 1, 2]
    chunked = pa.chunked_array([arr, pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int8()), pa.array(["c"]))])
    assert rank_ids(chunked, rank_boundaries(chunked)).tolist() == [2, 0, 0, 1, 2, 3, 3]


@pytest.mark.parametrize("dtype", [pa.null(), pa.list_(pa.int64()), pa.struct([("a", pa.int64())]),
                                   pa.map_(pa.string(), pa.int64()), pa.month_day_nano_interval(),
                                   pa.dictionary(pa.int32(), pa.list_(pa.int8()))])
def test_unsupported_types_raise(dtype):
    if pa.types.is_dictionary(dtype):
        arr = pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int32()), pa.array([], dtype.value_type))
    else:
        arr = pa.array([None, None], dtype)
    with pytest.raises(UnsupportedTypeError, match=str(dtype).split("<")[0]):
        rank_boundaries(arr)
    with pytest.raises(UnsupportedTypeError, match="'col'"):
        rank_boundaries(arr, column="col")
    with pytest.raises(UnsupportedTypeError):
        rank_ids(arr, np.empty(0))
    with pytest.raises(UnsupportedTypeError, match=r"column 'c' has type"):
        check_clusterable("c", dtype)
    with pytest.raises(UnsupportedTypeError, match=r"column 'c' has type"):
        cluster_order(pa.table({"c": arr, "x": [1, 2]}), ["x", "c"], "zorder")


def test_rank_input_errors():
    ints = pa.array([1, 2, 3])
    for bad in (0, -1, 2**32, 1.5, True, None, "10"):
        with pytest.raises(InvalidArgumentError, match="max_ranks"):
            rank_boundaries(ints, bad)  # type: ignore[arg-type]
    for bad in ([1, 2], np.array([1, 2]), None):
        with pytest.raises(TypeError, match="pyarrow Array or ChunkedArray"):
            rank_boundaries(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="pyarrow Array or ChunkedArray"):
            rank_ids(bad, np.array([1]))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="do not belong"):
        rank_ids(ints, np.array([1.0]))
    with pytest.raises(InvalidArgumentError, match="do not belong"):
        rank_ids(pa.array(["a"]), rank_boundaries(ints))
    with pytest.raises(InvalidArgumentError, match="sorted"):
        rank_ids(ints, np.array([3, 1]))
    with pytest.raises(InvalidArgumentError, match="1-D"):
        rank_ids(ints, np.array([[1]]))
    with pytest.raises(InvalidArgumentError, match="1-D"):
        rank_ids(ints, [1, 2])  # type: ignore[arg-type]
    assert rank_ids(pa.array([1.0, float("nan")]), np.array([1.0, np.nan])).tolist() == [2, 3]


# ---------------------------------------------------------------------------
# curve_keys
# ---------------------------------------------------------------------------


def ref_curve_keys(columns: list[list[int]], strategy: str) -> list[int]:
    n = len(columns)
    spans = [(min(c), max(c)) for c in columns]
    bits = max(1, min(max((hi - lo).bit_length() for lo, hi in spans), 64 // n, 32))
    scaled = [[((v - lo) << bits) // (hi - lo + 1) for v in c] for c, (lo, hi) in zip(columns, spans)]
    points = [list(p) for p in zip(*scaled)]
    if strategy == "zorder" or n == 1:
        return [ref_interleave(p, bits) for p in points]
    return [ref_skilling(p, bits) for p in points]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, MAX_COLUMNS), rows=st.integers(1, 30), strategy=st.sampled_from(["zorder", "hilbert"]),
       data=st.data())
def test_curve_keys_match_reference(n, rows, strategy, data):
    tops = data.draw(st.lists(st.sampled_from([0, 1, 3, 10, 1000, 2**20, 2**32 - 1]), min_size=n, max_size=n))
    columns = [data.draw(st.lists(st.integers(0, top), min_size=rows, max_size=rows)) for top in tops]
    dtypes = [np.uint32, np.int64, np.uint64]
    arrays = [np.array(c, dtype=dtypes[i % 3]) for i, c in enumerate(columns)]
    keys = curve_keys(arrays, strategy)
    assert keys.dtype == np.uint64
    assert keys.tolist() == ref_curve_keys(columns, strategy)


def test_curve_keys_scaling():
    # ranks that fit are used as they are (stretched only when narrower than the widest)
    wide = np.arange(1024, dtype=np.uint32)
    assert curve_keys([wide], "zorder").tolist() == wide.tolist()
    narrow = np.array([1, 2, 3, 4] * 256, dtype=np.uint32)
    keys = curve_keys([wide, narrow], "zorder")
    # the narrow column's two bits are the top of its 10-bit lane (bits 18 and 16 of the key),
    # not its bottom
    assert ((keys >> np.uint64(18)) & np.uint64(1)).tolist() == ((narrow - 1) >> 1).tolist()
    assert ((keys >> np.uint64(16)) & np.uint64(1)).tolist() == ((narrow - 1) & 1).tolist()
    # 8 columns of 1000 ranks: squeezed into 8 bits each, still monotone per column
    cols = [np.arange(1001, dtype=np.uint32)] * 8
    keys = curve_keys(cols, "zorder")
    assert (np.diff(keys.astype(np.float64)) >= 0).all()
    assert curve_keys([np.zeros(3, np.uint32)] * 2, "hilbert").tolist() == [0, 0, 0]
    assert curve_keys([np.empty(0, np.uint32)] * 2, "hilbert").shape == (0,)


def test_curve_keys_input_errors():
    good = np.array([0, 1, 2], dtype=np.uint32)
    cases = [
        (([good], "linear"), "'zorder' or 'hilbert'"),
        (([good], "Z"), "'zorder' or 'hilbert'"),
        (([], "zorder"), "1 to 8 columns of ranks, not 0"),
        (([good] * 9, "zorder"), "1 to 8 columns of ranks, not 9"),
        ((good, "zorder"), "sequence"),
        (({0: good}, "zorder"), "sequence"),
        (([good, good[:2]], "zorder"), r"ranks\[1\] has 2 rows"),
        (([good, np.array([0.5, 1, 2])], "zorder"), r"ranks\[1\] must be a 1-D integer array"),
        (([good.reshape(3, 1)], "zorder"), r"ranks\[0\] must be a 1-D"),
        (([good, np.array([-1, 0, 1])], "hilbert"), r"ranks\[1\] holds -1"),
        (([np.array([2**32], dtype=np.int64)], "hilbert"), r"ranks\[0\] holds 4294967296"),
        (([good, ["a", "b", "c"]], "zorder"), r"ranks\[1\] must be a 1-D integer array"),
    ]
    for (args, message) in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            curve_keys(*args)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# cluster_order
# ---------------------------------------------------------------------------


def mixed_table(n: int = 3000, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = pa.array(rng.integers(-50, 50, n), mask=rng.random(n) < 0.1)
    words = pa.array([f"w{v:03d}" for v in rng.integers(0, 300, n)], mask=rng.random(n) < 0.1)
    floats = pa.array(np.where(rng.random(n) < 0.05, np.nan, rng.normal(size=n)))
    return pa.table({"i": ints, "s": words, "f": floats, "d": words.dictionary_encode(),
                     "sv": words.cast(pa.string_view()), "h": pa.array(rng.normal(size=n).astype(np.float16)),
                     "dec": pa.array([None if v is None else Decimal(v) for v in ints.to_pylist()],
                                     pa.decimal32(3, 0))})


def is_permutation(order: np.ndarray, n: int) -> bool:
    return order.dtype == np.int64 and order.shape == (n,) and (np.sort(order) == np.arange(n)).all()


def test_linear_order_is_pyarrows_sort_nulls_first():
    table = mixed_table()
    order = cluster_order(table, ["i", "s"], "linear")
    expected = pc.sort_indices(table, sort_keys=[("i", "ascending", "at_start"), ("s", "ascending", "at_start")])
    assert order.tolist() == expected.to_pylist()
    # types pyarrow cannot sort directly order by their values
    for column, twin in [("d", "s"), ("sv", "s"), ("dec", "i")]:
        assert cluster_order(table, [column, "f"], "linear").tolist() == \
            cluster_order(table, [twin, "f"], "linear").tolist()
    halves = table.column("h").to_numpy()[cluster_order(table, ["h", "f"], "linear")]
    assert (np.diff(halves.astype(np.float64)) >= 0).all()
    record_batch = table.to_batches()[0]
    assert cluster_order(record_batch, "i", "linear").tolist() == cluster_order(table, ["i"], "linear").tolist()


@pytest.mark.parametrize("strategy", ["zorder", "hilbert"])
def test_curve_orders(strategy):
    table = mixed_table()
    order = cluster_order(table, ["i", "s", "f", "d", "sv", "h", "dec"], strategy)
    assert is_permutation(order, table.num_rows)
    # deterministic; the seed and sample size only change the boundaries
    assert order.tolist() == cluster_order(table, ["i", "s", "f", "d", "sv", "h", "dec"], strategy).tolist()
    small = cluster_order(table, ["i", "s"], strategy, sample_size=100, seed=5)
    assert is_permutation(small, table.num_rows)
    # sorted by the key, equal keys in row order
    ranks = [rank_ids(table.column(c), rank_boundaries(table.column(c))) for c in ("i", "s")]
    keys = curve_keys(ranks, strategy)
    got = cluster_order(table, ["i", "s"], strategy)
    assert got.tolist() == np.argsort(keys, kind="stable").tolist()
    assert [(keys[i], i) for i in got] == sorted((keys[i], i) for i in range(len(keys)))
    # one column: the linear order
    assert cluster_order(table, ["s"], strategy).tolist() == cluster_order(table, ["s"], "linear").tolist()
    # ties: all-equal columns keep the table's order
    same = pa.table({"a": [1] * 50, "b": ["x"] * 50})
    assert cluster_order(same, ["a", "b"], strategy).tolist() == list(range(50))
    assert cluster_order(table.slice(0, 0), ["i", "s"], strategy).shape == (0,)


def test_cluster_order_input_errors():
    table = pa.table({"a": [1, 2], "b": ["x", "y"], "dup": [1, 2], "dup_": [3, 4]}).rename_columns(
        ["a", "b", "dup", "dup"])
    cases = [
        (([],), "1 to 8 columns, not 0"),
        ((["a"] * 9,), "1 to 8 columns, not 9"),
        ((["a", "a"],), r"\['a'\] repeat"),
        ((["a", "nope"],), "no column 'nope'"),
        ((["dup"],), "ambiguous"),
        (([1],), "must be strings"),
        ((None,), "sequence of column names"),
    ]
    for (columns,), message in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            cluster_order(table, columns, "zorder")  # type: ignore[arg-type]
    for strategy in ("ZORDER", "", None, "order"):
        with pytest.raises(InvalidArgumentError, match="strategy must be one of linear, zorder, hilbert"):
            cluster_order(table, ["a"], strategy)  # type: ignore[arg-type]
    for size in (0, -1, 1.5, True):
        with pytest.raises(InvalidArgumentError, match="sample_size"):
            cluster_order(table, ["a", "b"], "hilbert", sample_size=size)  # type: ignore[arg-type]
    for seed in (-1, 1.5, None):
        with pytest.raises(InvalidArgumentError, match="seed"):
            cluster_order(table, ["a", "b"], "hilbert", seed=seed)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pyarrow Table or RecordBatch"):
        cluster_order({"a": [1]}, ["a"], "linear")  # type: ignore[arg-type]
    # structurally broken Arrow is refused before any kernel reads it
    broken = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 5, 1], np.int32).tobytes()),
                                                    pa.py_buffer(b"abc")])
    with pytest.raises(MalformedArrowError, match="clustering column 's'"):
        cluster_order(pa.table({"s": broken, "a": [1, 2]}), ["a", "s"], "zorder")
    assert STRATEGIES == ("linear", "zorder", "hilbert") and MAX_COLUMNS == 8 and MAX_RANKS == 1000


# ---------------------------------------------------------------------------
# (d) Clustering quality: sampled ranks against raw bits
# ---------------------------------------------------------------------------

N_ROWS = 100_000
N_FILES = 100


def raw_bits_zorder(table: pa.Table, columns: list[str]) -> np.ndarray:
    """The order by a Z-value of the columns' raw bits (what Iceberg's ZOrderByteUtils does for
    integers): all 64 bits of each sign-flipped value, interleaved from the top."""
    n = len(columns)
    raw = [table.column(c).to_numpy().astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63) for c in columns]
    bits = np.empty((table.num_rows, 64 * n), dtype=np.uint8)
    for b in range(64):
        for i, values in enumerate(raw):
            bits[:, b * n + i] = (values >> np.uint64(63 - b)) & np.uint64(1)
    keys = np.packbits(bits, axis=1).view(f"S{8 * n}").ravel()  # big-endian bytes: byte order = key order
    return np.argsort(keys, kind="stable")


def files_per_value(table: pa.Table, order: np.ndarray, column: str) -> float:
    """Cut the ordered rows into N_FILES equal files; for each distinct value of the column,
    count the files whose [min, max] holds it (what min/max statistics cannot skip); average."""
    values = table.column(column).to_numpy()[order]
    files = np.array_split(values, N_FILES)
    lows = np.sort([f.min() for f in files])
    highs = np.sort([f.max() for f in files])
    distinct = np.unique(values)
    # files with low <= v, less those with high < v (which all have low <= v too)
    holding = np.searchsorted(lows, distinct, side="right") - np.searchsorted(highs, distinct, side="left")
    return float(holding.mean())


@pytest.mark.parametrize("strategy", ["zorder", "hilbert"])
def test_sampled_ranks_cluster_skewed_and_narrow_columns(strategy):
    """Two columns against a wide uniform one (int64 in [0, 2**40)):

    - "zipf": Zipf(1.3), a quarter of the rows hold 1 and the tail reaches into the millions;
    - "narrow": 10 values 0..9.

    An ideal two-column curve over F files touches about sqrt(F) = 10 files for a point
    lookup on either column (a narrow value, a tenth of the rows, needs at least 10 by
    itself).  Raw bits put the wide column's bits above every bit in which the other column
    varies, so the order is nearly the wide column's and a lookup on the other touches nearly
    all 100 files (measured: 98-100).  Sampled ranks give both columns equal weight (measured:
    about 8-10 files for zipf, 15-21 for narrow).  Bound: at most 35 files, a bit over 3x the
    ideal and under half of raw bits, for the column under test and for the wide column (a
    layout that simply sorted by the tested column would fail the wide one).
    """
    rng = np.random.default_rng(11)
    wide = rng.integers(0, 2**40, N_ROWS)
    table = pa.table({"wide": wide, "zipf": rng.zipf(1.3, N_ROWS).clip(max=2**40),
                      "narrow": rng.integers(0, 10, N_ROWS)})
    for column in ("zipf", "narrow"):
        columns = ["wide", column]
        ranked = cluster_order(table, columns, strategy)
        raw = raw_bits_zorder(table, columns)
        ranked_files = files_per_value(table, ranked, column)
        raw_files = files_per_value(table, raw, column)
        assert raw_files > 80, (column, raw_files)
        assert ranked_files <= 35 and ranked_files < raw_files / 2, (column, ranked_files, raw_files)
        assert files_per_value(table, ranked, "wide") <= 35
