"""Committing with rebase: the one loop every committer (writes, compactions, Spark jobs)
goes through when another commit wins the race for the next snapshot id.

A lost race is not a failure by itself: the committer's `change_for` function says what its
change is on top of a given snapshot — the files to add and to delete — or raises
`CommitConflictError` (or a subclass such as `CompactionConflictError`) when that snapshot
invalidated the change.  It is asked for the base snapshot first and again for each newer
snapshot after a lost race; the loop sleeps a jittered, growing, bounded time between tries and
records in the snapshot how many races it lost.  Nothing is deleted here: the caller owns its
files and discards them when the commit fails.

Writes never conflict with each other: `Renumbering` moves a write's sequence numbers after
everything the newer snapshot holds in the same buckets, which is exactly the order in which
the commits land — for every merge engine.  A file's numbers are the ones it holds, so its
level-0 files are rewritten after the winner's (an append file's are its entry's alone).
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CommitConflictError, CompactionConflictError
from . import expiry
from .directory import TableDirectory
from .files import DataFileMeta, read_data_file
from .schema import SEQUENCE_COLUMN
from .snapshots import FileEntry, Snapshot

__all__ = ["BACKOFF_CAP_SECONDS", "COMMIT_RETRIES", "Change", "Renumbering", "backoff", "commit_with_rebase",
           "next_sequences"]

COMMIT_RETRIES = 30
BACKOFF_CAP_SECONDS = 0.5


class Change(NamedTuple):
    """What a commit adds and deletes, and the changelog files it publishes with them."""

    adds: list[FileEntry]
    deletes: list[FileEntry]
    changelog: Sequence[FileEntry] = ()


# snapshot to commit on -> the change on top of it (or CommitConflictError)
ChangeFor = Callable[[Snapshot | None], Change]


def backoff(attempt: int) -> None:
    """Sleep a little after a lost commit race, longer each time (capped), with jitter so
    racers spread out instead of colliding again."""
    time.sleep(random.uniform(0, min(0.005 * 2 ** attempt, BACKOFF_CAP_SECONDS)))


def commit_with_rebase(directory: TableDirectory, base: Snapshot | None, change_for: ChangeFor,
                       kind: str, properties: dict[str, str] | None = None) -> Snapshot:
    """Commit `change_for(base)`; after each lost race, rebase onto the newer snapshot and retry.
    `properties` are recorded in the snapshot (strings)."""
    for attempt in range(COMMIT_RETRIES):
        change = change_for(base)
        try:
            committed = directory.store.commit(base.id if base else None, change.adds, change.deletes, kind,
                                               directory.schema.schema_id, retries=attempt,
                                               changelog=change.changelog, properties=properties)
        except CompactionConflictError:
            raise  # the change itself conflicts (a store that checks it, as Paimon's does): no retry
        except CommitConflictError:
            backoff(attempt)
            base = directory.latest_snapshot()
            continue
        expiry.after_commit(directory, committed)
        return committed
    raise CommitConflictError(f"gave up after {COMMIT_RETRIES} conflicting commits on {directory.path}")


def next_sequences(entries: Iterable[FileEntry]) -> dict[tuple, int]:
    """(partition, bucket) -> the next free sequence number, from the live files' entries."""
    out: dict[tuple, int] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        out[key] = max(out.get(key, 0), e.file.max_seq + 1)
    return out


class Renumbering:
    """A write's new files, renumbered for the snapshot it commits on: each bucket's sequence
    numbers moved just past the newest that snapshot holds there (unchanged when they already
    are; `deleted`, the files the commit deletes, do not count).  An append file's numbers,
    which Java orders a bucket's files by, are its entry's alone: moved in the entry.  A
    primary-key file holds its keys' numbers, so it is copied with the new numbers: the copies
    are owned here — the last attempt's kept by `committed` (which removes the originals it
    replaced), every other removed."""

    def __init__(self, directory: TableDirectory, adds: list[FileEntry]) -> None:
        self.directory = directory
        self.adds = adds
        self.copies: list[FileEntry] = []
        self.replaced: list[FileEntry] = []

    def on(self, latest: Snapshot | None, deleted: Iterable[FileEntry] = ()) -> list[FileEntry]:
        directory, adds = self.directory, self.adds
        self.discard()
        keyed = directory.schema.has_primary_key
        if not adds:
            return adds
        gone = {e.file.file_name for e in deleted}
        taken = next_sequences(e for name, e in directory.live_files(latest).items() if name not in gone)
        lowest: dict[tuple, int] = {}
        for e in adds:
            key = (e.partition, e.bucket)
            lowest[key] = min(lowest.get(key, e.file.min_seq), e.file.min_seq)
        shift = {key: max(taken.get(key, 0) - low, 0) for key, low in lowest.items()}
        out = []
        for e in adds:
            by = shift[(e.partition, e.bucket)]
            if not by:
                out.append(e)
            elif not keyed:  # an append file holds no sequence column: its numbers are its entry's
                out.append(FileEntry(e.partition, e.bucket, e.file.shifted(by)))
            else:
                copy = FileEntry(e.partition, e.bucket, _renumbered_copy(directory, e, by))
                self.copies.append(copy)
                self.replaced.append(e)
                out.append(copy)
        return out

    def discard(self) -> None:
        """Remove the copies of the last attempt (its commit failed or is being redone)."""
        self.directory.discard(self.copies)
        self.copies, self.replaced = [], []

    def committed(self) -> None:
        """The last attempt committed: the originals its copies replaced go."""
        self.directory.discard(self.replaced)
        self.copies, self.replaced = [], []


def _renumbered_copy(directory: TableDirectory, entry: FileEntry, by: int) -> DataFileMeta:
    """A copy of an uncommitted level-0 file with every sequence number `by` higher, beside it."""
    meta = entry.file
    writer = directory.open_file(entry.partition, entry.bucket, meta.level, meta.file_name.rpartition("/")[0],
                                 meta.sorted_by)
    try:
        for batch in read_data_file(directory.storage, meta):
            at = batch.schema.get_field_index(SEQUENCE_COLUMN)
            writer.write(batch.set_column(at, batch.schema.field(at),
                                          pc.add(batch.column(at), pa.scalar(by, pa.int64()))))
        return writer.close()
    except BaseException:
        writer.abort()
        raise
