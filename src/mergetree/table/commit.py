"""Committing with rebase: the one loop every committer (writes, compactions, Spark jobs)
goes through when another commit wins the race for the next snapshot id.

A lost race is not a failure by itself: the committer's `change_for` function says what its
change is on top of a given snapshot — the files to add and to delete — or raises
`CommitConflictError` (or a subclass such as `CompactionConflictError`) when that snapshot
invalidated the change.  It is asked for the base snapshot first and again for each newer
snapshot after a lost race; the loop sleeps a jittered, growing, bounded time between tries and
records in the snapshot how many races it lost.  Nothing is deleted here: the caller owns its
files and discards them when the commit fails.

Writes never conflict with each other: `renumbered` moves a write's sequence numbers after
everything the newer snapshot holds in the same buckets (an entry in the manifest, not a
rewrite), which is exactly the order in which the commits land — for every merge engine.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from ..errors import CommitConflictError, CompactionConflictError
from .directory import TableDirectory
from .snapshots import FileEntry, Snapshot

__all__ = ["BACKOFF_CAP_SECONDS", "COMMIT_RETRIES", "Change", "backoff", "commit_with_rebase", "next_sequences",
           "renumbered"]

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
            return directory.store.commit(base.id if base else None, change.adds, change.deletes, kind,
                                          directory.schema.schema_id, retries=attempt, changelog=change.changelog,
                                          properties=properties)
        except CompactionConflictError:
            raise  # the change itself conflicts (a store that checks it, as Paimon's does): no retry
        except CommitConflictError:
            backoff(attempt)
            base = directory.latest_snapshot()
    raise CommitConflictError(f"gave up after {COMMIT_RETRIES} conflicting commits on {directory.path}")


def next_sequences(entries: Iterable[FileEntry]) -> dict[tuple, int]:
    """(partition, bucket) -> the next free sequence number, from the live files' entries."""
    out: dict[tuple, int] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        out[key] = max(out.get(key, 0), e.file.max_seq + 1)
    return out


def renumbered(directory: TableDirectory, adds: list[FileEntry], latest: Snapshot | None) -> list[FileEntry]:
    """A write's new files with their sequence numbers moved, bucket by bucket, just past the
    newest sequence number `latest` holds there (unchanged when they already are).  An append
    table's rows have no versions to order: its files are never renumbered."""
    if not directory.schema.has_primary_key:
        return adds
    taken = next_sequences(directory.live_files(latest).values())
    lowest: dict[tuple, int] = {}
    for e in adds:
        key = (e.partition, e.bucket)
        lowest[key] = min(lowest.get(key, e.file.min_seq), e.file.min_seq)
    shift = {key: max(taken.get(key, 0) - low, 0) for key, low in lowest.items()}
    return [FileEntry(e.partition, e.bucket, e.file.shifted(shift[(e.partition, e.bucket)]))
            if shift[(e.partition, e.bucket)] else e for e in adds]
