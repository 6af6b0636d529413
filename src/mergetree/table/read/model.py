"""What a read is made of: a plan of buckets (each a list of sections of sorted runs, with
the row groups to read), the pruning steps that made it, the statistics a read gathers, and a
read prepared for execution."""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .. import filters as flt
from ..display import count_text, size_text
from ..files import DataFileMeta
from ..indexes.skipping import STEPS

__all__ = ["BucketPlan", "OrderBy", "PreparedRead", "PruneStep", "ReadPlan", "ReadStats", "format_requests",
           "requests_since"]

OrderBy = list[tuple[str, str]]  # [(column, "asc" | "desc")]


@dataclass
class BucketPlan:
    """The files a read of one bucket touches, grouped into sections of overlapping key ranges,
    and the row groups an index restricted some of them to."""

    partition: tuple
    bucket: int
    sections: list[list[list[DataFileMeta]]]  # section -> sorted runs -> files in key order
    row_groups: dict[str, frozenset[int]] = field(default_factory=dict)  # file name -> row groups to read
    # only keys whose first primary-key column is in [low, high) (None: unbounded): one of the
    # pieces `split_bucket` cut a large bucket into
    key_range: tuple[Any, Any] | None = None

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for section in self.sections for run in section for f in run]

    def __repr__(self) -> str:
        part = f"partition={self.partition}, " if self.partition else ""
        cut = f", keys [{self.key_range[0]}, {self.key_range[1]})" if self.key_range is not None else ""
        return (f"BucketPlan({part}bucket={self.bucket}, {count_text(len(self.sections), 'section')}, "
                f"{count_text(len(self.files), 'file')}, {size_text(self.bytes)}{cut})")

    @property
    def bytes(self) -> int:
        return sum(m.file_size for m in self.files)


@dataclass
class PruneStep:
    """What one pruning step removed."""

    files: int = 0
    bytes: int = 0

    def add(self, files: Sequence[DataFileMeta]) -> None:
        self.files += len(files)
        self.bytes += sum(m.file_size for m in files)


@dataclass
class ReadPlan:
    """Which files a read touches, and what each pruning step removed (`steps`, in the order
    of `skipping.STEPS`; Top-N may remove more files while the read runs)."""

    snapshot_id: int | None
    buckets: list[BucketPlan] = field(default_factory=list)
    files_total: int = 0
    bytes_total: int = 0
    pruned_partitions: int = 0
    pruned_buckets: int = 0
    steps: dict[str, PruneStep] = field(default_factory=lambda: {s: PruneStep() for s in STEPS})
    row_groups_skipped: int = 0
    # the requests the table's store made while planning (snapshot, manifests, indexes not yet
    # cached): on an object store each costs a round trip; empty if none was made
    requests: dict[str, int] = field(default_factory=dict)

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for b in self.buckets for f in b.files]

    @property
    def pruned_files(self) -> int:
        return self.files_total - len(self.files)

    def __repr__(self) -> str:
        left = self.files
        removed = [f"{name} {step.files:,}" for name, step in self.steps.items() if step.files]
        return (f"ReadPlan(snapshot={self.snapshot_id}, {len(left):,} of {count_text(self.files_total, 'file')} "
                f"({size_text(sum(m.file_size for m in left))} of {size_text(self.bytes_total)}) in "
                f"{count_text(len(self.buckets), 'bucket')}"
                + (f"; removed by {', '.join(removed)}" if removed else "") + ")")

    def explain(self) -> list[list[str]]:
        """The plan as table rows: each step and what it removed, then what is left to read."""
        rows = [["step", "files removed", "MiB removed"]]
        for name, step in self.steps.items():
            rows.append([name, f"{step.files:,}", f"{step.bytes / 2**20:.1f}"])
        left = self.files
        rows.append(["to read", f"{len(left):,} of {self.files_total:,}",
                     f"{sum(m.file_size for m in left) / 2**20:.1f} of {self.bytes_total / 2**20:.1f}"])
        rows.append(["store requests to plan", format_requests(self.requests), ""])
        return rows


def format_requests(requests: dict[str, int]) -> str:
    """'GET 2, LIST 1' ('none' when no request was made)."""
    made = [f"{kind} {n:,}" for kind, n in requests.items() if n]
    return ", ".join(made) if made else "none"


def requests_since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The requests made between two readings of a store's counter (`RequestCounter.counts`)."""
    return {kind: after[kind] - before.get(kind, 0) for kind in after if after[kind] - before.get(kind, 0)}


@dataclass
class ReadStats:
    """What a read actually did (Top-N may stop before the plan's files are all read)."""

    files_total: int = 0
    bytes_total: int = 0
    files_read: int = 0
    bytes_read: int = 0
    rows_out: int = 0
    used_preaggregates: int = 0  # files answered from their pre-aggregates (Table.aggregate)
    rows_merged: int = 0      # rows read through a merge of several runs
    rows_stretched: int = 0   # of those, rows that met no other run's keys: handed on as slices
    point_files: int = 0      # files a point lookup searched through their page index (`read.point`)
    # the requests the table's store made for the whole read, plan included (a local table's
    # data files are read by pyarrow from their paths and not counted)
    requests: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __repr__(self) -> str:
        extra = [text for n, text in ((self.rows_merged, f"{self.rows_merged:,} rows merged"),
                                      (self.point_files, f"{self.point_files:,} searched by page index"),
                                      (self.used_preaggregates, f"{self.used_preaggregates:,} from pre-aggregates"))
                 if n]
        return (f"ReadStats({self.files_read:,} of {count_text(self.files_total, 'file')} read "
                f"({size_text(self.bytes_read)} of {size_text(self.bytes_total)}), "
                f"{count_text(self.rows_out, 'row')} out" + "".join(f", {e}" for e in extra)
                + (f", requests {format_requests(self.requests)}" if self.requests else "") + ")")

    def count(self, files: Sequence[DataFileMeta]) -> None:
        with self._lock:
            self.files_read += len(files)
            self.bytes_read += sum(m.file_size for m in files)

    def count_merge(self, rows_in: int, rows_stretched: int) -> None:
        with self._lock:
            self.rows_merged += rows_in
            self.rows_stretched += rows_stretched


@dataclass(frozen=True)
class PreparedRead:
    """A checked read request: the columns and their schema, the filter as rows see it
    (`expression`) and as each data file's key columns see it (`file_filter`), the order
    and limit, the plan, and the statistics the read fills in."""

    columns: list[str]
    output_schema: pa.Schema
    expression: pc.Expression | None
    file_filter: pc.Expression | None
    plan: ReadPlan
    order_by: OrderBy = field(default_factory=list)
    limit: int | None = None
    stats: ReadStats = field(default_factory=ReadStats)
    filter: flt.Filter = None  # normalized (what the query log records)
    # the whole filter in the data files' columns (`plan.final_filter`): pushed into the scan of
    # files whose rows are final
    final_filter: pc.Expression | None = None
    in_key_order: bool = False  # rows in primary-key order across buckets (`read(sorted=True)`)
