"""The layout advisor (seed 003's analysis and recommendation), written as rules.

Input: the table's query log (over a period), its files and a uniform sample of its rows.
Output: per lever — distribution, Bloom filters, bitmaps, in-file sort, pre-aggregates — the
current and the recommended configuration, what is kept / added / removed, the reason, and
the expected effect measured by replaying a sample of the logged queries on layouts simulated
from the row sample (`simulate`), never guessed.  The same log and files give the same advice:
the queries are put in one canonical order, the replayed ones are picked by a hash of each
query (so a few more or fewer queries change the pick by those few), the row sample is seeded,
counts tie-break by column name and layouts by a fixed order of simplicity.

The rules (shares are of the queries in the period; "filtering" = with a predicate that min/max
statistics can use: =, IN, a range, LIKE 'prefix%'):

Distribution (append tables; a primary-key table's files are sorted by its key):
  D1  A column is a clustering candidate when at least MIN_SHARE of the filtering queries filter
      it, unless it is only looked up by = / IN and has many values (more than
      BITMAP_MAX_VALUES: a Bloom filter serves those lookups without spending the layout on
      them — rule B1 then decides the filter, and says why when it adds none).  A column with
      few values is a candidate too: a layout sorted on it puts each value in a few files.
  D2  The shapes tried, from the candidates ranked by how many queries filter them (ties by
      name): linear on each of the first MAX_COLUMNS, linear on ordered pairs and on the first
      three, Z-order and Hilbert on the first two to MAX_COLUMNS, the seed's own answer (90% on
      a -> linear(a); a+b together -> linear(a, b); apart -> Hilbert), the current layout, and
      shapes with the columns filtered by at least half of MIN_SHARE; each is replayed.
  D3  Margin, not thresholds: the shapes are walked from the simplest (fewer columns, then
      linear < Z-order < Hilbert < qd-tree, then the candidates' rank).  The incumbent is the
      current layout (or the files as they are, when there is none); a shape replaces the
      incumbent only when its replay reads at least LAYOUT_MARGIN fewer bytes than the
      incumbent (MIN_GAIN fewer than files without a layout: a rewrite must pay).  So a few
      queries more or fewer near a rule's threshold cannot flip the answer, the current layout
      stays unless another is clearly better, and a simpler layout wins over a complex one that
      is about as good.  The advice says how close the decision was: `LeverAdvice.margin` is the
      smallest distance, in points of bytes saved, between a measured gain and the margin it
      was held to (a step taken, or the closest alternative left).
  D5  A workload-driven layout (a qd-tree cut on the logged predicates, `qdtree`) is fitted on
      the row sample and half of the queries, and taken instead when, replayed on the other
      half, it reads QDTREE_MARGIN (a third) fewer bytes than the walk's choice: a tree fitted
      to past predicates ages with the workload where a curve does not, so it must win clearly.
  D4  Refused outright with fewer than MIN_FILES files after a rewrite.

Indexes (judged on the recommended layout; every column considered gets a line saying why it
gets an index or why not, so no reason promises an index the recommendation lacks):
  B1  Bloom filter on a column with = / IN in at least MIN_SHARE of the queries and more distinct
      values than BITMAP_MAX_VALUES, when the replay shows it cuts the files those queries read by
      at least MIN_GAIN.
  M1  Bitmap on a column with at most BITMAP_MAX_VALUES distinct values filtered by at least
      MIN_SHARE of the queries (=, IN or a range), with the same replay condition. Never a bitmap
      on a high-cardinality column.
  X1  An index the log no longer calls for (below MIN_SHARE) is removed.

In-file sort:
  S1  The Top-N orderings (ORDER BY ... LIMIT) are pooled: an order (a, b) serves ORDER BY a too.
      The order serving the most Top-N queries is recommended when those are at least MIN_SHARE of
      the queries.

Pre-aggregates:
  P1  A GROUP BY (with its measures) used by at least MIN_SHARE of the queries, whose filters read
      only group-by columns, becomes a model, when grouping shrinks a file to at most
      MAX_AGGREGATION_RATIO of its rows (measured on real files, as the seed says).
  P2  A model no query in the period uses is removed.

Columns of a type with no order (lists, structs, maps) are left out of the sample and of every
rule, with a line saying so (`refused`); their predicates count as reading every file.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import permutations
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ....errors import InvalidArgumentError, MergeTreeError
from ...directory import TableDirectory
from ...files import DataFileMeta
from ...levers.curves import check_clusterable
from ...levers.qdtree import QdTree, build_qdtree, query_box
from ...options import (
    KEY_BITMAP_COLUMNS,
    KEY_BLOOM_COLUMNS,
    KEY_CLUSTERING_COLUMNS,
    KEY_CLUSTERING_STRATEGY,
    KEY_QDTREE,
    KEY_SORT_WITHIN,
    AggregateModel,
)
from .simulate import IndexSpec, Sample, SimulatedLayout, draw_sample, simulate
from .summary import LoggedQuery, Workload, read_log, summarize

__all__ = ["AS_NOW", "Advice", "LayoutChoice", "LeverAdvice", "advise", "advise_workload", "canonical_order",
           "choose_layout", "files_after_rewrite", "query_cost", "replay_sample"]

MIN_SHARE = 0.10
DOMINANT = 0.90
TOGETHER = 0.80
MAX_COLUMNS = 4
MIN_FILES = 4
MIN_GAIN = 0.20
LAYOUT_MARGIN = 0.10        # a more complex or different layout must read this much fewer bytes (D3)
QDTREE_MARGIN = 1 / 3       # a layout fitted to past predicates ages with the workload: it must win clearly
BITMAP_MAX_VALUES = 1_000
MAX_AGGREGATION_RATIO = 0.10
REPLAY_QUERIES = 2_000
SAMPLE_COLUMNS = 24
HLL_LG_K = 12
STRATEGY_RANK = {"linear": 0, "zorder": 1, "hilbert": 2, "qdtree": 3}
AS_NOW = ((), "as now")     # the walk's start when the table has no layout: its files as they are

Shape = tuple[tuple[str, ...], str]


@dataclass
class LeverAdvice:
    """One lever: current vs recommended, with the reason and the replayed effect."""

    lever: str                       # distribution, bloom, bitmap, sort, pre-aggregate
    current: list[str]
    recommended: list[str]
    reason: str
    queries: int = 0                 # replayed queries the lever concerns
    files_before: float | None = None   # mean expected files read by those queries
    files_after: float | None = None
    rule: str | None = None          # distribution: the seed's own answer (D2), for comparison
    margin: float | None = None      # distribution: how close the decision was (D3), in shares of bytes
    closest: str | None = None       # distribution: the alternative nearest to being chosen ...
    closest_gain: float | None = None   # ... and the share of bytes it saves against the recommendation

    @property
    def changes(self) -> list[tuple[str, str]]:
        """(item, "kept" | "added" | "removed"), as the seed's page shows them."""
        out = [(x, "kept" if x in self.current else "added") for x in self.recommended]
        return out + [(x, "removed") for x in self.current if x not in self.recommended]

    @property
    def changed(self) -> bool:
        return any(status != "kept" for _, status in self.changes)


@dataclass
class Advice:
    table: str
    queries: int
    replayed: int
    levers: list[LeverAdvice] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    options: dict[str, str | None] = field(default_factory=dict)   # what `apply` writes (None removes)
    files_before: float | None = None    # expected files per replayed query, current configuration
    files_after: float | None = None     # ... recommended configuration
    bytes_before: float | None = None
    bytes_after: float | None = None
    ndv: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def reduction(self) -> float | None:
        """Expected share of the scanned bytes saved (replay), or None."""
        if not self.bytes_before or self.bytes_after is None:
            return None
        return 1.0 - self.bytes_after / self.bytes_before

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["reduction"] = self.reduction
        for lever, raw in zip(self.levers, out["levers"]):
            raw["changes"] = lever.changes
        return out

    def decision(self) -> dict[str, Any]:
        """What the advice decides, without its timing: equal for equal advice."""
        out = self.to_json()
        out.pop("seconds", None)
        return out

    def explain(self) -> str:
        lines = [f"{self.table}: {self.queries:,} logged queries, {self.replayed:,} replayed"]
        for lever in self.levers:
            marks = ", ".join(f"{'+' if s == 'added' else '-' if s == 'removed' else '='}{x}" for x, s in lever.changes)
            effect = ""
            if lever.files_before is not None and lever.files_after is not None:
                effect = f" [{lever.queries:,} queries: {lever.files_before:.1f} -> {lever.files_after:.1f} files each]"
            lines.append(f"  {lever.lever}: {marks or '(none)'}{effect}\n    {lever.reason}")
        for reason in self.refused:
            lines.append(f"  not recommended: {reason}")
        if self.reduction is not None:
            lines.append(f"  expected: {self.files_before:.1f} -> {self.files_after:.1f} files per query, "
                         f"{self.reduction:.0%} fewer bytes scanned")
        return "\n".join(lines)


def _fewer(gain: float | None) -> str:
    if gain is None:
        return ""
    return f"{gain:.0%} fewer bytes" if gain >= 0 else f"{-gain:.0%} more bytes"


# ---------------------------------------------------------------------------
# Order and sampling: the same log gives the same advice
# ---------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _identity(q: LoggedQuery) -> str:
    ts = q.ts
    if ts is not None and ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.timezone.utc)
    return json.dumps([ts.isoformat() if ts is not None else None, q.filter_json, q.predicates, q.order_by, q.limit,
                       q.group_by, q.measures], default=str)


def canonical_order(queries: Iterable[LoggedQuery]) -> list[LoggedQuery]:
    """The queries in one order whatever order the log was read in (by time, then content)."""
    return [q for _, q in sorted(((_identity(q), q) for q in queries), key=lambda pair: pair[0])]


def _hashes(queries: Sequence[LoggedQuery]) -> np.ndarray:
    """A stable 64-bit hash per query (its content and how many equal queries came before it)."""
    seen: Counter = Counter()
    out = np.empty(len(queries), dtype=np.uint64)
    for i, q in enumerate(queries):
        identity = _identity(q)
        seen[identity] += 1
        digest = hashlib.blake2b(f"{identity}#{seen[identity]}".encode(), digest_size=8).digest()
        out[i] = int.from_bytes(digest, "little")
    return out


def replay_sample(queries: Sequence[LoggedQuery], limit: int) -> list[LoggedQuery]:
    """Up to `limit` queries: those with the smallest hashes (a uniform sample that a few more or
    fewer logged queries change by those few only), in canonical order."""
    ordered = canonical_order(queries)
    if len(ordered) <= limit:
        return ordered
    picked = np.sort(np.argsort(_hashes(ordered), kind="stable")[:limit])
    return [ordered[i] for i in picked]


def _ranked(counter: Counter) -> list[tuple[Any, int]]:
    """A counter's items by count, ties by key: most_common's ties follow insertion order,
    which follows set iteration, which changes from process to process."""
    return sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------

def estimate_ndv(sample: Sample) -> dict[str, float]:
    """Distinct values per sampled column: an Apache DataSketches HLL over the sample, scaled
    to the table for near-unique columns (a sample of n rows of a unique column shows n
    values; a low-cardinality column shows all of its values)."""
    import datasketches

    out: dict[str, float] = {}
    n = sample.rows.num_rows
    for name in sample.rows.column_names:
        column = sample.rows.column(name)
        sketch = datasketches.hll_sketch(HLL_LG_K)
        if pa.types.is_temporal(column.type) or pa.types.is_decimal(column.type) or pa.types.is_boolean(column.type):
            column = column.cast(pa.string())
        update = sketch.update
        for value in pc.unique(pc.drop_null(column)).to_pylist():
            update(value if isinstance(value, (int, float, str)) else str(value))
        seen = sketch.get_estimate()
        out[name] = seen * (sample.total_rows / n) if n and seen >= 0.5 * n else seen
    return out


def files_after_rewrite(directory: TableDirectory, metas: Sequence[DataFileMeta], target_file_size: int) -> int:
    """How many files a rewrite would write: files are rolled at the target size *in memory*
    (Arrow), so the rows' in-memory size is measured on the largest file, not taken from the
    compressed Parquet sizes."""
    if not metas:
        return 1
    largest = max(metas, key=lambda m: m.row_count)
    if largest.row_count == 0:
        return 1
    per_row = pq.read_table(f"{directory.path}/{largest.file_name}").nbytes / largest.row_count
    total_rows = sum(m.row_count for m in metas)
    return max(1, math.ceil(total_rows * per_row / max(target_file_size, 1)))


def aggregation_ratio(directory: TableDirectory, metas: Sequence[DataFileMeta], group_by: Sequence[str],
                      files: int = 3) -> float:
    """Groups per row when grouping real files by `group_by` (the largest `files` files)."""
    rows = groups = 0
    for meta in sorted(metas, key=lambda m: (-m.row_count, m.file_name))[:files]:
        data = pq.read_table(f"{directory.path}/{meta.file_name}", columns=list(group_by))
        rows += data.num_rows
        groups += data.group_by(list(group_by)).aggregate([]).num_rows if group_by else min(1, data.num_rows)
    return groups / rows if rows else 1.0


# ---------------------------------------------------------------------------
# Replay
# ---------------------------------------------------------------------------

class _Replayed:
    """The replayed queries with their filters parsed once."""

    def __init__(self, queries: Sequence[LoggedQuery], total_rows: int) -> None:
        self.queries = list(queries)
        self.filters = [_safe_filter(q) for q in self.queries]
        self.total_rows = total_rows

    def subset(self, keep: Sequence[bool]) -> _Replayed:
        out = _Replayed([], self.total_rows)
        out.queries = [q for q, k in zip(self.queries, keep) if k]
        out.filters = [f for f, k in zip(self.filters, keep) if k]
        return out

    def __len__(self) -> int:
        return len(self.queries)

    def cost(self, layout: SimulatedLayout) -> tuple[float, float]:
        """Mean (files, bytes) per query on the layout."""
        if not self.queries:
            return 0.0, 0.0
        files = size = 0.0
        for q, f in zip(self.queries, self.filters):
            one_files, one_bytes = query_cost(layout, q, f, self.total_rows)
            files += one_files
            size += one_bytes
        return files / len(self.queries), size / len(self.queries)


def query_cost(layout: SimulatedLayout, q: LoggedQuery, f: Any, total_rows: int) -> tuple[float, float]:
    """Expected (files, bytes) one query reads on the layout: the parts its filter may match,
    or, for a Top-N read, the parts its best rows sit in when fewer."""
    probability = layout.read_probability(f)
    by_filter = float(probability.sum())
    if q.is_top_n:
        top = layout.top_n_parts(q.order_by, q.limit or 0, total_rows)
        if top < by_filter:
            return top, top * layout.bytes_per_part
    return by_filter, layout.bytes_of(probability)


def _safe_filter(query: LoggedQuery) -> Any:
    try:
        return query.filter
    except InvalidArgumentError:
        return None


# ---------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------

def _layout_name(columns: Sequence[str], strategy: str) -> str:
    return f"{strategy}({', '.join(columns)})"


def _shape_name(shape: Shape) -> str:
    return "the files as they are (no layout)" if shape == AS_NOW else _layout_name(*shape)


def _distribution_rule(w: Workload, candidates: list[str]) -> tuple[list[str], str, str]:
    """(columns, strategy, reason): the seed's shapes (D2)."""
    a = candidates[0]
    share_a = w.share(a)
    if len(candidates) == 1:
        return [a], "linear", (f"{a} is the one clustering candidate ({share_a:.0%} of the filtering queries filter "
                               f"it) (seed: 90% on a -> linear a)")
    b = candidates[1]
    together = w.share_with(a, b)
    if together >= TOGETHER:
        return [a, b], "linear", (f"{together:.0%} of the queries filtering {b} also filter {a} "
                                  f"(seed: 50% a and 50% a+b -> linear a, b)")
    beyond_a = sum(n for cols, n in w.together.items() if b in cols and a not in cols) / max(w.filtering, 1)
    if share_a >= DOMINANT - 1e-9 and beyond_a <= 1 - DOMINANT + 1e-9:  # shares of whole queries: no float fuzz
        return [a], "linear", (f"{share_a:.0%} of the filtering queries filter {a}, {beyond_a:.0%} filter {b} "
                               f"without it (seed: 90% on a -> linear a)")
    columns = candidates[:MAX_COLUMNS]
    return columns, "hilbert", (f"only {together:.0%} of the queries filtering {b} also filter {a} "
                                f"(seed: 50% a and 50% b -> Hilbert)")


def _shapes(candidates: list[str], near: list[str], top_columns: list[str], seed: Shape | None) -> set[Shape]:
    """The layouts tried (D2)."""
    top = candidates[:MAX_COLUMNS]
    shapes: set[Shape] = {((c,), "linear") for c in top}
    shapes |= {((a, b), "linear") for a, b in permutations(top[:3], 2)}
    if len(top) >= 3:
        shapes.add((tuple(top[:3]), "linear"))
    for k in range(2, len(top) + 1):
        shapes |= {(tuple(top[:k]), "zorder"), (tuple(top[:k]), "hilbert")}
    tried = (candidates + near)[:MAX_COLUMNS]
    if len(tried) > len(top) and len(tried) > 1:
        shapes |= {(tuple(tried), "hilbert"), (tuple(tried), "zorder"), (tuple(tried[:2]), "linear")}
    shapes |= {((c,), "linear") for c in top_columns}
    if seed is not None:
        shapes.add(seed)
    return shapes


@dataclass
class LayoutChoice:
    """D3's walk: the pick, each step taken (from, to, gain, needed), every comparison made
    (incumbent, shape, gain, needed), and the closest alternative to the pick."""

    pick: Shape
    steps: list[tuple[Shape, Shape, float, float]]
    comparisons: list[tuple[Shape, Shape, float, float]]
    closest: Shape | None
    closest_gain: float | None

    @property
    def margin(self) -> float | None:
        """How close the decision was: the smallest distance between a gain measured in the walk
        and the margin it was held to.  Scores that each move by a few percent of that cannot
        change the pick (every comparison comes out the same)."""
        return min((abs(gain - needed) for _, _, gain, needed in self.comparisons), default=None)


def _gain(before: float, after: float) -> float:
    """The share of `before`'s bytes that `after` saves (negative: reads more)."""
    if before > 0:
        return 1.0 - after / before
    return 0.0 if after <= 0 else -math.inf


def choose_layout(scores: dict[Shape, float], start: Shape, rank: dict[str, int] | None = None) -> LayoutChoice:
    """D3: from `start` (the current layout, or AS_NOW), through the shapes from the simplest
    (fewer columns, then linear < zorder < hilbert < qdtree, then the columns' `rank`, then
    their names): a shape replaces the incumbent when it reads at least LAYOUT_MARGIN fewer bytes
    (MIN_GAIN fewer against AS_NOW).  `scores`: bytes per replayed query of each shape (and of
    `start`); the answer does not depend on the dict's order."""
    rank = rank or {}

    def simplicity(shape: Shape) -> tuple:
        columns, strategy = shape
        return len(columns), STRATEGY_RANK.get(strategy, 9), tuple(rank.get(c, len(rank)) for c in columns), \
            columns, strategy

    incumbent = start
    steps, comparisons = [], []
    for shape in sorted((s for s in scores if s != start and s != AS_NOW), key=simplicity):
        needed = MIN_GAIN if incumbent == AS_NOW else LAYOUT_MARGIN
        gain = _gain(scores[incumbent], scores[shape])
        comparisons.append((incumbent, shape, gain, needed))
        if gain >= needed:
            steps.append((incumbent, shape, gain, needed))
            incumbent = shape
    others = [s for s in scores if s != incumbent and s != AS_NOW]
    closest = max(others, key=lambda s: (_gain(scores[incumbent], scores[s]), tuple(-x for x in simplicity(s)[:2])),
                  default=None)
    closest_gain = _gain(scores[incumbent], scores[closest]) if closest is not None else None
    return LayoutChoice(incumbent, steps, comparisons, closest, closest_gain)


def _mib(n: float) -> str:
    return f"{n / 2**20:,.2f} MiB"


def advise_workload(directory: TableDirectory, queries: list[LoggedQuery], metas: Sequence[DataFileMeta],
                    sample_rows: int = 200_000, replay_queries: int = REPLAY_QUERIES) -> Advice:
    """The advice for these logged queries on the table's files (see the module docstring)."""
    started = time.perf_counter()
    schema = directory.schema.schema
    options = directory.options
    queries = canonical_order(queries)
    advice = Advice(directory.path, len(queries), 0)
    w = summarize(queries)
    if not queries:
        advice.refused.append("no queries are logged for the period: nothing to learn from")
        return advice
    known = set(schema.names)
    total_rows = sum(m.row_count for m in metas)
    parts_after = files_after_rewrite(directory, metas, options.target_file_size)
    wanted: list[str] = [c for c, _ in _ranked(w.filtered) if c in known]
    wanted += [c for c, _ in _ranked(w.equality + w.ranges) if c in known]
    wanted += [o[0][0] for o, _ in _ranked(w.orderings) if o and o[0][0] in known]
    wanted += [g for grouping, _ in _ranked(w.groupings) for g in grouping if g in known]
    if options.clustering:
        wanted += [c for c in options.clustering.columns if c in known]
    columns = list(dict.fromkeys(wanted))[:SAMPLE_COLUMNS]
    replayed = _Replayed(replay_sample(queries, replay_queries), total_rows)
    advice.replayed = len(replayed)
    if not columns or not metas:
        advice.refused.append("the logged queries filter, order and group by no column of the table's files")
        return advice
    sample = draw_sample(directory, metas, columns, sample_rows)
    for why in sample.skipped.values():
        advice.refused.append(f"left out of the simulation: {why}")
    ndv = estimate_ndv(sample)
    advice.ndv = ndv
    current_index = IndexSpec(frozenset(options.bloom_columns), frozenset(options.bitmap_columns), options.bloom_fpp)
    current = simulate(sample, "current", len(metas), None, indexes=current_index, ndv=ndv)

    # -- distribution ------------------------------------------------------------------
    layout_columns: list[str] | None = list(options.clustering.columns) if options.clustering else None
    layout_strategy = options.clustering.strategy if options.clustering else "linear"
    current_layout = [_layout_name(layout_columns, layout_strategy)] if layout_columns else []
    chosen: SimulatedLayout = current
    new_tree: QdTree | None = None
    filtering = replayed.subset([bool(q.cluster_columns) or q.is_top_n for q in replayed.queries])
    new_layout: tuple[list[str], str] | None = None
    bloom_bound: dict[str, str] = {}  # left to a Bloom filter by D1 -> the refusal's text, finished by B1
    if directory.schema.has_primary_key:
        advice.refused.append("distribution: a primary-key table's files stay sorted by its key; cluster it by "
                              "the key order, bucket key and partitioning chosen at create (indexes still apply)")
    elif parts_after < MIN_FILES:
        advice.refused.append(f"distribution: the table would have {parts_after} file(s) of the target size "
                              f"({options.target_file_size:,} bytes); clustering needs at least {MIN_FILES} files "
                              f"to skip any")
    else:
        candidates: list[str] = []
        near: list[str] = []  # below D1's share but otherwise fit: the replay may still try them
        for column, count in _ranked(w.filtered):
            if column not in known or column in sample.skipped or column not in ndv:
                continue
            try:
                check_clusterable(column, schema.field(column).type)
            except MergeTreeError as exc:
                advice.refused.append(f"distribution on {column}: {exc}")
                continue
            lookups_only = w.equality[column] >= 0.9 * count and ndv[column] > BITMAP_MAX_VALUES
            if w.share(column) < MIN_SHARE:
                advice.refused.append(f"distribution on {column}: only {w.share(column):.1%} of the filtering "
                                      f"queries filter it (rule D1: at least {MIN_SHARE:.0%})")
                if w.share(column) >= MIN_SHARE / 2 and not lookups_only:
                    near.append(column)
            elif lookups_only:
                bloom_bound[column] = (f"distribution on {column}: it is only looked up by = or IN and has about "
                                       f"{ndv[column]:,.0f} distinct values, which a Bloom filter answers without "
                                       f"spending the layout on it (rule D1)")
            else:
                candidates.append(column)
        top_columns = [o[0][0] for o, n in _ranked(w.orderings)
                       if o[0][0] in known and o[0][0] in ndv and n / w.total >= MIN_SHARE]
        top_columns = list(dict.fromkeys(top_columns))
        if (candidates or top_columns) and len(filtering):
            seed: Shape | None = None
            if candidates:
                seed_columns, seed_strategy, seed_reason = _distribution_rule(w, candidates)
                seed = (tuple(seed_columns), seed_strategy)
            else:
                seed = ((top_columns[0],), "linear")
                seed_reason = (f"{_ranked(w.orderings)[0][1] / w.total:.0%} of the queries are Top-N reads by "
                               f"{top_columns[0]}: files tight on it let them stop after one file")
            shapes = _shapes(candidates, near, top_columns, seed)
            rank = {c: i for i, c in enumerate(dict.fromkeys(candidates + near + top_columns))}
            start: Shape = AS_NOW
            if layout_columns and all(c in sample.rows.column_names for c in layout_columns) \
                    and layout_strategy != "qdtree":
                start = (tuple(layout_columns), layout_strategy)
                shapes.add(start)
            layout_index = IndexSpec(current_index.bloom | set(bloom_bound), current_index.bitmap, current_index.fpp)
            as_now = current.with_indexes(layout_index)
            layouts: dict[Shape, SimulatedLayout] = {AS_NOW: as_now}
            if layout_strategy == "qdtree" and options.clustering is not None and options.clustering.tree is not None \
                    and all(c in sample.rows.column_names for c in options.clustering.tree.columns):
                tree_now = options.clustering.tree
                files_of_rows = tree_now.file_of_row(sample.rows, max(1, sample.rows.num_rows // parts_after))
                start = (tuple(tree_now.columns), "qdtree")
                layouts[start] = simulate(sample, current_layout[0], int(files_of_rows.max()) + 1 if len(files_of_rows)
                                          else 1, part_of_row=files_of_rows, indexes=layout_index, ndv=ndv)
            for shape in sorted(shapes - set(layouts)):
                layouts[shape] = simulate(sample, _layout_name(*shape), parts_after, shape[0], shape[1],
                                          layout_index, ndv)
            costs = {shape: replayed.cost(layout) for shape, layout in layouts.items()}
            scores = {shape: cost[1] for shape, cost in costs.items()}
            walk = choose_layout(scores, start, rank)
            pick = walk.pick
            decision = _walk_text(walk, scores, start)
            # D5: the workload-driven layout, fitted on half of the queries and judged on the
            # other half against the walk's pick (a tree fitted to past ranges must also serve
            # new ones); halves by each query's hash, so that they are the same for the same log
            halves = (_hashes(filtering.queries) & np.uint64(1)) == 0
            fit, held_out = filtering.subset(halves), filtering.subset(~halves)
            boxes = [box for box in (query_box(f) for f in fit.filters) if box]
            tree_note = ""
            if candidates and boxes and len(held_out):
                tree = build_qdtree(sample.rows, boxes, parts_after, candidates)
                if tree.leaves > 1:
                    # each leaf is written as files of the target size, as optimize does
                    files_of_rows = tree.file_of_row(sample.rows, max(1, sample.rows.num_rows // parts_after))
                    tree_parts = int(files_of_rows.max()) + 1
                    tree_layout = simulate(sample, "qdtree", tree_parts, part_of_row=files_of_rows,
                                           indexes=layout_index, ndv=ndv)
                    tree_bytes = held_out.cost(tree_layout)[1]
                    pick_bytes = held_out.cost(layouts[pick])[1]
                    tree_gain = _gain(pick_bytes, tree_bytes)
                    name_of_tree = f"qdtree({', '.join(tree.columns)}; {tree.leaves} leaves)"
                    walk.comparisons.append((pick, (tuple(tree.columns), "qdtree"), tree_gain, QDTREE_MARGIN))
                    if tree_gain >= QDTREE_MARGIN and pick != (tuple(tree.columns), "qdtree"):
                        tree_note = (f"; on queries the tree was not fitted on, a {name_of_tree} cut on the logged "
                                     f"predicates reads {tree_gain:.0%} fewer bytes than {_shape_name(pick)} "
                                     f"(rule D5: at least {QDTREE_MARGIN:.0%})")
                        new_tree = tree
                        pick = (tuple(tree.columns), "qdtree")
                        layouts[pick], costs[pick] = tree_layout, replayed.cost(tree_layout)
                        walk.closest, walk.closest_gain = walk.pick, -tree_gain   # the curve it beat
                    else:
                        tree_note = (f"; a {name_of_tree} reads {_fewer(tree_gain)} than {_shape_name(pick)} on "
                                     f"queries it was not fitted on (rule D5: needs {QDTREE_MARGIN:.0%} fewer)")
            shares = ", ".join(f"{c} {w.share(c):.0%}" for c in candidates[:MAX_COLUMNS])
            margin = walk.margin
            reason = (f"{len(replayed):,} queries replayed on {len(layouts) - 1} simulated layouts; "
                      f"filtered: {shares or 'no candidate'} of the filtering queries; "
                      + decision + tree_note
                      + (f"; decided by a margin of {margin:.1%} of the bytes" if margin is not None else "")
                      + f" (seed's rule: {seed_reason})")
            before_files = costs[AS_NOW][0]
            after_files = costs[pick][0]
            name = (f"qdtree({', '.join(new_tree.columns)}; {new_tree.leaves} leaves)" if new_tree is not None
                    else _layout_name(*pick) if pick != AS_NOW else "")
            lever = LeverAdvice("distribution", current_layout, current_layout, reason, len(replayed),
                                before_files, after_files, rule=_layout_name(*seed), margin=walk.margin,
                                closest=_shape_name(walk.closest) if walk.closest is not None else None,
                                closest_gain=walk.closest_gain)
            if pick not in (start, AS_NOW):
                new_layout = (list(pick[0]), pick[1])
                chosen = layouts[pick]
                lever.recommended = [name]
            elif pick == start and start != AS_NOW:
                chosen = layouts[start]
            advice.levers.append(lever)

    # -- indexes -----------------------------------------------------------------------
    bloom_now, bitmap_now = set(options.bloom_columns), set(options.bitmap_columns)
    bloom_new, bitmap_new = set(bloom_now), set(bitmap_now)
    index_notes: dict[str, list[str]] = {"bloom": [], "bitmap": []}
    base = chosen.with_indexes(IndexSpec(fpp=options.bloom_fpp))
    index_effect: dict[str, tuple[int, float, float]] = {}
    for column in sorted(set(w.equality) | set(w.ranges) | bloom_now | bitmap_now | set(bloom_bound)):
        if column not in known:
            continue
        share_eq = w.equality[column] / w.total
        share_any = (w.equality[column] + w.ranges[column]) / w.total
        distinct = ndv.get(column)
        if column in sample.skipped:
            for existing, now in (("bloom", bloom_now), ("bitmap", bitmap_now)):
                if column in now:
                    index_notes[existing].append(f"{column}: kept, not simulated ({sample.skipped[column]})")
            continue
        concerned = replayed.subset([any(c == column for c, _ in q.predicates) for q in replayed.queries])
        kind = None
        if distinct is not None and distinct > BITMAP_MAX_VALUES and share_eq >= MIN_SHARE:
            kind = "bloom"
        elif distinct is not None and distinct <= BITMAP_MAX_VALUES and share_any >= MIN_SHARE:
            kind = "bitmap"
        if kind is None:
            for existing, now, new in (("bloom", bloom_now, bloom_new), ("bitmap", bitmap_now, bitmap_new)):
                if column in now:
                    new.discard(column)
                    index_notes[existing].append(f"{column}: {share_any:.0%} of the queries filter it now "
                                                 f"(rule X1: removed below {MIN_SHARE:.0%})")
            if distinct is not None and distinct > BITMAP_MAX_VALUES and share_eq < MIN_SHARE <= share_any:
                index_notes["bitmap"].append(f"{column}: filtered by ranges but about {distinct:,.0f} distinct "
                                             f"values: no bitmap on a high-cardinality column (rule M1)")
            if column in bloom_bound:
                bloom_bound[column] += (f"; but only {share_eq:.0%} of the queries look it up (rule B1: a Bloom "
                                        f"filter needs {MIN_SHARE:.0%}), so none is recommended")
            continue
        spec = IndexSpec(frozenset({column}) if kind == "bloom" else frozenset(),
                         frozenset({column}) if kind == "bitmap" else frozenset(), options.bloom_fpp)
        without = concerned.cost(base)[0]
        with_index = concerned.cost(base.with_indexes(spec))[0]
        store = bloom_new if kind == "bloom" else bitmap_new
        what = "a Bloom filter" if kind == "bloom" else "a bitmap"
        rule = "B1" if kind == "bloom" else "M1"
        if len(concerned) and with_index <= without * (1 - MIN_GAIN):
            store.add(column)
            index_effect[column] = (len(concerned), without, with_index)
            index_notes[kind].append(f"{what} serves {column}: {share_any:.0%} of the queries filter it "
                                     f"({share_eq:.0%} by = or IN), about {distinct:,.0f} distinct values; replay: "
                                     f"{without:.1f} -> {with_index:.1f} files for those queries (rule {rule})")
            if column in bloom_bound and kind == "bloom":
                bloom_bound[column] += "; recommended (see bloom)"
        else:
            store.discard(column)
            verdict = "removed" if column in (bloom_now if kind == "bloom" else bitmap_now) else "not added"
            index_notes[kind].append(f"{what} on {column} would not pay on the recommended layout: replay "
                                     f"{without:.1f} -> {with_index:.1f} files for its {len(concerned):,} queries "
                                     f"(rule {rule}: at least {MIN_GAIN:.0%} fewer; {verdict})")
            if column in bloom_bound:
                bloom_bound[column] += (f"; but {what} on it would not pay here ({without:.1f} -> "
                                        f"{with_index:.1f} files, rule {rule}), so none is recommended")
    advice.refused.extend(bloom_bound.values())
    for kind, now, new in (("bloom", bloom_now, bloom_new), ("bitmap", bitmap_now, bitmap_new)):
        if now or new or index_notes[kind]:
            effects = [index_effect[c] for c in sorted(new - now) if c in index_effect]
            lever = LeverAdvice(kind, sorted(now), sorted(new), "; ".join(index_notes[kind]) or "unchanged")
            if effects:
                lever.queries = sum(e[0] for e in effects)
                lever.files_before = sum(e[0] * e[1] for e in effects) / lever.queries
                lever.files_after = sum(e[0] * e[2] for e in effects) / lever.queries
            advice.levers.append(lever)

    # -- in-file sort ------------------------------------------------------------------
    sort_now = list(options.sort_within)
    sort_new = sort_now
    sort_reason = "no Top-N queries in the period" if not w.top_n else ""
    if w.top_n and not directory.schema.has_primary_key:
        served: Counter = Counter()
        for ordering, _ in _ranked(w.orderings):
            columns_of = tuple(c for c, _ in ordering)
            for other, n in w.orderings.items():
                if tuple(c for c, _ in other) == columns_of[:len(other)]:
                    served[columns_of] += n
        best, count = _ranked(served)[0]
        if count / w.total >= MIN_SHARE and all(c in known for c in best):
            sort_new = list(best)
            sort_reason = (f"{count / w.total:.0%} of the queries are Top-N reads that the order "
                           f"({', '.join(best)}) serves (an order serves its prefixes too) (rule S1)")
        else:
            sort_reason = f"Top-N reads are {w.top_n / w.total:.0%} of the queries (rule S1: below {MIN_SHARE:.0%})"
    if sort_now or sort_new != sort_now or w.top_n:
        advice.levers.append(LeverAdvice("sort", sort_now, sort_new, sort_reason))

    # -- pre-aggregates ----------------------------------------------------------------
    models_now = dict(options.aggregate_models)
    models_new: dict[str, AggregateModel] = {}
    ratios_by_grouping: dict[tuple[str, ...], float] = {}
    notes = []
    for grouping, count in _ranked(w.groupings):
        if count / w.total < MIN_SHARE or not all(g in known for g in grouping):
            continue
        usable = [q for q in queries if q.group_by == grouping
                  and {c for c, _ in q.predicates if c} <= set(grouping)]
        if len(usable) / w.total < MIN_SHARE:
            notes.append(f"GROUP BY {', '.join(grouping) or '()'}: most of its queries filter other columns, which "
                         f"a pre-aggregate cannot answer (rule P1)")
            continue
        ratio = ratios_by_grouping[tuple(grouping)] = aggregation_ratio(directory, metas, grouping)
        if ratio > MAX_AGGREGATION_RATIO:
            notes.append(f"GROUP BY {', '.join(grouping) or '()'}: files keep {ratio:.0%} of their rows after "
                         f"grouping; a pre-aggregate would not pay (rule P1: at most {MAX_AGGREGATION_RATIO:.0%})")
            continue
        measures = tuple(sorted({m for q in usable for m in q.measures if m[0] == "*" or m[0] in known}))
        if not measures:
            continue
        kept = next((m for m in models_now.values() if tuple(m.group_by) == grouping
                     and set(measures) <= set(m.measures)), None)
        model_name = kept.name if kept else "by_" + ("_".join(grouping) or "all")
        models_new[model_name] = kept or AggregateModel(model_name, tuple(grouping), measures)
        notes.append(f"{model_name}: {len(usable) / w.total:.0%} of the queries group by ({', '.join(grouping)}); "
                     f"files shrink to {ratio:.1%} of their rows (rule P1)")
    for name in sorted(models_now):
        if name not in models_new:
            notes.append(f"{name}: no query in the period uses it (rule P2: removed)")
    if models_now or models_new or notes:
        describe = lambda m: f"{m.name}({', '.join(m.group_by)}: {', '.join(f'{c}:{f}' for c, f in m.measures)})"  # noqa: E731
        advice.levers.append(LeverAdvice("pre-aggregate", sorted(describe(m) for m in models_now.values()),
                                         sorted(describe(m) for m in models_new.values()), "; ".join(notes)))

    # -- the options `apply` writes, and the overall effect -----------------------------
    opts: dict[str, str | None] = {}
    if new_layout is not None:
        opts[KEY_CLUSTERING_COLUMNS] = ",".join(new_layout[0])
        opts[KEY_CLUSTERING_STRATEGY] = new_layout[1]
        opts[KEY_QDTREE] = new_tree.to_json() if new_tree is not None else None
    if bloom_new != bloom_now:
        opts[KEY_BLOOM_COLUMNS] = ",".join(sorted(bloom_new)) or None
    if bitmap_new != bitmap_now:
        opts[KEY_BITMAP_COLUMNS] = ",".join(sorted(bitmap_new)) or None
    if sort_new != sort_now:
        opts[KEY_SORT_WITHIN] = ",".join(sort_new) or None
    for name in sorted(models_now):
        if name not in models_new:
            opts[f"aggregate.{name}.group-by"] = None
            opts[f"aggregate.{name}.measures"] = None
    for name, model in sorted(models_new.items()):
        if name not in models_now:
            opts[f"aggregate.{name}.group-by"] = ",".join(model.group_by)
            opts[f"aggregate.{name}.measures"] = ",".join(f"{c}:{f}" for c, f in model.measures)
    advice.options = opts

    final = chosen.with_indexes(IndexSpec(frozenset(bloom_new), frozenset(bitmap_new), options.bloom_fpp))
    # measured once per grouping (reading real files): P1 measured the new models' already
    ratios = {m.name: ratios_by_grouping.get(tuple(m.group_by)) or aggregation_ratio(directory, metas, m.group_by)
              for m in models_new.values()}
    before_files = after_files = before_bytes = after_bytes = 0.0
    for q, f in zip(replayed.queries, replayed.filters):
        b_files, b_bytes = query_cost(current, q, f, total_rows)
        a_files, a_bytes = query_cost(final, q, f, total_rows)
        covering = next((m for m in models_new.values() if q.is_aggregate and set(q.group_by) <= set(m.group_by)
                         and set(q.measures) <= set(m.measures)
                         and {c for c, _ in q.predicates if c} <= set(m.group_by)), None)
        before_files += b_files
        after_files += a_files
        before_bytes += b_bytes
        after_bytes += a_bytes * (ratios[covering.name] if covering else 1.0)
    n = max(len(replayed), 1)
    advice.files_before, advice.files_after = before_files / n, after_files / n
    advice.bytes_before, advice.bytes_after = before_bytes / n, after_bytes / n
    advice.seconds = time.perf_counter() - started
    return advice


def _walk_text(walk: LayoutChoice, scores: dict[Shape, float], start: Shape) -> str:
    """D3's decision in words: the steps taken, or why the start stands, and the closest call."""
    parts = [f"{_shape_name(start)} reads {_mib(scores[start])} per query"]
    for before, after, gain, needed in walk.steps:
        parts.append(f"{_shape_name(after)} reads {_mib(scores[after])}, {gain:.0%} fewer than "
                     f"{_shape_name(before)} (needed: {needed:.0%})")
    if not walk.steps:
        parts.append(f"no layout reads {MIN_GAIN if start == AS_NOW else LAYOUT_MARGIN:.0%} fewer bytes, so "
                     f"{'the files stay as they are' if start == AS_NOW else 'the current layout stays'}")
    if walk.closest is not None and walk.closest_gain is not None:
        needed = MIN_GAIN if walk.pick == AS_NOW else LAYOUT_MARGIN
        parts.append(f"the closest alternative, {_shape_name(walk.closest)}, reads {_fewer(walk.closest_gain)} than "
                     f"{_shape_name(walk.pick)} ({'a change needs' if walk.closest_gain >= 0 else 'against'} "
                     f"{needed:.0%})")
    return "; ".join(parts) + " (rule D3)"


def advise(directory: TableDirectory, since: dt.timedelta | dt.datetime | None = None,
           sample_rows: int = 200_000, replay_queries: int = REPLAY_QUERIES) -> Advice:
    """Analyze the table's query log (queries newer than `since`) and its data."""
    if sample_rows < 1000:
        raise InvalidArgumentError(f"sample_rows must be at least 1000, not {sample_rows!r}")
    queries = read_log(directory.path, since)
    snapshot = directory.latest_snapshot()
    metas = [e.file for e in directory.live_files(snapshot).values()] if snapshot else []
    return advise_workload(directory, queries, metas, sample_rows, replay_queries)


def advice_json(advice: Advice) -> str:
    return json.dumps(advice.to_json(), indent=2, default=str)
