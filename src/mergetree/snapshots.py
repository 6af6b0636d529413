"""Snapshots and manifests: which data files make up each version of a table.

A commit is the exclusive creation of `snapshot/snapshot-<id>.json`: the file is
written in full under a temporary name and published with `os.link`, which
fails if another committer took that id first.  Data files and manifests are
written before the snapshot, so a crash at any point leaves either the old
version or the new one, plus unreferenced files that `remove_orphan_files`
deletes.  A snapshot references a *base* manifest list (the table before the
commit) and a *delta* list (this commit's changes), so a commit writes
metadata proportional to its change; the base is folded into one manifest once
it holds `manifest.merge-min-count` manifests.
"""
from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from .data_files import DataFileMeta
from .errors import MergeTreeError
from .table_schema import decode_value, encode_value

SNAPSHOT_DIR = "snapshot"
MANIFEST_DIR = "manifest"


class CommitConflictError(MergeTreeError):
    """Another commit changed what this commit depends on; nothing was committed."""


@dataclass(frozen=True)
class FileEntry:
    """A data file and where it lives."""

    partition: tuple
    bucket: int
    file: DataFileMeta

    def to_json(self, kind: str) -> dict:
        return {"kind": kind, "partition": [encode_value(v) for v in self.partition],
                "bucket": self.bucket, "file": self.file.to_json()}

    @classmethod
    def from_json(cls, d: dict) -> FileEntry:
        return cls(tuple(decode_value(v) for v in d["partition"]), d["bucket"], DataFileMeta.from_json(d["file"]))


@dataclass(frozen=True)
class Snapshot:
    id: int
    schema_id: int
    commit_kind: str            # APPEND | COMPACT | OVERWRITE
    time_millis: int
    base_manifest_list: str
    delta_manifest_list: str
    total_record_count: int
    delta_record_count: int

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=1)


def backoff(attempt: int) -> None:
    """Sleep a little after a lost commit race, longer each time, with jitter so racers spread out."""
    time.sleep(random.uniform(0, min(0.005 * 2 ** attempt, 0.5)))


def _write_json_atomically(path: str, payload: str) -> str:
    """Write to a temporary name in the same directory and fsync; returns the temp path."""
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "w") as f:
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())
    return tmp


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SnapshotStore:
    """Reads and commits the snapshots of one table directory."""

    def __init__(self, root: str, manifest_merge_min_count: int = 30) -> None:
        self.root = root
        self.merge_min_count = manifest_merge_min_count
        os.makedirs(os.path.join(root, SNAPSHOT_DIR), exist_ok=True)
        os.makedirs(os.path.join(root, MANIFEST_DIR), exist_ok=True)

    # -- reading ---------------------------------------------------------------------
    def snapshot_ids(self) -> list[int]:
        ids = []
        for name in os.listdir(os.path.join(self.root, SNAPSHOT_DIR)):
            if name.startswith("snapshot-") and name.endswith(".json"):
                ids.append(int(name[len("snapshot-"):-len(".json")]))
        return sorted(ids)

    def latest_id(self) -> int | None:
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    def snapshot(self, snapshot_id: int) -> Snapshot:
        path = os.path.join(self.root, SNAPSHOT_DIR, f"snapshot-{snapshot_id}.json")
        try:
            with open(path) as f:
                return Snapshot(**json.load(f))
        except FileNotFoundError:
            raise MergeTreeError(f"snapshot {snapshot_id} does not exist (expired or never committed)") from None

    def manifest_names(self, manifest_list: str) -> list[str]:
        if not manifest_list:
            return []
        with open(os.path.join(self.root, MANIFEST_DIR, manifest_list)) as f:
            return json.load(f)["manifests"]

    def read_manifest(self, name: str) -> list[tuple[str, FileEntry]]:
        with open(os.path.join(self.root, MANIFEST_DIR, name)) as f:
            return [(e["kind"], FileEntry.from_json(e)) for e in json.load(f)["entries"]]

    def live_files(self, snapshot: Snapshot | None) -> dict[str, FileEntry]:
        """file name -> entry for every data file of the snapshot."""
        if snapshot is None:
            return {}
        names = self.manifest_names(snapshot.base_manifest_list) + self.manifest_names(snapshot.delta_manifest_list)
        return self._fold(names)

    def _fold(self, manifest_names: Iterable[str]) -> dict[str, FileEntry]:
        live: dict[str, FileEntry] = {}
        for name in manifest_names:
            for kind, entry in self.read_manifest(name):
                if kind == "ADD":
                    live[entry.file.file_name] = entry
                else:
                    live.pop(entry.file.file_name, None)
        return live

    # -- writing ---------------------------------------------------------------------
    def _write_manifest(self, entries: list[tuple[str, FileEntry]]) -> str:
        name = f"manifest-{uuid.uuid4().hex}.json"
        payload = json.dumps({"entries": [e.to_json(kind) for kind, e in entries]})
        path = os.path.join(self.root, MANIFEST_DIR, name)
        os.replace(_write_json_atomically(path, payload), path)
        return name

    def _write_manifest_list(self, manifests: list[str]) -> str:
        name = f"manifest-list-{uuid.uuid4().hex}.json"
        path = os.path.join(self.root, MANIFEST_DIR, name)
        os.replace(_write_json_atomically(path, json.dumps({"manifests": manifests})), path)
        return name

    def commit(self, base_id: int | None, adds: list[FileEntry], deletes: list[FileEntry], kind: str,
               schema_id: int = 0) -> Snapshot:
        """Publish snapshot base_id + 1 with these changes, or raise CommitConflictError
        if another commit published it first (the caller decides how to retry)."""
        latest = self.latest_id()
        if latest != base_id:
            raise CommitConflictError(f"the table moved from snapshot {base_id} to {latest}")
        base = self.snapshot(base_id) if base_id is not None else None
        delta_entries = [("DELETE", e) for e in deletes] + [("ADD", e) for e in adds]
        delta_list = self._write_manifest_list([self._write_manifest(delta_entries)])
        base_manifests = []
        total = 0
        if base is not None:
            base_manifests = self.manifest_names(base.base_manifest_list) + self.manifest_names(base.delta_manifest_list)
            total = base.total_record_count
        if len(base_manifests) >= self.merge_min_count:
            live = self._fold(base_manifests)
            base_manifests = [self._write_manifest([("ADD", e) for e in live.values()])]
        base_list = self._write_manifest_list(base_manifests)
        delta_rows = sum(e.file.row_count for e in adds) - sum(e.file.row_count for e in deletes)
        snapshot = Snapshot((base_id or 0) + 1, schema_id, kind, int(time.time() * 1000), base_list, delta_list,
                            total + delta_rows, delta_rows)
        directory = os.path.join(self.root, SNAPSHOT_DIR)
        final = os.path.join(directory, f"snapshot-{snapshot.id}.json")
        tmp = _write_json_atomically(final, snapshot.to_json())
        try:
            os.link(tmp, final)  # atomic and exclusive: fails if the id is taken
        except FileExistsError:
            raise CommitConflictError(f"snapshot {snapshot.id} was committed by someone else") from None
        finally:
            os.unlink(tmp)
        _fsync_dir(directory)
        return snapshot
