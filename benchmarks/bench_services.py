"""The table services a lakehouse user expects of a primary-key table (issue 37), each timed
against the plain case it adds to, and against deltalake where it has the same job:

- schema evolution: a full read after columns were added, renamed and widened (old files read
  by field id) against the same read before;
- delete by a condition: 10% of an append table's rows (copy on write) against deltalake's
  ``DeltaTable.delete(predicate)`` on the same rows; 10% of a primary-key table's (``-D`` rows);
- dynamic buckets: the upserts written into a ``bucket = -1`` table (keys placed by the hash
  index) against the same into fixed buckets, and a point lookup in each;
- the ``lookup`` changelog producer: writes with their compactions, against no producer;
- expiry after every commit: small commits on a table whose expiry has work each time, against
  the same with it switched off (``write-only`` keeps the compaction out of both).
(`mergetree migrate`, which reads the older format, is not timed here: no code left writes
that format to make a large table of it.)
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute

import mergetree as mt
from mergetree.table import expiry

from .timing import best_of

DEFAULT_ROWS = 1_000_000
QUICK_ROWS = 200_000


@dataclass
class ServicesResult:
    case: str
    seconds: float
    baseline: str = ""
    baseline_seconds: float | None = None
    note: str = ""
    check: str = "ok"  # the answer checked against the plain case's (or the model's): "ok" or what differs

    @property
    def ratio(self) -> float | None:
        return None if not self.baseline_seconds else self.seconds / self.baseline_seconds


@dataclass
class ServicesReport:
    rows: int
    results: list[ServicesResult] = field(default_factory=list)
    seconds: float = 0.0


def _rows(n: int, rng: np.random.Generator, keys: int) -> pa.Table:
    ids = rng.integers(0, keys, n)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(rng.integers(0, 1000, n), pa.int32()),
                     "s": pa.array([f"s{i % 97}" for i in ids])})


def _timed(fn: Callable[[], object], repeat: int, after_each: Callable[[], None] | None = None) -> float:
    return best_of(fn, repeat=repeat, after_each=after_each).seconds


def run_services_bench(rows: int = DEFAULT_ROWS, repeat: int = 3, workdir: str | None = None) -> ServicesReport:
    started = time.perf_counter()
    root = tempfile.mkdtemp(prefix="mergetree-services-", dir=workdir)
    report = ServicesReport(rows)
    rng = np.random.default_rng(37)
    commits = [_rows(rows // 10, rng, rows // 5) for _ in range(10)]
    try:
        def table(name: str, **create: object) -> mt.Table:
            path = os.path.join(root, name)
            shutil.rmtree(path, ignore_errors=True)
            return mt.Table.create(path, commits[0].schema, **create)  # type: ignore[arg-type]

        # -- schema evolution: a read of old files under a changed schema
        t = table("evolve", primary_key="id", buckets=4)
        for c in commits:
            t.write(c)
        t.compact(full=True)
        before = _timed(lambda: t.read(), repeat)
        with t.update_schema() as update:
            update.add_column("extra", pa.float64())
            update.rename_column("s", "label")
            update.update_column("v", field_type=pa.int64())
        after = _timed(lambda: t.read(), repeat)
        evolved = t.read()
        same = evolved.num_rows == len(set(pa.concat_tables(commits).column("id").to_pylist())) and \
            evolved.column("extra").null_count == evolved.num_rows
        report.results.append(ServicesResult("read after add + rename + widen", after, "read before", before,
                                             check="ok" if same else "rows differ"))

        # -- delete by a condition: an append table (copy on write) and deltalake's
        data = pa.concat_tables(commits)
        appended = table("append")
        appended.write(data)
        shutil.copytree(appended.path, appended.path + "-copy")

        def restore(path: str) -> Callable[[], None]:  # (each delete starts from the same table, untimed)
            def again() -> None:
                shutil.rmtree(path)
                shutil.copytree(path + "-copy", path)
            return again
        ours = _timed(lambda: mt.Table.open(appended.path).delete(filter=("v", "<", 100)), repeat,
                      restore(appended.path))
        peer = None
        try:
            import deltalake
            delta_path = os.path.join(root, "delta")
            deltalake.write_deltalake(delta_path, data)
            shutil.copytree(delta_path, delta_path + "-copy")
            peer = _timed(lambda: deltalake.DeltaTable(delta_path).delete("v < 100"), repeat, restore(delta_path))
        except ImportError:
            pass
        kept = int(pa.compute.sum(pa.compute.greater_equal(data.column("v"), 100)).as_py())
        mt.Table.open(appended.path).delete(filter=("v", "<", 100))  # once more (each timed one was undone)
        left = mt.Table.open(appended.path).read().num_rows
        report.results.append(ServicesResult("delete 10% of an append table", ours, "deltalake delete(predicate)",
                                             peer, "copy on write, both",
                                             check="ok" if left == kept else f"{left} rows left, not {kept}"))
        keyed = table("keyed", primary_key="id", buckets=4)
        keyed.write(data)
        seconds = _timed(lambda: keyed.delete(filter=("v", "<", 100)), 1)
        small_v = keyed.read(filter=("v", "<", 100)).num_rows
        report.results.append(ServicesResult("delete 10% of a primary-key table", seconds,
                                             note="-D rows, then the touched buckets' compaction",
                                             check="ok" if small_v == 0 else f"{small_v} rows left"))

        # -- dynamic buckets against fixed ones
        def write_all(t: mt.Table) -> None:
            for c in commits:
                t.write(c)
        fixed = table("fixed", primary_key="id", buckets=4)
        fixed_seconds = _timed(lambda: write_all(fixed), 1)
        dynamic = table("dynamic", primary_key="id", buckets=-1,
                        options={"dynamic-bucket.target-row-num": str(max(rows // 20, 1))})  # about 4 buckets
        dynamic_seconds = _timed(lambda: write_all(dynamic), 1)
        same = sorted(dynamic.read().column("id").to_pylist()) == sorted(fixed.read().column("id").to_pylist())
        report.results.append(ServicesResult("write into dynamic buckets", dynamic_seconds, "fixed buckets (4)",
                                             fixed_seconds, f"{len({b.bucket for b in dynamic.plan().buckets})} "
                                                            f"dynamic buckets", "ok" if same else "keys differ"))
        probe = int(commits[0].column("id")[0].as_py())
        report.results.append(ServicesResult(
            "point lookup, dynamic buckets", _timed(lambda: dynamic.read(filter=("id", "=", probe)), repeat * 5),
            "fixed buckets", _timed(lambda: fixed.read(filter=("id", "=", probe)), repeat * 5),
            "every bucket searched: no function gives a key's bucket"))

        # -- the lookup changelog producer
        plain = table("plain", primary_key="id", buckets=4)
        looked = table("looked", primary_key="id", buckets=4, options={"changelog-producer": "lookup"})
        looked_seconds, plain_seconds = _timed(lambda: write_all(looked), 1), _timed(lambda: write_all(plain), 1)
        streamed: dict = {}
        for r in looked.changes(0, source="changelog").read_all().select(["id", "v", "_row_kind"]).to_pylist():
            if r["_row_kind"] in ("+I", "+U"):
                streamed[r["id"]] = r["v"]
            else:
                streamed.pop(r["id"], None)
        same = streamed == {r["id"]: r["v"] for r in plain.read(columns=["id", "v"]).to_pylist()}
        report.results.append(ServicesResult("writes + compactions, lookup changelog", looked_seconds, "no changelog",
                                             plain_seconds, "each compaction writes what its level-0 files change",
                                             "ok" if same else "the changelog does not fold into the table"))

        # -- expiry after every commit
        small = [pa.table({"id": [i], "v": pa.array([i], pa.int32()), "s": ["x"]}) for i in range(100)]

        def small_commits(name: str, on: bool) -> float:
            t = table(name, primary_key="id", options={"snapshot.num-retained.min": "5",
                                                       "snapshot.time-retained": "1 ms", "write-only": "true"})
            original = expiry.after_commit

            def expire(directory, committed) -> None:  # (a write-only table has none: switched on here)
                if on:
                    expiry.expire_snapshots(directory, limit=10)
            expiry.after_commit = expire
            try:
                begin = time.perf_counter()
                for batch in small:
                    t.write(batch)
                return (time.perf_counter() - begin) / len(small)
            finally:
                expiry.after_commit = original
        report.results.append(ServicesResult("commit with expiry after it", small_commits("expiring", True),
                                             "commit without", small_commits("kept", False),
                                             "per commit; each expiry removes one snapshot and its files"))

    finally:
        shutil.rmtree(root, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    return report


def format_services_results(report: ServicesReport) -> str:
    lines = [f"{'case':<40} {'seconds':>9}  {'against':<30} {'seconds':>9} {'ratio':>6}  {'check':<6} note"]
    for r in report.results:
        against = f"{r.baseline_seconds:9.4f}" if r.baseline_seconds else f"{'':>9}"
        ratio = f"{r.ratio:6.2f}" if r.ratio is not None else f"{'':>6}"
        lines.append(f"{r.case:<40} {r.seconds:9.4f}  {r.baseline:<30} {against} {ratio}  {r.check:<6} {r.note}")
    return "\n".join(lines)


__all__ = ["DEFAULT_ROWS", "QUICK_ROWS", "ServicesReport", "ServicesResult", "format_services_results",
           "run_services_bench"]
