"""`mergetree bench --streaming-only --streaming-no-spark` at a tiny size through `bench.main` and the
real code path: the change read's answer is checked (applied to the rows at `a` it gives the rows at
`b`, its keys equal the DuckDB diff's, the lookup producer's changelog equals it), and the report,
targets and JSON come out.  No timing target is asserted: at this size the numbers are only
sensible, not meaningful."""
from __future__ import annotations

import json

import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

pytest.importorskip("duckdb")

from benchmarks import bench
from benchmarks import bench_streaming as bsm

ROWS = 20_000


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    numbers = tmp_path_factory.mktemp("streaming") / "streaming.json"
    code = bench.main(["--streaming-only", "--streaming-no-spark", "--streaming-rows", str(ROWS), "--repeat", "1",
                       "--no-progress", "--json", str(numbers)])
    return code, json.loads(numbers.read_text())


def test_the_answers_are_checked_and_right(run):
    _, document = run
    streaming = document["streaming"]
    assert streaming["rows"] == ROWS and streaming["commits"] == bsm.COMMITS
    assert streaming["checks"] and all(v == "ok" for v in streaming["checks"].values()), streaming["checks"]
    # 1% of the keys changed (a tenth of them deleted) plus a tenth as many new keys: every change
    # is a row (+I, -D) or a pair (-U, +U)
    changed = int(ROWS * bsm.CHANGE_FRACTION)
    assert changed < streaming["changed_rows"] <= 2 * changed + changed // 10 + bsm.COMMITS


def test_the_report_has_every_number(run):
    _, document = run
    streaming = document["streaming"]
    for name in ("changes(a, b)", "two reads + duckdb diff", "writes, no producer", "writes, lookup producer"):
        assert streaming["seconds"][name] > 0
    assert set(streaming["targets"]) == {name for name, _ in bsm.StreamingReport(1, 1, 0.0, {
        k: 1.0 for k in streaming["seconds"]}).targets()}
    assert "spark" not in streaming
