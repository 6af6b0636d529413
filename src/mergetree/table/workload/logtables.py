"""The append tables a table keeps beside its data: the query log (`<table>/queries/`) and the
optimizer history (`<table>/optimizer/`).  They are data the table can lose without losing
itself, so reading one never fails on damage: a damaged schema, snapshot, manifest or data
file is left out with a `DamagedLogWarning` (one line naming the file, what is wrong and what
was left out), and `mergetree repair` (`housekeeping.repair_log`) drops it for good.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Iterator

import pyarrow as pa

from ...errors import CorruptTableError, MergeTreeError
from .. import filters as flt
from ..directory import TableDirectory
from ..files import read_data_file
from ..objects import location_exists
from ..paimon.store import open_directory
from ..read import BucketPlan, PreparedRead, prepare_read, read_bucket
from ..snapshots import FileEntry, Snapshot

__all__ = ["DamagedLogWarning", "damaged_data_files", "describe", "intact_snapshot", "read_rows"]


class DamagedLogWarning(UserWarning):
    """A part of a query log or optimizer history could not be read and was left out."""


def describe(exc: BaseException, root: str) -> str:
    """A damage error as one short line: whitespace folded, the table's path and the recovery
    advice meant for tables that hold data left out ("data file bucket-0/... is missing")."""
    text = " ".join(str(exc).split()).split("; ")[0]
    return text.replace(f" of table {root}", "").replace(root.rstrip("/\\") + ("/" if "://" in root else os.sep), "")


def intact_snapshot(directory: TableDirectory) -> tuple[Snapshot | None, list[str]]:
    """The newest snapshot whose metadata reads (None: none does), and a line for each newer
    one that is damaged or lost."""
    store = directory.store
    passed = []
    ids = store.snapshot_ids()
    hint = store.latest_hint()
    if hint is not None:
        passed += [f"snapshot {i} is missing (its LATEST says it was committed)"
                   for i in range(max(ids, default=0) + 1, hint + 1)]
    for snapshot_id in reversed(ids):
        try:
            snapshot = store.snapshot(snapshot_id)
            store.live_files(snapshot)
            return snapshot, passed
        except CorruptTableError as exc:
            passed.append(describe(exc, directory.path))
    return None, passed


def damaged_data_files(directory: TableDirectory, snapshot: Snapshot) -> list[tuple[FileEntry, str]]:
    """The snapshot's data files that do not read back whole (every row the manifest counts),
    each with what is wrong."""
    out = []
    for entry in directory.store.live_files(snapshot).values():
        try:
            for _ in read_data_file(directory.storage, entry.file):
                pass
        except CorruptTableError as exc:
            out.append((entry, describe(exc, directory.path)))
    return out


def _warn(what: str, path: str, detail: str, consequence: str) -> None:
    table = os.path.dirname(path)
    warnings.warn(f"the {what} at {path}: {detail}; {consequence} (`mergetree repair {table}` drops what is "
                  f"damaged)", DamagedLogWarning, stacklevel=2)


def _one_file(bucket: BucketPlan, meta_name: str) -> BucketPlan:
    files = [m for m in bucket.files if m.file_name == meta_name]
    groups = {n: g for n, g in bucket.row_groups.items() if n == meta_name}
    return BucketPlan(bucket.partition, bucket.bucket, [[files]], groups)


def _batches(directory: TableDirectory, prepared: PreparedRead, what: str) -> Iterator[pa.RecordBatch]:
    for bucket in prepared.plan.buckets:
        for meta in bucket.files:
            try:  # a file at a time, whole, so a damaged one leaves out only its own rows
                batches = list(read_bucket(directory, _one_file(bucket, meta.file_name), prepared.columns,
                                           prepared.expression, prepared.file_filter))
            except CorruptTableError as exc:
                _warn(what, directory.path, describe(exc, directory.path), f"its {meta.row_count:,} rows are left out")
                continue
            yield from batches


def read_rows(path: str, schema: pa.Schema, what: str, columns: list[str] | None = None,
              filter: flt.Filter = None) -> pa.Table:
    """The rows of the log table at `path` (none when it does not exist), read from its
    newest intact snapshot, every readable data file of it; what is damaged is left out with a
    `DamagedLogWarning`.  `schema` is the log's own (for an empty answer), `what` names the log
    in the warnings ("query log")."""
    names = list(columns) if columns is not None else schema.names
    empty = pa.schema([schema.field(c) for c in names]).empty_table()
    if not location_exists(path):
        return empty
    try:
        directory = open_directory(path)
    except MergeTreeError as exc:
        _warn(what, path, describe(exc, path), f"the whole {what} is left out")
        return empty
    snapshot, passed = intact_snapshot(directory)
    for line in passed:
        _warn(what, path, line, f"read as of snapshot {snapshot.id}, later records left out" if snapshot
              else f"the whole {what} is left out")
    if snapshot is None:
        return empty
    prepared = prepare_read(directory, names, filter, snapshot.id)
    return pa.Table.from_batches(list(_batches(directory, prepared, what)), schema=prepared.output_schema)
