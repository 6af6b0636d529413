"""Pre-aggregates: small partials answer from the manifest, large ones from their sidecars,
both exactly as a raw scan; a damaged copy or a missing sidecar is named, never a wrong answer."""
from __future__ import annotations

import glob
import json
import os

import numpy as np
import pyarrow as pa
import pytest

from mergetree import CorruptTableError, Table
from mergetree.table.levers.preaggregates import INLINE_MAX_BYTES

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("amount", pa.int64())])
FILES = 6


def make_table(path, groups_per_file: int) -> Table:
    rng = np.random.default_rng(3)
    t = Table.create(str(path), SCHEMA)
    t.add_aggregate("by_cat", ["cat"], {"amount": ["sum", "min", "max"], "*": "count"})
    for part in range(FILES):
        n = 2_000
        t.write(pa.table({
            "id": pa.array(np.arange(part * n, (part + 1) * n)),
            "cat": pa.array([f"c{i:05d}" for i in rng.integers(0, groups_per_file, n)]),
            "amount": pa.array(rng.integers(-1_000, 1_000, n)),
        }, schema=SCHEMA))
    return t


def raw_answer(t: Table, filter=None) -> pa.Table:
    rows = t.read(filter=filter)
    return rows.group_by("cat").aggregate([("amount", "sum"), ("amount", "min"), ("amount", "max"),
                                           ([], "count_all")]).sort_by("cat")


def check_same(got: pa.Table, want: pa.Table) -> None:
    assert got.column("cat").to_pylist() == want.column("cat").to_pylist()
    for ours, theirs in (("amount_sum", "amount_sum"), ("amount_min", "amount_min"), ("amount_max", "amount_max"),
                         ("rows_count", "count_all")):
        assert got.column(ours).to_pylist() == want.column(theirs).to_pylist(), ours


def manifest_entries(t: Table) -> list[dict]:
    return [e.file.indexes["preagg"]["by_cat"] for e in t.directory.live_files(t.directory.latest_snapshot()).values()]


@pytest.mark.private_format
def test_small_partials_live_in_the_manifest_and_answer_without_data_files(tmp_path):
    t = make_table(tmp_path / "t", groups_per_file=10)
    entries = manifest_entries(t)
    assert len(entries) == FILES and all("inline" in e for e in entries)
    got = t.aggregate("cat", {"amount": ["sum", "min", "max"], "*": "count"})
    assert t.last_read.used_preaggregates == FILES and t.last_read.files_read == 0
    check_same(got, raw_answer(t))
    # the sidecars are not opened at all: with them gone the answer is the same
    for sidecar in glob.glob(str(tmp_path / "t" / "**" / "*.agg-by_cat.parquet"), recursive=True):
        os.remove(sidecar)
    check_same(t.aggregate("cat", {"amount": ["sum", "min", "max"], "*": "count"}), raw_answer(t))
    filtered = t.aggregate("cat", {"amount": "sum"}, filter=("cat", "in", ["c00001", "c00007"]))
    assert filtered.column("cat").to_pylist() == ["c00001", "c00007"]


@pytest.mark.private_format
def test_large_partials_are_read_from_their_sidecars(tmp_path):
    t = make_table(tmp_path / "t", groups_per_file=1_500)  # ~1,100 groups per file: far above the inline limit
    entries = manifest_entries(t)
    assert all("inline" not in e and e["rows"] > 500 for e in entries), INLINE_MAX_BYTES
    got = t.aggregate("cat", {"amount": ["sum", "min", "max"], "*": "count"})
    assert t.last_read.used_preaggregates == FILES and t.last_read.files_read == 0
    check_same(got, raw_answer(t))
    want = raw_answer(t, ("cat", "<", "c00100"))
    check_same(t.aggregate("cat", {"amount": ["sum", "min", "max"], "*": "count"}, filter=("cat", "<", "c00100")),
               want)


@pytest.mark.private_format
def test_a_missing_sidecar_is_named(tmp_path):
    t = make_table(tmp_path / "t", groups_per_file=1_500)
    victim = sorted(glob.glob(str(tmp_path / "t" / "**" / "*.agg-by_cat.parquet"), recursive=True))[0]
    os.remove(victim)
    with pytest.raises(CorruptTableError, match=os.path.basename(victim)):
        t.aggregate("cat", {"amount": "sum"})


@pytest.mark.private_format
def test_a_damaged_manifest_copy_is_named(tmp_path):
    make_table(tmp_path / "t", groups_per_file=10)
    damaged = 0
    for manifest in glob.glob(str(tmp_path / "t" / "manifest" / "*")):
        with open(manifest, encoding="utf-8") as f:
            text = f.read()
        if '"inline": "' in text and '"by_cat"' in text:
            document = json.loads(text)
            text = text.replace(json.dumps(_first_inline(document)), json.dumps("!!not base64!!"), 1)
            with open(manifest, "w", encoding="utf-8") as f:
                f.write(text)
            damaged += 1
    assert damaged
    with pytest.raises(CorruptTableError, match="pre-aggregate"):
        Table.open(str(tmp_path / "t")).aggregate("cat", {"amount": "sum"})


def _first_inline(node):
    """The first pre-aggregate inline copy in a manifest document."""
    if isinstance(node, dict):
        if "source_rows" in node and "inline" in node:
            return node["inline"]
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = _first_inline(child)
        if found is not None:
            return found
    return None
