"""`mergetree bench --layout` at a tiny size: every layout builds, every query run is checked
against the numpy reference and right, and the checker itself rejects a wrong answer."""
from __future__ import annotations

import pyarrow as pa
import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

from benchmarks import bench_layout as bl
from benchmarks import data as bd
from benchmarks import queries as lq


def test_the_layout_bench_runs_and_checks_every_answer(tmp_path):
    report = bl.run_layout_bench(rows=20_000, files=10, queries=12, budget=0.0, min_run=2,
                                 directory=str(tmp_path), progress=False)
    assert report.ok, [(c.layout, c.workload, c.check) for c in report.cells if not c.ok] + \
        [(i.name, i.check) for i in report.layouts if i.check != "ok"]
    mergetree_cells = [c for c in report.cells if not c.layout.startswith("delta")]
    assert mergetree_cells and all(c.run >= 2 for c in mergetree_cells)
    assert {c.workload for c in report.cells} == set(lq.WORKLOADS)
    targets = bl.check_targets(report)
    assert targets and all(t.met is not None for t in targets if "delta" not in t.text)
    assert bl.format_layout_results(report) is not None


def test_the_checker_rejects_wrong_answers():
    data = bd.make_layout_data(rows=2_000, files=4)
    for workload in lq.WORKLOADS:
        for query in lq.make_queries(data, workload, 4):
            if query.kind == "group":
                continue
            expected = (lq.expected_rows if query.kind == "filter" else lq.expected_top)(data, query)
            assert lq.check_answer(data, query, expected) == "ok"
            if expected.num_rows:
                assert lq.check_answer(data, query, expected.slice(1)) != "ok"
            wrong = data.table.slice(0, max(expected.num_rows, 1))
            assert lq.check_answer(data, query, wrong) != "ok" or wrong.equals(expected)
    group = next(q for q in lq.make_queries(data, "group-by category", 8))
    assert lq.check_answer(data, group, pa.table({"category": pa.array([], pa.string())})) != "ok"
