"""Rewrites of an Iceberg table's data files, one Iceberg commit per task that swaps exactly the
files it read for the files it wrote (a task: one or more partitions' files, up to `TASK_BYTES` of
input; a partition larger than that is a task of its own).  `minor`: a partition's small files bin-packed into
files of the target size.  `major`: a partition's files not yet laid out for the table's layout
(`mergetree.clustering.*`, `mergetree.sort-within.columns`) rewritten in that order, Parquet Bloom
filters written for the columns the table's properties name
(``write.parquet.bloom-filter-enabled.column.<c>``).  Files of an older partition spec are
rewritten into the current spec's partitions.  The new files carry Iceberg's field ids, so
every engine reads them by id; their names carry the layout they were written for, so the next
pass knows them.

Nothing is lost or brought back: the rows are read with their delete files applied; before each
commit the current snapshot is checked — every file read is still live and no delete file applies
to it that the rewrite did not apply — and the commit asserts that snapshot (pyiceberg's retries
are off for it), so a concurrent append, delete or overwrite by any engine either leaves the
rewrite valid (it is checked and committed again on the new snapshot) or makes it give up,
removing the files it wrote.  A process killed mid-rewrite leaves only unreferenced files.
The commit also removes every delete file that no data file left in the table is subject to
(the ones the rewrite applied, and any that applied to nothing already): a table whose
equality deletes were rewritten away is one pyiceberg and Polars read again (`swap.py`)."""
from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import CommitConflictError, InvalidArgumentError
from ..table.display import count_text, size_text
from ..table.indexes import bloom
from ..table.levers.optimize import layout_signature
from ..table.levers.qdtree import layout_order, packed_files
from ..table.options import TableOptions
from .deletes import delete_paths, plan_with_deletes, read_rows
from .swap import swap_files


class IcebergTable(Protocol):
    """What a rewrite needs of `table.IcebergTable` (which imports this module)."""

    path: str
    iceberg: Any

    @property
    def options(self) -> TableOptions: ...

    def refresh(self) -> Any: ...

    def data_files(self, snapshot: Any = None) -> list[Any]: ...

    def check_writable(self, what: str) -> None: ...


__all__ = ["COMMIT_ATTEMPTS", "RESPEC", "IcebergRewrite", "Job", "OlderSpec", "Writer", "background_pending", "batched",
           "current_partitions", "local_writer", "pending_groups", "remove_files", "rewrite", "write_files",
           "written_tier"]

COMMIT_ATTEMPTS = 8
TASK_BYTES = 512 * 1024 * 1024  # input bytes a task (one commit) gathers partitions up to
MARK = "mt"  # file names of rewritten files: mt-<tier>-<layout hash>-<uuid>.parquet
RESPEC = "respec"  # in place of the tier: rows an older partition spec's files moved into this one
ROW_GROUP_ROWS = 128 * 1024


@dataclass
class IcebergRewrite:
    """What one rewrite pass did."""

    table: str
    tier: str
    status: str = "nothing"     # committed | nothing | conflict
    partitions: int = 0         # partitions rewritten
    commits: int = 0            # Iceberg commits (one per task)
    files_in: int = 0
    files_out: int = 0
    rows: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    delete_files_removed: int = 0  # delete files no data file was subject to any more, removed
    snapshot_ids: list[int] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)   # partitions given up, and why
    seconds: float = 0.0

    def __repr__(self) -> str:
        deletes = self.delete_files_removed
        removed = f", {count_text(deletes, 'delete file')} removed" if deletes else ""
        given_up = removed + (f", {len(self.conflicts)} given up" if self.conflicts else "")
        return (f"IcebergRewrite({self.table!r}, {self.tier}: {self.status}, {count_text(self.partitions, 'partition')}"
                f", {self.files_in:,} files ({size_text(self.bytes_in)}) -> {self.files_out:,} "
                f"({size_text(self.bytes_out)}), {count_text(self.rows, 'row')}{given_up}, {self.seconds:.1f}s)")


def layout_mark(options: TableOptions) -> str:
    """Eight hex digits naming the layout a file was written for."""
    return hashlib.sha1(layout_signature(options).encode()).hexdigest()[:8]


def written_tier(path: str, options: TableOptions) -> str | None:
    """How a data file was written: "major" (laid out for the table's current layout), "minor"
    (bin-packed), or None (as its writer wrote it)."""
    return _tier_of(path, layout_mark(options))


def _is_respec(path: str) -> bool:
    return path.rsplit("/", 1)[-1].startswith(f"{MARK}-{RESPEC}-")


def _tier_of(path: str, mark: str) -> str | None:
    """"major" for a file written for the current layout, "minor" for one only bin-packed, None."""
    name = path.rsplit("/", 1)[-1]
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != MARK:
        return None
    if parts[1] == "major":
        return "major" if parts[2] == mark else None
    return "minor" if parts[1] == "minor" else None


@dataclass(frozen=True)
class OlderSpec:
    """The first element of the group key of files an older partition spec wrote (the rest: their
    partition under it), so no such group is taken for a partition of the current spec."""

    spec_id: int

    def __repr__(self) -> str:
        return f"spec {self.spec_id}"


def pending_groups(table: IcebergTable, tier: str) -> dict[tuple, list[Any]]:
    """Partition -> the scan tasks a `tier` pass rewrites there: `minor`, the small files
    (below 70% of the target size) not laid out for the current layout, where there are at least
    two; `major`, every file not laid out for it (a partition of one such file too, when the
    table has a layout or an in-file sort; without one, as `minor`).  Files of an older partition
    spec are grouped by their spec and partition (key ``(OlderSpec(id), *partition)``) and
    rewritten into the current spec's partitions: by `major`, every one of them; by `minor`, the
    small ones, at least two.  What they leave in a partition is named as laid out for nothing
    (RESPEC), so the next pass merges the shares a partition got (a share alone is left: it was
    written in the layout's order)."""
    if tier not in ("minor", "major"):
        raise InvalidArgumentError(f"tier is 'minor' or 'major', not {tier!r}")
    options = table.options
    mark = layout_mark(options)
    laid_out = options.clustering is not None or bool(options.sort_within)
    spec_id = table.iceberg.spec().spec_id
    small = options.compaction.small_file_ratio * options.target_file_size
    groups: dict[tuple, list[Any]] = defaultdict(list)
    older: dict[tuple, list[Any]] = defaultdict(list)
    for meta in table.data_files():
        task = meta.origin.task
        data = task.file
        if data.spec_id != spec_id:
            if tier == "major" or data.file_size_in_bytes < small:
                key = (OlderSpec(data.spec_id), *data.partition)
                older[key].append(task)
            continue
        written = _tier_of(data.file_path, mark)
        if tier == "major" and laid_out:
            if written != "major":
                groups[tuple(data.partition)].append(task)
        elif written is None and data.file_size_in_bytes < small:
            groups[tuple(data.partition)].append(task)
    minimum = 1 if tier == "major" and laid_out else 2
    # one share an older spec left, alone: written in the layout's order already, nothing to merge
    out = {p: tasks for p, tasks in groups.items() if len(tasks) >= minimum
           and not (len(tasks) == 1 and _is_respec(tasks[0].file.file_path))}
    out.update({p: tasks for p, tasks in older.items() if tier == "major" or len(tasks) >= 2})
    return out


def background_pending(table: IcebergTable) -> dict[str, dict[tuple, list[Any]]]:
    """What the background optimizer rewrites now, by partition, as for a Paimon table
    (`levers.optimize.pending`): "major" where the partition's data not yet laid out for the
    table's layout reaches `optimize.major-threshold`, else "minor" where at least
    `optimize.minor-min-files` small files wait (an older partition spec's files: by their
    partition under it, `pending_groups`)."""
    options = table.options
    out: dict[str, dict[tuple, list[Any]]] = {"major": {}, "minor": {}}
    laid_out = options.clustering is not None or bool(options.sort_within)
    waiting = pending_groups(table, "major") if laid_out else {}
    for partition, tasks in waiting.items():
        if sum(int(t.file.file_size_in_bytes) for t in tasks) >= options.major_threshold:
            out["major"][partition] = tasks
    for partition, tasks in pending_groups(table, "minor").items():
        if partition not in out["major"] and len(tasks) >= options.minor_min_files:
            out["minor"][partition] = tasks
    return out


def batched(groups: dict[tuple, list[Any]], limit: int | None = None) -> list[list[tuple[tuple, list[Any]]]]:
    """The partitions in tasks of up to `limit` (default `TASK_BYTES`) input bytes, in partition order."""
    limit = TASK_BYTES if limit is None else limit
    out: list[list[tuple[tuple, list[Any]]]] = []
    size = 0
    for partition, tasks in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        bytes_in = sum(int(t.file.file_size_in_bytes) for t in tasks)
        if not out or size + bytes_in > limit:
            out.append([])
            size = 0
        out[-1].append((partition, tasks))
        size += bytes_in
    return out


Job = list[tuple[tuple, list[Any]]]  # a task: (partition, its scan tasks), committed together
# writes the jobs' files in their order, one list of DataFiles per job (lazily: the local writer
# writes a job when its turn comes); removes what it wrote of a job it does not yield, and of the
# jobs left when it is closed early
Writer = Callable[[IcebergTable, list[Job], str, TableOptions], Generator[list[Any], None, None]]


def local_writer(table: IcebergTable, jobs: list[Job], tier: str,
                 options: TableOptions) -> Generator[list[Any], None, None]:
    """The jobs' files written in this process, a job when the rewrite asks for it."""
    for job in jobs:
        written: list[Any] = []
        try:
            for _, tasks in job:
                written += _write_group(table, tasks, tier, options)
        except BaseException:
            remove_files(table.iceberg.io, [f.file_path for f in written])
            raise
        yield written


def rewrite(table: IcebergTable, tier: str = "major", progress: Callable[[int, int], None] | None = None,
            partitions: Sequence[tuple] | None = None, writer: Writer | None = None) -> IcebergRewrite:
    """One `tier` pass over the table (see the module docstring), or over only `partitions`
    (the background optimizer's task); `progress(done, total)` per task.  `writer` writes the
    files (default: here, `local_writer`; `mergetree.spark.optimize`: on Spark's executors);
    the commits are made here, one per task, in the tasks' order."""
    started = time.perf_counter()
    table.refresh()
    table.check_writable("its rewrites")  # before anything is written
    out = IcebergRewrite(table.path, tier)
    groups = pending_groups(table, tier)
    if partitions is not None:
        wanted = {tuple(p) for p in partitions}
        groups = {p: tasks for p, tasks in groups.items() if p in wanted}
    jobs = batched(groups)
    options = table.options
    files = (writer or local_writer)(table, jobs, tier, options)
    try:
        for done, (job, written) in enumerate(zip(jobs, files)):
            read = [t for _, tasks in job for t in tasks]
            try:
                snapshot_id, deletes_removed = _commit(table, read, written, tier)
            except CommitConflictError as exc:
                remove_files(table.iceberg.io, [f.file_path for f in written])
                out.conflicts.append(f"{', '.join(repr(p) for p, _ in job)}: {exc}")
            except BaseException:
                remove_files(table.iceberg.io, [f.file_path for f in written])
                raise
            else:
                out.partitions += len(job)
                out.commits += 1
                out.files_in += len(read)
                out.files_out += len(written)
                out.rows += sum(int(f.record_count) for f in written)
                out.bytes_in += sum(int(t.file.file_size_in_bytes) for t in read)
                out.bytes_out += sum(int(f.file_size_in_bytes) for f in written)
                out.delete_files_removed += deletes_removed
                out.snapshot_ids.append(snapshot_id)
            if progress is not None:
                progress(done + 1, len(jobs))
    finally:
        files.close()  # a writer that wrote ahead removes the jobs never committed
    out.status = "committed" if out.partitions else "conflict" if out.conflicts else "nothing"
    out.seconds = time.perf_counter() - started
    return out


def _write_group(table: IcebergTable, tasks: Sequence[Any], tier: str, options: TableOptions) -> list[Any]:
    return write_files(table.iceberg.metadata, table.iceberg.io, tasks, tier, options)


def write_files(metadata: Any, io: Any, tasks: Sequence[Any], tier: str, options: TableOptions) -> list[Any]:
    """A group's rows (delete files applied), in each of their partitions under the table's
    current spec ordered as the tier says and written as Parquet files of about the target size;
    their DataFiles.  A group of the current spec is one partition, written beside the first file
    read; an older spec's group is re-partitioned by the current spec's transforms, each
    partition's files under the table's data path as pyiceberg names partition folders.  Needs
    only the table's metadata and FileIO, so a Spark executor runs it as well as the driver."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    iceberg_schema = metadata.schema()
    names = [f.name for f in iceberg_schema.fields]
    rows = read_rows(metadata, io, iceberg_schema, AlwaysTrue(), tasks)
    file_schema = schema_to_pyarrow(iceberg_schema)  # with Iceberg's field ids
    rows = pa.Table.from_arrays([rows.column(n).cast(file_schema.field(n).type) for n in names], schema=file_schema)
    per_row = max(1.0, sum(int(t.file.file_size_in_bytes) for t in tasks) / max(1, rows.num_rows))
    first = tasks[0].file
    named = tier
    if first.spec_id == metadata.default_spec_id:
        parts = [(first.partition, first.file_path.rsplit("/", 1)[0], rows)]
    else:
        parts = current_partitions(metadata, rows)
        # a partition's share of an older one: named as laid out for nothing, so that the next pass
        # merges the shares the older partitions left in each partition (and lays them out)
        named = RESPEC
    written: list[Any] = []
    try:
        for partition, directory, part in parts:
            written += _write_partition(metadata, io, part, partition, directory, per_row, tier, options, named)
    except BaseException:
        remove_files(io, [f.file_path for f in written])
        raise
    return written


def current_partitions(metadata: Any, rows: pa.Table) -> list[tuple[Any, str, pa.Table]]:
    """`rows` split by the table's current partition spec: (partition record, the folder its
    files go in, its rows in their order) per partition, as pyiceberg's appends partition rows
    (each field's transform over its source column; a null value a partition of its own)."""
    from pyiceberg.partitioning import partition_record_value
    from pyiceberg.table.locations import load_location_provider
    from pyiceberg.typedef import Record
    spec, schema = metadata.spec(), metadata.schema()
    data_path = load_location_provider(metadata.location, metadata.properties).data_path
    if spec.is_unpartitioned():
        return [(Record(), data_path, rows)]
    keys = {}
    for i, partition_field in enumerate(spec.fields):
        source = schema.find_field(partition_field.source_id)
        path = schema.find_column_name(partition_field.source_id)
        if path is None:
            raise InvalidArgumentError(f"the partition field {partition_field.name} has no source column")
        if path in rows.schema.names:
            column = rows.column(path)
        else:  # a nested source column
            column = rows.column(path.split(".")[0])
            for name in path.split(".")[1:]:
                column = pc.struct_field(column, name)
        keys[f"k{i}"] = partition_field.transform.pyarrow_transform(source.field_type)(column)
    grouped = pa.table({**keys, "row": pa.array(np.arange(rows.num_rows))}).group_by(
        list(keys), use_threads=False).aggregate([("row", "list")])
    out = []
    for group in grouped.to_pylist():
        # each field's value as pyiceberg's PartitionKey records it (which refuses a v1 spec's void
        # field beside a live one on the same column, as a changed transform leaves them)
        record = Record(*(partition_record_value(f, group[f"k{i}"], schema) for i, f in enumerate(spec.fields)))
        out.append((record, f"{data_path}/{spec.partition_to_path(record, schema)}",
                    rows.take(pa.array(group["row_list"]))))
    return sorted(out, key=lambda part: part[1])


def _write_partition(metadata: Any, io: Any, rows: pa.Table, partition: Any, directory: str, per_row: float,
                     tier: str, options: TableOptions, named: str) -> list[Any]:
    """One partition's rows ordered as the tier says, written as files of about the target size
    (`per_row`: the bytes a row took in the files read) in `directory`, their names marked
    `named` (the tier, or RESPEC); their DataFiles."""
    rows_per_file = max(1, int(options.target_file_size / per_row))
    file_of_row = None  # None: files of `rows_per_file` rows in row order
    if tier == "major" and rows.num_rows:
        clustering = options.clustering
        if clustering is not None and clustering.tree is not None:
            # the qd-tree's leaves packed into files as the advisor simulated them (`packed_files`)
            file_of_row = packed_files(clustering.tree.route(rows), rows_per_file)
            rows = rows.take(pa.array(np.argsort(file_of_row, kind="stable")))
            file_of_row = np.sort(file_of_row)
        elif clustering is not None:
            rows = rows.take(pa.array(layout_order(rows, list(clustering.columns), clustering.strategy)))
        elif options.sort_within:
            rows = rows.sort_by([(c, "ascending") for c in options.sort_within])
    if file_of_row is None:
        file_of_row = np.arange(rows.num_rows) // rows_per_file
    mark = layout_mark(options) if named == "major" else "0"
    blooms = {c: rows.schema.field(c).type for c in options.bloom_columns if c in rows.schema.names
              and bloom.bloom_supported(rows.schema.field(c).type)}
    starts = np.flatnonzero(np.r_[True, file_of_row[1:] != file_of_row[:-1]]) if rows.num_rows else np.empty(0, int)
    ends = np.r_[starts[1:], rows.num_rows]
    pieces = [rows.slice(int(a), int(b - a)) for a, b in zip(starts, ends)]
    paths = [f"{directory}/{MARK}-{named}-{mark}-{uuid.uuid4()}.parquet" for _ in pieces]
    describe = _data_file_maker(metadata, partition)

    def write_one(path: str, piece: pa.Table) -> Any:
        with io.new_output(path).create(overwrite=False) as sink:
            filters = bloom.write_options(blooms, min(piece.num_rows, ROW_GROUP_ROWS),
                                          options.bloom_fpp) if blooms else None
            writer = pq.ParquetWriter(sink, piece.schema, compression="zstd", bloom_filter_options=filters)
            try:
                writer.write_table(piece, row_group_size=ROW_GROUP_ROWS)
            finally:
                writer.close()
            size = sink.tell()
        return describe(path, writer.writer.metadata, size)

    # Parquet encoding (and its Bloom filters) runs without the GIL: the files in parallel
    workers = min(len(pieces), os.cpu_count() or 1)
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="mergetree-iceberg-write")
    try:
        futures = [pool.submit(write_one, path, piece) for path, piece in zip(paths, pieces)]
        wait(futures)
    except BaseException:  # interrupted while waiting: the files the threads finish go too
        pool.shutdown(wait=True, cancel_futures=True)
        remove_files(io, paths)
        raise
    pool.shutdown(wait=True)
    failed = [f.exception() for f in futures if f.exception() is not None]
    if failed:  # every file of the partition goes, a partly written one too
        remove_files(io, paths)
        raise failed[0]  # type: ignore[misc]
    return [f.result() for f in futures]


def _data_file_maker(metadata: Any, partition: Any) -> Callable[[str, Any, int], Any]:
    """(path, the Parquet footer its writer returned, its size) -> the Iceberg DataFile of a
    file of `partition` (the one partition of the current spec whose rows it holds), as
    pyiceberg's `parquet_file_to_data_file` makes it without reading the file back or checking
    its schema again (written from the table's own schema), and without inferring the partition
    from the columns' bounds, which a bucket transform defeats: the plan of statistics and the
    columns' field ids are worked out once for all the files."""
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    schema = metadata.schema()
    plan = compute_statistics_plan(schema, metadata.properties)
    ids = parquet_path_to_id_mapping(schema)

    def describe(path: str, footer: Any, size: int) -> Any:
        statistics = data_file_statistics_from_parquet_metadata(parquet_metadata=footer, stats_columns=plan,
                                                                parquet_column_mapping=ids)
        return DataFile.from_args(content=DataFileContent.DATA, file_path=path, file_format=FileFormat.PARQUET,
                                  partition=partition, file_size_in_bytes=size,
                                  sort_order_id=None, spec_id=metadata.default_spec_id, equality_ids=None,
                                  key_metadata=None, **statistics.to_serialized_dict())
    return describe


def _commit(table: IcebergTable, tasks: Sequence[Any], written: Sequence[Any], tier: str) -> tuple[int, int]:
    """Swap `tasks`' files for `written` in one commit on the current snapshot, checked first,
    removing with them the delete files no data file left is subject to; the new snapshot's id
    and how many delete files it removed.  CommitConflictError when a concurrent commit made
    the rewrite wrong."""
    from pyiceberg.exceptions import CommitFailedException
    from pyiceberg.table import Table as PyicebergTable
    read = {t.file.file_path: delete_paths(t) for t in tasks}
    for _ in range(COMMIT_ATTEMPTS):
        current = table.refresh().iceberg
        planned, delete_files = plan_with_deletes(current.scan())
        live = {t.file.file_path: t for t in planned}
        for path, deletes in read.items():
            if path not in live:
                raise CommitConflictError(f"{path} was removed by a concurrent commit")
            if delete_paths(live[path]) - deletes:
                raise CommitConflictError(f"{path} has rows deleted by a concurrent commit")
        still_applied = frozenset().union(*(delete_paths(t) for p, t in live.items() if p not in read))
        unused = [d for d in delete_files if d.file_path not in still_applied]
        # the commit asserts this snapshot: with pyiceberg's own retries off, a concurrent
        # commit fails it, and the loop checks again on the new snapshot
        metadata = current.metadata.model_copy(
            update={"properties": {**current.metadata.properties, "commit.retry.num-retries": "0"}})
        pinned = PyicebergTable(current.name(), metadata, current.metadata_location, current.io, current.catalog)
        summary = {"mergetree.rewrite": tier, "mergetree.files-read": str(len(tasks)),
                   "mergetree.files-written": str(len(written)), "mergetree.delete-files-removed": str(len(unused))}
        try:
            with pinned.transaction() as tx:
                swap_files(tx, current.io, [live[path].file for path in read] + unused, written, summary)
        except CommitFailedException:
            time.sleep(0.05 + np.random.default_rng().random() * 0.1)
            continue
        snapshot = table.refresh().iceberg.current_snapshot()
        assert snapshot is not None
        return int(snapshot.snapshot_id), len(unused)
    raise CommitConflictError(f"lost {COMMIT_ATTEMPTS} commit races in a row")


def remove_files(io: Any, paths: Sequence[str]) -> None:
    """Delete files a rewrite wrote and will not commit (any left: unreferenced, for orphan cleaning)."""
    for path in paths:
        try:
            io.delete(path)
        except (OSError, ValueError):
            pass  # an unreferenced file: orphan cleaning removes what is left
