"""Arrow types as Spark sees them: what a read must yield, and the DDL of a table."""
from __future__ import annotations

import pyarrow as pa

from ..errors import UnsupportedTypeError

__all__ = ["spark_arrow_type", "spark_ddl", "spark_schema", "to_spark_batch"]


def spark_arrow_type(dtype: pa.DataType) -> pa.DataType:
    """The Arrow type Spark uses for a column of this type (what read() must yield)."""
    if pa.types.is_dictionary(dtype):
        return spark_arrow_type(dtype.value_type)
    if pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
        return pa.string()
    if pa.types.is_large_binary(dtype) or pa.types.is_binary_view(dtype) or pa.types.is_fixed_size_binary(dtype):
        return pa.binary()
    if pa.types.is_timestamp(dtype):
        return pa.timestamp("us", tz="UTC" if dtype.tz else None)
    if pa.types.is_date64(dtype):
        return pa.date32()
    if pa.types.is_uint8(dtype):
        return pa.int16()
    if pa.types.is_uint16(dtype):
        return pa.int32()
    if pa.types.is_uint32(dtype):
        return pa.int64()
    if (pa.types.is_signed_integer(dtype) or (pa.types.is_floating(dtype) and not pa.types.is_float16(dtype))
            or pa.types.is_boolean(dtype) or pa.types.is_string(dtype) or pa.types.is_binary(dtype)
            or pa.types.is_date32(dtype) or pa.types.is_decimal128(dtype)):
        return dtype
    raise UnsupportedTypeError(f"Spark has no column type for Arrow {dtype}")


def spark_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, spark_arrow_type(f.type), nullable=True) for f in schema])


def spark_ddl(schema: pa.Schema) -> str:
    """A Spark DDL string for the schema."""
    names = {pa.int8(): "byte", pa.int16(): "short", pa.int32(): "int", pa.int64(): "long",
             pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean", pa.string(): "string",
             pa.binary(): "binary", pa.date32(): "date", pa.timestamp("us", tz="UTC"): "timestamp",
             pa.timestamp("us"): "timestamp_ntz"}
    parts = []
    for f in spark_schema(schema):
        if pa.types.is_decimal(f.type):
            text = f"decimal({f.type.precision},{f.type.scale})"
        else:
            text = names[f.type]
        parts.append(f"`{f.name}` {text}")
    return ", ".join(parts)


def to_spark_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch in exactly the (`spark_schema`) types Spark expects."""
    columns = []
    for col, field in zip(batch.columns, schema):
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        # timestamps narrower than µs widen exactly; ns truncate to Spark's µs
        columns.append(col if col.type == field.type else col.cast(field.type, safe=False))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
