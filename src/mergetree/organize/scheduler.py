"""Tiered background optimization (seed 003's snapshot-based scheduling and optimization service).

A table's files carry what they were written for: as written, merged by a *minor* pass, or
laid out by a *major* pass for the table's current layout (clustering, in-file sort; indexes
and pre-aggregates are built with every file).  Only data not yet optimized is touched:

* **minor**: in a (partition, bucket) with at least `optimize.minor-min-files` small files
  (below the small-file ratio of the target size) that no major pass laid out, those files are
  merged into files of the target size, so fresh data is soon cheap to read;
* **major**: once a (partition, bucket)'s data not yet laid out for the current layout reaches
  `optimize.major-threshold` bytes (default 2 GB), exactly that data is rewritten by the layout.

The unit of work is a **task** (`Task`): one table, one tier, one partition's pending (partition,
bucket) groups — one rewrite, one commit, one line in the optimizer history.  The seed's
optimization service, as written rules (`table_tasks`, `task_reads`, `layout_gain`,
`order_tasks`, `next_task`: pure, no I/O, tested exactly in `tests/test_scheduler_tasks.py`;
`plan_tasks` gathers their inputs from the table and its query log, `run_tasks` runs them):

  T1  *Merging*: all pending groups of one partition and tier are one task, packed bucket by
      bucket (ascending) while the task stays within `max_task_bytes` (default 4 GiB, twice the
      default major threshold); the group that would cross it starts the next task of that
      partition.  A group is never split (a major pass lays out a bucket's waiting data as one),
      so a group larger than the cap is a task of its own.
  T2  *Benefit*: what the workload reads where the task writes.  `reads` = the bytes the logged
      queries of the window (`since`, default the last day; the newest BENEFIT_QUERIES of them,
      scaled up to all of the window's) scan in the task's input files, each query's files as the
      table's planner picks them now for its logged filter (and Top-N order); a query whose
      filter was not kept counts as reading every file (as the advisor counts it).  `gain` = for
      a major task, the share of files the advisor measured the table's own configuration to
      save (`layout_gain`: the best `1 - files_after / files_before` of the levers whose
      recommendation is what the table already has), else 0.
      `benefit = reads * (1 + gain)`: the bytes the queries read there, plus what the advisor
      expects the pass to save of them.  Pending data nobody reads has benefit 0.
  T3  *Order*: benefit, highest first; ties (among them every unread task) by table path, major
      before minor, partition, first bucket.  The tasks of all the daemon's tables are ordered
      together.
  T4  *Limits*: at most `max_tasks` tasks at once (default 2: the machines here have 2 cores,
      and each rewrite holds a bucket group's rows in memory), at most `max_tasks_per_table` on
      one table (default 1, as the seed limits a table's concurrent commits; a table's own
      `optimize.max-concurrent-tasks` replaces it for that table).  `next_task` starts the first
      task in order that the limits allow, so a table at its limit does not hold the others up.
  T5  *Primary-key tables*: their files stay sorted by key; their minor task is the LSM compaction
      and their major task gives files the indexes the options declare, each over the whole
      table (one task each, never split by T1), never beside another task of their table, and
      the index build never before the round's compaction of its table (it would index files the
      compaction then rewrites).

Each task is one atomic commit that replaces exactly its input files: a writer committing
meanwhile, or another task of the same table (their inputs are disjoint), is rebased over; a
task whose inputs another commit replaced aborts cleanly ("conflict") and is retried on the next
round.  A task leaves its outputs marked, so running again finds nothing to do (idempotent), and
a crash mid-task commits nothing (the next round redoes it; orphan cleanup removes the debris).
Every task is recorded in the table's optimizer history (an append table at
`<table>/optimizer/`), through `run_pass`.
"""
from __future__ import annotations

import datetime as dt
import functools
import logging
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import CompactionConflictError, InvalidArgumentError, MergeTreeError
from ..iceberg import IcebergTable, is_iceberg_location
from ..iceberg import open as open_iceberg
from ..iceberg.rewrite import Writer as IcebergWriter
from ..iceberg.rewrite import background_pending
from ..table import Table
from ..table.compaction.runner import plan_compaction
from ..table.directory import TableDirectory
from ..table.durations import parse_since, seconds
from ..table.files import DataFileMeta
from ..table.levers.optimize import missing_indexes, pending, rewrite_files
from ..table.options import OPTIONS
from ..table.paimon.tables import option_name
from ..table.snapshots import Snapshot
from ..table.workload.advise import Advice, read_log
from ..table.workload.history import PassReport, history, record_rewrite
from ..table.workload.retention import expire as expire_queries

__all__ = ["BENEFIT_QUERIES", "DEFAULT_MAX_TASKS", "DEFAULT_MAX_TASKS_PER_TABLE", "DEFAULT_MAX_TASK_BYTES",
           "DEFAULT_WINDOW", "KEY_MAX_CONCURRENT_TASKS", "PassReport", "Rewrite", "Task", "history",
           "interval_seconds", "layout_gain", "local_rewrite", "logged_reads", "next_task",
           "order_tasks", "pending", "plan_tasks", "run_daemon", "run_once", "run_pass", "run_tasks", "table_limit",
           "table_tasks", "task_limit", "task_reads"]

_log = logging.getLogger("mergetree.optimizer")

DEFAULT_MAX_TASKS = 2                    # tasks at once, all tables together
DEFAULT_MAX_TASKS_PER_TABLE = 1          # tasks at once on one table
DEFAULT_MAX_TASK_BYTES = 4 * 2**30       # T1's cap: twice the default major threshold
DEFAULT_WINDOW = dt.timedelta(days=1)    # the logged queries that weigh the tasks
BENEFIT_QUERIES = 1_000                  # the newest queries of the window planned per table and round
KEY_MAX_CONCURRENT_TASKS = "optimize.max-concurrent-tasks"
TIER_RANK = {"major": 0, "minor": 1}

# how a pass rewrites the pending files of its (partition, bucket)s: on this machine
# (`local_rewrite`) or as a Spark job (`mergetree.spark.optimize_pending`)
Progress = Callable[[int, int], None]
Rewrite = Callable[[TableDirectory, dict[tuple, list[DataFileMeta]], str, Progress | None], Snapshot | None]


def local_rewrite(directory: TableDirectory, groups: dict[tuple, list[DataFileMeta]], tier: str,
                  progress: Progress | None) -> Snapshot | None:
    base = directory.latest_snapshot()
    assert base is not None  # pending work means the table has files
    return rewrite_files(directory, directory.options, base, groups, tier, progress)


def run_pass(table: Table, tier: str, work: Callable[[], Snapshot | None]) -> PassReport:
    """One pass of the optimizer, whatever runs it (the daemon, a Spark job) and whatever it
    does (a rewrite of pending files, a compaction, an index build): `work` commits at most
    once; the report is filled from that commit's own changes (files and bytes in and out, the
    layout written) and recorded in the table's optimizer history."""
    started = time.perf_counter()
    try:
        snapshot = work()
    except CompactionConflictError:
        return PassReport(table.path, tier, "conflict")  # another commit replaced an input: the next round retries
    if snapshot is None:
        return PassReport(table.path, tier, "nothing")
    return record_rewrite(Table.open(table.path, check=False).directory, snapshot, tier, time.perf_counter() - started)


# ---------------------------------------------------------------------------
# Tasks: what to do, in which order, how many at once (pure)
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """One pass on one table: a tier's pending groups of one partition (T1), or a primary-key
    table's compaction or index build (`whole_table`, T5)."""

    table: str
    tier: str                                        # major | minor
    partition: tuple | None = None                   # None: a whole-table task
    groups: dict[tuple, list[DataFileMeta]] = field(default_factory=dict)   # (partition, bucket) -> inputs
    reads: float = 0.0                               # T2: bytes the window's queries read in the inputs
    gain: float = 0.0                                # T2: the advisor's measured share saved (major tasks)

    @property
    def whole_table(self) -> bool:
        return self.partition is None

    @property
    def bytes(self) -> int:
        return sum(m.file_size for files in self.groups.values() for m in files)

    @property
    def buckets(self) -> list[int]:
        return sorted(bucket for _, bucket in self.groups)

    @property
    def benefit(self) -> float:
        """T2: the bytes the queries read in the inputs, plus the share of them the advisor
        expects the pass to save."""
        return self.reads * (1.0 + self.gain)

    def describe(self) -> str:
        where = "whole table" if self.whole_table else f"partition {self.partition}, bucket(s) {self.buckets}"
        return f"{self.table} {self.tier} ({where}): benefit {self.benefit:,.0f}"


def table_tasks(table: str, tier: str, groups: Mapping[tuple, Sequence[DataFileMeta]],
                max_task_bytes: int) -> list[Task]:
    """T1: one tier's pending groups of one table as tasks: a partition's groups together,
    buckets ascending, a new task where the next group would take the task past
    `max_task_bytes` (a group alone may exceed it: groups are never split)."""
    by_partition: dict[tuple, list[tuple[int, list[DataFileMeta]]]] = defaultdict(list)
    for (partition, bucket), files in groups.items():
        if files:
            by_partition[partition].append((bucket, list(files)))
    out: list[Task] = []
    for partition in sorted(by_partition, key=str):
        current: dict[tuple, list[DataFileMeta]] = {}
        size = 0
        for bucket, files in sorted(by_partition[partition], key=lambda pair: pair[0]):
            n = sum(m.file_size for m in files)
            if current and size + n > max_task_bytes:
                out.append(Task(table, tier, partition, current))
                current, size = {}, 0
            current[(partition, bucket)] = files
            size += n
        if current:
            out.append(Task(table, tier, partition, current))
    return out


def task_reads(task: Task, reads: Mapping[str, float]) -> float:
    """T2: the bytes the window's queries read in the task's input files (`reads`: file name ->
    bytes read from it, `logged_reads`)."""
    return sum(reads.get(m.file_name, 0.0) for files in task.groups.values() for m in files)


def layout_gain(advice: Advice | None, tier: str) -> float:
    """T2: for a major task, the share of files the advisor measured the table's configuration
    to save: the best `1 - files_after / files_before` (clamped to 0..1) of the levers whose
    recommendation is what the table already has, so the pass writes what was measured; 0 for
    a minor task, without advice, or when the advice would change the configuration."""
    if advice is None or tier != "major":
        return 0.0
    gains = [1.0 - lever.files_after / lever.files_before for lever in advice.levers
             if lever.recommended and list(lever.recommended) == list(lever.current)
             and lever.files_before and lever.files_after is not None]
    return min(max(max(gains, default=0.0), 0.0), 1.0)


def order_tasks(tasks: Iterable[Task]) -> list[Task]:
    """T3: benefit, highest first; ties by table, major before minor, partition, first bucket."""
    def key(t: Task) -> tuple:
        return (-t.benefit, t.table, TIER_RANK.get(t.tier, len(TIER_RANK)), t.whole_table,
                str(t.partition), t.buckets[:1])
    return sorted(tasks, key=key)


def next_task(queue: Sequence[Task], running: Sequence[Task], max_tasks: int,
              per_table: Mapping[str, int]) -> Task | None:
    """T4/T5: the first task of `queue` (in order) that may start beside `running`: fewer than
    `max_tasks` running, fewer than its table's limit (`per_table`, default 1) on its table,
    no whole-table task beside another task of its table, and a primary-key table's index build
    not before its compaction (still queued or running)."""
    if len(running) >= max_tasks:
        return None
    for task in queue:
        mine = [r for r in running if r.table == task.table]
        if len(mine) >= per_table.get(task.table, 1):
            continue
        if mine and (task.whole_table or any(r.whole_table for r in mine)):
            continue
        if task.whole_table and task.tier == "major" and any(
                other.table == task.table and other.whole_table and other.tier == "minor"
                for other in [*queue, *running]):
            continue
        return task
    return None


def task_limit(value: Any, name: str) -> int:
    """A limit on tasks at once, checked: a positive integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be a positive integer, not {value!r}")
    return value


def _task_bytes(value: Any, name: str = "max_task_bytes") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be a positive number of bytes, not {value!r}")
    return value


# ---------------------------------------------------------------------------
# Planning a table's tasks (reads the table and its query log)
# ---------------------------------------------------------------------------

def logged_reads(table: Table | IcebergTable, since: Any = DEFAULT_WINDOW,
                 limit: int = BENEFIT_QUERIES) -> dict[str, float]:
    """T2: live file name -> bytes the logged queries newer than `since` read from it: the newest
    `limit` of them planned by the table's planner now (an Iceberg table's: pyiceberg's; a query
    whose filter was not kept reads every file), scaled up to all the window's queries."""
    queries = read_log(table.path, since)  # oldest first
    if not queries:
        return {}
    sample = queries[-limit:]
    scale = len(queries) / len(sample)
    planned: Callable[[Any], Iterable[str]]
    if isinstance(table, IcebergTable):
        sizes = {m.file_name: m.file_size for m in table.data_files()}

        def planned(q: Any) -> Iterable[str]:
            return [m.file_name for m in table.plan(q.filter)]
    else:
        snapshot = table.latest_snapshot()
        sizes = {e.file.file_name: e.file.file_size for e in table.directory.live_files(snapshot).values()} \
            if snapshot is not None else {}

        def planned(q: Any) -> Iterable[str]:
            plan = table.plan(q.filter, snapshot=snapshot.id if snapshot is not None else None,
                              order_by=list(q.order_by) or None, limit=q.limit if q.order_by else None)
            return [m.file_name for m in plan.files]
    reads: dict[str, float] = defaultdict(float)
    for q in sample:
        names: Iterable[str]
        try:
            if q.filter_json is None and any(c for c, _ in q.predicates):
                raise InvalidArgumentError("filter not kept")
            names = planned(q)
        except (MergeTreeError, ValueError, TypeError):  # a filter the planner no longer takes
            names = sizes
        for name in names:
            if name in sizes:
                reads[name] += sizes[name] * scale
    return dict(reads)


def _iceberg_tasks(path: str, max_task_bytes: int) -> tuple[IcebergTable, list[Task]]:
    """An Iceberg table's tasks (T1): per tier, its pending partitions packed up to
    `max_task_bytes` (a partition is never split), each task one rewrite of those partitions."""
    table = open_iceberg(path)
    metas = {m.file_name: m for m in table.data_files()}
    tasks: list[Task] = []
    for tier, groups in background_pending(table).items():
        pending = {(partition, 0): [metas[t.file.file_path] for t in scan_tasks if t.file.file_path in metas]
                   for partition, scan_tasks in groups.items()}
        for task in table_tasks(table.path, tier, pending, max_task_bytes):
            tasks.append(task)
    return table, tasks


def plan_tasks(path: str, max_task_bytes: int = DEFAULT_MAX_TASK_BYTES, since: Any = DEFAULT_WINDOW,
               advice: Advice | None = None) -> tuple[list[Task], list[PassReport]]:
    """A table's tasks of this round, with their benefit, and a "nothing" report for each tier
    with no task.  An append table's tasks are its pending groups (T1); a primary-key table's
    are its compaction, when the planner picks any bucket, and its index build, when a live
    file lacks a declared index (T5); an Iceberg table's (``iceberg://``) are its pending
    partitions, as an append table's."""
    if is_iceberg_location(path):
        iceberg, found = _iceberg_tasks(path, max_task_bytes)
        return _weighed(iceberg, found, since, advice)
    table = Table.open(path).at()  # the engine's view (a Paimon table's too)
    directory = table.directory
    tasks: list[Task] = []
    if table.table_schema.has_primary_key:
        _, plans = plan_compaction(directory, None, False)
        compacted: dict[tuple, list[DataFileMeta]] = defaultdict(list)
        for key, plan in plans:
            compacted[key] += [m for group in plan.rewrites for m in group.files] + list(plan.upgrades)
        if plans:
            tasks.append(Task(table.path, "minor", None, dict(compacted)))
        snapshot = directory.latest_snapshot()
        indexed: dict[tuple, list[DataFileMeta]] = defaultdict(list)
        for e in directory.live_files(snapshot).values() if snapshot is not None else ():
            if any(missing_indexes(e.file, directory.options)):
                indexed[(e.partition, e.bucket)].append(e.file)
        if indexed:
            tasks.append(Task(table.path, "major", None, dict(indexed)))
    else:
        work = pending(directory)
        for tier in ("major", "minor"):
            tasks += table_tasks(table.path, tier, work[tier], max_task_bytes)
    return _weighed(table, tasks, since, advice)


def _weighed(table: Table | IcebergTable, tasks: list[Task], since: Any,
             advice: Advice | None) -> tuple[list[Task], list[PassReport]]:
    """The tasks with their benefit (T2), and a "nothing" report for each tier without one."""
    nothing = [PassReport(table.path, tier, "nothing") for tier in ("major", "minor")
               if not any(t.tier == tier for t in tasks)]
    if tasks:
        try:
            reads = logged_reads(table, since)
        except MergeTreeError as exc:  # the log weighs the order; it never stops the work
            _log.warning("mergetree: the query log of %s cannot be read (%s); its tasks are ordered as unread",
                         table.path, exc)
            reads = {}
        tasks = [replace(t, reads=task_reads(t, reads), gain=layout_gain(advice, t.tier)) for t in tasks]
    return tasks, nothing


def table_limit(table: Table | IcebergTable, default: int) -> int:
    """A table's own `optimize.max-concurrent-tasks` (kept as mergetree's option in the Paimon
    schema: `option_name`; an Iceberg table's ``mergetree.`` property), else `default`."""
    if isinstance(table, IcebergTable):
        raw = table.properties.get("mergetree." + KEY_MAX_CONCURRENT_TASKS)
    else:
        raw = table.table_schema.options.get(option_name(KEY_MAX_CONCURRENT_TASKS))
    return default if raw is None else int(OPTIONS[KEY_MAX_CONCURRENT_TASKS].parse(raw, KEY_MAX_CONCURRENT_TASKS))


# ---------------------------------------------------------------------------
# Running tasks
# ---------------------------------------------------------------------------

def _run_task(task: Task, rewrite: Rewrite, compact: Callable[[Table], Snapshot | None] | None,
              progress: Progress | None, iceberg_writer: IcebergWriter | None = None) -> PassReport:
    if is_iceberg_location(task.table):  # its partitions rewritten in one Iceberg commit, checked and recorded
        try:
            iceberg = open_iceberg(task.table)
            return iceberg.pass_report(iceberg.optimize(task.tier, progress, partitions=[p for p, _ in task.groups],
                                                        writer=iceberg_writer))
        except MergeTreeError as exc:
            return PassReport(task.table, task.tier, f"failed: {exc}")
    try:
        table = Table.open(task.table).at()  # the table as it is now: an earlier task of it may have committed
        work: Callable[[], Snapshot | None]
        if task.whole_table and task.tier == "minor":
            def work() -> Snapshot | None:
                return compact(table) if compact is not None else table.compact(progress=progress)
        elif task.whole_table:
            def work() -> Snapshot | None:
                return table.build_indexes(progress)
        else:
            work = functools.partial(rewrite, table.directory, task.groups, task.tier, progress)
        return run_pass(table, task.tier, work)
    except MergeTreeError as exc:
        return PassReport(task.table, task.tier, f"failed: {exc}")


def run_tasks(tasks: Iterable[Task], max_tasks: int = 1, per_table: Mapping[str, int] | None = None,
              rewrite: Rewrite = local_rewrite, compact: Callable[[Table], Snapshot | None] | None = None,
              progress: Progress | None = None, on_report: Callable[[PassReport], None] | None = None,
              stop: threading.Event | None = None, iceberg_writer: IcebergWriter | None = None) -> list[PassReport]:
    """Run tasks in their order (T3) under the limits (T4/T5): `max_tasks` threads (1: in this
    thread), `per_table` tasks at once per table (default 1).  A task that fails with a
    `MergeTreeError` is reported ("failed: ...") and the others go on; once `stop` is set no
    task starts (running ones finish: each commits or not, atomically).  `iceberg_writer`: who
    writes an Iceberg table's files (default this process; `mergetree.spark`: the executors)."""
    queue = order_tasks(tasks)
    limits = dict(per_table or {})
    reports: list[PassReport] = []

    def finished(report: PassReport) -> None:
        reports.append(report)
        if on_report is not None:
            on_report(report)

    if max_tasks == 1:
        while queue and not (stop is not None and stop.is_set()):
            task = next_task(queue, [], 1, limits)
            assert task is not None  # nothing runs: the first task that is no index build waiting may start
            queue.remove(task)
            finished(_run_task(task, rewrite, compact, progress, iceberg_writer))
        return reports
    running: dict[Future, Task] = {}
    with ThreadPoolExecutor(max_workers=max_tasks, thread_name_prefix="mergetree-optimizer") as pool:
        while queue or running:
            while not (stop is not None and stop.is_set()):
                task = next_task(queue, list(running.values()), max_tasks, limits)
                if task is None:
                    break
                queue.remove(task)
                running[pool.submit(_run_task, task, rewrite, compact, progress, iceberg_writer)] = task
            if not running:
                break  # stopped
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                del running[future]
                finished(future.result())
    return reports


def run_once(path: str, progress: Progress | None = None, rewrite: Rewrite = local_rewrite,
             compact: Callable[[Table], Snapshot | None] | None = None, *, max_tasks: int = 1,
             max_task_bytes: int = DEFAULT_MAX_TASK_BYTES, since: Any = DEFAULT_WINDOW,
             advice: Advice | None = None, iceberg_writer: IcebergWriter | None = None) -> list[PassReport]:
    """One round on one table: its tasks (see the module docstring), highest benefit first, at
    most `max_tasks` at once (the table's `optimize.max-concurrent-tasks` may lower it), each one
    commit reported and recorded; a "nothing" report for each tier without a task.  `rewrite`
    rewrites an append table's task (its partition's groups); a primary-key table's minor task is
    its compaction (`compact`, default the local one), its major task builds the indexes and
    pre-aggregates its options declare; an Iceberg table's task is written by `iceberg_writer`
    (default: here)."""
    task_limit(max_tasks, "max_tasks")
    _task_bytes(max_task_bytes)
    since = parse_since(since, "since")
    table = _open(path)
    tasks, reports = plan_tasks(table.path, max_task_bytes, since, advice)
    per_table = {table.path: min(max_tasks, table_limit(table, max_tasks))}
    return reports + run_tasks(tasks, max_tasks, per_table, rewrite, compact, progress, iceberg_writer=iceberg_writer)


def _open(path: str) -> Table | IcebergTable:
    """The engine's view of a table (a Paimon table's too), or an Iceberg table's."""
    return open_iceberg(path) if is_iceberg_location(path) else Table.open(path).at()


def interval_seconds(interval: Any, name: str = "interval") -> float:
    """The daemon's pause between rounds, checked: a timedelta or a number of seconds, more
    than 0 (0 would spin rounds back to back), finite, at most `threading.TIMEOUT_MAX`."""
    return seconds(interval, name, positive=True, maximum=threading.TIMEOUT_MAX)


def run_daemon(paths: Sequence[str], interval: float | dt.timedelta = 60.0, once: bool = False,
               on_report: Callable[[PassReport], None] | None = None,
               stop: threading.Event | None = None, *, max_tasks: int = DEFAULT_MAX_TASKS,
               max_tasks_per_table: int = DEFAULT_MAX_TASKS_PER_TABLE,
               max_task_bytes: int = DEFAULT_MAX_TASK_BYTES, since: Any = DEFAULT_WINDOW,
               advice: Iterable[Advice] = (), rewrite: Rewrite = local_rewrite,
               compact: Callable[[Table], Snapshot | None] | None = None) -> int:
    """Run rounds over `paths` every `interval` (seconds or a timedelta, more than 0) until
    stopped (SIGTERM, SIGINT or `stop`).  A round plans every table's tasks, orders them all
    together by benefit (the window `since` of each query log; `advice` the tables' latest
    advice, by `Advice.table`) and runs them in a pool of `max_tasks` threads, at most
    `max_tasks_per_table` on one table (its `optimize.max-concurrent-tasks` replaces that), with
    `rewrite` and `compact` as `run_once` takes them.  A table that cannot be planned, or a task
    that fails, is reported and retried next round.  After its tasks, a round keeps each query
    log to its table's `query-log.retention` (`Table.expire_queries`).  Returns tasks committed."""
    pause = interval_seconds(interval)
    task_limit(max_tasks, "max_tasks")
    task_limit(max_tasks_per_table, "max_tasks_per_table")
    _task_bytes(max_task_bytes)
    since = parse_since(since, "since")
    advised = {a.table: a for a in advice}
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    committed = 0

    def report(r: PassReport) -> None:
        nonlocal committed
        committed += r.status == "committed"
        if on_report is not None:
            on_report(r)

    while not stop.is_set():
        tasks: list[Task] = []
        per_table: dict[str, int] = {}
        for path in paths:
            try:
                table = _open(path)
                found, nothing = plan_tasks(table.path, max_task_bytes, since, advised.get(table.path))
                per_table[table.path] = table_limit(table, max_tasks_per_table)
            except MergeTreeError as exc:
                report(PassReport(path, "round", f"failed: {exc}"))
                continue
            tasks += found
            for r in nothing:
                report(r)
        run_tasks(tasks, max_tasks, per_table, rewrite, compact, on_report=report, stop=stop)
        for path in per_table:  # each query log kept to its table's query-log.retention
            try:
                if is_iceberg_location(path):
                    open_iceberg(path).expire_queries()
                else:
                    expire_queries(path)
            except MergeTreeError as exc:  # a damaged log: `mergetree repair` fixes it, the round goes on
                report(PassReport(path, "query-log", f"failed: {exc}"))
        if once:
            break
        stop.wait(pause)
    return committed
