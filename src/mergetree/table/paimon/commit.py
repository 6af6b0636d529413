"""Committing to a Paimon table as Java commits on a filesystem: the changed files' manifest
entries in a new manifest (and a changelog manifest), a base manifest list (the previous
snapshot's base and delta manifests) and a delta list, written like the table's own metadata
files (`manifest_files.template_for`: its ``manifest.format``, Avro or ORC, and its writer's
schemas); a changed bucket's deletion-vector index entry in a new index manifest; then
``snapshot/snapshot-<N+1>`` by the store's conditional create (`Store.create`: exclusive create
locally, ``If-None-Match: *`` on S3, ...; it fails if another committer took that id; a store
without one refuses before anything is written) and the ``LATEST`` hint.  A lost race is
retried on top of the winner when every deleted file is still live, the changed buckets'
deletion vectors are unchanged and Java's conflict checks pass (`lsm_conflict`); otherwise
`CompactionConflictError`, nothing committed.  Every writer of Paimon tables commits here."""
from __future__ import annotations

import base64
import contextlib
import datetime as dt
import itertools
import os
import posixpath
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from pyroaring import BitMap64

from ...codec.binary_row import decode_row, encode_row
from ...codec.deletion_vectors import DeletionVectorRange, encode_index_file
from ...codec.json_files import dumps, snapshot_json
from ...codec.manifest_files import MetadataFile, template_for, write_metadata
from ...codec.stats import StatsMode, bounded, stats_modes
from ...codec.types import PaimonType
from ...errors import (
    CompactionConflictError,
    InvalidArgumentError,
    ObjectExistsError,
    ObjectNotFoundError,
    OutcomeUnknownError,
    StorageError,
)
from ..files import DataFileMeta
from ..objects import locate
from ..values import decode_value
from .dynamic_buckets import HASH_INDEX
from .metadata import ADD, DELETION_VECTORS_INDEX, LATEST_HINT, MANIFEST_DIR, PaimonSchema, PaimonTable, identifier

__all__ = [
    "COMMIT_TRIES",
    "FILE_SOURCE_APPEND",
    "FILE_SOURCE_COMPACT",
    "PAIMON_FILE",
    "DeletionIndex",
    "IndexChange",
    "commit_files",
    "data_file_record",
    "deletion_index",
    "has_value_stats",
    "hash_index_entry",
    "index_entries",
    "lsm_conflict",
    "new_index_name",
    "paimon_extras",
    "remove_files",
    "simple_stats",
]

LONG_MAX = (1 << 63) - 1
COMMIT_TRIES = 30
FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT = 0, 1   # a data file's `_FILE_SOURCE`: a write's, a compaction's
PAIMON_FILE = "paimon"  # the key of a new file's manifest extras in `DataFileMeta.indexes` (`writer`)


def paimon_extras(meta: DataFileMeta) -> dict[str, Any]:
    """What a new file's manifest entry records beyond the engine's metadata (`writer.PaimonFileWriter`):
    ``external_path`` (None: in the table), ``embedded_index`` (base64, or None) and ``extra_files``."""
    return dict(meta.indexes.get(PAIMON_FILE) or {})


def has_value_stats(t: PaimonType) -> bool:
    """Does Java keep min/max value statistics of a column of this type?"""
    return t.atomic and t.root not in ("BOOLEAN",) and not (t.root in ("TIMESTAMP", "TIMESTAMP_LTZ")
                                                            and t.precision > 6)


def simple_stats(bounds: Sequence[tuple[Any, Any, int]], types: Sequence[PaimonType],
                 modes: Sequence[StatsMode]) -> dict:
    """A SimpleStats record of columns' exact (min, max, null count) under their stats modes
    (`codec.stats.bounded`: truncated, counts only, or none)."""
    kept = [bounded(lo, hi, nulls, mode) for (lo, hi, nulls), mode in zip(bounds, modes)]
    return {"_MIN_VALUES": encode_row([b[0] for b in kept], types),
            "_MAX_VALUES": encode_row([b[1] for b in kept], types),
            "_NULL_COUNTS": [b[2] for b in kept]}


def data_file_record(schema: PaimonSchema, meta: DataFileMeta, partition: bytes, bucket: int, total_buckets: int,
                     file_source: int) -> dict:
    """The manifest entry (an ADD) of a data file the engine wrote (`writer.PaimonFileWriter`,
    in Paimon's layout under `schema`): its key range, sequence range, retractions and the
    statistics Java keeps, under the table's stats modes, from the file's exact bounds; where it
    is and its file index as its writer recorded them (`paimon_extras`)."""
    names = schema.names
    modes = dict(zip(names, stats_modes(schema.options, names)))
    stat_names = [f.name for f in schema.fields if has_value_stats(f.type) and modes[f.name].kind != "none"]

    def exact(name: str) -> tuple[Any, Any, int]:
        lo, hi, nulls = meta.stats.get(name, (None, None, 0))
        return lo, hi, nulls
    key_types = schema.key_types
    extras = paimon_extras(meta)
    embedded = extras.get("embedded_index")
    min_key, max_key = list(meta.min_key), list(meta.max_key)
    clustering = schema.clustering_columns if meta.level > 0 else ()
    if clustering:  # a clustered file: its first and last rows' clustering values, as Java records them
        bounds = extras.get("clustering_bounds")
        if not bounds:
            raise InvalidArgumentError(f"data file {meta.file_name} of a 'pk-clustering-override' table above level "
                                       f"0 was not written sorted by {list(clustering)}")
        key_types = [schema.field(c).type for c in clustering]
        min_key, max_key = [decode_value(v) for v in bounds[0]], [decode_value(v) for v in bounds[1]]
    return {
        "_VERSION": 2, "_KIND": ADD, "_PARTITION": partition, "_BUCKET": bucket, "_TOTAL_BUCKETS": total_buckets,
        "_FILE": {
            "_FILE_NAME": posixpath.basename(meta.file_name), "_FILE_SIZE": meta.file_size,
            "_ROW_COUNT": meta.row_count, "_MIN_KEY": encode_row(min_key, key_types),
            "_MAX_KEY": encode_row(max_key, key_types),
            "_KEY_STATS": simple_stats([exact(k) for k in schema.trimmed_keys], schema.key_types,
                                       stats_modes(schema.options, schema.key_columns)),
            "_VALUE_STATS": simple_stats([exact(n) for n in stat_names], [schema.field(n).type for n in stat_names],
                                         [modes[n] for n in stat_names]),
            "_MIN_SEQUENCE_NUMBER": meta.min_seq, "_MAX_SEQUENCE_NUMBER": meta.max_seq,
            "_SCHEMA_ID": schema.id, "_LEVEL": meta.level, "_EXTRA_FILES": list(extras.get("extra_files") or ()),
            "_CREATION_TIME": dt.datetime.now(dt.timezone.utc), "_DELETE_ROW_COUNT": meta.delete_count,
            "_EMBEDDED_FILE_INDEX": None if embedded is None else base64.b64decode(embedded),
            "_FILE_SOURCE": file_source, "_VALUE_STATS_COLS": stat_names,
            "_EXTERNAL_PATH": extras.get("external_path"), "_FIRST_ROW_ID": None, "_WRITE_COLS": None,
            "_WRITE_COLS_SEQUENCES": None,
        },
    }


class IndexChange(NamedTuple):
    """A bucket whose index of `index_type` a commit changes (its deletion vectors, or a
    dynamic-bucket table's hash index): its new index manifest entry (None: the bucket has no
    such index any more)."""

    partition: bytes
    bucket: int
    entry: dict | None
    index_type: str = DELETION_VECTORS_INDEX


def hash_index_entry(partition: bytes, bucket: int, name: str, size: int, count: int) -> dict:
    """The index manifest entry of a dynamic-bucket table's hash index file, as Java writes it."""
    return {"_VERSION": 1, "_KIND": 0, "_PARTITION": partition, "_BUCKET": bucket, "_INDEX_TYPE": HASH_INDEX,
            "_FILE_NAME": name, "_FILE_SIZE": size, "_ROW_COUNT": count, "_DELETIONS_VECTORS_RANGES": None,
            "_EXTERNAL_PATH": None, "_GLOBAL_INDEX": None}


class DeletionIndex(NamedTuple):
    """A bucket's deletion-vector index file: its bytes, its index manifest entry, and the range
    of each data file's vector in it."""

    data: bytes
    entry: dict
    ranges: tuple[DeletionVectorRange, ...]


def new_index_name() -> str:
    return f"index-{uuid.uuid4()}-0"


def deletion_index(schema: PaimonSchema, partition: bytes, bucket: int, vectors: Mapping[str, Iterable[int]],
                   name: str) -> DeletionIndex | None:
    """One bucket's deletion vectors (data file name -> deleted positions) as index file `name`,
    as Java keeps them — one file per bucket, 32- or 64-bit bitmaps as `deletion-vectors.bitmap64`
    says — with its index manifest entry; None when no file has a deleted row."""
    kept = {f: BitMap64(positions) for f, positions in vectors.items()}
    kept = {f: bitmap for f, bitmap in kept.items() if len(bitmap)}
    if not kept:
        return None
    bitmap64 = schema.options.get("deletion-vectors.bitmap64", "false").strip().lower() == "true"
    data, ranges = encode_index_file(kept, bitmap64)
    entry = {
        "_VERSION": 1, "_KIND": 0, "_PARTITION": partition, "_BUCKET": bucket,
        "_INDEX_TYPE": DELETION_VECTORS_INDEX, "_FILE_NAME": name, "_FILE_SIZE": len(data),
        "_ROW_COUNT": len(ranges),
        "_DELETIONS_VECTORS_RANGES": [{"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
                                      for r in ranges],
        "_EXTERNAL_PATH": None, "_GLOBAL_INDEX": None,
    }
    return DeletionIndex(data, entry, tuple(ranges))


def remove_files(table: PaimonTable, paths: list[str]) -> None:
    """Remove files a failed compaction wrote (local paths or URIs under the table, as
    `written` holds them), best effort: the failure being reported matters more, and what is
    left is an orphan no snapshot names."""
    for path in paths:
        name = table.name_of(path)
        with contextlib.suppress(StorageError, InvalidArgumentError):
            if name is not None:
                table.storage.delete(name)
            else:  # a data file at an external path (`Placement`): the store of its directory
                directory, _, base = path.rpartition("/" if "://" in path else os.sep)
                store = locate(directory, None, "an external data path") if "://" not in path else \
                    table.external_store(directory)
                store.delete(base)


def _templates(table: PaimonTable, snapshot: dict | None, schema: PaimonSchema) -> tuple[MetadataFile, MetadataFile]:
    """Templates for the new manifest lists and manifest (`template_for`): the snapshot's own
    files in the table's ``manifest.format``, the newest first (none for a first snapshot)."""
    snapshot = snapshot or {}
    lists = [table.metadata_file(n, "manifest list") for n in (snapshot.get("deltaManifestList"),
                                                      snapshot.get("baseManifestList")) if n]
    manifests = (table.metadata_file(m["_FILE_NAME"], "manifest") for ml in lists for m in ml.records)
    return template_for("manifest list", schema.options, lists), template_for("manifest", schema.options, manifests)


def _partition_stats(entries: list[dict], schema: PaimonSchema) -> dict:
    types = schema.partition_types
    values = [decode_row(e["_PARTITION"], types, "partition") for e in entries]
    lo, hi, nulls = [], [], []
    for i in range(len(types)):
        present = [v[i] for v in values if v[i] is not None]
        lo.append(min(present) if present else None)
        hi.append(max(present) if present else None)
        nulls.append(len(values) - len(present))
    return {"_MIN_VALUES": encode_row(lo, types), "_MAX_VALUES": encode_row(hi, types), "_NULL_COUNTS": nulls}


def index_entries(t: PaimonTable, snapshot: dict | None) -> list[dict]:
    name = (snapshot or {}).get("indexManifest")
    return list(t.metadata_file(name, "index manifest").records) if name else []


def _bucket_index_name(entries: list[dict], partition: bytes, bucket: int) -> str | None:
    for e in entries:
        if e["_PARTITION"] == partition and e["_BUCKET"] == bucket and e["_INDEX_TYPE"] == DELETION_VECTORS_INDEX \
                and e["_KIND"] == ADD:
            return str(e["_FILE_NAME"])
    return None


def _write_index_manifest(t: PaimonTable, base: dict | None, changes: list[IndexChange], schema: PaimonSchema,
                          written: list[str]) -> str | None:
    """The index manifest of the new snapshot: the base's entries (a full list), each changed
    bucket's deletion-vector entry replaced by its new one (or dropped), written like the
    table's own index manifest (or from Paimon's row type in its ``manifest.format``).  Its
    name (None: no index file left)."""
    changed = {(c.index_type, c.partition, c.bucket) for c in changes}
    kept = [e for e in index_entries(t, base) if (e["_INDEX_TYPE"], e["_PARTITION"], e["_BUCKET"]) not in changed]
    entries = kept + [c.entry for c in changes if c.entry is not None]
    if not entries:
        return None
    name = (base or {}).get("indexManifest")
    template = template_for("index manifest", schema.options, [t.metadata_file(name, "index manifest")] if name else [])
    manifest = f"index-manifest-{uuid.uuid4()}-0"
    written.append(t.manifest_path(manifest))
    write_metadata(t.storage, f"{MANIFEST_DIR}/{manifest}", template, entries, "index manifest")
    return manifest


def commit_files(t: PaimonTable, snapshot: dict | None, schema: PaimonSchema, adds: list[dict], deletes: list[dict],
                 written: list[str], kind: str, index_changes: list[IndexChange] | None = None,
                 check: Callable[[dict], None] | None = None, changelog: list[dict] | None = None,
                 kept: Sequence[dict] = (), properties: Mapping[str, str] | None = None) -> int:
    """Commit manifest entries as a snapshot of `kind` (APPEND, COMPACT) on top of
    `snapshot` (None: the table's first), as Paimon commits on a filesystem; its id.  A
    lost race is retried on the newer snapshot when every deleted file is still live, the
    changed buckets' deletion vectors are unchanged, the files `kept` (whose new deletion
    vectors this commit names) are still live, and `check(newer snapshot)` (a commit kind's own
    conflicts) does not raise; otherwise `CompactionConflictError`, nothing committed."""
    t.storage.require_conditional_create()
    index_changes = list(index_changes or ())
    before = index_entries(t, snapshot) if index_changes else []
    index_files = {(c.partition, c.bucket): _bucket_index_name(before, c.partition, c.bucket) for c in index_changes
                   if c.index_type == DELETION_VECTORS_INDEX}
    list_template, manifest_template = _templates(t, snapshot, schema)
    entries = deletes + adds
    delta_metas = []  # an empty commit (a stream's batch without rows, which records its batch id) has none
    if entries:
        manifest_name = f"manifest-{uuid.uuid4()}-0"
        written.append(t.manifest_path(manifest_name))
        size = write_metadata(t.storage, f"{MANIFEST_DIR}/{manifest_name}", manifest_template, entries, "manifest")
        delta_metas.append(_manifest_meta(manifest_name, size, adds, deletes, schema))
    delta_change = sum(e["_FILE"]["_ROW_COUNT"] for e in adds) - sum(e["_FILE"]["_ROW_COUNT"] for e in deletes)
    changelog_meta = None
    if changelog:  # the changelog files (`changelog-producer` input): a manifest of their own
        changelog_name = f"manifest-{uuid.uuid4()}-0"
        written.append(t.manifest_path(changelog_name))
        changelog_size = write_metadata(t.storage, f"{MANIFEST_DIR}/{changelog_name}", manifest_template, changelog,
                                        "manifest")
        changelog_meta = _manifest_meta(changelog_name, changelog_size, changelog, [], schema)
    needed = {identifier(e) for e in (*deletes, *kept)}  # `kept`: files whose new vectors this commit names
    base = snapshot
    user = str(uuid.uuid4())  # a batch writer's commit user: a fresh UUID, as Java's
    for attempt in range(COMMIT_TRIES):
        if base is not snapshot and base is not None and check is not None:
            check(base)
        live = {identifier(f.record) for f in t.live_files(base)} if base is not snapshot else needed
        if not needed <= live:
            raise CompactionConflictError(
                f"another commit to Paimon table {t.name} replaced {len(needed - live)} input file(s) of this "
                f"compaction (snapshot {(base or {}).get('id')}); nothing was committed")
        if base is not snapshot and base is not None:  # Java's other conflict checks, on the newer snapshot
            problem = lsm_conflict(t, base, adds, deletes, schema)
            if problem is not None:
                raise CompactionConflictError(f"another commit to Paimon table {t.name} (snapshot {base['id']}) "
                                              f"conflicts with this {kind.lower()}: {problem}; nothing was committed")
        index_manifest = (base or {}).get("indexManifest")
        if index_changes:
            now = index_entries(t, base) if base is not snapshot else before
            if any(_bucket_index_name(now, p, b) != name for (p, b), name in index_files.items()):
                raise CompactionConflictError(
                    f"another commit to Paimon table {t.name} changed the deletion vectors of a bucket this "
                    f"compaction changes (snapshot {(base or {}).get('id')}); nothing was committed")
            index_manifest = _write_index_manifest(t, base, index_changes, schema, written)
        unique = uuid.uuid4()
        base_list, delta_list = f"manifest-list-{unique}-0", f"manifest-list-{unique}-1"
        previous = [m for n in ((base or {}).get("baseManifestList"), (base or {}).get("deltaManifestList")) if n
                    for m in t.manifest_list(n)]
        written += [t.manifest_path(base_list), t.manifest_path(delta_list)]
        base_size = write_metadata(t.storage, f"{MANIFEST_DIR}/{base_list}", list_template, previous, "manifest list")
        delta_size = write_metadata(t.storage, f"{MANIFEST_DIR}/{delta_list}", list_template, delta_metas,
                                    "manifest list")
        new_id = int(base["id"]) + 1 if base is not None else 1
        document = _snapshot_json(base, new_id, schema.id, base_list, base_size, delta_list, delta_size,
                                  delta_change, user, kind, properties)
        if changelog_meta is not None:
            changelog_list = f"manifest-list-{unique}-2"
            written.append(t.manifest_path(changelog_list))
            document["changelogManifestList"] = changelog_list
            document["changelogManifestListSize"] = write_metadata(
                t.storage, f"{MANIFEST_DIR}/{changelog_list}", list_template, [changelog_meta], "manifest list")
            document["changelogRecordCount"] = sum(e["_FILE"]["_ROW_COUNT"] for e in changelog or ())
        if index_changes:
            document["indexManifest"] = index_manifest
        document = snapshot_json(document)  # Java's field order again, after the additions
        try:
            published = _publish(t, new_id, document)
        except OutcomeUnknownError:
            # the create may have been published all the same (its answer lost): nothing this
            # commit wrote may be removed now (at worst orphans, which `remove_orphan_files`
            # deletes once they are old)
            written.clear()
            raise
        if published:
            written.clear()  # committed: from here on nothing may remove these files
            _write_latest(t, new_id)
            return new_id
        lost = [t.manifest_path(base_list), t.manifest_path(delta_list)]
        if changelog_meta is not None:
            lost.append(t.manifest_path(f"manifest-list-{unique}-2"))
        if index_changes and index_manifest is not None:
            lost.append(t.manifest_path(index_manifest))
        for path in lost:
            remove_files(t, [path])
            written.remove(path)
        time.sleep(min(0.5, 0.01 * (2 ** attempt)) * random.uniform(0.5, 1.0))
        latest = t.latest_snapshot_id()
        base = t.snapshot(latest if latest is not None and latest >= new_id else new_id)
    raise CompactionConflictError(f"gave up committing to Paimon table {t.name} after {COMMIT_TRIES} lost races; "
                                  f"nothing was committed")


def _manifest_meta(name: str, size: int, adds: list[dict], deletes: list[dict], schema: PaimonSchema) -> dict:
    """A manifest list's record of a manifest: its counts and the exact ranges Java prunes
    whole manifests by (partition statistics, buckets, levels)."""
    entries = deletes + adds
    return {
        "_VERSION": 2, "_FILE_NAME": name, "_FILE_SIZE": size, "_NUM_ADDED_FILES": len(adds),
        "_NUM_DELETED_FILES": len(deletes), "_PARTITION_STATS": _partition_stats(entries, schema),
        "_SCHEMA_ID": schema.id, "_MIN_BUCKET": min(e["_BUCKET"] for e in entries),
        "_MAX_BUCKET": max(e["_BUCKET"] for e in entries),
        "_MIN_LEVEL": min(e["_FILE"]["_LEVEL"] for e in entries),
        "_MAX_LEVEL": max(e["_FILE"]["_LEVEL"] for e in entries),
        "_MIN_ROW_ID": None, "_MAX_ROW_ID": None, "_TOTAL_BUCKETS": entries[0]["_TOTAL_BUCKETS"],
        "_EXTRA_FILES": None}


def lsm_conflict(t: PaimonTable, base: dict, adds: list[dict], deletes: list[dict],
                 schema: PaimonSchema) -> str | None:
    """What Java's commit conflict checks would find if `adds` and `deletes` were committed on
    `base` (None: nothing): a bucket count other than the one the partition's files have
    (``checkBucketKeepSame``), or two files of one level above 0 of a bucket whose key ranges
    overlap ("LSM conflicts detected")."""
    gone = {identifier(e) for e in deletes}
    live = [f for f in t.live_files(base) if identifier(f.record) not in gone]
    totals = {(f.partition_bytes, f.total_buckets) for f in live}
    partitions = {p for p, _ in totals}
    for e in adds:
        if e["_PARTITION"] in partitions and (e["_PARTITION"], e["_TOTAL_BUCKETS"]) not in totals:
            return f"bucket {e['_BUCKET']} was written for {e['_TOTAL_BUCKETS']} buckets, the partition now has others"
    if not schema.primary_keys:
        return None
    by_run: dict[tuple, list] = {}
    for f in [*live, *(t.entry_file(e, schema) for e in adds)]:
        if f.level > 0:
            by_run.setdefault((f.partition_bytes, f.bucket, f.level), []).append(f)
    for (_, bucket, level), files in by_run.items():
        files.sort(key=lambda f: (f.min_key, f.max_key))
        for a, b in itertools.pairwise(files):
            if not a.max_key < b.min_key:
                return (f"level {level} of bucket {bucket} would hold overlapping files {a.file_name} and "
                        f"{b.file_name}")
    return None


def _snapshot_json(base: dict | None, new_id: int, schema_id: int, base_list: str, base_size: int, delta_list: str,
                   delta_size: int, delta_change: int, user: str, kind: str = "COMPACT",
                   properties: Mapping[str, str] | None = None) -> dict:
    """The next snapshot's fields in Java's order (`codec.json_files.snapshot_json`): what
    carries over from `base` (statistics, a UUID when the table's snapshots have one, ...)
    and this commit's, its `properties` too (a commit's own, as Java's committable gives them:
    never carried over); a batch commit's identifier is Long.MAX_VALUE."""
    base = base or {}
    carried = {k: v for k, v in base.items() if k in ("version", "statistics", "nextRowId")}
    fields = {
        **carried, "version": base.get("version", 3), "id": new_id, "schemaId": schema_id,
        "baseManifestList": base_list, "baseManifestListSize": base_size,
        "deltaManifestList": delta_list, "deltaManifestListSize": delta_size,
        "indexManifest": base.get("indexManifest"), "commitUser": user,
        "commitIdentifier": LONG_MAX, "commitKind": kind, "timeMillis": int(time.time() * 1000), "logOffsets": {},
        "totalRecordCount": int(base.get("totalRecordCount") or 0) + delta_change,
        "deltaRecordCount": delta_change, "changelogRecordCount": 0,
    }
    if properties:
        fields["properties"] = {str(k): str(v) for k, v in properties.items()}
    if "uuid" in base:
        fields["uuid"] = str(uuid.uuid4())
    if "writerVersion" in base:
        fields["writerVersion"] = "mergetree"
    return snapshot_json(fields)


def _publish(t: PaimonTable, snapshot_id: int, snapshot: dict) -> bool:
    """Create snapshot-<id> by the store's conditional create: True if this call created it."""
    name = t.snapshot_name(snapshot_id)
    data = dumps(snapshot)  # Jackson's layout, as Java writes snapshots
    try:
        t.storage.create(name, data)  # atomic and exclusive: fails if another committer took the id
        return True
    except ObjectExistsError:
        return _is_own(t, name, data)


def _is_own(t: PaimonTable, name: str, data: bytes) -> bool:
    """Whether the snapshot a conditional create found is this commit's own: an object store
    retries a PUT whose answer was lost, and the retry finds the first attempt's object.  The
    bytes name this commit's fresh manifest lists and commit user, so no other commit's
    snapshot equals them.  (Locally the link either happened or not: no retry to mistake.)"""
    if t.is_local:
        return False
    try:
        return t.storage.read(name) == data
    except ObjectNotFoundError:
        return False


def _write_latest(t: PaimonTable, snapshot_id: int) -> None:
    """The LATEST hint, best effort: readers check it forward, so a stale one only costs a request."""
    with contextlib.suppress(StorageError):
        t.storage.write(LATEST_HINT, str(snapshot_id).encode())
