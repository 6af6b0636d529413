"""Point lookups: a read whose filter pins every primary-key column to one value (= joined by
AND, or a short IN list) skips the dataset scanner.  After the normal planning (partition,
bucket, key-range, statistics and Bloom pruning), each remaining data file is searched through
its Parquet page index: the first key column's ColumnIndex (min/max per page) names the pages
that can hold a key; those pages of the key columns are decoded (and kept: `_key_pages`) to
find the key's rows; then only the pages holding those rows are decoded for the other columns,
by handing pyarrow a small Parquet file of just those pages (`parquet_footer.page_file`).  The
rows each sorted run gives are merged with the table's engine as `read_bucket` merges them.

A file without a page index (written before the writer kept one), with nested columns, or
keyed first by a type the index cannot order here (floats, and anything but integers, strings
and binary) sends the whole read back to the normal path, before anything is returned."""
from __future__ import annotations

import bisect
import functools
import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import CorruptTableError
from ...merge.row_kind import retraction_kinds
from ...storage import StorageError, Store
from .. import filters as flt
from ..directory import TableDirectory
from ..filecache import FileCache
from ..files import DataFileMeta, deleted_of, file_metadata, source_of
from ..indexes.parquet_footer import (
    CONVERTED_TYPES,
    ColumnChunk,
    FileLayout,
    MalformedFooter,
    PageLocation,
    PageRun,
    ThriftCompactReader,
    column_index,
    corrupt_file,
    file_layout,
    offset_index,
    page_file,
    read_exactly,
    read_footer,
    read_ranges,
)
from ..objects import StoredFile, table_path
from ..schema import KEY_PREFIX, KIND_COLUMN, SEQUENCE_COLUMN
from .merged import merge_runs
from .model import PreparedRead

__all__ = ["MAX_KEYS", "lookup_keys", "read_points"]

# set False to send every read down the normal path (the tests compare the two)
ENABLED = True
MAX_KEYS = 64  # an IN list longer than this (or = / IN combinations over composite keys) reads normally


def lookup_keys(directory: TableDirectory, read: PreparedRead) -> list[tuple] | None:
    """The keys a read pins every primary-key column to (distinct, at most MAX_KEYS), or None
    when it is not a point lookup this path serves."""
    ts = directory.schema
    if not ENABLED or not ts.has_primary_key or read.order_by or read.limit is not None or read.filter is None:
        return None
    if directory.options.sequence_fields or directory.options.ignore_delete:
        return None  # versions ordered by other columns, or retractions skipped: the merge read decides
    key_type = ts.file_schema.field(ts.file_key[0]).type
    if _physical_key(key_type, None) is None:
        return None
    choices = []
    for c in ts.primary_key:
        values = flt.equality_values(read.filter, c)
        if values is None or any(v is None for v in values) or len(values) > MAX_KEYS:
            return None
        choices.append(values)
    keys = list(dict.fromkeys(itertools.product(*choices)))
    return keys if len(keys) <= MAX_KEYS else None


def read_points(directory: TableDirectory, read: PreparedRead) -> pa.Table | None:
    """The rows of a point lookup (as `read_table` would return them), or None when some file
    cannot be searched by its page index (the caller then reads normally)."""
    keys = lookup_keys(directory, read)
    if keys is None:
        return None
    if not all(m.key_ordered for b in read.plan.buckets for section in b.sections for run in section for m in run):
        return None  # a file sorted by other columns: no binary search by key through its pages
    ts = directory.schema
    primary_key = set(ts.primary_key)
    # a filter of = and IN on key columns alone holds for exactly the rows found: no filter after,
    # and only the asked columns are decoded (every engine folds each column on its own)
    exact = all(isinstance(c, tuple) and len(c) == 3 and c[0] in primary_key and c[1] in ("=", "in")
                for c in flt.conjuncts(read.filter))
    wanted = set(read.columns) if exact else set(ts.schema.names)
    names = [n for n in ts.schema.names if n in wanted]
    values = [n for n in names if n not in primary_key]
    parts: list[pa.Table] = []
    files = 0
    file_schema = ts.file_schema
    types = {f.name: f.type for f in file_schema}
    for bucket in read.plan.buckets:
        for section in bucket.sections:
            kinds = any(m.holds_retractions for run in section for m in run)
            merged = len(section) > 1
            columns = ts.file_key + ([SEQUENCE_COLUMN] if merged else []) + ([KIND_COLUMN] if kinds else []) + values
            if merged and ts.merge_engine == "deduplicate" and len(keys) == 1:
                newest = _newest(directory, section, keys, columns, types)
                if newest is None:
                    return None
                if newest is not _MERGE:
                    files += sum(len(run) for run in section)
                    read.stats.count([m for run in section for m in run])
                    if newest.num_rows:
                        parts.append(pa.table([newest.column(KEY_PREFIX + n if n in primary_key else n)
                                               for n in names], names=names))
                    continue
            runs = []
            for run in section:
                found = []
                for meta in run:
                    rows = _file_rows(directory, meta, keys, columns, types)
                    if rows is None:
                        return None
                    files += 1
                    found += rows
                runs.append(found)
            read.stats.count([m for run in section for m in run])
            if not any(runs):
                continue
            if not merged:  # one sorted run: its rows are final; only retractions go
                table = runs[0][0] if len(runs[0]) == 1 else pa.concat_tables(runs[0])
                if kinds:
                    table = table.filter(pc.invert(pc.is_in(table.column(KIND_COLUMN), retraction_kinds())))
                parts.append(pa.table([table.column(KEY_PREFIX + n if n in primary_key else n) for n in names],
                                      names=names))
                continue
            batches = [[b for t in run for b in t.to_batches()] for run in runs]
            for selection in merge_runs(directory, batches, names, kinds):
                if selection.num_rows:
                    parts.append(pa.Table.from_batches([selection.gather()]))
    read.stats.point_files += files
    schema = pa.schema([ts.schema.field(n) for n in names])
    if not parts:
        return read.output_schema.empty_table()
    result = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    result = pa.Table.from_arrays(result.columns, schema=schema)
    if not exact and read.expression is not None:
        result = result.filter(read.expression)
    return result.select(read.columns)


_MERGE = pa.table({})  # `_newest`'s answer when the versions are for the engine's merge to order


def _newest(directory: TableDirectory, section: list[list[DataFileMeta]], keys: list[tuple], columns: list[str],
            types: dict[str, pa.DataType]) -> pa.Table | None:
    """A deduplicating table's answer for one key over several runs: its newest version (the
    highest sequence number wins, a retraction removes the key), its values decoded in that one
    file only — the others give just the key and sequence pages.  None: some file has no usable
    page index; `_MERGE`: two versions share the highest sequence number (left to the merge)."""
    slim = directory.schema.file_key + [SEQUENCE_COLUMN]
    best: tuple[int, DataFileMeta] | None = None
    tied = False
    for run in section:
        for meta in run:
            pieces = _file_rows(directory, meta, keys, slim, types)
            if pieces is None:
                return None
            for piece in pieces:
                seqs = piece.column(SEQUENCE_COLUMN).to_numpy()
                top = int(seqs.max())
                if best is None or top > best[0]:
                    best, tied = (top, meta), int((seqs == top).sum()) > 1
                elif top == best[0]:
                    tied = True
    if best is None:
        return _empty_rows(columns, types)
    if tied:
        return _MERGE
    pieces = _file_rows(directory, best[1], keys, columns, types)
    if not pieces:
        return None  # the file changed between the two looks: read normally
    rows = pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
    at = int(np.flatnonzero(rows.column(SEQUENCE_COLUMN).to_numpy() == best[0])[0])
    row = rows.slice(at, 1)
    if KIND_COLUMN in columns and row.column(KIND_COLUMN)[0].as_py() in retraction_kinds().to_pylist():
        return _empty_rows(columns, types)
    return row


def _empty_rows(columns: list[str], types: dict[str, pa.DataType]) -> pa.Table:
    return pa.schema([(c, types[c]) for c in columns]).empty_table()


# ---------------------------------------------------------------- one file

@dataclass
class _FileIndex:
    """What a lookup needs of one data file, kept per file: its footer's layout, the page
    index bytes, and the first key column's page bounds over the whole file, in order."""

    layout: FileLayout
    columns: dict[str, int]            # leaf name -> its position among a row group's chunks
    region: bytes                      # the bytes holding every offset and column index
    region_start: int
    row_starts: list[int]              # first file row of each row group
    pages: list[tuple[int, int]]       # the key column's pages: (row group, page)
    mins: list
    maxs: list
    ordered: bool                      # mins and maxs ascend: bisect; else scan them all
    _offsets: dict[tuple[int, int], list[PageLocation]] = field(default_factory=dict)
    # names this file's entries in the key-page cache: the index was loaded for one file content
    # (path, size, modification time), so its pages need no second look at the file
    token: object = field(default_factory=object)

    def slice(self, where: tuple[int, int]) -> memoryview:
        start = where[0] - self.region_start
        if start < 0 or where[1] < 0 or start + where[1] > len(self.region):
            raise MalformedFooter(f"a page index at {where[0]} (+{where[1]}) lies outside the index region")
        return memoryview(self.region)[start:start + where[1]]

    def offsets(self, group: int, column: int) -> list[PageLocation]:
        got = self._offsets.get((group, column))
        if got is None:
            chunk = self.layout.row_groups[group][column]
            assert chunk.offset_index is not None  # checked when the index was loaded
            got = offset_index(self.slice(chunk.offset_index))
            if got[-1].first_row >= self.layout.row_counts[group]:
                raise MalformedFooter(f"a page of row group {group} starts past its {self.layout.row_counts[group]} "
                                      f"rows")
            self._offsets[(group, column)] = got
        return got

    def candidates(self, value: Any) -> list[int]:
        """The key pages (indexes into `pages`) whose bounds admit `value`."""
        if not self.ordered:
            return [i for i, (lo, hi) in enumerate(zip(self.mins, self.maxs)) if lo <= value <= hi]
        out = []
        i = bisect.bisect_left(self.maxs, value)
        while i < len(self.pages) and self.mins[i] <= value:
            out.append(i)
            i += 1
        return out


# footers and page-index bounds of recently searched files; None for a file the path cannot use
_indexes: FileCache[_FileIndex | None] = FileCache(max_entries=256)
# decoded key pages: (file, row group, page) -> the key columns of the page's rows
_key_pages: FileCache[_KeyPage] = FileCache(max_entries=4096, max_bytes=256 << 20,
                                            weight=lambda p: 2 * p.rows.nbytes)


def _open(file: str | StoredFile) -> Any:
    return file.open() if isinstance(file, StoredFile) else open(file, "rb", buffering=0)


def _cached(file: str | StoredFile, cache: FileCache, load: Any, *key: Any) -> Any:
    if isinstance(file, StoredFile):
        return cache.get_keyed((*file.key, *key), load)
    return cache.get(file, load, *key)


def _physical_key(dtype: pa.DataType, value: Any) -> Any:
    """A first-key value as the page index orders it (Python int or bytes); with value None,
    whether the type is served at all (True) or not (None)."""
    t = pa.types
    if t.is_integer(dtype):
        return True if value is None else int(value)
    if t.is_string(dtype) or t.is_large_string(dtype):
        return True if value is None else str(value).encode("utf-8")
    if t.is_binary(dtype) or t.is_large_binary(dtype):
        return True if value is None else bytes(value)
    return None


def _bound_decoder(layout: FileLayout, column: int) -> Any:
    """Turns the column's ColumnIndex bounds (plain-encoded) into values ordered as the key is."""
    el = layout.schema[column + 1]
    logical = el.logical if el.logical is not None else CONVERTED_TYPES.get(el.converted or -1)
    signed = not (logical is not None and logical[0] == "INTEGER" and logical[2] is False)
    if el.type == 1:  # INT32
        return lambda b: int.from_bytes(b, "little", signed=signed) if len(b) == 4 else _bad(b)
    if el.type == 2:  # INT64
        return lambda b: int.from_bytes(b, "little", signed=signed) if len(b) == 8 else _bad(b)
    if el.type == 6:  # BYTE_ARRAY: compared as unsigned bytes, as Python compares bytes
        return bytes
    return None


def _bad(b: bytes) -> Any:
    raise MalformedFooter(f"a page bound of {len(b)} bytes does not fit the column's type")


def _load_index(storage: Store, meta: DataFileMeta, key_column: str) -> _FileIndex | None:
    file = source_of(storage, meta)
    path = str(file)
    try:
        with _open(file) as f:
            footer, _ = read_footer(f, path)
            layout = file_layout(ThriftCompactReader(footer))
            if len(layout.schema) != len(layout.schema[0:1]) + (layout.schema[0].num_children or 0) \
                    or any(el.num_children for el in layout.schema[1:]):
                return None  # nested columns: read normally
            columns = {el.name: i for i, el in enumerate(layout.schema[1:])}
            if not any(name.startswith(KEY_PREFIX) for name in columns):
                # a thin-mode Paimon file: its key copies are its key columns
                columns.update({KEY_PREFIX + name: i for name, i in list(columns.items())})
            chunks = [c for group in layout.row_groups for c in group]
            if not chunks or any(c.offset_index is None or len(c.path) != 1 for c in chunks) \
                    or key_column not in columns:
                return None  # no page index: a file written before it
            key = columns[key_column]
            if any(group[key].column_index is None for group in layout.row_groups):
                return None
            spans = [c.offset_index for c in chunks] + [g[key].column_index for g in layout.row_groups]
            start = min(s[0] for s in spans if s is not None)
            end = max(s[0] + s[1] for s in spans if s is not None)
            if start < 0 or end - start > 256 << 20:
                raise MalformedFooter(f"the page index spans {end - start} bytes from offset {start}")
            region = read_exactly(f, start, end - start, path)
        decode = _bound_decoder(layout, key)
        if decode is None:
            return None
        index = _FileIndex(layout, columns, region, start,
                           list(itertools.accumulate(layout.row_counts, initial=0)), [], [], [], True)
        for g, group in enumerate(layout.row_groups):
            if layout.row_counts[g] == 0:
                continue
            where = group[key].column_index
            assert where is not None  # checked above
            nulls, lows, highs = column_index(index.slice(where))
            if len(nulls) != len(index.offsets(g, key)):
                raise MalformedFooter(f"row group {g}'s key column has {len(nulls)} page bounds and "
                                      f"{len(index.offsets(g, key))} pages")
            for p, (null, lo, hi) in enumerate(zip(nulls, lows, highs)):
                if not null:
                    index.pages.append((g, p))
                    index.mins.append(decode(lo))
                    index.maxs.append(decode(hi))
        index.ordered = all(a <= b for a, b in itertools.pairwise(index.mins)) and \
            all(a <= b for a, b in itertools.pairwise(index.maxs))
        return index
    except MalformedFooter as exc:
        raise corrupt_file(path, f"the Parquet page index is malformed: {exc}") from None
    except FileNotFoundError:
        raise CorruptTableError(f"data file {meta.file_name} of table {table_path(storage)} is missing",
                                path=path) from None
    except StorageError:
        raise
    except OSError as exc:
        raise corrupt_file(path, f"cannot be read ({exc})") from None


def _decode(f: Any, path: str, index: _FileIndex, group: int, columns: list[str], first: int, end: int,
            types: dict[str, pa.DataType]) -> pa.Table:
    """Rows [first, end) of a row group, in `columns`: only the pages holding them are read and
    decoded (columns whose pages span the same rows share one small Parquet file)."""
    layout = index.layout
    rows_in_group = layout.row_counts[group]
    plans = []
    for name in columns:
        c = index.columns[name]
        pages = index.offsets(group, c)
        starts = [p.first_row for p in pages]
        p0 = bisect.bisect_right(starts, first) - 1
        p1 = bisect.bisect_right(starts, end - 1) - 1
        span = (starts[p0], starts[p1 + 1] if p1 + 1 < len(pages) else rows_in_group)
        chunk: ColumnChunk = layout.row_groups[group][c]
        dictionary = chunk.dictionary_page_offset
        if dictionary is None and chunk.data_page_offset < pages[0].offset:
            dictionary = chunk.data_page_offset  # a writer that did not record the dictionary's offset
        dict_range = (dictionary, pages[0].offset - dictionary) if dictionary is not None else (0, 0)
        data_range = (pages[p0].offset, pages[p1].offset + pages[p1].size - pages[p0].offset)
        plans.append((name, c, chunk, span, dict_range, data_range))
    ranges = [r for plan in plans for r in (plan[4], plan[5])]
    if any(r[1] < 0 or r[1] > 1 << 30 for r in ranges):
        raise MalformedFooter("a page range of the page index is negative or too large")
    views = read_ranges(f, ranges, path)
    by_span: dict[tuple[int, int], list[tuple[str, PageRun]]] = {}
    for i, (name, c, chunk, span, _, _) in enumerate(plans):
        run = PageRun(chunk, layout.schema_bytes[c + 1], views[2 * i], views[2 * i + 1], span[1] - span[0])
        by_span.setdefault(span, []).append((name, run))
    decoded: dict[str, pa.ChunkedArray] = {}
    for span, named in by_span.items():
        # rows up to the last one wanted, as one batch: values past it are not decoded (and a
        # batch read decodes plain strings several times faster than read_row_group does here)
        need = end - span[0]
        reader = pq.ParquetFile(pa.BufferReader(page_file([run for _, run in named])))
        batch = next(reader.iter_batches(batch_size=need, use_threads=False), None)
        if batch is None or batch.num_rows != need:
            raise MalformedFooter(f"pages of rows {span[0]}-{span[1]} of row group {group} decode to fewer "
                                  f"than {need} rows")
        table = pa.Table.from_batches([batch.slice(first - span[0], end - first)])
        for (name, _), column in zip(named, table.columns):
            decoded[name] = column if column.type == types[name] else column.cast(types[name])
    return pa.table([decoded[n] for n in columns], names=columns)


def _file_rows(directory: TableDirectory, meta: DataFileMeta, keys: list[tuple], columns: list[str],
               types: dict[str, pa.DataType]) -> list[pa.Table] | None:
    """The rows of one data file holding one of `keys`, in `columns` (the file's names, the
    table's stored types, sequence numbers shifted, deleted rows dropped), in file order, as
    tables of one page each (none when no row holds a key); None when the file has no usable
    page index."""
    ts = directory.schema
    storage = directory.storage
    file_key = ts.file_key
    if meta.origin is not None and not meta.origin.plain and not meta.origin.thin:
        # checked before the cache: whether a Paimon file reads as it is depends on the read's
        # schema (time travel), and the cache is keyed by the file alone
        return None
    index = _cached(source_of(storage, meta), _indexes,
                    lambda: _load_index(storage, meta, file_key[0]), "point-index")
    if index is None:
        return _row_group_rows(directory, meta, keys, columns)
    if any(c not in index.columns for c in columns):
        return None
    key_type = types[file_key[0]]
    wanted: dict[int, list[tuple]] = {}
    for key in keys:
        try:
            if meta.min_key and not (tuple(meta.min_key) <= key <= tuple(meta.max_key)):
                continue  # the manifest's key range rules it out
        except TypeError:
            pass  # values Python cannot order against each other: the page index decides
        for i in index.candidates(_physical_key(key_type, key[0])):
            wanted.setdefault(i, []).append(key)
    if not wanted:
        return []
    file = source_of(storage, meta)
    path = str(file)
    # a key page keeps the sequence (and kind) pages of its rows too when the lookup asks for
    # them: a lookup over several runs compares versions by them before it decodes any value,
    # and a large page (pypaimon's are up to 1 MiB) decodes slowly
    cached = file_key + [c for c in (SEQUENCE_COLUMN, KIND_COLUMN) if c in columns]
    values = [c for c in columns if c not in cached]
    deleted = deleted_of(storage, meta)
    pieces = []
    try:
        with _open(file) as f:
            for i in sorted(wanted):
                group, page = index.pages[i]
                pages = index.offsets(group, index.columns[file_key[0]])
                first = pages[page].first_row
                end = pages[page + 1].first_row if page + 1 < len(pages) else index.layout.row_counts[group]
                key_page = _key_pages.get_keyed(
                    (index.token, group, page, tuple(cached)),
                    functools.partial(_key_page, f, path, index, group, cached, first, end, types))
                key_rows = key_page.rows
                hits = _matches(key_page, file_key, wanted[i])
                if deleted is not None and hits.size:
                    hits = hits[~np.isin(hits + index.row_starts[group] + first, deleted)]
                if not hits.size:
                    continue
                low, high = int(hits[0]), int(hits[-1]) + 1
                together = high - low == hits.size  # the usual case: one key's rows, side by side
                rows = key_rows.slice(low, high - low) if together else key_rows.take(pa.array(hits))
                if values:
                    rest = _decode(f, path, index, group, values, first + low, first + high, types)
                    if not together:
                        rest = rest.take(pa.array(hits - low))
                    for name in values:
                        rows = rows.append_column(name, rest.column(name))
                pieces.append(rows.select(columns))
    except MalformedFooter as exc:
        raise corrupt_file(path, f"the Parquet page index is malformed: {exc}") from None
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(storage, meta, path, exc) from None
    return _as_recorded(meta, columns, pieces)


def _unreadable(storage: Store, meta: DataFileMeta, path: str, exc: BaseException) -> BaseException:
    """The error for a data file a lookup cannot read: missing or damaged (CorruptTableError),
    or the store's own error (unreachable, refused: not a damaged file)."""
    if isinstance(exc, FileNotFoundError):
        return CorruptTableError(f"data file {meta.file_name} of table {table_path(storage)} is missing", path=path)
    if isinstance(exc, StorageError):
        return exc
    return corrupt_file(path, f"is unreadable: {exc}")


def _as_recorded(meta: DataFileMeta, columns: list[str], pieces: list[pa.Table]) -> list[pa.Table]:
    """A file's rows as its manifest entry says they are: its columns in the read schema's types."""
    if meta.origin is not None:
        pieces = [pa.Table.from_batches([meta.origin.conform(b) for b in t.to_batches()]) if t.num_rows else t
                  for t in pieces]
    return pieces


# a file without a page index holding a row group this large (pypaimon's writers make one per
# file) is searched by its row groups' cached key columns, each decoded only up to the last row
# found; files of smaller row groups are read normally (statistics narrow them to a few rows)
LARGE_ROW_GROUP = 65536


def _row_group_rows(directory: TableDirectory, meta: DataFileMeta, keys: list[tuple],
                    columns: list[str]) -> list[pa.Table] | None:
    """`_file_rows` for a file without a page index whose row groups are large: the key columns
    of each row group that can hold a key (by its statistics) are decoded once and kept, the
    keys found in them, and the other columns decoded from the row group's start only up to the
    last row found (decoding streams page by page).  None: a file this cannot search (small or
    nested row groups, a Paimon file read through its mapping)."""
    ts = directory.schema
    storage = directory.storage
    file_key = ts.file_key
    if meta.origin is not None and not meta.origin.plain:
        return None
    file = source_of(storage, meta)
    path = str(file)
    try:
        metadata = file_metadata(storage, meta)
        names = metadata.schema.names
        if any(c not in names for c in columns) or len(names) != metadata.num_columns:
            return None  # a column the file lacks, or nested columns: read normally
        groups = range(metadata.num_row_groups)
        if not any(metadata.row_group(g).num_rows > LARGE_ROW_GROUP for g in groups):
            return None  # small row groups: their statistics narrow a lookup to a few rows already
        first_key = names.index(file_key[0])
        values = [c for c in columns if c not in file_key]
        deleted = deleted_of(storage, meta)
        starts = list(itertools.accumulate((metadata.row_group(g).num_rows for g in groups), initial=0))
        pieces = []
        for g in groups:
            statistics = metadata.row_group(g).column(first_key).statistics
            wanted = [k for k in keys if _within(statistics, k[0])]
            if not wanted:
                continue
            key_page = _cached(file, _key_pages, functools.partial(_row_group_keys, file, g, file_key),
                               "row-group", g, tuple(file_key))
            hits = _matches(key_page, file_key, wanted)
            if deleted is not None and hits.size:
                hits = hits[~np.isin(hits + starts[g], deleted)]
            if not hits.size:
                continue
            high = int(hits[-1]) + 1
            rows = key_page.rows.take(pa.array(hits))
            if values:
                rest = _rows_up_to(file, g, values, high).take(pa.array(hits))
                for name in values:
                    rows = rows.append_column(name, rest.column(name))
            pieces.append(rows.select(columns))
    except (OSError, pa.ArrowException) as exc:
        raise _unreadable(storage, meta, path, exc) from None
    return _as_recorded(meta, columns, pieces)


def _within(statistics: Any, value: Any) -> bool:
    """Whether a row group's statistics of the first key column admit `value` (True when they
    cannot say)."""
    if statistics is None or not statistics.has_min_max:
        return True
    try:
        return bool(statistics.min <= value <= statistics.max)
    except TypeError:
        return True


def _parquet_file(file: str | StoredFile) -> pq.ParquetFile:
    if isinstance(file, StoredFile):
        return pq.ParquetFile(file.open(), pre_buffer=True)
    return pq.ParquetFile(file, pre_buffer=False)


def _row_group_keys(file: str | StoredFile, group: int, file_key: list[str]) -> _KeyPage:
    rows = _parquet_file(file).read_row_group(group, columns=file_key, use_threads=False).combine_chunks()
    return _KeyPage.of(rows, len(file_key))


def _rows_up_to(file: str | StoredFile, group: int, columns: list[str], end: int) -> pa.Table:
    """Rows [0, end) of a row group in `columns`, decoding no further than needed."""
    batches, rows = [], 0
    for batch in _parquet_file(file).iter_batches(batch_size=8192, row_groups=[group], columns=columns,
                                                  use_threads=False):
        batches.append(batch)
        rows += batch.num_rows
        if rows >= end:
            break
    return pa.Table.from_batches(batches).slice(0, end)


@dataclass
class _KeyPage:
    """A key page's key columns (then any sequence and kind columns), and the first one as a
    NumPy array when it alone is the key and is an ascending integer column (then a key's rows
    are found by binary search)."""

    rows: pa.Table
    ints: np.ndarray | None

    @classmethod
    def of(cls, rows: pa.Table, key_columns: int) -> _KeyPage:
        column = rows.column(0)
        if key_columns == 1 and pa.types.is_integer(column.type) and column.null_count == 0:
            values = column.to_numpy()
            if values.size < 2 or bool(np.all(values[1:] >= values[:-1])):
                return cls(rows, values)
        return cls(rows, None)


def _key_page(f: Any, path: str, index: _FileIndex, group: int, cached: list[str], first: int, end: int,
              types: dict[str, pa.DataType]) -> _KeyPage:
    """A page's key columns (then its sequence and kind columns, `cached`), decoded once."""
    rows = _decode(f, path, index, group, cached, first, end, types)
    return _KeyPage.of(rows, sum(c not in (SEQUENCE_COLUMN, KIND_COLUMN) for c in cached))


def _matches(page: _KeyPage, file_key: list[str], keys: list[tuple]) -> np.ndarray:
    """Positions (ascending) of the rows of a key page equal to one of `keys`."""
    if page.ints is not None:
        ints = page.ints
        spans = [(int(np.searchsorted(ints, k[0], "left")), int(np.searchsorted(ints, k[0], "right")))
                 for k in sorted(keys)]
        return np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in spans]) if spans \
            else np.empty(0, dtype=np.int64)
    mask = None
    for key in keys:
        one = None
        for name, value in zip(file_key, key):
            column = page.rows.column(name)
            eq = pc.equal(column, pa.scalar(value, column.type))
            one = eq if one is None else pc.and_(one, eq)
        mask = one if mask is None else pc.or_(mask, one)
    assert mask is not None
    return np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))
