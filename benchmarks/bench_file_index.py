"""What Paimon's file indexes buy and cost a mergetree read and write of a Paimon table:
``python -m benchmarks.bench_file_index [rows]``.

Two append tables of the same rows (default 2,000,000, in 20 writes of 100,000: 20 data
files) with ``id`` (a random int64, distinct), ``sku`` (a random string of 1,000,000 values),
``region`` (one of 50 strings) and ``amount`` (float64).  Table ``indexed`` declares
``file-index.bloom-filter.columns = id,sku`` and ``file-index.bitmap.columns = region``;
``plain`` none.  Min/max statistics cannot skip a file for any of the queries below: every
file's values span the whole range.  Timed (best of 5): the writes (all 20); then per query
the read with the indexes, and with ``file-index.read.enabled = false`` (the same table and
files, the indexes unread), each checked to return the same rows as a plain pyarrow filter of
the input.  Printed: the write times, the index files' size beside the data's, and per query
both read times and their ratio.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import mergetree.paimon as mp
from mergetree.table.paimon.metadata import PaimonTable

WRITES = 20


def _schema_json(options: dict) -> dict:
    fields = [{"id": 0, "name": "id", "type": "BIGINT"}, {"id": 1, "name": "sku", "type": "STRING"},
              {"id": 2, "name": "region", "type": "STRING"}, {"id": 3, "name": "amount", "type": "DOUBLE"}]
    return {"version": 3, "id": 0, "fields": fields, "highestFieldId": 3, "partitionKeys": [], "primaryKeys": [],
            "options": {"bucket": "-1", **options}, "timeMillis": 0}


def _table(root: Path, name: str, options: dict) -> str:
    path = root / name
    (path / "schema").mkdir(parents=True)
    (path / "schema" / "schema-0").write_text(json.dumps(_schema_json(options)))
    return str(path)


def _best(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(rows: int = 2_000_000) -> None:
    rng = np.random.default_rng(11)
    per = rows // WRITES
    batches = [pa.table({"id": pa.array(rng.integers(0, 1 << 62, per)),
                         "sku": pc.binary_join_element_wise("sku-", pc.cast(pa.array(rng.integers(0, 1_000_000, per)),
                                                                            pa.string()), ""),
                         "region": pc.binary_join_element_wise("region-", pc.cast(
                             pa.array(rng.integers(0, 50, per)), pa.string()), ""),
                         "amount": pa.array(rng.random(per))}) for _ in range(WRITES)]
    whole = pa.concat_tables(batches)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tables = {"indexed": _table(root, "indexed", {"file-index.bloom-filter.columns": "id,sku",
                                                      "file-index.bitmap.columns": "region"}),
                  "plain": _table(root, "plain", {})}
        for name, path in tables.items():
            start = time.perf_counter()
            for b in batches:
                mp.write(path, None, b)
            print(f"write {name}: {time.perf_counter() - start:.2f} s for {WRITES} files of {per:,} rows")
        t = PaimonTable.open(tables["indexed"], None)
        index_bytes = sum((Path(f.path).parent / f.record["_FILE"]["_EXTRA_FILES"][0]).stat().st_size
                          for f in t.live_files(t.resolve(None)) if f.record["_FILE"]["_EXTRA_FILES"])
        data_bytes = sum(f.file_size for f in t.live_files(t.resolve(None)))
        print(f"index files: {index_bytes / 2**20:.1f} MiB beside {data_bytes / 2**20:.1f} MiB of data")
        some_id = whole.column("id")[rows // 2].as_py()
        # absent values inside every file's min..max, so that only an index can rule a file out
        queries = {"id = one existing": ("id", "=", some_id), "id = absent": ("id", "=", (1 << 61) + 12345),
                   "sku = absent": ("sku", "=", "sku-5000000x"), "region = absent": ("region", "=", "region-25x"),
                   "region in (2 absent)": ("region", "in", ["region-25x", "region-30x"])}
        path = tables["indexed"]
        schema_file = Path(path) / "schema" / "schema-0"
        for label, f in queries.items():
            expected = whole.filter(pc.field(f[0]) == f[2] if f[1] == "=" else pc.field(f[0]).isin(f[2])).num_rows
            assert mp.read(path, None, filter=f).num_rows == expected
            with_index = _best(lambda f=f: mp.read(path, None, filter=f))
            spec = json.loads(schema_file.read_text())
            spec["options"]["file-index.read.enabled"] = "false"
            schema_file.write_text(json.dumps(spec))
            assert mp.read(path, None, filter=f).num_rows == expected
            without = _best(lambda f=f: mp.read(path, None, filter=f))
            spec["options"].pop("file-index.read.enabled")
            schema_file.write_text(json.dumps(spec))
            print(f"{label:24s} rows {expected:>3}  with indexes {with_index * 1000:8.1f} ms   "
                  f"without {without * 1000:8.1f} ms   {without / with_index:6.1f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000)
