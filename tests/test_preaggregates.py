"""Pre-aggregates: small and large partials answer from their files beside each data file
(listed as its extra files), exactly as a raw scan; a missing one is named, never a wrong answer."""
from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow as pa
import pytest

from mergetree import CorruptTableError, Table

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
    return [e.file.preaggregates()["by_cat"] for e in t.directory.live_files(t.directory.latest_snapshot()).values()]


def preaggregate_files(root) -> list[str]:
    """The pre-aggregate files of model by_cat: extra files of their data file, beside it."""
    return sorted(glob.glob(str(root / "**" / "*.agg-by_cat-*"), recursive=True))


def test_small_partials_answer_without_data_files(tmp_path):
    t = make_table(tmp_path / "t", groups_per_file=10)
    entries = manifest_entries(t)
    assert len(entries) == FILES and len(preaggregate_files(tmp_path / "t")) == FILES
    got = t.aggregate("cat", {"amount": ["sum", "min", "max"], "*": "count"})
    assert t.last_read.used_preaggregates == FILES and t.last_read.files_read == 0
    check_same(got, raw_answer(t))
    filtered = t.aggregate("cat", {"amount": "sum"}, filter=("cat", "in", ["c00001", "c00007"]))
    assert filtered.column("cat").to_pylist() == ["c00001", "c00007"]


def test_large_partials_are_read_from_their_files(tmp_path):
    t = make_table(tmp_path / "t", groups_per_file=1_500)  # ~1,100 groups per file
    assert len(manifest_entries(t)) == FILES and len(preaggregate_files(tmp_path / "t")) == FILES
    got = t.aggregate("cat", {"amount": ["sum", "min", "max"], "*": "count"})
    assert t.last_read.used_preaggregates == FILES and t.last_read.files_read == 0
    check_same(got, raw_answer(t))
    want = raw_answer(t, ("cat", "<", "c00100"))
    check_same(t.aggregate("cat", {"amount": ["sum", "min", "max"], "*": "count"}, filter=("cat", "<", "c00100")),
               want)


def test_a_missing_preaggregate_file_is_named(tmp_path):
    t = make_table(tmp_path / "t", groups_per_file=1_500)
    victim = preaggregate_files(tmp_path / "t")[0]
    os.remove(victim)
    with pytest.raises(CorruptTableError, match=os.path.basename(victim)):
        t.aggregate("cat", {"amount": "sum"})

