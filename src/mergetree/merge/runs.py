"""Sorted runs as batch streams, and the column plans the core needs.

Everything here runs with the GIL and touches each input batch once: pull it,
check its schema, normalize exotic key types (dictionary, views, float16, small
decimals) and export the key / sequence / kind columns to the core through the
Arrow C Data Interface.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _core
from ..errors import InvalidRowError, SchemaMismatchError, UnsupportedTypeError
from .arrow_input import check_batch
from .row_kind import RowKind

__all__ = ["KeyColumnPlan", "RunLike", "RunSource", "check_kind_values", "check_same_schema",
           "check_sequence_values", "plan_key_column"]

RunLike = Any  # pa.Table | pa.RecordBatch | pa.RecordBatchReader | Arrow stream | iterable of batches

_INTEGER_CLASSES = {
    pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32", pa.int64(): "int64",
    pa.uint8(): "uint8", pa.uint16(): "uint16", pa.uint32(): "uint32", pa.uint64(): "uint64",
}


def _iter_batches(obj: RunLike) -> tuple[Iterator[pa.RecordBatch], pa.Schema | None]:
    """An iterator of record batches over any supported run object, and its schema if known."""
    if isinstance(obj, pa.Table):
        return iter(obj.to_batches()), obj.schema
    if isinstance(obj, pa.RecordBatch):
        return iter((obj,)), obj.schema
    if isinstance(obj, pa.RecordBatchReader):
        return iter(obj), obj.schema
    if hasattr(obj, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(obj)
        return iter(reader), reader.schema
    if hasattr(obj, "__arrow_c_array__"):
        batch = pa.record_batch(obj)
        return iter((batch,)), batch.schema
    if isinstance(obj, (str, bytes)) or not isinstance(obj, Iterable):
        raise TypeError(
            f"a run must be a pyarrow Table, RecordBatch, RecordBatchReader, an object with "
            f"__arrow_c_stream__, or an iterable of record batches, not {type(obj).__name__}"
        )
    return _flatten_items(obj), None


def _flatten_items(items: Iterable[Any]) -> Iterator[pa.RecordBatch]:
    for item in items:
        if isinstance(item, pa.RecordBatch):
            yield item
        elif isinstance(item, pa.Table):
            yield from item.to_batches()
        elif hasattr(item, "__arrow_c_array__"):
            yield pa.record_batch(item)
        else:
            raise TypeError(f"a run's items must be record batches, not {type(item).__name__}")


class RunSource:
    """One sorted run, pulled a batch at a time; empty batches are skipped."""

    def __init__(self, index: int, obj: RunLike) -> None:
        self.index = index
        self._batches, self.schema = _iter_batches(obj)
        self._peeked: pa.RecordBatch | None = None
        self.batches_pulled = 0

    def peek_schema(self) -> pa.Schema | None:
        """The run's schema; an iterable run is peeked at (one batch pulled) to learn it."""
        if self.schema is None:
            self._peeked = self._pull()
            if self._peeked is not None:
                self.schema = self._peeked.schema
        return self.schema

    def next_batch(self) -> pa.RecordBatch | None:
        if self._peeked is not None:
            batch, self._peeked = self._peeked, None
            return batch
        return self._pull()

    def _pull(self) -> pa.RecordBatch | None:
        for batch in self._batches:
            self.batches_pulled += 1
            if batch.num_rows:
                check_batch(batch, f"run {self.index} batch {self.batches_pulled - 1}")
                return batch
        return None


def check_same_schema(reference: pa.Schema, schema: pa.Schema, run: int) -> None:
    """Runs must agree on column names and types (nullability and metadata may differ)."""
    if schema.names == reference.names and schema.types == reference.types:
        return
    ref_names = set(reference.names)
    for name in reference.names:
        if name not in schema.names:
            raise SchemaMismatchError(f"run {run} has no column {name!r} (run 0 has it)")
    for field in schema:
        if field.name not in ref_names:
            raise SchemaMismatchError(f"run {run} has an extra column {field.name!r} that run 0 lacks")
        ref_type = reference.field(field.name).type
        if field.type != ref_type:
            raise SchemaMismatchError(
                f"run {run} column {field.name!r} is {field.type}, but run 0 has {ref_type}"
            )
    raise SchemaMismatchError(
        f"run {run} orders its columns {schema.names}, run 0 orders them {reference.names}"
    )


@dataclass(frozen=True)
class KeyColumnPlan:
    """How one key column reaches the core: its comparator class and a normalizer."""

    name: str
    key_class: int
    width: int
    normalize: Callable[[pa.Array], pa.Array] | None


Normalize = Callable[[pa.Array], pa.Array]


def _identity_or(fn: Normalize | None, inner: KeyColumnPlan) -> Normalize | None:
    if fn is None:
        return inner.normalize
    if inner.normalize is None:
        return fn
    return lambda arr: inner.normalize(fn(arr))  # type: ignore[misc]


def plan_key_column(name: str, dtype: pa.DataType) -> KeyColumnPlan:
    """Map an Arrow type onto a core comparator class, or raise UnsupportedTypeError."""
    classes = _core.KEY_CLASSES
    if dtype in _INTEGER_CLASSES:
        return KeyColumnPlan(name, classes[_INTEGER_CLASSES[dtype]], dtype.bit_width // 8, None)
    if pa.types.is_float64(dtype):
        return KeyColumnPlan(name, classes["float64"], 8, None)
    if pa.types.is_float32(dtype):
        return KeyColumnPlan(name, classes["float32"], 4, None)
    if pa.types.is_float16(dtype):
        inner = plan_key_column(name, pa.float32())
        return KeyColumnPlan(name, inner.key_class, inner.width, lambda a: a.cast(pa.float32()))
    if pa.types.is_boolean(dtype):
        return KeyColumnPlan(name, classes["bool"], 1, None)
    if pa.types.is_date32(dtype) or pa.types.is_time32(dtype):
        return KeyColumnPlan(name, classes["int32"], 4, None)  # same buffer layout as int32
    if (pa.types.is_date64(dtype) or pa.types.is_time64(dtype)
            or pa.types.is_timestamp(dtype) or pa.types.is_duration(dtype)):
        return KeyColumnPlan(name, classes["int64"], 8, None)  # same buffer layout as int64
    if pa.types.is_decimal128(dtype):
        return KeyColumnPlan(name, classes["decimal128"], 16, None)
    if pa.types.is_decimal(dtype) and dtype.bit_width < 128:
        target = pa.decimal128(max(dtype.precision, 1), dtype.scale)
        return KeyColumnPlan(name, classes["decimal128"], 16, lambda a: a.cast(target))
    if pa.types.is_string(dtype) or pa.types.is_binary(dtype):
        return KeyColumnPlan(name, classes["binary"], 0, None)
    if pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype):
        return KeyColumnPlan(name, classes["large_binary"], 0, None)
    if pa.types.is_fixed_size_binary(dtype):
        return KeyColumnPlan(name, classes["fixed_binary"], dtype.byte_width, None)
    if pa.types.is_string_view(dtype) or pa.types.is_binary_view(dtype):
        target = pa.large_string() if pa.types.is_string_view(dtype) else pa.large_binary()
        inner = plan_key_column(name, target)
        return KeyColumnPlan(name, inner.key_class, inner.width, lambda a: a.cast(target))
    if pa.types.is_dictionary(dtype):
        inner = plan_key_column(name, dtype.value_type)
        return KeyColumnPlan(name, inner.key_class, inner.width,
                             _identity_or(lambda a: a.dictionary_decode(), inner))
    raise UnsupportedTypeError(
        f"key column {name!r} has type {dtype}, which cannot be a merge key; supported: integers, "
        f"floats, bool, dates, times, timestamps, durations, decimals up to 128 bits, strings, "
        f"binaries (also views and dictionary-encoded)"
    )


def check_sequence_values(arr: pa.Array, run: int, first_pos: int, column: str) -> None:
    if arr.null_count:
        row = first_pos + int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise InvalidRowError(
            f"run {run} row {row}: sequence column {column!r} is null", run=run, row=row, column=column
        )


def check_kind_values(arr: pa.Array, run: int, first_pos: int, column: str) -> None:
    bad = None
    if arr.null_count:
        bad = arr.is_null().to_numpy(zero_copy_only=False)
    else:
        bounds = pc.min_max(arr)
        if bounds["min"].as_py() < min(RowKind) or bounds["max"].as_py() > max(RowKind):
            values = arr.to_numpy()
            bad = (values < min(RowKind)) | (values > max(RowKind))
    if bad is not None:
        row = first_pos + int(np.flatnonzero(bad)[0])
        raise InvalidRowError(
            f"run {run} row {row}: row-kind column {column!r} must hold 0 (+I), 1 (-U), 2 (+U) or "
            f"3 (-D), found {arr[row - first_pos].as_py()!r}",
            run=run, row=row, column=column,
        )
