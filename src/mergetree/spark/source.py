"""The `mergetree` Python data source: reads with one Spark partition per bucket — or, for a
bucket larger than `splitSize`, one per key range of it — merged with the loser tree in the
task, filter pushdown, time travel; writes stream each task's rows through the table's own
write buffer, with one atomic snapshot per job.  With the option `paimon.warehouse` it reads
an Apache Paimon table instead (`load("db.table")`), planned and read by the same engine
(`PaimonReader`); the warehouse may be a URI too (`s3://lake/warehouse`), with the same
storage options.

A table may live on an object store (`load("s3://bucket/prefix")`): the Python workers read
and write it themselves, with the storage options among the data source's options (the keys
of `Table.open(..., storage_options=)`, `mergetree.storage.OPTION_KEYS`, e.g.
`.option("aws_endpoint_url", ...)` or `.options(**storage_options)`) or, without them, the
workers' environment.  The options travel with the job (Spark pickles the reader and writer
into each task); they are never written anywhere, and no name or repr of this module shows
them."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
)

from ..errors import (
    InvalidArgumentError,
    MergeTreeError,
    SchemaMismatchError,
    UnsupportedPaimonFeatureError,
    UnsupportedTypeError,
)
from ..paimon.handle import PaimonTableHandle
from ..paimon.write import compact_after_write
from ..table import Table
from ..table import filters as flt
from ..table.commit import Change, commit_with_rebase, next_sequences
from ..table.compaction.planner import parse_memory_size
from ..table.paimon.metadata import PaimonTable
from ..table.paimon.store import PaimonSnapshotStore
from ..table.paimon.tables import check_writable
from ..table.read import (
    BucketPlan,
    file_filter,
    final_filter,
    read_bucket,
    snapshot_for,
    split_bucket,
    split_by_file,
)
from ..table.snapshots import FileEntry, Snapshot
from ..table.workload import querylog
from ..table.write import commit_spilled, commit_write, overwritten
from .tables import (
    CREATE_OPTIONS,
    TASK_SEQUENCE_SPAN,
    FilesMessage,
    names_option,
    open_or_create,
    open_table,
    split_storage_options,
    write_task,
)
from .types import spark_ddl, spark_schema, to_spark_batch

# (`open_table`, `split_storage_options`, `open_or_create`, `FilesMessage`: from `tables`, shared with `streaming`)
__all__ = ["CREATE_OPTIONS", "PAIMON_WAREHOUSE", "SOURCE_NAME", "TASK_SEQUENCE_SPAN", "FilesMessage",
           "MergetreeDataSource", "PaimonReader", "open_or_create", "open_table", "register", "split_storage_options",
           "to_mergetree_filter"]

SOURCE_NAME = "mergetree"
PAIMON_WAREHOUSE = "paimon.warehouse"  # the option that makes a read a Paimon read


def register(spark: Any) -> None:
    """Make `spark.read.format("mergetree")` and `df.write.format("mergetree")` available."""
    spark.dataSource.register(MergetreeDataSource)


# -- filters ----------------------------------------------------------------------------

_COMPARISONS = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}


def to_mergetree_filter(f: Any, schema: pa.Schema) -> tuple | None:
    """A Spark filter as a checked mergetree filter tuple, or None if it cannot be expressed."""
    attribute: tuple = getattr(f, "attribute", ())
    if len(attribute) != 1 or attribute[0] not in schema.names:
        return None  # nested fields, unknown columns
    column = attribute[0]
    if isinstance(f, IsNull):
        converted: tuple = (column, "is null", None)
    elif isinstance(f, IsNotNull):
        converted = (column, "is not null", None)
    elif isinstance(f, In):
        converted = (column, "in", list(f.value))
    elif type(f) in _COMPARISONS:
        converted = (column, _COMPARISONS[type(f)], f.value)
    else:
        return None  # Not, EqualNullSafe, string predicates: Spark applies them
    try:
        return flt.normalize(converted, schema)
    except (InvalidArgumentError, UnsupportedTypeError):
        # a value mergetree cannot compare exactly (say, a NULL in IN), or a type the policy cannot
        # filter (nested): Spark applies it
        return None


# -- reads --------------------------------------------------------------------------------

@dataclass(frozen=True)
class BucketPartition(InputPartition):
    """One bucket of one partition (or one key range of a large bucket, or one file of a
    deletion-vector table read alone), with the files the driver planned for it: the unit of a
    read task (so tasks never re-plan the table)."""

    def __init__(self, bucket_plan: BucketPlan) -> None:  # InputPartition is a frozen dataclass
        files = bucket_plan.files
        alone = files[0].file_name if len(files) == 1 and files[0].resolved else None
        object.__setattr__(self, "value", (bucket_plan.partition, bucket_plan.bucket, bucket_plan.key_range, alone))
        object.__setattr__(self, "bucket_plan", bucket_plan)


class MergetreeDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _options(self) -> dict:
        return {k.lower(): v for k, v in self.options.items()}  # Spark's keys ignore case

    def __repr__(self) -> str:  # never the options: they may hold credentials
        return f"{type(self).__name__}()"

    def schema(self) -> str:
        options = self._options()
        if PAIMON_WAREHOUSE in options:
            return paimon_ddl(options)
        table_schema = open_table(options["path"], split_storage_options(options)[0]).schema
        from .streaming import change_ddl, read_changelog_option
        if read_changelog_option(options):  # a stream of the table's changes (`streaming`)
            return change_ddl(table_schema)
        return spark_ddl(table_schema)

    def reader(self, schema: Any) -> MergetreeReader | PaimonReader:
        from .streaming import READ_CHANGELOG, read_changelog_option
        if read_changelog_option(self._options()):  # (before anything is opened)
            raise InvalidArgumentError(
                f"option {READ_CHANGELOG!r} is for stream reads (spark.readStream); a batch read of changes "
                f"between two snapshots: Table.changes(start, end) or `mergetree changes PATH --from N`")
        options = _paimon_by_path(self._options())
        if PAIMON_WAREHOUSE in options:
            return PaimonReader(options, schema)
        return MergetreeReader(options)

    def streamReader(self, schema: Any) -> Any:
        """`spark.readStream.format("mergetree").option("read.changelog", "true").load(path)`:
        the table's changes (`streaming.MergetreeStreamReader`)."""
        from .streaming import MergetreeStreamReader
        options = self._options()
        if PAIMON_WAREHOUSE in options:
            raise InvalidArgumentError(f"mergetree reads Paimon tables as batches only (option {PAIMON_WAREHOUSE!r})")
        return MergetreeStreamReader(options, schema)

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        """`df.writeStream.format("mergetree")`: exactly-once micro-batch commits
        (`streaming.MergetreeStreamWriter`)."""
        from .streaming import MergetreeStreamWriter
        options = self._options()
        if PAIMON_WAREHOUSE in options:
            raise InvalidArgumentError(f"mergetree writes Paimon tables in batches only (option {PAIMON_WAREHOUSE!r}): "
                                       f"df.write.format('mergetree').option({PAIMON_WAREHOUSE!r}, warehouse)"
                                       f".save('db.table')")
        return MergetreeStreamWriter(options, schema, overwrite)

    def writer(self, schema: Any, overwrite: bool) -> MergetreeWriter:
        options = _paimon_by_path(self._options())
        if PAIMON_WAREHOUSE in options:
            return PaimonWriter(options, schema, overwrite)
        return MergetreeWriter(options, schema, overwrite)


# pyspark 4.0-4.3 plan a pushed read in the pushdown worker (a fresh reader: `reader()`,
# `pushFilters`, `partitions`) and keep its pickled `read` and partitions on the JVM's
# `PythonDataSourceV2`, one per `load()` and shared by every scan of that DataFrame
# (`PythonScanBuilder.pushFilters` sets it; `PythonBatch` takes whatever is there when it plans).
# A query that pushes no filter (`df.count()`: Spark skips Python for an empty list) calls no
# Python on the driver and runs the last pushed read, filters and pruned partitions included; two
# filtered scans of one DataFrame in one query (a union, a self-join) both run the second one's.
# Its tasks get the same bytes, and nothing in them (execution id, stage) is known at planning,
# so no pruning can tell the queries apart: not a fingerprint in the partitions, not handing every
# filter back to Spark (the pruned buckets are still all that is read).  Filters are taken only
# when a read asks (`pushFilters`), until a pyspark keeps that read in its own scan (SPARK-58551,
# in Spark's master for 5.0).  test_spark_source checks this default against the installed pyspark.
STALE_PUSHDOWN_SPARK = (4, 3)


def push_filters_option(options: Mapping[str, Any]) -> bool:
    """Whether a reader takes Spark's filters (prunes buckets and files, applies them exactly):
    the `pushFilters` option, by default only on a pyspark that plans pushed reads per scan."""
    value = options.get("pushfilters")
    if value is None:
        import pyspark
        version = tuple(int(p) for p in pyspark.__version__.split(".")[:2] if p.isdigit())
        return version > STALE_PUSHDOWN_SPARK
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise InvalidArgumentError(f"option pushFilters must be true or false, not {value!r}")
    return text == "true"


DEFAULT_SPLIT_SIZE = "32 mb"
MAX_SPLITS_PER_BUCKET = 256


class MergetreeReader(DataSourceReader):
    """Options: `snapshot` (time travel), `batchSize` (rows per Arrow batch handed to Spark),
    `splitSize` (a bucket whose files hold more than this, e.g. "64 mb", is read by several
    tasks, one per key range; default 32 mb), `pushFilters` (take Spark's filters to prune
    buckets and files; see STALE_PUSHDOWN_SPARK for the default)."""

    def __init__(self, options: dict) -> None:
        self.path = options["path"]
        self.storage_options = split_storage_options(options)[0]
        self.batch_size = int(options.get("batchsize", 65536))
        self.split_size = parse_memory_size(options.get("splitsize", DEFAULT_SPLIT_SIZE), "splitSize")
        self.push_filters = push_filters_option(options)
        self.columns: list[str] | None = None   # None: every column
        self.snapshot = self._snapshot_id(options)
        self.filters: list[tuple] = []

    def _snapshot_id(self, options: dict) -> int | str | None:
        """The snapshot every task reads (the option `snapshot`, else the latest), fixed now."""
        snapshot = options.get("snapshot")
        latest = self._open().latest_snapshot()
        return int(snapshot) if snapshot is not None else (latest.id if latest else None)

    def __repr__(self) -> str:  # the path, never the storage options
        return f"{type(self).__name__}({self.path!r}, snapshot={self.snapshot})"

    def _open(self) -> Table:
        return open_table(self.path, self.storage_options)

    def pushFilters(self, filters: list) -> Iterator:
        """Keep what mergetree can evaluate (it prunes with it and applies it exactly after
        the merge); hand the rest back to Spark.  Without `pushFilters` (see
        STALE_PUSHDOWN_SPARK): hand every filter back and keep none, so the read this plans
        is the whole table, right for any query that reuses it."""
        if not self.push_filters:
            yield from filters
            return
        schema = self._open().schema
        for f in filters:
            converted = to_mergetree_filter(f, schema)
            if converted is None:
                yield f
            else:
                self.filters.append(converted)

    def partitions(self) -> list[BucketPartition]:
        if self.snapshot is None:
            return []
        table = self._open()
        plan = table.plan(self.filters or None, self.snapshot)
        if querylog.logging_enabled(table.directory):
            # the driver knows the files the query reads; rows and time are the executors'
            files = plan.files
            querylog.record(table.path, querylog.QueryRecord(
                "read", flt.normalize(self.filters or None, table.schema), snapshot_id=plan.snapshot_id,
                files_scanned=len(files), files_total=plan.files_total,
                bytes_scanned=sum(m.file_size for m in files), bytes_total=plan.bytes_total, source="spark"))
            # Spark plans in a short-lived Python worker that may exit before a background
            # flush: write the record now (a failure is reported, never raised)
            querylog.flush(table.path)
        # a deletion-vector table's resolved files are read alone: a task per file; what still
        # merges is split by key range as in any table
        out = []
        for b in plan.buckets:
            alone, rest = split_by_file(b)
            out += [BucketPartition(piece) for piece in alone]
            if rest is not None:
                out += [BucketPartition(piece) for piece in split_bucket(table.directory, rest, self._pieces(rest))]
        return out

    def _pieces(self, bucket: BucketPlan) -> int:
        return min(max(-(-bucket.bytes // self.split_size), 1), MAX_SPLITS_PER_BUCKET)

    def read(self, partition: BucketPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, BucketPartition):
            return  # the plan kept no bucket: Spark still runs one task, on a partition of its own
        directory = self._open().directory
        schema = directory.schema.schema
        columns = self.columns or schema.names
        out_schema = spark_schema(pa.schema([schema.field(c) for c in columns]))
        f = flt.normalize(self.filters or None, schema)
        # the filter's columns are read too, and the asked ones kept after it
        read = [c for c in schema.names if c in set(columns) | (flt.columns_of(f) or set())]
        for batch in read_bucket(directory, partition.bucket_plan, read, flt.to_expression(f, schema),
                                 file_filter(directory, f), final_filter=final_filter(directory, f)):
            if read != columns:
                batch = batch.select(columns)
            for start in range(0, batch.num_rows, self.batch_size):
                yield to_spark_batch(batch.slice(start, self.batch_size), out_schema)


# -- Paimon reads -------------------------------------------------------------------------

def _paimon_table(options: dict) -> tuple[str, str | None]:
    """(warehouse, "db.table") of a Paimon read or write: the warehouse option, the table from
    load() (or the option `table`); (the table's directory, None) for one read by path."""
    table = options.get("path") or options.get("table")
    if not table:
        raise InvalidArgumentError(f"a Paimon read names its table: .option({PAIMON_WAREHOUSE!r}, warehouse)"
                                   f".load('database.table')")
    if table == options[PAIMON_WAREHOUSE]:
        return table, None
    return options[PAIMON_WAREHOUSE], table


def _paimon_by_path(options: dict) -> dict:
    """A data source's options, a Paimon table named by its own directory (`load(path)`,
    `save(path)`) made a Paimon read or write of that directory."""
    path = options.get("path")
    if PAIMON_WAREHOUSE in options or not path:
        return options
    try:
        table = open_table(path, split_storage_options(options)[0] or None)
    except MergeTreeError:
        return options  # no table (a write creates one), or one the reader reports on
    return {**options, PAIMON_WAREHOUSE: path} if isinstance(table, PaimonTableHandle) else options


def _paimon_storage_options(options: Mapping[str, Any]) -> dict[str, Any] | None:
    """The storage options of a Paimon read (None: a local warehouse, or a URI's credentials
    from the environment or from how this process opened it)."""
    return split_storage_options(options)[0] or None


def _paimon_snapshot(options: dict) -> int | str | None:
    """The option `snapshot`: a snapshot id (digits) or a tag name; None reads the latest."""
    text = options.get("snapshot")
    if text is None or not text.strip():
        return None
    text = text.strip()
    return int(text) if text.isdigit() else text


def _paimon_columns(options: dict) -> list[str] | None:
    """The option `columns` ("a, b"): read only these, in this order."""
    return names_option(options.get("columns"))


def _paimon_at(options: dict) -> Table:
    """The engine's `Table` over the Paimon table of these options as its read sees it (the
    snapshot's schema), its options checked: what mergetree cannot honour raises
    `UnsupportedPaimonFeatureError` here, when the DataFrame is created."""
    warehouse, name = _paimon_table(options)
    return PaimonTableHandle(warehouse, _paimon_storage_options(options), name).at(_paimon_snapshot(options))


def paimon_ddl(options: dict) -> str:
    """The Spark DDL of a Paimon read: the table's columns (or the option `columns`)."""
    schema = _paimon_at(options).schema
    columns = _paimon_columns(options)
    if columns is not None:
        unknown = [c for c in columns if c not in schema.names]
        if unknown:
            raise InvalidArgumentError(f"option columns names {unknown}, which Paimon table "
                                       f"{_paimon_table(options)[1]} lacks; columns: {schema.names}")
    return spark_ddl(pa.schema([schema.field(c) for c in (columns or schema.names)]))


class PaimonReader(MergetreeReader):
    """Reads an Apache Paimon table: `spark.read.format("mergetree").option("paimon.warehouse",
    warehouse).load("db.table")`, planned and read by the engine as `MergetreeReader` reads
    mergetree's tables (a task per bucket, or per key range of a large bucket, or per resolved
    file of a deletion-vector table).  Options: `snapshot` (an id or a tag name), `columns` (a
    comma-separated projection; a schema given with `.schema(...)` naming a subset of the
    columns does the same), `batchSize`, `splitSize`, `pushFilters` (see STALE_PUSHDOWN_SPARK),
    and the storage options of a warehouse on an object store (keys of
    `mergetree.storage.OPTION_KEYS`).

    The storage options travel in the reader (Spark pickles it into each task), as
    `MergetreeReader`'s do: a partition's files name their table by path only (`PaimonTable`
    pickles no credentials), and each task opens that path's store with the reader's options
    before it reads a file."""

    def __init__(self, options: dict, spark_schema_: Any = None) -> None:
        self.warehouse, self.table = _paimon_table(options)
        self.tag_or_id = _paimon_snapshot(options)
        super().__init__({**options, "path": self.warehouse})
        schema = self._open().schema
        # the columns Spark asks for: those of schema() (maybe `columns`), or a schema the user gave
        self.columns = list(spark_schema_.fieldNames()) if spark_schema_ is not None else \
            (_paimon_columns(options) or schema.names)
        unknown = [c for c in self.columns if c not in schema.names]
        if unknown:
            raise InvalidArgumentError(f"columns {unknown} are not in Paimon table {self.table or self.warehouse}; "
                                       f"its columns: {schema.names}")
        self.requested: pa.Schema | None = None  # the Arrow types Spark expects, checked in partitions()
        if spark_schema_ is not None:
            from pyspark.sql.pandas.types import to_arrow_schema
            self.requested = to_arrow_schema(spark_schema_, timezone="UTC")

    def __repr__(self) -> str:  # the warehouse and table, never the storage options
        return f"{type(self).__name__}({self.table!r})"

    def _open(self) -> Table:
        return PaimonTableHandle(self.warehouse, self.storage_options or None, self.table).at(self.tag_or_id)

    def _snapshot_id(self, options: dict) -> int | str | None:
        if isinstance(self.tag_or_id, str):
            return self.tag_or_id  # a tag holds its snapshot, also once that snapshot expired
        snapshot = snapshot_for(self._open().directory, self.tag_or_id)
        return snapshot.id if snapshot is not None else None

    def partitions(self) -> list[BucketPartition]:
        schema = self._open().schema
        produced = spark_schema(pa.schema([schema.field(c) for c in self.columns or schema.names]))
        if self.requested is not None and [f.type for f in produced] != [f.type for f in self.requested]:
            have = ", ".join(f"{f.name} {f.type}" for f in produced)
            want = ", ".join(f"{f.name} {f.type}" for f in self.requested)
            raise SchemaMismatchError(f"Paimon table {self.table or self.warehouse} reads as ({have}) in Spark's Arrow "
                                      f"types, not the schema given ({want}); give a schema with these types or none")
        return super().partitions()


# -- writes -----------------------------------------------------------------------------

# Spark's tasks would each place new keys by a hash index of their own, and two could give one
# key two buckets: a dynamic-bucket table takes Java's single assigner, which mergetree's Spark
# writes do not have yet
DYNAMIC_BUCKETS_IN_SPARK = ("a dynamic-bucket Paimon table (bucket = -1) is written by one writer that places each "
                            "key by the hash index; mergetree's Spark writes cannot do that yet: write it with "
                            "Table.write (Arrow in, one process), or give the table a fixed bucket count")

class MergetreeWriter(DataSourceArrowWriter):
    """Writes level-0 files per task through the table's write path; the driver commits them
    all as one snapshot.  Creates the table from the DataFrame's schema if there is none
    (options `primaryKey`, `partitionBy`, `buckets`, `bucketKey`, `mergeEngine`, and any table
    option by its name)."""

    def __init__(self, options: dict, spark_schema_: Any, overwrite: bool) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema
        self.path = options["path"]
        self.storage_options = split_storage_options(options)[0]
        self.overwrite = overwrite
        table = open_or_create(self.path, self.storage_options, to_arrow_schema(spark_schema_, timezone="UTC"),
                               options)
        base = table.latest_snapshot()
        self.base_id = base.id if base else None
        self.next_seq = {} if overwrite else next_sequences(table.directory.live_files(base).values())

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FilesMessage:
        """Stream the task's rows through the table's write buffer: memory is bounded by
        `write-buffer-size`, not by how many rows the task holds."""
        return write_task(self._open().directory, iterator, self.next_seq, overwrite=self.overwrite)

    def __repr__(self) -> str:  # the path, never the storage options
        return f"{type(self).__name__}({self.path!r}, overwrite={self.overwrite})"

    def _open(self) -> Table:
        return open_table(self.path, self.storage_options)

    def commit(self, messages: list) -> None:
        directory = self._open().directory
        base = directory.store.snapshot(self.base_id) if self.base_id is not None else None
        adds = directory.received([FileEntry.from_json(e) for m in messages if m is not None for e in m.entries], base)

        def replace_all(latest: Snapshot | None) -> Change:
            return Change(adds, list(directory.live_files(latest).values()))
        try:
            if self.overwrite:
                commit_with_rebase(directory, base, replace_all, "OVERWRITE")
            else:
                commit_write(directory, adds, base)  # renumbered after writes that committed meanwhile
        except BaseException:
            directory.discard(adds)
            raise

    def abort(self, messages: list) -> None:
        """Failed job: remove the files of tasks that reported; the rest are orphans
        (`Table.remove_orphan_files`)."""
        directory = self._open().directory
        directory.discard([FileEntry.from_json(e) for m in messages if m is not None for e in m.entries])


class PaimonWriter(MergetreeWriter):
    """Writes an Apache Paimon table: `df.write.format("mergetree").option("paimon.warehouse",
    warehouse).mode("append").save("db.table")` — the table's own path with no warehouse table
    name works too — through the engine's write path, as `MergetreeWriter` writes mergetree's
    tables: each task's rows placed by Paimon's bucket function into level-0 files, one APPEND
    snapshot committed on the driver (renumbered after a lost race), then the touched buckets
    compacted as `mergetree.paimon.write` compacts them.  `mode("overwrite")` replaces the
    partitions the rows hold (the whole table when it is unpartitioned or
    `dynamic-partition-overwrite` is false) in one OVERWRITE snapshot.  A table mergetree may not
    write as Java would (`table.paimon.tables.write_refusal`) is refused before any task runs."""

    def __init__(self, options: dict, spark_schema_: Any, overwrite: bool) -> None:
        self.warehouse, self.table = _paimon_table(options)
        self.path = self.warehouse
        self.storage_options = _paimon_storage_options(options) or {}
        self.overwrite = overwrite
        schema = PaimonTable.open(self.warehouse, self.table, self.storage_options or None).schema()
        check_writable(schema, self.table or self.warehouse)
        if schema.checked_options.dynamic_buckets:
            raise UnsupportedPaimonFeatureError(DYNAMIC_BUCKETS_IN_SPARK)
        directory = self._open().directory
        directory.refuse_commit("OVERWRITE" if overwrite else "APPEND")  # before any task writes
        directory.storage.require_conditional_create()
        base = directory.latest_snapshot()
        self.base_id = base.id if base else None
        self.next_seq = next_sequences(directory.live_files(base).values())

    def __repr__(self) -> str:  # the warehouse and table, never the storage options
        return f"{type(self).__name__}({self.warehouse!r}, {self.table!r}, overwrite={self.overwrite})"

    def _open(self) -> Table:
        return PaimonTableHandle(self.warehouse, self.storage_options or None, self.table).at()

    def commit(self, messages: list) -> None:
        directory = self._open().directory
        base = directory.store.snapshot(self.base_id) if self.base_id is not None else None
        adds = directory.received([FileEntry.from_json(e) for m in messages if m is not None for e in m.entries], base)
        try:
            snapshot, data_files = commit_spilled(directory, adds, base,
                                                  overwritten(directory, True) if self.overwrite else None)
        except BaseException:
            directory.discard(adds)
            raise
        if snapshot is None:
            return
        store = directory.store
        assert isinstance(store, PaimonSnapshotStore)
        compact_after_write(store.table, store.schema, {(e.partition, e.bucket) for e in data_files}, snapshot.id)
