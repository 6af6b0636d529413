"""`Table.delete(filter=...)`, as Paimon's engines delete: whole partitions by a condition on the
partition columns, ``-D`` rows on deduplicate tables, copy-on-write on append tables; checked
against a row model (hypothesis: tables of every kind, conditions of every operator, nulls),
refusals by merge engine with nothing written, a failed commit leaving nothing, pypaimon reading
the result."""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, pypaimon_read
from sql_truth import truth

import mergetree as mt
from mergetree import CommitConflictError, InvalidArgumentError, UnsupportedPaimonFeatureError

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())])


def _holds(row: dict, f) -> bool:
    """Whether SQL's ``DELETE ... WHERE f`` deletes the row (unknown keeps it)."""
    return truth(f, row) is True


def _make(tmp_path: Path, kind: str, partitioned: bool, dv: bool, name: str = "t") -> mt.Table:
    options = {"deletion-vectors.enabled": "true"} if dv and kind != "append" else {}  # (append: no versions)
    path = tmp_path / "wh" / "db.db" / name
    if kind == "append":
        return mt.Table.create(path, SCHEMA, partition_by=["p"] if partitioned else None, options=options)
    return mt.Table.create(path, SCHEMA, primary_key=["p", "id"] if partitioned else ["id"],
                           partition_by=["p"] if partitioned else None, buckets=2, options=options)


def _rows_of(t: mt.Table) -> list[tuple]:
    return sorted(((r["id"], r["p"], r["v"], r["s"]) for r in t.read().to_pylist()), key=repr)


ROWS = st.lists(st.tuples(st.integers(0, 15), st.sampled_from(["a", "b", "c"]), st.none() | st.integers(-5, 5),
                          st.none() | st.sampled_from(["x", "y", "z"])), min_size=1, max_size=25)
CONDITIONS = st.one_of(
    st.tuples(st.just("v"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), st.integers(-5, 5)),
    st.tuples(st.just("s"), st.sampled_from(["in", "not in"]), st.lists(st.sampled_from(["x", "y", "z"]),
                                                                        min_size=1, max_size=2)),
    st.tuples(st.sampled_from(["v", "s"]), st.sampled_from(["is null", "is not null"]), st.none()),
    st.tuples(st.just("p"), st.sampled_from(["=", "!=", "in"]), st.sampled_from(["a", "b"])),
    st.tuples(st.just("id"), st.sampled_from(["<", ">="]), st.integers(0, 15)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["deduplicate", "append"]), partitioned=st.booleans(), dv=st.booleans(),
       commits=st.lists(ROWS, min_size=1, max_size=3), condition=CONDITIONS)
def test_delete_by_a_condition_removes_exactly_the_rows_it_holds_for(tmp_path_factory, kind, partitioned, dv,
                                                                      commits, condition):
    tmp_path = tmp_path_factory.mktemp("d")
    t = _make(tmp_path, kind, partitioned, dv)
    model: dict = {}
    appended: list = []
    for rows in commits:
        t.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
        for r in rows:
            model[(r[1], r[0]) if partitioned else r[0]] = r
        appended += rows
    if kind != "append" and dv:
        t.compact()  # level 0 of a deletion-vector table waits for compaction
    column, op, value = condition
    if op == "in" and not isinstance(value, list):
        value = [value]
    f = (column, op, value) if value is not None else (column, op)
    expected = [r for r in (appended if kind == "append" else model.values())
                if not _holds(dict(zip(SCHEMA.names, r)), (column, op, value))]
    before = len(t.snapshots())
    done = t.delete(filter=f)
    if kind != "append" and dv:
        t.compact()
    assert _rows_of(t) == sorted(expected, key=repr)
    if done is None:
        assert len(t.snapshots()) == before
    elif column == "p" and partitioned:
        assert done.commit_kind == "OVERWRITE"  # whole partitions dropped by their files
    assert sorted(mt.Table.open(t.path).read().to_pylist(), key=repr) == sorted(
        (dict(zip(SCHEMA.names, r)) for r in expected), key=repr)


@pytest.mark.parametrize("engine, options, message", [
    ("first-row", {}, "cannot delete rows"),
    ("partial-update", {}, "partial-update.remove-record-on-delete"),
    ("aggregate", {"fields.v.aggregate-function": "sum"}, "aggregation.remove-record-on-delete"),
])
def test_engines_paimon_cannot_delete_from_refuse_with_nothing_written(tmp_path, engine, options, message):
    t = mt.Table.create(tmp_path / "t", SCHEMA, primary_key=["p", "id"], partition_by=["p"], buckets=1,
                        merge_engine=engine, options=options)
    t.write(pa.table({"id": [1, 2], "p": ["a", "b"], "v": [1, 2], "s": ["x", "y"]}))
    snapshots = len(t.snapshots())
    with pytest.raises(UnsupportedPaimonFeatureError, match=message):
        t.delete(filter=("v", "=", 1))
    assert len(t.snapshots()) == snapshots and len(t.read()) == 2
    t.delete(filter=("p", "=", "a"))  # whole partitions: every engine
    assert t.read().column("id").to_pylist() == [2]


def test_a_deduplicate_delete_writes_the_rows_it_deletes_as_minus_d(tmp_path):
    t = _make(tmp_path, "deduplicate", False, False)
    t.write(pa.table({"id": [1, 2, 3], "p": ["a", "a", "b"], "v": [1, 2, 3], "s": ["x", "y", "z"]}))
    done = t.delete(filter=("s", "in", ["x", "z"]))
    change = t.changes(start=done.id - 1, end=done.id).read_all().to_pylist()
    assert sorted(change, key=lambda r: r["id"]) == [
        {"id": 1, "p": "a", "v": 1, "s": "x", "_row_kind": "-D"},
        {"id": 3, "p": "b", "v": 3, "s": "z", "_row_kind": "-D"}]
    assert t.read().column("id").to_pylist() == [2]


def test_arguments_are_checked(tmp_path):
    t = _make(tmp_path, "deduplicate", False, False)
    with pytest.raises(InvalidArgumentError, match="one of them"):
        t.delete()
    with pytest.raises(InvalidArgumentError, match="one of them"):
        t.delete(pa.table({"id": [1]}), filter=("v", "=", 1))
    with pytest.raises(InvalidArgumentError, match="lacks"):
        t.delete(filter=("nope", "=", 1))
    assert t.delete(filter=("v", "=", 1)) is None  # an empty table: nothing to delete


def test_a_failed_copy_on_write_leaves_no_file_and_a_concurrent_rewrite_wins(tmp_path, monkeypatch):
    t = _make(tmp_path, "append", False, False)
    t.write(pa.table({"id": [1, 2, 3], "p": ["a"] * 3, "v": [1, 2, 3], "s": ["x"] * 3}))
    path = Path(t.path)
    files = sorted(os.listdir(path / "bucket-0"))
    import mergetree.table.deletes as deletes

    def fail(*args, **kwargs):
        raise OSError("the disk went away")
    monkeypatch.setattr(deletes, "commit_with_rebase", fail)
    with pytest.raises(OSError):
        t.delete(filter=("v", "=", 2))
    monkeypatch.undo()
    assert sorted(os.listdir(path / "bucket-0")) == files and len(t.read()) == 3
    # another commit replaces the file first: the delete gives up, whole
    original = deletes.commit_with_rebase

    def optimize_first(directory, base, change_for, kind):
        mt.Table.open(path).optimize(order="v")
        return original(directory, base, change_for, kind)
    monkeypatch.setattr(deletes, "commit_with_rebase", optimize_first)
    with pytest.raises(CommitConflictError, match="nothing was deleted"):
        t.delete(filter=("v", "=", 2))
    assert sorted(mt.Table.open(path).read().column("v").to_pylist()) == [1, 2, 3]


@needs_pypaimon
@pytest.mark.parametrize("kind, dv", [("deduplicate", True), ("append", False)])
def test_pypaimon_reads_what_a_delete_left(tmp_path, kind, dv):
    t = _make(tmp_path, kind, True, dv)
    t.write(pa.table({"id": list(range(8)), "p": ["a", "b"] * 4, "v": list(range(8)), "s": ["x", None] * 4}))
    t.delete(filter=("v", ">=", 5))
    t.delete(filter=("s", "is null"))
    if dv:
        t.compact()
    work = tmp_path / "work"
    work.mkdir()
    assert sorted(pypaimon_read(tmp_path / "wh", "db.t", work).column("id").to_pylist()) == [0, 2, 4]


def test_the_cli_deletes_by_a_condition(tmp_path):
    import subprocess
    import sys
    t = _make(tmp_path, "deduplicate", True, False)
    t.write(pa.table({"id": [1, 2, 3], "p": ["a", "a", "b"], "v": [1, 2, 3], "s": ["x", None, "y"]}))

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mergetree", *args], capture_output=True, text=True)

    done = cli("delete", t.path, "--filter", "v >= 2", "--filter", "s is not null", "--count")
    assert done.returncode == 0 and "deleted 1 row(s)" in done.stdout, done.stderr
    assert sorted(mt.Table.open(t.path).read().column("id").to_pylist()) == [1, 2]
    done = cli("delete", t.path, "--filter", "p = 'a'")
    assert done.returncode == 0 and "OVERWRITE" in done.stdout
    assert mt.Table.open(t.path).read().num_rows == 0
    assert "nothing matched" in cli("delete", t.path, "--filter", "v = 9").stdout
    assert cli("delete", t.path).returncode == 2  # --filter is required


def test_a_table_that_ignores_deletes_refuses_a_delete_by_condition(tmp_path):
    t = mt.Table.create(tmp_path / "t", SCHEMA, primary_key=["id"], options={"ignore-delete": "true"})
    t.write(pa.table({"id": [1], "p": ["a"], "v": [1], "s": ["x"]}))
    with pytest.raises(UnsupportedPaimonFeatureError, match="ignores deletes"):
        t.delete(filter=("v", "=", 1))
    assert t.read().num_rows == 1
