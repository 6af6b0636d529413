"""A Paimon table's services through the engine (issue 36: one engine for every table): options
changed as Java's ALTER TABLE changes them (`Table.set_options`), snapshots expired as Paimon
keeps a table (`Table.expire_snapshots`: tags, consumers, kept changelogs, external paths,
deletion vectors, the EARLIEST hint) and orphan files removed by Paimon's kinds of file
(`Table.remove_orphan_files`) — each checked against what the table held before, and by
pypaimon's reads afterwards."""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from paimon_fixtures import needs_pypaimon, pypaimon_read, rows, write_paimon

import mergetree.paimon as mp
from mergetree import CommitConflictError, InvalidArgumentError, Table, UnsupportedPaimonFeatureError
from mergetree.storage import StorageError
from mergetree.table.paimon.create import create_table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("name", pa.string())])


def batch(lo: int, hi: int, v: int) -> pa.Table:
    ids = np.arange(lo, hi)
    return pa.table({"id": ids, "v": np.full(len(ids), v), "name": [f"n{i % 7}" for i in ids]}, schema=SCHEMA)


def files_of(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/") for d, _, fs in os.walk(root) for f in fs}


def schema_file(root: Path, schema_id: int) -> dict:
    return json.loads((root / "schema" / f"schema-{schema_id}").read_text())


def sorted_rows(table: pa.Table) -> list[dict]:
    return rows(table.select(SCHEMA.names), ["id"])


# -- options, as Java's ALTER TABLE changes them ---------------------------------------------

@needs_pypaimon
def test_set_options_publishes_the_next_schema_as_java_alters_a_table(tmp_path):
    wh, root = tmp_path / "wh", tmp_path / "wh" / "db.db" / "t"
    create_table(str(wh), "db.t", SCHEMA, primary_key="id", buckets=2, options={"write-only": "true"})
    t = Table.open(root)
    t.write(batch(0, 500, 1))
    before = schema_file(root, 0)
    t.set_options({"query-log.retention": "7d", "target-file-size": "64mb", "snapshot.num-retained.min": 3,
                   "write-only": False})
    after = schema_file(root, 1)
    # the same fields and keys, in Java's layout; mergetree's own option under its prefix
    assert list(after) == list(before)
    assert {k: after[k] for k in ("fields", "highestFieldId", "partitionKeys", "primaryKeys")} == \
        {k: before[k] for k in ("fields", "highestFieldId", "partitionKeys", "primaryKeys")}
    assert after["id"] == 1 and after["timeMillis"] >= before["timeMillis"]
    assert after["options"] == {**before["options"], "mergetree.query-log.retention": "7d",
                                "target-file-size": "64mb", "snapshot.num-retained.min": "3", "write-only": "false"}
    # the engine takes them at once, and a table opened afresh too
    assert t.directory.options.query_log_retention == dt.timedelta(days=7)
    reopened = Table.open(root)
    assert reopened.directory.options.target_file_size == 64 * 2**20 and not reopened.directory.options.write_only
    t.set_options({"target-file-size": None})  # reset, as Java's RESET
    assert "target-file-size" not in schema_file(root, 2)["options"]
    # written under the new schema, read by pypaimon and mergetree alike
    t.write(batch(400, 600, 2))
    expected = sorted_rows(pa.concat_tables([batch(0, 400, 1), batch(400, 600, 2)]))
    assert sorted_rows(pypaimon_read(wh, "db.t", tmp_path)) == expected
    assert sorted_rows(Table.open(root).read()) == expected


@needs_pypaimon
def test_options_pypaimon_alters_are_the_engines_too(tmp_path):
    wh = tmp_path / "wh"
    write_paimon(tmp_path / "w", wh, "db.t", [batch(0, 100, 1)], ["id"], options={"bucket": "2"},
                 alter=[("set_option", "mergetree.query-log.retention", "3d"), "commit"])
    t = Table.open(wh / "db.db" / "t")
    assert t.directory.options.query_log_retention == dt.timedelta(days=3)
    t.set_options({"query-log.retention": "5d"})
    assert schema_file(wh / "db.db" / "t", 2)["options"]["mergetree.query-log.retention"] == "5d"
    assert sorted_rows(pypaimon_read(wh, "db.t", tmp_path)) == sorted_rows(batch(0, 100, 1))


@pytest.mark.parametrize("change, error, match", [
    ({"bucket": "4"}, UnsupportedPaimonFeatureError, "rescale"),
    ({"merge-engine": "first-row"}, UnsupportedPaimonFeatureError, "'merge-engine' cannot be changed"),
    ({"bucket-key": "name"}, UnsupportedPaimonFeatureError, "'bucket-key' cannot be changed"),
    ({"type": "format-table"}, UnsupportedPaimonFeatureError, "'type' cannot be changed"),
    ({"deletion-vectors.enabled": "true"}, UnsupportedPaimonFeatureError, "deletion-vectors.modifiable"),
    ({"ignore-delete": "false"}, UnsupportedPaimonFeatureError, "from true to false"),
    ({"deletion-vector.enabled": "true"}, InvalidArgumentError, "did you mean 'deletion-vectors.enabled'"),
    ({"query-log.retention": "soon"}, InvalidArgumentError, "query-log.retention"),
    ({"file-index.bloom-filter.columns": "nope"}, UnsupportedPaimonFeatureError, "names column 'nope'"),
    ({"changelog-producer": "sometimes"}, UnsupportedPaimonFeatureError, "changelog-producer"),
    ({1: "x"}, InvalidArgumentError, "option names are strings"),
    ({"path": "/elsewhere"}, UnsupportedPaimonFeatureError, "'path' cannot be changed"),
    ({"snapshot.num-retained.min": "x"}, UnsupportedPaimonFeatureError, "not a whole number"),
    ({"snapshot.time-retained": "banana"}, UnsupportedPaimonFeatureError, "snapshot.time-retained"),
    ({"changelog.num-retained.max": "0"}, UnsupportedPaimonFeatureError, "at least 1"),
    ({"snapshot.num-retained.min": " 5"}, UnsupportedPaimonFeatureError, "whole number Java reads"),
    ({"snapshot.num-retained.max": "9999999999"}, UnsupportedPaimonFeatureError, "whole number Java reads"),
    ({"snapshot.time-retained": "5 mins"}, UnsupportedPaimonFeatureError, "snapshot.time-retained"),
    ({"changelog.time-retained": "2w"}, UnsupportedPaimonFeatureError, "changelog.time-retained"),
])
def test_a_change_java_or_mergetree_would_refuse_writes_nothing(tmp_path, change, error, match):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=2, options={"ignore-delete": "true"})
    t = Table.open(root)
    t.write(batch(0, 50, 1))
    with pytest.raises(error, match=match):
        t.set_options(change)
    assert sorted(os.listdir(root / "schema")) == ["schema-0"]
    assert Table.open(root).read().num_rows == 50


def test_option_values_as_java_writes_and_reads_them(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=1,
                 options={"ignore-delete": "true", "changelog.time-retained": "2 days"})
    t = Table.open(root)
    t.write(batch(0, 10, 1))
    assert t.directory.options.changelog_time_retained == dt.timedelta(days=2)  # Java's spelling, read
    t.set_options({"snapshot.time-retained": dt.timedelta(minutes=30), "ignore-delete": None})  # a reset is allowed
    options = schema_file(root, 1)["options"]
    assert options["snapshot.time-retained"] == "1800000 ms" and "ignore-delete" not in options


def test_options_java_allows_before_the_first_commit_and_a_concurrent_change(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=2)
    t = Table.open(root)
    t.set_options({"deletion-vectors.enabled": "true"})  # no snapshot yet: Java allows it too
    assert Table.open(root).directory.options.deletion_vectors
    first, second = Table.open(root), Table.open(root)
    first.set_options({"target-file-size": "32mb"})
    with pytest.raises(CommitConflictError, match="changed since it was opened"):
        second.directory.store.alter_options({"target-file-size": "16mb"})  # planned on schema 1
    assert schema_file(root, 2)["options"]["target-file-size"] == "32mb"
    with pytest.raises(InvalidArgumentError, match="a dict"):
        first.set_options("target-file-size=1mb")


# -- snapshot expiry ---------------------------------------------------------------------------

def snapshots_read(t: Table, ids) -> dict[int | str, list[dict]]:
    return {i: sorted_rows(t.read(snapshot=i)) for i in ids}


@needs_pypaimon
def test_expiry_keeps_what_tags_and_consumers_need_and_pypaimon_reads_the_rest(tmp_path):
    """A pypaimon table with pypaimon's tags, written on by mergetree and compacted: expiry
    removes the old snapshots and every file only they used; the tags, the consumer's
    snapshots and the latest read as before, by mergetree and by pypaimon."""
    wh, root = tmp_path / "wh", tmp_path / "wh" / "db.db" / "t"
    write_paimon(tmp_path / "w", wh, "db.t", [batch(0, 300, 1), batch(200, 400, 2), batch(0, 50, 3)], ["id"],
                 options={"bucket": "2"}, tags={"first": 1, "second": 2})
    t = Table.open(root)
    for v in range(4, 9):
        t.write(batch(v * 40, v * 40 + 120, v))  # each followed by its compaction
    t.compact(full=True)
    t.write(batch(0, 10, 99))
    ids = [s.id for s in t.snapshots()]
    t.changes(start=ids[-5], end=ids[-4], consumer_id="reader").read_all()  # holds back what it reads next
    next_snapshot = t.consumer("reader").next_snapshot
    assert next_snapshot == ids[-4] + 1
    before = snapshots_read(t, [*ids, "first", "second"])
    on_disk = files_of(root)

    expired = t.expire_snapshots(retain_last=2, older_than=0)
    assert expired == [i for i in ids if i < next_snapshot - 1]
    left = [s.id for s in t.snapshots()]
    assert left == [i for i in ids if i not in expired]
    assert (root / "snapshot" / "EARLIEST").read_text() == str(left[0])
    assert snapshots_read(t, [*left, "first", "second"]) == {k: before[k] for k in [*left, "first", "second"]}
    for tag in ("first", "second"):
        assert sorted_rows(pypaimon_read(wh, "db.t", tmp_path, tag)) == before[tag]
    assert sorted_rows(pypaimon_read(wh, "db.t", tmp_path)) == before[ids[-1]]
    # every file expiry removed was one only the expired snapshots used; what stays is used
    removed = on_disk - files_of(root)
    assert removed and not any(f.startswith(("schema/", "tag/", "consumer/")) for f in removed)
    assert {f"snapshot/snapshot-{i}" for i in expired} <= removed
    assert not t.remove_orphan_files(older_than=0), "expiry left files nothing uses"


def test_expiry_of_a_deletion_vector_table_with_external_paths(tmp_path):
    root, ext = tmp_path / "t", tmp_path / "ext"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=2,
                 options={"deletion-vectors.enabled": "true", "data-file.external-paths": f"file://{ext}",
                          "data-file.external-paths.strategy": "round-robin"})
    t = Table.open(root)
    for v in range(6):
        t.write(batch(v * 30, v * 30 + 100, v))
    expected = sorted_rows(t.read())
    inside, outside = files_of(root), files_of(ext)
    assert outside and any(f.startswith("index/") for f in inside)
    expired = t.expire_snapshots(retain_last=1, older_than=0)
    assert expired and [s.id for s in t.snapshots()] == [max(expired) + 1]
    assert sorted_rows(t.read()) == expected
    # the expired snapshots' data files went from the external root, their index files from index/
    assert outside - files_of(ext) and inside - files_of(root)
    live = {os.path.basename(e.file.origin.file.path)
            for e in t.directory.live_files(t.directory.latest_snapshot()).values()}
    assert {os.path.basename(f) for f in files_of(ext)} >= live
    assert len([f for f in files_of(root) if f.startswith("index/")]) >= 1
    assert not t.remove_orphan_files(older_than=0)


def test_expiry_keeps_every_expired_snapshots_changelog_when_java_would(tmp_path):
    """Java keeps an expired snapshot's changelog (``changelog/changelog-<id>``, every id, with
    the EARLIEST/LATEST hints) only when the changelog's retention reaches further than the
    snapshots' (``changelog.num-retained.min`` 20 against ``snapshot.num-retained.min``'s 10)."""
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=1,
                 options={"changelog-producer": "input", "changelog.num-retained.min": "20"})
    t = Table.open(root)
    for v in range(4):
        t.write(batch(v * 10, v * 10 + 20, v))
    appends = [s.id for s in t.snapshots() if s.changelog_manifest_list]
    changes = {i: t.changes(start=i - 1, end=i, source="changelog").read_all() for i in appends}
    expired = t.expire_snapshots(retain_last=1, older_than=0)
    kept = sorted(int(n.split("-")[1]) for n in os.listdir(root / "changelog") if n.startswith("changelog-"))
    assert kept == expired and len(expired) == len(t.snapshots()) + len(expired) - 1
    assert (root / "changelog" / "EARLIEST").read_text() == str(kept[0])
    assert (root / "changelog" / "LATEST").read_text() == str(kept[-1])
    for i in appends:  # the kept changelog of an expired snapshot still reads, as written
        if i in expired:
            assert t.changes(start=i - 1, end=i, source="changelog").read_all() == changes[i]
    assert not t.remove_orphan_files(older_than=0)
    # retention no further than the snapshots': nothing kept, as Java
    other = tmp_path / "u"
    create_table(str(other), None, SCHEMA, primary_key="id", buckets=1,
                 options={"changelog-producer": "input", "changelog.num-retained.max": "10"})
    u = Table.open(other)
    for v in range(3):
        u.write(batch(v * 10, v * 10 + 20, v))
    assert u.expire_snapshots(retain_last=1, older_than=0) and not (other / "changelog").exists()


@pytest.mark.parametrize("fail_at", range(0, 48, 3))
def test_an_expiry_that_stops_anywhere_leaves_a_readable_table(tmp_path, monkeypatch, fail_at):
    """Every delete of an expiry, and every one after it, fails from the `fail_at`-th on (a
    crash there): the table reads as before at its latest snapshot and every snapshot left;
    the next expiry and orphan removal finish the job."""
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=2, options={"deletion-vectors.enabled": "true"})
    t = Table.open(root)
    for v in range(5):
        t.write(batch(v * 25, v * 25 + 60, v))
    expected = sorted_rows(t.read())
    storage = t.directory.storage
    calls = {"n": 0}
    real_delete = type(storage).delete

    def failing_delete(self, relative):
        calls["n"] += 1
        if calls["n"] > fail_at:
            raise StorageError(f"crashed before deleting {relative}", uri=str(root))
        return real_delete(self, relative)

    monkeypatch.setattr(type(storage), "delete", failing_delete)
    try:
        t.expire_snapshots(retain_last=1, older_than=0)
    except StorageError:
        pass
    monkeypatch.undo()
    t = Table.open(root)
    assert sorted_rows(t.read()) == expected
    for i in t.snapshots():
        t.read(snapshot=i.id)
    t.expire_snapshots(retain_last=1, older_than=0)
    t.remove_orphan_files(older_than=0)
    assert sorted_rows(Table.open(root).read()) == expected
    assert len(t.snapshots()) == 1


# -- orphan files ------------------------------------------------------------------------------

def test_orphan_removal_deletes_only_paimons_kinds_of_file_nothing_uses(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=2)
    t = Table.open(root)
    for v in range(3):
        t.write(batch(v * 10, v * 10 + 40, v))
    expected = sorted_rows(t.read())
    uuid = "0f0e0d0c-0b0a-0908-0706-050403020100"
    debris = [f"bucket-0/data-{uuid}-0.parquet", f"bucket-1/changelog-{uuid}-0.orc",
              f"bucket-0/data-{uuid}-1.parquet.index", f"manifest/manifest-{uuid}-0",
              f"manifest/manifest-list-{uuid}-3", f"manifest/index-manifest-{uuid}-0",
              f"index/index-{uuid}-0", f"statistics/stat-{uuid}-0"]
    kept = ["bucket-0/notes.txt", "queries/bucket-0/data-x.parquet", f"elsewhere/data-{uuid}-0.parquet",
            "manifest/README"]
    for name in debris + kept:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")
    # the table itself: a tag and a kept changelog (snapshot documents), a consumer, its hints
    for name in ("tag/tag-old", "changelog/changelog-1"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes((root / "snapshot" / "snapshot-1").read_bytes())
    (root / "consumer").mkdir()
    (root / "consumer" / "consumer-me").write_text('{"nextSnapshot":2}')
    kept += ["tag/tag-old", "changelog/changelog-1", "consumer/consumer-me", "snapshot/LATEST", "schema/schema-0",
             *(f"snapshot/snapshot-{s.id}" for s in t.snapshots())]
    assert t.remove_orphan_files(older_than=dt.timedelta(hours=1)) == []  # all too young
    assert sorted(t.remove_orphan_files(older_than=0)) == sorted(debris)
    left = files_of(root)
    assert all(name in left for name in kept)
    assert sorted_rows(Table.open(root).read()) == expected
    mp.compact(str(root), None, full=True)  # the table goes on as before
    assert sorted_rows(Table.open(root).read()) == expected


def test_a_table_with_branches_is_not_cleaned_and_kept_changelogs_stay_without_retention(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=1,
                 options={"changelog-producer": "input", "changelog.num-retained.min": "30"})
    t = Table.open(root)
    for v in range(4):
        t.write(batch(v * 10, v * 10 + 20, v))
    kept = t.expire_snapshots(retain_last=2, older_than=0)
    assert sorted(int(n.split("-")[1]) for n in os.listdir(root / "changelog") if n.startswith("changelog-")) == kept
    # no retention reaching further than the snapshots' any more: Java leaves kept changelogs alone
    t.set_options({"changelog.num-retained.min": None})
    t.write(batch(100, 110, 9))
    t.expire_snapshots(retain_last=1, older_than=0)
    assert all((root / "changelog" / f"changelog-{i}").exists() for i in kept)
    # a branch's files are beside the main branch's: nothing is cleaned, nothing is deleted
    (root / "branch" / "branch-b" / "schema").mkdir(parents=True)
    (root / "branch" / "branch-b" / "schema" / "schema-0").write_bytes((root / "schema" / "schema-0").read_bytes())
    before = files_of(root)
    for clean in (lambda: t.expire_snapshots(retain_last=1, older_than=0), lambda: t.remove_orphan_files(older_than=0)):
        with pytest.raises(UnsupportedPaimonFeatureError, match="has branches \\(b\\)"):
            clean()
    assert files_of(root) == before


def test_orphans_are_only_looked_for_in_the_tables_own_bucket_directories(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA.append(pa.field("p", pa.string())), primary_key=["p", "id"],
                 partition_by="p", buckets=1, options={"mergetree.query-log.enabled": "true"})
    t = Table.open(root)
    t.write(batch(0, 30, 1).append_column("p", pa.array(["a", "b", "c"] * 10)))
    t.read(filter=("id", "=", 3))
    from mergetree.table.workload import querylog
    querylog.flush()
    log_files = {f for f in files_of(root) if f.startswith("queries/")}
    assert any("/data-" in f for f in log_files)  # the log is a Paimon table of its own beside the data
    uuid = "0f0e0d0c-0b0a-0908-0706-050403020100"
    debris = [f"p=a/bucket-0/data-{uuid}-0.parquet"]
    kept = [f"p=a/x/bucket-0/data-{uuid}-0.parquet", f"bucket-0/data-{uuid}-0.parquet",
            f"q=a/bucket-0/data-{uuid}-0.parquet", f"p=a/bucket-x/data-{uuid}-0.parquet"]
    for name in debris + kept:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")
    assert t.remove_orphan_files(older_than=0) == debris
    assert log_files <= files_of(root) and all(name in files_of(root) for name in kept)
    assert len(querylog.read_rows(t.path)) == 1


# -- the data-organization loop on a table pypaimon wrote (issue 36, item 4) --------------------

@needs_pypaimon
def test_the_advisor_loop_on_a_pypaimon_append_table(tmp_path):
    """Log, advise (applied), optimize, replay, report, the optimizer daemon: on an append table
    pypaimon wrote; the laid-out files are at the top level (Java's incremental clustering's
    mark), the filtered reads read a fraction of the bytes, and pypaimon reads the same rows."""
    from mergetree.organize import build_report, render_html, replay, run_once
    from mergetree.table.levers.optimize import pending
    from mergetree.table.workload.history import history

    wh, root = tmp_path / "wh", tmp_path / "wh" / "db.db" / "t"
    rng = np.random.default_rng(5)
    n = 25_000

    def part(i: int) -> pa.Table:
        return pa.table({"id": np.arange(i * n, (i + 1) * n), "a": rng.integers(0, 10**6, n), "b": rng.normal(size=n)})

    write_paimon(tmp_path / "w", wh, "db.t", [part(i) for i in range(4)], [],
                 options={"bucket": "-1", "target-file-size": "160kb"})
    t = Table.open(root)
    expected = sorted_ids(pypaimon_read(wh, "db.t", tmp_path))
    t.set_options({"query-log.enabled": True})
    lows = rng.integers(0, 10**6 - 20_000, 40)
    for low in lows:
        t.read(filter=[("a", ">=", int(low)), ("a", "<", int(low) + 20_000)], columns=["id"])
    bytes_before = t.last_read.bytes_total
    advice = t.advise(apply=True)
    assert advice.queries == 40
    distribution = next(lever for lever in advice.levers if lever.lever == "distribution")
    assert distribution.recommended == ["linear(a)"], advice.explain()
    options = json.loads(sorted((root / "schema").iterdir(), key=lambda p: int(p.name.split("-")[1]))[-1].read_text())
    assert options["options"]["mergetree.clustering.columns"] == "a"  # mergetree's own, where Java ignores it
    predicted = replay(t.path, layout="linear:a")
    snapshot = t.optimize()
    assert snapshot is not None
    live = t.directory.live_files(t.directory.latest_snapshot()).values()
    assert {e.file.level for e in live} == {t.directory.store.clustered_level(t.directory.options)} and len(live) > 3
    assert list(t.at().info().sorted_runs.values()) == [len(live)] and t.info().max_sorted_runs == len(live)
    after = replay(t.path)
    scanned = sum(q.bytes for q in after.queries)
    assert scanned < 0.3 * bytes_before * len(after.queries)
    assert sum(q.bytes for q in predicted.queries) < 0.3 * sum(q.baseline_bytes or 0 for q in predicted.queries)
    # the same rows for mergetree and pypaimon
    assert sorted_ids(t.read()) == expected == sorted_ids(pypaimon_read(wh, "db.t", tmp_path))
    # new data waits at level 0 for the daemon's major pass, which lays it out too
    t.write(part(9))
    t.set_options({"optimize.major-threshold": "1kb"})
    reports = run_once(t.path)
    assert [r.tier for r in reports if r.status == "committed"] == ["major"]
    assert {e.file.level for e in t.directory.live_files(t.directory.latest_snapshot()).values()} == {
        t.directory.store.clustered_level(t.directory.options)}
    passes = history(t.path).to_pylist()
    assert [p["tier"] for p in passes] == ["optimize", "major"] and passes[0]["layout"] == "linear(a)"
    page = render_html(build_report(t.path))
    assert "linear(a)" in page and "40" in page
    expected = sorted(expected + list(range(9 * n, 10 * n)))
    assert sorted_ids(t.read()) == expected == sorted_ids(pypaimon_read(wh, "db.t", tmp_path))
    # a new layout: every file was laid out for the one its schema held, so all wait again; the
    # next major pass lays them out (each file's own schema says which layout it has, as Java reads it)
    t.set_options({"clustering.columns": "b", "clustering.strategy": "linear"})
    waiting = pending(t.directory)["major"]
    assert sum(len(files) for files in waiting.values()) == len(t.directory.live_files(t.directory.latest_snapshot()))
    assert [r.tier for r in run_once(t.path) if r.status == "committed"] == ["major"]
    assert not any(pending(t.directory).values())
    assert history(t.path).to_pylist()[-1]["layout"] == "linear(b)"
    assert sorted_ids(t.read()) == expected == sorted_ids(pypaimon_read(wh, "db.t", tmp_path))
    # a bucketed append table keeps its files in the order they were written: not laid out
    write_paimon(tmp_path / "w", wh, "db.b", [part(0)], [], options={"bucket": "2", "bucket-key": "id"})
    bucketed = Table.open(wh / "db.db" / "b")
    with pytest.raises(UnsupportedPaimonFeatureError, match="append table with fixed buckets"):
        bucketed.optimize(order=["a"])
    assert not any(pending(bucketed.at().directory).values())


def sorted_ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_a_paimon_primary_key_table_is_optimized_by_a_full_compaction_only(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=1,
                 options={"write-only": "true", "deletion-vectors.enabled": "true"})
    t = Table.open(root)
    for v in range(3):
        t.write(batch(v * 10, v * 10 + 30, v))
    with pytest.raises(InvalidArgumentError, match="primary-key table"):
        t.optimize(order=["v"])
    assert t.optimize() is not None and t.info().max_sorted_runs == 1
    assert sorted_rows(t.read()) == sorted_rows(pa.concat_tables([batch(0, 10, 0), batch(10, 20, 1), batch(20, 50, 2)]))


def test_partition_directories_are_escaped_as_java_escapes_them_and_cleaned_there(tmp_path):
    """Java escapes a partition key and value alike (``p:q=a}`` is ``p%3Aq=a%7D``): new files
    go where Java looks for them, and cleanup finds debris there."""
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("p:q", pa.string())])
    create_table(str(root), None, schema, primary_key=["p:q", "id"], partition_by="p:q", buckets=1)
    t = Table.open(root)
    t.write(pa.table({"id": [1, 2], "p:q": ["a}", "b"]}, schema=schema))
    assert {d for d in os.listdir(root) if "=" in d} == {"p%3Aq=a%7D", "p%3Aq=b"}
    debris = "p%3Aq=a%7D/bucket-0/data-0f0e0d0c-0b0a-0908-0706-050403020100-0.parquet"
    (root / debris).write_bytes(b"x")
    assert t.remove_orphan_files(older_than=0) == [debris]
    assert sorted(t.read().column("p:q").to_pylist()) == ["a}", "b"]


def test_the_engines_scan_a_paimon_table_by_its_path_and_their_reads_are_logged(tmp_path):
    """Polars, DuckDB and DataFusion on a Paimon table opened by path (as any table), with
    pushdown, each read in the table's query log under the engine's name (issue 36, item 6)."""
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    SessionContext = pytest.importorskip("datafusion").SessionContext

    import mergetree.datafusion as mdf
    import mergetree.duckdb as mdd
    import mergetree.polars as mpl
    from mergetree.table.workload import querylog

    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key="id", buckets=2, options={"mergetree.query-log.enabled": "true"})
    t = Table.open(root)
    t.write(batch(0, 1000, 1))
    t.write(batch(0, 100, 2))
    assert mpl.scan_table(str(root)).filter(pl.col("id") < 10).select("v").collect()["v"].to_list() == [2] * 10
    con = duckdb.connect()
    mdd.register(con, "t", str(root))
    assert con.sql("select sum(v) from t where id >= 900").fetchall() == [(100,)]
    ctx = SessionContext()
    mdf.register(ctx, "t", str(root))
    assert mdf.sql(ctx, "select count(*) as n from t where v = 2").column("n").to_pylist() == [100]
    rows = querylog.read_rows(str(root)).to_pylist()
    assert [(r["source"], r["filter_columns"]) for r in rows] == [("polars", ["id"]), ("duckdb", ["id"]),
                                                                   ("datafusion", ["v"])]
    assert all(r["bytes_scanned"] <= r["bytes_total"] for r in rows)
