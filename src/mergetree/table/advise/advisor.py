"""The layout advisor (seed 003's analysis and recommendation), written as rules.

Input: the table's query log (over a period), its files and a uniform sample of its rows.
Output: per lever — distribution, Bloom filters, bitmaps, in-file sort, pre-aggregates — the
current and the recommended configuration, what is kept / added / removed, the reason, and
the expected effect measured by replaying a sample of the logged queries on layouts simulated
from the row sample (`simulate`), never guessed.

The rules (shares are of the queries in the period; "filtering" = with a predicate that min/max
statistics can use: =, IN, a range, LIKE 'prefix%'):

Distribution (append tables; a primary-key table's files are sorted by its key):
  D1  A column is a clustering candidate when at least MIN_SHARE of the filtering queries filter
      it and it has at least as many distinct values as the table would have files (a column
      with fewer values leaves files that hold every value: a bitmap serves it better), unless it
      is only looked up by = / IN and has many values (a Bloom filter serves those lookups and the
      layout is kept for the columns filtered by ranges).
  D2  The seed's three shapes, on the two most filtered candidates a and b (with no candidate but
      frequent Top-N reads: linear on the Top-N order column):
      - a is filtered by at least DOMINANT of the filtering queries and b by few (< MIN_SHARE
        beyond a's queries) -> linear(a);
      - most queries filtering b also filter a (>= TOGETHER) -> linear(a, b);
      - otherwise (a and b filtered apart) -> Hilbert over the candidates (at most MAX_COLUMNS).
  D3  The replay decides between the rule's choice and the other shapes (linear on the first
      candidate, linear on the first two, Z-order and Hilbert on the candidates, also with columns
      filtered by at least half of MIN_SHARE): a shape that reads at least REPLAY_MARGIN fewer
      files than the rule's is taken instead, with the reason; `LeverAdvice.rule` keeps the
      rule's own answer.
  D5  A workload-driven layout (a qd-tree cut on the logged predicates, `qdtree`) is fitted on
      the row sample and half of the queries, and taken instead when, replayed on the other
      half, it reads QDTREE_MARGIN (a third) fewer of the files than the chosen curve: a tree
      fitted to past predicates ages with the workload where a curve does not, so it must win
      clearly.
  D4  Nothing changes unless the chosen layout reads at least MIN_GAIN fewer files than the
      current one; refused outright with fewer than MIN_FILES files after a rewrite.

Indexes:
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
"""
from __future__ import annotations

import datetime as dt
import json
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import InvalidArgumentError
from ..curves import check_clusterable
from ..directory import TableDirectory
from ..files import DataFileMeta
from ..options import (
    KEY_BITMAP_COLUMNS,
    KEY_BLOOM_COLUMNS,
    KEY_CLUSTERING_COLUMNS,
    KEY_CLUSTERING_STRATEGY,
    KEY_QDTREE,
    KEY_SORT_WITHIN,
    AggregateModel,
)
from ..qdtree import QdTree, build_qdtree, query_box
from .simulate import IndexSpec, Sample, SimulatedLayout, draw_sample, simulate
from .workload import LoggedQuery, Workload, read_log, summarize

__all__ = ["Advice", "LeverAdvice", "advise", "advise_workload", "files_after_rewrite"]

MIN_SHARE = 0.10
DOMINANT = 0.90
TOGETHER = 0.80
MAX_COLUMNS = 4
MIN_FILES = 4
MIN_GAIN = 0.20
REPLAY_MARGIN = 0.05
QDTREE_MARGIN = 1 / 3   # a layout fitted to past predicates ages with the workload: it must win clearly
BITMAP_MAX_VALUES = 1_000
MAX_AGGREGATION_RATIO = 0.10
REPLAY_QUERIES = 2_000
SAMPLE_COLUMNS = 12
HLL_LG_K = 12


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
    rule: str | None = None          # distribution: what the rules alone chose (the seed's answer)

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
    for meta in sorted(metas, key=lambda m: -m.row_count)[:files]:
        data = pq.read_table(f"{directory.path}/{meta.file_name}", columns=list(group_by))
        rows += data.num_rows
        groups += data.group_by(list(group_by)).aggregate([]).num_rows if group_by else min(1, data.num_rows)
    return groups / rows if rows else 1.0


# ---------------------------------------------------------------------------
# Replay
# ---------------------------------------------------------------------------

def _replay_sample(queries: list[LoggedQuery], limit: int, seed: int = 0) -> list[LoggedQuery]:
    if len(queries) <= limit:
        return list(queries)
    picked = np.sort(np.random.default_rng(seed).choice(len(queries), size=limit, replace=False))
    return [queries[i] for i in picked]


def _files_read(layout: SimulatedLayout, query: LoggedQuery, total_rows: int) -> float:
    if query.is_top_n:
        return min(layout.top_n_parts(query.order_by, query.limit or 0, total_rows),
                   float(layout.read_probability(_safe_filter(query)).sum()) if query.filter_json else layout.parts)
    return float(layout.read_probability(_safe_filter(query)).sum())


def _safe_filter(query: LoggedQuery) -> Any:
    try:
        return query.filter
    except InvalidArgumentError:
        return None


def _mean_files(layout: SimulatedLayout, queries: Sequence[LoggedQuery], total_rows: int) -> float:
    if not queries:
        return 0.0
    return sum(_files_read(layout, q, total_rows) for q in queries) / len(queries)


# ---------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------

def _layout_name(columns: Sequence[str], strategy: str) -> str:
    return f"{strategy}({', '.join(columns)})"


def _distribution_rule(w: Workload, candidates: list[str]) -> tuple[list[str], str, str]:
    """(columns, strategy, reason) by D2."""
    a = candidates[0]
    share_a = w.share(a)
    if len(candidates) == 1:
        return [a], "linear", (f"{a} is the one clustering candidate ({share_a:.0%} of the filtering queries filter "
                               f"it; other filtered columns are left to indexes or filtered rarely) "
                               f"(seed: 90% on a -> linear a)")
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
    shares = ", ".join(f"{c} {w.share(c):.0%}" for c in columns)
    return columns, "hilbert", (f"the columns are filtered apart ({shares} of the filtering queries; only "
                                f"{together:.0%} of those filtering {b} also filter {a}) "
                                f"(seed: 50% a and 50% b -> Hilbert)")


def advise_workload(directory: TableDirectory, queries: list[LoggedQuery], metas: Sequence[DataFileMeta],
                    sample_rows: int = 200_000, replay_queries: int = REPLAY_QUERIES) -> Advice:
    """The advice for these logged queries on the table's files (see the module docstring)."""
    started = time.perf_counter()
    schema = directory.schema.schema
    options = directory.options
    advice = Advice(directory.path, len(queries), 0)
    w = summarize(queries)
    if not queries:
        advice.refused.append("no queries are logged for the period: nothing to learn from")
        return advice
    known = set(schema.names)
    total_bytes = sum(m.file_size for m in metas)
    total_rows = sum(m.row_count for m in metas)
    parts_after = files_after_rewrite(directory, metas, options.target_file_size)
    wanted: list[str] = [c for c, _ in w.filtered.most_common() if c in known]
    wanted += [c for c, _ in (w.equality + w.ranges).most_common() if c in known]
    wanted += [o[0][0] for o in w.orderings if o and o[0][0] in known]
    wanted += [g for grouping in w.groupings for g in grouping if g in known]
    columns = list(dict.fromkeys(wanted))[:SAMPLE_COLUMNS]
    replayed = _replay_sample(queries, replay_queries)
    advice.replayed = len(replayed)
    if not columns or not metas:
        advice.refused.append("the logged queries filter, order and group by no column of the table's files")
        return advice
    sample = draw_sample(directory, metas, columns, sample_rows)
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
    filtering = [q for q in replayed if q.cluster_columns or q.is_top_n]
    new_layout: tuple[list[str], str] | None = None
    if directory.schema.has_primary_key:
        advice.refused.append("distribution: a primary-key table's files stay sorted by its key; cluster it by "
                              "the key order, bucket key and partitioning chosen at create (indexes still apply)")
    elif parts_after < MIN_FILES:
        advice.refused.append(f"distribution: the table would have {parts_after} file(s) of the target size "
                              f"({options.target_file_size:,} bytes); clustering needs at least {MIN_FILES} files "
                              f"to skip any")
    else:
        candidates = []
        near: list[str] = []  # below D1's share but otherwise fit: the replay (D3) may still try them
        bloom_bound: set[str] = set()  # left to a Bloom filter by D1: the layout is judged with it
        for column, _ in w.filtered.most_common():
            if column not in known or column not in ndv:
                continue
            try:
                check_clusterable(column, schema.field(column).type)
            except Exception:
                continue
            if w.share(column) < MIN_SHARE:
                advice.refused.append(f"distribution on {column}: only {w.share(column):.1%} of the filtering "
                                      f"queries filter it (rule D1: at least {MIN_SHARE:.0%})")
                if w.share(column) >= MIN_SHARE / 2 and ndv[column] >= parts_after and not (
                        w.equality[column] >= 0.9 * w.filtered[column] and ndv[column] > BITMAP_MAX_VALUES):
                    near.append(column)
            elif w.equality[column] >= 0.9 * w.filtered[column] and ndv[column] > BITMAP_MAX_VALUES:
                advice.refused.append(f"distribution on {column}: it is only looked up by = or IN and has about "
                                      f"{ndv[column]:,.0f} distinct values; a Bloom filter serves that without "
                                      f"spending the layout on it (rule D1)")
                bloom_bound.add(column)
            elif ndv[column] < parts_after:
                advice.refused.append(f"distribution on {column}: about {ndv[column]:,.0f} distinct values for "
                                      f"{parts_after} files, so most files would hold every value (rule D1); "
                                      f"a bitmap index serves it better")
            else:
                candidates.append(column)
        top_columns = [o[0][0] for o, n in w.orderings.most_common()
                       if o[0][0] in known and o[0][0] in ndv and n / w.total >= MIN_SHARE]
        if (candidates or top_columns) and filtering:
            if candidates:
                rule_columns, rule_strategy, reason = _distribution_rule(w, candidates)
            else:
                rule_columns, rule_strategy = [top_columns[0]], "linear"
                reason = (f"{w.orderings.most_common(1)[0][1] / w.total:.0%} of the queries are Top-N reads by "
                          f"{top_columns[0]}: files tight on it let them stop after one file (rule D2)")
            shapes = {(tuple(rule_columns), rule_strategy)}
            if candidates:
                shapes.add(((candidates[0],), "linear"))
            if len(candidates) > 1:
                shapes |= {(tuple(candidates[:2]), "linear"), (tuple(candidates[:MAX_COLUMNS]), "hilbert"),
                           (tuple(candidates[:MAX_COLUMNS]), "zorder")}
            shapes |= {((column,), "linear") for column in top_columns}
            tried = (candidates + near)[:MAX_COLUMNS]
            if len(tried) > len(candidates[:MAX_COLUMNS]) and len(tried) > 1:
                shapes |= {(tuple(tried), "hilbert"), (tuple(tried), "zorder"), (tuple(tried[:2]), "linear")}
            rule_name = _layout_name(rule_columns, rule_strategy)
            layout_index = IndexSpec(current_index.bloom | bloom_bound, current_index.bitmap, current_index.fpp)
            as_now = SimulatedLayout("current", current.parts, current.columns, layout_index, current.rows_per_part,
                                     ndv)
            scored = {}
            for cols, strategy in shapes:
                layout = simulate(sample, _layout_name(cols, strategy), parts_after, cols, strategy,
                                  layout_index, ndv)
                scored[(cols, strategy)] = (_mean_files(layout, filtering, total_rows), layout)
            rule_score, rule_layout = scored[(tuple(rule_columns), rule_strategy)]
            # ties go to the rule's choice, then to fewer columns, then to a linear order
            best_key = min(scored, key=lambda k: (round(scored[k][0], 6), k != (tuple(rule_columns), rule_strategy),
                                                  len(k[0]), k[1] != "linear"))
            best_score, best_layout = scored[best_key]
            if best_score < rule_score * (1 - REPLAY_MARGIN):
                reason = (f"replay: {_layout_name(*best_key)} reads {best_score:.1f} files per query against "
                          f"{rule_score:.1f} for the rule's {_layout_name(rule_columns, rule_strategy)} ({reason}) "
                          f"(rule D3)")
                rule_columns, rule_strategy, rule_score, rule_layout = (list(best_key[0]), best_key[1], best_score,
                                                                        best_layout)
            before_files = _mean_files(as_now, filtering, total_rows)
            # compare shares of files, as the current and new layouts may have different file counts
            share_before = before_files / max(len(metas), 1)
            share_after = rule_score / parts_after
            name = _layout_name(rule_columns, rule_strategy)
            # D5: the workload-driven layout, fitted on half of the queries and judged on the
            # other half against the chosen curve (a tree fitted to past ranges must also serve
            # new ones)
            halves = np.random.default_rng(1).random(len(filtering)) < 0.5
            fit = [q for q, h in zip(filtering, halves) if h]
            held_out = [q for q, h in zip(filtering, halves) if not h]
            boxes = [box for box in (query_box(_safe_filter(q)) for q in fit) if box]
            if candidates and boxes and held_out:
                tree = build_qdtree(sample.rows, boxes, parts_after, candidates)
                if tree.leaves > 1:
                    # each leaf is written as files of the target size, as optimize does
                    files_of_rows = tree.file_of_row(sample.rows, max(1, sample.rows.num_rows // parts_after))
                    tree_parts = int(files_of_rows.max()) + 1
                    tree_layout = simulate(sample, "qdtree", tree_parts, part_of_row=files_of_rows,
                                           indexes=layout_index, ndv=ndv)
                    tree_share = _mean_files(tree_layout, held_out, total_rows) / tree_parts
                    curve_share = _mean_files(rule_layout, held_out, total_rows) / parts_after
                    if tree_share < curve_share * (1 - QDTREE_MARGIN):
                        tree_score = _mean_files(tree_layout, filtering, total_rows)
                        reason = (f"replay on queries the tree was not fitted on: a qd-tree of {tree.leaves} leaves "
                                  f"cut on the logged predicates reads {tree_share:.1%} of the files per query "
                                  f"against {curve_share:.1%} for {name} ({reason}) (rule D5)")
                        new_tree = tree
                        rule_columns, rule_strategy, rule_score, rule_layout = (tree.columns, "qdtree", tree_score,
                                                                                tree_layout)
                        share_after = tree_score / tree_parts
                        name = f"qdtree({', '.join(tree.columns)}; {tree.leaves} leaves)"
            if share_after <= share_before * (1 - MIN_GAIN):
                new_layout = (rule_columns, rule_strategy)
                chosen = rule_layout
                advice.levers.append(LeverAdvice("distribution", current_layout, [name], reason, len(filtering),
                                                 before_files, rule_score, rule=rule_name))
            else:
                advice.levers.append(LeverAdvice(
                    "distribution", current_layout, current_layout,
                    f"{name} would read {share_after:.1%} of the files per query against {share_before:.1%} now: "
                    f"less than {MIN_GAIN:.0%} better, so the layout stays (rule D4)", len(filtering),
                    before_files, before_files, rule=rule_name))

    # -- indexes -----------------------------------------------------------------------
    bloom_now, bitmap_now = set(options.bloom_columns), set(options.bitmap_columns)
    bloom_new, bitmap_new = set(bloom_now), set(bitmap_now)
    index_notes: dict[str, list[str]] = {"bloom": [], "bitmap": []}
    base = SimulatedLayout(chosen.name, chosen.parts, chosen.columns, IndexSpec(fpp=options.bloom_fpp),
                           chosen.rows_per_part, ndv)
    index_effect: dict[str, tuple[int, float, float]] = {}
    for column in sorted(set(w.equality) | set(w.ranges) | bloom_now | bitmap_now):
        if column not in known:
            continue
        share_eq = w.equality[column] / w.total
        share_any = (w.equality[column] + w.ranges[column]) / w.total
        distinct = ndv.get(column)
        concerned = [q for q in replayed if any(c == column for c, _ in q.predicates)]
        kind = None
        if distinct is not None and distinct > BITMAP_MAX_VALUES and share_eq >= MIN_SHARE:
            kind = "bloom"
        elif distinct is not None and distinct <= BITMAP_MAX_VALUES and share_any >= MIN_SHARE:
            kind = "bitmap"
        if kind is None:
            for existing, bucket, store in (("bloom", bloom_now, bloom_new), ("bitmap", bitmap_now, bitmap_new)):
                if column in bucket:
                    store.discard(column)
                    index_notes[existing].append(f"{column}: {share_any:.0%} of the queries filter it now "
                                                 f"(rule X1: removed below {MIN_SHARE:.0%})")
            if distinct is not None and distinct > BITMAP_MAX_VALUES and share_eq < MIN_SHARE <= share_any:
                index_notes["bitmap"].append(f"{column}: filtered by ranges but about {distinct:,.0f} distinct "
                                             f"values: no bitmap on a high-cardinality column (rule M1)")
            continue
        spec = IndexSpec(frozenset({column}) if kind == "bloom" else frozenset(),
                         frozenset({column}) if kind == "bitmap" else frozenset(), options.bloom_fpp)
        indexed = SimulatedLayout(base.name, base.parts, base.columns, spec, base.rows_per_part, ndv)
        without = _mean_files(base, concerned, total_rows)
        with_index = _mean_files(indexed, concerned, total_rows)
        store = bloom_new if kind == "bloom" else bitmap_new
        rule = "B1" if kind == "bloom" else "M1"
        if concerned and with_index <= without * (1 - MIN_GAIN):
            store.add(column)
            index_effect[column] = (len(concerned), without, with_index)
            index_notes[kind].append(f"{column}: {share_any:.0%} of the queries filter it ({share_eq:.0%} by = or "
                                     f"IN), about {distinct:,.0f} distinct values; replay: {without:.1f} -> "
                                     f"{with_index:.1f} files for those queries (rule {rule})")
        else:
            store.discard(column)
            if column in (bloom_now if kind == "bloom" else bitmap_now):
                index_notes[kind].append(f"{column}: replay shows no gain ({without:.1f} -> {with_index:.1f} "
                                         f"files) (rule {rule}: removed)")
    for kind, now, new in (("bloom", bloom_now, bloom_new), ("bitmap", bitmap_now, bitmap_new)):
        if now or new or index_notes[kind]:
            effects = [index_effect[c] for c in new - now if c in index_effect]
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
        for ordering in w.orderings:
            columns_of = tuple(c for c, _ in ordering)
            for other, n in w.orderings.items():
                if tuple(c for c, _ in other) == columns_of[:len(other)]:
                    served[columns_of] += n
        best, count = served.most_common(1)[0]
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
    for grouping, count in w.groupings.most_common():
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
    for name in models_now:
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
    for name in models_now:
        if name not in models_new:
            opts[f"aggregate.{name}.group-by"] = None
            opts[f"aggregate.{name}.measures"] = None
    for name, model in models_new.items():
        if name not in models_now:
            opts[f"aggregate.{name}.group-by"] = ",".join(model.group_by)
            opts[f"aggregate.{name}.measures"] = ",".join(f"{c}:{f}" for c, f in model.measures)
    advice.options = opts

    recommended_index = IndexSpec(frozenset(bloom_new), frozenset(bitmap_new), options.bloom_fpp)
    final = SimulatedLayout(chosen.name, chosen.parts, chosen.columns, recommended_index, chosen.rows_per_part, ndv)
    before_files = after_files = 0.0
    before_bytes = after_bytes = 0.0
    bytes_now = total_bytes / max(len(metas), 1)
    bytes_new = total_bytes / max(final.parts, 1)
    # measured once per grouping (reading real files): P1 measured the new models' already
    ratios = {m.name: ratios_by_grouping.get(tuple(m.group_by)) or aggregation_ratio(directory, metas, m.group_by)
              for m in models_new.values()}
    for q in replayed:
        b = _files_read(current, q, total_rows)
        a = _files_read(final, q, total_rows)
        covering = next((m for m in models_new.values() if q.is_aggregate and set(q.group_by) <= set(m.group_by)
                      and set(q.measures) <= set(m.measures)
                      and {c for c, _ in q.predicates if c} <= set(m.group_by)), None)
        before_files += b
        after_files += a
        before_bytes += b * bytes_now
        after_bytes += a * bytes_new * (ratios[covering.name] if covering else 1.0)
    n = max(len(replayed), 1)
    advice.files_before, advice.files_after = before_files / n, after_files / n
    advice.bytes_before, advice.bytes_after = before_bytes / n, after_bytes / n
    advice.seconds = time.perf_counter() - started
    return advice


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
