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

from ...codec.file_index import bitmap_supported, bloom_supported
from ...codec.types import NoPaimonType, paimon_type, parse_type
from ...errors import (
    InvalidArgumentError,
    MergeTreeError,
    TableExistsError,
    UnsupportedPaimonFeatureError,
    UnsupportedTypeError,
)
from ...merge import RowKind
from ...storage import Store
from ..compaction.runner import compact_buckets
from ..directory import alter_options
from ..display import count_text
from ..objects import locate, location_exists, storage_for, table_path
from ..options import KEY_MIGRATED_FROM, OPTIONS
from ..paimon.create import create_directory, open_or_create
from ..paimon.store import open_directory
from ..paimon.tables import option_name
from ..workload.history import HISTORY_DIR, HISTORY_SCHEMA
from ..workload.logtables import read_rows
from ..workload.places import side_table
from ..workload.querylog import LOG_OPTIONS, LOG_SCHEMA, QUERY_LOG_DIR
from ..write import write_rows
from . import older_format
from .older_format import OLDER_DEFAULTS, OlderTable

# options of the older format a Paimon table names otherwise, or not at all
_BLOOM_FPP = "file-index.bloom-filter.fpp"
_BITMAP_MAX_VALUES = "file-index.bitmap.max-values"

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
    # options a Paimon table cannot hold (an index Paimon has not for a column's type), and why
    options_dropped: dict[str, str] = field(default_factory=dict)
    queries: int = 0
    optimizer_records: int = 0
    snapshots_left_behind: int = 0
    consumers_left_behind: list[str] = field(default_factory=list)
    restarted: bool = False
    seconds: float = 0.0

    def __repr__(self) -> str:
        return (f"MigrationReport({self.source!r} -> {self.target!r}, {count_text(self.rows, 'row')}, "
                f"{count_text(self.buckets, 'bucket')}, {self.seconds:.1f}s"
                + (f", {len(self.options_dropped)} options not carried" if self.options_dropped else "") + ")")

    def lines(self) -> list[str]:
        out = [f"migrated {self.source} (mergetree's older format) to the Apache Paimon table {self.target}"
               + (" (an earlier attempt cut short was started afresh)" if self.restarted else ""),
               f"  {self.rows:,} rows rewritten into {self.buckets} bucket(s) by Paimon's bucket function"
               + (f", {self.partitions} partition(s)" if self.partitions else "") + f" in {self.seconds:.1f}s",
               f"  options carried: {', '.join(f'{k}={v}' for k, v in sorted(self.options.items())) or 'none'}",
               *(f"  option not carried: {k} ({why})" for k, why in sorted(self.options_dropped.items())),
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


def _rows_of(old: OlderTable, progress: Progress | None, report: MigrationReport) -> Iterator[pa.Table]:
    """The old table's latest rows, a table at a time."""
    for rows in older_format.read_rows(old, progress):
        report.rows += rows.num_rows
        yield rows


def _log_rows(path: str, schema: pa.Schema, name: str) -> pa.Table:
    """A workload log's rows: a Paimon append table (what every release since the format
    changed keeps beside a table of either format), or, made before, one of the older format."""
    if location_exists(path):
        store = storage_for(path)
        if older_format.is_older_table(store):
            old = older_format.open_older(store)
            rows = pa.concat_tables([pa.table(t.columns, schema=old.schema) for t in older_format.read_rows(old)]
                                    or [old.schema.empty_table()])
            return pa.table({f.name: rows.column(f.name).cast(f.type) if f.name in rows.column_names
                             else pa.nulls(rows.num_rows, f.type) for f in schema}, schema=schema)
    return read_rows(path, schema, name)


def _carried_options(old: OlderTable, report: MigrationReport) -> dict[str, str]:
    """The old table's options a Paimon table takes: those at a default dropped (the older
    format wrote every default out), its Bloom filters' false-positive rate as Paimon's per
    column, what Paimon has no option for left behind and said (`report.options_dropped`)."""
    carried = {k: v for k, v in old.options.items()
               if OLDER_DEFAULTS.get(k) != v and (k not in OPTIONS or OPTIONS[k].default != v)}
    fpp = carried.pop(_BLOOM_FPP, None)
    if fpp is not None:
        for column in (c.strip() for c in carried.get("file-index.bloom-filter.columns", "").split(",")):
            if column:
                carried[f"file-index.bloom-filter.{column}.fpp"] = fpp
    if _BITMAP_MAX_VALUES in carried:
        report.options_dropped[_BITMAP_MAX_VALUES] = "Paimon's bitmap file index has no limit of distinct values"
        del carried[_BITMAP_MAX_VALUES]
    for key, capability in (("file-index.bloom-filter.columns", "bloom"), ("file-index.bitmap.columns", "bitmap")):
        if key not in carried:
            continue
        columns = [c.strip() for c in carried[key].split(",") if c.strip()]
        kept, why = [], []
        for column in columns:  # (an index on a type Paimon's file index lacks: the older format took it)
            reason = _index_refusal(old.schema, column, capability)
            if reason is None:
                kept.append(column)
            else:
                why.append(f"{column}: {reason}")
        if why:
            report.options_dropped[key] = "; ".join(why) + (f" (kept for {', '.join(kept)})" if kept else "")
        if kept:
            carried[key] = ",".join(kept)
        else:
            del carried[key]
    return carried


def _index_refusal(schema: pa.Schema, column: str, capability: str) -> str | None:
    """Why Paimon's file index cannot index `column` by `capability` (None: it can, or the
    column's type is refused by name at create anyway)."""
    if column not in schema.names:
        return None  # (create says which column the schema lacks)
    try:
        t = parse_type(paimon_type(schema.field(column).type))
    except (MergeTreeError, NoPaimonType):
        return None
    supported = bloom_supported(t) if capability == "bloom" else bitmap_supported(t)
    return None if supported else f"Paimon's {capability} file index takes no {t.text}"


def _copy_log(source: str, target: str, name: str, schema: pa.Schema, options: dict[str, str]) -> int:
    """A workload log's rows (the query log, the optimizer history) into the new table's."""
    rows = _log_rows(side_table(source, name), schema, name)
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
    if not older_format.is_older_table(old_store):
        open_directory(old_store)  # says what is there instead: a Paimon table, or no table at all
        raise InvalidArgumentError(f"{source} is an Apache Paimon table already: there is nothing to migrate")
    ts = older_format.open_older(old_store)
    report = MigrationReport(source, target)
    report.restarted = _started_afresh(new_store, source)
    carried = _carried_options(ts, report)
    default_key = tuple(c for c in ts.primary_key if c not in ts.partition_by)
    bucket_key = list(ts.bucket_key) if ts.bucket_key and tuple(ts.bucket_key) != default_key else None
    while True:  # (every check of the new table's options happens before anything is written)
        try:
            fresh = create_directory(new_store, ts.schema, list(ts.primary_key) or None,
                                     list(ts.partition_by) or None, ts.buckets, bucket_key, ts.merge_engine,
                                     {**carried, KEY_MIGRATED_FROM: _unfinished(source)})
            break
        except (UnsupportedPaimonFeatureError, UnsupportedTypeError) as exc:
            # an option the older format took that a Paimon table cannot hold is left behind, said
            refused = next((k for k in carried if f"'{k}'" in str(exc)), None)
            if refused is None:
                raise
            report.options_dropped[refused] = str(exc)
            del carried[refused]
    report.options = dict(carried)
    # one commit of the whole copy; until the last step marks the table finished, running the
    # migration again clears what a run cut short left and starts afresh
    written = write_rows(fresh, _rows_of(ts, progress, report), RowKind.INSERT, compact=False, one_commit=True)
    if written.snapshot is not None and ts.primary_key:
        compact_buckets(fresh, None, False)  # level 0 up, as after a write (where reads wait for it, too)
    latest = fresh.latest_snapshot()
    live = fresh.live_files(latest).values() if latest is not None else []
    report.buckets = len({(e.partition, e.bucket) for e in live})
    report.partitions = len({e.partition for e in live}) if ts.partition_by else 0
    report.queries = _copy_log(source, target, QUERY_LOG_DIR, LOG_SCHEMA, LOG_OPTIONS)
    report.optimizer_records = _copy_log(source, target, HISTORY_DIR, HISTORY_SCHEMA,
                                         {"mergetree.query-log.enabled": "false"})
    alter_options(fresh, {KEY_MIGRATED_FROM: source})  # finished
    report.snapshots_left_behind = len(ts.snapshot_ids)
    report.consumers_left_behind = list(ts.consumers)
    report.seconds = time.perf_counter() - started
    return report
