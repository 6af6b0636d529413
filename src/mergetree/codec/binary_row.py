"""Paimon's BinaryRow, the encoding of partitions, keys and statistics in its manifests.

A serialized row is a big-endian int32 arity, then the row: a header of null bits (the first
byte is the row kind; field i is bit i + 8), 8 little-endian bytes per field, then a variable
part.  A string or binary value of at most 7 bytes lives in its slot (top byte 0x80 | length);
a longer one is ``offset << 32 | length`` into the row.  Decimals of precision <= 18 are their
unscaled long, larger ones big-endian bytes in the variable part; timestamps of precision <= 3
are epoch milliseconds, finer ones ``offset << 32 | nano-of-millisecond`` with the
milliseconds in the variable part.

Values decode to what pyarrow's ``as_py`` gives for the column's Arrow type, except that a
timestamp finer than microseconds decodes to integer epoch nanoseconds (exact and ordered;
pruning leaves such columns alone).
"""
from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from ..errors import CorruptTableError
from .types import PaimonType

__all__ = ["decode_row", "encode_row"]

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_INLINE = 0x80 << 56
_LONG = struct.Struct("<q")
_EXACT = decimal.Context(prec=80)  # 38 digits and a scale never round here
_INT = struct.Struct("<i")


def _header_bytes(arity: int) -> int:
    return ((arity + 63 + 8) // 64) * 8


def decode_row(data: bytes, types: Sequence[PaimonType], what: str = "row") -> tuple:
    """The values of a serialized BinaryRow whose fields have `types`.  An empty byte string
    (Paimon writes one for "no statistics") decodes to all None."""
    if not data:
        return (None,) * len(types)
    try:
        (arity,) = struct.unpack_from(">i", data, 0)
        if arity != len(types):
            raise ValueError(f"it has {arity} fields, the schema {len(types)}")
        row = memoryview(data)[4:]
        fixed = _header_bytes(arity)
        if len(row) < fixed + 8 * arity:
            raise ValueError("it is shorter than its fixed part")
        return tuple(None if row[(i + 8) // 8] & (1 << ((i + 8) % 8))
                     else _decode(row, fixed + 8 * i, t) for i, t in enumerate(types))
    except (ValueError, struct.error, IndexError, UnicodeDecodeError) as exc:
        raise CorruptTableError(f"a serialized {what} in a Paimon manifest is malformed: {exc}", path="") from None


def _var(row: memoryview, slot: int) -> bytes:
    (word,) = _LONG.unpack_from(row, slot)
    if word & _INLINE:
        length = (word >> 56) & 0x7F
        if length > 7:
            raise ValueError("an inline value longer than 7 bytes")
        return bytes(row[slot:slot + length])
    offset, length = (word >> 32) & 0xFFFFFFFF, word & 0xFFFFFFFF
    if offset + length > len(row):
        raise ValueError("a value points past the end of the row")
    return bytes(row[offset:offset + length])


def _decode(row: memoryview, slot: int, t: PaimonType) -> Any:
    root = t.root
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        fmt = {"TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "BIGINT": "<q"}[root]
        return struct.unpack_from(fmt, row, slot)[0]
    if root == "BOOLEAN":
        return bool(row[slot])
    if root == "FLOAT":
        return struct.unpack_from("<f", row, slot)[0]
    if root == "DOUBLE":
        return struct.unpack_from("<d", row, slot)[0]
    if root == "STRING":
        return _var(row, slot).decode("utf-8")
    if root == "BYTES":
        return _var(row, slot)
    if root == "DATE":
        return _EPOCH_DATE + dt.timedelta(days=_INT.unpack_from(row, slot)[0])
    if root == "TIME":
        ms = _INT.unpack_from(row, slot)[0]
        return (dt.datetime.min + dt.timedelta(milliseconds=ms)).time()
    if root == "DECIMAL":
        if t.precision <= 18:
            unscaled = _LONG.unpack_from(row, slot)[0]
        else:
            (word,) = _LONG.unpack_from(row, slot)
            offset, length = (word >> 32) & 0xFFFFFFFF, word & 0xFFFFFFFF
            if offset + length > len(row):
                raise ValueError("a decimal points past the end of the row")
            unscaled = int.from_bytes(row[offset:offset + length], "big", signed=True)
        with decimal.localcontext(_EXACT):
            return Decimal(unscaled).scaleb(-t.scale)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if t.precision <= 3:
            millis, nanos = _LONG.unpack_from(row, slot)[0], 0
        else:
            (word,) = _LONG.unpack_from(row, slot)
            offset, nanos = (word >> 32) & 0xFFFFFFFF, word & 0xFFFFFFFF
            millis = _LONG.unpack_from(row, offset)[0]
        if t.precision > 6:
            return millis * 1_000_000 + nanos
        value = _EPOCH + dt.timedelta(milliseconds=millis, microseconds=nanos // 1000)
        return value.replace(tzinfo=dt.timezone.utc) if root == "TIMESTAMP_LTZ" else value
    raise ValueError(f"a field of type {t.text} cannot be decoded")


def encode_row(values: Sequence[Any], types: Sequence[PaimonType]) -> bytes:
    """Serialize `values` (as `decode_row` returns them) as a BinaryRow of `types`."""
    arity = len(types)
    header = _header_bytes(arity)
    fixed = bytearray(header + 8 * arity)
    var = bytearray()

    def put_var(slot: int, payload: bytes, inline_ok: bool = True, width: int = 0) -> None:
        if inline_ok and len(payload) <= 7:
            fixed[slot:slot + len(payload)] = payload
            fixed[slot + 7] = 0x80 | len(payload)
            return
        offset = len(fixed) + len(var)
        padded = max(width, (len(payload) + 7) // 8 * 8)
        var.extend(payload + b"\x00" * (padded - len(payload)))
        _LONG.pack_into(fixed, slot, (offset << 32) | len(payload))

    for i, (value, t) in enumerate(zip(values, types)):
        slot = header + 8 * i
        if value is None:
            fixed[(i + 8) // 8] |= 1 << ((i + 8) % 8)
            # as Java's RowHelper: a null decimal of precision > 18 or timestamp of precision > 3
            # still takes its var bytes (zeros), and its slot points at them
            width = 16 if t.root == "DECIMAL" and t.precision > 18 else \
                8 if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 3 else 0
            if width:
                _LONG.pack_into(fixed, slot, (len(fixed) + len(var)) << 32)
                var.extend(bytes(width))
            continue
        root = t.root
        if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
            fmt = {"TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "BIGINT": "<q"}[root]
            struct.pack_into(fmt, fixed, slot, int(value))
        elif root == "BOOLEAN":
            fixed[slot] = 1 if value else 0
        elif root == "FLOAT":
            struct.pack_into("<f", fixed, slot, float(value))
        elif root == "DOUBLE":
            struct.pack_into("<d", fixed, slot, float(value))
        elif root == "STRING":
            put_var(slot, str(value).encode("utf-8"))
        elif root == "BYTES":
            put_var(slot, bytes(value))
        elif root == "DATE":
            _INT.pack_into(fixed, slot, (value - _EPOCH_DATE).days)
        elif root == "TIME":
            ms = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
            _INT.pack_into(fixed, slot, ms)
        elif root == "DECIMAL":
            with decimal.localcontext(_EXACT):
                unscaled = int(Decimal(value).scaleb(t.scale).to_integral_value())
            if t.precision <= 18:
                _LONG.pack_into(fixed, slot, unscaled)
            else:
                # BigInteger.toByteArray(): bitLength() / 8 + 1 bytes, bitLength leaving out the sign
                # (-128 is one byte, 0x80; Python's bit_length counts it)
                size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
                payload = unscaled.to_bytes(size, "big", signed=True)
                put_var(slot, payload, inline_ok=False, width=16)
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            if isinstance(value, int):
                nanos_total = value
            else:
                naive = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
                delta = naive - _EPOCH
                nanos_total = ((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds) * 1000
            millis, nanos = divmod(nanos_total, 1_000_000)
            if t.precision <= 3:
                _LONG.pack_into(fixed, slot, millis)
            else:
                offset = len(fixed) + len(var)
                var.extend(_LONG.pack(millis))
                _LONG.pack_into(fixed, slot, (offset << 32) | nanos)
        else:
            raise ValueError(f"a field of type {t.text} cannot be encoded")
    return struct.pack(">i", arity) + bytes(fixed) + bytes(var)
