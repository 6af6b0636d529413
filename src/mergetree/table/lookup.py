"""Local lookup files of immutable data files (what Paimon's `lookup` changelog producer and
lookup compaction keep): finding a few keys' rows in a bucket without decoding its files again.

A data file never changes under its name, so its rows are decoded once, written as an
uncompressed Arrow IPC file in a local cache directory and memory-mapped from then on; a probe
of keys finds their rows by binary search on the first key column (one integer column) or an
Arrow hash lookup (any other type), and copies only those rows.  The cache file holds the file
as stored: every row (its deletion vector is applied at probe time) and the sequence numbers as
written, so one cache file serves every snapshot that holds the data file.

The directory is `$MERGETREE_LOOKUP_DIR`, or `mergetree-lookup` in the system's temporary
directory; shared by every table and process.  A cache file's name hashes the table's location,
the data file's name and size and the schema it was decoded in: a data file replaced under its
name (another size) or decoded for another schema is never confused with it.  What is mapped is
checked (an IPC file that opens, the expected schema and row count); anything else is rebuilt,
so a wiped directory or a damaged file costs a rebuild, never a wrong answer.  Files are
written under a temporary name and renamed into place (concurrent processes build the same
file at worst twice).

Eviction (at each build): files unused for `lookup.cache-file-retention` (default 1 h) go, then
the least recently used ones until the directory is within `lookup.cache-max-disk-size`
(default: unlimited, as Paimon's; the retention bounds what an idle table leaves behind).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..merge import merge
from ..merge.row_kind import retraction_kinds
from ..storage import Store
from .directory import TableDirectory
from .files import DataFileMeta, deleted_of, read_data_file
from .objects import table_path
from .read.plan import sections_of
from .schema import KIND_COLUMN, SEQUENCE_COLUMN

__all__ = ["DEFAULT_RETENTION", "LOOKUP_DIR_ENV", "SMALL_FILE_BYTES", "LookupCache", "lookup_cache", "lookup_directory",
           "lookup_state"]

LOOKUP_DIR_ENV = "MERGETREE_LOOKUP_DIR"
DEFAULT_RETENTION = dt.timedelta(hours=1)
_SUFFIX = ".arrow"
_ROWS_KEY = b"mergetree.lookup.rows"
# a use refreshes a cache file's modification time (its LRU age) at most this often
_TOUCH_SECONDS = 30.0
# a data file smaller than this is decoded into memory (kept up to SMALL_MEMORY_BYTES of them)
# instead of written out as a lookup file: level-0 files live until the next compaction, and
# writing and mapping one costs more than decoding it (lookup producer writes at 1M rows: see
# docs)
SMALL_FILE_BYTES = 1 << 20
SMALL_MEMORY_BYTES = 256 << 20
# mapped files kept open in this process (each costs a file descriptor and address space only)
_OPEN_FILES = 256


def lookup_directory() -> str:
    """Where lookup files are kept: `$MERGETREE_LOOKUP_DIR`, or `mergetree-lookup` in the
    system's temporary directory."""
    return os.environ.get(LOOKUP_DIR_ENV) or os.path.join(tempfile.gettempdir(), "mergetree-lookup")


class _Mapped:
    """One validated, memory-mapped lookup file."""

    def __init__(self, path: str, table: pa.Table, first_key: str) -> None:
        self.path = path
        self.table = table
        self.touched = time.time()
        column = table.column(first_key)
        self.sorted: np.ndarray | None = None
        # binary search needs plain integers, no nulls, ascending (data files are sorted by
        # key; checked rather than assumed)
        if pa.types.is_integer(column.type) and column.null_count == 0 and table.num_rows:
            values = column.combine_chunks().to_numpy() if column.num_chunks != 1 else column.chunk(0).to_numpy()
            if values.size < 2 or bool(np.all(values[1:] >= values[:-1])):
                self.sorted = values

    def positions(self, first_key: str, keys: pa.Array) -> np.ndarray:
        """The rows (positions, ascending) whose first key column is one of `keys`."""
        if self.sorted is not None and pa.types.is_integer(keys.type) and keys.null_count == 0:
            if _fits(keys, self.sorted.dtype):
                wanted = keys.to_numpy().astype(self.sorted.dtype, copy=False)
                if wanted.size > 1 and not bool(np.all(wanted[1:] > wanted[:-1])):
                    wanted = np.unique(wanted)  # sorted and distinct, or a key's rows come twice
                low = np.searchsorted(self.sorted, wanted, "left")
                high = np.searchsorted(self.sorted, wanted, "right")
                hit = high > low
                low, high = low[hit], high[hit]
                if not low.size:
                    return np.empty(0, dtype=np.int64)
                counts = high - low
                if bool(np.all(counts == 1)):
                    return low.astype(np.int64)
                # each range [low, high) spelled out
                starts = np.repeat(low - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
                return (starts + np.arange(int(counts.sum()))).astype(np.int64)
        column = self.table.column(first_key)
        mask = pc.fill_null(pc.is_in(column, value_set=keys.cast(column.type), skip_nulls=True), False)
        return np.flatnonzero(mask.to_numpy(zero_copy_only=False)).astype(np.int64)


def _fits(keys: pa.Array, dtype: np.dtype) -> bool:
    """Do the key values all fit the column's integer type (else the hash lookup)?"""
    if not len(keys):
        return True
    info = np.iinfo(dtype)
    bounds = pc.min_max(keys)
    return info.min <= bounds["min"].as_py() and bounds["max"].as_py() <= info.max


class LookupCache:
    """Lookup files in `directory` (None: `lookup_directory()` at each use), at most
    `max_disk_size` bytes of them (None: unlimited), each dropped when unused for `retention`;
    data files under `small_file_bytes` are kept decoded in memory instead.  Thread-safe."""

    def __init__(self, directory: str | None = None, max_disk_size: int | None = None,
                 retention: dt.timedelta | None = DEFAULT_RETENTION, small_file_bytes: int = SMALL_FILE_BYTES,
                 build_on_first_need: bool = True) -> None:
        self._directory = directory
        # False: a lookup file is built the second time this process needs it: a
        # one-off change read (the CLI) decodes the file as a read would, without paying for
        # writing a lookup file it would never use again; a writer or reader that comes back
        # builds it once and is served from it from then on
        self.build_on_first_need = build_on_first_need
        self._needed: set[str] = set()
        self.small_file_bytes = small_file_bytes
        self.max_disk_size = max_disk_size
        self.retention = retention
        self._open: OrderedDict[str, _Mapped] = OrderedDict()
        self._small: OrderedDict[str, _Mapped] = OrderedDict()  # small files' rows, decoded, in memory
        self._small_bytes = 0
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        self.builds = 0  # lookup files this process built (what tests and benches count)

    @property
    def directory(self) -> str:
        return self._directory or lookup_directory()

    def configure(self, max_disk_size: int | None, retention: dt.timedelta | None) -> None:
        """The limits of the table using the cache now (the last caller's apply to the next sweep)."""
        self.max_disk_size, self.retention = max_disk_size, retention

    def path_of(self, storage: Store, meta: DataFileMeta, schema: pa.Schema) -> str:
        digest = hashlib.sha256()
        for part in (table_path(storage), meta.file_name, str(meta.file_size)):
            digest.update(part.encode())
            digest.update(b"\0")
        digest.update(schema.serialize().to_pybytes())
        return os.path.join(self.directory, digest.hexdigest() + _SUFFIX)

    def rows(self, storage: Store, meta: DataFileMeta, schema: pa.Schema, first_key: str,
             keys: pa.Array) -> pa.Table:
        """The live rows of data file `meta` (columns `schema`: the stored types of the data-file
        layout's columns, the sequence among them) whose column `first_key` is one of `keys`, in
        file order."""
        mapped = self._mapped(storage, meta, schema, first_key)
        positions = mapped.positions(first_key, keys)
        deleted = deleted_of(storage, meta) if positions.size else None
        if deleted is not None:
            positions = positions[~np.isin(positions, deleted, assume_unique=True)]
        return mapped.table.take(pa.array(positions))

    # -- files ---------------------------------------------------------------------------
    def _mapped(self, storage: Store, meta: DataFileMeta, schema: pa.Schema, first_key: str) -> _Mapped:
        path = self.path_of(storage, meta, schema)
        small = meta.file_size < self.small_file_bytes
        with self._lock:
            hit = (self._small if small else self._open).get(path)
            if hit is not None:
                (self._small if small else self._open).move_to_end(path)
                building = None
            else:
                building = self._building.setdefault(path, threading.Lock())
        if hit is not None:
            if not small:
                self._touch(hit)
            return hit
        assert building is not None
        try:
            with building:  # one thread builds a file; the others wait for it
                with self._lock:
                    hit = (self._small if small else self._open).get(path)
                if hit is None and small:
                    hit = _Mapped(path, self._decode(storage, meta, schema).combine_chunks(), first_key)
                    self._keep_small(path, hit)
                elif hit is None:
                    hit = self._load(path, meta, schema, first_key)
                    if hit is None and not self.build_on_first_need and path not in self._needed:
                        # its first need in this process: decoded as a read would, nothing written
                        with self._lock:
                            self._needed.add(path)
                        return _Mapped(path, self._decode(storage, meta, schema).combine_chunks(), first_key)
                    if hit is None:
                        self._build(storage, meta, schema, path)
                        hit = self._load(path, meta, schema, first_key)
                        if hit is None:  # the directory is not usable: served from memory this once
                            return _Mapped(path, self._decode(storage, meta, schema).combine_chunks(), first_key)
                    with self._lock:
                        self._open[path] = hit
                        while len(self._open) > _OPEN_FILES:
                            self._open.popitem(last=False)
        finally:
            with self._lock:
                self._building.pop(path, None)
        if not small:
            self._touch(hit)
        return hit

    def _keep_small(self, path: str, decoded: _Mapped) -> None:
        size = decoded.table.nbytes
        with self._lock:
            old = self._small.pop(path, None)
            if old is not None:
                self._small_bytes -= old.table.nbytes
            self._small[path] = decoded
            self._small_bytes += size
            while len(self._small) > 1 and self._small_bytes > SMALL_MEMORY_BYTES:
                _, dropped = self._small.popitem(last=False)
                self._small_bytes -= dropped.table.nbytes

    def _load(self, path: str, meta: DataFileMeta, schema: pa.Schema, first_key: str) -> _Mapped | None:
        """The lookup file at `path`, mapped, if it is whole and what is expected; else None
        (a damaged one is removed)."""
        try:
            source = pa.memory_map(path, "r")
        except OSError:
            return None
        try:
            table = pa.ipc.open_file(source).read_all()
            rows = (table.schema.metadata or {}).get(_ROWS_KEY)
            if table.schema.remove_metadata() != schema or rows != str(meta.row_count).encode() \
                    or table.num_rows != meta.row_count:
                raise ValueError("not the expected lookup file")
        except (OSError, ValueError, pa.ArrowException):
            source.close()
            _remove(path)
            return None
        return _Mapped(path, table, first_key)

    def _decode(self, storage: Store, meta: DataFileMeta, schema: pa.Schema) -> pa.Table:
        """Every row of the data file as stored (no deletion vector)."""
        raw = meta.every_row()
        batches = [b.cast(schema) for b in read_data_file(storage, raw, columns=schema.names)]
        return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()

    def _build(self, storage: Store, meta: DataFileMeta, schema: pa.Schema, path: str) -> None:
        table = self._decode(storage, meta, schema)
        # one chunk: a take (and the key column's search) over several chunks would join them
        # on every probe
        table = table.combine_chunks().replace_schema_metadata({_ROWS_KEY: str(meta.row_count).encode()})
        directory = os.path.dirname(path)
        temporary = os.path.join(directory, f".{uuid.uuid4().hex}.tmp")
        try:
            os.makedirs(directory, exist_ok=True)
            with pa.OSFile(temporary, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table, max_chunksize=max(table.num_rows, 1))
            os.replace(temporary, path)
        except OSError:
            _remove(temporary)
            return
        with self._lock:
            self.builds += 1
        self._sweep(directory, keep=path)

    def _touch(self, mapped: _Mapped) -> None:
        now = time.time()
        if now - mapped.touched > _TOUCH_SECONDS:
            mapped.touched = now
            try:
                os.utime(mapped.path)
            except OSError:
                pass  # evicted: rebuilt when next opened

    def _sweep(self, directory: str, keep: str) -> None:
        """Drop files unused for the retention, then the least recently used ones over the
        disk budget (never `keep`, just built)."""
        now = time.time()
        files = []
        try:
            with os.scandir(directory) as entries:
                for e in entries:
                    if not e.name.endswith(_SUFFIX) and not e.name.endswith(".tmp"):
                        continue
                    try:
                        st = e.stat()
                    except OSError:
                        continue
                    files.append((st.st_mtime, st.st_size, e.path))
        except OSError:
            return
        expired = self.retention.total_seconds() if self.retention is not None else None
        kept = []
        for mtime, size, path in files:
            if path != keep and expired is not None and now - mtime > expired:
                self._forget(path)
            else:
                kept.append((mtime, size, path))
        if self.max_disk_size is None:
            return
        total = sum(size for _, size, _ in kept)
        for _, size, path in sorted(kept):
            if total <= self.max_disk_size:
                break
            if path == keep:
                continue
            self._forget(path)
            total -= size

    def _forget(self, path: str) -> None:
        with self._lock:
            self._open.pop(path, None)  # a mapping still in use stays valid after the unlink
        _remove(path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


_cache = LookupCache(build_on_first_need=False)


def lookup_cache() -> LookupCache:
    """The process-wide lookup cache."""
    return _cache


def lookup_state(directory: TableDirectory, files: Sequence[DataFileMeta], columns: Sequence[str], keys: pa.Array,
                 cache: LookupCache | None = None) -> pa.Table:
    """The merged rows (table `columns`, in key order) of one bucket whose live data files are
    `files`, for the keys whose first key column is one of `keys`: each file probed in its
    lookup file, then merged as the read path merges them (`read_bucket`: the same sections,
    a section of one sorted run final but for its retractions, several merged with the table's
    engine by sequence number, deletion vectors applied to each file first)."""
    ts = directory.schema
    options = directory.options
    if cache is None:  # the process-wide cache, within the limits of the table using it
        cache = lookup_cache()
        cache.configure(options.lookup_cache_max_disk_size, options.lookup_cache_file_retention)
    primary = set(ts.primary_key)
    values = [c for c in columns if c not in primary]
    stored = ts.file_schema
    schema = pa.schema([stored.field(c) for c in ts.file_key + [SEQUENCE_COLUMN, KIND_COLUMN] + values])
    first = ts.file_key[0]
    keys = keys.cast(schema.field(first).type)
    out_schema = pa.schema([ts.schema.field(c) for c in columns])
    names = [ts.file_key[ts.primary_key.index(c)] if c in primary else c for c in columns]
    aggregations = {c: f for c, f in (options.aggregations or {}).items() if c in set(values)}
    parts = []
    for section in sections_of(list(files)):
        runs = []
        for run in section:
            found = [cache.rows(directory.storage, m, schema, first, keys) for m in run]
            runs.append(pa.concat_tables(found) if len(found) > 1 else found[0])
        if not any(r.num_rows for r in runs):
            continue
        retractions = any(m.holds_retractions for run in section for m in run)
        if len(runs) == 1:  # one sorted run: its rows are final, only retractions go
            rows = runs[0]
            if retractions:
                rows = rows.filter(pc.invert(pc.is_in(rows.column(KIND_COLUMN), retraction_kinds())))
        else:
            if not retractions:
                runs = [r.drop_columns([KIND_COLUMN]) for r in runs]
            rows = merge(runs, ts.file_key, sequence=SEQUENCE_COLUMN, kind=KIND_COLUMN if retractions else None,
                         engine=ts.merge_engine, aggregations=aggregations or None).read_all()
        parts.append(pa.Table.from_arrays([rows.column(n) for n in names], schema=out_schema))
    if not parts:
        return out_schema.empty_table()
    return pa.concat_tables(parts)
