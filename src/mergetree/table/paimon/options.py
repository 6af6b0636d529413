"""Which Paimon table options mergetree honours, which cannot change a batch read, and which
it refuses (naming the option) rather than return a silently different answer.

The rules, in order, for every option of the table's schema:

1. handled here: ``bucket`` (> 0; -1 dynamic and -2 postpone are refused), ``bucket-key``,
   ``merge-engine``, ``sequence.field`` (one or several columns, compared in the listed order)
   with ``sequence.field.sort-order``, ``ignore-delete`` and its per-engine
   spellings, ``fields.<f>.aggregate-function``, ``fields.default-aggregate-function``,
   ``file.format`` (parquet, orc), ``manifest.format`` (avro, orc), ``partition.default-name``,
   ``data-file.external-paths`` and its ``.strategy``, ``.specific-fs``, ``.weights`` (reads
   find every file by its manifest entry; compaction places its outputs by them: `external_paths`),
   ``deletion-vectors.enabled`` and ``deletion-vectors.merge-on-read``, ``index-file-in-data-file-dir``;
2. refused when switched on: sequence groups, remove-record-on-delete,
   ignore-retract, distinct list aggregation, record-level expiry, row tracking, data evolution;
3. harmless for reading: sizes, compaction triggers, retention, streaming scan and sink
   settings, file indexes, format tuning (prefixes below);
4. anything else is refused as unknown: its effect on a read cannot be judged.

Compaction adds: no changelog producer that compaction must feed (``lookup``,
``full-compaction``).
"""
from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...codec.buckets import bucket_key as codec_bucket_key
from ...codec.file_index import BITMAP, BLOOM_FILTER, bitmap_supported, bloom_supported
from ...codec.stats import parse_stats_mode, stats_modes
from ...codec.types import PaimonType
from ...errors import InvalidArgumentError, UnsupportedPaimonFeatureError
from ...merge import AGGREGATE_FUNCTIONS
from ..compaction.planner import parse_memory_size
from ..durations import java_duration

__all__ = ["EXTERNAL_PATHS", "MERGETREE_PREFIX", "ExternalPaths", "FileIndexColumn", "FileIndexSpec", "PaimonOptions",
           "Retention", "check_option_change", "check_options", "external_paths", "file_index_spec",
           "is_known_option", "is_true", "known_options", "misspelt", "option_text", "retention", "schema_refusal"]

# mergetree's own options on a Paimon table (the query log, the optimizer's layout, ...): under
# one prefix, which Java keeps in the schema and ignores; the engine checks their values
# (`tables.table_options`)
MERGETREE_PREFIX = "mergetree."

ENGINES = {"deduplicate": "deduplicate", "first-row": "first-row", "partial-update": "partial-update",
           "aggregation": "aggregate"}

_HARMLESS_KEYS = {
    "owner", "comment", "path", "type", "connector", "rowkind.field", "ignore-update-before",
    "deletion-vectors.modifiable",  # (only what ALTER TABLE allows: `check_option_change`)
    "target-file-size", "write-buffer-size", "write-buffer-spillable", "write-buffer-spill.max-disk-size",
    "write-only", "num-levels", "page-size", "cache-page-size", "sort-engine", "local-merge-buffer-size",
    "file.compression", "file.compression.zstd-level", "file.block-size", "file.suffix.include.compression",
    "manifest.compression", "manifest.target-file-size", "manifest.merge-min-count",
    "manifest.full-compaction-threshold-size", "metadata.stats-dense-store", "full-compaction.delta-commits",
    "changelog-producer", "changelog-producer.row-deduplicate", "changelog.precommit-compact",
    "dynamic-partition-overwrite", "streaming-read-overwrite", "continuous.discovery-interval",
    "bucket-append-ordered", "commit.force-compact", "commit.user-prefix", "commit.max-retries",
    "commit.timeout", "commit.min-retry-wait", "commit.max-retry-wait", "commit.force-create-snapshot",
    "primary-key", "partition", "data-file.prefix", "changelog-file.prefix", "data-file.thin-mode",
    "metastore.partitioned-table", "metastore.tag-to-partition", "auto-create", "fields.default-value",
    "partition.legacy-name", "write-manifest-cache", "file.format.per.level",
    "file.compression.per.level", "sink.watermark-time-zone", "bucket-function.type",
    # what a schema change may do, which `schema_changes` applies as Java does
    "add-column-before-partition", "disable-explicit-type-casting",
}
_HARMLESS_PREFIXES = (
    "snapshot.", "changelog.", "tag.", "consumer.", "consumer-id", "compaction.", "num-sorted-run.",
    "sort-spill-", "spill-", "lookup.", "lookup-", "scan.plan", "scan.manifest", "scan.split",
    "source.", "sink.", "parquet.", "orc.", "avro.", "file-index.", "partition.expiration",
    "partition.timestamp", "partition.mark-done", "partition.idle", "dynamic-bucket.", "cross-partition-upsert.",
    "write.", "read.batch-size", "stats.",
    "zorder.", "hilbert.", "clustering.", "visibility-callback.", "snapshot-expire.", "manifest.delete-file",
    "alter-column-null-to-not-null", "query-auth.", "deletion-vector.index-file", "deletion-vectors.bitmap64",
    # duties of commits, not of reads (writes refuse them: `tables.write_refusal`)
    "metadata.iceberg.", "lock.",
)
# namespaces of Java's options that change what a read returns: a key there mergetree does not
# know is refused, never taken for a free-form property
_SEMANTIC_PREFIXES = ("merge-engine", "deduplicate.", "first-row.", "partial-update.", "aggregation.", "sequence.",
                      "bucket", "deletion-vectors.", "changelog-producer", "record-level.", "row-tracking.",
                      "data-evolution.", "primary-key", "rowkind.")
# the names Java knows under the prefixes listed as harmless that steer expiry, which every commit
# runs: a name close to one of these is a typo (`misspelt`), not a free-form property
_RETENTION_KEYS = ("snapshot.num-retained.min", "snapshot.num-retained.max", "snapshot.time-retained",
                   "snapshot.expire.limit", "snapshot.expire.execution-mode", "snapshot.clean-empty-directories",
                   "changelog.num-retained.min", "changelog.num-retained.max", "changelog.time-retained",
                   "consumer.expiration-time", "consumer.ignore-progress", "consumer.mode", "tag.default-time-retained")
_REFUSED_WHEN_TRUE = {
    "partial-update.remove-record-on-delete": "partial-update removing a record on delete",
    "partial-update.remove-record-on-sequence-group": "partial-update removing a record per sequence group",
    "aggregation.remove-record-on-delete": "aggregation removing a record on delete",
    "row-tracking.enabled": "row tracking",
    "data-evolution.enabled": "data evolution",
    "first-row.ignore-delete": None,  # handled (ignore-delete); listed so the value is checked
    "deduplicate.ignore-delete": None,  # (Java's other fallback key of ignore-delete)
}


@dataclass(frozen=True)
class PaimonOptions:
    """What mergetree takes from a Paimon table's options."""

    buckets: int
    bucket_key: tuple[str, ...]
    engine: str                              # mergetree's engine name
    # `sequence.field`: versions of a key are ordered by these columns (lexicographically, in
    # this order, each ascending or each descending), then by _SEQUENCE_NUMBER
    sequence_fields: tuple[str, ...]
    ignore_delete: bool
    aggregations: dict[str, str] = field(default_factory=dict)
    file_format: str = "parquet"
    default_partition_name: str = "__DEFAULT_PARTITION__"
    changelog_producer: str = "none"
    raw: Mapping[str, str] = field(default_factory=dict)
    sequence_descending: bool = False        # `sequence.field.sort-order` = descending
    deletion_vectors: bool = False           # replaced rows marked per file: level > 0 files read alone
    deletion_vectors_merge_on_read: bool = False  # level-0 files visible to batch reads (merged)
    append: bool = False                     # no primary key: rows as written, nothing merged
    # `pk-clustering-override` (Java 1.4): the columns (Paimon's `clustering.columns`) that the
    # files above level 0 are sorted by instead of the key; empty: the key, as in every table
    pk_clustering: tuple[str, ...] = ()

    @property
    def dynamic_buckets(self) -> bool:
        """A primary-key table in dynamic bucket mode (``bucket = -1``): keys placed by its hash index."""
        return self.buckets == -1 and not self.append

    @property
    def dynamic_target(self) -> int:
        return int(self.raw.get("dynamic-bucket.target-row-num", "2000000"))

    @property
    def dynamic_max_buckets(self) -> int:
        return int(self.raw.get("dynamic-bucket.max-buckets", "-1"))

    @property
    def sequence_field(self) -> str | None:
        """The `sequence.field` columns as the option lists them (None: no sequence field)."""
        return ",".join(self.sequence_fields) or None

    @property
    def skips_level0(self) -> bool:
        """Whether a batch read leaves level-0 files out, as Paimon's does: with deletion
        vectors (unless merge-on-read) and for first-row, level-0 rows become visible once
        compaction has resolved them against the older levels."""
        if self.deletion_vectors:
            return not self.deletion_vectors_merge_on_read
        return self.engine == "first-row"


def is_true(value: object) -> bool:
    """A boolean option's value as Java's option parser reads it (case and spaces aside)."""
    return str(value).strip().lower() == "true"


def check_options(options: Mapping[str, str], columns: list[str], primary_keys: list[str],
                  partition_keys: list[str]) -> PaimonOptions:
    """The options mergetree uses, or UnsupportedPaimonFeatureError naming the first option
    (in key order) that it cannot honour."""
    opts = {str(k): str(v) for k, v in options.items()}

    def refuse(key: str, why: str) -> UnsupportedPaimonFeatureError:
        return UnsupportedPaimonFeatureError(f"Paimon option {key!r} = {opts.get(key)!r}: {why}")

    for key in sorted(opts):
        value = opts[key]
        if key.startswith(MERGETREE_PREFIX):
            continue
        if key in _REFUSED_WHEN_TRUE:
            what = _REFUSED_WHEN_TRUE[key]
            if what is not None and is_true(value):
                raise refuse(key, f"{what} is not supported by mergetree")
            continue
        if key.startswith("fields."):
            _check_field_option(key, value, columns, refuse)
            continue
        if key in ("metadata.stats-mode", "metadata.stats-keep-first-n-columns"):
            stats_modes(opts, [])  # checked: a write keeps statistics by them
            continue
        if key == "changelog-producer" and value.strip().lower() not in ("none", "input", "full-compaction", "lookup"):
            raise refuse(key, "Paimon's changelog producers are none, input, full-compaction and lookup")
        if key == "record-level.expire-time":
            raise refuse(key, "record-level expiry changes what a read returns and is not supported by mergetree")
        if key in _KNOWN_KEYS or key in _HARMLESS_KEYS or key.startswith(_HARMLESS_PREFIXES):
            continue
        if key.startswith("scan."):
            raise refuse(key, "a table-level scan setting changes which snapshot or rows a read sees; "
                              "remove it or read with pypaimon")
        if key.startswith(_SEMANTIC_PREFIXES):
            raise refuse(key, "mergetree does not know this option of a namespace whose options change what a "
                              "read returns (merge engines, sequence fields, deletes, buckets), so it refuses it "
                              "rather than guess")
        # any other key is a free-form property (``owner``, ``team``), kept and ignored as Java
        # keeps and ignores it; `misspelt` catches a typo of a known option where one is set

    try:
        buckets = int(opts.get("bucket", "-1"))
    except ValueError:
        raise refuse("bucket", "not an integer") from None
    if not primary_keys:
        return _append_options(opts, buckets, columns, refuse)
    if buckets == -1 and opts.get("bucket-key"):
        raise refuse("bucket-key", "a dynamic-bucket table (bucket = -1) places keys by its hash index, not by a "
                                   "bucket key (Java refuses it too)")
    if buckets == -2:
        raise refuse("bucket", "postpone bucket mode (bucket = -2) is not supported")
    if buckets < 1 and buckets != -1:
        raise refuse("bucket", "must be a positive bucket count, or -1 (dynamic buckets)")
    if buckets == -1:
        for key, low in (("dynamic-bucket.target-row-num", 1), ("dynamic-bucket.max-buckets", -1)):
            text = opts.get(key)
            if text is not None and (not re.fullmatch(r"-?[0-9]+", text.strip()) or int(text) < low
                                     or int(text) == 0):
                raise refuse(key, "must be a positive whole number" + (" or -1" if low == -1 else ""))
    if not primary_keys:
        raise UnsupportedPaimonFeatureError("the Paimon table has no primary key: append tables are not "
                                            "supported by mergetree.paimon (read them with pyarrow directly)")
    bucket_key = codec_bucket_key(primary_keys, partition_keys, opts)
    unknown = [c for c in bucket_key if c not in columns]
    if unknown:
        raise refuse("bucket-key", f"names columns the table lacks: {unknown}")
    engine_name = opts.get("merge-engine", "deduplicate").strip().lower()
    if engine_name not in ENGINES:
        raise refuse("merge-engine", f"supported engines are {', '.join(ENGINES)}")
    engine = ENGINES[engine_name]
    sequence: tuple[str, ...] = ()
    if opts.get("sequence.field") is not None:
        # as Paimon's CoreOptions.sequenceField: split on commas, each name trimmed
        names = [s.strip() for s in opts["sequence.field"].split(",")]
        if not all(names):
            raise refuse("sequence.field", "names an empty column")
        missing = [n for n in names if n not in columns]
        if missing:
            raise refuse("sequence.field", f"names columns the table lacks: {missing}")
        if len(set(names)) != len(names):
            raise refuse("sequence.field", "names a column twice")
        if engine == "first-row":
            raise refuse("sequence.field", "Paimon does not allow a sequence field with first-row")
        sequence = tuple(names)
    order = opts.get("sequence.field.sort-order", "ascending").strip().lower()
    if order not in ("ascending", "descending"):
        raise refuse("sequence.field.sort-order", "must be ascending or descending")
    ignore_delete = any(is_true(opts.get(k, "false"))
                        for k in ("ignore-delete", "partial-update.ignore-delete", "first-row.ignore-delete",
                                  "deduplicate.ignore-delete"))
    aggregations: dict[str, str] = {}
    if engine == "aggregate":
        default = opts.get("fields.default-aggregate-function")
        for column in columns:
            if column in primary_keys:
                continue
            if column in sequence:
                # as Paimon's AggregateMergeFunction: a sequence field is not aggregated, it
                # carries the newest version's value
                if f"fields.{column}.aggregate-function" in opts:
                    raise refuse(f"fields.{column}.aggregate-function",
                                 "Paimon does not allow an aggregate function on a sequence field")
                aggregations[column] = "last_value"
                continue
            fn = opts.get(f"fields.{column}.aggregate-function", default)
            if fn is None:
                continue
            fn = fn.strip().lower()
            if fn not in AGGREGATE_FUNCTIONS:
                key = f"fields.{column}.aggregate-function" if f"fields.{column}.aggregate-function" in opts \
                    else "fields.default-aggregate-function"
                raise refuse(key, f"aggregate function {fn!r} is not supported by mergetree "
                                  f"(supported: {', '.join(AGGREGATE_FUNCTIONS)})")
            aggregations[column] = fn
    fmt = opts.get("file.format", "parquet").strip().lower()
    if fmt not in ("parquet", "orc"):
        raise refuse("file.format", "mergetree reads Parquet and ORC data files")
    if opts.get("manifest.format", "avro").strip().lower() not in ("avro", "orc"):
        raise refuse("manifest.format", "mergetree reads and writes Avro and ORC manifests, the formats Paimon's "
                                        "writers use")
    deletion_vectors = is_true(opts.get("deletion-vectors.enabled", "false"))
    merge_on_read = is_true(opts.get("deletion-vectors.merge-on-read", "false"))
    changelog = opts.get("changelog-producer", "none").strip().lower()
    clustering = _pk_clustering(opts, columns, primary_keys, engine, sequence, deletion_vectors, merge_on_read,
                                changelog, refuse)
    return PaimonOptions(buckets, bucket_key, engine, sequence, ignore_delete, aggregations, fmt,
                         opts.get("partition.default-name", "__DEFAULT_PARTITION__"), changelog, opts,
                         order == "descending", deletion_vectors, merge_on_read, pk_clustering=clustering)


def _pk_clustering(opts: Mapping[str, str], columns: list[str], primary_keys: list[str], engine: str,
                   sequence: tuple[str, ...], deletion_vectors: bool, merge_on_read: bool, changelog: str,
                   refuse) -> tuple[str, ...]:
    """The clustering columns of a `pk-clustering-override` table (empty without it), by Java's
    rules (`SchemaValidation.validatePkClusteringOverride`) and mergetree's: its files above
    level 0 are sorted by these columns and read alone (with their deletion vectors, which a
    first-row table needs none of: it never writes a key twice), so level 0 is never merged
    with them on read."""
    if not is_true(opts.get(PK_CLUSTERING, "false")):
        return ()
    columns_text = opts.get(CLUSTERING_COLUMNS) or ""
    clustering = tuple(c.strip() for c in columns_text.split(",") if c.strip())
    if not clustering:
        raise refuse(PK_CLUSTERING, f"needs {CLUSTERING_COLUMNS!r}, the columns the files are sorted by")
    unknown = [c for c in clustering if c not in columns]
    if unknown:
        raise refuse(CLUSTERING_COLUMNS, f"names columns the table lacks: {unknown}")
    if len(set(clustering)) != len(clustering):
        raise refuse(CLUSTERING_COLUMNS, "names a column twice")
    if engine not in ("deduplicate", "first-row"):
        raise refuse(PK_CLUSTERING, f"Java allows it with the deduplicate and first-row merge engines only, not "
                                    f"{opts.get('merge-engine')!r}")
    if sequence:
        raise refuse(PK_CLUSTERING, "Java does not allow it with 'sequence.field'")
    if changelog not in ("none", "input"):
        raise refuse(PK_CLUSTERING, f"Java does not allow it with changelog-producer {changelog!r}")
    if not deletion_vectors and engine != "first-row":  # (first-row writes no key twice: no vectors needed)
        raise refuse(PK_CLUSTERING, "Java needs 'deletion-vectors.enabled' with it (but for first-row tables)")
    if merge_on_read:
        raise refuse("deletion-vectors.merge-on-read", f"the files of a {PK_CLUSTERING!r} table above level 0 are "
                                                       f"not in key order, so level 0 cannot be merged with them on "
                                                       f"read")
    return clustering


def _append_options(opts: dict[str, str], buckets: int, columns: list[str], refuse) -> PaimonOptions:
    """An append table's (no primary key): `bucket` -1 (bucket-unaware: every file in bucket 0)
    or a fixed count placed by `bucket-key`; deletion vectors (Paimon's row-level deletes of
    append tables) refused."""
    if buckets == -2 or buckets == 0 or buckets < -2:
        raise refuse("bucket", "an append table has a fixed bucket count or -1 (bucket-unaware)")
    bucket_key: tuple[str, ...] = ()
    if buckets > 0:
        bucket_key = tuple(s.strip() for s in (opts.get("bucket-key") or "").split(",") if s.strip())
        if not bucket_key:
            raise refuse("bucket", "a bucketed append table needs 'bucket-key', as Paimon requires")
        unknown = [c for c in bucket_key if c not in columns]
        if unknown:
            raise refuse("bucket-key", f"names columns the table lacks: {unknown}")
    if is_true(opts.get("deletion-vectors.enabled", "false")):
        raise refuse("deletion-vectors.enabled", "deletion vectors of append tables (row-level deletes) are not "
                                                 "supported by mergetree")
    fmt = opts.get("file.format", "parquet").strip().lower()
    if fmt not in ("parquet", "orc"):
        raise refuse("file.format", "mergetree reads Parquet and ORC data files")
    return PaimonOptions(buckets, bucket_key, "none", (), False, {}, fmt,
                         opts.get("partition.default-name", "__DEFAULT_PARTITION__"),
                         opts.get("changelog-producer", "none").strip().lower(), opts, append=True)


PK_CLUSTERING = "pk-clustering-override"
CLUSTERING_COLUMNS = "clustering.columns"
EXTERNAL_PATHS = "data-file.external-paths"
STRATEGY, SPECIFIC_FS, WEIGHTS = (f"{EXTERNAL_PATHS}.{s}" for s in ("strategy", "specific-fs", "weights"))


_KNOWN_KEYS = frozenset({
    "bucket", "bucket-key", "merge-engine", "sequence.field", "sequence.field.sort-order", "ignore-delete",
    "partial-update.ignore-delete", "file.format", "manifest.format", "partition.default-name",
    "deletion-vectors.enabled", "deletion-vectors.merge-on-read", "index-file-in-data-file-dir",
    "data-file.path-directory", EXTERNAL_PATHS, STRATEGY, SPECIFIC_FS, WEIGHTS, PK_CLUSTERING})


def known_options() -> list[str]:
    """The Paimon option names mergetree knows by name (honoured, harmless or refused), for
    suggestions when a name is misspelt."""
    return sorted({*_KNOWN_KEYS, *_HARMLESS_KEYS, *_REFUSED_WHEN_TRUE})


def misspelt(key: str, engine_options: Sequence[str] = ()) -> str | None:
    """The known option (Paimon's, or the engine's `engine_options`) that `key` looks like a
    misspelling of, None when it is known or a free-form property."""
    if key.startswith(("snapshot.", "changelog.", "consumer.", "tag.")) and key not in _RETENTION_KEYS:
        close = difflib.get_close_matches(key, _RETENTION_KEYS, n=1, cutoff=0.85)
        if close:  # a typo there would silently keep the defaults of what every commit expires
            return close[0]
    if is_known_option(key) or key in engine_options:
        return None
    bare = key[len(MERGETREE_PREFIX):] if key.startswith(MERGETREE_PREFIX) else key
    if key.startswith(MERGETREE_PREFIX) and bare in engine_options:
        return None
    close = difflib.get_close_matches(bare, [*engine_options, *known_options()], n=1, cutoff=0.8)
    return close[0] if close else None


def is_known_option(key: str) -> bool:
    """Whether mergetree knows Paimon option `key` (to honour, to ignore or to refuse)."""
    return key.startswith(MERGETREE_PREFIX) or key in _KNOWN_KEYS or key in _HARMLESS_KEYS \
        or key.startswith(_HARMLESS_PREFIXES) or key in _REFUSED_WHEN_TRUE or key.startswith(("fields.", "scan.")) \
        or key in ("metadata.stats-mode", "metadata.stats-keep-first-n-columns", "changelog-producer",
                   "record-level.expire-time")
STRATEGIES = ("none", "round-robin", "specific-fs", "entropy-inject", "weight-robin")


@dataclass(frozen=True)
class ExternalPaths:
    """Where Paimon's writers put new data files of a table with ``data-file.external-paths``:
    `roots` (as the option spells them, scheme included, no trailing "/") chosen per file by
    `strategy` — "round-robin" (also what "specific-fs" does over the roots of its scheme, and
    "weight-robin" without weights or with one root), "entropy-inject" or "weight-robin"."""

    strategy: str
    roots: tuple[str, ...]
    weights: tuple[int, ...] = ()


def external_paths(options: Mapping[str, str]) -> ExternalPaths | None:
    """The external data paths new files go to, as Paimon's writers read the options (None: the
    table's own directories — no roots, or strategy ``none``, the default); a value Paimon
    would refuse is refused naming its option.  Reads need none of this: every file's place is
    in its manifest entry (``_EXTERNAL_PATH``)."""
    def refuse(key: str, why: str) -> UnsupportedPaimonFeatureError:
        return UnsupportedPaimonFeatureError(f"Paimon option {key!r} = {options.get(key)!r}: {why}")
    text = (options.get(EXTERNAL_PATHS) or "").strip()
    strategy = (options.get(STRATEGY) or "none").strip().lower()
    if strategy not in STRATEGIES:
        raise refuse(STRATEGY, f"Paimon's strategies are {', '.join(STRATEGIES)}")
    if not text or strategy == "none":
        return None
    roots = []
    for root in (r.strip() for r in text.split(",")):
        scheme, sep, rest = root.partition(":")
        if not sep or not scheme or "/" in scheme or not rest:
            raise refuse(EXTERNAL_PATHS, f"every root needs a scheme (file:///..., s3://...), {root!r} has none")
        roots.append(root.rstrip("/") if rest.strip("/") else root)
    if strategy == "specific-fs":
        fs = (options.get(SPECIFIC_FS) or "").strip().lower()
        if not fs:
            raise refuse(SPECIFIC_FS, "strategy specific-fs needs the scheme to write to")
        roots = [r for r in roots if r.partition(":")[0].lower() == fs]
        if not roots:
            raise refuse(SPECIFIC_FS, f"no root of {EXTERNAL_PATHS!r} has this scheme")
        return ExternalPaths("round-robin", tuple(roots))
    if strategy == "weight-robin":
        weights = options.get(WEIGHTS)
        if weights is None or len(roots) < 2:
            return ExternalPaths("round-robin", tuple(roots))
        try:
            parsed = tuple(int(w.strip()) for w in weights.split(","))
        except ValueError:
            raise refuse(WEIGHTS, "weights are comma-separated integers") from None
        if any(w <= 0 for w in parsed):
            raise refuse(WEIGHTS, "weights must be positive")
        if len(parsed) != len(roots):
            raise refuse(WEIGHTS, f"{len(parsed)} weights for {len(roots)} roots")
        return ExternalPaths(strategy, tuple(roots), parsed)
    return ExternalPaths(strategy, tuple(roots))


def _check_field_option(key: str, value: str, columns: list[str], refuse) -> None:
    name, _, option = key[len("fields."):].rpartition(".")
    if key == "fields.default-aggregate-function":
        return
    if option in ("aggregate-function",):
        if name not in columns:
            raise refuse(key, "names a column the table lacks")
        return
    if option == "stats-mode":  # which statistics writers keep; reads use what a file has
        if name not in columns:
            raise refuse(key, "names a column the table lacks")
        parse_stats_mode(value, key)
        return
    if option == "sequence-group":
        raise refuse(key, "sequence groups are not supported by mergetree")
    if option in ("ignore-retract", "distinct") and is_true(value):
        raise refuse(key, f"{option} is not supported by mergetree")
    if option == "list-agg-delimiter" and value != ",":
        raise refuse(key, "mergetree's listagg joins with ','")
    if option in ("ignore-retract", "distinct", "list-agg-delimiter", "default-value"):
        return
    raise refuse(key, "mergetree does not know this field option, so it cannot tell whether it changes "
                      "what a read returns")


# -- file indexes ------------------------------------------------------------------------------

FILE_INDEX_BUILT = (BLOOM_FILTER, BITMAP)
DEFAULT_IN_MANIFEST_THRESHOLD = 500  # bytes: `file-index.in-manifest-threshold`'s default


@dataclass(frozen=True)
class FileIndexColumn:
    """One index a data file of the table carries: `index_type` on `column`, with its options
    (``file-index.<type>.<column>.<option>``)."""

    column: str
    index_type: str
    options: Mapping[str, str] = field(default_factory=dict)

    def number(self, key: str, default: float, kind: type) -> Any:
        text = self.options.get(key)
        if text is None:
            return default
        try:
            return kind(text.strip())
        except ValueError:
            raise UnsupportedPaimonFeatureError(
                f"Paimon option 'file-index.{self.index_type}.{self.column}.{key}' = {text!r} is not a "
                f"{kind.__name__}") from None


@dataclass(frozen=True)
class FileIndexSpec:
    """Which file indexes the table's data files carry (`file-index.*` options), and where a
    file's index goes: into the manifest entry up to `in_manifest_threshold` bytes, else into
    a ``<data file>.index`` file beside it.  `not_built`: indexes the options declare that
    mergetree does not build (``range-bitmap``, ``bsi``, map-key indexes): its files go
    without them, which Paimon's readers take as "cannot skip"."""

    columns: tuple[FileIndexColumn, ...] = ()
    in_manifest_threshold: int = DEFAULT_IN_MANIFEST_THRESHOLD
    not_built: tuple[str, ...] = ()


def file_index_spec(options: Mapping[str, str], types: Mapping[str, PaimonType]) -> FileIndexSpec:
    """The table's file indexes (``FileIndexOptions``' parsing: ``file-index.<type>.columns``
    lists columns; ``file-index.<type>.<column>.<option>`` sets one), each checked against the
    column's type as Java's writers check it; UnsupportedPaimonFeatureError names a declared
    column the table lacks or a type Paimon cannot index, as Java's writes would fail."""
    opts = {str(k): str(v) for k, v in options.items()}
    declared: dict[tuple[str, str], dict[str, str]] = {}
    not_built: list[str] = []
    for key in sorted(opts):
        if key.startswith("file-index.") and key.endswith(".columns"):
            index_type = key[len("file-index."):-len(".columns")]
            for name in opts[key].split(","):
                if not name.strip():
                    raise UnsupportedPaimonFeatureError(
                        f"Paimon option {key!r} = {opts[key]!r} names an empty column")
                column = name.strip()
                if index_type not in FILE_INDEX_BUILT or column.endswith("]"):
                    not_built.append(f"{index_type} on {column}")
                    continue
                declared.setdefault((column, index_type), {})
    for key in sorted(opts):
        if not key.startswith("file-index.") or key.endswith(".columns"):
            continue
        parts = key[len("file-index."):].split(".")
        if len(parts) == 3 and (parts[1], parts[0]) in declared:
            declared[(parts[1], parts[0])][parts[2]] = opts[key]
    columns = []
    for (column, index_type), column_options in declared.items():
        t = types.get(column)
        if t is None:
            raise UnsupportedPaimonFeatureError(
                f"Paimon option 'file-index.{index_type}.columns' names column {column!r}, which the table lacks")
        supported = bloom_supported(t) if index_type == BLOOM_FILTER else bitmap_supported(t)
        if not supported:
            raise UnsupportedPaimonFeatureError(
                f"Paimon option 'file-index.{index_type}.columns' names column {column!r} of type {t.text}, "
                f"which Paimon's {index_type} index does not support")
        columns.append(FileIndexColumn(column, index_type, column_options))
    threshold_text = opts.get("file-index.in-manifest-threshold")
    try:
        threshold = DEFAULT_IN_MANIFEST_THRESHOLD if threshold_text is None else \
            parse_memory_size(threshold_text, "file-index.in-manifest-threshold")
    except InvalidArgumentError as exc:
        raise UnsupportedPaimonFeatureError(str(exc)) from None
    return FileIndexSpec(tuple(columns), threshold, tuple(not_built))


# options Java refuses to change once set (``CoreOptions``' ``@Immutable`` ones, and ``path``)
_IMMUTABLE = frozenset({
    "type", "bucket-key", "bucket-function.type", "data-file.path-directory", "merge-engine",
    "sequence.snapshot-ordering", "aggregation.remove-record-on-delete", "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group", "rowkind.field", "primary-key", "primary-key.nullable",
    "partition", "dynamic-bucket.initial-buckets", "force-lookup", "row-tracking.enabled", "data-evolution.enabled",
    "index-file-in-data-file-dir", "blob-field", "blob-descriptor-field", "blob-view-field",
    "pk-clustering-override",
})


def option_text(value: Any) -> str | None:
    """An option's value as Java's options hold it (None: reset): booleans lower-case, a
    duration in milliseconds."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dt.timedelta):
        return f"{round(value.total_seconds() * 1000)} ms"
    return str(value)


def check_option_change(options: Mapping[str, str], key: str, value: str | None, has_snapshots: bool) -> None:
    """Refuse (UnsupportedPaimonFeatureError, Java's reason) setting option `key` to `value` (None:
    resetting it) in a table with `options`, as Java's ``SchemaManager`` refuses an ALTER TABLE
    (most rules only once the table has snapshots).  ``bucket`` is refused whatever Java allows:
    changing it needs the rescale mergetree does not do."""
    old = options.get(key)
    if value is not None and old == value:
        return
    if key in ("type", "path") or (has_snapshots and key in _IMMUTABLE):
        raise UnsupportedPaimonFeatureError(f"Paimon option {key!r} cannot be changed once the table has data "
                                            f"(Java refuses it too)")
    if key == "bucket":
        raise UnsupportedPaimonFeatureError(
            "Paimon option 'bucket' cannot be changed by mergetree: a new bucket count needs every partition "
            "rewritten into it (Paimon's rescale); create a new table with the bucket count and copy the rows")
    if not has_snapshots:
        return
    if key == "deletion-vectors.enabled" and not is_true(options.get("deletion-vectors.modifiable", "false")):
        if is_true(old or "false") != is_true(value or "false"):
            raise UnsupportedPaimonFeatureError(
                "Paimon option 'deletion-vectors.enabled' cannot change on a table with data without a full "
                "compaction (rows could be duplicated); set 'deletion-vectors.modifiable' = 'true' if you are sure, "
                "as Java asks")
    for flag in ("ignore-delete", "ignore-update-before"):  # (a reset is not checked, as Java)
        if key == flag and value is not None and is_true(old or "false") and not is_true(value):
            raise UnsupportedPaimonFeatureError(f"Paimon option {flag!r} cannot change from true to false "
                                                f"(Java refuses it too)")
    if key == "clustering.columns" and "pk-clustering-override" in options:
        raise UnsupportedPaimonFeatureError("Paimon option 'clustering.columns' cannot change while "
                                            "'pk-clustering-override' is set (Java refuses it too)")


@dataclass(frozen=True)
class Retention:
    """What Java's expiry keeps (``ExpireConfig``): snapshots by ``snapshot.num-retained.min``
    (10), ``.max`` (unbounded) and ``snapshot.time-retained`` (1 h); the changelogs of expired
    snapshots by ``changelog.*``, which default to the snapshots' values; the changelog is kept
    apart ("decoupled") only when one of those reaches further than the snapshots' own."""

    changelog_min: int
    changelog_max: int | None
    changelog_age: dt.timedelta
    decoupled: bool
    snapshot_min: int = 10
    snapshot_max: int | None = None
    snapshot_age: dt.timedelta = dt.timedelta(hours=1)
    expire_limit: int = 10  # ``snapshot.expire.limit``: the most snapshots one expiry after a commit removes


def retention(options: Mapping[str, str]) -> Retention:
    """The table's retention as Java reads its options; a value Java could not read either is
    refused naming the option (expiry must not guess what to keep)."""
    def number(key: str, default: int | None) -> int | None:
        text = options.get(key)
        if text is None:
            return default
        # what Java's Integer.parseInt takes: no spaces, ASCII digits, a 32-bit value
        if not re.fullmatch(r"[+-]?[0-9]+", text) or not -(2**31) <= int(text) < 2**31:
            raise UnsupportedPaimonFeatureError(f"Paimon option {key!r} = {text!r} is not a whole number Java reads")
        value = int(text)
        if value < 1:
            raise UnsupportedPaimonFeatureError(f"Paimon option {key!r} = {text!r} must be at least 1")
        return value

    def duration(key: str, default: dt.timedelta) -> dt.timedelta:
        text = options.get(key)
        if text is None:
            return default
        try:
            return java_duration(text, f"Paimon option {key!r}")
        except InvalidArgumentError as exc:
            raise UnsupportedPaimonFeatureError(str(exc)) from None

    snapshot_min = number("snapshot.num-retained.min", 10)
    snapshot_max = number("snapshot.num-retained.max", None)
    snapshot_age = duration("snapshot.time-retained", dt.timedelta(hours=1))
    changelog_min = number("changelog.num-retained.min", snapshot_min)
    changelog_max = number("changelog.num-retained.max", snapshot_max)
    changelog_age = duration("changelog.time-retained", snapshot_age)
    assert snapshot_min is not None and changelog_min is not None
    unbounded = 2**31 - 1  # Java's Integer.MAX_VALUE, the maximum's default
    decoupled = ((changelog_max or unbounded) > (snapshot_max or unbounded) or changelog_min > snapshot_min
                 or changelog_age > snapshot_age)
    return Retention(changelog_min, changelog_max, changelog_age, decoupled, snapshot_min, snapshot_max, snapshot_age,
                     number("snapshot.expire.limit", 10) or 10)


def schema_refusal(options: Mapping[str, str]) -> str | None:
    """Why Java's `SchemaValidation` would refuse a schema with these options, which a read
    still takes (a table an older mergetree made may have them): checked where a schema is
    made or altered, never where one is read."""
    engine = options.get("merge-engine", "deduplicate").strip().lower()
    producer = options.get("changelog-producer", "none").strip().lower()
    if engine == "first-row" and producer not in ("none", "lookup"):
        return ("Paimon option 'changelog-producer': Java allows only 'none' and 'lookup' with the first-row merge "
                "engine")
    return None
