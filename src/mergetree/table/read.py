"""The read path, shared by `Table.read`/`Table.scan`/`Table.plan` and the Spark data source:
plan which files (and row groups) a filtered read touches, reporting what each pruning step
removed, then merge each bucket's sections on read.  Top-N reads (`order_by` + `limit`) read
files in the order of their statistics and stop as soon as no unread file can hold a better
row."""
from __future__ import annotations

import bisect
import itertools
import os
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..merge import merge
from ..merge.arrow_input import sort_indices
from ..merge.assemble import RowSelection
from ..merge.row_kind import retraction_kinds
from . import filters as flt
from .buckets import bucket_ids
from .compaction.planner import interval_partition
from .directory import TableDirectory
from .files import DataFileMeta, batch_rows_for, file_metadata, read_run
from .indexes.skipping import STEPS, decide
from .schema import KEY_PREFIX, KIND_COLUMN, SEQUENCE_COLUMN, TableSchema
from .snapshots import Snapshot
from .type_policy import require

__all__ = ["BucketPlan", "OrderBy", "PreparedRead", "PruneStep", "ReadPlan", "ReadStats", "combine_buckets",
           "order_by_for", "ordered_by_file", "plan_read", "prepare_read", "read_bucket", "read_table", "scan_table",
           "select_bucket", "snapshot_for", "split_bucket", "top_rows"]

OrderBy = list[tuple[str, str]]  # [(column, "asc" | "desc")]


@dataclass
class BucketPlan:
    """The files a read of one bucket touches, grouped into sections of overlapping key ranges,
    and the row groups an index restricted some of them to."""

    partition: tuple
    bucket: int
    sections: list[list[list[DataFileMeta]]]  # section -> sorted runs -> files in key order
    row_groups: dict[str, frozenset[int]] = field(default_factory=dict)  # file name -> row groups to read
    # only keys whose first primary-key column is in [low, high) (None: unbounded): one of the
    # pieces `split_bucket` cut a large bucket into
    key_range: tuple[Any, Any] | None = None

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for section in self.sections for run in section for f in run]

    @property
    def bytes(self) -> int:
        return sum(m.file_size for m in self.files)


def combine_buckets(buckets: Sequence[BucketPlan]) -> BucketPlan:
    """Several buckets of one partition read as one: their keys are disjoint, so the union
    of their files, partitioned into sections again, merges in one pass and gives each
    bucket's rows (in one key order) — cheaper than merging each and merging the results."""
    files = [f for b in buckets for f in b.files]
    row_groups = {name: groups for b in buckets for name, groups in b.row_groups.items()}
    return BucketPlan(buckets[0].partition, buckets[0].bucket, interval_partition(files), row_groups)


@dataclass
class PruneStep:
    """What one pruning step removed."""

    files: int = 0
    bytes: int = 0

    def add(self, files: Sequence[DataFileMeta]) -> None:
        self.files += len(files)
        self.bytes += sum(m.file_size for m in files)


@dataclass
class ReadPlan:
    """Which files a read touches, and what each pruning step removed (`steps`, in the order
    of `skipping.STEPS`; Top-N may remove more files while the read runs)."""

    snapshot_id: int | None
    buckets: list[BucketPlan] = field(default_factory=list)
    files_total: int = 0
    bytes_total: int = 0
    pruned_partitions: int = 0
    pruned_buckets: int = 0
    steps: dict[str, PruneStep] = field(default_factory=lambda: {s: PruneStep() for s in STEPS})
    row_groups_skipped: int = 0

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for b in self.buckets for f in b.files]

    @property
    def pruned_files(self) -> int:
        return self.files_total - len(self.files)

    def explain(self) -> list[list[str]]:
        """The plan as table rows: each step and what it removed, then what is left to read."""
        rows = [["step", "files removed", "MiB removed"]]
        for name, step in self.steps.items():
            rows.append([name, f"{step.files:,}", f"{step.bytes / 2**20:.1f}"])
        left = self.files
        rows.append(["to read", f"{len(left):,} of {self.files_total:,}",
                     f"{sum(m.file_size for m in left) / 2**20:.1f} of {self.bytes_total / 2**20:.1f}"])
        return rows


@dataclass
class ReadStats:
    """What a read actually did (Top-N may stop before the plan's files are all read)."""

    files_total: int = 0
    bytes_total: int = 0
    files_read: int = 0
    bytes_read: int = 0
    rows_out: int = 0
    used_preaggregates: int = 0  # files answered from their pre-aggregates (Table.aggregate)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, files: Sequence[DataFileMeta]) -> None:
        with self._lock:
            self.files_read += len(files)
            self.bytes_read += sum(m.file_size for m in files)


def snapshot_for(directory: TableDirectory, snapshot: Any) -> Snapshot | None:
    """The snapshot a read asks for (None: the latest)."""
    if snapshot is None:
        return directory.latest_snapshot()
    if isinstance(snapshot, bool) or not isinstance(snapshot, int):
        raise InvalidArgumentError(f"snapshot must be a snapshot id (an int), not {snapshot!r}")
    return directory.store.snapshot(snapshot)


def order_by_for(directory: TableDirectory, order_by: Any, limit: Any) -> tuple[OrderBy, int | None]:
    """Checked `order_by` ([(column, "asc"|"desc")], a column name, or a list of names) and `limit`."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgumentError(f"limit must be a non-negative integer or None, not {limit!r}")
    if order_by is None:
        return [], limit
    items = [order_by] if isinstance(order_by, (str, tuple)) else order_by
    if not isinstance(items, list) or not items:
        raise InvalidArgumentError(f"order_by must be a column, (column, 'asc'|'desc'), or a list of them, "
                                   f"not {order_by!r}")
    out: OrderBy = []
    names = directory.schema.schema.names
    for item in items:
        column, direction = (item, "asc") if isinstance(item, str) else (tuple(item) + ("asc",))[:2]
        if not isinstance(column, str) or column not in names:
            raise InvalidArgumentError(f"order_by names {column!r}, which is not a column; columns: {names}")
        if direction not in ("asc", "desc"):
            raise InvalidArgumentError(f"order_by direction must be 'asc' or 'desc', not {direction!r}")
        require(column, directory.schema.schema.field(column).type, "order")
        out.append((column, direction))
    return out, limit


def _best(meta: DataFileMeta, column: str, direction: str) -> tuple[int, Any]:
    """A sort key for reading files in Top-N order: the best value the file can offer."""
    lo, hi, _ = meta.stats.get(column, (None, None, 0))
    value = lo if direction == "asc" else hi
    if value is None:
        return (1, 0)  # only nulls (or no statistics): nulls sort last
    return (0, value)


def plan_read(directory: TableDirectory, f: flt.Filter, snapshot: Any, order_by: OrderBy | None = None,
              limit: int | None = None) -> ReadPlan:
    """Which files (and row groups) a read with the normalized filter `f` touches."""
    ts = directory.schema
    root = directory.path
    snap = snapshot_for(directory, snapshot)
    live = directory.live_files(snap)
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
            kept.append(m)
        sections = interval_partition(kept) if ts.has_primary_key else ([[[m] for m in kept]] if kept else [])
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
            final.append(section)
        if final:
            plan.buckets.append(BucketPlan(partition, bucket, final, row_groups))
    plan.pruned_partitions = len(partitions_seen - partitions_kept)
    plan.row_groups_skipped = sum(
        max((m.row_count + 8191) // 8192, 1) - len(b.row_groups[m.file_name])
        for b in plan.buckets for m in b.files if m.file_name in b.row_groups)
    if order_by and limit is not None and f is None:
        _plan_top_n(directory, plan, order_by, limit)
    return plan


def _final_units(directory: TableDirectory, plan: ReadPlan, column: str) -> tuple[list, list]:
    """(must, optional): what a Top-N read on `column` always reads (several overlapping runs
    of a primary-key table; files without statistics for the column), and single files whose
    rows are final, ranked by their statistics."""
    must: list = []
    optional: list = []
    for b in plan.buckets:
        for section in b.sections:
            if directory.schema.has_primary_key and not (len(section) == 1 and len(section[0]) == 1):
                must.append((b, section))
                continue
            for run in section:
                lo, _, nulls = run[0].stats.get(column, (None, None, 0))
                known = column in run[0].stats and (lo is not None or nulls == run[0].row_count)
                (optional if known else must).append((b, [run]))
    return must, optional


def _ranked(units: list, column: str, direction: str) -> list:
    """Final single-file units in Top-N reading order: best value first, files of nulls last."""
    valued = [u for u in units if _best(u[1][0][0], column, direction)[0] == 0]
    nulls = [u for u in units if _best(u[1][0][0], column, direction)[0] == 1]
    valued.sort(key=lambda u: _best(u[1][0][0], column, direction)[1], reverse=direction == "desc")
    return valued + nulls


def _plan_top_n(directory: TableDirectory, plan: ReadPlan, order_by: OrderBy, limit: int) -> None:
    """Without a row filter, file statistics alone bound a Top-N read: the best files that
    together hold `limit` rows set a threshold, and a file whose best value is worse cannot
    contribute.  (With a filter, the read decides the same while it runs.)  Merged sections
    count no rows here: their row count after the merge is unknown."""
    column, direction = order_by[0]
    _, optional = _final_units(directory, plan, column)
    if any(_best(run[0][0], column, direction)[0] == 1 for _, run in optional):
        return
    ranked = _ranked(optional, column, direction)
    rows, threshold = 0, None
    for _, run in ranked:
        if rows >= limit:
            break
        m = run[0][0]
        lo, hi, nulls = m.stats[column]
        # only rows with a value in the column count: nulls sort last (retractions may be among
        # the nulls, so this may undercount, which only makes the bound looser)
        rows += max(m.row_count - nulls - m.delete_count, 0)
        edge = hi if direction == "asc" else lo
        if threshold is None:
            threshold = edge
        else:
            threshold = max(threshold, edge) if direction == "asc" else min(threshold, edge)
    if rows < limit or threshold is None:
        return
    drop = {run[0][0].file_name for _, run in ranked
            if _cannot_beat(run[0][0], column, direction, threshold)}
    if not drop:
        return
    plan.steps["top-n"].add([m for b in plan.buckets for m in b.files if m.file_name in drop])
    for b in plan.buckets:
        b.sections = [[run for run in section if not (len(run) == 1 and run[0].file_name in drop)]
                      for section in b.sections]
        b.sections = [s for s in b.sections if s]
    plan.buckets = [b for b in plan.buckets if b.sections]


def _buckets_for(directory: TableDirectory, f: flt.Filter) -> set[int] | None:
    """Buckets that can hold matching rows, from = / IN on every bucket-key column."""
    ts = directory.schema
    if ts.buckets == 1 or not ts.bucket_key:
        return None
    choices = [flt.equality_values(f, c) for c in ts.bucket_key]
    if any(c is None for c in choices):
        return None
    combos = list(itertools.product(*choices))  # type: ignore[arg-type]
    if not combos:
        return set()
    if len(combos) > 10_000:
        return None
    probe = pa.table({c: pa.array([combo[i] for combo in combos], type=ts.schema.field(c).type)
                      for i, c in enumerate(ts.bucket_key)})
    return set(int(b) for b in bucket_ids(probe, list(ts.bucket_key), ts.buckets))


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


@dataclass(frozen=True)
class PreparedRead:
    """A checked read request: the columns and their schema, the filter as rows see it
    (`expression`) and as each data file's key columns see it (`file_filter`), the order
    and limit, the plan, and the statistics the read fills in."""

    columns: list[str]
    output_schema: pa.Schema
    expression: pc.Expression | None
    file_filter: pc.Expression | None
    plan: ReadPlan
    order_by: OrderBy = field(default_factory=list)
    limit: int | None = None
    stats: ReadStats = field(default_factory=ReadStats)
    filter: flt.Filter = None  # normalized (what the query log records)


def prepare_read(directory: TableDirectory, columns: Any, filter: flt.Filter, snapshot: Any,
                 order_by: Any = None, limit: Any = None) -> PreparedRead:
    schema = directory.schema.schema
    names = columns_for(directory, columns)
    f = flt.normalize(filter, schema)
    order, limit = order_by_for(directory, order_by, limit)
    plan = plan_read(directory, f, snapshot, order, limit)
    return PreparedRead(names, pa.schema([schema.field(c) for c in names]), flt.to_expression(f, schema),
                        file_filter(directory, f), plan, order, limit,
                        ReadStats(plan.files_total, plan.bytes_total), f)


def file_filter(directory: TableDirectory, f: flt.Filter) -> pc.Expression | None:
    """Key predicates hold for every version of a key, so they may filter rows inside each
    file before the merge (and skip row groups by their statistics)."""
    ts = directory.schema
    key_filter = flt.restrict(f, set(ts.primary_key)) if ts.has_primary_key else None
    if key_filter is None:
        return None
    return flt.to_expression(flt.rename(key_filter, {k: KEY_PREFIX + k for k in ts.primary_key}), ts.file_schema)


def split_bucket(directory: TableDirectory, bucket: BucketPlan, parts: int) -> list[BucketPlan]:
    """A primary-key bucket cut into up to `parts` pieces by ranges of its first primary-key
    column, of about equal rows.  The cuts come from the row groups' key statistics (Parquet
    min/max, weighted by rows: spread evenly between min and max for integers, half below a
    cut that splits a group otherwise), so a bucket of overlapping level-0 runs splits as well
    as a compacted one.  Every version of a key has the same first column, so each key is
    merged whole in exactly one piece: any cuts give the right answer, good cuts balance the
    pieces.  Each piece reads only the files and row groups its range touches, and drops the
    rows of boundary row groups outside it after the merge.  A bucket keyed first by a float
    is read whole: the merge orders floats totally (-0.0 < 0.0, NaN last), Parquet statistics
    and Arrow comparisons do not."""
    ts = directory.schema
    if parts <= 1 or not ts.has_primary_key or bucket.key_range is not None:
        return [bucket]
    dtype = ts.file_schema.field(ts.file_key[0]).type
    if pa.types.is_floating(dtype):
        return [bucket]
    stats = _row_group_ranges(directory, bucket.files)
    groups = [g for ranges in stats.values() for g in ranges]
    try:
        cuts = _numeric_cuts(groups, parts) if pa.types.is_integer(dtype) else _ordered_cuts(groups, parts)
        for value in cuts:
            pa.scalar(value, dtype)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return [bucket]  # statistics Python cannot order or the key type cannot take back: read it whole
    if not cuts:
        return [bucket]
    bounds = [None, *cuts, None]
    return [piece for low, high in itertools.pairwise(bounds)
            if (piece := _restricted(bucket, stats, low, high)).sections]


def _row_group_ranges(directory: TableDirectory, files: list[DataFileMeta]) -> dict[str, list[tuple[Any, Any, int]]]:
    """File name -> (min, max, rows) of the first key column in each of its row groups (one
    entry for the whole file, from its manifest, when the statistics are not usable)."""
    column = directory.schema.file_key[0]
    out: dict[str, list[tuple[Any, Any, int]]] = {}
    for meta in files:
        try:
            metadata = file_metadata(directory.path, meta)
            index = metadata.schema.names.index(column)
            groups = [metadata.row_group(i) for i in range(metadata.num_row_groups)]
            stats = [g.column(index).statistics for g in groups]
            if all(st is not None and st.has_min_max for st in stats):
                out[meta.file_name] = [(st.min, st.max, g.num_rows) for st, g in zip(stats, groups)]
                continue
        except (OSError, ValueError, pa.ArrowException):
            pass  # the read itself reports a damaged file; cuts only need some values
        out[meta.file_name] = []
        if meta.min_key:
            out[meta.file_name].append((meta.min_key[0], meta.max_key[0], meta.row_count))
    return out


def _numeric_cuts(groups: list[tuple[Any, Any, int]], parts: int) -> list[Any]:
    """Cuts for integer keys: rows taken as spread evenly over each group's [min, max]; each
    cut found by bisection on the estimated rows below it."""
    if not groups:
        return []
    lo = np.array([g[0] for g in groups], dtype=np.float64)
    hi = np.array([g[1] for g in groups], dtype=np.float64)
    rows = np.array([g[2] for g in groups], dtype=np.float64)
    width = np.where(hi > lo, hi - lo, 1.0)

    def below(v: float) -> float:
        fraction = np.where(hi > lo, np.clip((v - lo) / width, 0.0, 1.0), (v > lo).astype(np.float64))
        return float((rows * fraction).sum())
    total = rows.sum()
    cuts: list[Any] = []
    for j in range(1, parts):
        a, b = float(lo.min()), float(hi.max())
        for _ in range(64):
            middle = (a + b) / 2
            a, b = (middle, b) if below(middle) < total * j / parts else (a, middle)
        value = int(np.ceil(b))
        if value > lo.min() and (not cuts or value > cuts[-1]):
            cuts.append(value)
    return cuts


def _ordered_cuts(groups: list[tuple[Any, Any, int]], parts: int) -> list[Any]:
    """Cuts for keys that only order (strings, dates, ...): candidates are the groups' bounds;
    a group a cut falls inside counts half below it."""
    if not groups:
        return []
    by_min = sorted(groups, key=lambda g: g[0])
    by_max = sorted(groups, key=lambda g: g[1])
    mins = [g[0] for g in by_min]
    maxes = [g[1] for g in by_max]
    min_rows = list(itertools.accumulate((g[2] for g in by_min), initial=0))
    max_rows = list(itertools.accumulate((g[2] for g in by_max), initial=0))
    total = min_rows[-1]
    cuts: list[Any] = []
    candidates = sorted(set(mins) | set(maxes))
    j = 1
    for v in candidates:
        if j >= parts:
            break
        entirely = max_rows[bisect.bisect_left(maxes, v)]  # groups with max < v
        started = min_rows[bisect.bisect_left(mins, v)]  # groups with min < v
        if (entirely + started) / 2 >= total * j / parts and v > mins[0]:
            cuts.append(v)
            while j < parts and (entirely + started) / 2 >= total * j / parts:
                j += 1
    return cuts


def _restricted(bucket: BucketPlan, stats: dict[str, list[tuple[Any, Any, int]]], low: Any,
                high: Any) -> BucketPlan:
    """The bucket's plan for first-key values in [low, high): files and row groups that cannot
    hold one go.  Row groups are only narrowed for files whose statistics are per row group;
    a file known only by its manifest is read whole (the merge output is trimmed anyway)."""
    def inside(lo: Any, hi: Any) -> bool:
        return (low is None or hi >= low) and (high is None or lo < high)
    row_groups = dict(bucket.row_groups)
    sections = []
    for section in bucket.sections:
        runs = []
        for run in section:
            kept = []
            for m in run:
                if m.min_key and not inside(m.min_key[0], m.max_key[0]):
                    continue
                ranges = stats.get(m.file_name, [])
                if sum(rows for _, _, rows in ranges) == m.row_count and len(ranges) > 1:
                    wanted = frozenset(i for i, (lo, hi, _) in enumerate(ranges) if inside(lo, hi))
                    if not wanted:
                        continue
                    previous = row_groups.get(m.file_name)
                    row_groups[m.file_name] = wanted if previous is None else previous & wanted
                kept.append(m)
            if kept:
                runs.append(kept)
        if runs:
            sections.append(runs)
    return BucketPlan(bucket.partition, bucket.bucket, sections, row_groups, (low, high))


def _in_range(directory: TableDirectory, batch: pa.RecordBatch, key_range: tuple[Any, Any] | None
              ) -> pa.RecordBatch:
    """The rows of a merged batch (in key order) whose first key column is in the range."""
    if key_range is None or batch.num_rows == 0:
        return batch
    low, high = key_range
    column = batch.column(directory.schema.primary_key[0])
    first, last = column[0].as_py(), column[batch.num_rows - 1].as_py()
    if (low is None or first >= low) and (high is None or last < high):
        return batch  # the common case: the whole batch is inside
    keep = None
    if low is not None:
        keep = pc.greater_equal(column, pa.scalar(low, column.type))
    if high is not None:
        below = pc.less(column, pa.scalar(high, column.type))
        keep = below if keep is None else pc.and_(keep, below)
    return batch.filter(keep)


def read_bucket(directory: TableDirectory, bucket: BucketPlan, columns: list[str],
                expression: pc.Expression | None, key_filter: pc.Expression | None,
                stats: ReadStats | None = None,
                sections: list[list[list[DataFileMeta]]] | None = None,
                merge_threads: int = 1) -> Iterator[pa.RecordBatch]:
    """One bucket's merged rows (in key order), filtered, in the given columns; a section of
    several runs merges in `merge_threads` threads (its runs are read into memory first)."""
    out_schema = pa.schema([directory.schema.schema.field(c) for c in columns])
    # without a row filter only the asked columns are decoded (every engine folds each
    # column on its own); a filter may name any column, so then all are read
    needed = columns if expression is None else None
    if bucket.key_range is not None and needed is not None:
        # the range is cut on the first key column: it must come out of the merge
        needed = list(dict.fromkeys([*needed, directory.schema.primary_key[0]]))
    for section in bucket.sections if sections is None else sections:
        if stats is not None:
            stats.count([m for run in section for m in run])
        for selection in _select_section(directory, section, key_filter, bucket.row_groups, needed, merge_threads):
            if not selection.num_rows:
                continue
            merged = selection.gather()
            batch = _in_range(directory, merged, bucket.key_range)
            if expression is None:
                out = batch.select(columns)
                if out.num_rows:
                    yield pa.RecordBatch.from_arrays(out.columns, schema=out_schema)
                continue
            for out in pa.Table.from_batches([batch]).filter(expression).select(columns).to_batches():
                if out.num_rows:
                    yield pa.RecordBatch.from_arrays(out.columns, schema=out_schema)


def select_bucket(directory: TableDirectory, bucket: BucketPlan, columns: list[str]) -> Iterator[RowSelection]:
    """One bucket's merged rows (in key order) as selections of the decoded file batches,
    their columns named and typed as the table's `columns`, not copied yet: a consumer
    that keeps only some rows (a join) copies just those.  No filter, no key range."""
    if bucket.key_range is not None:
        raise InvalidArgumentError("select_bucket reads whole buckets, not key ranges of them")
    for section in bucket.sections:
        yield from _select_section(directory, section, None, bucket.row_groups, columns)


def _select_section(directory: TableDirectory, section: list[list[DataFileMeta]], key_filter: pc.Expression | None,
                    row_groups: dict[str, frozenset[int]],
                    needed: list[str] | None = None, merge_threads: int = 1) -> Iterator[RowSelection]:
    """The merged rows of one section as selections whose batches hold table columns (only
    the `needed` ones, when given), retractions dropped."""
    ts = directory.schema
    wanted = None if needed is None else set(needed)
    names = ts.schema.names if wanted is None else [c for c in ts.schema.names if c in wanted]
    if not ts.has_primary_key:
        for run in section:
            for batch in read_run(directory.path, run, columns=None if needed is None else names,
                                  row_groups=row_groups):
                yield RowSelection.of_batch(batch)
        return
    # a key column's value copy is not read: the `_KEY_` column holds the same value (and is
    # the truth after a merge), so it stands in for it
    primary_key = set(ts.primary_key)
    values = [n for n in names if n not in primary_key]
    # the manifest counts each file's retractions: without any, the kind column changes nothing
    kinds = [KIND_COLUMN] if any(m.delete_count for run in section for m in run) else []
    if len(section) == 1:  # one sorted run: rows are final; only retractions go
        for batch in read_run(directory.path, section[0], columns=ts.file_key + kinds + values,
                              row_filter=key_filter, row_groups=row_groups):
            if kinds:
                batch = batch.filter(pc.invert(pc.is_in(batch.column(KIND_COLUMN), retraction_kinds())))
            yield RowSelection.of_batch(_table_columns(ts, batch, names))
        return
    batch_rows = batch_rows_for(len(section))
    if ordered_by_file(section):  # each file's rows take its newest sequence number: the same order, nothing decoded
        runs = [_with_file_sequence(directory.path, run, ts.file_key + kinds + values, key_filter, row_groups,
                                    batch_rows) for run in section]
    else:
        columns = ts.file_key + [SEQUENCE_COLUMN] + kinds + values
        runs = [read_run(directory.path, run, columns=columns, row_filter=key_filter, row_groups=row_groups,
                         batch_rows=batch_rows) for run in section]
    aggregations = {c: f for c, f in (directory.options.aggregations or {}).items() if c in names}
    reader = merge(runs, ts.file_key, sequence=SEQUENCE_COLUMN, kind=KIND_COLUMN if kinds else None,
                   engine=ts.merge_engine, aggregations=aggregations or None, threads=merge_threads)
    for selection in reader.selections():
        yield selection.map_pieces(lambda batch: _table_columns(ts, batch, names))


def ordered_by_file(section: Sequence[Sequence[DataFileMeta]]) -> bool:
    """Can a merge of these runs order versions by their files alone?  A key's versions are
    in different runs of one (partition, bucket) directory; if, in every directory, the runs'
    sequence ranges do not overlap, every version of a key in a newer run has a higher
    sequence number than every one in an older run, so each file's highest sequence number
    stands in for its rows' own (and that column need not be decoded)."""
    ranges: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for run in section:
        spans: dict[str, tuple[int, int]] = {}
        for m in run:
            where = os.path.dirname(m.file_name)
            low, high = spans.get(where, (m.min_seq, m.max_seq))
            spans[where] = (min(low, m.min_seq), max(high, m.max_seq))
        for where, span in spans.items():
            ranges[where].append(span)
    for ordered in ranges.values():
        ordered.sort()
        if any(high >= low for (_, high), (low, _) in itertools.pairwise(ordered)):
            return False
    return True


def _with_file_sequence(root: str, run: list[DataFileMeta], columns: list[str], key_filter: pc.Expression | None,
                        row_groups: dict[str, frozenset[int]], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """A run's batches with a sequence column holding each file's highest sequence number."""
    field_ = pa.field(SEQUENCE_COLUMN, pa.int64(), nullable=False)
    for meta in run:
        for batch in read_run(root, [meta], columns=columns, row_filter=key_filter, row_groups=row_groups,
                              batch_rows=batch_rows):
            sequence = pa.array(np.full(batch.num_rows, meta.max_seq, dtype=np.int64))
            yield batch.add_column(0, field_, sequence)


def _table_columns(ts: TableSchema, batch: pa.RecordBatch, names: list[str]) -> pa.RecordBatch:
    """The table's `names` columns of a file batch, key columns from their `_KEY_` columns."""
    primary_key = set(ts.primary_key)
    columns = [batch.column(KEY_PREFIX + n if n in primary_key else n) for n in names]
    return pa.RecordBatch.from_arrays(columns, names=names)


def top_rows(table: pa.Table, order_by: OrderBy, limit: int | None) -> pa.Table:
    """The first `limit` rows in `order_by` order (nulls last), ties broken by the other
    columns in schema order, so the answer never depends on which files were read."""
    keys = [(c, "ascending" if d == "asc" else "descending") for c, d in order_by]
    named = {c for c, _ in order_by}
    keys += [(f.name, "ascending") for f in table.schema if f.name not in named and not pa.types.is_nested(f.type)]
    ordered = table.take(sort_indices(table, keys, "at_end"))
    return ordered if limit is None else ordered.slice(0, limit)


def _read_top_n(directory: TableDirectory, read: PreparedRead) -> pa.Table:
    """Read files in the order of their best value in the first `order_by` column and stop
    once the `limit`-th row so far beats every unread file (files that could tie are read)."""
    column, direction = read.order_by[0]
    limit = read.limit
    must, optional = _final_units(directory, read.plan, column)
    read_columns = list(dict.fromkeys(read.columns + [c for c, _ in read.order_by]))
    schema = pa.schema([directory.schema.schema.field(c) for c in read_columns])

    def rows_of(bucket: BucketPlan, section: list) -> pa.Table:
        return pa.Table.from_batches(list(read_bucket(directory, bucket, read_columns, read.expression,
                                                      read.file_filter, read.stats, [section])), schema=schema)
    current = top_rows(pa.concat_tables([schema.empty_table()] + [rows_of(b, s) for b, s in must]),
                       read.order_by, limit)
    pending = _ranked(optional, column, direction)
    while pending:
        if limit is not None and current.num_rows >= limit:
            nth = current.column(column)[limit - 1].as_py() if limit else None
            # files come best first: once one cannot beat the limit-th row, no later one can
            if limit == 0 or _cannot_beat(pending[0][1][0][0], column, direction, nth):
                read.plan.steps["top-n"].add([run[0][0] for _, run in pending])
                break
        bucket, run = pending.pop(0)
        current = top_rows(pa.concat_tables([current, rows_of(bucket, run)]), read.order_by, limit)
    return current.select(read.columns)


def _cannot_beat(meta: DataFileMeta, column: str, direction: str, nth: Any) -> bool:
    """Can no row of this file come before a row whose `column` is `nth`?  (Ties can.)"""
    best = _best(meta, column, direction)
    if nth is None:
        return False  # the limit-th row is a null: any value, or another null, may tie or beat it
    if best[0] == 1:
        return True  # only nulls, which sort after every value
    try:
        return bool(best[1] > nth) if direction == "asc" else bool(best[1] < nth)
    except TypeError:
        return False


def read_table(directory: TableDirectory, read: PreparedRead, threads: int | None) -> pa.Table:
    """Every bucket of the plan, read in `threads` threads (default: one per CPU; the merge and
    Parquet decoding run without the GIL, so they overlap), bucket after bucket; or a Top-N
    read; or a read that stops after `limit` rows."""
    if read.order_by:
        out = _read_top_n(directory, read)
    elif read.limit is not None:
        out = _read_first(directory, read)
    else:
        out = _read_all(directory, read, threads)
    read.stats.rows_out = out.num_rows
    return out


def _read_all(directory: TableDirectory, read: PreparedRead, threads: int | None) -> pa.Table:
    buckets = read.plan.buckets

    workers = threads or os.cpu_count() or 1
    # fewer buckets than threads: the spare threads split each bucket's merge by key range
    merge_threads = max(1, workers // max(1, len(buckets)))

    def one(b: BucketPlan) -> list[pa.RecordBatch]:
        return list(read_bucket(directory, b, read.columns, read.expression, read.file_filter, read.stats,
                                merge_threads=merge_threads))
    if workers > 1 and len(buckets) > 1:
        with ThreadPoolExecutor(max_workers=min(workers, len(buckets))) as pool:
            batches = [batch for part in pool.map(one, buckets) for batch in part]
    else:
        batches = [batch for b in buckets for batch in one(b)]
    return pa.Table.from_batches(batches, schema=read.output_schema)


def _read_first(directory: TableDirectory, read: PreparedRead) -> pa.Table:
    """The first `limit` rows in read order (bucket by bucket); stops reading there."""
    batches: list[pa.RecordBatch] = []
    rows = 0
    limit = read.limit or 0
    for b in read.plan.buckets:
        for section in b.sections:
            if rows >= limit:
                break
            for batch in read_bucket(directory, b, read.columns, read.expression, read.file_filter, read.stats,
                                     [section]):
                batches.append(batch)
                rows += batch.num_rows
                if rows >= limit:
                    break
    return pa.Table.from_batches(batches, schema=read.output_schema).slice(0, limit)


def scan_table(directory: TableDirectory, read: PreparedRead) -> pa.RecordBatchReader:
    """A streaming read: one bucket section at a time."""
    if read.order_by or read.limit is not None:
        return pa.RecordBatchReader.from_batches(read.output_schema,
                                                 read_table(directory, read, None).to_batches())
    batches = (batch for b in read.plan.buckets
               for batch in read_bucket(directory, b, read.columns, read.expression, read.file_filter, read.stats))
    return pa.RecordBatchReader.from_batches(read.output_schema, batches)
