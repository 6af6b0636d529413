"""Bloom file index: the Parquet split-block Bloom filters (SBBF) that pyarrow writes into
each data file, probed for ``column = value`` and ``column IN (...)`` at file and row-group
level.

pyarrow (>= 24) writes the filters (``pq.write_table(..., bloom_filter_options=...)``, see
:func:`write_options`) but cannot read them, so this module does: :func:`describe` reads a
file's footer (through `parquet_footer`: the Thrift compact protocol, only the fields needed)
once, at write time, into a :class:`ColumnBloom` per column: where each row group's filter is, how
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import xxhash

from ..._bloom import might_contain
from ...errors import InvalidArgumentError, SchemaMismatchError, UnsupportedTypeError
from ...storage import ObjectNotFoundError
from ..objects import StoredFile
from .parquet_footer import (
    CONVERTED_TYPES,
    PHYSICAL_TYPES,
    ColumnChunk,
    MalformedFooter,
    SchemaElement,
    ThriftCompactReader,
    bloom_filter_header,
    corrupt_file,
    file_metadata,
    leaf_columns,
    read_exactly,
    read_footer,
    read_ranges,
)

__all__ = ["INLINE_MAX_BYTES", "ColumnBloom", "bloom_supported", "check_bloom_column", "describe",
           "file_may_contain", "row_groups_that_may_contain", "write_options"]

INLINE_MAX_BYTES = 1024     # a column's filters up to this many bytes in all are kept in the description
_HEADER_READ = 256          # a BloomFilterHeader is ~16 bytes; a longer one is read again, whole
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
        if self.physical_type not in PHYSICAL_TYPES.values() or self.kind not in _KINDS:
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




def _encoding(el: SchemaElement, column: str, path: str) -> dict[str, Any]:
    """The ColumnBloom encoding fields of a leaf, or UnsupportedTypeError."""
    physical = PHYSICAL_TYPES.get(el.type if el.type is not None else -1)
    if physical is None:
        raise corrupt_file(path, f"column {column!r} has unknown Parquet physical type {el.type}")
    logical = el.logical
    if logical is None and el.converted is not None:
        logical = ("DECIMAL", el.scale, el.precision) if el.converted == 5 else \
            CONVERTED_TYPES.get(el.converted, (f"converted type #{el.converted}",))
    name = logical[0] if logical else None
    out: dict[str, Any] = {"physical_type": physical}
    if physical == "FIXED_LEN_BYTE_ARRAY":
        if el.type_length <= 0:
            raise corrupt_file(path, f"column {column!r} is FIXED_LEN_BYTE_ARRAY of length {el.type_length}")
        out["type_length"] = el.type_length
    if logical is not None and name == "DECIMAL" and physical in ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY"):
        scale, precision = logical[1], logical[2]
        if not 0 < precision or not 0 <= scale:
            raise corrupt_file(path, f"column {column!r} is DECIMAL({precision}, {scale})")
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


def _name(path: str | os.PathLike[str] | StoredFile) -> str:
    return str(path) if isinstance(path, StoredFile) else os.fspath(path)


def _open(path: str | os.PathLike[str] | StoredFile) -> Any:
    """A local file, or an object's seekable file of ranged GETs."""
    if isinstance(path, StoredFile):
        return path.open()
    return open(path, "rb", buffering=0)


def describe(path: str | os.PathLike[str] | StoredFile, columns: Sequence[str]) -> dict[str, ColumnBloom]:
    """Parse a data file's footer once: each column's Bloom filters and value encoding.  A
    column without filters gets (0, 0) for every row group.  CorruptTableError (naming the
    file) if the file is missing, truncated or its footer malformed; SchemaMismatchError if
    it has no such top-level column; UnsupportedTypeError if the column's storage cannot be
    probed.  `path` may be a `StoredFile` (a table's on an object store: ranged GETs)."""
    file = path
    path = _name(path)
    names = _column_names(columns)
    try:
        with _open(file) as f:
            footer, footer_start = read_footer(f, path)
            try:
                schema, row_groups = file_metadata(ThriftCompactReader(footer))
                leaves = leaf_columns(schema)
            except MalformedFooter as exc:
                raise corrupt_file(path, f"the Parquet footer is malformed: {exc}") from None
            found: dict[str, dict[str, Any]] = {
                name: _describe_column(name, leaves, row_groups, path, footer_start) for name in names}
            _fill_lengths(f, found, path, footer_start)
            _fill_inline(f, found, path)
    except OSError as exc:
        raise corrupt_file(path, f"cannot be read ({exc})") from None
    return {name: ColumnBloom(column=name, **fields) for name, fields in found.items()}


def _describe_column(name: str, leaves: list[tuple[tuple[str, ...], SchemaElement]],
                     row_groups: list[list[ColumnChunk]], path: str, footer_start: int) -> dict[str, Any]:
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
            raise corrupt_file(path, f"row group {rg} has {len(chunks)} column chunks for {len(leaves)} columns")
        chunk = chunks[index]
        if not chunk.has_meta or chunk.file_path or chunk.bloom_offset is None:
            filters.append((0, 0))  # no filter (or one we cannot reach): may contain anything
            continue
        if chunk.path != (name,) or chunk.type != el.type:
            raise corrupt_file(path, f"row group {rg}: the chunk for column {name!r} is {chunk.path} of physical "
                                 f"type {chunk.type}, not the schema's {el.type}")
        offset, length = chunk.bloom_offset, chunk.bloom_length
        if length is None:
            length = -1  # not written by older writers: read from the filter's header (_fill_lengths)
        elif length <= 0:
            raise corrupt_file(path, f"row group {rg}: column {name!r} has a Bloom filter of {length} bytes")
        if offset < 4 or offset + max(length, 1) > footer_start:
            raise corrupt_file(path, f"row group {rg}: column {name!r} has a Bloom filter at offset {offset} "
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
    heads = read_ranges(f, [(s, min(_HEADER_READ, footer_start - s)) for s in starts], path)
    for (name, i), start, head in zip(todo, starts, heads):
        try:
            header_len, num_bytes, _ = bloom_filter_header(head)
        except MalformedFooter:  # perhaps a header longer than the first read: read up to the footer
            head = memoryview(read_exactly(f, start, footer_start - start, path)) if len(head) < footer_start - start \
                else head
            header_len, num_bytes = _checked_header(head, path, name, i)[:2]
        length = header_len + num_bytes
        if start + length > footer_start:
            raise corrupt_file(path, f"row group {i}: column {name!r} has a Bloom filter of {length} bytes at "
                                 f"offset {start}, past the data before the footer")
        found[name]["filters"][i] = (start, length)


def _fill_inline(f: BinaryIO, found: dict[str, dict[str, Any]], path: str) -> None:
    """Small filters (at most INLINE_MAX_BYTES per column) are read now, checked and kept."""
    small = [name for name, fields in found.items() if sum(n for _, n in fields["filters"]) <= INLINE_MAX_BYTES]
    ranges = [(name, i, r) for name in small for i, r in enumerate(found[name]["filters"]) if r[1] > 0]
    blobs = read_ranges(f, [r for _, _, r in ranges], path)
    parts: dict[str, list[bytes]] = {name: [] for name in small}
    for (name, i, _), blob in zip(ranges, blobs):
        _bitset(blob, path, name, i)  # a malformed filter is found now, not at query time
        parts[name].append(bytes(blob))
    for name, fields in found.items():
        fields["filters"] = tuple(fields["filters"])
        fields["inline"] = b"".join(parts[name]) if name in parts else None


def _checked_header(blob: bytes | memoryview, path: str, column: str, rg: int) -> tuple[int, int, bool]:
    try:
        header_len, num_bytes, usable = bloom_filter_header(blob)
    except MalformedFooter as exc:
        raise corrupt_file(path, f"row group {rg}: the Bloom filter header of column {column!r} is malformed: "
                             f"{exc}") from None
    if num_bytes <= 0 or (usable and num_bytes % 32):
        raise corrupt_file(path, f"row group {rg}: column {column!r} has a Bloom filter bitset of {num_bytes} bytes")
    return header_len, num_bytes, usable


def _bitset(blob: memoryview, path: str, column: str, rg: int) -> memoryview | None:
    """The bitset of one filter (header and bitset), or None when it is not a split-block
    xxHash filter we can probe."""
    header_len, num_bytes, usable = _checked_header(blob, path, column, rg)
    if header_len + num_bytes > len(blob):
        raise corrupt_file(path, f"row group {rg}: column {column!r} has a Bloom filter of {num_bytes} bytes "
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

def _filter_blobs(path: str | StoredFile, bloom: ColumnBloom, wanted: list[int]) -> dict[int, memoryview]:
    """The bytes (header and bitset) of the filters of the row groups in `wanted`."""
    if bloom.inline is not None:
        view = memoryview(bloom.inline)
        out, at = {}, 0
        for i, (_, length) in enumerate(bloom.filters):
            out[i] = view[at:at + length]
            at += length
        return {i: out[i] for i in wanted}
    if isinstance(path, StoredFile):  # one request per coalesced span, in parallel
        try:
            blobs = [memoryview(b) for b in path.storage.read_ranges(path.name, [bloom.filters[i] for i in wanted])]
        except ObjectNotFoundError as exc:
            raise corrupt_file(str(path), f"cannot be read ({exc})") from None
        return dict(zip(wanted, blobs))
    try:
        with open(path, "rb", buffering=0) as f:
            blobs = read_ranges(f, [bloom.filters[i] for i in wanted], path)
    except OSError as exc:
        raise corrupt_file(path, f"cannot be read ({exc})") from None
    return dict(zip(wanted, blobs))


def _may_contain(path: str | os.PathLike[str] | StoredFile, bloom: ColumnBloom, values: Iterable[Any],
                 first: bool) -> list[int]:
    if not isinstance(bloom, ColumnBloom):
        raise InvalidArgumentError(f"bloom must be a ColumnBloom, not {type(bloom).__name__}")
    if not isinstance(path, StoredFile):
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
            bitset = _bitset(blobs[i], str(path), bloom.column, i)
            if bitset is not None and not might_contain(bitset, hashes).any():
                continue
        out.append(i)
        if first:
            break
    return out


def row_groups_that_may_contain(path: str | os.PathLike[str] | StoredFile, bloom: ColumnBloom,
                                values: Iterable[Any]) -> list[int]:
    """The row groups of the data file at `path` that may hold any of `values` (Python
    values of the column's Arrow type; None matches nothing), ascending.  A row group left
    out certainly holds none of them.  Arrow scalars work too (timestamps keep their
    nanoseconds without pandas).  Reads the filters in one request, or none when the
    description has them inline."""
    return _may_contain(path, bloom, values, first=False)


def file_may_contain(path: str | os.PathLike[str] | StoredFile, bloom: ColumnBloom, values: Iterable[Any]) -> bool:
    """Whether the data file at `path` may hold any of `values` (False: certainly none)."""
    return bool(_may_contain(path, bloom, values, first=True))
