"""An opened table: what every part of the table layer (writes, reads, compaction,
housekeeping, the Spark jobs) works on.  Creating and opening a table happen here.

A table lives at a local path or an object-store URI; every file goes through its
`mergetree.storage.Store` (`TableDirectory.storage`), resolved once when the table is opened."""
from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import (
    CommitConflictError,
    CorruptTableError,
    InvalidArgumentError,
    MergeTreeError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFormatError,
    UnsupportedPaimonFeatureError,
)
from ..storage import ObjectExistsError, Store
from . import paths
from .files import DataFileMeta, DataFileWriter, FileOpener
from .objects import is_local, list_names, locate, storage_for, table_path
from .options import TableOptions
from .schema import TableSchema
from .snapshots import FileEntry, Snapshot, SnapshotStore, encode_json, read_json

__all__ = ["TableDirectory", "alter_options", "alter_schema", "as_path", "check_empty", "create_table", "locate",
           "lost_to_other_format", "open_or_create", "open_table"]


@dataclass(frozen=True)
class TableDirectory:
    """A table's location, fixed schema, parsed options and snapshot store.  `path` names the
    table (its absolute local path, or its URI); `storage` is where its files are."""

    path: str
    schema: TableSchema
    options: TableOptions
    store: SnapshotStore
    storage: Store

    @classmethod
    def load(cls, storage: Store, schema: TableSchema) -> TableDirectory:
        options = schema.table_options
        return cls(table_path(storage), schema, options,
                   SnapshotStore(storage, schema.partition_by, options.manifest_merge_min_count), storage)

    @property
    def described(self) -> str:
        """How messages name the table: "table <path>", or "Paimon table <db.name>"."""
        return self.store.described

    def latest_snapshot(self) -> Snapshot | None:
        return self.store.latest()

    def live_files(self, snapshot: Snapshot | None) -> dict[str, FileEntry]:
        return self.store.live_files(snapshot)

    def bucket_directory(self, partition: tuple, bucket: int, beside: Sequence[DataFileMeta] = ()) -> str:
        """Where a bucket's new files go (`beside`: the files a compaction of it rewrites)."""
        return self.store.bucket_directory(partition, bucket, beside)

    def open_file(self, partition: tuple, bucket: int, level: int, relative: str | None = None,
                  sorted_by: Sequence[str] = (), changelog: bool = False,
                  options: TableOptions | None = None) -> DataFileWriter:
        """A new data file of a bucket (with `changelog`, a changelog file), named, placed and
        written as the table's format does it; `relative`: the bucket directory (default: where
        its new files go), `options`: the writer's (default: the table's; a changelog file's
        writer builds no indexes)."""
        where = relative if relative is not None else self.bucket_directory(partition, bucket)
        return self.store.open_file(where, self.schema, None if changelog else (options or self.options),
                                    partition, bucket, level, sorted_by, changelog)

    def opener(self, partition: tuple, bucket: int, level: int, relative: str | None = None,
               sorted_by: Sequence[str] = (), options: TableOptions | None = None) -> FileOpener:
        """`open_file` for data files, as the rolling writers take it."""
        return functools.partial(self.open_file, partition, bucket, level, relative, sorted_by, False, options)

    def received(self, entries: Iterable[FileEntry], base: Snapshot | None) -> list[FileEntry]:
        """Entries a Spark task shipped as JSON, of work planned on snapshot `base`, ready to
        be read and committed here."""
        return self.store.received(list(entries), base)

    def bucket_ids(self, rows: pa.Table) -> np.ndarray:
        """Each row's bucket (int32) as the table's format places rows."""
        return self.store.bucket_ids(rows, self.schema)

    def is_changelog(self, relative: str) -> bool:
        return self.store.is_changelog(relative)

    def refuse_commit(self, kind: str) -> None:
        """Raise, before anything is written, when the table's format does not let the engine
        commit a change of `kind` (`SnapshotStore.refuses`), or its store cannot publish a
        snapshot without possibly replacing another's (no conditional create)."""
        refusal = self.store.refuses(kind)
        if refusal is not None:
            raise (UnsupportedPaimonFeatureError if self.schema.paimon is not None else UnsupportedFormatError)(refusal)
        self.storage.require_conditional_create()

    def discard(self, entries: Iterable[FileEntry]) -> None:
        """Delete the data files (and their sidecars) of an uncommitted (failed or lost)
        change, as cleanup: never raising, stopping at the first failing delete (see
        `remove_uncommitted`).  On an object store, a commit that failed without an answer may
        have been published all the same: files the newest snapshot holds are kept (and
        nothing is deleted while the store cannot tell)."""
        self.discard_files([e.file for e in entries])

    def remove_written(self, files: Iterable[DataFileMeta]) -> None:
        """Delete new files no commit can have published (a write that failed before its
        commit), with their sidecars, as cleanup (never raising)."""
        self.store.remove_uncommitted(list(files))

    def discard_files(self, files: Iterable[DataFileMeta]) -> None:
        """`discard` of data files."""
        files = list(files)
        if not files:
            return
        keep: Collection[str] = ()
        if not is_local(self.storage):
            try:
                keep = self.live_files(self.latest_snapshot()).keys()
            except (MergeTreeError, OSError):
                return
        self.store.remove_uncommitted([m for m in files if m.file_name not in keep])


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def as_path(path: Any, what: str = "a table path") -> str:
    """A location given by a user as the local path it names: a path or a `file://` URI.  Any
    other URI (`s3://`, `hdfs://`, ...) is refused naming it: taken as a path, `s3://lake/t`
    would silently become a local directory `s3:/lake/t`.  (Paimon warehouses, which are not
    on the storage layer yet; tables resolve their locations with `locate`.)"""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"{what} is a str or os.PathLike, not {type(path).__name__}")
    text = os.fspath(path)
    scheme = _SCHEME.match(text)
    if scheme is not None:
        if scheme.group(1).lower() != "file":
            raise InvalidArgumentError(f"{text}: {scheme.group(1)}:// locations are not supported by this version of "
                                       f"mergetree, which keeps tables on a local file system; nothing was written")
        text = text[scheme.end():]
        if not text.startswith("/"):
            raise InvalidArgumentError(f"{os.fspath(path)}: a file:// URI names an absolute path (file:///...)")
    return os.path.abspath(text)


def _as_storage(location: str | Store) -> Store:
    return location if isinstance(location, Store) else storage_for(location)


def check_empty(storage: Store) -> None:
    """Refuse to create a table where anything is already (TableExistsError): a table (of either
    format), or files of someone else's; empty directories count for nothing (a creator that
    died before its schema file left some).  On an object store this is the first request: a
    missing bucket or bad credentials are reported here, before anything is written."""
    path = table_path(storage)
    if is_local(storage):
        if os.path.exists(path) and not os.path.isdir(path):
            raise TableExistsError(f"{path} is a file, not a directory")
        if next((f for _, _, names in os.walk(path) for f in names), None) is None:
            return
        schema_dir = os.path.join(path, paths.SCHEMA_DIR)
        if os.path.isdir(schema_dir) and os.listdir(schema_dir):
            raise TableExistsError(f"a table already exists at {path}")
        raise _not_empty(path)
    if next(iter(storage.list(paths.SCHEMA_DIR + "/")), None) is not None:
        raise TableExistsError(f"a table already exists at {path}")
    if next(iter(storage.list("")), None) is not None:
        raise _not_empty(path)


def lost_to_other_format(storage: Store, mine: str) -> None:
    """After creating schema file `mine`: if a creator of the other format published its own
    first schema file meanwhile (exclusive creates guard one name only), withdraw `mine` and
    raise TableExistsError — never two tables in one place."""
    other = paths.SCHEMA_FILE if mine != paths.SCHEMA_FILE else f"{paths.SCHEMA_DIR}/schema-0"
    if storage.exists(other):
        storage.delete(mine)
        raise TableExistsError(f"another table was created at {table_path(storage)} at the same time")


def create_table(location: str | Store, ts: TableSchema) -> TableDirectory:
    """Publish a new table's schema file in a new or empty directory (or object-store prefix)."""
    storage = _as_storage(location)
    path = table_path(storage)
    check_empty(storage)
    storage.require_conditional_create()
    try:
        storage.create(paths.SCHEMA_FILE, encode_json(ts.to_json()))  # exclusive: two creators cannot both win
    except ObjectExistsError:
        raise TableExistsError(f"a table already exists at {path}") from None
    lost_to_other_format(storage, paths.SCHEMA_FILE)
    directory = TableDirectory.load(storage, ts)
    directory.store.ensure_directories()
    return directory


def open_or_create(path: str, ts: TableSchema, tries: int = 200) -> TableDirectory:
    """The side table at `path` (a query log, an optimizer history), created with `ts` by
    whichever writer comes first.  A writer that finds another mid-creation (the directory
    there, its schema not yet published) waits for the schema rather than fail."""
    for _ in range(tries):
        try:
            return open_table(path, check=False)
        except MergeTreeError:
            pass
        try:
            return create_table(path, ts)
        except TableExistsError:  # another writer is creating it: its schema appears in a moment
            time.sleep(0.01)
    return open_table(path, check=False)


def _not_empty(path: str) -> TableExistsError:
    return TableExistsError(
        f"{path} already holds files and is not a mergetree table; create the table in a "
        f"new or empty directory (mergetree's cleanup must own everything in it)")


def table_exists(location: str | Store) -> bool:
    """Whether a table (its schema file) is at `location`."""
    storage = _as_storage(location)
    if is_local(storage):
        return os.path.isfile(os.path.join(table_path(storage), paths.SCHEMA_FILE))
    return bool(list_names(storage, paths.SCHEMA_DIR))


def open_table(location: str | Store, check: bool) -> TableDirectory:
    """Read a table's schema (and, with `check`, its latest snapshot), or say what is wrong."""
    storage = _as_storage(location)
    path = table_path(storage)
    if is_local(storage):
        if not os.path.exists(path):
            raise TableNotFoundError(f"no mergetree table at {path}: the path does not exist")
        if not os.path.isdir(path):
            raise TableNotFoundError(f"no mergetree table at {path}: it is a file, not a directory")
        if not os.path.exists(os.path.join(path, paths.SCHEMA_FILE)):
            raise TableNotFoundError(f"no mergetree table at {path}: it has no {paths.SCHEMA_FILE}")
        schema_id = _latest_schema_id(storage)
    else:
        ids = _schema_ids(storage)
        if not ids:
            raise TableNotFoundError(f"no mergetree table at {path}: it has no {paths.SCHEMA_FILE}")
        schema_id = max(ids)
    directory = TableDirectory.load(storage, _read_schema(storage, schema_id))
    if check:
        directory.latest_snapshot()
    return directory


def _schema_ids(storage: Store) -> list[int]:
    ids = [paths.schema_id_of(f"{paths.SCHEMA_DIR}/{name}") for name in list_names(storage, paths.SCHEMA_DIR)]
    return [i for i in ids if i is not None]


def _latest_schema_id(storage: Store) -> int:
    return max(_schema_ids(storage))


def _read_schema(storage: Store, schema_id: int) -> TableSchema:
    relative = paths.schema_file(schema_id)
    document = read_json(storage, relative, "schema file")
    path = table_path(storage)
    try:
        ts = TableSchema.from_json(document)
        if ts.schema_id != schema_id:
            raise ValueError(f"it says it is schema {ts.schema_id}")
        ts.table_options  # noqa: B018  (parsing checks the stored options)
        return ts
    except (KeyError, TypeError, ValueError, pa.ArrowException, MergeTreeError) as exc:
        where = os.path.join(path, relative) if is_local(storage) else storage.describe(relative)
        raise CorruptTableError(f"the schema file {relative} of table {path} is damaged: {exc!r}",
                                path=where) from None


def alter_options(directory: TableDirectory, changes: dict) -> TableDirectory:
    """Publish the next schema version with changed options (None removes one).  Exclusive,
    like a commit: if another change published that version first, raise CommitConflictError
    (reopen the table and try again).  Data files are not touched: new options apply to what
    is written from now on (`optimize` and `build_indexes` bring older files along)."""
    if directory.schema.paimon is not None:  # Java's ALTER TABLE, by the Paimon table's store
        return directory.store.alter_options(changes)  # type: ignore[attr-defined]
    storage = directory.storage
    latest = _latest_schema_id(storage)
    if latest != directory.schema.schema_id:
        raise CommitConflictError(f"the table's options changed since it was opened (schema {latest}); reopen it")
    ts = directory.schema.with_options(changes)
    storage.require_conditional_create()
    data = encode_json(ts.to_json())
    try:
        storage.create(paths.schema_file(ts.schema_id), data)
    except ObjectExistsError:
        if not is_local(storage) and storage.read(paths.schema_file(ts.schema_id)) == data:
            return TableDirectory.load(storage, ts)  # an object store's retry found its own first attempt
        raise CommitConflictError("another process changed the table's options at the same time; reopen the "
                                  "table and try again") from None
    return TableDirectory.load(storage, ts)


def alter_schema(directory: TableDirectory, changes: list) -> TableDirectory:
    """Publish the next schema version with `changes` (`SchemaUpdate`'s) to the columns, by
    the Paimon table's store as Java applies them; exclusive like `alter_options`."""
    if directory.schema.paimon is None:
        raise UnsupportedFormatError(
            f"table {directory.path} is in mergetree's older format, whose columns cannot change; copy it into "
            f"a table made by Table.create (Paimon's format), which can")
    return directory.store.alter_schema(changes)  # type: ignore[attr-defined]

