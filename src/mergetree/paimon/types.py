"""Paimon's data types (as its schema JSON writes them) and the Arrow types they read as.

An atomic type is a string such as ``"BIGINT NOT NULL"``, ``"DECIMAL(10, 2)"``,
``"TIMESTAMP(6) WITH LOCAL TIME ZONE"``; nested types are objects (``{"type": "ARRAY",
"element": ...}``, ``MAP`` with ``key``/``value``, ``ROW`` with ``fields``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import UnsupportedFormatError

__all__ = ["PaimonField", "PaimonType", "parse_field", "parse_type"]

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
    elif root == "MAP":
        key, value = parse_type(spec["key"]), parse_type(spec["value"])
        arrow = pa.map_(pa.field("key", key.arrow, nullable=False),
                        pa.field("value", value.arrow, nullable=value.nullable))
    elif root == "ROW":
        fields = [parse_field(f) for f in spec.get("fields", [])]
        arrow = pa.struct([f.arrow_field() for f in fields])
    else:
        raise UnsupportedFormatError(f"Paimon type {spec!r} is not one mergetree can read")
    return PaimonType(root, nullable, -1, 0, arrow, kind)
