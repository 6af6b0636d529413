"""How docs/STORAGE.md chose the S3 input path: a ~50 MB Parquet file on a local moto server,
read whole and as 20 random row groups, through pyarrow.fs.S3FileSystem's `open_input_file`
and through the store's obstore-backed `open_input`, both with `pre_buffer`.

    .venv/bin/python tests/storage_read_timing.py"""
from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from s3_server import MotoS3Server

from mergetree.storage import resolve


def median_seconds(n: int, run) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    server = MotoS3Server.start()
    try:
        store = resolve("s3://lake/timing", server.options())
        rng = np.random.default_rng(7)
        rows = 1_700_000  # ~50 MB uncompressed
        table = pa.table({"id": np.arange(rows), "x": rng.random(rows), "y": rng.integers(0, 1 << 40, rows)})
        with store.open_output("data.parquet") as out:
            pq.write_table(table, out, row_group_size=rows // 100, compression="none")
        size = store.size("data.parquet")
        fs, root = store.filesystem()
        groups = random.Random(1).sample(range(100), 20)

        def arrow_fs(whole: bool) -> None:
            with fs.open_input_file(f"{root}/data.parquet") as f:
                file = pq.ParquetFile(f, pre_buffer=True)
                file.read() if whole else file.read_row_groups(groups)

        def obstore_file(whole: bool) -> None:
            file = pq.ParquetFile(store.open_input("data.parquet", size=size), pre_buffer=True)
            file.read() if whole else file.read_row_groups(groups)

        print(f"file: {size / 1e6:.1f} MB, 100 row groups; median of 5 runs")
        for name, run in (("pyarrow.fs.S3FileSystem", arrow_fs), ("obstore open_input", obstore_file)):
            store.requests.reset()
            whole = median_seconds(5, lambda run=run: run(True))
            gets_whole = store.requests.reset()["GET"] / 5
            some = median_seconds(5, lambda run=run: run(False))
            gets_some = store.requests.reset()["GET"] / 5
            counted = f"  GETs: {gets_whole:.0f} / {gets_some:.0f}" if gets_whole else ""
            print(f"{name:25s} whole {whole * 1000:7.0f} ms ({size / 1e6 / whole:5.0f} MB/s)   "
                  f"20 row groups {some * 1000:6.0f} ms{counted}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
