"""Paimon's file index (`mergetree.codec.file_index`, written by `paimon.compact.write_rolled`,
read by `paimon.file_indexes`): byte for byte against the indexes Java wrote (containers, Bloom
filters, bitmaps V1 and V2), property tests of every encoder against a model of the rows, and
tables written and read through it — an index may only ever skip files, never change a read."""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
import struct
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paimon_fixtures import needs_pypaimon, pypaimon_read, write_paimon

import mergetree.paimon as mp
from mergetree import CorruptTableError, Table, UnsupportedPaimonFeatureError, _bloom
from mergetree.codec import file_index as fi
from mergetree.codec.types import parse_type
from mergetree.table import filters as flt
from mergetree.table.paimon import file_indexes
from mergetree.table.paimon.metadata import PaimonTable
from mergetree.table.paimon.options import file_index_spec

try:  # the installed-wheel check runs without pandas (nanosecond values come to Python through it)
    PANDAS = importlib.util.find_spec("pandas") is not None
except ImportError:
    PANDAS = False

JAVA = Path(__file__).resolve().parent / "data" / "java_paimon_file_index"
JAVA_PK = Path(__file__).resolve().parent / "data" / "java_paimon"
APPEND_TYPES = {"f0": "STRING", "f1": "INT", "f2": "INT", "f3": "DOUBLE", "f4": "TIMESTAMP(9)"}
JAVA_INDEXED = ["append_with_bitmap", "append_with_bitmap_v1", "append_with_bitmap_no_embedding",
                "append_with_bloomfilter", "append_with_bsi_bitmap_bloomfilter"]


def _java_files(name: str) -> list[tuple[dict, bytes, pa.Table]]:
    """(manifest file record, container bytes, data) of every data file of a Java table."""
    root = JAVA / f"{name}.db" / name
    out = []
    for manifest in sorted((root / "manifest").glob("manifest-*")):
        if manifest.name.startswith("manifest-list"):
            continue
        with open(manifest, "rb") as f:
            for record in fastavro.reader(f):
                meta = record["_FILE"]
                blob = meta["_EMBEDDED_FILE_INDEX"]
                if blob is None:
                    blob = (root / "bucket-0" / meta["_EXTRA_FILES"][0]).read_bytes()
                out.append((meta, blob, pq.read_table(root / "bucket-0" / meta["_FILE_NAME"])))
    assert out
    return out


def _java_indexes(name: str, index_type: str):
    """(column, index body, the data file's column, its type) of every `index_type` index of a
    Java table's data files."""
    for _meta, blob, data in _java_files(name):
        for column, indexes in fi.decode_container(blob).items():
            body = indexes.get(index_type)
            if body is not None:
                yield column, body, data.column(column).combine_chunks(), parse_type(APPEND_TYPES[column])


def _model(values: pa.Array, t) -> tuple[dict, list[int]]:
    """The model of a bitmap index: key (as Java holds the value: timestamps in micros, ...) ->
    the rows holding it, and the null rows."""
    nulls = [i for i, v in enumerate(values.is_null().to_pylist()) if v]
    live = [i for i in range(len(values)) if i not in set(nulls)]
    model: dict = {}
    for row, key in zip(live, fi.bitmap_keys(values, t)):
        model.setdefault(key, []).append(row)
    return model, nulls


# -- against what Java wrote -------------------------------------------------------------------

@pytest.mark.parametrize("name", JAVA_INDEXED)
def test_javas_containers_decode_and_encode_to_the_same_bytes(name):
    for meta, blob, _data in _java_files(name):
        decoded = fi.decode_container(blob)
        assert decoded, meta["_FILE_NAME"]
        # column order and index-type order as Java's HashMaps iterate them, offsets, lengths
        assert fi.encode_container(decoded) == bytes(blob)
        if meta["_EMBEDDED_FILE_INDEX"] is None:
            assert len(blob) > 500 or "no_embedding" in name  # above the threshold: an `.index` file
            assert meta["_EXTRA_FILES"] == [meta["_FILE_NAME"] + ".index"]


@pytest.mark.parametrize("name", ["append_with_bloomfilter", "append_with_bsi_bitmap_bloomfilter"])
def test_bloom_filters_are_byte_identical_to_javas_for_every_type(name):
    seen = set()
    for column, body, values, t in _java_indexes(name, fi.BLOOM_FILTER):
        # strings (xxHash64), ints and doubles (Thomas Wang), timestamp(9) with negative epochs
        assert fi.encode_bloom(values, t) == body, column
        bloom = fi.BloomFilter.decode(body)
        assert bloom.hash_count == 3 and bloom.bits == 4792536  # 1,000,000 items at fpp 0.1
        assert bloom.might_contain(fi.value_hashes(values, t)).all()
        seen.add(column)
    assert seen == {"f0", "f1", "f2", "f3", "f4"}


@pytest.mark.parametrize("name", ["append_with_bitmap", "append_with_bitmap_v1", "append_with_bitmap_no_embedding",
                                  "append_with_bsi_bitmap_bloomfilter"])
def test_javas_bitmaps_decode_to_the_rows_of_each_value(name):
    found = 0
    for _column, body, values, t in _java_indexes(name, fi.BITMAP):
        index = fi.BitmapIndex.decode(body, t)
        model, nulls = _model(values, t)
        assert index.row_count == len(values)
        assert list(index.rows_of(None)) == nulls and index.has_nulls == bool(nulls)
        assert {k: list(index.rows_of(k)) for k in index.keys()} == model
        mine = fi.BitmapIndex.decode(fi.encode_bitmap(values, t, version=body[0]), t)
        assert {k: list(mine.rows_of(k)) for k in mine.keys()} == model
        found += 1
    assert found >= 3


def test_bitmaps_are_byte_identical_to_javas_where_its_hashmap_order_is_known():
    """Java writes each value's bitmap in its HashMap's order; for these columns that order is
    the one `java_hashmap_order` computes (Integer and BinaryString hash codes)."""
    same = 0
    for name, columns in (("append_with_bitmap", ("f0", "f1", "f2")), ("append_with_bitmap_no_embedding", ("f0",
                          "f1", "f2")), ("append_with_bsi_bitmap_bloomfilter", ("f0", "f1", "f4"))):
        for _meta, blob, data in _java_files(name):
            decoded = fi.decode_container(blob)
            for column in columns:
                t = parse_type(APPEND_TYPES[column])
                assert fi.encode_bitmap(data.column(column), t) == decoded[column][fi.BITMAP], (name, column)
                same += 1
    assert same == 12


def test_the_index_files_java_wrote_beside_pk_data_files_are_read():
    root = JAVA_PK / "orc" / "pk_with_bitmap_dv.db" / "pk_with_bitmap_dv" / "bucket-0"
    files = sorted(root.glob("*.orc.index"))
    assert len(files) == 2
    for path in files:
        decoded = fi.decode_container(path.read_bytes())
        assert set(decoded) == {"f0", "f1", "f2"} and all(set(v) == {fi.BITMAP} for v in decoded.values())
        assert fi.encode_container(decoded) == path.read_bytes()


def test_modified_utf8_names_and_hashmap_order():
    names = {"a\x00b": {"bitmap": b"x"}, "é": {"bloom-filter": b"yy", "bitmap": None}, "𝄞": {"bitmap": b""}}
    blob = fi.encode_container(names)
    assert b"\xc0\x80" in blob and b"\xed\xa0\xb4\xed\xb4\x9e" in blob  # NUL and a surrogate pair as Java writes them
    assert fi.decode_container(blob) == names
    # String.hashCode buckets: "f0".."f4" are 10..14 of 16, "Aa" and "BB" collide (insertion order)
    assert fi.java_hashmap_order(["f3", "f0", "f4"]) == ["f0", "f3", "f4"]
    assert fi.java_hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]


@pytest.mark.parametrize("cut", [0, 7, 15, 20, 40])
def test_malformed_containers_are_errors_not_crashes(cut):
    _meta, blob, _data = _java_files("append_with_bitmap")[0]
    with pytest.raises(fi.MalformedIndex):
        fi.decode_container(bytes(blob)[:cut])
    wrong = bytearray(blob)
    wrong[0] ^= 0xFF
    with pytest.raises(fi.MalformedIndex, match="magic"):
        fi.decode_container(bytes(wrong))
    body = fi.decode_container(blob)["f0"][fi.BITMAP]
    with pytest.raises(fi.MalformedIndex):
        index = fi.BitmapIndex.decode(body[:max(cut, 11)], parse_type("STRING"))
        for k in index.keys():
            index.rows_of(k)


# -- against a model of the rows ------------------------------------------------------------------

_TYPES = {
    "TINYINT": (pa.int8(), st.integers(-128, 127)),
    "SMALLINT": (pa.int16(), st.integers(-2**15, 2**15 - 1)),
    "INT": (pa.int32(), st.integers(-2**31, 2**31 - 1)),
    "BIGINT": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    "BOOLEAN": (pa.bool_(), st.booleans()),
    "FLOAT": (pa.float32(), st.floats(width=32, allow_nan=True)),
    "DOUBLE": (pa.float64(), st.floats(allow_nan=True)),
    "STRING": (pa.string(), st.text(max_size=12)),
    "DATE": (pa.date32(), st.integers(-100000, 100000)),
    "TIMESTAMP(3)": (pa.timestamp("ms"), st.integers(-2**45, 2**45)),
    "TIMESTAMP(6)": (pa.timestamp("us"), st.integers(-2**55, 2**55)),
    "TIMESTAMP(9)": (pa.timestamp("ns"), st.integers(-2**62, 2**62)),
}


@st.composite
def columns(draw, roots=tuple(_TYPES)):
    root = draw(st.sampled_from(roots))
    arrow, values = _TYPES[root]
    few = draw(st.lists(values, min_size=1, max_size=6, unique_by=lambda v: struct.pack(">d", v)
                        if isinstance(v, float) else v))
    rows = draw(st.lists(st.one_of(st.none(), st.sampled_from(few)), max_size=60))
    array = pa.array(rows, type=pa.int32() if root == "DATE" else pa.int64() if root.startswith("TIMESTAMP")
                     else arrow).cast(arrow) if root == "DATE" or root.startswith("TIMESTAMP") \
        else pa.array(rows, type=arrow)
    shape = draw(st.sampled_from(["plain", "sliced", "chunked", "dictionary", "view"]))
    if shape == "sliced" and len(array) > 2:
        array = pa.concat_arrays([pa.array([None], arrow), array, pa.array([None], arrow)]).slice(1, len(array))
    elif shape == "chunked":
        half = len(array) // 2
        array = pa.chunked_array([array.slice(0, half), array.slice(half)], type=arrow)
    elif shape == "dictionary" and root in ("STRING", "INT", "BIGINT"):
        array = array.dictionary_encode()
    elif shape == "view" and root == "STRING":
        array = array.cast(pa.string_view())
    return parse_type(root), array


def _plain(values) -> pa.Array:
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return values.dictionary_decode() if pa.types.is_dictionary(values.type) else values


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns(), st.sampled_from([1, 2]), st.sampled_from([64, 100, 16384]))
def test_bitmaps_hold_exactly_the_rows_of_each_value(column, version, block):
    t, values = column
    body = fi.encode_bitmap(values, t, block_size=block, version=version)
    index = fi.BitmapIndex.decode(body, t)
    plain = _plain(values)
    assert index.row_count == len(plain)
    model, nulls = _model(plain, t)
    assert list(index.rows_of(None)) == nulls
    assert {k: list(index.rows_of(k)) for k in index.keys()} == model
    assert fi.encode_bitmap(values, t, block_size=block, version=version) == body  # deterministic


def test_a_value_longer_than_a_bitmap_block_leaves_the_file_without_that_index(tmp_path):
    with pytest.raises(fi.ValueTooLarge, match="index-block-size"):
        fi.encode_bitmap(pa.array(["x" * 100]), parse_type("STRING"), block_size=64)
    path = _copy_java(tmp_path, "append_with_bitmap")
    # version 2's blocks (version 1, mergetree's default, has none and takes any value)
    Table.open(path).set_options({"file-index.bitmap.f0.version": "2"})
    mp.write(path, None, pa.table({"f0": ["y" * 20000, "z"], "f1": pa.array([5, 6], pa.int32()),
                                   "f2": pa.array([7, 8], pa.int32()), "f3": [1.0, 2.0]}))
    _t, files = _files(path)
    mine = next(f for f in files if f.row_count == 2)
    assert set(fi.decode_container(mine.record["_FILE"]["_EMBEDDED_FILE_INDEX"])) == {"f1", "f2"}
    assert mp.read(path, None, filter=("f0", "=", "z")).to_pylist() == [
        {"f0": "z", "f1": 6, "f2": 8, "f3": 2.0}]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns(roots=tuple(r for r in _TYPES if r != "BOOLEAN")), st.sampled_from([(50, 0.1), (1000, 0.01)]))
def test_bloom_filters_never_miss_a_value_they_hold(column, sizing):
    t, values = column
    bloom = fi.BloomFilter.decode(fi.encode_bloom(values, t, *sizing))
    assert bloom.might_contain(fi.value_hashes(_plain(values), t)).all()
    if t.precision <= 6 or PANDAS:  # nanoseconds come back to Python through pandas only
        present = [v for v in _plain(values).to_pylist() if v is not None]
        assert bloom.might_contain(fi.hashes_of(present, t)).all()


def _java_long_hash(key: int) -> int:
    """``FastHash.getLongHash`` written out on Python ints, wrapped to a Java long at every step."""
    def wrap(v: int) -> int:
        return ((v + 2**63) % 2**64) - 2**63
    key = wrap(~key + (key << 21))
    key = wrap(key ^ (key >> 24))
    key = wrap(key * 265)
    key = wrap(key ^ (key >> 14))
    key = wrap(key * 21)
    key = wrap(key ^ (key >> 28))
    return wrap(key + (key << 31))


def test_the_vectorized_long_hash_is_javas():
    keys = [0, 1, -1, -5, 7, 2**31, -(2**31) - 1, 2**62 + 12345, -(2**63), 2**63 - 1]
    assert fi._thomas_wang(np.array(keys, dtype=np.int64)).tolist() == [_java_long_hash(k) for k in keys]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=80)), max_size=40), st.booleans(), st.integers(0, 3))
def test_the_cores_xxh64_is_the_reference_xxh64(values, large, cut):
    array = pa.array(values, type=pa.large_binary() if large else pa.binary()).slice(min(cut, len(values)))
    live = array.drop_null()
    assert _bloom.xxh64_binary(live).tolist() == [xxhash.xxh64_intdigest(v) for v in live.to_pylist()]
    if array.null_count:
        with pytest.raises(ValueError, match="without nulls"):
            _bloom.xxh64_binary(array)


FILTER_OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns(roots=("INT", "BIGINT", "STRING", "DOUBLE", "FLOAT", "DATE", "TIMESTAMP(6)", "BOOLEAN") +
               (("TIMESTAMP(9)",) if PANDAS else ())),
       st.sampled_from(FILTER_OPS), st.data())
def test_an_index_never_skips_a_file_holding_a_matching_row(column, op, data):
    t, values = column
    plain = _plain(values)
    if pa.types.is_string_view(plain.type):
        plain = plain.cast(pa.string())
    present = [v for v in plain.to_pylist() if v is not None]
    _arrow, strategy = _TYPES[t.text if t.root.startswith("TIMESTAMP") else t.root]
    probe = data.draw(st.one_of(st.sampled_from(present), strategy) if present else strategy)
    if t.root in ("DATE", "TIMESTAMP") and isinstance(probe, int):  # drawn as days or ticks
        probe = pa.array([probe], type=pa.int32() if t.root == "DATE" else pa.int64()).cast(plain.type)[0].as_py()
    if op in ("in", "not in"):
        value = [probe]
    elif op in ("is null", "is not null"):
        value = None
    else:
        value = probe
    schema = pa.schema([("c", plain.type)])
    f = flt.normalize(("c", op, value), schema)
    table = pa.table({"c": plain})
    matches = table.filter(flt.to_expression(f, schema)).num_rows
    indexes = {"c": {fi.BITMAP: fi.encode_bitmap(values, t)}}
    if fi.bloom_supported(t):
        indexes["c"][fi.BLOOM_FILTER] = fi.encode_bloom(values, t, 100, 0.05)
    index = fi.decode_container(fi.encode_container(indexes))
    for kinds in ((fi.BITMAP,), (fi.BLOOM_FILTER,)):
        loaders = {"c": {k: (lambda b=index["c"][k], k=k: fi.BloomFilter.decode(b) if k == fi.BLOOM_FILTER
                                 else fi.BitmapIndex.decode(b, t)) for k in kinds if k in index["c"]}}
        verdict = file_indexes._evaluate(f, file_indexes.FileIndex(loaders, "test"), {"c": ("c", t)})
        if matches:
            assert verdict, (op, value, plain.to_pylist(), kinds)
    # the bitmap knows every value: a file it calls possible holds a match, except where
    # floats' NaN and -0.0 make it answer "cannot tell"
    bitmap_only = {"c": {fi.BITMAP: lambda: fi.BitmapIndex.decode(index["c"][fi.BITMAP], t)}}
    verdict = file_indexes._evaluate(f, file_indexes.FileIndex(bitmap_only, "test"), {"c": ("c", t)})
    if not matches and t.root not in ("FLOAT", "DOUBLE") and op not in ("!=", "not in") and t.precision <= 6:
        assert not verdict, (op, value, plain.to_pylist())


# -- tables --------------------------------------------------------------------------------------

def _copy_java(tmp_path: Path, name: str) -> str:
    shutil.copytree(JAVA / f"{name}.db", tmp_path / f"{name}.db")
    return str(tmp_path / f"{name}.db" / name)


def _files(path: str):
    t = PaimonTable.open(path, None)
    return t, t.live_files(t.resolve(None))


def test_a_file_the_index_rules_out_is_never_opened(tmp_path):
    """Java's bitmap table: "Bob" sits between the files' min and max of f0, so statistics
    cannot skip, the index can; with the other file's data gone, reads that need only the
    indexed file still succeed, and a read that needs the missing one fails."""
    path = _copy_java(tmp_path, "append_with_bitmap")
    mp.write(path, None, pa.table({"f0": ["Aaron", "Zoe"], "f1": pa.array([1, 2], pa.int32()),
                                   "f2": pa.array([3, 4], pa.int32()), "f3": [1.5, 2.5]}))
    _t, files = _files(path)
    ours = [f for f in files if f.record["_FILE"]["_FILE_SOURCE"] == 0 and f.row_count == 2]
    assert len(ours) == 1 and ours[0].record["_FILE"]["_EMBEDDED_FILE_INDEX"] is not None
    before = mp.read(path, None).to_pylist()
    for f in files:
        if f is not ours[0]:
            Path(f.path).unlink()
    assert mp.read(path, None, filter=("f0", "=", "Zoe")).to_pylist() == [r for r in before if r["f0"] == "Zoe"]
    assert mp.read(path, None, filter=("f0", "in", ["Aaron", "Carl"])).num_rows == 1
    assert mp.read(path, None, filter=[("f1", "=", 1), ("f2", "=", 3)]).num_rows == 1
    with pytest.raises(CorruptTableError):
        mp.read(path, None, filter=("f0", "=", "Bob"))


@pytest.mark.parametrize("threshold, embedded", [("500 B", True), ("1B", False)])
def test_writes_build_javas_index_embedded_or_beside_the_file(tmp_path, threshold, embedded):
    path = _copy_java(tmp_path, "append_with_bitmap")
    schema_file = Path(path) / "schema" / "schema-0"
    schema = json.loads(schema_file.read_text())
    schema["options"]["file-index.in-manifest-threshold"] = threshold
    schema["options"]["file-index.bloom-filter.columns"] = "f3"
    schema["options"]["file-index.bloom-filter.f3.items"] = "100"
    schema_file.write_text(json.dumps(schema))
    data = pa.table({"f0": ["x", "y", None, "x"], "f1": pa.array([1, 1, 2, None], pa.int32()),
                     "f2": pa.array([None, 7, 7, 7], pa.int32()), "f3": [0.5, float("nan"), -0.0, 0.5]})
    mp.write(path, None, data)
    _t, files = _files(path)
    mine = [f for f in files if f.row_count == 4]
    assert len(mine) == 1
    meta = mine[0].record["_FILE"]
    if embedded:
        assert meta["_EXTRA_FILES"] == [] and len(meta["_EMBEDDED_FILE_INDEX"]) <= 500
        blob = meta["_EMBEDDED_FILE_INDEX"]
    else:
        assert meta["_EMBEDDED_FILE_INDEX"] is None and meta["_EXTRA_FILES"] == [meta["_FILE_NAME"] + ".index"]
        blob = (Path(mine[0].path).parent / meta["_EXTRA_FILES"][0]).read_bytes()
    decoded = fi.decode_container(blob)
    assert set(decoded) == {"f0", "f1", "f2", "f3"} and set(decoded["f3"]) == {fi.BLOOM_FILTER}
    index = fi.BitmapIndex.decode(decoded["f0"][fi.BITMAP], parse_type("STRING"))
    assert {k: list(index.rows_of(k)) for k in index.keys()} == {b"x": [0, 3], b"y": [1]}
    assert list(index.rows_of(None)) == [2]
    bloom = fi.BloomFilter.decode(decoded["f3"][fi.BLOOM_FILTER])
    assert bloom.might_contain(fi.hashes_of([0.5, float("nan"), -0.0], parse_type("DOUBLE"))).all()
    whole = mp.read(path, None)
    for f in (("f3", "=", 0.0), ("f0", "=", "x"), ("f2", "is null"), ("f1", "!=", 1), ("f0", "in", ["y", "Bob"])):
        expected = whole.filter(flt.to_expression(flt.normalize(f, whole.schema), whole.schema))
        got = mp.read(path, None, filter=f)
        assert got.num_rows and sorted(map(repr, got.to_pylist())) == sorted(map(repr, expected.to_pylist())), f


@needs_pypaimon
def test_primary_key_tables_index_every_data_file_and_compaction_output(tmp_path):
    wh, work, name = tmp_path / "wh", tmp_path / "work", "db.t"
    opts = {"bucket": "2", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "name",
            "file-index.bloom-filter.columns": "cnt", "file-index.bloom-filter.cnt.items": "50"}
    first = pa.table({"id": pa.array(range(20), pa.int64()), "p": ["x"] * 20,
                      "name": [f"n{i % 4}" for i in range(20)], "cnt": pa.array(range(20), pa.int64())})
    write_paimon(work, wh, name, [first], ["id"], [], opts)
    mp.write(str(wh), name, {"id": [3, 40], "p": ["x", "x"], "name": ["three", "forty"], "cnt": [300, 400]})
    mp.compact(str(wh), name, full=True)
    t = PaimonTable.open(str(wh), name)
    written_by_us = [f for f in t.live_files(t.resolve(None))]
    assert written_by_us and all(f.level > 0 for f in written_by_us)
    for f in written_by_us:
        blob = f.record["_FILE"]["_EMBEDDED_FILE_INDEX"]
        if blob is None:
            blob = (Path(f.path).parent / f.record["_FILE"]["_EXTRA_FILES"][0]).read_bytes()
        decoded = fi.decode_container(blob)
        assert set(decoded) == {"name", "cnt"}
    expected = {r["id"]: r for r in first.to_pylist()}
    expected[3] = {"id": 3, "p": "x", "name": "three", "cnt": 300}
    expected[40] = {"id": 40, "p": "x", "name": "forty", "cnt": 400}
    for f in (("name", "=", "three"), ("name", "=", "n1"), ("cnt", "in", [300, 7, 999]), ("name", "=", "zzz")):
        got = sorted(mp.read(str(wh), name, filter=f).to_pylist(), key=lambda r: r["id"])
        want = sorted((r for r in expected.values() if _holds(r, f)), key=lambda r: r["id"])
        assert got == want, f
    assert sorted(r["id"] for r in pypaimon_read(wh, name, work).to_pylist()) == sorted(expected)


def _holds(row: dict, f: tuple) -> bool:
    column, op, value = f
    return row[column] == value if op == "=" else row[column] in value


def test_columns_paimon_cannot_index_are_refused_by_name_before_anything_is_written(tmp_path):
    path = _copy_java(tmp_path, "append_with_bitmap")
    schema_file = Path(path) / "schema" / "schema-0"
    schema = json.loads(schema_file.read_text())
    schema["options"]["file-index.bloom-filter.columns"] = "f0,nope"
    schema_file.write_text(json.dumps(schema))
    snapshots = sorted((Path(path) / "snapshot").iterdir())
    with pytest.raises(UnsupportedPaimonFeatureError, match="'nope'"):
        mp.write(path, None, pa.table({"f0": ["a"], "f1": pa.array([1], pa.int32()),
                                       "f2": pa.array([1], pa.int32()), "f3": [1.0]}))
    assert sorted((Path(path) / "snapshot").iterdir()) == snapshots
    assert sorted(p.name for p in (Path(path) / "bucket-0").iterdir()) == \
        sorted(p.name for p in (JAVA / "append_with_bitmap.db" / "append_with_bitmap" / "bucket-0").iterdir())
    for key, root in (("bloom-filter", "BOOLEAN"), ("bloom-filter", "DECIMAL(10, 2)"), ("bitmap", "BYTES"),
                      ("bitmap", "DECIMAL(38, 2)")):
        with pytest.raises(UnsupportedPaimonFeatureError, match=f"column 'c' of type {re.escape(root)}"):
            file_index_spec({f"file-index.{key}.columns": "c"}, {"c": parse_type(root)})
    spec = file_index_spec({"file-index.range-bitmap.columns": "c", "file-index.bitmap.columns": "c",
                            "file-index.bitmap.c.index-block-size": "1kb", "file-index.in-manifest-threshold": "1 kb"},
                           {"c": parse_type("INT")})
    assert spec.not_built == ("range-bitmap on c",) and spec.in_manifest_threshold == 1024
    assert [(c.column, c.index_type, dict(c.options)) for c in spec.columns] == [("c", "bitmap",
                                                                                  {"index-block-size": "1kb"})]


def test_a_damaged_index_is_a_clear_error_and_index_reads_can_be_turned_off(tmp_path):
    path = _copy_java(tmp_path, "append_with_bitmap_no_embedding")
    index_file = next((Path(path) / "bucket-0").glob("*.index"))
    index_file.write_bytes(index_file.read_bytes()[:30])
    file_indexes._heads.clear()
    file_indexes._decoded.clear()
    with pytest.raises(CorruptTableError, match="file index"):
        mp.read(path, None, filter=("f0", "=", "Bob"))
    # a filter on a column no index option names never opens an index file
    assert mp.read(path, None, filter=("f3", "=", 12.1)).num_rows == 1
    schema_file = Path(path) / "schema" / "schema-0"
    schema = json.loads(schema_file.read_text())
    schema["options"]["file-index.read.enabled"] = "false"
    schema_file.write_text(json.dumps(schema))
    assert mp.read(path, None, filter=("f0", "=", "Bob")).num_rows == 2


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_javas_deletion_vector_table_reads_the_same_through_its_index_files(tmp_path, fmt):
    """pk_with_bitmap_dv: Java's bitmap indexes in `.index` files beside a deletion-vector
    table's files (read file by file); every filter answers as the whole read filtered."""
    src = JAVA_PK / fmt / "pk_with_bitmap_dv.db" / "pk_with_bitmap_dv"
    path = tmp_path / "pk_with_bitmap_dv"
    shutil.copytree(src, path)
    whole = mp.read(str(path), None)
    assert whole.num_rows
    file_indexes._decoded.clear()
    assert mp.read(str(path), None, filter=("f0", "=", "Carl")).num_rows == 0  # within min..max: the bitmap says no
    assert len(file_indexes._decoded) == 1
    for f in (("f0", "=", "Bob"), ("f0", "=", "Zed"), ("f1", "in", [20, 30]), ("f2", "is null"),
              ("f2", "!=", 1), ("f0", ">", "Lucy"), ("or", [("f0", "=", "Alice"), ("f1", "=", 99)])):
        expected = whole.filter(flt.to_expression(flt.normalize(f, whole.schema), whole.schema))
        got = mp.read(str(path), None, filter=f)
        assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, expected.to_pylist())), f


def _verdict(values: pa.Array, t, f: tuple) -> bool:
    body = fi.encode_bitmap(values, t)
    loaders = {"c": {fi.BITMAP: lambda: fi.BitmapIndex.decode(body, t)}}
    f = flt.normalize(f, pa.schema([("c", values.type)]))
    return file_indexes._evaluate(f, file_indexes.FileIndex(loaders, "test"), {"c": ("c", t)})


def test_coarse_timestamp_keys_never_rule_out_a_match():
    """Found in review: Java keys TIMESTAMP(7..9) by microseconds (one key, many values)."""
    pytest.importorskip("pandas")  # nanosecond values in Python are pandas Timestamps
    ns = pa.array([1500], pa.timestamp("ns"))
    t9 = parse_type("TIMESTAMP(9)")
    one_ns_later = pa.array([1001], pa.timestamp("ns"))[0].as_py()
    for f in (("c", ">", one_ns_later), ("c", "!=", one_ns_later), ("c", "not in", [one_ns_later]),
              ("c", "<", pa.array([1999], pa.timestamp("ns"))[0].as_py())):
        assert pa.table({"c": ns}).filter(flt.to_expression(flt.normalize(f, pa.schema([("c", ns.type)])),
                                                             pa.schema([("c", ns.type)]))).num_rows == 1
        assert _verdict(ns, t9, f), f


def test_signed_zeros_never_rule_out_a_match():
    """Found in review: a bitmap's float keys order -0.0 before 0.0 where a filter's comparison
    does not."""
    for root, arrow in (("DOUBLE", pa.float64()), ("FLOAT", pa.float32())):
        zeros = pa.array([0.0, 5.0], arrow)
        assert _verdict(zeros, parse_type(root), ("c", "<=", -0.0))
        assert _verdict(pa.array([-0.0], arrow), parse_type(root), ("c", ">=", 0.0))
        assert not _verdict(zeros, parse_type(root), ("c", "<", -0.0))


def test_hostile_index_bytes_are_refused_quickly_and_never_allocate_what_they_claim(tmp_path):
    t = parse_type("INT")
    # every block offset pointing at the same block: refused, not read n times
    entries = 3000
    block = struct.pack(">i", entries) + b"".join(struct.pack(">iii", k, -1 - k, -1) for k in range(entries))
    head = struct.pack(">bii?", 2, entries, entries, False) + struct.pack(">i", entries)
    head += b"".join(struct.pack(">ii", 0, 0) for _ in range(entries)) + struct.pack(">i", len(block))
    with pytest.raises(fi.MalformedIndex, match="block"):
        fi.BitmapIndex.decode(head + block, t)
    with pytest.raises(fi.MalformedIndex, match="hash functions"):
        fi.BloomFilter.decode(struct.pack(">i", 2**31 - 1) + b"\0" * 64)
    # an `.index` file of 24 bytes claiming a 2 GiB head: refused before any such read
    path = _copy_java(tmp_path, "append_with_bitmap_no_embedding")
    index_file = next((Path(path) / "bucket-0").glob("*.index"))
    index_file.write_bytes(struct.pack(">qii", fi.MAGIC, 1, 2**31 - 1) + b"\0" * 8)
    file_indexes._heads.clear()
    with pytest.raises(CorruptTableError, match="file index"):
        mp.read(path, None, filter=("f0", "=", "Bob"))
