"""Writes with one file set per bucket.

Spark's own writer task (and mergetree's data-source writer before this) writes a file for
every bucket it holds rows of, so a job of P tasks into B buckets leaves up to P x B small
files per commit.  `write` first routes the rows with Spark's ``pmod(hash(bucket key), n)`` —
mergetree's bucket ids bit for bit — by range-repartitioning on (partition columns, bucket id):
a range partitioner never splits one value between tasks, so all rows of a (partition, bucket)
reach one task, which writes that bucket's files alone.  Files per commit: about the buckets
touched (times the rolls at write-buffer-size), whatever the number of input partitions.
"""
from __future__ import annotations

import os
from typing import Any

from ..errors import InvalidArgumentError
from ..table import Table

__all__ = ["write"]

MODES = ("append", "overwrite")


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    return [str(n) for n in value]


def write(df: Any, path: str, mode: str = "append", **options: Any) -> None:
    """Write `df` into the mergetree table at `path` (created from the DataFrame's schema when
    there is none, with `options` as the data source takes them: primaryKey, partitionBy,
    buckets, bucketKey, mergeEngine, table options), one commit, one file set per bucket."""
    from pyspark.sql import functions as F

    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    lowered = {k.lower(): v for k, v in options.items()}
    if os.path.exists(os.path.join(path, "schema")):
        ts = Table.open(path).table_schema
        buckets, bucket_key, partition_by = ts.buckets, list(ts.bucket_key), list(ts.partition_by)
    else:
        primary_key = _names(lowered.get("primarykey"))
        partition_by = _names(lowered.get("partitionby"))
        buckets = int(lowered.get("buckets", 1))
        bucket_key = _names(lowered.get("bucketkey")) or [c for c in primary_key if c not in partition_by]
    routed = df
    if bucket_key and buckets > 1:
        unknown = [c for c in bucket_key + partition_by if c not in df.columns]
        if unknown:
            raise InvalidArgumentError(f"the DataFrame lacks the table's bucket or partition columns {unknown}")
        bucket = F.pmod(F.hash(*[F.col(c) for c in bucket_key]), F.lit(buckets))
        tasks = buckets if not partition_by else max(buckets, int(df.sparkSession.conf.get(
            "spark.sql.shuffle.partitions", "200")))
        routed = df.repartitionByRange(tasks, *[F.col(c) for c in partition_by], bucket)
    writer = routed.write.format("mergetree").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, ",".join(value) if isinstance(value, (list, tuple)) else str(value))
    writer.save(path)
