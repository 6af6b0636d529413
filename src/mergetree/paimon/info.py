"""What a Paimon table holds: its schema and options, snapshots and tags, and per (partition,
bucket) the files by level and the sorted runs a read must merge — the engine's survey
(`table.info.bucket_infos`, what `Table.info` counts too) — and whether mergetree can read it
(the first option it cannot honour, if any)."""
from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import UnsupportedPaimonFeatureError
from ..table.info import BucketInfo, bucket_infos
from ..table.paimon.metadata import PaimonTable
from ..table.paimon.store import paimon_directory

__all__ = ["PaimonBucketInfo", "PaimonInfo", "PaimonSnapshotInfo", "info"]

# one (partition, bucket): the engine's own survey of it
PaimonBucketInfo = BucketInfo


@dataclass(frozen=True)
class PaimonSnapshotInfo:
    id: int
    commit_kind: str
    time: dt.datetime
    total_record_count: int
    delta_record_count: int


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
    buckets: tuple[BucketInfo, ...]   # none where mergetree cannot read the table (`unsupported`)
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
    buckets: list[BucketInfo] = []
    try:
        directory = paimon_directory(t, schema)
    except UnsupportedPaimonFeatureError as exc:
        unsupported = str(exc)
    else:
        store = directory.store
        buckets = bucket_infos(directory, None if snap is None else store.snapshot(int(snap["id"])))
    snapshots = []
    for sid in t.snapshot_ids():
        s = t.snapshot(sid)
        snapshots.append(PaimonSnapshotInfo(sid, str(s.get("commitKind")),
                                            dt.datetime.fromtimestamp(int(s.get("timeMillis", 0)) / 1000),
                                            int(s.get("totalRecordCount") or 0), int(s.get("deltaRecordCount") or 0)))
    return PaimonInfo(t.name, t.path, schema.arrow_schema, schema.primary_keys, schema.partition_keys,
                      dict(schema.options), None if snap is None else int(snap["id"]), tuple(snapshots),
                      tuple(t.tags()), tuple(buckets), unsupported)
