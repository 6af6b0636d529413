"""The merge read of one bucket: each section's sorted runs merged on read with the table's
engine (the kind column decoded only where a file holds retractions, the sequence column only
where runs' sequence ranges overlap: `ordered_by_file`), as batches (`read_bucket`) or as row
selections for joins (`select_bucket`)."""
from __future__ import annotations

import itertools
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidArgumentError
from ...merge import merge
from ...merge.assemble import RowSelection
from ...merge.row_kind import retraction_kinds
from ...storage import Store
from ..directory import TableDirectory
from ..files import DataFileMeta, batch_rows_for, read_run
from ..retractions import as_merged
from ..schema import KEY_PREFIX, KIND_COLUMN, SEQUENCE_COLUMN, TableSchema
from ..sequence_fields import ORDER_COLUMN, ranked
from .model import BucketPlan, ReadStats

__all__ = ["merge_runs", "ordered_by_file", "read_bucket", "select_bucket", "table_columns"]

def _in_range(directory: TableDirectory, batch: pa.RecordBatch, key_range: tuple[Any, Any] | None
              ) -> pa.RecordBatch:
    """The rows of a merged batch (in key order) whose first key column is in the range."""
    if key_range is None or batch.num_rows == 0:
        return batch
    low, high = key_range
    column = batch.column(directory.schema.primary_key[0])
    first, last = column[0].as_py(), column[batch.num_rows - 1].as_py()
    if (low is None or first >= low) and (high is None or last < high):
        return batch  # the common case: the whole batch is inside
    keep = None
    if low is not None:
        keep = pc.greater_equal(column, pa.scalar(low, column.type))
    if high is not None:
        below = pc.less(column, pa.scalar(high, column.type))
        keep = below if keep is None else pc.and_(keep, below)
    return batch.filter(keep)


def read_bucket(directory: TableDirectory, bucket: BucketPlan, columns: list[str],
                expression: pc.Expression | None, key_filter: pc.Expression | None,
                stats: ReadStats | None = None,
                sections: list[list[list[DataFileMeta]]] | None = None,
                merge_threads: int = 1, final_filter: pc.Expression | None = None) -> Iterator[pa.RecordBatch]:
    """One bucket's merged rows (in key order within each section), filtered, in the given
    columns; a section of several runs merges in `merge_threads` threads (its runs are read
    into memory first).  `final_filter` (`plan.final_filter`: the whole filter in the data
    files' columns) is pushed into the Parquet scan of a section of one sorted run, whose rows
    are final: only matching rows (and row groups) are decoded, and only the asked columns."""
    out_schema = pa.schema([directory.schema.schema.field(c) for c in columns])

    def with_range_column(needed: list[str] | None) -> list[str] | None:
        if bucket.key_range is not None and needed is not None:
            # the range is cut on the first key column: it must come out of the merge
            return list(dict.fromkeys([*needed, directory.schema.primary_key[0]]))
        return needed
    # without a row filter only the asked columns are decoded (every engine folds each
    # column on its own); a filter may name any column, so then all are read
    merged_needed = with_range_column(columns if expression is None else None)
    for section in bucket.sections if sections is None else sections:
        if stats is not None:
            stats.count([m for run in section for m in run])
        pushed = final_filter is not None and expression is not None and len(section) == 1 \
            and directory.schema.has_primary_key
        needed, row_filter = (with_range_column(columns), final_filter) if pushed else (merged_needed, key_filter)
        for selection in _select_section(directory, section, row_filter, bucket.row_groups, needed, merge_threads,
                                         stats):
            if not selection.num_rows:
                continue
            merged = selection.gather()
            batch = _in_range(directory, merged, bucket.key_range)
            if expression is None or pushed:
                out = batch.select(columns)
                if out.num_rows:
                    yield pa.RecordBatch.from_arrays(out.columns, schema=out_schema)
                continue
            for out in pa.Table.from_batches([batch]).filter(expression).select(columns).to_batches():
                if out.num_rows:
                    yield pa.RecordBatch.from_arrays(out.columns, schema=out_schema)


def select_bucket(directory: TableDirectory, bucket: BucketPlan, columns: list[str]) -> Iterator[RowSelection]:
    """One bucket's merged rows (in key order) as selections of the decoded file batches,
    their columns named and typed as the table's `columns`, not copied yet: a consumer
    that keeps only some rows (a join) copies just those.  No filter, no key range."""
    if bucket.key_range is not None:
        raise InvalidArgumentError("select_bucket reads whole buckets, not key ranges of them")
    for section in bucket.sections:
        yield from _select_section(directory, section, None, bucket.row_groups, columns)


def _select_section(directory: TableDirectory, section: list[list[DataFileMeta]], key_filter: pc.Expression | None,
                    row_groups: dict[str, frozenset[int]],
                    needed: list[str] | None = None, merge_threads: int = 1,
                    stats: ReadStats | None = None) -> Iterator[RowSelection]:
    """The merged rows of one section as selections whose batches hold table columns (only
    the `needed` ones, when given), retractions dropped.  A section of several runs goes
    through `merge()`, whose stretches hand out the parts of a run that meet no other run
    (files overlapping only at their edges) as slices: only the overlap is merged row by
    row (`stats.rows_merged` counts the rows that went through a merge, `rows_stretched`
    those of them that left as slices)."""
    ts = directory.schema
    wanted = None if needed is None else set(needed)
    names = ts.schema.names if wanted is None else [c for c in ts.schema.names if c in wanted]
    if not ts.has_primary_key:
        for run in section:
            for batch in read_run(directory.storage, run, columns=None if needed is None else names,
                                  row_groups=row_groups):
                yield RowSelection.of_batch(batch)
        return
    # a key column's value copy is not read: the `_KEY_` column holds the same value (and is
    # the truth after a merge), so it stands in for it
    primary_key = set(ts.primary_key)
    options = directory.options
    values = [n for n in names if n not in primary_key]
    if len(section) > 1:  # the merge orders versions by the sequence fields too
        values += [c for c in options.sequence_fields if c not in values and c not in primary_key]
    # each file says whether it may hold retractions: without any, the kind column changes nothing
    kinds = [KIND_COLUMN] if any(m.holds_retractions for run in section for m in run) else []
    if len(section) == 1:  # one sorted run: rows are final; only retractions go
        for batch in read_run(directory.storage, section[0], columns=ts.file_key + kinds + values,
                              row_filter=key_filter, row_groups=row_groups):
            if kinds:
                batch = batch.filter(pc.invert(pc.is_in(batch.column(KIND_COLUMN), retraction_kinds())))
            yield RowSelection.of_batch(table_columns(ts, batch, names))
        return
    batch_rows = batch_rows_for(len(section))
    runs: list[Iterable[pa.RecordBatch]]
    if not options.sequence_fields and ordered_by_file(section):
        # each file's rows take its newest sequence number: the same order, nothing decoded
        runs = [_with_file_sequence(directory.storage, run, ts.file_key + kinds + values, key_filter, row_groups,
                                    batch_rows) for run in section]
    else:
        columns = ts.file_key + [SEQUENCE_COLUMN] + kinds + values
        runs = [read_run(directory.storage, run, columns=columns, row_filter=key_filter, row_groups=row_groups,
                         batch_rows=batch_rows) for run in section]
    if merge_threads > 1 and len(runs) > 1:
        # a merge in threads cuts whole runs by key range, so it holds every run in memory anyway:
        # decode them at once (Parquet decoding releases the GIL)
        with ThreadPoolExecutor(min(merge_threads, len(runs)), thread_name_prefix="merge-run") as pool:
            runs = list(pool.map(list, runs))
    yield from merge_runs(directory, runs, names, bool(kinds), merge_threads, stats)


def merge_runs(directory: TableDirectory, runs: list, names: list[str], kinds: bool,
               merge_threads: int = 1, stats: ReadStats | None = None) -> Iterator[RowSelection]:
    """Sorted runs of a section (each an iterable of batches in the data files' columns: the key,
    sequence, kind when `kinds`, values) merged with the table's engine, as selections whose
    batches hold the table columns `names`, retractions dropped; `stats` counts the rows merged
    and stretched once the merge is read to its end."""
    ts = directory.schema
    options = directory.options
    aggregations = {c: f for c, f in (options.aggregations or {}).items() if c in names}
    if kinds:  # skipped or refused where the table's merge function does (Paimon's)
        runs = as_merged(directory, runs)
    sequence = SEQUENCE_COLUMN
    if options.sequence_fields:  # ranking needs the whole section's sequence values first
        runs, sequence = ranked([list(run) for run in runs], options.sequence_fields,
                                options.sequence_descending), ORDER_COLUMN
    reader = merge(runs, ts.file_key, sequence=sequence, kind=KIND_COLUMN if kinds else None,
                   engine=ts.merge_engine, aggregations=aggregations or None, threads=merge_threads)
    for selection in reader.selections():
        yield selection.map_pieces(lambda batch: table_columns(ts, batch, names))
    if stats is not None:
        merge_stats = reader.stats
        stats.count_merge(merge_stats.rows_in, merge_stats.rows_stretched)


def ordered_by_file(section: Sequence[Sequence[DataFileMeta]]) -> bool:
    """Can a merge of these runs order versions by their files alone?  A key's versions are
    in different runs of one (partition, bucket) directory; if, in every directory, the runs'
    sequence ranges do not overlap, every version of a key in a newer run has a higher
    sequence number than every one in an older run, so each file's highest sequence number
    stands in for its rows' own (and that column need not be decoded)."""
    ranges: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for run in section:
        spans: dict[str, tuple[int, int]] = {}
        for m in run:
            where = os.path.dirname(m.file_name)
            low, high = spans.get(where, (m.min_seq, m.max_seq))
            spans[where] = (min(low, m.min_seq), max(high, m.max_seq))
        for where, span in spans.items():
            ranges[where].append(span)
    for ordered in ranges.values():
        ordered.sort()
        if any(high >= low for (_, high), (low, _) in itertools.pairwise(ordered)):
            return False
    return True


def _with_file_sequence(root: Store, run: list[DataFileMeta], columns: list[str], key_filter: pc.Expression | None,
                        row_groups: dict[str, frozenset[int]], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """A run's batches with a sequence column holding each file's highest sequence number."""
    field_ = pa.field(SEQUENCE_COLUMN, pa.int64(), nullable=False)
    for meta in run:
        for batch in read_run(root, [meta], columns=columns, row_filter=key_filter, row_groups=row_groups,
                              batch_rows=batch_rows):
            sequence = pa.array(np.full(batch.num_rows, meta.max_seq, dtype=np.int64))
            yield batch.add_column(0, field_, sequence)


def table_columns(ts: TableSchema, batch: pa.RecordBatch, names: list[str]) -> pa.RecordBatch:
    """The table's `names` columns of a file batch, key columns from their `_KEY_` columns."""
    primary_key = set(ts.primary_key)
    columns = [batch.column(KEY_PREFIX + n if n in primary_key else n) for n in names]
    return pa.RecordBatch.from_arrays(columns, names=names)
