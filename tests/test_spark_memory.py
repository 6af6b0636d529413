"""A bucket join streams: buckets larger than a task's memory cap still join (real local[2]
Spark with `spark.executor.pyspark.memory`, in a process of its own)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mergetree import Table

CAP_MB = 1000  # Spark caps the Python worker's address space (RLIMIT_AS) at this


def _uncompressed_bytes(table: Table) -> int:
    """The in-memory size of a table's data files as Parquet's footers record it."""
    total = 0
    for root, _, names in os.walk(table.path):
        for name in names:
            if name.endswith(".parquet"):
                meta = pq.ParquetFile(os.path.join(root, name)).metadata
                total += sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
    return total


def test_a_bucket_larger_than_the_task_memory_cap_still_joins(spark, tmp_path):
    """One bucket of ~1.1 GB (two unmerged commits of 3M rows x 360 bytes) joins a small
    table inside a worker capped at 1000 MB of address space; the same cap stops a task that
    holds both buckets whole, and that failure says MemoryError, not a damaged file.
    (`spark` only gates on Java and pyspark: the session under test is the child's.)"""
    schema = pa.schema([("id", pa.int64()), ("payload", pa.string())])
    left = Table.create(str(tmp_path / "big"), schema, primary_key="id", buckets=1, options={"write-only": "true"})
    n = 3_000_000
    for start in (0, 1):
        ids = np.arange(start, n, 2, dtype=np.int64)
        pad = pc.take(pa.array(["p" * 348]), np.zeros(len(ids), dtype=np.int64))
        left.write(pa.table({"id": ids, "payload": pc.binary_join_element_wise(pc.cast(ids, pa.string()), pad, "-")},
                            schema=schema))
    right = Table.create(str(tmp_path / "small"), pa.schema([("id", pa.int64()), ("w", pa.int64())]),
                         primary_key="id", buckets=1)
    right_ids = np.arange(0, 2 * n, 97, dtype=np.int64)
    right.write(pa.table({"id": right_ids, "w": right_ids}))
    assert _uncompressed_bytes(left) > CAP_MB << 20  # the bucket does not fit under the cap
    helper = os.path.join(os.path.dirname(__file__), "spark_memory_cap.py")
    done = subprocess.run([sys.executable, helper, left.path, right.path, f"{CAP_MB}m"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report.get("streamed_rows") == len(range(0, n, 97)), report
    assert "whole_rows" not in report, "the cap is too loose to show anything: raise the data size"
    assert "MemoryError" in report["whole_error"] and "CorruptTableError" not in report["whole_error"], \
        report["whole_error"]
