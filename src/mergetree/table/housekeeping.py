"""Housekeeping: expiring old snapshots, removing orphan files, repairing a damaged top of the
history (and a table's query log and optimizer history, by dropping what is damaged).
Deletion is always limited to the table's own file names (see `paths`).

On an object store the same work goes through the table's store: orphans are found by listing
the prefix, aged by the objects' own timestamps, and a file set aside is copied, then deleted
(there is no rename)."""
from __future__ import annotations

import os
import time
from typing import Any

from ..errors import (
    CorruptTableError,
    MergeTreeError,
    SnapshotNotFoundError,
)
from ..storage import Store
from . import paths
from .commit import Change, commit_with_rebase
from .directory import TableDirectory
from .durations import seconds
from .expiry import (
    check_latest_intact,
    delete_unreferenced,
    expire_snapshots,
    expired_changelogs,
    referenced_files,
)
from .formats import is_paimon_table
from .objects import is_local, is_uri, location_exists, storage_for
from .paimon.store import open_directory
from .snapshots import Snapshot
from .workload.history import HISTORY_DIR
from .workload.logtables import damaged_data_files, describe
from .workload.places import side_table
from .workload.querylog import QUERY_LOG_DIR

__all__ = ["DAMAGED_DIR", "LOGS", "check_latest", "create_tag", "delete_tag", "expire_snapshots", "expired_changelogs",
           "is_log", "referenced_files", "remove_orphan_files", "repair", "repair_log", "seconds", "tags"]

DAMAGED_DIR = "damaged"  # where `repair` sets damaged snapshot files aside (inside snapshot/; a log's data files)
# the append tables a table keeps beside its data, which it can lose without losing itself
LOGS = {QUERY_LOG_DIR: "query log", HISTORY_DIR: "optimizer history"}


def tags(directory: TableDirectory) -> dict[str, Snapshot]:
    """The table's tags, by name, and the snapshot each holds."""
    store = directory.store
    return {name: store.tag(name) for name in store.tag_names()}


def create_tag(directory: TableDirectory, name: str, snapshot: Snapshot | None) -> Snapshot:
    """Tag `snapshot` (None: the latest) as `name`: its files stay, whatever expiry does, until
    the tag is deleted; reads and change streams take the name wherever they take an id."""
    store = directory.store
    if snapshot is None:
        raise SnapshotNotFoundError(f"table {directory.path} has no snapshot to tag yet")
    store.create_tag(name, snapshot)
    return snapshot


def delete_tag(directory: TableDirectory, name: str) -> None:
    """Delete tag `name`, and — where its snapshot has expired — the files only it kept (as
    Java's ``TagManager.deleteTag`` cleans them)."""
    store = directory.store
    tagged = store.tag(name)
    ids = store.snapshot_ids()
    if tagged.id in ids:
        store.remove_tag(name)
        return
    kept = store.retained_changelog_ids()
    before = referenced_files(directory, ids, kept)
    store.remove_tag(name)
    delete_unreferenced(directory, before, referenced_files(directory, ids, kept))




def remove_orphan_files(directory: TableDirectory, older_than: Any) -> list[str]:
    """Delete the table's files that no snapshot references and that are older than
    `older_than`; only names matching the table's own patterns, never a published snapshot
    or the schema.  Returns the removed paths (relative to the table)."""
    age = seconds(older_than, "older_than")
    check_latest_intact(directory)
    store = directory.store
    referenced = referenced_files(directory, store.snapshot_ids(), store.retained_changelog_ids())
    cutoff = time.time() - age
    removed = []
    for relative, modified in _files_with_times(directory.storage):
        # only the table's own kinds of file, never the table itself (snapshots, schemas, ...)
        if relative in referenced or not store.may_be_orphan(relative):
            continue
        if modified is None or modified > cutoff:
            continue
        directory.storage.delete(relative)
        removed.append(relative)
    return sorted(removed)


def _files_with_times(storage: Store) -> list[tuple[str, float | None]]:
    """(path relative to the table, modification time; None for a symbolic link, never
    removed) of every file, snapshot/damaged/ left out: a local directory walked, an object
    store's prefix listed with the objects' own timestamps."""
    aside = f"{paths.SNAPSHOT_DIR}/{DAMAGED_DIR}/"
    if not is_local(storage):
        return [(info.path, info.last_modified.timestamp()) for info in storage.list("")
                if not info.path.startswith(aside)]
    root = storage.root  # type: ignore[attr-defined]
    out: list[tuple[str, float | None]] = []
    for folder, subfolders, names in os.walk(root):
        if os.path.relpath(folder, root) == os.path.join(paths.SNAPSHOT_DIR, DAMAGED_DIR):
            subfolders.clear()
            continue
        for name in names:
            full = os.path.join(folder, name)
            relative = os.path.relpath(full, root).replace(os.sep, "/")
            try:
                out.append((relative, None if os.path.islink(full) else os.path.getmtime(full)))
            except FileNotFoundError:  # removed while walking
                continue
    return out


def _move(storage: Store, relative: str, target: str) -> None:
    """Set a file aside under another name: a rename locally, a copy then a delete on an
    object store (which has no rename; a crash in between leaves both, never neither)."""
    if is_local(storage):
        full = os.path.join(storage.root, relative)  # type: ignore[attr-defined]
        aside = os.path.join(storage.root, *target.split("/"))  # type: ignore[attr-defined]
        os.makedirs(os.path.dirname(aside), exist_ok=True)
        os.replace(full, aside)
        return
    storage.write(target, storage.read(relative))
    storage.delete(relative)


def check_latest(directory: TableDirectory) -> None:
    """Read the latest snapshot and its manifests, or raise CorruptTableError naming the damaged
    file and how to get past it (`Table.open`'s check)."""
    latest = None
    try:
        latest = directory.latest_snapshot()
        if latest is not None:
            directory.live_files(latest)
    except CorruptTableError as exc:
        store = directory.store
        intact = None
        for snapshot_id in reversed(store.snapshot_ids()):
            if latest is not None and snapshot_id >= latest.id:
                continue
            try:
                store.live_files(store.snapshot(snapshot_id))
            except CorruptTableError:
                continue
            intact = snapshot_id
            break
        if intact is None:
            raise CorruptTableError(f"{exc}; no older snapshot is left to fall back to", path=exc.path) from None
        raise CorruptTableError(
            f"{exc}; older snapshots are intact (newest: {intact}): read one with "
            f"Table.open(path, check=False).read(snapshot={intact}), or run `mergetree repair {directory.path}` to "
            f"set the damaged snapshot file aside so the table continues from snapshot {intact} (the changes "
            f"committed after it are lost)", path=exc.path) from None


def _set_aside_damaged_snapshots(directory: TableDirectory, prefix: str = "") -> list[str]:
    """Move damaged snapshot files at the top of the history into snapshot/damaged/ and reset
    the LATEST hint; a line per snapshot file, its path prefixed with `prefix`."""
    store = directory.store
    done = []
    intact = None
    ids = store.snapshot_ids()
    hint = store.latest_hint()
    if hint is not None:  # snapshot files the hint knows of that are gone
        done += [f"{prefix}{store.snapshot_file(i)} (missing)" for i in range(max(ids, default=0) + 1, hint + 1)]
    for snapshot_id in reversed(ids):
        try:
            store.live_files(store.snapshot(snapshot_id))
            intact = snapshot_id
            break
        except CorruptTableError:
            relative = store.snapshot_file(snapshot_id)
            _move(directory.storage, relative,
                  f"{paths.SNAPSHOT_DIR}/{DAMAGED_DIR}/{relative.rpartition('/')[2]}.{int(time.time())}")
            done.append(f"{prefix}{relative} (damaged: moved to {prefix}{paths.SNAPSHOT_DIR}/{DAMAGED_DIR}/)")
    store.write_latest_hint(intact)
    return done


def is_log(path: str) -> bool:
    """Is `path` a table's query log or optimizer history (`<table>/queries`, `<table>/optimizer`)?"""
    path = _normal(path)
    parent, _, name = path.rpartition("/") if is_uri(path) else (os.path.dirname(path), "", os.path.basename(path))
    return name in LOGS and bool(parent) and is_paimon_table(storage_for(parent))


def _normal(path: str) -> str:
    return path.rstrip("/") if is_uri(path) else os.path.abspath(path)


def repair_log(path: str, what: str | None = None) -> list[str]:
    """Repair a table's query log or optimizer history (`<table>/queries`, `<table>/optimizer`),
    data the table can lose without losing itself, by dropping what is damaged: damaged
    snapshots at the top of its history are set aside (as `repair` does for a table), its data
    files that do not read back whole are dropped from it in one commit (and kept in
    `damaged/`), and a log whose schema cannot be read is set aside whole (a new one starts
    with the next record).  Returns a line per file dealt with, paths relative to the table."""
    path = _normal(path)
    name = path.rpartition("/")[2] if is_uri(path) else os.path.basename(path)
    what = what or LOGS.get(name, "log")
    if not location_exists(path):
        return []
    try:
        directory = open_directory(path)
    except MergeTreeError as exc:
        aside = f"{path}.damaged-{int(time.time())}"
        _move_location(path, aside)
        return [f"{name}/ ({describe(exc, path)}): the whole {what} moved to {aside.rpartition('/')[2]}/; a new "
                f"one starts with the next record"]
    done = _set_aside_damaged_snapshots(directory, f"{name}/")
    latest = directory.latest_snapshot()
    damaged = damaged_data_files(directory, latest) if latest is not None else []
    if not damaged:
        return done
    names = {entry.file.file_name for entry, _ in damaged}

    def drop(base: Snapshot | None) -> Change:
        live = directory.live_files(base)
        return Change([], [live[n] for n in sorted(names) if n in live])

    commit_with_rebase(directory, latest, drop, "OVERWRITE")
    storage = directory.storage
    for entry, reason in damaged:
        kept = ""
        if storage.exists(entry.file.file_name):
            _move(storage, entry.file.file_name, f"{DAMAGED_DIR}/{entry.file.file_name.rpartition('/')[2]}")
            kept = f"; kept in {name}/{DAMAGED_DIR}/"
        problem = reason.removeprefix(f"data file {entry.file.file_name} ").removeprefix("is ")
        done.append(f"{name}/{entry.file.file_name} ({problem}): dropped from the {what}, "
                    f"{entry.file.row_count:,} rows lost{kept}")
    return done


def repair(directory: TableDirectory) -> list[str]:
    """Set damaged snapshot files at the top of the history aside (into snapshot/damaged/,
    never deleted) and reset the LATEST hint, so the table continues from its newest intact
    snapshot; then repair the table's query log and optimizer history (`repair_log`: what is
    damaged there is dropped).  Returns a line per file dealt with.  A log directory itself
    (`<table>/queries`) is repaired as a log."""
    if is_log(directory.path):
        return repair_log(directory.path)
    done = _set_aside_damaged_snapshots(directory)
    for name, what in LOGS.items():
        done += repair_log(side_table(directory.path, name), what)
    return done


def _move_location(path: str, aside: str) -> None:
    """Set a whole log aside: a directory renamed locally, every object copied and deleted on
    an object store."""
    if not is_uri(path):
        os.replace(path, aside)
        return
    source, target = storage_for(path), storage_for(aside)
    for info in source.list(""):
        target.write(info.path, source.read(info.path))
        source.delete(info.path)
