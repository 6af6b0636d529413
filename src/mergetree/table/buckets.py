"""Spark-compatible bucket ids: ``pmod(hash(k1, k2, ...), n)`` exactly as Spark SQL computes it.

Spark's ``hash`` (also what ``bucketBy`` uses) is Murmur3 x86_32 with seed 42, folded over
the key columns in order: the running hash is the seed of the next column, and a null
leaves it unchanged.  The kernels live in the Cython module ``mergetree._bucket``; this
module maps Arrow types onto them and normalizes values to what Spark stores:

=====================================  =======================================================
Arrow type                             hashed as (Spark type)
=====================================  =======================================================
bool                                   int 1 / 0 (BOOLEAN)
int8, int16, int32                     int (TINYINT, SMALLINT, INT)
int64                                  long (BIGINT)
uint8, uint16                          int (Spark reads Parquet UINT_8 as SMALLINT, UINT_16
                                       as INT)
uint32                                 long (Parquet UINT_32 is read as BIGINT)
uint64                                 decimal(20, 0) (Parquet UINT_64 is read as
                                       DECIMAL(20,0)), i.e. the bytes of the unscaled value
float32, float64                       IEEE bits as int / long; -0.0 as 0.0 and every NaN as
                                       Java's canonical NaN (FLOAT, DOUBLE)
date32, date64                         int days since the epoch (DATE); date64 milliseconds
                                       are floored to days
timestamp (any unit, with or without   long microseconds since the epoch (TIMESTAMP,
time zone)                             TIMESTAMP_NTZ); s and ms are scaled up, ns is floored
                                       to µs as Spark does when it takes an Arrow ns timestamp
                                       (createDataFrame) or parses extra fraction digits
decimal32/64/128, decimal256 up to     unscaled long when precision <= 18, else the
precision 38                           big-endian two's-complement bytes of the unscaled
                                       BigInteger (DECIMAL(p, s)); the precision is the type's
string, large_string, string_view      UTF-8 bytes (STRING, default UTF8_BINARY collation)
binary, large_binary, binary_view,     bytes (BINARY)
fixed_size_binary
dictionary, run-end encoded            their decoded values
null                                   always null: the hash passes through
=====================================  =======================================================

Other types raise :class:`~mergetree.errors.UnsupportedTypeError`: float16 (no Spark type;
Spark rejects Parquet FLOAT16), time32/time64 (Spark 4.3 rejects TIME in SQL and Parquet by
default), duration (Spark reads a Parquet duration as BIGINT in its own unit but an Arrow
duration as a microsecond interval: cast it to the int64 you mean), nested and extension
types.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _bucket
from ..errors import InvalidArgumentError, SchemaMismatchError, UnsupportedTypeError
from ..merge.arrow_input import check_array

__all__ = ["SPARK_HASH_SEED", "bucket_ids", "check_hashable", "spark_hash"]

SPARK_HASH_SEED = 42

# folds one array (never chunked) into a slice of the running hash array
Fold = Callable[[pa.Array, np.ndarray], None]

_INT_WIDTHS = {
    pa.int8(): (1, True), pa.int16(): (2, True), pa.int32(): (4, True),
    pa.uint8(): (1, False), pa.uint16(): (2, False),
}
_MICROS_PER_UNIT_UP = {"s": 1_000_000, "ms": 1_000, "us": 1}
_MILLIS_PER_DAY = 86_400_000


def bucket_ids(data: pa.Table | pa.RecordBatch, columns: list[str] | str, num_buckets: int) -> np.ndarray:
    """Each row's bucket: Spark's ``pmod(hash(columns...), num_buckets)``, as an int32 array."""
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, (int, np.integer)) \
            or not 1 <= num_buckets <= 2**31 - 1:
        raise InvalidArgumentError(
            f"num_buckets must be an integer from 1 to 2147483647, not {num_buckets!r}")
    return _bucket.pmod(spark_hash(data, columns), int(num_buckets))


def spark_hash(data: pa.Table | pa.RecordBatch, columns: list[str] | str) -> np.ndarray:
    """Each row's Spark ``hash(columns...)`` (Murmur3, seed 42), as an int32 array."""
    if not isinstance(data, (pa.Table, pa.RecordBatch)):
        raise TypeError(f"data must be a pyarrow Table or RecordBatch, not {type(data).__name__}")
    names = [columns] if isinstance(columns, str) else list(columns)
    if not names:
        raise InvalidArgumentError("spark_hash needs at least one column (Spark's hash() does too)")
    hashes = np.full(data.num_rows, SPARK_HASH_SEED, dtype=np.int32)
    for name in names:
        column = _column(data, name)
        fold = _plan(name, column.type)
        check_array(column, f"bucket column {name!r}")
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        start = 0
        for chunk in chunks:
            stop = start + len(chunk)
            if stop > start:
                fold(chunk, hashes[start:stop])
            start = stop
    return hashes


def _column(data: pa.Table | pa.RecordBatch, name: str) -> pa.Array | pa.ChunkedArray:
    if not isinstance(name, str):
        raise InvalidArgumentError(f"column names must be strings, not {name!r}")
    indices = data.schema.get_all_field_indices(name)
    if not indices:
        raise SchemaMismatchError(f"no column {name!r}; the data has {data.schema.names}")
    if len(indices) > 1:
        raise SchemaMismatchError(f"column name {name!r} is ambiguous: the data has it {len(indices)} times")
    return data.column(indices[0])


def check_hashable(name: str, dtype: pa.DataType) -> None:
    """Raise UnsupportedTypeError unless a column of this type has a Spark bucket hash."""
    _plan(name, dtype)


def _plan(name: str, dtype: pa.DataType) -> Fold:
    """The fold for one column's Arrow type, or UnsupportedTypeError."""
    t = pa.types
    if dtype in _INT_WIDTHS:
        width, signed = _INT_WIDTHS[dtype]
        return lambda a, h: _bucket.fold_int(a, h, width, signed)
    if t.is_int64(dtype):
        return lambda a, h: _bucket.fold_long(a, h, 8, True)
    if t.is_uint32(dtype):
        return lambda a, h: _bucket.fold_long(a, h, 4, False)
    if t.is_uint64(dtype):
        as_decimal = pa.decimal128(20, 0)
        return lambda a, h: _bucket.fold_decimal(a.cast(as_decimal), h, 20)
    if t.is_boolean(dtype):
        return _bucket.fold_bool
    if t.is_float64(dtype):
        return _bucket.fold_double
    if t.is_float32(dtype):
        return _bucket.fold_float
    if t.is_date32(dtype):
        return lambda a, h: _bucket.fold_int(a, h, 4, True)
    if t.is_date64(dtype):
        return lambda a, h: _bucket.fold_int(_date64_to_days(a, name), h, 4, True)
    if t.is_timestamp(dtype):
        unit = dtype.unit
        return lambda a, h: _bucket.fold_long(_timestamp_to_micros(a, unit, name), h, 8, True)
    if t.is_decimal(dtype):
        return _plan_decimal(name, dtype)
    if t.is_string(dtype) or t.is_binary(dtype):
        return lambda a, h: _bucket.fold_binary(a, h, False)
    if t.is_large_string(dtype) or t.is_large_binary(dtype):
        return lambda a, h: _bucket.fold_binary(a, h, True)
    if t.is_string_view(dtype) or t.is_binary_view(dtype):
        target = pa.large_string() if t.is_string_view(dtype) else pa.large_binary()
        return lambda a, h: _bucket.fold_binary(a.cast(target), h, True)
    if t.is_fixed_size_binary(dtype):
        width = dtype.byte_width
        return lambda a, h: _bucket.fold_fixed_binary(a, h, width)
    if t.is_dictionary(dtype):
        inner = _plan(name, dtype.value_type)
        return lambda a, h: inner(a.dictionary_decode(), h)
    if t.is_run_end_encoded(dtype):
        inner = _plan(name, dtype.value_type)
        return lambda a, h: inner(pc.run_end_decode(a), h)
    if t.is_null(dtype):
        return lambda a, h: None  # every value null: Spark's hash passes the seed through
    raise UnsupportedTypeError(_unsupported_message(name, dtype))


def _plan_decimal(name: str, dtype: pa.DataType) -> Fold:
    precision = dtype.precision
    if precision > 38:
        raise UnsupportedTypeError(
            f"column {name!r} is {dtype}: Spark's decimals hold at most 38 digits")
    if pa.types.is_decimal128(dtype):
        return lambda a, h: _bucket.fold_decimal(a, h, precision)
    as_128 = pa.decimal128(precision, dtype.scale)
    return lambda a, h: _bucket.fold_decimal(a.cast(as_128), h, precision)


def _unsupported_message(name: str, dtype: pa.DataType) -> str:
    t = pa.types
    if t.is_float16(dtype):
        why = "Spark has no half-precision float type; cast to float32 if Spark sees it as FLOAT"
    elif t.is_time(dtype):
        why = "Spark 4.3 does not support the TIME type by default"
    elif t.is_duration(dtype):
        why = ("Spark reads a Parquet duration as BIGINT in its own unit but an Arrow duration "
               "as a microsecond interval; cast to the int64 Spark will see")
    else:
        why = "it has no Spark bucket hash here"
    return (
        f"bucket column {name!r} has type {dtype}: {why}. Supported: bool, integers, float32/64, "
        f"date32/64, timestamps, decimals up to precision 38, strings and binaries (also large, "
        f"view, fixed-size, dictionary-encoded and run-end encoded), null"
    )


def _values(arr: pa.Array, np_dtype: type) -> np.ndarray:
    """A read-only numpy view of the array's value slots (null slots hold anything)."""
    itemsize = np.dtype(np_dtype).itemsize
    return np.frombuffer(arr.buffers()[1], dtype=np_dtype, count=len(arr), offset=arr.offset * itemsize)


def _with_values(arr: pa.Array, dtype: pa.DataType, values: np.ndarray) -> pa.Array:
    """A new array of `dtype` holding `values` and the nulls of `arr`."""
    validity = pc.is_valid(arr).buffers()[1] if arr.null_count else None
    return pa.Array.from_buffers(dtype, len(arr), [validity, pa.py_buffer(values)], arr.null_count)


def _date64_to_days(arr: pa.Array, name: str) -> pa.Array:
    """Days since the epoch (floored), as Spark stores a date."""
    if len(arr) == 0:
        return pa.array([], pa.date32())
    days = np.floor_divide(_values(arr, np.int64), _MILLIS_PER_DAY)
    valid = days if not arr.null_count else days[pc.is_valid(arr).to_numpy(zero_copy_only=False)]
    if valid.size and (valid.min() < -(2**31) or valid.max() > 2**31 - 1):
        raise InvalidArgumentError(
            f"column {name!r}: a date64 value is beyond Spark's dates (int32 days since the epoch)")
    return _with_values(arr, pa.date32(), days.astype(np.int32))


def _timestamp_to_micros(arr: pa.Array, unit: str, name: str) -> pa.Array:
    """Microseconds since the epoch, as Spark stores a timestamp."""
    if unit == "us" or len(arr) == 0:
        return arr
    if unit == "ns":
        return _with_values(arr, pa.int64(), np.floor_divide(_values(arr, np.int64), 1000))
    raw = arr.cast(pa.int64())
    try:
        return pc.multiply_checked(raw, _MICROS_PER_UNIT_UP[unit])
    except pa.ArrowInvalid:
        raise InvalidArgumentError(
            f"column {name!r}: a timestamp[{unit}] value does not fit Spark's microsecond "
            f"timestamps (int64 microseconds)") from None
