"""The ``lookup`` changelog producer on Paimon tables, as Java's: a write commits its level-0
files without a changelog, and the compaction that takes them up writes what they change of
the rows above level 0 as changelog files in its COMPACT snapshot.  Checked with hypothesis
against the table itself: the changelogs, folded commit by commit from the empty table, give
every snapshot's rows, for each merge engine, with and without deletion vectors; a streaming
read of them (`changes(source="changelog")`) is what Java's streaming readers read."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, pypaimon_stream

import mergetree as mt

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
ENGINES = {"deduplicate": {}, "aggregate": {"fields.v.aggregate-function": "sum"}, "first-row": {}}


def _fold(state: dict, rows: list[dict]) -> None:
    for r in rows:
        kind = r.pop("_row_kind")
        if kind in ("+I", "+U"):
            state[r["id"]] = r["v"]
        else:
            assert state.pop(r["id"], None) == r["v"], f"{kind} {r} retracts what the state does not hold"


OPS = st.lists(st.one_of(
    st.tuples(st.just("write"), st.lists(st.tuples(st.integers(0, 12), st.integers(-3, 3)), min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 12), min_size=1, max_size=3))), min_size=1, max_size=6)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(engine=st.sampled_from(sorted(ENGINES)), dv=st.booleans(), ops=OPS)
def test_the_compaction_changelogs_fold_into_every_snapshot(tmp_path_factory, engine, dv, ops):
    options = {"changelog-producer": "lookup", **ENGINES[engine]}
    if dv:
        options["deletion-vectors.enabled"] = "true"
    t = mt.Table.create(tmp_path_factory.mktemp("lookup") / "t", SCHEMA, primary_key=["id"], buckets=2,
                        merge_engine=engine, options=options)
    for op, arg in ops:
        if op == "write":
            t.write(pa.table({"id": [k for k, _ in arg], "v": [v for _, v in arg]}, schema=SCHEMA))
        elif engine == "deduplicate":  # (an aggregate table folds a key-only delete; first-row keeps the first)
            t.delete(pa.table({"id": arg}, schema=pa.schema([("id", pa.int64())])))
    snapshots = t.snapshots()
    assert all(not s.changelog_manifest_list for s in snapshots if s.commit_kind == "APPEND")
    state: dict = {}
    for s in snapshots:
        if s.changelog_manifest_list:
            _fold(state, t.changes(s.id - 1, s.id, source="changelog").read_all().to_pylist())
        if s.commit_kind == "COMPACT":  # level 0 is up: the changelog so far is the table
            assert state == {r["id"]: r["v"] for r in t.read(snapshot=s.id).to_pylist()}
    streamed: dict = {}
    _fold(streamed, t.changes(0, source="changelog").read_all().to_pylist())
    assert streamed == {r["id"]: r["v"] for r in t.read().to_pylist()}
    # the computed change (source auto) agrees with the changelog's net effect
    computed: dict = {}
    _fold(computed, [r for r in t.changes(0).read_all().to_pylist()])
    assert computed == streamed


def test_a_lookup_changelog_shows_updates_with_the_rows_they_replace(tmp_path):
    t = mt.Table.create(tmp_path / "t", SCHEMA, primary_key=["id"], buckets=1, options={"changelog-producer": "lookup"})
    t.write(pa.table({"id": [1, 2], "v": [10, 20]}, schema=SCHEMA))
    t.write(pa.table({"id": [2, 3], "v": [21, 30]}, schema=SCHEMA))
    t.delete(pa.table({"id": [1]}, schema=pa.schema([("id", pa.int64())])))
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == ["APPEND", "COMPACT"] * 3
    change = t.changes(0, source="changelog").read_all().to_pylist()
    assert change == [{"id": 1, "v": 10, "_row_kind": "+I"}, {"id": 2, "v": 20, "_row_kind": "+I"},
                      {"id": 2, "v": 20, "_row_kind": "-U"}, {"id": 2, "v": 21, "_row_kind": "+U"},
                      {"id": 3, "v": 30, "_row_kind": "+I"}, {"id": 1, "v": 10, "_row_kind": "-D"}]


def test_a_write_only_table_leaves_the_changelog_to_a_later_compaction(tmp_path):
    t = mt.Table.create(tmp_path / "t", SCHEMA, primary_key=["id"], buckets=1,
                        options={"changelog-producer": "lookup", "write-only": "true"})
    t.write(pa.table({"id": [1], "v": [1]}, schema=SCHEMA))
    t.write(pa.table({"id": [1], "v": [2]}, schema=SCHEMA))
    assert not any(s.changelog_manifest_list for s in t.snapshots())
    assert t.changes(0, source="changelog").read_all().num_rows == 0  # nothing compacted yet
    t.compact()
    assert t.changes(0, source="changelog").read_all().to_pylist() == [{"id": 1, "v": 2, "_row_kind": "+I"}]


def test_a_producer_mergetree_does_not_run_is_still_refused(tmp_path):
    with pytest.raises(mt.InvalidArgumentError, match="full-compaction"):  # Java's full-compaction producer
        mt.Table.create(tmp_path / "t", SCHEMA, primary_key=["id"], options={"changelog-producer": "full-compaction"})


@needs_pypaimon
@pytest.mark.parametrize("dv", [False, True])
def test_pypaimons_streaming_read_takes_the_changelog_mergetree_wrote(tmp_path, dv):
    options = {"changelog-producer": "lookup", **({"deletion-vectors.enabled": "true"} if dv else {})}
    t = mt.Table.create(tmp_path / "wh" / "db.db" / "t", SCHEMA, primary_key=["id"], buckets=2, options=options)
    t.write(pa.table({"id": [1, 2, 3], "v": [10, 20, 30]}, schema=SCHEMA))
    t.write(pa.table({"id": [2, 4], "v": [21, 40]}, schema=SCHEMA))
    t.delete(pa.table({"id": [3]}, schema=pa.schema([("id", pa.int64())])))
    streamed = pypaimon_stream(tmp_path / "wh", "db.t", tmp_path / "work")
    ours = t.changes(0, source="changelog").read_all()
    key = lambda r: (r["id"], r["_row_kind"], r["v"])  # noqa: E731
    assert sorted(streamed.to_pylist(), key=key) == sorted(ours.to_pylist(), key=key)
    expected = [("+I", 1, 10), ("+I", 2, 20), ("+I", 3, 30), ("-U", 2, 20), ("+U", 2, 21), ("+I", 4, 40),
                ("-D", 3, 30)]
    assert sorted(streamed.to_pylist(), key=key) == sorted(
        ({"_row_kind": k, "id": i, "v": v} for k, i, v in expected), key=key)
