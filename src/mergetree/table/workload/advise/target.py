"""What the advisor needs of a table, whatever its format: its name (where its log is), columns,
options as mergetree reads them, live data files (sizes, row counts, statistics), the unit a rewrite
lays out on its own (`layout_group`), a way to read a file's columns for the row sample, and how
its format spells the options advice writes.  A
Paimon table's directory is one (`DirectoryTarget`); `mergetree.iceberg` makes Iceberg tables one."""
from __future__ import annotations

import posixpath
from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import pyarrow as pa

from ...directory import TableDirectory
from ...files import DataFileMeta, read_data_table
from ...options import TableOptions

__all__ = ["ALL_LEVERS", "AdviceTarget", "DirectoryTarget", "as_target"]

ALL_LEVERS = frozenset({"distribution", "bloom", "bitmap", "sort", "pre-aggregate"})


@runtime_checkable
class AdviceTarget(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def arrow_schema(self) -> pa.Schema: ...

    @property
    def has_primary_key(self) -> bool: ...

    @property
    def options(self) -> TableOptions: ...

    @property
    def levers(self) -> frozenset[str]:
        """The levers the table's format can carry (of `ALL_LEVERS`): the others are not advised."""
        ...

    def data_files(self) -> list[DataFileMeta]:
        """The latest snapshot's live data files."""
        ...

    def layout_group(self, meta: DataFileMeta) -> Hashable:
        """The group of files a rewrite lays out on its own that this file belongs to (its
        partition; a Paimon table's partition and bucket): a layout orders rows within a group,
        never across groups, so the advisor simulates it group by group."""
        ...

    def read_file(self, meta: DataFileMeta, columns: Sequence[str]) -> pa.Table | None:
        """`columns` of one data file's live rows (None: the file is gone)."""
        ...

    def native_options(self, changes: Mapping[str, str | None]) -> dict[str, str | None]:
        """mergetree's option changes in the names the table's format reads."""
        ...


class DirectoryTarget:
    """A Paimon table's directory as the advisor reads it."""

    def __init__(self, directory: TableDirectory) -> None:
        self.directory = directory
        self._groups: dict[str, tuple] | None = None  # file name -> (partition, bucket), of the latest snapshot

    @property
    def path(self) -> str:
        return self.directory.path

    @property
    def arrow_schema(self) -> pa.Schema:
        return self.directory.schema.schema

    @property
    def has_primary_key(self) -> bool:
        return self.directory.schema.has_primary_key

    @property
    def options(self) -> TableOptions:
        return self.directory.options

    @property
    def levers(self) -> frozenset[str]:
        return ALL_LEVERS

    def data_files(self) -> list[DataFileMeta]:
        snapshot = self.directory.latest_snapshot()
        entries = list(self.directory.live_files(snapshot).values()) if snapshot else []
        self._groups = {e.file.file_name: (e.partition, e.bucket) for e in entries}
        return [e.file for e in entries]

    def layout_group(self, meta: DataFileMeta) -> Hashable:
        if self._groups is None:
            self.data_files()
        assert self._groups is not None
        # a file of an older snapshot: its directory (the partition's path and bucket) says as much
        return self._groups.get(meta.file_name, posixpath.dirname(meta.file_name))

    def read_file(self, meta: DataFileMeta, columns: Sequence[str]) -> pa.Table | None:
        return read_data_table(self.directory.storage, meta, list(columns))

    def native_options(self, changes: Mapping[str, str | None]) -> dict[str, str | None]:
        return self.directory.store.native_options(dict(changes))


def as_target(table: TableDirectory | AdviceTarget) -> AdviceTarget:
    return DirectoryTarget(table) if isinstance(table, TableDirectory) else table
