"""`Table.info()`: what a table is and how well it is organized, as data (the CLI prints it)."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from . import consumers
from .compaction.runner import bucket_levels
from .consumers import Consumer
from .directory import TableDirectory
from .display import count_text, size_text
from .files import DataFileMeta
from .levers.preaggregates import model_signature
from .snapshots import Snapshot

__all__ = ["BucketInfo", "ColumnClustering", "TableInfo", "bucket_infos", "clustering_depth", "table_info"]


@dataclass(frozen=True)
class BucketInfo:
    """One (partition, bucket) of a table: the sorted runs a read of it merges, its files per
    LSM level, rows (as stored: every version), bytes, and the rows its deletion vectors mark."""

    partition: tuple
    bucket: int
    sorted_runs: int
    files_per_level: tuple[int, ...]
    rows: int
    bytes: int
    deleted_rows: int = 0


@dataclass(frozen=True)
class ColumnClustering:
    """How tight the files are on one column: `depth` is the average number of files whose
    [min, max] range holds a value (taken at every file's min and max); 1.0 means every value
    lives in one file, the file count means no clustering at all."""

    column: str
    depth: float
    files: int


@dataclass(frozen=True)
class TableInfo:
    path: str
    primary_key: tuple[str, ...]
    partition_by: tuple[str, ...]
    buckets: int
    bucket_key: tuple[str, ...]
    merge_engine: str
    schema_id: int
    options: dict[str, str]
    snapshot_id: int | None
    files: int
    rows: int
    bytes: int
    clustering: tuple[str, ...] = ()
    strategy: str | None = None
    sort_within: tuple[str, ...] = ()
    column_clustering: list[ColumnClustering] = field(default_factory=list)
    # index coverage: kind -> (files that have it, files the options want it in)
    index_coverage: dict[str, tuple[int, int]] = field(default_factory=dict)
    bloom_columns: tuple[str, ...] = ()
    bitmap_columns: tuple[str, ...] = ()
    aggregate_models: dict[str, dict[str, Any]] = field(default_factory=dict)
    sorted_runs: dict[tuple, int] = field(default_factory=dict)  # (partition, bucket) -> sorted runs
    consumers: list[Consumer] = field(default_factory=list)  # by id
    damaged_consumers: dict[str, str] = field(default_factory=dict)  # id -> what is wrong with its file
    # expired snapshots whose changelog is kept (`changelog.*` retention): their ids, ascending
    kept_changelogs: list[int] = field(default_factory=list)

    def __repr__(self) -> str:
        shape = [f"primary_key={list(self.primary_key)}"] if self.primary_key else ["append"]
        if self.partition_by:
            shape.append(f"partition_by={list(self.partition_by)}")
        shape.append(f"buckets={self.buckets}")
        if self.primary_key and self.merge_engine != "deduplicate":
            shape.append(self.merge_engine)
        contents = "empty" if self.snapshot_id is None else (
            f"snapshot {self.snapshot_id}: {count_text(self.rows, 'row')} in {count_text(self.files, 'file')}, "
            f"{size_text(self.bytes)}")
        return f"TableInfo({self.path!r}, {', '.join(shape)}, {contents})"

    @property
    def max_sorted_runs(self) -> int:
        """The most sorted runs a read of one bucket merges."""
        return max(self.sorted_runs.values(), default=0)


def clustering_depth(files: list[DataFileMeta], column: str) -> ColumnClustering:
    """The average number of files whose statistics range holds a value of `column`, over
    the values at every file's min and max (files without a range for it are left out)."""
    ranges = [(m.stats[column][0], m.stats[column][1]) for m in files
              if column in m.stats and m.stats[column][0] is not None and m.stats[column][1] is not None]
    if not ranges:
        return ColumnClustering(column, 0.0, 0)
    try:
        lows = sorted(lo for lo, _ in ranges)
        highs = sorted(hi for _, hi in ranges)
        points = [v for r in ranges for v in r]
        # files holding p: those starting at or before p, minus those ending before p
        total = sum(bisect.bisect_right(lows, p) - bisect.bisect_left(highs, p) for p in points)
    except TypeError:  # values that do not compare (mixed types): no measure
        return ColumnClustering(column, 0.0, len(ranges))
    return ColumnClustering(column, total / len(points), len(ranges))


def table_info(directory: TableDirectory) -> TableInfo:
    ts = directory.schema
    options = directory.options
    snapshot = directory.latest_snapshot()
    live = [e.file for e in directory.live_files(snapshot).values()]
    clustering = options.clustering
    measured = list(clustering.columns) if clustering else []
    measured += [c for c in options.sort_within if c not in measured]
    coverage: dict[str, tuple[int, int]] = {}
    if options.bloom_columns:
        coverage["bloom"] = (sum(set(options.bloom_columns) <= m.bloom_columns() for m in live), len(live))
    if options.bitmap_columns:
        coverage["bitmap"] = (sum(set(options.bitmap_columns) <= m.bitmap_columns() for m in live), len(live))
    models = {}
    for name, model in options.aggregate_models.items():
        signature = model_signature(model)
        built = [b for m in live for b in [m.preaggregates().get(name)]
                 if b is not None and b.get("signature", signature) == signature]
        coverage[f"pre-aggregate {name}"] = (len(built), len(live))
        source = sum(b.get("source_rows", 0) for b in built)
        models[name] = {"group_by": list(model.group_by),
                        "measures": [f"{c}:{fn}" for c, fn in model.measures],
                        "rows_kept": (sum(b.get("rows", 0) for b in built) / source) if source else None}
    return TableInfo(
        directory.path, ts.primary_key, ts.partition_by, ts.buckets, ts.bucket_key, ts.merge_engine, ts.schema_id,
        dict(ts.options), snapshot.id if snapshot else None, len(live), sum(m.row_count for m in live),
        sum(m.file_size for m in live), clustering.columns if clustering else (),
        clustering.strategy if clustering else None, options.sort_within,
        [clustering_depth(live, c) for c in measured], coverage, options.bloom_columns, options.bitmap_columns,
        models, _sorted_runs(directory, snapshot),
        *consumers.survey(directory), directory.store.retained_changelog_ids())


def bucket_infos(directory: TableDirectory, snapshot: Snapshot | None = None) -> list[BucketInfo]:
    """Every (partition, bucket) holding files at `snapshot` (default: the latest), in order of
    partition and bucket: a primary-key table's files by the LSM levels compaction sees; an
    append table's files are runs each (their levels hold no key order: a Paimon table's top
    level is what clustering laid out; a pk-clustering-override table's level-1 files are too)."""
    snapshot = snapshot if snapshot is not None else directory.latest_snapshot()
    by_bucket: dict[tuple, list[DataFileMeta]] = {}
    for e in directory.live_files(snapshot).values():
        by_bucket.setdefault((e.partition, e.bucket), []).append(e.file)
    # (a pk-clustering-override table's level-1 files overlap in key range: each a run of its own)
    levels = bucket_levels(directory, snapshot) if directory.schema.has_primary_key and \
        not directory.options.pk_clustering else {}
    num_levels = directory.options.compaction.num_levels
    out = []
    for (partition, bucket), files in sorted(by_bucket.items(), key=lambda kv: (repr(kv[0][0]), kv[0][1])):
        found = levels.get((partition, bucket))
        if found is not None:
            runs, per_level = found.number_of_sorted_runs(), [len(found.files_at(i)) for i in range(found.num_levels)]
        else:
            runs, per_level = len(files), [0] * max(num_levels, max(m.level for m in files) + 1)
            for m in files:
                per_level[m.level] += 1
        out.append(BucketInfo(partition, bucket, runs, tuple(per_level), sum(m.row_count for m in files),
                              sum(m.file_size for m in files), sum(m.deleted_rows for m in files)))
    return out


def _sorted_runs(directory: TableDirectory, snapshot: Snapshot | None) -> dict[tuple, int]:
    """Per (partition, bucket), the sorted runs a read of it merges."""
    return {(b.partition, b.bucket): b.sorted_runs for b in bucket_infos(directory, snapshot)}
