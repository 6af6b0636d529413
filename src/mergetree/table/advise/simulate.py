"""Replaying logged queries against layouts simulated on a sample of the table's rows.

A *sample* holds up to `SAMPLE_ROWS` rows drawn uniformly from every data file (each row
remembers its file).  A *simulated layout* splits the sample into `files` parts, either as the
table's files are (the current layout) or in the order a clustering puts it (`cluster_order`,
the same code `optimize` uses), and keeps, per part and column, the min/max (as ranks among
the sample's sorted distinct values), the null count and, for low-cardinality columns, which
values occur.  A query's filter is evaluated on those parts as the planner would on files:

* min/max for every predicate;
* a bitmap index: a part matches =, IN or a range on the column only if a value it holds does;
* a Bloom filter on a high-cardinality column: an =/IN value is found in about one part (plus
  the false-positive rate), wherever min/max alone would read many — an expectation, so
  evaluation yields each part's *probability* of being read and the expected files scanned is
  their sum;
* Top-N (ORDER BY ... LIMIT n): the parts whose range can hold one of the n best rows.

A sample's min/max are a little narrower than the files' would be: every layout gets the
same bias, so comparisons between layouts hold; absolute numbers are slightly optimistic.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import filters as flt
from ..curves import cluster_order
from ..directory import TableDirectory
from ..files import DataFileMeta

__all__ = ["SAMPLE_ROWS", "IndexSpec", "Sample", "SimulatedLayout", "draw_sample", "simulate"]

SAMPLE_ROWS = 200_000
BITMAP_VALUES = 1_000       # columns with at most this many distinct values keep per-part value sets
TOP_SAMPLE = 50             # best sampled rows that show how a layout spreads the best rows


@dataclass
class Sample:
    rows: pa.Table            # the sampled rows (the advisor's columns)
    file_of_row: np.ndarray   # index into `files` of each sampled row
    files: list[DataFileMeta]
    total_rows: int
    total_bytes: int


def draw_sample(directory: TableDirectory, metas: Sequence[DataFileMeta], columns: Sequence[str],
                max_rows: int = SAMPLE_ROWS, seed: int = 0) -> Sample:
    """Up to `max_rows` rows drawn uniformly from the files (the same share of each file)."""
    total = sum(m.row_count for m in metas)
    rate = min(1.0, max_rows / total) if total else 1.0
    rng = np.random.default_rng(seed)
    schema = directory.schema.schema
    parts, owners = [], []
    for i, meta in enumerate(metas):
        if meta.row_count == 0:
            continue
        data = pq.read_table(f"{directory.path}/{meta.file_name}", columns=list(columns))
        take = np.flatnonzero(rng.random(data.num_rows) < rate) if rate < 1.0 else np.arange(data.num_rows)
        if len(take):
            parts.append(data.take(pa.array(take)).select(list(columns)).cast(
                pa.schema([schema.field(c) for c in columns])))
            owners.append(np.full(len(take), i, dtype=np.int64))
    rows = pa.concat_tables(parts) if parts else pa.schema([schema.field(c) for c in columns]).empty_table()
    return Sample(rows, np.concatenate(owners) if owners else np.empty(0, np.int64), list(metas), total,
                  sum(m.file_size for m in metas))


@dataclass(frozen=True)
class IndexSpec:
    bloom: frozenset[str] = frozenset()
    bitmap: frozenset[str] = frozenset()
    fpp: float = 0.01


def _sortable(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(values as a sortable numpy array with nulls dropped, validity mask)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return _keys(arr.filter(arr.is_valid()), arr.type), valid


def _keys(arr: pa.Array, dtype: pa.DataType) -> np.ndarray:
    if pa.types.is_temporal(dtype):
        arr = arr.cast(pa.int64()) if arr.type == dtype else pa.array(arr, dtype).cast(pa.int64())
    elif pa.types.is_decimal(dtype) or pa.types.is_boolean(dtype):
        arr = arr.cast(pa.float64())
    elif pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return np.asarray(arr.to_pylist(), dtype=str)
    elif pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) or pa.types.is_fixed_size_binary(dtype):
        return np.asarray(arr.to_pylist(), dtype=object)
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def _value_keys(values: list[Any], dtype: pa.DataType) -> np.ndarray | None:
    """Filter values in the same key space as the column (None: cannot be compared)."""
    try:
        arr = pa.array(values, type=dtype)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    return _keys(arr, dtype)


class _Column:
    """One column of a simulated layout: per part, min and max rank, nulls, value sets."""

    def __init__(self, column: pa.ChunkedArray, part_of_row: np.ndarray, parts: int) -> None:
        self.dtype = column.type
        keys, valid = _sortable(column)
        self.distinct = np.unique(keys) if len(keys) else keys
        ranks = np.searchsorted(self.distinct, keys) if len(keys) else np.empty(0, np.int64)
        owners = part_of_row[valid]
        self.ranks, self.owners = ranks, owners
        self._order: np.ndarray | None = None
        self.lo = np.full(parts, np.iinfo(np.int64).max, dtype=np.int64)
        self.hi = np.full(parts, -1, dtype=np.int64)
        np.minimum.at(self.lo, owners, ranks)
        np.maximum.at(self.hi, owners, ranks)
        self.nulls = np.bincount(part_of_row[~valid], minlength=parts)
        self.rows = np.bincount(part_of_row, minlength=parts)
        self.values: np.ndarray | None = None
        if len(self.distinct) <= BITMAP_VALUES:
            present = np.zeros((parts, len(self.distinct)), dtype=bool)
            present[owners, ranks] = True
            self.values = present

    def order(self) -> np.ndarray:
        """Positions of the sampled non-null values in ascending order (computed once)."""
        if self._order is None:
            self._order = np.argsort(self.ranks, kind="stable")
        return self._order

    def rank_bounds(self, values: list[Any]) -> tuple[np.ndarray, np.ndarray] | None:
        keys = _value_keys(values, self.dtype)
        if keys is None:
            return None
        return np.searchsorted(self.distinct, keys, "left"), np.searchsorted(self.distinct, keys, "right")


@dataclass
class SimulatedLayout:
    name: str
    parts: int
    columns: dict[str, _Column]
    indexes: IndexSpec
    rows_per_part: float
    ndv: dict[str, float]      # estimated distinct values in the whole table (Bloom estimate)

    # -- filters -----------------------------------------------------------------------
    def read_probability(self, f: flt.Filter) -> np.ndarray:
        """Per part, the probability that a query with filter `f` reads it."""
        if f is None or not isinstance(f, tuple):
            return np.ones(self.parts)
        if f[0] in ("and", "or") and len(f) == 2:
            children = [self.read_probability(x) for x in f[1]]
            if f[0] == "and":
                return np.prod(children, axis=0)
            return 1.0 - np.prod([1.0 - c for c in children], axis=0)
        column, op, value = f
        col = self.columns.get(column)
        if col is None:
            return np.ones(self.parts)
        return self._leaf(column, col, op, value)

    def _leaf(self, name: str, col: _Column, op: str, value: Any) -> np.ndarray:
        empty = col.hi < 0  # no non-null value in the part
        if op == "is null":
            return (col.nulls > 0).astype(float)
        if op == "is not null":
            return (~empty).astype(float)
        if op in ("!=", "not in"):
            return np.ones(self.parts)
        values = value if op == "in" else [value]
        values = [v for v in values if v is not None]
        if not values:
            return np.zeros(self.parts)
        bounds = col.rank_bounds(values)
        if bounds is None:
            return np.ones(self.parts)
        left, right = bounds
        lo, hi = col.lo[:, None], col.hi[:, None]
        if op in ("=", "in"):
            hit = np.asarray(((lo < right[None, :]) & (hi >= left[None, :])).any(axis=1))  # [min, max] holds a value
            if name in self.indexes.bitmap and col.values is not None:
                exact = left < right  # the value occurs in the sample: parts that hold it
                # a value never sampled is rare: treated as held nowhere
                hit = np.asarray(col.values[:, left[exact]].any(axis=1)) if exact.any() else np.zeros(self.parts, bool)
            elif name in self.indexes.bloom:
                return self._bloom(name, hit, len(values))
            return hit.astype(float)
        v_left, v_right = left[0], right[0]
        if op == "<":
            hit = col.lo < v_left
        elif op == "<=":
            hit = col.lo < v_right
        elif op == ">":
            hit = col.hi >= v_right
        else:  # ">="
            hit = col.hi >= v_left
        hit &= ~empty
        if name in self.indexes.bitmap and col.values is not None:
            if op in ("<", "<="):
                wanted = slice(0, v_left if op == "<" else v_right)
            else:
                wanted = slice(v_right if op == ">" else v_left, None)
            hit &= col.values[:, wanted].any(axis=1)
        return hit.astype(float)

    def _bloom(self, name: str, by_range: np.ndarray, values: int) -> np.ndarray:
        """Expected reads when a Bloom filter answers: a value's rows (table rows / distinct
        values) sit in at most that many of the parts its range allows; the rest of those
        parts are read only as false positives."""
        candidates = int(by_range.sum())
        if candidates == 0:
            return np.zeros(self.parts)
        rows_per_value = self.rows_per_part * self.parts / max(self.ndv.get(name, 1.0), 1.0)
        holding = values * min(max(1.0, rows_per_value), candidates)
        expected = min(candidates, holding + self.indexes.fpp * candidates)
        return by_range.astype(float) * (expected / candidates)

    # -- Top-N -------------------------------------------------------------------------
    def top_n_parts(self, order_by: Sequence[tuple[str, str]], limit: int, total_rows: int) -> float:
        """Expected parts a Top-N read opens: the distinct parts among the `limit` best rows,
        with those rows spread over parts as the best sampled rows are (so a layout tight on
        the order column puts them in one part, a random one in `limit` parts).  The filter is
        ignored (a conservative count)."""
        column, direction = order_by[0]
        col = self.columns.get(column)
        if col is None or not len(col.ranks) or limit <= 0:
            return float(self.parts if limit else 0)
        best = min(len(col.ranks), max(TOP_SAMPLE, math.ceil(limit * len(col.ranks) / max(total_rows, 1))))
        order = col.order()
        picked = order[-best:] if direction == "desc" else order[:best]
        shares = np.bincount(col.owners[picked], minlength=self.parts) / best
        shares = shares[shares > 0]
        return float(max(1.0, np.sum(1.0 - (1.0 - shares) ** limit)))


def simulate(sample: Sample, name: str, parts: int, order: Sequence[str] | None = None, strategy: str = "linear",
             indexes: IndexSpec = IndexSpec(), ndv: dict[str, float] | None = None,
             part_of_row: np.ndarray | None = None) -> SimulatedLayout:
    """The sample as `parts` files: given (`part_of_row`), as the table's files are (order
    None) or clustered."""
    n = sample.rows.num_rows
    if part_of_row is None and order is None:
        part_of_row = sample.file_of_row
        parts = len(sample.files)
    elif part_of_row is None:
        parts = max(1, min(parts, n))
        permutation = cluster_order(sample.rows, list(order or ()), strategy) if n else np.empty(0, np.int64)
        part_of_row = np.empty(n, dtype=np.int64)
        part_of_row[permutation] = (np.arange(n) * parts) // max(n, 1)
    columns = {c: _Column(sample.rows.column(c), part_of_row, parts) for c in sample.rows.column_names}
    return SimulatedLayout(name, parts, columns, indexes, max(sample.total_rows / max(parts, 1), 1.0), ndv or {})

