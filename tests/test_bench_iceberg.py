"""The Iceberg workload of `mergetree bench --iceberg` at a tiny scale: it runs, every SSB answer
equals DuckDB's, the rewrite commits, keeps about as many files and the bytes planned fall (the
target itself is measured at scale by the benchmark, not asserted here)."""
from __future__ import annotations

import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)
pytest.importorskip("pyiceberg", reason="the Iceberg workload needs pyiceberg (the iceberg extra)")

from benchmarks import bench_iceberg


def test_the_iceberg_workload_runs_and_answers_right(tmp_path):
    report = bench_iceberg.run_iceberg_bench(scale=0.01, files=12, directory=str(tmp_path), progress=False)
    assert report.imported == 39 and len(report.queries) == 13
    assert all(q.answer == "ok" for q in report.queries), [(q.name, q.answer) for q in report.queries]
    # the rewrite's target is the appended files' own size: about as many files as before (a
    # qd-tree, when the advice picks one, writes up to a third more: a large leaf's remainder is a
    # file of its own, which keeps the leaf's queries from reading its neighbours' rows)
    assert 0.75 * report.files_before <= report.files_after <= 1.4 * report.files_before
    assert sum(q.bytes_after for q in report.queries) < sum(q.bytes_before for q in report.queries)
    assert report.rewrite_seconds > 0 and report.overwrite_seconds > 0 and report.scan_seconds > 0
    text = bench_iceberg.format_iceberg_results(report)
    assert "date/range queries" in text and "targets:" in text
