"""The Star Schema Benchmark end to end at a small scale (about 50,000 lineorder rows): the
generator keeps the specification's domains; the 13 queries, imported as a multi-line SQL
history, answer through mergetree what DuckDB answers on the raw Parquet, before and after the
advisor's layout; the advice is the same on every run of the same log (in this process and in
another with another hash seed); and every query with a date or range predicate reads fewer
bytes after advise + optimize."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import IN_SOURCE_TREE

if not IN_SOURCE_TREE:  # the benchmarks live beside the package, in the source tree only
    pytest.skip("the benchmarks are not installed with the wheel", allow_module_level=True)

from benchmarks import bench_advisor as ba
from benchmarks import ssb
from mergetree import Table

SCALE = 0.0083   # about 50,000 rows
FILES = 32


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("ssb")
    return ba.run_ssb(SCALE, FILES, directory=str(root), advise_runs=2, progress=False), str(root / "lineorder")


def test_the_generator_keeps_the_specification_domains():
    data = ssb.generate(SCALE)
    assert 45_000 < data.num_rows < 55_000
    assert data.schema.field("lo_orderdate").type == pa.date32()
    assert data.schema.field("c_region").type == pa.string_view()
    assert data.schema.field("lo_revenue").type == ssb.MONEY

    def distinct(column: str) -> set:
        return set(pc.unique(data.column(column).cast(pa.string()) if pa.types.is_string_view(
            data.schema.field(column).type) else data.column(column)).to_pylist())

    assert distinct("c_region") == distinct("s_region") == set(ssb.REGIONS)
    assert distinct("p_mfgr") == {f"MFGR#{m}" for m in range(1, 6)}
    assert len(distinct("p_category")) == 25 and len(distinct("c_nation")) == 25
    assert 800 < len(distinct("p_brand1")) <= 1000 and len(distinct("s_city")) <= 250
    assert distinct("lo_discount") == set(range(11)) and distinct("lo_quantity") == set(range(1, 51))
    assert distinct("d_year") == set(range(1992, 1999))
    days = data.column("lo_orderdate")
    assert pc.min(days).as_py() >= dt.date(1992, 1, 1) and pc.max(days).as_py() <= dt.date(1998, 12, 31)
    # the date dimension's columns are the order date's
    assert pc.all(pc.equal(pc.year(days), data.column("d_year").cast(pa.int64()))).as_py()
    assert pc.all(pc.equal(pc.add(pc.multiply(pc.year(days), 100), pc.month(days)),
                           data.column("d_yearmonthnum").cast(pa.int64()))).as_py()
    # cities are the nation's first 9 characters and a digit; nations sit in their regions
    for city, nation in {(c, n) for c, n in zip(data.column("c_city").to_pylist()[:2000],
                                                 data.column("c_nation").to_pylist()[:2000])}:
        assert city[:9] == f"{nation[:9]:<9}" and city[9].isdigit()
    assert ssb.generate(SCALE).equals(data)   # seeded


def test_the_answers_equal_duckdbs_before_and_after_the_advisors_layout(run):
    report, _ = run
    assert report.logged == 3 * len(ssb.QUERIES)   # 39 multi-line statements imported as 39 queries
    assert [q.name for q in report.queries] == list(ssb.QUERIES)
    assert all(q.answer == "ok" for q in report.queries), [(q.name, q.answer) for q in report.queries]
    assert sum(q.rows for q in report.queries) > 100   # answers that hold something to compare


def test_queries_with_a_date_or_range_predicate_read_fewer_bytes_after_optimize(run):
    report, _ = run
    assert report.options.get("clustering.columns"), report.advice
    for q in report.queries:
        if q.date_or_range:
            assert q.bytes_after < q.bytes_before, (q.name, q.bytes_before, q.bytes_after)
    picked = [q for q in report.queries if q.date_or_range]
    assert sum(q.bytes_after for q in picked) < 0.5 * sum(q.bytes_before for q in picked)


def test_the_same_advice_on_every_run_of_the_same_log(run):
    report, path = run
    assert report.identical and len(report.advise_seconds) == 2
    assert report.margin is not None and "decided by a margin of" in report.advice
    # the table as the advice left it: this process and another with another hash seed (so
    # another set iteration order) give the same advice
    script = ("import json, sys; from mergetree import Table; "
              "print(json.dumps(Table.open(sys.argv[1]).advise().decision(), default=str, sort_keys=True))")
    out = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONHASHSEED": "7"})
    assert out.returncode == 0, out.stderr
    here = json.loads(json.dumps(Table.open(path).advise().decision(), default=str, sort_keys=True))
    assert json.loads(out.stdout) == here


def test_no_reason_promises_an_index_the_advice_lacks(run):
    _, path = run
    advice = Table.open(path).advise()
    levers = {lever.lever: lever for lever in advice.levers}
    for text in [lever.reason for lever in advice.levers] + advice.refused:
        for kind, column in re.findall(r"a (bitmap|Bloom filter) serves (\w+)", text):
            lever = levers.get("bitmap" if kind == "bitmap" else "bloom")
            assert lever is not None and column in lever.recommended, text
        assert "serves it better" not in text
