"""Committing with rebase: the one loop every committer (writes, compactions, Spark jobs)
goes through when another commit wins the race for the next snapshot id.

A lost race is not a failure by itself: the committer asks its `rebase` function whether its
change still holds on top of the newer snapshot.  `rebase` returns the files to delete in the
retried commit (usually the same as before), or raises `CommitConflictError` (or a subclass
such as `CompactionConflictError`) when the newer commit invalidated the change.  Nothing is
deleted here: the caller owns its files and discards them when the commit fails.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable

from ..errors import CommitConflictError
from .directory import TableDirectory
from .snapshots import FileEntry, Snapshot

__all__ = ["COMMIT_RETRIES", "Rebase", "backoff", "commit_with_rebase", "next_sequences"]

COMMIT_RETRIES = 30

# newer snapshot -> the deletes to commit on top of it (or CommitConflictError)
Rebase = Callable[[Snapshot | None], list[FileEntry]]


def backoff(attempt: int) -> None:
    """Sleep a little after a lost commit race, longer each time, with jitter so racers spread out."""
    time.sleep(random.uniform(0, min(0.005 * 2 ** attempt, 0.5)))


def commit_with_rebase(directory: TableDirectory, base: Snapshot | None, adds: list[FileEntry],
                       deletes: list[FileEntry], kind: str, rebase: Rebase) -> Snapshot:
    """Commit on top of `base`; after each lost race, rebase onto the newer snapshot and retry."""
    for attempt in range(COMMIT_RETRIES):
        try:
            return directory.store.commit(base.id if base else None, adds, deletes, kind,
                                          directory.schema.schema_id)
        except CommitConflictError:
            base = directory.latest_snapshot()
            deletes = rebase(base)
            backoff(attempt)
    raise CommitConflictError(f"gave up after {COMMIT_RETRIES} conflicting commits on {directory.path}")


def next_sequences(entries) -> dict[tuple, int]:
    """(partition, bucket) -> the next free sequence number, from the live files' entries."""
    out: dict[tuple, int] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        out[key] = max(out.get(key, 0), e.file.max_seq + 1)
    return out
