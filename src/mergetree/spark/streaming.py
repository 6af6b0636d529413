"""Spark Structured Streaming in and out of mergetree tables: the stream writer (a sink with
exactly-once commits) and the stream reader (a table's changes, snapshot by snapshot), both
reached through the `mergetree` data source (`source.MergetreeDataSource.streamWriter` /
`streamReader`).

Sink: `df.writeStream.format("mergetree").option("checkpointLocation", cp).start(path)`.  Each
task writes level-0 files through the table's write path (as the batch writer does); the driver
commits each micro-batch once, recording `spark.query-id` and `spark.batch-id` in the snapshot's
properties.  A batch Spark replays after a failure finds its batch (or a later one) already
committed by its query and discards its files instead of committing twice.  The query id is
Spark's own (`<checkpointLocation>/metadata`), stable across restarts from one checkpoint; the
option `queryId` names one instead.  Rows with a `_row_kind` column (or the column named by
`rowKindColumn`, e.g. Debezium's `op`) are applied as upserts, retractions and deletes.

Source: `spark.readStream.format("mergetree").option("read.changelog", "true").load(path)`.
Offsets are snapshot ids (`{"snapshot": N}`: every change up to snapshot N is read); each
micro-batch reads the changes of the commits in (start, end], one Spark partition per changed
bucket, commit by commit.  Rows are the table's columns, `_row_kind` (+I, -U, +U, -D) and
`_snapshot_id` (the commit the row changed in)."""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from ..errors import ConsumerNotFoundError, InvalidArgumentError, SnapshotNotFoundError
from ..merge.row_kind import ROW_KIND_COLUMN, symbols_of
from ..paimon.write import compact_after_write
from ..table import Table, consumers
from ..table.changes import SNAPSHOT_ID_COLUMN, ChangePlan, ChangeUnit, plan_changes, read_changes
from ..table.commit import Change, commit_with_rebase, next_sequences
from ..table.directory import TableDirectory
from ..table.read import BucketPlan, read_bucket
from ..table.snapshots import FileEntry, Snapshot, changelog_snapshot
from ..table.write import commit_write
from .tables import FilesMessage, open_or_create, open_table, split_storage_options, write_task
from .types import spark_ddl, spark_schema, to_spark_batch

__all__ = ["BATCH_ID_PROPERTY", "QUERY_ID_PROPERTY", "READ_CHANGELOG", "SCAN_MODES", "SINK_OPTIONS",
           "SNAPSHOT_ID_COLUMN", "MergetreeStreamReader", "MergetreeStreamWriter", "change_ddl", "last_committed_batch",
           "read_changelog_option", "stream_query_id"]

# what a streaming sink's snapshot records: which query committed it, and which micro-batch
QUERY_ID_PROPERTY = "spark.query-id"
BATCH_ID_PROPERTY = "spark.batch-id"
# Paimon's Spark option: the DataFrame's rows carry their row kind.  Spark asks a Python data
# source for one schema whether it is read as a batch or a stream, so a stream read of changes
# says so with this option (the change columns are then part of the schema).
READ_CHANGELOG = "read.changelog"
SCAN_MODES = ("latest", "latest-full", "from-snapshot", "from-timestamp")
# the sink's own options (lower case), never table options when it creates the table
SINK_OPTIONS = {"checkpointlocation", "queryid", "rowkindcolumn"}


def _bool_option(options: Mapping[str, Any], key: str) -> bool:
    value = options.get(key)
    if value is None:
        return False
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise InvalidArgumentError(f"option {key} must be true or false, not {value!r}")
    return text == "true"


def _positive_int(options: Mapping[str, Any], key: str) -> int | None:
    value = options.get(key.lower())
    if value is None:
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise InvalidArgumentError(f"option {key} must be a positive integer, not {value!r}")
    return number


def read_changelog_option(options: Mapping[str, Any]) -> bool:
    """Whether a read asks for the table's changes (option `read.changelog`; lower-case keys)."""
    return _bool_option(options, READ_CHANGELOG)


def change_ddl(table_schema: pa.Schema) -> str:
    """The Spark DDL of a stream of a table's changes: its columns, `_row_kind`, `_snapshot_id`."""
    for name in (ROW_KIND_COLUMN, SNAPSHOT_ID_COLUMN):
        if name in table_schema.names:
            raise InvalidArgumentError(f"the table has a column named {name!r}, which a stream of its changes "
                                       f"adds itself; rename the column to read its changes as a stream")
    return spark_ddl(table_schema.append(pa.field(ROW_KIND_COLUMN, pa.string()))
                     .append(pa.field(SNAPSHOT_ID_COLUMN, pa.int64())))


def _storage_and_table(options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return options["path"], split_storage_options(options)[0]


def _open(path: str, storage_options: Mapping[str, Any]) -> Table:
    return open_table(path, storage_options)


# -- the sink -------------------------------------------------------------------------------

def stream_query_id(options: Mapping[str, Any]) -> str:
    """The id a streaming sink records with its commits: the option `queryId`, else the id
    Spark keeps in `<checkpointLocation>/metadata` (stable across restarts from that checkpoint:
    what makes a replayed batch recognizable).  Lower-case keys."""
    given = options.get("queryid")
    if given is not None and str(given).strip():
        return str(given).strip()
    location = options.get("checkpointlocation")
    if not location:
        raise InvalidArgumentError(
            "a mergetree streaming sink needs the query's checkpoint to commit each micro-batch exactly once: "
            "set .option('checkpointLocation', dir) on writeStream (or .option('queryId', id): an id that stays "
            "the same across restarts of this query)")
    metadata = _read_checkpoint_file(str(location), "metadata")
    try:
        query_id = json.loads(metadata)["id"]
    except (ValueError, KeyError, TypeError):
        raise InvalidArgumentError(f"the checkpoint {location} has no query id in its metadata file "
                                   f"(not a Spark streaming checkpoint?)") from None
    return str(query_id)


def _read_checkpoint_file(location: str, name: str) -> bytes:
    """A file of Spark's checkpoint directory (a local path, `file:` or any URI pyarrow reads)."""
    import pyarrow.fs as pafs
    try:
        if "://" in location or location.startswith("file:"):
            fs, root = pafs.FileSystem.from_uri(location)
        else:
            fs, root = pafs.LocalFileSystem(), location
        with fs.open_input_stream(f"{root.rstrip('/')}/{name}") as f:
            return bytes(f.read())
    except (OSError, pa.ArrowInvalid) as exc:
        raise InvalidArgumentError(f"cannot read the query id from the checkpoint {location} ({exc}): "
                                   f"give the sink .option('queryId', id)") from None


def last_committed_batch(directory: TableDirectory, latest: Snapshot | None, query_id: str,
                         down_to: int = 0) -> tuple[int | None, int]:
    """(the last batch id that query `query_id` committed, or None, the snapshot it was found in
    or 0): walks back from `latest` to the newest snapshot with this query id — usually the one
    before, so a commit costs one snapshot read — and stops there, at snapshot `down_to`
    (already looked at), or at the oldest snapshot still kept."""
    if latest is None:
        return None, 0
    snapshot_id = latest.id
    while snapshot_id > down_to:
        try:
            snapshot = latest if snapshot_id == latest.id else directory.store.snapshot(snapshot_id)
        except SnapshotNotFoundError:
            break  # expired: nothing older is kept
        if snapshot.properties.get(QUERY_ID_PROPERTY) == query_id:
            return int(snapshot.properties[BATCH_ID_PROPERTY]), snapshot_id
        snapshot_id -= 1
    return None, 0


class AlreadyCommitted(Exception):
    """This micro-batch (or a later one) of the query is already in the table."""


class MergetreeStreamWriter(DataSourceStreamArrowWriter):
    """The streaming sink: tasks write level-0 files; `commit(messages, batchId)` commits them
    once per micro-batch with the query and batch ids in the snapshot's properties, after
    checking that neither this batch nor a later one of the same query is already committed.
    Creates the table from the stream's schema (less the row-kind column) on first use, with
    the batch writer's options (`primaryKey`, `partitionBy`, `buckets`, ...)."""

    def __init__(self, options: dict, spark_schema_: Any, overwrite: bool) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema
        self.path, self.storage_options = _storage_and_table(options)
        self.overwrite = overwrite
        self.row_kind_column: str | None = options.get("rowkindcolumn") or None
        self.query_id = stream_query_id(options)
        arrow = to_arrow_schema(spark_schema_, timezone="UTC")
        kind_name = self.row_kind_column or ROW_KIND_COLUMN
        if kind_name in arrow.names:  # the kinds are not a column of the table
            arrow = arrow.remove(arrow.get_field_index(kind_name))
        elif self.row_kind_column is not None:
            raise InvalidArgumentError(f"option rowKindColumn names {self.row_kind_column!r}, which the stream "
                                       f"lacks; its columns: {spark_schema_.fieldNames()}")
        table = open_or_create(self.path, self.storage_options, arrow,
                               {k: v for k, v in options.items() if k not in SINK_OPTIONS})
        base = table.latest_snapshot()
        self.next_seq = {} if overwrite else next_sequences(table.directory.live_files(base).values())

    def __repr__(self) -> str:  # the path, never the storage options
        return f"{type(self).__name__}({self.path!r}, query={self.query_id!r})"

    def _directory(self) -> TableDirectory:
        return _open(self.path, self.storage_options).directory

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FilesMessage:
        """A task's rows through the table's write buffer (memory bounded by
        `write-buffer-size`), as level-0 files."""
        return write_task(self._directory(), iterator, self.next_seq, self.row_kind_column, self.overwrite)

    def commit(self, messages: list, batchId: int) -> None:
        directory = self._directory()
        adds = [FileEntry.from_json(e) for m in messages if m is not None for e in m.entries]
        if not adds and not self.overwrite:
            return  # nothing to commit; a replay of it commits nothing either
        properties = {QUERY_ID_PROPERTY: self.query_id, BATCH_ID_PROPERTY: str(batchId)}
        checked = {"down_to": 0}  # snapshots already looked at: a lost race re-checks only newer ones

        def not_yet_committed(latest: Snapshot | None) -> None:
            # decided on the very snapshot the commit goes on top of: a commit by anyone in
            # between makes this commit lose its race and look again
            committed, _ = last_committed_batch(directory, latest, self.query_id, checked["down_to"])
            if committed is not None and committed >= batchId:
                raise AlreadyCommitted
            checked["down_to"] = latest.id if latest is not None else 0

        def replace_all(latest: Snapshot | None) -> Change:
            not_yet_committed(latest)
            return Change(adds, list(directory.live_files(latest).values()))
        try:
            if self.overwrite:
                snapshot = commit_with_rebase(directory, directory.latest_snapshot(), replace_all, "OVERWRITE",
                                              properties)
            else:  # renumbered after newer writes, with the changelog the table's producer asks for
                snapshot = commit_write(directory, adds, directory.latest_snapshot(), properties,
                                        check=not_yet_committed)
        except AlreadyCommitted:
            directory.discard(adds)  # a replay of a committed batch: its new files are not needed
            return
        except BaseException:
            directory.discard(adds)
            raise
        if snapshot is not None:  # the touched buckets compacted, as after every write (a lookup changelog with it)
            store = directory.store
            touched = {(e.partition, e.bucket) for e in adds if not directory.is_changelog(e.file.file_name)}
            compact_after_write(store.table, store.schema, touched, snapshot.id)

    def abort(self, messages: list, batchId: int) -> None:
        """Failed micro-batch: remove the files of tasks that reported; the rest are orphans
        (`Table.remove_orphan_files`)."""
        self._directory().discard([FileEntry.from_json(e) for m in messages if m is not None for e in m.entries])


# -- the source -----------------------------------------------------------------------------

@dataclass(frozen=True)
class FullPartition(InputPartition):
    """One bucket of the snapshot a `latest-full` stream starts with, its rows tagged +I."""

    def __init__(self, bucket_plan: BucketPlan, snapshot_id: int) -> None:  # InputPartition is frozen
        object.__setattr__(self, "value", ("full", bucket_plan.partition, bucket_plan.bucket))
        object.__setattr__(self, "bucket_plan", bucket_plan)
        object.__setattr__(self, "snapshot_id", snapshot_id)


@dataclass(frozen=True)
class ChangePartition(InputPartition):
    """One `ChangeUnit` (a bucket's changes over the micro-batch's commits), with its plan cut
    down to that unit.  The plan travels as its fields less `stats` (the statistics of the
    process reading it, which hold a lock): the task makes its own."""

    def __init__(self, plan: ChangePlan, unit: ChangeUnit) -> None:
        fields = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan) if f.name != "stats"}
        object.__setattr__(self, "value", ("changes", unit.partition, unit.bucket))
        object.__setattr__(self, "plan_fields", {**fields, "units": [unit]})
        object.__setattr__(self, "unit", unit)

    @property
    def plan(self) -> ChangePlan:
        return ChangePlan(**self.plan_fields)


# Offsets.  A position: `{"snapshot": N}`, every change up to snapshot N read; the first
# position of a `latest-full` stream, `{"snapshot": L, "full": true}`: nothing read, snapshot L
# whole pending.  The end offset of a micro-batch also names where the batch started
# (`"from"`, `"fromFull"`): Spark logs end offsets but asks the source again for the first
# start after a restart, and a `latest` or `latest-full` start moves with the table; so a
# micro-batch is read from its logged end offset alone, the same before and after a restart.

def _offset(snapshot_id: int, full: bool = False) -> dict:
    return {"snapshot": snapshot_id, "full": True} if full else {"snapshot": snapshot_id}


def _batch_end(end_id: int, start_id: int, start_full: bool) -> dict:
    return {"snapshot": end_id, "from": start_id, "fromFull": start_full}


def _position(offset: Mapping[str, Any]) -> tuple[int, bool]:
    """(snapshot id read up to, whether that snapshot is pending whole) of an offset as a start."""
    return int(offset["snapshot"]), bool(offset.get("full", False))


def _batch(start: Mapping[str, Any], end: Mapping[str, Any]) -> tuple[int, bool, int]:
    """(start id, full read of it first, end id) of the micro-batch (start, end]."""
    if "from" in end:
        return int(end["from"]), bool(end.get("fromFull", False)), int(end["snapshot"])
    start_id, full = _position(start)
    return start_id, full, int(end["snapshot"])


class MergetreeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Reads a table's changes as a stream.  Options (Paimon's names): `scan.mode` (`latest`:
    the changes after the latest snapshot at start; `latest-full`, the default: that snapshot
    whole as +I rows, then the changes; `from-snapshot` with `scan.snapshot-id`: the changes
    from that snapshot on; `from-timestamp` with `scan.timestamp-millis`: from the first
    snapshot committed at or after it), `read.stream.maxSnapshotsPerTrigger`,
    `read.stream.maxRowsPerTrigger` (whole snapshots, at least one per micro-batch; rows are
    those the commits wrote), `batchSize`, `consumer-id` (a named consumer: a new query starts
    where it stopped, whatever `scan.mode` says, and each finished micro-batch records its
    progress, so expiry keeps what the stream still reads)."""

    def __init__(self, options: dict, spark_schema_: Any) -> None:
        self.path, self.storage_options = _storage_and_table(options)
        names = list(spark_schema_.fieldNames())
        if ROW_KIND_COLUMN not in names:
            raise InvalidArgumentError(
                f"a stream read of a mergetree table gives its changes, each row with its kind: set "
                f".option({READ_CHANGELOG!r}, 'true') on readStream (Spark gives a Python data source one "
                f"schema for batch and stream reads, and the change columns are in it only with this option)")
        self.columns = [n for n in names if n not in (ROW_KIND_COLUMN, SNAPSHOT_ID_COLUMN)]
        self.batch_size = int(options.get("batchsize", 65536))
        self.mode = str(options.get("scan.mode", "latest-full")).strip().lower()
        if self.mode not in SCAN_MODES:
            raise InvalidArgumentError(f"option scan.mode must be one of {', '.join(SCAN_MODES)}, "
                                       f"not {options.get('scan.mode')!r}")
        self.start_snapshot = _positive_int(options, "scan.snapshot-id")
        timestamp = options.get("scan.timestamp-millis")
        try:
            self.start_millis = int(str(timestamp).strip()) if timestamp is not None else None
        except ValueError:
            raise InvalidArgumentError(f"option scan.timestamp-millis must be milliseconds since the epoch, "
                                       f"not {timestamp!r}") from None
        if self.mode == "from-snapshot" and self.start_snapshot is None:
            raise InvalidArgumentError("scan.mode from-snapshot needs the option scan.snapshot-id")
        if self.mode == "from-timestamp" and self.start_millis is None:
            raise InvalidArgumentError("scan.mode from-timestamp needs the option scan.timestamp-millis")
        self.consumer_id = options.get("consumer-id") or None
        if self.consumer_id is not None:
            consumers.check_id(self.consumer_id)
        self.max_snapshots = _positive_int(options, "read.stream.maxSnapshotsPerTrigger")
        self.max_rows = _positive_int(options, "read.stream.maxRowsPerTrigger")
        self.target: int | None = None  # Trigger.AvailableNow: the latest snapshot when the query started
        self._rows: dict[int, int] = {}  # snapshot id -> rows its commit wrote (admission control)

    def __repr__(self) -> str:  # the path, never the storage options
        return f"{type(self).__name__}({self.path!r}, mode={self.mode!r})"

    def _directory(self) -> TableDirectory:
        return _open(self.path, self.storage_options).directory

    def _latest_id(self) -> int:
        latest = self._directory().store.latest_id()
        return latest or 0

    # -- offsets ---------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        if self.consumer_id is not None:
            try:  # a known consumer resumes where it stopped
                return _offset(consumers.get(self._directory(), self.consumer_id).next_snapshot - 1)
            except ConsumerNotFoundError:
                pass
        latest = self._latest_id()
        if self.mode == "latest":
            return _offset(latest)
        if self.mode == "latest-full":
            return _offset(latest, full=latest > 0)  # an empty table: all its changes, from the first
        if self.mode == "from-snapshot":
            assert self.start_snapshot is not None
            return _offset(self.start_snapshot - 1)
        assert self.start_millis is not None
        return _offset(self._first_at_or_after(self.start_millis) - 1)

    def _first_at_or_after(self, millis: int) -> int:
        """The first kept snapshot committed at or after `millis` (commit times only grow);
        past the latest when there is none yet."""
        store = self._directory().store
        ids = store.snapshot_ids()
        lo, hi = 0, len(ids)
        while lo < hi:
            mid = (lo + hi) // 2
            if store.snapshot(ids[mid]).time_millis < millis:
                lo = mid + 1
            else:
                hi = mid
        return ids[lo] if lo < len(ids) else (ids[-1] + 1 if ids else 1)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        if self.max_snapshots is not None:
            return ReadMaxFiles(self.max_snapshots)  # a snapshot is the unit a stream admits
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._latest_id()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        start_id, full = _position(start)
        latest = self._latest_id() if self.target is None else self.target
        if isinstance(limit, ReadAllAvailable):
            max_snapshots, max_rows = None, None  # Spark's word overrides the options
        else:
            max_snapshots = limit.max_files if isinstance(limit, ReadMaxFiles) else self.max_snapshots
            max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.max_rows
        if latest <= start_id:  # nothing new (a pending full read is one micro-batch of its own)
            return _batch_end(start_id, start_id, True) if full else start
        if max_snapshots is None and max_rows is None:
            return _batch_end(latest, start_id, full)
        # whole snapshots, at least one (the full read of a latest-full start counts as one)
        store = self._directory().store  # opened once for every snapshot counted
        taken = 1 if full else 0
        rows = store.snapshot(start_id).total_record_count if full else 0
        end = start_id
        for snapshot_id in range(start_id + 1, latest + 1):
            more = self._snapshot_rows(store, snapshot_id)
            if taken and ((max_snapshots is not None and taken + 1 > max_snapshots)
                          or (max_rows is not None and rows + more > max_rows)):
                break
            end, taken, rows = snapshot_id, taken + 1, rows + more
        return _batch_end(end, start_id, full)

    def _snapshot_rows(self, store: Any, snapshot_id: int) -> int:
        """Rows commit `snapshot_id` wrote (a compaction: none), counted once per query."""
        if snapshot_id not in self._rows:
            snapshot, _ = changelog_snapshot(store, snapshot_id)
            if snapshot.commit_kind == "COMPACT":
                rows = 0
            elif snapshot.commit_kind == "APPEND":
                rows = max(snapshot.delta_record_count, 0)
            else:  # an overwrite: the rows it adds (what it removes is not counted)
                rows = sum(e.file.row_count for name in store.manifest_names(snapshot.delta_manifest_list)
                           for kind, e in store.read_manifest(name) if kind == "ADD")
            self._rows[snapshot_id] = rows
        return self._rows[snapshot_id]

    def commit(self, end: dict) -> None:
        """A micro-batch up to `end` is done: the consumer (if named) reads the next snapshot next."""
        if self.consumer_id is not None:
            consumers.record(self._directory(), self.consumer_id, _position(end)[0] + 1)

    # -- micro-batches ---------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        start_id, full, end_id = _batch(start, end)
        table = _open(self.path, self.storage_options)
        out: list[InputPartition] = []
        if full:
            out += [FullPartition(b, start_id) for b in table.plan(None, start_id).buckets]
        if end_id > start_id:
            plan = plan_changes(table.directory, start_id, end_id, columns=self.columns, per_commit=True)
            out += [ChangePartition(plan, u) for u in plan.units]
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        directory = self._directory()
        out_schema = spark_schema(pa.schema(
            [directory.schema.schema.field(c) for c in self.columns]
            + [pa.field(ROW_KIND_COLUMN, pa.string()), pa.field(SNAPSHOT_ID_COLUMN, pa.int64())]))
        if isinstance(partition, FullPartition):
            batches = self._full_rows(directory, partition)
        elif isinstance(partition, ChangePartition):
            batches = read_changes(directory, partition.plan, partition.unit)
        else:
            return  # no partition planned: Spark still runs a task, on a partition of its own
        for batch in batches:
            batch = batch.select(out_schema.names)
            for first in range(0, batch.num_rows, self.batch_size):
                yield to_spark_batch(batch.slice(first, self.batch_size), out_schema)

    def _full_rows(self, directory: TableDirectory, partition: FullPartition) -> Iterator[pa.RecordBatch]:
        for batch in read_bucket(directory, partition.bucket_plan, self.columns, None, None):
            n = batch.num_rows
            yield pa.RecordBatch.from_arrays(
                list(batch.columns) + [symbols_of(np.zeros(n, np.int8)),  # +I
                                       pa.array(np.full(n, partition.snapshot_id, np.int64))],
                names=list(batch.schema.names) + [ROW_KIND_COLUMN, SNAPSHOT_ID_COLUMN])
