"""`mergetree bench --storage` at a tiny size through the dispatcher: every step of mergetree on
local disk and on the S3 server it starts answers correctly, the report and the JSON keep their
shape, and the requests it reports are the ones made: the server's own log and mergetree's
counter agree on every S3 operation, and the server log's count is checked against requests of
known number sent here."""
from __future__ import annotations

import json

import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

pytest.importorskip("moto.server", reason="moto[server] is not installed: the storage bench starts its S3 server")

from rich.console import Console

from benchmarks import bench
from benchmarks import bench_storage as bst
from benchmarks.s3_server import LocalS3

MERGETREE_STEPS = [bst.WRITE, bst.READ, bst.LOOKUP_UNMERGED, bst.COMPACT, bst.READ_COMPACTED, bst.LOOKUP_COMPACTED]


def test_the_server_log_counts_the_requests_sent():
    from mergetree.storage import resolve

    with LocalS3() as s3:
        store = resolve(s3.uri("counted"), s3.options())
        mark = s3.mark()
        for i in range(3):
            store.write(f"k/{i}", b"x" * (i + 1))
        assert store.read("k/1") == b"xx"
        assert [info.path for info in store.list("k/")] == ["k/0", "k/1", "k/2"]
        assert store.exists("k/2")
        assert s3.requests_since(mark) == {"GET": 1, "PUT": 3, "LIST": 1, "HEAD": 1, "DELETE": 0}
        assert s3.requests_since(s3.mark()) == dict.fromkeys(("GET", "PUT", "LIST", "HEAD", "DELETE"), 0)
        assert (s3.cpu_seconds() or 0.0) >= 0.0


def test_the_storage_bench_runs_and_counts_its_requests(tmp_path, capsys):
    numbers = tmp_path / "storage.json"
    lookups = 6
    code = bench.main(["--storage-only", "--storage-rows", "4000", "--storage-lookups", str(lookups),
                       "--storage-no-spark", "--no-progress", "--json", str(numbers)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "mergetree bench --storage: 4,000 upserts" in out and "target >= 70%" in out
    document = json.loads(numbers.read_text())["storage"]
    assert list(document) == ["rows", "keys", "lookups", "commits", "buckets", "versions", "seconds", "ratios",
                              "results"]
    assert document["rows"] == 4000 and document["lookups"] == lookups
    results = [bst.StorageResult(**{k: v for k, v in r.items() if k != "rows_per_second"})
               for r in document["results"]]
    mine = [r for r in results if r.engine == bst.MERGETREE]
    assert [(r.step, r.where) for r in mine] == [(step, where) for step in MERGETREE_STEPS
                                                 for where in (bst.LOCAL, bst.S3)]
    assert all(r.check == "ok" for r in mine), [(r.step, r.where, r.check) for r in mine]
    for r in mine:
        if r.where == bst.LOCAL:
            assert r.requests is None and r.counted is None and r.lookup_gets is None
            continue
        # two counts of one operation: the server's log and mergetree's own counter
        assert r.requests == r.counted, (r.step, r.requests, r.counted)
        if r.latency_ms:
            assert len(r.lookup_gets) == lookups and sum(r.lookup_gets) == r.requests["GET"]
            assert min(r.lookup_gets) >= 2 and r.requests["PUT"] == 0  # a hint and a snapshot at least, no write
    by_step = {r.step: r for r in mine if r.where == bst.S3}
    write = by_step[bst.WRITE].requests
    assert write["PUT"] >= bst.COMMITS * 2 and write["DELETE"] == 0  # data files and a snapshot per commit
    assert by_step[bst.READ].requests["PUT"] == 0 and by_step[bst.READ].requests["GET"] > 0
    assert by_step[bst.COMPACT].requests["PUT"] > 0
    peers = [r for r in results if r.engine in (bst.DELTA, bst.ICEBERG)]
    assert {(r.engine, r.where) for r in peers} == {(e, w) for e in (bst.DELTA, bst.ICEBERG)
                                                    for w in (bst.LOCAL, bst.S3)}
    for r in peers:
        assert r.check == "ok" or r.check.startswith("skipped: not installed"), (r.engine, r.where, r.check)
        if r.check == "ok" and r.where == bst.S3:
            assert r.requests["PUT"] > 0 if r.step == bst.WRITE else r.requests["GET"] > 0
    ratios = document["ratios"]
    assert ratios["lookup_gets"] == max(by_step[bst.LOOKUP_COMPACTED].lookup_gets)
    assert ratios["read_s3_vs_local"] > 0 and ratios["targets"] == bst.TARGETS


def test_the_report_says_pass_or_miss():
    def result(engine, step, where, rows, seconds, gets=None):
        return bst.StorageResult(engine, step, where, rows, seconds, lookup_gets=gets,
                                 latency_ms={"median": 1.0, "p95": 2.0, "max": 3.0, "count": 3} if gets else None)

    results = [result(bst.MERGETREE, bst.READ, bst.LOCAL, 100, 1.0), result(bst.MERGETREE, bst.READ, bst.S3, 100, 2.0),
               result(bst.MERGETREE, bst.WRITE, bst.S3, 100, 1.0), result(bst.DELTA, bst.WRITE, bst.S3, 100, 1.25),
               result(bst.MERGETREE, bst.LOOKUP_COMPACTED, bst.S3, 3, 0.1, [3, 3, 2]),
               result(bst.MERGETREE, bst.LOOKUP_UNMERGED, bst.S3, 3, 0.1, [6, 5, 6])]
    report = bst.StorageReport(rows=100, keys=50, lookups=3, results=results)
    console = Console(width=300, record=True)
    console.print(bst.format_storage_results(report))
    text = console.export_text()
    assert "full read (merge-on-read) on S3: 50% of local disk's rows/s (target >= 70%: MISS)" in text
    assert "after compaction): at most 3 GET(s) (target <= 3: PASS)" in text
    assert "before compaction): at most 6 GET(s) (target <= 3: MISS)" in text
    assert "write + commit on S3: mergetree 1.25x delta-rs's rows/s (target >= 1x: PASS)" in text
