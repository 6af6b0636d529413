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

import base64
import dataclasses
import json
import posixpath
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from ...codec.binary_row import decode_row, encode_row
from ...codec.buckets import bucket_function, buckets_of, paimon_hashes
from ...codec.json_files import dumps
from ...codec.types import same_type
from ...errors import (
    CommitConflictError,
    CompactionConflictError,
    InvalidArgumentError,
    ObjectExistsError,
    ObjectNotFoundError,
    SnapshotNotFoundError,
    UnsupportedPaimonFeatureError,
    WriterConflictError,
)
from ...storage import Store
from .. import paths
from ..changes.compute import PRODUCER_PROPERTY
from ..directory import TableDirectory
from ..dvfiles import DeletionVectorRef
from ..files import DataFileMeta, final_rows, remove_uncommitted
from ..formats import refuse_older
from ..journal import creating, is_location
from ..levers.preaggregates import model_signature, sidecar_of, write_preaggregate
from ..objects import list_names, read_if_exists, storage_for
from ..options import KEY_BLOOM_COLUMNS
from ..options import OPTIONS as ENGINE_OPTIONS
from ..schema import TableSchema
from ..snapshots import FileEntry, Snapshot, add_manifests
from .commit import (
    FILE_SOURCE_APPEND,
    FILE_SOURCE_COMPACT,
    PAIMON_FILE,
    IndexChange,
    commit_files,
    data_file_record,
    deletion_index,
    hash_index_entry,
    index_entries,
    new_index_name,
    paimon_extras,
    remove_files,
)
from .dynamic_buckets import HASH_INDEX, PartitionAssigner, decode_hashes, encode_hashes
from .files import PaimonFileRef, check_evolvable
from .metadata import (
    ADD,
    CHANGELOG_DIR,
    DELETE,
    INDEX_DIR,
    LATEST_HINT,
    MANIFEST_DIR,
    SCHEMA_DIR,
    SNAPSHOT_DIR,
    DeletionFile,
    PaimonFile,
    PaimonSchema,
    PaimonTable,
    bucket_directory_of,
    escape_path_name,
    relative_bucket_path,
)
from .metadata import clear_caches as clear_metadata_caches
from .options import (
    CLUSTERING_COLUMNS,
    check_option_change,
    file_index_spec,
    is_true,
    misspelt,
    option_text,
    retention,
    schema_refusal,
)
from .schema_changes import SchemaChange, apply_changes
from .tables import (
    bloom_option_changes,
    check_parquet_options,
    commit_refusal,
    option_name,
    table_options,
    table_schema,
)
from .writer import ExternalRoots, PaimonFileWriter, external_roots, placed_files, with_origin

__all__ = ["FileStats", "PaimonSnapshotStore", "clear_caches", "open_directory", "paimon_directory", "snapshot_of"]


def snapshot_of(document: dict) -> Snapshot:
    """A Paimon snapshot (or tag) document as the engine's `Snapshot`."""
    return Snapshot(int(document["id"]), int(document["schemaId"]), str(document.get("commitKind", "APPEND")),
                    int(document.get("timeMillis") or 0), str(document.get("baseManifestList") or ""),
                    str(document.get("deltaManifestList") or ""), int(document.get("totalRecordCount") or 0),
                    int(document.get("deltaRecordCount") or 0), _retries(document),
                    str(document.get("changelogManifestList") or ""),
                    {str(k): str(v) for k, v in (document.get("properties") or {}).items()},
                    str(document.get("indexManifest") or ""))


# the commit races a mergetree commit lost before it won, among the snapshot's properties (Java
# keeps and ignores them): `Snapshot.commit_retries`, the history's fairness column
RETRIES_PROPERTY = "mergetree.commit-retries"


def _retries(document: dict) -> int:
    text = (document.get("properties") or {}).get(RETRIES_PROPERTY)
    try:
        return max(int(text), 0) if text is not None else 0
    except (TypeError, ValueError):
        return 0


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
_CHANGELOG = re.compile(r"changelog-[0-9a-f-]{36}-\d+\.(parquet|orc)")
_CONSUMER = re.compile(r"consumer/consumer-([^/\x00-\x1f\x7f]{1,200})")
_INDEX_FILE = re.compile(r"index-[0-9a-f-]{36}-\d+")  # a deletion-vector index file
_MANIFEST = re.compile(r"(manifest|manifest-list|index-manifest)-[0-9a-f-]{36}-\d+")
_STATISTICS = re.compile(r"stat-[0-9a-f-]{36}-\d+")
_ENTROPY = re.compile(r"(.*)/[01]{4}/[01]{4}/[01]{4}/[01]{8}")
_live: OrderedDict[tuple, dict[str, FileEntry]] = OrderedDict()
_live_lock = threading.Lock()


# what an extra file of a data file adds to its name: its file index, or a pre-aggregate
# (`preaggregates.sidecar_of`)
_EXTRA_SUFFIX = re.compile(r"(\.index|\.agg-[A-Za-z0-9_-]+-[0-9a-f]{12}\.parquet)$")


# the table's own directories, a crashed write's temporary file in any of which is debris
_METADATA_DIRS = frozenset({SNAPSHOT_DIR, SCHEMA_DIR, MANIFEST_DIR, INDEX_DIR, CHANGELOG_DIR, "statistics", "tag",
                            "consumer"})


class PaimonSnapshotStore:
    """`SnapshotStore` over a Paimon table: its snapshots and live files as the engine's, where
    new files go and what they are named, and the engine's commits (the writes and compactions
    `refuses` lets through) as Paimon commits them."""

    def __init__(self, table: PaimonTable, schema: PaimonSchema) -> None:
        self.table = table
        self.schema = schema
        self.storage: Store = table.storage
        self.root = table.path
        self.partition_by = tuple(schema.partition_keys)
        self._documents: dict[int, dict] = {}
        self._lock = threading.Lock()
        self._earliest: int | None = None  # the oldest snapshot last found (`earliest_id`)
        self._assigners: dict[bytes, PartitionAssigner] = {}  # dynamic buckets: each partition's, by its bytes
        # index files `write_deletion_vectors` wrote: object name -> (partition, bucket, entry)
        self._fresh_indexes: dict[str, tuple[bytes, int, dict]] = {}
        self._roots: ExternalRoots | bool | None = False  # `data-file.external-paths`, when first needed

    # -- snapshots -----------------------------------------------------------------------
    def snapshot_ids(self) -> list[int]:
        return list(self.table.snapshot_ids())

    def latest_id(self) -> int | None:
        return self.table.latest_snapshot_id()

    def latest(self) -> Snapshot | None:
        """The newest snapshot, its file read at once (`PaimonTable.latest_snapshot`: on an
        object store the hint, the snapshot and a HEAD for the next id)."""
        document = self.table.latest_snapshot()
        return None if document is None else self._remember(document)

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

    def resolve(self, value: Any) -> Snapshot:
        """The snapshot a tag name, an ISO 8601 time or a `datetime` names (`PaimonTable.resolve`)."""
        document = self.table.resolve(value)
        if document is None:
            raise SnapshotNotFoundError(f"{self.described} has no snapshots")
        return self._remember(document)

    def tag_names(self) -> list[str]:
        return self.table.tags()

    def create_tag(self, name: str, snapshot: Snapshot) -> None:
        """Tag `snapshot` as Java's ``TagManager.createTag`` does without a retention: the
        snapshot's own document as ``tag/tag-<name>`` (readable by every Java version), created
        conditionally, so that an existing tag is never replaced."""
        if not isinstance(name, str) or not name.strip():
            raise InvalidArgumentError(f"a tag name is a non-blank string, not {name!r}")
        if "/" in name or name != name.strip():
            raise InvalidArgumentError(f"a tag name is one file name without surrounding spaces, not {name!r}")
        self.storage.require_conditional_create()
        try:
            document = self.storage.read(self.snapshot_file(snapshot.id))
        except ObjectNotFoundError:  # an expired snapshot another tag holds: that tag's document
            holders = [t for t in self.table.tags() if self.tag(t).id == snapshot.id]
            if not holders:
                raise SnapshotNotFoundError(f"{self.described} has no snapshot {snapshot.id} to tag") from None
            document = self.storage.read(self.table.tag_name(holders[0]))
        try:
            self.storage.create(self.table.tag_name(name), document)
        except ObjectExistsError:
            raise InvalidArgumentError(f"{self.described} already has a tag {name!r} (of snapshot "
                                       f"{self.tag(name).id}); delete it first") from None

    def remove_tag(self, name: str) -> None:
        self.tag(name)  # a tag that is not there is named as such
        self.storage.delete(self.table.tag_name(name))

    def retained_changelog_ids(self) -> list[int]:
        return list(self.table.kept_changelog_ids())

    def retained_changelog(self, snapshot_id: int) -> Snapshot | None:
        """The metadata Paimon kept of expired snapshot `snapshot_id` for its changelog (None:
        none is kept)."""
        if snapshot_id not in set(self.table.kept_changelog_ids()):
            return None
        return self._remember(self.table.commit(snapshot_id))

    def manifest_names(self, manifest_list: str) -> list[str]:
        return [str(meta["_FILE_NAME"]) for meta in self.table.manifest_list(manifest_list)]

    def read_manifest(self, name: str) -> tuple[tuple[str, FileEntry], ...]:
        """A manifest's (ADD or DELETE, entry) pairs, in order."""
        schema = self.schema
        return tuple(("ADD" if kind == ADD else "DELETE", self.entry(pf))
                     for kind, pf in self.table.manifest_file_entries(name, schema))

    def latest_hint(self) -> int | None:
        """The LATEST hint's id as it is (it may lag, or name a snapshot that is gone)."""
        return self.table.latest_hint()

    # -- the schema ----------------------------------------------------------------------
    def alter_options(self, changes: Mapping[str, Any]) -> TableDirectory:
        """Publish the next schema with `changes` to the options (None resets one), as Java's
        ALTER TABLE SET / RESET does: the same fields and keys, the options changed, by Java's
        rules (`check_option_change`); mergetree's own options under `MERGETREE_PREFIX`
        (`option_name`).  Checked first — a value either side could not use raises before
        anything is written —, published by the store's conditional create: a concurrent change
        raises CommitConflictError."""
        if not isinstance(changes, Mapping):
            raise InvalidArgumentError(f"options must be a dict of option names to values, not {changes!r}")
        table, schema = self.table, self.schema
        self._require_latest_schema("options")
        document = table.schema_document(schema.id)
        before = {str(k): str(v) for k, v in (document.get("options") or {}).items()}
        options = dict(before)
        has_snapshots = table.latest_snapshot_id() is not None
        for key, value in changes.items():
            if not isinstance(key, str) or not key:
                raise InvalidArgumentError(f"option names are strings, not {key!r}")
            # (a pk-clustering-override table's `clustering.columns` is Paimon's, fixed at create)
            name = key if key == CLUSTERING_COLUMNS and schema.clustering_columns else option_name(key)
            close = misspelt(name, list(ENGINE_OPTIONS))
            if close is not None and changes[key] is not None:  # a free-form property may be any other name
                raise InvalidArgumentError(f"unknown table option {key!r}; did you mean {close!r}?")
            text = option_text(value)
            check_option_change(before, name, text, has_snapshots)  # as Java: against the options before
            if text is None:
                options.pop(name, None)
            else:
                options[name] = text
        refused = schema_refusal(options) if schema_refusal(before) is None else None  # (an old one may stay)
        if refused is not None:
            raise UnsupportedPaimonFeatureError(refused)
        fresh = {k: v for k, v in document.items() if k != "timeMillis"}
        fresh.update(id=schema.id + 1, options=options)
        return self._publish_schema(fresh, {option_name(k) for k in changes}, "options")

    def alter_schema(self, changes: Sequence[SchemaChange]) -> TableDirectory:
        """Publish the next schema with `changes` to its columns applied as Java applies them
        (`schema_changes.apply_changes`: Java's rules, old files read by field id), in one
        schema file; checked first, published by the store's conditional create as
        `alter_options` publishes (a concurrent change raises CommitConflictError)."""
        table, schema = self.table, self.schema
        self._require_latest_schema("schema")
        fresh = apply_changes(table.schema_document(schema.id), changes)
        return self._publish_schema(fresh, set(), "schema")

    def _require_latest_schema(self, what: str) -> None:
        """A schema change starts from the latest schema (CommitConflictError otherwise)."""
        latest = max(self.table.schema_ids(), default=self.schema.id)
        if latest != self.schema.id:
            raise CommitConflictError(f"the {what} of {self.described} changed since it was opened (schema "
                                      f"{latest}); reopen it")

    def _publish_schema(self, fresh: dict, changed_options: set[str], what: str) -> TableDirectory:
        """Check the next schema document `fresh` as every reader and writer will take it, then
        create its file (an object store's retry that finds its own first attempt is done)."""
        table = self.table
        fresh = {k: v for k, v in fresh.items() if k != "timeMillis"}
        fresh["timeMillis"] = int(time.time() * 1000)  # last, where Java's serializer puts it
        altered = PaimonSchema.from_json(fresh)
        table_schema(altered)  # Paimon's options checked as a read checks them, the file index as a write
        file_index_spec(altered.options, {f.name: f.type for f in altered.fields})
        retention(altered.options)  # and what expiry keeps, as Java reads it
        # (a foreign table's old junk does not block a change)
        check_parquet_options({k: v for k, v in altered.options.items()
                               if k.startswith("parquet.") and (k in changed_options or what == "schema")},
                              altered.arrow_schema)
        table_options(altered)  # and mergetree's values
        self.storage.require_conditional_create()
        name = f"{SCHEMA_DIR}/schema-{altered.id}"
        body = dumps(fresh)
        try:
            self.storage.create(name, body)
        except ObjectExistsError:
            if self.storage.read(name) != body:
                raise CommitConflictError(f"another process changed the {what} of {self.described} at the same "
                                          f"time; reopen it and try again") from None
        table.published_schema(altered)
        return paimon_directory(table, altered)

    # -- housekeeping: the files a snapshot uses, and which of the table's may go --------
    def snapshot_file(self, snapshot_id: int) -> str:
        return PaimonTable.snapshot_name(snapshot_id)

    def retained_changelog_file(self, snapshot_id: int) -> str:
        return f"{CHANGELOG_DIR}/changelog-{snapshot_id}"

    def tagged(self) -> list[Snapshot]:
        """The snapshots the table's tags hold (their files stay while the tag does)."""
        return [self.tag(name) for name in self.table.tags()]

    def used_files(self, snapshot: Snapshot, changelog_only: bool = False) -> dict[str, tuple[Store, str]]:
        """Every file `snapshot` uses — its manifest lists and manifests, its index manifest and
        the index files it lists, its statistics file, its data files with their extra files
        (one at an external path by that path, in its own store), its changelog — as name ->
        (store, object name).  With `changelog_only`, what its changelog needs once it expired:
        its changelog files, or without a changelog producer the files it appended, which are
        its changelog (Java's expiry keeps those for a kept changelog too)."""
        table, storage = self.table, self.storage
        document = self._document(snapshot)
        out: dict[str, tuple[Store, str]] = {}

        def add(name: str) -> None:
            out[name] = (storage, name)

        def manifests(manifest_list: str) -> list[str]:
            return add_manifests(self, manifest_list, out)

        def add_file(pf: PaimonFile) -> None:
            extras = list(pf.record["_FILE"].get("_EXTRA_FILES") or ())
            if pf.name is not None:
                directory = posixpath.dirname(pf.name)
                for name in (pf.name, *(posixpath.join(directory, e) for e in extras)):
                    add(name)
                return
            directory, _, base = pf.path.rpartition("/")
            where = table.external_store(directory)
            for name in (base, *extras):
                out[f"{directory}/{name}"] = (where, name)

        def changelog_of(manifest_list: str, adds_only: bool) -> None:
            for manifest in manifests(manifest_list):
                for kind, pf in table.manifest_file_entries(manifest, self.schema):
                    if kind == ADD or not adds_only:
                        add_file(pf)

        if changelog_only:
            if snapshot.changelog_manifest_list:
                changelog_of(snapshot.changelog_manifest_list, False)
            elif snapshot.commit_kind != "COMPACT":
                changelog_of(snapshot.delta_manifest_list, True)
            return out
        manifests(snapshot.base_manifest_list)
        manifests(snapshot.delta_manifest_list)
        changelog_of(snapshot.changelog_manifest_list, False)
        for entry in self.live_files(snapshot).values():
            origin = entry.file.origin
            if isinstance(origin, PaimonFileRef):
                add_file(origin.file)
        index = document.get("indexManifest")
        if index:
            add(f"{MANIFEST_DIR}/{index}")
            for name, path in table.index_files(document):
                if name is not None:
                    add(name)
                else:
                    directory, _, base = path.rpartition("/")
                    out[path] = (table.external_store(directory), base)
        statistics = document.get("statistics")
        if statistics:
            add(f"statistics/{statistics}")
        return out

    def _hint(self, relative: str, snapshot_id: int | None) -> None:
        """Write a hint file as Java does (the id as text), or remove it when there is no id."""
        if snapshot_id is None:
            self.storage.delete(relative)
        else:
            self.storage.write(relative, str(snapshot_id).encode())

    def write_latest_hint(self, snapshot_id: int | None) -> None:
        """Point the LATEST hint at `snapshot_id` (`repair` after setting damaged snapshots aside)."""
        self._hint(LATEST_HINT, snapshot_id)

    def snapshot_retention(self) -> tuple[int, int | None, float]:
        rules = retention(self.schema.options)
        return rules.snapshot_min, rules.snapshot_max, rules.snapshot_age.total_seconds()

    def expire_limit(self) -> int:
        return retention(self.schema.options).expire_limit

    def earliest_id(self) -> int | None:
        """The oldest snapshot's id: the one this store found last while it is still there
        (snapshots go only from the front: one HEAD), else the EARLIEST hint where its snapshot
        is there (Java's ``SnapshotManager.earliestSnapshotId``), else by listing."""
        known = self._earliest
        if known is not None and self.storage.exists(PaimonTable.snapshot_name(known)):
            return known
        self._earliest = found = self._find_earliest()
        return found

    def _find_earliest(self) -> int | None:
        data = read_if_exists(self.storage, f"{SNAPSHOT_DIR}/EARLIEST")
        try:
            hint = int(data.decode().strip()) if data is not None else None
        except (UnicodeDecodeError, ValueError):
            hint = None
        if hint is not None and self.storage.exists(PaimonTable.snapshot_name(hint)):
            return hint
        ids = self.table.snapshot_ids()
        return ids[0] if ids else None

    def expired_to(self, earliest: int | None) -> None:
        """Write the EARLIEST hint as Java's expiry does (readers start their search there)."""
        if earliest is not None:
            self._hint(f"{SNAPSHOT_DIR}/EARLIEST", earliest)

    def native_options(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Option changes in the engine's names as a Paimon table names them: Bloom filter
        columns (`KEY_BLOOM_COLUMNS`, which Paimon's name means its file index) become Parquet's
        own filters, ``parquet.bloom.filter.enabled#<column>``, which Java's writers write too
        (`bloom_option_changes`); the rest keep their names (`option_name` prefixes mergetree's)."""
        orc = self.schema.options.get("file.format", "parquet").strip().lower() != "parquet"
        if KEY_BLOOM_COLUMNS not in changes or orc:  # ORC has no Parquet filters: Paimon's file index then
            return changes
        out = {k: v for k, v in changes.items() if k != KEY_BLOOM_COLUMNS}
        out.update(bloom_option_changes(self.schema.options, changes[KEY_BLOOM_COLUMNS]))
        return out

    def with_side_data(self, entry: FileEntry, rows: Any, schema: Any, options: Any) -> FileEntry:
        """The entry of a live file with the pre-aggregates `options` declare written beside it
        and listed as its extra files (a pre-aggregate of an older definition of a model
        dropped from the list), the file unchanged: Paimon's readers ignore such files, its
        orphan cleaning keeps them and its expiry deletes them with the file.  (Its bitmaps are
        its file index, built with the file: `missing_indexes` asks a rewrite for them.)"""
        meta = entry.file
        origin = meta.origin
        record = origin.file.record["_FILE"]
        models = options.aggregate_models
        stored = meta.preaggregates()
        missing = [m for m in models.values() if stored.get(m.name, {}).get("signature") != model_signature(m)]
        # a declared model's pre-aggregate of an older definition leaves the list; a listed file is
        # never written again (readers may be reading it)
        stale = {stored[m.name]["file"] for m in missing if m.name in stored}
        extras = [e for e in record.get("_EXTRA_FILES") or () if e not in stale]
        rows = final_rows(rows, schema)
        written: list[str] = []
        try:
            for model in missing:
                name = posixpath.basename(sidecar_of(origin.file.file_name, model))
                target = origin.extra_source(name)
                creating(target.storage, target.name)
                written.append(target.name)
                write_preaggregate(rows, model, target)
                extras.append(name)
        except BaseException:
            if written:
                remove_uncommitted(origin.extra_source(posixpath.basename(written[0])).storage, written)
            raise
        embedded = record.get("_EMBEDDED_FILE_INDEX")
        listed = {"external_path": record.get("_EXTERNAL_PATH"), "extra_files": extras,
                  "embedded_index": None if embedded is None else base64.b64encode(embedded).decode("ascii")}
        return FileEntry(entry.partition, entry.bucket, meta.with_indexes({**meta.indexes, PAIMON_FILE: listed}))

    def clustered_level(self, options: Any) -> int:
        """The top level, where Java's incremental clustering puts what it clustered (an append
        table's levels mean nothing else): a file above level 0 is laid out."""
        return max(1, options.compaction.num_levels - 1)

    def cleanup_refusal(self) -> str | None:
        """Why expiry and orphan removal may not run here: a table with branches, whose files
        live beside the main branch's (Java's cleaning walks every branch; mergetree reads the
        main one only)."""
        branches = [n for n in list_names(self.storage, "branch") if n.startswith("branch-")]
        if branches:
            return (f"{self.described} has branches ({', '.join(sorted(b[len('branch-'):] for b in branches))}): "
                    f"their files are beside the main branch's and mergetree reads the main branch only, so it "
                    f"cannot tell what they use; expire snapshots and remove orphan files with Paimon")
        return None

    def changelog_retention(self, options: Any) -> tuple[bool, Any]:
        """Java's rule (`options.retention`): an expiring snapshot's changelog is kept when the
        table's changelog retention reaches further than its snapshots'; the kept ones expire by
        ``changelog.*`` with the snapshots' values as defaults, and only then (Java leaves them
        alone otherwise)."""
        rules = retention(self.schema.options)
        if not rules.decoupled:
            return False, None
        return True, dataclasses.replace(options, changelog_retained_min=rules.changelog_min,
                                         changelog_retained_max=rules.changelog_max,
                                         changelog_time_retained=rules.changelog_age)

    def keeps_changelog_of(self, snapshot: Snapshot) -> bool:
        """Every expiring snapshot leaves a kept changelog, as Java's (its ids have no gaps)."""
        return True

    def kept_changelogs_changed(self) -> None:
        """Write the kept changelogs' EARLIEST and LATEST hints as Java's ``ChangelogManager``."""
        ids = self.table.kept_changelog_ids()
        self._hint(f"{CHANGELOG_DIR}/EARLIEST", ids[0] if ids else None)
        self._hint(f"{CHANGELOG_DIR}/LATEST", ids[-1] if ids else None)

    def may_be_orphan(self, relative: str) -> bool:
        """Could `relative` be a file Paimon's writers made that no snapshot needs once none names
        it: a data, changelog or index file (or a data file's ``.index``) in a bucket directory,
        a manifest, manifest list or index manifest, an index or statistics file, or the
        temporary file of a write into the table's directories a crash left; never a snapshot,
        schema, hint, tag, consumer or kept changelog, nor anything mergetree's writers would not
        name so (the query log beside the table, a user's files)."""
        head, _, base = relative.rpartition("/")
        if "://" in relative or relative.startswith("/"):  # a file at an external path (expiry's)
            return self.owns(_EXTRA_SUFFIX.sub("", relative))
        final = paths.temporary_final(relative)
        if final is not None:  # a write a crash interrupted: debris, whatever it was to become
            return final.rpartition("/")[0] in _METADATA_DIRS or self.may_be_orphan(final)
        if head == MANIFEST_DIR:
            return bool(_MANIFEST.fullmatch(base))
        if head == INDEX_DIR:
            return bool(_INDEX_FILE.fullmatch(base))
        if head == "statistics":
            return bool(_STATISTICS.fullmatch(base))
        if not self._bucket_directory(head):
            return False
        return bool(_WRITTEN.fullmatch(_EXTRA_SUFFIX.sub("", base)) or _INDEX_FILE.fullmatch(base))

    def _bucket_directory(self, head: str) -> bool:
        """Is `head` one of the table's bucket directories: ``[<data-file.path-directory>/]``
        one ``key=value`` per partition key, in order, then ``bucket-<n>``?"""
        parts = head.split("/")
        prefix = [p for p in self.schema.options.get("data-file.path-directory", "").split("/") if p]
        if parts[:len(prefix)] != prefix:
            return False
        parts = parts[len(prefix):]
        keys = self.partition_by
        if len(parts) != len(keys) + 1 or not re.fullmatch(r"bucket-\d+", parts[-1]):
            return False
        return all(part.startswith(f"{escape_path_name(key)}=") for part, key in zip(parts, keys))

    # -- where data files go, and commits ------------------------------------------------
    def bucket_directory(self, partition: tuple, bucket: int, beside: Sequence[DataFileMeta] = ()) -> str:
        """Where a bucket's new files go: beside `beside` (its files a compaction rewrites), as
        `bucket_directory_of` says."""
        files = [m.origin.file for m in beside if isinstance(m.origin, PaimonFileRef)]
        return bucket_directory_of(self.schema, partition, bucket, files)

    def open_file(self, relative: str, schema: TableSchema, options: Any, partition: tuple, bucket: int, level: int,
                  sorted_by: Sequence[str] = (), changelog: bool = False) -> PaimonFileWriter:
        """A new data (or changelog) file of a bucket as Java's writers make it (`PaimonFileWriter`:
        the table's format, thin mode, file index, external paths)."""
        return PaimonFileWriter(self.table, self.schema, self._external_roots(), relative, schema, level, options,
                                partition, bucket, sorted_by, changelog)

    def _external_roots(self, quiet: bool = False) -> ExternalRoots | None:
        """The table's external roots (None: none); `quiet`: None too when one cannot be
        resolved (cleanup never raises)."""
        if quiet:
            try:
                return self._external_roots()
            except UnsupportedPaimonFeatureError:
                return None
        with self._lock:
            if self._roots is False:
                self._roots = external_roots(self.table, self.schema)
                if self._roots is not None:
                    self._roots.check()  # every root resolvable before anything is written
            return self._roots  # type: ignore[return-value]

    def received(self, entries: Sequence[FileEntry], base: Snapshot | None) -> list[FileEntry]:
        """Entries a Spark task shipped as JSON, with their origins: a live file of `base` (moved,
        or given a new deletion vector) keeps its Paimon entry; a new one gets the entry it will
        have (a thin, ORC or externally placed file is read through it)."""
        live = self.live_files(base)
        out = []
        for e in entries:
            if e.file.origin is None:
                known = live.get(e.file.file_name)
                meta = replace(e.file, origin=known.file.origin) if known is not None else \
                    with_origin(self.table, self.schema, e.file, e.partition, e.bucket)
                e = FileEntry(e.partition, e.bucket, meta)
            out.append(e)
        return out

    def task_state(self, indexes: Sequence[str]) -> dict[str, tuple[bytes, int, dict]]:
        """The index manifest entries of the index files a task's store wrote (`indexes`)."""
        with self._lock:
            return {name: self._fresh_indexes[name] for name in indexes if name in self._fresh_indexes}

    def adopt_task_state(self, state: Any) -> None:
        if state:
            with self._lock:
                self._fresh_indexes.update(state)

    def remove_journaled(self, lines: Sequence[str]) -> None:
        """Delete the files a task's journal names: under the table, or at an external path."""
        roots = self._external_roots(quiet=True)
        inside = []
        for line in lines:
            if is_location(line):  # a file at an external path
                found = roots.store_of(line) if roots is not None else None
                if found is not None and self.owns(found[1].removesuffix(".index")):
                    remove_uncommitted(found[0], [found[1]])
            elif self.owns(line.removesuffix(".index")) or _INDEX_FILE.fullmatch(line.rpartition("/")[2]):
                inside.append(line)
        remove_uncommitted(self.storage, inside)

    def remove_uncommitted(self, files: Sequence[DataFileMeta]) -> None:
        """Delete new files no snapshot references — in the table, their extra files too; at an
        external path, in its root's store — as cleanup: never raising (`files.remove_uncommitted`)."""
        for storage, names in placed_files(self.table, self._external_roots(quiet=True), files):
            remove_uncommitted(storage, [n for n in names if self.owns(n.removesuffix(".index"))])

    def owns(self, relative: str) -> bool:
        """Only data and changelog files in a bucket directory are ever deleted through here."""
        head, _, base = relative.rpartition("/")
        directory = head.rpartition("/")[2]
        # (an entropy-injected external file is four hash directories below its bucket's)
        entropy = _ENTROPY.fullmatch(head)
        if entropy is not None:
            directory = entropy.group(1).rpartition("/")[2]
        return bool(_WRITTEN.fullmatch(base)) and directory.startswith("bucket-")

    @property
    def described(self) -> str:
        return f"Paimon table {self.table.name}"

    def bucket_ids(self, rows: pa.Table, schema: TableSchema) -> np.ndarray:
        """Each row's bucket by the table's bucket function over its bucket key (`codec.buckets`:
        exactly where Java places it; bucket 0 in a bucket-unaware append table); in a
        dynamic-bucket table, by its partition's hash index (`dynamic_buckets`)."""
        opts = self.schema.checked_options
        if opts.dynamic_buckets:
            return self._dynamic_buckets(rows)
        if opts.buckets < 1 or not opts.bucket_key:
            return np.zeros(rows.num_rows, dtype=np.int32)
        types = [self.schema.field(c).type for c in opts.bucket_key]
        return buckets_of([rows.column(c) for c in opts.bucket_key], types, opts.buckets,
                          bucket_function(self.schema.options, types))

    # -- dynamic buckets: keys placed by each partition's hash index ---------------------
    def _dynamic_buckets(self, rows: pa.Table) -> np.ndarray:
        schema = self.schema
        opts = schema.checked_options
        key_types = [schema.field(c).type for c in opts.bucket_key]
        hashes = paimon_hashes([rows.column(c) for c in opts.bucket_key], key_types)
        latest = self.table.latest_snapshot()  # once per buffer, whatever its partitions
        out = np.empty(rows.num_rows, dtype=np.int32)
        if not schema.partition_keys:
            out[:] = self._assigner(encode_row([], []), latest).assign(hashes)
            return out
        indexed = rows.select(list(schema.partition_keys)).append_column("_row", pa.array(np.arange(rows.num_rows)))
        grouped = indexed.group_by(list(schema.partition_keys), use_threads=False).aggregate([("_row", "list")])
        for i in range(grouped.num_rows):
            values = [grouped.column(k)[i].as_py() for k in schema.partition_keys]
            members = np.asarray(grouped.column("_row_list")[i].values.to_numpy(), dtype=np.int64)
            out[members] = self._assigner(encode_row(values, schema.partition_types), latest).assign(hashes[members])
        return out

    def _assigner(self, partition: bytes, latest: dict | None) -> PartitionAssigner:
        """The partition's assigner, loaded from the latest snapshot's hash index (again when a
        newer snapshot is there and this process has nothing assigned but uncommitted)."""
        latest_id = None if latest is None else int(latest["id"])
        with self._lock:
            found = self._assigners.get(partition)
            if found is not None and (found.snapshot_id == latest_id or len(found.pending_hashes)):
                return found
        opts = self.schema.checked_options
        per_bucket, names = self._hash_index(latest, partition)
        loaded = PartitionAssigner.load(latest_id, per_bucket, opts.dynamic_target, opts.dynamic_max_buckets, names)
        with self._lock:
            current = self._assigners.get(partition)
            if current is not None and current is not found:  # another thread loaded it meanwhile
                return current
            self._assigners[partition] = loaded
            return loaded

    def _hash_index(self, document: dict | None, partition: bytes,
                    names_only: bool = False) -> tuple[dict[int, np.ndarray], dict[int, str]]:
        """Bucket -> the key hashes its hash index file holds, in `partition` at that snapshot
        (none read with `names_only`), and bucket -> that file's name."""
        hashes: dict[int, np.ndarray] = {}
        names: dict[int, str] = {}
        if document is None:
            return hashes, names
        for entry in self._hash_entries(document):
            if entry["_PARTITION"] != partition:
                continue
            names[int(entry["_BUCKET"])] = str(entry["_FILE_NAME"])
            if not names_only:
                data, path = self.table.index_file_bytes(entry, self.schema)
                hashes[int(entry["_BUCKET"])] = decode_hashes(data, path)
        return hashes, names

    def _hash_entries(self, document: dict) -> list[dict]:
        return [e for e in index_entries(self.table, document) if e["_INDEX_TYPE"] == HASH_INDEX and e["_KIND"] == 0]

    def _hash_changes(self, base: dict | None, adds: list[FileEntry], written: list[str]
                      ) -> tuple[list[IndexChange], list[tuple]]:
        """The hash index files a write's commit on `base` brings: for each partition it adds
        files to, each bucket this process gave new keys, its hashes at `base` with those added,
        written now; and per partition (assigner, the new hashes written, the index's file names
        after the commit, the index read again or None), for `PartitionAssigner.committed`.
        Where another writer changed the partition's index since it was read, a key of this
        write it placed elsewhere raises `WriterConflictError` (one writer at a time) and the
        partition's assignments are forgotten; untouched, the index is not read again."""
        schema = self.schema
        changes: list[IndexChange] = []
        done: list[tuple] = []
        partitions = {encode_row(list(e.partition), schema.partition_types) for e in adds}
        for partition in sorted(partitions):
            with self._lock:
                assigner = self._assigners.get(partition)
            if assigner is None:
                continue
            pending, buckets = assigner.pending()  # what is assigned now; later assignments wait for their commit
            if not len(pending):
                continue
            _, names = self._hash_index(base, partition, names_only=True)
            reread: dict[int, np.ndarray] | None = None
            if names == assigner.index_names:
                at_base = assigner.known_by_bucket()  # the index as loaded: nothing to read again
            else:
                at_base, _ = self._hash_index(base, partition)
                reread = at_base
                clashes = assigner.conflicts(at_base, pending, buckets)
                if clashes:
                    with self._lock:
                        self._assigners.pop(partition, None)
                    raise WriterConflictError(
                        f"another writer committed to dynamic-bucket Paimon table {self.table.name} and placed "
                        f"{clashes} of this write's new keys in other buckets; a dynamic-bucket table takes one "
                        f"writer at a time; nothing was committed, retry the write")
            after = dict(names)
            for bucket in sorted({int(b) for b in np.unique(buckets)}):
                old = at_base.get(bucket, np.empty(0, np.int32))
                hashes = np.union1d(old, pending[buckets == bucket])
                if len(hashes) == len(old):
                    continue
                name = new_index_name()
                where = self._index_object(tuple(decode_row(partition, schema.partition_types, "partition")), bucket,
                                           [], name)
                data = encode_hashes(hashes)
                creating(self.storage, where)
                self.storage.write(where, data)
                written.append(self.table.full(where))
                changes.append(IndexChange(partition, bucket, hash_index_entry(partition, bucket, name, len(data),
                                                                               len(hashes)), HASH_INDEX))
                after[bucket] = name
            done.append((assigner, pending, after, reread))
        return changes, done

    def is_changelog(self, relative: str) -> bool:
        return bool(_CHANGELOG.fullmatch(relative.rpartition("/")[2]))

    def write_deletion_vectors(self, partition: tuple, bucket: int, directory: str, vectors: Mapping[str, Any],
                               staying: Sequence[DataFileMeta]) -> dict[str, DeletionVectorRef]:
        """Paimon keeps one index file per bucket: the new vectors (engine file name -> positions)
        and those the bucket's other files keep (`staying`) go into one new index file, in
        ``index/`` (or the bucket's directory with ``index-file-in-data-file-dir``); every file's
        reference into it.  The index manifest entry waits for `commit`."""
        origins = {m.file_name: m.origin.file for m in staying if isinstance(m.origin, PaimonFileRef)}
        by_paimon: dict[str, Any] = {}
        for m in staying:
            if m.file_name not in vectors and isinstance(m.origin, PaimonFileRef) and m.deleted_rows:
                by_paimon[origins[m.file_name].file_name] = m.origin.deleted_positions()
        for name, positions in vectors.items():
            by_paimon[origins[name].file_name] = positions
        files = list(origins.values())
        partition_bytes = files[0].partition_bytes if files else encode_row(list(partition),
                                                                            self.schema.partition_types)
        name = new_index_name()
        built = deletion_index(self.schema, partition_bytes, bucket, by_paimon, name)
        if built is None:
            return {}
        where = self._index_object(partition, bucket, files, name)
        creating(self.storage, where)
        self.storage.write(where, built.data)
        with self._lock:
            self._fresh_indexes[where] = (partition_bytes, bucket, built.entry)
        engine_name = {pf.file_name: n for n, pf in origins.items()}
        return {engine_name[r.data_file]: DeletionVectorRef(where, r.offset, r.length, r.cardinality or 0)
                for r in built.ranges}

    def _index_object(self, partition: tuple, bucket: int, files: list[PaimonFile], name: str) -> str:
        """Where a bucket's new index file goes: ``index/``, or its data files' directory when the
        table keeps index files there (``index-file-in-data-file-dir``), as Paimon's readers look."""
        if is_true(self.schema.options.get("index-file-in-data-file-dir", "false")):
            return posixpath.join(bucket_directory_of(self.schema, partition, bucket, files), name)
        return f"{INDEX_DIR}/{name}"

    def _vector_changes(self, base: dict | None, adds: list[FileEntry], deletes: list[FileEntry],
                        written: list[str]) -> tuple[list[FileEntry], list[FileEntry], list[IndexChange], list[dict]]:
        """A deletion-vector table's commit as Paimon records it: a file whose vector alone
        changed keeps its data-manifest entry; each touched bucket's index entry is the index
        file `write_deletion_vectors` wrote for it, or, where the change deletes files that had
        vectors, the bucket's remaining vectors in a new index file (none left: no entry)."""
        table, schema = self.table, self.schema
        levels = {e.file.file_name: e.file.level for e in deletes}
        relisted_names = {e.file.file_name for e in adds if isinstance(e.file.origin, PaimonFileRef)
                          and levels.get(e.file.file_name) == e.file.level}
        # a live file at its level keeps its entry, but one whose extra files changed, which is
        # listed again (DELETE, then ADD); either way its deletion vector stays
        same = {e.file.file_name for e in adds if e.file.file_name in relisted_names and not paimon_extras(e.file)}
        fresh = {}
        for e in adds:
            ref = e.file.deletion_vector
            if ref is not None and ref.index in self._fresh_indexes:
                fresh[(e.partition, e.bucket)] = self._fresh_indexes[ref.index]
        kept = [relisted(e.file) for e in adds if e.file.file_name in same]  # must stay live
        adds = [e for e in adds if e.file.file_name not in same]
        deletes = [e for e in deletes if e.file.file_name not in same]
        old = table.deletion_files(base) if base is not None else {}
        gone = {(e.file.origin.file.partition_bytes, e.bucket, e.file.origin.file.file_name) for e in deletes
                if e.file.file_name not in relisted_names}
        changes: list[IndexChange] = []
        for partition_bytes, bucket, entry in fresh.values():
            changes.append(IndexChange(partition_bytes, bucket, entry))
        done = {(p, b) for p, b, _ in fresh.values()}
        for (partition_bytes, bucket), vectors in sorted(old.items()):
            if (partition_bytes, bucket) in done or not any((partition_bytes, bucket, f) in gone for f in vectors):
                continue
            remaining = {f: table.deleted_rows(d) for f, d in vectors.items()
                         if (partition_bytes, bucket, f) not in gone}
            built = deletion_index(schema, partition_bytes, bucket, remaining, new_index_name())
            if built is None:
                changes.append(IndexChange(partition_bytes, bucket, None))
                continue
            of_bucket = [e for e in deletes
                         if e.bucket == bucket and e.file.origin.file.partition_bytes == partition_bytes]
            where = self._index_object(of_bucket[0].partition, bucket, [e.file.origin.file for e in of_bucket],
                                       built.entry["_FILE_NAME"])
            written.append(table.full(where))
            table.storage.write(where, built.data)
            changes.append(IndexChange(partition_bytes, bucket, built.entry))
        return adds, deletes, changes, kept

    # -- consumers' files, as Java's `ConsumerManager` keeps them --------------------------
    def consumer_file(self, consumer_id: str) -> str:
        """``consumer/consumer-<id>``, where Java's readers and its expiry look: any id a file
        may be named by (Java takes any), but one with "/" or a control character."""
        if not isinstance(consumer_id, str) or not consumer_id or len(consumer_id) > 200 \
                or _CONSUMER.fullmatch(f"{paths.CONSUMER_DIR}/consumer-{consumer_id}") is None:
            raise ValueError(f"consumer id {consumer_id!r}: use 1 to 200 characters, no '/' and no control characters")
        return f"{paths.CONSUMER_DIR}/consumer-{consumer_id}"

    def consumer_id_of(self, relative: str) -> str | None:
        match = _CONSUMER.fullmatch(relative)
        return match.group(1) if match else None

    def consumer_bytes(self, next_snapshot: int, updated: int) -> bytes:
        # Java's `Consumer` JSON holds the position alone; its expiry goes by the file's time
        return json.dumps({"nextSnapshot": next_snapshot}).encode()


    def consumer_updated(self, relative: str, document: dict) -> object:
        """When the consumer last recorded its progress (milliseconds): the file's modification
        time, as Java's `ConsumerManager.expire` reads it (None: the file is gone)."""
        for info in self.storage.list(relative):
            if info.path == relative:
                return int(info.last_modified.timestamp() * 1000)
        return None

    def check_rewrite(self, files: Sequence[DataFileMeta]) -> None:
        """Refuse, before anything is written, a compaction of files (rewritten or moved) of an
        older schema mergetree cannot map onto the latest (a key that differs, a retype it does
        not convert)."""
        older = {m.origin.file.schema_id for m in files if isinstance(m.origin, PaimonFileRef)} - {self.schema.id}
        for schema_id in sorted(older):
            check_evolvable(self.table, self.table.schema(schema_id), self.schema)

    def refuses(self, kind: str) -> str | None:
        """Why the engine may not commit a change of `kind` here as Java would (`commit_refusal`)."""
        return commit_refusal(self.schema, kind, self.table.name)

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
        # an append table's files merged as they are (the optimizer, the query log's own
        # compaction) are a COMPACT Java commits too; compaction by Paimon's rules is not planned
        rewrite = kind == "COMPACT" and schema.checked_options.append
        refusal = commit_refusal(schema, "APPEND" if rewrite else kind, table.name)
        if refusal is None and not all(isinstance(e.file.origin, PaimonFileRef) for e in deletes):
            refusal = (f"this change to Paimon table {table.name} names files without their Paimon entries (a plan "
                       f"shipped elsewhere?); compact it with mergetree.spark.compact_paimon")
        if refusal is not None:
            raise UnsupportedPaimonFeatureError(refusal)
        base = table.snapshot(base_id) if base_id is not None else None
        placed = {(e.partition, e.bucket): e.file.origin.file for e in deletes
                  if isinstance(e.file.origin, PaimonFileRef)}
        source = FILE_SOURCE_COMPACT if kind == "COMPACT" else FILE_SOURCE_APPEND

        relevelled = {e.file.file_name for e in deletes}

        def record(e: FileEntry, file_source: int) -> dict:
            origin = e.file.origin
            if isinstance(origin, PaimonFileRef) and e.file.file_name in relevelled:  # a live file, listed again
                return relisted(e.file)
            old = placed.get((e.partition, e.bucket))
            partition = old.partition_bytes if old is not None else \
                encode_row(list(e.partition), schema.partition_types)
            total = old.total_buckets if old is not None else schema.checked_options.buckets
            return data_file_record(schema, e.file, partition, e.bucket, total, file_source)
        written: list[str] = []
        index: list[IndexChange] = []
        kept: list[dict] = []
        if kind == "OVERWRITE" and schema.checked_options.deletion_vectors and base is not None:
            # a bucket whose every file the overwrite deletes loses its deletion vectors with them
            gone = {e.file.origin.file.file_name for e in deletes}
            left = {(f.partition_bytes, f.bucket) for f in table.live_files(base) if f.file_name not in gone}
            index = [IndexChange(p, b, None) for p, b in sorted(table.deletion_files(base)) if (p, b) not in left]
        elif kind == "COMPACT" and schema.checked_options.deletion_vectors:
            try:
                adds, deletes, index, kept = self._vector_changes(base, adds, deletes, written)
            except BaseException:
                remove_files(table, written)
                raise
        assigned: list = []
        if kind != "COMPACT" and schema.checked_options.dynamic_buckets and adds:
            try:
                hash_changes, assigned = self._hash_changes(base, adds, written)
                index += hash_changes
            except BaseException:
                remove_files(table, written)
                raise

        # the commit's properties as the snapshot keeps them (a stream's batch id), but the
        # changelog's producer: `_marked` names it by the table's rules, never a writer's word
        own = {k: v for k, v in (properties or {}).items() if k not in (PRODUCER_PROPERTY, RETRIES_PROPERTY)}
        if retries:
            own[RETRIES_PROPERTY] = str(retries)

        def moved(newer: dict) -> None:
            # a write or overwrite is redone by the engine on the newer snapshot (renumbered,
            # its deletes read again), never committed on one it was not made for
            raise CommitConflictError(f"Paimon table {table.name} moved to snapshot {newer.get('id')}")

        def vectors_kept(newer: dict) -> None:
            # a rewrite read its inputs' rows less their deletion vectors as they were: one that
            # a newer commit gave more deleted rows (a vector only grows) would bring them back
            live = self._entries(newer)
            changed = [e.file.file_name for e in deletes if e.file.file_name in live
                       and live[e.file.file_name].file.deleted_rows != e.file.deleted_rows]
            if changed:
                raise CompactionConflictError(
                    f"another commit to Paimon table {table.name} (snapshot {newer.get('id')}) deleted rows of "
                    f"{len(changed)} input file(s) of this rewrite (e.g. {changed[0]}); nothing was committed")
        try:
            new_id = commit_files(table, base, schema, [record(e, source) for e in adds],
                                  [dict(e.file.origin.file.record, _KIND=DELETE) for e in deletes], written, kind,
                                  index or None, check=vectors_kept if kind == "COMPACT" else moved,
                                  changelog=[record(e, FILE_SOURCE_APPEND) for e in changelog] or None, kept=kept,
                                  properties=own or None)
        except BaseException:
            remove_files(table, written)
            raise
        for assigner, hashes, names, reread in assigned:  # (only what this commit's index files hold)
            assigner.committed(new_id, hashes, names, reread)
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
        # (a pk-clustering-override table's level-1 files are read alone too, vectors or none)
        if (opts.deletion_vectors or opts.pk_clustering) and pf.level > 0 and pf.delete_count == 0:
            cardinality = 0 if deletion is None else deletion.range.cardinality
            resolved = DeletionVectorRef(None if deletion is None else deletion.path,
                                         0 if deletion is None else deletion.range.offset,
                                         0 if deletion is None else deletion.range.length,
                                         pf.row_count if cardinality is None else cardinality)
        # (a file at an external path: the name it would have in the table, as its writer named it)
        name = pf.name if pf.name is not None else posixpath.join(
            relative_bucket_path(schema, pf.partition, pf.bucket), pf.file_name)
        # a recorded 0 retractions is not trusted but in a resolved file: pypaimon records 0 for
        # files holding -D rows (and a compaction may move such a file up a level unchanged), so
        # their kind column is read (an int8 column) and their retractions dropped
        retractions = pf.delete_count if resolved is not None or not schema.primary_keys or pf.delete_count \
            else pf.row_count
        meta = DataFileMeta(name, pf.level, pf.row_count, pf.file_size, pf.min_key, pf.max_key, pf.min_seq,
                            pf.max_seq, retractions, FileStats(table, pf, schema),  # type: ignore[arg-type]
                            deletion_vector=resolved, origin=PaimonFileRef(table, pf, schema, deletion))
        return FileEntry(pf.partition, pf.bucket, meta)


def relisted(meta: DataFileMeta) -> dict:
    """The manifest entry (an ADD) of a live Paimon file listed again: its own entry at the
    level `meta` has, with the extra files and embedded index `meta` lists (`with_side_data`)."""
    record = meta.origin.file.record
    listed = paimon_extras(meta)
    fields = dict(record["_FILE"], _LEVEL=meta.level)
    if listed:
        embedded = listed.get("embedded_index")
        fields.update(_EXTRA_FILES=list(listed.get("extra_files") or ()),
                      _EMBEDDED_FILE_INDEX=None if embedded is None else base64.b64decode(embedded))
    return dict(record, _KIND=ADD, _FILE=fields)


def clear_caches() -> None:
    """Forget the decoded metadata and live files of every Paimon table (`metadata.clear_caches`)."""
    clear_metadata_caches()
    with _live_lock:
        _live.clear()


def open_directory(location: str | Store) -> TableDirectory:
    """The engine's `TableDirectory` of the Paimon table at `location` (TableNotFoundError: none;
    UnsupportedFormatError, saying to migrate it: a table of mergetree's older format); its
    latest snapshot is not read (a damaged one is for the caller to find)."""
    storage = location if isinstance(location, Store) else storage_for(location)
    refuse_older(storage)
    return paimon_directory(PaimonTable.open(storage, None))


def paimon_directory(table: PaimonTable, schema: PaimonSchema | None = None) -> TableDirectory:
    """The engine's `TableDirectory` of a Paimon table read under `schema` (default: its latest)."""
    schema = schema if schema is not None else table.schema()
    ts = table_schema(schema)
    return TableDirectory(table.path, ts, table_options(schema), PaimonSnapshotStore(table, schema),
                          table.storage)

