"""A Parquet file's footer, read by hand: just enough of the Thrift compact protocol to get
the schema (names, physical and logical types), each row group's column chunks and where their
Bloom filters are, and a Bloom filter's header.  pyarrow exposes none of the Bloom filter
offsets, so the Bloom index (`bloom.py`) reads them here.

Every read is bounds-checked; every loop consumes input or is bounded by the bytes left;
nesting is limited.  Malformed input raises `MalformedFooter`, which callers turn into
`CorruptTableError` naming the file (`corrupt_file`)."""
from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from ...errors import CorruptTableError

__all__ = ["CONVERTED_TYPES", "PHYSICAL_TYPES", "ColumnChunk", "FileLayout", "MalformedFooter", "PageLocation",
           "PageRun", "SchemaElement", "ThriftCompactReader", "ThriftCompactWriter", "bloom_filter_header",
           "column_index", "corrupt_file", "file_layout", "file_metadata", "leaf_columns", "offset_index",
           "page_file", "read_exactly", "read_footer", "read_ranges"]

_TAIL_READ = 64 * 1024      # the first read of a footer: the file's last 64 KiB
_COALESCE_GAP = 64 * 1024   # filters closer than this are read in one request
_MAX_DEPTH = 64             # Thrift nesting deeper than this is malformed (Parquet needs < 10)

PHYSICAL_TYPES = {0: "BOOLEAN", 1: "INT32", 2: "INT64", 3: "INT96", 4: "FLOAT", 5: "DOUBLE", 6: "BYTE_ARRAY",
             7: "FIXED_LEN_BYTE_ARRAY"}

# ---------------------------------------------------------------------------
# Thrift compact protocol: just enough to read a Parquet footer and a
# BloomFilterHeader.  Every read is bounds-checked; every loop consumes input
# or is bounded by the bytes left; nesting is limited.  Malformed input raises
# MalformedFooter, which the callers turn into CorruptTableError naming the file.
# ---------------------------------------------------------------------------

class MalformedFooter(Exception):
    """The bytes are not the Thrift structure expected (never escapes this module)."""


_STOP, _TRUE, _FALSE, _I8, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class ThriftCompactReader:
    """A cursor over Thrift compact-protocol bytes."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes | memoryview, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)

    def byte(self) -> int:
        pos = self.pos
        if pos >= self.end:
            raise MalformedFooter(f"ends in the middle of a value at byte {pos}")
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
                raise MalformedFooter(f"a varint longer than 10 bytes at byte {self.pos}")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def advance(self, n: int) -> None:
        if n < 0 or self.pos + n > self.end:
            raise MalformedFooter(f"a value of {n} bytes at byte {self.pos} runs past the end ({self.end} bytes)")
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
        raise MalformedFooter(f"expected an integer at byte {self.pos}, found Thrift type {ctype}")

    def boolean(self, ctype: int) -> bool:
        if ctype == _TRUE:
            return True
        if ctype == _FALSE:
            return False
        raise MalformedFooter(f"expected a bool at byte {self.pos}, found Thrift type {ctype}")

    def fields(self) -> Iterator[tuple[int, int]]:
        """(field id, type) of each field of a struct, until its STOP; the caller reads or
        skips each field's value before asking for the next."""
        last = 0
        while True:
            header = self.byte()
            ctype = header & 0x0F
            if ctype == _STOP:
                if header != 0:
                    raise MalformedFooter(f"bad field header {header:#x} at byte {self.pos - 1}")
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
            raise MalformedFooter(f"bad list element type {etype} at byte {self.pos}")
        if size > self.end - self.pos:
            raise MalformedFooter(f"a list of {size} elements at byte {self.pos} is longer than the bytes left")
        if element is not None and size and etype != element and not (element == _TRUE and etype == _FALSE):
            raise MalformedFooter(f"expected a list of Thrift type {element} at byte {self.pos}, found {etype}")
        return size, etype

    def skip(self, ctype: int, depth: int) -> None:
        """Skip a value of this type (as a struct field: a bool has no payload)."""
        if depth > _MAX_DEPTH:
            raise MalformedFooter(f"nested deeper than {_MAX_DEPTH} levels at byte {self.pos}")
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
                    raise MalformedFooter(f"a map of {size} entries at byte {self.pos} is longer than the bytes left")
                for _ in range(size):
                    self.skip_element(kv >> 4, depth + 1)
                    self.skip_element(kv & 0x0F, depth + 1)
        elif ctype == _STRUCT:
            for _, t in self.fields():
                self.skip(t, depth + 1)
        else:
            raise MalformedFooter(f"unknown Thrift type {ctype} at byte {self.pos}")

    def skip_element(self, etype: int, depth: int) -> None:
        """Skip a list, set or map element (there a bool is one byte)."""
        if etype in (_TRUE, _FALSE):
            self.advance(1)
        elif etype == _STOP or etype > _STRUCT:
            raise MalformedFooter(f"unknown Thrift element type {etype} at byte {self.pos}")
        else:
            self.skip(etype, depth)

    def expect(self, ctype: int, wanted: int, what: str) -> None:
        if ctype != wanted:
            raise MalformedFooter(f"{what} has Thrift type {ctype}, not {wanted}, at byte {self.pos}")


@dataclass
class SchemaElement:
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
class ColumnChunk:
    type: int | None = None
    path: tuple[str, ...] = ()
    file_path: str | None = None
    has_meta: bool = False
    bloom_offset: int | None = None
    bloom_length: int | None = None
    # where its pages are (what a page-level read needs)
    encodings: tuple[int, ...] = ()
    codec: int = 0
    num_values: int = 0
    total_uncompressed_size: int = 0
    total_compressed_size: int = 0
    data_page_offset: int = 0
    dictionary_page_offset: int | None = None
    # the page index: (offset, length) of its OffsetIndex and ColumnIndex, when written
    offset_index: tuple[int, int] | None = None
    column_index: tuple[int, int] | None = None


@dataclass
class FileLayout:
    """A footer as a page-level read needs it: the schema (each element's Thrift bytes too, to
    copy into a smaller file), each row group's column chunks and row count."""

    schema: list[SchemaElement]
    schema_bytes: list[bytes]
    row_groups: list[list[ColumnChunk]]
    row_counts: list[int]


@dataclass
class PageLocation:
    offset: int
    size: int
    first_row: int


def file_metadata(r: ThriftCompactReader) -> tuple[list[SchemaElement], list[list[ColumnChunk]]]:
    """FileMetaData's schema and row groups (its column chunks)."""
    layout = file_layout(r)
    return layout.schema, layout.row_groups


def file_layout(r: ThriftCompactReader) -> FileLayout:
    """FileMetaData as a `FileLayout` (2 = schema, 4 = row groups; the rest is skipped)."""
    schema: list[SchemaElement] | None = None
    spans: list[bytes] = []
    groups: list[tuple[list[ColumnChunk], int]] | None = None
    for fid, t in r.fields():
        if fid == 2:
            r.expect(t, _LIST, "FileMetaData.schema")
            size, _ = r.list_header(_STRUCT)
            schema = []
            for _ in range(size):
                start = r.pos
                schema.append(_schema_element(r))
                spans.append(bytes(r.buf[start:r.pos]))
        elif fid == 4:
            r.expect(t, _LIST, "FileMetaData.row_groups")
            size, _ = r.list_header(_STRUCT)
            groups = [_row_group_rows(r) for _ in range(size)]
        else:
            r.skip(t, 1)
    if schema is None or groups is None:
        raise MalformedFooter("FileMetaData has no schema or no row groups")
    return FileLayout(schema, spans, [g for g, _ in groups], [n for _, n in groups])


def _schema_element(r: ThriftCompactReader) -> SchemaElement:
    el = SchemaElement()
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
                raise MalformedFooter("a column name is not UTF-8") from None
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
        raise MalformedFooter("a SchemaElement has no name")
    return el


def _union(r: ThriftCompactReader, depth: int) -> int | None:
    """The field id set in a union of empty structs (TimeUnit, the Bloom filter unions)."""
    chosen = None
    for fid, t in r.fields():
        r.expect(t, _STRUCT, "a union member")
        r.skip(t, depth)
        if chosen is not None:
            raise MalformedFooter("a union has more than one member set")
        chosen = fid
    return chosen


_TIME_UNITS = {1: "ms", 2: "us", 3: "ns"}


def _logical_type(r: ThriftCompactReader) -> tuple | None:
    """LogicalType (a union) as a tuple: ("DECIMAL", scale, precision), ("TIMESTAMP", unit),
    ("TIME", unit), ("INTEGER", bit_width, signed), or (NAME,) for the rest."""
    out: tuple | None = None
    for fid, t in r.fields():
        r.expect(t, _STRUCT, "a LogicalType member")
        if out is not None:
            raise MalformedFooter("a LogicalType has more than one member set")
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
                raise MalformedFooter("a DecimalType lacks its scale or precision")
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
                raise MalformedFooter("a time or timestamp type lacks its unit")
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
                raise MalformedFooter("an IntType lacks its bit width or signedness")
            out = ("INTEGER", width, signed)
        else:
            r.skip(t, 3)
            out = (_LOGICAL_NAMES.get(fid, f"logical type #{fid}"),)
    return out


_LOGICAL_NAMES = {1: "STRING", 2: "MAP", 3: "LIST", 4: "ENUM", 6: "DATE", 11: "UNKNOWN", 12: "JSON", 13: "BSON",
                  14: "UUID", 15: "FLOAT16", 16: "VARIANT", 17: "GEOMETRY", 18: "GEOGRAPHY", 19: "VECTOR"}


def _row_group_rows(r: ThriftCompactReader) -> tuple[list[ColumnChunk], int]:
    chunks: list[ColumnChunk] | None = None
    rows = None
    for fid, t in r.fields():
        if fid == 1:
            r.expect(t, _LIST, "RowGroup.columns")
            size, _ = r.list_header(_STRUCT)
            chunks = [_column_chunk(r) for _ in range(size)]
        elif fid == 3:
            rows = r.integer(t)
        else:
            r.skip(t, 2)
    if chunks is None or rows is None or rows < 0:
        raise MalformedFooter("a RowGroup has no columns or no row count")
    return chunks, rows


def _column_chunk(r: ThriftCompactReader) -> ColumnChunk:
    chunk = ColumnChunk()
    # 4/5: the offset index's offset and length, 6/7: the column index's
    index_fields: dict[int, int] = {}
    for fid, t in r.fields():
        if fid == 1:
            r.expect(t, _BINARY, "ColumnChunk.file_path")
            chunk.file_path = r.binary().decode("utf-8", "replace")
        elif fid == 3:
            r.expect(t, _STRUCT, "ColumnChunk.meta_data")
            _column_meta_data(r, chunk)
        elif 4 <= fid <= 7:
            index_fields[fid] = r.integer(t)
        else:
            r.skip(t, 3)
    if 4 in index_fields and 5 in index_fields:
        chunk.offset_index = (index_fields[4], index_fields[5])
    if 6 in index_fields and 7 in index_fields:
        chunk.column_index = (index_fields[6], index_fields[7])
    return chunk


def _column_meta_data(r: ThriftCompactReader, chunk: ColumnChunk) -> None:
    chunk.has_meta = True
    for fid, t in r.fields():
        if fid == 1:
            chunk.type = r.integer(t)
        elif fid == 3:
            r.expect(t, _LIST, "ColumnMetaData.path_in_schema")
            size, _ = r.list_header(_BINARY)
            chunk.path = tuple(r.binary().decode("utf-8", "replace") for _ in range(size))
        elif fid == 2:
            r.expect(t, _LIST, "ColumnMetaData.encodings")
            size, _ = r.list_header(_I32)
            chunk.encodings = tuple(r.zigzag() for _ in range(size))
        elif fid == 4:
            chunk.codec = r.integer(t)
        elif fid == 5:
            chunk.num_values = r.integer(t)
        elif fid == 6:
            chunk.total_uncompressed_size = r.integer(t)
        elif fid == 7:
            chunk.total_compressed_size = r.integer(t)
        elif fid == 9:
            chunk.data_page_offset = r.integer(t)
        elif fid == 11:
            chunk.dictionary_page_offset = r.integer(t)
        elif fid == 14:
            chunk.bloom_offset = r.integer(t)
        elif fid == 15:
            chunk.bloom_length = r.integer(t)
        else:
            r.skip(t, 4)


def offset_index(buf: bytes | memoryview) -> list[PageLocation]:
    """An OffsetIndex: where each data page of a column chunk is and its first row (rows
    counted from the row group's start), checked to be in order."""
    r = ThriftCompactReader(buf)
    pages: list[PageLocation] | None = None
    for fid, t in r.fields():
        if fid == 1:
            r.expect(t, _LIST, "OffsetIndex.page_locations")
            size, _ = r.list_header(_STRUCT)
            pages = [_page_location(r) for _ in range(size)]
        else:
            r.skip(t, 1)
    if not pages:
        raise MalformedFooter("an OffsetIndex has no page locations")
    if pages[0].first_row != 0:
        raise MalformedFooter(f"an OffsetIndex's first page starts at row {pages[0].first_row}, not 0")
    for before, after in itertools.pairwise(pages):
        if after.first_row <= before.first_row or after.offset < before.offset + before.size:
            raise MalformedFooter("an OffsetIndex's pages are out of order or overlap")
    return pages


def _page_location(r: ThriftCompactReader) -> PageLocation:
    offset = size = first = None
    for fid, t in r.fields():
        if fid == 1:
            offset = r.integer(t)
        elif fid == 2:
            size = r.integer(t)
        elif fid == 3:
            first = r.integer(t)
        else:
            r.skip(t, 2)
    if offset is None or size is None or first is None or offset < 0 or size <= 0 or first < 0:
        raise MalformedFooter("a PageLocation lacks or has a bad offset, size or first row")
    return PageLocation(offset, size, first)


def column_index(buf: bytes | memoryview) -> tuple[list[bool], list[bytes], list[bytes]]:
    """A ColumnIndex: per page, whether it holds only nulls, and its min and max value (as the
    plain encoding of the column's physical type)."""
    r = ThriftCompactReader(buf)
    null_pages: list[bool] | None = None
    bounds: dict[int, list[bytes]] = {}
    for fid, t in r.fields():
        if fid == 1:
            r.expect(t, _LIST, "ColumnIndex.null_pages")
            size, _ = r.list_header(_TRUE)
            null_pages = [r.byte() == 1 for _ in range(size)]  # a bool element is a byte: 1 true, 2 false
        elif fid in (2, 3):
            r.expect(t, _LIST, "ColumnIndex bounds")
            size, _ = r.list_header(_BINARY)
            bounds[fid] = [r.binary() for _ in range(size)]
        else:
            r.skip(t, 1)
    if null_pages is None or 2 not in bounds or 3 not in bounds \
            or not len(null_pages) == len(bounds[2]) == len(bounds[3]):
        raise MalformedFooter("a ColumnIndex lacks null pages or bounds, or their counts differ")
    return null_pages, bounds[2], bounds[3]


class ThriftCompactWriter:
    """Just enough of the Thrift compact protocol to write a small Parquet footer."""

    def __init__(self) -> None:
        self.out = bytearray()
        self._last = [0]

    def _varint(self, n: int) -> None:
        while n >= 0x80:
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7
        self.out.append(n)

    def _zigzag(self, n: int) -> None:
        self._varint((n << 1) ^ (n >> 63))

    def field(self, fid: int, ctype: int) -> None:
        delta = fid - self._last[-1]
        if 0 < delta <= 15:
            self.out.append((delta << 4) | ctype)
        else:
            self.out.append(ctype)
            self._zigzag(fid)
        self._last[-1] = fid

    def integer(self, fid: int, value: int, ctype: int = _I64) -> None:
        self.field(fid, ctype)
        self._zigzag(value)

    def binary(self, fid: int, value: bytes) -> None:
        self.field(fid, _BINARY)
        self._varint(len(value))
        self.out += value

    def list_of(self, fid: int, etype: int, size: int) -> None:
        self.field(fid, _LIST)
        if size < 15:
            self.out.append((size << 4) | etype)
        else:
            self.out.append(0xF0 | etype)
            self._varint(size)

    def element_integer(self, value: int) -> None:
        self._zigzag(value)

    def element_binary(self, value: bytes) -> None:
        self._varint(len(value))
        self.out += value

    def begin(self, fid: int | None = None) -> None:
        """A struct: as field `fid`, or as a list element (None)."""
        if fid is not None:
            self.field(fid, _STRUCT)
        self._last.append(0)

    def end(self) -> None:
        self.out.append(_STOP)
        self._last.pop()


@dataclass
class PageRun:
    """Some consecutive data pages of one column chunk (with its dictionary page, if any) as
    they are in the file, and the rows they hold."""

    chunk: ColumnChunk
    schema_element: bytes  # the leaf's SchemaElement as written
    dictionary: bytes | memoryview
    pages: bytes | memoryview
    rows: int


def page_file(runs: Sequence[PageRun]) -> bytes:
    """A Parquet file of one row group holding just these page runs (all of the same rows,
    flat top-level columns) under a footer written here: a reader decodes those pages only."""
    body = bytearray(b"PAR1")
    w = ThriftCompactWriter()
    w.integer(1, 1, _I32)  # version
    w.list_of(2, _STRUCT, len(runs) + 1)
    w.begin()
    w.binary(4, b"schema")
    w.integer(5, len(runs), _I32)
    w.end()
    for run in runs:
        w.out += run.schema_element
    rows = runs[0].rows if runs else 0
    w.integer(3, rows)
    w.list_of(4, _STRUCT, 1)
    w.begin()
    w.list_of(1, _STRUCT, len(runs))
    size = 0
    for run in runs:
        c = run.chunk
        start = len(body)
        body += run.dictionary
        data_at = len(body)
        body += run.pages
        length = len(body) - start
        size += length
        w.begin()
        w.integer(2, start)
        w.begin(3)
        w.integer(1, c.type or 0, _I32)
        w.list_of(2, _I32, len(c.encodings))
        for e in c.encodings:
            w.element_integer(e)
        w.list_of(3, _BINARY, len(c.path))
        for part in c.path:
            w.element_binary(part.encode("utf-8"))
        w.integer(4, c.codec, _I32)
        w.integer(5, run.rows)
        w.integer(6, length)
        w.integer(7, length)
        w.integer(9, data_at)
        if len(run.dictionary):
            w.integer(11, start)
        w.end()
        w.end()
    w.integer(2, size)
    w.integer(3, rows)
    w.end()
    w.out.append(_STOP)
    body += w.out
    body += len(w.out).to_bytes(4, "little") + b"PAR1"
    return bytes(body)


# what every writer puts after numBytes: algorithm BLOCK, hash XXHASH, compression UNCOMPRESSED
_USUAL_HEADER_TAIL = b"\x1c\x1c\x00\x00" * 3 + b"\x00"


def bloom_filter_header(buf: bytes | memoryview) -> tuple[int, int, bool]:
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
    r = ThriftCompactReader(buf)
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
        raise MalformedFooter("a BloomFilterHeader lacks numBytes, algorithm, hash or compression")
    return r.pos, num_bytes, all(members[f] == 1 for f in (2, 3, 4))  # BLOCK, XXHASH, UNCOMPRESSED


# ---------------------------------------------------------------------------
# Reading the file
# ---------------------------------------------------------------------------

def corrupt_file(path: str, why: str) -> CorruptTableError:
    return CorruptTableError(f"data file {path}: {why}", path=path)


def read_exactly(f: BinaryIO, offset: int, n: int, path: str) -> bytes:
    f.seek(offset)
    data = f.read(n)
    while len(data) < n:  # a raw file may return short reads
        more = f.read(n - len(data))
        if not more:
            raise corrupt_file(path, f"truncated: wanted {n} bytes at offset {offset}, the file ends after "
                                 f"{len(data)}")
        data += more
    return data


def read_ranges(f: BinaryIO, ranges: Sequence[tuple[int, int]], path: str) -> list[memoryview]:
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
        view = memoryview(read_exactly(f, start, end - start, path))
        for k in order[i:j]:
            offset, length = ranges[k]
            out[k] = view[offset - start:offset - start + length]
        i = j
    return out


def read_footer(f: BinaryIO, path: str) -> tuple[memoryview, int]:
    """The FileMetaData bytes and the offset where they start."""
    sized = getattr(f, "size", None)  # an object's file knows its size; a local one is stat'ed
    size = sized() if callable(sized) else os.fstat(f.fileno()).st_size
    if size < 12:
        raise corrupt_file(path, f"{size} bytes is too short for a Parquet file")
    tail_len = min(size, _TAIL_READ)
    tail = read_exactly(f, size - tail_len, tail_len, path)
    if tail[-4:] == b"PARE":
        raise corrupt_file(path, "the Parquet footer is encrypted; mergetree cannot read encrypted files")
    if tail[-4:] != b"PAR1" or (tail_len == size and tail[:4] != b"PAR1"):
        raise corrupt_file(path, "not a Parquet file (no PAR1 magic): truncated or overwritten")
    n = int.from_bytes(tail[-8:-4], "little")
    if n <= 0 or n > size - 12:
        raise corrupt_file(path, f"the Parquet footer length {n} does not fit the file's {size} bytes")
    start = size - 8 - n
    if n + 8 <= tail_len:
        return memoryview(tail)[tail_len - 8 - n:tail_len - 8], start
    return memoryview(read_exactly(f, start, n, path)), start


def leaf_columns(schema: list[SchemaElement]) -> list[tuple[tuple[str, ...], SchemaElement]]:
    """(path, element) of each leaf column in file order (the order of a row group's chunks)."""
    if not schema or schema[0].num_children is None or schema[0].num_children < 0:
        raise MalformedFooter("the schema has no root group")
    leaves = []
    stack: list[list] = [[schema[0].num_children, ()]]
    i = 1
    while stack:
        if stack[-1][0] == 0:
            stack.pop()
            continue
        stack[-1][0] -= 1
        if i >= len(schema):
            raise MalformedFooter("the schema's groups claim more children than it has elements")
        el = schema[i]
        i += 1
        path = stack[-1][1] + (el.name,)
        if el.num_children is not None and el.type is None:
            if el.num_children < 0:
                raise MalformedFooter(f"schema element {el.name!r} has {el.num_children} children")
            stack.append([el.num_children, path])
        elif el.type is None:
            raise MalformedFooter(f"schema element {el.name!r} is neither a group nor a typed leaf")
        else:
            leaves.append((path, el))
    if i != len(schema):
        raise MalformedFooter(f"the schema has {len(schema) - i} elements outside its root group")
    return leaves

# ConvertedType -> the LogicalType it stands for, when a file has no LogicalType
CONVERTED_TYPES = {0: ("STRING",), 4: ("ENUM",), 6: ("DATE",), 7: ("TIME", "ms"), 8: ("TIME", "us"),
              9: ("TIMESTAMP", "ms"), 10: ("TIMESTAMP", "us"), 11: ("INTEGER", 8, False),
              12: ("INTEGER", 16, False), 13: ("INTEGER", 32, False), 14: ("INTEGER", 64, False),
              15: ("INTEGER", 8, True), 16: ("INTEGER", 16, True), 17: ("INTEGER", 32, True),
              18: ("INTEGER", 64, True), 19: ("JSON",), 20: ("BSON",), 21: ("INTERVAL",)}
