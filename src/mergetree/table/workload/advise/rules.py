"""The advisor's rules, one function per lever (pure: no I/O, no sampling, no replay).

This module decides *what* to recommend; `advisor` gathers the inputs (the log's summary, a row
sample, layouts simulated on it, replayed queries) and hands each rule what it measured — as
numbers, or as a function that replays on demand — the way `compaction.planner` decides and
`compaction.runner` reads and writes.  Each rule returns its lever's `LeverAdvice` (or None)
with the reason in words, naming the rule and the threshold it was held to.

The rules (shares are of the queries in the period; "filtering" = with a predicate that min/max
statistics can use: =, IN, a range, LIKE 'prefix%'):

Distribution (append tables, and primary-key tables with deletion vectors, whose compacted files
are read alone; a primary-key table's files are otherwise merged in key order):
  D1  A column is a clustering candidate when at least MIN_SHARE of the filtering queries filter
      it, unless it is only looked up by = / IN and has many values (more than
      BITMAP_MAX_VALUES: a Bloom filter serves those lookups without spending the layout on
      them — rule B1 then decides the filter, and says why when it adds none).  A column with
      few values is a candidate too: a layout sorted on it puts each value in a few files.
      (`clustering_candidates`)
  D2  The shapes tried, from the candidates ranked by how many queries filter them (ties by
      name): linear on each of the first MAX_COLUMNS, linear on ordered pairs and on the first
      three, Z-order and Hilbert on the first two to MAX_COLUMNS, the seed's own answer (90% on
      a -> linear(a); a+b together -> linear(a, b); apart -> Hilbert), the current layout, and
      shapes with the columns filtered by at least half of MIN_SHARE; each is replayed.
      (`seed_layout`, `layout_shapes`)
  D3  Margin, not thresholds: the shapes are walked from the simplest (fewer columns, then
      linear < Z-order < Hilbert < qd-tree, then the candidates' rank).  The incumbent is the
      current layout (or the files as they are, when there is none); a shape replaces the
      incumbent only when its replay reads at least LAYOUT_MARGIN fewer bytes than the
      incumbent (MIN_GAIN fewer than files without a layout: a rewrite must pay).  So a few
      queries more or fewer near a rule's threshold cannot flip the answer, the current layout
      stays unless another is clearly better, and a simpler layout wins over a complex one that
      is about as good.  The advice says how close the decision was: `LeverAdvice.margin` is the
      smallest distance, in points of bytes saved, between a measured gain and the margin it
      was held to (a step taken, or the closest alternative left).  (`choose_layout`, `walk_text`)
  D5  A workload-driven layout (a qd-tree cut on the logged predicates, `qdtree`) is fitted on
      the row sample and half of the queries, and taken instead when, replayed on the other
      half, it reads QDTREE_MARGIN (a third) fewer bytes than the walk's choice: a tree fitted
      to past predicates ages with the workload where a curve does not, so it must win clearly.
      A recurring query's runs alternate between the halves (the tree is judged on the next run
      of a dashboard it was fitted on, as that workload's future looks); a query seen once falls
      in a half by its hash (it judges a tree fitted without it).
      (`qdtree_rule`)
  D4  Refused outright with fewer than MIN_FILES files after a rewrite.  (`distribution_refusal`)

Indexes (judged on the recommended layout; every column considered gets a line saying why it
gets an index or why not, so no reason promises an index the recommendation lacks;
`index_kind`, `index_rules`):
  B1  Bloom filter on a column with = / IN in at least MIN_SHARE of the queries and more distinct
      values than BITMAP_MAX_VALUES, when the replay shows it cuts the files those queries read by
      at least MIN_GAIN.
  M1  Bitmap on a column with at most BITMAP_MAX_VALUES distinct values filtered by at least
      MIN_SHARE of the queries (=, IN or a range), with the same replay condition. Never a bitmap
      on a high-cardinality column.
  X1  An index the log no longer calls for (below MIN_SHARE) is removed.

In-file sort (`sort_rule`):
  S1  The Top-N orderings (ORDER BY ... LIMIT) are pooled: an order (a, b) serves ORDER BY a too.
      The order serving the most Top-N queries is recommended when those are at least MIN_SHARE of
      the queries.

Pre-aggregates (`preaggregate_rule`):
  P1  A GROUP BY (with its measures) used by at least MIN_SHARE of the queries, whose filters read
      only group-by columns, becomes a model, when grouping shrinks a file to at most
      MAX_AGGREGATION_RATIO of its rows (measured on real files, as the seed says).
  P2  A model no query in the period uses is removed.

Columns of a type with no order (lists, structs, maps) are left out of the sample and of every
rule, with a line saying so (`refused`); their predicates count as reading every file.
"""
from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any

from ...levers.qdtree import QdTree
from ...options import (
    KEY_BITMAP_COLUMNS,
    KEY_BLOOM_COLUMNS,
    KEY_CLUSTERING_COLUMNS,
    KEY_CLUSTERING_STRATEGY,
    KEY_QDTREE,
    KEY_SORT_WITHIN,
    AggregateModel,
)
from .summary import LoggedQuery, Workload

__all__ = ["AS_NOW", "BITMAP_MAX_VALUES", "DOMINANT", "LAYOUT_MARGIN", "MAX_AGGREGATION_RATIO", "MAX_COLUMNS",
           "MIN_FILES", "MIN_GAIN", "MIN_SHARE", "QDTREE_MARGIN", "STRATEGY_RANK", "TOGETHER", "Candidates",
           "IndexAdvice", "IndexReplay", "LayoutChoice", "LeverAdvice", "PreAggregates", "Shape", "choose_layout",
           "clustering_candidates", "covering_model", "describe_model", "distribution_lever",
           "distribution_refusal", "fewer", "gain", "index_kind", "index_rules", "layout_name", "layout_shapes",
           "options_to_apply", "preaggregate_rule", "qdtree_rule", "ranked", "seed_layout", "shape_name",
           "sort_rule", "top_n_columns", "walk_text"]

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

    def marks(self) -> str:
        """Its changes as `+added, -removed, =kept` (`(none)` when it recommends nothing)."""
        signs = {"added": "+", "removed": "-", "kept": "="}
        return ", ".join(f"{signs[status]}{item}" for item, status in self.changes) or "(none)"

    def __repr__(self) -> str:
        effect = ""
        if self.files_before is not None and self.files_after is not None:
            effect = f"; {self.queries:,} queries: {self.files_before:.1f} -> {self.files_after:.1f} files each"
        return f"LeverAdvice({self.lever}: {self.marks()}{effect})"


# ---------------------------------------------------------------------------
# Words and numbers the rules share
# ---------------------------------------------------------------------------

def ranked(counter: Counter) -> list[tuple[Any, int]]:
    """A counter's items by count, ties by key: most_common's ties follow insertion order,
    which follows set iteration, which changes from process to process."""
    return sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))


def fewer(share: float | None) -> str:
    if share is None:
        return ""
    return f"{share:.0%} fewer bytes" if share >= 0 else f"{-share:.0%} more bytes"


def gain(before: float, after: float) -> float:
    """The share of `before`'s bytes that `after` saves (negative: reads more)."""
    if before > 0:
        return 1.0 - after / before
    return 0.0 if after <= 0 else -math.inf


def layout_name(columns: Sequence[str], strategy: str) -> str:
    return f"{strategy}({', '.join(columns)})"


def shape_name(shape: Shape) -> str:
    return "the files as they are (no layout)" if shape == AS_NOW else layout_name(*shape)


def _mib(n: float) -> str:
    return f"{n / 2**20:,.2f} MiB"


# ---------------------------------------------------------------------------
# Distribution (D1-D5)
# ---------------------------------------------------------------------------

def distribution_refusal(has_primary_key: bool, files_after: int, target_file_size: int,
                         deletion_vectors: bool = False) -> str | None:
    """Why the table gets no layout at all (a primary-key table without deletion vectors; D4:
    fewer than MIN_FILES files of the target size after a rewrite), or None.  With deletion
    vectors a primary-key table's compacted files are read alone, so they may be clustered on
    other columns (each file still sorted by key) and the rules apply as to an append table."""
    if has_primary_key and not deletion_vectors:
        return ("distribution: a primary-key table's files stay sorted by its key; cluster it by the key order, "
                "bucket key and partitioning chosen at create (indexes still apply), or set "
                "'deletion-vectors.enabled' so that its compacted files can be clustered on other columns")
    if files_after < MIN_FILES:
        return (f"distribution: the table would have {files_after} file(s) of the target size "
                f"({target_file_size:,} bytes); clustering needs at least {MIN_FILES} files to skip any")
    return None


@dataclass
class Candidates:
    """D1's answer: the clustering candidates (ranked), the columns just below its share that
    the replay may still try, the columns left to a Bloom filter (column -> the refusal's text,
    which the index rules finish), and a line per column refused."""

    candidates: list[str] = field(default_factory=list)
    near: list[str] = field(default_factory=list)
    bloom_bound: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)

    def rank(self, top_columns: Sequence[str]) -> dict[str, int]:
        """The columns' order of preference for D3's ties: candidates, then near, then Top-N."""
        return {c: i for i, c in enumerate(dict.fromkeys([*self.candidates, *self.near, *top_columns]))}


def clustering_candidates(w: Workload, known: Collection[str], ndv: Mapping[str, float],
                          unsampled: Collection[str] = (),
                          unclusterable: Callable[[str], str | None] = lambda column: None) -> Candidates:
    """D1, over the filtered columns by how many queries filter them (ties by name).  Columns
    the table lacks, left out of the sample (`unsampled`) or without a distinct count are
    skipped; `unclusterable(column)` says why a column's type cannot be clustered (None: it can)."""
    out = Candidates()
    for column, count in ranked(w.filtered):
        if column not in known or column in unsampled or column not in ndv:
            continue
        why = unclusterable(column)
        if why is not None:
            out.refused.append(f"distribution on {column}: {why}")
            continue
        lookups_only = w.equality[column] >= 0.9 * count and ndv[column] > BITMAP_MAX_VALUES
        if w.share(column) < MIN_SHARE:
            out.refused.append(f"distribution on {column}: only {w.share(column):.1%} of the filtering "
                               f"queries filter it (rule D1: at least {MIN_SHARE:.0%})")
            if w.share(column) >= MIN_SHARE / 2 and not lookups_only:
                out.near.append(column)
        elif lookups_only:
            out.bloom_bound[column] = (f"distribution on {column}: it is only looked up by = or IN and has about "
                                       f"{ndv[column]:,.0f} distinct values, which a Bloom filter answers without "
                                       f"spending the layout on it (rule D1)")
        else:
            out.candidates.append(column)
    return out


def top_n_columns(w: Workload, known: Collection[str], ndv: Mapping[str, float]) -> list[str]:
    """The first columns of the Top-N orderings used by at least MIN_SHARE of the queries: a
    layout tight on one lets those reads stop after a file."""
    columns = [o[0][0] for o, n in ranked(w.orderings)
               if o[0][0] in known and o[0][0] in ndv and n / w.total >= MIN_SHARE]
    return list(dict.fromkeys(columns))


def seed_layout(w: Workload, candidates: Sequence[str], top_columns: Sequence[str]) -> tuple[Shape, str]:
    """D2: the seed's own answer and its reason — from the candidates (90% on a -> linear(a);
    a+b together -> linear(a, b); apart -> Hilbert), or, with none, linear on the first Top-N
    column.  Needs a candidate or a Top-N column."""
    if not candidates:
        return ((top_columns[0],), "linear"), (f"{ranked(w.orderings)[0][1] / w.total:.0%} of the queries are Top-N "
                                               f"reads by {top_columns[0]}: files tight on it let them stop after "
                                               f"one file")
    a = candidates[0]
    share_a = w.share(a)
    if len(candidates) == 1:
        return ((a,), "linear"), (f"{a} is the one clustering candidate ({share_a:.0%} of the filtering queries "
                                  f"filter it) (seed: 90% on a -> linear a)")
    b = candidates[1]
    together = w.share_with(a, b)
    if together >= TOGETHER:
        return ((a, b), "linear"), (f"{together:.0%} of the queries filtering {b} also filter {a} "
                                    f"(seed: 50% a and 50% a+b -> linear a, b)")
    beyond_a = sum(n for cols, n in w.together.items() if b in cols and a not in cols) / max(w.filtering, 1)
    if share_a >= DOMINANT - 1e-9 and beyond_a <= 1 - DOMINANT + 1e-9:  # shares of whole queries: no float fuzz
        return ((a,), "linear"), (f"{share_a:.0%} of the filtering queries filter {a}, {beyond_a:.0%} filter {b} "
                                  f"without it (seed: 90% on a -> linear a)")
    return (tuple(candidates[:MAX_COLUMNS]), "hilbert"), (f"only {together:.0%} of the queries filtering {b} also "
                                                          f"filter {a} (seed: 50% a and 50% b -> Hilbert)")


def layout_shapes(candidates: Sequence[str], near: Sequence[str], top_columns: Sequence[str],
                  seed: Shape | None) -> set[Shape]:
    """D2: the layouts tried."""
    top = list(candidates[:MAX_COLUMNS])
    shapes: set[Shape] = {((c,), "linear") for c in top}
    shapes |= {((a, b), "linear") for a, b in permutations(top[:3], 2)}
    if len(top) >= 3:
        shapes.add((tuple(top[:3]), "linear"))
    for k in range(2, len(top) + 1):
        shapes |= {(tuple(top[:k]), "zorder"), (tuple(top[:k]), "hilbert")}
    tried = [*candidates, *near][:MAX_COLUMNS]
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
        saved = gain(scores[incumbent], scores[shape])
        comparisons.append((incumbent, shape, saved, needed))
        if saved >= needed:
            steps.append((incumbent, shape, saved, needed))
            incumbent = shape
    others = [s for s in scores if s != incumbent and s != AS_NOW]
    closest = max(others, key=lambda s: (gain(scores[incumbent], scores[s]), tuple(-x for x in simplicity(s)[:2])),
                  default=None)
    closest_gain = gain(scores[incumbent], scores[closest]) if closest is not None else None
    return LayoutChoice(incumbent, steps, comparisons, closest, closest_gain)


def walk_text(walk: LayoutChoice, scores: Mapping[Shape, float], start: Shape) -> str:
    """D3's decision in words: the steps taken, or why the start stands, and the closest call."""
    parts = [f"{shape_name(start)} reads {_mib(scores[start])} per query"]
    for before, after, saved, needed in walk.steps:
        parts.append(f"{shape_name(after)} reads {_mib(scores[after])}, {saved:.0%} fewer than "
                     f"{shape_name(before)} (needed: {needed:.0%})")
    if not walk.steps:
        parts.append(f"no layout reads {MIN_GAIN if start == AS_NOW else LAYOUT_MARGIN:.0%} fewer bytes, so "
                     f"{'the files stay as they are' if start == AS_NOW else 'the current layout stays'}")
    if walk.closest is not None and walk.closest_gain is not None:
        needed = MIN_GAIN if walk.pick == AS_NOW else LAYOUT_MARGIN
        parts.append(f"the closest alternative, {shape_name(walk.closest)}, reads {fewer(walk.closest_gain)} than "
                     f"{shape_name(walk.pick)} ({'a change needs' if walk.closest_gain >= 0 else 'against'} "
                     f"{needed:.0%})")
    return "; ".join(parts) + " (rule D3)"


def qdtree_rule(walk: LayoutChoice, tree: Shape, tree_name: str, tree_gain: float) -> tuple[LayoutChoice, bool, str]:
    """D5: the walk's pick against a qd-tree (`tree`, cut on `tree.columns`, named `tree_name`)
    that reads `tree_gain` fewer bytes than the pick on the queries it was not fitted on.
    Returns the walk with the comparison recorded (and, when the tree is taken, the tree as its
    pick and the curve it beat as the closest alternative), whether the tree was taken, and the
    sentence the reason gets."""
    pick = walk.pick
    comparisons = [*walk.comparisons, (pick, tree, tree_gain, QDTREE_MARGIN)]
    if tree_gain >= QDTREE_MARGIN and pick != tree:
        note = (f"; on queries the tree was not fitted on, a {tree_name} cut on the logged predicates reads "
                f"{tree_gain:.0%} fewer bytes than {shape_name(pick)} (rule D5: at least {QDTREE_MARGIN:.0%})")
        return dataclasses.replace(walk, pick=tree, steps=[*walk.steps, (pick, tree, tree_gain, QDTREE_MARGIN)],
                                   comparisons=comparisons, closest=pick, closest_gain=-tree_gain), True, note
    note = (f"; a {tree_name} reads {fewer(tree_gain)} than {shape_name(pick)} on queries it was not fitted on "
            f"(rule D5: needs {QDTREE_MARGIN:.0%} fewer)")
    return dataclasses.replace(walk, comparisons=comparisons), False, note


def distribution_lever(w: Workload, candidates: Sequence[str], walk: LayoutChoice, *, decision: str, tree_note: str,
                       seed: Shape, seed_reason: str, replayed: int, simulated: int, files_before: float,
                       files_after: float, current: list[str], recommended: str | None) -> LeverAdvice:
    """The distribution lever: the walk's `decision` in words (`walk_text`) and D5's `tree_note`,
    over `replayed` queries on `simulated` layouts; `recommended` names the new layout (None:
    the current one stays)."""
    shares = ", ".join(f"{c} {w.share(c):.0%}" for c in candidates[:MAX_COLUMNS])
    margin = walk.margin
    reason = (f"{replayed:,} queries replayed on {simulated} simulated layouts; "
              f"filtered: {shares or 'no candidate'} of the filtering queries; "
              + decision + tree_note
              + (f"; decided by a margin of {margin:.1%} of the bytes" if margin is not None else "")
              + f" (seed's rule: {seed_reason})")
    return LeverAdvice("distribution", current, [recommended] if recommended is not None else current, reason,
                       replayed, files_before, files_after, rule=layout_name(*seed), margin=margin,
                       closest=shape_name(walk.closest) if walk.closest is not None else None,
                       closest_gain=walk.closest_gain)


# ---------------------------------------------------------------------------
# Indexes (B1, M1, X1)
# ---------------------------------------------------------------------------

def index_kind(distinct: float | None, share_eq: float, share_any: float) -> str | None:
    """Which index the log calls for on a column: "bloom" (B1: many values, = / IN in at least
    MIN_SHARE of the queries), "bitmap" (M1: few values, filtered by at least MIN_SHARE), or None."""
    if distinct is not None and distinct > BITMAP_MAX_VALUES and share_eq >= MIN_SHARE:
        return "bloom"
    if distinct is not None and distinct <= BITMAP_MAX_VALUES and share_any >= MIN_SHARE:
        return "bitmap"
    return None


@dataclass
class IndexAdvice:
    """The index rules' answer: the columns that get each index, a lever per index kind that
    has columns or something to say, and D1's Bloom refusals finished (for `Advice.refused`)."""

    bloom: set[str]
    bitmap: set[str]
    levers: list[LeverAdvice]
    refused: list[str]


# (column, "bloom" | "bitmap") -> (queries filtering the column, files they read without the
# index, files with it), replayed on the recommended layout
IndexReplay = Callable[[str, str], tuple[int, float, float]]


def index_rules(w: Workload, known: Collection[str], ndv: Mapping[str, float], unsampled: Mapping[str, str],
                bloom_now: Collection[str], bitmap_now: Collection[str], bloom_bound: Mapping[str, str],
                replay: IndexReplay) -> IndexAdvice:
    """B1, M1, X1 on every column the log filters by = / IN / a range, every indexed column and
    every column D1 left to a Bloom filter (`bloom_bound`, whose texts are finished here).
    `unsampled`: columns left out of the sample and why (their indexes are kept, unjudged)."""
    now = {"bloom": set(bloom_now), "bitmap": set(bitmap_now)}
    new = {"bloom": set(bloom_now), "bitmap": set(bitmap_now)}
    notes: dict[str, list[str]] = {"bloom": [], "bitmap": []}
    bound = dict(bloom_bound)
    effect: dict[str, tuple[int, float, float]] = {}
    for column in sorted(set(w.equality) | set(w.ranges) | now["bloom"] | now["bitmap"] | set(bound)):
        if column not in known:
            continue
        share_eq = w.equality[column] / w.total
        share_any = (w.equality[column] + w.ranges[column]) / w.total
        distinct = ndv.get(column)
        if column in unsampled:
            for existing in ("bloom", "bitmap"):
                if column in now[existing]:
                    notes[existing].append(f"{column}: kept, not simulated ({unsampled[column]})")
            continue
        kind = index_kind(distinct, share_eq, share_any)
        if kind is None:
            for existing in ("bloom", "bitmap"):
                if column in now[existing]:
                    new[existing].discard(column)
                    notes[existing].append(f"{column}: {share_any:.0%} of the queries filter it now "
                                           f"(rule X1: removed below {MIN_SHARE:.0%})")
            if distinct is not None and distinct > BITMAP_MAX_VALUES and share_eq < MIN_SHARE <= share_any:
                notes["bitmap"].append(f"{column}: filtered by ranges but about {distinct:,.0f} distinct "
                                       f"values: no bitmap on a high-cardinality column (rule M1)")
            if column in bound:
                bound[column] += (f"; but only {share_eq:.0%} of the queries look it up (rule B1: a Bloom "
                                  f"filter needs {MIN_SHARE:.0%}), so none is recommended")
            continue
        assert distinct is not None  # index_kind names a kind only for a column with a distinct count
        concerned, without, with_index = replay(column, kind)
        what = "a Bloom filter" if kind == "bloom" else "a bitmap"
        rule = "B1" if kind == "bloom" else "M1"
        if concerned and with_index <= without * (1 - MIN_GAIN):
            new[kind].add(column)
            effect[column] = (concerned, without, with_index)
            notes[kind].append(f"{what} serves {column}: {share_any:.0%} of the queries filter it "
                               f"({share_eq:.0%} by = or IN), about {distinct:,.0f} distinct values; replay: "
                               f"{without:.1f} -> {with_index:.1f} files for those queries (rule {rule})")
            if column in bound and kind == "bloom":
                bound[column] += "; recommended (see bloom)"
        else:
            new[kind].discard(column)
            verdict = "removed" if column in now[kind] else "not added"
            notes[kind].append(f"{what} on {column} would not pay on the recommended layout: replay "
                               f"{without:.1f} -> {with_index:.1f} files for its {concerned:,} queries "
                               f"(rule {rule}: at least {MIN_GAIN:.0%} fewer; {verdict})")
            if column in bound:
                bound[column] += (f"; but {what} on it would not pay here ({without:.1f} -> "
                                  f"{with_index:.1f} files, rule {rule}), so none is recommended")
    levers = []
    for kind in ("bloom", "bitmap"):
        if now[kind] or new[kind] or notes[kind]:
            effects = [effect[c] for c in sorted(new[kind] - now[kind]) if c in effect]
            lever = LeverAdvice(kind, sorted(now[kind]), sorted(new[kind]), "; ".join(notes[kind]) or "unchanged")
            if effects:
                lever.queries = sum(e[0] for e in effects)
                lever.files_before = sum(e[0] * e[1] for e in effects) / lever.queries
                lever.files_after = sum(e[0] * e[2] for e in effects) / lever.queries
            levers.append(lever)
    return IndexAdvice(new["bloom"], new["bitmap"], levers, list(bound.values()))


# ---------------------------------------------------------------------------
# In-file sort (S1)
# ---------------------------------------------------------------------------

def sort_rule(w: Workload, known: Collection[str], has_primary_key: bool,
              sort_now: Sequence[str]) -> LeverAdvice | None:
    """S1.  None when there is nothing to say: no in-file sort now, none recommended, no Top-N
    query.  A primary-key table's files keep their key order: its sort is never changed."""
    now = list(sort_now)
    recommended = now
    reason = "no Top-N queries in the period" if not w.top_n else ""
    if w.top_n and not has_primary_key:
        served: Counter = Counter()
        for ordering, _ in ranked(w.orderings):
            columns_of = tuple(c for c, _ in ordering)
            for other, n in w.orderings.items():
                if tuple(c for c, _ in other) == columns_of[:len(other)]:
                    served[columns_of] += n
        best, count = ranked(served)[0]
        if count / w.total >= MIN_SHARE and all(c in known for c in best):
            recommended = list(best)
            reason = (f"{count / w.total:.0%} of the queries are Top-N reads that the order "
                      f"({', '.join(best)}) serves (an order serves its prefixes too) (rule S1)")
        else:
            reason = f"Top-N reads are {w.top_n / w.total:.0%} of the queries (rule S1: below {MIN_SHARE:.0%})"
    if now or recommended != now or w.top_n:
        return LeverAdvice("sort", now, recommended, reason)
    return None


# ---------------------------------------------------------------------------
# Pre-aggregates (P1, P2)
# ---------------------------------------------------------------------------

def describe_model(m: AggregateModel) -> str:
    return f"{m.name}({', '.join(m.group_by)}: {', '.join(f'{c}:{f}' for c, f in m.measures)})"


@dataclass
class PreAggregates:
    """The pre-aggregate rules' answer: the lever (None: nothing to say), the models recommended
    (by name) and the aggregation ratio measured per grouping."""

    lever: LeverAdvice | None
    models: dict[str, AggregateModel]
    ratios: dict[tuple[str, ...], float]


def preaggregate_rule(w: Workload, known: Collection[str], models_now: Mapping[str, AggregateModel],
                      ratio: Callable[[tuple[str, ...]], float]) -> PreAggregates:
    """P1 and P2 over the groupings of `w.queries`; `ratio(group_by)` measures the groups per row
    of real files grouped so (asked only for groupings that pass P1's shares)."""
    models: dict[str, AggregateModel] = {}
    ratios: dict[tuple[str, ...], float] = {}
    notes = []
    for grouping, count in ranked(w.groupings):
        if count / w.total < MIN_SHARE or not all(g in known for g in grouping):
            continue
        usable = [q for q in w.queries if q.group_by == grouping and {c for c, _ in q.predicates if c} <= set(grouping)]
        if len(usable) / w.total < MIN_SHARE:
            notes.append(f"GROUP BY {', '.join(grouping) or '()'}: most of its queries filter other columns, which "
                         f"a pre-aggregate cannot answer (rule P1)")
            continue
        shrinks_to = ratios[tuple(grouping)] = ratio(grouping)
        if shrinks_to > MAX_AGGREGATION_RATIO:
            notes.append(f"GROUP BY {', '.join(grouping) or '()'}: files keep {shrinks_to:.0%} of their rows after "
                         f"grouping; a pre-aggregate would not pay (rule P1: at most {MAX_AGGREGATION_RATIO:.0%})")
            continue
        measures = tuple(sorted({m for q in usable for m in q.measures if m[0] == "*" or m[0] in known}))
        if not measures:
            continue
        kept = next((m for m in models_now.values() if tuple(m.group_by) == grouping
                     and set(measures) <= set(m.measures)), None)
        name = kept.name if kept else "by_" + ("_".join(grouping) or "all")
        models[name] = kept or AggregateModel(name, tuple(grouping), measures)
        notes.append(f"{name}: {len(usable) / w.total:.0%} of the queries group by ({', '.join(grouping)}); "
                     f"files shrink to {shrinks_to:.1%} of their rows (rule P1)")
    for name in sorted(models_now):
        if name not in models:
            notes.append(f"{name}: no query in the period uses it (rule P2: removed)")
    lever = None
    if models_now or models or notes:
        lever = LeverAdvice("pre-aggregate", sorted(describe_model(m) for m in models_now.values()),
                            sorted(describe_model(m) for m in models.values()), "; ".join(notes))
    return PreAggregates(lever, models, ratios)


def covering_model(q: LoggedQuery, models: Mapping[str, AggregateModel]) -> AggregateModel | None:
    """The first model that answers an aggregate query: it groups by a superset of the query's
    grouping, has its measures, and the query filters only its group-by columns."""
    return next((m for m in models.values() if q.is_aggregate and set(q.group_by) <= set(m.group_by)
                 and set(q.measures) <= set(m.measures)
                 and {c for c, _ in q.predicates if c} <= set(m.group_by)), None)


# ---------------------------------------------------------------------------
# What `apply` writes
# ---------------------------------------------------------------------------

def options_to_apply(*, layout: tuple[Sequence[str], str] | None, tree: QdTree | None,
                     bloom: tuple[Collection[str], Collection[str]], bitmap: tuple[Collection[str], Collection[str]],
                     sort: tuple[Sequence[str], Sequence[str]],
                     models: tuple[Mapping[str, AggregateModel], Mapping[str, AggregateModel]],
                     ) -> dict[str, str | None]:
    """The options that turn the current configuration into the recommended one (None removes a
    key): `layout` and `tree` when the layout changes, and for each of bloom, bitmap, sort and
    models the pair (now, recommended)."""
    opts: dict[str, str | None] = {}
    if layout is not None:
        opts[KEY_CLUSTERING_COLUMNS] = ",".join(layout[0])
        opts[KEY_CLUSTERING_STRATEGY] = layout[1]
        opts[KEY_QDTREE] = tree.to_json() if tree is not None else None
    for key, (now, new) in ((KEY_BLOOM_COLUMNS, bloom), (KEY_BITMAP_COLUMNS, bitmap)):
        if set(new) != set(now):
            opts[key] = ",".join(sorted(new)) or None
    if list(sort[1]) != list(sort[0]):
        opts[KEY_SORT_WITHIN] = ",".join(sort[1]) or None
    models_now, models_new = models
    for name in sorted(models_now):
        if name not in models_new:
            opts[f"aggregate.{name}.group-by"] = None
            opts[f"aggregate.{name}.measures"] = None
    for name, model in sorted(models_new.items()):
        if name not in models_now:
            opts[f"aggregate.{name}.group-by"] = ",".join(model.group_by)
            opts[f"aggregate.{name}.measures"] = ",".join(f"{c}:{f}" for c, f in model.measures)
    return opts
