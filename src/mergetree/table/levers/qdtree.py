"""A workload-driven layout: a greedy query-data routing tree (Yang et al., "Qd-tree: Learning
Data Layouts for Big Data Analytics", SIGMOD 2020).

The data is cut recursively on thresholds taken from the logged predicates: at each node the
cut `column < t` that lets the logged queries skip the most rows (rows of a child times the
queries whose range on that column misses the child) is taken, as long as both children keep
at least `min_rows`; a leaf is a file.  Each leaf is described by the cuts on its path (its
"semantic description"), and the tree is stored with the table's options so that `optimize`
routes rows to leaves by it.

Queries are reduced to one interval per column (the bounding box of their AND-ed range and
equality predicates; an OR or another predicate says nothing about that column), which is what
min/max statistics of the resulting files can answer anyway.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidArgumentError
from .. import filters as flt
from ..type_policy import integer_counts, supports
from ..values import decode_value, encode_value
from .curves import cluster_order

__all__ = ["QdTree", "build_qdtree", "layout_order", "packed_files", "query_box"]

MAX_CUTS_PER_COLUMN = 64


@dataclass
class QdTree:
    """Internal nodes: (column, threshold, left, right) with rows `column < threshold` (and
    nulls) going left; leaves are numbered 0..leaves-1 in their left-to-right order."""

    nodes: list[tuple[str, Any, int, int]]     # child index >= 0: a node; < 0: leaf -(i + 1)
    leaves: int

    def to_json(self) -> str:
        return json.dumps({"nodes": [[c, encode_value(t), left, right] for c, t, left, right in self.nodes],
                           "leaves": self.leaves}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> QdTree:
        try:
            doc = json.loads(text)
            nodes = [(str(c), decode_value(t), int(left), int(right)) for c, t, left, right in doc["nodes"]]
            return cls(nodes, int(doc["leaves"]))
        except (TypeError, ValueError, KeyError) as exc:
            raise InvalidArgumentError(f"a stored qd-tree cannot be read ({exc})") from None

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(c for c, *_ in self.nodes))

    def route(self, table: pa.Table | pa.RecordBatch) -> np.ndarray:
        """The leaf of every row.  Each distinct cut is compared once over the whole column
        (a vectorized kernel, no gather of the rows reaching it); the rows then go down the
        tree as index arrays, so each level costs a pass over the rows at it."""
        n = table.num_rows
        out = np.zeros(n, dtype=np.int64)
        if not self.nodes or not n:
            return out
        columns = {c: table.column(c) for c in self.columns}
        cuts: dict[tuple[str, str, str], np.ndarray] = {}
        pending = [(0, np.arange(n))]
        while pending:
            node, rows = pending.pop()
            column, threshold, left, right = self.nodes[node]
            key = (column, type(threshold).__name__, repr(threshold))
            if key not in cuts:
                cuts[key] = _less(columns[column], threshold)
            goes_left = cuts[key][rows]
            for child, reaching in ((left, rows[goes_left]), (right, rows[~goes_left])):
                if not len(reaching):
                    continue
                if child < 0:
                    out[reaching] = -child - 1
                else:
                    pending.append((child, reaching))
        return out

    def file_of_row(self, table: pa.Table | pa.RecordBatch, rows_per_file: int) -> np.ndarray:
        """The file of every row when the leaves are written as `optimize` writes them
        (`packed_files`), numbered from 0."""
        return packed_files(self.route(table), rows_per_file)

    def describe(self, leaf: int) -> str:
        """The cuts on the path to a leaf, e.g. "a < 500 AND b >= 0.25"."""
        parent: dict[int, tuple[int, bool]] = {}
        for i, (_, _, left, right) in enumerate(self.nodes):
            parent[left] = (i, True)
            parent[right] = (i, False)
        parts = []
        at = -(leaf + 1)
        while at in parent:
            node, is_left = parent[at]
            column, threshold, _, _ = self.nodes[node]
            parts.append(f"{column} {'<' if is_left else '>='} {threshold!r}")
            at = node
        return " AND ".join(reversed(parts)) or "all rows"


def _less(values: pa.Array | pa.ChunkedArray, threshold: Any) -> np.ndarray:
    import pyarrow.compute as pc

    scalar = pa.scalar(threshold, type=values.type)
    result = pc.less(values, scalar)
    if pa.types.is_floating(values.type):  # NaN goes left, with nulls, as the builder's keys send it
        result = pc.or_kleene(result, pc.is_nan(values))
    return np.asarray(pc.fill_null(result, True).to_numpy(zero_copy_only=False), dtype=bool)


def query_box(f: flt.Filter) -> dict[str, tuple[Any, Any]]:
    """Per column, the [low, high] interval an AND of predicates allows (None: unbounded)."""
    box: dict[str, tuple[Any, Any]] = {}

    def tighten(column: str, low: Any, high: Any) -> None:
        lo, hi = box.get(column, (None, None))
        try:
            if low is not None and (lo is None or low > lo):
                lo = low
            if high is not None and (hi is None or high < hi):
                hi = high
        except TypeError:
            return
        box[column] = (lo, hi)

    def walk(node: flt.Filter) -> None:
        if node is None or not isinstance(node, tuple):
            return
        if node[0] == "and" and len(node) == 2:
            for child in node[1]:
                walk(child)
            return
        if node[0] == "or" and len(node) == 2:
            return
        column, op, value = node
        if value is None:
            return
        if op == "=":
            tighten(column, value, value)
        elif op == "in" and value and all(v is not None for v in value):
            try:
                tighten(column, min(value), max(value))
            except TypeError:
                pass
        elif op in (">", ">="):
            tighten(column, value, None)
        elif op in ("<", "<="):
            tighten(column, None, value)

    walk(f)
    return box


def build_qdtree(sample: pa.Table, boxes: Sequence[dict[str, tuple[Any, Any]]], leaves: int,
                 columns: Sequence[str] | None = None, group_of_row: np.ndarray | None = None) -> QdTree:
    """Greedy cuts of the sample into about `leaves` leaves (each at least half the sample's
    share of a leaf), maximizing the rows the queries' boxes let them skip.  `group_of_row`:
    the partition of each sampled row, when the table is partitioned: a query already skips the
    partitions its box misses, so a cut gains only the rows of partitions the query reads."""
    n = sample.num_rows
    if n == 0 or leaves <= 1 or not boxes:
        return QdTree([], 1)
    min_rows = max(1, n // (2 * leaves))
    usable = [c for c in (columns or sample.column_names) if any(c in b for b in boxes)]
    keys: dict[str, np.ndarray] = {}
    cuts: dict[str, tuple[np.ndarray, list[Any], np.ndarray, np.ndarray]] = {}
    for column in usable:
        arr = sample.column(column).combine_chunks()
        lows_given = [b[column][0] if column in b else None for b in boxes]
        highs_given = [b[column][1] if column in b else None for b in boxes]
        try:
            values, bound_keys = _keys(arr, [v for v in lows_given + highs_given if v is not None])
        except (pa.ArrowException, TypeError, ValueError):
            continue  # a type without an order (nested): no cuts on it
        given = iter(bound_keys.tolist())
        low_keys = [None if v is None else next(given) for v in lows_given]
        high_keys = [None if v is None else next(given) for v in highs_given]
        keys[column] = values
        lows = np.array([-np.inf if k is None else k for k in low_keys])
        highs = np.array([np.inf if k is None else k for k in high_keys])
        # thresholds: the queries' bounds (a low bound t cuts at t; a high bound h just above h,
        # so an equality's value gets a cut on each side, a string's as well as a number's)
        raw = [(v, k) for v, k in zip(lows_given, low_keys) if v is not None]
        raw += [cut for cut in (_just_above(v, k, arr.type) for v, k in zip(highs_given, high_keys)
                                if v is not None and k is not None) if cut is not None]
        if not raw:
            continue
        order = np.unique(np.array([k for _, k in raw]), return_index=True)[1]
        picked = order if len(order) <= MAX_CUTS_PER_COLUMN else \
            order[np.linspace(0, len(order) - 1, MAX_CUTS_PER_COLUMN).astype(int)]
        thresholds = np.array([raw[i][1] for i in picked])
        originals = [raw[i][0] for i in picked]
        cuts[column] = (thresholds, originals, lows, highs)
    # reads[g, q]: whether query q reads partition g at all (its box meets the partition's rows)
    groups = int(group_of_row.max()) + 1 if group_of_row is not None and len(group_of_row) else 1
    grouped = group_of_row if group_of_row is not None and groups > 1 else np.zeros(n, dtype=np.int64)
    reads = np.ones((groups, len(boxes)))
    if groups > 1:
        for column, (_, _, lows, highs) in cuts.items():
            values = keys[column]
            low_of = np.full(groups, np.inf)
            high_of = np.full(groups, -np.inf)
            np.minimum.at(low_of, grouped, values)
            np.maximum.at(high_of, grouped, values)
            reads *= ~((highs[None, :] < low_of[:, None]) | (lows[None, :] > high_of[:, None]))
    nodes: list[tuple[str, Any, int, int]] = []
    leaf_count = 0

    def grow(rows: np.ndarray, alive: np.ndarray) -> int:
        """Split `rows` (queries `alive` still read them); returns the node or leaf index."""
        nonlocal leaf_count
        best = None
        if len(rows) >= 2 * min_rows and alive.any():
            mine = grouped[rows]
            for column, (thresholds, _, lows, highs) in cuts.items():
                row_keys = keys[column][rows]
                values = np.sort(row_keys)
                left_n = np.searchsorted(values, thresholds, "left")
                ok = (left_n >= min_rows) & (len(rows) - left_n >= min_rows)
                if not ok.any():
                    continue
                skips_left = lows[alive][None, :] >= thresholds[:, None]     # [cut, query]
                skips_right = highs[alive][None, :] < thresholds[:, None]
                if groups == 1:
                    gain = np.where(ok, left_n * skips_left.sum(axis=1)
                                    + (len(rows) - left_n) * skips_right.sum(axis=1), -1)
                else:  # rows of partitions a query reads: [cut, group] counts times [group, query] reads
                    left_by_group = np.stack([np.searchsorted(np.sort(row_keys[mine == g]), thresholds, "left")
                                              for g in range(groups)], axis=1)
                    all_by_group = np.bincount(mine, minlength=groups)
                    left_read = left_by_group @ reads[:, alive]
                    right_read = (all_by_group[None, :] - left_by_group) @ reads[:, alive]
                    gain = np.where(ok, (left_read * skips_left).sum(axis=1) + (right_read * skips_right).sum(axis=1),
                                    -1)
                i = int(np.argmax(gain))
                if gain[i] > 0 and (best is None or gain[i] > best[0]):
                    best = (gain[i], column, i)
        if best is None:
            leaf_count += 1
            return -leaf_count
        _, column, i = best
        thresholds, originals, lows, highs = cuts[column]
        t = thresholds[i]
        goes_left = keys[column][rows] < t
        index = len(nodes)
        nodes.append((column, originals[i], 0, 0))
        left = grow(rows[goes_left], alive & (lows < t))
        right = grow(rows[~goes_left], alive & (highs >= t))
        nodes[index] = (column, originals[i], left, right)
        return index

    grow(np.arange(n), np.ones(len(boxes), dtype=bool))
    return QdTree(nodes, leaf_count)


def _keys(arr: pa.Array, bounds: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Float keys that order like the column's values, for the sample and for the queries'
    bounds (nulls as -inf: routing sends them left, with the smallest values).  Numbers,
    decimals and temporal values are their own keys (their integer counts for temporal ones);
    strings, binaries and booleans are dense ranks over the sample and the bounds together."""
    dtype = arr.type
    given = pa.array(bounds, type=dtype)
    if pa.types.is_temporal(dtype) or pa.types.is_integer(dtype) or pa.types.is_floating(dtype) \
            or pa.types.is_decimal(dtype):
        return _numeric(arr), _numeric(given)
    if not supports(dtype, "order"):
        raise TypeError(f"no order for {dtype}")
    both = pa.concat_arrays([arr, given])
    if pa.types.is_string_view(dtype) or pa.types.is_binary_view(dtype):  # Arrow ranks no view type
        both = both.cast(pa.large_string() if pa.types.is_string_view(dtype) else pa.large_binary())
    ranks = pc.rank(both, sort_keys="ascending", tiebreaker="dense")  # nulls ranked last, then set to -inf
    out = np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.float64)
    out[np.asarray(both.is_null().to_numpy(zero_copy_only=False), dtype=bool)] = -np.inf
    return out[:len(arr)], out[len(arr):]


def _numeric(arr: pa.Array) -> np.ndarray:
    """Values as float64 keys (nulls as -inf: they route left, with the smallest values)."""
    dtype = arr.type
    if pa.types.is_temporal(dtype):  # dates, times, timestamps, durations: their integer counts
        arr = integer_counts(arr)
    elif not (pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)):
        raise TypeError(f"no numeric key for {dtype}")
    # keys only rank rows for the cuts: float64 rounding of large counts is harmless (routing compares values)
    out = np.asarray(arr.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False), dtype=np.float64)
    return np.where(np.isnan(out), -np.inf, out)


def _just_above(value: Any, key: float, dtype: pa.DataType) -> tuple[Any, float] | None:
    """The smallest cut that sends a high bound's `value` (whose key is `key`) left, so that
    `x < cut` is `x <= value`: (the cut, its key), or None where nothing is above `value` or the
    type has no successor to name.  Rank keys (strings, binaries, booleans) are dense integers,
    so half a rank up lies between `value` and the next value the sample holds."""
    cut: Any
    try:
        if pa.types.is_integer(dtype):
            cut, cut_key = int(value) + 1, key + 1
        elif pa.types.is_float32(dtype):  # the next float32: a float64 step would round back to it
            cut = float(np.nextafter(np.float32(value), np.float32(np.inf)))
            cut_key = float(np.nextafter(key, np.inf))
        elif pa.types.is_floating(dtype):
            cut = float(np.nextafter(float(value), np.inf))
            cut_key = float(np.nextafter(key, np.inf))
        elif pa.types.is_decimal(dtype):
            with localcontext() as exact:  # the column's digits, not the default context's 28
                exact.prec = dtype.precision + 2
                cut = value + Decimal(1).scaleb(-dtype.scale)
            cut_key = float(cut)
        elif pa.types.is_date32(dtype) or (pa.types.is_timestamp(dtype) and dtype.unit != "ns"):
            cut_key = key + 1
            count = pa.array([int(cut_key)], pa.int32() if dtype.bit_width == 32 else pa.int64())
            cut = count.view(dtype)[0].as_py()  # past the last date Python has: OverflowError
        elif pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
            if not isinstance(value, str):
                return None  # a bound of another type: its successor is not a string's
            cut, cut_key = value + "\x00", key + 0.5
        elif pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) or pa.types.is_binary_view(dtype):
            if not isinstance(value, bytes):
                return None
            cut, cut_key = value + b"\x00", key + 0.5
        elif pa.types.is_boolean(dtype):
            if value:
                return None  # nothing is above true
            cut, cut_key = True, key + 0.5
        else:
            return None
        pa.scalar(cut, type=dtype)  # routing compares with it as the column's type
    except (pa.ArrowException, ArithmeticError, OverflowError, TypeError, ValueError):
        return None
    # a float key one step up at least: above 2**53, key + 1 is the key itself
    return cut, max(cut_key, float(np.nextafter(key, np.inf)))


def layout_order(rows: pa.Table | pa.RecordBatch, columns: Sequence[str], strategy: str,
                 tree: QdTree | None = None) -> np.ndarray:
    """The row order of a layout: the curves' (`cluster_order`), or leaf by leaf for a qd-tree
    (rows keep their order inside a leaf)."""
    if strategy == "qdtree":
        if tree is None:
            raise InvalidArgumentError("a qdtree layout needs its tree")
        return np.argsort(tree.route(rows), kind="stable").astype(np.int64, copy=False)
    return cluster_order(rows, list(columns), strategy)


def packed_files(leaves: np.ndarray, rows_per_file: int) -> np.ndarray:
    """The file of every row (numbered from 0, in leaf order) when leaves are written in leaf
    order as files of at most `rows_per_file` rows that never mix a leaf of a file or more with
    another: a leaf that large is files of its own, and consecutive smaller leaves (neighbours in
    the tree's depth-first numbering, so their boxes are close) share files up to the size.  A
    partition holds only part of most leaves: without packing, each part would be a small file."""
    rows_per_file = max(int(rows_per_file), 1)
    out = np.empty(len(leaves), dtype=np.int64)
    if not len(leaves):
        return out
    order = np.argsort(leaves, kind="stable")
    _, counts = np.unique(leaves, return_counts=True)
    file, filled, position = -1, rows_per_file, 0
    for count in counts.tolist():
        rows = order[position:position + count]
        position += count
        if count >= rows_per_file:
            chunks = np.arange(count) // rows_per_file
            out[rows] = file + 1 + chunks
            file += int(chunks[-1]) + 1
            filled = rows_per_file  # the next leaf starts a file
        else:
            if filled + count > rows_per_file:
                file, filled = file + 1, 0
            out[rows] = file
            filled += count
    return out
