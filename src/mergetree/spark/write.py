"""Writes with one file set per bucket.

Spark's own writer task (and mergetree's data-source writer before this) writes a file for
every bucket it holds rows of, so a job of P tasks into B buckets leaves up to P x B small
files per commit.  `write` first creates the table when there is none (in the driver, as the data
source would), then routes the rows by Paimon's bucket function over the bucket key
(`codec.buckets`, computed in the tasks by `mapInArrow`: exactly where Java places a row) by
range-repartitioning on (partition columns, bucket id): a range partitioner never splits one
value between tasks, so all rows of a (partition, bucket) reach one task, which writes that
bucket's files alone.  Files per commit: about the buckets touched (times the rolls at
write-buffer-size), whatever the number of input partitions.  A table is a path, or
(``paimon.warehouse`` among `options`) `path` is its "db.table" in that warehouse.

A table on an object store takes its `storage_options` (or storage keys among `options`); they
go to the data source as options, so the tasks and the commit open the same store.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError, TableNotFoundError, UnsupportedPaimonFeatureError
from ..table.objects import is_uri, storage_options_for
from ..table.paimon.metadata import PaimonTable
from .source import PAIMON_WAREHOUSE, open_table, split_storage_options
from .tables import open_or_create

__all__ = ["write"]

MODES = ("append", "overwrite")
BUCKET_COLUMN = "__mergetree_bucket"


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    return [str(n) for n in value]


def job_storage_options(path: str, storage_options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What a job's tasks open the table at `path` with: `storage_options` if given, else those
    this process opened the location with (`Table.open(uri, storage_options=...)`), else none
    (a local path, or credentials from the executors' environment)."""
    if storage_options is not None:
        return dict(storage_options)  # on a local path, opening refuses them
    return storage_options_for(path) if is_uri(str(path)) else None


def write(df: Any, path: str, mode: str = "append", storage_options: Mapping[str, Any] | None = None,
          **options: Any) -> None:
    """Write `df` into the mergetree table at `path` (created from the DataFrame's schema when
    there is none, with `options` as the data source takes them: primaryKey, partitionBy,
    buckets, bucketKey, mergeEngine, table options), one commit, one file set per bucket.
    A table on an object store: `storage_options` as for `Table.open`.  With
    ``paimon.warehouse`` among `options`, `path` names the Paimon table ("db.table") of that
    warehouse; a Paimon table's own directory is one too: routed by Paimon's bucket function."""
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    given, options = split_storage_options(options)
    storage = job_storage_options(path, {**(storage_options or {}), **given} if (storage_options or given) else None)
    if PAIMON_WAREHOUSE not in options:
        try:
            open_table(path, storage)
        except TableNotFoundError:  # made now, as the data source would make it, to route rows by its buckets
            from pyspark.sql.pandas.types import to_arrow_schema
            open_or_create(path, storage, to_arrow_schema(df.schema, timezone="UTC"), {
                k.lower(): ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
                for k, v in options.items()})
        options = {**options, PAIMON_WAREHOUSE: path}  # the table's own directory
    warehouse = str(options[PAIMON_WAREHOUSE])
    storage = job_storage_options(warehouse, {**(storage_options or {}), **given}
                                  if (storage_options or given) else None)
    table = PaimonTable.open(warehouse, None if warehouse == path else path, storage)
    routed = _routed_by_paimon_buckets(df, table)
    writer = routed.write.format("mergetree").mode(mode)
    for key, value in {**(storage or {}), **options}.items():
        writer = writer.option(key, str(value))
    writer.save(path)


def _routed_by_paimon_buckets(df: Any, table: PaimonTable) -> Any:
    """`df` range-repartitioned on (partition columns, Paimon bucket): each task gets whole
    buckets, so each bucket's rows make one file set.  The bucket is computed in the tasks by
    the codec's bucket function (a column added by `mapInArrow`, dropped before the write)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from ..codec.buckets import bucket_function, buckets_of
    from ..table.paimon.tables import check_writable

    schema = table.schema()
    check_writable(schema, table.name)  # before any task runs
    opts = schema.checked_options
    if opts.dynamic_buckets:
        from .source import DYNAMIC_BUCKETS_IN_SPARK
        raise UnsupportedPaimonFeatureError(DYNAMIC_BUCKETS_IN_SPARK)
    key = list(opts.bucket_key)
    partition_by = list(schema.partition_keys)
    if opts.buckets < 2 or not key:
        return df  # one bucket (or bucket-unaware): nothing to route
    unknown = [c for c in key + partition_by if c not in df.columns]
    if unknown:
        raise InvalidArgumentError(f"the DataFrame lacks the table's bucket or partition columns {unknown}")
    types = [schema.field(c).type for c in key]
    function = bucket_function(schema.options, types)
    buckets = opts.buckets

    def with_bucket(batches: Any) -> Any:
        for batch in batches:
            ids = buckets_of([batch.column(c) for c in key], types, buckets, function)
            yield batch.append_column(BUCKET_COLUMN, pa.array(ids, pa.int32()))

    tasks = buckets if not partition_by else max(buckets, int(df.sparkSession.conf.get(
        "spark.sql.shuffle.partitions", "200")))
    from pyspark.sql.types import IntegerType, StructField, StructType

    # a new StructType: `add` would change the DataFrame's own (cached) schema in place
    placed = df.mapInArrow(with_bucket,
                           StructType([*df.schema.fields, StructField(BUCKET_COLUMN, IntegerType(), False)]))
    routed = placed.repartitionByRange(tasks, *[F.col(c) for c in partition_by], F.col(BUCKET_COLUMN))
    return routed.drop(BUCKET_COLUMN)
