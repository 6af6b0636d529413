"""Which parts of a data file a filter can skip: the whole file by its min/max statistics or
its file index (Paimon's Bloom filters and bitmaps: `PaimonFileRef.may_match`), and row groups
by Parquet's own Bloom filters (= and IN).  Every decision is conservative: a file or row group is skipped only when no
row in it can satisfy the filter, so skipping never changes an answer.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow.compute as pc

from ...storage import Store
from .. import filters as flt
from ..files import DataFileMeta, source_of
from . import bloom

__all__ = ["STEPS", "FileDecision", "decide"]

# The pruning steps, in the order a plan applies and reports them.
STEPS = ("partition", "bucket", "min/max", "bloom", "file-index", "top-n", "pre-aggregate")

AllRowGroups = None  # a row-group set of None means "every row group"


@dataclass(frozen=True)
class FileDecision:
    """Read the file or not; if read, which row groups (None: all of them)."""

    keep: bool
    removed_by: str | None = None
    row_groups: frozenset[int] | None = None
    row_group_count: int = 0  # the file's row groups, when `row_groups` names some


_KEEP_ALL = FileDecision(True)


def decide(storage: Store, meta: DataFileMeta, f: flt.Filter, use_indexes: bool = True) -> FileDecision:
    """What `f` (normalized) lets a read skip of this file."""
    if f is None or isinstance(f, pc.Expression):
        return _KEEP_ALL
    if not flt.may_match(f, meta.stats, meta.row_count):
        return FileDecision(False, "min/max")
    if use_indexes and meta.origin is not None and not meta.origin.may_match(f):
        return FileDecision(False, "file-index")  # a Paimon file's own index (Bloom filters, bitmaps)
    if not use_indexes or meta.origin is None:
        return _KEEP_ALL
    # a file's Bloom filters are Parquet's own, described from its footer on first use (only a
    # filter with = or IN on a column its schema gave filters asks)
    counted = [0]
    row_groups = _evaluate(f, lambda leaf: _bloom_leaf(storage, meta, leaf, counted))
    if row_groups is not None and not row_groups:
        return FileDecision(False, "bloom")
    return FileDecision(True, None, row_groups, counted[0] if row_groups is not None else 0)


def _evaluate(f: flt.Filter, leaf_groups) -> frozenset[int] | None:
    """The row groups that may hold matching rows by one index (None: it cannot tell)."""
    if f[0] == "and" and len(f) == 2:
        out: frozenset[int] | None = None
        for part in f[1]:
            found = _evaluate(part, leaf_groups)
            if found is not None:
                out = found if out is None else out & found
        return out
    if f[0] == "or" and len(f) == 2:
        union: set[int] = set()
        for part in f[1]:
            found = _evaluate(part, leaf_groups)
            if found is None:
                return None
            union |= found
        return frozenset(union)
    return leaf_groups(f)


def _bloom_leaf(storage: Store, meta: DataFileMeta, leaf: tuple, counted: list[int]) -> frozenset[int] | None:
    column, op, value = leaf
    if op not in ("=", "in"):
        return None
    described = meta.blooms().get(column)
    if described is None:
        return None
    counted[0] = max(len(described.filters), 1)
    values = [value] if op == "=" else list(value)
    return frozenset(bloom.row_groups_that_may_contain(source_of(storage, meta), described, values))
