"""Bloom file index: the Parquet split-block Bloom filters (SBBF) that pyarrow writes into
each data file, probed for ``column = value`` and ``column IN (...)`` at file and row-group
level.

pyarrow (>= 21) writes the filters (``pq.write_table(..., bloom_filter_options=...)``, see
:func:`write_options`) but cannot read them, so this module does: :func:`describe` parses a
file's footer (Thrift compact protocol; only the fields needed, everything else skipped) once,
at write time, into a :class:`ColumnBloom` per column: where each row group's filter is, how
the column's values are stored, and the filters' bytes themselves when they are small
(``inline``), so that planning needs no I/O.  :func:`row_groups_that_may_contain` then encodes
the query values the way the file stores them (PLAIN encoding, no length prefix), hashes them
with xxh64 (seed 0) and checks the bits (``mergetree._bloom.might_contain``, without the GIL).

The encoding comes from the file's Parquet schema, not the Arrow type, because pyarrow does
not store every Arrow type as itself:

=====================================  ===================================================
Arrow type (query values as given by   Parquet column (as pyarrow writes it) -> bytes hashed
``pa.scalar(v, type).as_py()``)
=====================================  ===================================================
int8/16/32, uint8/16                   INT32 (Int annotation) -> 4 bytes little-endian
uint32                                 INT32 Int(32, unsigned) (format 2.x) or plain INT64
                                       (format 1.0) -> the value's 4 or 8 bytes
int64, uint64                          INT64 -> 8 bytes little-endian (two's complement)
float16, float32, float64              FIXED[2] Float16, FLOAT, DOUBLE -> IEEE bytes; 0.0 and
                                       -0.0 are both probed; NaN may match anything
string, large_string, string_view      BYTE_ARRAY (String) -> the UTF-8 bytes
binary, large_binary, binary_view      BYTE_ARRAY -> the bytes
fixed_size_binary(n)                   FIXED[n] -> the n bytes
date32, date64                         INT32 Date -> days since the epoch
time32(s, ms), time64(us)              INT32 Time(ms) / INT64 Time(us) (s is stored as ms)
timestamp (any unit and zone)          INT64 Timestamp in the unit the file stores (pyarrow
                                       writes s as ms, and ns as us in format 1.0/2.4), or
                                       INT96 (nanoseconds of the day, Julian day)
decimal32/64/128/256                   FIXED[minimal bytes for the precision] big-endian
                                       two's complement of the unscaled value, or INT32 /
                                       INT64 (``store_decimal_as_integer``)
dictionary of any of these             its value type
=====================================  ===================================================

A value the column cannot hold (out of range, more fraction digits than the scale, a float32
that is not exactly a float32, a null) is in no row group.  Refused with
:class:`~mergetree.errors.UnsupportedTypeError`: bool (pyarrow writes no filter for it, and two
values make it useless), time64[ns] (pyarrow returns ``datetime.time`` and drops the
nanoseconds), duration (stored as a bare INT64), null, nested and extension types.
"""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import numbers
import os
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import xxhash

from ..._bloom import might_contain
from ...errors import CorruptTableError, InvalidArgumentError, SchemaMismatchError, UnsupportedTypeError

__all__ = ["INLINE_MAX_BYTES", "ColumnBloom", "bloom_supported", "check_bloom_column", "describe",
           "file_may_contain", "row_groups_that_may_contain", "write_options"]

INLINE_MAX_BYTES = 1024     # a column's filters up to this many bytes in all are kept in the description
_TAIL_READ = 64 * 1024      # the first read of a footer: the file's last 64 KiB
_COALESCE_GAP = 64 * 1024   # filters closer than this are read in one request
_HEADER_READ = 256          # a BloomFilterHeader is ~16 bytes; a longer one is read again, whole
_MAX_DEPTH = 64             # Thrift nesting deeper than this is malformed (Parquet needs < 10)

_PHYSICAL = {0: "BOOLEAN", 1: "INT32", 2: "INT64", 3: "INT96", 4: "FLOAT", 5: "DOUBLE", 6: "BYTE_ARRAY",
             7: "FIXED_LEN_BYTE_ARRAY"}
_KINDS = {"int", "uint", "float", "string", "binary", "date", "time", "timestamp", "decimal"}
_UNITS = {"ms", "us", "ns"}


# ---------------------------------------------------------------------------
# Which Arrow types, and the pyarrow write options
# ---------------------------------------------------------------------------

def bloom_supported(dtype: pa.DataType) -> bool:
    """Whether a column of this Arrow type can have a Bloom filter probed here."""
    return _why_unsupported(dtype) is None


def check_bloom_column(name: str, dtype: pa.DataType) -> None:
    """Raise UnsupportedTypeError unless a column of this type can have a Bloom filter."""
    why = _why_unsupported(dtype)
    if why is not None:
        raise UnsupportedTypeError(
            f"Bloom filter column {name!r} has type {dtype}: {why}. Supported: integers, float16/32/64, "
            f"strings and binaries (also large, view and fixed-size), date32/64, time32, time64[us], "
            f"timestamps, decimals, and dictionaries of these")


def _why_unsupported(dtype: pa.DataType) -> str | None:
    t = pa.types
    if not isinstance(dtype, pa.DataType):
        return f"{dtype!r} is not a pyarrow DataType"
    if isinstance(dtype, pa.BaseExtensionType):
        return "extension types are not supported (Bloom filter the storage type instead)"
    if t.is_integer(dtype) or t.is_floating(dtype) or t.is_decimal(dtype):
        return None
    if (t.is_string(dtype) or t.is_large_string(dtype) or t.is_string_view(dtype) or t.is_binary(dtype)
            or t.is_large_binary(dtype) or t.is_binary_view(dtype) or t.is_fixed_size_binary(dtype)):
        return None
    if t.is_date(dtype) or t.is_timestamp(dtype) or t.is_time32(dtype):
        return None
    if t.is_time64(dtype):
        return None if dtype.unit == "us" else (
            "pyarrow gives time64[ns] values as datetime.time, which drops the nanoseconds, so a lookup "
            "could miss a stored value; use time64[us]")
    if t.is_dictionary(dtype):
        return _why_unsupported(dtype.value_type)
    if t.is_boolean(dtype):
        return "a boolean has two values, so a Bloom filter skips nothing (pyarrow refuses to write one)"
    if t.is_duration(dtype):
        return ("Parquet stores a duration as a bare INT64, so its values cannot be told from plain "
                "integers; cast the column to int64")
    if t.is_null(dtype):
        return "an all-null column has no values to look up"
    if t.is_nested(dtype):
        return "nested columns are not supported"
    return "this type has no Bloom filter support here"


def write_options(columns: dict[str, pa.DataType], rows_per_row_group: int, fpp: float) -> dict[str, dict]:
    """``bloom_filter_options`` for ``pq.write_table``: a filter per column and row group, sized
    for `rows_per_row_group` distinct values (the most a row group can hold) at false-positive
    probability `fpp` (pyarrow rounds each filter up to a power of two, which only lowers it)."""
    if not isinstance(columns, dict):
        raise InvalidArgumentError(
            f"columns must be a dict of column name -> pyarrow type, not {type(columns).__name__}")
    if isinstance(rows_per_row_group, bool) or not isinstance(rows_per_row_group, numbers.Integral) \
            or rows_per_row_group < 1:
        raise InvalidArgumentError(f"rows_per_row_group must be a positive integer, not {rows_per_row_group!r}")
    if isinstance(fpp, bool) or not isinstance(fpp, numbers.Real) or not 0.0 < float(fpp) < 1.0:
        raise InvalidArgumentError(f"the Bloom filter false-positive probability must be between 0 and 1 "
                                   f"(exclusive), not {fpp!r}")
    for name, dtype in columns.items():
        if not isinstance(name, str):
            raise InvalidArgumentError(f"column names must be strings, not {name!r}")
        check_bloom_column(name, dtype)
    return {name: {"ndv": int(rows_per_row_group), "fpp": float(fpp)} for name in columns}


# ---------------------------------------------------------------------------
# The description of one column's filters
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ColumnBloom:
    """Where one column's Bloom filters are in a data file, and how to hash values for them.

    The encoding fields come from the file's Parquet schema: `physical_type` (INT32, INT64,
    INT96, FLOAT, DOUBLE, BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY), `kind` (what the values are:
    int, uint, float, string, binary, date, time, timestamp or decimal), `type_length` (bytes
    of a FIXED_LEN_BYTE_ARRAY), `bit_width` (of an int, uint or float), `unit` (ms, us or ns,
    as the file stores a time or timestamp), `scale` and `precision` (of a decimal).

    `filters` holds each row group's filter as (offset, length) in the file, header and
    bitset (Parquet's ``bloom_filter_offset``/``bloom_filter_length``), in row-group order;
    (0, 0) for a row group without one (it may contain anything).  `inline` is all the
    filters' bytes, concatenated in that order, when they are small (None otherwise)."""

    column: str
    physical_type: str
    kind: str
    type_length: int = 0
    bit_width: int = 0
    unit: str = ""
    scale: int = 0
    precision: int = 0
    filters: tuple[tuple[int, int], ...] = ()
    inline: bytes | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.column, str):
            raise InvalidArgumentError(f"ColumnBloom.column must be a str, not {self.column!r}")
        if self.physical_type not in _PHYSICAL.values() or self.kind not in _KINDS:
            raise InvalidArgumentError(f"ColumnBloom for {self.column!r}: unknown encoding "
                                       f"{self.physical_type}/{self.kind}")
        for field in ("type_length", "bit_width", "scale", "precision"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"ColumnBloom for {self.column!r}: {field} must be an int >= 0, "
                                           f"not {value!r}")
        if self.kind in ("time", "timestamp") and self.unit not in _UNITS:
            raise InvalidArgumentError(f"ColumnBloom for {self.column!r}: time unit {self.unit!r} is not one of "
                                       f"{sorted(_UNITS)}")
        if not isinstance(self.filters, tuple) or not all(
                isinstance(f, tuple) and len(f) == 2 and all(type(x) is int and x >= 0 for x in f)
                for f in self.filters):
            raise InvalidArgumentError(f"ColumnBloom for {self.column!r}: filters must be a tuple of "
                                       f"(offset, length) int pairs, not {self.filters!r}")
        if self.inline is not None:
            total = sum(length for _, length in self.filters)
            if not isinstance(self.inline, bytes) or len(self.inline) != total:
                raise InvalidArgumentError(f"ColumnBloom for {self.column!r}: inline must be the {total} bytes of "
                                           f"the filters")

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (bytes in base64)."""
        return {
            "column": self.column, "physical_type": self.physical_type, "kind": self.kind,
            "type_length": self.type_length, "bit_width": self.bit_width, "unit": self.unit,
            "scale": self.scale, "precision": self.precision,
            "filters": [[offset, length] for offset, length in self.filters],
            "inline": None if self.inline is None else base64.b64encode(self.inline).decode("ascii"),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ColumnBloom:
        """The ColumnBloom `to_json` gave; InvalidArgumentError if `d` is not one."""
        if not isinstance(d, dict):
            raise InvalidArgumentError(f"a ColumnBloom is stored as a JSON object, not {type(d).__name__}")
        try:
            inline = d["inline"]
            filters = d["filters"]
            if not isinstance(filters, list) or not all(isinstance(f, list) and len(f) == 2 for f in filters):
                raise InvalidArgumentError(f"filters must be a list of [offset, length], not {filters!r}")
            return cls(
                column=d["column"], physical_type=d["physical_type"], kind=d["kind"], type_length=d["type_length"],
                bit_width=d["bit_width"], unit=d["unit"], scale=d["scale"], precision=d["precision"],
                filters=tuple((f[0], f[1]) for f in filters),
                inline=None if inline is None else base64.b64decode(inline.encode("ascii"), validate=True))
        except (KeyError, AttributeError, TypeError, ValueError) as exc:
            if isinstance(exc, InvalidArgumentError):
                raise
            raise InvalidArgumentError(f"not a stored ColumnBloom ({type(exc).__name__}: {exc}): {d!r}") from None


# ---------------------------------------------------------------------------
# Thrift compact protocol: just enough to read a Parquet footer and a
# BloomFilterHeader.  Every read is bounds-checked; every loop consumes input
# or is bounded by the bytes left; nesting is limited.  Malformed input raises
# _Malformed, which the callers turn into CorruptTableError naming the file.
# ---------------------------------------------------------------------------

class _Malformed(Exception):
    """The bytes are not the Thrift structure expected (never escapes this module)."""


_STOP, _TRUE, _FALSE, _I8, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class _Compact:
    """A cursor over Thrift compact-protocol bytes."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes | memoryview, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)

    def byte(self) -> int:
        pos = self.pos
        if pos >= self.end:
            raise _Malformed(f"ends in the middle of a value at byte {pos}")
        self.pos = pos + 1
        return self.buf[pos]

    def varint(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7
            if shift >= 70:
                raise _Malformed(f"a varint longer than 10 bytes at byte {self.pos}")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def advance(self, n: int) -> None:
        if n < 0 or self.pos + n > self.end:
            raise _Malformed(f"a value of {n} bytes at byte {self.pos} runs past the end ({self.end} bytes)")
        self.pos += n

    def binary(self) -> bytes:
        n = self.varint()
        start = self.pos
        self.advance(n)
        return bytes(self.buf[start:start + n])

    def integer(self, ctype: int) -> int:
        if ctype == _I8:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ctype in (_I16, _I32, _I64):
            return self.zigzag()
        raise _Malformed(f"expected an integer at byte {self.pos}, found Thrift type {ctype}")

    def boolean(self, ctype: int) -> bool:
        if ctype == _TRUE:
            return True
        if ctype == _FALSE:
            return False
        raise _Malformed(f"expected a bool at byte {self.pos}, found Thrift type {ctype}")

    def fields(self) -> Iterator[tuple[int, int]]:
        """(field id, type) of each field of a struct, until its STOP; the caller reads or
        skips each field's value before asking for the next."""
        last = 0
        while True:
            header = self.byte()
            ctype = header & 0x0F
            if ctype == _STOP:
                if header != 0:
                    raise _Malformed(f"bad field header {header:#x} at byte {self.pos - 1}")
                return
            delta = header >> 4
            last = last + delta if delta else self.zigzag()
            yield last, ctype

    def list_header(self, element: int | None = None) -> tuple[int, int]:
        """(size, element type) of a list or set; every element takes at least one byte, so a
        size larger than the bytes left is malformed."""
        header = self.byte()
        size, etype = header >> 4, header & 0x0F
        if size == 15:
            size = self.varint()
        if etype == _STOP or etype > _STRUCT:
            raise _Malformed(f"bad list element type {etype} at byte {self.pos}")
        if size > self.end - self.pos:
            raise _Malformed(f"a list of {size} elements at byte {self.pos} is longer than the bytes left")
        if element is not None and size and etype != element and not (element == _TRUE and etype == _FALSE):
            raise _Malformed(f"expected a list of Thrift type {element} at byte {self.pos}, found {etype}")
        return size, etype

    def skip(self, ctype: int, depth: int) -> None:
        """Skip a value of this type (as a struct field: a bool has no payload)."""
        if depth > _MAX_DEPTH:
            raise _Malformed(f"nested deeper than {_MAX_DEPTH} levels at byte {self.pos}")
        if ctype in (_TRUE, _FALSE):
            return
        if ctype == _I8:
            self.advance(1)
        elif ctype in (_I16, _I32, _I64):
            self.varint()
        elif ctype == _DOUBLE:
            self.advance(8)
        elif ctype == _BINARY:
            self.advance(self.varint())
        elif ctype in (_LIST, _SET):
            size, etype = self.list_header()
            for _ in range(size):
                self.skip_element(etype, depth + 1)
        elif ctype == _MAP:
            size = self.varint()
            if size:
                kv = self.byte()
                if 2 * size > self.end - self.pos:
                    raise _Malformed(f"a map of {size} entries at byte {self.pos} is longer than the bytes left")
                for _ in range(size):
                    self.skip_element(kv >> 4, depth + 1)
                    self.skip_element(kv & 0x0F, depth + 1)
        elif ctype == _STRUCT:
            for _, t in self.fields():
                self.skip(t, depth + 1)
        else:
            raise _Malformed(f"unknown Thrift type {ctype} at byte {self.pos}")

    def skip_element(self, etype: int, depth: int) -> None:
        """Skip a list, set or map element (there a bool is one byte)."""
        if etype in (_TRUE, _FALSE):
            self.advance(1)
        elif etype == _STOP or etype > _STRUCT:
            raise _Malformed(f"unknown Thrift element type {etype} at byte {self.pos}")
        else:
            self.skip(etype, depth)

    def expect(self, ctype: int, wanted: int, what: str) -> None:
        if ctype != wanted:
            raise _Malformed(f"{what} has Thrift type {ctype}, not {wanted}, at byte {self.pos}")


@dataclass
class _SchemaElement:
    name: str = ""
    type: int | None = None
    type_length: int = 0
    repetition: int | None = None
    num_children: int | None = None
    converted: int | None = None
    scale: int = 0
    precision: int = 0
    logical: tuple | None = None


@dataclass
class _Chunk:
    type: int | None = None
    path: tuple[str, ...] = ()
    file_path: str | None = None
    has_meta: bool = False
    bloom_offset: int | None = None
    bloom_length: int | None = None


def _file_metadata(r: _Compact) -> tuple[list[_SchemaElement], list[list[_Chunk]]]:
    """FileMetaData: 2 = schema, 4 = row_groups; the rest is skipped."""
    schema: list[_SchemaElement] | None = None
    row_groups: list[list[_Chunk]] | None = None
    for fid, t in r.fields():
        if fid == 2:
            r.expect(t, _LIST, "FileMetaData.schema")
            size, _ = r.list_header(_STRUCT)
            schema = [_schema_element(r) for _ in range(size)]
        elif fid == 4:
            r.expect(t, _LIST, "FileMetaData.row_groups")
            size, _ = r.list_header(_STRUCT)
            row_groups = [_row_group(r) for _ in range(size)]
        else:
            r.skip(t, 1)
    if schema is None or row_groups is None:
        raise _Malformed("FileMetaData has no schema or no row groups")
    return schema, row_groups


def _schema_element(r: _Compact) -> _SchemaElement:
    el = _SchemaElement()
    has_name = False
    for fid, t in r.fields():
        if fid == 1:
            el.type = r.integer(t)
        elif fid == 2:
            el.type_length = r.integer(t)
        elif fid == 3:
            el.repetition = r.integer(t)
        elif fid == 4:
            r.expect(t, _BINARY, "SchemaElement.name")
            try:
                el.name = r.binary().decode("utf-8")
            except UnicodeDecodeError:
                raise _Malformed("a column name is not UTF-8") from None
            has_name = True
        elif fid == 5:
            el.num_children = r.integer(t)
        elif fid == 6:
            el.converted = r.integer(t)
        elif fid == 7:
            el.scale = r.integer(t)
        elif fid == 8:
            el.precision = r.integer(t)
        elif fid == 10:
            r.expect(t, _STRUCT, "SchemaElement.logicalType")
            el.logical = _logical_type(r)
        else:
            r.skip(t, 2)
    if not has_name:
        raise _Malformed("a SchemaElement has no name")
    return el


def _union(r: _Compact, depth: int) -> int | None:
    """The field id set in a union of empty structs (TimeUnit, the Bloom filter unions)."""
    chosen = None
    for fid, t in r.fields():
        r.expect(t, _STRUCT, "a union member")
        r.skip(t, depth)
        if chosen is not None:
            raise _Malformed("a union has more than one member set")
        chosen = fid
    return chosen


_TIME_UNITS = {1: "ms", 2: "us", 3: "ns"}


def _logical_type(r: _Compact) -> tuple | None:
    """LogicalType (a union) as a tuple: ("DECIMAL", scale, precision), ("TIMESTAMP", unit),
    ("TIME", unit), ("INTEGER", bit_width, signed), or (NAME,) for the rest."""
    out: tuple | None = None
    for fid, t in r.fields():
        r.expect(t, _STRUCT, "a LogicalType member")
        if out is not None:
            raise _Malformed("a LogicalType has more than one member set")
        if fid == 5:
            scale = precision = None
            for f, ft in r.fields():
                if f == 1:
                    scale = r.integer(ft)
                elif f == 2:
                    precision = r.integer(ft)
                else:
                    r.skip(ft, 4)
            if scale is None or precision is None:
                raise _Malformed("a DecimalType lacks its scale or precision")
            out = ("DECIMAL", scale, precision)
        elif fid in (7, 8):
            unit = None
            for f, ft in r.fields():
                if f == 2:
                    r.expect(ft, _STRUCT, "TimeUnit")
                    unit = _TIME_UNITS.get(_union(r, 5) or 0, "?")
                else:
                    r.skip(ft, 4)
            if unit is None:
                raise _Malformed("a time or timestamp type lacks its unit")
            out = ("TIME" if fid == 7 else "TIMESTAMP", unit)
        elif fid == 10:
            width = signed = None
            for f, ft in r.fields():
                if f == 1:
                    width = r.integer(ft)
                elif f == 2:
                    signed = r.boolean(ft)
                else:
                    r.skip(ft, 4)
            if width is None or signed is None:
                raise _Malformed("an IntType lacks its bit width or signedness")
            out = ("INTEGER", width, signed)
        else:
            r.skip(t, 3)
            out = (_LOGICAL_NAMES.get(fid, f"logical type #{fid}"),)
    return out


_LOGICAL_NAMES = {1: "STRING", 2: "MAP", 3: "LIST", 4: "ENUM", 6: "DATE", 11: "UNKNOWN", 12: "JSON", 13: "BSON",
                  14: "UUID", 15: "FLOAT16", 16: "VARIANT", 17: "GEOMETRY", 18: "GEOGRAPHY", 19: "VECTOR"}


def _row_group(r: _Compact) -> list[_Chunk]:
    chunks: list[_Chunk] | None = None
    for fid, t in r.fields():
        if fid == 1:
            r.expect(t, _LIST, "RowGroup.columns")
            size, _ = r.list_header(_STRUCT)
            chunks = [_column_chunk(r) for _ in range(size)]
        else:
            r.skip(t, 2)
    if chunks is None:
        raise _Malformed("a RowGroup has no columns")
    return chunks


def _column_chunk(r: _Compact) -> _Chunk:
    chunk = _Chunk()
    for fid, t in r.fields():
        if fid == 1:
            r.expect(t, _BINARY, "ColumnChunk.file_path")
            chunk.file_path = r.binary().decode("utf-8", "replace")
        elif fid == 3:
            r.expect(t, _STRUCT, "ColumnChunk.meta_data")
            _column_meta_data(r, chunk)
        else:
            r.skip(t, 3)
    return chunk


def _column_meta_data(r: _Compact, chunk: _Chunk) -> None:
    chunk.has_meta = True
    for fid, t in r.fields():
        if fid == 1:
            chunk.type = r.integer(t)
        elif fid == 3:
            r.expect(t, _LIST, "ColumnMetaData.path_in_schema")
            size, _ = r.list_header(_BINARY)
            chunk.path = tuple(r.binary().decode("utf-8", "replace") for _ in range(size))
        elif fid == 14:
            chunk.bloom_offset = r.integer(t)
        elif fid == 15:
            chunk.bloom_length = r.integer(t)
        else:
            r.skip(t, 4)


# what every writer puts after numBytes: algorithm BLOCK, hash XXHASH, compression UNCOMPRESSED
_USUAL_HEADER_TAIL = b"\x1c\x1c\x00\x00" * 3 + b"\x00"


def _filter_header(buf: bytes | memoryview) -> tuple[int, int, bool]:
    """A BloomFilterHeader at the start of `buf`: (its length in bytes, numBytes of the
    bitset, whether it is the split-block / xxHash / uncompressed filter we can probe)."""
    if len(buf) > 19 and buf[0] == 0x15:  # the usual header, read without the general parser
        zz = shift = 0
        for pos in range(1, 6):
            b = buf[pos]
            zz |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                end = pos + 1 + len(_USUAL_HEADER_TAIL)
                if buf[pos + 1:end] == _USUAL_HEADER_TAIL:
                    return end, (zz >> 1) ^ -(zz & 1), True
                break
    r = _Compact(buf)
    num_bytes = None
    members: dict[int, int | None] = {}
    for fid, t in r.fields():
        if fid == 1:
            num_bytes = r.integer(t)
        elif fid in (2, 3, 4):
            r.expect(t, _STRUCT, "a BloomFilterHeader union")
            members[fid] = _union(r, 2)
        else:
            r.skip(t, 1)
    if num_bytes is None or len(members) != 3:
        raise _Malformed("a BloomFilterHeader lacks numBytes, algorithm, hash or compression")
    return r.pos, num_bytes, all(members[f] == 1 for f in (2, 3, 4))  # BLOCK, XXHASH, UNCOMPRESSED


# ---------------------------------------------------------------------------
# Reading the file
# ---------------------------------------------------------------------------

def _corrupt(path: str, why: str) -> CorruptTableError:
    return CorruptTableError(f"data file {path}: {why}", path=path)


def _pread(f: BinaryIO, offset: int, n: int, path: str) -> bytes:
    f.seek(offset)
    data = f.read(n)
    while len(data) < n:  # a raw file may return short reads
        more = f.read(n - len(data))
        if not more:
            raise _corrupt(path, f"truncated: wanted {n} bytes at offset {offset}, the file ends after "
                                 f"{len(data)}")
        data += more
    return data


def _read_ranges(f: BinaryIO, ranges: Sequence[tuple[int, int]], path: str) -> list[memoryview]:
    """The bytes of each (offset, length), reading ranges closer than _COALESCE_GAP together."""
    out: list[memoryview] = [memoryview(b"")] * len(ranges)
    order = sorted((i for i in range(len(ranges)) if ranges[i][1] > 0), key=lambda i: ranges[i][0])
    i = 0
    while i < len(order):
        start = ranges[order[i]][0]
        end = start + ranges[order[i]][1]
        j = i + 1
        while j < len(order) and ranges[order[j]][0] <= end + _COALESCE_GAP:
            end = max(end, ranges[order[j]][0] + ranges[order[j]][1])
            j += 1
        view = memoryview(_pread(f, start, end - start, path))
        for k in order[i:j]:
            offset, length = ranges[k]
            out[k] = view[offset - start:offset - start + length]
        i = j
    return out


def _read_footer(f: BinaryIO, path: str) -> tuple[memoryview, int]:
    """The FileMetaData bytes and the offset where they start."""
    size = os.fstat(f.fileno()).st_size
    if size < 12:
        raise _corrupt(path, f"{size} bytes is too short for a Parquet file")
    tail_len = min(size, _TAIL_READ)
    tail = _pread(f, size - tail_len, tail_len, path)
    if tail[-4:] == b"PARE":
        raise _corrupt(path, "the Parquet footer is encrypted; mergetree cannot read encrypted files")
    if tail[-4:] != b"PAR1" or (tail_len == size and tail[:4] != b"PAR1"):
        raise _corrupt(path, "not a Parquet file (no PAR1 magic): truncated or overwritten")
    n = int.from_bytes(tail[-8:-4], "little")
    if n <= 0 or n > size - 12:
        raise _corrupt(path, f"the Parquet footer length {n} does not fit the file's {size} bytes")
    start = size - 8 - n
    if n + 8 <= tail_len:
        return memoryview(tail)[tail_len - 8 - n:tail_len - 8], start
    return memoryview(_pread(f, start, n, path)), start


def _leaves(schema: list[_SchemaElement]) -> list[tuple[tuple[str, ...], _SchemaElement]]:
    """(path, element) of each leaf column in file order (the order of a row group's chunks)."""
    if not schema or schema[0].num_children is None or schema[0].num_children < 0:
        raise _Malformed("the schema has no root group")
    leaves = []
    stack: list[list] = [[schema[0].num_children, ()]]
    i = 1
    while stack:
        if stack[-1][0] == 0:
            stack.pop()
            continue
        stack[-1][0] -= 1
        if i >= len(schema):
            raise _Malformed("the schema's groups claim more children than it has elements")
        el = schema[i]
        i += 1
        path = stack[-1][1] + (el.name,)
        if el.num_children is not None and el.type is None:
            if el.num_children < 0:
                raise _Malformed(f"schema element {el.name!r} has {el.num_children} children")
            stack.append([el.num_children, path])
        elif el.type is None:
            raise _Malformed(f"schema element {el.name!r} is neither a group nor a typed leaf")
        else:
            leaves.append((path, el))
    if i != len(schema):
        raise _Malformed(f"the schema has {len(schema) - i} elements outside its root group")
    return leaves


# ConvertedType -> the LogicalType it stands for, when a file has no LogicalType
_CONVERTED = {0: ("STRING",), 4: ("ENUM",), 6: ("DATE",), 7: ("TIME", "ms"), 8: ("TIME", "us"),
              9: ("TIMESTAMP", "ms"), 10: ("TIMESTAMP", "us"), 11: ("INTEGER", 8, False),
              12: ("INTEGER", 16, False), 13: ("INTEGER", 32, False), 14: ("INTEGER", 64, False),
              15: ("INTEGER", 8, True), 16: ("INTEGER", 16, True), 17: ("INTEGER", 32, True),
              18: ("INTEGER", 64, True), 19: ("JSON",), 20: ("BSON",), 21: ("INTERVAL",)}


def _encoding(el: _SchemaElement, column: str, path: str) -> dict[str, Any]:
    """The ColumnBloom encoding fields of a leaf, or UnsupportedTypeError."""
    physical = _PHYSICAL.get(el.type if el.type is not None else -1)
    if physical is None:
        raise _corrupt(path, f"column {column!r} has unknown Parquet physical type {el.type}")
    logical = el.logical
    if logical is None and el.converted is not None:
        logical = ("DECIMAL", el.scale, el.precision) if el.converted == 5 else \
            _CONVERTED.get(el.converted, (f"converted type #{el.converted}",))
    name = logical[0] if logical else None
    out: dict[str, Any] = {"physical_type": physical}
    if physical == "FIXED_LEN_BYTE_ARRAY":
        if el.type_length <= 0:
            raise _corrupt(path, f"column {column!r} is FIXED_LEN_BYTE_ARRAY of length {el.type_length}")
        out["type_length"] = el.type_length
    if logical is not None and name == "DECIMAL" and physical in ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY"):
        scale, precision = logical[1], logical[2]
        if not 0 < precision or not 0 <= scale:
            raise _corrupt(path, f"column {column!r} is DECIMAL({precision}, {scale})")
        return {**out, "kind": "decimal", "scale": scale, "precision": precision}
    if logical is not None and physical in ("INT32", "INT64"):
        if name == "INTEGER" and 8 <= logical[1] <= (32 if physical == "INT32" else 64):
            return {**out, "kind": "int" if logical[2] else "uint", "bit_width": logical[1]}
        if name == "DATE" and physical == "INT32":
            return {**out, "kind": "date"}
        if name == "TIME" and (logical[1] == "ms") == (physical == "INT32") and logical[1] in _UNITS:
            return {**out, "kind": "time", "unit": logical[1]}
        if name == "TIMESTAMP" and physical == "INT64" and logical[1] in _UNITS:
            return {**out, "kind": "timestamp", "unit": logical[1]}
    elif logical is None and physical in ("INT32", "INT64"):
        return {**out, "kind": "int", "bit_width": 32 if physical == "INT32" else 64}
    elif physical == "INT96" and logical is None:
        return {**out, "kind": "timestamp", "unit": "ns"}
    elif physical in ("FLOAT", "DOUBLE") and logical is None:
        return {**out, "kind": "float", "bit_width": 32 if physical == "FLOAT" else 64}
    elif physical == "BYTE_ARRAY" and name in ("STRING", "ENUM", "JSON"):
        return {**out, "kind": "string"}
    elif physical == "BYTE_ARRAY" and name in (None, "BSON"):
        return {**out, "kind": "binary"}
    elif physical == "FIXED_LEN_BYTE_ARRAY" and name in (None, "UUID"):
        return {**out, "kind": "binary"}
    elif physical == "FIXED_LEN_BYTE_ARRAY" and name == "FLOAT16" and el.type_length == 2:
        return {**out, "kind": "float", "bit_width": 16}
    raise UnsupportedTypeError(
        f"data file {path}: column {column!r} is stored as Parquet {physical}"
        f"{f' ({name})' if name else ''}, which has no Bloom filter lookup here")


def _column_names(columns: Sequence[str]) -> list[str]:
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Iterable):
        raise InvalidArgumentError(f"columns must be a sequence of column names, not {columns!r}")
    names = list(dict.fromkeys(columns))
    for name in names:
        if not isinstance(name, str):
            raise InvalidArgumentError(f"column names must be strings, not {name!r}")
    return names


def describe(path: str | os.PathLike[str], columns: Sequence[str]) -> dict[str, ColumnBloom]:
    """Parse a data file's footer once: each column's Bloom filters and value encoding.  A
    column without filters gets (0, 0) for every row group.  CorruptTableError (naming the
    file) if the file is missing, truncated or its footer malformed; SchemaMismatchError if
    it has no such top-level column; UnsupportedTypeError if the column's storage cannot be
    probed."""
    path = os.fspath(path)
    names = _column_names(columns)
    try:
        with open(path, "rb", buffering=0) as f:
            footer, footer_start = _read_footer(f, path)
            try:
                schema, row_groups = _file_metadata(_Compact(footer))
                leaves = _leaves(schema)
            except _Malformed as exc:
                raise _corrupt(path, f"the Parquet footer is malformed: {exc}") from None
            found: dict[str, dict[str, Any]] = {
                name: _describe_column(name, leaves, row_groups, path, footer_start) for name in names}
            _fill_lengths(f, found, path, footer_start)
            _fill_inline(f, found, path)
    except OSError as exc:
        raise _corrupt(path, f"cannot be read ({exc})") from None
    return {name: ColumnBloom(column=name, **fields) for name, fields in found.items()}


def _describe_column(name: str, leaves: list[tuple[tuple[str, ...], _SchemaElement]],
                     row_groups: list[list[_Chunk]], path: str, footer_start: int) -> dict[str, Any]:
    matches = [i for i, (p, _) in enumerate(leaves) if p[0] == name]
    if not matches:
        top = list(dict.fromkeys(p[0] for p, _ in leaves))
        raise SchemaMismatchError(f"data file {path} has no column {name!r}; it has {top}")
    if any(len(leaves[i][0]) > 1 for i in matches):
        raise UnsupportedTypeError(f"data file {path}: column {name!r} is nested; Bloom filters are probed "
                                   f"only on top-level primitive columns")
    if len(matches) > 1:
        raise SchemaMismatchError(f"data file {path} has {len(matches)} columns named {name!r}")
    index = matches[0]
    el = leaves[index][1]
    if el.repetition == 2:
        raise UnsupportedTypeError(f"data file {path}: column {name!r} is a repeated field")
    fields = _encoding(el, name, path)
    filters: list[tuple[int, int]] = []
    for rg, chunks in enumerate(row_groups):
        if len(chunks) != len(leaves):
            raise _corrupt(path, f"row group {rg} has {len(chunks)} column chunks for {len(leaves)} columns")
        chunk = chunks[index]
        if not chunk.has_meta or chunk.file_path or chunk.bloom_offset is None:
            filters.append((0, 0))  # no filter (or one we cannot reach): may contain anything
            continue
        if chunk.path != (name,) or chunk.type != el.type:
            raise _corrupt(path, f"row group {rg}: the chunk for column {name!r} is {chunk.path} of physical "
                                 f"type {chunk.type}, not the schema's {el.type}")
        offset, length = chunk.bloom_offset, chunk.bloom_length
        if length is None:
            length = -1  # not written by older writers: read from the filter's header (_fill_lengths)
        elif length <= 0:
            raise _corrupt(path, f"row group {rg}: column {name!r} has a Bloom filter of {length} bytes")
        if offset < 4 or offset + max(length, 1) > footer_start:
            raise _corrupt(path, f"row group {rg}: column {name!r} has a Bloom filter at offset {offset} "
                                 f"({length} bytes), outside the data before the footer")
        filters.append((offset, length))
    fields["filters"] = filters
    return fields


def _fill_lengths(f: BinaryIO, found: dict[str, dict[str, Any]], path: str, footer_start: int) -> None:
    """Filters without bloom_filter_length: their header says how long they are."""
    todo = [(name, i) for name, fields in found.items() for i, (_, n) in enumerate(fields["filters"]) if n < 0]
    if not todo:
        return
    starts = [found[name]["filters"][i][0] for name, i in todo]
    heads = _read_ranges(f, [(s, min(_HEADER_READ, footer_start - s)) for s in starts], path)
    for (name, i), start, head in zip(todo, starts, heads):
        try:
            header_len, num_bytes, _ = _filter_header(head)
        except _Malformed:  # perhaps a header longer than the first read: read up to the footer
            head = memoryview(_pread(f, start, footer_start - start, path)) if len(head) < footer_start - start \
                else head
            header_len, num_bytes = _checked_header(head, path, name, i)[:2]
        length = header_len + num_bytes
        if start + length > footer_start:
            raise _corrupt(path, f"row group {i}: column {name!r} has a Bloom filter of {length} bytes at "
                                 f"offset {start}, past the data before the footer")
        found[name]["filters"][i] = (start, length)


def _fill_inline(f: BinaryIO, found: dict[str, dict[str, Any]], path: str) -> None:
    """Small filters (at most INLINE_MAX_BYTES per column) are read now, checked and kept."""
    small = [name for name, fields in found.items() if sum(n for _, n in fields["filters"]) <= INLINE_MAX_BYTES]
    ranges = [(name, i, r) for name in small for i, r in enumerate(found[name]["filters"]) if r[1] > 0]
    blobs = _read_ranges(f, [r for _, _, r in ranges], path)
    parts: dict[str, list[bytes]] = {name: [] for name in small}
    for (name, i, _), blob in zip(ranges, blobs):
        _bitset(blob, path, name, i)  # a malformed filter is found now, not at query time
        parts[name].append(bytes(blob))
    for name, fields in found.items():
        fields["filters"] = tuple(fields["filters"])
        fields["inline"] = b"".join(parts[name]) if name in parts else None


def _checked_header(blob: bytes | memoryview, path: str, column: str, rg: int) -> tuple[int, int, bool]:
    try:
        header_len, num_bytes, usable = _filter_header(blob)
    except _Malformed as exc:
        raise _corrupt(path, f"row group {rg}: the Bloom filter header of column {column!r} is malformed: "
                             f"{exc}") from None
    if num_bytes <= 0 or (usable and num_bytes % 32):
        raise _corrupt(path, f"row group {rg}: column {column!r} has a Bloom filter bitset of {num_bytes} bytes")
    return header_len, num_bytes, usable


def _bitset(blob: memoryview, path: str, column: str, rg: int) -> memoryview | None:
    """The bitset of one filter (header and bitset), or None when it is not a split-block
    xxHash filter we can probe."""
    header_len, num_bytes, usable = _checked_header(blob, path, column, rg)
    if header_len + num_bytes > len(blob):
        raise _corrupt(path, f"row group {rg}: column {column!r} has a Bloom filter of {num_bytes} bytes "
                             f"after a {header_len}-byte header, in {len(blob)} bytes")
    return blob[header_len:header_len + num_bytes] if usable else None


# ---------------------------------------------------------------------------
# Query values -> the bytes the file hashed
# ---------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_JULIAN_EPOCH_DAY = 2_440_588          # the Julian day of 1970-01-01, for INT96
_NANOS_PER_DAY = 86_400 * 10**9
_NANOS_PER_UNIT = {"ms": 1_000_000, "us": 1_000, "ns": 1}
_NANOS_PER_ARROW_UNIT = {"s": 1_000_000_000, **_NANOS_PER_UNIT}
_FLOAT_FORMATS = {16: "<e", 32: "<f", 64: "<d"}
_INT32 = struct.Struct("<i")
_INT64 = struct.Struct("<q")

# None: the value may be anywhere (NaN); []: it is nowhere (null, or not representable)
Encoded = list[bytes] | None


def _wrong(bloom: ColumnBloom, v: Any, wanted: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"column {bloom.column!r} holds {bloom.kind} values: {v!r} "
                                f"({type(v).__name__}) is not {wanted}")


def _fixed_int(physical: str, n: int) -> list[bytes]:
    """The INT32 or INT64 bytes of n, [] when out of that type's range."""
    if physical == "INT32":
        return [_INT32.pack(n)] if -(2**31) <= n < 2**31 else []
    return [_INT64.pack(n)] if -(2**63) <= n < 2**63 else []


def _encode_int(b: ColumnBloom, v: Any) -> Encoded:
    if type(v) is not int and (isinstance(v, bool) or not isinstance(v, numbers.Integral)):
        raise _wrong(b, v, "an integer")
    n, width = int(v), b.bit_width
    if b.kind == "int":
        if not -(1 << (width - 1)) <= n < 1 << (width - 1):
            return []
    elif not 0 <= n < 1 << width:
        return []
    bits = 32 if b.physical_type == "INT32" else 64
    if n >= 1 << (bits - 1):  # an unsigned value: the same bits as a negative signed one
        n -= 1 << bits
    return _fixed_int(b.physical_type, n)


def _encode_float(b: ColumnBloom, v: Any) -> Encoded:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise _wrong(b, v, "a number")
    try:
        x = float(v)
    except OverflowError:  # an int beyond any float
        return []
    if math.isnan(x):
        return None
    if isinstance(v, numbers.Integral) and x != v:
        return []
    fmt = _FLOAT_FORMATS[b.bit_width]
    try:
        packed = struct.pack(fmt, x)
    except OverflowError:
        return []
    if struct.unpack(fmt, packed)[0] != x:  # not exactly a float16/32: never stored
        return []
    if x == 0.0:  # equal floats are equal: look up both zeros
        return [struct.pack(fmt, 0.0), struct.pack(fmt, -0.0)]
    return [packed]


def _encode_bytes(b: ColumnBloom, v: Any) -> Encoded:
    if isinstance(v, str):
        try:
            data = v.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: never in a UTF-8 column
            return []
    elif isinstance(v, (bytes, bytearray, memoryview)):
        data = bytes(v)
    elif isinstance(v, uuid.UUID):
        data = v.bytes
    else:
        raise _wrong(b, v, "a str or bytes")
    if b.physical_type == "FIXED_LEN_BYTE_ARRAY" and len(data) != b.type_length:
        return []
    return [data]


def _encode_date(b: ColumnBloom, v: Any) -> Encoded:
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None or v.time() != dt.time(0):
            return []
        v = v.date()
    if not isinstance(v, dt.date):
        raise _wrong(b, v, "a datetime.date")
    return _fixed_int(b.physical_type, v.toordinal() - _EPOCH_ORDINAL)


def _scalar_nanos(v: pa.Scalar) -> int:
    """Nanoseconds (since the epoch or midnight) of an Arrow timestamp or time scalar: read
    from its integer value, as `as_py()` would drop nanoseconds (or refuse without pandas)."""
    return int(v.value) * _NANOS_PER_ARROW_UNIT[v.type.unit]


def _encode_time(b: ColumnBloom, v: Any) -> Encoded:
    if isinstance(v, (pa.Time32Scalar, pa.Time64Scalar)):
        nanos = _scalar_nanos(v)
        n, rest = divmod(nanos, _NANOS_PER_UNIT[b.unit])
        return [] if rest else _fixed_int(b.physical_type, n)
    if not isinstance(v, dt.time):
        raise _wrong(b, v, "a datetime.time")
    nanos = (((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond) * 1000 \
        + int(getattr(v, "nanosecond", 0) or 0)
    n, rest = divmod(nanos, _NANOS_PER_UNIT[b.unit])
    return [] if rest else _fixed_int(b.physical_type, n)


def _encode_timestamp(b: ColumnBloom, v: Any) -> Encoded:
    """Aware datetimes by their instant, naive ones as UTC wall-clock time (as Arrow does);
    pandas Timestamps and Arrow timestamp scalars with their nanoseconds."""
    if isinstance(v, pa.TimestampScalar):
        nanos = _scalar_nanos(v)  # Arrow stores the UTC instant (or naive wall-clock as UTC)
    elif isinstance(v, dt.datetime):
        td = v - _EPOCH_UTC if v.utcoffset() is not None else v.replace(tzinfo=None) - _EPOCH
        nanos = ((td.days * 86_400 + td.seconds) * 1_000_000 + td.microseconds) * 1000 \
            + int(getattr(v, "nanosecond", 0) or 0)
    else:
        raise _wrong(b, v, "a datetime.datetime")
    if b.physical_type == "INT96":
        days, nanos_of_day = divmod(nanos, _NANOS_PER_DAY)
        julian = days + _JULIAN_EPOCH_DAY
        return [struct.pack("<qi", nanos_of_day, julian)] if 0 <= julian < 2**31 else []
    n, rest = divmod(nanos, _NANOS_PER_UNIT[b.unit])
    return [] if rest else _fixed_int(b.physical_type, n)


def _encode_decimal(b: ColumnBloom, v: Any) -> Encoded:
    if isinstance(v, bool):
        raise _wrong(b, v, "a decimal.Decimal")
    if isinstance(v, numbers.Integral):
        v = decimal.Decimal(int(v))
    if not isinstance(v, decimal.Decimal):
        raise _wrong(b, v, "a decimal.Decimal")
    if not v.is_finite():
        return []
    sign, digit_tuple, exponent = v.as_tuple()
    assert isinstance(exponent, int)
    digits = int("".join(map(str, digit_tuple)) or "0")
    if digits == 0:
        unscaled = 0
    else:
        shift = exponent + b.scale  # unscaled = digits * 10**shift, exactly
        if shift >= 0:
            if shift + len(digit_tuple) > b.precision:
                return []
            unscaled = digits * 10**shift
        else:
            if -shift > len(digit_tuple):  # more fraction digits than the scale holds
                return []
            unscaled, rest = divmod(digits, 10**-shift)
            if rest:
                return []
        if unscaled >= 10**b.precision:
            return []
        if sign:
            unscaled = -unscaled
    if b.physical_type == "FIXED_LEN_BYTE_ARRAY":
        try:
            return [unscaled.to_bytes(b.type_length, "big", signed=True)]
        except OverflowError:
            return []
    return _fixed_int(b.physical_type, unscaled)


_ENCODERS: dict[str, Callable[[ColumnBloom, Any], Encoded]] = {
    "int": _encode_int, "uint": _encode_int, "float": _encode_float, "string": _encode_bytes,
    "binary": _encode_bytes, "date": _encode_date, "time": _encode_time, "timestamp": _encode_timestamp,
    "decimal": _encode_decimal,
}


_NANO_SCALARS = (pa.TimestampScalar, pa.Time32Scalar, pa.Time64Scalar)


def _hashes(bloom: ColumnBloom, values: Iterable[Any]) -> np.ndarray | None:
    """The xxh64 hashes to probe for `values`, or None when any value may be anywhere."""
    if isinstance(values, (str, bytes, bytearray, memoryview)) or not isinstance(values, Iterable):
        raise InvalidArgumentError(f"values must be a sequence of values, not {values!r}")
    encode = _ENCODERS[bloom.kind]
    encoded: set[bytes] = set()
    for v in values:
        if isinstance(v, pa.Scalar) and not isinstance(v, _NANO_SCALARS):
            v = v.as_py()  # Arrow scalars as their Python values (temporal ones keep nanoseconds)
        if v is None or (isinstance(v, pa.Scalar) and not v.is_valid):  # = NULL matches no row
            continue
        e = encode(bloom, v)
        if e is None:
            return None
        encoded.update(e)
    return np.fromiter((xxhash.xxh64_intdigest(e) for e in encoded), dtype=np.uint64, count=len(encoded))


# ---------------------------------------------------------------------------
# Probes
# ---------------------------------------------------------------------------

def _filter_blobs(path: str, bloom: ColumnBloom, wanted: list[int]) -> dict[int, memoryview]:
    """The bytes (header and bitset) of the filters of the row groups in `wanted`."""
    if bloom.inline is not None:
        view = memoryview(bloom.inline)
        out, at = {}, 0
        for i, (_, length) in enumerate(bloom.filters):
            out[i] = view[at:at + length]
            at += length
        return {i: out[i] for i in wanted}
    try:
        with open(path, "rb", buffering=0) as f:
            blobs = _read_ranges(f, [bloom.filters[i] for i in wanted], path)
    except OSError as exc:
        raise _corrupt(path, f"cannot be read ({exc})") from None
    return dict(zip(wanted, blobs))


def _may_contain(path: str | os.PathLike[str], bloom: ColumnBloom, values: Iterable[Any], first: bool) -> list[int]:
    if not isinstance(bloom, ColumnBloom):
        raise InvalidArgumentError(f"bloom must be a ColumnBloom, not {type(bloom).__name__}")
    path = os.fspath(path)
    hashes = _hashes(bloom, values)
    groups = range(len(bloom.filters))
    if hashes is None:
        return list(groups[:1] if first else groups)
    if hashes.size == 0:
        return []
    unfiltered = [i for i in groups if bloom.filters[i][1] == 0]
    if first and unfiltered:
        return unfiltered[:1]
    blobs = _filter_blobs(path, bloom, [i for i in groups if bloom.filters[i][1] > 0])
    out = []
    for i in groups:
        if bloom.filters[i][1] > 0:
            bitset = _bitset(blobs[i], path, bloom.column, i)
            if bitset is not None and not might_contain(bitset, hashes).any():
                continue
        out.append(i)
        if first:
            break
    return out


def row_groups_that_may_contain(path: str | os.PathLike[str], bloom: ColumnBloom, values: Iterable[Any]) -> list[int]:
    """The row groups of the data file at `path` that may hold any of `values` (Python
    values of the column's Arrow type; None matches nothing), ascending.  A row group left
    out certainly holds none of them.  Arrow scalars work too (timestamps keep their
    nanoseconds without pandas).  Reads the filters in one request, or none when the
    description has them inline."""
    return _may_contain(path, bloom, values, first=False)


def file_may_contain(path: str | os.PathLike[str], bloom: ColumnBloom, values: Iterable[Any]) -> bool:
    """Whether the data file at `path` may hold any of `values` (False: certainly none)."""
    return bool(_may_contain(path, bloom, values, first=True))
