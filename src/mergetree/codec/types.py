"""Paimon's data types (as its schema JSON writes them) and the Arrow types they read as.

An atomic type is a string such as ``"BIGINT NOT NULL"``, ``"DECIMAL(10, 2)"``,
``"TIMESTAMP(6) WITH LOCAL TIME ZONE"``; nested types are objects (``{"type": "ARRAY",
"element": ...}``, ``MAP`` with ``key``/``value``, ``ROW`` with ``fields``).
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import SchemaMismatchError, UnsupportedFormatError, UnsupportedPaimonFeatureError

__all__ = ["NoPaimonType", "PaimonField", "PaimonType", "evolve", "paimon_fields", "paimon_type", "parse_field",
           "parse_type", "plain_array", "same_type"]

_PARAMS = re.compile(r"^([A-Z_ ]+?)\s*(?:\((\d+)(?:\s*,\s*(\d+))?\))?(\s+WITH LOCAL TIME ZONE)?$")
_TIMESTAMP_UNITS = ((0, "s"), (3, "ms"), (6, "us"), (9, "ns"))


@dataclass(frozen=True)
class PaimonType:
    """One Paimon type: its root name (``BIGINT``, ``DECIMAL``, ``TIMESTAMP``, ``ARRAY``, ...),
    nullability, precision and scale where they apply, and the Arrow type it reads as."""

    root: str
    nullable: bool
    precision: int
    scale: int
    arrow: pa.DataType
    text: str
    fields: tuple[PaimonField, ...] = ()      # ROW
    element: PaimonType | None = None         # ARRAY, MULTISET
    key: PaimonType | None = None             # MAP
    value: PaimonType | None = None           # MAP

    @property
    def atomic(self) -> bool:
        return self.root not in ("ARRAY", "MAP", "MULTISET", "ROW", "VECTOR")


@dataclass(frozen=True)
class PaimonField:
    id: int
    name: str
    type: PaimonType

    def arrow_field(self) -> pa.Field:
        return pa.field(self.name, self.type.arrow, nullable=self.type.nullable)


def parse_field(d: dict) -> PaimonField:
    return PaimonField(int(d["id"]), str(d["name"]), parse_type(d["type"]))


def parse_type(spec: Any) -> PaimonType:
    if isinstance(spec, dict):
        return _nested(spec)
    if not isinstance(spec, str):
        raise UnsupportedFormatError(f"Paimon type {spec!r} is neither a type name nor a nested type")
    text = spec.strip()
    upper = text.upper()
    nullable = True
    if upper.endswith(" NOT NULL"):
        nullable = False
        upper = upper[: -len(" NOT NULL")].rstrip()
    elif upper.endswith(" NULL"):
        upper = upper[: -len(" NULL")].rstrip()
    m = _PARAMS.match(upper)
    if m is None:
        raise UnsupportedFormatError(f"Paimon type {spec!r} is not one mergetree can read")
    root, p, s, ltz = m.group(1).strip(), m.group(2), m.group(3), m.group(4)
    if root == "TIMESTAMP_LTZ" or (root == "TIMESTAMP" and ltz):
        root, tz = "TIMESTAMP_LTZ", "UTC"
    else:
        tz = None
    precision = int(p) if p is not None else -1
    scale = int(s) if s is not None else 0
    arrow: pa.DataType
    simple = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "INTEGER": pa.int32(),
              "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(),
              "DATE": pa.date32(), "STRING": pa.string(), "VARCHAR": pa.string(), "CHAR": pa.string(),
              "BYTES": pa.binary(), "VARBINARY": pa.binary(), "BINARY": pa.binary()}
    if root in simple:
        arrow = simple[root]
        root = {"INTEGER": "INT", "VARCHAR": "STRING", "CHAR": "STRING", "VARBINARY": "BYTES",
                "BINARY": "BYTES"}.get(root, root)
    elif root == "DECIMAL" or root == "NUMERIC" or root == "DEC":
        root = "DECIMAL"
        precision = 10 if precision < 0 else precision
        if not 1 <= precision <= 38:
            raise UnsupportedFormatError(f"Paimon type {spec!r}: decimal precision must be 1..38")
        arrow = pa.decimal128(precision, scale)
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        precision = 6 if precision < 0 else precision
        unit = next(u for limit, u in _TIMESTAMP_UNITS if precision <= limit) if precision <= 9 else None
        if unit is None:
            raise UnsupportedFormatError(f"Paimon type {spec!r}: timestamp precision must be 0..9")
        arrow = pa.timestamp(unit, tz=tz)
    elif root == "TIME":
        precision = 0 if precision < 0 else precision
        arrow = pa.time32("ms")
    else:
        raise UnsupportedFormatError(f"Paimon type {spec!r} is not one mergetree can read")
    return PaimonType(root, nullable, precision, scale, arrow, text)


def _nested(spec: dict) -> PaimonType:
    kind = str(spec.get("type", "")).upper()
    nullable = not kind.endswith(" NOT NULL")
    root = kind.replace(" NOT NULL", "").strip()
    if root == "ARRAY":
        element = parse_type(spec["element"])
        arrow: pa.DataType = pa.list_(pa.field("element", element.arrow, nullable=element.nullable))
        return PaimonType(root, nullable, -1, 0, arrow, kind, element=element)
    if root == "MULTISET":  # as Paimon stores it: a map of each distinct element to its count
        element = parse_type(spec["element"])
        arrow = pa.map_(pa.field("key", element.arrow, nullable=False), pa.field("value", pa.int32(), nullable=False))
        return PaimonType(root, nullable, -1, 0, arrow, kind, element=element)
    if root == "MAP":
        key, value = parse_type(spec["key"]), parse_type(spec["value"])
        arrow = pa.map_(pa.field("key", key.arrow, nullable=False),
                        pa.field("value", value.arrow, nullable=value.nullable))
        return PaimonType(root, nullable, -1, 0, arrow, kind, key=key, value=value)
    if root == "ROW":
        fields = tuple(parse_field(f) for f in spec.get("fields", []))
        if len({f.name for f in fields}) != len(fields) or len({f.id for f in fields}) != len(fields):
            raise UnsupportedFormatError(f"Paimon type {spec!r} names a field or a field id twice")
        arrow = pa.struct([f.arrow_field() for f in fields])
        return PaimonType(root, nullable, -1, 0, arrow, kind, fields=fields)
    raise UnsupportedFormatError(f"Paimon type {spec!r} is not one mergetree can read")


# -- schema evolution: a value written under one type, read under another -----------------

_INTEGERS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_FLOATS = ("FLOAT", "DOUBLE")
_NUMPY_INT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_TRUE_STRINGS, _FALSE_STRINGS = ("t", "true", "y", "yes", "1"), ("f", "false", "n", "no", "0")
# java.math.BigDecimal(String) and BinaryStringUtils.toLong's syntax (no blanks, no "_")
_BIG_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_JAVA_LONG = re.compile(r"[+-]?(\d*)(\.\d*)?")
# Double.parseDouble after its trim of characters <= ' ' (hexadecimal floats refused)
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?")


def _length(t: PaimonType) -> int | None:
    """CHAR/VARCHAR/BINARY/VARBINARY length (None: STRING, BYTES: unbounded)."""
    return t.precision if t.precision >= 0 else None


def _is_char(t: PaimonType) -> bool:
    return t.text.upper().lstrip().startswith("CHAR")


def _is_binary(t: PaimonType) -> bool:
    return t.text.upper().lstrip().startswith("BINARY")


def plain_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One flat array of the plain type behind chunks, a dictionary or a view (the encoders'
    input: pyarrow has no filter kernels for views, and hashes see values, not encodings)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    elif pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.large_binary())
    return arr


def same_type(a: PaimonType, b: PaimonType) -> bool:
    """Whether values of type `a` read unchanged as `b` (nullability aside): what makes an old
    file's statistics of a column exact under the new schema."""
    if a.root != b.root or not a.atomic or not b.atomic:
        return False  # nested: evolved field by field (`evolve`), never taken as it is
    return (a.precision, a.scale, _is_char(a), _is_binary(a)) == (b.precision, b.scale, _is_char(b), _is_binary(b))


def evolve(values: pa.Array, old: PaimonType | None, new: PaimonType | None, column: str) -> pa.Array:
    """`values`, read from a file written under type `old`, as type `new`, converted as
    Paimon's CastExecutors convert them (schema evolution: ALTER COLUMN TYPE allows explicit
    casts by default); nested ROW fields mapped by field id (a field the file lacks reads as
    nulls), ARRAY elements and MAP keys and values evolved in turn.  A conversion whose
    result Java would not give exactly here (formatting a float, a JVM time zone) raises
    UnsupportedPaimonFeatureError naming the column and the types; a value Java's cast
    rejects raises SchemaMismatchError."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    assert old is not None and new is not None  # a nested type's parts are parsed with it
    if not old.atomic or not new.atomic:
        return _evolve_nested(values, old, new, column)
    if same_type(old, new):
        return values if values.type == new.arrow else values.cast(new.arrow)
    try:
        return _cast_atomic(values, old, new, column)
    except _Refused as exc:
        raise UnsupportedPaimonFeatureError(
            f"column {column!r} changed type from {old.text} to {new.text} (ALTER COLUMN TYPE); mergetree cannot "
            f"convert it exactly as Paimon does: {exc}") from None


class _Refused(Exception):
    pass


def _evolve_nested(values: pa.Array, old: PaimonType, new: PaimonType, column: str) -> pa.Array:
    if old.root != new.root:
        raise UnsupportedPaimonFeatureError(
            f"column {column!r} changed type from {old.text} to {new.text}; mergetree converts nested types only "
            f"to the same kind of nested type")
    if new.root == "ROW":
        assert isinstance(values, pa.StructArray)
        by_id = {f.id: (i, f) for i, f in enumerate(old.fields)}
        children, fields = [], []
        for f in new.fields:
            found = by_id.get(f.id)
            if found is None:
                child = pa.nulls(len(values), f.type.arrow)
            else:
                i, before = found
                child = evolve(values.field(i), before.type, f.type, f"{column}.{f.name}")
            children.append(child)
            fields.append(pa.field(f.name, child.type, nullable=f.type.nullable))
        mask = values.is_null() if values.null_count else None
        # StructArray.field() already applies the struct's offset; from_arrays takes the mask as validity
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if new.root == "ARRAY":
        assert isinstance(values, pa.ListArray)
        flat = values.flatten() if values.offset == 0 else values.values.slice(
            values.offsets[0].as_py(), values.offsets[-1].as_py() - values.offsets[0].as_py())
        offsets = pc.subtract(values.offsets, values.offsets[0])
        element = evolve(flat, old.element, new.element, f"{column}.element")
        return pa.ListArray.from_arrays(offsets, element, type=new.arrow,
                                        mask=values.is_null() if values.null_count else None)
    if new.root in ("MAP", "MULTISET"):
        assert isinstance(values, pa.MapArray)
        start = values.offsets[0].as_py()
        size = values.offsets[-1].as_py() - start
        keys = values.keys.slice(start, size)
        items = values.items.slice(start, size)
        offsets = pc.subtract(values.offsets, values.offsets[0])
        if new.root == "MAP":
            keys = evolve(keys, old.key, new.key, f"{column}.key")
            items = evolve(items, old.value, new.value, f"{column}.value")
        else:
            keys = evolve(keys, old.element, new.element, f"{column}.element")
        return pa.MapArray.from_arrays(offsets, keys, items, type=new.arrow,
                                       mask=values.is_null() if values.null_count else None)
    raise UnsupportedPaimonFeatureError(f"column {column!r} has type {new.text}, which mergetree cannot evolve")


def _py(values: pa.Array, convert, new: PaimonType) -> pa.Array:
    """Value by value, nulls kept (a convert returning None gives a null, as Paimon's
    decimal overflow does)."""
    return pa.array([None if v is None else convert(v) for v in values.to_pylist()], type=new.arrow)


def _int_like(data: np.ndarray, bits: int) -> np.ndarray:
    """Java's narrowing of a long to `bits` (two's complement wrap-around)."""
    return data.astype(np.int64).astype(_NUMPY_INT[bits])


def _float_to_int(values: pa.Array, bits: int) -> pa.Array:
    """Java's (long) / (int) of a float or double: NaN is 0, out of range saturates, the rest
    truncates; byteValue/shortValue narrow the int result in turn."""
    data = np.asarray(values.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
    wide = 64 if bits == 64 else 32
    lo, hi = -(2 ** (wide - 1)), 2 ** (wide - 1) - 1
    out = np.zeros(len(data), dtype=np.int64)
    finite = ~np.isnan(data)
    inside = finite & (data > float(lo)) & (data < float(hi))  # float(hi) rounds up past hi for 64 bits
    out[inside] = np.trunc(data[inside]).astype(np.int64)
    out[finite & (data >= float(hi))] = hi
    out[finite & (data <= float(lo))] = lo
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return pa.array(_int_like(out, bits), mask=mask)


def _decimal(value: Any, new: PaimonType) -> Decimal | None:
    """Paimon's Decimal.fromBigDecimal: rounded HALF_UP to the scale, null when it needs more
    digits than the precision."""
    d = Decimal(value).quantize(Decimal(1).scaleb(-new.scale), rounding=ROUND_HALF_UP, context=_WIDE)
    digits = len(d.as_tuple().digits)
    return None if digits > new.precision else d


_WIDE = Context(prec=200, Emax=10**6, Emin=-10**6)


def _java_long(text: str, bits: int) -> int:
    """BinaryStringUtils.toLong/toInt (and toShort/toByte on toInt): sign, digits, a fraction
    that is checked and dropped; no blanks; overflow rejected."""
    m = _JAVA_LONG.fullmatch(text)
    if m is None or not text or text in ("+", "-") or (not m.group(1) and m.group(2) is None):
        raise SchemaMismatchError(f"cannot read {text!r} as an integer (Paimon's cast rejects it)")
    whole = int(m.group(1) or "0")
    value = -whole if text.startswith("-") else whole
    limit = 64 if bits == 64 else 32
    if not -(2 ** (limit - 1)) <= value < 2 ** (limit - 1) or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise SchemaMismatchError(f"cannot read {text!r} as a {bits}-bit integer: overflow")
    return value


def _java_double(text: str) -> float:
    stripped = text.strip("".join(chr(c) for c in range(0x21)))
    if _JAVA_DOUBLE.fullmatch(stripped) is None:
        raise SchemaMismatchError(f"cannot read {text!r} as a DOUBLE (Paimon's cast rejects it)")
    return float(stripped.rstrip("fFdD").replace("Infinity", "inf"))


def _char(text: str, new: PaimonType) -> str:
    """BinaryStringUtils.toCharacterString: cut to the length, a CHAR padded with blanks."""
    length = _length(new)
    if length is None:
        return text
    if len(text) > length:
        return text[:length]
    return text.ljust(length) if _is_char(new) else text


def _bytes(data: bytes, new: PaimonType) -> bytes:
    """BinaryStringUtils.toBinaryString: cut to the length, a BINARY padded with zero bytes."""
    length = _length(new)
    if length is None or len(data) == length:
        return data
    return data[:length].ljust(length, b"\0") if _is_binary(new) else data[:length]


def _timestamp_parts(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(epoch milliseconds, nanoseconds of the millisecond), as Paimon's Timestamp holds them."""
    unit = values.type.unit
    raw = np.asarray(values.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    per_ms = {"s": 0, "ms": 1, "us": 1000, "ns": 1_000_000}[unit]
    if unit == "s":
        return raw * 1000, np.zeros(len(raw), dtype=np.int64)
    return np.floor_divide(raw, per_ms), np.mod(raw, per_ms) * (1_000_000 // per_ms)


def _format_timestamp(ms: int, nanos: int, precision: int) -> str:
    """DateTimeUtils.formatTimestamp: seconds, then the nanoseconds with trailing zeros
    dropped down to the precision."""
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)
    if not 1 <= moment.year <= 9999:
        raise _Refused("a timestamp outside the years 1 to 9999")
    fraction = f"{moment.microsecond // 1000 * 1_000_000 + nanos:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    return f"{text}.{fraction}" if fraction else text


def _cast_atomic(values: pa.Array, old: PaimonType, new: PaimonType, column: str) -> pa.Array:
    src, dst = old.root, new.root
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    if "TIME" == src or "TIME" == dst:
        raise _Refused("TIME conversions are not implemented")
    if "TIMESTAMP_LTZ" in (src, dst) and src != dst:
        raise _Refused("the result depends on the time zone of the JVM that reads it")
    if src in _INTEGERS and dst in _INTEGERS:
        data = np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False))
        return pa.array(_int_like(data, _INTEGERS[dst]), mask=mask)
    if src in _INTEGERS and dst in _FLOATS:
        return values.cast(new.arrow, safe=False)  # round to nearest, as Java's widening
    if src in _FLOATS and dst in _FLOATS:
        return values.cast(new.arrow, safe=False)
    if src in _FLOATS and dst in _INTEGERS:
        return _float_to_int(values, _INTEGERS[dst])
    if dst == "DECIMAL" and src in _FLOATS:
        raise _Refused("BigDecimal.valueOf prints the double with the JVM's own algorithm (it differs by version)")
    if dst == "DECIMAL" and src in (*_INTEGERS, "DECIMAL", "STRING", "BOOLEAN"):
        def to_decimal(v: Any) -> Decimal | None:
            if isinstance(v, bool):
                v = int(v)
            elif isinstance(v, str) and _BIG_DECIMAL.fullmatch(v) is None:
                raise SchemaMismatchError(f"column {column!r}: cannot read {v!r} as {new.text}")
            return _decimal(v, new)
        return _py(values, to_decimal, new)
    if src == "DECIMAL" and dst in _INTEGERS:
        bits = _INTEGERS[dst]

        def to_integral(v: Decimal) -> int:
            whole = int(v)  # RoundingMode.DOWN, then BigDecimal.longValue (low 64 bits), then narrowed
            whole = (whole + 2 ** 63) % 2 ** 64 - 2 ** 63
            return (whole + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
        return _py(values, to_integral, new)
    if src == "DECIMAL" and dst in _FLOATS:
        return pa.array([None if v is None else float(v) for v in values.to_pylist()],
                        type=pa.float64()).cast(new.arrow, safe=False)
    if src == "BOOLEAN" and (dst in _INTEGERS or dst in _FLOATS):
        return values.cast(pa.int8()).cast(new.arrow)
    if src in _INTEGERS and dst == "BOOLEAN":
        return pc.not_equal(values, 0)
    if src == "STRING" and dst == "BOOLEAN":
        def to_bool(v: str) -> bool:
            if v.lower() in _TRUE_STRINGS:
                return True
            if v.lower() in _FALSE_STRINGS:
                return False
            raise SchemaMismatchError(f"column {column!r}: cannot read {v!r} as BOOLEAN (Paimon's cast rejects it)")
        return _py(values, to_bool, new)
    if src == "STRING" and dst in _INTEGERS:
        return _py(values, lambda v: _java_long(v, _INTEGERS[dst]), new)
    if src == "STRING" and dst == "DOUBLE":
        return _py(values, _java_double, new)
    if src == "STRING" and dst == "STRING":
        return _py(values, lambda v: _char(v, new), new)
    if src in _INTEGERS and dst == "STRING":
        return _py(values, lambda v: _char(str(v), new), new)
    if src == "DECIMAL" and dst == "STRING":
        return _py(values, lambda v: _char(format(v, "f"), new), new)  # BigDecimal.toPlainString
    if src == "BOOLEAN" and dst == "STRING":
        return _py(values, lambda v: _char("true" if v else "false", new), new)
    if src == "DATE" and dst == "STRING":
        return _py(values, lambda v: _char(v.isoformat(), new), new)
    if src == "STRING" and dst == "BYTES":
        return _py(values, lambda v: _bytes(v.encode("utf-8"), new), new)
    if src == "BYTES" and dst == "BYTES":
        return _py(values, lambda v: _bytes(v, new), new)
    if src == "BYTES" and dst == "STRING":
        def to_text(v: bytes) -> str:
            try:
                return v.decode("utf-8")
            except UnicodeDecodeError:
                raise _Refused("a value is not UTF-8, which an Arrow string cannot hold") from None
        return _py(values, to_text, new)
    if src == dst and src in ("TIMESTAMP", "TIMESTAMP_LTZ"):  # a precision change: no zone involved
        ms, nanos = _timestamp_parts(values)
        if new.precision <= 3:  # DateTimeUtils.truncate: epoch milliseconds cut toward zero
            step = 10 ** (3 - new.precision)
            total = np.sign(ms) * (np.abs(ms) // step) * step * 1_000_000
        else:  # nanoseconds of the millisecond cut (never negative)
            step = 10 ** (9 - new.precision)
            total = ms * 1_000_000 + nanos // step * step
        per = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}[new.arrow.unit]
        return pa.array(total // per, type=pa.int64(), mask=mask).cast(new.arrow)
    if src == "TIMESTAMP" and dst == "DATE":
        ms, _ = _timestamp_parts(values)
        return pa.array(np.floor_divide(ms, 86_400_000).astype(np.int32), mask=mask).cast(pa.date32())
    if src == "DATE" and dst == "TIMESTAMP":
        days = np.asarray(values.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        per = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[new.arrow.unit]
        return pa.array(days * 86_400 * per, type=pa.int64(), mask=mask).cast(new.arrow)
    if src == "TIMESTAMP" and dst == "STRING":
        ms, nanos = _timestamp_parts(values)
        valid = ~mask if mask is not None else np.ones(len(values), dtype=bool)
        return pa.array([_char(_format_timestamp(int(a), int(b), old.precision), new) if ok else None
                         for a, b, ok in zip(ms, nanos, valid)], type=new.arrow)
    if src in _FLOATS and dst == "STRING":
        raise _Refused("Java's Float/Double.toString formatting differs between JVM versions")
    raise _Refused("no cast rule of Paimon's that mergetree implements covers it")


# -- Arrow types as Paimon's schema writes them ----------------------------------------------

# Arrow types with no Paimon type of their own, and why (a table of them is refused by name)
_NO_PAIMON_TYPE = {
    "uint64": "Paimon has no unsigned integers and BIGINT cannot hold uint64's upper half; cast to int64 or "
              "decimal128(20, 0)",
    "time64": "Paimon's TIME holds milliseconds at most; cast to time32[ms]",
    "null": "a column of only nulls has no Paimon type; give it the type its values will have",
    "duration": "Paimon has no duration type; cast it to int64 (a count of its units)",
}


class NoPaimonType(ValueError):
    """An Arrow type Paimon's schema cannot express; the message says which and what to do."""


def paimon_type(dtype: pa.DataType, nullable: bool = True, next_id: list[int] | None = None) -> Any:
    """The Paimon schema type (a type string such as ``"BIGINT NOT NULL"``, or for nested
    types the JSON object) that reads back as `dtype` — or as its stored form where Paimon
    keeps another (a dictionary's values, a view's plain type, unsigned integers one size up,
    float16 as FLOAT).  `next_id`: the next field id, consumed depth-first by a ROW's fields,
    as Java numbers them.  NoPaimonType names what has no Paimon type."""
    suffix = "" if nullable else " NOT NULL"
    t = pa.types
    if t.is_dictionary(dtype):
        return paimon_type(dtype.value_type, nullable, next_id)
    simple = {pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INT", pa.int64(): "BIGINT",
              pa.uint8(): "SMALLINT", pa.uint16(): "INT", pa.uint32(): "BIGINT", pa.float16(): "FLOAT",
              pa.float32(): "FLOAT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN", pa.date32(): "DATE",
              pa.date64(): "DATE", pa.string(): "STRING", pa.large_string(): "STRING", pa.string_view(): "STRING",
              pa.binary(): "BYTES", pa.large_binary(): "BYTES", pa.binary_view(): "BYTES",
              pa.time32("s"): "TIME(0)", pa.time32("ms"): "TIME(3)"}
    if dtype in simple:
        return simple[dtype] + suffix
    if t.is_fixed_size_binary(dtype):
        return f"BINARY({dtype.byte_width}){suffix}"
    if t.is_decimal(dtype):
        if dtype.precision > 38:
            raise NoPaimonType(f"Paimon's DECIMAL holds 38 digits at most, not {dtype.precision}; cast to a "
                               f"decimal128 that holds the values, or to a string")
        return f"DECIMAL({dtype.precision}, {dtype.scale}){suffix}"
    if t.is_timestamp(dtype):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[dtype.unit]
        zone = " WITH LOCAL TIME ZONE" if dtype.tz is not None else ""
        return f"TIMESTAMP({precision}){zone}{suffix}"
    if t.is_list(dtype) or t.is_large_list(dtype) or t.is_list_view(dtype) or t.is_fixed_size_list(dtype):
        element = dtype.value_field
        return {"type": f"ARRAY{suffix}", "element": paimon_type(element.type, element.nullable, next_id)}
    if t.is_map(dtype):
        return {"type": f"MAP{suffix}", "key": paimon_type(dtype.key_type, False, next_id),
                "value": paimon_type(dtype.item_field.type, dtype.item_field.nullable, next_id)}
    if t.is_struct(dtype):
        ids = next_id if next_id is not None else [0]
        fields = []
        for child in (dtype.field(i) for i in range(dtype.num_fields)):
            field_id = ids[0]
            ids[0] += 1
            fields.append({"id": field_id, "name": child.name,
                           "type": paimon_type(child.type, child.nullable, ids)})
        return {"type": f"ROW{suffix}", "fields": fields}
    key = "time64" if t.is_time64(dtype) else "duration" if t.is_duration(dtype) else str(dtype)
    raise NoPaimonType(_NO_PAIMON_TYPE.get(key, f"Paimon has no type for Arrow's {dtype}"))


def paimon_fields(schema: pa.Schema) -> tuple[list[dict], int]:
    """A schema's fields as Paimon's schema JSON lists them (ids depth-first from 0, as Java
    assigns them) and the highest field id."""
    next_id = [0]
    out = []
    for f in schema:
        field_id = next_id[0]
        next_id[0] += 1
        try:
            out.append({"id": field_id, "name": f.name, "type": paimon_type(f.type, f.nullable, next_id)})
        except NoPaimonType as exc:
            raise NoPaimonType(f"column {f.name!r} ({f.type}): {exc}") from None
    return out, next_id[0] - 1
