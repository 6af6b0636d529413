"""Running compactions: merge the files the planner chose and commit the result.

Split into steps so that the Spark job can run them apart: `plan_units` on the driver (one
`CompactionUnit` per bucket: the universal rules' plan, or a deletion-vector table's),
`execute_unit` for one bucket in a task, the commit of a `rewrite_transaction` on the driver
again.
"""
from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from ...merge import merge
from ..directory import TableDirectory
from ..files import DataFileMeta, batch_rows_for, read_run, write_rolled
from ..retractions import as_merged
from ..schema import KIND_COLUMN, SEQUENCE_COLUMN
from ..sequence_fields import ORDER_COLUMN, ranked
from ..snapshots import FileEntry, Snapshot
from .dv import DvPlan, compact_dv, execute_dv, plan_dv_buckets, restored
from .planner import (
    CompactionOptions,
    CompactionPlan,
    Levels,
    RewriteGroup,
    force_pick_level0,
    full_compaction,
    pick,
    plan_rewrite,
    restored_levels,
    write_stall,
)
from .transaction import Progress, new_files, produces_changelog, rewrite_transaction

__all__ = ["BucketCompaction", "CompactionUnit", "Progress", "bucket_levels", "compact_buckets", "execute_plan",
           "execute_unit", "plan_compaction", "plan_units", "rows_to_rewrite"]

MAX_ROUNDS_AFTER_WRITE = 8
BucketCompaction = tuple[tuple, CompactionPlan]  # ((partition, bucket), plan)


def compact_buckets(directory: TableDirectory, only: set | None, full: bool,
                    progress: Progress | None = None, base: Snapshot | None = None) -> Snapshot | None:
    """Compact the buckets in `only` (every bucket when None) and commit once.

    After a write (`only` given) compaction repeats while a bucket has more sorted
    runs than the stop trigger, which is how writes stall instead of piling up runs.
    `base`: plan from this snapshot (the one a write just committed: no request to find the
    latest; if another commit came in between, the commit conflicts) instead of the latest.
    A table with deletion vectors compacts as `dv.compact_dv` says.  (The planners refuse,
    before anything is written, what the format does not let the engine commit.)
    """
    if resolves(directory):  # resolves every bucket's new files in one round
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


@dataclass(frozen=True)
class CompactionUnit:
    """One bucket's share of a compaction, carried out alone (in a thread, or a Spark task):
    the universal rules' plan, or a deletion-vector table's with the bucket's files (the
    others keep their vectors in the bucket's new index file)."""

    key: tuple  # (partition, bucket)
    plan: CompactionPlan | DvPlan
    files: tuple[DataFileMeta, ...] = ()

    @property
    def rows(self) -> int:
        """Input rows the unit merges."""
        if isinstance(self.plan, DvPlan):
            return sum(f.row_count for f in self.plan.pending)
        return sum(f.row_count for g in self.plan.rewrites for f in g.files)


def resolves(directory: TableDirectory) -> bool:
    """Does the table's compaction resolve files (`dv.compact_dv`): deletion vectors, or a
    pk-clustering-override table (whose first-row files need none)?"""
    return directory.options.deletion_vectors or bool(directory.options.pk_clustering)


def plan_units(directory: TableDirectory, only: set | None, full: bool,
               base: Snapshot | None = None) -> tuple[Snapshot | None, list[CompactionUnit]]:
    """The base snapshot and one unit per bucket that needs compacting (one round: after a
    write, `compact_buckets` repeats while a bucket stalls)."""
    if resolves(directory):
        base, found = plan_dv_buckets(directory, only, full, base)
        return base, [CompactionUnit(key, plan, files) for key, plan, files in found]
    base = base or directory.latest_snapshot()
    base_id, plans = plan_compaction(directory, only, full, base)
    return (base if base_id is not None else None), [CompactionUnit(key, plan) for key, plan in plans]


def execute_unit(directory: TableDirectory, unit: CompactionUnit, advance: Callable[[int], None] | None = None,
                 indexes: list[str] | None = None) -> tuple[list[FileEntry], list[FileEntry]]:
    """Carry out one unit: (adds, deletes).  New data files are removed on failure; the
    deletion-vector index files written go into `indexes` (the caller's to remove)."""
    if isinstance(unit.plan, DvPlan):
        partition, bucket = unit.key
        return execute_dv(directory, partition, bucket, unit.plan, advance, [] if indexes is None else indexes,
                          list(unit.files))
    return execute_plan(directory, unit.key, unit.plan, advance)


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
    # where batch reads leave level 0 out (a Paimon first-row table), it goes up whenever the
    # rules pick nothing, as Java's ForceUpLevel0Compaction does (after a write, unless gentle)
    gentle = directory.options.lookup_compact_gentle
    # (and on a Paimon table whose compaction produces the changelog: its level 0 is the change)
    forced = (directory.options.level0_hidden or produces_changelog(directory)) and not full \
        and not (only is not None and gentle)
    for key, found in sorted(bucket_levels(directory, base, only).items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        levels, bucket_options = restored_levels(found.all_files(), options)
        unit = full_compaction(levels) if full else pick(levels, bucket_options)
        if unit is None and forced:
            unit = force_pick_level0(levels, bucket_options)
        if unit is not None and _retraction_would_fold(directory, unit):
            unit = full_compaction(levels)
        if unit is None:
            continue
        plan = plan_rewrite(unit, bucket_options)
        if directory.options.level0_hidden and plan.output_level > 0:
            plan = _looking_up(plan, levels.all_files(), levels.max_level)
        plans.append((key, plan))
    directory.store.check_rewrite([f for _, plan in plans for f in
                                   (*(f for group in plan.rewrites for f in group.files), *plan.upgrades)])
    return base.id, plans


def _overlaps(a: DataFileMeta, b: DataFileMeta) -> bool:
    return not (a.max_key < b.min_key or b.max_key < a.min_key)


def _looking_up(plan: CompactionPlan, files: list[DataFileMeta], max_level: int) -> CompactionPlan:
    """A first-row table's plan as Java's lookup compaction carries it out: a key some file
    above the output level already holds keeps that (older) version, so the rewrites drop
    theirs (`lookup`); a level-0 file is rewritten, not moved up, unless it goes to the top
    level without retractions (Java's `LookupMergeTreeCompactRewriter.upgradeStrategy`)."""
    moved = [f for f in plan.upgrades if f.level == 0 and (plan.output_level < max_level or f.delete_count)]
    if moved:
        plan = replace(plan, upgrades=tuple(f for f in plan.upgrades if f not in moved),
                       rewrites=plan.rewrites + tuple(RewriteGroup((((f,),),)) for f in moved))
    above = [f for f in files if f.level > plan.output_level]
    rewritten = [f for group in plan.rewrites for f in group.files]
    return replace(plan, lookup=tuple(g for g in above if any(_overlaps(f, g) for f in rewritten)))


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
        kept = _keys_of(directory, plan.lookup) if plan.lookup else None
        for group in plan.rewrites:
            adds += _rewrite(directory, partition, bucket, group.sorted_runs(), plan.output_level, plan.drop_delete,
                             advance, kept)
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


def _keys_of(directory: TableDirectory, files: Sequence[DataFileMeta]) -> pa.Table:
    """The key columns of these files' rows (a lookup compaction's keys already held above)."""
    key = directory.schema.file_key
    pieces = [pa.Table.from_batches([b]) for f in files for b in read_run(directory.storage, [f], columns=key)]
    # files of several writers: a key column NOT NULL in some, nullable in others
    return pa.concat_tables(pieces, promote_options="default") if pieces else pa.schema(
        [directory.schema.file_schema.field(k) for k in key]).empty_table()


def _without_keys(batches: Iterable[pa.RecordBatch], keys: pa.Table, key: list[str]) -> Iterator[pa.RecordBatch]:
    """The batches without their rows whose key `keys` holds, in their order."""
    for batch in batches:
        # the join sees the key columns alone (any other column type may ride along in the take)
        rows = pa.table([batch.column(k) for k in key] + [pa.array(np.arange(batch.num_rows))], names=[*key, "_row"])
        kept = rows.join(keys, keys=key, join_type="left anti", use_threads=False).column("_row").to_numpy()
        if len(kept):
            yield batch.take(pa.array(np.sort(kept)))


def _rewrite(directory: TableDirectory, partition: tuple, bucket: int, runs: list[list[DataFileMeta]], level: int,
             drop_delete: bool, advance: Callable[[int], None] | None,
             kept: pa.Table | None = None) -> list[FileEntry]:
    """Merge sorted runs into new files at `level`, streamed batch by batch into files rolled
    at about target-file-size: memory is a batch per run plus a row group, however large the
    bucket (bitmap indexes and pre-aggregates, when asked for, also hold one output file;
    with sequence fields the runs are read whole first: ranking needs every version's fields).
    `kept`: keys whose rows are left out (a lookup compaction's, held above `level`)."""
    ts = directory.schema
    relative = directory.bucket_directory(partition, bucket, [m for run in runs for m in run])
    options = directory.options
    batch_rows = batch_rows_for(len(runs))
    sources: Sequence[Iterable[pa.RecordBatch]] = [read_run(directory.storage, run, batch_rows=batch_rows)
                                               for run in runs]
    sources = as_merged(directory, sources)  # retractions skipped or refused where the table's merge does
    sequence = SEQUENCE_COLUMN
    if options.sequence_fields:  # ranking needs the whole rewrite's sequence values first
        sources = list(ranked([list(source) for source in sources], options.sequence_fields,
                              options.sequence_descending))
        sequence = ORDER_COLUMN
    reader = merge(sources, ts.file_key, sequence=sequence, kind=KIND_COLUMN, engine=ts.merge_engine,
                   aggregations=options.aggregations or None, keep_deletes=not drop_delete)
    layout = ts.file_schema.names
    merged = restored(reader, ts, advance)
    if sequence == ORDER_COLUMN:
        merged = (batch.select(layout) for batch in merged)
    if kept is not None and kept.num_rows:
        merged = _without_keys(merged, kept, ts.file_key)
    with new_files(directory) as out:
        for meta in write_rolled(directory.opener(partition, bucket, level, relative), merged, ts, options):
            out.append(FileEntry(partition, bucket, meta))
    return out
