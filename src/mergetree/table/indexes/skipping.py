"""Which parts of a data file a filter can skip: the whole file by its min/max statistics,
Bloom filters (= and IN) or bitmap index (=, IN, ranges, IS NULL), and row groups by the
same indexes.  Every decision is conservative: a file or row group is skipped only when no
row in it can satisfy the filter, so skipping never changes an answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow.compute as pc

from ...storage import Store
from .. import filters as flt
from .. import paths
from ..filecache import FileCache
from ..files import ROW_GROUP_ROWS, DataFileMeta, source_of
from ..objects import StoredFile, source
from . import bloom
from .bitmap import read_bitmaps, rows_matching

__all__ = ["STEPS", "FileDecision", "decide"]

# The pruning steps, in the order a plan applies and reports them.
STEPS = ("partition", "bucket", "min/max", "bloom", "bitmap", "file-index", "top-n", "pre-aggregate")

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
    if not use_indexes or (meta.origin is None and not meta.indexes):
        return _KEEP_ALL
    # a Paimon file's Bloom filters are Parquet's own, described from its footer on first use
    # (only a filter with = or IN on a column its schema gave filters asks)
    counted = [0]
    row_groups: frozenset[int] | None = None
    for step, probe in (("bloom", _bloom_leaf), ("bitmap", _bitmap_leaf)):
        found = _evaluate(f, lambda leaf, probe=probe: probe(storage, meta, leaf, counted))
        if found is not None:
            if not found:
                return FileDecision(False, step)
            row_groups = found if row_groups is None else row_groups & found
            if not row_groups:
                return FileDecision(False, step)
    return FileDecision(True, None, row_groups, counted[0] if row_groups is not None else 0)


def _row_group_count(meta: DataFileMeta) -> int:
    return max((meta.row_count + ROW_GROUP_ROWS - 1) // ROW_GROUP_ROWS, 1)


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
    if meta.origin is not None:
        described = meta.blooms().get(column)
    else:
        stored = meta.indexes.get("bloom", {}).get(column)
        described = None if stored is None else bloom.ColumnBloom.from_json(stored)
    if described is None:
        return None
    counted[0] = max(len(described.filters), 1)
    values = [value] if op == "=" else list(value)
    return frozenset(bloom.row_groups_that_may_contain(source_of(storage, meta), described, values))


def _accepts(op: str, value: Any):
    """The leaf as a test on one distinct value (None stands for the nulls)."""
    def test(v: Any) -> bool:
        if op == "is null":
            return v is None
        if op == "is not null":
            return v is not None
        if v is None:
            return False  # a comparison is never true on null
        try:
            if op == "=":
                return bool(v == value)
            if op == "!=":
                return bool(v != value)
            if op == "in":
                return v in value
            if op == "not in":
                return v not in value
            return bool({"<": v < value, "<=": v <= value, ">": v > value, ">=": v >= value}[op])
        except TypeError:
            return True  # incomparable: cannot rule the value out
    return test


def _bitmap_leaf(storage: Store, meta: DataFileMeta, leaf: tuple, counted: list[int]) -> frozenset[int] | None:
    column, op, value = leaf
    described = meta.indexes.get("bitmap", {}).get(column) if meta.origin is None else None
    if described is None or not described.get("indexed", True):
        return None
    counted[0] = _row_group_count(meta)
    test = _accepts(op, value)
    listed = described.get("values")
    if listed is not None and not any(test(v) for v in meta.bitmaps()[column].values or ()):
        return frozenset()  # decided from the manifest: no I/O
    sidecar = source(storage, paths.sidecar_name(meta.file_name, "bitmap"))
    rows = rows_matching(_cached_bitmaps(sidecar, column), test)
    return frozenset(g for g in range(_row_group_count(meta))
                     if rows.range_cardinality(g * ROW_GROUP_ROWS, (g + 1) * ROW_GROUP_ROWS))


# decoded bitmap sidecars: repeated queries probe the same files
_bitmaps: FileCache[dict] = FileCache(max_entries=256)


def _cached_bitmaps(sidecar: str | StoredFile, column: str) -> dict:
    if isinstance(sidecar, StoredFile):  # written once under its data file's unique name
        return _bitmaps.get_keyed((*sidecar.key, column), lambda: read_bitmaps(sidecar, column))
    return _bitmaps.get(sidecar, lambda: read_bitmaps(sidecar, column), column)
