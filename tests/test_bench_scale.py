"""`mergetree bench --scale` at tiny sizes: every operation runs in its own child process, every
check passes, the numbers are real, the report, chart and JSON come out; bad sizes are usage errors."""
from __future__ import annotations

import json

import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

from rich.console import Console

from benchmarks import bench
from benchmarks import bench_scale as bsc
from benchmarks import data as bd

SIZES = [20_000, 60_000]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One `mergetree bench --scale-only` at 20k and 60k rows through `bench.main` (each operation in a
    child process, as always; 20 lookups instead of 200 to stay quick): its exit code, its JSON and
    the report it printed."""
    reports = []

    def keep(*args, **kwargs):
        reports.append(run_scale_bench(*args, **kwargs))
        return reports[-1]

    run_scale_bench = bsc.run_scale_bench
    numbers = tmp_path_factory.mktemp("scale") / "scale.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bsc, "LOOKUPS", 20)
        patch.setattr(bsc, "run_scale_bench", keep)
        code = bench.main(["--scale-only", "--scale-sizes", "20k,60k", "--no-progress", "--json", str(numbers)])
    return code, json.loads(numbers.read_text()), reports[0]


@pytest.fixture(scope="module")
def report(run):
    return run[2]


def test_every_operation_runs_in_a_child_and_checks_out(report):
    assert report.ok, [(r.operation, r.rows, r.check) for r in report.results]
    assert report.spark is None and report.spark_write is None
    assert [(r.operation, r.rows) for r in report.results] == [(op, rows) for rows in SIZES for op in bsc.OPERATIONS]
    for r in report.results:
        assert r.seconds > 0 and r.rows_per_second > 0 and r.cpu_seconds >= 0, r
        assert 0 < r.baseline_rss_mib <= r.peak_rss_mib, r
        if r.operation == bsc.LOOKUP:
            assert r.rows_in == r.rows_out == 20
            assert 0 < r.latency_ms["median"] <= r.latency_ms["p95"] <= r.latency_ms["max"]
        else:
            assert r.files and r.files >= 1 and r.max_runs and r.max_runs >= 1
    for rows in SIZES:
        reads = [r for r in report.results if r.rows == rows and r.operation in (bsc.READ, bsc.READ_COMPACTED)]
        assert [r.rows_out for r in reads] == [rows // 2, rows // 2]
        write = next(r for r in report.results if r.rows == rows and r.operation == bsc.WRITE)
        assert write.rows_in == rows and rows // 2 <= write.rows_out <= rows


def test_the_rows_hold_every_key_twice_and_the_newest_version_is_known():
    rows = 3_001  # odd: key 0 gets a third version
    batches = list(bsc.generate(rows, batch_rows=1_000))
    assert [b.num_rows for b in batches] == [1_000, 1_000, 1_000, 1]
    ids = [i for b in batches for i in b.column("id").to_pylist()]
    keys = rows // 2
    assert sorted(set(ids)) == list(range(keys))
    assert ids[:keys] == ids[keys:2 * keys]
    strings = [s for b in batches for s in b.column("s").to_pylist()]
    assert strings[12] == "sku-00000012" and {len(s) for s in strings} == {12}
    last = {}
    for i, key in enumerate(ids):
        last[key] = (key, i * 0.5, bsc.string_of(i))
    assert all(bsc.newest_row(key, rows) == last[key] for key in range(keys))


def test_the_report_targets_and_chart(report, tmp_path):
    console = Console(record=True, width=250)
    console.print(bsc.format_scale_results(report))
    text = console.export_text()
    assert bsc.READ in text and "60,000" in text and "lookups/s" in text
    assert "write peak memory" in text and "n/a (needs 10M and a larger size)" in text
    targets = {t.name: t for t in bsc.scale_targets(report)}
    assert targets["write_peak_rss_mib"].value is not None and targets["speed_write"].value is None
    pytest.importorskip("matplotlib")
    chart = tmp_path / "scale.png"
    bsc.plot_scale_results(report.results, str(chart), title="tiny")
    assert chart.stat().st_size > 0


def test_main_scale_only_returns_0_and_writes_the_scale_json(run):
    code, document, _ = run
    assert code == 0
    scale = document["scale"]
    assert scale["sizes"] == SIZES and scale["ok"] is True
    assert len(scale["results"]) == len(SIZES) * len(bsc.OPERATIONS)
    assert all(r["check"] == "ok" and r["seconds"] > 0 and r["peak_rss_mib"] > 0 for r in scale["results"])
    assert scale["spark"] is None and "--scale-spark" in scale["spark_skipped"]
    assert set(scale["targets"]) >= {"write_peak_rss_mib", "speed_write", "speed_read", "speed_compact"}


@pytest.mark.parametrize("sizes", ["garbage", "10M,lots", "", "1.5k5", "0", "2.0001k"])
def test_bad_scale_sizes_are_usage_errors(sizes, capsys):
    with pytest.raises(SystemExit) as exit:
        bench.main(["--scale-only", "--scale-sizes", sizes])
    assert exit.value.code == 2
    error = capsys.readouterr().err
    assert "--scale-sizes" in error and ("row count" in error or "no sizes" in error or "rows" in error)


def test_sizes_parse_with_suffixes():
    assert bsc.parse_sizes("1M,10M,100M") == [1_000_000, 10_000_000, 100_000_000]
    assert bsc.parse_sizes(" 60k, 20K,1.5m,20000 ") == [20_000, 60_000, 1_500_000]
    assert bd.short_count(100_000_000) == "100M" and bd.short_count(20_000) == "20k"


def test_a_failing_child_is_reported_and_fails_the_report(tmp_path):
    failed = bsc._run_child("read", str(tmp_path / "no-table"), 20_000)
    assert failed["check"].startswith("failed: ")
    report = bsc.ScaleReport([20_000], [bsc._result(bsc.READ, 20_000, failed)])
    assert not report.ok
    assert not bsc.ScaleReport([20_000], [bsc.ScaleResult(bsc.WRITE, 20_000, check="wrong: 3 rows")]).ok
