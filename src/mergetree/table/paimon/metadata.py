"""Reading an Apache Paimon table's metadata: schema and snapshot JSON, tags, Avro manifest
lists and manifests, and the live data files they add up to.  A warehouse is a local directory
or an object-store URI (`s3://lake/warehouse`, ...): every file is read and written through the
table's `mergetree.storage` store (`PaimonTable.storage`), never with `os`/`open`.

Layout (``<warehouse>/<db>.db/<table>/``): ``schema/schema-<id>``, ``snapshot/snapshot-<id>``
with the ``LATEST`` hint, ``tag/tag-<name>`` (a snapshot by name), ``manifest/`` (Avro; ORC
from writers up to Paimon 2.0), and data files under ``[k=v/...]bucket-<n>/``.  A snapshot's
files are its base manifest list's entries and then its delta list's, applied in order: an ADD
adds a file, a DELETE removes the ADD with the same identifier (partition, bucket, level, file
name, extra files, embedded index, external path).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import posixpath
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa

from ...codec.binary_row import decode_row
from ...codec.deletion_vectors import DeletionVectorRange, read_index_file
from ...codec.manifest_files import MetadataFile, read_metadata
from ...codec.types import PaimonField, PaimonType, parse_field
from ...errors import (
    CorruptTableError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    TableNotFoundError,
    UnsupportedPaimonFeatureError,
)
from ...storage import LocalDiskStore, ObjectNotFoundError, Store
from ..filecache import FileCache
from ..objects import StoredFile, list_names, locate, read_if_exists, storage_options_for, table_path
from ..objects import source as stored_source
from .options import CLUSTERING_COLUMNS, PK_CLUSTERING, PaimonOptions, check_options

__all__ = ["ADD", "DELETE", "DELETION_VECTORS_INDEX", "KEY_PREFIX", "KIND_COLUMN", "SEQUENCE_COLUMN", "DeletionFile",
           "MetadataFile", "PaimonFile", "PaimonSchema", "PaimonTable", "bucket_directory_of", "clear_caches",
           "escape_path_name", "external_location", "identifier", "partition_path", "relative_bucket_path"]

KEY_PREFIX = "_KEY_"
SEQUENCE_COLUMN = "_SEQUENCE_NUMBER"
KIND_COLUMN = "_VALUE_KIND"
ADD, DELETE = 0, 1

# Paimon (like Hive) escapes these characters of partition keys and values in directory names
# as %XX (Java's `PartitionPathUtils.CHAR_TO_ESCAPE`)
_ESCAPED = {chr(c) for c in range(0x20)} | set('"#%\'*/:=?\\\x7f{}[]^')


def escape_path_name(text: str) -> str:
    """A partition key or value as Java's ``escapePathName`` writes it in a directory name."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def partition_path(keys: Sequence[str], values: Sequence[Any], default_name: str) -> str:
    parts = []
    for k, v in zip(keys, values):
        text = default_name if v is None or v == "" else (v.isoformat() if hasattr(v, "isoformat") else str(v))
        if isinstance(v, bool):
            text = "true" if v else "false"
        parts.append(f"{escape_path_name(k)}={escape_path_name(text)}")
    return "/".join(parts)



def bucket_directory_of(schema: PaimonSchema, partition: Sequence[Any], bucket: int,
                        files: Iterable[PaimonFile] = ()) -> str:
    """Where new files of a bucket go (an object path under the table): beside its files, as a
    writer named their directory (dates as days or as text, ...: Paimon's readers look where the
    manifest's partition says; an input at an external path is no guide), else as Paimon names it."""
    for f in files:
        if f.name is not None:
            return posixpath.dirname(f.name)
    return relative_bucket_path(schema, partition, bucket)


def relative_bucket_path(schema: PaimonSchema, partition: Sequence[Any], bucket: int) -> str:
    """Paimon's relative bucket path, under the table or an external root:
    ``[data-file.path-directory/][k=v/...]bucket-<n>``."""
    default = schema.options.get("partition.default-name", "__DEFAULT_PARTITION__")
    directory = schema.options.get("data-file.path-directory", "").strip("/")
    return posixpath.join(directory, partition_path(schema.partition_keys, partition, default), f"bucket-{bucket}")

@dataclass(frozen=True)
class PaimonSchema:
    id: int
    fields: tuple[PaimonField, ...]
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: dict[str, str]

    @classmethod
    def from_json(cls, d: dict) -> PaimonSchema:
        return cls(int(d["id"]), tuple(parse_field(f) for f in d["fields"]), tuple(d.get("partitionKeys") or ()),
                   tuple(d.get("primaryKeys") or ()), {str(k): str(v) for k, v in (d.get("options") or {}).items()})

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> PaimonField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def trimmed_keys(self) -> list[str]:
        """The key stored in data files: the primary key without the partition columns."""
        trimmed = [k for k in self.primary_keys if k not in self.partition_keys]
        return trimmed or list(self.primary_keys)

    @property
    def key_columns(self) -> list[str]:
        return [KEY_PREFIX + k for k in self.trimmed_keys]

    @property
    def key_types(self) -> list[PaimonType]:
        return [self.field(k).type for k in self.trimmed_keys]

    @property
    def partition_types(self) -> list[PaimonType]:
        return [self.field(k).type for k in self.partition_keys]

    @cached_property
    def clustering_columns(self) -> tuple[str, ...]:
        """A `pk-clustering-override` table's clustering columns (empty otherwise): the files
        above level 0 are sorted by them, and their manifest's min/max key hold their values."""
        if not self.primary_keys or self.options.get(PK_CLUSTERING, "false").strip().lower() != "true":
            return ()
        return tuple(c.strip() for c in (self.options.get(CLUSTERING_COLUMNS) or "").split(",") if c.strip())

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([f.arrow_field() for f in self.fields])

    @cached_property
    def checked_options(self) -> PaimonOptions:
        return check_options(self.options, self.names, list(self.primary_keys), list(self.partition_keys))


def table_store(warehouse: Any, table: Any, storage_options: Mapping[str, object] | None = None) -> tuple[Store, str]:
    """The store of table `table` ("database.table", at ``<warehouse>/<database>.db/<table>``
    as Paimon's filesystem catalog keeps it) and the table's name; `table` None: `warehouse`
    is the table's own directory, named by its last part.  `warehouse`: a local directory (or
    Paimon's ``file:/path``) or a URI with `mergetree.storage`'s `storage_options`."""
    if isinstance(warehouse, Store) and table is None:  # the table's own store, opened already
        return warehouse, table_path(warehouse).rstrip("/").replace(os.sep, "/").rpartition("/")[2]
    if isinstance(warehouse, bytes) or not isinstance(warehouse, (str, os.PathLike)):
        raise InvalidArgumentError(f"warehouse must be a directory path or a URI, not {warehouse!r}")
    if table is not None and (not isinstance(table, str) or table.count(".") != 1 or not all(table.split("."))):
        raise InvalidArgumentError(f"table must be 'database.table', not {table!r}")
    text = os.fspath(warehouse)
    if text.startswith("file:") and not text.startswith("file://"):
        text = text[len("file:"):]  # Paimon's own form of a local warehouse
    if table is None:
        storage = locate(text, storage_options, "a Paimon table")
        return storage, table_path(storage).rstrip("/").replace(os.sep, "/").rpartition("/")[2]
    db, name = table.split(".")
    return locate(text, storage_options, "a Paimon warehouse").sub(f"{db}.db/{name}"), table


@dataclass(frozen=True, eq=False)
class PaimonFile:
    """One live data file of a snapshot, with what the planner and the pruning need."""

    partition: tuple
    partition_bytes: bytes
    bucket: int
    total_buckets: int
    file_name: str
    level: int
    row_count: int
    file_size: int
    min_key: tuple
    max_key: tuple
    min_seq: int
    max_seq: int
    delete_count: int
    schema_id: int
    path: str                          # where it is, for messages: a local path or a URI
    key_stats: tuple[tuple[Any, Any, int | None], ...]  # per key column: (min, max, null count)
    record: dict = field(repr=False)   # the manifest entry as read, written back for a DELETE
    # its object path under the table's store ("[k=v/]bucket-0/data-....parquet"); None for a
    # file at an external path (then `path` is where it is)
    name: str | None = None

    def value_stats(self, schema: PaimonSchema) -> dict[str, tuple[Any, Any, int]]:
        """Column -> (min, max, null count), for the columns whose statistics the file keeps."""
        stats = self.record["_FILE"]["_VALUE_STATS"]
        columns = self.record["_FILE"].get("_VALUE_STATS_COLS")
        names = schema.names if columns is None else list(columns)
        if not names or not stats["_MIN_VALUES"]:
            return {}
        try:
            types = [schema.field(n).type for n in names]
        except KeyError:
            return {}
        if any(not t.atomic for t in types):
            return {}
        lo = decode_row(stats["_MIN_VALUES"], types, "value statistic")
        hi = decode_row(stats["_MAX_VALUES"], types, "value statistic")
        nulls = stats.get("_NULL_COUNTS") or [None] * len(names)
        return {n: (a, b, c) for n, a, b, c in zip(names, lo, hi, nulls) if c is not None}


@dataclass(frozen=True)
class DeletionFile:
    """Where a data file's deletion vector is: its index file (an object name under the table,
    or an external path) and the range in it."""

    index_name: str | None              # under the table's store; None: at `path` (external)
    path: str                           # for messages: a local path or a URI
    size: int                           # the index file's size, as the index manifest records it
    range: DeletionVectorRange
    ranges: tuple[DeletionVectorRange, ...] = field(repr=False, default=())  # every vector of the index file


DELETION_VECTORS_INDEX = "DELETION_VECTORS"
INDEX_DIR = "index"

_metadata_cache: FileCache[MetadataFile] = FileCache(max_entries=256)
# a local table's parsed schema files, keyed on the file's stat (every read opens the table
# again and reads its latest schema: parsing it was a quarter of a point lookup's time)
_schema_cache: FileCache[PaimonSchema] = FileCache(max_entries=256)
# decoded deletion-vector index files (one per bucket: every data file's bitmap), by name
_dv_cache: FileCache[dict] = FileCache(max_entries=1024, max_bytes=256 * 2**20,
                                       weight=lambda d: sum(64 + 2 * len(v) for v in d.values()))
_LIVE_CACHE_SIZE = 16
_live_cache: OrderedDict[tuple, list[PaimonFile]] = OrderedDict()
_live_lock = threading.Lock()

SCHEMA_DIR, SNAPSHOT_DIR, TAG_DIR, MANIFEST_DIR = "schema", "snapshot", "tag", "manifest"
# an expired snapshot's metadata kept for its changelog (``changelog.num-retained.*`` above the
# snapshots'): the same JSON as the snapshot, at ``changelog/changelog-<id>``
CHANGELOG_DIR = "changelog"
LATEST_HINT = f"{SNAPSHOT_DIR}/LATEST"
# partition values whose directory name every Paimon writer spells the same way (Java, pypaimon
# old and new): such a file's place follows from its manifest entry, no request needed
_PLAIN_TEXT = re.compile(r"[A-Za-z0-9_.\-]+")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def clear_caches() -> None:
    """Forget the decoded metadata of every Paimon table this process holds (Paimon never
    rewrites a metadata file under its name, so the caches trust names; after files were
    replaced or damaged by hand, a reader starts afresh)."""
    _metadata_cache.clear()
    _schema_cache.clear()
    with _live_lock:
        _live_cache.clear()


def _numbered(names: list[str], prefix: str) -> list[int]:
    return sorted(int(n[len(prefix):]) for n in names if n.startswith(prefix) and n[len(prefix):].isdigit())


class PaimonTable:
    """A Paimon table's directory or object-store prefix, read-only (commits are
    `paimon.compact`'s).  `storage` is the table's store: every file goes through it; `path`
    names the table (its absolute local path, or its URI, secrets redacted).

    Pickled (Spark ships read plans to its tasks) as its path and name only: the unpickled table
    finds its store again with `mergetree.table.objects.locate` when first used — the one this
    process opened the location with (a Spark task opens the table with the reader's options
    before it reads a file), else the URI's with credentials from the environment.  Options and
    credentials are never pickled."""

    def __init__(self, path: str, name: str, storage: Store | None = None,
                 schema_ids: list[int] | None = None) -> None:
        self._storage = storage
        self.path = table_path(storage) if storage is not None else path
        self.name = name
        self._file_index: dict[str, str] | None = None
        self._schemas: dict[int, PaimonSchema] = {}
        self._schema_ids = schema_ids   # as listed when the table was opened (`open`)
        self._manifest_formats: set[str] | None = None  # `manifest.format` over every schema, when needed
        self._bucket_stores: dict[str, Store] = {}  # external paths in the table's bucket: "s3://b" -> store

    def __reduce__(self) -> tuple:
        return (PaimonTable, (self.path, self.name))

    @property
    def storage(self) -> Store:
        """The table's store (an unpickled table locates it when first asked)."""
        if self._storage is None:
            self._storage = locate(self.path, None, "a Paimon table")
        return self._storage

    @classmethod
    def open(cls, warehouse: Any, table: Any, storage_options: Mapping[str, object] | None = None) -> PaimonTable:
        """The table `table` ("database.table") of `warehouse`: a local directory (or Paimon's
        ``file:/path``) or a URI (``s3://bucket/warehouse``, ...) whose `storage_options` are
        `mergetree.storage`'s (the same as `Table.open`'s).  `table` None: `warehouse` is the
        table's own directory (a table outside any catalog).  One listing of its schema files."""
        storage, table = table_store(warehouse, table, storage_options)
        names = list_names(storage, SCHEMA_DIR)
        if not [n for n in names if n]:  # a directory marker ("schema/") is no schema
            raise TableNotFoundError(f"there is no Paimon table {table!r} at {table_path(storage)} "
                                     f"(no {cls('', table, storage).full(SCHEMA_DIR)})")
        return cls("", table, storage, _numbered(names, "schema-"))

    # -- files -----------------------------------------------------------------------------
    @property
    def is_local(self) -> bool:
        return isinstance(self.storage, LocalDiskStore)

    def full(self, name: str) -> str:
        """The local path or URI of an object of the table (messages, `PaimonFile.path`)."""
        if self.is_local:
            return os.path.join(self.path, *name.split("/"))
        return f"{self.path}/{name}"

    def name_of(self, path: str) -> str | None:
        """The object path under the table of a file named by `full` (None: not the table's)."""
        root = self.path.rstrip("/") + ("/" if not self.is_local else os.sep)
        if not path.startswith(root):
            return None
        rest = path[len(root):]
        return rest.replace(os.sep, "/") if self.is_local else rest

    def source(self, f: PaimonFile) -> str | StoredFile:
        """What pyarrow reads a data file from: its local path, or a `StoredFile` (ranged GETs,
        its size as the manifest recorded it: no HEAD request)."""
        if f.name is not None:
            return stored_source(self.storage, f.name, f.file_size)
        if "://" not in f.path:
            return f.path
        directory, _, base = f.path.rpartition("/")
        return StoredFile(self.external_store(directory), base, f.file_size)

    def external_store(self, directory: str) -> Store:
        """The store of a directory outside the table (an external data path's, a URI): in the
        bucket (or container) the table is in, the store of the bucket opened with the table's
        `storage_options`; elsewhere the location this process opened it (or a location above
        it) with, else the URI's with credentials from the environment."""
        parts = urlsplit(directory)
        mine = urlsplit(self.path) if not self.is_local else None
        if mine is None or (parts.scheme, parts.netloc) != (mine.scheme, mine.netloc):
            return locate(directory, None, "an external data path")
        key = f"{parts.scheme}://{parts.netloc}"
        with _live_lock:
            root = self._bucket_stores.get(key)
        if root is None:
            root = locate(key, storage_options_for(self.path), "an external data path")
            with _live_lock:
                self._bucket_stores[key] = root
        prefix = parts.path.strip("/")
        return root.sub(prefix) if prefix else root

    def _read_json(self, name: str, what: str) -> dict:
        """A JSON metadata file; `ObjectNotFoundError` (a FileNotFoundError) if there is none."""
        data = self.storage.read(name)
        try:
            d = json.loads(data)
        except ValueError as exc:
            raise CorruptTableError(f"Paimon {what} {self.full(name)} is unreadable: {exc}",
                                    path=self.full(name)) from None
        if not isinstance(d, dict):
            raise CorruptTableError(f"Paimon {what} {self.full(name)} is not a JSON object", path=self.full(name))
        return d

    def metadata_file(self, name: str, what: str) -> MetadataFile:
        """A metadata file under ``manifest/`` (`what`: "manifest list", "manifest" or "index
        manifest"), Avro or ORC as its magic bytes say, its records checked against Paimon's
        row type (`manifest_files.read_metadata`) and its format against the table's
        ``manifest.format``: immutable under its unique name, so cached — locally keyed on the
        file's stat, on an object store on its name (no request)."""
        relative = f"{MANIFEST_DIR}/{name}"
        path = self.full(relative)

        def load() -> MetadataFile:
            try:
                data = self.storage.read(relative)
            except ObjectNotFoundError:
                raise CorruptTableError(f"Paimon {what} {path} is missing", path=path) from None
            return read_metadata(data, what, path)
        found = _metadata_cache.get(path, load) if self.is_local else \
            _metadata_cache.get_keyed((self.path, relative), load)
        self._check_manifest_format(found.format, what, path)
        return found

    def _check_manifest_format(self, fmt: str, what: str, path: str) -> None:
        """An ORC metadata file needs a schema of the table that names ORC as its
        ``manifest.format`` (an ORC file in a table that never asked for ORC is damage, not a
        choice).  Avro is always accepted: every Paimon writes it, pypaimon and Paimon from 2.1
        whatever the option says.  Java trusts the option; mergetree reads by the magic bytes,
        so a table with both formats (files from before and after an ALTER) reads."""
        if fmt == "avro":
            return

        def formats(schemas) -> set[str]:
            return {s.options.get("manifest.format", "avro").strip().lower() for s in schemas}
        if fmt in formats(list(self._schemas.values())) or fmt in formats([self.schema()]):
            return
        if self._manifest_formats is None:  # every schema of the table: one listing, read once
            ids = self._schema_ids if self._schema_ids is not None else self.schema_ids()
            self._manifest_formats = formats([self.schema(i) for i in ids])
        if fmt not in self._manifest_formats:
            raise CorruptTableError(f"Paimon {what} {path} is an {fmt.upper()} file, but no schema of table "
                                    f"{self.name} sets 'manifest.format' to {fmt!r}", path=path)

    # -- schemas -------------------------------------------------------------------------
    def schema_ids(self) -> list[int]:
        return _numbered(list_names(self.storage, SCHEMA_DIR), "schema-")

    def schema_document(self, schema_id: int) -> dict:
        """Schema file `schema_id` as Java wrote it (its JSON object, every field kept)."""
        return self._read_json(f"{SCHEMA_DIR}/schema-{schema_id}", "schema")

    def published_schema(self, schema: PaimonSchema) -> None:
        """Take note of schema `schema`, just published by this process (the next latest)."""
        self._schemas[schema.id] = schema
        if self._schema_ids is not None:
            self._schema_ids = sorted({*self._schema_ids, schema.id})

    def schema(self, schema_id: int | None = None) -> PaimonSchema:
        """Schema `schema_id` (default: the latest); a schema file never changes under its id."""
        if schema_id is not None and schema_id in self._schemas:
            return self._schemas[schema_id]
        if schema_id is None:
            ids = self._schema_ids if self._schema_ids is not None else self.schema_ids()
            if not ids:
                raise CorruptTableError(f"Paimon table {self.path} has no schema file", path=self.full(SCHEMA_DIR))
            schema_id = ids[-1]
        name = f"{SCHEMA_DIR}/schema-{schema_id}"
        try:
            def load() -> PaimonSchema:
                return PaimonSchema.from_json(self._read_json(name, "schema"))
            schema = self._schemas[schema_id] = _schema_cache.get(self.full(name), load) if self.is_local else load()
            return schema
        except ObjectNotFoundError:
            raise CorruptTableError(f"Paimon schema {self.full(name)} is missing", path=self.full(name)) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptTableError(f"Paimon schema {self.full(name)} is malformed: {exc!r}",
                                    path=self.full(name)) from None

    # -- snapshots and tags --------------------------------------------------------------
    @staticmethod
    def snapshot_name(snapshot_id: int) -> str:
        """The object path of snapshot `snapshot_id` under the table."""
        return f"{SNAPSHOT_DIR}/snapshot-{snapshot_id}"

    def snapshot_path(self, snapshot_id: int) -> str:
        return self.full(self.snapshot_name(snapshot_id))

    def snapshot_ids(self) -> list[int]:
        return _numbered(list_names(self.storage, SNAPSHOT_DIR), "snapshot-")

    def latest_hint(self) -> int | None:
        """The LATEST hint's id, if it is there and readable (it may lag: check forward)."""
        try:
            data = read_if_exists(self.storage, LATEST_HINT)
            return int(data.decode().strip()) if data is not None else None
        except (UnicodeDecodeError, ValueError):
            return None

    def _after(self, snapshot_id: int) -> int:
        """The last id of the run of existing snapshots from `snapshot_id` (one HEAD each)."""
        while self.storage.exists(self.snapshot_name(snapshot_id + 1)):
            snapshot_id += 1
        return snapshot_id

    def latest_snapshot_id(self) -> int | None:
        """The newest committed id: the LATEST hint, checked forward (it may lag)."""
        hint = self.latest_hint()
        if hint is not None and self.storage.exists(self.snapshot_name(hint)):
            return self._after(hint)
        ids = self.snapshot_ids()
        self._check_not_lost(hint, ids)
        return ids[-1] if ids else None

    def _check_not_lost(self, hint: int | None, ids: list[int]) -> None:
        """A hint above every snapshot there is names a committed snapshot that is gone (a
        commit publishes its snapshot before the hint): damage, never read past as if the
        snapshot before it were the latest (its changes would be lost without a word)."""
        if hint is not None and (not ids or hint > ids[-1]):
            raise CorruptTableError(
                f"Paimon snapshot {self.snapshot_path(hint)} is missing: the table's LATEST hint says it was "
                f"committed" + (f" (the newest snapshot there is {ids[-1]})" if ids else ""),
                path=self.snapshot_path(hint))

    def latest_snapshot(self) -> dict | None:
        """The newest snapshot (None: the table has none), its file read at once: on an object
        store the LATEST hint, the hinted snapshot and a HEAD for the next id (three requests),
        a listing only when the hint is missing or names an expired snapshot."""
        hint = self.latest_hint()
        if hint is not None:
            try:
                found = self._read_json(self.snapshot_name(hint), "snapshot")
            except ObjectNotFoundError:
                pass
            else:
                last = self._after(hint)
                return found if last == hint else self.snapshot(last)
        ids = self.snapshot_ids()
        self._check_not_lost(hint, ids)
        return self.snapshot(ids[-1]) if ids else None

    def snapshot(self, snapshot_id: int) -> dict:
        try:
            return self._read_json(self.snapshot_name(snapshot_id), "snapshot")
        except ObjectNotFoundError:
            ids = self.snapshot_ids()
            span = f"{ids[0]}..{ids[-1]}" if ids else "none"
            raise SnapshotNotFoundError(f"Paimon table {self.name} has no snapshot {snapshot_id} "
                                        f"(snapshots: {span})") from None

    def kept_changelog_ids(self) -> list[int]:
        """Ids whose snapshot expired while its changelog was kept (``changelog/changelog-<id>``)."""
        return _numbered(list_names(self.storage, CHANGELOG_DIR), "changelog-")

    def commit(self, snapshot_id: int) -> dict:
        """The metadata of commit `snapshot_id`: its snapshot, or after it expired the copy
        Paimon keeps for its changelog; SnapshotNotFoundError naming what the table has."""
        try:
            return self._read_json(self.snapshot_name(snapshot_id), "snapshot")
        except ObjectNotFoundError:
            pass
        try:
            return self._read_json(f"{CHANGELOG_DIR}/changelog-{snapshot_id}", "kept changelog")
        except ObjectNotFoundError:
            raise SnapshotNotFoundError(f"Paimon table {self.name} has no snapshot {snapshot_id} "
                                        f"({self.history()})") from None

    def history(self) -> str:
        """Which snapshots (and kept changelogs of expired ones) the table has, for messages."""
        ids, kept = self.snapshot_ids(), self.kept_changelog_ids()
        text = f"snapshots: {ids[0]}..{ids[-1]}" if ids else "snapshots: none"
        return text + (f"; changelog kept for expired snapshots {kept[0]}..{kept[-1]}" if kept else "")

    def manifest_entries(self, list_name: str | None, schema: PaimonSchema) -> list[tuple[int, PaimonFile]]:
        """The entries of the manifests a manifest list (a snapshot's delta or changelog list)
        names, in order: (ADD or DELETE, the file)."""
        return [e for meta in self.manifest_list(list_name)
                for e in self.manifest_file_entries(meta["_FILE_NAME"], schema)]

    def manifest_file_entries(self, name: str, schema: PaimonSchema) -> list[tuple[int, PaimonFile]]:
        """The entries of one manifest, in order: (ADD or DELETE, the file)."""
        out = []
        for entry in self.metadata_file(name, "manifest").records:
            if entry["_KIND"] not in (ADD, DELETE):
                raise CorruptTableError(f"Paimon manifest {name} has an entry of kind {entry['_KIND']}",
                                        path=self.manifest_path(name))
            out.append((int(entry["_KIND"]), self._file(entry, schema)))
        return out

    def tags(self) -> list[str]:
        return sorted(n[len("tag-"):] for n in list_names(self.storage, TAG_DIR) if n.startswith("tag-"))

    def resolve(self, snapshot: Any) -> dict | None:
        """The snapshot to read: None (the latest; None if the table has none), an id, a tag
        name, or a point in time — a `datetime` or an ISO 8601 string that names no tag (naive:
        local time, as Paimon reads ``scan.timestamp``) — whose snapshot is the newest committed
        at or before it (Paimon's ``scan.timestamp-millis``)."""
        if snapshot is None:
            return self.latest_snapshot()
        if isinstance(snapshot, dt.datetime):
            return self.snapshot_at(snapshot)
        if isinstance(snapshot, bool) or not isinstance(snapshot, (int, str)):
            raise InvalidArgumentError(f"snapshot must be a snapshot id, a tag name or a point in time (a datetime "
                                       f"or an ISO 8601 string), not {snapshot!r}")
        if isinstance(snapshot, int):
            return self.snapshot(snapshot)
        try:
            return self._read_json(f"{TAG_DIR}/tag-{snapshot}", "tag")
        except ObjectNotFoundError:
            pass
        try:
            moment = dt.datetime.fromisoformat(snapshot.strip())
        except ValueError:
            raise SnapshotNotFoundError(f"Paimon table {self.name} has no tag {snapshot!r} "
                                        f"(tags: {', '.join(self.tags()) or 'none'})") from None
        return self.snapshot_at(moment)

    def snapshot_at(self, moment: dt.datetime) -> dict:
        """The newest snapshot committed at or before `moment` (binary search over the snapshots'
        ``timeMillis``, which grow with their ids)."""
        millis = int(moment.timestamp() * 1000)
        ids = self.snapshot_ids()
        found = None
        low, high = 0, len(ids) - 1
        while low <= high:
            middle = (low + high) // 2
            document = self.snapshot(ids[middle])
            if int(document["timeMillis"]) <= millis:
                found, low = document, middle + 1
            else:
                high = middle - 1
        if found is None:
            first = "the table has no snapshots" if not ids else (
                f"its earliest snapshot, {ids[0]}, was committed at "
                f"{dt.datetime.fromtimestamp(int(self.snapshot(ids[0])['timeMillis']) / 1000).isoformat()}")
            raise SnapshotNotFoundError(f"Paimon table {self.name} has no snapshot committed at or before "
                                        f"{moment.isoformat()} ({first})")
        return found

    def tag_name(self, name: str) -> str:
        return f"{TAG_DIR}/tag-{name}"

    # -- manifests -----------------------------------------------------------------------
    def manifest_path(self, name: str) -> str:
        return self.full(f"{MANIFEST_DIR}/{name}")

    def manifest_list(self, name: str | None) -> list[dict]:
        if not name:
            return []
        return self.metadata_file(name, "manifest list").records

    def live_files(self, snapshot: dict | None) -> list[PaimonFile]:
        """Every data file of `snapshot` (in manifest order); cached per snapshot id."""
        if snapshot is None:
            return []
        sid = int(snapshot["id"])
        # a snapshot never changes under its id: its files are kept across calls (point reads
        # would otherwise decode every manifest entry each time); keyed by the manifest lists too
        key = (self.path, sid, snapshot.get("baseManifestList"), snapshot.get("deltaManifestList"))
        with _live_lock:
            cached = _live_cache.get(key)
            if cached is not None:
                _live_cache.move_to_end(key)
                return cached
        schema = self.schema(int(snapshot["schemaId"]))
        live: dict[tuple, dict] = {}
        for list_name in (snapshot.get("baseManifestList"), snapshot.get("deltaManifestList")):
            for meta in self.manifest_list(list_name):
                for entry in self.metadata_file(meta["_FILE_NAME"], "manifest").records:
                    ident = identifier(entry)
                    if entry["_KIND"] == ADD:
                        live[ident] = entry
                    elif entry["_KIND"] == DELETE:
                        live.pop(ident, None)
                    else:
                        raise CorruptTableError(f"Paimon manifest {meta['_FILE_NAME']} has an entry of kind "
                                                f"{entry['_KIND']}", path=self.manifest_path(meta["_FILE_NAME"]))
        files = [self._file(entry, schema) for entry in live.values()]
        with _live_lock:
            _live_cache[key] = files
            while len(_live_cache) > _LIVE_CACHE_SIZE:
                _live_cache.popitem(last=False)
        return files

    # -- deletion vectors ----------------------------------------------------------------
    def deletion_files(self, snapshot: dict | None) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
        """Per (partition bytes, bucket), each data file's deletion vector, from the snapshot's
        index manifest (a full list of the snapshot's index files: Paimon writes it whole).  As
        Paimon combines a bucketed table's entries: DELETE entries first, then every ADD; a data
        file named by two index files is a damaged table."""
        name = (snapshot or {}).get("indexManifest")
        if not name:
            return {}
        schema = self.schema(int(snapshot["schemaId"])) if snapshot else self.schema()
        entries = self.metadata_file(name, "index manifest").records
        path = self.manifest_path(name)
        for e in entries:
            if not isinstance(e, dict) or not isinstance(e.get("_KIND"), int) or e["_KIND"] not in (ADD, DELETE) \
                    or not isinstance(e.get("_INDEX_TYPE"), str) or not isinstance(e.get("_FILE_NAME"), str) \
                    or not isinstance(e.get("_BUCKET"), int) or not isinstance(e.get("_PARTITION"), bytes):
                raise CorruptTableError(f"Paimon index manifest {path} has a malformed entry", path=path)
        deleted = {(e["_PARTITION"], e["_BUCKET"], e["_FILE_NAME"]) for e in entries if e["_KIND"] == DELETE}
        out: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
        for e in entries:
            if e["_KIND"] != ADD or e["_INDEX_TYPE"] != DELETION_VECTORS_INDEX \
                    or (e["_PARTITION"], e["_BUCKET"], e["_FILE_NAME"]) in deleted:
                continue
            index_name, where = self._index_location(e, schema)
            per_file = out.setdefault((e["_PARTITION"], e["_BUCKET"]), {})
            try:
                ranges = tuple(DeletionVectorRange(str(r["f0"]), int(r["f1"]), int(r["f2"]),
                                                   None if r.get("_CARDINALITY") is None else int(r["_CARDINALITY"]))
                               for r in e.get("_DELETIONS_VECTORS_RANGES") or ())
            except (KeyError, TypeError, ValueError):
                raise CorruptTableError(f"Paimon index manifest {path} has a malformed deletion-vector range "
                                        f"for index file {e['_FILE_NAME']}", path=path) from None
            for dv in ranges:
                if dv.data_file in per_file:
                    raise CorruptTableError(f"Paimon index manifest {path} gives data file {dv.data_file} two "
                                            f"deletion vectors", path=path)
                per_file[dv.data_file] = DeletionFile(index_name, where, int(e.get("_FILE_SIZE") or 0), dv, ranges)
        return out

    def index_files(self, snapshot: dict) -> list[tuple[str | None, str]]:
        """Every index file the snapshot's index manifest lists (deletion vectors, dynamic
        buckets' hash indexes, ...): (object name under the table, or None when external; path)."""
        name = snapshot.get("indexManifest")
        if not name:
            return []
        schema = self.schema(int(snapshot["schemaId"]))
        entries = [e for e in self.metadata_file(name, "index manifest").records if isinstance(e, dict)]

        def key(e: dict) -> tuple:
            return e.get("_PARTITION"), e.get("_BUCKET"), e.get("_FILE_NAME")

        deleted = {key(e) for e in entries if e.get("_KIND") == DELETE}
        return [self._index_location(e, schema) for e in entries if e.get("_KIND") == ADD and key(e) not in deleted]

    def _index_location(self, entry: dict, schema: PaimonSchema) -> tuple[str | None, str]:
        """An index file's object name under the table (None when external) and its path:
        ``_EXTERNAL_PATH`` if recorded, else ``index/<name>``, or the bucket's directory
        under ``index-file-in-data-file-dir``."""
        external = entry.get("_EXTERNAL_PATH")
        if external:
            return None, external_location(external)
        if schema.options.get("index-file-in-data-file-dir", "false").strip().lower() == "true":
            partition = decode_row(entry["_PARTITION"], schema.partition_types, "partition")
            default = schema.options.get("partition.default-name", "__DEFAULT_PARTITION__")
            name = posixpath.join(partition_path(schema.partition_keys, partition, default),
                                  f"bucket-{entry['_BUCKET']}", entry["_FILE_NAME"])
        else:
            name = f"{INDEX_DIR}/{entry['_FILE_NAME']}"
        return name, self.full(name)

    def index_file_bytes(self, entry: dict, schema: PaimonSchema) -> tuple[bytes, str]:
        """An index manifest entry's file (its bytes, its path), wherever it is."""
        name, path = self._index_location(entry, schema)
        try:
            if name is not None:
                return self.storage.read(name), path
            directory, _, base = path.rpartition("/")
            return locate(directory or ".", None, "an external index file path").read(base), path
        except ObjectNotFoundError:
            raise CorruptTableError(f"index file {path} of Paimon table {self.name} is missing", path=path) from None

    def deleted_rows(self, deletion: DeletionFile) -> Any:
        """The deleted row positions of one data file (a pyroaring bitmap), its index file read
        once and kept decoded (an index file never changes under its name)."""
        def load() -> dict:
            try:
                if deletion.index_name is not None:
                    data = self.storage.read(deletion.index_name)
                else:
                    directory, _, base = deletion.path.rpartition("/")
                    data = locate(directory or ".", None, "an external index file path").read(base)
            except ObjectNotFoundError:
                raise CorruptTableError(f"deletion-vector index file {deletion.path} of Paimon table {self.name} "
                                        f"is missing", path=deletion.path) from None
            return read_index_file(data, deletion.ranges or (deletion.range,), deletion.path)
        # an index file's name is unique and its entry never changes: its ranges are part of the key
        # only so that a damaged manifest naming the same file differently cannot reuse a decode
        vectors = _dv_cache.get_keyed((self.path, deletion.path, deletion.ranges), load)
        found = vectors.get(deletion.range.data_file)
        if found is None:
            raise CorruptTableError(f"deletion-vector index file {deletion.path} has no vector for "
                                    f"{deletion.range.data_file}", path=deletion.path)
        return found

    def entry_file(self, entry: dict, schema: PaimonSchema, name: str | None = None) -> PaimonFile:
        """The `PaimonFile` a manifest entry (an ADD) describes; `name`: its object path under
        the table when the caller knows it (a file it just wrote), else found as readers find it."""
        return self._file(entry, schema, name)

    def _file(self, entry: dict, schema: PaimonSchema, known: str | None = None) -> PaimonFile:
        f = entry["_FILE"]
        file_name = f["_FILE_NAME"]
        if not isinstance(file_name, str) or not file_name or "/" in file_name or file_name in (".", ".."):
            # a manifest never names a path, only a file of its bucket: anything else is damage,
            # never followed (a cleanup must not delete outside the table)
            raise CorruptTableError(f"a manifest of Paimon table {self.name} is damaged: it names the data file "
                                    f"{file_name!r}, which is not a file name", path=self.full(""))
        key_types = schema.key_types
        partition = decode_row(entry["_PARTITION"], schema.partition_types, "partition")
        stats = f["_KEY_STATS"]
        lo = decode_row(stats["_MIN_VALUES"], key_types, "key statistic")
        hi = decode_row(stats["_MAX_VALUES"], key_types, "key statistic")
        nulls = stats.get("_NULL_COUNTS") or [None] * len(key_types)
        delete_count = f.get("_DELETE_ROW_COUNT")
        level = int(f["_LEVEL"])
        clustering = schema.clustering_columns if level > 0 else ()
        if clustering:
            # a clustered file (Java's `KeyValueClusteringFileWriter`): its min/max key are its
            # first and last rows' clustering values; its key bounds are its key statistics
            decode_row(f["_MIN_KEY"], [schema.field(c).type for c in clustering], "clustering key")
            if any(v is None for v in (*lo, *hi)):
                raise CorruptTableError(f"Paimon data file {f['_FILE_NAME']} of table {self.name} is sorted by "
                                        f"{list(clustering)} and its key statistics are missing: its keys cannot "
                                        f"be bounded", path=self.full(""))
            min_key, max_key = tuple(lo), tuple(hi)
        else:
            min_key = decode_row(f["_MIN_KEY"], key_types, "key")
            max_key = decode_row(f["_MAX_KEY"], key_types, "key")
        external = f.get("_EXTERNAL_PATH")
        if external:
            name, path = None, external_location(external)
        else:
            name = known if known is not None else self._data_name(entry, schema, partition)
            path = self.full(name)
        return PaimonFile(
            partition=partition, partition_bytes=entry["_PARTITION"], bucket=int(entry["_BUCKET"]),
            total_buckets=int(entry["_TOTAL_BUCKETS"]), file_name=f["_FILE_NAME"], level=level,
            row_count=int(f["_ROW_COUNT"]), file_size=int(f["_FILE_SIZE"]), min_key=min_key, max_key=max_key,
            min_seq=int(f["_MIN_SEQUENCE_NUMBER"]), max_seq=int(f["_MAX_SEQUENCE_NUMBER"]),
            # unknown (old writers): assume there may be retractions, as Paimon does
            delete_count=int(f["_ROW_COUNT"]) if delete_count is None else int(delete_count),
            schema_id=int(f["_SCHEMA_ID"]), path=path, key_stats=tuple(zip(lo, hi, nulls)), record=entry, name=name)

    def _data_name(self, entry: dict, schema: PaimonSchema, partition: tuple) -> str:
        """A data file's object path under the table: ``[dir/][k=v/...]bucket-<n>/<file>``
        (``dir``: ``data-file.path-directory``).  Locally the file is checked to be there (a
        stat); on an object store a partition value every writer spells alike is trusted (no
        request).  Otherwise — a value another writer may format differently (floats,
        timestamps, characters some writers escape) — the file is found by its (unique) name in
        a listing of the table (listed again when a file is not in the last one)."""
        f = entry["_FILE"]
        name = posixpath.join(relative_bucket_path(schema, partition, int(entry["_BUCKET"])), f["_FILE_NAME"])
        if self.is_local:
            if self.storage.exists(name):
                return name
        elif all(_plain(v) for v in partition):
            return name
        if self._file_index is None or f["_FILE_NAME"] not in self._file_index:  # files come: list again
            self._file_index = {info.path.rpartition("/")[2]: info.path for info in self.storage.list("")
                                if info.path.rpartition("/")[2].startswith("data-")}
        return self._file_index.get(f["_FILE_NAME"], name)


def external_location(text: str) -> str:
    """Where a file named by an ``_EXTERNAL_PATH`` is: a local path for every spelling of a
    ``file:`` URI (Java and pypaimon write ``file:/x``; ``file:///x`` and ``file://localhost/x``
    are the same file) and for a bare absolute path, else the URI as written (``s3://...``)."""
    scheme = _SCHEME.match(text)
    if scheme is not None:  # schemes are case-insensitive (RFC 3986); Java records "FILE:/x"
        text = scheme.group(1).lower() + text[scheme.end(1):]
    if text.startswith("file:"):
        rest = text[len("file:"):]
        if rest.startswith("//"):
            host, slash, rest = rest[2:].partition("/")
            if host not in ("", "localhost"):
                raise UnsupportedPaimonFeatureError(f"Paimon external data path {text!r} names a file on host "
                                                    f"{host!r}: mergetree reads local files of this machine only")
            rest = slash + rest
        text = "/" + rest.lstrip("/")
    elif "://" not in text and not posixpath.isabs(text):
        raise CorruptTableError(f"Paimon external data path {text!r} is neither a URI nor an absolute path",
                                path=text)
    return text


def _plain(value: Any) -> bool:
    """Whether every Paimon writer names a partition directory for `value` the same way."""
    if value is None:
        return True  # the default partition name
    if isinstance(value, bool):
        return False  # "true" or "True"
    if isinstance(value, int):
        return True
    if isinstance(value, date) and not isinstance(value, datetime):
        return True
    return isinstance(value, str) and _PLAIN_TEXT.fullmatch(value) is not None


def identifier(entry: dict) -> tuple:
    f = entry["_FILE"]
    return (entry["_PARTITION"], entry["_BUCKET"], f["_LEVEL"], f["_FILE_NAME"], tuple(f.get("_EXTRA_FILES") or ()),
            f.get("_EMBEDDED_FILE_INDEX"), f.get("_EXTERNAL_PATH"))
