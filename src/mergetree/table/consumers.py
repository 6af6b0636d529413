"""Consumers: named readers of a table's changes, each with its progress (Paimon's consumers).

A consumer (`consumer-id`) records the next snapshot it will read in its file, written whole
through the table's store: Paimon's `consumer/consumer-<id>` (`{"nextSnapshot": n}`), where
Java's readers and its snapshot expiry look, its time the file's (`PaimonSnapshotStore.consumer_file`,
`consumer_bytes`, `consumer_updated`).  While it is
active, expiry keeps every snapshot and kept changelog from `nextSnapshot` on (and the files they
use), so a reader that stops and resumes misses nothing.  A consumer that has not recorded its
progress for `consumer.expiration-time` is expired (its file removed) and holds nothing back; with
the option unset consumers never expire.

A consumer only moves forward: `record` keeps the larger of the stored and the given position
(a reader restarted from an older checkpoint does not pull it back); `reset` moves it anywhere
(checked: an existing snapshot or kept changelog, or the next snapshot to be committed).  One reader
per consumer id, as in Paimon: two processes recording the same id race, the last write wins.

A damaged consumer file (not JSON, fields missing) is reported by `get` and `consumers` as a
`CorruptTableError` naming it.  Expiry and `Table.info` survive one (`survey`): it holds nothing back
— its reader cannot resume from it anyway until it is reset — and it is never expired, so it stays
visible until `reset` rewrites it or `drop` removes it.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

from ..errors import ConsumerNotFoundError, CorruptTableError, InvalidArgumentError
from . import paths
from .directory import TableDirectory
from .display import moment_text
from .objects import list_names, read_if_exists

CONSUMER_READ_TRIES = 5
CONSUMER_READ_PAUSE = 0.2  # seconds between the tries

__all__ = ["Consumer", "check_id", "consumers", "drop", "expire", "get", "min_next_snapshot", "record", "reset",
           "survey"]


@dataclass(frozen=True)
class Consumer:
    id: str
    next_snapshot: int  # the snapshot it reads next (the newest it read, plus one)
    updated: int        # when it last recorded its progress, in milliseconds since the epoch

    def __repr__(self) -> str:
        return f"Consumer(id={self.id!r}, next_snapshot={self.next_snapshot}, updated {moment_text(self.updated)})"


def check_id(consumer_id: object, directory: TableDirectory | None = None) -> str:
    """A consumer's id checked, or InvalidArgumentError: as the table's store names consumer
    files (any name Java's may have); without a table, a non-empty name that is no path."""
    if directory is None:
        if not isinstance(consumer_id, str) or not consumer_id or "/" in consumer_id:
            raise InvalidArgumentError(f"a consumer id is a non-empty name without '/', not {consumer_id!r}")
        return consumer_id
    try:
        directory.store.consumer_file(consumer_id)
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from None
    return consumer_id  # type: ignore[return-value]


def _file(directory: TableDirectory, consumer_id: str) -> str:
    return directory.store.consumer_file(check_id(consumer_id, directory))


def _now_millis(now_millis: int | None) -> int:
    return int(time.time() * 1000) if now_millis is None else now_millis


def _check_position(next_snapshot: object) -> int:
    if isinstance(next_snapshot, bool) or not isinstance(next_snapshot, int) or next_snapshot < 1:
        raise InvalidArgumentError(f"a consumer's next snapshot must be a snapshot id (an integer of at least 1), "
                                   f"not {next_snapshot!r}")
    return next_snapshot


def _json(directory: TableDirectory, relative: str, raw: bytes) -> dict:
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        detail = "the file is empty" if not raw.strip() else f"not valid JSON ({exc})"
        raise CorruptTableError(f"the consumer file {relative} of {directory.described} is damaged: {detail}",
                                path=f"{directory.path}/{relative}") from None
    if not isinstance(document, dict):
        raise CorruptTableError(f"the consumer file {relative} of {directory.described} is damaged: not a JSON "
                                f"object", path=f"{directory.path}/{relative}")
    return document


def _parse(directory: TableDirectory, consumer_id: str, raw: bytes) -> Consumer | None:
    relative = _file(directory, consumer_id)
    document = _json(directory, relative, raw)
    next_snapshot = document.get("nextSnapshot")
    updated = directory.store.consumer_updated(relative, document)
    if updated is None:
        return None  # removed since it was read (its time is the file's)
    for name, value, least, what in (("nextSnapshot", next_snapshot, 1, "snapshot id"),
                                      ("updated", updated, 0, "time in milliseconds")):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise CorruptTableError(f"the consumer file {relative} of {directory.described} is damaged: "
                                    f"{name!r} is {value!r}, not a {what}; reset the consumer "
                                    f"(Table.reset_consumer) or drop it",
                                    path=f"{directory.path}/{relative}")
    return Consumer(consumer_id, next_snapshot, updated)  # type: ignore[arg-type]


def _read(directory: TableDirectory, consumer_id: str) -> Consumer | None:
    relative = _file(directory, consumer_id)
    for attempt in range(CONSUMER_READ_TRIES):
        raw = read_if_exists(directory.storage, relative)
        try:
            return None if raw is None else _parse(directory, consumer_id, raw)
        except CorruptTableError:
            # a store whose writers rewrite a consumer file in place (Java's, on a filesystem)
            # may be caught mid-write: read it again, as Java's `Consumer.fromPath` does
            if attempt == CONSUMER_READ_TRIES - 1:
                raise
            time.sleep(CONSUMER_READ_PAUSE)
    return None


def _write(directory: TableDirectory, consumer: Consumer) -> Consumer:
    # whole or not at all: a temporary file renamed locally, one PUT on an object store
    relative = _file(directory, consumer.id)
    directory.storage.write(relative, directory.store.consumer_bytes(consumer.next_snapshot, consumer.updated))
    stored = directory.store.consumer_updated(relative, {})  # its time is the file's: as a later read sees it
    if isinstance(stored, int):
        consumer = Consumer(consumer.id, consumer.next_snapshot, stored)
    return consumer


def record(directory: TableDirectory, consumer_id: str, next_snapshot: int,
           now_millis: int | None = None) -> Consumer:
    """A reader's progress: it reads `next_snapshot` next.  Never moves the consumer back (the
    larger position is kept); the time it recorded is always refreshed (it is alive).  Returns
    what is stored."""
    _check_position(next_snapshot)
    current = _read(directory, consumer_id)
    if current is not None and current.next_snapshot > next_snapshot:
        next_snapshot = current.next_snapshot
    return _write(directory, Consumer(consumer_id, next_snapshot, _now_millis(now_millis)))


def reset(directory: TableDirectory, consumer_id: str, next_snapshot: int,
          now_millis: int | None = None) -> Consumer:
    """Create a consumer or move it, back or forward, to `next_snapshot`: a snapshot of the
    table, an expired one whose changelog is kept, or the next one to be committed."""
    check_id(consumer_id)
    _check_position(next_snapshot)
    store = directory.store
    ids = store.snapshot_ids()
    following = (ids[-1] if ids else 0) + 1
    if next_snapshot not in ids and next_snapshot != following and \
            next_snapshot not in store.retained_changelog_ids():
        have = f"snapshots {ids[0]}..{ids[-1]}" if ids else "no snapshots"
        raise InvalidArgumentError(f"cannot move consumer {consumer_id!r} to snapshot {next_snapshot}: the table has "
                                   f"{have}; give one of them or {following} (the next commit)")
    return _write(directory, Consumer(consumer_id, next_snapshot, _now_millis(now_millis)))


def _ids(directory: TableDirectory) -> list[str]:
    names = list_names(directory.storage, paths.CONSUMER_DIR)
    found = [directory.store.consumer_id_of(f"{paths.CONSUMER_DIR}/{name}") for name in names]
    return sorted(i for i in found if i is not None)


def survey(directory: TableDirectory) -> tuple[list[Consumer], dict[str, str]]:
    """(the readable consumers, id -> what is wrong with each damaged consumer file), by id;
    for expiry and `info`, which must not fail on one damaged file."""
    good, damaged = [], {}
    for consumer_id in _ids(directory):
        try:
            consumer = _read(directory, consumer_id)
        except CorruptTableError as exc:
            damaged[consumer_id] = str(exc)
            continue
        if consumer is not None:  # dropped since the listing
            good.append(consumer)
    return good, damaged


def consumers(directory: TableDirectory) -> list[Consumer]:
    """Every consumer of the table, by id; CorruptTableError names a damaged consumer file."""
    return [c for c in (_read(directory, i) for i in _ids(directory)) if c is not None]


def get(directory: TableDirectory, consumer_id: str) -> Consumer:
    """The consumer `consumer_id`; ConsumerNotFoundError (listing the known ones) if it has
    never recorded its progress, or was dropped or expired."""
    consumer = _read(directory, consumer_id)
    if consumer is None:
        known = _ids(directory)
        raise ConsumerNotFoundError(
            f"{directory.described} has no consumer {consumer_id!r}; "
            + (f"its consumers: {', '.join(known)}" if known else "it has no consumers"))
    return consumer


def drop(directory: TableDirectory, consumer_id: str) -> None:
    """Remove a consumer (it no longer holds back expiry); ConsumerNotFoundError if there is none."""
    relative = _file(directory, consumer_id)
    if read_if_exists(directory.storage, relative) is None:
        get(directory, consumer_id)  # raises, listing the known consumers
    directory.storage.delete(relative)


def expire(directory: TableDirectory, now_millis: int | None = None) -> list[str]:
    """Remove the consumers that have not recorded progress for `consumer.expiration-time`
    (none when the option is unset; a damaged consumer file is left alone).  Returns their ids."""
    expiration = directory.options.consumer_expiration
    if expiration is None:
        return []
    cutoff = _now_millis(now_millis) - expiration.total_seconds() * 1000
    removed = []
    for consumer in survey(directory)[0]:
        if consumer.updated < cutoff:
            latest = _read_quietly(directory, consumer.id)
            if latest is not None and latest.updated < cutoff:  # not advanced while we looked
                directory.storage.delete(_file(directory, consumer.id))
                removed.append(consumer.id)
    return removed


def _read_quietly(directory: TableDirectory, consumer_id: str) -> Consumer | None:
    try:
        return _read(directory, consumer_id)
    except CorruptTableError:
        return None


def min_next_snapshot(directory: TableDirectory) -> int | None:
    """The oldest snapshot an active consumer still reads (None: no consumer holds anything
    back).  Call `expire` first: every consumer left is active."""
    readable = survey(directory)[0]
    return min((c.next_snapshot for c in readable), default=None)
