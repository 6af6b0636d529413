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
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError
from . import filters as flt
from .curves import cluster_order
from .values import decode_value, encode_value

__all__ = ["QdTree", "build_qdtree", "layout_order", "query_box"]

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
        """The leaf of every row."""
        n = table.num_rows
        out = np.zeros(n, dtype=np.int64)
        if not self.nodes:
            return out
        at = np.zeros(n, dtype=np.int64)      # current node (>= 0) or leaf (< 0) of each row
        columns = {c: table.column(c) for c in self.columns}
        while True:
            active = at >= 0
            if not active.any():
                break
            for node in np.unique(at[active]):
                column, threshold, left, right = self.nodes[node]
                rows = np.flatnonzero(at == node)
                values = columns[column].take(pa.array(rows))
                goes_left = _less(values, threshold)
                at[rows] = np.where(goes_left, left, right)
        return -at - 1

    def file_of_row(self, table: pa.Table | pa.RecordBatch, rows_per_file: int) -> np.ndarray:
        """The file of every row when each leaf is cut into files of `rows_per_file` rows (as
        `optimize` writes a leaf: files of the target size), numbered from 0."""
        leaf = self.route(table)
        order = np.argsort(leaf, kind="stable")
        sorted_leaf = leaf[order]
        starts = np.flatnonzero(np.r_[True, sorted_leaf[1:] != sorted_leaf[:-1]])
        position = np.arange(len(leaf)) - np.repeat(starts, np.diff(np.r_[starts, len(leaf)]))
        chunk = position // max(rows_per_file, 1)
        files_per_leaf = np.zeros(len(starts), dtype=np.int64)
        np.maximum.at(files_per_leaf, np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(leaf)])), chunk + 1)
        first_file = np.r_[0, np.cumsum(files_per_leaf)[:-1]]
        out = np.empty(len(leaf), dtype=np.int64)
        out[order] = np.repeat(first_file, np.diff(np.r_[starts, len(leaf)])) + chunk
        return out

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
                 columns: Sequence[str] | None = None) -> QdTree:
    """Greedy cuts of the sample into about `leaves` leaves (each at least half the sample's
    share of a leaf), maximizing the rows the queries' boxes let them skip."""
    n = sample.num_rows
    if n == 0 or leaves <= 1 or not boxes:
        return QdTree([], 1)
    min_rows = max(1, n // (2 * leaves))
    usable = [c for c in (columns or sample.column_names) if any(c in b for b in boxes)]
    keys: dict[str, np.ndarray] = {}
    cuts: dict[str, tuple[np.ndarray, list[Any], np.ndarray, np.ndarray]] = {}
    for column in usable:
        arr = sample.column(column).combine_chunks()
        try:
            values = _numeric(arr)
        except (pa.ArrowException, TypeError, ValueError):
            continue
        keys[column] = values
        lows = np.array([_key(b[column][0], arr.type) if column in b and b[column][0] is not None else -np.inf
                         for b in boxes])
        highs = np.array([_key(b[column][1], arr.type) if column in b and b[column][1] is not None else np.inf
                          for b in boxes])
        # thresholds: the queries' bounds (a low bound t cuts at t; a high bound h just above h)
        raw = [(b[column][0], _key(b[column][0], arr.type)) for b in boxes if column in b and b[column][0] is not None]
        if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):  # cut just above a high bound
            raw += [(b[column][1], np.nextafter(_key(b[column][1], arr.type), np.inf)) for b in boxes
                    if column in b and b[column][1] is not None]
        if not raw:
            continue
        order = np.unique(np.array([k for _, k in raw]), return_index=True)[1]
        picked = order if len(order) <= MAX_CUTS_PER_COLUMN else \
            order[np.linspace(0, len(order) - 1, MAX_CUTS_PER_COLUMN).astype(int)]
        thresholds = np.array([raw[i][1] for i in picked])
        originals = [_threshold_value(raw[i][0], raw[i][1], arr.type) for i in picked]
        cuts[column] = (thresholds, originals, lows, highs)
    nodes: list[tuple[str, Any, int, int]] = []
    leaf_count = 0

    def grow(rows: np.ndarray, alive: np.ndarray) -> int:
        """Split `rows` (queries `alive` still read them); returns the node or leaf index."""
        nonlocal leaf_count
        best = None
        if len(rows) >= 2 * min_rows and alive.any():
            for column, (thresholds, _, lows, highs) in cuts.items():
                values = np.sort(keys[column][rows])
                left_n = np.searchsorted(values, thresholds, "left")
                ok = (left_n >= min_rows) & (len(rows) - left_n >= min_rows)
                if not ok.any():
                    continue
                skip_left = (lows[alive][None, :] >= thresholds[:, None]).sum(axis=1)
                skip_right = (highs[alive][None, :] < thresholds[:, None]).sum(axis=1)
                gain = np.where(ok, left_n * skip_left + (len(rows) - left_n) * skip_right, -1)
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


def _numeric(arr: pa.Array) -> np.ndarray:
    """Values as float64 keys (nulls as -inf: they route left, with the smallest values)."""
    dtype = arr.type
    if pa.types.is_temporal(dtype):
        arr = arr.cast(pa.int64())
    elif not (pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)):
        raise TypeError(f"no numeric key for {dtype}")
    out = np.asarray(arr.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    return np.where(np.isnan(out), -np.inf, out)


def _key(value: Any, dtype: pa.DataType) -> float:
    return float(_numeric(pa.array([value], type=dtype))[0])


def _threshold_value(original: Any, key: float, dtype: pa.DataType) -> Any:
    """The threshold as a value of the column: the bound itself, or just above a high bound."""
    if _key(original, dtype) == key:
        return original
    if pa.types.is_integer(dtype):
        return int(original) + 1
    return float(np.nextafter(float(original), np.inf))


def layout_order(rows: pa.Table | pa.RecordBatch, columns: Sequence[str], strategy: str,
                 tree: QdTree | None = None) -> np.ndarray:
    """The row order of a layout: the curves' (`cluster_order`), or leaf by leaf for a qd-tree
    (rows keep their order inside a leaf)."""
    if strategy == "qdtree":
        if tree is None:
            raise InvalidArgumentError("a qdtree layout needs its tree")
        return np.argsort(tree.route(rows), kind="stable").astype(np.int64, copy=False)
    return cluster_order(rows, list(columns), strategy)
