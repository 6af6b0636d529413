"""Writes into Apache Paimon tables — primary-key tables with fixed buckets, and append tables —
as Java's batch writers make them, so that every Paimon reader (Java, pypaimon, pypaimon-rust,
...) reads them: the engine's write path (`table.write.write_rows`, the one every table
has) over the table's store (`table.paimon.store`), then the engine's compaction of the
buckets written.

1. The input (any Arrow data `Table.write` takes; a row-kind column ``_row_kind``, the one
   named, or the table's ``rowkind.field``: +I, -U, +U, -D or Debezium's c/r/u/d) is conformed
   to the table's latest schema and streamed through ``write-buffer-size``.  Retractions the
   table's merge engine cannot take are refused before anything is written, as Paimon's merge
   functions refuse them; under ``ignore-delete`` they are dropped; an append table takes
   inserts only.
2. Each row's partition, and its bucket by the table's bucket function over its bucket key
   (`codec.buckets`: exactly where Java places it; bucket 0 in a bucket-unaware append table).
3. Per (partition, bucket): sequence numbers continue from the largest any writer committed
   there, in input order.  A primary-key table's rows are sorted by key and a key's versions
   in this write folded with the table's engine (a delete stays a ``-D`` row), then written as
   level-0 files as Java's writers make them (`table.paimon.writer`: ``data-<uuid>-0.<format>``
   in the table's format, ``_KEY_`` columns unless thin mode, file indexes, external paths),
   rolled at target-file-size, with statistics under the table's stats modes; with
   ``changelog-producer`` input, every version also goes into ``changelog-`` files.
4. One ``APPEND`` snapshot (``OVERWRITE`` with `overwrite`), published by the store's
   conditional create; after a lost race the write is renumbered after the winner (its level-0
   files rewritten with the new numbers) and committed again.
5. Unless ``write-only`` (or an append table), the touched buckets are compacted by Paimon's
   rules into a ``COMPACT`` snapshot — in deletion-vector and first-row tables the lookup
   compaction that makes level-0 rows visible to batch reads (not under ``lookup-compact``
   gentle).  The result says whether the rows are visible.

Refused by name, before anything is written: dynamic (-1), postpone (-2) and cross-partition
bucket modes of primary-key tables, and tables whose commits carry duties mergetree does not
perform (Iceberg-compatible metadata, Hive-synced partitions, automatic tags, partition expiry,
lock-guarded commits, the lookup and full-compaction changelog producers, snapshot-ordered
sequence numbers): `table.paimon.tables.write_refusal`.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import CommittedWarning, CompactionConflictError, InvalidArgumentError, MergeTreeError
from ..merge import RowKind
from ..table.compaction.runner import compact_buckets
from ..table.paimon.metadata import PaimonSchema, PaimonTable
from ..table.paimon.options import is_true
from ..table.paimon.store import paimon_directory
from ..table.paimon.tables import check_writable
from ..table.snapshots import Snapshot, canonical_partition
from ..table.write import write_rows

__all__ = ["PaimonWrite", "compact_after_write", "delete", "write", "written_snapshot"]


@dataclass(frozen=True)
class PaimonWrite:
    """What a write committed: the APPEND snapshot (None: no rows), the COMPACT snapshot after
    it (None: none was needed, or the table is write-only), the rows written (a key's versions
    within the write folded into one), and whether a batch read of the table now shows them
    (False where level-0 files are invisible until compacted: deletion-vector tables without
    merge-on-read, first-row tables, when the write-only option left them at level 0)."""

    snapshot: int | None
    compacted: int | None
    rows: int
    visible: bool


def _visible(t: PaimonTable, schema: PaimonSchema, touched: set[tuple]) -> bool:
    if not schema.checked_options.skips_level0:
        return True
    try:
        return not any(f.level == 0 and (canonical_partition(f.partition), f.bucket) in touched
                       for f in t.live_files(t.resolve(None)))
    except (MergeTreeError, OSError):  # committed: a failing look afterwards is no failed write
        return False


def _write(warehouse: Any, table: Any, data: Any, row_kind_column: str | None, delete_kind: bool,
           storage_options: Mapping[str, object] | None, overwrite: Any = False) -> PaimonWrite:
    return _written(warehouse, table, data, row_kind_column, delete_kind, storage_options, overwrite)[0]


def written_snapshot(warehouse: Any, table: Any, data: Any, row_kind_column: str | None = None,
                     delete_kind: bool = False, storage_options: Mapping[str, object] | None = None,
                     overwrite: Any = False) -> Snapshot | None:
    """`write` (or with `delete_kind`, `delete`), returning the APPEND (or OVERWRITE) snapshot
    the write committed, as `Table.write` returns it (None: no rows) — never read again after
    the commit, so no failure then can look like a failed write."""
    return _written(warehouse, table, data, row_kind_column, delete_kind, storage_options, overwrite)[1]


def _written(warehouse: Any, table: Any, data: Any, row_kind_column: str | None, delete_kind: bool,
             storage_options: Mapping[str, object] | None, overwrite: Any) -> tuple[PaimonWrite, Snapshot | None]:
    if row_kind_column is not None and not isinstance(row_kind_column, str):
        raise InvalidArgumentError(f"row_kind_column must be a column name, not {row_kind_column!r}")
    t = PaimonTable.open(warehouse, table, storage_options)
    schema = t.schema()
    check_writable(schema, t.name)
    t.storage.require_conditional_create()  # never a commit that could replace another's
    written = write_rows(paimon_directory(t, schema), data, RowKind.DELETE if delete_kind else RowKind.INSERT,
                         row_kind_column, overwrite, compact=False)
    sid = None if written.snapshot is None else written.snapshot.id
    if sid is None:
        return PaimonWrite(None, None, 0, True), None
    touched = set(written.touched)
    compacted = compact_after_write(t, schema, touched, sid)
    return PaimonWrite(sid, compacted, written.rows, _visible(t, schema, touched)), written.snapshot


def compact_after_write(t: PaimonTable, schema: PaimonSchema, touched: set[tuple], sid: int) -> int | None:
    """After a write committed snapshot `sid`: compact the buckets it touched (unless the table
    is write-only or an append table) — the COMPACT snapshot's id, or None.  A failure is a
    `CommittedWarning`, never an error: the write is committed, and a retry would repeat it."""
    if is_true(schema.options.get("write-only", "false")) or schema.checked_options.append:
        return None
    # where reads skip level 0 (first-row, deletion vectors), it goes up now, as Java's lookup
    # writers compact it — unless `lookup-compact` is gentle (`TableOptions.lookup_compact_gentle`)
    try:
        done = compact_buckets(paimon_directory(t), touched, False)  # stalling the write, as Java's writers do
        return None if done is None else done.id
    except CompactionConflictError:
        return None  # another writer compacted these buckets first: the write is committed
    except Exception as exc:  # committed: no failure now may read as a failed write (a retry would repeat it)
        warnings.warn(CommittedWarning(
            f"the write committed snapshot {sid} of Paimon table {t.name}, then compacting its buckets failed "
            f"({type(exc).__name__}: {exc}); the rows are in the table, compact it later"), stacklevel=4)
        return None


def write(warehouse: Any, table: Any, data: Any, row_kind_column: str | None = None,
          storage_options: Mapping[str, object] | None = None, overwrite: Any = False) -> PaimonWrite:
    """Write rows into Paimon table `table` ("database.table") of `warehouse` as Java's batch
    writers do (module docstring): upserts, or a change stream with a row-kind column
    (``_row_kind``, or `row_kind_column`, e.g. Debezium's ``op``).  `overwrite`: True replaces
    the partitions the data holds (``dynamic-partition-overwrite``, the default; the whole
    table when it is unpartitioned or that option is false), a partition ({"dt": "2024-05-01"})
    replaces that partition, in one OVERWRITE snapshot.  Returns a `PaimonWrite`."""
    return _write(warehouse, table, data, row_kind_column, False, storage_options, overwrite)


def delete(warehouse: Any, table: Any, keys: Any, storage_options: Mapping[str, object] | None = None) -> PaimonWrite:
    """Delete rows by primary key (`keys` holds at least the primary-key columns): ``-D`` rows."""
    return _write(warehouse, table, keys, None, True, storage_options)

