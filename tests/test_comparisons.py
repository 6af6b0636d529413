"""The loser tree's comparison counts, from `stats`."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

import mergetree


def random_runs(k: int, rows_per_run: int, key_space: int, seed: int) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    return [pa.table({"k": np.sort(rng.choice(key_space, rows_per_run, replace=False)),
                      "seq": np.full(rows_per_run, r, dtype=np.int64)}) for r in range(k)]


def distinct_runs(k: int, rows: int, seed: int) -> list[pa.Table]:
    """Every key in exactly one run."""
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, k, rows)
    return [pa.table({"k": np.flatnonzero(owner == r).astype(np.int64)}) for r in range(k)]


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 13, 32, 64, 128])
def test_distinct_keys_need_at_most_log2k_plus_one_comparisons_per_row(k):
    runs = distinct_runs(k, 20_000, seed=k)
    reader = mergetree.merge(runs, "k")
    out = reader.read_all()
    stats = reader.stats
    assert stats.rows_out == out.num_rows == 20_000
    bound = (math.ceil(math.log2(k)) + 1) * stats.rows_out if k > 1 else 0
    assert stats.key_comparisons <= bound
    assert stats.sequence_comparisons == 0  # no key ever meets an equal key


@pytest.mark.parametrize("k", [2, 8, 32, 128])
@pytest.mark.parametrize("kind", ["overlapping", "distinct"])
def test_loser_tree_compares_less_than_heap(k, kind):
    runs = random_runs(k, 2_000, 4_000, seed=k) if kind == "overlapping" else distinct_runs(k, 50_000, seed=k)
    tree = mergetree.merge(runs, "k", sequence="seq" if kind == "overlapping" else None)
    heap = mergetree.merge(runs, "k", sequence="seq" if kind == "overlapping" else None, algorithm="heap")
    assert tree.read_all().equals(heap.read_all())
    assert tree.stats.key_comparisons < heap.stats.key_comparisons
    assert tree.stats.rows_in == heap.stats.rows_in == sum(r.num_rows for r in runs)


def test_duplicates_are_resolved_by_sequence_comparisons_only():
    """When every run holds the same keys, a key group costs one full key comparison per
    new key meeting a new key; the rest of the group is ordered by sequence alone.  (String
    keys: the six-state tree; one fixed-width key takes the fixed-width path, below.)"""
    k, n = 16, 1000
    keys = pa.array([f"key-{i:06d}" for i in range(n)])
    runs = [pa.table({"k": keys, "seq": np.full(n, r, dtype=np.int64)}) for r in range(k)]
    reader = mergetree.merge(runs, "k", sequence="seq")
    out = reader.read_all()
    assert out["seq"].to_pylist() == [k - 1] * n
    stats = reader.stats
    assert stats.key_comparisons <= (k - 1) * n + k   # one per tree node per key, no more
    assert stats.sequence_comparisons > 0


@pytest.mark.parametrize("k", [1, 2, 3, 8, 16, 33])
def test_fixed_width_path_climbs_at_most_log2k_levels_per_row(k):
    """One fixed-width key: every input row climbs once, one comparison per level;
    a comparison between equal keys (a sequence comparison) happens only inside groups."""
    n = 1000
    runs = [pa.table({"k": np.arange(n, dtype=np.int64), "seq": np.full(n, r, dtype=np.int64)})
            for r in range(k)]
    reader = mergetree.merge(runs, "k", sequence="seq")
    out = reader.read_all()
    assert out["seq"].to_pylist() == [k - 1] * n
    stats = reader.stats
    depth = math.ceil(math.log2(k)) if k > 1 else 0
    assert stats.key_comparisons <= depth * (stats.rows_in + k)
    assert (stats.sequence_comparisons > 0) == (k > 1)
