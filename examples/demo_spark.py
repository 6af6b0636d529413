"""`mergetree demo-spark`: a CDC-style pipeline on Spark (local[2]).

Change events (inserts, updates, deletes, each with an `_op` column) arrive over several
commits into a bucketed mergetree table: upserts through the Spark data source
(`df.write.format("mergetree").mode("append")`), deletes through `Table.delete` on the
driver.  Then a distributed compaction, a point read with bucket pruning, and a
shuffle-free bucket join.  Every step is checked against a pure-Python model of the events.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa

from mergetree import Table

__all__ = ["Checks", "main", "run_pipeline"]

BUCKETS = 8
COMMITS = 5
POINT_ID = 42
NAMES = ["ana", "bo", "chen", "dara", "eli", "fay", "gus", None]
UPSERT_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()),
                          ("version", pa.int64())])


class Checks:
    """Collects verification results; `ok` is True only if every check passed."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.count = 0

    def check(self, condition: bool, what: str) -> None:
        self.count += 1
        if condition:
            print(f"   check: {what}: ok")
        else:
            print(f"   check: {what}: FAILED")
            self.failures.append(what)

    @property
    def ok(self) -> bool:
        return self.count > 0 and not self.failures


@contextmanager
def step(title: str) -> Iterator[None]:
    print(f"\n== {title}")
    started = time.perf_counter()
    yield
    print(f"   ({time.perf_counter() - started:.2f} s)")


def generate_events(events: int, seed: int = 7) -> list[pa.Table]:
    """`COMMITS` batches of change events with an `_op` column ('I', 'U', 'D').
    Within a commit every id appears at most once; inserts use fresh ids, updates and
    deletes hit ids that are live at that point."""
    rng = np.random.default_rng(seed)
    per_commit = max(events // COMMITS, 10)
    live: np.ndarray = np.array([], dtype=np.int64)
    next_id = 0
    commits = []
    for commit in range(COMMITS):
        if commit == 0:
            n_ins, n_upd, n_del = per_commit, 0, 0
        else:
            n_del = min(per_commit // 10, len(live) // 4)
            n_upd = min(per_commit // 2, len(live) - n_del)
            n_ins = per_commit - n_upd - n_del
        inserted = np.arange(next_id, next_id + n_ins, dtype=np.int64)
        next_id += n_ins
        touched = rng.choice(live, n_upd + n_del, replace=False) if n_upd + n_del else live[:0]
        updated, deleted = touched[:n_upd], touched[n_upd:]
        ids = np.concatenate([inserted, updated, deleted])
        ops = ["I"] * n_ins + ["U"] * n_upd + ["D"] * n_del
        n = len(ids)
        names = [NAMES[i] for i in rng.integers(0, len(NAMES), n)]
        amounts = np.round(rng.random(n) * 1000, 2)
        table = pa.table({"_op": pa.array(ops, pa.string()), "id": ids, "name": pa.array(names, pa.string()),
                          "amount": amounts, "version": np.full(n, commit, dtype=np.int64)})
        commits.append(table.take(rng.permutation(n)))  # events arrive unordered
        live = np.setdiff1d(np.concatenate([live, inserted]), deleted)
    return commits


def apply_model(model: dict, events: pa.Table) -> None:
    """The pure-Python meaning of a commit: upserts, then deletes."""
    for row in events.to_pylist():
        op = row.pop("_op")
        if op == "D":
            model.pop(row["id"], None)
        else:
            model[row["id"]] = row


def table_rows(table: pa.Table) -> dict:
    return {r["id"]: r for r in table.select(UPSERT_SCHEMA.names).to_pylist()}


def quick_session() -> Any:
    """A local[2] session with the fast settings from shared/notes/spark.md."""
    import mergetree.spark

    return mergetree.spark.local_session("mergetree-demo-spark", tempfile.mkdtemp(prefix="mergetree-demo-warehouse-"))


def run_pipeline(spark: Any, directory: str, events: int = 200_000, buckets: int = BUCKETS) -> Checks:
    """The whole pipeline in `directory`; returns the verification results."""
    import mergetree.spark as mts

    mts.register(spark)
    checks = Checks()
    path = os.path.join(directory, "accounts")
    dim_path = os.path.join(directory, "profiles")

    with step(f"generate ~{events:,} change events in {COMMITS} commits"):
        commits = generate_events(events)
        total = sum(c.num_rows for c in commits)
        counts = {op: sum(c.filter(pa.compute.equal(c["_op"], op)).num_rows for c in commits) for op in "IUD"}
        print(f"   {total:,} events: {counts['I']:,} inserts, {counts['U']:,} updates, {counts['D']:,} deletes")

    model: dict = {}
    with step(f"apply the commits to a table with {buckets} buckets on id "
              "(upserts: Spark append; deletes: Table.delete on the driver)"):
        for i, commit in enumerate(commits):
            is_delete = pa.compute.equal(commit["_op"], "D")
            upserts = commit.filter(pa.compute.invert(is_delete)).drop_columns(["_op"])
            deleted = commit.filter(is_delete).select(["id"])
            df = spark.createDataFrame(upserts.to_pandas(), "id long, name string, amount double, version long")
            (df.write.format("mergetree").mode("append").option("primaryKey", "id")
             .option("buckets", str(buckets)).save(path))
            if deleted.num_rows:
                Table.open(path).delete(deleted)  # deletes by key, on the driver
            apply_model(model, commit)
            snap = Table.open(path).latest_snapshot()
            print(f"   commit {i}: {upserts.num_rows:,} upserts via Spark, {deleted.num_rows:,} deletes via "
                  f"Table.delete -> snapshot {snap.id}, {len(model):,} live ids")
        merged = Table.open(path).read()
        checks.check(table_rows(merged) == model,
                     f"merge-on-read ({merged.num_rows:,} rows) equals the Python model of the events")

    with step("compact with Spark (mergetree.spark.compact: one task per bucket, one snapshot)"):
        before = len(Table.open(path).plan().files)
        snap = mts.compact(spark, path, full=True)
        after = len(Table.open(path).plan().files)
        print(f"   {before} files -> {after} files (snapshot {snap.id if snap else '-'})")
        read_back = spark.read.format("mergetree").load(path).toArrow()
        checks.check(table_rows(read_back) == model and read_back.num_rows == len(model),
                     f"Spark read after compaction ({read_back.num_rows:,} rows) equals the model")

    with step(f"point read with bucket pruning: .where('id = {POINT_ID}')"):
        # pushFilters: the filter prunes buckets (a DataFrame of its own: see the README, "PySpark")
        df = spark.read.format("mergetree").option("pushFilters", "true").load(path).where(f"id = {POINT_ID}")
        partitions = df.rdd.getNumPartitions()  # one per bucket the data source planned to read
        rows = [r.asDict() for r in df.collect()]
        # the plan the data source makes for the pushed-down filter, made here on the driver
        plan = Table.open(path).plan(("id", "=", POINT_ID))
        print(f"   Spark partitions (tasks): {partitions}")
        print(f"   plan: buckets read {[b.bucket for b in plan.buckets]}, {plan.pruned_buckets} buckets pruned, "
              f"{len(plan.files)} files read, {plan.pruned_files} files pruned")
        print(f"   result: {rows}")
        expected = [model[POINT_ID]] if POINT_ID in model else []
        checks.check(rows == expected, f"the row for id {POINT_ID} matches the model")
        checks.check(partitions <= 1 and plan.pruned_buckets == buckets - 1,
                     f"one task, {buckets - 1} of {buckets} buckets pruned")

    with step(f"bucket join with a second table bucketed the same way ({buckets} buckets on id)"):
        rng = np.random.default_rng(99)
        n_dim = max(len(model) // 2, 1)
        dim_ids = np.sort(rng.choice(max(model) + 1 + n_dim if model else n_dim, n_dim, replace=False)).astype(np.int64)
        tiers = pa.array([["bronze", "silver", "gold"][i] for i in rng.integers(0, 3, n_dim)], pa.string())
        profiles = pa.table({"id": dim_ids, "tier": tiers})
        (spark.createDataFrame(profiles.to_pandas(), "id long, tier string").write.format("mergetree")
         .mode("append").option("primaryKey", "id").option("buckets", str(buckets)).save(dim_path))
        joined = mts.bucket_join(spark, path, dim_path, on="id", how="inner")
        count = joined.count()
        plan = joined._jdf.queryExecution().executedPlan().toString()
        has_exchange = "Exchange" in plan
        print(f"   {profiles.num_rows:,} profiles; joined rows: {count:,}; Exchange in physical plan: {has_exchange}")
        expected = len(set(model) & set(dim_ids.tolist()))
        checks.check(count == expected, f"join row count equals the model ({expected:,})")
        checks.check(not has_exchange, "no Exchange (no shuffle) in the physical plan")

    print("\nok" if checks.ok else f"\nFAILED: {', '.join(checks.failures)}")
    return checks


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="mergetree demo-spark", description=__doc__)
    parser.add_argument("--events", type=int, default=200_000, help="change events in total")
    parser.add_argument("--buckets", type=int, default=BUCKETS, help="buckets of both tables")
    parser.add_argument("--dir", default=None, help="where the tables go (default: a temp directory, removed after)")
    args = parser.parse_args(argv)
    own_session = spark is None
    if own_session:
        with step("start Spark (local[2])"):
            spark = quick_session()
    directory = args.dir or tempfile.mkdtemp(prefix="mergetree-demo-spark-")
    if args.dir:
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
    try:
        checks = run_pipeline(spark, directory, args.events, args.buckets)
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
        if own_session:
            spark.stop()
    return 0 if checks.ok else 1
