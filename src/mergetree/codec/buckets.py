"""Paimon's fixed-bucket placement: which bucket a row goes to, as Java's
`FixedBucketRowKeyExtractor` computes it.

- The bucket key (`bucket_key`): the ``bucket-key`` option's columns, else the primary key
  without the partition columns (Java's ``TableSchema.bucketKeys``).
- The function (`bucket-function.type`): ``default`` — ``Math.abs(hash % n)`` of the bucket-key
  row's `BinaryRow.hashCode()` (Murmur3, seed 42, over the row's bytes as Java lays them out;
  hashed in the compiled core, `mergetree._bucket.paimon_hashes`) — or ``mod`` —
  ``Math.floorMod(key, n)`` of a single INT or BIGINT key.  Any other (``hive``, ...) is refused
  by name: a row placed by a guessed function would be invisible to every reader that prunes
  buckets.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _bucket
from ..errors import MalformedArrowError, UnsupportedPaimonFeatureError
from .types import PaimonType, plain_array

__all__ = ["BUCKET_FUNCTIONS", "bucket_function", "bucket_key", "bucket_of", "buckets_of", "paimon_hashes"]

BUCKET_FUNCTIONS = ("default", "mod")
_HEADER_AND_SLOT = 8


def bucket_key(primary_keys: Sequence[str], partition_keys: Sequence[str],
               options: Mapping[str, str]) -> tuple[str, ...]:
    """The bucket-key columns: ``bucket-key`` (comma-separated, each trimmed) when set, else the
    primary key minus the partition keys (Java refuses a table whose partition keys cover its
    primary key; so is an empty bucket key here, by whoever places rows)."""
    text = (options.get("bucket-key") or "").strip()
    if text:
        return tuple(s.strip() for s in text.split(","))
    return tuple(k for k in primary_keys if k not in partition_keys)


def bucket_function(options: Mapping[str, str], key_types: Sequence[PaimonType]) -> str:
    """The table's bucket function, checked against its bucket key: "default" or "mod"."""
    name = (options.get("bucket-function.type") or "default").strip().lower()
    if name not in BUCKET_FUNCTIONS:
        raise UnsupportedPaimonFeatureError(
            f"Paimon option 'bucket-function.type' = {options.get('bucket-function.type')!r}: mergetree places rows "
            f"with Paimon's {' and '.join(BUCKET_FUNCTIONS)} bucket functions only")
    if name == "mod" and (len(key_types) != 1 or key_types[0].root not in ("INT", "BIGINT")):
        raise UnsupportedPaimonFeatureError(
            "Paimon option 'bucket-function.type' = 'mod' needs a bucket key of one INT or BIGINT column "
            f"(the table's: {', '.join(t.text for t in key_types)})")
    return name


_PER_MILLI = {"s": 0, "ms": 1, "us": 1_000, "ns": 1_000_000}


def _slot(arr: pa.Array, t: PaimonType) -> tuple[tuple[int, pa.Array, pa.Array | None], int]:
    """The core's slot kind for one bucket-key column, the column as the core reads it, and
    the most var-part bytes one of its rows takes."""
    arr = plain_array(arr)
    root = t.root
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE"):
        return (_bucket.SLOT_FIXED, arr.cast(t.arrow), None), 0
    if root == "BOOLEAN":
        return (_bucket.SLOT_BOOL, arr.cast(pa.bool_()), None), 0
    if root == "TIME":  # an int of milliseconds of the day
        return (_bucket.SLOT_FIXED, arr.cast(pa.time32("ms")), None), 0
    if root in ("STRING", "BYTES"):
        plain = arr.cast(pa.large_string() if root == "STRING" else pa.large_binary())
        lengths = pc.max(pc.binary_length(plain)).as_py() or 0
        return (_bucket.SLOT_LARGE_BINARY, plain, None), (lengths + 7) // 8 * 8
    if root == "DECIMAL":
        plain = arr.cast(pa.decimal128(t.precision, t.scale))
        if t.precision <= 18:
            return (_bucket.SLOT_DECIMAL_COMPACT, plain, None), 0
        return (_bucket.SLOT_DECIMAL, plain, None), 16
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = arr.type.unit if pa.types.is_timestamp(arr.type) else t.arrow.unit
        values = arr.cast(pa.timestamp(unit, tz=getattr(arr.type, "tz", None))).cast(pa.int64())
        per_milli = _PER_MILLI[unit]
        raw = values.to_numpy(zero_copy_only=False) if values.null_count == 0 else \
            values.fill_null(0).to_numpy(zero_copy_only=False)
        if per_milli == 0:
            millis, nanos = raw * 1000, np.zeros(len(raw), dtype=np.int32)
        else:
            millis = np.floor_divide(raw, per_milli)
            nanos = ((raw - millis * per_milli) * (1_000_000 // per_milli)).astype(np.int32)
        mask = None if values.null_count == 0 else values.is_null().to_numpy(zero_copy_only=False)
        millis_arr = pa.array(millis, pa.int64(), mask=mask)
        if t.precision <= 3:
            return (_bucket.SLOT_FIXED, millis_arr, None), 0
        return (_bucket.SLOT_TIMESTAMP, millis_arr, pa.array(nanos, pa.int32())), 8
    raise UnsupportedPaimonFeatureError(f"a bucket key of type {t.text} cannot be hashed by mergetree")


def paimon_hashes(columns: Sequence[pa.Array], types: Sequence[PaimonType]) -> np.ndarray:
    """`BinaryRow.hashCode()` of each row of the bucket-key columns (int32)."""
    slots, var = [], 0
    for arr, t in zip(columns, types):
        slot, extra = _slot(arr, t)
        slots.append(slot)
        var += extra
    arity = len(types)
    header = ((arity + 63 + 8) // 64) * 8
    try:  # the kernel checks every buffer (lengths, offsets) before its loop trusts a pointer
        return _bucket.paimon_hashes(slots, header + _HEADER_AND_SLOT * arity + var)
    except ValueError as exc:
        raise MalformedArrowError(f"a bucket-key column is malformed Arrow data: {exc}") from None


def buckets_of(columns: Sequence[pa.Array], types: Sequence[PaimonType], num_buckets: int,
               function: str = "default") -> np.ndarray:
    """The bucket (int32) of each row of the bucket-key columns under `function`."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets must be positive, not {num_buckets}")
    if function == "mod":
        values = plain_array(columns[0]).cast(pa.int64())
        if values.null_count:
            raise UnsupportedPaimonFeatureError("the mod bucket function cannot place a null bucket key")
        return np.mod(values.to_numpy(zero_copy_only=False), num_buckets).astype(np.int32)
    if function != "default":
        raise UnsupportedPaimonFeatureError(f"bucket function {function!r} is not one mergetree places rows with")
    hashes = paimon_hashes(columns, types).astype(np.int64)
    return np.abs(np.fmod(hashes, num_buckets)).astype(np.int32)  # Java: Math.abs(hash % n)


def bucket_of(values: Sequence[Any], types: Sequence[PaimonType], num_buckets: int,
              function: str = "default") -> int:
    """The bucket of one bucket-key row (values as `binary_row.decode_row` gives them)."""
    columns = [pa.array([v], type=t.arrow) for v, t in zip(values, types)]
    return int(buckets_of(columns, types, num_buckets, function)[0])
