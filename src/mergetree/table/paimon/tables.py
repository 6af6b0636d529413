"""A Paimon table's schema and options as the engine reads them: a `TableSchema` whose
primary key is the key its data files hold (the primary key without the partition columns)
and `TableOptions` taken from Paimon's option names where they mean what mergetree's mean,
from ``mergetree.``-prefixed options for what only mergetree does, and from Paimon's rules
where the two differ (sequence fields, ignored deletes, level-0 files hidden from batch
reads).  Also the buckets a filter can reach, by Paimon's bucket function."""
from __future__ import annotations

import dataclasses
import difflib
import itertools
import math
import threading
from typing import Any

import pyarrow as pa

from ...codec.buckets import bucket_function, buckets_of
from ...errors import InvalidArgumentError, UnsupportedPaimonFeatureError
from .. import filters as flt
from ..indexes.bloom import bloom_supported
from ..options import (
    CHANGELOG_PRODUCERS,
    CODECS,
    KEY_CHANGELOG_PRODUCER,
    KEY_COMPRESSION,
    KEY_COMPRESSION_PER_LEVEL,
    KEY_QUERY_LOG,
    OPTIONS,
    TableOptions,
    is_model_key,
    parse_codec,
    parse_codec_levels,
)
from ..schema import TableSchema
from ..type_policy import require
from .metadata import PaimonSchema
from .options import MERGETREE_PREFIX, is_true

__all__ = ["MERGETREE_PREFIX", "SHARED_OPTIONS", "bitmap_columns", "bloom_option_changes", "buckets_for",
           "check_parquet_options", "check_writable", "commit_refusal", "engine_compacts", "option_name",
           "parquet_blooms", "table_options", "table_schema", "write_refusal"]

# options both formats name alike and mean alike: read from the Paimon table as they are
SHARED_OPTIONS = frozenset({
    "write-buffer-size", "target-file-size", "write-only", "manifest.merge-min-count",
    "num-sorted-run.compaction-trigger", "num-sorted-run.stop-trigger", "num-levels",
    "compaction.max-size-amplification-percent", "compaction.size-ratio", "file.compression",
    "file.compression.per.level", "deletion-vectors.enabled", KEY_CHANGELOG_PRODUCER, "changelog.num-retained.min",
    "changelog.num-retained.max", "changelog.time-retained", "consumer.expiration-time",
    "lookup.cache-max-disk-size", "lookup.cache-file-retention",
})


# mergetree's names for what Paimon's writers build under the same name (the file index)
_PAIMON_NAMED = frozenset({"file-index.bloom-filter.columns", "file-index.bitmap.columns"})


def option_name(key: str) -> str:
    """The name option `key` has in a Paimon table's schema: mergetree's own options (those not
    shared with Paimon) under `MERGETREE_PREFIX`; Paimon's, shared ones and prefixed ones as
    they are."""
    if key.startswith(MERGETREE_PREFIX) or key in SHARED_OPTIONS or key in _PAIMON_NAMED:
        return key
    if key in OPTIONS or is_model_key(key):  # (a pre-aggregate model's keys are mergetree's own too)
        return MERGETREE_PREFIX + key
    return key


def table_schema(schema: PaimonSchema) -> TableSchema:
    """The engine's view of a Paimon schema (its options checked: an option mergetree cannot
    honour raises `UnsupportedPaimonFeatureError` naming it), built once per schema object (a
    local table's schema objects are shared by every opening: `metadata._schema_cache`)."""
    with _lock:
        hit = _schemas_by_identity.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    found = _table_schema(schema)
    with _lock:
        _schemas_by_identity[id(schema)] = (schema, found)
        while len(_schemas_by_identity) > 256:
            _schemas_by_identity.pop(next(iter(_schemas_by_identity)))
    return found


def _table_schema(schema: PaimonSchema) -> TableSchema:
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
    blooms, fpp = parquet_blooms(schema)
    return dataclasses.replace(
        parsed, aggregations=dict(opts.aggregations), bloom_columns=blooms, bloom_fpp=fpp,
        bitmap_columns=bitmap_columns(schema), file_index_blooms=file_index_columns(schema, "bloom-filter"),
        # Paimon's files are zstd at every level unless the table says otherwise
        compression_per_level=parsed.compression_per_level if "file.compression.per.level" in shared else {},
        sequence_fields=tuple(opts.sequence_fields), sequence_descending=opts.sequence_descending,
        ignore_delete=opts.ignore_delete, level0_hidden=bool(key) and opts.skips_level0,
        row_kind_field=schema.options.get("rowkind.field") or None,
        lookup_compact_gentle=schema.options.get("lookup-compact", "radical").strip().lower() == "gentle",
        zstd_level=_zstd_level(schema.options),
        deletion_vectors=opts.deletion_vectors, changelog_producer=opts.changelog_producer, commit_ordered=False,
        pk_clustering=opts.pk_clustering)


PARQUET_BLOOM = "parquet.bloom.filter.enabled"
PARQUET_BLOOM_FPP = "parquet.bloom.filter.fpp"
DEFAULT_PARQUET_BLOOM_FPP = 0.01  # parquet-mr's ParquetProperties.DEFAULT_BLOOM_FILTER_FPP


def parquet_blooms(schema: PaimonSchema) -> tuple[tuple[str, ...], float]:
    """The columns whose Parquet files carry Parquet's own Bloom filters, as Java's Parquet
    writer reads the table's ``parquet.*`` options (Hadoop's ``getBoolean``: "true" or
    "false", anything else the default): ``parquet.bloom.filter.enabled#<column>``, else
    ``parquet.bloom.filter.enabled`` for every column; with the smallest false-positive
    probability they ask for (``parquet.bloom.filter.fpp[#<column>]``, 0.01 by default).  Only
    top-level columns of a type whose filters mergetree can probe (`bloom.bloom_supported`)."""
    if schema.options.get("file.format", "parquet").strip().lower() != "parquet":
        return (), DEFAULT_PARQUET_BLOOM_FPP  # an ORC table's Bloom filters are Paimon's file index
    opts = {k.strip(): v for k, v in schema.options.items() if k.strip().lower().startswith("parquet.")}

    def flag(key: str, default: bool) -> bool:
        value = str(opts.get(key, "")).strip().lower()
        return default if value not in ("true", "false") else value == "true"
    every = flag(PARQUET_BLOOM, False)
    columns = tuple(f.name for f in schema.arrow_schema
                    if flag(f"{PARQUET_BLOOM}#{f.name}", every) and bloom_supported(f.type))
    fpps = [_fpp(opts.get(f"{PARQUET_BLOOM_FPP}#{c}", opts.get(PARQUET_BLOOM_FPP))) for c in columns]
    return columns, min(fpps, default=DEFAULT_PARQUET_BLOOM_FPP)


def _fpp(text: str | None) -> float:
    try:
        value = float(str(text).strip()) if text is not None else DEFAULT_PARQUET_BLOOM_FPP
    except ValueError:
        return DEFAULT_PARQUET_BLOOM_FPP  # refused where it is set (`check_parquet_options`)
    return value if 0.0 < value < 1.0 else DEFAULT_PARQUET_BLOOM_FPP


def check_parquet_options(options: dict[str, str], schema: pa.Schema) -> None:
    """Refuse Parquet Bloom filter options Java's writer would fail on or ignore: a flag that is
    not true or false, a probability outside (0, 1), a filter asked for a column `schema` lacks
    (a misspelt name, which Java ignores silently) or of a type the type policy gives none."""
    for key, value in options.items():
        base, _, column = (part.strip() for part in key.partition("#"))
        if base == PARQUET_BLOOM and value.strip().lower() not in ("true", "false"):
            raise InvalidArgumentError(f"Paimon option {key!r} must be true or false, not {value!r}")
        if base == PARQUET_BLOOM and column and value.strip().lower() == "true":
            if column not in schema.names:
                close = difflib.get_close_matches(column, schema.names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise InvalidArgumentError(f"Paimon option {key!r} names column {column!r}, which the table "
                                           f"lacks{hint}")
            require(column, schema.field(column).type, "bloom")
        if base == PARQUET_BLOOM_FPP:
            try:
                fpp = float(value.strip())
            except ValueError:
                fpp = -1.0
            if not 0.0 < fpp < 1.0:
                raise InvalidArgumentError(f"Paimon option {key!r} must be a probability between 0 and 1 "
                                           f"(exclusive), not {value!r}")


def bloom_option_changes(options: dict[str, str], columns: str | None) -> dict[str, str | None]:
    """The changes to a Paimon table's options that give exactly `columns` (comma-separated;
    None: none) Parquet's own Bloom filters, as Java's writers read them: one
    ``parquet.bloom.filter.enabled#<column>`` each (and no table-wide flag left on)."""
    wanted = [c.strip() for c in (columns or "").split(",") if c.strip()]
    changes: dict[str, str | None] = {k: None for k in options
                                      if k.split("#", 1)[0].strip() == PARQUET_BLOOM and
                                      k.partition("#")[2].strip() not in wanted}
    changes.update({f"{PARQUET_BLOOM}#{c}": "true" for c in wanted})
    return changes


def bitmap_columns(schema: PaimonSchema) -> tuple[str, ...]:
    """The columns with a bitmap in Paimon's file index (``file-index.bitmap.columns``): the
    table's writers build those indexes (`file_indexes.build_file_index`), no sidecar."""
    return file_index_columns(schema, "bitmap")


def file_index_columns(schema: PaimonSchema, index_type: str) -> tuple[str, ...]:
    """The columns ``file-index.<index_type>.columns`` gives an index of that type in Paimon's
    file index (a nested column's ``name[key]`` entries left out: not built here)."""
    text = schema.options.get(f"file-index.{index_type}.columns", "")
    return tuple(dict.fromkeys(c.strip() for c in text.split(",") if c.strip() and not c.strip().endswith("]")))


def _zstd_level(options: dict[str, str]) -> int | None:
    """`file.compression.zstd-level` (Java's default, 1, is pyarrow's too); None when not a number
    (a write refuses it: `write_refusal`)."""
    try:
        return int(options.get("file.compression.zstd-level", "1").strip())
    except ValueError:
        return None


def _codec_refusal(opts: dict[str, str]) -> tuple[str, str] | None:
    """Why mergetree cannot compress new files as the table says, or None."""
    orc = opts.get("file.format", "parquet").strip().lower() == "orc"
    for key, parse in ((KEY_COMPRESSION, parse_codec), (KEY_COMPRESSION_PER_LEVEL, parse_codec_levels)):
        if key in opts:
            try:
                parsed = parse(opts[key], key)
            except InvalidArgumentError:
                return key, f"mergetree writes files compressed with {', '.join(CODECS)} only"
            if orc and "brotli" in ([parsed] if isinstance(parsed, str) else list(parsed.values())):
                return key, "ORC has no brotli"
    if _zstd_level(opts) is None:
        return "file.compression.zstd-level", "it is not an integer"
    return None


def table_options(schema: PaimonSchema) -> TableOptions:
    """The engine's options of a Paimon table, parsed once per schema (everything they depend
    on: id, options, columns, keys; every read opens the table again)."""
    with _lock:  # the same schema object asked again (each file of a plan's schema): no key to build
        hit = _by_identity.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
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
    with _lock:
        _by_identity[id(schema)] = (schema, found)
        while len(_by_identity) > 256:
            _by_identity.pop(next(iter(_by_identity)))
    return found


_options: dict[tuple, TableOptions] = {}
_by_identity: dict[int, tuple[PaimonSchema, TableOptions]] = {}  # the schema kept: its id is not reused
_schemas_by_identity: dict[int, tuple[PaimonSchema, TableSchema]] = {}
_lock = threading.Lock()


MAX_BUCKET_COMBINATIONS = 4096


def buckets_for(schema: PaimonSchema, f: Any) -> set[int] | None:
    """The only buckets rows matching `f` can be in, when it fixes every bucket-key column to
    a few values (= and IN); None when it does not, or the table hashes another way."""
    opts = schema.checked_options
    if not opts.bucket_key or opts.buckets < 1:  # bucket-unaware, or dynamic buckets: no function places keys
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


def engine_compacts(schema: PaimonSchema) -> bool:
    """Whether the engine compacts this table: a primary-key table — first-row and
    deletion-vector tables with Java's lookup compaction (level 0 forced up; keys held above
    kept, or their rows marked deleted), ``lookup``-producer tables writing the changelog of
    the level-0 files they compact — unless its changelog comes from Java's full compaction
    (``full-compaction``, which mergetree does not do).  An append table's compaction
    (merging small files) is not supported yet."""
    opts = schema.checked_options
    return bool(schema.primary_keys) and not opts.append and opts.changelog_producer in ("none", "input", "lookup")


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
    if opts.get("changelog-producer", "none").strip().lower() not in ("none", "input", "lookup"):
        return "changelog-producer", ("its changelog is produced by Java's full compaction, which mergetree does "
                                      "not do")
    if is_true(opts.get("sequence.snapshot-ordering", "false")):
        return "sequence.snapshot-ordering", "its files' sequence numbers are stamped with the commit's snapshot id"
    codec = _codec_refusal(opts)
    if codec is not None:
        return codec
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


def commit_refusal(schema: PaimonSchema, kind: str, name: str) -> str | None:
    """Why the engine may not commit a change of `kind` (APPEND, OVERWRITE, COMPACT) to Paimon
    table `name` as Java would (None: it may)."""
    if kind == "COMPACT":
        codec = _codec_refusal(schema.options)
        if codec is not None:
            key, why = codec
            return f"cannot compact Paimon table {name}: option {key!r} = {schema.options.get(key)!r}: {why}"
        if engine_compacts(schema):
            return None
        if not schema.primary_keys or schema.checked_options.append:
            return (f"cannot compact Paimon table {name}: it is an append table, and mergetree compacts primary-key "
                    f"tables (an append table's compaction, merging small files, is not supported yet)")
        return (f"cannot compact Paimon table {name}: option 'changelog-producer' = "
                f"{schema.options.get('changelog-producer')!r}: Paimon's full compaction produces the changelog of "
                f"such tables, which mergetree's does not; compact it with Paimon")
    refusal = write_refusal(schema)
    if refusal is None:
        return None
    key, why = refusal
    return f"cannot write Paimon table {name}: option {key!r} = {schema.options.get(key)!r}: {why}"


def check_writable(schema: PaimonSchema, name: str) -> None:
    """Refuse, naming the option, a table mergetree cannot write as Java would."""
    refusal = commit_refusal(schema, "APPEND", name)
    if refusal is not None:
        raise UnsupportedPaimonFeatureError(refusal)
