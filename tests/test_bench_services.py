"""`mergetree bench --services-only` at a tiny size through the real code path: every case's
answer checked (the evolved read, what the deletes left, the keys of dynamic buckets, the lookup
changelog folded into the table).  No timing target is asserted: at this size
the numbers are only sensible, not meaningful."""
from __future__ import annotations

import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

from benchmarks import bench
from benchmarks import bench_services as bsv


def test_every_case_runs_and_checks_its_answer():
    report = bsv.run_services_bench(5_000, repeat=1)
    cases = [r.case for r in report.results]
    assert len(cases) == 7 and len(set(cases)) == len(cases)
    for r in report.results:
        assert r.check == "ok", r
        assert r.seconds > 0 and (r.baseline_seconds is None or r.baseline_seconds > 0)
    assert "dynamic buckets" in bsv.format_services_results(report)


def test_the_dispatcher_runs_it(capsys):
    assert bench.main(["--services-only", "--services-rows", "3000", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "mergetree bench --services" in out and "dynamic buckets" in out
