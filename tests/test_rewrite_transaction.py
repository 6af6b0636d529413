"""The one rewrite transaction (`table/compaction/transaction.py`) under every rewrite that uses
it: a failure at any point — a write that fails after some files are written, a commit that
loses to a concurrent one — leaves exactly the files that were there before and the same
answer; success reports progress from (0, total) to (total, total) and commits once."""
from __future__ import annotations

import itertools
import os

import numpy as np
import pyarrow as pa
import pytest
from disk import table_files

import mergetree.table.compaction.runner as runner
import mergetree.table.compaction.transaction as transaction
import mergetree.table.levers.optimize as optimize_module
from mergetree import CompactionConflictError, InvalidArgumentError, Table
from mergetree.table.compaction.transaction import new_files, rewrite_transaction
from mergetree.table.levers.qdtree import build_qdtree
from mergetree.table.read import top_rows

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("s", pa.string())])


class Injected(OSError):
    """The failure a test injects (a full disk, a lost mount)."""


def rows(seed: int, n: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": np.arange(start, start + n), "a": rng.integers(0, 1000, n),
                     "s": [f"s{i}" for i in rng.integers(0, 50, n)]}, schema=SCHEMA)


def failing_after(real, calls: int):
    """`real`, failing on its call number `calls + 1` (after the earlier calls wrote their files)."""
    count = 0

    def wrapper(*args, **kwargs):
        nonlocal count
        count += 1
        if count > calls:
            raise Injected("injected failure")
        return real(*args, **kwargs)
    return wrapper


def data_files(path: str) -> set[str]:
    return {os.path.basename(f) for f in table_files(path) if f.endswith(".parquet")}


def canonical(t: pa.Table) -> pa.Table:
    return top_rows(t, [("id", "asc")], None)


def primary_key_table(path: str) -> Table:
    t = Table.create(path, SCHEMA, primary_key=["id"], buckets=2,
                     options={"write-only": "true", "target-file-size": "64 kb"})
    for seed in range(6):
        t.write(rows(seed, 4000, start=seed * 1000))  # overlapping keys: a compaction has work
    return Table.open(path)


def append_table(path: str, options: dict | None = None) -> Table:
    t = Table.create(path, SCHEMA, options={"target-file-size": "32 kb", **(options or {})})
    for seed in range(6):
        t.write(rows(seed, 4000, start=seed * 4000))
    return Table.open(path)


def test_a_failed_transaction_removes_its_new_files_but_never_an_upgraded_input(tmp_path):
    t = primary_key_table(str(tmp_path / "t"))
    before = table_files(t.path)
    directory = t.directory
    live = list(directory.live_files(directory.latest_snapshot()).values())
    seen: list[tuple[int, int]] = []
    with pytest.raises(Injected):
        with rewrite_transaction(directory, directory.latest_snapshot().id, 10, lambda d, n: seen.append((d, n))) \
                as rewrite:
            new = runner.execute_plan(directory, (live[0].partition, live[0].bucket),
                                      runner.plan_compaction(directory, None, True)[1][0][1])
            rewrite.replace(new[1], new[0])
            rewrite.advance(4)
            assert table_files(t.path) > before  # the new files are on disk until the failure
            raise Injected("after the rewrite, before the commit")
    assert table_files(t.path) == before  # inputs (upgraded ones included) stay, new files are gone
    assert seen == [(0, 10), (4, 10)]


def test_an_empty_transaction_commits_nothing(tmp_path):
    t = append_table(str(tmp_path / "t"))
    snapshot = t.directory.latest_snapshot()
    with rewrite_transaction(t.directory, snapshot.id) as rewrite:
        assert rewrite.commit() is None
    assert Table.open(t.path).directory.latest_snapshot().id == snapshot.id


def test_new_files_are_removed_when_the_block_fails(tmp_path):
    t = append_table(str(tmp_path / "t"))
    before = table_files(t.path)
    directory = t.directory
    with pytest.raises(Injected):
        with new_files(directory) as written:
            written += optimize_module.write_clustered(directory, directory.options, (), 0, rows(9, 100))
            assert table_files(t.path) > before
            raise Injected("mid-task")
    assert table_files(t.path) == before


def test_compaction_failing_mid_rewrite_leaves_the_table_as_it_was(tmp_path, monkeypatch):
    t = primary_key_table(str(tmp_path / "t"))
    before, expected = table_files(t.path), canonical(t.read())
    snapshot = t.directory.latest_snapshot().id
    monkeypatch.setattr(runner, "write_rolled", failing_after(runner.write_rolled, 1))
    with pytest.raises(Injected):
        t.compact(full=True)
    assert table_files(t.path) == before
    t = Table.open(t.path)
    assert t.directory.latest_snapshot().id == snapshot and canonical(t.read()).equals(expected)


@pytest.mark.parametrize("strategy", ["zorder", "qdtree"])
def test_optimize_failing_mid_rewrite_leaves_the_table_as_it_was(tmp_path, monkeypatch, strategy):
    t = append_table(str(tmp_path / "t"))
    if strategy == "qdtree":  # its cuts, from boxes of the ranges queries asked for
        boxes = [{"a": (low, low + 100)} for low in range(0, 1000, 100)]
        tree = build_qdtree(t.read(), boxes, 6)
        t.set_options({"clustering.columns": "a", "clustering.strategy": "qdtree", "clustering.qdtree": tree.to_json()})
        t = Table.open(t.path)
    expected = canonical(t.read())
    # the layout's files are cut at their size on disk, one `write_data_file` each
    monkeypatch.setattr(optimize_module, "write_data_file", failing_after(optimize_module.write_data_file, 2))
    monkeypatch.setattr(optimize_module, "write_sorted_run", failing_after(optimize_module.write_sorted_run, 1))
    before = table_files(t.path)
    with pytest.raises(Injected):
        t.optimize() if strategy == "qdtree" else t.optimize(order=["a", "id"], strategy=strategy)
    monkeypatch.undo()
    data_files = {f for f in table_files(t.path) if f.endswith(".parquet")}
    assert data_files == {f for f in before if f.endswith(".parquet")}
    assert canonical(Table.open(t.path).read()).equals(expected)


def test_an_index_build_failing_mid_way_leaves_the_table_as_it_was(tmp_path, monkeypatch):
    t = append_table(str(tmp_path / "t"))
    expected = canonical(t.read())
    t.set_options({"file-index.bloom-filter.columns": "s", "file-index.bitmap.columns": "s"})
    t = Table.open(t.path)
    before = table_files(t.path)
    snapshot = t.directory.latest_snapshot().id
    monkeypatch.setattr(optimize_module, "write_data_file", failing_after(optimize_module.write_data_file, 2))
    with pytest.raises(Injected):
        t.build_indexes()
    assert table_files(t.path) == before
    t = Table.open(t.path)
    assert t.directory.latest_snapshot().id == snapshot and canonical(t.read()).equals(expected)


def test_a_rewrite_losing_its_inputs_to_a_concurrent_commit_removes_its_files(tmp_path, monkeypatch):
    """A real race: just before the optimizer's commit, a compaction of the same files commits."""
    t = primary_key_table(str(tmp_path / "t"))
    t.set_options({"file-index.bloom-filter.columns": "s"})
    expected = canonical(Table.open(t.path).read())
    real = transaction.commit_with_rebase
    raced = []

    def commit_after_a_race(directory, base, change_for, kind):
        if not raced:
            raced.append(None)  # the racing compaction's own commit goes straight through
            raced[0] = Table.open(directory.path).compact(full=True)  # replaces every input
        return real(directory, base, change_for, kind)
    monkeypatch.setattr(transaction, "commit_with_rebase", commit_after_a_race)
    t = Table.open(t.path)
    before = data_files(t.path)
    with pytest.raises(CompactionConflictError):
        t.build_indexes()
    monkeypatch.undo()
    directory = Table.open(t.path).directory
    live = {os.path.basename(e.file.file_name) for e in directory.live_files(directory.latest_snapshot()).values()}
    # on disk: what was there and what the winning compaction wrote; the lost rewrite's files are gone
    assert raced[0] is not None and data_files(t.path) == before | live
    assert canonical(Table.open(t.path).read()).equals(expected)


def test_progress_runs_from_zero_to_every_input_row(tmp_path):
    t = append_table(str(tmp_path / "t"))
    seen: list[tuple[int, int]] = []
    t.optimize(order=["a"], strategy="linear", progress=lambda done, total: seen.append((done, total)))
    total = seen[0][1]
    assert seen[0] == (0, total) and seen[-1] == (total, total) and total == 6 * 4000
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))


def test_optimize_checks_its_filter_before_storing_a_layout_and_keeps_a_stored_one_visible(tmp_path, monkeypatch):
    t = append_table(str(tmp_path / "t"))
    with pytest.raises(InvalidArgumentError, match="nope"):
        t.optimize(order=["a"], filter=[("nope", "=", 1)])
    assert Table.open(t.path).directory.options.clustering is None  # nothing was stored
    monkeypatch.setattr(optimize_module, "write_data_file", failing_after(optimize_module.write_data_file, 0))
    monkeypatch.setattr(optimize_module, "write_sorted_run", failing_after(optimize_module.write_sorted_run, 0))
    with pytest.raises(Injected):
        t.optimize(order=["a"], strategy="linear")
    monkeypatch.undo()
    # the layout was committed before the rewrite failed: this object sees it, and finishes the job
    assert tuple(t.directory.options.clustering.columns) == ("a",)
    assert t.optimize() is not None
