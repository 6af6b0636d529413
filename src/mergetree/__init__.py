"""mergetree: primary-key LSM tables on Parquet, built on a six-state loser-tree merge."""
from .errors import (
    CommitConflictError,
    CompactionConflictError,
    CorruptTableError,
    InvalidArgumentError,
    InvalidRowError,
    MalformedArrowError,
    MergeStateError,
    MergeTreeError,
    RetractionError,
    SchemaMismatchError,
    SnapshotNotFoundError,
    TableExistsError,
    TableNotFoundError,
    UnsortedRunError,
    UnsupportedFormatError,
    UnsupportedTypeError,
)
from .engines import AGGREGATE_FUNCTIONS, ENGINES
from .merge import ALGORITHMS, MergeReader, MergeStats, merge

__version__ = "0.1.0"

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "ALGORITHMS",
    "ENGINES",
    "CommitConflictError",
    "CompactionConflictError",
    "CorruptTableError",
    "InvalidArgumentError",
    "InvalidRowError",
    "MalformedArrowError",
    "MergeReader",
    "MergeStateError",
    "MergeStats",
    "MergeTreeError",
    "RetractionError",
    "SchemaMismatchError",
    "SnapshotNotFoundError",
    "TableExistsError",
    "TableNotFoundError",
    "UnsortedRunError",
    "UnsupportedFormatError",
    "UnsupportedTypeError",
    "merge",
]
