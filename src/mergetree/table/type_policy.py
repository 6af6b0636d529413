"""The type policy: every Arrow type a table accepts, the type it is stored as, and what each
stored type supports.  One table (`FAMILIES`), used by every path that depends on a column's
type, by the docs (`policy_markdown`, pasted into docs/FORMAT.md and checked by a test) and by
the type-matrix test, which runs every operation on every example type listed here.

Input is normalized once on the way in: `Table.create` stores `stored_type(t)` for each column
and writes cast to it, so every later path (reads, filters, Top-N, optimize, indexes, the
advisor, Spark) sees only stored types.  A table stores what Paimon's schema can say
(`codec.types.paimon_type`, read back as Arrow: unsigned integers one size up, large, view,
dictionary and fixed-size variants as the plain ones, a zoned timestamp as UTC, what Parquet
gives back for the rest) and refuses the rest by name (uint64, time64, durations, decimal256,
null: `REFUSED_EXAMPLES`).  What a type cannot do is refused up front with an
`UnsupportedTypeError` naming the column, the type and the reason.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from ..codec.types import NoPaimonType, paimon_type, parse_type
from ..errors import UnsupportedTypeError

__all__ = ["CAPABILITIES", "FAMILIES", "INPUT_EXAMPLES", "REFUSED_EXAMPLES", "TypeFamily", "family_of",
           "integer_counts", "policy_markdown", "require", "storable", "stored_schema", "stored_type", "supports",
           "why_not"]

# what a column of a type can be used for; `require(column, type, capability)` enforces it
CAPABILITIES: dict[str, str] = {
    "key": "primary keys (ordered by the merge core)",
    "partition": "partitioning",
    "bucket": "bucketing (Paimon's bucket hash)",
    "filter_eq": "filters with = != IN NOT IN",
    "filter_range": "filters with < <= > >=",
    "order": "ordering (Top-N order_by, clustering with linear/zorder/hilbert/qdtree, sort_within)",
    "minmax": "min/max statistics (file skipping)",
    "bloom": "a Bloom filter index",
    "bitmap": "a bitmap index",
    "measure_sum": "the pre-aggregate measure sum",
    "measure_minmax": "the pre-aggregate measures min and max",
}
# every type can be stored as a value column and filtered with IS NULL / IS NOT NULL

_NESTED = "nested values have no order or equality here (their filters are 'is null' and 'is not null')"
_NULL = "an all-null column has no values; only 'is null' / 'is not null' apply"
_NO_PAIMON_BITMAP = "Paimon's bitmap file index (which Java's readers consult) takes no {}; use a Bloom filter"


@dataclass(frozen=True)
class TypeFamily:
    """A kind of stored type and what it supports; `cannot` gives each unsupported capability's
    reason."""

    name: str
    matches: Callable[[pa.DataType], bool]
    examples: tuple[pa.DataType, ...]
    cannot: dict[str, str] = field(default_factory=dict)

    def supports(self, capability: str) -> bool:
        return capability not in self.cannot


def _all_but(*keep: str, why: str) -> dict[str, str]:
    return {c: why for c in CAPABILITIES if c not in keep}


_t = pa.types
FAMILIES: tuple[TypeFamily, ...] = (
    TypeFamily("integer", _t.is_signed_integer, (pa.int8(), pa.int16(), pa.int32(), pa.int64())),
    TypeFamily("float", _t.is_floating, (pa.float32(), pa.float64()), {
        "bitmap": "floats rarely repeat exactly, and NaN and -0.0 make value equality ambiguous; use min/max "
                  "statistics or a Bloom filter"}),
    TypeFamily("bool", _t.is_boolean, (pa.bool_(),), {
        "bloom": "a boolean has two values, so a Bloom filter skips nothing",
        "measure_sum": "sum needs numbers", "measure_minmax": "min/max measures take numbers, strings and "
                                                              "temporal values"}),
    TypeFamily("string", _t.is_string, (pa.string(),), {"measure_sum": "sum needs numbers"}),
    TypeFamily("binary", _t.is_binary, (pa.binary(),), {"measure_sum": "sum needs numbers",
                                                         "bitmap": _NO_PAIMON_BITMAP.format("bytes")}),
    TypeFamily("date", _t.is_date32, (pa.date32(),), {"measure_sum": "sum needs numbers"}),
    TypeFamily("time", _t.is_time32, (pa.time32("ms"),), {"measure_sum": "sum needs numbers"}),
    TypeFamily("timestamp", _t.is_timestamp,
               (pa.timestamp("ms"), pa.timestamp("us"), pa.timestamp("ns"), pa.timestamp("us", "UTC")),
               {"measure_sum": "sum needs numbers"}),
    TypeFamily("decimal128", _t.is_decimal128, (pa.decimal128(12, 2), pa.decimal128(38, 10)),
               {"bitmap": _NO_PAIMON_BITMAP.format("decimals")}),
    TypeFamily("nested", _t.is_nested,
               (pa.list_(pa.field("element", pa.int64())), pa.list_(pa.field("element", pa.string())),
                pa.struct([("x", pa.int64()), ("y", pa.string())]), pa.map_(pa.string(), pa.int64())),
               _all_but(why=_NESTED)),
)
# input types that are stored as another type (the type-matrix test writes each of them too)
INPUT_EXAMPLES: tuple[pa.DataType, ...] = (
    pa.uint8(), pa.uint16(), pa.uint32(), pa.large_string(), pa.large_binary(), pa.binary(16),
    pa.string_view(), pa.binary_view(), pa.dictionary(pa.int32(), pa.string()), pa.dictionary(pa.int8(), pa.int64()),
    pa.float16(), pa.date64(), pa.time32("s"), pa.timestamp("s"), pa.timestamp("s", "Asia/Tokyo"),
    pa.decimal32(7, 2), pa.decimal64(15, 3), pa.large_list(pa.string()), pa.list_(pa.int32(), 2),
    pa.list_(pa.string_view()), pa.struct([("d", pa.date64()), ("s", pa.string_view())]),
)
# types no table stores (Paimon's schema has no type for them), each refused saying what to cast to
REFUSED_EXAMPLES: tuple[pa.DataType, ...] = (
    pa.uint64(), pa.time64("us"), pa.time64("ns"), pa.duration("s"), pa.duration("ms"), pa.duration("us"),
    pa.decimal256(50, 4), pa.null(),
)


def family_of(dtype: pa.DataType) -> TypeFamily:
    """The family of a stored type (`stored_type` first for input types)."""
    for family in FAMILIES:
        if family.matches(dtype):
            return family
    raise UnsupportedTypeError(f"type {dtype} is not a stored type")


def _refusal(dtype: pa.DataType) -> str | None:
    if isinstance(dtype, pa.BaseExtensionType):
        return (f"extension types are not stored (their meaning would be lost in the files); cast the column "
                f"to its storage type {dtype.storage_type}")
    if _t.is_interval(dtype):
        return "Parquet cannot store intervals; store months, days and nanoseconds as integer columns"
    if _t.is_run_end_encoded(dtype):
        return "run-end encoding is not stored; decode the column first (pyarrow.compute.run_end_decode)"
    if _t.is_list_view(dtype) or _t.is_large_list_view(dtype):
        return "list views are not stored; cast the column to a list type"
    return None


def stored_type(dtype: pa.DataType, column: str = "") -> pa.DataType:
    """The type a column of `dtype` is stored and read back as; UnsupportedTypeError (naming
    `column`) for a type a table cannot store."""
    why = _refusal(dtype)
    if why is not None:
        raise UnsupportedTypeError(f"column {column!r} has type {dtype}: {why}")
    try:
        return parse_type(paimon_type(dtype)).arrow  # what Paimon's schema says, read back
    except NoPaimonType as exc:
        raise UnsupportedTypeError(f"column {column!r} has type {dtype}: {exc}") from None


def stored_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` with every column's stored type (names, nullability and metadata kept)."""
    return pa.schema([f.with_type(stored_type(f.type, f.name)) for f in schema], metadata=schema.metadata)


def storable(dtype: pa.DataType) -> bool:
    """Whether a table can store a column of `dtype`."""
    try:
        stored_type(dtype, "")
    except UnsupportedTypeError:
        return False
    return True


def integer_counts(arr: pa.Array) -> pa.Array:
    """A temporal array (dates, times, timestamps, durations) as the integers it counts, in the
    same order: the keys the layout code sorts and cuts on.  No copy: a view of the buffers."""
    if not pa.types.is_temporal(arr.type):
        raise TypeError(f"{arr.type} is not a temporal type")
    return arr.view(pa.int32() if arr.type.bit_width == 32 else pa.int64())


def why_not(dtype: pa.DataType, capability: str) -> str | None:
    """None if a type (as stored) supports `capability`, else the reason it does not."""
    if capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}")
    return family_of(stored_type(dtype, "")).cannot.get(capability)


def supports(dtype: pa.DataType, capability: str) -> bool:
    return why_not(dtype, capability) is None


def require(column: str, dtype: pa.DataType, capability: str) -> None:
    """Raise UnsupportedTypeError naming the column, its type and the reason unless it supports `capability`."""
    why = why_not(dtype, capability)
    if why is not None:
        raise UnsupportedTypeError(
            f"column {column!r} has type {dtype}, which does not support {CAPABILITIES[capability]}: {why}")


def policy_markdown() -> str:
    """The policy as the Markdown tables in docs/FORMAT.md."""
    short = {"key": "key", "partition": "partition", "bucket": "bucket", "filter_eq": "= IN", "filter_range": "< >",
             "order": "order", "minmax": "min/max", "bloom": "Bloom", "bitmap": "bitmap",
             "measure_sum": "sum", "measure_minmax": "min/max measure"}
    lines = ["| family | stored types | " + " | ".join(short[c] for c in CAPABILITIES) + " |",
             "|---|---|" + "---|" * len(CAPABILITIES)]
    for family in FAMILIES:
        examples = ", ".join(f"`{t}`" for t in family.examples)
        marks = " | ".join("yes" if family.supports(c) else "no" for c in CAPABILITIES)
        lines.append(f"| {family.name} | {examples} | {marks} |")
    lines += ["", "| input type | stored as |", "|---|---|"]
    lines += [f"| `{t}` | `{stored_type(t)}` |" for t in INPUT_EXAMPLES]
    lines += ["", "| refused type | why |", "|---|---|"]
    for t in REFUSED_EXAMPLES:
        try:
            stored_type(t, "c")
        except UnsupportedTypeError as exc:
            lines.append(f"| `{t}` | {str(exc).split(': ', 1)[1]} |")
        else:
            raise AssertionError(f"{t} is listed as refused but is stored")
    return "\n".join(lines)
