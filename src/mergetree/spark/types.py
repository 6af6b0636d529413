"""Arrow types as Spark sees them: what a read must yield, and the DDL of a table.

Every stored type of the type policy (`mergetree.table.type_policy`) that Spark can hold maps to
the Arrow type PySpark converts to and from that Spark type; the rest (time of day, decimals
over 38 digits) are refused with the column named, before any task runs."""
from __future__ import annotations

import pyarrow as pa

from ..errors import UnsupportedTypeError

__all__ = ["spark_arrow_type", "spark_ddl", "spark_schema", "to_spark_batch"]

_UINT64 = pa.decimal128(20, 0)  # Spark has no unsigned types; every uint64 fits 20 digits


def _field(f: pa.Field, column: str) -> pa.Field:
    return pa.field(f.name, spark_arrow_type(f.type, f"{column}.{f.name}"), nullable=True)


def spark_arrow_type(dtype: pa.DataType, column: str = "") -> pa.DataType:
    """The Arrow type Spark uses for a column of this type (what read() must yield)."""
    t = pa.types
    where = f"column {column!r} " if column else ""
    if t.is_dictionary(dtype):
        return spark_arrow_type(dtype.value_type, column)
    if t.is_large_string(dtype) or t.is_string_view(dtype):
        return pa.string()
    if t.is_large_binary(dtype) or t.is_binary_view(dtype) or t.is_fixed_size_binary(dtype):
        return pa.binary()
    if t.is_timestamp(dtype):
        return pa.timestamp("us", tz="UTC" if dtype.tz else None)
    if t.is_date64(dtype):
        return pa.date32()
    if t.is_uint8(dtype):
        return pa.int16()
    if t.is_uint16(dtype):
        return pa.int32()
    if t.is_uint32(dtype):
        return pa.int64()
    if t.is_uint64(dtype):
        return _UINT64
    if t.is_float16(dtype):
        return pa.float32()
    if t.is_duration(dtype):
        return pa.duration("us")  # Spark's DayTimeIntervalType
    if t.is_decimal(dtype):
        if dtype.precision > 38:
            raise UnsupportedTypeError(f"{where}has type {dtype}: Spark's decimals hold at most 38 digits")
        return pa.decimal128(dtype.precision, dtype.scale)
    if t.is_list(dtype) or t.is_large_list(dtype) or t.is_fixed_size_list(dtype):
        return pa.list_(_field(dtype.value_field, column))
    if t.is_map(dtype):
        return pa.map_(spark_arrow_type(dtype.key_type, f"{column}.key"),
                       _field(dtype.item_field, f"{column}.value"))
    if t.is_struct(dtype):
        return pa.struct([_field(dtype.field(i), column) for i in range(dtype.num_fields)])
    if (t.is_signed_integer(dtype) or t.is_floating(dtype) or t.is_boolean(dtype) or t.is_string(dtype)
            or t.is_binary(dtype) or t.is_date32(dtype) or t.is_null(dtype)):
        return dtype
    raise UnsupportedTypeError(f"{where}has type {dtype}, for which Spark has no column type")


def spark_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, spark_arrow_type(f.type, f.name), nullable=True) for f in schema])


_DDL_NAMES = {pa.int8(): "byte", pa.int16(): "short", pa.int32(): "int", pa.int64(): "long",
              pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean", pa.string(): "string",
              pa.binary(): "binary", pa.date32(): "date", pa.timestamp("us", tz="UTC"): "timestamp",
              pa.timestamp("us"): "timestamp_ntz", pa.duration("us"): "interval day to second", pa.null(): "void"}


def _ddl_type(dtype: pa.DataType) -> str:
    """Spark's DDL for a type `spark_arrow_type` returned."""
    if pa.types.is_decimal(dtype):
        return f"decimal({dtype.precision},{dtype.scale})"
    if pa.types.is_list(dtype):
        return f"array<{_ddl_type(dtype.value_type)}>"
    if pa.types.is_map(dtype):
        return f"map<{_ddl_type(dtype.key_type)},{_ddl_type(dtype.item_type)}>"
    if pa.types.is_struct(dtype):
        return "struct<" + ",".join(f"`{f.name}`:{_ddl_type(f.type)}" for f in dtype) + ">"
    return _DDL_NAMES[dtype]


def spark_ddl(schema: pa.Schema) -> str:
    """A Spark DDL string for the schema."""
    return ", ".join(f"`{f.name}` {_ddl_type(f.type)}" for f in spark_schema(schema))


def to_spark_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch in exactly the (`spark_schema`) types Spark expects."""
    columns = []
    for col, field in zip(batch.columns, schema):
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        # timestamps narrower than µs widen exactly; ns truncate to Spark's µs
        columns.append(col if col.type == field.type else col.cast(field.type, safe=False))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
