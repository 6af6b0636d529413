"""``mergetree bench --advisor``: does the query-driven loop (log -> advise --apply -> optimizer ->
the same queries again) pay, against the best fixed layout and the selectivity lower bound?

The data and queries are those of ``benchmarks/bench_layout.py`` (10M rows in 200 files, 1,000
queries per workload).  The workloads: the seed's three (90/10 a|b, 50% a + 50% a+b, 50/50 a|b)
and a mixed one (a third each: point lookups on id, Top-10 by ts, GROUP BY category).

For each workload, on a fresh copy of the unorganized table:

1. **before**: the 1,000 queries go through ``Table.read``/``Table.aggregate``, so the table logs
   them.  At full size running every query on the unorganized table would take hours (a full
   scan costs ~1.5 s), so queries are run for ``budget`` seconds and the rest are *planned*
   (``Table.plan``, the files the read would open) and logged with the same record a read
   writes (``querylog.record``).  Bytes scanned: per query, the plan's bytes (filter queries),
   or the read's own (Top-N and GROUP BY, decided while they run; queries not run are counted
   at the mean of those run).
2. ``Table.advise(apply=True)`` (timed), then ``organize.run_once`` with
   ``optimize.major-threshold`` lowered to 1 MB so one major pass lays out the whole table (the
   2 GB default is sized for production partitions).
3. **after**: the same queries, measured the same way.

Next to them: the **best fixed layout** — every pair of the filtered and ordered columns (a, b,
id, ts) in linear (both orders), Z-order and Hilbert, built once each by ``optimize`` and
measured on every workload (no indexes or pre-aggregates: layouts only) — and the
**selectivity lower bound**: for each query, the fewest files of the target size that could
hold exactly its matching rows (Top-N: one file), in bytes at the table's bytes per file.

Also measured: the time to advise on a 100,000-query log, and the cost of query logging on a
~10 ms read (reads interleaved with logging on and off).
"""
from __future__ import annotations

import functools
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from itertools import combinations

import numpy as np

from mergetree import Table
from mergetree.organize import run_once
from mergetree.table import querylog

from . import bench_layout as bl
from . import timing

__all__ = ["AdvisorReport", "format_advisor_results", "main", "run_advisor_bench"]

MIXED = "mixed"
WORKLOADS = (bl.W_90_10, bl.W_A_AB, bl.W_A_B, MIXED)
FIXED_COLUMNS = ("a", "b", "id", "ts")
SEED_REDUCTION = 0.28          # Bilibili's reported scan reduction
LOG_QUERIES_FOR_TIMING = 100_000


@dataclass
class Measured:
    queries: int = 0
    run: int = 0
    bytes: float = 0.0         # mean bytes scanned per query
    files: float = 0.0         # mean files per query


@dataclass
class WorkloadResult:
    workload: str
    before: Measured
    after: Measured
    best_fixed: str = ""
    best_fixed_bytes: float = 0.0
    lower_bound_bytes: float = 0.0
    lower_bound_files: float = 0.0
    advice: str = ""
    options: dict = field(default_factory=dict)
    advise_seconds: float = 0.0
    passes: list = field(default_factory=list)


@dataclass
class AdvisorReport:
    sizes: dict
    workloads: list[WorkloadResult]
    fixed: dict[str, dict[str, float]]       # layout -> workload -> mean bytes per query
    advise_100k_seconds: float = float("nan")
    logging_overhead: float = float("nan")    # median read time with logging / without - 1
    read_ms: float = float("nan")
    seconds: float = 0.0

    def targets(self) -> list[tuple[str, bool]]:
        out = []
        for w in self.workloads:
            ratio = w.after.bytes / w.before.bytes if w.before.bytes else float("nan")
            out.append((f"{w.workload}: after advise + optimizer {ratio:.1%} of the unorganized bytes "
                        f"(target <= 50%)", ratio <= 0.5))
            out.append((f"{w.workload}: {w.after.bytes / 2**20:,.2f} MiB per query vs best fixed layout "
                        f"{w.best_fixed} {w.best_fixed_bytes / 2**20:,.2f} MiB (target: no more)",
                        w.after.bytes <= w.best_fixed_bytes * 1.0001))
        mixed = next((w for w in self.workloads if w.workload == MIXED), None)
        if mixed is not None:
            within = mixed.after.bytes / mixed.lower_bound_bytes if mixed.lower_bound_bytes else float("nan")
            out.append((f"mixed: {within:.2f}x the selectivity lower bound (target <= 2x)", within <= 2.0))
        total_before = sum(w.before.bytes for w in self.workloads)
        total_after = sum(w.after.bytes for w in self.workloads)
        reduction = 1 - total_after / total_before if total_before else float("nan")
        out.append((f"overall: {reduction:.0%} fewer bytes scanned (the seed reported {SEED_REDUCTION:.0%}; "
                    f"target: well above)", reduction >= 2 * SEED_REDUCTION))
        out.append((f"advising on a {self.sizes.get('log_queries', 0):,}-query log: {self.advise_100k_seconds:.1f}s "
                    f"(target < 10s for 100,000)", self.advise_100k_seconds < 10))
        out.append((f"query logging on a {self.read_ms:.1f} ms read: {self.logging_overhead:+.1%} (target < 2%)",
                    self.logging_overhead < 0.02))
        return out


def _queries(data: bl.LayoutData, workload: str, count: int) -> list[bl.Query]:
    if workload != MIXED:
        return bl.make_queries(data, workload, count)
    parts = [bl.make_queries(data, w, count) for w in (bl.W_POINT, bl.W_TOP, bl.W_GROUP)]
    return [parts[i % 3][i // 3] for i in range(count)]


def _measure(table: Table, data: bl.LayoutData, queries: list[bl.Query], budget: float, min_run: int,
             log: bool) -> Measured:
    """Mean bytes and files per query: run for `budget` seconds (logged by the table when `log`),
    the rest planned; Top-N and GROUP BY not run count at the mean of those run."""
    runner = bl.MergetreeRunner(table, data, bl.sidecar_bytes(table, bl.MODEL))
    previous = os.environ.get("MERGETREE_QUERY_LOG")
    os.environ["MERGETREE_QUERY_LOG"] = "1" if log else "0"
    started = time.perf_counter()
    out = Measured(len(queries))
    decided: dict[str, list[tuple[int, int]]] = {"top": [], "group": []}
    planned_only: dict[str, int] = {"top": 0, "group": 0}
    total_bytes = total_files = 0.0
    try:
        for index, query in enumerate(queries):
            if index < min_run or time.perf_counter() - started < budget:
                _, files, size, _ = runner.run(query)
                out.run += 1
                if query.kind in decided:
                    decided[query.kind].append((files, size))
            elif query.kind == "filter":
                plan = table.plan(query.filter)
                files, size = len(plan.files), sum(m.file_size for m in plan.files)
                if log:  # the record the read would have written
                    querylog.record(table.path, querylog.QueryRecord(
                        "read", querylog_filter(table, query.filter), snapshot_id=plan.snapshot_id,
                        files_scanned=files, files_total=plan.files_total, bytes_scanned=size,
                        bytes_total=plan.bytes_total))
            else:
                planned_only[query.kind] += 1
                if log:
                    _log_unrun(table, query)
                continue
            total_files += files
            total_bytes += size
    finally:
        if previous is None:
            os.environ.pop("MERGETREE_QUERY_LOG", None)
        else:
            os.environ["MERGETREE_QUERY_LOG"] = previous
    for kind, seen in decided.items():
        if planned_only[kind] and seen:
            total_files += planned_only[kind] * statistics.mean(f for f, _ in seen)
            total_bytes += planned_only[kind] * statistics.mean(b for _, b in seen)
    out.bytes, out.files = total_bytes / len(queries), total_files / len(queries)
    querylog.flush(table.path)
    return out


def querylog_filter(table: Table, f):
    from mergetree.table import filters as flt
    return flt.normalize(f, table.schema)


def _log_unrun(table: Table, query: bl.Query) -> None:
    """The record a Top-N or GROUP BY read writes, without its cost (not run)."""
    if query.kind == "top":
        record = querylog.QueryRecord("read", querylog_filter(table, query.filter),
                                      order_by=[("ts", "desc"), ("id", "asc")], limit=bl.TOP_N)
    else:
        measures = [(c, f) for c, f in (query.measures or {}).items()]
        record = querylog.QueryRecord("aggregate", querylog_filter(table, query.filter), group_by=["category"],
                                      measures=measures)
    querylog.record(table.path, record)


def _lower_bound(data: bl.LayoutData, queries: list[bl.Query], rows_per_file: float,
                 bytes_per_file: float) -> tuple[float, float]:
    files = []
    for query in queries:
        if query.kind == "top":
            files.append(1.0)
        else:
            matching = int(bl.row_mask(data, query.filter).sum())
            files.append(float(max(1, math.ceil(matching / rows_per_file))) if matching else 0.0)
    mean_files = sum(files) / len(files)
    return mean_files * bytes_per_file, mean_files


def _logging_overhead(table: Table, data: bl.LayoutData, reads: int = 600) -> tuple[float, float]:
    rng = np.random.default_rng(3)
    on, off = [], []
    for i in range(reads):
        low = int(rng.integers(0, bl.A_SPAN - bl.A_SPAN // 200))
        f = [("a", ">=", low), ("a", "<", low + bl.A_SPAN // 200)]
        os.environ["MERGETREE_QUERY_LOG"] = "1" if i % 2 else "0"
        started = time.perf_counter()
        table.read(filter=f)
        (on if i % 2 else off).append(time.perf_counter() - started)
    os.environ.pop("MERGETREE_QUERY_LOG", None)
    querylog.flush(table.path)
    return statistics.median(on) / statistics.median(off) - 1, statistics.median(off) * 1000


def run_advisor_bench(rows: int = bl.DEFAULT_ROWS, files: int = bl.DEFAULT_FILES, queries: int = bl.DEFAULT_QUERIES,
                      quick: bool = False, budget: float | None = None, fixed: bool = True,
                      directory: str | None = None, progress: bool | None = None,
                      log_queries: int = LOG_QUERIES_FOR_TIMING) -> AdvisorReport:
    started = time.perf_counter()
    if quick:
        rows, queries = bl.quick_sizes(rows, queries)
    budget = (bl.QUICK_BUDGET if quick else bl.DEFAULT_BUDGET) * 2 if budget is None else budget
    min_run = 3
    root = directory or tempfile.mkdtemp(prefix="mergetree-bench-advisor-")
    os.makedirs(root, exist_ok=True)
    try:
        data = bl.make_data(rows, files)
        target = math.ceil(data.table.nbytes / files)
        base = os.path.join(root, "unorganized")
        table = Table.create(base, bl.SCHEMA, options={"target-file-size": str(int(target * 1.05)),
                                                       "query-log.enabled": "false"})
        for part in bl.file_slices(data):
            table.write(part)
        first = table.plan()
        bytes_per_file = first.bytes_total / max(first.files_total, 1)
        rows_per_file = rows / max(first.files_total, 1)
        workload_queries = {w: _queries(data, w, queries) for w in WORKLOADS}
        results = []
        steps = len(WORKLOADS) + (len(_fixed_layouts()) if fixed else 0) + 1
        with timing.progress_bar("advisor bench", "steps", steps, progress) as advance:
            for workload in WORKLOADS:
                path = os.path.join(root, workload.replace("/", "-").replace("|", "_").replace(" ", "_"))
                shutil.copytree(base, path)
                t = Table.open(path)
                t.set_options({"query-log.enabled": "true", "target-file-size": str(target),
                               "optimize.major-threshold": "1 mb"})
                qs = workload_queries[workload]
                before = _measure(t, data, qs, budget, min_run, log=True)
                advised = timing.timed(functools.partial(t.advise, apply=True))
                advice = advised.output
                passes = run_once(path)
                t = Table.open(path)
                after = _measure(t, data, qs, budget, min_run, log=False)
                low_bytes, low_files = _lower_bound(data, qs, rows_per_file, bytes_per_file)
                results.append(WorkloadResult(workload, before, after, lower_bound_bytes=low_bytes,
                                              lower_bound_files=low_files, advice=advice.explain(),
                                              options=advice.options, advise_seconds=advised.seconds,
                                              passes=[p.line() for p in passes]))
                if workload != bl.W_A_B:
                    shutil.rmtree(path, ignore_errors=True)
                advance(1)
            fixed_bytes: dict[str, dict[str, float]] = {}
            overhead, read_ms = float("nan"), float("nan")
            for columns, strategy in (_fixed_layouts() if fixed else []):
                name = f"{strategy}({','.join(columns)})"
                path = os.path.join(root, "fixed")
                shutil.rmtree(path, ignore_errors=True)
                shutil.copytree(base, path)
                t = Table.open(path)
                t.optimize(order=list(columns), strategy=strategy, target_file_size=target)
                fixed_bytes[name] = {w: _measure(t, data, workload_queries[w], budget / 4, min_run, log=False).bytes
                                     for w in WORKLOADS}
                if name == "linear(a,b)":
                    t.set_options({"query-log.enabled": "true"})
                    overhead, read_ms = _logging_overhead(Table.open(path), data)
                shutil.rmtree(path, ignore_errors=True)
                advance(1)
            for result in results:
                if fixed_bytes:
                    best = min(fixed_bytes, key=lambda n: fixed_bytes[n][result.workload])
                    result.best_fixed, result.best_fixed_bytes = best, fixed_bytes[best][result.workload]
            # advising on a large log: the a|b table's log grown to LOG_QUERIES_FOR_TIMING queries
            path = os.path.join(root, bl.W_A_B.replace("/", "-").replace("|", "_").replace(" ", "_"))
            grown = Table.open(path)
            many = bl.make_queries(data, bl.W_A_B, log_queries, seed=bl.SEED + 1)
            querylog.append_rows(grown.path, [querylog.QueryRecord(
                "read", querylog_filter(grown, q.filter), files_scanned=1, files_total=1, bytes_scanned=1,
                bytes_total=1).to_row() for q in many])
            advise_seconds = timing.timed(lambda: grown.advise()).seconds
            advance(1)
        sizes = {"rows": rows, "files": files, "queries": queries, "budget_seconds": budget,
                 "log_queries": log_queries + queries}
        return AdvisorReport(sizes, results, fixed_bytes, advise_seconds, overhead, read_ms,
                             time.perf_counter() - started)
    finally:
        if not directory:
            shutil.rmtree(root, ignore_errors=True)


def _fixed_layouts() -> list[tuple[tuple[str, ...], str]]:
    out: list[tuple[tuple[str, ...], str]] = []
    for x, y in combinations(FIXED_COLUMNS, 2):
        out += [((x, y), "linear"), ((y, x), "linear"), ((x, y), "zorder"), ((x, y), "hilbert")]
    return out


def format_advisor_results(report: AdvisorReport) -> str:
    mib = 2**20
    lines = [f"{'workload':<14} {'before MiB':>11} {'after MiB':>10} {'after %':>8} {'best fixed':>20} "
             f"{'fixed MiB':>10} {'bound MiB':>10} {'advise s':>9}"]
    for w in report.workloads:
        lines.append(f"{w.workload:<14} {w.before.bytes / mib:>11,.2f} {w.after.bytes / mib:>10,.2f} "
                     f"{w.after.bytes / w.before.bytes:>8.1%} {w.best_fixed:>20} {w.best_fixed_bytes / mib:>10,.2f} "
                     f"{w.lower_bound_bytes / mib:>10,.2f} {w.advise_seconds:>9.2f}")
    lines.append("")
    for w in report.workloads:
        lines.append(f"-- {w.workload}: applied {w.options}")
        lines += ["   " + line for line in w.advice.splitlines()]
        lines += [f"   pass {p}" for p in w.passes]
    lines.append("")
    lines.append("targets:")
    lines += [f"  {text}: {'met' if ok else 'MISSED'}" for text, ok in report.targets()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_advisor", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the rows and queries")
    parser.add_argument("--rows", type=int, default=bl.DEFAULT_ROWS)
    parser.add_argument("--queries", type=int, default=bl.DEFAULT_QUERIES)
    parser.add_argument("--budget", type=float, help="seconds of queries run per measurement")
    parser.add_argument("--no-fixed", action="store_true", help="skip the fixed layouts")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    report = run_advisor_bench(args.rows, bl.DEFAULT_FILES, args.queries, args.quick, args.budget,
                               not args.no_fixed)
    print(format_advisor_results(report))
    print(f"advisor workload took {report.seconds:.0f}s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(asdict(report), handle, indent=2, default=str)
    return 0 if all(ok for _, ok in report.targets()) else 1


if __name__ == "__main__":
    sys.exit(main())
