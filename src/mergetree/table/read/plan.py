"""Planning a read: which snapshot, columns and order, then which partitions, buckets, files and
row groups a filter can touch (partition, bucket, key-range, statistics and index pruning,
each step reporting what it removed), the files of a bucket cut into sections."""
from __future__ import annotations

import bisect
import datetime as dt
import itertools
from collections import defaultdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidArgumentError
from .. import filters as flt
from ..directory import TableDirectory
from ..files import DataFileMeta
from ..indexes.skipping import decide
from ..paimon.tables import buckets_for as paimon_buckets_for
from ..schema import KEY_PREFIX
from ..sections import interval_partition
from ..snapshots import Snapshot
from .keyorder import check_key_order
from .model import BucketPlan, OrderBy, PreparedRead, ReadPlan, ReadStats, requests_since
from .topn import checked_order_by, plan_top_n

__all__ = ["columns_for", "file_filter", "final_filter", "order_by_for", "plan_read", "prepare_read", "sections_of",
           "snapshot_for"]

def snapshot_for(directory: TableDirectory, snapshot: Any) -> Snapshot | None:
    """The snapshot a read asks for (None: the latest)."""
    if snapshot is None:
        return directory.latest_snapshot()
    if isinstance(snapshot, (str, dt.datetime)):
        return directory.store.resolve(snapshot)
    if isinstance(snapshot, bool) or not isinstance(snapshot, int):
        raise InvalidArgumentError(f"snapshot must be a snapshot id (an int), a tag name or a point in time (a "
                                   f"datetime or an ISO 8601 string), not {snapshot!r}")
    return directory.store.snapshot(snapshot)


def order_by_for(directory: TableDirectory, order_by: Any, limit: Any) -> tuple[OrderBy, int | None]:
    """Checked `order_by` ([(column, "asc"|"desc")], a column name, or a list of names) and `limit`."""
    return checked_order_by(order_by, limit, directory.schema.schema)


def plan_read(directory: TableDirectory, f: flt.Filter, snapshot: Any, order_by: OrderBy | None = None,
              limit: int | None = None) -> ReadPlan:
    """Which files (and row groups) a read with the normalized filter `f` touches."""
    ts = directory.schema
    root = directory.storage
    requests_before = root.requests.counts()
    snap = snapshot_for(directory, snapshot)
    live = directory.live_files(snap)
    if directory.options.level0_hidden:  # as Paimon's batch reads: level 0 waits for compaction
        live = {name: e for name, e in live.items() if e.file.level > 0}
    plan = ReadPlan(snap.id if snap else None, files_total=len(live),
                    bytes_total=sum(e.file.file_size for e in live.values()))
    steps = plan.steps
    by_bucket: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    for e in live.values():
        by_bucket[(e.partition, e.bucket)].append(e.file)
    wanted_buckets = _buckets_for(directory, f)
    key_columns = set(ts.primary_key) | set(ts.partition_by)
    key_filter = flt.restrict(f, key_columns) if ts.has_primary_key else f
    partition_filter = flt.restrict(f, set(ts.partition_by))
    partitions_seen, partitions_kept = set(), set()
    group_counts: dict[str, int] = {}  # file name -> its row groups, where an index chose some
    for (partition, bucket), files in sorted(by_bucket.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        partitions_seen.add(partition)
        if not flt.may_match(partition_filter, {c: (v, v, int(v is None)) for c, v in zip(ts.partition_by, partition)},
                             1):
            steps["partition"].add(files)
            continue
        partitions_kept.add(partition)
        if wanted_buckets is not None and bucket not in wanted_buckets:
            plan.pruned_buckets += 1
            steps["bucket"].add(files)
            continue
        row_groups: dict[str, frozenset[int]] = {}
        kept = []
        for m in files:  # key predicates (every predicate, in an append table) hold for every version
            verdict = decide(root, m, key_filter)
            if not verdict.keep:
                steps[verdict.removed_by or "min/max"].add([m])
                continue
            if verdict.row_groups is not None:
                row_groups[m.file_name] = verdict.row_groups
                group_counts[m.file_name] = verdict.row_group_count
            kept.append(m)
        sections = sections_of(kept) if ts.has_primary_key else ([[[m] for m in kept]] if kept else [])
        final = []
        for section in sections:
            if ts.has_primary_key and len(section) == 1 and len(section[0]) == 1:
                # nothing overlaps this file: its rows are final, so value predicates may skip it too
                m = section[0][0]
                verdict = decide(root, m, f)
                if not verdict.keep:
                    steps[verdict.removed_by or "min/max"].add([m])
                    continue
                if verdict.row_groups is not None:
                    previous = row_groups.get(m.file_name)
                    row_groups[m.file_name] = verdict.row_groups if previous is None else previous & verdict.row_groups
                    group_counts[m.file_name] = verdict.row_group_count
            final.append(section)
        if final:
            plan.buckets.append(BucketPlan(partition, bucket, final, row_groups))
    plan.pruned_partitions = len(partitions_seen - partitions_kept)
    plan.row_groups_skipped = sum(group_counts[m.file_name] - len(b.row_groups[m.file_name])
                                  for b in plan.buckets for m in b.files if m.file_name in b.row_groups)
    if order_by and limit is not None and f is None:
        plan_top_n(directory, plan, order_by, limit)
    plan.requests = requests_since(requests_before, root.requests.counts())
    return plan


def sections_of(files: list[DataFileMeta]) -> list[list[list[DataFileMeta]]]:
    """A primary-key bucket's files as sections to read.  Without resolved files (no deletion
    vectors): key-disjoint sections of overlapping runs, each merged.  With them: a resolved
    file whose key range meets no unresolved file is a section of its own, read alone with its
    deletion vector (no other resolved file repeats one of its live keys, and no unresolved
    file can hold one); the unresolved files and the resolved files they overlap are sectioned
    and merged as before, deletion vectors applied to each file first.  Sections come in the
    order of their smallest key."""
    resolved = [m for m in files if m.resolved]
    if not resolved:
        return interval_partition(files)
    pending = sorted((m for m in files if not m.resolved), key=lambda m: (m.min_key, m.max_key))
    lows = [m.min_key for m in pending]
    reach = list(itertools.accumulate((m.max_key for m in pending), max))  # largest max_key so far

    def overlaps_pending(m: DataFileMeta) -> bool:
        # pending files starting at or before m's end: the furthest any of them reaches
        i = bisect.bisect_right(lows, m.max_key)
        return i > 0 and reach[i - 1] >= m.min_key
    merged = [m for m in resolved if overlaps_pending(m)]
    alone = [m for m in resolved if not overlaps_pending(m)]
    sections = interval_partition(pending + merged) + [[[m]] for m in alone]
    return sorted(sections, key=lambda s: min(run[0].min_key for run in s))


def _buckets_for(directory: TableDirectory, f: flt.Filter) -> set[int] | None:
    """Buckets that can hold matching rows, from = / IN on every bucket-key column."""
    return paimon_buckets_for(directory.schema.paimon, f)


def columns_for(directory: TableDirectory, columns: Any) -> list[str]:
    """The columns a read asks for (None: all), checked."""
    names = directory.schema.schema.names
    if columns is None:
        return names
    if isinstance(columns, str):
        columns = [columns]
    if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
        raise InvalidArgumentError(f"columns must be a column name or a list of names, not {columns!r}")
    for c in columns:
        if c not in names:
            raise InvalidArgumentError(f"table has no column {c!r}; columns: {names}")
    if len(set(columns)) != len(columns):
        raise InvalidArgumentError(f"columns names a column twice: {list(columns)}")
    return list(columns)


def prepare_read(directory: TableDirectory, columns: Any, filter: flt.Filter, snapshot: Any,
                 order_by: Any = None, limit: Any = None, sorted_: Any = False) -> PreparedRead:
    schema = directory.schema.schema
    names = columns_for(directory, columns)
    f = flt.normalize(filter, schema)
    order, limit = order_by_for(directory, order_by, limit)
    in_key_order = check_key_order(directory, sorted_, order)
    plan = plan_read(directory, f, snapshot, order, limit)
    return PreparedRead(names, pa.schema([schema.field(c) for c in names]), flt.to_expression(f, schema),
                        file_filter(directory, f), plan, order, limit,
                        ReadStats(plan.files_total, plan.bytes_total), f, final_filter(directory, f), in_key_order)


def final_filter(directory: TableDirectory, f: flt.Filter) -> pc.Expression | None:
    """The whole filter over a primary-key table's data files (key columns as their `_KEY_`
    columns): exact for a sorted run read alone, whose rows are final (a retraction it keeps
    is dropped after, as it would be anyway)."""
    ts = directory.schema
    if f is None or not ts.has_primary_key or flt.columns_of(f) is None:  # None: a pyarrow expression
        return None
    return flt.to_expression(flt.rename(f, {k: KEY_PREFIX + k for k in ts.primary_key}), ts.file_schema)


def file_filter(directory: TableDirectory, f: flt.Filter) -> pc.Expression | None:
    """Key predicates hold for every version of a key, so they may filter rows inside each
    file before the merge (and skip row groups by their statistics)."""
    ts = directory.schema
    key_filter = flt.restrict(f, set(ts.primary_key)) if ts.has_primary_key else None
    if key_filter is None:
        return None
    return flt.to_expression(flt.rename(key_filter, {k: KEY_PREFIX + k for k in ts.primary_key}), ts.file_schema)
