"""Files cut into sections by their key ranges: key-disjoint groups of files, each as the
fewest sorted runs that cover it.  A section's runs overlap and merge together; sections never
do, so each merges alone.  Shared by the read path (merge-on-read a section at a time), the
compaction planner (a rewrite's sections) and Paimon tables' reads."""
from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Protocol, TypeVar

__all__ = ["KeyRangedFile", "interval_partition"]


class KeyRangedFile(Protocol):
    """What sectioning reads of a file: its name (to break ties) and its key range."""

    @property
    def file_name(self) -> str: ...
    @property
    def min_key(self) -> tuple: ...
    @property
    def max_key(self) -> tuple: ...


F = TypeVar("F", bound=KeyRangedFile)


def interval_partition(files: Iterable[F]) -> list[list[list[F]]]:
    """Split files into key-disjoint sections, each as the fewest sorted runs covering it.

    Files are sorted by ``(min_key, max_key)`` (file name breaks ties).  A file whose
    ``min_key`` is above the largest ``max_key`` seen so far starts a new section.  Within
    a section each file goes to the run whose last file has the smallest ``max_key``, if
    that ``max_key`` is below the file's ``min_key``; otherwise it opens a new run.  Runs
    are listed in the order they were opened; each is in key order.
    """
    ordered = sorted(files, key=lambda f: (f.min_key, f.max_key, f.file_name))
    sections: list[list[F]] = []
    bound: tuple | None = None
    for f in ordered:
        if not sections or f.min_key > bound:  # type: ignore[operator]
            sections.append([f])
            bound = f.max_key
        else:
            sections[-1].append(f)
            if f.max_key > bound:  # type: ignore[operator]
                bound = f.max_key
    return [_min_runs(section) for section in sections]


def _min_runs(section: list[F]) -> list[list[F]]:
    runs: list[list[F]] = []
    tails: list[tuple[tuple, int]] = []  # (max_key of the run's last file, run index)
    for f in section:
        if tails and tails[0][0] < f.min_key:
            _, index = heapq.heappop(tails)
        else:
            index = len(runs)
            runs.append([])
        runs[index].append(f)
        heapq.heappush(tails, (f.max_key, index))
    return runs
