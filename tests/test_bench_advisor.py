"""`mergetree bench --advisor` at a tiny size: the loop runs end to end on every workload, the
advisor's layout is applied by the optimizer, and the targets are computed from real numbers."""
from __future__ import annotations

import math

import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

from benchmarks import bench_advisor as ba


def test_the_advisor_bench_runs_the_whole_loop(tmp_path):
    report = ba.run_advisor_bench(rows=20_000, files=10, queries=24, budget=0.0, directory=str(tmp_path),
                                  progress=False, log_queries=2_000)
    assert [w.workload for w in report.workloads] == list(ba.WORKLOADS)
    for w in report.workloads:
        assert w.before.bytes > 0 and w.after.bytes > 0 and w.lower_bound_bytes > 0
        assert any("committed" in p or "->" in p for p in w.passes), w.passes  # the optimizer rewrote the table
        assert w.best_fixed and w.best_fixed_bytes > 0
    seeded = {w.workload: w.options for w in report.workloads}
    assert seeded["50/50 a|b"]["clustering.strategy"] in ("hilbert", "qdtree")
    assert len(report.fixed) == len(ba._fixed_layouts())
    assert not math.isnan(report.advise_100k_seconds) and not math.isnan(report.logging_overhead)
    assert len(report.targets()) == 2 * len(ba.WORKLOADS) + 4
    assert "targets:" in ba.format_advisor_results(report)


def test_bench_advisor_runs_ssb_through_the_bench_command(capsys):
    from benchmarks import bench

    code = bench.main(["--advisor-only", "--advisor-scale", "0.002", "--no-progress"])
    out = capsys.readouterr().out
    assert code in (0, 1) and "SSB at scale 0.002" in out and "targets:" in out, out
    assert "answers equal DuckDB's on the raw Parquet: 13 of 13: met" in out
    assert "the same advice on 3 runs of the same log: met" in out
    assert bench.main(["--advisor-only", "--advisor-scale", "-1"]) == 2
