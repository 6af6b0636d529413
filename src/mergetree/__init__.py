"""mergetree: primary-key LSM tables on Parquet, built on a six-state loser-tree merge."""
from .errors import (
    InvalidArgumentError,
    InvalidRowError,
    MergeStateError,
    MergeTreeError,
    RetractionError,
    SchemaMismatchError,
    UnsortedRunError,
    UnsupportedTypeError,
)
from .engines import AGGREGATE_FUNCTIONS, ENGINES
from .merge import ALGORITHMS, MergeReader, MergeStats, merge

__version__ = "0.1.0"

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "ALGORITHMS",
    "ENGINES",
    "InvalidArgumentError",
    "InvalidRowError",
    "MergeReader",
    "MergeStateError",
    "MergeStats",
    "MergeTreeError",
    "RetractionError",
    "SchemaMismatchError",
    "UnsortedRunError",
    "UnsupportedTypeError",
    "merge",
]
