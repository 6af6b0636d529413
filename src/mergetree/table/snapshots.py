"""Snapshots and manifests: which data files make up each version of a table.

A commit is the exclusive creation of `snapshot/snapshot-<id>.json` through the
table's store (`Store.create`: `os.link` of a complete temporary file on a local
disk, a conditional PUT on an object store), which fails if another committer
took that id first.  Data files and manifests are
written before the snapshot, so a crash at any point leaves either the old
version or the new one, plus unreferenced files that `remove_orphan_files`
deletes.  A snapshot references a *base* manifest list (the table before the
commit) and a *delta* list (this commit's changes), so a commit writes
metadata proportional to its change; the base is folded into one manifest once
it holds `manifest.merge-min-count` manifests.

Every metadata file carries a `format-version`; every read checks the file's
shape and raises `CorruptTableError` naming the file when it is missing,
truncated or garbled.
"""
from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import CommitConflictError, CorruptTableError, SnapshotNotFoundError, UnsupportedFormatError
from ..storage import ObjectExistsError, ObjectNotFoundError, StorageError, Store
from . import paths
from .buckets import bucket_ids
from .dvfiles import write_index_file
from .filecache import FileCache
from .files import DataFileMeta, DataFileWriter, build_file_indexes, remove_uncommitted
from .objects import is_local, list_names, read_if_exists, table_path
from .values import decode_value, encode_value

__all__ = ["FORMAT_VERSION", "FileEntry", "Snapshot", "SnapshotStore", "add_manifests", "canonical_partition",
           "changelog_snapshot", "check_format_version", "encode_json", "parse_json", "read_json"]

# The newest table format this code reads (and every older one).  Each metadata file is written
# with the oldest version that can describe it, so older mergetree versions keep reading a table
# until it holds something they would misread: version 2 adds the `sequence_shift` of a data file
# (a write renumbered after losing a commit race); version 3 the `deletion_vector` of a data file
# (a table with `deletion-vectors.enabled`: rows newer versions replaced, in an index file).
FORMAT_VERSION = 3
COMMIT_KINDS = ("APPEND", "COMPACT", "OVERWRITE")


def check_format_version(document: dict, relative: str) -> None:
    """Refuse metadata written by a newer mergetree (files without a version are version 1)."""
    version = document.get("format-version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise CorruptTableError(f"{relative}: format-version must be an integer, not {version!r}", path=relative)
    if version > FORMAT_VERSION:
        raise UnsupportedFormatError(
            f"{relative} has table format version {version}; this mergetree reads versions up to "
            f"{FORMAT_VERSION}: upgrade mergetree to read the table")


def _full_path(storage: Store, relative: str) -> str:
    """A table file's path for messages: the local path, or the object's URI."""
    return os.path.join(storage.root, relative) if is_local(storage) else storage.describe(relative)  # type: ignore[attr-defined]


def read_json(storage: Store, relative: str, what: str) -> dict:
    """A metadata file as a dict, or CorruptTableError naming it.  On an object store, a
    failing request (credentials, network) is the store's error, not a damaged table."""
    root = table_path(storage)
    path = _full_path(storage, relative)
    try:
        raw = storage.read(relative)
    except ObjectNotFoundError:
        raise CorruptTableError(f"the {what} {relative} of table {root} is missing", path=path) from None
    except StorageError as exc:
        if not is_local(storage):
            raise
        raise CorruptTableError(f"cannot read the {what} {relative} of table {root}: {exc}", path=path) from None
    return parse_json(raw, storage, relative, what)


def parse_json(raw: bytes, storage: Store, relative: str, what: str) -> dict:
    """A metadata file's bytes as a dict, or CorruptTableError naming it."""
    root = table_path(storage)
    path = _full_path(storage, relative)
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        detail = "the file is empty" if not raw.strip() else f"not valid JSON ({exc})"
        raise CorruptTableError(f"the {what} {relative} of table {root} is damaged: {detail}",
                                path=path) from None
    if not isinstance(document, dict):
        raise CorruptTableError(f"the {what} {relative} of table {root} is damaged: not a JSON object",
                                path=path)
    check_format_version(document, relative)
    return document


def encode_json(document: dict, version: int = 1) -> bytes:
    """A metadata file's bytes, with its format version."""
    return json.dumps({"format-version": version, **document}, indent=1).encode()


_NAN = float("nan")


def canonical_partition(values: tuple) -> tuple:
    """Partition values with every NaN the same NaN object: tuples compare items by identity
    before equality, so only then are two partitions holding NaN one dict key (one group for
    reads, one sequence counter for writes)."""
    if any(isinstance(v, float) and v != v for v in values):
        return tuple(_NAN if isinstance(v, float) and v != v else v for v in values)
    return values


@dataclass(frozen=True)
class FileEntry:
    """A data file and where it lives."""

    partition: tuple
    bucket: int
    file: DataFileMeta

    def __post_init__(self) -> None:
        object.__setattr__(self, "partition", canonical_partition(self.partition))

    def to_json(self, kind: str) -> dict:
        return {"kind": kind, "partition": [encode_value(v) for v in self.partition],
                "bucket": self.bucket, "file": self.file.to_json()}

    @classmethod
    def from_json(cls, d: dict) -> FileEntry:
        return cls(tuple(decode_value(v) for v in d["partition"]), d["bucket"], DataFileMeta.from_json(d["file"]))


@dataclass(frozen=True)
class Snapshot:
    id: int
    schema_id: int
    commit_kind: str            # APPEND | COMPACT | OVERWRITE
    time_millis: int
    base_manifest_list: str
    delta_manifest_list: str
    total_record_count: int
    delta_record_count: int
    commit_retries: int = 0     # lost commit races before this one won (fairness, in `history`)
    # the commit's changelog files (`changelog-producer` input or lookup), in a manifest list
    changelog_manifest_list: str = ""
    # what the committer says of its commit (str -> str): a streaming sink's query and batch id
    properties: dict = field(default_factory=dict, hash=False, compare=False)
    # a Paimon snapshot's index manifest (deletion-vector index files); never in mergetree's own
    index_manifest: str = ""

    def to_json(self) -> dict:
        out = dict(self.__dict__)
        for name in ("changelog_manifest_list", "properties", "index_manifest"):  # absent where unused, as before them
            if not out[name]:
                del out[name]
        return out

    @classmethod
    def from_json(cls, d: dict, snapshot_id: int) -> Snapshot:
        """Parse and check a snapshot document (ValueError says what is wrong)."""
        values: dict[str, Any] = {}
        for name, kind in (("id", int), ("schema_id", int), ("commit_kind", str), ("time_millis", int),
                           ("base_manifest_list", str), ("delta_manifest_list", str),
                           ("total_record_count", int), ("delta_record_count", int)):
            value = d.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ValueError(f"field {name!r} is {value!r}, not a {kind.__name__}")
            values[name] = value
        retries = d.get("commit_retries", 0)
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError(f"field 'commit_retries' is {retries!r}, not a count")
        values["commit_retries"] = retries
        changelog = d.get("changelog_manifest_list", "")
        if not isinstance(changelog, str) or (changelog and not paths.is_manifest_list(changelog)):
            raise ValueError(f"field 'changelog_manifest_list' is {changelog!r}, not a manifest list's name")
        values["changelog_manifest_list"] = changelog
        properties = d.get("properties", {})
        if not isinstance(properties, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                       for k, v in properties.items()):
            raise ValueError(f"field 'properties' is {properties!r}, not an object of strings")
        values["properties"] = properties
        if values["id"] != snapshot_id:
            raise ValueError(f"it says it is snapshot {values['id']}")
        if values["commit_kind"] not in COMMIT_KINDS:
            raise ValueError(f"unknown commit kind {values['commit_kind']!r}")
        for name in ("base_manifest_list", "delta_manifest_list"):
            if values[name] and not paths.is_manifest_list(values[name]):
                raise ValueError(f"{name} {values[name]!r} is not a manifest list's name")
        return cls(**values)


def recovery_hint(root: str, damaged_id: int, intact: Sequence[int]) -> str:
    """How to get past a damaged snapshot file (said in errors and in docs/FORMAT.md)."""
    older = [i for i in intact if i < damaged_id]
    if not older:
        return "no older snapshot is left to fall back to."
    return (f"older snapshots are intact (newest: {older[-1]}); read one with "
            f"Table.open(path, check=False).read(snapshot={older[-1]}), or run `mergetree repair {root}` "
            f"to set the damaged snapshot file aside so the table continues from snapshot {older[-1]} "
            f"(the changes committed after it are lost)")


CACHED_MANIFESTS = 1024  # parsed manifests a store keeps (a manifest holds up to a few thousand entries)
CACHED_SNAPSHOTS = 64  # parsed snapshots an object store's reader keeps


def add_manifests(store: Any, manifest_list: str, out: dict[str, tuple[Store, str]]) -> list[str]:
    """Put a manifest list and the manifests it names into `out` (name -> (store, object name):
    both formats keep them in ``manifest/``); the manifests' names."""
    if not manifest_list:
        return []
    names = store.manifest_names(manifest_list)
    for name in (manifest_list, *names):
        out[f"{paths.MANIFEST_DIR}/{name}"] = (store.storage, f"{paths.MANIFEST_DIR}/{name}")
    return names


class SnapshotStore:
    """Reads and commits the snapshots of one table, through its store."""

    def __init__(self, storage: Store, partition_by: Sequence[str] = (), manifest_merge_min_count: int = 30) -> None:
        self.storage = storage
        self.root = table_path(storage)
        self.partition_by = tuple(partition_by)
        self.merge_min_count = manifest_merge_min_count
        # Manifests are written once under unique names, so a parsed one stays true while its
        # file is unchanged; every read plans from the same chain of manifests, and parsing them
        # again dominated small reads.  Local: keyed on (size, mtime_ns); an object store: on the
        # name alone (no HEAD per manifest).  Manifest lists likewise.
        self._manifests: FileCache[tuple[tuple[str, FileEntry], ...]] = FileCache(max_entries=CACHED_MANIFESTS)
        self._lists: FileCache[list[str]] = FileCache(max_entries=CACHED_MANIFESTS)
        # An object store's snapshots, by name: each is created once (a conditional create) and
        # never rewritten, so a warm read needs no request for the one it plans from.
        self._snapshots: FileCache[Snapshot] = FileCache(max_entries=CACHED_SNAPSHOTS)

    def _path(self, relative: str) -> str:
        return _full_path(self.storage, relative)

    # -- where data files go (the format's layout; a Paimon table's store has its own) -----
    def bucket_directory(self, partition: tuple, bucket: int, beside: Sequence[DataFileMeta] = ()) -> str:
        """A bucket's directory (`beside`: files of the bucket, for a format that places new files by them)."""
        return paths.bucket_directory(self.partition_by, partition, bucket)

    def open_file(self, relative: str, schema: Any, options: Any, partition: tuple, bucket: int, level: int,
                  sorted_by: Sequence[str] = (), changelog: bool = False) -> DataFileWriter:
        """A new data file (a changelog file with `changelog`) in bucket directory `relative`."""
        name = paths.changelog_file_name(relative) if changelog else paths.data_file_name(relative)
        return DataFileWriter(self.storage, relative, schema, level, options, sorted_by, name)

    def received(self, entries: Sequence[Any], base: Snapshot | None) -> list[Any]:
        """Entries a Spark task shipped as JSON (of work planned on snapshot `base`), ready to be
        read and committed here (every field is in the JSON)."""
        return list(entries)

    def task_state(self, indexes: Sequence[str]) -> Any:
        """What a commit on the driver needs of the index files a task's store wrote (nothing:
        a deletion-vector reference names its index file)."""
        return None

    def adopt_task_state(self, state: Any) -> None:
        """Take over a task's `task_state`."""

    def remove_uncommitted(self, files: Sequence[DataFileMeta]) -> None:
        """Delete new files (and their sidecars) no snapshot references, as cleanup (never raising)."""
        remove_uncommitted(self.storage, [n for m in files for n in [m.file_name, *m.sidecars()] if self.owns(n)])

    def remove_journaled(self, lines: Sequence[str]) -> None:
        """Delete the files a task's journal names (`table.journal`), as cleanup (never raising)."""
        remove_uncommitted(self.storage, [n for n in lines if self.owns(n)])

    @property
    def described(self) -> str:
        return f"table {self.root}"

    def bucket_ids(self, rows: Any, schema: Any) -> Any:
        """Each row's bucket (an int32 array): Spark's ``pmod(hash(bucket key), buckets)``."""
        return bucket_ids(rows, list(schema.bucket_key), schema.buckets)

    def is_changelog(self, relative: str) -> bool:
        return paths.is_changelog_file(relative, self.partition_by)

    # a write renumbered after a lost race moves its numbers in its manifest entries (`sequence_shift`)
    sequences_in_manifest = True

    def owns(self, relative: str) -> bool:
        """Could this table's writers have written `relative` (never delete anything else)?"""
        return paths.is_owned(relative, self.partition_by)

    def write_deletion_vectors(self, partition: tuple, bucket: int, directory: str, vectors: Any,
                               staying: Sequence[DataFileMeta]) -> dict[str, Any]:
        """Write the new deletion vectors of a bucket's files (file name -> positions) as one
        index file in the bucket's `directory`; each file's `DeletionVectorRef` (`staying`, the
        bucket's other files, keep the vectors they have)."""
        return write_index_file(self.storage, directory, vectors)

    # -- consumers' files (the rules are `consumers`') -----------------------------------
    def consumer_file(self, consumer_id: str) -> str:
        """A consumer's file under the table (ValueError: an id the table cannot name a file by)."""
        return paths.consumer_file(consumer_id)

    def consumer_id_of(self, relative: str) -> str | None:
        return paths.consumer_id_of(relative)

    def consumer_bytes(self, next_snapshot: int, updated: int) -> bytes:
        return encode_json({"nextSnapshot": next_snapshot, "updated": updated})

    consumer_time_in_file = True

    def consumer_updated(self, relative: str, document: dict) -> object:
        """When the consumer last recorded its progress (milliseconds): its file says."""
        return document.get("updated")

    def check_rewrite(self, files: Sequence[DataFileMeta]) -> None:
        """Refuse a rewrite of these files before anything is written (every file of
        mergetree's own format reads under the latest schema)."""

    def refuses(self, kind: str) -> str | None:
        """Why the engine may not commit a change of `kind` here (None: it may)."""
        return None

    # -- housekeeping: the files a snapshot uses, and which of the table's may go --------
    def snapshot_file(self, snapshot_id: int) -> str:
        return paths.snapshot_file(snapshot_id)

    def retained_changelog_file(self, snapshot_id: int) -> str:
        return paths.retained_changelog_file(snapshot_id)

    def tagged(self) -> list[Snapshot]:
        """The snapshots tags hold (mergetree's own format has no tags)."""
        return []

    def used_files(self, snapshot: Snapshot, changelog_only: bool = False) -> dict[str, tuple[Store, str]]:
        """Every file `snapshot` uses — manifest lists, manifests, data files with their
        sidecars and deletion-vector index files, its changelog — as name -> (store, object
        name); with `changelog_only`, what its changelog needs (kept after it expired)."""
        out: dict[str, tuple[Store, str]] = {}

        def add(name: str) -> None:
            out[name] = (self.storage, name)

        def manifests(manifest_list: str) -> list[str]:
            return add_manifests(self, manifest_list, out)

        def add_file(meta: DataFileMeta) -> None:
            for name in (meta.file_name, *meta.sidecars()):
                add(name)
            if meta.deletion_vector is not None and meta.deletion_vector.index is not None:
                add(meta.deletion_vector.index)

        if not changelog_only:
            manifests(snapshot.base_manifest_list)
            manifests(snapshot.delta_manifest_list)
            for entry in self.live_files(snapshot).values():
                add_file(entry.file)
        for manifest in manifests(snapshot.changelog_manifest_list):
            for _, entry in self.read_manifest(manifest):  # a changelog manifest only adds
                add_file(entry.file)
        return out

    def snapshot_retention(self) -> tuple[int, int | None, float]:
        """(minimum count, maximum count, age in seconds) expiry keeps by default: Paimon's."""
        return 10, None, 3600.0

    def expire_limit(self) -> int:
        return 10

    def earliest_id(self) -> int | None:
        ids = self.snapshot_ids()
        return ids[0] if ids else None

    def expired_to(self, earliest: int | None) -> None:
        """Snapshots below `earliest` were expired (a format with an EARLIEST hint writes it)."""

    def native_options(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Option changes in the engine's names (`options.KEY_*`) as this format names them."""
        return changes

    def with_side_data(self, entry: FileEntry, rows: Any, schema: Any, options: Any) -> FileEntry:
        """The entry of a live file given the bitmap sidecar and pre-aggregates `options` declare,
        built from its rows (every row, in file order) — the file itself unchanged."""
        meta = entry.file
        indexes = build_file_indexes(self.storage, meta.file_name, rows, schema, replace(options, bloom_columns=()),
                                     meta.sorted_by)
        return FileEntry(entry.partition, entry.bucket, meta.with_indexes({**meta.indexes, **indexes}))

    def clustered_level(self, options: Any) -> int:
        """The level the optimizer writes files it laid out at (mergetree's own format marks
        them in their manifest entries instead: level 0)."""
        return 0

    def cleanup_refusal(self) -> str | None:
        """Why expiry and orphan removal may not run here (None: they may)."""
        return None

    def changelog_retention(self, options: Any) -> tuple[bool, Any]:
        """(whether an expiring snapshot's changelog is kept, the options whose `changelog_*`
        values expire the kept ones — None: they stay): kept when any `changelog.*` option is set."""
        return options.retains_changelog, options

    def keeps_changelog_of(self, snapshot: Snapshot) -> bool:
        """Whether an expiring snapshot leaves a kept changelog (one with changelog files)."""
        return bool(snapshot.changelog_manifest_list)

    def kept_changelogs_changed(self) -> None:
        """The kept changelogs changed (a format with hints for them writes them)."""

    def may_be_orphan(self, relative: str) -> bool:
        """Could `relative` be a file of this table that no snapshot needs once none names it
        (never a published snapshot, the schema, a kept changelog or a consumer)?"""
        if not self.owns(relative):
            return False
        itself = (paths.snapshot_id_of(relative) is not None or relative.startswith(paths.SCHEMA_DIR + "/")
                  or paths.retained_changelog_id_of(relative) is not None
                  or paths.consumer_id_of(relative) is not None)
        return not itself or paths.is_temporary(relative)

    def ensure_directories(self) -> None:
        """A local table's directories (an object store has no directories)."""
        if is_local(self.storage):
            os.makedirs(os.path.join(self.root, paths.SNAPSHOT_DIR), exist_ok=True)
            os.makedirs(os.path.join(self.root, paths.MANIFEST_DIR), exist_ok=True)

    def _cached(self, cache: FileCache, relative: str, load: Any) -> Any:
        if is_local(self.storage):
            return cache.get(os.path.join(self.root, relative), load)
        return cache.get_keyed((self.storage.uri, relative), load)

    # -- reading ---------------------------------------------------------------------
    def snapshot_ids(self) -> list[int]:
        names = list_names(self.storage, paths.SNAPSHOT_DIR)
        ids = [paths.snapshot_id_of(f"{paths.SNAPSHOT_DIR}/{name}") for name in names]
        return sorted(i for i in ids if i is not None)

    def latest_id(self) -> int | None:
        """The newest snapshot's id; CorruptTableError if the LATEST hint shows that a newer
        snapshot was committed and its file is gone."""
        return self._latest_with_hint()[0]

    def latest(self) -> Snapshot | None:
        """The newest snapshot (None: none yet)."""
        latest = self.latest_id()
        return None if latest is None else self.snapshot(latest)

    def _latest_with_hint(self) -> tuple[int | None, int | None]:
        """(the newest snapshot's id, the LATEST hint read to find it)."""
        # The hint first: it is written only after its snapshot is published, so a listing
        # taken after reading it holds that snapshot (read the other way round, a commit
        # landing in between would look like a lost snapshot).
        hint = self.latest_hint()
        if hint is not None and not is_local(self.storage):
            newest = self._newest_from_hint(hint)
            if newest is not None:
                return newest, hint
        ids = self.snapshot_ids()
        latest = ids[-1] if ids else None
        if hint is not None and (latest is None or hint > latest):
            relative = paths.snapshot_file(hint)
            raise CorruptTableError(
                f"the snapshot {relative} of table {self.root} is missing (the table's {paths.LATEST_HINT} "
                f"says snapshot {hint} was committed); {recovery_hint(self.root, hint, ids)}",
                path=self._path(relative))
        return latest, hint

    def _newest_from_hint(self, hint: int) -> int | None:
        """The newest snapshot found from the hint without a listing (an object store's LIST is
        a round trip, and ids are consecutive): the hint's snapshot (cached once read), then
        each next id until one is absent — one GET when the hint is current.  None when the
        hint's snapshot cannot be read (expired, lost or damaged): the listing decides."""
        try:
            self.snapshot(hint)
        except (SnapshotNotFoundError, CorruptTableError):
            return None
        newest = hint
        while True:
            relative = paths.snapshot_file(newest + 1)
            raw = read_if_exists(self.storage, relative)
            if raw is None:
                return newest
            newest += 1
            try:
                parse = functools.partial(self._read_snapshot, newest, raw)
                self._snapshots.get_keyed((self.storage.uri, relative), parse)
            except CorruptTableError:
                return newest  # reading it again raises with the recovery hint

    def latest_hint(self) -> int | None:
        try:
            raw = read_if_exists(self.storage, paths.LATEST_HINT)
        except StorageError:
            if not is_local(self.storage):
                raise
            return None
        text = (raw or b"").decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None  # only a hint: an unreadable one says nothing

    def write_latest_hint(self, snapshot_id: int | None) -> None:
        if snapshot_id is None:
            self.storage.delete(paths.LATEST_HINT)
        else:  # whole or not at all: a temporary file and a rename locally, one PUT on an object store
            self.storage.write(paths.LATEST_HINT, str(snapshot_id).encode())

    def update_latest_hint(self, snapshot_id: int, current: int | None = None) -> None:
        """Raise the hint to `snapshot_id` (a slower committer never lowers it much: the next
        commit raises it again).  `current`: the hint as read just before, if it was."""
        if current is None:
            current = self.latest_hint()
        if current is None or current < snapshot_id:
            self.write_latest_hint(snapshot_id)

    def snapshot(self, snapshot_id: int) -> Snapshot:
        if is_local(self.storage):  # a local read is cheap, and keeps a replaced file's truth
            return self._read_snapshot(snapshot_id)
        return self._snapshots.get_keyed((self.storage.uri, paths.snapshot_file(snapshot_id)),
                                         lambda: self._read_snapshot(snapshot_id))

    def _read_snapshot(self, snapshot_id: int, raw: bytes | None = None) -> Snapshot:
        """Snapshot `snapshot_id`, parsed from `raw` (its file's bytes) or read."""
        relative = paths.snapshot_file(snapshot_id)
        try:  # read, not checked first: one request on an object store
            raw = self.storage.read(relative) if raw is None else raw
        except ObjectNotFoundError:
            known = self.snapshot_ids()
            have = f"snapshots {known[0]}..{known[-1]} exist" if known else "the table has no snapshots"
            raise SnapshotNotFoundError(
                f"snapshot {snapshot_id} does not exist (expired or never committed); {have}") from None
        except StorageError as exc:
            if not is_local(self.storage):
                raise
            raise CorruptTableError(f"cannot read the snapshot {relative} of table {self.root}: {exc}; "
                                    f"{recovery_hint(self.root, snapshot_id, self.snapshot_ids())}",
                                    path=self._path(relative)) from None
        try:
            return Snapshot.from_json(parse_json(raw, self.storage, relative, "snapshot"), snapshot_id)
        except (CorruptTableError, ValueError) as exc:
            detail = str(exc) if isinstance(exc, CorruptTableError) else \
                f"the snapshot {relative} of table {self.root} is damaged: {exc}"
            raise CorruptTableError(f"{detail}; {recovery_hint(self.root, snapshot_id, self.snapshot_ids())}",
                                    path=self._path(relative)) from None

    # -- changelog kept past its snapshot (`changelog.*` retention) ------------------------
    def retained_changelog_ids(self) -> list[int]:
        """Ids of expired snapshots whose metadata is kept for their changelog, ascending."""
        names = list_names(self.storage, paths.CHANGELOG_DIR)
        ids = [paths.retained_changelog_id_of(f"{paths.CHANGELOG_DIR}/{name}") for name in names]
        return sorted(i for i in ids if i is not None)

    def retained_changelog(self, snapshot_id: int) -> Snapshot | None:
        """The kept metadata of expired snapshot `snapshot_id` (its changelog manifest list is
        what stays readable), or None when none is kept."""
        relative = paths.retained_changelog_file(snapshot_id)
        raw = read_if_exists(self.storage, relative)
        if raw is None:
            return None
        try:
            return Snapshot.from_json(parse_json(raw, self.storage, relative, "kept changelog"), snapshot_id)
        except ValueError as exc:
            raise CorruptTableError(f"the kept changelog {relative} of table {self.root} is damaged: {exc}",
                                    path=self._path(relative)) from None

    def manifest_names(self, manifest_list: str) -> list[str]:
        if not manifest_list:
            return []
        relative = f"{paths.MANIFEST_DIR}/{manifest_list}"
        if is_local(self.storage):  # cheap to read again, and a damaged one is noticed as it was
            return self._load_manifest_list(relative)
        return list(self._cached(self._lists, relative, lambda: self._load_manifest_list(relative)))

    def _load_manifest_list(self, relative: str) -> list[str]:
        names = read_json(self.storage, relative, "manifest list").get("manifests")
        if not isinstance(names, list) or not all(isinstance(n, str) and paths.is_manifest(n) for n in names):
            raise CorruptTableError(f"the manifest list {relative} of table {self.root} is damaged: "
                                    f"'manifests' is not a list of manifest names",
                                    path=self._path(relative))
        return names

    def read_manifest(self, name: str) -> tuple[tuple[str, FileEntry], ...]:
        """The (kind, entry) pairs of a manifest, checked; parsed again only when the file's
        size or modification time changed (a damaged or replaced manifest is still noticed)."""
        return self._cached(self._manifests, f"{paths.MANIFEST_DIR}/{name}", lambda: self._load_manifest(name))

    def _load_manifest(self, name: str) -> tuple[tuple[str, FileEntry], ...]:
        relative = f"{paths.MANIFEST_DIR}/{name}"
        document = read_json(self.storage, relative, "manifest")
        try:
            out = []
            for e in document["entries"]:
                entry = FileEntry.from_json(e)
                if e["kind"] not in ("ADD", "DELETE"):
                    raise ValueError(f"unknown entry kind {e['kind']!r}")
                if not (paths.is_data_file(entry.file.file_name, self.partition_by)
                        or paths.is_changelog_file(entry.file.file_name, self.partition_by)):
                    raise ValueError(f"{entry.file.file_name!r} is not a data file name of this table")
                for sidecar in entry.file.sidecars():
                    if not paths.is_sidecar(sidecar, self.partition_by):
                        raise ValueError(f"{sidecar!r} is not a sidecar file name of this table")
                dv = entry.file.deletion_vector
                if dv is not None and dv.index is not None and \
                        not paths.is_deletion_vector_file(dv.index, self.partition_by):
                    raise ValueError(f"{dv.index!r} is not a deletion-vector file name of this table")
                out.append((e["kind"], entry))
            return tuple(out)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptTableError(f"the manifest {relative} of table {self.root} is damaged: {exc!r}",
                                    path=self._path(relative)) from None

    def live_files(self, snapshot: Snapshot | None) -> dict[str, FileEntry]:
        """file name -> entry for every data file of the snapshot."""
        if snapshot is None:
            return {}
        names = self.manifest_names(snapshot.base_manifest_list) + self.manifest_names(snapshot.delta_manifest_list)
        return self._fold(names)

    def _fold(self, manifest_names: Iterable[str]) -> dict[str, FileEntry]:
        live: dict[str, FileEntry] = {}
        for name in manifest_names:
            for kind, entry in self.read_manifest(name):
                if kind == "ADD":
                    live[entry.file.file_name] = entry
                else:
                    live.pop(entry.file.file_name, None)
        return live

    # -- writing ---------------------------------------------------------------------
    def _publish(self, relative: str, document: dict, version: int = 1) -> None:
        # whole or not at all: a temporary file renamed locally, one PUT on an object store
        self.storage.write(relative, encode_json(document, version))

    def _remember(self, cache: FileCache, relative: str, value: Any) -> None:
        """Put what this store just published into its cache (an object store's: by name), so
        the reads that follow a commit do not fetch it back."""
        if not is_local(self.storage):
            cache.get_keyed((self.storage.uri, relative), lambda: value)

    def _write_manifest(self, entries: list[tuple[str, FileEntry]]) -> str:
        name = paths.manifest_name()
        version = (3 if any(e.file.deletion_vector is not None for _, e in entries)
                   else 2 if any(e.file.sequence_shift for _, e in entries) else 1)
        relative = f"{paths.MANIFEST_DIR}/{name}"
        self._publish(relative, {"entries": [e.to_json(kind) for kind, e in entries]}, version)
        self._remember(self._manifests, relative, tuple(entries))
        return name

    def _write_manifest_list(self, manifests: list[str]) -> str:
        name = paths.manifest_list_name()
        relative = f"{paths.MANIFEST_DIR}/{name}"
        self._publish(relative, {"manifests": manifests})
        self._remember(self._lists, relative, list(manifests))
        return name

    def commit(self, base_id: int | None, adds: list[FileEntry], deletes: list[FileEntry], kind: str,
               schema_id: int = 0, retries: int = 0, changelog: Sequence[FileEntry] = (),
               properties: dict[str, str] | None = None) -> Snapshot:
        """Publish snapshot base_id + 1 with these changes, or raise CommitConflictError
        if another commit published it first (the caller decides how to retry; `retries`
        is recorded: how many races this change lost before).  `changelog`: the commit's
        changelog files (ADD entries of their own manifest list); `properties`: strings the
        committer records with the snapshot."""
        latest, hint = self._latest_with_hint()
        if latest != base_id:
            raise CommitConflictError(f"the table moved from snapshot {base_id} to {latest}")
        self.storage.require_conditional_create()  # never a commit that could replace another's
        self.ensure_directories()
        base = self.snapshot(base_id) if base_id is not None else None
        delta_entries = [("DELETE", e) for e in deletes] + [("ADD", e) for e in adds]
        delta_list = self._write_manifest_list([self._write_manifest(delta_entries)])
        base_manifests = []
        total = 0
        if base is not None:
            base_manifests = (self.manifest_names(base.base_manifest_list)
                              + self.manifest_names(base.delta_manifest_list))
            total = base.total_record_count
        if len(base_manifests) >= self.merge_min_count:
            live = self._fold(base_manifests)
            base_manifests = [self._write_manifest([("ADD", e) for e in live.values()])]
        base_list = self._write_manifest_list(base_manifests)
        delta_rows = sum(e.file.row_count for e in adds) - sum(e.file.row_count for e in deletes)
        changelog_list = (self._write_manifest_list([self._write_manifest([("ADD", e) for e in changelog])])
                          if changelog else "")
        snapshot = Snapshot((base_id or 0) + 1, schema_id, kind, int(time.time() * 1000), base_list, delta_list,
                            total + delta_rows, delta_rows, retries, changelog_list, dict(properties or {}))
        relative = paths.snapshot_file(snapshot.id)
        data = encode_json(snapshot.to_json())
        try:  # atomic and exclusive: fails if the id is taken
            self.storage.create(relative, data)
        except ObjectExistsError:
            if not self._is_own(relative, data):
                raise CommitConflictError(f"snapshot {snapshot.id} was committed by someone else") from None
        self._remember(self._snapshots, relative, snapshot)
        try:
            self.update_latest_hint(snapshot.id, hint)  # the hint read moments ago, not read again
        except StorageError:
            pass  # the snapshot is published: a hint left behind only costs the next reader a GET
        return snapshot

    def _is_own(self, relative: str, data: bytes) -> bool:
        """Whether the snapshot file that a conditional create found is the one this commit
        wrote: an object store retries a PUT whose answer was lost, and the retry finds the
        first attempt's object.  The bytes name this commit's own manifest lists (fresh
        random names), so no other commit's snapshot can equal them."""
        if is_local(self.storage):  # os.link either linked or did not: no retry to mistake
            return False
        try:
            return self.storage.read(relative) == data
        except ObjectNotFoundError:
            return False


def changelog_snapshot(store: Any, snapshot_id: int) -> tuple[Snapshot, bool]:
    """Commit `snapshot_id` for reading its change, from either format's store: its snapshot
    (True), or once it expired, the metadata kept for its changelog (False);
    SnapshotNotFoundError when neither exists."""
    try:
        return store.snapshot(snapshot_id), True
    except SnapshotNotFoundError:
        kept = store.retained_changelog(snapshot_id)
        if kept is None:
            raise
        return kept, False
