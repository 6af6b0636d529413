"""Rewrites that change how data is laid out, not what it is: `optimize` (cluster an append
table's files by a linear, Z-order or Hilbert order, optionally sorting rows inside each file)
and `build_indexes` (give existing files the indexes and pre-aggregates the options declare).
Both commit once, like a compaction: a concurrent commit that replaced an input file aborts
the rewrite cleanly (`CompactionConflictError`, new files removed)."""
from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError, UnsupportedPaimonFeatureError
from ...merge.arrow_input import sort_indices
from .. import filters as flt
from ..compaction.runner import compact_buckets
from ..compaction.transaction import Progress, new_files, rewrite_transaction
from ..directory import TableDirectory, alter_options
from ..dvfiles import DeletionVectorRef
from ..files import DataFileMeta, read_run, rows_of, write_data_file, write_sorted_run
from ..options import (
    CLUSTERING_STRATEGIES,
    KEY_CLUSTERING_COLUMNS,
    KEY_CLUSTERING_STRATEGY,
    KEY_SORT_WITHIN,
    PK_CLUSTERING_MESSAGE,
    TableOptions,
)
from ..read import plan_read
from ..schema import column_names
from ..snapshots import FileEntry, Snapshot
from .curves import MAX_COLUMNS
from .preaggregates import model_signature
from .qdtree import layout_order, packed_files

__all__ = ["build_indexes", "layout_refusal", "layout_signature", "marked", "missing_indexes", "optimize",
           "optimized_tier", "pending", "prepare_layout", "rewrite_files", "write_clustered"]


def layout_refusal(directory: TableDirectory) -> str | None:
    """Why the optimizer may not rewrite this table's files (None: it may): an append table
    with fixed buckets, whose readers and compaction keep each bucket's files in the
    order of their sequence numbers (Java clusters such a table only with
    ``bucket-append-ordered`` off, which mergetree does not do yet)."""
    ts = directory.schema
    if not ts.has_primary_key and ts.buckets > 0:
        return (f"{directory.described} is an append table with fixed buckets: its files are kept in the order "
                f"they were written, which a layout would change; mergetree lays out append tables without "
                f"buckets ('bucket' = '-1')")
    return None


def prepare_layout(directory: TableDirectory, order, strategy: str | None, target_file_size: int | None,
                   sort_within) -> tuple[TableDirectory, TableOptions | None]:
    """Check an optimize request and store an explicit layout in the table's options.  Returns
    the (possibly re-optioned) directory and the options to rewrite with, or None for a
    primary-key table, whose optimize is a full compaction (its files are ordered by its key)."""
    ts = directory.schema
    refusal = layout_refusal(directory)
    if refusal is not None:
        raise UnsupportedPaimonFeatureError(refusal)
    columns = column_names(order, "order")
    within = column_names(sort_within, "sort_within")
    if strategy is not None and strategy not in CLUSTERING_STRATEGIES:
        raise InvalidArgumentError(f"strategy must be one of {', '.join(CLUSTERING_STRATEGIES)}, not {strategy!r}")
    if target_file_size is not None and (isinstance(target_file_size, bool) or not isinstance(target_file_size, int)
                                         or target_file_size < 1):
        raise InvalidArgumentError(f"target_file_size must be a positive number of bytes, not {target_file_size!r}")
    if ts.has_primary_key:
        key_order = columns == ts.primary_key[:len(columns)] and strategy in (None, "linear")
        if within or (columns and not key_order):
            raise InvalidArgumentError(PK_CLUSTERING_MESSAGE)
        if key_order and (columns or directory.options.clustering is None):
            return directory, None
    for name in columns + within:
        if name not in ts.schema.names:
            raise InvalidArgumentError(f"no column {name!r}; columns: {ts.schema.names}")
    if len(columns) > MAX_COLUMNS:
        raise InvalidArgumentError(f"order takes 1 to {MAX_COLUMNS} columns, not {len(columns)}")
    changes: dict = {}
    if columns:
        changes[KEY_CLUSTERING_COLUMNS] = ",".join(columns)
        changes[KEY_CLUSTERING_STRATEGY] = strategy or ("linear" if len(columns) == 1 else "hilbert")
    if within:
        changes[KEY_SORT_WITHIN] = ",".join(within)
    current = directory.options
    if changes and (current.clustering is None or current.clustering.columns != columns
                    or current.clustering.strategy != changes.get(KEY_CLUSTERING_STRATEGY)
                    or (within and current.sort_within != within)):
        directory = alter_options(directory, changes)
    options = directory.options
    if options.clustering is None and not options.sort_within:
        raise InvalidArgumentError("this table has no layout yet: pass order=[columns] (and a strategy) or "
                                   "sort_within=[columns]")
    if target_file_size is not None:
        options = replace(options, target_file_size=target_file_size)
    return directory, options


def optimize(directory: TableDirectory, options: TableOptions | None, filter: flt.Filter,
             progress: Progress | None) -> Snapshot | None:
    """Cluster the files a (normalized) filter selects (all, by default) by the layout
    `prepare_layout` stored and returned; a primary-key table (`options` None) is compacted in
    full instead."""
    if options is None:
        return compact_buckets(directory, None, full=True, progress=progress)
    if directory.schema.has_primary_key:
        return _cluster_resolved(directory, options, filter, progress)
    return _rewrite(directory, options, filter, progress)


def _cluster_resolved(directory: TableDirectory, options: TableOptions, f: flt.Filter,
                      progress: Progress | None) -> Snapshot | None:
    """Cluster a deletion-vector table (Paimon's pk-clustering-override): first resolve what
    writes left (a compaction), then rewrite each bucket's resolved files, their deleted rows
    dropped, as files cut along the layout's order, each sorted by key (so every read, merge
    and key lookup still sees sorted runs) and tight on the layout's columns.  The files
    overlap in key range, so they are written at level 0, resolved: no two hold one key, and
    a file that no newer write meets is read alone with its statistics."""
    compact_buckets(directory, None, full=False)
    base = directory.latest_snapshot()
    if base is None:
        return None
    ts = directory.schema
    clustering = options.clustering
    if clustering is None:
        return None
    groups: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    for b in plan_read(directory, f, base.id).buckets:
        groups[(b.partition, b.bucket)] += [m for m in b.files if m.resolved]
    mark = {"tier": "major", "layout": layout_signature(options)}
    # level 0's codec is for the write buffers' runs: these are compacted files
    codecs = {level: codec for level, codec in options.compression_per_level.items() if level != 0}
    write_options = replace(options, compression_per_level=codecs, sort_within=())
    total = sum(m.row_count for files in groups.values() for m in files)
    with rewrite_transaction(directory, base.id, total, progress) as rewrite:
        for partition, bucket, files, rows in _group_rows(directory, groups):
            rows = rows.take(pa.array(layout_order(rows, clustering.columns, clustering.strategy, clustering.tree)))
            step = max(int(options.target_file_size / max(rows.nbytes / max(rows.num_rows, 1), 1.0)), 1)
            relative = directory.bucket_directory(partition, bucket)
            with new_files(directory) as written:
                for start in range(0, rows.num_rows, step):
                    chunk = rows.slice(start, step)
                    chunk = chunk.take(sort_indices(chunk, [(k, "ascending") for k in ts.file_key], "at_end"))
                    meta = write_data_file(directory.opener(partition, bucket, 0, relative, options=write_options),
                                           chunk)
                    written.append(marked(FileEntry(partition, bucket, meta.with_deletion_vector(DeletionVectorRef())),
                                          mark))
            rewrite.replace([FileEntry(partition, bucket, m) for m in files], written)
            rewrite.advance(sum(m.row_count for m in files))
        return rewrite.commit()


def layout_signature(options: TableOptions) -> str:
    """What an optimized file was laid out for: a file whose mark differs (or has none) is
    not yet optimized for the table's current layout."""
    parts = []
    if options.clustering is not None:
        parts.append(f"{options.clustering.strategy}({','.join(options.clustering.columns)})")
        if options.clustering.tree is not None:  # another tree is another layout
            parts[-1] += "#" + hashlib.sha1(options.clustering.tree.to_json().encode()).hexdigest()[:12]
    if options.sort_within:
        parts.append(f"sort({','.join(options.sort_within)})")
    return ";".join(parts) or "none"


def optimized_tier(meta: DataFileMeta, options: TableOptions) -> str | None:
    """"major" for a file laid out for the current layout, "minor" for a file only merged
    with its small neighbours, None for a file as written."""
    if meta.origin is not None:  # a Paimon file: above level 0 (Java's incremental clustering's mark), laid
        # out for the layout of the schema it was written under, as Java reads a file's own schema
        if meta.level == 0:
            return None
        written = meta.origin.written_options()
        return "major" if written is not None and layout_signature(written) == layout_signature(options) else None
    mark = meta.indexes.get("optimized")
    if not isinstance(mark, dict):
        return None
    if mark.get("tier") == "major":
        return "major" if mark.get("layout") == layout_signature(options) else None
    return "minor" if mark.get("tier") == "minor" else None


def pending(directory: TableDirectory) -> dict[str, dict[tuple, list[DataFileMeta]]]:
    """The files each tier of the background optimizer would rewrite now, by (partition,
    bucket): "major" where the data not yet laid out for the current layout reaches
    `optimize.major-threshold`, else "minor" where at least `optimize.minor-min-files` small
    files wait.  Primary-key tables have none (their files stay sorted by key)."""
    options = directory.options
    snapshot = directory.latest_snapshot()
    out: dict[str, dict[tuple, list[DataFileMeta]]] = {"minor": {}, "major": {}}
    if snapshot is None or directory.schema.has_primary_key or layout_refusal(directory) is not None:
        return out
    groups: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    for entry in directory.live_files(snapshot).values():
        groups[(entry.partition, entry.bucket)].append(entry.file)
    small = options.compaction.small_file_ratio * options.target_file_size
    for key, files in groups.items():
        waiting = [m for m in files if optimized_tier(m, options) != "major"]
        if sum(m.file_size for m in waiting) >= options.major_threshold:
            out["major"][key] = sorted(waiting, key=lambda m: m.file_name)
            continue
        tiny = [m for m in waiting if m.file_size < small]
        if len(tiny) >= options.minor_min_files:
            out["minor"][key] = sorted(tiny, key=lambda m: m.file_name)
    return out


def _rewrite(directory: TableDirectory, options, f: flt.Filter, progress: Progress | None) -> Snapshot | None:
    base = directory.latest_snapshot()
    if base is None:
        return None
    plan = plan_read(directory, f, base.id)
    groups: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    for b in plan.buckets:
        groups[(b.partition, b.bucket)] += b.files
    return rewrite_files(directory, options, base, groups, "major", progress)


def _group_rows(directory: TableDirectory, groups: dict[tuple, list[DataFileMeta]]) -> Iterator[tuple]:
    """Per non-empty (partition, bucket), in order: (partition, bucket, its files, their rows).
    The same files give the same layout whoever asks (the curve's sample and its ties follow the
    row order): they are read in name order, not in the order a plan lists them."""
    for (partition, bucket), files in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if not files:
            continue
        files = sorted(files, key=lambda m: m.file_name)
        yield partition, bucket, files, rows_of(read_run(directory.storage, files), directory.schema.file_schema)


def rewrite_files(directory: TableDirectory, options: TableOptions, base: Snapshot,
                  groups: dict[tuple, list[DataFileMeta]], tier: str,
                  progress: Progress | None = None) -> Snapshot | None:
    """Rewrite these files of each (partition, bucket) in one commit: "major" lays them out by
    the table's clustering and in-file sort, "minor" only merges them into files of the target
    size.  The new files carry the tier (and the layout) they were written for."""
    mark = {"tier": tier, "layout": layout_signature(options)} if tier == "major" else {"tier": tier}
    level = directory.store.clustered_level(options) if tier == "major" else 0
    total = sum(m.row_count for files in groups.values() for m in files)
    with rewrite_transaction(directory, base.id, total, progress) as rewrite:
        for partition, bucket, files, rows in _group_rows(directory, groups):
            clustering = options.clustering if tier == "major" else None
            # files are cut at their size on disk, as Java's writers roll them
            disk = sum(m.file_size for m in files) / max(sum(m.row_count for m in files), 1)
            with new_files(directory) as written:
                if clustering is not None and clustering.tree is not None:
                    # a qd-tree's leaves packed into files (`packed_files`, as the advisor
                    # simulated them); each file names the leaves it holds
                    leaves = clustering.tree.route(rows)
                    file_of_row = packed_files(leaves, max(int(options.target_file_size / max(disk, 1.0)), 1))
                    for file in np.unique(file_of_row):
                        mine = file_of_row == file
                        described = {**mark, "leaves": [int(leaf) for leaf in np.unique(leaves[mine])]}
                        written += [marked(e, described) for e in write_clustered(
                            directory, options, partition, bucket, rows.filter(pa.array(mine)), level, disk)]
                else:
                    if clustering is not None:
                        rows = rows.take(pa.array(layout_order(rows, clustering.columns, clustering.strategy)))
                    written += [marked(e, mark) for e in write_clustered(
                        directory, options if tier == "major" else replace(options, sort_within=()), partition, bucket,
                        rows, level, disk)]
            rewrite.replace([FileEntry(partition, bucket, m) for m in files], written)
            rewrite.advance(sum(m.row_count for m in files))
        return rewrite.commit()


def marked(entry: FileEntry, mark: dict) -> FileEntry:
    """The file's entry marked as written by the optimizer for this tier (and layout)."""
    return FileEntry(entry.partition, entry.bucket, entry.file.with_indexes({**entry.file.indexes, "optimized": mark}))


def write_clustered(directory: TableDirectory, options, partition: tuple, bucket: int,
                    rows: pa.Table, level: int = 0, disk_bytes_per_row: float | None = None) -> list[FileEntry]:
    """Cut clustered rows into files of about the target size, at `level` (clustered files are
    above level 0: `clustered_level`); each file's rows sorted by `sort_within` when the table
    asks for it.  Files are cut at their size on disk, as Java's writers roll them, estimated
    from `disk_bytes_per_row` (the input files'): the writer can only roll at a whole row group,
    too coarse for a layout's files."""
    ts = directory.schema
    relative = directory.bucket_directory(partition, bucket)
    if not options.sort_within and not disk_bytes_per_row:
        files = write_sorted_run(directory.opener(partition, bucket, level, relative, options=options), rows, ts,
                                 options, directory.remove_written)
        return [FileEntry(partition, bucket, m) for m in files]
    per_row = max(disk_bytes_per_row or rows.nbytes / max(rows.num_rows, 1), 1.0)
    step = max(int(options.target_file_size / per_row), 1)
    with new_files(directory) as out:
        for start in range(0, rows.num_rows, step):
            chunk = rows.slice(start, step)
            if options.sort_within:
                chunk = chunk.take(sort_indices(chunk, [(c, "ascending") for c in options.sort_within], "at_start"))
            opener = directory.opener(partition, bucket, level, relative, options.sort_within, options)
            meta = write_data_file(opener, chunk)
            out.append(FileEntry(partition, bucket, meta))
    return out


def missing_indexes(meta: DataFileMeta, options) -> tuple[bool, bool]:
    """(needs a rewrite, needs side data) for one file under these options: a rewrite for a
    missing Bloom filter (Parquet keeps it inside the file) and, in a Paimon table, a missing
    bitmap or Bloom filter of its file index (built with the file); side data for a missing bitmap sidecar or a
    pre-aggregate missing or built for another definition of its model."""
    rewrite = not set(options.bloom_columns) <= meta.bloom_columns()
    # a bitmap column with too many values is recorded as such: it is not retried
    bitmaps = not set(options.bitmap_columns) <= meta.bitmap_columns()
    stored = meta.preaggregates()
    preaggregates = any(name not in stored or stored[name].get("signature", signature) != signature
                        for name, signature in ((n, model_signature(m)) for n, m in options.aggregate_models.items()))
    if meta.origin is not None:  # a Paimon file: its file index is built with it
        blooms = not set(options.file_index_blooms) <= meta.origin.file_index_columns("bloom-filter")
        return rewrite or bitmaps or blooms, preaggregates
    return rewrite, bitmaps or preaggregates


def build_indexes(directory: TableDirectory, progress: Progress | None) -> Snapshot | None:
    """Give every live file the Bloom filters, bitmap indexes and pre-aggregates the options
    declare: files missing a Bloom filter (or, in a Paimon table, a file index) are rewritten,
    the others only get their new side files (mergetree's sidecars, a Paimon file's extra
    files) in new manifest entries."""
    ts = directory.schema
    options = directory.options
    base = directory.latest_snapshot()
    if base is None:
        return None
    todo = [(e, *missing_indexes(e.file, options)) for e in directory.live_files(base).values()]
    todo = [(e, rewrite, side) for e, rewrite, side in todo if rewrite or side]
    if not todo:
        return None
    total = sum(e.file.row_count for e, _, _ in todo)
    with rewrite_transaction(directory, base.id, total, progress) as rewrite:
        for entry, rewrite_file, _ in todo:
            meta = entry.file
            # a rewrite drops the rows a deletion vector removed (and the file stays resolved); side
            # data indexes the file as it is, row positions included
            read = meta if rewrite_file else meta.every_row()
            rows = rows_of(read_run(directory.storage, [read]), ts.file_schema)
            if rewrite_file:
                new = write_data_file(directory.opener(entry.partition, entry.bucket, meta.level,
                                                       sorted_by=meta.sorted_by), rows)
                if meta.resolved:
                    new = new.with_deletion_vector(DeletionVectorRef())
                if not ts.has_primary_key:  # an append table's files keep their place in its order
                    new = replace(new, min_seq=meta.min_seq, max_seq=meta.max_seq)
                written = FileEntry(entry.partition, entry.bucket, new)
            else:
                written = directory.store.with_side_data(entry, rows, ts, options)
            rewrite.replace([entry], [written])
            rewrite.advance(meta.row_count)
        return rewrite.commit()
