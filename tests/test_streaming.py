"""Runs are streamed: the merge holds about one batch per run, never whole runs."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import mergetree


def test_generator_runs_are_pulled_lazily():
    rng = np.random.default_rng(7)
    k, batches_per_run, rows_per_batch = 6, 40, 10
    runs_keys = [np.sort(rng.choice(100_000, batches_per_run * rows_per_batch, replace=False))
                 for _ in range(k)]
    first_keys = [keys[::rows_per_batch] for keys in runs_keys]

    def run(keys):
        for start in range(0, len(keys), rows_per_batch):
            yield pa.record_batch({"k": keys[start:start + rows_per_batch]})

    reader = mergetree.merge([run(keys) for keys in runs_keys], "k", batch_size=16)
    seen_rows = 0
    for batch in reader:
        seen_rows += batch.num_rows
        last_key = batch.column("k")[-1].as_py()
        for r in range(k):
            needed = int(np.searchsorted(first_keys[r], last_key, side="right"))
            assert reader.batches_pulled[r] <= needed + 2, (r, reader.batches_pulled[r], needed)
    assert seen_rows == len(np.unique(np.concatenate(runs_keys)))


SCRIPT = textwrap.dedent("""
    import json, sys
    import pyarrow as pa, pyarrow.parquet as pq
    import mergetree
    files = sys.argv[1:]
    before = pa.default_memory_pool().max_memory()
    # pre_buffer=False: otherwise the Parquet reader itself prefetches whole files
    runs = [pq.ParquetFile(f, pre_buffer=False).iter_batches(batch_size=8192) for f in files]
    rows = 0
    for batch in mergetree.merge(runs, "k", sequence="seq", batch_size=8192):
        rows += batch.num_rows
    print(json.dumps({"rows": rows, "peak": pa.default_memory_pool().max_memory() - before}))
""")


def test_parquet_merge_peak_memory_is_far_below_the_data(tmp_path):
    rng = np.random.default_rng(3)
    k, rows = 8, 300_000
    files, decoded = [], 0
    for r in range(k):
        keys = np.sort(rng.choice(2 * rows, rows, replace=False)).astype(np.int64)
        t = pa.table({"k": keys, "seq": np.full(rows, r, dtype=np.int64),
                      "a": rng.random(rows), "s": pa.array([f"payload-{x:012d}" for x in keys])})
        decoded += t.nbytes
        path = tmp_path / f"run{r}.parquet"
        pq.write_table(t, path, row_group_size=8192)
        files.append(str(path))
    out = subprocess.run([sys.executable, "-c", SCRIPT, *files], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["rows"] > rows
    # eight whole runs would need `decoded` bytes; streaming holds a few batches per run
    assert result["peak"] < decoded / 4, (result["peak"], decoded)
