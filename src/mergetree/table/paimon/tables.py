"""A Paimon table's schema and options as the engine reads them: a `TableSchema` whose
primary key is the key its data files hold (the primary key without the partition columns)
and `TableOptions` taken from Paimon's option names where they mean what mergetree's mean,
from ``mergetree.``-prefixed options for what only mergetree does, and from Paimon's rules
where the two differ (sequence fields, ignored deletes, level-0 files hidden from batch
reads).  Also the buckets a filter can reach, by Paimon's bucket function."""
from __future__ import annotations

import dataclasses
import itertools
import math
import threading
from typing import Any

import pyarrow as pa

from ...codec.buckets import bucket_function, buckets_of
from ...errors import InvalidArgumentError, UnsupportedPaimonFeatureError
from .. import filters as flt
from ..options import (
    CHANGELOG_PRODUCERS,
    KEY_CHANGELOG_PRODUCER,
    KEY_QUERY_LOG,
    OPTIONS,
    TableOptions,
)
from ..schema import TableSchema
from .metadata import PaimonSchema
from .options import external_paths, file_index_spec, is_true

__all__ = ["MERGETREE_PREFIX", "SHARED_OPTIONS", "buckets_for", "check_writable", "engine_compacts", "engine_writes",
           "table_options", "table_schema", "write_refusal"]

# mergetree's own options on a Paimon table (the query log, the optimizer's layout, ...): under
# one prefix, which Java keeps in the schema and ignores
MERGETREE_PREFIX = "mergetree."

# options both formats name alike and mean alike: read from the Paimon table as they are
SHARED_OPTIONS = frozenset({
    "write-buffer-size", "target-file-size", "write-only", "manifest.merge-min-count",
    "num-sorted-run.compaction-trigger", "num-sorted-run.stop-trigger", "num-levels",
    "compaction.max-size-amplification-percent", "compaction.size-ratio", "file.compression",
    "file.compression.per.level", "deletion-vectors.enabled", KEY_CHANGELOG_PRODUCER, "changelog.num-retained.min",
    "changelog.num-retained.max", "changelog.time-retained", "consumer.expiration-time",
    "lookup.cache-max-disk-size", "lookup.cache-file-retention",
})


def table_schema(schema: PaimonSchema) -> TableSchema:
    """The engine's view of a Paimon schema (its options checked: an option mergetree cannot
    honour raises `UnsupportedPaimonFeatureError` naming it)."""
    opts = schema.checked_options
    key = tuple(schema.trimmed_keys) if schema.primary_keys else ()
    return TableSchema(schema.arrow_schema, key, tuple(schema.partition_keys), opts.buckets, tuple(opts.bucket_key),
                       opts.engine if key else "deduplicate", dict(schema.options), schema.id, paimon=schema)


def _parsed(schema: PaimonSchema) -> TableOptions:
    opts = schema.checked_options
    names = schema.arrow_schema
    shared: dict[str, str] = {}
    for k, v in schema.options.items():
        if k in SHARED_OPTIONS:
            if k == KEY_CHANGELOG_PRODUCER and v.strip().lower() not in CHANGELOG_PRODUCERS:
                continue  # full-compaction: Paimon's own producer, which reads do not need
            try:
                OPTIONS[k].parse(v, k)
            except InvalidArgumentError:
                continue  # a value Java accepts in a form mergetree does not: not used by the engine
            shared[k] = v
        elif k.startswith(MERGETREE_PREFIX):
            shared[k[len(MERGETREE_PREFIX):]] = v
    # the query log of a Paimon table comes with its place beside the table (a later step)
    shared.setdefault(KEY_QUERY_LOG, "false")
    key = tuple(schema.trimmed_keys) if schema.primary_keys else ()
    parsed = TableOptions.parse(shared, names, opts.engine if key else "deduplicate", key)
    return dataclasses.replace(
        parsed, aggregations=dict(opts.aggregations),
        # Paimon's files are zstd at every level unless the table says otherwise
        compression_per_level=parsed.compression_per_level if "file.compression.per.level" in shared else {},
        sequence_fields=tuple(opts.sequence_fields), sequence_descending=opts.sequence_descending,
        ignore_delete=opts.ignore_delete, level0_hidden=bool(key) and opts.skips_level0,
        row_kind_field=schema.options.get("rowkind.field") or None,
        lookup_compact_gentle=schema.options.get("lookup-compact", "radical").strip().lower() == "gentle",
        deletion_vectors=opts.deletion_vectors, changelog_producer=opts.changelog_producer, commit_ordered=False)


def table_options(schema: PaimonSchema) -> TableOptions:
    """The engine's options of a Paimon table, parsed once per schema (everything they depend
    on: id, options, columns, keys; every read opens the table again)."""
    key = (schema.id, tuple(sorted(schema.options.items())), tuple((f.id, f.name, f.type.text) for f in schema.fields),
           tuple(schema.primary_keys), tuple(schema.partition_keys))
    with _lock:
        found = _options.get(key)
    if found is None:
        found = _parsed(schema)
        with _lock:
            _options[key] = found
            while len(_options) > 256:
                _options.pop(next(iter(_options)))
    return found


_options: dict[tuple, TableOptions] = {}
_lock = threading.Lock()


MAX_BUCKET_COMBINATIONS = 4096


def buckets_for(schema: PaimonSchema, f: Any) -> set[int] | None:
    """The only buckets rows matching `f` can be in, when it fixes every bucket-key column to
    a few values (= and IN); None when it does not, or the table hashes another way."""
    opts = schema.checked_options
    if not opts.bucket_key:  # a bucket-unaware append table: every file in bucket 0
        return None
    types = [schema.field(c).type for c in opts.bucket_key]
    if any(t.root in ("FLOAT", "DOUBLE") or not t.atomic for t in types):
        return None  # -0.0/0.0 and NaN encodings: no pruning rather than a wrong bucket
    try:
        function = bucket_function(opts.raw, types)
    except UnsupportedPaimonFeatureError:
        return None  # a table hashing another way is read whole, never pruned by a guess
    per_column = []
    for c in opts.bucket_key:
        values = flt.equality_values(f, c)
        if values is None:
            return None
        per_column.append([v for v in values if v is not None])
    if math.prod(len(v) for v in per_column) > MAX_BUCKET_COMBINATIONS:
        return None
    combos = list(itertools.product(*per_column))
    if not combos:
        return set()
    columns = [pa.array([c[i] for c in combos], type=t.arrow) for i, t in enumerate(types)]
    return {int(b) for b in buckets_of(columns, types, opts.buckets, function)}


def _engine_files(schema: PaimonSchema) -> bool:
    """Whether the engine's Parquet writer makes this table's data files as Java would: Parquet,
    with their key copies, in the table's own directories, without file indexes (ORC, thin mode,
    external paths, a data-file directory and file indexes are still `mergetree.paimon`'s)."""
    options = schema.options
    return (schema.checked_options.file_format == "parquet" and external_paths(options) is None
            and not file_index_spec(options, {f.name: f.type for f in schema.fields}).columns
            and not is_true(options.get("data-file.thin-mode", "false"))
            and not options.get("data-file.path-directory"))


def engine_compacts(schema: PaimonSchema) -> bool:
    """Whether the engine's compaction — the one mergetree's own tables have: the same
    universal rules, the loser tree, files written with a page index — compacts this table.
    So far: primary-key tables — first-row and deletion-vector tables with Java's lookup
    compaction (level 0 forced up; keys held above kept, or their rows marked deleted) —
    without a changelog produced by compaction, whose files the engine writes (`_engine_files`);
    the rest compact here (issue 36 brings them under the engine)."""
    opts = schema.checked_options
    return (bool(schema.primary_keys) and not opts.append and opts.changelog_producer in ("none", "input")
            and _engine_files(schema))


def write_refusal(schema: PaimonSchema) -> tuple[str, str] | None:
    """Why no writer of mergetree's may write this table as Java would — (the option, the
    reason) — or None.  Its options are checked as reads check them first."""
    opts = schema.options
    if opts.get("metadata.iceberg.storage", "disabled").strip().lower() not in ("disabled", ""):
        return "metadata.iceberg.storage", "each commit must also write Iceberg metadata, which mergetree does not"
    if is_true(opts.get("metastore.partitioned-table", "false")):
        return "metastore.partitioned-table", "new partitions must be registered in the Hive metastore"
    if opts.get("tag.automatic-creation", "none").strip().lower() != "none":
        return "tag.automatic-creation", "commits must create tags automatically"
    if opts.get("partition.expiration-time"):
        return "partition.expiration-time", "commits must expire old partitions"
    if is_true(opts.get("lock.enabled", "false")):
        return "lock.enabled", "commits must hold the catalog's lock"
    if opts.get("changelog-producer", "none").strip().lower() not in ("none", "input"):
        return "changelog-producer", ("its changelog is produced by Java's compaction (lookup, full-compaction), "
                                      "which mergetree does not do")
    if is_true(opts.get("sequence.snapshot-ordering", "false")):
        return "sequence.snapshot-ordering", "its files' sequence numbers are stamped with the commit's snapshot id"
    options = schema.checked_options  # refuses what reads refuse: dynamic/postpone buckets, ...
    if options.append and options.buckets == -1:
        return None  # bucket-unaware: every file goes to bucket 0
    key_types = [schema.field(c).type for c in options.bucket_key]
    if not key_types:
        return "primary-key", ("its bucket key is empty (the partition keys cover the primary key; Java refuses "
                               "such a table too)")
    try:
        bucket_function(opts, key_types)
    except UnsupportedPaimonFeatureError as exc:
        return "bucket-function.type", str(exc)
    return None


def check_writable(schema: PaimonSchema, name: str) -> None:
    """Refuse, naming the option, a table mergetree cannot write as Java would."""
    refusal = write_refusal(schema)
    if refusal is not None:
        key, why = refusal
        raise UnsupportedPaimonFeatureError(f"cannot write Paimon table {name}: option {key!r} = "
                                            f"{schema.options.get(key)!r}: {why}")


def engine_writes(schema: PaimonSchema) -> bool:
    """Whether the engine's write path — the one mergetree's own tables have: the input
    streamed through the write buffer, folded per bucket, level-0 files, a commit renumbered
    after a lost race — writes this table: one mergetree may write at all, whose files the engine
    writes (`_engine_files`); the rest are written by `mergetree.paimon` (issue 36 brings them
    here)."""
    return write_refusal(schema) is None and _engine_files(schema)
