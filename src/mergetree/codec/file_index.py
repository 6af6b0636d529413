"""Paimon's file index: one container per data file holding, per column, a Bloom filter
and/or a bitmap index (spec: docs/concepts/spec/fileindex.mdx; Java: ``FileIndexFormat``,
``BloomFilterFileIndex``/``BloomFilter64``/``FastHash``, ``BitmapFileIndex``/``BitmapFileIndexMeta(V2)``).

Container (all integers big-endian)::

    magic (8, 1493475289347502) | version (4, = 1) | head length (4) | column count (4)
    per column: name (Java modified UTF-8, 2-byte length) | index count (4)
        per index: type name (modified UTF-8) | start (4, from the container's start; -1: empty) | length (4)
    redundant length (4, = 0) | bodies

Java fills the head from ``HashMap``s, so its columns and index types come in ``HashMap``
iteration order; :func:`encode_container` writes that order, so a container of the same
bodies is byte-identical to Java's.

Bloom filter body: the number of hash functions (4) and the bit set (``BloomFilter64``: bit
``p`` is bit ``p & 7`` of byte ``p >> 3``).  A value's 64-bit hash is xxHash64 (seed 0) of the
UTF-8 bytes for strings and binaries, and Thomas Wang's 64-bit integer hash of the value as a
Java ``long`` for integers, dates, times, timestamps (milliseconds up to precision 3, else
microseconds) and floats (their IEEE bits, NaN canonical).

Bitmap body (V2, written by default; V1 read): the row count, the distinct non-null values
with where each value's Roaring bitmap of row positions is (a negative offset ``-1 - row``
when the value is in one row only), in sorted index blocks of at most ``index-block-size``
bytes.  Java writes the bitmaps themselves in its ``HashMap``'s order; this module writes them
in the values' order (readers locate each by its offset, so both read the same).

Everything here works on bytes and Arrow arrays: no I/O, no options policy (which columns a
table indexes is `mergetree.paimon`'s business).  Malformed bytes raise :class:`MalformedIndex`.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from .._bloom import xxh64_binary
from .types import PaimonType, plain_array

__all__ = ["BITMAP", "BLOOM_FILTER", "MAGIC", "BitmapIndex", "BloomFilter", "ContainerEntry", "MalformedIndex",
           "ValueTooLarge", "bitmap_keys", "bitmap_supported", "bloom_supported", "decode_container", "encode_bitmap",
           "encode_bloom", "encode_container", "hashes_of", "head_length", "java_hashmap_order", "keys_of",
           "order_key", "read_container_head", "value_hashes"]

MAGIC = 1493475289347502
VERSION = 1
EMPTY = -1
BLOOM_FILTER = "bloom-filter"
BITMAP = "bitmap"
DEFAULT_BLOOM_ITEMS = 1_000_000
DEFAULT_BLOOM_FPP = 0.1
DEFAULT_BITMAP_BLOCK = 16 * 1024
MAX_HASH_FUNCTIONS = 2048

_BLOOM_ROOTS = {"STRING", "BYTES", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "TIME",
                "TIMESTAMP", "TIMESTAMP_LTZ"}
_BITMAP_ROOTS = {"STRING", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "TIME",
                 "TIMESTAMP", "TIMESTAMP_LTZ"}


class MalformedIndex(ValueError):
    """File-index bytes that do not decode (truncated, wrong magic, lengths out of range)."""


class ValueTooLarge(ValueError):
    """A value too long for a bitmap index block: Paimon's writers cannot index it either."""


def bloom_supported(t: PaimonType) -> bool:
    """Java's ``FastHash`` types (no BOOLEAN, DECIMAL or nested types)."""
    return t.root in _BLOOM_ROOTS


def bitmap_supported(t: PaimonType) -> bool:
    """Java's ``BitmapTypeVisitor`` types (no BYTES, DECIMAL or nested types)."""
    return t.root in _BITMAP_ROOTS


# -- Java's modified UTF-8 and HashMap order -------------------------------------------------

def _utf(text: str) -> bytes:
    """``DataOutput.writeUTF``: a 2-byte length, then modified UTF-8 (NUL as C0 80, characters
    beyond the BMP as two 3-byte surrogates)."""
    units = text.encode("utf-16-be", "surrogatepass")
    out = bytearray()
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        if 0 < c < 0x80:
            out.append(c)
        elif c < 0x800:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    if len(out) > 0xFFFF:
        raise ValueError(f"name too long for the file index ({len(out)} bytes encoded): {text[:40]!r}...")
    return struct.pack(">H", len(out)) + bytes(out)


def _read_utf(buf: memoryview, pos: int) -> tuple[str, int]:
    (n,) = _unpack(">H", buf, pos)
    raw = bytes(buf[pos + 2:pos + 2 + n])
    if len(raw) != n:
        raise MalformedIndex("a name runs past the end of the file-index head")
    try:
        text = raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
        return text.encode("utf-16", "surrogatepass").decode("utf-16"), pos + 2 + n
    except UnicodeError as exc:
        raise MalformedIndex(f"a name in the file-index head is not modified UTF-8: {exc}") from None


def _java_string_hash(text: str) -> int:
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h


def java_hashmap_order(keys: Sequence[Any], hash_code: Callable[[Any], int] | None = None) -> list[Any]:
    """The order a ``java.util.HashMap`` holding `keys` (inserted in this order) iterates
    them: by bucket (the spread hash masked to the table size, which doubles past 3/4 full),
    keys sharing a bucket in insertion order.  `hash_code` is the keys' Java ``hashCode``
    (``String.hashCode`` by default)."""
    unique = list(dict.fromkeys(keys))
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2
    code = hash_code or _java_string_hash

    def bucket(k: Any) -> int:
        h = code(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(unique, key=bucket)  # sorted is stable: a bucket's keys keep insertion order


def _paimon_bytes_hash(data: bytes) -> int:
    """``BinaryString.hashCode``: Paimon's ``MurmurHashUtils.hashBytes`` (seed 42; whole
    little-endian words, then each remaining byte, sign-extended, as a word of its own)."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    def mix(h: int, k: int) -> int:
        k = rotl((k * 0xCC9E2D51) & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
        return (rotl(h ^ k, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h = 42
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        h = mix(h, int.from_bytes(data[i:i + 4], "little"))
    for b in data[whole:]:
        h = mix(h, (b - 256 if b >= 128 else b) & 0xFFFFFFFF)
    h ^= len(data)
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _java_key_hash(t: PaimonType) -> Callable[[Any], int]:
    """``hashCode`` of the boxed keys Java's bitmap index writer holds for type `t`."""
    if t.root == "STRING":
        return _paimon_bytes_hash
    if t.root == "BOOLEAN":
        return lambda k: 1231 if k else 1237
    if t.root in ("BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ", "DOUBLE"):
        return lambda k: (k ^ ((k & 0xFFFFFFFFFFFFFFFF) >> 32)) & 0xFFFFFFFF
    return lambda k: k & 0xFFFFFFFF


# -- the container ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ContainerEntry:
    """Where one column's index of one type is in a container (`start` from its first byte;
    `start` == -1: the writer saw no value)."""

    column: str
    index_type: str
    start: int
    length: int

    @property
    def empty(self) -> bool:
        return self.start == EMPTY


def encode_container(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """A container of ``column -> index type -> body`` (None: an empty index), in Java's order."""
    columns = java_hashmap_order(list(indexes))
    ordered = [(c, java_hashmap_order(list(indexes[c]))) for c in columns]
    head_length = 8 + 4 + 4 + 4 + 4
    for c, types in ordered:
        head_length += len(_utf(c)) + 4 + sum(len(_utf(t)) + 8 for t in types)
    head = bytearray(struct.pack(">qii", MAGIC, VERSION, head_length))
    head += struct.pack(">i", len(ordered))
    body = bytearray()
    for c, types in ordered:
        head += _utf(c) + struct.pack(">i", len(types))
        for t in types:
            blob = indexes[c][t]
            if blob is None:
                head += _utf(t) + struct.pack(">ii", EMPTY, 0)
            else:
                head += _utf(t) + struct.pack(">ii", head_length + len(body), len(blob))
                body += blob
    head += struct.pack(">i", 0)  # redundant length: nothing for later versions yet
    assert len(head) == head_length
    return bytes(head + body)


def read_container_head(prefix: bytes | memoryview, total_size: int | None = None) -> tuple[int, list[ContainerEntry]]:
    """The head length and entries of a container whose first bytes are `prefix` (at least the
    head: :func:`head_length` of the first 16 bytes tells how many), each entry checked to lie
    within `total_size` when it is given."""
    buf = memoryview(prefix)
    magic, version, head_length = _unpack(">qii", buf, 0)
    if magic != MAGIC:
        raise MalformedIndex("not a Paimon file index (wrong magic number)")
    if version != VERSION:
        raise MalformedIndex(f"file-index version {version}; mergetree reads version {VERSION}")
    if head_length < 24 or head_length > len(buf):
        raise MalformedIndex(f"file-index head length {head_length} does not fit the {len(buf)} bytes given")
    head = buf[:head_length]
    (columns,) = _unpack(">i", head, 16)
    if columns < 0:
        raise MalformedIndex(f"negative column count {columns} in a file-index head")
    pos, entries = 20, []
    for _ in range(columns):
        column, pos = _read_utf(head, pos)
        (count,) = _unpack(">i", head, pos)
        pos += 4
        if count < 0:
            raise MalformedIndex(f"negative index count {count} in a file-index head")
        for _ in range(count):
            index_type, pos = _read_utf(head, pos)
            start, length = _unpack(">ii", head, pos)
            pos += 8
            if start != EMPTY and (start < head_length or length < 0
                                   or (total_size is not None and start + length > total_size)):
                raise MalformedIndex(f"the {index_type} index of column {column!r} lies outside the file index "
                                     f"(bytes {start}..{start + length})")
            entries.append(ContainerEntry(column, index_type, start, length))
    return head_length, entries


def head_length(first16: bytes | memoryview) -> int:
    """How many bytes the head of the container starting with these 16 bytes takes."""
    magic, _version, length = _unpack(">qii", memoryview(first16), 0)
    if magic != MAGIC:
        raise MalformedIndex("not a Paimon file index (wrong magic number)")
    return length


def decode_container(blob: bytes | memoryview) -> dict[str, dict[str, bytes | None]]:
    """``column -> index type -> body`` (None: empty) of a whole container."""
    buf = memoryview(blob)
    _, entries = read_container_head(buf, len(buf))
    out: dict[str, dict[str, bytes | None]] = {}
    for e in entries:
        out.setdefault(e.column, {})[e.index_type] = None if e.empty else bytes(buf[e.start:e.start + e.length])
    return out


def _unpack(fmt: str, buf: memoryview, pos: int) -> tuple:
    try:
        return struct.unpack_from(fmt, buf, pos)
    except struct.error:
        raise MalformedIndex("a file index ends early") from None


# -- values as Java holds them ---------------------------------------------------------------

def _java_longs(values: pa.Array, t: PaimonType) -> np.ndarray:
    """The non-null values of a numeric or temporal column as the longs Java's file indexes
    see (timestamps in milliseconds up to precision 3, else microseconds; floats as their IEEE
    bits with one NaN)."""
    values = plain_array(values)
    values = values.drop_null() if values.null_count else values
    root = t.root
    if root in ("FLOAT", "DOUBLE"):
        width = np.float32 if root == "FLOAT" else np.float64
        data = np.asarray(values.to_numpy(zero_copy_only=False), dtype=width)
        nan = np.isnan(data)
        if nan.any():
            data = np.where(nan, width("nan"), data)
        return data.view(np.int32 if root == "FLOAT" else np.int64).astype(np.int64)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = values.type.unit
        raw = np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
        target = 1_000 if t.precision <= 3 else 1_000_000
        return raw * (target // per_second) if target >= per_second else np.floor_divide(raw, per_second // target)
    if root == "TIME":
        if pa.types.is_time64(values.type):  # microseconds or nanoseconds of the day -> Java's millis
            per_ms = 1_000 if values.type.unit == "us" else 1_000_000
            return np.floor_divide(np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False)), per_ms)
        scale = 1_000 if values.type.unit == "s" else 1
        return np.asarray(values.cast(pa.int32()).to_numpy(zero_copy_only=False), dtype=np.int64) * scale
    if root == "DATE":
        return np.asarray(values.cast(pa.date32()).cast(pa.int32()).to_numpy(zero_copy_only=False), dtype=np.int64)
    if root == "BOOLEAN":
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)
    return np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


def _java_bytes(values: pa.Array) -> list[bytes]:
    """The non-null values of a string or binary column as bytes (UTF-8 for strings)."""
    values = plain_array(values)
    values = values.drop_null() if values.null_count else values
    out = []
    for v in values.to_pylist():
        out.append(v.encode("utf-8") if isinstance(v, str) else bytes(v))
    return out


def _is_bytes_like(t: PaimonType) -> bool:
    return t.root in ("STRING", "BYTES")


# -- Bloom filter ----------------------------------------------------------------------------

def _thomas_wang(keys: np.ndarray) -> np.ndarray:
    """``FastHash.getLongHash`` on int64 (Java's wrap-around and arithmetic shifts)."""
    k = keys.astype(np.int64, copy=True)
    with np.errstate(over="ignore"):
        k = (~k) + (k << 21)
        k = k ^ (k >> 24)
        k = (k + (k << 3)) + (k << 8)
        k = k ^ (k >> 14)
        k = (k + (k << 2)) + (k << 4)
        k = k ^ (k >> 28)
        k = k + (k << 31)
    return k


def value_hashes(values: pa.Array | pa.ChunkedArray, t: PaimonType) -> np.ndarray:
    """The 64-bit hashes (int64) Paimon's Bloom filter index takes for the non-null `values`
    of a column of type `t` (one per value, repeats included: hashing is cheaper than finding
    the distinct values first, and a Bloom filter takes a value twice as once)."""
    if not bloom_supported(t):
        raise ValueError(f"Paimon has no Bloom filter index for type {t.text}")
    values = plain_array(values)
    if _is_bytes_like(t):
        values.validate(full=True)  # offsets and UTF-8 checked before pyarrow's kernels and the core read bytes
    if _is_bytes_like(t):
        values = values.drop_null() if values.null_count else values
        return xxh64_binary(values).view(np.int64)
    return _thomas_wang(_java_longs(values, t))


class BloomFilter:
    """``BloomFilter64``: `bits` bits (a multiple of 8), `hash_count` probes per value."""

    def __init__(self, hash_count: int, bitset: bytearray) -> None:
        # Java's sizing gives at most ~1,000 probes (fpp near 0); more is a damaged count, which
        # would size every probe's arrays
        if not 0 < hash_count <= MAX_HASH_FUNCTIONS or not bitset:
            raise MalformedIndex(f"a Bloom filter of {len(bitset) * 8} bits and {hash_count} hash functions")
        self.hash_count = hash_count
        self.bitset = bitset

    @classmethod
    def sized(cls, items: int, fpp: float) -> BloomFilter:
        """Java's sizing for `items` expected values at false-positive rate `fpp` (it always
        adds a byte's worth of bits, as Java does)."""
        if items <= 0 or not 0 < fpp < 1:
            raise ValueError(f"a Bloom filter needs items > 0 and 0 < fpp < 1 (got items={items}, fpp={fpp})")
        nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
        bits = nb + (8 - nb % 8)
        if bits >= 2 ** 31:
            raise ValueError(f"a Bloom filter of {bits} bits is larger than Paimon's (items={items}, fpp={fpp})")
        hash_count = max(1, math.floor(bits / items * math.log(2) + 0.5))
        if hash_count > MAX_HASH_FUNCTIONS:
            raise ValueError(f"a Bloom filter of {hash_count} hash functions (items={items}, fpp={fpp})")
        return cls(hash_count, bytearray(bits // 8))

    @classmethod
    def decode(cls, body: bytes | memoryview) -> BloomFilter:
        if len(body) < 5:
            raise MalformedIndex(f"a Bloom filter index of {len(body)} bytes")
        (hash_count,) = struct.unpack_from(">i", body, 0)
        return cls(hash_count, bytearray(body[4:]))

    def encode(self) -> bytes:
        return struct.pack(">i", self.hash_count) + bytes(self.bitset)

    @property
    def bits(self) -> int:
        return len(self.bitset) * 8

    def _positions(self, hashes: np.ndarray) -> np.ndarray:
        h = hashes.astype(np.int64, copy=False)
        low = h.astype(np.int32).astype(np.int64)
        high = (h >> 32).astype(np.int32).astype(np.int64)
        probes = np.arange(1, self.hash_count + 1, dtype=np.int64)
        combined = (low[:, None] + probes[None, :] * high[:, None]).astype(np.int32)
        combined = np.where(combined < 0, ~combined, combined).astype(np.int64)
        return combined % self.bits

    def add(self, hashes: np.ndarray) -> None:
        if not len(hashes):
            return
        # one flag per bit, packed with bit p at bit p & 7 of byte p >> 3 (as BitSet.set)
        flags = np.zeros(self.bits, dtype=bool)
        flags[self._positions(hashes).ravel()] = True
        bits = np.frombuffer(self.bitset, dtype=np.uint8)
        bits |= np.packbits(flags, bitorder="little")

    def might_contain(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash: whether its value may have been added (False: certainly not)."""
        if not len(hashes):
            return np.zeros(0, dtype=bool)
        pos = self._positions(hashes)
        bits = np.frombuffer(self.bitset, dtype=np.uint8)
        return np.all((bits[pos >> 3] >> (pos & 7)) & 1 == 1, axis=1)


def encode_bloom(values: pa.Array | pa.ChunkedArray, t: PaimonType, items: int = DEFAULT_BLOOM_ITEMS,
                 fpp: float = DEFAULT_BLOOM_FPP) -> bytes:
    """The Bloom filter index body of one file's column (nulls are not added, as in Java)."""
    bloom = BloomFilter.sized(items, fpp)
    bloom.add(value_hashes(values, t))
    return bloom.encode()


# -- bitmap ----------------------------------------------------------------------------------

def _key_size(t: PaimonType) -> int | None:
    """Bytes of one value in a bitmap index (None: 4-byte length + bytes)."""
    return {"BOOLEAN": 1, "TINYINT": 1, "SMALLINT": 2, "INT": 4, "DATE": 4, "TIME": 4, "FLOAT": 4,
            "BIGINT": 8, "TIMESTAMP": 8, "TIMESTAMP_LTZ": 8, "DOUBLE": 8}.get(t.root)


_FORMATS = {"BOOLEAN": ">b", "TINYINT": ">b", "SMALLINT": ">h", "INT": ">i", "DATE": ">i", "TIME": ">i",
            "FLOAT": ">i", "BIGINT": ">q", "TIMESTAMP": ">q", "TIMESTAMP_LTZ": ">q", "DOUBLE": ">q"}


def _write_key(t: PaimonType, key: Any) -> bytes:
    if t.root == "STRING":
        return struct.pack(">i", len(key)) + key
    return struct.pack(_FORMATS[t.root], key)


def _read_key(t: PaimonType, buf: memoryview, pos: int) -> tuple[Any, int]:
    if t.root == "STRING":
        (n,) = _unpack(">i", buf, pos)
        if n < 0 or pos + 4 + n > len(buf):
            raise MalformedIndex(f"a bitmap index value of {n} bytes runs past its index")
        return bytes(buf[pos + 4:pos + 4 + n]), pos + 4 + n
    fmt = _FORMATS[t.root]
    (key,) = _unpack(fmt, buf, pos)
    if t.root == "BOOLEAN":
        key = int(key != 0)
    return key, pos + struct.calcsize(fmt)


def order_key(t: PaimonType, key: Any) -> Any:
    """Java's comparator over bitmap keys (``Float.compare``/``Double.compare`` on floats:
    -0.0 before 0.0, NaN last; unsigned bytes for strings)."""
    if t.root == "FLOAT":
        return key ^ ((key >> 31) & 0x7FFFFFFF)
    if t.root == "DOUBLE":
        return key ^ ((key >> 63) & 0x7FFFFFFFFFFFFFFF)
    return key


def bitmap_keys(values: pa.Array | pa.ChunkedArray, t: PaimonType) -> list[Any]:
    """The keys a bitmap index holds for `values` (non-null only): UTF-8 bytes of strings,
    Java's longs (see `_java_longs`) otherwise, floats as their IEEE bits."""
    if not bitmap_supported(t):
        raise ValueError(f"Paimon has no bitmap index for type {t.text}")
    values = plain_array(values)
    if t.root == "STRING":
        return _java_bytes(values)
    return [int(v) for v in _java_longs(values, t)]


def encode_bitmap(values: pa.Array | pa.ChunkedArray, t: PaimonType, block_size: int = DEFAULT_BITMAP_BLOCK,
                  version: int = 2) -> bytes:
    """The bitmap index body (V2, or V1 when asked) of one file's column: row positions are
    the rows' places in `values`."""
    values = plain_array(values)
    if version not in (1, 2):
        raise ValueError(f"bitmap index version {version}; Paimon has versions 1 and 2")
    rows = len(values)
    nulls = BitMap(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False)).astype(np.uint32)) \
        if values.null_count else BitMap()
    groups = _rows_by_key(values, t)
    ordered = sorted(groups, key=lambda k: order_key(t, k))
    # the bitmaps go in the order Java's HashMap of them iterates, so the bytes match Java's
    placed = java_hashmap_order(list(groups), _java_key_hash(t))
    null_bytes = _serialized(nulls)
    offsets: dict[Any, int] = {}
    lengths: dict[Any, int] = {}
    bodies: list[bytes] = []
    offset = 0 if len(nulls) <= 1 else len(null_bytes)
    for key in placed:
        group = groups[key]
        if len(group) == 1:
            offsets[key] = -1 - int(group[0])
            lengths[key] = -1
        else:
            blob = _serialized(BitMap(group.astype(np.uint32)))
            offsets[key], lengths[key] = offset, len(blob)
            bodies.append(blob)
            offset += len(blob)
    null_offset = -1 - nulls.min() if len(nulls) == 1 else 0
    out = bytearray(struct.pack(">bii?", version, rows, len(groups), len(nulls) > 0))
    if len(nulls):
        out += struct.pack(">i", null_offset)
        if version == 2:
            out += struct.pack(">i", len(null_bytes))
    if version == 1:
        for key in placed:
            out += _write_key(t, key) + struct.pack(">i", offsets[key])
    else:
        out += _v2_blocks(t, ordered, offsets, lengths, block_size)
    if len(nulls) > 1:
        out += null_bytes
    for blob in bodies:
        out += blob
    return bytes(out)


def _rows_by_key(values: pa.Array, t: PaimonType) -> dict[Any, np.ndarray]:
    """Each key's rows (ascending), keys in the order of their first row (as Java's writer
    meets them).  Grouped through a dictionary encoding, its entries mapped to keys (two
    entries may share a key: timestamps finer than the key's unit)."""
    if not len(values) or values.null_count == len(values):
        return {}
    encoded = values.dictionary_encode()
    indices = np.asarray(pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    entry_keys = bitmap_keys(encoded.dictionary, t)
    canonical: dict[Any, int] = {}
    entry_to_group = np.array([canonical.setdefault(k, len(canonical)) for k in entry_keys] + [-1], dtype=np.int64)
    group_of_row = entry_to_group[indices]  # -1 (a null row) picks the appended -1
    live = np.flatnonzero(group_of_row >= 0)
    order = live[np.argsort(group_of_row[live], kind="stable")]
    bounds = np.flatnonzero(np.diff(group_of_row[order])) + 1
    by_group = {int(group_of_row[part[0]]): part for part in np.split(order, bounds)}
    keys = list(canonical)
    firsts = sorted(by_group, key=lambda g: int(by_group[g][0]))
    return {keys[g]: by_group[g] for g in firsts}


def _v2_blocks(t: PaimonType, ordered: list[Any], offsets: dict[Any, int], lengths: dict[Any, int],
               block_size: int) -> bytes:
    blocks: list[list[Any]] = []
    size = 0
    for key in ordered:
        entry = len(_write_key(t, key)) + 8
        if not blocks or size + entry > block_size:
            blocks.append([])
            size = 4
            if size + entry > block_size:  # Java's writer fails here too ("index fail")
                raise ValueTooLarge(f"a value of {entry - 8} bytes does not fit a bitmap index block of "
                                    f"{block_size} bytes (index-block-size)")
        blocks[-1].append(key)
        size += entry
    encoded = []
    for block in blocks:
        part = bytearray(struct.pack(">i", len(block)))
        for key in block:
            part += _write_key(t, key) + struct.pack(">ii", offsets[key], lengths[key])
        encoded.append(bytes(part))
    out = bytearray(struct.pack(">i", len(blocks)))
    start = 0
    for block, blob in zip(blocks, encoded):
        out += _write_key(t, block[0]) + struct.pack(">i", start)
        start += len(blob)
    out += struct.pack(">i", start)
    for blob in encoded:
        out += blob
    return bytes(out)


def _serialized(bitmap: BitMap) -> bytes:
    bitmap.run_optimize()
    return bytes(bitmap.serialize())


@dataclass
class BitmapIndex:
    """A decoded bitmap index body: which rows hold each value.  Built from the body's bytes;
    each value's bitmap is decoded when first asked for."""

    row_count: int
    has_nulls: bool
    entries: dict[Any, tuple[int, int]]     # key -> (offset, length; -1 unknown)
    null_entry: tuple[int, int] | None
    body: memoryview
    type: PaimonType
    _cache: dict[Any, BitMap] = field(default_factory=dict, repr=False)

    @classmethod
    def decode(cls, body: bytes | memoryview, t: PaimonType) -> BitmapIndex:
        if not bitmap_supported(t):
            raise MalformedIndex(f"a bitmap index on a column of type {t.text}, which Paimon cannot index")
        buf = memoryview(body)
        if not len(buf):
            raise MalformedIndex("an empty bitmap index")
        version = buf[0]
        rows, distinct, has_nulls = _unpack(">ii?", buf, 1)
        if rows < 0 or distinct < 0:
            raise MalformedIndex(f"a bitmap index of {rows} rows and {distinct} values")
        pos = 10
        null_entry = None
        if version == 1:
            if has_nulls:
                (null_offset,) = _unpack(">i", buf, pos)
                pos += 4
                null_entry = (null_offset, -1)
            entries: dict[Any, tuple[int, int]] = {}
            for _ in range(distinct):
                key, pos = _read_key(t, buf, pos)
                (offset,) = _unpack(">i", buf, pos)
                pos += 4
                entries[key] = (offset, -1)
            data = buf[pos:]
            # V1 gives no lengths: each bitmap runs to the next one's offset (Roaring knows its end)
            return cls(rows, bool(has_nulls), entries, null_entry, data, t)
        if version != 2:
            raise MalformedIndex(f"bitmap index version {version}; Paimon has versions 1 and 2")
        if has_nulls:
            null_offset, null_length = _unpack(">ii", buf, pos)
            pos += 8
            null_entry = (null_offset, null_length)
        (block_count,) = _unpack(">i", buf, pos)
        pos += 4
        if block_count < 0:
            raise MalformedIndex(f"a bitmap index of {block_count} blocks")
        block_offsets = []
        for _ in range(block_count):
            _first, pos = _read_key(t, buf, pos)
            (offset,) = _unpack(">i", buf, pos)
            pos += 4
            block_offsets.append(offset)
        (body_offset,) = _unpack(">i", buf, pos)
        pos += 4
        blocks_start = pos
        entries = {}
        read = 0
        expected = 0
        for offset in block_offsets:
            # blocks follow each other: each is read once, never twice by a repeated offset
            if offset != expected:
                raise MalformedIndex(f"a bitmap index block at offset {offset}, where {expected} was expected")
            at = blocks_start + offset
            (count,) = _unpack(">i", buf, at)
            at += 4
            read += count
            if count < 0 or read > distinct:
                raise MalformedIndex(f"bitmap index blocks hold more than the {distinct} values announced")
            for _ in range(count):
                key, at = _read_key(t, buf, at)
                offset_, length = _unpack(">ii", buf, at)
                at += 8
                entries[key] = (offset_, length)
            expected = at - blocks_start
        if expected != body_offset or len(entries) != distinct:
            raise MalformedIndex(f"a bitmap index announces {distinct} values and holds {len(entries)}")
        start = blocks_start + body_offset
        if start > len(buf):
            raise MalformedIndex("a bitmap index's bitmaps start past its end")
        return cls(rows, bool(has_nulls), entries, null_entry, buf[start:], t)

    def _bitmap(self, entry: tuple[int, int]) -> BitMap:
        offset, length = entry
        if offset < 0:
            row = -1 - offset
            if row >= self.row_count:
                raise MalformedIndex(f"a bitmap index names row {row} of {self.row_count}")
            return BitMap([row])
        if offset >= len(self.body) or (length >= 0 and offset + length > len(self.body)):
            raise MalformedIndex(f"a bitmap at bytes {offset}..{offset + max(length, 0)} of the index's "
                                 f"{len(self.body)}")
        blob = self.body[offset:] if length < 0 else self.body[offset:offset + length]
        try:
            bitmap = BitMap.deserialize(bytes(blob))
        except (ValueError, OSError, IndexError) as exc:
            raise MalformedIndex(f"a bitmap in a bitmap index does not decode: {exc}") from None
        if len(bitmap) and bitmap.max() >= self.row_count:
            raise MalformedIndex(f"a bitmap index names row {bitmap.max()} of {self.row_count}")
        return bitmap

    def keys(self) -> list[Any]:
        return list(self.entries)

    def rows_of(self, key: Any) -> BitMap:
        """The rows holding `key` (a key as `bitmap_keys` gives it); None: the null rows."""
        if key is None:
            return self._bitmap(self.null_entry) if self.null_entry is not None else BitMap()
        entry = self.entries.get(key)
        if entry is None:
            return BitMap()
        if key not in self._cache:
            self._cache[key] = self._bitmap(entry)
        return self._cache[key]

    def distinct(self) -> int:
        return len(self.entries)


def _query_array(values: Iterable[Any], t: PaimonType) -> pa.Array | None:
    """Query values (Python values of the column's Arrow type) as one array of that type;
    values the type cannot hold are dropped (they are in no row), nulls too."""
    kept = []
    for v in values:
        if v is None:
            continue
        try:
            kept.append(pa.array([v], type=t.arrow))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
            continue
    return pa.concat_arrays(kept) if kept else None


def keys_of(values: Iterable[Any], t: PaimonType) -> list[Any]:
    """Query values as bitmap keys (values the column's type cannot hold dropped)."""
    array = _query_array(values, t)
    return [] if array is None else bitmap_keys(array, t)


def hashes_of(values: Iterable[Any], t: PaimonType) -> np.ndarray:
    """Query values as Bloom-filter hashes (values the column cannot hold dropped)."""
    array = _query_array(values, t)
    return np.zeros(0, dtype=np.int64) if array is None else value_hashes(array, t)
