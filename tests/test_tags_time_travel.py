"""Time travel by snapshot id, tag name or point in time, and Paimon's tags (`create_tag`,
`delete_tag`, `tags`, the CLI's `tag`): each against the rows the table held then; expiry keeps
what a tag needs and deleting the tag of an expired snapshot removes what only it kept;
pypaimon and Java Paimon read mergetree's tags, and mergetree reads pypaimon's."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from paimon_fixtures import java_read, needs_java_paimon, needs_pypaimon, pypaimon_read, write_paimon

import mergetree as mt
from mergetree import InvalidArgumentError, SnapshotNotFoundError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _history(tmp_path: Path, commits: int = 4, **create) -> tuple[mt.Table, Path, list[dt.datetime], list[list]]:
    """A table of `commits` writes: the moment after each, and the rows after each."""
    path = tmp_path / "wh" / "db.db" / "t"
    t = mt.Table.create(path, SCHEMA, primary_key=["id"], buckets=2, **create)
    moments, states, state = [], [], {}
    for i in range(commits):
        rows = {"id": [i, 0], "v": [f"v{i}", f"zero{i}"]}
        t.write(pa.table(rows))
        state.update(zip(rows["id"], rows["v"]))
        states.append(sorted(state.items()))
        time.sleep(0.02)
        moments.append(dt.datetime.now())
        time.sleep(0.02)
    return t, path, moments, states


def _rows(table: pa.Table) -> list:
    return sorted((r["id"], r["v"]) for r in table.to_pylist())


def test_time_travel_by_a_point_in_time_reads_the_newest_snapshot_at_or_before_it(tmp_path):
    t, _, moments, states = _history(tmp_path)
    for moment, state in zip(moments, states):
        assert _rows(t.read(snapshot=moment)) == state
        assert _rows(t.read(snapshot=moment.isoformat())) == state
        aware = moment.astimezone(dt.timezone.utc)
        assert _rows(t.read(snapshot=aware)) == state and _rows(t.read(snapshot=aware.isoformat())) == state
    assert _rows(t.read(snapshot=dt.datetime.now() + dt.timedelta(days=1))) == states[-1]
    with pytest.raises(SnapshotNotFoundError, match="at or before 2001-01-01"):
        t.read(snapshot=dt.datetime(2001, 1, 1))
    with pytest.raises(SnapshotNotFoundError, match="no tag 'yesterday'"):
        t.read(snapshot="yesterday")
    for moment in moments:  # the id itself: the newest snapshot (a compaction's too) committed by then
        millis = moment.timestamp() * 1000
        assert t.plan(snapshot=moment).snapshot_id == max(s.id for s in t.snapshots() if s.time_millis <= millis)


def test_tags_are_created_read_listed_and_deleted(tmp_path):
    t, path, moments, states = _history(tmp_path)
    first = t.create_tag("first", snapshot=moments[0])
    assert _rows(t.read(snapshot="first")) == states[0]
    latest = t.create_tag("latest")
    assert latest.id == t.latest_snapshot().id
    assert t.create_tag("by-id", snapshot=first.id).id == first.id
    assert t.create_tag("from-tag", snapshot="first").id == first.id
    assert {name: s.id for name, s in t.tags().items()} == {"by-id": first.id, "first": first.id,
                                                             "from-tag": first.id, "latest": latest.id}
    # the tag file is the snapshot's own document, as Java writes a tag without a retention
    assert (path / "tag" / "tag-first").read_bytes() == (path / "snapshot" / f"snapshot-{first.id}").read_bytes()
    with pytest.raises(InvalidArgumentError, match="already has a tag 'first'"):
        t.create_tag("first")
    for bad in ("", "  ", "a/b", 7):
        with pytest.raises(InvalidArgumentError, match="tag name"):
            t.create_tag(bad)
    t.delete_tag("by-id")
    assert "by-id" not in t.tags() and not (path / "tag" / "tag-by-id").exists()
    with pytest.raises(SnapshotNotFoundError, match="no tag 'by-id'"):
        t.delete_tag("by-id")
    assert _rows(mt.Table.open(path).read(snapshot="from-tag")) == states[0]


def test_a_tag_named_like_a_time_is_the_tag(tmp_path):
    t, _, moments, states = _history(tmp_path)
    name = moments[-1].date().isoformat()  # Paimon's automatic tags are named by their day
    t.create_tag(name, snapshot=moments[0])
    assert _rows(t.read(snapshot=name)) == states[0]


def test_expiry_keeps_what_a_tag_needs_and_deleting_it_removes_what_only_it_kept(tmp_path):
    t, path, moments, states = _history(tmp_path, commits=5)
    t.create_tag("old", snapshot=moments[1])
    t.create_tag("older", snapshot=moments[0])
    files_before = sum(len(files) for _, _, files in os.walk(path))
    t.expire_snapshots(retain_last=1, older_than=0)
    assert len(t.snapshots()) == 1
    assert _rows(t.read(snapshot="old")) == states[1] and _rows(t.read(snapshot="older")) == states[0]
    t.remove_orphan_files(older_than=0)  # nothing a tag needs is an orphan
    assert _rows(t.read(snapshot="old")) == states[1]
    t.delete_tag("older")
    after_one = sum(len(files) for _, _, files in os.walk(path))
    assert after_one < files_before
    assert _rows(t.read(snapshot="old")) == states[1] and _rows(t.read()) == states[-1]
    t.delete_tag("old")
    assert sum(len(files) for _, _, files in os.walk(path)) < after_one
    assert _rows(t.read()) == states[-1]


def test_change_streams_take_tags_and_points_in_time(tmp_path):
    t, _, moments, states = _history(tmp_path)
    t.create_tag("start", snapshot=moments[1])
    by_tag = t.changes(start="start").read_all()
    by_time = t.changes(start=moments[1]).read_all()
    assert by_tag.to_pylist() == by_time.to_pylist()
    changed = {r["id"]: r["v"] for r in by_tag.to_pylist() if r["_row_kind"] in ("+I", "+U")}
    assert changed == {k: v for k, v in states[-1] if dict(states[1]).get(k) != v}


def test_concurrent_tags_of_one_name_one_wins(tmp_path):
    t, path, _, _ = _history(tmp_path, commits=2)
    tables = [mt.Table.open(path) for _ in range(4)]
    barrier = threading.Barrier(len(tables))
    won, lost = [], []

    def tag(i: int, table: mt.Table) -> None:
        barrier.wait()
        try:
            won.append(table.create_tag("release", snapshot=1 + i % 2))
        except InvalidArgumentError:
            lost.append(i)

    threads = [threading.Thread(target=tag, args=(i, tb)) for i, tb in enumerate(tables)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(won) == 1 and len(lost) == 3 and t.tags()["release"].id == won[0].id


def test_the_cli_tags_and_time_travels(tmp_path):
    t, path, moments, states = _history(tmp_path, commits=3)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True)

    done = cli("tag", str(path), "v1", "--snapshot", moments[0].isoformat())
    assert done.returncode == 0 and "as 'v1'" in done.stdout, done.stderr
    listed = cli("tag", str(path))
    assert listed.returncode == 0 and "v1" in listed.stdout
    read = cli("read", str(path), "--snapshot", "v1")
    assert read.returncode == 0 and "(1 row)" in read.stdout and "zero0" in read.stdout
    read = cli("read", str(path), "--snapshot", moments[1].isoformat(), "--limit", "0")
    assert read.returncode == 0 and f"({len(states[1])} rows)" in read.stdout
    changes = cli("changes", str(path), "--from", "v1", "--format", "json")
    assert changes.returncode == 0 and '"v2"' in changes.stdout
    assert cli("tag", str(path), "--delete", "v1").returncode == 0 and "v1" not in t.tags()
    refused = cli("tag", str(path), "--delete", "v1")
    assert refused.returncode != 0 and "no tag 'v1'" in refused.stderr


@needs_pypaimon
def test_pypaimon_reads_mergetrees_tags_and_mergetree_reads_after_its_writes(tmp_path):
    t, path, moments, states = _history(tmp_path, commits=3, options={"deletion-vectors.enabled": "true"})
    t.create_tag("first", snapshot=moments[0])
    t.expire_snapshots(retain_last=1, older_than=0)
    work = tmp_path / "work"
    work.mkdir()
    assert _rows(pypaimon_read(tmp_path / "wh", "db.t", work, snapshot="first")) == states[0]
    write_paimon(work, tmp_path / "wh", "db.t", [pa.table({"id": [9], "v": ["p"]})], ["id"])
    t = mt.Table.open(path)
    t.compact()
    assert _rows(t.read(snapshot="first")) == states[0]
    assert _rows(t.read()) == sorted([*states[-1], (9, "p")])


@needs_java_paimon
def test_java_paimon_reads_mergetrees_tags(tmp_path):
    t, _, moments, states = _history(tmp_path, commits=3)
    t.create_tag("second", snapshot=moments[1])
    t.expire_snapshots(retain_last=1, older_than=0)
    assert _rows(java_read(tmp_path / "wh", "db.t", tmp_path / "work", snapshot="second")) == states[1]


def test_a_tag_of_a_tag_whose_snapshot_expired(tmp_path):
    t, _, moments, states = _history(tmp_path, commits=3)
    t.create_tag("first", snapshot=moments[0])
    t.expire_snapshots(retain_last=1, older_than=0)
    assert t.create_tag("again", snapshot="first").id == t.tags()["first"].id
    t.delete_tag("first")
    assert _rows(t.read(snapshot="again")) == states[0]
