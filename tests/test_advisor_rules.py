"""The advisor's rules (`mergetree.table.workload.advise.rules`) one by one, on hand-built
workloads and measurements: when each recommends, when it declines, and that the reason names
the rule and the threshold it was held to.  No table, no sample, no replay: the replayed
numbers are given (`tests/test_advisor.py` runs the same rules end to end on real tables)."""
from __future__ import annotations

import math

import pytest

from mergetree.table.options import AggregateModel
from mergetree.table.workload.advise import LoggedQuery, summarize
from mergetree.table.workload.advise.rules import (
    AS_NOW,
    BITMAP_MAX_VALUES,
    LAYOUT_MARGIN,
    MIN_FILES,
    MIN_GAIN,
    MIN_SHARE,
    QDTREE_MARGIN,
    LayoutChoice,
    choose_layout,
    clustering_candidates,
    covering_model,
    describe_model,
    distribution_lever,
    distribution_refusal,
    fewer,
    gain,
    index_kind,
    index_rules,
    layout_shapes,
    options_to_apply,
    preaggregate_rule,
    qdtree_rule,
    ranked,
    seed_layout,
    sort_rule,
    top_n_columns,
    walk_text,
)

MiB = 2**20


def lq(*predicates, order_by=(), limit=None, group_by=(), measures=()) -> LoggedQuery:
    """A logged query with these (column, kind) predicates."""
    return LoggedQuery(tuple(predicates), None, tuple(order_by), limit, tuple(group_by), tuple(measures))


def eq(column):
    return (column, "eq")


def rng(column):
    return (column, "range")


def workload(*groups):
    """(count, query) pairs -> the summary of that many copies of each query."""
    return summarize([query for count, query in groups for _ in range(count)])


def lin(*columns):
    return (tuple(columns), "linear")


def hil(*columns):
    return (tuple(columns), "hilbert")


def zo(*columns):
    return (tuple(columns), "zorder")


KNOWN = {"a", "b", "c", "d", "e", "id", "ts", "category", "amount"}
NDV = {"a": 10**6, "b": 10**6, "c": 10**6, "d": 10**6, "e": 10**6, "id": 10**6, "ts": 10**6, "category": 20.0,
       "amount": 10**6}


# ----------------------------------------------------------------------------- helpers


def test_ranked_breaks_ties_by_name_not_by_insertion():
    from collections import Counter
    assert ranked(Counter({"b": 2, "a": 2, "c": 5})) == [("c", 5), ("a", 2), ("b", 2)]


def test_gain_and_its_words():
    assert gain(100.0, 75.0) == 0.25 and gain(100.0, 125.0) == -0.25
    assert gain(0.0, 0.0) == 0.0 and gain(0.0, 1.0) == -math.inf
    assert fewer(0.25) == "25% fewer bytes" and fewer(-0.5) == "50% more bytes" and fewer(None) == ""


# ----------------------------------------------------------------------------- D4 and primary keys


def test_a_primary_key_table_gets_no_layout():
    why = distribution_refusal(True, 100, 2**27)
    assert why is not None and "primary-key table" in why and "indexes still apply" in why


def test_d4_needs_min_files_after_a_rewrite():
    assert MIN_FILES == 4
    assert distribution_refusal(False, MIN_FILES, 2**27) is None
    why = distribution_refusal(False, MIN_FILES - 1, 1_000_000)
    assert why == ("distribution: the table would have 3 file(s) of the target size (1,000,000 bytes); "
                   "clustering needs at least 4 files to skip any")


# ----------------------------------------------------------------------------- D1


def test_d1_a_column_filtered_by_min_share_is_a_candidate():
    w = workload((9, lq(rng("a"))), (1, lq(rng("b"))))          # b: exactly 10% of the filtering queries
    found = clustering_candidates(w, KNOWN, NDV)
    assert found.candidates == ["a", "b"] and found.near == [] and found.refused == [] and not found.bloom_bound


def test_d1_below_min_share_is_refused_naming_the_threshold_and_tried_when_near():
    w = workload((18, lq(rng("a"))), (1, lq(rng("b"))), (1, lq(rng("c"))), (20, lq()))
    # b, c: 1 of the 20 filtering queries each (5%: half of MIN_SHARE, so still tried)
    found = clustering_candidates(w, KNOWN, NDV)
    assert found.candidates == ["a"] and found.near == ["b", "c"]
    assert found.refused == [f"distribution on {c}: only 5.0% of the filtering queries filter it "
                             f"(rule D1: at least {MIN_SHARE:.0%})" for c in ("b", "c")]
    far = clustering_candidates(workload((30, lq(rng("a"))), (1, lq(rng("b")))), KNOWN, NDV)
    assert far.near == [] and "only 3.2%" in far.refused[0]


def test_d1_leaves_high_cardinality_lookups_to_a_bloom_filter():
    w = workload((10, lq(rng("a"))), (10, lq(eq("id"))))
    found = clustering_candidates(w, KNOWN, NDV)
    assert found.candidates == ["a"]
    assert found.bloom_bound == {"id": "distribution on id: it is only looked up by = or IN and has about "
                                       "1,000,000 distinct values, which a Bloom filter answers without spending "
                                       "the layout on it (rule D1)"}


def test_d1_lookups_on_few_values_are_clustered():
    w = workload((10, lq(eq("category"))), (10, lq(eq("id"))))
    found = clustering_candidates(w, KNOWN, {**NDV, "id": float(BITMAP_MAX_VALUES)})   # not more than the bound
    assert found.candidates == ["category", "id"] and not found.bloom_bound


def test_d1_a_column_ranged_as_often_as_looked_up_is_a_candidate():
    w = workload((5, lq(eq("id"))), (5, lq(rng("id"))))
    assert clustering_candidates(w, KNOWN, NDV).candidates == ["id"]


def test_d1_skips_unknown_unsampled_and_uncounted_columns_and_says_why_a_type_cannot_cluster():
    w = workload((10, lq(rng("a"))), (10, lq(rng("gone"))), (10, lq(rng("tags"))), (10, lq(rng("b"))),
                 (10, lq(rng("c"))))
    found = clustering_candidates(w, KNOWN | {"tags"}, {**NDV, "tags": 5.0}, unsampled={"tags"},
                                  unclusterable=lambda c: "no order on its type" if c == "b" else None)
    assert found.candidates == ["a", "c"]
    assert found.refused == ["distribution on b: no order on its type"]
    assert clustering_candidates(w, KNOWN, {"a": 10.0}).candidates == ["a"]   # c has no distinct count


def test_d1_ranks_by_count_then_name_and_ranks_for_d3():
    w = workload((5, lq(rng("b"))), (5, lq(rng("a"))), (8, lq(rng("c"))), (1, lq(rng("d"))), (6, lq()))
    found = clustering_candidates(w, KNOWN, NDV)
    assert found.candidates == ["c", "a", "b"] and found.near == ["d"]      # d: 1 of 19, above half of 10%
    assert found.rank(["ts", "a"]) == {"c": 0, "a": 1, "b": 2, "d": 3, "ts": 4}


# ----------------------------------------------------------------------------- Top-N columns


def test_top_n_columns_need_min_share_of_all_queries():
    w = workload((2, lq(order_by=[("ts", "desc")], limit=5)), (1, lq(order_by=[("amount", "asc")], limit=5)),
                 (1, lq(order_by=[("ts", "asc"), ("id", "asc")], limit=5)), (16, lq(rng("a"))))
    # ts leads 3 of 20 queries' orders (two orderings, each counted on its own: 10% and 5%)
    assert top_n_columns(w, KNOWN, NDV) == ["ts"]
    assert top_n_columns(w, KNOWN - {"ts"}, NDV) == []
    assert top_n_columns(workload((1, lq(order_by=[("ts", "desc")], limit=5)), (10, lq())), KNOWN, NDV) == []


# ----------------------------------------------------------------------------- D2: the seed's answer


def test_d2_one_candidate_is_linear():
    shape, why = seed_layout(workload((10, lq(rng("a")))), ["a"], [])
    assert shape == lin("a") and why == "a is the one clustering candidate (100% of the filtering queries " \
                                        "filter it) (seed: 90% on a -> linear a)"


def test_d2_ninety_percent_on_a_is_linear_a():
    w = workload((9, lq(rng("a"))), (1, lq(rng("b"))))
    shape, why = seed_layout(w, ["a", "b"], [])
    assert shape == lin("a") and why.startswith("90% of the filtering queries filter a, 10% filter b without it")


def test_d2_a_and_a_plus_b_is_linear_a_b():
    w = workload((5, lq(rng("a"))), (5, lq(rng("a"), rng("b"))))
    shape, why = seed_layout(w, ["a", "b"], [])
    assert shape == lin("a", "b") and why == ("100% of the queries filtering b also filter a "
                                              "(seed: 50% a and 50% a+b -> linear a, b)")


def test_d2_a_and_b_apart_is_hilbert_on_up_to_max_columns():
    w = workload((5, lq(rng("a"))), (5, lq(rng("b"))))
    shape, why = seed_layout(w, ["a", "b", "c", "d", "e"], [])
    assert shape == hil("a", "b", "c", "d") and why == ("only 0% of the queries filtering b also filter a "
                                                        "(seed: 50% a and 50% b -> Hilbert)")


def test_d2_eighty_nine_percent_on_a_is_not_dominant():
    w = workload((8, lq(rng("a"))), (1, lq(rng("b"))), (1, lq(rng("c"))))   # a: 80%, b apart 10%
    assert seed_layout(w, ["a", "b", "c"], [])[0] == hil("a", "b", "c")


def test_d2_without_candidates_the_top_n_column_seeds():
    w = workload((3, lq(order_by=[("ts", "desc")], limit=5)), (7, lq()))
    shape, why = seed_layout(w, [], ["ts"])
    assert shape == lin("ts") and why == ("30% of the queries are Top-N reads by ts: files tight on it let them "
                                          "stop after one file")


def test_d2_the_shapes_tried():
    assert layout_shapes(["a"], [], [], lin("a")) == {lin("a")}
    assert layout_shapes(["a", "b"], [], ["ts"], hil("a", "b")) == {
        lin("a"), lin("b"), lin("a", "b"), lin("b", "a"), zo("a", "b"), hil("a", "b"), lin("ts")}
    three = layout_shapes(["a", "b", "c"], [], [], None)
    assert three == {lin("a"), lin("b"), lin("c"), lin("a", "b"), lin("b", "a"), lin("a", "c"), lin("c", "a"),
                     lin("b", "c"), lin("c", "b"), lin("a", "b", "c"), zo("a", "b"), hil("a", "b"),
                     zo("a", "b", "c"), hil("a", "b", "c")}
    # the candidates beyond MAX_COLUMNS are not tried; near columns join the multi-column curves
    assert all(len(cols) <= 4 and "e" not in cols for cols, _ in layout_shapes(list("abcde"), [], [], None))
    assert layout_shapes(["a"], ["b"], [], lin("a")) == {lin("a"), hil("a", "b"), zo("a", "b"), lin("a", "b")}


# ----------------------------------------------------------------------------- D3: the walk


def test_d3_a_layout_must_save_min_gain_against_the_files_as_they_are():
    declined = choose_layout({AS_NOW: 100.0, lin("a"): 81.0}, AS_NOW)
    assert declined.pick == AS_NOW and declined.steps == []
    assert declined.closest == lin("a") and declined.closest_gain == pytest.approx(0.19)
    taken = choose_layout({AS_NOW: 100.0, lin("a"): 79.0}, AS_NOW)
    assert taken.pick == lin("a") and taken.steps == [(AS_NOW, lin("a"), pytest.approx(0.21), MIN_GAIN)]


def test_d3_a_more_complex_layout_must_beat_the_incumbent_by_layout_margin():
    scores = {AS_NOW: 100.0, lin("a"): 50.0, hil("a", "b"): 46.0, lin("a", "b"): 48.0}
    walk = choose_layout(scores, AS_NOW)
    assert walk.pick == lin("a")
    assert walk.closest == hil("a", "b") and walk.closest_gain == pytest.approx(0.08)
    # every comparison of the walk, from the simplest shape: its margin is the closest call
    assert [(inc, shape) for inc, shape, _, _ in walk.comparisons] == [(AS_NOW, lin("a")), (lin("a"), lin("a", "b")),
                                                                       (lin("a"), hil("a", "b"))]
    assert walk.margin == pytest.approx(LAYOUT_MARGIN - 0.08)   # hilbert(a, b): 8% fewer, against 10%
    better = choose_layout({**scores, hil("a", "b"): 44.0}, AS_NOW)
    assert better.pick == hil("a", "b") and better.steps[-1][:2] == (lin("a"), hil("a", "b"))


def test_d3_the_current_layout_stays_unless_another_is_clearly_better():
    scores = {AS_NOW: 100.0, lin("a", "b"): 50.0, lin("a"): 46.0}
    assert choose_layout(scores, lin("a", "b")).pick == lin("a", "b")          # 8% < LAYOUT_MARGIN
    assert choose_layout({**scores, lin("a"): 44.0}, lin("a", "b")).pick == lin("a")   # 12%


def test_d3_ties_go_to_the_simpler_shape_then_the_candidates_rank():
    scores = {AS_NOW: 100.0, lin("b"): 50.0, lin("a"): 50.0, zo("a", "b"): 50.0}
    assert choose_layout(scores, AS_NOW).pick == lin("a")
    assert choose_layout(scores, AS_NOW, {"b": 0, "a": 1}).pick == lin("b")


def test_d3_in_words():
    scores = {AS_NOW: 100 * MiB, lin("a"): 50 * MiB, hil("a", "b"): 46 * MiB}
    walk = choose_layout(scores, AS_NOW)
    assert walk_text(walk, scores, AS_NOW) == (
        "the files as they are (no layout) reads 100.00 MiB per query; linear(a) reads 50.00 MiB, 50% fewer than "
        "the files as they are (no layout) (needed: 20%); the closest alternative, hilbert(a, b), reads 8% fewer "
        "bytes than linear(a) (a change needs 10%) (rule D3)")
    stays = choose_layout({AS_NOW: 100.0, lin("a"): 90.0}, AS_NOW)
    assert "no layout reads 20% fewer bytes, so the files stay as they are" in \
        walk_text(stays, {AS_NOW: 100.0, lin("a"): 90.0}, AS_NOW)
    kept = choose_layout({AS_NOW: 100.0, lin("a"): 50.0, lin("b"): 60.0}, lin("a"))
    assert "no layout reads 10% fewer bytes, so the current layout stays" in \
        walk_text(kept, {AS_NOW: 100.0, lin("a"): 50.0, lin("b"): 60.0}, lin("a"))
    assert "reads 20% more bytes than linear(a) (against 10%)" in \
        walk_text(kept, {AS_NOW: 100.0, lin("a"): 50.0, lin("b"): 60.0}, lin("a"))


# ----------------------------------------------------------------------------- D5: the qd-tree


TREE = (("a", "b"), "qdtree")


def walk_on_a() -> LayoutChoice:
    return LayoutChoice(lin("a"), [(AS_NOW, lin("a"), 0.5, MIN_GAIN)], [(AS_NOW, lin("a"), 0.5, MIN_GAIN)],
                        hil("a", "b"), 0.05)


def test_d5_a_tree_that_wins_clearly_is_taken():
    walk, taken, note = qdtree_rule(walk_on_a(), TREE, "qdtree(a, b; 9 leaves)", 0.4)
    assert taken and walk.pick == TREE
    assert walk.closest == lin("a") and walk.closest_gain == -0.4           # the curve it beat
    assert walk.comparisons[-1] == (lin("a"), TREE, 0.4, QDTREE_MARGIN)
    assert note == ("; on queries the tree was not fitted on, a qdtree(a, b; 9 leaves) cut on the logged predicates "
                    "reads 40% fewer bytes than linear(a) (rule D5: at least 33%)")


def test_d5_a_tree_that_wins_by_less_than_a_third_is_declined_and_the_margin_says_how_close():
    before = walk_on_a()
    walk, taken, note = qdtree_rule(before, TREE, "qdtree(a, b; 9 leaves)", 0.3)
    assert not taken and walk.pick == lin("a") and walk.closest == hil("a", "b") and before.comparisons == \
        [(AS_NOW, lin("a"), 0.5, MIN_GAIN)]                                   # the input is not changed
    assert note == ("; a qdtree(a, b; 9 leaves) reads 30% fewer bytes than linear(a) on queries it was not fitted "
                    "on (rule D5: needs 33% fewer)")
    assert walk.margin == pytest.approx(QDTREE_MARGIN - 0.3)


def test_d5_the_tree_already_laid_out_is_not_taken_again():
    walk = LayoutChoice(TREE, [], [], None, None)
    assert qdtree_rule(walk, TREE, "qdtree(a, b; 9 leaves)", 0.9)[1] is False


def test_the_distribution_lever_explains_the_walk():
    walk = walk_on_a()
    w = workload((9, lq(rng("a"))), (1, lq(rng("b"))))
    lever = distribution_lever(w, ["a", "b"], walk, decision="DECISION", tree_note="; TREE", seed=lin("a"),
                               seed_reason="SEED", replayed=10, simulated=6, files_before=40.0, files_after=4.0,
                               current=[], recommended="linear(a)")
    assert lever.reason == ("10 queries replayed on 6 simulated layouts; filtered: a 90%, b 10% of the filtering "
                            "queries; DECISION; TREE; decided by a margin of 30.0% of the bytes (seed's rule: SEED)")
    assert (lever.recommended, lever.rule, lever.closest, lever.closest_gain) == (["linear(a)"], "linear(a)",
                                                                                  "hilbert(a, b)", 0.05)
    assert lever.changes == [("linear(a)", "added")]
    kept = distribution_lever(w, [], walk, decision="D", tree_note="", seed=lin("ts"), seed_reason="S", replayed=1,
                              simulated=1, files_before=1.0, files_after=1.0, current=["linear(a)"], recommended=None)
    assert kept.recommended == ["linear(a)"] and not kept.changed and "filtered: no candidate" in kept.reason


# ----------------------------------------------------------------------------- B1, M1, X1


def test_index_kind_by_distinct_values_and_shares():
    assert index_kind(BITMAP_MAX_VALUES + 1, MIN_SHARE, MIN_SHARE) == "bloom"
    assert index_kind(BITMAP_MAX_VALUES + 1, 0.09, 0.5) is None          # ranges: no bitmap on many values
    assert index_kind(BITMAP_MAX_VALUES, 0.0, MIN_SHARE) == "bitmap"
    assert index_kind(20, 0.0, 0.09) is None
    assert index_kind(None, 1.0, 1.0) is None


class Replay:
    """Given replay numbers per column, recording what was asked."""

    def __init__(self, numbers):
        self.numbers, self.asked = numbers, []

    def __call__(self, column, kind):
        self.asked.append((column, kind))
        return self.numbers[column]


def rules(w, replay, *, bloom=(), bitmap=(), bound=None, unsampled=None, ndv=None):
    return index_rules(w, KNOWN, ndv or NDV, unsampled or {}, bloom, bitmap, bound or {}, replay)


def test_b1_a_bloom_filter_that_cuts_the_files_read_is_added():
    w = workload((2, lq(eq("id"))), (8, lq()))
    replay = Replay({"id": (2, 10.0, 1.0)})
    out = rules(w, replay)
    assert out.bloom == {"id"} and out.bitmap == set() and replay.asked == [("id", "bloom")]
    (bloom,) = out.levers
    assert (bloom.lever, bloom.current, bloom.recommended) == ("bloom", [], ["id"])
    assert (bloom.queries, bloom.files_before, bloom.files_after) == (2, 10.0, 1.0)
    assert bloom.reason == ("a Bloom filter serves id: 20% of the queries filter it (20% by = or IN), about 1,000,000 "
                            "distinct values; replay: 10.0 -> 1.0 files for those queries (rule B1)")


def test_b1_a_bloom_filter_that_does_not_pay_is_not_added_naming_min_gain():
    w = workload((2, lq(eq("id"))), (8, lq()))
    out = rules(w, Replay({"id": (2, 10.0, 8.1)}))           # 19% fewer files
    assert out.bloom == set()
    assert out.levers[0].reason == ("a Bloom filter on id would not pay on the recommended layout: replay 10.0 -> "
                                    "8.1 files for its 2 queries (rule B1: at least 20% fewer; not added)")
    assert rules(w, Replay({"id": (2, 10.0, 7.9)})).bloom == {"id"}


def test_m1_a_bitmap_on_a_column_with_few_values():
    w = workload((1, lq(eq("category"))), (1, lq(rng("category"))), (8, lq()))
    out = rules(w, Replay({"category": (2, 10.0, 2.0)}))
    assert out.bitmap == {"category"} and [lever.lever for lever in out.levers] == ["bitmap"]
    assert out.levers[0].reason.startswith("a bitmap serves category: 20% of the queries filter it (10% by = or IN), "
                                           "about 20 distinct values") and "(rule M1)" in out.levers[0].reason


def test_m1_never_a_bitmap_on_a_high_cardinality_column():
    w = workload((3, lq(rng("a"))), (7, lq()))
    replay = Replay({})
    out = rules(w, replay)
    assert replay.asked == [] and out.bitmap == set()
    assert out.levers[0].reason == ("a: filtered by ranges but about 1,000,000 distinct values: no bitmap on a "
                                    "high-cardinality column (rule M1)")


def test_x1_an_index_the_log_no_longer_calls_for_is_removed():
    w = workload((1, lq(eq("b"))), (19, lq(rng("a"))))          # b: 5%
    out = rules(w, Replay({}), bloom=("b",), bitmap=("category",))
    assert out.bloom == set() and out.bitmap == set()
    bloom, bitmap = out.levers
    assert bloom.changes == [("b", "removed")] and bloom.reason == "b: 5% of the queries filter it now " \
                                                                   "(rule X1: removed below 10%)"
    assert bitmap.changes == [("category", "removed")] and "rule X1" in bitmap.reason


def test_an_index_that_no_longer_pays_is_removed_and_one_that_does_is_kept():
    w = workload((5, lq(eq("id"))), (5, lq(eq("b"))))
    out = rules(w, Replay({"id": (5, 10.0, 9.0), "b": (5, 10.0, 1.0)}), bloom=("b", "id"))
    assert out.bloom == {"b"}
    (bloom,) = out.levers
    assert bloom.changes == [("b", "kept"), ("id", "removed")] and "(rule B1: at least 20% fewer; removed)" in \
        bloom.reason
    assert bloom.files_before is None                   # the effect is reported for added indexes only


def test_unsampled_columns_keep_their_indexes_unjudged():
    w = workload((10, lq(eq("tags"))))
    replay = Replay({})
    out = index_rules(w, KNOWN | {"tags"}, NDV, {"tags": "tags is a list"}, ("tags",), (), {}, replay)
    assert out.bloom == {"tags"} and replay.asked == []
    assert out.levers[0].reason == "tags: kept, not simulated (tags is a list)"


def test_d1s_bloom_refusals_are_finished_by_b1():
    bound = {"id": "distribution on id: ... (rule D1)"}
    w = workload((5, lq(eq("id"))), (5, lq(rng("a"))))
    assert rules(w, Replay({"id": (5, 10.0, 1.0)}), bound=bound).refused == \
        ["distribution on id: ... (rule D1); recommended (see bloom)"]
    assert rules(w, Replay({"id": (5, 10.0, 9.0)}), bound=bound).refused == \
        ["distribution on id: ... (rule D1); but a Bloom filter on it would not pay here (10.0 -> 9.0 files, "
         "rule B1), so none is recommended"]
    rare = workload((1, lq(eq("id"))), (19, lq(rng("a"))))
    assert rules(rare, Replay({}), bound=bound).refused == \
        ["distribution on id: ... (rule D1); but only 5% of the queries look it up (rule B1: a Bloom filter needs "
         "10%), so none is recommended"]


def test_no_index_lever_when_there_is_nothing_to_say():
    out = rules(workload((10, lq())), Replay({}))
    assert out.levers == [] and out.refused == [] and out.bloom == out.bitmap == set()


def test_unknown_columns_are_not_judged():
    out = rules(workload((10, lq(eq("gone")))), Replay({}))
    assert out.levers == []


# ----------------------------------------------------------------------------- S1


def test_s1_one_order_serves_its_prefixes():
    w = workload((3, lq(order_by=[("ts", "desc"), ("id", "asc")], limit=10)),
                 (3, lq(order_by=[("ts", "desc")], limit=5)), (4, lq(rng("a"))))
    lever = sort_rule(w, KNOWN, False, ())
    assert lever.recommended == ["ts", "id"] and lever.changes == [("ts", "added"), ("id", "added")]
    assert lever.reason == ("60% of the queries are Top-N reads that the order (ts, id) serves (an order serves its "
                            "prefixes too) (rule S1)")


def test_s1_rare_top_n_reads_get_no_sort_naming_the_threshold():
    w = workload((1, lq(order_by=[("ts", "desc")], limit=5)), (10, lq(rng("a"))))
    lever = sort_rule(w, KNOWN, False, ())
    assert lever.recommended == [] and lever.reason == "Top-N reads are 9% of the queries (rule S1: below 10%)"


def test_s1_an_order_on_a_column_the_table_lacks_is_not_recommended():
    w = workload((5, lq(order_by=[("gone", "desc")], limit=5)), (5, lq()))
    assert sort_rule(w, KNOWN, False, ("ts",)).recommended == ["ts"]


def test_s1_without_top_n_reads_the_sort_is_kept_or_nothing_is_said():
    assert sort_rule(workload((5, lq(rng("a")))), KNOWN, False, ()) is None
    lever = sort_rule(workload((5, lq(rng("a")))), KNOWN, False, ("ts",))
    assert lever.recommended == ["ts"] and not lever.changed and lever.reason == "no Top-N queries in the period"


def test_s1_a_primary_key_tables_sort_is_never_changed():
    w = workload((5, lq(order_by=[("ts", "desc")], limit=5)))
    assert sort_rule(w, KNOWN, True, ()).recommended == []


# ----------------------------------------------------------------------------- P1, P2


SUMS = (("amount", "sum"), ("*", "count"))


def test_p1_a_frequent_grouping_that_shrinks_files_becomes_a_model():
    w = workload((2, lq(group_by=["category"], measures=SUMS)),
                 (1, lq(eq("category"), group_by=["category"], measures=[("amount", "max")])), (7, lq(rng("a"))))
    asked = []
    out = preaggregate_rule(w, KNOWN, {}, lambda g: asked.append(g) or 0.05)
    assert asked == [("category",)] and out.ratios == {("category",): 0.05}
    model = out.models["by_category"]
    assert model == AggregateModel("by_category", ("category",), (("*", "count"), ("amount", "max"), ("amount", "sum")))
    assert out.lever.changes == [("by_category(category: *:count, amount:max, amount:sum)", "added")]
    assert out.lever.reason == "by_category: 30% of the queries group by (category); files shrink to 5.0% of their " \
                               "rows (rule P1)"


def test_p1_no_model_when_files_keep_more_than_the_ratio():
    w = workload((5, lq(group_by=["id"], measures=SUMS)), (5, lq()))
    out = preaggregate_rule(w, KNOWN, {}, lambda g: 0.11)
    assert out.models == {} and out.lever.recommended == []
    assert out.lever.reason == ("GROUP BY id: files keep 11% of their rows after grouping; a pre-aggregate would not "
                                "pay (rule P1: at most 10%)")


def test_p1_a_grouping_whose_queries_filter_other_columns_is_not_measured():
    w = workload((5, lq(rng("a"), group_by=["category"], measures=SUMS)), (5, lq()))
    out = preaggregate_rule(w, KNOWN, {}, lambda g: pytest.fail("not measured"))
    assert out.lever.reason == ("GROUP BY category: most of its queries filter other columns, which a pre-aggregate "
                                "cannot answer (rule P1)")


def test_p1_rare_groupings_say_nothing():
    w = workload((1, lq(group_by=["category"], measures=SUMS)), (10, lq()))
    out = preaggregate_rule(w, KNOWN, {}, lambda g: pytest.fail("not measured"))
    assert out.lever is None and out.models == {}


def test_p1_keeps_a_model_that_already_serves_and_p2_removes_unused_ones():
    serving = AggregateModel("mine", ("category",), (("*", "count"), ("amount", "max"), ("amount", "sum")))
    unused = AggregateModel("old", ("id",), (("amount", "sum"),))
    w = workload((5, lq(group_by=["category"], measures=SUMS)), (5, lq()))
    out = preaggregate_rule(w, KNOWN, {"mine": serving, "old": unused}, lambda g: 0.01)
    assert out.models == {"mine": serving}
    assert out.lever.changes == [(describe_model(serving), "kept"), ("old(id: amount:sum)", "removed")]
    assert out.lever.reason.endswith("; old: no query in the period uses it (rule P2: removed)")


def test_a_model_covers_an_aggregate_query_grouping_by_part_of_it_and_filtering_only_its_columns():
    model = AggregateModel("m", ("category", "ts"), (("amount", "sum"),))
    models = {"m": model}
    assert covering_model(lq(group_by=["category"], measures=[("amount", "sum")]), models) is model
    assert covering_model(lq(eq("ts"), group_by=["category"], measures=[("amount", "sum")]), models) is model
    assert covering_model(lq(eq("a"), group_by=["category"], measures=[("amount", "sum")]), models) is None
    assert covering_model(lq(group_by=["category"], measures=[("amount", "max")]), models) is None
    assert covering_model(lq(eq("ts")), models) is None                      # not an aggregate


# ----------------------------------------------------------------------------- what apply writes


def test_the_options_apply_writes():
    model = AggregateModel("by_category", ("category",), (("*", "count"), ("amount", "sum")))
    old = AggregateModel("old", ("id",), (("amount", "sum"),))
    opts = options_to_apply(layout=(["a", "b"], "hilbert"), tree=None, bloom=(("b",), {"id", "b"}),
                            bitmap=(("category",), set()), sort=((), ["ts", "id"]),
                            models=({"old": old}, {"by_category": model}))
    assert opts == {"clustering.columns": "a,b", "clustering.strategy": "hilbert", "clustering.qdtree": None,
                    "file-index.bloom-filter.columns": "b,id", "file-index.bitmap.columns": None,
                    "sort-within.columns": "ts,id", "aggregate.old.group-by": None, "aggregate.old.measures": None,
                    "aggregate.by_category.group-by": "category",
                    "aggregate.by_category.measures": "*:count,amount:sum"}
    unchanged = options_to_apply(layout=None, tree=None, bloom=(("b",), {"b"}), bitmap=((), set()),
                                 sort=(("ts",), ["ts"]), models=({"old": old}, {"old": old}))
    assert unchanged == {}
