"""``mergetree bench --layout``: how much data organization saves, against delta-rs's Z-order.

The data (``benchmarks/data.py``, ``make_layout_data``): an append table of ``rows`` rows (10M)
written as ``files`` files (200) of random rows, in the order they were generated (the
*unorganized* table).  Columns: ``id`` (unique int64, even numbers in random order, so odd ids
are absent), ``a`` (int64, uniform over [0, 1e9)), ``b`` (float64, normal), ``z`` (int64,
Zipf-skewed), ``ts`` (timestamp[us], uniform over 30 days), ``category`` (string, 20 values with
1/k frequencies) and the measures ``amount`` (float64) and ``qty`` (int64).

The layouts, each a copy of the unorganized table (``shutil.copytree``) rewritten by one call,
so every layout holds the same rows in about the same number of files:

* ``unorganized``: the write order;
* ``linear(a,b)``, ``zorder(a,b)``, ``hilbert(a,b)``: ``optimize(order=["a", "b"], strategy=...)``;
* ``hilbert+indexes``: the Hilbert table with a Bloom filter on ``id`` (fpp 0.01), a bitmap
  on ``category`` and the pre-aggregate ``by_category`` (``category``: ``amount`` sum, ``qty``
  sum, row count), given to existing files by ``build_indexes``;
* ``linear(ts)``: ``optimize(order=["ts"])``, the layout for Top-N by time.  Top-N skips
  files by their ``[min, max]`` of ``ts``, so the files themselves must be tight on ``ts``;
  ``sort_within="ts"`` only orders rows inside each file and leaves every file's range as it
  was, so it cannot make a Top-10 read skip a file;
* ``delta-rs zorder(a,b)``: the same rows written to a Delta table by ``deltalake`` in the same
  200 appends, then ``DeltaTable.optimize.z_order(["a", "b"], target_size=<the average file
  size>)``.

The workloads (``benchmarks/queries.py``), ``queries`` (1,000) generated queries each with a fixed seed:

* ``90/10 a|b``: 90% a range on ``a``, 10% a range on ``b``;
* ``50/50 a|a+b``: half a range on ``a``, half a range on ``a`` AND one on ``b``;
* ``50/50 a|b``: half on ``a``, half on ``b`` (every range selects about 1% of the rows:
  ``a`` a window of 1% of its domain, ``b`` between two of its percentiles);
* ``point id``: ``id = k``, 80% existing ids, 20% absent (odd) ones;
* ``top-10 ts``: the 10 newest rows (``order_by=[("ts", "desc")], limit=10``), half with no
  filter, half with the light filter ``category != c`` (c random);
* ``group-by category``: ``aggregate("category", {"amount": "sum"} plus, each with a chance
  of one half, ``qty`` sum and the row count)``, half with no filter, half with ``category IN``
  1 to 5 random categories.

What is measured, per layout and workload:

* *files and bytes scanned*: what mergetree reports for the query (``Table.last_read``:
  ``files_read``, ``bytes_read``; Top-N counts the files it actually read).  Queries answered
  from pre-aggregates read no data file: their bytes are the sidecars' sizes.  Every query is
  measured: the ones run (below) by their read, the others by ``Table.plan`` (the same files
  the read would touch; that plan and read agree is checked on every query run).  Top-10 and
  GROUP BY queries are decided while they run (Top-N stops early, pre-aggregates replace
  files), so only the queries run are measured there.
* *query time*: wall time of each query run, mean per query.  At full size 1,000 queries of
  every workload on every layout would take hours (a full scan of the table costs ~1 s), so in
  each (layout, workload) the queries run in generated order for ``budget`` seconds (at least
  ``min_run`` of them); the table says how many ran.
* *answers*: every query run is checked against the answer computed with numpy from the
  generated data: the same rows (all columns, compared sorted by id), the same Top-10 rows in
  order, the same groups and aggregates (float sums to 1e-9 relative).

delta-rs: *files scanned* is ``len(DeltaTable.file_uris(file_pruning_predicate=<the query's
WHERE clause>))``, delta-rs's own data skipping over the per-file min/max statistics of the
Delta log (the full list when a query has no filter: the log cannot skip files for ORDER BY
... LIMIT or GROUP BY).  It is cross-checked, for every query, against an independent
evaluation of the ``min.<col>``/``max.<col>`` statistics of ``get_add_actions(flatten=True)``.
*Bytes* are the ``size_bytes`` of those files.  Every query's files are measured; queries run
(with the same budget) go through delta-rs's DataFusion engine (``QueryBuilder`` SQL) and are
checked against the same expected answers (the same ids, the same Top-10, the same
aggregates).  DataFusion may prune row groups inside the files it opens; that is not visible
from Python and not counted.

``optimize`` throughput: input rows per second of ``optimize`` for linear, Z-order and Hilbert
against a plain pyarrow rewrite of the same files: ``pq.read_table`` of every file of the
unorganized table, ``pa.Table.sort_by([a, b])``, ``pq.write_table`` of the same number of
files (pyarrow defaults).
"""
from __future__ import annotations

import gc
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
from rich.console import Group
from rich.markup import escape
from rich.text import Text

from mergetree import Table
from mergetree.cli import render

from . import timing
from .data import LAYOUT_SCHEMA, LayoutData, file_slices, make_layout_data
from .queries import (
    DEFAULT_BUDGET,
    DEFAULT_FILES,
    DEFAULT_QUERIES,
    DEFAULT_ROWS,
    MODEL,
    QUICK_BUDGET,
    W_90_10,
    W_A_AB,
    W_A_B,
    W_GROUP,
    W_POINT,
    W_TOP,
    WORKLOADS,
    MergetreeRunner,
    Query,
    check_answer,
    make_queries,
    quick_sizes,
    sidecar_bytes,
)
from .report import installed_version, json_ready, rate_text, show

__all__ = [
    "CellResult",
    "LayoutInfo",
    "LayoutReport",
    "Target",
    "check_targets",
    "context_lines",
    "format_layout_results",
    "layout_json",
    "plot_layout_results",
    "run_layout_bench",
    "run_mergetree_cell",
]

DEFAULT_MIN_RUN = 5     # queries run per (layout, workload) whatever the budget
QUICK_MIN_RUN = 3
BLOOM_FPP = "0.01"
MODEL_MEASURES = {"amount": "sum", "qty": "sum", "*": "count"}

UNORGANIZED = "unorganized"
LINEAR = "linear(a,b)"
ZORDER = "zorder(a,b)"
HILBERT = "hilbert(a,b)"
INDEXED = "hilbert+indexes"
BY_TS = "linear(ts)"
DELTA = "delta-rs zorder(a,b)"
MERGETREE_LAYOUTS = (UNORGANIZED, LINEAR, ZORDER, HILBERT, INDEXED, BY_TS)

DECIDED_WHILE_RUNNING = (W_TOP, W_GROUP)  # only the queries run are measured

TARGETS = {  # the targets
    "hilbert_50_50_files": 0.20,        # Hilbert, 50/50 a|b: at most this fraction of the files
    "best_layout_bytes": 0.50,          # each workload's best layout: at most this fraction of unorganized bytes
    "bloom_point_files": 0.02,          # point lookups with a Bloom filter: at most this fraction of the files
    "top_10_files": 0.05,               # Top-10: at most this fraction of the files
    "preaggregate_speedup": 10.0,       # pre-aggregated GROUP BY: at least this many times the raw scan's speed
    "optimize_vs_pyarrow": 0.70,        # optimize: at least this fraction of pyarrow read+sort+rewrite rows/s
}


# ---------------------------------------------------------------- results


@dataclass
class LayoutInfo:
    name: str
    how: str
    files: int = 0
    bytes: int = 0
    seconds: float = float("nan")  # what building it took (write, optimize, index build, z_order)
    depth: dict = field(default_factory=dict)  # column -> average number of files whose range holds a value
    check: str = "ok"
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return json_ready(asdict(self))


@dataclass
class CellResult:
    layout: str
    workload: str
    queries: int                 # generated
    files_total: int = 0
    bytes_total: int = 0
    measured: int = 0            # queries whose files and bytes are known (run or planned)
    run: int = 0                 # queries run: timed, answers checked
    files_scanned: int = 0       # over the measured queries
    bytes_scanned: int = 0
    seconds: float = 0.0         # over the queries run
    preaggregated: int = 0       # files answered from pre-aggregates, over the queries run
    check: str = "ok"            # "ok", "unavailable: ...", "failed: ...", "wrong: ..."
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.check == "ok"

    @property
    def files_per_query(self) -> float:
        return self.files_scanned / self.measured if self.measured else float("nan")

    @property
    def file_fraction(self) -> float:
        return self.files_per_query / self.files_total if self.files_total else float("nan")

    @property
    def bytes_per_query(self) -> float:
        return self.bytes_scanned / self.measured if self.measured else float("nan")

    @property
    def byte_fraction(self) -> float:
        return self.bytes_per_query / self.bytes_total if self.bytes_total else float("nan")

    @property
    def seconds_per_query(self) -> float:
        return self.seconds / self.run if self.run else float("nan")

    def to_dict(self) -> dict:
        out = {**asdict(self), "files_per_query": self.files_per_query, "file_fraction": self.file_fraction,
               "bytes_per_query": self.bytes_per_query, "byte_fraction": self.byte_fraction,
               "seconds_per_query": self.seconds_per_query}
        return json_ready(out)


@dataclass
class OptimizeResult:
    name: str           # "linear", "zorder", "hilbert", "ts", or the pyarrow baseline
    rows: int
    seconds: float
    files_in: int = 0
    files_out: int = 0

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("nan")

    def to_dict(self) -> dict:
        return json_ready({**asdict(self), "rows_per_second": self.rows_per_second})


PYARROW_BASELINE = "pyarrow read+sort+rewrite"


@dataclass
class LayoutReport:
    sizes: dict
    layouts: list[LayoutInfo]
    cells: list[CellResult]
    optimize: list[OptimizeResult]
    versions: dict
    seconds: float = float("nan")
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No wrong answer and nothing failed (a peer that is not installed is no failure)."""
        return all(c.ok or c.check.startswith("unavailable") for c in self.cells) and \
            all(i.check == "ok" or i.check.startswith("unavailable") for i in self.layouts)


# ---------------------------------------------------------------- building the layouts


def _depth(ranges: list[tuple]) -> float:
    """The average number of files whose [min, max] holds a value, over every file's min and
    max (the measure `Table.info()` reports as column clustering)."""
    import bisect

    ranges = [(lo, hi) for lo, hi in ranges if lo is not None and hi is not None]
    if not ranges:
        return float("nan")
    lows = sorted(lo for lo, _ in ranges)
    highs = sorted(hi for _, hi in ranges)
    points = [v for r in ranges for v in r]
    return sum(bisect.bisect_right(lows, p) - bisect.bisect_left(highs, p) for p in points) / len(points)


DEPTH_COLUMNS = ("a", "b", "ts")


def _describe(table: Table, info: LayoutInfo) -> None:
    files = table.plan().files
    table_info = table.info()
    info.files, info.bytes = table_info.files, table_info.bytes
    info.depth = {c: _depth([(m.stats[c][0], m.stats[c][1]) for m in files if c in m.stats]) for c in DEPTH_COLUMNS}


class _Layouts:
    """Builds every table of the workload under ``root``."""

    def __init__(self, data: LayoutData, root: str) -> None:
        self.data, self.root = data, root
        self.tables: dict[str, Table] = {}
        self.infos: dict[str, LayoutInfo] = {}
        self.optimize: list[OptimizeResult] = []
        self.delta = None           # DeltaTable after z_order
        self.delta_version = None
        self.target_file_size = math.ceil(data.table.nbytes / data.files)

    def path(self, name: str) -> str:
        return os.path.join(self.root, name.replace("(", "-").replace(")", "").replace(",", "-").replace("+", "-"))

    def unorganized(self) -> None:
        info = LayoutInfo(UNORGANIZED, f"{self.data.files} writes of {self.data.rows // self.data.files:,} random rows")
        self.infos[UNORGANIZED] = info
        # a write rolls files at target-file-size: a little above one write's size keeps each write one file
        table = Table.create(self.path(UNORGANIZED), LAYOUT_SCHEMA,
                             options={"target-file-size": str(int(self.target_file_size * 1.05))})

        def write_all():
            for part in file_slices(self.data):
                table.write(part)

        info.seconds = timing.timed(write_all).seconds
        self.tables[UNORGANIZED] = table
        _describe(table, info)
        if info.files != self.data.files:
            info.notes.append(f"{info.files} files, not {self.data.files}")

    def baseline(self) -> None:
        """pq.read_table of every file, sort_by(a, b), pq.write_table into as many files."""
        import pyarrow.parquet as pq

        table = self.tables[UNORGANIZED]
        files = [os.path.join(table.path, m.file_name) for m in table.plan().files]
        target = os.path.join(self.root, "pyarrow-rewrite")

        def rewrite():
            shutil.rmtree(target, ignore_errors=True)
            os.makedirs(target)
            rows = pa.concat_tables([pq.read_table(f) for f in files]).sort_by([("a", "ascending"),
                                                                               ("b", "ascending")])
            per = -(-rows.num_rows // len(files))
            for i in range(len(files)):
                pq.write_table(rows.slice(i * per, per), os.path.join(target, f"{i}.parquet"))

        seconds = timing.timed(rewrite).seconds
        shutil.rmtree(target, ignore_errors=True)
        self.optimize.append(OptimizeResult(PYARROW_BASELINE, self.data.rows, seconds, len(files), len(files)))

    def clustered(self, name: str, order: list[str], strategy: str) -> None:
        info = LayoutInfo(name, f'optimize(order={order}, strategy="{strategy}")')
        self.infos[name] = info
        shutil.copytree(self.path(UNORGANIZED), self.path(name))
        table = Table.open(self.path(name))
        files_in = len(table.plan().files)
        info.seconds = timing.timed(lambda: table.optimize(order=order, strategy=strategy,
                                                           target_file_size=self.target_file_size)).seconds
        self.tables[name] = table
        _describe(table, info)
        self.optimize.append(OptimizeResult(strategy if name != BY_TS else "linear(ts)", self.data.rows,
                                            info.seconds, files_in, info.files))

    def indexed(self) -> None:
        info = LayoutInfo(INDEXED, f"{HILBERT} + build_indexes(): Bloom on id (fpp {BLOOM_FPP}), bitmap on "
                                   f"category, pre-aggregate {MODEL} (category: amount sum, qty sum, count)")
        self.infos[INDEXED] = info
        shutil.copytree(self.path(HILBERT), self.path(INDEXED))
        table = Table.open(self.path(INDEXED))

        def build():
            table.set_options({"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "category",
                               "file-index.bloom-filter.fpp": BLOOM_FPP})
            table.add_aggregate(MODEL, group_by=["category"], measures=MODEL_MEASURES, build=False)
            table.build_indexes()

        info.seconds = timing.timed(build).seconds
        self.tables[INDEXED] = table
        _describe(table, info)
        coverage = table.info().index_coverage
        info.notes.append("index coverage: " + ", ".join(f"{k} {have}/{want}" for k, (have, want) in coverage.items()))

    def delta_table(self) -> None:
        info = LayoutInfo(DELTA, f"deltalake: {self.data.files} appends, then optimize.z_order(['a', 'b'])")
        self.infos[DELTA] = info
        try:
            import deltalake
            from deltalake import DeltaTable, write_deltalake
        except ImportError:
            info.check = "unavailable: deltalake is not installed (pip install deltalake)"
            return
        self.delta_version = deltalake.__version__
        path = self.path(DELTA)
        started = time.perf_counter()
        for part in file_slices(self.data):
            write_deltalake(path, part, mode="append")
        written = time.perf_counter() - started
        table = DeltaTable(path)
        before = _delta_actions(table)
        size = int(sum(before.column("size_bytes").to_pylist()) / max(before.num_rows, 1))
        timed = timing.timed(lambda: table.optimize.z_order(["a", "b"], target_size=size))
        info.seconds = timed.seconds
        self.delta = DeltaTable(path)
        actions = _delta_actions(self.delta)
        info.files = actions.num_rows
        info.bytes = int(sum(actions.column("size_bytes").to_pylist()))
        info.depth = {c: _depth(list(zip(actions.column(f"min.{c}").to_pylist(),
                                         actions.column(f"max.{c}").to_pylist()))) for c in DEPTH_COLUMNS}
        metrics = timed.output or {}
        info.notes.append(f"{before.num_rows} files written in {written:.1f}s; z_order(target_size={size:,} bytes) "
                          f"removed {metrics.get('numFilesRemoved', '?')} and added "
                          f"{metrics.get('numFilesAdded', '?')} files in {info.seconds:.1f}s "
                          f"({self.data.rows / info.seconds / 1e6:.2f}M rows/s)")
        if info.files != self.data.files:
            info.notes.append(f"z_order rewrote the table into {info.files} files, not {self.data.files}: "
                              f"its % of files are of its own {info.files}")


def _delta_actions(table) -> pa.Table:
    return pa.table(table.get_add_actions(flatten=True))


# ---------------------------------------------------------------- running the queries


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic collector off for a stretch of many timed queries (as ``timing.timed``
    does for one, with the same collection of the young generations first), so no query pays
    for a collection the previous ones' garbage triggered."""
    gc.collect(1)
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def run_mergetree_cell(cell: CellResult, table: Table, data: LayoutData, queries: list[Query], budget: float,
                        min_run: int, advance: Callable[[int], None]) -> None:
    runner = MergetreeRunner(table, data, sidecar_bytes(table, MODEL))
    first = table.plan()
    cell.files_total, cell.bytes_total = first.files_total, first.bytes_total
    plannable = cell.workload not in DECIDED_WHILE_RUNNING
    mismatches = []
    started = time.perf_counter()
    with _gc_paused():
        for index, query in enumerate(queries):
            if index < min_run or time.perf_counter() - started < budget:
                timed = timing.timed(runner.run, query, pause_gc=False)
                out, files, size, preaggregated = timed.output
                cell.run += 1
                cell.seconds += timed.seconds
                cell.preaggregated += preaggregated
                check = check_answer(data, query, out)
                if check != "ok" and cell.ok:
                    cell.check = f"{check} (query {index}: {query.kind} {query.filter})"
                if plannable:
                    planned = runner.plan(query)
                    if planned != (files, size):
                        mismatches.append(index)
            elif plannable:
                files, size = runner.plan(query)
            else:
                advance(len(queries) - index)
                break
            cell.measured += 1
            cell.files_scanned += files
            cell.bytes_scanned += size
            advance(1)
    if mismatches:
        cell.notes.append(f"Table.plan disagreed with the read on {len(mismatches)} of the {cell.run} queries run "
                          f"(first: query {mismatches[0]})")
    if cell.preaggregated:
        cell.notes.append(f"{cell.preaggregated / cell.run:.0f} files per query answered from pre-aggregate "
                          f"sidecars ({sum(runner.sidecar_bytes.values()) / 2**10:.0f} KiB in all), counted in bytes")


def _delta_stats(actions: pa.Table) -> dict:
    stats = {}
    for column in ("id", "a", "b", "category"):
        lows = actions.column(f"min.{column}").to_numpy(zero_copy_only=False)
        highs = actions.column(f"max.{column}").to_numpy(zero_copy_only=False)
        stats[column] = (lows, highs)
    return stats


def _stats_may_match(query: Query, stats: dict, files: int) -> np.ndarray:
    """Which files the min/max statistics cannot rule out (an independent check of delta-rs's
    file listing)."""
    keep = np.ones(files, dtype=bool)
    for column, op, value in query.filter or []:
        lows, highs = stats[column]
        if op == ">=":
            keep &= highs >= value
        elif op == "<":
            keep &= lows < value
        elif op == "=":
            keep &= (lows <= value) & (highs >= value)
        elif op == "!=":
            keep &= ~((lows == value) & (highs == value))
        elif op == "in":
            keep &= np.array([any(lo <= v <= hi for v in value) for lo, hi in zip(lows, highs)], dtype=bool)
    return keep


def _run_delta_cell(cell: CellResult, delta, data: LayoutData, queries: list[Query], budget: float, min_run: int,
                    advance: Callable[[int], None]) -> None:
    from deltalake import QueryBuilder

    actions = _delta_actions(delta)
    sizes = dict(zip((os.path.basename(p) for p in actions.column("path").to_pylist()),
                     actions.column("size_bytes").to_pylist()))
    stats = _delta_stats(actions)
    cell.files_total, cell.bytes_total = actions.num_rows, int(sum(sizes.values()))
    engine = QueryBuilder().register("t", delta)
    disagreements = 0
    started = time.perf_counter()
    with _gc_paused():
        for index, query in enumerate(queries):
            uris = delta.file_uris(file_pruning_predicate=query.where) if query.where else delta.file_uris()
            if len(uris) != int(_stats_may_match(query, stats, actions.num_rows).sum()):
                disagreements += 1
            cell.measured += 1
            cell.files_scanned += len(uris)
            cell.bytes_scanned += sum(sizes[os.path.basename(u)] for u in uris)
            if index < min_run or time.perf_counter() - started < budget:
                sql = query.sql()
                timed = timing.timed(lambda sql=sql: engine.execute(sql).read_all(), pause_gc=False)
                cell.run += 1
                cell.seconds += timed.seconds
                check = check_answer(data, query, pa.table(timed.output), ids_only=query.kind != "group")
                if check != "ok" and cell.ok:
                    cell.check = f"{check} (query {index}: {sql})"
            advance(1)
    if disagreements:
        cell.notes.append(f"file_uris(file_pruning_predicate) and the add actions' min/max statistics disagreed on "
                          f"{disagreements} of {len(queries)} queries")


# ---------------------------------------------------------------- the whole workload


def run_layout_bench(rows: int = DEFAULT_ROWS, files: int = DEFAULT_FILES, queries: int = DEFAULT_QUERIES,
                     quick: bool = False, budget: float | None = None, min_run: int | None = None,
                     delta: bool = True, directory: str | None = None, progress: bool | None = None,
                     stream=sys.stderr) -> LayoutReport:
    """Build every layout and run every workload on it (see the module docstring).

    ``quick`` divides rows and queries by 10.  ``budget`` (seconds) and ``min_run`` bound the
    queries run per (layout, workload); ``budget=float("inf")`` runs them all.  The tables are
    written under ``directory`` (kept) or a temporary directory (removed)."""
    started = time.perf_counter()
    if quick:
        rows, queries = quick_sizes(rows, queries)
    budget = (QUICK_BUDGET if quick else DEFAULT_BUDGET) if budget is None else budget
    min_run = (QUICK_MIN_RUN if quick else DEFAULT_MIN_RUN) if min_run is None else min_run
    root = directory or tempfile.mkdtemp(prefix="mergetree-bench-layout-")
    if directory:
        os.makedirs(root, exist_ok=True)
    cells: list[CellResult] = []
    notes: list[str] = []
    try:
        data = make_layout_data(rows, files)
        layouts = _Layouts(data, root)
        builds: list[tuple[str, Callable[[], None]]] = [
            (UNORGANIZED, layouts.unorganized),
            (PYARROW_BASELINE, layouts.baseline),
            (LINEAR, lambda: layouts.clustered(LINEAR, ["a", "b"], "linear")),
            (ZORDER, lambda: layouts.clustered(ZORDER, ["a", "b"], "zorder")),
            (HILBERT, lambda: layouts.clustered(HILBERT, ["a", "b"], "hilbert")),
            (INDEXED, layouts.indexed),
            (BY_TS, lambda: layouts.clustered(BY_TS, ["ts"], "linear")),
        ]
        if delta:
            builds.append((DELTA, layouts.delta_table))
        with timing.progress_bar("layout bench: build", "steps", len(builds) + 1, progress, stream) as advance:
            data.top_order()  # the expected Top-10 answers' sort, once
            advance(1)
            for name, build in builds:
                try:
                    build()
                except Exception as error:  # reported in the table; the other layouts still run
                    if name == PYARROW_BASELINE:
                        notes.append(f"{PYARROW_BASELINE} failed: {type(error).__name__}: {error}")
                    else:
                        info = layouts.infos.setdefault(name, LayoutInfo(name, ""))
                        info.check = f"failed: {type(error).__name__}: {error}"
                advance(1)
        names = [n for n in MERGETREE_LAYOUTS if n in layouts.tables] + ([DELTA] if delta else [])
        workload_queries = {w: make_queries(data, w, queries) for w in WORKLOADS}
        total = len(names) * len(WORKLOADS) * queries
        with timing.progress_bar("layout bench: queries", "queries", total, progress, stream) as advance:
            for name in names:
                for workload in WORKLOADS:
                    cell = CellResult(name, workload, queries)
                    cells.append(cell)
                    try:
                        if name == DELTA:
                            if layouts.delta is None:
                                cell.check = layouts.infos[DELTA].check if DELTA in layouts.infos else "failed"
                                advance(queries)
                                continue
                            _run_delta_cell(cell, layouts.delta, data, workload_queries[workload], budget, min_run,
                                            advance)
                        else:
                            run_mergetree_cell(cell, layouts.tables[name], data, workload_queries[workload],
                                                budget, min_run, advance)
                    except Exception as error:  # a failing cell is reported, not fatal
                        cell.check = f"failed: {type(error).__name__}: {error}"
        infos = [layouts.infos[n] for n in (*MERGETREE_LAYOUTS, DELTA) if n in layouts.infos]
        versions = {"pyarrow": pa.__version__, "deltalake": layouts.delta_version or installed_version("deltalake")}
        sizes = {"rows": rows, "files": files, "queries": queries, "budget_seconds": budget, "min_run": min_run,
                 "target_file_size": layouts.target_file_size}
        return LayoutReport(sizes, infos, cells, layouts.optimize, versions, time.perf_counter() - started, notes)
    finally:
        if not directory:
            shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------- targets


@dataclass
class Target:
    text: str            # what was measured, with the value
    goal: str            # e.g. "<= 20%"
    met: bool | None     # None: not measured

    @property
    def line(self) -> str:
        if self.met is None:
            return f"{self.text} (target {self.goal}: MISSED, not measured)"
        return f"{self.text} (target {self.goal}: {'met' if self.met else 'MISSED'})"


def _cell(cells: list[CellResult], layout: str, workload: str) -> CellResult | None:
    for c in cells:
        if c.layout == layout and c.workload == workload and c.ok and c.measured:
            return c
    return None


def _pct(x: float) -> str:
    return "?" if x != x else f"{x:.1%}"


def _share(x: float) -> str:
    """A percentage that shows a difference of one file in many queries (0.0005%)."""
    if x != x:
        return "?"
    return f"{x:.4%}" if 0 < x < 0.001 or 0.999 < x < 1 else f"{x:.1%}"


def check_targets(report: LayoutReport) -> list[Target]:
    cells = report.cells
    out = []
    hilbert = _cell(cells, HILBERT, W_A_B)
    goal = TARGETS["hilbert_50_50_files"]
    out.append(Target(f"{HILBERT} on {W_A_B}: {_pct(hilbert.file_fraction) if hilbert else '?'} of the files per query",
                      f"<= {goal:.0%}", None if hilbert is None else hilbert.file_fraction <= goal))
    goal = TARGETS["best_layout_bytes"]
    for workload in WORKLOADS:
        base = _cell(cells, UNORGANIZED, workload)
        candidates = [c for n in MERGETREE_LAYOUTS if (c := _cell(cells, n, workload)) is not None]
        best = min(candidates, key=lambda c: c.bytes_per_query, default=None)
        if base is None or best is None or not base.bytes_per_query > 0:
            out.append(Target(f"{workload}: best layout's bytes vs unorganized", f"<= {goal:.0%}", None))
            continue
        ratio = best.bytes_per_query / base.bytes_per_query
        out.append(Target(f"{workload}: best layout {best.layout} reads {_pct(ratio)} of the unorganized table's "
                          f"bytes ({best.bytes_per_query / 2**20:.1f} vs {base.bytes_per_query / 2**20:.1f} MiB "
                          f"per query)", f"<= {goal:.0%}", ratio <= goal))
    bloom = _cell(cells, INDEXED, W_POINT)
    goal = TARGETS["bloom_point_files"]
    out.append(Target(f"{W_POINT} with a Bloom filter ({INDEXED}): "
                      f"{_pct(bloom.file_fraction) if bloom else '?'} of the files per query", f"<= {goal:.0%}",
                      None if bloom is None else bloom.file_fraction <= goal))
    goal = TARGETS["top_10_files"]
    tops = [c for n in MERGETREE_LAYOUTS if (c := _cell(cells, n, W_TOP)) is not None]
    best = min(tops, key=lambda c: c.file_fraction, default=None)
    out.append(Target(f"{W_TOP}: best layout {best.layout if best else '?'} reads "
                      f"{_pct(best.file_fraction) if best else '?'} of the files per query "
                      f"(unorganized: {_pct(c.file_fraction) if (c := _cell(cells, UNORGANIZED, W_TOP)) else '?'})",
                      f"<= {goal:.0%}", None if best is None else best.file_fraction <= goal))
    goal = TARGETS["preaggregate_speedup"]
    raw, pre = _cell(cells, HILBERT, W_GROUP), _cell(cells, INDEXED, W_GROUP)
    if raw is None or pre is None or not pre.run or not raw.run or not pre.preaggregated:
        out.append(Target("pre-aggregated GROUP BY vs the raw scan", f">= {goal:g}x", None))
    else:
        speedup = raw.seconds_per_query / pre.seconds_per_query
        out.append(Target(f"{W_GROUP}: pre-aggregated ({INDEXED}) {pre.seconds_per_query * 1e3:.0f} ms per query, "
                          f"raw scan of the same files ({HILBERT}) {raw.seconds_per_query * 1e3:.0f} ms: "
                          f"{speedup:.1f}x", f">= {goal:g}x", speedup >= goal))
    for workload in WORKLOADS:
        mine, theirs = _cell(cells, HILBERT, workload), _cell(cells, DELTA, workload)
        if mine is None or theirs is None:
            why = "" if theirs is not None else " (delta-rs not measured)"
            out.append(Target(f"{workload}: files skipped, {HILBERT} vs {DELTA}{why}", ">= delta-rs", None))
            continue
        skip_mine, skip_theirs = 1 - mine.file_fraction, 1 - theirs.file_fraction
        out.append(Target(f"{workload}: {HILBERT} skips {_share(skip_mine)} of its files "
                          f"({mine.files_total - mine.files_per_query:.3f} of {mine.files_total} per query), {DELTA} "
                          f"{_share(skip_theirs)} of its ({theirs.files_total - theirs.files_per_query:.3f} of "
                          f"{theirs.files_total})", ">= delta-rs", skip_mine >= skip_theirs - 1e-12))
    goal = TARGETS["optimize_vs_pyarrow"]
    baseline = next((o for o in report.optimize if o.name == PYARROW_BASELINE), None)
    for strategy in ("linear", "zorder", "hilbert"):
        mine_opt = next((o for o in report.optimize if o.name == strategy), None)
        if baseline is None or mine_opt is None:
            out.append(Target(f"optimize({strategy}) vs {PYARROW_BASELINE}", f">= {goal:.0%}", None))
            continue
        ratio = mine_opt.rows_per_second / baseline.rows_per_second
        out.append(Target(f"optimize(order=[a, b], strategy={strategy}): {_rate(mine_opt.rows_per_second)}, "
                          f"{_pct(ratio)} of {PYARROW_BASELINE} ({_rate(baseline.rows_per_second)})",
                          f">= {goal:.0%}", ratio >= goal))
    return out


# ---------------------------------------------------------------- reporting


def context_lines(report: LayoutReport) -> list[str]:
    """Numbers beside the targets that explain them (no target of their own)."""
    cells = report.cells
    lines = []
    bloom, theirs = _cell(cells, INDEXED, W_POINT), _cell(cells, DELTA, W_POINT)
    if bloom is not None:
        lines.append(f"{W_POINT}: with its Bloom filter, {INDEXED} skips {_share(1 - bloom.file_fraction)} of its "
                     f"files" + (f"; {DELTA} skips by min/max statistics only ({_share(1 - theirs.file_fraction)})"
                                 if theirs is not None else ""))
    for workload in (W_90_10, W_A_AB, W_A_B, W_TOP):
        plain, indexed = _cell(cells, HILBERT, workload), _cell(cells, INDEXED, workload)
        if plain is not None and indexed is not None and plain.run and indexed.run:
            lines.append(f"{workload}: the same files with and without indexes ({HILBERT} "
                         f"{plain.seconds_per_query * 1e3:.0f} ms, {INDEXED} {indexed.seconds_per_query * 1e3:.0f} ms "
                         f"per query)")
    return lines


def _rate(rows_per_second: float) -> str:
    return rate_text(rows_per_second, " rows")


def _cell_rows(cells: list[CellResult]) -> list:
    rows = [("layout", "workload", "queries run", "measured", "files/query", "% files", "MiB/query", "% bytes",
             "ms/query", "answers")]
    for c in cells:
        usable = c.ok and c.measured
        rows.append((c.layout, c.workload, f"{c.run:,}" if usable else "-", f"{c.measured:,}" if usable else "-",
                     f"{c.files_per_query:.1f} of {c.files_total}" if usable else "-",
                     _pct(c.file_fraction) if usable else "-",
                     f"{c.bytes_per_query / 2**20:.1f}" if usable else "-",
                     _pct(c.byte_fraction) if usable else "-",
                     f"{c.seconds_per_query * 1e3:.1f}" if usable and c.run else "-",
                     f"ok ({c.run:,} checked)" if c.ok else escape(c.check)))
    return rows


def _layout_rows(infos: list[LayoutInfo]) -> list:
    rows = [("layout", "files", "MiB", "depth a", "depth b", "depth ts", "build s", "how")]
    for i in infos:
        ok = i.check == "ok"
        depth = [f"{i.depth.get(c, float('nan')):.1f}" if ok and i.depth else "-" for c in DEPTH_COLUMNS]
        rows.append((i.name, f"{i.files:,}" if ok else "-", f"{i.bytes / 2**20:.0f}" if ok else "-", *depth,
                     f"{i.seconds:.1f}" if ok and i.seconds == i.seconds else "-",
                     i.how if ok else escape(i.check)))
    return rows


def _optimize_rows(results: list[OptimizeResult]) -> list:
    rows = [("rewrite", "rows", "files in -> out", "seconds", "rows/s")]
    for o in results:
        rows.append((o.name if o.name == PYARROW_BASELINE else f"optimize {o.name}", f"{o.rows:,}",
                     f"{o.files_in} -> {o.files_out}", f"{o.seconds:.2f}", _rate(o.rows_per_second)))
    return rows


def format_layout_results(report: LayoutReport) -> Group:
    """The layouts, every (layout, workload) result, the optimize throughput and the targets
    (print with ``report.show``)."""
    sizes = report.sizes
    notes = [f"{c.layout} / {c.workload}: {n}" for c in report.cells for n in c.notes]
    notes += [f"{i.name}: {n}" for i in report.layouts for n in i.notes] + report.notes
    explain = [
        f"queries run: timed and checked, in generated order for {sizes['budget_seconds']:g}s per (layout, workload), "
        f"at least {sizes['min_run']}; measured: queries whose files and bytes are known (the rest planned with "
        f"Table.plan, except {W_TOP} and {W_GROUP}, which the read decides); files, MiB and % are means per measured "
        f"query, ms per query run",
        "depth: average number of files whose [min, max] holds a value of the column (1 = perfectly tight)",
        f"{DELTA}: files = len(DeltaTable.file_uris(file_pruning_predicate=WHERE)), delta-rs's min/max data "
        f"skipping, cross-checked on the add actions' statistics; queries run through DataFusion (QueryBuilder)",
    ]
    targets = check_targets(report)
    parts: list = [render.text_table(_layout_rows(report.layouts), right_aligned={1, 2, 3, 4, 5, 6}), Text(),
                   render.text_table(_cell_rows(report.cells), right_aligned={2, 3, 4, 5, 6, 7, 8}), Text(),
                   render.text_table(_optimize_rows(report.optimize), right_aligned={1, 3, 4}), Text()]
    parts += [Text(line) for line in explain] + [Text(), Text("targets:")]
    parts += [Text(f"  {t.line}") for t in targets]
    parts += [Text(), Text("beside the targets:")] + [Text(f"  {line}") for line in context_lines(report)]
    if notes:
        parts += [Text(), Text("notes:")] + [Text(f"  {n}") for n in notes]
    return Group(*parts)


def layout_json(report: LayoutReport) -> dict:
    return {"sizes": report.sizes, "versions": report.versions, "seconds": report.seconds,
            "layouts": [i.to_dict() for i in report.layouts], "results": [c.to_dict() for c in report.cells],
            "optimize": [o.to_dict() for o in report.optimize],
            "targets": [{"text": t.text, "goal": t.goal, "met": t.met} for t in check_targets(report)],
            "target_values": dict(TARGETS)}


def plot_layout_results(report: LayoutReport, path: str, title: str = "") -> None:
    """Grouped bars: % of files scanned per query, per workload and layout."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layouts = [i.name for i in report.layouts]
    figure, axis = plt.subplots(figsize=(13, 4.8))
    width = 0.8 / max(len(layouts), 1)
    x = np.arange(len(WORKLOADS))
    colors = plt.get_cmap("tab10")
    for k, layout in enumerate(layouts):
        values = []
        for workload in WORKLOADS:
            c = _cell(report.cells, layout, workload)
            values.append(100 * c.file_fraction if c is not None else 0.0)
        axis.bar(x + (k - (len(layouts) - 1) / 2) * width, values, width, label=layout,
                 color="tab:gray" if layout == DELTA else colors(k))
    axis.set_xticks(x, WORKLOADS, fontsize=9)
    axis.set_ylabel("% of the files scanned per query (lower is better)")
    axis.set_ylim(0, 122)  # room for the legend above the 100% bars
    axis.set_yticks(range(0, 101, 20))
    axis.grid(axis="y", alpha=0.3)
    axis.legend(fontsize=8, ncol=len(layouts), loc="upper center")
    if title:
        axis.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=130)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_layout``: the layout workload alone, with its own sizes."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_layout",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--files", type=int, default=DEFAULT_FILES)
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES, help="queries per workload")
    parser.add_argument("--quick", action="store_true", help="divide rows and queries by 10")
    parser.add_argument("--budget", type=float, help="seconds of queries run per (layout, workload); "
                        "'inf' runs them all (default: 5, 0.4 with --quick)")
    parser.add_argument("--min-run", type=int, help="queries run per (layout, workload) at least")
    parser.add_argument("--no-delta", action="store_true", help="leave delta-rs out")
    parser.add_argument("--dir", help="write the tables here and keep them")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--plot", metavar="FILE.png")
    args = parser.parse_args(argv)
    report = run_layout_bench(args.rows, args.files, args.queries, args.quick, args.budget, args.min_run,
                              not args.no_delta, args.dir)
    show(format_layout_results(report))
    print(f"layout workload took {report.seconds:.0f}s")
    if args.json:
        import json

        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(layout_json(report), handle, indent=2, default=str)
            handle.write("\n")
    if args.plot:
        plot_layout_results(report, args.plot)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
