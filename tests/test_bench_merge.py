"""`mergetree bench` (the merge workload) at a tiny size through the dispatcher: every contender's
output is checked against mergetree's and the JSON keeps its shape; `python -m benchmarks` is the
same command; the shared generators give the same sorted runs for the same arguments."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

from benchmarks import bench
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
                              "threads2_vs_best_peer", "threads"]
    assert {r["workload"] for r in document["results"]} == set(bd.MERGE_WORKLOADS)
    assert all(r["check"] == "ok" for r in document["results"]), document["results"]
    assert bench.main(["--runs", "0"]) == 2


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
