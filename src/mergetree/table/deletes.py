"""`Table.delete(filter=...)`: the rows a condition selects deleted, as Paimon's engines delete
them (Spark's ``DeleteFromPaimonTableCommand``, Flink's row-level delete):

- a condition on partition columns only drops whole partitions, whatever the table: one
  OVERWRITE snapshot deleting their files (Paimon's metadata-only delete);
- a primary-key table writes each selected row back as a ``-D`` (``validatePKUpsertDeletable``:
  a deduplicate table; partial-update and aggregate tables only under their
  ``*.remove-record-on-delete`` options, first-row never);
- an append table rewrites the files holding selected rows without them (copy on write), in
  one OVERWRITE snapshot — the rows a row's condition is null for stay, as SQL's ``DELETE``
  keeps them.
"""
from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CommitConflictError, UnsupportedPaimonFeatureError
from ..merge import ROW_KIND_COLUMN, RowKind
from . import filters as flt
from .commit import Change, commit_with_rebase
from .compaction.transaction import new_files
from .directory import TableDirectory
from .files import read_data_file, rows_of, write_sorted_run
from .read import plan_read, prepare_read, scan_table
from .snapshots import FileEntry, Snapshot
from .write import commit_write, write_rows

__all__ = ["delete_where"]


def _refusal(directory: TableDirectory) -> str | None:
    """Why a primary-key table cannot delete rows by a condition, in Java's words (None: it can)."""
    ts = directory.schema
    engine = ts.merge_engine
    if engine == "deduplicate":
        return None
    if engine in ("partial-update", "aggregate"):
        option = "partial-update.remove-record-on-delete" if engine == "partial-update" else \
            "aggregation.remove-record-on-delete"
        return (f"merge engine {engine} does not delete rows by default (Paimon's too: it asks for "
                f"{option!r} = 'true', an option mergetree does not honour yet); delete whole partitions by a "
                f"condition on the partition columns, or write compensating rows")
    return f"merge engine {engine} cannot delete rows (Paimon's cannot either); delete whole partitions instead"


def delete_where(directory: TableDirectory, f: flt.Filter) -> Snapshot | None:
    """Delete the rows `f` (normalized) selects; the snapshot committed (None: nothing matched)."""
    ts = directory.schema
    base = directory.latest_snapshot()
    if base is None:
        return None
    columns = flt.columns_of(f)
    if ts.partition_by and columns is not None and columns and columns <= set(ts.partition_by):
        return _drop_partitions(directory, f, base)
    if ts.has_primary_key:
        if directory.options.ignore_delete:
            raise UnsupportedPaimonFeatureError("the table ignores deletes (ignore-delete): a -D row changes nothing; "
                                                "delete whole partitions by a condition on the partition columns")
        why = _refusal(directory)
        if why is not None:
            raise UnsupportedPaimonFeatureError(why)
        return _retract(directory, f, base)
    return _rewrite_without(directory, f, base)


def _matching_partitions(directory: TableDirectory, f: flt.Filter, base: Snapshot) -> set[tuple]:
    keys = list(directory.schema.partition_by)
    partitions = sorted({e.partition for e in directory.live_files(base).values()}, key=str)
    if not partitions:
        return set()
    fields = [directory.schema.schema.field(k) for k in keys]
    values = pa.table({k: pa.array([p[i] for p in partitions], type=fields[i].type) for i, k in enumerate(keys)})
    mask = values.filter(flt.to_expression(f, values.schema)).to_pylist()
    chosen = {tuple(row[k] for k in keys) for row in mask}
    return {p for p in partitions if tuple(p) in chosen}


def _drop_partitions(directory: TableDirectory, f: flt.Filter, base: Snapshot) -> Snapshot | None:
    matched = _matching_partitions(directory, f, base)
    if not matched:
        return None
    directory.refuse_commit("OVERWRITE")
    return commit_write(directory, [], base, replaced=lambda partition: tuple(partition) in matched)


def _retract(directory: TableDirectory, f: flt.Filter, base: Snapshot) -> Snapshot | None:
    """The selected rows, read whole at `base`, written back as ``-D`` rows (their values ride
    along, as Java's delete writes them: a changelog shows what was deleted)."""
    prepared = prepare_read(directory, None, f, base.id, None, None)

    def retractions() -> Iterator[pa.Table]:
        for batch in scan_table(directory, prepared):
            if batch.num_rows:
                table = pa.Table.from_batches([batch])
                yield table.append_column(ROW_KIND_COLUMN, pa.array(["-D"] * table.num_rows, pa.string()))

    return write_rows(directory, retractions(), RowKind.INSERT, ROW_KIND_COLUMN, one_commit=True).snapshot


def _rewrite_without(directory: TableDirectory, f: flt.Filter, base: Snapshot) -> Snapshot | None:
    """Copy on write: every planned file that holds a selected row is rewritten without them
    (its other rows in their order, at its level), all in one OVERWRITE snapshot that fails
    rather than lose a concurrent commit's change to one of those files."""
    ts = directory.schema
    plan = plan_read(directory, f, base.id)
    expression = flt.to_expression(f, ts.schema)
    deletes: list[FileEntry] = []
    with new_files(directory) as adds:
        for bucket in plan.buckets:
            for meta in bucket.files:
                rows = rows_of(read_data_file(directory.storage, meta), ts.file_schema)  # its deletion vector applied
                mask = pc.fill_null(_evaluate(rows, expression), False) if rows.num_rows else None
                if mask is None or not pc.any(mask).as_py():
                    continue
                kept = rows.filter(pc.invert(mask))
                deletes.append(FileEntry(bucket.partition, bucket.bucket, meta))
                if kept.num_rows:
                    opener = directory.opener(bucket.partition, bucket.bucket, meta.level,
                                              directory.bucket_directory(bucket.partition, bucket.bucket, [meta]))
                    adds += [FileEntry(bucket.partition, bucket.bucket, m) for m in
                             write_sorted_run(opener, kept, ts, directory.options, directory.remove_written)]
        if not deletes:
            return None
        gone = {e.file.file_name for e in deletes}

        def change_for(latest: Snapshot | None) -> Change:
            live = directory.live_files(latest)
            moved = [name for name in gone if name not in live]
            if moved:
                raise CommitConflictError(f"another commit replaced file {moved[0]} while rows were deleted from it; "
                                          f"nothing was deleted, try again")
            return Change(adds, deletes)

        return commit_with_rebase(directory, base, change_for, "OVERWRITE")


def _evaluate(rows: pa.Table, expression: pc.Expression) -> pa.ChunkedArray:
    """The condition's value per row (true, false or null)."""
    import pyarrow.dataset as ds  # imported when first used: it pulls in pandas (a CLI start's 0.3 s)
    return ds.dataset(rows).to_table(columns={"m": expression}).column("m")
