"""Changelog producers (issue 26): a lookup changelog is exactly the computed change (the -U
rows carry the exact previous rows, also after a lost commit race), an input changelog keeps
the rows as written, and changelog files stay readable after their snapshot expired."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_changes import ENGINES, apply, make, operation, run, state

from mergetree import InvalidArgumentError, RowKind, SnapshotNotFoundError, Table
from mergetree.table import paths
from mergetree.table.write import commit_write, conformed, spill


def per_commit(table: Table, start: int = 0) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for r in table.changes(start, per_commit=True).read_all().to_pylist():
        out.setdefault(r.pop("_snapshot_id"), []).append(str(r))
    return {c: sorted(rows) for c, rows in out.items()}


@pytest.mark.private_format
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(engine=st.sampled_from(ENGINES), composite=st.booleans(), dv=st.booleans(),
       ops=st.lists(operation, min_size=1, max_size=5))
def test_a_lookup_changelog_is_the_computed_change(tmp_path_factory, engine, composite, dv, ops):
    looked = make(tmp_path_factory.mktemp("lookup"), engine, composite, dv)
    looked.set_options({"changelog-producer": "lookup"})
    computed = make(tmp_path_factory.mktemp("plain"), engine, composite, dv)
    run(looked, engine, composite, ops)
    run(computed, engine, composite, ops)
    assert [s.commit_kind for s in looked.snapshots()] == [s.commit_kind for s in computed.snapshots()]
    written = [s for s in looked.snapshots() if s.changelog_manifest_list]
    assert all(s.properties["changelog-producer"] == "lookup" for s in written)
    assert per_commit(looked) == per_commit(computed)
    pk = list(looked.table_schema.primary_key)
    latest = looked.directory.store.latest_id() or 0
    for a in range(latest + 1):  # the net change folded from the changelogs
        assert apply(state(looked, a), looked.changes(a).read_all().to_pylist(), pk) == state(looked, latest)


def test_an_input_changelog_keeps_the_rows_as_written(tmp_path):
    table = Table.create(tmp_path, pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_key=["k"],
                         options={"changelog-producer": "input"})
    table.write({"k": [1, 2], "v": ["a", "b"]})
    rows = pa.table({"k": [2, 1, 3], "v": ["b", "a", None], "_row_kind": ["-U", "+U", "-D"]})
    table.write(rows)
    got = table.changes(1, 2, per_commit=True).read_all().to_pylist()
    # as written, in key order: the -D of a key the table never held too (a computed change has none)
    assert [(r["k"], r["v"], r["_row_kind"]) for r in got] == [(1, "a", "+U"), (2, "b", "-U"), (3, None, "-D")]
    net = table.changes(1, 2).read_all().to_pylist()  # the net change is computed: input rows are not exact
    assert [(r["k"], r["v"], r["_row_kind"]) for r in net] == [(2, "b", "-D")]


def test_a_source_says_where_the_change_comes_from(tmp_path):
    """source="changelog": the commits' changelog files as written, commit after commit across
    buckets (with ``changelog-producer`` none: the rows each commit wrote); "delta" always
    computes; "auto" computes unless the changelogs are exact."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    table = Table.create(tmp_path / "input", schema, primary_key=["k"], buckets=2,
                         options={"changelog-producer": "input"})
    table.write({"k": [1, 2, 5], "v": ["a", "b", "e"]})
    table.write(pa.table({"k": [2, 1, 3], "v": ["b", "a", None], "_row_kind": ["-U", "+U", "-D"]}))
    rows = [(r["k"], r["v"], r["_row_kind"]) for r in table.changes(0, source="changelog").read_all().to_pylist()]
    assert sorted(rows[:3]) == [(1, "a", "+I"), (2, "b", "+I"), (5, "e", "+I")]
    assert sorted(rows[3:]) == [(1, "a", "+U"), (2, "b", "-U"), (3, None, "-D")]
    stamped = table.changes(0, per_commit=True, source="changelog").read_all()
    assert stamped.column("_snapshot_id").to_pylist() == [1, 1, 1, 2, 2, 2]
    assert [(r["k"], r["v"], r["_row_kind"]) for r in stamped.to_pylist()] == rows
    assert table.changes(0, source="delta").read_all().equals(table.changes(0).read_all())
    assert table.changes(1, per_commit=True, source="delta").read_all().to_pylist() == \
        [{"k": 2, "v": "b", "_row_kind": "-D", "_snapshot_id": 2}]
    with pytest.raises(InvalidArgumentError, match="source must be one of auto, delta, changelog"):
        table.changes(0, source="lookup")

    plain = Table.create(tmp_path / "none", schema, primary_key=["k"])
    plain.write({"k": [1, 2], "v": ["a", "b"]})
    plain.write({"k": [1], "v": ["c"]})
    plain.compact(full=True)  # a compaction changes nothing
    assert [(r["k"], r["v"], r["_row_kind"]) for r in plain.changes(0, source="changelog").read_all().to_pylist()] \
        == [(1, "a", "+I"), (2, "b", "+I"), (1, "c", "+I")]
    assert [(r["k"], r["v"], r["_row_kind"]) for r in plain.changes(1).read_all().to_pylist()] == \
        [(1, "a", "-U"), (1, "c", "+U")]


@pytest.mark.private_format
def test_a_lost_race_looks_the_previous_rows_up_again(tmp_path):
    """A write that prepared its files on snapshot 1 commits after another write changed the
    key: its -U row is the other write's row, not the one of snapshot 1."""
    table = Table.create(tmp_path, pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_key=["k"],
                         merge_engine="aggregate",
                         options={"changelog-producer": "lookup", "fields.v.aggregate-function": "sum",
                                  "write-only": "true"})
    table.write({"k": [1, 2], "v": [1, 1]})
    directory = table.directory
    stale = directory.latest_snapshot()
    pending = [e for files in spill(directory, conformed(directory, {"k": [1], "v": [10]}, complete=True),
                                    RowKind.INSERT, {}) for e in files]
    table.write({"k": [1], "v": [100]})  # wins the race
    snapshot = commit_write(directory, pending, stale)
    assert snapshot.id == 3 and snapshot.commit_retries == 1
    rows = table.changes(2, 3, per_commit=True).read_all().to_pylist()
    assert [(r["k"], r["v"], r["_row_kind"]) for r in rows] == [(1, 101, "-U"), (1, 111, "+U")]
    # the first attempt's changelog file (made on snapshot 1) is gone
    names = {e.file.file_name for s in table.snapshots() if s.changelog_manifest_list
             for m in directory.store.manifest_names(s.changelog_manifest_list)
             for _, e in directory.store.read_manifest(m)}
    on_disk = {f"bucket-0/{p.name}" for p in (tmp_path / "bucket-0").glob("changelog-*")}
    assert on_disk == names


@pytest.mark.private_format
def test_changelog_outlives_its_snapshot(tmp_path):
    table = Table.create(tmp_path, pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_key=["k"],
                         options={"changelog-producer": "lookup", "write-only": "true"})
    for i in range(3):
        table.write({"k": [1], "v": [i]})
    store = table.directory.storage
    for sid in (1, 2):  # expired, with their changelog kept as retention keeps it
        store.write(paths.retained_changelog_file(sid), store.read(paths.snapshot_file(sid)))
        store.delete(paths.snapshot_file(sid))
    rows = table.changes(1, 3, per_commit=True).read_all().to_pylist()
    assert [(r["k"], r["v"], r["_row_kind"], r["_snapshot_id"]) for r in rows] == [
        (1, 0, "-U", 2), (1, 1, "+U", 2), (1, 1, "-U", 3), (1, 2, "+U", 3)]
    assert [(r["v"], r["_row_kind"]) for r in table.changes(0).read_all().to_pylist()] == [(2, "+I")]
    table.set_options({"changelog-producer": "none"})
    table.write({"k": [1], "v": [9]})  # no changelog: computing needs snapshot 3 on, and it exists
    assert [(r["v"], r["_row_kind"]) for r in table.changes(3).read_all().to_pylist()] == [(2, "-U"), (9, "+U")]
    with pytest.raises(SnapshotNotFoundError, match="needs snapshot 2"):
        table.changes(2)


cdc_rows = st.lists(st.tuples(st.integers(0, 6), st.one_of(st.none(), st.integers(-3, 3)),
                              st.sampled_from(["+I", "-U", "+U", "-D"])), min_size=1, max_size=10)


@pytest.mark.private_format
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(engine=st.sampled_from(["deduplicate", "partial-update", "first-row"]), buckets=st.sampled_from([1, 2]),
       writes=st.lists(cdc_rows, min_size=1, max_size=4))
def test_an_input_changelog_is_every_row_as_written(tmp_path_factory, engine, buckets, writes):
    """Per commit: the rows written (a first-row table drops retractions as it takes them), in
    key order, a key's rows in write order — repeated keys of one write too."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    table = Table.create(tmp_path_factory.mktemp("t"), schema, primary_key=["k"], buckets=buckets,
                         merge_engine=engine, options={"changelog-producer": "input"})
    expected: dict[int, list] = {}
    for rows in writes:
        data = pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows], "_row_kind": [r[2] for r in rows]})
        snapshot = table.write(data)
        kept = [r for r in rows if engine != "first-row" or r[2] in ("+I", "+U")]
        if kept:
            expected[snapshot.id] = sorted(kept, key=lambda r: r[0])  # stable: write order within a key
    got: dict[int, list] = {}
    for r in table.changes(0, per_commit=True).read_all().to_pylist():
        got.setdefault(r["_snapshot_id"], []).append((r["k"], r["v"], r["_row_kind"]))
    if buckets > 1:  # buckets come one after another: compare each key's rows
        got = {c: sorted(rows, key=lambda r: r[0]) for c, rows in got.items()}
    assert got == expected


@pytest.mark.private_format
def test_racing_lookup_writers_publish_exact_changes(tmp_path):
    """Two writers on the same keys at once (they lose commit races to each other): every
    commit's changelog applied to the snapshot before it gives the snapshot (exact -U rows)."""
    import threading
    table = Table.create(tmp_path, pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_key=["k"],
                         merge_engine="aggregate",
                         options={"changelog-producer": "lookup", "fields.v.aggregate-function": "sum",
                                  "write-only": "true"})
    start = threading.Barrier(2)

    def writer(step: int) -> None:
        mine = Table.open(tmp_path)
        start.wait()
        for i in range(6):
            mine.write({"k": [1, 2, 3 + step], "v": [step, i, 1]})
    threads = [threading.Thread(target=writer, args=(s,)) for s in (1, 10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latest = table.directory.store.latest_id()
    assert latest == 12
    for c in range(1, latest + 1):
        assert table.snapshots()[c - 1].changelog_manifest_list
        rows = table.changes(c - 1, c, per_commit=True).read_all().to_pylist()
        assert apply(state(table, c - 1), rows, ["k"]) == state(table, c)


@pytest.mark.private_format
def test_a_lookup_write_that_changes_nothing_has_no_changelog_and_no_change(tmp_path):
    table = Table.create(tmp_path, pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_key=["k"],
                         options={"changelog-producer": "lookup", "write-only": "true"})
    table.write({"k": [1, 2], "v": [1, 2]})
    same = table.write({"k": [1], "v": [1]})
    assert not same.changelog_manifest_list and same.properties["changelog-producer"] == "lookup"
    assert table.changes(1).read_all().num_rows == 0
    store = table.directory.storage  # snapshot 1 expires, its changelog kept: the changelogs alone answer
    store.write(paths.retained_changelog_file(1), store.read(paths.snapshot_file(1)))
    store.delete(paths.snapshot_file(1))
    assert [(r["k"], r["_row_kind"]) for r in table.changes(0).read_all().to_pylist()] == [(1, "+I"), (2, "+I")]
