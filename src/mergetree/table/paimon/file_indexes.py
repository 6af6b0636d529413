"""Skipping data files by Paimon's file indexes (Bloom filters and bitmaps, `codec.file_index`).

A data file's index is in its manifest entry (``_EMBEDDED_FILE_INDEX``) or in a
``<data file>.index`` file beside it (listed in ``_EXTRA_FILES``), whoever wrote it: Java's
writers, or mergetree's (`build_file_index`, as `writer.PaimonFileWriter` writes a file).
`may_match` answers whether a file can hold rows matching a simple filter; only a certain "no"
skips a file, so an index can never change an answer.  Leaves it can judge:

- Bloom filter: ``=`` and ``in`` (a value whose hash is absent is in no row);
- bitmap: ``=``, ``in``, ``!=``, ``not in``, ``<``, ``<=``, ``>``, ``>=``, ``is null`` and
  ``is not null`` (the index lists every distinct value of the file, and its null rows).

``and`` needs every part possible, ``or`` one; any other leaf, a column the file's index does
not cover, a column renamed or retyped since the file was written: "possible".  Callers use it
only where Paimon's own scans do, where a file's rows are the only versions of their keys the
read sees (append tables, deletion-vector reads, single-run sections), and never when the
table says ``file-index.read.enabled = false``.
"""
from __future__ import annotations

import os
import posixpath
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ...codec.file_index import (
    BITMAP,
    BLOOM_FILTER,
    DEFAULT_BLOOM_FPP,
    DEFAULT_BLOOM_ITEMS,
    BitmapIndex,
    BloomFilter,
    MalformedIndex,
    ValueTooLarge,
    bitmap_supported,
    bloom_supported,
    encode_bitmap,
    encode_bloom,
    encode_container,
    hashes_of,
    keys_of,
    order_key,
    read_container_head,
)
from ...codec.file_index import head_length as container_head_length
from ...codec.types import PaimonType, same_type
from ...errors import CorruptTableError, InvalidArgumentError, StorageError, UnsupportedPaimonFeatureError
from ..compaction.planner import parse_memory_size
from ..filecache import FileCache
from ..objects import StoredFile, locate
from .metadata import PaimonFile, PaimonSchema, PaimonTable
from .options import FileIndexSpec

__all__ = ["FileIndex", "build_file_index", "file_beside", "file_index", "indexed_columns", "may_match"]

_RANGE_OPS = {"<", "<=", ">", ">="}
# Java writes bitmap version 2 from Paimon 1.1 on, which Paimon 0.9 and 1.0 cannot read ("your
# plugin version is lower than 2"); version 1 every Java reader reads, so mergetree writes it
# unless the table asks for 2 (`file-index.bitmap.<column>.version`, or readers from Java 1.1
# on: `mergetree.java-reader-version`)
DEFAULT_BITMAP_VERSION = 1


@dataclass
class FileIndex:
    """The indexes of one data file: column -> index type -> a loader of the decoded index."""

    loaders: dict[str, dict[str, Callable[[], Any]]]
    where: str

    def get(self, column: str, index_type: str) -> Any:
        load = self.loaders.get(column, {}).get(index_type)
        if load is None:
            return None
        return load()


_decoded: FileCache[Any] = FileCache(max_entries=4096, max_bytes=128 * 2**20,
                                     weight=lambda v: len(v.bitset) if isinstance(v, BloomFilter)
                                     else len(v.body) + 4096)
_heads: FileCache[tuple] = FileCache(max_entries=4096)


def file_beside(table: PaimonTable, pf: PaimonFile, name: str) -> StoredFile:
    """Extra file `name` of data file `pf` (its `.index` file, a pre-aggregate), which Paimon
    keeps beside the data file, wherever that is."""
    if pf.name is not None:
        directory = posixpath.dirname(pf.name)
        return StoredFile(table.storage, f"{directory}/{name}" if directory else name)
    source = table.source(pf)
    if isinstance(source, StoredFile):
        directory = posixpath.dirname(source.name)
        return StoredFile(source.storage, f"{directory}/{name}" if directory else name)
    directory = os.path.dirname(source)  # a local external path: the store of its directory
    return StoredFile(locate(directory, None, "an external data path"), name)


def file_index(table: PaimonTable, pf: PaimonFile, schema: PaimonSchema) -> FileIndex | None:
    """The file index of `pf` (None: it has none), its head read now, each index decoded (and
    for an index file, fetched) when first asked for.  `schema`: the schema `pf` was written
    under (its columns' types)."""
    record = pf.record["_FILE"]
    embedded = record.get("_EMBEDDED_FILE_INDEX")
    extra = [n for n in (record.get("_EXTRA_FILES") or ()) if n.endswith(".index")]
    if embedded is None and not extra:
        return None
    try:
        if embedded is not None:
            blob = memoryview(embedded)
            _, entries = read_container_head(blob, len(blob))
            where = f"the embedded file index of {pf.path}"

            def fetch(start: int, length: int) -> bytes:
                return bytes(blob[start:start + length])
        else:
            stored = file_beside(table, pf, extra[0])
            where = f"file index {stored}"

            def load_head() -> tuple:
                size = stored.storage.size(stored.name)
                first = stored.storage.read_ranges(stored.name, [(0, min(16, size))])[0]
                length = container_head_length(first)
                if not 16 <= length <= size:  # never a read (or an allocation) the file cannot back
                    raise MalformedIndex(f"a head of {length} bytes in a file of {size}")
                head = stored.storage.read_ranges(stored.name, [(0, length)])[0] if length > 16 else first
                return read_container_head(head, size)
            _, entries = _heads.get_keyed((stored.storage.uri, stored.name, "head"), load_head)

            def fetch(start: int, length: int) -> bytes:
                return stored.storage.read_ranges(stored.name, [(start, length)])[0]
    except MalformedIndex as exc:
        raise CorruptTableError(f"data file {pf.path} has a malformed file index: {exc}", path=pf.path) from None
    except StorageError as exc:
        raise CorruptTableError(f"the file index of data file {pf.path} cannot be read: {exc}", path=pf.path) from None
    loaders: dict[str, dict[str, Callable[[], Any]]] = {}
    for e in entries:
        if e.empty or e.index_type not in (BLOOM_FILTER, BITMAP):
            continue
        try:
            t = schema.field(e.column).type
        except KeyError:
            continue
        if not (bloom_supported(t) if e.index_type == BLOOM_FILTER else bitmap_supported(t)):
            continue  # an index Paimon cannot have written for this type: not judged
        loaders.setdefault(e.column, {})[e.index_type] = _loader(fetch, e.start, e.length, e.index_type, t,
                                                                  (where, e.column, e.index_type), pf)
    return FileIndex(loaders, where)


def _loader(fetch: Callable[[int, int], bytes], start: int, length: int, index_type: str, t: PaimonType,
            key: tuple, pf: PaimonFile) -> Callable[[], Any]:
    def decode() -> Any:
        try:
            body = fetch(start, length)
            if len(body) != length:
                raise MalformedIndex(f"the {index_type} index is cut short ({len(body)} of {length} bytes)")
            return BloomFilter.decode(body) if index_type == BLOOM_FILTER else BitmapIndex.decode(body, t)
        except MalformedIndex as exc:
            raise CorruptTableError(f"data file {pf.path} has a malformed {index_type} index: {exc}",
                                    path=pf.path) from None
        except StorageError as exc:
            raise CorruptTableError(f"the file index of data file {pf.path} cannot be read: {exc}",
                                    path=pf.path) from None
    return lambda: _decoded.get_keyed(key, decode)


def indexed_columns(options: Mapping[str, str]) -> frozenset[str]:
    """The columns a table's ``file-index.<type>.columns`` options name, whose files' indexes
    a filter on them may consult (none under ``file-index.read.enabled = false``).  A filter
    on other columns reads no index, not even an index file's head."""
    if str(options.get("file-index.read.enabled", "true")).strip().lower() == "false":
        return frozenset()
    declared = [str(value) for key, value in options.items()
                if key.startswith("file-index.") and key.endswith(".columns")]
    return frozenset(name.strip() for value in declared for name in value.split(","))


def may_match(table: PaimonTable, pf: PaimonFile, schema: PaimonSchema, f: Any) -> bool:
    """Whether data file `pf` may hold rows matching simple filter `f` (names of `schema`, the
    read's), by its file index; True whenever the index cannot tell."""
    if f is None:
        return True
    file_schema = schema if pf.schema_id == schema.id else table.schema(pf.schema_id)
    index = file_index(table, pf, file_schema)
    if index is None:
        return True
    names: dict[str, tuple[str, PaimonType]] = {}
    by_id = {fl.id: fl for fl in file_schema.fields}
    for fl in schema.fields:
        old = by_id.get(fl.id)
        if old is not None and same_type(old.type, fl.type):
            names[fl.name] = (old.name, old.type)
    return _evaluate(f, index, names)


def _evaluate(f: Any, index: FileIndex, names: dict[str, tuple[str, PaimonType]]) -> bool:
    if f[0] == "and" and len(f) == 2:
        return all(_evaluate(part, index, names) for part in f[1])
    if f[0] == "or" and len(f) == 2:
        return any(_evaluate(part, index, names) for part in f[1])
    column, op, value = f
    found = names.get(column)
    if found is None:
        return True
    name, t = found
    op = "=" if op == "==" else op
    bitmap: BitmapIndex | None = index.get(name, BITMAP)
    if bitmap is not None:
        return _bitmap_may_match(bitmap, t, op, value)
    if op in ("=", "in"):
        bloom: BloomFilter | None = index.get(name, BLOOM_FILTER)
        if bloom is not None:
            return bool(bloom.might_contain(hashes_of(_probes([value] if op == "=" else list(value), t), t)).any())
    return True


def _probes(values: list[Any], t: PaimonType) -> list[Any]:
    """The values an equality probe looks up: for floats both zeros for either (a filter's
    0.0 matches -0.0 and the index keeps their bits apart)."""
    if t.root not in ("FLOAT", "DOUBLE"):
        return values
    out = list(values)
    for v in values:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0:
            out += [0.0, -0.0]
    return out


def _bitmap_may_match(bitmap: BitmapIndex, t: PaimonType, op: str, value: Any) -> bool:
    if op == "is null":
        return bitmap.has_nulls
    if op == "is not null":
        return bitmap.distinct() > 0
    if op in ("=", "in"):
        return any(k in bitmap.entries for k in keys_of(_probes([value] if op == "=" else list(value), t), t))
    coarse = _coarse(t)
    if op in ("!=", "not in"):
        raw = [value] if op == "!=" else list(value)
        if coarse or any(v is None or _is_nan(v) for v in raw):
            return True  # a key stands for several values; NaN differs even from itself; a null: cannot tell
        excluded = set(keys_of(_probes(raw, t), t))
        return any(k not in excluded for k in bitmap.entries)
    if op in _RANGE_OPS:
        if _is_nan(value):
            return True
        if t.root in ("FLOAT", "DOUBLE"):  # as Arrow compares: IEEE, -0.0 == 0.0, NaN matches no range
            test = _COMPARE[op]
            return any(test(_float_of(t, k), value) for k in bitmap.entries)
        keys = keys_of([value], t)
        if len(keys) != 1:
            return True
        bound = order_key(t, keys[0])
        # a coarse key is the floor of the values it stands for: a strict bound may hold at equality
        test = _COMPARE[{"<": "<=", ">": ">="}.get(op, op) if coarse else op]
        return any(test(order_key(t, k), bound) for k in bitmap.entries)
    return True


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _coarse(t: PaimonType) -> bool:
    """Whether a bitmap key stands for several values of the column: Java keys timestamps of
    precision 7..9 by their microseconds."""
    return t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 6


def _float_of(t: PaimonType, key: int) -> float:
    """A float or double key (its IEEE bits as Java's signed int or long) as the value."""
    if t.root == "FLOAT":
        return struct.unpack(">f", struct.pack(">i", key))[0]
    return struct.unpack(">d", struct.pack(">q", key))[0]


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def build_file_index(spec: FileIndexSpec, columns: Mapping[str, list[pa.Array]],
                     schema: PaimonSchema, bitmap_version: int = DEFAULT_BITMAP_VERSION) -> bytes | None:
    """The file-index container of one data file (None: the table declares no index this
    builds): each declared column's values, in the file's row order, through the codec's Bloom
    filter or bitmap encoder with the column's options, as Java's writers build them (a bitmap
    in `bitmap_version` unless its column's ``version`` option says)."""
    if not spec.columns:
        return None
    bodies: dict[str, dict[str, bytes | None]] = {}
    for ic in spec.columns:
        t = schema.field(ic.column).type
        parts = columns.get(ic.column, [])
        values = pa.chunked_array(parts, type=parts[0].type) if parts else pa.chunked_array([], type=t.arrow)
        if ic.index_type == BLOOM_FILTER:
            items = ic.number("items", DEFAULT_BLOOM_ITEMS, int)
            fpp = ic.number("fpp", DEFAULT_BLOOM_FPP, float)
            if items <= 0 or not 0 < fpp < 1:
                raise UnsupportedPaimonFeatureError(
                    f"Paimon's Bloom filter index on column {ic.column!r} needs items > 0 and 0 < fpp < 1 "
                    f"(the table says items={items}, fpp={fpp})")
            body = encode_bloom(values, t, items, fpp)
        else:
            version = ic.number("version", bitmap_version, int)
            if version not in (1, 2):
                raise UnsupportedPaimonFeatureError(
                    f"Paimon option 'file-index.bitmap.{ic.column}.version' = {version}: Paimon has versions 1 and 2")
            try:
                block = parse_memory_size(ic.options.get("index-block-size", "16kb"),
                                          f"file-index.bitmap.{ic.column}.index-block-size")
            except InvalidArgumentError as exc:
                raise UnsupportedPaimonFeatureError(f"Paimon {exc}") from None
            try:
                body = encode_bitmap(values, t, block, version)
            except ValueTooLarge:
                continue  # Java's writer fails on such a value; a file without this index is still right
        bodies.setdefault(ic.column, {})[ic.index_type] = body
    if not bodies:
        return None
    return encode_container(bodies)
