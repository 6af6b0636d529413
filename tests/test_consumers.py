"""Consumers: named readers whose progress (the next snapshot they read) holds back expiry;
idle ones expire; reset, drop, bad ids, unknown and damaged consumers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from mergetree import ConsumerNotFoundError, CorruptTableError, InvalidArgumentError, Table
from mergetree.table import consumers, housekeeping, paths

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
HOUR_MS = 3_600_000


def table_with_commits(path: str, commits: int, options: dict | None = None) -> tuple[Table, dict[int, dict]]:
    """A table with `commits` writes (each changes some keys, the last key deleted at times);
    returns it and the model: snapshot id -> {id: v}."""
    # write-only: no compaction commits, so snapshot ids are the writes
    table = Table.create(path, SCHEMA, primary_key="id", options={"write-only": "true", **(options or {})})
    state: dict[int, str] = {}
    model = {}
    for i in range(commits):
        rows = {"id": [i % 4, 10 + i], "v": [f"a{i}", f"b{i}"]}
        snapshot = table.write(rows)
        state.update(zip(rows["id"], rows["v"]))
        model[snapshot.id] = dict(state)
    return table, model


def as_state(data: pa.Table) -> dict:
    return {r["id"]: r["v"] for r in data.to_pylist()}


def test_a_consumer_holds_back_expiry_until_dropped(tmp_path):
    table, model = table_with_commits(str(tmp_path / "t"), 6)
    ids = [s.id for s in table.snapshots()]
    held = ids[2]
    table.reset_consumer("job", held)
    # it holds what it reads next and the snapshot before, which its next change is computed against
    assert table.expire_snapshots(retain_last=1, older_than=0) == ids[:1]
    assert [s.id for s in table.snapshots()] == ids[1:]
    for i in ids[1:]:  # everything the consumer still reads is readable, files and all
        assert as_state(table.read(snapshot=i)) == model[i]

    # a consumer advancing releases what it has read
    consumers.record(table.directory, "job", ids[4])
    assert table.expire_snapshots(retain_last=1, older_than=0) == ids[1:3]
    assert as_state(table.read(snapshot=ids[3])) == model[ids[3]]

    table.drop_consumer("job")
    assert table.consumers() == []
    assert table.expire_snapshots(retain_last=1, older_than=0) == ids[3:5]
    assert as_state(table.read()) == model[ids[-1]]


def test_the_oldest_of_several_consumers_counts(tmp_path):
    table, model = table_with_commits(str(tmp_path / "t"), 5)
    ids = [s.id for s in table.snapshots()]
    table.reset_consumer("fast", ids[-1] + 1)  # caught up: holds nothing
    table.reset_consumer("slow", ids[2])
    assert table.expire_snapshots(retain_last=1, older_than=0) == ids[:1]
    assert [c.id for c in table.consumers()] == ["fast", "slow"]
    assert as_state(table.read(snapshot=ids[1])) == model[ids[1]]


def _age(table: Table, consumer_id: str, millis: int) -> None:
    """Make a consumer's last recorded progress `millis` ago: a Paimon consumer's time is its
    file's modification time (as Java's `ConsumerManager.expire` reads it)."""
    where = os.path.join(table.path, table.directory.store.consumer_file(consumer_id))
    then = time.time() - millis / 1000
    os.utime(where, (then, then))


def test_an_idle_consumer_expires_and_holds_nothing(tmp_path):
    table, _ = table_with_commits(str(tmp_path / "t"), 4, {"consumer.expiration-time": "1h"})
    ids = [s.id for s in table.snapshots()]
    now = int(time.time() * 1000)
    consumers.record(table.directory, "idle", ids[0])
    consumers.record(table.directory, "active", ids[2])
    _age(table, "idle", 2 * HOUR_MS)
    _age(table, "active", HOUR_MS // 2)
    assert housekeeping.expire_snapshots(table.directory, 1, 0, now_millis=now) == ids[:1]
    assert [c.id for c in table.consumers()] == ["active"]  # idle was removed, active holds ids[1:]
    # half an hour later the active one is idle too
    assert housekeeping.expire_snapshots(table.directory, 1, 0, now_millis=now + HOUR_MS) == ids[1:-1]
    assert table.consumers() == []


def test_consumers_never_expire_without_the_option(tmp_path):
    table, _ = table_with_commits(str(tmp_path / "t"), 3)
    ids = [s.id for s in table.snapshots()]
    consumers.record(table.directory, "old", ids[0], now_millis=0)  # 1970
    assert table.expire_snapshots(retain_last=1, older_than=0) == []
    assert table.consumer("old").next_snapshot == ids[0]


def test_record_moves_forward_only_and_refreshes_the_time(tmp_path):
    table, _ = table_with_commits(str(tmp_path / "t"), 3)
    d = table.directory
    first = consumers.record(d, "c", 3)
    assert (first.id, first.next_snapshot) == ("c", 3)
    assert abs(first.updated - time.time() * 1000) < 60_000  # the file's time: just written
    _age(table, "c", HOUR_MS)
    assert table.consumer("c").updated < first.updated - HOUR_MS // 2
    moved = consumers.record(d, "c", 2)
    assert moved.next_snapshot == 3  # not back
    assert moved.updated >= first.updated and table.consumer("c") == moved  # but the time is refreshed
    _age(table, "c", HOUR_MS)
    forward = consumers.record(d, "c", 4)
    assert forward.next_snapshot == 4 and forward.updated >= first.updated
    assert table.consumer("c") == forward
    # reset moves it back (checked)
    assert table.reset_consumer("c", 1).next_snapshot == 1
    with pytest.raises(InvalidArgumentError, match="positive|at least 1"):
        consumers.record(d, "c", 0)


def test_reset_checks_the_snapshot(tmp_path):
    table, _ = table_with_commits(str(tmp_path / "t"), 3)
    ids = [s.id for s in table.snapshots()]
    table.expire_snapshots(retain_last=2, older_than=0)
    live = [s.id for s in table.snapshots()]
    for bad in (ids[0], live[-1] + 2, 0, -1, True, 1.5, "2"):
        with pytest.raises(InvalidArgumentError):
            table.reset_consumer("c", bad)
    assert table.consumers() == []  # nothing written on failure
    assert table.reset_consumer("c", live[-1] + 1).next_snapshot == live[-1] + 1  # the next commit
    assert table.reset_consumer("c", live[0]).next_snapshot == live[0]


def test_an_empty_table_takes_a_consumer_at_the_first_commit(tmp_path):
    table = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id")
    with pytest.raises(InvalidArgumentError, match="give one of them or 1"):
        table.reset_consumer("c", 2)
    assert table.reset_consumer("c", 1).next_snapshot == 1


@pytest.mark.parametrize("bad", ["", "a/b", "../x", "/", "a\nb", "a\x00b", "x" * 201, 5, None])
def test_bad_consumer_ids(tmp_path, bad):
    table, _ = table_with_commits(str(tmp_path / "t"), 1)
    for call in (lambda: table.reset_consumer(bad, 1), lambda: table.consumer(bad),
                 lambda: table.drop_consumer(bad), lambda: consumers.record(table.directory, bad, 1)):
        with pytest.raises(InvalidArgumentError, match="consumer id"):
            call()
    assert not os.path.exists(os.path.join(table.path, paths.CONSUMER_DIR)) or \
        os.listdir(os.path.join(table.path, paths.CONSUMER_DIR)) == []


@pytest.mark.parametrize("name", ["..", ".", "a b", "é", "x" * 200])
def test_ids_java_takes_are_files_inside_consumer(tmp_path, name):
    """Java names a consumer's file `consumer-<id>` and takes any id: '..' or '.' name the file
    `consumer-..`, never a path out of consumer/."""
    table, _ = table_with_commits(str(tmp_path / "t"), 1)
    assert table.reset_consumer(name, 1).next_snapshot == 1
    assert os.listdir(os.path.join(table.path, paths.CONSUMER_DIR)) == [f"consumer-{name}"]
    assert [c.id for c in table.consumers()] == [name] and table.consumer(name).next_snapshot == 1
    table.drop_consumer(name)
    assert table.consumers() == [] and os.listdir(os.path.join(table.path, paths.CONSUMER_DIR)) == []
    assert os.listdir(tmp_path) == ["t"]  # nothing written beside the table


def test_unknown_consumer_is_one_clear_error(tmp_path):
    table, _ = table_with_commits(str(tmp_path / "t"), 1)
    with pytest.raises(ConsumerNotFoundError, match="has no consumer 'nope'; it has no consumers"):
        table.consumer("nope")
    table.reset_consumer("b", 1)
    table.reset_consumer("a.1", 1)
    with pytest.raises(ConsumerNotFoundError, match="has no consumer 'nope'; its consumers: a.1, b"):
        table.consumer("nope")
    with pytest.raises(ConsumerNotFoundError, match="its consumers: a.1, b"):
        table.drop_consumer("nope")
    assert isinstance(ConsumerNotFoundError("x"), LookupError)


@pytest.mark.parametrize("content", [b"", b"{not json", b"[1]", b'{"nextSnapshot": "3", "updated": 0}',
                                     b'{"nextSnapshot": 0, "updated": 0}', b'{"updated": 5}',
                                     b'{"nextSnapshot": true}'])
def test_a_damaged_consumer_file(tmp_path, content, monkeypatch):
    # a damaged file is read again before it counts as damaged (a writer may be mid-write): the
    # tries are the same, without their pauses (about 4 s of this test's calls)
    monkeypatch.setattr(consumers, "CONSUMER_READ_PAUSE", 0.0)
    table, _ = table_with_commits(str(tmp_path / "t"), 3, {"consumer.expiration-time": "1s"})
    ids = [s.id for s in table.snapshots()]
    table.reset_consumer("good", ids[1])
    relative = table.directory.store.consumer_file("bad")
    with open(os.path.join(table.path, relative), "wb") as f:
        f.write(content)
    for call in (lambda: table.consumer("bad"), table.consumers):
        with pytest.raises(CorruptTableError, match="consumer-bad") as caught:
            call()
        assert caught.value.path.endswith(relative)
    # info and expiry go on: the damaged one is shown, holds nothing back and is left in place
    info = table.info()
    assert [c.id for c in info.consumers] == ["good"] and list(info.damaged_consumers) == ["bad"]
    later = int(time.time() * 1000) + HOUR_MS  # the good one has expired by then
    assert housekeeping.expire_snapshots(table.directory, 1, 0, now_millis=later) == ids[:-1]
    assert os.path.exists(os.path.join(table.path, relative))
    # a reset rewrites it, a drop removes it
    assert table.reset_consumer("bad", ids[-1]).next_snapshot == ids[-1]
    table.drop_consumer("bad")
    assert table.consumers() == []


def test_consumer_files_are_whole_json(tmp_path):
    table, _ = table_with_commits(str(tmp_path / "t"), 2)
    table.reset_consumer("c", 2)
    with open(os.path.join(table.path, table.directory.store.consumer_file("c"))) as f:
        document = json.load(f)
    assert document == {"nextSnapshot": 2}  # Java's Consumer: the position alone, its time the file's
    assert table.remove_orphan_files(older_than=0) == []  # a consumer is part of the table


def test_cli_info_lists_consumers(tmp_path):
    path = str(tmp_path / "t")
    table, _ = table_with_commits(path, 3)
    table.reset_consumer("downstream", 2)
    with open(os.path.join(path, table.directory.store.consumer_file("broken")), "wb") as f:
        f.write(b"{")
    out = subprocess.run([sys.executable, "-m", "mergetree", "info", path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "consumers" in text and "next snapshot" in text and "last advanced" in text
    line = next(row for row in text.splitlines() if "downstream" in row)
    assert line.split()[:2] == ["downstream", "2"]
    assert any("broken" in row and "damaged" in row for row in text.splitlines())


def test_consumers_on_an_object_store(s3_server, monkeypatch):
    monkeypatch.setenv("MERGETREE_QUERY_LOG", "0")  # flushed after the server may have stopped
    uri = f"s3://lake/consumers-{os.getpid()}-{time.time_ns()}"
    table = Table.create(uri, SCHEMA, primary_key="id", options={"write-only": "true"},
                         storage_options=s3_server.options())
    ids = [table.write({"id": [i], "v": [str(i)]}).id for i in range(4)]
    table.reset_consumer("remote", ids[1])
    consumers.record(table.directory, "remote", ids[2])
    assert table.consumer("remote").next_snapshot == ids[2]
    # ids[1]: what its next change is computed against
    assert table.expire_snapshots(retain_last=1, older_than=0) == ids[:1]
    assert as_state(table.read(snapshot=ids[2])) == {0: "0", 1: "1", 2: "2"}
    assert [c.id for c in Table.open(uri, storage_options=s3_server.options()).consumers()] == ["remote"]
    table.drop_consumer("remote")
    assert table.consumers() == []
    assert table.expire_snapshots(retain_last=1, older_than=0) == ids[1:3]
