"""Changelog producers (`changelog-producer`): the changelog files a write publishes with its
commit, so change readers take a commit's change as written instead of computing it.

`input`: the rows of the files the write adds, with their kinds, as written to the data files
(a write buffer keeps one version of a key per buffer: the last one, or for partial-update
and aggregate the buffer's fold of them).  `lookup`: the exact change the write makes to the
snapshot it commits on — each touched key's previous row looked up there (`change_of_files`,
the same lookup `Table.changes` computes with) — +I, -U old / +U new, -D old.  A lookup
depends on that snapshot: after a lost commit race it is done again on the newer one.

Changelog files are Parquet in the data-file layout (`_KEY_` columns, sequence, kind, the
table's columns), rows sorted by key, named as the table's format names them (mergetree's
`bucket-N/changelog-<hex>.parquet`, Paimon's `bucket-N/changelog-<uuid>-0.parquet`)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ...merge import ROW_KIND_COLUMN, kinds_of
from ..directory import TableDirectory
from ..files import DataFileMeta, DataFileWriter
from ..snapshots import FileEntry, Snapshot
from .compute import change_of_files

__all__ = ["changelog_for", "compaction_changelog", "write_changelog"]


def changelog_for(directory: TableDirectory, base: Snapshot | None, adds: Sequence[FileEntry]) -> list[FileEntry]:
    """Write the lookup changelog files of a write adding `adds` (renumbered for `base`) on
    top of `base`: the exact change per touched key.  The caller owns them (commits or
    discards them).  A failure removes them."""
    return _changelogs(directory, base, adds, above_level0=False)


def compaction_changelog(directory: TableDirectory, base: Snapshot, level0: Sequence[FileEntry]) -> list[FileEntry]:
    """A Paimon compaction's lookup changelog (``changelog-producer`` lookup: Java's
    ``LookupChangelogMergeFunctionWrapper``): per bucket, what the level-0 files it compacts
    (`level0`, in `base`) change of the rows the levels above hold — +I, -U old / +U new, -D
    old; a key whose row does not change is left out (as ``changelog-producer.row-deduplicate``
    leaves it).  The caller owns the files written (commits or discards them)."""
    return _changelogs(directory, base, level0, above_level0=True)


def _changelogs(directory: TableDirectory, base: Snapshot | None, files: Sequence[FileEntry],
                above_level0: bool) -> list[FileEntry]:
    """Per bucket, the change `files` make (`change_of_files`) written as a changelog file."""
    by_bucket: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    for e in files:
        by_bucket[(e.partition, e.bucket)].append(e.file)
    written: list[FileEntry] = []
    try:
        for (partition, bucket), metas in sorted(by_bucket.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            change = change_of_files(directory, base, partition, bucket, metas, above_level0=above_level0)
            meta = _write_change(directory, partition, bucket, change)
            if meta is not None:
                written.append(FileEntry(partition, bucket, meta))
    except BaseException:
        directory.discard(written)
        raise
    return written


def _writer(directory: TableDirectory, partition: tuple, bucket: int) -> DataFileWriter:
    return directory.open_file(partition, bucket, 0, changelog=True)


def _close(writer: DataFileWriter) -> DataFileMeta | None:
    if not writer.rows:
        writer.abort()
        return None
    return writer.close()


def _write_change(directory: TableDirectory, partition: tuple, bucket: int, rows: pa.Table) -> DataFileMeta | None:
    """Change rows (table columns and `_row_kind`, in key order) as a changelog file."""
    if rows.num_rows == 0:
        return None
    ts = directory.schema
    kinds = kinds_of(rows.column(ROW_KIND_COLUMN))
    table = rows.drop_columns([ROW_KIND_COLUMN])
    columns = [table.column(k) for k in ts.primary_key]
    columns += [pa.array(np.arange(table.num_rows, dtype=np.int64)), pa.array(kinds, pa.int8())]
    columns += table.columns
    physical = pa.Table.from_arrays(columns, schema=ts.file_schema)
    writer = _writer(directory, partition, bucket)
    try:
        for batch in physical.to_batches():
            writer.write(batch)
        return _close(writer)
    except BaseException:
        writer.abort()
        raise


def write_changelog(directory: TableDirectory, partition: tuple, bucket: int, rows: pa.Table) -> list[DataFileMeta]:
    """Rows as written (the data-file layout, in key order, write order kept among a key's
    rows; an append table's as they came) as a changelog file (input producer)."""
    if rows.num_rows == 0:
        return []
    writer = _writer(directory, partition, bucket)
    try:
        for batch in rows.cast(directory.schema.file_schema).to_batches():
            writer.write(batch)
        meta = _close(writer)
    except BaseException:
        writer.abort()
        raise
    return [meta] if meta is not None else []
