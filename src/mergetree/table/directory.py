"""An opened table: what every part of the table layer (writes, reads, compaction,
housekeeping, the Spark jobs) works on — a Paimon table's schema, options and snapshot store
(`table.paimon.store.paimon_directory` makes one).

A table lives at a local path or an object-store URI; every file goes through its
`mergetree.storage.Store` (`TableDirectory.storage`), resolved once when the table is opened."""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import MergeTreeError, OutcomeUnknownError, TableExistsError, UnsupportedPaimonFeatureError
from ..storage import Store
from . import paths
from .files import DataFileMeta, DataFileWriter, FileOpener
from .objects import is_local, locate, table_path
from .options import TableOptions
from .schema import TableSchema
from .snapshots import FileEntry, Snapshot

__all__ = ["TableDirectory", "alter_options", "alter_schema", "check_empty", "locate"]


@dataclass(frozen=True)
class TableDirectory:
    """A table's location, fixed schema, parsed options and snapshot store.  `path` names the
    table (its absolute local path, or its URI); `storage` is where its files are."""

    path: str
    schema: TableSchema
    options: TableOptions
    store: Any  # the table's `table.paimon.store.PaimonSnapshotStore` (above this module: it makes directories)
    storage: Store

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
        """Raise, before anything is written, when the table's options do not let the engine
        commit a change of `kind` as Java would (`PaimonSnapshotStore.refuses`), or its store
        cannot publish a snapshot without possibly replacing another's (no conditional create)."""
        refusal = self.store.refuses(kind)
        if refusal is not None:
            raise UnsupportedPaimonFeatureError(refusal)
        self.storage.require_conditional_create()

    def discard(self, entries: Iterable[FileEntry]) -> None:
        """Delete the data files (and their extra files) of an uncommitted (failed or lost)
        change, as cleanup: never raising, stopping at the first failing delete (see
        `remove_uncommitted`).  On an object store, a commit that failed without an answer may
        have been published all the same: files the newest snapshot holds are kept (and
        nothing is deleted while the store cannot tell)."""
        self.discard_files([e.file for e in entries])

    def remove_written(self, files: Iterable[DataFileMeta]) -> None:
        """Delete new files no commit can have published (a write that failed before its
        commit), with their extra files, as cleanup (never raising)."""
        self.store.remove_uncommitted(list(files))

    def discard_files(self, files: Iterable[DataFileMeta]) -> None:
        """`discard` of data files.  Nothing at all while the failure being cleaned up is a
        commit whose outcome is unknown (`OutcomeUnknownError`: its snapshot may be published,
        even after a look at the newest snapshot): they are orphans at worst, which
        `remove_orphan_files` deletes once old."""
        files = list(files)
        if not files or _outcome_unknown(sys.exc_info()[1]):
            return
        keep: Collection[str] = ()
        if not is_local(self.storage):
            try:
                keep = self.live_files(self.latest_snapshot()).keys()
            except (MergeTreeError, OSError):
                return
        self.store.remove_uncommitted([m for m in files if m.file_name not in keep])


def _outcome_unknown(exc: BaseException | None) -> bool:
    """Is `exc` (or what it was raised from, or during) a commit whose outcome is unknown?"""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, OutcomeUnknownError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def check_empty(storage: Store) -> None:
    """Refuse to create a table where anything is already (TableExistsError): a table, or files
    of someone else's; empty directories count for nothing (a creator that died before its
    schema file left some).  On an object store this is the first request: a
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


def _not_empty(path: str) -> TableExistsError:
    return TableExistsError(
        f"{path} already holds files and is not a mergetree table; create the table in a "
        f"new or empty directory (mergetree's cleanup must own everything in it)")


def alter_options(directory: TableDirectory, changes: dict) -> TableDirectory:
    """Publish the next schema version with changed options (None removes one).  Exclusive,
    like a commit: if another change published that version first, raise CommitConflictError
    (reopen the table and try again).  Data files are not touched: new options apply to what
    is written from now on (`optimize` and `build_indexes` bring older files along)."""
    return directory.store.alter_options(changes)  # Java's ALTER TABLE, by the Paimon table's store


def alter_schema(directory: TableDirectory, changes: list) -> TableDirectory:
    """Publish the next schema version with `changes` (`SchemaUpdate`'s) to the columns, by
    the Paimon table's store as Java applies them; exclusive like `alter_options`."""
    return directory.store.alter_schema(changes)

