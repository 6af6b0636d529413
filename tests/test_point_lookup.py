"""Point lookups through the Parquet page index (`table/read/point.py`) against the normal read
path (forced with `point.ENABLED = False`) and a row-by-row model: unmerged runs, every merge
engine, deletes, deletion vectors, partitions, composite and string keys, nulls, projections,
files without a page index, an object store."""
from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import Table
from mergetree.table.files import PAIMON_PAGE_ROWS, PAIMON_ROW_GROUP_ROWS
from mergetree.table.indexes import parquet_footer as pf
from mergetree.table.read import point


def _normal(table: Table, **kwargs) -> pa.Table:
    point.ENABLED = False
    try:
        return table.read(**kwargs)
    finally:
        point.ENABLED = True


def _point_files(table: Table) -> int:
    """Files the last read searched through their page index (0: it took the normal path)."""
    assert table.last_read is not None
    return table.last_read.point_files


def _both(table: Table, **kwargs) -> tuple[pa.Table, pa.Table]:
    fast = table.read(**kwargs)
    _both.point_files = _point_files(table)  # type: ignore[attr-defined]
    return fast, _normal(table, **kwargs)


ENGINES = ["deduplicate", "partial-update", "aggregate", "first-row"]


@st.composite
def scenarios(draw):
    engine = draw(st.sampled_from(ENGINES))
    keys = draw(st.sampled_from(["int", "str", "composite"]))
    partitioned = draw(st.booleans())
    dv = engine != "first-row" and draw(st.booleans())
    commits = []
    for _ in range(draw(st.integers(1, 4))):
        rows = draw(st.lists(st.tuples(st.integers(0, 30), st.one_of(st.none(), st.integers(-5, 5))),
                             min_size=0, max_size=40))
        # Paimon's partial-update, aggregate and first-row tables refuse retractions (no 'ignore-delete')
        deletes = [] if engine != "deduplicate" else draw(st.lists(st.integers(0, 30), max_size=5))
        commits.append((rows, deletes))
    compact = draw(st.sampled_from([None, "auto", "full"]))
    probes = draw(st.lists(st.integers(-1, 31), min_size=1, max_size=6))
    return engine, keys, partitioned, dv, commits, compact, probes, draw(st.integers(1, 2))


def _key_columns(kind: str, k: int) -> dict:
    if kind == "int":
        return {"k": k}
    if kind == "str":
        return {"k": f"key-{k:03d}é"}
    return {"k": k % 4, "s": f"s{k // 4}"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(scenarios())
def test_lookups_equal_the_normal_read(tmp_path_factory, case):
    engine, kind, partitioned, dv, commits, compact, probes, buckets = case
    fields = [("k", pa.int64() if kind != "str" else pa.string())]
    key = ["k"]
    if kind == "composite":
        fields.append(("s", pa.string()))
        key.append("s")
    if partitioned:
        fields.append(("p", pa.string()))
        key.append("p")
    fields += [("v", pa.int64()), ("w", pa.string())]
    schema = pa.schema(fields)
    options = {"write-only": "true"} if compact != "auto" else {}
    if engine == "aggregate":
        options["fields.v.aggregate-function"] = "sum"
    if dv:
        options["deletion-vectors.enabled"] = "true"
    table = Table.create(str(tmp_path_factory.mktemp("t") / "t"), schema, primary_key=key,
                         partition_by=["p"] if partitioned else None, buckets=buckets, merge_engine=engine,
                         options=options)

    def part(k: int) -> dict:
        return {"p": "a" if k % 3 else "b"} if partitioned else {}
    for number, (rows, deletes) in enumerate(commits):
        if rows:
            table.write([{**_key_columns(kind, k), **part(k), "v": v, "w": None if v is None else f"c{number}"}
                         for k, v in rows])
        if deletes:
            table.delete([{**_key_columns(kind, k), **part(k)} for k in deletes])
    if compact == "full":
        table.compact(full=True)
    every = _normal(table)
    for k in probes:
        f = [(c, "=", v) for c, v in {**_key_columns(kind, k), **part(k)}.items()]
        fast, normal = _both(table, filter=f)
        assert fast.equals(normal), (k, fast.to_pylist(), normal.to_pylist())
        # the model: the full read's rows with that key
        model = [r for r in every.to_pylist() if all(r[c] == v for c, _, v in f)]
        assert fast.to_pylist() == model
        if model:  # a file holds the key: the page index found it
            assert _both.point_files > 0  # type: ignore[attr-defined]
        fast, normal = _both(table, filter=f, columns=["v"])
        assert fast.equals(normal)
    # an IN list over the first key column (other key columns pinned as before)
    k0 = probes[0]
    pinned = {**_key_columns(kind, k0), **part(k0)}
    values = sorted({_key_columns(kind, k)["k"] for k in probes})
    f = [("k", "in", values)] + [(c, "=", v) for c, v in pinned.items() if c != "k"]
    fast, normal = _both(table, filter=f)
    assert fast.equals(normal)


def _table(path, **kwargs) -> Table:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
    return Table.create(path, schema, primary_key="id", options={"write-only": "true"}, **kwargs)


def test_a_lookup_decodes_only_the_pages_of_its_key(tmp_path):
    t = _table(str(tmp_path / "t"))
    n = 50_000
    t.write({"id": list(range(0, 2 * n, 2)), "v": list(range(n)), "s": [f"s{i}" for i in range(n)]})
    t.write({"id": list(range(1, 2 * n, 200)), "v": [-1] * (n // 100), "s": ["new"] * (n // 100)})
    for k, expected in ((1000, [{"id": 1000, "v": 500, "s": "s500"}]), (1001, [{"id": 1001, "v": -1, "s": "new"}]),
                        (3, []), (2 * n + 1, []), (-7, [])):
        got = t.read(filter=("id", "=", k))
        assert got.to_pylist() == expected
        # keys outside every file's key range are pruned by the plan: no file is searched
        assert (_point_files(t) > 0) == (0 <= k < 2 * n)
    # the pages: Paimon's row groups (32,768 rows) with a page index of 8,192-row pages in every data file
    for meta in t.plan().files:
        with open(tmp_path / "t" / meta.file_name, "rb") as f:
            footer, _ = pf.read_footer(f, meta.file_name)
            layout = pf.file_layout(pf.ThriftCompactReader(footer))
            chunk = layout.row_groups[0][0]
            assert chunk.offset_index is not None and chunk.column_index is not None
            pages = pf.offset_index(pf.read_exactly(f, *chunk.offset_index, meta.file_name))
            assert layout.row_counts[0] == min(meta.row_count, PAIMON_ROW_GROUP_ROWS)
            assert [p.first_row for p in pages] == list(range(0, layout.row_counts[0], PAIMON_PAGE_ROWS))


def test_files_without_a_page_index_fall_back_to_the_normal_read(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write({"id": [1, 2, 3], "v": [1, 2, 3], "s": ["a", "b", "c"]})
    t.write({"id": [2], "v": [20], "s": ["B"]})
    for meta in t.plan().files:  # rewritten as a writer without a page index would have
        path = tmp_path / "t" / meta.file_name
        pq.write_table(pq.read_table(path), path, compression="zstd")
    got = t.read(filter=("id", "=", 2))
    assert got.to_pylist() == [{"id": 2, "v": 20, "s": "B"}]
    assert _point_files(t) == 0


def test_the_fast_path_serves_lookups_and_not_other_reads(tmp_path):
    t = _table(str(tmp_path / "t"))
    t.write({"id": [1, 2, 3], "v": [1, 2, 3], "s": ["a", "b", "c"]})
    t.read(filter=[("id", "=", 2)])
    assert _point_files(t) == 1
    for f in (("id", ">", 1), ("v", "=", 2), None):
        t.read(filter=f)
        assert _point_files(t) == 0
    assert t.read(filter=[("id", "=", 2), ("v", "=", 3)]).num_rows == 0  # the rest of the filter still holds
    assert _point_files(t) == 1
    assert t.read(filter=("id", "in", [3, 1, 9])).to_pylist() == [{"id": 1, "v": 1, "s": "a"},
                                                                  {"id": 3, "v": 3, "s": "c"}]
    assert _point_files(t) == 1


def test_lookups_on_an_object_store(s3_server):
    uri = f"s3://lake/point-{uuid.uuid4().hex[:12]}"
    t = _table(uri, storage_options=s3_server.options(), buckets=2)
    for i in range(3):
        t.write({"id": list(range(i, 3000, 3 + i)), "v": [i] * len(range(i, 3000, 3 + i)),
                 "s": [f"c{i}"] * len(range(i, 3000, 3 + i))})
    for k in (0, 5, 12, 2999, 4000):
        fast, normal = _both(t, filter=("id", "=", k))
        assert fast.equals(normal)
        assert t.last_read is not None and t.last_read.requests  # the store's requests are counted
    t.read(filter=("id", "=", 12))
    assert _point_files(t) > 0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_page_index_parsers_reject_garbage_with_one_error(data):
    for parse in (pf.offset_index, pf.column_index):
        try:
            parse(data)
        except pf.MalformedFooter:
            pass


def test_page_index_parsers_check_what_they_read(tmp_path):
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"k": list(range(10_000))}), path, write_page_index=True, max_rows_per_page=1000)
    with open(path, "rb") as f:
        footer, _ = pf.read_footer(f, str(path))
        chunk = pf.file_layout(pf.ThriftCompactReader(footer)).row_groups[0][0]
        assert chunk.offset_index is not None and chunk.column_index is not None
        raw_offsets = pf.read_exactly(f, *chunk.offset_index, str(path))
        raw_bounds = pf.read_exactly(f, *chunk.column_index, str(path))
    pages = pf.offset_index(raw_offsets)
    assert [p.first_row for p in pages] == list(range(0, 10_000, 1000))
    nulls, lows, highs = pf.column_index(raw_bounds)
    assert nulls == [False] * 10
    assert [int.from_bytes(b, "little", signed=True) for b in lows] == list(range(0, 10_000, 1000))
    assert [int.from_bytes(b, "little", signed=True) for b in highs] == list(range(999, 10_000, 1000))
    for cut in (1, len(raw_offsets) // 2, len(raw_offsets) - 1):  # truncated anywhere: one clear error
        with pytest.raises(pf.MalformedFooter):
            pf.offset_index(raw_offsets[:cut])
    # pages out of order
    w = pf.ThriftCompactWriter()
    w.list_of(1, 12, 2)
    for offset, first in ((100, 0), (50, 10)):
        w.begin()
        w.integer(1, offset)
        w.integer(2, 10, 5)
        w.integer(3, first)
        w.end()
    w.out.append(0)
    with pytest.raises(pf.MalformedFooter, match="out of order"):
        pf.offset_index(bytes(w.out))


def test_a_damaged_page_index_is_a_corrupt_table_error(tmp_path):
    from mergetree.errors import CorruptTableError

    t = _table(str(tmp_path / "t"))
    t.write({"id": list(range(100)), "v": list(range(100)), "s": ["x"] * 100})
    meta = t.plan().files[0]
    path = tmp_path / "t" / meta.file_name
    with open(path, "rb") as f:
        footer, _ = pf.read_footer(f, str(path))
        chunk = pf.file_layout(pf.ThriftCompactReader(footer)).row_groups[0][0]
    assert chunk.offset_index is not None
    data = bytearray(path.read_bytes())
    data[chunk.offset_index[0]:chunk.offset_index[0] + chunk.offset_index[1]] = b"\xff" * chunk.offset_index[1]
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptTableError, match="page index"):
        t.read(filter=("id", "=", 5))


def test_nested_columns_and_unordered_key_types_take_the_normal_path(tmp_path):
    nested = Table.create(str(tmp_path / "n"), pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))]),
                          primary_key="id", options={"write-only": "true"})
    nested.write({"id": [1, 2], "tags": [["a"], ["b", None]]})
    nested.write({"id": [2], "tags": [[]]})
    assert nested.read(filter=("id", "=", 2)).to_pylist() == [{"id": 2, "tags": []}]
    assert _point_files(nested) == 0
    floats = Table.create(str(tmp_path / "f"), pa.schema([("x", pa.float64()), ("v", pa.int64())]),
                          primary_key="x")
    floats.write({"x": [0.5, -0.0], "v": [1, 2]})
    fast, normal = _both(floats, filter=("x", "=", 0.0))
    assert fast.equals(normal) and _both.point_files == 0  # type: ignore[attr-defined]
