"""Housekeeping: expiring old snapshots, removing orphan files, repairing a damaged top of the
history.  Deletion is always limited to the table's own file names (see `paths`)."""
from __future__ import annotations

import datetime as dt
import os
import time
from typing import Any

from ..errors import CorruptTableError, InvalidArgumentError
from . import paths
from .directory import TableDirectory

__all__ = ["DAMAGED_DIR", "expire_snapshots", "referenced_files", "remove_orphan_files", "repair", "seconds"]

DAMAGED_DIR = "damaged"  # where `repair` sets damaged snapshot files aside (inside snapshot/)


def seconds(duration: Any, name: str) -> float:
    """A duration given as a timedelta or as seconds, checked."""
    if isinstance(duration, dt.timedelta):
        value = duration.total_seconds()
    elif isinstance(duration, (int, float)) and not isinstance(duration, bool):
        value = float(duration)
    else:
        raise InvalidArgumentError(f"{name} must be a datetime.timedelta or a number of seconds, not {duration!r}")
    if not value >= 0:
        raise InvalidArgumentError(f"{name} must not be negative, got {duration!r}")
    return value


def _check_latest_intact(directory: TableDirectory) -> None:
    """Cleanup of a table whose newest snapshot is damaged or lost would delete that
    snapshot's files: refuse (CorruptTableError) until it is repaired."""
    latest = directory.latest_snapshot()
    if latest is not None:
        directory.live_files(latest)


def referenced_files(directory: TableDirectory, snapshot_ids: list[int]) -> set[str]:
    """Paths (relative to the table) of every manifest and data file the snapshots use."""
    store = directory.store
    out: set[str] = set()
    for i in snapshot_ids:
        snap = store.snapshot(i)
        for manifest_list in (snap.base_manifest_list, snap.delta_manifest_list):
            if manifest_list:
                out.add(f"{paths.MANIFEST_DIR}/{manifest_list}")
            for manifest in store.manifest_names(manifest_list):
                out.add(f"{paths.MANIFEST_DIR}/{manifest}")
        for name, entry in store.live_files(snap).items():
            out.add(name)
            out.update(entry.file.sidecars())
    return out


def expire_snapshots(directory: TableDirectory, retain_last: int, older_than: Any) -> list[int]:
    """Delete old snapshots (keeping the newest `retain_last` and any younger than
    `older_than`) and the files only they used.  Returns the expired ids."""
    if isinstance(retain_last, bool) or not isinstance(retain_last, int) or retain_last < 1:
        raise InvalidArgumentError(f"retain_last must be an integer of at least 1, not {retain_last!r}")
    age = None if older_than is None else seconds(older_than, "older_than")
    _check_latest_intact(directory)
    store = directory.store
    ids = store.snapshot_ids()
    candidates = ids[:-retain_last]
    if age is not None:
        cutoff = (time.time() - age) * 1000
        candidates = [i for i in candidates if store.snapshot(i).time_millis < cutoff]
    if not candidates:
        return []
    before = referenced_files(directory, ids)
    for i in candidates:  # oldest first: the table stays readable at every step
        os.unlink(os.path.join(directory.path, paths.snapshot_file(i)))
    after = referenced_files(directory, store.snapshot_ids())
    for name in sorted(before - after):
        directory.unlink_owned(name)
    return candidates


def remove_orphan_files(directory: TableDirectory, older_than: Any) -> list[str]:
    """Delete the table's files that no snapshot references and that are older than
    `older_than`; only names matching the table's own patterns, never a published snapshot
    or the schema.  Returns the removed paths (relative to the table)."""
    age = seconds(older_than, "older_than")
    _check_latest_intact(directory)
    referenced = referenced_files(directory, directory.store.snapshot_ids())
    cutoff = time.time() - age
    partition_by = directory.schema.partition_by
    root = directory.path
    removed = []
    for folder, subfolders, names in os.walk(root):
        if os.path.relpath(folder, root) == os.path.join(paths.SNAPSHOT_DIR, DAMAGED_DIR):
            subfolders.clear()
            continue
        for name in names:
            full = os.path.join(folder, name)
            relative = os.path.relpath(full, root).replace(os.sep, "/")
            if not paths.is_owned(relative, partition_by) or relative in referenced:
                continue
            if (paths.snapshot_id_of(relative) is not None or relative.startswith(paths.SCHEMA_DIR + "/")) \
                    and not paths.is_temporary(relative):
                continue  # a published snapshot or schema is the table itself
            if os.path.islink(full) or os.path.getmtime(full) > cutoff:
                continue
            directory.unlink_owned(relative)
            removed.append(relative)
    return sorted(removed)


def repair(directory: TableDirectory) -> list[str]:
    """Set damaged snapshot files at the top of the history aside (into snapshot/damaged/,
    never deleted) and reset the LATEST hint, so the table continues from its newest intact
    snapshot.  Returns a line per snapshot file dealt with."""
    store = directory.store
    done = []
    intact = None
    ids = store.snapshot_ids()
    hint = store.latest_hint()
    if hint is not None:  # snapshot files the hint knows of that are gone
        done += [f"{paths.snapshot_file(i)} (missing)" for i in range(max(ids, default=0) + 1, hint + 1)]
    for snapshot_id in reversed(ids):
        try:
            store.live_files(store.snapshot(snapshot_id))
            intact = snapshot_id
            break
        except CorruptTableError:
            relative = paths.snapshot_file(snapshot_id)
            aside = os.path.join(directory.path, paths.SNAPSHOT_DIR, DAMAGED_DIR)
            os.makedirs(aside, exist_ok=True)
            os.replace(os.path.join(directory.path, relative),
                       os.path.join(aside, f"snapshot-{snapshot_id}.json.{int(time.time())}"))
            done.append(f"{relative} (damaged: moved to {paths.SNAPSHOT_DIR}/{DAMAGED_DIR}/)")
    store.write_latest_hint(intact)
    return done
