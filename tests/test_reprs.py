"""What the result objects print in a shell: one short line each, saying what a person asks
of them (sizes and times in words), never a screen of internals."""
from __future__ import annotations

import pyarrow as pa
import pytest

import mergetree
from mergetree import Table
from mergetree.organize.replay import replay
from mergetree.organize.report import build_report

WIDTH = 200  # a terminal line or two, where the default reprs ran to thousands of characters


@pytest.fixture
def table(tmp_path):
    t = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("g", pa.string()), ("v", pa.float64())]),
                     primary_key="id", buckets=2)
    for start in (0, 500):
        ids = pa.array(range(start, start + 1000), pa.int64())
        t.write(pa.table({"id": ids, "g": pa.array([str(i % 7) for i in range(1000)]),
                          "v": pa.array([float(i) for i in range(1000)])}))
    return t


def _short(obj: object, *facts: str) -> str:
    text = repr(obj)
    assert "\n" not in text and len(text) <= WIDTH, text
    assert " object at 0x" not in text, text
    for fact in facts:
        assert fact in text, (fact, text)
    return text


def test_every_result_object_prints_one_short_line(table):
    _short(table, "Table(", "primary_key=['id']", "buckets=2")
    _short(table.compact(full=True), "Snapshot(id=3", "COMPACT", "UTC", "records")
    plan = table.plan(filter=("id", "=", 5))
    _short(plan, "ReadPlan(snapshot=3", "of 2 files", "KiB", "removed by bucket 1")
    _short(plan.buckets[0], "BucketPlan(bucket=", "1 section", "1 file")
    _short(plan.files[0], "DataFileMeta('bucket-", "level 5", "rows", "keys (")
    table.read(filter=("g", "=", "3"))
    _short(table.last_read, "ReadStats(2 of 2 files read", "rows out")
    _short(table.info(), "TableInfo(", "primary_key=['id']", "snapshot 3: 1,500 rows in 2 files")
    _short(table.options, "TableOptions(write_buffer_size=", "MiB")
    table.changes(0, consumer_id="c1").read_all()
    _short(table.consumer("c1"), "Consumer(id='c1', next_snapshot=4, updated 20")
    _short(table.expire_queries(), "Expired(records before 20", "removed")
    _short(table.advise(), "Advice(", "replayed", "explain() says why")
    _short(replay(table.path), "ReplayResult(", "layout current", "replayed")
    _short(build_report(table.path), "Report(", "1,500 rows", "generated 20")
    merged = mergetree.merge([pa.table({"k": [1, 2]}), pa.table({"k": [2, 3]})], "k")
    _short(merged, "MergeReader(2 runs by ['k'], deduplicate, loser-tree, 0 rows out")
    merged.read_all()
    _short(merged, "3 rows out")
