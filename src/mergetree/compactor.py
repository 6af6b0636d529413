"""Running compactions: merge the files a `compaction.pick` chose and commit the result."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from .compaction import CompactionOptions, CompactionPlan, Levels, full_compaction, pick, plan_rewrite, write_stall
from .data_files import DataFileMeta, read_run, write_data_file
from .merge import merge
from .progress import ProgressBar
from .errors import CommitConflictError, CompactionConflictError
from .snapshots import FileEntry, Snapshot, backoff
from .table_schema import KIND_COLUMN, SEQUENCE_COLUMN

if TYPE_CHECKING:
    from .table import Table

COMMIT_RETRIES = 30
MAX_ROUNDS_AFTER_WRITE = 8


def compact_buckets(table: Table, only: set | None, full: bool, progress: bool | None = False) -> Snapshot | None:
    """Compact the buckets in `only` (every bucket when None) and commit once.

    After a write (`only` given) compaction repeats while a bucket has more sorted
    runs than the stop trigger, which is how writes stall instead of piling up runs.
    """
    snapshot = _compact_once(table, only, full, progress)
    if only is not None:
        options = table.options.compaction
        for _ in range(MAX_ROUNDS_AFTER_WRITE):
            stalled = {key for key, levels in _levels(table, options).items()
                       if key in only and write_stall(levels, options)}
            if not stalled:
                break
            snapshot = _compact_once(table, stalled, full, progress) or snapshot
    return snapshot


def _levels(table: Table, options: CompactionOptions) -> dict[tuple, Levels]:
    by_bucket: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    for e in table.store.live_files(table.latest_snapshot()).values():
        by_bucket[(e.partition, e.bucket)].append(e.file)
    return {key: Levels(files, options.num_levels) for key, files in by_bucket.items()}


def plan_compaction(table: Table, only: set | None, full: bool) -> tuple[int | None, list[tuple[tuple, CompactionPlan]]]:
    """The base snapshot and, per bucket that needs it, what to rewrite and upgrade."""
    ts = table.table_schema
    options = table.options.compaction
    base = table.latest_snapshot()
    if base is None or not ts.has_primary_key:
        return None, []
    plans: list[tuple[tuple, CompactionPlan]] = []
    for key, levels in sorted(_levels(table, options).items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if only is not None and key not in only:
            continue
        unit = full_compaction(levels) if full else pick(levels, options)
        if unit is not None:
            plans.append((key, plan_rewrite(unit, options)))
    return base.id, plans


def execute_plan(table: Table, key: tuple, plan: CompactionPlan,
                 bar: ProgressBar | None = None) -> tuple[list[FileEntry], list[FileEntry]]:
    """Carry out one bucket's plan: (adds, deletes).  New files are removed on failure."""
    partition, bucket = key
    options = table.options.compaction
    written: list[FileEntry] = []
    adds: list[FileEntry] = []
    deletes: list[FileEntry] = []
    try:
        for group in plan.rewrites:
            new = _rewrite(table, partition, bucket, group.sorted_runs(), plan.output_level,
                           plan.drop_delete, options.target_file_size, bar)
            written += new
            adds += new
            deletes += [FileEntry(partition, bucket, f) for f in group.files]
    except BaseException:
        table._discard(written)
        raise
    for f in plan.upgrades:  # metadata only: the same file at a new level
        deletes.append(FileEntry(partition, bucket, f))
        adds.append(FileEntry(partition, bucket, f.with_level(plan.output_level)))
    return adds, deletes


def rows_to_rewrite(plans: list[tuple[tuple, CompactionPlan]]) -> int:
    return sum(f.row_count for _, p in plans for g in p.rewrites for f in g.files)


def _compact_once(table: Table, only: set | None, full: bool, progress: bool | None) -> Snapshot | None:
    base_id, plans = plan_compaction(table, only, full)
    if not plans:
        return None
    adds: list[FileEntry] = []
    deletes: list[FileEntry] = []
    try:
        with ProgressBar(rows_to_rewrite(plans), desc="compact", unit="rows", enabled=progress) as bar:
            for key, plan in plans:
                a, d = execute_plan(table, key, plan, bar)
                adds += a
                deletes += d
        return commit_compaction(table, base_id, adds, deletes)
    except BaseException:
        discard_new_files(table, adds, deletes)
        raise


def discard_new_files(table: Table, adds: list[FileEntry], deletes: list[FileEntry]) -> None:
    """Remove a failed compaction's outputs (an upgraded file is an input: it stays)."""
    inputs = {e.file.file_name for e in deletes}
    table._discard([e for e in adds if e.file.file_name not in inputs])


def commit_compaction(table: Table, base_id: int, adds: list[FileEntry], deletes: list[FileEntry]) -> Snapshot:
    """Commit, rebasing over commits that left every input file in place."""
    for attempt in range(COMMIT_RETRIES):
        try:
            return table.store.commit(base_id, adds, deletes, "COMPACT", table.table_schema.schema_id)
        except CommitConflictError:
            latest = table.latest_snapshot()
            live = table.store.live_files(latest)
            gone = [e.file.file_name for e in deletes if e.file.file_name not in live
                    or live[e.file.file_name].file.level != e.file.level]
            if gone:
                raise CompactionConflictError(
                    f"another commit replaced {len(gone)} input file(s) of this compaction "
                    f"(e.g. {gone[0]}); nothing was committed") from None
            base_id = latest.id
            backoff(attempt)
    raise CompactionConflictError(f"gave up after {COMMIT_RETRIES} conflicting commits")


def _rewrite(table: Table, partition: tuple, bucket: int, runs: list[list[DataFileMeta]], level: int,
             drop_delete: bool, target: int, bar: ProgressBar | None) -> list[FileEntry]:
    """Merge sorted runs into new files at `level`, rolled at about `target` bytes."""
    ts = table.table_schema
    directory = table._directory(partition, bucket)
    reader = merge([read_run(table.path, run) for run in runs], ts.file_key, sequence=SEQUENCE_COLUMN,
                   kind=KIND_COLUMN, engine=ts.merge_engine, aggregations=table.options.aggregations or None,
                   keep_deletes=not drop_delete)
    out = []
    for chunk in _rolled(reader, target, bar):
        chunk = ts.restore_key_columns(chunk)
        out.append(FileEntry(partition, bucket, write_data_file(table.path, directory, chunk, ts, level)))
    return out


def _rolled(reader, target: int, bar: ProgressBar | None) -> Iterator[pa.Table]:
    """Group a stream of batches into tables of about `target` bytes in memory."""
    pending: list[pa.RecordBatch] = []
    size = 0
    seen = 0
    for batch in reader:
        pending.append(batch)
        size += batch.nbytes
        rows_in = reader.stats.rows_in
        if bar is not None:
            bar.update(rows_in - seen)
        seen = rows_in
        if size >= target:
            yield pa.Table.from_batches(pending)
            pending, size = [], 0
    if pending:
        yield pa.Table.from_batches(pending)
    if bar is not None:
        bar.update(reader.stats.rows_in - seen)
