"""`Table`: the public face of a primary-key or append table on Parquet.  Each method checks
its arguments and hands the work to the module that does it (write, read, compaction,
housekeeping), all working on the table's `TableDirectory`."""
from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..merge import RowKind
from . import filters as flt
from . import housekeeping, read, write
from .compaction.runner import Progress, compact_buckets
from .directory import TableDirectory, as_path, create_table, open_table
from .options import TableOptions
from .schema import TableSchema
from .snapshots import Snapshot

__all__ = ["Table"]


class Table:
    """A table directory.  Create one with `Table.create`, open one with `Table.open`."""

    def __init__(self, directory: TableDirectory) -> None:
        self.directory = directory

    # -- creating and opening ---------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike, schema: pa.Schema, primary_key=None, partition_by=None,
               buckets: int = 1, bucket_key=None, merge_engine: str = "deduplicate",
               options: dict | None = None) -> Table:
        """Create a table in a new or empty directory.  Everything is checked first: a bad
        argument or option raises before anything is written."""
        ts = TableSchema.create(schema, primary_key, partition_by, buckets, bucket_key, merge_engine, options)
        return cls(create_table(as_path(path), ts))

    @classmethod
    def open(cls, path: str | os.PathLike, check: bool = True) -> Table:
        """Open a table.  With `check` (the default) the latest snapshot is read too, so a
        damaged one is reported here, naming the file and how to recover; `check=False`
        opens a table whose latest snapshot is damaged, to read an older one."""
        return cls(open_table(as_path(path), check))

    @classmethod
    def repair(cls, path: str | os.PathLike) -> list[str]:
        """Set damaged snapshot files at the top of the history aside (into
        snapshot/damaged/, never deleted) so the table continues from its newest intact
        snapshot.  Returns what was done, a line per snapshot file; the changes those
        snapshots committed are lost."""
        return housekeeping.repair(open_table(as_path(path), check=False))

    # -- what the table is --------------------------------------------------------------
    @property
    def path(self) -> str:
        return self.directory.path

    @property
    def schema(self) -> pa.Schema:
        return self.directory.schema.schema

    @property
    def table_schema(self) -> TableSchema:
        """Everything fixed at create: columns, keys, partitioning, buckets, engine, options."""
        return self.directory.schema

    @property
    def options(self) -> TableOptions:
        return self.directory.options

    def snapshots(self) -> list[Snapshot]:
        store = self.directory.store
        return [store.snapshot(i) for i in store.snapshot_ids()]

    def latest_snapshot(self) -> Snapshot | None:
        return self.directory.latest_snapshot()

    # -- writing ----------------------------------------------------------------------
    def write(self, data: Any) -> Snapshot | None:
        """Upsert rows (a pa.Table, RecordBatch, RecordBatchReader, Arrow stream, pandas
        DataFrame, dict of columns or list of row dicts).  Everything is checked first; the
        rows become visible in one commit."""
        return write.write_rows(self.directory, write.conform(self.directory, data, complete=True), RowKind.INSERT)

    def delete(self, keys: Any) -> Snapshot | None:
        """Delete rows by primary key (`keys` holds at least the primary-key columns)."""
        ts = self.directory.schema
        if not ts.has_primary_key:
            raise InvalidArgumentError("an append table has no keys to delete by")
        if ts.merge_engine == "first-row":
            raise InvalidArgumentError("a first-row table keeps the first version of a key; it cannot delete")
        if ts.merge_engine == "aggregate":
            raise InvalidArgumentError(
                "an aggregate table folds a delete into its aggregates (a key-only delete would "
                "retract nothing); write compensating values instead")
        return write.write_rows(self.directory, write.conform(self.directory, keys, complete=False), RowKind.DELETE)

    def compact(self, full: bool = False, progress: Progress | None = None) -> Snapshot | None:
        """Compact every bucket that needs it (all of them with full=True) in one commit.
        `progress(rows_done, rows_total)` is called as rows are merged."""
        if not isinstance(full, bool):
            raise InvalidArgumentError(f"full must be True or False, not {full!r}")
        if progress is not None and not callable(progress):
            raise InvalidArgumentError(f"progress must be a callable (rows_done, rows_total), not {progress!r}")
        return compact_buckets(self.directory, None, full=full, progress=progress)

    # -- reading ----------------------------------------------------------------------
    def plan(self, filter: flt.Filter = None, snapshot: int | None = None) -> read.ReadPlan:
        """Which files a read with this filter touches, by bucket and section."""
        return read.plan_read(self.directory, flt.normalize(filter, self.schema), snapshot)

    def read(self, columns: str | list[str] | None = None, filter: flt.Filter = None,
             snapshot: int | None = None, threads: int | None = None) -> pa.Table:
        """Merge-on-read of the table (or of `snapshot`) as one pa.Table.

        Rows come bucket by bucket (partitions and buckets in order, each bucket's rows in
        primary-key order), not in one global key order: sort the result if you need it.
        Buckets are read in `threads` threads (default: one per CPU)."""
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise InvalidArgumentError(f"threads must be a positive integer or None, not {threads!r}")
        return read.read_table(self.directory, read.prepare_read(self.directory, columns, filter, snapshot), threads)

    def scan(self, columns: str | list[str] | None = None, filter: flt.Filter = None,
             snapshot: int | None = None) -> pa.RecordBatchReader:
        """A streaming read: one bucket section at a time, merged with the loser tree (rows
        in the order `read` gives them)."""
        return read.scan_table(self.directory, read.prepare_read(self.directory, columns, filter, snapshot))

    # -- housekeeping -----------------------------------------------------------------
    def expire_snapshots(self, retain_last: int = 1, older_than: dt.timedelta | float | None = None) -> list[int]:
        """Delete old snapshots (always keeping the newest `retain_last`, and any younger
        than `older_than`: a timedelta or seconds) and the files only they used.
        Returns the expired ids."""
        return housekeeping.expire_snapshots(self.directory, retain_last, older_than)

    def remove_orphan_files(self, older_than: dt.timedelta | float = dt.timedelta(hours=1)) -> list[str]:
        """Delete the table's files that no snapshot references (left by failed writes,
        crashes or aborted compactions) and that are older than `older_than` (a timedelta
        or seconds), so that commits in flight keep theirs.  Only files whose names and
        places match the table's own patterns are ever deleted; snapshots and the schema
        never are."""
        return housekeeping.remove_orphan_files(self.directory, older_than)

    def __repr__(self) -> str:
        ts = self.directory.schema
        keys = f"primary_key={list(ts.primary_key)}" if ts.has_primary_key else "append"
        return f"Table({self.path!r}, {keys}, buckets={ts.buckets}, engine={ts.merge_engine!r})"
