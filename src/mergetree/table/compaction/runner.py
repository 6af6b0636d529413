"""Running compactions: merge the files the planner chose and commit the result.

Split into steps so that the Spark job can run them apart: `plan_compaction` on the driver,
`execute_plan` for one bucket in a task, the commit of a `rewrite_transaction` on the driver
again.
"""
from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ...merge import merge
from ..directory import TableDirectory
from ..files import DataFileMeta, batch_rows_for, read_run, write_rolled
from ..schema import KIND_COLUMN, SEQUENCE_COLUMN
from ..snapshots import FileEntry, Snapshot
from .dv import compact_dv, restored
from .planner import (
    CompactionOptions,
    CompactionPlan,
    Levels,
    full_compaction,
    pick,
    plan_rewrite,
    restored_levels,
    write_stall,
)
from .transaction import Progress, new_files, rewrite_transaction

__all__ = ["BucketCompaction", "Progress", "bucket_levels", "compact_buckets", "execute_plan", "plan_compaction",
           "rows_to_rewrite"]

MAX_ROUNDS_AFTER_WRITE = 8
BucketCompaction = tuple[tuple, CompactionPlan]  # ((partition, bucket), plan)


def compact_buckets(directory: TableDirectory, only: set | None, full: bool,
                    progress: Progress | None = None, base: Snapshot | None = None) -> Snapshot | None:
    """Compact the buckets in `only` (every bucket when None) and commit once.

    After a write (`only` given) compaction repeats while a bucket has more sorted
    runs than the stop trigger, which is how writes stall instead of piling up runs.
    `base`: plan from this snapshot (the one a write just committed: no request to find the
    latest; if another commit came in between, the commit conflicts) instead of the latest.
    A table with deletion vectors compacts as `dv.compact_dv` says.
    """
    directory.refuse_commit("COMPACT")
    if directory.options.deletion_vectors:  # resolves every bucket's new files in one round
        return compact_dv(directory, only, full, progress, base)
    snapshot = _compact_once(directory, only, full, progress, base)
    if only is not None:
        options = directory.options.compaction
        for _ in range(MAX_ROUNDS_AFTER_WRITE):
            stalled = {key for key, levels in bucket_levels(directory, snapshot or base, only).items()
                       if write_stall(levels, options)}
            if not stalled:
                break
            snapshot = _compact_once(directory, stalled, full, progress, snapshot or base) or snapshot
    return snapshot


def bucket_levels(directory: TableDirectory, snapshot: Snapshot | None = None,
                  only: set | None = None) -> dict[tuple, Levels]:
    """(partition, bucket) -> its files by LSM level, at `snapshot` (default: the latest);
    `only`: just these buckets."""
    options: CompactionOptions = directory.options.compaction
    by_bucket: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    for e in directory.live_files(snapshot or directory.latest_snapshot()).values():
        if only is None or (e.partition, e.bucket) in only:
            by_bucket[(e.partition, e.bucket)].append(_as_planned(e.file))
    return {key: restored_levels(files, options)[0] for key, files in by_bucket.items()}


def _as_planned(meta: DataFileMeta) -> DataFileMeta:
    """A file as compaction plans with it: a Paimon file whose manifest records no retractions
    (a count reads do not trust) with its footer's answer instead (`planned_delete_count`)."""
    count = getattr(meta.origin, "planned_delete_count", None) if meta.origin is not None else None
    return meta if count is None or count == meta.delete_count else replace(meta, delete_count=count)


def plan_compaction(directory: TableDirectory, only: set | None, full: bool,
                    base: Snapshot | None = None) -> tuple[int | None, list[BucketCompaction]]:
    """The base snapshot (`base`, default the latest) and, per bucket that needs it, what to
    rewrite and upgrade."""
    directory.refuse_commit("COMPACT")
    options = directory.options.compaction
    base = base or directory.latest_snapshot()
    if base is None or not directory.schema.has_primary_key:
        return None, []
    plans: list[BucketCompaction] = []
    for key, found in sorted(bucket_levels(directory, base, only).items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        levels, bucket_options = restored_levels(found.all_files(), options)
        unit = full_compaction(levels) if full else pick(levels, bucket_options)
        if unit is not None and _retraction_would_fold(directory, unit):
            unit = full_compaction(levels)
        if unit is not None:
            plans.append((key, plan_rewrite(unit, bucket_options)))
    return base.id, plans


def _retraction_would_fold(directory: TableDirectory, unit) -> bool:
    """A partial-update unit that keeps its retractions (older data stays outside it) but holds
    one would fold [-D, +I] into a plain row, and a later merge would refill that row's nulls from
    the older data the -D removed: such a unit compacts the whole bucket instead, where the
    retraction meets everything it deletes."""
    return (directory.schema.merge_engine == "partial-update" and not unit.drop_delete
            and any(f.delete_count > 0 for f in unit.files))


def rows_to_rewrite(plans: list[BucketCompaction]) -> int:
    return sum(f.row_count for _, p in plans for g in p.rewrites for f in g.files)


def execute_plan(directory: TableDirectory, key: tuple, plan: CompactionPlan,
                 advance: Callable[[int], None] | None = None) -> tuple[list[FileEntry], list[FileEntry]]:
    """Carry out one bucket's plan: (adds, deletes).  New files are removed on failure.
    `advance(rows)` is told of every input row merged."""
    partition, bucket = key
    deletes: list[FileEntry] = []
    with new_files(directory) as adds:
        for group in plan.rewrites:
            adds += _rewrite(directory, partition, bucket, group.sorted_runs(), plan.output_level, plan.drop_delete,
                             advance)
            deletes += [FileEntry(partition, bucket, f) for f in group.files]
    for f in plan.upgrades:  # metadata only: the same file at a new level
        deletes.append(FileEntry(partition, bucket, f))
        adds.append(FileEntry(partition, bucket, f.with_level(plan.output_level)))
    return adds, deletes


def _compact_once(directory: TableDirectory, only: set | None, full: bool,
                  progress: Progress | None, base: Snapshot | None = None) -> Snapshot | None:
    base_id, plans = plan_compaction(directory, only, full, base)
    if not plans or base_id is None:
        return None
    with rewrite_transaction(directory, base_id, rows_to_rewrite(plans), progress) as rewrite:
        workers = max(1, min(os.cpu_count() or 1, len(plans)))
        # buckets in threads (the merge and the Parquet writer release the GIL); every bucket
        # that finished joins the transaction, so a failure elsewhere removes its files too
        failure: BaseException | None = None
        with ThreadPoolExecutor(workers, thread_name_prefix="compact") as pool:
            futures = [pool.submit(execute_plan, directory, key, plan, rewrite.advance) for key, plan in plans]
            for future in futures:
                try:
                    adds, deletes = future.result()
                except BaseException as exc:
                    failure = failure or exc
                    continue
                rewrite.replace(deletes, adds)
        if failure is not None:
            raise failure
        return rewrite.commit()


def _rewrite(directory: TableDirectory, partition: tuple, bucket: int, runs: list[list[DataFileMeta]], level: int,
             drop_delete: bool, advance: Callable[[int], None] | None) -> list[FileEntry]:
    """Merge sorted runs into new files at `level`, streamed batch by batch into files rolled
    at about target-file-size: memory is a batch per run plus a row group, however large the
    bucket (bitmap indexes and pre-aggregates, when asked for, also hold one output file)."""
    ts = directory.schema
    relative = directory.bucket_directory(partition, bucket, [m for run in runs for m in run])
    batch_rows = batch_rows_for(len(runs))
    reader = merge([read_run(directory.storage, run, batch_rows=batch_rows) for run in runs], ts.file_key,
                   sequence=SEQUENCE_COLUMN,
                   kind=KIND_COLUMN, engine=ts.merge_engine, aggregations=directory.options.aggregations or None,
                   keep_deletes=not drop_delete)
    with new_files(directory) as out:
        for meta in write_rolled(directory.storage, relative, restored(reader, ts, advance), ts, level,
                                 directory.options, name_for=directory.data_file_name):
            out.append(FileEntry(partition, bucket, meta))
    return out
