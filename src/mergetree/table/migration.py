"""`mergetree migrate OLD NEW`: a table of mergetree's older, private format made into an Apache
Paimon table, which every Paimon engine reads.

What must be rewritten is: rows were placed in buckets by Spark's ``pmod(murmur3)``, which no
Paimon writer could follow, so every row goes to the bucket Paimon's bucket function gives it,
and the files are new Paimon data files.  The table's latest rows are streamed from the old
table into the new one (the old table is only read), committed once: a migration cut short
leaves the old table as it was and the new one marked unfinished (``migrated-from``), so that
running it again starts afresh; the last step marks it finished.  Its schema, key, partitions, bucket count, merge
engine and options come along, and so do its query log and optimizer history (rows, beside the
new table); its snapshot history does not (time travel starts at the migration), nor do its
consumers (their positions are in the old history) — the report says so."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError, MergeTreeError, TableExistsError
from ..merge import RowKind
from ..storage import Store
from . import consumers, read
from .compaction.runner import compact_buckets
from .directory import TableDirectory, alter_options
from .objects import locate, table_path
from .options import KEY_MIGRATED_FROM, OPTIONS
from .paimon.create import create_directory, open_or_create
from .paimon.store import open_directory
from .paimon.tables import option_name
from .schema import TableSchema
from .workload.history import HISTORY_DIR, HISTORY_SCHEMA
from .workload.logtables import read_rows
from .workload.places import side_table
from .workload.querylog import LOG_OPTIONS, LOG_SCHEMA, QUERY_LOG_DIR
from .write import write_rows

__all__ = ["MigrationReport", "migrate"]

Progress = Callable[[int, int], None]


@dataclass
class MigrationReport:
    """What `migrate` did."""

    source: str
    target: str
    rows: int = 0
    buckets: int = 0
    partitions: int = 0
    options: dict[str, str] = field(default_factory=dict)
    queries: int = 0
    optimizer_records: int = 0
    snapshots_left_behind: int = 0
    consumers_left_behind: list[str] = field(default_factory=list)
    restarted: bool = False
    seconds: float = 0.0

    def lines(self) -> list[str]:
        out = [f"migrated {self.source} (mergetree's older format) to the Apache Paimon table {self.target}"
               + (" (an earlier attempt cut short was started afresh)" if self.restarted else ""),
               f"  {self.rows:,} rows rewritten into {self.buckets} bucket(s) by Paimon's bucket function"
               + (f", {self.partitions} partition(s)" if self.partitions else "") + f" in {self.seconds:.1f}s",
               f"  options carried: {', '.join(f'{k}={v}' for k, v in sorted(self.options.items())) or 'none'}",
               f"  query log: {self.queries:,} record(s); optimizer history: {self.optimizer_records:,} record(s)",
               f"  not carried: the old history of {self.snapshots_left_behind} snapshot(s) (time travel starts now)"]
        if self.consumers_left_behind:
            out.append(f"  not carried: consumers {', '.join(self.consumers_left_behind)} (their positions are "
                       f"snapshots of the old history); start them again on the new table")
        out.append(f"  the old table is untouched; remove it when nothing reads it any more: {self.source}")
        return out


def _unfinished(source: str) -> str:
    """The new table's mark while its migration runs (its last step marks it `source`)."""
    return f"{source} (unfinished)"


def _store(path: Any, storage_options: dict | None, what: str) -> Store:
    return locate(os.fspath(path), storage_options, what)


def _started_afresh(store: Store, source: str) -> bool:
    """Clear the new table's place if it holds a migration of `source` cut short (a table marked
    as its migration, without a snapshot); anything else there is refused."""
    names = [o.path for o in store.list("")]
    if not names:
        return False
    try:
        existing = open_directory(store)
    except MergeTreeError:
        existing = None
    marked = existing is not None and existing.schema.paimon is not None and \
        existing.schema.paimon.options.get(option_name(KEY_MIGRATED_FROM)) == _unfinished(source)
    if not marked:
        raise TableExistsError(f"{table_path(store)} is not empty; give the migration a new path")
    for name in sorted(names, reverse=True):  # every file there is the cut-short migration's own
        store.delete(name)
    return True


def _rows_of(directory: TableDirectory, progress: Progress | None, report: MigrationReport
             ) -> Iterator[pa.Table]:
    """The old table's latest rows, batch by batch (not logged as a query of it)."""
    prepared = read.prepare_read(directory, None, None, None, None, None)
    total = sum(m.row_count for b in prepared.plan.buckets for m in b.files)
    if progress is not None:
        progress(0, total)
    for batch in read.scan_table(directory, prepared):
        report.rows += batch.num_rows
        if progress is not None:
            progress(min(report.rows, total), total)
        yield pa.Table.from_batches([batch])


def _copy_log(source: str, target: str, name: str, schema: pa.Schema, options: dict[str, str]) -> int:
    """A workload log's rows (the query log, the optimizer history) into the new table's."""
    rows = read_rows(side_table(source, name), schema, name)
    if not rows.num_rows:
        return 0
    write_rows(open_or_create(side_table(target, name), schema, options), rows, RowKind.INSERT)
    return rows.num_rows


def migrate(old: Any, new: Any, storage_options: dict | None = None, progress: Progress | None = None
            ) -> MigrationReport:
    """Make the table of mergetree's older format at `old` into an Apache Paimon table at
    `new` (the module's docstring says how); returns what was done.  `old` is only read.
    `progress(rows_done, rows_total)` follows the copy."""
    started = time.perf_counter()
    old_store = _store(old, storage_options, "the table to migrate")
    new_store = _store(new, storage_options, "the new table's path")
    source, target = table_path(old_store), table_path(new_store)
    if source == target:
        raise InvalidArgumentError("migrate writes a new table: give it a path of its own, not the old table's")
    directory = open_directory(old_store)
    ts: TableSchema = directory.schema
    if ts.paimon is not None:
        raise InvalidArgumentError(f"{source} is an Apache Paimon table already: there is nothing to migrate")
    report = MigrationReport(source, target)
    report.restarted = _started_afresh(new_store, source)
    # (the older format wrote every default out)
    carried = {k: v for k, v in ts.options.items() if k not in OPTIONS or OPTIONS[k].default != v}
    report.options = dict(carried)
    default_key = tuple(c for c in ts.primary_key if c not in ts.partition_by)
    bucket_key = list(ts.bucket_key) if ts.bucket_key and tuple(ts.bucket_key) != default_key else None
    fresh = create_directory(new_store, ts.schema, list(ts.primary_key) or None, list(ts.partition_by) or None,
                             ts.buckets if ts.has_primary_key or bucket_key else max(ts.buckets, 1), bucket_key,
                             ts.merge_engine, {**carried, KEY_MIGRATED_FROM: _unfinished(source)})
    # one commit of the whole copy; until the last step marks the table finished, running the
    # migration again clears what a run cut short left and starts afresh
    written = write_rows(fresh, _rows_of(directory, progress, report), RowKind.INSERT, compact=False, one_commit=True)
    if written.snapshot is not None and ts.has_primary_key:
        compact_buckets(fresh, None, False)  # level 0 up, as after a write (where reads wait for it, too)
    latest = fresh.latest_snapshot()
    live = fresh.live_files(latest).values() if latest is not None else []
    report.buckets = len({(e.partition, e.bucket) for e in live})
    report.partitions = len({e.partition for e in live}) if ts.partition_by else 0
    report.queries = _copy_log(source, target, QUERY_LOG_DIR, LOG_SCHEMA, LOG_OPTIONS)
    report.optimizer_records = _copy_log(source, target, HISTORY_DIR, HISTORY_SCHEMA,
                                         {"mergetree.query-log.enabled": "false"})
    alter_options(fresh, {KEY_MIGRATED_FROM: source})  # finished
    report.snapshots_left_behind = len(directory.store.snapshot_ids())
    report.consumers_left_behind = [c.id for c in consumers.consumers(directory)]
    report.seconds = time.perf_counter() - started
    return report
