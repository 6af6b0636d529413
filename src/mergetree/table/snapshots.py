"""What the engine knows of a snapshot and of a data file's place in it: `Snapshot` (a Paimon
snapshot as the engine reads it) and `FileEntry` (a data file, its partition and bucket).  The
Paimon table's store (`table.paimon.store`) reads and commits them through Paimon's metadata."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import SnapshotNotFoundError
from ..storage import Store
from . import paths
from .display import moment_text
from .files import DataFileMeta
from .values import decode_value, encode_value

__all__ = ["FileEntry", "Snapshot", "add_manifests", "canonical_partition", "changelog_snapshot"]

_NAN = float("nan")


def canonical_partition(values: tuple) -> tuple:
    """Partition values with every NaN the same NaN object: tuples compare items by identity
    before equality, so only then are two partitions holding NaN one dict key (one group for
    reads, one sequence counter for writes)."""
    if any(isinstance(v, float) and v != v for v in values):
        return tuple(_NAN if isinstance(v, float) and v != v else v for v in values)
    return values


@dataclass(frozen=True)
class FileEntry:
    """A data file and where it lives."""

    partition: tuple
    bucket: int
    file: DataFileMeta

    def __post_init__(self) -> None:
        object.__setattr__(self, "partition", canonical_partition(self.partition))

    def to_json(self, kind: str) -> dict:
        return {"kind": kind, "partition": [encode_value(v) for v in self.partition],
                "bucket": self.bucket, "file": self.file.to_json()}

    @classmethod
    def from_json(cls, d: dict) -> FileEntry:
        return cls(tuple(decode_value(v) for v in d["partition"]), d["bucket"], DataFileMeta.from_json(d["file"]))


@dataclass(frozen=True)
class Snapshot:
    """A snapshot (Paimon's `Snapshot`) as the engine reads it."""

    id: int
    schema_id: int
    commit_kind: str            # APPEND | COMPACT | OVERWRITE
    time_millis: int
    base_manifest_list: str
    delta_manifest_list: str
    total_record_count: int
    delta_record_count: int
    commit_retries: int = 0     # lost commit races before this one won (fairness, in `history`)
    # the commit's changelog files (`changelog-producer` input or lookup), in a manifest list
    changelog_manifest_list: str = ""
    # what the committer says of its commit (str -> str): a streaming sink's query and batch id
    properties: dict = field(default_factory=dict, hash=False, compare=False)
    # the snapshot's index manifest (deletion-vector and hash index files)
    index_manifest: str = ""

    def __repr__(self) -> str:
        """What a person asks of a snapshot in a shell (its manifest lists are for the store)."""
        # records, as Paimon counts them: a delete's -D records count until compaction drops them
        return (f"Snapshot(id={self.id}, {self.commit_kind}, {moment_text(self.time_millis)}, "
                f"{self.total_record_count:,} records "
                f"({self.delta_record_count:+,}), schema {self.schema_id})")


def add_manifests(store: Any, manifest_list: str, out: dict[str, tuple[Store, str]]) -> list[str]:
    """Put a manifest list and the manifests it names into `out` (name -> (store, object name),
    in ``manifest/``); the manifests' names."""
    if not manifest_list:
        return []
    names = store.manifest_names(manifest_list)
    for name in (manifest_list, *names):
        out[f"{paths.MANIFEST_DIR}/{name}"] = (store.storage, f"{paths.MANIFEST_DIR}/{name}")
    return names


def changelog_snapshot(store: Any, snapshot_id: int) -> tuple[Snapshot, bool]:
    """Commit `snapshot_id` for reading its change: its snapshot
    (True), or once it expired, the metadata kept for its changelog (False);
    SnapshotNotFoundError when neither exists."""
    try:
        return store.snapshot(snapshot_id), True
    except SnapshotNotFoundError:
        kept = store.retained_changelog(snapshot_id)
        if kept is None:
            raise
        return kept, False
