"""Change reading measured (issue 26): `Table.changes(a, b)` on a table of `rows` rows whose
`commits` commits each change `fraction / commits` of the keys, against two whole reads and a
diff in pyarrow; and the write time of those commits with `changelog-producer` none, input and
lookup.  A helper for `mergetree bench --streaming`; alone:

    PYTHONPATH=src python -m benchmarks.changes [rows] [commits] [fraction]
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergetree import Table

__all__ = ["measure_changes", "two_reads_diff"]

SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.int64()), ("name", pa.string())])


def _rows(keys: np.ndarray, round_: int) -> pa.Table:
    return pa.table({"id": keys, "amount": keys * 7 + round_, "name": pa.array([f"n{k % 1000}" for k in keys])},
                    schema=SCHEMA)


def two_reads_diff(table: Table, a: int, b: int) -> pa.Table:
    """The baseline: both snapshots read whole, rows that differ found by a join."""
    old = table.read(snapshot=a)
    new = table.read(snapshot=b)
    joined = old.join(new, "id", join_type="full outer", left_suffix="_old", right_suffix="_new")
    differs = pc.or_kleene(pc.is_null(joined.column("amount_old")), pc.is_null(joined.column("amount_new")))
    differs = pc.or_kleene(differs, pc.not_equal(joined.column("amount_old"), joined.column("amount_new")))
    differs = pc.or_kleene(differs, pc.not_equal(joined.column("name_old"), joined.column("name_new")))
    return joined.filter(pc.fill_null(differs, True))


def measure_changes(rows: int = 1_000_000, commits: int = 10, fraction: float = 0.01,
                    root: str | None = None) -> dict[str, float]:
    """Seconds for: the changes, the baseline, and the commits' writes per producer."""
    out: dict[str, float] = {}
    base = root or tempfile.mkdtemp(prefix="mergetree-changes-")
    rng = np.random.default_rng(26)
    per_commit = max(int(rows * fraction / commits), 1)
    batches = [np.sort(rng.choice(rows, per_commit, replace=False)) for _ in range(commits)]
    try:
        for producer in ("none", "input", "lookup"):
            table = Table.create(f"{base}/{producer}", SCHEMA, primary_key=["id"], buckets=4,
                                 options={"changelog-producer": producer})
            table.write(_rows(np.arange(rows, dtype=np.int64), 0))
            table.compact(full=True)
            start = table.directory.store.latest_id() or 0
            began = time.perf_counter()
            for i, keys in enumerate(batches, start=1):
                table.write(_rows(keys.astype(np.int64), i))
            out[f"write {commits} commits, producer {producer}"] = time.perf_counter() - began
            end = table.directory.store.latest_id() or 0
            began = time.perf_counter()
            change = table.changes(start, end).read_all()
            out[f"changes({start}, {end}), producer {producer}"] = time.perf_counter() - began
            out[f"  change rows, producer {producer}"] = float(change.num_rows)
            out[f"  files read, producer {producer}"] = float(table.last_read.files_read if table.last_read else 0)
            if producer == "none":
                began = time.perf_counter()
                diff = two_reads_diff(table, start, end)
                out["two full reads + pyarrow join diff"] = time.perf_counter() - began
                out["  keys changed (baseline)"] = float(diff.num_rows)
                began = time.perf_counter()
                table.changes(start, end, per_commit=True).read_all()
                out[f"changes({start}, {end}, per_commit=True), producer none"] = time.perf_counter() - began
    finally:
        if root is None:
            shutil.rmtree(base, ignore_errors=True)
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    result = measure_changes(int(args[0]) if args else 1_000_000, int(args[1]) if len(args) > 1 else 10,
                             float(args[2]) if len(args) > 2 else 0.01)
    for name, value in result.items():
        print(f"{name:55s} {value:10.3f}")
