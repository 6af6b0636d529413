"""Reading an Apache Paimon table's metadata on a local filesystem: schema and snapshot JSON,
tags, Avro manifest lists and manifests, and the live data files they add up to.

Layout (``<warehouse>/<db>.db/<table>/``): ``schema/schema-<id>``, ``snapshot/snapshot-<id>``
with the ``LATEST`` hint, ``tag/tag-<name>`` (a snapshot by name), ``manifest/`` (Avro), and
data files under ``[k=v/...]bucket-<n>/``.  A snapshot's files are its base manifest list's
entries and then its delta list's, applied in order: an ADD adds a file, a DELETE removes
the ADD with the same identifier (partition, bucket, level, file name, extra files, embedded
index, external path).
"""
from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

import fastavro
import pyarrow as pa

from ..errors import CorruptTableError, InvalidArgumentError, SnapshotNotFoundError, TableNotFoundError
from ..table.directory import as_path
from ..table.filecache import FileCache
from .binary_row import decode_row
from .options import PaimonOptions, check_options
from .types import PaimonField, PaimonType, parse_field

__all__ = ["KEY_PREFIX", "KIND_COLUMN", "SEQUENCE_COLUMN", "PaimonFile", "PaimonSchema", "PaimonTable",
           "identifier", "partition_path", "read_avro"]

KEY_PREFIX = "_KEY_"
SEQUENCE_COLUMN = "_SEQUENCE_NUMBER"
KIND_COLUMN = "_VALUE_KIND"
ADD, DELETE = 0, 1

# Paimon (like Hive) escapes these characters of partition values in directory names as %XX
_ESCAPED = {chr(c) for c in range(0x20)} | set('"#%\'*/:=?\\\x7f{[]^')


def partition_path(keys: Sequence[str], values: Sequence[Any], default_name: str) -> str:
    parts = []
    for k, v in zip(keys, values):
        text = default_name if v is None or v == "" else (v.isoformat() if hasattr(v, "isoformat") else str(v))
        if isinstance(v, bool):
            text = "true" if v else "false"
        parts.append(f"{k}={''.join(f'%{ord(c):02X}' if c in _ESCAPED else c for c in text)}")
    return "/".join(parts)


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
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([f.arrow_field() for f in self.fields])

    @cached_property
    def checked_options(self) -> PaimonOptions:
        return check_options(self.options, self.names, list(self.primary_keys), list(self.partition_keys))


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
    path: str
    key_stats: tuple[tuple[Any, Any, int | None], ...]  # per key column: (min, max, null count)
    record: dict = field(repr=False)   # the manifest entry as read, written back for a DELETE

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


def _read_json(path: str, what: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise CorruptTableError(f"Paimon {what} {path} is unreadable: {exc}", path=path) from None
    if not isinstance(d, dict):
        raise CorruptTableError(f"Paimon {what} {path} is not a JSON object", path=path)
    return d


_avro_cache: FileCache[tuple[dict, list[dict]]] = FileCache(max_entries=256)
_LIVE_CACHE_SIZE = 16
_live_cache: OrderedDict[tuple, list[PaimonFile]] = OrderedDict()
_live_lock = threading.Lock()


def read_avro(path: str, what: str) -> tuple[dict, list[dict]]:
    """(writer schema, records) of an Avro metadata file; immutable files, so cached."""
    def load() -> tuple[dict, list[dict]]:
        try:
            with open(path, "rb") as fh:
                reader = fastavro.reader(fh)
                return cast(dict, reader.writer_schema), cast(list, list(reader))  # type: ignore[redundant-cast]
        except FileNotFoundError:
            raise CorruptTableError(f"Paimon {what} {path} is missing", path=path) from None
        except (OSError, ValueError, EOFError, StopIteration, fastavro.read.SchemaResolutionError) as exc:
            raise CorruptTableError(f"Paimon {what} {path} is unreadable: {exc}", path=path) from None
    return _avro_cache.get(path, load)


class PaimonTable:
    """A Paimon table directory, read-only (commits are `paimon.compact`'s)."""

    def __init__(self, path: str, name: str) -> None:
        self.path = path
        self.name = name
        self._file_index: dict[str, str] | None = None
        self._schemas: dict[int, PaimonSchema] = {}

    @classmethod
    def open(cls, warehouse: Any, table: Any) -> PaimonTable:
        if not isinstance(warehouse, (str, os.PathLike)):
            raise InvalidArgumentError(f"warehouse must be a directory path, not {warehouse!r}")
        if not isinstance(table, str) or table.count(".") != 1 or not all(table.split(".")):
            raise InvalidArgumentError(f"table must be 'database.table', not {table!r}")
        warehouse = os.fspath(warehouse)
        if warehouse.startswith("file:") and not warehouse.startswith("file://"):
            warehouse = warehouse[len("file:"):]  # Paimon's own form of a local warehouse
        warehouse = as_path(warehouse, "a warehouse")
        db, name = table.split(".")
        path = os.path.join(warehouse, f"{db}.db", name)
        if not os.path.isdir(os.path.join(path, "schema")):
            raise TableNotFoundError(f"there is no Paimon table {table!r} in warehouse {warehouse} "
                                     f"(no {os.path.join(path, 'schema')})")
        return cls(path, table)

    # -- schemas -------------------------------------------------------------------------
    def schema_ids(self) -> list[int]:
        return sorted(int(n[len("schema-"):]) for n in os.listdir(os.path.join(self.path, "schema"))
                      if n.startswith("schema-") and n[len("schema-"):].isdigit())

    def schema(self, schema_id: int | None = None) -> PaimonSchema:
        """Schema `schema_id` (default: the latest); a schema file never changes under its id."""
        if schema_id is not None and schema_id in self._schemas:
            return self._schemas[schema_id]
        if schema_id is None:
            ids = self.schema_ids()
            if not ids:
                raise CorruptTableError(f"Paimon table {self.path} has no schema file",
                                        path=os.path.join(self.path, "schema"))
            schema_id = ids[-1]
        path = os.path.join(self.path, "schema", f"schema-{schema_id}")
        try:
            schema = self._schemas[schema_id] = PaimonSchema.from_json(_read_json(path, "schema"))
            return schema
        except FileNotFoundError:
            raise CorruptTableError(f"Paimon schema {path} is missing", path=path) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptTableError(f"Paimon schema {path} is malformed: {exc!r}", path=path) from None

    # -- snapshots and tags --------------------------------------------------------------
    def snapshot_path(self, snapshot_id: int) -> str:
        return os.path.join(self.path, "snapshot", f"snapshot-{snapshot_id}")

    def snapshot_ids(self) -> list[int]:
        directory = os.path.join(self.path, "snapshot")
        if not os.path.isdir(directory):
            return []
        return sorted(int(n[len("snapshot-"):]) for n in os.listdir(directory)
                      if n.startswith("snapshot-") and n[len("snapshot-"):].isdigit())

    def latest_snapshot_id(self) -> int | None:
        """The newest committed id: the LATEST hint, checked forward (it may lag)."""
        hint = None
        try:
            with open(os.path.join(self.path, "snapshot", "LATEST"), encoding="utf-8") as fh:
                hint = int(fh.read().strip())
        except (OSError, ValueError):
            pass
        if hint is not None and os.path.exists(self.snapshot_path(hint)):
            while os.path.exists(self.snapshot_path(hint + 1)):
                hint += 1
            return hint
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    def snapshot(self, snapshot_id: int) -> dict:
        path = self.snapshot_path(snapshot_id)
        try:
            return _read_json(path, "snapshot")
        except FileNotFoundError:
            ids = self.snapshot_ids()
            span = f"{ids[0]}..{ids[-1]}" if ids else "none"
            raise SnapshotNotFoundError(f"Paimon table {self.name} has no snapshot {snapshot_id} "
                                        f"(snapshots: {span})") from None

    def tags(self) -> list[str]:
        directory = os.path.join(self.path, "tag")
        if not os.path.isdir(directory):
            return []
        return sorted(n[len("tag-"):] for n in os.listdir(directory) if n.startswith("tag-"))

    def resolve(self, snapshot: Any) -> dict | None:
        """The snapshot to read: None (the latest; None if the table has none), an id, or a tag name."""
        if snapshot is None:
            latest = self.latest_snapshot_id()
            return None if latest is None else self.snapshot(latest)
        if isinstance(snapshot, bool) or not isinstance(snapshot, (int, str)):
            raise InvalidArgumentError(f"snapshot must be a snapshot id or a tag name, not {snapshot!r}")
        if isinstance(snapshot, int):
            return self.snapshot(snapshot)
        path = os.path.join(self.path, "tag", f"tag-{snapshot}")
        try:
            return _read_json(path, "tag")
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"Paimon table {self.name} has no tag {snapshot!r} "
                                        f"(tags: {', '.join(self.tags()) or 'none'})") from None

    # -- manifests -----------------------------------------------------------------------
    def manifest_path(self, name: str) -> str:
        return os.path.join(self.path, "manifest", name)

    def manifest_list(self, name: str | None) -> list[dict]:
        if not name:
            return []
        return read_avro(self.manifest_path(name), "manifest list")[1]

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
                for entry in read_avro(self.manifest_path(meta["_FILE_NAME"]), "manifest")[1]:
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

    def _file(self, entry: dict, schema: PaimonSchema) -> PaimonFile:
        f = entry["_FILE"]
        key_types = schema.key_types
        partition = decode_row(entry["_PARTITION"], schema.partition_types, "partition")
        stats = f["_KEY_STATS"]
        lo = decode_row(stats["_MIN_VALUES"], key_types, "key statistic")
        hi = decode_row(stats["_MAX_VALUES"], key_types, "key statistic")
        nulls = stats.get("_NULL_COUNTS") or [None] * len(key_types)
        delete_count = f.get("_DELETE_ROW_COUNT")
        return PaimonFile(
            partition=partition, partition_bytes=entry["_PARTITION"], bucket=int(entry["_BUCKET"]),
            total_buckets=int(entry["_TOTAL_BUCKETS"]), file_name=f["_FILE_NAME"], level=int(f["_LEVEL"]),
            row_count=int(f["_ROW_COUNT"]), file_size=int(f["_FILE_SIZE"]),
            min_key=decode_row(f["_MIN_KEY"], key_types, "key"), max_key=decode_row(f["_MAX_KEY"], key_types, "key"),
            min_seq=int(f["_MIN_SEQUENCE_NUMBER"]), max_seq=int(f["_MAX_SEQUENCE_NUMBER"]),
            # unknown (old writers): assume there may be retractions, as Paimon does
            delete_count=int(f["_ROW_COUNT"]) if delete_count is None else int(delete_count),
            schema_id=int(f["_SCHEMA_ID"]), path=self._data_path(entry, schema, partition),
            key_stats=tuple(zip(lo, hi, nulls)), record=entry)

    def _data_path(self, entry: dict, schema: PaimonSchema, partition: tuple) -> str:
        f = entry["_FILE"]
        external = f.get("_EXTERNAL_PATH")
        if external:
            return external[len("file:"):] if external.startswith("file:") else external
        default = schema.options.get("partition.default-name", "__DEFAULT_PARTITION__")
        path = os.path.join(self.path, partition_path(schema.partition_keys, partition, default),
                            f"bucket-{entry['_BUCKET']}", f["_FILE_NAME"])
        if os.path.exists(path):
            return path
        # a partition value formatted differently than above: find the file by its (unique) name
        if self._file_index is None:
            self._file_index = {n: os.path.join(d, n) for d, _, names in os.walk(self.path)
                                for n in names if n.startswith("data-")}
        return self._file_index.get(f["_FILE_NAME"], path)


def identifier(entry: dict) -> tuple:
    f = entry["_FILE"]
    return (entry["_PARTITION"], entry["_BUCKET"], f["_LEVEL"], f["_FILE_NAME"], tuple(f.get("_EXTRA_FILES") or ()),
            f.get("_EMBEDDED_FILE_INDEX"), f.get("_EXTERNAL_PATH"))
