"""`Table.open` on an Apache Paimon table: a `Table` whose calls are `mergetree.paimon`'s on
that table (its own directory, or ``W/db.db/name`` of a filesystem-catalog warehouse; local or
on an object store).  What mergetree does only for its own format so far (the data-organization
loop, consumers, snapshot expiry, ...) raises `UnsupportedPaimonFeatureError` naming the call,
never acts on the wrong files."""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NoReturn

import pyarrow as pa

from ..errors import InvalidArgumentError, UnsupportedPaimonFeatureError
from ..table import Table
from ..table.paimon.metadata import PaimonTable
from .changes import changes as paimon_changes
from .compact import compact as paimon_compact
from .info import PaimonInfo, info
from .read import read as paimon_read
from .read import scan as paimon_scan
from .write import PaimonWrite, delete, write

__all__ = ["PaimonTableHandle"]


class PaimonTableHandle(Table):
    """An Apache Paimon table opened by `Table.open`: write, delete, read, scan, compact,
    changes and info as `mergetree.paimon` does them (docs/PAIMON.md)."""

    def __init__(self, location: str, storage_options: Mapping[str, object] | None = None) -> None:
        # no TableDirectory: every call goes to mergetree.paimon with the table's location
        self._location = location
        self._storage_options = storage_options
        self._table = PaimonTable.open(location, None, storage_options)
        self.last_read = None

    @classmethod
    def open(cls, path: str | os.PathLike, check: bool = True,
             storage_options: Mapping[str, object] | None = None) -> PaimonTableHandle:
        return cls(os.fspath(path), storage_options)

    def _call(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return function(self._location, None, *args, storage_options=self._storage_options, **kwargs)

    @staticmethod
    def _not_yet(call: str) -> NoReturn:
        raise UnsupportedPaimonFeatureError(
            f"Table.{call} works on mergetree's own tables only so far; on an Apache Paimon table mergetree offers "
            f"write, delete, read, scan, compact, changes and info (docs/PAIMON.md)")

    # -- what the table is --------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._table.path

    @property
    def schema(self) -> pa.Schema:
        return self._table.schema().arrow_schema

    @property
    def table_schema(self) -> Any:
        self._not_yet("table_schema")

    @property
    def options(self) -> Any:
        """The Paimon table's options, as its latest schema holds them."""
        return dict(self._table.schema().options)

    def info(self) -> PaimonInfo:  # type: ignore[override]
        return self._call(info)

    def snapshots(self) -> list[int]:  # type: ignore[override]
        """The ids of the table's snapshots."""
        return list(self._table.snapshot_ids())

    def latest_snapshot(self) -> int | None:  # type: ignore[override]
        """The id of the latest snapshot (None: the table has none)."""
        return self._table.latest_snapshot_id()

    # -- writing, reading, compacting ---------------------------------------------------
    def write(self, data: Any, row_kind_column: str | None = None,  # type: ignore[override]
              overwrite: Any = False) -> PaimonWrite:
        """Write rows as `mergetree.paimon.write` does: level-0 files, an APPEND (or, with
        `overwrite`, OVERWRITE) snapshot, then (unless write-only) a COMPACT one; the result
        says whether they are visible yet."""
        return self._call(write, data, row_kind_column, overwrite=overwrite)

    def delete(self, keys: Any) -> PaimonWrite:  # type: ignore[override]
        return self._call(delete, keys)

    def compact(self, full: bool = False, progress: Any = None) -> int | None:  # type: ignore[override]
        """Compact by Paimon's universal rules (``full``: every bucket into one sorted run);
        the COMPACT snapshot's id, or None when there was nothing to do."""
        return self._call(paimon_compact, full, progress)

    def read(self, columns: str | list[str] | None = None, filter: Any = None, snapshot: Any = None,
             threads: int | None = None, order_by: Any = None, limit: int | None = None) -> pa.Table:
        if isinstance(columns, str):
            columns = [columns]
        return self._call(paimon_read, columns, filter, snapshot, threads,
                          order_by=order_by, limit=limit)

    def scan(self, columns: str | list[str] | None = None, filter: Any = None, snapshot: Any = None,
             order_by: Any = None, limit: int | None = None, source: str | None = None) -> pa.RecordBatchReader:
        if order_by is not None or limit is not None:  # a Top-N or limited read is computed first
            top = self.read(columns, filter, snapshot, order_by=order_by, limit=limit)
            return pa.RecordBatchReader.from_batches(top.schema, top.to_batches())
        if isinstance(columns, str):
            columns = [columns]
        return self._call(paimon_scan, columns, filter, snapshot)

    def changes(self, start: int | None = None, end: int | None = None, columns: str | list[str] | None = None,
                filter: Any = None, per_commit: bool = False, consumer_id: str | None = None) -> pa.RecordBatchReader:
        if per_commit or consumer_id is not None:
            self._not_yet("changes(per_commit=..., consumer_id=...)")
        if start is None:
            raise InvalidArgumentError("changes needs start (a snapshot id)")
        if isinstance(columns, str):
            columns = [columns]
        return self._call(paimon_changes, start, end, columns, filter)

    # -- what works on mergetree's own tables only so far --------------------------------
    def set_options(self, options: dict) -> None:
        self._not_yet("set_options")

    def plan(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("plan")

    def aggregate(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("aggregate")

    def advise(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("advise")

    def expire_queries(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("expire_queries")

    def optimize(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("optimize")

    def build_indexes(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("build_indexes")

    def add_aggregate(self, *args: Any, **kwargs: Any) -> None:
        self._not_yet("add_aggregate")

    def drop_aggregate(self, *args: Any, **kwargs: Any) -> None:
        self._not_yet("drop_aggregate")

    def expire_snapshots(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("expire_snapshots")

    def consumers(self) -> Any:
        self._not_yet("consumers")

    def consumer(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("consumer")

    def reset_consumer(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("reset_consumer")

    def drop_consumer(self, *args: Any, **kwargs: Any) -> None:
        self._not_yet("drop_consumer")

    def remove_orphan_files(self, *args: Any, **kwargs: Any) -> Any:
        self._not_yet("remove_orphan_files")

    def __repr__(self) -> str:
        schema = self._table.schema()
        return (f"Table({self.path!r}, Apache Paimon, primary_key={list(schema.primary_keys)}, "
                f"buckets={schema.options.get('bucket', '-1')})")
