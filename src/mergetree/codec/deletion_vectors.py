"""Deletion-vector index files in Paimon's layout: the
rows of each data file that newer versions replaced, as Roaring bitmaps of row positions, so a
file can be read alone.

An index file is one version byte (1) followed by one deletion vector per data file, each at
the offset and length its index-manifest entry records (`_DELETIONS_VECTORS_RANGES`):

    32-bit:  length:i32 BE | magic:i32 BE 1581511376 | portable RoaringBitmap | crc32:i32 BE
             (the recorded length and the length field: magic + bitmap)
    64-bit:  length:i32 BE | magic:i32 LE 1681511377 | 64-bit Roaring (count:u64 LE, then
             key:u32 LE + portable bitmap per 2^32 block) | crc32:i32 BE
             (the length field: magic + bitmap; the recorded length: the whole blob)

The CRC covers magic + bitmap.  Everything here is checked before pyroaring sees a byte: a
damaged file is a `CorruptTableError` naming it and the data file, never a crash."""
from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyroaring import BitMap, BitMap64

from ..errors import CorruptTableError, InvalidArgumentError

__all__ = ["MAGIC_32", "MAGIC_64", "VERSION", "DeletionVectorRange", "encode_index_file", "read_deletion_vector",
           "read_index_file"]

VERSION = 1
MAGIC_32 = 1581511376  # written big-endian
MAGIC_64 = 1681511377  # written little-endian (Iceberg's layout)
MAX_POSITION_32 = 2**31 - 1  # Java's RoaringBitmap32 holds row positions up to Integer.MAX_VALUE


@dataclass(frozen=True)
class DeletionVectorRange:
    """Where one data file's deletion vector is in its index file (an index-manifest entry's
    `_DELETIONS_VECTORS_RANGES` element)."""

    data_file: str
    offset: int
    length: int
    cardinality: int | None = None


def _damaged(where: str, data_file: str, why: str) -> CorruptTableError:
    return CorruptTableError(f"deletion vector of {data_file} in {where} is damaged: {why}", path=where)


def read_deletion_vector(data: bytes | memoryview, dv: DeletionVectorRange, where: str) -> BitMap | BitMap64:
    """The deleted row positions of `dv.data_file`, from the index file's bytes `data` (`where`
    names the file in errors).  The CRC is checked; the version byte is `read_index_file`'s."""
    view = memoryview(data)
    if not (isinstance(dv.offset, int) and isinstance(dv.length, int)) or dv.offset < 1 or dv.length < 4:
        raise _damaged(where, dv.data_file, f"offset {dv.offset!r} and length {dv.length!r} are out of range")
    if dv.offset + 8 > len(view):
        raise _damaged(where, dv.data_file, f"offset {dv.offset} is past the file's {len(view)} bytes")
    (stored,) = struct.unpack_from(">i", view, dv.offset)
    magic_be, = struct.unpack_from(">i", view, dv.offset + 4)
    magic_le, = struct.unpack_from("<i", view, dv.offset + 4)
    wide = magic_be != MAGIC_32 and magic_le == MAGIC_64
    if magic_be != MAGIC_32 and not wide:
        raise _damaged(where, dv.data_file, f"unknown magic number {magic_be}")
    expected = dv.length - 8 if wide else dv.length  # the 64-bit range records the whole blob
    if stored != expected or stored < 4:
        raise _damaged(where, dv.data_file, f"its length field says {stored} bytes, the index manifest {dv.length}")
    end = dv.offset + 4 + stored
    if end + 4 > len(view):
        raise _damaged(where, dv.data_file, f"it runs past the end of the file ({end + 4} > {len(view)} bytes)")
    body = view[dv.offset + 4:end]
    (crc,) = struct.unpack_from(">I", view, end)
    if zlib.crc32(body) != crc:
        raise _damaged(where, dv.data_file, "its checksum does not match")
    try:
        bitmap: BitMap | BitMap64 = (BitMap64 if wide else BitMap).deserialize(bytes(body[4:]))
    except (ValueError, OverflowError, MemoryError) as exc:
        raise _damaged(where, dv.data_file, f"the bitmap does not deserialize ({exc})") from None
    if dv.cardinality is not None and len(bitmap) != dv.cardinality:
        raise _damaged(where, dv.data_file, f"it holds {len(bitmap)} positions, the index manifest says "
                                            f"{dv.cardinality}")
    return bitmap


def read_index_file(data: bytes | memoryview, ranges: Iterable[DeletionVectorRange],
                    where: str) -> dict[str, BitMap | BitMap64]:
    """Every data file's deletion vector in one index file, by data file name."""
    view = memoryview(data)
    if len(view) < 1 or view[0] != VERSION:
        found = view[0] if len(view) else "nothing"
        raise CorruptTableError(f"deletion-vector index file {where} starts with version {found}, not {VERSION}",
                                path=where)
    out: dict[str, BitMap | BitMap64] = {}
    for dv in ranges:
        if dv.data_file in out:
            raise _damaged(where, dv.data_file, "the index manifest names it twice")
        out[dv.data_file] = read_deletion_vector(view, dv, where)
    return out


def encode_index_file(vectors: Mapping[str, Iterable[int]],
                      bitmap64: bool = False) -> tuple[bytes, list[DeletionVectorRange]]:
    """An index file holding these deletion vectors (32-bit, as Paimon writes by default; a
    position past 2^31 - 1 takes the 64-bit form, as does every vector with `bitmap64`:
    Paimon's ``deletion-vectors.bitmap64``), and the ranges its index-manifest entry records,
    in the order written."""
    parts = [bytes([VERSION])]
    size = 1
    ranges = []
    for data_file, positions in vectors.items():
        try:
            bitmap = BitMap64(positions)
        except (OverflowError, TypeError, ValueError):
            raise InvalidArgumentError(f"the deleted positions of {data_file} are not row numbers (0 .. 2^64 - 1)") \
                from None
        wide = bitmap64 or (len(bitmap) > 0 and bitmap.max() > MAX_POSITION_32)
        if wide:
            body = struct.pack("<i", MAGIC_64) + BitMap64(bitmap).serialize()
        else:
            body = struct.pack(">i", MAGIC_32) + BitMap(bitmap).serialize()
        blob = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
        ranges.append(DeletionVectorRange(data_file, size, len(blob) if wide else len(body), len(bitmap)))
        parts.append(blob)
        size += len(blob)
    return b"".join(parts), ranges
