"""Changelog retention: an expired snapshot's changelog is kept (`changelog.num-retained.*`,
`changelog.time-retained`) and later expired by Paimon's rule; consumers hold kept changelogs
too; orphan cleanup keeps changelog files; a crash during expiry leaves everything readable."""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import CorruptTableError, SnapshotNotFoundError, Table
from mergetree.table import consumers, housekeeping
from mergetree.table.files import read_data_file
from mergetree.table.options import TableOptions
from mergetree.table.schema import KIND_COLUMN, SEQUENCE_COLUMN
from mergetree.table.snapshots import Snapshot, changelog_snapshot

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
HOUR_MS = 3_600_000


def commit_with_changelog(table: Table, ids: list[int], value: str) -> Snapshot:
    """Upsert `ids` with `value` in one write; the table's `changelog-producer=input` writes
    the same rows, as +I, to a changelog file of that commit."""
    snapshot = table.write({"id": pa.array(sorted(ids), pa.int64()), "v": [value] * len(ids)})
    assert snapshot.changelog_manifest_list, f"commit {snapshot.id} has no changelog"
    return snapshot


def changelog_files(table: Table, snapshot_id: int) -> list[str]:
    """The changelog files of commit `snapshot_id` (live or kept), each checked to read back."""
    store = table.directory.store
    snap, _ = changelog_snapshot(store, snapshot_id)
    out = []
    for manifest in store.manifest_names(snap.changelog_manifest_list):
        for _, entry in store.read_manifest(manifest):
            rows = pa.Table.from_batches(list(read_data_file(table.directory.storage, entry.file)))
            assert rows.num_rows == entry.file.row_count and KIND_COLUMN in rows.column_names
            assert SEQUENCE_COLUMN in rows.column_names
            out.append(entry.file.file_name)
    assert out, f"commit {snapshot_id} has no changelog files"
    return out


def data_files(table: Table) -> set[str]:
    return {name for name in files_on_disk(table.path) if "/data-" in name}


def files_on_disk(root: str) -> set[str]:
    out = set()
    for folder, _, names in os.walk(root):
        for name in names:
            out.add(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return out


# the snapshots' own retention, which Java's changelog retention must reach beyond for an expired
# snapshot's changelog to be kept ("decoupled"), and whose values the unset `changelog.*` take
SNAPSHOT_RETENTION = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                      "snapshot.time-retained": "30 min"}


def make(path: str, commits: int, options: dict | None = None) -> Table:
    table = Table.create(path, SCHEMA, primary_key="id",
                         options={"write-only": "true", "changelog-producer": "input", **SNAPSHOT_RETENTION,
                                  **(options or {})})
    for i in range(commits):
        commit_with_changelog(table, [i % 3, 100 + i], f"c{i}")
    return table


def kept(table: Table) -> list[int]:
    return table.directory.store.retained_changelog_ids()


# -- the tests ---------------------------------------------------------------------------------
def test_changelog_outlives_its_snapshot(tmp_path):
    table = make(str(tmp_path / "t"), 4, {"changelog.num-retained.max": "10"})
    before = {i: changelog_files(table, i) for i in (1, 2, 3, 4)}
    expected = table.read()
    table.compact(full=True)  # the data files of commits 1..4 are now used by the old snapshots only
    old_data = data_files(table) - {n for n in table.directory.live_files(table.latest_snapshot())}
    assert old_data
    assert table.expire_snapshots(retain_last=1, older_than=0) == [1, 2, 3, 4]
    assert [s.id for s in table.snapshots()] == [5]
    assert kept(table) == [1, 2, 3, 4]  # the compaction (5) has no changelog: still a live snapshot
    store = table.directory.store
    for i in (1, 2, 3, 4):
        with pytest.raises(SnapshotNotFoundError):
            store.snapshot(i)
        with pytest.raises(SnapshotNotFoundError):
            table.read(snapshot=i)
        kept_snapshot, _ = changelog_snapshot(store, i)
        assert kept_snapshot.id == i and kept_snapshot.commit_kind == "APPEND"
        assert changelog_files(table, i) == before[i]  # still there, still readable
    assert not old_data & data_files(table)  # data files only the expired snapshots used are gone
    assert table.read() == expected
    info = table.info()
    assert info.kept_changelogs == [1, 2, 3, 4]


def test_without_retention_the_changelog_goes_with_its_snapshot(tmp_path):
    table = make(str(tmp_path / "t"), 3)
    files = changelog_files(table, 1) + changelog_files(table, 2)
    assert table.expire_snapshots(retain_last=1, older_than=0) == [1, 2]
    assert kept(table) == []
    with pytest.raises(SnapshotNotFoundError):
        changelog_snapshot(table.directory.store, 1)
    on_disk = files_on_disk(table.path)
    assert not set(files) & on_disk
    changelog_files(table, 3)  # the live snapshot's changelog stays


@pytest.mark.parametrize(("options", "kept_now", "kept_later"), [
    # Paimon's rule, counted from the newest snapshot (8; 1..7 expired with changelog):
    # k goes when k <= 8 - max, or k <= 8 - min and older than time-retained; an unset one is the
    # snapshots' (SNAPSHOT_RETENTION: min 1, max 2, 30 min); kept at all only when the changelog's
    # retention reaches further than the snapshots'
    ({"changelog.num-retained.max": "5"}, [4, 5, 6, 7], []),
    ({"changelog.num-retained.max": "5", "changelog.num-retained.min": "2", "changelog.time-retained": "1h"},
     [4, 5, 6, 7], [7]),
    ({"changelog.time-retained": "1h", "changelog.num-retained.max": "10"}, [1, 2, 3, 4, 5, 6, 7], []),
    ({"changelog.time-retained": "1h"}, [7], []),  # max is the snapshots' 2
    ({"changelog.time-retained": "1h", "changelog.num-retained.min": "4", "changelog.num-retained.max": "10"},
     [1, 2, 3, 4, 5, 6, 7], [5, 6, 7]),
    ({"changelog.num-retained.min": "3", "changelog.num-retained.max": "10", "changelog.time-retained": "1000 d"},
     [1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7]),  # a floor only
    ({"changelog.num-retained.max": "1"}, [], []),  # no further than the snapshots': nothing kept
])
def test_kept_changelogs_expire_by_min_max_and_time(tmp_path, options, kept_now, kept_later):
    table = make(str(tmp_path / "t"), 8, options)
    files = {i: changelog_files(table, i) for i in range(1, 9)}
    now = int(time.time() * 1000)
    assert housekeeping.expire_snapshots(table.directory, 1, 0, now_millis=now) == list(range(1, 8))
    assert kept(table) == kept_now
    housekeeping.expire_snapshots(table.directory, 1, 0, now_millis=now + 2 * HOUR_MS)
    assert kept(table) == kept_later
    on_disk = files_on_disk(table.path)
    for i in range(1, 9):
        held = i in kept_later or i == 8
        assert set(files[i]) <= on_disk if held else not set(files[i]) & on_disk, i
        if held:
            assert changelog_files(table, i) == files[i]


def test_a_consumer_holds_kept_changelogs(tmp_path):
    table = make(str(tmp_path / "t"), 6, {"changelog.time-retained": "1h", "changelog.num-retained.max": "10"})
    now = int(time.time() * 1000)
    housekeeping.expire_snapshots(table.directory, 1, 0, now_millis=now)
    assert kept(table) == [1, 2, 3, 4, 5]
    table.reset_consumer("reader", 3)  # a kept changelog is a valid position
    housekeeping.expire_snapshots(table.directory, 1, 0, now_millis=now + 2 * HOUR_MS)
    assert kept(table) == [3, 4, 5]  # 1 and 2 are old; 3.. the consumer still reads
    for i in (3, 4, 5):
        changelog_files(table, i)
    table.drop_consumer("reader")
    housekeeping.expire_snapshots(table.directory, 1, 0, now_millis=now + 2 * HOUR_MS)
    assert kept(table) == []


def test_a_consumer_beyond_max_still_holds(tmp_path):
    # min 2 reaches further than the snapshots' 1: kept changelogs, with the snapshots' max
    table = make(str(tmp_path / "t"), 6, {"changelog.num-retained.max": "2", "changelog.num-retained.min": "2"})
    table.reset_consumer("slow", 3)  # holds 3 and 2, the snapshot its next change is computed against
    assert table.expire_snapshots(retain_last=1, older_than=0) == [1]
    assert kept(table) == []  # 1 is over max and the consumer reads from 3 on
    assert [s.id for s in table.snapshots()] == [2, 3, 4, 5, 6]
    table.reset_consumer("slow", 6)
    assert table.expire_snapshots(retain_last=1, older_than=0) == [2, 3, 4]
    assert kept(table) == []  # 4 <= 6 - 2: over max, and the consumer is past it


def test_orphan_cleanup_keeps_changelog_files(tmp_path):
    table = make(str(tmp_path / "t"), 4, {"changelog.num-retained.max": "10"})
    table.expire_snapshots(retain_last=2, older_than=0)
    assert kept(table) == [1, 2]
    wanted = {f for i in (1, 2, 3, 4) for f in changelog_files(table, i)}
    bucket = table.directory.bucket_directory((), 0)
    stray = f"{bucket}/changelog-{uuid.uuid4()}-0.parquet"  # a changelog file no commit published
    with open(os.path.join(table.path, stray), "wb") as f:
        f.write(b"x")
    removed = table.remove_orphan_files(older_than=0)
    assert removed == [stray]
    assert wanted <= files_on_disk(table.path)
    for i in (1, 2, 3, 4):
        changelog_files(table, i)
    referenced = set(housekeeping.referenced_files(table.directory, [3, 4], [1, 2]))
    assert wanted <= referenced


def test_a_damaged_kept_changelog_stops_cleanup(tmp_path):
    table = make(str(tmp_path / "t"), 3, {"changelog.num-retained.max": "10"})
    table.expire_snapshots(retain_last=1, older_than=0)
    with open(os.path.join(table.path, "changelog", "changelog-1"), "wb") as f:
        f.write(b"{")
    for call in (lambda: table.expire_snapshots(retain_last=1, older_than=0),
                 lambda: table.remove_orphan_files(older_than=0)):
        with pytest.raises(CorruptTableError, match="changelog-1"):
            call()
    changelog_files(table, 2)  # nothing of what it could not account for was deleted
    assert table.info().kept_changelogs == [1, 2]


def test_cli_info_shows_the_kept_range(tmp_path):
    path = str(tmp_path / "t")
    table = make(path, 4, {"changelog.num-retained.max": "10"})
    table.expire_snapshots(retain_last=1, older_than=0)
    out = subprocess.run([sys.executable, "-m", "mergetree", "info", path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "changelog kept past expired snapshots: 3 commits (1..3)" in out.stdout


# -- the rule against Paimon's own formulation (ExpireChangelogImpl.expire) ---------------------
def paimon_expired(kept_ids: list[int], times: dict[int, int], latest: int, low: int | None, high: int | None,
                   cutoff: int | None, needed: int | None) -> list[int]:
    """Paimon's loop: expire [earliest, end) where end is the first id in [min, maxExclusive)
    still young, else maxExclusive; min from num-retained.max, maxExclusive from num-retained.min
    and the consumers (without Paimon's cap at the newest kept changelog, see `expired_changelogs`)."""
    if not kept_ids:
        return []
    earliest = kept_ids[0]
    start = max(latest - high + 1, earliest) if high is not None else earliest
    max_exclusive = latest - (low or 1) + 1
    if needed is not None:
        max_exclusive = min(max_exclusive, needed)
    max_exclusive = min(max_exclusive, kept_ids[-1] + 1)
    if max_exclusive <= earliest:
        return []
    end = max_exclusive
    for i in range(start, max_exclusive):
        if i in times and (cutoff is None or times[i] >= cutoff):  # gaps: no changelog kept there
            end = i
            break
    return [i for i in kept_ids if i < end]


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_the_retention_rule_is_paimons(data):
    latest = data.draw(st.integers(1, 30), "latest")
    kept_ids = sorted(data.draw(st.sets(st.integers(1, latest), max_size=latest), "kept"))
    times = {i: i * 1000 for i in kept_ids}  # commits are ordered in time
    low = data.draw(st.none() | st.integers(1, 12), "min")
    high = data.draw(st.none() | st.integers(low or 1, 15), "max")
    age = data.draw(st.none() | st.integers(0, 40), "time-retained (s)")
    now = data.draw(st.integers(0, 40), "now (s)") * 1000  # on commit times as often as not
    needed = data.draw(st.none() | st.integers(1, latest + 1), "consumer")
    options = dataclasses.replace(TableOptions.parse({}, SCHEMA, "deduplicate", ("id",)),
                                  changelog_retained_min=low, changelog_retained_max=high,
                                  changelog_time_retained=None if age is None else dt.timedelta(seconds=age))
    snaps = [Snapshot(i, 0, "APPEND", times[i], "", "", 0, 0) for i in kept_ids]
    got = housekeeping.expired_changelogs(options, snaps, latest, now, needed)
    if low is None and high is None and age is None:  # no retention: every kept changelog goes
        assert got == [i for i in kept_ids if needed is None or i < needed]
    else:
        assert got == paimon_expired(kept_ids, times, latest, low, high,
                                     None if age is None else now - age * 1000, needed)


# -- SIGKILL during expiry ------------------------------------------------------------------------
CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from test_changelog_retention import commit_with_changelog
    from mergetree import Table
    from mergetree.table import consumers
    table = Table.open(sys.argv[1])
    while True:
        latest = table.latest_snapshot().id
        commit_with_changelog(table, [latest % 5, 1000 + latest], f"c{latest}")
        # the consumer trails the table by 4 commits
        consumers.record(table.directory, "follower", max(1, table.latest_snapshot().id - 4))
        table.expire_snapshots(retain_last=2, older_than=0)
""")


def check_after_crash(table: Table) -> None:
    """The table reads; every kept changelog and live snapshot's changelog reads back; the
    consumer's file is whole and everything from its position on exists."""
    ids = [s.id for s in table.snapshots()]
    latest = ids[-1]
    rows = table.read().to_pylist()
    # commit 1 (`make`) writes ids 0 and 100; every later commit n one of 0..4 and 1000 + n - 1
    assert len(rows) == len({r["id"] for r in rows})
    assert {r["id"] for r in rows if r["id"] >= 1000} == set(range(1001, 1000 + latest))
    for i in kept(table) + ids:
        changelog_files(table, i)
    if "follower" not in [c.id for c in table.consumers()]:
        return  # killed before the child's first record (a slow start on a loaded machine)
    follower = table.consumer("follower")
    assert all(i in ids or i in kept(table) for i in range(follower.next_snapshot, latest + 1))


def test_sigkill_during_expiry_keeps_changelogs_and_consumers(tmp_path):
    path = str(tmp_path / "t")
    table = make(path, 1, {"changelog.num-retained.max": "8"})
    rng = random.Random(7)
    here = os.path.dirname(os.path.abspath(__file__))
    kills = 0
    for _ in range(8):  # about a third of the child's time is expiry
        child = subprocess.Popen([sys.executable, "-c", CHILD, path, here], stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.7, 1.5))  # imports take ~0.5 s; then it commits and expires
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            kills += 1
        child.wait()
        assert child.returncode == -signal.SIGKILL, child.stderr.read().decode()[-2000:]
        check_after_crash(Table.open(path))
    assert kills == 8
    table = Table.open(path)
    # the table goes on after the kills (on a loaded machine the children may have done little):
    # the same work here until snapshots expired, changelogs were kept and expired again
    while table.latest_snapshot().id <= 20:
        latest = table.latest_snapshot().id
        commit_with_changelog(table, [latest % 5, 1000 + latest], f"c{latest}")
        consumers.record(table.directory, "follower", max(1, table.latest_snapshot().id - 4))
        table.expire_snapshots(retain_last=2, older_than=0)
    check_after_crash(table)
    assert table.snapshots()[0].id > 10
    assert kept(table) and kept(table)[0] > 1
    # the debris of the kills goes; what the table and its kept changelogs use stays
    table.remove_orphan_files(older_than=0)
    check_after_crash(Table.open(path))
    store = table.directory.store
    referenced = set(housekeeping.referenced_files(table.directory, store.snapshot_ids(), kept(table)))
    leftovers = {p for p in files_on_disk(path) - referenced
                 if not p.startswith(("snapshot/", "schema/", "changelog/", "consumer/", "queries/"))}
    assert not leftovers, leftovers
