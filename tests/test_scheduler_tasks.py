"""The optimizer's tasks (seed 003's optimization service): a partition's pending groups merged
into one task under a byte cap, tasks ordered by the bytes the logged queries read in them
(weighted by the advisor's measured gain), run under a global and a per-table limit; the rules
exactly on hand-built tasks, then on tables: the order the rewrites really run in, the overlap
they really have, and reads that answer the same before and after."""
from __future__ import annotations

import dataclasses
import itertools
import os
import random
import threading
import time
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergetree import CorruptTableError, InvalidArgumentError, Table
from mergetree.cli.app import main
from mergetree.organize import history, pending, run_daemon, run_once
from mergetree.organize.scheduler import (
    Task,
    layout_gain,
    local_rewrite,
    logged_reads,
    next_task,
    order_tasks,
    plan_tasks,
    run_tasks,
    table_limit,
    table_tasks,
    task_reads,
)
from mergetree.table.levers.optimize import missing_indexes, rewrite_files
from mergetree.table.read import top_rows
from mergetree.table.workload import querylog
from mergetree.table.workload.advise import Advice, LeverAdvice


@dataclasses.dataclass(frozen=True)
class File:
    file_name: str
    file_size: int


def files(prefix: str, *sizes: int) -> list[File]:
    return [File(f"{prefix}-{i}", size) for i, size in enumerate(sizes)]


def task(table: str, tier: str = "minor", partition: tuple | None = ("p",), bucket: int = 0, reads: float = 0.0,
         gain: float = 0.0, size: int = 1) -> Task:
    groups = {(partition if partition is not None else (), bucket): files(f"{table}{partition}{bucket}", size)}
    return Task(table, tier, partition, groups, reads, gain)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# T1: a partition's groups are one task, up to the cap
# ---------------------------------------------------------------------------

def test_a_partitions_groups_are_one_task_packed_bucket_by_bucket_up_to_the_cap():
    groups = {(("x",), 2): files("x2", 5), (("x",), 0): files("x0", 1, 2), (("x",), 1): files("x1", 4),
              (("y",), 0): files("y0", 10), (("z",), 0): []}
    tasks = table_tasks("t", "minor", groups, max_task_bytes=8)  # type: ignore[arg-type]
    # x: buckets 0 (3 bytes) and 1 (4) fit in 8; bucket 2 (5) would make 12: the next task.
    # y: a group of 10 bytes alone is one task (groups are never split).  z: nothing pending.
    assert [(t.partition, t.buckets, t.bytes) for t in tasks] == [(("x",), [0, 1], 7), (("x",), [2], 5),
                                                                  (("y",), [0], 10)]
    assert all(t.tier == "minor" and t.table == "t" and not t.whole_table for t in tasks)
    assert tasks[0].groups == {(("x",), 0): files("x0", 1, 2), (("x",), 1): files("x1", 4)}
    # without a cap that binds, one task per partition
    whole = table_tasks("t", "minor", groups, max_task_bytes=100)  # type: ignore[arg-type]
    assert [(t.partition, t.buckets) for t in whole] == [(("x",), [0, 1, 2]), (("y",), [0])]
    # a cap exactly the sum of two groups keeps them together (at most N bytes)
    assert [t.buckets for t in table_tasks("t", "minor", groups, 7)][:1] == [[0, 1]]  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# T2: benefit = bytes the queries read in the task's files, times (1 + the advisor's gain)
# ---------------------------------------------------------------------------

def lever(name: str, current: list, recommended: list, before: float | None, after: float | None) -> LeverAdvice:
    return LeverAdvice(name, current, recommended, "why", 10, before, after)


def test_benefit_is_the_bytes_read_in_the_tasks_files_weighted_by_the_measured_gain():
    t = Task("t", "major", ("x",), {(("x",), 0): files("a", 100, 200), (("x",), 1): files("b", 50)})  # type: ignore
    reads = {"a-0": 300.0, "a-1": 0.0, "b-0": 25.5, "elsewhere": 1e9}
    assert task_reads(t, reads) == 325.5
    assert dataclasses.replace(t, reads=325.5).benefit == 325.5
    assert dataclasses.replace(t, reads=325.5, gain=0.6).benefit == pytest.approx(325.5 * 1.6)
    assert dataclasses.replace(t, reads=0.0, gain=0.9).benefit == 0.0  # nobody reads it: last, whatever the gain


def test_the_gain_is_the_best_measured_saving_of_what_the_table_already_has():
    advice = Advice("t", 100, 100, [
        lever("distribution", ["hilbert(a,b)"], ["hilbert(a,b)"], 10.0, 4.0),   # kept: 60% fewer files
        lever("bloom", ["c"], ["c"], 10.0, 8.0),                                 # kept: 20%
        lever("bitmap", ["d"], ["d", "e"], 10.0, 1.0),                          # a change: not what the pass writes
        lever("sort", [], [], 10.0, 1.0),                                        # nothing configured
        lever("pre-aggregate", ["m"], ["m"], None, None),                       # not measured
    ])
    assert layout_gain(advice, "major") == pytest.approx(0.6)
    assert layout_gain(advice, "minor") == 0.0     # a merge of small files realises no lever
    assert layout_gain(None, "major") == 0.0
    worse = Advice("t", 1, 1, [lever("distribution", ["linear(a)"], ["linear(a)"], 2.0, 3.0)])
    assert layout_gain(worse, "major") == 0.0      # clamped: a layout measured to cost more gains nothing
    zero = Advice("t", 1, 1, [lever("distribution", ["linear(a)"], ["linear(a)"], 0.0, 0.0)])
    assert layout_gain(zero, "major") == 0.0


# ---------------------------------------------------------------------------
# T3: the order
# ---------------------------------------------------------------------------

def test_tasks_are_ordered_by_benefit_then_table_tier_partition_bucket():
    hot = task("b", reads=1000.0)
    warm_major = task("a", "major", ("q",), reads=400.0, gain=0.5)      # 600
    warm = task("c", reads=600.0, partition=("z",))                     # 600: table a before c
    cold_b_minor = task("b", "minor", ("r",))
    cold_b_major = task("b", "major", ("s",))
    cold_a = task("a", "minor", ("y",), bucket=3)
    cold_a2 = task("a", "minor", ("y",), bucket=1)
    cold_a3 = task("a", "minor", ("x",), bucket=7)
    tasks = [cold_b_minor, cold_a, warm, cold_b_major, hot, cold_a2, warm_major, cold_a3]
    assert order_tasks(tasks) == [hot, warm_major, warm, cold_a3, cold_a2, cold_a, cold_b_major, cold_b_minor]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["major", "minor"]), st.sampled_from("xyz"),
                          st.integers(0, 3), st.sampled_from([0.0, 1.0, 5.0, 1e9]), st.sampled_from([0.0, 0.5])),
                max_size=20))
def test_the_order_is_by_benefit_and_does_not_depend_on_the_input_order(specs):
    tasks = [task(t, tier, (p,), b, reads, gain) for t, tier, p, b, reads, gain in specs]
    ordered = order_tasks(tasks)
    assert sorted(map(id, ordered)) == sorted(map(id, tasks))
    assert all(x.benefit >= y.benefit for x, y in itertools.pairwise(ordered))
    shuffled = list(tasks)
    random.Random(len(tasks)).shuffle(shuffled)
    assert [dataclasses.astuple(t)[:4] for t in order_tasks(shuffled)] == \
        [dataclasses.astuple(t)[:4] for t in ordered]


# ---------------------------------------------------------------------------
# T4/T5: which task may start
# ---------------------------------------------------------------------------

def test_the_first_task_the_limits_allow_starts():
    a1, a2, b1, c1 = task("a", partition=("1",)), task("a", partition=("2",)), task("b"), task("c")
    queue = [a1, a2, b1, c1]
    assert next_task(queue, [], 2, {}) is a1
    # table a at its limit (1 by default): the next table's task starts instead of waiting
    assert next_task([a2, b1, c1], [a1], 2, {}) is b1
    assert next_task([a2, b1, c1], [a1], 2, {"a": 2}) is a2
    # the global limit
    assert next_task([a2, c1], [a1, b1], 2, {"a": 2}) is None
    assert next_task([a2, c1], [a1, b1], 3, {"a": 2}) is a2
    assert next_task([a2, c1], [a1, b1], 3, {"a": 1}) is c1
    assert next_task([], [], 2, {}) is None


def test_a_primary_key_tables_tasks_are_alone_on_it_and_index_after_compacting():
    compaction, index = task("pk", "minor", None), task("pk", "major", None)
    other = task("t")
    # the index build is ordered first (more benefit) but waits for the round's compaction
    assert next_task([index, compaction, other], [], 2, {"pk": 2}) is compaction
    assert next_task([index, other], [compaction], 2, {"pk": 2}) is other
    assert next_task([index], [], 2, {"pk": 2}) is index
    # a whole-table task never runs beside another task of its table
    part = task("pk", "minor", ("x",))
    assert next_task([part], [index], 2, {"pk": 2}) is None
    assert next_task([index], [part], 2, {"pk": 2}) is None


# ---------------------------------------------------------------------------
# On tables
# ---------------------------------------------------------------------------

SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("a", pa.int64()), ("b", pa.float64())])


def rows(partitions, seed: int, n: int = 1_500) -> pa.Table:
    rng = np.random.default_rng(seed)
    parts = [pa.table({"p": [p] * n, "id": np.arange(seed * 10**7 + i * 10**6, seed * 10**7 + i * 10**6 + n),
                       "a": rng.integers(0, 10**6, n), "b": rng.normal(size=n)}, schema=SCHEMA)
             for i, p in enumerate(partitions)]
    return pa.concat_tables(parts)


def make(path, partitions=("hot", "cold"), writes: int = 3, buckets: int = 1,
         options: dict[str, str] | None = None) -> Table:
    """An append table whose every (partition, bucket) has `writes` small files: minor work."""
    t = Table.create(str(path), SCHEMA, partition_by=["p"], buckets=buckets, bucket_key=["id"] if buckets > 1 else None,
                     options={"write-only": "true", "target-file-size": "400 kb", "optimize.minor-min-files": "2",
                              "optimize.major-threshold": "50 mb", "query-log.enabled": "true", **(options or {})})
    for seed in range(writes):
        t.write(rows(partitions, seed))
    return t


def canonical(t: pa.Table) -> pa.Table:
    return top_rows(t, [("p", "asc"), ("id", "asc")], None)


def reference(t: Table, **kwargs) -> pa.Table:
    """A read to compare with, left out of the query log (it would weigh the tasks)."""
    saved = os.environ.get("MERGETREE_QUERY_LOG")
    os.environ["MERGETREE_QUERY_LOG"] = "0"
    try:
        return canonical(t.read(**kwargs))
    finally:
        if saved is None:
            del os.environ["MERGETREE_QUERY_LOG"]
        else:
            os.environ["MERGETREE_QUERY_LOG"] = saved


def latest(t: Table) -> int:
    snapshot = Table.open(t.path).latest_snapshot()
    assert snapshot is not None
    return snapshot.id


class Recorder:
    """The real rewrite, wrapped: records the order of calls and how many overlap (overall and
    per table); `hold` seconds inside each call widen the window in which overlaps can happen."""

    def __init__(self, hold: float = 0.0, barrier: threading.Barrier | None = None) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, list]] = []
        self.bases: list[int] = []  # the snapshot each rewrite started from
        self.active: Counter = Counter()
        self.most = 0
        self.most_per_table: Counter = Counter()
        self.hold = hold
        self.barrier = barrier

    def __call__(self, directory, groups, tier, progress):
        name = directory.path.rstrip("/").rsplit("/", 1)[-1]
        with self.lock:
            self.calls.append((name, sorted({p for p, _ in groups})))
            self.active[name] += 1
            self.most = max(self.most, sum(self.active.values()))
            self.most_per_table[name] = max(self.most_per_table[name], self.active[name])
        try:
            if self.barrier is None:
                time.sleep(self.hold)
                return local_rewrite(directory, groups, tier, progress)
            # as `local_rewrite`, the base taken before the barrier: both tasks take the same one
            base = directory.latest_snapshot()
            with self.lock:
                self.bases.append(base.id)
            self.barrier.wait(timeout=30)
            time.sleep(self.hold)
            return rewrite_files(directory, directory.options, base, groups, tier, progress)
        finally:
            with self.lock:
                self.active[name] -= 1


def log_reads(t: Table, partition: str, times: int) -> None:
    for _ in range(times):
        t.read(filter=("p", "=", partition))


def test_the_hot_partition_is_rewritten_first(tmp_path):
    t = make(tmp_path / "t", partitions=("a-cold", "b-hot", "c-cold"))
    expected = reference(t)
    log_reads(t, "b-hot", 3)
    tasks, nothing = plan_tasks(t.path)
    assert [r.tier for r in nothing] == ["major"]
    by_partition = {task.partition: task for task in tasks}
    assert set(by_partition) == {("a-cold",), ("b-hot",), ("c-cold",)}
    hot = by_partition[("b-hot",)]
    # three logged reads, each scanning exactly the hot partition's files (the planner prunes the others)
    assert hot.reads == pytest.approx(3 * hot.bytes) and hot.benefit == hot.reads
    assert by_partition[("a-cold",)].reads == 0 and by_partition[("c-cold",)].reads == 0
    recorder = Recorder()
    reports = run_once(t.path, rewrite=recorder)
    assert recorder.calls == [("t", [("b-hot",)]), ("t", [("a-cold",)]), ("t", [("c-cold",)])]
    assert [(r.tier, r.status) for r in reports] == [("major", "nothing")] + [("minor", "committed")] * 3
    # one history line per task, each one partition's groups
    assert history(t.path).column("groups").to_pylist() == [1, 1, 1]
    assert reference(Table.open(t.path)).equals(expected)
    assert not any(pending(Table.open(t.path).directory).values())


def test_a_query_whose_filter_was_not_kept_reads_every_file(tmp_path):
    t = make(tmp_path / "t")
    querylog.record(t.path, querylog.QueryRecord("read", None, predicates=[("a", "expression")]))
    log_reads(t, "hot", 1)
    live = {e.file.file_name: e for e in t.directory.live_files(t.latest_snapshot()).values()}
    reads = logged_reads(Table.open(t.path))
    assert reads == {name: e.file.file_size * (2 if e.partition == ("hot",) else 1) for name, e in live.items()}


def test_an_append_table_with_fixed_buckets_is_left_as_written(tmp_path):
    # (T1's buckets of one partition packed into one task: on hand-built tasks above.) Paimon keeps
    # a fixed-bucket append table's files in the order they were written: the optimizer has no
    # work there, runs nothing and commits nothing
    t = make(tmp_path / "t", partitions=("x",), writes=3, buckets=3)
    assert t.table_schema.buckets == 3 and len(t.directory.live_files(t.latest_snapshot())) == 9
    expected = reference(t)
    assert pending(t.directory) == {"minor": {}, "major": {}}
    snapshot = latest(t)
    assert {(r.tier, r.status) for r in run_once(t.path)} == {("minor", "nothing"), ("major", "nothing")}
    assert latest(t) == snapshot and len(history(t.path)) == 0
    assert reference(Table.open(t.path)).equals(expected)


@pytest.mark.parametrize(("max_tasks", "per_table"), [(1, 1), (2, 1), (2, 2), (3, 2)])
def test_the_limits_hold_and_reads_answer_the_same(tmp_path, max_tasks, per_table):
    tables = [make(tmp_path / name, partitions=("x", "y", "z")) for name in ("one", "two")]
    expected = [reference(t) for t in tables]
    filtered = [reference(t, filter=("a", "<", 300_000)) for t in tables]
    recorder = Recorder(hold=0.3)
    reports: list = []
    committed = run_daemon([t.path for t in tables], once=True, on_report=reports.append, max_tasks=max_tasks,
                           max_tasks_per_table=per_table, rewrite=recorder)
    assert committed == 6 and len(recorder.calls) == 6
    # the limits are reached (every task holds 0.3 s) and never passed
    assert recorder.most == min(max_tasks, 2 * per_table)
    assert max(recorder.most_per_table.values()) == min(per_table, max_tasks)
    for t, whole, part in zip(tables, expected, filtered):
        t = Table.open(t.path)
        assert reference(t).equals(whole)
        assert reference(t, filter=("a", "<", 300_000)).equals(part)
        assert not any(pending(t.directory).values())
        assert len(history(t.path)) == 3


def test_concurrent_tasks_on_one_table_both_commit(tmp_path):
    t = make(tmp_path / "t", partitions=("x", "y"))
    expected = reference(t)
    before = latest(t)
    recorder = Recorder(barrier=threading.Barrier(2))
    reports = run_once(t.path, max_tasks=2, rewrite=recorder)
    assert recorder.most == 2 and recorder.most_per_table["t"] == 2
    assert sorted(r.status for r in reports if r.tier == "minor") == ["committed", "committed"]
    t = Table.open(t.path)
    snapshots = [s for s in t.snapshots() if s.id > before]
    # both took the same base: the one that lost the race for the next snapshot was rebased over
    # the winner's (a Paimon snapshot keeps no count of the lost races: it landed one further)
    assert recorder.bases == [before, before]
    assert [(s.id, s.commit_kind) for s in snapshots] == [(before + 1, "COMPACT"), (before + 2, "COMPACT")]
    assert sorted(r.snapshot_id for r in reports if r.tier == "minor") == [before + 1, before + 2]
    assert len(history(t.path)) == 2  # each task its own line, written concurrently too
    assert reference(t).equals(expected)
    assert not any(pending(t.directory).values())


def test_a_task_whose_inputs_were_replaced_is_a_conflict_and_retried(tmp_path):
    t = make(tmp_path / "t", partitions=("x",))
    expected = reference(t)
    tasks, _ = plan_tasks(t.path)
    [stale] = tasks
    assert [r.status for r in run_tasks([stale])] == ["committed"]
    snapshot = latest(t)
    assert [r.status for r in run_tasks([stale])] == ["conflict"]  # its inputs are gone: nothing committed
    assert latest(t) == snapshot
    assert len(history(t.path)) == 1
    assert {r.status for r in run_once(t.path)} == {"nothing"}  # the next round finds the work done
    assert reference(Table.open(t.path)).equals(expected)


def test_a_daemon_round_orders_the_tasks_of_all_tables_together(tmp_path):
    first = make(tmp_path / "first", partitions=("cold", "warm"))
    second = make(tmp_path / "second", partitions=("cold", "hot"))
    log_reads(second, "hot", 3)
    log_reads(first, "warm", 1)
    recorder = Recorder()
    committed = run_daemon([first.path, second.path], once=True, max_tasks=1, rewrite=recorder)
    assert committed == 4
    assert recorder.calls == [("second", [("hot",)]), ("first", [("warm",)]), ("first", [("cold",)]),
                              ("second", [("cold",)])]


def test_a_primary_key_tables_compaction_and_index_build_are_tasks(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64())])
    t = Table.create(str(tmp_path / "pk"), schema, primary_key="id", options={"write-only": "true"})
    for seed in range(6):
        t.write(pa.table({"id": np.arange(0, 2000), "a": np.full(2000, seed)}, schema=schema))
    t.set_options({"file-index.bloom-filter.columns": "a"})
    expected = top_rows(t.read(), [("id", "asc")], None)
    tasks, nothing = plan_tasks(t.path)
    assert [(x.tier, x.whole_table) for x in tasks] == [("minor", True), ("major", True)] and nothing == []
    reports = run_once(t.path, max_tasks=2)  # two threads, yet one after the other (T5)
    # the compaction, first, wrote every file anew with the Bloom filter: the index build after it
    # has nothing left (before it, it would have rewritten the six files the compaction replaces)
    assert [(r.tier, r.status) for r in reports] == [("minor", "committed"), ("major", "nothing")]
    assert history(t.path).column("tier").to_pylist() == ["minor"]
    t = Table.open(t.path)
    assert top_rows(t.read(), [("id", "asc")], None).equals(expected)
    live = [e.file for e in t.directory.live_files(t.latest_snapshot()).values()]
    # a Paimon file's Bloom filters are its file index, built with the file
    assert live and all("a" in m.origin.file_index_columns("bloom-filter") for m in live)
    assert all(missing_indexes(m, t.directory.options) == (False, False) for m in live)
    assert {r.status for r in run_once(t.path)} == {"nothing"}


def test_a_tables_own_limit_replaces_the_daemons(tmp_path):
    with pytest.raises(InvalidArgumentError, match="optimize.max-concurrent-tasks"):
        make(tmp_path / "bad", options={"optimize.max-concurrent-tasks": "0"})
    t = make(tmp_path / "t", partitions=("x", "y"), options={"optimize.max-concurrent-tasks": "2"})
    assert table_limit(t, 1) == 2 and table_limit(make(tmp_path / "plain"), 1) == 1
    recorder = Recorder(hold=0.3)
    assert run_daemon([t.path], once=True, max_tasks=2, max_tasks_per_table=1, rewrite=recorder) == 2
    assert recorder.most_per_table["t"] == 2


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2", None])
def test_limits_must_be_positive_integers(tmp_path, bad):
    t = make(tmp_path / "t", partitions=("x",), writes=1)
    reports: list = []
    for kwargs, name in (({"max_tasks": bad}, "max_tasks"), ({"max_tasks_per_table": bad}, "max_tasks_per_table"),
                         ({"max_task_bytes": bad}, "max_task_bytes")):
        with pytest.raises(InvalidArgumentError, match=name):
            run_daemon([t.path], once=True, on_report=reports.append, **kwargs)
    with pytest.raises(InvalidArgumentError, match="max_tasks"):
        run_once(t.path, max_tasks=bad)
    assert reports == []  # refused before any round


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--max-tasks", "0", "--max-tasks must be a positive integer"),
    ("--max-tasks", "-2", "--max-tasks must be a positive integer"),
    ("--max-tasks", "two", "--max-tasks must be a positive integer"),
    ("--max-tasks", "1.5", "--max-tasks must be a positive integer"),
    ("--max-tasks-per-table", "0", "--max-tasks-per-table must be a positive integer"),
    ("--max-task-size", "lots", "--max-task-size"),
    ("--max-task-size", "0", "--max-task-size must be more than 0 bytes"),
])
def test_the_daemon_cli_refuses_bad_limits_in_one_line(tmp_path, capsys, flag, value, message):
    t = make(tmp_path / "t", partitions=("x",), writes=2)
    assert main(["optimize-daemon", t.path, "--once", f"{flag}={value}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert len(history(t.path)) == 0  # no round ran


def test_the_daemon_cli_takes_the_limits(tmp_path, capsys):
    t = make(tmp_path / "t", partitions=("x", "y"), writes=2)
    expected = reference(t)
    assert main(["optimize-daemon", t.path, "--once", "--max-tasks", "2", "--max-tasks-per-table", "2",
                 "--max-task-size", "64 mb", "--since", "2h"]) == 0
    assert "2 pass(es) committed" in capsys.readouterr().out
    assert reference(Table.open(t.path)).equals(expected)


def test_a_failing_task_is_reported_and_the_others_go_on(tmp_path):
    t = make(tmp_path / "t", partitions=("bad", "good"))
    expected = reference(t)

    def rewrite(directory, groups, tier, progress):
        if ("bad",) in {p for p, _ in groups}:
            raise CorruptTableError("a damaged input file (test)", path=directory.path)
        return local_rewrite(directory, groups, tier, progress)
    reports: list = []
    assert run_daemon([t.path], once=True, on_report=reports.append, max_tasks=2, rewrite=rewrite) == 1
    statuses = sorted(r.status for r in reports if r.tier == "minor")
    assert statuses == ["committed", "failed: a damaged input file (test)"]
    assert reference(Table.open(t.path)).equals(expected)
    assert list(pending(Table.open(t.path).directory)["minor"]) == [(("bad",), 0)]  # retried next round
