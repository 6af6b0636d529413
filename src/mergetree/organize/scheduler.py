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
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import CompactionConflictError, MergeTreeError
from ..table import Table
from ..table.durations import seconds
from ..table.files import DataFileMeta
from ..table.history import PassReport, history, record_pass
from ..table.optimize import pending, rewrite_files

__all__ = ["PassReport", "history", "interval_seconds", "pending", "run_daemon", "run_once"]


def _pass(table: Table, tier: str, groups: dict[tuple, list[DataFileMeta]],
          progress: Callable[[int, int], None] | None) -> PassReport:
    directory = table.directory
    report = PassReport(table.path, tier, "nothing")
    if not groups:
        return report
    started = time.perf_counter()
    base = directory.latest_snapshot()
    assert base is not None
    try:
        snapshot = rewrite_files(directory, directory.options, base, groups, tier, progress)
    except CompactionConflictError:
        report.status = "conflict"  # another commit replaced an input: the next round retries
        return report
    if snapshot is None:
        return report
    inputs = [m for files in groups.values() for m in files]
    names = {m.file_name for m in inputs}
    new = [e.file for e in directory.live_files(snapshot).values()
           if e.file.indexes.get("optimized", {}).get("tier") == tier and e.file.file_name not in names
           and (e.partition, e.bucket) in groups]
    report.status = "committed"
    report.groups, report.files_in, report.rows = len(groups), len(inputs), sum(m.row_count for m in inputs)
    report.bytes_in = sum(m.file_size for m in inputs)
    report.snapshot_id = snapshot.id
    report.files_out = len(new)
    report.bytes_out = sum(m.file_size for m in new)
    report.layout = str(new[0].indexes["optimized"].get("layout", "")) if new else ""
    report.seconds = time.perf_counter() - started
    return report


def run_once(path: str, progress: Callable[[int, int], None] | None = None) -> list[PassReport]:
    """One round on one table: the major pass, then the minor pass, each one commit."""
    table = Table.open(path)
    reports = []
    if table.table_schema.has_primary_key:
        for tier, run in (("minor", lambda: table.compact()), ("major", lambda: table.build_indexes())):
            started = time.perf_counter()
            try:
                snapshot = run()
            except CompactionConflictError:
                reports.append(PassReport(table.path, tier, "conflict"))
                continue
            reports.append(PassReport(table.path, tier, "committed" if snapshot else "nothing",
                                      snapshot_id=snapshot.id if snapshot else None,
                                      seconds=time.perf_counter() - started))
    else:
        work = pending(table.directory)
        reports.append(_pass(table, "major", work["major"], progress))
        work = pending(Table.open(path).directory)  # the major pass may have taken some minor candidates
        reports.append(_pass(Table.open(path), "minor", work["minor"], progress))
    for report in reports:
        if report.status == "committed":
            record_pass(report)
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
