"""Paimon deletion-vector index files (issue 25, first part): what mergetree writes reads back,
equals byte for byte what pypaimon's writer makes, reads what pypaimon writes, and a damaged
file is a CorruptTableError naming it, never a crash or a wrong bitmap."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import zlib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from paimon_fixtures import PAIMON_PYTHON
from pyroaring import BitMap, BitMap64

from mergetree.codec.deletion_vectors import (
    MAGIC_32,
    MAGIC_64,
    DeletionVectorRange,
    encode_index_file,
    read_index_file,
)
from mergetree.errors import CorruptTableError, InvalidArgumentError

positions = st.one_of(
    st.sets(st.integers(0, 5000), max_size=300),                        # small files
    st.sets(st.integers(0, 2**31 - 1), max_size=50),                    # any 32-bit row number
    st.sets(st.integers(0, 2**40), min_size=1, max_size=20).map(lambda s: s | {2**31 + 7}),  # past 2^31: 64-bit
    st.just(set()),                                                     # an empty vector
    st.just(set(range(0, 70000))),                                      # a run (run containers)
)
files = st.dictionaries(st.text("abcdef0123456789-", min_size=1, max_size=12).map(lambda s: f"data-{s}.parquet"),
                        positions, max_size=6)


@settings(max_examples=200, deadline=None)
@given(files)
@example({})
def test_an_index_file_reads_back_what_was_written(vectors):
    data, ranges = encode_index_file(vectors)
    assert data[0] == 1 and [r.data_file for r in ranges] == list(vectors)
    got = read_index_file(data, ranges, "index-x")
    assert {name: set(bitmap) for name, bitmap in got.items()} == vectors
    for r in ranges:  # the 32-bit form unless a position needs 64 bits, as Paimon writes by default
        wide = any(p > 2**31 - 1 for p in vectors[r.data_file])
        assert isinstance(got[r.data_file], BitMap64 if wide else BitMap)
        assert r.cardinality == len(vectors[r.data_file])


def test_the_layout_is_paimons():
    """Fixed bytes from the specification: version 1; then for {1, 2}: length 24 (magic + the
    20-byte portable bitmap), the magic big-endian, the bitmap, the CRC32 of magic + bitmap."""
    data, (r,) = encode_index_file({"f": [1, 2]})
    bitmap = bytes.fromhex("3a30000001000000000001001000000001000200")
    body = struct.pack(">i", MAGIC_32) + bitmap
    assert data == b"\x01" + struct.pack(">i", 24) + body + struct.pack(">I", zlib.crc32(body))
    assert (r.offset, r.length) == (1, 24)
    wide, (w,) = encode_index_file({"g": [2**33]})
    assert struct.unpack_from("<i", wide, 5)[0] == MAGIC_64 and w.length == len(wide) - 1  # the whole blob


def _mutations():
    data, ranges = encode_index_file({"a": [1, 5, 9, 70000], "b": [2**31 + 3, 4], "c": []})
    return data, ranges


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_damaged_file_is_a_corrupt_table_error_never_a_crash(data):
    good, ranges = _mutations()
    raw = bytearray(good)
    kind = data.draw(st.sampled_from(["flip", "truncate", "range"]))
    if kind == "flip":
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] ^= data.draw(st.integers(1, 255))
    elif kind == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        i = data.draw(st.integers(0, len(ranges) - 1))
        r = ranges[i]
        ranges = list(ranges)
        ranges[i] = DeletionVectorRange(r.data_file, data.draw(st.integers(-5, len(raw) + 5)),
                                        data.draw(st.integers(-5, len(raw) + 5)), r.cardinality)
    try:
        got = read_index_file(bytes(raw), ranges, "index-damaged")
    except CorruptTableError as exc:
        assert "index-damaged" in str(exc)
    else:  # only an untouched range of an unchanged file may read, and then exactly
        assert {k: set(v) for k, v in got.items()} == {"a": {1, 5, 9, 70000}, "b": {2**31 + 3, 4}, "c": set()}


def test_named_twice_a_wrong_version_or_cardinality_and_bad_positions_are_refused():
    data, ranges = encode_index_file({"a": [1, 2, 3]})
    with pytest.raises(CorruptTableError, match="twice"):
        read_index_file(data, ranges + ranges, "i")
    with pytest.raises(CorruptTableError, match="version 2"):
        read_index_file(b"\x02" + data[1:], ranges, "i")
    with pytest.raises(CorruptTableError, match="version nothing"):
        read_index_file(b"", [], "i")
    with pytest.raises(CorruptTableError, match="holds 3 positions, the index manifest says 4"):
        read_index_file(data, [DeletionVectorRange("a", 1, ranges[0].length, 4)], "i")
    with pytest.raises(InvalidArgumentError, match="not row numbers"):
        encode_index_file({"a": [-1]})


PYPAIMON = """
import json, sys
from pypaimon.deletionvectors.bitmap_deletion_vector import BitmapDeletionVector
from pyroaring import BitMap
out = {}
for name, positions in json.loads(sys.stdin.read()).items():
    out[name] = BitmapDeletionVector(BitMap(positions)).serialize().hex()
print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists(PAIMON_PYTHON), reason="no pypaimon interpreter (make paimon-env)")
def test_pypaimons_deletion_vectors_equal_ours_byte_for_byte():
    vectors = {"a": [0, 1, 2, 100], "b": list(range(10, 80000, 3)), "c": [2**31 - 1]}
    out = subprocess.run([PAIMON_PYTHON, "-c", PYPAIMON], input=json.dumps(vectors), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    theirs = {name: bytes.fromhex(blob) for name, blob in json.loads(out.stdout).items()}
    ours, ranges = encode_index_file(vectors)
    for r in ranges:
        assert ours[r.offset:r.offset + 4 + r.length + 4] == theirs[r.data_file], r.data_file
    # an index file assembled from pypaimon's blobs reads with the lengths it wrote
    index, offset, their_ranges = bytes([1]), 1, []
    for name, blob in theirs.items():
        their_ranges.append(DeletionVectorRange(name, offset, struct.unpack(">i", blob[:4])[0]))
        index += blob
        offset += len(blob)
    got = read_index_file(index, their_ranges, "pypaimon")
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in vectors.items()}
