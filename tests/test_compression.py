"""Data files are compressed per LSM level: the options' rules, and the codec each file gets."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergetree import InvalidArgumentError, Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def codecs(table: Table) -> list[tuple[int, str]]:
    """(level, codec) of every live data file, sorted."""
    out = []
    for f in table.plan().files:
        meta = pq.ParquetFile(os.path.join(table.path, f.file_name)).metadata
        out.append((f.level, meta.row_group(0).column(0).compression))
    return sorted(out)


def write_twice_and_compact(table: Table) -> tuple[list, list]:
    table.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table.write(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
    before = codecs(table)
    table.compact(full=True)
    assert table.read().sort_by("id").to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    return before, codecs(table)


def test_primary_key_tables_write_level_0_in_lz4_and_compact_into_zstd(tmp_path):
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id", options={"write-only": "true"})
    before, after = write_twice_and_compact(t)
    assert before == [(0, "LZ4"), (0, "LZ4")]
    assert after == [(max(lvl for lvl, _ in after), "ZSTD")] and after[0][0] > 0
    # written out in the table's schema, so that Java's writers do the same
    assert Table.open(t.path).table_schema.options["file.compression.per.level"] == "0:lz4"


def test_the_codecs_follow_the_options(tmp_path):
    t = Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id",
                     options={"write-only": "true", "file.compression": "snappy",
                              "file.compression.per.level": "0:none"})
    before, after = write_twice_and_compact(t)
    assert before == [(0, "UNCOMPRESSED")] * 2 and [c for _, c in after] == ["SNAPPY"]
    flat = Table.create(str(tmp_path / "flat"), SCHEMA, primary_key="id",
                        options={"write-only": "true", "file.compression.per.level": ""})
    before, after = write_twice_and_compact(flat)
    assert [c for _, c in before + after] == ["ZSTD"] * 3


def test_append_tables_keep_zstd_at_level_0(tmp_path):
    t = Table.create(str(tmp_path / "a"), SCHEMA)
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert codecs(t) == [(0, "ZSTD")]


@pytest.mark.parametrize("options, message", [
    ({"file.compression": "lzo"}, "must be one of zstd, lz4"),
    ({"file.compression": "zstdd"}, "did you mean 'zstd'"),
    ({"file.compression.per.level": "0=lz4"}, "level:codec pairs"),
    ({"file.compression.per.level": "x:lz4"}, "level:codec pairs"),
    ({"file.compression.per.level": "0:lz4,0:zstd"}, "names level 0 twice"),
    ({"file.compression.per.level": "1:rar"}, "must be one of"),
])
def test_bad_codec_options_are_refused_before_anything_is_written(tmp_path, options, message):
    with pytest.raises(InvalidArgumentError, match=message):
        Table.create(str(tmp_path / "t"), SCHEMA, primary_key="id", options=options)
    assert not os.path.exists(tmp_path / "t")


def test_dictionary_pages_only_where_values_repeat(tmp_path):
    """A column whose first rows are mostly distinct is written plain (a dictionary would only
    grow the file and slow every read); repeated values keep their dictionary; too few rows
    to judge keep it too; keys, sequence numbers and floats never get one."""
    from mergetree.table.files import DICTIONARY_MIN_SAMPLE, dictionary_columns
    schema = pa.schema([("id", pa.int64()), ("distinct_s", pa.string()), ("status", pa.string()),
                        ("distinct_i", pa.int64()), ("small_i", pa.int32()), ("f", pa.float64())])
    n = 20_000
    rows = pa.table({"id": range(n), "distinct_s": [f"user-{i}" for i in range(n)],
                     "status": [("new", "paid", "sent")[i % 3] for i in range(n)], "distinct_i": range(0, 7 * n, 7),
                     "small_i": pa.array([i % 50 for i in range(n)], pa.int32()), "f": [i / 3 for i in range(n)]},
                    schema=schema)
    t = Table.create(str(tmp_path / "t"), schema, primary_key="id")
    ts = t.table_schema
    assert dictionary_columns(ts, rows) == ["status", "small_i"]
    assert dictionary_columns(ts, rows.slice(0, DICTIONARY_MIN_SAMPLE - 1)) == \
        ["distinct_s", "status", "distinct_i", "small_i"]
    t.write(rows)
    [meta] = t.plan().files
    group = pq.ParquetFile(os.path.join(t.path, meta.file_name)).metadata.row_group(0)
    encodings = {group.column(i).path_in_schema: group.column(i).encodings for i in range(group.num_columns)}
    for name in ("distinct_s", "distinct_i", "f", "_KEY_id", "_SEQUENCE_NUMBER"):
        assert not any("DICTIONARY" in e for e in encodings[name]), (name, encodings[name])
    for name in ("status", "small_i"):
        assert any("DICTIONARY" in e for e in encodings[name]), (name, encodings[name])
    assert t.read().sort_by("id").to_pylist() == rows.to_pylist()


def test_ordered_integer_columns_are_delta_encoded(tmp_path):
    """With `java-reader-version` 1.2 (Java reads delta pages from 1.2 on), integer-like key
    columns, their value copies and the sequence number (ascending within a file) are written
    DELTA_BINARY_PACKED; string keys and the other columns are not; reads agree."""
    from mergetree.table.files import delta_columns
    schema = pa.schema([("ts", pa.timestamp("us")), ("name", pa.string()), ("n", pa.int32()), ("v", pa.int64())])
    t = Table.create(str(tmp_path / "t"), schema, primary_key=["ts", "name", "n"],
                     options={"write-only": "true", "java-reader-version": "1.2"})
    assert delta_columns(t.table_schema, t.table_schema.file_schema) == ["_KEY_ts", "_KEY_n", "_SEQUENCE_NUMBER",
                                                                         "ts", "n"]
    rows = pa.table({"ts": pa.array(range(0, 30_000_000, 1000), pa.timestamp("us")),
                     "name": [f"k{i % 7}" for i in range(30_000)], "n": pa.array(range(30_000), pa.int32()),
                     "v": range(30_000)}, schema=schema)
    t.write(rows)
    t.write(rows.slice(100, 50))  # a second run: the merge reads both
    [first, *_] = sorted(t.plan().files, key=lambda f: -f.row_count)
    group = pq.ParquetFile(os.path.join(t.path, first.file_name)).metadata.row_group(0)
    encodings = {group.column(i).path_in_schema: group.column(i).encodings for i in range(group.num_columns)}
    for name in ("_KEY_ts", "_KEY_n", "_SEQUENCE_NUMBER", "ts", "n"):
        assert "DELTA_BINARY_PACKED" in encodings[name], (name, encodings[name])
    for name in ("_KEY_name", "name", "v"):
        assert "DELTA_BINARY_PACKED" not in encodings[name], (name, encodings[name])
    assert t.read().sort_by([("ts", "ascending")]).to_pylist() == rows.to_pylist()
    # by default the files keep to what every Java release decodes: no delta pages
    plain = Table.create(str(tmp_path / "plain"), schema, primary_key=["ts", "name", "n"])
    plain.write(rows)
    [meta] = plain.plan().files
    group = pq.ParquetFile(os.path.join(plain.path, meta.file_name)).metadata.row_group(0)
    for i in range(group.num_columns):
        assert "DELTA_BINARY_PACKED" not in group.column(i).encodings, group.column(i).path_in_schema
