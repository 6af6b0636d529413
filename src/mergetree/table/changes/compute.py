"""Reading what commits changed (issue 26): `plan_changes` cuts the change between two
snapshots into (partition, bucket) units, `read_changes` reads one unit.

A unit's change is computed from what the commits in (start, end] added, never from two whole
reads: the keys the added files hold are looked up in snapshot `start` (files pruned by key
range, Bloom filters and row-group statistics, rows by an IN filter on the first key column),
the merge engine folds [state at start, each commit's files in sequence order] into the new
state, and old and new state are compared key by key.  An OVERWRITE commit replaces the whole
table: its buckets are read whole on both sides.  Where a commit published changelog files
(`changelog-producer`), a per-commit read takes them as they are (they outlive the snapshot
when changelog retention keeps them), and a net read of a range whose commits all carry
lookup changelogs folds them: a key's first before-image and last after-image.
"""
from __future__ import annotations

import bisect
import datetime as dt
import heapq
import os
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidArgumentError, SnapshotNotFoundError, UnsupportedFormatError
from ...merge import ROW_KIND_COLUMN, RowKind, kinds_of, merge, symbols_of
from ...merge.arrow_input import sort_indices
from .. import filters as flt
from ..directory import TableDirectory
from ..filecache import FileCache
from ..files import DataFileMeta, read_run
from ..indexes.skipping import decide
from ..lookup import SMALL_FILE_BYTES, lookup_state
from ..objects import table_path
from ..read import BucketPlan, ReadStats, columns_for, file_filter, read_bucket
from ..read.plan import sections_of
from ..schema import KIND_COLUMN, SEQUENCE_COLUMN
from ..snapshots import Snapshot, changelog_snapshot

__all__ = ["PRODUCER_PROPERTY", "SNAPSHOT_ID_COLUMN", "SOURCES", "ChangePlan", "ChangeUnit", "CommitFiles",
           "change_of_files", "plan_changes", "read_changes", "read_in_commit_order", "read_units", "snapshot_range"]

SNAPSHOT_ID_COLUMN = "_snapshot_id"
# small added files, decoded (immutable files: a name is never reused for other rows)
_ADDED_FILES: FileCache[pa.Table] = FileCache(max_entries=4096, max_bytes=256 << 20, weight=lambda t: t.nbytes)
# the snapshot property saying which producer wrote the commit's changelog files ("input" or "lookup")
PRODUCER_PROPERTY = "changelog-producer"
_SIDE = "__side"  # old (0) or new (1) state, while two states are compared
# where a change comes from: "auto" (computed, or from changelog files that are exact),
# "delta" (always computed), "changelog" (the changelog files as written, commit after commit)
SOURCES = ("auto", "delta", "changelog")
_NO_CHANGE = ("COMPACT", "ANALYZE")   # commits that move rows between files (or only add statistics)
_CHANGING = ("APPEND", "OVERWRITE")


@dataclass(frozen=True)
class CommitFiles:
    """What one commit did to one bucket: the data files it added (APPEND), or that it
    replaced the table (OVERWRITE); and its changelog files there."""

    snapshot_id: int
    kind: str
    files: tuple[DataFileMeta, ...] = ()
    changelog: tuple[DataFileMeta, ...] = ()


@dataclass(frozen=True)
class ChangeUnit:
    """One (partition, bucket) of a change: what a Spark task reads (picklable)."""

    partition: tuple
    bucket: int
    commits: tuple[CommitFiles, ...] = ()


@dataclass
class ChangePlan:
    """The change between snapshots `start` and `end`, cut into units (picklable)."""

    start: int
    end: int
    per_commit: bool
    schema: pa.Schema
    units: list[ChangeUnit] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)     # the asked table columns (keys included)
    filter: Any = None                                     # normalized `filters` form
    computed: bool = True      # False: every commit is read from its changelog files
    as_written: bool = False   # the changelog files' rows as written (source "changelog"), not folded
    stats: ReadStats = field(default_factory=ReadStats)   # files and bytes this process read

    def __getstate__(self) -> dict:
        """Pickled without its statistics (each process counts its own reads)."""
        return {k: v for k, v in self.__dict__.items() if k != "stats"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, stats=ReadStats())


def _snapshot_id(directory: TableDirectory, value: Any, what: str) -> int:
    """A snapshot id from an id or, on a table with tags, a tag name or a point in time (the
    newest snapshot committed at or before it)."""
    resolve = getattr(directory.store, "resolve", None)
    if isinstance(value, (str, dt.datetime)) and resolve is not None:
        return resolve(value).id
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        tags = ", a tag name or a point in time" if resolve is not None else ""
        raise InvalidArgumentError(f"{what} must be a snapshot id (a non-negative int){tags}, not {value!r}")
    return value


def _existing(directory: TableDirectory) -> str:
    ids = directory.store.snapshot_ids()
    kept = directory.store.retained_changelog_ids()
    have = f"snapshots {ids[0]}..{ids[-1]} exist" if ids else "the table has no snapshots"
    if kept:
        have += f" (changelog kept for {kept[0]}..{kept[-1]})"
    return have


def snapshot_range(directory: TableDirectory, start: Any, end: Any) -> tuple[int, int]:
    """Checked (start, end): ids, start <= end, end at most the latest snapshot."""
    start = _snapshot_id(directory, start, "start")
    latest = directory.store.latest_id() or 0
    if end is None and start > latest:
        raise SnapshotNotFoundError(f"snapshot {start} does not exist yet; {_existing(directory)}")
    end = latest if end is None else _snapshot_id(directory, end, "end")
    if start > end:
        raise InvalidArgumentError(f"start ({start}) is after end ({end}): changes run forward in time")
    if end > latest:
        raise SnapshotNotFoundError(f"snapshot {end} does not exist yet; {_existing(directory)}")
    return start, end


def _commit(directory: TableDirectory, snapshot_id: int) -> tuple[Snapshot, bool]:
    """A commit's snapshot and whether it is whole (False: only its kept changelog metadata)."""
    try:
        return changelog_snapshot(directory.store, snapshot_id)
    except SnapshotNotFoundError:
        raise SnapshotNotFoundError(f"snapshot {snapshot_id} expired and no changelog of it is kept; "
                                    f"{_existing(directory)}") from None


def _entries(directory: TableDirectory, manifest_list: str) -> list:
    return [(kind, e) for name in directory.store.manifest_names(manifest_list)
            for kind, e in directory.store.read_manifest(name)]


def _added(directory: TableDirectory, manifest_list: str) -> list:
    """The ADD entries of a manifest list whose file the same list does not delete."""
    entries = _entries(directory, manifest_list)
    deleted = {e.file.file_name for kind, e in entries if kind == "DELETE"}
    return [e for kind, e in entries if kind == "ADD" and e.file.file_name not in deleted]


def _resolved_level0(directory: TableDirectory, manifest_list: str) -> list:
    """The level-0 files a compaction's manifest list deletes (where level 0 is hidden from
    reads, the rows they hold became visible)."""
    return [e for kind, e in _entries(directory, manifest_list) if kind == "DELETE" and e.file.level == 0]


def _by_states(directory: TableDirectory) -> bool:
    """Is a change read as the difference of two states (rather than folded from the commits'
    files onto the old state)?  Where a commit's rows need not be newer than everything before
    it (versions ordered by sequence number alone), or where a compaction changes what reads see."""
    return not directory.options.commit_ordered or directory.options.level0_hidden


def plan_changes(directory: TableDirectory, start: Any, end: Any = None, columns: Any = None, filter: Any = None,
                 per_commit: bool = False, source: str = "auto") -> ChangePlan:
    """The change of commits start+1..end (end: the latest), per (partition, bucket).
    `source`: one of `SOURCES`."""
    if not isinstance(per_commit, bool):
        raise InvalidArgumentError(f"per_commit must be True or False, not {per_commit!r}")
    if source not in SOURCES:
        raise InvalidArgumentError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    start, end = snapshot_range(directory, start, end)
    ts = directory.schema
    names = columns_for(directory, columns)
    # the key (with the partition columns: a Paimon key's) always, in table order
    always = set(ts.primary_key) | set(ts.partition_by) if ts.has_primary_key else set()
    names = [c for c in ts.schema.names if c in set(names) | always]
    f = flt.normalize(filter, ts.schema)
    fields = [ts.schema.field(c) for c in names] + [pa.field(ROW_KIND_COLUMN, pa.string(), nullable=False)]
    if per_commit:
        fields.append(pa.field(SNAPSHOT_ID_COLUMN, pa.int64(), nullable=False))
    plan = ChangePlan(start, end, per_commit, pa.schema(fields), columns=names, filter=f)
    if start == end:
        plan.computed = False
        return plan
    commits: list[tuple[Snapshot, bool]] = [_commit(directory, c) for c in range(start + 1, end + 1)]
    for s, _ in commits:
        if s.commit_kind not in _NO_CHANGE + _CHANGING:
            raise UnsupportedFormatError(f"snapshot {s.id} of table {directory.path} is a {s.commit_kind!r} commit, "
                                         f"which mergetree cannot read changes from")
    if source == "changelog" and ts.has_primary_key:
        return _as_written(directory, plan, commits)
    # where level 0 is hidden from reads, a compaction that resolves level-0 files changes rows
    resolving = ts.has_primary_key and directory.options.level0_hidden
    changing = [(s, whole) for s, whole in commits
                if s.commit_kind not in _NO_CHANGE or (resolving and s.commit_kind == "COMPACT")]

    def served(s: Snapshot) -> bool:  # can this commit be read from its changelog files alone?
        # (a lookup commit that changed nothing has no changelog files: that is its change)
        producer = s.properties.get(PRODUCER_PROPERTY, "")
        return s.commit_kind == "APPEND" and (producer == "lookup" or (per_commit and producer == "input"))
    # an append table's change is its added rows: read from its data files
    plan.computed = source == "delta" or not ts.has_primary_key or not all(served(s) for s, _ in changing)
    if plan.computed:
        missing = [s.id for s, whole in changing if not whole]
        if start > 0 and not missing:
            try:
                directory.store.snapshot(start)
            except SnapshotNotFoundError:
                missing = [start]
        if missing:
            kept = "; read the changelog kept of it with source='changelog'" \
                if directory.store.retained_changelog_ids() else ""
            raise SnapshotNotFoundError(
                f"computing the changes of snapshots {start + 1}..{end} needs snapshot {missing[0]}, which "
                f"expired (and its changelog files cannot stand in for it); {_existing(directory)}{kept}")
    per_bucket: dict[tuple, dict[int, CommitFiles]] = defaultdict(dict)
    for s, _ in changing:
        changelog: dict[tuple, list[DataFileMeta]] = defaultdict(list)
        if s.changelog_manifest_list and s.commit_kind == "APPEND" and source != "delta" \
                and (not plan.computed or (per_commit and served(s))):
            for e in _added(directory, s.changelog_manifest_list):
                changelog[(e.partition, e.bucket)].append(e.file)
        files: dict[tuple, list[DataFileMeta]] = defaultdict(list)
        if plan.computed and s.commit_kind == "APPEND":
            for e in _added(directory, s.delta_manifest_list):
                files[(e.partition, e.bucket)].append(e.file)
        elif plan.computed and s.commit_kind == "COMPACT":
            for e in _resolved_level0(directory, s.delta_manifest_list):
                files[(e.partition, e.bucket)].append(e.file)
        for key in set(files) | set(changelog):
            per_bucket[key][s.id] = CommitFiles(s.id, s.commit_kind, tuple(files.get(key, ())),
                                                tuple(changelog.get(key, ())))
    if plan.computed:
        # an overwrite changes the buckets whose files it removed or added (a partition's, or
        # every bucket of the table): they are read whole on both sides
        for s, _ in changing:
            if s.commit_kind == "OVERWRITE":
                for _, e in _entries(directory, s.delta_manifest_list):
                    per_bucket[(e.partition, e.bucket)].setdefault(s.id, CommitFiles(s.id, "OVERWRITE"))
    return _with_units(directory, plan, per_bucket)


def _as_written(directory: TableDirectory, plan: ChangePlan, commits: list[tuple[Snapshot, bool]]) -> ChangePlan:
    """A plan reading each commit's changelog files as written, commit after commit: a
    commit's own changelog; where the producer is ``none``, the data files an APPEND added
    (their kinds as written: what a streaming read of such a table returns); where a
    compaction produces the changelog (``lookup``, ``full-compaction``), nothing of an APPEND
    without one (a compaction commit after it carries it).  An OVERWRITE without one, or an
    APPEND of an ``input`` table without one, has no changelog: refused, naming the commit."""
    plan.computed, plan.as_written = False, True
    producer = directory.options.changelog_producer
    per_bucket: dict[tuple, dict[int, CommitFiles]] = defaultdict(dict)
    for s, whole in commits:
        if s.changelog_manifest_list:
            entries = _added(directory, s.changelog_manifest_list)
        elif s.commit_kind in _NO_CHANGE or (s.commit_kind == "APPEND" and producer in ("lookup", "full-compaction")):
            continue
        elif s.commit_kind == "APPEND" and producer == "none":  # (Paimon keeps an expired one's delta)
            entries = _added(directory, s.delta_manifest_list)
        elif whole and s.commit_kind == "APPEND" and not _added(directory, s.delta_manifest_list):
            continue  # a commit that added no rows has nothing to say
        else:
            why = "expired" if not whole else f"an {s.commit_kind} commit without changelog files"
            raise InvalidArgumentError(
                f"snapshot {s.id} of table {directory.path} is {why} (changelog-producer {producer!r}): it has no "
                f"changelog to read as written; read the change with source='delta'")
        by_key: dict[tuple, list[DataFileMeta]] = defaultdict(list)
        for e in entries:
            by_key[(e.partition, e.bucket)].append(e.file)
        for key, files in by_key.items():
            files.sort(key=lambda m: (m.min_seq, m.file_name))
            per_bucket[key][s.id] = CommitFiles(s.id, s.commit_kind, changelog=tuple(files))
    return _with_units(directory, plan, per_bucket)


def _with_units(directory: TableDirectory, plan: ChangePlan, per_bucket: dict[tuple, dict[int, CommitFiles]]
                ) -> ChangePlan:
    """The plan with a unit per (partition, bucket) the filter can match, in bucket order."""
    partition_by = directory.schema.partition_by
    partition_filter = flt.restrict(plan.filter, set(partition_by))
    for (partition, bucket), by_id in sorted(per_bucket.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if flt.may_match(partition_filter, {c: (v, v, int(v is None)) for c, v in zip(partition_by, partition)}, 1):
            plan.units.append(ChangeUnit(partition, bucket, tuple(by_id[i] for i in sorted(by_id))))
    return plan


# -- reading a unit ----------------------------------------------------------------------

def read_changes(directory: TableDirectory, plan: ChangePlan, unit: ChangeUnit,
                 stamped: bool = False) -> Iterator[pa.RecordBatch]:
    """A unit's change rows (keys in order; per commit or as written: commit by commit, in
    commit order).  `stamped`: an as-written plan's rows carry their commit's id too."""
    reader = _UnitReader(directory, plan, unit)
    stamped = plan.per_commit or (stamped and plan.as_written)
    schema = plan.schema if plan.per_commit or not stamped else \
        plan.schema.append(pa.field(SNAPSHOT_ID_COLUMN, pa.int64(), nullable=False))
    for table in reader.tables():
        table = _filtered(table, plan, directory, stamped)
        if table.num_rows:
            yield from table.cast(schema).to_batches()


def read_in_commit_order(directory: TableDirectory, plan: ChangePlan) -> Iterator[pa.RecordBatch]:
    """A per-commit or as-written plan's batches, the units' (each of one commit, a unit's in
    commit order) interleaved commit by commit, each unit read as far as the commit being
    emitted; an as-written plan's without the commit ids."""
    units = [read_changes(directory, plan, unit, stamped=True) for unit in plan.units]
    for batch in heapq.merge(*units, key=lambda b: b.column(SNAPSHOT_ID_COLUMN)[0].as_py()):
        yield batch if plan.per_commit else batch.drop_columns([SNAPSHOT_ID_COLUMN])



def read_units(directory: TableDirectory, plan: ChangePlan, threads: int | None = None) -> Iterator[pa.RecordBatch]:
    """Every unit's batches, in plan order, the units read in `threads` threads (default: one
    per CPU; the lookups, Parquet decoding and merges run without the GIL), a window of units
    at a time so that memory holds at most that many units' changes."""
    workers = max(1, min(threads or os.cpu_count() or 1, len(plan.units)))
    if workers == 1:
        for unit in plan.units:
            yield from read_changes(directory, plan, unit)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for first in range(0, len(plan.units), workers):
            window = [pool.submit(lambda u: list(read_changes(directory, plan, u)), unit)
                      for unit in plan.units[first:first + workers]]
            for future in window:
                yield from future.result()

class _UnitReader:
    def __init__(self, directory: TableDirectory, plan: ChangePlan, unit: ChangeUnit,
                 above_level0: bool = False) -> None:
        self.directory = directory
        self.above_level0 = above_level0  # states without level 0 (`change_of_files`)
        self.plan = plan
        self.unit = unit
        ts = directory.schema
        self.ts = ts
        wanted = set(plan.columns) | (flt.columns_of(plan.filter) or set(ts.schema.names) if plan.filter is not None
                                      else set())
        self.columns = [c for c in ts.schema.names if c in wanted]  # what is read and merged
        self.values = [c for c in self.columns if c not in set(ts.primary_key)]
        self.key_expr = file_filter(directory, plan.filter) if plan.filter is not None else None
        self.cache: dict[str, pa.Table] = {}  # added files' rows, by name
        self.aggregations = {c: fn for c, fn in (directory.options.aggregations or {}).items() if c in wanted}

    def tables(self) -> Iterator[pa.Table]:
        plan, unit = self.plan, self.unit
        if not self.ts.has_primary_key:
            yield from self._append_table()
            return
        if not plan.computed:
            if plan.per_commit:
                for c in unit.commits:
                    yield self._stamped(self._changelog_rows(c), c.snapshot_id)
            elif plan.as_written:
                yield from (self._stamped(self._changelog_rows(c), c.snapshot_id) for c in unit.commits)
            else:
                yield self._folded_changelog([self._changelog_rows(c) for c in unit.commits])
            return
        if _by_states(self.directory) or self._hidden_rows():
            yield from self._state_differences()
            return
        if not plan.per_commit:
            overwrites = [c.snapshot_id for c in unit.commits if c.kind == "OVERWRITE"]
            if overwrites:
                old = self._state(plan.start, None)
                state = self._state(overwrites[-1], None)
                rest = [c for c in unit.commits if c.snapshot_id > overwrites[-1]]
            else:
                rest = list(unit.commits)
                old = self._state(plan.start, self._touched(rest))
                state = old
            # one merge of every added file, as a read of `end` merges them (an aggregate folds
            # retractions of a key it does not hold only together, so folding commit by commit
            # could differ)
            yield self._diff(old, self._fold(state, rest))
            return
        first_overwrite = next((i for i, c in enumerate(unit.commits) if c.kind == "OVERWRITE"), len(unit.commits))
        base = self._state(plan.start, self._touched(unit.commits[:first_overwrite]))
        added = list[CommitFiles]()  # the commits after `base` so far
        for c in unit.commits:
            if c.kind == "OVERWRITE":
                before = self._state(c.snapshot_id - 1, None)
                base, added = self._state(c.snapshot_id, None), []
                yield self._stamped(self._diff(before, base), c.snapshot_id)
                continue
            if c.changelog:
                added.append(c)
                yield self._stamped(self._changelog_rows(c), c.snapshot_id)
                continue
            # the keys this commit touches, before and after it: folded from the base each
            # time (as a read merges the files together), only those keys' rows merged
            keys = pa.array(self._touched([c]) or [], type=self._physical_schema().field(0).type)
            before = self._fold(base, added, keys)
            added.append(c)
            yield self._stamped(self._diff(before, self._fold(base, added, keys)), c.snapshot_id)

    def _hidden_rows(self) -> bool:
        """Can the bucket hold rows a read does not show but a later merge folds in?  An
        aggregate or partial-update key whose versions are retractions alone is left out of a
        read, yet a newer version merges with it; a fold onto the visible state would miss it,
        so such a unit's change is read from the two states."""
        if self.ts.merge_engine not in ("aggregate", "partial-update"):
            return False
        ends = [self.plan.end] + ([self.plan.start] if self.plan.start else [])
        files = [m for sid in ends for m in self._files_at(sid)] + [m for c in self.unit.commits for m in c.files]
        return any(m.holds_retractions for m in files)

    def _state_differences(self) -> Iterator[pa.Table]:
        """The change as the difference of the touched keys' visible rows at its two ends (per
        commit: before and after each commit), read as a read of each snapshot reads them."""
        plan, unit = self.plan, self.unit
        if not plan.per_commit:
            keys = None if any(c.kind == "OVERWRITE" for c in unit.commits) else self._touched(unit.commits)
            yield self._diff(self._state(plan.start, keys), self._state(plan.end, keys))
            return
        for c in unit.commits:
            if c.changelog:
                yield self._stamped(self._changelog_rows(c), c.snapshot_id)
                continue
            keys = None if c.kind == "OVERWRITE" else self._touched([c])
            yield self._stamped(self._diff(self._state(c.snapshot_id - 1, keys), self._state(c.snapshot_id, keys)),
                                c.snapshot_id)

    def change_of(self, commit: CommitFiles) -> pa.Table:
        """The change one commit's files make to the state at `plan.start` (all columns)."""
        old = self._state(self.plan.start, self._touched([commit]))
        return self._diff(old, self._fold(old, [commit]))

    # -- state -------------------------------------------------------------------------
    def _touched(self, commits: Sequence[CommitFiles]) -> list | None:
        """The first key column's values in the commits' added files (sorted, distinct)."""
        column = self.ts.file_key[0]
        found = [pc.unique(self._added(m).column(column)) for c in commits for m in c.files]
        found = [f for f in found if len(f)]
        if not found:
            return []
        values = pc.unique(pa.chunked_array(found, type=found[0].type))
        return values.take(pc.sort_indices(values)).to_pylist()

    def _state(self, snapshot_id: int, keys: list | None) -> pa.Table:
        """The bucket's rows (`self.columns`) in snapshot `snapshot_id`, in key order; with
        `keys`, only keys whose first column is one of them (and a few more)."""
        empty = pa.schema([self.ts.schema.field(c) for c in self.columns]).empty_table()
        if snapshot_id == 0 or keys == []:
            return empty
        directory = self.directory
        files = self._files_at(snapshot_id)
        if keys is not None and _exact_bounds(self.ts.file_schema.field(self.ts.file_key[0]).type):
            # a file whose key range holds none of the keys adds nothing to their rows
            files = [m for m in files if _holds_one(m, keys)]
        options = directory.options
        if keys is not None and self.key_expr is None and files and _use_lookup_files() \
                and not options.sequence_fields and not options.ignore_delete:
            # the keys' rows found in local lookup files of the (immutable) data files, not
            # decoded from them again: random keys touch every row group of a compacted file
            wanted = pa.array(keys, type=self.ts.file_schema.field(self.ts.file_key[0]).type)
            return self._key_ordered(lookup_state(directory, files, self.columns, wanted))
        key_expr = self.key_expr
        row_groups: dict[str, frozenset[int]] = {}
        if keys is not None:
            lookup = (self.ts.primary_key[0], "in", keys)
            kept = []
            for m in files:
                verdict = decide(directory.storage, m, lookup)
                if verdict.keep:
                    kept.append(m)
                    if verdict.row_groups is not None:
                        row_groups[m.file_name] = verdict.row_groups
            files = kept
            expr = file_filter(directory, lookup)
            key_expr = expr if key_expr is None else key_expr & expr
        if not files:
            return empty
        bucket = BucketPlan(self.unit.partition, self.unit.bucket, sections_of(files), row_groups)
        batches = list(read_bucket(directory, bucket, self.columns, None, key_expr, self.plan.stats))
        return self._key_ordered(pa.Table.from_batches(batches, schema=empty.schema)) if batches else empty

    def _key_ordered(self, state: pa.Table) -> pa.Table:
        """A state in key order: with deletion vectors, resolved files are sections of their own
        whose key ranges may overlap, and a read hands them out one after another."""
        options = self.directory.options  # (a pk-clustering-override table's level-1 files too)
        if not (options.deletion_vectors or options.pk_clustering) or state.num_rows < 2:
            return state
        return state.take(sort_indices(state, [(k, "ascending") for k in self.ts.primary_key], "at_end"))

    def _files_at(self, snapshot_id: int) -> list[DataFileMeta]:
        """The unit's bucket's files a read of snapshot `snapshot_id` reads."""
        live = self.directory.live_files(self.directory.store.snapshot(snapshot_id)).values()
        # as the read: level 0 waits for compaction (or, for a lookup changelog, is what changes)
        hidden = self.directory.options.level0_hidden or self.above_level0
        return [e.file for e in live if e.partition == self.unit.partition and e.bucket == self.unit.bucket
                and not (hidden and e.file.level == 0)]

    def _added(self, meta: DataFileMeta) -> pa.Table:
        """An added data file's rows (the merged columns), read once for the key lookup and
        the merge; a small one (a write's level-0 file) is kept decoded for the process's next
        change reads and lookup commits, which read the same recent files again."""
        if meta.file_name not in self.cache:
            schema = self._physical_schema()

            def load() -> pa.Table:
                batches = list(read_run(self.directory.storage, [meta], columns=schema.names,
                                        row_filter=self.key_expr))
                self.plan.stats.count([meta])
                return _table_of(batches, schema)
            if self.key_expr is None and meta.file_size < SMALL_FILE_BYTES:
                # the file, its vector as the manifest says, and the columns
                key = (table_path(self.directory.storage), meta.file_name, meta.file_size,
                       repr(meta.deletion_vector), tuple(schema.names))
                self.cache[meta.file_name] = _ADDED_FILES.get_keyed(key, load)
            else:
                self.cache[meta.file_name] = load()
        return self.cache[meta.file_name]

    def _physical(self, state: pa.Table, seq: int) -> pa.Table:
        """Rows in the data-file layout (keys, sequence, kind +I, values) for a merge."""
        ts = self.ts
        n = state.num_rows
        columns = [state.column(k) for k in ts.primary_key]
        columns += [pa.array(np.full(n, seq, dtype=np.int64)), pa.array(np.zeros(n, dtype=np.int8))]
        columns += [state.column(c) for c in self.values]
        return pa.Table.from_arrays(columns, schema=self._physical_schema())

    def _physical_schema(self) -> pa.Schema:
        fs = self.ts.file_schema
        return pa.schema([fs.field(c) for c in self.ts.file_key + [SEQUENCE_COLUMN, KIND_COLUMN] + self.values])

    def _fold(self, state: pa.Table, commits: Sequence[CommitFiles], keys: pa.Array | None = None) -> pa.Table:
        """The new state of the keys `state` holds and the commits' files touch: the merge
        engine over the old state (oldest) and the files' rows, commit after commit, in
        sequence order within a commit.  (Sequence numbers alone do not order commits: a
        bucket that compaction emptied starts again from 0.)  `keys`: only the keys whose
        first column is one of these."""
        def only(rows: pa.Table, column: str) -> pa.Table:
            return rows if keys is None else rows.filter(pc.is_in(rows.column(column), value_set=keys))
        state = only(state, self.ts.primary_key[0])
        files = [m for c in commits for m in c.files]
        if not files:
            return state
        schema = self._physical_schema()
        runs = [self._physical(state, -1)]
        offset = 0
        for c in commits:
            if not c.files:
                continue
            low = min(m.min_seq for m in c.files)
            for m in c.files:
                run = only(self._added(m), self.ts.file_key[0])
                index = schema.get_field_index(SEQUENCE_COLUMN)
                moved = pc.add(run.column(index), pa.scalar(offset - low, pa.int64()))
                runs.append(run.set_column(index, schema.field(index), moved))
            offset += max(m.max_seq for m in c.files) - low + 1
        ts = self.ts
        merged = merge(runs, ts.file_key, sequence=SEQUENCE_COLUMN, kind=KIND_COLUMN, engine=ts.merge_engine,
                       aggregations=self.aggregations or None).read_all()
        names = [ts.file_key[ts.primary_key.index(c)] if c in ts.primary_key else c for c in self.columns]
        out = merged.select(names)
        return pa.Table.from_arrays(out.columns, schema=state.schema)

    # -- comparing ---------------------------------------------------------------------
    def _diff(self, old: pa.Table, new: pa.Table) -> pa.Table:
        """Per key: +I (new only), -D (old only), -U/+U (both, different), nothing (equal).
        With a filter, the change of the filtered view: the rows of both states that pass it
        are compared (a row leaving the view is a -D, one entering it a +I), so the change
        applied to `read(start, filter)` gives `read(end, filter)`."""
        if self.plan.filter is not None:
            expression = flt.to_expression(self.plan.filter, self.ts.schema)
            old, new = (t.filter(pa.array(_mask(t, expression))) if t.num_rows else t for t in (old, new))
        return diff_states(self.ts.primary_key, [c for c in self.plan.columns if c not in self.ts.primary_key],
                           old, new)

    def _stamped(self, rows: pa.Table, snapshot_id: int) -> pa.Table:
        return rows.append_column(SNAPSHOT_ID_COLUMN, pa.array(np.full(rows.num_rows, snapshot_id, dtype=np.int64)))

    # -- changelog files ---------------------------------------------------------------
    def _changelog_rows(self, c: CommitFiles) -> pa.Table:
        """A commit's changelog rows in this bucket: table columns and `_row_kind`."""
        ts = self.ts
        names = ts.file_key + [KIND_COLUMN] + self.values
        tables = []
        for m in c.changelog:
            batches = list(read_run(self.directory.storage, [m], columns=names, row_filter=self.key_expr))
            if batches:
                tables.append(_table_of(batches, self._changelog_schema()))
        self.plan.stats.count(list(c.changelog))
        schema = pa.schema([ts.schema.field(n) for n in self.columns])
        if not tables:
            return _with_kinds(schema.empty_table(), np.zeros(0, dtype=np.int8))
        rows = pa.concat_tables(tables)
        columns = [rows.column(ts.file_key[ts.primary_key.index(n)] if n in ts.primary_key else n)
                   for n in self.columns]
        out = pa.Table.from_arrays(columns, schema=schema)
        return _with_kinds(out, rows.column(KIND_COLUMN).to_numpy())

    def _changelog_schema(self) -> pa.Schema:
        fs = self.ts.file_schema
        return pa.schema([fs.field(c) for c in self.ts.file_key + [KIND_COLUMN] + self.values])

    def _folded_changelog(self, commits: list[pa.Table]) -> pa.Table:
        """The net change of exact (lookup) changelogs: per key, its first before-image (if the
        key existed) and its last after-image (if it exists), compared as states."""
        ts = self.ts
        rows = pa.concat_tables(commits) if commits else None
        if rows is None or rows.num_rows == 0:
            return self._diff(pa.schema([ts.schema.field(n) for n in self.columns]).empty_table(),
                              pa.schema([ts.schema.field(n) for n in self.columns]).empty_table())
        kinds = kinds_of(rows.column(ROW_KIND_COLUMN))
        plain = rows.drop_columns([ROW_KIND_COLUMN])
        n = plain.num_rows
        keys = plain.select(list(ts.primary_key)).append_column("__i", pa.array(np.arange(n)))
        grouped = keys.group_by(list(ts.primary_key), use_threads=False).aggregate([("__i", "min"), ("__i", "max")])
        first = grouped.column("__i_min").to_numpy()
        last = grouped.column("__i_max").to_numpy()
        before = first[(kinds[first] == RowKind.UPDATE_BEFORE) | (kinds[first] == RowKind.DELETE)]
        after = last[(kinds[last] == RowKind.INSERT) | (kinds[last] == RowKind.UPDATE_AFTER)]
        old = plain.take(pa.array(np.sort(before)))
        new = plain.take(pa.array(np.sort(after)))
        return self._diff(_sorted_by_key(old, ts.primary_key), _sorted_by_key(new, ts.primary_key))

    # -- append tables -----------------------------------------------------------------
    def _append_table(self) -> Iterator[pa.Table]:
        """An append table's change: the added rows, +I; an overwrite: the old rows -D and the
        new rows +I (rows have no keys to pair them by)."""
        plan = self.plan
        out: list[pa.Table] = []
        overwrites = [c.snapshot_id for c in self.unit.commits if c.kind == "OVERWRITE"]
        commits = list(self.unit.commits)
        if overwrites and not plan.per_commit:
            old = self._whole(plan.start)
            new = self._whole(overwrites[-1])
            out.append(_with_kinds(old, np.full(old.num_rows, RowKind.DELETE, dtype=np.int8)))
            out.append(_with_kinds(new, np.zeros(new.num_rows, dtype=np.int8)))
            commits = [c for c in commits if c.snapshot_id > overwrites[-1]]
        for c in commits:
            if c.kind == "OVERWRITE":
                old, new = self._whole(c.snapshot_id - 1), self._whole(c.snapshot_id)
                rows = pa.concat_tables([_with_kinds(old, np.full(old.num_rows, RowKind.DELETE, dtype=np.int8)),
                                         _with_kinds(new, np.zeros(new.num_rows, dtype=np.int8))])
            elif c.changelog and not c.files:
                rows = self._changelog_append(c)
            else:
                rows = self._rows_of(c.files)
                rows = _with_kinds(rows, np.zeros(rows.num_rows, dtype=np.int8))
            out.append(self._stamped(rows, c.snapshot_id) if plan.per_commit else rows)
        if out and not plan.per_commit:
            yield pa.concat_tables(out)
        else:
            yield from out

    def _rows_of(self, files: Sequence[DataFileMeta]) -> pa.Table:
        schema = pa.schema([self.ts.schema.field(c) for c in self.columns])
        batches = [b for m in files for b in read_run(self.directory.storage, [m], columns=self.columns)]
        self.plan.stats.count(list(files))
        return _table_of(batches, schema)

    def _changelog_append(self, c: CommitFiles) -> pa.Table:
        rows = self._rows_of(c.changelog)
        return _with_kinds(rows, np.zeros(rows.num_rows, dtype=np.int8))

    def _whole(self, snapshot_id: int) -> pa.Table:
        schema = pa.schema([self.ts.schema.field(c) for c in self.columns])
        if snapshot_id == 0:
            return schema.empty_table()
        return self._rows_of(self._files_at(snapshot_id))


def _exact_bounds(dtype: pa.DataType) -> bool:
    """Are a key column's recorded file bounds exactly its values, comparable with them in
    Python?  Integers, strings, binaries, decimals and dates; not floats (NaN compares with
    nothing) nor times and timestamps (bounds may be kept at a coarser precision than the
    values, and pandas' nanosecond values compare with datetimes)."""
    return (pa.types.is_integer(dtype) or pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
            or pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) or pa.types.is_decimal(dtype)
            or pa.types.is_date(dtype) or pa.types.is_boolean(dtype))


def _holds_one(meta: DataFileMeta, firsts: list) -> bool:
    """Whether one of the sorted first-key-column values lies in the file's key range (True
    when they do not compare)."""
    try:
        i = bisect.bisect_left(firsts, meta.min_key[0])
        return i < len(firsts) and firsts[i] <= meta.max_key[0]
    except (TypeError, IndexError):
        return True


def _table_of(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """Batches as a table of `schema` (a file's own fields may be declared not null)."""
    if not batches:
        return schema.empty_table()
    table = pa.Table.from_batches(batches)
    return table if table.schema == schema else table.cast(schema)


def _use_lookup_files() -> bool:
    """Are keys looked up in local lookup files (`table.lookup`)?  Off with
    MERGETREE_LOOKUP_FILES=0 (then the data files are read, filtered, each time)."""
    return os.environ.get("MERGETREE_LOOKUP_FILES", "1") != "0"


def _with_kinds(rows: pa.Table, kinds: np.ndarray) -> pa.Table:
    return rows.append_column(pa.field(ROW_KIND_COLUMN, pa.string(), nullable=False),
                              symbols_of(pa.array(kinds, pa.int8())))


def _sorted_by_key(rows: pa.Table, key: Sequence[str]) -> pa.Table:
    """Rows (one per key) in key order."""
    if rows.num_rows < 2:
        return rows
    return rows.take(sort_indices(rows, [(k, "ascending") for k in key], "at_start"))


def _values_equal(a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Row by row: the same value (nulls equal nulls, NaN equals NaN)."""
    n = len(a)
    both_null = (pc.and_(pc.is_null(a), pc.is_null(b))).to_numpy(zero_copy_only=False)
    try:
        same = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
        if pa.types.is_floating(a.type):
            same |= pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False).to_numpy(zero_copy_only=False)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):  # nested types: as Python values
        left, right = a.to_pylist(), b.to_pylist()
        same = np.array([x == y for x, y in zip(left, right)], dtype=bool).reshape(n)
    return same | both_null


def _same_key(column: pa.ChunkedArray) -> np.ndarray:
    """For rows 1..n-1: the same key value as the row before (floats compared by their bits,
    so -0.0 and 0.0 stay distinct keys as the merge keeps them)."""
    n = len(column)
    if pa.types.is_floating(column.type):
        values = np.asarray(column.to_numpy(), dtype=np.float64)
        bits = values.view(np.uint64).copy()
        bits[np.isnan(values)] = np.uint64(0x7FF8000000000000)
        return bits[1:] == bits[:-1]
    return pc.fill_null(pc.equal(column.slice(1), column.slice(0, n - 1)), False).to_numpy(zero_copy_only=False)


def diff_states(key: Sequence[str], values: Sequence[str], old: pa.Table, new: pa.Table) -> pa.Table:
    """The change from `old` to `new` (each one row per key, in key order; the same columns):
    -D for a key only in old, +I only in new, -U then +U where `values` differ."""
    schema = old.schema
    side = pa.field(_SIDE, pa.int64(), nullable=False)
    runs = [old.append_column(side, pa.array(np.zeros(old.num_rows, dtype=np.int64))),
            new.cast(schema).append_column(side, pa.array(np.ones(new.num_rows, dtype=np.int64)))]
    both = merge(runs, list(key), sequence=_SIDE, engine="none").read_all()
    n = both.num_rows
    if n == 0:
        return _with_kinds(schema.empty_table(), np.zeros(0, dtype=np.int8))
    same = np.ones(max(n - 1, 0), dtype=bool)
    for k in key:
        same &= _same_key(both.column(k))
    sides = both.column(_SIDE).to_numpy()
    pair = np.flatnonzero(same)  # rows i (old) and i + 1 (new) hold one key
    changed = np.ones(len(pair), dtype=bool)
    if len(pair):
        equal = np.ones(len(pair), dtype=bool)
        left, right = pa.array(pair), pa.array(pair + 1)
        for c in values:
            column = both.column(c)
            equal &= _values_equal(column.take(left), column.take(right))
        changed = ~equal
    in_pair = np.zeros(n, dtype=bool)
    in_pair[pair] = True
    in_pair[pair + 1] = True
    kinds = np.where(sides == 0, np.int8(RowKind.DELETE), np.int8(RowKind.INSERT)).astype(np.int8)
    keep = ~in_pair
    keep[pair[changed]] = True
    keep[pair[changed] + 1] = True
    kinds[pair] = RowKind.UPDATE_BEFORE
    kinds[pair + 1] = RowKind.UPDATE_AFTER
    index = np.flatnonzero(keep)
    rows = both.take(pa.array(index)).drop_columns([_SIDE])
    return _with_kinds(rows, kinds[index])


def _filtered(table: pa.Table, plan: ChangePlan, directory: TableDirectory, stamped: bool) -> pa.Table:
    """The rows of a change that pass the filter, then the asked columns.  An update is kept
    whole: its -U and +U rows both stay when either passes (a consumer never sees half of one)."""
    if plan.filter is not None and table.num_rows:
        expression = flt.to_expression(plan.filter, directory.schema.schema)
        passes = _mask(table, expression)
        kinds = table.column(ROW_KIND_COLUMN).to_numpy(zero_copy_only=False)
        before = np.flatnonzero(kinds[:-1] == "-U")
        after = before + 1
        # an update: a -U row and the +U of its key right after it (an input changelog may
        # hold a -U alone)
        ok = kinds[after] == "+U"
        for k in directory.schema.primary_key:
            column = table.column(k)
            ok &= _values_equal(column.take(pa.array(before)), column.take(pa.array(after)))
        before, after = before[ok], after[ok]
        pair = passes[before] | passes[after]
        passes[before] = pair
        passes[after] = pair
        table = table.filter(pa.array(passes))
    wanted = plan.columns + [ROW_KIND_COLUMN] + ([SNAPSHOT_ID_COLUMN] if stamped else [])
    return table.select(wanted)


def _mask(table: pa.Table, expression: pc.Expression) -> np.ndarray:
    """Which rows pass the filter (a null verdict does not)."""
    import pyarrow.dataset as ds  # imported when first used: it pulls in pandas

    marked = table.append_column("__row", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    kept = ds.dataset(marked).to_table(columns=["__row"], filter=expression).column("__row").to_numpy()
    out = np.zeros(table.num_rows, dtype=bool)
    out[kept] = True
    return out


def change_of_files(directory: TableDirectory, base: Snapshot | None, partition: tuple, bucket: int,
                    files: Sequence[DataFileMeta], above_level0: bool = False) -> pa.Table:
    """The exact change that adding `files` (level-0, sequence numbers after everything in
    `base`) to one bucket of snapshot `base` makes: table columns and `_row_kind`, in key
    order (what the lookup changelog producer writes).  `above_level0`: the change to the
    bucket's rows above level 0 (a Paimon compaction's lookup changelog: `files` are in `base`,
    at level 0, and what they change is what the levels above hold)."""
    ts = directory.schema
    plan = ChangePlan(base.id if base else 0, (base.id if base else 0) + 1, False, pa.schema([]),
                      columns=list(ts.schema.names))
    commit = CommitFiles(plan.end, "APPEND", tuple(files))
    reader = _UnitReader(directory, plan, ChangeUnit(partition, bucket, (commit,)), above_level0)
    return reader.change_of(commit)
