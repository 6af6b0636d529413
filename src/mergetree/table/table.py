"""`Table`: the public face of a primary-key or append table on Parquet.  Each method checks
its arguments and hands the work to the module that does it (write, read, compaction,
housekeeping), all working on the table's `TableDirectory`."""
from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..merge import ROW_KIND_COLUMN, RowKind
from . import changes, consumers, durations, formats, housekeeping, read, write
from . import filters as flt
from .compaction.runner import Progress, compact_buckets
from .consumers import Consumer
from .deletes import delete_where
from .directory import TableDirectory, alter_options, alter_schema, locate
from .info import TableInfo, table_info
from .levers import optimize
from .levers.aggregate import aggregate
from .levers.preaggregates import normalize_measures
from .options import TableOptions, aggregate_model_options
from .paimon.create import create_directory
from .paimon.store import open_directory
from .read import ReadStats
from .schema import TableSchema
from .schema_update import SchemaUpdate
from .snapshots import Snapshot
from .workload import history, querylog
from .workload.advise import Advice, advise
from .workload.retention import Expired, expire

__all__ = ["Table"]


class Table:
    """A table directory.  Create one with `Table.create`, open one with `Table.open`."""

    def __init__(self, directory: TableDirectory) -> None:
        self.directory = directory
        # what the latest read, scan or aggregate on this object did (files and bytes read)
        self.last_read: read.ReadStats | None = None

    # -- creating and opening ---------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike, schema: pa.Schema, primary_key=None, partition_by=None,
               buckets: int | None = None, bucket_key=None, merge_engine: str = "deduplicate",
               options: dict | None = None, storage_options: dict | None = None) -> Table:
        """Create a table in a new or empty directory, or under an empty object-store prefix
        (`s3://bucket/prefix`, `gs://`, `az://`, `abfss://`; `storage_options` as in
        docs/STORAGE.md: credentials, endpoint, region — used, never stored).  Everything is
        checked first: a bad argument or option raises before anything is written.

        The table is an Apache Paimon table every Paimon engine reads (``W/db.db/name`` is table
        ``db.name`` of warehouse ``W``; docs/PAIMON.md).  `buckets` None: one bucket; an append
        table of one bucket without a bucket key has none (``bucket`` -1, Paimon's default for
        append tables: Java asks a bucketed one for a bucket key)."""
        if buckets is None:
            buckets = 1
        if buckets == 1 and not primary_key and not bucket_key:
            buckets = -1  # one bucket of an append table is Paimon's unbucketed table (Java wants a bucket key)
        create_directory(path, schema, primary_key, partition_by, buckets, bucket_key, merge_engine, options,
                         storage_options)
        return cls.open(path, storage_options=storage_options)

    @classmethod
    def open(cls, path: str | os.PathLike, check: bool = True, storage_options: dict | None = None) -> Table:
        """Open a table (a local path or a URI, with `storage_options` as for `create`).  With
        `check` (the default) the latest snapshot is read too, so a damaged one is reported
        here, naming the file and how to recover; `check=False` opens a table whose latest
        snapshot is damaged, to read an older one.

        An Apache Paimon table — whoever wrote it: Java, pypaimon, mergetree — opens too (its
        directory, or ``W/db.db/name`` in a filesystem-catalog warehouse): a `Table` whose
        write, delete, read, scan, compact, changes and info work on it as
        `mergetree.paimon` does (docs/PAIMON.md)."""
        storage = locate(path, storage_options)
        if not formats.is_paimon_table(storage):
            formats.refuse_older(storage)  # a table of the older format: says how to migrate it
            open_directory(storage)  # says what is there instead (TableNotFoundError)
        return formats.open_paimon(path, storage_options, check)

    @classmethod
    def repair(cls, path: str | os.PathLike, storage_options: dict | None = None) -> list[str]:
        """Set damaged snapshot files at the top of the history aside (into
        snapshot/damaged/, never deleted) so the table continues from its newest intact
        snapshot; the changes those snapshots committed are lost.  Then drop what is damaged
        in the table's query log and optimizer history (`path` may be one of those itself).
        Returns what was done, a line per file."""
        return housekeeping.repair(open_directory(locate(path, storage_options)))

    def at(self, snapshot: Any = None) -> Table:
        """The engine's `Table` whose reads of `snapshot` see it as its schema says (not pinned to
        it): itself, every snapshot reading under the latest schema (an Apache Paimon table's
        `Table.open` answer has a front of its own, whose `at` is the engine's)."""
        return self

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

    def info(self) -> TableInfo:
        """The table's layout, size, options, index coverage and, per clustering column, how
        tight its files are (the average number of files holding a value)."""
        return table_info(self.directory)

    def set_options(self, options: dict) -> None:
        """Change table options (a value of None removes one); checked like options at create,
        stored as a new schema version.  They apply to what is written from now on; `optimize`
        and `build_indexes` bring existing files along."""
        self.directory = alter_options(self.directory, options)

    def update_schema(self) -> SchemaUpdate:
        """Change the table's columns in one schema change, as Paimon's ALTER TABLE does:
        ``with table.update_schema() as update: update.add_column(...)`` (and `rename_column`,
        `drop_column`, `update_column`, `move_column`); published when the block ends, refused
        whole — nothing written — where Paimon's rules refuse a change.  Files written before
        are read by field id under the new schema (docs/PAIMON.md, "Schema evolution")."""
        def publish(changes: list) -> None:
            self.directory = alter_schema(self.directory, changes)
        return SchemaUpdate(publish)

    def snapshots(self) -> list[Snapshot]:
        store = self.directory.store
        return [store.snapshot(i) for i in store.snapshot_ids()]

    def latest_snapshot(self) -> Snapshot | None:
        return self.directory.latest_snapshot()

    # -- writing ----------------------------------------------------------------------
    def write(self, data: Any, row_kind_column: str | None = None, overwrite: Any = False,
              evolve: bool = False) -> Snapshot | None:
        """Upsert rows: a pa.Table, RecordBatch, RecordBatchReader, any Arrow stream
        (`__arrow_c_stream__`), an iterator of RecordBatches/Tables, a pandas DataFrame, a dict
        of columns or a list of row dicts.  Streams are consumed batch by batch through the
        write buffer (`write-buffer-size`), so memory stays bounded however long they are.
        Every batch is checked; a bad one leaves nothing written.  The rows become visible in
        one commit (or every `write.commit-every-buffers` buffers); a lost commit race is
        retried without the input (the spilled files are the data).

        Change streams (CDC): rows with a row-kind column — `_row_kind` (what `changes` returns),
        or the column `row_kind_column` names, e.g. Debezium's `op` — are applied as their kinds
        say: +I and +U (Debezium's c, r, u) upsert, -D (d) deletes the key, -U retracts the version
        (an aggregate table subtracts it; elsewhere it deletes the key until the +U that follows).
        The column is not stored.  The table refuses, before anything is written, what Paimon's
        merge functions refuse (retractions in first-row and
        partial-update tables unless `ignore-delete`; in an append table anything but +I).

        `overwrite`: True replaces the partitions the data holds (the whole table when it is
        unpartitioned), a partition (``{"dt": "2024-05-01"}``, some or all partition columns)
        replaces that partition — every row must be in it —, in one OVERWRITE snapshot.

        `evolve`: columns the data has and the table lacks are added first (nullable, last, with
        the data's types; one schema change, as `update_schema` makes it), instead of refused."""
        if row_kind_column is not None and not isinstance(row_kind_column, str):
            raise InvalidArgumentError(f"row_kind_column must be a column name, not {row_kind_column!r}")
        data = self._evolved(data, evolve, row_kind_column)
        return write.write_rows(self.directory, data, RowKind.INSERT, row_kind_column, overwrite).snapshot

    def _evolved(self, data: Any, evolve: Any, row_kind_column: str | None) -> Any:
        """`data` (re-wrapped where its schema had to be looked at), the table's schema given
        the columns it lacks first when `evolve`."""
        if not isinstance(evolve, bool):
            raise InvalidArgumentError(f"evolve must be True or False, not {evolve!r}")
        if not evolve:
            return data
        data, added = write.new_columns(data, self.schema, {row_kind_column or ROW_KIND_COLUMN})
        if added:
            with self.update_schema() as update:
                for field in added:
                    update.add_column(field.name, field.type)
        return data

    def delete(self, keys: Any = None, filter: flt.Filter = None) -> Snapshot | None:
        """Delete rows by primary key (`keys` holds at least the primary-key columns), or the
        rows a condition selects (`filter`, as `read` takes it; SQL's ``DELETE ... WHERE``: a
        row the condition is null for stays), as Paimon's engines delete them: a condition on
        partition columns only drops those partitions (any table); a primary-key table writes
        the rows back as ``-D`` (deduplicate tables, as Paimon's ``validatePKUpsertDeletable``);
        an append table rewrites the files holding them (copy on write).  One snapshot (None:
        nothing matched)."""
        if (keys is None) == (filter is None):
            raise InvalidArgumentError("delete takes keys (rows holding the primary-key columns) or filter (a "
                                       "condition), one of them")
        if filter is not None:
            return delete_where(self.directory, flt.normalize(filter, self.schema))
        write.check_deletable(self.directory.schema)
        return write.write_rows(self.directory, keys, RowKind.DELETE).snapshot

    def compact(self, full: bool = False, progress: Progress | None = None) -> Snapshot | None:
        """Compact every bucket that needs it (all of them with full=True) in one commit.
        `progress(rows_done, rows_total)` is called as rows are merged."""
        if not isinstance(full, bool):
            raise InvalidArgumentError(f"full must be True or False, not {full!r}")
        if progress is not None and not callable(progress):
            raise InvalidArgumentError(f"progress must be a callable (rows_done, rows_total), not {progress!r}")
        return compact_buckets(self.directory, None, full=full, progress=progress)

    # -- reading ----------------------------------------------------------------------
    def plan(self, filter: flt.Filter = None, snapshot: Any = None, order_by: Any = None,
             limit: int | None = None) -> read.ReadPlan:
        """Which files (and row groups) a read with this filter touches, by bucket and section,
        and what each pruning step removed (`ReadPlan.steps`, `ReadPlan.explain()`)."""
        order, limit = read.order_by_for(self.directory, order_by, limit)
        return read.plan_read(self.directory, flt.normalize(filter, self.schema), snapshot, order, limit)

    def read(self, columns: str | list[str] | None = None, filter: flt.Filter = None,
             snapshot: Any = None, threads: int | None = None, order_by: Any = None,
             limit: int | None = None, sorted: bool = False) -> pa.Table:
        """Merge-on-read of the table (or of `snapshot`: an id, a tag name, or a point in time —
        a `datetime` or an ISO 8601 string, naive meaning local time — whose snapshot is the
        newest committed at or before it, read under the schema it was committed with) as one
        pa.Table.

        Without `order_by`, rows come bucket by bucket (partitions and buckets in order, each
        bucket's rows in primary-key order; with deletion vectors, file by file), not in one
        global key order.  `sorted=True` gives them in primary-key order (the key as declared,
        across buckets and partitions), merged from the buckets by the loser tree as they are
        read (with `limit`, the first rows in key order; not with `order_by`; a primary-key
        table only).  With `order_by`
        ([(column, "asc"|"desc")], nulls last, ties broken by the other columns) and `limit`,
        a Top-N read: files are read best first and reading stops once no unread file can
        hold a better row.  `limit` alone stops after that many rows.  Buckets are read in
        `threads` threads (default: one per CPU).  `last_read` then says what was read."""
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise InvalidArgumentError(f"threads must be a positive integer or None, not {threads!r}")
        started = time.perf_counter()
        requests_before = self.directory.storage.requests.counts()
        prepared = read.prepare_read(self.directory, columns, filter, snapshot, order_by, limit, sorted)
        out = read.read_table(self.directory, prepared, threads)
        prepared.stats.requests = read.requests_since(requests_before, self.directory.storage.requests.counts())
        self.last_read = prepared.stats
        if querylog.logging_enabled(self.directory):
            self._log("read", prepared.filter, prepared.plan.snapshot_id, prepared.stats, started,
                      columns=prepared.columns, order_by=prepared.order_by, limit=prepared.limit)
        return out

    def scan(self, columns: str | list[str] | None = None, filter: flt.Filter = None,
             snapshot: Any = None, order_by: Any = None, limit: int | None = None,
             source: str | None = None, sorted: bool = False) -> pa.RecordBatchReader:
        """A streaming read: one bucket section at a time, merged with the loser tree (rows
        in the order `read` gives them; a Top-N or limited scan is computed first; with
        `sorted=True`, every bucket's sections merged into primary-key order as they stream,
        a batch at a time, a `limit` stopping the reads).  `source`
        names who asked in the query log (an engine whose thread consumes the scan does not
        see the caller's `query_source`)."""
        started = time.perf_counter()
        prepared = read.prepare_read(self.directory, columns, filter, snapshot, order_by, limit, sorted)
        self.last_read = prepared.stats
        reader = read.scan_table(self.directory, prepared)
        if not querylog.logging_enabled(self.directory):
            return reader

        def logged() -> Iterator[pa.RecordBatch]:
            rows = 0
            try:
                for batch in reader:
                    rows += batch.num_rows
                    yield batch
            finally:  # logged when the scan is exhausted or dropped
                prepared.stats.rows_out = rows
                self._log("scan", prepared.filter, prepared.plan.snapshot_id, prepared.stats, started,
                          columns=prepared.columns, order_by=prepared.order_by, limit=prepared.limit,
                          source=source)

        return pa.RecordBatchReader.from_batches(reader.schema, logged())

    def changes(self, start: int | None = None, end: int | None = None, columns: str | list[str] | None = None,
                filter: flt.Filter = None, per_commit: bool = False,
                consumer_id: str | None = None, source: str = "auto") -> pa.RecordBatchReader:
        """What commits `start`+1..`end` (default: the latest) changed: per primary key its net
        change, `_row_kind` +I (a new key), -U then +U (old and new row), -D (the old row);
        `start` == 0 is the empty table before the first commit, `start == end` changes nothing.
        Only the files those commits added are read, against the touched keys' rows in
        snapshot `start` (pruned by key ranges, Bloom filters and statistics).  `per_commit`:
        each commit's change in commit order, with `_snapshot_id`.  `columns` projects (keys
        always come too; an update whose projected columns did not change is not a change);
        `filter` gives the change of the filtered view (applied to `read(start, filter)` it gives
        `read(end, filter)`); changelog rows read as written are kept when they pass, an update
        whole.
        An append table's change is its added rows, +I.

        `consumer_id` names a consumer (`consumers()`): without `start`, the change starts where
        it stopped (ConsumerNotFoundError if there is no such consumer; where the snapshot
        before its next one expired — Java's expiry of a Paimon table keeps only from the next
        one on — its commits are read as written, `source` "changelog"); once the reader is read
        to its end, the consumer records that it reads `end` + 1 next, and while it is active
        `expire_snapshots` keeps what its next change needs.

        `source`: "auto" (computed, or from changelog files where they are exact), "delta"
        (always computed), "changelog" (the commits' changelog files as written, commit after
        commit: ``changelog-producer`` input or lookup; with ``none``, the rows each commit
        wrote, kinds as written).  `start` and `end` may be tag names where the table has tags.
        See docs/CHANGES.md."""
        if start is None:
            if consumer_id is None:
                raise InvalidArgumentError("changes needs start (a snapshot id) or a consumer_id to resume")
            start = consumers.get(self.directory, consumer_id).next_snapshot - 1
            if source == "auto" and start > 0 and start not in self.directory.store.snapshot_ids():
                # the snapshot before the consumer's next expired (Java's expiry keeps snapshots
                # from a consumer's next one on): its commits as written, as Java's stream read resumes
                source = "changelog"
        elif consumer_id is not None:
            consumers.check_id(consumer_id, self.directory)
        plan = changes.plan_changes(self.directory, start, end, columns, filter, per_commit, source)
        self.last_read = plan.stats

        def batches() -> Iterator[pa.RecordBatch]:
            rows = 0
            stream: Iterator[pa.RecordBatch]
            if per_commit or plan.as_written:
                stream = changes.read_in_commit_order(self.directory, plan)
            else:
                stream = changes.read_units(self.directory, plan)
            for batch in stream:
                rows += batch.num_rows
                yield batch
            plan.stats.rows_out = rows
            if consumer_id is not None:  # read to the end: the consumer moves past it
                consumers.record(self.directory, consumer_id, plan.end + 1)

        return pa.RecordBatchReader.from_batches(plan.schema, batches())

    def aggregate(self, group_by: str | list[str] | None, measures: dict, filter: flt.Filter = None,
                  snapshot: int | None = None) -> pa.Table:
        """GROUP BY `group_by` with `measures` ({"amount": "sum", "price": ["min", "max"],
        "*": "count"}); result columns `<column>_<function>` (`rows_count` for "*"), groups
        sorted.  Answered from pre-aggregates (`add_aggregate`) where a model covers the query
        and a file's rows are final, from a scan elsewhere; the answer is the same either way."""
        started = time.perf_counter()
        result, plan, stats = aggregate(self.directory, group_by, measures, filter, snapshot)
        self.last_read = stats
        if querylog.logging_enabled(self.directory):
            groups = [group_by] if isinstance(group_by, str) else list(group_by or [])
            self._log("aggregate", flt.normalize(filter, self.schema), plan.snapshot_id, stats, started,
                      group_by=groups, measures=[(c, f) for c, f in normalize_measures(measures, self.schema)])
        return result

    def _log(self, kind: str, f: flt.Filter, snapshot_id: int | None, stats: ReadStats, started: float,
             columns: Sequence[str] | None = None, order_by: Sequence[tuple[str, str]] = (),
             limit: int | None = None, group_by: Sequence[str] = (),
             measures: Sequence[tuple[str, str]] = (), source: str | None = None) -> None:
        querylog.record_read(self.path, kind, f, snapshot_id, stats, started, columns, order_by, limit, group_by,
                             measures, source)

    # -- data organization --------------------------------------------------------------
    def advise(self, since: dt.timedelta | dt.datetime | str | None = None, apply: bool = False,
               sample_rows: int = 200_000) -> Advice:
        """Recommend a layout, indexes, an in-file sort and pre-aggregates from the query log
        (queries newer than `since`: an age, a `timedelta` or '30d', or a moment) and a sample of
        the data, each with its reason and the effect measured by replaying the logged queries on
        simulated layouts.  `apply=True` writes the recommendation into the table's options;
        `optimize` (or the optimizer daemon) then carries it out."""
        since = durations.parse_since(since)  # an age (timedelta, '30d') or a moment, as the CLI's --since
        querylog.flush(self.path)  # this process's reads are in the log before it is read
        advice = advise(self.directory, since, sample_rows)
        if apply and advice.options:
            self.set_options(advice.options)
        return advice

    def expire_queries(self, retention: dt.timedelta | float | str | None = None) -> Expired:
        """Remove the query log's records older than `retention` (a `timedelta`, seconds, '30d'
        or 'forever'; default the table's `query-log.retention` option, 30 days) in one atomic
        commit, and delete the log files no snapshot uses any more.  The optimizer daemon does
        this every round; the advisor and the report read only what is kept."""
        querylog.flush(self.path)  # this process's reads are in the log before it is cut
        return expire(self.path, retention)

    def optimize(self, order: str | list[str] | None = None, strategy: str | None = None,
                 filter: flt.Filter = None, target_file_size: int | None = None,
                 sort_within: str | list[str] | None = None, progress: Progress | None = None) -> Snapshot | None:
        """Rewrite the files `filter` selects (all by default) so that each is tight on the
        `order` columns: "linear" (sorted by them in order), "zorder" or "hilbert" (space-filling
        curves over ranks from sampled quantiles, for 2 to 8 columns that are filtered on
        separately).  `sort_within` orders rows inside each file (Top-N reads stop early).  An
        explicit layout is stored in the table's options, so `optimize()` without arguments and
        each write keep it.  One atomic commit; a concurrent commit that replaced an input file
        aborts it cleanly.  On a primary-key table (files sorted by the key), only a full
        compaction is possible: other columns raise an error saying what to do instead."""
        started = time.perf_counter()
        f = flt.normalize(filter, self.directory.schema.schema)  # a bad filter changes nothing
        # the layout is stored first, in a commit of its own: this object sees it even when the
        # rewrite then fails, and a later `optimize()` finishes the job
        self.directory, options = optimize.prepare_layout(self.directory, order, strategy, target_file_size,
                                                          sort_within)
        snapshot = optimize.optimize(self.directory, options, f, progress)
        if snapshot is not None:  # a layout change by hand is in the optimizer's history, as the daemon's are
            history.record_rewrite(self.directory, snapshot, "optimize", time.perf_counter() - started)
        return snapshot

    def build_indexes(self, progress: Progress | None = None) -> Snapshot | None:
        """Give existing files the Bloom filters, bitmap indexes and pre-aggregates the options
        declare (new files get them when written); one commit."""
        return optimize.build_indexes(self.directory, progress)

    def add_aggregate(self, name: str, group_by: str | list[str], measures: dict, build: bool = True) -> None:
        """Declare a pre-aggregate model: every data file gets a small sidecar of its rows
        grouped by `group_by` with `measures` ({"amount": "sum", "*": "count"}; sum, count,
        min, max).  `build` back-fills existing files now."""
        self.directory = alter_options(self.directory, aggregate_model_options(name, group_by, measures,
                                                                                self.schema))
        if build:
            self.build_indexes()

    def drop_aggregate(self, name: str) -> None:
        """Forget a pre-aggregate model (files keep their sidecars until rewritten)."""
        if name not in self.options.aggregate_models:
            raise InvalidArgumentError(f"no pre-aggregate {name!r}; the table has "
                                       f"{sorted(self.options.aggregate_models)}")
        self.directory = alter_options(self.directory, {f"aggregate.{name}.group-by": None,
                                                        f"aggregate.{name}.measures": None})

    # -- housekeeping -----------------------------------------------------------------
    def expire_snapshots(self, retain_last: int | None = None, older_than: dt.timedelta | float | None = None,
                         retain_max: int | None = None) -> list[int]:
        """Delete old snapshots and the files only they used, as Paimon's expiry does: the
        newest `retain_last` always stay (default: the table's ``snapshot.num-retained.min``,
        10), none beyond the newest `retain_max` (``snapshot.num-retained.max``, unbounded),
        and in between those older than `older_than` go (a timedelta or seconds; default
        ``snapshot.time-retained``, an hour; 0: any age) — never one an active consumer still
        reads, nor what a tag or a kept changelog needs.  Consumers idle for
        `consumer.expiration-time` are removed first.  With `changelog.num-retained.*` /
        `changelog.time-retained` set, an expired snapshot's changelog is kept (and expired by
        those options).  Every commit also runs this with the table's options, ten snapshots
        at most (``snapshot.expire.limit``), unless the table is ``write-only``.  Returns the
        expired ids."""
        return housekeeping.expire_snapshots(self.directory, retain_last, older_than, retain_max=retain_max)

    # -- consumers: named readers of the table's changes, each holding back expiry -------
    # -- tags -------------------------------------------------------------------------
    def create_tag(self, name: str, snapshot: Any = None) -> Snapshot:
        """Tag a snapshot (an id, another tag, a point in time; default the latest) as `name`,
        as Paimon's tags are (``tag/tag-<name>``, read by every Paimon engine): time travel and
        change streams take the name wherever they take an id, and expiry keeps what it needs
        until `delete_tag`.  Returns the tagged snapshot; an existing name is refused."""
        snap = read.snapshot_for(self.directory, snapshot)
        return housekeeping.create_tag(self.directory, name, snap)

    def delete_tag(self, name: str) -> None:
        """Delete tag `name` (and the files only it kept, where its snapshot expired)."""
        housekeeping.delete_tag(self.directory, name)

    def tags(self) -> dict[str, Snapshot]:
        """The table's tags by name, each with the snapshot it holds."""
        return housekeeping.tags(self.directory)

    def consumers(self) -> list[Consumer]:
        """Every consumer (id, the next snapshot it reads, when it last recorded progress), by id."""
        return consumers.consumers(self.directory)

    def consumer(self, consumer_id: str) -> Consumer:
        """One consumer; ConsumerNotFoundError (listing the known ones) if there is none."""
        return consumers.get(self.directory, consumer_id)

    def reset_consumer(self, consumer_id: str, next_snapshot: int) -> Consumer:
        """Create consumer `consumer_id` or move it (back or forward) to read `next_snapshot` next:
        a snapshot of the table, an expired one whose changelog is kept, or the next commit's id."""
        return consumers.reset(self.directory, consumer_id, next_snapshot)

    def drop_consumer(self, consumer_id: str) -> None:
        """Remove a consumer: it no longer holds back expiry."""
        consumers.drop(self.directory, consumer_id)

    def remove_orphan_files(self, older_than: dt.timedelta | float = dt.timedelta(days=1)) -> list[str]:
        """Delete the table's files that no snapshot references (left by failed writes,
        crashes or aborted compactions) and that are older than `older_than` (a timedelta
        or seconds; default a day, as Paimon's), so that commits in flight keep theirs.  Only files whose names and
        places match the table's own patterns are ever deleted; snapshots and the schema
        never are."""
        return housekeeping.remove_orphan_files(self.directory, older_than)

    def __repr__(self) -> str:
        ts = self.directory.schema
        keys = f"primary_key={list(ts.primary_key)}" if ts.has_primary_key else "append"
        return f"Table({self.path!r}, {keys}, buckets={ts.buckets}, engine={ts.merge_engine!r})"
