"""PySpark integration (needs pyspark >= 4.2 and Java 17+: `pip install ".[spark]"` in a clone).

    import mergetree.spark
    mergetree.spark.register(spark)
    df = spark.read.format("mergetree").load("/data/visits")          # options: snapshot, batchSize
    df.write.format("mergetree").mode("append").option("primaryKey", "id").option("buckets", "4").save(path)
    mergetree.spark.write(df, path, mode="append")   # one file set per bucket, whatever df's partitioning
    mergetree.spark.compact(spark, path, full=True)
    mergetree.spark.bucket_join(spark, left_path, right_path, on="id")
    mergetree.spark.optimize(spark, path, order=["a", "b"], strategy="hilbert")
    mergetree.spark.optimize(spark, "iceberg://lake/db.events")   # an Iceberg table: executors write, driver commits
    spark.read.format("mergetree").option("paimon.warehouse", wh).load("db.table")   # an Apache Paimon table
    mergetree.spark.compact_paimon(spark, wh, "db.table", full=True)
    spark.read.format("mergetree").options(**storage_options).load("s3://lake/visits")   # an object store
    mergetree.spark.compact(spark, "s3://lake/visits", storage_options=storage_options)
    df.writeStream.format("mergetree").option("checkpointLocation", cp).option("primaryKey", "id").start(path)
    spark.readStream.format("mergetree").option("read.changelog", "true").load(path)  # +I/-U/+U/-D rows

One Spark partition per bucket; each task merges its bucket's sorted runs with the loser tree
and yields Arrow record batches in exactly the schema Spark expects.  Equality and IN filters
on the bucket key prune buckets; key ranges and statistics prune files; every filter that
arrives is also applied exactly after the merge, so results are exact.  The source needs
`spark.sql.python.filterPushdown.enabled=true` (set by `local_session`); it takes Spark's filters
only with the option `pushFilters=true` on pyspark <= 4.3, which run one DataFrame's last pushed
read for all its scans (see `source.STALE_PUSHDOWN_SPARK`): such a DataFrame serves one filtered scan.
Paimon primary-key tables read the same way, one Spark partition per (partition, bucket), through
`mergetree.paimon`; they are compacted by `compact_paimon` and written only by Paimon.
Tables on object stores (`s3://`, `gs://`, `az://`): the executors' Python workers read and
write the store with the storage options given as data source options or `storage_options=`
(docs/STORAGE.md, "Spark").
Structured Streaming (`streaming`): the sink commits each micro-batch once (its query and batch
id in the snapshot, so a replay commits nothing twice) and applies `_row_kind`/`op` rows as
upserts and deletes; the source reads a table's changes snapshot by snapshot.
"""
from __future__ import annotations

try:
    import pyspark.sql.datasource
    import pyspark.sql.streaming.datasource  # noqa: F401  (new in 4.2: the streaming source's read limits)
except ImportError as exc:  # pragma: no cover - exercised only without pyspark
    raise ImportError("mergetree.spark needs pyspark >= 4.2: pip install 'pyspark[sql]>=4.2' "
                      "(and Java 17+ for Spark)") from exc

from .jobs import bucket_join, compact, compact_paimon, merge_sorted_runs, optimize, optimize_pending
from .session import local_session
from .source import SOURCE_NAME, MergetreeDataSource, register
from .types import spark_arrow_type, spark_ddl, spark_schema
from .write import write

__all__ = ["SOURCE_NAME", "MergetreeDataSource", "bucket_join", "compact", "compact_paimon", "local_session",
           "merge_sorted_runs", "optimize", "optimize_pending", "register", "spark_arrow_type", "spark_ddl",
           "spark_schema", "write"]
