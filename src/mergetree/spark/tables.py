"""Where a data source's table lives and how its writers open or create it: shared by the
batch data source (`source`) and the streaming reader and writer (`streaming`)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from ..errors import InvalidArgumentError, TableExistsError, TableNotFoundError
from ..merge import RowKind
from ..storage import OPTION_KEYS
from ..table import Table
from ..table.directory import TableDirectory
from ..table.snapshots import FileEntry
from ..table.write import conformed, spill

__all__ = ["CREATE_OPTIONS", "TASK_SEQUENCE_SPAN", "FilesMessage", "names_option", "open_or_create", "open_table",
           "split_storage_options", "write_task"]


def split_storage_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(storage options, the rest) of a data source's (or `write`'s) options: a storage option
    is a key of `mergetree.storage.OPTION_KEYS`, in any case (Spark's option keys ignore case)."""
    storage: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in options.items():
        (storage if str(key).lower() in OPTION_KEYS else rest)[key] = value
    return storage, rest


def open_table(path: str, storage_options: Mapping[str, Any] | None) -> Table:
    """The table at `path`, opened with `storage_options` where there are any; without them a
    URI's store is the one this process already opened it with, else the environment's.  (Not
    checked at open: every read or commit reads what it needs, and a task opens it too.)"""
    return Table.open(path, check=False, storage_options=dict(storage_options) if storage_options else None)


# Each task numbers its rows from base + task * TASK_SEQUENCE_SPAN, so the sequence numbers of
# tasks writing the same bucket never collide.
TASK_SEQUENCE_SPAN = 1 << 32
CREATE_OPTIONS = {"path", "primarykey", "partitionby", "buckets", "bucketkey", "mergeengine"}


def names_option(text: str | None) -> list[str] | None:
    """A comma-separated option ("a, b") as names; None when not given."""
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


def open_or_create(path: str, storage_options: Mapping[str, Any] | None, arrow_schema: pa.Schema,
                   options: Mapping[str, Any]) -> Table:
    """The table at `path`, created from `arrow_schema` and the data source's `options`
    (`primaryKey`, `partitionBy`, `buckets`, `bucketKey`, `mergeEngine` and table options;
    lower-case keys) where there is none: an Apache Paimon table."""
    try:
        return open_table(path, storage_options)
    except TableNotFoundError:
        pass
    if "tableformat" in options:  # the older releases' choice of format: there is one now
        raise InvalidArgumentError("the option 'tableFormat' is gone: every table mergetree makes is an Apache "
                                   "Paimon table (a table of the older format is made one by `mergetree migrate`)")
    table_options = {k: v for k, v in split_storage_options(options)[1].items() if k not in CREATE_OPTIONS}
    try:
        return Table.create(
            path, arrow_schema, primary_key=names_option(options.get("primarykey")),
            partition_by=names_option(options.get("partitionby")), buckets=int(options.get("buckets", 1)),
            bucket_key=names_option(options.get("bucketkey")), merge_engine=options.get("mergeengine", "deduplicate"),
            options=table_options,
            storage_options=dict(storage_options) if storage_options else None)
    except TableExistsError as exists:  # another writer created it meanwhile (its schema is the table's),
        try:                            # or the location holds other files
            return open_table(path, storage_options)
        except TableNotFoundError:
            raise exists from None


@dataclass
class FilesMessage(WriterCommitMessage):
    """A task's written files, as manifest entries."""

    entries: list


def write_task(directory: TableDirectory, iterator: Iterator[pa.RecordBatch], next_seq: Mapping[tuple, int],
               row_kind_column: str | None = None, overwrite: bool = False) -> FilesMessage:
    """One Spark task's rows streamed through the table's write buffer (memory bounded by
    `write-buffer-size`, not by the task's row count) into level-0 files, numbered from the
    job's base plus this task's span; rows with a row-kind column are applied as their kinds
    say.  An append to a table with `changelog-producer = input` also writes its rows as
    written into changelog files, as `Table.write` does.  On failure the task's files are
    removed."""
    from pyspark import TaskContext
    task = TaskContext.get().partitionId()
    numbered = {key: first + task * TASK_SEQUENCE_SPAN for key, first in next_seq.items()}
    spilled: list[FileEntry] = []
    pieces = conformed(directory, iterator, complete=True, row_kind_column=row_kind_column)
    try:
        # (an append table's rows are its changelog: none written beside them, as in Paimon)
        as_written = not overwrite and directory.options.changelog_producer == "input" \
            and directory.schema.has_primary_key
        for files in spill(directory, pieces, RowKind.INSERT, numbered, task * TASK_SEQUENCE_SPAN, as_written):
            spilled += files
    except BaseException:
        directory.discard(spilled)
        raise
    return FilesMessage([e.to_json("ADD") for e in spilled])
