"""``mergetree bench --advisor``: does the query-driven loop (log -> advise --apply -> optimize ->
the same queries again) pay on a real workload, and is its advice stable?

**SSB** (what ``mergetree bench --advisor`` runs; ``run_ssb``): the Star Schema Benchmark's
flattened ``lineorder`` table (``benchmarks/ssb.py``) at scale factor 1 (6M rows, strings as
string_view, dates as date32, money as decimal128) written as ``SSB_FILES`` (128) appends in
generation order (the unorganized table), its 13 queries imported as a SQL history of multi-line
statements (three times each, as a dashboard would run them) with ``mergetree queries import``'s
``import_sql``.  Each query is run through mergetree — the filter and columns the import
extracts from its SQL, read by ``Table.read`` (file skipping, row filter), the rest of the SQL
(sums, GROUP BY, ORDER BY) by DuckDB on the rows read — and its answer compared with DuckDB's on
the raw Parquet; bytes and files read are ``Table.last_read``'s.  Then ``Table.advise`` three times
on the same log (timed; the same advice each time?), its options applied, ``Table.optimize()``,
and the queries again.  Target: the 10 queries with a date or range predicate read at most 30%
of the bytes they read unorganized, with identical answers, and the advice is the same on every
run.  ``--quick``: scale 0.1.

**The synthetic loop** (``--loop``; ``run_advisor_bench``), against the best fixed layout and the
selectivity lower bound.  The data and queries are those of the layout workload
(``benchmarks/data.py``, ``benchmarks/queries.py``: 10M rows in 200 files, 1,000 queries per
workload).  The workloads: the seed's three (90/10 a|b, 50% a + 50% a+b, 50/50 a|b)
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
from mergetree.table.workload import querylog

from . import queries as lq  # the layout workload's queries (a parameter here is called `queries`)
from . import timing
from .data import A_SPAN, LAYOUT_SCHEMA, LAYOUT_SEED, LayoutData, file_slices, make_layout_data
from .report import duckdb_answer, query_lines, same_rows

__all__ = ["AdvisorReport", "SsbQuery", "SsbReport", "format_advisor_results", "format_ssb_results", "main",
           "run_advisor_bench", "run_ssb"]

MIXED = "mixed"
WORKLOADS = (lq.W_90_10, lq.W_A_AB, lq.W_A_B, MIXED)
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


def _queries(data: LayoutData, workload: str, count: int) -> list[lq.Query]:
    if workload != MIXED:
        return lq.make_queries(data, workload, count)
    parts = [lq.make_queries(data, w, count) for w in (lq.W_POINT, lq.W_TOP, lq.W_GROUP)]
    return [parts[i % 3][i // 3] for i in range(count)]


def _measure(table: Table, data: LayoutData, queries: list[lq.Query], budget: float, min_run: int,
             log: bool) -> Measured:
    """Mean bytes and files per query: run for `budget` seconds (logged by the table when `log`),
    the rest planned; Top-N and GROUP BY not run count at the mean of those run."""
    runner = lq.MergetreeRunner(table, data, lq.sidecar_bytes(table, lq.MODEL))
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


def _log_unrun(table: Table, query: lq.Query) -> None:
    """The record a Top-N or GROUP BY read writes, without its cost (not run)."""
    if query.kind == "top":
        record = querylog.QueryRecord("read", querylog_filter(table, query.filter),
                                      order_by=[("ts", "desc"), ("id", "asc")], limit=lq.TOP_N)
    else:
        measures = [(c, f) for c, f in (query.measures or {}).items()]
        record = querylog.QueryRecord("aggregate", querylog_filter(table, query.filter), group_by=["category"],
                                      measures=measures)
    querylog.record(table.path, record)


def _lower_bound(data: LayoutData, queries: list[lq.Query], rows_per_file: float,
                 bytes_per_file: float) -> tuple[float, float]:
    files = []
    for query in queries:
        if query.kind == "top":
            files.append(1.0)
        else:
            matching = int(lq.row_mask(data, query.filter).sum())
            files.append(float(max(1, math.ceil(matching / rows_per_file))) if matching else 0.0)
    mean_files = sum(files) / len(files)
    return mean_files * bytes_per_file, mean_files


def _logging_overhead(table: Table, data: LayoutData, reads: int = 600) -> tuple[float, float]:
    rng = np.random.default_rng(3)
    on, off = [], []
    for i in range(reads):
        low = int(rng.integers(0, A_SPAN - A_SPAN // 200))
        f = [("a", ">=", low), ("a", "<", low + A_SPAN // 200)]
        os.environ["MERGETREE_QUERY_LOG"] = "1" if i % 2 else "0"
        started = time.perf_counter()
        table.read(filter=f)
        (on if i % 2 else off).append(time.perf_counter() - started)
    os.environ.pop("MERGETREE_QUERY_LOG", None)
    querylog.flush(table.path)
    return statistics.median(on) / statistics.median(off) - 1, statistics.median(off) * 1000


def run_advisor_bench(rows: int = lq.DEFAULT_ROWS, files: int = lq.DEFAULT_FILES, queries: int = lq.DEFAULT_QUERIES,
                      quick: bool = False, budget: float | None = None, fixed: bool = True,
                      directory: str | None = None, progress: bool | None = None,
                      log_queries: int = LOG_QUERIES_FOR_TIMING) -> AdvisorReport:
    started = time.perf_counter()
    if quick:
        rows, queries = lq.quick_sizes(rows, queries)
    budget = (lq.QUICK_BUDGET if quick else lq.DEFAULT_BUDGET) * 2 if budget is None else budget
    min_run = 3
    root = directory or tempfile.mkdtemp(prefix="mergetree-bench-advisor-")
    os.makedirs(root, exist_ok=True)
    try:
        data = make_layout_data(rows, files)
        target = math.ceil(data.table.nbytes / files)
        base = os.path.join(root, "unorganized")
        table = Table.create(base, LAYOUT_SCHEMA, options={"target-file-size": str(int(target * 1.05)),
                                                       "query-log.enabled": "false"})
        for part in file_slices(data):
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
                if workload != lq.W_A_B:
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
            path = os.path.join(root, lq.W_A_B.replace("/", "-").replace("|", "_").replace(" ", "_"))
            grown = Table.open(path)
            many = lq.make_queries(data, lq.W_A_B, log_queries, seed=LAYOUT_SEED + 1)
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


# ---------------------------------------------------------------------------
# SSB: the Star Schema Benchmark's 13 queries as an imported history
# ---------------------------------------------------------------------------

SSB_TARGET = 0.30           # queries with a date or range predicate: at most this share of their unorganized bytes
# files of the unorganized table (about 100 after the rewrite, of ~2 MB each at SF 1; Spark's default of
# 200 shuffle partitions writes more): at 64 (49 after), the files that straddle two s_region blocks of
# the advised linear(s_region, lo_orderdate) hold every date and put a whole-year query at 31-33%
SSB_FILES = 128
SSB_QUICK_SCALE = 0.1


@dataclass
class SsbQuery:
    name: str
    date_or_range: bool
    rows: int = 0                  # rows the answer has
    answer: str = ""               # "ok" when mergetree's answer equals DuckDB's on the raw Parquet
    files_before: int = 0
    files_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    files_total_after: int = 0

    @property
    def ratio(self) -> float:
        return self.bytes_after / self.bytes_before if self.bytes_before else float("nan")


@dataclass
class SsbReport:
    scale: float
    rows: int
    files_before: int
    queries: list[SsbQuery]
    logged: int = 0                 # queries the history import logged
    advice: str = ""
    options: dict = field(default_factory=dict)
    advise_seconds: list[float] = field(default_factory=list)   # each run on the same log
    identical: bool = False         # every advice run decided the same
    margin: float | None = None     # how close the layout decision was (LeverAdvice.margin)
    optimize_seconds: float = 0.0
    generate_seconds: float = 0.0
    files_after: int = 0
    seconds: float = 0.0

    def targets(self) -> list[tuple[str, bool]]:
        out = []
        for q in self.queries:
            if q.date_or_range:
                out.append((f"{q.name}: {q.ratio:.1%} of its unorganized bytes (target <= {SSB_TARGET:.0%})",
                            q.ratio <= SSB_TARGET))
        out.append((f"answers equal DuckDB's on the raw Parquet: {sum(q.answer == 'ok' for q in self.queries)} of "
                    f"{len(self.queries)}", all(q.answer == "ok" for q in self.queries)))
        out.append((f"the same advice on {len(self.advise_seconds)} runs of the same log", self.identical))
        return out


def _ssb_read(table: Table, sql: str):
    """One SSB query through mergetree: the filter and columns `queries import` extracts from the
    SQL, read by `Table.read` (its file skipping and row filter), the rest of the SQL (sums,
    GROUP BY, ORDER BY) run by DuckDB on the rows read.  -> (answer, files read, bytes read)."""
    import duckdb

    from mergetree.organize.sqlimport import extract_queries

    extracted, = extract_queries(sql, table.schema, "lineorder")
    rows = table.read(columns=extracted.columns, filter=extracted.filter)
    stats = table.last_read
    connection = duckdb.connect()
    connection.register("lineorder", rows)
    return duckdb_answer(connection, sql), stats.files_read, stats.bytes_read


def ssb_history(path: str, repeat: int = 3) -> int:
    """Import the 13 queries (`repeat` times each) into the table's query log through
    `mergetree queries import`'s machinery, from a SQL script of multi-line statements."""
    from mergetree.organize import import_sql

    from . import ssb

    script = os.path.join(os.path.dirname(os.path.normpath(path)), "ssb-history.sql")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(ssb.history(repeat))
    result = import_sql(path, script, table_name="lineorder")
    if result.imported != repeat * len(ssb.QUERIES):
        raise RuntimeError(f"the SSB history's {repeat * len(ssb.QUERIES)} statements were imported as "
                           f"{result.imported} queries: {result.summary()}")
    return result.imported


def run_ssb(scale: float = 1.0, files: int = SSB_FILES, directory: str | None = None, advise_runs: int = 3,
            repeat: int = 3, progress: bool | None = None) -> SsbReport:
    """SSB end to end: generate the flattened lineorder at `scale`, write its raw Parquet (DuckDB's
    reference) and an unorganized table of `files` appends, import the 13 queries as a history,
    run each (bytes before), advise `advise_runs` times on the same log (the same advice each
    time?), apply, optimize, run each again (bytes after), every answer checked against DuckDB's
    on the raw Parquet (the table: an Apache Paimon append table)."""
    import duckdb
    import pyarrow.parquet as pq

    from . import ssb

    started = time.perf_counter()
    root = directory or tempfile.mkdtemp(prefix="mergetree-bench-ssb-")
    os.makedirs(root, exist_ok=True)
    previous = os.environ.get("MERGETREE_QUERY_LOG")
    os.environ["MERGETREE_QUERY_LOG"] = "0"   # the log holds the imported history only
    try:
        with timing.progress_bar("ssb", "steps", 4 + len(ssb.QUERIES) * 2 + advise_runs, progress) as advance:
            generated = timing.timed(ssb.generate, scale)
            data = generated.output
            raw = os.path.join(root, "lineorder.parquet")
            pq.write_table(data, raw)
            path = os.path.join(root, "lineorder")
            table = Table.create(path, data.schema, options={
                "target-file-size": str(math.ceil(data.nbytes / files)), "write-only": "true",
                "query-log.enabled": "true"})
            per = math.ceil(data.num_rows / files)
            for start in range(0, data.num_rows, per):
                table.write(data.slice(start, per))
            # the target is the files' size on disk, as Java rolls them
            on_disk = table.plan().bytes_total
            table.set_options({"target-file-size": str(math.ceil(on_disk / files))})
            rows = data.num_rows
            del data
            reference = duckdb.connect()
            reference.sql(f"CREATE VIEW lineorder AS SELECT * FROM read_parquet('{raw}')")
            advance(1)
            logged = ssb_history(path, repeat)
            advance(1)
            measured: dict[str, SsbQuery] = {}
            expected = {}
            for name, sql in ssb.QUERIES.items():
                expected[name] = duckdb_answer(reference, sql)
                answer, files_read, bytes_read = _ssb_read(table, sql)
                measured[name] = SsbQuery(name, name in ssb.DATE_OR_RANGE, answer.num_rows,
                                          same_rows(answer, expected[name]), files_read, 0, bytes_read)
                advance(1)
            files_before = len(table.plan().files)
            runs = []
            for _ in range(advise_runs):
                runs.append(timing.timed(table.advise, pause_gc=False))
                advance(1)
            decisions = [r.output.decision() for r in runs]
            advice = runs[0].output
            table.set_options(advice.options) if advice.options else None
            optimized = timing.timed(table.optimize, pause_gc=False)
            advance(1)
            for name, sql in ssb.QUERIES.items():
                answer, files_read, bytes_read = _ssb_read(table, sql)
                q = measured[name]
                q.files_after, q.bytes_after = files_read, bytes_read
                if q.answer == "ok":
                    q.answer = same_rows(answer, expected[name])
                advance(1)
            files_after = len(table.plan().files)
            for q in measured.values():
                q.files_total_after = files_after
            distribution = next((lever for lever in advice.levers if lever.lever == "distribution"), None)
            advance(1)
        return SsbReport(scale, rows, files_before, list(measured.values()), logged, advice.explain(),
                         dict(advice.options), [r.seconds for r in runs],
                         all(d == decisions[0] for d in decisions), distribution.margin if distribution else None,
                         optimized.seconds, generated.seconds, files_after, time.perf_counter() - started)
    finally:
        if previous is None:
            os.environ.pop("MERGETREE_QUERY_LOG", None)
        else:
            os.environ["MERGETREE_QUERY_LOG"] = previous
        if not directory:
            shutil.rmtree(root, ignore_errors=True)


def format_ssb_results(report: SsbReport) -> str:
    lines = [f"SSB at scale {report.scale:g}: {report.rows:,} lineorder rows, {report.files_before} files before, "
             f"{report.files_after} after; {report.logged} queries imported", *query_lines(report.queries)]
    picked = [q for q in report.queries if q.date_or_range]
    if picked:
        share = sum(q.bytes_after for q in picked) / sum(q.bytes_before for q in picked)
        overall = sum(q.bytes_after for q in report.queries) / sum(q.bytes_before for q in report.queries)
        lines.append(f"date/range queries: {share:.1%} of their unorganized bytes in all; all queries: {overall:.1%}")
    lines.append(f"advice: {', '.join(f'{s:.2f}' for s in report.advise_seconds)} s on {len(report.advise_seconds)} "
                 f"runs, {'identical' if report.identical else 'NOT identical'}"
                 + (f"; layout decided by a margin of {report.margin:.1%}" if report.margin is not None else "")
                 + f"; optimize {report.optimize_seconds:.1f} s; generate {report.generate_seconds:.1f} s")
    lines.append(f"applied: {report.options}")
    lines += ["  " + line for line in report.advice.splitlines()]
    lines.append("targets:")
    lines += [f"  {text}: {'met' if ok else 'MISSED'}" for text, ok in report.targets()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_advisor", description=__doc__.splitlines()[0])
    parser.add_argument("--loop", action="store_true",
                        help="the synthetic loop (the layout workload's table and queries) instead of SSB")
    parser.add_argument("--scale", type=float, default=1.0, help="SSB scale factor (1: 6M lineorder rows)")
    parser.add_argument("--files", type=int, default=SSB_FILES, help="SSB: files of the unorganized table")
    parser.add_argument("--quick", action="store_true", help="SSB at scale 0.1; the loop: a tenth of rows and queries")
    parser.add_argument("--rows", type=int, default=lq.DEFAULT_ROWS)
    parser.add_argument("--queries", type=int, default=lq.DEFAULT_QUERIES)
    parser.add_argument("--budget", type=float, help="seconds of queries run per measurement")
    parser.add_argument("--no-fixed", action="store_true", help="skip the fixed layouts")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    report: AdvisorReport | SsbReport
    if args.loop:
        report = run_advisor_bench(args.rows, lq.DEFAULT_FILES, args.queries, args.quick, args.budget,
                                   not args.no_fixed)
        print(format_advisor_results(report))
    else:
        report = run_ssb(SSB_QUICK_SCALE if args.quick else args.scale, args.files)
        print(format_ssb_results(report))
    print(f"advisor workload took {report.seconds:.0f}s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(asdict(report), handle, indent=2, default=str)
    return 0 if all(ok for _, ok in report.targets()) else 1


if __name__ == "__main__":
    sys.exit(main())
