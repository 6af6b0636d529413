"""The reader of mergetree's older, private table format, the one part of that format left:
`migrate` reads such a table through it (read only, the latest snapshot) and writes a Paimon
table.  No other module knows the format.

A table of the older format is a directory holding ``schema/schema-<id>.json`` (the columns as
Arrow IPC type descriptions, the key, partitioning, buckets, merge engine and options),
``snapshot/snapshot-<id>.json`` (a base and a delta manifest list), ``manifest/`` (JSON lists
of manifests, manifests of ADD/DELETE entries of data files) and the data files: Parquet in
Paimon's physical layout (``_KEY_<key>..., _SEQUENCE_NUMBER, _VALUE_KIND``, the columns) under
``[partition dirs/]bucket-<n>/``.  A file's entry may add a ``sequence_shift`` to the numbers
stored in it (a write renumbered after a lost commit race) and name a ``deletion_vector``: the
rows of the file a deletion-vector compaction replaced, in Paimon's index-file layout."""
from __future__ import annotations

import base64
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...codec.deletion_vectors import DeletionVectorRange, read_deletion_vector
from ...errors import CorruptTableError, MergeTreeError, UnsupportedFormatError
from ...merge import merge
from ...storage import ObjectNotFoundError, StorageError, Store
from ..formats import is_older_table
from ..objects import is_local, list_names, source, table_path
from ..values import decode_value

__all__ = ["OLDER_DEFAULTS", "OlderFile", "OlderTable", "is_older_table", "open_older", "read_rows"]

# the options the older format wrote out at their defaults in every schema file (its last release's)
OLDER_DEFAULTS = {
    "write-buffer-size": "256 mb", "target-file-size": "128 mb", "write-only": "false",
    "manifest.merge-min-count": "30", "num-sorted-run.compaction-trigger": "5",
    "compaction.max-size-amplification-percent": "200", "compaction.size-ratio": "1",
    "compaction.small-file-ratio": "0.7", "file-index.bloom-filter.fpp": "0.01",
    "file-index.bitmap.max-values": "1000", "optimize.major-threshold": "2 gb", "optimize.minor-min-files": "8",
    "query-log.enabled": "true",
}

_SCHEMA_FILE = re.compile(r"schema-(\d+)\.json")
_SNAPSHOT_FILE = re.compile(r"snapshot-(\d+)\.json")
_KNOWN_VERSION = 3  # manifests: 2 added `sequence_shift`, 3 `deletion_vector`
KEY_PREFIX, SEQUENCE, KIND = "_KEY_", "_SEQUENCE_NUMBER", "_VALUE_KIND"

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class OlderFile:
    """A live data file of the latest snapshot."""

    partition: tuple
    bucket: int
    name: str
    row_count: int
    size: int
    min_seq: int
    sequence_shift: int = 0
    # (index file, offset, length, cardinality) of its deletion vector, if it has deleted rows
    deletion_vector: tuple[str, int, int, int] | None = None


@dataclass(frozen=True)
class OlderTable:
    """A table of the older format, as its latest schema and snapshot describe it."""

    storage: Store
    schema: pa.Schema
    primary_key: tuple[str, ...]
    partition_by: tuple[str, ...]
    buckets: int
    bucket_key: tuple[str, ...]
    merge_engine: str
    options: dict[str, str]
    snapshot_ids: tuple[int, ...]
    consumers: tuple[str, ...]
    files: tuple[OlderFile, ...] = field(repr=False, default=())

    @property
    def path(self) -> str:
        return table_path(self.storage)

    @property
    def aggregations(self) -> dict[str, str]:
        """An aggregate table's functions by column (`fields.<column>.aggregate-function`)."""
        out = {}
        for key, value in self.options.items():
            match = re.fullmatch(r"fields\.(.+)\.aggregate-function", key)
            if match is not None:
                out[match.group(1)] = value.strip()
        return out


def _where(storage: Store, relative: str) -> str:
    return f"{table_path(storage)}/{relative}" if is_local(storage) else storage.describe(relative)


def _json(storage: Store, relative: str, what: str) -> dict:
    try:
        document = json.loads(storage.read(relative))
    except ObjectNotFoundError:
        raise CorruptTableError(f"the {what} {relative} of table {table_path(storage)} is missing",
                                path=_where(storage, relative)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptTableError(f"the {what} {relative} of table {table_path(storage)} is damaged: {exc}",
                                path=_where(storage, relative)) from None
    if not isinstance(document, dict):
        raise CorruptTableError(f"the {what} {relative} of table {table_path(storage)} is damaged: not an object",
                                path=_where(storage, relative))
    version = document.get("format-version", 1)
    if not isinstance(version, int) or version > _KNOWN_VERSION:
        raise UnsupportedFormatError(f"the {what} {relative} of table {table_path(storage)} has format version "
                                     f"{version!r}, newer than the older format's last ({_KNOWN_VERSION})")
    return document


def _arrow_type(text: str) -> pa.DataType:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text))).field("t").type


def _ids(storage: Store, directory: str, pattern: re.Pattern) -> list[int]:
    return sorted(int(m.group(1)) for m in map(pattern.fullmatch, list_names(storage, directory)) if m)


def open_older(storage: Store) -> OlderTable:
    """The table of the older format at `storage`: its latest schema and the live files of its
    latest snapshot (CorruptTableError names a damaged or missing file)."""
    schema_ids = _ids(storage, "schema", _SCHEMA_FILE)
    if not schema_ids:
        raise UnsupportedFormatError(f"{table_path(storage)} is not a table of mergetree's older format")
    relative = f"schema/schema-{schema_ids[-1]}.json"
    d = _json(storage, relative, "schema file")
    try:
        # (the types as they are: the new table stores each as a Paimon table does, or refuses it by name)
        schema = pa.schema([pa.field(f["name"], _arrow_type(f["type"]), nullable=f["nullable"]) for f in d["fields"]])
        described = (tuple(d["primary_key"]), tuple(d["partition_by"]), int(d["buckets"]),
                     tuple(d["bucket_key"]), str(d["merge_engine"]), {str(k): str(v) for k, v in d["options"].items()})
    except (KeyError, TypeError, ValueError, pa.ArrowException, MergeTreeError) as exc:
        raise CorruptTableError(f"the schema file {relative} of table {table_path(storage)} is damaged: {exc!r}",
                                path=_where(storage, relative)) from None
    snapshot_ids = tuple(_ids(storage, "snapshot", _SNAPSHOT_FILE))
    hint = _latest_hint(storage)
    if hint is not None and (not snapshot_ids or hint > snapshot_ids[-1]):
        # a commit published its snapshot before the hint: the newest committed one is gone,
        # and migrating the one before would lose its changes without a word
        raise CorruptTableError(f"snapshot {hint} of table {table_path(storage)} is missing: its snapshot/LATEST "
                                f"says it was committed; repair it with the release that wrote the table "
                                f"(`mergetree repair`) before migrating", path=_where(storage, "snapshot/LATEST"))
    files = _live_files(storage, snapshot_ids[-1]) if snapshot_ids else ()
    consumers = tuple(sorted(m.group(1) for m in (re.fullmatch(r"consumer-(.+)\.json", n)
                                                  for n in list_names(storage, "consumer")) if m))
    return OlderTable(storage, schema, *described, snapshot_ids, consumers, files)


def _latest_hint(storage: Store) -> int | None:
    try:
        return int(storage.read("snapshot/LATEST").decode().strip())
    except ObjectNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError):
        return None  # a damaged hint: the listing says what is there (the older format's rule too)


def _live_files(storage: Store, snapshot_id: int) -> tuple[OlderFile, ...]:
    relative = f"snapshot/snapshot-{snapshot_id}.json"
    snapshot = _json(storage, relative, "snapshot file")
    live: dict[str, OlderFile] = {}
    for list_key in ("base_manifest_list", "delta_manifest_list"):
        manifest_list = snapshot.get(list_key)
        if not isinstance(manifest_list, str):
            raise CorruptTableError(f"the snapshot file {relative} of table {table_path(storage)} is damaged: "
                                    f"{list_key!r} is {manifest_list!r}, not a manifest list's name",
                                    path=_where(storage, relative))
        if not manifest_list:
            continue
        names = _json(storage, f"manifest/{manifest_list}", "manifest list").get("manifests")
        if not isinstance(names, list) or not all(isinstance(n, str) and "/" not in n for n in names):
            raise CorruptTableError(f"the manifest list {manifest_list} of table {table_path(storage)} is damaged",
                                    path=_where(storage, f"manifest/{manifest_list}"))
        for name in names:
            for kind, entry in _entries(storage, f"manifest/{name}"):
                if kind == "ADD":
                    live[entry.name] = entry
                else:
                    live.pop(entry.name, None)
    return tuple(live.values())


def _entries(storage: Store, relative: str) -> Iterator[tuple[str, OlderFile]]:
    document = _json(storage, relative, "manifest")
    try:
        for e in document["entries"]:
            meta = e["file"]
            name = meta["file_name"]
            if not isinstance(name, str) or name.startswith("/") or ".." in name.split("/"):
                raise ValueError(f"{name!r} is not a data file of this table")
            dv = meta.get("deletion_vector")
            vector = None
            if dv is not None and dv.get("index") is not None and dv["cardinality"]:
                vector = (str(dv["index"]), int(dv["offset"]), int(dv["length"]), int(dv["cardinality"]))
            if e["kind"] not in ("ADD", "DELETE"):
                raise ValueError(f"unknown entry kind {e['kind']!r}")
            yield e["kind"], OlderFile(tuple(decode_value(v) for v in e["partition"]), int(e["bucket"]), name,
                                       int(meta["row_count"]), int(meta["file_size"]), int(meta["min_seq"]),
                                       int(meta.get("sequence_shift", 0)), vector)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptTableError(f"the manifest {relative} of table {table_path(storage)} is damaged: {exc!r}",
                                path=_where(storage, relative)) from None


def _file_schema(table: OlderTable) -> pa.Schema:
    if not table.primary_key:
        return table.schema
    keys = [pa.field(KEY_PREFIX + k, table.schema.field(k).type, nullable=False) for k in table.primary_key]
    system = [pa.field(SEQUENCE, pa.int64(), nullable=False), pa.field(KIND, pa.int8(), nullable=False)]
    return pa.schema(keys + system + [f.with_nullable(True) for f in table.schema])


def _deleted(storage: Store, f: OlderFile) -> np.ndarray:
    """The file's deleted row positions, sorted (CorruptTableError: its index file is missing or
    damaged, or names rows the file does not have)."""
    if f.deletion_vector is None:
        return np.empty(0, dtype=np.int64)
    index, offset, length, cardinality = f.deletion_vector
    try:
        data = storage.read(index)
    except ObjectNotFoundError:
        raise CorruptTableError(f"the deletion-vector index file {index} of table {table_path(storage)} is missing",
                                path=_where(storage, index)) from None
    bitmap = read_deletion_vector(data, DeletionVectorRange(f.name, offset, length, cardinality),
                                  _where(storage, index))
    positions = np.fromiter(bitmap, dtype=np.int64, count=len(bitmap))
    if positions.size and positions[-1] >= f.row_count:
        raise CorruptTableError(f"the deletion-vector index file {index} of table {table_path(storage)} deletes row "
                                f"{positions[-1]} of {f.name}, which holds {f.row_count} rows",
                                path=_where(storage, index))
    return positions


def _file_batches(table: OlderTable, f: OlderFile, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """A data file's live rows in the file schema, its sequence numbers as its entry says."""
    storage = table.storage
    target = source(storage, f.name, f.size)
    deleted = _deleted(storage, f)
    start = 0
    opened = None
    try:
        opened = target if isinstance(target, str) else target.open()
        reader = pq.ParquetFile(opened)
        for batch in reader.iter_batches(batch_size=65536, columns=schema.names):
            stop = start + batch.num_rows
            if deleted.size:
                local = deleted[(deleted >= start) & (deleted < stop)] - start
                if local.size:
                    keep = np.ones(batch.num_rows, dtype=bool)
                    keep[local] = False
                    batch = batch.filter(pa.array(keep))
            start = stop
            batch = pa.RecordBatch.from_arrays([batch.column(n).cast(schema.field(n).type) for n in schema.names],
                                               schema=schema)
            if f.sequence_shift and SEQUENCE in schema.names:
                index = schema.get_field_index(SEQUENCE)
                batch = batch.set_column(index, schema.field(index),
                                         pc.add(batch.column(index), pa.scalar(f.sequence_shift, pa.int64())))
            yield batch
    except (ObjectNotFoundError, FileNotFoundError):
        raise CorruptTableError(f"data file {f.name} of table {table.path} is missing",
                                path=_where(storage, f.name)) from None
    except StorageError:  # a request that failed (credentials, network): not a damaged file
        raise
    except (OSError, pa.ArrowException, KeyError) as exc:
        raise CorruptTableError(f"data file {f.name} of table {table.path} is unreadable: {exc}",
                                path=_where(storage, f.name)) from None
    finally:
        if opened is not None and not isinstance(opened, str):
            opened.close()
    if start != f.row_count:
        raise CorruptTableError(f"data file {f.name} of table {table.path} holds {start} rows, its manifest "
                                f"entry says {f.row_count}", path=_where(storage, f.name))


def read_rows(table: OlderTable, progress: Progress | None = None) -> Iterator[pa.Table]:
    """The table's rows as its latest snapshot holds them, bucket by bucket: a primary-key
    table's files merged with its engine (versions ordered by their sequence numbers,
    retractions applied and dropped), an append table's files as they are."""
    total = sum(f.row_count for f in table.files)
    done = 0
    if progress is not None:
        progress(0, total)
    schema = _file_schema(table)
    by_bucket: dict[tuple, list[OlderFile]] = defaultdict(list)
    for f in table.files:
        by_bucket[(f.partition, f.bucket)].append(f)
    for key in sorted(by_bucket, key=lambda k: (str(k[0]), k[1])):
        files = sorted(by_bucket[key], key=lambda f: f.min_seq)  # oldest first (an entry's numbers are shifted)
        if table.primary_key:
            reader = merge([_file_batches(table, f, schema) for f in files],
                           [KEY_PREFIX + k for k in table.primary_key], sequence=SEQUENCE, kind=KIND,
                           engine=table.merge_engine,
                           aggregations=table.aggregations or None)
            for batch in reader:
                # the `_KEY_` columns are the key's truth (an engine folds key columns like values)
                yield pa.Table.from_arrays([batch.column(KEY_PREFIX + n if n in table.primary_key else n)
                                            for n in table.schema.names], schema=table.schema)
        else:
            for f in files:
                for batch in _file_batches(table, f, schema):
                    yield pa.Table.from_batches([batch])
        done += sum(f.row_count for f in files)
        if progress is not None:
            progress(min(done, total), total)
