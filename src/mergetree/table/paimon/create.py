"""New Apache Paimon tables: the schema file Java's ``FileSystemCatalog.createTable`` writes,
made from an Arrow schema (`codec.types.paimon_fields`), with every option a reader needs written
explicitly — ``bucket`` above all, since a table without it is a dynamic-bucket table to every
other engine.  The first piece of `Table.create` making Paimon tables (issue 36): what a table
may declare is checked here, by the same rules a write into it checks (`options.check_options`),
before anything is written; the schema file is created with the store's conditional create, so
two creators never both succeed."""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ...codec.json_files import dumps, schema_json
from ...codec.types import NoPaimonType, paimon_fields, parse_field
from ...errors import (
    InvalidArgumentError,
    ObjectExistsError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedPaimonFeatureError,
    UnsupportedTypeError,
)
from ..directory import TableDirectory, check_empty
from ..objects import table_path
from ..options import (
    DEFAULT_PRIMARY_KEY_LEVELS,
    KEY_COMPRESSION_PER_LEVEL,
    KEY_QUERY_LOG,
    OPTIONS,
    is_engine_option,
)
from ..schema import TableSchema
from .metadata import SCHEMA_DIR, PaimonSchema, PaimonTable, table_store
from .options import (
    CLUSTERING_COLUMNS,
    ENGINES,
    PK_CLUSTERING,
    check_options,
    file_index_spec,
    is_true,
    misspelt,
    option_text,
    retention,
    schema_refusal,
)
from .store import open_directory, paimon_directory
from .tables import check_parquet_options, option_name, table_options, table_schema, write_refusal

__all__ = ["create_directory", "create_table", "open_or_create"]

# mergetree's engine names -> Paimon's `merge-engine`
_PAIMON_ENGINES = {mine: paimon for paimon, mine in ENGINES.items()}


def create_table(warehouse: Any, table: str | None, schema: pa.Schema, primary_key: Sequence[str] = (),
                 partition_by: Sequence[str] = (), buckets: int = 1, merge_engine: str = "deduplicate",
                 options: Mapping[str, object] | None = None,
                 storage_options: Mapping[str, object] | None = None, writable: bool = False) -> PaimonTable:
    """Create Paimon table `table` ("database.table") of the filesystem-catalog `warehouse`, or
    with `table` None a table at `warehouse` itself, and open it.  Primary-key columns become
    NOT NULL (as Java normalizes them); partition columns must be key columns (a table whose key
    leaves one out is a cross-partition table, which mergetree cannot write).  Raises
    TableExistsError when a table is there already, UnsupportedTypeError for a column Paimon has
    no type for, UnsupportedPaimonFeatureError for options mergetree could not honour (with
    `writable`, could not write by); nothing is written then."""
    if not isinstance(schema, pa.Schema) or not len(schema):
        raise InvalidArgumentError(f"schema must be a non-empty pyarrow.Schema, not {schema!r}")
    names = schema.names
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"the schema names a column twice: {names}")
    keys, partitions = _names(primary_key, "primary_key"), _names(partition_by, "partition_by")
    for what, listed in (("primary_key", keys), ("partition_by", partitions)):
        missing = [c for c in listed if c not in names]
        if missing:
            raise InvalidArgumentError(f"{what} names columns the schema lacks: {missing}")
    if keys and [c for c in partitions if c not in keys]:
        raise UnsupportedPaimonFeatureError(
            f"partition columns {[c for c in partitions if c not in keys]} are not in the primary key {keys}: "
            f"that is a cross-partition table, which mergetree cannot write; add them to the primary key")
    if isinstance(buckets, bool) or not isinstance(buckets, int) or not (buckets >= 1 or buckets == -1):
        raise InvalidArgumentError(f"buckets must be a positive bucket count, or -1 (a primary-key table's dynamic "
                                   f"buckets, an append table without buckets), not {buckets!r}")
    engine = merge_engine if merge_engine in ENGINES else _PAIMON_ENGINES.get(merge_engine)
    if engine is None:
        raise InvalidArgumentError(f"merge_engine must be one of {sorted(_PAIMON_ENGINES)}, not {merge_engine!r}")
    fields = [f.with_nullable(False) if f.name in keys else f for f in schema]
    try:
        paimon, highest = paimon_fields(pa.schema(fields))
    except NoPaimonType as exc:
        raise UnsupportedTypeError(str(exc)) from None
    written: dict[str, str] = {"bucket": str(buckets), "file.format": "parquet"}
    if keys:
        written["merge-engine"] = engine
    for k, v in (options or {}).items():
        close = misspelt(str(k), list(OPTIONS))
        if close is not None:  # a misspelt name is the caller's mistake; any other is a free-form property
            raise InvalidArgumentError(f"unknown table option {k!r}; did you mean {close!r}? (a free-form "
                                       f"property needs a name no option is close to)")
        text = option_text(v)
        if text is not None:
            written[str(k)] = text
    check_options(written, names, keys, partitions)  # what a write into it would refuse, refused now
    retention(written)  # and what expiry keeps, as Java reads it (every commit expires by it)
    parsed = [parse_field(f) for f in paimon]  # every column reads back (nested types through the codec too)
    file_index_spec(written, {f.name: f.type for f in parsed})
    document = schema_json(0, paimon, highest, partitions, keys, written, int(time.time() * 1000))
    planned = PaimonSchema.from_json(document)
    table_schema(planned)  # as a read will take it,
    table_options(planned)  # with mergetree's own options (``mergetree.``-prefixed) parsed as the engine's
    check_parquet_options({k: v for k, v in written.items() if k.startswith("parquet.")}, planned.arrow_schema)
    refused = schema_refusal(written)
    if refused is not None:
        raise UnsupportedPaimonFeatureError(refused)
    refusal = write_refusal(planned) if writable else None
    if refusal is not None:  # a table `Table.create` makes, mergetree can write
        raise UnsupportedPaimonFeatureError(f"Paimon option {refusal[0]!r}: {refusal[1]}")
    body = dumps(document)
    store, name = table_store(warehouse, table, storage_options)
    check_empty(store)  # never a table over another's files
    try:
        store.create(f"{SCHEMA_DIR}/schema-0", body)
    except ObjectExistsError:
        raise TableExistsError(f"a Paimon table is already at {table_path(store)}") from None
    return PaimonTable("", name, store, [0])


# options Table.create takes as its arguments
_ARGUMENTS = {"bucket": "buckets", "bucket-key": "bucket_key", "merge-engine": "merge_engine"}


def create_directory(path: Any, schema: pa.Schema, primary_key: Any = None, partition_by: Any = None,
                     buckets: int = 1, bucket_key: Any = None, merge_engine: str = "deduplicate",
                     options: Mapping[str, object] | None = None,
                     storage_options: Mapping[str, object] | None = None) -> TableDirectory:
    """`Table.create` of a Paimon table: at `path` (``W/db.db/name`` is table ``db.name`` of
    warehouse ``W``'s filesystem catalog, the same directory), with the engine's arguments
    (`bucket_key` as ``bucket-key``) and options in the engine's names, mergetree's own under
    the ``mergetree.`` prefix Java keeps and ignores (`option_name`) — the query log on, as on
    every table mergetree makes."""
    if options is not None and not isinstance(options, Mapping):
        raise InvalidArgumentError(f"options must be a dict of option names to values, not {options!r}")
    engine_options: dict[str, object] = {KEY_QUERY_LOG: True}
    options = dict(options or {})
    # Paimon's `pk-clustering-override` sorts the files above level 0 by Paimon's own
    # `clustering.columns` (fixed at create, as Java's), not by mergetree's layout option of that name
    paimon_own: dict[str, object] = {}
    if is_true(option_text(options.get(PK_CLUSTERING)) or "false") and CLUSTERING_COLUMNS in options:
        value = options.pop(CLUSTERING_COLUMNS)
        paimon_own[CLUSTERING_COLUMNS] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value
    for key, value in options.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"option names are strings, not {key!r}")
        argument = _ARGUMENTS.get(key)
        if argument is not None:  # one way to say it: the argument, never an option contradicting it
            raise InvalidArgumentError(f"give {key!r} as Table.create's argument {argument}=..., not as an option")
        # a list of columns as the engine's options take it: comma-separated, as Java reads them
        engine_options[key] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value
    # the arguments and the engine's own options, checked as for every table (the same errors)
    own: Any = {k: v for k, v in (options or {}).items() if is_engine_option(k)}  # values as the caller gave them
    TableSchema.create(schema, primary_key, partition_by, 1 if buckets == -1 else buckets, bucket_key, merge_engine,
                       own)
    if buckets == -1 and bucket_key:
        raise InvalidArgumentError("a bucket key places rows in buckets: give buckets >= 1 with it, or no bucket_key "
                                   "for an append table without buckets")
    if buckets == 1 and not primary_key and not bucket_key:
        buckets = -1  # one bucket of an append table: Paimon's bucket-unaware table (a bucket needs a key)
    if primary_key and KEY_COMPRESSION_PER_LEVEL not in engine_options:
        # level 0 in LZ4, as on every primary-key table mergetree makes (its sorted runs are merged
        # on every read until compaction rewrites them), written out so that Java's writers do the same
        engine_options[KEY_COMPRESSION_PER_LEVEL] = ",".join(f"{level}:{codec}" for level, codec in
                                                             DEFAULT_PRIMARY_KEY_LEVELS.items())
    written = {option_name(k): v for k, v in engine_options.items() if option_text(v) is not None}
    written.update(paimon_own)
    if bucket_key is not None:
        written["bucket-key"] = ",".join(_names(bucket_key, "bucket_key"))
    table = create_table(path, None, schema, _names(primary_key, "primary_key"), _names(partition_by, "partition_by"),
                         buckets, merge_engine, written, storage_options, writable=True)
    return paimon_directory(table)


def _names(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    out = list(value or ())
    if not all(isinstance(c, str) and c for c in out) or len(set(out)) != len(out):
        raise InvalidArgumentError(f"{what} must be distinct column names, not {value!r}")
    return out


def open_or_create(path: str, schema: pa.Schema, options: Mapping[str, object], tries: int = 200) -> TableDirectory:
    """The side table at `path` (a query log, an optimizer history: an append table without
    buckets), opened as it is, or created as a Paimon table by whichever
    writer comes first; one that finds another mid-creation waits for it rather than fail."""
    for _ in range(tries):
        try:
            return open_directory(path)
        except TableNotFoundError:
            pass
        try:
            create_table(path, None, schema, buckets=-1, options=options)
        except TableExistsError:
            time.sleep(0.01)  # another writer is creating it: its schema appears in a moment
    return open_directory(path)
