"""Plain values (keys, statistics, partition values) in JSON metadata, type-tagged so that
floats keep nan/inf/-0.0 and bytes, decimals and temporal values round-trip exactly."""
from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

from ..errors import UnsupportedTypeError

__all__ = ["decode_value", "encode_value"]


def encode_value(value: Any) -> Any:
    """A JSON-safe, type-tagged form of a scalar from `pa.Scalar.as_py()`."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"f": repr(value)}  # keeps nan, inf and -0.0
    if isinstance(value, bytes):
        return {"b": base64.b64encode(value).decode()}
    if isinstance(value, Decimal):
        return {"d": str(value)}
    if isinstance(value, dt.datetime):
        return {"ts": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"time": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"td": [value.days, value.seconds, value.microseconds]}
    raise UnsupportedTypeError(f"cannot store {type(value).__name__} values in table metadata")


def decode_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    (tag, v), = value.items()
    if tag == "f":
        return float(v)
    if tag == "b":
        return base64.b64decode(v)
    if tag == "d":
        return Decimal(v)
    if tag == "ts":
        return dt.datetime.fromisoformat(v)
    if tag == "date":
        return dt.date.fromisoformat(v)
    if tag == "time":
        return dt.time.fromisoformat(v)
    if tag == "td":
        return dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2])
    raise ValueError(f"unknown value tag {tag!r}")
