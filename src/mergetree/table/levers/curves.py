"""Clustering keys for a table's layout: the row order behind
``Table.optimize(order=[columns], strategy="linear" | "zorder" | "hilbert")``.

Why ranks and not raw bits
--------------------------
A Z-order or Hilbert key interleaves one number per column.  Built from the columns' raw
bits (as Iceberg's ``ZOrderByteUtils`` does), it clusters badly exactly where clustering
matters: a *skewed* column (Zipf: most rows hold a handful of small values, a few hold huge
ones) spends its high bits on the rare outliers, so the bulk of its rows differ only in
low-order bits that the other columns' bits outrank; a *narrow* column (few distinct or
small values) has all its variation in its low bits and contributes nothing to the top of
the key.  Either way the files end up sorted by the other columns and a filter on this one
reads nearly every file.  So, as Delta's ``OPTIMIZE ZORDER BY`` does, each column's values
are first mapped to *rank ids* from quantile boundaries of a random sample (at most
``MAX_RANKS`` ranges, nulls in rank 0): every rank holds about the same number of rows
whatever the distribution (though one value never spans two ranks), and `curve_keys`
stretches every column's ranks over the same number of bits, so each column gets an equal
share of the key.

Ranks only need to be approximately right: they decide how well files cluster, never what
a query returns.  So values are compared through an order-preserving, possibly coarser,
numpy key (see `rank_boundaries`), e.g. strings by their first `STRING_PREFIX` bytes.

Functions, bottom up: `rank_boundaries` (from a sample) -> `rank_ids` (per row) ->
`curve_keys` (Z-order or Hilbert over up to 8 columns, in ``mergetree._curves``) ->
`cluster_order` (the row order for a table, all three strategies).
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..._curves import hilbert_keys, zorder_keys
from ...errors import InvalidArgumentError, UnsupportedTypeError
from ...merge.arrow_input import check_array, sort_indices

__all__ = ["CURVE_STRATEGIES", "MAX_COLUMNS", "MAX_RANKS", "STRATEGIES", "STRING_PREFIX", "check_clusterable",
           "cluster_order", "curve_keys", "rank_boundaries", "rank_ids"]

MAX_COLUMNS = 8          # a key of 64 bits: 8 columns of 8 bits (256 ranks each) at most
MAX_RANKS = 1000         # ranges of non-null values per column, as Delta's OPTIMIZE ZORDER
STRATEGIES = ("linear", "zorder", "hilbert")
CURVE_STRATEGIES = ("zorder", "hilbert")
STRING_PREFIX = 32       # strings and binaries are ranked by their first 32 bytes

_MAX_RANK_LIMIT = 2**32 - 1  # ranks are uint32
_BLOCK = 1 << 16             # rows normalized at a time by rank_ids (bounds temporary memory)

UInt32Array = npt.NDArray[np.uint32]
UInt64Array = npt.NDArray[np.uint64]
Int64Array = npt.NDArray[np.int64]


class _Plan(NamedTuple):
    """How one Arrow value type becomes numpy sort keys: the key dtype, and a function from a
    non-empty plain (decoded) array to its keys (anything in null slots)."""
    dtype: np.dtype
    keys: Callable[[pa.Array], np.ndarray]


# ---------------------------------------------------------------------------
# Value -> order-preserving numpy key
# ---------------------------------------------------------------------------

def _fixed(arr: pa.Array, np_dtype: npt.DTypeLike) -> np.ndarray:
    """A read-only numpy view of a fixed-width array's value slots."""
    dt = np.dtype(np_dtype)
    return np.frombuffer(arr.buffers()[1], dtype=dt, count=len(arr), offset=arr.offset * dt.itemsize)


def _fixed_plan(np_dtype: npt.DTypeLike) -> _Plan:
    return _Plan(np.dtype(np_dtype), lambda a: _fixed(a, np_dtype))


def _slot_bytes(arr: pa.Array, width: int) -> np.ndarray:
    """The (n, width) uint8 matrix of a fixed-width array's slots."""
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=len(arr) * width, offset=arr.offset * width)
    return raw.reshape(len(arr), width)


def _twos_complement_keys(arr: pa.Array, width: int) -> np.ndarray:
    """Little-endian two's-complement integers of `width` bytes as big-endian bytes with the
    sign bit flipped: byte order is then numeric order (numpy compares bytes unsigned)."""
    be = _slot_bytes(arr, width)[:, ::-1].copy()
    be[:, 0] ^= 0x80
    return be.view(f"S{width}").ravel()


def _low_words(arr: pa.Array, width: int) -> np.ndarray:
    """The low 8 bytes of each little-endian slot, as int64."""
    return np.ascontiguousarray(_slot_bytes(arr, width)[:, :8]).view("<i8").ravel()


def _decimal_plan(dtype: pa.DataType) -> _Plan:
    """Decimals of one type share a scale: order is the unscaled integers' order, kept
    exactly (an int64 when the precision allows, else sortable big-endian bytes)."""
    width = dtype.byte_width
    if width == 4:
        return _fixed_plan(np.int32)
    if width == 8:
        return _fixed_plan(np.int64)
    if dtype.precision <= 18:  # the value fits the low little-endian word, sign included
        return _Plan(np.dtype(np.int64), lambda a: _low_words(a, width))
    return _Plan(np.dtype(f"S{width}"), lambda a: _twos_complement_keys(a, width))


def _bytes_keys(arr: pa.Array, binary_type: pa.DataType) -> np.ndarray:
    """The first STRING_PREFIX bytes of each value, NUL-padded (a prefix keeps the order:
    values equal in their first 32 bytes just share a rank)."""
    arr = pc.binary_slice(pc.fill_null(arr.cast(binary_type), b""), 0, STRING_PREFIX)
    return arr.to_numpy(zero_copy_only=False).astype(f"S{STRING_PREFIX}")


def _fixed_binary_plan(width: int) -> _Plan:
    keep = min(width, STRING_PREFIX)
    if keep == 0:
        return _Plan(np.dtype(np.uint8), lambda a: np.zeros(len(a), np.uint8))
    return _Plan(np.dtype(f"S{keep}"),
                 lambda a: np.ascontiguousarray(_slot_bytes(a, width)[:, :keep]).view(f"S{keep}").ravel())


_FIXED = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
    pa.float16(): np.float16, pa.float32(): np.float32, pa.float64(): np.float64,
    pa.date32(): np.int32, pa.date64(): np.int64,
}
_BINARY = {
    pa.string(): pa.binary(), pa.binary(): pa.binary(),
    pa.large_string(): pa.large_binary(), pa.large_binary(): pa.large_binary(),
    pa.string_view(): pa.large_binary(), pa.binary_view(): pa.large_binary(),
}
_VIEW_TWIN = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}
_SUPPORTED = ("bool, integers, floats, decimals, date32/64, time32/64, timestamps, durations, strings and "
              "binaries (large, view and fixed-size too), and dictionary or run-end encoded arrays of those")


def _plan(dtype: pa.DataType, column: str | None) -> _Plan:
    """The key plan of a column type (of its values, for dictionary and run-end encoded
    types: see `_decoded`), or UnsupportedTypeError naming the column and its type."""
    value_type = _value_type(dtype)
    plan = _value_plan(value_type)
    if plan is None:
        what = f"column {column!r}" if column is not None else "a column"
        raise UnsupportedTypeError(f"{what} has type {dtype}, which has no order to cluster by. Supported: "
                                   f"{_SUPPORTED}")
    return plan


def _value_type(dtype: pa.DataType) -> pa.DataType:
    while pa.types.is_dictionary(dtype) or pa.types.is_run_end_encoded(dtype):
        dtype = dtype.value_type
    return dtype


def _decoded(arr: pa.Array) -> pa.Array:
    """A dictionary or run-end encoded array as a plain array of its values (with their nulls)."""
    while True:
        if pa.types.is_dictionary(arr.type):
            values = arr.dictionary
            if values.type in _VIEW_TWIN:
                values = values.cast(_VIEW_TWIN[values.type])  # pyarrow's take has no view kernels
            arr = values.take(arr.indices)
        elif pa.types.is_run_end_encoded(arr.type):
            arr = pc.run_end_decode(arr)
        else:
            return arr


def _value_plan(dtype: pa.DataType) -> _Plan | None:
    t = pa.types
    if dtype in _FIXED:
        return _fixed_plan(_FIXED[dtype])
    if t.is_boolean(dtype):
        return _Plan(np.dtype(np.uint8),
                     lambda a: pc.fill_null(a, False).to_numpy(zero_copy_only=False).astype(np.uint8))
    if t.is_time32(dtype):
        return _fixed_plan(np.int32)
    if t.is_time64(dtype) or t.is_timestamp(dtype) or t.is_duration(dtype):
        return _fixed_plan(np.int64)  # one unit (and zone) per type: the stored integers order it
    if t.is_decimal(dtype):
        return _decimal_plan(dtype)
    if dtype in _BINARY:
        target = _BINARY[dtype]
        return _Plan(np.dtype(f"S{STRING_PREFIX}"), lambda a: _bytes_keys(a, target))
    if t.is_fixed_size_binary(dtype):
        return _fixed_binary_plan(dtype.byte_width)
    return None


def check_clusterable(name: str, dtype: pa.DataType) -> None:
    """Raise UnsupportedTypeError unless a column of this type can order a clustered layout."""
    _plan(dtype, name)


def _chunks(values: pa.Array | pa.ChunkedArray, what: str) -> list[pa.Array]:
    if isinstance(values, pa.ChunkedArray):
        return list(values.chunks)
    if isinstance(values, pa.Array):
        return [values]
    raise TypeError(f"{what} must be a pyarrow Array or ChunkedArray, not {type(values).__name__}")


def _valid_mask(arr: pa.Array) -> np.ndarray | None:
    """Which rows are non-null, or None when all are."""
    if arr.null_count == 0:
        return None
    return np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)


# ---------------------------------------------------------------------------
# Ranks
# ---------------------------------------------------------------------------

def rank_boundaries(sample: pa.Array | pa.ChunkedArray, max_ranks: int = MAX_RANKS, *,
                    column: str | None = None) -> np.ndarray:
    """The sorted, distinct boundaries that split a column's values into at most
    ``max_ranks`` ranges of about equal row counts, from a sample of its values.

    Returns at most ``max_ranks - 1`` boundaries, as a 1-D numpy array of the column's *key*
    dtype: `rank_ids` maps a value ``v`` to ``1 + (number of boundaries <= v)``, so non-null
    values get ranks 1 .. max_ranks and nulls 0.  When the sample has at most ``max_ranks``
    distinct values (a narrow column), every distinct value but the smallest is a boundary
    and each value gets a rank of its own; otherwise the boundaries are the sample's
    ``j / max_ranks`` quantiles, deduplicated (a value that fills several quantiles, as the
    head of a Zipf distribution does, gets one rank and the rest are spread over the tail).

    Keys (order-preserving, sometimes coarser): integers, floats (NaN after every number),
    bool (0/1) and fixed-width temporals as their stored numbers (date32/64, time32/64,
    timestamps of any unit and zone, durations); decimals exactly (their unscaled integers:
    int32/int64, or sign-flipped big-endian bytes past 18 digits); strings and binaries
    (also large, view, fixed-size) as their first ``STRING_PREFIX`` (32) bytes, NUL-padded
    and compared as unsigned bytes (UTF-8 byte order is code point order; values equal in
    their first 32 bytes, or differing only by trailing NULs, share a rank); dictionary and
    run-end encoded arrays as their values.  Nested, null, interval and extension types raise
    UnsupportedTypeError (``column`` names the column in that message).
    """
    if isinstance(max_ranks, bool) or not isinstance(max_ranks, (int, np.integer)) \
            or not 1 <= max_ranks <= _MAX_RANK_LIMIT:
        raise InvalidArgumentError(f"max_ranks must be an integer from 1 to {_MAX_RANK_LIMIT}, not {max_ranks!r}")
    chunks = _chunks(sample, "the sample")
    plan = _plan(sample.type, column)
    parts = [np.empty(0, plan.dtype)]
    for chunk in map(_decoded, chunks):
        if len(chunk) == 0 or chunk.null_count == len(chunk):
            continue
        keys = plan.keys(chunk)
        valid = _valid_mask(chunk)
        parts.append(keys if valid is None else keys[valid])
    keys = np.concatenate(parts)
    distinct = np.unique(keys)  # sorted; NaN last, once
    m = int(max_ranks)
    if len(distinct) <= m:
        return distinct[1:]
    keys.sort()
    positions = (np.arange(1, m, dtype=np.int64) * len(keys)) // m
    return np.unique(keys[positions])


def rank_ids(values: pa.Array | pa.ChunkedArray, boundaries: np.ndarray, *, column: str | None = None) -> UInt32Array:
    """Each value's rank: 0 for null, else ``1 + (number of boundaries <= value)`` over its key
    (see `rank_boundaries`, which made ``boundaries`` from a sample of the same column).

    Monotone: ordering rows by value (nulls first, NaN last) never decreases the rank.
    Returns a new uint32 array, one rank per row.
    """
    chunks = _chunks(values, "values")
    plan = _plan(values.type, column)
    b = _check_boundaries(boundaries, plan.dtype, values.type)
    out = np.empty(len(values), dtype=np.uint32)
    start = 0
    for chunk in chunks:
        out[start:start + len(chunk)] = _chunk_ranks(chunk, b, plan)
        start += len(chunk)
    return out


def _check_boundaries(boundaries: np.ndarray, key_dtype: np.dtype, value_type: pa.DataType) -> np.ndarray:
    if not isinstance(boundaries, np.ndarray) or boundaries.ndim != 1:
        raise InvalidArgumentError("boundaries must be the 1-D numpy array rank_boundaries returns")
    if boundaries.dtype != key_dtype:
        raise InvalidArgumentError(f"boundaries of dtype {boundaries.dtype} do not belong to values of type "
                                   f"{value_type} (their keys are {key_dtype}): make them with rank_boundaries "
                                   f"from a sample of the same column")
    if len(boundaries) > _MAX_RANK_LIMIT - 1:
        raise InvalidArgumentError(f"{len(boundaries)} boundaries are too many: ranks are uint32")
    ordered = np.sort(boundaries)
    same = np.array_equal(ordered, boundaries, equal_nan=True) if boundaries.dtype.kind == "f" \
        else np.array_equal(ordered, boundaries)
    if not same:
        raise InvalidArgumentError("boundaries must be sorted ascending, as rank_boundaries returns them")
    return boundaries


def _chunk_ranks(chunk: pa.Array, boundaries: np.ndarray, plan: _Plan) -> UInt32Array:
    n = len(chunk)
    if pa.types.is_run_end_encoded(chunk.type):
        chunk = pc.run_end_decode(chunk)
    out = np.zeros(n, dtype=np.uint32)
    if n == 0:
        return out
    if pa.types.is_dictionary(chunk.type):
        # rank the dictionary once (its own nulls rank 0), then look every index up
        dict_ranks = _chunk_ranks(chunk.dictionary, boundaries, plan)
        indices = pc.fill_null(chunk.indices, 0).to_numpy(zero_copy_only=False)
        out = dict_ranks[indices] if len(dict_ranks) else out
        valid = _valid_mask(chunk)
        if valid is not None:
            out[~valid] = 0
        return out
    if chunk.null_count == n:
        return out
    for lo in range(0, n, _BLOCK):
        block = chunk.slice(lo, min(_BLOCK, n - lo))
        ranks = np.searchsorted(boundaries, plan.keys(block), side="right") + 1
        valid = _valid_mask(block)
        if valid is not None:
            ranks[~valid] = 0
        out[lo:lo + len(block)] = ranks
    return out


# ---------------------------------------------------------------------------
# Curve keys
# ---------------------------------------------------------------------------

def curve_keys(ranks: Sequence[np.ndarray], strategy: str,
               spans: Sequence[tuple[int, int]] | None = None) -> UInt64Array:
    """The Z-order or Hilbert key of every row from its columns' ranks (1 to 8 equally long
    1-D arrays of non-negative integers below 2**32, e.g. from `rank_ids`).

    Every column gets the same number of bits: ``bits`` is the smallest b with
    ``2**b > max - min`` of the widest column, capped at ``64 // n_columns``.  Each column's
    ranks are then stretched (or squeezed) over ``[0, 2**bits)`` by
    ``(rank - min) * 2**bits // (max - min + 1)``: monotone, one to one whenever the ranks
    fit, and a scale-down when they do not (like a right shift, but even).  The stretch is
    what keeps a narrow column (ranks 1..5, say) from living only in the low bits of every
    group, where the other columns would outrank it.

    ``strategy``: "zorder" (bit interleaving, column 0 most significant in each group) or
    "hilbert" (the Hilbert curve index; with one column both are the scaled rank).

    ``spans``: fixed (min, max) rank per column instead of the observed ones, so that keys
    computed over separate pieces of a table (Spark tasks) compare with each other; every
    rank must lie inside its span.
    """
    if strategy not in CURVE_STRATEGIES:
        raise InvalidArgumentError(f"curve_keys takes strategy 'zorder' or 'hilbert', not {strategy!r} "
                                   f"('linear' orders by the values themselves: see cluster_order)")
    if isinstance(ranks, np.ndarray) or not isinstance(ranks, Sequence):
        raise InvalidArgumentError("ranks must be a sequence (list or tuple) of 1-D arrays, one per column")
    n_cols = len(ranks)
    if not 1 <= n_cols <= MAX_COLUMNS:
        raise InvalidArgumentError(f"curve keys take 1 to {MAX_COLUMNS} columns of ranks, not {n_cols}")
    columns = [np.asarray(r) for r in ranks]
    n_rows = len(columns[0]) if columns[0].ndim == 1 else -1
    observed: list[tuple[int, int]] = []
    for i, col in enumerate(columns):
        if col.ndim != 1 or col.dtype.kind not in "ui":
            raise InvalidArgumentError(f"ranks[{i}] must be a 1-D integer array, not {col.ndim}-D {col.dtype}")
        if len(col) != n_rows:
            raise InvalidArgumentError(f"ranks[{i}] has {len(col)} rows, ranks[0] has {n_rows}")
        if n_rows:
            lo, hi = int(col.min()), int(col.max())
            if lo < 0 or hi > _MAX_RANK_LIMIT:
                raise InvalidArgumentError(f"ranks[{i}] holds {lo if lo < 0 else hi}: ranks must be from 0 to "
                                           f"{_MAX_RANK_LIMIT}")
            observed.append((lo, hi))
    if n_rows == 0:
        return np.empty(0, dtype=np.uint64)
    if spans is not None:
        fixed = [(int(lo), int(hi)) for lo, hi in spans]
        if len(fixed) != n_cols or any(not (0 <= lo <= hi <= _MAX_RANK_LIMIT) for lo, hi in fixed):
            raise InvalidArgumentError(f"spans must give 0 <= min <= max <= {_MAX_RANK_LIMIT} for each of the "
                                       f"{n_cols} columns, not {spans!r}")
        for i, ((lo, hi), (flo, fhi)) in enumerate(zip(observed, fixed)):
            if lo < flo or hi > fhi:
                raise InvalidArgumentError(f"ranks[{i}] run from {lo} to {hi}, outside the span ({flo}, {fhi})")
        observed = fixed
    bits = max(1, min(max((hi - lo).bit_length() for lo, hi in observed), 64 // n_cols, 32))
    matrix = np.empty((n_rows, n_cols), dtype=np.uint32)
    for i, (col, (lo, hi)) in enumerate(zip(columns, observed)):
        shifted = col.astype(np.uint64) - np.uint64(lo)
        matrix[:, i] = (shifted << np.uint64(bits)) // np.uint64(hi - lo + 1)
    keys: UInt64Array = (hilbert_keys if strategy == "hilbert" else zorder_keys)(matrix, bits)
    return keys


# ---------------------------------------------------------------------------
# The row order of a clustered layout
# ---------------------------------------------------------------------------

def cluster_order(table: pa.Table | pa.RecordBatch, columns: Sequence[str] | str, strategy: str,
                  sample_size: int = 100_000, seed: int = 0) -> Int64Array:
    """The row order (int64 row indices, a permutation) that clusters ``table`` by ``columns``.

    - "linear": lexicographic by the columns' values, nulls first (pyarrow's stable
      ``sort_indices``; NaN right after the nulls, as pyarrow places it).  Best when queries
      filter on the first column; the later ones are clustered only within its ties.
    - "zorder" / "hilbert": by the curve key (`curve_keys`) of the columns' rank ids, with
      boundaries (`rank_boundaries`, at most MAX_RANKS ranges) from a random sample of at most
      ``sample_size`` rows drawn with ``seed``; equal keys keep their row order.  Every column
      gets an equal share of the key, so a filter on any one of them skips files; Hilbert
      keeps neighbours closer (no long jumps) and usually skips a few more.  Ranks, not raw
      bits: skewed and narrow columns would otherwise barely be clustered (module docstring).
      With one column both behave as "linear" (a curve through one dimension is the order
      itself, and the values order it exactly where ranks would only approximate it).

    Raises InvalidArgumentError unless ``columns`` are 1 to 8 distinct existing column names,
    UnsupportedTypeError for a column without an order (nested, null, ...), and
    MalformedArrowError for structurally broken Arrow data.
    """
    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        raise TypeError(f"table must be a pyarrow Table or RecordBatch, not {type(table).__name__}")
    if strategy not in STRATEGIES:
        raise InvalidArgumentError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    names = _check_columns(table, columns)
    size = _positive_int("sample_size", sample_size)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidArgumentError(f"seed must be a non-negative integer, not {seed!r}")
    data = [table.column(name) for name in names]
    for name, column in zip(names, data):
        check_clusterable(name, column.type)
        check_array(column, f"clustering column {name!r}")
    n_rows = table.num_rows
    if n_rows == 0:
        return np.empty(0, dtype=np.int64)
    if strategy == "linear" or len(names) == 1:
        return _linear_order(data)
    if n_rows <= size:
        picked = None
    else:
        picked = np.sort(np.random.default_rng(int(seed)).choice(n_rows, size=size, replace=False))
    ranks = []
    for name, column in zip(names, data):
        sample = column if picked is None else column.take(pa.array(picked))
        ranks.append(rank_ids(column, rank_boundaries(sample, MAX_RANKS, column=name), column=name))
    keys = curve_keys(ranks, strategy)
    return np.argsort(keys, kind="stable").astype(np.int64, copy=False)


def _positive_int(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgumentError(f"{what} must be a positive integer, not {value!r}")
    return operator.index(value)


def _check_columns(table: pa.Table | pa.RecordBatch, columns: Sequence[str] | str) -> list[str]:
    if isinstance(columns, str):
        names = [columns]
    elif isinstance(columns, Sequence):
        names = list(columns)
    else:
        raise InvalidArgumentError(f"columns must be a sequence of column names, not {type(columns).__name__}")
    if not 1 <= len(names) <= MAX_COLUMNS:
        raise InvalidArgumentError(f"a clustered layout orders by 1 to {MAX_COLUMNS} columns, not {len(names)}")
    for name in names:
        if not isinstance(name, str):
            raise InvalidArgumentError(f"column names must be strings, not {name!r}")
        found = len(table.schema.get_all_field_indices(name))
        if found == 0:
            raise InvalidArgumentError(f"no column {name!r} to order by; the table has {table.schema.names}")
        if found > 1:
            raise InvalidArgumentError(f"column name {name!r} is ambiguous: the table has it {found} times")
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise InvalidArgumentError(f"each column may appear once in the order, but {repeated} repeat")
    return names


def _sortable(arr: pa.Array) -> pa.Array:
    """The same values in a type pyarrow's sort accepts (same order)."""
    t = pa.types
    arr = _decoded(arr)
    dtype = arr.type
    if dtype in _VIEW_TWIN:
        return arr.cast(_VIEW_TWIN[dtype])
    if t.is_float16(dtype):
        return arr.cast(pa.float32())
    if t.is_decimal32(dtype) or t.is_decimal64(dtype):
        return arr.cast(pa.decimal128(dtype.precision, dtype.scale))
    return arr


def _linear_order(data: list[pa.ChunkedArray | pa.Array]) -> Int64Array:
    fields = []
    for i, column in enumerate(data):
        chunks = [_sortable(c) for c in _chunks(column, "a column")]  # never none: the table has rows
        fields.append((f"k{i}", pa.chunked_array(chunks, type=chunks[0].type)))
    keys = pa.table(dict(fields))
    order = sort_indices(keys, [(name, "ascending") for name, _ in fields], "at_start")
    return np.asarray(order.to_numpy(zero_copy_only=False), dtype=np.int64)
