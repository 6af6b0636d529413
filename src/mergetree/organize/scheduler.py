"""Tiered background optimization (seed 003's snapshot-based scheduling).

A table's files carry what they were written for: as written, merged by a *minor* pass, or
laid out by a *major* pass for the table's current layout (clustering, in-file sort; indexes
and pre-aggregates are built with every file).  Only data not yet optimized is touched:

* **minor**: in a (partition, bucket) with at least `optimize.minor-min-files` small files
  (below the small-file ratio of the target size) that no major pass laid out, those files are
  merged into files of the target size, so fresh data is soon cheap to read;
* **major**: once a (partition, bucket)'s data not yet laid out for the current layout reaches
  `optimize.major-threshold` bytes (default 2 GB), exactly that data is rewritten by the layout.

Each pass is one atomic commit that replaces exactly its input files: a writer committing
meanwhile is rebased over; a pass whose inputs another commit replaced aborts cleanly and is
retried on the next round.  A pass leaves its outputs marked, so running again finds nothing
to do (idempotent), and a crash mid-pass commits nothing (the next round redoes it; orphan
cleanup removes the debris).  Every pass is recorded in the table's optimizer history (an
append table at `<table>/optimizer/`).  Primary-key tables keep their files sorted by key: their
minor pass is the LSM compaction, their major pass gives files their indexes.
"""
from __future__ import annotations

import datetime as dt
import functools
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import CompactionConflictError, MergeTreeError
from ..table import Table
from ..table.directory import TableDirectory
from ..table.durations import seconds
from ..table.files import DataFileMeta
from ..table.levers.optimize import pending, rewrite_files
from ..table.snapshots import Snapshot
from ..table.workload.history import PassReport, history, record_rewrite

__all__ = ["PassReport", "Rewrite", "history", "interval_seconds", "local_rewrite", "pending", "run_daemon", "run_once",
           "run_pass"]


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
    return record_rewrite(Table.open(table.path).directory, snapshot, tier, time.perf_counter() - started)


def run_once(path: str, progress: Progress | None = None, rewrite: Rewrite = local_rewrite,
             compact: Callable[[Table], Snapshot | None] | None = None) -> list[PassReport]:
    """One round on one table, each pass one commit: the major pass, then the minor pass; a
    primary-key table's minor pass is its compaction (`compact`, default the local one), its
    major pass builds the indexes and pre-aggregates its options declare."""
    table = Table.open(path)
    if table.table_schema.has_primary_key:
        def compacted() -> Snapshot | None:
            return compact(table) if compact is not None else table.compact(progress=progress)
        return [run_pass(table, "minor", compacted),
                run_pass(table, "major", lambda: Table.open(path).build_indexes(progress))]
    reports = []
    for tier in ("major", "minor"):
        table = Table.open(path)  # each pass sees the one before it (a major pass may take minor candidates)
        groups = pending(table.directory)[tier]
        reports.append(run_pass(table, tier, functools.partial(rewrite, table.directory, groups, tier, progress))
                       if groups else PassReport(table.path, tier, "nothing"))
    return reports


def interval_seconds(interval: Any, name: str = "interval") -> float:
    """The daemon's pause between rounds, checked: a timedelta or a number of seconds, more
    than 0 (0 would spin rounds back to back), finite, at most `threading.TIMEOUT_MAX`."""
    return seconds(interval, name, positive=True, maximum=threading.TIMEOUT_MAX)


def run_daemon(paths: Sequence[str], interval: float | dt.timedelta = 60.0, once: bool = False,
               on_report: Callable[[PassReport], None] | None = None,
               stop: threading.Event | None = None) -> int:
    """Run rounds over `paths` every `interval` (seconds or a timedelta, more than 0) until
    stopped (SIGTERM, SIGINT or `stop`); a failing table is reported and retried next round.
    Returns passes committed."""
    pause = interval_seconds(interval)
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    committed = 0
    while not stop.is_set():
        for path in paths:
            try:
                for report in run_once(path):
                    committed += report.status == "committed"
                    if on_report is not None:
                        on_report(report)
            except MergeTreeError as exc:
                if on_report is not None:
                    on_report(PassReport(path, "round", f"failed: {exc}"))
        if once:
            break
        stop.wait(pause)
    return committed
