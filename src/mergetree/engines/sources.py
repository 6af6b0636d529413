"""What an engine scans: a mergetree table or a Paimon table, pinned to one snapshot when the
engine's handle is made, scanned with the columns, filter and row limit the engine pushed."""
from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..table import Table
from ..table import filters as flt

__all__ = ["PaimonSource", "ScanSource", "TableSource", "checked_columns", "limited", "require"]


def require(module: str, extra: str) -> Any:
    """The engine's module, or an ImportError saying which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"mergetree.{extra} needs {module}, which is not installed "
                          f"(pip install 'mergetree[{extra}]')") from None


class ScanSource:
    """A table as the engines see it: its Arrow schema and a scan with pushdown."""

    schema: pa.Schema
    label: str
    # whether a row limit can be handed to the scan itself (else the rows are cut after it)
    pushes_limit: bool = False

    def scan(self, columns: list[str], filter: flt.Filter, limit: int | None, source: str) -> pa.RecordBatchReader:
        raise NotImplementedError


def checked_columns(columns: list[str] | None, schema: pa.Schema, label: str) -> list[str]:
    """The asked columns (None: all), or InvalidArgumentError naming the unknown ones."""
    if columns is None:
        return list(schema.names)
    unknown = [c for c in columns if c not in schema.names]
    if unknown:
        raise InvalidArgumentError(f"columns {unknown} are not in {label}; its columns: {schema.names}")
    return list(columns)


class TableSource(ScanSource):
    """A mergetree table (a `Table` or a path/URI opened with `storage_options`) at `snapshot`
    (default: the latest when the source is made)."""

    pushes_limit = True

    def __init__(self, path_or_table: Any, snapshot: int | None = None,
                 storage_options: Mapping[str, object] | None = None) -> None:
        if isinstance(path_or_table, Table):
            if storage_options is not None:
                raise InvalidArgumentError("storage_options apply to a table path, not to an open Table")
            table = path_or_table
        elif isinstance(path_or_table, (str, os.PathLike)):
            # (its scan reads the snapshot it is pinned to: an older one when the latest is damaged)
            table = Table.open(path_or_table, check=False,
                               storage_options=dict(storage_options) if storage_options else None)
        else:
            raise InvalidArgumentError(f"expected a mergetree Table or a table path, not {path_or_table!r}")
        if snapshot is None:
            latest = table.at().latest_snapshot()  # the engine's view: a Paimon table opened by path too
            snapshot = None if latest is None else latest.id
        elif isinstance(snapshot, bool) or not isinstance(snapshot, int):
            raise InvalidArgumentError(f"snapshot must be a snapshot id (an int) or None, not {snapshot!r}")
        else:
            table.directory.store.snapshot(snapshot)  # SnapshotNotFoundError now, not at the query
        self.table, self.snapshot = table, snapshot
        self.schema = table.schema
        self.label = f"mergetree table {table.path}"

    def scan(self, columns: list[str], filter: flt.Filter, limit: int | None, source: str) -> pa.RecordBatchReader:
        return self.table.scan(columns, filter, self.snapshot, limit=limit, source=source)


class PaimonSource(TableSource):
    """A Paimon table (`warehouse`, "db.table") at `snapshot` (an id or a tag; default the
    latest when the source is made): the same scan as a mergetree table's, by the one engine."""

    def __init__(self, warehouse: Any, table: str, snapshot: Any = None,
                 storage_options: Mapping[str, object] | None = None) -> None:
        from ..paimon.handle import PaimonTableHandle

        handle = PaimonTableHandle(warehouse, storage_options, table)
        store = handle.directory.store
        if snapshot is None:
            pinned: Any = store.latest_id()
        elif isinstance(snapshot, str):
            store.tag(snapshot)  # SnapshotNotFoundError now; read by its name
            pinned = snapshot
        elif isinstance(snapshot, bool) or not isinstance(snapshot, int):
            raise InvalidArgumentError(f"snapshot must be a snapshot id, a tag name or None, not {snapshot!r}")
        else:
            pinned = store.snapshot(snapshot).id  # SnapshotNotFoundError now, not at the query
        self.table, self.snapshot = handle, pinned
        # the columns of the pinned snapshot's schema: what every scan of it returns
        self.schema = handle.schema if pinned is None else handle.plan_schema(pinned)
        self.label = f"Paimon table {table}"


def limited(batches: Iterator[pa.RecordBatch], limit: int | None) -> Iterator[pa.RecordBatch]:
    """The first `limit` rows of a stream, reading no further."""
    if limit is None:
        yield from batches
        return
    left = limit
    for batch in batches:
        if left <= 0:
            return
        if batch.num_rows > left:
            batch = batch.slice(0, left)
        left -= batch.num_rows
        yield batch
