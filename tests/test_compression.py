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
    # nothing is stored: the table's schema file keeps only what was set
    assert "file.compression.per.level" not in Table.open(t.path).table_schema.options


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
