"""`mergetree bench` (the merge workload) at a tiny size through the dispatcher: every contender's
output is checked against mergetree's and the JSON keeps its shape; the sorted merge of every row
(interleaved, disjoint and 10%-overlap runs against polars `merge_sorted` and DataFusion, those
that are installed) runs with it and alone; `python -m benchmarks` is the same command; the shared
generators give the same sorted runs for the same arguments.  Nothing here asserts a timing."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

from benchmarks import bench
from benchmarks import bench_merge as bm
from benchmarks import data as bd

ROOT = Path(__file__).resolve().parent.parent


def test_the_merge_bench_runs_and_checks_every_contender(tmp_path, capsys):
    numbers = tmp_path / "merge.json"
    code = bench.main(["--rows", "20000", "--string-rows", "4000", "--repeat", "1", "--no-progress",
                       "--json", str(numbers)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "mergetree (1 thread) is" in out and "(reference)" in out
    document = json.loads(numbers.read_text())
    assert list(document) == ["config", "environment", "results", "mergetree_speedup", "best_peer",
                              "threads2_vs_best_peer", "threads", "sorted_merge"]
    assert {r["workload"] for r in document["results"]} == set(bd.MERGE_WORKLOADS)
    assert all(r["check"] == "ok" for r in document["results"]), document["results"]
    _the_sorted_merge_checks_out(document["sorted_merge"], out, runs=bm.DEFAULT_RUNS)
    assert bench.main(["--runs", "0"]) == 2


def _expected_sorted_contenders() -> list[str]:
    names = [bm.SORTED_MERGETREE, bm.SORTED_MERGETREE_THREADS]
    if find_spec("polars"):
        names += [bm.POLARS_TREE, bm.POLARS_LIST]
    if find_spec("datafusion"):
        names += [bm.DATAFUSION_PARQUET, bm.DATAFUSION_IPC]
    return names


def _the_sorted_merge_checks_out(numbers: dict, out: str, runs: int) -> None:
    workloads = [bm.sorted_workload_name(p, k) for k in (runs, 2 * runs) for p in bd.SORTED_MERGE_OVERLAPS]
    contenders = _expected_sorted_contenders()
    results = numbers["results"]
    assert [(r["workload"], r["contender"]) for r in results] == [(w, c) for w in workloads for c in contenders]
    assert all(r["check"] == "ok" and r["rows_out"] == r["rows_in"] and r["ns_per_row"] > 0
               and r["cpu_ns_per_row"] > 0 for r in results), \
        [(r["workload"], r["contender"], r["check"]) for r in results if r["check"] != "ok"]
    assert set(numbers["best_peer_per_cpu"]) == set(workloads)
    assert set(numbers["disjoint_vs_interleaved"]) == {str(runs), str(2 * runs)}
    assert all(v > 0 for v in numbers["disjoint_vs_interleaved"].values())
    targets = numbers["targets"]
    assert [(t["name"], t["runs"]) for t in targets] == [
        (name, k) for k in (runs, 2 * runs) for name in ("disjoint_vs_interleaved", "disjoint_vs_best_peer",
                                                         "overlap10_vs_best_peer", "interleaved_vs_best_peer")]
    peers = len(contenders) > 2
    assert all((t["value"] is not None) == (peers or t["name"] == "disjoint_vs_interleaved") for t in targets)
    assert "targets:" in out and "includes Parquet decoding" in out and "(reference)" in out


def test_the_sorted_merge_alone(tmp_path, capsys):
    numbers = tmp_path / "sorted.json"
    code = bench.main(["--sorted-merge-only", "--rows", "6000", "--runs", "2", "--repeat", "2", "--no-progress",
                       "--json", str(numbers)])
    out = capsys.readouterr().out
    assert code == 0, out
    document = json.loads(numbers.read_text())
    assert document["results"] == [] and "mergetree (1 thread) is" not in out
    _the_sorted_merge_checks_out(document["sorted_merge"], out, runs=2)


def test_the_ranged_runs_overlap_as_named():
    rows, runs = 40_000, 4
    assert all(a.equals(b) for a, b in zip(bd.ranged_runs(rows, runs, 1.0), bd.int_runs(rows, runs)))
    for pattern, overlap in bd.SORTED_MERGE_OVERLAPS.items():
        tables = bm.make_sorted_workload(pattern, rows, runs).runs
        keys = [t.column(bd.KEY).to_numpy() for t in tables]
        assert all(len(k) == rows // runs and np.all(np.diff(k) > 0) for k in keys)  # strictly ascending runs
        sequences = np.concatenate([t.column(bd.SEQ).to_numpy() for t in tables])
        assert len(np.unique(sequences)) == rows  # the merged-rows check finds rows by sequence
        for before, after in itertools.pairwise(keys):
            shared = np.count_nonzero(before >= after[0]) / len(before)  # this run's rows in the next one's range
            if overlap == 0.0:
                assert before[-1] < after[0]
            elif overlap == 1.0:
                assert shared > 0.99
            else:
                assert 0.07 < shared < 0.13 and before[0] < after[0] and before[-1] < after[-1]
    with pytest.raises(ValueError, match="overlap"):
        bd.ranged_runs(rows, runs, 1.5)


def test_the_merged_rows_check_rejects_wrong_answers():
    runs = bm.make_sorted_workload("overlap10", 2_000, 4).runs
    expected = bm.MergedRows(runs)
    right = pa.concat_tables(runs).sort_by([(bd.KEY, "ascending"), (bd.SEQ, "ascending")])
    assert expected.check(right) == "ok"
    assert expected.check(right.slice(1)).startswith("wrong: 1,999 rows")
    backwards = right.take(pa.array(np.arange(right.num_rows)[::-1].copy()))
    assert expected.check(backwards) == "wrong: the keys are not in ascending order"
    doubled = pa.concat_tables([right.slice(0, 1), right.slice(0, right.num_rows - 1)])
    assert expected.check(doubled) == "wrong: not every input row is in the output exactly once"
    values = right.column("v_int").to_numpy().copy()
    values[7] += 1
    changed = right.set_column(right.schema.get_field_index("v_int"), "v_int", pa.array(values))
    assert "column 'v_int'" in expected.check(changed)
    foreign = right.set_column(right.schema.get_field_index(bd.SEQ), bd.SEQ,
                               pa.array(right.column(bd.SEQ).to_numpy() + 10_000))
    assert expected.check(foreign) == "wrong: a sequence number that no input row has"


def test_a_plan_with_a_sort_is_not_a_merge():
    merge = "SortPreservingMergeExec: [k@0 ASC NULLS LAST]\n  DataSourceExec: file_groups={8 groups: ...}"
    assert bm.plan_problem(merge) is None
    sorted_first = ("SortPreservingMergeExec: [k@0 ASC NULLS LAST]\n  SortExec: expr=[k@0 ASC NULLS LAST]\n"
                    "    DataSourceExec: ...")
    assert bm.plan_problem(sorted_first).startswith("not a sort-preserving merge of the files: SortPreservingMergeExec")
    assert bm.plan_problem("") == "not a sort-preserving merge of the files: (no physical plan)"


def test_python_m_benchmarks_is_mergetree_bench():
    def help_of(*command: str) -> str:
        return subprocess.run([sys.executable, *command, "--help"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout

    shown = help_of("-m", "benchmarks")
    assert shown == help_of("-m", "mergetree", "bench")
    for option in ("--table-only", "--spark-only", "--layout-only", "--advisor-only", "--scale-only", "--paimon-only",
                   "--quick", "--json", "--plot"):
        assert option in shown


def test_the_generators_are_deterministic_and_sorted():
    for workload in bd.MERGE_WORKLOADS:
        runs = bd.sorted_runs(workload, 4_000, 4)
        assert all(a.equals(b) for a, b in zip(runs, bd.sorted_runs(workload, 4_000, 4)))
        assert all((keys := r.column(bd.KEY).to_pylist()) == sorted(keys) for r in runs)  # sorted runs
        gappy = bd.sorted_runs(workload, 4_000, 4, null_fraction=0.5)
        assert all(r.column("v_int").null_count and r.column("v_float").null_count for r in gappy)
        assert all((keys := r.column(bd.KEY).to_pylist()) == sorted(keys) for r in gappy)
    commits = bd.table_commits(1_000, 800, 4)
    assert [c.num_rows for c in commits] == [250] * 4 and all(c.schema == bd.TABLE_SCHEMA for c in commits)
