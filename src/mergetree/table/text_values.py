"""Values as people write them: ISO-8601 text for dates, times and timestamps, and decimals as
text, read into a column's type one way for every entry — Python filters and deletes, columns and
row dicts given to `write`, and the CLI — with an error that names the column, the row and the
value when a value does not fit."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import SchemaMismatchError

__all__ = ["column_array", "parse_text", "takes_text", "text_scalar"]

_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                 OverflowError)


def takes_text(dtype: pa.DataType) -> bool:
    """Whether a Python `str` is read as a value of this type (not refused as a wrong type):
    dates, times, timestamps and decimals, whose values people write as text."""
    return pa.types.is_date(dtype) or pa.types.is_time(dtype) or pa.types.is_timestamp(dtype) \
        or pa.types.is_decimal(dtype)


def parse_text(text: str, dtype: pa.DataType) -> Any:
    """`text` read as a value of `dtype`, as a Python value of that type (`text_scalar`'s)."""
    return text_scalar(text, dtype).as_py()


def text_scalar(text: str, dtype: pa.DataType) -> pa.Scalar:
    """`text` read as a value of `dtype`, as an Arrow scalar (which keeps nanoseconds where
    Python's datetime, without pandas, cannot); ValueError says why not.

    Dates `2024-05-04`; times `10:30`, `10:30:00.250`; timestamps `2024-05-04`,
    `2024-05-04T10:30:00`, `2024-05-04 10:30:00.123456789` — on a column with a time zone, a time
    without an offset is the column zone's wall time, one with an offset (`+02:00`, `Z`) that
    moment; a column without a zone refuses an offset (which wall time is meant?).  Decimals
    exactly (`12.345` does not fit a scale of 2: no rounding).  Other types: Arrow's cast from
    text (`7` for an int, `true` for a bool)."""
    text = text.strip()
    if pa.types.is_decimal(dtype):
        try:
            value = Decimal(text)
        except InvalidOperation:
            raise ValueError(f"{text!r} is not a decimal number") from None
        return _fit(value, dtype)
    if pa.types.is_timestamp(dtype):
        return _timestamp(text, dtype)
    for is_kind, parse, example in ((pa.types.is_time, dt.time.fromisoformat, "time (e.g. 10:30:00)"),
                                    (pa.types.is_date, dt.date.fromisoformat, "date (e.g. 2024-05-04)")):
        if is_kind(dtype):
            try:
                moment: Any = parse(text)
            except ValueError:
                raise ValueError(f"{text!r} is not an ISO-8601 {example}") from None
            return _fit(moment, dtype)
    try:
        return pa.scalar(text).cast(dtype)
    except _ARROW_ERRORS as exc:
        raise ValueError(f"{text!r} cannot be read as {dtype} ({exc})") from None


def _fit(value: Any, dtype: pa.DataType) -> pa.Scalar:
    try:
        return pa.scalar(value, type=dtype)
    except _ARROW_ERRORS as exc:
        raise ValueError(f"{value} does not fit {dtype} ({exc})") from None


def _timestamp(text: str, dtype: pa.TimestampType) -> pa.Scalar:
    # Arrow's own parser first: it keeps nanoseconds, which Python's datetime cannot hold
    try:
        return pa.scalar(text).cast(dtype)
    except _ARROW_ERRORS:
        pass
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text  # Python 3.10 lacks "Z"
    try:
        moment = dt.datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 timestamp (e.g. 2024-05-04T10:30:00)") from None
    if dtype.tz is None:
        if moment.tzinfo is not None:
            raise ValueError(f"{text!r} carries a time zone offset, but the column holds wall times without a "
                             f"zone ({dtype}): give the time without an offset")
        return _fit(moment, dtype)
    if moment.tzinfo is None:  # the column zone's wall time
        wall = pa.array([moment], pa.timestamp(dtype.unit))
        return pc.assume_timezone(wall, dtype.tz).cast(dtype)[0]
    return _fit(moment, dtype)


def column_array(column: str, values: Any, dtype: pa.DataType, first_row: int = 0) -> pa.Array:
    """A column given as Python values (a list of them) as an Arrow array of `dtype`, text read
    as `parse_text` reads it where the type takes text; SchemaMismatchError names the column, the
    row (counted from `first_row`) and the value that does not fit."""
    try:
        return pa.array(values, type=dtype)
    except _ARROW_ERRORS:
        pass
    if not isinstance(values, (list, tuple)):
        try:
            values = list(values)
        except TypeError:
            raise SchemaMismatchError(f"column {column!r}: {type(values).__name__} is not a column of values") from None
    converted = []  # Arrow scalars, not Python values: a nanosecond survives without pandas
    reads_text = takes_text(dtype)
    for row, value in enumerate(values):
        try:
            if reads_text and isinstance(value, str):
                converted.append(text_scalar(value, dtype))
            else:
                converted.append(pa.scalar(value, type=dtype))
        except _ARROW_ERRORS as exc:
            raise SchemaMismatchError(f"column {column!r}, row {first_row + row}: {value!r} "
                                      f"({type(value).__name__}) is not a value of type {dtype} ({exc})") from None
    try:
        return pa.array(converted, type=dtype)
    except _ARROW_ERRORS as exc:  # each value fits alone: what is left is the column as a whole
        raise SchemaMismatchError(f"column {column!r}: the values do not make a {dtype} column ({exc})") from None
