"""`mergetree demo`: a primary-key table fed a CDC stream (upserts and deletes, one commit
each, merge-on-read, compaction, time travel, a pruned point read), then the merge underneath it:
sorted runs of change events written as Parquet and merged with every engine, and a quick
benchmark against the peers."""
from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mergetree import RowKind, Table, merge
from mergetree.cli.render import arrow_preview, out_console

__all__ = ["main", "show_engines", "show_table", "write_runs"]

RUNS = 4
KEYS = 2_000
SCHEMA = pa.schema([
    ("id", pa.int64()), ("seq", pa.int64()), ("kind", pa.int8()),
    ("city", pa.string()), ("visits", pa.int64()), ("spend", pa.float64()),
])
CITIES = ["Lisbon", "Osaka", "Lagos", "Quito", "Oslo", None]


def write_runs(directory: Path, seed: int = 11) -> list[Path]:
    """Each run: the changes of one commit, sorted by id, as one Parquet file.
    Later runs carry higher sequence numbers; a few rows are deletes (-D)."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for run in range(RUNS):
        ids = np.sort(rng.choice(KEYS, KEYS // 2, replace=False)).astype(np.int64)
        n = len(ids)
        kind = np.where(rng.random(n) < 0.03 * run, RowKind.DELETE,
                        RowKind.INSERT if run == 0 else RowKind.UPDATE_AFTER).astype(np.int8)
        cities = [CITIES[i] for i in rng.integers(0, len(CITIES), n)]
        table = pa.table({
            "id": ids,
            "seq": np.arange(n, dtype=np.int64) + run * KEYS,
            "kind": kind,
            "city": pa.array(cities, pa.string()),
            "visits": pa.array(rng.integers(1, 5, n), pa.int64()),
            "spend": rng.integers(100, 10_000, n) / 100.0,
        }, schema=SCHEMA)
        path = directory / f"run-{run}.parquet"
        pq.write_table(table, path, row_group_size=256)
        paths.append(path)
    return paths


def open_runs(paths: list[Path]) -> list:
    """Stream each file a row group at a time."""
    return [pq.ParquetFile(p, pre_buffer=False).iter_batches(batch_size=256) for p in paths]


ENGINES = [
    ("deduplicate", "the newest version of each id; ids whose newest change is a delete vanish", {}),
    ("partial-update", "per column, the newest non-null value; a delete resets the id", {}),
    ("aggregate", "visits summed, spend maximal, city the newest non-null (over the inserts and updates: "
                  "max cannot undo a delete, so deletes are left out here)",
     {"aggregations": {"visits": "sum", "spend": "max", "city": "last_non_null_value"}}),
    ("none", "every change, in (id, seq) order: a plain k-way merge", {}),
]


def show_table(paths: list[Path], directory: Path) -> Table:
    """The runs as four commits of a CDC stream into a primary-key table (Apache Paimon's format:
    Flink, Spark and Trino read it too): read merged on read, compacted, read back in time."""
    columns = pa.schema([f for f in SCHEMA if f.name not in ("seq", "kind")])  # kinds are applied, not stored
    table = Table.create(str(directory), columns, primary_key="id", buckets=2)
    started = time.perf_counter()
    for path in paths:
        changes = pq.read_table(path).drop_columns(["seq"])  # commits are ordered: no sequence needed
        snapshot = table.write(changes, row_kind_column="kind")
    elapsed = time.perf_counter() - started
    print(f"\n== a primary-key table at {directory}/ fed the runs as {len(paths)} commits of a CDC stream "
          f"(+I, +U and -D rows) in {elapsed * 1e3:.0f} ms")
    print(f"   latest: {snapshot}")
    live = table.read()
    print(f"   merge-on-read: {live.num_rows:,} live ids (each id's newest change; deleted ids gone) "
          f"from {sum(m.row_count for m in table.plan().files):,} rows in {len(table.plan().files)} files")
    compacted = table.compact(full=True)
    print(f"   compacted: {compacted}; {len(table.plan().files)} files, same rows: "
          f"{table.read().sort_by('id') == live.sort_by('id')}")
    first = table.read(snapshot=1)
    print(f"   time travel: snapshot 1 holds {first.num_rows:,} ids; "
          f"the point read id = 7 plans {len(table.plan(filter=('id', '=', 7)).files)} file of "
          f"{len(table.plan().files)} (its bucket's)")
    out_console.print(arrow_preview(table.read(filter=("id", "<", 20)).sort_by("id"), limit=5))
    return table


def show_engines(paths: list[Path]) -> None:
    for engine, meaning, extra in ENGINES:
        if engine == "aggregate":
            # max cannot be retracted: the aggregate example reads inserts only
            runs = [pq.read_table(p).filter(pc.field("kind") != RowKind.DELETE) for p in paths]
        else:
            runs = open_runs(paths)
        started = time.perf_counter()
        reader = merge(runs, "id", sequence="seq", kind="kind", engine=engine, **extra)
        table = reader.read_all()
        elapsed = time.perf_counter() - started
        stats = reader.stats
        print(f"\n== engine={engine!r}: {meaning}")
        print(f"   {stats.rows_in:,} rows in -> {stats.rows_out:,} rows out in {elapsed * 1e3:.1f} ms; "
              f"{stats.key_comparisons:,} key and {stats.sequence_comparisons:,} sequence comparisons")
        out_console.print(arrow_preview(table, limit=5))
    first = merge([pq.read_table(p).filter(pc.field("kind") != RowKind.DELETE) for p in paths], "id",
                  sequence="seq", engine="first-row").read_all()
    print(f"\n== engine='first-row' (inserts only; it rejects retractions): {first.num_rows:,} rows, "
          f"each id's oldest version")
    out_console.print(arrow_preview(first, limit=3))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mergetree demo", description=__doc__)
    parser.add_argument("--dir", default="demo_output", help="where the Parquet runs are written")
    parser.add_argument("--no-bench", action="store_true", help="skip the benchmark")
    args = parser.parse_args(argv)
    directory = Path(args.dir)
    shutil.rmtree(directory, ignore_errors=True)
    paths = write_runs(directory)
    sizes = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} sorted runs of change events to {directory}/ ({sizes / 1024:.0f} KiB of Parquet)")
    show_table(paths, directory / "table")
    print("\n== underneath: mergetree.merge, the loser-tree merge of sorted runs, on the same Parquet runs")
    show_engines(paths)
    if not args.no_bench:
        from benchmarks.bench import format_results, run_bench, show

        print("\n== benchmark (quick: 1M int64 rows and 250k 128-char string rows in 8 runs; "
              "`mergetree bench` runs the full size)")
        show(format_results(run_bench(quick=True)))
    return 0
