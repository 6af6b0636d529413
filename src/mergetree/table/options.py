"""Table options: every key a table accepts, with its default, parser and meaning, in one table.

Options are stored as strings in the table's schema file (as Paimon stores them) and
checked when the table is created: an unknown key, a malformed value or an aggregate
function that cannot apply to its column is an `InvalidArgumentError` before anything is
written.  `TableOptions` is the parsed, typed view the table code reads.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..merge.engines import AGGREGATE_FUNCTIONS, check_aggregate_type
from .compaction.planner import (
    KEY_MAX_SIZE_AMP,
    KEY_NUM_LEVELS,
    KEY_SIZE_RATIO,
    KEY_SMALL_FILE_RATIO,
    KEY_STOP_TRIGGER,
    KEY_TARGET_FILE_SIZE,
    KEY_TRIGGER,
    CompactionOptions,
    parse_memory_size,
)
from .display import size_text
from .durations import parse_age
from .indexes.bloom import check_bloom_column
from .levers.qdtree import QdTree
from .type_policy import require, why_not

__all__ = [
    "CLUSTERING_STRATEGIES",
    "CODECS",
    "DEFAULT_PRIMARY_KEY_LEVELS",
    "JAVA_BITMAP_V2",
    "JAVA_DELTA_ENCODING",
    "KEY_BITMAP_COLUMNS",
    "KEY_BLOOM_COLUMNS",
    "KEY_CLUSTERING_COLUMNS",
    "KEY_CLUSTERING_STRATEGY",
    "KEY_COMPRESSION",
    "KEY_COMPRESSION_PER_LEVEL",
    "KEY_DELETION_VECTORS",
    "KEY_JAVA_READER_VERSION",
    "KEY_MIGRATED_FROM",
    "KEY_QUERY_LOG_RETENTION",
    "KEY_SORT_WITHIN",
    "MEASURE_FUNCTIONS",
    "OPTIONS",
    "PK_CLUSTERING_MESSAGE",
    "AggregateModel",
    "Clustering",
    "OptionSpec",
    "TableOptions",
    "aggregate_model_options",
    "aggregate_option",
    "describe_options",
    "is_engine_option",
    "is_model_key",
    "parse_codec",
    "parse_codec_levels",
    "resolve_options",
]


def _parse_bool(text: str, key: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise InvalidArgumentError(f"option {key!r} must be 'true' or 'false', got {text!r}")
    return lowered == "true"


def _int_parser(minimum: int) -> Callable[[str, str], int]:
    def parse(text: str, key: str) -> int:
        match = re.fullmatch(r"\s*([+-]?\d+)\s*", text)
        if match is None:
            raise InvalidArgumentError(f"option {key!r} must be an integer, got {text!r}")
        value = int(match.group(1))
        if value < minimum:
            raise InvalidArgumentError(f"option {key!r} must be at least {minimum}, got {value}")
        return value
    return parse


def _parse_size(text: str, key: str) -> int:
    value = parse_memory_size(text, key)
    if value < 1:
        raise InvalidArgumentError(f"option {key!r} must be at least 1 byte, got {text!r}")
    return value


def _parse_ratio(text: str, key: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise InvalidArgumentError(f"option {key!r} must be a number, got {text!r}") from None
    if not 0 <= value <= 1:
        raise InvalidArgumentError(f"option {key!r} must be between 0 and 1, got {text!r}")
    return value


def _parse_fraction(text: str, key: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise InvalidArgumentError(f"option {key!r} must be a number, got {text!r}") from None
    if not 0 < value < 1:
        raise InvalidArgumentError(f"option {key!r} must be between 0 and 1 (exclusive), got {text!r}")
    return value


def _parse_names(text: str, key: str) -> tuple[str, ...]:
    """A comma-separated list of column names (checked against the schema later)."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"option {key!r} names a column twice: {text!r}")
    return names


def _parse_retention(text: str, key: str) -> dt.timedelta | None:
    """An age ('30d', '12h', '2w') more than 0, or 'forever' (None: the log is never expired)."""
    if text.strip().lower() == "forever":
        return None
    age = parse_age(text, f"option {key!r}")
    if age <= dt.timedelta(0):
        raise InvalidArgumentError(f"option {key!r} must be more than 0 (or 'forever' to keep every record), "
                                   f"got {text!r}")
    return age


def _parse_age(text: str, key: str) -> dt.timedelta:
    """An age ('30d', '12h', '2w', '90s') more than 0."""
    age = parse_age(text, f"option {key!r}")
    if age <= dt.timedelta(0):
        raise InvalidArgumentError(f"option {key!r} must be more than 0, got {text!r}")
    return age


# the Java (Apache Paimon) versions that read newer encodings: a bitmap file index of version 2
# from 1.1 (`BitmapFileIndex`'s VERSION_2), DELTA_BINARY_PACKED pages from 1.2 (its vectorized
# Parquet reader's `VectorizedDeltaBinaryPackedReader`); 0.9 is the oldest tested here
OLDEST_JAVA_READER = (0, 9)
JAVA_BITMAP_V2 = (1, 1)
JAVA_DELTA_ENCODING = (1, 2)


def _parse_java_version(text: str, key: str) -> tuple[int, int]:
    """A Paimon release as major.minor (a patch number is allowed and ignored): 0.9 or later."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?\s*", text)
    if match is None:
        raise InvalidArgumentError(f"option {key!r} must be a Paimon version such as '0.9' or '1.2', got {text!r}")
    version = (int(match.group(1)), int(match.group(2)))
    if version < OLDEST_JAVA_READER:
        raise InvalidArgumentError(f"option {key!r} must be {'.'.join(map(str, OLDEST_JAVA_READER))} or later "
                                   f"(no older Paimon reader is supported), got {text!r}")
    return version


def _parse_producer(text: str, key: str) -> str:
    value = text.strip().lower()
    if value not in CHANGELOG_PRODUCERS:
        raise InvalidArgumentError(f"option {key!r} must be one of {', '.join(CHANGELOG_PRODUCERS)}, got {text!r}")
    return value


CLUSTERING_STRATEGIES = ("linear", "zorder", "hilbert", "qdtree")
CODECS = ("zstd", "lz4", "snappy", "gzip", "brotli", "none")


def parse_codec(text: str, key: str) -> str:
    """A Parquet codec name ('uncompressed' and '' are 'none'), or InvalidArgumentError."""
    value = text.strip().lower() or "none"
    value = "none" if value == "uncompressed" else value
    if value not in CODECS:
        close = difflib.get_close_matches(value, CODECS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise InvalidArgumentError(f"option {key!r} must be one of {', '.join(CODECS)}, got {text!r}{hint}")
    return value


def parse_codec_levels(text: str, key: str) -> dict[int, str]:
    """Paimon's form: level:codec pairs, comma-separated ("0:lz4,1:snappy"); empty: none."""
    out: dict[int, str] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        level, colon, codec = part.partition(":")
        if not colon or not level.strip().isdigit():
            raise InvalidArgumentError(f"option {key!r}: write level:codec pairs, e.g. '0:lz4,1:snappy'; got {part!r}")
        if int(level) in out:
            raise InvalidArgumentError(f"option {key!r} names level {int(level)} twice")
        out[int(level)] = parse_codec(codec, key)
    return out


def _parse_qdtree(text: str, key: str) -> QdTree:
    return QdTree.from_json(text)


def _parse_strategy(text: str, key: str) -> str:
    value = text.strip().lower()
    if value not in CLUSTERING_STRATEGIES:
        raise InvalidArgumentError(f"option {key!r} must be one of {', '.join(CLUSTERING_STRATEGIES)}, got {text!r}")
    return value


@dataclass(frozen=True)
class OptionSpec:
    """One table option: its key, default (None: derived from others, or unset), parser and meaning."""

    key: str
    default: str | None
    parse: Callable[[str, str], Any]
    doc: str


KEY_BLOOM_COLUMNS = "file-index.bloom-filter.columns"
KEY_BITMAP_COLUMNS = "file-index.bitmap.columns"
KEY_CLUSTERING_COLUMNS = "clustering.columns"
KEY_CLUSTERING_STRATEGY = "clustering.strategy"
KEY_SORT_WITHIN = "sort-within.columns"
KEY_QDTREE = "clustering.qdtree"
KEY_QUERY_LOG = "query-log.enabled"
KEY_MIGRATED_FROM = "migrated-from"
KEY_JAVA_READER_VERSION = "java-reader-version"
KEY_QUERY_LOG_RETENTION = "query-log.retention"
# a month of queries: the advisor reads the whole log unless told `since`, and four of the seed's
# weekly analyses see the same workload, while a pattern gone for a month stops steering the layout
DEFAULT_QUERY_LOG_RETENTION = dt.timedelta(days=30)
KEY_COMMIT_EVERY = "write.commit-every-buffers"
KEY_MAJOR_THRESHOLD = "optimize.major-threshold"
KEY_MINOR_MIN_FILES = "optimize.minor-min-files"
KEY_COMPRESSION = "file.compression"
KEY_COMPRESSION_PER_LEVEL = "file.compression.per.level"
KEY_DELETION_VECTORS = "deletion-vectors.enabled"  # Paimon's name
# change streams (Paimon's names)
KEY_CHANGELOG_PRODUCER = "changelog-producer"
KEY_CHANGELOG_RETAINED_MIN = "changelog.num-retained.min"
KEY_CHANGELOG_RETAINED_MAX = "changelog.num-retained.max"
KEY_CHANGELOG_TIME_RETAINED = "changelog.time-retained"
KEY_CONSUMER_EXPIRATION = "consumer.expiration-time"
KEY_LOOKUP_MAX_DISK = "lookup.cache-max-disk-size"
KEY_LOOKUP_RETENTION = "lookup.cache-file-retention"
CHANGELOG_PRODUCERS = ("none", "input", "lookup")
DEFAULT_COMPRESSION = "zstd"
# level 0 holds the sorted runs of recent writes, read by merges until compaction rewrites
# them.  On the Spark bench's tables a join of five level-0 runs a bucket spends 1.93 s in
# Python with LZ4 against 2.41 s with zstd, for files 1.8x larger (RocksDB's advice too: a
# fast codec above, zstd at the bottom)
DEFAULT_PRIMARY_KEY_LEVELS = {0: "lz4"}

OPTIONS: dict[str, OptionSpec] = {spec.key: spec for spec in (
    OptionSpec("write-buffer-size", "256 mb", _parse_size,
               "rows are buffered up to about this much Arrow memory, then sorted, folded and spilled as level-0 "
               "files; a write's memory is about this plus one input batch, whatever the input's length"),
    # no stored default: tables that never set it stay readable by mergetree versions before it
    OptionSpec(KEY_COMMIT_EVERY, None, _int_parser(0),
               "unset or 0: a write commits once, at its end (all or nothing); N: a long write commits after every N "
               "spilled write buffers (each commit atomic), so its rows become visible piece by piece"),
    OptionSpec(KEY_TARGET_FILE_SIZE, "128 mb", _parse_size,
               "data files are rolled at about this size (in memory)"),
    OptionSpec("write-only", "false", _parse_bool,
               "true: writes never compact (run `compact` yourself or from Spark)"),
    OptionSpec("manifest.merge-min-count", "30", _int_parser(1),
               "fold a snapshot's base manifests into one once it has this many"),
    OptionSpec(KEY_TRIGGER, "5", _int_parser(1),
               "sorted runs per bucket that trigger a compaction"),
    OptionSpec(KEY_STOP_TRIGGER, None, _int_parser(1),
               "sorted runs per bucket at which writes compact inline (default: trigger + 3)"),
    OptionSpec(KEY_NUM_LEVELS, None, _int_parser(2), "LSM levels (default: trigger + 1)"),
    OptionSpec(KEY_MAX_SIZE_AMP, "200", _int_parser(0),
               "compact everything when newer runs exceed this percentage of the oldest run"),
    OptionSpec(KEY_SIZE_RATIO, "1", _int_parser(0),
               "percentage slack when collecting runs of similar size for a compaction"),
    OptionSpec(KEY_SMALL_FILE_RATIO, "0.7", _parse_ratio,
               "files below this fraction of target-file-size are rewritten with their neighbours"),
    OptionSpec(KEY_BLOOM_COLUMNS, None, _parse_names,
               "columns with a Parquet Bloom filter in every data file (= and IN skip files and row groups)"),
    OptionSpec(KEY_BITMAP_COLUMNS, None, _parse_names,
               "low-cardinality columns with a bitmap index (value -> rows; =, IN and ranges skip files and "
               "row groups)"),
    OptionSpec(KEY_CLUSTERING_COLUMNS, None, _parse_names,
               "append tables: the layout `optimize` clusters files by (1 to 8 columns; a qdtree, the columns "
               "its cuts use)"),
    OptionSpec(KEY_CLUSTERING_STRATEGY, None, _parse_strategy,
               "linear (sort by the columns in order), zorder or hilbert (default: linear for one column, "
               "hilbert for more), or qdtree (the cuts in clustering.qdtree, which the advisor writes)"),
    OptionSpec(KEY_QDTREE, None, _parse_qdtree,
               "a workload-driven layout: the qd-tree's cuts as JSON (written by `advise --apply`)"),
    OptionSpec(KEY_SORT_WITHIN, None, _parse_names,
               "append tables: the row order inside each data file (speeds up Top-N reads)"),
    OptionSpec(KEY_MAJOR_THRESHOLD, "2 gb", _parse_size,
               "the background optimizer lays out a partition's not-yet-optimized data (clustering, in-file sort, "
               "indexes) once it reaches this size"),
    OptionSpec(KEY_MINOR_MIN_FILES, "8", _int_parser(2),
               "the background optimizer merges a partition's small new files once it has this many"),
    # no stored default: tables that never set it stay readable by mergetree versions before it
    OptionSpec("optimize.max-concurrent-tasks", None, _int_parser(1),
               "the background optimizer runs at most this many tasks (each one partition's rewrite, one commit) "
               "at once on this table; unset: the daemon's --max-tasks-per-table (default 1)"),
    # no stored defaults: tables that never set them stay readable by mergetree versions before them
    OptionSpec(KEY_COMPRESSION, None, parse_codec,
               f"data files' Parquet codec ({', '.join(CODECS)}; default {DEFAULT_COMPRESSION})"),
    OptionSpec(KEY_COMPRESSION_PER_LEVEL, None, parse_codec_levels,
               "codecs for some LSM levels, as level:codec pairs (e.g. '0:lz4,1:snappy'; others take "
               "file.compression). Default for primary-key tables: '0:lz4' (the write buffers' sorted runs, "
               "merged on every read until compaction rewrites them); '' for none"),
    # no stored default: tables that never set it stay readable by mergetree versions before it
    OptionSpec(KEY_DELETION_VECTORS, None, _parse_bool,
               "primary-key tables: compaction marks the rows newer versions replace in per-file deletion vectors "
               "(Roaring bitmaps, Paimon's index-file layout), so compacted files are read alone, without a merge, "
               "and filters, indexes, Top-N and pre-aggregates skip in them as in an append table; files written "
               "since the last compaction are still merged on read"),
    # no stored defaults: tables that never set them stay readable by mergetree versions before them
    OptionSpec(KEY_CHANGELOG_PRODUCER, None, _parse_producer,
               "none: changes are computed when read (`Table.changes`, the streaming source) from the files each "
               "commit added; input: each write also keeps its rows as written, with their kinds, as changelog "
               "files of its commit; lookup: each write looks up the keys' previous values and keeps the exact "
               "changes (+I, -U/+U pairs with old and new rows, -D) as changelog files, for every merge engine"),
    OptionSpec(KEY_CHANGELOG_RETAINED_MIN, None, _int_parser(1),
               "keep at least this many commits' changelog when their snapshots expire (unset: a changelog goes "
               "with its snapshot)"),
    OptionSpec(KEY_CHANGELOG_RETAINED_MAX, None, _int_parser(1),
               "keep at most this many commits' changelog after their snapshots expired"),
    OptionSpec(KEY_CHANGELOG_TIME_RETAINED, None, _parse_age,
               "keep an expired snapshot's changelog until it is this old (30d, 12h)"),
    OptionSpec(KEY_CONSUMER_EXPIRATION, None, _parse_age,
               "a consumer (`consumer-id`) that has not advanced for this long (1d, 12h) no longer holds back "
               "expiry and is removed; unset: consumers never expire"),
    OptionSpec(KEY_LOOKUP_MAX_DISK, None, _parse_size,
               "the local lookup files (`table.lookup`) of all tables kept within this size (256mb, 8gb); "
               "unset: unlimited"),
    OptionSpec(KEY_LOOKUP_RETENTION, None, _parse_age,
               "a local lookup file unused for this long (default 1h) is removed"),
    # no stored default: Paimon tables mergetree made before it keep their files' encodings
    OptionSpec(KEY_JAVA_READER_VERSION, None, _parse_java_version,
               "Paimon tables: the oldest Apache Paimon (Java) release that must read the data files mergetree "
               "writes (default 0.9: encodings every release decodes); 1.1 adds version-2 bitmap file indexes, "
               "1.2 DELTA_BINARY_PACKED pages for the sorted integer key and sequence columns (smaller files, "
               "faster reads of the key). pypaimon and pypaimon-rust read every choice"),
    OptionSpec(KEY_MIGRATED_FROM, None, lambda text, key: text.strip(),
               "the table of mergetree's older format this one was migrated from (`mergetree migrate`); marked "
               "'(unfinished)' until the migration's last step, so that running it again after it was cut short "
               "starts afresh"),
    OptionSpec(KEY_QUERY_LOG, "true", _parse_bool,
               "record every read's shape (filtered columns, order, grouping, files scanned, time) in the "
               "table's query log (queries/), which the advisor analyzes"),
    # no stored default: tables that never set it stay readable by mergetree versions before it
    OptionSpec(KEY_QUERY_LOG_RETENTION, None, _parse_retention,
               "how long the query log keeps a record: an age (30d, 12h, 2w; default 30d, a month of workload: the "
               "advisor reads the whole log unless told `since`, and a pattern gone for a month should stop "
               "steering the layout) or 'forever'. Older records are removed when the log is expired (the "
               "optimizer daemon's rounds; `workload.retention.expire`)"),
)}

# fields.<column>.aggregate-function (aggregate tables): the column's aggregate.
_AGGREGATE_KEY = re.compile(r"fields\.(.+)\.aggregate-function")
# aggregate.<name>.group-by / aggregate.<name>.measures: a pre-aggregate model
_MODEL_KEY = re.compile(r"aggregate\.([A-Za-z0-9_-]+)\.(group-by|measures)")


def is_engine_option(key: str) -> bool:
    """Whether `key` is one of the engine's option names (a fixed one, a pre-aggregate model's,
    an aggregate table's ``fields.<column>.aggregate-function``)."""
    return key in OPTIONS or is_model_key(key) or _AGGREGATE_KEY.fullmatch(key) is not None


def is_model_key(key: str) -> bool:
    """Whether `key` declares part of a pre-aggregate model (``aggregate.<name>.group-by`` or
    ``.measures``)."""
    return _MODEL_KEY.fullmatch(key) is not None
MEASURE_FUNCTIONS = ("sum", "count", "min", "max")


def aggregate_option(column: str) -> str:
    return f"fields.{column}.aggregate-function"


def describe_options() -> list[tuple[str, str, str]]:
    """(key, default, meaning) of every option, for help texts and docs."""
    rows = [(s.key, s.default if s.default is not None else "(unset)", s.doc) for s in OPTIONS.values()]
    rows.append((aggregate_option("<column>"), "last_non_null_value",
                 f"aggregate tables: one of {', '.join(AGGREGATE_FUNCTIONS)}"))
    rows.append(("aggregate.<name>.group-by / .measures", "(unset)",
                 "a pre-aggregate model (`Table.add_aggregate`): group-by columns and column:function measures"))
    return rows


def _options_as_strings(options: Mapping[str, Any]) -> dict[str, str | None]:
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"options must be a dict of option -> value, not {type(options).__name__}")
    out: dict[str, str | None] = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"option keys are strings, not {key!r}")
        if value is None:
            out[key] = None
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            value = ",".join(value)
        if not isinstance(value, (str, int, float)):
            raise InvalidArgumentError(f"option {key!r} must be a string, number or list of names, not {value!r}")
        out[key] = str(value)
    return out


def resolve_options(options: Mapping[str, Any] | None, schema: pa.Schema, merge_engine: str,
                    primary_key: tuple[str, ...]) -> dict[str, str]:
    """Check the engine's options for a new table; returns every option as stored (defaults
    filled in)."""
    stored = {key: spec.default for key, spec in OPTIONS.items() if spec.default is not None}
    for key, value in _options_as_strings(options or {}).items():
        if value is not None:
            stored[key] = value
    TableOptions.parse(stored, schema, merge_engine, primary_key)  # raises on anything wrong
    return stored


@dataclass(frozen=True)
class Clustering:
    """How `optimize` lays out an append table's files."""

    columns: tuple[str, ...]
    strategy: str  # linear | zorder | hilbert | qdtree
    tree: QdTree | None = field(default=None, compare=False)  # qdtree: the cuts


@dataclass(frozen=True)
class AggregateModel:
    """A pre-aggregate: per data file, its rows grouped by `group_by` with `measures`
    ((column, function) pairs; column "*" with "count" counts rows)."""

    name: str
    group_by: tuple[str, ...]
    measures: tuple[tuple[str, str], ...]

    def output_name(self, column: str, function: str) -> str:
        return f"{'rows' if column == '*' else column}_{function}"


def _parse_measures(text: str, key: str, schema: pa.Schema) -> tuple[tuple[str, str], ...]:
    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        column, _, function = part.rpartition(":")
        if not column or function not in MEASURE_FUNCTIONS:
            raise InvalidArgumentError(f"option {key!r}: write measures as column:function with a function in "
                                       f"{', '.join(MEASURE_FUNCTIONS)}, e.g. 'amount:sum,*:count'; got {part!r}")
        if column == "*":
            if function != "count":
                raise InvalidArgumentError(f"option {key!r}: '*' only takes count, not {function!r}")
        elif column not in schema.names:
            raise InvalidArgumentError(f"option {key!r} names column {column!r}, which the schema lacks")
        else:
            dtype = schema.field(column).type
            why = why_not(dtype, "measure_sum" if function == "sum" else "measure_minmax") \
                if function != "count" else None
            if why is not None:
                raise InvalidArgumentError(f"option {key!r}: {function} cannot apply to {column!r} ({dtype}): {why}")
        if (column, function) in out:
            raise InvalidArgumentError(f"option {key!r} names {part!r} twice")
        out.append((column, function))
    if not out:
        raise InvalidArgumentError(f"option {key!r} needs at least one measure")
    return tuple(out)


@dataclass(frozen=True)
class TableOptions:
    """A table's options, parsed."""

    def __repr__(self) -> str:
        """The parsed options that differ from a table's defaults (the sizes always)."""
        defaults = TableOptions.parse({}, pa.schema([]), "deduplicate", ())
        shown = [f"write_buffer_size={size_text(self.write_buffer_size)}",
                 f"target_file_size={size_text(self.target_file_size)}"]
        for f in dataclasses.fields(self):
            if f.name not in ("write_buffer_size", "target_file_size") and f.repr \
                    and getattr(self, f.name) != getattr(defaults, f.name):
                shown.append(f"{f.name}={getattr(self, f.name)!r}")
        return f"TableOptions({', '.join(shown)})"

    write_buffer_size: int
    target_file_size: int
    write_only: bool
    manifest_merge_min_count: int
    compaction: CompactionOptions
    aggregations: dict[str, str] = field(default_factory=dict)
    bloom_columns: tuple[str, ...] = ()
    bloom_fpp: float = 0.01
    bitmap_columns: tuple[str, ...] = ()
    clustering: Clustering | None = None
    sort_within: tuple[str, ...] = ()
    aggregate_models: dict[str, AggregateModel] = field(default_factory=dict)
    query_log: bool = True
    major_threshold: int = 2 * 1024**3
    minor_min_files: int = 8
    commit_every_buffers: int = 0
    compression: str = DEFAULT_COMPRESSION
    compression_per_level: dict[int, str] = field(default_factory=dict)
    query_log_retention: dt.timedelta | None = DEFAULT_QUERY_LOG_RETENTION   # None: kept forever
    deletion_vectors: bool = False
    changelog_producer: str = "none"
    changelog_retained_min: int | None = None
    changelog_retained_max: int | None = None
    changelog_time_retained: dt.timedelta | None = None
    consumer_expiration: dt.timedelta | None = None
    lookup_cache_max_disk_size: int | None = None
    lookup_cache_file_retention: dt.timedelta = dt.timedelta(hours=1)
    # what Paimon tables say of their versions and reads (`table.paimon.tables`; issue 37 brings
    # them to every table): versions of a key ordered by these columns first (each ascending, or
    # each descending), then by sequence number; retractions ignored; level-0 files left out of
    # batch reads until compaction has resolved them (deletion vectors, first-row)
    sequence_fields: tuple[str, ...] = ()
    sequence_descending: bool = False
    ignore_delete: bool = False
    level0_hidden: bool = False
    # a column of the table that gives each written row's kind (Paimon's `rowkind.field`)
    row_kind_field: str | None = None
    # level 0 goes up after a write only at the rules' trigger even where reads hide it
    # (Paimon's `lookup-compact` = gentle: Java forces it every few commits of a long-running
    # writer, which a batch write is not)
    lookup_compact_gentle: bool = False
    # the zstd level of data files (None: the writer's default, 1; Paimon's `file.compression.zstd-level`)
    zstd_level: int | None = None
    # a later commit's rows are newer than every row before it in their bucket (mergetree's
    # writers renumber after a lost race); False where versions are ordered by sequence number
    # alone, as any Paimon writer may number them (a change is then read from the two states)
    commit_ordered: bool = True
    # a Paimon table's Bloom filters in Paimon's file index (``file-index.bloom-filter.columns``;
    # `bloom_columns` are Parquet's own there): built with each file, back-filled by `build_indexes`
    file_index_blooms: tuple[str, ...] = ()
    # a Paimon table's oldest Java reader (major, minor): which encodings its files may use
    java_reader_version: tuple[int, int] = OLDEST_JAVA_READER
    # a Paimon table's `pk-clustering-override` columns: compaction writes the files above level 0
    # sorted by them (not by the key), all at level 1, read alone with their deletion vectors
    pk_clustering: tuple[str, ...] = ()

    @property
    def retains_changelog(self) -> bool:
        """Is an expired snapshot's changelog kept (any `changelog.*` retention option set)?"""
        return (self.changelog_retained_min is not None or self.changelog_retained_max is not None
                or self.changelog_time_retained is not None)

    def codec_for(self, level: int) -> str:
        """The Parquet codec of a data file written at `level`."""
        return self.compression_per_level.get(level, self.compression)

    @classmethod
    def parse(cls, raw: Mapping[str, str], schema: pa.Schema, merge_engine: str,
              primary_key: tuple[str, ...] | set[str]) -> TableOptions:
        values: dict[str, Any] = {}
        aggregations: dict[str, str] = {}
        models: dict[str, dict[str, str]] = {}
        for key, text in raw.items():
            spec = OPTIONS.get(key)
            if spec is not None:
                values[key] = spec.parse(text, key)
                continue
            model = _MODEL_KEY.fullmatch(key)
            if model is not None:
                models.setdefault(model.group(1), {})[model.group(2)] = text
                continue
            match = _AGGREGATE_KEY.fullmatch(key)
            if match is None:
                close = difflib.get_close_matches(
                    key, [*OPTIONS, "fields.<column>.aggregate-function", "aggregate.<name>.group-by"], n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; known options: {', '.join(OPTIONS)}"
                raise InvalidArgumentError(f"unknown table option {key!r}{hint}")
            column, function = match.group(1), text.strip()
            if merge_engine != "aggregate":
                raise InvalidArgumentError(f"option {key!r} needs merge_engine='aggregate', not {merge_engine!r}")
            if column not in schema.names:
                raise InvalidArgumentError(f"option {key!r} names column {column!r}, which the schema lacks")
            if column in primary_key:
                raise InvalidArgumentError(f"option {key!r}: {column!r} is a primary-key column; "
                                           f"keys are not aggregated")
            if function not in AGGREGATE_FUNCTIONS:
                close = difflib.get_close_matches(function, AGGREGATE_FUNCTIONS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise InvalidArgumentError(f"option {key!r}: unknown aggregate function {function!r}{hint} "
                                           f"(choose one of {', '.join(AGGREGATE_FUNCTIONS)})")
            check_aggregate_type(column, function, schema.field(column).type)
            aggregations[column] = function
        for key in (KEY_BLOOM_COLUMNS, KEY_BITMAP_COLUMNS, KEY_CLUSTERING_COLUMNS, KEY_SORT_WITHIN):
            for column in values.get(key, ()):
                if column not in schema.names:
                    raise InvalidArgumentError(f"option {key!r} names column {column!r}, which the schema lacks")
        for column in values.get(KEY_BLOOM_COLUMNS, ()):
            require(column, schema.field(column).type, "bloom")
            check_bloom_column(column, schema.field(column).type)
        for column in values.get(KEY_BITMAP_COLUMNS, ()):
            require(column, schema.field(column).type, "bitmap")
        for key in (KEY_CLUSTERING_COLUMNS, KEY_SORT_WITHIN):
            for column in values.get(key, ()):
                require(column, schema.field(column).type, "order")
        clustering = None
        columns = values.get(KEY_CLUSTERING_COLUMNS, ())
        if KEY_CLUSTERING_STRATEGY in values and not columns:
            raise InvalidArgumentError(f"option {KEY_CLUSTERING_STRATEGY!r} needs {KEY_CLUSTERING_COLUMNS!r}")
        if columns:
            # with deletion vectors a compacted file is read alone, so its rows may be grouped by
            # other columns (Paimon's pk-clustering-override); each file stays sorted by key
            if primary_key and not values.get(KEY_DELETION_VECTORS):
                raise InvalidArgumentError(PK_CLUSTERING_MESSAGE)
            strategy = values.get(KEY_CLUSTERING_STRATEGY, "linear" if len(columns) == 1 else "hilbert")
            if len(columns) > 8 and strategy != "qdtree":  # a curve's bits; a qd-tree cuts on as many as it needs
                raise InvalidArgumentError(f"option {KEY_CLUSTERING_COLUMNS!r}: at most 8 columns, got {len(columns)}")
            tree = values.get(KEY_QDTREE)
            if strategy == "qdtree":
                if tree is None:
                    raise InvalidArgumentError(f"clustering strategy 'qdtree' needs its cuts in {KEY_QDTREE!r} "
                                               f"(`mergetree advise --apply` writes them)")
                unknown = [c for c in tree.columns if c not in schema.names]
                if unknown:
                    raise InvalidArgumentError(f"option {KEY_QDTREE!r} cuts on {unknown}, which the schema lacks")
            clustering = Clustering(columns, strategy, tree if strategy == "qdtree" else None)
        if values.get(KEY_SORT_WITHIN) and primary_key:
            raise InvalidArgumentError(PK_CLUSTERING_MESSAGE)
        if values.get(KEY_DELETION_VECTORS):
            _check_deletion_vectors(schema, primary_key)
        if values.get(KEY_CHANGELOG_PRODUCER) == "lookup" and not primary_key:
            raise InvalidArgumentError(f"option {KEY_CHANGELOG_PRODUCER!r} = 'lookup' needs a primary-key table: an "
                                       f"append table's rows have no previous values ('input' keeps its rows)")
        low, high = values.get(KEY_CHANGELOG_RETAINED_MIN), values.get(KEY_CHANGELOG_RETAINED_MAX)
        if low is not None and high is not None and low > high:
            raise InvalidArgumentError(f"option {KEY_CHANGELOG_RETAINED_MIN!r} ({low}) is more than "
                                       f"{KEY_CHANGELOG_RETAINED_MAX!r} ({high})")
        aggregate_models = {}
        for name, parts in sorted(models.items()):
            if set(parts) != {"group-by", "measures"}:
                raise InvalidArgumentError(f"pre-aggregate {name!r} needs both aggregate.{name}.group-by and "
                                           f"aggregate.{name}.measures")
            group_by = _parse_names(parts["group-by"], f"aggregate.{name}.group-by")
            for column in group_by:
                if column not in schema.names:
                    raise InvalidArgumentError(f"pre-aggregate {name!r} groups by {column!r}, which the schema lacks")
            aggregate_models[name] = AggregateModel(name, group_by,
                                                    _parse_measures(parts["measures"], f"aggregate.{name}.measures",
                                                                    schema))
        compaction = CompactionOptions.from_options(raw)
        defaults = {k: spec.parse(spec.default, k) for k, spec in OPTIONS.items() if spec.default is not None}
        merged = {**defaults, **values}
        return cls(merged["write-buffer-size"], merged[KEY_TARGET_FILE_SIZE], merged["write-only"],
                   merged["manifest.merge-min-count"], compaction, aggregations,
                   merged.get(KEY_BLOOM_COLUMNS, ()), 0.01, merged.get(KEY_BITMAP_COLUMNS, ()), clustering,
                   merged.get(KEY_SORT_WITHIN, ()), aggregate_models,
                   merged[KEY_QUERY_LOG], merged[KEY_MAJOR_THRESHOLD], merged[KEY_MINOR_MIN_FILES],
                   merged.get(KEY_COMMIT_EVERY, 0), merged.get(KEY_COMPRESSION, DEFAULT_COMPRESSION),
                   merged.get(KEY_COMPRESSION_PER_LEVEL, dict(DEFAULT_PRIMARY_KEY_LEVELS) if primary_key else {}),
                   query_log_retention=merged.get(KEY_QUERY_LOG_RETENTION, DEFAULT_QUERY_LOG_RETENTION),
                   deletion_vectors=merged.get(KEY_DELETION_VECTORS, False),
                   changelog_producer=merged.get(KEY_CHANGELOG_PRODUCER, "none"),
                   changelog_retained_min=merged.get(KEY_CHANGELOG_RETAINED_MIN),
                   changelog_retained_max=merged.get(KEY_CHANGELOG_RETAINED_MAX),
                   changelog_time_retained=merged.get(KEY_CHANGELOG_TIME_RETAINED),
                   consumer_expiration=merged.get(KEY_CONSUMER_EXPIRATION),
                   lookup_cache_max_disk_size=merged.get(KEY_LOOKUP_MAX_DISK),
                   lookup_cache_file_retention=merged.get(KEY_LOOKUP_RETENTION, dt.timedelta(hours=1)),
                   java_reader_version=merged.get(KEY_JAVA_READER_VERSION, OLDEST_JAVA_READER))


def _check_deletion_vectors(schema: pa.Schema, primary_key: tuple[str, ...] | set[str]) -> None:
    """Deletion vectors mark replaced versions of a key: only primary-key tables have versions.
    A compaction finds a key's older row by hashing the key, which cannot tell -0.0 from 0.0 as
    the merge does: floating-point keys are refused."""
    if not primary_key:
        raise InvalidArgumentError(f"option {KEY_DELETION_VECTORS!r} needs a primary-key table: an append table's "
                                   f"rows have no versions to replace (its files are always read alone)")
    floats = [c for c in primary_key if pa.types.is_floating(schema.field(c).type)]
    if floats:
        raise InvalidArgumentError(f"option {KEY_DELETION_VECTORS!r}: primary-key column(s) {sorted(floats)} are "
                                   f"floating point; a deletion-vector table's keys must compare exactly (use an "
                                   f"integer, decimal or string key)")


PK_CLUSTERING_MESSAGE = (
    "a primary-key table's files are sorted by its primary key (merge-on-read and compaction need that "
    "order), so they cannot be clustered or sorted by other columns. Cluster a primary-key table by "
    "choosing its primary-key column order, bucket key and partitioning when you create it (and "
    "use Bloom filter or bitmap indexes for the other columns), create it with 'deletion-vectors.enabled', "
    "'pk-clustering-override' and 'clustering.columns' (Paimon's clustering of compacted files, each read "
    "alone), or keep the data in an append table")


def aggregate_model_options(name: Any, group_by: Any, measures: Any, schema: pa.Schema) -> dict[str, str]:
    """The options that declare a pre-aggregate model (see `Table.add_aggregate`)."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise InvalidArgumentError(f"a pre-aggregate name is letters, digits, '_' and '-', not {name!r}")
    groups = [group_by] if isinstance(group_by, str) else group_by
    if not isinstance(groups, (list, tuple)) or not all(isinstance(g, str) for g in groups):
        raise InvalidArgumentError(f"group_by must be a column name or a list of names, not {group_by!r}")
    if not isinstance(measures, Mapping) or not measures:
        raise InvalidArgumentError(f"measures must be a non-empty dict of column -> function(s), e.g. "
                                   f"{{'amount': 'sum', '*': 'count'}}, not {measures!r}")
    pairs = []
    for column, functions in measures.items():
        for function in [functions] if isinstance(functions, str) else list(functions):
            pairs.append(f"{column}:{function}")
    options = {f"aggregate.{name}.group-by": ",".join(groups), f"aggregate.{name}.measures": ",".join(pairs)}
    _parse_measures(options[f"aggregate.{name}.measures"], f"aggregate.{name}.measures", schema)
    return options
