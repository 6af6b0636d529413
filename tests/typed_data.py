"""Random Arrow data of any type the type policy lists, for the type-matrix tests: values drawn
from a small domain (so filters, Bloom and bitmap lookups hit repeated values), nulls mixed in,
and for floats the values that break naive comparisons (NaN, -0.0, infinities)."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergetree.table import type_policy

__all__ = ["POLICY_TYPES", "comparable", "random_array", "sql_mask", "type_id"]

# every stored example and every input type the policy names: a type added there is tested here
POLICY_TYPES: list[pa.DataType] = [t for f in type_policy.FAMILIES for t in f.examples] + list(
    type_policy.INPUT_EXAMPLES)


def type_id(t: pa.DataType) -> str:
    return str(t).replace(" ", "")


def _values(t: pa.DataType, base: np.ndarray) -> list[Any]:
    """Python values of stored type `t`, one per base integer (0 <= base < 64)."""
    ty = pa.types
    b = [int(x) for x in base]
    if ty.is_boolean(t):
        return [x % 2 == 1 for x in b]
    if ty.is_integer(t):
        return [x * 2 for x in b]  # fits int8 and every unsigned type
    if ty.is_floating(t):
        special = [float("nan"), -0.0, 0.0, float("inf"), float("-inf")]
        return [special[x % 5] if x >= 59 else x / 4 - 3 for x in b]
    if ty.is_string(t) or ty.is_large_string(t):
        return [("ключ-" if x % 7 == 0 else "k") + f"{x:03d}" for x in b]
    if ty.is_fixed_size_binary(t):
        return [bytes([x]) * t.byte_width for x in b]
    if ty.is_binary(t) or ty.is_large_binary(t):
        return [bytes([x, 0, 255 - x]) for x in b]
    if ty.is_date32(t):
        return [dt.date(1992, 1, 1) + dt.timedelta(days=37 * x) for x in b]
    if ty.is_time(t):
        return [dt.time(x // 3, x % 60, (7 * x) % 60) for x in b]
    if ty.is_timestamp(t):
        return [dt.datetime(2020, 1, 1) + dt.timedelta(hours=13 * x, seconds=x) for x in b]
    if ty.is_duration(t):
        return [dt.timedelta(seconds=x * 90 - 500) for x in b]
    if ty.is_decimal(t):
        return [Decimal(x * 137 - 4000).scaleb(-min(t.scale, 2)) for x in b]
    if ty.is_null(t):
        return [None] * len(b)
    if ty.is_list(t) or ty.is_large_list(t):
        inner = _values(t.value_type, base)
        return [[inner[i]] * (x % 3) for i, x in enumerate(b)]
    if ty.is_fixed_size_list(t):
        inner = _values(t.value_type, base)
        return [[inner[i]] * t.list_size for i in range(len(b))]
    if ty.is_struct(t):
        fields = [(t.field(i).name, _values(t.field(i).type, base)) for i in range(t.num_fields)]
        return [{name: vals[i] for name, vals in fields} for i in range(len(b))]
    if ty.is_map(t):
        keys, items = _values(t.key_type, base), _values(t.item_type, base)
        return [[(keys[i], items[i])] for i in range(len(b))]
    raise NotImplementedError(t)


def _shape(t: pa.DataType, stored: pa.DataType) -> pa.DataType:
    """The type whose values `_values` draws for input type `t`: its stored type, except where
    that drops the input's fixed size (a binary(16) is stored as binary, a fixed-size list as a
    list): those values are drawn at the input's size, which its stored type holds as well."""
    if pa.types.is_fixed_size_binary(t) or pa.types.is_fixed_size_list(t):
        return t
    return stored


def random_array(t: pa.DataType, n: int, rng: np.random.Generator, null_fraction: float = 0.1,
                 distinct: int = 64) -> pa.Array:
    """n values of input type `t` (built as its stored type, then cast: the cast is exact by
    construction, e.g. whole seconds for time32[s], whole days for date64, 16 bytes for binary(16))."""
    stored = type_policy.stored_type(t)
    base = rng.integers(0, distinct, n)
    values = _values(_shape(t, stored), base)
    nulls = rng.random(n) < null_fraction
    arr = pa.array([None if null else v for v, null in zip(values, nulls)], stored)
    if stored == t:
        return arr
    if pa.types.is_dictionary(t):
        return pc.dictionary_encode(arr).cast(t)
    return arr.cast(t)


def comparable(values: list[Any]) -> list[Any]:
    """Python values with NaN made equal to itself (for comparing lists of rows)."""
    def one(v: Any) -> Any:
        if isinstance(v, float) and v != v:
            return "NaN"
        if isinstance(v, dict):
            return {k: one(x) for k, x in v.items()}
        if isinstance(v, list):
            return [one(x) for x in v]
        if isinstance(v, tuple):
            return tuple(one(x) for x in v)
        return v
    return [one(v) for v in values]


def sql_mask(column: pa.ChunkedArray | pa.Array, op: str, value: Any) -> pa.Array:
    """Which rows a filter keeps under SQL's rules (a comparison with null is not true)."""
    if op == "is null":
        return column.is_null()
    if op == "is not null":
        return column.is_valid()
    typed: Any
    if op in ("in", "not in"):  # SQL: x IN (a, b) is x = a OR x = b (so -0.0 IN (0.0) holds)
        found = pa.array(np.zeros(len(column), dtype=bool))
        for v in value:
            found = pc.or_(found, pc.fill_null(pc.equal(column, pa.scalar(v, column.type)), False))
        mask = found if op == "in" else pc.invert(found)
        return pc.and_(mask, column.is_valid())
    typed = pa.scalar(value, column.type)
    fn = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
          ">=": pc.greater_equal}[op]
    return pc.fill_null(fn(column, typed), False)
