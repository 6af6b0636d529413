"""The k-way merge of sorted Arrow runs: the loser-tree reader, merge engines, row kinds,
sorted joins and the checks on Arrow input.  Depends only on the Cython core."""
from __future__ import annotations

from .engines import AGGREGATE_FUNCTIONS, ENGINES
from .join import join_sorted
from .reader import ALGORITHMS, MergeReader, MergeStats, merge
from .row_kind import ROW_KIND_COLUMN, RowKind, kinds_of, symbols_of

__all__ = ["AGGREGATE_FUNCTIONS", "ALGORITHMS", "ENGINES", "ROW_KIND_COLUMN", "MergeReader", "MergeStats", "RowKind",
           "join_sorted", "kinds_of", "merge", "symbols_of"]
