"""An opened table directory: what every part of the table layer (writes, reads, compaction,
housekeeping, the Spark jobs) works on.  Creating and opening a table happen here."""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import (
    CommitConflictError,
    CorruptTableError,
    InvalidArgumentError,
    MergeTreeError,
    TableExistsError,
    TableNotFoundError,
)
from . import paths
from .options import TableOptions
from .schema import TableSchema
from .snapshots import FileEntry, Snapshot, SnapshotStore, read_json, write_json_atomically

__all__ = ["TableDirectory", "alter_options", "as_path", "create_table", "open_table"]


@dataclass(frozen=True)
class TableDirectory:
    """A table's directory, fixed schema, parsed options and snapshot store."""

    path: str
    schema: TableSchema
    options: TableOptions
    store: SnapshotStore

    @classmethod
    def load(cls, path: str, schema: TableSchema) -> TableDirectory:
        options = schema.table_options
        return cls(path, schema, options, SnapshotStore(path, schema.partition_by, options.manifest_merge_min_count))

    def latest_snapshot(self) -> Snapshot | None:
        latest = self.store.latest_id()
        return None if latest is None else self.store.snapshot(latest)

    def live_files(self, snapshot: Snapshot | None) -> dict[str, FileEntry]:
        return self.store.live_files(snapshot)

    def bucket_directory(self, partition: tuple, bucket: int) -> str:
        return paths.bucket_directory(self.schema.partition_by, partition, bucket)

    def unlink_owned(self, relative: str) -> None:
        """Delete a file of the table; a name the table cannot own is never deleted."""
        if paths.is_owned(relative, self.schema.partition_by):
            try:
                os.unlink(os.path.join(self.path, relative))
            except FileNotFoundError:
                pass

    def discard(self, entries: Iterable[FileEntry]) -> None:
        """Delete the data files (and their sidecars) of an uncommitted (failed or lost) change."""
        for e in entries:
            for relative in [e.file.file_name, *e.file.sidecars()]:
                self.unlink_owned(relative)


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def as_path(path: Any, what: str = "a table path") -> str:
    """A location given by a user as the local path it names: a path or a `file://` URI.  Any
    other URI (`s3://`, `hdfs://`, ...) is refused naming it: taken as a path, `s3://lake/t`
    would silently become a local directory `s3:/lake/t`."""
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


def create_table(path: str, ts: TableSchema) -> TableDirectory:
    """Publish a new table's schema file in a new or empty directory."""
    if os.path.exists(os.path.join(path, paths.SCHEMA_FILE)):
        raise TableExistsError(f"a table already exists at {path}")
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise TableExistsError(f"{path} is a file, not a directory")
        if os.listdir(path):
            raise TableExistsError(
                f"{path} already holds files and is not a mergetree table; create the table in a "
                f"new or empty directory (mergetree's cleanup must own everything in it)")
    target = os.path.join(path, paths.SCHEMA_FILE)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = write_json_atomically(target, ts.to_json())
    try:
        os.link(tmp, target)  # exclusive: two creators cannot both win
    except FileExistsError:
        raise TableExistsError(f"a table already exists at {path}") from None
    finally:
        os.unlink(tmp)
    directory = TableDirectory.load(path, ts)
    directory.store.ensure_directories()
    return directory


def open_table(path: str, check: bool) -> TableDirectory:
    """Read a table's schema (and, with `check`, its latest snapshot), or say what is wrong."""
    if not os.path.exists(path):
        raise TableNotFoundError(f"no mergetree table at {path}: the path does not exist")
    if not os.path.isdir(path):
        raise TableNotFoundError(f"no mergetree table at {path}: it is a file, not a directory")
    if not os.path.exists(os.path.join(path, paths.SCHEMA_FILE)):
        raise TableNotFoundError(f"no mergetree table at {path}: it has no {paths.SCHEMA_FILE}")
    directory = TableDirectory.load(path, _read_schema(path, _latest_schema_id(path)))
    if check:
        directory.latest_snapshot()
    return directory


def _latest_schema_id(path: str) -> int:
    names = os.listdir(os.path.join(path, paths.SCHEMA_DIR))
    ids = [paths.schema_id_of(f"{paths.SCHEMA_DIR}/{name}") for name in names]
    return max(i for i in ids if i is not None)


def _read_schema(path: str, schema_id: int) -> TableSchema:
    relative = paths.schema_file(schema_id)
    document = read_json(path, relative, "schema file")
    try:
        ts = TableSchema.from_json(document)
        if ts.schema_id != schema_id:
            raise ValueError(f"it says it is schema {ts.schema_id}")
        ts.table_options  # noqa: B018  (parsing checks the stored options)
        return ts
    except (KeyError, TypeError, ValueError, pa.ArrowException, MergeTreeError) as exc:
        raise CorruptTableError(f"the schema file {relative} of table {path} is damaged: {exc!r}",
                                path=os.path.join(path, relative)) from None


def alter_options(directory: TableDirectory, changes: dict) -> TableDirectory:
    """Publish the next schema version with changed options (None removes one).  Exclusive,
    like a commit: if another change published that version first, raise CommitConflictError
    (reopen the table and try again).  Data files are not touched: new options apply to what
    is written from now on (`optimize` and `build_indexes` bring older files along)."""
    latest = _latest_schema_id(directory.path)
    if latest != directory.schema.schema_id:
        raise CommitConflictError(f"the table's options changed since it was opened (schema {latest}); reopen it")
    ts = directory.schema.with_options(changes)
    target = os.path.join(directory.path, paths.schema_file(ts.schema_id))
    tmp = write_json_atomically(target, ts.to_json())
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise CommitConflictError("another process changed the table's options at the same time; reopen the "
                                  "table and try again") from None
    finally:
        os.unlink(tmp)
    return TableDirectory.load(directory.path, ts)
