"""Compacting a Paimon primary-key table with the loser tree, committed as Paimon does it.

Per (partition, bucket): the files by level (`Levels`), a unit chosen by Paimon's universal
compaction rules (`pick`; `full=True`: everything into the highest level) and, file by file,
rewrite or metadata-only upgrade (`plan_rewrite`) — the same planner mergetree's own tables
use.  Rewritten runs stream through `merge_runs` into new Parquet files in the input's layout
(rolled at target-file-size; retractions dropped only when the output is the oldest data),
beside the bucket's files or, with ``data-file.external-paths``, under the roots as Paimon's
strategy picks them (`Placement`).

The commit is a Paimon ``COMPACT`` snapshot: one new manifest (a DELETE entry for every input,
copied from the entry that added it, an ADD entry for every output, an upgrade is both), a
base manifest list (the previous snapshot's base and delta manifests) and a delta list (the
new manifest), written like the table's own metadata files (`manifest_files.template_for`:
its ``manifest.format``, Avro or ORC, and its writer's schemas); then
``snapshot/snapshot-<N+1>`` is created by the store's conditional create (`Store.create`:
exclusive create locally, ``If-None-Match: *`` on S3, ...; it fails if another committer took
that id; a store without one refuses before anything is written) and the ``LATEST`` hint
updated.  Losing the race to a commit that kept every input file retries on top of it; a
commit that removed an input raises `CompactionConflictError` and everything written is
removed.  Every file goes through the table's store (`PaimonTable.storage`; an external root's
through its own, `PaimonTable.external_store`): data files and manifests stream up through
`open_output` (multipart uploads on object stores) and appear, whole, when they are closed.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import posixpath
import random
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..codec.binary_row import encode_row
from ..codec.file_index import (
    BLOOM_FILTER,
    DEFAULT_BLOOM_FPP,
    DEFAULT_BLOOM_ITEMS,
    ValueTooLarge,
    encode_bitmap,
    encode_bloom,
    encode_container,
)
from ..codec.stats import StatsMode, stats_modes
from ..errors import (
    CorruptTableError,
    InvalidArgumentError,
    UnsupportedPaimonFeatureError,
)
from ..storage import Store
from ..table.compaction.planner import (
    CompactionOptions,
    CompactionPlan,
    CompactUnit,
    RewriteGroup,
    force_pick_level0,
    full_compaction,
    parse_memory_size,
    pick,
    plan_rewrite,
    restored_levels,
)
from ..table.compaction.runner import compact_buckets
from ..table.files import dictionary_worthy
from ..table.objects import locate
from ..table.options import KEY_COMPRESSION, KEY_COMPRESSION_PER_LEVEL, parse_codec, parse_codec_levels
from ..table.paimon.commit import IndexChange, commit_files, has_value_stats, new_index_name, remove_files, simple_stats
from ..table.paimon.files import check_evolvable, may_hold_retractions
from ..table.paimon.metadata import (
    ADD,
    DELETE,
    KIND_COLUMN,
    SEQUENCE_COLUMN,
    PaimonFile,
    PaimonSchema,
    PaimonTable,
    bucket_directory_of,
    external_location,
    partition_path,
)
from ..table.paimon.options import ExternalPaths, FileIndexSpec, external_paths, file_index_spec
from ..table.paimon.store import paimon_directory
from ..table.paimon.tables import engine_compacts
from ..table.snapshots import canonical_partition
from .read import PaimonBucket, PaimonReadPlan, batches_table, merge_runs
from .replaced import bucket_index, index_object, older_versions, replaced_positions

__all__ = ["BucketChange", "PaimonCompaction", "Placement", "commit_compaction", "compact", "compression_for",
           "plan_compaction", "rewrite_bucket", "run_compaction", "write_rolled"]

# rows per Parquet row group of a new file: large, as Paimon's writers make them (one per file up
# to parquet.block.size), since a Paimon read decodes whole files (8,192-row groups decoded ~1.5x
# slower) and key lookups in large row groups go through the cached key column
ROW_GROUP_ROWS = 131_072
FILE_SOURCE_COMPACT = 1

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class PaimonCompaction:
    """What one compaction will do: per (partition, bucket), the planner's decision."""

    table: PaimonTable
    snapshot: dict | None
    schema: PaimonSchema
    plans: tuple[tuple[PaimonBucket, CompactionPlan], ...]
    # where new data files go with `data-file.external-paths` (None: beside the bucket's files)
    external: ExternalPaths | None = None

    @property
    def rows_to_rewrite(self) -> int:
        return sum(f.row_count for _, p in self.plans for g in p.rewrites for f in g.files)

    @property
    def files_to_rewrite(self) -> int:
        return sum(len(g.files) for _, p in self.plans for g in p.rewrites)


def plan_compaction(warehouse: Any, table: Any, full: bool = False,
                    storage_options: Mapping[str, object] | None = None, only: set[tuple] | None = None,
                    opened: PaimonTable | None = None, force_level0: bool | None = None) -> PaimonCompaction | None:
    """Decide what to compact (no I/O beyond metadata); None when the table has no snapshot.
    `only`: the (partition values, bucket) pairs to consider (a write's), else every bucket.
    `force_level0`: when the rules pick nothing, level 0 still goes up (a write into a table
    whose reads skip level 0, as Java's lookup writers do); None: where Java's compaction needs
    lookup (deletion vectors, first-row)."""
    t = opened or PaimonTable.open(warehouse, table, storage_options)
    snap = t.resolve(None)
    if snap is None:
        return None
    schema = t.schema()
    opts = schema.checked_options
    if opts.append:
        raise UnsupportedPaimonFeatureError(
            f"Paimon table {t.name} is an append table: mergetree compacts primary-key tables (an append table's "
            f"compaction, merging small files, is not supported yet)")
    if opts.changelog_producer in ("lookup", "full-compaction"):
        raise UnsupportedPaimonFeatureError(
            f"Paimon option 'changelog-producer' = {opts.changelog_producer!r}: Paimon's compaction produces the "
            f"changelog of such tables, which mergetree does not; compact them with Paimon")
    options = CompactionOptions.from_options(schema.options)
    files = t.live_files(snap)
    # files of older schemas are read through the evolution mapping (as Paimon's
    # KeyValueFileReaderFactory reads them) and rewritten under the latest schema; a file only
    # moved to another level keeps its schema id.  Key columns cannot be retyped in Paimon: a
    # schema whose key differs is refused before anything is written.
    for schema_id in sorted({f.schema_id for f in files if f.schema_id != schema.id}):
        check_evolvable(t, t.schema(schema_id), schema)
    by_bucket: dict[tuple, list[PaimonFile]] = {}
    for f in files:
        if f.level == 0 and not f.delete_count and may_hold_retractions(t, f):
            # pypaimon records 0 retractions for level-0 files holding -D rows: such a file moved up
            # unchanged would keep them at a level whose files are read alone (deletion vectors)
            # or past the last level that drops them; it is planned as holding retractions
            f = dataclasses.replace(f, delete_count=f.row_count)
        by_bucket.setdefault((canonical_partition(f.partition), f.bucket), []).append(f)
    plans = []
    # a full compaction of a deletion-vector table purges every marked row: files with a vector are rewritten
    marked = t.deletion_files(snap) if full and opts.deletion_vectors else {}
    for (partition, bucket), bucket_files in sorted(by_bucket.items(), key=lambda kv: (repr(kv[0][0]), kv[0][1])):
        if only is not None and (canonical_partition(partition), bucket) not in only:
            continue
        levels, bucket_options = restored_levels(bucket_files, options)
        vectors = set(marked.get((bucket_files[0].partition_bytes, bucket), {}))
        unit = full_compaction(levels) if full else pick(levels, bucket_options)
        if unit is None and vectors:  # one run at the top already, its marked rows still in the files
            unit = CompactUnit(levels.max_level, tuple(levels.all_files()), True, "full")
        # Java's compaction of a table that needs lookup (deletion vectors, first-row) always
        # forces level 0 up (ForceUpLevel0Compaction): reads skip it until then
        lookup = opts.deletion_vectors or opts.engine == "first-row"
        forced = lookup if force_level0 is None else force_level0
        if unit is None and forced and not full:
            # reads leave level 0 out: compact it now, as Paimon's ForceUpLevel0Compaction does
            unit = force_pick_level0(levels, bucket_options)
        if unit is None:
            continue
        if opts.deletion_vectors and unit.output_level > 0 and not unit.drop_delete:
            # the versions a retraction replaces above the output are marked deleted: it has done its work
            unit = CompactUnit(unit.output_level, unit.files, True, unit.reason)
        plan = plan_rewrite(unit, bucket_options)
        if (opts.deletion_vectors or opts.engine == "first-row") and unit.output_level > 0:
            plan = _rewriting_level0(plan, bucket_files)
        if vectors:
            plan = _purging(plan, vectors)
        if plan.rewrites or plan.upgrades:
            plans.append((PaimonBucket(partition, bucket, tuple(bucket_files)), plan))
    external = external_paths(schema.options)
    if external is not None and plans:
        for root in external.roots:  # every root resolvable before anything is written
            _root_store(t, root)
    return PaimonCompaction(t, snap, schema, tuple(plans), external)


def _rewriting_level0(plan: CompactionPlan, bucket_files: list[PaimonFile]) -> CompactionPlan:
    """A deletion-vector table's plan without a file merely moved up that must be rewritten, as
    Paimon's lookup compaction rewrites it: one holding retractions (a level above 0 holds
    none), or a level-0 file whose keys files above the output level may hold (their versions
    must be looked up and marked deleted; a moved file would leave them visible).  A level-0
    file nothing above overlaps moves up as it is."""
    def above(f: PaimonFile) -> bool:
        return any(g.level > plan.output_level and not (g.max_key < f.min_key or g.min_key > f.max_key)
                   for g in bucket_files)
    moved = [f for f in plan.upgrades if f.delete_count or (f.level == 0 and above(f))]
    if not moved:
        return plan
    return replace(plan, upgrades=tuple(f for f in plan.upgrades if f not in moved),
                   rewrites=plan.rewrites + tuple(RewriteGroup((((f,),),)) for f in moved))


def _purging(plan: CompactionPlan, vectors: set[str]) -> CompactionPlan:
    """A full compaction's plan with every file that has a deletion vector rewritten (alone,
    its marked rows left out), not kept or moved: afterwards the bucket has no vectors."""
    kept = [f for f in (*plan.unchanged, *plan.upgrades) if f.file_name in vectors]
    if not kept:
        return plan
    return replace(plan, upgrades=tuple(f for f in plan.upgrades if f not in kept),
                   unchanged=tuple(f for f in plan.unchanged if f not in kept),
                   rewrites=plan.rewrites + tuple(RewriteGroup((((f,),),)) for f in kept))


def compact(warehouse: Any, table: Any, full: bool = False, progress: Progress | None = None,
            storage_options: Mapping[str, object] | None = None) -> int | None:
    """Compact a Paimon primary-key table: by Paimon's universal-compaction rules, or everything
    into one sorted run per bucket with ``full=True``.  Returns the id of the ``COMPACT``
    snapshot committed, or None when there was nothing to do.  `progress(rows_done,
    rows_total)` is called as rows are merged.  `warehouse` is a local directory or a URI
    with `storage_options` as `mergetree.paimon.read` takes them; the commit needs the store's
    conditional create (a store without one refuses before anything is written)."""
    if not isinstance(full, bool):
        raise InvalidArgumentError(f"full must be True or False, not {full!r}")
    t = PaimonTable.open(warehouse, table, storage_options)
    if engine_compacts(t.schema()):
        t.storage.require_conditional_create()  # never a commit that could replace another's
        snapshot = compact_buckets(paimon_directory(t), None, full, progress)
        return None if snapshot is None else snapshot.id
    return run_compaction(plan_compaction(warehouse, table, full, storage_options, opened=t), progress)


def run_compaction(job: PaimonCompaction | None, progress: Progress | None = None) -> int | None:
    """Carry out a planned compaction (`plan_compaction`) and commit it: the COMPACT
    snapshot's id, or None when there was nothing to do."""
    if job is None or not job.plans:
        return None
    job.table.storage.require_conditional_create()  # never a commit that could replace another's
    written: list[str] = []
    total, done = job.rows_to_rewrite, 0
    lock = threading.Lock()

    def advance(rows: int) -> None:
        nonlocal done
        with lock:
            done += rows
            if progress is not None:
                progress(done, total)
    if progress is not None:
        progress(0, total)
    try:
        # buckets in threads: the merge and the Parquet writer release the GIL
        workers = max(1, min(os.cpu_count() or 1, len(job.plans)))
        with ThreadPoolExecutor(workers, thread_name_prefix="paimon-compact") as pool:
            changes = list(pool.map(lambda bp: rewrite_bucket(job, bp[0], bp[1], written, advance), job.plans))
        return commit_compaction(job, changes, written)
    except BaseException:
        remove_files(job.table, written)
        raise


class BucketChange(NamedTuple):
    """What compacting one bucket changes: manifest entries to add and delete, and for a
    deletion-vector table whose vectors changed, the bucket's new index manifest entry (None:
    the bucket has no deleted rows any more)."""

    adds: list[dict]
    deletes: list[dict]
    index_changed: bool = False
    index_entry: dict | None = None
    partition: bytes = b""
    bucket: int = 0


def rewrite_bucket(job: PaimonCompaction, bucket: PaimonBucket, plan: CompactionPlan, written: list[str],
                   advance: Callable[[int], None] | None = None) -> BucketChange:
    """Carry out one bucket's plan.  Paths of new files (local paths or URIs,
    `PaimonTable.full`) are appended to `written` before they exist (the caller removes them
    on failure: `remove_files`).  In a deletion-vector table every input's vector is applied
    as it is read, and a rewrite into level N > 0 marks the versions it replaces above N."""
    vectors = job.schema.checked_options.deletion_vectors
    read_plan = PaimonReadPlan(job.table, job.snapshot, job.schema, job.schema.names, None, (bucket,), 0,
                               job.table.deletion_files(job.snapshot) if vectors else {})
    adds: list[dict] = []
    deletes: list[dict] = []
    replaced: dict[str, np.ndarray] = {}
    rewritten: list[PaimonFile] = []
    placement = Placement(job, bucket)
    # the replaced versions' values matter unless the newest version simply wins (deduplicate
    # by sequence number, every retraction applied): then they are only marked
    opts = job.schema.checked_options
    old_values = opts.engine != "deduplicate" or bool(opts.sequence_field) or opts.ignore_delete
    for group in plan.rewrites:
        runs = group.sorted_runs()
        inputs = sum(f.row_count for f in group.files)
        older = None
        seen_above: pa.Table | None = None
        if vectors and plan.output_level > 0:
            found = replaced_positions(read_plan, bucket, list(group.files), plan.output_level)
            if old_values:
                older = older_versions(read_plan, bucket, found)
            for name, positions in found.items():
                replaced[name] = np.union1d(replaced[name], positions) if name in replaced else positions
        elif opts.engine == "first-row" and plan.output_level > 0:
            # Java's lookup compaction of a first-row table: a key some file above already holds
            # keeps that (older) version; the new one is dropped, so no key is in two levels
            found = replaced_positions(read_plan, bucket, list(group.files), plan.output_level)
            above = older_versions(read_plan, bucket, found)
            if above:
                seen_above = batches_table(above).select(job.schema.key_columns)
        batches = merge_runs(read_plan, runs, keep_deletes=not plan.drop_delete, older=older)
        if seen_above is not None:
            batches = _without_keys(batches, seen_above, job.schema.key_columns)
        for entry in write_rolled(job, bucket, placement, batches, plan.output_level, written):
            adds.append(entry)
        if advance is not None:
            advance(inputs)
        deletes += [_as_delete(f) for f in group.files]
        rewritten += group.files
    for f in plan.upgrades:
        deletes.append(_as_delete(f))
        upgraded = dict(f.record)
        upgraded["_FILE"] = dict(f.record["_FILE"], _LEVEL=plan.output_level)
        upgraded["_KIND"] = ADD
        adds.append(upgraded)
    partition = bucket.files[0].partition_bytes
    if not vectors or not (replaced or any(read_plan.deletion_file(f) is not None for f in rewritten)):
        return BucketChange(adds, deletes, partition=partition, bucket=bucket.bucket)
    name = new_index_name()
    index = bucket_index(read_plan, bucket, rewritten, replaced, name)
    if index is None:
        return BucketChange(adds, deletes, True, None, partition, bucket.bucket)
    data, entry = index
    where = _index_file_object(job, bucket, name)
    written.append(job.table.full(where))
    job.table.storage.write(where, data)
    return BucketChange(adds, deletes, True, entry, partition, bucket.bucket)


def _index_file_object(job: PaimonCompaction, bucket: PaimonBucket, name: str) -> str:
    """A new index file's object path: ``index/``, or the bucket's directory when the table
    keeps index files there (``index-file-in-data-file-dir``), as Paimon's readers look."""
    if job.schema.options.get("index-file-in-data-file-dir", "false").strip().lower() == "true":
        return posixpath.join(bucket_directory_of(job.schema, bucket.partition, bucket.bucket, bucket.files), name)
    return index_object(name)


def _relative_bucket_path(job: PaimonCompaction, bucket: PaimonBucket) -> str:
    """Paimon's relative bucket path: ``[data-file.path-directory/][k=v/...]bucket-<n>``."""
    default = job.schema.options.get("partition.default-name", "__DEFAULT_PARTITION__")
    directory = job.schema.options.get("data-file.path-directory", "").strip("/")
    return posixpath.join(directory, partition_path(job.schema.partition_keys, bucket.partition, default),
                          f"bucket-{bucket.bucket}")


def _root_store(table: PaimonTable, root: str) -> Store:
    """The store of an external root (``file:`` roots are local directories)."""
    try:
        if root[:5].lower() == "file:":  # schemes are case-insensitive
            return locate(external_location(root), None, f"Paimon option 'data-file.external-paths' root {root!r}")
        return table.external_store(root.rstrip("/"))
    except (InvalidArgumentError, CorruptTableError) as exc:
        raise UnsupportedPaimonFeatureError(f"Paimon option 'data-file.external-paths': {exc}") from None


@dataclass(frozen=True)
class _Target:
    """Where one new data file goes: its store and name there, its path or URI (for `written`
    and messages) and the ``_EXTERNAL_PATH`` its manifest entry records (None: in the table)."""
    storage: Store
    name: str
    full: str
    external: str | None


class Placement:
    """Where a bucket's new data files go, as Paimon's `DataFilePathFactory` places them: beside
    the bucket's files, or with external paths under a root chosen per file —
    ``<root>/<relative bucket path>/<file>``, entropy-inject adding three 4-bit directories and
    the rest of a 20-bit murmur3 hash of the file name before ``<file>`` — and then the manifest
    entry records the full path (``file:/x`` for a local root, as Java's Path prints it)."""

    def __init__(self, job: PaimonCompaction, bucket: PaimonBucket) -> None:
        self.table = job.table
        self.external = job.external
        self.directory = _relative_bucket_path(job, bucket) if job.external is not None else \
            bucket_directory_of(job.schema, bucket.partition, bucket.bucket, bucket.files)
        # round-robin starts at a random root, entropy-inject at the first; both step before use
        self._position = random.randrange(len(job.external.roots)) \
            if job.external is not None and job.external.strategy == "round-robin" else 0

    def target(self, file_name: str) -> _Target:
        ext = self.external
        if ext is None:
            name = posixpath.join(self.directory, file_name)
            return _Target(self.table.storage, name, self.table.full(name), None)
        if ext.strategy == "weight-robin":
            root = random.choices(ext.roots, weights=ext.weights)[0]
        else:
            self._position = (self._position + 1) % len(ext.roots)
            root = ext.roots[self._position]
        name = posixpath.join(self.directory, file_name)
        if ext.strategy == "entropy-inject":
            name = posixpath.join(self.directory, entropy_directories(file_name), file_name)
        store = _root_store(self.table, root)
        if root[:5].lower() == "file:":  # schemes are case-insensitive
            local = os.path.join(external_location(root), *name.split("/"))
            return _Target(store, name, local, "file:" + local)
        uri = f"{root.rstrip('/')}/{name}"
        return _Target(store, name, uri, uri)


def entropy_directories(file_name: str) -> str:
    """Paimon's entropy-inject directories for a file: the low 20 bits of Guava's murmur3_32 of
    its UTF-8 name as a binary string (the sign bit set, so always 20 digits), split 4/4/4/8."""
    bits = format(_murmur3_32(file_name.encode("utf-8")) & 0xFFFFF, "020b")
    return "/".join((bits[0:4], bits[4:8], bits[8:12], bits[12:]))


def _murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3's x86 32-bit hash (the unsigned value)."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF
    c1, c2, h = 0xCC9E2D51, 0x1B873593, seed
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        h ^= rotl((k * c1) & 0xFFFFFFFF, 15) * c2 & 0xFFFFFFFF
        h = (rotl(h, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    tail = int.from_bytes(data[whole:], "little")
    if len(data) % 4:
        h ^= rotl((tail * c1) & 0xFFFFFFFF, 15) * c2 & 0xFFFFFFFF
    h ^= len(data)
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _without_keys(batches: Iterator[pa.RecordBatch], keys: pa.Table,
                  key_columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The batches without the rows whose key `keys` holds, in their order."""
    marked = keys.append_column("__above", pa.array(np.ones(keys.num_rows, dtype=bool)))
    for batch in batches:
        numbered = pa.Table.from_batches([batch]).select(key_columns).append_column(
            "__row", pa.array(np.arange(batch.num_rows, dtype=np.int64)))
        joined = numbered.join(marked, key_columns, join_type="left outer")
        keep = joined.filter(pc.is_null(joined.column("__above"))).column("__row").combine_chunks()
        kept = batch.take(keep.take(pc.sort_indices(keep)))  # the join does not keep the order
        if kept.num_rows:
            yield kept


def _as_delete(f: PaimonFile) -> dict:
    return dict(f.record, _KIND=DELETE)


# -- writing data files --------------------------------------------------------------------

class _StatsCollector:
    """Min, max and null count per column of the batches written (atomic columns only)."""

    def __init__(self, columns: list[str]) -> None:
        self.columns = columns
        self.lo: dict[str, Any] = {}
        self.hi: dict[str, Any] = {}
        self.nulls = dict.fromkeys(columns, 0)

    def add(self, batch: pa.RecordBatch) -> None:
        for c in self.columns:
            col = batch.column(c)
            self.nulls[c] += col.null_count
            if col.null_count == len(col):
                continue
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is None:
                continue
            if c not in self.lo or lo < self.lo[c]:
                self.lo[c] = lo
            if c not in self.hi or hi > self.hi[c]:
                self.hi[c] = hi


def compression_for(options: dict[str, str], level: int) -> tuple[str | None, int | None]:
    """The codec (and zstd level) Paimon's writers would use for a file at `level`:
    ``file.compression.per.level`` ("0:lz4,5:zstd") first, then ``file.compression``
    (default zstd), ``file.compression.zstd-level`` (default 1); parsed as mergetree's own
    tables parse the same options."""
    try:
        codec = parse_codec_levels(options.get(KEY_COMPRESSION_PER_LEVEL, ""), KEY_COMPRESSION_PER_LEVEL).get(level) \
            or parse_codec(options.get(KEY_COMPRESSION, "zstd"), KEY_COMPRESSION)
    except InvalidArgumentError as exc:
        raise UnsupportedPaimonFeatureError(f"Paimon {exc}") from None
    if codec == "none":
        return None, None
    try:
        zstd_level = int(options.get("file.compression.zstd-level", "1")) if codec == "zstd" else None
    except ValueError:
        raise UnsupportedPaimonFeatureError("Paimon option 'file.compression.zstd-level' is not an integer") from None
    return codec, zstd_level


class _FileWriter:
    """One output data file in the inputs' format (Parquet or ORC, by the first input's name),
    compressed as the table's options say, streamed through the store's `open_output`: the
    file appears, whole, at `close` (its size in bytes), and never after `abort`."""

    def __init__(self, storage: Store, name: str, fmt: str, schema: pa.Schema,
                 codec: tuple[str | None, int | None], dictionary: list[str] | bool = True) -> None:
        self.name = name
        compression, level = codec
        orc_codec = {"gzip": "zlib", None: "uncompressed"}.get(compression, compression)
        if fmt == "orc" and orc_codec == "brotli":
            raise UnsupportedPaimonFeatureError("Paimon option 'file.compression' = 'brotli': ORC has no brotli")
        self._sink = storage.open_output(name)
        try:
            if fmt == "orc":
                from pyarrow import orc
                self._orc: Any = orc.ORCWriter(self._sink, compression=orc_codec, stripe_size=64 * 2**20)
                self._parquet: pq.ParquetWriter | None = None
            else:
                self._orc = None
                self._parquet = pq.ParquetWriter(self._sink, schema, compression=compression or "none",
                                                 compression_level=level, use_dictionary=dictionary)
        except BaseException:
            self._sink.abort()
            raise

    def write(self, group: pa.Table) -> None:
        if self._parquet is not None:
            self._parquet.write_table(group, row_group_size=ROW_GROUP_ROWS)
        else:
            self._orc.write(group)

    @property
    def size(self) -> int:
        """Bytes written so far (the sink's: a row group is in it once written)."""
        return int(self._sink.tell())

    def close(self) -> int:
        (self._parquet or self._orc).close()
        size = self.size
        self._sink.close()  # the object appears, whole
        return size

    def abort(self) -> None:
        with contextlib.suppress(OSError, pa.ArrowException):
            (self._parquet or self._orc).close()
        self._sink.abort()


def write_rolled(job: PaimonCompaction, bucket: PaimonBucket, placement: Placement,
                 batches: Iterator[pa.RecordBatch], level: int, written: list[str],
                 file_source: int = FILE_SOURCE_COMPACT, prefix: str = "data-",
                 file_columns: list[str] | None = None) -> Iterator[dict]:
    """Key-ordered batches of the data-file layout (one version of a key per file) written as
    the bucket's new data files at `level`, rolled at target-file-size; yields each file's
    manifest entry (`file_source`: APPEND for a write's level-0 files, COMPACT for a
    compaction's).  Paths go into `written` before the files exist (`remove_files`).
    `file_columns`: the columns the files hold (an append table's: its own, no _KEY_, sequence
    or kind columns, whose batches still carry them for the entry's sequence range)."""
    schema = job.schema
    target = CompactionOptions.from_options(schema.options).target_file_size
    key_columns = schema.key_columns
    modes = dict(zip(schema.names, stats_modes(schema.options, schema.names)))
    stat_names = [f.name for f in schema.fields if has_value_stats(f.type) and modes[f.name].kind != "none"]
    if bucket.files:  # the inputs' format (a table may have changed `file.format` since)
        fmt = "orc" if bucket.files[0].file_name.endswith(".orc") else "parquet"
    else:
        fmt = schema.checked_options.file_format
    codec = compression_for(schema.options, level)
    indexes = file_index_spec(schema.options, {f.name: f.type for f in schema.fields}) \
        if prefix == "data-" else FileIndexSpec()  # changelog files are read in order: no index, as in Java
    writer: _FileWriter | None = None
    state: dict[str, Any] = {}

    placed: _Target | None = None

    def start(first: pa.Table) -> _FileWriter:
        nonlocal state, placed
        placed = placement.target(f"{prefix}{uuid.uuid4()}-0.{fmt}")
        written.append(placed.full)  # before the file exists: a failure while opening it still removes it
        # a dictionary only for columns whose first rows repeat (never keys or sequence numbers):
        # on distinct values it triples the writer's time and grows the file, as parquet-mr's
        # own fallback to plain pages avoids
        stored = first.select(file_columns) if file_columns is not None else first
        dictionary = dictionary_worthy(stored, {*key_columns, *schema.trimmed_keys, SEQUENCE_COLUMN})
        w = _FileWriter(placed.storage, placed.name, fmt, stored.schema, codec, dictionary)
        state = {"rows": 0, "first": None, "last": None, "min_seq": None, "max_seq": None, "deletes": 0,
                 "keys": _StatsCollector(key_columns), "values": _StatsCollector(stat_names),
                 "indexed": {c.column: [] for c in indexes.columns}}
        return w

    def finish(w: _FileWriter) -> dict:
        size = w.close()
        assert placed is not None
        entry = _add_entry(job, bucket, w.name, size, level, state, stat_names, placed.external, file_source)
        blob = build_file_index(indexes, state["indexed"], schema)
        if blob is not None and len(blob) > indexes.in_manifest_threshold:
            # too large for the manifest: `<data file>.index` beside the data file, listed as its extra file
            written.append(placed.full + ".index")
            placed.storage.write(placed.name + ".index", blob)
            entry["_FILE"]["_EXTRA_FILES"] = [entry["_FILE"]["_FILE_NAME"] + ".index"]
        elif blob is not None:
            entry["_FILE"]["_EMBEDDED_FILE_INDEX"] = blob
        return entry

    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            pending_rows += batch.num_rows
            while pending_rows >= ROW_GROUP_ROWS:
                table = pa.Table.from_batches(pending)
                group = table.slice(0, ROW_GROUP_ROWS).combine_chunks()
                rest = table.slice(ROW_GROUP_ROWS)
                pending, pending_rows = rest.to_batches(), rest.num_rows
                writer = writer or start(group)
                _write_group(writer, group, state, file_columns)
                if writer.size >= target:
                    done, writer = writer, None
                    yield finish(done)
        if pending_rows:
            group = pa.Table.from_batches(pending).combine_chunks()
            writer = writer or start(group)
            _write_group(writer, group, state, file_columns)
        if writer is not None:
            done, writer = writer, None
            yield finish(done)
    finally:
        if writer is not None:  # stopped by an error (or not consumed): nothing appears
            writer.abort()


def _write_group(writer: _FileWriter, group: pa.Table, state: dict, file_columns: list[str] | None = None) -> None:
    writer.write(group.select(file_columns) if file_columns is not None else group)
    state["rows"] += group.num_rows
    if state["first"] is None:
        state["first"] = group.slice(0, 1)
    state["last"] = group.slice(group.num_rows - 1, 1)
    seq = pc.min_max(group.column(SEQUENCE_COLUMN))
    lo, hi = seq["min"].as_py(), seq["max"].as_py()
    state["min_seq"] = lo if state["min_seq"] is None else min(state["min_seq"], lo)
    state["max_seq"] = hi if state["max_seq"] is None else max(state["max_seq"], hi)
    kinds = group.column(KIND_COLUMN)
    state["deletes"] += pc.sum(pc.or_(pc.equal(kinds, 1), pc.equal(kinds, 3)).cast(pa.int64())).as_py() or 0
    for b in group.to_batches():
        state["keys"].add(b)
        state["values"].add(b)
    for column, parts in state["indexed"].items():
        parts.append(group.column(column))


def build_file_index(spec: FileIndexSpec, columns: Mapping[str, list[pa.ChunkedArray]],
                     schema: PaimonSchema) -> bytes | None:
    """The file-index container of one data file (None: the table declares no index this
    builds): each declared column's rows, in the file's order, through the codec's Bloom
    filter or bitmap encoder with the column's options."""
    if not spec.columns:
        return None
    bodies: dict[str, dict[str, bytes | None]] = {}
    for ic in spec.columns:
        t = schema.field(ic.column).type
        parts = [chunk for part in columns[ic.column] for chunk in part.chunks]
        values = pa.chunked_array(parts, type=parts[0].type) if parts else pa.chunked_array([], type=t.arrow)
        if ic.index_type == BLOOM_FILTER:
            items = ic.number("items", DEFAULT_BLOOM_ITEMS, int)
            fpp = ic.number("fpp", DEFAULT_BLOOM_FPP, float)
            if items <= 0 or not 0 < fpp < 1:
                raise UnsupportedPaimonFeatureError(
                    f"Paimon's Bloom filter index on column {ic.column!r} needs items > 0 and 0 < fpp < 1 "
                    f"(the table says items={items}, fpp={fpp})")
            body = encode_bloom(values, t, items, fpp)
        else:
            version = ic.number("version", 2, int)
            if version not in (1, 2):
                raise UnsupportedPaimonFeatureError(
                    f"Paimon option 'file-index.bitmap.{ic.column}.version' = {version}: Paimon has versions 1 and 2")
            try:
                block = parse_memory_size(ic.options.get("index-block-size", "16kb"),
                                          f"file-index.bitmap.{ic.column}.index-block-size")
            except InvalidArgumentError as exc:
                raise UnsupportedPaimonFeatureError(f"Paimon {exc}") from None
            try:
                body = encode_bitmap(values, t, block, version)
            except ValueTooLarge:
                continue  # Java's writer fails on such a value; a file without this index is still right
        bodies.setdefault(ic.column, {})[ic.index_type] = body
    if not bodies:
        return None
    return encode_container(bodies)


def _stats_row(collector: _StatsCollector, names: list[str], stored: list[str], types: list,
               modes: list[StatsMode]) -> dict:
    """A SimpleStats record of `names` (their columns in the batches: `stored`) under each
    column's stats mode (`codec.stats.bounded`)."""
    return simple_stats([(collector.lo.get(c), collector.hi.get(c), collector.nulls[c]) for c in stored], types, modes)


def _add_entry(job: PaimonCompaction, bucket: PaimonBucket, name: str, size: int, level: int, state: dict,
               stat_names: list[str], external: str | None = None,
               file_source: int = FILE_SOURCE_COMPACT) -> dict:
    schema = job.schema
    key_types = schema.key_types
    key_columns = schema.key_columns
    first = tuple(state["first"].column(c)[0].as_py() for c in key_columns)
    last = tuple(state["last"].column(c)[0].as_py() for c in key_columns)
    key_modes = stats_modes(schema.options, key_columns)  # system fields: truncate(128)
    value_modes = stats_modes(schema.options, schema.names)
    by_name = dict(zip(schema.names, value_modes))
    stat_types = [schema.field(n).type for n in stat_names]
    if bucket.files:
        version, partition = bucket.files[0].record.get("_VERSION", 2), bucket.files[0].partition_bytes
        total = bucket.files[0].record["_TOTAL_BUCKETS"]
    else:  # a bucket's first file
        version, partition = 2, encode_row(list(bucket.partition), schema.partition_types)
        total = schema.checked_options.buckets
    return {
        "_VERSION": version, "_KIND": ADD, "_PARTITION": partition,
        "_BUCKET": bucket.bucket, "_TOTAL_BUCKETS": total,
        "_FILE": {
            "_FILE_NAME": posixpath.basename(name), "_FILE_SIZE": size, "_ROW_COUNT": state["rows"],
            "_MIN_KEY": encode_row(first, key_types), "_MAX_KEY": encode_row(last, key_types),
            "_KEY_STATS": _stats_row(state["keys"], key_columns, key_columns, key_types, key_modes),
            "_VALUE_STATS": _stats_row(state["values"], stat_names, stat_names, stat_types,
                                       [by_name[n] for n in stat_names]),
            "_MIN_SEQUENCE_NUMBER": state["min_seq"], "_MAX_SEQUENCE_NUMBER": state["max_seq"],
            "_SCHEMA_ID": schema.id, "_LEVEL": level, "_EXTRA_FILES": [],
            "_CREATION_TIME": dt.datetime.now(dt.timezone.utc), "_DELETE_ROW_COUNT": state["deletes"],
            "_EMBEDDED_FILE_INDEX": None, "_FILE_SOURCE": file_source, "_VALUE_STATS_COLS": stat_names,
            "_EXTERNAL_PATH": external, "_FIRST_ROW_ID": None, "_WRITE_COLS": None, "_WRITE_COLS_SEQUENCES": None,
        },
    }


def commit_compaction(job: PaimonCompaction, changes: list[BucketChange], written: list[str]) -> int:
    """Commit the buckets' changes as a COMPACT snapshot; returns its id.  Paths written
    (manifests included) go into `written` so that a failure removes them (`remove_files`).
    A deletion-vector table's changed buckets get a new index manifest; a newer snapshot that
    changed one of their index files is a conflict."""
    return commit_files(job.table, job.snapshot, job.schema, [e for c in changes for e in c.adds],
                        [e for c in changes for e in c.deletes], written, "COMPACT",
                        [IndexChange(c.partition, c.bucket, c.index_entry) for c in changes if c.index_changed])
