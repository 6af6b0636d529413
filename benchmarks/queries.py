"""The layout workload's queries, shared by the layout and advisor harnesses
(``benchmarks/bench_layout.py``, ``benchmarks/bench_advisor.py``) and ``asv_bench``'s layout
benchmarks: generated over the rows of ``data.make_layout_data`` with a fixed seed per workload,
their expected answers computed with numpy from the generated rows, and the runner that sends
one through a mergetree ``Table`` and reports what it read.

The workloads:

* ``90/10 a|b``: 90% a range on ``a``, 10% a range on ``b``;
* ``50/50 a|a+b``: half a range on ``a``, half a range on ``a`` AND one on ``b``;
* ``50/50 a|b``: half on ``a``, half on ``b`` (every range selects about 1% of the rows:
  ``a`` a window of 1% of its domain, ``b`` between two of its percentiles);
* ``point id``: ``id = k``, 80% existing ids, 20% absent (odd) ones;
* ``top-10 ts``: the 10 newest rows (``order_by=[("ts", "desc")], limit=10``), half with no
  filter, half with the light filter ``category != c`` (c random);
* ``group-by category``: ``aggregate("category", {"amount": "sum"} plus, each with a chance
  of one half, ``qty`` sum and the row count)``, half with no filter, half with ``category IN``
  1 to 5 random categories.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergetree import Table

from .data import A_SPAN, CATEGORIES, LAYOUT_SCHEMA, LAYOUT_SEED, LayoutData

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_FILES",
    "DEFAULT_QUERIES",
    "DEFAULT_ROWS",
    "MODEL",
    "QUICK_BUDGET",
    "TOP_N",
    "WORKLOADS",
    "W_90_10",
    "W_A_AB",
    "W_A_B",
    "W_GROUP",
    "W_POINT",
    "W_TOP",
    "MergetreeRunner",
    "Query",
    "check_answer",
    "expected_rows",
    "expected_top",
    "make_queries",
    "quick_sizes",
    "row_mask",
    "sidecar_bytes",
]

W_90_10 = "90/10 a|b"
W_A_AB = "50/50 a|a+b"
W_A_B = "50/50 a|b"
W_POINT = "point id"
W_TOP = "top-10 ts"
W_GROUP = "group-by category"
WORKLOADS = (W_90_10, W_A_AB, W_A_B, W_POINT, W_TOP, W_GROUP)

# the sizes the layout and advisor harnesses run by default
DEFAULT_ROWS = 10_000_000
DEFAULT_FILES = 200
DEFAULT_QUERIES = 1_000  # per workload
QUICK_FACTOR = 10
DEFAULT_BUDGET = 5.0    # seconds of queries run per (layout, workload); the rest are planned
QUICK_BUDGET = 0.4

SELECTIVITY = 0.01      # of each range predicate
EXISTING_IDS = 0.8
TOP_N = 10
MODEL = "by_category"   # the pre-aggregate GROUP BY queries can be answered from (when a table has it)


def quick_sizes(rows: int, queries: int) -> tuple[int, int]:
    """``--quick``: rows and queries divided by 10; the number of files stays (so % of files compare)."""
    return max(rows // QUICK_FACTOR, 1), max(queries // QUICK_FACTOR, 1)


# ---------------------------------------------------------------- queries


@dataclass(frozen=True)
class Query:
    kind: str                   # "filter", "top" or "group"
    filter: list | None         # mergetree filter: a list of (column, op, value), all of them
    measures: dict | None = None  # group: column -> function

    @property
    def where(self) -> str | None:
        """The filter as SQL (delta-rs's file pruning predicate and DataFusion's WHERE)."""
        if not self.filter:
            return None
        return " AND ".join(_sql(leaf) for leaf in self.filter)

    def sql(self) -> str:
        where = f" WHERE {self.where}" if self.where else ""
        if self.kind == "filter":
            return f"SELECT * FROM t{where}"
        if self.kind == "top":
            return f"SELECT * FROM t{where} ORDER BY ts DESC, id ASC LIMIT {TOP_N}"
        measures = ", ".join(_sql_measure(c, f) for c, f in (self.measures or {}).items())
        return f"SELECT category, {measures} FROM t{where} GROUP BY category ORDER BY category"


def _sql_value(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return repr(value)
    return str(int(value))


def _sql(leaf: tuple) -> str:
    column, op, value = leaf
    if op == "in":
        return f"{column} IN ({', '.join(_sql_value(v) for v in value)})"
    return f"{column} {'<>' if op == '!=' else op} {_sql_value(value)}"


def _sql_measure(column: str, function: str) -> str:
    if column == "*":
        return "count(*) AS rows_count"
    return f"{function}({column}) AS {column}_{function}"


def _a_range(rng: np.random.Generator) -> list:
    width = int(A_SPAN * SELECTIVITY)
    low = int(rng.integers(0, A_SPAN - width))
    return [("a", ">=", low), ("a", "<", low + width)]


def _b_range(rng: np.random.Generator, data: LayoutData) -> list:
    sample = data.b_sorted_sample
    q = rng.uniform(0.0, 1.0 - SELECTIVITY)
    low = float(sample[int(q * (len(sample) - 1))])
    high = float(sample[int((q + SELECTIVITY) * (len(sample) - 1))])
    return [("b", ">=", low), ("b", "<", high)]


def make_queries(data: LayoutData, workload: str, count: int, seed: int = LAYOUT_SEED) -> list[Query]:
    """``count`` queries of one workload, the same for every layout."""
    rng = np.random.default_rng([seed, WORKLOADS.index(workload)])
    out = []
    for _ in range(count):
        pick = rng.random()
        if workload == W_90_10:
            out.append(Query("filter", _a_range(rng) if pick < 0.9 else _b_range(rng, data)))
        elif workload == W_A_AB:
            out.append(Query("filter", _a_range(rng) if pick < 0.5 else _a_range(rng) + _b_range(rng, data)))
        elif workload == W_A_B:
            out.append(Query("filter", _a_range(rng) if pick < 0.5 else _b_range(rng, data)))
        elif workload == W_POINT:
            if pick < EXISTING_IDS:
                key = int(data.columns["id"][rng.integers(0, data.rows)])
            else:
                key = int(rng.integers(0, data.rows)) * 2 + 1  # odd: absent, inside every file's id range
            out.append(Query("filter", [("id", "=", key)]))
        elif workload == W_TOP:
            excluded = CATEGORIES[int(rng.integers(0, len(CATEGORIES)))]
            out.append(Query("top", None if pick < 0.5 else [("category", "!=", excluded)]))
        elif workload == W_GROUP:
            measures = {"amount": "sum"}
            if rng.random() < 0.5:
                measures["qty"] = "sum"
            if rng.random() < 0.5:
                measures["*"] = "count"
            chosen = None
            if pick >= 0.5:
                size = int(rng.integers(1, 6))
                chosen = [("category", "in", sorted(rng.choice(CATEGORIES, size=size, replace=False).tolist()))]
            out.append(Query("group", chosen, measures))
        else:
            raise ValueError(f"unknown workload {workload!r}")
    return out


# ---------------------------------------------------------------- expected answers


def row_mask(data: LayoutData, f: list | None, at: np.ndarray | None = None) -> np.ndarray:
    """Which rows (of all, or of the positions ``at``) pass the conjunction ``f``."""
    size = data.rows if at is None else len(at)
    keep = np.ones(size, dtype=bool)
    for column, op, value in f or []:
        values = data.columns[column] if at is None else data.columns[column][at]
        if column == "category":
            value = [CATEGORIES.index(v) for v in value] if op == "in" else CATEGORIES.index(value)
        if op == ">=":
            keep &= values >= value
        elif op == "<":
            keep &= values < value
        elif op == "=":
            keep &= values == value
        elif op == "!=":
            keep &= values != value
        elif op == "in":
            keep &= np.isin(values, value)
        else:
            raise ValueError(f"no expected answer for operator {op!r}")
    return keep


def expected_rows(data: LayoutData, query: Query) -> pa.Table:
    """The rows a filter query returns, sorted by id."""
    where = np.flatnonzero(row_mask(data, query.filter))
    where = where[np.argsort(data.columns["id"][where], kind="stable")]
    return data.table.take(pa.array(where)).combine_chunks()


def expected_top(data: LayoutData, query: Query) -> pa.Table:
    order = data.top_order()
    for span in (4096, len(order)):
        candidates = order[:span]
        chosen = candidates[row_mask(data, query.filter, candidates)][:TOP_N]
        if len(chosen) == TOP_N or span == len(order):
            return data.table.take(pa.array(chosen)).combine_chunks()
    raise AssertionError("unreachable")


def _expected_groups(data: LayoutData, query: Query) -> dict:
    """category -> {measure column: value}, categories in order."""
    codes = data.columns["category"]
    keep = row_mask(data, query.filter)
    kept = codes[keep]
    counts = np.bincount(kept, minlength=len(CATEGORIES))
    sums = {}
    for column, function in (query.measures or {}).items():
        if column == "*":
            sums["rows_count"] = counts
        else:
            values = np.bincount(kept, weights=data.columns[column][keep], minlength=len(CATEGORIES))
            sums[f"{column}_{function}"] = values.round().astype(np.int64) if column == "qty" else values
    return {CATEGORIES[i]: {name: v[i] for name, v in sums.items()} for i in range(len(CATEGORIES)) if counts[i]}


def _sorted_by_id(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, [("id", "ascending")])).combine_chunks()


def check_answer(data: LayoutData, query: Query, got: pa.Table, ids_only: bool = False) -> str:
    """'ok' when ``got`` is the query's answer (``ids_only``: the same ids, for filter queries
    through another engine, whose column types may differ)."""
    if query.kind == "group":
        return _check_groups(_expected_groups(data, query), got)
    expected = expected_rows(data, query) if query.kind == "filter" else expected_top(data, query)
    if got.num_rows != expected.num_rows:
        return f"wrong: {got.num_rows:,} rows, expected {expected.num_rows:,}"
    if ids_only:
        have = np.asarray(got.column("id").to_numpy(), dtype=np.int64)
        if query.kind == "filter":
            have = np.sort(have)
        want = expected.column("id").to_numpy()
        return "ok" if np.array_equal(have, want) else "wrong: other rows than expected (ids differ)"
    if query.kind == "filter":
        got = _sorted_by_id(got)
    got = got.select(LAYOUT_SCHEMA.names).combine_chunks()
    if not got.equals(expected):
        for name in LAYOUT_SCHEMA.names:
            if not got.column(name).equals(expected.column(name)):
                return f"wrong: the values of {name!r} differ from the expected rows"
        return "wrong: the rows differ from the expected ones"
    return "ok"


def _check_groups(expected: dict, got: pa.Table) -> str:
    rows = got.to_pylist()
    names = [r.get("category") for r in rows]
    if names != list(expected):
        return f"wrong: groups {names}, expected {list(expected)}"
    for row in rows:
        for name, want in expected[row["category"]].items():
            have = row.get(name)
            if have is None:
                return f"wrong: no column {name!r}"
            if isinstance(want, np.floating) or isinstance(have, float):
                if not math.isclose(float(have), float(want), rel_tol=1e-9, abs_tol=1e-6):
                    return f"wrong: {row['category']} {name} = {have}, expected {float(want)}"
            elif int(have) != int(want):
                return f"wrong: {row['category']} {name} = {have}, expected {int(want)}"
    return "ok"


# ---------------------------------------------------------------- running them through a Table


class MergetreeRunner:
    def __init__(self, table: Table, data: LayoutData, sidecar_bytes: dict[str, int]) -> None:
        self.table, self.data, self.sidecar_bytes = table, data, sidecar_bytes

    def run(self, query: Query) -> tuple[pa.Table, int, int, int]:
        """Run one query: (answer, files read, bytes read, files answered from pre-aggregates)."""
        if query.kind == "filter":
            out = self.table.read(filter=query.filter)
        elif query.kind == "top":
            out = self.table.read(filter=query.filter, order_by=[("ts", "desc")], limit=TOP_N)
        else:
            out = self.table.aggregate("category", query.measures, filter=query.filter)
        stats = self.table.last_read
        extra = 0
        if stats.used_preaggregates:
            # bytes of the pre-aggregate sidecars read: every file's when all were used
            total = sum(self.sidecar_bytes.values())
            extra = total if stats.used_preaggregates >= len(self.sidecar_bytes) else \
                int(total * stats.used_preaggregates / max(len(self.sidecar_bytes), 1))
        return out, stats.files_read, stats.bytes_read + extra, stats.used_preaggregates

    def plan(self, query: Query) -> tuple[int, int]:
        files = self.table.plan(query.filter).files
        return len(files), sum(m.file_size for m in files)


def sidecar_bytes(table: Table, model: str) -> dict[str, int]:
    out = {}
    for m in table.plan().files:
        for name in m.sidecars():
            if f".agg-{model}." in name:
                out[m.file_name] = os.path.getsize(os.path.join(table.path, name))
    return out
