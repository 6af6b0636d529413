"""`mergetree bench --engines-only` at a tiny size through `bench.main` and the real code path:
every engine's answer, with pushdown and without, is checked against `Table.read`, and the
pushed query reads fewer files than the table has.  No timing target is asserted: at this size
the numbers are only sensible, not meaningful."""
from __future__ import annotations

import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

pytest.importorskip("polars")

from benchmarks import bench
from benchmarks import bench_engines as be


def test_every_engine_answers_right_and_the_pushed_query_reads_fewer_files():
    report = be.run_engines_bench(20_000, repeat=1)
    engines = [r.engine for r in report.results]
    assert engines[0] == "polars" and len(engines) == len(set(engines))
    for r in report.results:
        assert r.check == "ok", r
        assert r.rows == 20 and r.files_total == be.COMMITS and 0 < r.files_read < r.files_total
    text = be.format_engines_results(report)
    assert all(e in text for e in engines) and "BETWEEN 10000 AND 10019" in text


def test_the_dispatcher_runs_it(capsys):
    code = bench.main(["--engines-only", "--engines-rows", "20000", "--repeat", "1", "--no-progress"])
    assert code in (0, 1)  # 1: the 10x target is not for a table this small
    out = capsys.readouterr().out
    assert "mergetree bench --engines: 20,000 rows" in out and "engines workload took" in out
