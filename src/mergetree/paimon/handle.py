"""`Table.open` on an Apache Paimon table: a `Table` of the engine every table has, over the
table's store (its own directory, or ``W/db.db/name`` of a filesystem-catalog warehouse; local
or on an object store), that reads each time under the table's latest schema (time travel under
its snapshot's), as Paimon's readers do; its calls return what `Table`'s return."""
from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError, SnapshotNotFoundError
from ..table import Table, housekeeping
from ..table.consumers import Consumer
from ..table.directory import TableDirectory, alter_schema
from ..table.paimon.metadata import PaimonTable
from ..table.paimon.store import paimon_directory
from ..table.schema_update import SchemaUpdate
from ..table.write import check_deletable
from .write import written_snapshot

__all__ = ["PaimonTableHandle", "changes", "compact", "read", "scan"]


class PaimonTableHandle(Table):
    """An Apache Paimon table opened by `Table.open`: read, scan and plan by the engine every
    table has (`table.read`, over `table.paimon.store`); write, delete, compact, changes and
    info as `mergetree.paimon` does them so far (docs/PAIMON.md)."""

    def __init__(self, location: Any, storage_options: Mapping[str, object] | None = None,
                 name: str | None = None) -> None:
        # `name` "db.table": `location` is the warehouse of a filesystem catalog holding it
        self._location = location
        self._name = name
        self._storage_options = storage_options
        self._table = PaimonTable.open(location, name, storage_options)
        self._fresh = True  # the first read uses the table just opened (`mergetree.paimon.read` opens one per call)
        self._directory: TableDirectory | None = None
        self.last_read = None

    @property
    def directory(self) -> TableDirectory:
        """The engine's view of the table under its latest schema (built when first needed: a
        schema whose options mergetree cannot honour is refused then, and time travel to a
        snapshot of an older schema still reads)."""
        if self._directory is None:
            self._directory = paimon_directory(self._table)
        return self._directory

    @directory.setter
    def directory(self, value: TableDirectory) -> None:
        self._directory = value

    def at(self, snapshot: Any = None) -> Table:
        """The engine's `Table` over the table as a read of `snapshot` sees it: as Paimon, the
        latest read uses the latest schema (options altered since the last commit count), time
        travel the schema its snapshot was committed under."""
        table = self._table if self._fresh else PaimonTable.open(self._location, self._name, self._storage_options)
        self._fresh = False
        if snapshot is None:
            self._table, self._directory = table, None  # what `directory` and `options` see from now on
        schema = None
        if snapshot is not None and not isinstance(snapshot, bool) and isinstance(snapshot, (int, str, dt.datetime)):
            document = table.resolve(snapshot)
            if document is not None:
                schema = table.schema(int(document["schemaId"]))
        return Table(paimon_directory(table, schema))

    @classmethod
    def open(cls, path: str | os.PathLike, check: bool = True,
             storage_options: Mapping[str, object] | None = None) -> PaimonTableHandle:
        """The table at `path`; with `check`, its latest snapshot and manifests read too, so a
        damaged one is reported here, naming the file and how to recover."""
        handle = cls(os.fspath(path), storage_options)
        if check:
            housekeeping.check_latest(handle.directory)  # (the table just opened: the first call uses it too)
        return handle

    def _call(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return function(self._location, self._name, *args, storage_options=self._storage_options, **kwargs)

    # -- what the table is --------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._table.path

    @property
    def schema(self) -> pa.Schema:
        return self._table.schema().arrow_schema

    @property
    def table_schema(self) -> Any:
        """The engine's view of the table's latest schema (`TableSchema`): its key as its files hold it."""
        return self.at().table_schema

    def info(self) -> Any:
        """`Table.info` of the table under its latest schema (`mergetree.paimon.info` describes
        it in Paimon's terms: snapshots, tags, files per level)."""
        return self.at().info()

    # -- writing, reading, compacting ---------------------------------------------------
    @property
    def options(self) -> Any:
        """The engine's options of the table's latest schema (`TableOptions`)."""
        return self.at().options

    def write(self, data: Any, row_kind_column: str | None = None, overwrite: Any = False,
              evolve: bool = False) -> Any:
        """`Table.write` as Java's batch writers write (`mergetree.paimon.write`): level-0 files,
        an APPEND (or, with `overwrite`, OVERWRITE) snapshot — the one returned —, then (unless
        write-only) a COMPACT one; with `evolve`, the data's new columns added first."""
        if row_kind_column is not None and not isinstance(row_kind_column, str):
            raise InvalidArgumentError(f"row_kind_column must be a column name, not {row_kind_column!r}")
        data = self._evolved(data, evolve, row_kind_column)
        self._fresh = False  # the next call opens the table again: the write changes it
        return self._call(written_snapshot, data, row_kind_column, overwrite=overwrite)

    def update_schema(self) -> SchemaUpdate:
        """`Table.update_schema` on the table: Java's ALTER TABLE of its columns, the next
        schema file; later calls read under it."""
        def publish(changes: list) -> None:
            self._changing(lambda engine: alter_schema(engine.directory, changes))
        return SchemaUpdate(publish)

    def delete(self, keys: Any = None, filter: Any = None) -> Any:
        """`Table.delete`: ``-D`` rows by key, refused as `Table.delete` refuses them (and the
        compaction after a write follows), or the rows a condition selects (`filter`)."""
        if filter is not None or keys is None:
            return self._changing(lambda engine: engine.delete(keys, filter))
        check_deletable(self.at().table_schema)
        self._fresh = False
        return self._call(written_snapshot, keys, None, delete_kind=True)

    def compact(self, full: bool = False, progress: Any = None) -> Any:
        """Compact by Paimon's universal rules (``full``: every bucket into one sorted run) on
        the engine (`Table.compact`): the COMPACT snapshot, or None when there was nothing to do."""
        return self.at().compact(full, progress)

    def plan_schema(self, snapshot: Any) -> pa.Schema:
        """The columns a read of `snapshot` sees (time travel: its schema's)."""
        return self.at(snapshot).schema

    def plan(self, filter: Any = None, snapshot: Any = None, order_by: Any = None,
             limit: int | None = None) -> Any:
        return self.at(snapshot).plan(filter, snapshot, order_by, limit)

    def read(self, columns: str | list[str] | None = None, filter: Any = None, snapshot: Any = None,
             threads: int | None = None, order_by: Any = None, limit: int | None = None,
             sorted: bool = False) -> pa.Table:
        reader = self.at(snapshot)
        try:
            return reader.read(columns, filter, snapshot, threads, order_by, limit, sorted)
        finally:
            self.last_read = reader.last_read

    def scan(self, columns: str | list[str] | None = None, filter: Any = None, snapshot: Any = None,
             order_by: Any = None, limit: int | None = None, source: str | None = None,
             sorted: bool = False) -> pa.RecordBatchReader:
        reader = self.at(snapshot)
        try:
            return reader.scan(columns, filter, snapshot, order_by, limit, source, sorted)
        finally:
            self.last_read = reader.last_read

    def changes(self, start: Any = None, end: Any = None, columns: str | list[str] | None = None,
                filter: Any = None, per_commit: bool = False, consumer_id: str | None = None,
                source: str = "auto") -> pa.RecordBatchReader:
        """`Table.changes` of the table, in the schema its `end` snapshot is read with; with
        `consumer_id`, the consumer's progress is Paimon's consumer file (``consumer/consumer-<id>``),
        which Java's snapshot expiry honours too."""
        if start is None and consumer_id is None:
            raise InvalidArgumentError("changes needs start (a snapshot id or a tag name) or a consumer_id to resume")
        try:
            reader = self.at(end or None)
        except SnapshotNotFoundError:  # named as the change asked it, by the engine's checks
            reader = self.at(None)
        try:
            return reader.changes(start, end, columns, filter, per_commit, consumer_id, source)
        finally:
            self.last_read = reader.last_read

    # -- options and the organize levers: the engine's, on the latest schema --------------
    def set_options(self, options: dict) -> None:
        """Change the table's options as Java's ALTER TABLE SET / RESET does (a value of None
        resets one): the next schema file, Java's rules for what may change; mergetree's own
        options (the query log, the optimizer's) under the ``mergetree.`` prefix Java ignores."""
        self._changing(lambda engine: engine.set_options(options))

    def aggregate(self, group_by: Any, measures: dict, filter: Any = None, snapshot: Any = None) -> pa.Table:
        """`Table.aggregate` on the table: answered from the files' pre-aggregates (their extra
        files) where a model covers the query, from a scan elsewhere."""
        reader = self.at(snapshot)
        try:
            return reader.aggregate(group_by, measures, filter, snapshot)
        finally:
            self.last_read = reader.last_read

    def advise(self, since: Any = None, apply: bool = False, sample_rows: int = 200_000) -> Any:
        """`Table.advise` on the table, from its query log (a Paimon append table of its own at
        ``<table>/queries``, written while ``mergetree.query-log.enabled`` is true); `apply`
        writes the advice into the table's options (``mergetree.``-prefixed where they are
        mergetree's own), as `set_options` does."""
        return self._changing(lambda engine: engine.advise(since, apply, sample_rows))

    def expire_queries(self, retention: Any = None) -> Any:
        """`Table.expire_queries` on the table's query log."""
        return self.at().expire_queries(retention)

    def optimize(self, order: Any = None, strategy: Any = None, filter: Any = None, target_file_size: Any = None,
                 sort_within: Any = None, progress: Any = None) -> Any:
        """`Table.optimize` on the table: an append table's files laid out by the order (its
        layout under mergetree's own options), written at the top level, where Java's incremental
        clustering keeps what it clustered; a primary-key table compacted in full."""
        return self._changing(lambda engine: engine.optimize(order, strategy, filter, target_file_size, sort_within,
                                                             progress))

    def build_indexes(self, progress: Any = None) -> Any:
        """`Table.build_indexes` on the table: files without the Parquet Bloom filters or the file
        index its options declare rewritten, the others given their missing pre-aggregates as
        extra files; one commit."""
        return self._changing(lambda engine: engine.build_indexes(progress))

    def add_aggregate(self, name: str, group_by: Any, measures: dict, build: bool = True) -> None:
        """`Table.add_aggregate`: the model in the table's options (``mergetree.aggregate.*``),
        its per-file results extra files of their data files."""
        self._changing(lambda engine: engine.add_aggregate(name, group_by, measures, build))

    def drop_aggregate(self, name: str) -> None:
        """`Table.drop_aggregate`: the model out of the table's options."""
        self._changing(lambda engine: engine.drop_aggregate(name))

    def _changing(self, call: Any) -> Any:
        """`call` on the engine's `Table` of the latest schema, which it may alter (a layout
        stored, advice applied): the next call reads the table afresh."""
        try:
            return call(self.at())
        finally:
            self._fresh, self._directory = False, None

    def expire_snapshots(self, retain_last: int | None = None, older_than: Any = None,
                         retain_max: int | None = None) -> list[int]:
        """`Table.expire_snapshots` on the table as Paimon keeps it: snapshot files removed
        oldest first, then the files only they used (data files at external paths too); what a
        tag, a consumer (``consumer/consumer-<id>``) or a kept changelog (``changelog.*``
        retention: ``changelog/changelog-<id>``) still needs stays; the EARLIEST hint follows."""
        return self.at().expire_snapshots(retain_last, older_than, retain_max)

    # -- tags: Paimon's (``tag/tag-<name>``), through the engine ---------------------------
    def create_tag(self, name: str, snapshot: Any = None) -> Any:
        return self._changing(lambda engine: engine.create_tag(name, snapshot))

    def delete_tag(self, name: str) -> None:
        self._changing(lambda engine: engine.delete_tag(name))

    def tags(self) -> dict:
        return self.at().tags()

    # -- consumers: Paimon's (``consumer/consumer-<id>``), through the engine --------------
    def consumers(self) -> list[Consumer]:
        return self.at().consumers()

    def consumer(self, consumer_id: str) -> Consumer:
        return self.at().consumer(consumer_id)

    def reset_consumer(self, consumer_id: str, next_snapshot: int) -> Consumer:
        return self.at().reset_consumer(consumer_id, next_snapshot)

    def drop_consumer(self, consumer_id: str) -> None:
        self.at().drop_consumer(consumer_id)

    def remove_orphan_files(self, older_than: Any = dt.timedelta(days=1)) -> list[str]:
        """`Table.remove_orphan_files` on the table: only the kinds of file Paimon's writers make
        (data, changelog, index, manifest and statistics files where Paimon puts them), never a
        snapshot, schema, tag, consumer or kept changelog, nor anything else beside them."""
        return self.at().remove_orphan_files(older_than)

    def __repr__(self) -> str:
        schema = self._table.schema()
        return (f"Table({self.path!r}, Apache Paimon, primary_key={list(schema.primary_keys)}, "
                f"buckets={schema.options.get('bucket', '-1')})")


# -- the public functions ------------------------------------------------------------------

def scan(warehouse: Any, table: Any, columns: Any = None, filter: Any = None, snapshot: Any = None,
         threads: Any = None, storage_options: Mapping[str, object] | None = None,
         sorted: bool = False) -> pa.RecordBatchReader:
    """Stream a Paimon table's rows (a `pa.RecordBatchReader`, also an Arrow C stream), bucket
    by bucket in key order (`sorted=True`: in primary-key order across buckets): `Table.scan`
    of the table (`threads` is accepted and unused: a scan reads a bucket section at a time).
    The warehouse and `storage_options` are as `read`'s."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise InvalidArgumentError(f"threads must be a positive integer or None, not {threads!r}")
    return PaimonTableHandle(warehouse, storage_options, table).scan(columns, filter, snapshot, sorted=sorted)


def read(warehouse: Any, table: Any, columns: Any = None, filter: Any = None, snapshot: Any = None,
         threads: Any = None, storage_options: Mapping[str, object] | None = None, order_by: Any = None,
         limit: Any = None, sorted: bool = False) -> pa.Table:
    """Read a Paimon table (or `columns` of it, rows matching `filter`) at `snapshot` (an id or
    a tag name; default the latest) into one Arrow table: `Table.read` of the table (table
    `table` "db.name" of a filesystem-catalog warehouse, or `table` None and `warehouse` the
    table's own directory).  `warehouse` is a local directory or a URI (``s3://bucket/warehouse``,
    ``gs://...``, ``az://...``) with `storage_options` as `Table.open` takes them (credentials,
    endpoint, region; used, never stored).  With `order_by` and `limit`, a Top-N read;
    `sorted=True`: rows in primary-key order across buckets."""
    return PaimonTableHandle(warehouse, storage_options, table).read(columns, filter, snapshot, threads,
                                                                      order_by, limit, sorted)


def changes(warehouse: Any, table: Any, start: Any, end: Any = None, columns: Any = None, filter: Any = None,
            storage_options: Mapping[str, object] | None = None, source: str = "auto",
            consumer_id: str | None = None) -> pa.RecordBatchReader:
    """What changed in a Paimon table from snapshot `start` to `end` (ids or tag names; `end`
    default the latest, `start` 0 before the first snapshot): `Table.changes` of the table,
    rows with ``_row_kind`` (+I, -U, +U, -D).  `source`: "auto", "delta" (the net change per
    key, computed) or "changelog" (the table's changelog files as written, commit after
    commit).  `consumer_id`: a Paimon consumer (``consumer/consumer-<id>``) that records how far it
    read; `start` None resumes it.  The warehouse and `storage_options` are as `read`'s."""
    return PaimonTableHandle(warehouse, storage_options, table).changes(start, end, columns, filter,
                                                                         consumer_id=consumer_id, source=source)


def compact(warehouse: Any, table: Any, full: bool = False, progress: Any = None,
            storage_options: Mapping[str, object] | None = None) -> int | None:
    """Compact a Paimon primary-key table: `Table.compact` of the table (Paimon's
    universal-compaction rules, or everything into one sorted run per bucket with
    ``full=True``; deletion-vector and first-row tables as Java's lookup compaction does).
    Returns the id of the ``COMPACT`` snapshot committed, or None when there was nothing to do.
    `progress(rows_done, rows_total)` is called as rows are merged.  The warehouse and
    `storage_options` are as `read`'s; the commit needs the store's conditional create (a store
    without one refuses before anything is written)."""
    done = PaimonTableHandle(warehouse, storage_options, table).compact(full, progress)
    return None if done is None else done.id
