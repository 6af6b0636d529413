"""Checks on Arrow data that comes from outside, done once per batch before any C code
(ours or pyarrow's kernels) reads it.

pyarrow's `Array.from_buffers` and any `__arrow_c_stream__` producer can hand over arrays
whose offsets decrease, point past their data, or whose dictionary indices are out of
range; reading them crashes the process.  `validate(full=True)` finds all of that, but it
also checks values (UTF-8 in strings, whole days in date64, decimal precision), which
protects nothing here and costs: UTF-8 alone is about 20x the rest for 128-byte strings.
So each array is checked as its *structural twin*, a zero-copy view with the same buffers
and plain physical types (strings as binary, temporals as integers, decimals as
fixed-size binary, nested types recursively).
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import MalformedArrowError

__all__ = ["check_array", "check_batch", "is_implicit_cast", "sort_indices", "structural_type"]

_BYTES = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary(), pa.string_view(): pa.binary_view()}


def _twin_field(f: pa.Field) -> pa.Field:
    return f.with_type(structural_type(f.type))


def structural_type(t: pa.DataType) -> pa.DataType:
    """The type with the same buffers and no value rules (see the module's docstring)."""
    types = pa.types
    if t in _BYTES:
        return _BYTES[t]
    if types.is_date32(t) or types.is_time32(t):
        return pa.int32()
    if types.is_date64(t) or types.is_time64(t) or types.is_timestamp(t) or types.is_duration(t):
        return pa.int64()
    if types.is_decimal(t):
        return pa.binary(t.byte_width)
    if types.is_dictionary(t):
        return pa.dictionary(t.index_type, structural_type(t.value_type))
    if types.is_map(t):
        return pa.map_(_twin_field(t.key_field), _twin_field(t.item_field))
    if types.is_large_list(t):
        return pa.large_list(_twin_field(t.value_field))
    if types.is_fixed_size_list(t):
        return pa.list_(_twin_field(t.value_field), t.list_size)
    if types.is_list(t):
        return pa.list_(_twin_field(t.value_field))
    if types.is_struct(t):
        return pa.struct([_twin_field(t.field(i)) for i in range(t.num_fields)])
    return t


def _validate(arr: pa.Array) -> None:
    twin = structural_type(arr.type)
    if twin != arr.type:
        try:
            arr = arr.view(twin)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
            pass  # a layout we do not mirror: check it as it is
    arr.validate(full=True)


def check_array(arr: pa.Array | pa.ChunkedArray, what: str) -> None:
    """Raise MalformedArrowError (naming `what`) unless the array is structurally sound."""
    try:
        if isinstance(arr, pa.ChunkedArray):
            for chunk in arr.chunks:
                _validate(chunk)
        else:
            _validate(arr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        raise MalformedArrowError(f"{what} is malformed Arrow data: {exc}") from None


def check_batch(batch: pa.RecordBatch | pa.Table, where: str) -> None:
    """Check every column of a batch or table; `where` says which input it is (e.g. "run 2")."""
    for name, column in zip(batch.schema.names, batch.columns):
        check_array(column, f"{where}, column {name!r},")



_TIME_UNITS = ("s", "ms", "us", "ns")


def is_implicit_cast(source: pa.DataType, target: pa.DataType) -> bool:
    """May data of type `source` be cast to `target` without the caller asking?

    Only within one kind of value, and only where pyarrow's safe cast then checks that
    every value survives exactly: integers to integers, floats or decimals (overflow and
    float precision checked), floats to wider floats, decimals to decimals (rescaling
    checked), strings to strings, binaries to binaries, dates, timestamps of one zone or
    between zones (an instant stays itself), times and durations between units (overflow and
    truncation checked), and so on inside lists and structs.  Never a string into a number, a
    number into a string, or a float into an integer: those need the caller's explicit cast."""
    t = pa.types
    if source == target or t.is_null(source):
        return True
    if t.is_dictionary(source):
        return is_implicit_cast(source.value_type, target)
    if t.is_integer(source):
        return t.is_integer(target) or t.is_floating(target) or t.is_decimal(target)
    if t.is_floating(source):
        return t.is_floating(target) and source.bit_width <= target.bit_width
    if t.is_decimal(source):
        return t.is_decimal(target)
    strings = (pa.string(), pa.large_string(), pa.string_view())
    binaries = (pa.binary(), pa.large_binary(), pa.binary_view())
    if source in strings:
        return target in strings
    if source in binaries or t.is_fixed_size_binary(source):
        return target in binaries
    if t.is_date(source):
        return t.is_date(target)
    if t.is_timestamp(source):
        # the same instants whatever zone labels them (a Paimon table's TIMESTAMP_LTZ is UTC); a
        # zone-less timestamp is a wall clock, which no zone may be guessed for
        return t.is_timestamp(target) and (source.tz == target.tz or None not in (source.tz, target.tz))
    if t.is_time(source):
        return t.is_time(target)
    if t.is_duration(source):
        return t.is_duration(target)
    if (t.is_list(source) or t.is_large_list(source) or t.is_fixed_size_list(source)) and (
            t.is_list(target) or t.is_large_list(target)):
        return is_implicit_cast(source.value_type, target.value_type)
    if t.is_struct(source) and t.is_struct(target):
        names = [source.field(i).name for i in range(source.num_fields)]
        if names != [target.field(i).name for i in range(target.num_fields)]:
            return False
        return all(is_implicit_cast(source.field(i).type, target.field(i).type) for i in range(source.num_fields))
    return False


_PER_KEY_NULLS = tuple(int(p) for p in pa.__version__.split(".")[:2]) >= (25, 0)


def sort_indices(data: pa.Table | pa.RecordBatch, keys: list[tuple[str, str]], null_placement: str) -> pa.Array:
    """`pc.sort_indices` with one null placement for every key, on every pyarrow we support
    (from 25 on the placement goes with each key; before, with the options)."""
    if _PER_KEY_NULLS:
        return pc.sort_indices(data, sort_keys=[(name, order, null_placement) for name, order in keys])
    return pc.sort_indices(data, sort_keys=keys, null_placement=null_placement)
