"""Cutting a bucket's plan into pieces and joining pieces: `split_bucket` cuts a large
primary-key bucket into ranges of its first key column from row-group statistics (one Spark
task each); `combine_buckets` reads several buckets of one partition as one (their keys are
disjoint)."""
from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..directory import TableDirectory
from ..files import DataFileMeta, file_metadata
from ..sections import interval_partition
from .model import BucketPlan

__all__ = ["combine_buckets", "split_bucket", "split_by_file"]

def combine_buckets(buckets: Sequence[BucketPlan]) -> BucketPlan:
    """Several buckets of one partition read as one: their keys are disjoint, so the union
    of their files, partitioned into sections again, merges in one pass and gives each
    bucket's rows (in one key order) — cheaper than merging each and merging the results."""
    files = [f for b in buckets for f in b.files]
    row_groups = {name: groups for b in buckets for name, groups in b.row_groups.items()}
    return BucketPlan(buckets[0].partition, buckets[0].bucket, interval_partition(files), row_groups)


def split_by_file(bucket: BucketPlan) -> tuple[list[BucketPlan], BucketPlan | None]:
    """A bucket with resolved files (deletion vectors) as one plan per file read alone (its
    rows are final: a task each, in any order) and the plan of the sections still merged (None
    if there are none).  A bucket without resolved files is returned whole, as the rest."""
    if bucket.key_range is not None or not any(m.resolved for m in bucket.files):
        return [], bucket
    alone, merged = [], []
    for section in bucket.sections:
        if len(section) == 1 and len(section[0]) == 1:
            m = section[0][0]
            groups = {m.file_name: bucket.row_groups[m.file_name]} if m.file_name in bucket.row_groups else {}
            alone.append(BucketPlan(bucket.partition, bucket.bucket, [section], groups))
        else:
            merged.append(section)
    names = {m.file_name for section in merged for run in section for m in run}
    rest = BucketPlan(bucket.partition, bucket.bucket, merged,
                      {n: g for n, g in bucket.row_groups.items() if n in names}) if merged else None
    return alone, rest


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
            metadata = file_metadata(directory.storage, meta)
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
