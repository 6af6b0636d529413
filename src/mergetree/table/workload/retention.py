"""The query log's retention (seed 003's bounded query history): records older than the table's
`query-log.retention` (default 30 days) are removed from `<table>/queries/`, and the files
that held them are deleted.

`expire` works on the log as the append table it is, in one atomic commit: a data file whose
newest record is older than the cutoff is dropped whole (its statistics say so, nothing is
read); a file holding records on both sides is rewritten with its newer records (through the
write path, as new level-0 files the log's own compaction merges later); the commit replaces
them, so a reader sees the log before or after, never between, and a crash before the commit
leaves the log as it was (its new files orphans, deleted by a later expire).  After the commit,
the log's snapshots older than SNAPSHOT_GRACE (never the newest) are expired and their files
deleted, as `housekeeping.expire_snapshots` does for a table; a reader of an older snapshot
still in flight keeps its files for that long.  Records appended or a compaction committed
while expire runs are never lost: a commit race is retried on the newer log.

This lives beside `querylog`, not in it, because it uses `housekeeping`, which imports
`querylog` (for the log's directory name).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import CommitConflictError, InvalidArgumentError
from ...merge import RowKind
from ..commit import COMMIT_RETRIES, Change, backoff, commit_with_rebase, next_sequences
from ..directory import TableDirectory
from ..display import count_text, moment_text
from ..durations import parse_age, seconds
from ..files import read_data_file
from ..housekeeping import expire_snapshots, remove_orphan_files
from ..objects import location_exists
from ..paimon.store import open_directory
from ..snapshots import FileEntry, Snapshot
from ..write import conformed, spill
from .querylog import LOG_SCHEMA, log_path

__all__ = ["ORPHAN_GRACE", "SNAPSHOT_GRACE", "Expired", "expire", "retention_of"]

SNAPSHOT_GRACE = dt.timedelta(minutes=10)   # a log snapshot younger than this is kept: a read of it may be running
ORPHAN_GRACE = dt.timedelta(hours=1)        # files no snapshot names, younger than this, may be a write's not committed


@dataclass
class Expired:
    """What `expire` removed from a table's query log."""

    cutoff: dt.datetime | None = None   # records older than this were removed (None: kept forever)
    rows: int = 0                       # records removed
    dropped: list[str] = field(default_factory=list)     # data files dropped whole (relative to the log)
    rewritten: list[str] = field(default_factory=list)   # data files rewritten with their newer records
    snapshots: list[int] = field(default_factory=list)   # log snapshots expired
    deleted: list[str] = field(default_factory=list)     # orphan files deleted (a crashed expire or write)

    def __repr__(self) -> str:
        before = "nothing (kept forever)" if self.cutoff is None else f"records before {moment_text(self.cutoff)}"
        return (f"Expired({before}: {count_text(self.rows, 'record')} removed, {len(self.dropped):,} files dropped, "
                f"{len(self.rewritten):,} rewritten, {count_text(len(self.snapshots), 'snapshot')} expired, "
                f"{len(self.deleted):,} orphans deleted)")


def retention_of(value: Any, name: str = "retention") -> dt.timedelta | None:
    """A retention given as an argument: a timedelta, a number of seconds, an age as text
    ('30d', '12h') or 'forever' (None); more than 0."""
    if isinstance(value, str):
        if value.strip().lower() == "forever":
            return None
        age = parse_age(value.strip(), name)
    else:
        age = dt.timedelta(seconds=seconds(value, name))
    if age <= dt.timedelta(0):
        raise InvalidArgumentError(f"{name} must be more than 0 (or 'forever' to keep every record), got {value!r}")
    return age


def expire(table_path: str, retention: Any = None, *, now: dt.datetime | None = None) -> Expired:
    """Remove the records of the table's query log older than `retention` (None: the table's
    `query-log.retention` option, default 30 days; or a timedelta, seconds, '30d', 'forever'),
    in one atomic commit, and delete the files no snapshot of the log younger than
    SNAPSHOT_GRACE still uses.  Returns what was removed (nothing when there is no log)."""
    if retention is None:
        age = open_directory(table_path).options.query_log_retention
    else:
        age = retention_of(retention)
    out = Expired()
    if age is None:
        return out
    moment = now if now is not None else dt.datetime.now(dt.timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    try:
        out.cutoff = moment - age
    except OverflowError:  # a retention reaching before year 1 keeps everything
        return out
    path = log_path(table_path)
    if not location_exists(path):
        return out
    directory = open_directory(path)
    _remove_old_records(directory, out.cutoff, out)
    out.snapshots = expire_snapshots(directory, 1, SNAPSHOT_GRACE)
    out.deleted = remove_orphan_files(directory, ORPHAN_GRACE)
    return out


def _newest(directory: TableDirectory, entry: FileEntry) -> tuple[Any, Any]:
    """(oldest, newest) record time of a data file, from its statistics (read when it has none)."""
    lo, hi, _ = entry.file.stats.get("ts", (None, None, 0))
    if lo is None or hi is None:
        times = pa.concat_arrays([b.column(0) for b in read_data_file(directory.storage, entry.file, ["ts"])]
                                 or [pa.array([], LOG_SCHEMA.field("ts").type)])
        bounds = pc.min_max(times)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    return lo, hi


def _kept_rows(directory: TableDirectory, entries: list[FileEntry], cutoff: dt.datetime) -> Iterator[pa.Table]:
    """The records of `entries` at or after the cutoff (and any without a time: their age is unknown)."""
    ts = pc.field("ts")
    newer = (ts >= pa.scalar(cutoff, LOG_SCHEMA.field("ts").type)) | ts.is_null()
    for entry in entries:
        batches = list(read_data_file(directory.storage, entry.file, LOG_SCHEMA.names, newer))
        if batches:
            yield pa.Table.from_batches(batches)


def _remove_old_records(directory: TableDirectory, cutoff: dt.datetime, out: Expired) -> None:
    for attempt in range(COMMIT_RETRIES):
        base = directory.latest_snapshot()
        if base is None:
            return
        drop: list[FileEntry] = []
        rewrite: list[FileEntry] = []
        for entry in directory.live_files(base).values():
            lo, hi = _newest(directory, entry)
            if hi is not None and hi < cutoff:
                drop.append(entry)
            elif lo is not None and lo < cutoff:
                rewrite.append(entry)
        if not drop and not rewrite:
            return
        adds: list[FileEntry] = []
        try:
            next_seq = next_sequences(directory.live_files(base).values())
            for files in spill(directory, (piece for table in _kept_rows(directory, rewrite, cutoff)
                                           for piece in conformed(directory, table, True)), RowKind.INSERT, next_seq):
                adds += files
            kept = sum(e.file.row_count for e in adds)
            _commit(directory, base, adds, drop + rewrite)
        except CommitConflictError:  # a compaction of the log replaced these files: plan again on the newer log
            directory.discard(adds)
            backoff(attempt)
            continue
        except BaseException:
            directory.discard(adds)
            raise
        out.rows = sum(e.file.row_count for e in drop + rewrite) - kept
        out.dropped = sorted(e.file.file_name for e in drop)
        out.rewritten = sorted(e.file.file_name for e in rewrite)
        return
    raise CommitConflictError(f"gave up expiring the query log at {directory.path} after {COMMIT_RETRIES} "
                              f"conflicting commits")


def _commit(directory: TableDirectory, base: Snapshot, adds: list[FileEntry], deletes: list[FileEntry]) -> None:
    names = [e.file.file_name for e in deletes]

    def change(latest: Snapshot | None) -> Change:
        live = directory.live_files(latest)
        gone = [n for n in names if n not in live]
        if gone:
            raise CommitConflictError(f"{len(gone)} file(s) of the query log were replaced meanwhile")
        return Change(adds, [live[n] for n in names])

    commit_with_rebase(directory, base, change, "OVERWRITE")
