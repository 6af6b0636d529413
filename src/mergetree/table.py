"""Primary-key and append tables on Parquet: writes, atomic snapshots, merge-on-read."""
from __future__ import annotations

import datetime as dt
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import filters as flt
from . import paths
from .arrow_input import check_batch, is_implicit_cast
from .data_files import DataFileMeta, read_run, write_sorted_run
from .errors import (
    CommitConflictError, CompactionConflictError, CorruptTableError, InvalidArgumentError, SchemaMismatchError, TableExistsError,
    TableNotFoundError,
)
from .merge import merge
from .snapshots import FileEntry, Snapshot, SnapshotStore, backoff, read_json, recovery_hint, write_json_atomically
from .table_schema import KEY_PREFIX, KIND_COLUMN, SEQUENCE_COLUMN, TableSchema

COMMIT_RETRIES = 30
ROW_KIND_INSERT = 0
ROW_KIND_DELETE = 3
DAMAGED_DIR = "damaged"  # where `repair` sets damaged snapshot files aside (inside snapshot/)


@dataclass
class BucketPlan:
    """The files a read of one bucket touches, grouped into sections of overlapping key ranges."""

    partition: tuple
    bucket: int
    sections: list[list[list[DataFileMeta]]]  # section -> sorted runs -> files in key order

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for section in self.sections for run in section for f in run]


@dataclass
class ReadPlan:
    snapshot_id: int | None
    buckets: list[BucketPlan] = field(default_factory=list)
    files_total: int = 0
    pruned_partitions: int = 0
    pruned_buckets: int = 0
    pruned_files: int = 0

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for b in self.buckets for f in b.files]


class Table:
    """A table directory.  Create one with `Table.create`, open one with `Table.open`."""

    def __init__(self, path: str, schema: TableSchema) -> None:
        self.path = os.path.abspath(path)
        self.table_schema = schema
        self.options = schema.table_options
        self.store = SnapshotStore(self.path, schema.partition_by, self.options.manifest_merge_min_count)

    # -- creating and opening ---------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike, schema: pa.Schema, primary_key=None, partition_by=None,
               buckets: int = 1, bucket_key=None, merge_engine: str = "deduplicate",
               options: dict | None = None) -> Table:
        """Create a table in a new or empty directory.  Everything is checked first: a bad
        argument or option raises before anything is written."""
        path = _as_path(path)
        ts = TableSchema.create(schema, primary_key, partition_by, buckets, bucket_key, merge_engine, options)
        if os.path.exists(os.path.join(path, paths.SCHEMA_FILE)):
            raise TableExistsError(f"a table already exists at {path}")
        if os.path.exists(path):
            if not os.path.isdir(path):
                raise TableExistsError(f"{path} is a file, not a directory")
            if os.listdir(path):
                raise TableExistsError(
                    f"{path} already holds files and is not a mergetree table; create the table in a "
                    f"new or empty directory (mergetree's cleanup must own everything in it)")
        target = os.path.join(path, paths.SCHEMA_FILE)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = write_json_atomically(target, ts.to_json())
        try:
            os.link(tmp, target)  # exclusive: two creators cannot both win
        except FileExistsError:
            raise TableExistsError(f"a table already exists at {path}") from None
        finally:
            os.unlink(tmp)
        table = cls(path, ts)
        table.store.ensure_directories()
        return table

    @classmethod
    def open(cls, path: str | os.PathLike, check: bool = True) -> Table:
        """Open a table.  With `check` (the default) the latest snapshot is read too, so a
        damaged one is reported here, naming the file and how to recover; `check=False`
        opens a table whose latest snapshot is damaged, to read an older one."""
        path = _as_path(path)
        if not os.path.exists(path):
            raise TableNotFoundError(f"no mergetree table at {path}: the path does not exist")
        if not os.path.isdir(path):
            raise TableNotFoundError(f"no mergetree table at {path}: it is a file, not a directory")
        if not os.path.exists(os.path.join(path, paths.SCHEMA_FILE)):
            raise TableNotFoundError(f"no mergetree table at {path}: it has no {paths.SCHEMA_FILE}")
        document = read_json(path, paths.SCHEMA_FILE, "schema file")
        try:
            ts = TableSchema.from_json(document)
            table = cls(path, ts)
        except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
            raise CorruptTableError(f"the schema file {paths.SCHEMA_FILE} of table {path} is damaged: {exc!r}",
                                    path=os.path.join(path, paths.SCHEMA_FILE)) from None
        if check:
            table.latest_snapshot()
        return table

    @classmethod
    def repair(cls, path: str | os.PathLike) -> list[str]:
        """Set damaged snapshot files at the top of the history aside (into
        snapshot/damaged/, never deleted) so the table continues from its newest intact
        snapshot.  Returns what was done, a line per snapshot file; the changes those
        snapshots committed are lost."""
        table = cls.open(path, check=False)
        moved = []
        intact = None
        ids = table.store.snapshot_ids()
        hint = table.store.latest_hint()
        if hint is not None:  # snapshot files the hint knows of that are gone
            moved += [f"{paths.snapshot_file(i)} (missing)" for i in range(max(ids, default=0) + 1, hint + 1)]
        for snapshot_id in reversed(ids):
            try:
                table.store.live_files(table.store.snapshot(snapshot_id))
                intact = snapshot_id
                break
            except CorruptTableError:
                relative = paths.snapshot_file(snapshot_id)
                aside = os.path.join(table.path, paths.SNAPSHOT_DIR, DAMAGED_DIR)
                os.makedirs(aside, exist_ok=True)
                os.replace(os.path.join(table.path, relative),
                           os.path.join(aside, f"snapshot-{snapshot_id}.json.{int(time.time())}"))
                moved.append(f"{relative} (damaged: moved to {paths.SNAPSHOT_DIR}/{DAMAGED_DIR}/)")
        table.store.write_latest_hint(intact)
        return moved

    @property
    def schema(self) -> pa.Schema:
        return self.table_schema.schema

    def snapshots(self) -> list[Snapshot]:
        return [self.store.snapshot(i) for i in self.store.snapshot_ids()]

    def latest_snapshot(self) -> Snapshot | None:
        latest = self.store.latest_id()
        return None if latest is None else self.store.snapshot(latest)

    # -- writing ----------------------------------------------------------------------
    def write(self, data: Any) -> Snapshot | None:
        """Upsert rows (a pa.Table, RecordBatch, RecordBatchReader, Arrow stream or pandas
        DataFrame).  Everything is checked first; the rows become visible in one commit."""
        table = self._conform(data, complete=True)
        return self._write_changes(table, ROW_KIND_INSERT)

    def delete(self, keys: Any) -> Snapshot | None:
        """Delete rows by primary key (`keys` holds at least the primary-key columns)."""
        if not self.table_schema.has_primary_key:
            raise InvalidArgumentError("an append table has no keys to delete by")
        if self.table_schema.merge_engine == "first-row":
            raise InvalidArgumentError("a first-row table keeps the first version of a key; it cannot delete")
        if self.table_schema.merge_engine == "aggregate":
            raise InvalidArgumentError(
                "an aggregate table folds a delete into its aggregates (a key-only delete would "
                "retract nothing); write compensating values instead")
        return self._write_changes(self._conform(keys, complete=False), ROW_KIND_DELETE)

    def _conform(self, data: Any, complete: bool) -> pa.Table:
        """The input as a pa.Table of the table's schema, or a clear error (nothing written).
        Arrow columns are cast only within a kind of value and only when every value
        survives (`is_implicit_cast`); Python and pandas values are converted to the
        table's types value by value.  Strings never become numbers, numbers never strings."""
        schema = self.schema
        table = _as_table(data, schema)
        check_batch(table, "the data")
        pk = self.table_schema.primary_key
        missing = [n for n in schema.names if n not in table.column_names and (complete or n in pk)]
        if missing:
            raise SchemaMismatchError(f"the data lacks column(s) {missing} of table {self.path}")
        extra = [n for n in table.column_names if n not in schema.names]
        if extra:
            raise SchemaMismatchError(f"the data has column(s) {extra} that table {self.path} lacks")
        if len(set(table.column_names)) != len(table.column_names):
            raise SchemaMismatchError(f"the data repeats a column: {table.column_names}")
        columns = []
        for f in schema:
            if f.name not in table.column_names:
                columns.append(pa.nulls(table.num_rows, f.type))
                continue
            col = table.column(f.name)
            if col.type != f.type:
                if not is_implicit_cast(col.type, f.type):
                    raise SchemaMismatchError(
                        f"column {f.name!r} is {col.type}, table {self.path} has {f.type}; mergetree casts "
                        f"only within a kind of value (numbers to numbers, strings to strings, ...) and "
                        f"never parses or formats: cast the column yourself")
                try:
                    col = col.cast(f.type, safe=True)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise SchemaMismatchError(
                        f"column {f.name!r} is {col.type} and cannot be safely cast to {f.type}: {exc}") from None
            if f.name in pk and col.null_count:
                row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
                raise SchemaMismatchError(f"primary-key column {f.name!r} is null at row {row}")
            columns.append(col)
        return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in schema]))

    def _write_changes(self, table: pa.Table, kind: int) -> Snapshot | None:
        if table.num_rows == 0:
            return None
        ts = self.table_schema
        buffer_rows = _rows_per_buffer(table, self.options.write_buffer_size)
        target = self.options.target_file_size
        for attempt in range(COMMIT_RETRIES):
            base = self.latest_snapshot()
            next_seq = _next_sequences(self.store.live_files(base).values())
            first_seq = dict(next_seq)
            adds: list[FileEntry] = []
            try:
                for start in range(0, table.num_rows, buffer_rows):
                    groups = self._split(table.slice(start, buffer_rows))
                    for key in groups:
                        first_seq.setdefault(key, next_seq.get(key, 0))
                    adds += self._flush_all(groups, kind, next_seq, target)
                snapshot = self._commit_write(base, adds, first_seq)
            except BaseException:
                self._discard(adds)
                raise
            if snapshot is None:  # another write took our buckets' sequence numbers: redo
                backoff(attempt)
                continue
            if ts.has_primary_key and not self.options.write_only:
                self._compact_after_write({(e.partition, e.bucket) for e in adds})
            return snapshot
        raise CommitConflictError(f"gave up after {COMMIT_RETRIES} conflicting commits on {self.path}")

    def _commit_write(self, base: Snapshot | None, adds: list[FileEntry], first_seq: dict) -> Snapshot | None:
        """Commit new files; after a lost race, commit again on the newer snapshot as long as
        no other write gave our buckets newer sequence numbers (compactions never do).
        None means the write must be redone; its files are already deleted."""
        touched = {(e.partition, e.bucket) for e in adds}
        for attempt in range(COMMIT_RETRIES):
            try:
                return self.store.commit(base.id if base else None, adds, [], "APPEND",
                                         self.table_schema.schema_id)
            except CommitConflictError:
                base = self.latest_snapshot()
                latest_next = _next_sequences(self.store.live_files(base).values())
                if any(latest_next.get(b, 0) > first_seq.get(b, 0) for b in touched):
                    self._discard(adds)
                    return None
                backoff(attempt)
        self._discard(adds)
        return None
    def _discard(self, entries: list[FileEntry]) -> None:
        for e in entries:
            self._unlink_owned(e.file.file_name)

    def _unlink_owned(self, relative: str) -> None:
        """Delete a file of the table; a name the table cannot own is never deleted."""
        if paths.is_owned(relative, self.table_schema.partition_by):
            _unlink_quietly(os.path.join(self.path, relative))

    def _split(self, table: pa.Table) -> dict[tuple[tuple, int], pa.Table]:
        """Rows by (partition values, bucket), each in input order (one stable sort, then slices)."""
        ts = self.table_schema
        buckets = np.zeros(table.num_rows, dtype=np.int64)
        if ts.buckets > 1:
            from .buckets import bucket_ids
            buckets = bucket_ids(table, list(ts.bucket_key), ts.buckets).astype(np.int64)
        if not ts.partition_by and ts.buckets == 1:
            return {((), 0): table}
        keys = [buckets]
        dictionaries = []
        for name in ts.partition_by:
            encoded = table.column(name).combine_chunks().dictionary_encode()
            null_code = len(encoded.dictionary)
            keys.append(encoded.indices.fill_null(null_code).to_numpy().astype(np.int64))
            dictionaries.append((null_code, encoded.dictionary))
        order = np.lexsort(keys[::-1])  # stable: rows keep input order inside a group
        ordered = table.take(pa.array(order))
        sorted_keys = [k[order] for k in keys]
        change = np.zeros(len(order), dtype=bool)
        change[0] = True
        for k in sorted_keys:
            change[1:] |= k[1:] != k[:-1]
        starts = np.flatnonzero(change)
        ends = np.append(starts[1:], len(order))
        out = {}
        for start, end in zip(starts, ends):
            values = tuple(None if k[start] == null_code else dictionary[int(k[start])].as_py()
                           for k, (null_code, dictionary) in zip(sorted_keys[1:], dictionaries))
            out[(values, int(sorted_keys[0][start]))] = ordered.slice(start, end - start)
        return out

    def _directory(self, partition: tuple, bucket: int) -> str:
        return paths.bucket_directory(self.table_schema.partition_by, partition, bucket)

    def _flush_all(self, groups: dict, kind: int, next_seq: dict, target: int) -> list[FileEntry]:
        """Flush every (partition, bucket) group of a write buffer, in parallel threads:
        sorting and Parquet encoding run without the GIL.  Sequence numbers are taken
        per bucket, so the groups do not interfere."""
        for (partition, bucket), rows in groups.items():
            first = next_seq.get((partition, bucket), 0)
            next_seq[(partition, bucket)] = first + rows.num_rows
        jobs = [(rows, partition, bucket, next_seq[(partition, bucket)] - rows.num_rows)
                for (partition, bucket), rows in groups.items()]
        workers = min(len(jobs), os.cpu_count() or 1)
        if workers <= 1:
            return [e for job in jobs for e in self._flush(*job, kind, target)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._flush, *job, kind, target) for job in jobs]
        done = [f.result() for f in futures if f.exception() is None]
        failed = [f.exception() for f in futures if f.exception() is not None]
        if failed:
            self._discard([e for entries in done for e in entries])
            raise failed[0]
        return [e for entries in done for e in entries]

    def _flush(self, rows: pa.Table, partition: tuple, bucket: int, first: int, kind: int,
               target: int) -> list[FileEntry]:
        """Sort and fold one bucket's buffered rows (sequence numbers from `first`) and write
        them as level-0 files."""
        ts = self.table_schema
        directory = self._directory(partition, bucket)
        if not ts.has_primary_key:
            files = write_sorted_run(self.path, directory, rows, ts, 0, target)
            return [FileEntry(partition, bucket, f) for f in files]
        physical = _physical(rows, ts, np.arange(first, first + rows.num_rows, dtype=np.int64), kind)
        folded = self._fold(physical)
        files = write_sorted_run(self.path, directory, folded, ts, 0, target)
        return [FileEntry(partition, bucket, f) for f in files]

    def _fold(self, physical: pa.Table) -> pa.Table:
        """Sort by key and fold repeated keys with the merge engine, keeping retractions."""
        ts = self.table_schema
        order = pc.sort_indices(physical, [(k, "ascending") for k in ts.file_key] + [(SEQUENCE_COLUMN, "ascending")])
        ordered = physical.take(order)
        occurrence = _occurrence(ordered, ts.file_key)
        if occurrence.max(initial=0) == 0:
            return ordered
        # the i-th version of every key forms run i: each run is strictly ascending
        runs = [ordered.filter(pa.array(occurrence == i)) for i in range(int(occurrence.max()) + 1)]
        folded = merge(runs, ts.file_key, sequence=SEQUENCE_COLUMN, kind=KIND_COLUMN, engine=ts.merge_engine,
                       aggregations=self.options.aggregations or None, keep_deletes=True).read_all()
        return ts.restore_key_columns(folded)

    def _compact_after_write(self, touched: set) -> None:
        from .compactor import compact_buckets
        try:
            compact_buckets(self, touched, full=False)
        except CompactionConflictError:
            pass  # another process compacted these files first; the write is committed

    # -- housekeeping -----------------------------------------------------------------
    def expire_snapshots(self, retain_last: int = 1, older_than: dt.timedelta | float | None = None) -> list[int]:
        """Delete old snapshots (always keeping the newest `retain_last`, and any younger
        than `older_than`: a timedelta or seconds) and the files only they used.
        Returns the expired ids."""
        if isinstance(retain_last, bool) or not isinstance(retain_last, int) or retain_last < 1:
            raise InvalidArgumentError(f"retain_last must be an integer of at least 1, not {retain_last!r}")
        age = None if older_than is None else _seconds(older_than, "older_than")
        self._check_latest_intact()
        ids = self.store.snapshot_ids()
        candidates = ids[:-retain_last]
        if age is not None:
            cutoff = (time.time() - age) * 1000
            candidates = [i for i in candidates if self.store.snapshot(i).time_millis < cutoff]
        if not candidates:
            return []
        before = self._referenced(ids)
        for i in candidates:  # oldest first: the table stays readable at every step
            os.unlink(os.path.join(self.path, paths.snapshot_file(i)))
        after = self._referenced(self.store.snapshot_ids())
        for name in sorted(before - after):
            self._unlink_owned(name)
        return candidates

    def remove_orphan_files(self, older_than: dt.timedelta | float = dt.timedelta(hours=1)) -> list[str]:
        """Delete the table's files that no snapshot references (left by failed writes,
        crashes or aborted compactions) and that are older than `older_than` (a timedelta
        or seconds), so that commits in flight keep theirs.  Only files whose names and
        places match the table's own patterns are ever deleted; snapshots and the schema
        never are."""
        age = _seconds(older_than, "older_than")
        self._check_latest_intact()
        referenced = self._referenced(self.store.snapshot_ids())
        cutoff = time.time() - age
        partition_by = self.table_schema.partition_by
        removed = []
        for directory, subdirectories, names in os.walk(self.path):
            if os.path.relpath(directory, self.path) == os.path.join(paths.SNAPSHOT_DIR, DAMAGED_DIR):
                subdirectories.clear()
                continue
            for name in names:
                full = os.path.join(directory, name)
                relative = os.path.relpath(full, self.path).replace(os.sep, "/")
                if not paths.is_owned(relative, partition_by) or relative in referenced:
                    continue
                if (paths.snapshot_id_of(relative) is not None or relative.startswith(paths.SCHEMA_DIR + "/")) \
                        and not paths.is_temporary(relative):
                    continue  # a published snapshot or schema is the table itself
                if os.path.islink(full) or os.path.getmtime(full) > cutoff:
                    continue
                _unlink_quietly(full)
                removed.append(relative)
        return sorted(removed)

    def _check_latest_intact(self) -> None:
        """Cleanup of a table whose newest snapshot is damaged or lost would delete that
        snapshot's files: refuse (CorruptTableError) until it is repaired."""
        latest = self.latest_snapshot()
        if latest is not None:
            self.store.live_files(latest)

    def _referenced(self, snapshot_ids: list[int]) -> set[str]:
        """Paths (relative to the table) of every manifest and data file the snapshots use."""
        out: set[str] = set()
        for i in snapshot_ids:
            snap = self.store.snapshot(i)
            for manifest_list in (snap.base_manifest_list, snap.delta_manifest_list):
                if manifest_list:
                    out.add(f"{paths.MANIFEST_DIR}/{manifest_list}")
                for manifest in self.store.manifest_names(manifest_list):
                    out.add(f"{paths.MANIFEST_DIR}/{manifest}")
            out.update(self.store.live_files(snap))
        return out

    def compact(self, full: bool = False, progress: bool = False) -> Snapshot | None:
        """Compact every bucket that needs it (all of them with full=True) in one commit."""
        if not isinstance(full, bool):
            raise InvalidArgumentError(f"full must be True or False, not {full!r}")
        from .compactor import compact_buckets
        return compact_buckets(self, None, full=full, progress=progress)

    # -- reading ----------------------------------------------------------------------
    def plan(self, filter: flt.Filter = None, snapshot: int | None = None) -> ReadPlan:
        """Which files a read with this filter touches, by bucket and section."""
        from .compaction import interval_partition
        ts = self.table_schema
        f = flt.normalize(filter, self.schema)
        snap = self._snapshot_for(snapshot)
        live = self.store.live_files(snap)
        plan = ReadPlan(snap.id if snap else None, files_total=len(live))
        by_bucket: dict[tuple, list[DataFileMeta]] = defaultdict(list)
        for e in live.values():
            by_bucket[(e.partition, e.bucket)].append(e.file)
        wanted_buckets = self._buckets_for(f)
        key_columns = set(ts.primary_key) | set(ts.partition_by)
        key_filter = flt.restrict(f, key_columns) if ts.has_primary_key else f
        partitions_seen, partitions_kept = set(), set()
        for (partition, bucket), files in sorted(by_bucket.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            partitions_seen.add(partition)
            if not flt.may_match(flt.restrict(f, set(ts.partition_by)),
                                 {c: (v, v, int(v is None)) for c, v in zip(ts.partition_by, partition)}, 1):
                plan.pruned_files += len(files)
                continue
            partitions_kept.add(partition)
            if wanted_buckets is not None and bucket not in wanted_buckets:
                plan.pruned_buckets += 1
                plan.pruned_files += len(files)
                continue
            kept = [m for m in files if flt.may_match(key_filter, m.stats, m.row_count)]
            sections = interval_partition(kept) if ts.has_primary_key else [[[m] for m in kept]]
            final = []
            for section in sections:
                if len(section) == 1 and len(section[0]) == 1 or not ts.has_primary_key:
                    # nothing overlaps this file: its rows are final, value statistics may prune it
                    section = [[m for m in run if flt.may_match(f, m.stats, m.row_count)] for run in section]
                    section = [run for run in section if run]
                if section:
                    final.append(section)
            plan.pruned_files += len(files) - sum(len(run) for s in final for run in s)
            if final:
                plan.buckets.append(BucketPlan(partition, bucket, final))
        plan.pruned_partitions = len(partitions_seen - partitions_kept)
        return plan

    def _buckets_for(self, f: flt.Filter) -> set[int] | None:
        """Buckets that can hold matching rows, from = / IN on every bucket-key column."""
        ts = self.table_schema
        if ts.buckets == 1 or not ts.bucket_key:
            return None
        choices = [flt.equality_values(f, c) for c in ts.bucket_key]
        if any(c is None for c in choices):
            return None
        import itertools

        from .buckets import bucket_ids
        combos = list(itertools.product(*choices))
        if not combos:
            return set()
        if len(combos) > 10_000:
            return None
        probe = pa.table({c: pa.array([combo[i] for combo in combos], type=self.schema.field(c).type)
                          for i, c in enumerate(ts.bucket_key)})
        return set(int(b) for b in bucket_ids(probe, list(ts.bucket_key), ts.buckets))

    def read(self, columns: str | list[str] | None = None, filter: flt.Filter = None,
             snapshot: int | None = None, threads: int | None = None) -> pa.Table:
        """Merge-on-read of the table (or of `snapshot`) as one pa.Table.

        Rows come bucket by bucket (partitions and buckets in order, each bucket's rows in
        primary-key order), not in one global key order: sort the result if you need it.
        Buckets are read in `threads` threads (default: one per CPU); the merge and Parquet
        decoding run without the GIL, so they overlap."""
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise InvalidArgumentError(f"threads must be a positive integer or None, not {threads!r}")
        columns, f, expression, plan = self._prepare_read(columns, filter, snapshot)
        out_schema = pa.schema([self.schema.field(c) for c in columns])
        file_filter = self._file_filter(f)
        workers = threads or os.cpu_count() or 1
        if workers > 1 and len(plan.buckets) > 1:
            with ThreadPoolExecutor(max_workers=min(workers, len(plan.buckets))) as pool:
                parts = pool.map(lambda b: list(self._read_bucket(b, columns, expression, file_filter)),
                                 plan.buckets)
                batches = [batch for part in parts for batch in part]
        else:
            batches = [batch for b in plan.buckets for batch in self._read_bucket(b, columns, expression, file_filter)]
        return pa.Table.from_batches(batches, schema=out_schema)

    def scan(self, columns: str | list[str] | None = None, filter: flt.Filter = None,
             snapshot: int | None = None) -> pa.RecordBatchReader:
        """A streaming read: one bucket section at a time, merged with the loser tree (rows
        in the order `read` gives them)."""
        columns, f, expression, plan = self._prepare_read(columns, filter, snapshot)
        out_schema = pa.schema([self.schema.field(c) for c in columns])
        file_filter = self._file_filter(f)
        batches = (batch for b in plan.buckets for batch in self._read_bucket(b, columns, expression, file_filter))
        return pa.RecordBatchReader.from_batches(out_schema, batches)

    def _prepare_read(self, columns, filter, snapshot):
        columns = self._columns(columns)
        f = flt.normalize(filter, self.schema)
        return columns, f, flt.to_expression(f, self.schema), self.plan(f, snapshot)

    def _columns(self, columns: Any) -> list[str]:
        names = self.schema.names
        if columns is None:
            return names
        if isinstance(columns, str):
            columns = [columns]
        if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
            raise InvalidArgumentError(f"columns must be a column name or a list of names, not {columns!r}")
        for c in columns:
            if c not in names:
                raise InvalidArgumentError(f"table has no column {c!r}; columns: {names}")
        if len(set(columns)) != len(columns):
            raise InvalidArgumentError(f"columns names a column twice: {list(columns)}")
        return list(columns)

    def _snapshot_for(self, snapshot: Any) -> Snapshot | None:
        """The snapshot a read asks for (None: the latest)."""
        if snapshot is None:
            return self.latest_snapshot()
        if isinstance(snapshot, bool) or not isinstance(snapshot, int):
            raise InvalidArgumentError(f"snapshot must be a snapshot id (an int), not {snapshot!r}")
        return self.store.snapshot(snapshot)

    def _file_filter(self, f: flt.Filter) -> pc.Expression | None:
        """Key predicates hold for every version of a key, so they may filter rows inside
        each file before the merge (and skip row groups by their statistics)."""
        ts = self.table_schema
        key_filter = flt.restrict(f, set(ts.primary_key)) if ts.has_primary_key else None
        if key_filter is None:
            return None
        return flt.to_expression(flt.rename(key_filter, {k: KEY_PREFIX + k for k in ts.primary_key}),
                                 ts.file_schema)

    def _read_bucket(self, bucket: BucketPlan, columns: list[str], expression,
                     file_filter: pc.Expression | None) -> Iterator[pa.RecordBatch]:
        out_schema = pa.schema([self.schema.field(c) for c in columns])
        for section in bucket.sections:
            for batch in self._read_section(section, file_filter):
                table = pa.Table.from_batches([batch])
                if expression is not None:
                    table = table.filter(expression)
                for out in table.select(columns).to_batches():
                    if out.num_rows:
                        yield pa.RecordBatch.from_arrays(out.columns, schema=out_schema)

    def _read_section(self, section: list[list[DataFileMeta]],
                      file_filter: pc.Expression | None = None) -> Iterator[pa.RecordBatch]:
        """The merged rows of one section, in table columns, retractions dropped."""
        ts = self.table_schema
        if not ts.has_primary_key:
            for run in section:
                yield from read_run(self.path, run)
            return
        names = self.schema.names
        if len(section) == 1:  # one sorted run: rows are final; only retractions go
            for batch in read_run(self.path, section[0], row_filter=file_filter):
                kinds = batch.column(KIND_COLUMN)
                keep = pc.invert(pc.is_in(kinds, pa.array([1, 3], pa.int8())))
                yield batch.filter(keep).select(names)
            return
        runs = [read_run(self.path, run, row_filter=file_filter) for run in section]
        reader = merge(runs, ts.file_key, sequence=SEQUENCE_COLUMN, kind=KIND_COLUMN, engine=ts.merge_engine,
                       aggregations=self.options.aggregations or None)
        for batch in reader:
            yield ts.restore_key_columns(batch).select(names)


# -- helpers -----------------------------------------------------------------------------

def _as_table(data: Any, schema: pa.Schema) -> pa.Table:
    """Arrow data as it is; pandas and plain Python data converted straight to the table's
    types (they carry no Arrow types of their own), value by value."""
    try:
        if isinstance(data, pa.Table):
            return data
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
        if isinstance(data, pa.RecordBatchReader):
            return data.read_all()
        if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
            names = [str(c) for c in data.columns]
            return pa.Table.from_pandas(data, schema=_known(schema, names), preserve_index=False)
        if hasattr(data, "__arrow_c_stream__"):
            return pa.RecordBatchReader.from_stream(data).read_all()
        if isinstance(data, dict):
            return pa.table(data, schema=_known(schema, [str(k) for k in data]))
        if isinstance(data, list) and not data:
            return _known(schema, schema.names).empty_table()
        if isinstance(data, list) and all(isinstance(row, dict) for row in data):
            names = list(dict.fromkeys(str(k) for row in data for k in row))
            return pa.Table.from_pylist(data, schema=_known(schema, names))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
            OverflowError) as exc:
        raise SchemaMismatchError(f"the data does not fit the table's columns: {exc}") from None
    raise InvalidArgumentError(f"cannot write {type(data).__name__}; give a pyarrow Table, RecordBatch, "
                               f"RecordBatchReader, an Arrow stream, a pandas DataFrame, a dict of columns "
                               f"or a list of row dicts")


def _known(schema: pa.Schema, names: list[str]) -> pa.Schema:
    """The table's fields for these names (nullable; extra names are reported by _conform)."""
    extra = [n for n in names if n not in schema.names]
    if extra:
        raise SchemaMismatchError(f"the data has column(s) {extra} that the table lacks")
    return pa.schema([schema.field(n).with_nullable(True) for n in names])


def _as_path(path: Any) -> str:
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"a table path is a str or os.PathLike, not {type(path).__name__}")
    return os.path.abspath(os.fspath(path))


def _seconds(duration: Any, name: str) -> float:
    """A duration given as a timedelta or as seconds, checked."""
    if isinstance(duration, dt.timedelta):
        seconds = duration.total_seconds()
    elif isinstance(duration, (int, float)) and not isinstance(duration, bool):
        seconds = float(duration)
    else:
        raise InvalidArgumentError(f"{name} must be a datetime.timedelta or a number of seconds, not {duration!r}")
    if not seconds >= 0:
        raise InvalidArgumentError(f"{name} must not be negative, got {duration!r}")
    return seconds


def _rows_per_buffer(table: pa.Table, buffer_bytes: int) -> int:
    per_row = max(table.nbytes / max(table.num_rows, 1), 1.0)
    return max(int(buffer_bytes / per_row), 1)


def _next_sequences(entries) -> dict[tuple, int]:
    out: dict[tuple, int] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        out[key] = max(out.get(key, 0), e.file.max_seq + 1)
    return out


def _physical(rows: pa.Table, ts: TableSchema, seq: np.ndarray, kind: int) -> pa.Table:
    """The data-file layout: _KEY_ columns, sequence, kind, then the table columns."""
    columns = [rows.column(k) for k in ts.primary_key]
    columns += [pa.array(seq, pa.int64()), pa.array(np.full(len(seq), kind, dtype=np.int8))]
    columns += rows.columns
    return pa.Table.from_arrays(columns, schema=ts.file_schema)


def _occurrence(ordered: pa.Table, key: list[str]) -> np.ndarray:
    """For rows sorted by key: 0 for a key's first row, 1 for its second, ..."""
    n = ordered.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    same = np.ones(n - 1, dtype=bool)
    for k in key:
        col = ordered.column(k)
        same &= pc.equal(col.slice(1), col.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    group_start = np.repeat(starts, np.diff(np.append(starts, n)))
    return np.arange(n) - group_start


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
