"""Planning of universal compaction for a primary-key LSM table (pure logic, no I/O).

This module decides *what* to compact; the table layer reads, merges and writes.
It follows the universal compaction of Apache Paimon's primary-key tables
(rules summarised in the project's research note on Paimon, section 3), written
from those semantics.

The shape of the data
---------------------
A bucket holds data files (anything with the attributes of `FileMeta`), each at
a level ``0 .. num_levels - 1``:

* level 0 holds freshly flushed files whose key ranges may overlap; every one of
  them is a sorted run of its own, newest (highest ``max_seq``) first;
* each level ``1 .. num_levels - 1`` is a single sorted run: its files have
  disjoint key ranges (key ranges are closed: ``[min_key, max_key]``).

`Levels.sorted_runs` lists the runs newest first: the level-0 files, then the
non-empty levels in ascending order.  The last run is the oldest and normally
the largest.

Picking (`pick`), in this order, the first rule that gives a unit wins:

1. **Size amplification.**  With at least ``num-sorted-run.compaction-trigger``
   runs, if ``100 * size(all runs but the last) > max-size-amplification-percent
   * size(last run)`` compact everything (to the max level).
2. **Size ratio.**  With at least ``trigger`` runs: start with the first (newest)
   run and keep adding the next run while ``candidate * (100 + size-ratio) / 100
   >= size(next)``, where ``candidate`` is the summed size of the runs taken so
   far.  A unit needs at least two runs.
3. **Run count.**  With more than ``trigger`` runs: take the first
   ``runs - trigger + 1`` runs unconditionally, then extend by rule 2's test.

The unit's output level (`create_unit`): all runs -> the max level; otherwise
``max(0, level of the first run left out - 1)``.  If that is 0 the unit grows
run by run until it has taken a run at a level above 0, whose level becomes the
output level (so the output never lands in level 0).  If the unit ends up with
every run, the output level is the max level.

``drop_delete`` is ``output_level != 0 and output_level >= highest non-empty
level`` (measured before the compaction): only then is no older version of any
key left outside the unit, so retractions have nothing left to cancel and may
be dropped.

Rewriting (`plan_rewrite`): the unit's files are split by `interval_partition`
into key-disjoint sections, each holding the fewest sorted runs that cover it.
Walking the sections in key order, a section of several runs must be merged;
a section of one run is a single file (a file that overlaps nothing).  Files
smaller than ``floor(target-file-size * compaction.small-file-ratio)`` are
collected together with the neighbouring merge sections and small files; a
large file ends the current collection (which becomes one rewrite group) and
is upgraded: only its level changes, no data is rewritten.  See `plan_rewrite`
for the exact rules and the exceptions.

Readings of rules that the note leaves open
-------------------------------------------
* Arithmetic is exact integer arithmetic (Paimon compares the size ratio in
  floating point; for sizes below 2**53 bytes the results agree).
* The small-file threshold is ``floor(target_file_size * small_file_ratio)``
  computed exactly from the ratio's decimal text; a file is small when its
  size is *strictly below* it.  (Paimon's historical formula ``target / 10 * 7``
  differs by a few bytes at most.)
* Rewrite groups can span several sections: a single-run section is always a
  single file (see above), so "small files are rewritten together with adjacent
  small files" only means anything across sections.  A group's sections are
  key-disjoint and ascending, so the table layer can merge section by section
  and concatenate, or merge `RewriteGroup.sorted_runs` in one go.
* A small file with no neighbour to merge with is upgraded, not rewritten:
  rewriting one non-overlapping file alone would reproduce it.
* ``num-sorted-run.stop-trigger`` below the compaction trigger is raised to the
  trigger (as Paimon does) rather than rejected.
* `full_compaction` has nothing to do when there are no files, or when all
  files already form one run at the max level and none contains retractions.
  If some do, it compacts that run with ``drop_delete`` so that
  `plan_rewrite` rewrites exactly those files.
* Ties in level 0 (equal ``max_seq``) are broken by higher ``min_seq`` first,
  then by file name, so the order never depends on the input order.
* Paimon's time- and size-triggered early full compaction
  (``compaction.optimization-interval`` and friends) is not implemented: it
  needs a clock and commit history, which belong to the table layer, which can
  call `full_compaction` itself.

Unknown option keys are ignored by `CompactionOptions.from_options`, because the
table layer passes the table's whole option map.
"""
from __future__ import annotations

import itertools
import math
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_FLOOR, Decimal
from typing import Any, Generic, Protocol, TypeVar

from ...errors import InvalidArgumentError
from ..sections import interval_partition

__all__ = [
    "CompactUnit",
    "CompactionOptions",
    "CompactionPlan",
    "FileMeta",
    "LevelSortedRun",
    "Levels",
    "RewriteGroup",
    "create_unit",
    "force_pick_level0",
    "full_compaction",
    "parse_memory_size",
    "pick",
    "plan_rewrite",
    "restored_levels",
    "write_stall",
]


class FileMeta(Protocol):
    """What the planner reads from a data file's metadata."""

    @property
    def file_name(self) -> str: ...
    @property
    def level(self) -> int: ...
    @property
    def row_count(self) -> int: ...
    @property
    def file_size(self) -> int: ...
    @property
    def min_key(self) -> tuple: ...
    @property
    def max_key(self) -> tuple: ...
    @property
    def min_seq(self) -> int: ...
    @property
    def max_seq(self) -> int: ...
    @property
    def delete_count(self) -> int:
        """Rows that are retractions (-U or -D)."""
        ...


F = TypeVar("F", bound=FileMeta)

# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------

KEY_TRIGGER = "num-sorted-run.compaction-trigger"
KEY_STOP_TRIGGER = "num-sorted-run.stop-trigger"
KEY_NUM_LEVELS = "num-levels"
KEY_MAX_SIZE_AMP = "compaction.max-size-amplification-percent"
KEY_SIZE_RATIO = "compaction.size-ratio"
KEY_TARGET_FILE_SIZE = "target-file-size"
KEY_SMALL_FILE_RATIO = "compaction.small-file-ratio"

MiB = 1024 * 1024

_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1024, "kb": 1024, "kibibytes": 1024,
    "m": 1024**2, "mb": 1024**2, "mebibytes": 1024**2,
    "g": 1024**3, "gb": 1024**3, "gibibytes": 1024**3,
    "t": 1024**4, "tb": 1024**4, "tebibytes": 1024**4,
}
_SIZE_RE = re.compile(r"\s*(\d+)\s*([A-Za-z]*)\s*")
_INT_RE = re.compile(r"\s*([+-]?\d+)\s*")


def parse_memory_size(text: str, key: str = "size") -> int:
    """Parse a Paimon/Flink memory size: ``"128 mb"``, ``"128mb"``, ``"1g"``, ``"1024"`` (bytes).

    Units (case-insensitive, all powers of 1024): b/bytes, k/kb/kibibytes, m/mb/mebibytes,
    g/gb/gibibytes, t/tb/tebibytes.  Raises `InvalidArgumentError` naming `key`.
    """
    match = _SIZE_RE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidArgumentError(
            f"option {key!r} must be a memory size such as '128 mb' or '1048576', got {text!r}")
    unit = match.group(2).lower()
    if unit not in _UNITS:
        raise InvalidArgumentError(
            f"option {key!r} has an unknown size unit {match.group(2)!r} in {text!r} "
            f"(use b, kb, mb, gb or tb)")
    return int(match.group(1)) * _UNITS[unit]


def _parse_int(text: str, key: str) -> int:
    match = _INT_RE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidArgumentError(f"option {key!r} must be an integer, got {text!r}")
    return int(match.group(1))


def _parse_ratio(text: str, key: str) -> float:
    try:
        value = float(text.strip())
    except (AttributeError, ValueError):
        raise InvalidArgumentError(f"option {key!r} must be a number, got {text!r}") from None
    return value


@dataclass(frozen=True)
class CompactionOptions:
    """Universal compaction settings, with Paimon's defaults for primary-key tables.

    ``num_sorted_run_stop_trigger`` defaults to ``trigger + 3`` and is never below
    the trigger; ``num_levels`` defaults to ``trigger + 1``.  Both are resolved in
    the constructor, so after construction every field is a number.
    """

    num_sorted_run_compaction_trigger: int = 5
    # None: derived from the trigger; always an int once constructed (see __post_init__)
    num_sorted_run_stop_trigger: int = None  # type: ignore[assignment]
    num_levels: int = None  # type: ignore[assignment]
    max_size_amplification_percent: int = 200
    size_ratio: int = 1
    target_file_size: int = 128 * MiB
    small_file_ratio: float = 0.7

    def __post_init__(self) -> None:
        def check_int(value: Any, key: str, minimum: int) -> int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgumentError(f"option {key!r} must be an integer, got {value!r}")
            if value < minimum:
                raise InvalidArgumentError(f"option {key!r} must be at least {minimum}, got {value}")
            return value

        trigger = check_int(self.num_sorted_run_compaction_trigger, KEY_TRIGGER, 1)
        stop = self.num_sorted_run_stop_trigger
        stop = trigger + 3 if stop is None else check_int(stop, KEY_STOP_TRIGGER, 1)
        object.__setattr__(self, "num_sorted_run_stop_trigger", max(trigger, stop))
        levels = self.num_levels
        levels = trigger + 1 if levels is None else check_int(levels, KEY_NUM_LEVELS, 2)
        object.__setattr__(self, "num_levels", levels)
        check_int(self.max_size_amplification_percent, KEY_MAX_SIZE_AMP, 0)
        check_int(self.size_ratio, KEY_SIZE_RATIO, 0)
        check_int(self.target_file_size, KEY_TARGET_FILE_SIZE, 1)
        ratio = self.small_file_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
            raise InvalidArgumentError(f"option {KEY_SMALL_FILE_RATIO!r} must be a number, got {ratio!r}")
        if not (math.isfinite(ratio) and 0 <= ratio <= 1):
            raise InvalidArgumentError(
                f"option {KEY_SMALL_FILE_RATIO!r} must be between 0 and 1, got {ratio!r}")

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> CompactionOptions:
        """Build from Paimon-style string options; keys this module does not use are ignored."""
        kwargs: dict[str, Any] = {}
        ints = {
            KEY_TRIGGER: "num_sorted_run_compaction_trigger",
            KEY_STOP_TRIGGER: "num_sorted_run_stop_trigger",
            KEY_NUM_LEVELS: "num_levels",
            KEY_MAX_SIZE_AMP: "max_size_amplification_percent",
            KEY_SIZE_RATIO: "size_ratio",
        }
        for key, name in ints.items():
            if key in options:
                kwargs[name] = _parse_int(options[key], key)
        if KEY_TARGET_FILE_SIZE in options:
            kwargs["target_file_size"] = parse_memory_size(options[KEY_TARGET_FILE_SIZE], KEY_TARGET_FILE_SIZE)
        if KEY_SMALL_FILE_RATIO in options:
            kwargs["small_file_ratio"] = _parse_ratio(options[KEY_SMALL_FILE_RATIO], KEY_SMALL_FILE_RATIO)
        return cls(**kwargs)

    @property
    def max_level(self) -> int:
        return self.num_levels - 1

    @property
    def small_file_threshold(self) -> int:
        """Files strictly smaller than this many bytes are small (rewritten with neighbours)."""
        exact = Decimal(repr(float(self.small_file_ratio))) * self.target_file_size
        return int(exact.to_integral_value(rounding=ROUND_FLOOR))


# --------------------------------------------------------------------------------------------
# Levels and sorted runs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LevelSortedRun(Generic[F]):
    """One sorted run: a level-0 file alone, or all files of a level >= 1 in key order."""

    level: int
    files: tuple[F, ...]

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


def _describe(f: FileMeta) -> str:
    return f"{f.file_name!r} [{f.min_key!r} .. {f.max_key!r}]"


class Levels(Generic[F]):
    """The files of one bucket arranged into levels (immutable; see `with_changes`).

    Raises `InvalidArgumentError` if a file's level is outside ``0 .. num_levels - 1``,
    its ``min_key > max_key``, two files share a name, or two files of one level >= 1
    have overlapping (or touching: ``max_key == next min_key``) key ranges.
    """

    def __init__(self, files: Iterable[F], num_levels: int) -> None:
        if isinstance(num_levels, bool) or not isinstance(num_levels, int) or num_levels < 2:
            raise InvalidArgumentError(f"num_levels must be an integer of at least 2, got {num_levels!r}")
        self._num_levels = num_levels
        by_level: list[list[F]] = [[] for _ in range(num_levels)]
        names: set[str] = set()
        for f in files:
            if f.file_name in names:
                raise InvalidArgumentError(f"file {f.file_name!r} is listed twice")
            names.add(f.file_name)
            try:
                level = -1 if isinstance(f.level, bool) else operator.index(f.level)
            except TypeError:
                level = -1
            if not 0 <= level < num_levels:
                raise InvalidArgumentError(
                    f"file {f.file_name!r} is at level {f.level!r}, outside 0..{num_levels - 1}")
            if f.min_key > f.max_key:
                raise InvalidArgumentError(f"file {_describe(f)} has min_key > max_key")
            by_level[level].append(f)
        by_level[0].sort(key=lambda f: (-f.max_seq, -f.min_seq, f.file_name))
        for level in range(1, num_levels):
            run = by_level[level]
            run.sort(key=lambda f: (f.min_key, f.max_key))
            for prev, nxt in itertools.pairwise(run):
                if not prev.max_key < nxt.min_key:
                    raise InvalidArgumentError(
                        f"level {level} is not a sorted run: {_describe(prev)} overlaps {_describe(nxt)}")
        self._levels: tuple[tuple[F, ...], ...] = tuple(tuple(files) for files in by_level)

    @property
    def num_levels(self) -> int:
        return self._num_levels

    @property
    def max_level(self) -> int:
        return self._num_levels - 1

    @property
    def level0(self) -> tuple[F, ...]:
        """Level-0 files, newest (highest max_seq) first."""
        return self._levels[0]

    def files_at(self, level: int) -> tuple[F, ...]:
        """The files of one level (level 0 newest first, others in key order)."""
        return self._levels[level]

    def all_files(self) -> list[F]:
        """Every file, in sorted-run order."""
        return [f for run in self._levels for f in run]

    def sorted_runs(self) -> list[LevelSortedRun[F]]:
        """One run per level-0 file (newest first), then each non-empty level ascending."""
        runs = [LevelSortedRun(0, (f,)) for f in self._levels[0]]
        runs.extend(LevelSortedRun(level, files)
                    for level, files in enumerate(self._levels) if level > 0 and files)
        return runs

    def number_of_sorted_runs(self) -> int:
        return len(self._levels[0]) + sum(1 for files in self._levels[1:] if files)

    def non_empty_highest_level(self) -> int:
        """The highest level holding a file; -1 when there are no files."""
        for level in range(self._num_levels - 1, -1, -1):
            if self._levels[level]:
                return level
        return -1

    def total_size(self) -> int:
        return sum(f.file_size for files in self._levels for f in files)

    def with_changes(self, removed: Iterable[FileMeta], added: Iterable[F]) -> Levels[F]:
        """A new `Levels` without `removed` (matched by file name) and with `added`."""
        gone = {f.file_name for f in removed}
        present = {f.file_name for f in self.all_files()}
        missing = gone - present
        if missing:
            raise InvalidArgumentError(f"cannot remove files that are not in the levels: {sorted(missing)}")
        kept = [f for f in self.all_files() if f.file_name not in gone]
        return Levels([*kept, *added], self._num_levels)

    def __repr__(self) -> str:
        parts = [f"L{level}={[f.file_name for f in files]}" for level, files in enumerate(self._levels) if files]
        return f"Levels(num_levels={self._num_levels}, {', '.join(parts)})"


# --------------------------------------------------------------------------------------------
# Picking
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompactUnit(Generic[F]):
    """Files to compact together into `output_level`.

    `files` are in sorted-run order (newest run first, each run in key order).
    `drop_delete`: the output may drop retractions (no older data stays outside the unit).
    `reason` says which rule chose the unit: ``"size-amplification"``, ``"size-ratio"``,
    ``"run-count"``, ``"full"`` or ``"manual"`` (`create_unit` called directly).
    """

    output_level: int
    files: tuple[F, ...]
    drop_delete: bool
    reason: str = "manual"


def _unit(levels: Levels[F], runs: Sequence[LevelSortedRun[F]], output_level: int,
          reason: str) -> CompactUnit[F]:
    files = tuple(f for run in runs for f in run.files)
    drop = output_level != 0 and output_level >= levels.non_empty_highest_level()
    return CompactUnit(output_level, files, drop, reason)


def create_unit(levels: Levels[F], run_count: int, *, reason: str = "manual") -> CompactUnit[F]:
    """A unit of the first `run_count` sorted runs, with the output-level rules.

    All runs -> max level; otherwise ``max(0, level of the next run - 1)``; if that is 0,
    take further runs until one at a level above 0 is taken (its level is the output);
    if that takes every run, the output is the max level.
    """
    runs = levels.sorted_runs()
    if not 1 <= run_count <= len(runs):
        raise InvalidArgumentError(f"run_count must be in 1..{len(runs)}, got {run_count}")
    if run_count == len(runs):
        output = levels.max_level
    else:
        output = max(0, runs[run_count].level - 1)
    if output == 0:
        while run_count < len(runs):
            taken = runs[run_count]
            run_count += 1
            if taken.level != 0:
                output = taken.level
                break
    if run_count == len(runs):
        output = levels.max_level
    return _unit(levels, runs[:run_count], output, reason)


def _fits_ratio(candidate: int, next_size: int, size_ratio: int) -> bool:
    # candidate * (100 + ratio) / 100 >= next, in exact integers
    return candidate * (100 + size_ratio) >= next_size * 100


def _pick_size_ratio(levels: Levels[F], runs: Sequence[LevelSortedRun[F]], options: CompactionOptions,
                     candidate_count: int, force: bool, reason: str) -> CompactUnit[F] | None:
    candidate = sum(run.total_size for run in runs[:candidate_count])
    count = candidate_count
    while count < len(runs):
        size = runs[count].total_size
        if not _fits_ratio(candidate, size, options.size_ratio):
            break
        candidate += size
        count += 1
    if force or count > 1:
        return create_unit(levels, count, reason=reason)
    return None


def restored_levels(files: Iterable[F], options: CompactionOptions) -> tuple[Levels[F], CompactionOptions]:
    """A bucket's files in levels as Java's ``Levels`` restores them: as many levels as the
    options say, or more where a file already sits higher (written under a larger
    ``num-levels``, or before ``num-sorted-run.compaction-trigger`` was lowered) — at least the
    highest level in use + 1.  The options come back with that level count, the one `pick`
    and `plan_rewrite` must be given with these levels."""
    files = list(files)
    in_use = [f.level for f in files if isinstance(f.level, int) and not isinstance(f.level, bool)]
    needed = max(in_use, default=0) + 1
    if needed > options.num_levels:
        options = replace(options, num_levels=needed)
    return Levels(files, options.num_levels), options


def _check_levels(levels: Levels[Any], options: CompactionOptions) -> None:
    if levels.num_levels != options.num_levels:
        raise InvalidArgumentError(
            f"levels have {levels.num_levels} levels but the options say num-levels={options.num_levels}")


def pick(levels: Levels[F], options: CompactionOptions) -> CompactUnit[F] | None:
    """Choose the next compaction, or None: size amplification, then size ratio, then run count."""
    _check_levels(levels, options)
    runs = levels.sorted_runs()
    trigger = options.num_sorted_run_compaction_trigger
    if len(runs) >= trigger:
        # (1) size amplification: everything newer than the oldest run, against the oldest run
        newer = sum(run.total_size for run in runs[:-1])
        if newer * 100 > options.max_size_amplification_percent * runs[-1].total_size:
            return _unit(levels, runs, levels.max_level, "size-amplification")
        # (2) size ratio, starting from the newest run
        unit = _pick_size_ratio(levels, runs, options, 1, False, "size-ratio")
        if unit is not None:
            return unit
    if len(runs) > trigger:
        # (3) too many runs: force the oldest surplus, then extend by size ratio
        return _pick_size_ratio(levels, runs, options, len(runs) - trigger + 1, True, "run-count")
    return None


def force_pick_level0(levels: Levels[F], options: CompactionOptions) -> CompactUnit[F] | None:
    """Every level-0 run (extended by size ratio), or None without one: what Paimon compacts
    when `pick` finds nothing in a table whose reads leave level 0 out (deletion vectors), so
    that new data becomes visible at once rather than at the next trigger."""
    _check_levels(levels, options)
    runs = levels.sorted_runs()
    level0 = sum(1 for run in runs if run.level == 0)
    if not level0:
        return None
    return _pick_size_ratio(levels, runs, options, level0, True, "force-level0")


def full_compaction(levels: Levels[F]) -> CompactUnit[F] | None:
    """Compact every run into the max level, or None if there is nothing to gain.

    None when there are no files, or when the files already form one run at the max level
    and none holds retractions (a run with retractions is returned so that `plan_rewrite`
    rewrites just those files and drops the retractions).
    """
    runs = levels.sorted_runs()
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == levels.max_level:
        if all(f.delete_count == 0 for f in runs[0].files):
            return None
    return _unit(levels, runs, levels.max_level, "full")


def write_stall(levels: Levels[Any], options: CompactionOptions) -> bool:
    """True when writers should wait for compaction: more sorted runs than the stop trigger."""
    return levels.number_of_sorted_runs() > options.num_sorted_run_stop_trigger


# --------------------------------------------------------------------------------------------
# The rewrite plan
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RewriteGroup(Generic[F]):
    """Files merged and rewritten together, as key-disjoint ascending sections of sorted runs.

    Runs inside a section overlap and are *not* in age order: merge by the files'
    sequence numbers.
    """

    sections: tuple[tuple[tuple[F, ...], ...], ...]

    @property
    def files(self) -> tuple[F, ...]:
        return tuple(f for section in self.sections for run in section for f in run)

    def sorted_runs(self) -> list[list[F]]:
        """The group as sorted runs: run i joins run i of every section (sections are disjoint)."""
        width = max((len(section) for section in self.sections), default=0)
        return [[f for section in self.sections if i < len(section) for f in section[i]]
                for i in range(width)]


@dataclass(frozen=True)
class CompactionPlan(Generic[F]):
    """What to do with each file of a `CompactUnit`.

    Every unit file is in exactly one of `rewrites` (merge, write new files at
    `output_level`, dropping retractions if `drop_delete`), `upgrades` (keep the data file,
    record it at `output_level`) or `unchanged` (already at `output_level`).
    `sections` is the unit's `interval_partition`.  `lookup`: files above the output level
    whose keys a lookup compaction keeps (a first-row table's older versions): the rewrites
    drop their rows of those keys, so no key is in two levels.
    """

    output_level: int
    drop_delete: bool
    sections: tuple[tuple[tuple[F, ...], ...], ...]
    rewrites: tuple[RewriteGroup[F], ...]
    upgrades: tuple[F, ...]
    unchanged: tuple[F, ...]
    lookup: tuple[F, ...] = ()


def plan_rewrite(unit: CompactUnit[F], options: CompactionOptions) -> CompactionPlan[F]:
    """Decide, file by file, between rewriting and a metadata-only level change.

    Sections are visited in key order and a pending collection is kept:

    * a section of several runs joins the collection (it must be merged);
    * a single file (a one-run section) smaller than ``options.small_file_threshold``
      joins the collection;
    * a larger file first closes the collection, then is kept as it is.

    Closing a collection makes it one `RewriteGroup`, unless it is a lone small file,
    which is kept as it is.  "Kept" means: upgraded to the output level, or unchanged if
    already there — except that a file with ``delete_count > 0`` whose output is the max
    level with ``drop_delete`` is rewritten alone, so its retractions are dropped instead of
    settling in the oldest level.  The exception applies to files already at the max level
    too (see the module notes on `full_compaction`).
    """
    if not 0 <= unit.output_level <= options.max_level:
        raise InvalidArgumentError(
            f"output level {unit.output_level} is outside 0..{options.max_level}")
    threshold = options.small_file_threshold
    sections = interval_partition(unit.files)
    rewrites: list[RewriteGroup[F]] = []
    upgrades: list[F] = []
    unchanged: list[F] = []
    pending: list[list[list[F]]] = []

    def keep(f: F) -> None:
        must_drop = (unit.drop_delete and unit.output_level == options.max_level and f.delete_count > 0)
        if must_drop:
            rewrites.append(RewriteGroup((((f,),),)))
        elif f.level == unit.output_level:
            unchanged.append(f)
        else:
            upgrades.append(f)

    def close() -> None:
        if len(pending) == 1 and len(pending[0]) == 1:
            (lone,) = pending[0][0]
            keep(lone)
        elif pending:
            rewrites.append(RewriteGroup(tuple(tuple(tuple(run) for run in s) for s in pending)))
        pending.clear()

    for section in sections:
        if len(section) > 1:
            pending.append(section)
            continue
        (f,) = section[0]  # a one-run section is always a single file
        if f.file_size < threshold:
            pending.append(section)
        else:
            close()
            keep(f)
    close()
    return CompactionPlan(
        output_level=unit.output_level,
        drop_delete=unit.drop_delete,
        sections=tuple(tuple(tuple(run) for run in s) for s in sections),
        rewrites=tuple(rewrites),
        upgrades=tuple(upgrades),
        unchanged=tuple(unchanged),
    )
