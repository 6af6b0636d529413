"""The data-organization levers on Paimon tables (issue 36, item 4), each where Paimon's readers
use it too: Bloom filters as Parquet's own (``parquet.bloom.filter.enabled#<column>``, which
Java's writers honour), bitmaps in Paimon's file index, the in-file sort order in the Parquet
footer's sorting columns, and pre-aggregates as extra files of their data file (kept by Java's
orphan cleaning, expired with their file, never read when stale).  Every skip is checked
against a model of the rows, and pypaimon reads what mergetree wrote."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, pypaimon_read, write_paimon

from mergetree import InvalidArgumentError, Table, UnsupportedTypeError
from mergetree.table.options import KEY_BLOOM_COLUMNS
from mergetree.table.paimon.create import create_table

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string()), ("v", pa.int64())])


def data(lo: int, hi: int, groups: int = 5) -> pa.Table:
    ids = np.arange(lo, hi)
    return pa.table({"id": ids, "k": [f"k{i % groups}" for i in ids], "v": ids * 3}, schema=SCHEMA)


def latest_schema(root: Path) -> dict:
    newest = max((root / "schema").iterdir(), key=lambda p: int(p.name.split("-")[1]))
    return json.loads(newest.read_text())


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("data-*.parquet") if ".agg-" not in p.name)


def live_entries(t: Table) -> list:
    return list(t.directory.live_files(t.directory.latest_snapshot()).values())


def by_id(table: pa.Table) -> list[dict]:
    return table.select(SCHEMA.names).sort_by("id").to_pylist()


# -- Bloom filters: Parquet's own, declared the way Java's writers read them ---------------

def test_bloom_options_give_parquet_filters_that_skip_files_and_never_change_an_answer(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, buckets=-1,
                 options={"parquet.bloom.filter.enabled#id": "true", "parquet.bloom.filter.fpp#id": "0.001"})
    t = Table.open(root)
    assert t.directory.options.bloom_columns == ("id",) and t.directory.options.bloom_fpp == 0.001
    model = []
    for i in range(6):  # interleaved ids: every file's min/max covers every query
        part = data(0, 12_000).take(pa.array(np.arange(i, 12_000, 6)))
        t.write(part)
        model.append(part)
    files = data_files(root)
    assert len(files) == 6
    for f in files:  # written by pyarrow into the file, as parquet-mr reads them
        column = pq.ParquetFile(f).metadata.row_group(0).column(0)
        assert column.path_in_schema == "id" and column.bloom_filter_offset and column.bloom_filter_length
    whole = pa.concat_tables(model)
    for wanted in (7, 6_001, 9_002):
        got = t.read(filter=[("id", "=", wanted)])
        assert by_id(got) == by_id(whole.filter(pc.equal(whole["id"], wanted)))
        steps = t.at().plan(filter=[("id", "=", wanted)]).steps
        assert steps["bloom"].files == 5
    got = t.read(filter=[("id", "in", [3, 4, 99_999])])
    assert by_id(got) == by_id(whole.filter(pc.is_in(whole["id"], pa.array([3, 4]))))
    # the filters are only ever a skip: a read that probes them gives the model's rows
    assert by_id(t.read(filter=[("id", "=", 5)])) == by_id(whole.filter(pc.equal(whole["id"], 5)))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(st.none(), st.text(alphabet="abcxyz", max_size=4)), min_size=1, max_size=60),
       probes=st.lists(st.text(alphabet="abcxyz", max_size=4), min_size=1, max_size=4),
       files=st.integers(1, 4))
def test_bloom_skipping_on_a_paimon_table_matches_a_model(tmp_path_factory, values, probes, files):
    root = tmp_path_factory.mktemp("bloom") / "t"
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    create_table(str(root), None, schema, buckets=-1, options={"parquet.bloom.filter.enabled#s": "true"})
    t = Table.open(root)
    written = []
    for i in range(files):
        part = pa.table({"id": pa.array(np.arange(len(values)) + i * 1000, pa.int64()),
                         "s": pa.array(values, pa.string())}, schema=schema).slice(i)
        if part.num_rows:
            t.write(part)
            written.append(part)
    if not written:
        return
    whole = pa.concat_tables(written)
    for probe in probes:
        got = t.read(filter=[("s", "=", probe)])
        assert sorted(got["id"].to_pylist()) == sorted(whole.filter(pc.equal(whole["s"], probe))["id"].to_pylist())
    got = t.read(filter=[("s", "in", probes)])
    assert sorted(got["id"].to_pylist()) == sorted(whole.filter(pc.is_in(whole["s"], pa.array(probes)))["id"]
                                                   .to_pylist())


def test_bloom_filter_columns_in_the_engines_names_become_parquets_options(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, buckets=-1, options={"parquet.bloom.filter.enabled#v": "true"})
    t = Table.open(root)
    store = t.directory.store
    # what the advisor writes: Parquet's own filters by column, v's dropped, Paimon's file index untouched
    assert store.native_options({KEY_BLOOM_COLUMNS: "id,k", "sort-within.columns": "v"}) == {
        "parquet.bloom.filter.enabled#v": None, "parquet.bloom.filter.enabled#id": "true",
        "parquet.bloom.filter.enabled#k": "true", "sort-within.columns": "v"}
    t.set_options(store.native_options({KEY_BLOOM_COLUMNS: "id,k"}))
    options = latest_schema(root)["options"]
    assert options["parquet.bloom.filter.enabled#id"] == "true" and "parquet.bloom.filter.enabled#v" not in options
    assert set(t.directory.options.bloom_columns) == {"id", "k"}
    for bad in ({"parquet.bloom.filter.enabled#id": "yes"}, {"parquet.bloom.filter.fpp#id": "2"},
                {"parquet.bloom.filter.fpp": "x"}):
        with pytest.raises(InvalidArgumentError, match="parquet.bloom.filter"):
            t.set_options(bad)
    # a misspelt column (Java would ignore it silently) and a type with no use for one are refused
    with pytest.raises(InvalidArgumentError, match="'idd'.*did you mean 'id'"):
        t.set_options({"parquet.bloom.filter.enabled#idd": "true"})
    with pytest.raises(UnsupportedTypeError, match="'flag'.*two values"):
        Table.create(str(tmp_path / "b"), SCHEMA.append(pa.field("flag", pa.bool_())),
                     options={"parquet.bloom.filter.enabled#flag": "true"})
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").rglob("*"))
    # Paimon's own name keeps Paimon's meaning: its file index, not Parquet's filters
    t.set_options({"file-index.bloom-filter.columns": "v"})
    assert latest_schema(root)["options"]["file-index.bloom-filter.columns"] == "v"
    assert set(t.directory.options.bloom_columns) == {"id", "k"}


@needs_pypaimon
def test_build_indexes_on_a_pypaimon_table_rewrites_files_without_filters_and_pypaimon_reads_them(tmp_path):
    wh, root = tmp_path / "wh", tmp_path / "wh" / "db.db" / "t"
    write_paimon(tmp_path / "w", wh, "db.t", [data(0, 3000), data(3000, 6000)], [], options={"bucket": "-1"})
    t = Table.open(root)
    before = by_id(pypaimon_read(wh, "db.t", tmp_path))
    t.set_options({"parquet.bloom.filter.enabled#id": "true", "file-index.bitmap.columns": "k"})
    entries = live_entries(t)
    assert all(not e.file.blooms() and not e.file.bitmap_columns() for e in entries)
    assert t.build_indexes() is not None
    entries = live_entries(t)
    assert all(set(e.file.blooms()) == {"id"} and e.file.bitmap_columns() == {"k"} for e in entries)
    assert t.build_indexes() is None  # nothing left to build
    assert by_id(pypaimon_read(wh, "db.t", tmp_path)) == before
    assert t.read(filter=[("k", "=", "k15")]).num_rows == 0  # no such value: the bitmap rules out every file
    assert t.at().plan(filter=[("k", "=", "k15")]).steps["file-index"].files == len(entries)
    assert by_id(t.read(filter=[("id", "=", 4321)])) == [r for r in before if r["id"] == 4321]
    plan = t.at().plan(filter=[("id", "=", 4321)])
    assert plan.steps["bloom"].files + plan.steps["min/max"].files == len(entries) - 1


# -- the in-file sort order, in the Parquet footer ------------------------------------------

def test_sort_within_is_recorded_in_the_parquet_sorting_columns(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, buckets=-1)
    t = Table.open(root)
    rng = np.random.default_rng(1)
    t.write(data(0, 5000).take(pa.array(rng.permutation(5000))))
    t.optimize(sort_within=["v"])
    assert latest_schema(root)["options"]["mergetree.sort-within.columns"] == "v"
    for e in live_entries(t):
        metadata = pq.ParquetFile(e.file.origin.path).metadata
        sorting = metadata.row_group(0).sorting_columns
        assert [(metadata.schema.column(c.column_index).path, c.descending) for c in sorting] == [("v", False)]
        assert e.file.sorted_by == ("v",)
        values = pq.read_table(e.file.origin.path)["v"].to_pylist()
        assert values == sorted(values)


# -- pre-aggregates: extra files of their data file -----------------------------------------

@needs_pypaimon
def test_preaggregates_are_extra_files_java_keeps_and_expires_with_their_file(tmp_path):
    wh, root = tmp_path / "wh", tmp_path / "wh" / "db.db" / "t"
    write_paimon(tmp_path / "w", wh, "db.t", [data(0, 4000, 3), data(4000, 8000, 3)], [], options={"bucket": "-1"})
    t = Table.open(root)
    whole = data(0, 8000, 3)
    model = sorted(whole.group_by("k").aggregate([("v", "sum"), ("id", "count")]).to_pylist(), key=lambda r: r["k"])
    t.add_aggregate("by_k", "k", {"v": "sum", "*": "count"})
    entries = live_entries(t)
    for e in entries:  # listed in the manifest entry, beside the file
        extras = e.file.origin.file.record["_FILE"]["_EXTRA_FILES"]
        assert len(extras) == 1 and extras[0].startswith(e.file.origin.file.file_name + ".agg-by_k-")
        assert (Path(e.file.origin.path).parent / extras[0]).exists()
    result = t.aggregate("k", {"v": "sum", "*": "count"})
    assert t.last_read.used_preaggregates == len(entries)
    assert sorted(result.to_pylist(), key=lambda r: r["k"]) == \
        [{"k": r["k"], "v_sum": r["v_sum"], "rows_count": r["id_count"]} for r in model]
    info = t.at().info()
    assert info.index_coverage["pre-aggregate by_k"] == (len(entries), len(entries))
    # pypaimon reads the table as before: the extra files are not data
    assert by_id(pypaimon_read(wh, "db.t", tmp_path)) == by_id(whole)
    # orphan cleaning keeps them (listed); a model redefined under the same name never reads them
    assert t.remove_orphan_files(older_than=0) == []
    t.drop_aggregate("by_k")
    t.add_aggregate("by_k", "k", {"v": "max"}, build=False)
    result = t.aggregate("k", {"v": "max"})
    assert t.last_read.used_preaggregates == 0
    assert sorted(result.to_pylist(), key=lambda r: r["k"]) == \
        sorted(whole.group_by("k").aggregate([("v", "max")]).rename_columns(["k", "v_max"]).to_pylist(),
               key=lambda r: r["k"])
    old = {p.name for p in root.rglob("*.agg-by_k-*")}
    t.build_indexes()  # the new definition's files replace the stale ones in the entries
    t.aggregate("k", {"v": "max"})
    assert t.last_read.used_preaggregates == len(entries)
    t.expire_snapshots(retain_last=1, older_than=0)
    now = {p.name for p in root.rglob("*.agg-by_k-*")}
    assert not (old & now) and len(now) == len(entries)
    # a rewrite of the files (the optimizer) drops their pre-aggregates with them, and builds new ones
    t.optimize(order=["k"])
    t.expire_snapshots(retain_last=1, older_than=0)
    live = live_entries(t)
    assert {p.name for p in root.rglob("*.agg-by_k-*")} == \
        {x for e in live for x in e.file.origin.file.record["_FILE"]["_EXTRA_FILES"]}
    assert by_id(pypaimon_read(wh, "db.t", tmp_path)) == by_id(whole)


def test_preaggregates_on_a_paimon_primary_key_table_with_deletion_vectors(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key=["id"], buckets=2,
                 options={"deletion-vectors.enabled": "true"})
    t = Table.open(root)
    t.add_aggregate("by_k", "k", {"v": "sum", "*": "count"}, build=False)
    t.write(data(0, 3000, 4))
    t.write(data(1000, 2000, 4).set_column(2, "v", pa.array(np.zeros(1000, dtype=np.int64))))
    t.compact(full=True)
    model = data(0, 3000, 4).to_pylist()
    for r in model:
        if 1000 <= r["id"] < 2000:
            r["v"] = 0
    expected = sorted(pa.Table.from_pylist(model, SCHEMA).group_by("k").aggregate([("v", "sum"), ("id", "count")])
                      .rename_columns(["k", "v_sum", "rows_count"]).to_pylist(), key=lambda r: r["k"])
    result = t.aggregate("k", {"v": "sum", "*": "count"})
    assert sorted(result.to_pylist(), key=lambda r: r["k"]) == expected
    assert t.last_read.used_preaggregates >= 1
    # a deletion vector makes a file's pre-aggregate stale: it is not used for that file
    t.write(data(0, 10, 4).set_column(2, "v", pa.array(np.full(10, 7, dtype=np.int64))))
    t.compact()
    for r in model:
        if r["id"] < 10:
            r["v"] = 7
    expected = sorted(pa.Table.from_pylist(model, SCHEMA).group_by("k").aggregate([("v", "sum"), ("id", "count")])
                      .rename_columns(["k", "v_sum", "rows_count"]).to_pylist(), key=lambda r: r["k"])
    assert sorted(t.aggregate("k", {"v": "sum", "*": "count"}).to_pylist(), key=lambda r: r["k"]) == expected


def test_build_indexes_on_a_deletion_vector_table_keeps_vectors_listed_files_and_the_order(tmp_path):
    """Pre-aggregates added to live files of a deletion-vector table: each file listed again
    with its new extra file, its deletion vector kept (no deleted row comes back); a second
    model writes only its own files (a listed one is never written again); then nothing is
    left to build."""
    root = tmp_path / "t"
    create_table(str(root), None, SCHEMA, primary_key=["id"], buckets=2, options={"deletion-vectors.enabled": "true"})
    t = Table.open(root)
    t.write(data(0, 3000, 4))
    t.compact(full=True)
    t.write(data(0, 300, 4).set_column(2, "v", pa.array(np.full(300, -1, dtype=np.int64))))
    t.compact()  # level 0 resolved: the older rows of ids 0..299 marked deleted in their files
    expected = by_id(t.read())
    assert any(e.file.deleted_rows for e in live_entries(t))
    t.add_aggregate("a", "k", {"v": "sum"})  # build=True: NOT NULL key columns, deletion vectors
    entries = live_entries(t)
    assert all(len(e.file.preaggregates()) == 1 for e in entries)
    assert by_id(t.read()) == expected
    listed = {p: p.stat().st_mtime_ns for p in root.rglob("*.agg-a-*")}
    t.add_aggregate("b", "k", {"*": "count"})
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.agg-a-*")} == listed  # not written again
    assert all(set(e.file.preaggregates()) == {"a", "b"} for e in live_entries(t))
    assert by_id(t.read()) == expected and t.build_indexes() is None


def test_build_indexes_keeps_an_append_files_place_and_ends_on_orc(tmp_path):
    root = tmp_path / "t"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("v", pa.int64())])
    create_table(str(root), None, schema, buckets=2, options={"bucket-key": "id"})
    t = Table.open(root)
    for i in range(3):
        t.write(data(i * 100, (i + 1) * 100).cast(schema))
    before = {(e.bucket, e.file.min_seq, e.file.max_seq) for e in live_entries(t)}
    t.set_options({"parquet.bloom.filter.enabled#id": "true"})
    assert t.build_indexes() is not None and t.build_indexes() is None
    assert {(e.bucket, e.file.min_seq, e.file.max_seq) for e in live_entries(t)} == before
    assert by_id(t.read()) == by_id(data(0, 300))
    orc = tmp_path / "orc"
    create_table(str(orc), None, SCHEMA, buckets=-1, options={"file.format": "orc"})
    t = Table.open(orc)
    t.write(data(0, 100))
    # ORC files carry no Parquet filters: the engine's Bloom advice is Paimon's file index there
    assert t.directory.store.native_options({KEY_BLOOM_COLUMNS: "id"}) == {KEY_BLOOM_COLUMNS: "id"}
    t.set_options({"parquet.bloom.filter.enabled#id": "true"})
    assert t.directory.options.bloom_columns == () and t.build_indexes() is None


def test_build_indexes_back_fills_paimons_bloom_file_index(tmp_path):
    """Bloom filters declared in Paimon's file index after files were written: `build_indexes`
    rewrites those files with it (as Java's `rewrite_file_index`), and a probe skips on it."""
    root = tmp_path / "t"
    t = Table.create(str(root), SCHEMA)
    t.write(data(0, 2000))
    t.set_options({"file-index.bloom-filter.columns": "v"})
    t = Table.open(root)
    assert t.build_indexes() is not None
    t = Table.open(root)
    live = live_entries(t)
    assert live and all("v" in e.file.origin.file_index_columns("bloom-filter") for e in live)
    assert t.build_indexes() is None  # nothing left to build
    assert by_id(t.read(filter=("v", "=", 3 * 1001))) == by_id(data(1001, 1002))
    assert t.plan(("v", "=", 3 * 1001 + 1)).files == []  # inside min/max, absent: the file index says so
