"""Universal compaction planning (`mergetree.compaction`) on hand-built level layouts."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergetree import InvalidArgumentError
from mergetree.table.compaction.planner import (
    CompactionOptions,
    CompactUnit,
    Levels,
    LevelSortedRun,
    RewriteGroup,
    create_unit,
    force_pick_level0,
    full_compaction,
    parse_memory_size,
    pick,
    plan_rewrite,
    restored_levels,
    write_stall,
)
from mergetree.table.sections import interval_partition

MiB = 1024 * 1024


@dataclass(frozen=True)
class File:
    file_name: str
    level: int
    file_size: int
    min_key: tuple
    max_key: tuple
    min_seq: int = 0
    max_seq: int = 0
    delete_count: int = 0
    row_count: int = 1


_seq = itertools.count(1)


def mk(name, level, size, lo=0, hi=None, *, deletes=0, seq=None):
    """A file with integer keys [lo, hi] (hi defaults to lo) and a fresh sequence range."""
    hi = lo if hi is None else hi
    s = next(_seq) * 10 if seq is None else seq
    return File(name, level, size, (lo,), (hi,), s, s + 1, deletes)


def l0(name, size, seq, lo=0, hi=1000, deletes=0):
    return mk(name, 0, size, lo, hi, seq=seq, deletes=deletes)


def names(files):
    return [f.file_name for f in files]


def runs_of(levels):
    return [(run.level, names(run.files)) for run in levels.sorted_runs()]


OPTS = CompactionOptions()  # trigger 5, stop 8, 6 levels (max level 5)


# ----------------------------------------------------------------------------- options


def test_defaults_are_paimons():
    o = CompactionOptions()
    assert o.num_sorted_run_compaction_trigger == 5
    assert o.num_sorted_run_stop_trigger == 8
    assert o.num_levels == 6 and o.max_level == 5
    assert o.max_size_amplification_percent == 200
    assert o.size_ratio == 1
    assert o.target_file_size == 128 * MiB
    assert o.small_file_ratio == 0.7
    assert o.small_file_threshold == 93952409  # floor(0.7 * 128 MiB)
    assert CompactionOptions.from_options({}) == o


def test_stop_trigger_and_levels_follow_the_trigger():
    o = CompactionOptions.from_options({"num-sorted-run.compaction-trigger": "3"})
    assert (o.num_sorted_run_compaction_trigger, o.num_sorted_run_stop_trigger, o.num_levels) == (3, 6, 4)
    o = CompactionOptions.from_options({
        "num-sorted-run.compaction-trigger": "3", "num-sorted-run.stop-trigger": "10", "num-levels": "3"})
    assert (o.num_sorted_run_stop_trigger, o.num_levels) == (10, 3)


def test_stop_trigger_below_trigger_is_raised_to_it():
    o = CompactionOptions.from_options({"num-sorted-run.compaction-trigger": "6",
                                        "num-sorted-run.stop-trigger": "2"})
    assert o.num_sorted_run_stop_trigger == 6


def test_from_options_parses_every_key_and_ignores_others():
    o = CompactionOptions.from_options({
        "compaction.max-size-amplification-percent": " 150 ",
        "compaction.size-ratio": "10",
        "target-file-size": "64 mb",
        "compaction.small-file-ratio": "0.5",
        "bucket": "4", "merge-engine": "deduplicate",
    })
    assert o.max_size_amplification_percent == 150
    assert o.size_ratio == 10
    assert o.target_file_size == 64 * MiB
    assert o.small_file_ratio == 0.5
    assert o.small_file_threshold == 32 * MiB


@pytest.mark.parametrize("text, size", [
    ("128 mb", 128 * MiB), ("128mb", 128 * MiB), ("128MB", 128 * MiB), ("128 m", 128 * MiB),
    ("2 mebibytes", 2 * MiB), ("64 kb", 64 * 1024), ("1k", 1024), ("1g", 1024**3), ("1 GB", 1024**3),
    ("3 gibibytes", 3 * 1024**3), ("1 tb", 1024**4), ("1t", 1024**4), ("1024", 1024), ("10 b", 10),
    ("7 bytes", 7), (" 5 kb ", 5120),
])
def test_memory_sizes(text, size):
    assert parse_memory_size(text) == size
    assert CompactionOptions.from_options({"target-file-size": text}).target_file_size == size


@pytest.mark.parametrize("key, value, message", [
    ("num-sorted-run.compaction-trigger", "five", "must be an integer"),
    ("num-sorted-run.compaction-trigger", "5.0", "must be an integer"),
    ("num-sorted-run.compaction-trigger", "", "must be an integer"),
    ("num-sorted-run.compaction-trigger", "0", "at least 1"),
    ("num-sorted-run.compaction-trigger", "-3", "at least 1"),
    ("num-sorted-run.stop-trigger", "0", "at least 1"),
    ("num-levels", "1", "at least 2"),
    ("compaction.max-size-amplification-percent", "-1", "at least 0"),
    ("compaction.size-ratio", "1.5", "must be an integer"),
    ("target-file-size", "0", "at least 1"),
    ("target-file-size", "12 xb", "unknown size unit"),
    ("target-file-size", "mb", "memory size"),
    ("target-file-size", "1.5 mb", "memory size"),
    ("target-file-size", "-1 mb", "memory size"),
    ("compaction.small-file-ratio", "abc", "must be a number"),
    ("compaction.small-file-ratio", "1.5", "between 0 and 1"),
    ("compaction.small-file-ratio", "-0.1", "between 0 and 1"),
    ("compaction.small-file-ratio", "nan", "between 0 and 1"),
])
def test_bad_option_values(key, value, message):
    with pytest.raises(InvalidArgumentError, match=message) as info:
        CompactionOptions.from_options({key: value})
    assert repr(key) in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("kwargs", [
    {"num_sorted_run_compaction_trigger": True}, {"num_levels": 2.0}, {"size_ratio": "1"},
    {"small_file_ratio": "0.7"}, {"target_file_size": -5},
])
def test_bad_constructor_values(kwargs):
    with pytest.raises(InvalidArgumentError):
        CompactionOptions(**kwargs)


# ----------------------------------------------------------------------------- levels


def test_levels_order_and_runs():
    files = [
        l0("old", 1, seq=10), l0("new", 1, seq=30), l0("mid", 1, seq=20),
        mk("b2", 2, 1, 50, 60), mk("a2", 2, 1, 0, 10),
        mk("x4", 4, 1, 0, 100),
    ]
    levels = Levels(files, 6)
    assert names(levels.level0) == ["new", "mid", "old"]
    assert names(levels.files_at(2)) == ["a2", "b2"]
    assert runs_of(levels) == [(0, ["new"]), (0, ["mid"]), (0, ["old"]), (2, ["a2", "b2"]), (4, ["x4"])]
    assert levels.number_of_sorted_runs() == 5
    assert levels.max_level == 5 and levels.num_levels == 6
    assert levels.non_empty_highest_level() == 4
    assert levels.total_size() == 6
    assert all(isinstance(r, LevelSortedRun) for r in levels.sorted_runs())
    assert levels.sorted_runs()[3].total_size == 2


def test_level0_ties_do_not_depend_on_input_order():
    a = File("a", 0, 1, (0,), (1,), 5, 9)
    b = File("b", 0, 1, (0,), (1,), 7, 9)
    c = File("c", 0, 1, (0,), (1,), 7, 9)
    for perm in itertools.permutations([a, b, c]):
        assert names(Levels(perm, 3).level0) == ["b", "c", "a"]


def test_non_empty_highest_level():
    assert Levels([], 4).non_empty_highest_level() == -1
    assert Levels([l0("a", 1, 1)], 4).non_empty_highest_level() == 0
    assert Levels([l0("a", 1, 1), mk("b", 3, 1)], 4).non_empty_highest_level() == 3


@pytest.mark.parametrize("second", [(5, 20), (10, 20), (0, 3)])
def test_overlap_within_a_level_is_rejected(second):
    # [0, 10] and a file starting inside it, touching it, or nested in it
    files = [mk("a", 1, 1, 0, 10), mk("b", 1, 1, *second)]
    with pytest.raises(InvalidArgumentError, match="level 1 is not a sorted run"):
        Levels(files, 3)


def test_level0_files_may_overlap():
    levels = Levels([l0("a", 1, 1, 0, 10), l0("b", 1, 2, 0, 10)], 3)
    assert levels.number_of_sorted_runs() == 2


@pytest.mark.parametrize("files, message", [
    ([mk("a", 3, 1)], "outside 0..2"),
    ([mk("a", -1, 1)], "outside 0..2"),
    ([mk("a", 1, 1, 0, 1), mk("a", 2, 1, 0, 1)], "listed twice"),
    ([mk("a", 1, 1, 5, 4)], "min_key > max_key"),
])
def test_bad_levels(files, message):
    with pytest.raises(InvalidArgumentError, match=message):
        Levels(files, 3)


def test_numpy_integer_levels_are_accepted_but_not_floats():
    levels = Levels([File("a", np.int64(1), 1, (0,), (1,))], 3)
    assert levels.number_of_sorted_runs() == 1 and levels.non_empty_highest_level() == 1
    with pytest.raises(InvalidArgumentError, match="outside"):
        Levels([File("a", 1.0, 1, (0,), (1,))], 3)


def test_levels_need_two_levels():
    with pytest.raises(InvalidArgumentError):
        Levels([], 1)


def test_with_changes():
    levels = Levels([l0("a", 1, 1), mk("b", 1, 1, 0, 5)], 3)
    after = levels.with_changes([levels.level0[0], levels.files_at(1)[0]], [mk("c", 2, 2, 0, 5)])
    assert runs_of(after) == [(2, ["c"])]
    assert runs_of(levels) == [(0, ["a"]), (1, ["b"])]  # unchanged
    with pytest.raises(InvalidArgumentError, match="not in the levels"):
        levels.with_changes([mk("zzz", 1, 1)], [])


# ----------------------------------------------------------------------------- pick


def layout(sizes, levels_of_tail=(), num_levels=6):
    """Level-0 files of `sizes` (newest first), then one file per level in `levels_of_tail`.

    `levels_of_tail` pairs (level, size)."""
    files = [l0(f"f{i}", size, seq=1000 - i) for i, size in enumerate(sizes)]
    files += [mk(f"L{level}", level, size, 0, 1000) for level, size in levels_of_tail]
    return Levels(files, num_levels)


def stack(*spec):
    """Runs from (level, size) pairs: level-0 entries newest first, one file per other level."""
    files = []
    for i, (level, size) in enumerate(spec):
        if level == 0:
            files.append(l0(f"f{i}", size, seq=1000 - i))
        else:
            files.append(mk(f"L{level}", level, size, 0, 1000))
    return Levels(files, 6)


def test_no_pick_below_the_trigger_even_with_huge_amplification():
    levels = layout([1000, 1000, 1000], [(5, 1)])  # 4 runs < trigger 5
    assert pick(levels, OPTS) is None


def test_size_amplification_gives_full_compaction():
    levels = layout([100, 100, 100, 101], [(5, 200)])  # 401 * 100 > 200 * 200
    unit = pick(levels, OPTS)
    assert unit.reason == "size-amplification"
    assert unit.output_level == 5
    assert names(unit.files) == ["f0", "f1", "f2", "f3", "L5"]
    assert unit.drop_delete is True


def test_size_amplification_threshold_is_strict():
    # newer runs 1 + 10 + 100 + 289 = 400 against 200 in the oldest: exactly 200 %, no pick
    assert pick(stack((0, 1), (1, 10), (2, 100), (4, 289), (5, 200)), OPTS) is None
    unit = pick(stack((0, 1), (1, 10), (2, 100), (4, 289), (5, 199)), OPTS)
    assert unit.reason == "size-amplification" and len(unit.files) == 5


def test_size_amplification_wins_over_size_ratio():
    # the ratio rule alone would take all L0 files (equal sizes) and stop before L5
    levels = layout([300, 300, 300, 300], [(5, 500)])
    unit = pick(levels, OPTS)
    assert unit.reason == "size-amplification" and len(unit.files) == 5
    assert pick(levels, replace(OPTS, max_size_amplification_percent=1000)).reason == "size-ratio"


def test_size_ratio_walks_from_the_newest_run():
    levels = layout([1, 1, 1, 1], [(5, 100)])
    unit = pick(levels, OPTS)
    assert unit.reason == "size-ratio"
    assert names(unit.files) == ["f0", "f1", "f2", "f3"]
    assert unit.output_level == 4


@pytest.mark.parametrize("second, taken", [(101, 2), (102, 1)])
def test_size_ratio_boundary(second, taken):
    # include the next run while candidate * (100 + 1) / 100 >= next: 100 * 1.01 = 101
    levels = stack((0, 100), (1, second), (2, 10**6), (3, 10**7), (5, 10**9))
    unit = pick(levels, OPTS)
    if taken == 1:
        assert unit is None  # one run is not a unit, and 5 runs do not exceed the trigger
    else:
        assert names(unit.files) == ["f0", "L1"] and unit.reason == "size-ratio"
        assert unit.output_level == 1


def test_size_ratio_option_widens_the_walk():
    levels = stack((0, 100), (1, 150), (2, 10**6), (3, 10**7), (5, 10**9))
    assert pick(levels, OPTS) is None
    unit = pick(levels, replace(OPTS, size_ratio=50))
    assert names(unit.files) == ["f0", "L1"]


def test_size_ratio_wins_over_run_count():
    # 4 runs > trigger 2: run count would force 3 runs, the ratio rule picks 2 first
    o = CompactionOptions(num_sorted_run_compaction_trigger=2, num_levels=6)
    unit = pick(stack((0, 10), (1, 1), (2, 100), (5, 10**6)), o)
    assert unit.reason == "size-ratio" and names(unit.files) == ["f0", "L1"] and unit.output_level == 1
    unit = pick(stack((0, 1), (1, 10), (2, 100), (5, 10**6)), o)  # no ratio prefix: run count
    assert unit.reason == "run-count" and names(unit.files) == ["f0", "L1", "L2"]
    assert unit.output_level == 4


def test_run_count_forces_the_surplus():
    # 6 runs, trigger 5, sizes grow tenfold: no amplification, no ratio prefix
    levels = stack((0, 1), (1, 10), (2, 100), (3, 1000), (4, 10000), (5, 10**6))
    unit = pick(levels, OPTS)
    assert unit.reason == "run-count"
    assert names(unit.files) == ["f0", "L1"]  # 6 - 5 + 1 forced runs
    assert unit.output_level == 1 and unit.drop_delete is False


def test_run_count_extends_by_ratio():
    # forced 1 + 10 = 11; 11 * 1.01 = 11.11 < 12: stop
    levels = stack((0, 1), (1, 10), (2, 12), (3, 1000), (4, 10000), (5, 10**6))
    assert names(pick(levels, OPTS).files) == ["f0", "L1"]
    # 11.11 >= 11: take L2 too; 22.22 < 1000: stop
    levels = stack((0, 1), (1, 10), (2, 11), (3, 1000), (4, 10000), (5, 10**6))
    unit = pick(levels, OPTS)
    assert names(unit.files) == ["f0", "L1", "L2"] and unit.output_level == 2


def test_run_count_from_level_0_only():
    # 6 level-0 files of growing size: the forced two are followed by level 0, so all of
    # level 0 is pulled in and, there being nothing else, the output is the max level
    unit = pick(layout([1, 10, 100, 1000, 10000, 100000]), OPTS)
    assert unit.reason == "run-count" and len(unit.files) == 6 and unit.output_level == 5


def test_exactly_trigger_runs_without_ratio_is_no_pick():
    assert pick(layout([1, 10, 100, 1000], [(5, 10**6)]), OPTS) is None


def test_force_pick_level0_takes_every_level0_run():
    """Paimon's forcePickL0 (deletion-vector tables): where `pick` finds nothing, all of level 0,
    extended by size ratio, into the level below the next run."""
    levels = layout([1], [(3, 10**6), (5, 10**7)])  # one small level-0 file: pick finds nothing
    assert pick(levels, OPTS) is None
    unit = force_pick_level0(levels, OPTS)
    assert unit.reason == "force-level0" and names(unit.files) == ["f0"] and unit.output_level == 2
    unit = force_pick_level0(layout([1, 1], [(3, 2), (5, 10**7)]), OPTS)  # 2 * 1.01 >= 2: L3 joins
    assert names(unit.files) == ["f0", "f1", "L3"] and unit.output_level == 4
    assert force_pick_level0(layout([], [(5, 100)]), OPTS) is None  # no level 0: nothing forced
    assert force_pick_level0(layout([4, 5]), OPTS).output_level == 5  # level 0 alone: the max level


def test_pick_checks_num_levels():
    with pytest.raises(InvalidArgumentError, match="num-levels"):
        pick(layout([1], num_levels=4), OPTS)


# ----------------------------------------------------------------------------- output level


def test_all_runs_go_to_the_max_level():
    levels = layout([1, 1], [(2, 1)])
    unit = create_unit(levels, 3)
    assert unit.output_level == 5 and unit.drop_delete is True


def test_output_is_one_below_the_next_run():
    levels = layout([1, 1], [(3, 1), (5, 1)])
    unit = create_unit(levels, 2)  # next run is L3
    assert unit.output_level == 2 and names(unit.files) == ["f0", "f1"]
    assert unit.drop_delete is False
    unit = create_unit(levels, 3)  # L0, L0, L3 -> next is L5
    assert unit.output_level == 4 and names(unit.files) == ["f0", "f1", "L3"]


def test_next_run_at_level_1_pulls_it_in():
    levels = layout([1, 1], [(1, 1), (4, 1)])
    unit = create_unit(levels, 2)  # max(0, 1 - 1) == 0 -> take L1, output 1
    assert unit.output_level == 1 and names(unit.files) == ["f0", "f1", "L1"]
    assert unit.drop_delete is False


def test_next_run_at_level_0_pulls_in_all_of_level_0_and_one_more():
    levels = layout([1, 1, 1], [(3, 1), (5, 1)])
    unit = create_unit(levels, 1)
    assert unit.output_level == 3 and names(unit.files) == ["f0", "f1", "f2", "L3"]


def test_pulling_in_everything_means_the_max_level():
    levels = layout([1, 1, 1], [(2, 1)])
    unit = create_unit(levels, 1)  # takes f1, f2, then L2, which is the last run
    assert unit.output_level == 5 and len(unit.files) == 4 and unit.drop_delete is True
    levels = layout([1, 1, 1])  # only level 0
    unit = create_unit(levels, 2)
    assert unit.output_level == 5 and len(unit.files) == 3 and unit.drop_delete is True


def test_drop_delete_is_measured_before_the_compaction():
    # only level-0 data: the max-level output is the highest non-empty level after, too
    unit = create_unit(layout([1, 1]), 2)
    assert unit.output_level == 5 and unit.drop_delete is True
    # L2 output below the existing L4: older data remains, keep retractions
    unit = create_unit(layout([1], [(3, 1), (4, 1)]), 1)
    assert unit.output_level == 2 and unit.drop_delete is False


def test_drop_delete_rule_on_any_output_level():
    # output == highest non-empty level (not the max) also drops; output 0 never does
    levels = layout([1], [(3, 1)])
    unit = create_unit(levels, 2)
    assert unit.output_level == 5 and unit.drop_delete
    unit = create_unit(levels, 1)
    assert unit.output_level == 2 and not unit.drop_delete


def test_create_unit_bounds():
    with pytest.raises(InvalidArgumentError):
        create_unit(layout([1, 1]), 0)
    with pytest.raises(InvalidArgumentError):
        create_unit(layout([1, 1]), 3)


# ----------------------------------------------------------------------------- full compaction


def test_full_compaction():
    assert full_compaction(Levels([], 4)) is None
    assert full_compaction(Levels([mk("a", 3, 1, 0, 1), mk("b", 3, 1, 2, 3)], 4)) is None
    with_deletes = Levels([mk("a", 3, 1, 0, 1), mk("b", 3, 1, 2, 3, deletes=1)], 4)
    unit = full_compaction(with_deletes)
    assert unit.output_level == 3 and unit.drop_delete and names(unit.files) == ["a", "b"]
    unit = full_compaction(Levels([mk("a", 2, 1)], 4))
    assert unit.output_level == 3 and unit.drop_delete and unit.reason == "full"
    unit = full_compaction(layout([1, 2], [(2, 3), (5, 4)]))
    assert names(unit.files) == ["f0", "f1", "L2", "L5"] and unit.output_level == 5 and unit.drop_delete


# ----------------------------------------------------------------------------- write stall


def test_write_stall_threshold():
    assert not write_stall(layout([1] * 8), OPTS)  # 8 runs == stop trigger
    assert write_stall(layout([1] * 9), OPTS)
    assert not write_stall(layout([1] * 7, [(3, 1), (5, 1)]), replace(OPTS, num_sorted_run_stop_trigger=9))
    assert write_stall(layout([1] * 3), CompactionOptions(num_sorted_run_compaction_trigger=1,
                                                          num_sorted_run_stop_trigger=2))


# ----------------------------------------------------------------------------- interval partition


def iv(name, lo, hi):
    return mk(name, 0, 1, lo, hi)


def shape(sections):
    return [[names(run) for run in section] for section in sections]


def test_partition_empty():
    assert interval_partition([]) == []


def test_partition_disjoint_files_are_separate_sections():
    files = [iv("c", 20, 29), iv("a", 0, 9), iv("b", 10, 19)]
    assert shape(interval_partition(files)) == [[["a"]], [["b"]], [["c"]]]


def test_partition_touching_files_overlap():
    assert shape(interval_partition([iv("a", 0, 10), iv("b", 10, 20)])) == [[["a"], ["b"]]]


def test_partition_chained_overlaps():
    files = [iv("a", 0, 10), iv("b", 5, 15), iv("c", 12, 20), iv("d", 30, 40)]
    assert shape(interval_partition(files)) == [[["a", "c"], ["b"]], [["d"]]]


def test_partition_nested_ranges():
    files = [iv("a", 0, 100), iv("b", 10, 20), iv("c", 30, 40), iv("d", 50, 60)]
    assert shape(interval_partition(files)) == [[["a"], ["b", "c", "d"]]]


def test_partition_reuses_the_run_that_ends_first():
    # a ends at 50, b at 10: c (starting at 20) joins b's run
    files = [iv("a", 0, 50), iv("b", 1, 10), iv("c", 20, 30)]
    assert shape(interval_partition(files)) == [[["a"], ["b", "c"]]]


def test_partition_ties_and_composite_keys():
    a = File("a", 0, 1, (1, "x"), (1, "z"))
    b = File("b", 0, 1, (1, "x"), (1, "y"))
    c = File("c", 0, 1, (1, "za"), (2, ""))
    assert shape(interval_partition([a, b, c])) == [[["b"], ["a"]], [["c"]]]


def test_partition_does_not_depend_on_input_order():
    files = [iv("a", 0, 10), iv("b", 5, 15), iv("c", 12, 20), iv("d", 0, 3), iv("e", 30, 31)]
    expected = shape(interval_partition(files))
    for perm in itertools.permutations(files):
        assert shape(interval_partition(perm)) == expected


def max_overlap_depth(files):
    # closed intervals: the deepest point is some file's min_key
    return max(sum(1 for g in files if g.min_key <= f.min_key <= g.max_key) for f in files)


intervals = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12)), min_size=1, max_size=30).map(
    lambda pairs: [iv(f"f{i}", lo, lo + width) for i, (lo, width) in enumerate(pairs)])


@settings(max_examples=300, deadline=None)
@given(intervals)
def test_partition_properties(files):
    sections = interval_partition(files)
    flat = [f for section in sections for run in section for f in run]
    assert sorted(names(flat)) == sorted(names(files))  # every file exactly once
    for section in sections:
        for run in section:
            assert run, "empty run"
            for prev, nxt in itertools.pairwise(run):
                assert prev.max_key < nxt.min_key  # non-overlapping, key order
        members = [f for run in section for f in run]
        assert len(section) == max_overlap_depth(members)  # the fewest runs possible
    bounds = [(min(f.min_key for r in s for f in r), max(f.max_key for r in s for f in r)) for s in sections]
    for (_, hi), (lo, _) in itertools.pairwise(bounds):
        assert hi < lo  # sections are disjoint and ascending
    assert max(len(s) for s in sections) == max_overlap_depth(files)


# ----------------------------------------------------------------------------- rewrite plan

SMALL = OPTS.small_file_threshold - 1
LARGE = OPTS.small_file_threshold


def unit_of(files, output_level, drop_delete=None):
    drop = output_level != 0 and output_level >= max(f.level for f in files) if drop_delete is None \
        else drop_delete
    return CompactUnit(output_level, tuple(files), drop)


def plan_shape(plan):
    return {
        "rewrites": [names(g.files) for g in plan.rewrites],
        "upgrades": names(plan.upgrades),
        "unchanged": names(plan.unchanged),
    }


def test_overlapping_files_are_rewritten():
    files = [mk("a", 0, LARGE, 0, 10), mk("b", 1, LARGE, 5, 15)]
    plan = plan_rewrite(unit_of(files, 2), OPTS)
    assert plan_shape(plan) == {"rewrites": [["a", "b"]], "upgrades": [], "unchanged": []}
    (group,) = plan.rewrites
    assert [names(run) for run in group.sorted_runs()] == [["a"], ["b"]]


def test_large_non_overlapping_file_is_upgraded():
    files = [mk("a", 0, LARGE, 0, 10), mk("b", 1, LARGE, 20, 30)]
    plan = plan_rewrite(unit_of(files, 2), OPTS)
    assert plan_shape(plan) == {"rewrites": [], "upgrades": ["a", "b"], "unchanged": []}


def test_small_file_threshold_is_strict():
    assert not plan_rewrite(unit_of([mk("a", 0, LARGE, 0, 1), mk("b", 0, LARGE, 2, 3)], 2), OPTS).rewrites
    assert plan_rewrite(unit_of([mk("a", 0, SMALL, 0, 1), mk("b", 0, SMALL, 2, 3)], 2), OPTS).rewrites


def test_lone_small_file_is_upgraded_not_rewritten():
    files = [mk("a", 0, SMALL, 0, 10), mk("b", 1, LARGE, 20, 30), mk("c", 1, SMALL, 40, 50)]
    assert plan_shape(plan_rewrite(unit_of(files, 2), OPTS)) == {
        "rewrites": [], "upgrades": ["a", "b", "c"], "unchanged": []}


def test_adjacent_small_files_are_rewritten_together():
    files = [mk("a", 0, SMALL, 0, 10), mk("b", 1, SMALL, 20, 30), mk("c", 1, SMALL, 40, 50)]
    plan = plan_rewrite(unit_of(files, 2), OPTS)
    assert plan_shape(plan) == {"rewrites": [["a", "b", "c"]], "upgrades": [], "unchanged": []}
    (group,) = plan.rewrites
    assert [len(s) for s in group.sections] == [1, 1, 1]
    assert [names(run) for run in group.sorted_runs()] == [["a", "b", "c"]]


def test_large_file_splits_small_groups():
    files = [mk("s1", 0, SMALL, 0, 1), mk("s2", 1, SMALL, 2, 3), mk("big", 1, LARGE, 4, 5),
             mk("s3", 1, SMALL, 6, 7), mk("s4", 0, SMALL, 8, 9)]
    assert plan_shape(plan_rewrite(unit_of(files, 2), OPTS)) == {
        "rewrites": [["s1", "s2"], ["s3", "s4"]], "upgrades": ["big"], "unchanged": []}


def test_overlap_section_absorbs_neighbouring_small_files():
    files = [mk("x", 0, LARGE, 0, 10), mk("y", 1, LARGE, 5, 15),  # overlapping section
             mk("s", 1, SMALL, 20, 25),                            # small neighbour
             mk("big", 1, LARGE, 30, 40),
             mk("z", 0, LARGE, 50, 60), mk("w", 1, LARGE, 55, 65)]  # another overlapping section
    plan = plan_rewrite(unit_of(files, 2), OPTS)
    shp = plan_shape(plan)
    assert [sorted(g) for g in shp["rewrites"]] == [["s", "x", "y"], ["w", "z"]]
    assert shp["upgrades"] == ["big"]
    first = plan.rewrites[0]
    assert [len(s) for s in first.sections] == [2, 1]
    runs = first.sorted_runs()
    assert len(runs) == 2 and sorted(names(runs[0] + runs[1])) == ["s", "x", "y"]
    for run in runs:
        assert all(p.max_key < n.min_key for p, n in itertools.pairwise(run))


def test_files_already_at_the_output_level():
    files = [mk("a", 0, LARGE, 0, 10), mk("b", 2, LARGE, 20, 30), mk("c", 2, SMALL, 40, 50)]
    assert plan_shape(plan_rewrite(unit_of(files, 2), OPTS)) == {
        "rewrites": [], "upgrades": ["a"], "unchanged": ["b", "c"]}
    # a small file at the output level is still merged with a small neighbour
    files = [mk("a", 0, SMALL, 0, 10), mk("b", 2, SMALL, 20, 30)]
    assert plan_shape(plan_rewrite(unit_of(files, 2), OPTS))["rewrites"] == [["a", "b"]]


def test_file_with_deletes_is_rewritten_on_its_way_to_the_max_level():
    files = [mk("a", 0, LARGE, 0, 10, deletes=3), mk("b", 3, LARGE, 20, 30),
             mk("c", 0, SMALL, 40, 50, deletes=1)]
    plan = plan_rewrite(unit_of(files, 5), OPTS)
    assert plan.drop_delete
    assert plan_shape(plan) == {"rewrites": [["a"], ["c"]], "upgrades": ["b"], "unchanged": []}


def test_file_with_deletes_is_upgraded_below_the_max_level():
    files = [mk("a", 0, LARGE, 0, 10, deletes=3), mk("b", 3, LARGE, 20, 30)]
    plan = plan_rewrite(unit_of(files, 4), OPTS)  # drop_delete (4 >= 3) but not the max level
    assert plan.drop_delete
    assert plan_shape(plan) == {"rewrites": [], "upgrades": ["a", "b"], "unchanged": []}


def test_file_with_deletes_is_upgraded_when_deletes_are_kept():
    files = [mk("a", 0, LARGE, 0, 10, deletes=3)]
    plan = plan_rewrite(unit_of(files, 5, drop_delete=False), OPTS)
    assert plan_shape(plan) == {"rewrites": [], "upgrades": ["a"], "unchanged": []}


def test_full_compaction_of_the_max_level_rewrites_only_files_with_deletes():
    levels = Levels([mk("a", 5, LARGE, 0, 1), mk("b", 5, LARGE, 2, 3, deletes=1), mk("c", 5, LARGE, 4, 5)], 6)
    plan = plan_rewrite(full_compaction(levels), OPTS)
    assert plan_shape(plan) == {"rewrites": [["b"]], "upgrades": [], "unchanged": ["a", "c"]}


def test_plan_sections_and_bad_output_level():
    files = [mk("a", 0, LARGE, 0, 10), mk("b", 1, LARGE, 5, 15), mk("c", 1, LARGE, 20, 30)]
    plan = plan_rewrite(unit_of(files, 2), OPTS)
    assert [[names(r) for r in s] for s in plan.sections] == [[["a"], ["b"]], [["c"]]]
    with pytest.raises(InvalidArgumentError, match="outside"):
        plan_rewrite(CompactUnit(6, tuple(files), True), OPTS)
    empty = plan_rewrite(CompactUnit(5, (), True), OPTS)
    assert (empty.rewrites, empty.upgrades, empty.unchanged, empty.sections) == ((), (), (), ())


def test_rewrite_group_sorted_runs_join_sections():
    a, b, c, d = iv("a", 0, 5), iv("b", 3, 8), iv("c", 10, 12), iv("d", 11, 20)
    group = RewriteGroup((((a,), (b,)), ((c,), (d,)), ((iv("e", 30, 31),),)))
    assert [names(r) for r in group.sorted_runs()] == [["a", "c", "e"], ["b", "d"]]
    assert names(group.files) == ["a", "b", "c", "d", "e"]


# ----------------------------------------------------------------------------- simulation

_names = itertools.count()


def merged(files, level, drop_delete):
    files = list(files)
    return File(
        f"out{next(_names)}", level, sum(f.file_size for f in files),
        min(f.min_key for f in files), max(f.max_key for f in files),
        min(f.min_seq for f in files), max(f.max_seq for f in files),
        0 if drop_delete else sum(f.delete_count for f in files), sum(f.row_count for f in files))


def execute_whole(levels, unit):
    """Replace the unit by one file at the output level."""
    return levels.with_changes(unit.files, [merged(unit.files, unit.output_level, unit.drop_delete)])


def execute_plan(levels, unit, options):
    """Carry out `plan_rewrite`: one file per rewrite group, level changes for upgrades."""
    plan = plan_rewrite(unit, options)
    seen = names(plan.upgrades) + names(plan.unchanged) + [n for g in plan.rewrites for n in names(g.files)]
    assert sorted(seen) == sorted(names(unit.files)), "every unit file handled exactly once"
    for group in plan.rewrites:
        for run in group.sorted_runs():
            assert all(p.max_key < n.min_key for p, n in itertools.pairwise(run))
    added = [merged(g.files, unit.output_level, unit.drop_delete) for g in plan.rewrites]
    added += [replace(f, level=unit.output_level) for f in plan.upgrades]
    removed = [f for g in plan.rewrites for f in g.files] + list(plan.upgrades)
    return levels.with_changes(removed, added)


flushes = st.lists(
    st.tuples(st.integers(0, 200), st.integers(0, 60), st.integers(1, 400), st.integers(0, 3)),
    min_size=1, max_size=40)
option_sets = st.builds(
    lambda trigger, extra_levels, amp, ratio: CompactionOptions(
        num_sorted_run_compaction_trigger=trigger, num_levels=max(2, trigger + 1 - extra_levels),
        max_size_amplification_percent=amp, size_ratio=ratio, target_file_size=300, small_file_ratio=0.7),
    st.integers(1, 6), st.integers(0, 4), st.sampled_from([0, 50, 200, 1000, 10**6]), st.sampled_from([0, 1, 20, 100]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flushes, option_sets, st.sampled_from(["whole", "plan"]), st.booleans())
def test_simulated_compaction_keeps_the_lsm_bounded(inflow, options, mode, uniform):
    """Flush files into level 0 and compact until `pick` says stop, after every flush.

    With `uniform`, every flush has the same size (as with a fixed write buffer), which
    makes the size-ratio rule stop at level boundaries and fill the middle levels."""
    levels = Levels([], options.num_levels)
    seq = 0
    for lo, width, size, deletes in inflow:
        seq += 10
        flushed = File(f"flush{seq}", 0, 100 if uniform else size, (lo,), (lo + width,), seq, seq + 9, deletes)
        levels = levels.with_changes([], [flushed])
        total = levels.total_size()
        for _ in range(100):
            unit = pick(levels, options)
            if unit is None:
                break
            before = levels
            assert len(unit.files) >= 2
            covers_all = set(names(unit.files)) == set(names(levels.all_files()))
            assert unit.drop_delete == covers_all  # no older data may stay outside a dropping unit
            assert unit.output_level != 0
            # Levels() rejects any overlap within a level >= 1
            levels = execute_whole(levels, unit) if mode == "whole" else execute_plan(levels, unit, options)
            assert levels.number_of_sorted_runs() < before.number_of_sorted_runs()
            assert levels.total_size() == total
        else:
            pytest.fail("compaction did not settle")
        assert levels.number_of_sorted_runs() <= options.num_sorted_run_compaction_trigger
        assert not write_stall(levels, options)
        assert all(f.delete_count == 0 for f in levels.files_at(levels.max_level))


@pytest.mark.parametrize("mode", ["whole", "plan"])
def test_steady_stream_of_equal_flushes_fills_the_middle_levels(mode):
    """200 equal flushes with the default options: every level gets used, runs stay bounded."""
    options = CompactionOptions(target_file_size=300)
    levels = Levels([], options.num_levels)
    reasons, outputs = set(), set()
    for i in range(200):
        lo = i * 7 % 50
        levels = levels.with_changes([], [File(f"flush{i}", 0, 100, (lo,), (lo + 30,), 10 * i, 10 * i + 9)])
        while (unit := pick(levels, options)) is not None:
            reasons.add(unit.reason)
            outputs.add(unit.output_level)
            levels = execute_whole(levels, unit) if mode == "whole" else execute_plan(levels, unit, options)
        assert levels.number_of_sorted_runs() <= options.num_sorted_run_compaction_trigger
    assert outputs == {1, 2, 3, 4, 5}
    assert reasons == {"size-amplification", "size-ratio", "run-count"}
    assert levels.total_size() == 200 * 100


def test_levels_restore_as_java_at_least_the_highest_level_in_use_plus_one():
    """After a full compaction under the default trigger (files at level 5), a lowered
    `num-sorted-run.compaction-trigger` (3 levels) neither refuses the files nor loses them:
    as Java's `Levels`, the bucket has as many levels as its highest file needs."""
    options = CompactionOptions(num_sorted_run_compaction_trigger=2)
    assert options.num_levels == 3
    files = [mk("top", 5, MiB, 0, 10), l0("a", MiB, 100), l0("b", MiB, 101)]
    levels, widened = restored_levels(files, options)
    assert levels.num_levels == widened.num_levels == 6 and widened.max_level == 5
    assert widened.num_sorted_run_compaction_trigger == 2
    unit = pick(levels, widened)
    assert unit is not None and unit.output_level <= 5
    plan_rewrite(unit, widened)  # no "outside 0..2"
    full = full_compaction(levels)
    assert full is not None and full.output_level == 5
    same, unchanged = restored_levels([l0("c", MiB, 5)], options)
    assert same.num_levels == 3 and unchanged is options
    with pytest.raises(InvalidArgumentError, match="level"):
        Levels(files, 3)  # the raw constructor still checks
