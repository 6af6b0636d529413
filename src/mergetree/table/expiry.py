"""Snapshot expiry as Paimon's ``ExpireSnapshotsImpl`` does it: by ``snapshot.num-retained.min``
(10), ``snapshot.num-retained.max`` (unbounded) and ``snapshot.time-retained`` (1 h), keeping
what consumers, tags and kept changelogs need; explicitly (`Table.expire_snapshots`) and after
every commit (`after_commit`, at most ``snapshot.expire.limit`` snapshots at a time, never on a
``write-only`` table), as Java's commits do.  Below the commit (`commit.commit_with_rebase`
calls `after_commit`), so it knows only the store's interface."""
from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Iterable
from typing import Any

from ..errors import CommittedWarning, InvalidArgumentError, UnsupportedPaimonFeatureError
from ..storage import Store
from . import consumers
from .directory import TableDirectory
from .durations import seconds
from .options import TableOptions
from .snapshots import Snapshot

__all__ = ["after_commit", "check_latest_intact", "delete_unreferenced", "expire_snapshots", "expired_changelogs",
           "referenced_files"]


def check_latest_intact(directory: TableDirectory) -> None:
    """Cleanup of a table whose newest snapshot is damaged or lost would delete that
    snapshot's files: refuse (CorruptTableError) until it is repaired; and a table whose
    format says the engine cannot tell what its files are used by (`cleanup_refusal`)."""
    refusal = directory.store.cleanup_refusal()
    if refusal is not None:
        raise UnsupportedPaimonFeatureError(refusal)
    latest = directory.latest_snapshot()
    if latest is not None:
        directory.live_files(latest)


def referenced_files(directory: TableDirectory, snapshot_ids: list[int],
                     changelog_ids: Iterable[int] = ()) -> dict[str, tuple[Store, str]]:
    """Every file (name -> (store, object name): `SnapshotStore.used_files`) the snapshots use,
    the snapshots the table's tags hold, and the changelog of the expired snapshots
    `changelog_ids` whose changelog is kept."""
    store = directory.store
    out: dict[str, tuple[Store, str]] = {}
    for i in snapshot_ids:
        out.update(store.used_files(store.snapshot(i)))
    for tagged in store.tagged():
        out.update(store.used_files(tagged))
    for i in changelog_ids:
        kept = store.retained_changelog(i)
        if kept is not None:  # removed since the listing: it references nothing any more
            out.update(store.used_files(kept, changelog_only=True))
    return out


def expired_changelogs(options: TableOptions, kept: list[Snapshot], latest: int | None, now_millis: int,
                       needed: int | None) -> list[int]:
    """Which kept changelogs (ascending) to remove, by Paimon's rule (ExpireChangelogImpl): counted
    from the newest snapshot `latest`, so live snapshots count too, a kept changelog `k` goes
    when `k <= latest - max` (more than `changelog.num-retained.max` newer commits), or when
    `k <= latest - min` and it is older than `changelog.time-retained`; never one an active
    consumer still reads (`k >= needed`).  Removal takes a prefix, so what is kept stays one
    range of commits.  Unset, min is 1 (the newest commit's changelog is kept at least while it
    is kept at all), max is unbounded, time-retained is forever; with no option set at all,
    every kept changelog goes."""
    if latest is None:
        return []
    retained = options.retains_changelog
    low = options.changelog_retained_min or 1
    high = options.changelog_retained_max
    age = options.changelog_time_retained
    cutoff = None if age is None else now_millis - age.total_seconds() * 1000
    out = []
    for snap in kept:
        if needed is not None and snap.id >= needed:
            break
        over_max = high is not None and snap.id <= latest - high
        too_old = cutoff is not None and snap.id <= latest - low and snap.time_millis < cutoff
        if retained and not over_max and not too_old:
            break
        out.append(snap.id)
    return out


def expire_snapshots(directory: TableDirectory, retain_last: int | None = None, older_than: Any = None,
                     now_millis: int | None = None, retain_max: int | None = None,
                     limit: int | None = None) -> list[int]:
    """Delete old snapshots and the files only they used, as Paimon's ``ExpireSnapshotsImpl``:
    the newest `retain_last` always stay (default ``snapshot.num-retained.min``, 10), beyond
    the newest `retain_max` (default ``snapshot.num-retained.max``, unbounded) none does, and
    in between a snapshot goes, oldest first, while it is older than `older_than` (a timedelta
    or seconds; default ``snapshot.time-retained``, an hour) — never one an active consumer
    still reads.  At most `limit` at a time (default all).  Returns the expired ids.

    First the consumers that stopped advancing for `consumer.expiration-time` are removed (they
    hold nothing back).  With changelog retention (`changelog.num-retained.*`,
    `changelog.time-retained`), an expiring snapshot that has a changelog leaves its metadata in
    `changelog/changelog-<id>`, written before the snapshot file is deleted, so its
    changelog files stay readable; kept changelogs are then expired by `expired_changelogs`.
    A crash at any step leaves a readable table (at worst files nothing references, which
    `remove_orphan_files` deletes).  `now_millis`: the time the ages are measured at."""
    default_min, default_max, default_age = directory.store.snapshot_retention()
    for name, value in (("retain_last", retain_last), ("retain_max", retain_max), ("limit", limit)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InvalidArgumentError(f"{name} must be an integer of at least 1, not {value!r}")
    retain_min = default_min if retain_last is None else retain_last
    given_max = retain_max is not None
    retain_max = default_max if retain_max is None else retain_max
    if retain_max is not None and retain_max < retain_min:
        given = "retain_max" if given_max else "the table's snapshot.num-retained.max"
        raise InvalidArgumentError(f"{given} ({retain_max}) must be at least retain_last ({retain_min}), as Java asks")
    age = default_age if older_than is None else seconds(older_than, "older_than")
    check_latest_intact(directory)
    now = int(time.time() * 1000) if now_millis is None else now_millis
    consumers.expire(directory, now)
    needed = consumers.min_next_snapshot(directory)
    store = directory.store
    storage = directory.storage
    ids = store.snapshot_ids()
    kept_ids = store.retained_changelog_ids()
    # beyond the newest `retain_max`: expired whatever their age; then, up to the newest
    # `retain_min`, oldest first while older than the cut-off (Java stops at the first younger)
    forced = ids[:-retain_max] if retain_max is not None and len(ids) > retain_max else []
    cutoff = now - age * 1000
    candidates = list(forced)
    for i in ids[len(forced): max(len(ids) - retain_min, 0)]:
        if store.snapshot(i).time_millis >= cutoff:
            break
        candidates.append(i)
    if needed is not None:  # the snapshot a consumer reads next, and the one its change is computed against
        candidates = [i for i in candidates if i < needed - 1]
    if limit is not None:
        candidates = candidates[:limit]
    if not candidates and not kept_ids:
        return []
    # what the expiring snapshots (and the kept changelogs, which may expire too) use; a file's
    # snapshots are consecutive (added once, deleted once), so what a newer snapshot still uses
    # the oldest snapshot left uses too: only it is read for what stays, not every live one
    before = referenced_files(directory, candidates, kept_ids)
    keep_changelog, rules = store.changelog_retention(directory.options)
    for i in candidates:  # oldest first: the table stays readable at every step
        if keep_changelog and store.keeps_changelog_of(store.snapshot(i)):
            # the same document, kept before the snapshot goes (a crash in between leaves both)
            storage.write(store.retained_changelog_file(i), storage.read(store.snapshot_file(i)))
        storage.delete(store.snapshot_file(i))
    live = store.snapshot_ids()
    if candidates:
        store.expired_to(live[0] if live else None)
    kept = [s for s in (store.retained_changelog(i) for i in store.retained_changelog_ids()) if s is not None]
    gone = [] if rules is None else expired_changelogs(rules, kept, live[-1] if live else None, now, needed)
    for i in gone:
        storage.delete(store.retained_changelog_file(i))
    if gone or (keep_changelog and candidates):
        store.kept_changelogs_changed()
    delete_unreferenced(directory, before, referenced_files(directory, live[:1], store.retained_changelog_ids()))
    return candidates


def after_commit(directory: TableDirectory, committed: Snapshot) -> None:
    """Expiry after a commit, as Java's commit runs it (``snapshot.expire.execution-mode`` sync):
    by the table's retention, at most ``snapshot.expire.limit`` (10) snapshots, on Paimon tables
    that are not ``write-only``.  Cheap when nothing can expire: the EARLIEST hint and, past the
    minimum count, the earliest snapshot's time.  It never raises: the commit stands whatever
    happens here (its callers remove a failed commit's files, which are committed now), so a
    failure — an interrupt too — is reported as a `CommittedWarning` (logged where warnings are
    errors) and the next commit's expiry does the work."""
    try:
        if directory.options.write_only:
            return
        store = directory.store
        retain_min, retain_max, age = directory.store.snapshot_retention()
        if committed.id <= retain_min:  # not that many snapshots were ever committed: no request
            return
        earliest = store.earliest_id()
        if earliest is None or committed.id - earliest + 1 <= retain_min:
            return
        if (retain_max is None or committed.id - earliest + 1 <= retain_max) and \
                store.snapshot(earliest).time_millis >= time.time() * 1000 - age * 1000:
            return
        expire_snapshots(directory, limit=store.expire_limit())
    except BaseException as exc:
        message = (f"snapshot {committed.id} of {directory.path} is committed; expiring old snapshots after it "
                   f"failed ({type(exc).__name__}: {exc}); the next commit tries again")
        try:
            warnings.warn(CommittedWarning(message), stacklevel=3)
        except Warning:
            logging.getLogger(__name__).error(message)


def delete_unreferenced(directory: TableDirectory, before: dict[str, tuple[Store, str]],
                         after: dict[str, tuple[Store, str]]) -> None:
    """Delete the files referenced `before` and no longer `after` (only the kinds of file the
    table's writers make)."""
    store = directory.store
    for name in sorted(before.keys() - after.keys()):
        if store.may_be_orphan(name):
            where, relative = before[name]
            where.delete(relative)  # a file that is not there is not an error


