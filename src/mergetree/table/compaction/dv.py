"""Compaction of a table with `deletion-vectors.enabled`: new versions are folded into single
rows, and the rows they replace are marked in deletion vectors instead of rewritten.

The invariant: a bucket's *resolved* files (their manifest entry carries a deletion vector,
possibly empty) never hold two live rows of one key, and each live row already holds the merged
value of every version it replaced.  So a resolved file is read alone, its deletion vector
applied, unless its key range meets an unresolved file (a write's level-0 file, or a file
written before the option was set): those sections are merged on read as in any table, with the
deletion vectors applied to each file first.  Reads are exactly those of the same table without
deletion vectors, at every snapshot, for every merge engine.

A compaction of a bucket with unresolved files (`Table.compact`, or after a write once the
bucket has `num-sorted-run.compaction-trigger` sorted runs):

1. reads the keys of every unresolved file and finds, in the resolved files whose key range
   meets one, the live rows of those keys (their positions: a hash join on the key columns);
2. merges those rows (each the merged value of everything older) with every unresolved file,
   with the table's engine and its full-compaction rules (retractions are dropped: all of each
   key's history is in the merge), so partial-update and aggregate rows are folded, not lost
   (deduplicate needs no old row: the newest version wins whole, so only positions are read);
3. writes the merged rows as new resolved files at the lowest level >= 1 whose files do not
   meet their key range, and one deletion-vector index file per bucket holding the old
   vectors plus the positions found in step 1;
4. commits in one snapshot: the unresolved files go, the new files come, each resolved file
   that lost rows is replaced by the same file with its new vector.  A concurrent commit that
   replaced an input or changed one of those vectors makes it a `CompactionConflictError`.

When no level is free, or with `full=True`, the bucket is rewritten whole (vectors applied) into
resolved files at the top level without deletions.  Data and index files are written before the
snapshot that names them; a failure removes them (a crash leaves orphans for
`remove_orphan_files`), so the table always reads as its last commit."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from ...merge import merge
from ...merge.arrow_input import sort_indices
from ..directory import TableDirectory
from ..dvfiles import DeletionVectorRef
from ..files import (
    POSITION_COLUMN,
    READ_BATCH_ROWS,
    DataFileMeta,
    batch_rows_for,
    deleted_of,
    key_row_groups,
    read_key_positions,
    read_rows_at,
    read_run,
    remove_uncommitted,
    write_rolled,
)
from ..objects import is_local
from ..retractions import as_merged
from ..schema import KIND_COLUMN, SEQUENCE_COLUMN
from ..sequence_fields import ORDER_COLUMN, ranked
from ..snapshots import FileEntry, Snapshot
from .planner import CompactionOptions, restored_levels
from .transaction import Progress, new_files, rewrite_transaction

__all__ = ["DvPlan", "compact_dv", "execute_dv", "plan_dv", "plan_dv_buckets", "restored"]


@dataclass(frozen=True)
class DvPlan:
    """One bucket's deletion-vector compaction: merge `pending` (and, unless `full`, the live
    rows of their keys found in `lookup`) into resolved files at `level`; `full` rewrites
    every file of the bucket — but for `moved`, files that need no rewrite (no deleted rows, no
    retractions, no key shared with another file), only moved to `level` and resolved."""

    pending: tuple[DataFileMeta, ...]
    lookup: tuple[DataFileMeta, ...]
    level: int
    full: bool
    moved: tuple[DataFileMeta, ...] = ()  # files only moved to `level`, resolved as they are


def _planned_retractions(meta: DataFileMeta) -> int:
    """A file's retractions as compaction plans with them (a Paimon file that records none is
    asked its footer: `planned_delete_count`)."""
    count = getattr(meta.origin, "planned_delete_count", None) if meta.origin is not None else None
    return meta.delete_count if count is None else count


def _meets(a: DataFileMeta, others: list[DataFileMeta]) -> bool:
    return any(a.min_key <= o.max_key and o.min_key <= a.max_key for o in others)


def plan_dv(files: list[DataFileMeta], options: CompactionOptions, trigger: int | None, full: bool) -> DvPlan | None:
    """What to do in one bucket (None: nothing); `trigger`: only compact with at least this
    many sorted runs (None: whenever there are unresolved files)."""
    levels = restored_levels(files, options)[0]
    top = levels.max_level
    everything = DvPlan(tuple(levels.all_files()), (), top, True)
    if full:
        # a file alone in its key range, without deleted rows or retractions, is moved, not
        # rewritten (as Java moves a clean file to the top level)
        alone = [f for f in files if not f.deleted_rows and not _planned_retractions(f)
                 and not _meets(f, [g for g in files if g is not f])]
        moved = tuple(f for f in alone if not (f.resolved and f.level == top))
        rewritten = tuple(f for f in files if f not in alone)
        if not files or (not rewritten and not moved):
            return None
        return DvPlan(rewritten, (), top, True, moved)
    pending = [f for f in files if not f.resolved]
    if not pending or (trigger is not None and levels.number_of_sorted_runs() < trigger):
        return None
    resolved = [f for f in files if f.resolved]
    low, high = min(f.min_key for f in pending), max(f.max_key for f in pending)
    for level in range(1, top + 1):
        if not any(f.level == level and f.min_key <= high and low <= f.max_key for f in resolved):
            lookup = tuple(f for f in resolved if _meets(f, pending))
            return DvPlan(tuple(pending), lookup, level, False)
    return everything


def plan_clustered(files: list[DataFileMeta], trigger: int | None, full: bool) -> DvPlan | None:
    """What to do in one bucket of a `pk-clustering-override` table (Java's
    `ClusteringCompactManager`): its level-0 files merged and resolved against the level-1
    files their keys meet, the merged rows written as level-1 files sorted by the clustering
    columns; `full` rewrites the bucket whole into such files (a bucket of one clean file is
    left as it is).  Level-1 files overlap in key range: they are no sorted run, so the universal
    rules do not apply (`trigger`: only with at least this many level-0 files)."""
    if full:
        if not files or (len(files) == 1 and files[0].resolved and files[0].level == 1
                         and not files[0].deleted_rows and not _planned_retractions(files[0])):
            return None
        return DvPlan(tuple(files), (), 1, True)
    pending = [f for f in files if not f.resolved]
    if not pending or (trigger is not None and len(pending) < trigger):
        return None
    lookup = tuple(f for f in files if f.resolved and _meets(f, pending))
    return DvPlan(tuple(pending), lookup, 1, False)


def plan_dv_buckets(directory: TableDirectory, only: set | None, full: bool, base: Snapshot | None = None
                    ) -> tuple[Snapshot | None, list[tuple[tuple, DvPlan, tuple[DataFileMeta, ...]]]]:
    """The base snapshot (`base`, default the latest) and, per bucket in `only` (every bucket
    when None; then any unresolved file is resolved, not only past the trigger) that needs it,
    its plan with the bucket's files (the others keep their vectors in its new index file)."""
    directory.refuse_commit("COMPACT")
    if not directory.schema.has_primary_key:
        raise InvalidArgumentError("deletion vectors need a primary-key table")
    base = base or directory.latest_snapshot()
    if base is None:
        return None, []
    options = directory.options.compaction
    by_bucket: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    for e in directory.live_files(base).values():
        by_bucket[(e.partition, e.bucket)].append(e.file)
    # after a write, compact past the trigger — unless batch reads leave level 0 out (a Paimon
    # table's deletion vectors): then it is resolved now, as Java's lookup writers do (unless gentle)
    forced = directory.options.level0_hidden and not directory.options.lookup_compact_gentle
    trigger = options.num_sorted_run_compaction_trigger if only is not None and not forced else None
    plans = []
    for key in sorted(by_bucket, key=lambda k: (str(k[0]), k[1])):
        if only is not None and key not in only:
            continue
        plan = plan_clustered(by_bucket[key], trigger, full) if directory.options.pk_clustering else \
            plan_dv(by_bucket[key], options, trigger, full)
        if plan is not None:
            plans.append((key, plan, tuple(by_bucket[key])))
    directory.store.check_rewrite([f for _, plan, _ in plans for f in (*plan.pending, *plan.lookup)])
    return base, plans


def compact_dv(directory: TableDirectory, only: set | None, full: bool, progress: Progress | None = None,
               base: Snapshot | None = None) -> Snapshot | None:
    """Compact the buckets in `only` (every bucket when None; then any unresolved file is
    resolved, not only past the trigger) and commit once."""
    base, plans = plan_dv_buckets(directory, only, full, base)
    if base is None or not plans:
        return None
    total = sum(f.row_count for _, p, _ in plans for f in p.pending)
    indexes: list[str] = []
    try:
        with rewrite_transaction(directory, base.id, total, progress) as rewrite:
            for (partition, bucket), plan, files in plans:
                adds, deletes = execute_dv(directory, partition, bucket, plan, rewrite.advance, indexes, list(files))
                rewrite.replace(deletes, adds)
            return rewrite.commit()
    except BaseException:
        # the updated files' entries name index files nothing committed refers to; on an object
        # store a commit without an answer may have been published: orphan cleanup decides there
        if is_local(directory.storage):
            remove_uncommitted(directory.storage, indexes)
        raise


def execute_dv(directory: TableDirectory, partition: tuple, bucket: int, plan: DvPlan,
               advance: Callable[[int], None] | None, indexes: list[str],
             files: list[DataFileMeta]) -> tuple[list[FileEntry], list[FileEntry]]:
    """Carry out one bucket's plan (`files`: the bucket's): (adds, deletes); the index file
    written is added to `indexes`."""
    ts = directory.schema
    options = directory.options
    storage = directory.storage
    clustered = options.pk_clustering
    # a clustered table's resolved files hold no key twice between them but are not in key
    # order: their live rows are one run once sorted by key
    unsorted = [f for f in plan.pending if not f.key_ordered] if clustered else []
    ordered = [f for f in plan.pending if f not in unsorted]
    runs = [list(run.files) for run in restored_levels(ordered, directory.options.compaction)[0].sorted_runs()]
    found: dict[str, np.ndarray] = {}
    lookup_runs: list[Iterator[pa.RecordBatch]] = []
    if unsorted:
        lookup_runs.append(_in_key_order(ts, [b for f in unsorted for b in read_run(storage, [f])]))
    # a clustered first-row table keeps its old rows where they are and drops the new versions
    # of their keys (Java's `ClusteringKeyIndex`): nothing is marked deleted, nothing moved
    keep_old = bool(clustered) and ts.merge_engine == "first-row" and bool(plan.lookup)
    if plan.lookup and not keep_old:
        found = _find_replaced(directory, plan)
    # deduplicate: the newest version is the whole answer, so a replaced row's values are not
    # needed, only its position; the other engines fold the old row into the new one (and so
    # does deduplicate where the old row may win: sequence fields, or ignored deletes)
    old_values = ts.merge_engine != "deduplicate" or bool(options.sequence_fields) or options.ignore_delete
    if found and old_values and clustered:
        lookup_runs.append(_in_key_order(ts, [b for meta in plan.lookup if meta.file_name in found
                                              for b in _rows_at(directory, [meta], found)]))
    elif found and old_values:
        by_level: dict[int, list[DataFileMeta]] = defaultdict(list)
        for meta in plan.lookup:
            if meta.file_name in found:
                by_level[meta.level].append(meta)
        for level in sorted(by_level):  # one level's files are key-disjoint: one sorted run
            ordered = sorted(by_level[level], key=lambda m: m.min_key)
            lookup_runs.append(_rows_at(directory, ordered, found))
    batch_rows = batch_rows_for(len(runs) + len(lookup_runs))
    inputs = as_merged(directory, lookup_runs + [read_run(storage, run, batch_rows=batch_rows) for run in runs])
    sequence = SEQUENCE_COLUMN
    if options.sequence_fields:  # ranking needs every version's fields first
        inputs = list(ranked([list(run) for run in inputs], options.sequence_fields, options.sequence_descending))
        sequence = ORDER_COLUMN
    reader = merge(inputs, ts.file_key, sequence=sequence, kind=KIND_COLUMN, engine=ts.merge_engine,
                   aggregations=options.aggregations or None, keep_deletes=False)
    merged = restored(reader, ts, advance)  # (a plan that only moves files reads nothing)
    if sequence == ORDER_COLUMN:
        layout = ts.file_schema.names
        merged = (batch.select(layout) for batch in merged)
    if clustered:  # written sorted by the clustering columns (then the key), as Java's clustered files
        batches = list(merged)
        if keep_old:
            batches = _without_keys(batches, _live_keys(directory, plan.lookup), ts.file_key)
        merged = _in_order(batches, [*clustered, *ts.file_key])
    relative = directory.bucket_directory(partition, bucket, [*plan.pending, *plan.lookup])
    resolved = DeletionVectorRef()
    # a clustered layout's files may be far below a row group: cut at the rows that make the
    # target on disk, as the inputs' size per row says (Java checks its writer's size every 1,000 rows)
    inputs_read = [*plan.pending, *plan.lookup]
    per_row = sum(f.file_size for f in inputs_read) / max(sum(f.row_count for f in inputs_read), 1) \
        if clustered and inputs_read else None
    with new_files(directory) as adds:
        for meta in write_rolled(directory.opener(partition, bucket, plan.level, relative),
                                 merged if inputs else iter(()), ts, options, per_row):
            adds.append(FileEntry(partition, bucket, meta.with_deletion_vector(resolved)))
        deletes = [FileEntry(partition, bucket, f) for f in plan.pending]
        for f in plan.moved:  # metadata only: the same file at the output level, resolved
            deletes.append(FileEntry(partition, bucket, f))
            adds.append(FileEntry(partition, bucket, f.with_level(plan.level).with_deletion_vector(resolved)))
        if found:
            vectors = {}
            for meta in plan.lookup:
                if meta.file_name not in found:
                    continue
                old = deleted_of(storage, meta) if meta.deleted_rows else None
                vectors[meta.file_name] = np.union1d(np.empty(0, np.int64) if old is None else old,
                                                     found[meta.file_name])
            pending = {m.file_name for m in plan.pending}
            refs = directory.store.write_deletion_vectors(partition, bucket, relative, vectors,
                                                          [m for m in files if m.file_name not in pending])
            indexes.extend({r.index for r in refs.values() if r.index})
            for meta in plan.lookup:
                if meta.file_name in refs:
                    deletes.append(FileEntry(partition, bucket, meta))
                    adds.append(FileEntry(partition, bucket, meta.with_deletion_vector(refs[meta.file_name])))
    return adds, deletes


def _find_replaced(directory: TableDirectory, plan: DvPlan) -> dict[str, np.ndarray]:
    """Resolved file name -> the sorted positions of its live rows whose key an unresolved
    file of the plan holds (the rows the merge replaces)."""
    key = directory.schema.file_key
    storage = directory.storage
    pieces = [pa.Table.from_batches([b]) for b in read_run(storage, list(plan.pending), columns=key)]
    if not pieces:
        return {}
    keys = pa.concat_tables(pieces, promote_options="default")  # NOT NULL in some writers' files, not others
    # one integer key column: a file's keys are sorted and distinct, so a binary search finds them
    integer = len(key) == 1 and pa.types.is_integer(keys.schema.field(key[0]).type)
    wanted = np.unique(keys.column(0).to_numpy()) if integer else keys.group_by(key).aggregate([])
    # the row groups that may hold a wanted key, by the first key column's statistics (updates
    # of recent keys touch few); an integer first column only (exact comparisons)
    first = np.unique(keys.column(0).to_numpy()) if pa.types.is_integer(keys.schema.field(0).type) else None
    out: dict[str, np.ndarray] = {}
    for meta in plan.lookup:
        groups = key_row_groups(storage, meta, key[0], first) if first is not None else None
        if groups == []:
            continue
        table = read_key_positions(storage, meta, key, groups)
        if table is None or table.num_rows == 0:
            continue
        if integer:
            present = table.column(0).to_numpy()
            order = None if meta.key_ordered else np.argsort(present, kind="stable")  # a clustered file
            if order is not None:
                present = present[order]
            at = np.searchsorted(present, wanted)
            hit = at[at < len(present)]
            hit = hit[present[hit] == wanted[at < len(present)]]
            positions = table.column(POSITION_COLUMN).to_numpy()[hit if order is None else order[hit]]
        else:
            positions = table.join(wanted, keys=key, join_type="inner", use_threads=False) \
                .column(POSITION_COLUMN).to_numpy()
        if len(positions):
            out[meta.file_name] = np.sort(positions)
    return out


def _live_keys(directory: TableDirectory, files: tuple[DataFileMeta, ...]) -> pa.Table:
    """The keys of these files' live rows (their deletion vectors applied)."""
    key = directory.schema.file_key
    pieces = [pa.Table.from_batches([b]) for meta in files for b in read_run(directory.storage, [meta], columns=key)]
    return pa.concat_tables(pieces, promote_options="default") if pieces else pa.table({k: [] for k in key})


def _without_keys(batches: list[pa.RecordBatch], keys: pa.Table, columns: list[str]) -> list[pa.RecordBatch]:
    """The rows of `batches` whose key `keys` does not hold."""
    batches = [b for b in batches if b.num_rows]
    if not batches or not keys.num_rows:
        return batches
    rows = pa.Table.from_batches(batches)
    keys = keys.cast(rows.select(columns).schema)
    kept = rows.join(keys.group_by(columns).aggregate([]), keys=columns, join_type="left anti", use_threads=False)
    return kept.select(rows.column_names).cast(rows.schema).to_batches()  # (a join drops NOT NULL)


def _in_key_order(ts, batches: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Rows of files that hold no key twice between them, as one sorted run."""
    return _in_order(batches, ts.file_key)


def _in_order(batches: list[pa.RecordBatch], columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The rows of `batches` sorted by `columns` (nulls first, as the merge orders keys), in
    batches of the read size (a bucket's rows in memory: Java sorts them in an external buffer)."""
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return iter(())
    table = pa.Table.from_batches(batches)
    table = table.take(sort_indices(table, [(c, "ascending") for c in columns], "at_start"))
    return iter(table.combine_chunks().to_batches(max_chunksize=READ_BATCH_ROWS))


def _rows_at(directory: TableDirectory, files: list[DataFileMeta], found: dict[str, np.ndarray]
             ) -> Iterator[pa.RecordBatch]:
    """The replaced rows of these key-disjoint files, in key order (a sorted run)."""
    for meta in files:
        yield from read_rows_at(directory.storage, meta, found[meta.file_name]).to_batches()


def restored(reader, ts, advance: Callable[[int], None] | None) -> Iterator[pa.RecordBatch]:
    """The merged batches in the data-file layout, reporting input rows as they are merged."""
    seen = 0
    for batch in reader:
        rows_in = reader.stats.rows_in
        if advance is not None:
            advance(rows_in - seen)
        seen = rows_in
        yield ts.restore_key_columns(batch)
    if advance is not None:
        advance(reader.stats.rows_in - seen)

