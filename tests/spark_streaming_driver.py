"""A streaming pipeline's driver, run as its own process by tests/test_spark_streaming_kill.py
(which SIGKILLs it mid-batch and starts it again from the same checkpoints):
JSON CDC files -> mergetree sink T1 -> mergetree change source -> sink T2.

    python spark_streaming_driver.py EVENTS T1 T2 CHECKPOINTS

Both queries run with Trigger.AvailableNow, one after the other: each restart first finishes
what the first query's checkpoint says is left, then the second's."""
from __future__ import annotations

import os
import sys
import tempfile

JSON_SCHEMA = "id BIGINT, v STRING, op STRING"


def main(events: str, t1: str, t2: str, checkpoints: str) -> None:
    import mergetree.spark
    spark = mergetree.spark.local_session("mergetree-streaming-driver", tempfile.mkdtemp(prefix="mt-driver-"))
    mergetree.spark.register(spark)
    print("ready", flush=True)
    (spark.readStream.schema(JSON_SCHEMA).option("maxFilesPerTrigger", 1).json(events)
     .writeStream.format("mergetree").option("checkpointLocation", os.path.join(checkpoints, "t1"))
     .option("primaryKey", "id").option("buckets", "2").option("rowKindColumn", "op")
     .option("changelog-producer", "input")  # T2 is fed from T1's changelog files
     .trigger(availableNow=True).start(t1).awaitTermination())
    print("t1 done", flush=True)
    (spark.readStream.format("mergetree").option("read.changelog", "true")
     .option("read.stream.maxSnapshotsPerTrigger", "2").load(t1).drop("_snapshot_id")
     .writeStream.format("mergetree").option("checkpointLocation", os.path.join(checkpoints, "t2"))
     .option("primaryKey", "id").option("buckets", "2")
     .trigger(availableNow=True).start(t2).awaitTermination())
    print("t2 done", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
