"""The type policy: every Arrow type a table accepts, the type it is stored as, and what each
stored type supports.  One table (`FAMILIES`), used by every path that depends on a column's
type, by the docs (`policy_markdown`, pasted into docs/FORMAT.md and checked by a test) and by
the type-matrix test, which runs every operation on every example type listed here.

Input is normalized once on the way in: `Table.create` stores `stored_type(t, format=...)` for
each column and writes cast to it, so every later path (reads, filters, Top-N, optimize, indexes,
the advisor, Spark) sees only stored types.  A Paimon table stores what Paimon's schema can say
(`codec.types.paimon_type`: unsigned integers one size up, large and fixed-size variants as the
plain ones, a zoned timestamp as UTC) and refuses the rest by name (uint64, time64, durations,
decimal256, null); a few capabilities differ there too (`TypeFamily.paimon_cannot`: Paimon's
bucket hash takes times, its bitmap file index takes no bytes or decimals).  The stored type is what Parquet gives back
(date64 -> date32, time32[s] -> time32[ms], timestamp[s] -> timestamp[ms]) or the plain type
behind an encoding or a width Arrow's kernels lack (string_view -> string, dictionary<v> -> v,
decimal32/64 -> decimal128, float16 -> float32).  What a type cannot do is refused up front
with an `UnsupportedTypeError` naming the column, the type and the reason.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from ..codec.types import NoPaimonType, paimon_type, parse_type
from ..errors import UnsupportedTypeError

__all__ = ["CAPABILITIES", "FAMILIES", "FORMATS", "INPUT_EXAMPLES", "TypeFamily", "family_of", "integer_counts",
           "policy_markdown", "require", "storable", "stored_schema", "stored_type", "supports", "why_not"]

FORMATS = ("paimon", "mergetree")  # the table formats `Table.create` makes (Paimon's by default)

# what a column of a type can be used for; `require(column, type, capability)` enforces it
CAPABILITIES: dict[str, str] = {
    "key": "primary keys (ordered by the merge core)",
    "partition": "partitioning",
    "bucket": "bucketing (Spark's bucket hash; Paimon's on Paimon tables)",
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
_NO_SPARK_TIME = "Spark has no time-of-day type, so there is no Spark bucket hash for it"
_NULL = "an all-null column has no values; only 'is null' / 'is not null' apply"
_NO_PAIMON_BITMAP = "Paimon's bitmap file index (which Java's readers consult) takes no {}; use a Bloom filter"


@dataclass(frozen=True)
class TypeFamily:
    """A kind of stored type and what it supports; `cannot` gives each unsupported capability's
    reason; on a Paimon table `paimon_cannot` adds refusals and `paimon_can` lifts some."""

    name: str
    matches: Callable[[pa.DataType], bool]
    examples: tuple[pa.DataType, ...]
    cannot: dict[str, str] = field(default_factory=dict)
    paimon_cannot: dict[str, str] = field(default_factory=dict)
    paimon_can: tuple[str, ...] = ()

    def cannot_on(self, table_format: str = "mergetree") -> dict[str, str]:
        if table_format != "paimon":
            return self.cannot
        return {c: why for c, why in {**self.cannot, **self.paimon_cannot}.items() if c not in self.paimon_can}

    def supports(self, capability: str, table_format: str = "mergetree") -> bool:
        return capability not in self.cannot_on(table_format)


def _all_but(*keep: str, why: str) -> dict[str, str]:
    return {c: why for c in CAPABILITIES if c not in keep}


_t = pa.types
FAMILIES: tuple[TypeFamily, ...] = (
    TypeFamily("integer", _t.is_integer,
               (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64())),
    TypeFamily("float", _t.is_floating, (pa.float32(), pa.float64()), {
        "bitmap": "floats rarely repeat exactly, and NaN and -0.0 make value equality ambiguous; use min/max "
                  "statistics or a Bloom filter"}),
    TypeFamily("bool", _t.is_boolean, (pa.bool_(),), {
        "bloom": "a boolean has two values, so a Bloom filter skips nothing",
        "measure_sum": "sum needs numbers", "measure_minmax": "min/max measures take numbers, strings and "
                                                              "temporal values"}),
    TypeFamily("string", lambda t: _t.is_string(t) or _t.is_large_string(t), (pa.string(), pa.large_string()),
               {"measure_sum": "sum needs numbers"}),
    TypeFamily("binary", lambda t: _t.is_binary(t) or _t.is_large_binary(t) or _t.is_fixed_size_binary(t),
               (pa.binary(), pa.large_binary(), pa.binary(16)), {"measure_sum": "sum needs numbers"},
               {"bitmap": _NO_PAIMON_BITMAP.format("bytes")}),
    TypeFamily("date", _t.is_date32, (pa.date32(),), {"measure_sum": "sum needs numbers"}),
    TypeFamily("time", lambda t: _t.is_time(t) and t.unit != "ns", (pa.time32("ms"), pa.time64("us")), {
        "bucket": _NO_SPARK_TIME, "measure_sum": "sum needs numbers"}, paimon_can=("bucket",)),
    TypeFamily("time64[ns]", _t.is_time64, (pa.time64("ns"),), {
        "bucket": _NO_SPARK_TIME, "measure_sum": "sum needs numbers",
        "bloom": "pyarrow gives time64[ns] values as datetime.time, which drops the nanoseconds, so a lookup "
                 "could miss a stored value; use time64[us]"}),
    TypeFamily("timestamp", _t.is_timestamp,
               (pa.timestamp("ms"), pa.timestamp("us"), pa.timestamp("ns"), pa.timestamp("us", "UTC")),
               {"measure_sum": "sum needs numbers"}),
    TypeFamily("duration", _t.is_duration, (pa.duration("s"), pa.duration("ms"), pa.duration("us")), {
        "bucket": "Spark has no duration type, so there is no Spark bucket hash for it",
        "bloom": "Parquet stores a duration as a bare INT64, so its values cannot be told from plain integers",
        "measure_sum": "sum needs numbers"}),
    TypeFamily("decimal128", _t.is_decimal128, (pa.decimal128(12, 2), pa.decimal128(38, 10)), {},
               {"bitmap": _NO_PAIMON_BITMAP.format("decimals")}),
    TypeFamily("decimal256", _t.is_decimal256, (pa.decimal256(50, 4),), {
        "key": "the merge core compares decimals of up to 128 bits; use decimal128 (38 digits)",
        "bucket": "Spark's decimals hold at most 38 digits"}),
    TypeFamily("null", _t.is_null, (pa.null(),), _all_but(why=_NULL)),
    TypeFamily("nested", _t.is_nested,
               (pa.list_(pa.int64()), pa.large_list(pa.string()), pa.list_(pa.int32(), 2),
                pa.struct([("x", pa.int64()), ("y", pa.string())]), pa.map_(pa.string(), pa.int64())),
               _all_but(why=_NESTED)),
)
# input types that are stored as another type (the type-matrix test writes each of them too)
INPUT_EXAMPLES: tuple[pa.DataType, ...] = (
    pa.string_view(), pa.binary_view(), pa.dictionary(pa.int32(), pa.string()), pa.dictionary(pa.int8(), pa.int64()),
    pa.float16(), pa.date64(), pa.time32("s"), pa.timestamp("s"), pa.timestamp("s", "Asia/Tokyo"),
    pa.decimal32(7, 2), pa.decimal64(15, 3), pa.list_(pa.string_view()),
    pa.struct([("d", pa.date64()), ("s", pa.string_view())]),
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


def stored_type(dtype: pa.DataType, column: str = "", table_format: str = "mergetree") -> pa.DataType:
    """The type a column of `dtype` is stored and read back as in a table of `table_format`;
    UnsupportedTypeError (naming `column`) for a type such a table cannot store."""
    why = _refusal(dtype)
    if why is not None:
        raise UnsupportedTypeError(f"column {column!r} has type {dtype}: {why}")
    if table_format == "paimon":
        try:
            return parse_type(paimon_type(dtype)).arrow  # what Paimon's schema says, read back
        except NoPaimonType as exc:
            raise UnsupportedTypeError(f"column {column!r} has type {dtype}: {exc}") from None
    if table_format != "mergetree":
        raise ValueError(f"unknown table format {table_format!r}")
    if _t.is_dictionary(dtype):
        return stored_type(dtype.value_type, column)
    if _t.is_string_view(dtype):
        return pa.string()
    if _t.is_binary_view(dtype):
        return pa.binary()
    if _t.is_float16(dtype):
        return pa.float32()
    if _t.is_date64(dtype):
        return pa.date32()
    if _t.is_time32(dtype) and dtype.unit == "s":
        return pa.time32("ms")
    if _t.is_timestamp(dtype) and dtype.unit == "s":
        return pa.timestamp("ms", dtype.tz)
    if _t.is_decimal(dtype) and dtype.bit_width < 128:
        return pa.decimal128(dtype.precision, dtype.scale)
    if _t.is_list(dtype):
        return pa.list_(_stored_field(dtype.value_field, column))
    if _t.is_large_list(dtype):
        return pa.large_list(_stored_field(dtype.value_field, column))
    if _t.is_fixed_size_list(dtype):
        return pa.list_(_stored_field(dtype.value_field, column), dtype.list_size)
    if _t.is_map(dtype):
        return pa.map_(_stored_field(dtype.key_field, column), _stored_field(dtype.item_field, column),
                       keys_sorted=dtype.keys_sorted)
    if _t.is_struct(dtype):
        return pa.struct([_stored_field(dtype.field(i), column) for i in range(dtype.num_fields)])
    return dtype


def _stored_field(f: pa.Field, column: str) -> pa.Field:
    return f.with_type(stored_type(f.type, f"{column}.{f.name}"))


def stored_schema(schema: pa.Schema, table_format: str = "mergetree") -> pa.Schema:
    """`schema` with every column's stored type (names, nullability and metadata kept)."""
    return pa.schema([f.with_type(stored_type(f.type, f.name, table_format)) for f in schema],
                     metadata=schema.metadata)


def storable(dtype: pa.DataType, table_format: str = "mergetree") -> bool:
    """Whether a table of `table_format` can store a column of `dtype`."""
    try:
        stored_type(dtype, "", table_format)
    except UnsupportedTypeError:
        return False
    return True


def integer_counts(arr: pa.Array) -> pa.Array:
    """A temporal array (dates, times, timestamps, durations) as the integers it counts, in the
    same order: the keys the layout code sorts and cuts on.  No copy: a view of the buffers."""
    if not pa.types.is_temporal(arr.type):
        raise TypeError(f"{arr.type} is not a temporal type")
    return arr.view(pa.int32() if arr.type.bit_width == 32 else pa.int64())


def why_not(dtype: pa.DataType, capability: str, table_format: str = "mergetree") -> str | None:
    """None if a type (as stored in a table of `table_format`) supports `capability`, else the
    reason it does not."""
    if capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}")
    return family_of(stored_type(dtype, "", table_format)).cannot_on(table_format).get(capability)


def supports(dtype: pa.DataType, capability: str, table_format: str = "mergetree") -> bool:
    return why_not(dtype, capability, table_format) is None


def require(column: str, dtype: pa.DataType, capability: str, table_format: str = "mergetree") -> None:
    """Raise UnsupportedTypeError naming the column, its type and the reason unless it supports `capability`."""
    why = why_not(dtype, capability, table_format)
    if why is not None:
        raise UnsupportedTypeError(
            f"column {column!r} has type {dtype}, which does not support {CAPABILITIES[capability]}: {why}")


def policy_markdown() -> str:
    """The policy as the Markdown tables in docs/FORMAT.md."""
    short = {"key": "key", "partition": "partition", "bucket": "bucket", "filter_eq": "= IN", "filter_range": "< >",
             "order": "order", "minmax": "min/max", "bloom": "Bloom", "bitmap": "bitmap",
             "measure_sum": "sum", "measure_minmax": "min/max measure"}

    def mark(family: TypeFamily, capability: str) -> str:
        here, there = family.supports(capability), family.supports(capability, "paimon")
        text = "yes" if here else "no"
        return text if here == there else f"{text} (Paimon: {'yes' if there else 'no'})"

    def on_paimon(dtype: pa.DataType) -> str:
        try:
            return f"`{stored_type(dtype, '', 'paimon')}`"
        except UnsupportedTypeError as exc:
            return "refused: " + str(exc).split(": ", 1)[1]

    lines = ["| family | stored types | " + " | ".join(short[c] for c in CAPABILITIES) + " |",
             "|---|---|" + "---|" * len(CAPABILITIES)]
    for family in FAMILIES:
        examples = ", ".join(f"`{t}`" for t in family.examples)
        marks = " | ".join(mark(family, c) for c in CAPABILITIES)
        lines.append(f"| {family.name} | {examples} | {marks} |")
    lines += ["", "| input type | stored as | in a Paimon table |", "|---|---|---|"]
    lines += [f"| `{t}` | `{stored_type(t)}` | {on_paimon(t)} |" for t in INPUT_EXAMPLES]
    lines += ["", "| stored type | in a Paimon table |", "|---|---|"]
    lines += [f"| `{t}` | {on_paimon(t)} |" for family in FAMILIES for t in family.examples
              if not storable(t, "paimon") or stored_type(t, "", "paimon") != t]
    return "\n".join(lines)
