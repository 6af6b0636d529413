"""mergetree: primary-key LSM tables on Parquet, built on a six-state loser-tree merge.

The public API, from the top:

- `merge(runs, key, ...)` -> `MergeReader`: the k-way merge of sorted Arrow runs
  (`mergetree.merge` is this function; the subpackage of the same name holds its parts).
- `Table`: primary-key and append tables on Parquet (`Table.create`, `Table.open`).
- `join_sorted`: a sorted merge join of two key-ordered tables.
- `RowKind`, `ENGINES`, `AGGREGATE_FUNCTIONS`, `ALGORITHMS`, every error class.
- `mergetree.spark` (import it yourself; needs pyspark): the Spark data source and jobs.
- `mergetree.paimon`: Apache Paimon primary-key tables read and compacted without a JVM
  (`mergetree.paimon.read`, `.scan`, `.compact`, `.info`); loaded on first use.
- `mergetree.polars`, `mergetree.duckdb`, `mergetree.datafusion` (import them yourself; each needs
  its engine): scans of mergetree and Paimon tables with the engine's projection and filter pushed
  into the table's scan (`scan_table`, `register`; docs/ENGINES.md).
- `mergetree.iceberg` (import it yourself; needs pyiceberg): Apache Iceberg tables of a pyiceberg
  catalog, `iceberg://CATALOG/NAMESPACE.TABLE`, read, logged and advised on.
- `mergetree.organize`: data organization by the query history — SQL history import, replay,
  the background optimizer, the report page (`Table.advise` is the advisor itself).
"""
from __future__ import annotations

from importlib import metadata as _metadata

from .errors import (
    CommitConflictError,
    CommittedWarning,
    CompactionConflictError,
    ConditionalCreateUnsupportedError,
    ConsumerNotFoundError,
    CorruptTableError,
    InvalidArgumentError,
    InvalidRowError,
    MalformedArrowError,
    MergeStateError,
    MergeTreeError,
    ObjectExistsError,
    ObjectNotFoundError,
    OutcomeUnknownError,
    RetractionError,
    SchemaMismatchError,
    SnapshotNotFoundError,
    StorageAccessError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
    UnsortedRunError,
    UnsupportedFormatError,
    UnsupportedPaimonFeatureError,
    UnsupportedTypeError,
    WriterConflictError,
)
from .merge import (
    AGGREGATE_FUNCTIONS,
    ALGORITHMS,
    ENGINES,
    ROW_KIND_COLUMN,
    MergeReader,
    MergeStats,
    RowKind,
    join_sorted,
    kinds_of,
    merge,
)
from .table import Table, set_workload_warehouse
from .table import formats as _formats
from .table.migration import MigrationReport, migrate


def _open_paimon(path: object, storage_options: object, check: bool) -> object:
    # `Table.open` on an Apache Paimon table: mergetree.paimon is loaded only when one is opened.
    # Its `storage_options` opened the location's store already (`locate` keeps it): every call
    # of the handle finds that one store again, with its one request counter and connections
    from .paimon.handle import PaimonTableHandle
    return PaimonTableHandle.open(path, check)  # type: ignore[arg-type]


_formats.register("paimon", _open_paimon)


def __getattr__(name: str) -> object:
    # `mergetree.paimon` without importing it first, while `import mergetree` stays lean
    if name == "paimon":
        from importlib import import_module
        return import_module(".paimon", __name__)
    raise AttributeError(f"module 'mergetree' has no attribute {name!r}")


try:
    __version__ = _metadata.version("mergetree")
except _metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "ALGORITHMS",
    "ENGINES",
    "ROW_KIND_COLUMN",
    "CommitConflictError",
    "CommittedWarning",
    "CompactionConflictError",
    "ConditionalCreateUnsupportedError",
    "ConsumerNotFoundError",
    "CorruptTableError",
    "InvalidArgumentError",
    "InvalidRowError",
    "MalformedArrowError",
    "MergeReader",
    "MergeStateError",
    "MergeStats",
    "MergeTreeError",
    "MigrationReport",
    "ObjectExistsError",
    "ObjectNotFoundError",
    "OutcomeUnknownError",
    "RetractionError",
    "RowKind",
    "SchemaMismatchError",
    "SnapshotNotFoundError",
    "StorageAccessError",
    "StorageError",
    "Table",
    "TableExistsError",
    "TableNotFoundError",
    "UnsortedRunError",
    "UnsupportedFormatError",
    "UnsupportedPaimonFeatureError",
    "UnsupportedTypeError",
    "WriterConflictError",
    "__version__",
    "join_sorted",
    "kinds_of",
    "merge",
    "migrate",
    "set_workload_warehouse",
]
