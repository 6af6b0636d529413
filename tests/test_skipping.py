"""Skipping never changes a result: random tables (append and primary-key, with updates and
deletes), random layouts, Bloom and bitmap indexes and pre-aggregates, random filters; every
filtered, Top-N and aggregate read equals a plain full read of the same table with the filter,
order and grouping applied by pyarrow."""
from __future__ import annotations

import os
import shutil
import tempfile
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import Table
from mergetree.table import filters as flt
from mergetree.table.info import clustering_depth
from mergetree.table.levers import preaggregates
from mergetree.table.levers.preaggregates import combine_partials, normalize_measures, partial_aggregate
from mergetree.table.read import top_rows

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("cat", pa.string()), ("v", pa.int64()),
                    ("s", pa.string())])
CATS = ["x", "y", "z", None]


@st.composite
def batches(draw, keys: int):
    n = draw(st.integers(1, 60))
    ids = draw(st.lists(st.integers(0, keys - 1), min_size=n, max_size=n, unique=True))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "a": pa.array(draw(st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=n, max_size=n)), pa.int32()),
        "cat": pa.array(draw(st.lists(st.sampled_from(CATS), min_size=n, max_size=n)), pa.string()),
        "v": pa.array(draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n)), pa.int64()),
        "s": pa.array([f"s{draw(st.integers(0, 30)):02d}" for _ in range(n)], pa.string()),
    }, schema=SCHEMA)


def leaves():
    ints = st.integers(-60, 300)
    return st.one_of(
        st.tuples(st.sampled_from(["id", "a", "v"]), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), ints),
        st.tuples(st.sampled_from(["id", "a"]), st.sampled_from(["in", "not in"]),
                  st.lists(ints, min_size=1, max_size=4)),
        st.tuples(st.sampled_from(["cat", "s"]), st.sampled_from(["=", "!=", "<", ">="]),
                  st.sampled_from(["x", "y", "z", "s05", "s17", "q"])),
        st.tuples(st.sampled_from(["cat", "s"]), st.just("in"), st.lists(st.sampled_from(["x", "z", "s03", "s29"]),
                                                                        min_size=1, max_size=3)),
        st.tuples(st.sampled_from(["a", "cat"]), st.sampled_from(["is null", "is not null"]), st.none()),
    )


filters = st.recursive(leaves(), lambda inner: st.tuples(st.sampled_from(["and", "or"]),
                                                          st.lists(inner, min_size=1, max_size=3)), max_leaves=4)


def plain(table: Table, f) -> pa.Table:
    """The reference: a full read, filtered by pyarrow."""
    full = table.read()
    expression = flt.to_expression(flt.normalize(f, table.schema), table.schema)
    return full.filter(expression) if expression is not None else full


def canonical(t: pa.Table) -> pa.Table:
    return top_rows(t, [("id", "asc")], None)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), primary_key=st.booleans())
def test_skipping_never_changes_a_result(data, primary_key):
    directory = tempfile.mkdtemp(prefix="mergetree-skipping-")
    # partials kept in the manifest, or only in their sidecars
    inline_limit = data.draw(st.sampled_from([0, preaggregates.INLINE_MAX_BYTES]), label="inline partials")
    try:
        with mock.patch.object(preaggregates, "INLINE_MAX_BYTES", inline_limit):
            _check_random_table(data, primary_key, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _check_random_table(data, primary_key: bool, directory: str) -> None:
    options = {"target-file-size": data.draw(st.sampled_from(["600 b", "2 kb", "64 kb"]), label="file size"),
               "write-only": "true"}
    bloom = data.draw(st.lists(st.sampled_from(["id", "a", "cat", "s"]), unique=True), label="bloom")
    bitmap = data.draw(st.lists(st.sampled_from(["a", "cat", "s"]), unique=True), label="bitmap")
    if bloom:
        options["file-index.bloom-filter.columns"] = ",".join(bloom)
    if bitmap:
        options["file-index.bitmap.columns"] = ",".join(bitmap)
        options["file-index.bitmap.max-values"] = str(data.draw(st.sampled_from([3, 1000]), label="max values"))
    t = Table.create(f"{directory}/t", SCHEMA, primary_key="id" if primary_key else None,
                     buckets=data.draw(st.sampled_from([1, 2])) if primary_key else 1, options=options)
    if data.draw(st.booleans(), label="model"):
        t.add_aggregate("m", ["cat", "s"], {"v": ["sum", "min", "max"], "*": "count", "a": "count"})
    for _ in range(data.draw(st.integers(1, 5), label="writes")):
        t.write(data.draw(batches(120)))
        if primary_key and data.draw(st.booleans(), label="delete"):
            t.delete(pa.table({"id": pa.array(data.draw(st.lists(st.integers(0, 119), max_size=10)), pa.int64())}))
    if not primary_key and data.draw(st.booleans(), label="optimize"):
        order = data.draw(st.lists(st.sampled_from(["a", "v", "cat", "s"]), min_size=1, max_size=3, unique=True))
        t.optimize(order=order, strategy=data.draw(st.sampled_from(["linear", "zorder", "hilbert"])),
                   sort_within=data.draw(st.sampled_from([None, "v", ["a", "s"]])))
    elif primary_key and data.draw(st.booleans(), label="compact"):
        t.compact(full=data.draw(st.booleans()))
    if data.draw(st.booleans(), label="build indexes later"):
        t.build_indexes()
    for _ in range(4):
        f = data.draw(filters, label="filter")
        assert canonical(t.read(filter=f)).equals(canonical(plain(t, f))), f
        order = data.draw(st.lists(st.tuples(st.sampled_from(["v", "a", "s", "id"]),
                                             st.sampled_from(["asc", "desc"])), min_size=1, max_size=2,
                                   unique_by=lambda o: o[0]), label="order")
        limit = data.draw(st.integers(0, 15), label="limit")
        with_filter = data.draw(st.booleans(), label="top-n filter")
        got = t.read(filter=f if with_filter else None, order_by=order, limit=limit)
        want = top_rows(plain(t, f if with_filter else None), order, limit)
        assert got.equals(want), (f, order, limit)
        group_by = data.draw(st.sampled_from([[], ["cat"], ["s"], ["cat", "s"]]), label="group by")
        measures = data.draw(st.sampled_from([{"v": "sum"}, {"*": "count", "v": ["min", "max"]},
                                              {"a": "count", "v": "sum"}]), label="measures")
        agg_filter = data.draw(st.sampled_from([None, ("cat", "=", "x"), ("s", ">=", "s10"), f]),
                               label="agg filter")
        got = t.aggregate(group_by, measures, filter=agg_filter)
        pairs = normalize_measures(measures, t.schema)
        rows = plain(t, agg_filter)
        want = combine_partials([partial_aggregate(rows, group_by, pairs)], group_by, pairs, t.schema)
        assert got.equals(want), (group_by, measures, agg_filter)


def test_indexes_really_skip(tmp_path):
    """The test above proves nothing if nothing is ever skipped: here each index removes files."""
    rng = np.random.default_rng(1)
    t = Table.create(str(tmp_path / "t"), SCHEMA, options={
        # files rolled at their size on disk: ~48 rows each, so most lie inside one write's ids and cats
        "target-file-size": "512 b", "file-index.bloom-filter.columns": "id",
        "file-index.bitmap.columns": "cat"})
    for part in range(8):
        ids = rng.permutation(1000)[:300] + part * 1000
        t.write(pa.table({"id": ids, "a": rng.integers(0, 100, 300).astype(np.int32),
                          "cat": [["x", "y"][part % 2]] * 150 + [["z", "x"][part % 2]] * 150,
                          "v": rng.integers(0, 10, 300), "s": ["s"] * 300}, schema=SCHEMA))
    plan = t.plan(("id", "in", [5, 5005]))
    assert plan.steps["min/max"].files > 0 and len(plan.files) <= 2
    assert t.read(filter=("id", "in", [5, 5005])).num_rows == len(set(t.read().column("id").to_pylist()) & {5, 5005})
    t.optimize(order="id")  # a linear layout: one file per id range, Bloom filters now decide within ranges
    probe = t.plan(("id", "=", int(t.read().column("id")[3].as_py()) + 1_000_000))
    # (a Paimon table's `file-index.*` Bloom filters and bitmaps are its file index: step "file-index")
    assert probe.files == [] and probe.steps["min/max"].files + probe.steps["file-index"].files == \
        probe.files_total
    within = t.plan(("cat", "=", "y"))  # inside every file's [min, max] ("x".."z"), absent from half of them
    assert within.steps["min/max"].files == 0 and within.steps["file-index"].files >= within.files_total // 3
    holding = {e.file.file_name for e in t.directory.live_files(t.latest_snapshot()).values()
               if "y" in pq.read_table(os.path.join(t.path, e.file.file_name), columns=["cat"]).column(0).to_pylist()}
    assert {m.file_name for m in within.files} == holding  # the bitmaps skip exactly the files without "y"
    assert t.read(filter=("cat", "=", "y")).num_rows == 4 * 150
    top = t.read(order_by=[("id", "desc")], limit=3)
    assert t.last_read.files_read == 1
    assert top.column("id").to_pylist() == sorted(t.read().column("id").to_pylist())[-3:][::-1]


@pytest.mark.parametrize("strategy", ["linear", "zorder", "hilbert"])
def test_optimize_keeps_every_row_and_stores_the_layout(tmp_path, strategy):
    rng = np.random.default_rng(2)
    # files rolled at their size on disk (~1,000 rows each): enough of them for a depth to mean something
    t = Table.create(str(tmp_path / "t"), SCHEMA, options={"target-file-size": "8 kb"})
    for _ in range(5):
        n = 2000
        t.write(pa.table({"id": rng.integers(0, 10**9, n), "a": rng.integers(0, 1000, n).astype(np.int32),
                          "cat": rng.choice(["x", "y"], n), "v": rng.zipf(1.5, n), "s": rng.choice(["p", "q"], n)},
                         schema=SCHEMA))
    before = canonical(t.read())
    depth_before = {c.column: c.depth for c in t.info().column_clustering}
    as_written = clustering_depth([e.file for e in t.directory.live_files(t.latest_snapshot()).values()], "a")
    assert as_written.depth > 0.9 * as_written.files  # as written: nearly every file holds every value of a
    snapshot = t.optimize(order=["a", "v"], strategy=strategy)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    assert canonical(t.read()).equals(before)
    info = t.info()
    assert info.clustering == ("a", "v") and info.strategy == strategy
    depth = {c.column: c.depth for c in info.column_clustering}
    assert not depth_before and info.files >= 8 and depth["a"] < info.files / 2  # files are now tight on a
    reopened = Table.open(t.path)
    assert reopened.options.clustering is not None and reopened.options.clustering.columns == ("a", "v")
    assert reopened.optimize() is not None  # the stored layout, again
    assert canonical(reopened.read()).equals(before)


def test_primary_key_tables_refuse_other_columns_clearly(tmp_path):
    from mergetree import InvalidArgumentError
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id")
    t.write(pa.table({"id": [1, 2], "a": pa.array([1, 2], pa.int32()), "cat": ["x", "y"], "v": [1, 2],
                      "s": ["a", "b"]}, schema=SCHEMA))
    for kwargs in ({"order": ["a"]}, {"order": ["id"], "strategy": "zorder"}, {"sort_within": "v"}):
        with pytest.raises(InvalidArgumentError, match="sorted by its primary key.*append table"):
            t.optimize(**kwargs)
    with pytest.raises(InvalidArgumentError, match="sorted by its primary key"):
        t.set_options({"clustering.columns": "a"})
    assert t.optimize(order="id") is not None  # the key order: a full compaction
    assert t.read().num_rows == 2


def test_filters_on_bitmap_ranges_and_nulls_read_only_matching_files(tmp_path):
    # a Paimon file's bitmap index decides for the whole file: four files, the first three of
    # "common" and "zebra" (their [min, max] holds "rare", their bitmaps do not), the last the rare
    # values and the nulls
    rng = np.random.default_rng(3)
    n = 40_000
    at = np.arange(n)
    cats = np.where(at < 30_000, np.where(at % 3 == 0, "zebra", "common"),
                    np.where(at % 2, "rare", np.where(at % 4 == 0, "common", None)))
    t = Table.create(str(tmp_path / "t"), SCHEMA, options={"file-index.bitmap.columns": "cat", "write-only": "true"})
    data = pa.table({"id": at, "a": rng.integers(0, 9, n).astype(np.int32), "cat": cats,
                     "v": rng.integers(0, 9, n), "s": ["s"] * n}, schema=SCHEMA)
    for start in range(0, n, 10_000):
        t.write(data.slice(start, 10_000))
    assert t.plan().files_total == 4
    cat = data.column("cat").to_pylist()

    def read_ids(f) -> set:
        return set(t.read(filter=f).column("id").to_pylist())

    def want_ids(keep) -> set:
        return {i for i, c in enumerate(cat) if keep(c)}

    rare = t.plan(("cat", "=", "rare"))
    assert rare.steps["min/max"].files == 0 and rare.steps["file-index"].files == 3  # only the bitmaps tell
    assert [m.row_count for m in rare.files] == [10_000]
    assert read_ids(("cat", "=", "rare")) == want_ids(lambda c: c == "rare")
    assert len(t.plan(("cat", "is null")).files) == 1
    assert read_ids(("cat", "is null")) == want_ids(lambda c: c is None)
    assert len(t.plan(("cat", "in", ["rare", "x"])).files) == 1
    assert read_ids(("cat", ">", "rare")) == want_ids(lambda c: c is not None and c > "rare")
    assert len(t.plan(("cat", ">", "rare")).files) == 3  # the last file's values all sort at or below "rare"
    assert t.read(filter=("cat", ">", "zebra")).num_rows == 0 and t.plan(("cat", ">", "zebra")).files == []
    assert pc.sum(t.read(filter=("cat", "<=", "common")).column("v")).as_py() == \
        pc.sum(data.filter(pc.less_equal(data.column("cat"), "common")).column("v")).as_py()
