"""New data files of a Paimon table, as Java's writers make them: what the engine's writes and
compactions open through `PaimonSnapshotStore.open_file`.

A file is ``data-<uuid>-0.<format>`` (``changelog-`` for the input changelog) in the table's
``file.format`` (Parquet or ORC) and codec, written by the engine's `DataFileWriter`; with
``data-file.thin-mode`` it holds no ``_KEY_`` copies (readers take the key from its columns);
with file indexes declared (``file-index.*``) its index is built from its rows and goes into
its manifest entry, or, above ``file-index.in-manifest-threshold``, into
``<file>.index`` beside it (listed as its extra file); with ``data-file.external-paths`` it goes
under one of the roots, as Paimon's `DataFilePathFactory` places it.

The file's `DataFileMeta` names it by its place in the table (``[dir/][k=v/]bucket-<n>/<file>``:
files group by bucket directory) and carries what its manifest entry needs beyond the
engine's metadata under ``indexes["paimon"]`` (JSON, so a Spark task can ship it), and a
`PaimonFileRef` origin so that the engine reads it, before any commit, where it really is."""
from __future__ import annotations

import base64
import os
import posixpath
import random
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from ...codec.binary_row import encode_row
from ...errors import CorruptTableError, InvalidArgumentError, UnsupportedPaimonFeatureError
from ...storage import Store
from ..files import DataFileMeta, DataFileWriter, remove_uncommitted
from ..journal import creating
from ..objects import locate
from ..options import JAVA_BITMAP_V2, TableOptions
from ..schema import TableSchema
from ..values import encode_value
from .commit import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, PAIMON_FILE, data_file_record, paimon_extras
from .file_indexes import build_file_index
from .files import PaimonFileRef
from .metadata import KEY_PREFIX, PaimonSchema, PaimonTable, external_location, relative_bucket_path
from .options import ExternalPaths, FileIndexSpec, external_paths, file_index_spec, is_true

__all__ = ["ExternalRoots", "PaimonFileWriter", "entropy_directories", "external_roots", "placed_files",
           "with_origin"]


@dataclass(frozen=True)
class _Target:
    """Where one new data file goes: its store and its name there, and the ``_EXTERNAL_PATH``
    its manifest entry records (None: in the table)."""

    storage: Store
    name: str
    external: str | None


class ExternalRoots:
    """Which root a table's next new file goes to with ``data-file.external-paths``: round-robin
    from a random root, entropy-inject from the first (both step before use), weight-robin by
    weight — as Paimon's `ExternalPathProvider`s choose — and the stores of the roots."""

    def __init__(self, table: PaimonTable, paths: ExternalPaths) -> None:
        self.table, self.paths = table, paths
        self._position = random.randrange(len(paths.roots)) if paths.strategy == "round-robin" else 0
        self._lock = threading.Lock()
        self._stores: dict[str, Store] = {}

    def check(self) -> None:
        """Every root resolvable (before anything is written)."""
        for root in self.paths.roots:
            self._store(root)

    def _store(self, root: str) -> Store:
        with self._lock:
            found = self._stores.get(root)
        if found is not None:
            return found
        try:
            if root[:5].lower() == "file:":  # schemes are case-insensitive
                store = locate(external_location(root), None,
                               f"Paimon option 'data-file.external-paths' root {root!r}")
            else:
                store = self.table.external_store(root.rstrip("/"))
        except (InvalidArgumentError, CorruptTableError) as exc:
            raise UnsupportedPaimonFeatureError(f"Paimon option 'data-file.external-paths': {exc}") from None
        with self._lock:
            self._stores[root] = store
        return store

    def target(self, relative: str, file_name: str) -> _Target:
        """Where file `file_name` of the bucket at `relative` goes: ``<root>/<relative>/<file>``,
        entropy-inject adding its hash directories before ``<file>``."""
        ext = self.paths
        if ext.strategy == "weight-robin":
            root = random.choices(ext.roots, weights=ext.weights)[0]
        else:
            with self._lock:
                self._position = (self._position + 1) % len(ext.roots)
                root = ext.roots[self._position]
        name = posixpath.join(relative, file_name)
        if ext.strategy == "entropy-inject":
            name = posixpath.join(relative, entropy_directories(file_name), file_name)
        store = self._store(root)
        if root[:5].lower() == "file:":
            return _Target(store, name, "file:" + os.path.join(external_location(root), *name.split("/")))
        return _Target(store, name, f"{root.rstrip('/')}/{name}")

    def store_of(self, external: str) -> tuple[Store, str] | None:
        """The store and object name of a file this table's roots placed at `external` (a
        manifest's ``_EXTERNAL_PATH``, or a store's location of it)."""
        where = external_location(external)
        for root in self.paths.roots:
            prefix = external_location(root).rstrip("/") + "/"
            if where.startswith(prefix):
                return self._store(root), where[len(prefix):]
        return None


def entropy_directories(file_name: str) -> str:
    """Paimon's entropy-inject directories for a file: the low 20 bits of Guava's murmur3_32 of
    its UTF-8 name as a binary string (always 20 digits), split 4/4/4/8."""
    bits = format(_murmur3_32(file_name.encode("utf-8")) & 0xFFFFF, "020b")
    return "/".join((bits[0:4], bits[4:8], bits[8:12], bits[12:]))


def _murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3's x86 32-bit hash (the unsigned value)."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF
    c1, c2, h = 0xCC9E2D51, 0x1B873593, seed
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        h ^= rotl((k * c1) & 0xFFFFFFFF, 15) * c2 & 0xFFFFFFFF
        h = (rotl(h, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    tail = int.from_bytes(data[whole:], "little")
    if len(data) % 4:
        h ^= rotl((tail * c1) & 0xFFFFFFFF, 15) * c2 & 0xFFFFFFFF
    h ^= len(data)
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


class PaimonFileWriter(DataFileWriter):
    """One new data (or changelog) file of a Paimon table's bucket, as its writers make it (see
    the module's docstring); `close` returns its `DataFileMeta` named by its place in the table,
    with its manifest extras and a `PaimonFileRef` origin."""

    def __init__(self, table: PaimonTable, paimon: PaimonSchema, roots: ExternalRoots | None, relative: str,
                 schema: TableSchema, level: int, options: TableOptions | None, partition: tuple, bucket: int,
                 sorted_by: Sequence[str] = (), changelog: bool = False) -> None:
        fmt = paimon.checked_options.file_format
        base = f"{'changelog' if changelog else 'data'}-{uuid.uuid4()}-0.{fmt}"
        self.table, self.paimon, self.partition, self.bucket = table, paimon, partition, bucket
        self.table_name = posixpath.join(relative, base)  # the engine's name for it
        if roots is not None:
            # (the name a live external file gets from its entry: `PaimonSnapshotStore.entry`)
            bucket_path = relative_bucket_path(paimon, partition, bucket)
            self.table_name = posixpath.join(bucket_path, base)
            target = roots.target(bucket_path, base)
        else:
            target = _Target(table.storage, self.table_name, None)
        self.target = target
        stored = None
        if schema.has_primary_key and is_true(paimon.options.get("data-file.thin-mode", "false")):
            stored = [n for n in schema.file_schema.names if not n.startswith(KEY_PREFIX)]
        super().__init__(target.storage, relative, schema, level, options, sorted_by, target.name, fmt, stored)
        # changelog files are read in order: no index, as in Java
        self.index_spec = FileIndexSpec() if changelog else \
            file_index_spec(paimon.options, {f.name: f.type for f in paimon.fields})
        self.indexed: dict[str, list[pa.Array]] = {c.column: [] for c in self.index_spec.columns}
        self._index_name: str | None = None
        # a `pk-clustering-override` table's file above level 0 is sorted by the clustering
        # columns: its manifest's min/max key are its first and last rows' values of them
        self.clustering = paimon.clustering_columns if level > 0 and not changelog else ()
        self._clustering_bounds: list[list[Any]] = []

    def write(self, batch: pa.RecordBatch) -> None:
        super().write(batch)
        for column, parts in self.indexed.items():
            if batch.num_rows:
                parts.append(batch.column(column))
        if self.clustering and batch.num_rows:
            ends = batch.select(list(self.clustering))
            last = [v for v in ends.slice(batch.num_rows - 1, 1).to_pylist()[0].values()]
            if not self._clustering_bounds:
                self._clustering_bounds = [list(ends.slice(0, 1).to_pylist()[0].values()), last]
            self._clustering_bounds[1] = last

    def close(self) -> DataFileMeta:
        meta = super().close()
        extras: dict[str, Any] = {"external_path": self.target.external, "embedded_index": None, "extra_files": []}
        blob = build_file_index(self.index_spec, self.indexed, self.paimon,
                                2 if self.options is not None and self.options.java_reader_version >= JAVA_BITMAP_V2
                                else 1)
        if blob is not None and len(blob) > self.index_spec.in_manifest_threshold:
            # too large for the manifest: `<data file>.index` beside the data file, listed as its extra file
            self._index_name = self.target.name + ".index"
            try:
                creating(self.storage, self._index_name)
                self.storage.write(self._index_name, blob)
            except BaseException:
                self.abort()
                raise
            extras["extra_files"] = [posixpath.basename(self._index_name)]
        elif blob is not None:
            extras["embedded_index"] = base64.b64encode(blob).decode("ascii")
        # pre-aggregates beside it, listed as extra files: Java keeps and expires them with the file
        extras["extra_files"] += [posixpath.basename(n) for n in self.sidecar_names()]
        if self.clustering:
            # the engine bounds its keys by their statistics (its rows are not in key order)
            extras["clustering_bounds"] = [[encode_value(v) for v in row] for row in self._clustering_bounds]
            names = [n[len(KEY_PREFIX):] if n.startswith(KEY_PREFIX) else n for n in self.schema.file_key]
            meta = replace(meta, min_key=tuple(meta.stats[n][0] for n in names),
                           max_key=tuple(meta.stats[n][1] for n in names))
        meta = replace(meta, file_name=self.table_name, indexes={**meta.indexes, PAIMON_FILE: extras})
        return with_origin(self.table, self.paimon, meta, self.partition, self.bucket)

    def abort(self) -> None:
        super().abort()
        if self._index_name is not None:
            remove_uncommitted(self.storage, [self._index_name])


def with_origin(table: PaimonTable, paimon: PaimonSchema, meta: DataFileMeta, partition: tuple,
                bucket: int) -> DataFileMeta:
    """A new file's meta (this process's, or one a Spark task shipped) with a `PaimonFileRef`
    origin built from the manifest entry it will have, so that the engine reads it where it is."""
    record = data_file_record(paimon, meta, encode_row(list(partition), paimon.partition_types), bucket,
                              paimon.checked_options.buckets, FILE_SOURCE_COMPACT if meta.level else FILE_SOURCE_APPEND)
    name = None if paimon_extras(meta).get("external_path") else meta.file_name
    return replace(meta, origin=PaimonFileRef(table, table.entry_file(record, paimon, name), paimon))


def placed_files(table: PaimonTable, roots: ExternalRoots | None,
                 metas: Sequence[DataFileMeta]) -> list[tuple[Store, list[str]]]:
    """Where new files really are, for their removal: (store, object names) — a file in the
    table with its extra files, one at an external path in its root's store."""
    inside: list[str] = []
    outside: list[tuple[Store, list[str]]] = []
    for meta in metas:
        extras = paimon_extras(meta)
        names = [meta.file_name, *meta.sidecars()]
        external = extras.get("external_path")
        if external:
            found = roots.store_of(external) if roots is not None else None
            if found is not None:
                store, name = found
                outside.append((store, [name] + [posixpath.join(posixpath.dirname(name), extra)
                                                 for extra in extras.get("extra_files") or ()]))
            continue
        directory = posixpath.dirname(meta.file_name)
        inside += names + [posixpath.join(directory, extra) for extra in extras.get("extra_files") or ()]
    return [(table.storage, inside), *outside] if inside else outside


def external_roots(table: PaimonTable, paimon: PaimonSchema) -> ExternalRoots | None:
    paths = external_paths(paimon.options)
    return None if paths is None else ExternalRoots(table, paths)
