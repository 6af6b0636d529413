"""Run by tests/test_spark_memory.py in a process of its own (Spark's Python memory cap is
fixed when the session starts): bucket-join two tables under `spark.executor.pyspark.memory`,
then hold both buckets whole under the same cap.  Prints one JSON line with what happened.

Usage: python spark_memory_cap.py LEFT RIGHT CAP"""
from __future__ import annotations

import json
import sys

import pyarrow as pa

import mergetree.spark
from mergetree import Table


def main(left: str, right: str, cap: str) -> None:
    spark = mergetree.spark.local_session("mergetree-memory-cap", **{"spark.executor.pyspark.memory": cap})
    report: dict[str, object] = {}
    try:
        joined = mergetree.spark.bucket_join(spark, left, right, "id", "inner")
        report["streamed_rows"] = joined.count()
    except Exception as exc:  # reported to the test, which fails on it
        report["streamed_error"] = str(exc)[-2000:]

    def hold_both_buckets(batches):  # what a join that materializes its buckets does
        for _ in batches:
            whole = Table.open(left).read().join(Table.open(right).read(), "id")
            yield pa.RecordBatch.from_pydict({"rows": [whole.num_rows]})
    try:
        report["whole_rows"] = spark.range(1).coalesce(1).mapInArrow(hold_both_buckets, "rows long").collect()[0][0]
    except Exception as exc:
        report["whole_error"] = str(exc)[-4000:]
    spark.stop()
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:4])
