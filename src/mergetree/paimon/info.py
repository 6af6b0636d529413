"""What a Paimon table holds: its schema and options, snapshots and tags, and per (partition,
bucket) the files by level and the sorted runs a read must merge — and whether mergetree
can read it (the first option it cannot honour, if any)."""
from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import UnsupportedPaimonFeatureError
from ..table.compaction.planner import CompactionOptions, restored_levels
from ..table.paimon.metadata import PaimonTable
from ..table.snapshots import canonical_partition

__all__ = ["PaimonBucketInfo", "PaimonInfo", "PaimonSnapshotInfo", "info"]


@dataclass(frozen=True)
class PaimonSnapshotInfo:
    id: int
    commit_kind: str
    time: dt.datetime
    total_record_count: int
    delta_record_count: int


@dataclass(frozen=True)
class PaimonBucketInfo:
    partition: tuple
    bucket: int
    sorted_runs: int
    files_per_level: tuple[int, ...]
    rows: int
    bytes: int
    deleted_rows: int = 0       # rows its deletion vectors mark (replaced by newer versions)


@dataclass(frozen=True)
class PaimonInfo:
    name: str
    path: str
    schema: pa.Schema
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]
    options: dict[str, str]
    snapshot_id: int | None
    snapshots: tuple[PaimonSnapshotInfo, ...]
    tags: tuple[str, ...]
    buckets: tuple[PaimonBucketInfo, ...]
    unsupported: str | None     # why mergetree cannot read it, or None

    @property
    def max_sorted_runs(self) -> int:
        return max((b.sorted_runs for b in self.buckets), default=0)


def info(warehouse: Any, table: Any, snapshot: Any = None,
         storage_options: Mapping[str, object] | None = None) -> PaimonInfo:
    """Describe a Paimon table at `snapshot` (default: the latest); `warehouse` and
    `storage_options` as `mergetree.paimon.read` takes them."""
    t = PaimonTable.open(warehouse, table, storage_options)
    snap = t.resolve(snapshot)
    # as Paimon, the latest uses the latest schema; time travel the one its snapshot was committed under
    schema = t.schema(None if snap is None or snapshot is None else int(snap["schemaId"]))
    unsupported = None
    try:
        schema.checked_options  # noqa: B018 (evaluated for its verdict)
    except UnsupportedPaimonFeatureError as exc:
        unsupported = str(exc)
    snapshots = []
    for sid in t.snapshot_ids():
        s = t.snapshot(sid)
        snapshots.append(PaimonSnapshotInfo(sid, str(s.get("commitKind")),
                                            dt.datetime.fromtimestamp(int(s.get("timeMillis", 0)) / 1000),
                                            int(s.get("totalRecordCount") or 0), int(s.get("deltaRecordCount") or 0)))
    compaction = CompactionOptions.from_options(schema.options)
    deletions = t.deletion_files(snap) if unsupported is None and schema.checked_options.deletion_vectors else {}
    by_bucket: dict[tuple, list] = {}
    for f in t.live_files(snap):
        by_bucket.setdefault((canonical_partition(f.partition), f.bucket), []).append(f)
    buckets = []
    for (partition, bucket), files in sorted(by_bucket.items(), key=lambda kv: (repr(kv[0][0]), kv[0][1])):
        if schema.primary_keys:
            levels = restored_levels(files, compaction)[0]
            runs = levels.number_of_sorted_runs()
            per_level = [len(levels.files_at(i)) for i in range(levels.num_levels)]
        else:  # an append table's files are runs each; its top level is what clustering laid out
            runs, per_level = len(files), [0] * max(compaction.num_levels, max(f.level for f in files) + 1)
            for f in files:
                per_level[f.level] += 1
        marked = deletions.get((files[0].partition_bytes, bucket), {})
        buckets.append(PaimonBucketInfo(partition, bucket, runs, tuple(per_level),
                                        sum(f.row_count for f in files), sum(f.file_size for f in files),
                                        sum(marked[f.file_name].range.cardinality or 0 for f in files
                                            if f.file_name in marked)))
    return PaimonInfo(t.name, t.path, schema.arrow_schema, schema.primary_keys, schema.partition_keys,
                      dict(schema.options), None if snap is None else int(snap["id"]), tuple(snapshots),
                      tuple(t.tags()), tuple(buckets), unsupported)
