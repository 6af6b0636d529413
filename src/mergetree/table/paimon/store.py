"""A Paimon table under the engine: `PaimonSnapshotStore` gives the engine's planning and
reads the table's snapshots and live files as its own (`Snapshot`, `FileEntry` with a
`DataFileMeta` per data file), from Paimon's JSON and Avro/ORC manifests through the codec;
`paimon_directory` makes the `TableDirectory` the engine works on.

What a file's `DataFileMeta` holds: its object path under the table (an external file's is
the path it would have there, so files group by bucket directory as the engine expects; its
`origin` says where it really is), its level, rows, size, key range, sequence range and
retraction count as the manifest records them; statistics decoded when a plan first asks;
and, in a deletion-vector table, a `DeletionVectorRef` on every file above level 0 without
retractions — a *resolved* file, read alone with its vector applied, as Paimon reads it."""
from __future__ import annotations

import posixpath
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ...codec.binary_row import encode_row
from ...codec.types import same_type
from ...errors import UnsupportedPaimonFeatureError
from ...storage import Store
from ..changes.compute import PRODUCER_PROPERTY
from ..directory import TableDirectory
from ..dvfiles import DeletionVectorRef
from ..files import DataFileMeta
from ..snapshots import FileEntry, Snapshot
from .commit import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, commit_files, data_file_record, remove_files
from .files import PaimonFileRef
from .metadata import (
    ADD,
    DELETE,
    DeletionFile,
    PaimonFile,
    PaimonSchema,
    PaimonTable,
    bucket_directory_of,
    partition_path,
)
from .tables import engine_compacts, table_options, table_schema

__all__ = ["FileStats", "PaimonSnapshotStore", "paimon_directory", "snapshot_of"]


def snapshot_of(document: dict) -> Snapshot:
    """A Paimon snapshot (or tag) document as the engine's `Snapshot`."""
    return Snapshot(int(document["id"]), int(document["schemaId"]), str(document.get("commitKind", "APPEND")),
                    int(document.get("timeMillis") or 0), str(document.get("baseManifestList") or ""),
                    str(document.get("deltaManifestList") or ""), int(document.get("totalRecordCount") or 0),
                    int(document.get("deltaRecordCount") or 0), 0,
                    str(document.get("changelogManifestList") or ""),
                    {str(k): str(v) for k, v in (document.get("properties") or {}).items()},
                    str(document.get("indexManifest") or ""))


class FileStats(Mapping):
    """Column -> (min, max, null count) of one Paimon data file under the read schema's names,
    decoded from its manifest entry when first asked (a plan asks for few of its files): a file
    of an older schema by field id, for the columns whose type has not changed since (exact: the
    values as written; a retyped column's bounds are not converted); key columns from the key
    statistics."""

    def __init__(self, table: PaimonTable, pf: PaimonFile, schema: PaimonSchema) -> None:
        self._table, self._pf, self._schema = table, pf, schema
        self._stats: dict[str, tuple[Any, Any, int]] | None = None

    def _load(self) -> dict[str, tuple[Any, Any, int]]:
        if self._stats is None:
            pf, schema = self._pf, self._schema
            if pf.schema_id == schema.id:
                stats = pf.value_stats(schema)
            else:
                old = self._table.schema(pf.schema_id)
                now = {f.id: f for f in schema.fields}
                stats = {}
                for name, value in pf.value_stats(old).items():
                    field = now.get(old.field(name).id)
                    if field is not None and same_type(old.field(name).type, field.type):
                        stats[field.name] = value
            for name, (lo, hi, nulls) in zip(schema.trimmed_keys, pf.key_stats):
                if nulls is not None and schema.primary_keys:
                    stats[name] = (lo, hi, nulls)
            self._stats = stats
        return self._stats

    def __getitem__(self, key: str) -> tuple[Any, Any, int]:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


_CACHED_SNAPSHOTS = 16
_WRITTEN = re.compile(r"(data|changelog)-[0-9a-f-]{36}-\d+\.(parquet|orc)")  # what Paimon's writers name files
_live: OrderedDict[tuple, dict[str, FileEntry]] = OrderedDict()
_live_lock = threading.Lock()


class PaimonSnapshotStore:
    """The reading side of `SnapshotStore` over a Paimon table (commits still go through
    `mergetree.paimon`'s writers: `commit` refuses)."""

    def __init__(self, table: PaimonTable, schema: PaimonSchema) -> None:
        self.table = table
        self.schema = schema
        self.storage: Store = table.storage
        self.root = table.path
        self.partition_by = tuple(schema.partition_keys)
        self._documents: dict[int, dict] = {}
        self._lock = threading.Lock()

    # -- snapshots -----------------------------------------------------------------------
    def snapshot_ids(self) -> list[int]:
        return list(self.table.snapshot_ids())

    def latest_id(self) -> int | None:
        return self.table.latest_snapshot_id()

    def _remember(self, document: dict) -> Snapshot:
        with self._lock:
            self._documents[int(document["id"])] = document
        return self._marked(snapshot_of(document))

    def _marked(self, snapshot: Snapshot) -> Snapshot:
        """The snapshot with the producer of its changelog named, as mergetree's writers name it:
        an APPEND's input changelog is its change as written, which a per-commit change reads
        (not where level 0 is hidden: the rows it wrote become visible at a later compaction)."""
        opts = self.schema.checked_options
        if snapshot.changelog_manifest_list and snapshot.commit_kind == "APPEND" \
                and opts.changelog_producer == "input" and not (self.schema.primary_keys and opts.skips_level0):
            snapshot.properties[PRODUCER_PROPERTY] = "input"
        return snapshot

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self._remember(self.table.snapshot(snapshot_id))

    def tag(self, name: str) -> Snapshot:
        """The snapshot tag `name` holds (it may have expired as a snapshot)."""
        document = self.table.resolve(name)
        assert document is not None  # a name resolves to its tag's snapshot, or raises
        return self._remember(document)

    def retained_changelog_ids(self) -> list[int]:
        return list(self.table.kept_changelog_ids())

    def retained_changelog(self, snapshot_id: int) -> Snapshot | None:
        """The metadata Paimon kept of expired snapshot `snapshot_id` for its changelog (None:
        none is kept)."""
        if snapshot_id not in set(self.table.kept_changelog_ids()):
            return None
        return self._marked(snapshot_of(self.table.commit(snapshot_id)))

    def manifest_names(self, manifest_list: str) -> list[str]:
        return [str(meta["_FILE_NAME"]) for meta in self.table.manifest_list(manifest_list)]

    def read_manifest(self, name: str) -> tuple[tuple[str, FileEntry], ...]:
        """A manifest's (ADD or DELETE, entry) pairs, in order."""
        schema = self.schema
        return tuple(("ADD" if kind == ADD else "DELETE", self.entry(pf))
                     for kind, pf in self.table.manifest_file_entries(name, schema))

    def latest_hint(self) -> int | None:
        return self.table.latest_snapshot_id()

    # -- where data files go, and commits ------------------------------------------------
    def bucket_directory(self, partition: tuple, bucket: int, beside: Sequence[DataFileMeta] = ()) -> str:
        """Where a bucket's new files go: beside `beside` (its files a compaction rewrites), as
        `bucket_directory_of` says."""
        files = [m.origin.file for m in beside if isinstance(m.origin, PaimonFileRef)]
        return bucket_directory_of(self.schema, partition, bucket, files)

    def data_file_name(self, directory: str) -> str:
        return f"{directory}/data-{uuid.uuid4()}-0.parquet"

    def owns(self, relative: str) -> bool:
        """Only data and changelog files in a bucket directory are ever deleted through here."""
        head, _, base = relative.rpartition("/")
        return bool(_WRITTEN.fullmatch(base)) and head.rpartition("/")[2].startswith("bucket-")

    def refuses(self, kind: str) -> str | None:
        """The engine commits compactions of the tables it compacts so far (`engine_compacts`);
        writes and the rest go through `mergetree.paimon` (issue 36 brings them here)."""
        if kind == "COMPACT" and engine_compacts(self.schema):
            return None
        what = "write to" if kind in ("APPEND", "OVERWRITE") else "compact"
        return (f"mergetree's engine does not {what} Paimon table {self.table.name} yet: write, delete and compact it "
                f"through mergetree.paimon (Table.open(...).write/delete/compact, mergetree.spark.compact_paimon)")

    def commit(self, base_id: int | None, adds: list[FileEntry], deletes: list[FileEntry], kind: str,
               schema_id: int = 0, retries: int = 0, changelog: Sequence[FileEntry] = (),
               properties: dict[str, str] | None = None) -> Snapshot:
        """Commit on snapshot `base_id` as Java commits (`commit.commit_files`: manifests, lists,
        the conditional publish, its own retries over commits that left the deleted files in
        place; Java's conflict checks): a file moved to another level keeps its manifest entry
        but for the level, a new file gets one from its `DataFileMeta`.  A conflict raises
        `CompactionConflictError` and removes the metadata written; the data files are the
        caller's."""
        table, schema = self.table, self.schema
        refusal = self.refuses(kind)
        if refusal is None and not all(isinstance(e.file.origin, PaimonFileRef) for e in deletes):
            refusal = (f"this change to Paimon table {table.name} names files without their Paimon entries (a plan "
                       f"shipped elsewhere?); compact it with mergetree.spark.compact_paimon")
        if refusal is not None:
            raise UnsupportedPaimonFeatureError(refusal)
        base = table.snapshot(base_id) if base_id is not None else None
        placed = {(e.partition, e.bucket): e.file.origin.file for e in deletes
                  if isinstance(e.file.origin, PaimonFileRef)}
        source = FILE_SOURCE_COMPACT if kind == "COMPACT" else FILE_SOURCE_APPEND

        def record(e: FileEntry, file_source: int) -> dict:
            origin = e.file.origin
            if isinstance(origin, PaimonFileRef):  # a live file at a new level
                return dict(origin.file.record, _KIND=ADD, _FILE=dict(origin.file.record["_FILE"], _LEVEL=e.file.level))
            old = placed.get((e.partition, e.bucket))
            partition = old.partition_bytes if old is not None else \
                encode_row(list(e.partition), schema.partition_types)
            total = old.total_buckets if old is not None else schema.checked_options.buckets
            return data_file_record(schema, e.file, partition, e.bucket, total, file_source)
        written: list[str] = []
        try:
            new_id = commit_files(table, base, schema, [record(e, source) for e in adds],
                                  [dict(e.file.origin.file.record, _KIND=DELETE) for e in deletes], written, kind,
                                  changelog=[record(e, FILE_SOURCE_APPEND) for e in changelog] or None)
        except BaseException:
            remove_files(table, written)
            raise
        return self.snapshot(new_id)

    # -- files ---------------------------------------------------------------------------
    def _document(self, snapshot: Snapshot) -> dict:
        with self._lock:
            found = self._documents.get(snapshot.id)
        return found if found is not None else self.table.snapshot(snapshot.id)

    def live_files(self, snapshot: Snapshot | None) -> dict[str, FileEntry]:
        """file name -> entry for every data file of the snapshot, cached per snapshot."""
        if snapshot is None:
            return {}
        # a snapshot never changes under its id: its entries are kept across reads and handles,
        # keyed by its manifest lists too (a table re-created at the same place is another table)
        key = (self.root, self.schema.id, tuple(sorted(self.schema.options.items())), snapshot.id,
               snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.index_manifest)
        with _live_lock:
            found = _live.get(key)
            if found is not None:
                _live.move_to_end(key)
                return found
        entries = self._entries(self._document(snapshot))
        with _live_lock:
            _live[key] = entries
            while len(_live) > _CACHED_SNAPSHOTS:
                _live.popitem(last=False)
        return entries

    def _entries(self, document: dict) -> dict[str, FileEntry]:
        table, schema = self.table, self.schema
        opts = schema.checked_options
        files = table.live_files(document)
        deletions = table.deletion_files(document) if opts.deletion_vectors else {}
        out: dict[str, FileEntry] = {}
        for pf in files:
            entry = self.entry(pf, deletions.get((pf.partition_bytes, pf.bucket), {}).get(pf.file_name))
            out[entry.file.file_name] = entry
        return out

    def entry(self, pf: PaimonFile, deletion: DeletionFile | None = None) -> FileEntry:
        """A Paimon data file (with its deletion file, if any) as the engine's entry."""
        table, schema = self.table, self.schema
        opts = schema.checked_options
        if pf.total_buckets != opts.buckets and pf.total_buckets > 0:
            raise UnsupportedPaimonFeatureError(
                f"Paimon table {table.name} was rescaled: file {pf.file_name} belongs to {pf.total_buckets} "
                f"buckets, the table has {opts.buckets} (option 'bucket'); rewrite it with Paimon first")
        resolved = None
        if opts.deletion_vectors and pf.level > 0 and pf.delete_count == 0:
            cardinality = 0 if deletion is None else deletion.range.cardinality
            resolved = DeletionVectorRef(None if deletion is None else deletion.path,
                                         0 if deletion is None else deletion.range.offset,
                                         0 if deletion is None else deletion.range.length,
                                         pf.row_count if cardinality is None else cardinality)
        name = pf.name if pf.name is not None else posixpath.join(
            partition_path(schema.partition_keys, pf.partition, opts.default_partition_name),
            f"bucket-{pf.bucket}", pf.file_name)
        # a recorded 0 retractions is not trusted but in a resolved file: pypaimon records 0 for
        # files holding -D rows (and a compaction may move such a file up a level unchanged), so
        # their kind column is read (an int8 column) and their retractions dropped
        retractions = pf.delete_count if resolved is not None or not schema.primary_keys or pf.delete_count \
            else pf.row_count
        meta = DataFileMeta(name, pf.level, pf.row_count, pf.file_size, pf.min_key, pf.max_key, pf.min_seq,
                            pf.max_seq, retractions, FileStats(table, pf, schema),  # type: ignore[arg-type]
                            deletion_vector=resolved, origin=PaimonFileRef(table, pf, schema, deletion))
        return FileEntry(pf.partition, pf.bucket, meta)


def paimon_directory(table: PaimonTable, schema: PaimonSchema | None = None) -> TableDirectory:
    """The engine's `TableDirectory` of a Paimon table read under `schema` (default: its latest)."""
    schema = schema if schema is not None else table.schema()
    ts = table_schema(schema)
    return TableDirectory(table.path, ts, table_options(schema), PaimonSnapshotStore(table, schema),  # type: ignore[arg-type]
                          table.storage)

