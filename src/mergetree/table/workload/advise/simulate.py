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
  their sum (and the bytes: each part's bytes times its probability);
* Top-N (ORDER BY ... LIMIT n): the parts whose range can hold one of the n best rows.

Every orderable type is simulated: integers, floats, bool, decimals (through float64, an order
that only merges values closer than a float tells apart), dates, times, timestamps and
durations (their stored integers), strings and binaries of every width, view and dictionary
encoding (by their first `KEY_BYTES` bytes: values sharing those share a rank, so a filter
on them may read more, never less).  Nested columns (lists, structs, maps, unions) and null
columns have no order: the sample leaves them out and says why (`Sample.skipped`); a
predicate on them is treated as one no statistic can answer (every part is read).

A sample's min/max are a little narrower than the files' would be: every layout gets the
same bias, so comparisons between layouts hold; absolute numbers are slightly optimistic.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ....errors import UnsupportedTypeError
from ... import filters as flt
from ...directory import TableDirectory
from ...files import DataFileMeta
from ...levers.curves import cluster_order
from ...type_policy import integer_counts
from .target import AdviceTarget, as_target

__all__ = ["KEY_BYTES", "SAMPLE_ROWS", "ColumnKeys", "IndexSpec", "Sample", "SimulatedLayout", "column_keys",
           "draw_sample", "sample_type", "simulate", "unsampled_reason"]

SAMPLE_ROWS = 200_000
BITMAP_VALUES = 1_000       # columns with at most this many distinct values keep per-part value sets
TOP_SAMPLE = 50             # best sampled rows that show how a layout spreads the best rows
KEY_BYTES = 64              # strings and binaries are compared by their first 64 bytes

_VIEWS = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def sample_type(dtype: pa.DataType) -> pa.DataType | None:
    """The type a column of `dtype` has in a sample (views as plain strings and binaries,
    dictionary and run-end encodings decoded), or None when it has no order to simulate."""
    t = pa.types
    while t.is_dictionary(dtype) or t.is_run_end_encoded(dtype):
        dtype = dtype.value_type
    if dtype in _VIEWS:
        return _VIEWS[dtype]
    if (t.is_integer(dtype) or t.is_floating(dtype) or t.is_boolean(dtype) or t.is_decimal(dtype)
            or t.is_date(dtype) or t.is_time(dtype) or t.is_timestamp(dtype) or t.is_duration(dtype)
            or t.is_string(dtype) or t.is_large_string(dtype) or t.is_binary(dtype) or t.is_large_binary(dtype)
            or t.is_fixed_size_binary(dtype)):
        return dtype
    return None


def unsampled_reason(name: str, dtype: pa.DataType) -> str:
    """Why a column of `dtype` is left out of the sample (see `sample_type`)."""
    t = pa.types
    nested = (t.is_list(dtype) or t.is_large_list(dtype) or t.is_fixed_size_list(dtype) or t.is_struct(dtype)
              or t.is_map(dtype) or t.is_union(dtype) or getattr(t, "is_list_view", lambda _: False)(dtype)
              or getattr(t, "is_large_list_view", lambda _: False)(dtype))
    what = "a nested column" if nested else "a column of a type with no order"
    return (f"column {name!r} has type {dtype}: {what}, which min/max statistics, indexes and clustering "
            f"cannot use; its predicates are treated as reading every file")


def _plain(chunk: pa.Array, target: pa.DataType) -> pa.Array:
    """One chunk as a plain array of `target` (dictionary and run-end encodings decoded, views
    cast to their plain twins: pyarrow's take and filter have no view kernels)."""
    if pa.types.is_dictionary(chunk.type):
        values = _plain(chunk.dictionary, target)
        return values.take(chunk.indices)
    if pa.types.is_run_end_encoded(chunk.type):
        return _plain(pc.run_end_decode(chunk), target)
    return chunk if chunk.type == target else chunk.cast(target)


def _plain_column(column: pa.ChunkedArray, target: pa.DataType) -> pa.Array:
    chunks = [_plain(c, target) for c in column.chunks]
    if not chunks:
        return pa.array([], type=target)
    return pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0]


@dataclass
class ColumnKeys:
    """A sampled column's order, the same in every simulated layout: each sampled row's rank
    among the column's sorted distinct values (-1: null; ranked by Arrow on the full values), and
    those distinct values as numpy keys (`_keys`) that filter values are placed among."""

    dtype: pa.DataType
    distinct: np.ndarray       # keys of the sorted distinct values (non-decreasing)
    row_ranks: np.ndarray      # per sampled row: its value's rank, -1 for null
    _order: np.ndarray | None = field(default=None, repr=False)

    @property
    def exact(self) -> bool:
        """Whether distinct values always have distinct keys: not for strings and binaries
        (compared by their first KEY_BYTES bytes) and decimals (through float64), whose strict
        comparisons the simulation therefore answers as non-strict ones (reading more, never
        less)."""
        t = pa.types
        return not (t.is_string(self.dtype) or t.is_large_string(self.dtype) or t.is_binary(self.dtype)
                    or t.is_large_binary(self.dtype) or t.is_fixed_size_binary(self.dtype)
                    or t.is_decimal(self.dtype))

    @property
    def valid(self) -> np.ndarray:
        return self.row_ranks >= 0

    @property
    def ranks(self) -> np.ndarray:
        """The ranks of the non-null sampled values, in row order."""
        return self.row_ranks[self.row_ranks >= 0]

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


def column_keys(arr: pa.Array) -> ColumnKeys:
    """The keys of one plain column (see `ColumnKeys`)."""
    row_ranks = np.full(len(arr), -1, dtype=np.int64)
    present = arr.filter(arr.is_valid()) if arr.null_count else arr
    if len(present):
        ranks = np.asarray(pc.rank(present, sort_keys="ascending", tiebreaker="dense").to_numpy(), dtype=np.int64) - 1
        if arr.null_count:
            row_ranks[np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)] = ranks
        else:
            row_ranks = ranks
        # one value per rank, in rank order: the ranks' own idea of equal (-0.0 and 0.0, say)
        first = np.unique(ranks, return_index=True)[1]
        distinct = _keys(present.take(pa.array(first)))
    else:
        distinct = _keys(present)
    return ColumnKeys(arr.type, distinct, row_ranks)


@dataclass
class Sample:
    rows: pa.Table            # the sampled rows (the advisor's columns, in `sample_type` types)
    file_of_row: np.ndarray   # index into `files` of each sampled row
    files: list[DataFileMeta]
    total_rows: int
    total_bytes: int
    skipped: dict[str, str] = field(default_factory=dict)   # column left out -> why
    # the layout group (`AdviceTarget.layout_group`: a partition) of each file, numbered from 0;
    # None: one group
    group_of_file: np.ndarray | None = None
    _keys: dict[str, ColumnKeys] = field(default_factory=dict, repr=False)

    @property
    def groups(self) -> int:
        return int(self.group_of_file.max()) + 1 if self.group_of_file is not None and len(self.group_of_file) else 1

    @property
    def group_of_row(self) -> np.ndarray:
        if self.group_of_file is None or not len(self.group_of_file):
            return np.zeros(len(self.file_of_row), dtype=np.int64)
        return self.group_of_file[self.file_of_row]

    def group_parts(self, parts: int) -> np.ndarray:
        """`parts` files shared among the groups by their bytes, at least one each (a rewrite
        writes each group's files on its own, so no file holds two groups' rows)."""
        if self.groups == 1:
            return np.array([max(1, parts)], dtype=np.int64)
        assert self.group_of_file is not None
        sizes = np.bincount(self.group_of_file, weights=[m.file_size for m in self.files], minlength=self.groups)
        share = parts * sizes / max(float(sizes.sum()), 1.0)
        out = np.maximum(1, np.floor(share)).astype(np.int64)
        left = parts - int(out.sum())
        if left > 0:  # the largest remainders get the rest
            out[np.argsort(-(share - np.floor(share)), kind="stable")[:left]] += 1
        return out

    def keys(self, column: str) -> ColumnKeys:
        """The column's keys (computed once: they are the same in every simulated layout)."""
        if column not in self._keys:
            dtype = self.rows.schema.field(column).type
            target = sample_type(dtype)
            if target is None:
                raise UnsupportedTypeError(unsampled_reason(column, dtype))
            self._keys[column] = column_keys(_plain_column(self.rows.column(column), target))
        return self._keys[column]


def draw_sample(table: TableDirectory | AdviceTarget, metas: Sequence[DataFileMeta], columns: Sequence[str],
                max_rows: int = SAMPLE_ROWS, seed: int = 0) -> Sample:
    """Up to `max_rows` rows drawn uniformly from the files (the same share of each file, the
    same rows for the same files and seed).  Which rows of a file are drawn, and the order the
    files are read in, follow from the file's row count and size, not its name or place in
    `metas`: the same data written twice (names with random ids) gives the same sample, so the
    advice on it is the same.  Columns without an order (`sample_type`) are left out, with the
    reason in `Sample.skipped`."""
    total = sum(m.row_count for m in metas)
    rate = min(1.0, max_rows / total) if total else 1.0
    source = as_target(table)
    schema = source.arrow_schema
    skipped: dict[str, str] = {}
    kept: list[str] = []
    types: dict[str, pa.DataType] = {}
    for c in columns:
        target = sample_type(schema.field(c).type)
        if target is None:
            skipped[c] = unsampled_reason(c, schema.field(c).type)
        else:
            kept.append(c)
            types[c] = target
    out_schema = pa.schema([pa.field(c, types[c]) for c in kept])
    group_ids: dict[Any, int] = {}
    group_of_file = np.array([group_ids.setdefault(source.layout_group(m), len(group_ids)) for m in metas],
                             dtype=np.int64)
    parts, owners = [], []
    for i in sorted(range(len(metas)), key=lambda i: (metas[i].row_count, metas[i].file_size, metas[i].file_name)):
        meta = metas[i]
        if meta.row_count == 0:
            continue
        rng = np.random.default_rng([seed, meta.row_count, meta.file_size])
        take = (np.flatnonzero(rng.random(meta.row_count) < rate) if rate < 1.0
                else np.arange(meta.row_count))
        if not len(take) or not kept:
            continue
        data = source.read_file(meta, kept)
        if data is None:
            continue
        take = take[take < data.num_rows]
        indices = pa.array(take)
        parts.append(pa.table([_plain_column(data.column(c), types[c]).take(indices) for c in kept],
                              schema=out_schema))
        owners.append(np.full(len(take), i, dtype=np.int64))
    rows = pa.concat_tables(parts) if parts else out_schema.empty_table()
    return Sample(rows, np.concatenate(owners) if owners else np.empty(0, np.int64), list(metas), total,
                  sum(m.file_size for m in metas), skipped, group_of_file)


@dataclass(frozen=True)
class IndexSpec:
    bloom: frozenset[str] = frozenset()
    bitmap: frozenset[str] = frozenset()
    fpp: float = 0.01


def _keys(arr: pa.Array) -> np.ndarray:
    """Order-preserving numpy keys of a plain array without nulls (see the module docstring)."""
    t = pa.types
    dtype = arr.type
    if t.is_integer(dtype) or t.is_floating(dtype):
        return np.asarray(arr.to_numpy(zero_copy_only=False))
    if t.is_boolean(dtype):
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.uint8)
    if t.is_temporal(dtype):
        return np.asarray(integer_counts(arr).to_numpy(zero_copy_only=False), dtype=np.int64)
    if t.is_decimal(dtype):
        return np.asarray(arr.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    if t.is_string(dtype) or t.is_large_string(dtype) or t.is_binary(dtype) or t.is_large_binary(dtype) \
            or t.is_fixed_size_binary(dtype):
        prefix = pc.binary_slice(arr.cast(pa.large_binary()), 0, KEY_BYTES)
        return np.asarray(prefix.to_numpy(zero_copy_only=False), dtype=f"S{KEY_BYTES}") if len(prefix) \
            else np.empty(0, f"S{KEY_BYTES}")
    raise TypeError(f"no order-preserving key for {dtype}")


def _value_keys(values: list[Any], dtype: pa.DataType) -> np.ndarray | None:
    """Filter values in the same key space as the column (None: cannot be compared, so the
    predicate is treated as reading every part)."""
    try:
        arr = pa.array(values, type=dtype)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        try:
            arr = pa.array(values).cast(dtype)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
    try:
        return _keys(arr.filter(arr.is_valid()) if arr.null_count else arr)
    except (pa.ArrowException, TypeError, ValueError):
        return None


class _Parts:
    """How a layout puts the sampled rows into parts: the rows ordered by part, and where each
    non-empty part starts in that order (shared by all of the layout's columns)."""

    def __init__(self, part_of_row: np.ndarray, parts: int) -> None:
        self.part_of_row = part_of_row
        self.parts = parts
        self.order = np.argsort(part_of_row, kind="stable")
        counts = np.bincount(part_of_row, minlength=parts)
        self.filled = np.flatnonzero(counts)
        self.starts = np.concatenate([[0], np.cumsum(counts[self.filled])[:-1]]).astype(np.int64)


class _Column:
    """One column of a simulated layout: per part, min and max rank, nulls, value sets."""

    def __init__(self, keys: ColumnKeys, layout: _Parts) -> None:
        self.keys = keys
        self.dtype = keys.dtype
        parts = layout.parts
        row_ranks = keys.row_ranks
        valid = row_ranks >= 0
        self.owners = layout.part_of_row[valid]
        self.ranks = row_ranks[valid]
        self.lo = np.full(parts, np.iinfo(np.int64).max, dtype=np.int64)
        self.hi = np.full(parts, -1, dtype=np.int64)
        if len(layout.filled):
            by_part = row_ranks[layout.order]
            self.lo[layout.filled] = np.minimum.reduceat(
                np.where(by_part >= 0, by_part, np.iinfo(np.int64).max), layout.starts)
            self.hi[layout.filled] = np.maximum.reduceat(by_part, layout.starts)
        self.nulls = np.bincount(layout.part_of_row[~valid], minlength=parts)
        self.values: np.ndarray | None = None
        if len(keys.distinct) <= BITMAP_VALUES:
            present = np.zeros((parts, len(keys.distinct)), dtype=bool)
            present[self.owners, self.ranks] = True
            self.values = present

    def order(self) -> np.ndarray:
        return self.keys.order()

    def rank_bounds(self, values: list[Any]) -> tuple[np.ndarray, np.ndarray] | None:
        return self.keys.rank_bounds(values)


@dataclass
class SimulatedLayout:
    name: str
    parts: int
    columns: dict[str, _Column]
    indexes: IndexSpec
    rows_per_part: float
    ndv: dict[str, float]      # estimated distinct values in the whole table (Bloom estimate)
    part_bytes: np.ndarray | None = None   # bytes of each part (None: the table's bytes spread evenly)
    total_bytes: float = 0.0

    def __post_init__(self) -> None:
        if self.part_bytes is None:
            self.part_bytes = np.full(self.parts, self.total_bytes / max(self.parts, 1))

    def with_indexes(self, indexes: IndexSpec) -> SimulatedLayout:
        """The same layout with other indexes."""
        return dataclasses.replace(self, indexes=indexes)

    def bytes_of(self, probability: np.ndarray) -> float:
        """Expected bytes read when each part is read with this probability."""
        assert self.part_bytes is not None
        return float(np.dot(probability, self.part_bytes))

    @property
    def bytes_per_part(self) -> float:
        assert self.part_bytes is not None
        return float(self.part_bytes.mean()) if self.parts else 0.0

    # -- filters -----------------------------------------------------------------------
    def read_probability(self, f: flt.Filter) -> np.ndarray:
        """Per part, the probability that a query with filter `f` reads it."""
        if f is None or not isinstance(f, tuple):
            return np.ones(self.parts)
        if f[0] in ("and", "or") and len(f) == 2:
            children = [self.read_probability(x) for x in f[1]]
            if not children:
                return np.ones(self.parts)
            if f[0] == "and":
                return np.prod(children, axis=0)
            return 1.0 - np.prod([1.0 - c for c in children], axis=0)
        if f[0] == "not" and len(f) == 2:
            return np.ones(self.parts)
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
        if op in ("=", "in", "<", "<=", ">", ">="):
            values = value if op == "in" else [value]
        else:  # !=, not in, LIKE and what else min/max cannot answer
            return np.ones(self.parts)
        if not isinstance(values, (list, tuple)):
            return np.ones(self.parts)
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
                # the ranks whose key equals a value's key: the value itself when it was sampled
                # (several ranks where keys are truncated strings sharing their first KEY_BYTES);
                # a value never sampled is rare: treated as held nowhere
                ranks = np.concatenate([np.arange(a, b) for a, b in zip(left, right)]).astype(np.int64)
                hit = np.asarray(col.values[:, ranks].any(axis=1)) if len(ranks) else np.zeros(self.parts, bool)
            elif name in self.indexes.bloom:
                return self._bloom(name, hit, len(values))
            return hit.astype(float)
        v_left, v_right = left[0], right[0]
        if not col.keys.exact:  # a value may share its key with greater or smaller ones
            op = {"<": "<=", ">": ">="}.get(op, op)
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
    None: each part has its file's bytes) or clustered (parts of even bytes), each layout group
    (partition) on its own, as a rewrite lays them out."""
    n = sample.rows.num_rows
    part_bytes = None
    if part_of_row is None and order is None:
        part_of_row = sample.file_of_row
        parts = len(sample.files)
        part_bytes = np.array([m.file_size for m in sample.files], dtype=np.float64)
    elif part_of_row is None:
        part_of_row = np.empty(n, dtype=np.int64)
        if sample.groups == 1:
            parts = max(1, min(parts, n))
            _cluster_into(part_of_row, np.arange(n), sample.rows, order, strategy, 0, parts)
        else:
            group_of_row = sample.group_of_row
            first = 0
            for group, group_parts in enumerate(sample.group_parts(parts)):
                rows_of_group = np.flatnonzero(group_of_row == group)
                group_parts = max(1, min(int(group_parts), len(rows_of_group)))
                _cluster_into(part_of_row, rows_of_group, sample.rows, order, strategy, first, group_parts)
                first += group_parts
            parts = max(first, 1)
    layout = _Parts(part_of_row, parts)
    columns = {c: _Column(sample.keys(c), layout) for c in sample.rows.column_names}
    return SimulatedLayout(name, parts, columns, indexes, max(sample.total_rows / max(parts, 1), 1.0), ndv or {},
                           part_bytes, float(sample.total_bytes))


def _cluster_into(part_of_row: np.ndarray, rows: np.ndarray, table: pa.Table, order: Sequence[str] | None,
                  strategy: str, first: int, parts: int) -> None:
    """`rows` of the sample in the clustering's order, cut into `parts` parts numbered from `first`."""
    n = len(rows)
    if not n:
        return
    subset = table if n == table.num_rows else table.take(pa.array(rows))
    permutation = cluster_order(subset, list(order or ()), strategy)
    part_of_row[rows[permutation]] = first + (np.arange(n) * parts) // n
